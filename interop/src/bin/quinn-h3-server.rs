//! quinn-h3-server: hyperium's `h3` server over quinn (`h3-quinn`, h3's
//! own backend), the same serving code as sift-h3-server on another QUIC
//! stack: the quinn peer that sift-h3-client fetches from.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use sift_interop::http3::{quinn_setup, serve};
use sift_interop::quinn_peer::config;

/// Serve files over HTTP/3 (h3 on quinn).
#[derive(Parser)]
#[command(version)]
struct Args {
    /// Address to listen on (port 0 picks one); printed as
    /// `listening on ADDR` on stderr.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:4433")]
    listen: SocketAddr,
    /// Directory whose files are served.
    #[arg(long, value_name = "DIR")]
    root: PathBuf,
    /// Certificate chain (PEM).
    #[arg(long, value_name = "PEM")]
    cert: PathBuf,
    /// The certificate's private key (PEM).
    #[arg(long, value_name = "PEM")]
    key: PathBuf,
}

#[tokio::main]
async fn main() -> ExitCode {
    match run(Args::parse()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("quinn-h3-server: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> anyhow::Result<()> {
    let root = args
        .root
        .canonicalize()
        .with_context(|| format!("--root {}", args.root.display()))?;
    let server = quinn_setup::server(&args.cert, &args.key)?;
    let endpoint = config::endpoint(config::socket(args.listen)?, Some(server))?;
    eprintln!("listening on {}", endpoint.local_addr()?);
    let root = Arc::new(root);
    while let Some(incoming) = endpoint.accept().await {
        let root = Arc::clone(&root);
        tokio::spawn(async move {
            let remote = incoming.remote_address();
            let conn = match incoming.await {
                Ok(conn) => conn,
                Err(error) => {
                    eprintln!("{remote}: handshake failed: {error}");
                    return;
                }
            };
            match serve::connection(h3_quinn::Connection::new(conn), root).await {
                Ok(()) => eprintln!("{remote}: closed"),
                Err(error) => eprintln!("{remote}: failed: {error}"),
            }
        });
    }
    Ok(())
}
