//! Connection errors: what the application sees, and why a connection closed.

use serde::{Deserialize, Serialize};

use crate::stream::StreamError;
use crate::wire::version_name;

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
}

/// Why a connection closed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "kind")]
pub enum CloseReason {
    /// This endpoint closed it: the application (`application: true`) or a
    /// protocol error it detected in the peer's packets.
    Local {
        /// The code is the application's (not a transport error).
        application: bool,
        /// The error code sent to the peer.
        code: u64,
        /// The reason phrase sent to the peer.
        reason: String,
    },
    /// The peer sent CONNECTION_CLOSE.
    Peer {
        /// The code is the peer application's (not a transport error).
        application: bool,
        /// The peer's error code.
        code: u64,
        /// The peer's reason phrase.
        reason: String,
    },
    /// Nothing was heard from the peer for the idle timeout.
    IdleTimeout,
    /// The peer sent a stateless reset (RFC 9000 §10.3): it no longer has
    /// this connection, typically because it restarted.
    StatelessReset,
    /// The server answered with Version Negotiation (RFC 9000 §6): it does
    /// not speak this version; `offered` is what it does speak.
    VersionMismatch {
        /// The versions the server listed.
        offered: Vec<u32>,
    },
}

impl std::fmt::Display for CloseReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let describe = |application: bool, code: u64| {
            match (application, code) {
            (true, _) => format!("application code {code}"),
            // RFC 9001 §8.1: TLS alert 120, no_application_protocol.
            (false, 0x178) => "no application protocol in common: the peer speaks QUIC, but not this ALPN (a QUIC server, not a sift one?)".to_string(),
            (false, 0x100..=0x1ff) => format!("TLS alert {}", code - 0x100),
            (false, _) => format!("transport error 0x{code:x}"),
        }
        };
        match self {
            CloseReason::Local {
                application,
                code,
                reason,
            } => {
                write!(f, "closed locally ({})", describe(*application, *code))?;
                if !reason.is_empty() {
                    write!(f, ": {reason}")?;
                }
                Ok(())
            }
            CloseReason::Peer {
                application,
                code,
                reason,
            } => {
                write!(f, "closed by peer ({})", describe(*application, *code))?;
                if !reason.is_empty() {
                    write!(f, ": {reason}")?;
                }
                Ok(())
            }
            CloseReason::IdleTimeout => f.write_str("idle timeout: the peer went silent"),
            CloseReason::StatelessReset => f.write_str(
                "the peer reset the connection: it no longer knows it (it restarted or lost its state)",
            ),
            CloseReason::VersionMismatch { offered } => {
                let offered: Vec<_> = offered.iter().map(|&v| version_name(v)).collect();
                write!(
                    f,
                    "the server speaks none of our versions: it offers {}",
                    offered.join(", ")
                )
            }
        }
    }
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
