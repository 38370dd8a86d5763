//! Connection IDs past the handshake (RFC 9000 §5.1): the ones this side
//! issues with NEW_CONNECTION_ID and accepts packets on, and the ones the
//! peer issued, among which it picks the one it sends to.
//!
//! Why sift has them: an address change must not leave the connection
//! linkable by its ID (RFC 9000 §9.5). A client that rebinds its socket
//! moves to an unused ID of the server's and retires the old one; a server
//! that follows a client to a new address does the same (as quinn does).
//! A server answering a probe from another address than the client's
//! (RFC 9000 §9.1) sets a spare aside for that address, so that its
//! PATH_RESPONSEs there carry no ID of another path (§9.5); if the client
//! then moves there, that ID becomes the current one. With no spare left
//! a probe is not answered (§9.5: such an endpoint "cannot ... respond to
//! probes"), and a move is followed on the current ID only where §9.5
//! allows it: the client's packets kept the destination ID they had (a
//! NAT rebinding), or the client's IDs are empty (`Connection::migrate_to`).
//!
//! Decisions:
//! - Every ID sift issues is 8 bytes: a short header carries the
//!   destination ID with no length byte, and the receiver reads its own
//!   length. A peer's IDs may be 1 to 20 bytes (a QUIC peer picks its own);
//!   an empty or longer one in NEW_CONNECTION_ID is a PROTOCOL_VIOLATION.
//! - Each side keeps at most [`ACTIVE_LIMIT`] of the peer's IDs (its
//!   `active_connection_id_limit`) and issues up to the smaller of the
//!   peer's limit and its own, once the handshake is confirmed (RFC 9000
//!   §5.1.1 allows earlier, but 1-RTT packets before confirmation are
//!   0.5-RTT data to an unvalidated client). A retired ID is replaced at
//!   once, so the peer always has a spare for its next move.
//! - sift never asks the peer to retire its IDs (Retire Prior To stays 0):
//!   it has no reason to rotate them on its own. It does honour a peer
//!   that asks.
//! - A server's reset tokens come from its server secret, so a restarted
//!   server can still reset any ID it issued; a client's are drawn from
//!   the connection's seeded RNG (a client endpoint never resets anyone).
//! - Each side watches for the reset token of the peer ID it sends to, and
//!   only that one (RFC 9000 §10.3.1: never the token of a spare ID not
//!   yet used, nor of a retired one): the endpoint learns it when the ID
//!   comes into use and forgets it when the ID is retired. A server
//!   watches too: a sift client never sends a stateless reset, but other
//!   stacks' clients do.
//! - What the endpoint must learn (routes to add and drop, reset tokens to
//!   watch for) queues as [`CidChange`]s it drains after every datagram.
//!   A connection whose changes nobody drains stops issuing replacements
//!   after [`MAX_PENDING_CHANGES`], so the queue stays bounded.

use std::collections::VecDeque;
use std::net::SocketAddr;

use rand::RngCore;
use rand_chacha::ChaCha8Rng;

use crate::crypto::{ResetToken, ServerSecret};
use crate::wire::{CidSteering, ConnectionId, RangeSet, RESET_TOKEN_LEN, SHORT_HEADER_DCID_LEN};

use super::error::{codes, TransportFailure};

/// Our `active_connection_id_limit`: the peer's IDs we keep at once, and
/// the most of ours we keep issued.
pub(crate) const ACTIVE_LIMIT: u64 = 4;

/// Route changes held for the endpoint, at most, before the connection
/// stops issuing IDs.
const MAX_PENDING_CHANGES: usize = 64;

/// RETIRE_CONNECTION_ID frames waiting to be sent, at most, before a peer
/// that keeps issuing IDs below its own Retire Prior To, or keeps raising
/// it, is cut off (RFC 9000 §5.1.2 suggests CONNECTION_ID_LIMIT_ERROR,
/// and asks room for at least twice our active_connection_id_limit).
const MAX_PENDING_RETIREMENTS: usize = 4 * ACTIVE_LIMIT as usize;

/// Something the endpoint that routes datagrams to this connection must do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CidChange {
    /// Route datagrams for this ID of ours to the connection.
    Route(ConnectionId),
    /// Stop: the peer retired this ID of ours.
    Unroute(ConnectionId),
    /// A datagram from the peer ending in this token is a stateless reset.
    WatchResetToken(ResetToken),
    /// No longer: we retired the peer's ID it went with.
    ForgetResetToken(ResetToken),
}

/// One of our IDs the peer may send to.
#[derive(Clone, Copy, Debug)]
struct Issued {
    sequence: u64,
    cid: ConnectionId,
    reset_token: [u8; RESET_TOKEN_LEN],
}

/// One of the peer's IDs we hold in reserve.
#[derive(Clone, Copy, Debug)]
struct Spare {
    sequence: u64,
    cid: ConnectionId,
    reset_token: ResetToken,
}

/// Both directions' connection IDs of one connection.
#[derive(Debug)]
pub(super) struct ConnectionIds {
    /// Our IDs the peer may use, sequence 0 (the handshake's) first.
    issued: Vec<Issued>,
    next_sequence: u64,
    /// Our IDs whose NEW_CONNECTION_ID still has to be sent (first time,
    /// or after a loss).
    unannounced: VecDeque<u64>,
    /// Our IDs whose NEW_CONNECTION_ID went and is not acknowledged yet.
    unacknowledged: Vec<u64>,
    /// How many of our IDs the peer keeps (its transport parameter).
    peer_limit: u64,
    /// The sequence number of the peer ID we send to; its bytes live in
    /// the connection's `peer_cid`.
    current: u64,
    /// The current peer ID's reset token, if the peer gave one.
    current_reset_token: Option<ResetToken>,
    /// The peer's other IDs, unused.
    spares: Vec<Spare>,
    /// A spare set aside for the one other address the peer probes from,
    /// used only for what goes there.
    probing: Option<(SocketAddr, Spare)>,
    /// The largest Retire Prior To the peer sent.
    retire_prior_to: u64,
    /// Peer IDs at or above `retire_prior_to` we retired ourselves (moving
    /// away from them), so a repeated NEW_CONNECTION_ID cannot revive one.
    retired: RangeSet,
    /// RETIRE_CONNECTION_ID frames still to send.
    unretired: VecDeque<u64>,
    changes: VecDeque<CidChange>,
    /// Whether the endpoint watches for the peer's reset tokens (clients).
    watch_resets: bool,
    /// The worker our new IDs must route to (a multi-worker server).
    steering: Option<CidSteering>,
    /// Times we moved to another of the peer's IDs.
    pub switches: u64,
}

impl ConnectionIds {
    /// `handshake_cid` is our ID of the handshake (sequence 0), and
    /// `reset_token` the one we announced for it, if any; `watch_resets`
    /// asks for the peer's tokens as `CidChange`s.
    pub fn new(
        handshake_cid: ConnectionId,
        reset_token: Option<ResetToken>,
        watch_resets: bool,
    ) -> Self {
        Self {
            issued: vec![Issued {
                sequence: 0,
                cid: handshake_cid,
                reset_token: reset_token.map_or([0; RESET_TOKEN_LEN], |token| *token.as_bytes()),
            }],
            next_sequence: 1,
            unannounced: VecDeque::new(),
            unacknowledged: Vec::new(),
            peer_limit: crate::wire::MIN_ACTIVE_CONNECTION_ID_LIMIT,
            current: 0,
            current_reset_token: None,
            spares: Vec::new(),
            probing: None,
            retire_prior_to: 0,
            retired: RangeSet::new(),
            unretired: VecDeque::new(),
            changes: VecDeque::new(),
            watch_resets,
            steering: None,
            switches: 0,
        }
    }

    /// Draws every ID issued from now on so that it routes to `steering`'s
    /// worker (the handshake's was drawn so).
    pub fn steered_by(mut self, steering: Option<CidSteering>) -> Self {
        self.steering = steering;
        self
    }

    /// The peer's transport parameters arrived: how many of our IDs it
    /// keeps, and the reset token of the ID it chose in the handshake.
    pub fn on_peer_params(&mut self, peer_limit: u64, reset_token: Option<ResetToken>) {
        self.peer_limit = peer_limit;
        self.current_reset_token = reset_token;
        if let Some(token) = reset_token {
            self.watch(CidChange::WatchResetToken(token));
        }
    }

    /// Is `dcid` one of our IDs the peer may send to?
    pub fn is_ours(&self, dcid: &[u8]) -> bool {
        self.issued
            .iter()
            .any(|issued| issued.cid.as_slice() == dcid)
    }

    /// The reset token of the peer ID we send to.
    pub fn current_reset_token(&self) -> Option<ResetToken> {
        self.current_reset_token
    }

    /// Issues IDs until the peer holds as many as both sides allow.
    pub fn replenish(&mut self, rng: &mut ChaCha8Rng, secret: Option<&ServerSecret>) {
        let target = self.peer_limit.min(ACTIVE_LIMIT);
        while (self.issued.len() as u64) < target && self.changes.len() < MAX_PENDING_CHANGES {
            let (sequence, _, _) = self.issue(rng, secret);
            self.unannounced.push_back(sequence);
        }
    }

    /// Issues the ID of a server's preferred_address, announced in its
    /// transport parameters rather than by NEW_CONNECTION_ID: sequence
    /// number 1 (RFC 9000 §5.1.1), routed like any other.
    pub fn issue_for_preferred_address(
        &mut self,
        rng: &mut ChaCha8Rng,
        secret: Option<&ServerSecret>,
    ) -> (ConnectionId, [u8; RESET_TOKEN_LEN]) {
        let (_, cid, reset_token) = self.issue(rng, secret);
        (cid, reset_token)
    }

    /// Draws, records and routes one new ID of ours.
    fn issue(
        &mut self,
        rng: &mut ChaCha8Rng,
        secret: Option<&ServerSecret>,
    ) -> (u64, ConnectionId, [u8; RESET_TOKEN_LEN]) {
        let cid = match self.steering {
            Some(steering) => steering.draw(rng),
            None => {
                let mut bytes = [0u8; SHORT_HEADER_DCID_LEN];
                rng.fill_bytes(&mut bytes);
                ConnectionId::new(&bytes).unwrap_or_default()
            }
        };
        let reset_token = match secret {
            Some(secret) => *secret.reset_token(&cid).as_bytes(),
            None => {
                let mut token = [0u8; RESET_TOKEN_LEN];
                rng.fill_bytes(&mut token);
                token
            }
        };
        let sequence = self.next_sequence;
        self.next_sequence += 1;
        self.issued.push(Issued {
            sequence,
            cid,
            reset_token,
        });
        self.changes.push_back(CidChange::Route(cid));
        (sequence, cid, reset_token)
    }

    /// The next NEW_CONNECTION_ID to send: (sequence, ID, reset token).
    pub fn next_announcement(&mut self) -> Option<(u64, ConnectionId, [u8; RESET_TOKEN_LEN])> {
        while let Some(sequence) = self.unannounced.pop_front() {
            if let Some(issued) = self.issued.iter().find(|i| i.sequence == sequence) {
                if !self.unacknowledged.contains(&sequence) {
                    self.unacknowledged.push(sequence);
                }
                return Some((issued.sequence, issued.cid, issued.reset_token));
            }
        }
        None
    }

    /// The peer acknowledged our NEW_CONNECTION_ID for `sequence`.
    pub fn on_announcement_acked(&mut self, sequence: u64) {
        self.unacknowledged.retain(|&s| s != sequence);
    }

    /// The peer holds every ID we issued: each NEW_CONNECTION_ID went and
    /// was acknowledged. A client that opens a new path waits for it, so
    /// that the server has an ID of ours used on no other path to answer
    /// there with (RFC 9000 §9.5).
    pub fn peer_holds_our_ids(&self) -> bool {
        self.unannounced.is_empty() && self.unacknowledged.is_empty()
    }

    /// The next RETIRE_CONNECTION_ID to send.
    pub fn next_retirement(&mut self) -> Option<u64> {
        self.unretired.pop_front()
    }

    /// Frames of ours still to send.
    pub fn has_pending_frames(&self) -> bool {
        !self.unannounced.is_empty() || !self.unretired.is_empty()
    }

    /// Our NEW_CONNECTION_ID for `sequence` was lost: send it again if the
    /// ID is still in use.
    pub fn on_announcement_lost(&mut self, sequence: u64) {
        self.unacknowledged.retain(|&s| s != sequence);
        if self.issued.iter().any(|i| i.sequence == sequence) {
            self.unannounced.push_back(sequence);
        }
    }

    /// Our RETIRE_CONNECTION_ID for `sequence` was lost.
    pub fn on_retirement_lost(&mut self, sequence: u64) {
        if !self.unretired.contains(&sequence) {
            self.unretired.push_back(sequence);
        }
    }

    /// What the endpoint must do next.
    pub fn poll_change(&mut self) -> Option<CidChange> {
        self.changes.pop_front()
    }

    /// A NEW_CONNECTION_ID from the peer (RFC 9000 §19.15). Returns the ID
    /// to send to from now on if Retire Prior To retired the current one.
    pub fn on_new_connection_id(
        &mut self,
        sequence: u64,
        retire_prior_to: u64,
        cid: ConnectionId,
        reset_token: [u8; RESET_TOKEN_LEN],
        current_cid: ConnectionId,
    ) -> Result<Option<ConnectionId>, TransportFailure> {
        let violation = |reason: &str| {
            Err(TransportFailure::new(
                codes::PROTOCOL_VIOLATION,
                format!("NEW_CONNECTION_ID {reason}"),
            ))
        };
        // RFC 9000 §19.15: 1 to 20 bytes (a peer of another stack chooses
        // its own length; sift's are 8), and not zero-length while the
        // current one is not (§5.1.1).
        if cid.is_empty() || cid.len() > crate::wire::MAX_CID_LEN {
            return violation(&format!("of {} bytes", cid.len()));
        }
        let reset_token = ResetToken::new(reset_token);
        // A repeat (a retransmission) must say the same as the first time.
        let known = if sequence == self.current {
            Some((current_cid, self.current_reset_token))
        } else {
            self.spares
                .iter()
                .chain(self.probing.as_ref().map(|(_, spare)| spare))
                .find(|spare| spare.sequence == sequence)
                .map(|spare| (spare.cid, Some(spare.reset_token)))
        };
        match known {
            Some((known_cid, known_token)) => {
                if known_cid != cid || known_token.is_some_and(|token| token != reset_token) {
                    return violation(&format!("{sequence} repeated with another ID or token"));
                }
            }
            None => {
                let reused = cid == current_cid
                    || self
                        .spares
                        .iter()
                        .chain(self.probing.as_ref().map(|(_, spare)| spare))
                        .any(|spare| spare.cid == cid);
                if reused {
                    return violation(&format!("{sequence} repeats an ID under another number"));
                }
                if sequence < self.retire_prior_to.max(retire_prior_to) {
                    // Issued and retired at once (RFC 9000 §5.1.2).
                    self.queue_retirement(sequence)?;
                } else if !self.retired.contains(sequence) {
                    // Its token is watched once the ID is used (`switch`).
                    self.spares.push(Spare {
                        sequence,
                        cid,
                        reset_token,
                    });
                }
            }
        }
        let mut switched_to = None;
        if retire_prior_to > self.retire_prior_to {
            self.retire_prior_to = retire_prior_to;
            self.retired.remove_below(retire_prior_to);
            let mut kept = Vec::with_capacity(self.spares.len());
            for spare in std::mem::take(&mut self.spares) {
                if spare.sequence < retire_prior_to {
                    self.queue_retirement(spare.sequence)?;
                } else {
                    kept.push(spare);
                }
            }
            self.spares = kept;
            if let Some((_, spare)) = self
                .probing
                .take_if(|(_, spare)| spare.sequence < retire_prior_to)
            {
                // Its token was never watched (see `retire_unused`).
                self.queue_retirement(spare.sequence)?;
            }
            if self.current < retire_prior_to {
                // The ID we send to is retired too, and its retirement
                // waits in the same bounded queue: a peer raising Retire
                // Prior To frame after frame must not grow it for ever.
                self.check_retirement_room(self.current)?;
                // The frame's own ID is at or above Retire Prior To, so a
                // spare exists.
                switched_to = self.switch();
            }
        }
        let held = 1 + self.spares.len() + usize::from(self.probing.is_some());
        if held as u64 > ACTIVE_LIMIT {
            return Err(TransportFailure::new(
                codes::CONNECTION_ID_LIMIT_ERROR,
                format!("the peer issued more than {ACTIVE_LIMIT} connection IDs at once"),
            ));
        }
        Ok(switched_to)
    }

    /// The peer gave an ID we have not used yet.
    pub fn has_spare(&self) -> bool {
        !self.spares.is_empty()
    }

    /// Moves to the lowest-numbered spare peer ID and retires the current
    /// one. Returns the new ID, or `None` (nothing changes) without a spare.
    pub fn switch(&mut self) -> Option<ConnectionId> {
        let next = self.take_spare()?;
        Some(self.make_current(next))
    }

    /// The peer moved to `address`: the ID set aside for it if it probed
    /// from there first (already seen on that path, and only there), else
    /// the lowest-numbered spare, as [`Self::switch`].
    pub fn switch_for(&mut self, address: SocketAddr) -> Option<ConnectionId> {
        match self.probing.take_if(|(probed, _)| *probed == address) {
            Some((_, spare)) => Some(self.make_current(spare)),
            None => self.switch(),
        }
    }

    /// The peer's ID for what goes to `address`, another address than its
    /// current one that it probes from (RFC 9000 §9.5): the spare set
    /// aside for it, or a new one (the one set aside for an earlier
    /// address is retired). `None` without a spare.
    pub fn for_probing_address(&mut self, address: SocketAddr) -> Option<ConnectionId> {
        if let Some((probed, spare)) = &self.probing {
            if *probed == address {
                return Some(spare.cid);
            }
        }
        let spare = self.take_spare()?;
        if let Some((_, old)) = self.probing.replace((address, spare)) {
            self.retire_unused(old);
        }
        Some(spare.cid)
    }

    /// Sets the spare with `sequence` aside for what goes to `address`
    /// (a client's ID for the server's preferred address, RFC 9000
    /// §9.6.1: the one the server gave for it). The ID, or `None` if no
    /// such spare is left.
    pub fn set_aside(&mut self, address: SocketAddr, sequence: u64) -> Option<ConnectionId> {
        if let Some((probed, spare)) = &self.probing {
            if *probed == address && spare.sequence == sequence {
                return Some(spare.cid);
            }
        }
        let index = self.spares.iter().position(|s| s.sequence == sequence)?;
        let spare = self.spares.swap_remove(index);
        if let Some((_, old)) = self.probing.replace((address, spare)) {
            self.retire_unused(old);
        }
        Some(spare.cid)
    }

    /// Takes the lowest-numbered spare out of the reserve.
    fn take_spare(&mut self) -> Option<Spare> {
        let index = (0..self.spares.len()).min_by_key(|&i| self.spares[i].sequence)?;
        Some(self.spares.swap_remove(index))
    }

    /// Retires a spare we used on a path we left (RETIRE_CONNECTION_ID).
    /// Its reset token was never watched: the endpoint watches tokens by
    /// the address the connection sends to, and a probing ID's token is
    /// watched only once the ID becomes the current one (`make_current`).
    fn retire_unused(&mut self, spare: Spare) {
        if spare.sequence >= self.retire_prior_to {
            self.retired.insert_one(spare.sequence);
        }
        if !self.unretired.contains(&spare.sequence) {
            self.unretired.push_back(spare.sequence);
        }
    }

    /// Sends to `next` from now on and retires the current ID.
    fn make_current(&mut self, next: Spare) -> ConnectionId {
        if let Some(token) = self.current_reset_token.take() {
            self.watch(CidChange::ForgetResetToken(token));
        }
        if self.current >= self.retire_prior_to {
            self.retired.insert_one(self.current);
        }
        // Bounded: the queue holds distinct numbers of IDs we held.
        if !self.unretired.contains(&self.current) {
            self.unretired.push_back(self.current);
        }
        self.current = next.sequence;
        self.current_reset_token = Some(next.reset_token);
        self.watch(CidChange::WatchResetToken(next.reset_token));
        self.switches += 1;
        next.cid
    }

    /// A RETIRE_CONNECTION_ID from the peer (RFC 9000 §19.16), in a packet
    /// sent to `dcid`.
    pub fn on_retire_connection_id(
        &mut self,
        sequence: u64,
        dcid: &[u8],
        rng: &mut ChaCha8Rng,
        secret: Option<&ServerSecret>,
    ) -> Result<(), TransportFailure> {
        if sequence >= self.next_sequence {
            return Err(TransportFailure::new(
                codes::PROTOCOL_VIOLATION,
                format!("RETIRE_CONNECTION_ID {sequence}: no such connection ID was issued"),
            ));
        }
        let Some(index) = self.issued.iter().position(|i| i.sequence == sequence) else {
            return Ok(()); // retired already
        };
        if self.issued[index].cid.as_slice() == dcid {
            return Err(TransportFailure::new(
                codes::PROTOCOL_VIOLATION,
                "RETIRE_CONNECTION_ID retires the ID its own packet was sent to",
            ));
        }
        let retired = self.issued.remove(index);
        self.changes.push_back(CidChange::Unroute(retired.cid));
        self.replenish(rng, secret);
        Ok(())
    }

    /// Queues a reset-token change if the endpoint watches them.
    fn watch(&mut self, change: CidChange) {
        if self.watch_resets {
            self.changes.push_back(change);
        }
    }

    fn queue_retirement(&mut self, sequence: u64) -> Result<(), TransportFailure> {
        if self.unretired.contains(&sequence) {
            return Ok(());
        }
        self.check_retirement_room(sequence)?;
        self.unretired.push_back(sequence);
        Ok(())
    }

    /// Whether the retirement of `sequence` fits in the queue of those not
    /// yet sent ([`MAX_PENDING_RETIREMENTS`]); a peer that overflows it
    /// is closed (RFC 9000 §5.1.2 suggests CONNECTION_ID_LIMIT_ERROR).
    fn check_retirement_room(&self, sequence: u64) -> Result<(), TransportFailure> {
        if self.unretired.len() >= MAX_PENDING_RETIREMENTS && !self.unretired.contains(&sequence) {
            return Err(TransportFailure::new(
                codes::CONNECTION_ID_LIMIT_ERROR,
                "the peer makes us retire connection IDs faster than we can say so",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn cid(byte: u8) -> ConnectionId {
        ConnectionId::new(&[byte; SHORT_HEADER_DCID_LEN]).unwrap()
    }

    fn rng() -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(7)
    }

    fn drain(ids: &mut ConnectionIds) -> Vec<CidChange> {
        std::iter::from_fn(|| ids.poll_change()).collect()
    }

    #[test]
    fn issues_up_to_the_smaller_limit_and_routes_each_id() {
        let mut ids = ConnectionIds::new(cid(1), None, true);
        ids.on_peer_params(8, None);
        ids.replenish(&mut rng(), None);
        let routed: Vec<_> = drain(&mut ids)
            .into_iter()
            .filter_map(|change| match change {
                CidChange::Route(cid) => Some(cid),
                _ => None,
            })
            .collect();
        assert_eq!(routed.len(), ACTIVE_LIMIT as usize - 1);
        let announced: Vec<_> = std::iter::from_fn(|| ids.next_announcement()).collect();
        assert_eq!(
            announced.iter().map(|a| a.0).collect::<Vec<_>>(),
            vec![1, 2, 3]
        );
        assert_eq!(announced.iter().map(|a| a.1).collect::<Vec<_>>(), routed);
        assert!(routed.iter().all(|cid| ids.is_ours(cid.as_slice())));

        // A peer that keeps only two gets one besides the handshake's.
        let mut ids = ConnectionIds::new(cid(1), None, true);
        ids.on_peer_params(2, None);
        ids.replenish(&mut rng(), None);
        assert_eq!(drain(&mut ids).len(), 1);
    }

    #[test]
    fn a_server_derives_reset_tokens_from_its_secret() {
        let secret = ServerSecret::new(&[5; crate::crypto::SERVER_SECRET_LEN]);
        let mut ids = ConnectionIds::new(cid(1), None, true);
        ids.on_peer_params(2, None);
        ids.replenish(&mut rng(), Some(&secret));
        let (_, issued, token) = ids.next_announcement().unwrap();
        assert_eq!(&token, secret.reset_token(&issued).as_bytes());
    }

    #[test]
    fn a_retired_id_is_unrouted_and_replaced() {
        let mut ids = ConnectionIds::new(cid(1), None, true);
        ids.on_peer_params(2, None);
        let mut rng = rng();
        ids.replenish(&mut rng, None);
        let CidChange::Route(first) = drain(&mut ids)[0] else {
            panic!("a route first")
        };
        // Retiring the handshake's ID in a packet sent to the new one.
        ids.on_retire_connection_id(0, first.as_slice(), &mut rng, None)
            .unwrap();
        let changes = drain(&mut ids);
        assert_eq!(changes[0], CidChange::Unroute(cid(1)));
        assert!(matches!(changes[1], CidChange::Route(_)));
        assert!(!ids.is_ours(cid(1).as_slice()));
        // Retiring it again is a no-op; one never issued is a violation,
        // and so is retiring the ID the packet came in on.
        ids.on_retire_connection_id(0, first.as_slice(), &mut rng, None)
            .unwrap();
        assert!(ids
            .on_retire_connection_id(9, first.as_slice(), &mut rng, None)
            .is_err());
        let error = ids
            .on_retire_connection_id(1, first.as_slice(), &mut rng, None)
            .unwrap_err();
        assert_eq!(error.code, codes::PROTOCOL_VIOLATION);
    }

    #[test]
    fn switching_takes_the_lowest_spare_and_retires_the_current_id() {
        let mut ids = ConnectionIds::new(cid(1), None, true);
        let handshake_token = ResetToken::new([1; 16]);
        ids.on_peer_params(2, Some(handshake_token));
        assert_eq!(ids.switch(), None, "no spare yet: keep the current ID");
        ids.on_new_connection_id(2, 0, cid(12), [12; 16], cid(10))
            .unwrap();
        ids.on_new_connection_id(1, 0, cid(11), [11; 16], cid(10))
            .unwrap();
        drain(&mut ids);
        assert_eq!(ids.switch(), Some(cid(11)));
        assert_eq!(ids.next_retirement(), Some(0));
        assert_eq!(
            drain(&mut ids),
            vec![
                CidChange::ForgetResetToken(handshake_token),
                CidChange::WatchResetToken(ResetToken::new([11; 16])),
            ]
        );
        assert_eq!(ids.current_reset_token(), Some(ResetToken::new([11; 16])));
        assert_eq!(ids.switch(), Some(cid(12)));
        assert_eq!(ids.next_retirement(), Some(1));
        assert_eq!(ids.switches, 2);
        // A late repeat of the retired number 1 does not bring it back.
        ids.on_new_connection_id(1, 0, cid(11), [11; 16], cid(12))
            .unwrap();
        assert_eq!(ids.switch(), None);
    }

    #[test]
    fn a_spare_ids_reset_token_is_watched_only_once_the_id_is_used() {
        // RFC 9000 §10.3.1: tokens of IDs not yet used are not checked.
        let mut ids = ConnectionIds::new(cid(1), None, true);
        let handshake_token = ResetToken::new([1; 16]);
        ids.on_peer_params(2, Some(handshake_token));
        assert_eq!(
            drain(&mut ids),
            vec![CidChange::WatchResetToken(handshake_token)]
        );
        ids.on_new_connection_id(1, 0, cid(11), [11; 16], cid(10))
            .unwrap();
        ids.on_new_connection_id(2, 0, cid(12), [12; 16], cid(10))
            .unwrap();
        assert_eq!(drain(&mut ids), vec![], "spares are not watched");
        // Retire Prior To retires a spare never used: nothing to forget.
        let switched = ids
            .on_new_connection_id(3, 2, cid(13), [13; 16], cid(10))
            .unwrap();
        assert_eq!(switched, Some(cid(12)));
        assert_eq!(
            drain(&mut ids),
            vec![
                CidChange::ForgetResetToken(handshake_token),
                CidChange::WatchResetToken(ResetToken::new([12; 16])),
            ]
        );
    }

    #[test]
    fn a_probing_address_keeps_its_own_id_and_takes_it_along_when_the_peer_moves_there() {
        let address = |port| SocketAddr::from(([192, 0, 2, 1], port));
        let mut ids = ConnectionIds::new(cid(1), None, false);
        ids.on_peer_params(4, None);
        for sequence in 1..=3 {
            ids.on_new_connection_id(sequence, 0, cid(10 + sequence as u8), [0; 16], cid(10))
                .unwrap();
        }
        assert_eq!(ids.for_probing_address(address(1)), Some(cid(11)));
        assert_eq!(ids.for_probing_address(address(1)), Some(cid(11)));
        // Another probing address: the first one's ID is retired.
        assert_eq!(ids.for_probing_address(address(2)), Some(cid(12)));
        assert_eq!(ids.next_retirement(), Some(1));
        // The peer moves to the address it probed from: that ID, not a
        // fresh one, and the handshake's ID is retired.
        assert_eq!(ids.switch_for(address(2)), Some(cid(12)));
        assert_eq!(ids.next_retirement(), Some(0));
        // Elsewhere: the last spare.
        assert_eq!(ids.switch_for(address(3)), Some(cid(13)));
        assert_eq!(ids.switch_for(address(4)), None);
        // A retransmitted NEW_CONNECTION_ID of the probing ID is no new ID.
        let mut ids = ConnectionIds::new(cid(1), None, false);
        ids.on_new_connection_id(1, 0, cid(11), [0; 16], cid(10))
            .unwrap();
        ids.for_probing_address(address(1));
        ids.on_new_connection_id(1, 0, cid(11), [0; 16], cid(10))
            .unwrap();
        assert!(!ids.has_spare());
    }

    #[test]
    fn retire_prior_to_retires_older_ids_and_moves_off_the_current_one() {
        let mut ids = ConnectionIds::new(cid(1), None, true);
        ids.on_peer_params(2, None);
        ids.on_new_connection_id(1, 0, cid(11), [11; 16], cid(10))
            .unwrap();
        let switched = ids
            .on_new_connection_id(2, 2, cid(12), [12; 16], cid(10))
            .unwrap();
        assert_eq!(switched, Some(cid(12)));
        let retirements: Vec<_> = std::iter::from_fn(|| ids.next_retirement()).collect();
        assert_eq!(retirements, vec![1, 0]);
        // An ID issued below Retire Prior To is retired at once.
        ids.on_new_connection_id(1, 0, cid(14), [14; 16], cid(12))
            .unwrap();
        assert_eq!(ids.next_retirement(), Some(1));
        assert_eq!(ids.switch(), None);
    }

    #[test]
    fn a_peer_that_issues_too_many_or_odd_ids_is_refused() {
        let mut ids = ConnectionIds::new(cid(1), None, true);
        for sequence in 1..ACTIVE_LIMIT {
            ids.on_new_connection_id(sequence, 0, cid(sequence as u8 + 10), [0; 16], cid(10))
                .unwrap();
        }
        let error = ids
            .on_new_connection_id(ACTIVE_LIMIT, 0, cid(99), [0; 16], cid(10))
            .unwrap_err();
        assert_eq!(error.code, codes::CONNECTION_ID_LIMIT_ERROR);

        let mut ids = ConnectionIds::new(cid(1), None, true);
        let error = ids
            .on_new_connection_id(1, 0, ConnectionId::EMPTY, [0; 16], cid(10))
            .unwrap_err();
        assert_eq!(error.code, codes::PROTOCOL_VIOLATION);
        // A QUIC peer's 20-byte IDs are as good as sift's 8-byte ones.
        let mut quic = ConnectionIds::new(cid(1), None, true);
        let long = ConnectionId::new(&[7; 20]).unwrap();
        quic.on_new_connection_id(1, 0, long, [0; 16], cid(10))
            .unwrap();
        // The same number with another ID, or the same ID with another number.
        ids.on_new_connection_id(1, 0, cid(11), [0; 16], cid(10))
            .unwrap();
        assert!(ids
            .on_new_connection_id(1, 0, cid(12), [0; 16], cid(10))
            .is_err());
        assert!(ids
            .on_new_connection_id(2, 0, cid(11), [0; 16], cid(10))
            .is_err());
        // An exact repeat is fine.
        ids.on_new_connection_id(1, 0, cid(11), [0; 16], cid(10))
            .unwrap();
    }
}
