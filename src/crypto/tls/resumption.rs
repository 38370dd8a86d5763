//! TLS 1.3 session resumption and 0-RTT (RFC 8446 §2.2–2.3, RFC 9001 §4.5–4.6):
//! the client's [`TicketStore`] and the server's [`SessionCache`].
//!
//! Decisions:
//! - **Stateful tickets on the server.** rustls accepts early data only
//!   with stateful resumption (its `decide_if_early_data_allowed` refuses
//!   0-RTT when a stateless ticketer is enabled), and a stateful cache
//!   *takes* a ticket when a client presents it: each ticket resumes at
//!   most once, so a captured ClientHello with 0-RTT replayed to the same
//!   server run finds its ticket gone and gets a full handshake without
//!   early data (RFC 8446 §8.1, single-use tickets). The cache lives in
//!   the server's memory: a restart forgets every ticket, and no ticket
//!   key exists to rotate or leak (SECURITY.md).
//! - **Tickets scoped to server, port and QUIC version.** rustls keys its
//!   store by server name only; sift keys it by name, port and the version
//!   the ticket was issued under, so a ticket from a sift/1 connection is
//!   never used to start a QUIC v1 one, nor the reverse: 0-RTT goes out in
//!   the version the client starts in (RFC 9368's compatible negotiation
//!   changes the version only from the server's first packet on), so a
//!   client holding a sift/1 ticket starts in sift/1.
//! - **One use per ticket** on the client too (RFC 8446 Appendix C.4):
//!   taking a ticket removes it.
//! - **The pin survives resumption.** A resumed handshake carries no
//!   Certificate message: rustls restores the server's certificate chain
//!   from the ticket and does not call the verifier again. rustls binds a
//!   ticket to the verifier object that checked the chain (it refuses to
//!   resume under another verifier), so the store hands out one verifier
//!   per trust setting ([`TicketStore::verifier`]): a ticket got under one
//!   set of pins is never used under another. sift also re-checks the
//!   restored certificate against the pins when a resumed handshake
//!   completes (`TlsSession`).
//! - **Tickets bound to the limits they were issued under.** A client's
//!   0-RTT data keeps to the limits the server announced with the ticket
//!   (RFC 9000 §7.4.1), which the server must not have lowered. Each
//!   connection's view of the shared cache ([`SessionCache::bound_to`])
//!   stores its limits beside every session it issues and finds only
//!   sessions issued under the same limits: a server whose limits changed
//!   while its cache lived gives an old ticket a full handshake, without
//!   early data, rather than accept 0-RTT it may not honour.
//! - **Memory only.** rustls 0.23 offers no way to serialise a client
//!   session (`Tls13ClientSessionValue` has private fields and no codec:
//!   rustls issue #2287), so tickets last as long as the process.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use rustls::client::danger::ServerCertVerifier;
use rustls::client::{
    ClientSessionStore, ResolvesClientCert, Tls12ClientSessionValue, Tls13ClientSessionValue,
};
use rustls::pki_types::ServerName;
use rustls::NamedGroup;

use super::identity::Fingerprint;
use crate::wire::TransportParams;

/// Tickets kept per server, port and version: a server sends two per
/// connection (rustls's default), and each is used once.
const TICKETS_PER_SERVER: usize = 4;
/// Sessions a [`SessionCache`] holds by default.
pub const DEFAULT_SESSION_CACHE: usize = 4096;

/// Where a ticket may be used: the server name (SNI, or its address),
/// port, and the QUIC version its connection ran.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TicketScope {
    /// The server's name as the client named it (or its IP address).
    pub server: String,
    /// The server's UDP port.
    pub port: u16,
    /// The QUIC version the ticket was issued under.
    pub version: u32,
}

/// What a trust setting is, for handing out one verifier per setting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum TrustKey {
    Pinned(Vec<Fingerprint>),
    Roots(Vec<Vec<u8>>),
    /// A custom verifier, by its address.
    Custom(usize),
}

#[derive(Default)]
struct StoreState {
    tickets: HashMap<TicketScope, VecDeque<Tls13ClientSessionValue>>,
    kx_hints: HashMap<String, NamedGroup>,
    verifiers: Vec<(TrustKey, Arc<dyn ServerCertVerifier>)>,
    client_certs: Vec<(Option<Fingerprint>, Arc<dyn ResolvesClientCert>)>,
}

/// A client's session tickets, shared by its connections (clone it into
/// each `Config`). Empty at first; each TLS handshake with a server that
/// issues tickets adds some, and each resumption uses one up.
#[derive(Clone, Default)]
pub struct TicketStore {
    state: Arc<Mutex<StoreState>>,
}

impl fmt::Debug for TicketStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TicketStore")
            .field("tickets", &self.len())
            .finish()
    }
}

impl TicketStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, StoreState> {
        // A panic elsewhere while holding the lock leaves a usable map.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Tickets held, over all servers.
    pub fn len(&self) -> usize {
        self.lock().tickets.values().map(VecDeque::len).sum()
    }

    /// No ticket is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Tickets held for exactly `scope`.
    pub fn count(&self, scope: &TicketScope) -> usize {
        self.lock().tickets.get(scope).map_or(0, VecDeque::len)
    }

    /// The versions, among `versions` and in their order, under which a
    /// ticket for `server`:`port` is held: a client resumes by starting in
    /// the first (0-RTT goes out in the version the client starts in).
    pub fn version_for(&self, server: &str, port: u16, versions: &[u32]) -> Option<u32> {
        let state = self.lock();
        versions.iter().copied().find(|&version| {
            let scope = TicketScope {
                server: server.to_string(),
                port,
                version,
            };
            state.tickets.get(&scope).is_some_and(|t| !t.is_empty())
        })
    }

    /// Forgets every ticket.
    pub fn clear(&self) {
        self.lock().tickets.clear();
    }

    fn insert(&self, scope: TicketScope, value: Tls13ClientSessionValue) {
        let mut state = self.lock();
        let tickets = state.tickets.entry(scope).or_default();
        if tickets.len() == TICKETS_PER_SERVER {
            tickets.pop_front();
        }
        tickets.push_back(value);
    }

    fn take(&self, scope: &TicketScope) -> Option<Tls13ClientSessionValue> {
        let mut state = self.lock();
        let tickets = state.tickets.get_mut(scope)?;
        // The newest first: it is the least likely to have expired.
        let value = tickets.pop_back();
        if tickets.is_empty() {
            state.tickets.remove(scope);
        }
        value
    }

    /// The verifier for `key`, made by `make` the first time: the same
    /// object every time, because rustls resumes a session only under the
    /// verifier that checked its certificate.
    pub(super) fn verifier(
        &self,
        key: TrustKey,
        make: impl FnOnce() -> Result<Arc<dyn ServerCertVerifier>, super::TlsSetupError>,
    ) -> Result<Arc<dyn ServerCertVerifier>, super::TlsSetupError> {
        let mut state = self.lock();
        if let Some((_, verifier)) = state.verifiers.iter().find(|(k, _)| *k == key) {
            return Ok(verifier.clone());
        }
        let verifier = make()?;
        state.verifiers.push((key, verifier.clone()));
        Ok(verifier)
    }

    /// The client-certificate resolver for `identity` (by fingerprint),
    /// one object per identity for the same reason as [`Self::verifier`].
    pub(super) fn client_cert(
        &self,
        identity: Option<Fingerprint>,
        make: impl FnOnce() -> Arc<dyn ResolvesClientCert>,
    ) -> Arc<dyn ResolvesClientCert> {
        let mut state = self.lock();
        if let Some((_, resolver)) = state.client_certs.iter().find(|(k, _)| *k == identity) {
            return resolver.clone();
        }
        let resolver = make();
        state.client_certs.push((identity, resolver.clone()));
        resolver
    }

    /// The rustls store of one connection: takes tickets of `scope`, and
    /// files new ones under the version the connection settled on
    /// ([`ConnectionTickets::set_version`]).
    pub(super) fn for_connection(&self, scope: TicketScope) -> ConnectionTickets {
        ConnectionTickets {
            store: self.clone(),
            version: Arc::new(AtomicU32::new(scope.version)),
            scope,
        }
    }
}

/// One connection's view of a [`TicketStore`], given to rustls.
#[derive(Debug, Clone)]
pub(super) struct ConnectionTickets {
    store: TicketStore,
    /// The scope tickets are taken from (the version the client starts in).
    scope: TicketScope,
    /// The version new tickets are filed under: the one the connection
    /// runs, once settled.
    version: Arc<AtomicU32>,
}

impl ConnectionTickets {
    /// The handle through which the connection says which version it
    /// settled on.
    pub(super) fn version_handle(&self) -> Arc<AtomicU32> {
        self.version.clone()
    }
}

impl ClientSessionStore for ConnectionTickets {
    fn set_kx_hint(&self, _server_name: ServerName<'static>, group: NamedGroup) {
        let key = self.scope.server.clone();
        self.store.lock().kx_hints.insert(key, group);
    }

    fn kx_hint(&self, _server_name: &ServerName<'_>) -> Option<NamedGroup> {
        self.store.lock().kx_hints.get(&self.scope.server).copied()
    }

    fn set_tls12_session(
        &self,
        _server_name: ServerName<'static>,
        _value: Tls12ClientSessionValue,
    ) {
        // TLS 1.3 only (RFC 9001 §4.2).
    }

    fn tls12_session(&self, _server_name: &ServerName<'_>) -> Option<Tls12ClientSessionValue> {
        None
    }

    fn remove_tls12_session(&self, _server_name: &ServerName<'static>) {}

    fn insert_tls13_ticket(
        &self,
        _server_name: ServerName<'static>,
        value: Tls13ClientSessionValue,
    ) {
        let scope = TicketScope {
            version: self.version.load(Ordering::Relaxed),
            ..self.scope.clone()
        };
        self.store.insert(scope, value);
    }

    fn take_tls13_ticket(
        &self,
        _server_name: &ServerName<'static>,
    ) -> Option<Tls13ClientSessionValue> {
        self.store.take(&self.scope)
    }
}

/// A server's resumption state: the sessions behind the tickets it
/// issued, in memory, each taken when a client resumes with it. Clone it
/// into every `Config` of one server (clones share the cache); a new
/// cache (a restarted server) accepts no old ticket.
#[derive(Clone)]
pub struct SessionCache {
    storage: Arc<dyn rustls::server::StoresServerSessions>,
    /// Accept 0-RTT from resuming clients (RFC 9001 §4.6.1).
    pub early_data: bool,
}

impl fmt::Debug for SessionCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionCache")
            .field("early_data", &self.early_data)
            .finish_non_exhaustive()
    }
}

impl SessionCache {
    /// A cache of at most `capacity` sessions, accepting 0-RTT if
    /// `early_data`.
    pub fn new(capacity: usize, early_data: bool) -> Self {
        Self {
            storage: rustls::server::ServerSessionMemoryCache::new(capacity.max(1)),
            early_data,
        }
    }

    pub(super) fn storage(&self) -> Arc<dyn rustls::server::StoresServerSessions> {
        self.storage.clone()
    }

    /// The cache as a connection announcing `params` (its encoded
    /// transport parameters) sees it: sessions it issues carry those
    /// limits, and it resumes only sessions issued under the same ones
    /// (RFC 9000 §7.4.1).
    pub(super) fn bound_to(&self, params: &[u8]) -> Arc<dyn rustls::server::StoresServerSessions> {
        Arc::new(BoundToLimits {
            inner: self.storage.clone(),
            limits: zero_rtt_limits(params),
        })
    }
}

/// What a client's 0-RTT data may rely on (RFC 9000 §7.4.1; RFC 9221 §3
/// for max_datagram_frame_size), as bytes to compare: the initial flow
/// control and stream limits, active_connection_id_limit,
/// max_udp_payload_size and max_datagram_frame_size. Parameters that do
/// not decode bind to their whole encoding, which no other connection
/// shares: no resumption rather than a wrong one.
fn zero_rtt_limits(params: &[u8]) -> Vec<u8> {
    let Ok(p) = TransportParams::decode(params) else {
        return params.to_vec();
    };
    [
        p.initial_max_data,
        p.initial_max_stream_data_bidi_local,
        p.initial_max_stream_data_bidi_remote,
        p.initial_max_stream_data_uni,
        p.initial_max_streams_bidi,
        p.initial_max_streams_uni,
        p.active_connection_id_limit,
        p.max_udp_payload_size,
        p.max_datagram_frame_size.map_or(u64::MAX, |size| size),
        u64::from(p.max_datagram_frame_size.is_some()),
    ]
    .iter()
    .flat_map(|value| value.to_be_bytes())
    .collect()
}

/// A connection's view of the server's session cache: every session it
/// stores is prefixed with its limits, and a session stored under other
/// limits is not found.
#[derive(Debug)]
struct BoundToLimits {
    inner: Arc<dyn rustls::server::StoresServerSessions>,
    limits: Vec<u8>,
}

impl BoundToLimits {
    fn unwrap(&self, stored: Vec<u8>) -> Option<Vec<u8>> {
        stored
            .strip_prefix(self.limits.as_slice())
            .map(<[u8]>::to_vec)
    }
}

impl rustls::server::StoresServerSessions for BoundToLimits {
    fn put(&self, key: Vec<u8>, value: Vec<u8>) -> bool {
        let mut stored = Vec::with_capacity(self.limits.len() + value.len());
        stored.extend_from_slice(&self.limits);
        stored.extend_from_slice(&value);
        self.inner.put(key, stored)
    }

    fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        self.inner.get(key).and_then(|stored| self.unwrap(stored))
    }

    fn take(&self, key: &[u8]) -> Option<Vec<u8>> {
        // Taken either way: a ticket resumes at most once.
        self.inner.take(key).and_then(|stored| self.unwrap(stored))
    }

    fn can_cache(&self) -> bool {
        self.inner.can_cache()
    }
}
