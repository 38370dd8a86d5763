//! What the loopback benchmarks share: process CPU time, one run's
//! figures, medians, and a blocking-API transfer.

use std::io::{Read, Write};
use std::thread;
use std::time::Instant;

use sift::blocking::{self, Listener};
use sift::conn::Protection;
use sift::{Config, Stats};

/// CPU seconds of the whole process (every thread, user and system).
pub fn cpu_seconds() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a whole rusage into the zeroed buffer.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

/// One transfer's figures.
#[derive(Clone, Copy, Debug)]
pub struct Run {
    pub bytes: u64,
    pub seconds: f64,
    pub cpu_seconds: f64,
}

impl Run {
    pub fn gbit_per_s(&self) -> f64 {
        self.bytes as f64 * 8.0 / self.seconds / 1e9
    }

    pub fn cpu_per_gb(&self) -> f64 {
        self.cpu_seconds / (self.bytes as f64 / 1e9)
    }
}

/// The median of `key` over `runs` (0 for no runs).
pub fn median(runs: &[Run], key: impl Fn(&Run) -> f64) -> f64 {
    let mut values: Vec<f64> = runs.iter().map(key).collect();
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// One line of the sender's connection counters.
pub fn print_stats(stats: &Stats) {
    println!(
        "    sift: {} packets, {} lost, {} retransmitted, srtt {} µs, cwnd {} B",
        stats.packets_sent,
        stats.packets_lost,
        stats.retransmitted_packets,
        stats.srtt_us,
        stats.cwnd
    );
}

/// `bytes` from a client to a server on loopback through the blocking API,
/// on one stream; the server answers one byte after the end. Timed from
/// opening the stream to that answer. Without notices UDP checksums stay
/// on and the driver batches with GSO/GRO; with them checksums are off
/// and every datagram is its own system call. Under TLS both ends share
/// one self-signed identity.
pub fn blocking_run(
    bytes: u64,
    protection: Protection,
    corruption_notices: bool,
) -> Result<Run, String> {
    let config = Config {
        protection,
        corruption_notices,
        tls: sift::crypto::tls::process_loopback_config(),
        ..Config::default()
    };
    let listener = Listener::bind("127.0.0.1:0".parse().unwrap(), config.clone())
        .map_err(|e| e.to_string())?;
    let server = listener.local_addr();
    let sink = thread::spawn(move || -> Result<u64, String> {
        let connection = listener.accept().map_err(|e| e.to_string())?;
        let mut stream = connection.accept_bi().map_err(|e| e.to_string())?;
        let mut buf = vec![0u8; 256 * 1024];
        let mut total = 0u64;
        loop {
            let n = stream.read(&mut buf).map_err(|e| e.to_string())?;
            if n == 0 {
                break;
            }
            total += n as u64;
        }
        stream.write_all(b"k").map_err(|e| e.to_string())?;
        stream.finish().map_err(|e| e.to_string())?;
        let _ = connection.accept_bi(); // until the client closes
        Ok(total)
    });

    let connection = blocking::connect(server, config).map_err(|e| e.to_string())?;
    let cpu_before = cpu_seconds();
    let started = Instant::now();
    let mut stream = connection.open_bi().map_err(|e| e.to_string())?;
    let chunk = vec![0x5au8; 256 * 1024];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        stream.write_all(&chunk[..n]).map_err(|e| e.to_string())?;
        left -= n as u64;
    }
    stream.finish().map_err(|e| e.to_string())?;
    let mut ack = Vec::new();
    stream.read_to_end(&mut ack).map_err(|e| e.to_string())?;
    let seconds = started.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu_before;
    let stats = connection.stats();
    connection.close(0, "done");
    let received = sink.join().map_err(|_| "sink panicked".to_string())??;
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
