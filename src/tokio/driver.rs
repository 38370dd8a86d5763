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

impl EndpointDriver {
    /// Registers the datapath's socket and a new timer with the current
    /// runtime.
    pub(super) fn new(shared: Arc<Shared>, datapath: Datapath) -> io::Result<Self> {
        let socket = register_socket(&datapath)?;
        // SAFETY: the timer owns its descriptor, which stays open and the
        // same until the timer is dropped with its registration.
        let timer = unsafe { AsyncFd::register_with_interest(Timer::new()?, Interest::READABLE)? };
        Ok(Self {
            shared,
            socket,
            timer,
            datapath,
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
            let read_guard = match self.socket.poll_read_ready(cx) {
                Poll::Ready(guard) => {
                    self.datapath.set_readable();
                    Some(guard?)
                }
                Poll::Pending => None,
            };
            // Optimistic: a socket that took the last write takes the next.
            let write_guard = if self.datapath.is_writable() {
                None
            } else {
                match self.socket.poll_write_ready(cx) {
                    Poll::Ready(guard) => {
                        self.datapath.set_writable();
                        Some(guard?)
                    }
                    Poll::Pending => None,
                }
            };

            let turn = self.datapath.turn(&*self.shared);

            if let Some(mut guard) = read_guard {
                if !self.datapath.is_readable() {
                    guard.clear_ready();
                }
            }
            if let Some(mut guard) = write_guard {
                if !self.datapath.is_writable() {
                    guard.clear_ready();
                }
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
            let readable = self.socket.poll_read_ready(cx).is_ready();
            let writable =
                self.datapath.has_unsent() && self.socket.poll_write_ready(cx).is_ready();
            if !(timer_fired || readable || writable) {
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
