//! The AQM words of a spec, in tc's syntax (`tc-codel(8)`, `tc-dualpi2(8)`):
//!
//! ```text
//! codel [limit PACKETS] [target TIME] [interval TIME] [ecn|noecn] [ce_threshold TIME]
//! dualpi2 [limit PACKETS] [target TIME] [tupdate TIME] [alpha FLOAT] [beta FLOAT]
//!         [coupling_factor NUMBER] [step_thresh TIME] [classic_protection PERCENT]
//!         [l4s_ect|any_ect] [drop_on_overload|overflow]
//! ```
//!
//! An AQM takes the words after it that are its own; the first word that
//! is not goes back to netem (so `codel ecn` is CoDel's ECN, and netem's
//! `ecn` comes before `codel`). `limit` sets the link's queue limit, which
//! the AQM keeps.

use std::time::Duration;

use super::{parse_count, parse_time, Seen, Word, Words};
use crate::sim::link::aqm::{Aqm, Codel, DualPi2};
use crate::sim::link::units::format_time;
use crate::sim::link::NetemError;

/// An AQM and the queue limit it was given, if any (with its word).
pub(super) type Parsed<'a> = (Aqm, Option<(usize, Word<'a>)>);

/// Parses the options after `codel` or `dualpi2` (the `option` word).
pub(super) fn parse<'a>(words: &mut Words<'a>, option: Word<'a>) -> Result<Parsed<'a>, NetemError> {
    match option.text {
        "codel" => parse_codel(words),
        _ => parse_dualpi2(words),
    }
}

fn positive_time(word: Word<'_>) -> Result<Duration, NetemError> {
    let time = parse_time(word)?;
    if time.is_zero() {
        return Err(word.error("must be > 0"));
    }
    Ok(time)
}

fn parse_codel<'a>(words: &mut Words<'a>) -> Result<Parsed<'a>, NetemError> {
    let mut codel = Codel::default();
    let mut limit = None;
    let mut seen = Seen::default();
    while let Some(next) = words.peek() {
        let key: &'static str = match next.text {
            "limit" => "limit",
            "target" => "target",
            "interval" => "interval",
            "ecn" | "noecn" => "ecn",
            "ce_threshold" => "ce_threshold",
            _ => break,
        };
        let word = words.take().unwrap_or(next);
        seen.first(key, word)
            .map_err(|_| word.error(format!("codel {key} given twice")))?;
        match key {
            "limit" => {
                let n = words.argument(word, "PACKETS")?;
                limit = Some((parse_count(n)?, word));
            }
            "target" => codel.target_ms = positive_time(words.argument(word, "TIME (e.g. 5ms)")?)?,
            "interval" => {
                codel.interval_ms = positive_time(words.argument(word, "TIME (e.g. 100ms)")?)?;
            }
            "ecn" => codel.ecn = word.text == "ecn",
            _ => {
                let time = words.argument(word, "TIME (e.g. 1ms)")?;
                codel.ce_threshold_ms = Some(parse_time(time)?);
            }
        }
    }
    Ok((Aqm::Codel(codel), limit))
}

fn parse_gain(word: Word<'_>) -> Result<f64, NetemError> {
    match word.text.parse::<f64>() {
        Ok(value) if value.is_finite() && value > 0.0 && value < 1e6 => Ok(value),
        _ => Err(word.error("not a gain in Hz (a number > 0, e.g. 0.16)")),
    }
}

fn parse_dualpi2<'a>(words: &mut Words<'a>) -> Result<Parsed<'a>, NetemError> {
    let mut dualpi2 = DualPi2::default();
    let mut limit = None;
    let mut seen = Seen::default();
    while let Some(next) = words.peek() {
        let key: &'static str = match next.text {
            "limit" => "limit",
            "target" => "target",
            "tupdate" => "tupdate",
            "alpha" => "alpha",
            "beta" => "beta",
            "coupling_factor" => "coupling_factor",
            "step_thresh" => "step_thresh",
            "classic_protection" => "classic_protection",
            "l4s_ect" | "any_ect" => "l4s_ect|any_ect",
            "drop_on_overload" | "overflow" => "drop_on_overload|overflow",
            _ => break,
        };
        let word = words.take().unwrap_or(next);
        seen.first(key, word)
            .map_err(|_| word.error(format!("dualpi2 {key} given twice")))?;
        match key {
            "limit" => {
                let n = words.argument(word, "PACKETS")?;
                limit = Some((parse_count(n)?, word));
            }
            "target" => dualpi2.target_ms = parse_time(words.argument(word, "TIME (e.g. 15ms)")?)?,
            "tupdate" => {
                dualpi2.tupdate_ms = positive_time(words.argument(word, "TIME (e.g. 16ms)")?)?;
            }
            "alpha" => dualpi2.alpha = parse_gain(words.argument(word, "FLOAT (e.g. 0.16)")?)?,
            "beta" => dualpi2.beta = parse_gain(words.argument(word, "FLOAT (e.g. 3.2)")?)?,
            "coupling_factor" => {
                let n = words.argument(word, "NUMBER (e.g. 2)")?;
                dualpi2.coupling_factor = match n.text.parse::<f64>() {
                    Ok(k) if k.is_finite() && (1.0..=255.0).contains(&k) => k,
                    _ => return Err(n.error("not a coupling factor (a number in 1..=255)")),
                };
            }
            "step_thresh" => {
                let time = words.argument(word, "TIME (e.g. 1ms)")?;
                dualpi2.step_thresh_ms = parse_time(time).map_err(|_| {
                    time.error("not a time (sift takes step_thresh as a TIME only, e.g. 1ms)")
                })?;
            }
            "classic_protection" => {
                let n = words.argument(word, "PERCENT (0 to 100)")?;
                let percent = n.text.strip_suffix('%').unwrap_or(n.text);
                dualpi2.classic_protection = match percent.parse::<u8>() {
                    Ok(p) if p <= 100 => p,
                    _ => return Err(n.error("not a percentage from 0 to 100")),
                };
            }
            "l4s_ect|any_ect" => dualpi2.any_ect = word.text == "any_ect",
            _ => dualpi2.drop_on_overload = word.text == "drop_on_overload",
        }
    }
    Ok((Aqm::Dualpi2(dualpi2), limit))
}

/// The canonical words of `aqm` (without any limit: netem's `limit` prints it).
pub(super) fn format(aqm: &Aqm) -> String {
    match aqm {
        Aqm::Codel(c) => {
            let mut text = format!(
                "codel target {} interval {}",
                format_time(c.target_ms),
                format_time(c.interval_ms)
            );
            if c.ecn {
                text += " ecn";
            }
            if let Some(threshold) = c.ce_threshold_ms {
                text += &format!(" ce_threshold {}", format_time(threshold));
            }
            text
        }
        Aqm::Dualpi2(d) => {
            let defaults = DualPi2::default();
            let mut text = "dualpi2".to_string();
            if d.target_ms != defaults.target_ms {
                text += &format!(" target {}", format_time(d.target_ms));
            }
            if d.tupdate_ms != defaults.tupdate_ms {
                text += &format!(" tupdate {}", format_time(d.tupdate_ms));
            }
            if d.alpha != defaults.alpha {
                text += &format!(" alpha {}", d.alpha);
            }
            if d.beta != defaults.beta {
                text += &format!(" beta {}", d.beta);
            }
            if d.coupling_factor != defaults.coupling_factor {
                text += &format!(" coupling_factor {}", d.coupling_factor);
            }
            if d.step_thresh_ms != defaults.step_thresh_ms {
                text += &format!(" step_thresh {}", format_time(d.step_thresh_ms));
            }
            if d.classic_protection != defaults.classic_protection {
                text += &format!(" classic_protection {}", d.classic_protection);
            }
            if d.any_ect {
                text += " any_ect";
            }
            if !d.drop_on_overload {
                text += " overflow";
            }
            text
        }
    }
}
