//! The network path of a connection: the peer's address, spelled one way,
//! and what happens when it changes (RFC 9000 §9).
//!
//! **Migration.** A server follows a client whose address changes (a NAT
//! rebinding, or a phone moving from Wi-Fi to cellular) once the handshake
//! is confirmed: when an authenticated 1-RTT packet that is the highest
//! numbered so far arrives from a new address, the connection sends there
//! from then on (a replayed older packet from a spoofed address moves
//! nothing). The new path is unvalidated: the anti-amplification limit
//! applies again until the client echoes a PATH_CHALLENGE sent on it. If
//! only the port changed, it is taken for the same path behind a rebound
//! NAT and congestion state is kept; a new IP address is a new path, and
//! the congestion controller and RTT estimate start over (RFC 9000 §9.4).
//! If the challenge goes unanswered for three PTOs (at least six initial
//! RTTs, RFC 9000 §8.2.4), the connection goes back to the last validated
//! address, however many unvalidated ones came since (RFC 9000 §9.3.2: a
//! spoofed or short-lived address does not keep the connection); with no
//! validated address to go back to it ends silently, its state discarded
//! (`CloseReason::PathValidationFailed`).
//! Clients never follow a server to another address. A server that follows
//! a client, and a client that rebinds its own socket, move to an unused
//! connection ID of the peer's where one is left (see `cid`).
//!
//! **Anti-amplification.** Everything sent to an address that has not
//! proved it is the peer's — the client's address before its handshake
//! does, a new address the peer moved to before it echoes our
//! PATH_CHALLENGE, an address the peer only probes from — counts against
//! one budget per address: three times the bytes that arrived from that
//! address ([`UnprovenAddresses`], RFC 9000 §8, §8.2.1, §9.3.1). PATH_RESPONSEs,
//! our own challenges and the padding that expands either to 1200 bytes
//! draw on the same budget: a flood of challenges from a spoofed address
//! earns its victim no more than three times the flood.
//!
//! A dual-stack socket (`[::]`, IPv6 with `IPV6_V6ONLY` off) reports an
//! IPv4 peer as the IPv4-mapped IPv6 address `::ffff:a.b.c.d` (RFC 4291
//! §2.5.5.2); an IPv4 socket reports the same peer as `a.b.c.d`. Both name
//! one peer. The connection compares every datagram's source with its peer
//! (no migration), so it keeps one spelling — the plain IPv4 one — and
//! compares in that spelling, whatever the socket underneath says.
//! Sending to a plain IPv4 address works on a dual-stack socket too: Linux
//! takes an IPv4 destination on an IPv6 UDP socket as the mapped one.

use std::collections::VecDeque;
use std::net::SocketAddr;

/// PATH_RESPONSEs queued at most: a flood of challenges gets answers for
/// the latest few only.
const MAX_PENDING_RESPONSES: usize = 4;

/// Addresses whose budget is kept besides the peer's current one: a peer
/// probes one or two paths at a time; more spoofed addresses only push
/// out the oldest (which then gets nothing more until it sends again).
const MAX_UNPROVEN_ADDRESSES: usize = 4;

/// RFC 9000 §8: before an address is validated, an endpoint sends it at
/// most three times the bytes it received from it.
pub(super) const AMPLIFICATION_FACTOR: u64 = 3;

/// A peer's PATH_CHALLENGE still to echo, and where it came from: the
/// response goes back on that path (RFC 9000 §8.2.2), whatever the peer's
/// address is by then.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct PendingResponse {
    /// The challenge's data.
    pub data: [u8; 8],
    /// The address the challenge came from.
    pub from: SocketAddr,
}

/// What came from one address that has not proved itself, and what went
/// to it.
#[derive(Clone, Copy, Debug)]
struct Budget {
    address: SocketAddr,
    received: u64,
    sent: u64,
}

/// The anti-amplification budgets of the addresses that have not proved
/// they are the peer's (see the module docs): one per address, bounded in
/// number, whichever way the bytes went out (a response alone on its
/// path, or the connection's own packets once it moved there).
#[derive(Debug, Default)]
pub(super) struct UnprovenAddresses {
    budgets: VecDeque<Budget>,
}

impl UnprovenAddresses {
    /// A datagram of `len` bytes came from `from`, which has not proved
    /// itself. `keep` (the peer's current address) is never pushed out
    /// to make room: its budget is the one the connection sends on.
    pub fn on_received(&mut self, from: SocketAddr, len: usize, keep: SocketAddr) {
        if let Some(budget) = self.budgets.iter_mut().find(|b| b.address == from) {
            budget.received = budget.received.saturating_add(len as u64);
            return;
        }
        if self.budgets.len() > MAX_UNPROVEN_ADDRESSES {
            // Forgetting an address loses what it may still be sent,
            // never lets it be sent more: the oldest goes.
            if let Some(index) = self.budgets.iter().position(|b| b.address != keep) {
                self.budgets.remove(index);
            }
        }
        self.budgets.push_back(Budget {
            address: from,
            received: len as u64,
            sent: 0,
        });
    }

    /// Bytes that may still go to `to` (nothing to an address never heard
    /// from).
    pub fn allowance(&self, to: SocketAddr) -> u64 {
        self.budgets
            .iter()
            .find(|b| b.address == to)
            .map_or(0, |b| {
                (AMPLIFICATION_FACTOR * b.received).saturating_sub(b.sent)
            })
    }

    /// A datagram of `len` bytes went to `to`.
    pub fn on_sent(&mut self, to: SocketAddr, len: usize) {
        if let Some(budget) = self.budgets.iter_mut().find(|b| b.address == to) {
            budget.sent = budget.sent.saturating_add(len as u64);
        }
    }

    /// `address` proved itself: no budget from now on.
    pub fn on_validated(&mut self, address: SocketAddr) {
        self.budgets.retain(|b| b.address != address);
    }
}

/// What a PATH_RESPONSE did to our path validation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum ResponseOutcome {
    /// It echoes no challenge outstanding.
    NotOurs,
    /// The path is validated, its MTU of 1200 bytes included.
    Validated,
    /// The peer's address is validated, but a copy of the challenge went
    /// in a datagram under 1200 bytes (the anti-amplification limit), so
    /// the path's MTU is not: challenge again in a full-size datagram
    /// (RFC 9000 §8.2.1, §8.2.3).
    AddressOnly,
}

/// A PATH_CHALLENGE for the path the peer seemed to leave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct OldPathProbe {
    /// Where the peer was.
    pub to: SocketAddr,
    /// The challenge's data.
    pub data: [u8; 8],
    /// It went out (once: an old path that no longer works simply never
    /// answers).
    pub sent: bool,
}

/// Path validation state: the challenge we sent on the current path, and
/// the peer's challenges we still have to echo.
#[derive(Debug, Default)]
pub(super) struct PathValidation {
    /// The data of our outstanding PATH_CHALLENGE.
    pub challenge: Option<[u8; 8]>,
    /// The challenge still has to be sent (first time, or after a loss).
    pub challenge_pending: bool,
    /// The peer's challenges to echo, oldest first.
    pub responses: VecDeque<PendingResponse>,
    /// What addresses that have not proved themselves may still be sent.
    pub unproven: UnprovenAddresses,
    /// Our connection ID the peer's latest packet from its current
    /// address was sent to: a move that keeps it is a NAT rebinding, which
    /// may keep the ID we send to (RFC 9000 §9.5).
    pub dcid_on_path: Option<crate::wire::ConnectionId>,
    /// Every copy of the outstanding challenge left in a datagram of at
    /// least 1200 bytes (so far).
    pub challenge_expanded: bool,
    /// This validation already counted in `validated` (its address
    /// passed; a second challenge checks the path's MTU).
    pub address_counted: bool,
    /// The peer moved to another address, this many times.
    pub migrations: u64,
    /// Paths validated by an echoed challenge.
    pub validated: u64,
    /// The validated address the peer came from before it moved, to go
    /// back to if the new one is not validated in time.
    pub previous: Option<SocketAddr>,
    /// When the outstanding challenge is given up.
    pub deadline: Option<std::time::Instant>,
    /// When the outstanding challenge, sent and still unanswered, goes out
    /// again. Its packet may arrive and be acknowledged while the peer's
    /// PATH_RESPONSE is lost, and a response is never resent (RFC 9000
    /// §8.2.2): only a new challenge can recover it.
    pub repeat_at: Option<std::time::Instant>,
    /// Challenges given up, and the peer's old address restored.
    pub abandoned: u64,
    /// RFC 9000 §9.3.3: the previously active path's address and the
    /// challenge that goes there once after an apparent migration, and
    /// whether it went. If the migration was a packet an attacker
    /// forwarded, the peer, still there, answers and its next packets
    /// bring the connection back.
    pub old_path: Option<OldPathProbe>,
    /// Echoes of `old_path` challenges.
    pub old_path_answered: u64,
}

impl PathValidation {
    /// Starts validating a new path with `data` (unpredictable bytes),
    /// giving up at `deadline`; `previous` is where the peer was, if that
    /// address was validated.
    pub fn challenge(
        &mut self,
        data: [u8; 8],
        deadline: std::time::Instant,
        previous: Option<SocketAddr>,
    ) {
        self.challenge = Some(data);
        self.challenge_pending = true;
        self.challenge_expanded = true;
        self.address_counted = false;
        self.repeat_at = None;
        self.deadline = Some(deadline);
        self.previous = previous;
    }

    /// After an apparent migration away from `to`, challenge it too with
    /// `data` (RFC 9000 §9.3.3).
    pub fn challenge_old_path(&mut self, to: SocketAddr, data: [u8; 8]) {
        self.old_path = Some(OldPathProbe {
            to,
            data,
            sent: false,
        });
    }

    /// The old path's challenge, if it still has to go.
    pub fn old_path_probe_due(&self) -> Option<(SocketAddr, [u8; 8])> {
        self.old_path
            .filter(|probe| !probe.sent)
            .map(|probe| (probe.to, probe.data))
    }

    /// The old path's challenge went (or cannot go).
    pub fn on_old_path_probe_sent(&mut self) {
        if let Some(probe) = &mut self.old_path {
            probe.sent = true;
        }
    }

    /// The address passed but not the MTU (`ResponseOutcome::AddressOnly`):
    /// challenge again with `data`, by the same deadline, and still go
    /// back to the previous address if this one never carries 1200 bytes.
    pub fn challenge_mtu(&mut self, data: [u8; 8]) {
        self.challenge = Some(data);
        self.challenge_pending = true;
        self.challenge_expanded = true;
        self.repeat_at = None;
    }

    /// The challenge went unanswered until its deadline: stop asking, and
    /// hand back the address to return to, if any.
    pub fn give_up(&mut self) -> Option<SocketAddr> {
        self.challenge = None;
        self.challenge_pending = false;
        self.deadline = None;
        self.repeat_at = None;
        self.abandoned += 1;
        self.previous.take()
    }

    /// The peer echoed `data`: what that validates.
    pub fn on_response(&mut self, data: [u8; 8]) -> ResponseOutcome {
        if self.old_path.is_some_and(|probe| probe.data == data) {
            // The old path still works: nothing to do but note it.
            self.old_path = None;
            self.old_path_answered += 1;
            return ResponseOutcome::NotOurs;
        }
        if self.challenge != Some(data) {
            return ResponseOutcome::NotOurs;
        }
        self.challenge = None;
        self.challenge_pending = false;
        self.repeat_at = None;
        if !self.address_counted {
            self.address_counted = true;
            self.validated += 1;
        }
        if !self.challenge_expanded {
            return ResponseOutcome::AddressOnly;
        }
        self.deadline = None;
        self.previous = None;
        ResponseOutcome::Validated
    }

    /// The peer challenged us from `from`: echo it there.
    pub fn on_challenge(&mut self, data: [u8; 8], from: SocketAddr) {
        if self.responses.len() == MAX_PENDING_RESPONSES {
            self.responses.pop_front();
        }
        self.responses.push_back(PendingResponse { data, from });
    }

    /// The oldest challenge to echo that came from `remote` (the path the
    /// connection sends on).
    pub fn pop_on_path(&mut self, remote: SocketAddr) -> Option<[u8; 8]> {
        let index = self.responses.iter().position(|r| r.from == remote)?;
        self.responses.remove(index).map(|r| r.data)
    }

    /// The address of the oldest challenge to echo that came from another
    /// address than `remote`: its responses leave alone, to that address.
    pub fn off_path_address(&self, remote: SocketAddr) -> Option<SocketAddr> {
        self.responses
            .iter()
            .find(|r| r.from != remote)
            .map(|r| r.from)
    }

    /// The outstanding challenge went out, in a datagram of at least 1200
    /// bytes or not (`expanded`); unanswered, it is repeated at
    /// `repeat_at` (RFC 9000 §8.2.1: no more often than an Initial would
    /// be, once a PTO).
    pub fn on_challenge_sent(&mut self, repeat_at: std::time::Instant, expanded: bool) {
        self.repeat_at = Some(repeat_at);
        self.challenge_expanded &= expanded;
    }

    /// The repeat time passed with no answer: send the challenge again.
    pub fn on_repeat_due(&mut self) {
        self.repeat_at = None;
        if self.challenge.is_some() {
            self.challenge_pending = true;
        }
    }

    /// A packet carrying our challenge `data` was lost: send it again if
    /// it is still the one outstanding.
    pub fn on_challenge_lost(&mut self, data: [u8; 8]) {
        if self.challenge == Some(data) {
            self.challenge_pending = true;
        }
    }
}

/// Whether moving from `old` to `new` looks like a NAT rebinding (the same
/// host, another port) rather than a new network path.
pub fn only_port_changed(old: SocketAddr, new: SocketAddr) -> bool {
    old.ip() == new.ip()
}

/// The one spelling of a peer address: an IPv4-mapped IPv6 address
/// becomes the plain IPv4 address with the same port; every other address
/// is kept exactly (an IPv6 scope id included).
pub fn canonical_peer(address: SocketAddr) -> SocketAddr {
    match address {
        SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(v4.into(), v6.port()),
            None => address,
        },
        SocketAddr::V4(_) => address,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv6Addr, SocketAddrV6};

    fn address(port: u16) -> SocketAddr {
        SocketAddr::from(([192, 0, 2, 7], port))
    }

    #[test]
    fn a_response_to_a_challenge_sent_small_validates_the_address_only() {
        let now = std::time::Instant::now();
        let mut path = PathValidation::default();
        path.challenge([1; 8], now, Some(address(1)));
        // Held to three times what arrived: under 1200 bytes.
        path.on_challenge_sent(now, false);
        assert_eq!(path.on_response([1; 8]), ResponseOutcome::AddressOnly);
        assert_eq!(path.validated, 1);
        assert!(
            path.deadline.is_some(),
            "the MTU check has the same deadline"
        );
        path.challenge_mtu([2; 8]);
        path.on_challenge_sent(now, true);
        assert_eq!(path.on_response([1; 8]), ResponseOutcome::NotOurs);
        assert_eq!(path.on_response([2; 8]), ResponseOutcome::Validated);
        assert_eq!(path.validated, 1, "one path, counted once");
        assert_eq!((path.deadline, path.previous), (None, None));
    }

    #[test]
    fn a_response_to_a_challenge_sent_full_size_validates_the_path() {
        let now = std::time::Instant::now();
        let mut path = PathValidation::default();
        path.challenge([1; 8], now, None);
        path.on_challenge_sent(now, true);
        path.on_challenge_sent(now, true);
        assert_eq!(path.on_response([1; 8]), ResponseOutcome::Validated);
    }

    #[test]
    fn responses_are_sorted_by_the_path_their_challenge_came_on() {
        let mut path = PathValidation::default();
        path.on_challenge([1; 8], address(1));
        path.on_challenge([2; 8], address(2));
        path.on_challenge([3; 8], address(1));
        assert_eq!(path.pop_on_path(address(1)), Some([1; 8]));
        assert_eq!(path.off_path_address(address(1)), Some(address(2)));
        assert_eq!(path.pop_on_path(address(2)), Some([2; 8]));
        assert_eq!(path.off_path_address(address(1)), None);
        assert_eq!(path.pop_on_path(address(1)), Some([3; 8]));
    }

    #[test]
    fn an_unproven_address_is_sent_three_times_what_came_from_it_in_all() {
        let mut unproven = UnprovenAddresses::default();
        let keep = address(9);
        assert_eq!(unproven.allowance(address(1)), 0, "never heard from");
        unproven.on_received(address(1), 60, keep);
        unproven.on_sent(address(1), 100);
        unproven.on_received(address(1), 40, keep);
        assert_eq!(unproven.allowance(address(1)), 3 * 100 - 100);
        unproven.on_validated(address(1));
        assert_eq!(unproven.allowance(address(1)), 0);
    }

    #[test]
    fn many_spoofed_addresses_push_out_the_oldest_but_never_the_peers() {
        let mut unproven = UnprovenAddresses::default();
        let keep = address(100);
        unproven.on_received(keep, 1200, keep);
        for port in 1..=20 {
            unproven.on_received(address(port), 50, keep);
        }
        assert_eq!(unproven.budgets.len(), MAX_UNPROVEN_ADDRESSES + 1);
        assert_eq!(unproven.allowance(keep), 3600);
        assert_eq!(unproven.allowance(address(1)), 0, "pushed out");
        assert_eq!(unproven.allowance(address(20)), 150);
    }

    #[test]
    fn a_mapped_ipv4_address_becomes_plain_ipv4_with_its_port() {
        let mapped: SocketAddr = "[::ffff:192.0.2.7]:4433".parse().unwrap();
        assert_eq!(canonical_peer(mapped), "192.0.2.7:4433".parse().unwrap());
    }

    #[test]
    fn ipv4_and_native_ipv6_addresses_are_kept_as_they_are() {
        for text in ["192.0.2.7:4433", "[::1]:4433", "[2001:db8::1]:1"] {
            let address: SocketAddr = text.parse().unwrap();
            assert_eq!(canonical_peer(address), address);
        }
        // IPv4-compatible (`::a.b.c.d`, deprecated) is not mapped: kept.
        let compatible: SocketAddr = "[::192.0.2.7]:1".parse().unwrap();
        assert_eq!(canonical_peer(compatible), compatible);
    }

    #[test]
    fn a_link_local_peer_keeps_its_scope_id() {
        let scoped = SocketAddr::V6(SocketAddrV6::new(
            "fe80::1".parse::<Ipv6Addr>().unwrap(),
            4433,
            0,
            3,
        ));
        assert_eq!(canonical_peer(scoped), scoped);
    }
}
