//! sift-h3-client: HTTP/3 on sift. hyperium's `h3` client, unchanged,
//! over sift through the `sift-h3` crate: every URL of one call on one
//! connection, one request stream each, at once. Exits 0 only when every
//! file was written whole.

use std::process::ExitCode;

use clap::Parser;
use sift_interop::peers::cli::{self, H3ClientArgs};
use sift_interop::peers::sift::{h3, Trust, Versions};

const EXAMPLES: &str = "\
Examples:
  sift-h3-client https://127.0.0.1:4433/a.bin https://127.0.0.1:4433/b.bin --output-dir /downloads --insecure
  sift-h3-client https://localhost:4433/a.bin --output-dir . --ca cert.pem --json";

/// Fetch files over HTTP/3 (h3 on sift).
#[derive(Parser)]
#[command(version, after_help = EXAMPLES)]
struct Args {
    #[command(flatten)]
    client: H3ClientArgs,
    /// Trust exactly the certificate with this SHA-256 (as
    /// sift-h3-server prints it: SHA256:...).
    #[arg(long, value_name = "SHA256:HEX", conflicts_with_all = ["ca", "insecure"])]
    pin: Option<String>,
    #[command(flatten)]
    versions: Versions,
}

#[tokio::main]
async fn main() -> ExitCode {
    cli::exit("sift-h3-client", run(Args::parse()).await)
}

async fn run(args: Args) -> anyhow::Result<()> {
    let client = args.client;
    let (urls, server_name) = client.targets()?;
    let trust = match (client.ca, args.pin, client.insecure) {
        (Some(ca), _, _) => Trust::Ca(ca),
        (_, Some(pin), _) => Trust::Pin(
            pin.parse()
                .map_err(|error| anyhow::anyhow!("--pin {pin}: {error}"))?,
        ),
        (_, _, true) => Trust::Insecure,
        _ => anyhow::bail!("say how to trust the server: --ca PEM, --pin SHA256:... or --insecure"),
    };
    let report = h3::fetch(
        &urls,
        &server_name,
        &trust,
        args.versions.versions,
        &client.output_dir,
    )
    .await?;
    report.print(client.json)
}
