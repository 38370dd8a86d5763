//! sift-h3-server: HTTP/3 on sift. hyperium's `h3` server, unchanged,
//! over sift through the `sift-h3` adapter, serving the files under
//! `--root` (GET only; 404 outside the root). Speaks QUIC v1 to any QUIC
//! client and sift/1 to a sift client that offers it.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use sift::tokio::Endpoint;
use sift_interop::http3::{serve, sift_setup};

const EXAMPLES: &str = "\
Examples:
  sift-h3-server --listen 127.0.0.1:4433 --root /www
  sift-h3-server --listen [::]:443 --root /www --cert /certs/cert.pem --key /certs/priv.key";

/// Serve files over HTTP/3 (h3 on sift).
#[derive(Parser)]
#[command(version, after_help = EXAMPLES)]
struct Args {
    /// Address to listen on (port 0 picks one); printed as
    /// `listening on ADDR` on stderr.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:4433")]
    listen: SocketAddr,
    /// Directory whose files are served.
    #[arg(long, value_name = "DIR")]
    root: PathBuf,
    /// Certificate chain (PEM) [default: a fresh self-signed one for
    /// localhost, whose fingerprint is printed].
    #[arg(long, value_name = "PEM", requires = "key")]
    cert: Option<PathBuf>,
    /// The certificate's private key (PEM).
    #[arg(long, value_name = "PEM", requires = "cert")]
    key: Option<PathBuf>,
    /// Versions to speak, most preferred first: sift/1, v1.
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "sift/1,v1"
    )]
    versions: Vec<String>,
}

#[tokio::main]
async fn main() -> ExitCode {
    match run(Args::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("sift-h3-server: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> anyhow::Result<()> {
    let root = args
        .root
        .canonicalize()
        .with_context(|| format!("--root {}", args.root.display()))?;
    anyhow::ensure!(
        root.is_dir(),
        "--root {} is not a directory",
        root.display()
    );
    let cert_key = args.cert.as_deref().zip(args.key.as_deref());
    let config = sift_setup::server(cert_key, sift_setup::versions(&args.versions)?)?;
    if let (None, Some(identity)) = (&args.cert, &config.tls.identity) {
        eprintln!("self-signed certificate {}", identity.fingerprint());
    }
    let endpoint = Endpoint::server(args.listen, config).context("cannot listen")?;
    eprintln!("listening on {}", endpoint.local_addr());
    let root = Arc::new(root);
    while let Some(conn) = endpoint.accept().await {
        let root = Arc::clone(&root);
        tokio::spawn(async move {
            let remote = conn.remote_address();
            let version = conn.stats().version;
            eprintln!("{remote}: connected ({version})");
            match serve::connection(sift_h3::Connection::new(conn.clone()), root).await {
                Ok(()) => eprintln!("{remote}: closed ({version})"),
                Err(error) => eprintln!("{remote}: failed ({version}): {error}"),
            }
        });
    }
    Ok(())
}
