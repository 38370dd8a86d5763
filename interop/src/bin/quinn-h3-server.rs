//! quinn-h3-server: hyperium's `h3` server over quinn (`h3-quinn`, h3's
//! own backend), the same serving code as sift-h3-server on another QUIC
//! stack: the quinn peer that sift-h3-client fetches from.

use std::process::ExitCode;

use clap::Parser;
use sift_interop::peers::cert::Certificate;
use sift_interop::peers::cli::{self, ServeArgs};
use sift_interop::peers::quinn::h3;

/// Serve files over HTTP/3 (h3 on quinn).
#[derive(Parser)]
#[command(version)]
struct Args {
    #[command(flatten)]
    serve: ServeArgs,
}

#[tokio::main]
async fn main() -> ExitCode {
    cli::exit("quinn-h3-server", run(Args::parse()).await)
}

async fn run(args: Args) -> anyhow::Result<()> {
    let serve = args.serve;
    let certificate = Certificate::given_or_generated(
        serve.cert.as_deref(),
        serve.key.as_deref(),
        &serve.scratch("quinn-h3-server"),
    )?;
    h3::serve(serve.listen, &serve.root, &certificate).await
}
