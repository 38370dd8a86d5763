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
//! RTTs, RFC 9000 §8.2.4), the connection goes back to the previous
//! address if it had been validated (RFC 9000 §9.3.2: a spoofed or
//! short-lived address does not keep the connection).
//! Clients never follow a server to another address. A server that follows
//! a client, and a client that rebinds its own socket, move to an unused
//! connection ID of the peer's where one is left (see `cid`).
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

/// Path validation state: the challenge we sent on the current path, and
/// the peer's challenges we still have to echo.
#[derive(Debug, Default)]
pub(super) struct PathValidation {
    /// The data of our outstanding PATH_CHALLENGE.
    pub challenge: Option<[u8; 8]>,
    /// The challenge still has to be sent (first time, or after a loss).
    pub challenge_pending: bool,
    /// The peer's challenges to echo, oldest first.
    pub responses: VecDeque<[u8; 8]>,
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
        self.deadline = Some(deadline);
        self.previous = previous;
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

    /// The peer echoed `data`: whether it answers our challenge.
    pub fn on_response(&mut self, data: [u8; 8]) -> bool {
        if self.challenge != Some(data) {
            return false;
        }
        self.challenge = None;
        self.challenge_pending = false;
        self.deadline = None;
        self.repeat_at = None;
        self.previous = None;
        self.validated += 1;
        true
    }

    /// The peer challenged us: echo it.
    pub fn on_challenge(&mut self, data: [u8; 8]) {
        if self.responses.len() == MAX_PENDING_RESPONSES {
            self.responses.pop_front();
        }
        self.responses.push_back(data);
    }

    /// The outstanding challenge went out; unanswered, it is repeated at
    /// `repeat_at` (RFC 9000 §8.2.1: no more often than an Initial would be,
    /// once a PTO).
    pub fn on_challenge_sent(&mut self, repeat_at: std::time::Instant) {
        self.repeat_at = Some(repeat_at);
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
