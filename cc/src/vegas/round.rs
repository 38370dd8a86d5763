//! One Vegas measurement round (Hengartner et al. §VII-C, Eqs. 1–2): from the
//! first packet sent after the last evaluation (the marker) until an ACK
//! acknowledges a packet sent at or after it. Over the round it counts the
//! bytes sent (rttLen) and the RTT samples taken; at its end Expected,
//! Actual and diff are computed once, and the next round opens with the next
//! packet sent.

use std::time::{Duration, Instant};

/// What one round measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RoundEstimate {
    /// Expected = windowSize/BaseRTT, bytes per second.
    pub expected_bytes_per_sec: f64,
    /// Actual = rttLen/rtt, bytes per second, with rtt the mean RTT of the
    /// round's samples.
    pub actual_bytes_per_sec: f64,
    /// diff = (Expected − Actual)·BaseRTT, in packets: the extra packets the
    /// connection is estimated to keep queued.
    pub diff_packets: f64,
}

/// The round in progress.
#[derive(Clone, Debug, Default)]
pub(crate) struct Round {
    /// When the marker (the first packet of the round) was sent; None until
    /// a packet is sent after the last evaluation.
    marker_sent_at: Option<Instant>,
    /// rttLen: bytes sent since the last evaluation.
    bytes_sent: u64,
    /// Sum and count of the RTT samples taken while the round was open.
    rtt_sum: Duration,
    rtt_samples: u32,
    /// The smallest RTT sample of the round (the jitter-robust estimate's).
    rtt_min: Option<Duration>,
}

impl Round {
    /// A packet of `bytes` was sent at `now`; the first opens the round.
    pub(crate) fn on_sent(&mut self, now: Instant, bytes: u64) {
        self.marker_sent_at.get_or_insert(now);
        self.bytes_sent = self.bytes_sent.saturating_add(bytes);
    }

    /// An RTT sample from an ACK; counted only while the round is open.
    pub(crate) fn add_sample(&mut self, rtt: Duration) {
        if self.marker_sent_at.is_some() {
            self.rtt_sum = self.rtt_sum.saturating_add(rtt);
            self.rtt_samples = self.rtt_samples.saturating_add(1);
            self.rtt_min = Some(self.rtt_min.map_or(rtt, |min| min.min(rtt)));
        }
    }

    /// Whether acknowledging a packet sent at `acked_sent_at` ends the round
    /// (the marker, or a later packet, was acknowledged).
    pub(crate) fn is_completed_by(&self, acked_sent_at: Instant) -> bool {
        self.marker_sent_at
            .is_some_and(|marker| acked_sent_at >= marker)
    }

    /// The smallest RTT sample of the round so far.
    pub(crate) fn rtt_min(&self) -> Option<Duration> {
        self.rtt_min
    }

    /// Ends the round: the estimate for `window_size` bytes in transit and
    /// BaseRTT `base_rtt` (None without a BaseRTT or an RTT sample), and a
    /// fresh round that opens with the next packet sent. With
    /// `jitter_allowance` the round's rtt is its minimum sample less the
    /// allowance, never below BaseRTT (the jitter-robust estimate); without
    /// it, the mean of its samples (the paper's).
    pub(crate) fn finish(
        &mut self,
        window_size: u64,
        base_rtt: Option<Duration>,
        mss: u64,
        jitter_allowance: Option<Duration>,
    ) -> Option<RoundEstimate> {
        let estimate = self.estimate(window_size, base_rtt, mss, jitter_allowance);
        self.restart();
        estimate
    }

    /// Forgets the round: nothing sent so far counts (Vegas′ after a
    /// timeout, §VII-C).
    pub(crate) fn restart(&mut self) {
        *self = Round::default();
    }

    fn estimate(
        &self,
        window_size: u64,
        base_rtt: Option<Duration>,
        mss: u64,
        jitter_allowance: Option<Duration>,
    ) -> Option<RoundEstimate> {
        let base_ns = base_rtt?.as_nanos() as f64;
        if self.rtt_samples == 0 || base_ns == 0.0 {
            return None;
        }
        let mean_ns = match (jitter_allowance, self.rtt_min) {
            (Some(allowance), Some(min)) => {
                (min.saturating_sub(allowance).as_nanos() as f64).max(base_ns)
            }
            _ => (self.rtt_sum.as_nanos() / u128::from(self.rtt_samples)) as f64,
        };
        if mean_ns == 0.0 {
            return None;
        }
        let window = window_size as f64;
        let sent = self.bytes_sent as f64;
        // (Expected − Actual)·BaseRTT = windowSize − rttLen·BaseRTT/rtt, bytes.
        let diff_bytes = window - sent * base_ns / mean_ns;
        Some(RoundEstimate {
            expected_bytes_per_sec: window * 1e9 / base_ns,
            actual_bytes_per_sec: sent * 1e9 / mean_ns,
            diff_packets: diff_bytes / mss.max(1) as f64,
        })
    }
}
