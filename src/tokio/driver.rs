//! The driver: one task per endpoint that runs [`Datapath`] turns (the
//! same socket layer as the mio loop: GSO/GRO, mmsg batching, checksums
//! off for corruption notices) and sleeps on tokio's readiness of the
//! socket and of the endpoint's `timerfd` (tokio's own timers round to
//! milliseconds; pacing gaps are microseconds).
//!
//! This file is the runtime seam: the only place that names tokio's I/O
//! types. Readiness follows tokio's `AsyncFd` contract: the socket is read
//! and written only while a readiness guard is held, and the guard is
//! cleared only after the datapath met `WouldBlock` under it, so a
//! datagram that arrives in between wakes the driver again.
//!
//! A server with a preferred address (`Config::preferred_address`) has a
//! datapath per preferred address beside its listening one, all turned by
//! this one task over the same endpoint; after each turn the datagrams
//! that leave from another socket's address are handed to it
//! (`Datapath::hand_over`).

use std::future::Future;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use ::tokio::io::unix::AsyncFd;
use ::tokio::io::Interest;

use super::shared::Shared;
use crate::io::{Datapath, Timer};

/// Turns one poll of the driver may run before it yields to other tasks
/// (each turn moves up to 64 datagrams each way).
const TURNS_PER_POLL: usize = 16;

/// The datapath's socket, by descriptor: the datapath owns it.
struct SocketFd(RawFd);

impl AsRawFd for SocketFd {
    fn as_raw_fd(&self) -> RawFd {
        self.0
    }
}

/// The future of the driver task. It ends when the endpoint stops (every
/// handle dropped and every connection closed) or its socket fails.
pub(super) struct EndpointDriver {
    shared: Arc<Shared>,
    /// Readiness of the datapath's socket. Declared before `datapath` so
    /// that it is deregistered before the socket closes.
    socket: AsyncFd<SocketFd>,
    timer: AsyncFd<Timer>,
    datapath: Datapath,
    /// A server's sockets on its preferred addresses
    /// (`Config::preferred_address`): the same endpoint receives on them,
    /// and each sends what leaves from its address (`Datapath::hand_over`).
    preferred: Vec<PreferredSocket>,
}

/// One socket on a server's preferred address and its readiness.
struct PreferredSocket {
    /// Declared before `datapath`: deregistered before the socket closes.
    socket: AsyncFd<SocketFd>,
    datapath: Datapath,
}

/// Registers `datapath`'s socket for readiness.
fn register_socket(datapath: &Datapath) -> io::Result<AsyncFd<SocketFd>> {
    let socket = SocketFd(datapath.socket().as_raw_fd());
    let interest = Interest::READABLE | Interest::WRITABLE;
    // SAFETY: the descriptor is the datapath's open socket, and the
    // datapath outlives the registration: `EndpointDriver` declares
    // `socket` before `datapath`, so it is dropped (deregistered) first,
    // and `move_to` replaces the registration before the datapath.
    unsafe { AsyncFd::register_with_interest(socket, interest).map_err(|e| e.into()) }
}

/// One turn of `datapath` under its socket's readiness, following the
/// `AsyncFd` contract (see the module docs).
fn turn_socket(
    socket: &AsyncFd<SocketFd>,
    datapath: &mut Datapath,
    shared: &Shared,
    cx: &mut Context<'_>,
) -> io::Result<crate::io::Turn> {
    let read_guard = match socket.poll_read_ready(cx) {
        Poll::Ready(guard) => {
            datapath.set_readable();
            Some(guard?)
        }
        Poll::Pending => None,
    };
    // Optimistic: a socket that took the last write takes the next.
    let write_guard = if datapath.is_writable() {
        None
    } else {
        match socket.poll_write_ready(cx) {
            Poll::Ready(guard) => {
                datapath.set_writable();
                Some(guard?)
            }
            Poll::Pending => None,
        }
    };

    let turn = datapath.turn(shared);

    if let Some(mut guard) = read_guard {
        if !datapath.is_readable() {
            guard.clear_ready();
        }
    }
    if let Some(mut guard) = write_guard {
        if !datapath.is_writable() {
            guard.clear_ready();
        }
    }
    Ok(turn)
}

/// Whether `socket` became ready for what `datapath` waits for.
fn socket_ready(socket: &AsyncFd<SocketFd>, datapath: &Datapath, cx: &mut Context<'_>) -> bool {
    let readable = socket.poll_read_ready(cx).is_ready();
    let writable = datapath.has_unsent() && socket.poll_write_ready(cx).is_ready();
    readable || writable
}

impl EndpointDriver {
    /// Registers the datapath's socket and a new timer with the current
    /// runtime, and the sockets of a server's preferred addresses.
    pub(super) fn new(
        shared: Arc<Shared>,
        datapath: Datapath,
        preferred: Vec<Datapath>,
    ) -> io::Result<Self> {
        let socket = register_socket(&datapath)?;
        // SAFETY: the timer owns its descriptor, which stays open and the
        // same until the timer is dropped with its registration.
        let timer = unsafe { AsyncFd::register_with_interest(Timer::new()?, Interest::READABLE)? };
        let preferred = preferred
            .into_iter()
            .map(|datapath| {
                Ok(PreferredSocket {
                    socket: register_socket(&datapath)?,
                    datapath,
                })
            })
            .collect::<io::Result<_>>()?;
        Ok(Self {
            shared,
            socket,
            timer,
            datapath,
            preferred,
        })
    }

    /// `Endpoint::rebind`: carry on over `datapath`. The old socket is
    /// deregistered while still open, then closed with its datapath.
    fn move_to(&mut self, datapath: Datapath) -> io::Result<()> {
        let socket = register_socket(&datapath)?;
        let local = datapath.local_addr();
        self.socket = socket;
        self.datapath = datapath;
        // The endpoint's connections moved when `rebind` was called.
        tracing::debug!(%local, "the endpoint moved to a new socket");
        Ok(())
    }

    /// Runs turns until one finds nothing to do (`Pending`, with wakers
    /// registered for the socket and the timer) or the endpoint stops.
    fn drive(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        for _ in 0..TURNS_PER_POLL {
            // Every turn, not once a poll: the connections moved when
            // `rebind` was called, possibly from another thread while this
            // poll was turning, and each turn more on the old socket would
            // carry their traffic on the path they left (a download could
            // finish there, and the server meet the new address only in the
            // client's CONNECTION_CLOSE).
            let rebind = self.shared.lock().rebind.take();
            if let Some(datapath) = rebind {
                self.move_to(datapath)?;
            }
            if let Poll::Ready(guard) = self.timer.poll_read_ready_mut(cx) {
                let mut guard = guard?;
                guard.get_inner_mut().acknowledge();
                guard.clear_ready();
            }

            let mut turn = turn_socket(&self.socket, &mut self.datapath, &self.shared, cx)?;
            for other in &mut self.preferred {
                let other_turn = turn_socket(&other.socket, &mut other.datapath, &self.shared, cx)?;
                // Each socket sends what leaves from its own address.
                let handed = self.datapath.hand_over(&mut other.datapath)
                    | other.datapath.hand_over(&mut self.datapath);
                turn.stop &= other_turn.stop && !handed;
                turn.busy |= other_turn.busy || handed;
                turn.next_timer = [turn.next_timer, other_turn.next_timer]
                    .into_iter()
                    .flatten()
                    .min();
            }

            if turn.stop {
                self.datapath.log_counters();
                return Poll::Ready(Ok(()));
            }
            if turn.busy {
                continue;
            }
            let wait = turn
                .next_timer
                .map(|at| at.saturating_duration_since(Instant::now()));
            if wait.is_some_and(|wait| wait.is_zero()) {
                continue;
            }
            self.timer.get_mut().arm(wait)?;
            // Sleep, unless something became ready since the turn looked:
            // these polls register the task for the next change.
            let timer_fired = self.timer.poll_read_ready(cx).is_ready();
            let mut ready = socket_ready(&self.socket, &self.datapath, cx);
            for other in &self.preferred {
                ready |= socket_ready(&other.socket, &other.datapath, cx);
            }
            if !(timer_fired || ready) {
                return Poll::Pending;
            }
        }
        // This poll's turns are used up: let other tasks run, then go on.
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

impl Future for EndpointDriver {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        this.shared.set_driver_waker(cx.waker());
        match this.drive(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Ok(())) => {
                this.shared
                    .on_driver_stopped("every connection closed and no handle is left".to_string());
                Poll::Ready(())
            }
            Poll::Ready(Err(error)) => {
                let local = this.shared.local;
                tracing::error!(%error, %local, "sift driver failed");
                this.shared.on_driver_stopped(error.to_string());
                Poll::Ready(())
            }
        }
    }
}
