//! sift-peer: sift speaking the file protocol (`peers::file`, ALPN
//! `sift-interop/1`) through its blocking API, so that quiche and sift
//! talk to each other over QUIC v1: `sift-peer serve` answers
//! quiche-client, `sift-peer get` fetches from quiche-server.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use sift_interop::peers::cli;
use sift_interop::peers::sift::{file, Versions};

#[derive(Parser)]
#[command(about = "sift speaking the interop peers' file protocol (sift-interop/1) to QUIC peers")]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve files under --root, one GET per bidirectional stream.
    Serve {
        #[arg(long, default_value = "127.0.0.1:4433")]
        listen: SocketAddr,
        #[arg(long)]
        root: PathBuf,
        /// Where the self-signed certificate (cert.pem) is written, for
        /// clients to trust.
        #[arg(long)]
        cert_dir: PathBuf,
        #[command(flatten)]
        versions: Versions,
    },
    /// Download quic://HOST:PORT/PATH and print one JSON line.
    Get {
        url: String,
        #[arg(short, long)]
        output: PathBuf,
        /// Trust this PEM certificate (the server's, or its CA).
        #[arg(long)]
        ca: PathBuf,
        #[command(flatten)]
        versions: Versions,
    },
}

fn main() -> ExitCode {
    cli::exit("sift-peer", run(Args::parse()))
}

fn run(args: Args) -> anyhow::Result<()> {
    match args.command {
        Command::Serve {
            listen,
            root,
            cert_dir,
            versions,
        } => file::serve(listen, root, &cert_dir, versions.versions),
        Command::Get {
            url,
            output,
            ca,
            versions,
        } => {
            let report = file::get(&url, &output, &ca, versions.versions)?;
            println!("{report}");
            Ok(())
        }
    }
}
