//! The server side of the blocking API: a bound endpoint that hands out
//! connections once their handshake completes.

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::connection::{BlockingConnection, ConnInner};
use super::shared::{start_endpoint, start_workers, Shared, Wait};
use super::SiftIoError;
use crate::endpoint::ConnectionHandle;
use crate::io::{os_entropy, os_seed};
use crate::wire::steering::MAX_WORKERS;
use crate::Config;

/// A server endpoint: accepts connections on one address.
pub struct Listener {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("local", &self.shared.local_addr())
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
        config.validate(crate::Side::Server)?;
        let server = Config {
            rng_seed: os_seed(),
            entropy: Some(os_entropy()),
            ..config.clone()
        };
        let shared = start_endpoint(addr, Some(server), &config, max_connections)?;
        Ok(Self { shared })
    }

    /// A multi-core server: `workers` listeners on the same address, one
    /// endpoint and driver thread each (`sift-worker N`), on `SO_REUSEPORT`
    /// sockets among which the kernel routes every datagram by its
    /// connection ID, so a client stays with its worker when its address
    /// changes, and new clients go to the least busy worker (by Retry, when
    /// `config` has a server secret). `max_connections` (at least
    /// `workers`) is shared out among them. Each listener is accepted from
    /// on its own (typically one thread per listener).
    /// Listener `i` is worker `i`; port 0 puts all of them on one free
    /// port. All share `config`'s server secret, so Retry tokens and reset
    /// tokens of one worker hold at every other.
    pub fn bind_workers(
        addr: SocketAddr,
        config: Config,
        max_connections: usize,
        workers: usize,
    ) -> Result<Vec<Self>, SiftIoError> {
        config.validate(crate::Side::Server)?;
        if max_connections < workers {
            return Err(SiftIoError::Io(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{workers} workers need room for at least {workers} connections, not {max_connections}"),
            )));
        }
        if !(1..=MAX_WORKERS).contains(&workers) {
            return Err(SiftIoError::Io(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("workers must be 1..={MAX_WORKERS}, not {workers}"),
            )));
        }
        let servers = (0..workers)
            .map(|_| Config {
                rng_seed: os_seed(),
                entropy: Some(os_entropy()),
                ..config.clone()
            })
            .collect();
        let shared = start_workers(addr, servers, &config, max_connections)?;
        Ok(shared.into_iter().map(|shared| Self { shared }).collect())
    }

    /// The bound address (with the port the kernel chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.shared.local_addr()
    }

    /// Whether the socket sends without UDP checksums at this moment, read
    /// back with `getsockopt`. With corruption notices offered that changes
    /// with the paths: checksum-free while a connection's path loses or
    /// damages packets, checksummed (and offloaded) while they are clean.
    pub fn checksums_disabled(&self) -> io::Result<bool> {
        self.shared.checksums_disabled()
    }

    /// Whether the socket accepts datagrams without a UDP checksum (it does
    /// when the config offers corruption notices), read back with
    /// `getsockopt`.
    pub fn accepts_zero_checksums(&self) -> io::Result<bool> {
        self.shared.accepts_zero_checksums()
    }

    /// Waits for the next client whose handshake completed.
    pub fn accept(&self) -> Result<BlockingConnection, SiftIoError> {
        self.accept_until(None)
    }

    /// Like [`Listener::accept`], giving up after `timeout` with
    /// [`SiftIoError::Timeout`] (a timeout too large for the clock waits
    /// forever).
    pub fn accept_timeout(&self, timeout: Duration) -> Result<BlockingConnection, SiftIoError> {
        self.accept_until(Instant::now().checked_add(timeout))
            .map_err(|error| match error {
                SiftIoError::Timeout { .. } => SiftIoError::Timeout {
                    what: format!("no client connected to {}", self.shared.local_addr()),
                    after: timeout,
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
                    what: format!("no client connected to {}", state.endpoint.local_addr()),
                    after: started.elapsed(),
                });
            }
            state = self.shared.wait(state, Wait::Accept, deadline);
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
