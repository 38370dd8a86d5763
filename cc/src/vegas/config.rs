//! `VegasConfig`: one switch per algorithm A–J that Hengartner, Bolliger &
//! Gross ("TCP Vegas Revisited", INFOCOM 2000, §VI) separated out of TCP
//! Vegas, the thresholds α, β and γ, and the presets of their 2^k factorial
//! design (§VIII-A), so an experiment can turn whole phases on and off.

use serde::{Deserialize, Serialize};

use crate::queue_estimate::QueueEstimate;
use crate::reno::INITIAL_WINDOW_PACKETS;

/// α: below this many extra packets queued, Vegas grows the window in the
/// next round (Hengartner et al. §VII-D: "α is positive and usually set to 1").
pub const ALPHA_PACKETS: f64 = 1.0;
/// β: above this many extra packets queued, Vegas shrinks the window by one
/// packet (Hengartner et al. §IX-A: "β is positive and usually set to 3").
pub const BETA_PACKETS: f64 = 3.0;
/// γ: above this many extra packets queued, slow start ends (Brakmo &
/// Peterson 1995; DESIGN §6: γ = 1).
pub const GAMMA_PACKETS: f64 = 1.0;

/// Which Vegas algorithms run, and their thresholds. Each boolean is one
/// algorithm of Hengartner et al. §VI; off means "the default TCP Reno
/// behaviour is used" for that algorithm. `Default` is [`VegasConfig::full`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VegasConfig {
    /// A: congestion detection in slow start. The window grows only every
    /// other round, and slow start ends when diff exceeds γ.
    pub slow_start_detection: bool,
    /// B: congestion detection in congestion avoidance. Once per round:
    /// diff < α grows the window linearly over the next round, diff > β
    /// shrinks it by one packet at once, otherwise it is held.
    pub avoidance_detection: bool,
    /// C: more aggressive fast retransmit: on a duplicate ACK, retransmit if
    /// the fine-grained timer of the oldest packet expired. Acts in the
    /// recovery module (`RecoveryPolicy::fine_grained_early_retransmit`).
    pub fine_grained_retransmit: bool,
    /// D: after a retransmission, a non-duplicate ACK may retransmit the next
    /// unacked packet. Acts in the recovery module
    /// (`RecoveryPolicy::retransmit_on_partial_ack`).
    pub retransmit_on_partial_ack: bool,
    /// E: at most one window reduction for several losses in one window.
    /// Acts in the recovery module (`RecoveryPolicy::one_reduction_per_window`).
    /// Off is the paper's BSD Reno: every loss event reduces the window.
    pub one_reduction_per_window: bool,
    /// F: a recovery keeps 3/4 of the window instead of 1/2.
    pub quarter_reduction: bool,
    /// G: a window of two packets at start and after a timeout, instead of
    /// `initial_window_packets` and `timeout_window_packets`.
    pub two_packet_windows: bool,
    /// H: at most three packets sent back-to-back. The sender applies it;
    /// Vegas reports it as the metrics field `burst_limit_packets`.
    pub burst_limit: bool,
    /// I: no window increase while the window exceeds the data outstanding by
    /// more than two packets (the sender is not keeping up).
    pub hold_when_not_keeping_up: bool,
    /// J: spike suppression, output at most twice the current rate, applied
    /// through `pacing_rate()`. Off by default, as in the paper.
    pub spike_suppression: bool,
    /// α, in packets (algorithm B).
    pub alpha_packets: f64,
    /// β, in packets (algorithm B).
    pub beta_packets: f64,
    /// γ, in packets (algorithm A).
    pub gamma_packets: f64,
    /// Initial window in packets when G is off (Reno's setting; the paper's
    /// x-kernel Reno used 1).
    pub initial_window_packets: u64,
    /// Window after a timeout, in packets, when G is off (Reno's setting:
    /// RFC 9002 uses 2, the paper's Reno 1).
    pub timeout_window_packets: u64,
    /// How diff's rtt is taken: `paper` (the mean of the round's samples)
    /// or `jitter-robust` (the round's minimum less a jitter allowance,
    /// never below BaseRTT, with BaseRTT the last ten rounds' floor capped
    /// at the connection's minimum plus that allowance; `queue_estimate.rs`),
    /// so that in-order delay jitter does not read as queued packets.
    pub queue_estimate: QueueEstimate,
}

/// The phases Hengartner et al. cluster the algorithms into for their 2^3
/// factorial design (§VIII-A). H, I and J belong to no group: the factorial
/// design keeps them off.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VegasPhaseGroup {
    /// A (congestion detection) and G (two-packet windows).
    SlowStart,
    /// B (congestion detection).
    CongestionAvoidance,
    /// C (aggressive fast retransmit), D (retransmit on new-data ACK),
    /// E (one reduction per window) and F (cut by 1/4).
    Recovery,
}

impl VegasPhaseGroup {
    /// The three factors of the paper's 2^3 design.
    pub const ALL: [VegasPhaseGroup; 3] = [
        VegasPhaseGroup::SlowStart,
        VegasPhaseGroup::CongestionAvoidance,
        VegasPhaseGroup::Recovery,
    ];
}

impl VegasConfig {
    /// Every algorithm off: Reno's window arithmetic exactly, with Reno's
    /// initial and timeout windows. The recovery module then reduces the
    /// window at every loss event (E off), as the paper's BSD Reno did.
    pub fn all_off() -> Self {
        Self {
            slow_start_detection: false,
            avoidance_detection: false,
            fine_grained_retransmit: false,
            retransmit_on_partial_ack: false,
            one_reduction_per_window: false,
            quarter_reduction: false,
            two_packet_windows: false,
            burst_limit: false,
            hold_when_not_keeping_up: false,
            spike_suppression: false,
            alpha_packets: ALPHA_PACKETS,
            beta_packets: BETA_PACKETS,
            gamma_packets: GAMMA_PACKETS,
            initial_window_packets: INITIAL_WINDOW_PACKETS,
            timeout_window_packets: 2,
            queue_estimate: QueueEstimate::Paper,
        }
    }

    /// Vegas as released: A–I on, J (spike suppression) off by default
    /// (Hengartner et al. §VI).
    pub fn full() -> Self {
        Self {
            slow_start_detection: true,
            avoidance_detection: true,
            fine_grained_retransmit: true,
            retransmit_on_partial_ack: true,
            one_reduction_per_window: true,
            quarter_reduction: true,
            two_packet_windows: true,
            burst_limit: true,
            hold_when_not_keeping_up: true,
            spike_suppression: false,
            ..Self::all_off()
        }
    }

    /// Only the slow-start group on (A, G).
    pub fn slow_start() -> Self {
        Self::all_off().with_group(VegasPhaseGroup::SlowStart, true)
    }

    /// Only the congestion-avoidance group on (B).
    pub fn congestion_avoidance() -> Self {
        Self::all_off().with_group(VegasPhaseGroup::CongestionAvoidance, true)
    }

    /// Only the recovery group on (C, D, E, F).
    pub fn recovery() -> Self {
        Self::all_off().with_group(VegasPhaseGroup::Recovery, true)
    }

    /// One cell of the paper's 2^3 factorial design: each phase group on or
    /// off, H, I and J off. `factorial(true, true, true)` differs from
    /// [`VegasConfig::full`] in H and I.
    pub fn factorial(slow_start: bool, congestion_avoidance: bool, recovery: bool) -> Self {
        Self::all_off()
            .with_group(VegasPhaseGroup::SlowStart, slow_start)
            .with_group(VegasPhaseGroup::CongestionAvoidance, congestion_avoidance)
            .with_group(VegasPhaseGroup::Recovery, recovery)
    }

    /// This configuration with every algorithm of `group` switched `on`.
    pub fn with_group(mut self, group: VegasPhaseGroup, on: bool) -> Self {
        match group {
            VegasPhaseGroup::SlowStart => {
                self.slow_start_detection = on;
                self.two_packet_windows = on;
            }
            VegasPhaseGroup::CongestionAvoidance => {
                self.avoidance_detection = on;
            }
            VegasPhaseGroup::Recovery => {
                self.fine_grained_retransmit = on;
                self.retransmit_on_partial_ack = on;
                self.one_reduction_per_window = on;
                self.quarter_reduction = on;
            }
        }
        self
    }
}

impl Default for VegasConfig {
    /// [`VegasConfig::full`] with the jitter-robust estimate of diff (what
    /// `--cc vegas` runs); the paper's builders (`full`, `factorial`, …)
    /// keep the paper's.
    fn default() -> Self {
        Self {
            queue_estimate: QueueEstimate::JitterRobust,
            ..Self::full()
        }
    }
}
