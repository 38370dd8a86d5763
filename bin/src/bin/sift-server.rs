//! `sift-server`: serves the files under one directory over sift —
//! GET, PUT, LIST and the PERF meter — to many clients at once.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use sift::blocking::Listener;
use sift_bin::cli::common::{self, OnOff};
use sift_bin::cli::server_loop;
use sift_bin::transfer::{FileServer, Root};
use sift_cc::CcConfig;

const EXAMPLES: &str = "\
Examples:
  # Serve ./files on port 4433 (all interfaces):
  sift-server --listen 0.0.0.0:4433 --root ./files --insecure-null-crypto

  # Loopback only, Veno, corruption notices off (the \"no HACK\" baseline):
  sift-server --listen 127.0.0.1:4433 --root /srv/data --cc veno \\
      --corruption-notices off --insecure-null-crypto

  # Clients may ask for BBR or Westwood-A for their downloads, nothing else:
  sift-server --listen 127.0.0.1:4433 --root ./files --accept-cc bbr,westwood-a \
      --insecure-null-crypto

  # Port 0 picks a free port; the \"listening on\" line names it:
  sift-server --listen 127.0.0.1:0 --root . --insecure-null-crypto -v";

/// Serve the files under a directory over sift.
///
/// Clients can download (with resume), upload, list and measure throughput.
/// Nothing outside --root is ever read or written: `..`, absolute paths and
/// symlinks leading out are refused. Uploads are kept only once their
/// SHA-256 matches. One line per transfer goes to stdout.
#[derive(Parser, Debug)]
#[command(name = "sift-server", version, after_help = EXAMPLES)]
struct Args {
    /// Address and UDP port to listen on.
    #[arg(long, value_name = "ADDR", default_value = "0.0.0.0:4433")]
    listen: SocketAddr,
    /// Directory whose files are served.
    #[arg(long, value_name = "DIR")]
    root: PathBuf,
    /// Congestion controller for data the server sends, unless the client
    /// asks for another: reno, cubic, vegas, veno, veno-enhanced, westwood,
    /// westwood-a, bbr.
    #[arg(long, value_name = "NAME", default_value = "cubic", value_parser = common::parse_cc)]
    cc: CcConfig,
    /// Controllers a client may ask for with `sift-client get --cc NAME`
    /// (comma-separated); a request for any other is refused with a clear
    /// message. Default: every controller.
    #[arg(long, value_name = "NAMES", value_delimiter = ',', value_parser = common::parse_cc)]
    accept_cc: Option<Vec<CcConfig>>,
    /// Offer corruption notices (both sides must offer them).
    #[arg(long, value_name = "on|off", default_value = "on")]
    corruption_notices: OnOff,
    /// Run with Null protection: no encryption, no authentication. Required
    /// until TLS lands.
    #[arg(long)]
    insecure_null_crypto: bool,
    /// Most clients connected at once; more get no answer until one leaves.
    #[arg(long, value_name = "N", default_value_t = 64)]
    max_clients: usize,
    /// Log more (-v: this tool's events, -vv: the transport's too).
    #[arg(short, long, action = clap::ArgAction::Count)]
    verbose: u8,
}

fn main() -> ExitCode {
    let args = Args::parse();
    common::run_tool("sift-server", || run(args))
}

fn run(args: Args) -> anyhow::Result<()> {
    common::init_logging(args.verbose);
    common::require_insecure_null_crypto(args.insecure_null_crypto)?;
    if args.max_clients == 0 {
        anyhow::bail!("--max-clients must be at least 1");
    }
    let root =
        Root::new(&args.root).with_context(|| format!("cannot serve {}", args.root.display()))?;
    let cc_name = args.cc.name();
    let mut files = FileServer::new(root);
    if let Some(accepted) = &args.accept_cc {
        let names = accepted.iter().map(|cc| cc.name().to_string()).collect();
        files = files.accepting_controllers(names);
    }
    let config = common::transport_config(args.cc, args.corruption_notices);
    let listener = Listener::bind_with_max_connections(args.listen, config, args.max_clients)
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    println!(
        "listening on {} (root {}, cc {cc_name}, clients may ask for {}, corruption notices {})",
        listener.local_addr(),
        files.root().path().display(),
        files.accepted_controllers().join(","),
        if args.corruption_notices.enabled() {
            "on"
        } else {
            "off"
        },
    );
    std::io::stdout().flush().context("writing to stdout")?;
    let lines: server_loop::LineSink = Arc::new(|line: &str| {
        // A closed stdout must not stop the server.
        let _ = writeln!(std::io::stdout(), "{line}");
    });
    server_loop::serve(&listener, Arc::new(files), lines)
}
