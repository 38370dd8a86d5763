//! Load for measuring a server: N clients at once, each its own
//! connection downloading one file, every byte checked against a local
//! copy. Prints the wall time from the first connection attempt to the
//! last verified byte, and when the last connection came up. See
//! `benches/many_downloads.sh`.
//!
//! Connections come up `--handshakes-at-once` at a time (keeping alive
//! while they wait), then every download starts together: the server holds
//! all N at once, and the generator's own handshake work does not run out
//! its connect waits.
//!
//! It speaks sift's file protocol to a `sift-server`, or with `--hq`
//! hq-interop (HTTP/0.9 over QUIC v1) to any hq-interop server: the same
//! load against `sift-server` and against quinn's or quiche's, so that
//! only the server differs.
//!
//! ```text
//! many_gets --server 127.0.0.1:4433 --pin SHA256:… --path f.bin --expect root/f.bin --clients 1000
//! many_gets --hq --server 127.0.0.1:4433 --pin SHA256:… --path f.bin --expect root/f.bin
//! ```

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context};
use clap::Parser;
use sift::conn::Protection;
use sift::crypto::{Fingerprint, ServerTrust, TlsConfig};
use sift::tokio::{Endpoint, EndpointConfig};
use sift::wire::QUIC_V1;
use sift_bin::cli::common::{transport_config, OnOff};
use sift_bin::transfer::digest::{sha256, Sha256Hasher};
use sift_bin::transfer::frame::{read_frame, read_frame_async};
use sift_bin::transfer::hq;
use sift_bin::transfer::{parse_response, parse_trailer, Request, SenderReport, Status};
use sift_cc::CcConfig;

/// Download one file N times at once from a sift-server and check every byte.
#[derive(Parser, Debug)]
struct Args {
    /// The server's address.
    #[arg(long)]
    server: SocketAddr,
    /// The server's certificate fingerprint (TLS); without it, Null
    /// protection (the server needs --insecure-null-crypto).
    #[arg(long)]
    pin: Option<Fingerprint>,
    /// The file to download, under the server's root.
    #[arg(long)]
    path: String,
    /// A local copy of the file, to check the bytes against.
    #[arg(long)]
    expect: PathBuf,
    /// Downloads at once, each on a connection of its own.
    #[arg(long, default_value_t = 100)]
    clients: usize,
    /// Client UDP sockets the connections are spread over.
    #[arg(long, default_value_t = 8)]
    sockets: usize,
    /// Speak hq-interop (`GET /path`, the file to the stream's end) in
    /// QUIC version 1, as any hq-interop server understands; needs --pin.
    #[arg(long, requires = "pin")]
    hq: bool,
    /// Handshakes in flight at once; the rest wait their turn. Ten
    /// thousand at once on two cores shared with the server made thousands
    /// of this generator's own 10 s connect waits run out (2 224 of 10 000
    /// against sift-server, whatever the server), which measured the
    /// machine's TLS throughput, not the server's downloads.
    #[arg(long, default_value_t = 64)]
    handshakes_at_once: usize,
    /// Start each download as soon as its connection is up, rather than
    /// all together once every connection is.
    #[arg(long)]
    no_barrier: bool,
}

/// How often a connection that waits for the others to come up makes its
/// server answer, so that neither side's 30 s idle timeout ends it.
const KEEP_ALIVE: std::time::Duration = std::time::Duration::from_secs(5);

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let expected = std::fs::read(&args.expect).context("reading --expect")?;
    let (size, digest) = (expected.len() as u64, sha256(&expected));
    let mut config = transport_config(Protection::Null, CcConfig::default(), OnOff::On);
    if let Some(pin) = args.pin {
        config.protection = Protection::Tls;
        config.tls = TlsConfig::client(ServerTrust::Pinned(vec![pin]));
    }
    if !args.no_barrier {
        config.keep_alive_interval = Some(KEEP_ALIVE);
    }
    if args.hq {
        config.tls.alpn_protocols = vec![hq::ALPN.to_vec()];
        config.versions = vec![QUIC_V1];
    }
    let any: SocketAddr = if args.server.is_ipv6() {
        "[::]:0".parse()?
    } else {
        "0.0.0.0:0".parse()?
    };
    let sockets = args.sockets.max(1);
    let endpoints = (0..sockets)
        .map(|_| Endpoint::bind(any, client_endpoint(&config, args.clients, sockets)))
        .collect::<Result<Vec<_>, _>>()?;
    let request = Arc::new(if args.hq {
        hq::encode_request(&args.path)
    } else {
        Request::Get {
            path: args.path.clone(),
            offset: 0,
            cc: None,
        }
        .encode()?
    });
    let started = Instant::now();
    let handshakes = Arc::new(tokio::sync::Semaphore::new(args.handshakes_at_once.max(1)));
    // Every download starts once every connection is up (or failed): the
    // server then holds all of them at once.
    let barrier = Arc::new(tokio::sync::Barrier::new(if args.no_barrier {
        1
    } else {
        args.clients
    }));
    let handshakes_done = Arc::new(std::sync::Mutex::new(None));
    let mut downloads = tokio::task::JoinSet::new();
    for index in 0..args.clients {
        let endpoint = endpoints[index % endpoints.len()].clone();
        let (server, request, hq) = (args.server, Arc::clone(&request), args.hq);
        let (handshakes, barrier) = (Arc::clone(&handshakes), Arc::clone(&barrier));
        let handshakes_done = Arc::clone(&handshakes_done);
        downloads.spawn(async move {
            let name = if hq { "localhost" } else { "" };
            let permit = handshakes.acquire_owned().await?;
            let connected = endpoint.connect(server, name).await;
            drop(permit);
            if barrier.wait().await.is_leader() {
                *handshakes_done.lock().unwrap() = Some(started.elapsed());
            }
            let connection = connected?;
            let (mut send, mut recv) = connection.open_bi().await?;
            send.write_all(&request).await?;
            send.finish()?;
            if !hq {
                let response = parse_response(&read_frame_async(&mut recv).await?)?;
                if response.status != Status::Ok || response.size != size {
                    bail!("answered {:?} for {size} bytes", response);
                }
            }
            // hq-interop has no header: the file is the stream, to its end.
            let mut hasher = Sha256Hasher::new();
            let mut buf = vec![0u8; 64 * 1024];
            let mut left = size;
            while left > 0 {
                let want = left.min(buf.len() as u64) as usize;
                let Some(n) = recv.read(&mut buf[..want]).await? else {
                    bail!("the stream ended {left} bytes short");
                };
                hasher.update(&buf[..n]);
                left -= n as u64;
            }
            // sift: the digest frame (if the response had none) and the
            // trailer; hq: nothing more, or the file was longer.
            let rest = recv.read_to_end(64 * 1024).await?;
            if hq && !rest.is_empty() {
                bail!("the stream went on past {size} bytes");
            }
            connection.close(0, "done");
            Ok((hasher.finish(), trailer(&rest)))
        });
    }
    let (mut exact, mut failed) = (0, 0);
    let mut senders = SenderTotals::default();
    while let Some(done) = downloads.join_next().await {
        match done? {
            Ok((got, report)) if got == digest => {
                exact += 1;
                senders.add(report.as_ref());
            }
            Ok(_) => {
                failed += 1;
                eprintln!("many_gets: a download's bytes differ");
            }
            Err(e) => {
                failed += 1;
                eprintln!("many_gets: {e:#}");
            }
        }
    }
    let wall = started.elapsed();
    for endpoint in &endpoints {
        endpoint.wait_idle().await;
    }
    let handshakes = handshakes_done
        .lock()
        .unwrap()
        .map_or(0.0, |at| at.as_secs_f64());
    println!(
        "clients={} bytes_each={size} byte_exact={exact} failed={failed} wall={:.2}s handshakes_done={handshakes:.2}s{}",
        args.clients,
        wall.as_secs_f64(),
        senders.fields()
    );
    if failed > 0 {
        bail!("{failed} of {} downloads failed", args.clients);
    }
    Ok(())
}

/// A client endpoint that holds its share of `clients` over `sockets`.
/// The default limit (`DEFAULT_MAX_CONNECTIONS`, 1024 per endpoint) capped
/// the load at 8 × 1024 connections: at 10 000 clients 1 773 downloads
/// failed here with "the endpoint already holds 1024 connections",
/// measuring the load generator instead of the server.
fn client_endpoint(config: &sift::Config, clients: usize, sockets: usize) -> EndpointConfig {
    let mut endpoint = EndpointConfig::client(config.clone());
    endpoint.max_connections = endpoint.max_connections.max(clients.div_ceil(sockets));
    endpoint
}

/// The server's trailer among the frames after a sift download's data
/// (the digest frame, when the response had none, comes first).
fn trailer(mut rest: &[u8]) -> Option<SenderReport> {
    while !rest.is_empty() {
        let frame = read_frame(&mut rest).ok()?;
        if let Ok(report) = parse_trailer(&frame) {
            return Some(report);
        }
    }
    None
}

/// The servers' counters summed over the downloads that sent a trailer
/// (sift's file protocol only): why a run cost what it did. The
/// checksum-free counts are what the connections asked for; to a loopback
/// client the datapath sends those datagrams with a checksum all the same
/// (`sift::io` datapath), and a server older than the field reports 0.
#[derive(Default)]
struct SenderTotals {
    reports: u64,
    with_retransmissions: u64,
    retransmitted_packets: u64,
    ptos: u64,
    pmtu_probes_lost: u64,
    with_checksum_free: u64,
    checksum_free_datagrams: u64,
}

impl SenderTotals {
    fn add(&mut self, report: Option<&SenderReport>) {
        let Some(report) = report else {
            return;
        };
        self.reports += 1;
        self.with_retransmissions += u64::from(report.retransmitted_packets > 0);
        self.retransmitted_packets += report.retransmitted_packets;
        self.ptos += report.ptos;
        self.pmtu_probes_lost += report.pmtu_probes_lost;
        self.with_checksum_free += u64::from(report.checksum_free_datagrams > 0);
        self.checksum_free_datagrams += report.checksum_free_datagrams;
    }

    /// ` key=value` fields for the result line; none without trailers.
    fn fields(&self) -> String {
        if self.reports == 0 {
            return String::new();
        }
        format!(
            " trailers={} senders_retransmitting={} retransmitted={} ptos={} pmtu_probes_lost={} senders_asking_checksum_free={} checksum_free_asked={}",
            self.reports,
            self.with_retransmissions,
            self.retransmitted_packets,
            self.ptos,
            self.pmtu_probes_lost,
            self.with_checksum_free,
            self.checksum_free_datagrams
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_endpoints_hold_their_share_of_the_load() {
        let config = sift::Config::default();
        // 10 000 clients over 8 sockets: 1 250 each, above the default 1 024.
        assert_eq!(client_endpoint(&config, 10_000, 8).max_connections, 1_250);
        // Fewer keep the default.
        assert_eq!(
            client_endpoint(&config, 100, 8).max_connections,
            sift::endpoint::DEFAULT_MAX_CONNECTIONS
        );
    }
}
