//! quiche-h3-client: quiche's own HTTP/3 (`quiche::h3`) fetching files:
//! an HTTP/3 and QUIC stack that shares no code with sift or h3, the
//! peer of the HTTP/3 interop tests.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use sift_interop::http3::fetch::Report;
use sift_interop::http3::quiche_client::{self, Options};
use sift_interop::http3::target;

/// Fetch files over HTTP/3 (quiche's h3).
#[derive(Parser)]
#[command(version)]
struct Args {
    /// https://HOST[:PORT]/PATH, all on one server.
    #[arg(required = true, value_name = "URL")]
    urls: Vec<String>,
    /// Where the files go, each under its URL's path.
    #[arg(long, value_name = "DIR")]
    output_dir: PathBuf,
    /// Trust this certificate (PEM) [default: verify nothing].
    #[arg(long, value_name = "PEM")]
    ca: Option<PathBuf>,
    /// Name sent as SNI and checked with --ca [default: the URL's host].
    #[arg(long, value_name = "NAME")]
    server_name: Option<String>,
    /// Print one JSON object (stack, version, alpn, files) on stdout.
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("quiche-h3-client: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    let targets = target::parse(&args.urls)?;
    let server_name = args.server_name.unwrap_or_else(|| targets.host.clone());
    let (files, version) = quiche_client::fetch(&Options {
        targets,
        server_name,
        output_dir: args.output_dir,
        ca: args.ca,
    })?;
    Report {
        stack: "quiche".into(),
        version,
        alpn: "h3".into(),
        files,
    }
    .print(args.json)
}
