//! Westwood's end-to-end bandwidth estimate (Casetti et al. 2002, §2.2):
//! rate samples from the ACK stream, smoothed by a Tustin low-pass filter,
//! with virtual zero samples when the ACKs stop.
//!
//! Pure arithmetic on the times the caller passes: no clock, no timers. The
//! "every τ/m without an ACK" rule is applied lazily: whichever event comes
//! next first inserts the virtual samples whose time has passed.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// How bandwidth samples are taken from the ACK stream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BandwidthSampling {
    /// Westwood (Casetti et al. 2002, §2.2): one sample per ACK,
    /// `b_k = d_k/Δ_k` with `d_k` the bytes the ACK newly acknowledged and
    /// `Δ_k` the time since the previous sample.
    #[default]
    PerAck,
    /// Westwood+ (Mascolo et al. 2004): one sample per round trip, the bytes
    /// acknowledged during the last smoothed RTT divided by that interval;
    /// filtered by the same Tustin filter (DESIGN §6).
    PerRtt,
}

/// The filter step taken for the latest real ACK, kept so that another ACK
/// processed at the same instant can be folded into it.
#[derive(Clone, Copy, Debug)]
struct AckStep {
    estimate_before: f64,
    sample_before: f64,
    delta: Duration,
    delivered_bytes: u64,
    at: Instant,
}

/// The bandwidth estimator: BWE in the paper, `b̂_k`.
///
/// The filter is `b̂_k = α_k·b̂_{k−1} + (1 − α_k)·(b_k + b_{k−1})/2` with
/// `α_k = (2τ − Δ_k)/(2τ + Δ_k)`, starting from `b̂_0 = b_0 = 0`. Virtual zero
/// samples every τ/m after the last ACK bound every Δ_k by τ/m in per-ACK
/// mode, which keeps α_k ≥ (2m − 1)/(2m + 1) > 0. A per-RTT sample can span
/// more than 2τ when the RTT exceeds 2τ; the raw α_k would then be negative
/// and could drive the estimate below zero, so sift clamps α_k at 0 (that
/// sample replaces the estimate by the mean of the last two samples).
#[derive(Clone, Debug)]
pub struct BandwidthEstimator {
    sampling: BandwidthSampling,
    /// τ: 1/τ is the filter's cut-off frequency.
    time_constant: Duration,
    /// τ/m: the spacing of virtual zero samples.
    virtual_sample_interval: Duration,
    /// b̂_k in bytes per second.
    estimate: f64,
    /// b_k, the latest sample (real or virtual), in bytes per second.
    last_sample: f64,
    /// t_k: when the latest sample (real or virtual) was taken; `None` until
    /// the first ACK, which only starts the clock.
    last_sample_at: Option<Instant>,
    /// When the latest ACK arrived: virtual samples sit at this instant plus
    /// multiples of τ/m.
    last_ack_at: Option<Instant>,
    /// Per-ACK mode: the latest real step, for same-instant ACKs.
    last_ack_step: Option<AckStep>,
    /// Per-RTT mode: bytes acknowledged since the latest sample.
    window_bytes: u64,
}

impl BandwidthEstimator {
    /// An empty estimator with filter time constant `time_constant` (τ) and
    /// a virtual zero sample every `time_constant / virtual_sample_divisor`
    /// (τ/m) without ACKs. A zero τ or m is raised to the smallest usable
    /// value; the controller's configuration validation reports it first.
    pub fn new(
        sampling: BandwidthSampling,
        time_constant: Duration,
        virtual_sample_divisor: u32,
    ) -> Self {
        let time_constant = time_constant.max(Duration::from_nanos(1));
        let virtual_sample_interval =
            (time_constant / virtual_sample_divisor.max(1)).max(Duration::from_nanos(1));
        Self {
            sampling,
            time_constant,
            virtual_sample_interval,
            estimate: 0.0,
            last_sample: 0.0,
            last_sample_at: None,
            last_ack_at: None,
            last_ack_step: None,
            window_bytes: 0,
        }
    }

    /// The estimate b̂ in bytes per second, as of the latest event.
    pub fn bytes_per_second(&self) -> f64 {
        self.estimate
    }

    /// An ACK at `now` newly acknowledged `acked_bytes`; `smoothed_rtt` sets
    /// the per-RTT sampling interval.
    pub fn on_ack(&mut self, now: Instant, acked_bytes: u64, smoothed_rtt: Duration) {
        self.advance_to(now);
        let Some(last_sample_at) = self.last_sample_at else {
            // The first ACK has no previous one to measure an interval from:
            // it starts the clock.
            self.last_sample_at = Some(now);
            self.last_ack_at = Some(now);
            return;
        };
        let since_last_sample = now.saturating_duration_since(last_sample_at);
        match self.sampling {
            BandwidthSampling::PerAck => {
                if since_last_sample.is_zero() {
                    self.fold_into_last_step(acked_bytes);
                    return;
                }
                self.last_ack_step = Some(AckStep {
                    estimate_before: self.estimate,
                    sample_before: self.last_sample,
                    delta: since_last_sample,
                    delivered_bytes: acked_bytes,
                    at: now,
                });
                self.filter(rate(acked_bytes, since_last_sample), since_last_sample, now);
                self.last_ack_at = Some(now);
            }
            BandwidthSampling::PerRtt => {
                self.last_ack_at = Some(now);
                self.window_bytes = self.window_bytes.saturating_add(acked_bytes);
                if !since_last_sample.is_zero() && since_last_sample >= smoothed_rtt {
                    let sample = rate(self.window_bytes, since_last_sample);
                    self.filter(sample, since_last_sample, now);
                    self.window_bytes = 0;
                }
            }
        }
    }

    /// A rate sample `rate` (bytes per second) computed by the caller at
    /// `now` — Westwood-A's eligible-rate samples — filtered like an ACK's
    /// own sample, virtual zero samples included. The first sample seeds the
    /// estimate instead of being averaged with a zero (Linux's `tcp_westwood`
    /// does the same): a sender that sets ssthresh from the estimate cannot
    /// wait several τ for it to rise. Another sample at the instant of the
    /// last one is ignored (its interval would be zero).
    pub fn on_rate_sample(&mut self, now: Instant, rate: f64) {
        self.advance_to(now);
        let Some(last_sample_at) = self.last_sample_at else {
            self.estimate = rate;
            self.last_sample = rate;
            self.last_sample_at = Some(now);
            self.last_ack_at = Some(now);
            return;
        };
        let delta = now.saturating_duration_since(last_sample_at);
        self.last_ack_at = Some(now);
        if delta.is_zero() {
            return;
        }
        self.last_ack_step = None;
        self.filter(rate, delta, now);
    }

    /// Applies every virtual zero sample due strictly before `now`: one at
    /// each multiple of τ/m after the latest ACK (Casetti et al. §2.2,
    /// Fig. 1). Idempotent; cheap when nothing is due.
    pub fn advance_to(&mut self, now: Instant) {
        let (Some(anchor), Some(mut last_sample_at)) = (self.last_ack_at, self.last_sample_at)
        else {
            return;
        };
        let interval = self.virtual_sample_interval;
        let since_anchor = now.saturating_duration_since(anchor);
        if since_anchor <= interval {
            return;
        }
        let interval_nanos = interval.as_nanos();
        // Virtual sample j sits at anchor + j·τ/m; j = 1..=due are before now.
        let due = (since_anchor.as_nanos() - 1) / interval_nanos;
        let done = last_sample_at.saturating_duration_since(anchor).as_nanos() / interval_nanos;
        if done >= due {
            return;
        }

        if self.sampling == BandwidthSampling::PerRtt && self.window_bytes > 0 {
            // Close the partial round trip at its last ACK, so the gap
            // itself is measured only by the zero samples.
            let partial = anchor.saturating_duration_since(last_sample_at);
            if !partial.is_zero() {
                self.filter(rate(self.window_bytes, partial), partial, anchor);
                self.window_bytes = 0;
                last_sample_at = anchor;
            }
        }
        self.last_ack_step = None;

        // The first pending zero sample follows the latest real one.
        let first_at = grid_point(anchor, interval_nanos, done + 1, now);
        let first_delta = first_at.saturating_duration_since(last_sample_at);
        self.filter(0.0, first_delta, first_at);
        // Every further one has b_k = b_{k−1} = 0 and Δ = τ/m, so it only
        // scales the estimate: b̂_{k+h} = ((2m−1)/(2m+1))^h·b̂_k (§2.2).
        let remaining = due - done - 1;
        if remaining > 0 {
            let decay = self.alpha(interval);
            self.estimate *= decay.powf(remaining as f64);
            self.last_sample_at = Some(grid_point(anchor, interval_nanos, due, now));
        }
    }

    /// Per-ACK mode: another ACK processed at the instant of the latest
    /// sample. The two are one delivery, so redo the latest step with both
    /// ACKs' bytes (Δ = 0 would make the sample infinite).
    fn fold_into_last_step(&mut self, acked_bytes: u64) {
        let Some(mut step) = self.last_ack_step else {
            // Same instant as the clock-starting first ACK (or a virtual
            // sample): there is no interval to spread these bytes over.
            return;
        };
        step.delivered_bytes = step.delivered_bytes.saturating_add(acked_bytes);
        self.estimate = step.estimate_before;
        self.last_sample = step.sample_before;
        self.filter(rate(step.delivered_bytes, step.delta), step.delta, step.at);
        self.last_ack_step = Some(step);
    }

    /// α_k = (2τ − Δ_k)/(2τ + Δ_k), clamped at 0 for Δ_k > 2τ (see the type
    /// docs).
    fn alpha(&self, delta: Duration) -> f64 {
        let two_tau = 2.0 * self.time_constant.as_secs_f64();
        let delta = delta.as_secs_f64();
        ((two_tau - delta) / (two_tau + delta)).max(0.0)
    }

    /// One Tustin step with sample `b_k` taken `delta` after the previous
    /// one, at `at`.
    fn filter(&mut self, sample: f64, delta: Duration, at: Instant) {
        let alpha = self.alpha(delta);
        self.estimate = alpha * self.estimate + (1.0 - alpha) * (sample + self.last_sample) / 2.0;
        self.last_sample = sample;
        self.last_sample_at = Some(at);
    }
}

/// `bytes` over `interval` in bytes per second; `interval` is non-zero.
fn rate(bytes: u64, interval: Duration) -> f64 {
    bytes as f64 / interval.as_secs_f64()
}

/// `anchor + j·interval`, which the caller knows lies before `now`.
fn grid_point(anchor: Instant, interval_nanos: u128, j: u128, now: Instant) -> Instant {
    let offset = u64::try_from(interval_nanos.saturating_mul(j)).unwrap_or(u64::MAX);
    anchor
        .checked_add(Duration::from_nanos(offset))
        .unwrap_or(now)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TAU: Duration = Duration::from_millis(500);

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn per_ack() -> BandwidthEstimator {
        BandwidthEstimator::new(BandwidthSampling::PerAck, TAU, 2)
    }

    fn assert_close(actual: f64, expected: f64) {
        assert!(
            (actual - expected).abs() < 1e-6 * expected.abs().max(1.0),
            "expected {expected}, got {actual}"
        );
    }

    /// Feeds ACKs of `bytes` every `spacing` for `count` ACKs after `start`;
    /// returns the time of the last one.
    fn feed(
        estimator: &mut BandwidthEstimator,
        start: Instant,
        spacing: Duration,
        count: u32,
        bytes: u64,
        smoothed_rtt: Duration,
    ) -> Instant {
        let mut now = start;
        for _ in 0..count {
            now += spacing;
            estimator.on_ack(now, bytes, smoothed_rtt);
        }
        now
    }

    #[test]
    fn filter_matches_hand_computed_values_for_a_short_sequence() {
        let t0 = Instant::now();
        let mut bwe = per_ack();
        bwe.on_ack(t0, 5_000, ms(100)); // starts the clock, no sample
        assert_eq!(bwe.bytes_per_second(), 0.0);

        // Δ = 50 ms = τ/10: α = (1000 − 50)/(1000 + 50) = 19/21, so
        // b̂_k = 19/21·b̂_{k−1} + 1/21·(b_k + b_{k−1}) (the paper's example).
        // b_1 = 5_000 B / 0.05 s = 100_000 B/s:
        // b̂_1 = 1/21·(100_000 + 0) = 100_000/21
        bwe.on_ack(t0 + ms(50), 5_000, ms(100));
        assert_close(bwe.bytes_per_second(), 100_000.0 / 21.0);
        // b_2 = 100_000: b̂_2 = 19/21·100_000/21 + 1/21·200_000
        //                    = (1_900_000 + 4_200_000)/441 = 6_100_000/441
        bwe.on_ack(t0 + ms(100), 5_000, ms(100));
        assert_close(bwe.bytes_per_second(), 6_100_000.0 / 441.0);
        // b_3 = 10_000/0.05 = 200_000:
        // b̂_3 = 19/21·6_100_000/441 + 1/21·300_000
        //     = (115_900_000 + 132_300_000)/9_261 = 248_200_000/9_261
        bwe.on_ack(t0 + ms(150), 10_000, ms(100));
        assert_close(bwe.bytes_per_second(), 248_200_000.0 / 9_261.0);
        // Δ = 100 ms = τ/5: α = 900/1100 = 9/11, weight (1 − α)/2 = 1/11.
        // b_4 = 10_000/0.1 = 100_000:
        // b̂_4 = 9/11·248_200_000/9_261 + 1/11·(100_000 + 200_000)
        bwe.on_ack(t0 + ms(250), 10_000, ms(100));
        let expected = 9.0 / 11.0 * 248_200_000.0 / 9_261.0 + 300_000.0 / 11.0;
        assert_close(bwe.bytes_per_second(), expected);
    }

    #[test]
    fn estimate_converges_to_a_constant_delivery_rate() {
        // 1_250 B every 10 ms = 125_000 B/s (1 Mb/s). With Δ = 10 ms,
        // α = 990/1010 and the error shrinks by α per ACK: after 10 s (1_000
        // ACKs, 20 τ) it is below α^1000 ≈ e^−20 of the start.
        let t0 = Instant::now();
        let mut bwe = per_ack();
        bwe.on_ack(t0, 1_250, ms(100));
        feed(&mut bwe, t0, ms(10), 1_000, 1_250, ms(100));
        assert_close(bwe.bytes_per_second(), 125_000.0);
    }

    #[test]
    fn estimate_follows_a_step_in_rate_within_a_few_time_constants() {
        let t0 = Instant::now();
        let mut bwe = per_ack();
        bwe.on_ack(t0, 1_250, ms(100));
        // 125_000 B/s for 10 s, converged.
        let step = feed(&mut bwe, t0, ms(10), 1_000, 1_250, ms(100));
        // Rate doubles to 250_000 B/s (2_500 B per 10 ms).
        // After τ/2 (25 ACKs) the low-pass is still well short of it:
        // error ≈ 125_000·α^25 ≈ 125_000·e^−0.5 ≈ 75_800 → b̂ ≈ 174_000.
        let half_tau = feed(&mut bwe, step, ms(10), 25, 2_500, ms(100));
        assert!(bwe.bytes_per_second() < 0.9 * 250_000.0);
        // After 3τ in all (150 ACKs): error ≈ 125_000·e^−3 ≈ 6_200, within
        // 3 % of the new rate.
        feed(&mut bwe, half_tau, ms(10), 125, 2_500, ms(100));
        let estimate = bwe.bytes_per_second();
        assert!(
            estimate > 0.97 * 250_000.0 && estimate < 250_000.0,
            "{estimate}"
        );
    }

    #[test]
    fn virtual_zero_samples_decay_the_estimate_during_an_ack_gap() {
        // Four ACKs 250 ms = τ/2 apart (exactly τ/m: the virtual sample
        // would fall on the ACK's own instant, so none is inserted).
        // α = (1000 − 250)/(1000 + 250) = 3/5, weight 1/5; b_k = 100_000.
        // b̂: 20_000, 52_000, 71_200, 82_720.
        let t0 = Instant::now();
        let mut bwe = per_ack();
        bwe.on_ack(t0, 25_000, ms(100));
        let last = feed(&mut bwe, t0, ms(250), 4, 25_000, ms(100));
        assert_close(bwe.bytes_per_second(), 82_720.0);

        // No ACK for 600 ms: virtual zero samples at +250 and +500 ms.
        // b̂ = 3/5·82_720 + 1/5·(0 + 100_000) = 69_632
        // b̂ = 3/5·69_632 + 1/5·(0 + 0)       = 41_779.2
        bwe.advance_to(last + ms(600));
        assert_close(bwe.bytes_per_second(), 41_779.2);
        // Idempotent: nothing more is due until +750 ms.
        bwe.advance_to(last + ms(700));
        assert_close(bwe.bytes_per_second(), 41_779.2);
        // A long silence decays geometrically, (3/5)^h (§2.2):
        // zero samples at +750 … +2_500 ms are 8 more.
        bwe.advance_to(last + ms(2_600));
        assert_close(bwe.bytes_per_second(), 41_779.2 * 0.6f64.powi(8));

        // The next real ACK measures from the last virtual sample (+2_500):
        // Δ = 50 ms, α = 19/21, b = 5_000/0.05 = 100_000.
        let before = bwe.bytes_per_second();
        bwe.on_ack(last + ms(2_550), 5_000, ms(100));
        assert_close(
            bwe.bytes_per_second(),
            19.0 / 21.0 * before + 100_000.0 / 21.0,
        );
    }

    #[test]
    fn virtual_samples_are_the_same_however_often_the_estimator_is_advanced() {
        let t0 = Instant::now();
        let mut lazy = per_ack();
        let mut eager = per_ack();
        for bwe in [&mut lazy, &mut eager] {
            bwe.on_ack(t0, 25_000, ms(100));
            feed(bwe, t0, ms(250), 4, 25_000, ms(100));
        }
        let last = t0 + ms(1_000);
        for step in 1..=30 {
            eager.advance_to(last + ms(step * 100));
        }
        lazy.advance_to(last + ms(3_000));
        assert_close(eager.bytes_per_second(), lazy.bytes_per_second());
    }

    #[test]
    fn acks_processed_at_one_instant_count_as_one_delivery() {
        let t0 = Instant::now();
        let mut split = per_ack();
        let mut whole = per_ack();
        split.on_ack(t0, 1_000, ms(100));
        whole.on_ack(t0, 1_000, ms(100));
        // 2_000 + 3_000 bytes at t0 + 50 ms, against 5_000 in one ACK.
        split.on_ack(t0 + ms(50), 2_000, ms(100));
        split.on_ack(t0 + ms(50), 3_000, ms(100));
        whole.on_ack(t0 + ms(50), 5_000, ms(100));
        // b = 5_000/0.05 = 100_000: b̂ = 100_000/21 either way.
        assert_close(split.bytes_per_second(), 100_000.0 / 21.0);
        assert_close(whole.bytes_per_second(), 100_000.0 / 21.0);
        assert!(split.bytes_per_second().is_finite());
    }

    #[test]
    fn westwood_plus_takes_one_sample_per_round_trip() {
        let t0 = Instant::now();
        let mut bwe = BandwidthEstimator::new(BandwidthSampling::PerRtt, TAU, 2);
        // The first ACK starts the clock; then 1_000 B every 10 ms: no
        // sample until a full smoothed RTT (100 ms) has passed.
        bwe.on_ack(t0, 1_000, ms(100));
        let nine = feed(&mut bwe, t0, ms(10), 9, 1_000, ms(100));
        assert_eq!(bwe.bytes_per_second(), 0.0);
        // The tenth ACK closes the round trip: b = 10_000 B / 0.1 s =
        // 100_000 B/s, Δ = 100 ms, α = 900/1100 = 9/11, weight 1/11:
        // b̂ = 1/11·(100_000 + 0) = 9_090.909…
        bwe.on_ack(nine + ms(10), 1_000, ms(100));
        assert_close(bwe.bytes_per_second(), 100_000.0 / 11.0);
    }

    #[test]
    fn westwood_plus_converges_to_a_constant_delivery_rate() {
        let t0 = Instant::now();
        let mut bwe = BandwidthEstimator::new(BandwidthSampling::PerRtt, TAU, 2);
        bwe.on_ack(t0, 1_250, ms(100));
        // 125_000 B/s for 10 s: 100 per-RTT samples, each shrinking the
        // error by 9/11: (9/11)^100 ≈ 2e−9.
        feed(&mut bwe, t0, ms(10), 1_000, 1_250, ms(100));
        assert_close(bwe.bytes_per_second(), 125_000.0);
    }

    #[test]
    fn westwood_plus_closes_the_partial_round_trip_before_zero_samples() {
        let t0 = Instant::now();
        let mut bwe = BandwidthEstimator::new(BandwidthSampling::PerRtt, TAU, 2);
        bwe.on_ack(t0, 1_000, ms(100));
        // 5 ACKs of 1_000 B, then silence: at t0 + 50 ms the partial round
        // trip holds 5_000 B over 50 ms = 100_000 B/s.
        let last = feed(&mut bwe, t0, ms(10), 5, 1_000, ms(100));
        bwe.advance_to(last + ms(300));
        // Partial sample: Δ = 50 ms, α = 19/21: b̂ = 100_000/21.
        // Zero sample at +250 ms: Δ = 250 ms, α = 3/5, weight 1/5:
        // b̂ = 3/5·100_000/21 + 1/5·(0 + 100_000)
        assert_close(bwe.bytes_per_second(), 0.6 * 100_000.0 / 21.0 + 20_000.0);
    }

    #[test]
    fn a_round_trip_longer_than_two_time_constants_cannot_drive_the_estimate_negative() {
        // τ = 100 ms but the smoothed RTT is 500 ms: each per-RTT sample has
        // Δ = 500 ms > 2τ, so the raw α = (200 − 500)/(200 + 500) = −3/7.
        // sift clamps it at 0: b̂_k = (b_k + b_{k−1})/2.
        let t0 = Instant::now();
        let rtt = ms(500);
        let mut bwe = BandwidthEstimator::new(BandwidthSampling::PerRtt, ms(100), 2);
        bwe.on_ack(t0, 1_000, rtt);
        // ACKs every 10 ms (under τ/m = 50 ms: no virtual samples).
        // Round trip 1: 50 × 4_000 B / 0.5 s = 400_000 B/s → b̂ = 200_000.
        let end = feed(&mut bwe, t0, ms(10), 50, 4_000, rtt);
        assert_close(bwe.bytes_per_second(), 200_000.0);
        // Round trip 2: 50 × 40 B / 0.5 s = 4_000 B/s → b̂ = 202_000.
        let end = feed(&mut bwe, end, ms(10), 50, 40, rtt);
        assert_close(bwe.bytes_per_second(), 202_000.0);
        // Round trip 3: 4_000 B/s again → b̂ = 4_000. The raw filter would
        // have gone negative here: −3/7·(−3/7·285_714 + 5/7·404_000)
        // + 5/7·8_000 ≈ −65_500.
        feed(&mut bwe, end, ms(10), 50, 40, rtt);
        assert_close(bwe.bytes_per_second(), 4_000.0);
    }
}
