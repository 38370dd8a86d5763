//! quiche-hq: an hq-interop (HTTP/0.9 over QUIC) server and client on
//! quiche 0.28, the quic-interop-runner's protocol.

use std::process::ExitCode;

use clap::Parser;
use sift_interop::hq::cli::Command;
use sift_interop::hq::{quiche_peer, server_certificate};

const EXAMPLES: &str = "\
Examples:
  quiche-hq server --listen 127.0.0.1:4433 --root ./www --retry
  quiche-hq client https://127.0.0.1:4433/a.bin https://127.0.0.1:4433/b.bin \\
      --output-dir ./downloads --insecure --json
  SSLKEYLOGFILE=keys.log quiche-hq client https://[::1]:4433/a.bin --output-dir d --insecure --zerortt";

/// hq-interop over quiche: the interop runner's HTTP/0.9.
#[derive(Parser)]
#[command(version, after_help = EXAMPLES)]
struct Args {
    #[command(subcommand)]
    command: Command,
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("quiche-hq: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    match args.command {
        Command::Server(server) => {
            let scratch = std::env::temp_dir().join(format!("quiche-hq-{}", std::process::id()));
            let (cert, key) =
                server_certificate(server.cert.as_deref(), server.key.as_deref(), &scratch)?;
            let mut bound = quiche_peer::Server::bind(quiche_peer::ServerOptions {
                listen: server.listen,
                root: server.root.clone(),
                cert,
                key,
                retry: server.retry,
            })?;
            eprintln!(
                "listening on {} (root {}, certificate {})",
                bound.local_addr(),
                server.root.display(),
                server
                    .cert
                    .unwrap_or_else(|| scratch.join("cert.pem"))
                    .display()
            );
            bound.run()
        }
        Command::Client(client) => {
            let report = quiche_peer::run_client(&client.options()?)?;
            client.print(&report)
        }
    }
}
