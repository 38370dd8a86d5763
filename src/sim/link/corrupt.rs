//! Corruption: packets that arrive with flipped bits. A corrupted packet is
//! always *delivered* — that is the point of sift's split integrity tags —
//! never turned into a drop.
//!
//! Which packets are hit (any combination of these may be on):
//! - `corrupt P [CORR]`: each packet with probability P, correlated;
//!   one bit flips (as netem, which flips one random bit of one random byte).
//! - `ber B`: every bit flips independently with probability B, so a packet
//!   of `len` bytes is hit with probability 1 − (1 − B)^(8·len). Drawn by
//!   geometric gaps between flipped bits, carried across packets (the gaps
//!   are memoryless), so the cost is one draw per flipped bit, not per bit.
//! - `corrupt-gemodel p [r [1−h [1−k]]]`: a Gilbert-Elliott channel with the
//!   same parameters, defaults and stepping as `loss gemodel`; a hit flips
//!   one bit.
//! - `corrupt-burst P MIN-MAX`: outside a burst, each packet starts one with
//!   probability P; the burst hits that packet and the following ones,
//!   MIN..=MAX packets in all, the length uniform (the HACK paper's
//!   "multi-packet random burst errors", §5.2); each hit flips one bit.
//!
//! Where the flips land (`corrupt-where`), with the header region's length
//! from `Link::set_header_len`:
//! - `any` (default): uniformly over the datagram's bits, so the header is
//!   hit in proportion to its share of the packet;
//! - `header` / `payload`: uniformly within that region;
//! - `header=X`: with probability X (`header=95%`, the HACK paper's worst
//!   case) all the packet's flips go to the header region, otherwise to the
//!   payload region.
//!
//! If the chosen region is empty (say `header` with no header hook) the
//! flips go to the other region: the packet is still corrupted, and the
//! ground truth (`Corruption::header`/`payload`) says where.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::loss::{GilbertElliott, GilbertElliottChain};
use super::random::{clamp_probability, geometric, stage_rng, unit, CorrelatedEvent, Stage};
use super::units::{format_fraction, parse_probability};

/// Where flipped bits land (`corrupt-where`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum CorruptRegion {
    /// Uniformly over the whole datagram.
    #[default]
    Any,
    /// Only in the header region.
    Header,
    /// Only in the payload region.
    Payload,
    /// In the header region with this probability (0.0..=1.0), else in the payload.
    HeaderShare(f64),
}

/// A `corrupt-where` value that is not `any`, `header`, `payload` or `header=X`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a corruption region (expected any, header, payload or header=PERCENT)")]
pub struct BadRegion(pub String);

impl FromStr for CorruptRegion {
    type Err = BadRegion;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "any" => Ok(CorruptRegion::Any),
            "header" => Ok(CorruptRegion::Header),
            "payload" => Ok(CorruptRegion::Payload),
            _ => {
                let share = s
                    .strip_prefix("header=")
                    .and_then(|v| parse_probability(v).ok())
                    .ok_or_else(|| BadRegion(s.to_string()))?;
                Ok(CorruptRegion::HeaderShare(share))
            }
        }
    }
}

impl fmt::Display for CorruptRegion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CorruptRegion::Any => f.write_str("any"),
            CorruptRegion::Header => f.write_str("header"),
            CorruptRegion::Payload => f.write_str("payload"),
            CorruptRegion::HeaderShare(share) => write!(f, "header={}", format_fraction(*share)),
        }
    }
}

impl Serialize for CorruptRegion {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for CorruptRegion {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// HACK-style burst corruption (`corrupt-burst P MIN-MAX`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CorruptBurst {
    /// Probability that a packet outside a burst starts one.
    pub probability: f64,
    /// Shortest burst, in packets (≥ 1).
    pub min_packets: u32,
    /// Longest burst, in packets (≥ `min_packets`).
    pub max_packets: u32,
}

/// Every corruption model of a link direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CorruptionConfig {
    /// Per-packet corruption probability (netem `corrupt P`).
    pub probability: f64,
    /// Its packet-to-packet correlation (netem `corrupt P CORR`).
    pub correlation: f64,
    /// Bit error rate: each bit flips independently with this probability.
    pub ber: f64,
    /// Gilbert-Elliott burst corruption.
    pub gemodel: Option<GilbertElliott>,
    /// HACK-style bursts of MIN..=MAX corrupted packets.
    pub burst: Option<CorruptBurst>,
    /// Where the flipped bits land.
    pub region: CorruptRegion,
}

impl CorruptionConfig {
    /// True if no model can corrupt a packet.
    pub fn is_none(&self) -> bool {
        self.probability == 0.0 && self.ber == 0.0 && self.gemodel.is_none() && self.burst.is_none()
    }
}

/// Ground truth for a corrupted packet: which regions hold flipped bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Corruption {
    /// At least one flipped bit lies in the header region.
    pub header: bool,
    /// At least one flipped bit lies in the payload region.
    pub payload: bool,
    /// How many bits were flipped (all distinct).
    pub flipped_bits: u32,
}

/// The corruption stage of one link direction.
#[derive(Debug)]
pub(crate) struct CorruptionProcess {
    per_packet: CorrelatedEvent,
    gemodel: Option<GilbertElliottChain>,
    burst: Option<CorruptBurst>,
    burst_remaining: u32,
    ber: f64,
    /// Unflipped bits left before the next BER flip, carried across packets.
    ber_gap: Option<u64>,
    region: CorruptRegion,
    /// Decides whether packets are hit.
    decide: ChaCha8Rng,
    /// Decides where the flips land.
    place: ChaCha8Rng,
}

impl CorruptionProcess {
    pub(crate) fn new(config: &CorruptionConfig, seed: u64) -> Self {
        let burst = config.burst.map(|b| CorruptBurst {
            probability: clamp_probability(b.probability),
            min_packets: b.min_packets.max(1),
            max_packets: b.max_packets.max(b.min_packets.max(1)),
        });
        let region = match config.region {
            CorruptRegion::HeaderShare(x) => CorruptRegion::HeaderShare(clamp_probability(x)),
            other => other,
        };
        Self {
            per_packet: CorrelatedEvent::new(config.probability, config.correlation),
            gemodel: config.gemodel.map(GilbertElliottChain::new),
            burst,
            burst_remaining: 0,
            ber: clamp_probability(config.ber),
            ber_gap: None,
            region,
            decide: stage_rng(seed, Stage::Corrupt),
            place: stage_rng(seed, Stage::CorruptPlacement),
        }
    }

    /// Decides whether `bytes` is corrupted and, if so, flips its bits in
    /// place. `header_len` is the length of the header region (clamped to
    /// the datagram).
    pub(crate) fn apply(&mut self, bytes: &mut [u8], header_len: usize) -> Option<Corruption> {
        let total_bits = bytes.len() as u64 * 8;
        // Step every model on every packet, whatever the others decided, so
        // each model's state evolves the same with or without the others.
        let per_packet_hit = self.per_packet.happens(&mut self.decide);
        let gemodel_hit = match &mut self.gemodel {
            Some(chain) => chain.hit(&mut self.decide),
            None => false,
        };
        let burst_hit = self.step_burst();
        let ber_positions = self.ber_positions(total_bits);
        let single_flip = per_packet_hit || gemodel_hit || burst_hit;
        if total_bits == 0 || (!single_flip && ber_positions.is_empty()) {
            return None;
        }
        let header_bits = header_len.min(bytes.len()) as u64 * 8;
        let count = ber_positions.len() as u64 + u64::from(single_flip);
        let positions = match self.region {
            CorruptRegion::Any => {
                let mut positions: BTreeSet<u64> = ber_positions.into_iter().collect();
                if single_flip {
                    add_distinct(&mut positions, 0..total_bits, 1, &mut self.place);
                }
                positions
            }
            region => {
                let in_header = match region {
                    CorruptRegion::Header => true,
                    CorruptRegion::HeaderShare(share) => unit(&mut self.place) < share,
                    _ => false,
                };
                let (chosen, other) = if in_header {
                    (0..header_bits, header_bits..total_bits)
                } else {
                    (header_bits..total_bits, 0..header_bits)
                };
                let range = if chosen.is_empty() { other } else { chosen };
                let mut positions = BTreeSet::new();
                add_distinct(&mut positions, range, count, &mut self.place);
                positions
            }
        };
        for &bit in &positions {
            if let Some(byte) = bytes.get_mut((bit / 8) as usize) {
                *byte ^= 1 << (bit % 8);
            }
        }
        Some(Corruption {
            header: positions.iter().any(|&b| b < header_bits),
            payload: positions.iter().any(|&b| b >= header_bits),
            flipped_bits: u32::try_from(positions.len()).unwrap_or(u32::MAX),
        })
    }

    fn step_burst(&mut self) -> bool {
        let Some(burst) = self.burst else {
            return false;
        };
        if self.burst_remaining > 0 {
            self.burst_remaining -= 1;
            return true;
        }
        if burst.probability > 0.0 && unit(&mut self.decide) < burst.probability {
            let length = self
                .decide
                .random_range(burst.min_packets..=burst.max_packets);
            self.burst_remaining = length - 1;
            return true;
        }
        false
    }

    /// Bit positions flipped by the bit error rate in a datagram of
    /// `total_bits`, walking geometric gaps.
    fn ber_positions(&mut self, total_bits: u64) -> Vec<u64> {
        let mut positions = Vec::new();
        if self.ber <= 0.0 {
            return positions;
        }
        let mut cursor = 0u64;
        loop {
            let gap = match self.ber_gap.take() {
                Some(gap) => gap,
                None => match geometric(&mut self.decide, self.ber) {
                    Some(gap) => gap,
                    None => return positions,
                },
            };
            let remaining = total_bits - cursor;
            if gap < remaining {
                positions.push(cursor + gap);
                cursor += gap + 1;
            } else {
                self.ber_gap = Some(gap - remaining);
                return positions;
            }
        }
    }
}

/// Adds up to `count` new distinct bit positions from `range` to `set`,
/// uniformly; stops when the range is exhausted.
fn add_distinct(
    set: &mut BTreeSet<u64>,
    range: std::ops::Range<u64>,
    count: u64,
    rng: &mut ChaCha8Rng,
) {
    let available = range.end.saturating_sub(range.start);
    let already = set.range(range.clone()).count() as u64;
    let wanted = count.min(available.saturating_sub(already));
    if wanted == 0 {
        return;
    }
    if wanted * 2 > available {
        // Dense: a partial Fisher-Yates over the free positions.
        let mut free: Vec<u64> = range.filter(|b| !set.contains(b)).collect();
        for i in 0..wanted as usize {
            let j = rng.random_range(i..free.len());
            free.swap(i, j);
        }
        set.extend(free.into_iter().take(wanted as usize));
        return;
    }
    let mut added = 0;
    while added < wanted {
        if set.insert(rng.random_range(range.clone())) {
            added += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::link::loss::tests::run_lengths;

    fn process(config: CorruptionConfig) -> CorruptionProcess {
        CorruptionProcess::new(&config, 5)
    }

    fn flipped(before: &[u8], after: &[u8]) -> Vec<u64> {
        let mut bits = Vec::new();
        for (i, (a, b)) in before.iter().zip(after).enumerate() {
            for bit in 0..8 {
                if (a ^ b) >> bit & 1 == 1 {
                    bits.push(i as u64 * 8 + bit);
                }
            }
        }
        bits
    }

    #[test]
    fn ber_packet_error_rate_matches_the_formula_for_two_sizes() {
        // BER = 1e-4. 100 bytes: 1 − (1 − 1e-4)^800 ≈ 0.076884;
        // 1000 bytes: 1 − (1 − 1e-4)^8000 ≈ 0.550692.
        // n = 40 000 each: σ = sqrt(p(1−p)/n) ≈ 0.00133 and 0.00249.
        for (len, expected, sigma) in [(100, 0.076_884, 0.00133), (1000, 0.550_692, 0.00249)] {
            let mut p = process(CorruptionConfig {
                ber: 1e-4,
                ..CorruptionConfig::default()
            });
            let n = 40_000;
            let hit = (0..n)
                .filter(|_| p.apply(&mut vec![0u8; len], 0).is_some())
                .count() as f64
                / n as f64;
            assert!(
                (hit - expected).abs() < 5.0 * sigma,
                "{len} bytes: {hit} vs {expected}"
            );
        }
    }

    #[test]
    fn ber_flips_as_many_bits_as_it_reports() {
        // Mean flips per 1000-byte packet = 8000·1e-3 = 8.
        let mut p = process(CorruptionConfig {
            ber: 1e-3,
            ..CorruptionConfig::default()
        });
        let mut total = 0u64;
        for _ in 0..1000 {
            let before = vec![0x5au8; 1000];
            let mut after = before.clone();
            if let Some(c) = p.apply(&mut after, 0) {
                assert_eq!(flipped(&before, &after).len() as u32, c.flipped_bits);
                total += u64::from(c.flipped_bits);
            }
        }
        // 1000 packets × 8 flips, σ = sqrt(8000) ≈ 89.
        assert!((total as f64 - 8000.0).abs() < 5.0 * 89.0, "flips {total}");
    }

    #[test]
    fn per_packet_corruption_flips_exactly_one_bit() {
        let mut p = process(CorruptionConfig {
            probability: 1.0,
            ..CorruptionConfig::default()
        });
        for _ in 0..100 {
            let before = vec![0u8; 64];
            let mut after = before.clone();
            let c = p.apply(&mut after, 16).unwrap();
            let bits = flipped(&before, &after);
            assert_eq!((bits.len(), c.flipped_bits), (1, 1));
            assert_eq!(c.header, bits[0] < 128);
            assert_eq!(c.payload, bits[0] >= 128);
        }
    }

    #[test]
    fn header_and_payload_regions_hold_exactly_the_flipped_bits() {
        for (region, header_expected) in [
            (CorruptRegion::Header, true),
            (CorruptRegion::Payload, false),
        ] {
            let mut p = process(CorruptionConfig {
                probability: 1.0,
                ber: 1e-3,
                region,
                ..CorruptionConfig::default()
            });
            for _ in 0..200 {
                let before: Vec<u8> = (0..200u8).collect();
                let mut after = before.clone();
                let c = p.apply(&mut after, 30).unwrap();
                let bits = flipped(&before, &after);
                assert_eq!(bits.len() as u32, c.flipped_bits);
                // Header region = bytes 0..30 = bits 0..240.
                assert!(
                    bits.iter().all(|&b| (b < 240) == header_expected),
                    "{bits:?}"
                );
                assert_eq!((c.header, c.payload), (header_expected, !header_expected));
            }
        }
    }

    #[test]
    fn header_share_puts_95_percent_of_corrupted_packets_in_the_header() {
        let mut p = process(CorruptionConfig {
            probability: 1.0,
            region: CorruptRegion::HeaderShare(0.95),
            ..CorruptionConfig::default()
        });
        let n = 20_000;
        let in_header = (0..n)
            .filter(|_| p.apply(&mut vec![0u8; 1200], 40).unwrap().header)
            .count() as f64;
        // σ = sqrt(n·0.95·0.05) ≈ 30.8.
        assert!((in_header - 19_000.0).abs() < 5.0 * 30.8, "{in_header}");
    }

    #[test]
    fn any_region_hits_the_header_in_proportion_to_its_size() {
        // 40 of 1000 bytes are header: P(header) = 0.04; n = 20 000, σ ≈ 27.7.
        let mut p = process(CorruptionConfig {
            probability: 1.0,
            ..CorruptionConfig::default()
        });
        let in_header = (0..20_000)
            .filter(|_| p.apply(&mut vec![0u8; 1000], 40).unwrap().header)
            .count() as f64;
        assert!((in_header - 800.0).abs() < 5.0 * 27.7, "{in_header}");
    }

    #[test]
    fn empty_header_region_sends_header_flips_to_the_payload() {
        let mut p = process(CorruptionConfig {
            probability: 1.0,
            region: CorruptRegion::Header,
            ..CorruptionConfig::default()
        });
        let c = p.apply(&mut [0u8; 10], 0).unwrap();
        assert_eq!((c.header, c.payload), (false, true));
        assert_eq!(
            p.apply(&mut [], 0),
            None,
            "nothing to flip in an empty datagram"
        );
    }

    #[test]
    fn bursts_last_min_to_max_packets_with_the_mean_length() {
        // Bursts of 2..=10 packets, uniform: mean 6, σ(L) = sqrt((9²−1)/12) ≈ 2.58.
        let mut p = process(CorruptionConfig {
            burst: Some(CorruptBurst {
                probability: 0.02,
                min_packets: 2,
                max_packets: 10,
            }),
            ..CorruptionConfig::default()
        });
        let hits: Vec<bool> = (0..300_000)
            .map(|_| p.apply(&mut [0u8; 100], 0).is_some())
            .collect();
        // A burst may start right after another ends and merge with it, so
        // measure bursts from the process itself rather than from runs.
        let runs = run_lengths(&hits);
        assert!(runs.iter().all(|&r| r >= 2), "no burst shorter than MIN");
        let mut q = process(CorruptionConfig {
            burst: Some(CorruptBurst {
                probability: 1.0,
                min_packets: 2,
                max_packets: 10,
            }),
            ..CorruptionConfig::default()
        });
        let mut lengths = Vec::new();
        for _ in 0..5_000 {
            q.step_burst();
            let mut length = 1;
            while q.burst_remaining > 0 {
                q.step_burst();
                length += 1;
            }
            lengths.push(length);
        }
        assert!(lengths.iter().all(|l| (2..=10).contains(l)));
        assert!(lengths.contains(&2) && lengths.contains(&10));
        let mean = lengths.iter().sum::<u32>() as f64 / lengths.len() as f64;
        // σ(mean) = 2.58/√5000 ≈ 0.0365.
        assert!((mean - 6.0).abs() < 5.0 * 0.0365, "mean {mean}");
    }

    #[test]
    fn gemodel_corruption_is_bursty() {
        // p = 0.01, r = 0.25: bursts of mean 1/r = 4 packets.
        let mut p = process(CorruptionConfig {
            gemodel: Some(GilbertElliott::from_p(0.01)).map(|g| GilbertElliott { r: 0.25, ..g }),
            ..CorruptionConfig::default()
        });
        let hits: Vec<bool> = (0..200_000)
            .map(|_| p.apply(&mut [0u8; 50], 0).is_some())
            .collect();
        let runs = run_lengths(&hits);
        let mean = runs.iter().sum::<usize>() as f64 / runs.len() as f64;
        // ≈ 1 540 bursts, σ(L) = sqrt(0.75)/0.25 ≈ 3.46, σ(mean) ≈ 0.088.
        assert!((mean - 4.0).abs() < 5.0 * 0.088, "mean {mean}");
    }

    #[test]
    fn region_text_round_trips() {
        for text in ["any", "header", "payload", "header=0.95"] {
            let region: CorruptRegion = text.parse().unwrap();
            assert_eq!(region.to_string(), text);
        }
        assert_eq!(
            "header=95%".parse::<CorruptRegion>(),
            Ok(CorruptRegion::HeaderShare(0.95))
        );
        assert!("middle".parse::<CorruptRegion>().is_err());
    }
}
