//! The event loop: one mio `Poll` driving an [`Endpoint`] over one UDP
//! socket with the real clock.
//!
//! One turn of the loop:
//! 1. read datagrams from the socket until WouldBlock (at most a batch per
//!    turn), without holding the endpoint;
//! 2. under the host's lock: feed them to the endpoint, fire due timers,
//!    and collect a batch of datagrams to send;
//! 3. send them until done or WouldBlock (the rest waits for WRITABLE);
//! 4. if nothing is left to do, sleep in `poll` until the socket, the
//!    endpoint's next timer (a `timerfd`, so pacing gaps of microseconds
//!    are honoured) or an application thread (the `Waker`) wakes us.
//!
//! Pacing needs nothing more: a connection that must wait returns nothing
//! from `send` and reports the instant in `timeout`.

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mio::net::UdpSocket;
use mio::{Events, Interest, Poll, Token, Waker};

use super::socket::{bind_udp, SocketOptions, SocketReport};
use super::timer::Timer;
use crate::endpoint::Endpoint;

const SOCKET: Token = Token(0);
const TIMER: Token = Token(1);
const WAKER: Token = Token(2);

/// Datagrams read per turn before the endpoint is fed (bounds the time the
/// send side waits behind a flood of arrivals).
const RECV_BATCH: usize = 64;
/// Datagrams collected per turn before they are written to the socket.
const SEND_BATCH: usize = 64;
/// Largest UDP payload (IPv4 and IPv6 without jumbograms).
const MAX_UDP_PAYLOAD: usize = 65_527;

/// Whether the loop goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// Keep driving the endpoint.
    Continue,
    /// Stop once the datagrams already collected are sent.
    Stop,
}

/// Whoever owns the endpoint the driver runs: the blocking API keeps it
/// behind a mutex shared with application threads.
pub trait EndpointHost {
    /// Runs `step` with exclusive access to the endpoint, then lets
    /// application threads see what changed, and says whether the driver
    /// should keep going.
    fn with_endpoint(&self, step: &mut dyn FnMut(&mut Endpoint)) -> Control;

    /// Every datagram the last `with_endpoint` collected has been handed
    /// to the socket (or dropped on a socket error).
    fn on_flushed(&self) {}
}

/// A datagram waiting for the socket.
#[derive(Debug)]
struct Outgoing {
    to: SocketAddr,
    data: Vec<u8>,
}

/// The socket, the poll and the timer of one endpoint.
#[derive(Debug)]
pub struct Driver {
    poll: Poll,
    events: Events,
    socket: UdpSocket,
    local: SocketAddr,
    report: SocketReport,
    timer: Timer,
    waker: Arc<Waker>,
    /// Received datagrams of this turn: (bytes, from).
    received: Vec<(Vec<u8>, SocketAddr)>,
    /// Collected, not yet written (WouldBlock keeps them for WRITABLE).
    outgoing: VecDeque<Outgoing>,
    /// Spare buffers, so a steady flow allocates nothing.
    spare: Vec<Vec<u8>>,
    recv_buffer: Vec<u8>,
    /// Size of the buffers handed to the endpoint for one datagram.
    max_datagram: usize,
    /// The socket may have more to read (edge-triggered: until WouldBlock).
    readable: bool,
    /// The socket accepted our last write.
    writable: bool,
    /// Datagrams were collected and not all written yet.
    awaiting_flush: bool,
    /// Counters for logs.
    send_errors: u64,
}

impl Driver {
    /// Binds a UDP socket at `addr` with `options` and prepares the poll.
    /// `max_datagram` is the largest datagram the endpoint sends.
    pub fn bind(addr: SocketAddr, options: SocketOptions, max_datagram: usize) -> io::Result<Self> {
        let (socket, report) = bind_udp(addr, options)?;
        let mut socket = UdpSocket::from_std(socket);
        let local = socket.local_addr()?;
        let poll = Poll::new()?;
        poll.registry()
            .register(&mut socket, SOCKET, Interest::READABLE | Interest::WRITABLE)?;
        let mut timer = Timer::new()?;
        poll.registry()
            .register(&mut timer, TIMER, Interest::READABLE)?;
        let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
        Ok(Self {
            poll,
            events: Events::with_capacity(64),
            socket,
            local,
            report,
            timer,
            waker,
            received: Vec::with_capacity(RECV_BATCH),
            outgoing: VecDeque::with_capacity(SEND_BATCH),
            spare: Vec::new(),
            recv_buffer: vec![0; MAX_UDP_PAYLOAD],
            max_datagram: max_datagram.clamp(1200, MAX_UDP_PAYLOAD),
            readable: true,
            writable: true,
            awaiting_flush: false,
            send_errors: 0,
        })
    }

    /// The bound address (with the port the kernel chose for port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// What the kernel granted for the socket's options.
    pub fn socket_report(&self) -> SocketReport {
        self.report
    }

    /// Wakes the loop from another thread (after an application write).
    pub fn waker(&self) -> Arc<Waker> {
        Arc::clone(&self.waker)
    }

    /// The socket, for reading its options back.
    pub fn socket(&self) -> &UdpSocket {
        &self.socket
    }

    /// Runs until the host says stop. Returns an error only if the poll
    /// itself fails; socket errors on single datagrams are logged and the
    /// datagram is lost (recovery resends it).
    pub fn run(&mut self, host: &dyn EndpointHost) -> io::Result<()> {
        loop {
            self.receive_batch();
            let now = Instant::now();
            let mut next_timer = None;
            let mut send_batch_full = false;
            let mut collected_any = false;
            let room = SEND_BATCH.saturating_sub(self.outgoing.len());
            let max_datagram = self.max_datagram;
            let received = &mut self.received;
            let outgoing = &mut self.outgoing;
            let spare = &mut self.spare;
            let control = host.with_endpoint(&mut |endpoint| {
                for (mut datagram, from) in received.drain(..) {
                    endpoint.recv(&mut datagram, from, now);
                    spare.push(datagram);
                }
                if endpoint.timeout(now).is_some_and(|at| at <= now) {
                    endpoint.on_timeout(now);
                }
                let mut collected = 0;
                while collected < room {
                    let mut buf = spare.pop().unwrap_or_default();
                    buf.resize(max_datagram, 0);
                    match endpoint.poll_transmit(now, &mut buf) {
                        Some((len, to)) => {
                            buf.truncate(len);
                            outgoing.push_back(Outgoing { to, data: buf });
                            collected += 1;
                        }
                        None => {
                            spare.push(buf);
                            break;
                        }
                    }
                }
                send_batch_full = collected == room;
                collected_any = collected > 0;
                next_timer = endpoint.timeout(now);
            });
            self.send_queued();
            self.awaiting_flush |= collected_any;
            if self.awaiting_flush && self.outgoing.is_empty() {
                self.awaiting_flush = false;
                host.on_flushed();
            }
            if control == Control::Stop && self.outgoing.is_empty() {
                return Ok(());
            }
            let more_to_send = send_batch_full || !self.outgoing.is_empty();
            let busy = self.readable || (self.writable && more_to_send);
            let wait = if busy {
                Some(Duration::ZERO)
            } else {
                match next_timer {
                    Some(at) => {
                        let wait = at.saturating_duration_since(Instant::now());
                        if wait.is_zero() {
                            Some(Duration::ZERO)
                        } else {
                            self.timer.arm(Some(wait))?;
                            None
                        }
                    }
                    None => {
                        self.timer.arm(None)?;
                        None
                    }
                }
            };
            self.wait(wait)?;
        }
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
                    self.readable |= event.is_readable() || event.is_error();
                    self.writable |= event.is_writable();
                }
                TIMER => self.timer.acknowledge(),
                _ => {}
            }
        }
        Ok(())
    }

    fn receive_batch(&mut self) {
        while self.readable && self.received.len() < RECV_BATCH {
            match self.socket.recv_from(&mut self.recv_buffer) {
                Ok((len, from)) => {
                    let mut datagram = self.spare.pop().unwrap_or_default();
                    datagram.clear();
                    datagram.extend_from_slice(self.recv_buffer.get(..len).unwrap_or_default());
                    self.received.push((datagram, from));
                }
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => self.readable = false,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => {
                    // E.g. ECONNREFUSED from an ICMP error: it concerns one
                    // earlier datagram, not the socket.
                    tracing::debug!(%error, "UDP receive error");
                }
            }
        }
    }

    fn send_queued(&mut self) {
        while self.writable {
            let Some(next) = self.outgoing.front() else {
                return;
            };
            match self.socket.send_to(&next.data, next.to) {
                Ok(_) => {}
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                    self.writable = false;
                    return;
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => {
                    self.send_errors += 1;
                    tracing::debug!(%error, to = %next.to, errors = self.send_errors, "UDP send error: datagram lost");
                }
            }
            if let Some(sent) = self.outgoing.pop_front() {
                self.spare.push(sent.data);
            }
        }
    }
}
