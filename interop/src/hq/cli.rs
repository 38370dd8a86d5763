//! The command line both hq-interop peers share (`quiche-hq`, `quinn-hq`):
//! `server --listen ADDR --root DIR [--cert F --key F] [--retry]` and
//! `client URL... --output-dir DIR [--chacha20] [--key-update] [--resume]
//! [--zerortt] [--migrate] [--json]`.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::bail;
use clap::{Args, Subcommand};

use super::{parse_urls, ClientOptions, ClientReport};

/// What to run.
#[derive(Subcommand)]
pub enum Command {
    /// Serve the files under a directory to hq-interop clients.
    Server(ServerArgs),
    /// Download files from an hq-interop server, all on one connection.
    Client(ClientArgs),
}

/// `server` options.
#[derive(Args)]
pub struct ServerArgs {
    /// Address and UDP port to listen on (port 0 picks one; the
    /// `listening on ADDR` line names it).
    #[arg(long, default_value = "127.0.0.1:4433")]
    pub listen: SocketAddr,
    /// Directory whose files are served.
    #[arg(long, value_name = "DIR")]
    pub root: PathBuf,
    /// Certificate chain to present (PEM) [default: a fresh self-signed
    /// one for localhost]; needs --key.
    #[arg(long, value_name = "FILE", requires = "key")]
    pub cert: Option<PathBuf>,
    /// The private key (PEM) of --cert.
    #[arg(long, value_name = "FILE", requires = "cert")]
    pub key: Option<PathBuf>,
    /// Make every new client prove its address with a Retry first.
    #[arg(long)]
    pub retry: bool,
}

/// `client` options.
#[derive(Args)]
pub struct ClientArgs {
    /// https://HOST:PORT/PATH of each file, all on one server.
    #[arg(required = true)]
    pub urls: Vec<String>,
    /// Where to write the files (under their paths).
    #[arg(long, value_name = "DIR")]
    pub output_dir: PathBuf,
    /// Trust servers whose certificate chains to this PEM bundle.
    #[arg(long, value_name = "FILE", conflicts_with = "insecure")]
    pub ca: Option<PathBuf>,
    /// Verify no certificate (interop testing only).
    #[arg(long)]
    pub insecure: bool,
    /// Offer only TLS_CHACHA20_POLY1305_SHA256.
    #[arg(long)]
    pub chacha20: bool,
    /// Initiate a key update once the first response bytes are in.
    #[arg(long)]
    pub key_update: bool,
    /// Fetch the first URL, close, then the rest on a second connection
    /// that resumes the first's TLS session.
    #[arg(long)]
    pub resume: bool,
    /// As --resume, with the second connection's requests sent in 0-RTT.
    #[arg(long)]
    pub zerortt: bool,
    /// Move to a new local port once the first response bytes are in
    /// (active connection migration).
    #[arg(long)]
    pub migrate: bool,
    /// Print one JSON object (what was done, each file's size and SHA-256).
    #[arg(long)]
    pub json: bool,
}

impl ClientArgs {
    /// The client's options, URLs parsed and resolved.
    pub fn options(&self) -> anyhow::Result<ClientOptions> {
        if self.ca.is_none() && !self.insecure {
            bail!("say how to trust the server: --ca FILE, or --insecure to verify nothing");
        }
        Ok(ClientOptions {
            urls: parse_urls(&self.urls)?,
            output_dir: self.output_dir.clone(),
            ca: self.ca.clone(),
            chacha20: self.chacha20,
            key_update: self.key_update,
            resume: self.resume,
            zero_rtt: self.zerortt,
            migrate: self.migrate,
        })
    }

    /// Prints the report: JSON with --json, else one line per file.
    pub fn print(&self, report: &ClientReport) -> anyhow::Result<()> {
        if self.json {
            println!("{}", serde_json::to_string(report)?);
        } else {
            for file in &report.files {
                println!("/{} {} bytes sha256 {}", file.path, file.bytes, file.sha256);
            }
        }
        Ok(())
    }
}
