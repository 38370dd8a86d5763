//! quiche-server: the baseline server, serving files over quiche.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use sift_interop::baseline::server::{Server, ServerOptions};
use sift_interop::baseline::tls::{parse_max_datagram, MAX_DATAGRAM_SIZE};

const EXAMPLES: &str = "\
Examples:
  # Serve ./files on port 4433 with CUBIC (quiche's default):
  quiche-server --listen 0.0.0.0:4433 --root ./files

  # Loopback, BBRv2, a free port (the \"listening on\" line names it):
  quiche-server --listen 127.0.0.1:0 --root /srv/data --cc bbr2";

/// Serve the files under a directory over quiche (the baseline sift is
/// compared with). A fresh self-signed certificate for `localhost` is made at
/// start; clients trust it with `quiche-client --ca DIR/cert.pem`.
#[derive(Parser)]
#[command(version, after_help = EXAMPLES)]
struct Args {
    /// Address and UDP port to listen on.
    #[arg(long, default_value = "0.0.0.0:4433")]
    listen: SocketAddr,
    /// Directory whose files are served.
    #[arg(long, value_name = "DIR")]
    root: PathBuf,
    /// quiche congestion controller for the data the server sends: cubic,
    /// reno, bbr2.
    #[arg(long, value_name = "NAME", default_value = "cubic")]
    cc: String,
    /// Where to write the certificate (cert.pem) and key (key.pem)
    /// [default: a new directory under the system's temp dir].
    #[arg(long, value_name = "DIR")]
    cert_dir: Option<PathBuf>,
    /// The largest UDP payload, both ways, 1200 to 8972 bytes. 1350 (the
    /// links' size) by default; loopback carries 8972, which sift's path
    /// MTU discovery reaches there, and sift-compare asks for it on
    /// loopback.
    #[arg(long, value_name = "BYTES", default_value_t = MAX_DATAGRAM_SIZE, value_parser = parse_max_datagram)]
    max_datagram: usize,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("quiche-server: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    let cert_dir = args.cert_dir.unwrap_or_else(|| {
        std::env::temp_dir().join(format!("quiche-server-{}", std::process::id()))
    });
    let mut server = Server::bind(ServerOptions {
        listen: args.listen,
        root: args.root.clone(),
        cc: args.cc.clone(),
        cert_dir: cert_dir.clone(),
        max_datagram: args.max_datagram,
    })?;
    println!(
        "listening on {} (root {}, cc {}, certificate {})",
        server.local_addr(),
        args.root.display(),
        args.cc,
        cert_dir.join("cert.pem").display()
    );
    server.run()
}
