//! Random (non-congestive) loss: netem's three loss generators.
//!
//! - `loss random P [CORR]` (also bare `loss P`): each packet is lost with
//!   probability P, correlated as described in `random.rs`.
//! - `loss state p13 [p31 [p32 [p23 [p14]]]]`: the 4-state Markov chain of
//!   the GI model (Salsano, Ludovici, Ordine, "Definition of a general and
//!   intuitive loss model for packet networks and its implementation in the
//!   Netem module in the Linux kernel", 2010). States: 1 = packet received in
//!   a gap period, 2 = received within a burst, 3 = lost within a burst,
//!   4 = isolated loss in a gap. Defaults as iproute2: p31 = 1 − p13,
//!   p32 = 0, p23 = 1, p14 = 0.
//! - `loss gemodel p [r [1−h [1−k]]]`: Gilbert-Elliott, a good and a bad
//!   state; p = P(good → bad), r = P(bad → good), 1−h = loss probability in
//!   the bad state, 1−k = in the good state. Defaults as iproute2: r = 1 − p,
//!   1−h = 1, 1−k = 0 (the simple Gilbert model).
//!
//! Both Markov models step exactly as the kernel's `loss_4state()` and
//! `loss_gilb_ell()` do: the 4-state chain decides the fate by the state it
//! moves into; Gilbert-Elliott decides the fate by the state the packet
//! finds, then moves.

use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::random::{clamp_probability, unit, CorrelatedEvent};

/// Parameters of netem's 4-state loss model (`loss state`), each a
/// probability in 0.0..=1.0.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FourState {
    /// Gap → burst loss (start of a loss burst).
    pub p13: f64,
    /// Burst loss → gap (end of the burst).
    pub p31: f64,
    /// Burst loss → received within the burst.
    pub p32: f64,
    /// Received within the burst → burst loss.
    pub p23: f64,
    /// Gap → isolated loss.
    pub p14: f64,
}

impl FourState {
    /// The model with only p13 given, and iproute2's defaults for the rest.
    pub fn from_p13(p13: f64) -> Self {
        Self {
            p13,
            p31: 1.0 - p13,
            p32: 0.0,
            p23: 1.0,
            p14: 0.0,
        }
    }

    /// The long-run fraction of packets lost. With π the stationary
    /// distribution, balance gives π₁ : π₂ : π₃ : π₄ =
    /// 1 : p13·p32/(p31·p23) : p13/p31 : p14, and states 3 and 4 lose.
    /// `None` when the chain has no unique stationary distribution.
    pub fn stationary_loss(&self) -> Option<f64> {
        if self.p31 <= 0.0 || (self.p32 > 0.0 && self.p23 <= 0.0) {
            return None;
        }
        let burst_received = if self.p32 > 0.0 {
            self.p13 * self.p32 / (self.p31 * self.p23)
        } else {
            0.0
        };
        let burst_lost = self.p13 / self.p31;
        let isolated = self.p14;
        Some((burst_lost + isolated) / (1.0 + burst_received + burst_lost + isolated))
    }
}

/// Parameters of a Gilbert-Elliott two-state channel, used for loss
/// (`loss gemodel`) and for corruption (`corrupt-gemodel`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GilbertElliott {
    /// P(good → bad) per packet.
    pub p: f64,
    /// P(bad → good) per packet; the mean stay in the bad state is 1/r packets.
    pub r: f64,
    /// Probability a packet is hit in the bad state (1 − h in the model).
    pub one_minus_h: f64,
    /// Probability a packet is hit in the good state (1 − k in the model).
    pub one_minus_k: f64,
}

impl GilbertElliott {
    /// The model with only p given, and iproute2's defaults for the rest
    /// (r = 1 − p, every packet hit in the bad state, none in the good one).
    pub fn from_p(p: f64) -> Self {
        Self {
            p,
            r: 1.0 - p,
            one_minus_h: 1.0,
            one_minus_k: 0.0,
        }
    }

    /// The long-run fraction of packets hit: π_bad = p/(p + r), so
    /// π_bad·(1−h) + (1 − π_bad)·(1−k). `None` if p + r = 0.
    pub fn stationary_rate(&self) -> Option<f64> {
        let total = self.p + self.r;
        if total <= 0.0 {
            return None;
        }
        let bad = self.p / total;
        Some(bad * self.one_minus_h + (1.0 - bad) * self.one_minus_k)
    }
}

/// Which loss generator a link uses.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LossModel {
    /// netem `loss random P [CORR]`: probability and correlation in 0.0..=1.0.
    Bernoulli {
        /// Loss probability.
        probability: f64,
        /// Correlation with the previous packet's fate.
        correlation: f64,
    },
    /// netem `loss state …`.
    FourState(FourState),
    /// netem `loss gemodel …`.
    GilbertElliott(GilbertElliott),
}

impl Default for LossModel {
    fn default() -> Self {
        LossModel::Bernoulli {
            probability: 0.0,
            correlation: 0.0,
        }
    }
}

impl LossModel {
    /// Independent loss with probability `p`.
    pub fn bernoulli(p: f64) -> Self {
        LossModel::Bernoulli {
            probability: p,
            correlation: 0.0,
        }
    }

    /// True if the model never loses a packet.
    pub fn is_none(&self) -> bool {
        matches!(self, LossModel::Bernoulli { probability, .. } if *probability == 0.0)
    }
}

/// A plain probability is independent loss, as in scenario files: lets
/// code written against the old `loss: f64` field say `loss: 0.01.into()`.
impl From<f64> for LossModel {
    fn from(probability: f64) -> Self {
        LossModel::bernoulli(probability)
    }
}

/// Scenario-file form: a plain number is Bernoulli loss (`loss = 0.01`); a
/// table names the model (`loss = { model = "gemodel", p = 0.01, r = 0.3 }`).
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum LossRepr {
    Probability(f64),
    Model(LossTable),
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "model", rename_all = "kebab-case", deny_unknown_fields)]
enum LossTable {
    Random {
        probability: f64,
        #[serde(default)]
        correlation: f64,
    },
    State {
        p13: f64,
        p31: Option<f64>,
        p32: Option<f64>,
        p23: Option<f64>,
        p14: Option<f64>,
    },
    Gemodel {
        p: f64,
        r: Option<f64>,
        one_minus_h: Option<f64>,
        one_minus_k: Option<f64>,
    },
}

impl Serialize for LossModel {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let repr = match *self {
            LossModel::Bernoulli {
                probability,
                correlation: 0.0,
            } => LossRepr::Probability(probability),
            LossModel::Bernoulli {
                probability,
                correlation,
            } => LossRepr::Model(LossTable::Random {
                probability,
                correlation,
            }),
            LossModel::FourState(m) => LossRepr::Model(LossTable::State {
                p13: m.p13,
                p31: Some(m.p31),
                p32: Some(m.p32),
                p23: Some(m.p23),
                p14: Some(m.p14),
            }),
            LossModel::GilbertElliott(m) => LossRepr::Model(LossTable::Gemodel {
                p: m.p,
                r: Some(m.r),
                one_minus_h: Some(m.one_minus_h),
                one_minus_k: Some(m.one_minus_k),
            }),
        };
        repr.serialize(s)
    }
}

impl<'de> Deserialize<'de> for LossModel {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let repr = LossRepr::deserialize(d).map_err(|_| {
            serde::de::Error::custom(
                "loss must be a probability (0.01) or a table with model = \"random\" | \"state\" | \"gemodel\"",
            )
        })?;
        Ok(match repr {
            LossRepr::Probability(p) => LossModel::bernoulli(p),
            LossRepr::Model(LossTable::Random {
                probability,
                correlation,
            }) => LossModel::Bernoulli {
                probability,
                correlation,
            },
            LossRepr::Model(LossTable::State {
                p13,
                p31,
                p32,
                p23,
                p14,
            }) => {
                let d = FourState::from_p13(p13);
                LossModel::FourState(FourState {
                    p13,
                    p31: p31.unwrap_or(d.p31),
                    p32: p32.unwrap_or(d.p32),
                    p23: p23.unwrap_or(d.p23),
                    p14: p14.unwrap_or(d.p14),
                })
            }
            LossRepr::Model(LossTable::Gemodel {
                p,
                r,
                one_minus_h,
                one_minus_k,
            }) => {
                let d = GilbertElliott::from_p(p);
                LossModel::GilbertElliott(GilbertElliott {
                    p,
                    r: r.unwrap_or(d.r),
                    one_minus_h: one_minus_h.unwrap_or(d.one_minus_h),
                    one_minus_k: one_minus_k.unwrap_or(d.one_minus_k),
                })
            }
        })
    }
}

/// A running Gilbert-Elliott chain. Starts in the good state, as the kernel.
#[derive(Clone, Debug)]
pub(crate) struct GilbertElliottChain {
    model: GilbertElliott,
    bad: bool,
}

impl GilbertElliottChain {
    pub(crate) fn new(model: GilbertElliott) -> Self {
        let model = GilbertElliott {
            p: clamp_probability(model.p),
            r: clamp_probability(model.r),
            one_minus_h: clamp_probability(model.one_minus_h),
            one_minus_k: clamp_probability(model.one_minus_k),
        };
        Self { model, bad: false }
    }

    /// Whether this packet is hit. As `loss_gilb_ell()`: first the
    /// transition draw, then the hit draw with the probability of the state
    /// the packet found.
    pub(crate) fn hit(&mut self, rng: &mut ChaCha8Rng) -> bool {
        if self.bad {
            if unit(rng) < self.model.r {
                self.bad = false;
            }
            unit(rng) < self.model.one_minus_h
        } else {
            if unit(rng) < self.model.p {
                self.bad = true;
            }
            unit(rng) < self.model.one_minus_k
        }
    }
}

/// States of the 4-state chain, numbered as in the GI model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GiState {
    /// 1: received, gap period.
    GapReceived,
    /// 2: received, burst period.
    BurstReceived,
    /// 3: lost, burst period.
    BurstLost,
    /// 4: isolated loss, gap period.
    IsolatedLost,
}

/// The loss stage of one link direction.
#[derive(Clone, Debug)]
pub(crate) enum LossProcess {
    Bernoulli(CorrelatedEvent),
    FourState { model: FourState, state: GiState },
    GilbertElliott(GilbertElliottChain),
}

impl LossProcess {
    pub(crate) fn new(model: &LossModel) -> Self {
        match *model {
            LossModel::Bernoulli {
                probability,
                correlation,
            } => LossProcess::Bernoulli(CorrelatedEvent::new(probability, correlation)),
            LossModel::FourState(m) => LossProcess::FourState {
                model: FourState {
                    p13: clamp_probability(m.p13),
                    p31: clamp_probability(m.p31),
                    p32: clamp_probability(m.p32),
                    p23: clamp_probability(m.p23),
                    p14: clamp_probability(m.p14),
                },
                state: GiState::GapReceived,
            },
            LossModel::GilbertElliott(m) => {
                LossProcess::GilbertElliott(GilbertElliottChain::new(m))
            }
        }
    }

    /// Whether the next packet is lost.
    pub(crate) fn lose(&mut self, rng: &mut ChaCha8Rng) -> bool {
        match self {
            LossProcess::Bernoulli(event) => event.happens(rng),
            LossProcess::GilbertElliott(chain) => chain.hit(rng),
            LossProcess::FourState { model, state } => {
                // One draw per packet, compared against cumulative
                // probabilities exactly as `loss_4state()`.
                let draw = unit(rng);
                let (next, lost) = match *state {
                    GiState::GapReceived if draw < model.p14 => (GiState::IsolatedLost, true),
                    GiState::GapReceived if draw < model.p14 + model.p13 => {
                        (GiState::BurstLost, true)
                    }
                    GiState::GapReceived => (GiState::GapReceived, false),
                    GiState::BurstReceived if draw < model.p23 => (GiState::BurstLost, true),
                    GiState::BurstReceived => (GiState::BurstReceived, false),
                    GiState::BurstLost if draw < model.p32 => (GiState::BurstReceived, false),
                    GiState::BurstLost if draw < model.p32 + model.p31 => {
                        (GiState::GapReceived, false)
                    }
                    GiState::BurstLost => (GiState::BurstLost, true),
                    GiState::IsolatedLost => (GiState::GapReceived, false),
                };
                *state = next;
                lost
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::sim::link::random::{stage_rng, Stage};

    /// Mean of `draws` and the standard error of that mean estimated from
    /// `batches` batch means (valid for correlated sequences whose
    /// correlation dies out well within one batch).
    pub(crate) fn mean_and_batch_sigma(draws: &[bool], batches: usize) -> (f64, f64) {
        let n = draws.len();
        let mean = draws.iter().filter(|d| **d).count() as f64 / n as f64;
        let size = n / batches;
        let batch_means: Vec<f64> = draws
            .chunks(size)
            .take(batches)
            .map(|c| c.iter().filter(|d| **d).count() as f64 / c.len() as f64)
            .collect();
        let var =
            batch_means.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / (batches as f64 - 1.0);
        (mean, (var / batches as f64).sqrt())
    }

    /// Lengths of the runs of `true` in `draws`.
    pub(crate) fn run_lengths(draws: &[bool]) -> Vec<usize> {
        let mut runs = Vec::new();
        let mut current = 0;
        for &d in draws {
            if d {
                current += 1;
            } else if current > 0 {
                runs.push(current);
                current = 0;
            }
        }
        runs
    }

    fn draws(model: LossModel, n: usize) -> Vec<bool> {
        let mut rng = stage_rng(21, Stage::Loss);
        let mut process = LossProcess::new(&model);
        (0..n).map(|_| process.lose(&mut rng)).collect()
    }

    #[test]
    fn bernoulli_loses_at_its_rate() {
        // n = 400 000, p = 0.05: σ = sqrt(n·p·(1−p)) ≈ 137.8 packets; allow 5σ.
        let lost = draws(LossModel::bernoulli(0.05), 400_000)
            .iter()
            .filter(|d| **d)
            .count() as f64;
        assert!((lost - 20_000.0).abs() < 5.0 * 137.8, "lost {lost}");
    }

    #[test]
    fn bernoulli_correlation_makes_bursts_longer_at_the_same_rate() {
        // p = 0.1, ρ = 0.5. Rate stays 0.1. Bursts: mean 1/((1−ρ)(1−p)) =
        // 1/(0.5·0.9) ≈ 2.22 packets, against 1/(1−p) ≈ 1.11 uncorrelated.
        // σ of the rate: sqrt(p(1−p)/n · (1+ρ)/(1−ρ)) = sqrt(0.09/400000·3) ≈ 0.00082.
        let n = 400_000;
        let correlated = draws(
            LossModel::Bernoulli {
                probability: 0.1,
                correlation: 0.5,
            },
            n,
        );
        let rate = correlated.iter().filter(|d| **d).count() as f64 / n as f64;
        assert!((rate - 0.1).abs() < 5.0 * 0.00082, "rate {rate}");
        let mean_burst = |d: &[bool]| {
            let runs = run_lengths(d);
            runs.iter().sum::<usize>() as f64 / runs.len() as f64
        };
        let burst = mean_burst(&correlated);
        // ≈ 18 000 bursts, burst σ ≈ sqrt(q)/(1−q) with q = 0.55: ≈ 1.65, mean σ ≈ 0.012.
        assert!((burst - 2.222).abs() < 5.0 * 0.012, "burst {burst}");
        let independent = mean_burst(&draws(LossModel::bernoulli(0.1), n));
        assert!((independent - 1.111).abs() < 0.02, "burst {independent}");
    }

    #[test]
    fn gilbert_elliott_bursts_last_one_over_r_at_the_stationary_rate() {
        // Simple Gilbert (1−h = 1, 1−k = 0): p = 0.01, r = 0.3.
        // Mean burst = 1/r ≈ 3.333; stationary loss = p/(p+r) = 0.01/0.31 ≈ 0.032258.
        let model = GilbertElliott {
            p: 0.01,
            r: 0.3,
            one_minus_h: 1.0,
            one_minus_k: 0.0,
        };
        let n = 1_000_000;
        let d = draws(LossModel::GilbertElliott(model), n);
        let rate = d.iter().filter(|x| **x).count() as f64 / n as f64;
        // Two-state chain, λ = 1 − p − r = 0.69: σ = sqrt(π(1−π)/n·(1+λ)/(1−λ))
        // = sqrt(0.03122/1e6·5.45) ≈ 0.000413.
        assert!((rate - 0.032_258).abs() < 5.0 * 0.000_413, "rate {rate}");
        assert_eq!(model.stationary_rate(), Some(0.01 / 0.31));
        let runs = run_lengths(&d);
        let mean = runs.iter().sum::<usize>() as f64 / runs.len() as f64;
        // ≈ 9 700 bursts of geometric length, σ(L) = sqrt(1−r)/r ≈ 2.79,
        // σ(mean) ≈ 2.79/√9700 ≈ 0.028.
        assert!((mean - 1.0 / 0.3).abs() < 5.0 * 0.028, "mean burst {mean}");
    }

    #[test]
    fn a_plain_probability_converts_to_bernoulli_loss() {
        assert_eq!(LossModel::from(0.25), LossModel::bernoulli(0.25));
        assert!(LossModel::from(0.0).is_none());
    }

    #[test]
    fn gilbert_elliott_defaults_follow_iproute2() {
        let m = GilbertElliott::from_p(0.02);
        assert_eq!((m.r, m.one_minus_h, m.one_minus_k), (0.98, 1.0, 0.0));
    }

    #[test]
    fn four_state_loses_at_its_stationary_rate() {
        let model = FourState {
            p13: 0.05,
            p31: 0.4,
            p32: 0.2,
            p23: 0.3,
            p14: 0.01,
        };
        // π ∝ 1 : 0.05·0.2/(0.4·0.3) : 0.05/0.4 : 0.01 = 1 : 0.08333 : 0.125 : 0.01,
        // loss = (0.125 + 0.01)/1.21833 ≈ 0.110807.
        let expected = model.stationary_loss().unwrap();
        assert!((expected - 0.110_807).abs() < 1e-6);
        let d = draws(LossModel::FourState(model), 1_000_000);
        let (rate, sigma) = mean_and_batch_sigma(&d, 200);
        assert!(sigma < 0.001, "σ {sigma}");
        assert!(
            (rate - expected).abs() < 5.0 * sigma,
            "rate {rate} σ {sigma}"
        );
    }

    #[test]
    fn four_state_defaults_follow_iproute2() {
        // p13 alone: p31 = 1 − p13, so every burst is one packet and the
        // loss rate is p13/(1 + p13)·… = (p13/p31)/(1 + p13/p31) = p13.
        let m = FourState::from_p13(0.1);
        assert_eq!((m.p31, m.p32, m.p23, m.p14), (0.9, 0.0, 1.0, 0.0));
        assert!((m.stationary_loss().unwrap() - 0.1).abs() < 1e-12);
    }

    #[test]
    fn plain_number_deserializes_as_bernoulli_and_tables_name_the_model() {
        #[derive(Deserialize, Serialize)]
        struct Holder {
            loss: LossModel,
        }
        let h: Holder = toml::from_str("loss = 0.01").unwrap();
        assert_eq!(h.loss, LossModel::bernoulli(0.01));
        let h: Holder =
            toml::from_str("loss = { model = \"gemodel\", p = 0.01, r = 0.3 }").unwrap();
        assert_eq!(
            h.loss,
            LossModel::GilbertElliott(GilbertElliott {
                p: 0.01,
                r: 0.3,
                one_minus_h: 1.0,
                one_minus_k: 0.0
            })
        );
        let back: Holder = toml::from_str(&toml::to_string(&h).unwrap()).unwrap();
        assert_eq!(back.loss, h.loss);
        assert!(toml::from_str::<Holder>("loss = { model = \"wobbly\" }").is_err());
        assert_eq!(
            toml::to_string(&Holder {
                loss: LossModel::bernoulli(0.5)
            })
            .unwrap()
            .trim(),
            "loss = 0.5"
        );
    }
}
