//! The mio event loop: one `Poll` driving an [`Endpoint`](crate::endpoint::Endpoint)
//! over one UDP socket with the real clock.
//!
//! Each turn of the loop is a [`Datapath::turn`] (read, step the endpoint,
//! write); if the turn is not busy, the loop sleeps in `poll` until the
//! socket, the endpoint's next timer (a `timerfd`, so pacing gaps of
//! microseconds are honoured) or an application thread (the `Waker`)
//! wakes it.
//!
//! Pacing needs nothing more: a connection that must wait returns nothing
//! from `send` and reports the instant in `timeout`.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token, Waker};

use super::datapath::{Datapath, EndpointHost, Turn};
use super::socket::{SocketOptions, SocketReport};
use super::timer::Timer;

const SOCKET: Token = Token(0);
const TIMER: Token = Token(1);
const WAKER: Token = Token(2);

/// Whether the loop goes on after a [`Driver::drive`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Driven {
    /// The endpoint has more to do: drive it again.
    Continue,
    /// The host asked to stop and every datagram is sent: the loop is over.
    Stopped,
}

/// The socket, the poll and the timer of one endpoint.
#[derive(Debug)]
pub struct Driver {
    poll: Poll,
    events: Events,
    timer: Timer,
    waker: Arc<Waker>,
    datapath: Datapath,
}

impl Driver {
    /// Binds a UDP socket at `addr` with `options` and prepares the poll.
    /// `max_datagram` is the largest datagram the endpoint sends.
    pub fn bind(addr: SocketAddr, options: SocketOptions, max_datagram: usize) -> io::Result<Self> {
        Self::new(Datapath::bind(addr, options, max_datagram)?)
    }

    /// Prepares the poll around a bound datapath (one worker of
    /// [`Datapath::bind_workers`]).
    pub fn new(datapath: Datapath) -> io::Result<Self> {
        let poll = Poll::new()?;
        poll.registry().register(
            &mut SourceFd(&datapath.socket().as_raw_fd()),
            SOCKET,
            Interest::READABLE | Interest::WRITABLE,
        )?;
        let mut timer = Timer::new()?;
        poll.registry()
            .register(&mut timer, TIMER, Interest::READABLE)?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
        Ok(Self {
            poll,
            events: Events::with_capacity(64),
            timer,
            waker,
            datapath,
        })
    }

    /// The bound address (with the port the kernel chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.datapath.local_addr()
    }

    /// What the kernel granted for the socket's options.
    pub fn socket_report(&self) -> SocketReport {
        self.datapath.socket_report()
    }

    /// Whether sends are batched with GSO.
    pub fn uses_gso(&self) -> bool {
        self.datapath.uses_gso()
    }

    /// Wakes the loop from another thread (after an application write).
    pub fn waker(&self) -> Arc<Waker> {
        Arc::clone(&self.waker)
    }

    /// The socket, for reading its options back.
    pub fn socket(&self) -> &UdpSocket {
        self.datapath.socket()
    }

    /// Runs until the host says stop. Returns an error only if the poll
    /// itself fails; socket errors on single datagrams are logged and the
    /// datagram is lost (recovery resends it).
    pub fn run(&mut self, host: &dyn EndpointHost) -> io::Result<()> {
        while self.drive(host, None)? == Driven::Continue {}
        Ok(())
    }

    /// One turn of the loop: a [`Datapath::turn`] and then, unless the turn
    /// left more to do at once, one sleep until the socket, the endpoint's
    /// next timer or a wake from another thread rouses the poll, or until
    /// `deadline`. [`run`](Self::run) is this in a loop; a caller that
    /// waits for something the endpoint will do (the blocking API's
    /// application threads) drives it this way itself, one turn at a time,
    /// and looks between turns.
    pub fn drive(
        &mut self,
        host: &dyn EndpointHost,
        deadline: Option<Instant>,
    ) -> io::Result<Driven> {
        let turn = self.turn(host)?;
        if turn.stop {
            self.datapath.log_counters();
            return Ok(Driven::Stopped);
        }
        self.sleep(&turn, deadline)?;
        Ok(Driven::Continue)
    }

    /// The sleep after `turn` (see [`drive`](Self::drive)): none if the turn
    /// left more to do at once, otherwise until the socket, the endpoint's
    /// next timer, a wake, or `deadline`.
    pub fn sleep(&mut self, turn: &Turn, deadline: Option<Instant>) -> io::Result<()> {
        let now = Instant::now();
        let wait = if turn.busy {
            Some(Duration::ZERO)
        } else {
            match turn.next_timer.map(|at| at.saturating_duration_since(now)) {
                Some(wait) if wait.is_zero() => Some(Duration::ZERO),
                armed => {
                    self.timer.arm(armed)?;
                    // mio rounds a timeout up to whole milliseconds: the
                    // timerfd keeps the endpoint's timers exact, and the
                    // caller's deadline may be a little late.
                    deadline.map(|deadline| deadline.saturating_duration_since(now))
                }
            }
        };
        self.wait(wait)
    }

    /// One [`Datapath::turn`], without sleeping: sends what a caller just
    /// gave the endpoint (a write), when no other thread drives it.
    pub fn turn(&mut self, host: &dyn EndpointHost) -> io::Result<Turn> {
        if let Some(datapath) = host.take_rebind() {
            self.move_to(datapath)?;
        }
        Ok(self.datapath.turn(host))
    }

    /// Carries on over `datapath` (see [`EndpointHost::take_rebind`]): the
    /// old socket leaves the poll and closes with its datapath. The host
    /// moved its connections when it asked (`Endpoint::rebound`).
    fn move_to(&mut self, datapath: Datapath) -> io::Result<()> {
        let registry = self.poll.registry();
        registry.deregister(&mut SourceFd(&self.datapath.socket().as_raw_fd()))?;
        registry.register(
            &mut SourceFd(&datapath.socket().as_raw_fd()),
            SOCKET,
            Interest::READABLE | Interest::WRITABLE,
        )?;
        let local = datapath.local_addr();
        self.datapath = datapath;
        tracing::debug!(%local, "the endpoint moved to a new socket");
        Ok(())
    }

    fn wait(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        match self.poll.poll(&mut self.events, timeout) {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::Interrupted => return Ok(()),
            Err(error) => return Err(error),
        }
        for event in self.events.iter() {
            match event.token() {
                SOCKET => {
                    if event.is_readable() || event.is_error() {
                        self.datapath.set_readable();
                    }
                    if event.is_writable() {
                        self.datapath.set_writable();
                    }
                }
                TIMER => self.timer.acknowledge(),
                _ => {}
            }
        }
        Ok(())
    }
}
