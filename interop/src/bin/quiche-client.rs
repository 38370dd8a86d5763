//! quiche-client: the file protocol's client over quiche, downloading one
//! file.

use std::process::ExitCode;

use clap::Parser;
use sift_interop::peers::cli::{self, FileClientCommand};
use sift_interop::peers::file;
use sift_interop::peers::quiche::config::CONTROLLERS;
use sift_interop::peers::quiche::file::{get, GetOptions};
use sift_interop::peers::url::{Url, QUIC};

const EXAMPLES: &str = "\
Examples:
  quiche-client get quic://127.0.0.1:4433/big.bin -o /tmp/big.bin --ca /tmp/quiche-server-42/cert.pem
  quiche-client get quic://127.0.0.1:5000/big.bin -o big.bin --cc bbr2 --json --insecure-no-verify";

/// Download files from a quiche-server (the baseline sift is compared with).
#[derive(Parser)]
#[command(version, after_help = EXAMPLES)]
struct Args {
    #[command(subcommand)]
    command: FileClientCommand,
}

fn main() -> ExitCode {
    let args: Args = cli::parse_naming_controllers(CONTROLLERS);
    cli::exit("quiche-client", run(args))
}

fn run(args: Args) -> anyhow::Result<()> {
    let FileClientCommand::Get(get_args) = args.command;
    let url = Url::parse(&get_args.url, QUIC)?;
    let output = get_args.output(&url.path);
    let report = get(&GetOptions {
        server: url.address,
        server_name: get_args.server_name.clone(),
        path: url.path,
        output: output.clone(),
        cc: get_args.cc.clone(),
        ca: get_args.ca.clone(),
        max_datagram: get_args.max_datagram,
    })?;
    file::print(&report, &output, get_args.json)
}
