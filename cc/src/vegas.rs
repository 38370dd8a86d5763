//! TCP Vegas (Brakmo & Peterson 1995) decomposed into the algorithms A–J of
//! Hengartner, Bolliger & Gross ("TCP Vegas Revisited", INFOCOM 2000, §VI),
//! each switched by one boolean of [`VegasConfig`], with their "Vegas′"
//! fixes (§VII). With every algorithm off the window arithmetic is Reno's
//! with classic slow start (`RenoConfig::hystart` off: Vegas predates
//! HyStart++ and has its own slow-start exit, A), event for event (a unit
//! test replays 10 000 random events against [`crate::Reno`]).
//!
//! ECN: CE marks that start a congestion event cut as a loss does, by the
//! switchable parts that shape a loss's cut (F's 1/4, else 1/2; E's one
//! reduction per window is the recovery module's `new_congestion_event`),
//! and a cut marks confirmed is never undone as spurious.
//!
//! Measurement. Once per round (see `round.rs`) Vegas compares
//! Expected = windowSize/BaseRTT with Actual = rttLen/rtt, where
//! - windowSize is the data in transit when the round-ending ACK arrived
//!   (bytes in flight after it plus the bytes it acknowledged, BSD's
//!   `snd_nxt − snd_una`), without the released code's ack-size term
//!   `min(maxseg − acked, 0)` (Vegas′, §VII-C);
//! - rttLen is the bytes sent since the last evaluation (`on_sent`), and rtt
//!   the mean of the RTT samples taken in the round — or, with
//!   `queue_estimate = jitter-robust` (the default of `--cc vegas`; the
//!   paper's presets `full`, `factorial`, … keep the mean), the round's
//!   smallest sample less three times the measured jitter, never below
//!   BaseRTT (`queue_estimate.rs`): in-order delay jitter otherwise reads
//!   as packets queued, and diff > β shrinks the window every round;
//!   and BaseRTT is then the floor of the last ten rounds, at most the
//!   jitter allowance above the connection's minimum (`RoundFloors`: the
//!   connection's minimum is a deep tail of the jitter, and diff held the
//!   window in a tenth of the rounds: 0.78 → 0.86 of the jitter-free
//!   figure on issue 36's path);
//! - BaseRTT is the smallest RTT sample of the connection: Vegas′ disables
//!   the released code's reset when a round carried one segment (§VII-B);
//! - after a timeout, and on every ACK for data sent before it, the round
//!   restarts, so Actual never counts data sent before the timeout (Vegas′,
//!   §VII-C), and slow start resumes at once (§VII-A).
//!
//! diff = (Expected − Actual)·BaseRTT, in packets, drives A (slow start ends
//! when diff > γ, keeping the window; growth only every other round) and B
//! (diff < α: grow over the next round; diff > β: one packet less at once;
//! else hold). Decisions wait while an ACK is in recovery or app-limited: a
//! round the sender could not fill measures the application, not the path.
//!
//! Algorithms outside the window arithmetic: C, D and E are the recovery
//! module's (`recovery_policy()`); E off means the recovery module reduces
//! the window at every loss event — the paper's baseline is BSD Reno, which
//! halved at every fast retransmit, not RFC 9002's once per round trip. H
//! (three packets back-to-back) is the sender's: reported as the metrics
//! field `burst_limit_packets`. J paces at twice the measured Actual rate
//! through `pacing_rate()`.
//!
//! Vegas does not tell random from congestive loss: every loss is judged
//! `Congestive`. A congestion event that proves spurious is undone: window,
//! ssthresh and the A/B decisions return to their values before it (the
//! round measurement keeps running; a timeout's round restart stays).

mod config;
mod round;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

pub use config::{VegasConfig, VegasPhaseGroup, ALPHA_PACKETS, BETA_PACKETS, GAMMA_PACKETS};
pub use round::RoundEstimate;

use round::Round;

use crate::queue_estimate::{JitterMeter, QueueEstimate, RoundFloors};
use crate::reno::LOSS_REDUCTION;
use crate::{
    slow_start, AckEvent, CongestionControl, EcnEvent, LossEvent, LossVerdict, Metrics,
    RecoveryPolicy, SpuriousCongestionEvent, WindowCore,
};

/// F: the window kept after a recovery, 3/4 (Hengartner et al. §VI-F:
/// "reduction of the congestion window by only 1/4").
pub const QUARTER_REDUCTION: (u64, u64) = (3, 4);
/// G: the window at start and after a timeout, in packets (§VI-G).
pub const TWO_PACKET_WINDOW: u64 = 2;
/// H: the most packets sent back-to-back (§VI-H).
pub const BURST_LIMIT_PACKETS: u64 = 3;
/// I: the slack, in packets, between window and outstanding data beyond
/// which the sender is "not able to keep up" (§VI-I).
pub const KEEP_UP_SLACK_PACKETS: u64 = 2;
/// J: output at most this multiple of the current rate (§VI-J).
pub const SPIKE_RATE_FACTOR: f64 = 2.0;

/// What algorithm B decided for the current round of congestion avoidance.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AvoidanceMode {
    /// Grow linearly, one packet over the round.
    Increase,
    /// Keep the window (after a hold or a one-packet decrease).
    Hold,
}

/// What a spurious congestion event restores beside the window.
#[derive(Clone, Copy, Debug)]
struct VegasUndo {
    slow_start_growing: bool,
    avoidance: AvoidanceMode,
    last_timeout_at: Option<Instant>,
    last_verdict: Option<LossVerdict>,
}

/// The Vegas controller. See the module docs for the rules it follows.
///
/// Metrics fields: `diff_packets`, `expected_bps` and `actual_bps` (bits per
/// second) of the last completed round (0 before the first), `base_rtt_ms`
/// (0 before the first sample), and `burst_limit_packets` (3) when H is on.
#[derive(Debug, Clone)]
pub struct Vegas {
    config: VegasConfig,
    window: WindowCore<u64, VegasUndo>,
    /// BaseRTT: the smallest RTT sample over the connection.
    base_rtt: Option<Duration>,
    round: Round,
    /// Packet-to-packet RTT variation, for the jitter-robust diff.
    jitter: JitterMeter,
    /// The last rounds' RTT floors, for the jitter-robust diff's BaseRTT.
    round_floors: RoundFloors,
    last_estimate: Option<RoundEstimate>,
    /// A: whether this slow-start round may grow the window.
    slow_start_growing: bool,
    /// B: the decision of the last round.
    avoidance: AvoidanceMode,
    /// The last timeout, while ACKs may still acknowledge data sent before
    /// it (Vegas′, §VII-C).
    last_timeout_at: Option<Instant>,
    last_verdict: Option<LossVerdict>,
}

impl Vegas {
    /// A controller for packets of `mss` bytes.
    pub fn new(config: VegasConfig, mss: u64) -> Self {
        let initial_packets = if config.two_packet_windows {
            TWO_PACKET_WINDOW
        } else {
            config.initial_window_packets
        };
        Self {
            window: WindowCore::new(mss, initial_packets),
            config,
            base_rtt: None,
            round: Round::default(),
            jitter: JitterMeter::default(),
            round_floors: RoundFloors::default(),
            last_estimate: None,
            slow_start_growing: true,
            avoidance: AvoidanceMode::Increase,
            last_timeout_at: None,
            last_verdict: None,
        }
    }

    /// The algorithms and thresholds this controller runs with.
    pub fn config(&self) -> &VegasConfig {
        &self.config
    }

    /// What the last completed round measured, if a round has completed
    /// with a BaseRTT and an RTT sample.
    pub fn last_estimate(&self) -> Option<RoundEstimate> {
        self.last_estimate
    }

    /// BaseRTT: the smallest RTT sample of the connection.
    pub fn base_rtt(&self) -> Option<Duration> {
        self.base_rtt
    }

    /// H: the most packets the sender may send back-to-back, when H is on.
    pub fn burst_limit_packets(&self) -> Option<u64> {
        self.config.burst_limit.then_some(BURST_LIMIT_PACKETS)
    }

    fn restart_window(&self) -> u64 {
        let packets = if self.config.two_packet_windows {
            TWO_PACKET_WINDOW
        } else {
            self.config.timeout_window_packets.max(1)
        };
        self.window.packets(packets)
    }

    /// Round bookkeeping for one ACK; evaluates the round it ends.
    fn track_round(&mut self, ack: &AckEvent) {
        if let Some(timeout_at) = self.last_timeout_at {
            if ack.largest_acked_sent_time < timeout_at {
                // Vegas′ (§VII-C): data sent before the timeout must not
                // count in Actual, so the round starts again from here.
                self.round.restart();
                return;
            }
            self.last_timeout_at = None;
        }
        if ack.rtt_sampled {
            self.round.add_sample(ack.rtt.latest);
            self.jitter.on_sample(ack.rtt.latest);
        }
        if !self.round.is_completed_by(ack.largest_acked_sent_time) {
            return;
        }
        let window_size = ack.bytes_in_flight.saturating_add(ack.acked_bytes);
        let allowance = (self.config.queue_estimate == QueueEstimate::JitterRobust)
            .then(|| self.jitter.allowance());
        let mut base_rtt = self.base_rtt;
        if let Some(allowance) = allowance {
            if let Some(round_min) = self.round.rtt_min() {
                self.round_floors.push(round_min);
            }
            base_rtt = base_rtt.map(|base| self.round_floors.base_rtt(base, allowance));
        }
        let Some(estimate) = self
            .round
            .finish(window_size, base_rtt, self.window.mss, allowance)
        else {
            return;
        };
        self.last_estimate = Some(estimate);
        if !ack.in_recovery && !ack.app_limited {
            self.decide(estimate.diff_packets);
        }
    }

    /// Algorithms A and B: the once-per-round decision on diff.
    fn decide(&mut self, diff_packets: f64) {
        let window = &mut self.window;
        if window.cwnd < window.ssthresh {
            if self.config.slow_start_detection {
                if diff_packets > self.config.gamma_packets {
                    // Leave slow start for linear increase/decrease, keeping
                    // the window (Brakmo & Peterson; Linux instead shrinks it
                    // to the round's target + 1).
                    window.ssthresh = window.cwnd;
                    self.avoidance = AvoidanceMode::Increase;
                } else {
                    self.slow_start_growing = !self.slow_start_growing;
                }
            }
        } else if self.config.avoidance_detection {
            if diff_packets < self.config.alpha_packets {
                self.avoidance = AvoidanceMode::Increase;
            } else if diff_packets > self.config.beta_packets {
                let floor = window.minimum();
                if window.cwnd > floor {
                    window.cwnd = window.cwnd.saturating_sub(window.mss).max(floor);
                }
                // Stay in avoidance below the old ssthresh.
                window.ssthresh = window.ssthresh.min(window.cwnd);
                self.avoidance = AvoidanceMode::Hold;
            } else {
                self.avoidance = AvoidanceMode::Hold;
            }
        }
    }

    /// I: the window exceeds the data outstanding when the ACK arrived by
    /// more than two packets.
    fn not_keeping_up(&self, ack: &AckEvent) -> bool {
        let outstanding = ack.bytes_in_flight.saturating_add(ack.acked_bytes);
        self.window.cwnd.saturating_sub(outstanding) > self.window.packets(KEEP_UP_SLACK_PACKETS)
    }

    /// Reno's congestion avoidance, unless algorithm B holds the window.
    fn grow_in_avoidance(&mut self, bytes: u64) {
        if self.config.avoidance_detection && self.avoidance == AvoidanceMode::Hold {
            return;
        }
        self.window.grow_linearly(bytes);
    }
}

impl CongestionControl for Vegas {
    fn on_sent(&mut self, now: Instant, bytes: u64, _bytes_in_flight: u64) {
        self.round.on_sent(now, bytes);
    }

    fn on_ack(&mut self, ack: &AckEvent) {
        if ack.rtt_sampled {
            self.base_rtt = Some(match self.base_rtt {
                Some(base) => base.min(ack.rtt.latest),
                None => ack.rtt.latest,
            });
        }
        self.track_round(ack);
        if !self.window.ack_may_grow(ack) {
            return;
        }
        if self.config.hold_when_not_keeping_up && self.not_keeping_up(ack) {
            return;
        }
        if self.window.cwnd < self.window.ssthresh {
            if self.config.slow_start_detection && !self.slow_start_growing {
                return;
            }
            // Slow start as Reno: never past ssthresh in one step, the rest
            // of the ACK is avoidance credit.
            let (cwnd, rest) = slow_start(self.window.cwnd, self.window.ssthresh, ack.acked_bytes);
            self.window.cwnd = cwnd;
            if rest > 0 {
                self.grow_in_avoidance(rest);
            }
        } else {
            self.grow_in_avoidance(ack.acked_bytes);
        }
    }

    fn on_congestion(&mut self, ev: &LossEvent) -> LossVerdict {
        self.window.save_for_undo(VegasUndo {
            slow_start_growing: self.slow_start_growing,
            avoidance: self.avoidance,
            last_timeout_at: self.last_timeout_at,
            last_verdict: self.last_verdict,
        });
        // F shapes the recovery cut only; a timeout halves ssthresh as Reno.
        let keep = if self.config.quarter_reduction && !ev.persistent {
            QUARTER_REDUCTION
        } else {
            LOSS_REDUCTION
        };
        let restart_window = self.restart_window();
        self.window.reduce(keep, ev.persistent, restart_window);
        self.avoidance = AvoidanceMode::Increase;
        if ev.persistent {
            // Vegas′ (§VII-A, §VII-C): back to exponential opening at once,
            // and a round that counts nothing sent before the timeout.
            self.slow_start_growing = true;
            self.round.restart();
            self.last_timeout_at = Some(ev.now);
        }
        self.last_verdict = Some(LossVerdict::Congestive);
        LossVerdict::Congestive
    }

    fn on_spurious_congestion(&mut self, _ev: &SpuriousCongestionEvent) {
        let Some(undo) = self.window.undo() else {
            return;
        };
        self.slow_start_growing = undo.slow_start_growing;
        self.avoidance = undo.avoidance;
        self.last_timeout_at = undo.last_timeout_at;
        self.last_verdict = undo.last_verdict;
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

    fn ssthresh(&self) -> u64 {
        self.window.ssthresh
    }

    /// J: at most twice the rate the last round measured.
    fn pacing_rate(&self) -> Option<u64> {
        if !self.config.spike_suppression {
            return None;
        }
        let actual = self.last_estimate?.actual_bytes_per_sec;
        (actual > 0.0).then_some((actual * SPIKE_RATE_FACTOR) as u64)
    }

    fn recovery_policy(&self) -> RecoveryPolicy {
        RecoveryPolicy {
            fine_grained_early_retransmit: self.config.fine_grained_retransmit,
            retransmit_on_partial_ack: self.config.retransmit_on_partial_ack,
            one_reduction_per_window: self.config.one_reduction_per_window,
        }
    }

    fn metrics(&self) -> Metrics {
        let estimate = self.last_estimate.unwrap_or(RoundEstimate {
            expected_bytes_per_sec: 0.0,
            actual_bytes_per_sec: 0.0,
            diff_packets: 0.0,
        });
        let mut fields = BTreeMap::new();
        fields.insert("diff_packets".to_string(), estimate.diff_packets);
        fields.insert(
            "expected_bps".to_string(),
            estimate.expected_bytes_per_sec * 8.0,
        );
        fields.insert(
            "actual_bps".to_string(),
            estimate.actual_bytes_per_sec * 8.0,
        );
        fields.insert(
            "base_rtt_ms".to_string(),
            self.base_rtt.map_or(0.0, |d| d.as_secs_f64() * 1000.0),
        );
        if let Some(limit) = self.burst_limit_packets() {
            fields.insert("burst_limit_packets".to_string(), limit as f64);
        }
        Metrics {
            algorithm: "vegas".into(),
            cwnd: self.window.cwnd,
            ssthresh: self.window.ssthresh,
            phase: self.window.phase(),
            last_verdict: self.last_verdict,
            fields,
        }
    }
}
