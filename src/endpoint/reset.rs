//! Stateless reset on the endpoint (RFC 9000 §10.3): a server with a secret
//! answers a short-header packet for a connection ID it does not know with
//! a reset carrying that ID's token; either side recognises one, for
//! datagrams that match no connection or whose first packet does not open,
//! by the token of a peer connection ID one of its connections uses. Both
//! kinds of stateless answer (resets and version negotiation) share one
//! rate limit.
//!
//! Recognising a reset (RFC 9000 §10.3.1) must not tell an attacker which
//! tokens it came close to: the watched tokens are kept per peer address,
//! and a datagram's last 16 bytes are compared with every token of its
//! source address, each in constant time and without stopping at a match
//! ([`ResetWatch::find`]). The address is public; the tokens are not. Which
//! tokens are watched is the connection's choice (`conn::cid`): only those
//! of the peer IDs it sends to, never of spares it has not used or of IDs
//! it retired.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rand::{Rng, RngCore};

use super::{
    ConnectionHandle, Endpoint, MAX_QUEUED_STATELESS, MAX_RESET_LEN, MAX_STATELESS_PER_SECOND,
    MIN_RESET_LEN, RESET_FIRST_BYTE_BITS,
};
use crate::crypto::ResetToken;
use crate::wire::{ConnectionId, RESET_TOKEN_LEN};

/// The peers' reset tokens our connections watch, by the peer's address (a
/// reset must come from the address the connection sends to).
#[derive(Debug, Default)]
pub(super) struct ResetWatch {
    by_peer: HashMap<SocketAddr, Vec<(ResetToken, ConnectionHandle)>>,
}

impl ResetWatch {
    /// Watches `token` from `peer` for `handle`.
    pub fn insert(&mut self, peer: SocketAddr, token: ResetToken, handle: ConnectionHandle) {
        self.by_peer.entry(peer).or_default().push((token, handle));
    }

    /// Stops watching `token` from `peer` for `handle`.
    pub fn remove(&mut self, peer: SocketAddr, token: &ResetToken, handle: ConnectionHandle) {
        if let Some(watched) = self.by_peer.get_mut(&peer) {
            watched.retain(|(t, h)| !(*h == handle && t == token));
            if watched.is_empty() {
                self.by_peer.remove(&peer);
            }
        }
    }

    /// Nothing is watched.
    pub fn is_empty(&self) -> bool {
        self.by_peer.is_empty()
    }

    /// Tokens watched, all peers together.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.by_peer.values().map(Vec::len).sum()
    }

    /// Every watched token with its peer, for tests that forge a reset.
    #[cfg(test)]
    pub fn tokens(&self) -> Vec<(SocketAddr, ResetToken)> {
        self.by_peer
            .iter()
            .flat_map(|(peer, watched)| watched.iter().map(|(token, _)| (*peer, *token)))
            .collect()
    }

    /// The connection whose watched token `datagram` from `from` ends with.
    /// Every token of `from` is compared, in constant time, whether or not
    /// an earlier one matched: the time taken depends on how many tokens
    /// the address has, never on their bytes (RFC 9000 §10.3.1).
    pub fn find(&self, datagram: &[u8], from: SocketAddr) -> Option<ConnectionHandle> {
        let watched = self.by_peer.get(&from)?;
        let mut found = None;
        for (token, handle) in watched {
            // `ends` compares in constant time; no early return on a match.
            let matches = token.ends(datagram);
            found = if matches { Some(*handle) } else { found };
        }
        found
    }
}

impl Endpoint {
    /// Whether `datagram`, which matches no connection (or whose first
    /// packet its connection did not open), is a stateless reset
    /// from the peer of one of ours (RFC 9000 §10.3.1); if so that
    /// connection drains.
    pub(super) fn recognise_reset(
        &mut self,
        datagram: &[u8],
        from: SocketAddr,
        now: Instant,
    ) -> bool {
        if datagram.len() < MIN_RESET_LEN {
            return false;
        }
        let tail = &datagram[datagram.len() - RESET_TOKEN_LEN..];
        self.recognise_reset_tail(tail, from, now)
    }

    /// [`Self::recognise_reset`] given the last 16 bytes of a datagram
    /// long enough to be a reset.
    pub(super) fn recognise_reset_tail(
        &mut self,
        tail: &[u8],
        from: SocketAddr,
        now: Instant,
    ) -> bool {
        if self.reset_tokens.is_empty() {
            return false;
        }
        let Some(handle) = self.reset_tokens.find(tail, from) else {
            return false;
        };
        let Some(entry) = self.connections.get_mut(&handle) else {
            return false;
        };
        tracing::debug!(%from, handle = handle.0, "stateless reset: the peer no longer knows this connection");
        entry.connection.on_stateless_reset(now);
        self.stats.stateless_resets_received += 1;
        true
    }

    /// Queues a stateless reset for a short-header packet of `trigger_len`
    /// bytes naming `dcid`, which we do not know, if this endpoint has a
    /// server secret and the rate limit allows. A worker of a multi-worker
    /// server answers only for IDs that route to it: one routing to another
    /// worker reached this one in a batch the kernel steered by another
    /// connection's ID (GRO), and its connection may well be alive there.
    pub(super) fn send_stateless_reset(
        &mut self,
        dcid: &ConnectionId,
        trigger_len: usize,
        to: SocketAddr,
        now: Instant,
    ) {
        if let Some(steering) = self.cid_steering() {
            if steering.worker_of(dcid.as_slice()) != Some(steering.index()) {
                tracing::debug!(%to, %dcid, "not resetting another worker's connection ID");
                return;
            }
        }
        let Some(token) = self
            .server
            .as_ref()
            .and_then(|c| c.server_secret.as_ref())
            .map(|secret| secret.reset_token(dcid))
        else {
            return;
        };
        // Shorter than what caused it, so resets cannot loop between two
        // endpoints; too short to look like a packet: stay silent.
        let len = MAX_RESET_LEN.min(trigger_len.saturating_sub(1));
        if len < MIN_RESET_LEN || !self.take_stateless_credit(now) {
            return;
        }
        let mut datagram = vec![0u8; len];
        self.rng.fill_bytes(&mut datagram[..len - RESET_TOKEN_LEN]);
        datagram[0] = RESET_FIRST_BYTE_BITS | self.rng.random_range(0..=1u8);
        datagram[len - RESET_TOKEN_LEN..].copy_from_slice(token.as_bytes());
        tracing::debug!(%to, %dcid, "unknown connection: sending a stateless reset");
        self.stats.stateless_resets_sent += 1;
        self.stateless.push_back((datagram, to));
    }

    /// Whether the rate limit on stateless answers (resets and version
    /// negotiation, [`MAX_STATELESS_PER_SECOND`]) lets one more go now.
    pub(super) fn take_stateless_credit(&mut self, now: Instant) -> bool {
        let since = *self.stateless_credit_since.get_or_insert(now);
        if now.saturating_duration_since(since) >= Duration::from_secs(1) {
            self.stateless_credit = MAX_STATELESS_PER_SECOND;
            self.stateless_credit_since = Some(now);
        }
        if self.stateless_credit == 0 || self.stateless.len() >= MAX_QUEUED_STATELESS {
            return false;
        }
        self.stateless_credit -= 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    /// A datagram as a reset: junk, then `tail`.
    fn ending_in(tail: [u8; RESET_TOKEN_LEN]) -> Vec<u8> {
        let mut datagram = vec![0x41; 25];
        datagram.extend_from_slice(&tail);
        datagram
    }

    #[test]
    fn a_reset_is_found_among_every_token_of_its_address_and_only_there() {
        let mut watch = ResetWatch::default();
        for (port, handle) in [(1, 10), (1, 11), (1, 12), (2, 20)] {
            let token = ResetToken::new([handle as u8; RESET_TOKEN_LEN]);
            watch.insert(addr(port), token, ConnectionHandle(handle));
        }
        // Whichever position it holds, the match is found (the scan does
        // not depend on stopping at it).
        for handle in [10u64, 11, 12] {
            let datagram = ending_in([handle as u8; RESET_TOKEN_LEN]);
            assert_eq!(
                watch.find(&datagram, addr(1)),
                Some(ConnectionHandle(handle))
            );
        }
        // Another address's token, or one a byte off, finds nothing.
        assert_eq!(watch.find(&ending_in([20; RESET_TOKEN_LEN]), addr(1)), None);
        let mut near = [11; RESET_TOKEN_LEN];
        near[RESET_TOKEN_LEN - 1] ^= 1;
        assert_eq!(watch.find(&ending_in(near), addr(1)), None);
        assert_eq!(watch.find(&ending_in([20; RESET_TOKEN_LEN]), addr(3)), None);
        // Forgetting is per connection and token.
        watch.remove(
            addr(1),
            &ResetToken::new([11; RESET_TOKEN_LEN]),
            ConnectionHandle(11),
        );
        assert_eq!(watch.find(&ending_in([11; RESET_TOKEN_LEN]), addr(1)), None);
        assert_eq!(watch.len(), 3);
    }
}
