//! An endpoint of the async API: one UDP socket, its driver task, and the
//! connections made or accepted on it.

use std::future::poll_fn;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Poll, Waker};
use std::time::Instant;

use super::connection::{ConnInner, Connection};
use super::driver::EndpointDriver;
use super::error::{BindError, ConnectError, ConnectionError};
use super::shared::Shared;
use crate::endpoint::{EndpointStats, TokenLedger, WorkerLoads, DEFAULT_MAX_CONNECTIONS};
use crate::io::{connect_timeout, os_entropy, os_seed, token_clock, Datapath, SocketOptions};
use crate::wire::steering::MAX_WORKERS;
use crate::{Config, Side};

/// How an endpoint is bound: whether it accepts connections, the
/// configuration of the connections it makes, and how many it holds.
#[derive(Clone, Debug)]
pub struct EndpointConfig {
    /// Accept connections, each with this configuration (`None`: a client
    /// endpoint, which only makes connections).
    pub server: Option<Config>,
    /// The configuration of connections made with [`Endpoint::connect`].
    pub client: Config,
    /// Connections held at once, including closed ones whose handles are
    /// still alive; further client Initials get no answer.
    pub max_connections: usize,
    /// Bytes of send buffer shared among the connections
    /// (`sift::Endpoint::with_send_budget`; split evenly among workers):
    /// each connection's share is the floor and the ceiling of its send
    /// buffers, so a server of thousands of clients neither buffers each
    /// response whole nor by windows grown while they queue. `None`: each
    /// connection keeps its config's (`StreamConfig::send_buffer` up to
    /// `max_connection_send_buffer`).
    pub send_budget: Option<u64>,
}

impl EndpointConfig {
    /// A client endpoint: connections made with `config`.
    pub fn client(config: Config) -> Self {
        Self {
            server: None,
            client: config,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            send_budget: None,
        }
    }

    /// A server endpoint that accepts connections with `config` (and can
    /// also make connections with it).
    pub fn server(config: Config) -> Self {
        Self {
            server: Some(config.clone()),
            client: config,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            send_budget: None,
        }
    }
}

/// What the `Endpoint` handles share; dropping the last one stops
/// accepting.
#[derive(Debug)]
struct EndpointInner {
    shared: Arc<Shared>,
    client: Config,
    /// How the socket was set up, for `rebind`.
    options: SocketOptions,
    max_datagram: usize,
}

impl Drop for EndpointInner {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.endpoint_held = false;
        state.refuse_incoming("server shutting down");
        state.sweep_all = true;
        state.wake_driver();
    }
}

/// One UDP socket that makes and accepts connections, driven by one tokio
/// task. Clones share it.
///
/// The driver task runs while an `Endpoint` clone or a connection (or a
/// stream of one) is alive, or a connection is still closing; then it
/// ends and the socket is closed. Dropping every `Endpoint` clone stops
/// accepting but leaves the connections already handed out working.
#[derive(Clone, Debug)]
pub struct Endpoint {
    inner: Arc<EndpointInner>,
}

impl Endpoint {
    /// A client endpoint bound to `addr` (`0.0.0.0:0` or `[::]:0` for any
    /// port) whose connections use `config`.
    pub fn client(addr: SocketAddr, config: Config) -> Result<Self, BindError> {
        Self::bind(addr, EndpointConfig::client(config))
    }

    /// A server endpoint bound to `addr` that accepts connections with
    /// `config` and can also make them.
    pub fn server(addr: SocketAddr, config: Config) -> Result<Self, BindError> {
        Self::bind(addr, EndpointConfig::server(config))
    }

    /// Binds a UDP socket at `addr` and spawns the endpoint's driver task
    /// on the current tokio runtime, which must have I/O and time enabled
    /// (as `#[tokio::main]` and `#[tokio::test]` have). With corruption
    /// notices offered in either configuration, the socket accepts
    /// datagrams without a UDP checksum, and each connection sends without
    /// one only while its path loses or damages packets (`conn::checksums`).
    /// Connection IDs come from the operating system's RNG, whatever
    /// `rng_seed` says. A server config with a preferred address
    /// (`Config::preferred_address`) binds a socket on each of its
    /// addresses too, served by the same endpoint and driver task.
    pub fn bind(addr: SocketAddr, config: EndpointConfig) -> Result<Self, BindError> {
        let runtime = ::tokio::runtime::Handle::try_current().map_err(|_| BindError::NoRuntime)?;
        if let Some(server) = &config.server {
            // Refuse to start rather than fail every client.
            server
                .validate(crate::Side::Server)
                .map_err(BindError::Config)?;
        }
        let configs = || config.server.iter().chain([&config.client]);
        let options = SocketOptions {
            disable_checksums: configs().any(|c| c.corruption_notices),
            ..SocketOptions::default()
        };
        let max_datagram = configs()
            .map(|c| c.largest_datagram_size())
            .max()
            .unwrap_or(0);
        let datapath = Datapath::bind(addr, options, max_datagram)
            .map_err(|source| BindError::Io { addr, source })?;
        // A server serves on its preferred addresses too (RFC 9000 §9.6).
        let preferred = config
            .server
            .iter()
            .filter_map(|server| server.preferred_address)
            .flat_map(|addresses| addresses.iter().collect::<Vec<_>>())
            .map(|addr| {
                Datapath::bind(addr, options, max_datagram)
                    .map_err(|source| BindError::Io { addr, source })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let server = config.server.clone().map(|server| Config {
            rng_seed: os_seed(),
            entropy: Some(os_entropy()),
            ..server
        });
        let endpoint = crate::Endpoint::new(datapath.local_addr(), server)
            .with_max_connections(config.max_connections)
            .with_send_budget(config.send_budget)
            .with_token_ledger(TokenLedger::new(token_clock()))
            .with_socket_receive_bytes(datapath.socket_report().receive_payload_bytes());
        Self::start(
            &runtime,
            (datapath, preferred),
            endpoint,
            &config,
            options,
            max_datagram,
        )
    }

    /// `workers` server endpoints on one address, for a server that uses
    /// every core: each has its own `SO_REUSEPORT` socket and driver task,
    /// the kernel routes every datagram to the worker its connection ID
    /// names (so a client whose address changes keeps its worker), and a
    /// busier worker sends a new client to a lighter one with a Retry (which
    /// needs `server_secret`). `max_connections` is shared out among them.
    /// Accept on every returned endpoint: each hands out its own clients.
    /// This is `sift-server --workers N` (and the blocking API's
    /// `Listener::bind_workers`) for tokio; on a multi-threaded runtime the
    /// driver tasks run in parallel, but a busy one moves between the
    /// runtime's threads: [`Endpoint::bind_workers_on`] gives each a
    /// runtime of its own.
    pub fn bind_workers(
        addr: SocketAddr,
        config: EndpointConfig,
        workers: usize,
    ) -> Result<Vec<Self>, BindError> {
        let runtime = ::tokio::runtime::Handle::try_current().map_err(|_| BindError::NoRuntime)?;
        Self::bind_workers_on(addr, config, &vec![runtime; workers])
    }

    /// [`Endpoint::bind_workers`] with worker `i`'s driver task on
    /// `runtimes[i]` (one worker per runtime), which must have I/O and
    /// time enabled. Give each worker a current-thread runtime on a thread
    /// of its own and its packets stay on that thread: on a multi-threaded
    /// runtime shared by the drivers, a busy driver hopped between the
    /// threads, which woke each other for it some 5 000 times per GiB
    /// downloaded, and the server spent 6% more CPU on a loopback download
    /// (`sift-server` runs its workers this way). The endpoints themselves
    /// may be used from any runtime.
    pub fn bind_workers_on(
        addr: SocketAddr,
        config: EndpointConfig,
        runtimes: &[::tokio::runtime::Handle],
    ) -> Result<Vec<Self>, BindError> {
        let workers = runtimes.len();
        let invalid = |what: String| BindError::Config(crate::conn::Error::InvalidConfig(what));
        let Some(server) = &config.server else {
            return Err(invalid(
                "workers accept connections: give a server configuration".into(),
            ));
        };
        server
            .validate(crate::Side::Server)
            .map_err(BindError::Config)?;
        if config.max_connections < workers {
            return Err(invalid(format!(
                "{workers} workers need room for at least {workers} connections, not {}",
                config.max_connections
            )));
        }
        if workers > 1 && server.preferred_address.is_some() {
            return Err(invalid(
                "a preferred address is served by one worker: bind one endpoint".into(),
            ));
        }
        if !(1..=MAX_WORKERS).contains(&workers) {
            return Err(invalid(format!(
                "workers must be 1..={MAX_WORKERS}, not {workers}"
            )));
        }
        let options = SocketOptions {
            disable_checksums: server.corruption_notices || config.client.corruption_notices,
            ..SocketOptions::default()
        };
        let max_datagram = server
            .largest_datagram_size()
            .max(config.client.largest_datagram_size());
        let datapaths = Datapath::bind_workers(addr, options, max_datagram, workers)
            .map_err(|source| BindError::Io { addr, source })?;
        let loads = WorkerLoads::new(workers, config.max_connections);
        // One clock and one record of spent tokens for every worker.
        let ledger = TokenLedger::new(token_clock());
        datapaths
            .into_iter()
            .zip(runtimes)
            .map(|(datapath, runtime)| {
                let server = Config {
                    rng_seed: os_seed(),
                    entropy: Some(os_entropy()),
                    // The worker and the key its socket group steers by.
                    cid_steering: datapath.cid_steering(),
                    ..server.clone()
                };
                let endpoint = crate::Endpoint::new(datapath.local_addr(), Some(server))
                    .with_max_connections(config.max_connections)
                    .with_send_budget(config.send_budget.map(|budget| budget / workers as u64))
                    .with_worker_loads(Arc::clone(&loads))
                    .with_token_ledger(ledger.clone())
                    .with_socket_receive_bytes(datapath.socket_report().receive_payload_bytes());
                Self::start(
                    runtime,
                    (datapath, Vec::new()),
                    endpoint,
                    &config,
                    options,
                    max_datagram,
                )
            })
            .collect()
    }

    /// `endpoint` on `datapath` (and a server's sockets on its preferred
    /// addresses) with its driver task spawned on `runtime`.
    fn start(
        runtime: &::tokio::runtime::Handle,
        (datapath, preferred): (Datapath, Vec<Datapath>),
        endpoint: crate::Endpoint,
        config: &EndpointConfig,
        options: SocketOptions,
        max_datagram: usize,
    ) -> Result<Self, BindError> {
        let local = datapath.local_addr();
        let shared = Arc::new(Shared::new(endpoint));
        // The driver's socket and timer register with `runtime`'s reactor.
        let _entered = runtime.enter();
        let driver =
            EndpointDriver::new(Arc::clone(&shared), datapath, preferred).map_err(|source| {
                BindError::Io {
                    addr: local,
                    source,
                }
            })?;
        runtime.spawn(driver);
        Ok(Self {
            inner: Arc::new(EndpointInner {
                shared,
                client: config.client.clone(),
                options,
                max_datagram,
            }),
        })
    }

    /// The bound address (with the port the kernel chose for port 0), the
    /// latest one after [`Endpoint::rebind`].
    pub fn local_addr(&self) -> SocketAddr {
        self.inner.shared.lock().endpoint.local_addr()
    }

    /// Moves the endpoint to a new UDP socket bound at `addr` (port 0: any
    /// port), as when a client changes networks, and returns its address.
    /// Connections carry on: their packets now leave from the new address,
    /// and servers that migrate (sift's do, once the handshake is
    /// confirmed) follow after validating it. Datagrams already in flight
    /// to the old socket are lost, as on a real move; recovery resends.
    ///
    /// Refused with [`BindError::MoveRefused`], the old socket kept, while
    /// a connection may not move ([`Connection::migratable`]): before its
    /// handshake is confirmed, without a spare connection ID of the
    /// server's, when the server disabled active migration, or on a
    /// server (RFC 9000 §9).
    ///
    /// [`Connection::migratable`]: super::Connection::migratable
    pub fn rebind(&self, addr: SocketAddr) -> Result<SocketAddr, BindError> {
        self.inner
            .shared
            .lock()
            .endpoint
            .may_rebind(addr)
            .map_err(BindError::MoveRefused)?;
        let datapath = Datapath::bind(addr, self.inner.options, self.inner.max_datagram)
            .map_err(|source| BindError::Io { addr, source })?;
        let bound = datapath.local_addr();
        let mut state = self.inner.shared.lock();
        // The connections move now, not when the driver next looks: a turn
        // already under way could otherwise answer the next request on the
        // old path and connection ID.
        state
            .endpoint
            .rebound(bound)
            .map_err(BindError::MoveRefused)?;
        state.rebind = Some(datapath);
        state.wake_driver();
        Ok(bound)
    }

    /// Connects to `remote` with the endpoint's client configuration and
    /// waits for the handshake (see [`connect_with`](Self::connect_with)).
    pub async fn connect(
        &self,
        remote: SocketAddr,
        server_name: &str,
    ) -> Result<Connection, ConnectError> {
        self.connect_with(self.inner.client.clone(), remote, server_name)
            .await
    }

    /// Connects to `remote` with `config` and waits for the handshake: at
    /// most [`CONNECT_TIMEOUT`](crate::io::CONNECT_TIMEOUT) (10 s), or the configured idle timeout if that is shorter. Dropping
    /// the future abandons the connection.
    ///
    /// `server_name` is the name the server is known by
    /// ([`Connection::server_name`]). With TLS it is sent as SNI and, under
    /// [`ServerTrust::Roots`](crate::crypto::ServerTrust::Roots), is the
    /// name the server's certificate must carry, unless `config.tls`
    /// names the server itself; an empty name means the server's IP
    /// address. Pinned trust checks the key, not the name. Null protection
    /// authenticates nothing and only records it.
    pub async fn connect_with(
        &self,
        config: Config,
        remote: SocketAddr,
        server_name: &str,
    ) -> Result<Connection, ConnectError> {
        let shared = &self.inner.shared;
        let local = shared.local;
        if remote.is_ipv6() != local.is_ipv6() {
            return Err(ConnectError::AddressFamily { remote, local });
        }
        let handshake_timeout = connect_timeout(&config);
        let mut config = Config {
            rng_seed: os_seed(),
            entropy: Some(os_entropy()),
            ..config
        };
        if config.tls.server_name.is_none() && !server_name.is_empty() {
            config.tls.server_name = Some(server_name.to_string());
        }
        let inner = {
            let mut state = shared.lock();
            if state.closed {
                return Err(ConnectError::EndpointClosed { local });
            }
            if let Some(reason) = &state.stopped {
                let source = ConnectionError::EndpointStopped {
                    local,
                    reason: reason.clone(),
                };
                return Err(ConnectError::Connection { remote, source });
            }
            let handle = state.endpoint.connect(config, remote, Instant::now())?;
            state.wake_driver();
            let name = Some(server_name.to_string());
            ConnInner::register(&mut state, shared, handle, remote, Side::Client, name)
        };
        let connection = Connection { inner };
        let timed_out = ConnectError::TimedOut {
            remote,
            after: handshake_timeout,
        };
        match ::tokio::time::timeout(handshake_timeout, connection.established()).await {
            Ok(Ok(())) => Ok(connection),
            Ok(Err(ConnectionError::TimedOut)) | Err(_) => Err(timed_out),
            Ok(Err(source)) => Err(ConnectError::Connection { remote, source }),
        }
    }

    /// Waits for the next client whose handshake completed, or whose 0-RTT
    /// data was accepted: its replay-safe requests can be served half a
    /// round trip earlier. What arrives before the handshake completes may
    /// be a replay ([`Connection::in_early_data`]); act on anything else
    /// only after [`Connection::handshake_completed`]. `None` once the
    /// endpoint is closed, or at once for a client endpoint.
    pub async fn accept(&self) -> Option<Connection> {
        let shared = &self.inner.shared;
        poll_fn(|cx| {
            let mut state = shared.lock();
            if !state.accepting() || state.stopped.is_some() {
                return Poll::Ready(None);
            }
            let endpoint = &state.endpoint;
            let ready = state
                .incoming
                .iter()
                .enumerate()
                .find_map(|(index, handle)| {
                    let connection = endpoint.connection_ref(*handle)?;
                    (connection.is_established() || connection.in_early_data())
                        .then(|| (index, *handle, connection.remote()))
                });
            let Some((index, handle, remote)) = ready else {
                state.accept_waiters.register(cx.waker());
                return Poll::Pending;
            };
            state.incoming.remove(index);
            let inner = ConnInner::register(&mut state, shared, handle, remote, Side::Server, None);
            Poll::Ready(Some(Connection { inner }))
        })
        .await
    }

    /// Closes every connection with application error `code` and `reason`
    /// and stops making and accepting connections: pending and later
    /// `accept` calls return `None`, `connect` fails. Does not wait; see
    /// [`wait_idle`](Self::wait_idle).
    pub fn close(&self, code: u64, reason: &str) {
        let mut to_wake = Vec::new();
        {
            let mut state = self.inner.shared.lock();
            state.closed = true;
            let handles: Vec<_> = state.endpoint.handles().collect();
            for handle in handles {
                if let Some(connection) = state.endpoint.connection(handle) {
                    connection.close(code, reason);
                }
            }
            state.incoming.clear();
            state.take_all_waiters(&mut to_wake);
            state.wake_driver();
        }
        to_wake.into_iter().for_each(Waker::wake);
    }

    /// Waits until every connection of the endpoint has closed and its
    /// closing period ended, so that each peer got our CONNECTION_CLOSE
    /// (or went silent). Call it after [`close`](Self::close) before the
    /// program exits.
    pub async fn wait_idle(&self) {
        let shared = &self.inner.shared;
        poll_fn(|cx| {
            let mut state = shared.lock();
            if state.all_closed() || state.stopped.is_some() {
                Poll::Ready(())
            } else {
                state.idle_waiters.register(cx.waker());
                Poll::Pending
            }
        })
        .await
    }

    /// Counters of routed and dropped datagrams.
    pub fn stats(&self) -> EndpointStats {
        self.inner.shared.lock().endpoint.stats().clone()
    }
}
