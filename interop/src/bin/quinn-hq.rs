//! quinn-hq: an hq-interop (HTTP/0.9 over QUIC) server and client on
//! quinn 0.11, the quic-interop-runner's protocol.

use std::process::ExitCode;

use clap::Parser;
use sift_interop::peers::cert::Certificate;
use sift_interop::peers::cli::{self, HqCommand};
use sift_interop::peers::quinn::hq::{run_client, Server, ServerOptions};

const EXAMPLES: &str = "\
Examples:
  quinn-hq server --listen 127.0.0.1:4433 --root ./www --retry
  quinn-hq client https://127.0.0.1:4433/a.bin https://127.0.0.1:4433/b.bin \\
      --output-dir ./downloads --insecure --json
  SSLKEYLOGFILE=keys.log quinn-hq client https://[::1]:4433/a.bin --output-dir d --insecure --zerortt";

/// hq-interop over quinn: the interop runner's HTTP/0.9.
#[derive(Parser)]
#[command(version, after_help = EXAMPLES)]
struct Args {
    #[command(subcommand)]
    command: HqCommand,
}

fn main() -> ExitCode {
    cli::exit("quinn-hq", run(Args::parse()))
}

fn run(args: Args) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Runtime::new()?;
    match args.command {
        HqCommand::Server(server) => {
            let serve = &server.serve;
            let certificate = Certificate::given_or_generated(
                serve.cert.as_deref(),
                serve.key.as_deref(),
                &serve.scratch("quinn-hq"),
            )?;
            runtime.block_on(async {
                let bound = Server::bind(&ServerOptions {
                    listen: serve.listen,
                    root: serve.root.clone(),
                    certificate: certificate.clone(),
                    retry: server.retry,
                })?;
                eprintln!(
                    "listening on {} (root {}, certificate {})",
                    bound.local_addr()?,
                    serve.root.display(),
                    certificate.cert_pem.display()
                );
                bound.run().await;
                Ok(())
            })
        }
        HqCommand::Client(client) => {
            let report = runtime.block_on(run_client(&client.options()?))?;
            client.print(&report)
        }
    }
}
