//! Retry on the endpoint (RFC 9000 §8.1.2): when a server asks new clients
//! to prove their address, sending the Retry, checking the token that comes
//! back, and a client taking its server's Retry. What a token holds and how
//! it is sealed is `token`.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rand::RngCore;

use super::ledger::{Spend, TokenClock, TokenLedger};
use super::token::TOKEN_NAME_LEN;
use super::token::{
    open_token, seal_address_token, seal_retry_token, RetryTokenContents, TokenError, ValidToken,
};
use super::{Endpoint, RetryPolicy, MAX_QUEUED_STATELESS};
use crate::crypto::TOKEN_NONCE_LEN;
use crate::wire::{encode_retry_unsigned, parse_retry, ConnectionId, SHORT_HEADER_DCID_LEN};

impl Endpoint {
    /// Whether a new client must first prove its address (the policy, and
    /// a secret to seal tokens with).
    pub(super) fn retry_wanted(&self) -> bool {
        let Some(config) = self.server.as_ref() else {
            return false;
        };
        config.server_secret.is_some()
            && match config.retry {
                RetryPolicy::Never => false,
                RetryPolicy::Always => true,
                RetryPolicy::WhenBusy { half_open } => self.half_open() >= half_open,
            }
    }

    /// Server connections still in their handshake (busy refusals aside).
    pub(super) fn half_open(&self) -> usize {
        self.connections
            .values()
            .filter(|entry| !entry.refusing && entry.pending_handshake_deadline().is_some())
            .count()
    }

    /// Answers a client Initial with a Retry: a new connection ID for the
    /// client to use, and a token sealed for its address. The ID routes to
    /// this endpoint's worker, or to `to_worker` (a multi-worker server
    /// sending the client to a less busy worker).
    pub(super) fn send_retry(
        &mut self,
        client_dcid: ConnectionId,
        client_scid: ConnectionId,
        version: u32,
        to: SocketAddr,
        now: Instant,
        to_worker: Option<usize>,
    ) {
        if self.stateless.len() >= MAX_QUEUED_STATELESS {
            return;
        }
        let Some(config) = self.server.as_ref() else {
            return;
        };
        let Some(secret) = config.server_secret.clone() else {
            return;
        };
        let protection = config.protection;
        let steering = config.cid_steering.and_then(|own| match to_worker {
            Some(worker) => own.for_worker(worker),
            None => Some(own),
        });
        let retry_scid = match steering {
            Some(steering) => steering.draw(&mut self.rng),
            None => {
                let mut scid = [0u8; SHORT_HEADER_DCID_LEN];
                self.rng.fill_bytes(&mut scid);
                ConnectionId::new(&scid).expect("8 bytes")
            }
        };
        let mut nonce = [0u8; TOKEN_NONCE_LEN];
        self.rng.fill_bytes(&mut nonce);
        let issued = self.token_ledger(now).clock().unix_time(now);
        let contents = RetryTokenContents {
            original_dcid: client_dcid,
            retry_scid,
        };
        let token = seal_retry_token(&secret, nonce, to, issued, &contents);
        let mut retry = Vec::with_capacity(64 + token.len());
        // In the version of the Initial it answers (RFC 9368 §2.3).
        if encode_retry_unsigned(&mut retry, version, &client_scid, &retry_scid, &token).is_err() {
            return;
        }
        let tag = crate::crypto::retry::integrity_tag(
            version,
            protection == crate::conn::Protection::Null,
            client_dcid.as_slice(),
            &retry,
        );
        retry.extend_from_slice(&tag);
        tracing::debug!(%to, "asking a new client to prove its address (Retry)");
        self.stats.retries_sent += 1;
        self.stateless.push_back((retry, to));
    }

    /// What the token of a client Initial vouches for, if it is good. An
    /// address token is looked up in the ledger, not spent: the
    /// connection made with it spends it ([`Endpoint::spend_address_token`]),
    /// so a client that is refused or sent elsewhere keeps it.
    pub(super) fn check_token(
        &mut self,
        token: &[u8],
        dcid: &ConnectionId,
        from: SocketAddr,
        now: Instant,
    ) -> Result<ValidToken, TokenError> {
        let ledger = self.token_ledger(now).clone();
        let secret = self
            .server
            .as_ref()
            .and_then(|config| config.server_secret.as_ref())
            .ok_or(TokenError::NotOurs)?;
        let valid = open_token(secret, token, from, dcid, ledger.clock().unix_time(now))?;
        if let ValidToken::Address { issued, name, .. } = valid {
            let spend = ledger.peek(name, issued, now);
            if spend != Spend::Accepted {
                tracing::debug!(%from, ?spend, "refusing an address token that was spent");
                self.stats.spent_address_tokens += 1;
                return Err(TokenError::Spent);
            }
        }
        Ok(valid)
    }

    /// Spends the address token named `name` (issued at `issued`) for the
    /// connection made with it: false if it was spent since
    /// [`Endpoint::check_token`] looked (by another worker, for a replay
    /// sent to two at once).
    pub(super) fn spend_address_token(
        &mut self,
        name: [u8; TOKEN_NAME_LEN],
        issued: Duration,
        from: SocketAddr,
        now: Instant,
    ) -> bool {
        let spend = self.token_ledger(now).spend(name, issued, now);
        if spend != Spend::Accepted {
            tracing::debug!(%from, ?spend, "refusing an address token spent meanwhile");
            self.stats.spent_address_tokens += 1;
        }
        spend == Spend::Accepted
    }

    /// The ledger tokens are dated and spent in: the one the server gave,
    /// or this endpoint's own, its clock starting at the first `now`.
    pub(super) fn token_ledger(&mut self, now: Instant) -> &TokenLedger {
        self.ledger
            .get_or_insert_with(|| TokenLedger::new(TokenClock::new(now, Duration::ZERO)))
    }

    /// A NEW_TOKEN token for a client at `client`, carrying the path
    /// state `saved` for its next connection (RFC 9959), if we have a
    /// secret.
    pub(super) fn address_token(
        &mut self,
        client: SocketAddr,
        now: Instant,
        saved: Option<sift_cc::SavedPath>,
    ) -> Option<Vec<u8>> {
        let secret = self.server.as_ref()?.server_secret.clone()?;
        let mut nonce = [0u8; TOKEN_NONCE_LEN];
        self.rng.fill_bytes(&mut nonce);
        let issued = self.token_ledger(now).clock().unix_time(now);
        Some(seal_address_token(&secret, nonce, client, issued, saved))
    }

    /// A Retry for one of our client connections still waiting for the
    /// server's first packet.
    pub(super) fn on_retry(&mut self, datagram: &[u8], from: SocketAddr, now: Instant) {
        let taken = parse_retry(datagram).ok().is_some_and(|retry| {
            let Some(&handle) = self.routes.get(&retry.dcid) else {
                return false;
            };
            self.connections.get_mut(&handle).is_some_and(|entry| {
                entry.connection.remote() == from && entry.connection.on_retry(&retry, now)
            })
        });
        if taken {
            self.stats.retries_received += 1;
        } else {
            tracing::trace!(%from, "dropping a Retry that is not for a connection of ours");
            self.stats.dropped_unknown_connection += 1;
        }
    }
}
