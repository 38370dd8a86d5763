//! sift-h3-server: HTTP/3 on sift. hyperium's `h3` server, unchanged,
//! over sift through the `sift-h3` crate, serving the files under
//! `--root` (GET only; 404 outside the root). Speaks QUIC v1 to any QUIC
//! client and sift/1 to a sift client that offers it.

use std::process::ExitCode;

use clap::Parser;
use sift_interop::peers::cert::Certificate;
use sift_interop::peers::cli::{self, ServeArgs};
use sift_interop::peers::sift::{h3, Versions};

const EXAMPLES: &str = "\
Examples:
  sift-h3-server --listen 127.0.0.1:4433 --root /www
  sift-h3-server --listen [::]:443 --root /www --cert /certs/cert.pem --key /certs/priv.key";

/// Serve files over HTTP/3 (h3 on sift). Without --cert and --key, a
/// fresh self-signed certificate for localhost, whose fingerprint is
/// printed.
#[derive(Parser)]
#[command(version, after_help = EXAMPLES)]
struct Args {
    #[command(flatten)]
    serve: ServeArgs,
    #[command(flatten)]
    versions: Versions,
}

#[tokio::main]
async fn main() -> ExitCode {
    cli::exit("sift-h3-server", run(Args::parse()).await)
}

async fn run(args: Args) -> anyhow::Result<()> {
    let serve = args.serve;
    let certificate = serve
        .cert
        .zip(serve.key)
        .map(|(cert_pem, key_pem)| Certificate { cert_pem, key_pem });
    h3::serve(
        serve.listen,
        &serve.root,
        certificate.as_ref(),
        args.versions.versions,
    )
    .await
}
