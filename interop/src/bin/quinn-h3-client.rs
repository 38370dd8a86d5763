//! quinn-h3-client: hyperium's `h3` client over quinn (`h3-quinn`, h3's
//! own backend), the same fetching code as sift-h3-client on another
//! QUIC stack: the quinn peer of the HTTP/3 interop tests.

use std::process::ExitCode;

use clap::Parser;
use sift_interop::peers::cli::{self, H3ClientArgs};
use sift_interop::peers::quinn::h3;

/// Fetch files over HTTP/3 (h3 on quinn).
#[derive(Parser)]
#[command(version)]
struct Args {
    #[command(flatten)]
    client: H3ClientArgs,
}

#[tokio::main]
async fn main() -> ExitCode {
    cli::exit("quinn-h3-client", run(Args::parse()).await)
}

async fn run(args: Args) -> anyhow::Result<()> {
    let client = args.client;
    if client.ca.is_none() && !client.insecure {
        anyhow::bail!("say how to trust the server: --ca PEM, or --insecure to verify nothing");
    }
    let (urls, server_name) = client.targets()?;
    let report = h3::fetch(
        &urls,
        &server_name,
        client.ca.as_deref(),
        &client.output_dir,
    )
    .await?;
    report.print(client.json)
}
