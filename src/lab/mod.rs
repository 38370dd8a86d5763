//! Experiment definitions reproducing the papers, used by `sift-lab`.
//!
//! The lab turns scenarios into results on disk: `run_scenario` runs one
//! scenario for each of its seeds in the simulator and writes the report
//! (`results.json`, `summary.md`, time-series CSVs, and the effective
//! `scenario.toml`). A named paper experiment is an [`Experiment`]: a function
//! that builds its scenarios (the paper's topology and parameters, one per
//! point of a sweep, scaled by a [`Plan`]) plus a function that compares the
//! reports with the paper's numbers; `run_experiment` runs and writes both.
//! The paper experiments themselves live in `experiments/`, one file per
//! paper; `metrics` holds what they compute (goodput of a cut-off flow,
//! Jain's index, factorial effects), `table` and `figure` what they show.
//!
//! The lab owns no simulation logic (that is `sim`) and reads the wall clock
//! only once per run, to anchor virtual time; no result depends on it.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::sim::{Report, ReportError, Scenario, ScenarioError, SimError, Simulation};

pub mod experiments;
mod figure;
pub mod metrics;
mod shard;
mod table;

pub use figure::{Figure, Series};
pub use shard::{Shard, ShardError};
pub use table::Table;

/// The sift version recorded in every report.
pub const SIFT_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Running or writing an experiment failed.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// An experiment's scenario is invalid.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// A run failed.
    #[error("seed {seed}: {source}")]
    Simulation {
        /// The run's seed.
        seed: u64,
        /// What went wrong.
        source: SimError,
    },
    /// A report could not be written.
    #[error(transparent)]
    Report(#[from] ReportError),
    /// A result file could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// Two scenarios of one experiment share a name.
    #[error("experiment {experiment:?} has two scenarios named {name:?} (their results would overwrite each other)")]
    DuplicateScenario {
        /// The experiment.
        experiment: String,
        /// The name used twice.
        name: String,
    },
    /// A merge found no shard with this run.
    #[error("no shard directory has scenario {scenario:?} seed {seed} (run that shard, with the same --quick/--seeds, and merge again)")]
    MissingShardRun {
        /// The scenario's name.
        scenario: String,
        /// The run's seed.
        seed: u64,
    },
}

/// Runs `scenario` once per seed, without writing anything.
pub fn simulate(scenario: &Scenario) -> Result<Report, LabError> {
    simulate_traced(scenario, None)
}

/// Runs `scenario` once per seed; with `qlog_dir`, every connection of
/// every run writes a qlog trace there (`Simulation::trace_qlog`).
pub fn simulate_traced(scenario: &Scenario, qlog_dir: Option<&Path>) -> Result<Report, LabError> {
    scenario.validate()?;
    if let Some(dir) = qlog_dir {
        std::fs::create_dir_all(dir).map_err(|source| LabError::Write {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    let mut runs = Vec::with_capacity(scenario.seeds.len());
    for &seed in &scenario.seeds {
        // The one clock read: an anchor for virtual time zero. Every number
        // in the report is an offset from it, so its value never matters.
        let base = Instant::now();
        let mut simulation = Simulation::new(scenario, seed, base)
            .map_err(|source| LabError::Simulation { seed, source })?;
        if let Some(dir) = qlog_dir {
            simulation.trace_qlog(dir);
        }
        simulation
            .run()
            .map_err(|source| LabError::Simulation { seed, source })?;
        runs.push(simulation.report());
    }
    Ok(Report {
        experiment: scenario.name.clone(),
        sift_version: SIFT_VERSION.to_string(),
        runs,
    })
}

/// Runs `scenario` once per seed and writes `results.json`, `summary.md`,
/// the time-series CSVs and `scenario.toml` (the scenario as run) into
/// `out_dir`.
pub fn run_scenario(scenario: &Scenario, out_dir: &Path) -> Result<Report, LabError> {
    run_scenario_traced(scenario, out_dir, None)
}

/// [`run_scenario`], and with `qlog_dir` a qlog trace of every connection
/// of every run there.
pub fn run_scenario_traced(
    scenario: &Scenario,
    out_dir: &Path,
    qlog_dir: Option<&Path>,
) -> Result<Report, LabError> {
    let report = simulate_traced(scenario, qlog_dir)?;
    report.write(out_dir)?;
    let path = out_dir.join("scenario.toml");
    std::fs::write(&path, scenario.to_toml()?)
        .map_err(|source| LabError::Write { path, source })?;
    Ok(report)
}

/// How much of an experiment to run: the full sweep or a reduced one for
/// CI, and how many seeds per scenario.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// A reduced sweep (fewer points, smaller transfers) that runs in seconds.
    pub quick: bool,
    /// Seeds per scenario (1..=N); `None` = the experiment's default.
    pub seeds: Option<u64>,
}

impl Plan {
    /// Seeds 1..=N, N being `seeds` or else `default` (at least one seed).
    pub fn seeds(&self, default: u64) -> Vec<u64> {
        (1..=self.seeds.unwrap_or(default).max(1)).collect()
    }

    /// `full` normally, `quick` for a quick plan.
    pub fn pick<T>(&self, full: T, quick: T) -> T {
        if self.quick {
            quick
        } else {
            full
        }
    }
}

/// What an experiment's comparison produced: the markdown section that puts
/// our numbers next to the paper's, plus the tables and figures behind it
/// (written as CSV; the `sift-lab` binary also draws the figures as SVG).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Comparison {
    /// Markdown: our numbers, the paper's, and "Differences and why".
    pub markdown: String,
    /// Tables written as `NAME.csv`.
    pub tables: Vec<Table>,
    /// Figures written as `NAME_points.csv` (their points) and drawn by
    /// `sift-lab` as `NAME.svg`.
    pub figures: Vec<Figure>,
}

impl From<String> for Comparison {
    fn from(markdown: String) -> Self {
        Self {
            markdown,
            ..Self::default()
        }
    }
}

/// A named experiment reproducing a paper's table or figure.
#[derive(Clone, Copy, Debug)]
pub struct Experiment {
    /// The `sift-lab` command name, e.g. `veno-throughput`.
    pub name: &'static str,
    /// What it reproduces, e.g. "Veno Fig. 5: Reno vs Veno throughput under random loss".
    pub title: &'static str,
    /// Builds the scenarios for a plan (uniquely named; one results
    /// directory each).
    pub scenarios: fn(&Plan) -> Vec<Scenario>,
    /// Compares the reports (in scenario order) with the paper.
    pub compare: fn(&[Report]) -> Comparison,
}

/// What `run_experiment` produced.
#[derive(Clone, Debug)]
pub struct ExperimentOutcome {
    /// One report per scenario, in scenario order.
    pub reports: Vec<Report>,
    /// The comparison (its markdown is also in `OUT/summary.md`).
    pub comparison: Comparison,
    /// The whole `summary.md`.
    pub summary: String,
}

/// Runs every scenario of `experiment` under `plan` into `out_dir/SCENARIO/`
/// and writes, in `out_dir`: `summary.md` (the comparison), `results.json`
/// (every scenario's runs in one report, DESIGN §11; each run's `params`
/// gains `scenario`, and the time series stay in the scenario directories),
/// and one CSV per table (`TABLE.csv`) and figure (`FIGURE_points.csv`).
pub fn run_experiment(
    experiment: &Experiment,
    plan: &Plan,
    out_dir: &Path,
) -> Result<ExperimentOutcome, LabError> {
    let scenarios = checked_scenarios(experiment, plan)?;
    let mut reports = Vec::with_capacity(scenarios.len());
    for scenario in &scenarios {
        reports.push(run_scenario(scenario, &out_dir.join(&scenario.name))?);
    }
    write_experiment(experiment, plan, &scenarios, reports, out_dir)
}

/// The experiment's scenarios under `plan`, each valid and uniquely named.
fn checked_scenarios(experiment: &Experiment, plan: &Plan) -> Result<Vec<Scenario>, LabError> {
    let scenarios = (experiment.scenarios)(plan);
    for (i, scenario) in scenarios.iter().enumerate() {
        scenario.validate()?;
        if scenarios
            .get(..i)
            .is_some_and(|earlier| earlier.iter().any(|s| s.name == scenario.name))
        {
            return Err(LabError::DuplicateScenario {
                experiment: experiment.name.to_string(),
                name: scenario.name.clone(),
            });
        }
    }
    Ok(scenarios)
}

/// The units a sweep is sharded by: (scenario, seed), scenarios in order,
/// each scenario's seeds in order.
fn units(scenarios: &[Scenario]) -> Vec<(usize, u64)> {
    scenarios
        .iter()
        .enumerate()
        .flat_map(|(i, scenario)| scenario.seeds.iter().map(move |&seed| (i, seed)))
        .collect()
}

/// Runs only `shard`'s part of the sweep: each of its (scenario, seed)
/// units, written as `out_dir/SCENARIO/` with the seeds this shard ran
/// (scenarios with none are left out). [`merge_experiment`] joins the shard
/// directories into the experiment's report. Returns the reports written.
pub fn run_experiment_shard(
    experiment: &Experiment,
    plan: &Plan,
    shard: Shard,
    out_dir: &Path,
) -> Result<Vec<Report>, LabError> {
    let scenarios = checked_scenarios(experiment, plan)?;
    let mine = shard.select(units(&scenarios));
    let mut reports = Vec::new();
    for (i, scenario) in scenarios.iter().enumerate() {
        let seeds: Vec<u64> = mine
            .iter()
            .filter(|(scenario_index, _)| *scenario_index == i)
            .map(|(_, seed)| *seed)
            .collect();
        if seeds.is_empty() {
            continue;
        }
        let mut part = scenario.clone();
        part.seeds = seeds;
        reports.push(run_scenario(&part, &out_dir.join(&scenario.name))?);
    }
    Ok(reports)
}

/// Joins the directories written by [`run_experiment_shard`] (one per
/// shard, same `plan`) into `out_dir`, exactly as [`run_experiment`] would
/// have written it. Every (scenario, seed) of the plan must be in one of
/// them; a unit found twice is taken from the first directory.
pub fn merge_experiment(
    experiment: &Experiment,
    plan: &Plan,
    shard_dirs: &[PathBuf],
    out_dir: &Path,
) -> Result<ExperimentOutcome, LabError> {
    let scenarios = checked_scenarios(experiment, plan)?;
    let mut reports = Vec::with_capacity(scenarios.len());
    for scenario in &scenarios {
        // A shard that ran none of this scenario's seeds has no directory.
        let parts: Vec<Report> = shard_dirs
            .iter()
            .filter_map(|dir| {
                let text =
                    std::fs::read_to_string(dir.join(&scenario.name).join("results.json")).ok()?;
                serde_json::from_str(&text).ok()
            })
            .collect();
        let mut runs = Vec::with_capacity(scenario.seeds.len());
        for &seed in &scenario.seeds {
            let found = parts
                .iter()
                .find_map(|part| part.runs.iter().find(|run| run.seed == seed).cloned());
            match found {
                Some(run) => runs.push(run),
                None => {
                    return Err(LabError::MissingShardRun {
                        scenario: scenario.name.clone(),
                        seed,
                    })
                }
            }
        }
        let report = Report {
            experiment: scenario.name.clone(),
            sift_version: SIFT_VERSION.to_string(),
            runs,
        };
        let dir = out_dir.join(&scenario.name);
        report.write(&dir)?;
        let path = dir.join("scenario.toml");
        std::fs::write(&path, scenario.to_toml()?)
            .map_err(|source| LabError::Write { path, source })?;
        reports.push(report);
    }
    write_experiment(experiment, plan, &scenarios, reports, out_dir)
}

/// Compares `reports` (one per scenario, in order) with the paper and
/// writes the experiment-level files into `out_dir`.
fn write_experiment(
    experiment: &Experiment,
    plan: &Plan,
    scenarios: &[Scenario],
    reports: Vec<Report>,
    out_dir: &Path,
) -> Result<ExperimentOutcome, LabError> {
    let comparison = (experiment.compare)(&reports);
    let seeds: usize = scenarios.iter().map(|s| s.seeds.len()).sum();
    let mut summary = format!(
        "# {}: {}\n\n{} scenario{}, {} run{} in virtual time ({} sweep; seeded and repeatable).\n\n{}\n\n## Runs\n\n",
        experiment.name,
        experiment.title,
        scenarios.len(),
        if scenarios.len() == 1 { "" } else { "s" },
        seeds,
        if seeds == 1 { "" } else { "s" },
        if plan.quick { "quick" } else { "full" },
        comparison.markdown.trim_end()
    );
    for scenario in scenarios {
        summary.push_str(&format!("- [{0}]({0}/summary.md)\n", scenario.name));
    }
    let combined = combined_report(experiment.name, &reports);
    let mut files = vec![
        ("summary.md".to_string(), summary.clone()),
        ("results.json".to_string(), combined.to_json()?),
    ];
    for table in &comparison.tables {
        files.push((format!("{}.csv", table.name), table.to_csv()));
    }
    for figure in &comparison.figures {
        files.push((format!("{}_points.csv", figure.name), figure.to_csv()));
    }
    for (name, contents) in files {
        let path = out_dir.join(name);
        std::fs::write(&path, contents).map_err(|source| LabError::Write { path, source })?;
    }
    Ok(ExperimentOutcome {
        reports,
        comparison,
        summary,
    })
}

/// Every run of every report in one report named after the experiment: each
/// run's `params` gains `scenario`; time series are left out (each scenario
/// directory's `results.json` keeps them).
pub fn combined_report(experiment: &str, reports: &[Report]) -> Report {
    let runs = reports
        .iter()
        .flat_map(|report| {
            report.runs.iter().map(move |run| {
                let mut run = run.clone();
                run.params
                    .insert("scenario".into(), report.experiment.clone().into());
                for flow in &mut run.flows {
                    flow.timeseries.clear();
                }
                run
            })
        })
        .collect();
    Report {
        experiment: experiment.to_string(),
        sift_version: SIFT_VERSION.to_string(),
        runs,
    }
}

#[cfg(test)]
mod tests;
