//! The receive path: datagram → packets → tag checks → frames.
//!
//! The order is sift's reason to exist: the header tag is checked first (a
//! bad header is dropped silently: its packet number cannot be trusted),
//! then the payload tag (a bad payload behind a good header is *corrupted*:
//! the packet number is named back to the sender in a CORRUPTED frame), and
//! only then are frames decoded.

use std::time::{Duration, Instant};

use super::error::{codes, TransportFailure};
use super::handshake::Progress;
use super::keys::KeySlot;
use super::path::ResponseOutcome;
use super::{
    level_of, space_of, CloseReason, Connection, State, MAX_QUEUED_DATAGRAMS, MIN_INITIAL_DATAGRAM,
};
use crate::crypto::{Level, OpenError, PacketFormat};
use crate::recovery::SpaceId;
use crate::stream::{Dir, TransportError};
use crate::wire::{
    decode_packet_number_of_len, parse_frames, AckRanges, ConnectionId, Frame, PacketType,
    ParsedHeader, HEADER_TAG_LEN,
};
use crate::{Error, RecvInfo, Side};

/// How one packet of a datagram went.
pub(super) enum PacketOutcome {
    /// Go on with the next coalesced packet.
    Continue,
    /// The rest of the datagram cannot be trusted (bad header or framing).
    StopDatagram,
}

/// A packet that opened: what the rest of its processing needs.
pub(super) struct Opened<'a> {
    pub space: SpaceId,
    pub ty: PacketType,
    pub key_slot: KeySlot,
    pub packet_number: u64,
    /// Its bytes in the datagram.
    pub packet_len: usize,
    /// The destination ID it was sent to.
    pub dcid: ConnectionId,
    /// Long headers: the peer's source ID.
    pub peer_scid: ConnectionId,
    pub frames: &'a [u8],
}

impl From<TransportError> for TransportFailure {
    fn from(e: TransportError) -> Self {
        TransportFailure::new(e.code.code(), e.reason)
    }
}

fn frame_allowed(space: SpaceId, frame: &Frame<'_>) -> bool {
    // RFC 9000 §12.4, Table 3: Initial and Handshake packets carry only
    // these.
    space == SpaceId::Data
        || matches!(
            frame,
            Frame::Padding { .. }
                | Frame::Ping
                | Frame::Ack(_)
                | Frame::Crypto { .. }
                | Frame::ConnectionClose {
                    application: false,
                    ..
                }
        )
}

/// RFC 9000 §18.2: parameters only a server may send, which a client's
/// transport parameters must not carry (TRANSPORT_PARAMETER_ERROR).
pub(super) fn has_server_only_params(params: &crate::wire::TransportParams) -> bool {
    params.original_destination_connection_id.is_some()
        || params.retry_source_connection_id.is_some()
        || params.stateless_reset_token.is_some()
        || params.preferred_address.is_some()
}

/// RFC 9000 §9.1: a packet of only these frames probes a path; it does not
/// move the connection there.
fn only_probing(payload: &[u8]) -> bool {
    parse_frames(payload).all(|frame| {
        matches!(
            frame,
            Ok(Frame::Padding { .. } | Frame::PathChallenge { .. } | Frame::PathResponse { .. })
        )
    })
}

impl Connection {
    /// Processes one datagram. Damaged, duplicate or unknown packets are
    /// counted in `stats`, never errors; a protocol violation by the peer
    /// starts closing the connection (see `close_reason`). `Err(Closed)`
    /// only if the connection had already closed.
    pub fn recv(&mut self, datagram: &mut [u8], info: RecvInfo) -> Result<usize, Error> {
        let now = info.now;
        self.now = now;
        let len = datagram.len();
        self.first_packet_unprocessed = false;
        match self.state {
            State::Closed => return Err(Error::Closed),
            State::Draining { .. } => return Ok(len),
            State::Closing { .. } => {
                // Answer with our CONNECTION_CLOSE again (RFC 9000 §10.2.1),
                // unopened: only what comes from the peer's address, at a
                // slowing rate, within three times what arrived (`closing`).
                if super::canonical_peer(info.from) == self.remote && self.closing.on_datagram(len)
                {
                    self.close_pending = true;
                }
                return Ok(len);
            }
            State::Handshaking | State::Established => {}
        }
        let from = super::canonical_peer(info.from);
        let (on_preferred, keep) = self.on_datagram_to(from, super::canonical_peer(info.to), len);
        self.recv_on_preferred = on_preferred;
        // The preferred path keeps its own budget (`preferred`).
        let other_path = from != self.remote && !on_preferred;
        if !keep || (other_path && !self.accepts_from(from)) {
            // Not a path this connection may move to (see `path`).
            self.counters.malformed_dropped += 1;
            return Ok(len);
        }
        self.recv_from = from;
        self.recv_datagram_len = len;
        self.recv_ecn = info.ecn;
        self.counters.datagrams_received += 1;
        self.counters.bytes_received += len as u64;
        if other_path || !self.address_validated {
            // What it may be sent: three times this (see `path`).
            self.path.unproven.on_received(from, len, self.remote);
        }
        let mut offset = 0;
        let processed_before = self.counters.packets_received;
        while offset < len && !self.is_closing() {
            let (packet_len, outcome) = self.recv_packet(&mut datagram[offset..], now);
            if offset == 0 {
                self.first_packet_unprocessed = self.counters.packets_received == processed_before;
            }
            match outcome {
                PacketOutcome::Continue => offset += packet_len,
                PacketOutcome::StopDatagram => break,
            }
        }
        // A Handshake packet of this datagram may have completed the
        // handshake: the 1-RTT packets held until then are read now.
        self.receive_held(now);
        self.issue_connection_ids();
        // ACKs and losses move the window, so `writable` follows it.
        self.streams.size_send_buffer(self.recovery.window());
        self.trace_flush();
        Ok(len)
    }

    /// The format of the packet at the start of `buf`: a long header's by
    /// its version, if this connection accepts that version now; a short
    /// header's is the connection's own.
    fn format_of(&mut self, buf: &[u8]) -> Option<&'static dyn PacketFormat> {
        match buf.first() {
            Some(first) if first & 0x80 != 0 => {
                let version = u32::from_be_bytes(buf.get(1..5)?.try_into().ok()?);
                if self.side == Side::Server && !self.peer_cid_learned {
                    self.versions.on_first_client_packet(version);
                    self.handshake.set_client_original_version(version);
                }
                let before = self.versions.current().version();
                let format = self.versions.format_for_long_header(version);
                if self.side == Side::Client && self.versions.current().version() != before {
                    self.rekey_initial_for(version);
                }
                format
            }
            _ => Some(self.versions.current()),
        }
    }

    /// Handles the packet at the start of `buf`; returns its length.
    pub(super) fn recv_packet(&mut self, buf: &mut [u8], now: Instant) -> (usize, PacketOutcome) {
        let Some(format) = self.format_of(buf) else {
            // A version this connection does not speak (now): RFC 9000 §5.2.
            self.counters.malformed_dropped += 1;
            return (0, PacketOutcome::StopDatagram);
        };
        // Drop the header's borrow of `buf` (its token) so the packet can be
        // opened in place.
        let mut parsed = match format.parse(buf) {
            // RFC 9000 §17.2.2: only clients send tokens; a client discards
            // an Initial that carries one.
            Ok(parsed)
                if self.side == Side::Client
                    && parsed.ty == PacketType::Initial
                    && !parsed.token.is_empty() =>
            {
                self.counters.malformed_dropped += 1;
                return (parsed.packet_len, PacketOutcome::Continue);
            }
            Ok(parsed) => parsed.without_token(),
            Err(_) => {
                // A bit error can break a 1-RTT header's parse (its flags or
                // its length): rebuild it like one that fails its tag.
                let outcome = self
                    .may_open_one_rtt()
                    .then(|| self.accept_rebuilt(buf, None, now))
                    .flatten();
                if let Some(outcome) = outcome {
                    return outcome;
                }
                self.counters.malformed_dropped += 1;
                return (0, PacketOutcome::StopDatagram);
            }
        };
        let packet_len = parsed.packet_len;
        if let Some(outcome) = self.refuse_unread(&parsed, &buf[..packet_len]) {
            return (packet_len, outcome);
        }
        let level = match parsed.ty {
            PacketType::Initial => Level::Initial,
            PacketType::Handshake => Level::Handshake,
            PacketType::ZeroRtt | PacketType::OneRtt => Level::OneRtt,
        };
        let zero_rtt = parsed.ty == PacketType::ZeroRtt;
        if zero_rtt && (self.side == Side::Client || self.zero_rtt.keys.is_none()) {
            // Not accepted (or no longer): RFC 9001 §4.6.2, dropped unread.
            self.counters.undecryptable_dropped += 1;
            return (packet_len, PacketOutcome::Continue);
        }
        let space = space_of(level);
        if self.side == Side::Server && space == SpaceId::Initial && !self.peer_cid_learned {
            let keys = self.server_initial_keys(&parsed, &buf[..packet_len]);
            let Some(keys) = keys else {
                self.counters.header_corrupt_dropped += 1;
                return (packet_len, PacketOutcome::StopDatagram);
            };
            self.spaces[space].keys = Some(keys);
            let refusal = match (self.protection_mismatch, self.refusal.take()) {
                (Some(client_asked), _) => Some((
                    Self::PROTECTION_MISMATCH_CODE,
                    Self::protection_mismatch_reason(client_asked),
                )),
                (None, refusal) => refusal,
            };
            if let Some((code, reason)) = refusal {
                // Answer in the client's own Initial keys, so it can read
                // why, without starting the handshake.
                self.original_dcid = parsed.dcid;
                self.peer_cid = parsed.scid;
                self.peer_cid_learned = true;
                if self.protection_mismatch.is_some() {
                    // A configuration error on one side: the operator wants to see it.
                    tracing::warn!(remote = %self.remote, "{reason}");
                } else {
                    tracing::debug!(remote = %self.remote, "refusing a connection: {reason}");
                }
                self.fail(TransportFailure::new(code, reason));
                return (packet_len, PacketOutcome::StopDatagram);
            }
        }
        // Header protection (QUIC v1) is the same for every key phase: the
        // current keys remove it, and then the packet number chooses the phase.
        let header_keys = if zero_rtt {
            self.zero_rtt.keys.as_deref()
        } else {
            self.long_header_keys(space, parsed.version)
        };
        let Some(header_keys) = header_keys else {
            // Keys not yet available or already discarded.
            self.counters.undecryptable_dropped += 1;
            if space == SpaceId::Handshake {
                self.resend_handshake_done_on_client_probe();
            }
            return (packet_len, PacketOutcome::Continue);
        };
        if format
            .unprotect(&mut parsed, &mut buf[..packet_len], header_keys)
            .is_err()
        {
            self.counters.header_corrupt_dropped += 1;
            return (packet_len, PacketOutcome::StopDatagram);
        }
        let packet_number = decode_packet_number_of_len(
            self.spaces[space].acks.largest_received(),
            u64::from(parsed.truncated_pn),
            parsed.pn_len,
        );
        let opening = if zero_rtt {
            self.zero_rtt
                .keys
                .as_deref()
                .map(|keys| (keys, KeySlot::Current))
        } else if space == SpaceId::Data {
            self.one_rtt_opening_keys(parsed.key_phase, packet_number)
        } else {
            self.long_header_keys(space, parsed.version)
                .map(|keys| (keys, KeySlot::Current))
        };
        let Some((protection, key_slot)) = opening else {
            // Keys not yet available or already discarded.
            self.counters.undecryptable_dropped += 1;
            return (packet_len, PacketOutcome::Continue);
        };
        let integrity_limit = protection.integrity_limit();
        let opened = if self.cid_acceptable(parsed.ty, parsed.dcid.as_slice()) {
            format
                .open(&parsed, packet_number, &mut buf[..packet_len], protection)
                .map(|frames| frames.len())
        } else {
            // A DCID that is not ours is usually a bit error in the header:
            // let the header tag say which, so the counters tell the truth.
            let header = &buf[..parsed.header_len];
            let tag = &buf[parsed.header_len..parsed.header_len + HEADER_TAG_LEN];
            if protection.verify_header_tag(packet_number, header, tag) {
                self.counters.malformed_dropped += 1;
                return (packet_len, PacketOutcome::Continue);
            }
            Err(OpenError::HeaderCorrupt)
        };
        let frames_len = match opened {
            Ok(frames_len) => frames_len,
            Err(OpenError::HeaderCorrupt) => {
                if self.failed_authentication(space, 1, integrity_limit) {
                    return (packet_len, PacketOutcome::StopDatagram);
                }
                if space == SpaceId::Data {
                    if let Some(outcome) = self.accept_rebuilt(buf, Some(parsed.truncated_pn), now)
                    {
                        return outcome;
                    }
                }
                self.counters.header_corrupt_dropped += 1;
                if parsed.ty.is_long() && !format.names_corrupted_packets() {
                    // QUIC v1 (RFC 9000 §12.2): a packet that does not
                    // open is dropped and the rest of the datagram is still
                    // read; its Length field is found as the peer wrote it
                    // or the next packet fails in turn.
                    return (packet_len, PacketOutcome::Continue);
                }
                // sift/1: the header tag failed, so the length field is
                // untrustworthy too: nothing after this packet in the
                // datagram can be located.
                return (packet_len, PacketOutcome::StopDatagram);
            }
            Err(OpenError::PayloadCorrupt) => {
                self.counters.payload_corrupt_received += 1;
                self.trace_event(&crate::trace::Event::PayloadCorrupt {
                    space,
                    packet_number,
                    size: packet_len as u64,
                });
                if self.failed_authentication(space, 1, integrity_limit) {
                    return (packet_len, PacketOutcome::StopDatagram);
                }
                // No peer activity: a verified header is not a packet
                // processed successfully (RFC 9000 §10.1), and a captured
                // packet replayed with a bit flipped would keep a dead
                // connection, and its slot at the server, alive.
                if self.notices_negotiated && space == SpaceId::Data {
                    self.spaces[space].acks.on_corrupted(packet_number);
                }
                return (packet_len, PacketOutcome::Continue);
            }
            Err(OpenError::Malformed(_)) => {
                self.counters.malformed_dropped += 1;
                return (packet_len, PacketOutcome::StopDatagram);
            }
            Err(OpenError::ReservedBitsSet) => {
                self.fail(TransportFailure::new(
                    codes::PROTOCOL_VIOLATION,
                    "reserved header bits set",
                ));
                return (packet_len, PacketOutcome::StopDatagram);
            }
        };
        let frames_start = parsed.packet_len - parsed.payload_len;
        self.accept_packet(
            Opened {
                space,
                ty: parsed.ty,
                key_slot,
                packet_number,
                packet_len,
                dcid: parsed.dcid,
                peer_scid: parsed.scid,
                frames: &buf[frames_start..frames_start + frames_len],
            },
            now,
        )
    }

    /// Packets set aside before any key touches them: `Some` when the
    /// packet is not to be opened now (the datagram goes on).
    fn refuse_unread(&mut self, parsed: &ParsedHeader<'_>, packet: &[u8]) -> Option<PacketOutcome> {
        match (self.side, parsed.ty) {
            // RFC 9001 §5.7: no 1-RTT packet is opened before the handshake
            // completes; held for then (`held`).
            (_, PacketType::OneRtt) if !self.may_open_one_rtt() => {
                self.hold_one_rtt(packet);
            }
            // RFC 9000 §7.2: once the server's first Initial named its
            // source ID, a long header naming another is not the server's;
            // and a server takes Initials only from the source ID the
            // client's first one named (their keys are public).
            (Side::Client, PacketType::Initial | PacketType::Handshake)
            | (Side::Server, PacketType::Initial)
                if self.peer_first_scid.is_some_and(|scid| scid != parsed.scid) =>
            {
                self.counters.malformed_dropped += 1;
            }
            // RFC 9000 §14.1: a client Initial comes in a datagram of at
            // least 1200 bytes, every one of them (the endpoint checks the
            // first before it makes the connection).
            (Side::Server, PacketType::Initial)
                if self.recv_datagram_len < MIN_INITIAL_DATAGRAM =>
            {
                self.counters.malformed_dropped += 1;
            }
            _ => return None,
        }
        Some(PacketOutcome::Continue)
    }

    /// The rest of receiving a packet whose tags verified, or whose header
    /// was rebuilt (`conn/repair.rs`).
    pub(super) fn accept_packet(
        &mut self,
        opened: Opened<'_>,
        now: Instant,
    ) -> (usize, PacketOutcome) {
        let Opened {
            space,
            ty,
            key_slot,
            packet_number,
            packet_len,
            dcid,
            peer_scid,
            frames,
        } = opened;
        if ty == PacketType::ZeroRtt {
            if let Some(frame) = parse_frames(frames)
                .flatten()
                .find(|frame| !super::zero_rtt::frame_allowed_in_zero_rtt(frame))
            {
                self.fail(TransportFailure::new(
                    codes::PROTOCOL_VIOLATION,
                    format!("{} frame in a 0-RTT packet", frame.name()),
                ));
                return (packet_len, PacketOutcome::StopDatagram);
            }
        } else if space == SpaceId::Data {
            if let Err(failure) = self.on_one_rtt_opened(key_slot, packet_number) {
                self.fail(failure);
                return (packet_len, PacketOutcome::StopDatagram);
            }
        }
        if self.spaces[space].acks.is_duplicate(packet_number) {
            self.counters.duplicate_packets += 1;
            return (packet_len, PacketOutcome::Continue);
        }
        if self.side == Side::Client && ty == PacketType::Initial && !self.peer_cid_learned {
            // RFC 9000 §7.2: switch to the server's chosen CID, and hold
            // every later long header to it.
            self.peer_cid = peer_scid;
            self.peer_cid_learned = true;
            self.peer_first_scid = Some(peer_scid);
        }
        if self.side == Side::Server && !self.peer_cid_learned && ty == PacketType::Initial {
            // RFC 9000 §7.2: the client's first Initial names the ID the
            // server sends to, and the only source ID of later Initials.
            self.original_dcid = dcid;
            self.peer_cid = peer_scid;
            self.peer_cid_learned = true;
            self.peer_first_scid = Some(peer_scid);
            let params = self.handshake.local_params_mut();
            match self.tokens.retried_from {
                Some((original_dcid, retry_scid)) => {
                    params.original_destination_connection_id = Some(original_dcid);
                    params.retry_source_connection_id = Some(retry_scid);
                }
                None => params.original_destination_connection_id = Some(dcid),
            }
        }
        self.counters.packets_received += 1;
        if ty == PacketType::ZeroRtt {
            self.zero_rtt.packets += 1;
            self.zero_rtt.stream_bytes += parse_frames(frames)
                .flatten()
                .map(|frame| match frame {
                    Frame::Stream { data, .. } => data.len() as u64,
                    _ => 0,
                })
                .sum::<u64>();
        }
        if let Some(tracing) = self.trace.as_mut() {
            tracing.observer.event(
                now,
                &crate::trace::Event::PacketReceived {
                    space,
                    zero_rtt: ty == PacketType::ZeroRtt,
                    packet_number,
                    size: packet_len as u64,
                    frames,
                },
            );
        }
        self.recv_dcid = dcid;
        let lies = match &mut self.loss_reader {
            Some(reader) if space == SpaceId::Data && self.notices_negotiated => {
                reader.on_packet(packet_number, packet_len, frames)
            }
            _ => Vec::new(),
        };
        match self.process_frames(space, frames, now) {
            Ok(ack_eliciting) => {
                for lost in lies {
                    self.spaces[space].acks.on_corrupted(lost);
                }
                self.spaces[space]
                    .acks
                    .on_packet_received(packet_number, ack_eliciting, now);
                if self.config.ecn {
                    // RFC 9000 §13.4.1: each packet processed counts, the
                    // coalesced ones of a datagram too.
                    self.spaces[space].ecn_received.add(self.recv_ecn);
                }
                if ty == PacketType::OneRtt {
                    let min_rtt = self.recovery.rtt().min();
                    self.coding.on_received(packet_number, frames, min_rtt);
                }
                if let Err(failure) = self.accept_rebuilt_packets(now) {
                    self.fail(failure);
                    return (packet_len, PacketOutcome::StopDatagram);
                }
                self.on_peer_activity(now);
                if ack_eliciting {
                    self.resend_crypto_on_peer_probe(space, now);
                }
                // RFC 9000 §9.3: the peer moved if its highest-numbered
                // non-probing packet came from elsewhere.
                let newest_non_probing = space == SpaceId::Data
                    && self.spaces[space].acks.largest_received() == Some(packet_number)
                    && !only_probing(frames);
                if self.recv_on_preferred {
                    if newest_non_probing {
                        self.on_client_moved_to_preferred();
                    }
                } else if self.recv_from == self.remote {
                    self.path.dcid_on_path = Some(dcid);
                } else if self.follows_migration() && newest_non_probing {
                    self.migrate_to(self.recv_from, dcid);
                }
            }
            Err(failure) => {
                self.fail(failure);
                return (packet_len, PacketOutcome::StopDatagram);
            }
        }
        if self.side == Side::Server && space == SpaceId::Handshake {
            // RFC 9000 §8.1: a Handshake packet proves the client owns its
            // address; RFC 9001 §4.9.1: Initial keys go.
            self.on_address_validated();
            self.discard_space(SpaceId::Initial);
        }
        (packet_len, PacketOutcome::Continue)
    }

    fn cid_acceptable(&self, ty: PacketType, dcid: &[u8]) -> bool {
        if self.cids.is_ours(dcid) {
            return true;
        }
        match (self.side, ty) {
            // Until the client learns our CID it keeps using the one it made up.
            (Side::Server, PacketType::Initial | PacketType::ZeroRtt | PacketType::Handshake) => {
                !self.peer_cid_learned && dcid.len() >= 8 || dcid == self.original_dcid.as_slice()
            }
            _ => false,
        }
    }

    /// `failures` more openings failed authentication in `space`: past
    /// the cipher's integrity limit, across all keys of the connection,
    /// the connection closes (RFC 9001 §6.6). Initial keys are public and
    /// prove nothing, so their failures do not count. Returns whether the
    /// connection closed.
    pub(super) fn failed_authentication(
        &mut self,
        space: SpaceId,
        failures: u64,
        integrity_limit: u64,
    ) -> bool {
        if space == SpaceId::Initial {
            return false;
        }
        self.counters.authentication_failures += failures;
        let limit = self.integrity_limit.unwrap_or(integrity_limit);
        if self.counters.authentication_failures <= limit {
            return false;
        }
        tracing::warn!(
            remote = %self.remote,
            failures = self.counters.authentication_failures,
            limit,
            "closing: more packets failed authentication than the cipher allows"
        );
        self.fail(TransportFailure::new(
            codes::AEAD_LIMIT_REACHED,
            format!("{limit} packets failed authentication"),
        ));
        true
    }

    fn on_peer_activity(&mut self, now: Instant) {
        self.last_activity = now;
        self.keep_alive_since = now;
        self.ack_eliciting_since_activity = false;
    }

    /// Two passes: CORRUPTED first, so a packet named corrupted is never
    /// also declared lost by the ACK in the same packet (three later packets
    /// acked would otherwise make it a congestion event).
    pub(super) fn process_frames(
        &mut self,
        space: SpaceId,
        payload: &[u8],
        now: Instant,
    ) -> Result<bool, TransportFailure> {
        if payload.is_empty() {
            // RFC 9000 §12.4.
            return Err(TransportFailure::new(
                codes::PROTOCOL_VIOLATION,
                "a packet with no frames",
            ));
        }
        for frame in parse_frames(payload) {
            let frame = frame
                .map_err(|e| TransportFailure::new(codes::FRAME_ENCODING_ERROR, e.to_string()))?;
            if let Frame::Corrupted(ranges) = frame {
                self.on_corrupted_frame(space, &ranges, now)?;
            }
        }
        let mut ack_eliciting = false;
        for frame in parse_frames(payload) {
            let frame = frame
                .map_err(|e| TransportFailure::new(codes::FRAME_ENCODING_ERROR, e.to_string()))?;
            if !frame_allowed(space, &frame) {
                return Err(TransportFailure::new(
                    codes::PROTOCOL_VIOLATION,
                    format!("{} frame in a {space:?} packet", frame.name()),
                ));
            }
            ack_eliciting |= frame.is_ack_eliciting();
            self.process_frame(space, frame, now)?;
            if self.is_closing() {
                break;
            }
        }
        Ok(ack_eliciting)
    }

    fn on_corrupted_frame(
        &mut self,
        space: SpaceId,
        ranges: &AckRanges<'_>,
        now: Instant,
    ) -> Result<(), TransportFailure> {
        if !self.notices_negotiated || space != SpaceId::Data {
            return Err(TransportFailure::new(
                codes::PROTOCOL_VIOLATION,
                "CORRUPTED frame without negotiated corruption notices",
            ));
        }
        if !self.recovery.notices_distrusted() {
            if let Some(skipped) = ranges
                .iter()
                .find_map(|range| self.skips.first_skipped_in(&range))
            {
                // Only a gap can carry a skipped number: the peer names
                // losses as corruption. Its notices count as losses now.
                tracing::warn!(
                    remote = %self.remote,
                    "the peer named packet {skipped}, never sent, as corrupted: its corruption notices count as losses from now on"
                );
                self.recovery.distrust_notices();
            }
        }
        let named = self.recovery.on_corrupted(space, ranges.iter(), now);
        self.on_packets_lost(space, named.into_resent());
        Ok(())
    }

    pub(super) fn process_frame(
        &mut self,
        space: SpaceId,
        frame: Frame<'_>,
        now: Instant,
    ) -> Result<(), TransportFailure> {
        match frame {
            Frame::Padding { .. } | Frame::Ping | Frame::Corrupted(_) => {}
            Frame::Repair { .. } | Frame::Repaired(_) if !self.coding.negotiated() => {
                return Err(TransportFailure::new(
                    codes::PROTOCOL_VIOLATION,
                    format!("{} frame without negotiated repair", frame.name()),
                ));
            }
            Frame::Repair {
                last,
                first,
                seed,
                symbol,
            } => {
                let acks = &self.spaces[space].acks;
                self.coding.on_repair(
                    crate::fec::RepairSymbol {
                        first,
                        last,
                        seed,
                        symbol,
                    },
                    acks.tracked_from(),
                    |pn| acks.is_duplicate(pn),
                );
            }
            Frame::Repaired(count) => self.coding.on_peer_repaired(count),
            Frame::Ack(ack) => {
                let largest = ack.ranges.largest();
                if largest >= self.spaces[space].next_packet_number {
                    return Err(TransportFailure::new(
                        codes::PROTOCOL_VIOLATION,
                        format!("ACK of packet {largest}, which was never sent"),
                    ));
                }
                if space == SpaceId::Data {
                    if let Some(skipped) = ack
                        .ranges
                        .iter()
                        .find_map(|range| self.skips.first_skipped_in(&range))
                    {
                        return Err(TransportFailure::new(
                            codes::PROTOCOL_VIOLATION,
                            format!(
                                "ACK of packet {skipped}, a number skipped and never sent (an optimistic ACK)"
                            ),
                        ));
                    }
                }
                let micros = ack
                    .ack_delay_micros
                    .checked_shl(self.peer_ack_delay_exponent as u32)
                    .filter(|micros| micros >> self.peer_ack_delay_exponent == ack.ack_delay_micros)
                    .unwrap_or(u64::MAX);
                let delay = Duration::from_micros(micros.min(u32::MAX as u64));
                let outcome = self
                    .recovery
                    .on_ack_received(space, ack.ranges.iter(), delay, now);
                self.ecn_on_ack(space, largest, ack.ecn_counts, &outcome, now);
                if space == SpaceId::Data {
                    // Path MTU discovery hears what this ACK acknowledged
                    // before what it declared lost: large packets
                    // acknowledged after a dropped burst show that the path
                    // carries their size (a full queue, not a black hole).
                    self.pmtud_on_acked(&outcome.acked);
                }
                self.on_packets_lost(space, outcome.lost);
                self.on_packets_acked(space, outcome.acked);
                if space == SpaceId::Data && self.handshake_confirmed {
                    // Window, RTT and packet threshold move only with ACKs:
                    // decide here, not per datagram sent.
                    self.ack_frequency.update(super::ack_frequency::PathView {
                        window: self.recovery.window(),
                        mss: self.pmtud.current() as u64,
                        srtt: self.recovery.rtt().smoothed(),
                        packet_threshold: self.recovery.packet_threshold(),
                    });
                }
            }
            Frame::Crypto { offset, data } => {
                let progress = self
                    .handshake
                    .on_crypto(level_of(space), offset, data)
                    .map_err(|e| TransportFailure::new(e.error_code(), e.to_string()))?;
                self.on_handshake_progress(progress)?;
            }
            Frame::Stream {
                id,
                offset,
                data,
                fin,
            } => self.streams.on_stream_frame(id, offset, data, fin)?,
            Frame::ResetStream {
                id,
                error_code,
                final_size,
            } => self.streams.on_reset_stream(id, error_code, final_size)?,
            Frame::StopSending { id, error_code } => {
                self.streams.on_stop_sending(id, error_code)?
            }
            Frame::MaxData(max) => self.streams.on_max_data(max),
            Frame::MaxStreamData { id, max } => self.streams.on_max_stream_data(id, max)?,
            Frame::MaxStreams { bidi, max } => self
                .streams
                .on_max_streams(if bidi { Dir::Bi } else { Dir::Uni }, max)?,
            Frame::DataBlocked(limit) => self.streams.on_data_blocked(limit),
            Frame::StreamDataBlocked { id, limit } => {
                let srtt = self.recovery.rtt().smoothed();
                self.streams.on_stream_data_blocked(id, limit, now, srtt)?
            }
            Frame::StreamsBlocked { bidi, limit } => self
                .streams
                .on_streams_blocked(if bidi { Dir::Bi } else { Dir::Uni }, limit)?,
            Frame::NewToken { token } => {
                if self.side == Side::Server {
                    return Err(TransportFailure::new(
                        codes::PROTOCOL_VIOLATION,
                        "NEW_TOKEN sent by a client",
                    ));
                }
                if token.len() <= crate::wire::MAX_RETRY_TOKEN_LEN {
                    self.tokens.new_token_in = Some(token.to_vec());
                }
            }
            Frame::NewConnectionId {
                sequence,
                retire_prior_to,
                cid,
                reset_token,
            } => {
                if self.peer_cid.as_slice().is_empty() {
                    // RFC 9000 §19.15: a peer that sends to us with a
                    // zero-length ID has no IDs to give.
                    return Err(TransportFailure::new(
                        codes::PROTOCOL_VIOLATION,
                        "NEW_CONNECTION_ID from a peer that uses zero-length connection IDs",
                    ));
                }
                let switched = self.cids.on_new_connection_id(
                    sequence,
                    retire_prior_to,
                    cid,
                    reset_token,
                    self.peer_cid,
                )?;
                if let Some(cid) = switched {
                    tracing::debug!(from = %self.peer_cid, to = %cid, "the peer retired the connection ID we sent to");
                    self.peer_cid = cid;
                }
            }
            Frame::RetireConnectionId { sequence } => {
                let secret = super::server_secret(self.side, &self.config);
                self.cids.on_retire_connection_id(
                    sequence,
                    self.recv_dcid.as_slice(),
                    &mut self.path_rng,
                    secret,
                )?;
            }
            Frame::AckFrequency {
                sequence,
                ack_eliciting_threshold,
                request_max_ack_delay_micros,
                reordering_threshold,
            } => {
                let request = self
                    .ack_frequency
                    .on_peer_frame(
                        sequence,
                        ack_eliciting_threshold,
                        request_max_ack_delay_micros,
                        reordering_threshold,
                    )
                    .map_err(|reason| TransportFailure::new(codes::PROTOCOL_VIOLATION, reason))?;
                if let Some(request) = request {
                    self.spaces[space].acks.set_frequency(
                        request.threshold,
                        request.max_ack_delay,
                        request.reordering,
                    );
                }
            }
            Frame::ImmediateAck => {
                if !self.ack_frequency.enabled() {
                    return Err(TransportFailure::new(
                        codes::PROTOCOL_VIOLATION,
                        "IMMEDIATE_ACK frame without our min_ack_delay",
                    ));
                }
                self.spaces[space].acks.request_immediate();
            }
            Frame::PathChallenge { data } => self.on_path_challenge(data),
            Frame::PathResponse { data } => match self.path.on_response(data) {
                ResponseOutcome::NotOurs => self.on_preferred_response(data),
                ResponseOutcome::Validated => {
                    tracing::debug!(remote = %self.remote, "the peer's new address is validated");
                    self.on_address_validated();
                }
                ResponseOutcome::AddressOnly => {
                    tracing::debug!(remote = %self.remote, "the peer's new address is validated, not yet its path MTU");
                    self.on_address_validated();
                    let mut data = [0u8; 8];
                    rand::RngCore::fill_bytes(&mut self.path_rng, &mut data);
                    self.path.challenge_mtu(data);
                }
            },
            Frame::HandshakeDone => {
                if self.side == Side::Server {
                    return Err(TransportFailure::new(
                        codes::PROTOCOL_VIOLATION,
                        "HANDSHAKE_DONE sent by a client",
                    ));
                }
                if !self.handshake_confirmed {
                    self.handshake_confirmed = true;
                    self.recovery.set_handshake_confirmed();
                    self.discard_space(SpaceId::Handshake);
                }
            }
            Frame::Datagram { data } => {
                if self
                    .config
                    .max_datagram_frame_size
                    .is_none_or(|max| data.len() as u64 > max)
                {
                    return Err(TransportFailure::new(
                        codes::PROTOCOL_VIOLATION,
                        "DATAGRAM frame not accepted",
                    ));
                }
                if self.datagrams_in.len() >= MAX_QUEUED_DATAGRAMS {
                    self.datagrams_in.pop_front(); // unreliable: drop the oldest
                }
                self.datagrams_in.push_back(data.to_vec());
            }
            Frame::ConnectionClose {
                application,
                error_code,
                reason,
                ..
            } => {
                self.close_reason = Some(CloseReason::Peer {
                    application,
                    code: error_code,
                    reason: String::from_utf8_lossy(reason).into_owned(),
                });
                let until = now + self.recovery.pto_period(SpaceId::Data) * 3;
                self.state = State::Draining { until };
            }
        }
        Ok(())
    }

    /// The keys of `space` for a packet of `version`: a server that moved
    /// the client to a version with other Initial keys opens the client's
    /// Initials in its original version with the original's.
    fn long_header_keys(
        &self,
        space: SpaceId,
        version: u32,
    ) -> Option<&dyn crate::crypto::PacketProtection> {
        match &self.original_initial_keys {
            Some(original) if space == SpaceId::Initial && version == self.versions.original() => {
                Some(&**original)
            }
            _ => self.spaces[space].keys.as_deref(),
        }
    }

    /// The connection moved to `version`: if its Initial keys differ from
    /// the original version's (QUIC v2's salt, RFC 9369 §3.3.1), Initials
    /// go out from now on under `version`'s, derived from the same client
    /// destination ID (RFC 9368 §2.3); a server keeps the original's to
    /// open the client's Initials that are still in it.
    fn rekey_initial_for(&mut self, version: u32) {
        let original = self.versions.original();
        if crate::crypto::tls::same_key_schedule(original, version)
            || self.spaces[SpaceId::Initial].keys.is_none()
        {
            return;
        }
        let client_dcid = match (self.side, &self.tokens.retry) {
            (Side::Client, Some((_, retry_scid))) => *retry_scid,
            _ => self.original_dcid,
        };
        let keys = super::keys::initial_keys(
            self.config.protection,
            version,
            client_dcid.as_slice(),
            self.side,
        );
        let previous = self.spaces[SpaceId::Initial].keys.replace(keys);
        if self.side == Side::Server {
            self.original_initial_keys = previous;
        }
    }

    fn on_handshake_progress(&mut self, progress: Progress) -> Result<(), TransportFailure> {
        if let Some(version) = progress.negotiated_version {
            // Everything from our first flight on goes out in it.
            self.versions.settle_on(version);
            self.rekey_initial_for(version);
        }
        if let Some(keys) = progress.handshake_keys {
            self.spaces[SpaceId::Handshake].keys = Some(keys);
            self.recovery.set_handshake_keys();
        }
        if let Some(keys) = progress.zero_rtt_keys {
            self.accept_zero_rtt(keys);
        }
        if let Some(keys) = progress.one_rtt_keys {
            // A server gets them with its own flight (0.5-RTT data).
            self.install_one_rtt_keys(keys);
        }
        if progress.peer_params {
            self.apply_peer_params()?;
        }
        if progress.complete {
            self.state = State::Established;
            // Client: 1-RTT from now on, and the early data's fate is
            // known. Server: 0-RTT packets are no longer opened.
            self.settle_zero_rtt()?;
            if self.side == Side::Server {
                // RFC 9001 §4.1.2: the server confirms on completion.
                self.handshake_confirmed = true;
                self.handshake_done_pending = true;
                self.recovery.set_handshake_confirmed();
                self.discard_space(SpaceId::Handshake);
            }
        }
        Ok(())
    }

    fn apply_peer_params(&mut self) -> Result<(), TransportFailure> {
        let Some(params) = self.handshake.peer_params().cloned() else {
            return Ok(());
        };
        let param_error =
            |what: &str| TransportFailure::new(codes::TRANSPORT_PARAMETER_ERROR, what.to_string());
        if params.initial_source_connection_id != Some(self.peer_cid) {
            return Err(param_error(
                "initial_source_connection_id does not match the packet",
            ));
        }
        if self.side == Side::Client
            && params.original_destination_connection_id != Some(self.original_dcid)
        {
            return Err(param_error(
                "original_destination_connection_id does not match",
            ));
        }
        // RFC 9000 §7.3: the server says whether it sent a Retry, and which.
        if self.side == Side::Client
            && params.retry_source_connection_id
                != self.tokens.retry.as_ref().map(|(_, scid)| *scid)
        {
            return Err(param_error(
                "retry_source_connection_id does not match the Retry received",
            ));
        }
        if self.side == Side::Server && has_server_only_params(&params) {
            return Err(param_error(
                "a client sent a server-only transport parameter",
            ));
        }
        if self.side == Side::Client {
            self.versions
                .check_server(params.version_information.as_ref())
                .map_err(|reason| {
                    TransportFailure::new(super::version::VERSION_NEGOTIATION_ERROR, reason)
                })?;
        }
        // Tickets that come later are for the version settled now.
        self.handshake
            .set_version(self.versions.current().version());
        self.cids.on_peer_params(
            params.active_connection_id_limit,
            params
                .stateless_reset_token
                .map(crate::crypto::ResetToken::new),
        );
        if let (Side::Client, Some(preferred)) = (self.side, params.preferred_address) {
            self.on_preferred_offer(&preferred)?;
        }
        self.streams.set_peer_limits(&Self::peer_limits(&params));
        self.recovery
            .set_max_ack_delay(Duration::from_millis(params.max_ack_delay_ms));
        self.ack_frequency.on_peer_params(
            params.min_ack_delay_micros,
            Duration::from_millis(params.max_ack_delay_ms),
        );
        // Notices need split tags: only a version with them can carry any.
        self.notices_negotiated = self.config.corruption_notices
            && params.corruption_notices
            && self.versions.current().names_corrupted_packets();
        self.coding.on_peer_params(params.repair_max_span);
        self.trace_peer_params(&params);
        self.peer_max_datagram_frame_size = params.max_datagram_frame_size;
        // RFC 9000 §9: a client does not move while the server says so.
        self.peer_disables_migration = params.disable_active_migration;
        self.peer_max_udp_payload = params.max_udp_payload_size;
        self.pmtud
            .on_peer_limit(params.max_udp_payload_size, self.remote);
        self.peer_ack_delay_exponent = params.ack_delay_exponent;
        let ours = self.config.idle_timeout;
        let theirs = Duration::from_millis(params.max_idle_timeout_ms);
        self.idle_timeout = match (ours.is_zero(), theirs.is_zero()) {
            (true, true) => None,
            (true, false) => Some(theirs),
            (false, true) => Some(ours),
            (false, false) => Some(ours.min(theirs)),
        };
        Ok(())
    }
}
