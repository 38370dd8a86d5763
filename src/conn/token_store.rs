//! A client's address-validation tokens (NEW_TOKEN, RFC 9000 §8.1.3): the
//! latest token each server gave, used once by the next connection to it so
//! that a server asking for Retry lets the client in a round trip sooner.
//!
//! Every client endpoint keeps its own store. A store set in the client
//! [`Config`](crate::Config) is shared instead, by every endpoint that
//! connects with that config: the blocking API makes an endpoint per
//! connection, and an application that runs once per transfer (like
//! `sift-client`) saves [`TokenStore::entries`] and loads them back with
//! [`TokenStore::insert`] on its next run.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

/// Servers whose token one store keeps; past that it starts over (tokens
/// only save a round trip).
pub const MAX_REMEMBERED_TOKENS: usize = 256;

/// Tokens by server address. Clones share one store.
#[derive(Clone, Debug, Default)]
pub struct TokenStore {
    tokens: Arc<Mutex<HashMap<SocketAddr, Vec<u8>>>>,
}

impl TokenStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<SocketAddr, Vec<u8>>> {
        self.tokens.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps `token` for the next connection to `server`, replacing any
    /// older one.
    pub fn insert(&self, server: SocketAddr, token: Vec<u8>) {
        let server = crate::conn::canonical_peer(server);
        let mut tokens = self.lock();
        if tokens.len() >= MAX_REMEMBERED_TOKENS && !tokens.contains_key(&server) {
            tokens.clear();
        }
        tokens.insert(server, token);
    }

    /// Takes the token for `server`: each token is used once, since two
    /// connections carrying one token would be linkable by it.
    pub fn take(&self, server: SocketAddr) -> Option<Vec<u8>> {
        self.lock().remove(&crate::conn::canonical_peer(server))
    }

    /// Every token held, in no particular order.
    pub fn entries(&self) -> Vec<(SocketAddr, Vec<u8>)> {
        self.lock()
            .iter()
            .map(|(server, token)| (*server, token.clone()))
            .collect()
    }

    /// Number of servers with a token.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// True if no token is held.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_taken_once_and_clones_share_the_store() {
        let store = TokenStore::new();
        let server: SocketAddr = "192.0.2.1:4433".parse().unwrap();
        store.clone().insert(server, vec![1, 2, 3]);
        // A dual-stack socket's spelling of the same server finds it.
        let mapped: SocketAddr = "[::ffff:192.0.2.1]:4433".parse().unwrap();
        assert_eq!(store.take(mapped), Some(vec![1, 2, 3]));
        assert_eq!(store.take(server), None);
    }

    #[test]
    fn a_full_store_starts_over_rather_than_grow() {
        let store = TokenStore::new();
        for port in 0..MAX_REMEMBERED_TOKENS as u16 + 1 {
            store.insert(SocketAddr::from(([192, 0, 2, 1], port)), vec![0]);
        }
        assert_eq!(store.len(), 1);
    }
}
