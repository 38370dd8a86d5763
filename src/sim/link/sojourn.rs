//! Queueing delay: how long each packet waited in the bottleneck queue
//! before the serializer took it (its sojourn time), kept as a histogram
//! with 8 buckets per power of two of microseconds, so any percentile is
//! known within 1/8 (12.5%) in fixed memory.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Sub-buckets per power of two.
const SUB_BUCKETS: u64 = 8;
/// log2(SUB_BUCKETS).
const SUB_BITS: u32 = 3;
/// Enough buckets for any u64 of microseconds.
const BUCKETS: usize = (SUB_BUCKETS as usize) * (64 - SUB_BITS as usize + 1);

/// A histogram of sojourn times.
#[derive(Clone, Debug)]
pub struct QueueDelays {
    counts: Vec<u64>,
    samples: u64,
    max: Duration,
}

impl Default for QueueDelays {
    fn default() -> Self {
        Self {
            counts: vec![0; BUCKETS],
            samples: 0,
            max: Duration::ZERO,
        }
    }
}

/// The bucket of `micros`: exact below 16 µs, then 8 per power of two.
fn bucket(micros: u64) -> usize {
    if micros < 2 * SUB_BUCKETS {
        return micros as usize;
    }
    let exponent = 63 - micros.leading_zeros() - SUB_BITS;
    let mantissa = micros >> exponent; // in SUB_BUCKETS..2·SUB_BUCKETS
    (SUB_BUCKETS * u64::from(exponent + 1) + (mantissa - SUB_BUCKETS)) as usize
}

/// The largest value (µs) that falls in bucket `index`.
fn upper_bound(index: usize) -> u64 {
    let index = index as u64;
    if index < 2 * SUB_BUCKETS {
        return index;
    }
    let exponent = index / SUB_BUCKETS - 1;
    let mantissa = index % SUB_BUCKETS + SUB_BUCKETS;
    let top = u128::from(mantissa + 1) << exponent;
    u64::try_from(top - 1).unwrap_or(u64::MAX)
}

impl QueueDelays {
    /// Counts one packet's sojourn time.
    pub fn record(&mut self, sojourn: Duration) {
        let micros = u64::try_from(sojourn.as_micros()).unwrap_or(u64::MAX);
        if let Some(count) = self.counts.get_mut(bucket(micros)) {
            *count += 1;
        }
        self.samples += 1;
        self.max = self.max.max(sojourn);
    }

    /// Packets counted.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// The `q`-quantile (0..=1) of the sojourn times, rounded up to its
    /// bucket's top (never above the largest seen); `None` before any packet.
    pub fn percentile(&self, q: f64) -> Option<Duration> {
        if self.samples == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.samples as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (index, count) in self.counts.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return Some(Duration::from_micros(upper_bound(index)).min(self.max));
            }
        }
        Some(self.max)
    }

    /// The usual percentiles, for reports.
    pub fn summary(&self) -> QueueDelaySummary {
        let ms = |q: f64| self.percentile(q).map_or(0.0, |d| d.as_secs_f64() * 1e3);
        QueueDelaySummary {
            samples: self.samples,
            p50_ms: ms(0.5),
            p95_ms: ms(0.95),
            p99_ms: ms(0.99),
            max_ms: self.max.as_secs_f64() * 1e3,
        }
    }
}

/// Percentiles of the queueing delay, in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct QueueDelaySummary {
    /// Packets that went through the queue.
    pub samples: u64,
    /// Median.
    pub p50_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Largest.
    pub max_ms: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_their_bounds_contain_their_values() {
        let mut last = 0;
        for micros in (0..5_000u64).chain([1 << 20, (1 << 20) + 1, u64::MAX]) {
            let b = bucket(micros);
            assert!(b < BUCKETS, "{micros}");
            assert!(upper_bound(b) >= micros, "{micros} in {b}");
            if micros < 5_000 {
                assert!(b == last || b == last + 1, "{micros}: {last} -> {b}");
                last = b;
            }
        }
    }

    #[test]
    fn percentiles_are_within_an_eighth_of_the_truth() {
        let mut delays = QueueDelays::default();
        assert_eq!(delays.percentile(0.5), None);
        for ms in 1..=100u64 {
            delays.record(Duration::from_millis(ms));
        }
        // The 95th of 1..=100 ms is 95 ms; the bucket's top is within 12.5%.
        let p95 = delays.percentile(0.95).unwrap().as_secs_f64() * 1e3;
        assert!((95.0..=95.0 * 1.125).contains(&p95), "{p95}");
        assert_eq!(delays.percentile(1.0), Some(Duration::from_millis(100)));
        assert_eq!(delays.summary().samples, 100);
    }
}
