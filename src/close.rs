//! Why a connection closed: decided by `conn`, recorded by `trace`, reported
//! by the `blocking` and `tokio` APIs. It lives at the crate root beside
//! [`Side`](crate::Side) so that the tracer, which `conn` holds, does not
//! import `conn` back.

use serde::{Deserialize, Serialize};

use crate::wire::version_name;

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
    /// The peer moved to an address that never answered our
    /// PATH_CHALLENGE, and no address it used before was validated: the
    /// connection ended silently (RFC 9000 §9.3.2).
    PathValidationFailed,
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
            CloseReason::PathValidationFailed => f.write_str(
                "the peer's new address never answered, and it had no validated one to go back to",
            ),
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
