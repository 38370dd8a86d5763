//! A token-bucket pacer: spreads a window's packets over the round trip so a
//! slow-start burst does not overflow a shallow bottleneck queue.
//!
//! The rate is the controller's `pacing_rate()` if it has one, else
//! `PACING_GAIN`·cwnd/srtt (RFC 9002 §7.7 suggests N = 1.25), or
//! `SLOW_START_PACING_GAIN`·cwnd/srtt in slow start (recovery's
//! `slow_start_pacing`).
//!
//! The bucket holds one [`BURST_HORIZON`] of the rate, from
//! [`MAX_BURST_PACKETS`] up to [`MAX_SCALED_BURST_PACKETS`] packets (Linux
//! sizes a burst as 1 ms of the rate, quinn as 2 ms, both clamped alike),
//! so idle periods do not bank credit for a line-rate burst later. A bucket
//! of ten packets whatever the rate lost the sender every token earned
//! while a timer overslept: on loopback, at 16 GB/s, ten packets refill in
//! 5 µs, this VM's timer wakes take tens of µs, and a 1 GiB download
//! waited on the pacer 11 600 times, which held it near 90 kB per wake.

use std::time::{Duration, Instant};

/// RFC 9002 §7.7: pace at N·cwnd/srtt with N slightly above 1, so pacing
/// never limits a window-limited sender.
pub const PACING_GAIN: (u64, u64) = (5, 4);
/// The gain in slow start (Linux's `sk_pacing_ss_ratio`, 200%): the window
/// doubles each round trip, so a round's packets must leave within it.
pub const SLOW_START_PACING_GAIN: (u64, u64) = (2, 1);
/// The burst at low rates, in packets (quinn and Linux both allow ~10).
pub const MAX_BURST_PACKETS: u64 = 10;
/// At high rates a burst holds this long's worth of the pacing rate
/// (Linux's `sk_pacing_shift` of 10): longer than a timer oversleeps, so a
/// late wake does not cost the sender its rate.
pub const BURST_HORIZON: Duration = Duration::from_millis(1);
/// The largest burst, in packets (quinn's `MAX_BURST_SIZE`).
pub const MAX_SCALED_BURST_PACKETS: u64 = 256;

/// Token-bucket pacer in bytes.
#[derive(Clone, Debug)]
pub struct Pacer {
    tokens: u64,
    mss: u64,
    /// The burst at low rates, in packets.
    burst_packets: u64,
    /// Whether the burst grows with the rate (no controller limit).
    scaled: bool,
    last_refill: Option<Instant>,
}

impl Pacer {
    /// A pacer for packets of `mss` bytes, starting with a full bucket.
    pub fn new(mss: u64) -> Self {
        Self {
            tokens: MAX_BURST_PACKETS * mss,
            mss,
            burst_packets: MAX_BURST_PACKETS,
            scaled: true,
            last_refill: None,
        }
    }

    /// Limits bursts to `packets` back-to-back whatever the rate (Vegas H:
    /// 3 packets).
    pub fn set_burst_limit(&mut self, packets: u64, mss: u64) {
        self.mss = mss;
        self.burst_packets = packets.max(1);
        self.scaled = false;
        self.tokens = self.tokens.min(self.burst_packets * mss);
    }

    /// Packets are now `new_mss` bytes: the bucket holds as many packets as
    /// before, of the new size.
    pub fn rescale(&mut self, new_mss: u64) {
        self.mss = new_mss.max(1);
        self.tokens = self.tokens.min(self.burst_packets * self.mss);
    }

    /// The bucket's size at `rate` bytes/s.
    fn capacity(&self, rate: u64) -> u64 {
        let floor = self.burst_packets * self.mss;
        if !self.scaled {
            return floor;
        }
        let horizon = (rate as u128 * BURST_HORIZON.as_nanos() / 1_000_000_000) as u64;
        horizon.clamp(floor, MAX_SCALED_BURST_PACKETS * self.mss)
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
            self.tokens = self.tokens.saturating_add(earned).min(self.capacity(rate));
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
        let needed = bytes.min(self.capacity(rate));
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

    /// Packets of `mss` bytes sent back-to-back at `now` before the pacer
    /// asks to wait.
    fn burst_at(pacer: &mut Pacer, now: Instant, mss: u64, rate: u64) -> u64 {
        let mut sent = 0;
        while pacer.next_send_time(now, mss, rate) == now {
            pacer.on_sent(now, mss, rate);
            sent += 1;
        }
        sent
    }

    #[test]
    fn at_high_rates_a_burst_holds_a_millisecond_of_the_rate() {
        let t0 = Instant::now();
        // 100 MB/s: 1 ms is 100 packets of 1000 bytes.
        let mut pacer = Pacer::new(1000);
        assert_eq!(
            burst_at(&mut pacer, t0, 1000, 100_000_000),
            MAX_BURST_PACKETS
        );
        let later = t0 + Duration::from_secs(1);
        assert_eq!(burst_at(&mut pacer, later, 1000, 100_000_000), 100);
        // 10 GB/s: the burst stops at the ceiling.
        let much_later = later + Duration::from_secs(1);
        assert_eq!(
            burst_at(&mut pacer, much_later, 1000, 10_000_000_000),
            MAX_SCALED_BURST_PACKETS
        );
    }

    #[test]
    fn a_controller_burst_limit_holds_at_any_rate() {
        let t0 = Instant::now();
        let mut pacer = Pacer::new(1000);
        pacer.set_burst_limit(3, 1000);
        let later = t0 + Duration::from_secs(1);
        assert_eq!(burst_at(&mut pacer, later, 1000, 10_000_000_000), 3);
    }

    #[test]
    fn a_timer_that_oversleeps_does_not_cost_the_rate() {
        // 16 GB/s in 9000-byte packets (loopback), woken 50 µs after each
        // time the pacer asks for: the bucket must cover the lateness.
        let (mss, rate) = (9000, 16_000_000_000);
        let t0 = Instant::now();
        let mut pacer = Pacer::new(mss);
        let mut now = t0;
        let mut sent = 0;
        for _ in 0..1000 {
            sent += burst_at(&mut pacer, now, mss, rate) * mss;
            now = pacer.next_send_time(now, mss, rate) + Duration::from_micros(50);
        }
        let elapsed = now.duration_since(t0).as_secs_f64();
        let achieved = sent as f64 / elapsed;
        assert!(achieved > 0.9 * rate as f64, "{achieved:.3e} B/s of {rate}");
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
