//! TCPW-A's eligible rate estimate (ERE) and the two rates persistent
//! non-congestion detection compares: the achieved rate RE and the expected
//! rate ER.
//!
//! - RE: bytes acknowledged over the last smoothed RTT divided by it (the
//!   "rate estimate" of TCPW-CRB, Wang et al. 2002).
//! - ER: cwnd/RTTmin, what the window would deliver on an empty path.
//! - ERE sample: the dispersion of the ACKs received in the last T_k — bytes
//!   acknowledged after the first ACK of that interval, over the time since
//!   that first ACK — with an adaptive interval
//!   `T_k = RTT·(ER − RE)/ER` (ABSE, Wang et al. 2002), bounded to
//!   [RTTmin/8, RTT]. Uncongested, RE keeps up with ER, T_k is short and the
//!   sample is packet-pair-like: the rate at which the path clocks out a
//!   train, above the achieved rate. Congested, T_k grows towards the
//!   queueing delay and the RTT and the sample becomes the train's average
//!   rate, the bottleneck share ("Light congestion: short T_k (packet-pair
//!   like); heavy congestion: long T_k (packet-train like)", the authors'
//!   ICC 2004 slides).
//! - ERE: the samples through Westwood's Tustin filter ([`BandwidthEstimator`],
//!   τ configurable), seeded with the first sample.
//!
//! The lower bound RTTmin/8 is sift's: T_k → 0 would make a sample of one
//! ACK over no time. An eighth of the round trip spans several ACKs at any
//! rate that fills a window of eight packets, and it is the same fraction
//! RFC 9406 uses for a meaningful RTT change.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::westwood::{BandwidthEstimator, BandwidthSampling};

/// The shortest ERE sampling interval is RTTmin divided by this (sift's
/// choice, see the module docs).
pub const MIN_INTERVAL_DIVISOR: u32 = 8;
/// ACK records kept at most, whatever the window (a bound on memory).
const MAX_RECORDS: usize = 65_536;

/// One ACK: when it arrived and the bytes acknowledged up to and with it.
#[derive(Clone, Copy, Debug)]
struct AckRecord {
    at: Instant,
    delivered: u64,
}

/// The eligible rate estimator and its companion rates.
#[derive(Clone, Debug)]
pub struct EligibleRate {
    filter: BandwidthEstimator,
    /// ACKs of about the last RTT, oldest first.
    history: VecDeque<AckRecord>,
    /// Bytes acknowledged so far.
    delivered: u64,
    /// RE as of the last ACK, bytes per second.
    achieved: f64,
    /// T_k of the last sample.
    interval: Duration,
}

impl EligibleRate {
    /// An estimator filtering with time constant `time_constant` (τ) and a
    /// virtual zero sample every τ/`virtual_sample_divisor` without ACKs.
    pub fn new(time_constant: Duration, virtual_sample_divisor: u32) -> Self {
        Self {
            filter: BandwidthEstimator::new(
                BandwidthSampling::PerAck,
                time_constant,
                virtual_sample_divisor,
            ),
            history: VecDeque::new(),
            delivered: 0,
            achieved: 0.0,
            interval: Duration::ZERO,
        }
    }

    /// ERE in bytes per second.
    pub fn bytes_per_second(&self) -> f64 {
        self.filter.bytes_per_second()
    }

    /// RE, the achieved rate over the last RTT, in bytes per second.
    pub fn achieved_rate(&self) -> f64 {
        self.achieved
    }

    /// T_k of the last sample.
    pub fn sampling_interval(&self) -> Duration {
        self.interval
    }

    /// Virtual zero samples up to `now` (no ACKs for τ/m).
    pub fn advance_to(&mut self, now: Instant) {
        self.filter.advance_to(now);
    }

    /// An ACK at `now` acknowledged `acked_bytes` while the window was
    /// `cwnd` bytes; `rtt_min` and `rtt` (smoothed) as the sender knows them.
    pub fn on_ack(
        &mut self,
        now: Instant,
        acked_bytes: u64,
        cwnd: u64,
        rtt_min: Duration,
        rtt: Duration,
    ) {
        self.delivered += acked_bytes;
        self.history.push_back(AckRecord {
            at: now,
            delivered: self.delivered,
        });
        let rtt = rtt.max(rtt_min).max(Duration::from_micros(1));
        // Keep one RTT of ACKs plus the record just before it.
        while self.history.len() > MAX_RECORDS
            || self
                .history
                .get(1)
                .is_some_and(|next| now.saturating_duration_since(next.at) > rtt)
        {
            self.history.pop_front();
        }
        self.achieved = self.achieved_over(now, rtt);
        let expected = cwnd as f64 / rtt_min.max(Duration::from_micros(1)).as_secs_f64();
        let congestion = if expected > 0.0 {
            ((expected - self.achieved) / expected).clamp(0.0, 1.0)
        } else {
            1.0
        };
        let floor = rtt_min / MIN_INTERVAL_DIVISOR;
        self.interval = rtt.mul_f64(congestion).clamp(floor, rtt.max(floor));
        if let Some(sample) = self.dispersion_over(now, self.interval) {
            self.filter.on_rate_sample(now, sample);
        }
    }

    /// RE: bytes acknowledged in (now − rtt, now] over rtt, or over the time
    /// since the first ACK while less than an RTT has been seen.
    fn achieved_over(&self, now: Instant, rtt: Duration) -> f64 {
        let Some(first) = self.history.front() else {
            return 0.0;
        };
        let start = now.checked_sub(rtt);
        let (base, span) = match start {
            Some(start) if first.at <= start => {
                // The last record at or before the window's start.
                let base = self
                    .history
                    .iter()
                    .take_while(|r| r.at <= start)
                    .last()
                    .map_or(first.delivered, |r| r.delivered);
                (base, rtt)
            }
            _ => (first.delivered, now.saturating_duration_since(first.at)),
        };
        if span.is_zero() {
            return 0.0;
        }
        (self.delivered - base) as f64 / span.as_secs_f64()
    }

    /// The ERE sample: the dispersion of the ACKs in (now − interval, now],
    /// or `None` if fewer than two ACKs fall in it.
    fn dispersion_over(&self, now: Instant, interval: Duration) -> Option<f64> {
        let start = now.checked_sub(interval);
        let first = self
            .history
            .iter()
            .find(|r| start.is_none_or(|s| r.at > s))?;
        let span = now.saturating_duration_since(first.at);
        if span.is_zero() {
            return None;
        }
        Some((self.delivered - first.delivered) as f64 / span.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn uncongested_train_is_sampled_over_an_eighth_of_rtt_min_at_its_own_pace() {
        let t0 = Instant::now();
        let mut ere = EligibleRate::new(ms(500), 2);
        // A window of 10_000 bytes, RTTmin = RTT = 100 ms; ACKs of 1_000
        // bytes every 1 ms from t0 (a train at 1 MB/s), then silence.
        for i in 0..10 {
            ere.on_ack(t0 + ms(i), 1_000, 10_000, ms(100), ms(100));
        }
        // Less than an RTT seen: RE = 9_000 bytes after the first ACK over
        // 9 ms = 1 MB/s, above ER = 10_000 B / 0.1 s = 100 kB/s, so T_k sits
        // at its floor RTTmin/8 = 12.5 ms.
        assert_eq!(ere.sampling_interval(), Duration::from_micros(12_500));
        // The first sample (second ACK): 1_000 bytes over 1 ms = 1 MB/s seeds
        // the filter; every later one is also 1 MB/s, so ERE = 1 MB/s, ten
        // times the 100 kB/s the window achieves per round trip.
        assert!((ere.bytes_per_second() - 1_000_000.0).abs() < 1e-6);
    }

    #[test]
    fn congested_path_samples_over_the_queueing_delay() {
        let t0 = Instant::now();
        let mut ere = EligibleRate::new(ms(500), 2);
        // ACKs of 1_000 bytes every 1 ms for 200 ms: RE = 1 MB/s once a full
        // RTT (150 ms) is in the history. Window 150_000 B, RTTmin 100 ms:
        // ER = 1.5 MB/s, so T_k = 150 ms · (1.5 − 1)/1.5 = 50 ms — the
        // queueing delay (RTT − RTTmin).
        for i in 0..=200 {
            ere.on_ack(t0 + ms(i), 1_000, 150_000, ms(100), ms(150));
        }
        assert!((ere.achieved_rate() - 1_000_000.0).abs() < 1e-6);
        let interval = ere.sampling_interval();
        assert!(
            interval.abs_diff(ms(50)) <= Duration::from_nanos(1),
            "{interval:?}"
        );
        // Samples are 1 MB/s throughout: so is the estimate.
        assert!((ere.bytes_per_second() - 1_000_000.0).abs() < 1e-6);
    }

    #[test]
    fn a_silence_before_the_interval_does_not_dilute_the_sample() {
        let t0 = Instant::now();
        let mut ere = EligibleRate::new(ms(500), 2);
        // Two trains of 5 ACKs (1_000 B, 1 ms apart) 50 ms apart, window
        // 10_000 B, RTT 100 ms: T_k = 12.5 ms, so the second train's samples
        // span only its own ACKs: 1 MB/s, as the first train's.
        for i in 0..5 {
            ere.on_ack(t0 + ms(i), 1_000, 10_000, ms(100), ms(100));
        }
        for i in 0..5 {
            ere.on_ack(t0 + ms(50 + i), 1_000, 10_000, ms(100), ms(100));
        }
        // The first ACK of the second train has no partner inside T_k and
        // gives no sample; the filter (seeded at 1 MB/s) sees only 1 MB/s.
        assert!((ere.bytes_per_second() - 1_000_000.0).abs() < 1e-6);
    }
}
