//! Experiment definitions reproducing the papers, used by `sift-lab`.
//!
//! The lab turns scenarios into results on disk: `run_scenario` runs one
//! scenario for each of its seeds in the simulator and writes the report
//! (`results.json`, `summary.md`, time-series CSVs, and the effective
//! `scenario.toml`). A named paper experiment is an [`Experiment`]: a function
//! that builds its scenarios (the paper's topology and parameters, one per
//! point of a sweep) plus a function that compares the reports with the
//! paper's numbers; `run_experiment` runs and writes both.
//!
//! The lab owns no simulation logic (that is `sim`) and reads the wall clock
//! only once per run, to anchor virtual time; no result depends on it.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::sim::{Report, ReportError, Scenario, ScenarioError, SimError, Simulation};

/// The sift version recorded in every report.
pub const SIFT_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Running or writing an experiment failed.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error("seed {seed}: {source}")]
    Simulation { seed: u64, source: SimError },
    #[error(transparent)]
    Report(#[from] ReportError),
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("experiment {experiment:?} has two scenarios named {name:?} (their results would overwrite each other)")]
    DuplicateScenario { experiment: String, name: String },
}

/// Runs `scenario` once per seed, without writing anything.
pub fn simulate(scenario: &Scenario) -> Result<Report, LabError> {
    scenario.validate()?;
    let mut runs = Vec::with_capacity(scenario.seeds.len());
    for &seed in &scenario.seeds {
        // The one clock read: an anchor for virtual time zero. Every number
        // in the report is an offset from it, so its value never matters.
        let base = Instant::now();
        let mut simulation = Simulation::new(scenario, seed, base)
            .map_err(|source| LabError::Simulation { seed, source })?;
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
    let report = simulate(scenario)?;
    report.write(out_dir)?;
    let path = out_dir.join("scenario.toml");
    std::fs::write(&path, scenario.to_toml()?)
        .map_err(|source| LabError::Write { path, source })?;
    Ok(report)
}

/// A named experiment reproducing a paper's table or figure.
#[derive(Clone, Copy, Debug)]
pub struct Experiment {
    /// The `sift-lab` command name, e.g. `veno-throughput`.
    pub name: &'static str,
    /// What it reproduces, e.g. "Veno Fig. 5: Reno vs Veno throughput under random loss".
    pub title: &'static str,
    /// Builds the scenarios (uniquely named; one results directory each).
    pub scenarios: fn() -> Vec<Scenario>,
    /// Markdown comparing the reports (in scenario order) with the paper.
    pub compare: fn(&[Report]) -> String,
}

/// What `run_experiment` produced.
#[derive(Clone, Debug)]
pub struct ExperimentOutcome {
    /// One report per scenario, in scenario order.
    pub reports: Vec<Report>,
    /// The comparison markdown (also in `OUT/summary.md`).
    pub comparison: String,
}

/// Runs every scenario of `experiment` into `out_dir/SCENARIO/` and writes
/// the comparison to `out_dir/summary.md`.
pub fn run_experiment(
    experiment: &Experiment,
    out_dir: &Path,
) -> Result<ExperimentOutcome, LabError> {
    let scenarios = (experiment.scenarios)();
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
    let mut reports = Vec::with_capacity(scenarios.len());
    for scenario in &scenarios {
        reports.push(run_scenario(scenario, &out_dir.join(&scenario.name))?);
    }
    let comparison = (experiment.compare)(&reports);
    let mut summary = format!(
        "# {}: {}\n\n{comparison}\n\n## Runs\n\n",
        experiment.name, experiment.title
    );
    for scenario in &scenarios {
        summary.push_str(&format!("- [{0}]({0}/summary.md)\n", scenario.name));
    }
    let path = out_dir.join("summary.md");
    std::fs::write(&path, summary).map_err(|source| LabError::Write { path, source })?;
    Ok(ExperimentOutcome {
        reports,
        comparison,
    })
}

#[cfg(test)]
mod tests;
