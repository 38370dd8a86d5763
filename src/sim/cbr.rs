//! Constant-bit-rate UDP background traffic, with optional on/off periods.
//! A CBR flow has no connection and no feedback: it sends `packet_size`-byte
//! datagrams at `rate_bps` while "on", and its sink only counts what arrives.
//! Send times are computed from the period start (packet k leaves at
//! start + ⌊k·size·8/rate⌋), so the rate never drifts with rounding.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// When a CBR flow sends.
#[derive(Clone, Debug, PartialEq)]
pub struct CbrSchedule {
    rate_bps: u64,
    packet_size: usize,
    /// Length of an "on" period; `None` = always on.
    on: Option<Duration>,
    /// Length of an "off" period.
    off: Duration,
    stop: Option<Duration>,
    period_start: Duration,
    sent_in_period: u64,
}

impl CbrSchedule {
    /// A schedule starting at virtual offset `start`. `on`/`off` alternate
    /// when both are set and non-zero; sending stops before `stop`.
    pub fn new(
        rate_bps: u64,
        packet_size: usize,
        start: Duration,
        on: Option<Duration>,
        off: Duration,
        stop: Option<Duration>,
    ) -> Self {
        let on = on.filter(|on| !on.is_zero() && !off.is_zero());
        Self {
            rate_bps: rate_bps.max(1),
            packet_size,
            on,
            off,
            stop,
            period_start: start,
            sent_in_period: 0,
        }
    }

    /// The datagram size.
    pub fn packet_size(&self) -> usize {
        self.packet_size
    }

    /// The virtual offset of the next datagram, or `None` once the flow has
    /// stopped. Each call consumes one send slot.
    pub fn next_send(&mut self) -> Option<Duration> {
        loop {
            let bits = u128::from(self.sent_in_period) * self.packet_size as u128 * 8;
            let nanos = bits * 1_000_000_000 / u128::from(self.rate_bps);
            let since_period_start = Duration::from_nanos(u64::try_from(nanos).ok()?);
            if let Some(on) = self.on {
                if since_period_start >= on {
                    self.period_start = self.period_start.checked_add(on + self.off)?;
                    self.sent_in_period = 0;
                    continue;
                }
            }
            let at = self.period_start.checked_add(since_period_start)?;
            if self.stop.is_some_and(|stop| at >= stop) {
                return None;
            }
            self.sent_in_period += 1;
            return Some(at);
        }
    }
}

/// What one CBR flow sent and what arrived (ground truth and receiver view).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CbrCounters {
    /// Packets the source sent.
    pub sent_packets: u64,
    /// Bytes the source sent.
    pub sent_bytes: u64,
    /// Packets that reached the sink.
    pub delivered_packets: u64,
    /// Bytes that reached the sink.
    pub delivered_bytes: u64,
    /// Dropped because the bottleneck queue was full (congestion).
    pub queue_drops: u64,
    /// Dropped by the link's loss model.
    pub random_losses: u64,
    /// Virtual time of the first arrival at the sink, in seconds.
    pub first_arrival_s: Option<f64>,
    /// Virtual time of the last arrival at the sink, in seconds.
    pub last_arrival_s: Option<f64>,
}

impl CbrCounters {
    /// The receive rate: bits that arrived after the first datagram divided by
    /// the time from first to last arrival. For evenly spaced arrivals this is
    /// exactly the rate at which they came in. `None` with fewer than two
    /// arrivals.
    pub fn throughput_bps(&self, packet_size: usize) -> Option<f64> {
        let span = self.last_arrival_s? - self.first_arrival_s?;
        if self.delivered_packets < 2 || span <= 0.0 {
            return None;
        }
        Some((self.delivered_packets - 1) as f64 * packet_size as f64 * 8.0 / span)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(ms: u64) -> Duration {
        Duration::from_millis(ms)
    }

    #[test]
    fn constant_rate_spacing_is_exact() {
        // 1000 bytes at 1 Mb/s: 8000 bits / 1e6 bit/s = 8 ms apart.
        let mut cbr = CbrSchedule::new(1_000_000, 1000, ms(5), None, Duration::ZERO, Some(ms(37)));
        let times: Vec<Duration> = std::iter::from_fn(|| cbr.next_send()).collect();
        assert_eq!(times, [ms(5), ms(13), ms(21), ms(29)]);
    }

    #[test]
    fn fractional_intervals_do_not_drift() {
        // 1000 bytes at 3 Mb/s: 8000/3e6 s = 2.666… ms. Packet 3000 leaves at
        // exactly 3000 · 8000 / 3e6 s = 8 s, not 3000 · ⌊2.666… ms⌋.
        let mut cbr = CbrSchedule::new(3_000_000, 1000, Duration::ZERO, None, Duration::ZERO, None);
        let last = (0..=3000).filter_map(|_| cbr.next_send()).last();
        assert_eq!(last, Some(Duration::from_secs(8)));
    }

    #[test]
    fn on_off_periods_alternate() {
        // 8 ms spacing, on 20 ms (packets at 0, 8, 16), off 30 ms, next period at 50.
        let mut cbr = CbrSchedule::new(
            1_000_000,
            1000,
            Duration::ZERO,
            Some(ms(20)),
            ms(30),
            Some(ms(110)),
        );
        let times: Vec<Duration> = std::iter::from_fn(|| cbr.next_send()).collect();
        assert_eq!(
            times,
            [
                ms(0),
                ms(8),
                ms(16),
                ms(50),
                ms(58),
                ms(66),
                ms(100),
                ms(108)
            ]
        );
    }

    #[test]
    fn receive_rate_of_evenly_spaced_arrivals() {
        let counters = CbrCounters {
            delivered_packets: 11,
            first_arrival_s: Some(1.0),
            last_arrival_s: Some(1.08),
            ..CbrCounters::default()
        };
        // 10 intervals of 1000 bytes in 80 ms: 80_000 bits / 0.08 s = 1 Mb/s.
        let rate = counters.throughput_bps(1000).unwrap();
        assert!((rate - 1_000_000.0).abs() < 1e-6, "{rate}");
    }
}
