//! TLS 1.3 through rustls's QUIC API with the ring provider (DESIGN §4):
//! the [`TlsSession`] handshake, the [`TlsProtection`] tags of DESIGN §3,
//! Initial keys from the client's first destination connection ID, and the
//! public settings ([`TlsConfig`], [`ServerIdentity`], [`ServerTrust`]).
//!
//! The only module of sift that names rustls. Decisions:
//! - rustls's QUIC v1 key schedule (RFC 9001 §5: Initial salt, "quic key" /
//!   "quic iv" / "quic ku" labels) for v1 and sift/1, although sift/1's
//!   version field differs from QUIC's: the schedule is what rustls offers
//!   and what reviewers know. QUIC v2 runs rustls's v2 schedule (RFC 9369
//!   §3.3), chosen when a session is made (`key_schedule`).
//! - Transport parameters ride in the TLS extension, encoded as in Null mode
//!   (RFC 9000 §18 TLV), `corruption_notices` among them.
//! - TLS 1.3 only. Session tickets and 0-RTT when configured
//!   ([`TicketStore`] on a client, [`SessionCache`] on a server):
//!   `resumption` says how tickets are scoped, used once, and how the
//!   server's pin survives a resumed handshake.

mod client_hello;
mod config;
mod identity;
mod protection;
mod resumption;

pub use client_hello::{peek_client_hello, ClientHelloPeek};
pub use config::{
    CertificateRejected, CertificateVerifier, ServerTrust, TlsConfig, TlsSetupError, DEFAULT_ALPN,
};
pub use identity::{Fingerprint, IdentityError, ServerIdentity};
pub use protection::{HeaderKeys, TlsProtection, HEADER_TAG_NONCE_BIT, TLS_PAYLOAD_TAG_LEN};
pub use resumption::{SessionCache, TicketScope, TicketStore, DEFAULT_SESSION_CACHE};

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use rustls::quic::{self, Version};

use super::session::{HandshakeError, KeyChange, Session};
use super::{Level, PacketProtection};
use crate::wire::TransportParams;
use crate::Side;

/// RFC 8446 §6: internal_error, for a failure rustls names no alert for.
const ALERT_INTERNAL_ERROR: u8 = 80;
/// RFC 8446 §6: bad_certificate.
const ALERT_BAD_CERTIFICATE: u8 = 42;
/// RFC 7301 §3.2: no_application_protocol (QUIC error 0x0178, RFC 9001 §8.1).
const ALERT_NO_APPLICATION_PROTOCOL: u8 = 120;

/// The name tickets are filed under: the configured server name, else
/// the server's address (as the rustls server name is chosen).
fn ticket_server_name(config: &TlsConfig, remote: IpAddr) -> String {
    config
        .server_name
        .clone()
        .unwrap_or_else(|| remote.to_string())
}

fn rustls_side(side: Side) -> rustls::Side {
    match side {
        Side::Client => rustls::Side::Client,
        Side::Server => rustls::Side::Server,
    }
}

/// rustls's key schedule for a QUIC `version` on the wire: QUIC v2's
/// (RFC 9369 §3.3: its Initial salt and "quicv2 key" / "quicv2 iv" /
/// "quicv2 hp" / "quicv2 ku" labels) for v2, v1's for v1 and sift/1.
///
/// rustls fixes the schedule when a session is made
/// (`quic::ClientConnection::new` sets `common_state.quic.version`, which
/// nothing changes afterwards): a server picks it after it peeked at the
/// ClientHello, but a client cannot follow a server from v1 to v2.
fn key_schedule(version: u32) -> Version {
    if version == crate::wire::QUIC_V2 {
        Version::V2
    } else {
        Version::V1
    }
}

/// RFC 9001 §5.2 Initial keys of QUIC v1 (and sift/1) for `side`: see
/// [`initial_protection_in`].
pub fn initial_protection(client_dcid: &[u8], side: Side) -> TlsProtection {
    initial_protection_in(crate::wire::QUIC_V1, client_dcid, side)
}

/// Initial keys of `version` for `side`, from the client's first
/// destination connection ID (AES-128-GCM; RFC 9001 §5.2, with RFC 9369
/// §3.3.1's salt and §3.3.2's labels in v2). Anyone who sees the packet
/// can derive them: they protect against corruption and off-path
/// injection, not against an on-path observer.
pub fn initial_protection_in(version: u32, client_dcid: &[u8], side: Side) -> TlsProtection {
    let suite = rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256
        .tls13()
        .and_then(|suite| suite.quic_suite())
        .expect("the ring provider's TLS13_AES_128_GCM_SHA256 supports QUIC");
    let keys = suite.keys(client_dcid, rustls_side(side), key_schedule(version));
    protection_of(keys)
}

/// Whether `a` and `b` share a TLS key schedule, so that a handshake
/// begun in one can go on in the other: v1 and sift/1 do, v2 is alone.
pub fn same_key_schedule(a: u32, b: u32) -> bool {
    matches!(
        (key_schedule(a), key_schedule(b)),
        (Version::V1, Version::V1) | (Version::V2, Version::V2)
    )
}

/// A TLS config that presents and trusts one self-signed identity, made
/// once per process: for simulated connections (both ends live in one
/// process) and tests. The name is "localhost".
pub fn process_loopback_config() -> TlsConfig {
    static IDENTITY: std::sync::OnceLock<Result<ServerIdentity, IdentityError>> =
        std::sync::OnceLock::new();
    let identity = IDENTITY.get_or_init(|| ServerIdentity::self_signed(&["localhost"]));
    match identity {
        Ok(identity) => TlsConfig::loopback(identity.clone()),
        // rcgen failing to make an Ed25519 key leaves the config without an
        // identity: connections then fail with a clear configuration error.
        Err(_) => TlsConfig::default(),
    }
}

/// The AEADs TLS 1.3 offers QUIC (RFC 9001 §5.3): the suites a
/// [`TlsConfig`] offers, the one a handshake settled on, and the keys of
/// [`public_seed_protection`]. Short names `aes128`, `aes256`, `chacha20`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aead {
    /// TLS_AES_128_GCM_SHA256.
    Aes128Gcm,
    /// TLS_AES_256_GCM_SHA384.
    Aes256Gcm,
    /// TLS_CHACHA20_POLY1305_SHA256.
    ChaCha20Poly1305,
}

impl Aead {
    /// Every AEAD, in the order sift offers them by default.
    pub const ALL: [Aead; 3] = [Aead::Aes128Gcm, Aead::Aes256Gcm, Aead::ChaCha20Poly1305];

    /// The short name: `aes128`, `aes256` or `chacha20`.
    pub fn name(self) -> &'static str {
        match self {
            Aead::Aes128Gcm => "aes128",
            Aead::Aes256Gcm => "aes256",
            Aead::ChaCha20Poly1305 => "chacha20",
        }
    }

    /// The ring provider's TLS 1.3 suite of this AEAD.
    fn suite(self) -> rustls::SupportedCipherSuite {
        use rustls::crypto::ring::cipher_suite as suites;
        match self {
            Aead::Aes128Gcm => suites::TLS13_AES_128_GCM_SHA256,
            Aead::Aes256Gcm => suites::TLS13_AES_256_GCM_SHA384,
            Aead::ChaCha20Poly1305 => suites::TLS13_CHACHA20_POLY1305_SHA256,
        }
    }

    /// The AEAD of a negotiated suite.
    fn of_suite(suite: rustls::SupportedCipherSuite) -> Option<Aead> {
        Aead::ALL
            .into_iter()
            .find(|aead| aead.suite().suite() == suite.suite())
    }
}

impl fmt::Display for Aead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A cipher name that is not `aes128`, `aes256` or `chacha20`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown cipher {0:?}: expected aes128, aes256 or chacha20")]
pub struct UnknownAead(pub String);

impl std::str::FromStr for Aead {
    type Err = UnknownAead;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Aead::ALL
            .into_iter()
            .find(|aead| aead.name() == name)
            .ok_or_else(|| UnknownAead(name.to_string()))
    }
}

/// Keys of `aead` derived from public bytes the way Initial keys are
/// (RFC 9001 §5.2, with `seed` in place of the DCID). Anyone who knows
/// `seed` can read and forge the packets: for benchmarks, fuzzing and
/// tests that need fixed keys of a given cipher.
pub fn public_seed_protection(aead: Aead, seed: &[u8], side: Side) -> TlsProtection {
    let suite = aead.suite();
    let quic = suite
        .tls13()
        .and_then(|suite| suite.quic_suite())
        .expect("the ring provider's TLS 1.3 suites all support QUIC");
    let keys = quic.keys(seed, rustls_side(side), Version::V1);
    protection_of(keys)
}

fn protection_of(keys: quic::Keys) -> TlsProtection {
    let header = HeaderKeys::new(keys.local.header, keys.remote.header);
    TlsProtection::new(keys.local.packet, keys.remote.packet, header)
}

/// rustls's message for `error`, with our own certificate refusals shown
/// as their text rather than as a debug dump.
fn describe(error: &rustls::Error) -> String {
    match error {
        rustls::Error::InvalidCertificate(rustls::CertificateError::Other(other)) => {
            format!("invalid peer certificate: {other}")
        }
        other => other.to_string(),
    }
}

/// The error a TLS failure closes the connection with: the alert rustls
/// sent (`CRYPTO_ERROR`, RFC 9001 §4.8), except where RFC 9001 asks for
/// another code than the alert rustls picks:
/// - a CertificateRequest after the handshake (post-handshake client
///   authentication, §4.4) and a ticket whose TLS early_data size is not
///   0xffffffff (§4.6.1) are PROTOCOL_VIOLATIONs;
/// - a server that selected an ALPN protocol the client did not offer is
///   no_application_protocol (0x0178, §8.1), as is a server that selected
///   none (which rustls already reports so).
fn quic_handshake_error(
    error: &rustls::Error,
    alert: Option<rustls::AlertDescription>,
    was_handshaking: bool,
) -> HandshakeError {
    use rustls::{Error, HandshakeType, PeerMisbehaved};
    match error {
        Error::InappropriateHandshakeMessage {
            got_type: HandshakeType::CertificateRequest,
            ..
        } if !was_handshaking => HandshakeError::ProtocolViolation(
            "a CertificateRequest after the handshake (RFC 9001 §4.4)".to_string(),
        ),
        Error::PeerMisbehaved(PeerMisbehaved::InvalidMaxEarlyDataSize) => {
            HandshakeError::ProtocolViolation(
                "a session ticket's early_data size is not 0xffffffff (RFC 9001 §4.6.1)"
                    .to_string(),
            )
        }
        Error::PeerMisbehaved(PeerMisbehaved::SelectedUnofferedApplicationProtocol) => {
            HandshakeError::Tls {
                alert: ALERT_NO_APPLICATION_PROTOCOL,
                reason: describe(error),
            }
        }
        _ => HandshakeError::Tls {
            alert: alert.map_or(ALERT_INTERNAL_ERROR, u8::from),
            reason: describe(error),
        },
    }
}

/// One side of a TLS 1.3 handshake.
pub struct TlsSession {
    connection: quic::Connection,
    /// Secrets of the next 1-RTT key phase, once the handshake yields them.
    next_secrets: Option<quic::Secrets>,
    /// The 1-RTT header protection keys, which every key phase shares.
    one_rtt_header: Option<HeaderKeys>,
    /// Client with a ticket store: where the version that new tickets are
    /// filed under is set.
    ticket_version: Option<Arc<AtomicU32>>,
    /// Client with pinned trust: the pins, checked again when a resumed
    /// handshake completes (rustls does not call the verifier then).
    pins: Option<Vec<Fingerprint>>,
}

impl std::fmt::Debug for TlsSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsSession")
            .field("handshaking", &self.connection.is_handshaking())
            .finish_non_exhaustive()
    }
}

impl TlsSession {
    /// A client session to `remote`, sending `params` (our encoded
    /// transport parameters). It neither resumes nor keeps tickets.
    pub fn client(
        config: &TlsConfig,
        remote: IpAddr,
        params: Vec<u8>,
    ) -> Result<Self, TlsSetupError> {
        Self::make_client(config, remote, None, Version::V1, params)
    }

    /// A client session to `remote` starting in QUIC `version` (under its
    /// key schedule, which stays for the session's life): with
    /// [`TlsConfig::tickets`] it resumes with a ticket of that server,
    /// port and version if one is held (sending 0-RTT if allowed), and
    /// files the tickets it gets under the version set last
    /// ([`Session::set_version`]).
    pub fn client_in_version(
        config: &TlsConfig,
        remote: SocketAddr,
        version: u32,
        params: Vec<u8>,
    ) -> Result<Self, TlsSetupError> {
        let scope = config.tickets.as_ref().map(|_| TicketScope {
            server: ticket_server_name(config, remote.ip()),
            port: remote.port(),
            version,
        });
        Self::make_client(config, remote.ip(), scope, key_schedule(version), params)
    }

    fn make_client(
        config: &TlsConfig,
        remote: IpAddr,
        scope: Option<TicketScope>,
        schedule: Version,
        params: Vec<u8>,
    ) -> Result<Self, TlsSetupError> {
        let tickets = match (&config.tickets, scope) {
            (Some(store), Some(scope)) => Some(store.for_connection(scope)),
            _ => None,
        };
        let ticket_version = tickets.as_ref().map(|t| t.version_handle());
        let client = config::client_config(config, tickets)?;
        let name = config::server_name(config, remote)?;
        let connection = quic::ClientConnection::new(Arc::new(client), schedule, name, params)
            .map_err(|error| TlsSetupError::Rustls(error.to_string()))?;
        let pins = match &config.trust {
            Some(ServerTrust::Pinned(pins)) => Some(pins.clone()),
            _ => None,
        };
        Ok(Self {
            connection: connection.into(),
            next_secrets: None,
            one_rtt_header: None,
            ticket_version,
            pins,
        })
    }

    fn directional(&self) -> Option<(quic::DirectionalKeys, quic::DirectionalKeys)> {
        Some((
            self.connection.zero_rtt_keys()?,
            self.connection.zero_rtt_keys()?,
        ))
    }

    /// The end-entity certificate a resumed handshake restored is still
    /// one of the pins (a ticket is bound to the verifier that checked it,
    /// so this holds unless rustls changes; checked anyway).
    fn check_resumed_pin(&self) -> Result<(), HandshakeError> {
        let (Some(pins), true) = (&self.pins, self.is_resumed()) else {
            return Ok(());
        };
        let presented = self.peer_certificate_fingerprint();
        if presented.is_some_and(|fingerprint| pins.contains(&fingerprint)) {
            return Ok(());
        }
        Err(HandshakeError::Tls {
            alert: ALERT_BAD_CERTIFICATE,
            reason: "the resumed session's certificate is not pinned".to_string(),
        })
    }

    /// A QUIC v1 (or sift/1) server session sending `params`.
    pub fn server(config: &TlsConfig, params: Vec<u8>) -> Result<Self, TlsSetupError> {
        Self::server_in_version(config, crate::wire::QUIC_V1, params)
    }

    /// A server session for a connection that runs QUIC `version` (the
    /// server chose it from the ClientHello before making the session),
    /// sending `params`.
    pub fn server_in_version(
        config: &TlsConfig,
        version: u32,
        params: Vec<u8>,
    ) -> Result<Self, TlsSetupError> {
        let server = config::server_config(config, Some(&params))?;
        let connection =
            quic::ServerConnection::new(Arc::new(server), key_schedule(version), params)
                .map_err(|error| TlsSetupError::Rustls(error.to_string()))?;
        Ok(Self {
            connection: connection.into(),
            next_secrets: None,
            one_rtt_header: None,
            ticket_version: None,
            pins: None,
        })
    }

    /// Checks that a configuration can make sessions for `side`, so that a
    /// server refuses to start instead of failing every client.
    pub fn validate(config: &TlsConfig, side: Side) -> Result<(), TlsSetupError> {
        match side {
            Side::Client => config::client_config(config, None).map(drop),
            Side::Server => config::server_config(config, None).map(drop),
        }
    }
}

impl Session for TlsSession {
    fn read_handshake(&mut self, _level: Level, data: &[u8]) -> Result<(), HandshakeError> {
        // rustls checks each message against the level it expects next;
        // the caller feeds each level's bytes in order.
        let was_handshaking = self.connection.is_handshaking();
        self.connection.read_hs(data).map_err(|error| {
            quic_handshake_error(&error, self.connection.alert(), was_handshaking)
        })?;
        if was_handshaking && !self.connection.is_handshaking() {
            self.check_resumed_pin()?;
        }
        Ok(())
    }

    fn write_handshake(&mut self, buf: &mut Vec<u8>) -> Option<KeyChange> {
        match self.connection.write_hs(buf)? {
            quic::KeyChange::Handshake { keys } => {
                Some(KeyChange::Handshake(Box::new(protection_of(keys))))
            }
            quic::KeyChange::OneRtt { keys, next } => {
                self.next_secrets = Some(next);
                let protection = protection_of(keys);
                self.one_rtt_header = Some(protection.header_keys());
                Some(KeyChange::OneRtt(Box::new(protection)))
            }
        }
    }

    fn is_handshaking(&self) -> bool {
        self.connection.is_handshaking()
    }

    fn peer_params(&self) -> Result<Option<TransportParams>, HandshakeError> {
        self.connection
            .quic_transport_parameters()
            .map(TransportParams::decode)
            .transpose()
            .map_err(HandshakeError::TransportParameters)
    }

    fn next_one_rtt_keys(&mut self) -> Option<Box<dyn PacketProtection>> {
        let header = self.one_rtt_header.clone()?;
        let keys = self.next_secrets.as_mut()?.next_packet_keys();
        Some(Box::new(TlsProtection::new(
            keys.local,
            keys.remote,
            header,
        )))
    }

    fn alpn_protocol(&self) -> Option<&[u8]> {
        self.connection.alpn_protocol()
    }

    fn cipher_suite(&self) -> Option<Aead> {
        self.connection
            .negotiated_cipher_suite()
            .and_then(Aead::of_suite)
    }

    fn peer_certificate_fingerprint(&self) -> Option<Fingerprint> {
        let end_entity = self.connection.peer_certificates()?.first()?;
        Some(Fingerprint::of_certificate(end_entity.as_ref()))
    }

    fn zero_rtt_keys(&self) -> Option<Box<dyn PacketProtection>> {
        let (local, remote) = self.directional()?;
        let header = HeaderKeys::new(local.header, remote.header);
        Some(Box::new(TlsProtection::new(
            local.packet,
            remote.packet,
            header,
        )))
    }

    fn remembered_params(&self) -> Option<TransportParams> {
        // Before the server's EncryptedExtensions, rustls reports the
        // parameters remembered with the ticket being resumed.
        match &self.connection {
            quic::Connection::Client(client) if client.is_handshaking() => client
                .quic_transport_parameters()
                .and_then(|bytes| TransportParams::decode(bytes).ok()),
            _ => None,
        }
    }

    fn early_data_accepted(&self) -> bool {
        match &self.connection {
            quic::Connection::Client(client) => client.is_early_data_accepted(),
            quic::Connection::Server(server) => server.zero_rtt_keys().is_some(),
        }
    }

    fn is_resumed(&self) -> bool {
        let kind = match &self.connection {
            quic::Connection::Client(client) => client.handshake_kind(),
            quic::Connection::Server(server) => server.handshake_kind(),
        };
        kind == Some(rustls::HandshakeKind::Resumed)
    }

    fn set_version(&mut self, version: u32) {
        if let Some(handle) = &self.ticket_version {
            handle.store(version, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod rfc9001_tests;
#[cfg(test)]
mod tests;
