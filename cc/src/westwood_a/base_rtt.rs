//! The round trip Westwood-A converts rates to windows with: the lowest
//! *average* RTT of any round, rather than the lowest single sample.
//!
//! TCPW-A's eligible window ERE·RTTmin and expected rate ER = cwnd/RTTmin
//! both mean "the path with an empty queue". On a path without delay
//! variation that is RTTmin. On a radio path each packet has its own delay,
//! and RTTmin is the luckiest packet's: with 5 ms of normal jitter on a
//! 40 ms path it sits near 35 ms while an empty queue still gives a 40 ms
//! average. ERE·RTTmin then stays about 12% below a window that fills the
//! path and no more, so agile probing never climbs and every random loss
//! looks congestive (measured: `sift-lab reordering`, Westwood-A at 5 ms of
//! jitter).
//!
//! The fix is the mean RTT of a round, which is what a window waits on, and
//! its minimum over the connection, which is the round with the emptiest
//! queue. Without jitter the two agree with RTTmin to within the
//! serialization of a burst; with jitter the estimate keeps the jitter's
//! mean and drops only queueing. Rounds with fewer than RFC 9406's
//! N_RTT_SAMPLE samples are not trusted (a mean of two samples is one
//! packet's luck again); until a round qualifies, RTTmin stands in.

use std::time::Duration;

use crate::hystart::{MAX_RTT_THRESH, MIN_RTT_DIVISOR, MIN_RTT_THRESH, N_RTT_SAMPLE};

/// The lowest round-mean RTT seen, with the round in progress.
#[derive(Clone, Debug, Default)]
pub struct BaseRtt {
    /// Sum of the current round's samples.
    round_sum: Duration,
    /// Samples in the current round.
    round_samples: u32,
    /// The lowest mean of a completed round with enough samples.
    lowest_round_mean: Option<Duration>,
}

impl BaseRtt {
    /// One RTT sample of the current round.
    pub fn on_sample(&mut self, rtt: Duration) {
        self.round_sum = self.round_sum.saturating_add(rtt);
        self.round_samples += 1;
    }

    /// The current round ended: its mean counts if it had enough samples.
    pub fn on_round_end(&mut self) {
        if self.round_samples >= N_RTT_SAMPLE {
            let mean = self.round_sum / self.round_samples;
            self.lowest_round_mean = Some(self.lowest_round_mean.map_or(mean, |m| m.min(mean)));
        }
        self.round_sum = Duration::ZERO;
        self.round_samples = 0;
    }

    /// Whether the round in progress shows a queue: its mean RTT (over at
    /// least N_RTT_SAMPLE samples) above the lowest round mean by RFC 9406's
    /// threshold, that mean/8 clamped to 4–16 ms. The RFC compares round
    /// minimums; sift compares the means its base RTT is made of, so jitter
    /// is on both sides of the comparison, not only the lucky side. False
    /// until a round has qualified: RTTmin is no baseline on a jittery path.
    pub fn queue_building(&self) -> bool {
        let Some(base) = self.lowest_round_mean else {
            return false;
        };
        if self.round_samples < N_RTT_SAMPLE {
            return false;
        }
        let current = self.round_sum / self.round_samples;
        let threshold = (base / MIN_RTT_DIVISOR).clamp(MIN_RTT_THRESH, MAX_RTT_THRESH);
        current > base + threshold
    }

    /// The base RTT: the lowest round mean, or `rtt_min` before any round
    /// qualified. Never below `rtt_min`.
    pub fn get(&self, rtt_min: Duration) -> Duration {
        self.lowest_round_mean.map_or(rtt_min, |m| m.max(rtt_min))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn jitter_keeps_its_mean_and_queueing_is_dropped() {
        let mut base = BaseRtt::default();
        // No round yet: RTTmin stands in.
        assert_eq!(base.get(ms(35)), ms(35));
        // A round of jittered samples 35..=45 ms (mean 40 ms): the luckiest
        // packet says 35 ms, the path's empty-queue round trip is 40 ms.
        for rtt in [35, 45, 38, 42, 40, 36, 44, 40] {
            base.on_sample(ms(rtt));
        }
        base.on_round_end();
        assert_eq!(base.get(ms(35)), ms(40));
        // A later round with a standing queue (mean 60 ms) changes nothing.
        for _ in 0..10 {
            base.on_sample(ms(60));
        }
        base.on_round_end();
        assert_eq!(base.get(ms(35)), ms(40));
    }

    #[test]
    fn a_queue_shows_when_a_rounds_mean_rises_by_an_eighth() {
        let mut base = BaseRtt::default();
        // No qualified round yet: no baseline, so no queue.
        for _ in 0..20 {
            base.on_sample(ms(200));
        }
        assert!(!base.queue_building());
        base.on_round_end();
        // A 100 ms round, then one whose mean climbs: 100 ms + 100/8 ms is
        // the line, and it takes eight samples to judge.
        for _ in 0..10 {
            base.on_sample(ms(100));
        }
        base.on_round_end();
        for _ in 0..N_RTT_SAMPLE - 1 {
            base.on_sample(ms(113));
        }
        assert!(!base.queue_building());
        base.on_sample(ms(113));
        assert!(base.queue_building());
        // 112 ms is within the line (and the 200 ms round never counted:
        // the baseline is the 100 ms one, min(200, 100)).
        base.on_round_end();
        for _ in 0..10 {
            base.on_sample(ms(112));
        }
        assert!(!base.queue_building());
    }

    #[test]
    fn a_round_with_too_few_samples_is_not_trusted() {
        let mut base = BaseRtt::default();
        for _ in 0..N_RTT_SAMPLE - 1 {
            base.on_sample(ms(50));
        }
        base.on_round_end();
        assert_eq!(base.get(ms(30)), ms(30));
        // The next round starts from nothing: its own eight samples count.
        for _ in 0..N_RTT_SAMPLE {
            base.on_sample(ms(45));
        }
        base.on_round_end();
        assert_eq!(base.get(ms(30)), ms(45));
    }
}
