//! sift-matrix: the interop matrix of sift, quiche, quinn and quic-go, case by case
//! as the quic-interop-runner tests QUIC stacks.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use sift_interop::matrix::cell::{CellRunner, Outcome};
use sift_interop::matrix::report::{self, Results};
use sift_interop::matrix::stacks::{self, Binaries, Http3, Stack, QUIC_GO_BUILD};
use sift_interop::matrix::{cases, ci_pair, plan, CI_CASES};

const EXAMPLES: &str = "\
Examples:
  interop/matrix.sh                                   # everything, into interop/matrix/
  interop/matrix.sh --ci                              # sift against quiche, quinn and quic-go: handshake, transfer
  interop/matrix.sh --only handshake,retry --clients quinn --servers quiche,sift
  interop/matrix.sh --out /tmp/m --timeout 60";

/// Run the interop matrix: every client × server pair of sift, quiche,
/// quinn and quic-go for each test case; write matrix.md, results.json and
/// the logs of failing cells. quic-go is left out, with a line saying so,
/// when its peer is not built (no Go).
#[derive(Parser)]
#[command(version, after_help = EXAMPLES)]
struct Args {
    /// Cases to run, comma-separated names or letters [default: all].
    #[arg(long, value_name = "CASES")]
    only: Option<String>,
    /// Clients, comma-separated: sift, quiche, quinn, quic-go [default: all].
    #[arg(long, value_name = "LIST")]
    clients: Option<String>,
    /// Servers, comma-separated: sift, quiche, quinn, quic-go [default: all].
    #[arg(long, value_name = "LIST")]
    servers: Option<String>,
    /// The CI slice: handshake and transfer, pairs with sift on a side
    /// (--only, --clients and --servers narrow it further).
    #[arg(long)]
    ci: bool,
    /// Where matrix.md, results.json and logs/ go.
    #[arg(long, value_name = "DIR", default_value = "interop/matrix")]
    out: PathBuf,
    /// Longest a cell's client may run, seconds.
    #[arg(long, value_name = "SECS", default_value_t = 120)]
    timeout: u64,
    /// Where sift-server, sift-client and sift-link are.
    #[arg(long, value_name = "DIR", default_value = "target/release")]
    sift_bin: PathBuf,
    /// Where quiche-hq, quinn-hq and quic-go-hq are [default: next to this binary].
    #[arg(long, value_name = "DIR")]
    peer_bin: Option<PathBuf>,
    /// sift's HTTP/3 example server (default: sift-h3-server beside the peers).
    #[arg(long, value_name = "BIN")]
    h3_server: Option<PathBuf>,
    /// sift's HTTP/3 example client (default: sift-h3-client beside the peers).
    #[arg(long, value_name = "BIN")]
    h3_client: Option<PathBuf>,
    /// Exit non-zero when a cell fails (unsupported ones do not count).
    #[arg(long)]
    require_pass: bool,
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(error) => {
            eprintln!("sift-matrix: error: {error:#}");
            ExitCode::from(2)
        }
    }
}

/// The stacks a `--clients`/`--servers` list names (all that are built
/// when none): one named but not built is an error.
fn stacks_asked(
    list: Option<&str>,
    built: &[Stack],
    binaries: &Binaries,
) -> anyhow::Result<Vec<Stack>> {
    let Some(list) = list else {
        return Ok(built.to_vec());
    };
    let asked = stacks::parse_list(list)?;
    if let Some(missing) = asked.iter().find(|&&stack| !binaries.has(stack)) {
        anyhow::bail!("{missing} is not built (build it: {QUIC_GO_BUILD})");
    }
    Ok(asked)
}

fn run(args: Args) -> anyhow::Result<bool> {
    let cases = match &args.only {
        Some(list) => cases::parse_list(list)?,
        None if args.ci => CI_CASES.to_vec(),
        None => cases::ALL.to_vec(),
    };
    let peer_bin = match args.peer_bin {
        Some(dir) => dir,
        None => std::env::current_exe()?
            .parent()
            .map(PathBuf::from)
            .unwrap_or_default(),
    };
    let http3 = Http3::locate(&peer_bin, args.h3_server, args.h3_client);
    let binaries = Binaries::locate(&args.sift_bin, &peer_bin, http3)?;
    let built = stacks::ALL
        .into_iter()
        .filter(|&stack| binaries.has(stack))
        .collect::<Vec<_>>();
    if !binaries.has(Stack::QuicGo) {
        eprintln!(
            "sift-matrix: quic-go left out: no quic-go-hq in {} (build it: {QUIC_GO_BUILD})",
            peer_bin.display()
        );
    }
    let clients = stacks_asked(args.clients.as_deref(), &built, &binaries)?;
    let servers = stacks_asked(args.servers.as_deref(), &built, &binaries)?;
    std::fs::create_dir_all(&args.out)?;
    let out = args.out.canonicalize()?;
    let ci = args.ci;
    let cells = plan(&cases, &clients, &servers, |c: Stack, s: Stack| {
        !ci || ci_pair(c, s)
    });
    let runner = CellRunner {
        binaries,
        out: out.clone(),
        timeout: Duration::from_secs(args.timeout),
    };
    let mut results = Vec::new();
    for (index, &(client, server, case)) in cells.iter().enumerate() {
        let result = runner.run(client, server, case);
        let verdict = match &result.outcome {
            Outcome::Pass => "pass".to_string(),
            Outcome::Fail(reason) => format!("FAIL: {}", reason.lines().next().unwrap_or("")),
            Outcome::Unsupported(reason) => format!("unsupported: {reason}"),
        };
        eprintln!(
            "[{}/{}] {client} → {server} {case}: {verdict} ({:.1} s)",
            index + 1,
            cells.len(),
            result.seconds
        );
        results.push(result);
    }
    let markdown = report::markdown(&cases, &clients, &servers, &results);
    std::fs::write(out.join("matrix.md"), &markdown)?;
    let json = Results {
        cases: report::legend(&cases),
        clients: &clients,
        servers: &servers,
        cells: &results,
    };
    std::fs::write(
        out.join("results.json"),
        serde_json::to_string_pretty(&json)?,
    )?;
    println!("{markdown}");
    eprintln!("wrote {}/matrix.md and results.json", out.display());
    let failed = results
        .iter()
        .any(|r| matches!(r.outcome, Outcome::Fail(_)));
    Ok(!(args.require_pass && failed))
}
