//! TCP Westwood (Casetti, Gerla, Mascolo, Sanadidi & Wang 2002) and
//! Westwood+ as a sampling option.
//!
//! Reno's growth, but after a loss the window is set from the bandwidth the
//! connection was measured to get, not halved: `ssthresh = BWE·RTTmin`
//! ("faster recovery", §3). The estimate lives in [`bandwidth`].
//!
//! Westwood does not classify losses: it reacts to every loss the same way
//! and reports each one as [`LossVerdict::Congestive`]. That is deliberate:
//! its gain on lossy links comes from a gentler cut, not from telling random
//! loss apart, and the simulator's confusion matrix should show exactly that.
//! A congestion event that proves spurious is undone (window and ssthresh
//! as before it; the bandwidth estimate keeps what it measured since) and
//! its verdict moves to the `spurious_losses` count.
//!
//! **ECN** (DESIGN §6.1, `ecn.rs`). A CE mark takes the same cut as a loss
//! (ssthresh = BWE·RTTmin): the network says the queue is full. With
//! `ecn_loss_verdict` on a path whose ECN is validated, a loss with no CE
//! mark in its round is judged random and leaves the window and ssthresh
//! as they are (a recovery period still runs); marks later in that period
//! overrule the judgement and take the cut. Off by default (the paper's
//! one rule for every loss).
//!
//! Decisions where the paper, Linux and ns-3 differ (DESIGN §6: the paper
//! wins), each pinned by a test below:
//! - the filter is the paper's Tustin filter with α_k = (2τ − Δ_k)/(2τ + Δ_k);
//!   ns-3 uses the same form with a fixed α = 0.9, Linux two cascaded 7/8
//!   EWMAs seeded with the first sample;
//! - d_k is the ACK's exact newly-acknowledged byte count (QUIC ACK ranges),
//!   which replaces the paper's AckedCount duplicate-ACK heuristic (§2.3);
//! - RTTmin is the smallest RTT sample over the whole connection (§3.1);
//!   Linux resets it after every loss and relearns it;
//! - after a packet-threshold loss the window only ever shrinks to ssthresh
//!   (§3.1 "only if cwin > ssthresh"); Linux and ns-3 set cwnd = ssthresh,
//!   which can raise it;
//! - ssthresh is floored at 2 packets after any loss (DESIGN §6; the paper
//!   writes the floor only for timeouts, §3.2, and it is RFC 9002's minimum);
//! - a timeout collapses the window to `timeout_window_packets`, 1 by
//!   default: §3.2's `cwin = 1`, which is classic Reno's loss window;
//! - slow start is Reno's, so it is HyStart++ (RFC 9406) unless `hystart`
//!   is off: DESIGN §6 gives every loss-based controller HyStart++ by
//!   default, and the paper experiments turn it off to run the paper's
//!   classic slow start.

pub mod bandwidth;

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

pub use bandwidth::{BandwidthEstimator, BandwidthSampling};

use crate::ecn::{EcnMemory, MARKED_BASIS};
use crate::hystart::HyStart;
use crate::ranges::{self, Range, Ranges, Valid};
use crate::veno::VerdictCounts;
use crate::{
    AckEvent, AdditiveIncrease, CongestionControl, EcnEvent, InvalidCcConfig, LossEvent,
    LossVerdict, Metrics, RttSample, SpuriousCongestionEvent, VerdictBasis, WindowCore,
};

/// τ, the filter time constant (1/τ is its cut-off frequency): 500 ms, the
/// value of Casetti et al. 2002, §4 ("performance is not very sensitive to
/// the choice of τ as long as τ > RTT").
pub const FILTER_TIME_CONSTANT_MS: u64 = 500;
/// m: a virtual zero sample every τ/m without ACKs, m ≥ 2 for the Nyquist
/// bound (Casetti et al. 2002, §2.2).
pub const VIRTUAL_SAMPLE_DIVISOR: u32 = 2;
/// RFC 9002 §7.2: kInitialWindow is 10 packets (the 2002 testbeds used 1 or
/// 2; sift's baselines all start at 10 unless a scenario says otherwise).
pub const INITIAL_WINDOW_PACKETS: u64 = 10;
/// Casetti et al. 2002, §3.2: after a coarse timeout `cwin = 1`.
pub const TIMEOUT_WINDOW_PACKETS: u64 = 1;

/// Westwood's parameters. Defaults are the paper's.
///
/// Metrics fields reported by [`Westwood`]: `bwe_bps` (the bandwidth
/// estimate in bits per second, as of the latest event) and `rtt_min_ms`
/// (RTTmin in milliseconds; 0 until the first RTT sample), and the verdict
/// counts `random_losses` (0 unless `ecn_loss_verdict` judged some),
/// `congestive_losses` and `spurious_losses`.
///
/// τ must exceed the RTT (§4). If it does not, the filter's pass band (up to
/// 1/τ) contains the once-per-RTT pattern of the ACK stream, so the estimate
/// swings with the bursts inside each round trip instead of averaging across
/// them, and the ssthresh set at a loss depends on where in that burst the
/// loss fell. In per-RTT mode a round trip longer than 2τ would make α
/// negative; sift clamps it at 0 (see [`BandwidthEstimator`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WestwoodConfig {
    /// One sample per ACK (Westwood, `per_ack`) or per RTT (Westwood+,
    /// `per_rtt`).
    pub sampling: BandwidthSampling,
    /// τ in milliseconds. Must be positive.
    pub filter_time_constant_ms: u64,
    /// m: a virtual zero sample every τ/m without ACKs. At least 2.
    pub virtual_sample_divisor: u32,
    /// Initial window in packets.
    pub initial_window_packets: u64,
    /// Window after a timeout (persistent congestion), in packets.
    pub timeout_window_packets: u64,
    /// Leave the initial slow start by HyStart++ (RFC 9406), as Reno does by
    /// default; the paper experiments turn it off.
    pub hystart: bool,
    /// On a path whose ECN is validated, a loss with no CE mark in its
    /// round is random and keeps the window (`ecn.rs`; `--cc
    /// westwood-ecn`). Off: every loss takes the paper's cut.
    pub ecn_loss_verdict: bool,
}

impl Default for WestwoodConfig {
    fn default() -> Self {
        Self {
            sampling: BandwidthSampling::PerAck,
            filter_time_constant_ms: FILTER_TIME_CONSTANT_MS,
            virtual_sample_divisor: VIRTUAL_SAMPLE_DIVISOR,
            initial_window_packets: INITIAL_WINDOW_PACKETS,
            timeout_window_packets: TIMEOUT_WINDOW_PACKETS,
            hystart: true,
            ecn_loss_verdict: false,
        }
    }
}

impl WestwoodConfig {
    /// Each parameter's range: τ positive (§4), m at least 2 (§2.2's
    /// Nyquist bound), windows of at least one packet.
    const RANGES: &'static Ranges<Self> = &[
        &Range {
            field: "filter_time_constant_ms",
            value: |c: &mut Self| &mut c.filter_time_constant_ms,
            valid: Valid::Where(|ms| ms > 0),
            expected: "a positive number of milliseconds",
        },
        &Range {
            field: "virtual_sample_divisor",
            value: |c: &mut Self| &mut c.virtual_sample_divisor,
            valid: Valid::AtLeast(VIRTUAL_SAMPLE_DIVISOR),
            expected: "at least 2 (Nyquist)",
        },
        &Range {
            field: "initial_window_packets",
            value: |c: &mut Self| &mut c.initial_window_packets,
            valid: Valid::AtLeast(1),
            expected: "at least 1",
        },
        &Range {
            field: "timeout_window_packets",
            value: |c: &mut Self| &mut c.timeout_window_packets,
            valid: Valid::AtLeast(1),
            expected: "at least 1",
        },
    ];

    /// Checks every value against the range the paper allows.
    pub fn validate(&self) -> Result<(), InvalidCcConfig> {
        ranges::validate("westwood", self, Self::RANGES)
    }

    /// The same configuration with every out-of-range value (those
    /// [`validate`](Self::validate) reports) put back in range: τ the
    /// paper's, the others their least valid value.
    fn sanitized(self) -> Self {
        ranges::sanitized(self, Self::RANGES)
    }
}

/// The Westwood controller.
#[derive(Debug, Clone)]
pub struct Westwood {
    config: WestwoodConfig,
    /// The window, and beside it the cut's verdict and the last verdict
    /// before it, to restore if the cut is undone.
    window: WindowCore<u64, (LossVerdict, Option<LossVerdict>)>,
    hystart: HyStart,
    bandwidth: BandwidthEstimator,
    /// RTTmin: the smallest RTT sample over the connection.
    rtt_min: Option<Duration>,
    last_verdict: Option<LossVerdict>,
    verdicts: VerdictCounts,
    /// The numbers behind the last loss verdict (for traces).
    basis: Option<VerdictBasis>,
    /// CE arrivals, validation and rounds, for the ECN rules.
    ecn: EcnMemory,
    /// The congestion event being judged was started by CE marks.
    judging_mark: bool,
}

impl Westwood {
    /// A controller for packets of `mss` bytes. Out-of-range configuration
    /// values fall back to the paper's (see [`WestwoodConfig::validate`]).
    pub fn new(config: WestwoodConfig, mss: u64) -> Self {
        let config = config.sanitized();
        let bandwidth = BandwidthEstimator::new(
            config.sampling,
            Duration::from_millis(config.filter_time_constant_ms),
            config.virtual_sample_divisor,
        );
        Self {
            window: WindowCore::new(mss, config.initial_window_packets),
            hystart: HyStart::new(config.hystart),
            ecn: EcnMemory::new(config.ecn_loss_verdict),
            judging_mark: false,
            config,
            bandwidth,
            rtt_min: None,
            last_verdict: None,
            verdicts: VerdictCounts::default(),
            basis: None,
        }
    }

    /// BWE in bytes per second, as of the latest event.
    pub fn bandwidth_estimate(&self) -> f64 {
        self.bandwidth.bytes_per_second()
    }

    /// RTTmin, once an RTT sample has been seen.
    pub fn rtt_min(&self) -> Option<Duration> {
        self.rtt_min
    }

    fn observe_rtt(&mut self, rtt: &RttSample, sampled: bool) {
        if !sampled {
            return;
        }
        // The recovery module may reset its own min_rtt after persistent
        // congestion (RFC 9002 §5.2); the paper's RTTmin spans the whole
        // connection, so keep our own minimum.
        for candidate in [rtt.latest, rtt.min] {
            if candidate.is_zero() {
                continue;
            }
            self.rtt_min = Some(match self.rtt_min {
                Some(current) => current.min(candidate),
                None => candidate,
            });
        }
    }

    /// Undoes the last cut, if it was not undone already. `spurious`: the
    /// loss was neither random nor congestive; otherwise CE marks overruled
    /// its verdict, which is counted again. Whether there was one.
    fn undo_congestion(&mut self, spurious: bool) -> bool {
        let Some((verdict, last_verdict)) = self.window.undo() else {
            return false;
        };
        if verdict == LossVerdict::Congestive {
            self.hystart.undo_congestion();
        }
        self.last_verdict = last_verdict;
        if spurious {
            self.verdicts.withdraw(verdict);
        } else {
            self.verdicts.retract(verdict);
        }
        true
    }

    /// The paper's ideal window BWE·RTTmin in bytes, at least 2 packets.
    fn ideal_window(&self, fallback_rtt: Duration) -> u64 {
        let rtt_min = self.rtt_min.unwrap_or(fallback_rtt);
        // Multiply by whole nanoseconds first: exact for any realistic value.
        let bytes = self.bandwidth.bytes_per_second() * rtt_min.as_nanos() as f64 / 1e9;
        (bytes as u64).max(self.window.minimum())
    }
}

impl CongestionControl for Westwood {
    fn on_sent(&mut self, now: Instant, _bytes: u64, _bytes_in_flight: u64) {
        self.bandwidth.advance_to(now);
    }

    fn on_ack(&mut self, ack: &AckEvent) {
        self.observe_rtt(&ack.rtt, ack.rtt_sampled);
        // Every delivery counts towards the estimate, in recovery or not (the
        // paper counts even duplicate ACKs, §2.1).
        self.bandwidth
            .on_ack(ack.now, ack.acked_bytes, ack.rtt.smoothed);
        self.ecn.on_ack(ack);
        if self.window.ack_may_grow(ack) {
            // Reno growth (§3: slow start and avoidance are unchanged).
            self.window.grow_as_reno(&mut self.hystart, ack);
        }
    }

    fn verdict_basis(&self) -> Option<VerdictBasis> {
        self.basis.clone()
    }

    fn on_congestion(&mut self, ev: &LossEvent) -> LossVerdict {
        self.bandwidth.advance_to(ev.now);
        let by_ecn = (!self.judging_mark)
            .then(|| self.ecn.loss_verdict(ev))
            .flatten();
        let verdict = by_ecn.unwrap_or(LossVerdict::Congestive);
        self.window.save_for_undo((verdict, self.last_verdict));
        self.verdicts.count(verdict);
        self.last_verdict = Some(verdict);
        let ideal = self.ideal_window(ev.rtt.min);
        let mut values = vec![
            ("bwe_bps", self.bandwidth.bytes_per_second() * 8.0),
            (
                "rtt_min_us",
                self.rtt_min.unwrap_or(ev.rtt.min).as_micros() as f64,
            ),
            ("ssthresh_bytes", ideal as f64),
            ("cwnd_bytes", self.window.cwnd as f64),
        ];
        if self.judging_mark {
            values.push(MARKED_BASIS);
        } else if by_ecn.is_some() {
            values.extend(self.ecn.basis_values(ev));
        }
        self.basis = Some(VerdictBasis { verdict, values });
        let window = &mut self.window;
        if verdict == LossVerdict::Random {
            // The link's loss: no cut, but a recovery period runs.
            window.in_recovery = true;
            return verdict;
        }
        let ssthresh = ideal;
        window.ssthresh = ssthresh;
        window.cwnd = if ev.persistent {
            // §3.2: cwin = 1 (configurable).
            window.packets(self.config.timeout_window_packets)
        } else {
            // §3.1: cwin = ssthresh only if cwin > ssthresh.
            window.cwnd.min(ssthresh)
        };
        window.increase = AdditiveIncrease::default();
        window.in_recovery = !ev.persistent;
        self.hystart.on_congestion();
        LossVerdict::Congestive
    }

    fn on_spurious_congestion(&mut self, _ev: &SpuriousCongestionEvent) {
        self.undo_congestion(true);
    }

    fn on_ecn(&mut self, ev: &EcnEvent) {
        self.ecn.on_mark(ev.now);
        let overrule = self.window.in_recovery && self.last_verdict == Some(LossVerdict::Random);
        if ev.new_congestion_event || (overrule && self.undo_congestion(false)) {
            self.judging_mark = true;
            self.on_congestion(&ev.as_congestion());
            self.judging_mark = false;
        }
        self.window.forget_undo();
    }

    fn on_ecn_validated(&mut self, validated: bool) {
        self.ecn.set_validated(validated);
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

    fn ssthresh(&self) -> u64 {
        self.window.ssthresh
    }

    fn metrics(&self) -> Metrics {
        let mut metrics = Metrics {
            algorithm: "westwood".into(),
            cwnd: self.window.cwnd,
            ssthresh: self.window.ssthresh,
            phase: self.window.phase(),
            last_verdict: self.last_verdict,
            fields: Default::default(),
        };
        metrics
            .fields
            .insert("bwe_bps".into(), self.bandwidth.bytes_per_second() * 8.0);
        let rtt_min_ms = self.rtt_min.map_or(0.0, |rtt| rtt.as_secs_f64() * 1e3);
        metrics.fields.insert("rtt_min_ms".into(), rtt_min_ms);
        self.verdicts.insert_into(&mut metrics.fields);
        metrics
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Phase;

    const MSS: u64 = 1000;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn rtt(latest: Duration, min: Duration, smoothed: Duration) -> RttSample {
        RttSample {
            latest,
            min,
            smoothed,
            variance: smoothed / 2,
        }
    }

    fn ack_with_rtt(now: Instant, bytes: u64, sample: RttSample) -> AckEvent {
        AckEvent {
            now,
            acked_bytes: bytes,
            acked_packets: bytes / MSS,
            largest_acked: 0,
            largest_acked_sent_time: now,
            rtt: sample,
            rtt_sampled: true,
            bytes_in_flight: 0,
            app_limited: false,
            in_recovery: false,
            rate: None,
        }
    }

    fn ack(now: Instant, bytes: u64) -> AckEvent {
        ack_with_rtt(now, bytes, rtt(ms(100), ms(100), ms(100)))
    }

    fn loss(now: Instant, persistent: bool) -> LossEvent {
        LossEvent {
            now,
            lost_packets: vec![1],
            lost_bytes: MSS,
            largest_lost_sent_time: now,
            bytes_in_flight: 0,
            rtt: rtt(ms(100), ms(100), ms(100)),
            persistent,
        }
    }

    /// Five ACKs of 25_000 B, 250 ms (= τ/m) apart with RTT 100 ms: the
    /// first starts the clock; then b_k = 100_000 B/s with α = 3/5 (weight
    /// 1/5) gives b̂ = 20_000, 52_000, 71_200, 82_720 B/s. Returns the time of
    /// the last ACK. Slow start has grown cwnd by 125_000 to 135_000.
    fn measure_82_720_bytes_per_second(westwood: &mut Westwood, t0: Instant) -> Instant {
        for k in 0..5 {
            westwood.on_ack(&ack(t0 + ms(250) * k, 25_000));
        }
        assert!((westwood.bandwidth_estimate() - 82_720.0).abs() < 1e-6);
        t0 + ms(1_000)
    }

    #[test]
    fn ssthresh_after_loss_is_bwe_times_rtt_min() {
        let t0 = Instant::now();
        let mut westwood = Westwood::new(WestwoodConfig::default(), MSS);
        let last = measure_82_720_bytes_per_second(&mut westwood, t0);
        assert_eq!(westwood.window(), 135_000);
        // ssthresh = BWE·RTTmin = 82_720 B/s · 0.1 s = 8_272 B; cwnd
        // (135_000) is above it, so cwnd = ssthresh.
        let verdict = westwood.on_congestion(&loss(last, false));
        assert_eq!(verdict, LossVerdict::Congestive);
        assert_eq!((westwood.window(), westwood.ssthresh()), (8_272, 8_272));
        let metrics = westwood.metrics();
        assert_eq!(metrics.phase, Phase::Recovery);
        assert_eq!(metrics.last_verdict, Some(LossVerdict::Congestive));
        assert!((metrics.fields["bwe_bps"] - 661_760.0).abs() < 1e-6);
        assert_eq!(metrics.fields["rtt_min_ms"], 100.0);
        // The trace shows the same arithmetic: 661_760 b/s · 100 ms.
        let basis = westwood.verdict_basis().expect("a verdict was made");
        let value = |name| basis.values.iter().find(|(n, _)| *n == name).map(|v| v.1);
        assert!((value("bwe_bps").unwrap() - 661_760.0).abs() < 1e-6);
        assert_eq!(value("rtt_min_us"), Some(100_000.0));
        assert_eq!(value("ssthresh_bytes"), Some(8_272.0));
        assert_eq!(value("cwnd_bytes"), Some(135_000.0));
    }

    #[test]
    fn an_undone_loss_restores_the_window_and_counts_as_spurious() {
        let t0 = Instant::now();
        let mut westwood = Westwood::new(WestwoodConfig::default(), MSS);
        let last = measure_82_720_bytes_per_second(&mut westwood, t0);
        westwood.on_congestion(&loss(last, false)); // 135_000 → 8_272
        westwood.on_spurious_congestion(&SpuriousCongestionEvent {
            now: last + ms(50),
            congestion_at: last,
            lost_packets: vec![1],
            rtt: rtt(ms(100), ms(100), ms(100)),
        });
        // As before the loss: 135_000 in slow start, no verdict.
        assert_eq!(
            (westwood.window(), westwood.ssthresh()),
            (135_000, u64::MAX)
        );
        let metrics = westwood.metrics();
        assert_eq!(metrics.last_verdict, None);
        assert_eq!(metrics.fields["congestive_losses"], 0.0);
        assert_eq!(metrics.fields["spurious_losses"], 1.0);
        // The bandwidth estimate is a measurement: undo leaves it alone.
        assert!((westwood.bandwidth_estimate() - 82_720.0).abs() < 1e-6);
    }

    #[test]
    fn ssthresh_is_floored_at_two_packets() {
        // No ACK yet: BWE = 0, so ssthresh = max(0, 2·mss) = 2_000 and the
        // 10-packet window drops to it.
        let mut westwood = Westwood::new(WestwoodConfig::default(), MSS);
        westwood.on_congestion(&loss(Instant::now(), false));
        assert_eq!((westwood.window(), westwood.ssthresh()), (2_000, 2_000));
    }

    #[test]
    fn loss_after_an_ack_gap_uses_the_decayed_estimate() {
        let t0 = Instant::now();
        let mut westwood = Westwood::new(WestwoodConfig::default(), MSS);
        let last = measure_82_720_bytes_per_second(&mut westwood, t0);
        // 600 ms without ACKs: zero samples at +250 and +500 ms give
        // b̂ = 3/5·82_720 + 1/5·100_000 = 69_632, then 3/5·69_632 = 41_779.2.
        // ssthresh = 41_779.2 · 0.1 = 4_177.92 → 4_177 B.
        westwood.on_congestion(&loss(last + ms(600), false));
        assert_eq!(westwood.ssthresh(), 4_177);
        assert_eq!(westwood.window(), 4_177);
    }

    #[test]
    fn timeout_sets_ssthresh_from_bwe_and_collapses_to_one_packet_as_paper() {
        let t0 = Instant::now();
        let mut westwood = Westwood::new(WestwoodConfig::default(), MSS);
        let last = measure_82_720_bytes_per_second(&mut westwood, t0);
        // §3.2: ssthresh = BWE·RTTmin = 8_272 (≥ 2 packets), cwin = 1.
        westwood.on_congestion(&loss(last, true));
        assert_eq!((westwood.window(), westwood.ssthresh()), (1_000, 8_272));
        assert_eq!(westwood.metrics().phase, Phase::SlowStart);

        // Slow start from one packet: 7_272 acked reaches ssthresh exactly.
        westwood.on_ack(&ack(last + ms(100), 7_272));
        assert_eq!(westwood.window(), 8_272);

        let config = WestwoodConfig {
            timeout_window_packets: 2,
            ..WestwoodConfig::default()
        };
        let mut rfc9002 = Westwood::new(config, MSS);
        rfc9002.on_congestion(&loss(t0, true));
        assert_eq!(rfc9002.window(), 2_000);
    }

    #[test]
    fn westwood_congestion_never_raises_cwnd_as_paper() {
        // §3.1 sets cwin = ssthresh only if cwin > ssthresh; Linux
        // (CA_EVENT_COMPLETE_CWR) and ns-3 set cwnd = ssthresh outright.
        let t0 = Instant::now();
        let config = WestwoodConfig {
            initial_window_packets: 2,
            ..WestwoodConfig::default()
        };
        let mut westwood = Westwood::new(config, MSS);
        // Same measurement as above, but the acks are app-limited so the
        // window stays at 2 packets while BWE reaches 82_720 B/s.
        for k in 0..5 {
            let mut idle = ack(t0 + ms(250) * k, 25_000);
            idle.app_limited = true;
            westwood.on_ack(&idle);
        }
        assert_eq!(westwood.window(), 2_000);
        westwood.on_congestion(&loss(t0 + ms(1_000), false));
        // ssthresh = 8_272, cwnd = min(2_000, 8_272) = 2_000.
        assert_eq!((westwood.window(), westwood.ssthresh()), (2_000, 8_272));
    }

    #[test]
    fn westwood_ssthresh_uses_rtt_min_not_srtt_as_paper() {
        // RTT samples of 100 ms, then queueing pushes srtt to 300 ms: the
        // ideal window is the pipe with the queue drained, BWE·RTTmin (§3.1).
        // The handshake already lifted srtt to 150 ms; it never sees 100 ms.
        let t0 = Instant::now();
        let mut westwood = Westwood::new(WestwoodConfig::default(), MSS);
        let first = rtt(ms(100), ms(100), ms(150));
        westwood.on_ack(&ack_with_rtt(t0, 25_000, first));
        for k in 1..5 {
            let sample = rtt(ms(300), ms(100), ms(300));
            westwood.on_ack(&ack_with_rtt(t0 + ms(250) * k, 25_000, sample));
        }
        let mut ev = loss(t0 + ms(1_000), false);
        ev.rtt = rtt(ms(300), ms(100), ms(300));
        westwood.on_congestion(&ev);
        // 82_720 B/s · 0.1 s = 8_272, not · 0.3 s = 24_816 (srtt now) nor
        // · 0.15 s = 12_408 (the smallest srtt).
        assert_eq!(westwood.ssthresh(), 8_272);
    }

    #[test]
    fn westwood_rtt_min_spans_the_connection_not_reset_at_loss_as_linux() {
        // Linux tcp_westwood sets reset_rtt_min on every loss and relearns
        // RTTmin from the next ACKs; the paper keeps "the smallest RTT sample
        // observed over the duration of the connection" (§3.1).
        let t0 = Instant::now();
        let mut westwood = Westwood::new(WestwoodConfig::default(), MSS);
        let last = measure_82_720_bytes_per_second(&mut westwood, t0);
        westwood.on_congestion(&loss(last, false));
        // After the loss every sample is 200 ms, and the recovery module's
        // own min_rtt was reset to 200 ms too (RFC 9002 §5.2 allows that).
        for k in 1..=4 {
            let sample = rtt(ms(200), ms(200), ms(200));
            westwood.on_ack(&ack_with_rtt(last + ms(250) * k, 25_000, sample));
        }
        assert_eq!(westwood.rtt_min(), Some(ms(100)));
        // b̂ continues from 82_720 with b = 100_000 each step (3/5, 1/5):
        // 3/5·82_720 + 1/5·200_000 = 89_632; then 93_779.2; 96_267.52;
        // 97_760.512 → ssthresh = 97_760.512 · 0.1 = 9_776 (Linux: ·0.2).
        let mut ev = loss(last + ms(1_000), false);
        ev.rtt = rtt(ms(200), ms(200), ms(200));
        westwood.on_congestion(&ev);
        assert_eq!(westwood.ssthresh(), 9_776);
    }

    #[test]
    fn westwood_filter_gain_follows_ack_spacing_as_paper_not_fixed_as_ns3() {
        // One sample b = 100_000 B/s into an empty filter. The paper's gain
        // (1 − α)/2 depends on Δ: Δ = τ/2 → 1/5, Δ = τ/10 → 1/21.
        // ns-3's TcpWestwood uses α = 0.9 whatever Δ (gain 0.05 → 5_000);
        // Linux seeds its EWMA with the first sample (→ 100_000).
        let t0 = Instant::now();
        let mut wide = Westwood::new(WestwoodConfig::default(), MSS);
        wide.on_ack(&ack(t0, 25_000));
        wide.on_ack(&ack(t0 + ms(250), 25_000));
        assert!((wide.bandwidth_estimate() - 20_000.0).abs() < 1e-9);

        let mut close = Westwood::new(WestwoodConfig::default(), MSS);
        close.on_ack(&ack(t0, 5_000));
        close.on_ack(&ack(t0 + ms(50), 5_000));
        assert!((close.bandwidth_estimate() - 100_000.0 / 21.0).abs() < 1e-9);
    }

    #[test]
    fn estimate_keeps_learning_while_the_window_may_not_grow() {
        let t0 = Instant::now();
        let mut westwood = Westwood::new(WestwoodConfig::default(), MSS);
        westwood.on_congestion(&loss(t0, false)); // cwnd 2_000, in recovery
        for k in 0..5 {
            let mut old = ack(t0 + ms(250) * k, 25_000);
            old.in_recovery = true;
            westwood.on_ack(&old);
        }
        assert_eq!(westwood.window(), 2_000);
        assert!((westwood.bandwidth_estimate() - 82_720.0).abs() < 1e-6);
    }

    #[test]
    fn growth_is_reno_slow_start_then_one_packet_per_window() {
        let t0 = Instant::now();
        let mut westwood = Westwood::new(WestwoodConfig::default(), MSS);
        // IW 10 packets; a full window acked doubles it.
        westwood.on_ack(&ack(t0, 10_000));
        assert_eq!(westwood.window(), 20_000);
        // Loss with BWE 0: ssthresh = cwnd = 2_000; avoidance from there.
        westwood.on_congestion(&loss(t0, false));
        westwood.on_ack(&ack(t0 + ms(100), 1_000));
        assert_eq!(westwood.window(), 2_000); // 1_000 of 2_000 acked
        westwood.on_ack(&ack(t0 + ms(200), 1_000));
        assert_eq!(westwood.window(), 3_000); // a window acked: +1 packet
        assert_eq!(westwood.metrics().phase, Phase::CongestionAvoidance);
    }

    #[test]
    fn every_loss_is_reported_congestive() {
        let t0 = Instant::now();
        let mut westwood = Westwood::new(WestwoodConfig::default(), MSS);
        assert_eq!(westwood.metrics().last_verdict, None);
        for persistent in [false, true, false] {
            assert_eq!(
                westwood.on_congestion(&loss(t0, persistent)),
                LossVerdict::Congestive
            );
        }
        assert_eq!(
            westwood.metrics().last_verdict,
            Some(LossVerdict::Congestive)
        );
    }

    #[test]
    fn westwood_plus_is_selected_by_configuration() {
        let config = WestwoodConfig {
            sampling: BandwidthSampling::PerRtt,
            ..WestwoodConfig::default()
        };
        let t0 = Instant::now();
        let mut westwood = Westwood::new(config, MSS);
        westwood.on_ack(&ack(t0, 1_000));
        // Nine ACKs in the first 90 ms: under one RTT, no sample yet.
        for k in 1..=9 {
            westwood.on_ack(&ack(t0 + ms(10) * k, 1_000));
        }
        assert_eq!(westwood.bandwidth_estimate(), 0.0);
        // At 100 ms: b = 10_000/0.1 = 100_000, α = 9/11 → b̂ = 100_000/11.
        westwood.on_ack(&ack(t0 + ms(100), 1_000));
        assert!((westwood.bandwidth_estimate() - 100_000.0 / 11.0).abs() < 1e-6);
    }

    #[test]
    fn out_of_range_configuration_is_reported_and_never_used() {
        let config = WestwoodConfig {
            virtual_sample_divisor: 1,
            ..WestwoodConfig::default()
        };
        let err = config.validate().unwrap_err();
        assert_eq!(err.field, "virtual_sample_divisor");
        let zero_tau = WestwoodConfig {
            filter_time_constant_ms: 0,
            ..WestwoodConfig::default()
        };
        assert_eq!(
            zero_tau.validate().unwrap_err().field,
            "filter_time_constant_ms"
        );
        assert_eq!(WestwoodConfig::default().validate(), Ok(()));
        // A zero τ falls back to 500 ms instead of dividing by zero.
        let t0 = Instant::now();
        let mut westwood = Westwood::new(zero_tau, MSS);
        westwood.on_ack(&ack(t0, 25_000));
        westwood.on_ack(&ack(t0 + ms(250), 25_000));
        assert!((westwood.bandwidth_estimate() - 20_000.0).abs() < 1e-9);
    }

    #[test]
    fn westwood_is_selected_by_cli_name_and_by_scenario_file() {
        use crate::CcConfig;
        let by_name: CcConfig = "westwood".parse().unwrap();
        assert_eq!(by_name, CcConfig::Westwood(WestwoodConfig::default()));
        assert_eq!(by_name.name(), "westwood");
        assert!(CcConfig::NAMES.contains(&"westwood"));

        let scenario = "name = \"westwood\"\nsampling = \"per_rtt\"\n";
        let parsed: CcConfig = toml::from_str(scenario).unwrap();
        let expected = WestwoodConfig {
            sampling: BandwidthSampling::PerRtt,
            ..WestwoodConfig::default()
        };
        assert_eq!(parsed, CcConfig::Westwood(expected));
        let invalid = "name = \"westwood\"\nvirtual_sample_divisor = 1\n";
        let invalid: CcConfig = toml::from_str(invalid).unwrap();
        assert_eq!(
            invalid.validate().unwrap_err().field,
            "virtual_sample_divisor"
        );

        let built = by_name.build(MSS);
        assert_eq!(built.window(), 10_000);
        assert_eq!(built.metrics().algorithm, "westwood");
    }
}
