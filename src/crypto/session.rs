//! The handshake seam: a [`Session`] reads and writes handshake bytes (what
//! CRYPTO frames carry) and hands out packet keys as levels open. Null mode
//! ([`NullSession`](super::NullSession)) and TLS 1.3
//! ([`TlsSession`](super::TlsSession)) implement it.
//!
//! The shape follows rustls's QUIC API (and quinn-proto's `crypto::Session`):
//! `write_handshake` appends bytes for the session's current *write level*
//! and returns a [`KeyChange`] when that level advances, so bytes written
//! before a key change belong to the old level and bytes after it to the new
//! one. The caller owns CRYPTO stream offsets, reassembly and retransmission.

use super::{Level, PacketProtection};
use crate::wire::{TransportParams, WireError};

/// RFC 9000 §20.1: CRYPTO_ERROR codes are 0x0100 plus the TLS alert.
const CRYPTO_ERROR_BASE: u64 = 0x0100;
/// RFC 8446 §6: handshake_failure, the alert for a failure with no better
/// description (Null mode's malformed messages).
const ALERT_HANDSHAKE_FAILURE: u8 = 40;
/// RFC 9368 §4 VERSION_NEGOTIATION_ERROR.
const VERSION_NEGOTIATION_ERROR: u64 = 0x11;
/// RFC 9000 §20.1 TRANSPORT_PARAMETER_ERROR.
const TRANSPORT_PARAMETER_ERROR: u64 = 0x8;
/// RFC 9000 §20.1 PROTOCOL_VIOLATION.
const PROTOCOL_VIOLATION: u64 = 0xa;
/// RFC 9000 §20.1 CRYPTO_BUFFER_EXCEEDED: the close RFC 9000 §7.5 asks of
/// an endpoint that will not buffer more out-of-order CRYPTO data.
const CRYPTO_BUFFER_EXCEEDED: u64 = 0xd;

/// What went wrong in the handshake; closes the connection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    /// A Null-mode message arrived at the wrong level or moment.
    #[error("unexpected handshake message {message} at {level:?}")]
    UnexpectedMessage { message: u8, level: Level },
    /// A Null-mode message longer than any sift sends.
    #[error("handshake message of {0} bytes exceeds the limit")]
    MessageTooLong(u64),
    /// The peer sent more out-of-order CRYPTO data than is buffered.
    #[error("CRYPTO data beyond the buffer limit at {0:?}")]
    BufferExceeded(Level),
    /// New CRYPTO data at a level the handshake has left behind.
    #[error("new CRYPTO data at {0:?}, a level the handshake has left")]
    StaleLevel(Level),
    /// CRYPTO data at a level was still unread when TLS moved to the next
    /// (RFC 9001 §4.1.3).
    #[error("CRYPTO data at {0:?} left unread when the handshake moved on")]
    LeftUnread(Level),
    /// The peer's transport parameters do not decode.
    #[error("malformed transport parameters: {0}")]
    TransportParameters(WireError),
    /// Compatible version negotiation failed (RFC 9368 §4).
    #[error("version negotiation: {0}")]
    VersionNegotiation(String),
    /// The peer broke a rule QUIC adds to TLS, which RFC 9001 closes with
    /// PROTOCOL_VIOLATION rather than a TLS alert (§4.4, §4.6.1, §8.4).
    #[error("{0}")]
    ProtocolViolation(String),
    /// TLS failed; `alert` is the TLS alert sent or implied.
    #[error("TLS: {reason}")]
    Tls { alert: u8, reason: String },
}

impl HandshakeError {
    /// The RFC 9000 §20.1 error code a CONNECTION_CLOSE carries for it.
    pub fn error_code(&self) -> u64 {
        match self {
            HandshakeError::TransportParameters(_) => TRANSPORT_PARAMETER_ERROR,
            HandshakeError::VersionNegotiation(_) => VERSION_NEGOTIATION_ERROR,
            // RFC 9001 §4.1.3: a protocol violation, not a TLS failure.
            HandshakeError::StaleLevel(_)
            | HandshakeError::LeftUnread(_)
            | HandshakeError::ProtocolViolation(_) => PROTOCOL_VIOLATION,
            HandshakeError::BufferExceeded(_) => CRYPTO_BUFFER_EXCEEDED,
            HandshakeError::Tls { alert, .. } => CRYPTO_ERROR_BASE + u64::from(*alert),
            _ => CRYPTO_ERROR_BASE + u64::from(ALERT_HANDSHAKE_FAILURE),
        }
    }
}

/// Keys for a new level, from [`Session::write_handshake`].
pub enum KeyChange {
    /// Handshake-level keys.
    Handshake(Box<dyn PacketProtection>),
    /// 1-RTT keys (key phase 0).
    OneRtt(Box<dyn PacketProtection>),
}

impl std::fmt::Debug for KeyChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            KeyChange::Handshake(_) => "KeyChange::Handshake",
            KeyChange::OneRtt(_) => "KeyChange::OneRtt",
        })
    }
}

/// One side of a handshake.
pub trait Session: Send + std::fmt::Debug {
    /// Feeds in-order handshake bytes received at `level`.
    fn read_handshake(&mut self, level: Level, data: &[u8]) -> Result<(), HandshakeError>;

    /// Appends bytes to send at the current write level to `buf`; returns
    /// the next level's keys when the write level advances (call again for
    /// the bytes of the new level).
    fn write_handshake(&mut self, buf: &mut Vec<u8>) -> Option<KeyChange>;

    /// The handshake has not completed yet.
    fn is_handshaking(&self) -> bool;

    /// The peer's transport parameters, once its hello (or encrypted
    /// extensions) arrived.
    fn peer_params(&self) -> Result<Option<TransportParams>, HandshakeError>;

    /// The 1-RTT keys of the next key phase (RFC 9001 §6); each call moves
    /// one phase further. `None` where the mode has no key update (Null).
    fn next_one_rtt_keys(&mut self) -> Option<Box<dyn PacketProtection>>;

    /// The ALPN protocol both sides agreed on, if any.
    fn alpn_protocol(&self) -> Option<&[u8]> {
        None
    }

    /// The AEAD the handshake settled on (TLS), once it has.
    fn cipher_suite(&self) -> Option<super::Aead> {
        None
    }

    /// SHA-256 of the peer's end-entity certificate (client side, TLS).
    fn peer_certificate_fingerprint(&self) -> Option<super::Fingerprint> {
        None
    }

    /// 0-RTT keys (RFC 9001 §4.6): on a client resuming with a ticket that
    /// allows early data, from its hello on; on a server, once it has
    /// accepted the client's early data. `None` otherwise (and in Null mode).
    fn zero_rtt_keys(&self) -> Option<Box<dyn PacketProtection>> {
        None
    }

    /// Client, resuming: the server's transport parameters remembered
    /// with the ticket (RFC 9000 §7.4.1), until the server's own arrive.
    fn remembered_params(&self) -> Option<TransportParams> {
        None
    }

    /// The server accepted the client's 0-RTT data (client: known once the
    /// handshake completed; server: once it read the client's hello).
    fn early_data_accepted(&self) -> bool {
        false
    }

    /// The handshake resumed an earlier session (a ticket, no certificate).
    fn is_resumed(&self) -> bool {
        false
    }

    /// The QUIC version the connection settled on: tickets received from
    /// now on are filed under it.
    fn set_version(&mut self, _version: u32) {}
}
