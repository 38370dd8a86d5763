//! `recv_datagram_client` and `recv_datagram_server` (Null protection),
//! `recv_datagram_tls_client` and `recv_datagram_tls_server` (TLS 1.3): one
//! datagram fed to [`Connection::recv`] of a client or of a server, at one
//! of four points of a real in-memory connection (fixed `rng_seed`s, a
//! fixed `Instant` base), then a few rounds of `send`, `timeout` and
//! `on_timeout` on both ends with the datagrams delivered.
//!
//! Input layout: `control(1)` then the rest. `control` bits 0-1 pick the
//! phase ([`Phase`]); bit 2 picks the mode: clear, the rest is the datagram
//! as is; set, the rest is `packet_number(4, big-endian) frames` and the
//! target seals a packet of type bits 3-4 (0 Initial, 1 Handshake, 2 and 3
//! 1-RTT) with the right connection IDs, so frames reach the frame handlers
//! instead of stopping at the tags. Null mode seals every type validly.
//! TLS mode seals with the Initial keys anyone can derive from the client's
//! first destination ID (a server that has heard nothing yet gets a packet
//! addressed to that ID, as from the real client), so sealed Initial CRYPTO
//! frames reach rustls's
//! handshake parser (a fuzzed ClientHello or ServerHello); Handshake and
//! 1-RTT keys are secret and random, so those packets exercise the AEAD
//! rejection path. Under TLS the handshake's randomness changes ciphertext
//! from run to run, never the path an input takes.
//!
//! Invariants: nothing panics; counters never go down; a datagram adds its
//! length to `bytes_received` or nothing, and accounts for no more packets
//! than it can hold; bytes in flight never exceed bytes sent; the window is
//! never zero; every datagram either end sends is well formed (each
//! coalesced packet parses, opens, and holds only valid frames) and fits
//! `max_datagram_size`, and `bytes_sent`/`packets_sent` grow by exactly
//! its length and packet count.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use sift::conn::Protection;
use sift::crypto::format::{for_version, PacketFormat};
use sift::crypto::tls::initial_protection;
use sift::crypto::{NullProtection, PacketProtection};
use sift::wire::{
    decode_packet_number_of_len, packet_number_len, parse_frames, ConnectionId, Header, PacketType,
    PACKET_NUMBER_LEN, QUIC_V1,
};
use sift::{Config, Connection, RecvInfo, Side, Stats};

use super::{base_instant, frames, Seed};

/// Fewest bytes a packet either format accepts can take (a QUIC v1 packet
/// needs 20 bytes past its packet number's start), and so the fewest
/// a packet the receiver counts (even one it then drops: no keys, wrong
/// CID) can take: a Handshake header with empty CIDs (flags 1, version 4,
/// two CID lengths 2, packet number 4, payload_len 1) and its 8-byte tag,
/// with no payload.
const MIN_PACKET_LEN: u64 = 20;
/// Rounds of send / deliver / timers after the fuzzed datagram.
const ROUNDS_AFTER: usize = 12;
/// Steps allowed to reach a phase; a handshake needs a handful.
const MAX_SETUP_STEPS: usize = 64;
/// The buffer `send` writes into: more than `max_datagram_size`, so the
/// connection, not the buffer, limits the datagram. Allocated once per pair
/// (a fresh 64 KiB per call made the sanitizer build crawl).
const SEND_BUFFER: usize = 4096;
/// Bytes each side writes on the stream in [`Phase::Streaming`].
const STREAM_BYTES: usize = 3000;

const CONTROL_SEAL: u8 = 0b100;

fn client_addr() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 4000))
}

fn server_addr() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 4433))
}

/// How far the connection got before the fuzzed datagram arrives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// The client sent its first Initial; nothing was delivered yet.
    Fresh,
    /// One round trip: the server got the client's Initial, the client got
    /// the server's first flight.
    Handshaking,
    /// The handshake completed and was confirmed; nothing in flight.
    Established,
    /// Established, plus a bidirectional stream with data both ways, some
    /// of it still in flight and unacknowledged.
    Streaming,
}

impl Phase {
    /// Every phase, in order; the index is the control byte's bits 0-1.
    pub const ALL: [Phase; 4] = [
        Phase::Fresh,
        Phase::Handshaking,
        Phase::Established,
        Phase::Streaming,
    ];

    fn control_bits(self) -> u8 {
        match self {
            Phase::Fresh => 0,
            Phase::Handshaking => 1,
            Phase::Established => 2,
            Phase::Streaming => 3,
        }
    }
}

/// How a pair protects its packets and which versions its ends speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mode {
    protection: Protection,
    /// `None`: the default list (sift/1 then QUIC v1; a TLS client starts in
    /// v1 and is upgraded).
    versions: Option<&'static [u32]>,
}

/// Null protection, sift/1 from the first packet.
const NULL: Mode = Mode {
    protection: Protection::Null,
    versions: None,
};
/// TLS, QUIC v1 first flight upgraded to sift/1 (RFC 9368).
const TLS: Mode = Mode {
    protection: Protection::Tls,
    versions: None,
};
/// TLS, QUIC v1 only: the path a QUIC peer takes.
const QUIC: Mode = Mode {
    protection: Protection::Tls,
    versions: Some(&[QUIC_V1]),
};

/// The format `version` names: every version a connection reports is one
/// sift speaks.
fn format_of(version: u32) -> &'static dyn PacketFormat {
    for_version(version).expect("a version sift speaks")
}

/// The version of the packet at the start of `bytes` if it has a long
/// header, else `short` (the sender's).
fn packet_version(bytes: &[u8], short: u32) -> u32 {
    match bytes {
        [first, a, b, c, d, ..] if first & 0x80 != 0 => u32::from_be_bytes([*a, *b, *c, *d]),
        _ => short,
    }
}

/// A datagram one end sent, with when it arrives.
struct InFlight {
    arrival: Instant,
    to: Side,
    bytes: Vec<u8>,
}

/// A client and a server joined by a 10 ms path that loses nothing.
struct Pair {
    client: Connection,
    server: Connection,
    now: Instant,
    in_flight: Vec<InFlight>,
    /// Every datagram sent, with its sender (for seeds).
    sent_log: Vec<(Side, Phase, Vec<u8>)>,
    phase: Phase,
    send_buffer: Vec<u8>,
    protection: Protection,
    /// The client's first destination ID: the Initial keys' input.
    client_dcid: Option<Vec<u8>>,
}

fn config(rng_seed: u64, mode: Mode) -> Config {
    let defaults = Config::default();
    Config {
        rng_seed,
        protection: mode.protection,
        tls: sift::crypto::tls::process_loopback_config(),
        versions: mode
            .versions
            .map_or(defaults.versions.clone(), <[u32]>::to_vec),
        ..defaults
    }
}

impl Pair {
    fn new(mode: Mode) -> Self {
        let now = base_instant();
        let protection = mode.protection;
        let (client, server) = (config(1, mode), config(2, mode));
        Self {
            client: Connection::connect(client, client_addr(), server_addr(), now)
                .expect("the default config is valid"),
            server: Connection::accept(server, server_addr(), client_addr(), now)
                .expect("the default config is valid"),
            now,
            in_flight: Vec::new(),
            sent_log: Vec::new(),
            phase: Phase::Fresh,
            send_buffer: vec![0u8; SEND_BUFFER],
            protection,
            client_dcid: None,
        }
    }

    /// A pair at `phase`.
    fn at(phase: Phase, mode: Mode) -> Self {
        let mut pair = Pair::new(mode);
        pair.flush();
        if phase >= Phase::Handshaking {
            pair.phase = Phase::Handshaking;
            // Client Initial to the server, then its answer to the client.
            pair.step();
            pair.step();
        }
        if phase >= Phase::Established {
            pair.phase = Phase::Established;
            // Until both ends are established and have nothing more to say
            // (HANDSHAKE_DONE delivered: the client confirmed).
            for _ in 0..MAX_SETUP_STEPS {
                pair.flush();
                let settled = pair.client.is_established()
                    && pair.server.is_established()
                    && pair.in_flight.is_empty();
                if settled || !pair.step() {
                    break;
                }
            }
            assert!(
                pair.client.is_established() && pair.server.is_established(),
                "the handshake between two default endpoints completes"
            );
        }
        if phase >= Phase::Streaming {
            pair.phase = Phase::Streaming;
            let id = pair.client.stream_open_bi().expect("a fresh stream opens");
            let data: Vec<u8> = (0..STREAM_BYTES).map(|i| (i % 251) as u8).collect();
            let written = pair
                .client
                .stream_send(id, &data, false)
                .expect("the stream accepts data");
            assert_eq!(written, data.len());
            // The server reads what arrived and answers on the same stream.
            pair.step();
            let mut buf = vec![0u8; STREAM_BYTES];
            let _ = pair.server.stream_recv(id, &mut buf);
            let _ = pair.server.stream_send(id, &data, false);
            pair.flush();
        }
        pair
    }

    /// The Initial keys of `side`: they seal what `side` sends and open
    /// what the other side sent (Null: the CRC, any packet).
    fn initial_keys(&self, side: Side) -> Box<dyn PacketProtection> {
        match (self.protection, &self.client_dcid) {
            (Protection::Tls, Some(dcid)) => Box::new(initial_protection(dcid, side)),
            _ => Box::new(NullProtection),
        }
    }

    fn conn(&mut self, side: Side) -> &mut Connection {
        match side {
            Side::Client => &mut self.client,
            Side::Server => &mut self.server,
        }
    }

    /// Everything both ends have to send goes on the path, checked.
    fn flush(&mut self) {
        let mut buf = std::mem::take(&mut self.send_buffer);
        for side in [Side::Client, Side::Server] {
            // A connection sends a bounded number of datagrams per call
            // sequence; the bound only guards the fuzzer against a livelock.
            for _ in 0..256 {
                let now = self.now;
                let conn = self.conn(side);
                let before = conn.stats();
                let version = conn.version();
                let Ok(Some((len, info))) = conn.send(&mut buf, now) else {
                    break;
                };
                let after = conn.stats();
                let bytes = buf
                    .get(..len)
                    .expect("send writes inside the buffer")
                    .to_vec();
                if side == Side::Client && self.client_dcid.is_none() {
                    let first = format_of(packet_version(&bytes, version))
                        .parse(&bytes)
                        .expect("the client's first packet parses");
                    self.client_dcid = Some(first.dcid.as_slice().to_vec());
                }
                // The receiving side's keys open what `side` sent.
                let initial_keys = self.initial_keys(other(side));
                check_sent_datagram(side, version, &bytes, &before, &after, &*initial_keys);
                assert_eq!(info.at, now, "sift paces by withholding, not by dating");
                self.sent_log.push((side, self.phase, bytes.clone()));
                self.in_flight.push(InFlight {
                    arrival: now + Duration::from_millis(10),
                    to: other(side),
                    bytes,
                });
            }
        }
        self.send_buffer = buf;
    }

    /// Sends what is pending, then advances to the next delivery or timer
    /// and handles it. False when nothing is left to happen.
    fn step(&mut self) -> bool {
        self.flush();
        let next_delivery = self.in_flight.iter().map(|d| d.arrival).min();
        let next_timer = [self.client.timeout(self.now), self.server.timeout(self.now)]
            .into_iter()
            .flatten()
            .map(|wait| self.now + wait)
            .min();
        let Some(next) = [next_delivery, next_timer].into_iter().flatten().min() else {
            return false;
        };
        self.now = self.now.max(next);
        let now = self.now;
        let (due, later): (Vec<_>, Vec<_>) =
            self.in_flight.drain(..).partition(|d| d.arrival <= now);
        self.in_flight = later;
        for mut datagram in due {
            let from = match datagram.to {
                Side::Client => server_addr(),
                Side::Server => client_addr(),
            };
            receive(self.conn(datagram.to), &mut datagram.bytes, from, now);
        }
        for side in [Side::Client, Side::Server] {
            let conn = self.conn(side);
            if conn.timeout(now).is_some_and(|wait| wait.is_zero()) {
                let before = conn.stats();
                conn.on_timeout(now);
                check_counters(&before, &conn.stats());
            }
        }
        true
    }
}

fn other(side: Side) -> Side {
    match side {
        Side::Client => Side::Server,
        Side::Server => Side::Client,
    }
}

/// `conn.recv` of `datagram`, with the receive invariants checked.
fn receive(conn: &mut Connection, datagram: &mut [u8], from: SocketAddr, now: Instant) {
    let len = datagram.len() as u64;
    let before = conn.stats();
    let to = conn.local();
    let result = conn.recv(
        datagram,
        RecvInfo {
            from,
            to,
            now,
            ecn: sift::wire::Ecn::NotEct,
        },
    );
    let after = conn.stats();
    check_counters(&before, &after);
    if let Ok(consumed) = result {
        assert_eq!(consumed as u64, len, "recv reports the whole datagram");
    }
    let received = after.bytes_received - before.bytes_received;
    assert!(
        received == 0 || received == len,
        "a {len}-byte datagram added {received} to bytes_received"
    );
    let accounted = |s: &Stats| {
        s.packets_received
            + s.payload_corrupt_received
            + s.header_corrupt_dropped
            + s.malformed_dropped
    };
    let packets = accounted(&after) - accounted(&before);
    assert!(
        packets <= len / MIN_PACKET_LEN + 1,
        "a {len}-byte datagram accounted for {packets} packets"
    );
}

/// Counters only grow; flight and window stay sane.
fn check_counters(before: &Stats, after: &Stats) {
    let counters = |s: &Stats| {
        [
            ("packets_sent", s.packets_sent),
            ("packets_received", s.packets_received),
            ("bytes_sent", s.bytes_sent),
            ("bytes_received", s.bytes_received),
            ("packets_lost", s.packets_lost),
            ("retransmitted_packets", s.retransmitted_packets),
            ("ptos", s.ptos),
            ("congestion_events", s.congestion_events),
            ("corruption_notices_received", s.corruption_notices_received),
            ("corruption_notices_ignored", s.corruption_notices_ignored),
            ("corruption_notices_sent", s.corruption_notices_sent),
            ("payload_corrupt_received", s.payload_corrupt_received),
            ("header_corrupt_dropped", s.header_corrupt_dropped),
            ("malformed_dropped", s.malformed_dropped),
        ]
    };
    for ((name, old), (_, new)) in counters(before).into_iter().zip(counters(after)) {
        assert!(new >= old, "{name} went down from {old} to {new}");
    }
    assert!(
        after.bytes_in_flight <= after.bytes_sent,
        "{} bytes in flight but {} ever sent",
        after.bytes_in_flight,
        after.bytes_sent
    );
    assert!(after.cwnd > 0, "a zero congestion window");
}

/// A datagram `side` just sent is well formed and counted exactly. Under
/// TLS only its Initial packets can be opened from outside.
fn check_sent_datagram(
    side: Side,
    version: u32,
    datagram: &[u8],
    before: &Stats,
    after: &Stats,
    initial_keys: &dyn PacketProtection,
) {
    check_counters(before, after);
    assert!(!datagram.is_empty(), "{side:?} sent an empty datagram");
    assert!(
        datagram.len() <= Config::default().largest_datagram_size(),
        "{side:?} sent {} bytes",
        datagram.len()
    );
    assert_eq!(after.bytes_sent - before.bytes_sent, datagram.len() as u64);
    let mut rest = datagram.to_vec();
    let mut packets = 0;
    while !rest.is_empty() {
        let format = format_of(packet_version(&rest, version));
        let mut parsed = format
            .parse(&rest)
            .unwrap_or_else(|e| panic!("{side:?} sent a packet that does not parse: {e}"))
            .without_token();
        let openable = initial_keys.payload_tag_len() == NullProtection.payload_tag_len()
            || parsed.ty == PacketType::Initial;
        if openable {
            format
                .unprotect(&mut parsed, &mut rest, initial_keys)
                .unwrap_or_else(|e| panic!("{side:?} sent a header that does not unmask: {e}"));
            let packet_number =
                decode_packet_number_of_len(None, u64::from(parsed.truncated_pn), parsed.pn_len);
            let frames = format
                .open(&parsed, packet_number, &mut rest, initial_keys)
                .unwrap_or_else(|e| panic!("{side:?} sent a packet that does not open: {e}"));
            for frame in parse_frames(frames) {
                if let Err(e) = frame {
                    panic!("{side:?} sent a malformed frame: {e}");
                }
            }
        }
        rest.drain(..parsed.packet_len);
        packets += 1;
    }
    assert_eq!(after.packets_sent - before.packets_sent, packets);
}

/// The datagram an input describes, for `victim` in `pair`.
fn datagram_for(pair: &mut Pair, victim: Side, control: u8, rest: &[u8]) -> Vec<u8> {
    if control & CONTROL_SEAL == 0 {
        return rest.to_vec();
    }
    let (pn_bytes, frames) = rest.split_at(rest.len().min(4));
    let mut pn = [0u8; 4];
    pn[..pn_bytes.len()].copy_from_slice(pn_bytes);
    let ty = match (control >> 3) & 0b11 {
        0 => PacketType::Initial,
        1 => PacketType::Handshake,
        _ => PacketType::OneRtt,
    };
    // A TLS server that has heard nothing takes its Initial keys from the
    // first packet's destination ID: use the real client's, so the keys the
    // server derives are the ones everyone else uses.
    let fresh_tls_server =
        pair.protection == Protection::Tls && victim == Side::Server && pair.phase == Phase::Fresh;
    let dcid = match (&pair.client_dcid, fresh_tls_server) {
        (Some(original), true) => ConnectionId::new(original).expect("a sent DCID is valid"),
        _ => pair.conn(victim).local_cid(),
    };
    let scid = pair.conn(other(victim)).local_cid();
    let version = pair.conn(victim).version();
    let header = Header {
        ty,
        version,
        dcid,
        scid: if ty == PacketType::OneRtt {
            ConnectionId::EMPTY
        } else {
            scid
        },
        token: &[],
        packet_number: u64::from(u32::from_be_bytes(pn)),
        payload_len: 0,
        key_phase: false,
    };
    let keys = pair.initial_keys(other(victim));
    let mut datagram = vec![0u8; SEND_BUFFER];
    // A forger picks any number and any length for it: QUIC v1's sealer
    // refuses a number that 4 bytes cannot span from nothing acknowledged
    // (RFC 9000 §17.1), so the length is given, the longest past that.
    let pn_len = packet_number_len(header.packet_number, None).unwrap_or(PACKET_NUMBER_LEN);
    let sealed = if version == QUIC_V1 {
        sift::crypto::format::QUIC_V1.seal_with_pn_len(
            &header,
            pn_len,
            frames,
            &*keys,
            &mut Vec::new(),
            &mut datagram,
        )
    } else {
        format_of(version).seal_into(
            &header,
            None,
            frames,
            &*keys,
            &mut Vec::new(),
            &mut datagram,
        )
    };
    let len = sealed.expect("a datagram-sized packet seals");
    datagram.truncate(len);
    datagram
}

fn run(victim: Side, mode: Mode, data: &[u8]) {
    let Some((&control, rest)) = data.split_first() else {
        return;
    };
    let phase = Phase::ALL[usize::from(control & 0b11)];
    let mut pair = Pair::at(phase, mode);
    let mut datagram = datagram_for(&mut pair, victim, control, rest);
    let now = pair.now;
    let from = match victim {
        Side::Client => server_addr(),
        Side::Server => client_addr(),
    };
    receive(pair.conn(victim), &mut datagram, from, now);
    for _ in 0..ROUNDS_AFTER {
        if !pair.step() {
            break;
        }
    }
}

/// Feeds `data` to a client (Null protection).
pub fn run_client(data: &[u8]) {
    run(Side::Client, NULL, data);
}

/// Feeds `data` to a server (Null protection).
pub fn run_server(data: &[u8]) {
    run(Side::Server, NULL, data);
}

/// Feeds `data` to a TLS client (a QUIC v1 first flight upgraded to sift/1).
pub fn run_tls_client(data: &[u8]) {
    run(Side::Client, TLS, data);
}

/// Feeds `data` to a TLS server (a QUIC v1 first flight upgraded to sift/1).
pub fn run_tls_server(data: &[u8]) {
    run(Side::Server, TLS, data);
}

/// Feeds `data` to a client speaking only QUIC v1.
pub fn run_quic_client(data: &[u8]) {
    run(Side::Client, QUIC, data);
}

/// Feeds `data` to a server speaking only QUIC v1.
pub fn run_quic_server(data: &[u8]) {
    run(Side::Server, QUIC, data);
}

/// Datagrams the real peer sent at each phase, as they were (control byte
/// with the phase they were sent in), and one sealed 1-RTT packet per frame
/// seed once streaming, plus a CRYPTO frame in an Initial at the start.
fn seeds_for(victim: Side, mode: Mode) -> Vec<Seed> {
    let mut seeds = Vec::new();
    let pair = Pair::at(Phase::Streaming, mode);
    let mut per_phase = [0usize; 4];
    for (sender, phase, bytes) in &pair.sent_log {
        let count = &mut per_phase[usize::from(phase.control_bits())];
        if *sender == victim || *count >= 4 {
            continue;
        }
        *count += 1;
        let mut input = vec![phase.control_bits()];
        input.extend_from_slice(bytes);
        seeds.push(Seed::new(format!("raw-{phase:?}-{count}"), input));
    }
    let sealed_one_rtt = CONTROL_SEAL | (2 << 3) | Phase::Streaming.control_bits();
    for frame_seed in frames::seeds() {
        let mut input = vec![sealed_one_rtt];
        input.extend_from_slice(&1000u32.to_be_bytes());
        input.extend_from_slice(&frame_seed.bytes);
        seeds.push(Seed::new(format!("sealed-{}", frame_seed.name), input));
    }
    let sealed_initial = CONTROL_SEAL | Phase::Fresh.control_bits();
    let mut input = vec![sealed_initial];
    input.extend_from_slice(&0u32.to_be_bytes());
    // CRYPTO at offset 0: a handshake message type 1 with an empty body.
    input.extend_from_slice(&[0x06, 0x00, 0x02, 0x01, 0x00]);
    seeds.push(Seed::new("sealed-initial-crypto", input));
    seeds
}

/// Seeds for `recv_datagram_client`.
pub fn seeds_client() -> Vec<Seed> {
    seeds_for(Side::Client, NULL)
}

/// Seeds for `recv_datagram_server`.
pub fn seeds_server() -> Vec<Seed> {
    seeds_for(Side::Server, NULL)
}

/// Seeds for `recv_datagram_tls_client`.
pub fn seeds_tls_client() -> Vec<Seed> {
    seeds_for(Side::Client, TLS)
}

/// Seeds for `recv_datagram_tls_server`, plus a real ClientHello as a
/// sealed CRYPTO frame in a fresh server's first Initial.
pub fn seeds_tls_server() -> Vec<Seed> {
    server_seeds_with_hello(TLS)
}

/// Seeds for `recv_datagram_quic_client`.
pub fn seeds_quic_client() -> Vec<Seed> {
    seeds_for(Side::Client, QUIC)
}

/// Seeds for `recv_datagram_quic_server`, with the real ClientHello.
pub fn seeds_quic_server() -> Vec<Seed> {
    server_seeds_with_hello(QUIC)
}

/// A server's seeds plus a real ClientHello as a sealed CRYPTO frame in a
/// fresh server's first Initial.
fn server_seeds_with_hello(mode: Mode) -> Vec<Seed> {
    let mut seeds = seeds_for(Side::Server, mode);
    if let Some(hello) = first_crypto_frame(mode) {
        let mut input = vec![CONTROL_SEAL | Phase::Fresh.control_bits()];
        input.extend_from_slice(&0u32.to_be_bytes());
        input.extend_from_slice(&hello);
        seeds.push(Seed::new("sealed-initial-client-hello", input));
    }
    seeds
}

/// The CRYPTO frame of the client's first Initial, re-encoded.
fn first_crypto_frame(mode: Mode) -> Option<Vec<u8>> {
    let mut pair = Pair::new(mode);
    pair.flush();
    let (_, _, datagram) = pair.sent_log.first()?;
    let mut packet = datagram.clone();
    let format = format_of(packet_version(&packet, pair.client.version()));
    let mut parsed = format.parse(&packet).ok()?.without_token();
    let keys = pair.initial_keys(Side::Server);
    format.unprotect(&mut parsed, &mut packet, &*keys).ok()?;
    let frames = format.open(&parsed, 0, &mut packet, &*keys).ok()?;
    parse_frames(frames)
        .filter_map(Result::ok)
        .find(|frame| matches!(frame, sift::wire::Frame::Crypto { .. }))
        .map(|frame| {
            let mut out = Vec::new();
            frame.encode(&mut out);
            out
        })
}
