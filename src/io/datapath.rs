//! One endpoint's socket and the work of one turn of its driver loop,
//! whatever runtime waits for the socket: the mio loop (`driver.rs`) and
//! the tokio driver (`crate::tokio`) share it.
//!
//! One turn:
//! 1. read datagrams from the socket until WouldBlock (at most a batch per
//!    turn), without holding the endpoint — with GRO one `recvmsg` returns
//!    a run of them, otherwise one `recvmmsg` returns up to 32 (a worker of
//!    a multi-worker server stops GRO once a run brings it another
//!    worker's datagrams: `stop_gro`);
//! 2. under the host's lock: feed them to the endpoint, fire due timers,
//!    and collect a batch of datagrams to send — consecutive equal-size
//!    datagrams of one connection go into one GSO send when the socket
//!    allows (one connection's only: a multi-worker server's kernel steers
//!    a whole batch by its first connection ID);
//! 3. send them until done or WouldBlock (the rest waits for the socket to
//!    become writable) — GSO batches with `sendmsg`, single datagrams 32 at
//!    a time with `sendmmsg`.
//!
//! UDP checksums, with corruption notices offered: the socket accepts
//! datagrams without a checksum, and each datagram leaves with or without
//! one as its connection asks (`Transmit::checksum_free`, decided in
//! `conn::checksums`): `SO_NO_CHECK` is switched between system calls, when
//! the next datagram wants the other setting. Checksummed datagrams keep
//! GSO and GRO (Linux refuses segmentation without checksums), so a clean
//! path runs at the offloaded cost and a lossy or corrupting one still
//! delivers corrupted bytes to be named. Switches are counted
//! (`checksum_switches`); one per batch at most.
//!
//! Except to a loopback peer (127.0.0.0/8, `::1`, IPv4-mapped or not):
//! there a datagram always keeps its checksum ([`checksum_free_to`]).
//! Nothing between two sockets on loopback can damage a datagram, and the
//! receiving kernel does not verify a checksum the sending one offloaded,
//! so a checksum-free send would change nothing that arrives (damage done
//! in user space before the send, as `sift-link` does, reaches the
//! receiver either way) and would only cost GSO and GRO. Under load that
//! cost feeds itself: 1000 downloads on loopback lose packets to full
//! socket buffers, each loss starts a connection's checksum-free hold
//! (`conn::checksums`), the datagrams leave one per system call and
//! arrive one per read, and the extra work overflows the buffers again
//! (issue 37: 922 of 1000 senders went checksum-free, the server's CPU
//! per client rose by half and its socket dropped thousands of datagrams).
//! The one setup this gives up: `tc netem corrupt` on the `lo` device
//! itself, whose damaged datagrams the receiving kernel then drops as
//! bad-checksum ones; impair a veth pair (`interop/netem`) or relay
//! through `sift-link` instead.
//!
//! The runtime tells the datapath when the socket became readable or
//! writable and, when a turn says it is not busy, sleeps until then or
//! until the turn's next timer.

use std::collections::VecDeque;
use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Instant;

use super::batch::{
    enable_gro, gso_supported, recv_many, recv_segments, send_many, send_segments, set_gro,
    RecvSlots, MAX_BATCH_BYTES, MAX_GSO_SEGMENTS, MAX_MMSG,
};
use super::ecn::enable_ecn_reception;
use super::socket::{bind_udp, set_checksum_free_sends, SocketOptions, SocketReport};
use super::steering::{bind_reuseport_group, steering_key};
use crate::endpoint::{ConnectionHandle, Endpoint, Transmit};
use crate::wire::{CidSteering, Ecn};

/// The socket options a datapath binds with, and whether its datagrams
/// choose their own checksums: with corruption notices asked for
/// (`disable_checksums`) the socket accepts zero checksums and starts with
/// them on (see the module docs).
fn checksum_options(options: SocketOptions) -> (SocketOptions, bool) {
    let per_datagram_checksums = options.disable_checksums;
    let options = SocketOptions {
        disable_checksums: false,
        accept_zero_checksums: options.accept_zero_checksums || per_datagram_checksums,
        ..options
    };
    (options, per_datagram_checksums)
}

/// Datagrams read per turn before the endpoint is fed (bounds how long the
/// send side waits behind a flood of arrivals).
const RECV_BATCH: usize = 64;
/// Datagrams collected per turn before they are written to the socket.
const SEND_BATCH: usize = 64;

/// Whether the loop goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    /// Keep driving the endpoint.
    Continue,
    /// Stop once the datagrams already collected are sent.
    Stop,
}

/// What one step changed that an application may be waiting for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Connections handed datagrams in this step, in arrival order (a
    /// connection that got several in a row is named once).
    pub routed: Vec<ConnectionHandle>,
    /// Connection timers fired: an idle timeout or the end of a closing
    /// period may have closed a connection.
    pub timers_fired: bool,
    /// The connections whose timers fired ([`Endpoint::timed_out`]).
    pub timed_out: Vec<ConnectionHandle>,
}

impl Progress {
    /// Anything changed at all.
    pub fn any(&self) -> bool {
        !self.routed.is_empty() || self.timers_fired
    }
}

/// Whoever owns the endpoint the driver runs: the blocking and async APIs
/// keep it behind a mutex shared with the application.
pub trait EndpointHost {
    /// Runs `step` with exclusive access to the endpoint and says whether
    /// the driver should keep going. `step` fills a cleared `Progress`
    /// with what changed (datagrams arrived, timers fired), so the host
    /// knows whom to wake; the host owns it so that a steady flow
    /// allocates nothing.
    fn with_endpoint(&self, step: &mut dyn FnMut(&mut Endpoint, &mut Progress)) -> Control;

    /// Every datagram the last `with_endpoint` collected has been handed
    /// to the socket (or dropped on a socket error).
    fn on_flushed(&self) {}

    /// A socket the application bound for the endpoint to move to (a
    /// client changing networks), taken once by the driver. The host has
    /// already told the endpoint (`Endpoint::rebound`).
    fn take_rebind(&self) -> Option<Datapath> {
        None
    }
}

/// What one turn found, for the runtime to decide how to wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Turn {
    /// The host asked to stop and every collected datagram is sent: the
    /// loop ends.
    pub stop: bool,
    /// More can be done at once (the socket may hold more datagrams, or
    /// more are waiting to be sent and the socket takes them): run another
    /// turn without sleeping.
    pub busy: bool,
    /// The endpoint's next timer (including pacing), if any.
    pub next_timer: Option<Instant>,
}

/// Datagrams waiting for the socket: one datagram, or with GSO several of
/// `segment_size` bytes (the last may be shorter) of one connection.
#[derive(Debug)]
struct Outgoing {
    to: SocketAddr,
    /// The local address they leave from (`Transmit::from`): this
    /// datapath's, or another socket's of the same endpoint, which it is
    /// handed to (`Datapath::hand_over`).
    from: SocketAddr,
    /// Whose datagrams these are (`None`: the endpoint's own, never
    /// batched). Only one connection's datagrams share a batch: the kernel
    /// hands a batch to a multi-worker server's sockets as one, steered by
    /// the first datagram's connection ID, so another connection's
    /// datagrams in it would reach a worker that does not know them.
    connection: Option<ConnectionHandle>,
    /// The datagrams are its first `len` bytes. The rest is room written
    /// before and kept, so the next datagram's room is not zeroed again
    /// (a GSO batch's tail was: 2% of a loopback sender's CPU).
    data: Vec<u8>,
    len: usize,
    segment_size: usize,
    segments: usize,
    /// Send without UDP checksums (never a GSO batch of several).
    checksum_free: bool,
    /// The ECN codepoint of every datagram here (a GSO batch shares one).
    ecn: Ecn,
}

impl Outgoing {
    /// One datagram, the first `transmit.len` bytes of `data`.
    fn single(transmit: Transmit, data: Vec<u8>) -> Self {
        Self {
            to: transmit.to,
            from: transmit.from,
            connection: transmit.connection,
            data,
            len: transmit.len,
            segment_size: transmit.len,
            segments: 1,
            checksum_free: checksum_free_to(&transmit),
            ecn: transmit.ecn,
        }
    }

    /// The datagrams, back to back.
    fn datagrams(&self) -> &[u8] {
        self.data.get(..self.len).unwrap_or_default()
    }

    /// More datagrams may join: checksummed, every segment so far is
    /// full-size (only the last may be shorter), and one more of up to
    /// `max_datagram` bytes fits the segment and byte limits.
    fn is_open(&self, max_datagram: usize) -> bool {
        !self.checksum_free
            && self.segments < MAX_GSO_SEGMENTS
            && self.len == self.segment_size * self.segments
            && self.len + max_datagram <= MAX_BATCH_BYTES
    }
}

/// Counters of the loop, logged when it ends.
#[derive(Clone, Copy, Debug, Default)]
struct LoopCounters {
    turns: u64,
    datagrams_sent: u64,
    send_calls: u64,
    datagrams_received: u64,
    recv_calls: u64,
    send_errors: u64,
    checksum_switches: u64,
    /// GRO was turned off for mixing workers' datagrams (`stop_gro`).
    gro_stopped: bool,
}

/// Read from the socket, not yet fed to the endpoint: one datagram, or a
/// GRO run of `segment`-byte datagrams (the last may be shorter) in the
/// buffer the kernel wrote it to.
#[derive(Debug)]
struct Received {
    buffer: Vec<u8>,
    /// Bytes of `buffer` read.
    len: usize,
    segment: usize,
    from: SocketAddr,
    /// The ECN field of its datagrams (one for a GRO run: the kernel
    /// coalesces only datagrams with the same TOS byte).
    ecn: Ecn,
}

impl Received {
    fn datagrams(&self) -> usize {
        self.len.div_ceil(self.segment)
    }

    /// A GRO run, in a run buffer (`Datapath::run_buffers`); a lone
    /// datagram is in a spare one.
    fn is_run(&self) -> bool {
        self.len > self.segment
    }
}

/// The socket of one endpoint and the datagrams in flight between it and
/// the endpoint.
#[derive(Debug)]
pub struct Datapath {
    socket: UdpSocket,
    local: SocketAddr,
    report: SocketReport,
    /// Received datagrams of this turn.
    received: Vec<Received>,
    /// Buffers a GRO run is read into, full size, kept for the next runs:
    /// at most `RECV_BATCH / 2` (a run holds two datagrams or more).
    run_buffers: Vec<Vec<u8>>,
    /// Collected, not yet written (WouldBlock keeps them for later).
    outgoing: VecDeque<Outgoing>,
    /// Spare buffers, so a steady flow allocates nothing.
    spare: Vec<Vec<u8>>,
    /// The largest datagram the endpoint sends.
    max_datagram: usize,
    /// Send consecutive same-size datagrams in one GSO `sendmsg`.
    gso: bool,
    /// Datagrams may ask to leave without a UDP checksum (notices offered).
    per_datagram_checksums: bool,
    /// The socket currently sends without checksums.
    sending_checksum_free: bool,
    /// Slots for `recvmmsg`, which reads many datagrams per call. `None`
    /// when the kernel coalesces arrivals itself (GRO): then one `recvmsg`
    /// returns a run of them.
    recv_slots: Option<RecvSlots>,
    /// The socket may have more to read (edge-triggered: until WouldBlock).
    readable: bool,
    /// The socket accepted our last write.
    writable: bool,
    /// Which worker of a multi-worker server this is (`None`: the only
    /// endpoint on its address).
    worker: Option<CidSteering>,
    /// Datagrams were collected and not all written yet.
    awaiting_flush: bool,
    /// Datagrams leave with the ECN codepoint their connection chose (an
    /// `IP_TOS`/`IPV6_TCLASS` control message); off once the kernel
    /// refuses one (`refuses_ecn`).
    ecn_cmsgs: bool,
    counters: LoopCounters,
}

impl Datapath {
    /// Binds a non-blocking UDP socket at `addr` with `options`.
    /// `max_datagram` is the largest datagram the endpoint sends. GSO and
    /// GRO are used when the kernel has them. `disable_checksums` (corruption
    /// notices offered) does not turn checksums off for good: the socket
    /// accepts datagrams without one and sends each datagram the way its
    /// connection asks (see the module docs).
    pub fn bind(addr: SocketAddr, options: SocketOptions, max_datagram: usize) -> io::Result<Self> {
        let (socket_options, per_datagram_checksums) = checksum_options(options);
        let (socket, report) = bind_udp(addr, socket_options)?;
        Self::from_socket(socket, report, per_datagram_checksums, max_datagram)
    }

    /// Binds `workers` datapaths to `addr` in one `SO_REUSEPORT` group, in
    /// worker order, with the kernel routing each datagram to the worker
    /// its connection ID routes to under a key drawn here from the
    /// operating system (`io::steering`); each needs an endpoint whose
    /// config carries that worker's [`Datapath::cid_steering`]
    /// (`Config::cid_steering`), so that its IDs route back to it.
    pub fn bind_workers(
        addr: SocketAddr,
        options: SocketOptions,
        max_datagram: usize,
        workers: usize,
    ) -> io::Result<Vec<Self>> {
        let (socket_options, per_datagram_checksums) = checksum_options(options);
        let key = steering_key();
        bind_reuseport_group(addr, socket_options, key, workers)?
            .into_iter()
            .enumerate()
            .map(|(index, (socket, report))| {
                let mut datapath =
                    Self::from_socket(socket, report, per_datagram_checksums, max_datagram)?;
                datapath.worker = CidSteering::new(index, workers, key);
                Ok(datapath)
            })
            .collect()
    }

    /// Which worker of its group this datapath is, with the group's key
    /// (`None`: the only endpoint on its address): what its endpoint's
    /// `Config::cid_steering` must be.
    pub fn cid_steering(&self) -> Option<CidSteering> {
        self.worker
    }

    fn from_socket(
        socket: UdpSocket,
        report: SocketReport,
        per_datagram_checksums: bool,
        max_datagram: usize,
    ) -> io::Result<Self> {
        let gso = gso_supported(&socket);
        let gro = enable_gro(&socket);
        let local = socket.local_addr()?;
        let ecn = enable_ecn_reception(&socket, local.is_ipv6());
        tracing::debug!(%local, gso, gro, ecn, "UDP offloads and ECN");
        Ok(Self {
            socket,
            local,
            report,
            received: Vec::with_capacity(RECV_BATCH),
            outgoing: VecDeque::with_capacity(SEND_BATCH),
            spare: Vec::new(),
            // A GRO run can fill a whole IP datagram even when GRO is off
            // for us: a peer's datagram is never larger than that.
            run_buffers: Vec::new(),
            max_datagram: max_datagram.clamp(1200, MAX_BATCH_BYTES),
            gso,
            per_datagram_checksums,
            sending_checksum_free: false,
            recv_slots: (!gro).then(RecvSlots::default),
            readable: true,
            writable: true,
            worker: None,
            awaiting_flush: false,
            ecn_cmsgs: true,
            counters: LoopCounters::default(),
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

    /// Whether sends are batched with GSO.
    pub fn uses_gso(&self) -> bool {
        self.gso
    }

    /// The socket, for registering it with a runtime and reading its
    /// options back.
    pub fn socket(&self) -> &UdpSocket {
        &self.socket
    }

    /// The runtime saw the socket become readable.
    pub fn set_readable(&mut self) {
        self.readable = true;
    }

    /// The runtime saw the socket become writable.
    pub fn set_writable(&mut self) {
        self.writable = true;
    }

    /// Whether the last turn read until WouldBlock is still to be seen:
    /// false once a read found the socket empty.
    pub fn is_readable(&self) -> bool {
        self.readable
    }

    /// False once a write found the socket's buffer full.
    pub fn is_writable(&self) -> bool {
        self.writable
    }

    /// Datagrams collected and not yet written: the runtime must wait for
    /// the socket to become writable.
    pub fn has_unsent(&self) -> bool {
        !self.outgoing.is_empty()
    }

    /// Moves the datagrams collected here that leave from `other`'s
    /// address into its queue: an endpoint that receives on two sockets
    /// (a server's preferred address, `Config::preferred_address`) hands
    /// each socket's turn whatever connection sends next. Whether any
    /// moved; they go out at `other`'s next turn.
    pub fn hand_over(&mut self, other: &mut Datapath) -> bool {
        let (mine, theirs): (VecDeque<Outgoing>, VecDeque<Outgoing>) = self
            .outgoing
            .drain(..)
            .partition(|o| o.from != other.local || o.from == self.local);
        self.outgoing = mine;
        let moved = !theirs.is_empty();
        other.outgoing.extend(theirs);
        moved
    }

    /// Logs the loop's counters (when the loop ends).
    pub fn log_counters(&self) {
        tracing::debug!(local = %self.local, counters = ?self.counters, "driver stopped");
    }

    /// One turn: read, step the endpoint under the host's lock, write.
    pub fn turn(&mut self, host: &dyn EndpointHost) -> Turn {
        self.counters.turns += 1;
        self.receive_batch();
        let (control, next_timer, send_batch_full) = self.step(host);
        self.send_queued();
        if self.awaiting_flush && self.outgoing.is_empty() {
            self.awaiting_flush = false;
            host.on_flushed();
        }
        let more_to_send = send_batch_full || !self.outgoing.is_empty();
        Turn {
            stop: control == Control::Stop && self.outgoing.is_empty(),
            busy: self.readable || (self.writable && more_to_send),
            next_timer,
        }
    }

    /// Feeds the received datagrams, fires timers and collects datagrams to
    /// send, under the host's lock. Returns the host's verdict, the next
    /// timer, and whether the send batch filled up.
    fn step(&mut self, host: &dyn EndpointHost) -> (Control, Option<Instant>, bool) {
        let now = Instant::now();
        let mut next_timer = None;
        let mut send_batch_full = false;
        let mut collected_total = 0;
        let room = SEND_BATCH.saturating_sub(self.queued_datagrams());
        let max_datagram = self.max_datagram;
        let gso = self.gso;
        let local = self.local;
        let received = &mut self.received;
        let run_buffers = &mut self.run_buffers;
        let outgoing = &mut self.outgoing;
        let spare = &mut self.spare;
        let control = host.with_endpoint(&mut |endpoint, progress| {
            progress.routed.clear();
            progress.timers_fired = false;
            progress.timed_out.clear();
            for mut received in received.drain(..) {
                let datagrams = received.buffer[..received.len].chunks_mut(received.segment);
                for datagram in datagrams {
                    let from = received.from;
                    if let Some(handle) = endpoint.recv_on(datagram, from, local, received.ecn, now)
                    {
                        if progress.routed.last() != Some(&handle) {
                            progress.routed.push(handle);
                        }
                    }
                }
                if received.is_run() {
                    run_buffers.push(received.buffer);
                } else {
                    spare.push(received.buffer);
                }
            }
            if endpoint.timeout(now).is_some_and(|at| at <= now) {
                endpoint.on_timeout(now);
                progress.timers_fired = true;
                progress.timed_out.extend_from_slice(endpoint.timed_out());
            }
            let mut collected = 0;
            while collected < room {
                if !collect_one(endpoint, now, outgoing, spare, max_datagram, gso) {
                    break;
                }
                collected += 1;
            }
            collected_total = collected;
            send_batch_full = collected == room;
            next_timer = endpoint.timeout(now);
        });
        self.awaiting_flush |= collected_total > 0;
        (control, next_timer, send_batch_full)
    }

    fn queued_datagrams(&self) -> usize {
        self.outgoing.iter().map(|o| o.segments).sum()
    }

    /// Datagrams read and not yet fed to the endpoint (a GRO run holds
    /// several).
    fn received_datagrams(&self) -> usize {
        self.received.iter().map(Received::datagrams).sum()
    }

    fn receive_batch(&mut self) {
        let fd = self.socket.as_raw_fd();
        while self.readable && self.received_datagrams() < RECV_BATCH {
            let result = if self.recv_slots.is_some() {
                self.receive_many(fd)
            } else {
                self.receive_coalesced(fd)
            };
            match result {
                Ok(()) => self.counters.recv_calls += 1,
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

    /// One `recvmsg`: a datagram, or with GRO a run of them. A run stays
    /// in the buffer it was read into and goes to the endpoint datagram by
    /// datagram from there; copying it out, one buffer per datagram, was
    /// 3.6% of a loopback download's client CPU (perf, 1 GiB). A lone
    /// datagram is copied into a spare buffer, so a flood of small ones
    /// holds no run-sized buffers.
    fn receive_coalesced(&mut self, fd: RawFd) -> io::Result<()> {
        let mut buffer = self
            .run_buffers
            .pop()
            .unwrap_or_else(|| vec![0; MAX_BATCH_BYTES]);
        let got = match recv_segments(fd, &mut buffer) {
            Ok(got) => got,
            Err(error) => {
                self.run_buffers.push(buffer);
                return Err(error);
            }
        };
        let len = got.len.min(buffer.len());
        let segment = got.segment_size.max(1);
        if len <= segment {
            if len > 0 {
                let mut datagram = self.spare.pop().unwrap_or_default();
                datagram.clear();
                datagram.extend_from_slice(&buffer[..len]);
                self.push_received(datagram, len, len, got.from, got.ecn);
            }
            self.run_buffers.push(buffer);
            return Ok(());
        }
        let strays = self.worker.is_some_and(|me| {
            buffer[..len].chunks(segment).any(|datagram| {
                me.worker_of_datagram(datagram)
                    .is_some_and(|worker| worker != me.index())
            })
        });
        self.push_received(buffer, len, segment, got.from, got.ecn);
        if strays {
            self.stop_gro();
        }
        Ok(())
    }

    fn push_received(
        &mut self,
        buffer: Vec<u8>,
        len: usize,
        segment: usize,
        from: SocketAddr,
        ecn: Ecn,
    ) {
        let received = Received {
            buffer,
            len,
            segment,
            from,
            ecn,
        };
        self.counters.datagrams_received += received.datagrams() as u64;
        self.received.push(received);
    }

    /// A worker got a GRO run holding other workers' datagrams. The kernel
    /// merges datagrams by address and port alone, then steers the run by
    /// its first datagram: a client with several connections on one socket
    /// has them spread over the workers, so its runs mix them, and the
    /// strays are lost here (the endpoint drops them unanswered). Without
    /// GRO every datagram is steered by its own ID, so the worker reads
    /// datagram by datagram (`recvmmsg`) from now on. A run already queued
    /// reads as one datagram of coalesced packets, of which the connection
    /// takes those with its IDs. (A peer can cause this on purpose; it costs
    /// the worker GRO, no more.)
    fn stop_gro(&mut self) {
        if self.recv_slots.is_some() {
            return;
        }
        if set_gro(&self.socket, false) {
            tracing::info!(local = %self.local, "a GRO run mixed several workers' connections: receiving without GRO");
            self.recv_slots = Some(RecvSlots::default());
            self.counters.gro_stopped = true;
        }
    }

    /// One `recvmmsg`: up to `MAX_MMSG` datagrams.
    fn receive_many(&mut self, fd: RawFd) -> io::Result<()> {
        // Out of `self` while its datagrams are pushed, back afterwards.
        let Some(mut slots) = self.recv_slots.take() else {
            return Ok(());
        };
        let result = recv_many(fd, &mut slots).map(|got| {
            for (index, (len, from, ecn)) in got.into_iter().enumerate() {
                if len == 0 {
                    continue; // truncated (or empty): nothing sift can use
                }
                let mut datagram = self.spare.pop().unwrap_or_default();
                datagram.clear();
                datagram.extend_from_slice(slots.datagram(index, len));
                self.push_received(datagram, len, len, from, ecn);
            }
        });
        self.recv_slots = Some(slots);
        result
    }

    fn send_queued(&mut self) {
        let fd = self.socket.as_raw_fd();
        while self.writable {
            let Some(checksum_free) = self.outgoing.front().map(|o| o.checksum_free) else {
                return;
            };
            self.set_checksum_free(checksum_free);
            let Some(next) = self.outgoing.front() else {
                return;
            };
            if next.segments == 1 && self.outgoing.len() > 1 {
                self.send_many_queued(fd);
                continue;
            }
            let ecn = if self.ecn_cmsgs {
                next.ecn
            } else {
                Ecn::NotEct
            };
            let (to, segments) = (next.to, next.segments);
            match send_segments(fd, to, next.datagrams(), next.segment_size, ecn) {
                Ok(_) => {
                    self.counters.send_calls += 1;
                    self.counters.datagrams_sent += segments as u64;
                }
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                    self.writable = false;
                    return;
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) if ecn != Ecn::NotEct && self.refuses_ecn(&error) => continue,
                Err(error) if segments > 1 && self.gso => {
                    // The kernel or the device refused segmentation: send
                    // this batch one by one and stop batching.
                    tracing::info!(%error, "GSO send refused: sending one datagram per call");
                    self.gso = false;
                    if let Some(batch) = self.outgoing.pop_front() {
                        self.split_front(batch);
                    }
                    continue;
                }
                Err(error) => {
                    self.counters.send_errors += 1;
                    tracing::debug!(%error, %to, errors = self.counters.send_errors, "UDP send error: datagram lost");
                }
            }
            if let Some(sent) = self.outgoing.pop_front() {
                self.spare.push(sent.data);
            }
        }
    }

    /// A send with an ECN control message failed with `EINVAL`: a kernel
    /// that takes no `IP_TOS`/`IPV6_TCLASS` control messages (older ones
    /// refuse `IP_TOS` on an IPv6 socket). Datagrams leave not-ECT from
    /// now on (their connections' validation then fails, as on a path
    /// that clears the field); true if that is what happened, so the send
    /// is tried again.
    fn refuses_ecn(&mut self, error: &io::Error) -> bool {
        if error.raw_os_error() != Some(libc::EINVAL) || !self.ecn_cmsgs {
            return false;
        }
        tracing::info!(%error, "the kernel refuses ECN control messages: sending not-ECT");
        self.ecn_cmsgs = false;
        true
    }

    /// Switches the socket's checksums for what it sends next, if the
    /// datagrams may choose and the setting differs. A kernel that refuses
    /// is logged; the datagram then goes as the socket is.
    fn set_checksum_free(&mut self, checksum_free: bool) {
        if !self.per_datagram_checksums || checksum_free == self.sending_checksum_free {
            return;
        }
        match set_checksum_free_sends(&self.socket, checksum_free, self.local.is_ipv6()) {
            Ok(()) => {
                self.sending_checksum_free = checksum_free;
                self.counters.checksum_switches += 1;
            }
            Err(error) => {
                tracing::warn!(%error, checksum_free, "the kernel refused to switch UDP checksums");
                // Do not ask again for every datagram.
                self.per_datagram_checksums = false;
            }
        }
    }

    /// Sends the single datagrams at the front of the queue, all with the
    /// checksum setting of the first, with one `sendmmsg`.
    fn send_many_queued(&mut self, fd: RawFd) {
        let checksum_free = self.outgoing.front().is_some_and(|o| o.checksum_free);
        let ecn_cmsgs = self.ecn_cmsgs;
        let batch: Vec<(&[u8], SocketAddr, Ecn)> = self
            .outgoing
            .iter()
            .take(MAX_MMSG)
            .take_while(|o| o.segments == 1 && o.checksum_free == checksum_free)
            .map(|o| {
                (
                    o.datagrams(),
                    o.to,
                    if ecn_cmsgs { o.ecn } else { Ecn::NotEct },
                )
            })
            .collect();
        let marked = batch.iter().any(|(_, _, ecn)| *ecn != Ecn::NotEct);
        let sent = match send_many(fd, &batch) {
            Ok(sent) => {
                self.counters.send_calls += 1;
                self.counters.datagrams_sent += sent as u64;
                sent
            }
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                self.writable = false;
                return;
            }
            Err(error) if error.kind() == io::ErrorKind::Interrupted => return,
            Err(error) if marked && self.refuses_ecn(&error) => return,
            Err(error) => {
                // The first datagram failed: drop it, as a single send would.
                self.counters.send_errors += 1;
                tracing::debug!(%error, errors = self.counters.send_errors, "UDP send error: datagram lost");
                1
            }
        };
        for _ in 0..sent {
            if let Some(done) = self.outgoing.pop_front() {
                self.spare.push(done.data);
            }
        }
    }

    /// Puts the datagrams of a GSO batch back at the front one by one.
    fn split_front(&mut self, batch: Outgoing) {
        for segment in batch.datagrams().chunks(batch.segment_size.max(1)).rev() {
            self.outgoing.push_front(Outgoing {
                to: batch.to,
                from: batch.from,
                connection: batch.connection,
                data: segment.to_vec(),
                len: segment.len(),
                segment_size: segment.len(),
                segments: 1,
                checksum_free: batch.checksum_free,
                ecn: batch.ecn,
            });
        }
    }
}

/// Whether `transmit` leaves without a UDP checksum: as its connection
/// asks, except to a loopback peer, where a checksum costs nothing and
/// hides nothing (see the module docs).
fn checksum_free_to(transmit: &Transmit) -> bool {
    transmit.checksum_free && !transmit.to.ip().to_canonical().is_loopback()
}

/// Asks the endpoint for one datagram and queues it, into the last GSO
/// batch when it is the batch's connection's and fits there. The batch's
/// connection is asked first, so its batch fills before the endpoint turns
/// to the next connection. False when the endpoint has nothing to send.
fn collect_one(
    endpoint: &mut Endpoint,
    now: Instant,
    outgoing: &mut VecDeque<Outgoing>,
    spare: &mut Vec<Vec<u8>>,
    max_datagram: usize,
    gso: bool,
) -> bool {
    let open_batch = outgoing
        .back_mut()
        .filter(|last| gso && last.is_open(max_datagram));
    if let Some((last, handle)) = open_batch.and_then(|last| last.connection.map(|c| (last, c))) {
        // Write straight into the batch's tail; move it out if it cannot join.
        let start = last.len;
        let tail = room(&mut last.data, start, max_datagram);
        let Some(transmit) = endpoint.poll_transmit_on(handle, now, tail) else {
            return collect_new(endpoint, now, outgoing, spare, max_datagram);
        };
        if transmit.to == last.to
            && transmit.from == last.from
            && transmit.len <= last.segment_size
            && transmit.ecn == last.ecn
            && !checksum_free_to(&transmit)
        {
            last.len = start + transmit.len;
            last.segments += 1;
            return true;
        }
        let mut data = spare.pop().unwrap_or_default();
        let datagram = last
            .data
            .get(start..start + transmit.len)
            .unwrap_or_default();
        room(&mut data, 0, transmit.len).copy_from_slice(datagram);
        outgoing.push_back(Outgoing::single(transmit, data));
        return true;
    }
    collect_new(endpoint, now, outgoing, spare, max_datagram)
}

/// Asks the endpoint (whichever connection's turn it is) for one datagram
/// and queues it on its own. False when the endpoint has nothing to send.
fn collect_new(
    endpoint: &mut Endpoint,
    now: Instant,
    outgoing: &mut VecDeque<Outgoing>,
    spare: &mut Vec<Vec<u8>>,
    max_datagram: usize,
) -> bool {
    let mut data = spare.pop().unwrap_or_default();
    let Some(transmit) = endpoint.poll_transmit_datagram(now, room(&mut data, 0, max_datagram))
    else {
        spare.push(data);
        return false;
    };
    outgoing.push_back(Outgoing::single(transmit, data));
    true
}

/// `len` bytes of `data` from `start`, grown (zeroed) only where it never
/// reached before: what a datagram left there is written over, not cleared.
fn room(data: &mut Vec<u8>, start: usize, len: usize) -> &mut [u8] {
    if data.len() < start + len {
        data.resize(start + len, 0);
    }
    &mut data[start..start + len]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conn::Config;
    use crate::io::batch::send_segments;

    /// The destination connection ID of each datagram in a batch.
    fn dcids(batch: &Outgoing) -> Vec<crate::wire::ConnectionId> {
        batch
            .datagrams()
            .chunks(batch.segment_size)
            .map(|datagram| {
                crate::endpoint::parse_any_header(datagram)
                    .expect("a packet")
                    .dcid
            })
            .collect()
    }

    /// Short-header datagrams of `len` bytes, one to an ID of each of
    /// `workers` in turn, back to back (a GSO run).
    fn run_to(workers: &[&Datapath], len: usize) -> Vec<u8> {
        use rand::SeedableRng;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(len as u64);
        let mut run = Vec::new();
        for worker in workers {
            let mut datagram = vec![0x40];
            let steering = worker.cid_steering().expect("a worker");
            datagram.extend_from_slice(steering.draw(&mut rng).as_slice());
            datagram.resize(len, 0);
            run.extend_from_slice(&datagram);
        }
        run
    }

    /// What the runtime does when the socket turns readable.
    fn receive(datapath: &mut Datapath) {
        datapath.set_readable();
        datapath.receive_batch();
    }

    #[test]
    fn a_worker_that_gets_other_workers_datagrams_in_a_gro_run_stops_gro() {
        let mut workers = Datapath::bind_workers(
            "127.0.0.1:0".parse().unwrap(),
            SocketOptions::default(),
            1500,
            2,
        )
        .unwrap();
        let server = workers[0].local_addr();
        let client = UdpSocket::bind("127.0.0.1:0").unwrap();
        if !gso_supported(&client) || workers[0].recv_slots.is_some() {
            eprintln!("no GSO or GRO on this kernel: nothing to test");
            return;
        }
        // A run for worker 0 alone: it arrives whole, and GRO stays on.
        let run = run_to(&[&workers[0], &workers[0]], 100);
        send_segments(client.as_raw_fd(), server, &run, 100, Ecn::NotEct).unwrap();
        receive(&mut workers[0]);
        assert_eq!(workers[0].received_datagrams(), 2);
        assert_eq!(workers[0].received.len(), 1, "the run stays in one buffer");
        assert!(workers[0].recv_slots.is_none(), "GRO still on");
        // The kernel steers a run by its first datagram: worker 1's second
        // one comes to worker 0 too, which from now on reads without GRO.
        let run = run_to(&[&workers[0], &workers[1]], 100);
        send_segments(client.as_raw_fd(), server, &run, 100, Ecn::NotEct).unwrap();
        receive(&mut workers[0]);
        assert_eq!(workers[0].received_datagrams(), 4);
        assert!(workers[0].counters.gro_stopped);
        assert!(
            workers[0].recv_slots.is_some(),
            "reading datagram by datagram"
        );
        receive(&mut workers[1]);
        assert!(workers[1].received.is_empty());
        // A datagram of its own still arrives.
        let own = run_to(&[&workers[0]], 100);
        client.send_to(&own, server).unwrap();
        receive(&mut workers[0]);
        assert_eq!(workers[0].received_datagrams(), 5);
    }

    #[test]
    fn a_gso_batch_holds_one_connections_datagrams() {
        // Two connections from one socket to one server address: equal-size
        // Initials a kernel would batch happily. Batched together, a
        // multi-worker server would steer both by the first one's ID.
        let server: SocketAddr = "127.0.0.1:4433".parse().unwrap();
        let mut endpoint = Endpoint::new("127.0.0.1:5000".parse().unwrap(), None);
        let now = Instant::now();
        for seed in [1, 2] {
            let config = Config {
                tls: crate::crypto::tls::process_loopback_config(),
                rng_seed: seed,
                ..Config::default()
            };
            endpoint.connect(config, server, now).unwrap();
        }
        let (mut outgoing, mut spare) = (VecDeque::new(), Vec::new());
        while collect_one(&mut endpoint, now, &mut outgoing, &mut spare, 1500, true) {}
        let segments: Vec<usize> = outgoing.iter().map(|batch| batch.segments).collect();
        assert_eq!(
            segments,
            [1, 1],
            "one Initial each, in batches of their own"
        );
        let first = dcids(&outgoing[0]);
        let second = dcids(&outgoing[1]);
        assert_ne!(first[0], second[0]);
        for batch in [&first, &second] {
            assert!(batch.iter().all(|dcid| *dcid == batch[0]), "{batch:?}");
        }
    }

    #[test]
    fn a_reused_buffer_sends_only_the_datagram_written_last() {
        // A spare buffer that carried a 9000-byte datagram keeps its bytes:
        // the room for the next is written over, not zeroed, and only the
        // new datagram's length leaves.
        let mut data = vec![7u8; 9000];
        room(&mut data, 0, 1500)[..1200].fill(1);
        assert_eq!(data.len(), 9000, "no shrinking, no zeroing");
        let outgoing = Outgoing::single(transmit_to("127.0.0.1:4433", false), data);
        assert_eq!(outgoing.datagrams(), &[1u8; 1200][..]);
        // A batch's tail grows once, past what it ever held.
        let mut tail = vec![7u8; 100];
        assert_eq!(
            room(&mut tail, 80, 40),
            &[7u8; 20]
                .iter()
                .chain(&[0u8; 20])
                .copied()
                .collect::<Vec<_>>()[..]
        );
    }

    fn transmit_to(to: &str, checksum_free: bool) -> Transmit {
        Transmit {
            len: 1200,
            to: to.parse().unwrap(),
            from: "127.0.0.1:1".parse().unwrap(),
            checksum_free,
            ecn: crate::wire::Ecn::NotEct,
            connection: None,
        }
    }

    #[test]
    fn datagrams_to_a_loopback_peer_keep_their_checksum() {
        for peer in [
            "127.0.0.1:4433",
            "127.3.2.1:4433",
            "[::1]:4433",
            "[::ffff:127.0.0.1]:4433",
        ] {
            assert!(!checksum_free_to(&transmit_to(peer, true)), "{peer}");
            // ... and so may open a GSO batch.
            assert!(Outgoing::single(transmit_to(peer, true), vec![0; 1200]).is_open(1200));
        }
        for peer in [
            "192.0.2.7:4433",
            "[2001:db8::7]:4433",
            "[::ffff:192.0.2.7]:4433",
        ] {
            assert!(checksum_free_to(&transmit_to(peer, true)), "{peer}");
            assert!(!Outgoing::single(transmit_to(peer, true), vec![0; 1200]).is_open(1200));
            assert!(!checksum_free_to(&transmit_to(peer, false)), "{peer}");
        }
    }
}
