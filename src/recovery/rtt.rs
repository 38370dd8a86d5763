//! Round-trip time estimation, RFC 9002 §5.

use std::time::Duration;

use sift_cc::RttSample;

/// RFC 9002 §6.2.2: the initial RTT before any sample.
pub const INITIAL_RTT: Duration = Duration::from_millis(333);
/// RFC 9002 §6.1.2 kGranularity: the timer granularity.
pub const GRANULARITY: Duration = Duration::from_millis(1);
/// Longest RTT sample believed; longer ones count as this. Not from an RFC:
/// no path has such a round trip (a sample this long is a suspended process
/// or a caller's clock jump), and the bound keeps everything computed from
/// the estimates — 7·srtt, 4·rttvar, a PTO backed off 2^16 times, `now` plus
/// a timeout — far from `Duration` and `Instant` overflow (found by the
/// `ack_corrupted` fuzz target: an ack after hours of backed-off PTOs made
/// the next PTO deadline overflow `Instant`).
pub const MAX_RTT_SAMPLE: Duration = Duration::from_secs(3600);

/// smoothed_rtt, rttvar, min_rtt and latest_rtt of RFC 9002 §5.
#[derive(Clone, Copy, Debug)]
pub struct RttEstimator {
    latest: Duration,
    smoothed: Duration,
    variance: Duration,
    min: Duration,
    /// The latest and smallest samples controllers see (see
    /// [`RttEstimator::controller_sample`]).
    controller_latest: Duration,
    controller_min: Option<Duration>,
    has_sample: bool,
}

impl RttEstimator {
    /// An estimator that starts from `initial_rtt` (RFC 9002 §5.3).
    pub fn new(initial_rtt: Duration) -> Self {
        Self {
            latest: initial_rtt,
            smoothed: initial_rtt,
            variance: initial_rtt / 2,
            min: initial_rtt,
            controller_latest: initial_rtt,
            controller_min: None,
            has_sample: false,
        }
    }

    /// Folds in a sample. `ack_delay` is the peer's reported delay, already
    /// capped at max_ack_delay by the caller once the handshake is confirmed.
    pub fn update(&mut self, latest: Duration, ack_delay: Duration) {
        let latest = latest.min(MAX_RTT_SAMPLE);
        self.latest = latest;
        if !self.has_sample {
            self.has_sample = true;
            self.min = latest;
            self.smoothed = latest;
            self.variance = latest / 2;
            return;
        }
        self.min = self.min.min(latest);
        // Subtract the peer's delay only if that leaves at least min_rtt: a
        // delay report must never make the path look faster than it is.
        let adjusted = if latest >= self.min.saturating_add(ack_delay) {
            latest - ack_delay
        } else {
            latest
        };
        let deviation = self.smoothed.abs_diff(adjusted);
        self.variance = (self.variance * 3 + deviation) / 4;
        self.smoothed = (self.smoothed * 7 + adjusted) / 8;
    }

    /// A sample for the congestion controller. Usually the RFC 9002 sample
    /// itself; with adaptive reordering, the RTT of the most recently sent
    /// packet an ACK newly acknowledged, taken only if no packet sent
    /// before it is still outstanding (see `Recovery::on_ack_received`).
    pub fn controller_sample(&mut self, latest: Duration) {
        let latest = latest.min(MAX_RTT_SAMPLE);
        self.controller_latest = latest;
        self.controller_min = Some(self.controller_min.map_or(latest, |m| m.min(latest)));
    }

    /// Whether any sample has been taken.
    pub fn has_sample(&self) -> bool {
        self.has_sample
    }

    /// The latest RTT sample (RFC 9002 §5.1 latest_rtt).
    pub fn latest(&self) -> Duration {
        self.latest
    }

    /// The smoothed RTT (RFC 9002 §5.3 smoothed_rtt).
    pub fn smoothed(&self) -> Duration {
        self.smoothed
    }

    /// The RTT variation (RFC 9002 §5.3 rttvar).
    pub fn variance(&self) -> Duration {
        self.variance
    }

    /// The smallest RTT sample (RFC 9002 §5.2 min_rtt).
    pub fn min(&self) -> Duration {
        self.min
    }

    /// The PTO base without max_ack_delay: smoothed + max(4·rttvar, granularity).
    pub fn pto_base(&self) -> Duration {
        self.smoothed + (self.variance * 4).max(GRANULARITY)
    }

    /// Vegas's fine-grained timeout (Brakmo et al.): smoothed + 4·rttvar.
    pub fn fine_grained_timeout(&self) -> Duration {
        self.smoothed + self.variance * 4
    }

    /// The estimates in the form controllers consume: latest and min from
    /// the controller's samples, once there is one.
    pub fn sample(&self) -> RttSample {
        RttSample {
            latest: self.controller_latest,
            min: self.controller_min.unwrap_or(self.min),
            smoothed: self.smoothed,
            variance: self.variance,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn first_sample_sets_everything() {
        let mut rtt = RttEstimator::new(INITIAL_RTT);
        rtt.update(ms(100), ms(10));
        assert_eq!(
            (rtt.smoothed(), rtt.variance(), rtt.min()),
            (ms(100), ms(50), ms(100))
        );
    }

    #[test]
    fn later_samples_are_smoothed_with_ack_delay_removed() {
        let mut rtt = RttEstimator::new(INITIAL_RTT);
        rtt.update(ms(100), ms(0));
        // 140 ≥ min 100 + delay 20 → adjusted 120.
        // rttvar = 3/4·50 + 1/4·|100 − 120| = 37.5 + 5 = 42.5 ms
        // srtt   = 7/8·100 + 1/8·120 = 102.5 ms
        rtt.update(ms(140), ms(20));
        assert_eq!(rtt.variance(), Duration::from_micros(42_500));
        assert_eq!(rtt.smoothed(), Duration::from_micros(102_500));
        assert_eq!(rtt.min(), ms(100));
    }

    #[test]
    fn ack_delay_never_pushes_below_min_rtt() {
        let mut rtt = RttEstimator::new(INITIAL_RTT);
        rtt.update(ms(100), ms(0));
        // 110 < 100 + 20: the delay is ignored, adjusted = 110.
        rtt.update(ms(110), ms(20));
        assert_eq!(rtt.smoothed(), Duration::from_micros(101_250));
    }

    #[test]
    fn samples_longer_than_an_hour_count_as_an_hour() {
        let mut rtt = RttEstimator::new(INITIAL_RTT);
        rtt.update(Duration::from_secs(1 << 40), Duration::MAX);
        assert_eq!(rtt.latest(), MAX_RTT_SAMPLE);
        assert_eq!(rtt.smoothed(), MAX_RTT_SAMPLE);
        // A second huge sample with a huge ack delay: no overflow, and the
        // estimates stay at the bound (srtt = 7/8·1h + 1/8·1h = 1h).
        rtt.update(Duration::MAX, Duration::MAX);
        assert_eq!(rtt.smoothed(), MAX_RTT_SAMPLE);
        assert_eq!(rtt.min(), MAX_RTT_SAMPLE);
    }
}
