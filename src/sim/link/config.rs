//! `LinkConfig`: every parameter of one link direction, readable from a
//! scenario-file table or from a `tc netem` string.
//!
//! ```toml
//! # as a table (fields may be omitted; `loss` as a plain number is Bernoulli)
//! forward = { delay_ms = 25, rate_bps = 10_000_000, queue = { packets = 50 }, loss = 0.01 }
//! # or as netem syntax
//! reverse = "delay 25ms rate 10mbit limit 50 loss 1%"
//! ```

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::aqm::Aqm;
use super::corrupt::{CorruptRegion, CorruptionConfig};
use super::delay::Distribution;
use super::duplicate::Correlated;
use super::loss::LossModel;
use super::outage::Outage;
use super::queue::QueueLimit;
use super::rate::Framing;
use super::reorder::Reorder;
use super::slot::Slot;

/// How far the sums of the 4-state model's outgoing probabilities
/// (p13 + p14, p31 + p32) may exceed 1 through rounding: percentages like
/// 30% + 70% need not add to exactly 1.0 in binary.
pub const PROBABILITY_SUM_SLACK: f64 = 1e-9;

/// The smallest `mtu` accepted: every IPv4 link carries 68 bytes (RFC 791).
pub const MIN_MTU: u32 = 68;

/// One step of a [`LinkConfig::rate_steps`] schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateStep {
    /// Bits per second while the step holds.
    pub rate_bps: u64,
    /// How long it holds.
    #[serde(with = "duration_ms")]
    pub duration_ms: Duration,
}

/// One step of a [`LinkConfig::delay_steps`] schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DelayStep {
    /// The propagation delay while the step holds (replaces `delay_ms`).
    #[serde(with = "duration_ms")]
    pub delay_ms: Duration,
    /// How long it holds.
    #[serde(with = "duration_ms")]
    pub duration_ms: Duration,
}

/// The delay in force `since` the epoch of a repeating `steps` schedule.
pub fn delay_at(steps: &[DelayStep], since: Duration) -> Option<Duration> {
    let period: u128 = steps.iter().map(|s| s.duration_ms.as_nanos()).sum();
    if period == 0 {
        return None;
    }
    let mut offset = since.as_nanos() % period;
    for step in steps {
        if offset < step.duration_ms.as_nanos() {
            return Some(step.delay_ms);
        }
        offset -= step.duration_ms.as_nanos();
    }
    None
}

/// The rate in force `since` the epoch of a repeating `steps` schedule.
pub fn rate_at(steps: &[RateStep], since: Duration) -> Option<u64> {
    let period: u128 = steps.iter().map(|s| s.duration_ms.as_nanos()).sum();
    if period == 0 {
        return None;
    }
    let mut offset = since.as_nanos() % period;
    for step in steps {
        if offset < step.duration_ms.as_nanos() {
            return Some(step.rate_bps);
        }
        offset -= step.duration_ms.as_nanos();
    }
    None
}

/// Parameters of one link direction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(remote = "Self", default, deny_unknown_fields)]
pub struct LinkConfig {
    /// One-way propagation delay (netem `delay TIME`).
    #[serde(with = "duration_ms")]
    pub delay_ms: Duration,
    /// Delay variation σ (netem `delay TIME JITTER`); zero = none.
    #[serde(with = "duration_ms")]
    pub jitter_ms: Duration,
    /// Packet-to-packet correlation of the delay (netem `delay TIME JITTER CORR`).
    pub delay_correlation: f64,
    /// Shape of the delay variation (netem `distribution NAME`).
    pub distribution: Distribution,
    /// Each packet keeps its own jittered delay even behind a `rate`, so
    /// jitter wider than the packet spacing reorders (sift's
    /// `jitter-reorder`): what netem does without `rate`, or with the rate
    /// in a separate qdisc (`netem delay 20ms 5ms` over `tbf rate 20mbit`),
    /// and what a radio hop behind the bottleneck does. Off, as netem with
    /// `delay … JITTER rate …` in one qdisc: behind a rate no packet leaves
    /// before the one sent ahead of it. Without a rate jitter reorders either
    /// way (netem's `tfifo` orders packets by their own send times).
    pub jitter_reorders: bool,
    /// Serialization rate in bits per second; `None` = infinitely fast.
    pub rate_bps: Option<u64>,
    /// Link-layer framing charged at the serializer (netem `rate … PACKETOVERHEAD CELLSIZE CELLOVERHEAD`).
    pub framing: Framing,
    /// Drop-tail queue in front of the serializer.
    pub queue: QueueLimit,
    /// Random loss model; a plain number in a scenario file is Bernoulli.
    pub loss: LossModel,
    /// netem's `ecn`: a packet the loss model picks is marked CE instead
    /// of dropped if it is ECN-capable (ECT(0), ECT(1) or CE); a Not-ECT
    /// one is dropped.
    #[serde(default, skip_serializing_if = "is_false")]
    pub ecn: bool,
    /// An active queue manager (CoDel or DualPI2) in place of the
    /// drop-tail discipline at the bottleneck queue; its limit stays
    /// `queue`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aqm: Option<Aqm>,
    /// The path clears the ECN field (sift's `bleach`): every packet
    /// enters the link as Not-ECT, so no stage marks it and a mark made
    /// before this link is lost too.
    #[serde(default, skip_serializing_if = "is_false")]
    pub bleach: bool,
    /// Corruption models and where their flipped bits land.
    pub corrupt: CorruptionConfig,
    /// Duplication probability and correlation (netem `duplicate`).
    pub duplicate: Correlated,
    /// Reordering (netem `reorder … gap`); needs a delay.
    pub reorder: Option<Reorder>,
    /// Slotted delivery (netem `slot`).
    pub slot: Option<Slot>,
    /// Periodic outages (sift's `outage EVERY DURATION`).
    pub outage: Option<Outage>,
    /// Periodic stalls (sift's `stall EVERY DURATION`): the serializer
    /// sends nothing for DURATION every EVERY, and packets wait in the
    /// queue (which may overflow) until it ends — a handover or a deep
    /// fade on a radio that retransmits below IP, which delays packets
    /// rather than losing them. Same windows as `outage`.
    pub stall: Option<Outage>,
    /// A rate that changes over time (sift's `rate-steps RATE DURATION
    /// …`): each step's rate holds for its duration, the list repeating
    /// from the link's epoch, as a cellular scheduler's share moves. A
    /// packet is serialized at the rate in force when it starts. Sets
    /// `rate_bps` to the first step's rate (so the link keeps order as
    /// any rate-limited one).
    pub rate_steps: Vec<RateStep>,
    /// A propagation delay that changes over time: each step's delay
    /// replaces `delay_ms` (jitter still adds) for its duration, the list
    /// repeating from the link's epoch — a LEO satellite handing over to
    /// another, whose path is longer or shorter. A packet takes the delay
    /// in force when it leaves the serializer; on a rate-limited link
    /// packets keep their order (a shorter step waits behind a longer).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delay_steps: Vec<DelayStep>,
    /// Seed for this link's randomness; overrides the seed given to `Link::new`.
    pub seed: Option<u64>,
    /// The largest IP packet the link carries, bytes (sift's `mtu BYTES`):
    /// a datagram whose UDP payload plus the IP and UDP headers
    /// (`Link::set_ip_headers`, IPv4's 28 by default) exceeds it is
    /// dropped, as a router with Don't Fragment set drops it (no ICMP is
    /// modelled: path MTU discovery must find it by probing). `None`: no
    /// limit.
    pub mtu: Option<u32>,
}

impl Default for LinkConfig {
    fn default() -> Self {
        Self {
            delay_ms: Duration::from_millis(10),
            ..Self::ideal()
        }
    }
}

impl LinkConfig {
    /// A link that changes nothing: no delay, no rate limit, a 1000-packet
    /// queue (netem's default `limit`), no impairment. The starting point of
    /// a netem spec; `Default` instead has a 10 ms delay.
    pub fn ideal() -> Self {
        Self {
            delay_ms: Duration::ZERO,
            jitter_ms: Duration::ZERO,
            delay_correlation: 0.0,
            distribution: Distribution::Uniform,
            jitter_reorders: false,
            rate_bps: None,
            framing: Framing::default(),
            queue: QueueLimit::default(),
            loss: LossModel::default(),
            ecn: false,
            aqm: None,
            bleach: false,
            corrupt: CorruptionConfig::default(),
            duplicate: Correlated::default(),
            reorder: None,
            slot: None,
            outage: None,
            stall: None,
            rate_steps: Vec::new(),
            delay_steps: Vec::new(),
            seed: None,
            mtu: None,
        }
    }

    /// Checks every parameter is in range and the combination makes sense.
    pub fn validate(&self) -> Result<(), LinkConfigError> {
        let probability = |field: &'static str, value: f64| {
            if (0.0..=1.0).contains(&value) {
                Ok(())
            } else {
                Err(LinkConfigError::Probability { field, value })
            }
        };
        let invalid = |field: &'static str, reason: &str| {
            Err(LinkConfigError::Invalid {
                field,
                reason: reason.to_string(),
            })
        };
        probability("delay_correlation", self.delay_correlation)?;
        if self.jitter_ms.is_zero() {
            if self.delay_correlation != 0.0 {
                return invalid("delay_correlation", "needs jitter_ms > 0");
            }
            if self.distribution != Distribution::Uniform {
                return invalid("distribution", "needs jitter_ms > 0");
            }
            if self.jitter_reorders {
                return invalid("jitter_reorders", "needs jitter_ms > 0");
            }
        }
        if self.mtu.is_some_and(|mtu| mtu < MIN_MTU) {
            return invalid("mtu", "must be at least 68 bytes (RFC 791's minimum)");
        }
        if self.rate_bps == Some(0) {
            return invalid("rate_bps", "must be > 0 (omit it for an unlimited rate)");
        }
        match self.loss {
            LossModel::Bernoulli {
                probability: p,
                correlation,
            } => {
                probability("loss.probability", p)?;
                probability("loss.correlation", correlation)?;
            }
            LossModel::FourState(m) => {
                probability("loss.p13", m.p13)?;
                probability("loss.p31", m.p31)?;
                probability("loss.p32", m.p32)?;
                probability("loss.p23", m.p23)?;
                probability("loss.p14", m.p14)?;
                if m.p13 + m.p14 > 1.0 + PROBABILITY_SUM_SLACK {
                    return invalid("loss", "p13 + p14 must not exceed 1");
                }
                if m.p31 + m.p32 > 1.0 + PROBABILITY_SUM_SLACK {
                    return invalid("loss", "p31 + p32 must not exceed 1");
                }
            }
            LossModel::GilbertElliott(m) => {
                probability("loss.p", m.p)?;
                probability("loss.r", m.r)?;
                probability("loss.one_minus_h", m.one_minus_h)?;
                probability("loss.one_minus_k", m.one_minus_k)?;
            }
        }
        let c = &self.corrupt;
        probability("corrupt.probability", c.probability)?;
        probability("corrupt.correlation", c.correlation)?;
        probability("corrupt.ber", c.ber)?;
        if let Some(m) = c.gemodel {
            probability("corrupt.gemodel.p", m.p)?;
            probability("corrupt.gemodel.r", m.r)?;
            probability("corrupt.gemodel.one_minus_h", m.one_minus_h)?;
            probability("corrupt.gemodel.one_minus_k", m.one_minus_k)?;
        }
        if let Some(b) = c.burst {
            probability("corrupt.burst.probability", b.probability)?;
            if b.min_packets == 0 || b.min_packets > b.max_packets {
                return invalid("corrupt.burst", "needs 1 <= min_packets <= max_packets");
            }
        }
        if let CorruptRegion::HeaderShare(share) = c.region {
            probability("corrupt.region", share)?;
        }
        probability("duplicate.probability", self.duplicate.probability)?;
        probability("duplicate.correlation", self.duplicate.correlation)?;
        if let Some(r) = self.reorder {
            probability("reorder.probability", r.probability)?;
            probability("reorder.correlation", r.correlation)?;
            if r.probability == 0.0 {
                return invalid(
                    "reorder",
                    "probability must be > 0 (omit reorder to disable it)",
                );
            }
            if r.gap == 0 {
                return invalid("reorder.gap", "must be >= 1");
            }
            if self.delay_ms.is_zero() {
                return invalid("reorder", "needs a delay to reorder against (as netem)");
            }
        }
        if let Some(s) = self.slot {
            if s.max_ms < s.min_ms {
                return invalid("slot", "max_ms must be >= min_ms");
            }
            if s.max_ms.is_zero() {
                return invalid("slot", "needs a spacing > 0");
            }
            if s.packets == Some(0) || s.bytes == Some(0) {
                return invalid("slot", "packets and bytes must be > 0 when given");
            }
        }
        for (name, windows) in [("outage", self.outage), ("stall", self.stall)] {
            let Some(o) = windows else {
                continue;
            };
            if o.every_ms.is_zero() || o.duration_ms.is_zero() {
                return invalid(name, "every_ms and duration_ms must be > 0");
            }
            if o.duration_ms > o.every_ms {
                return invalid(name, "duration_ms must not exceed every_ms");
            }
        }
        if self
            .rate_steps
            .iter()
            .any(|step| step.rate_bps == 0 || step.duration_ms.is_zero())
        {
            return invalid(
                "rate_steps",
                "every step needs a rate > 0 and a duration > 0",
            );
        }
        if !self.rate_steps.is_empty() && self.rate_bps != Some(self.rate_steps[0].rate_bps) {
            return invalid("rate_steps", "rate_bps must be the first step's rate");
        }
        if self
            .delay_steps
            .iter()
            .any(|step| step.duration_ms.is_zero())
        {
            return invalid("delay_steps", "every step needs a duration > 0");
        }
        if self.ecn && self.loss == LossModel::default() {
            return invalid("ecn", "needs a loss model to mark instead of dropping");
        }
        if let Some(aqm) = &self.aqm {
            if let Err(reason) = aqm.validate() {
                return invalid("aqm", &reason);
            }
        }
        Ok(())
    }
}

/// A link parameter out of range or a combination that makes no sense.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum LinkConfigError {
    /// A probability outside 0..=1 (or NaN).
    #[error("{field} must be a probability in 0..=1, got {value}")]
    Probability {
        /// The parameter.
        field: &'static str,
        /// The value given.
        value: f64,
    },
    /// Any other invalid parameter.
    #[error("{field}: {reason}")]
    Invalid {
        /// The parameter.
        field: &'static str,
        /// What is wrong with it.
        reason: String,
    },
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// Serialize a `Duration` as (fractional) milliseconds in scenario files.
pub(crate) mod duration_ms {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64() * 1e3)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let ms = f64::deserialize(d)?;
        if !(ms.is_finite() && ms >= 0.0) {
            return Err(serde::de::Error::custom(
                "a duration must be a non-negative number of ms",
            ));
        }
        Duration::try_from_secs_f64(ms / 1e3).map_err(serde::de::Error::custom)
    }
}

/// An optional `Duration` as (fractional) milliseconds in scenario files.
pub(crate) mod optional_duration_ms {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => super::duration_ms::serialize(d, s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        #[derive(Deserialize)]
        struct Wrapped(#[serde(with = "super::duration_ms")] Duration);
        Ok(Option::<Wrapped>::deserialize(d)?.map(|Wrapped(d)| d))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize, Serialize)]
    struct Scenario {
        forward: LinkConfig,
    }

    #[test]
    fn the_original_table_form_still_parses() {
        let s: Scenario = toml::from_str(
            "[forward]\ndelay_ms = 25\nrate_bps = 10000000\nqueue = { packets = 50 }\nloss = 0.01\n",
        )
        .unwrap();
        assert_eq!(s.forward.delay_ms, Duration::from_millis(25));
        assert_eq!(s.forward.rate_bps, Some(10_000_000));
        assert_eq!(s.forward.queue, QueueLimit::Packets(50));
        assert_eq!(s.forward.loss, LossModel::bernoulli(0.01));
        let s: Scenario = toml::from_str("forward = { queue = { bytes = 30000 } }").unwrap();
        assert_eq!(s.forward.queue, QueueLimit::Bytes(30_000));
        assert_eq!(
            s.forward.delay_ms,
            Duration::from_millis(10),
            "default delay"
        );
    }

    #[test]
    fn a_netem_string_parses_in_a_scenario_file() {
        let s: Scenario =
            toml::from_str("forward = \"delay 25ms rate 10mbit limit 50 loss 1%\"").unwrap();
        assert_eq!(s.forward.delay_ms, Duration::from_millis(25));
        assert_eq!(s.forward.rate_bps, Some(10_000_000));
        assert_eq!(s.forward.queue, QueueLimit::Packets(50));
        assert_eq!(s.forward.loss, LossModel::bernoulli(0.01));
    }

    #[test]
    fn bad_scenario_entries_name_what_is_wrong() {
        let err = toml::from_str::<Scenario>("forward = \"delay 25ms lossy 1%\"")
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("at word 3 \"lossy\""), "{err}");
        let err = toml::from_str::<Scenario>("forward = { delay_ms = 5, wobble = 1 }")
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("wobble"), "{err}");
        let err = toml::from_str::<Scenario>("forward = { loss = 1.5 }")
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("loss.probability must be a probability"),
            "{err}"
        );
    }

    #[test]
    fn a_table_configures_ecn_bleach_and_an_aqm() {
        let s: Scenario = toml::from_str(
            "forward = { rate_bps = 50000000, loss = 0.01, ecn = true, bleach = true, aqm = { codel = { target_ms = 5, interval_ms = 100, ecn = true } } }",
        )
        .unwrap();
        let netem = LinkConfig::from_netem(
            "delay 10ms rate 50mbit loss 1% ecn bleach codel target 5ms interval 100ms ecn",
        )
        .unwrap();
        assert_eq!(s.forward, netem);
        let s: Scenario =
            toml::from_str("forward = { aqm = { dualpi2 = { step_thresh_ms = 2 } } }").unwrap();
        let Some(super::Aqm::Dualpi2(d)) = &s.forward.aqm else {
            panic!("{:?}", s.forward);
        };
        assert_eq!(d.step_thresh_ms, Duration::from_millis(2));
        assert_eq!(d.target_ms, Duration::from_millis(15), "tc's default");
        let err = toml::from_str::<Scenario>("forward = { ecn = true }")
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("ecn: needs a loss model"), "{err}");
        let err = toml::from_str::<Scenario>("forward = { aqm = { codel = { interval_ms = 0 } } }")
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("interval must be > 0"), "{err}");
    }

    #[test]
    fn a_table_round_trips_through_toml() {
        let mut config = LinkConfig::from_netem(
            "delay 20ms 5ms 25% distribution normal rate 2mbit 14 loss gemodel 1% 30% corrupt 2% corrupt-where header=95% reorder 10% gap 3 outage 10s 200ms slot 1ms 3ms packets 4 seed 9",
        )
        .unwrap();
        // TOML carries durations as float ms: use values exact in binary.
        config.jitter_ms = Duration::from_millis(4);
        let text = toml::to_string(&Scenario {
            forward: config.clone(),
        })
        .unwrap();
        let back: Scenario = toml::from_str(&text).unwrap();
        assert_eq!(back.forward, config, "{text}");
    }

    #[test]
    fn validation_rejects_impossible_combinations() {
        let reorder_without_delay = LinkConfig {
            reorder: Some(Reorder {
                probability: 0.5,
                correlation: 0.0,
                gap: 1,
            }),
            ..LinkConfig::ideal()
        };
        assert!(matches!(
            reorder_without_delay.validate(),
            Err(LinkConfigError::Invalid {
                field: "reorder",
                ..
            })
        ));
        let nan_loss = LinkConfig {
            loss: LossModel::bernoulli(f64::NAN),
            ..LinkConfig::ideal()
        };
        assert!(nan_loss.validate().is_err());
        assert_eq!(LinkConfig::default().validate(), Ok(()));
    }
}
