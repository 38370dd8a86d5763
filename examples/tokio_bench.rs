//! Loopback throughput of sift's async API (`sift::tokio`) against the
//! blocking API, side by side in one process: the same transfer, the same
//! configuration, runs alternating so that both see the same machine.
//!
//! ```text
//! cargo run --release --example tokio_bench            # 1 GiB, 3 runs each
//! cargo run --release --example tokio_bench -- 256 5   # 256 MiB, 5 runs each
//! ```
//!
//! Each transfer sends the bytes on one stream from a client to a server
//! endpoint on 127.0.0.1 (Null protection) and is timed from opening the
//! stream to the server's one-byte answer after the end. The async runs
//! use a multi-threaded tokio runtime with two workers (this machine's
//! cores); the blocking API has a driver thread per endpoint. Prints each
//! run, the medians and the ratio async / blocking, with notices off
//! (checksums on, GSO/GRO) and on (checksums off, mmsg batching).
//!
//! For many connections at once, see `tokio_echo` (`bench` mode).

#[path = "support/bench.rs"]
mod bench;

use std::time::Instant;

use bench::{blocking_run, cpu_seconds, median, print_stats, Run};
use sift::conn::Protection;
use sift::tokio::Endpoint;
use sift::Config;
use tokio::io::AsyncWriteExt;

const MIB: u64 = 1 << 20;

/// The async twin of `bench::blocking_run`.
async fn async_run(bytes: u64, corruption_notices: bool) -> Result<Run, String> {
    let config = Config {
        corruption_notices,
        // TLS, the default protection, with one identity both ends trust.
        tls: sift::crypto::tls::process_loopback_config(),
        ..Config::default()
    };
    let localhost = "127.0.0.1:0".parse().unwrap();
    let server = Endpoint::server(localhost, config.clone()).map_err(|e| e.to_string())?;
    let address = server.local_addr();
    let sink = tokio::spawn(async move {
        let connection = server.accept().await.ok_or("no client")?;
        let (mut send, mut recv) = connection.accept_bi().await.map_err(|e| e.to_string())?;
        let mut buf = vec![0u8; 256 * 1024];
        let mut total = 0u64;
        while let Some(n) = recv.read(&mut buf).await.map_err(|e| e.to_string())? {
            total += n as u64;
        }
        send.write_all(b"k").await.map_err(|e| e.to_string())?;
        send.finish().map_err(|e| e.to_string())?;
        connection.closed().await; // until the client closes
        Ok::<u64, String>(total)
    });

    let client = Endpoint::client(localhost, config).map_err(|e| e.to_string())?;
    let connection = client
        .connect(address, "localhost")
        .await
        .map_err(|e| e.to_string())?;
    let cpu_before = cpu_seconds();
    let started = Instant::now();
    let (mut send, mut recv) = connection.open_bi().await.map_err(|e| e.to_string())?;
    let chunk = vec![0x5au8; 256 * 1024];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        send.write_all(&chunk[..n])
            .await
            .map_err(|e| e.to_string())?;
        left -= n as u64;
    }
    send.shutdown().await.map_err(|e| e.to_string())?;
    let ack = recv.read_to_end(1).await.map_err(|e| e.to_string())?;
    let seconds = started.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu_before;
    let stats = connection.stats();
    connection.close(0, "done");
    client.wait_idle().await;
    let received = sink.await.map_err(|e| e.to_string())??;
    if received != bytes || ack != b"k" {
        return Err(format!("sink read {received} of {bytes} bytes"));
    }
    print_stats(&stats);
    Ok(Run {
        bytes,
        seconds,
        cpu_seconds: cpu,
    })
}

fn print_run(api: &str, notices: bool, run: usize, result: &Run) {
    println!(
        "  {api:<8} notices {:<3} run {run}: {:.2} s, {:.2} Gbit/s, {:.2} CPU s/GB",
        if notices { "on" } else { "off" },
        result.seconds,
        result.gbit_per_s(),
        result.cpu_per_gb()
    );
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mib: u64 = args.first().and_then(|a| a.parse().ok()).unwrap_or(1024);
    let runs: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(3);
    let bytes = mib * MIB;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    println!("loopback, {mib} MiB per transfer, {runs} runs of each");

    let mut table = Vec::new();
    for notices in [false, true] {
        let (mut blocking, mut asynchronous) = (Vec::new(), Vec::new());
        for run in 1..=runs {
            let result = blocking_run(bytes, Protection::Tls, notices)?;
            print_run("blocking", notices, run, &result);
            blocking.push(result);
            let result = runtime.block_on(async_run(bytes, notices))?;
            print_run("async", notices, run, &result);
            asynchronous.push(result);
        }
        table.push((notices, blocking, asynchronous));
    }

    println!();
    println!("| notices | blocking Gbit/s | async Gbit/s | async / blocking | blocking CPU s/GB | async CPU s/GB |");
    println!("|---|---|---|---|---|---|");
    for (notices, blocking, asynchronous) in table {
        let (b, a) = (
            median(&blocking, Run::gbit_per_s),
            median(&asynchronous, Run::gbit_per_s),
        );
        println!(
            "| {} | {b:.2} | {a:.2} | {:.2} | {:.2} | {:.2} |",
            if notices { "on" } else { "off" },
            a / b,
            median(&blocking, Run::cpu_per_gb),
            median(&asynchronous, Run::cpu_per_gb),
        );
    }
    println!("(medians of {runs} runs; cargo run --release --example tokio_bench -- {mib} {runs})");
    Ok(())
}
