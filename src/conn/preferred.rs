//! The server's preferred address (RFC 9000 §9.6, §18.2, §5.1.1): a
//! server offers a second address in its transport parameters, with a
//! connection ID of sequence number 1 and that ID's reset token, and a
//! client moves there once the handshake is confirmed.
//!
//! **Client.** The offer is checked when it arrives (`check_offer`). Once
//! the handshake is confirmed and the server acknowledged the client's
//! connection IDs (it needs one to answer on the new path), the client
//! picks the address of its own family (a client that reached the server
//! over IPv4 takes the IPv4 one), challenges it from its socket with a PATH_CHALLENGE in a
//! 1200-byte datagram sent to the offered connection ID (§9.6.1: the ID
//! the server gave for that address, never one used on another path,
//! §9.5), and moves there when the server answers: from then on every
//! packet goes to the preferred address under that ID. A challenge
//! unanswered for three PTOs (at least six initial RTTs, §8.2.4) is given
//! up and the client stays where it is. The server's
//! `disable_active_migration` does not forbid the move (§18.2: it
//! "does not prohibit connection migration after a client has acted on a
//! preferred_address"), and once moved the client may migrate actively
//! (`Connection::why_not_move`). A client told not to move
//! (`Config::move_to_preferred_address` off) keeps the ID as a spare.
//!
//! **Server.** A datagram to its preferred address, before the connection
//! sends from there, belongs to the preferred path. Its PATH_CHALLENGEs
//! are answered from that address, together with a PATH_CHALLENGE of the
//! server's own (the server validates the new path too, §9.6.2, and the
//! interop runner asks a new path's first packet to carry one), under a
//! connection ID of the client's used on no other path (§9.5). Until the
//! client answers, what goes to the path is at most three times what came
//! from it (§8, §21.5.5: an attacker could name a victim's address). The
//! server moves (sends every packet from the preferred address) once the
//! client sent a non-probing packet there that is its newest and the
//! server's challenge came back; until then it sends from its original
//! address (§9.6.2: "MUST send non-probing packets from its original
//! address until it receives a non-probing packet from the client at its
//! preferred address and until the server has validated the new path").
//!
//! Owns the state of one move; `Connection` applies it (addresses,
//! connection IDs, a new path's congestion state). No clock reads.

use std::collections::VecDeque;
use std::net::{SocketAddr, SocketAddrV4, SocketAddrV6};
use std::time::Instant;

use rand::RngCore;

use crate::recovery::SpaceId;
use crate::wire::{Frame, PreferredAddress};

use super::error::{codes, TransportFailure};
use super::path::{only_port_changed, AMPLIFICATION_FACTOR};
use super::{canonical_peer, Connection, SendInfo, Side, State};

/// The addresses a server offers as its preferred address, one per
/// family at most (RFC 9000 §18.2). The server must receive on them too:
/// the driver binds them beside its listening address.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PreferredAddresses {
    /// The IPv4 address, if any.
    pub ipv4: Option<SocketAddrV4>,
    /// The IPv6 address, if any.
    pub ipv6: Option<SocketAddrV6>,
}

impl PreferredAddresses {
    /// The offered addresses, IPv4 first.
    pub fn iter(&self) -> impl Iterator<Item = SocketAddr> + '_ {
        self.ipv4
            .map(SocketAddr::V4)
            .into_iter()
            .chain(self.ipv6.map(SocketAddr::V6))
    }

    /// Whether these make an offer a client can act on: at least one
    /// address, none unspecified and no port 0 (what `check_offer`
    /// refuses).
    pub fn validate(&self) -> Result<(), &'static str> {
        if self.ipv4.is_none() && self.ipv6.is_none() {
            return Err("a preferred address needs an IPv4 or an IPv6 address");
        }
        if self
            .iter()
            .any(|a| a.ip().is_unspecified() || a.port() == 0 || a.ip().is_multicast())
        {
            return Err("a preferred address must name a host and a port (not 0.0.0.0, ::, a multicast address or port 0)");
        }
        Ok(())
    }
}

/// PATH_RESPONSEs queued at most for the preferred path (as for any
/// other path: the latest few only).
const MAX_PENDING_RESPONSES: usize = 4;

/// A client's check of a server's preferred_address (RFC 9000 §18.2)
/// beyond its layout (checked when read): an address of each family is
/// either all zeroes (that family is not offered) or a host and a port,
/// and at least one family is offered. A reason if not: the client closes
/// with TRANSPORT_PARAMETER_ERROR.
pub(super) fn check_offer(offer: &PreferredAddress) -> Result<(), &'static str> {
    if offer.ipv4.is_none() && offer.ipv6.is_none() {
        return Err("preferred_address offers neither an IPv4 nor an IPv6 address");
    }
    let bad =
        |ip: std::net::IpAddr, port: u16| ip.is_unspecified() || port == 0 || ip.is_multicast();
    if offer.ipv4.is_some_and(|a| bad((*a.ip()).into(), a.port()))
        || offer.ipv6.is_some_and(|a| bad((*a.ip()).into(), a.port()))
    {
        return Err("preferred_address names an unspecified or multicast address, or port 0");
    }
    Ok(())
}

/// Where a client is in its move to the server's preferred address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MoveState {
    /// No preferred address (or a server).
    NotOffered,
    /// Offered; the handshake is not confirmed yet.
    Offered,
    /// The client does not move: told not to, or no address of its family.
    Declined,
    /// Challenging the preferred address.
    Probing,
    /// Sending to the preferred address.
    Moved,
    /// The challenge went unanswered: staying on the handshake's address.
    GaveUp,
}

/// A client's move to the preferred address.
#[derive(Debug)]
pub(super) struct ClientMove {
    pub state: MoveState,
    /// The preferred address of the client's family.
    pub target: Option<SocketAddr>,
    /// The server's address in the handshake (still accepted once moved:
    /// the server sends from it until it validated the new path).
    pub handshake_address: Option<SocketAddr>,
    /// The outstanding challenge's data.
    pub challenge: Option<[u8; 8]>,
    /// The challenge has to go (first time, or repeated).
    pub challenge_pending: bool,
    /// When an unanswered challenge goes again.
    pub repeat_at: Option<Instant>,
    /// When the move is given up.
    pub deadline: Option<Instant>,
}

impl Default for ClientMove {
    fn default() -> Self {
        Self {
            state: MoveState::NotOffered,
            target: None,
            handshake_address: None,
            challenge: None,
            challenge_pending: false,
            repeat_at: None,
            deadline: None,
        }
    }
}

impl ClientMove {
    /// The server offered `offer`; the client reached it at `remote`.
    /// `wanted`: the client may move (its config).
    pub fn on_offer(&mut self, offer: &PreferredAddress, remote: SocketAddr, wanted: bool) {
        let target = match remote {
            SocketAddr::V4(_) => offer.ipv4.map(SocketAddr::V4),
            SocketAddr::V6(_) => offer.ipv6.map(SocketAddr::V6),
        };
        self.handshake_address = Some(remote);
        self.target = target;
        self.state = match target {
            Some(target) if wanted && target != remote => MoveState::Offered,
            _ => MoveState::Declined,
        };
    }

    /// The handshake is confirmed: challenge the target with `data`,
    /// giving up at `deadline`. False if there is nothing to start.
    pub fn start(&mut self, data: [u8; 8], deadline: Instant) -> bool {
        if self.state != MoveState::Offered {
            return false;
        }
        self.state = MoveState::Probing;
        self.challenge = Some(data);
        self.challenge_pending = true;
        self.deadline = Some(deadline);
        true
    }

    /// The challenge went out; unanswered, it goes again at `repeat_at`.
    pub fn on_challenge_sent(&mut self, repeat_at: Instant) {
        self.challenge_pending = false;
        self.repeat_at = Some(repeat_at);
    }

    /// A PATH_RESPONSE with `data`: whether it answers our challenge (the
    /// client then moves).
    pub fn on_response(&mut self, data: [u8; 8]) -> bool {
        if self.state != MoveState::Probing || self.challenge != Some(data) {
            return false;
        }
        self.state = MoveState::Moved;
        self.challenge = None;
        self.challenge_pending = false;
        self.repeat_at = None;
        self.deadline = None;
        true
    }

    /// Fires the repeat and give-up timers.
    pub fn on_timeout(&mut self, now: Instant) {
        if self.state != MoveState::Probing {
            return;
        }
        if self.deadline.is_some_and(|t| t <= now) {
            tracing::debug!(target = ?self.target, "the preferred address did not answer: staying");
            self.state = MoveState::GaveUp;
            self.challenge = None;
            self.challenge_pending = false;
            self.repeat_at = None;
            self.deadline = None;
        } else if self.repeat_at.is_some_and(|t| t <= now) {
            self.repeat_at = None;
            self.challenge_pending = true;
        }
    }

    /// The earliest of its timers.
    pub fn next_timer(&self) -> Option<Instant> {
        [self.repeat_at, self.deadline].into_iter().flatten().min()
    }

    /// Whether a datagram from `from` may be the server's: the target
    /// while probing or moved, the handshake's address once moved.
    pub fn accepts_from(&self, from: SocketAddr) -> bool {
        match self.state {
            MoveState::Probing => self.target == Some(from),
            MoveState::Moved => self.target == Some(from) || self.handshake_address == Some(from),
            _ => false,
        }
    }
}

/// The path a client opened to the server's preferred address, as the
/// server sees it before it moves there.
#[derive(Debug)]
pub(super) struct PreferredPath {
    /// Our preferred address the client's datagrams came to.
    pub local: SocketAddr,
    /// The client's address as seen there.
    pub remote: SocketAddr,
    /// Bytes from the client on this path, and to it, before validation.
    received: u64,
    sent: u64,
    /// The client's challenges to echo, from there.
    pub responses: VecDeque<[u8; 8]>,
    /// Our challenge of the path, and whether it has to go (again).
    pub challenge: Option<[u8; 8]>,
    pub challenge_pending: bool,
    /// The client answered our challenge.
    pub validated: bool,
    /// The client's newest non-probing packet came on this path.
    pub client_moved: bool,
}

impl PreferredPath {
    /// Bytes that may still go to the path: unlimited once validated,
    /// else three times what came from it.
    pub fn allowance(&self) -> u64 {
        if self.validated {
            u64::MAX
        } else {
            (AMPLIFICATION_FACTOR * self.received).saturating_sub(self.sent)
        }
    }

    /// A datagram of `len` bytes went to the path.
    pub fn on_sent(&mut self, len: usize) {
        self.sent = self.sent.saturating_add(len as u64);
    }

    /// Whether path frames wait to go there.
    pub fn has_frames(&self) -> bool {
        !self.responses.is_empty() || (self.challenge_pending && !self.validated)
    }
}

/// A server's offer and the path a client opened to it.
#[derive(Debug, Default)]
pub(super) struct ServerOffer {
    /// The addresses offered (the driver receives on them).
    pub addresses: Vec<SocketAddr>,
    /// The path to the preferred address, once a client datagram came
    /// there.
    pub path: Option<PreferredPath>,
    /// The connection sends from the preferred address.
    pub moved: bool,
    /// Once moved: the address it sent from before (datagrams still
    /// reaching it are the connection's).
    pub original_local: Option<SocketAddr>,
}

impl ServerOffer {
    /// Whether `to` is one of our preferred addresses (before we moved
    /// there: afterwards it is simply our address).
    pub fn is_offered(&self, to: SocketAddr) -> bool {
        !self.moved && self.addresses.contains(&to)
    }

    /// A datagram of `len` bytes from `from` came to our preferred
    /// address `to`. A client address other than the path's starts the
    /// path over (a NAT may map the new path differently, or the
    /// client's first probe was lost on the way to another address).
    pub fn on_received(
        &mut self,
        to: SocketAddr,
        from: SocketAddr,
        len: usize,
    ) -> &mut PreferredPath {
        let fresh = self
            .path
            .as_ref()
            .is_none_or(|path| path.remote != from || path.local != to);
        if fresh {
            self.path = Some(PreferredPath {
                local: to,
                remote: from,
                received: 0,
                sent: 0,
                responses: VecDeque::new(),
                challenge: None,
                challenge_pending: false,
                validated: false,
                client_moved: false,
            });
        }
        let path = self.path.as_mut().expect("set above");
        path.received = path.received.saturating_add(len as u64);
        path
    }

    /// The client challenged the preferred path with `data`.
    pub fn on_challenge(&mut self, data: [u8; 8]) {
        if let Some(path) = self.path.as_mut() {
            if path.responses.len() == MAX_PENDING_RESPONSES {
                path.responses.pop_front();
            }
            path.responses.push_back(data);
        }
    }

    /// A PATH_RESPONSE with `data`: whether it validated the preferred
    /// path.
    pub fn on_response(&mut self, data: [u8; 8]) -> bool {
        match self.path.as_mut() {
            Some(path) if !path.validated && path.challenge == Some(data) => {
                path.validated = true;
                path.challenge_pending = false;
                true
            }
            _ => false,
        }
    }

    /// The path the connection may move to now (validated, and the
    /// client's newest non-probing packet came there).
    pub fn ready(&self) -> Option<(SocketAddr, SocketAddr)> {
        self.path
            .as_ref()
            .filter(|path| !self.moved && path.validated && path.client_moved)
            .map(|path| (path.local, path.remote))
    }
}

impl Connection {
    /// Server: puts the preferred address of its config in its transport
    /// parameters, with a new connection ID of sequence number 1.
    pub(super) fn offer_preferred_address(&mut self) {
        let Some(addresses) = self
            .config
            .preferred_address
            .filter(|_| self.side == Side::Server)
        else {
            return;
        };
        let secret = self.config.server_secret.as_ref();
        let (connection_id, reset_token) = self
            .cids
            .issue_for_preferred_address(&mut self.path_rng, secret);
        self.handshake.local_params_mut().preferred_address = Some(PreferredAddress {
            ipv4: addresses.ipv4,
            ipv6: addresses.ipv6,
            connection_id,
            reset_token,
        });
        self.server_offer.addresses = addresses.iter().map(canonical_peer).collect();
    }

    /// Client: the server's preferred_address arrived in its transport
    /// parameters. A server that uses a zero-length ID must not send one,
    /// and an offer of no usable address is refused (RFC 9000 §18.2); a
    /// good one's ID is the server's number 1 (§5.1.1).
    pub(super) fn on_preferred_offer(
        &mut self,
        offer: &PreferredAddress,
    ) -> Result<(), TransportFailure> {
        let param_error =
            |what: &str| TransportFailure::new(codes::TRANSPORT_PARAMETER_ERROR, what.to_string());
        if self.peer_cid.is_empty() {
            return Err(param_error(
                "preferred_address from a server that uses a zero-length connection ID",
            ));
        }
        check_offer(offer).map_err(param_error)?;
        self.cids.on_new_connection_id(
            1,
            0,
            offer.connection_id,
            offer.reset_token,
            self.peer_cid,
        )?;
        self.client_move
            .on_offer(offer, self.remote, self.config.move_to_preferred_address);
        Ok(())
    }

    /// Client, the handshake confirmed: starts validating the preferred
    /// address, if it has one to move to.
    pub(super) fn start_preferred_move(&mut self) {
        if self.side != Side::Client || self.client_move.state != MoveState::Offered {
            return;
        }
        let mut data = [0u8; 8];
        self.path_rng.fill_bytes(&mut data);
        // RFC 9000 §8.2.4: three PTOs, and no less than six initial RTTs.
        let patience =
            (self.recovery.pto_period(SpaceId::Data) * 3).max(self.config.recovery.initial_rtt * 6);
        self.client_move.start(data, self.now + patience);
        tracing::debug!(target = ?self.client_move.target, "validating the server's preferred address");
    }

    /// Whether a datagram from `from` may be for this connection although
    /// it is not the peer's current address: a server past its handshake
    /// follows a client that moves (`path`); a client takes the server's
    /// preferred address once it challenges it, and the handshake's
    /// address once it moved.
    pub fn accepts_from(&self, from: SocketAddr) -> bool {
        let from = canonical_peer(from);
        from == self.remote || self.follows_migration() || self.client_move.accepts_from(from)
    }

    /// Whether datagrams sent to `to` reach this connection: its address,
    /// and a server's preferred addresses (before it moves there) or its
    /// original one (after).
    pub fn receives_on(&self, to: SocketAddr) -> bool {
        let to = canonical_peer(to);
        to == canonical_peer(self.local)
            || self.server_offer.addresses.contains(&to)
            || self.server_offer.original_local == Some(to)
    }

    /// Where this connection is in a move to the server's preferred
    /// address (a client; a server's is always `NotOffered`).
    pub fn preferred_address_move(&self) -> MoveState {
        self.client_move.state
    }

    /// A datagram of `len` bytes from `from` to our address `to`: whether
    /// it came on the preferred path (server, before it moved there). Such
    /// a datagram is dropped (`false` in the second place) before the
    /// handshake is confirmed: a client moves only after (RFC 9000 §9.6).
    pub(super) fn on_datagram_to(
        &mut self,
        from: SocketAddr,
        to: SocketAddr,
        len: usize,
    ) -> (bool, bool) {
        if self.side != Side::Server || !self.server_offer.is_offered(to) || to == self.local {
            return (false, true);
        }
        if !self.follows_migration() {
            return (true, false);
        }
        // A validated path is the client's: another source at the
        // preferred address (spoofed, unauthenticated so far) does not
        // start it over.
        if self
            .server_offer
            .path
            .as_ref()
            .is_some_and(|path| path.validated && (path.remote != from || path.local != to))
        {
            return (true, false);
        }
        let fresh = self
            .server_offer
            .path
            .as_ref()
            .is_none_or(|path| path.remote != from || path.local != to);
        let path = self.server_offer.on_received(to, from, len);
        if !path.validated {
            path.challenge_pending = true;
        }
        if fresh {
            let mut data = [0u8; 8];
            self.path_rng.fill_bytes(&mut data);
            if let Some(path) = self.server_offer.path.as_mut() {
                path.challenge = Some(data);
            }
        }
        (true, true)
    }

    /// A PATH_CHALLENGE with `data` in the packet being processed.
    pub(super) fn on_path_challenge(&mut self, data: [u8; 8]) {
        if self.recv_on_preferred {
            self.server_offer.on_challenge(data);
        } else {
            self.path.on_challenge(data, self.recv_from);
        }
    }

    /// A PATH_RESPONSE with `data` that answers no challenge of `path`:
    /// perhaps one of the preferred address's.
    pub(super) fn on_preferred_response(&mut self, data: [u8; 8]) {
        match self.side {
            Side::Client if self.client_move.on_response(data) => self.move_to_preferred(),
            Side::Server if self.server_offer.on_response(data) => {
                tracing::debug!("the client's path to our preferred address is validated");
                self.serve_from_preferred_if_ready();
            }
            _ => {}
        }
    }

    /// Server: the packet being processed came on the preferred path, and
    /// is the client's newest non-probing one.
    pub(super) fn on_client_moved_to_preferred(&mut self) {
        if let Some(path) = self.server_offer.path.as_mut() {
            path.client_moved = true;
        }
        self.serve_from_preferred_if_ready();
    }

    /// Client: the preferred address answered: everything goes there from
    /// now on, under the ID the server gave for it (set aside when the
    /// challenge went, RFC 9000 §9.6.1). A new IP address is a new path
    /// (RFC 9000 §9.4): congestion state starts over.
    fn move_to_preferred(&mut self) {
        let Some(target) = self.client_move.target else {
            return;
        };
        if let Some(cid) = self.cids.switch_for(target) {
            self.peer_cid = cid;
        }
        let old = std::mem::replace(&mut self.remote, target);
        self.pmtud
            .on_path_change(self.spaces[SpaceId::Data].next_packet_number);
        if !only_port_changed(old, target) {
            self.start_new_path();
        }
        // Something non-probing at once, so the server moves too.
        let probes = &mut self.spaces[SpaceId::Data].probes;
        *probes = (*probes).max(1);
        tracing::debug!(from = %old, to = %target, "moved to the server's preferred address");
    }

    /// Server: sends from the preferred address from now on, once the
    /// client moved there and the path is validated (RFC 9000 §9.6.2),
    /// under an ID of the client's not used on the path it leaves (§9.5).
    fn serve_from_preferred_if_ready(&mut self) {
        let Some((local, remote)) = self.server_offer.ready() else {
            return;
        };
        self.server_offer.moved = true;
        self.server_offer.original_local = Some(canonical_peer(self.local));
        if !self.peer_cid.is_empty() {
            if let Some(cid) = self.cids.switch_for(remote) {
                self.peer_cid = cid;
            }
        }
        let old_local = std::mem::replace(&mut self.local, local);
        let old_remote = std::mem::replace(&mut self.remote, remote);
        // The path's challenge came back from `remote`: it is the client's.
        self.address_validated = true;
        self.path.unproven.on_validated(remote);
        self.pmtud
            .on_path_change(self.spaces[SpaceId::Data].next_packet_number);
        if !only_port_changed(old_remote, remote) || old_local.ip() != local.ip() {
            self.start_new_path();
        }
        tracing::debug!(from = %old_local, to = %local, "serving from our preferred address");
    }

    /// The preferred address's path frames, alone in a datagram padded to
    /// 1200 bytes: a client's challenge of the address (under the ID the
    /// server gave for it), or a server's PATH_RESPONSEs and its own
    /// PATH_CHALLENGE, from the preferred address, within three times what
    /// came on that path until it is validated.
    pub(super) fn send_preferred_path(
        &mut self,
        out: &mut [u8],
        now: std::time::Instant,
    ) -> Option<(usize, SendInfo)> {
        if self.state != State::Established || self.close_frame.is_some() {
            return None;
        }
        self.spaces[SpaceId::Data].keys.as_ref()?;
        match self.side {
            Side::Client => self.send_preferred_probe(out, now),
            Side::Server => self.send_preferred_path_frames(out, now),
        }
    }

    fn send_preferred_probe(
        &mut self,
        out: &mut [u8],
        now: std::time::Instant,
    ) -> Option<(usize, SendInfo)> {
        if !self.client_move.challenge_pending {
            return None;
        }
        // Our NEW_CONNECTION_IDs first, acknowledged: the server answers
        // a new path under an ID of ours used on no other (RFC 9000 §9.5),
        // and the probe may outrun them on a faster path.
        if !self.cids.peer_holds_our_ids() {
            return None;
        }
        let (target, data) = (self.client_move.target?, self.client_move.challenge?);
        let Some(dcid) = self.cids.set_aside(target, 1) else {
            // The server's ID for it is gone (retired at its request):
            // no ID may carry the move.
            self.client_move.state = MoveState::GaveUp;
            self.client_move.challenge_pending = false;
            return None;
        };
        let mut frame = Vec::new();
        Frame::PathChallenge { data }.encode(&mut frame);
        let current = std::mem::replace(&mut self.peer_cid, dcid);
        let sent = self.seal_path_frames(&frame, target, None, out, now);
        self.peer_cid = current;
        let repeat = self.recovery.pto_period(SpaceId::Data);
        self.client_move.on_challenge_sent(now + repeat);
        sent
    }

    fn send_preferred_path_frames(
        &mut self,
        out: &mut [u8],
        now: std::time::Instant,
    ) -> Option<(usize, SendInfo)> {
        if self.server_offer.moved {
            return None;
        }
        let path = self.server_offer.path.as_mut().filter(|p| p.has_frames())?;
        let (local, remote) = (path.local, path.remote);
        let mut frames = Vec::new();
        while let Some(data) = path.responses.pop_front() {
            Frame::PathResponse { data }.encode(&mut frames);
        }
        if path.challenge_pending && !path.validated {
            if let Some(data) = path.challenge {
                Frame::PathChallenge { data }.encode(&mut frames);
            }
        }
        path.challenge_pending = false;
        let budget = path.allowance();
        // RFC 9000 §9.5: not an ID of another path (an empty one links
        // nothing); without a spare there is no answer.
        let dcid = if self.peer_cid.is_empty() {
            self.peer_cid
        } else if let Some(cid) = self.cids.for_probing_address(remote) {
            cid
        } else {
            tracing::trace!(%remote, "no unused connection ID of the client's for the preferred path: its challenges go unanswered");
            self.counters.path_responses_withheld += 1;
            return None;
        };
        let current = std::mem::replace(&mut self.peer_cid, dcid);
        let sent = self.seal_path_frames(&frames, remote, Some(budget), out, now);
        self.peer_cid = current;
        match sent {
            Some((len, mut info)) => {
                if let Some(path) = self.server_offer.path.as_mut() {
                    path.on_sent(len);
                }
                info.from = local;
                Some((len, info))
            }
            None => {
                self.counters.path_responses_withheld += 1;
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ConnectionId;
    use std::net::{Ipv4Addr, Ipv6Addr};

    fn offer(ipv4: Option<SocketAddrV4>, ipv6: Option<SocketAddrV6>) -> PreferredAddress {
        PreferredAddress {
            ipv4,
            ipv6,
            connection_id: ConnectionId::new(&[7; 8]).unwrap(),
            reset_token: [9; 16],
        }
    }

    #[test]
    fn an_offer_of_no_address_or_of_an_unspecified_one_is_refused() {
        assert!(check_offer(&offer(None, None)).is_err());
        let zero_ip = SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 443);
        assert!(check_offer(&offer(Some(zero_ip), None)).is_err());
        let port_zero = SocketAddrV6::new(Ipv6Addr::LOCALHOST, 0, 0, 0);
        assert!(check_offer(&offer(None, Some(port_zero))).is_err());
        let good = SocketAddrV4::new(Ipv4Addr::new(192, 0, 2, 1), 443);
        assert!(check_offer(&offer(Some(good), None)).is_ok());
    }

    #[test]
    fn a_client_takes_the_address_of_its_own_family_or_none() {
        let v4 = SocketAddrV4::new(Ipv4Addr::new(192, 0, 2, 1), 443);
        let mut client = ClientMove::default();
        let remote: SocketAddr = "[2001:db8::1]:443".parse().unwrap();
        client.on_offer(&offer(Some(v4), None), remote, true);
        assert_eq!(client.state, MoveState::Declined, "no IPv6 address offered");
        let remote: SocketAddr = "192.0.2.9:443".parse().unwrap();
        client.on_offer(&offer(Some(v4), None), remote, true);
        assert_eq!(client.state, MoveState::Offered);
        assert_eq!(client.target, Some(SocketAddr::V4(v4)));
    }

    #[test]
    fn the_server_sends_an_unvalidated_preferred_path_three_times_what_came() {
        let mut offer = ServerOffer {
            addresses: vec!["127.0.0.2:4433".parse().unwrap()],
            ..ServerOffer::default()
        };
        let to = offer.addresses[0];
        let from: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        offer.on_received(to, from, 1200);
        let path = offer.path.as_mut().unwrap();
        assert_eq!(path.allowance(), 3600);
        path.on_sent(1200);
        assert_eq!(path.allowance(), 2400);
        path.challenge = Some([1; 8]);
        assert!(!offer.on_response([2; 8]));
        assert!(offer.on_response([1; 8]));
        assert_eq!(offer.path.as_ref().unwrap().allowance(), u64::MAX);
        assert_eq!(offer.ready(), None, "the client has not moved yet");
        offer.path.as_mut().unwrap().client_moved = true;
        assert_eq!(offer.ready(), Some((to, from)));
    }
}
