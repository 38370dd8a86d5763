//! A token-bucket pacer: spreads a window's packets over the round trip so a
//! slow-start burst does not overflow a shallow bottleneck queue.
//!
//! The rate is the controller's `pacing_rate()` if it has one, else
//! `PACING_GAIN`·cwnd/srtt (RFC 9002 §7.7 suggests N = 1.25), or
//! `SLOW_START_PACING_GAIN`·cwnd/srtt in slow start (recovery's
//! `slow_start_pacing`). The bucket holds
//! at most `MAX_BURST_PACKETS` packets, so idle periods do not bank credit for
//! a line-rate burst later.

use std::time::{Duration, Instant};

/// RFC 9002 §7.7: pace at N·cwnd/srtt with N slightly above 1, so pacing
/// never limits a window-limited sender.
pub const PACING_GAIN: (u64, u64) = (5, 4);
/// The gain in slow start (Linux's `sk_pacing_ss_ratio`, 200%): the window
/// doubles each round trip, so a round's packets must leave within it.
pub const SLOW_START_PACING_GAIN: (u64, u64) = (2, 1);
/// Largest burst sent back-to-back (quinn and Linux both allow ~10 packets).
pub const MAX_BURST_PACKETS: u64 = 10;

/// Token-bucket pacer in bytes.
#[derive(Clone, Debug)]
pub struct Pacer {
    tokens: u64,
    capacity: u64,
    last_refill: Option<Instant>,
}

impl Pacer {
    /// A pacer for packets of `mss` bytes, starting with a full bucket.
    pub fn new(mss: u64) -> Self {
        let capacity = MAX_BURST_PACKETS * mss;
        Self {
            tokens: capacity,
            capacity,
            last_refill: None,
        }
    }

    /// Limits bursts to `packets` back-to-back (Vegas H: 3 packets).
    pub fn set_burst_limit(&mut self, packets: u64, mss: u64) {
        self.capacity = packets.max(1) * mss;
        self.tokens = self.tokens.min(self.capacity);
    }

    /// Packets are now `new_mss` bytes instead of `old_mss`: the bucket
    /// holds as many packets as before, of the new size.
    pub fn rescale(&mut self, old_mss: u64, new_mss: u64) {
        self.capacity = self.capacity / old_mss.max(1) * new_mss;
        self.tokens = self.tokens.min(self.capacity);
    }

    /// The pacing rate for a window: bytes per second.
    pub fn rate_for(cwnd: u64, srtt: Duration) -> u64 {
        Self::rate_with_gain(cwnd, srtt, PACING_GAIN)
    }

    /// The pacing rate for a window in slow start: bytes per second.
    pub fn slow_start_rate_for(cwnd: u64, srtt: Duration) -> u64 {
        Self::rate_with_gain(cwnd, srtt, SLOW_START_PACING_GAIN)
    }

    fn rate_with_gain(cwnd: u64, srtt: Duration, (num, den): (u64, u64)) -> u64 {
        let srtt_us = srtt.as_micros().max(1) as u64;
        ((cwnd as u128 * num as u128 * 1_000_000) / (den as u128 * srtt_us as u128)) as u64
    }

    fn refill(&mut self, now: Instant, rate: u64) {
        if let Some(last) = self.last_refill {
            let elapsed = now.saturating_duration_since(last);
            let earned = (elapsed.as_nanos() * rate as u128 / 1_000_000_000) as u64;
            if earned == 0 {
                // Too little time for a whole byte: keep `last_refill` so the
                // fraction is not lost.
                return;
            }
            self.tokens = self.tokens.saturating_add(earned).min(self.capacity);
        }
        self.last_refill = Some(now);
    }

    /// When a packet of `bytes` may leave, at `rate` bytes/s. `now` if the
    /// bucket has the tokens.
    pub fn next_send_time(&mut self, now: Instant, bytes: u64, rate: u64) -> Instant {
        if rate == 0 {
            return now;
        }
        self.refill(now, rate);
        let needed = bytes.min(self.capacity);
        if self.tokens >= needed {
            return now;
        }
        let deficit = needed - self.tokens;
        let wait_ns = (deficit as u128 * 1_000_000_000).div_ceil(rate as u128);
        now + Duration::from_nanos(wait_ns as u64)
    }

    /// A packet of `bytes` left at `now`.
    pub fn on_sent(&mut self, now: Instant, bytes: u64, rate: u64) {
        self.refill(now, rate);
        self.tokens = self.tokens.saturating_sub(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burst_then_paced_at_rate() {
        let t0 = Instant::now();
        let mut pacer = Pacer::new(1000);
        let rate = 1_000_000; // 1 MB/s: 1 ms per 1000-byte packet
        for _ in 0..MAX_BURST_PACKETS {
            assert_eq!(pacer.next_send_time(t0, 1000, rate), t0);
            pacer.on_sent(t0, 1000, rate);
        }
        // The bucket is empty: the next packet waits exactly one packet time.
        assert_eq!(
            pacer.next_send_time(t0, 1000, rate),
            t0 + Duration::from_millis(1)
        );
    }

    #[test]
    fn rate_is_gain_times_window_over_rtt() {
        // 1.25 · 100_000 B / 0.1 s = 1_250_000 B/s.
        assert_eq!(
            Pacer::rate_for(100_000, Duration::from_millis(100)),
            1_250_000
        );
    }
}
