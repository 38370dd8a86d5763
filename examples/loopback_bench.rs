//! Loopback throughput of sift under TLS 1.3 and under Null protection,
//! side by side, against the ceiling of plain UDP on the same host, with
//! CPU cost per gigabyte and the TLS/Null throughput ratio.
//!
//! ```text
//! cargo run --release --example loopback_bench            # 1 GiB, 3 runs
//! cargo run --release --example loopback_bench -- 256 5   # 256 MiB, 5 runs
//! cargo run --release --example loopback_bench -- 1024 1 tls off   # one configuration
//! ```
//!
//! With a protection (`null` or `tls`) and a notices setting (`off` or
//! `on`) only that configuration runs, without the raw UDP yardstick: for
//! timing two configurations against each other as whole processes.
//!
//! Runs alternate between protections (Null, TLS, Null, TLS, …) so that
//! a noisy neighbour hurts both alike. Prints each run and the medians. CPU seconds come from `getrusage` for
//! the whole process, so they count both ends (sender and receiver) and
//! every thread, as two programs on one host would.

#[path = "support/bench.rs"]
mod bench;

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use bench::{blocking_run, cpu_seconds, median, Run};
use sift::conn::Protection;

const MIB: u64 = 1 << 20;
/// The payload size of the raw UDP blaster: sift's default datagram size.
const RAW_DATAGRAM: usize = 1350;

/// Plain UDP: one thread blasts `bytes` in 1350-byte datagrams with one
/// `sendto` each, another receives with one `recv` each. The receiver's
/// rate (first to last data datagram) is the figure; the kernel drops what
/// the receiver cannot keep up with. One-byte datagrams mark the end.
fn raw_udp_run(bytes: u64) -> Result<Run, String> {
    let sink = UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    // Only a safety net: the end markers stop the receiver.
    sink.set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    let sink_addr: SocketAddr = sink.local_addr().map_err(|e| e.to_string())?;
    let finished = Arc::new(AtomicBool::new(false));
    let receiver_finished = Arc::clone(&finished);
    let cpu_before = cpu_seconds();
    let receiver = thread::spawn(move || {
        let mut buf = vec![0u8; 65_536];
        let mut received = 0u64;
        let mut first = None;
        let mut last = Instant::now();
        while let Ok(n) = sink.recv(&mut buf) {
            if n == 1 {
                break;
            }
            let now = Instant::now();
            first.get_or_insert(now);
            last = now;
            received += n as u64;
        }
        receiver_finished.store(true, Ordering::Release);
        let seconds = first.map_or(0.0, |f| last.duration_since(f).as_secs_f64());
        (received, seconds)
    });
    let blaster = UdpSocket::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let datagram = vec![0xa5u8; RAW_DATAGRAM];
    let mut sent = 0u64;
    while sent < bytes {
        if blaster.send_to(&datagram, sink_addr).is_ok() {
            sent += RAW_DATAGRAM as u64;
        }
    }
    // The receiver may have dropped a marker too: repeat until it stops.
    for _ in 0..1_000_000 {
        if finished.load(Ordering::Acquire) {
            break;
        }
        let _ = blaster.send_to(&[0], sink_addr);
        thread::yield_now();
    }
    let (received, seconds) = receiver
        .join()
        .map_err(|_| "receiver panicked".to_string())?;
    let cpu = cpu_seconds() - cpu_before;
    Ok(Run {
        bytes: received,
        seconds: seconds.max(1e-9),
        cpu_seconds: cpu,
    })
}

fn report(name: &str, runs: Vec<Run>) {
    println!(
        "{name}: median {:.2} Gbit/s, {:.2} CPU s/GB over {} runs",
        median(&runs, Run::gbit_per_s),
        median(&runs, Run::cpu_per_gb),
        runs.len()
    );
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mib: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(1024);
    let runs: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(3);
    let bytes = mib * MIB;
    let only_protection = match args.get(2).map(String::as_str) {
        None => None,
        Some("null") => Some(Protection::Null),
        Some("tls") => Some(Protection::Tls),
        Some(other) => return Err(format!("protection must be null or tls, not {other:?}")),
    };
    let only_notices = match args.get(3).map(String::as_str) {
        None => None,
        Some("off") => Some(false),
        Some("on") => Some(true),
        Some(other) => return Err(format!("notices must be off or on, not {other:?}")),
    };
    println!("loopback, {mib} MiB per run, {runs} runs");

    let protections: Vec<Protection> = [Protection::Null, Protection::Tls]
        .into_iter()
        .filter(|p| only_protection.is_none_or(|only| only == *p))
        .collect();
    let notice_settings: Vec<bool> = [false, true]
        .into_iter()
        .filter(|n| only_notices.is_none_or(|only| only == *n))
        .collect();
    let mut sift_runs: Vec<(bool, Protection, Vec<Run>)> = Vec::new();
    for notices in notice_settings.iter().copied() {
        let mut by_protection = vec![Vec::new(); protections.len()];
        for run in 1..=runs {
            for (index, protection) in protections.iter().copied().enumerate() {
                let result = blocking_run(bytes, protection, notices)?;
                println!(
                    "  sift ({}, notices {}) run {run}: {:.2} s, {:.2} Gbit/s, {:.2} CPU s/GB",
                    protection.describe(),
                    if notices { "on" } else { "off" },
                    result.seconds,
                    result.gbit_per_s(),
                    result.cpu_per_gb()
                );
                by_protection[index].push(result);
            }
        }
        for (protection, runs) in protections.iter().copied().zip(by_protection) {
            sift_runs.push((notices, protection, runs));
        }
    }
    if only_protection.is_some() || only_notices.is_some() {
        for (notices, protection, runs) in &sift_runs {
            let notices = if *notices { "on" } else { "off" };
            report(
                &format!("sift, {}, notices {notices}", protection.describe()),
                runs.clone(),
            );
        }
        return Ok(());
    }
    let mut raw_runs = Vec::new();
    for run in 1..=runs {
        let result = raw_udp_run(bytes)?;
        println!(
            "  raw UDP run {run}: {:.2} s, {:.2} Gbit/s received ({} of {bytes} bytes), {:.2} CPU s/GB",
            result.seconds,
            result.gbit_per_s(),
            result.bytes,
            result.cpu_per_gb()
        );
        raw_runs.push(result);
    }
    for (notices, protection, runs) in &sift_runs {
        let path = if *notices {
            "notices on (checksums off, no GSO)"
        } else {
            "notices off (checksums on, GSO/GRO)"
        };
        report(
            &format!("sift, {}, {path}", protection.describe()),
            runs.clone(),
        );
    }
    report("raw UDP, one sendto/recv per 1350-byte datagram", raw_runs);
    for notices in notice_settings {
        let median_of = |wanted: Protection| {
            sift_runs
                .iter()
                .find(|(n, p, _)| *n == notices && *p == wanted)
                .map_or(0.0, |(_, _, runs)| median(runs, Run::gbit_per_s))
        };
        println!(
            "TLS/Null throughput ratio, notices {}: {:.2}",
            if notices { "on" } else { "off" },
            median_of(Protection::Tls) / median_of(Protection::Null).max(1e-9)
        );
    }
    Ok(())
}
