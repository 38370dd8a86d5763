//! Stateless reset on the endpoint (RFC 9000 §10.3): a server with a secret
//! answers a short-header packet for a connection ID it does not know with
//! a reset carrying that ID's token; a client recognises one by the token
//! its server gave, for datagrams that match no connection. Both kinds of
//! stateless answer (resets and version negotiation) share one rate limit.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rand::{Rng, RngCore};

use super::{
    Endpoint, MAX_QUEUED_STATELESS, MAX_RESET_LEN, MAX_STATELESS_PER_SECOND, MIN_RESET_LEN,
    RESET_FIRST_BYTE_BITS,
};
use crate::wire::{CidSteering, ConnectionId, RESET_TOKEN_LEN};

impl Endpoint {
    /// Whether `datagram`, which matches no connection, is a stateless reset
    /// from the peer of one of ours (RFC 9000 §10.3.1); if so that
    /// connection drains.
    pub(super) fn recognise_reset(
        &mut self,
        datagram: &[u8],
        from: SocketAddr,
        now: Instant,
    ) -> bool {
        if self.reset_tokens.is_empty() || datagram.len() < MIN_RESET_LEN {
            return false;
        }
        let mut tail = [0u8; RESET_TOKEN_LEN];
        tail.copy_from_slice(&datagram[datagram.len() - RESET_TOKEN_LEN..]);
        let Some(&handle) = self.reset_tokens.get(&(from, tail)) else {
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
    /// server answers only for IDs that name it: one naming another worker
    /// reached this one in a batch the kernel steered by another
    /// connection's ID (GRO), and its connection may well be alive there.
    pub(super) fn send_stateless_reset(
        &mut self,
        dcid: &ConnectionId,
        trigger_len: usize,
        to: SocketAddr,
        now: Instant,
    ) {
        if let Some(steering) = self.cid_steering() {
            if CidSteering::worker_of(dcid.as_slice(), steering.workers()) != Some(steering.index())
            {
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
