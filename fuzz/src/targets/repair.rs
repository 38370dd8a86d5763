//! `repair`: REPAIR frames and the erasure decoder (`sift::fec`,
//! `docs/repair.md`) in a scripted session. The input picks a sender's
//! source packets (lengths, which numbers are no source packet), which of
//! them are lost, the decoder's [`Limits`] and the receiver's store budget,
//! then a script of operations: repair symbols the sender's encoder makes,
//! the same with a byte flipped, forged REPAIR frames near the session's
//! packet numbers, raw bytes after a REPAIR type, late arrivals of lost
//! packets, and the receiver forgetting old packet numbers. Every repair
//! goes through `Frame::encode` and `parse_frames` before the decoder.
//!
//! Invariants, after every operation:
//! - nothing panics;
//! - an encoder-made REPAIR frame encodes to `encoded_len` bytes that
//!   decode to the same frame; any decoded frame re-encodes and decodes
//!   equal, with `first <= last`;
//! - the decoder never solves for more than `max_unknowns` packets nor holds
//!   more equations than unknowns;
//! - while every equation the decoder holds came from the encoder, a
//!   rebuilt packet is one the receiver lacked (lost, not yet arrived) and
//!   exactly the sender's payload, a lost number that was no source packet
//!   is never rebuilt, and no solution is rejected.
//!
//! A late packet that was no source packet is not fed to the decoder, as
//! `conn::fec` does not: its unknown stays until solved (to nothing, from
//! honest symbols; to anything, from forged ones).
//!
//! Format (a hand-made byte script, so seeds can be written): a header, one
//! byte per packet, then operations until the input ends (see [`Script`]).

use std::collections::BTreeSet;

use sift::fec::{encode_repair, Decoder, Limits, Rebuilt, RepairSymbol, SymbolStore, Unused};
use sift::wire::{frame_type, parse_frames, put_varint, Frame, VARINT_MAX};

use super::{pseudo_random_seeds, Seed};

/// Most source packets in a session.
const MAX_PACKETS: u64 = 64;
/// Most operations one input runs.
const MAX_OPS: usize = 96;
/// Payload lengths go up in steps of this many bytes (63 steps: 1449 bytes).
const LENGTH_STEP: usize = 23;

/// Reads the script's numbers; `None` once the input runs out.
struct Script<'a> {
    data: &'a [u8],
}

impl<'a> Script<'a> {
    fn u8(&mut self) -> Option<u8> {
        let (&first, rest) = self.data.split_first()?;
        self.data = rest;
        Some(first)
    }

    fn u16(&mut self) -> Option<u16> {
        Some(u16::from_be_bytes([self.u8()?, self.u8()?]))
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_be_bytes([
            self.u8()?,
            self.u8()?,
            self.u8()?,
            self.u8()?,
        ]))
    }

    fn bytes(&mut self, len: usize) -> &'a [u8] {
        let (taken, rest) = self.data.split_at(len.min(self.data.len()));
        self.data = rest;
        taken
    }
}

/// Packet `pn`'s payload: `len` bytes that differ between packets.
fn payload(pn: u64, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (pn as usize).wrapping_mul(31).wrapping_add(i * 7) as u8 ^ (i >> 8) as u8)
        .collect()
}

/// The session: both ends' view of the packets `base..base + count`.
struct Session {
    base: u64,
    count: u64,
    limits: Limits,
    receiver_budget: usize,
    sender: SymbolStore,
    receiver: SymbolStore,
    decoder: Decoder,
    /// Packet numbers lost and neither arrived late nor rebuilt.
    missing: BTreeSet<u64>,
    /// Some equation held came from a forged, raw or flipped symbol: a
    /// solution may be wrong until no equation is left.
    tainted: bool,
    /// A wrong rebuilt payload went into the receiver's store: later
    /// equations may be wrong for good.
    poisoned: bool,
    /// The decoder's rejected solutions when the last forged equation went.
    rejected_before: u64,
}

impl Session {
    /// Header: count (1), flags (1), base (4), max_unknowns (1), max_span
    /// (2), max_symbol_len (2), receiver budget (2), receiver floor (1);
    /// then per packet one byte: bit 0 lost, bit 1 no source packet, bits
    /// 2..8 the length in steps of [`LENGTH_STEP`].
    fn new(script: &mut Script<'_>) -> Option<Self> {
        let count = 1 + u64::from(script.u8()?) % MAX_PACKETS;
        let flags = script.u8()?;
        let mut base = u64::from(script.u32()?);
        if flags & 1 != 0 {
            // Packet numbers near the top of the varint range.
            base += VARINT_MAX - (1 << 33);
        }
        let max_unknowns = usize::from(script.u8()? % 41);
        let max_span = match script.u16()? {
            u16::MAX => Limits::default().max_span,
            span => u64::from(span % 4097),
        };
        let max_symbol_len = match script.u16()? {
            u16::MAX => Limits::default().max_symbol_len,
            len => usize::from(len),
        };
        let limits = Limits {
            max_unknowns,
            max_span,
            max_symbol_len,
        };
        let receiver_budget = match script.u16()? {
            budget if flags & 2 != 0 => usize::from(budget) * 4,
            _ => usize::MAX,
        };
        let floor = u64::from(script.u8()?);

        let mut sender = SymbolStore::default();
        let mut receiver = SymbolStore::default();
        if flags & 4 != 0 {
            receiver.start_at(base + floor);
        }
        let mut missing = BTreeSet::new();
        for pn in base..base + count {
            let kind = script.u8()?;
            let lost = kind & 1 != 0;
            let source = kind & 2 == 0;
            let bytes = payload(pn, usize::from(kind >> 2) * LENGTH_STEP);
            if source {
                sender.insert(pn, &bytes, usize::MAX);
            }
            if lost {
                missing.insert(pn);
            } else if source {
                receiver.insert(pn, &bytes, receiver_budget);
            }
        }
        Some(Self {
            base,
            count,
            limits,
            receiver_budget,
            sender,
            receiver,
            decoder: Decoder::new(limits),
            missing,
            tainted: false,
            poisoned: false,
            rejected_before: 0,
        })
    }

    /// The session's packet number at `offset`, wrapped into the session.
    fn pn(&self, offset: u64) -> u64 {
        self.base + offset % self.count
    }

    /// One operation; `None` once the input runs out.
    fn step(&mut self, script: &mut Script<'_>) -> Option<()> {
        match script.u8()? % 8 {
            0 => {
                let first = self.pn(u64::from(script.u8()?));
                let last = (first + u64::from(script.u8()?)).min(self.base + self.count - 1);
                let seed = u64::from(script.u32()?);
                let symbol = encode_repair(&self.sender, first, last, seed);
                self.deliver_encoded(first, last, seed, &symbol, true);
            }
            1 => {
                let first = self.pn(u64::from(script.u8()?));
                let last = (first + u64::from(script.u8()?)).min(self.base + self.count - 1);
                let seed = u64::from(script.u32()?);
                let at = usize::from(script.u16()?);
                let flip = script.u8()?;
                let mut symbol = encode_repair(&self.sender, first, last, seed);
                let len = symbol.len();
                symbol[at % len] ^= flip;
                self.deliver_encoded(first, last, seed, &symbol, flip == 0);
            }
            2 => {
                // A forged frame around the session, its span possibly
                // reaching below 0 (which must not decode).
                let last = (self.base + u64::from(script.u16()?)).saturating_sub(256);
                let span = u64::from(script.u16()?);
                let seed = u64::from(script.u32()?);
                let padded_len = usize::from(script.u16()? % 2048);
                let given = usize::from(script.u8()?);
                let mut symbol = script.bytes(given).to_vec();
                let filler = symbol.first().copied().unwrap_or(0);
                if symbol.len() < padded_len {
                    symbol.resize(padded_len, filler);
                }
                let mut bytes = Vec::new();
                put_varint(&mut bytes, frame_type::REPAIR);
                put_varint(&mut bytes, last);
                put_varint(&mut bytes, span);
                put_varint(&mut bytes, seed);
                put_varint(&mut bytes, symbol.len() as u64);
                bytes.extend_from_slice(&symbol);
                let decoded = self.deliver_bytes(&bytes);
                assert_eq!(decoded, span <= last, "a span below 0 must not decode");
            }
            3 => {
                let len = usize::from(script.u8()?);
                let mut bytes = Vec::new();
                put_varint(&mut bytes, frame_type::REPAIR);
                bytes.extend_from_slice(script.bytes(len));
                self.deliver_bytes(&bytes);
            }
            4 => {
                // The k-th packet still missing arrives after all.
                let k = usize::from(script.u8()?);
                if !self.missing.is_empty() {
                    let pn = *self.missing.iter().nth(k % self.missing.len())?;
                    self.missing.remove(&pn);
                    if let Some(bytes) = self.sender.get(pn).map(<[u8]>::to_vec) {
                        self.receiver.insert(pn, &bytes, self.receiver_budget);
                        let rebuilt = self.decoder.on_source(pn, &bytes);
                        self.check_rebuilt(rebuilt);
                    }
                }
            }
            5 => {
                let below = self.base + u64::from(script.u8()?);
                self.receiver.drop_below(below);
            }
            6 => {
                let below = self.base + u64::from(script.u8()?);
                self.decoder.forget_below(below);
            }
            _ => {
                let count = script.u8()?;
                let mut bytes = Vec::new();
                put_varint(&mut bytes, frame_type::REPAIRED);
                put_varint(&mut bytes, u64::from(count) << 20);
                self.deliver_bytes(&bytes);
            }
        }
        if self.tainted || self.poisoned {
            self.rejected_before = self.decoder.rejected_solutions;
        }
        if self.decoder.equations() == 0 {
            self.tainted = false;
        }
        self.check_limits();
        Some(())
    }

    /// An encoder-made repair symbol (`consistent` unless a byte of it was
    /// flipped) as a REPAIR frame: it round-trips, then reaches the decoder.
    fn deliver_encoded(
        &mut self,
        first: u64,
        last: u64,
        seed: u64,
        symbol: &[u8],
        consistent: bool,
    ) {
        let frame = Frame::Repair {
            last,
            first,
            seed,
            symbol,
        };
        let mut bytes = Vec::new();
        frame.encode(&mut bytes);
        assert_eq!(bytes.len(), frame.encoded_len(), "REPAIR encoded_len");
        let mut frames = parse_frames(&bytes);
        let again = frames
            .next()
            .expect("one frame")
            .expect("an encoded REPAIR decodes");
        assert_eq!(again, frame);
        assert!(frames.next().is_none(), "REPAIR encoded as two frames");
        self.repair(&again, consistent);
    }

    /// Frames parsed from `bytes`, each checked and handed over; whether
    /// the first one decoded.
    fn deliver_bytes(&mut self, bytes: &[u8]) -> bool {
        let mut first_decoded = None;
        for frame in parse_frames(bytes) {
            let Ok(frame) = frame else {
                first_decoded.get_or_insert(false);
                break;
            };
            first_decoded.get_or_insert(true);
            let mut reencoded = Vec::new();
            frame.encode(&mut reencoded);
            assert_eq!(reencoded.len(), frame.encoded_len());
            let again = parse_frames(&reencoded)
                .next()
                .expect("one frame")
                .expect("a re-encoded frame decodes");
            assert_eq!(again, frame);
            self.repair(&frame, false);
        }
        first_decoded.unwrap_or(false)
    }

    /// A decoded frame at the receiver: REPAIR goes to the decoder.
    fn repair(&mut self, frame: &Frame<'_>, consistent: bool) {
        let &Frame::Repair {
            last,
            first,
            seed,
            symbol,
        } = frame
        else {
            return;
        };
        assert!(first <= last && last <= VARINT_MAX);
        let missing = &self.missing;
        let outcome = self.decoder.on_repair(
            RepairSymbol {
                first,
                last,
                seed,
                symbol,
            },
            &self.receiver,
            |pn| !missing.contains(&pn),
        );
        match outcome {
            Ok(rebuilt) => {
                if !consistent {
                    self.tainted = true;
                }
                self.check_rebuilt(rebuilt);
            }
            Err(Unused::Malformed) => {
                let limits = self.limits;
                assert!(
                    last - first >= limits.max_span
                        || symbol.len() < 2
                        || symbol.len() > limits.max_symbol_len
                        || !consistent
                        || self.poisoned
                        || last - first + 1 > limits.max_unknowns as u64,
                    "an encoder-made symbol within the limits is malformed"
                );
            }
            Err(Unused::NothingMissing | Unused::SpanNotKept | Unused::Redundant) => {}
        }
    }

    /// Rebuilt packets were lacking; while the equations are the encoder's,
    /// they are the sender's payloads. They then count as arrived.
    fn check_rebuilt(&mut self, rebuilt: Vec<Rebuilt>) {
        let exact = !self.tainted && !self.poisoned;
        if exact {
            assert_eq!(
                self.decoder.rejected_solutions, self.rejected_before,
                "a solution of encoder-made symbols was rejected"
            );
        }
        for packet in rebuilt {
            let pn = packet.packet_number;
            // A lost number that was no source packet and arrived late
            // keeps its unknown (conn::fec feeds `on_source` source packets
            // only): honest symbols solve it to nothing, forged ones may
            // "rebuild" it.
            let was_missing = self.missing.remove(&pn);
            assert!(
                was_missing || !exact,
                "rebuilt packet {pn}, which was not missing"
            );
            let sent = self.sender.get(pn);
            if exact {
                assert_eq!(
                    sent,
                    Some(&packet.payload[..]),
                    "packet {pn} rebuilt wrong from encoder-made symbols"
                );
            } else if sent != Some(&packet.payload[..]) {
                self.poisoned = true;
            }
            self.receiver
                .insert(pn, &packet.payload, self.receiver_budget);
        }
    }

    fn check_limits(&self) {
        let unknowns = self.decoder.unknowns();
        let equations = self.decoder.equations();
        assert!(
            unknowns <= self.limits.max_unknowns,
            "{unknowns} unknowns over {:?}",
            self.limits
        );
        assert!(
            equations <= unknowns,
            "{equations} equations over {unknowns} unknowns"
        );
    }
}

/// Runs the session `data` scripts.
pub fn run(data: &[u8]) {
    let mut script = Script { data };
    let Some(mut session) = Session::new(&mut script) else {
        return;
    };
    for _ in 0..MAX_OPS {
        if session.step(&mut script).is_none() {
            break;
        }
    }
}

/// Writes a script (the inverse of [`Session::new`] and [`Session::step`]).
#[derive(Default)]
struct Writer {
    bytes: Vec<u8>,
}

impl Writer {
    /// The header and `packets` (one kind byte each).
    fn session(flags: u8, base: u32, limits: (u8, u16, u16), budget: u16, packets: &[u8]) -> Self {
        let mut w = Self::default();
        w.bytes.push((packets.len() - 1) as u8);
        w.bytes.push(flags);
        w.bytes.extend_from_slice(&base.to_be_bytes());
        w.bytes.push(limits.0);
        w.bytes.extend_from_slice(&limits.1.to_be_bytes());
        w.bytes.extend_from_slice(&limits.2.to_be_bytes());
        w.bytes.extend_from_slice(&budget.to_be_bytes());
        w.bytes.push(0);
        w.bytes.extend_from_slice(packets);
        w
    }

    fn encoded(mut self, first: u8, len: u8, seed: u32) -> Self {
        self.bytes.extend_from_slice(&[0, first, len]);
        self.bytes.extend_from_slice(&seed.to_be_bytes());
        self
    }

    fn flipped(mut self, first: u8, len: u8, seed: u32, at: u16, flip: u8) -> Self {
        self.bytes.extend_from_slice(&[1, first, len]);
        self.bytes.extend_from_slice(&seed.to_be_bytes());
        self.bytes.extend_from_slice(&at.to_be_bytes());
        self.bytes.push(flip);
        self
    }

    fn forged(mut self, last: u16, span: u16, seed: u32, padded: u16, symbol: &[u8]) -> Self {
        self.bytes.push(2);
        self.bytes.extend_from_slice(&last.to_be_bytes());
        self.bytes.extend_from_slice(&span.to_be_bytes());
        self.bytes.extend_from_slice(&seed.to_be_bytes());
        self.bytes.extend_from_slice(&padded.to_be_bytes());
        self.bytes.push(symbol.len() as u8);
        self.bytes.extend_from_slice(symbol);
        self
    }

    fn raw(mut self, after_type: &[u8]) -> Self {
        self.bytes.push(3);
        self.bytes.push(after_type.len() as u8);
        self.bytes.extend_from_slice(after_type);
        self
    }

    fn late(mut self, k: u8) -> Self {
        self.bytes.extend_from_slice(&[4, k]);
        self
    }

    fn drop_below(mut self, offset: u8) -> Self {
        self.bytes.extend_from_slice(&[5, offset]);
        self
    }

    fn forget_below(mut self, offset: u8) -> Self {
        self.bytes.extend_from_slice(&[6, offset]);
        self
    }

    fn repaired(mut self) -> Self {
        self.bytes.extend_from_slice(&[7, 3]);
        self
    }

    fn seed(self, name: &str) -> Seed {
        Seed::new(name, self.bytes)
    }
}

/// Packet kinds: full-size (1449-byte) source packets, lost where `lost`
/// says, no source packet where `non_source` says.
fn packets(count: usize, lost: &[usize], non_source: &[usize]) -> Vec<u8> {
    (0..count)
        .map(|i| {
            let len = if i % 3 == 0 { 63 } else { (i * 5 % 64) as u8 };
            (len << 2) | u8::from(lost.contains(&i)) | (u8::from(non_source.contains(&i)) << 1)
        })
        .collect()
}

/// Default limits in the header's encoding.
const DEFAULT_LIMITS: (u8, u16, u16) = (40, u16::MAX, u16::MAX);

/// Sessions that rebuild, late packets, lost non-source numbers, tight
/// limits and stores, forged and raw frames, high packet numbers; and
/// random scripts.
pub fn seeds() -> Vec<Seed> {
    let mut seeds = vec![
        Writer::session(0, 0, DEFAULT_LIMITS, 0, &packets(20, &[5], &[]))
            .encoded(0, 19, 1)
            .seed("one-loss"),
        Writer::session(0, 1000, DEFAULT_LIMITS, 0, &packets(30, &[3, 17, 18], &[9]))
            .encoded(0, 29, 1)
            .encoded(0, 29, 2)
            .late(1)
            .encoded(0, 29, 3)
            .repaired()
            .seed("three-losses-one-late"),
        Writer::session(0, 7, DEFAULT_LIMITS, 0, &packets(16, &[2, 4], &[4]))
            .encoded(0, 15, 9)
            .encoded(0, 15, 10)
            .seed("lost-non-source"),
        Writer::session(
            0,
            0,
            (2, 64, u16::MAX),
            0,
            &packets(40, &[1, 2, 3, 30, 31], &[]),
        )
        .encoded(0, 39, 1)
        .encoded(0, 10, 2)
        .encoded(28, 5, 3)
        .encoded(28, 5, 4)
        .forget_below(29)
        .seed("tight-limits"),
        Writer::session(6, 0, DEFAULT_LIMITS, 500, &packets(24, &[20, 22], &[]))
            .encoded(0, 23, 5)
            .encoded(18, 5, 6)
            .drop_below(21)
            .encoded(20, 3, 7)
            .seed("small-store"),
        Writer::session(
            1,
            u32::MAX,
            DEFAULT_LIMITS,
            0,
            &packets(64, &[0, 63], &[10]),
        )
        .encoded(0, 63, u32::MAX)
        .encoded(0, 63, 0)
        .seed("high-packet-numbers"),
        Writer::session(0, 300, DEFAULT_LIMITS, 0, &packets(12, &[4, 5, 6], &[]))
            .encoded(0, 11, 1)
            .forged(300, 11, 2, 1500, &[0xaa; 40])
            .flipped(0, 11, 3, 17, 0x40)
            .raw(&[0x41, 0x40, 0x0b, 0x04, 0x03, 0x00, 0x00, 0x01])
            .forged(3, 300, 4, 0, b"below zero")
            .late(0)
            .encoded(0, 11, 5)
            .encoded(0, 11, 6)
            .seed("forged-then-honest"),
    ];
    seeds.extend(pseudo_random_seeds(
        0x5ac2_u64,
        &[32, 64, 128, 256, 512, 1024],
    ));
    seeds
}
