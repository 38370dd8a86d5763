//! Propagation: a fixed delay plus jitter drawn from one of netem's four
//! distributions, optionally correlated from packet to packet.
//!
//! netem approximates its distributions with tables of 4096 quantiles
//! (iproute2 `netem/*.c`), scaled so one unit is σ and clipped to ±4σ
//! (the tables hold `i16` values in units of σ/8192). sift computes the same
//! quantile functions analytically from one seeded uniform draw, with the
//! same clipping:
//!
//! - uniform: μ + σ·(2u − 1), the kernel's fallback when no table is loaded
//!   (and so the default, whatever the man page says about "normal");
//! - normal: μ + σ·Φ⁻¹(u);
//! - pareto (shape a = 3, as iproute2's `pareto.c`): μ + σ·(4/3)·(v^(−1/a) − 3/2)
//!   with v = 1 − u, i.e. a Pareto of mean 0;
//! - paretonormal (iproute2's `paretonormal.c`): μ + σ·(Φ⁻¹(u) + 3·pareto(u))/4,
//!   the quantile functions mixed ¼ normal, ¾ pareto at the same u.
//!
//! A negative total delay is clamped to zero (the kernel sends such a packet
//! at once).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::random::{unit, Correlated};

/// netem's tables clip every quantile to ±4σ: they store `i16` values in
/// units of σ/8192 (`NETEM_DIST_SCALE`, include/uapi/linux/pkt_sched.h), so
/// the largest is 32767/8192 ≈ 4.
pub const DISTRIBUTION_CLIP_SIGMAS: f64 = 32767.0 / 8192.0;

/// Shape of netem's Pareto table (iproute2 `netem/pareto.c`: `a = 3.0`).
pub const PARETO_SHAPE: f64 = 3.0;

/// The shape of the jitter around the mean delay (netem `distribution NAME`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Distribution {
    /// Uniform on [μ − σ, μ + σ): what the kernel does with no table.
    #[default]
    Uniform,
    /// Normal with standard deviation σ.
    Normal,
    /// Heavy right tail: Pareto with shape 3, shifted to mean 0.
    Pareto,
    /// ¼ normal + ¾ pareto quantiles.
    ParetoNormal,
}

impl Distribution {
    /// All distributions, in netem's order.
    pub const ALL: [Distribution; 4] = [
        Distribution::Uniform,
        Distribution::Normal,
        Distribution::Pareto,
        Distribution::ParetoNormal,
    ];

    /// The netem name of the distribution.
    pub fn name(self) -> &'static str {
        match self {
            Distribution::Uniform => "uniform",
            Distribution::Normal => "normal",
            Distribution::Pareto => "pareto",
            Distribution::ParetoNormal => "paretonormal",
        }
    }

    /// The quantile at `u` ∈ [0, 1), in units of σ around a mean of 0,
    /// clipped like netem's tables.
    pub fn quantile(self, u: f64) -> f64 {
        let value = match self {
            Distribution::Uniform => 2.0 * u - 1.0,
            Distribution::Normal => standard_normal_quantile(u),
            Distribution::Pareto => pareto_quantile(u),
            Distribution::ParetoNormal => {
                (standard_normal_quantile(u) + 3.0 * pareto_quantile(u)) / 4.0
            }
        };
        value.clamp(-DISTRIBUTION_CLIP_SIGMAS, DISTRIBUTION_CLIP_SIGMAS)
    }
}

impl fmt::Display for Distribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The name was not one of netem's four distributions.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown distribution {0:?} (expected one of: uniform, normal, pareto, paretonormal)")]
pub struct UnknownDistribution(pub String);

impl FromStr for Distribution {
    type Err = UnknownDistribution;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Distribution::ALL
            .into_iter()
            .find(|d| d.name() == s)
            .ok_or_else(|| UnknownDistribution(s.to_string()))
    }
}

impl Serialize for Distribution {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Distribution {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// iproute2's `pareto.c` table value at `u`: (v^(−1/a) − 1.5)·4/3 with
/// v = 1 − u. The Pareto(x_m = 1, a = 3) has mean 1.5; the 4/3 brings its
/// standard deviation (√3/2) near 1.
fn pareto_quantile(u: f64) -> f64 {
    let v = (1.0 - u).max(f64::MIN_POSITIVE);
    (v.powf(-1.0 / PARETO_SHAPE) - 1.5) * (4.0 / 3.0)
}

/// Φ⁻¹(u), the standard normal quantile, by Acklam's rational
/// approximation (relative error below 1.2·10⁻⁹, far finer than netem's
/// 4096-entry table).
pub fn standard_normal_quantile(u: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    const LOW: f64 = 0.02425;
    if u.is_nan() {
        return 0.0;
    }
    if u <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if u >= 1.0 {
        return f64::INFINITY;
    }
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if u < LOW {
        tail((-2.0 * u.ln()).sqrt())
    } else if u > 1.0 - LOW {
        -tail((-2.0 * (1.0 - u).ln()).sqrt())
    } else {
        let q = u - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// Delay variation around the mean delay (netem `delay TIME JITTER [CORR]
/// [distribution NAME]`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Jitter {
    /// σ: half-width for uniform, standard deviation otherwise.
    pub jitter: Duration,
    /// Packet-to-packet correlation of the delay, 0.0..=1.0.
    pub correlation: f64,
    /// Shape of the variation.
    pub distribution: Distribution,
}

/// The propagation stage of one link direction: draws each packet's
/// one-way delay.
#[derive(Clone, Debug)]
pub(crate) struct Propagation {
    delay: Duration,
    jitter: Jitter,
    draws: Correlated<f64>,
}

impl Propagation {
    pub(crate) fn new(delay: Duration, jitter: Jitter) -> Self {
        Self {
            delay,
            jitter,
            draws: Correlated::new(jitter.correlation),
        }
    }

    /// The delay of the next packet. Draws nothing when there is no jitter.
    pub(crate) fn sample(&mut self, rng: &mut ChaCha8Rng) -> Duration {
        if self.jitter.jitter.is_zero() {
            return self.delay;
        }
        let distribution = self.jitter.distribution;
        let sigmas = self.draws.next(rng, |rng| distribution.quantile(unit(rng)));
        let sigma_ns = self.jitter.jitter.as_nanos() as f64;
        let total_ns = self.delay.as_nanos() as f64 + sigmas * sigma_ns;
        // Negative delays clamp to zero; `as` saturates on absurd values.
        Duration::from_nanos(total_ns.max(0.0).round() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::link::random::{stage_rng, Stage};

    fn moments(distribution: Distribution, n: usize) -> (f64, f64) {
        let mut rng = stage_rng(11, Stage::Delay);
        let samples: Vec<f64> = (0..n)
            .map(|_| distribution.quantile(unit(&mut rng)))
            .collect();
        let mean = samples.iter().sum::<f64>() / n as f64;
        let var = samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        (mean, var.sqrt())
    }

    #[test]
    fn normal_quantile_matches_known_points() {
        // Φ⁻¹(0.975) = 1.959964, Φ⁻¹(0.5) = 0, Φ⁻¹(0.001) = −3.090232.
        assert!((standard_normal_quantile(0.975) - 1.959_964).abs() < 1e-6);
        assert!(standard_normal_quantile(0.5).abs() < 1e-12);
        assert!((standard_normal_quantile(0.001) + 3.090_232).abs() < 1e-6);
    }

    #[test]
    fn distributions_are_centred_with_about_unit_spread() {
        // n = 200 000 draws of a unit-σ variable: the mean's σ ≈ 1/√n ≈ 0.0022.
        let n = 200_000;
        // Uniform on [−1, 1): mean 0, σ = 1/√3 ≈ 0.577.
        let (mean, sd) = moments(Distribution::Uniform, n);
        assert!(
            mean.abs() < 0.012 && (sd - 0.577).abs() < 0.01,
            "{mean} {sd}"
        );
        // Normal clipped at ±4σ: mean 0, σ ≈ 1.
        let (mean, sd) = moments(Distribution::Normal, n);
        assert!(mean.abs() < 0.012 && (sd - 1.0).abs() < 0.01, "{mean} {sd}");
        // Pareto a = 3 shifted by its mean 1.5 and scaled by 4/3: mean 0 before
        // clipping at 4σ; the clipped tail pulls the mean slightly negative.
        let (mean, _) = moments(Distribution::Pareto, n);
        assert!(mean.abs() < 0.05, "pareto mean {mean}");
        let (mean, _) = moments(Distribution::ParetoNormal, n);
        assert!(mean.abs() < 0.05, "paretonormal mean {mean}");
    }

    #[test]
    fn pareto_has_a_heavy_right_tail_and_a_bounded_left_one() {
        // Smallest value at u = 0: (1 − 1.5)·4/3 = −2/3; clipped above at ≈ 4.
        assert!((Distribution::Pareto.quantile(0.0) + 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(
            Distribution::Pareto.quantile(0.999_999),
            DISTRIBUTION_CLIP_SIGMAS
        );
    }

    #[test]
    fn no_jitter_means_the_exact_delay_and_no_draws() {
        let mut rng = stage_rng(1, Stage::Delay);
        let mut fresh = stage_rng(1, Stage::Delay);
        let mut p = Propagation::new(Duration::from_millis(30), Jitter::default());
        assert_eq!(p.sample(&mut rng), Duration::from_millis(30));
        assert_eq!(
            rand::Rng::random::<u64>(&mut rng),
            rand::Rng::random::<u64>(&mut fresh)
        );
    }

    #[test]
    fn uniform_jitter_stays_within_sigma_and_never_goes_negative() {
        let mut rng = stage_rng(2, Stage::Delay);
        let jitter = Jitter {
            jitter: Duration::from_millis(10),
            ..Jitter::default()
        };
        let mut p = Propagation::new(Duration::from_millis(20), jitter);
        for _ in 0..10_000 {
            let d = p.sample(&mut rng);
            assert!(d >= Duration::from_millis(10) && d <= Duration::from_millis(30));
        }
        let mut clipped = Propagation::new(Duration::from_millis(1), jitter);
        assert!((0..10_000).all(|_| clipped.sample(&mut rng) <= Duration::from_millis(11)));
    }
}
