//! Several downloads over one connection, one stream each, at once:
//! `sift-client get URL URL…`, and every `https://` (hq-interop) fetch.
//!
//! Each URL is a task for a small pool of threads that open a stream,
//! download, and take the next; the transport multiplexes the streams
//! (and the server's stream limit paces how many run at once). One file's
//! failure is its own: the others complete, and the report lists both.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Serialize;
use sift::blocking::{BlockingConnection, SiftStream};

use super::format;
use super::report;
use super::session;
use super::stream::Reads;
use super::url::{Scheme, SiftUrl};
use crate::transfer::hq;

/// Streams a fetch keeps open at once.
pub const MAX_PARALLEL: usize = 32;

/// One file to fetch.
#[derive(Clone, Debug)]
pub struct Fetch {
    pub url: SiftUrl,
    /// Where it goes.
    pub dest: PathBuf,
}

/// A file fetched whole.
#[derive(Clone, Debug, Serialize)]
pub struct FetchedFile {
    pub url: String,
    pub local_path: String,
    pub bytes: u64,
    pub sha256: String,
    /// Seconds from opening its stream to its last byte.
    pub completion_s: f64,
}

/// A file that could not be fetched, and why (one line).
#[derive(Clone, Debug, Serialize)]
pub struct FailedFile {
    pub url: String,
    pub error: String,
}

/// What `sift-client get` prints for a fetch: the connection's facts,
/// then each file. Counters are this client's (with hq-interop there is no
/// trailer carrying the server's).
#[derive(Clone, Debug, Serialize)]
pub struct FetchReport {
    /// The application protocol (ALPN): "hq-interop" or "sift/1".
    pub protocol: String,
    /// The version the connection ran: "sift/1" or "QUIC v1".
    pub version: String,
    /// The TLS cipher: aes128, aes256 or chacha20 (empty under Null).
    pub cipher: String,
    /// 1-RTT key updates, initiated by either side.
    pub key_updates: u64,
    /// The client moved to a new local address after the handshake.
    pub migrated: bool,
    /// The client moved to the server's preferred address (RFC 9000
    /// §9.6) and ended there.
    pub on_preferred_address: bool,
    /// Payload bytes of the files fetched whole.
    pub bytes: u64,
    /// Seconds from the first request to the last file's end.
    pub completion_s: f64,
    /// `bytes`·8 / `completion_s`.
    pub goodput_bps: f64,
    pub srtt_us: u64,
    /// Packets this client sent again (acknowledgements and requests).
    pub retransmitted_packets: u64,
    /// The connection resumed a TLS session.
    pub tls_resumed: bool,
    /// What became of the requests sent in 0-RTT: "accepted", "rejected"
    /// or "none".
    pub zero_rtt: &'static str,
    /// Request bytes sent in 0-RTT packets.
    pub zero_rtt_bytes: u64,
    /// This client's ECN (RFC 9000 §13.4): the validation state of the
    /// marks it sends, its packets sent and received per codepoint, and
    /// the server's counts of its packets.
    pub ecn: sift::conn::ecn::EcnStats,
    /// This client's erasure coding: `negotiated`, the `symbols_received`
    /// from the server and the `packets_rebuilt` from them (and any it
    /// sent).
    pub repair: sift::conn::fec::RepairStats,
    pub files: Vec<FetchedFile>,
    pub failed: Vec<FailedFile>,
}

impl FetchReport {
    /// The summary for a person: one line for the whole, one per file.
    pub fn summary(&self) -> String {
        let cipher = if self.cipher.is_empty() {
            String::new()
        } else {
            format!(", {}", self.cipher)
        };
        let mut out = format!(
            "fetched {} of {} files, {} in {:.2} s ({}) over {} ({}{cipher}{}{})\n",
            self.files.len(),
            self.files.len() + self.failed.len(),
            format::bytes(self.bytes),
            self.completion_s,
            format::rate(self.goodput_bps),
            self.version,
            self.protocol,
            if self.migrated { ", migrated" } else { "" },
            if self.on_preferred_address {
                ", on the server's preferred address"
            } else {
                ""
            },
        );
        if self.tls_resumed || self.zero_rtt != "none" {
            out.push_str(&format!(
                "  resumed a TLS session, 0-RTT {} ({} bytes early)\n",
                self.zero_rtt, self.zero_rtt_bytes
            ));
        }
        out.push_str(&format!(
            "  ecn {}\n",
            report::ecn_summary(&self.ecn).replace("(sender)", "(this client's)")
        ));
        if self.repair.symbols_received > 0 {
            out.push_str(&format!(
                "  repair: {} packets rebuilt from {} symbols\n",
                self.repair.packets_rebuilt, self.repair.symbols_received
            ));
        }
        for file in &self.files {
            out.push_str(&format!(
                "  {}  {}  {:.2} s  sha256 {}\n",
                file.local_path,
                format::bytes(file.bytes),
                file.completion_s,
                file.sha256
            ));
        }
        for file in &self.failed {
            out.push_str(&format!("  FAILED {}: {}\n", file.url, file.error));
        }
        out
    }
}

/// Fetches every file over `connection`, at most [`MAX_PARALLEL`] at once,
/// and reports. `migrated` says the caller moved the connection first.
pub fn fetch_all(
    connection: &BlockingConnection,
    fetches: &[Fetch],
    migrated: bool,
) -> FetchReport {
    let started = Instant::now();
    // The first requests leave from here, before any thread starts: on a
    // resumed connection they go in 0-RTT, beside the first flight, where a
    // thread pool's start-up let the handshake finish first on a fast path.
    let requested: Vec<Mutex<Option<Result<SiftStream, String>>>> = fetches
        .iter()
        .take(MAX_PARALLEL)
        .map(|fetch| Mutex::new(send_request(connection, fetch)))
        .collect();
    let next = AtomicUsize::new(0);
    let outcomes = Mutex::new(vec![None; fetches.len()]);
    // Side by side, each download copies its bytes out, to hash and write
    // them without holding the connection for the others.
    let reads = if fetches.len() > 1 {
        Reads::Copied
    } else {
        Reads::InPlace
    };
    std::thread::scope(|scope| {
        for _ in 0..fetches.len().clamp(1, MAX_PARALLEL) {
            scope.spawn(|| loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some(fetch) = fetches.get(index) else {
                    break;
                };
                let sent = requested
                    .get(index)
                    .and_then(|slot| slot.lock().ok()?.take());
                let outcome = fetch_one(connection, fetch, sent, reads);
                if let Ok(mut outcomes) = outcomes.lock() {
                    outcomes[index] = Some(outcome);
                }
            });
        }
    });
    let elapsed = started.elapsed();
    let mut files = Vec::new();
    let mut failed = Vec::new();
    let outcomes = outcomes.into_inner().unwrap_or_default();
    for (fetch, outcome) in fetches.iter().zip(outcomes) {
        match outcome {
            Some(Ok(file)) => files.push(file),
            Some(Err(error)) => failed.push(FailedFile {
                url: fetch.url.display(),
                error,
            }),
            None => failed.push(FailedFile {
                url: fetch.url.display(),
                error: "not fetched".into(),
            }),
        }
    }
    report(connection, files, failed, elapsed, migrated)
}

fn report(
    connection: &BlockingConnection,
    files: Vec<FetchedFile>,
    failed: Vec<FailedFile>,
    elapsed: Duration,
    migrated: bool,
) -> FetchReport {
    let stats = connection.stats();
    let bytes = files.iter().map(|f| f.bytes).sum();
    let completion_s = elapsed.as_secs_f64();
    FetchReport {
        protocol: connection.alpn_protocol().map_or_else(
            || "sift/1".to_string(),
            |alpn| String::from_utf8_lossy(&alpn).into_owned(),
        ),
        version: stats.version.clone(),
        cipher: stats.cipher.clone(),
        key_updates: stats.key_updates,
        migrated,
        on_preferred_address: stats.on_preferred_address,
        bytes,
        completion_s,
        goodput_bps: if completion_s > 0.0 {
            bytes as f64 * 8.0 / completion_s
        } else {
            0.0
        },
        srtt_us: stats.srtt_us,
        retransmitted_packets: stats.retransmitted_packets,
        tls_resumed: stats.resumed,
        zero_rtt: report::zero_rtt_fate(&stats),
        zero_rtt_bytes: stats.zero_rtt_bytes,
        ecn: stats.ecn,
        repair: stats.repair.clone(),
        files,
        failed,
    }
}

/// For an hq-interop fetch, a stream with its request sent; `None` for
/// sift:// (its request goes with the download).
fn send_request(
    connection: &BlockingConnection,
    fetch: &Fetch,
) -> Option<Result<SiftStream, String>> {
    (fetch.url.scheme == Scheme::Https).then(|| request_stream(connection, &fetch.url.path))
}

/// A new stream carrying the hq-interop request for `path`.
fn request_stream(connection: &BlockingConnection, path: &str) -> Result<SiftStream, String> {
    // An HTTP/0.9 GET is safe to replay: it may leave in 0-RTT.
    let mut stream = connection
        .open_bi_replay_safe()
        .map_err(|e| e.to_string())?;
    match hq::request(&mut stream, path) {
        // Rejected 0-RTT: reading the answer fails too, and sends again.
        Err(_) if stream.is_zero_rtt_rejected() => Ok(stream),
        Err(e) => Err(e.to_string()),
        Ok(()) => Ok(stream),
    }
}

/// One file over a stream of its own: `sent`, when its request went
/// already (see [`send_request`]).
fn fetch_one(
    connection: &BlockingConnection,
    fetch: &Fetch,
    sent: Option<Result<SiftStream, String>>,
    reads: Reads,
) -> Result<FetchedFile, String> {
    let started = Instant::now();
    let local_path = fetch.dest.display().to_string();
    let (bytes, sha256, finished) = match fetch.url.scheme {
        Scheme::Https => {
            let mut stream = sent.unwrap_or_else(|| request_stream(connection, &fetch.url.path))?;
            let (path, dest) = (&fetch.url.path, &fetch.dest);
            let get = |stream: &mut SiftStream| {
                reads.on(stream, |stream| {
                    hq::get_requested(stream, path, dest, &mut |_| {})
                })
            };
            let mut outcome = get(&mut stream);
            let redo = session::redo_after_rejected_zero_rtt(connection, &stream, hq::ALPN);
            if outcome.is_err() && redo.map_err(|e| e.to_string())? {
                stream = request_stream(connection, path)?;
                outcome = get(&mut stream);
            }
            let outcome = outcome.map_err(|e| e.to_string())?;
            (
                outcome.bytes,
                outcome.sha256.to_string(),
                outcome.finished_at,
            )
        }
        Scheme::Sift => {
            let report = session::download(
                connection,
                &fetch.url.path,
                &fetch.dest,
                false,
                None,
                true,
                reads,
            )
            .map_err(|e| format!("{e:#}"))?;
            (report.bytes, report.sha256, Instant::now())
        }
    };
    Ok(FetchedFile {
        url: fetch.url.display(),
        local_path,
        bytes,
        sha256,
        completion_s: finished.saturating_duration_since(started).as_secs_f64(),
    })
}
