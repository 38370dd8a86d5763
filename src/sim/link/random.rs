//! Seeded randomness shared by the link stages: one independent ChaCha
//! stream per stage, and the correlated draw netem's `[CORRELATION]`
//! arguments ask for.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Which stage a random stream belongs to. Each stage draws from its own
/// ChaCha stream (same key, different stream number), so turning one
/// impairment on or off never changes what another one decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stage {
    Loss = 1,
    Corrupt = 2,
    Duplicate = 3,
    Reorder = 4,
    Delay = 5,
    Slot = 6,
    /// Where flipped bits land (kept apart from *whether* a packet is
    /// corrupted, so `corrupt-where` does not change which packets are hit).
    CorruptPlacement = 7,
    /// The AQM's mark and drop rolls (DualPI2).
    Aqm = 8,
}

/// The random stream of `stage` for a link seeded with `seed`.
pub(crate) fn stage_rng(seed: u64, stage: Stage) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stage as u64);
    rng
}

/// A uniform draw in `[0, 1)`.
pub(crate) fn unit(rng: &mut ChaCha8Rng) -> f64 {
    rng.random::<f64>()
}

/// A uniform draw in `(0, 1]`: safe to take the logarithm or a negative power of.
pub(crate) fn unit_open_at_zero(rng: &mut ChaCha8Rng) -> f64 {
    1.0 - rng.random::<f64>()
}

/// Clamps a probability from a config to `0.0..=1.0`; NaN counts as 0.
/// Configs are validated when parsed, but `Link::new` takes any config and
/// must not panic on one built by hand.
pub(crate) fn clamp_probability(p: f64) -> f64 {
    if p.is_nan() {
        0.0
    } else {
        p.clamp(0.0, 1.0)
    }
}

/// A sequence of draws where each draw repeats the previous one with
/// probability `correlation` (ρ) and is fresh otherwise.
///
/// This keeps the marginal distribution exactly (a `loss 10% 50%` link
/// loses 10% of packets) and makes the lag-1 correlation exactly ρ. For a
/// yes/no event with probability p it is the two-state Markov chain
/// P(event | last event) = ρ + (1 − ρ)·p, P(event | last no event) = (1 − ρ)·p,
/// whose mean run of events is 1 / ((1 − ρ)(1 − p)).
///
/// netem instead mixes uniforms, u = (1 − ρ)·fresh + ρ·last, which narrows
/// the distribution and lowers the rate of any event with p < 50% below p;
/// sift does not copy that.
#[derive(Clone, Debug)]
pub(crate) struct Correlated<T> {
    correlation: f64,
    last: Option<T>,
}

impl<T: Copy> Correlated<T> {
    pub(crate) fn new(correlation: f64) -> Self {
        Self {
            correlation: clamp_probability(correlation),
            last: None,
        }
    }

    /// The next draw: the previous value with probability ρ, else `fresh(rng)`.
    pub(crate) fn next(
        &mut self,
        rng: &mut ChaCha8Rng,
        fresh: impl FnOnce(&mut ChaCha8Rng) -> T,
    ) -> T {
        if let Some(last) = self.last {
            if self.correlation > 0.0 && unit(rng) < self.correlation {
                return last;
            }
        }
        let value = fresh(rng);
        self.last = Some(value);
        value
    }
}

/// A correlated yes/no event of probability `probability`.
#[derive(Clone, Debug)]
pub(crate) struct CorrelatedEvent {
    probability: f64,
    draws: Correlated<bool>,
}

impl CorrelatedEvent {
    pub(crate) fn new(probability: f64, correlation: f64) -> Self {
        Self {
            probability: clamp_probability(probability),
            draws: Correlated::new(correlation),
        }
    }

    /// Whether the event happens this time. Never draws when p = 0, so a
    /// disabled impairment consumes no randomness.
    pub(crate) fn happens(&mut self, rng: &mut ChaCha8Rng) -> bool {
        if self.probability <= 0.0 {
            return false;
        }
        let p = self.probability;
        self.draws.next(rng, |rng| unit(rng) < p)
    }
}

/// The number of failures before the first success of independent trials
/// with success probability `p` (geometric distribution on 0, 1, 2, …),
/// drawn by inversion: ⌊ln U / ln(1 − p)⌋. `None` when p = 0 (never).
pub(crate) fn geometric(rng: &mut ChaCha8Rng, p: f64) -> Option<u64> {
    let p = clamp_probability(p);
    if p <= 0.0 {
        return None;
    }
    if p >= 1.0 {
        return Some(0);
    }
    let draw = unit_open_at_zero(rng).ln() / (-p).ln_1p();
    // `as` saturates: an astronomically long gap just means "not soon".
    Some(draw.floor() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_draw_from_independent_streams() {
        let mut loss = stage_rng(9, Stage::Loss);
        let mut corrupt = stage_rng(9, Stage::Corrupt);
        let a: Vec<u64> = (0..4).map(|_| loss.random()).collect();
        let b: Vec<u64> = (0..4).map(|_| corrupt.random()).collect();
        assert_ne!(a, b);
        let mut again = stage_rng(9, Stage::Loss);
        let c: Vec<u64> = (0..4).map(|_| again.random()).collect();
        assert_eq!(a, c, "same seed and stage, same stream");
    }

    #[test]
    fn correlated_event_keeps_its_rate_and_lengthens_runs() {
        // p = 0.2, ρ = 0.6: rate stays 0.2; mean run = 1/((1−ρ)(1−p)) = 1/(0.4·0.8) = 3.125.
        let mut rng = stage_rng(1, Stage::Loss);
        let mut event = CorrelatedEvent::new(0.2, 0.6);
        let n = 200_000;
        let draws: Vec<bool> = (0..n).map(|_| event.happens(&mut rng)).collect();
        let hits = draws.iter().filter(|d| **d).count() as f64;
        // Correlated draws: the variance of the count is inflated by
        // (1+ρ)/(1−ρ) = 4, so σ ≈ sqrt(n·p·(1−p)·4) = sqrt(200000·0.16·4) ≈ 358.
        assert!((hits - 40_000.0).abs() < 5.0 * 358.0, "hits {hits}");
        let runs = draws.windows(2).filter(|w| w[0] && !w[1]).count() as f64;
        let mean_run = hits / runs;
        assert!((mean_run - 3.125).abs() < 0.1, "mean run {mean_run}");
    }

    #[test]
    fn geometric_gap_mean_is_one_over_p_minus_one() {
        // E[failures before success] = (1 − p)/p = 99 for p = 0.01; σ of one
        // draw ≈ sqrt(1−p)/p ≈ 99.5, of the mean of 100 000 draws ≈ 0.31.
        let mut rng = stage_rng(4, Stage::Corrupt);
        let n = 100_000;
        let sum: u64 = (0..n).map(|_| geometric(&mut rng, 0.01).unwrap()).sum();
        let mean = sum as f64 / n as f64;
        assert!((mean - 99.0).abs() < 5.0 * 0.31, "mean {mean}");
        assert_eq!(geometric(&mut rng, 0.0), None);
        assert_eq!(geometric(&mut rng, 1.0), Some(0));
    }
}
