//! Connection errors: what the application sees. Why a connection closed is
//! [`CloseReason`](crate::CloseReason), at the crate root.

use crate::stream::StreamError;

/// RFC 9000 §20.1 transport error codes sift uses.
pub mod codes {
    /// NO_ERROR: an abrupt close without an error.
    pub const NO_ERROR: u64 = 0x0;
    /// INTERNAL_ERROR: the endpoint cannot go on for a reason of its own.
    pub const INTERNAL_ERROR: u64 = 0x1;
    /// CONNECTION_REFUSED: the server refuses the connection (sift: a
    /// protection mismatch).
    pub const CONNECTION_REFUSED: u64 = 0x2;
    /// FRAME_ENCODING_ERROR: a frame was badly formatted.
    pub const FRAME_ENCODING_ERROR: u64 = 0x7;
    /// TRANSPORT_PARAMETER_ERROR: transport parameters were malformed or
    /// invalid.
    pub const TRANSPORT_PARAMETER_ERROR: u64 = 0x8;
    /// CONNECTION_ID_LIMIT_ERROR: the peer issued more connection IDs than
    /// we keep.
    pub const CONNECTION_ID_LIMIT_ERROR: u64 = 0x9;
    /// PROTOCOL_VIOLATION: an error no more specific code covers.
    pub const PROTOCOL_VIOLATION: u64 = 0xa;
    /// INVALID_TOKEN: a Retry token the server cannot accept
    /// (RFC 9000 §8.1.2, §20.1).
    pub const INVALID_TOKEN: u64 = 0xb;
    /// APPLICATION_ERROR: the application closed before the handshake
    /// completed (RFC 9000 §10.2.3).
    pub const APPLICATION_ERROR: u64 = 0xc;
    /// KEY_UPDATE_ERROR: the peer broke the rules of key update (RFC 9001
    /// §6.4: newer keys on an older packet number than older keys).
    pub const KEY_UPDATE_ERROR: u64 = 0xe;
    /// AEAD_LIMIT_REACHED: more received packets failed authentication
    /// than the cipher's integrity limit allows (RFC 9001 §6.6).
    pub const AEAD_LIMIT_REACHED: u64 = 0xf;
    /// RFC 9000 §20.1: 0x0100–0x01ff carry a TLS alert; sift's Null
    /// handshake reports its failures as a generic handshake failure (40).
    pub const HANDSHAKE_FAILURE: u64 = 0x0100 + 40;
}

/// An error returned to the application.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The connection has closed; `Connection::close_reason` says why.
    #[error("the connection is closed")]
    Closed,
    /// A stream operation failed.
    #[error(transparent)]
    Stream(#[from] StreamError),
    /// The peer did not offer DATAGRAM support.
    #[error("the peer does not accept datagrams")]
    DatagramsUnsupported,
    /// A datagram does not fit the peer's limit or one packet.
    #[error("datagram of {len} bytes exceeds the limit of {max} bytes")]
    DatagramTooLarge {
        /// The datagram's size.
        len: usize,
        /// The largest that can be sent.
        max: usize,
    },
    /// The configuration cannot work.
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    /// This end may not move to a new local address now (RFC 9000 §9,
    /// §9.5); the reason says why. Nothing changed.
    #[error("cannot move to a new address: {0}")]
    MigrationRefused(&'static str),
}

/// A protocol violation by the peer, found while processing its packets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TransportFailure {
    pub code: u64,
    pub reason: String,
}

impl TransportFailure {
    pub fn new(code: u64, reason: impl Into<String>) -> Self {
        Self {
            code,
            reason: reason.into(),
        }
    }
}
