//! A sampler of the quinn server's sender state (`quinn-server --cc-log`):
//! every few milliseconds one JSON line per connection with the window
//! quinn sends against, what it has sent, and for its BBR the mode and the
//! start-up window behind that window. What told how quinn's BBR started
//! from ten datagrams outruns a ten-datagram slow start
//! (`results/2026-11-27-quinn-start/`); quinn's stats alone do not show it,
//! since `PathStats::cwnd` is the window in force, not the one BBR grows.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use quinn::congestion::{Bbr, Controller};
use serde::Serialize;

/// How often a connection is sampled.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(5);

/// One sample of a connection's sender.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CcSample {
    /// quinn's stable id of the connection.
    pub conn: usize,
    /// Milliseconds since the sampler started (the handshake's end).
    pub t_ms: f64,
    /// The window quinn checks bytes in flight against
    /// (`Controller::window`, bytes).
    pub window: u64,
    /// BBR's mode (`Startup`, `Drain`, `ProbeBw`, `ProbeRtt`), or `None`
    /// for another controller.
    pub bbr_mode: Option<String>,
    /// BBR's own congestion window, the one start-up grows by the bytes
    /// acknowledged; `window` is it except in ProbeRtt and recovery.
    pub bbr_cwnd: Option<u64>,
    /// The controller's pacing rate, bits per second, if it has one (BBR's
    /// comes from its bandwidth estimate; quinn's pacer does not use it).
    pub pacing_rate_bps: Option<u64>,
    /// Packets sent so far.
    pub sent_packets: u64,
    /// UDP datagrams sent so far.
    pub udp_datagrams: u64,
    /// UDP payload bytes sent so far.
    pub udp_bytes: u64,
    /// Packets declared lost so far.
    pub lost_packets: u64,
    /// Smoothed round trip, microseconds.
    pub srtt_us: u64,
    /// The path's datagram size now, bytes.
    pub mtu: u16,
}

/// Where samples go: one JSON line each, shared by every connection.
#[derive(Clone)]
pub struct CcLog(Arc<Mutex<BufWriter<File>>>);

impl CcLog {
    /// Creates (truncates) the log at `path`.
    pub fn create(path: &Path) -> anyhow::Result<Self> {
        let file =
            File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
        Ok(Self(Arc::new(Mutex::new(BufWriter::new(file)))))
    }

    fn write(&self, sample: &CcSample) -> std::io::Result<()> {
        let mut out = self.0.lock().unwrap_or_else(|poison| poison.into_inner());
        serde_json::to_writer(&mut *out, sample)?;
        out.write_all(b"\n")
    }

    fn flush(&self) -> std::io::Result<()> {
        self.0
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .flush()
    }

    /// Samples `conn` every [`SAMPLE_EVERY`] until it closes, then flushes.
    /// A write error ends the sampling (the transfer goes on).
    pub async fn record(self, conn: quinn::Connection) {
        let started = Instant::now();
        let mut tick = tokio::time::interval(SAMPLE_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        while conn.close_reason().is_none() {
            tick.tick().await;
            if self.write(&sample(&conn, started)).is_err() {
                break;
            }
        }
        let _ = self.flush();
    }
}

/// `conn`'s sender state now, timed from `started`.
pub fn sample(conn: &quinn::Connection, started: Instant) -> CcSample {
    let stats = conn.stats();
    let controller = conn.congestion_state();
    let window = controller.window();
    let pacing_rate_bps = controller.metrics().pacing_rate;
    let bbr = bbr_state(controller);
    CcSample {
        conn: conn.stable_id(),
        t_ms: started.elapsed().as_secs_f64() * 1000.0,
        window,
        bbr_mode: bbr.as_ref().map(|state| state.mode.clone()),
        bbr_cwnd: bbr.map(|state| state.cwnd),
        pacing_rate_bps,
        sent_packets: stats.path.sent_packets,
        udp_datagrams: stats.udp_tx.datagrams,
        udp_bytes: stats.udp_tx.bytes,
        lost_packets: stats.path.lost_packets,
        srtt_us: stats.path.rtt.as_micros() as u64,
        mtu: stats.path.current_mtu,
    }
}

/// What of quinn's BBR its public API does not show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BbrState {
    /// The mode, as quinn names it.
    pub mode: String,
    /// Its own congestion window, bytes.
    pub cwnd: u64,
}

/// The mode and own window of `controller` if it is quinn's BBR. quinn
/// keeps both private; its `Debug` output names them (`mode: Startup`,
/// `cwnd: 13500`), and that is read here. `None` for other controllers or
/// if a quinn release spells them otherwise.
pub fn bbr_state(controller: Box<dyn Controller>) -> Option<BbrState> {
    let bbr = controller.into_any().downcast::<Bbr>().ok()?;
    let debug = format!("{bbr:?}");
    let mode = field(&debug, "mode")?;
    let cwnd = field(&debug, "cwnd")?.parse().ok()?;
    Some(BbrState {
        mode: mode.to_string(),
        cwnd,
    })
}

/// The value of the top-level `name: value` in a derived `Debug` string
/// (preceded by `, ` or `{ `, so `cwnd` does not match `init_cwnd`).
fn field<'a>(debug: &'a str, name: &str) -> Option<&'a str> {
    let start = [", ", "{ "].iter().find_map(|before| {
        let key = format!("{before}{name}: ");
        debug.find(&key).map(|at| at + key.len())
    })?;
    let rest = &debug[start..];
    let end = rest.find([',', ' ', '}']).unwrap_or(rest.len());
    Some(&rest[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use quinn::congestion::{BbrConfig, ControllerFactory, CubicConfig};

    #[test]
    fn a_fresh_bbr_reads_as_startup_at_its_initial_window() {
        let mut config = BbrConfig::default();
        config.initial_window(13_500);
        let bbr = Arc::new(config).build(Instant::now(), 1350);
        assert_eq!(
            bbr_state(bbr),
            Some(BbrState {
                mode: "Startup".into(),
                cwnd: 13_500
            })
        );
    }

    #[test]
    fn another_controller_has_no_bbr_state() {
        let cubic = Arc::new(CubicConfig::default()).build(Instant::now(), 1350);
        assert_eq!(bbr_state(cubic), None);
    }

    #[test]
    fn a_field_is_found_whole_and_not_inside_a_longer_name() {
        let debug = "Bbr { init_cwnd: 7, mode: ProbeRtt, x: Y { cwnd: 9 }, cwnd: 42 }";
        assert_eq!(field(debug, "mode"), Some("ProbeRtt"));
        assert_eq!(field(debug, "init_cwnd"), Some("7"));
        // The nested `{ cwnd: 9 }` is the first match after `{ `; the
        // top-level one after `, ` is found first.
        assert_eq!(field(debug, "cwnd"), Some("42"));
        assert_eq!(field(debug, "absent"), None);
    }
}
