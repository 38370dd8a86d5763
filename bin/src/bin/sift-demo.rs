//! `sift-demo`: one command that shows sift at work — a server, a lossy
//! emulated link and a client, all on loopback in this process, moving a
//! generated 5 MB file and printing the summary.

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sift::conn::Protection;
use sift::crypto::{ServerIdentity, TlsConfig};
use sift::sim::link::LinkConfig;
use sift_bin::cli::common::{self, OnOff};
use sift_bin::cli::relay::Relay;
use sift_bin::cli::server_loop::{self, Service};
use sift_bin::cli::session::{self, CLOSE_DONE};
use sift_bin::cli::stream::Reads;
use sift_bin::cli::trust::ClientTrust;
use sift_bin::cli::url::SiftUrl;
use sift_bin::transfer::{FileServer, Root};
use sift_cc::CcConfig;

const EXAMPLES: &str = "\
Examples:
  sift-demo                                   # 5 MB, 25 ms each way, 20 Mb/s, 1% loss, 1% corruption
  sift-demo --cc veno --corruption-notices off
  sift-demo --ipv6                            # the same on ::1
  sift-demo --link \"delay 60ms rate 1600kbit limit 12 loss 1%\" --size 1000000
  sift-demo --size 20000000 --link \"delay 25ms loss 2% corrupt 1% corrupt-where payload\" --json";

/// The demo's link, each direction (tc netem syntax).
const DEFAULT_LINK: &str = "delay 25ms rate 20mbit loss 1% corrupt 1% mtu 1500";

/// Transfer a generated file through an emulated lossy link, all on loopback.
///
/// Starts a sift-server on a temporary directory, a UDP relay that delays,
/// drops and corrupts datagrams in both directions, and a client that
/// downloads the file through the relay and checks its SHA-256. TLS 1.3
/// with a throwaway self-signed certificate the client pins; nothing is
/// written to the state directory.
#[derive(Parser, Debug)]
#[command(name = "sift-demo", version, after_help = EXAMPLES)]
struct Args {
    /// Size of the generated file, bytes.
    #[arg(long, default_value_t = 5_000_000)]
    size: u64,
    /// Congestion controller of the sender (the server); sift-server's default.
    #[arg(long, value_name = "NAME", default_value = "cubic-ecn", value_parser = common::parse_cc)]
    cc: CcConfig,
    /// Offer corruption notices on both ends.
    #[arg(long, value_name = "on|off", default_value = "on")]
    corruption_notices: OnOff,
    /// The link, each direction, in `tc netem` syntax (plus sift's
    /// extensions: ber, corrupt-where, outage). Corrupted datagrams are
    /// delivered, not dropped.
    #[arg(long, value_name = "NETEM", default_value = DEFAULT_LINK)]
    link: String,
    /// Seed of the link's randomness and of the file's content.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Run on the IPv6 loopback (::1) instead of 127.0.0.1.
    #[arg(short = '6', long)]
    ipv6: bool,
    /// Print the client's JSON report instead of the summary.
    #[arg(long)]
    json: bool,
    /// Log more (-v: this tool's events, -vv: the transport's too).
    #[arg(short, long, action = clap::ArgAction::Count)]
    verbose: u8,
}

fn main() -> ExitCode {
    let args = Args::parse();
    common::run_tool("sift-demo", || run(args))
}

/// A directory removed when the demo ends, however it ends.
struct ScratchDir(PathBuf);

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn run(args: Args) -> anyhow::Result<()> {
    common::init_logging(args.verbose);
    let link =
        LinkConfig::from_netem(&args.link).with_context(|| format!("--link {:?}", args.link))?;
    link.validate()
        .with_context(|| format!("--link {:?}", args.link))?;

    let scratch =
        ScratchDir(std::env::temp_dir().join(format!("sift-demo-{}", std::process::id())));
    let served = scratch.0.join("served");
    let downloads = scratch.0.join("downloads");
    std::fs::create_dir_all(&served).context("creating the demo's directories")?;
    std::fs::create_dir_all(&downloads).context("creating the demo's directories")?;
    write_generated_file(&served.join("demo.bin"), args.size, args.seed)?;

    let cc_name = args.cc.name();
    let config = common::transport_config(Protection::Tls, args.cc, args.corruption_notices);
    let identity =
        ServerIdentity::self_signed(&["localhost"]).context("making the server's certificate")?;
    let trust = ClientTrust::pinned(identity.fingerprint());
    let server_config = sift::Config {
        tls: TlsConfig::server(identity),
        ..config.clone()
    };
    let loopback: IpAddr = if args.ipv6 {
        if !sift::io::ipv6_loopback_available() {
            anyhow::bail!("--ipv6: this host has no IPv6 loopback (::1)");
        }
        Ipv6Addr::LOCALHOST.into()
    } else {
        Ipv4Addr::LOCALHOST.into()
    };
    let files = FileServer::new(Root::new(&served)?);
    let server_lines: server_loop::LineSink = Arc::new(|line: &str| {
        tracing::info!("server: {line}");
    });
    let service = Service::new(
        files,
        server_loop::DEFAULT_MAX_STREAMS_PER_CLIENT,
        server_loop::DEFAULT_MAX_STREAMS,
    );
    let server_addr = server_loop::spawn_server(
        SocketAddr::new(loopback, 0),
        server_config,
        service,
        server_lines,
    )
    .context("starting the server")?;

    let relay = Relay::start(server_addr, link.clone(), link.clone(), args.seed)
        .context("starting the emulated link")?;
    let relay_addr = relay.listen_addr();

    if !args.json {
        println!(
            "sift demo: {} through \"{}\" each way on {loopback}; TLS 1.3, cc {cc_name}, corruption notices {}",
            sift_bin::cli::format::bytes(args.size),
            link.to_netem(),
            if args.corruption_notices.enabled() {
                "on"
            } else {
                "off"
            },
        );
    }
    let url = SiftUrl {
        scheme: Default::default(),
        host: relay_addr.ip().to_string(),
        port: relay_addr.port(),
        path: "demo.bin".into(),
    };
    let connection = session::connect(&url, config, &trust, None)?;
    let report = session::download(
        &connection,
        "demo.bin",
        &downloads.join("demo.bin"),
        false,
        None,
        args.json,
        Reads::InPlace,
    );
    connection.close(CLOSE_DONE, "done");
    let report = report?;
    let counters = relay.stop().context("stopping the emulated link")?;
    let mut stdout = std::io::stdout();
    if args.json {
        let value = serde_json::json!({ "flow": report, "link": { "forward": counters[0], "reverse": counters[1] } });
        writeln!(stdout, "{value}")?;
    } else {
        write!(stdout, "{}", report.summary())?;
        writeln!(
            stdout,
            "  link         server→client: {} datagrams, {} lost, {} queue drops, {} corrupted ({} in the payload); client→server: {} datagrams, {} lost, {} corrupted",
            counters[1].offered,
            counters[1].random_losses,
            counters[1].queue_drops,
            counters[1].corrupted,
            counters[1].corrupted_payload,
            counters[0].offered,
            counters[0].random_losses,
            counters[0].corrupted,
        )?;
        writeln!(stdout, "SHA-256 verified end to end.")?;
    }
    Ok(())
}

/// Writes `size` seeded pseudo-random bytes.
fn write_generated_file(path: &Path, size: u64, seed: u64) -> anyhow::Result<()> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut file = std::io::BufWriter::new(
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
    );
    let mut chunk = vec![0u8; 64 * 1024];
    let mut left = size;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        rng.fill_bytes(&mut chunk[..n]);
        file.write_all(&chunk[..n])?;
        left -= n as u64;
    }
    file.flush()
        .with_context(|| format!("writing {}", path.display()))
}
