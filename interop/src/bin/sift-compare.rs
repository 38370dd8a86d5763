//! sift-compare: sift, quiche, quinn and quic-go side by side over the same
//! emulated links.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context};
use clap::{Args, Parser, Subcommand};
use sift::lab::Shard;
use sift_interop::compare::binaries::Binaries;
use sift_interop::compare::execute::Runner;
use sift_interop::compare::links::LinkFile;
use sift_interop::compare::plan::{link_variants, loopback_variants, Plan, Protection, Stack};
use sift_interop::compare::report::{self, rate};
use sift_interop::compare::results::{
    Machine, Results, RunRecord, QUICHE_024_VERSION, QUICHE_VERSION, QUIC_GO_VERSION, QUINN_VERSION,
};
use sift_interop::compare::{chart, summary};
use sift_interop::peers::quiche::config::CONTROLLERS;
use sift_interop::peers::quinn::config::CONTROLLERS as QUINN_CONTROLLERS;

/// quic-go's controllers (its API has CUBIC alone; interop/quic-go/file.go).
const QUIC_GO_CONTROLLERS: &[&str] = &["cubic"];

const EXAMPLES: &str = "\
Examples:
  # Everything, as checked in under interop/results/ (about an hour on 2 cores):
  sift-compare run

  # One link, one controller each, one repetition, a small file (the CI smoke):
  sift-compare run --only loss1-50m-100ms --reps 1 --quiche-cc cubic --quinn-cc cubic \\
      --sift-cc cubic --file-bytes 500000 --loopback-bytes 0 --out /tmp/smoke --require-all

  # quiche 0.24 beside the newest (built apart: interop/quiche-0.24/):
  sift-compare run --only loss1-50m-100ms --quiche-0-24-bin interop/quiche-0.24/target/release

  # Shard 3 of 8 (Slurm array, GNU parallel), then join the shards:
  sift-compare run --shard 3/8 --out /tmp/shards/3
  sift-compare merge /tmp/shards/* --out interop/results";

/// Run sift, quiche, quinn and quic-go over the same emulated links
/// (sift-link), every controller of each, and write results.json,
/// comparison.md and comparison.svg. quic-go's rows need its peer built
/// (`interop/quic-go/build.sh`, Go); without it they are left out with a
/// line saying so.
#[derive(Parser)]
#[command(version, after_help = EXAMPLES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the comparison (or one shard of it).
    #[command(after_help = EXAMPLES)]
    Run(Box<RunArgs>),
    /// Join shards' results.json into one report.
    #[command(after_help = EXAMPLES)]
    Merge {
        /// Directories holding a shard's results.json.
        #[arg(required = true, value_name = "DIR")]
        shards: Vec<PathBuf>,
        /// Where to write the joined report.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
}

#[derive(Args)]
struct RunArgs {
    /// The link specs [default: interop/links.toml].
    #[arg(long, value_name = "FILE")]
    links: Option<PathBuf>,
    /// Only these links (by name; repeat or separate with commas);
    /// `loopback` alone: no link, only the loopback runs.
    #[arg(long, value_name = "NAME", value_delimiter = ',')]
    only: Vec<String>,
    /// Repetitions of every variant on every link.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    reps: u32,
    /// sift-link seed of repetition 1 (repetition r uses SEED + r - 1).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// quiche controllers [default: all this quiche has: cubic, reno, bbr2;
    /// `none`: no quiche rows].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    quiche_cc: Vec<String>,
    /// quinn controllers [default: all quinn 0.11 has: cubic, newreno, bbr;
    /// `none`: no quinn rows].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    quinn_cc: Vec<String>,
    /// quic-go controllers [default: cubic, the only one quic-go v0.65.0's
    /// API offers; `none`: no quic-go rows].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    quic_go_cc: Vec<String>,
    /// Directory of quiche024-server and quiche024-client (quiche 0.24
    /// built apart: `compare.sh` builds and passes it when
    /// SIFT_COMPARE_QUICHE_0_24=1); without it, no quiche 0.24 rows.
    #[arg(long, value_name = "DIR")]
    quiche_0_24_bin: Option<PathBuf>,
    /// quiche 0.24 controllers [default: cubic, reno, bbr2; `none`: none].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    quiche_0_24_cc: Vec<String>,
    /// sift controllers [default: all that `sift-client --help` lists];
    /// `NAME-iwN` runs NAME from an initial window of N packets
    /// (`--initial-window N`), e.g. `bbr-iw200` beside quinn's BBR;
    /// `NAME-v1` (or `NAME-iwN-v1`) runs it over QUIC version 1 instead of
    /// sift/1 (`--versions v1`: a shorter header, no corruption notices).
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    sift_cc: Vec<String>,
    /// sift's corruption-notice settings on the links, `on`, `off` or
    /// `on,off` (each sift controller runs once per setting).
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_values = ["on", "off"], value_parser = parse_on_off)]
    sift_notices: Vec<bool>,
    /// Also run sift over hq-interop on loopback (`https://`, sift's
    /// defaults): the peers' work on the server, which hashes nothing, where
    /// sift's own protocol sends an end-to-end SHA-256 after the data.
    #[arg(long)]
    sift_hq: bool,
    /// Bytes per loopback efficiency download (0: none). Suffixes: kB, MB, GB, KiB, MiB, GiB.
    #[arg(long, default_value = "1GiB", value_parser = parse_size)]
    loopback_bytes: u64,
    /// Download this many bytes on every link instead of each spec's file_bytes.
    #[arg(long, value_parser = parse_size)]
    file_bytes: Option<u64>,
    /// Run only shard K of N (every N-th run, starting at the K-th).
    #[arg(long, value_name = "K/N", default_value = "1/1")]
    shard: Shard,
    /// Where to write results.json, comparison.md, comparison.svg [default: interop/results].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Directory of sift-server, sift-client, sift-link [default: $CARGO_TARGET_DIR/release or target/release of this repository].
    #[arg(long, value_name = "DIR")]
    sift_bin: Option<PathBuf>,
    /// Scratch directory for served files and downloads [default: a new one under the temp dir, removed at the end].
    #[arg(long, value_name = "DIR")]
    work: Option<PathBuf>,
    /// A note on how the machine was used (e.g. "2 shards at once"), kept in the report.
    #[arg(long, default_value = "")]
    note: String,
    /// Fail (exit 1) if any run failed, not only if a file arrived damaged.
    #[arg(long)]
    require_all: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run(*args),
        Command::Merge { shards, out } => merge(&shards, &out),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("sift-compare: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// `1GiB`, `500MB`, `2_000_000`, `64KiB` → bytes.
fn parse_size(text: &str) -> Result<u64, String> {
    let clean: String = text.chars().filter(|c| *c != '_').collect();
    let split = clean
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(clean.len());
    let (number, unit) = clean.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a size (e.g. 1GiB, 500MB, 4000000)"))?;
    let factor: u64 = match unit.trim() {
        "" | "B" => 1,
        "kB" | "KB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        other => {
            return Err(format!(
                "unknown size unit {other:?} (kB, MB, GB, KiB, MiB, GiB)"
            ))
        }
    };
    number
        .checked_mul(factor)
        .ok_or_else(|| format!("{text:?} is too large"))
}

fn interop_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(args: RunArgs) -> anyhow::Result<()> {
    let links_path = args
        .links
        .clone()
        .unwrap_or_else(|| interop_dir().join("links.toml"));
    let mut links = LinkFile::load(&links_path)?.select(&args.only)?;
    if let Some(bytes) = args.file_bytes {
        for link in &mut links {
            link.file_bytes = bytes;
        }
    }
    let sift_dir = args.sift_bin.clone().unwrap_or_else(|| {
        std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| interop_dir().join("..").join("target"))
            .join("release")
    });
    let exe = std::env::current_exe().context("cannot find this program's path")?;
    let quiche_dir = exe.parent().context("this program has no directory")?;
    let binaries = Binaries::locate(&sift_dir, quiche_dir, args.quiche_0_24_bin.as_deref())?;
    let (work, remove_work) = match &args.work {
        Some(dir) => (dir.clone(), false),
        None => (
            std::env::temp_dir().join(format!("sift-compare-{}", std::process::id())),
            true,
        ),
    };
    let outcome = run_in(&args, links, binaries, &work);
    if remove_work {
        let _ = std::fs::remove_dir_all(&work);
    }
    outcome
}

fn run_in(
    args: &RunArgs,
    links: Vec<sift_interop::compare::links::LinkSpec>,
    binaries: Binaries,
    work: &Path,
) -> anyhow::Result<()> {
    let (protection, protection_note) = binaries.sift_protection(&work.join("probe"))?;
    let sift_ccs = if args.sift_cc.is_empty() {
        binaries.sift_controllers()?
    } else {
        args.sift_cc.clone()
    };
    let mut peers = vec![
        (Stack::Quiche, controllers(&args.quiche_cc, CONTROLLERS)),
        (Stack::Quinn, controllers(&args.quinn_cc, QUINN_CONTROLLERS)),
    ];
    let mut peer_versions = vec![
        format!("quiche {QUICHE_VERSION}"),
        format!("quinn {QUINN_VERSION}"),
    ];
    if args.quiche_0_24_bin.is_some() {
        peers.insert(
            1,
            (
                Stack::Quiche024,
                controllers(&args.quiche_0_24_cc, CONTROLLERS),
            ),
        );
        peer_versions.push(format!("quiche-0.24 {QUICHE_024_VERSION}"));
    }
    let quic_go_ccs = controllers(&args.quic_go_cc, QUIC_GO_CONTROLLERS);
    if binaries.quic_go.is_none() {
        if !quic_go_ccs.is_empty() {
            eprintln!(
                "sift-compare: no quic-go rows: quic-go-server and quic-go-client are not built (interop/quic-go/build.sh DIR, needs Go)"
            );
        }
    } else {
        peers.push((Stack::QuicGo, quic_go_ccs));
        peer_versions.push(format!("quic-go {QUIC_GO_VERSION}"));
    }
    peers.retain(|(_, ccs)| !ccs.is_empty());
    let loopback_peers: Vec<Stack> = peers.iter().map(|(stack, _)| *stack).collect();
    let plan = Plan {
        links,
        variants: link_variants(&peers, &sift_ccs, &args.sift_notices, protection),
        loopback_variants: if args.loopback_bytes > 0 {
            loopback_variants(
                &loopback_peers,
                protection == Protection::Default,
                args.sift_hq,
            )
        } else {
            Vec::new()
        },
        loopback_bytes: args.loopback_bytes,
        reps: args.reps,
        seed: args.seed,
    };
    let units = plan.shard_units(args.shard);
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| interop_dir().join("results"));
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    eprintln!(
        "sift-compare: shard {} — {} of {} runs: {} link{} × {} variants × {} repetition{}{}; sift protection: {protection_note}",
        args.shard,
        units.len(),
        plan.units().len(),
        plan.links.len(),
        if plan.links.len() == 1 { "" } else { "s" },
        plan.variants.len(),
        plan.reps,
        if plan.reps == 1 { "" } else { "s" },
        if plan.loopback_variants.is_empty() {
            String::new()
        } else {
            format!(", then {} loopback variants × {}", plan.loopback_variants.len(), report::bytes(plan.loopback_bytes))
        }
    );
    let mut machine = Machine {
        cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_start: load_average(),
        load_end: 0.0,
        note: args.note.clone(),
    };
    let mut runner = Runner::new(binaries, work)?;
    let mut runs: Vec<RunRecord> = Vec::with_capacity(units.len());
    let started = Instant::now();
    for (i, unit) in units.iter().enumerate() {
        let record = runner.run(&plan, unit)?;
        let done = i + 1;
        let elapsed = started.elapsed().as_secs_f64();
        let eta = elapsed / done as f64 * (units.len() - done) as f64;
        let outcome = match (&record.flow, &record.error) {
            // hq-interop has no trailer: the server's counters are unknown.
            (Some(flow), None) if unit.variant().hq => format!(
                "{} in {:.1} s (hq-interop: no sender counters)",
                rate(flow.goodput_bps),
                flow.completion_s
            ),
            (Some(flow), None) => format!(
                "{} in {:.1} s ({} retx, {} PTOs{})",
                rate(flow.goodput_bps),
                flow.completion_s,
                flow.retransmitted_packets,
                flow.ptos,
                if flow.corruption_notices_received > 0 {
                    format!(", {} notices", flow.corruption_notices_received)
                } else {
                    String::new()
                }
            ),
            (_, Some(error)) => format!("FAILED: {error}"),
            (None, None) => "no report".to_string(),
        };
        eprintln!(
            "[{done:>4}/{} {:>3}% eta {}] {}: {outcome}",
            units.len(),
            done * 100 / units.len().max(1),
            minutes(eta),
            unit.describe(plan.reps)
        );
        runs.push(record);
    }
    machine.load_end = load_average();
    let results = Results {
        tool: "sift-compare".into(),
        sift_version: sift::lab::SIFT_VERSION.into(),
        quiche_version: QUICHE_VERSION.into(),
        peer_versions,
        sift_protection: protection_note,
        plan,
        shards: vec![args.shard.to_string()],
        machines: vec![machine],
        commands: vec![command_line()],
        runs,
    };
    write_report(&results, &out)?;
    let damaged = results
        .runs
        .iter()
        .filter(|r| r.flow.is_some() && !r.byte_exact)
        .count();
    let failed = results.runs.iter().filter(|r| !r.ok).count();
    if damaged > 0 {
        bail!(
            "{damaged} download{} arrived damaged (see {})",
            if damaged == 1 { "" } else { "s" },
            out.join("comparison.md").display()
        );
    }
    if args.require_all && failed > 0 {
        bail!(
            "{failed} run{} failed (see {})",
            if failed == 1 { "" } else { "s" },
            out.join("comparison.md").display()
        );
    }
    Ok(())
}

fn merge(dirs: &[PathBuf], out: &Path) -> anyhow::Result<()> {
    let parts = dirs
        .iter()
        .map(|dir| Results::load(&dir.join("results.json")))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let merged = Results::merge(parts)?;
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    write_report(&merged, out)?;
    let missing = merged.missing().len();
    if missing > 0 {
        eprintln!("sift-compare: warning: {missing} run{} of the plan missing: merge the other shards too", if missing == 1 { " is" } else { "s are" });
    }
    Ok(())
}

fn write_report(results: &Results, out: &Path) -> anyhow::Result<()> {
    let summary = summary::summarize(results);
    let markdown = report::markdown(results, &summary);
    let files = [
        ("results.json", results.to_json()?),
        ("comparison.md", markdown.clone()),
        ("comparison.svg", chart::svg(&summary)?),
    ];
    for (name, contents) in files {
        let path = out.join(name);
        std::fs::write(&path, contents)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    let headline: String = markdown
        .split("\n## ")
        .find(|section| section.starts_with("Summary"))
        .map(|section| format!("## {section}"))
        .unwrap_or_default();
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(
        stdout,
        "{}Results written to {}: results.json, comparison.md, comparison.svg",
        headline,
        out.display()
    );
    Ok(())
}

/// `on` or `off`, as the sift binaries spell a switch.
fn parse_on_off(text: &str) -> Result<bool, String> {
    match text {
        "on" => Ok(true),
        "off" => Ok(false),
        other => Err(format!("expected on or off, not {other:?}")),
    }
}

/// The controllers asked for: all of `known` when none were named, none for
/// `none`.
fn controllers(asked: &[String], known: &[&str]) -> Vec<String> {
    match asked {
        [] => known.iter().map(|s| s.to_string()).collect(),
        [none] if none == "none" => Vec::new(),
        list => list.to_vec(),
    }
}

fn minutes(seconds: f64) -> String {
    let seconds = seconds.max(0.0).round() as u64;
    format!("{}:{:02}", seconds / 60, seconds % 60)
}

fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0)
}

fn command_line() -> String {
    let mut words: Vec<String> = std::env::args().collect();
    if let Some(first) = words.first_mut() {
        *first = "sift-compare".into();
    }
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_decimal_and_binary_suffixes() {
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("500MB"), Ok(500_000_000));
        assert_eq!(parse_size("4_000_000"), Ok(4_000_000));
        assert_eq!(parse_size("0"), Ok(0));
        assert!(parse_size("1 parsec").is_err());
        assert!(parse_size("99999999999GiB").is_err());
    }

    #[test]
    fn notice_settings_read_on_and_off_only() {
        let args = Cli::try_parse_from(["sift-compare", "run"]).unwrap();
        let Command::Run(run) = args.command else {
            panic!("not run")
        };
        assert_eq!(run.sift_notices, [true, false]);
        let args = Cli::try_parse_from(["sift-compare", "run", "--sift-notices", "on"]).unwrap();
        let Command::Run(run) = args.command else {
            panic!("not run")
        };
        assert_eq!(run.sift_notices, [true]);
        assert!(Cli::try_parse_from(["sift-compare", "run", "--sift-notices", "yes"]).is_err());
    }

    #[test]
    fn controller_lists_default_to_all_and_none_means_no_rows() {
        assert_eq!(controllers(&[], &["a", "b"]), ["a", "b"]);
        assert!(controllers(&["none".into()], &["a"]).is_empty());
        assert_eq!(controllers(&["b".into()], &["a", "b"]), ["b"]);
    }
}
