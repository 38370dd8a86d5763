//! Erasure coding on a connection (`crate::fec`, `docs/repair.md`): the
//! sender's copy of its recent source packets and the repair it owes, the
//! receiver's copy of what arrived and its decoder.
//!
//! Decisions:
//! - coding is negotiated by the `repair` transport parameter (sift ends
//!   only) and acts in the 1-RTT space alone;
//! - a source packet is a 1-RTT packet with a STREAM frame and no REPAIR
//!   frame, both ends judging by its frames, so neither needs telling;
//! - the sender keeps source symbols only while the policy is armed (a
//!   long path that has shown loss), and leaves room for a REPAIR frame's
//!   head in each source packet then, so that a repair symbol over full
//!   packets fits a packet of the same size;
//! - a rebuilt packet is processed and acknowledged as received, so the
//!   sender neither resends it nor counts it lost; the receiver reports the
//!   count (REPAIRED), and the sender's loss estimate, which sizes repair,
//!   counts rebuilt packets as lost.

use std::collections::BTreeSet;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::fec::decoder::{Decoder, Limits, Rebuilt, RepairSymbol, Unused};
use crate::fec::policy::{PathView, RepairMode, RepairPolicy};
use crate::fec::symbol::{encode_repair, SymbolStore};
use crate::wire::Frame;

/// The most packet numbers we let a peer's repair symbol span, announced
/// in our `repair` transport parameter.
pub const MAX_SPAN: u64 = 4096;
/// Bytes of source payloads a sender keeps to code over.
const SENDER_STORE_BYTES: usize = 4 << 20;
/// Bytes of source payloads a receiver keeps to subtract.
const RECEIVER_STORE_BYTES: usize = 2 << 20;
/// Room a source packet leaves for a REPAIR frame's head: type (4), last
/// packet number (8), span (2), seed (4), symbol length (2).
pub const SOURCE_HEADROOM: usize = 4 + 8 + 2 + 4 + 2;
/// An interleaved repair symbol spans this many intervals of source packets.
const INTERLEAVED_SPAN_INTERVALS: u64 = 4;
/// Packet outcomes over which the loss estimate averages.
const LOSS_WINDOW: f64 = 500.0;
/// REPAIRED is repeated in this many ACK-carrying packets after it changes.
const REPAIRED_REPEATS: u8 = 3;

/// What coding did on a connection (`Stats::repair`, `--json`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RepairStats {
    /// Both ends offered coding.
    pub negotiated: bool,
    /// Repair symbols sent.
    pub symbols_sent: u64,
    /// Bytes of REPAIR frames sent.
    pub repair_bytes_sent: u64,
    /// Of those, symbols sent for a tail.
    pub tail_symbols_sent: u64,
    /// Repair symbols received.
    pub symbols_received: u64,
    /// Received symbols the decoder could not use (nothing missing, span not
    /// kept, redundant).
    pub symbols_unused: u64,
    /// Packets we rebuilt from the peer's repair symbols.
    pub packets_rebuilt: u64,
    /// Packets the peer says it rebuilt from ours.
    pub peer_rebuilt: u64,
    /// The loss rate the policy sizes repair by.
    pub loss_rate: f64,
}

/// A connection's coding state, both directions.
#[derive(Debug)]
pub(super) struct Coding {
    mode: RepairMode,
    policy: RepairPolicy,
    /// The peer decodes spans up to this long (its transport parameter),
    /// and we take part: coding is negotiated.
    peer_span: Option<u64>,

    // Sending.
    sent: SymbolStore,
    armed: bool,
    /// Source packets sent, not yet acknowledged nor declared lost.
    unacked: BTreeSet<u64>,
    since_repair: u64,
    tail_owed: u64,
    tail_covered: Option<u64>,
    next_seed: u64,
    loss_rate: f64,
    outcomes: f64,

    // Receiving.
    received: SymbolStore,
    storing: bool,
    decoder: Decoder,
    rebuilt: Vec<Rebuilt>,
    repaired_repeats: u8,
    stats: RepairStats,
}

impl Coding {
    pub fn new(mode: RepairMode, policy: RepairPolicy) -> Self {
        Self {
            mode,
            policy,
            peer_span: None,
            sent: SymbolStore::default(),
            armed: false,
            unacked: BTreeSet::new(),
            since_repair: 0,
            tail_owed: 0,
            tail_covered: None,
            next_seed: 0,
            loss_rate: 0.0,
            outcomes: 0.0,
            received: SymbolStore::default(),
            storing: false,
            decoder: Decoder::new(Limits {
                max_span: MAX_SPAN,
                ..Limits::default()
            }),
            rebuilt: Vec::new(),
            repaired_repeats: 0,
            stats: RepairStats::default(),
        }
    }

    /// The peer's `repair` transport parameter.
    pub fn on_peer_params(&mut self, peer_span: Option<u64>) {
        self.peer_span = peer_span.filter(|_| self.mode != RepairMode::Off);
        self.stats.negotiated = self.peer_span.is_some();
    }

    pub fn negotiated(&self) -> bool {
        self.peer_span.is_some()
    }

    pub fn stats(&self) -> RepairStats {
        RepairStats {
            loss_rate: self.loss_rate,
            ..self.stats.clone()
        }
    }

    fn path(&self, min_rtt: Duration) -> PathView {
        PathView {
            min_rtt,
            loss_rate: self.loss_rate,
        }
    }

    // ---- sending ----------------------------------------------------------

    /// Bytes a source packet leaves free for a repair symbol's frame head.
    pub fn source_headroom(&self) -> usize {
        if self.armed {
            SOURCE_HEADROOM
        } else {
            0
        }
    }

    /// A repair symbol is owed: the next packet carries it if the window
    /// and pacing let it leave.
    pub fn repair_due(&self) -> bool {
        self.armed && !self.unacked.is_empty() && (self.tail_owed > 0 || self.interleave_due())
    }

    fn interleave_due(&self) -> bool {
        self.interval()
            .is_some_and(|every| self.since_repair >= every)
    }

    fn interval(&self) -> Option<u64> {
        // Once armed (the path test is in `armed`), only the loss rate.
        self.armed
            .then(|| self.policy.interval_at(self.loss_rate))
            .flatten()
    }

    /// A 1-RTT packet `pn` left with `frames`; `source` says whether it
    /// is a source packet; `more_to_send` whether the streams hold more.
    pub fn on_sent(
        &mut self,
        pn: u64,
        frames: &[u8],
        source: bool,
        more_to_send: bool,
        min_rtt: Duration,
    ) {
        let Some(peer_span) = self.peer_span else {
            return;
        };
        let armed = self.policy.armed(self.mode, &self.path(min_rtt));
        if armed != self.armed {
            self.armed = armed;
            self.sent = SymbolStore::default();
            self.sent.start_at(pn);
            self.unacked.clear();
            self.since_repair = 0;
            self.tail_owed = 0;
            self.tail_covered = None;
        }
        if !self.armed || !source {
            return;
        }
        self.sent.insert(pn, frames, SENDER_STORE_BYTES);
        self.sent
            .drop_below(pn.saturating_sub(peer_span.min(MAX_SPAN) - 1));
        if self.sent.get(pn).is_some() {
            self.unacked.insert(pn);
            self.since_repair += 1;
        }
        if !more_to_send {
            self.owe_tail(min_rtt);
        }
    }

    /// The sender ran out of data: repair for the packets not yet covered
    /// by a tail, enough for the losses they may hold.
    fn owe_tail(&mut self, min_rtt: Duration) {
        let Some(&largest) = self.unacked.last() else {
            return;
        };
        if self.tail_covered.is_some_and(|covered| covered >= largest) {
            return;
        }
        let fresh = self
            .unacked
            .range(self.tail_covered.map_or(0, |c| c + 1)..)
            .count() as u64;
        let owed = self
            .policy
            .tail_symbols(self.mode, &self.path(min_rtt), fresh);
        self.tail_owed = self.tail_owed.max(owed);
        self.tail_covered = Some(largest);
    }

    /// The REPAIR frame owed, encoded into `out` if it fits in `room`
    /// bytes. Returns whether one was written.
    pub fn write_repair(&mut self, room: usize, out: &mut Vec<u8>) -> bool {
        let (Some(peer_span), Some(&last), Some(&oldest_unacked)) =
            (self.peer_span, self.unacked.last(), self.unacked.first())
        else {
            return false;
        };
        let tail = self.tail_owed > 0;
        let span_limit = if tail {
            peer_span.min(MAX_SPAN)
        } else {
            let every = self.interval().unwrap_or(1);
            (every * INTERLEAVED_SPAN_INTERVALS).clamp(1, peer_span.min(MAX_SPAN))
        };
        let first = oldest_unacked
            .max(self.sent.floor())
            .max(last.saturating_sub(span_limit - 1));
        if first > last {
            return false;
        }
        let seed = self.next_seed;
        let symbol = encode_repair(&self.sent, first, last, seed);
        let frame = Frame::Repair {
            last,
            first,
            seed,
            symbol: &symbol,
        };
        if frame.encoded_len() > room {
            return false;
        }
        frame.encode(out);
        self.next_seed += 1;
        self.stats.symbols_sent += 1;
        self.stats.repair_bytes_sent += frame.encoded_len() as u64;
        if tail {
            self.tail_owed -= 1;
            self.stats.tail_symbols_sent += 1;
        } else {
            self.since_repair = 0;
        }
        true
    }

    /// Data-space packets acknowledged (their numbers) and declared lost.
    pub fn on_outcomes(
        &mut self,
        acked: impl IntoIterator<Item = u64>,
        lost: impl IntoIterator<Item = u64>,
    ) {
        if self.peer_span.is_none() {
            return;
        }
        for pn in acked {
            self.unacked.remove(&pn);
            self.count_outcome(false);
        }
        for pn in lost {
            self.unacked.remove(&pn);
            self.count_outcome(true);
        }
        if let Some(&oldest) = self.unacked.first() {
            self.sent.drop_below(oldest);
        } else if self.armed {
            self.sent = SymbolStore::default();
            if let Some(next) = self.tail_covered.map(|c| c + 1) {
                self.sent.start_at(next);
            }
            self.tail_owed = 0;
        }
    }

    /// The loss estimate: an average over about [`LOSS_WINDOW`] packet
    /// outcomes, the plain ratio until that many are seen.
    fn count_outcome(&mut self, lost: bool) {
        self.outcomes += 1.0;
        let weight = 1.0 / self.outcomes.min(LOSS_WINDOW);
        let sample = if lost { 1.0 } else { 0.0 };
        self.loss_rate += (sample - self.loss_rate) * weight;
    }

    /// The peer's REPAIRED count: each new packet it rebuilt was a loss.
    pub fn on_peer_repaired(&mut self, count: u64) {
        if count > self.stats.peer_rebuilt {
            let new = count - self.stats.peer_rebuilt;
            self.stats.peer_rebuilt = count;
            for _ in 0..new.min(1024) {
                self.count_outcome(true);
            }
        }
    }

    // ---- receiving ----------------------------------------------------------

    /// Whether a payload is a source packet's: a STREAM frame, no REPAIR.
    pub fn is_source(frames: &[u8]) -> bool {
        let mut stream = false;
        for frame in crate::wire::parse_frames(frames) {
            match frame {
                Ok(Frame::Stream { .. }) => stream = true,
                Ok(Frame::Repair { .. }) | Err(_) => return false,
                Ok(_) => {}
            }
        }
        stream
    }

    /// A 1-RTT packet arrived and was processed: keep it if it is a
    /// source packet, and take it out of the equations if one was waiting
    /// for it.
    pub fn on_received(&mut self, pn: u64, frames: &[u8], min_rtt: Duration) {
        if self.peer_span.is_none() {
            return;
        }
        if !self.storing {
            self.storing = self.mode == RepairMode::On || min_rtt * 2 >= self.policy.long_path_rtt;
            if !self.storing {
                return;
            }
            self.received.start_at(pn);
        }
        if !Self::is_source(frames) {
            // A late packet the equations may count as unknown: its symbol
            // is empty, and knowing so may solve the others at once (the
            // fuzzer's finding: without it, a lost ACK-only packet that
            // came late held an equation back until one more symbol).
            let rebuilt = self.decoder.on_source(pn, &[]);
            self.keep_rebuilt(rebuilt);
            return;
        }
        self.received.insert(pn, frames, RECEIVER_STORE_BYTES);
        self.received.drop_below(pn.saturating_sub(MAX_SPAN));
        let rebuilt = self.decoder.on_source(pn, frames);
        self.keep_rebuilt(rebuilt);
    }

    /// A REPAIR frame: the packets it lets the decoder rebuild wait in
    /// [`Coding::take_rebuilt`]. `received` says which packet numbers
    /// arrived, for those from `tracked_from` on.
    pub fn on_repair(
        &mut self,
        repair: RepairSymbol<'_>,
        tracked_from: u64,
        received: impl Fn(u64) -> bool,
    ) {
        self.stats.symbols_received += 1;
        if !self.storing {
            // The sender codes, so the path is long: keep from now on.
            self.storing = true;
            self.received.start_at(repair.last + 1);
        }
        // A forgotten packet number that is not kept may have been a lost
        // source packet as well as a non-source one: the equation would be
        // wrong either way we guessed.
        let forgotten = repair.first..tracked_from.min(repair.last.saturating_add(1));
        if forgotten.clone().any(|pn| self.received.get(pn).is_none()) {
            self.stats.symbols_unused += 1;
            return;
        }
        match self.decoder.on_repair(repair, &self.received, received) {
            Ok(rebuilt) => self.keep_rebuilt(rebuilt),
            Err(
                Unused::NothingMissing
                | Unused::Redundant
                | Unused::SpanNotKept
                | Unused::Malformed,
            ) => self.stats.symbols_unused += 1,
        }
    }

    fn keep_rebuilt(&mut self, rebuilt: Vec<Rebuilt>) {
        for packet in &rebuilt {
            self.received
                .insert(packet.packet_number, &packet.payload, RECEIVER_STORE_BYTES);
        }
        self.rebuilt.extend(rebuilt);
    }

    /// Packets rebuilt, for the connection to process as received.
    pub fn take_rebuilt(&mut self) -> Vec<Rebuilt> {
        std::mem::take(&mut self.rebuilt)
    }

    /// One rebuilt packet was processed and will be acknowledged.
    pub fn on_rebuilt_accepted(&mut self) {
        self.stats.packets_rebuilt += 1;
        self.repaired_repeats = REPAIRED_REPEATS;
    }

    /// The REPAIRED frame to send beside an ACK, while the count is new.
    pub fn write_repaired(&mut self, out: &mut Vec<u8>) {
        if self.repaired_repeats > 0 {
            self.repaired_repeats -= 1;
            Frame::Repaired(self.stats.packets_rebuilt).encode(out);
        }
    }
}

impl super::Connection {
    /// Packets the decoder rebuilt, processed as if they had arrived intact
    /// and acknowledged: the sender neither resends them nor counts them
    /// lost. They count under the ECN codepoint of the datagram that
    /// completed them, so the sender's ECN validation, which expects every
    /// acknowledged ECT packet counted, holds.
    pub(super) fn accept_rebuilt_packets(
        &mut self,
        now: std::time::Instant,
    ) -> Result<(), super::error::TransportFailure> {
        use crate::recovery::SpaceId;
        for packet in self.coding.take_rebuilt() {
            let pn = packet.packet_number;
            if self.spaces[SpaceId::Data].acks.is_duplicate(pn) {
                continue;
            }
            let ack_eliciting = self.process_frames(SpaceId::Data, &packet.payload, now)?;
            let space = &mut self.spaces[SpaceId::Data];
            space.acks.on_packet_received(pn, ack_eliciting, now);
            if self.config.ecn {
                space.ecn_received.add(self.recv_ecn);
            }
            self.coding.on_rebuilt_accepted();
            self.trace_event(&crate::trace::Event::PacketRebuilt {
                packet_number: pn,
                size: packet.payload.len() as u64,
                total: self.coding.stats().packets_rebuilt,
            });
            if self.is_closing() {
                break;
            }
        }
        Ok(())
    }
}
