//! The endpoint shared between its driver thread and application
//! threads: the state behind the mutex, the condition variables the driver
//! signals (one per thing a thread waits for: [`Wait`]), the waker that
//! rouses the driver, and the driver thread itself.

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::Instant;

use mio::Waker;

use super::SiftIoError;
use crate::endpoint::{ConnectionHandle, Endpoint, TokenLedger, WorkerLoads};
use crate::io::{Control, Datapath, Driver, EndpointHost, Progress, SocketOptions};
use crate::stream::Dir;
use crate::Config;

/// Endpoint state shared by the driver thread and application threads.
pub(super) struct State {
    pub(super) endpoint: Endpoint,
    /// Connections the application holds (a `BlockingConnection` exists).
    pub(super) held: HashSet<ConnectionHandle>,
    /// Server connections taken from the endpoint, not yet handed out.
    pub(super) pending_accept: VecDeque<ConnectionHandle>,
    /// Listener or connection handles alive; the driver stops at zero once
    /// every connection has closed.
    pub(super) app_handles: usize,
    pub(super) listening: bool,
    /// Application threads asleep, by what they wait for: the driver wakes
    /// only those its step may concern, not every thread of the endpoint.
    waiting: HashMap<Wait, Sleepers>,
    /// The driver finished a turn and may sleep next: a change by the
    /// application must wake it.
    pub(super) driver_may_sleep: bool,
    /// Turns of the driver loop, and the last turn whose datagrams were
    /// written to the socket.
    pub(super) turns: u64,
    pub(super) flushed_turn: u64,
    /// Why the driver thread ended, once it has.
    pub(super) stopped: Option<String>,
    /// A handle was dropped since the driver last looked for connections
    /// to remove.
    pub(super) handle_released: bool,
    /// What the driver's last step changed (kept to reuse its allocation).
    pub(super) progress: Progress,
    /// A socket to move to, bound by `rebind`, for the driver to take.
    pub(super) rebind: Option<Datapath>,
}

impl State {
    /// Drops connections that are closed and that nobody holds or waits
    /// to accept: every connection after a handle was let go (which one is
    /// not known here), otherwise only those the last step touched (a
    /// connection closes on a datagram or a timer), so that a step costs
    /// what happened in it, not the number of connections.
    fn remove_unheld_closed(&mut self, sweep_all: bool) {
        let candidates: Vec<ConnectionHandle> = if sweep_all {
            self.endpoint.handles().collect()
        } else {
            let progress = &self.progress;
            progress
                .routed
                .iter()
                .chain(&progress.timed_out)
                .copied()
                .collect()
        };
        let unheld: Vec<ConnectionHandle> = candidates
            .into_iter()
            .filter(|h| !self.held.contains(h) && !self.pending_accept.contains(h))
            .filter(|h| {
                self.endpoint
                    .connection_ref(*h)
                    .is_some_and(|c| c.is_closed())
            })
            .collect();
        for handle in unheld {
            self.endpoint.remove(handle);
        }
    }

    fn all_closed(&self) -> bool {
        self.endpoint.handles().all(|h| {
            self.endpoint
                .connection_ref(h)
                .is_none_or(|c| c.is_closed())
        })
    }
}

/// What an application thread sleeps until.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Wait {
    /// A client to accept (a new one, or a pending one's handshake moved).
    Accept,
    /// Anything of one connection: its streams, datagrams, handshake, close.
    Connection(ConnectionHandle),
    /// A stream the peer opened on one connection (or its close): woken
    /// only when there is one, not by every datagram of the connection.
    Incoming(ConnectionHandle, Dir),
    /// The driver to write a turn's datagrams to the socket.
    Flush,
}

/// The threads asleep on one [`Wait`], and what wakes them.
#[derive(Debug)]
struct Sleepers {
    condvar: Arc<Condvar>,
    count: usize,
}

impl State {
    /// Wakes the threads waiting for `wait`, if any.
    fn wake(&self, wait: Wait) {
        if let Some(sleepers) = self.waiting.get(&wait) {
            sleepers.condvar.notify_all();
        }
    }

    /// Wakes every application thread (the driver stopped).
    fn wake_all(&self) {
        for sleepers in self.waiting.values() {
            sleepers.condvar.notify_all();
        }
    }

    /// After datagrams for `handle`: wakes its threads that may now go on.
    fn wake_connection(&self, handle: ConnectionHandle) {
        self.wake(Wait::Connection(handle));
        for dir in [Dir::Bi, Dir::Uni] {
            if self.waiting.contains_key(&Wait::Incoming(handle, dir))
                && self
                    .endpoint
                    .connection_ref(handle)
                    .is_none_or(|c| c.has_stream_to_accept(dir) || c.is_closing())
            {
                self.wake(Wait::Incoming(handle, dir));
            }
        }
    }

    /// After timers fired: they change what an application sees only by
    /// closing connections, so wakes the threads of those.
    fn wake_closing(&self) {
        for (wait, sleepers) in &self.waiting {
            let handle = match wait {
                Wait::Connection(handle) | Wait::Incoming(handle, _) => *handle,
                Wait::Accept | Wait::Flush => continue,
            };
            if self
                .endpoint
                .connection_ref(handle)
                .is_none_or(|c| c.is_closing())
            {
                sleepers.condvar.notify_all();
            }
        }
    }
}

pub(super) struct Shared {
    pub(super) state: Mutex<State>,
    pub(super) waker: Arc<Waker>,
    /// A duplicate of the socket's descriptor, to read its options back.
    socket_fd: Mutex<OwnedFd>,
    /// How the socket was bound, to bind another the same way.
    options: SocketOptions,
    max_datagram: usize,
}

impl Shared {
    /// The address the endpoint's socket is bound to (the endpoint keeps
    /// it, `rebind` included). Takes the lock: with it held, read
    /// `state.endpoint.local_addr()` instead.
    pub(super) fn local_addr(&self) -> SocketAddr {
        self.lock().endpoint.local_addr()
    }

    /// Whether the endpoint's socket sends without UDP checksums now.
    pub(super) fn checksums_disabled(&self) -> std::io::Result<bool> {
        // The state lock first, as `rebind` takes them.
        let ipv6 = self.local_addr().is_ipv6();
        let fd = self.socket_fd.lock().unwrap_or_else(|p| p.into_inner());
        crate::io::checksums_disabled(&*fd, ipv6)
    }

    /// Whether the endpoint's socket accepts datagrams without a checksum.
    pub(super) fn accepts_zero_checksums(&self) -> std::io::Result<bool> {
        let ipv6 = self.local_addr().is_ipv6();
        let fd = self.socket_fd.lock().unwrap_or_else(|p| p.into_inner());
        crate::io::zero_checksums_accepted(&*fd, ipv6)
    }

    /// Binds a new socket at `addr`, bound like the first, and has the
    /// driver move the endpoint to it. Returns the bound address.
    pub(super) fn rebind(&self, addr: SocketAddr) -> Result<SocketAddr, SiftIoError> {
        let datapath = Datapath::bind(addr, self.options, self.max_datagram)?;
        let bound = datapath.local_addr();
        let fd = datapath.socket().as_fd().try_clone_to_owned()?;
        let mut state = self.lock();
        if let Some(error) = self.stopped_error(&state) {
            return Err(error);
        }
        // The connections move now, not when the driver next looks (see the
        // tokio endpoint's `rebind`).
        state.endpoint.rebound(bound);
        state.rebind = Some(datapath);
        *self.socket_fd.lock().unwrap_or_else(|p| p.into_inner()) = fd;
        state.driver_may_sleep = true; // force a wake: the driver must move
        self.wake_driver(&mut state);
        Ok(bound)
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere must not make every later call panic too.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Wakes the driver if it may be asleep. Call with the lock held, after
    /// giving a connection something to do.
    pub(super) fn wake_driver(&self, state: &mut State) {
        if state.driver_may_sleep {
            state.driver_may_sleep = false;
            if let Err(error) = self.waker.wake() {
                // Only after the driver ended, which `stopped` reports.
                tracing::debug!(%error, "cannot wake the driver");
            }
        }
    }

    /// Sleeps until the driver signals progress on `wait` or `deadline`
    /// passes (callers re-check: a wake-up is a hint, not a promise).
    pub(super) fn wait<'a>(
        &self,
        mut state: MutexGuard<'a, State>,
        wait: Wait,
        deadline: Option<Instant>,
    ) -> MutexGuard<'a, State> {
        let sleepers = state.waiting.entry(wait).or_insert_with(|| Sleepers {
            condvar: Arc::new(Condvar::new()),
            count: 0,
        });
        sleepers.count += 1;
        let condvar = Arc::clone(&sleepers.condvar);
        let mut state = match deadline {
            Some(deadline) => {
                let timeout = deadline.saturating_duration_since(Instant::now());
                condvar
                    .wait_timeout(state, timeout)
                    .map(|(guard, _)| guard)
                    .unwrap_or_else(|poisoned| poisoned.into_inner().0)
            }
            None => condvar
                .wait(state)
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        };
        if let Some(sleepers) = state.waiting.get_mut(&wait) {
            sleepers.count -= 1;
            if sleepers.count == 0 {
                state.waiting.remove(&wait);
            }
        }
        state
    }

    pub(super) fn stopped_error(&self, state: &State) -> Option<SiftIoError> {
        state
            .stopped
            .as_ref()
            .map(|reason| SiftIoError::EndpointStopped {
                local: state.endpoint.local_addr(),
                reason: reason.clone(),
            })
    }

    pub(super) fn release_handle(&self) {
        let mut state = self.lock();
        state.app_handles = state.app_handles.saturating_sub(1);
        state.handle_released = true;
        state.driver_may_sleep = true; // force a wake: the driver may stop
        self.wake_driver(&mut state);
    }
}

impl EndpointHost for Shared {
    fn with_endpoint(&self, step: &mut dyn FnMut(&mut Endpoint, &mut Progress)) -> Control {
        let mut state = self.lock();
        state.driver_may_sleep = false;
        let state = &mut *state;
        step(&mut state.endpoint, &mut state.progress);
        let progress = state.progress.any();
        let mut accepted = false;
        while let Some(handle) = state.endpoint.accept() {
            if state.listening {
                state.pending_accept.push_back(handle);
                accepted = true;
            } else if let Some(connection) = state.endpoint.connection(handle) {
                connection.close(0, "not accepting connections");
            }
        }
        // Whether a connection closed changes only with progress (arrivals,
        // timers) or when the application lets go of a handle.
        if progress || state.handle_released {
            let sweep_all = std::mem::take(&mut state.handle_released);
            state.remove_unheld_closed(sweep_all);
        }
        state.turns += 1;
        state.driver_may_sleep = true;
        let control = if state.app_handles == 0 && state.all_closed() {
            Control::Stop
        } else {
            Control::Continue
        };
        // Sending alone changes nothing an application waits for; a
        // datagram concerns its own connection only, and timers change what
        // an application sees only by closing connections.
        if !state.waiting.is_empty() {
            for handle in &state.progress.routed {
                state.wake_connection(*handle);
            }
            // A client is handed out once its handshake completes.
            accepted |= state.waiting.contains_key(&Wait::Accept)
                && state
                    .progress
                    .routed
                    .iter()
                    .any(|handle| state.pending_accept.contains(handle));
            if state.progress.timers_fired {
                state.wake_closing();
            }
        }
        if accepted {
            state.wake(Wait::Accept);
        }
        control
    }

    fn on_flushed(&self) {
        let mut state = self.lock();
        state.flushed_turn = state.turns;
        state.wake(Wait::Flush);
    }

    fn take_rebind(&self) -> Option<Datapath> {
        self.lock().rebind.take()
    }
}

/// Binds `bind` and starts an endpoint with its driver thread.
pub(super) fn start_endpoint(
    bind: SocketAddr,
    server: Option<Config>,
    template: &Config,
    max_connections: usize,
) -> Result<Arc<Shared>, SiftIoError> {
    let options = socket_options(template);
    let driver = Driver::bind(bind, options, template.largest_datagram_size())?;
    start_driver(
        driver,
        server,
        template,
        max_connections,
        None,
        server_ledger(),
    )
}

/// One worker of a multi-worker server: its index and every worker's load.
struct Worker {
    index: usize,
    loads: Arc<WorkerLoads>,
}

/// A ledger for one server's tokens, on the wall clock.
fn server_ledger() -> TokenLedger {
    TokenLedger::new(crate::io::token_clock())
}

/// Binds `workers` endpoints to `bind` in one reuseport group, each with its
/// driver thread, the kernel routing datagrams among them by connection ID.
/// `servers[i]` is worker `i`'s config (naming it in `cid_steering`);
/// `max_connections` is shared out among them.
pub(super) fn start_workers(
    bind: SocketAddr,
    servers: Vec<Config>,
    template: &Config,
    max_connections: usize,
) -> Result<Vec<Arc<Shared>>, SiftIoError> {
    let options = socket_options(template);
    let datapaths = Datapath::bind_workers(
        bind,
        options,
        template.largest_datagram_size(),
        servers.len(),
    )?;
    let loads = WorkerLoads::new(servers.len(), max_connections);
    // One clock and one record of spent tokens for every worker.
    let ledger = server_ledger();
    datapaths
        .into_iter()
        .zip(servers)
        .enumerate()
        .map(|(index, (datapath, server))| {
            let driver = Driver::new(datapath)?;
            let worker = Worker {
                index,
                loads: Arc::clone(&loads),
            };
            start_driver(
                driver,
                Some(server),
                template,
                max_connections,
                Some(worker),
                ledger.clone(),
            )
        })
        .collect()
}

/// The socket options `template` asks for.
fn socket_options(template: &Config) -> SocketOptions {
    SocketOptions {
        disable_checksums: template.corruption_notices,
        ..SocketOptions::default()
    }
}

/// Starts an endpoint on `driver`'s socket with its driver thread, named
/// `sift-worker N` for a worker, `sift-driver ADDR` otherwise.
fn start_driver(
    mut driver: Driver,
    server: Option<Config>,
    template: &Config,
    max_connections: usize,
    worker: Option<Worker>,
    ledger: TokenLedger,
) -> Result<Arc<Shared>, SiftIoError> {
    let options = socket_options(template);
    let local = driver.local_addr();
    let socket_fd = driver.socket().as_fd().try_clone_to_owned()?;
    let listening = server.is_some();
    let mut endpoint = Endpoint::new(local, server)
        .with_max_connections(max_connections)
        .with_token_ledger(ledger)
        .with_socket_receive_bytes(driver.socket_report().receive_payload_bytes());
    let thread_name = match worker {
        Some(Worker { index, loads }) => {
            endpoint = endpoint.with_worker_loads(loads);
            format!("sift-worker {index}")
        }
        None => format!("sift-driver {local}"),
    };
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            endpoint,
            held: HashSet::new(),
            pending_accept: VecDeque::new(),
            app_handles: 1,
            listening,
            waiting: HashMap::new(),
            driver_may_sleep: false,
            turns: 0,
            flushed_turn: 0,
            stopped: None,
            handle_released: false,
            progress: Progress::default(),
            rebind: None,
        }),
        waker: driver.waker(),
        socket_fd: Mutex::new(socket_fd),
        options,
        max_datagram: template.largest_datagram_size(),
    });
    let host = Arc::clone(&shared);
    thread::Builder::new().name(thread_name).spawn(move || {
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
        state.wake_all();
    })?;
    Ok(shared)
}
