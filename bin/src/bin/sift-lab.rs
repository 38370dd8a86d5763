//! sift-lab: runs the papers' experiments and scenario files on the
//! deterministic simulator, in virtual time, and writes their results
//! (summary.md, results.json, CSVs, SVG figures).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{value_parser, Arg, ArgAction, ArgMatches, Command};

use sift::lab::{self, experiments, Experiment, Plan, Shard};
use sift::sim::Scenario;

#[path = "sift-lab/plot.rs"]
mod plot;
#[path = "sift-lab/qvis.rs"]
mod qvis;
#[path = "sift-lab/trace_plot.rs"]
mod trace_plot;

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
  sift-lab run examples/scenarios/veno-link.toml --qlog
      also a qlog trace per connection in results/veno-link/qlog/, each loss
      verdict next to what the link really did to the packet
  sift-lab plot results/veno-link/qlog/seed-1-flow-0-client.sqlog
      cwnd, RTT and the loss verdicts over time, as SVG beside the trace
  sift-lab qvis results/veno-link/qlog/seed-1-flow-0-client.sqlog
      the trace rewritten for qvis (qlog 0.3 names), beside it as .qvis.sqlog
  sift-lab vegas-factorial --shard 2/4 --out /tmp/vf/2
      the second quarter of the sweep (a Slurm array task, a GNU parallel job)
  sift-lab merge vegas-factorial /tmp/vf/1 /tmp/vf/2 /tmp/vf/3 /tmp/vf/4 --out results/vegas-factorial
      join the four quarters into the report a run in one piece writes

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
                )
                .arg(
                    Arg::new("qlog")
                        .long("qlog")
                        .value_name("DIR")
                        .num_args(0..=1)
                        .default_missing_value("")
                        .value_parser(value_parser!(std::ffi::OsString))
                        .help("Write a qlog trace of every connection, the senders' with the ground truth of each loss verdict [default DIR: OUT/qlog]"),
                ),
        )
        .subcommand(
            Command::new("plot")
                .about("Draw a qlog trace (.sqlog) as SVG: cwnd, bytes in flight, RTT and the loss verdicts over time")
                .after_help(EXAMPLES)
                .arg(
                    Arg::new("trace")
                        .required(true)
                        .value_name("TRACE")
                        .value_parser(value_parser!(PathBuf))
                        .help("A qlog trace (sift-lab run --qlog, sift-client --qlog, sift-server --qlog)"),
                )
                .arg(
                    out.clone()
                        .value_name("FILE")
                        .help("Where to write the SVG [default: TRACE with .svg]"),
                ),
        )
        .subcommand(
            Command::new("qvis")
                .about("Rewrite a qlog trace (.sqlog) for qvis, which reads qlog 0.3 event names")
                .after_help(EXAMPLES)
                .arg(
                    Arg::new("trace")
                        .required(true)
                        .value_name("TRACE")
                        .value_parser(value_parser!(PathBuf))
                        .help("A qlog trace (sift-lab run --qlog, sift-client --qlog, sift-server --qlog)"),
                )
                .arg(
                    out.clone()
                        .value_name("FILE")
                        .help("Where to write it [default: TRACE with .qvis.sqlog]"),
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
                .arg(seeds_arg())
                .arg(
                    Arg::new("shard")
                        .long("shard")
                        .value_name("K/N")
                        .value_parser(value_parser!(Shard))
                        .help("Run only the K-th of N slices of the sweep (join them with sift-lab merge)"),
                ),
        );
    }
    command.subcommand(
        Command::new("merge")
            .about("Join the directories of an experiment's --shard runs into its report")
            .after_help(EXAMPLES)
            .arg(
                Arg::new("experiment")
                    .required(true)
                    .value_name("EXPERIMENT")
                    .help("The experiment the shards ran (sift-lab list)"),
            )
            .arg(
                Arg::new("shards")
                    .required(true)
                    .num_args(1..)
                    .value_name("DIR")
                    .value_parser(value_parser!(PathBuf))
                    .help("The shards' --out directories"),
            )
            .arg(
                out.clone()
                    .required(true)
                    .help("Where to write the joined report"),
            )
            .arg(
                Arg::new("quick")
                    .long("quick")
                    .action(ArgAction::SetTrue)
                    .help("The shards ran with --quick"),
            )
            .arg(seeds_arg()),
    )
}

fn seeds_arg() -> Arg {
    Arg::new("seeds")
        .long("seeds")
        .value_name("N")
        .value_parser(value_parser!(u64).range(1..=MAX_SEEDS))
        .help("Seeds (replications) per scenario [default: the experiment's]")
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
                args.get_one::<std::ffi::OsString>("qlog")
                    .map(PathBuf::from),
            )
        }
        "plot" => {
            let Some(trace) = args.get_one::<PathBuf>("trace") else {
                anyhow::bail!("plot needs a trace file");
            };
            let out = args
                .get_one::<PathBuf>("out")
                .cloned()
                .unwrap_or_else(|| trace.with_extension("svg"));
            let series = trace_plot::plot_trace(trace, &out)?;
            emit(&format!(
                "{}: {} random and {} congestive verdicts ({} undone), {} corruption notices; plot written to {}\n",
                trace.display(),
                series.random.len(),
                series.congestive.len(),
                series.undone.len(),
                series.corrupted.len(),
                out.display()
            ))
        }
        "qvis" => {
            let Some(trace) = args.get_one::<PathBuf>("trace") else {
                anyhow::bail!("qvis needs a trace file");
            };
            let out = args
                .get_one::<PathBuf>("out")
                .cloned()
                .unwrap_or_else(|| qvis::default_out(trace));
            let rewritten = qvis::rewrite_trace(trace, &out)?;
            emit(&format!(
                "{}: {} events ({} packets sent) written for qvis to {}\n",
                trace.display(),
                rewritten.events,
                rewritten.packets_sent,
                rewritten.out.display()
            ))
        }
        "merge" => {
            let Some(name) = args.get_one::<String>("experiment") else {
                anyhow::bail!("merge needs the experiment's name");
            };
            let experiment = find_experiment(name)?;
            let shards: Vec<PathBuf> = args
                .get_many::<PathBuf>("shards")
                .map(|dirs| dirs.cloned().collect())
                .unwrap_or_default();
            let Some(out) = args.get_one::<PathBuf>("out") else {
                anyhow::bail!("merge needs --out");
            };
            merge_shards(experiment, &plan_of(args), &shards, out)
        }
        _ => {
            let experiment = find_experiment(name)?;
            let out = args.get_one::<PathBuf>("out").cloned();
            match args.get_one::<Shard>("shard") {
                Some(&shard) if shard != Shard::ALL => {
                    run_shard(experiment, &plan_of(args), shard, out)
                }
                _ => run_experiment(experiment, &plan_of(args), out),
            }
        }
    }
}

fn find_experiment(name: &str) -> anyhow::Result<&'static Experiment> {
    experiments::find(name)
        .ok_or_else(|| anyhow::anyhow!("unknown experiment {name:?} (try sift-lab list)"))
}

fn plan_of(args: &ArgMatches) -> Plan {
    Plan {
        quick: args.get_flag("quick"),
        seeds: args.get_one::<u64>("seeds").copied(),
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
    let svgs = write_figures(&outcome, &out)?;
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

fn run_shard(
    experiment: &Experiment,
    plan: &Plan,
    shard: Shard,
    out: Option<PathBuf>,
) -> anyhow::Result<()> {
    let out = out.unwrap_or_else(|| {
        Path::new("results").join(format!(
            "{}-shard-{}-of-{}",
            experiment.name,
            shard.index(),
            shard.count()
        ))
    });
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    let reports = lab::run_experiment_shard(experiment, plan, shard, &out)
        .with_context(|| format!("experiment {} shard {shard}", experiment.name))?;
    let runs: usize = reports.iter().map(|r| r.runs.len()).sum();
    emit(&format!(
        "{}: shard {shard}: {runs} run{} in {} scenario director{} under {}\nJoin the shards with: sift-lab merge {} DIR... --out DIR{}\n",
        experiment.name,
        if runs == 1 { "" } else { "s" },
        reports.len(),
        if reports.len() == 1 { "y" } else { "ies" },
        out.display(),
        experiment.name,
        match (plan.quick, plan.seeds) {
            (false, None) => String::new(),
            (quick, seeds) => format!(
                "{}{}",
                if quick { " --quick" } else { "" },
                seeds.map_or(String::new(), |n| format!(" --seeds {n}"))
            ),
        }
    ))
}

fn merge_shards(
    experiment: &Experiment,
    plan: &Plan,
    shards: &[PathBuf],
    out: &Path,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let outcome = lab::merge_experiment(experiment, plan, shards, out)
        .with_context(|| format!("merging {}", experiment.name))?;
    write_figures(&outcome, out)?;
    emit(&format!(
        "{}\nMerged {} shard director{} into {}\n",
        outcome.summary.trim_end(),
        shards.len(),
        if shards.len() == 1 { "y" } else { "ies" },
        out.display()
    ))
}

fn write_figures(outcome: &lab::ExperimentOutcome, out: &Path) -> anyhow::Result<usize> {
    let mut svgs = 0;
    for figure in &outcome.comparison.figures {
        let path = out.join(format!("{}.svg", figure.name));
        if plot::write_svg(figure, &path)? {
            svgs += 1;
        }
    }
    Ok(svgs)
}

fn run_scenario_file(
    path: &Path,
    out: Option<PathBuf>,
    seed: Option<u64>,
    qlog: Option<PathBuf>,
) -> anyhow::Result<()> {
    let mut scenario = Scenario::load(path)?;
    if let Some(seed) = seed {
        scenario.seeds = vec![seed];
    }
    let out = out.unwrap_or_else(|| Path::new("results").join(&scenario.name));
    // `--qlog` alone: next to the results.
    let qlog = qlog.map(|dir| {
        if dir.as_os_str().is_empty() {
            out.join("qlog")
        } else {
            dir
        }
    });
    let report = lab::run_scenario_traced(&scenario, &out, qlog.as_deref())
        .with_context(|| format!("scenario {}", path.display()))?;
    if let Some(dir) = &qlog {
        eprintln!(
            "sift-lab: qlog traces in {} (sift-lab plot TRACE.sqlog draws one; qvis opens them)",
            dir.display()
        );
    }
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
