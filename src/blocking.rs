//! A blocking API for simple applications: [`connect`], [`Listener`],
//! [`BlockingConnection`] and [`SiftStream`] (`std::io::Read + Write`).
//!
//! Each endpoint (one per `connect`, one per `Listener`) has a driver
//! (the socket and the [`io`](crate::io) event loop) and a driver thread.
//! Application threads share the endpoint behind a mutex: they call the
//! sans-IO connection directly, and when they must wait, the thread that
//! waits drives. A thread that waits while no other does runs the loop's
//! turns itself, looking between turns for what it waits for, so that a
//! reader decrypts what it reads on its own core with no hand-off between
//! threads; a write with nobody driving runs one turn to send at once.
//! The driver thread runs the loop whenever no application thread does:
//! once the driver has been left unused for [`UNDRIVEN_GRACE`] (the
//! application is busy elsewhere, and the connection is still
//! acknowledged, timed out and closed on time), while several application
//! threads wait at once (it wakes each on its own progress), and when the
//! last handle is gone. [`BlockingConnection::driver_turns`] says where
//! the turns ran.
//!
//! Owns: threads, waiting, timeouts for the application, and turning
//! connection events into `std::io` results.
//! Must not: hold protocol state of its own; everything it knows is asked
//! of the `Endpoint` and `Connection`.
//!
//! Choices (like quinn's where it has one):
//! - `Write::flush` returns once the data is handed to the connection (it
//!   always is, once `write` returns); [`SiftStream::finish_and_wait`]
//!   waits until the peer acknowledged everything.
//! - Dropping a [`SiftStream`] finishes its sending half (FIN, like closing
//!   a `TcpStream`) unless it was finished or reset, and asks the peer to
//!   stop sending (STOP_SENDING 0) if its receiving half was not read to
//!   the end. Call [`SiftStream::reset`] to abandon data instead.
//! - Dropping the last clone of a [`BlockingConnection`] (and its streams)
//!   closes the connection with code 0 at once: data not yet acknowledged
//!   is lost. Use `finish_and_wait` on streams first.
//! - A peer opens a stream by sending on it: `accept_bi` sees a stream only
//!   once the peer wrote to it (or finished it).

mod connection;
mod error;
mod listener;
mod shared;
mod stream;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use connection::BlockingConnection;
pub use error::SiftIoError;
pub use listener::Listener;
pub use shared::{DriverTurns, UNDRIVEN_GRACE};
pub use stream::SiftStream;

use crate::io::{connect_timeout, os_entropy, os_seed, CONNECT_TIMEOUT};
use crate::Config;
use connection::ConnInner;
use shared::start_endpoint;

/// How long [`connect`] waits for the handshake unless the configured
/// idle timeout is shorter: the old name of [`CONNECT_TIMEOUT`], which the
/// async API shares, and which is not the server's bound on handshakes
/// ([`DEFAULT_SERVER_HANDSHAKE_TIMEOUT`](crate::endpoint::DEFAULT_SERVER_HANDSHAKE_TIMEOUT)).
#[deprecated(
    since = "0.1.0",
    note = "renamed `sift::io::CONNECT_TIMEOUT`: a client's connect wait, not the server's handshake bound"
)]
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = CONNECT_TIMEOUT;

/// The unspecified address of `remote`'s family, port 0.
fn any_address_for(remote: SocketAddr) -> SocketAddr {
    if remote.is_ipv6() {
        SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, 0))
    } else {
        SocketAddr::from((std::net::Ipv4Addr::UNSPECIFIED, 0))
    }
}

/// Connects to `remote` from a new endpoint bound to `0.0.0.0:0` (or
/// `[::]:0` for an IPv6 `remote`), and waits for the handshake — at most
/// 10 s, or the configured idle timeout if shorter. The connection-ID seed
/// is drawn from the OS, whatever `config.rng_seed` says.
pub fn connect(remote: SocketAddr, config: Config) -> Result<BlockingConnection, SiftIoError> {
    connect_with(remote, config, false)
}

/// As [`connect`], but returns as soon as the connection can send 0-RTT
/// data (it resumes a session whose ticket allows it: see
/// `Config::tls.tickets`), so that a request on a stream opened with
/// [`BlockingConnection::open_bi_replay_safe`] leaves with the first
/// flight; otherwise it waits for the handshake as [`connect`] does.
///
/// When it returns early, nothing has been sent yet: the first flight
/// waits for the first write on a stream, or for the first call that
/// waits on the peer (a read, an accept, a finish that waits), so the
/// request is in it however soon the handshake would have completed.
///
/// The server may reject the 0-RTT (RFC 9001 §4.6.2): every stream opened
/// before then is gone and its reads and writes fail with
/// [`SiftIoError::ZeroRttRejected`]. Check
/// [`BlockingConnection::early_data`] (or
/// [`SiftStream::is_zero_rtt_rejected`]) and send the request again on a
/// new stream, if [`BlockingConnection::alpn_protocol`] is still the
/// protocol it assumed.
pub fn connect_early(
    remote: SocketAddr,
    config: Config,
) -> Result<BlockingConnection, SiftIoError> {
    connect_with(remote, config, true)
}

fn connect_with(
    remote: SocketAddr,
    config: Config,
    early: bool,
) -> Result<BlockingConnection, SiftIoError> {
    let shared = start_endpoint(any_address_for(remote), None, &config, 1)?;
    let timeout = connect_timeout(&config);
    let config = Config {
        rng_seed: os_seed(),
        entropy: Some(os_entropy()),
        ..config
    };
    let handle = {
        let mut state = shared.lock();
        let handle = state.endpoint.connect(config, remote, Instant::now());
        let handle = match handle {
            Ok(handle) => handle,
            Err(error) => {
                state.app_handles = 0;
                shared.hand_to_driver(&mut state);
                return Err(error.into());
            }
        };
        if early {
            // The request the caller writes next leaves with the
            // ClientHello; the first flight goes at the latest when the
            // caller waits for anything (see `ConnInner::block_on_until`).
            if let Some(connection) = state.endpoint.connection(handle) {
                connection.hold_first_flight();
            }
        }
        state.held.insert(handle);
        // The handshake's wait drives the first flight out (or, held for
        // 0-RTT, the first write's nudge).
        let _ = shared.wake_driver(&mut state);
        handle
    };
    // The endpoint's own handle passes to the connection.
    let connection = BlockingConnection {
        inner: Arc::new(ConnInner {
            shared,
            handle,
            remote,
            last_stats: Mutex::new(None),
        }),
    };
    connection.wait_ready(timeout, early)?;
    Ok(connection)
}
