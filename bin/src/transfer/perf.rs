//! The client side of PERF, the iperf3-style meter: send (or receive) for a
//! fixed time over one stream and report each interval and the total.

use std::io;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::buffers::CHUNK_LEN;
use super::buffers::DOWNLOAD_READ_LEN;
use super::client::{read_ok_response, send_request, ClientError};
use super::duplex::Duplex;
use super::request::{PerfDirection, PerfLimit, Request};

/// What to measure.
#[derive(Clone, Copy, Debug)]
pub struct PerfOptions {
    pub direction: PerfDirection,
    /// How long the sender sends.
    pub duration: Duration,
    /// How often to report (zero: only the summary).
    pub interval: Duration,
}

/// The connection counters a report needs, sampled from `sift::Stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PerfSample {
    pub retransmitted_packets: u64,
    pub cwnd: u64,
    pub srtt_us: u64,
}

impl PerfSample {
    /// The sample from a connection's statistics.
    pub fn from_stats(stats: &sift::Stats) -> Self {
        Self {
            retransmitted_packets: stats.retransmitted_packets,
            cwnd: stats.cwnd,
            srtt_us: stats.srtt_us,
        }
    }
}

/// One interval's numbers (one NDJSON line with `-J`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PerfInterval {
    /// Always "interval", so NDJSON readers can tell lines apart.
    pub event: &'static str,
    pub start_s: f64,
    pub end_s: f64,
    pub bytes: u64,
    pub bits_per_second: f64,
    /// Packets retransmitted by this end during the interval.
    pub retransmits: Option<u64>,
    /// Congestion window at the interval's end, bytes.
    pub cwnd: Option<u64>,
}

/// The whole measurement (the last NDJSON line with `-J`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PerfSummary {
    /// Always "summary".
    pub event: &'static str,
    /// "upload" (client sends) or "download" (server sends).
    pub direction: &'static str,
    pub seconds: f64,
    /// Bytes this client sent (upload) or received (download).
    pub bytes: u64,
    /// Bytes the receiving end counted: the server's count for an upload.
    pub bytes_received: u64,
    /// Receiver-side goodput: `bytes_received`·8 / `seconds`.
    pub bits_per_second: f64,
    /// Packets this end retransmitted in all.
    pub retransmits: Option<u64>,
    pub cwnd: Option<u64>,
    pub srtt_us: Option<u64>,
}

/// Turns a stream of byte counts into interval reports.
struct IntervalMeter<'a> {
    started: Instant,
    interval: Duration,
    /// How long the measurement runs: an interval that would end within a
    /// tenth of an interval of it runs on to the end instead, so that the
    /// last line is not a sliver ("2.00-2.00 sec 0 B"), as in iperf3.
    duration: Duration,
    interval_start: Duration,
    bytes_in_interval: u64,
    retransmits_at_start: Option<u64>,
    sample: &'a dyn Fn() -> Option<PerfSample>,
}

impl<'a> IntervalMeter<'a> {
    fn new(
        interval: Duration,
        duration: Duration,
        sample: &'a dyn Fn() -> Option<PerfSample>,
    ) -> Self {
        Self {
            started: Instant::now(),
            interval,
            duration,
            interval_start: Duration::ZERO,
            bytes_in_interval: 0,
            retransmits_at_start: sample().map(|s| s.retransmitted_packets),
            sample,
        }
    }

    /// Counts `bytes`, reporting every interval that has ended.
    fn add(&mut self, bytes: u64, report: &mut dyn FnMut(&PerfInterval)) {
        self.bytes_in_interval += bytes;
        if self.interval.is_zero() {
            return;
        }
        let elapsed = self.started.elapsed();
        let near_the_end = self.duration.saturating_sub(elapsed) < self.interval / 10;
        if elapsed >= self.interval_start + self.interval && !near_the_end {
            self.emit(elapsed, report);
        }
    }

    fn emit(&mut self, end: Duration, report: &mut dyn FnMut(&PerfInterval)) {
        let span = (end - self.interval_start).as_secs_f64();
        let sample = (self.sample)();
        let retransmits = match (sample, self.retransmits_at_start) {
            (Some(now), Some(then)) => Some(now.retransmitted_packets.saturating_sub(then)),
            _ => None,
        };
        report(&PerfInterval {
            event: "interval",
            start_s: self.interval_start.as_secs_f64(),
            end_s: end.as_secs_f64(),
            bytes: self.bytes_in_interval,
            bits_per_second: if span > 0.0 {
                self.bytes_in_interval as f64 * 8.0 / span
            } else {
                0.0
            },
            retransmits,
            cwnd: sample.map(|s| s.cwnd),
        });
        self.interval_start = end;
        self.bytes_in_interval = 0;
        self.retransmits_at_start = sample.map(|s| s.retransmitted_packets);
    }

    /// Reports the last, partial interval (if it saw any time) and returns
    /// the total elapsed time.
    fn close(mut self, report: &mut dyn FnMut(&PerfInterval)) -> Duration {
        let elapsed = self.started.elapsed();
        if !self.interval.is_zero() && elapsed > self.interval_start {
            self.emit(elapsed, report);
        }
        elapsed
    }
}

/// Runs one measurement over `stream`. `sample` reads the connection's
/// counters (or `None` where there is no connection, as in tests).
pub fn run_perf<S: Duplex + ?Sized>(
    stream: &mut S,
    options: PerfOptions,
    sample: &dyn Fn() -> Option<PerfSample>,
    report: &mut dyn FnMut(&PerfInterval),
) -> Result<PerfSummary, ClientError> {
    send_request(
        stream,
        &Request::Perf {
            direction: options.direction,
            limit: PerfLimit::Duration(options.duration),
        },
    )?;
    let (direction, bytes, bytes_received, elapsed) = match options.direction {
        PerfDirection::Upload => {
            read_ok_response(stream)?;
            let pattern = perf_pattern();
            let mut meter = IntervalMeter::new(options.interval, options.duration, sample);
            let mut sent = 0u64;
            while meter.started.elapsed() < options.duration {
                stream
                    .write_all(&pattern)
                    .map_err(|e| ClientError::Connection(format!("after {sent} bytes: {e}")))?;
                sent += pattern.len() as u64;
                meter.add(pattern.len() as u64, report);
            }
            stream
                .finish()
                .map_err(|e| ClientError::Connection(format!("ending the measurement: {e}")))?;
            // The server answers once it has read everything: the receiver's count.
            let response = read_ok_response(stream)?;
            let elapsed = meter.close(report);
            ("upload", sent, response.size, elapsed)
        }
        PerfDirection::Download => {
            super::client::finish_request(stream)?;
            read_ok_response(stream)?;
            let mut meter = IntervalMeter::new(options.interval, options.duration, sample);
            let mut buf = vec![0u8; DOWNLOAD_READ_LEN];
            let mut received = 0u64;
            loop {
                match stream.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        received += n as u64;
                        meter.add(n as u64, report);
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        return Err(ClientError::Connection(format!(
                            "after {received} bytes: {e}"
                        )))
                    }
                }
            }
            let elapsed = meter.close(report);
            ("download", received, received, elapsed)
        }
    };
    let seconds = elapsed.as_secs_f64();
    let end = sample();
    Ok(PerfSummary {
        event: "summary",
        direction,
        seconds,
        bytes,
        bytes_received,
        bits_per_second: if seconds > 0.0 {
            bytes_received as f64 * 8.0 / seconds
        } else {
            0.0
        },
        retransmits: end.map(|s| s.retransmitted_packets),
        cwnd: end.map(|s| s.cwnd),
        srtt_us: end.map(|s| s.srtt_us),
    })
}

/// The bytes PERF sends: not all zeros, so nothing on the path can
/// compress them away.
pub fn perf_pattern() -> Vec<u8> {
    (0..CHUNK_LEN)
        .map(|i| (i.wrapping_mul(31) % 251) as u8)
        .collect()
}
