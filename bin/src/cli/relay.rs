//! An in-process lossy link for `sift-demo`: a UDP relay between a client
//! and a server whose two directions are `sift::sim::link::Link`s (netem
//! syntax, corrupted datagrams delivered) clocked by the wall clock.
//!
//! `sift-link` is the full emulator with its own CLI; this is the smallest
//! relay the demo needs to run in one process. It listens on the loopback
//! of the server's family (`127.0.0.1` or `::1`), and its sockets accept
//! the zero-checksum datagrams sift sends with corruption notices on,
//! which IPv6 drops unless asked (`UDP_NO_CHECK6_RX`). Each datagram's ECN
//! field crosses the relay as the link leaves it (`ecn_socket`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use sift::io::{bind_udp, SocketOptions};
use sift::sim::link::{Fate, Link, LinkConfig, LinkCounters};
use sift::wire::Ecn;

use super::ecn_socket::{enable_ecn_receive, recv_with_ecn, send_with_ecn};

/// The longest the relay sleeps before checking whether to stop.
const STOP_CHECK: Duration = Duration::from_millis(50);
/// Datagrams larger than this are not relayed (sift sends at most ~1350).
const MAX_DATAGRAM: usize = 65_535;

/// A running relay; stops when dropped or `stop`ped.
pub struct Relay {
    listen: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<std::io::Result<[LinkCounters; 2]>>>,
}

impl Relay {
    /// Listens on a loopback port of `server`'s family and relays to
    /// `server`: `forward` applies client → server, `reverse` server →
    /// client.
    pub fn start(
        server: SocketAddr,
        forward: LinkConfig,
        reverse: LinkConfig,
        seed: u64,
    ) -> std::io::Result<Self> {
        let loopback: IpAddr = if server.is_ipv6() {
            Ipv6Addr::LOCALHOST.into()
        } else {
            Ipv4Addr::LOCALHOST.into()
        };
        let options = SocketOptions {
            accept_zero_checksums: true,
            ..SocketOptions::default()
        };
        let (client_side, _) = bind_udp(SocketAddr::new(loopback, 0), options)?;
        let (server_side, _) = bind_udp(SocketAddr::new(loopback, 0), options)?;
        server_side.connect(server)?;
        enable_ecn_receive(&client_side)?;
        enable_ecn_receive(&server_side)?;
        let listen = client_side.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let state = RelayLoop {
            client_side,
            server_side,
            server,
            client: None,
            directions: [
                Direction::new(forward, seed),
                Direction::new(reverse, seed ^ 0x9e37_79b9_7f4a_7c15),
            ],
            stop: Arc::clone(&stop),
        };
        let thread = std::thread::Builder::new()
            .name("sift-demo relay".into())
            .spawn(move || state.run())?;
        Ok(Self {
            listen,
            stop,
            thread: Some(thread),
        })
    }

    /// Where clients send to.
    pub fn listen_addr(&self) -> SocketAddr {
        self.listen
    }

    /// Stops the relay and returns its counters: `[forward, reverse]`.
    pub fn stop(mut self) -> std::io::Result<[LinkCounters; 2]> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(std::io::Error::other("the relay thread panicked")),
            None => Ok(Default::default()),
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

struct Direction {
    link: Link,
    next_id: u64,
}

impl Direction {
    fn new(config: LinkConfig, seed: u64) -> Self {
        let mut link = Link::new(config, seed);
        // Lets `corrupt-where header|payload` find sift's header region.
        link.set_header_len(sift::wire::header_region_len);
        Self { link, next_id: 0 }
    }

    fn offer(&mut self, now: Instant, datagram: Vec<u8>, ecn: Ecn) {
        self.next_id += 1;
        let fate = self.link.send(now, self.next_id, datagram, ecn);
        tracing::trace!(?fate, "relayed datagram");
        if matches!(fate, Fate::QueueDrop) {
            tracing::debug!("relay queue full");
        }
    }
}

struct RelayLoop {
    client_side: UdpSocket,
    server_side: UdpSocket,
    server: SocketAddr,
    /// The client's address, learned from its first datagram.
    client: Option<SocketAddr>,
    /// `[client → server, server → client]`.
    directions: [Direction; 2],
    stop: Arc<AtomicBool>,
}

impl RelayLoop {
    fn run(mut self) -> std::io::Result<[LinkCounters; 2]> {
        let mut buf = vec![0u8; MAX_DATAGRAM];
        while !self.stop.load(Ordering::Relaxed) {
            self.wait_for_input();
            let now = Instant::now();
            while let Some((len, from, ecn)) = receive(&self.client_side, &mut buf)? {
                self.client = Some(from);
                self.directions[0].offer(now, buf[..len].to_vec(), ecn);
            }
            while let Some((len, _, ecn)) = receive(&self.server_side, &mut buf)? {
                self.directions[1].offer(now, buf[..len].to_vec(), ecn);
            }
            let now = Instant::now();
            while let Some(delivery) = self.directions[0].link.poll_delivery(now) {
                let sent = send_with_ecn(
                    &self.server_side,
                    &delivery.bytes,
                    self.server,
                    delivery.ecn,
                );
                send_best_effort(sent);
            }
            while let Some(delivery) = self.directions[1].link.poll_delivery(now) {
                if let Some(client) = self.client {
                    let sent =
                        send_with_ecn(&self.client_side, &delivery.bytes, client, delivery.ecn);
                    send_best_effort(sent);
                }
            }
            for direction in &mut self.directions {
                // Nothing here reports an AQM's late drops: forget them.
                while direction.link.poll_late_drop().is_some() {}
            }
        }
        Ok([
            self.directions[0].link.counters(),
            self.directions[1].link.counters(),
        ])
    }

    /// Sleeps until a socket is readable, the next link event, or the stop check.
    fn wait_for_input(&self) {
        let now = Instant::now();
        let next_event = self
            .directions
            .iter()
            .filter_map(|d| d.link.next_event())
            .min()
            .map_or(STOP_CHECK, |at| {
                at.saturating_duration_since(now).min(STOP_CHECK)
            });
        // Round up so an event 0.3 ms away does not spin.
        let timeout_ms = next_event.as_micros().div_ceil(1000) as libc::c_int;
        let mut fds = [
            libc::pollfd {
                fd: self.client_side.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: self.server_side.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: `fds` is a valid array of two pollfd for the call's duration.
        unsafe {
            libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms);
        }
    }
}

/// One datagram, with its sender and ECN codepoint, if one is waiting.
fn receive(
    socket: &UdpSocket,
    buf: &mut [u8],
) -> std::io::Result<Option<(usize, SocketAddr, Ecn)>> {
    match recv_with_ecn(socket, buf) {
        Ok(got) => Ok(Some(got)),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(None),
        // A previous send hit a closed port (ICMP): not the relay's failure.
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => Ok(None),
        Err(e) => Err(e),
    }
}

/// UDP is lossy anyway: a failed send is one more lost datagram.
fn send_best_effort(result: std::io::Result<usize>) {
    if let Err(e) = result {
        tracing::debug!(error = %e, "relay send failed");
    }
}
