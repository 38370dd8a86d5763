//! sift-lab: runs the papers' experiments and scenario files on the
//! deterministic simulator, in virtual time, and writes their results
//! (summary.md, results.json, CSVs, SVG figures).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{value_parser, Arg, ArgAction, ArgMatches, Command};

use sift::lab::{self, experiments, Experiment, Plan};
use sift::sim::Scenario;

#[path = "sift-lab/plot.rs"]
mod plot;

const EXAMPLES: &str = "\
Examples:
  sift-lab list
      the paper experiments and what each reproduces
  sift-lab veno-throughput
      Veno Fig. 5 (Reno vs Veno against random loss); results in results/veno-throughput/
  sift-lab hack --quick --out /tmp/hack
      a reduced sweep in seconds, written to /tmp/hack/
  sift-lab vegas-factorial --seeds 20
      twenty replications per cell instead of the default
  sift-lab run examples/scenarios/lossy-10mbit.toml
      run every seed of the scenario; results go to results/lossy-10mbit/
  sift-lab run my.toml --seed 7 --out /tmp/run7
      run only seed 7 and write the results to /tmp/run7/

Scenario files are described in docs/scenarios.md, the experiments in docs/experiments.md.";

/// The largest `--seeds` accepted (a guard against a typo that would run for days).
const MAX_SEEDS: u64 = 1000;

fn cli() -> Command {
    let out = Arg::new("out")
        .long("out")
        .value_name("DIR")
        .value_parser(value_parser!(PathBuf));
    let mut command = Command::new("sift-lab")
        .version(env!("CARGO_PKG_VERSION"))
        .about("Runs sift experiments on the deterministic network simulator.")
        .after_help(EXAMPLES)
        .subcommand_required(true)
        .arg_required_else_help(true)
        .arg(
            Arg::new("verbose")
                .short('v')
                .long("verbose")
                .global(true)
                .action(ArgAction::SetTrue)
                .help("Log what the simulator does (to stderr)"),
        )
        .subcommand(Command::new("list").about("List the experiments (name and title)"))
        .subcommand(
            Command::new("run")
                .about("Run a scenario file: one simulated run per seed")
                .after_help(EXAMPLES)
                .arg(
                    Arg::new("scenario")
                        .required(true)
                        .value_name("SCENARIO")
                        .value_parser(value_parser!(PathBuf))
                        .help("The scenario (TOML, see docs/scenarios.md)"),
                )
                .arg(
                    out.clone()
                        .help("Where to write the results [default: results/NAME]"),
                )
                .arg(
                    Arg::new("seed")
                        .long("seed")
                        .value_name("N")
                        .value_parser(value_parser!(u64))
                        .help("Run only this seed instead of the scenario's `seeds`"),
                ),
        );
    for experiment in experiments::ALL {
        command = command.subcommand(
            Command::new(experiment.name)
                .about(experiment.title)
                .after_help(EXAMPLES)
                .arg(
                    out.clone()
                        .help("Where to write the results [default: results/NAME]"),
                )
                .arg(
                    Arg::new("quick")
                        .long("quick")
                        .action(ArgAction::SetTrue)
                        .help("A reduced sweep that runs in seconds (for CI)"),
                )
                .arg(
                    Arg::new("seeds")
                        .long("seeds")
                        .value_name("N")
                        .value_parser(value_parser!(u64).range(1..=MAX_SEEDS))
                        .help("Seeds (replications) per scenario [default: the experiment's]"),
                ),
        );
    }
    command
}

fn main() -> ExitCode {
    let matches = cli().get_matches();
    init_logging(matches.get_flag("verbose"));
    match run(&matches) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("sift-lab: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging(verbose: bool) {
    let level = if verbose { "debug" } else { "warn" };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    // Ignore a second initialisation; there is none in this binary.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

fn run(matches: &ArgMatches) -> anyhow::Result<()> {
    let Some((name, args)) = matches.subcommand() else {
        anyhow::bail!("no command given (try --help)");
    };
    match name {
        "list" => list(),
        "run" => {
            let Some(scenario) = args.get_one::<PathBuf>("scenario") else {
                anyhow::bail!("run needs a scenario file");
            };
            run_scenario_file(
                scenario,
                args.get_one::<PathBuf>("out").cloned(),
                args.get_one::<u64>("seed").copied(),
            )
        }
        _ => {
            let Some(experiment) = experiments::find(name) else {
                anyhow::bail!("unknown command {name:?} (try sift-lab list)");
            };
            let plan = Plan {
                quick: args.get_flag("quick"),
                seeds: args.get_one::<u64>("seeds").copied(),
            };
            run_experiment(experiment, &plan, args.get_one::<PathBuf>("out").cloned())
        }
    }
}

/// Writes to stdout; a closed pipe (`sift-lab … | head`) ends the output
/// quietly instead of failing.
fn emit(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(e).context("cannot write to standard output")
        }
        _ => Ok(()),
    }
}

fn list() -> anyhow::Result<()> {
    let width = experiments::ALL
        .iter()
        .map(|e| e.name.len())
        .max()
        .unwrap_or(0);
    let mut text = String::new();
    for experiment in experiments::ALL {
        text.push_str(&format!(
            "{:width$}  {}\n",
            experiment.name, experiment.title
        ));
    }
    emit(&text)
}

fn run_experiment(
    experiment: &Experiment,
    plan: &Plan,
    out: Option<PathBuf>,
) -> anyhow::Result<()> {
    let out = out.unwrap_or_else(|| Path::new("results").join(experiment.name));
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    let scenarios = (experiment.scenarios)(plan);
    let runs: usize = scenarios.iter().map(|s| s.seeds.len()).sum();
    eprintln!(
        "sift-lab: {}: {} scenario{}, {runs} run{} ({} sweep)…",
        experiment.name,
        scenarios.len(),
        if scenarios.len() == 1 { "" } else { "s" },
        if runs == 1 { "" } else { "s" },
        if plan.quick { "quick" } else { "full" }
    );
    let outcome = lab::run_experiment(experiment, plan, &out)
        .with_context(|| format!("experiment {}", experiment.name))?;
    let mut svgs = 0;
    for figure in &outcome.comparison.figures {
        let path = out.join(format!("{}.svg", figure.name));
        if plot::write_svg(figure, &path)? {
            svgs += 1;
        }
    }
    let csvs = outcome.comparison.tables.len() + outcome.comparison.figures.len();
    emit(&format!(
        "{}\nResults written to {}: summary.md, results.json, {csvs} CSV{}, {svgs} SVG{}, {} scenario director{}\n",
        outcome.summary.trim_end(),
        out.display(),
        if csvs == 1 { "" } else { "s" },
        if svgs == 1 { "" } else { "s" },
        outcome.reports.len(),
        if outcome.reports.len() == 1 { "y" } else { "ies" }
    ))
}

fn run_scenario_file(path: &Path, out: Option<PathBuf>, seed: Option<u64>) -> anyhow::Result<()> {
    let mut scenario = Scenario::load(path)?;
    if let Some(seed) = seed {
        scenario.seeds = vec![seed];
    }
    let out = out.unwrap_or_else(|| Path::new("results").join(&scenario.name));
    let report = lab::run_scenario(&scenario, &out)
        .with_context(|| format!("scenario {}", path.display()))?;
    let csvs: usize = report.runs.iter().map(|run| run.flows.len()).sum();
    emit(&format!(
        "{}Results written to {}: results.json, summary.md, scenario.toml{}\n",
        report.summary_markdown(),
        out.display(),
        match csvs {
            0 => String::new(),
            1 => ", 1 time-series CSV".to_string(),
            n => format!(", {n} time-series CSVs"),
        }
    ))
}
