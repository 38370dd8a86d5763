//! When a server asks new clients to prove their address (RFC 9000 §8.1.2):
//! a setting of the connection config that the endpoint acts on. It lives
//! here, below `endpoint`, so that `conn` depends only downward (DESIGN §1).

/// Half-open handshakes (server connections not yet established) at which
/// an endpoint in [`RetryPolicy::WhenBusy`] starts asking for Retry.
pub const DEFAULT_RETRY_HALF_OPEN: usize = 64;

/// When a server endpoint asks new clients to prove their address with a
/// Retry before it keeps any state for them. Retry costs the client one
/// round trip and needs a server secret (`Config::server_secret`); without
/// one the endpoint never asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryPolicy {
    /// Never: every client Initial gets a connection at once.
    Never,
    /// Every new client (`sift-server --retry`).
    Always,
    /// Once this many handshakes are half open: under a flood of spoofed
    /// Initials the server keeps no state for them, and its answers, one
    /// small Retry each, go to addresses that never complete.
    WhenBusy {
        /// Half-open handshakes that switch Retry on.
        half_open: usize,
    },
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy::WhenBusy {
            half_open: DEFAULT_RETRY_HALF_OPEN,
        }
    }
}
