//! One UDP socket under a mio poll, and the outbox that sends a quiche
//! connection's packets no earlier than quiche's pacer wants them
//! (`SendInfo::at`; quiche's examples send at once, sift paces, and behind
//! a 12-packet queue unpaced bursts would be an unfair handicap). One
//! `sendto` per datagram, as quiche's examples do: no GSO.

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use mio::net::UdpSocket;
use mio::{Events, Interest, Poll, Token};

use crate::peers::net;
use crate::peers::settings::MAX_DATAGRAM_SIZE;

/// A packet due within this much of now goes now: the poll wakes in whole
/// milliseconds, so finer pacing would only spin.
pub const PACING_GRANULARITY: Duration = Duration::from_millis(1);

/// How long to wait before retrying a send the kernel refused as full.
const SEND_RETRY: Duration = Duration::from_millis(1);

/// The largest datagram read (anything larger is not ours: quiche refuses it).
const RECV_BUFFER: usize = 65_535;

const SOCKET: Token = Token(0);

/// A bound, non-blocking UDP socket and its poll.
pub struct UdpLoop {
    socket: UdpSocket,
    poll: Poll,
    events: Events,
    local: SocketAddr,
    recv_buffer: Vec<u8>,
}

impl UdpLoop {
    /// Binds `addr` (port 0 picks a free one; `peers::net`'s buffers).
    pub fn bind(addr: SocketAddr) -> io::Result<Self> {
        let mut socket = UdpSocket::from_std(net::bind_udp(addr)?);
        let poll = Poll::new()?;
        poll.registry()
            .register(&mut socket, SOCKET, Interest::READABLE)?;
        let local = socket.local_addr()?;
        Ok(Self {
            socket,
            poll,
            events: Events::with_capacity(64),
            local,
            recv_buffer: vec![0; RECV_BUFFER],
        })
    }

    /// The address bound.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Waits until a datagram arrives or `deadline` passes (forever without
    /// one), then hands every queued datagram to `on_datagram`.
    pub fn wait(
        &mut self,
        deadline: Option<Instant>,
        mut on_datagram: impl FnMut(&mut [u8], SocketAddr),
    ) -> io::Result<()> {
        let timeout = deadline.map(|at| at.saturating_duration_since(Instant::now()));
        match self.poll.poll(&mut self.events, timeout) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return Ok(()),
            result => result?,
        }
        loop {
            match self.socket.recv_from(&mut self.recv_buffer) {
                Ok((len, from)) => on_datagram(&mut self.recv_buffer[..len], from),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // An ICMP error from an earlier send (the peer went away):
                // quiche's own timers deal with a dead path.
                Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Sends a datagram that needs no pacing (version negotiation).
    pub fn send_now(&self, datagram: &[u8], to: SocketAddr) -> io::Result<()> {
        match self.socket.send_to(datagram, to) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
            result => result.map(|_| ()),
        }
    }
}

/// What `Outbox::flush` stopped at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flushed {
    /// quiche has nothing more to send now.
    Idle,
    /// The next packet is held until this time (pacing, or a full socket).
    HeldUntil(Instant),
}

/// A connection's next packet, held until its pacing time.
pub struct Outbox {
    packet: Vec<u8>,
    held: Option<(usize, quiche::SendInfo)>,
}

impl Default for Outbox {
    fn default() -> Self {
        Self::new(MAX_DATAGRAM_SIZE)
    }
}

impl Outbox {
    /// An outbox for packets of up to `max_datagram` bytes.
    pub fn new(max_datagram: usize) -> Self {
        Self {
            packet: vec![0; max_datagram],
            held: None,
        }
    }

    /// Sends `conn`'s packets that are due, in order, and stops at the first
    /// one that is not (or when quiche has none).
    pub fn flush(
        &mut self,
        udp: &UdpLoop,
        conn: &mut quiche::Connection,
    ) -> Result<Flushed, quiche::Error> {
        self.flush_from(&[udp], conn)
    }

    /// As [`Outbox::flush`], each packet sent from the socket bound to the
    /// address quiche sends it from (`SendInfo::from`; the first socket when
    /// none is): a connection that migrates has a socket per path.
    pub fn flush_from(
        &mut self,
        sockets: &[&UdpLoop],
        conn: &mut quiche::Connection,
    ) -> Result<Flushed, quiche::Error> {
        loop {
            if let Some((len, info)) = self.held {
                let now = Instant::now();
                if info.at > now + PACING_GRANULARITY {
                    return Ok(Flushed::HeldUntil(info.at));
                }
                let udp = sockets
                    .iter()
                    .find(|s| s.local_addr() == info.from)
                    .or(sockets.first());
                let Some(udp) = udp else {
                    return Ok(Flushed::Idle);
                };
                match udp.socket.send_to(&self.packet[..len], info.to) {
                    Ok(_) => self.held = None,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        return Ok(Flushed::HeldUntil(now + SEND_RETRY));
                    }
                    // A send error on UDP (no route, refused) loses this
                    // one datagram, as the network could; recovery resends.
                    Err(_) => self.held = None,
                }
            }
            match conn.send(&mut self.packet) {
                Ok((len, info)) => self.held = Some((len, info)),
                Err(quiche::Error::Done) => return Ok(Flushed::Idle),
                Err(e) => return Err(e),
            }
        }
    }
}

/// The earlier of two optional deadlines.
pub fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// When `conn`'s own timer (loss detection, idle, ack delay) fires.
pub fn timer_deadline(conn: &quiche::Connection) -> Option<Instant> {
    conn.timeout_instant()
}

impl Flushed {
    /// The time the held packet is due, if one is held.
    pub fn deadline(self) -> Option<Instant> {
        match self {
            Flushed::Idle => None,
            Flushed::HeldUntil(at) => Some(at),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_prefers_the_sooner_and_ignores_absent_deadlines() {
        let now = Instant::now();
        let later = now + Duration::from_secs(1);
        assert_eq!(earliest(Some(now), Some(later)), Some(now));
        assert_eq!(earliest(None, Some(later)), Some(later));
        assert_eq!(earliest(None, None), None);
    }
}
