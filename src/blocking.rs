//! A blocking API for simple applications: [`connect`], [`Listener`],
//! [`BlockingConnection`] and [`SiftStream`] (`std::io::Read + Write`).
//!
//! Each endpoint (one per `connect`, one per `Listener`) has a driver
//! thread that owns the socket and runs the [`io`](crate::io) event loop.
//! Application threads share the endpoint with it behind a mutex: they call
//! the sans-IO connection directly, wake the driver (a mio `Waker`) when
//! they gave it something to send, and sleep on a condition variable that
//! the driver signals after every turn of its loop.
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

use std::collections::{HashSet, VecDeque};
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use mio::Waker;

use crate::conn::CloseReason;
use crate::endpoint::{ConnectionHandle, Endpoint, EndpointError};
use crate::io::{os_seed, Control, Driver, EndpointHost, SocketOptions};
use crate::stream::{stream_dir, stream_initiator, Dir, StreamError, StreamId};
use crate::{Config, Connection, Error, Stats};

/// How long [`connect`] waits for the handshake unless the configured
/// idle timeout is shorter.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long [`BlockingConnection::close`] waits for the CONNECTION_CLOSE
/// to leave the socket.
const CLOSE_FLUSH_WAIT: Duration = Duration::from_millis(250);

/// What went wrong in the blocking API. Each message names the address,
/// stream or value involved.
#[derive(Debug, thiserror::Error)]
pub enum SiftIoError {
    /// The socket or the event loop failed.
    #[error("I/O error: {0}")]
    Io(#[from] io::Error),
    /// The connection refused the operation.
    #[error(transparent)]
    Connection(#[from] Error),
    /// The endpoint refused (connection limit, bad configuration).
    #[error(transparent)]
    Endpoint(#[from] EndpointError),
    /// The connection is closed; the reason says by whom and why.
    #[error("connection closed: {0}")]
    Closed(CloseReason),
    /// Nothing happened within the allowed time.
    #[error("{what} within {after:?}")]
    Timeout { what: String, after: Duration },
    /// The peer reset the stream.
    #[error("stream {id} was reset by the peer with error code {error_code}")]
    StreamReset { id: StreamId, error_code: u64 },
    /// The peer asked us to stop sending on the stream.
    #[error("the peer stopped stream {id} with error code {error_code}")]
    StreamStopped { id: StreamId, error_code: u64 },
    /// The endpoint's driver thread ended (its socket failed).
    #[error("the endpoint on {local} stopped: {reason}")]
    EndpointStopped { local: SocketAddr, reason: String },
}

impl From<SiftIoError> for io::Error {
    fn from(error: SiftIoError) -> Self {
        let kind = match &error {
            SiftIoError::Io(inner) => inner.kind(),
            SiftIoError::Closed(CloseReason::IdleTimeout) | SiftIoError::Timeout { .. } => {
                io::ErrorKind::TimedOut
            }
            SiftIoError::Closed(_) | SiftIoError::EndpointStopped { .. } => {
                io::ErrorKind::ConnectionAborted
            }
            SiftIoError::StreamReset { .. } => io::ErrorKind::ConnectionReset,
            SiftIoError::StreamStopped { .. } => io::ErrorKind::BrokenPipe,
            SiftIoError::Connection(_) | SiftIoError::Endpoint(_) => io::ErrorKind::Other,
        };
        match error {
            SiftIoError::Io(inner) => inner,
            other => io::Error::new(kind, other),
        }
    }
}

// ---- the shared endpoint -------------------------------------------------

/// Endpoint state shared by the driver thread and application threads.
struct State {
    endpoint: Endpoint,
    /// Connections the application holds (a `BlockingConnection` exists).
    held: HashSet<ConnectionHandle>,
    /// Server connections taken from the endpoint, not yet handed out.
    pending_accept: VecDeque<ConnectionHandle>,
    /// Listener or connection handles alive; the driver stops at zero once
    /// every connection has closed.
    app_handles: usize,
    listening: bool,
    /// Application threads inside `Condvar::wait`.
    waiters: usize,
    /// The driver finished a turn and may sleep next: a change by the
    /// application must wake it.
    driver_may_sleep: bool,
    /// Turns of the driver loop, and the last turn whose datagrams were
    /// written to the socket.
    turns: u64,
    flushed_turn: u64,
    /// Why the driver thread ended, once it has.
    stopped: Option<String>,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    waker: Arc<Waker>,
    local: SocketAddr,
    /// A duplicate of the socket's descriptor, to read its options back.
    socket_fd: OwnedFd,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere must not make every later call panic too.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Wakes the driver if it may be asleep. Call with the lock held, after
    /// giving a connection something to do.
    fn wake_driver(&self, state: &mut State) {
        if state.driver_may_sleep {
            state.driver_may_sleep = false;
            if let Err(error) = self.waker.wake() {
                tracing::warn!(%error, "cannot wake the driver");
            }
        }
    }

    /// Sleeps until the driver signals progress or `deadline` passes.
    fn wait<'a>(
        &self,
        mut state: MutexGuard<'a, State>,
        deadline: Option<Instant>,
    ) -> MutexGuard<'a, State> {
        state.waiters += 1;
        let mut state = match deadline {
            Some(deadline) => {
                let wait = deadline.saturating_duration_since(Instant::now());
                self.changed
                    .wait_timeout(state, wait)
                    .map(|(guard, _)| guard)
                    .unwrap_or_else(|poisoned| poisoned.into_inner().0)
            }
            None => self
                .changed
                .wait(state)
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        };
        state.waiters -= 1;
        state
    }

    fn stopped_error(&self, state: &State) -> Option<SiftIoError> {
        state
            .stopped
            .as_ref()
            .map(|reason| SiftIoError::EndpointStopped {
                local: self.local,
                reason: reason.clone(),
            })
    }

    fn release_handle(&self) {
        let mut state = self.lock();
        state.app_handles = state.app_handles.saturating_sub(1);
        state.driver_may_sleep = true; // force a wake: the driver may stop
        self.wake_driver(&mut state);
    }
}

impl EndpointHost for Shared {
    fn with_endpoint(&self, step: &mut dyn FnMut(&mut Endpoint)) -> Control {
        let mut state = self.lock();
        state.driver_may_sleep = false;
        step(&mut state.endpoint);
        let state = &mut *state;
        while let Some(handle) = state.endpoint.accept() {
            if state.listening {
                state.pending_accept.push_back(handle);
            } else if let Some(connection) = state.endpoint.connection(handle) {
                connection.close(0, "not accepting connections");
            }
        }
        // Connections nobody holds or waits for are dropped once closed.
        let unheld: Vec<ConnectionHandle> = state
            .endpoint
            .handles()
            .filter(|h| !state.held.contains(h) && !state.pending_accept.contains(h))
            .filter(|h| {
                state
                    .endpoint
                    .connection_ref(*h)
                    .is_some_and(|c| c.is_closed())
            })
            .collect();
        for handle in unheld {
            state.endpoint.remove(handle);
        }
        state.turns += 1;
        state.driver_may_sleep = true;
        let all_closed = state.endpoint.handles().all(|h| {
            state
                .endpoint
                .connection_ref(h)
                .is_none_or(|c| c.is_closed())
        });
        let control = if state.app_handles == 0 && all_closed {
            Control::Stop
        } else {
            Control::Continue
        };
        if state.waiters > 0 {
            self.changed.notify_all();
        }
        control
    }

    fn on_flushed(&self) {
        let mut state = self.lock();
        state.flushed_turn = state.turns;
        if state.waiters > 0 {
            self.changed.notify_all();
        }
    }
}

/// Starts an endpoint with its driver thread.
fn start_endpoint(
    bind: SocketAddr,
    server: Option<Config>,
    template: &Config,
    max_connections: usize,
) -> Result<Arc<Shared>, SiftIoError> {
    let options = SocketOptions {
        disable_checksums: template.corruption_notices,
        ..SocketOptions::default()
    };
    let mut driver = Driver::bind(bind, options, template.max_datagram_size)?;
    let local = driver.local_addr();
    let socket_fd = driver.socket().as_fd().try_clone_to_owned()?;
    let listening = server.is_some();
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            endpoint: Endpoint::new(local, server).with_max_connections(max_connections),
            held: HashSet::new(),
            pending_accept: VecDeque::new(),
            app_handles: 1,
            listening,
            waiters: 0,
            driver_may_sleep: false,
            turns: 0,
            flushed_turn: 0,
            stopped: None,
        }),
        changed: Condvar::new(),
        waker: driver.waker(),
        local,
        socket_fd,
    });
    let host = Arc::clone(&shared);
    thread::Builder::new()
        .name(format!("sift-driver {local}"))
        .spawn(move || {
            let result = driver.run(&*host);
            let reason = match result {
                Ok(()) => "every connection closed and no handle is left".to_string(),
                Err(error) => {
                    tracing::error!(%error, %local, "sift driver failed");
                    error.to_string()
                }
            };
            let mut state = host.lock();
            state.stopped = Some(reason);
            host.changed.notify_all();
        })?;
    Ok(shared)
}

/// The unspecified address of `remote`'s family, port 0.
fn any_address_for(remote: SocketAddr) -> SocketAddr {
    if remote.is_ipv6() {
        SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, 0))
    } else {
        SocketAddr::from((std::net::Ipv4Addr::UNSPECIFIED, 0))
    }
}

/// The handshake timeout for `config`: 10 s, or the idle timeout if that
/// is shorter (and not zero, which means none).
fn handshake_timeout(config: &Config) -> Duration {
    if config.idle_timeout.is_zero() {
        DEFAULT_HANDSHAKE_TIMEOUT
    } else {
        config.idle_timeout.min(DEFAULT_HANDSHAKE_TIMEOUT)
    }
}

/// Connects to `remote` from a new endpoint bound to `0.0.0.0:0` (or
/// `[::]:0` for an IPv6 `remote`), and waits for the handshake — at most
/// 10 s, or the configured idle timeout if shorter. The connection-ID seed
/// is drawn from the OS, whatever `config.rng_seed` says.
pub fn connect(remote: SocketAddr, config: Config) -> Result<BlockingConnection, SiftIoError> {
    let shared = start_endpoint(any_address_for(remote), None, &config, 1)?;
    let timeout = handshake_timeout(&config);
    let config = Config {
        rng_seed: os_seed(),
        ..config
    };
    let handle = {
        let mut state = shared.lock();
        let handle = state.endpoint.connect(config, remote, Instant::now());
        let handle = match handle {
            Ok(handle) => handle,
            Err(error) => {
                state.app_handles = 0;
                shared.wake_driver(&mut state);
                return Err(error.into());
            }
        };
        state.held.insert(handle);
        shared.wake_driver(&mut state);
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
    connection.wait_established(timeout)?;
    Ok(connection)
}

// ---- Listener --------------------------------------------------------------

/// A server endpoint: accepts connections on one address.
pub struct Listener {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("local", &self.shared.local)
            .finish()
    }
}

impl Listener {
    /// Binds `addr` and starts accepting connections with `config`
    /// (at most [`DEFAULT_MAX_CONNECTIONS`](crate::endpoint::DEFAULT_MAX_CONNECTIONS)).
    pub fn bind(addr: SocketAddr, config: Config) -> Result<Self, SiftIoError> {
        Self::bind_with_max_connections(addr, config, crate::endpoint::DEFAULT_MAX_CONNECTIONS)
    }

    /// Like [`Listener::bind`], holding at most `max_connections`
    /// connections at once; further clients get no answer.
    pub fn bind_with_max_connections(
        addr: SocketAddr,
        config: Config,
        max_connections: usize,
    ) -> Result<Self, SiftIoError> {
        let server = Config {
            rng_seed: os_seed(),
            ..config.clone()
        };
        let shared = start_endpoint(addr, Some(server), &config, max_connections)?;
        Ok(Self { shared })
    }

    /// The bound address (with the port the kernel chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.shared.local
    }

    /// Whether UDP checksums are off on the socket, read back with
    /// `getsockopt` (they are when the config offers corruption notices).
    pub fn checksums_disabled(&self) -> io::Result<bool> {
        crate::io::checksums_disabled(&self.shared.socket_fd, self.shared.local.is_ipv6())
    }

    /// Waits for the next client whose handshake completed.
    pub fn accept(&self) -> Result<BlockingConnection, SiftIoError> {
        self.accept_until(None)
    }

    /// Like [`Listener::accept`], giving up after `timeout`.
    pub fn accept_timeout(&self, timeout: Duration) -> Result<BlockingConnection, SiftIoError> {
        self.accept_until(Some(Instant::now() + timeout))
            .map_err(|error| match error {
                SiftIoError::Timeout { after, .. } => SiftIoError::Timeout {
                    what: format!("no client connected to {}", self.shared.local),
                    after: after.max(timeout),
                },
                other => other,
            })
    }

    fn accept_until(&self, deadline: Option<Instant>) -> Result<BlockingConnection, SiftIoError> {
        let started = Instant::now();
        let mut state = self.shared.lock();
        loop {
            if let Some(error) = self.shared.stopped_error(&state) {
                return Err(error);
            }
            let state_ref = &mut *state;
            let mut ready = None;
            state_ref.pending_accept.retain(|&handle| {
                match state_ref.endpoint.connection_ref(handle) {
                    Some(c) if c.is_established() && ready.is_none() => {
                        ready = Some((handle, c.remote()));
                        false
                    }
                    Some(c) => !c.is_closed(),
                    None => false,
                }
            });
            if let Some((handle, remote)) = ready {
                state.held.insert(handle);
                state.app_handles += 1;
                drop(state);
                return Ok(BlockingConnection {
                    inner: Arc::new(ConnInner {
                        shared: Arc::clone(&self.shared),
                        handle,
                        remote,
                        last_stats: Mutex::new(None),
                    }),
                });
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(SiftIoError::Timeout {
                    what: format!("no client connected to {}", self.shared.local),
                    after: started.elapsed(),
                });
            }
            state = self.shared.wait(state, deadline);
        }
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        {
            let mut state = self.shared.lock();
            state.listening = false;
            let pending: Vec<ConnectionHandle> = state.pending_accept.drain(..).collect();
            for handle in pending {
                if let Some(connection) = state.endpoint.connection(handle) {
                    connection.close(0, "server shutting down");
                }
            }
        }
        self.shared.release_handle();
    }
}

// ---- BlockingConnection ----------------------------------------------------

/// What one blocking call found.
enum Step<T> {
    Ready(Result<T, SiftIoError>),
    Pending,
}

struct ConnInner {
    shared: Arc<Shared>,
    handle: ConnectionHandle,
    remote: SocketAddr,
    /// Stats as last read, in case the connection is gone.
    last_stats: Mutex<Option<Stats>>,
}

impl ConnInner {
    /// Runs `attempt` on the connection until it is ready, waking the
    /// driver after each attempt and sleeping between them. `deadline`
    /// bounds the wait; `what` names what did not happen for the error.
    fn block_on<T>(
        &self,
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
            if let Step::Ready(result) = step {
                // The attempt handed the connection something (data, a read
                // that frees credit, a new stream): the driver must act.
                self.shared.wake_driver(&mut state);
                return result;
            }
            // A pending attempt changed nothing, so the driver has nothing
            // new to do: waking it would only make it notify us again, a
            // busy loop for as long as we wait.
            if let Some(error) = self.shared.stopped_error(&state) {
                return Err(error);
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(SiftIoError::Timeout {
                    what: what(),
                    after: started.elapsed(),
                });
            }
            state = self.shared.wait(state, deadline);
        }
    }

    /// One non-blocking call on the connection.
    fn with<T>(&self, f: impl FnOnce(&mut Connection) -> T) -> Option<T> {
        let mut state = self.shared.lock();
        let result = state.endpoint.connection(self.handle).map(f);
        self.shared.wake_driver(&mut state);
        result
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
fn closed_error(connection: &Connection) -> SiftIoError {
    match connection.close_reason() {
        Some(reason) => SiftIoError::Closed(reason.clone()),
        None => SiftIoError::Connection(Error::Closed),
    }
}

/// A connection of the blocking API. Clones share it; the connection
/// closes (code 0) when the last clone and its streams are dropped.
#[derive(Clone)]
pub struct BlockingConnection {
    inner: Arc<ConnInner>,
}

impl std::fmt::Debug for BlockingConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockingConnection")
            .field("remote", &self.inner.remote)
            .field("local", &self.inner.shared.local)
            .finish()
    }
}

impl BlockingConnection {
    fn wait_established(&self, timeout: Duration) -> Result<(), SiftIoError> {
        let remote = self.inner.remote;
        let result = self.inner.block_on(
            Some(Instant::now() + timeout),
            &|| format!("no answer from {remote}"),
            &mut |connection| {
                if connection.is_established() {
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
        let id = self.inner.block_on(
            None,
            &|| "no stream credit".to_string(),
            &mut |connection| {
                let opened = match dir {
                    Dir::Bi => connection.stream_open_bi(),
                    Dir::Uni => connection.stream_open_uni(),
                };
                match opened {
                    Ok(id) => Step::Ready(Ok(id)),
                    // Wait for the peer to grant more streams.
                    Err(Error::Stream(StreamError::StreamsExhausted)) => Step::Pending,
                    Err(Error::Closed) => Step::Ready(Err(closed_error(connection))),
                    Err(other) => Step::Ready(Err(other.into())),
                }
            },
        )?;
        Ok(SiftStream::new(Arc::clone(&self.inner), id))
    }

    fn accept_stream(&self, dir: Dir) -> Result<SiftStream, SiftIoError> {
        let id = self.inner.block_on(
            None,
            &|| "no stream from the peer".to_string(),
            &mut |connection| match connection.stream_accept(dir) {
                Some(id) => Step::Ready(Ok(id)),
                None if connection.is_closing() => Step::Ready(Err(closed_error(connection))),
                None => Step::Pending,
            },
        )?;
        Ok(SiftStream::new(Arc::clone(&self.inner), id))
    }

    /// Opens a bidirectional stream, waiting while the peer's stream limit
    /// is reached. The peer sees it once something is written.
    pub fn open_bi(&self) -> Result<SiftStream, SiftIoError> {
        self.open(Dir::Bi)
    }

    /// Opens a unidirectional (send-only) stream.
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

    /// Counters and estimates of the connection.
    pub fn stats(&self) -> Stats {
        let mut cached = self
            .inner
            .last_stats
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(stats) = self.inner.with(|connection| connection.stats()) {
            *cached = Some(stats);
        }
        cached.clone().unwrap_or_else(empty_stats)
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
        shared.wake_driver(&mut state);
        while state.flushed_turn <= closed_at_turn
            && state.stopped.is_none()
            && Instant::now() < deadline
        {
            state = shared.wait(state, Some(deadline));
        }
    }

    /// Why the connection closed, once it has (or is closing).
    pub fn close_reason(&self) -> Option<CloseReason> {
        self.inner
            .with(|connection| connection.close_reason().cloned())
            .flatten()
    }

    /// The peer's address.
    pub fn remote_addr(&self) -> SocketAddr {
        self.inner.remote
    }

    /// Our socket's address (the unspecified address for clients).
    pub fn local_addr(&self) -> SocketAddr {
        self.inner.shared.local
    }

    /// Whether UDP checksums are off on this connection's socket.
    pub fn checksums_disabled(&self) -> io::Result<bool> {
        let shared = &self.inner.shared;
        crate::io::checksums_disabled(&shared.socket_fd, shared.local.is_ipv6())
    }

    /// The handshake completed and the connection is not closing.
    pub fn is_established(&self) -> bool {
        self.inner
            .with(|connection| connection.is_established())
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

/// Stats for a connection that was never seen (cannot happen while a
/// handle exists; kept so `stats` never panics).
fn empty_stats() -> Stats {
    Stats {
        packets_sent: 0,
        packets_received: 0,
        bytes_sent: 0,
        bytes_received: 0,
        packets_lost: 0,
        retransmitted_packets: 0,
        ptos: 0,
        congestion_events: 0,
        corruption_notices_received: 0,
        corruption_notices_ignored: 0,
        corruption_notices_sent: 0,
        payload_corrupt_received: 0,
        header_corrupt_dropped: 0,
        malformed_dropped: 0,
        corruption_notices_negotiated: false,
        cwnd: 0,
        ssthresh: 0,
        bytes_in_flight: 0,
        srtt_us: 0,
        min_rtt_us: 0,
        rttvar_us: 0,
        cc: crate::cc::Metrics {
            algorithm: String::new(),
            cwnd: 0,
            ssthresh: 0,
            phase: crate::cc::Phase::SlowStart,
            last_verdict: None,
            fields: Default::default(),
        },
    }
}

// ---- SiftStream ------------------------------------------------------------

/// One stream of a [`BlockingConnection`]: `Read` returns `Ok(0)` at the
/// peer's FIN, `Write` blocks while the send buffer is full.
pub struct SiftStream {
    conn: Arc<ConnInner>,
    id: StreamId,
    /// We may send on it (bidirectional, or our unidirectional stream).
    sends: bool,
    /// We may receive on it.
    receives: bool,
    /// FIN written or stream reset: no more writes.
    send_done: bool,
    /// FIN read (or reset seen): reads return `Ok(0)` / the error again.
    recv_done: bool,
}

impl std::fmt::Debug for SiftStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SiftStream")
            .field("id", &self.id)
            .field("remote", &self.conn.remote)
            .finish()
    }
}

impl SiftStream {
    fn new(conn: Arc<ConnInner>, id: StreamId) -> Self {
        let side = conn
            .with(|connection| connection.side())
            .unwrap_or(crate::Side::Client);
        let ours = stream_initiator(id) == side;
        let bidirectional = stream_dir(id) == Dir::Bi;
        Self {
            conn,
            id,
            sends: ours || bidirectional,
            receives: !ours || bidirectional,
            send_done: false,
            recv_done: false,
        }
    }

    /// The stream ID (RFC 9000 §2.1).
    pub fn id(&self) -> StreamId {
        self.id
    }

    /// Ends the sending half: the peer reads `Ok(0)` after the data
    /// written so far. Does not wait; doing it twice changes nothing.
    pub fn finish(&mut self) -> Result<(), SiftIoError> {
        if self.send_done {
            return Ok(());
        }
        let id = self.id;
        self.conn
            .with(|connection| match connection.stream_send(id, &[], true) {
                Ok(_) => Ok(()),
                Err(Error::Closed) => Err(closed_error(connection)),
                Err(other) => Err(stream_error(other)),
            })
            .unwrap_or(Err(SiftIoError::Connection(Error::Closed)))?;
        self.send_done = true;
        Ok(())
    }

    /// Finishes the stream and waits until the peer acknowledged all of it
    /// (or the connection closes, which is an error).
    pub fn finish_and_wait(&mut self) -> Result<(), SiftIoError> {
        self.finish()?;
        let id = self.id;
        self.conn.block_on(
            None,
            &|| format!("stream {id} not acknowledged"),
            &mut |connection| {
                if connection.stream_finished_sending(id) {
                    Step::Ready(Ok(()))
                } else if connection.is_closing() {
                    Step::Ready(Err(closed_error(connection)))
                } else {
                    Step::Pending
                }
            },
        )
    }

    /// Abandons the sending half with `error_code` (RESET_STREAM): data not
    /// yet delivered is dropped, the peer's reads fail with the code.
    pub fn reset(&mut self, error_code: u64) -> Result<(), SiftIoError> {
        let id = self.id;
        self.conn
            .with(|connection| match connection.stream_reset(id, error_code) {
                Ok(()) => Ok(()),
                Err(Error::Closed) => Err(closed_error(connection)),
                Err(other) => Err(stream_error(other)),
            })
            .unwrap_or(Err(SiftIoError::Connection(Error::Closed)))?;
        self.send_done = true;
        Ok(())
    }

    /// Asks the peer to stop sending (STOP_SENDING `error_code`); later
    /// reads fail.
    pub fn stop_sending(&mut self, error_code: u64) -> Result<(), SiftIoError> {
        let id = self.id;
        self.conn
            .with(
                |connection| match connection.stream_stop_sending(id, error_code) {
                    Ok(()) => Ok(()),
                    Err(Error::Closed) => Err(closed_error(connection)),
                    Err(other) => Err(stream_error(other)),
                },
            )
            .unwrap_or(Err(SiftIoError::Connection(Error::Closed)))?;
        self.recv_done = true;
        Ok(())
    }

    /// The connection this stream belongs to.
    pub fn connection(&self) -> BlockingConnection {
        BlockingConnection {
            inner: Arc::clone(&self.conn),
        }
    }
}

/// Stream-level refusals, with the peer's codes kept apart.
fn stream_error(error: Error) -> SiftIoError {
    match error {
        Error::Stream(StreamError::Reset { id, error_code }) => {
            SiftIoError::StreamReset { id, error_code }
        }
        Error::Stream(StreamError::Stopped { id, error_code }) => {
            SiftIoError::StreamStopped { id, error_code }
        }
        other => SiftIoError::Connection(other),
    }
}

impl Read for SiftStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.recv_done || buf.is_empty() {
            return Ok(0);
        }
        let id = self.id;
        let mut fin = false;
        let result = self.conn.block_on(
            None,
            &|| format!("no data on stream {id}"),
            &mut |connection| match connection.stream_recv(id, buf) {
                Ok((read, at_end)) => {
                    fin = at_end;
                    Step::Ready(Ok(read))
                }
                Err(Error::Stream(StreamError::Blocked)) if connection.is_closing() => {
                    Step::Ready(Err(closed_error(connection)))
                }
                Err(Error::Stream(StreamError::Blocked)) => Step::Pending,
                Err(Error::Closed) => Step::Ready(Err(closed_error(connection))),
                Err(other) => Step::Ready(Err(stream_error(other))),
            },
        );
        if fin {
            self.recv_done = true;
        }
        Ok(result?)
    }
}

impl Write for SiftStream {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if data.is_empty() {
            return Ok(0);
        }
        let id = self.id;
        let written = self.conn.block_on(
            None,
            &|| format!("no room on stream {id}"),
            &mut |connection| match connection.stream_send(id, data, false) {
                Ok(written) => Step::Ready(Ok(written)),
                Err(Error::Stream(StreamError::Blocked)) => Step::Pending,
                Err(Error::Closed) => Step::Ready(Err(closed_error(connection))),
                Err(other) => Step::Ready(Err(stream_error(other))),
            },
        )?;
        Ok(written)
    }

    /// Returns at once: written data is already with the connection. Use
    /// [`SiftStream::finish_and_wait`] to wait for acknowledgement.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for SiftStream {
    fn drop(&mut self) {
        let id = self.id;
        let finish = self.sends && !self.send_done;
        let stop = self.receives && !self.recv_done;
        if finish || stop {
            self.conn.with(|connection| {
                if finish {
                    let _ = connection.stream_send(id, &[], true);
                }
                if stop {
                    let _ = connection.stream_stop_sending(id, 0);
                }
            });
        }
    }
}
