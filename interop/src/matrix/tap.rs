//! The tap: a UDP relay right in front of the client that forwards every
//! datagram unchanged (unless told to drop some of the client's) and notes
//! what a packet capture at the client would show of QUIC's cleartext:
//! long-header types, versions, connection IDs, Retry tokens, sizes, and
//! the client's source address. The interop runner reads the same fields
//! from its pcap; [`Wire`] holds them for a cell's checks.
//!
//! Every client address gets its own upstream socket, so a client that
//! moves to a new port reaches the server from a new port too (as a NAT
//! would show it), and the server must follow it.
//!
//! The ECN field crosses the tap as it came (read with `IP_RECVTOS` /
//! `IPV6_RECVTCLASS`, sent on with `IP_TOS` / `IPV6_TCLASS`, through
//! `sift::io`), and every datagram's codepoint is noted: the runner's ecn
//! case reads the same from its pcap.

use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::Context;
use sift::wire::Ecn;

/// How often the relay threads look at the stop flag.
const POLL: Duration = Duration::from_millis(50);

/// QUIC version 1 (RFC 9000).
pub const QUIC_V1: u32 = 0x0000_0001;

/// QUIC version 2 (RFC 9369).
pub const QUIC_V2: u32 = 0x6b33_43cf;

/// A long-header packet's type (RFC 9000 §17.2; v2 numbers them apart,
/// RFC 9369 §3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LongType {
    /// Initial.
    Initial,
    /// 0-RTT.
    ZeroRtt,
    /// Handshake.
    Handshake,
    /// Retry.
    Retry,
}

/// What the cleartext of one QUIC packet shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Packet {
    /// Version Negotiation.
    VersionNegotiation,
    /// A long-header packet.
    Long {
        /// Its type.
        kind: LongType,
        /// Its version.
        version: u32,
        /// Destination connection ID.
        dcid: Vec<u8>,
        /// Source connection ID.
        scid: Vec<u8>,
        /// Length of the token (Initial only; 0 otherwise).
        token_len: usize,
        /// Bytes of the packet.
        size: usize,
    },
    /// A short-header (1-RTT) packet; its connection ID when its length is
    /// known.
    Short {
        /// Destination connection ID (empty when its length is unknown).
        dcid: Vec<u8>,
        /// Bytes of the packet (the rest of the datagram).
        size: usize,
    },
}

fn varint(bytes: &[u8], at: &mut usize) -> Option<u64> {
    let first = *bytes.get(*at)?;
    let len = 1usize << (first >> 6);
    let raw = bytes.get(*at..*at + len)?;
    let mut value = u64::from(first & 0x3f);
    for byte in &raw[1..] {
        value = (value << 8) | u64::from(*byte);
    }
    *at += len;
    Some(value)
}

fn long_type(version: u32, bits: u8) -> LongType {
    let bits = if version == QUIC_V2 {
        // v2: Retry 0, Initial 1, 0-RTT 2, Handshake 3.
        (bits + 3) % 4
    } else {
        bits
    };
    match bits {
        0 => LongType::Initial,
        1 => LongType::ZeroRtt,
        2 => LongType::Handshake,
        _ => LongType::Retry,
    }
}

/// The packets of one datagram (coalesced ones split by their Length
/// fields). `short_cid_len` is the length of the connection IDs short
/// headers carry in this direction, when known. Stops at the first packet
/// it cannot read; never panics on any input.
pub fn parse_datagram(datagram: &[u8], short_cid_len: Option<usize>) -> Vec<Packet> {
    let mut packets = Vec::new();
    let mut at = 0;
    while at < datagram.len() {
        let start = at;
        let first = datagram[at];
        if first & 0x80 == 0 {
            let dcid = short_cid_len
                .and_then(|len| datagram.get(at + 1..at + 1 + len))
                .map(<[u8]>::to_vec)
                .unwrap_or_default();
            packets.push(Packet::Short {
                dcid,
                size: datagram.len() - at,
            });
            break;
        }
        let Some(version) = datagram
            .get(at + 1..at + 5)
            .map(|v| u32::from_be_bytes([v[0], v[1], v[2], v[3]]))
        else {
            break;
        };
        if version == 0 {
            packets.push(Packet::VersionNegotiation);
            break;
        }
        at += 5;
        let Some(dcid) = length_prefixed(datagram, &mut at) else {
            break;
        };
        let Some(scid) = length_prefixed(datagram, &mut at) else {
            break;
        };
        let kind = long_type(version, (first >> 4) & 0x3);
        let mut token_len = 0;
        if kind == LongType::Retry {
            packets.push(Packet::Long {
                kind,
                version,
                dcid,
                scid,
                token_len: datagram.len() - at,
                size: datagram.len() - start,
            });
            break;
        }
        if kind == LongType::Initial {
            let Some(len) = varint(datagram, &mut at) else {
                break;
            };
            token_len = len as usize;
            at = at.saturating_add(token_len);
        }
        let Some(length) = varint(datagram, &mut at) else {
            break;
        };
        let end = at.saturating_add(length as usize).min(datagram.len());
        packets.push(Packet::Long {
            kind,
            version,
            dcid,
            scid,
            token_len,
            size: end - start,
        });
        at = end;
    }
    packets
}

fn length_prefixed(bytes: &[u8], at: &mut usize) -> Option<Vec<u8>> {
    let len = *bytes.get(*at)? as usize;
    let value = bytes.get(*at + 1..*at + 1 + len)?.to_vec();
    *at += 1 + len;
    Some(value)
}

/// One datagram the tap saw.
#[derive(Clone, Debug)]
pub struct Datagram {
    /// From the client (else from the server).
    pub from_client: bool,
    /// The client's address it came from or went to.
    pub client: SocketAddr,
    /// Its size (UDP payload).
    pub size: usize,
    /// Whether the tap dropped it.
    pub dropped: bool,
    /// Its packets.
    pub packets: Vec<Packet>,
    /// When the tap saw it.
    pub at: Instant,
    /// The ECN field it arrived with (and left with).
    pub ecn: Ecn,
}

/// Datagrams per ECN codepoint, one direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct EcnSeen {
    /// Not-ECT.
    pub not_ect: u64,
    /// ECT(0).
    pub ect0: u64,
    /// ECT(1).
    pub ect1: u64,
    /// CE.
    pub ce: u64,
}

impl EcnSeen {
    /// Datagrams that carried an ECN-capable codepoint (CE included: a
    /// queue marks only ECT datagrams).
    pub fn marked(&self) -> u64 {
        self.ect0 + self.ect1 + self.ce
    }

    fn add(&mut self, ecn: Ecn) {
        match ecn {
            Ecn::NotEct => self.not_ect += 1,
            Ecn::Ect0 => self.ect0 += 1,
            Ecn::Ect1 => self.ect1 += 1,
            Ecn::Ce => self.ce += 1,
        }
    }
}

/// A codepoint as tables print it.
pub fn ecn_name(ecn: Ecn) -> &'static str {
    match ecn {
        Ecn::NotEct => "not-ect",
        Ecn::Ect0 => "ect0",
        Ecn::Ect1 => "ect1",
        Ecn::Ce => "ce",
    }
}

/// Everything the tap saw, in order.
#[derive(Clone, Debug, Default)]
pub struct Wire {
    /// Every datagram, both ways.
    pub datagrams: Vec<Datagram>,
}

impl Wire {
    fn long(&self, from_client: bool) -> impl Iterator<Item = &Packet> {
        self.datagrams
            .iter()
            .filter(move |d| d.from_client == from_client && !d.dropped)
            .flat_map(|d| d.packets.iter())
            .filter(|p| matches!(p, Packet::Long { .. }))
    }

    /// Handshakes, counted as the runner counts them: distinct source
    /// connection IDs of the server's Initial packets.
    pub fn handshakes(&self) -> usize {
        let mut scids: Vec<&Vec<u8>> = self
            .long(false)
            .filter_map(|p| match p {
                Packet::Long {
                    kind: LongType::Initial,
                    scid,
                    ..
                } => Some(scid),
                _ => None,
            })
            .collect();
        scids.sort();
        scids.dedup();
        scids.len()
    }

    /// Versions of the server's Initial packets (the runner's check), sorted.
    pub fn server_versions(&self) -> Vec<u32> {
        self.versions(false, LongType::Initial)
    }

    /// Versions of the client's Initial packets, sorted.
    pub fn client_versions(&self) -> Vec<u32> {
        self.versions(true, LongType::Initial)
    }

    fn versions(&self, from_client: bool, of: LongType) -> Vec<u32> {
        let mut versions: Vec<u32> = self
            .long(from_client)
            .filter_map(|p| match p {
                Packet::Long { kind, version, .. } if *kind == of => Some(*version),
                _ => None,
            })
            .collect();
        versions.sort();
        versions.dedup();
        versions
    }

    /// Retry packets from the server.
    pub fn retries(&self) -> usize {
        self.long(false)
            .filter(|p| {
                matches!(
                    p,
                    Packet::Long {
                        kind: LongType::Retry,
                        ..
                    }
                )
            })
            .count()
    }

    /// Whether a client Initial carried a token after the first Retry.
    pub fn token_used_after_retry(&self) -> bool {
        let mut retried = false;
        for datagram in self.datagrams.iter().filter(|d| !d.dropped) {
            for packet in &datagram.packets {
                match packet {
                    Packet::Long {
                        kind: LongType::Retry,
                        ..
                    } if !datagram.from_client => retried = true,
                    Packet::Long {
                        kind: LongType::Initial,
                        token_len,
                        ..
                    } if datagram.from_client && retried && *token_len > 0 => return true,
                    _ => {}
                }
            }
        }
        false
    }

    /// Version Negotiation packets, both ways.
    pub fn version_negotiations(&self) -> usize {
        self.datagrams
            .iter()
            .flat_map(|d| d.packets.iter())
            .filter(|p| matches!(p, Packet::VersionNegotiation))
            .count()
    }

    /// Bytes of 0-RTT packets the client sent.
    pub fn zero_rtt_bytes(&self) -> usize {
        self.long(true)
            .map(|p| match p {
                Packet::Long {
                    kind: LongType::ZeroRtt,
                    size,
                    ..
                } => *size,
                _ => 0,
            })
            .sum()
    }

    /// Bytes of the server's Handshake packets per handshake (by the
    /// server's source connection ID, in order of first appearance): a
    /// resumed handshake carries no certificate, so its flight is small.
    pub fn server_handshake_bytes(&self) -> Vec<usize> {
        let mut flights: Vec<(Vec<u8>, usize)> = Vec::new();
        for packet in self.long(false) {
            if let Packet::Long {
                kind: LongType::Handshake,
                scid,
                size,
                ..
            } = packet
            {
                match flights.iter_mut().find(|(id, _)| id == scid) {
                    Some((_, bytes)) => *bytes += size,
                    None => flights.push((scid.clone(), *size)),
                }
            }
        }
        flights.into_iter().map(|(_, bytes)| bytes).collect()
    }

    /// The client addresses seen, in order of first appearance.
    pub fn client_addresses(&self) -> Vec<SocketAddr> {
        let mut seen = Vec::new();
        for datagram in &self.datagrams {
            if datagram.from_client && !seen.contains(&datagram.client) {
                seen.push(datagram.client);
            }
        }
        seen
    }

    /// For every move of the client to a new address mid-connection: did
    /// its first packet from there use a new destination connection ID
    /// (RFC 9000 §9.5)? As the runner's connectionmigration check: the
    /// first packet of each client datagram, long header or short.
    pub fn migrations(&self) -> Vec<bool> {
        let mut moves = Vec::new();
        let mut last: Option<(SocketAddr, Vec<u8>)> = None;
        let mut left: Vec<SocketAddr> = Vec::new();
        for datagram in self.datagrams.iter().filter(|d| d.from_client) {
            let dcid = match datagram.packets.first() {
                Some(Packet::Short { dcid, .. }) | Some(Packet::Long { dcid, .. }) => dcid,
                _ => continue,
            };
            if let Some((address, previous)) = &last {
                if *address != datagram.client && !left.contains(&datagram.client) {
                    left.push(*address);
                    moves.push(dcid != previous);
                }
            }
            last = Some((datagram.client, dcid.clone()));
        }
        moves
    }

    /// Datagrams of the client's carrying an Initial packet that the tap
    /// passed before the server's first datagram came back: more than one
    /// means the client sent its first flight again before any answer (the
    /// runner's longrtt check counts ClientHellos, which needs the keys;
    /// a probe before any answer carries the ClientHello again, RFC 9002
    /// §6.2.4).
    pub fn client_initials_before_server(&self) -> usize {
        self.datagrams
            .iter()
            .filter(|d| !d.dropped)
            .take_while(|d| d.from_client)
            .filter(|d| {
                d.packets.iter().any(|p| {
                    matches!(
                        p,
                        Packet::Long {
                            kind: LongType::Initial,
                            ..
                        }
                    )
                })
            })
            .count()
    }

    /// The version of the client's first Initial.
    pub fn first_client_version(&self) -> Option<u32> {
        self.long(true).find_map(|p| match p {
            Packet::Long {
                kind: LongType::Initial,
                version,
                ..
            } => Some(*version),
            _ => None,
        })
    }

    /// The runner's amplification check: until the server receives the
    /// client's first Handshake packet, everything the server sends must
    /// fit in 3× what it received (4× with the runner's tolerance). `Err`
    /// names the datagram that broke the limit.
    pub fn amplification(&self) -> Result<AmplificationSeen, String> {
        let mut received = 0usize;
        let mut sent = 0usize;
        for datagram in self.datagrams.iter().filter(|d| !d.dropped) {
            if datagram.from_client {
                let handshake = datagram.packets.iter().any(|p| {
                    matches!(
                        p,
                        Packet::Long {
                            kind: LongType::Handshake,
                            ..
                        }
                    )
                });
                if handshake {
                    return Ok(AmplificationSeen { received, sent });
                }
                received += datagram.size;
            } else {
                sent += datagram.size;
                if sent >= 4 * received {
                    return Err(format!(
                        "the server sent {sent} bytes having received {received} from an unvalidated client (limit 3×)"
                    ));
                }
            }
        }
        Err("the client never sent a Handshake packet".into())
    }
}

impl Wire {
    /// Datagrams relayed one way (`from_client`), per ECN codepoint.
    pub fn ecn_counts(&self, from_client: bool) -> EcnSeen {
        let mut seen = EcnSeen::default();
        for datagram in self
            .datagrams
            .iter()
            .filter(|d| d.from_client == from_client && !d.dropped)
        {
            seen.add(datagram.ecn);
        }
        seen
    }

    /// The codepoints of the last `n` datagrams of the connection relayed
    /// one way, oldest first. A datagram whose destination connection ID
    /// appears in no other datagram that way is left out: that is a
    /// stateless reset (RFC 9000 §10.3: unpredictable bytes, sent by an
    /// endpoint that has no state for the connection, so Not-ECT).
    pub fn last_ecn(&self, from_client: bool, n: usize) -> Vec<Ecn> {
        let dcid = |d: &Datagram| -> Option<Vec<u8>> {
            match d.packets.first()? {
                Packet::Short { dcid, .. } | Packet::Long { dcid, .. } => Some(dcid.clone()),
                Packet::VersionNegotiation => None,
            }
        };
        let relayed: Vec<&Datagram> = self
            .datagrams
            .iter()
            .filter(|d| d.from_client == from_client && !d.dropped)
            .collect();
        let mut uses: HashMap<Vec<u8>, usize> = HashMap::new();
        for datagram in &relayed {
            if let Some(id) = dcid(datagram) {
                *uses.entry(id).or_default() += 1;
            }
        }
        let mut last: Vec<Ecn> = relayed
            .iter()
            .rev()
            .filter(|d| dcid(d).is_none_or(|id| id.is_empty() || uses[&id] > 1))
            .take(n)
            .map(|d| d.ecn)
            .collect();
        last.reverse();
        last
    }

    /// The time from the server's first datagram with a 1-RTT packet to
    /// its last, as the tap saw them: the runner's goodput measures the
    /// transfer so (its client-side capture's first and last 1-RTT packet
    /// from the server). `None` with fewer than two.
    pub fn server_one_rtt_span(&self) -> Option<Duration> {
        let times: Vec<Instant> = self
            .datagrams
            .iter()
            .filter(|d| {
                !d.from_client && d.packets.iter().any(|p| matches!(p, Packet::Short { .. }))
            })
            .map(|d| d.at)
            .collect();
        let (first, last) = (*times.first()?, *times.last()?);
        if times.len() < 2 {
            return None;
        }
        Some(last.saturating_duration_since(first))
    }

    /// One line per datagram (direction, client address, size, packets),
    /// kept with a failing cell's logs.
    pub fn dump(&self) -> String {
        let hex = |id: &[u8]| id.iter().map(|b| format!("{b:02x}")).collect::<String>();
        let mut out = String::new();
        for datagram in &self.datagrams {
            let packets: Vec<String> = datagram
                .packets
                .iter()
                .map(|p| match p {
                    Packet::VersionNegotiation => "VN".to_string(),
                    Packet::Long {
                        kind,
                        version,
                        dcid,
                        scid,
                        token_len,
                        size,
                    } => format!(
                        "{kind:?} v=0x{version:08x} dcid={} scid={} token={token_len} len={size}",
                        hex(dcid),
                        hex(scid)
                    ),
                    Packet::Short { dcid, size } => format!("1-RTT dcid={} len={size}", hex(dcid)),
                })
                .collect();
            out.push_str(&format!(
                "{} {} {} {}{} [{}]\n",
                if datagram.from_client { "C->S" } else { "S->C" },
                datagram.client,
                datagram.size,
                ecn_name(datagram.ecn),
                if datagram.dropped { " DROPPED" } else { "" },
                packets.join("; ")
            ));
        }
        out
    }
}

/// Bytes each way before the client's address was validated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AmplificationSeen {
    /// From the client, delivered.
    pub received: usize,
    /// From the server.
    pub sent: usize,
}

/// A running tap.
pub struct Tap {
    address: SocketAddr,
    stop: Arc<AtomicBool>,
    wire: Arc<Mutex<Wire>>,
    threads: Arc<Mutex<Vec<thread::JoinHandle<()>>>>,
}

/// The lengths of connection IDs seen, per direction's short headers.
#[derive(Default)]
struct CidLengths {
    /// Length of the server's IDs (what client short headers carry).
    server: Option<usize>,
    /// Length of the client's IDs (what server short headers carry).
    client: Option<usize>,
}

impl Tap {
    /// Starts a tap on `listen` (port 0 picks one) relaying to `to`; the
    /// client's datagrams whose 1-based numbers are in `drop_from_client`
    /// are dropped.
    pub fn start(
        listen: SocketAddr,
        to: SocketAddr,
        drop_from_client: Vec<usize>,
    ) -> anyhow::Result<Self> {
        let socket =
            UdpSocket::bind(listen).with_context(|| format!("tap cannot bind {listen}"))?;
        socket.set_read_timeout(Some(POLL))?;
        // A kernel that refuses leaves every datagram read as Not-ECT:
        // the ecn case then fails, naming what the tap saw.
        let _ = sift::io::enable_ecn_reception(&socket, listen.is_ipv6());
        let address = socket.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let wire = Arc::new(Mutex::new(Wire::default()));
        let threads = Arc::new(Mutex::new(Vec::new()));
        let lengths = Arc::new(Mutex::new(CidLengths::default()));
        let relay = {
            let (stop, wire, threads) = (stop.clone(), wire.clone(), threads.clone());
            thread::spawn(move || {
                relay_from_clients(socket, to, drop_from_client, stop, wire, threads, lengths)
            })
        };
        threads
            .lock()
            .map_err(|_| anyhow::anyhow!("tap poisoned"))?
            .push(relay);
        Ok(Self {
            address,
            stop,
            wire,
            threads,
        })
    }

    /// Where clients send.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Stops relaying and returns what was seen.
    pub fn finish(self) -> Wire {
        self.stop.store(true, Ordering::Relaxed);
        loop {
            let next = self.threads.lock().ok().and_then(|mut t| t.pop());
            match next {
                Some(handle) => {
                    let _ = handle.join();
                }
                None => break,
            }
        }
        self.wire.lock().map(|w| w.clone()).unwrap_or_default()
    }
}

fn record(wire: &Mutex<Wire>, datagram: Datagram) {
    if let Ok(mut wire) = wire.lock() {
        wire.datagrams.push(datagram);
    }
}

fn learn_lengths(lengths: &Mutex<CidLengths>, packets: &[Packet], from_client: bool) {
    let Ok(mut lengths) = lengths.lock() else {
        return;
    };
    for packet in packets {
        if let Packet::Long { scid, kind, .. } = packet {
            if *kind == LongType::Retry {
                continue;
            }
            if from_client {
                lengths.client = Some(scid.len());
            } else {
                lengths.server = Some(scid.len());
            }
        }
    }
}

fn relay_from_clients(
    socket: UdpSocket,
    to: SocketAddr,
    drop_from_client: Vec<usize>,
    stop: Arc<AtomicBool>,
    wire: Arc<Mutex<Wire>>,
    threads: Arc<Mutex<Vec<thread::JoinHandle<()>>>>,
    lengths: Arc<Mutex<CidLengths>>,
) {
    let socket = Arc::new(socket);
    let mut upstreams: HashMap<SocketAddr, Arc<UdpSocket>> = HashMap::new();
    let mut buf = vec![0u8; 65_535];
    let mut counted = 0usize;
    while !stop.load(Ordering::Relaxed) {
        let Ok(received) = sift::io::recv_segments(socket.as_raw_fd(), &mut buf) else {
            continue;
        };
        let (len, client, ecn) = (received.len, received.from, received.ecn);
        counted += 1;
        let datagram = &buf[..len];
        let short_len = lengths.lock().ok().and_then(|l| l.server);
        let packets = parse_datagram(datagram, short_len);
        learn_lengths(&lengths, &packets, true);
        let dropped = drop_from_client.contains(&counted);
        record(
            &wire,
            Datagram {
                from_client: true,
                client,
                size: len,
                dropped,
                packets,
                at: Instant::now(),
                ecn,
            },
        );
        if dropped {
            continue;
        }
        let upstream = match upstreams.get(&client) {
            Some(upstream) => upstream.clone(),
            None => {
                let bind: SocketAddr = if to.is_ipv4() {
                    (std::net::Ipv4Addr::LOCALHOST, 0).into()
                } else {
                    (std::net::Ipv6Addr::LOCALHOST, 0).into()
                };
                let Ok(upstream) = UdpSocket::bind(bind) else {
                    continue;
                };
                if upstream.set_read_timeout(Some(POLL)).is_err() {
                    continue;
                }
                let _ = sift::io::enable_ecn_reception(&upstream, to.is_ipv6());
                let upstream = Arc::new(upstream);
                upstreams.insert(client, upstream.clone());
                let back = {
                    let (upstream, socket) = (upstream.clone(), socket.clone());
                    let (stop, wire, lengths) = (stop.clone(), wire.clone(), lengths.clone());
                    thread::spawn(move || {
                        relay_to_client(&upstream, &socket, client, &stop, &wire, &lengths)
                    })
                };
                if let Ok(mut threads) = threads.lock() {
                    threads.push(back);
                }
                upstream
            }
        };
        // A send that fails is a datagram lost, as on a network.
        let _ = forward(&upstream, to, datagram, ecn);
    }
}

fn relay_to_client(
    upstream: &UdpSocket,
    socket: &UdpSocket,
    client: SocketAddr,
    stop: &AtomicBool,
    wire: &Mutex<Wire>,
    lengths: &Mutex<CidLengths>,
) {
    let mut buf = vec![0u8; 65_535];
    while !stop.load(Ordering::Relaxed) {
        let Ok(received) = sift::io::recv_segments(upstream.as_raw_fd(), &mut buf) else {
            continue;
        };
        let (len, ecn) = (received.len, received.ecn);
        let datagram = &buf[..len];
        let short_len = lengths.lock().ok().and_then(|l| l.client);
        let packets = parse_datagram(datagram, short_len);
        learn_lengths(lengths, &packets, false);
        record(
            wire,
            Datagram {
                from_client: false,
                client,
                size: len,
                dropped: false,
                packets,
                at: Instant::now(),
                ecn,
            },
        );
        let _ = forward(socket, client, datagram, ecn);
    }
}

/// Sends one datagram on with the ECN field it came with.
fn forward(
    socket: &UdpSocket,
    to: SocketAddr,
    datagram: &[u8],
    ecn: Ecn,
) -> std::io::Result<usize> {
    // One segment as long as the datagram: a plain send, no GSO.
    sift::io::send_segments(socket.as_raw_fd(), to, datagram, datagram.len(), ecn)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A v1 long header: type bits, DCID, SCID, then (Initial) a token and
    /// the Length of a `payload`-byte rest.
    fn long(kind_bits: u8, dcid: &[u8], scid: &[u8], token: &[u8], payload: usize) -> Vec<u8> {
        let mut packet = vec![0xc0 | (kind_bits << 4)];
        packet.extend_from_slice(&QUIC_V1.to_be_bytes());
        packet.push(dcid.len() as u8);
        packet.extend_from_slice(dcid);
        packet.push(scid.len() as u8);
        packet.extend_from_slice(scid);
        if kind_bits == 0 {
            packet.push(token.len() as u8);
            packet.extend_from_slice(token);
        }
        packet.extend_from_slice(&[0x40 | (payload >> 8) as u8, payload as u8]);
        packet.extend(std::iter::repeat_n(0u8, payload));
        packet
    }

    #[test]
    fn coalesced_initial_and_handshake_packets_are_split_by_their_lengths() {
        let mut datagram = long(0, &[1; 8], &[2; 4], b"tok", 30);
        let first = datagram.len();
        datagram.extend(long(2, &[1; 8], &[2; 4], b"", 20));
        let packets = parse_datagram(&datagram, None);
        assert_eq!(packets.len(), 2);
        assert!(matches!(
            &packets[0],
            Packet::Long { kind: LongType::Initial, token_len: 3, size, scid, .. } if *size == first && scid == &vec![2; 4]
        ));
        assert!(matches!(
            &packets[1],
            Packet::Long {
                kind: LongType::Handshake,
                ..
            }
        ));
    }

    #[test]
    fn short_headers_give_their_id_when_its_length_is_known() {
        let datagram = [0x40, 9, 9, 9, 7, 7];
        assert_eq!(
            parse_datagram(&datagram, Some(3)),
            vec![Packet::Short {
                dcid: vec![9; 3],
                size: 6
            }]
        );
        assert_eq!(
            parse_datagram(&datagram, None),
            vec![Packet::Short {
                dcid: vec![],
                size: 6
            }]
        );
    }

    #[test]
    fn truncated_or_garbage_datagrams_give_what_could_be_read() {
        let full = long(0, &[1; 8], &[2; 4], b"", 10);
        for cut in 0..full.len() {
            let _ = parse_datagram(&full[..cut], Some(8));
        }
        assert!(parse_datagram(&[0xc0, 0, 0], None).is_empty());
    }

    #[test]
    fn v2_long_header_types_are_read_with_v2_numbers() {
        assert_eq!(long_type(QUIC_V2, 1), LongType::Initial);
        assert_eq!(long_type(QUIC_V2, 0), LongType::Retry);
        assert_eq!(long_type(QUIC_V1, 0), LongType::Initial);
    }

    fn seen(from_client: bool, client: u16, packets: Vec<Packet>, size: usize) -> Datagram {
        Datagram {
            from_client,
            client: SocketAddr::from(([127, 0, 0, 1], client)),
            size,
            dropped: false,
            packets,
            at: std::time::Instant::now(),
            ecn: Ecn::NotEct,
        }
    }

    fn initial(scid: u8) -> Packet {
        Packet::Long {
            kind: LongType::Initial,
            version: QUIC_V1,
            dcid: vec![],
            scid: vec![scid],
            token_len: 0,
            size: 1200,
        }
    }

    #[test]
    fn handshakes_are_distinct_server_initial_source_ids() {
        let wire = Wire {
            datagrams: vec![
                seen(true, 1, vec![initial(9)], 1200),
                seen(false, 1, vec![initial(1)], 1200),
                seen(false, 1, vec![initial(1)], 1200),
                seen(false, 1, vec![initial(2)], 1200),
            ],
        };
        assert_eq!(wire.handshakes(), 2);
        assert_eq!(wire.server_versions(), vec![QUIC_V1]);
    }

    #[test]
    fn a_server_sending_four_times_what_it_got_breaks_the_amplification_limit() {
        let datagrams = |server: usize| Wire {
            datagrams: vec![
                seen(true, 1, vec![initial(9)], 1200),
                seen(false, 1, vec![], server),
                seen(
                    true,
                    1,
                    vec![Packet::Long {
                        kind: LongType::Handshake,
                        version: 1,
                        dcid: vec![],
                        scid: vec![],
                        token_len: 0,
                        size: 50,
                    }],
                    50,
                ),
            ],
        };
        assert_eq!(
            datagrams(3600).amplification(),
            Ok(AmplificationSeen {
                received: 1200,
                sent: 3600
            })
        );
        assert!(datagrams(4800).amplification().is_err());
    }

    #[test]
    fn a_migration_counts_when_the_new_path_uses_a_new_connection_id() {
        let short = |id: u8| {
            vec![Packet::Short {
                dcid: vec![id],
                size: 50,
            }]
        };
        let wire = |new_id: u8| Wire {
            datagrams: vec![
                seen(true, 1, short(1), 50),
                seen(true, 2, short(new_id), 50),
                seen(true, 2, short(new_id), 50),
            ],
        };
        assert_eq!(wire(5).migrations(), vec![true]);
        assert_eq!(wire(1).migrations(), vec![false]);
    }

    #[test]
    fn the_last_codepoints_leave_out_a_stateless_reset_to_a_one_off_connection_id() {
        let short = |id: u8| {
            vec![Packet::Short {
                dcid: vec![id; 8],
                size: 40,
            }]
        };
        let marked = |id: u8, ecn: Ecn| Datagram {
            ecn,
            ..seen(false, 1, short(id), 40)
        };
        let wire = Wire {
            datagrams: vec![
                marked(1, Ecn::Ect0),
                marked(1, Ecn::Ect0),
                marked(1, Ecn::Ce),
                // A stateless reset after the close: a random ID.
                marked(9, Ecn::NotEct),
            ],
        };
        assert_eq!(wire.last_ecn(false, 2), [Ecn::Ect0, Ecn::Ce]);
        assert_eq!(wire.last_ecn(true, 2), []);
        assert_eq!(
            wire.ecn_counts(false),
            EcnSeen {
                not_ect: 1,
                ect0: 2,
                ect1: 0,
                ce: 1
            }
        );
        // A connection that stops marking shows it.
        let mut stopped = wire.clone();
        stopped.datagrams.push(marked(1, Ecn::NotEct));
        assert_eq!(stopped.last_ecn(false, 2), [Ecn::Ce, Ecn::NotEct]);
    }

    #[test]
    fn the_tap_relays_both_ways_and_drops_the_datagrams_it_is_told_to() {
        let server = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tap = Tap::start(
            "127.0.0.1:0".parse().unwrap(),
            server.local_addr().unwrap(),
            vec![2],
        )
        .unwrap();
        let client = UdpSocket::bind("127.0.0.1:0").unwrap();
        client.send_to(b"\x40one", tap.address()).unwrap();
        client.send_to(b"\x40two", tap.address()).unwrap();
        client.send_to(b"\x40three", tap.address()).unwrap();
        let mut buf = [0u8; 16];
        let (len, upstream) = server.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..len], b"\x40one");
        let (len, _) = server.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..len], b"\x40three", "the second was to be dropped");
        server.send_to(b"\x40back", upstream).unwrap();
        let (len, _) = client.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..len], b"\x40back");
        let wire = tap.finish();
        let dropped: Vec<bool> = wire.datagrams.iter().map(|d| d.dropped).collect();
        assert_eq!(dropped, [false, true, false, false]);
    }
}
