//! quiche-client: the baseline client, downloading one file over quiche.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use sift_interop::baseline::client::{self, GetOptions};
use sift_interop::baseline::tls::{parse_max_datagram, MAX_DATAGRAM_SIZE};

const EXAMPLES: &str = "\
Examples:
  quiche-client get quic://127.0.0.1:4433/big.bin -o /tmp/big.bin --ca /tmp/quiche-server-42/cert.pem
  quiche-client get quic://127.0.0.1:5000/big.bin -o big.bin --cc bbr2 --json --insecure-no-verify";

/// Download files from a quiche-server (the baseline sift is compared with).
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
        /// quiche congestion controller for what this client sends: cubic,
        /// reno, bbr2 (the server's --cc governs the download itself).
        #[arg(long, value_name = "NAME", default_value = "cubic")]
        cc: String,
        /// Trust the server certificate in this PEM file (quiche-server
        /// prints where it wrote it).
        #[arg(
            long,
            value_name = "PEM",
            conflicts_with = "insecure_no_verify",
            required_unless_present = "insecure_no_verify"
        )]
        ca: Option<PathBuf>,
        /// Do not verify the server's certificate.
        #[arg(long)]
        insecure_no_verify: bool,
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
            eprintln!("quiche-client: error: {error:#}");
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
        insecure_no_verify: _,
        server_name,
        json,
        max_datagram,
    } = args.command;
    let (_, server, path) = client::parse_url(&url)?;
    let output = output.unwrap_or_else(|| PathBuf::from(path.rsplit('/').next().unwrap_or(&path)));
    let report = client::get(&GetOptions {
        server,
        server_name,
        path,
        output: output.clone(),
        cc,
        ca,
        max_datagram,
    })?;
    if json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!(
            "get {} ({})\n  bytes        {}\n  time         {:.2} s\n  goodput      {:.2} Mb/s\n  retransmits  {} packets, {} lost, {} PTOs (sender)\n  srtt         {:.1} ms\n  cwnd         {} bytes\n  cc           {}\n  sha256       {}",
            report.path,
            output.display(),
            report.bytes,
            report.completion_s,
            report.goodput_bps / 1e6,
            report.retransmitted_packets,
            report.lost_packets.unwrap_or(0),
            report.ptos,
            report.srtt_us as f64 / 1000.0,
            report.cwnd,
            report.cc,
            report.sha256
        );
    }
    Ok(())
}
