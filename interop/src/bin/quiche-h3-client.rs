//! quiche-h3-client: quiche's own HTTP/3 (`quiche::h3`) fetching files:
//! an HTTP/3 and QUIC stack that shares no code with sift or h3, the
//! peer of the HTTP/3 interop tests.

use std::process::ExitCode;

use clap::Parser;
use sift_interop::peers::cli::{self, H3ClientArgs};
use sift_interop::peers::h3::Report;
use sift_interop::peers::quiche::h3::{fetch, Options};

/// Fetch files over HTTP/3 (quiche's h3). Without --ca, the server's
/// certificate is not verified (as with --insecure).
#[derive(Parser)]
#[command(version)]
struct Args {
    #[command(flatten)]
    client: H3ClientArgs,
}

fn main() -> ExitCode {
    cli::exit("quiche-h3-client", run(Args::parse()))
}

fn run(args: Args) -> anyhow::Result<()> {
    let client = args.client;
    let (urls, server_name) = client.targets()?;
    let (files, version) = fetch(&Options {
        urls,
        server_name,
        output_dir: client.output_dir,
        ca: client.ca,
    })?;
    Report {
        stack: "quiche".into(),
        version,
        alpn: "h3".into(),
        files,
    }
    .print(client.json)
}
