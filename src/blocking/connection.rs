//! A connection of the blocking API: application calls on the sans-IO
//! connection under the endpoint's lock, sleeping until the driver reports
//! progress.

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::shared::{Shared, Wait};
use super::stream::SiftStream;
use super::SiftIoError;
use crate::conn::CloseReason;
use crate::endpoint::ConnectionHandle;
use crate::io::handshake_completed;
use crate::stream::{Dir, StreamError};
use crate::{Connection, EarlyData, Error, Stats};

/// How long [`BlockingConnection::close`] waits for the CONNECTION_CLOSE
/// to leave the socket.
const CLOSE_FLUSH_WAIT: Duration = Duration::from_millis(250);

/// What one blocking call found.
pub(super) enum Step<T> {
    /// Done, and the connection may have something new to send (data,
    /// credit, a stream): the driver is woken if it sleeps.
    Ready(Result<T, SiftIoError>),
    /// Done, and nothing new to send: a read that only moved bytes out.
    /// The driver sleeps on until the next datagram or timer.
    ReadyQuiet(Result<T, SiftIoError>),
    Pending,
}

pub(super) struct ConnInner {
    pub(super) shared: Arc<Shared>,
    pub(super) handle: ConnectionHandle,
    pub(super) remote: SocketAddr,
    /// Stats as last read, in case the connection is gone.
    pub(super) last_stats: Mutex<Option<Stats>>,
}

impl ConnInner {
    /// Runs `attempt` on the connection until it is ready, waking the
    /// driver after each attempt and sleeping between them. `deadline`
    /// bounds the wait; `what` names what did not happen for the error.
    pub(super) fn block_on<T>(
        &self,
        deadline: Option<Instant>,
        what: &dyn Fn() -> String,
        attempt: &mut dyn FnMut(&mut Connection) -> Step<T>,
    ) -> Result<T, SiftIoError> {
        self.block_on_until(Wait::Connection(self.handle), deadline, what, attempt)
    }

    /// [`ConnInner::block_on`], sleeping on `wait` between attempts.
    pub(super) fn block_on_until<T>(
        &self,
        wait: Wait,
        deadline: Option<Instant>,
        what: &dyn Fn() -> String,
        attempt: &mut dyn FnMut(&mut Connection) -> Step<T>,
    ) -> Result<T, SiftIoError> {
        let started = Instant::now();
        let mut state = self.shared.lock();
        loop {
            let step = match state.endpoint.connection(self.handle) {
                Some(connection) => attempt(connection),
                None => Step::Ready(Err(SiftIoError::Connection(Error::Closed))),
            };
            match step {
                Step::Ready(result) => {
                    // The attempt handed the connection something (data, a
                    // read that frees credit, a new stream): the driver
                    // must act, on this thread if nobody drives.
                    let nudge = self.shared.wake_driver(&mut state);
                    drop(state);
                    self.shared.nudge(nudge);
                    return result;
                }
                Step::ReadyQuiet(result) => return result,
                Step::Pending => {}
            }
            // A pending attempt changed nothing, so the driver has nothing
            // new to do: waking it would only make it notify us again —
            // unless the first flight was held for a write that never
            // came (see `connect_early`): waiting on the peer lets it go.
            let released = state
                .endpoint
                .connection(self.handle)
                .is_some_and(|connection| connection.release_first_flight());
            if released {
                // The wait below drives it out if nobody else does.
                let _ = self.shared.wake_driver(&mut state);
            }
            if let Some(error) = self.shared.stopped_error(&state) {
                return Err(error);
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(SiftIoError::Timeout {
                    what: what(),
                    after: started.elapsed(),
                });
            }
            state = self.shared.wait(state, wait, deadline);
        }
    }

    /// One non-blocking call on the connection that may give the driver
    /// something to send.
    pub(super) fn with<T>(&self, f: impl FnOnce(&mut Connection) -> T) -> Option<T> {
        let mut state = self.shared.lock();
        let result = state.endpoint.connection(self.handle).map(f);
        let nudge = self.shared.wake_driver(&mut state);
        drop(state);
        self.shared.nudge(nudge);
        result
    }

    /// A look at the connection that changes nothing.
    pub(super) fn peek<T>(&self, f: impl FnOnce(&Connection) -> T) -> Option<T> {
        let state = self.shared.lock();
        state.endpoint.connection_ref(self.handle).map(f)
    }
}

impl Drop for ConnInner {
    fn drop(&mut self) {
        {
            let mut state = self.shared.lock();
            state.held.remove(&self.handle);
            if let Some(connection) = state.endpoint.connection(self.handle) {
                connection.close(0, "");
            }
        }
        self.shared.release_handle();
    }
}

/// The error for an operation on a closing or closed connection.
pub(super) fn closed_error(connection: &Connection) -> SiftIoError {
    match connection.close_reason() {
        Some(reason) => SiftIoError::Closed(reason.clone()),
        None => SiftIoError::Connection(Error::Closed),
    }
}

/// A connection of the blocking API. Clones share it; the connection
/// closes (code 0) when the last clone and its streams are dropped.
#[derive(Clone)]
pub struct BlockingConnection {
    pub(super) inner: Arc<ConnInner>,
}

impl std::fmt::Debug for BlockingConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockingConnection")
            .field("remote", &self.inner.remote)
            .field("local", &self.inner.shared.local_addr())
            .finish()
    }
}

impl BlockingConnection {
    /// Waits for the handshake, or (`early`) only until the connection
    /// can send 0-RTT data.
    pub(super) fn wait_ready(&self, timeout: Duration, early: bool) -> Result<(), SiftIoError> {
        let remote = self.inner.remote;
        let result = self.inner.block_on(
            Instant::now().checked_add(timeout),
            &|| format!("no answer from {remote}"),
            &mut |connection| {
                if handshake_completed(connection) || (early && connection.early_data_possible()) {
                    Step::Ready(Ok(()))
                } else if connection.is_closing() {
                    Step::Ready(Err(closed_error(connection)))
                } else {
                    Step::Pending
                }
            },
        );
        if let Err(SiftIoError::Timeout { what, .. }) = result {
            // The connection is abandoned: the error names the full wait.
            return Err(SiftIoError::Timeout {
                what,
                after: timeout,
            });
        }
        result
    }

    fn open(&self, dir: Dir) -> Result<SiftStream, SiftIoError> {
        self.open_marked(dir, false)
    }

    fn open_marked(&self, dir: Dir, replay_safe: bool) -> Result<SiftStream, SiftIoError> {
        let id = self.inner.block_on(
            None,
            &|| "no stream credit".to_string(),
            &mut |connection| {
                // Its data waits for 1-RTT anyway: opened once the server
                // answered 0-RTT, it is not discarded by a rejection.
                if !replay_safe && connection.early_data() == EarlyData::Offered {
                    return if connection.is_closing() {
                        Step::Ready(Err(closed_error(connection)))
                    } else {
                        Step::Pending
                    };
                }
                let opened = match dir {
                    Dir::Bi => connection.stream_open_bi(),
                    Dir::Uni => connection.stream_open_uni(),
                };
                match opened {
                    Ok(id) => {
                        if replay_safe {
                            connection.mark_replay_safe(id);
                        }
                        // Opened before the server answered 0-RTT: the
                        // stream is gone if it refuses.
                        let early = connection.early_data() == EarlyData::Offered;
                        Step::Ready(Ok((id, early)))
                    }
                    // Wait for the peer to grant more streams.
                    Err(Error::Stream(StreamError::StreamsExhausted)) => Step::Pending,
                    Err(Error::Closed) => Step::Ready(Err(closed_error(connection))),
                    Err(other) => Step::Ready(Err(other.into())),
                }
            },
        )?;
        let (id, early) = id;
        Ok(SiftStream::new(Arc::clone(&self.inner), id, early))
    }

    fn accept_stream(&self, dir: Dir) -> Result<SiftStream, SiftIoError> {
        let id = self.inner.block_on_until(
            Wait::Incoming(self.inner.handle, dir),
            None,
            &|| "no stream from the peer".to_string(),
            &mut |connection| match connection.stream_accept(dir) {
                Some(id) => Step::Ready(Ok(id)),
                None if connection.is_closing() => Step::Ready(Err(closed_error(connection))),
                None => Step::Pending,
            },
        )?;
        Ok(SiftStream::new(Arc::clone(&self.inner), id, false))
    }

    /// Opens a bidirectional stream, waiting while the peer's stream limit
    /// is reached. The peer sees it once something is written. On a
    /// connection sending 0-RTT it waits for the handshake: its data could
    /// not leave before, and so a rejected 0-RTT never discards it.
    pub fn open_bi(&self) -> Result<SiftStream, SiftIoError> {
        self.open(Dir::Bi)
    }

    /// Opens a bidirectional stream whose data may go out in 0-RTT, before
    /// the handshake completes (see [`crate::Connection::mark_replay_safe`]):
    /// only for a request whose replay does no harm. If the server rejects
    /// the 0-RTT, the stream is gone ([`SiftStream::is_zero_rtt_rejected`],
    /// [`BlockingConnection::early_data`]): send the request again on a
    /// new stream.
    pub fn open_bi_replay_safe(&self) -> Result<SiftStream, SiftIoError> {
        self.open_marked(Dir::Bi, true)
    }

    /// Opens a unidirectional (send-only) stream (waiting for the
    /// handshake as [`open_bi`](Self::open_bi) does).
    pub fn open_uni(&self) -> Result<SiftStream, SiftIoError> {
        self.open(Dir::Uni)
    }

    /// Waits for the peer's next bidirectional stream.
    pub fn accept_bi(&self) -> Result<SiftStream, SiftIoError> {
        self.accept_stream(Dir::Bi)
    }

    /// Waits for the peer's next unidirectional (receive-only) stream.
    pub fn accept_uni(&self) -> Result<SiftStream, SiftIoError> {
        self.accept_stream(Dir::Uni)
    }

    /// Waits until the handshake completes and says what became of this
    /// client's 0-RTT ([`crate::Connection::early_data`]). On
    /// [`EarlyData::Rejected`] the streams opened before are gone (their
    /// reads and writes fail with [`SiftIoError::ZeroRttRejected`]): open
    /// new ones and send again, if [`alpn_protocol`](Self::alpn_protocol)
    /// is still the protocol they assumed (RFC 9001 §4.6.2).
    pub fn early_data(&self) -> Result<EarlyData, SiftIoError> {
        self.inner.block_on(
            None,
            &|| "the handshake did not complete".to_string(),
            &mut |connection| {
                if handshake_completed(connection) {
                    Step::Ready(Ok(connection.early_data()))
                } else if connection.is_closing() {
                    Step::Ready(Err(closed_error(connection)))
                } else {
                    Step::Pending
                }
            },
        )
    }

    /// Runs `cc` from now on for the data this side sends (see
    /// [`crate::Connection::set_congestion_control`]).
    pub fn set_congestion_control(&self, cc: sift_cc::CcConfig) -> Result<(), SiftIoError> {
        self.inner
            .with(|connection| connection.set_congestion_control(cc))
            .unwrap_or(Err(Error::Closed))
            .map_err(SiftIoError::from)
    }

    /// Counters and estimates of the connection.
    pub fn stats(&self) -> Stats {
        let mut cached = self
            .inner
            .last_stats
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(stats) = self.inner.peek(|connection| connection.stats()) {
            *cached = Some(stats);
        }
        cached.clone().unwrap_or_default()
    }

    /// Where the turns of this connection's endpoint ran so far: on the
    /// application's threads that waited, or on the endpoint's driver
    /// thread (see the [module docs](crate::blocking)).
    pub fn driver_turns(&self) -> super::DriverTurns {
        self.inner.shared.lock().turns_by
    }

    /// Closes the connection with an application error `code` and
    /// `reason`, and waits briefly (at most 250 ms) for the
    /// CONNECTION_CLOSE to leave the socket.
    pub fn close(&self, code: u64, reason: &str) {
        let shared = &self.inner.shared;
        let deadline = Instant::now() + CLOSE_FLUSH_WAIT;
        let mut state = shared.lock();
        let Some(connection) = state.endpoint.connection(self.inner.handle) else {
            return;
        };
        if connection.is_closing() {
            return;
        }
        connection.close(code, reason);
        let closed_at_turn = state.turns;
        // The wait for the flush below drives it out if nobody else does.
        let _ = shared.wake_driver(&mut state);
        while state.flushed_turn <= closed_at_turn
            && state.stopped.is_none()
            && Instant::now() < deadline
        {
            state = shared.wait(state, Wait::Flush, Some(deadline));
        }
    }

    /// Why the connection closed, once it has (or is closing).
    pub fn close_reason(&self) -> Option<CloseReason> {
        self.inner
            .peek(|connection| connection.close_reason().cloned())
            .flatten()
    }

    /// SHA-256 of the certificate the peer presented: on a server that
    /// asks for client certificates, the client's key, proven by its
    /// handshake signature (see
    /// [`Connection::peer_certificate_fingerprint`]). `None` for a client
    /// without a key, under Null protection, and once the connection is
    /// gone.
    pub fn peer_certificate_fingerprint(&self) -> Option<crate::crypto::Fingerprint> {
        self.inner
            .peek(|connection| connection.peer_certificate_fingerprint())
            .flatten()
    }

    /// The ALPN protocol the TLS handshake agreed on (`None` under Null
    /// protection, and once the connection is gone).
    pub fn alpn_protocol(&self) -> Option<Vec<u8>> {
        self.inner
            .peek(|connection| connection.alpn_protocol().map(<[u8]>::to_vec))
            .flatten()
    }

    /// The peer's address.
    pub fn remote_addr(&self) -> SocketAddr {
        self.inner.remote
    }

    /// Our socket's address (the unspecified address for clients).
    pub fn local_addr(&self) -> SocketAddr {
        self.inner.shared.local_addr()
    }

    /// Whether this connection's socket sends without UDP checksums at
    /// this moment (see [`crate::blocking::Listener::checksums_disabled`]).
    pub fn checksums_disabled(&self) -> io::Result<bool> {
        self.inner.shared.checksums_disabled()
    }

    /// Whether this connection's socket accepts datagrams without a UDP
    /// checksum.
    pub fn accepts_zero_checksums(&self) -> io::Result<bool> {
        self.inner.shared.accepts_zero_checksums()
    }

    /// Moves this client connection to a new socket bound at `addr` (port
    /// 0 for any), as when the client changes networks, and returns the
    /// bound address. The connection carries on from there: it says
    /// something from the new address at once, moves to a fresh
    /// connection ID of the server's, and a sift server follows once it
    /// has validated the new address. Datagrams in flight to the old
    /// socket are lost, as on a real move; recovery resends them. A
    /// server connection cannot move: its listener's socket serves every
    /// client. Refused, the old socket kept, while the client may not move
    /// ([`Self::can_migrate`]: RFC 9000 §9, §9.5).
    pub fn rebind(&self, addr: SocketAddr) -> Result<SocketAddr, SiftIoError> {
        let is_client = self
            .inner
            .peek(|connection| connection.side() == crate::Side::Client)
            .ok_or(SiftIoError::Connection(Error::Closed))?;
        if !is_client {
            return Err(SiftIoError::Io(io::Error::new(
                io::ErrorKind::Unsupported,
                "a server connection cannot rebind: its listener's socket serves every client",
            )));
        }
        self.inner.shared.rebind(addr)
    }

    /// The client may move to a new address now ([`Connection::can_migrate`]):
    /// the handshake is confirmed and the server gave a spare connection ID.
    pub fn can_migrate(&self) -> bool {
        self.inner
            .peek(|connection| connection.can_migrate())
            .unwrap_or(false)
    }

    /// Blocks until the client may move ([`Self::can_migrate`]), at most
    /// `timeout`. Fails with [`SiftIoError::Timeout`] if the server gave no
    /// spare connection ID by then, or with the close reason if the
    /// connection closed while waiting.
    pub fn wait_can_migrate(&self, timeout: Duration) -> Result<(), SiftIoError> {
        self.inner.block_on(
            Instant::now().checked_add(timeout),
            &|| "no spare connection ID from the server".to_string(),
            &mut |connection| {
                if connection.can_migrate() {
                    Step::Ready(Ok(()))
                } else if connection.is_closing() {
                    Step::Ready(Err(closed_error(connection)))
                } else {
                    Step::Pending
                }
            },
        )
    }

    /// The handshake completed and the connection is not closing.
    pub fn is_established(&self) -> bool {
        self.inner
            .peek(|connection| connection.is_established())
            .unwrap_or(false)
    }

    /// Sends an unreliable datagram (RFC 9221). Fails at once if it does
    /// not fit or the peer refuses datagrams; never blocks.
    pub fn send_datagram(&self, data: &[u8]) -> Result<(), SiftIoError> {
        self.inner
            .with(|connection| match connection.send_datagram(data) {
                Ok(()) => Ok(()),
                Err(Error::Closed) => Err(closed_error(connection)),
                Err(other) => Err(other.into()),
            })
            .unwrap_or(Err(SiftIoError::Connection(Error::Closed)))
    }

    /// Waits for the next datagram from the peer.
    pub fn recv_datagram(&self) -> Result<Vec<u8>, SiftIoError> {
        self.inner.block_on(
            None,
            &|| "no datagram".to_string(),
            &mut |connection| match connection.recv_datagram() {
                Some(datagram) => Step::Ready(Ok(datagram)),
                None if connection.is_closing() => Step::Ready(Err(closed_error(connection))),
                None => Step::Pending,
            },
        )
    }
}
