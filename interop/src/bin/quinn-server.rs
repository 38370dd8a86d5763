//! quinn-server: the quinn peer's server, serving files over quinn 0.11.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use sift_interop::baseline::tls::{parse_max_datagram, MAX_DATAGRAM_SIZE};
use sift_interop::quinn_peer::server::{Server, ServerOptions};

const EXAMPLES: &str = "\
Examples:
  # Serve ./files on port 4433 with CUBIC (quinn's default):
  quinn-server --listen 0.0.0.0:4433 --root ./files

  # Loopback, BBR, a free port (the \"listening on\" line names it):
  quinn-server --listen 127.0.0.1:0 --root /srv/data --cc bbr";

/// Serve the files under a directory over quinn (a peer sift is compared
/// with). A fresh self-signed certificate for `localhost` is made at start;
/// clients trust it with `quinn-client --ca DIR/cert.pem`.
#[derive(Parser)]
#[command(version, after_help = EXAMPLES)]
struct Args {
    /// Address and UDP port to listen on.
    #[arg(long, default_value = "0.0.0.0:4433")]
    listen: SocketAddr,
    /// Directory whose files are served.
    #[arg(long, value_name = "DIR")]
    root: PathBuf,
    /// quinn congestion controller for the data the server sends: cubic,
    /// newreno, bbr, or bbr-iw10 (its BBR started at ten datagrams, not
    /// quinn's 240 kB; either way it sends against its ProbeRtt window
    /// from the first ACK, see --cc-log).
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
    /// Write the sender's state every 5 ms of each connection to FILE, one
    /// JSON object a line: the window quinn sends against, BBR's mode and
    /// own window, packets, datagrams and bytes sent, losses, RTT.
    #[arg(long, value_name = "FILE")]
    cc_log: Option<PathBuf>,
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("quinn-server: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    let cert_dir = args.cert_dir.unwrap_or_else(|| {
        std::env::temp_dir().join(format!("quinn-server-{}", std::process::id()))
    });
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let server = Server::bind(&ServerOptions {
            listen: args.listen,
            root: args.root.clone(),
            cc: args.cc.clone(),
            cert_dir: cert_dir.clone(),
            max_datagram: args.max_datagram,
            cc_log: args.cc_log.clone(),
        })?;
        println!(
            "listening on {} (root {}, cc {}, certificate {})",
            server.local_addr()?,
            args.root.display(),
            args.cc,
            cert_dir.join("cert.pem").display()
        );
        server.run().await;
        Ok(())
    })
}
