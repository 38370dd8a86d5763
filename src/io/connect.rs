//! What a client's connect waits for, in the blocking API and the async one
//! alike: the handshake, for at most [`CONNECT_TIMEOUT`] or the configured
//! idle timeout if that is shorter.
//!
//! Not to be confused with a server's bound on handshakes
//! ([`DEFAULT_SERVER_HANDSHAKE_TIMEOUT`](crate::endpoint::DEFAULT_SERVER_HANDSHAKE_TIMEOUT)),
//! which the sans-IO endpoint enforces against unvalidated clients.

use std::time::Duration;

use crate::{CloseReason, Config, Connection};

/// How long a client's connect (`blocking::connect`, `tokio::Endpoint::connect`)
/// waits for the handshake unless the configured idle timeout is shorter.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a connect with `config` waits for the handshake:
/// [`CONNECT_TIMEOUT`], or the idle timeout if that is shorter (and not
/// zero, which means none).
pub(crate) fn connect_timeout(config: &Config) -> Duration {
    if config.idle_timeout.is_zero() {
        CONNECT_TIMEOUT
    } else {
        config.idle_timeout.min(CONNECT_TIMEOUT)
    }
}

/// Whether a connect waiting for `connection` can hand it out: its
/// handshake completed, or the peer closed it with an application code,
/// which it could only do after completing the handshake (before, it could
/// only send a transport error) — then it is handed out, closed.
pub(crate) fn handshake_completed(connection: &Connection) -> bool {
    let peer_closed_after_handshake = matches!(
        connection.close_reason(),
        Some(CloseReason::Peer {
            application: true,
            ..
        })
    );
    connection.is_established() || peer_closed_after_handshake
}
