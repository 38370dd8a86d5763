//! The endpoint shared between its driver thread and application
//! threads: the state behind the mutex, the condition variables the driver
//! signals (one per thing a thread waits for: [`Wait`]), the waker that
//! rouses the driver, the driver thread itself, and who runs the driver
//! now ([`Seat`]).
//!
//! The thread that waits, drives. An application thread that must wait
//! (a read with nothing to read, a write with no room, an accept) while no
//! other application thread waits takes the driver and runs its turns
//! itself, between looks at what it waits for; when it has what it waited
//! for, it puts the driver back. Datagrams are then decrypted on the
//! thread that reads them, with nothing handed between threads: on two
//! cores a download ran 12% faster at 6% less CPU than with every turn on
//! the driver thread, which had to wake the reader for each delivery
//! (`interop/results/2026-12-01-caller-drives/`). The driver thread still
//! drives whenever no application thread does: when the driver has been
//! put back and left for [`UNDRIVEN_GRACE`] (the application is busy
//! elsewhere), when several application threads wait at once (it wakes
//! each on its own progress, as it always did), and when the last handle
//! is gone and the endpoint closes.

use std::collections::{HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

use mio::Waker;

use super::SiftIoError;
use crate::endpoint::{ConnectionHandle, Endpoint, TokenLedger, WorkerLoads};
use crate::io::{Control, Datapath, Driven, Driver, EndpointHost, Progress, SocketOptions};
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
    /// Who runs the driver, and since when.
    seat: Seat,
    seat_since: Instant,
    /// The driver while it is [`Seat::Parked`].
    parked: Option<Driver>,
    /// The endpoint must be driven now though no application thread will
    /// (a handle was let go, a new socket waits, a write was left with
    /// other threads waiting): the driver thread takes a parked driver at
    /// once.
    drive_now: bool,
    /// The driver thread sleeps with no timeout: whoever parks the driver
    /// must wake it, so that it keeps watch over the parked driver.
    watchdog_untimed: bool,
    /// Where the turns ran.
    pub(super) turns_by: DriverTurns,
}

/// Where an endpoint's turns ran: on application threads that waited
/// (the common case with one thread at a time in the blocking API), or on
/// the endpoint's driver thread (while the application was away, or
/// several of its threads waited at once). For diagnostics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DriverTurns {
    /// Turns an application thread ran inside a wait, a write or a read.
    pub application: u64,
    /// Turns the driver thread ran.
    pub driver_thread: u64,
}

/// Who runs an endpoint's driver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seat {
    /// Nobody: the next application thread that must wait takes it, or
    /// the driver thread once it has been left for [`UNDRIVEN_GRACE`].
    Parked,
    /// An application thread, inside a wait or a nudge.
    Application,
    /// The driver thread.
    DriverThread,
}

/// How long a parked driver may stay unused before the driver thread takes
/// it: the longest the endpoint goes undriven while its application is
/// busy elsewhere (datagrams wait in the socket, timers fire late by as
/// much). A download's reader comes back every 0.1–0.3 ms.
pub const UNDRIVEN_GRACE: Duration = Duration::from_millis(2);

/// An application thread that has driven for this long without putting
/// the driver back is in a long wait: the driver thread then sleeps until
/// the driver is parked, instead of looking every [`UNDRIVEN_GRACE`].
const LONG_DRIVE: Duration = Duration::from_millis(50);

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
    /// The driver thread sleeps on this while it does not drive.
    watchdog: Condvar,
    /// An application thread that asked for the driver back sleeps on this
    /// until the driver thread has put it back.
    handoff: Condvar,
    /// An application thread waits alone while the driver thread drives:
    /// the driver thread puts the driver back after its turn.
    reclaim: AtomicBool,
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
    /// Refused, the old socket kept, while a connection may not move
    /// (`Endpoint::may_rebind`).
    pub(super) fn rebind(&self, addr: SocketAddr) -> Result<SocketAddr, SiftIoError> {
        self.lock().endpoint.may_rebind(addr)?;
        let datapath = Datapath::bind(addr, self.options, self.max_datagram)?;
        let bound = datapath.local_addr();
        let fd = datapath.socket().as_fd().try_clone_to_owned()?;
        let mut state = self.lock();
        if let Some(error) = self.stopped_error(&state) {
            return Err(error);
        }
        // The connections move now, not when the driver next looks (see the
        // tokio endpoint's `rebind`).
        state.endpoint.rebound(bound)?;
        state.rebind = Some(datapath);
        *self.socket_fd.lock().unwrap_or_else(|p| p.into_inner()) = fd;
        state.driver_may_sleep = true; // force a wake: the driver must move
        self.hand_to_driver(&mut state);
        Ok(bound)
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere must not make every later call panic too.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// After giving a connection something to do, with the lock held:
    /// wakes the thread that drives the endpoint if it may be asleep.
    /// Returns `Nudge::Needed` when nobody drives it: the caller must then
    /// [`nudge`](Self::nudge) once it has let the lock go, unless it is
    /// about to wait (which drives).
    pub(super) fn wake_driver(&self, state: &mut State) -> Nudge {
        if state.seat == Seat::Parked {
            return Nudge::Needed;
        }
        if state.driver_may_sleep {
            state.driver_may_sleep = false;
            if let Err(error) = self.waker.wake() {
                // Only after the driver ended, which `stopped` reports.
                tracing::debug!(%error, "cannot wake the driver");
            }
        }
        Nudge::Done
    }

    /// Runs one turn of a parked driver on this thread, without sleeping,
    /// so that what the caller just gave a connection (a write, credit, a
    /// close) leaves now: after [`wake_driver`](Self::wake_driver) said so,
    /// with the lock released. With other threads waiting, the driver
    /// thread drives for them all instead.
    pub(super) fn nudge(&self, nudge: Nudge) {
        if nudge == Nudge::Done {
            return;
        }
        let mut state = self.lock();
        if state.seat != Seat::Parked {
            let _ = self.wake_driver(&mut state);
            return;
        }
        if !state.waiting.is_empty() {
            self.drive_now(&mut state);
            return;
        }
        let Some(driver) = self.take_seat(&mut state, Seat::Application) else {
            return;
        };
        drop(state);
        let mut seated = Seated::new(self, driver);
        let result = seated.driver().turn(self).map(|turn| {
            if turn.stop {
                Driven::Stopped
            } else {
                Driven::Continue
            }
        });
        drop(seated.end(result));
    }

    /// Sleeps until the driver signals progress on `wait` or `deadline`
    /// passes (callers re-check: a wake-up is a hint, not a promise). A
    /// thread that waits alone and finds the driver parked drives one turn
    /// itself instead (see the module docs), and asks the driver thread
    /// for it back if that one drives.
    pub(super) fn wait<'a>(
        &'a self,
        mut state: MutexGuard<'a, State>,
        wait: Wait,
        deadline: Option<Instant>,
    ) -> MutexGuard<'a, State> {
        if state.waiting.is_empty() && state.stopped.is_none() {
            match state.seat {
                Seat::Parked => {
                    if let Some(driver) = self.take_seat(&mut state, Seat::Application) {
                        drop(state);
                        let mut seated = Seated::new(self, driver);
                        let result = self.drive_for_waiter(seated.driver(), deadline);
                        return seated.end(result);
                    }
                }
                Seat::DriverThread => {
                    // Asked back: the driver thread puts it back after its
                    // turn and says so; the caller looks again, and its
                    // next wait drives.
                    self.reclaim.store(true, Ordering::Release);
                    if let Err(error) = self.waker.wake() {
                        tracing::debug!(%error, "cannot wake the driver");
                    }
                    let timeout = deadline
                        .map_or(LONG_DRIVE, |d| d.saturating_duration_since(Instant::now()));
                    return self
                        .handoff
                        .wait_timeout(state, timeout)
                        .map(|(guard, _)| guard)
                        .unwrap_or_else(|poisoned| poisoned.into_inner().0);
                }
                Seat::Application => {}
            }
        }
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

    /// One turn for an application thread that waits: if the turn changed
    /// anything an application may wait for (datagrams arrived, timers
    /// fired), it returns at once so that the caller looks; otherwise it
    /// sleeps as the driver thread would, at most until `deadline`.
    fn drive_for_waiter(
        &self,
        driver: &mut Driver,
        deadline: Option<Instant>,
    ) -> std::io::Result<Driven> {
        let turn = driver.turn(self)?;
        if turn.stop {
            return Ok(Driven::Stopped);
        }
        if !self.lock().progress.any() {
            driver.sleep(&turn, deadline)?;
        }
        Ok(Driven::Continue)
    }

    /// Takes the parked driver for `seat`.
    fn take_seat(&self, state: &mut State, seat: Seat) -> Option<Driver> {
        let driver = state.parked.take()?;
        state.seat = seat;
        state.seat_since = Instant::now();
        Some(driver)
    }

    /// Puts the driver back after a turn of `result`; ends the endpoint if
    /// the driver stopped or failed.
    fn park(&self, state: &mut State, driver: Driver, result: std::io::Result<Driven>) {
        match result {
            Ok(Driven::Continue) => {
                state.parked = Some(driver);
                state.seat = Seat::Parked;
                state.seat_since = Instant::now();
                if !state.waiting.is_empty() {
                    // Others wait: the driver thread drives for them all.
                    self.drive_now(state);
                } else if state.watchdog_untimed {
                    self.watchdog.notify_one();
                }
            }
            Ok(Driven::Stopped) => {
                self.end(
                    state,
                    "every connection closed and no handle is left".into(),
                );
            }
            Err(error) => {
                tracing::error!(%error, local = %state.endpoint.local_addr(), "sift driver failed");
                self.end(state, error.to_string());
            }
        }
    }

    /// After giving the endpoint something to do that this thread will
    /// not wait for, with the lock held: wakes whoever drives it, or has
    /// the driver thread take a parked driver at once.
    pub(super) fn hand_to_driver(&self, state: &mut State) {
        if self.wake_driver(state) == Nudge::Needed {
            self.drive_now(state);
        }
    }

    /// The driver thread must take a parked driver at once.
    fn drive_now(&self, state: &mut State) {
        state.drive_now = true;
        self.watchdog.notify_one();
    }

    /// The endpoint's driver is gone: every thread is told why.
    fn end(&self, state: &mut State, reason: String) {
        state.stopped = Some(reason);
        state.seat = Seat::Parked;
        state.wake_all();
        self.handoff.notify_all();
        self.watchdog.notify_one();
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
        // Force a wake: the close goes out and the endpoint may stop, and
        // whoever holds the handles left may never wait again.
        state.driver_may_sleep = true;
        self.hand_to_driver(&mut state);
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
        match state.seat {
            Seat::DriverThread => state.turns_by.driver_thread += 1,
            _ => state.turns_by.application += 1,
        }
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
/// `servers[i]` is worker `i`'s config (given its `cid_steering` here, from
/// its socket's place in the group and the group's key);
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
            let server = Config {
                cid_steering: datapath.cid_steering(),
                ..server
            };
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
    driver: Driver,
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
            seat: Seat::Parked,
            seat_since: Instant::now(),
            parked: None,
            drive_now: false,
            watchdog_untimed: false,
            turns_by: DriverTurns::default(),
        }),
        waker: driver.waker(),
        watchdog: Condvar::new(),
        handoff: Condvar::new(),
        reclaim: AtomicBool::new(false),
        socket_fd: Mutex::new(socket_fd),
        options,
        max_datagram: template.largest_datagram_size(),
    });
    // Parked from the start: the application's first wait (the
    // handshake's, an accept) takes it.
    shared.lock().parked = Some(driver);
    let host = Arc::clone(&shared);
    thread::Builder::new()
        .name(thread_name)
        .spawn(move || host.keep_watch())?;
    Ok(shared)
}

/// Whether a call that gave a connection something to send must still
/// run a turn itself ([`Shared::nudge`]).
#[must_use]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Nudge {
    /// Whoever drives the endpoint was woken, or will look anyway.
    Done,
    /// Nobody drives it: the caller runs a turn once the lock is free.
    Needed,
}

/// The driver in an application thread's hands: put back when the turn is
/// over, and also if the turn panics, so that the endpoint is never left
/// without one.
struct Seated<'a> {
    shared: &'a Shared,
    driver: Option<Driver>,
}

impl<'a> Seated<'a> {
    fn new(shared: &'a Shared, driver: Driver) -> Self {
        Self {
            shared,
            driver: Some(driver),
        }
    }

    fn driver(&mut self) -> &mut Driver {
        self.driver
            .as_mut()
            .expect("a seated driver is held until `end`")
    }

    /// Puts the driver back after a turn that gave `result`.
    fn end(mut self, result: std::io::Result<Driven>) -> MutexGuard<'a, State> {
        let mut state = self.shared.lock();
        if let Some(driver) = self.driver.take() {
            self.shared.park(&mut state, driver, result);
        }
        state
    }
}

impl Drop for Seated<'_> {
    fn drop(&mut self) {
        if let Some(driver) = self.driver.take() {
            let mut state = self.shared.lock();
            self.shared.park(&mut state, driver, Ok(Driven::Continue));
        }
    }
}

impl Shared {
    /// The driver thread's life: it drives whenever no application thread
    /// does (see the module docs), until the endpoint stops.
    fn keep_watch(&self) {
        let mut state = self.lock();
        loop {
            if state.stopped.is_some() {
                return;
            }
            let now = Instant::now();
            let wait = match state.seat {
                Seat::Parked => {
                    let due = state.seat_since + UNDRIVEN_GRACE;
                    let must =
                        state.drive_now || !state.waiting.is_empty() || state.app_handles == 0;
                    if must || now >= due {
                        state.drive_now = false;
                        if let Some(driver) = self.take_seat(&mut state, Seat::DriverThread) {
                            drop(state);
                            let mut driver = driver;
                            let result = self.drive_until_reclaimed(&mut driver);
                            state = self.lock();
                            self.park(&mut state, driver, result);
                            // The thread that asked for it back waits to be told.
                            self.handoff.notify_all();
                            continue;
                        }
                        None
                    } else {
                        Some(due - now)
                    }
                }
                // Driving in quick turns: look again when a parked driver
                // could be due; after a long drive, wait to be told.
                Seat::Application
                    if now.saturating_duration_since(state.seat_since) < LONG_DRIVE =>
                {
                    Some(UNDRIVEN_GRACE)
                }
                Seat::Application | Seat::DriverThread => None,
            };
            state.watchdog_untimed = wait.is_none();
            state = match wait {
                Some(timeout) => self
                    .watchdog
                    .wait_timeout(state, timeout)
                    .map(|(guard, _)| guard)
                    .unwrap_or_else(|poisoned| poisoned.into_inner().0),
                None => self
                    .watchdog
                    .wait(state)
                    .unwrap_or_else(|poisoned| poisoned.into_inner()),
            };
            state.watchdog_untimed = false;
        }
    }

    /// Drives on the driver thread until an application thread waiting
    /// alone asks for the driver back, or the endpoint stops.
    fn drive_until_reclaimed(&self, driver: &mut Driver) -> std::io::Result<Driven> {
        loop {
            if self.reclaim.swap(false, Ordering::AcqRel) {
                return Ok(Driven::Continue);
            }
            if driver.drive(self, None)? == Driven::Stopped {
                return Ok(Driven::Stopped);
            }
        }
    }
}
