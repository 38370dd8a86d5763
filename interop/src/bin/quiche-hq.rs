//! quiche-hq: an hq-interop (HTTP/0.9 over QUIC) server and client on
//! quiche 0.28, the quic-interop-runner's protocol.

use std::process::ExitCode;

use clap::Parser;
use sift_interop::peers::cert::Certificate;
use sift_interop::peers::cli::{self, HqCommand};
use sift_interop::peers::quiche::hq::{run_client, Server, ServerOptions};

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
    command: HqCommand,
}

fn main() -> ExitCode {
    cli::exit("quiche-hq", run(Args::parse()))
}

fn run(args: Args) -> anyhow::Result<()> {
    match args.command {
        HqCommand::Server(server) => {
            let serve = &server.serve;
            let certificate = Certificate::given_or_generated(
                serve.cert.as_deref(),
                serve.key.as_deref(),
                &serve.scratch("quiche-hq"),
            )?;
            let mut bound = Server::bind(ServerOptions {
                listen: serve.listen,
                root: serve.root.clone(),
                certificate: certificate.clone(),
                retry: server.retry,
            })?;
            eprintln!(
                "listening on {} (root {}, certificate {})",
                bound.local_addr(),
                serve.root.display(),
                certificate.cert_pem.display()
            );
            bound.run()
        }
        HqCommand::Client(client) => {
            let report = run_client(&client.options()?)?;
            client.print(&report)
        }
    }
}
