//! quinn-client: the quinn peer's client, downloading one file over quinn.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use sift_interop::baseline::client::parse_url;
use sift_interop::baseline::tls::{parse_max_datagram, MAX_DATAGRAM_SIZE};
use sift_interop::quinn_peer::client::{self, GetOptions};

const EXAMPLES: &str = "\
Examples:
  quinn-client get quic://127.0.0.1:4433/big.bin -o /tmp/big.bin --ca /tmp/quinn-server-42/cert.pem
  quinn-client get quic://127.0.0.1:5000/big.bin -o big.bin --cc bbr --json --ca cert.pem";

/// Download files from a quinn-server (a peer sift is compared with).
#[derive(Parser)]
#[command(version, after_help = EXAMPLES)]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Download a file.
    #[command(after_help = EXAMPLES)]
    Get {
        /// quic://HOST[:PORT]/PATH of the file (default port 4433).
        url: String,
        /// Where to write it [default: the file's name, here].
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// quinn congestion controller for what this client sends: cubic,
        /// newreno, bbr (the server's --cc governs the download itself).
        #[arg(long, value_name = "NAME", default_value = "cubic")]
        cc: String,
        /// Trust the server certificate in this PEM file (quinn-server
        /// prints where it wrote it).
        #[arg(long, value_name = "PEM")]
        ca: PathBuf,
        /// Name to check the certificate against [default: localhost].
        #[arg(long, value_name = "NAME", default_value = "localhost")]
        server_name: String,
        /// Print one JSON object (DESIGN §11 flow fields, plus sha256 and
        /// path) instead of the summary.
        #[arg(long)]
        json: bool,
        /// The largest UDP payload, both ways, 1200 to 8972 bytes (as the
        /// server's --max-datagram).
        #[arg(long, value_name = "BYTES", default_value_t = MAX_DATAGRAM_SIZE, value_parser = parse_max_datagram)]
        max_datagram: usize,
    },
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("quinn-client: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    let Command::Get {
        url,
        output,
        cc,
        ca,
        server_name,
        json,
        max_datagram,
    } = args.command;
    let (_, server, path) = parse_url(&url)?;
    let output = output.unwrap_or_else(|| PathBuf::from(path.rsplit('/').next().unwrap_or(&path)));
    let options = GetOptions {
        server,
        server_name,
        path,
        output: output.clone(),
        cc,
        ca,
        max_datagram,
    };
    let report = tokio::runtime::Runtime::new()?.block_on(client::get(&options))?;
    if json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!(
            "get {} ({})\n  bytes        {}\n  time         {:.2} s\n  goodput      {:.2} Mb/s\n  lost         {} packets (sender)\n  srtt         {:.1} ms\n  cwnd         {} bytes\n  cc           {}\n  sha256       {}",
            report.path,
            output.display(),
            report.bytes,
            report.completion_s,
            report.goodput_bps / 1e6,
            report.lost_packets.unwrap_or(0),
            report.srtt_us as f64 / 1000.0,
            report.cwnd,
            report.cc,
            report.sha256
        );
    }
    Ok(())
}
