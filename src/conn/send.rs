//! The send path: decide what each packet-number space has to say, build
//! one packet per space, coalesce them into a datagram, seal, and record
//! every packet with recovery.
//!
//! Order inside a packet: ACK (+ CORRUPTED), then retransmitted and new
//! control data, then stream data (retransmissions ahead of new data — the
//! streams layer orders them), PING only when a probe has nothing else.

use std::net::SocketAddr;
use std::time::Instant;

use super::error::codes;
use super::send_times::SendState;
use super::{level_of, Connection, SentFrame, State, MIN_INITIAL_DATAGRAM};

use crate::recovery::{SentPacket, SpaceId};
use crate::stream::ControlFrame;
use crate::wire::{encode_stream_header, Ecn, Frame, Header, PacketType};
use crate::{Error, SendInfo, Side};

/// CRYPTO frame overhead: type, 8-byte offset, 2-byte length.
const CRYPTO_FRAME_OVERHEAD: usize = 1 + 8 + 2;
/// Largest encoding of any control frame (type + three 8-byte varints).
const MAX_CONTROL_FRAME: usize = 1 + 3 * 8;
/// Smallest room worth building a packet in.
const MIN_PACKET_ROOM: usize = 48;
/// RFC 9000 §12.3: 2^62 − 1 is the last packet number. Once a space's next
/// one reaches this, no packet leaves: the number after a skip
/// (`conn::skip`) could be the last.
const PACKET_NUMBER_LIMIT: u64 = crate::wire::VARINT_MAX - 1;

/// Buffers the send path reuses from one datagram to the next, so that a
/// steady flow allocates nothing per packet but the ledger's record of it.
#[derive(Debug, Default)]
pub(super) struct SendScratch {
    /// Frame buffers of sealed packets, cleared, for the next plans.
    frames: Vec<Vec<u8>>,
    /// The header of the packet being sealed.
    header: Vec<u8>,
    /// The packets of the datagram being built (one per space at most).
    plans: Vec<PlannedPacket>,
}

impl SendScratch {
    /// An empty frame buffer with room for `capacity` bytes.
    fn take_frames(&mut self, capacity: usize) -> Vec<u8> {
        let mut frames = self.frames.pop().unwrap_or_default();
        frames.clear();
        frames.reserve(capacity);
        frames
    }

    /// Keeps a sealed packet's frame buffer for a later plan (a few are
    /// enough: a datagram holds at most one packet per space).
    fn give_back(&mut self, frames: Vec<u8>) {
        if self.frames.len() < 4 {
            self.frames.push(frames);
        }
    }
}

/// A packet built but not yet sealed.
#[derive(Debug)]
struct PlannedPacket {
    space: SpaceId,
    packet_number: u64,
    frames: Vec<u8>,
    sent: Vec<SentFrame>,
    ack_eliciting: bool,
    padded: bool,
    /// Carries PATH_CHALLENGE or PATH_RESPONSE: its datagram is expanded
    /// to 1200 bytes (RFC 9000 §8.2.1, §8.2.2).
    path_frames: bool,
    /// Carries our PATH_CHALLENGE.
    challenge: bool,
    /// Carries a REPAIR frame: never a source packet (`fec`).
    repair: bool,
}

impl Connection {
    /// Writes the next datagram into `out`. `Ok(None)`: nothing to send now
    /// (call again after `recv`, an application write, or `on_timeout`).
    pub fn send(
        &mut self,
        out: &mut [u8],
        now: Instant,
    ) -> Result<Option<(usize, SendInfo)>, Error> {
        self.now = now;
        self.send_held_by = None;
        match self.state {
            State::Closed => return Err(Error::Closed),
            State::Draining { .. } => return Ok(None),
            State::Closing { .. } if !self.close_pending => return Ok(None),
            _ => {}
        }
        if self.first_flight_held() {
            return Ok(None);
        }
        if self
            .spaces
            .iter()
            .any(|space| space.next_packet_number >= PACKET_NUMBER_LIMIT)
        {
            self.close_on_exhausted_packet_numbers();
            return Ok(None);
        }
        self.maybe_initiate_key_update();
        if let Some(sent) = self.send_off_path_response(out, now) {
            return Ok(Some(sent));
        }
        if let Some(sent) = self.send_old_path_challenge(out, now) {
            return Ok(Some(sent));
        }
        if let Some(sent) = self.send_preferred_path(out, now) {
            return Ok(Some(sent));
        }
        if let Some(sent) = self.send_pmtu_probe(out, now) {
            return Ok(Some(sent));
        }
        let mut limit = out.len().min(self.pmtud.current());
        if self.handshake.is_complete() {
            limit = limit.min(self.peer_max_udp_payload as usize);
        }
        if !self.address_validated {
            // RFC 9000 §8.1: at most three times what came from there.
            let allowance = self.path.unproven.allowance(self.remote);
            limit = limit.min(usize::try_from(allowance).unwrap_or(usize::MAX));
        }
        if let (State::Closing { .. }, Some(allowance)) = (&self.state, self.closing.allowance()) {
            // RFC 9000 §10.2.1: answers to unopened packets stay within
            // three times what arrived (`closing`).
            limit = limit.min(usize::try_from(allowance).unwrap_or(usize::MAX));
        }
        if self.spaces[SpaceId::Data].probes > 0 && self.recovery.pto_count() > 0 {
            if let Some(size) = self.pmtud.pto_probe_size() {
                // A probe timeout with large packets outstanding may be a
                // black hole: a probe of the base size gets through one,
                // and its acknowledgement shows the large ones lost.
                limit = limit.min(size);
            }
        }
        if limit < MIN_PACKET_ROOM {
            return Ok(None);
        }

        // At most one packet per space.
        let mut plans = std::mem::take(&mut self.send_scratch.plans);
        plans.clear();
        let mut used = 0;
        for space in SpaceId::ALL {
            if self.sealing_keys(space).is_none() {
                continue;
            }
            let room = limit - used;
            if room < MIN_PACKET_ROOM {
                break;
            }
            if let Some(plan) = self.plan_packet(space, room, now) {
                used += self.sealed_size(&plan);
                plans.push(plan);
            }
        }
        if plans.is_empty() {
            self.send_scratch.plans = plans;
            self.note_send_state(None, now);
            return Ok(None);
        }
        self.pad_initial_datagram(&mut plans, limit);
        if plans.iter().any(|p| p.path_frames) {
            // RFC 9000 §8.2.1, §8.2.2: 1200 bytes prove the path carries
            // QUIC's smallest datagram both ways, unless the anti-amplification
            // limit (in `limit`) allows less.
            self.pad_last_packet(&mut plans, MIN_INITIAL_DATAGRAM.min(limit));
        }
        let challenge_sent = plans.iter().any(|p| p.challenge);
        let ecn = self.ecn_for_datagram(now);

        // Each packet is sealed straight into `out`: the plans were sized
        // to fit `limit`, which `out` holds.
        let mut header_scratch = std::mem::take(&mut self.send_scratch.header);
        let mut len = 0;
        let mut ack_eliciting = false;
        let mut sent_handshake = false;
        for plan in plans.drain(..) {
            let header = self.header_for(plan.space, plan.packet_number);
            let zero_rtt = header.ty == PacketType::ZeroRtt;
            let protection = self
                .sealing_keys(plan.space)
                .expect("a packet is planned only in a space with keys");
            let sealed = self.versions.current().seal_into(
                &header,
                self.recovery.largest_acked(plan.space),
                &plan.frames,
                protection,
                &mut header_scratch,
                &mut out[len..],
            );
            if let (Some(tracing), Ok(size)) = (self.trace.as_mut(), &sealed) {
                tracing.observer.event(
                    now,
                    &crate::trace::Event::PacketSent {
                        space: plan.space,
                        zero_rtt,
                        packet_number: plan.packet_number,
                        size: *size as u64,
                        frames: &plan.frames,
                    },
                );
            }
            if plan.space == SpaceId::Data && !zero_rtt && sealed.is_ok() {
                let source =
                    !plan.repair && plan.sent.iter().any(|f| matches!(f, SentFrame::Stream(_)));
                let more = self.streams.has_stream_data();
                let min_rtt = self.recovery.rtt().min();
                self.coding
                    .on_sent(plan.packet_number, &plan.frames, source, more, min_rtt);
            }
            self.send_scratch.give_back(plan.frames);
            let size = match sealed {
                Ok(size) => size,
                Err(error) => {
                    // Only a payload beyond the AEAD's limit or a packet
                    // number 2^31 past the largest acknowledged fails, which
                    // no datagram-sized packet and no congestion window reach.
                    tracing::error!(%error, "dropping a packet that could not be sealed");
                    continue;
                }
            };
            len += size;
            let size = size as u64;
            ack_eliciting |= plan.ack_eliciting;
            sent_handshake |= plan.space == SpaceId::Handshake;
            if plan.ack_eliciting {
                let probes = &mut self.spaces[plan.space].probes;
                *probes = probes.saturating_sub(1);
            }
            if zero_rtt {
                self.zero_rtt.packets += 1;
            } else if plan.space == SpaceId::Data {
                self.key_phases.on_sent(plan.packet_number);
                // RFC 9002 §7.8: a window the sender does not fill must not
                // grow. Whatever holds the sender back (the application, flow
                // control, the CPU), a packet counts as window-limited only if
                // the flight it completes fills at least half the window: the
                // slow-start test of Linux's tcp_is_cwnd_limited. Without it a
                // CPU-bound loopback sender grew cwnd without bound.
                let flight_after = self.recovery.bytes_in_flight() + size;
                self.recovery
                    .set_app_limited(flight_after * 2 < self.recovery.window());
            }
            self.recovery.on_packet_sent(
                plan.space,
                SentPacket {
                    packet_number: plan.packet_number,
                    time_sent: now,
                    size,
                    ack_eliciting: plan.ack_eliciting,
                    in_flight: plan.ack_eliciting || plan.padded,
                    app_limited: false,
                    pmtu_probe: false,
                    ecn,
                    delivery: Default::default(),
                    frames: plan.sent,
                },
                now,
            );
            self.ecn_on_packet_sent(plan.space, ecn, plan.ack_eliciting, now);
            if plan.space == SpaceId::Data && !self.has_ack_eliciting_data(SpaceId::Data) {
                // Nothing left to send (application, flow control): rate
                // samples until this flight is delivered are app-limited.
                self.recovery.on_send_queue_empty();
            }
            self.counters.packets_sent += 1;
        }
        if self.close_frame.is_some() {
            self.close_pending = false;
            self.closing.on_sent(len);
        }
        if ack_eliciting && !self.ack_eliciting_since_activity {
            // RFC 9000 §10.1: sending restarts the idle timer, once per
            // flight after hearing from the peer.
            self.last_activity = now;
            self.ack_eliciting_since_activity = true;
        }
        if sent_handshake && self.side == Side::Client {
            // RFC 9001 §4.9.1: the client drops Initial keys once it sends a
            // Handshake packet.
            self.discard_space(SpaceId::Initial);
        }
        self.send_scratch.header = header_scratch;
        self.send_scratch.plans = plans;
        self.note_send_state(Some(ack_eliciting), now);
        if len == 0 {
            return Ok(None);
        }
        if challenge_sent {
            let repeat = self.recovery.pto_period(SpaceId::Data);
            self.path
                .on_challenge_sent(now + repeat, len >= MIN_INITIAL_DATAGRAM);
        }
        Ok(Some((len, self.datagram_leaves(len, ecn, now))))
    }

    /// Charges the time since the last poll (`send_times`), once the
    /// handshake is done: `sent` says whether this poll sent an
    /// ack-eliciting packet (`Some(true)`), only ACKs, or nothing (`None`).
    /// What held data back was noted as the poll found it
    /// (`send_held_by`); the rest are counts the streams keep, so a poll
    /// that finds nothing to send pays no walk over the streams.
    fn note_send_state(&mut self, sent: Option<bool>, now: Instant) {
        if !self.handshake.is_complete() || !matches!(self.state, State::Established) {
            return;
        }
        let state = if sent == Some(true) {
            SendState::Busy
        } else if let Some(held) = self.send_held_by {
            held
        } else if self.streams.has_unsent_data() {
            if self.streams.is_credit_blocked() {
                SendState::CreditLimited
            } else {
                // Sendable, yet nothing left (it did not fit beside a
                // coalesced packet): the sender was not idle.
                SendState::Busy
            }
        } else if self.streams.has_unacked_data() {
            SendState::AppLimited
        } else {
            SendState::Idle
        };
        self.send_clock.enter(state, now);
    }

    /// Accounting for a datagram of `len` bytes about to leave marked
    /// `ecn`: counters, the amplification budget, whether it goes without
    /// a UDP checksum, and the trace; returns how it is sent.
    fn datagram_leaves(&mut self, len: usize, ecn: Ecn, now: Instant) -> SendInfo {
        let checksum_free = self.checksums.checksum_free(
            self.notices_negotiated,
            now,
            self.recovery.rtt().smoothed(),
        );
        self.counters.datagrams_sent += 1;
        self.counters.bytes_sent += len as u64;
        self.counters.checksum_free_datagrams += u64::from(checksum_free);
        if !self.address_validated {
            self.path.unproven.on_sent(self.remote, len);
        }
        self.trace_checksum_free(checksum_free);
        self.trace_flush();
        SendInfo {
            from: self.local,
            to: self.remote,
            at: now,
            checksum_free,
            ecn,
        }
    }

    /// The PATH_RESPONSEs to challenges that came from another address
    /// than the peer's (a path it probes, RFC 9000 §9.1), together, alone
    /// in a datagram to that address: a response goes on the path its
    /// challenge came on (RFC 9000 §8.2.2), under a connection ID of the
    /// peer's used on no other path (§9.5, `cid`). The address has not
    /// proved itself, so the datagram draws on its budget, three times
    /// what came from it (`path::UnprovenAddresses`); it is expanded to
    /// 1200 bytes as far as that allows (§8.2.2), and responses that do
    /// not fit at all, or find no unused ID, are dropped (a response is
    /// never resent, §8.2.2, and the peer challenges again). Not in
    /// recovery's ledger: its fate says nothing about the path the
    /// connection uses.
    fn send_off_path_response(
        &mut self,
        out: &mut [u8],
        now: Instant,
    ) -> Option<(usize, SendInfo)> {
        if self.state != State::Established || self.close_frame.is_some() {
            return None;
        }
        let space = SpaceId::Data;
        self.spaces[space].keys.as_ref()?;
        let to = self.path.off_path_address(self.remote)?;
        let mut responses = Vec::new();
        while let Some(data) = self.path.pop_on_path(to) {
            responses.push(data);
        }
        // RFC 9000 §9.5: not the ID of another path. An empty ID links
        // nothing; without a spare there is no answer.
        let dcid = if self.peer_cid.is_empty() {
            self.peer_cid
        } else if let Some(cid) = self.cids.for_probing_address(to) {
            cid
        } else {
            tracing::trace!(%to, "no unused connection ID of the peer's for a probing address: its challenges go unanswered");
            self.counters.path_responses_withheld += 1;
            return None;
        };
        // Sealed under that ID: the packet's header is built from
        // `peer_cid`, which goes back to the current path's below.
        let current = std::mem::replace(&mut self.peer_cid, dcid);
        let sent = self.seal_path_responses(&responses, to, out, now);
        self.peer_cid = current;
        sent
    }

    /// The challenge of the path the peer seemed to leave (RFC 9000
    /// §9.3.3), alone in a datagram of 1200 bytes to its address (which
    /// was validated), under an ID of the peer's used on no other path
    /// (§9.5); without a spare ID it does not go.
    fn send_old_path_challenge(
        &mut self,
        out: &mut [u8],
        now: Instant,
    ) -> Option<(usize, SendInfo)> {
        if self.state != State::Established || self.close_frame.is_some() {
            return None;
        }
        let space = SpaceId::Data;
        self.spaces[space].keys.as_ref()?;
        let (to, data) = self.path.old_path_probe_due()?;
        self.path.on_old_path_probe_sent();
        let dcid = if self.peer_cid.is_empty() {
            self.peer_cid
        } else if let Some(cid) = self.cids.for_probing_address(to) {
            cid
        } else {
            tracing::trace!(%to, "no unused connection ID of the peer's for the path it left: not challenged");
            return None;
        };
        let current = std::mem::replace(&mut self.peer_cid, dcid);
        let sent = self.seal_old_path_challenge(data, to, out, now);
        self.peer_cid = current;
        sent
    }

    fn seal_old_path_challenge(
        &mut self,
        data: [u8; 8],
        to: SocketAddr,
        out: &mut [u8],
        now: Instant,
    ) -> Option<(usize, SendInfo)> {
        let mut frame = Vec::new();
        Frame::PathChallenge { data }.encode(&mut frame);
        self.seal_path_frames(&frame, to, None, out, now)
    }

    /// [`Self::send_off_path_response`]'s datagram: the responses, padded
    /// as far as `to`'s budget allows, under the current `peer_cid`.
    fn seal_path_responses(
        &mut self,
        responses: &[[u8; 8]],
        to: SocketAddr,
        out: &mut [u8],
        now: Instant,
    ) -> Option<(usize, SendInfo)> {
        let mut frames = Vec::new();
        for &data in responses {
            Frame::PathResponse { data }.encode(&mut frames);
        }
        let budget = self.path.unproven.allowance(to);
        let sent = self.seal_path_frames(&frames, to, Some(budget), out, now);
        match sent {
            Some((len, _)) => self.path.unproven.on_sent(to, len),
            None => self.counters.path_responses_withheld += 1,
        }
        sent
    }

    /// A datagram of path frames alone (`encoded`) to `to`, under the
    /// current `peer_cid`, padded to 1200 bytes as far as `budget` allows
    /// (what `to` may still be sent if it has not proved itself); nothing
    /// if not even the frames fit.
    pub(super) fn seal_path_frames(
        &mut self,
        encoded: &[u8],
        to: SocketAddr,
        budget: Option<u64>,
        out: &mut [u8],
        now: Instant,
    ) -> Option<(usize, SendInfo)> {
        let space = SpaceId::Data;
        let allowance = budget.map_or(usize::MAX, |b| usize::try_from(b).unwrap_or(usize::MAX));
        let size = MIN_INITIAL_DATAGRAM.min(allowance).min(out.len());
        let packet_number = self
            .skips
            .next_packet_number(&mut self.spaces[space].next_packet_number);
        let overhead = self
            .sealed_len(space, packet_number, size)?
            .checked_sub(size)?;
        if overhead + encoded.len() > size {
            tracing::trace!(%to, allowance, "path frames exceed what their address may be sent: dropped");
            return None;
        }
        let mut frames = self.send_scratch.take_frames(size);
        frames.extend_from_slice(encoded);
        frames.resize(size - overhead, 0); // PADDING
        let len = self.seal_alone(space, packet_number, frames, out, now)?;
        self.counters.packets_sent += 1;
        self.counters.datagrams_sent += 1;
        self.counters.bytes_sent += len as u64;
        self.trace_flush();
        Some((
            len,
            SendInfo {
                from: self.local,
                to,
                at: now,
                checksum_free: false,
                // Another path than the connection's, not validated for
                // ECN (RFC 9000 §13.4.2 validates per path).
                ecn: Ecn::NotEct,
            },
        ))
    }

    /// A path MTU probe, if the search wants one now (`conn::pmtud`): a
    /// 1-RTT packet of exactly the probed size, PING then PADDING, alone
    /// in its datagram. Only once the handshake is confirmed and the path
    /// validated (a probe would break the anti-amplification limit of a
    /// new path, RFC 9000 §8.1, §9.3), one in flight, and only in window
    /// room (it counts in flight like any packet; its loss is no
    /// congestion signal, `recovery`).
    fn send_pmtu_probe(&mut self, out: &mut [u8], now: Instant) -> Option<(usize, SendInfo)> {
        if self.state != State::Established
            || !self.handshake_confirmed
            || !self.address_validated
            || self.close_frame.is_some()
        {
            return None;
        }
        let space = SpaceId::Data;
        self.spaces[space].keys.as_ref()?;
        let size = self.pmtud.poll_probe(now)?;
        if size > out.len()
            || self.recovery.bytes_in_flight() + size as u64 > self.recovery.window()
        {
            return None;
        }
        let packet_number = self
            .skips
            .next_packet_number(&mut self.spaces[space].next_packet_number);
        // Frames that make the sealed packet exactly `size` bytes; the
        // length varint may shrink as the frames do, so settle in rounds.
        let mut frames_len = size;
        for _ in 0..3 {
            let sealed = self.sealed_len(space, packet_number, frames_len)?;
            if sealed == size {
                break;
            }
            frames_len = (frames_len + size).checked_sub(sealed)?;
        }
        let mut frames = self.send_scratch.take_frames(frames_len);
        Frame::Ping.encode(&mut frames);
        frames.resize(frames_len.max(frames.len()), 0); // PADDING
        let len = self.seal_alone(space, packet_number, frames, out, now)?;
        let ecn = self.ecn_for_datagram(now);
        self.recovery.on_packet_sent(
            space,
            SentPacket {
                packet_number,
                time_sent: now,
                size: len as u64,
                ack_eliciting: true,
                in_flight: true,
                app_limited: false,
                pmtu_probe: true,
                ecn,
                delivery: Default::default(),
                frames: Vec::new(),
            },
            now,
        );
        self.ecn_on_packet_sent(space, ecn, true, now);
        self.pmtud.on_probe_sent(packet_number);
        tracing::trace!(size = len, packet_number, "path MTU probe");
        self.counters.packets_sent += 1;
        if !self.ack_eliciting_since_activity {
            self.last_activity = now;
            self.ack_eliciting_since_activity = true;
        }
        Some((len, self.datagram_leaves(len, ecn, now)))
    }

    /// Seals `frames` as packet `packet_number` of `space`, the only packet
    /// of its datagram in `out` (a PMTU probe, an off-path PATH_RESPONSE),
    /// traces it and moves the packet number on; the sealed length, or
    /// `None` when it cannot be sealed. Its accounting is the caller's.
    pub(super) fn seal_alone(
        &mut self,
        space: SpaceId,
        packet_number: u64,
        frames: Vec<u8>,
        out: &mut [u8],
        now: Instant,
    ) -> Option<usize> {
        let mut header_scratch = std::mem::take(&mut self.send_scratch.header);
        let header = self.header_for(space, packet_number);
        let zero_rtt = header.ty == PacketType::ZeroRtt;
        let sealed = match self.spaces[space].keys.as_deref() {
            Some(protection) => self
                .versions
                .current()
                .seal_into(
                    &header,
                    self.recovery.largest_acked(space),
                    &frames,
                    protection,
                    &mut header_scratch,
                    out,
                )
                .ok(),
            None => None,
        };
        self.send_scratch.header = header_scratch;
        if let (Some(tracing), Some(len)) = (self.trace.as_mut(), sealed) {
            tracing.observer.event(
                now,
                &crate::trace::Event::PacketSent {
                    space,
                    zero_rtt,
                    packet_number,
                    size: len as u64,
                    frames: &frames,
                },
            );
        }
        self.send_scratch.give_back(frames);
        let len = sealed?;
        self.spaces[space].next_packet_number += 1;
        self.key_phases.on_sent(packet_number);
        Some(len)
    }

    pub(super) fn header_for(&self, space: SpaceId, packet_number: u64) -> Header<'_> {
        let ty = match space {
            SpaceId::Initial => PacketType::Initial,
            SpaceId::Handshake => PacketType::Handshake,
            SpaceId::Data if self.sending_zero_rtt() => PacketType::ZeroRtt,
            SpaceId::Data => PacketType::OneRtt,
        };
        Header {
            ty,
            version: self.versions.current().version(),
            dcid: self.peer_cid,
            scid: self.local_cid,
            // After a Retry every Initial of the client carries its token.
            token: match (space, &self.tokens.retry) {
                (SpaceId::Initial, Some((token, _))) => token,
                (SpaceId::Initial, None) => &self.tokens.initial_token,
                _ => &[],
            },
            packet_number,
            payload_len: 0,
            key_phase: space == SpaceId::Data && self.key_phases.phase,
        }
    }

    fn sealed_size(&self, plan: &PlannedPacket) -> usize {
        self.sealed_len(plan.space, plan.packet_number, plan.frames.len())
            .expect("a packet is planned only in a space with keys")
    }

    /// Bytes a packet of `frames_len` bytes of frames takes in `space`,
    /// in the format we send; `None` without keys for the space.
    fn sealed_len(&self, space: SpaceId, packet_number: u64, frames_len: usize) -> Option<usize> {
        let header = self.header_for(space, packet_number);
        let protection = self.sealing_keys(space)?;
        Some(self.versions.current().sealed_len(
            &header,
            self.recovery.largest_acked(space),
            frames_len,
            protection,
        ))
    }

    /// RFC 9000 §14.1: a datagram carrying an ack-eliciting Initial packet
    /// is padded to 1200 bytes (PADDING inside the last packet, so the tags
    /// cover it).
    fn pad_initial_datagram(&self, plans: &mut [PlannedPacket], limit: usize) {
        let needs_padding = plans
            .iter()
            .any(|p| p.space == SpaceId::Initial && (p.ack_eliciting || self.side == Side::Client));
        if needs_padding {
            self.pad_last_packet(plans, MIN_INITIAL_DATAGRAM.min(limit));
        }
    }

    /// Pads the datagram of `plans` to `target` bytes with PADDING inside
    /// its last packet.
    fn pad_last_packet(&self, plans: &mut [PlannedPacket], target: usize) {
        let others: usize = plans[..plans.len() - 1]
            .iter()
            .map(|p| self.sealed_size(p))
            .sum();
        let Some(last) = plans.last_mut() else { return };
        // The length varint may grow as we pad: settle in two rounds.
        for _ in 0..2 {
            let Some(sealed) = self.sealed_len(last.space, last.packet_number, last.frames.len())
            else {
                return;
            };
            let total = others + sealed;
            if total >= target {
                break;
            }
            last.frames.resize(last.frames.len() + (target - total), 0);
            last.padded = true;
        }
    }

    /// A server that may send nothing more to its client's address until
    /// the client sends again: less than a packet's room is left of three
    /// times what came from that address (RFC 9000 §8.1).
    pub(super) fn amplification_blocked(&self) -> bool {
        if self.address_validated {
            return false;
        }
        let allowance = self.path.unproven.allowance(self.remote);
        // A server's probe of an Initial in flight is itself an Initial,
        // which needs a full 1200-byte datagram (RFC 9000 §14.1,
        // `plan_packet`); under less, no probe could leave.
        let probe_needs = if self.side == Side::Server
            && self
                .recovery
                .outstanding(SpaceId::Initial)
                .any(|packet| packet.ack_eliciting)
        {
            MIN_INITIAL_DATAGRAM
        } else {
            MIN_PACKET_ROOM
        };
        allowance < probe_needs as u64
    }

    /// Ack-eliciting content waiting in `space` (not counting probes).
    fn has_ack_eliciting_data(&self, space: SpaceId) -> bool {
        let level = level_of(space);
        if self.handshake.has_pending(level) {
            return true;
        }
        space == SpaceId::Data
            && (self.handshake_done_pending
                || (self.tokens.new_token_pending && self.address_validated)
                || self.path.challenge_pending
                || self.cids.has_pending_frames()
                || self.ack_frequency.has_pending_frame()
                || self.streams.has_control()
                || self.streams.has_stream_data()
                || !self.datagrams_out.is_empty()
                || self.coding.repair_due())
    }

    /// May an ack-eliciting packet leave now? Probes bypass the window
    /// (RFC 9002 §7.5); everything else needs window room and pacing credit.
    fn may_send_ack_eliciting(&mut self, space: SpaceId, now: Instant) -> bool {
        if self.spaces[space].probes > 0 {
            return true;
        }
        let packet = self.pmtud.current() as u64;
        // RFC 9002 §7.3.2: entering recovery lets one packet beyond the
        // window, taken here for the handshake's spaces only. A client's
        // lost Finished would otherwise wait behind a window full of 1-RTT
        // packets that the server holds unread until that Finished arrives
        // (RFC 9001 §5.7), with no probe timer armed for either: a
        // deadlock. In the Data space the controllers alone decide.
        let recovery_packet = space != SpaceId::Data && self.recovery.may_send_beyond_window();
        if self.recovery.bytes_in_flight() + packet > self.recovery.window() && !recovery_packet {
            self.send_held_by = Some(SendState::WindowLimited);
            return false;
        }
        let at = self.recovery.next_send_time(now, packet);
        if at > now {
            self.pacing_until = Some(at);
            self.send_held_by = Some(SendState::PacingLimited);
            return false;
        }
        true
    }

    fn plan_packet(&mut self, space: SpaceId, room: usize, now: Instant) -> Option<PlannedPacket> {
        let next = &mut self.spaces[space].next_packet_number;
        let packet_number = match space {
            SpaceId::Data => self.skips.next_packet_number(next),
            SpaceId::Initial | SpaceId::Handshake => *next,
        };
        let overhead = self.sealed_len(space, packet_number, room)? - room;
        let budget = room.checked_sub(overhead)?;
        let mut plan = PlannedPacket {
            space,
            packet_number,
            frames: self.send_scratch.take_frames(budget),
            // Allocated by the first frame recorded: most polls find nothing.
            sent: Vec::new(),
            ack_eliciting: false,
            padded: false,
            path_frames: false,
            challenge: false,
            repair: false,
        };

        if let Some(close) = self.close_frame.clone() {
            if !self.close_pending {
                self.send_scratch.give_back(plan.frames);
                return None;
            }
            // RFC 9000 §10.2.3: an application close before the handshake
            // is confirmed is sent as a transport APPLICATION_ERROR.
            let (application, code, reason) = if close.application && space != SpaceId::Data {
                (false, codes::APPLICATION_ERROR, &[][..])
            } else {
                (close.application, close.code, close.reason.as_bytes())
            };
            let reason = &reason[..reason.len().min(budget.saturating_sub(32))];
            Frame::ConnectionClose {
                application,
                error_code: code,
                frame_type: 0,
                reason,
            }
            .encode(&mut plan.frames);
            self.spaces[space].next_packet_number += 1;
            return Some(plan);
        }

        let has_data = self.has_ack_eliciting_data(space) || self.spaces[space].probes > 0;
        // RFC 9000 §14.1: a server's ack-eliciting Initial leaves in a
        // datagram of at least 1200 bytes. Initial is planned first, so
        // `room` is the datagram's limit: under a smaller anti-amplification
        // allowance it waits for the client's next datagram (an ACK still
        // goes).
        let initial_held =
            self.side == Side::Server && space == SpaceId::Initial && room < MIN_INITIAL_DATAGRAM;
        let may_send = has_data && !initial_held && self.may_send_ack_eliciting(space, now);
        let zero_rtt = space == SpaceId::Data && self.sending_zero_rtt();
        if zero_rtt {
            // RFC 9000 §12.4: a 0-RTT packet carries no ACK, and sift's
            // carry only the streams marked replay-safe.
            if may_send {
                self.fill_zero_rtt(&mut plan, budget);
            }
            if plan.frames.is_empty() {
                self.send_scratch.give_back(plan.frames);
                return None;
            }
            self.spaces[space].next_packet_number += 1;
            return Some(plan);
        }
        let ack_of_acks_interval = self.recovery.rtt().smoothed();
        // RFC 9000 §13.4.1: counts once any ECN-capable packet arrived.
        let received = self.spaces[space].ecn_received;
        let ecn_counts = (self.config.ecn && !received.is_zero()).then(|| received.to_array());
        // A repair packet leaves its room to the symbol: an ACK rides on it
        // only when one is due anyway.
        let repair_due = space == SpaceId::Data && self.coding.repair_due();
        let acks = &mut self.spaces[space].acks;
        if acks.ack_due(now)
            || (may_send && !repair_due && acks.worth_piggybacking(now, ack_of_acks_interval))
        {
            let notices = self.notices_negotiated && space == SpaceId::Data;
            let had_notices = notices && acks.has_corruption_notices();
            let largest = acks.write(now, notices, ecn_counts, &mut plan.frames);
            if had_notices {
                self.counters.corruption_notices_sent += 1;
            }
            if space == SpaceId::Data {
                self.coding.write_repaired(&mut plan.frames);
            }
            plan.sent.push(SentFrame::Ack { largest });
        }
        // Echo the peer's path challenges at once, window or not: they
        // are small, and the peer's path validation waits for them. Only
        // those that came on the path we send on: the others leave alone,
        // on theirs (`send_off_path_response`).
        if space == SpaceId::Data {
            while budget.saturating_sub(plan.frames.len()) >= 9 {
                let Some(data) = self.path.pop_on_path(self.remote) else {
                    break;
                };
                Frame::PathResponse { data }.encode(&mut plan.frames);
                plan.ack_eliciting = true;
                plan.path_frames = true;
            }
        }

        if may_send {
            self.fill_ack_eliciting(space, &mut plan, budget);
            if self.spaces[space].probes > 0 {
                if space == SpaceId::Data
                    && self.ack_frequency.peer_takes_frames()
                    && plan.frames.len() < budget
                {
                    // Answered at once, whatever the peer's ACK frequency.
                    Frame::ImmediateAck.encode(&mut plan.frames);
                    plan.ack_eliciting = true;
                } else if !plan.ack_eliciting {
                    Frame::Ping.encode(&mut plan.frames);
                    plan.ack_eliciting = true;
                }
            }
        }
        if plan.frames.is_empty() {
            self.send_scratch.give_back(plan.frames);
            return None;
        }
        self.spaces[space].next_packet_number += 1;
        Some(plan)
    }

    /// A 0-RTT packet's frames: replay-safe stream data (the streams layer
    /// offers no other stream while in 0-RTT), or a PING for a probe.
    fn fill_zero_rtt(&mut self, plan: &mut PlannedPacket, budget: usize) {
        loop {
            let left = budget.saturating_sub(plan.frames.len());
            let overhead = self.streams.stream_frame_overhead(left);
            if left <= overhead {
                break;
            }
            let room = left - overhead;
            let Some(len) = self.write_stream_chunk(plan, room) else {
                break;
            };
            self.zero_rtt.stream_bytes += len as u64;
        }
        if !plan.ack_eliciting && self.spaces[SpaceId::Data].probes > 0 {
            Frame::Ping.encode(&mut plan.frames);
            plan.ack_eliciting = true;
        }
    }

    /// NEW_CONNECTION_ID and RETIRE_CONNECTION_ID frames still to send.
    fn fill_connection_id_frames(&mut self, plan: &mut PlannedPacket, budget: usize) {
        while let Some((sequence, cid, reset_token)) = self.cids.next_announcement() {
            let frame = Frame::NewConnectionId {
                sequence,
                retire_prior_to: 0,
                cid,
                reset_token,
            };
            if frame.encoded_len() > budget.saturating_sub(plan.frames.len()) {
                self.cids.on_announcement_lost(sequence); // the next packet
                break;
            }
            frame.encode(&mut plan.frames);
            plan.sent.push(SentFrame::NewConnectionId(sequence));
            plan.ack_eliciting = true;
        }
        while budget.saturating_sub(plan.frames.len()) >= MAX_CONTROL_FRAME {
            let Some(sequence) = self.cids.next_retirement() else {
                break;
            };
            Frame::RetireConnectionId { sequence }.encode(&mut plan.frames);
            plan.sent.push(SentFrame::RetireConnectionId(sequence));
            plan.ack_eliciting = true;
        }
    }

    fn fill_ack_eliciting(&mut self, space: SpaceId, plan: &mut PlannedPacket, budget: usize) {
        let level = level_of(space);
        let remaining = |plan: &PlannedPacket| budget.saturating_sub(plan.frames.len());

        if space == SpaceId::Data && self.path.challenge_pending && remaining(plan) >= 9 {
            if let Some(data) = self.path.challenge {
                Frame::PathChallenge { data }.encode(&mut plan.frames);
                plan.sent.push(SentFrame::PathChallenge(data));
                plan.ack_eliciting = true;
                plan.path_frames = true;
                plan.challenge = true;
            }
            self.path.challenge_pending = false;
        }
        if space == SpaceId::Data && self.handshake_done_pending && remaining(plan) >= 1 {
            Frame::HandshakeDone.encode(&mut plan.frames);
            plan.sent.push(SentFrame::HandshakeDone);
            plan.ack_eliciting = true;
            self.handshake_done_pending = false;
            // With the handshake confirmed, the token for next time.
            self.tokens.new_token_pending = self.tokens.new_token_out.is_some();
        }
        // Only to a validated address (the one it was sealed for: a move
        // drops it).
        if space == SpaceId::Data && self.tokens.new_token_pending && self.address_validated {
            if let Some(token) = self.tokens.new_token_out.as_deref() {
                let frame = Frame::NewToken { token };
                if frame.encoded_len() <= remaining(plan) {
                    frame.encode(&mut plan.frames);
                    plan.sent.push(SentFrame::NewToken);
                    plan.ack_eliciting = true;
                    self.tokens.new_token_pending = false;
                }
            }
        }
        if space == SpaceId::Data {
            self.fill_connection_id_frames(plan, budget);
            if let Some((sequence, frame)) = self.ack_frequency.poll_frame(remaining(plan)) {
                frame.encode(&mut plan.frames);
                plan.sent.push(SentFrame::AckFrequency(sequence));
                plan.ack_eliciting = true;
            }
        }
        while remaining(plan) > CRYPTO_FRAME_OVERHEAD {
            let Some((offset, data)) = self
                .handshake
                .poll_crypto(level, remaining(plan) - CRYPTO_FRAME_OVERHEAD)
            else {
                break;
            };
            Frame::Crypto {
                offset,
                data: &data,
            }
            .encode(&mut plan.frames);
            plan.sent.push(SentFrame::Crypto { offset, data });
            plan.ack_eliciting = true;
        }
        if space != SpaceId::Data {
            return;
        }
        while remaining(plan) >= MAX_CONTROL_FRAME {
            let Some(control) = self.streams.poll_control() else {
                break;
            };
            control_frame(&control).encode(&mut plan.frames);
            plan.sent.push(SentFrame::Control(control));
            plan.ack_eliciting = true;
        }
        let room = self.datagram_payload_room();
        while let Some(front) = self.datagrams_out.front() {
            if front.len() > room {
                // Queued for a larger packet than the path takes now (a
                // black hole, a new path): it would block the queue for
                // good. Unreliable: drop it and count it (as quinn does).
                self.datagrams_out.pop_front();
                self.counters.datagrams_dropped += 1;
                continue;
            }
            let frame = Frame::Datagram { data: front };
            if frame.encoded_len() > remaining(plan) {
                break;
            }
            frame.encode(&mut plan.frames);
            plan.ack_eliciting = true;
            self.datagrams_out.pop_front();
        }
        if self.coding.repair_due() && self.coding.write_repair(remaining(plan), &mut plan.frames) {
            plan.ack_eliciting = true;
            plan.repair = true;
            return;
        }
        // A source packet leaves room for a repair symbol's frame head.
        let headroom = self.coding.source_headroom();
        loop {
            // Sized by the frame head this chunk can need at most.
            let left = remaining(plan).saturating_sub(headroom);
            let overhead = self.streams.stream_frame_overhead(left);
            if left <= overhead {
                break;
            }
            let room = left - overhead;
            if self.write_stream_chunk(plan, room).is_none() {
                break;
            }
        }
    }

    /// One STREAM frame of at most `room` data bytes into `plan`: the
    /// frame's head, then its bytes straight from the stream's send buffer
    /// (one copy). Its data length, or `None` when no stream has data.
    fn write_stream_chunk(&mut self, plan: &mut PlannedPacket, room: usize) -> Option<usize> {
        let chunk = self.streams.poll_stream_chunk(room)?;
        let start = plan.frames.len();
        encode_stream_header(
            chunk.id,
            chunk.offset,
            chunk.len,
            chunk.fin,
            &mut plan.frames,
        );
        if !self.streams.chunk_data(&chunk, &mut plan.frames) {
            plan.frames.truncate(start);
            return None;
        }
        let len = chunk.len;
        plan.sent.push(SentFrame::Stream(chunk));
        plan.ack_eliciting = true;
        Some(len)
    }
}

/// The wire frame for a stream-layer control descriptor.
fn control_frame(control: &ControlFrame) -> Frame<'static> {
    use crate::stream::Dir;
    match *control {
        ControlFrame::MaxData(max) => Frame::MaxData(max),
        ControlFrame::MaxStreamData { id, max } => Frame::MaxStreamData { id, max },
        ControlFrame::MaxStreams { dir, max } => Frame::MaxStreams {
            bidi: dir == Dir::Bi,
            max,
        },
        ControlFrame::ResetStream {
            id,
            error_code,
            final_size,
        } => Frame::ResetStream {
            id,
            error_code,
            final_size,
        },
        ControlFrame::StopSending { id, error_code } => Frame::StopSending { id, error_code },
        ControlFrame::DataBlocked(limit) => Frame::DataBlocked(limit),
        ControlFrame::StreamDataBlocked { id, limit } => Frame::StreamDataBlocked { id, limit },
        ControlFrame::StreamsBlocked { dir, limit } => Frame::StreamsBlocked {
            bidi: dir == Dir::Bi,
            limit,
        },
    }
}
