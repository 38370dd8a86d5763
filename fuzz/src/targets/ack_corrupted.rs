//! `ack_corrupted`: ACK and CORRUPTED processing against a sender's ledger.
//! An arbitrary sequence of [`Op`]s drives [`Recovery`] (sends, ACKs,
//! CORRUPTED notices, forged ranges up to 2^62, timer expiries, discarded
//! spaces) while a model keeps the ledger the sender should have.
//!
//! Invariants, after every operation:
//! - the outstanding packets of every space are exactly the model's: each
//!   sent packet leaves the ledger once, as acked, lost, corrupted or
//!   discarded, never twice (so never both acked and corrupted or lost);
//! - bytes in flight equal the sum of the in-flight sizes outstanding (no
//!   underflow hidden by saturation, no overflow);
//! - acked packets lie in the ACK's ranges, corrupted ones in the
//!   CORRUPTED ranges (those named beyond the notice budget come back as
//!   lost, and count as losses), packets declared lost by an ACK lie at or
//!   below the largest acknowledged;
//! - the loss and corruption counters match the model.
//!
//! Forged ranges must be cheap: a range naming 2^62 packet numbers costs
//! what the ledger holds, not what the range spans (libFuzzer's -timeout
//! catches the opposite).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::RangeInclusive;
use std::time::{Duration, Instant};

use arbitrary::{Arbitrary, Unstructured};
use sift::cc::CcConfig;
use sift::recovery::{Recovery, RecoveryConfig, SentPacket, SpaceId, TimeoutMode};
use sift::wire::VARINT_MAX;

use super::{base_instant, pseudo_random_seeds, Seed};

/// Bytes per packet counted against the window.
const MSS: u64 = 1350;
/// Most operations one input runs.
const MAX_OPS: usize = 512;
/// Most additional (gap, length) pairs in one ACK or CORRUPTED op.
const MAX_RANGES_PER_OP: usize = 64;

/// A packet-number space.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Space {
    Initial,
    Handshake,
    Data,
}

impl Space {
    fn id(self) -> SpaceId {
        match self {
            Space::Initial => SpaceId::Initial,
            Space::Handshake => SpaceId::Handshake,
            Space::Data => SpaceId::Data,
        }
    }
}

/// Ranges in the shape an ACK or CORRUPTED frame carries them (RFC 9000
/// §19.3.1), anchored below the next packet number of the space.
#[derive(Arbitrary, Clone, Debug)]
pub struct Ranges {
    /// The largest number named is `next_packet_number - 1 - below_next`.
    pub below_next: u16,
    /// The first range's length below the largest.
    pub first: u16,
    /// Then (gap, length) pairs going down.
    pub more: Vec<(u16, u16)>,
}

impl Ranges {
    /// The ranges, largest first; empty if nothing was sent or the anchor
    /// falls below 0. Pairs that would go below 0 are dropped, as a decoder
    /// would reject them.
    fn resolve(&self, next_packet_number: u64) -> Vec<RangeInclusive<u64>> {
        let Some(largest) = next_packet_number
            .checked_sub(1)
            .and_then(|top| top.checked_sub(u64::from(self.below_next)))
        else {
            return Vec::new();
        };
        let mut smallest = largest.saturating_sub(u64::from(self.first));
        let mut ranges = vec![smallest..=largest];
        for (gap, len) in self.more.iter().take(MAX_RANGES_PER_OP) {
            let Some(end) = smallest
                .checked_sub(u64::from(*gap))
                .and_then(|v| v.checked_sub(2))
            else {
                break;
            };
            let Some(start) = end.checked_sub(u64::from(*len)) else {
                break;
            };
            ranges.push(start..=end);
            smallest = start;
        }
        ranges
    }
}

/// One thing that happens to the sender.
#[derive(Arbitrary, Clone, Debug)]
pub enum Op {
    /// A packet leaves with the next number (after skipping `skip`).
    Send {
        space: Space,
        size: u16,
        ack_eliciting: bool,
        /// Counted in flight without eliciting an ACK (padding).
        padded: bool,
        skip: u8,
        advance_ms: u8,
    },
    /// An ACK frame: never names a number not yet sent (the connection
    /// rejects such frames before recovery sees them).
    Ack {
        space: Space,
        ranges: Ranges,
        ack_delay_ms: u16,
        advance_ms: u16,
    },
    /// A CORRUPTED frame: anchored like an ACK, or `ahead` numbers past the
    /// next packet number (never-sent names, which must be ignored).
    Corrupted {
        space: Space,
        ranges: Ranges,
        ahead: u32,
        advance_ms: u16,
    },
    /// A CORRUPTED frame naming `start..=start + len`, anywhere below 2^62.
    ForgedCorrupted {
        space: Space,
        start: u64,
        len: u64,
    },
    /// An ACK of every number from 0 to the last one sent.
    AckEverything {
        space: Space,
    },
    /// Wait until the loss-detection timer and fire it.
    Timeout,
    /// Let time pass.
    Advance {
        ms: u16,
    },
    /// Keys of a space are discarded.
    Discard {
        space: Space,
    },
    HandshakeKeys,
    HandshakeConfirmed,
    AppLimited(bool),
}

/// The sender's configuration.
#[derive(Arbitrary, Clone, Debug)]
pub struct Setup {
    /// Index into [`CcConfig::NAMES`].
    pub controller: u8,
    /// Classic RTO instead of RFC 9002 PTO.
    pub rto: bool,
    pub pacing: bool,
}

/// How a packet left the ledger.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fate {
    Acked,
    Lost,
    Corrupted,
    Discarded,
}

/// What the sender's ledger should hold.
#[derive(Default)]
struct Model {
    /// (space, packet number) → (size, in flight).
    outstanding: BTreeMap<(Space, u64), (u64, bool)>,
    gone: BTreeMap<(Space, u64), Fate>,
    next_packet_number: [u64; 3],
    lost: u64,
    corrupted: u64,
}

impl Model {
    /// Records that `packets` left the ledger as `fate`.
    fn remove(&mut self, space: Space, packets: &[SentPacket<u64>], fate: Fate) {
        for packet in packets {
            let key = (space, packet.packet_number);
            assert!(
                self.outstanding.remove(&key).is_some(),
                "{space:?} packet {} reported {fate:?} but it was {:?}",
                packet.packet_number,
                self.gone.get(&key)
            );
            assert_eq!(
                packet.frames,
                [packet.packet_number],
                "the packet's own record"
            );
            self.gone.insert(key, fate);
            match fate {
                Fate::Lost => self.lost += 1,
                Fate::Corrupted => self.corrupted += 1,
                Fate::Acked | Fate::Discarded => {}
            }
        }
    }
}

fn assert_within(packets: &[SentPacket<u64>], ranges: &[RangeInclusive<u64>], what: &str) {
    for packet in packets {
        assert!(
            ranges.iter().any(|r| r.contains(&packet.packet_number)),
            "{what} packet {} outside {ranges:?}",
            packet.packet_number
        );
    }
}

/// Runs the operations of `data` and checks the ledger after each.
pub fn run(data: &[u8]) {
    let mut input = Unstructured::new(data);
    let Ok(setup) = Setup::arbitrary(&mut input) else {
        return;
    };
    let names = CcConfig::NAMES;
    let cc: CcConfig = names[usize::from(setup.controller) % names.len()]
        .parse()
        .expect("every listed name parses");
    let config = RecoveryConfig {
        timeout: if setup.rto {
            TimeoutMode::Rto
        } else {
            TimeoutMode::Pto
        },
        pacing: setup.pacing,
        ..RecoveryConfig::default()
    };
    let mut recovery: Recovery<u64> = Recovery::new(config, cc.build(MSS), MSS);
    let mut model = Model::default();
    let mut now = base_instant();
    let mut confirmed = false;

    // Operations until the input runs out (arbitrary's own iterators stop
    // at the first zero continuation byte, which random seeds hit at once).
    for _ in 0..MAX_OPS {
        if input.is_empty() {
            break;
        }
        let Ok(op) = Op::arbitrary(&mut input) else {
            break;
        };
        apply(&mut recovery, &mut model, &mut now, &mut confirmed, &op);
        check(&recovery, &model);
    }
}

fn apply(
    recovery: &mut Recovery<u64>,
    model: &mut Model,
    now: &mut Instant,
    confirmed: &mut bool,
    op: &Op,
) {
    match op {
        Op::Send {
            space,
            size,
            ack_eliciting,
            padded,
            skip,
            advance_ms,
        } => {
            *now += Duration::from_millis(u64::from(*advance_ms));
            let next = &mut model.next_packet_number[space.id().index()];
            let packet_number = *next + u64::from(*skip);
            *next = packet_number + 1;
            let size = u64::from(*size);
            let in_flight = *ack_eliciting || *padded;
            model
                .outstanding
                .insert((*space, packet_number), (size, in_flight));
            recovery.on_packet_sent(
                space.id(),
                SentPacket {
                    packet_number,
                    time_sent: *now,
                    size,
                    ack_eliciting: *ack_eliciting,
                    in_flight,
                    app_limited: false,
                    pmtu_probe: false,
                    ecn: sift::wire::Ecn::NotEct,
                    delivery: Default::default(),
                    frames: vec![packet_number],
                },
                *now,
            );
        }
        Op::Ack {
            space,
            ranges,
            ack_delay_ms,
            advance_ms,
        } => {
            *now += Duration::from_millis(u64::from(*advance_ms));
            let ranges = ranges.resolve(model.next_packet_number[space.id().index()]);
            ack(recovery, model, *now, *space, ranges, *ack_delay_ms);
        }
        Op::AckEverything { space } => {
            let next = model.next_packet_number[space.id().index()];
            if let Some(last) = next.checked_sub(1) {
                ack(recovery, model, *now, *space, vec![0..=last], 0);
            }
        }
        Op::Corrupted {
            space,
            ranges,
            ahead,
            advance_ms,
        } => {
            *now += Duration::from_millis(u64::from(*advance_ms));
            let anchor = model.next_packet_number[space.id().index()] + u64::from(*ahead);
            let ranges = ranges.resolve(anchor);
            corrupted(recovery, model, *now, *space, ranges);
        }
        Op::ForgedCorrupted { space, start, len } => {
            let start = start & VARINT_MAX;
            let end = start.saturating_add(*len).min(VARINT_MAX);
            corrupted(recovery, model, *now, *space, vec![start..=end]);
        }
        Op::Timeout => {
            let anti_deadlock = !*confirmed;
            let Some(at) = recovery.loss_detection_timer(*now, anti_deadlock) else {
                return;
            };
            *now = (*now).max(at);
            let outcome = recovery.on_loss_detection_timeout(*now);
            match outcome.lost_space {
                Some(space_id) => {
                    let space = space_of(space_id);
                    model.remove(space, &outcome.lost, Fate::Lost);
                }
                None => assert!(outcome.lost.is_empty(), "lost packets without a space"),
            }
        }
        Op::Advance { ms } => *now += Duration::from_millis(u64::from(*ms)),
        Op::Discard { space } => {
            let dropped = recovery.discard_space(space.id());
            model.remove(*space, &dropped, Fate::Discarded);
        }
        Op::HandshakeKeys => recovery.set_handshake_keys(),
        Op::HandshakeConfirmed => {
            *confirmed = true;
            recovery.set_handshake_confirmed();
        }
        Op::AppLimited(limited) => recovery.set_app_limited(*limited),
    }
}

fn space_of(id: SpaceId) -> Space {
    match id {
        SpaceId::Initial => Space::Initial,
        SpaceId::Handshake => Space::Handshake,
        SpaceId::Data => Space::Data,
    }
}

fn ack(
    recovery: &mut Recovery<u64>,
    model: &mut Model,
    now: Instant,
    space: Space,
    ranges: Vec<RangeInclusive<u64>>,
    ack_delay_ms: u16,
) {
    if ranges.is_empty() {
        return;
    }
    let outcome = recovery.on_ack_received(
        space.id(),
        ranges.iter().cloned(),
        Duration::from_millis(u64::from(ack_delay_ms)),
        now,
    );
    assert_within(&outcome.acked, &ranges, "acked");
    model.remove(space, &outcome.acked, Fate::Acked);
    let largest_acked = recovery
        .largest_acked(space.id())
        .expect("an ACK sets the largest acknowledged");
    for packet in &outcome.lost {
        assert!(
            packet.packet_number <= largest_acked,
            "packet {} declared lost above the largest acked {largest_acked}",
            packet.packet_number
        );
    }
    model.remove(space, &outcome.lost, Fate::Lost);
}

fn corrupted(
    recovery: &mut Recovery<u64>,
    model: &mut Model,
    now: Instant,
    space: Space,
    ranges: Vec<RangeInclusive<u64>>,
) {
    let named = recovery.on_corrupted(space.id(), ranges.iter().cloned(), now);
    assert_within(&named.corrupted, &ranges, "corrupted");
    assert_within(&named.lost, &ranges, "corrupted and over budget");
    model.remove(space, &named.corrupted, Fate::Corrupted);
    // Beyond the notice budget a named packet is a loss like any other.
    model.remove(space, &named.lost, Fate::Lost);
}

/// The ledger, bytes in flight and counters agree with the model.
fn check(recovery: &Recovery<u64>, model: &Model) {
    let mut expected_in_flight = 0u64;
    for space in [Space::Initial, Space::Handshake, Space::Data] {
        let ledger: Vec<(u64, u64, bool)> = recovery
            .outstanding(space.id())
            .map(|p| (p.packet_number, p.size, p.in_flight))
            .collect();
        let expected: Vec<(u64, u64, bool)> = model
            .outstanding
            .range((space, 0)..=(space, u64::MAX))
            .map(|(&(_, pn), &(size, in_flight))| (pn, size, in_flight))
            .collect();
        assert_eq!(ledger, expected, "{space:?} ledger");
        expected_in_flight += expected
            .iter()
            .filter(|(_, _, in_flight)| *in_flight)
            .map(|(_, size, _)| size)
            .sum::<u64>();
    }
    assert_eq!(recovery.bytes_in_flight(), expected_in_flight);
    let stats = recovery.stats();
    assert_eq!(stats.lost_packets, model.lost);
    assert_eq!(stats.corrupted_packets, model.corrupted);
    assert!(recovery.window() > 0, "a zero congestion window");
    // Each packet number is accounted for at most once.
    let outstanding: BTreeSet<_> = model.outstanding.keys().collect();
    assert!(model.gone.keys().all(|key| !outstanding.contains(key)));
}

/// Fixed pseudo-random inputs (`arbitrary` has no inverse).
pub fn seeds() -> Vec<Seed> {
    pseudo_random_seeds(0xac0e_u64, &[64, 128, 256, 512, 1024, 2048, 4096, 4096])
}
