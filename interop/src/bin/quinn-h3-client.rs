//! quinn-h3-client: hyperium's `h3` client over quinn (`h3-quinn`, h3's
//! own backend), the same fetching code as sift-h3-client on another
//! QUIC stack: the quinn peer of the HTTP/3 interop tests.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use sift_interop::http3::fetch::{self, Report};
use sift_interop::http3::{quinn_setup, target};
use sift_interop::quinn_peer::config;

/// Fetch files over HTTP/3 (h3 on quinn).
#[derive(Parser)]
#[command(version)]
struct Args {
    /// https://HOST[:PORT]/PATH, all on one server.
    #[arg(required = true, value_name = "URL")]
    urls: Vec<String>,
    /// Where the files go, each under its URL's path.
    #[arg(long, value_name = "DIR")]
    output_dir: PathBuf,
    /// Trust certificates chaining to these roots (PEM).
    #[arg(long, value_name = "PEM", required_unless_present = "insecure")]
    ca: Option<PathBuf>,
    /// Accept any certificate (the handshake signature is still checked).
    #[arg(long, conflicts_with = "ca")]
    insecure: bool,
    /// Name sent as SNI and checked [default: the URL's host].
    #[arg(long, value_name = "NAME")]
    server_name: Option<String>,
    /// Print one JSON object (stack, version, alpn, files) on stdout.
    #[arg(long)]
    json: bool,
}

#[tokio::main]
async fn main() -> ExitCode {
    match run(Args::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("quinn-h3-client: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> anyhow::Result<()> {
    let targets = target::parse(&args.urls)?;
    let server_name = args.server_name.unwrap_or_else(|| targets.host.clone());
    let bind: SocketAddr = if targets.address.is_ipv4() {
        "0.0.0.0:0".parse()?
    } else {
        "[::]:0".parse()?
    };
    let endpoint = config::endpoint(config::socket(bind)?, None)?;
    let conn = endpoint
        .connect_with(
            quinn_setup::client(args.ca.as_deref())?,
            targets.address,
            &server_name,
        )
        .context("quinn connect")?
        .await
        .context("handshake failed")?;
    let fetched = fetch::over(
        h3_quinn::Connection::new(conn.clone()),
        &targets,
        &args.output_dir,
    )
    .await;
    drop(conn);
    endpoint.wait_idle().await;
    Report {
        stack: "quinn".into(),
        version: "QUIC v1".into(),
        alpn: "h3".into(),
        files: fetched?,
    }
    .print(args.json)
}
