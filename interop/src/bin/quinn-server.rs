//! quinn-server: the file protocol's server over quinn 0.11, a peer sift
//! is compared with.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use sift_interop::peers::cli::{self, FileServerArgs};
use sift_interop::peers::quinn::config::controller_names;
use sift_interop::peers::quinn::file::{Server, ServerOptions};

const EXAMPLES: &str = "\
Examples:
  # Serve ./files on port 4433 with CUBIC (quinn's default):
  quinn-server --listen 0.0.0.0:4433 --root ./files

  # Loopback, BBR, a free port (the \"listening on\" line names it):
  quinn-server --listen 127.0.0.1:0 --root /srv/data --cc bbr

bbr-iw10 is quinn's BBR started at ten datagrams, not quinn's 240 kB;
either way it sends against its ProbeRtt window from the first ACK (see
--cc-log).";

/// Serve the files under a directory over quinn (a peer sift is compared
/// with). A fresh self-signed certificate for `localhost` is made at start;
/// clients trust it with `quinn-client --ca DIR/cert.pem`.
#[derive(Parser)]
#[command(version, after_help = EXAMPLES)]
struct Args {
    #[command(flatten)]
    server: FileServerArgs,
    /// Write the sender's state every 5 ms of each connection to FILE, one
    /// JSON object a line: the window quinn sends against, BBR's mode and
    /// own window, packets, datagrams and bytes sent, losses, RTT.
    #[arg(long, value_name = "FILE")]
    cc_log: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args: Args = cli::parse_naming_controllers(&controller_names());
    cli::exit("quinn-server", run(args))
}

fn run(args: Args) -> anyhow::Result<()> {
    let server = args.server;
    let cert_dir = server.cert_dir("quinn-server");
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let bound = Server::bind(&ServerOptions {
            listen: server.listen,
            root: server.root.clone(),
            cc: server.cc.clone(),
            cert_dir: cert_dir.clone(),
            max_datagram: server.max_datagram,
            cc_log: args.cc_log,
        })?;
        println!(
            "listening on {} (root {}, cc {}, certificate {})",
            bound.local_addr()?,
            server.root.display(),
            server.cc,
            cert_dir.join("cert.pem").display()
        );
        bound.run().await;
        Ok(())
    })
}
