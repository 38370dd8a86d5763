//! NewReno as RFC 9002 §7 writes it (RFC 5681 arithmetic, byte counting).
//!
//! The baseline every paper compares against. Two knobs the papers turn: the
//! initial window (1 or 2 packets in the 2002 testbeds, 10 today) and what a
//! timeout does to the window (RFC 9002 collapses to 2 packets, classic TCP
//! to 1). Slow start is HyStart++ (RFC 9406) unless `hystart` is off, as
//! the 2002 testbeds' classic slow start.
//!
//! ECN is RFC 9002 §7.1's classic response: CE marks that start a
//! congestion event halve the window as a loss does.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::hystart::HyStart;
use crate::{
    AckEvent, CongestionControl, EcnEvent, LossEvent, LossVerdict, Metrics, RecoveryPolicy,
    SpuriousCongestionEvent, WindowCore,
};

/// RFC 9002 §7.2: kInitialWindow is 10 packets (bounded by 14720 bytes there;
/// sift counts whole packets).
pub const INITIAL_WINDOW_PACKETS: u64 = 10;
/// RFC 9002 §7.3.2 kLossReductionFactor = 0.5 (β in RFC 5681).
pub const LOSS_REDUCTION: (u64, u64) = (1, 2);

/// Reno's parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RenoConfig {
    /// Initial window in packets.
    pub initial_window_packets: u64,
    /// Window after a timeout (persistent congestion), in packets: RFC 9002
    /// uses 2 (kMinimumWindow); classic TCP (RFC 5681 §3.1) uses 1.
    pub timeout_window_packets: u64,
    /// At most one window reduction per round trip (RFC 9002 §7.3.2, and
    /// NewReno). Off: every loss event cuts the window, as the BSD Reno the
    /// Vegas papers measured did (Hengartner et al. §VI, algorithm E).
    pub one_reduction_per_window: bool,
    /// Leave the initial slow start by HyStart++ (RFC 9406) instead of at
    /// the first loss. The paper experiments turn it off: their 2002 stacks
    /// had classic slow start.
    pub hystart: bool,
}

impl Default for RenoConfig {
    fn default() -> Self {
        Self {
            initial_window_packets: INITIAL_WINDOW_PACKETS,
            timeout_window_packets: 2,
            one_reduction_per_window: true,
            hystart: true,
        }
    }
}

/// The Reno controller.
#[derive(Debug, Clone)]
pub struct Reno {
    config: RenoConfig,
    window: WindowCore,
    hystart: HyStart,
}

impl Reno {
    /// A controller for packets of `mss` bytes.
    pub fn new(config: RenoConfig, mss: u64) -> Self {
        Self {
            window: WindowCore::new(mss, config.initial_window_packets),
            hystart: HyStart::new(config.hystart),
            config,
        }
    }
}

impl CongestionControl for Reno {
    fn on_sent(&mut self, _now: Instant, _bytes: u64, _bytes_in_flight: u64) {}

    fn on_ack(&mut self, ack: &AckEvent) {
        if self.window.ack_may_grow(ack) {
            self.window.grow_as_reno(&mut self.hystart, ack);
        }
    }

    fn on_congestion(&mut self, ev: &LossEvent) -> LossVerdict {
        self.window.save_for_undo(());
        let timeout_window = self
            .window
            .packets(self.config.timeout_window_packets.max(1));
        self.window
            .reduce(LOSS_REDUCTION, ev.persistent, timeout_window);
        self.hystart.on_congestion();
        LossVerdict::Congestive
    }

    fn on_spurious_congestion(&mut self, _ev: &SpuriousCongestionEvent) {
        if self.window.undo().is_some() {
            self.hystart.undo_congestion();
        }
    }

    /// The classic response (RFC 9002 §7.1): CE marks that start a new
    /// congestion event cut as a loss does; marks confirm the cut, which
    /// is then never undone as spurious.
    fn on_ecn(&mut self, ev: &EcnEvent) {
        if ev.new_congestion_event {
            self.on_congestion(&ev.as_congestion());
        }
        self.window.forget_undo();
    }

    fn set_mss(&mut self, mss: u64) {
        self.window.set_mss(mss);
    }

    fn set_window(&mut self, cwnd: u64, ssthresh: Option<u64>) {
        self.window.set_window(cwnd, ssthresh);
    }

    fn window(&self) -> u64 {
        self.window.cwnd
    }

    fn recovery_policy(&self) -> RecoveryPolicy {
        RecoveryPolicy {
            one_reduction_per_window: self.config.one_reduction_per_window,
            ..RecoveryPolicy::default()
        }
    }

    fn ssthresh(&self) -> u64 {
        self.window.ssthresh
    }

    fn metrics(&self) -> Metrics {
        Metrics {
            algorithm: "reno".into(),
            cwnd: self.window.cwnd,
            ssthresh: self.window.ssthresh,
            phase: self.window.phase(),
            last_verdict: None,
            fields: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RttSample;
    use std::time::Duration;

    const MSS: u64 = 1000;

    fn rtt() -> RttSample {
        let d = Duration::from_millis(100);
        RttSample {
            latest: d,
            min: d,
            smoothed: d,
            variance: d / 2,
        }
    }

    fn ack(now: Instant, bytes: u64) -> AckEvent {
        AckEvent {
            now,
            acked_bytes: bytes,
            acked_packets: bytes / MSS,
            largest_acked: 0,
            largest_acked_sent_time: now,
            rtt: rtt(),
            rtt_sampled: true,
            bytes_in_flight: 0,
            app_limited: false,
            in_recovery: false,
            rate: None,
        }
    }

    fn loss(now: Instant, persistent: bool) -> LossEvent {
        LossEvent {
            now,
            lost_packets: vec![1],
            lost_bytes: MSS,
            largest_lost_sent_time: now,
            bytes_in_flight: 0,
            rtt: rtt(),
            persistent,
        }
    }

    #[test]
    fn slow_start_doubles_per_window_then_halves_on_loss() {
        let now = Instant::now();
        let mut reno = Reno::new(RenoConfig::default(), MSS);
        // IW = 10 packets = 10_000 bytes; acking a full window doubles it.
        reno.on_ack(&ack(now, 10_000));
        assert_eq!(reno.window(), 20_000);
        // Loss: ssthresh = cwnd/2 = 10_000, cwnd = ssthresh.
        assert_eq!(
            reno.on_congestion(&loss(now, false)),
            LossVerdict::Congestive
        );
        assert_eq!((reno.window(), reno.ssthresh()), (10_000, 10_000));
    }

    #[test]
    fn avoidance_adds_one_mss_per_window_acked() {
        let now = Instant::now();
        let mut reno = Reno::new(RenoConfig::default(), MSS);
        reno.on_congestion(&loss(now, false)); // cwnd = ssthresh = 5_000
        assert_eq!(reno.window(), 5_000);
        // Four ACKs of 1_000: 4_000 < 5_000 acked, no growth yet.
        for _ in 0..4 {
            reno.on_ack(&ack(now, 1_000));
        }
        assert_eq!(reno.window(), 5_000);
        // The fifth completes a window: +1 mss.
        reno.on_ack(&ack(now, 1_000));
        assert_eq!(reno.window(), 6_000);
    }

    #[test]
    fn no_growth_in_recovery_or_when_app_limited() {
        let now = Instant::now();
        let mut reno = Reno::new(RenoConfig::default(), MSS);
        let mut a = ack(now, 5_000);
        a.in_recovery = true;
        reno.on_ack(&a);
        a.in_recovery = false;
        a.app_limited = true;
        reno.on_ack(&a);
        assert_eq!(reno.window(), 10_000);
    }

    #[test]
    fn timeout_collapses_to_configured_window() {
        let now = Instant::now();
        let mut rfc = Reno::new(RenoConfig::default(), MSS);
        rfc.on_congestion(&loss(now, true));
        assert_eq!((rfc.window(), rfc.ssthresh()), (2_000, 5_000));

        let classic = RenoConfig {
            timeout_window_packets: 1,
            ..RenoConfig::default()
        };
        let mut classic = Reno::new(classic, MSS);
        classic.on_congestion(&loss(now, true));
        assert_eq!(classic.window(), 1_000);
    }

    fn spurious(now: Instant) -> SpuriousCongestionEvent {
        SpuriousCongestionEvent {
            now,
            congestion_at: now,
            lost_packets: vec![1],
            rtt: rtt(),
        }
    }

    #[test]
    fn a_spurious_congestion_event_is_undone() {
        let now = Instant::now();
        let mut reno = Reno::new(RenoConfig::default(), MSS);
        reno.on_ack(&ack(now, 10_000)); // slow start: cwnd 20_000, ssthresh ∞
        reno.on_congestion(&loss(now, false)); // cwnd = ssthresh = 10_000
        reno.on_ack(&ack(now, 10_000)); // avoidance: +1 mss → 11_000
        assert_eq!(reno.window(), 11_000);
        // Undo: cwnd = max(11_000, 20_000), ssthresh back to ∞ (slow start).
        reno.on_spurious_congestion(&spurious(now));
        assert_eq!((reno.window(), reno.ssthresh()), (20_000, u64::MAX));
    }

    #[test]
    fn slow_start_stops_at_ssthresh_within_one_ack() {
        let now = Instant::now();
        let mut reno = Reno::new(RenoConfig::default(), MSS);
        reno.on_congestion(&loss(now, true)); // cwnd 2_000, ssthresh 5_000
                                              // 4_000 acked: 3_000 of slow start reaches 5_000, the remaining 1_000
                                              // is avoidance credit (< cwnd, so no further growth).
        reno.on_ack(&ack(now, 4_000));
        assert_eq!(reno.window(), 5_000);
    }
}
