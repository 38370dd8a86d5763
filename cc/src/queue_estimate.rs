//! The Vegas family's estimate of the connection's own queue at the
//! bottleneck: queueing delay = RTT − BaseRTT, and from it Veno's backlog
//! N = cwnd·(RTT − BaseRTT)/RTT (Fu & Liew 2003, §II-A).
//!
//! Two estimators, chosen by [`QueueEstimate`]:
//!
//! - **`paper`**: RTT is the smoothed RTT and BaseRTT the smallest sample
//!   (Veno §II-A, Vegas). A path whose delay varies from packet to packet
//!   without a queue — a cellular link's HARQ and RLC retransmissions and
//!   scheduling, in order — puts the smoothed RTT a few standard deviations
//!   of that jitter above the smallest sample, and the estimate reads the
//!   jitter as a standing queue. Measured with `sift-lab run` on issue 36's
//!   path (20 Mb/s, 20 ms each way, queue 200, 1% loss, `delay 20ms 5ms
//!   distribution normal`): Veno's N sits at 3–5 packets with no queue at
//!   all, every random loss is judged congestive, and Enhanced Veno falls
//!   from 0.70 of capacity·(1 − p) to Reno's 0.14.
//! - **`jitter-robust`**: RTT is the smallest sample of the last completed
//!   round (a queue raises every sample of a round, jitter only some, so the
//!   round's minimum keeps the queue and sheds most of the jitter, as Linux's
//!   `tcp_veno` and `tcp_vegas` take it), and the queueing delay is what is
//!   left of round minimum − BaseRTT after a jitter allowance: the mean
//!   absolute difference of consecutive RTT samples (RFC 3550's interarrival
//!   jitter, §6.4.1, gain 1/16), which a standing or slowly building queue
//!   barely moves and packet-to-packet jitter sets. On a clean path the
//!   allowance is a fraction of a millisecond and the estimate is the
//!   paper's measured at the round's floor. Vegas's diff, decided once a
//!   round, also takes its BaseRTT from the recent rounds' floors
//!   ([`RoundFloors`]); Veno's and Enhanced Veno's keep the rule below.
//!
//! BaseRTT follows [`BaseRttReset`]: forgotten at every loss (`at-loss`, the
//! Veno paper's rule) or kept for the connection (`never`, Linux's
//! `tcp_veno` and ns-3's `TcpVeno`).
//!
//! No clock reads: rounds are delimited by the ACKs' send times
//! ([`RoundTracker`]).

use std::collections::VecDeque;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::rounds::RoundTracker;
use crate::AckEvent;

/// Gain of the jitter average (RFC 3550 §6.4.1: J += (|D| − J)/16).
pub const JITTER_GAIN: f64 = 1.0 / 16.0;
/// The jitter allowance, in multiples of the measured jitter, that
/// round minimum − BaseRTT must exceed before it counts as queueing. The
/// minimum of one round and BaseRTT are both low-tail draws of the same
/// jitter, and behind a rate in-order jitter comes in runs (a late packet
/// holds back the ones behind it), so whole rounds sit a few mean steps
/// above the floor. Measured with `sift-lab run` on issue 36's path (5 ms
/// normal jitter, 1% loss, seeds 1–3, Enhanced Veno's median fraction of
/// capacity·(1 − p)): 0 → 0.23, 1 → 0.36, 2 → 0.57, 3 → 0.76, 4 → 0.81,
/// against 0.77 without jitter, which no factor changes (a clean path's
/// jitter is a fraction of a millisecond).
pub const JITTER_ALLOWANCE_FACTOR: f64 = 3.0;

/// Rounds over which Vegas's jitter-robust diff takes its BaseRTT
/// ([`RoundFloors`]). Measured with `sift-lab run` on issue 36's path (1%
/// loss, 5 ms in-order normal jitter, seeds 1–3, median fraction of
/// capacity·(1 − p)): the connection's minimum 0.163 with jitter, 10 rounds
/// 0.181, 30 rounds 0.176, 100 rounds 0.168, against 0.210 without jitter,
/// which none changes.
pub const BASE_WINDOW_ROUNDS: usize = 10;

/// Which RTT the queue estimate compares with BaseRTT.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum QueueEstimate {
    /// The papers': smoothed RTT − BaseRTT.
    #[default]
    Paper,
    /// The last round's minimum RTT − BaseRTT − a jitter allowance learnt
    /// from consecutive samples (module docs).
    JitterRobust,
}

/// When BaseRTT is forgotten.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BaseRttReset {
    /// At every loss, timeout or fast retransmit, relearned from the next
    /// samples (Fu & Liew 2003, §II-A).
    #[default]
    AtLoss,
    /// Never: the smallest sample of the connection (Linux `tcp_veno`,
    /// ns-3 `TcpVeno`).
    Never,
}

/// The mean absolute difference of consecutive RTT samples (RFC 3550
/// §6.4.1's interarrival jitter, gain 1/16): what packet-to-packet delay
/// variation the path shows, which a standing or slowly building queue
/// barely moves.
#[derive(Clone, Debug, Default)]
pub struct JitterMeter {
    last_sample: Option<Duration>,
    jitter_ns: f64,
}

impl JitterMeter {
    /// Takes one RTT sample.
    pub fn on_sample(&mut self, sample: Duration) {
        if let Some(last) = self.last_sample {
            let step = sample.abs_diff(last).as_nanos() as f64;
            self.jitter_ns += (step - self.jitter_ns) * JITTER_GAIN;
        }
        self.last_sample = Some(sample);
    }

    /// The jitter measured so far.
    pub fn jitter(&self) -> Duration {
        Duration::from_nanos(self.jitter_ns as u64)
    }

    /// The allowance a round's minimum RTT may sit above BaseRTT with no
    /// queue: [`JITTER_ALLOWANCE_FACTOR`] times the jitter.
    pub fn allowance(&self) -> Duration {
        self.jitter().mul_f64(JITTER_ALLOWANCE_FACTOR)
    }
}

/// The smallest RTT of each of the last [`BASE_WINDOW_ROUNDS`] rounds, from
/// which Vegas's jitter-robust diff takes its BaseRTT. Under in-order jitter
/// the connection's smallest sample is a deep low tail of the jitter (9 ms
/// under the typical round's floor on issue 36's path, 31 against 40 ms), so
/// round minimum − allowance still sits above it in a tenth of the rounds
/// and diff holds the window there. The recent rounds' floor is the jitter's
/// typical low, but a queue that stands for ten rounds would pass into it
/// and Vegas would grow it without end (60 s on a clean 20 Mb/s path: RTT
/// 42 → 126 ms), so it may lift BaseRTT by at most the jitter allowance:
/// on a clean path, where the allowance is a fraction of a millisecond,
/// BaseRTT is the connection's minimum as in the paper.
#[derive(Clone, Debug, Default)]
pub struct RoundFloors {
    floors: VecDeque<Duration>,
}

impl RoundFloors {
    /// Takes the smallest sample of a round that just ended.
    pub fn push(&mut self, round_min: Duration) {
        self.floors.push_back(round_min);
        if self.floors.len() > BASE_WINDOW_ROUNDS {
            self.floors.pop_front();
        }
    }

    /// BaseRTT for the diff: the recent rounds' floor, no more than
    /// `allowance` above the connection's minimum `base_rtt` and never
    /// below it.
    pub fn base_rtt(&self, base_rtt: Duration, allowance: Duration) -> Duration {
        self.floors
            .iter()
            .min()
            .map_or(base_rtt, |&floor| {
                floor.min(base_rtt.saturating_add(allowance))
            })
            .max(base_rtt)
    }
}

/// What the estimator saw, fed every ACK; the controller asks it for the
/// queueing delay and the backlog.
#[derive(Clone, Debug)]
pub struct QueueDelayEstimator {
    estimate: QueueEstimate,
    reset: BaseRttReset,
    /// BaseRTT: the smallest sample since the last reset (None until one).
    base_rtt: Option<Duration>,
    rounds: RoundTracker,
    /// The smallest sample of the round in progress.
    round_min: Option<Duration>,
    /// The smallest sample of the last completed round.
    last_round_min: Option<Duration>,
    /// Packet-to-packet variation of the samples.
    jitter: JitterMeter,
}

impl QueueDelayEstimator {
    /// An estimator with nothing learnt.
    pub fn new(estimate: QueueEstimate, reset: BaseRttReset) -> Self {
        Self {
            estimate,
            reset,
            base_rtt: None,
            rounds: RoundTracker::default(),
            round_min: None,
            last_round_min: None,
            jitter: JitterMeter::default(),
        }
    }

    /// Takes the ACK's RTT sample, if it has one, and closes the round it
    /// ends. Estimators learn in recovery too: that is how BaseRTT is
    /// relearned after the loss that reset it.
    pub fn on_ack(&mut self, ack: &AckEvent) {
        if ack.rtt_sampled {
            let sample = ack.rtt.latest;
            self.base_rtt = Some(self.base_rtt.map_or(sample, |base| base.min(sample)));
            self.round_min = Some(self.round_min.map_or(sample, |min| min.min(sample)));
            self.jitter.on_sample(sample);
        }
        if self.rounds.on_ack(ack) && self.round_min.is_some() {
            self.last_round_min = self.round_min.take();
        }
    }

    /// A loss (or a window reduction that counts as one): BaseRTT is
    /// forgotten under `at-loss`.
    pub fn on_loss(&mut self) {
        if self.reset == BaseRttReset::AtLoss {
            self.base_rtt = None;
        }
    }

    /// BaseRTT, if known.
    pub fn base_rtt(&self) -> Option<Duration> {
        self.base_rtt
    }

    /// Puts BaseRTT back (undo of a spurious loss).
    pub fn set_base_rtt(&mut self, base_rtt: Option<Duration>) {
        self.base_rtt = base_rtt;
    }

    /// The jitter the estimator has measured (mean absolute step between
    /// consecutive samples).
    pub fn jitter(&self) -> Duration {
        self.jitter.jitter()
    }

    /// The estimator in use.
    pub fn estimate(&self) -> QueueEstimate {
        self.estimate
    }

    /// The RTT the estimate compares with BaseRTT, and the queueing delay,
    /// at smoothed RTT `smoothed`; None while BaseRTT or the RTT is unknown.
    pub fn queueing(&self, smoothed: Duration) -> Option<(Duration, Duration)> {
        let base = self.base_rtt?;
        match self.estimate {
            QueueEstimate::Paper => {
                (!smoothed.is_zero()).then(|| (smoothed, smoothed.saturating_sub(base)))
            }
            QueueEstimate::JitterRobust => {
                let rtt = match (self.last_round_min, self.round_min) {
                    (Some(last), _) => last,
                    (None, Some(current)) => current,
                    (None, None) => return None,
                };
                let queueing = rtt
                    .saturating_sub(base)
                    .saturating_sub(self.jitter.allowance());
                (!rtt.is_zero()).then_some((rtt, queueing))
            }
        }
    }

    /// N = window·queueing/RTT in packets of `mss` bytes (Veno's backlog),
    /// in integer nanoseconds and bytes so that exact inputs give exact
    /// estimates.
    pub fn backlog_packets(&self, window: u64, mss: u64, smoothed: Duration) -> Option<f64> {
        let (rtt, queueing) = self.queueing(smoothed)?;
        let numerator = u128::from(window) * queueing.as_nanos();
        let denominator = rtt.as_nanos() * u128::from(mss.max(1));
        Some(numerator as f64 / denominator as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{ack, ms, rtt, MSS};
    use std::time::Instant;

    /// Feeds one sample per ACK, each ACK of a packet sent `sent_ms` after t0.
    fn feed(est: &mut QueueDelayEstimator, t0: Instant, samples: &[(u64, u64)]) {
        for &(sent_ms, latest_ms) in samples {
            est.on_ack(&ack(
                t0 + ms(sent_ms + latest_ms),
                t0 + ms(sent_ms),
                1,
                rtt(latest_ms, 100),
                0,
            ));
        }
    }

    #[test]
    fn paper_estimate_is_smoothed_minus_base() {
        let t0 = Instant::now();
        let mut est = QueueDelayEstimator::new(QueueEstimate::Paper, BaseRttReset::AtLoss);
        feed(&mut est, t0, &[(0, 70)]);
        // N = 10·(100 − 70)/100 = 3 packets.
        assert_eq!(est.backlog_packets(10 * MSS, MSS, ms(100)), Some(3.0));
    }

    #[test]
    fn jitter_robust_estimate_ignores_jitter_around_an_empty_queue() {
        let t0 = Instant::now();
        let mut est = QueueDelayEstimator::new(QueueEstimate::JitterRobust, BaseRttReset::Never);
        // Samples alternate 40 and 50 ms: steps of 10 ms, no queue. The first
        // ACK closes round 0; the rest (sent before it) stay in round 1 until
        // a packet sent after it is acked.
        let mut samples = vec![(0, 40)];
        for k in 1..40 {
            samples.push((1 + k / 10, if k % 2 == 0 { 40 } else { 50 }));
        }
        feed(&mut est, t0, &samples);
        feed(&mut est, t0, &[(200, 45)]);
        // Round minimum 40 = BaseRTT 40: no queue; the paper's estimate at
        // smoothed 45 ms would read N = 20·5/45 = 2.2.
        assert_eq!(est.backlog_packets(20 * MSS, MSS, ms(45)), Some(0.0));
        assert!(
            est.jitter() > ms(8),
            "learnt ~10 ms steps: {:?}",
            est.jitter()
        );
    }

    #[test]
    fn jitter_robust_estimate_sees_a_standing_queue_on_a_clean_path() {
        let t0 = Instant::now();
        let mut est = QueueDelayEstimator::new(QueueEstimate::JitterRobust, BaseRttReset::Never);
        // BaseRTT 40 ms, then a round whose every sample is 60 ms.
        feed(&mut est, t0, &[(0, 40)]);
        let round: Vec<(u64, u64)> = (0..10).map(|k| (50 + k, 60)).collect();
        feed(&mut est, t0, &round);
        feed(&mut est, t0, &[(200, 60)]);
        // One 20 ms step in the jitter average (20/16 = 1.25 ms), then ten
        // steps of 0: J = 1.25·(15/16)^10 = 0.6554 ms, allowance 3·J =
        // 1.9662 ms; queueing 60 − 40 − 1.9662 = 18.034 ms;
        // N = 30·18.034/60 = 9.017.
        let n = est.backlog_packets(30 * MSS, MSS, ms(60)).unwrap();
        assert!((n - 9.017).abs() < 1e-3, "N = {n}");
    }

    #[test]
    fn round_floors_lift_base_rtt_by_at_most_the_allowance() {
        let mut floors = RoundFloors::default();
        assert_eq!(floors.base_rtt(ms(31), ms(9)), ms(31));
        for floor in [44, 41, 43] {
            floors.push(ms(floor));
        }
        // Recent floor 41 ms, above 31 + 9: capped at 40.
        assert_eq!(floors.base_rtt(ms(31), ms(9)), ms(40));
        // A larger allowance lets the recent floor through.
        assert_eq!(floors.base_rtt(ms(31), ms(12)), ms(41));
        // Clean path: no allowance, the connection's minimum.
        assert_eq!(floors.base_rtt(ms(31), Duration::ZERO), ms(31));
    }

    #[test]
    fn round_floors_forget_rounds_older_than_the_window() {
        let mut floors = RoundFloors::default();
        floors.push(ms(35));
        for _ in 0..BASE_WINDOW_ROUNDS {
            floors.push(ms(42));
        }
        assert_eq!(floors.base_rtt(ms(30), ms(20)), ms(42));
    }

    #[test]
    fn base_rtt_is_forgotten_at_loss_only_under_at_loss() {
        let t0 = Instant::now();
        for (reset, expected) in [
            (BaseRttReset::AtLoss, None),
            (BaseRttReset::Never, Some(ms(40))),
        ] {
            let mut est = QueueDelayEstimator::new(QueueEstimate::Paper, reset);
            feed(&mut est, t0, &[(0, 40)]);
            est.on_loss();
            assert_eq!(est.base_rtt(), expected, "{reset:?}");
        }
    }

    #[test]
    fn rules_round_trip_through_serde_in_kebab_case() {
        assert_eq!(
            serde_json::to_string(&QueueEstimate::JitterRobust).unwrap(),
            "\"jitter-robust\""
        );
        assert_eq!(
            serde_json::from_str::<BaseRttReset>("\"at-loss\"").unwrap(),
            BaseRttReset::AtLoss
        );
        assert_eq!(
            serde_json::from_str::<BaseRttReset>("\"never\"").unwrap(),
            BaseRttReset::Never
        );
    }
}
