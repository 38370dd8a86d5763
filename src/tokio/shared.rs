//! The endpoint shared by its driver task and the application's handles:
//! the sans-IO [`Endpoint`] and who waits for what, behind one mutex.
//!
//! Handles call the sans-IO connection directly under the lock. A call
//! that cannot complete registers its task's waker with its connection
//! (a read or a write, with its stream) and returns `Pending`; the driver
//! wakes, of the connections its step routed datagrams to, the readers of
//! the streams that became readable, the writers of those that became
//! writable and whoever waits on the connection otherwise (and, when
//! timers fired or a connection closes, every task of those now closing).
//! A call that completes wakes the driver, since it may have given the
//! connection something to send (data, a read that frees credit, a close).

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Mutex, MutexGuard};
use std::task::Waker;

use crate::endpoint::{ConnectionHandle, Endpoint};
use crate::io::{Control, EndpointHost, Progress};
use crate::stream::{StreamError, StreamId};
use crate::{Connection, Error};

use super::error::ConnectionError;

/// Tasks waiting for one thing. A task polled again while it waits is
/// kept once; a task that gave up leaves a waker that is woken once for
/// nothing, which is harmless.
#[derive(Debug, Default)]
pub(super) struct Wakers(Vec<Waker>);

impl Wakers {
    /// Wakes `waker`'s task at the next change.
    pub(super) fn register(&mut self, waker: &Waker) {
        if !self.0.iter().any(|known| known.will_wake(waker)) {
            self.0.push(waker.clone());
        }
    }

    /// Moves every waker into `out`, to be woken once the lock is released.
    pub(super) fn take_into(&mut self, out: &mut Vec<Waker>) {
        out.append(&mut self.0);
    }
}

/// What a task that cannot complete waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Wait {
    /// Anything of the connection (a stream to accept, a datagram, the
    /// handshake, acknowledgements): woken by every datagram.
    Any,
    /// Something to read on this stream.
    Read(StreamId),
    /// Room to write on this stream.
    Write(StreamId),
}

/// What the application holds of one connection.
#[derive(Debug, Default)]
pub(super) struct Held {
    /// Tasks waiting on anything of this connection.
    pub(super) waiters: Wakers,
    /// Tasks waiting to read a stream, woken only when it is readable: a
    /// datagram for one stream of a connection with many readers wakes
    /// one task, not all of them.
    pub(super) readers: HashMap<StreamId, Wakers>,
    /// Tasks waiting for room to write on a stream, woken only when it
    /// has room (or can no longer be written).
    pub(super) writers: HashMap<StreamId, Wakers>,
    /// Streams we send on that have a live `SendStream`, with the error
    /// code of the peer's STOP_SENDING once seen. The driver looks after
    /// each step: the stream layer answers STOP_SENDING with RESET_STREAM
    /// and forgets the stream once that is acknowledged, and the code must
    /// outlive it for `SendStream::stopped`.
    pub(super) send_streams: HashMap<StreamId, Option<u64>>,
}

impl Held {
    /// Registers `waker`'s task for `wait`.
    pub(super) fn register(&mut self, wait: Wait, waker: &Waker) {
        match wait {
            Wait::Any => self.waiters.register(waker),
            Wait::Read(id) => self.readers.entry(id).or_default().register(waker),
            Wait::Write(id) => self.writers.entry(id).or_default().register(waker),
        }
    }

    /// Moves every waiting task into `out`: the connection closes.
    pub(super) fn take_all(&mut self, out: &mut Vec<Waker>) {
        self.waiters.take_into(out);
        for (_, mut wakers) in self.readers.drain() {
            wakers.take_into(out);
        }
        for (_, mut wakers) in self.writers.drain() {
            wakers.take_into(out);
        }
    }

    /// After a datagram reached `connection`: the tasks that may see a
    /// change, into `out`.
    fn take_changed(&mut self, connection: &Connection, out: &mut Vec<Waker>) {
        if connection.is_closing() {
            self.take_all(out);
            return;
        }
        self.waiters.take_into(out);
        self.readers.retain(|&id, wakers| {
            let ready = connection.stream_is_readable(id);
            if ready {
                wakers.take_into(out);
            }
            !ready
        });
        self.writers.retain(|&id, wakers| {
            let ready = connection.stream_is_writable(id);
            if ready {
                wakers.take_into(out);
            }
            !ready
        });
    }

    /// A stream handle is gone: nobody waits on its stream any more.
    pub(super) fn forget_stream(&mut self, wait: Wait) {
        match wait {
            Wait::Any => {}
            Wait::Read(id) => {
                self.readers.remove(&id);
            }
            Wait::Write(id) => {
                self.writers.remove(&id);
            }
        }
    }

    /// Records the STOP_SENDING codes that arrived for live send streams.
    fn note_stops(&mut self, connection: &mut Connection) {
        for (&id, code) in &mut self.send_streams {
            if code.is_none() {
                // An empty write changes nothing; it reports a stop first.
                if let Err(Error::Stream(StreamError::Stopped { error_code, .. })) =
                    connection.stream_send(id, &[], false)
                {
                    *code = Some(error_code);
                }
            }
        }
    }
}

/// Endpoint state shared by the driver task and the application.
#[derive(Debug)]
pub(super) struct State {
    pub(super) endpoint: Endpoint,
    /// Connections the application holds a handle to.
    pub(super) held: HashMap<ConnectionHandle, Held>,
    /// Server connections not yet handed out by `accept`, oldest first.
    pub(super) incoming: VecDeque<ConnectionHandle>,
    /// Tasks in `Endpoint::accept`.
    pub(super) accept_waiters: Wakers,
    /// Tasks in `Endpoint::wait_idle`.
    pub(super) idle_waiters: Wakers,
    /// Some `Endpoint` handle is alive.
    pub(super) endpoint_held: bool,
    /// `Endpoint::close` was called: no new connections either way.
    pub(super) closed: bool,
    /// The driver task's waker, set at each of its polls and taken by
    /// whoever wakes it.
    pub(super) driver: Option<Waker>,
    /// Why the driver task ended, once it has.
    pub(super) stopped: Option<String>,
    /// Connections whose last handle was dropped since the driver last
    /// removed closed connections.
    pub(super) released: Vec<ConnectionHandle>,
    /// Something closed connections the driver cannot name (the endpoint
    /// handle dropped): look at every connection once.
    pub(super) sweep_all: bool,
    /// What the driver's last step changed (kept to reuse its allocation).
    progress: Progress,
    /// A socket `Endpoint::rebind` bound, for the driver to move to.
    pub(super) rebind: Option<crate::io::Datapath>,
}

impl State {
    /// New server connections are handed out (rather than refused).
    pub(super) fn accepting(&self) -> bool {
        self.endpoint.is_server() && self.endpoint_held && !self.closed
    }

    /// Wakes the driver task if it sleeps. Call after giving a connection
    /// something to do.
    pub(super) fn wake_driver(&mut self) {
        if let Some(driver) = self.driver.take() {
            driver.wake();
        }
    }

    /// Every connection has closed (or there are none).
    pub(super) fn all_closed(&self) -> bool {
        self.endpoint.handles().all(|h| {
            self.endpoint
                .connection_ref(h)
                .is_none_or(|c| c.is_closed())
        })
    }

    /// Moves every waiting task into `out`: after a close of the whole
    /// endpoint, or when the driver stops.
    pub(super) fn take_all_waiters(&mut self, out: &mut Vec<Waker>) {
        for held in self.held.values_mut() {
            held.take_all(out);
        }
        self.accept_waiters.take_into(out);
        self.idle_waiters.take_into(out);
    }

    /// Closes the server connections nobody accepted yet.
    pub(super) fn refuse_incoming(&mut self, reason: &str) {
        for handle in std::mem::take(&mut self.incoming) {
            if let Some(connection) = self.endpoint.connection(handle) {
                connection.close(0, reason);
            }
        }
    }

    /// The error for an operation on the connection behind `handle` that
    /// found it closing or closed.
    pub(super) fn connection_error(
        &self,
        local: SocketAddr,
        handle: ConnectionHandle,
    ) -> ConnectionError {
        let reason = self
            .endpoint
            .connection_ref(handle)
            .and_then(|connection| connection.close_reason());
        match (reason, &self.stopped) {
            (Some(reason), _) => reason.into(),
            (None, Some(stopped)) => ConnectionError::EndpointStopped {
                local,
                reason: stopped.clone(),
            },
            // Held connections stay on the endpoint and every closing
            // connection has a reason: this is a driver that is ending.
            (None, None) => ConnectionError::EndpointStopped {
                local,
                reason: "the connection is no longer on its endpoint".to_string(),
            },
        }
    }

    /// Drops connections that are closed and that nobody holds or waits
    /// to accept.
    fn remove_unheld_closed(&mut self) {
        let endpoint = &self.endpoint;
        self.incoming
            .retain(|h| endpoint.connection_ref(*h).is_some_and(|c| !c.is_closed()));
        // A connection closes on a datagram, on a timer or when its last
        // handle goes: only those can have closed since the last look, so
        // the cost follows what happened, not how many connections exist.
        let mut candidates: Vec<ConnectionHandle> = if std::mem::take(&mut self.sweep_all) {
            self.released.clear();
            endpoint.handles().collect()
        } else {
            let progress = &self.progress;
            let mut named = std::mem::take(&mut self.released);
            named.extend_from_slice(&progress.routed);
            named.extend_from_slice(&progress.timed_out);
            named
        };
        candidates.retain(|h| {
            !self.held.contains_key(h)
                && !self.incoming.contains(h)
                && endpoint.connection_ref(*h).is_some_and(|c| c.is_closed())
        });
        for handle in candidates {
            self.endpoint.remove(handle);
        }
    }

    /// After a driver step: takes the wakers of whoever may see a change.
    fn take_progressed_waiters(&mut self, out: &mut Vec<Waker>) {
        let progress = &self.progress;
        for handle in &progress.routed {
            let (Some(held), Some(connection)) =
                (self.held.get_mut(handle), self.endpoint.connection(*handle))
            else {
                continue;
            };
            held.note_stops(connection);
            held.take_changed(connection, out);
        }
        // Timers change what an application sees only by closing.
        for handle in &progress.timed_out {
            let Some(held) = self.held.get_mut(handle) else {
                continue;
            };
            if self
                .endpoint
                .connection_ref(*handle)
                .is_none_or(|c| c.is_closing())
            {
                held.take_all(out);
            }
        }
        if !self.incoming.is_empty() {
            self.accept_waiters.take_into(out);
        }
        self.idle_waiters.take_into(out);
    }
}

/// The shared endpoint: its state and its address.
#[derive(Debug)]
pub(super) struct Shared {
    state: Mutex<State>,
    /// The socket's address at bind time (the port the kernel chose for
    /// port 0), for errors; `Endpoint::rebind` changes the current one,
    /// which the sans-IO endpoint keeps.
    pub(super) local: SocketAddr,
}

impl Shared {
    pub(super) fn new(endpoint: Endpoint) -> Self {
        let local = endpoint.local_addr();
        Self {
            state: Mutex::new(State {
                endpoint,
                held: HashMap::new(),
                incoming: VecDeque::new(),
                accept_waiters: Wakers::default(),
                idle_waiters: Wakers::default(),
                endpoint_held: true,
                closed: false,
                driver: None,
                stopped: None,
                released: Vec::new(),
                sweep_all: false,
                progress: Progress::default(),
                rebind: None,
            }),
            local,
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic in one task must not make every later call panic too.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The driver task will poll with `waker` next time it sleeps.
    pub(super) fn set_driver_waker(&self, waker: &Waker) {
        let mut state = self.lock();
        if !state.driver.as_ref().is_some_and(|w| w.will_wake(waker)) {
            state.driver = Some(waker.clone());
        }
    }

    /// The driver task ended: every waiting task learns it.
    pub(super) fn on_driver_stopped(&self, reason: String) {
        let mut to_wake = Vec::new();
        {
            let mut state = self.lock();
            state.stopped = Some(reason);
            state.take_all_waiters(&mut to_wake);
        }
        to_wake.into_iter().for_each(Waker::wake);
    }
}

impl EndpointHost for Shared {
    fn with_endpoint(&self, step: &mut dyn FnMut(&mut Endpoint, &mut Progress)) -> Control {
        let mut to_wake = Vec::new();
        let control = {
            let mut guard = self.lock();
            let state = &mut *guard;
            step(&mut state.endpoint, &mut state.progress);
            while let Some(handle) = state.endpoint.accept() {
                if state.accepting() {
                    state.incoming.push_back(handle);
                } else if let Some(connection) = state.endpoint.connection(handle) {
                    connection.close(0, "not accepting connections");
                }
            }
            let progressed = state.progress.any();
            if progressed {
                state.take_progressed_waiters(&mut to_wake);
            }
            // Whether a connection closed changes only with progress
            // (arrivals, timers) or when the application lets go of one.
            if progressed || state.sweep_all || !state.released.is_empty() {
                state.remove_unheld_closed();
            }
            if !state.endpoint_held && state.held.is_empty() && state.all_closed() {
                Control::Stop
            } else {
                Control::Continue
            }
        };
        to_wake.into_iter().for_each(Waker::wake);
        control
    }
}
