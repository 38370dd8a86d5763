//! quiche-server: the file protocol's server over quiche, the baseline
//! sift is compared with.

use std::process::ExitCode;

use clap::Parser;
use sift_interop::peers::cli::{self, FileServerArgs};
use sift_interop::peers::quiche::config::CONTROLLERS;
use sift_interop::peers::quiche::file::{Server, ServerOptions};

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
    #[command(flatten)]
    server: FileServerArgs,
}

fn main() -> ExitCode {
    let args: Args = cli::parse_naming_controllers(CONTROLLERS);
    cli::exit("quiche-server", run(args.server))
}

fn run(args: FileServerArgs) -> anyhow::Result<()> {
    let cert_dir = args.cert_dir("quiche-server");
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
