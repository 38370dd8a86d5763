//! Damaged 1-RTT headers, repaired.
//!
//! HACK drops a packet whose header fails its tag, and so does sift/1's
//! receive order without this module (DESIGN §3): nothing in it can be
//! trusted, not even its packet number, so it becomes a loss. On a
//! long fat path that loss halves a loss-based window that takes minutes to
//! grow back, and a 1% corrupting link damages the header (23 of 1350
//! bytes) of a few packets in every 50 MB (issue 12: Reno fell to 0.27 of
//! the link on one seed for seven of them).
//!
//! Yet a 1-RTT header is almost entirely known to its receiver: the flags
//! and key phase, the destination ID the peer is using, the length (the
//! rest of the datagram), and the packet number (the next one expected, or
//! what the damaged field still says). So the receiver rebuilds the header
//! the packet must have had, recomputes its tag, and opens the payload under
//! it. The payload tag covers header and header tag, so it verifies only if
//! the guess is the sender's header exactly and the payload is undamaged:
//! the repaired packet is as authentic as any other (a forger, lacking the
//! keys, fails it), and it is processed as if it had arrived intact, so it
//! costs neither a retransmission nor a window cut. Nothing repairable is
//! ever named in a CORRUPTED frame: a notice still needs a verified header.
//!
//! Decisions:
//! - a header that fails its tag and one a bit error kept from parsing at
//!   all (a flipped flag or length bit) are treated alike, and the endpoint
//!   hands either to the one connection with that peer address when its
//!   connection ID no longer routes;
//! - candidates, in order: the packet number the damaged header decodes to
//!   (right unless the bit error hit that field), then the next two after
//!   the largest received (the next in line, and the one after a packet
//!   number the sender skipped); at most [`MAX_CANDIDATES`] payload opens
//!   per damaged packet, about what an intact packet costs, so junk aimed
//!   at a connection buys no amplification;
//! - the current key phase only: a damaged header around a key update
//!   stays a loss;
//! - only with corruption notices negotiated (UDP checksums off is what lets
//!   damaged datagrams arrive at all), and only the 1-RTT space: Initial and
//!   Handshake headers carry connection IDs and tokens not worth guessing
//!   for a handful of packets.

use std::time::Instant;

use super::keys::KeySlot;
use super::recv::{Opened, PacketOutcome};
use super::Connection;
use crate::crypto::open_with_rebuilt_header;
use crate::recovery::SpaceId;
use crate::wire::{
    decode_packet_number, ConnectionId, PacketType, PACKET_NUMBER_LEN, SHORT_HEADER_DCID_LEN,
};

/// Packet numbers tried per damaged header.
pub const MAX_CANDIDATES: usize = 3;

/// How far from the next expected a damaged header's own packet number
/// may lie and still be tried (further out, the bit error hit the field).
const CLAIM_WINDOW: u64 = 1024;

impl Connection {
    /// Receives `packet` (the rest of the datagram from a 1-RTT packet
    /// whose header failed its tag, or its parse) under a rebuilt header, as
    /// if it had arrived intact: the whole rest of the datagram, to the ID
    /// the peer was using. `truncated_pn` is what its packet-number field
    /// says, when the header parsed. `None`: not rebuilt, still a drop.
    pub(super) fn accept_rebuilt(
        &mut self,
        packet: &[u8],
        truncated_pn: Option<u32>,
        now: Instant,
    ) -> Option<(usize, PacketOutcome)> {
        // Damaged datagrams arrive only with notices (UDP checksums off).
        if !(self.notices_negotiated && self.config.repair_damaged_headers) {
            return None;
        }
        let truncated_pn = truncated_pn.or_else(|| {
            let field = 1 + SHORT_HEADER_DCID_LEN;
            let bytes = packet.get(field..field + PACKET_NUMBER_LEN)?;
            Some(u32::from_be_bytes(bytes.try_into().ok()?))
        });
        let mut rebuilt = Vec::new();
        let mut tries = RepairTries::default();
        let repaired =
            self.repair_damaged_header(packet, truncated_pn.unwrap_or(0), &mut rebuilt, &mut tries);
        // Every failed try is an attempt at a forgery as much as a
        // damaged packet's: it counts against the integrity limit.
        if self.failed_authentication(SpaceId::Data, tries.failed, tries.integrity_limit) {
            return Some((packet.len(), PacketOutcome::StopDatagram));
        }
        let (packet_number, frames) = repaired?;
        self.counters.damaged_headers_repaired += 1;
        self.trace_event(&crate::trace::Event::HeaderRepaired {
            packet_number,
            size: packet.len() as u64,
            total: self.counters.damaged_headers_repaired,
        });
        let opened = Opened {
            space: SpaceId::Data,
            ty: PacketType::OneRtt,
            key_slot: KeySlot::Current,
            packet_number,
            packet_len: packet.len(),
            dcid: self.recv_dcid,
            peer_scid: ConnectionId::EMPTY,
            frames,
        };
        Some(self.accept_packet(opened, now))
    }

    /// Opens `packet` (the rest of the datagram from a 1-RTT packet whose
    /// header failed its tag or its parse; `truncated_pn` is what its
    /// packet-number field says) under a rebuilt header. On success returns the packet
    /// number and the frames, which live in `scratch`.
    fn repair_damaged_header<'s>(
        &self,
        packet: &[u8],
        truncated_pn: u32,
        scratch: &'s mut Vec<u8>,
        tries: &mut RepairTries,
    ) -> Option<(u64, &'s [u8])> {
        let acks = &self.spaces[SpaceId::Data].acks;
        let largest = acks.largest_received();
        // The next in line (packet 0 before any 1-RTT packet arrived).
        let next = largest.map_or(0, |largest| largest + 1);
        let claimed = decode_packet_number(largest, truncated_pn);
        let claim = (claimed.abs_diff(next) <= CLAIM_WINDOW).then_some(claimed);
        let mut candidates: [Option<u64>; MAX_CANDIDATES] = [claim, Some(next), Some(next + 1)];
        // Each number once, and never one already received.
        for i in 0..candidates.len() {
            if candidates[..i].contains(&candidates[i])
                || candidates[i].is_some_and(|pn| acks.is_duplicate(pn))
            {
                candidates[i] = None;
            }
        }
        let (keys, slot) = self.one_rtt_opening_keys(self.key_phases.phase, next)?;
        if slot != KeySlot::Current {
            return None;
        }
        let (dcid, phase) = (self.recv_dcid, self.key_phases.phase);
        tries.integrity_limit = keys.integrity_limit();
        let (packet_number, frames) = candidates.into_iter().flatten().find_map(|pn| {
            let opened = open_with_rebuilt_header(packet, dcid, pn, phase, keys, scratch);
            if opened.is_none() {
                tries.failed += 1;
            }
            opened.map(|f| (pn, f))
        })?;
        Some((packet_number, &scratch[frames]))
    }
}

/// Openings a repair tried that failed, and the integrity limit of the
/// keys it tried them under.
#[derive(Debug)]
struct RepairTries {
    failed: u64,
    integrity_limit: u64,
}

impl Default for RepairTries {
    fn default() -> Self {
        Self {
            failed: 0,
            integrity_limit: u64::MAX,
        }
    }
}
