//! sift-lab: runs simulated experiments in virtual time and writes their
//! results (results.json, summary.md, time-series CSVs).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};

use sift::lab;
use sift::sim::Scenario;

const EXAMPLES: &str = "\
Examples:
  sift-lab run examples/scenarios/lossy-10mbit.toml
      run every seed of the scenario; results go to results/lossy-10mbit/
  sift-lab run my.toml --seed 7 --out /tmp/run7
      run only seed 7 and write the results to /tmp/run7/

Scenario files are described in docs/scenarios.md.";

/// Runs sift experiments on the deterministic network simulator.
#[derive(Parser, Debug)]
#[command(name = "sift-lab", version, after_help = EXAMPLES)]
struct Cli {
    /// Log what the simulator does (to stderr).
    #[arg(short, long, global = true)]
    verbose: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a scenario file: one simulated run per seed.
    #[command(after_help = EXAMPLES)]
    Run {
        /// The scenario (TOML, see docs/scenarios.md).
        scenario: PathBuf,
        /// Where to write the results [default: results/NAME].
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Run only this seed instead of the scenario's `seeds`.
        #[arg(long, value_name = "N")]
        seed: Option<u64>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.verbose);
    match run(cli.command) {
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

fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Run {
            scenario,
            out,
            seed,
        } => run_scenario_file(&scenario, out, seed),
    }
}

fn run_scenario_file(path: &Path, out: Option<PathBuf>, seed: Option<u64>) -> anyhow::Result<()> {
    let mut scenario = Scenario::load(path)?;
    if let Some(seed) = seed {
        scenario.seeds = vec![seed];
    }
    let out = out.unwrap_or_else(|| Path::new("results").join(&scenario.name));
    let report = lab::run_scenario(&scenario, &out)
        .with_context(|| format!("scenario {}", path.display()))?;
    print!("{}", report.summary_markdown());
    let csvs: usize = report.runs.iter().map(|run| run.flows.len()).sum();
    println!(
        "Results written to {}: results.json, summary.md, scenario.toml{}",
        out.display(),
        match csvs {
            0 => String::new(),
            1 => ", 1 time-series CSV".to_string(),
            n => format!(", {n} time-series CSVs"),
        }
    );
    Ok(())
}
