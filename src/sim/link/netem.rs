//! The `tc netem` option syntax, parsed into a `LinkConfig` and printed
//! back in canonical form.
//!
//! ```text
//! limit PACKETS | limit-bytes BYTES
//! delay|latency TIME [JITTER [CORRELATION]]   distribution uniform|normal|pareto|paretonormal
//! rate RATE [PACKETOVERHEAD [CELLSIZE [CELLOVERHEAD]]]
//! loss|drop [random] PERCENT [CORRELATION]
//! loss state P13 [P31 [P32 [P23 [P14]]]]
//! loss gemodel P [R [1-H [1-K]]]
//! corrupt PERCENT [CORRELATION]          duplicate PERCENT [CORRELATION]
//! reorder PERCENT [CORRELATION] [gap DISTANCE]
//! slot MIN_DELAY [MAX_DELAY] [packets PACKETS] [bytes BYTES]
//! seed SEED
//! sift extensions:
//! ber RATE                               bit error rate, e.g. ber 1e-5
//! corrupt-gemodel P [R [1-H [1-K]]]      Gilbert-Elliott corruption
//! corrupt-burst PERCENT MIN-MAX          bursts of MIN..=MAX corrupted packets
//! corrupt-where any|header|payload|header=PERCENT
//! outage EVERY DURATION                  down for DURATION every EVERY
//! stall EVERY DURATION                   the serializer pauses for DURATION every EVERY
//! rate-steps RATE TIME [RATE TIME]...    the rate changes on a repeating schedule
//! jitter-reorder                         jitter reorders even behind a rate
//! mtu BYTES                              drop datagrams whose IP packet exceeds BYTES
//! bleach                                 the path clears the ECN field (Not-ECT)
//! ECN and active queue management (see netem/aqm.rs for their options):
//! ecn                                    loss marks ECN-capable packets CE instead (netem's)
//! codel [target TIME] [interval TIME] [ecn|noecn] [ce_threshold TIME] [limit PACKETS]
//! dualpi2 [target TIME] [tupdate TIME] [alpha F] [beta F] [coupling_factor K]
//!         [step_thresh TIME] [classic_protection PERCENT] [l4s_ect|any_ect]
//!         [drop_on_overload|overflow] [limit PACKETS]
//! ```
//!
//! Units follow tc: times take `s`/`sec`/`secs`, `ms`/`msec`/`msecs`,
//! `us`/`usec`/`usecs`, `ns`, and a bare number is microseconds; rates take
//! `bit`, `kbit`, `mbit`, `gbit`, `tbit` (×1000), `kibit`… (×1024), `bps`,
//! `kbps`… (bytes per second), case-insensitive, and a bare number is bits
//! per second. Sizes (`limit-bytes`, `slot … bytes`) take `b`, `k`/`kb`,
//! `m`/`mb`, `g`/`gb` (×1024).
//!
//! Where sift differs from tc: probabilities are `N%` or a plain fraction
//! (`loss 0.01` is 1%; tc would read it as 0.01%), and a bare `1` is refused
//! as ambiguous; keywords must be spelt out (tc accepts any prefix);
//! giving an option twice is an error (tc keeps the last one); custom
//! distribution files and `slot distribution` are not supported. `codel`
//! and `dualpi2` are separate qdiscs in tc; here they are words of the same
//! spec, replacing the drop-tail discipline of the bottleneck queue.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::config::{LinkConfig, RateStep, PROBABILITY_SUM_SLACK};
use super::corrupt::{CorruptBurst, CorruptRegion};
use super::delay::Distribution;
use super::loss::{FourState, GilbertElliott, LossModel};
use super::outage::Outage;
use super::queue::{QueueLimit, DEFAULT_QUEUE_PACKETS};
use super::rate::Framing;
use super::reorder::Reorder;
use super::slot::Slot;

use super::units::{self, format_fraction, format_time, parse_probability};

mod aqm;

/// Every option keyword the parser knows, in canonical order.
pub const OPTIONS: [&str; 26] = [
    "limit",
    "limit-bytes",
    "delay",
    "distribution",
    "rate",
    "loss",
    "corrupt",
    "ber",
    "corrupt-gemodel",
    "corrupt-burst",
    "corrupt-where",
    "duplicate",
    "reorder",
    "gap",
    "slot",
    "outage",
    "stall",
    "rate-steps",
    "jitter-reorder",
    "mtu",
    "bleach",
    "ecn",
    "codel",
    "dualpi2",
    "seed",
    "latency",
];

/// A netem spec that could not be parsed: the offending word, its position
/// (1-based, counting whitespace-separated words) and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("at word {position} \"{word}\": {reason}")]
pub struct NetemError {
    /// 1-based index of the word among the spec's whitespace-separated words.
    pub position: usize,
    /// The word itself.
    pub word: String,
    /// What is wrong with it.
    pub reason: String,
}

/// One word of the spec and its 1-based position.
#[derive(Clone, Copy)]
struct Word<'a> {
    position: usize,
    text: &'a str,
}

impl Word<'_> {
    fn error(&self, reason: impl Into<String>) -> NetemError {
        NetemError {
            position: self.position,
            word: self.text.to_string(),
            reason: reason.into(),
        }
    }
}

struct Words<'a> {
    words: Vec<Word<'a>>,
    next: usize,
}

impl<'a> Words<'a> {
    fn new(spec: &'a str) -> Self {
        let words = spec
            .split_whitespace()
            .enumerate()
            .map(|(i, text)| Word {
                position: i + 1,
                text,
            })
            .collect();
        Self { words, next: 0 }
    }

    fn take(&mut self) -> Option<Word<'a>> {
        let word = self.words.get(self.next).copied()?;
        self.next += 1;
        Some(word)
    }

    fn peek(&self) -> Option<Word<'a>> {
        self.words.get(self.next).copied()
    }

    /// The argument `what` of `option`, or an error pointing at `option`.
    fn argument(&mut self, option: Word<'_>, what: &str) -> Result<Word<'a>, NetemError> {
        self.take()
            .ok_or_else(|| option.error(format!("missing {what} after \"{}\"", option.text)))
    }

    /// Takes the next word if it looks like a number (tc's `NEXT_IS_NUMBER`).
    fn optional_number(&mut self) -> Option<Word<'a>> {
        let next = self.peek()?;
        if next
            .text
            .starts_with(|c: char| c.is_ascii_digit() || c == '.')
        {
            self.take()
        } else {
            None
        }
    }

    /// Same, also accepting a leading minus sign.
    fn optional_signed_number(&mut self) -> Option<Word<'a>> {
        let next = self.peek()?;
        if next
            .text
            .starts_with(|c: char| c.is_ascii_digit() || c == '.' || c == '-')
        {
            self.take()
        } else {
            None
        }
    }
}

/// Where each option was first seen, for "given twice" and cross-option errors.
#[derive(Default)]
struct Seen {
    positions: Vec<(&'static str, usize)>,
}

impl Seen {
    fn first(&mut self, option: &'static str, word: Word<'_>) -> Result<(), NetemError> {
        if let Some(&(_, first)) = self.positions.iter().find(|(o, _)| *o == option) {
            return Err(word.error(format!("{option} given twice (first at word {first})")));
        }
        self.positions.push((option, word.position));
        Ok(())
    }

    fn at(&self, option: &str) -> Option<usize> {
        self.positions
            .iter()
            .find(|(o, _)| *o == option)
            .map(|&(_, p)| p)
    }
}

/// Parses a netem spec; see the module documentation for the syntax.
pub fn parse(spec: &str) -> Result<LinkConfig, NetemError> {
    let mut words = Words::new(spec);
    let mut config = LinkConfig::ideal();
    let mut seen = Seen::default();
    let mut gap: Option<(u32, Word<'_>)> = None;
    let mut reorder_word = None;
    let mut distribution_word = None;
    let mut jitter_reorder_word = None;
    let mut rate_steps_word = None;
    let mut ecn_word = None;
    while let Some(option) = words.take() {
        match option.text {
            "limit" => {
                seen.first("limit", option)?;
                if seen.at("limit-bytes").is_some() {
                    return Err(option.error("limit and limit-bytes are exclusive"));
                }
                let n = words.argument(option, "PACKETS")?;
                config.queue = QueueLimit::Packets(parse_count(n)?);
            }
            "limit-bytes" => {
                seen.first("limit-bytes", option)?;
                if seen.at("limit").is_some() {
                    return Err(option.error("limit and limit-bytes are exclusive"));
                }
                let n = words.argument(option, "BYTES")?;
                let bytes = parse_size(n)?;
                config.queue = QueueLimit::Bytes(
                    usize::try_from(bytes).map_err(|_| n.error("size too large"))?,
                );
            }
            "delay" | "latency" => {
                seen.first("delay", option)?;
                let time = words.argument(option, "TIME (e.g. 20ms)")?;
                config.delay_ms = parse_time(time)?;
                if let Some(jitter) = words.optional_number() {
                    config.jitter_ms = parse_time(jitter)?;
                    if let Some(correlation) = words.optional_number() {
                        config.delay_correlation = parse_probability_word(correlation)?;
                    }
                }
            }
            "distribution" => {
                seen.first("distribution", option)?;
                let name =
                    words.argument(option, "NAME (uniform, normal, pareto or paretonormal)")?;
                config.distribution = name.text.parse().map_err(|e| name.error(format!("{e}")))?;
                distribution_word = Some(option);
            }
            "rate" => {
                seen.first("rate", option)?;
                let rate = words.argument(option, "RATE (e.g. 10mbit)")?;
                config.rate_bps = Some(parse_rate(rate)?);
                let mut framing = Framing::default();
                if let Some(w) = words.optional_signed_number() {
                    framing.packet_overhead = parse_signed(w)?;
                    if let Some(w) = words.optional_number() {
                        framing.cell_size = parse_count(w)?;
                        if let Some(w) = words.optional_signed_number() {
                            framing.cell_overhead = parse_signed(w)?;
                        }
                    }
                }
                config.framing = framing;
            }
            "loss" | "drop" => {
                seen.first("loss", option)?;
                config.loss = parse_loss(&mut words, option)?;
            }
            "ecn" => {
                seen.first("ecn", option)?;
                config.ecn = true;
                ecn_word = Some(option);
            }
            "bleach" => {
                seen.first("bleach", option)?;
                config.bleach = true;
            }
            "codel" | "dualpi2" => {
                seen.first("codel or dualpi2", option)?;
                let (aqm, limit) = aqm::parse(&mut words, option)?;
                if let Some((packets, word)) = limit {
                    if seen.at("limit-bytes").is_some() {
                        return Err(word.error("limit and limit-bytes are exclusive"));
                    }
                    seen.first("limit", word)?;
                    config.queue = QueueLimit::Packets(packets);
                }
                config.aqm = Some(aqm);
            }
            "corrupt" => {
                seen.first("corrupt", option)?;
                let p = words.argument(option, "PERCENT")?;
                config.corrupt.probability = parse_probability_word(p)?;
                if let Some(c) = words.optional_number() {
                    config.corrupt.correlation = parse_probability_word(c)?;
                }
            }
            "ber" => {
                seen.first("ber", option)?;
                let rate = words.argument(option, "bit error rate (e.g. 1e-5)")?;
                config.corrupt.ber = parse_probability_word(rate)?;
            }
            "corrupt-gemodel" => {
                seen.first("corrupt-gemodel", option)?;
                config.corrupt.gemodel = Some(parse_gemodel(&mut words, option)?);
            }
            "corrupt-burst" => {
                seen.first("corrupt-burst", option)?;
                let p = words.argument(option, "PERCENT")?;
                let probability = parse_probability_word(p)?;
                let lengths =
                    words.argument(option, "MIN-MAX burst length in packets (e.g. 2-10)")?;
                let (min_packets, max_packets) = parse_length_range(lengths)?;
                config.corrupt.burst = Some(CorruptBurst {
                    probability,
                    min_packets,
                    max_packets,
                });
            }
            "corrupt-where" => {
                seen.first("corrupt-where", option)?;
                let region = words.argument(option, "any, header, payload or header=PERCENT")?;
                config.corrupt.region = region
                    .text
                    .parse::<CorruptRegion>()
                    .map_err(|e| region.error(e.to_string()))?;
            }
            "duplicate" => {
                seen.first("duplicate", option)?;
                let p = words.argument(option, "PERCENT")?;
                config.duplicate.probability = parse_probability_word(p)?;
                if let Some(c) = words.optional_number() {
                    config.duplicate.correlation = parse_probability_word(c)?;
                }
            }
            "reorder" => {
                seen.first("reorder", option)?;
                let p = words.argument(option, "PERCENT")?;
                let probability = parse_probability_word(p)?;
                let mut correlation = 0.0;
                if let Some(c) = words.optional_number() {
                    correlation = parse_probability_word(c)?;
                }
                config.reorder = Some(Reorder {
                    probability,
                    correlation,
                    gap: 1,
                });
                reorder_word = Some(option);
            }
            "gap" => {
                seen.first("gap", option)?;
                let n = words.argument(option, "DISTANCE")?;
                let distance: u32 = parse_count(n)?;
                if distance == 0 {
                    return Err(n.error("gap must be at least 1"));
                }
                gap = Some((distance, option));
            }
            "slot" => {
                seen.first("slot", option)?;
                config.slot = Some(parse_slot(&mut words, option)?);
            }
            "outage" | "stall" => {
                seen.first(
                    if option.text == "outage" {
                        "outage"
                    } else {
                        "stall"
                    },
                    option,
                )?;
                let (every_ms, duration_ms) = parse_windows(&mut words, option)?;
                let windows = Outage {
                    every_ms,
                    duration_ms,
                };
                if option.text == "outage" {
                    config.outage = Some(windows);
                } else {
                    config.stall = Some(windows);
                }
            }
            "rate-steps" => {
                seen.first("rate-steps", option)?;
                let first = words.argument(option, "RATE (e.g. 20mbit)")?;
                let mut rate = Some(first);
                while let Some(word) = rate {
                    let rate_bps = parse_rate(word)?;
                    if rate_bps == 0 {
                        return Err(word.error("a rate step needs a rate > 0"));
                    }
                    let time = words.argument(option, "TIME after each RATE (e.g. 2s)")?;
                    let duration_ms = parse_time(time)?;
                    if duration_ms.is_zero() {
                        return Err(time.error("a rate step must last > 0"));
                    }
                    config.rate_steps.push(RateStep {
                        rate_bps,
                        duration_ms,
                    });
                    rate = words.optional_number();
                }
                rate_steps_word = Some(option);
            }
            "jitter-reorder" => {
                seen.first("jitter-reorder", option)?;
                config.jitter_reorders = true;
                jitter_reorder_word = Some(option);
            }
            "mtu" => {
                seen.first("mtu", option)?;
                let n = words.argument(option, "BYTES")?;
                let mtu: u32 = parse_count(n)?;
                if mtu < super::config::MIN_MTU {
                    return Err(n.error("an MTU below 68 bytes (RFC 791's minimum)"));
                }
                config.mtu = Some(mtu);
            }
            "seed" => {
                seen.first("seed", option)?;
                let n = words.argument(option, "SEED")?;
                config.seed = Some(parse_count(n)?);
            }
            _ => return Err(option.error(unknown_option_reason())),
        }
    }
    // Cross-option rules, as iproute2 checks them after the loop.
    match (&mut config.reorder, gap) {
        (Some(reorder), Some((distance, _))) => reorder.gap = distance,
        (None, Some((_, gap_word))) => {
            return Err(gap_word.error("gap needs a reorder probability (add reorder PERCENT)"));
        }
        _ => {}
    }
    if let (Some(reorder), Some(word)) = (config.reorder, reorder_word) {
        if reorder.probability == 0.0 {
            return Err(word.error("a reorder probability of 0 reorders nothing"));
        }
        if config.delay_ms.is_zero() {
            return Err(word.error("reordering needs some delay (add delay TIME)"));
        }
    }
    if let Some(word) = distribution_word {
        if config.jitter_ms.is_zero() {
            return Err(word.error("a distribution needs a jitter (delay TIME JITTER)"));
        }
    }
    if let Some(word) = jitter_reorder_word {
        if config.jitter_ms.is_zero() {
            return Err(word.error("jitter-reorder needs a jitter (delay TIME JITTER)"));
        }
    }
    if let Some(word) = ecn_word {
        if config.loss == LossModel::default() {
            return Err(
                word.error("ecn needs a loss model to mark instead of dropping (add loss PERCENT)")
            );
        }
    }
    if let Some(word) = rate_steps_word {
        if seen.at("rate").is_some() {
            return Err(word.error("rate-steps replaces rate: give one or the other"));
        }
        config.rate_bps = config.rate_steps.first().map(|step| step.rate_bps);
    }
    if let Err(e) = config.validate() {
        let last = words.words.last().copied().unwrap_or(Word {
            position: 0,
            text: "",
        });
        return Err(last.error(e.to_string()));
    }
    Ok(config)
}

/// `EVERY DURATION` of an outage or a stall.
fn parse_windows(
    words: &mut Words<'_>,
    option: Word<'_>,
) -> Result<(Duration, Duration), NetemError> {
    let every = words.argument(option, "EVERY (e.g. 10s)")?;
    let every_ms = parse_time(every)?;
    if every_ms.is_zero() {
        return Err(every.error(format!("the {} period must be > 0", option.text)));
    }
    let duration = words.argument(option, "DURATION (e.g. 500ms)")?;
    let duration_ms = parse_time(duration)?;
    if duration_ms.is_zero() || duration_ms > every_ms {
        return Err(duration.error(format!(
            "the {} must last > 0 and at most its period",
            option.text
        )));
    }
    Ok((every_ms, duration_ms))
}

fn unknown_option_reason() -> String {
    let known: Vec<&str> = OPTIONS
        .iter()
        .copied()
        .filter(|o| *o != "latency")
        .collect();
    format!("unknown option (expected one of: {})", known.join(", "))
}

fn parse_loss(words: &mut Words<'_>, option: Word<'_>) -> Result<LossModel, NetemError> {
    let first = words.argument(option, "random PERCENT, state P13 … or gemodel P …")?;
    let looks_numeric = first
        .text
        .starts_with(|c: char| c.is_ascii_digit() || c == '.');
    if looks_numeric || first.text == "random" {
        let p = if looks_numeric {
            first
        } else {
            words.argument(first, "PERCENT")?
        };
        let probability = parse_probability_word(p)?;
        let mut correlation = 0.0;
        if let Some(c) = words.optional_number() {
            correlation = parse_probability_word(c)?;
        }
        return Ok(LossModel::Bernoulli {
            probability,
            correlation,
        });
    }
    match first.text {
        "state" => {
            let p13_word = words.argument(first, "P13")?;
            let mut model = FourState::from_p13(parse_probability_word(p13_word)?);
            let fields: [&mut f64; 4] = [
                &mut model.p31,
                &mut model.p32,
                &mut model.p23,
                &mut model.p14,
            ];
            for field in fields {
                match words.optional_number() {
                    Some(w) => *field = parse_probability_word(w)?,
                    None => break,
                }
            }
            if model.p13 + model.p14 > 1.0 + PROBABILITY_SUM_SLACK {
                return Err(first.error("p13 + p14 must not exceed 100%"));
            }
            if model.p31 + model.p32 > 1.0 + PROBABILITY_SUM_SLACK {
                return Err(first.error("p31 + p32 must not exceed 100%"));
            }
            Ok(LossModel::FourState(model))
        }
        "gemodel" => Ok(LossModel::GilbertElliott(parse_gemodel(words, first)?)),
        _ => {
            Err(first.error("unknown loss model (expected random, state or gemodel, or a PERCENT)"))
        }
    }
}

fn parse_gemodel(words: &mut Words<'_>, option: Word<'_>) -> Result<GilbertElliott, NetemError> {
    let p_word = words.argument(option, "P")?;
    let mut model = GilbertElliott::from_p(parse_probability_word(p_word)?);
    let fields: [&mut f64; 3] = [&mut model.r, &mut model.one_minus_h, &mut model.one_minus_k];
    for field in fields {
        match words.optional_number() {
            Some(w) => *field = parse_probability_word(w)?,
            None => break,
        }
    }
    Ok(model)
}

fn parse_slot(words: &mut Words<'_>, option: Word<'_>) -> Result<Slot, NetemError> {
    let min_word = words.argument(option, "MIN_DELAY (e.g. 10ms)")?;
    if min_word.text == "distribution" {
        return Err(
            min_word.error("slot distribution is not supported: use slot MIN_DELAY MAX_DELAY")
        );
    }
    let min_ms = parse_time(min_word)?;
    let max_ms = match words.optional_number() {
        Some(w) => {
            let max = parse_time(w)?;
            if max < min_ms {
                return Err(w.error("MAX_DELAY must not be below MIN_DELAY"));
            }
            max
        }
        None => min_ms,
    };
    if max_ms.is_zero() {
        return Err(min_word.error("slots need a spacing > 0"));
    }
    let mut slot = Slot {
        min_ms,
        max_ms,
        packets: None,
        bytes: None,
    };
    if words.peek().is_some_and(|w| w.text == "packets") {
        let key = words.take().unwrap_or(option);
        let n = words.argument(key, "PACKETS")?;
        let packets: u32 = parse_count(n)?;
        if packets == 0 {
            return Err(n.error("a slot must carry at least one packet"));
        }
        slot.packets = Some(packets);
    }
    if words.peek().is_some_and(|w| w.text == "bytes") {
        let key = words.take().unwrap_or(option);
        let n = words.argument(key, "BYTES")?;
        let bytes = parse_size(n)?;
        if bytes == 0 {
            return Err(n.error("a slot must carry at least one byte"));
        }
        slot.bytes = Some(bytes);
    }
    Ok(slot)
}

fn parse_time(word: Word<'_>) -> Result<Duration, NetemError> {
    units::time(word.text).map_err(|reason| word.error(reason))
}

fn parse_rate(word: Word<'_>) -> Result<u64, NetemError> {
    units::rate(word.text).map_err(|reason| word.error(reason))
}

fn parse_size(word: Word<'_>) -> Result<u64, NetemError> {
    units::size(word.text).map_err(|reason| word.error(reason))
}

fn parse_probability_word(word: Word<'_>) -> Result<f64, NetemError> {
    parse_probability(word.text).map_err(|reason| word.error(reason))
}

fn parse_count<T: TryFrom<u64>>(word: Word<'_>) -> Result<T, NetemError> {
    word.text
        .parse::<u64>()
        .ok()
        .and_then(|n| T::try_from(n).ok())
        .ok_or_else(|| word.error("not a whole number (or too large)"))
}

fn parse_signed(word: Word<'_>) -> Result<i32, NetemError> {
    word.text
        .parse::<i32>()
        .map_err(|_| word.error("not a whole number of bytes (may be negative)"))
}

fn parse_length_range(word: Word<'_>) -> Result<(u32, u32), NetemError> {
    let (min, max) = word.text.split_once('-').unwrap_or((word.text, word.text));
    let bad = || word.error("not a burst length range (expected MIN-MAX packets, e.g. 2-10)");
    let min: u32 = min.parse().map_err(|_| bad())?;
    let max: u32 = max.parse().map_err(|_| bad())?;
    if min == 0 || min > max {
        return Err(word.error("burst lengths need 1 <= MIN <= MAX"));
    }
    Ok((min, max))
}

fn format_gemodel(m: &GilbertElliott) -> String {
    format!(
        "{} {} {} {}",
        format_fraction(m.p),
        format_fraction(m.r),
        format_fraction(m.one_minus_h),
        format_fraction(m.one_minus_k)
    )
}

/// The canonical netem string for `config` (empty for `LinkConfig::ideal()`).
pub fn format(config: &LinkConfig) -> String {
    let mut parts: Vec<String> = Vec::new();
    match config.queue {
        QueueLimit::Packets(DEFAULT_QUEUE_PACKETS) => {}
        QueueLimit::Packets(n) => parts.push(format!("limit {n}")),
        QueueLimit::Bytes(n) => parts.push(format!("limit-bytes {n}")),
    }
    if !config.delay_ms.is_zero() || !config.jitter_ms.is_zero() {
        let mut delay = format!("delay {}", format_time(config.delay_ms));
        if !config.jitter_ms.is_zero() {
            delay += &format!(" {}", format_time(config.jitter_ms));
            if config.delay_correlation != 0.0 {
                delay += &format!(" {}", format_fraction(config.delay_correlation));
            }
            if config.distribution != Distribution::Uniform {
                delay += &format!(" distribution {}", config.distribution);
            }
        }
        parts.push(delay);
    }
    if !config.rate_steps.is_empty() {
        let steps: Vec<String> = config
            .rate_steps
            .iter()
            .map(|step| format!("{}bit {}", step.rate_bps, format_time(step.duration_ms)))
            .collect();
        parts.push(format!("rate-steps {}", steps.join(" ")));
    } else if let Some(rate) = config.rate_bps {
        let f = config.framing;
        let mut text = format!("rate {rate}bit");
        if !f.is_none() {
            text += &format!(" {}", f.packet_overhead);
            if f.cell_size != 0 || f.cell_overhead != 0 {
                text += &format!(" {}", f.cell_size);
                if f.cell_overhead != 0 {
                    text += &format!(" {}", f.cell_overhead);
                }
            }
        }
        parts.push(text);
    }
    match config.loss {
        LossModel::Bernoulli {
            probability,
            correlation,
        } => {
            if probability != 0.0 || correlation != 0.0 {
                let mut text = format!("loss random {}", format_fraction(probability));
                if correlation != 0.0 {
                    text += &format!(" {}", format_fraction(correlation));
                }
                parts.push(text);
            }
        }
        LossModel::FourState(m) => parts.push(format!(
            "loss state {} {} {} {} {}",
            format_fraction(m.p13),
            format_fraction(m.p31),
            format_fraction(m.p32),
            format_fraction(m.p23),
            format_fraction(m.p14)
        )),
        LossModel::GilbertElliott(m) => parts.push(format!("loss gemodel {}", format_gemodel(&m))),
    }
    if config.ecn {
        parts.push("ecn".to_string());
    }
    let c = &config.corrupt;
    if c.probability != 0.0 || c.correlation != 0.0 {
        let mut text = format!("corrupt {}", format_fraction(c.probability));
        if c.correlation != 0.0 {
            text += &format!(" {}", format_fraction(c.correlation));
        }
        parts.push(text);
    }
    if c.ber != 0.0 {
        parts.push(format!("ber {}", format_fraction(c.ber)));
    }
    if let Some(m) = &c.gemodel {
        parts.push(format!("corrupt-gemodel {}", format_gemodel(m)));
    }
    if let Some(b) = &c.burst {
        parts.push(format!(
            "corrupt-burst {} {}-{}",
            format_fraction(b.probability),
            b.min_packets,
            b.max_packets
        ));
    }
    if c.region != CorruptRegion::Any {
        parts.push(format!("corrupt-where {}", c.region));
    }
    let d = &config.duplicate;
    if d.probability != 0.0 || d.correlation != 0.0 {
        let mut text = format!("duplicate {}", format_fraction(d.probability));
        if d.correlation != 0.0 {
            text += &format!(" {}", format_fraction(d.correlation));
        }
        parts.push(text);
    }
    if let Some(r) = &config.reorder {
        let mut text = format!("reorder {}", format_fraction(r.probability));
        if r.correlation != 0.0 {
            text += &format!(" {}", format_fraction(r.correlation));
        }
        if r.gap != 1 {
            text += &format!(" gap {}", r.gap);
        }
        parts.push(text);
    }
    if let Some(s) = &config.slot {
        let mut text = format!("slot {} {}", format_time(s.min_ms), format_time(s.max_ms));
        if let Some(p) = s.packets {
            text += &format!(" packets {p}");
        }
        if let Some(b) = s.bytes {
            text += &format!(" bytes {b}");
        }
        parts.push(text);
    }
    for (name, windows) in [("outage", &config.outage), ("stall", &config.stall)] {
        if let Some(o) = windows {
            parts.push(format!(
                "{name} {} {}",
                format_time(o.every_ms),
                format_time(o.duration_ms)
            ));
        }
    }
    if config.jitter_reorders {
        parts.push("jitter-reorder".to_string());
    }
    if let Some(mtu) = config.mtu {
        parts.push(format!("mtu {mtu}"));
    }
    if config.bleach {
        parts.push("bleach".to_string());
    }
    if let Some(seed) = config.seed {
        parts.push(format!("seed {seed}"));
    }
    // Last: an AQM takes the words after it that are its own.
    if let Some(aqm) = &config.aqm {
        parts.push(aqm::format(aqm));
    }
    parts.join(" ")
}

// LinkConfig as text: the parser and printer are its `FromStr` and
// `Display`, and a scenario file may give a link as a netem string or as a
// table. They live here, beside the syntax, so that `config.rs` (which the
// parser fills in) does not import the parser back.

impl LinkConfig {
    /// Parses a `tc netem` option string (plus sift's extensions); see
    /// `netem.rs` for the syntax.
    pub fn from_netem(spec: &str) -> Result<LinkConfig, NetemError> {
        parse(spec)
    }

    /// The canonical netem string for this config: `from_netem` of it gives
    /// back an equal config.
    pub fn to_netem(&self) -> String {
        format(self)
    }
}

impl FromStr for LinkConfig {
    type Err = NetemError;

    fn from_str(spec: &str) -> Result<Self, Self::Err> {
        LinkConfig::from_netem(spec)
    }
}

impl fmt::Display for LinkConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_netem())
    }
}

impl Serialize for LinkConfig {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        LinkConfig::serialize(self, s)
    }
}

impl<'de> Deserialize<'de> for LinkConfig {
    /// A netem string or a table; either way the result is validated.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Either;
        impl<'de> serde::de::Visitor<'de> for Either {
            type Value = LinkConfig;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a netem string such as \"delay 25ms rate 10mbit loss 1%\" or a table")
            }

            fn visit_str<E: serde::de::Error>(self, spec: &str) -> Result<LinkConfig, E> {
                LinkConfig::from_netem(spec).map_err(E::custom)
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<LinkConfig, A::Error> {
                let config =
                    LinkConfig::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                config.validate().map_err(serde::de::Error::custom)?;
                Ok(config)
            }
        }
        d.deserialize_any(Either)
    }
}

#[cfg(test)]
mod tests;
