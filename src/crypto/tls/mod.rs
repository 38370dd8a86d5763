//! TLS 1.3 through rustls's QUIC API with the ring provider (DESIGN §4):
//! the [`TlsSession`] handshake, the [`TlsProtection`] tags of DESIGN §3,
//! Initial keys from the client's first destination connection ID, and the
//! public settings ([`TlsConfig`], [`ServerIdentity`], [`ServerTrust`]).
//!
//! The only module of sift that names rustls. Decisions:
//! - rustls's QUIC v1 key schedule (RFC 9001 §5: Initial salt, "quic key" /
//!   "quic iv" / "quic ku" labels), although sift's version field differs
//!   from QUIC's: the schedule is what rustls offers and what reviewers know.
//! - Transport parameters ride in the TLS extension, encoded as in Null mode
//!   (RFC 9000 §18 TLV), `corruption_notices` among them.
//! - TLS 1.3 only, no 0-RTT, no session tickets: nothing resumes.

mod client_hello;
mod config;
mod identity;
mod protection;

pub use client_hello::{peek_client_hello, ClientHelloPeek};
pub use config::{
    CertificateRejected, CertificateVerifier, ServerTrust, TlsConfig, TlsSetupError, DEFAULT_ALPN,
};
pub use identity::{Fingerprint, IdentityError, ServerIdentity};
pub use protection::{HeaderKeys, TlsProtection, HEADER_TAG_NONCE_BIT, TLS_PAYLOAD_TAG_LEN};

use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;

use rustls::quic::{self, Version};

use super::session::{HandshakeError, KeyChange, Session};
use super::{Level, PacketProtection};
use crate::wire::TransportParams;
use crate::Side;

/// RFC 8446 §6: internal_error, for a failure rustls names no alert for.
const ALERT_INTERNAL_ERROR: u8 = 80;

fn rustls_side(side: Side) -> rustls::Side {
    match side {
        Side::Client => rustls::Side::Client,
        Side::Server => rustls::Side::Server,
    }
}

/// RFC 9001 §5.2 Initial keys for `side`, from the client's first
/// destination connection ID (AES-128-GCM). Anyone who sees the packet can
/// derive them: they protect against corruption and off-path injection,
/// not against an on-path observer.
pub fn initial_protection(client_dcid: &[u8], side: Side) -> TlsProtection {
    let suite = rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256
        .tls13()
        .and_then(|suite| suite.quic_suite())
        .expect("the ring provider's TLS13_AES_128_GCM_SHA256 supports QUIC");
    let keys = suite.keys(client_dcid, rustls_side(side), Version::V1);
    protection_of(keys)
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

/// One side of a TLS 1.3 handshake.
pub struct TlsSession {
    connection: quic::Connection,
    /// Secrets of the next 1-RTT key phase, once the handshake yields them.
    next_secrets: Option<quic::Secrets>,
    /// The 1-RTT header protection keys, which every key phase shares.
    one_rtt_header: Option<HeaderKeys>,
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
    /// transport parameters).
    pub fn client(
        config: &TlsConfig,
        remote: IpAddr,
        params: Vec<u8>,
    ) -> Result<Self, TlsSetupError> {
        let client = config::client_config(config)?;
        let name = config::server_name(config, remote)?;
        let connection = quic::ClientConnection::new(Arc::new(client), Version::V1, name, params)
            .map_err(|error| TlsSetupError::Rustls(error.to_string()))?;
        Ok(Self {
            connection: connection.into(),
            next_secrets: None,
            one_rtt_header: None,
        })
    }

    /// A server session sending `params`.
    pub fn server(config: &TlsConfig, params: Vec<u8>) -> Result<Self, TlsSetupError> {
        let server = config::server_config(config)?;
        let connection = quic::ServerConnection::new(Arc::new(server), Version::V1, params)
            .map_err(|error| TlsSetupError::Rustls(error.to_string()))?;
        Ok(Self {
            connection: connection.into(),
            next_secrets: None,
            one_rtt_header: None,
        })
    }

    /// Checks that a configuration can make sessions for `side`, so that a
    /// server refuses to start instead of failing every client.
    pub fn validate(config: &TlsConfig, side: Side) -> Result<(), TlsSetupError> {
        match side {
            Side::Client => config::client_config(config).map(drop),
            Side::Server => config::server_config(config).map(drop),
        }
    }
}

impl Session for TlsSession {
    fn read_handshake(&mut self, _level: Level, data: &[u8]) -> Result<(), HandshakeError> {
        // rustls checks each message against the level it expects next;
        // the caller feeds each level's bytes in order.
        self.connection
            .read_hs(data)
            .map_err(|error| HandshakeError::Tls {
                alert: self
                    .connection
                    .alert()
                    .map_or(ALERT_INTERNAL_ERROR, u8::from),
                reason: describe(&error),
            })
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
}

#[cfg(test)]
mod tests;
