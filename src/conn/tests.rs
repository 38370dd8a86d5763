//! Connection tests on a two-endpoint harness with a virtual clock and a
//! programmable path (drop or damage chosen datagrams). Longer protocol
//! tests over simulated links live in `tests/`.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::*;
use crate::crypto::seal_packet;
use crate::wire::{
    encode_ack, encode_corrupted, parse_header, Frame, Header, PacketType, RangeSet, VERSION,
};

const MSS: usize = 1350;

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// A datagram's source and destination addresses, and the ECN field of its
/// IP header.
type Route = (SocketAddr, SocketAddr, Ecn);

/// What the path does to one datagram.
#[derive(Clone, Copy, Debug, PartialEq)]
enum PathAction {
    Deliver,
    Drop,
    /// Flip a bit this many bytes from the end (inside the payload).
    DamagePayload,
    /// Flip a bit in the first byte after the flags (inside the header).
    DamageHeader,
    /// Deliver twice.
    Duplicate,
    /// Deliver right after the next datagram in the same direction (an
    /// adjacent swap: reordering by one position).
    SwapWithNext,
}

struct Pair {
    client: Connection,
    server: Connection,
    now: Instant,
    /// Latency of each hop.
    one_way: Duration,
    /// (arrival, to_server, bytes, (from, to)): a datagram reaches its
    /// side only if sent to the address that side is at when it arrives
    /// (a socket left behind by a move receives nothing).
    in_flight: Vec<(Instant, bool, Vec<u8>, Route)>,
    held: [Option<(Vec<u8>, Route)>; 2], // per direction, for SwapWithNext
    datagrams_to_server: u64,
    datagrams_to_client: u64,
    /// At most this many datagrams per side per flush (a slow driver).
    max_datagrams_per_flush: usize,
    /// A bottleneck of this many bytes/s each way: a burst arrives spread
    /// out, a datagram at a time, rather than all at once. `None`: no
    /// serialisation delay.
    link_rate: Option<u64>,
    /// When each direction's bottleneck is next free (to_client, to_server).
    link_free: [Instant; 2],
    /// What the path does to each datagram's ECN field: `(to_server,
    /// codepoint sent)` to the codepoint that arrives. Carried unchanged
    /// by default.
    ecn_path: Box<dyn FnMut(bool, Ecn) -> Ecn>,
}

/// The default config but for path MTU discovery, off: most tests here
/// were written for 1350-byte datagrams throughout, and their loopback
/// addresses would let the search reach 8972 (with probes the first
/// large datagrams, and stream bytes a smaller share of what arrives).
fn fixed_size() -> Config {
    Config {
        pmtud: PmtudConfig::disabled(),
        ..Config::default()
    }
}

/// A config with no TLS identity or trust gets the process's loopback
/// identity, so every test runs under TLS unless it asks for Null.
fn with_test_tls(config: Config) -> Config {
    if config.tls.identity.is_some() || config.tls.trust.is_some() {
        return config;
    }
    Config {
        tls: crate::crypto::tls::process_loopback_config(),
        ..config
    }
}

impl Pair {
    fn new(client_config: Config, server_config: Config) -> Self {
        let (client_config, server_config) =
            (with_test_tls(client_config), with_test_tls(server_config));
        let now = Instant::now();
        Self {
            client: Connection::connect(client_config, addr(1), addr(2), now).unwrap(),
            server: Connection::accept(server_config, addr(2), addr(1), now).unwrap(),
            now,
            one_way: Duration::from_millis(10),
            in_flight: Vec::new(),
            held: [None, None],
            datagrams_to_server: 0,
            datagrams_to_client: 0,
            max_datagrams_per_flush: usize::MAX,
            link_rate: None,
            link_free: [now; 2],
            ecn_path: Box::new(|_, ecn| ecn),
        }
    }

    /// `fixed_size` configs at both ends. Path MTU tests use
    /// `with_pmtud`.
    fn default() -> Self {
        Self::new(fixed_size(), fixed_size())
    }

    /// Default configs, path MTU discovery on.
    fn with_pmtud() -> Self {
        Self::new(Config::default(), Config::default())
    }

    /// Sends everything both sides have, through `path`.
    fn flush(&mut self, path: &mut dyn FnMut(bool, u64, &[u8]) -> PathAction) {
        let mut buf = vec![0u8; 65_535];
        for to_server in [true, false] {
            for _ in 0..self.max_datagrams_per_flush {
                let conn = if to_server {
                    &mut self.client
                } else {
                    &mut self.server
                };
                let Ok(Some((len, info))) = conn.send(&mut buf, self.now) else {
                    break;
                };
                let route = (info.from, info.to, (self.ecn_path)(to_server, info.ecn));
                let index = if to_server {
                    self.datagrams_to_server += 1;
                    self.datagrams_to_server
                } else {
                    self.datagrams_to_client += 1;
                    self.datagrams_to_client
                };
                let mut bytes = buf[..len].to_vec();
                let direction = usize::from(to_server);
                let arrival = match self.link_rate {
                    Some(rate) => {
                        let start = self.link_free[direction].max(self.now);
                        let serialisation = Duration::from_nanos(len as u64 * 1_000_000_000 / rate);
                        self.link_free[direction] = start + serialisation;
                        start + serialisation + self.one_way
                    }
                    None => self.now + self.one_way,
                };
                match path(to_server, index, &bytes) {
                    PathAction::Drop => continue,
                    PathAction::Deliver => {}
                    PathAction::Duplicate => {
                        self.in_flight
                            .push((arrival, to_server, bytes.clone(), route))
                    }
                    PathAction::SwapWithNext => {
                        if let Some((earlier, held_route)) =
                            self.held[direction].replace((bytes, route))
                        {
                            self.in_flight
                                .push((arrival, to_server, earlier, held_route));
                        }
                        continue;
                    }
                    PathAction::DamagePayload => {
                        let at = bytes.len() - 3;
                        bytes[at] ^= 0x10;
                    }
                    PathAction::DamageHeader => bytes[2] ^= 0x01,
                }
                self.in_flight.push((arrival, to_server, bytes, route));
                if let Some((held, held_route)) = self.held[direction].take() {
                    self.in_flight.push((arrival, to_server, held, held_route));
                }
            }
        }
    }

    /// Advances to the next event (delivery or timer) and handles it.
    /// Returns false when nothing is left to happen.
    fn step(&mut self, path: &mut dyn FnMut(bool, u64, &[u8]) -> PathAction) -> bool {
        self.step_before(path, None)
    }

    /// As `step`, but never advances the clock past `deadline`.
    fn step_before(
        &mut self,
        path: &mut dyn FnMut(bool, u64, &[u8]) -> PathAction,
        deadline: Option<Instant>,
    ) -> bool {
        self.flush(path);
        let next_delivery = self.in_flight.iter().map(|(t, _, _, _)| *t).min();
        let timers = [self.client.timeout(self.now), self.server.timeout(self.now)]
            .into_iter()
            .flatten()
            .map(|d| self.now + d)
            .min();
        let Some(mut next) = [next_delivery, timers].into_iter().flatten().min() else {
            return false;
        };
        if let Some(deadline) = deadline {
            next = next.min(deadline);
        }
        self.now = self.now.max(next);
        let (mut due, later): (Vec<_>, Vec<_>) = self
            .in_flight
            .drain(..)
            .partition(|(t, _, _, _)| *t <= self.now);
        due.sort_by_key(|(t, _, _, _)| *t);
        self.in_flight = later;
        for (_, to_server, mut bytes, (from, to, ecn)) in due {
            let conn = if to_server {
                &mut self.server
            } else {
                &mut self.client
            };
            if !conn.receives_on(to) {
                continue; // the socket it was sent to is gone
            }
            let _ = conn.recv(
                &mut bytes,
                RecvInfo {
                    from,
                    to,
                    now: self.now,
                    ecn,
                },
            );
        }
        for conn in [&mut self.client, &mut self.server] {
            if conn.timeout(self.now).is_some_and(|d| d.is_zero()) {
                conn.on_timeout(self.now);
            }
        }
        true
    }

    fn run_until(
        &mut self,
        limit: Duration,
        path: &mut dyn FnMut(bool, u64, &[u8]) -> PathAction,
        mut done: impl FnMut(&mut Self) -> bool,
    ) -> bool {
        let deadline = self.now + limit;
        while self.now < deadline {
            if done(self) {
                return true;
            }
            if !self.step_before(path, Some(deadline)) {
                return done(self);
            }
        }
        done(self)
    }

    fn handshake(&mut self) {
        let ok = self.run_until(
            Duration::from_secs(5),
            &mut |_, _, _| PathAction::Deliver,
            |p| {
                p.client.is_established()
                    && p.server.is_established()
                    && p.client.handshake_confirmed
            },
        );
        assert!(ok, "handshake did not complete");
    }
}

fn deliver_all(_: bool, _: u64, _: &[u8]) -> PathAction {
    PathAction::Deliver
}

/// Client sends `data` on one stream with FIN; returns what the server read.
fn transfer(
    pair: &mut Pair,
    data: &[u8],
    path: &mut dyn FnMut(bool, u64, &[u8]) -> PathAction,
) -> Vec<u8> {
    let id = pair.client.stream_open_bi().unwrap();
    let mut written = 0;
    let mut received = Vec::new();
    let mut buf = vec![0u8; 65_536];
    let mut finished = false;
    let start = pair.now;
    while !finished {
        assert!(
            pair.now - start < Duration::from_secs(120),
            "transfer stalled"
        );
        if written < data.len() {
            let end = (written + 64 * 1024).min(data.len());
            written += pair
                .client
                .stream_send(id, &data[written..end], end == data.len())
                .unwrap();
        }
        while let Some(stream) = pair.server.readable().first().copied() {
            let (n, fin) = pair.server.stream_recv(stream, &mut buf).unwrap();
            received.extend_from_slice(&buf[..n]);
            if fin {
                finished = true;
                break;
            }
            if n == 0 {
                break;
            }
        }
        if !finished && !pair.step(path) {
            panic!("nothing left to do but transfer incomplete");
        }
    }
    received
}

/// A path that applies `action` to the first `count` data-bearing datagrams
/// from the client (over 1000 bytes) and delivers everything else.
fn damage_first_data(
    count: usize,
    action: PathAction,
) -> impl FnMut(bool, u64, &[u8]) -> PathAction {
    let mut damaged = 0;
    move |to_server, _, bytes| {
        if to_server && bytes.len() > 1000 && damaged < count {
            damaged += 1;
            action
        } else {
            PathAction::Deliver
        }
    }
}

fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
}

#[test]
fn handshake_completes_and_negotiates_notices() {
    let mut pair = Pair::default();
    pair.handshake();
    assert!(pair.client.corruption_notices_negotiated());
    assert!(pair.server.corruption_notices_negotiated());
    // Both handshake spaces are gone once confirmed.
    assert!(pair.client.spaces[SpaceId::Initial].keys.is_none());
    assert!(pair.client.spaces[SpaceId::Handshake].keys.is_none());
    assert!(pair.server.spaces[SpaceId::Handshake].keys.is_none());
}

#[test]
fn notices_need_both_sides() {
    let server = Config {
        corruption_notices: false,
        ..Config::default()
    };
    let mut pair = Pair::new(Config::default(), server);
    pair.handshake();
    assert!(!pair.client.corruption_notices_negotiated());
    assert!(!pair.server.stats().corruption_notices_negotiated);
}

#[test]
fn client_initial_datagram_is_padded_to_1200() {
    let mut pair = Pair::default();
    let mut sizes = Vec::new();
    pair.flush(&mut |to_server, _, bytes| {
        if to_server {
            sizes.push(bytes.len());
        }
        PathAction::Deliver
    });
    assert!(
        !sizes.is_empty() && sizes.iter().all(|&s| s >= MIN_INITIAL_DATAGRAM),
        "{sizes:?}"
    );
}

#[test]
fn stream_transfer_is_byte_exact() {
    let mut pair = Pair::default();
    pair.handshake();
    let data = pattern(1_000_000);
    assert_eq!(transfer(&mut pair, &data, &mut deliver_all), data);
}

#[test]
fn bulk_data_fills_each_datagram_to_within_a_few_bytes() {
    // Chunks are sized by the STREAM frame head they can need (here a
    // 1-byte stream ID, a 4-byte offset, a 2-byte length), not by the
    // largest head there is (19 bytes, which left 11 bytes of every
    // datagram unused).
    let mut pair = Pair::default();
    pair.handshake();
    let mut sizes = Vec::new();
    let mut record = |to_server: bool, _: u64, bytes: &[u8]| {
        if to_server && bytes.len() > 1000 {
            sizes.push(bytes.len());
        }
        PathAction::Deliver
    };
    let data = pattern(1_000_000);
    assert_eq!(transfer(&mut pair, &data, &mut record), data);
    sizes.sort_unstable();
    let median = sizes[sizes.len() / 2];
    assert!(
        (MSS - 4..=MSS).contains(&median),
        "median {median} of {} datagrams",
        sizes.len()
    );
}

#[test]
fn lost_handshake_packets_are_recovered() {
    let mut pair = Pair::default();
    // Drop the first two datagrams each way.
    let mut path = |_to_server: bool, index: u64, _: &[u8]| {
        if index <= 2 {
            PathAction::Drop
        } else {
            PathAction::Deliver
        }
    };
    let ok = pair.run_until(Duration::from_secs(10), &mut path, |p| {
        p.client.is_established() && p.server.is_established()
    });
    assert!(
        ok,
        "handshake must survive lost Initial and Handshake packets"
    );
    assert!(pair.client.stats().ptos > 0);
}

/// RFC 9002 §6.2.3: a server whose first flight was lost sends it again
/// when the client's probe arrives, not at its own later probe timeout.
/// The server has no RTT sample and a 600 ms initial RTT (PTO 1.8 s); the
/// client's default (PTO 1 s) probes first.
#[test]
fn a_server_resends_its_lost_flight_on_the_clients_probe() {
    let slow_server = Config {
        recovery: RecoveryConfig {
            initial_rtt: Duration::from_millis(600),
            ..RecoveryConfig::default()
        },
        ..fixed_size()
    };
    let mut established_after = Vec::new();
    for early in [true, false] {
        let mut pair = Pair::new(fixed_size(), slow_server.clone());
        if !early {
            // The rule spent: the server waits for its own timeout.
            pair.server.counters.early_crypto_resends = EARLY_CRYPTO_RESENDS;
        }
        let start = pair.now;
        // Everything the server sends before the client's probe is lost,
        // and its ACK-only datagrams all along: an ACK of one of them
        // would give the server an RTT sample and a short timeout, where
        // a client that does not acknowledge ACK-only packets at once
        // (quic-go's) gives it none.
        let mut probed = false;
        let mut path = move |to_server: bool, index: u64, bytes: &[u8]| {
            probed |= to_server && index >= 2;
            if to_server || (probed && bytes.len() > 200) {
                PathAction::Deliver
            } else {
                PathAction::Drop
            }
        };
        let done = pair.run_until(Duration::from_secs(5), &mut path, |p| {
            p.client.is_established()
        });
        assert!(done, "the handshake must complete");
        assert_eq!(
            pair.server.stats().early_crypto_resends,
            if early { 1 } else { 4 }
        );
        established_after.push(pair.now - start);
    }
    let (early, late) = (established_after[0], established_after[1]);
    assert!(
        early < Duration::from_millis(1_300),
        "{early:?}: at the client's probe (~1 s)"
    );
    assert!(
        late > Duration::from_millis(1_700),
        "{late:?}: at the server's PTO (1.8 s)"
    );
}

/// A client's lost Finished: the server, holding the 1-RTT packets the
/// client sent with it, probes for it at once, and the client answers
/// beyond its window (full of those packets) a round trip later, not at its
/// own probe timeout (srtt + 4·rttvar after one sample: three round trips).
#[test]
fn a_lost_client_finished_is_resent_on_the_servers_probe() {
    let mut established_after = Vec::new();
    for rule in [true, false] {
        let mut server_config = fixed_size();
        server_config.recovery.resend_crypto_on_peer_probe = rule;
        let mut pair = Pair::new(fixed_size(), server_config);
        pair.one_way = Duration::from_millis(300);
        let id = pair.client.stream_open_bi().unwrap();
        pair.client.stream_send(id, &pattern(40_000), true).unwrap();
        let start = pair.now;
        // The client's long headers after its first Initial: its Initial
        // ACK and its Finished (with what 1-RTT data they came with).
        let mut path = |to_server: bool, index: u64, bytes: &[u8]| {
            if to_server && (2..=3).contains(&index) && bytes[0] & 0x80 != 0 {
                PathAction::Drop
            } else {
                PathAction::Deliver
            }
        };
        let done = pair.run_until(Duration::from_secs(10), &mut path, |p| {
            p.server.is_established()
        });
        assert!(done, "the handshake must complete");
        assert!(pair.server.stats().one_rtt_held > 0, "1-RTT came first");
        established_after.push(pair.now - start);
    }
    let (probed, waited) = (established_after[0], established_after[1]);
    assert!(
        probed < Duration::from_millis(1_700),
        "{probed:?}: two round trips and a half"
    );
    assert!(
        waited > Duration::from_millis(2_400),
        "{waited:?}: the client's probe timeout"
    );
}

/// A server whose HANDSHAKE_DONE was lost sends it again when the
/// client's next Handshake probe arrives (its Handshake keys discarded),
/// not at its own probe timeout: the client confirms with no PTO at the
/// server.
#[test]
fn a_server_resends_handshake_done_on_the_clients_handshake_probe() {
    for rule in [true, false] {
        let mut server_config = fixed_size();
        server_config.recovery.resend_crypto_on_peer_probe = rule;
        let mut pair = Pair::new(fixed_size(), server_config);
        let confirmed = pair.run_until(Duration::from_secs(5), &mut deliver_all, |p| {
            p.server.handshake_confirmed
        });
        assert!(confirmed);
        // What the server sends is lost until the client sends again.
        let sent_before = pair.datagrams_to_server;
        let mut probed = false;
        let mut path = move |to_server: bool, index: u64, _: &[u8]| {
            probed |= to_server && index > sent_before;
            if to_server || probed {
                PathAction::Deliver
            } else {
                PathAction::Drop
            }
        };
        let done = pair.run_until(Duration::from_secs(5), &mut path, |p| {
            p.client.handshake_confirmed
        });
        assert!(done, "the client must confirm");
        let server = pair.server.stats();
        if rule {
            assert_eq!((server.early_crypto_resends, server.ptos), (1, 0));
        } else {
            assert_eq!(server.early_crypto_resends, 0);
            assert!(server.ptos > 0, "without the rule the server's PTO resends");
        }
    }
}

#[test]
fn random_loss_recovered_byte_exact() {
    let mut pair = Pair::default();
    pair.handshake();
    let data = pattern(500_000);
    // Deterministic 5% loss on data packets in both directions.
    let mut path = |_to_server: bool, index: u64, _: &[u8]| {
        if index % 20 == 7 {
            PathAction::Drop
        } else {
            PathAction::Deliver
        }
    };
    assert_eq!(transfer(&mut pair, &data, &mut path), data);
    let stats = pair.client.stats();
    assert!(stats.packets_lost > 0 && stats.retransmitted_packets > 0);
}

#[test]
fn corrupted_payload_is_resent_without_window_cut() {
    let mut pair = Pair::default();
    pair.handshake();
    let data = pattern(200_000);
    let mut path = damage_first_data(3, PathAction::DamagePayload);
    assert_eq!(transfer(&mut pair, &data, &mut path), data);
    let client = pair.client.stats();
    let server = pair.server.stats();
    assert_eq!(server.payload_corrupt_received, 3);
    assert!(server.corruption_notices_sent >= 1);
    assert_eq!(client.corruption_notices_received, 3);
    assert_eq!(client.congestion_events, 0, "corruption is not congestion");
    assert_eq!(client.packets_lost, 0);
    assert_eq!(client.ssthresh, u64::MAX, "the window was never cut");
}

#[test]
fn datagrams_carry_udp_checksums_until_the_path_damages_a_packet() {
    let mut pair = Pair::default();
    pair.handshake();
    // A clean path: every datagram keeps its checksum (offloads stay on).
    let data = pattern(100_000);
    let mut clean = |_: bool, _: u64, _: &[u8]| PathAction::Deliver;
    assert_eq!(transfer(&mut pair, &data, &mut clean), data);
    assert_eq!(pair.client.stats().checksum_free_datagrams, 0);
    // A damaged packet: from its notice on the sender sends checksum-free,
    // so that further corruption reaches the receiver to be named.
    let mut path = damage_first_data(1, PathAction::DamagePayload);
    assert_eq!(transfer(&mut pair, &data, &mut path), data);
    let client = pair.client.stats();
    assert_eq!(client.corruption_notices_received, 1);
    assert!(client.checksum_free_datagrams > 0, "{client:?}");
    // The receiver never had anything damaged to resend: it keeps them.
    assert_eq!(pair.server.stats().checksum_free_datagrams, 0);
}

#[test]
fn without_notices_a_lossy_path_keeps_udp_checksums() {
    let config = Config {
        corruption_notices: false,
        ..Config::default()
    };
    let mut pair = Pair::new(config.clone(), config);
    pair.handshake();
    let data = pattern(100_000);
    let mut path = damage_first_data(2, PathAction::Drop);
    assert_eq!(transfer(&mut pair, &data, &mut path), data);
    let client = pair.client.stats();
    assert!(client.packets_lost > 0);
    assert_eq!(client.checksum_free_datagrams, 0);
}

/// A 200 kB upload whose first data packet arrives with a damaged header,
/// between two ends configured by `config`; the client's and the server's
/// stats after it.
fn upload_with_a_damaged_header(config: Config) -> (Stats, Stats) {
    let mut pair = Pair::new(config.clone(), config);
    pair.handshake();
    let data = pattern(200_000);
    let mut path = damage_first_data(1, PathAction::DamageHeader);
    assert_eq!(transfer(&mut pair, &data, &mut path), data);
    (pair.client.stats(), pair.server.stats())
}

#[test]
fn a_damaged_header_is_rebuilt_and_costs_nothing() {
    let (client, server) = upload_with_a_damaged_header(Config::default());
    assert_eq!(server.damaged_headers_repaired, 1);
    assert_eq!(server.header_corrupt_dropped, 0);
    assert_eq!(client.corruption_notices_received, 0);
    assert_eq!(client.packets_lost, 0);
    assert_eq!(client.congestion_events, 0);
}

/// Packets a traced connection reported: (sent, packet number, size) for
/// 1-RTT packets sent and received, and the packet numbers of repaired
/// headers.
#[derive(Debug, Default)]
struct PacketLog {
    packets: Vec<(bool, u64, u64)>,
    repaired: Vec<u64>,
}

#[derive(Debug)]
struct PacketLogger(std::sync::Arc<std::sync::Mutex<PacketLog>>);

impl crate::trace::Observer for PacketLogger {
    fn event(&mut self, _now: Instant, event: &crate::trace::Event<'_>) {
        use crate::trace::Event;
        let mut log = self.0.lock().unwrap();
        match *event {
            Event::PacketSent {
                space: SpaceId::Data,
                packet_number,
                size,
                ..
            } => log.packets.push((true, packet_number, size)),
            Event::PacketReceived {
                space: SpaceId::Data,
                packet_number,
                size,
                ..
            } => log.packets.push((false, packet_number, size)),
            Event::HeaderRepaired { packet_number, .. } => log.repaired.push(packet_number),
            _ => {}
        }
    }
}

#[test]
fn a_repaired_header_is_traced_with_the_packet_number_it_repaired() {
    let mut pair = Pair::default();
    let (client_log, server_log) = (Default::default(), Default::default());
    pair.client
        .set_observer(Box::new(PacketLogger(std::sync::Arc::clone(&client_log))));
    pair.server
        .set_observer(Box::new(PacketLogger(std::sync::Arc::clone(&server_log))));
    pair.handshake();
    let data = pattern(200_000);
    // The fifth full datagram to the server (one 1-RTT packet after the
    // handshake) arrives with a damaged header.
    let mut full = 0;
    let mut path = |to_server: bool, _: u64, bytes: &[u8]| {
        if to_server && bytes.len() > 1000 {
            full += 1;
            if full == 5 {
                return PathAction::DamageHeader;
            }
        }
        PathAction::Deliver
    };
    assert_eq!(transfer(&mut pair, &data, &mut path), data);
    assert_eq!(pair.server.stats().damaged_headers_repaired, 1);
    let client = client_log.lock().unwrap();
    let damaged = client
        .packets
        .iter()
        .filter(|&&(sent, _, size)| sent && size > 1000)
        .nth(4)
        .map(|&(_, packet_number, _)| packet_number)
        .expect("the client sent data");
    assert!(damaged > 0);
    let server = server_log.lock().unwrap();
    assert_eq!(server.repaired, vec![damaged]);
    // And the server then received it, as if intact.
    assert!(server
        .packets
        .iter()
        .any(|&(sent, packet_number, _)| !sent && packet_number == damaged));
}

#[test]
fn without_header_repair_a_corrupted_header_takes_the_loss_path() {
    let (client, server) = upload_with_a_damaged_header(Config {
        repair_damaged_headers: false,
        ..fixed_size()
    });
    assert_eq!(server.header_corrupt_dropped, 1);
    assert_eq!(client.corruption_notices_received, 0);
    assert_eq!(client.packets_lost, 1);
    assert_eq!(client.congestion_events, 1);
}

#[test]
fn without_notices_corruption_is_a_drop() {
    let config = Config {
        corruption_notices: false,
        ..fixed_size()
    };
    let mut pair = Pair::new(config.clone(), config);
    pair.handshake();
    let data = pattern(200_000);
    let mut path = damage_first_data(1, PathAction::DamagePayload);
    assert_eq!(transfer(&mut pair, &data, &mut path), data);
    let client = pair.client.stats();
    assert_eq!(pair.server.stats().corruption_notices_sent, 0);
    assert_eq!(client.packets_lost, 1);
    assert_eq!(client.congestion_events, 1);
}

#[test]
fn close_reaches_the_peer_with_code_and_reason() {
    let mut pair = Pair::default();
    pair.handshake();
    pair.client.close(42, "done here");
    let ok = pair.run_until(Duration::from_secs(5), &mut deliver_all, |p| {
        p.server.is_closed()
    });
    assert!(ok);
    assert_eq!(
        pair.server.close_reason(),
        Some(&CloseReason::Peer {
            application: true,
            code: 42,
            reason: "done here".into()
        })
    );
    assert!(pair.client.stream_open_bi().is_err());
}

#[test]
fn silent_peer_ends_in_idle_timeout() {
    let config = Config {
        idle_timeout: Duration::from_secs(2),
        ..Config::default()
    };
    let mut pair = Pair::new(config.clone(), config);
    pair.handshake();
    // The server goes silent: everything it sends is lost.
    let mut path = |to_server: bool, _: u64, _: &[u8]| {
        if to_server {
            PathAction::Deliver
        } else {
            PathAction::Drop
        }
    };
    let id = pair.client.stream_open_bi().unwrap();
    pair.client.stream_send(id, b"hello?", false).unwrap();
    let ok = pair.run_until(Duration::from_secs(60), &mut path, |p| p.client.is_closed());
    assert!(ok, "the client must give up");
    assert_eq!(pair.client.close_reason(), Some(&CloseReason::IdleTimeout));
}

#[test]
fn a_replayed_damaged_packet_does_not_keep_an_idle_connection_alive() {
    let config = Config {
        idle_timeout: Duration::from_secs(2),
        ..Config::default()
    };
    let mut pair = Pair::new(config.clone(), config);
    pair.handshake();
    // The client's next packet, captured on its way to the server, which
    // gets it too; then the client is gone.
    let id = pair.client.stream_open_bi().unwrap();
    pair.client.stream_send(id, b"hello", false).unwrap();
    let mut buf = vec![0u8; 65_535];
    let (len, _) = pair.client.send(&mut buf, pair.now).unwrap().unwrap();
    let captured = buf[..len].to_vec();
    let to_server = |now| RecvInfo {
        from: addr(1),
        to: addr(2),
        now,
        ecn: Ecn::NotEct,
    };
    pair.server
        .recv(&mut captured.clone(), to_server(pair.now))
        .unwrap();
    let last_heard = pair.now;
    // An attacker replays it every half second with a payload bit flipped:
    // its header still verifies, its payload never does.
    let mut damaged = captured;
    let at = damaged.len() - 3;
    damaged[at] ^= 0x10;
    for _ in 0..40 {
        pair.now += Duration::from_millis(500);
        let _ = pair.server.recv(&mut damaged.clone(), to_server(pair.now));
        while let Ok(Some(_)) = pair.server.send(&mut buf, pair.now) {}
        if pair.server.timeout(pair.now).is_some_and(|d| d.is_zero()) {
            pair.server.on_timeout(pair.now);
        }
        if pair.server.is_closed() {
            break;
        }
    }
    assert!(pair.server.stats().payload_corrupt_received > 0);
    assert_eq!(pair.server.close_reason(), Some(&CloseReason::IdleTimeout));
    assert!(
        pair.now <= last_heard + Duration::from_secs(3),
        "closed {:?} after the last good packet",
        pair.now - last_heard
    );
}

#[test]
fn packets_failing_authentication_past_the_integrity_limit_close_the_connection() {
    let mut pair = Pair::default();
    pair.handshake();
    // The cipher's own limit (2^52 for AES-GCM) is out of a test's reach.
    pair.server.integrity_limit = Some(5);
    let id = pair.client.stream_open_bi().unwrap();
    pair.client
        .stream_send(id, &pattern(100_000), false)
        .unwrap();
    let mut damage_every_other = |to_server: bool, index: u64, _: &[u8]| {
        if to_server && index % 2 == 0 {
            PathAction::DamagePayload
        } else {
            PathAction::Deliver
        }
    };
    let closed = pair.run_until(Duration::from_secs(10), &mut damage_every_other, |p| {
        p.server.is_closed()
    });
    assert!(closed, "the server must close at its limit");
    assert_eq!(pair.server.stats().authentication_failures, 6);
    assert!(matches!(
        pair.server.close_reason(),
        Some(CloseReason::Local {
            code: codes::AEAD_LIMIT_REACHED,
            ..
        })
    ));
}

#[test]
fn datagrams_are_delivered() {
    let mut pair = Pair::default();
    pair.handshake();
    pair.client.send_datagram(b"ping over datagram").unwrap();
    let ok = pair.run_until(Duration::from_secs(1), &mut deliver_all, |p| {
        !p.server.datagrams_in.is_empty()
    });
    assert!(ok);
    assert_eq!(pair.server.recv_datagram().unwrap(), b"ping over datagram");
    let too_big = vec![0u8; 10_000];
    assert!(matches!(
        pair.client.send_datagram(&too_big),
        Err(Error::DatagramTooLarge { .. })
    ));
}

#[test]
fn garbage_datagrams_are_counted_not_fatal() {
    let mut pair = Pair::default();
    pair.handshake();
    let mut state = 0x1234_5678u64;
    for len in [0usize, 1, 5, 30, 100, 1200, 1500] {
        let mut junk: Vec<u8> = (0..len)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                (state >> 33) as u8
            })
            .collect();
        let info = RecvInfo {
            from: addr(1),
            to: addr(2),
            now: pair.now,
            ecn: Ecn::NotEct,
        };
        pair.server.recv(&mut junk, info).unwrap();
    }
    assert!(!pair.server.is_closing());
    let data = pattern(10_000);
    assert_eq!(transfer(&mut pair, &data, &mut deliver_all), data);
}

#[test]
fn short_header_for_another_connection_is_ignored() {
    let mut pair = Pair::default();
    pair.handshake();
    let mut captured = None;
    pair.flush(&mut |_, _, _| PathAction::Deliver);
    let id = pair.client.stream_open_bi().unwrap();
    pair.client.stream_send(id, b"x", true).unwrap();
    pair.flush(&mut |to_server, _, bytes| {
        if to_server {
            captured = Some(bytes.to_vec());
        }
        PathAction::Drop
    });
    let mut packet = captured.expect("a 1-RTT packet");
    assert!(parse_header(&packet).is_ok());
    packet[1] ^= 0xff; // another DCID: not ours
                       // and a payload our keys do not open, so no rebuilt header of ours
                       // opens it either (conn/repair.rs)
    let last = packet.len() - 1;
    packet[last] ^= 0x01;
    let before = pair.server.stats().packets_received;
    let info = RecvInfo {
        from: addr(1),
        to: addr(2),
        now: pair.now,
        ecn: Ecn::NotEct,
    };
    pair.server.recv(&mut packet, info).unwrap();
    assert_eq!(pair.server.stats().packets_received, before);
}

#[test]
fn cwnd_is_never_exceeded_by_ack_eliciting_packets() {
    let mut pair = Pair::default();
    pair.handshake();
    let data = pattern(300_000);
    let mut worst = 0i64;
    let id = pair.client.stream_open_bi().unwrap();
    let mut written = 0;
    let mut buf = vec![0u8; 65_536];
    for _ in 0..2000 {
        if written < data.len() {
            written += pair.client.stream_send(id, &data[written..], true).unwrap();
        }
        while let Some(s) = pair.server.readable().first().copied() {
            if pair.server.stream_recv(s, &mut buf).unwrap().0 == 0 {
                break;
            }
        }
        let stats = pair.client.stats();
        worst = worst.max(stats.bytes_in_flight as i64 - stats.cwnd as i64);
        if !pair.step(&mut deliver_all) {
            break;
        }
    }
    assert!(worst <= 0, "bytes in flight exceeded cwnd by {worst}");
    let _ = MSS;
}

#[test]
fn reordered_packets_are_reassembled_without_spurious_congestion() {
    let mut pair = Pair::default();
    pair.handshake();
    let data = pattern(400_000);
    // Every 10th datagram each way is overtaken by the next one: below the
    // packet threshold, so nothing may be declared lost.
    let mut path = |_: bool, index: u64, _: &[u8]| {
        if index % 10 == 0 {
            PathAction::SwapWithNext
        } else {
            PathAction::Deliver
        }
    };
    assert_eq!(transfer(&mut pair, &data, &mut path), data);
    assert_eq!(pair.client.stats().packets_lost, 0);
}

#[test]
fn duplicated_packets_are_discarded() {
    let mut pair = Pair::default();
    pair.handshake();
    let data = pattern(300_000);
    let mut path = |_: bool, index: u64, _: &[u8]| {
        if index % 3 == 0 {
            PathAction::Duplicate
        } else {
            PathAction::Deliver
        }
    };
    assert_eq!(transfer(&mut pair, &data, &mut path), data);
    assert!(pair.server.counters.duplicate_packets > 0);
}

#[test]
fn tail_loss_is_recovered_by_pto() {
    let mut pair = Pair::default();
    pair.handshake();
    // A single small message whose only packet is lost: no later packet can
    // trigger loss detection, only the probe timeout.
    let id = pair.client.stream_open_bi().unwrap();
    pair.client.stream_send(id, b"the last word", true).unwrap();
    let mut first = true;
    let mut path = |to_server: bool, _: u64, _: &[u8]| {
        if to_server && std::mem::take(&mut first) {
            PathAction::Drop
        } else {
            PathAction::Deliver
        }
    };
    let ok = pair.run_until(Duration::from_secs(5), &mut path, |p| {
        !p.server.readable().is_empty()
    });
    assert!(ok);
    let mut buf = [0u8; 64];
    let stream = pair.server.readable()[0];
    assert_eq!(
        pair.server.stream_recv(stream, &mut buf).unwrap(),
        (13, true)
    );
    assert_eq!(&buf[..13], b"the last word");
    assert!(pair.client.stats().ptos >= 1);
}

#[test]
fn flow_control_blocks_then_unblocks_as_the_reader_reads() {
    let mut server = fixed_size();
    server.streams.initial_max_data = 16 * 1024;
    server.streams.initial_max_stream_data = 8 * 1024;
    let mut pair = Pair::new(fixed_size(), server);
    pair.handshake();
    let data = pattern(64 * 1024);
    let id = pair.client.stream_open_bi().unwrap();
    let accepted = pair.client.stream_send(id, &data, true).unwrap();
    assert_eq!(accepted, data.len(), "the send buffer takes it all");
    // Nobody reads: the server may only have received its window.
    pair.run_until(Duration::from_secs(2), &mut deliver_all, |_| false);
    let stats = pair.server.stats();
    assert!(
        stats.bytes_received < 20 * 1024,
        "received {}",
        stats.bytes_received
    );
    // Reading releases credit until everything arrives.
    let mut received = Vec::new();
    let mut buf = vec![0u8; 4096];
    let ok = pair.run_until(Duration::from_secs(10), &mut deliver_all, |p| {
        while let Ok((n, _)) = p.server.stream_recv(id, &mut buf) {
            if n == 0 {
                break;
            }
            received.extend_from_slice(&buf[..n]);
        }
        received.len() == data.len()
    });
    assert!(ok, "read {} of {}", received.len(), data.len());
    assert_eq!(received, data);
}

#[test]
fn a_read_leaves_frames_to_send_only_once_it_frees_half_a_window() {
    // What the blocking and async reads wake the driver for.
    let mut server = fixed_size();
    server.streams.initial_max_data = 64 * 1024;
    server.streams.initial_max_stream_data = 32 * 1024;
    let mut pair = Pair::new(fixed_size(), server);
    pair.handshake();
    let data = pattern(32 * 1024);
    let id = pair.client.stream_open_bi().unwrap();
    pair.client.stream_send(id, &data, false).unwrap();
    pair.run_until(Duration::from_secs(2), &mut deliver_all, |_| false);
    assert!(!pair.server.has_pending_stream_frames());
    let mut buf = vec![0u8; 8 * 1024];
    assert_eq!(
        pair.server.stream_recv(id, &mut buf).unwrap(),
        (8 * 1024, false)
    );
    assert!(
        !pair.server.has_pending_stream_frames(),
        "a quarter of the stream's window read: no update due yet"
    );
    assert_eq!(
        pair.server.stream_recv(id, &mut buf).unwrap(),
        (8 * 1024, false)
    );
    assert!(
        pair.server.has_pending_stream_frames(),
        "half the stream's window read: MAX_STREAM_DATA waits to be sent"
    );
    pair.run_until(Duration::from_secs(1), &mut deliver_all, |_| false);
    assert!(!pair.server.has_pending_stream_frames(), "and is sent");
}

#[test]
fn a_sender_held_by_the_peers_credit_is_charged_for_it() {
    let mut server = fixed_size();
    server.streams.initial_max_data = 16 * 1024;
    server.streams.initial_max_stream_data = 8 * 1024;
    let mut pair = Pair::new(fixed_size(), server);
    pair.handshake();
    pair.run_until(Duration::from_secs(1), &mut deliver_all, |_| false);
    assert_eq!(
        pair.client.stats().send_times,
        SendTimes::default(),
        "nothing written: nothing charged"
    );
    let id = pair.client.stream_open_bi().unwrap();
    pair.client
        .stream_send(id, &pattern(64 * 1024), true)
        .unwrap();
    // Nobody reads for two seconds: the client waits for credit. Then
    // the server reads it all (the stretch is charged at the client's next
    // poll, when the credit arrives).
    pair.run_until(Duration::from_secs(2), &mut deliver_all, |_| false);
    let mut buf = vec![0u8; 4096];
    let mut read = 0;
    let done = pair.run_until(Duration::from_secs(10), &mut deliver_all, |p| {
        while let Ok((n, _)) = p.server.stream_recv(id, &mut buf) {
            if n == 0 {
                break;
            }
            read += n;
        }
        read == 64 * 1024
    });
    assert!(done, "read {read}");
    let times = pair.client.stats().send_times;
    assert!(
        (1_900_000..2_500_000).contains(&times.credit_limited_us),
        "two seconds held by credit: {times:?}"
    );
    let others = times.window_limited_us + times.pacing_limited_us + times.app_limited_us;
    assert!(others < 100_000, "{times:?}");
}

#[test]
fn the_send_buffer_grows_with_the_congestion_window() {
    let mut client = Config::default();
    client.streams.send_buffer = 16 * 1024;
    let mut pair = Pair::new(client, Config::default());
    pair.handshake();
    let id = pair.client.stream_open_uni().unwrap();
    let data = pattern(4 << 20);
    let window = pair.client.stats().cwnd;
    let accepted = pair.client.stream_send(id, &data, false).unwrap();
    assert_eq!(accepted as u64, 3 * window, "three initial windows");
    // Slow start grows the window, and with it what the stream takes.
    let mut written = accepted;
    pair.run_until(Duration::from_secs(2), &mut deliver_all, |p| {
        if let Ok(n) = p.client.stream_send(id, &data[written..], false) {
            written += n;
        }
        p.client.stats().cwnd >= 16 * window
    });
    // Bytes written and not yet at the server (its datagram bytes count
    // headers too, so this is less than the buffer holds): far more than
    // three initial windows.
    let held = (written as u64).saturating_sub(pair.server.stats().bytes_received);
    assert!(
        held > 3 * window,
        "held {held} with an initial window of {window}"
    );
}

#[test]
fn stream_reset_reaches_the_reader() {
    let mut pair = Pair::default();
    pair.handshake();
    let id = pair.client.stream_open_bi().unwrap();
    pair.client.stream_send(id, &pattern(5_000), false).unwrap();
    pair.run_until(Duration::from_millis(100), &mut deliver_all, |_| false);
    pair.client.stream_reset(id, 77).unwrap();
    let mut buf = vec![0u8; 8192];
    let mut outcome = None;
    let ok = pair.run_until(Duration::from_secs(2), &mut deliver_all, |p| {
        match p.server.stream_recv(id, &mut buf) {
            Err(Error::Stream(e)) => {
                outcome = Some(e);
                true
            }
            _ => false,
        }
    });
    assert!(ok, "the reset must surface to the reader");
    assert!(
        matches!(
            outcome,
            Some(crate::stream::StreamError::Reset { error_code: 77, .. })
        ),
        "{outcome:?}"
    );
}

#[test]
fn a_vanished_peer_costs_few_timer_wakeups_until_idle_timeout() {
    let mut pair = Pair::default();
    pair.handshake();
    let data = pattern(300_000);
    assert_eq!(transfer(&mut pair, &data, &mut deliver_all), data);
    // The client process exits without a word: only the server runs on.
    let mut now = pair.now;
    let mut wakeups = 0;
    let mut buf = vec![0u8; 65_536];
    while !pair.server.is_closed() {
        while let Ok(Some(_)) = pair.server.send(&mut buf, now) {}
        let Some(wait) = pair.server.timeout(now) else {
            break;
        };
        now += wait;
        pair.server.on_timeout(now);
        wakeups += 1;
        assert!(
            wakeups < 100,
            "timer spinning: {wakeups} wakeups by {:?}",
            now - pair.now
        );
    }
    assert_eq!(pair.server.close_reason(), Some(&CloseReason::IdleTimeout));
}

#[test]
fn a_sender_held_back_by_its_driver_does_not_grow_its_window() {
    let mut pair = Pair::default();
    pair.handshake();
    // Plenty of data, but the driver hands out only two datagrams per event
    // (a CPU-bound sender): the window is never what limits it.
    pair.max_datagrams_per_flush = 2;
    let id = pair.client.stream_open_bi().unwrap();
    pair.client
        .stream_send(id, &pattern(2_000_000), true)
        .unwrap();
    let initial = pair.client.stats().cwnd;
    pair.run_until(Duration::from_secs(2), &mut deliver_all, |_| false);
    assert!(pair.client.stats().bytes_sent > 100_000, "data flowed");
    assert!(
        pair.client.stats().cwnd <= 2 * initial,
        "cwnd {} grew from {initial}",
        pair.client.stats().cwnd
    );
}

#[test]
fn a_sender_that_does_not_fill_its_window_does_not_grow_it() {
    let mut pair = Pair::default();
    pair.handshake();
    // The application trickles 1 kB per round trip: the 10-packet initial
    // window is never the limit, so it must stay where it is.
    let id = pair.client.stream_open_bi().unwrap();
    let initial = pair.client.stats().cwnd;
    let mut buf = vec![0u8; 4096];
    for _ in 0..50 {
        pair.client.stream_send(id, &[7u8; 1000], false).unwrap();
        pair.run_until(Duration::from_millis(20), &mut deliver_all, |_| false);
        while let Ok((n, _)) = pair.server.stream_recv(id, &mut buf) {
            if n == 0 {
                break;
            }
        }
    }
    assert_eq!(pair.client.stats().cwnd, initial);
}

#[test]
fn a_forged_corrupted_frame_for_unsent_packets_changes_nothing() {
    let mut pair = Pair::default();
    pair.handshake();
    let data = pattern(100_000);
    assert_eq!(transfer(&mut pair, &data, &mut deliver_all), data);
    let before = pair.client.stats();

    // A well-formed 1-RTT packet from the server, under its real keys (the
    // peer itself lies), naming packets the client never sent (far above anything it has sent) and a huge range.
    let mut names = RangeSet::default();
    names.insert(1_000_000..1_000_006);
    names.insert(2_000_000..(1u64 << 40));
    let mut frames = Vec::new();
    encode_corrupted(&names, 16, &mut frames);
    server_sends_forged(&mut pair, &frames);

    let after = pair.client.stats();
    assert!(
        !pair.client.is_closing(),
        "{:?}",
        pair.client.close_reason()
    );
    assert_eq!(
        after.corruption_notices_received,
        before.corruption_notices_received
    );
    assert!(after.corruption_notices_ignored > before.corruption_notices_ignored);
    assert_eq!((after.cwnd, after.ssthresh), (before.cwnd, before.ssthresh));
    assert_eq!(after.bytes_in_flight, before.bytes_in_flight);
    // And the connection still works.
    let more = pattern(50_000);
    assert_eq!(transfer(&mut pair, &more, &mut deliver_all), more);
}

#[test]
fn a_controller_switched_after_the_handshake_carries_the_transfer() {
    let mut pair = Pair::default();
    pair.handshake();
    assert_eq!(pair.client.stats().cc.algorithm, "reno");
    let bbr: sift_cc::CcConfig = "bbr".parse().unwrap();
    pair.client.set_congestion_control(bbr.clone()).unwrap();
    assert_eq!(pair.client.congestion_control(), &bbr);
    // The new controller starts from its own initial window (10 packets).
    let stats = pair.client.stats();
    assert_eq!((stats.cc.algorithm.as_str(), stats.cwnd), ("bbr", 13_500));
    let data = pattern(1_000_000);
    assert_eq!(transfer(&mut pair, &data, &mut deliver_all), data);
    // BBR saw the transfer: it has a bandwidth model.
    assert!(pair.client.stats().cc.fields["max_bw_bps"] > 0.0);
}

#[test]
fn an_out_of_range_controller_is_refused_and_the_old_one_kept() {
    let mut pair = Pair::default();
    pair.handshake();
    let invalid = sift_cc::CcConfig::Cubic(sift_cc::CubicConfig {
        multiplicative_decrease: 1.5,
        ..sift_cc::CubicConfig::default()
    });
    let error = pair.client.set_congestion_control(invalid).unwrap_err();
    assert!(
        error.to_string().contains("multiplicative_decrease"),
        "{error}"
    );
    assert_eq!(pair.client.stats().cc.algorithm, "reno");
}

#[test]
fn tls_needs_a_server_identity_and_a_client_trust_before_anything_is_sent() {
    let now = Instant::now();
    let bare = Config::default();
    let server = Connection::accept(bare.clone(), addr(2), addr(1), now).unwrap_err();
    assert!(server.to_string().contains("needs an identity"), "{server}");
    let client = Connection::connect(bare.clone(), addr(1), addr(2), now).unwrap_err();
    assert!(
        client.to_string().contains("way to trust the server"),
        "{client}"
    );
    // Null needs neither.
    let null = Config {
        protection: Protection::Null,
        ..bare
    };
    assert!(null.validate(Side::Server).is_ok() && null.validate(Side::Client).is_ok());
}

/// Drops every 17th datagram and swaps every 23rd with the next: loss and
/// reordering across key phases.
fn lossy_reordering(_: bool, index: u64, _: &[u8]) -> PathAction {
    match index {
        i if i % 17 == 16 => PathAction::Drop,
        i if i % 23 == 22 => PathAction::SwapWithNext,
        _ => PathAction::Deliver,
    }
}

#[test]
fn a_key_update_started_by_either_side_is_followed_by_the_other() {
    for client_initiates in [true, false] {
        let forcing = Config {
            key_update_interval: Some(if client_initiates { 40 } else { 15 }),
            ..Config::default()
        };
        let (client, server) = if client_initiates {
            (forcing, Config::default())
        } else {
            (Config::default(), forcing)
        };
        let mut pair = Pair::new(client, server);
        pair.handshake();
        let data = pattern(400_000);
        assert_eq!(transfer(&mut pair, &data, &mut lossy_reordering), data);
        let (client, server) = (pair.client.stats(), pair.server.stats());
        assert!(
            client.key_updates >= 4,
            "client_initiates {client_initiates}: {} updates",
            client.key_updates
        );
        assert!(
            client.key_updates.abs_diff(server.key_updates) <= 1,
            "both ends follow: client {}, server {}",
            client.key_updates,
            server.key_updates
        );
        assert_eq!(client.header_corrupt_dropped, 0, "no packet met stale keys");
        assert_eq!(server.header_corrupt_dropped, 0, "no packet met stale keys");
    }
}

#[test]
fn null_protection_has_no_key_update() {
    let config = Config {
        protection: Protection::Null,
        key_update_interval: Some(10),
        ..Config::default()
    };
    let mut pair = Pair::new(config.clone(), config);
    pair.handshake();
    let data = pattern(100_000);
    assert_eq!(transfer(&mut pair, &data, &mut deliver_all), data);
    assert_eq!(pair.client.stats().key_updates, 0);
    assert!(!pair.client.key_phases.phase);
}

/// Seals `frames` in a 1-RTT packet from the server under its real keys
/// (the peer itself misbehaves) and hands it to the client.
fn server_sends_forged(pair: &mut Pair, frames: &[u8]) {
    let packet_number = pair.server.spaces[SpaceId::Data].next_packet_number;
    pair.server.spaces[SpaceId::Data].next_packet_number += 1;
    let header = Header {
        ty: PacketType::OneRtt,
        version: VERSION,
        dcid: pair.client.local_cid(),
        scid: pair.server.local_cid(),
        token: &[],
        packet_number,
        payload_len: 0,
        key_phase: false,
    };
    let mut datagram = Vec::new();
    let server_keys = pair.server.spaces[SpaceId::Data].keys.as_deref().unwrap();
    seal_packet(&header, frames, server_keys, &mut datagram).unwrap();
    let info = RecvInfo {
        from: addr(2),
        to: addr(1),
        now: pair.now,
        ecn: Ecn::NotEct,
    };
    let _ = pair.client.recv(&mut datagram, info);
}

/// The first 1-RTT packet number the client skipped.
fn first_skipped(pair: &Pair) -> u64 {
    let sent = pair.client.spaces[SpaceId::Data].next_packet_number;
    pair.client
        .skips
        .first_skipped_in(&(0..=sent))
        .expect("a 300 kB transfer skips some numbers")
}

#[test]
fn the_sender_skips_packet_numbers_and_a_transfer_does_not_notice() {
    let mut pair = Pair::default();
    pair.handshake();
    let data = pattern(300_000);
    assert_eq!(transfer(&mut pair, &data, &mut deliver_all), data);
    let stats = pair.client.stats();
    assert!(stats.packet_numbers_skipped >= 1, "{stats:?}");
    assert_eq!((stats.packets_lost, stats.congestion_events), (0, 0));
}

#[test]
fn an_ack_of_a_skipped_packet_number_closes_the_connection() {
    let mut pair = Pair::default();
    pair.handshake();
    let data = pattern(300_000);
    assert_eq!(transfer(&mut pair, &data, &mut deliver_all), data);
    let skipped = first_skipped(&pair);
    // An optimistic ACK: everything up to now, the skipped number included.
    let mut acked = RangeSet::default();
    acked.insert(0..pair.client.spaces[SpaceId::Data].next_packet_number);
    let mut frames = Vec::new();
    encode_ack(&acked, 0, 16, &mut frames);
    server_sends_forged(&mut pair, &frames);
    assert!(pair.client.is_closing());
    match pair.client.close_reason() {
        Some(CloseReason::Local { code, reason, .. }) => {
            assert_eq!(*code, codes::PROTOCOL_VIOLATION);
            assert!(
                reason.contains(&format!("ACK of packet {skipped}")),
                "{reason}"
            );
            assert!(reason.contains("optimistic ACK"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn naming_a_skipped_number_corrupted_makes_every_later_notice_a_loss() {
    let mut pair = Pair::default();
    pair.handshake();
    let data = pattern(300_000);
    assert_eq!(transfer(&mut pair, &data, &mut deliver_all), data);
    let skipped = first_skipped(&pair);
    let mut names = RangeSet::default();
    names.insert(skipped..skipped + 1);
    let mut frames = Vec::new();
    encode_corrupted(&names, 16, &mut frames);
    server_sends_forged(&mut pair, &frames);
    assert!(!pair.client.is_closing(), "a liar is not closed on");
    assert!(pair.client.stats().corruption_notices_distrusted);

    // From now on a damaged payload costs a window cut, as a loss would.
    let mut path = damage_first_data(2, PathAction::DamagePayload);
    let more = pattern(200_000);
    assert_eq!(transfer(&mut pair, &more, &mut path), more);
    let stats = pair.client.stats();
    assert_eq!(stats.corruption_notices_received, 0);
    assert_eq!(stats.corruption_notices_over_budget, 2);
    assert!(stats.congestion_events >= 1);
}

#[test]
fn a_receiver_that_calls_its_losses_corruption_is_caught_by_a_skipped_number() {
    let liar = Config {
        lie_about_losses: ReceiverLie::EveryGap,
        ..Config::default()
    };
    let mut pair = Pair::new(Config::default(), liar);
    pair.handshake();
    // Drop one data datagram in 50: the liar names each gap corrupted,
    // skipped numbers among them.
    let mut path = |to_server: bool, index: u64, bytes: &[u8]| {
        if to_server && bytes.len() > 1000 && index % 50 == 7 {
            PathAction::Drop
        } else {
            PathAction::Deliver
        }
    };
    let data = pattern(2_000_000);
    assert_eq!(transfer(&mut pair, &data, &mut path), data);
    let client = pair.client.stats();
    assert!(client.corruption_notices_distrusted, "{client:?}");
    assert!(client.corruption_notices_over_budget > 0);
    assert!(client.congestion_events > 0, "losses cut the window again");
    assert!(pair.server.stats().corruption_notices_sent > 0);
}

/// Grows the client's window with a transfer, then moves the client to
/// `local`; returns (window before the move, window after).
fn window_across_a_local_move(local: SocketAddr) -> (u64, u64) {
    let mut pair = Pair::default();
    pair.handshake();
    let id = pair.client.stream_open_bi().unwrap();
    pair.client
        .stream_send(id, &pattern(300_000), true)
        .unwrap();
    pair.run_until(Duration::from_secs(1), &mut deliver_all, |_| false);
    let before = pair.client.stats().cwnd;
    pair.client
        .on_local_address_changed(local)
        .expect("the client may move");
    (before, pair.client.stats().cwnd)
}

#[test]
fn a_client_that_moves_to_another_ip_restarts_congestion_control_but_not_for_a_new_port() {
    let initial = Pair::default().client.stats().cwnd;
    let (grown, after) = window_across_a_local_move(SocketAddr::from(([10, 0, 0, 9], 1)));
    assert!(grown > initial, "the transfer grew the window");
    assert_eq!(after, initial, "a new IP is a new path");
    let (grown, after) = window_across_a_local_move(SocketAddr::new(addr(1).ip(), 999));
    assert_eq!(after, grown, "a new port on the same address keeps it");
}

/// Datagrams the receiver (server) sends back during a 4 MB upload on a
/// fast path (100 µs RTT), with the sender's ACK frequency on or off.
fn acks_for_a_fast_upload(sender_asks: bool) -> u64 {
    let sender = Config {
        ack_frequency: sender_asks,
        ..fixed_size()
    };
    let mut pair = Pair::new(sender, fixed_size());
    pair.one_way = Duration::from_micros(50);
    // 1 Gb/s: a paced burst (up to a millisecond of the rate) reaches the
    // receiver a packet at a time, as over a real link, not as one batch
    // it would acknowledge once.
    pair.link_rate = Some(125_000_000);
    pair.handshake();
    let before = pair.datagrams_to_client;
    let data = pattern(4_000_000);
    assert_eq!(transfer(&mut pair, &data, &mut deliver_all), data);
    let stats = pair.client.stats();
    assert_eq!((stats.packets_lost, stats.ptos), (0, 0), "{stats:?}");
    pair.datagrams_to_client - before
}

#[test]
fn a_fast_path_asks_the_receiver_for_fewer_acks() {
    let every_second = acks_for_a_fast_upload(false);
    let decimated = acks_for_a_fast_upload(true);
    // 4 MB is some 3000 packets: RFC 9000 acks about half of them; once
    // the window passes 80 packets the receiver acks every tenth.
    assert!(every_second > 1000, "{every_second}");
    assert!(
        decimated * 3 < every_second,
        "{decimated} ACKs with ACK frequency vs {every_second} without"
    );
}

#[test]
fn ack_frequency_frames_are_refused_by_an_endpoint_that_did_not_offer_it() {
    let client = Config {
        ack_frequency: false,
        ..Config::default()
    };
    let mut pair = Pair::new(client, Config::default());
    pair.handshake();
    let mut frames = Vec::new();
    Frame::AckFrequency {
        sequence: 0,
        ack_eliciting_threshold: 9,
        request_max_ack_delay_micros: 5000,
        reordering_threshold: 3,
    }
    .encode(&mut frames);
    server_sends_forged(&mut pair, &frames);
    assert!(pair.client.is_closing());
    match pair.client.close_reason() {
        Some(CloseReason::Local { code, .. }) => assert_eq!(*code, codes::PROTOCOL_VIOLATION),
        other => panic!("unexpected close: {other:?}"),
    }
}

#[test]
fn an_immediate_ack_is_answered_without_waiting_for_the_timer() {
    let mut pair = Pair::default();
    pair.handshake();
    let data = pattern(10_000);
    assert_eq!(transfer(&mut pair, &data, &mut deliver_all), data);
    // Let every ACK go out, then one PING: its ACK may wait 25 ms.
    pair.run_until(Duration::from_secs(1), &mut deliver_all, |_| false);
    let mut frames = Vec::new();
    Frame::Ping.encode(&mut frames);
    server_sends_forged(&mut pair, &frames);
    assert!(
        pair.client.timeout(pair.now) > Some(Duration::ZERO),
        "a lone PING is acknowledged after the delay"
    );
    let mut frames = Vec::new();
    Frame::ImmediateAck.encode(&mut frames);
    server_sends_forged(&mut pair, &frames);
    let mut buf = vec![0u8; 2000];
    let sent = pair.client.send(&mut buf, pair.now).unwrap();
    assert!(sent.is_some(), "IMMEDIATE_ACK is answered at once");
}

#[test]
fn a_client_that_grants_no_credit_pins_at_most_the_bound_on_the_server() {
    // The client opens 100 streams, asks for data on each, and grants no
    // credit at all: no connection credit, no stream credit.
    let mut client = Config::default();
    client.streams.initial_max_data = 0;
    client.streams.initial_max_stream_data = 0;
    let mut pair = Pair::new(client, Config::default());
    pair.handshake();
    for _ in 0..100 {
        let id = pair.client.stream_open_bi().unwrap();
        pair.client.stream_send(id, b"GET /big", true).unwrap();
    }
    let reply = pattern(1 << 20);
    let mut answering = Vec::new();
    let mut accepted = 0u64;
    pair.run_until(Duration::from_secs(3), &mut deliver_all, |p| {
        while let Some(id) = p.server.stream_accept(Dir::Bi) {
            answering.push(id);
        }
        for &id in &answering {
            if let Ok(n) = p.server.stream_send(id, &reply, false) {
                accepted += n as u64;
            }
        }
        false
    });
    assert_eq!(answering.len(), 100, "every request arrived");
    // 100 streams × 1 MiB asked for; the connection took send_beyond_credit.
    assert_eq!(accepted, pair.server.config.streams.send_beyond_credit);
    assert_eq!(pair.server.stats().stream_send_buffered, accepted);
}

// ---- versions (conn::version, docs/versions.md) -----------------------------

fn versions(list: &[u32]) -> Config {
    Config {
        versions: list.to_vec(),
        ..Config::default()
    }
}

/// When the client is established, from its start, over the test path.
fn time_to_established(client: Config, server: Config) -> (Duration, Pair) {
    let mut pair = Pair::new(client, server);
    let start = pair.now;
    let ok = pair.run_until(Duration::from_secs(5), &mut deliver_all, |p| {
        p.client.is_established()
    });
    assert!(ok, "handshake did not complete");
    (pair.now - start, pair)
}

#[test]
fn a_tls_client_starts_in_quic_v1_and_a_sift_server_upgrades_it_to_sift_1() {
    let mut pair = Pair::default();
    assert_eq!(pair.client.version(), crate::wire::QUIC_V1);
    let mut first = vec![0u8; 2048];
    let (len, _) = pair.client.send(&mut first, pair.now).unwrap().unwrap();
    assert_eq!(
        &first[1..5],
        &crate::wire::QUIC_V1.to_be_bytes(),
        "a v1 Initial"
    );
    assert!(len >= 1200);
    // Hand the first flight over (it was taken from the client above).
    let from = addr(1);
    pair.server
        .recv(
            &mut first[..len],
            RecvInfo {
                from,
                to: addr(2),
                now: pair.now,
                ecn: Ecn::NotEct,
            },
        )
        .unwrap();
    assert_eq!(
        pair.server.version(),
        crate::wire::VERSION,
        "chosen at once"
    );
    pair.handshake();
    assert_eq!(pair.client.version(), crate::wire::VERSION);
    assert_eq!(pair.client.stats().version, "sift/1");
    assert!(pair.client.corruption_notices_negotiated());
    let data = pattern(300_000);
    assert_eq!(transfer(&mut pair, &data, &mut deliver_all), data);
}

#[test]
fn the_upgrade_costs_no_round_trip() {
    let (direct, _) = time_to_established(
        versions(&[crate::wire::VERSION]),
        versions(&[crate::wire::VERSION]),
    );
    let (upgraded, pair) = time_to_established(Config::default(), Config::default());
    assert_eq!(pair.client.version(), crate::wire::VERSION);
    assert_eq!(
        upgraded, direct,
        "v1 then sift/1 takes as long as sift/1 alone"
    );
}

#[test]
fn quic_v1_ends_stay_in_v1_without_notices_and_transfer_through_loss() {
    for (client, server) in [
        (versions(&[crate::wire::QUIC_V1]), Config::default()),
        (Config::default(), versions(&[crate::wire::QUIC_V1])),
    ] {
        let mut pair = Pair::new(client, server);
        pair.handshake();
        assert_eq!(pair.client.version(), crate::wire::QUIC_V1);
        assert_eq!(pair.server.version(), crate::wire::QUIC_V1);
        assert_eq!(pair.server.stats().version, "QUIC v1");
        assert!(!pair.client.corruption_notices_negotiated());
        let mut count = 0;
        let mut lossy = |_: bool, _: u64, _: &[u8]| {
            count += 1;
            if count % 37 == 0 {
                PathAction::Drop
            } else {
                PathAction::Deliver
            }
        };
        let data = pattern(400_000);
        assert_eq!(transfer(&mut pair, &data, &mut lossy), data);
        assert!(pair.client.stats().packets_lost > 0);
    }
}

#[test]
fn a_damaged_quic_v1_packet_is_dropped_and_never_named() {
    let mut pair = Pair::new(
        versions(&[crate::wire::QUIC_V1]),
        versions(&[crate::wire::QUIC_V1]),
    );
    pair.handshake();
    let data = pattern(200_000);
    let mut path = damage_first_data(3, PathAction::DamagePayload);
    assert_eq!(transfer(&mut pair, &data, &mut path), data);
    let server = pair.server.stats();
    assert_eq!(server.corruption_notices_sent, 0);
    assert!(server.header_corrupt_dropped >= 3, "{server:?}");
    assert_eq!(pair.client.stats().corruption_notices_received, 0);
}

#[test]
fn key_updates_work_in_quic_v1() {
    let config = || Config {
        key_update_interval: Some(50),
        ..versions(&[crate::wire::QUIC_V1])
    };
    let mut pair = Pair::new(config(), config());
    pair.handshake();
    let data = pattern(600_000);
    assert_eq!(transfer(&mut pair, &data, &mut deliver_all), data);
    assert!(pair.client.stats().key_updates >= 2);
}

#[test]
fn the_server_answers_in_its_most_preferred_version_the_client_offers() {
    // A client offers sift/1 then v1; the server's own order decides.
    for server_versions in [
        vec![crate::wire::VERSION, crate::wire::QUIC_V1],
        vec![crate::wire::QUIC_V1, crate::wire::VERSION],
    ] {
        let mut pair = Pair::new(Config::default(), versions(&server_versions));
        pair.handshake();
        assert_eq!(pair.client.version(), server_versions[0]);
        assert_eq!(pair.server.version(), server_versions[0]);
    }
}

// ---- path MTU discovery ------------------------------------------------------

/// A path whose links carry IP packets of at most `mtu` bytes (IPv4:
/// 28 header bytes on top of the datagram): larger datagrams vanish.
fn mtu_path(mtu: usize) -> impl FnMut(bool, u64, &[u8]) -> PathAction {
    move |_, _, bytes: &[u8]| {
        if bytes.len() + 28 > mtu {
            PathAction::Drop
        } else {
            PathAction::Deliver
        }
    }
}

#[test]
fn pmtud_settles_on_the_largest_datagram_a_1500_byte_path_carries() {
    // Loopback addresses: the interface allows 8972, the path 1472.
    let mut pair = Pair::with_pmtud();
    pair.handshake();
    let data = pattern(2_000_000);
    assert_eq!(transfer(&mut pair, &data, &mut mtu_path(1500)), data);
    let stats = pair.client.stats();
    assert_eq!(stats.max_datagram_size, 1472);
    assert_eq!(stats.pmtu_probes_lost, 3, "8972 lost three times");
    // Lost probes are neither losses nor congestion.
    assert_eq!(stats.packets_lost, 0);
    assert_eq!(stats.congestion_events, 0);
    assert_eq!(stats.pmtu_black_holes, 0);
}

#[test]
fn a_lost_path_mtu_probe_keeps_udp_checksums() {
    // Corruption notices offered on both sides; the 8972-byte probes are
    // too big for the path, not damaged: they must not cost the transfer
    // its checksums (and with them the sender's segmentation offload).
    let mut pair = Pair::with_pmtud();
    pair.handshake();
    assert!(pair.client.stats().corruption_notices_negotiated);
    let data = pattern(1_000_000);
    assert_eq!(transfer(&mut pair, &data, &mut mtu_path(1500)), data);
    let stats = pair.client.stats();
    assert!(stats.pmtu_probes_lost > 0);
    assert_eq!(stats.checksum_free_datagrams, 0);
}

#[test]
fn pmtud_raises_the_controllers_packet_size_with_the_datagrams() {
    let mut pair = Pair::with_pmtud();
    pair.handshake();
    let data = pattern(300_000);
    assert_eq!(transfer(&mut pair, &data, &mut mtu_path(1500)), data);
    assert_eq!(pair.client.recovery.mss(), 1472);
}

#[test]
fn pmtud_off_keeps_every_datagram_at_the_configured_size() {
    let mut pair = Pair::default();
    pair.handshake();
    let data = pattern(500_000);
    let mut largest = 0;
    let mut path = |_: bool, _: u64, bytes: &[u8]| {
        largest = largest.max(bytes.len());
        PathAction::Deliver
    };
    assert_eq!(transfer(&mut pair, &data, &mut path), data);
    assert!((1300..=1350).contains(&largest), "{largest}");
    let stats = pair.client.stats();
    assert_eq!((stats.max_datagram_size, stats.pmtu_probes_sent), (1350, 0));
}

#[test]
fn a_burst_dropped_by_a_full_queue_is_no_path_mtu_black_hole() {
    // A 1500-byte path whose queue overflows once the search has settled:
    // eight full-size datagrams in a row vanish, and the ones after them
    // arrive. The ACK that declares the burst lost also acknowledges those
    // later large packets, so the path plainly carries the size: no fall
    // back to 1200 bytes (on loopback that cut a 1 GiB download from about
    // 2.2 to 0.8 Gb/s).
    let mut pair = Pair::with_pmtud();
    pair.handshake();
    let mut burst = 0;
    let mut path = |to_server: bool, index: u64, bytes: &[u8]| {
        if bytes.len() + 28 > 1500 {
            PathAction::Drop
        } else if to_server && index >= 600 && bytes.len() >= 1400 && burst < 8 {
            burst += 1;
            PathAction::Drop
        } else {
            PathAction::Deliver
        }
    };
    let data = pattern(3_000_000);
    assert_eq!(transfer(&mut pair, &data, &mut path), data);
    assert_eq!(burst, 8);
    let stats = pair.client.stats();
    assert!(stats.retransmitted_packets >= 8, "{stats:?}");
    assert_eq!(stats.pmtu_black_holes, 0, "{stats:?}");
    assert_eq!(stats.max_datagram_size, 1472);
}

#[test]
fn a_path_mtu_black_hole_falls_back_to_1200_and_the_transfer_completes() {
    let mut pair = Pair::with_pmtud();
    pair.handshake();
    // 1500 bytes at first; from the 400th datagram on, a tunnel of 1300.
    let mut path = |_: bool, index: u64, bytes: &[u8]| {
        let mtu = if index < 400 { 1500 } else { 1300 };
        if bytes.len() + 28 > mtu {
            PathAction::Drop
        } else {
            PathAction::Deliver
        }
    };
    let data = pattern(3_000_000);
    assert_eq!(transfer(&mut pair, &data, &mut path), data);
    let stats = pair.client.stats();
    assert!(stats.pmtu_black_holes >= 1, "{stats:?}");
    assert!(
        (1200..=1272).contains(&stats.max_datagram_size),
        "settled at {} on a 1300-byte path",
        stats.max_datagram_size
    );
}

/// A path of 1500 bytes for the first 400 datagrams each way, then a
/// tunnel of 1300 that drops larger packets without a word.
fn black_hole_after_400(_: bool, index: u64, bytes: &[u8]) -> PathAction {
    let mtu = if index < 400 { 1500 } else { 1300 };
    if bytes.len() + 28 > mtu {
        PathAction::Drop
    } else {
        PathAction::Deliver
    }
}

#[test]
fn after_a_black_hole_a_datagram_of_the_announced_length_still_leaves() {
    let mut pair = Pair::with_pmtud();
    pair.handshake();
    let data = pattern(3_000_000);
    assert_eq!(transfer(&mut pair, &data, &mut black_hole_after_400), data);
    assert!(pair.client.stats().pmtu_black_holes >= 1);
    // What the connection says fits now must fit the smaller packets, and
    // a datagram behind it must not wait for ever.
    let max = pair.client.max_datagram_len().unwrap();
    pair.client.send_datagram(&vec![7; max]).unwrap();
    pair.client.send_datagram(b"behind it").unwrap();
    let ok = pair.run_until(Duration::from_secs(5), &mut black_hole_after_400, |p| {
        p.server.datagrams_in.len() == 2
    });
    assert!(ok, "the datagrams did not arrive");
    assert_eq!(pair.server.recv_datagram().unwrap().len(), max);
    assert_eq!(pair.server.recv_datagram().unwrap(), b"behind it");
}

#[test]
fn a_datagram_queued_for_larger_packets_than_the_path_now_takes_is_dropped_and_counted() {
    let mut pair = Pair::with_pmtud();
    pair.handshake();
    let data = pattern(2_000_000);
    assert_eq!(transfer(&mut pair, &data, &mut mtu_path(1500)), data);
    let large = pair.client.max_datagram_len().unwrap();
    assert!(large > 1350, "{large}: the search raised the size");
    pair.client.send_datagram(&vec![7; large]).unwrap();
    pair.client.send_datagram(b"behind it").unwrap();
    // Before they leave, the client moves to another network: the path
    // MTU starts over from 1350.
    pair.client
        .on_local_address_changed(SocketAddr::from(([127, 0, 0, 2], 1)))
        .expect("the client may move");
    let ok = pair.run_until(Duration::from_secs(5), &mut mtu_path(1500), |p| {
        !p.server.datagrams_in.is_empty()
    });
    assert!(ok, "the queue stayed blocked");
    assert_eq!(pair.server.recv_datagram().unwrap(), b"behind it");
    assert_eq!(pair.client.stats().datagrams_dropped, 1);
}

#[test]
fn a_datagram_fills_the_peers_max_datagram_frame_size_and_no_more() {
    // RFC 9221 §3: the limit counts the frame's type and length too.
    assert_eq!(super::max_datagram_payload(65_535), 65_535 - 1 - 4);
    assert_eq!(super::max_datagram_payload(1200), 1200 - 1 - 2);
    assert_eq!(super::max_datagram_payload(64), 64 - 1 - 1);
    assert_eq!(super::max_datagram_payload(1), 0);
}

mod ecn;
mod paths;
mod repair;
mod resumption;
mod rfc9000;
mod rfc9000_packets;
mod rfc9001;
mod rfc9368;
mod rfc9369;
mod rfc9959;
mod rfc_rules;

#[test]
fn a_packet_with_no_frames_closes_the_connection() {
    let mut pair = Pair::default();
    pair.handshake();
    server_sends_forged(&mut pair, &[]);
    match pair.client.close_reason() {
        // RFC 9000 §12.4.
        Some(CloseReason::Local { code, .. }) => assert_eq!(*code, codes::PROTOCOL_VIOLATION),
        other => panic!("unexpected close: {other:?}"),
    }
}

#[test]
fn a_client_discards_a_server_initial_that_carries_a_token() {
    let mut pair = Pair::default();
    // The client's first flight reaches the server; nothing comes back yet.
    let reached = pair.run_until(
        Duration::from_secs(1),
        &mut |to_server, _, _| {
            if to_server {
                PathAction::Deliver
            } else {
                PathAction::Drop
            }
        },
        |p| p.datagrams_to_server > 0 && p.in_flight.is_empty(),
    );
    assert!(reached);
    let mut frames = Vec::new();
    Frame::Ping.encode(&mut frames);
    let header = Header {
        ty: PacketType::Initial,
        version: pair.server.versions.current().version(),
        dcid: pair.client.local_cid(),
        scid: pair.server.local_cid(),
        token: b"only clients send tokens",
        packet_number: 0,
        payload_len: 0,
        key_phase: false,
    };
    let keys = pair.server.spaces[SpaceId::Initial]
        .keys
        .as_deref()
        .expect("the server has Initial keys");
    let mut datagram = Vec::new();
    let format = pair.server.versions.current();
    datagram.resize(2000, 0);
    let mut scratch = Vec::new();
    let len = format
        .seal_into(&header, None, &frames, keys, &mut scratch, &mut datagram)
        .unwrap();
    datagram.truncate(len);
    let before = pair.client.stats().malformed_dropped;
    let info = RecvInfo {
        from: addr(2),
        to: addr(1),
        now: pair.now,
        ecn: Ecn::NotEct,
    };
    let _ = pair.client.recv(&mut datagram, info);
    // RFC 9000 §17.2.2: discarded, not acted on.
    assert_eq!(pair.client.stats().malformed_dropped, before + 1);
    assert!(!pair.client.is_closing());
}
