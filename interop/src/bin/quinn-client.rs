//! quinn-client: the file protocol's client over quinn 0.11, downloading
//! one file.

use std::process::ExitCode;

use clap::Parser;
use sift_interop::peers::cli::{self, FileClientCommand};
use sift_interop::peers::file;
use sift_interop::peers::quinn::config::controller_names;
use sift_interop::peers::quinn::file::{get, GetOptions};
use sift_interop::peers::url::{Url, QUIC};

const EXAMPLES: &str = "\
Examples:
  quinn-client get quic://127.0.0.1:4433/big.bin -o /tmp/big.bin --ca /tmp/quinn-server-42/cert.pem
  quinn-client get quic://127.0.0.1:5000/big.bin -o big.bin --cc bbr --json --ca cert.pem";

/// Download files from a quinn-server (a peer sift is compared with).
#[derive(Parser)]
#[command(version, after_help = EXAMPLES)]
struct Args {
    #[command(subcommand)]
    command: FileClientCommand,
}

fn main() -> ExitCode {
    let args: Args = cli::parse_naming_controllers(&controller_names());
    cli::exit("quinn-client", run(args))
}

fn run(args: Args) -> anyhow::Result<()> {
    let FileClientCommand::Get(get_args) = args.command;
    let url = Url::parse(&get_args.url, QUIC)?;
    let output = get_args.output(&url.path);
    let options = GetOptions {
        server: url.address,
        server_name: get_args.server_name.clone(),
        path: url.path,
        output: output.clone(),
        cc: get_args.cc.clone(),
        ca: get_args.ca.clone(),
        max_datagram: get_args.max_datagram,
    };
    let report = tokio::runtime::Runtime::new()?.block_on(get(&options))?;
    file::print(&report, &output, get_args.json)
}
