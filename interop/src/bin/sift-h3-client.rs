//! sift-h3-client: HTTP/3 on sift. hyperium's `h3` client, unchanged,
//! over sift through the `sift-h3` adapter: every URL of one call on one
//! connection, one request stream each, at once. Exits 0 only when every
//! file was written whole.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use sift::tokio::Endpoint;
use sift_interop::http3::fetch::{self, Report};
use sift_interop::http3::sift_setup::{self, Trust};
use sift_interop::http3::target;

const EXAMPLES: &str = "\
Examples:
  sift-h3-client https://127.0.0.1:4433/a.bin https://127.0.0.1:4433/b.bin --output-dir /downloads --insecure
  sift-h3-client https://localhost:4433/a.bin --output-dir . --ca cert.pem --json";

/// Fetch files over HTTP/3 (h3 on sift).
#[derive(Parser)]
#[command(version, after_help = EXAMPLES)]
struct Args {
    /// https://HOST[:PORT]/PATH, all on one server.
    #[arg(required = true, value_name = "URL")]
    urls: Vec<String>,
    /// Where the files go, each under its URL's path.
    #[arg(long, value_name = "DIR")]
    output_dir: PathBuf,
    /// Trust certificates chaining to these roots (PEM), for the name.
    #[arg(long, value_name = "PEM", group = "trust")]
    ca: Option<PathBuf>,
    /// Trust exactly the certificate with this SHA-256 (as
    /// sift-h3-server prints it: SHA256:...).
    #[arg(long, value_name = "SHA256:HEX", group = "trust")]
    pin: Option<String>,
    /// Accept any certificate (the handshake signature is still checked).
    #[arg(long, group = "trust")]
    insecure: bool,
    /// Name sent as SNI and checked with --ca [default: the URL's host].
    #[arg(long, value_name = "NAME")]
    server_name: Option<String>,
    /// Versions to offer, most preferred first: sift/1, v1 (a client
    /// starts in v1 and moves to sift/1 when the server offers it).
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "sift/1,v1"
    )]
    versions: Vec<String>,
    /// Print one JSON object (stack, version, alpn, files) on stdout.
    #[arg(long)]
    json: bool,
}

#[tokio::main]
async fn main() -> ExitCode {
    match run(Args::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("sift-h3-client: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> anyhow::Result<()> {
    let targets = target::parse(&args.urls)?;
    let trust = match (args.ca, args.pin, args.insecure) {
        (Some(ca), _, _) => Trust::Ca(ca),
        (_, Some(pin), _) => Trust::Pin(
            pin.parse()
                .map_err(|error| anyhow::anyhow!("--pin {pin}: {error}"))?,
        ),
        (_, _, true) => Trust::Insecure,
        _ => anyhow::bail!("say how to trust the server: --ca PEM, --pin SHA256:... or --insecure"),
    };
    let server_name = args.server_name.unwrap_or_else(|| targets.host.clone());
    let config = sift_setup::client(&trust, &server_name, sift_setup::versions(&args.versions)?)?;
    let bind: SocketAddr = if targets.address.is_ipv4() {
        "0.0.0.0:0".parse()?
    } else {
        "[::]:0".parse()?
    };
    let endpoint = Endpoint::client(bind, config).context("cannot open a UDP socket")?;
    let conn = endpoint
        .connect(targets.address, &server_name)
        .await
        .with_context(|| format!("cannot connect to {}", targets.address))?;
    let version = conn.stats().version;
    let fetched = fetch::over(
        sift_h3::Connection::new(conn.clone()),
        &targets,
        &args.output_dir,
    )
    .await;
    // h3 closed the connection (H3_NO_ERROR) when it was done; see the
    // close out so that the server hears it.
    drop(conn);
    endpoint.wait_idle().await;
    Report {
        stack: "sift".into(),
        version,
        alpn: "h3".into(),
        files: fetched?,
    }
    .print(args.json)
}
