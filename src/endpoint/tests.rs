//! Endpoint tests: endpoints joined by an in-memory network on a virtual
//! clock, and hand-made datagrams for what must be dropped.

use std::time::Duration;

use super::*;
use crate::conn::CloseReason;
use crate::crypto::tls::{initial_protection, process_loopback_config};
use crate::crypto::{seal_packet, NullProtection};
use crate::wire::{encode_version_negotiation, parse_version_negotiation, Frame, Header, VERSION};
use crate::Side;

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

const SERVER: u16 = 4433;

/// The key the workers of these tests' multi-worker servers steer by.
const TEST_STEERING_KEY: crate::wire::steering::SteeringKey =
    crate::wire::steering::SteeringKey::from_bytes(*b"steering");

fn config(seed: u64) -> Config {
    Config {
        rng_seed: seed,
        tls: process_loopback_config(),
        ..Config::default()
    }
}

/// Endpoints joined by a lossless, instant network, on a virtual clock.
/// Whether the network delivers a datagram: (sender's index, to).
type Deliver = Box<dyn FnMut(usize, SocketAddr) -> bool>;

struct Net {
    endpoints: Vec<Endpoint>,
    now: Instant,
    deliver: Option<Deliver>,
    /// Before every step, check each endpoint's next deadline against a
    /// scan of all its connections.
    check_deadlines: bool,
}

impl Net {
    fn new(endpoints: Vec<Endpoint>) -> Self {
        Self {
            endpoints,
            now: Instant::now(),
            deliver: None,
            check_deadlines: false,
        }
    }

    /// Delivers everything every endpoint has to send, firing timers
    /// when the network is quiet, until `done` holds (or a bound of
    /// virtual time passes). Returns whether `done` held.
    fn run_until(&mut self, mut done: impl FnMut(&mut [Endpoint]) -> bool) -> bool {
        let deadline = self.now + Duration::from_secs(5);
        let mut buf = vec![0u8; 65_535];
        while self.now < deadline {
            if done(&mut self.endpoints) {
                return true;
            }
            if self.check_deadlines {
                for endpoint in &mut self.endpoints {
                    let indexed = endpoint.timeout(self.now);
                    assert_eq!(indexed, scanned_deadline(endpoint, self.now));
                }
            }
            let mut moved = false;
            for index in 0..self.endpoints.len() {
                let from = self.endpoints[index].local_addr();
                while let Some((len, to)) = self.endpoints[index].poll_transmit(self.now, &mut buf)
                {
                    moved = true;
                    if self
                        .deliver
                        .as_mut()
                        .is_some_and(|deliver| !deliver(index, to))
                    {
                        continue;
                    }
                    if let Some(peer) = self.endpoints.iter_mut().find(|e| e.local_addr() == to) {
                        peer.recv(&mut buf[..len], from, self.now);
                    }
                }
            }
            if !moved {
                let now = self.now;
                let next = self
                    .endpoints
                    .iter_mut()
                    .filter_map(|e| e.timeout(now))
                    .min();
                let Some(next) = next else { break };
                self.now = next.max(self.now);
                for endpoint in &mut self.endpoints {
                    endpoint.on_timeout(self.now);
                }
            }
        }
        done(&mut self.endpoints)
    }
}

/// The next deadline of `endpoint` as a scan of every connection finds it
/// (what `Endpoint::timeout` did before the deadline index).
fn scanned_deadline(endpoint: &Endpoint, now: Instant) -> Option<Instant> {
    endpoint
        .connections
        .values()
        .filter_map(|entry| timers::deadline(entry, now))
        .min()
}

fn established(endpoint: &mut Endpoint, handle: ConnectionHandle) -> bool {
    endpoint
        .connection(handle)
        .is_some_and(|c| c.is_established())
}

/// A valid TLS Initial packet (tags check) carrying a PING padded to
/// `datagram_len` bytes, from a client that picked `dcid`.
fn initial_datagram(dcid: ConnectionId, datagram_len: usize) -> Vec<u8> {
    let header = Header {
        ty: PacketType::Initial,
        version: VERSION,
        dcid,
        scid: ConnectionId::new(&[7; 8]).expect("8 bytes"),
        token: &[],
        packet_number: 0,
        payload_len: 0,
        key_phase: false,
    };
    let mut frames = Vec::new();
    Frame::Ping.encode(&mut frames);
    let mut datagram = Vec::new();
    let keys = initial_protection(dcid.as_slice(), Side::Client);
    // The payload length varint grows as we pad: settle in a few rounds.
    for _ in 0..3 {
        datagram.clear();
        seal_packet(&header, &frames, &keys, &mut datagram).unwrap();
        let short_by = datagram_len.saturating_sub(datagram.len());
        let over_by = datagram.len().saturating_sub(datagram_len);
        frames.resize(frames.len() + short_by - over_by.min(frames.len() - 1), 0);
    }
    datagram
}

#[test]
fn the_deadline_index_finds_the_timer_a_scan_of_every_connection_finds() {
    // Three clients each send 30 kB to one server over a network that
    // drops every fifth datagram: handshakes, losses, probes, pacing and
    // idle waits all move timers. Before every step, each endpoint's next
    // deadline is the earliest over all its connections; a connection the
    // index missed would fire late or never, and the uploads stall.
    let server = Endpoint::new(addr(SERVER), Some(config(1)));
    let clients = (0..3u16).map(|i| Endpoint::new(addr(1001 + i), None));
    let mut net = Net::new(std::iter::once(server).chain(clients).collect());
    let mut sent = 0u32;
    net.deliver = Some(Box::new(move |_, _| {
        sent += 1;
        sent % 5 != 0
    }));
    net.check_deadlines = true;
    let now = net.now;
    let handles: Vec<ConnectionHandle> = (1..=3)
        .map(|i| {
            net.endpoints[i]
                .connect(config(10 + i as u64), addr(SERVER), now)
                .unwrap()
        })
        .collect();
    assert!(net.run_until(|e| (1..=3).all(|i| established(&mut e[i], handles[i - 1]))));
    const UPLOAD: usize = 30_000;
    for (i, &handle) in handles.iter().enumerate() {
        let connection = net.endpoints[i + 1].connection(handle).unwrap();
        let stream = connection.stream_open_bi().unwrap();
        let written = connection
            .stream_send(stream, &[i as u8; UPLOAD], true)
            .unwrap();
        assert_eq!(written, UPLOAD, "the stream takes the whole upload");
    }
    let mut received: BTreeMap<ConnectionHandle, usize> = BTreeMap::new();
    assert!(
        net.run_until(|e| {
            for handle in e[0].handles().collect::<Vec<_>>() {
                let connection = e[0].connection(handle).unwrap();
                for stream in connection.readable() {
                    let mut buf = [0u8; 4096];
                    while let Ok((len, _)) = connection.stream_recv(stream, &mut buf) {
                        if len == 0 {
                            break;
                        }
                        *received.entry(handle).or_default() += len;
                    }
                }
            }
            received.len() == 3 && received.values().all(|&n| n == UPLOAD)
        }),
        "uploads stalled: {received:?}"
    );
}

#[test]
fn server_demultiplexes_two_clients_by_connection_id() {
    let server = Endpoint::new(addr(SERVER), Some(config(1)));
    let mut client_a = Endpoint::new(addr(1001), None);
    let mut client_b = Endpoint::new(addr(1002), None);
    let a = client_a
        .connect(config(2), addr(SERVER), Instant::now())
        .unwrap();
    let b = client_b
        .connect(config(3), addr(SERVER), Instant::now())
        .unwrap();
    let mut net = Net::new(vec![server, client_a, client_b]);

    assert!(net.run_until(|e| established(&mut e[1], a) && established(&mut e[2], b)));
    for (index, handle, message) in [(1, a, &b"from a"[..]), (2, b, b"from b")] {
        let connection = net.endpoints[index].connection(handle).unwrap();
        let stream = connection.stream_open_bi().unwrap();
        connection.stream_send(stream, message, true).unwrap();
    }
    let mut received: Vec<(SocketAddr, Vec<u8>)> = Vec::new();
    assert!(net.run_until(|e| {
        while let Some(handle) = e[0].accept() {
            let connection = e[0].connection(handle).unwrap();
            received.push((connection.remote(), Vec::new()));
        }
        for (index, handle) in e[0].handles().collect::<Vec<_>>().into_iter().enumerate() {
            let connection = e[0].connection(handle).unwrap();
            if let Some(stream) = connection.readable().first().copied() {
                let mut buf = [0u8; 64];
                if let Ok((len, _)) = connection.stream_recv(stream, &mut buf) {
                    if let Some(slot) = received.get_mut(index) {
                        slot.1.extend_from_slice(&buf[..len]);
                    }
                }
            }
        }
        received.len() == 2 && received.iter().all(|(_, data)| data.len() == 6)
    }));
    received.sort();
    assert_eq!(
        received,
        vec![
            (addr(1001), b"from a".to_vec()),
            (addr(1002), b"from b".to_vec())
        ]
    );
    assert_eq!(net.endpoints[0].stats().connections_accepted, 2);
    assert_eq!(net.endpoints[0].stats().dropped_unknown_connection, 0);
}

#[test]
fn client_initial_smaller_than_1200_bytes_creates_no_connection() {
    let mut server = Endpoint::new(addr(SERVER), Some(config(1)));
    let dcid = ConnectionId::new(&[9; 8]).unwrap();

    let mut small = initial_datagram(dcid, 1199);
    assert_eq!(
        small.len(),
        1199,
        "the packet must be exactly one byte short"
    );
    assert_eq!(server.recv(&mut small, addr(1001), Instant::now()), None);
    assert_eq!(server.stats().dropped_small_initial, 1);
    assert!(server.is_empty());
    assert_eq!(server.accept(), None);

    // The same Initial at full size is accepted: the size alone decided.
    let mut full = initial_datagram(dcid, 1200);
    assert!(server.recv(&mut full, addr(1001), Instant::now()).is_some());
    assert_eq!(server.len(), 1);
    assert!(server.accept().is_some());
}

#[test]
fn server_forgets_a_connection_whose_handshake_never_completes() {
    let start = Instant::now();
    let mut server =
        Endpoint::new(addr(SERVER), Some(config(1))).with_handshake_timeout(Duration::from_secs(2));
    // A well-formed Initial with no handshake in it: nothing follows.
    let mut forged = initial_datagram(ConnectionId::new(&[5; 8]).unwrap(), 1200);
    server.recv(&mut forged, addr(1001), start).unwrap();
    assert_eq!(server.len(), 1);
    // The deadline is a timer: the driver will wake for it.
    assert!(server
        .timeout(start)
        .is_some_and(|at| at <= start + Duration::from_secs(2)));

    server.on_timeout(start + Duration::from_millis(1999));
    assert_eq!(server.len(), 1, "not before the deadline");
    server.on_timeout(start + Duration::from_secs(2));
    assert!(server.is_empty());
    assert_eq!(server.stats().handshakes_timed_out, 1);
    assert_eq!(
        server.accept(),
        None,
        "a forgotten connection is not handed out"
    );
}

#[test]
fn handshake_timeout_beyond_the_clock_means_no_deadline() {
    let mut server =
        Endpoint::new(addr(SERVER), Some(config(1))).with_handshake_timeout(Duration::MAX);
    let mut initial = initial_datagram(ConnectionId::new(&[6; 8]).unwrap(), 1200);
    let now = Instant::now();
    assert!(server.recv(&mut initial, addr(1001), now).is_some());
    server.on_timeout(now + Duration::from_secs(3600));
    assert_eq!(server.len(), 1);
}

/// A 1-RTT packet (Null tags) carrying a PING, for connection ID `dcid`.
fn short_header_ping(dcid: ConnectionId) -> Vec<u8> {
    let header = Header {
        ty: PacketType::OneRtt,
        version: VERSION,
        dcid,
        scid: ConnectionId::EMPTY,
        token: &[],
        packet_number: 5,
        payload_len: 0,
        key_phase: false,
    };
    let mut frames = Vec::new();
    Frame::Ping.encode(&mut frames);
    let mut datagram = Vec::new();
    seal_packet(&header, &frames, &NullProtection, &mut datagram).unwrap();
    datagram
}

#[test]
fn short_header_packet_for_an_unknown_connection_id_is_dropped() {
    let mut server = Endpoint::new(addr(SERVER), Some(config(1)));
    let mut datagram = short_header_ping(ConnectionId::new(&[0xab; 8]).unwrap());

    assert_eq!(server.recv(&mut datagram, addr(1001), Instant::now()), None);
    assert_eq!(server.stats().dropped_unknown_connection, 1);
    assert!(server.is_empty(), "only an Initial may create a connection");
}

#[test]
fn client_endpoint_never_creates_connections_from_initials() {
    let mut client = Endpoint::new(addr(1001), None);
    let mut datagram = initial_datagram(ConnectionId::new(&[1; 8]).unwrap(), 1200);
    assert_eq!(
        client.recv(&mut datagram, addr(SERVER), Instant::now()),
        None
    );
    assert_eq!(client.stats().dropped_unknown_connection, 1);
    assert!(client.is_empty());
}

#[test]
fn garbage_datagram_is_counted_as_malformed() {
    let mut server = Endpoint::new(addr(SERVER), Some(config(1)));
    // Too short for a short header's connection ID. (Longer short-header
    // garbage names an unknown connection, which may get a stateless reset;
    // long-header garbage reads as another version: version negotiation.)
    let mut garbage = vec![0x7f; 6];
    assert_eq!(server.recv(&mut garbage, addr(1001), Instant::now()), None);
    assert_eq!(server.stats().dropped_malformed, 1);
    assert!(server.is_empty());
}

#[test]
fn a_client_drops_datagrams_from_another_address_than_its_server() {
    let server = Endpoint::new(addr(SERVER), Some(config(1)));
    let mut client = Endpoint::new(addr(1001), None);
    let handle = client
        .connect(config(2), addr(SERVER), Instant::now())
        .unwrap();
    let mut net = Net::new(vec![server, client]);
    assert!(net.run_until(|e| established(&mut e[1], handle)));

    // A genuine server packet, arriving from elsewhere: servers do not
    // migrate (RFC 9000 §9), so it is not the server's.
    let server_handle = ConnectionHandle(0);
    let connection = net.endpoints[0].connection(server_handle).unwrap();
    let stream = connection.stream_open_bi().unwrap();
    connection.stream_send(stream, b"hello", false).unwrap();
    let mut buf = vec![0u8; 2000];
    let now = net.now;
    let (len, to) = net.endpoints[0].poll_transmit(now, &mut buf).unwrap();
    assert_eq!(to, addr(1001));
    let before = net.endpoints[1].stats().datagrams_routed;
    assert_eq!(
        net.endpoints[1].recv(&mut buf[..len], addr(6666), now),
        None
    );
    assert_eq!(net.endpoints[1].stats().dropped_wrong_address, 1);
    assert_eq!(net.endpoints[1].stats().datagrams_routed, before);
}

/// A client at port 1001 connected to the server (connection 0), with the
/// handshake confirmed so that the server follows the client if it moves.
fn pair_ready_to_migrate() -> (Net, ConnectionHandle) {
    let server = Endpoint::new(addr(SERVER), Some(config(1)));
    let mut client = Endpoint::new(addr(1001), None);
    let handle = client
        .connect(config(2), addr(SERVER), Instant::now())
        .unwrap();
    let mut net = Net::new(vec![server, client]);
    assert!(net.run_until(|e| established(&mut e[1], handle)
        && e[0]
            .connection_ref(ConnectionHandle(0))
            .is_some_and(|c| c.follows_migration())));
    (net, handle)
}

#[test]
fn a_server_follows_a_client_that_moves_and_validates_its_new_address() {
    let (mut net, handle) = pair_ready_to_migrate();
    let server_handle = ConnectionHandle(0);

    // The client's NAT picks another port: its socket is the same, the
    // server sees a new source address.
    net.endpoints[1].local = addr(1099);
    let connection = net.endpoints[1].connection(handle).unwrap();
    let stream = connection.stream_open_bi().unwrap();
    connection
        .stream_send(stream, b"after the move", true)
        .unwrap();
    let mut read = Vec::new();
    assert!(net.run_until(|e| {
        let server = e[0].connection(server_handle).unwrap();
        let mut buf = [0u8; 64];
        if let Some(&id) = server.readable().first() {
            if let Ok((n, _)) = server.stream_recv(id, &mut buf) {
                read.extend_from_slice(&buf[..n]);
            }
        }
        read == b"after the move" && server.stats().paths_validated == 1
    }));
    let server = net.endpoints[0].connection_ref(server_handle).unwrap();
    assert_eq!(server.remote(), addr(1099));
    let stats = server.stats();
    assert_eq!((stats.peer_migrations, stats.paths_validated), (1, 1));
}

#[test]
fn a_lost_path_response_is_recovered_by_repeating_the_challenge() {
    let (mut net, handle) = pair_ready_to_migrate();
    let server_handle = ConnectionHandle(0);

    // The client moves. The server's first datagram to the new address
    // carries the PATH_CHALLENGE; the client's answer to it is lost, while
    // its later packets acknowledge the challenge's packet, so loss
    // recovery never sends the challenge again.
    net.endpoints[1].local = addr(1099);
    let (mut challenged, mut dropped) = (false, false);
    net.deliver = Some(Box::new(move |from, to| {
        if from == 0 && to == addr(1099) {
            challenged = true;
        } else if from == 1 && challenged && !dropped {
            dropped = true;
            return false;
        }
        true
    }));
    let connection = net.endpoints[1].connection(handle).unwrap();
    let stream = connection.stream_open_bi().unwrap();
    connection.stream_send(stream, b"moved", true).unwrap();
    let moved_at = net.now;
    assert!(net.run_until(|e| e[0]
        .connection_ref(server_handle)
        .is_some_and(|c| c.stats().paths_validated == 1)));
    let server = net.endpoints[0].connection_ref(server_handle).unwrap();
    let stats = server.stats();
    assert_eq!(server.remote(), addr(1099));
    // Validated by the repeated challenge, not after giving up and
    // following the client a second time.
    assert_eq!((stats.peer_migrations, stats.paths_validated), (1, 1));
    assert!(
        net.now - moved_at < Duration::from_secs(1),
        "validated after {:?}",
        net.now - moved_at
    );
}

#[test]
fn a_full_server_refuses_new_clients_at_once_saying_it_is_busy() {
    let server = Endpoint::new(addr(SERVER), Some(config(1))).with_max_connections(1);
    let mut client_a = Endpoint::new(addr(1001), None);
    let mut client_b = Endpoint::new(addr(1002), None);
    let a = client_a
        .connect(config(2), addr(SERVER), Instant::now())
        .unwrap();
    let b = client_b
        .connect(config(3), addr(SERVER), Instant::now())
        .unwrap();
    let mut net = Net::new(vec![server, client_a, client_b]);

    assert!(net.run_until(
        |e| established(&mut e[1], a) && e[2].connection_ref(b).is_some_and(|c| c.is_closed())
    ));
    let refused = net.endpoints[2].connection_ref(b).unwrap();
    assert!(!refused.is_established());
    match refused.close_reason() {
        Some(CloseReason::Peer {
            application: false,
            code,
            reason,
        }) => {
            assert_eq!(*code, crate::conn::codes::CONNECTION_REFUSED);
            assert_eq!(reason, "server busy: 1 clients");
            assert!(is_busy_refusal(reason));
        }
        other => panic!("expected a busy refusal, got {other:?}"),
    }
    let stats = net.endpoints[0].stats();
    assert_eq!(stats.refused_busy, 1);
    assert_eq!(stats.connections_accepted, 1);
    assert_eq!(net.endpoints[0].len(), 1, "a refusal is not a client");
    assert_eq!(net.endpoints[0].handles().count(), 1);
    assert_eq!(net.endpoints[0].accept(), Some(ConnectionHandle(0)));
    assert_eq!(
        net.endpoints[0].accept(),
        None,
        "the refusal is never handed out"
    );

    // The endpoint forgets the refusal once its closing period is over.
    let later = net.now + Duration::from_secs(60);
    net.endpoints[0].on_timeout(later);
    assert_eq!(net.endpoints[0].connections.len(), 1);
    assert_eq!(net.endpoints[0].refusing, 0);
}

#[test]
fn a_flood_of_initials_at_a_full_server_gets_a_bounded_number_of_refusals() {
    let mut server = Endpoint::new(addr(SERVER), Some(config(1))).with_max_connections(0);
    let now = Instant::now();
    let floods = MAX_REFUSING + 5;
    for index in 0..floods {
        let dcid = ConnectionId::new(&(index as u64).to_be_bytes()).unwrap();
        let mut datagram = initial_datagram(dcid, 1200);
        server.recv(&mut datagram, addr(2000 + index as u16), now);
    }
    assert_eq!(server.stats().refused_busy, MAX_REFUSING as u64);
    assert_eq!(server.stats().dropped_connection_limit, 5);
    assert!(server.is_empty());
    // Each refusal is one small datagram back, far below 3x what came in.
    let mut buf = vec![0u8; 2000];
    let mut sent = 0;
    while let Some((len, _)) = server.poll_transmit(now, &mut buf) {
        sent += len;
    }
    assert!(sent > 0);
    assert!(sent < MAX_REFUSING * 1200, "refusals sent {sent} bytes");
}

/// A server endpoint holding `secret`, and a client connected to it.
fn connected_pair(secret: &ServerSecret) -> (Net, ConnectionHandle) {
    let server_config = Config {
        server_secret: Some(secret.clone()),
        ..config(1)
    };
    let server = Endpoint::new(addr(SERVER), Some(server_config));
    let mut client = Endpoint::new(addr(1001), None);
    let handle = client
        .connect(config(2), addr(SERVER), Instant::now())
        .unwrap();
    let mut net = Net::new(vec![server, client]);
    assert!(net.run_until(|e| established(&mut e[1], handle)
        && e[0]
            .connection_ref(ConnectionHandle(0))
            .is_some_and(|c| c.is_established())));
    (net, handle)
}

/// Replaces the server endpoint with a fresh one (a restart), with the
/// same secret or another.
fn restart_server(net: &mut Net, secret: Option<&ServerSecret>) {
    let server_config = Config {
        server_secret: secret.cloned(),
        ..config(99)
    };
    net.endpoints[0] = Endpoint::new(addr(SERVER), Some(server_config));
}

fn send_on_stream(net: &mut Net, handle: ConnectionHandle) {
    let connection = net.endpoints[1].connection(handle).unwrap();
    let stream = connection.stream_open_bi().unwrap();
    connection
        .stream_send(stream, b"still there?", false)
        .unwrap();
}

use crate::crypto::{ResetToken, ServerSecret, SERVER_SECRET_LEN};

#[test]
fn a_restarted_server_resets_a_client_that_writes_to_it() {
    let secret = ServerSecret::new(&[9; SERVER_SECRET_LEN]);
    let (mut net, handle) = connected_pair(&secret);
    restart_server(&mut net, Some(&secret));
    send_on_stream(&mut net, handle);
    let start = net.now;

    assert!(net.run_until(|e| e[1].connection_ref(handle).is_some_and(|c| c.is_closed())));
    let client = net.endpoints[1].connection_ref(handle).unwrap();
    assert_eq!(client.close_reason(), Some(&CloseReason::StatelessReset));
    assert_eq!(net.endpoints[0].stats().stateless_resets_sent, 1);
    assert_eq!(net.endpoints[1].stats().stateless_resets_received, 1);
    // Learnt on the first packet after the restart, not after a timeout.
    assert!(
        net.now - start < Duration::from_millis(100),
        "{:?}",
        net.now - start
    );
}

#[test]
fn a_server_without_a_secret_or_with_another_one_cannot_reset() {
    let secret = ServerSecret::new(&[9; SERVER_SECRET_LEN]);
    let other = ServerSecret::new(&[10; SERVER_SECRET_LEN]);
    for replacement in [None, Some(&other)] {
        let (mut net, handle) = connected_pair(&secret);
        restart_server(&mut net, replacement);
        send_on_stream(&mut net, handle);
        net.run_until(|_| false);
        let client = net.endpoints[1].connection_ref(handle).unwrap();
        assert_ne!(client.close_reason(), Some(&CloseReason::StatelessReset));
        assert_eq!(net.endpoints[1].stats().stateless_resets_received, 0);
        let sent = net.endpoints[0].stats().stateless_resets_sent;
        assert_eq!(sent > 0, replacement.is_some());
    }
}

#[test]
fn a_reset_from_another_address_than_the_server_is_ignored() {
    let secret = ServerSecret::new(&[9; SERVER_SECRET_LEN]);
    let (mut net, handle) = connected_pair(&secret);
    let token = net.endpoints[1]
        .connection_ref(handle)
        .unwrap()
        .peer_reset_token()
        .expect("the server gave a token");
    let mut reset = vec![0x41; 30];
    reset.extend_from_slice(token.as_bytes());
    let now = net.now;
    net.endpoints[1].recv(&mut reset.clone(), addr(7777), now);
    assert!(!net.endpoints[1].connection_ref(handle).unwrap().is_closed());
    net.endpoints[1].recv(&mut reset, addr(SERVER), now);
    let client = net.endpoints[1].connection_ref(handle).unwrap();
    assert_eq!(client.close_reason(), Some(&CloseReason::StatelessReset));
}

#[test]
fn resets_are_shorter_than_their_trigger_and_rate_limited() {
    let secret = ServerSecret::new(&[9; SERVER_SECRET_LEN]);
    let server_config = Config {
        server_secret: Some(secret.clone()),
        ..config(1)
    };
    let mut server = Endpoint::new(addr(SERVER), Some(server_config));
    let now = Instant::now();
    let dcid = ConnectionId::new(&[0xab; 8]).unwrap();
    let trigger = short_header_ping(dcid);
    let mut buf = vec![0u8; 2000];

    server.recv(&mut trigger.clone(), addr(1001), now);
    let (len, to) = server.poll_transmit(now, &mut buf).expect("a reset");
    assert_eq!(to, addr(1001));
    assert!(
        len < trigger.len() && len >= MIN_RESET_LEN,
        "{len} vs {}",
        trigger.len()
    );
    assert_eq!(
        buf[0] & 0xc0,
        RESET_FIRST_BYTE_BITS,
        "looks like a short header"
    );
    assert!(secret.reset_token(&dcid).ends(&buf[..len]));

    // A trigger too short to answer with anything smaller gets nothing.
    server.recv(&mut trigger[..MIN_RESET_LEN].to_vec(), addr(1001), now);
    assert!(server.poll_transmit(now, &mut buf).is_none());

    // A flood gets at most MAX_STATELESS_PER_SECOND a second.
    let mut resets = 1;
    for _ in 0..3 * MAX_STATELESS_PER_SECOND {
        server.recv(&mut trigger.clone(), addr(1001), now);
        while server.poll_transmit(now, &mut buf).is_some() {
            resets += 1;
        }
    }
    assert_eq!(resets, MAX_STATELESS_PER_SECOND);
    server.recv(
        &mut trigger.clone(),
        addr(1001),
        now + Duration::from_secs(1),
    );
    assert!(
        server.poll_transmit(now, &mut buf).is_some(),
        "credit is back a second later"
    );
}

#[test]
fn a_quiet_client_with_keep_alive_finds_a_restarted_server() {
    let secret = ServerSecret::new(&[9; SERVER_SECRET_LEN]);
    let server_config = Config {
        server_secret: Some(secret.clone()),
        ..config(1)
    };
    let server = Endpoint::new(addr(SERVER), Some(server_config));
    let mut client = Endpoint::new(addr(1001), None);
    let keep_alive = Duration::from_millis(500);
    let client_config = Config {
        keep_alive_interval: Some(keep_alive),
        ..config(2)
    };
    let handle = client
        .connect(client_config, addr(SERVER), Instant::now())
        .unwrap();
    let mut net = Net::new(vec![server, client]);
    assert!(net.run_until(|e| established(&mut e[1], handle)
        && e[0]
            .connection_ref(ConnectionHandle(0))
            .is_some_and(|c| c.is_established())));
    // Let the handshake's last packets settle, then restart the server
    // while the client has nothing to say.
    net.run_until(|_| false);
    let restarted_at = net.now;
    restart_server(&mut net, Some(&secret));

    assert!(net.run_until(|e| e[1].connection_ref(handle).is_some_and(|c| c.is_closed())));
    let client = net.endpoints[1].connection_ref(handle).unwrap();
    assert_eq!(client.close_reason(), Some(&CloseReason::StatelessReset));
    assert!(client.stats().keep_alives_sent >= 1);
    assert!(net.now - restarted_at <= keep_alive + Duration::from_millis(50));
}

#[test]
fn poll_transmit_takes_turns_between_connections() {
    let server = Endpoint::new(addr(SERVER), Some(config(1)));
    let mut clients = Endpoint::new(addr(1001), None);
    let a = clients
        .connect(config(2), addr(SERVER), Instant::now())
        .unwrap();
    let b = clients
        .connect(config(3), addr(SERVER), Instant::now())
        .unwrap();
    let mut net = Net::new(vec![server, clients]);
    assert!(net.run_until(|e| established(&mut e[1], a) && established(&mut e[1], b)));

    // Both connections queue more than one datagram's worth.
    let mut order = Vec::new();
    for handle in [a, b] {
        let connection = net.endpoints[1].connection(handle).unwrap();
        let stream = connection.stream_open_uni().unwrap();
        connection
            .stream_send(stream, &[0x55; 5000], false)
            .unwrap();
    }
    let mut buf = vec![0u8; 2000];
    let now = net.now;
    for _ in 0..4 {
        let before: Vec<u64> = [a, b]
            .iter()
            .map(|h| {
                net.endpoints[1]
                    .connection_ref(*h)
                    .unwrap()
                    .stats()
                    .packets_sent
            })
            .collect();
        net.endpoints[1].poll_transmit(now, &mut buf).unwrap();
        let sender = [a, b]
            .iter()
            .zip(before)
            .find(|(h, sent)| {
                net.endpoints[1]
                    .connection_ref(**h)
                    .unwrap()
                    .stats()
                    .packets_sent
                    > *sent
            })
            .map(|(h, _)| *h)
            .unwrap();
        order.push(sender);
    }
    assert_eq!(order, vec![a, b, a, b]);
}

#[test]
fn each_connection_draws_its_own_connection_ids_from_one_seed() {
    let mut clients = Endpoint::new(addr(1001), None);
    let a = clients
        .connect(config(7), addr(SERVER), Instant::now())
        .unwrap();
    let b = clients
        .connect(config(7), addr(SERVER), Instant::now())
        .unwrap();
    let cid_a = clients.connection_ref(a).unwrap().local_cid();
    let cid_b = clients.connection_ref(b).unwrap().local_cid();
    assert_ne!(cid_a, cid_b);

    // And the same seed gives the same IDs again: runs repeat.
    let mut again = Endpoint::new(addr(1001), None);
    let a2 = again
        .connect(config(7), addr(SERVER), Instant::now())
        .unwrap();
    assert_eq!(again.connection_ref(a2).unwrap().local_cid(), cid_a);
}

#[test]
fn removed_connection_no_longer_receives() {
    let server = Endpoint::new(addr(SERVER), Some(config(1)));
    let mut client = Endpoint::new(addr(1001), None);
    let handle = client
        .connect(config(2), addr(SERVER), Instant::now())
        .unwrap();
    let mut net = Net::new(vec![server, client]);
    assert!(net.run_until(|e| established(&mut e[1], handle)));
    let server_handle = net.endpoints[0].handles().next().unwrap();
    assert!(net.endpoints[0].remove(server_handle).is_some());

    let connection = net.endpoints[1].connection(handle).unwrap();
    let stream = connection.stream_open_bi().unwrap();
    connection.stream_send(stream, b"anyone?", false).unwrap();
    let mut buf = vec![0u8; 2000];
    let now = net.now;
    let (len, _) = net.endpoints[1].poll_transmit(now, &mut buf).unwrap();
    assert_eq!(
        net.endpoints[0].recv(&mut buf[..len], addr(1001), now),
        None
    );
    assert_eq!(net.endpoints[0].stats().dropped_unknown_connection, 1);
}

/// Runs one client of `client_protection` against a server of
/// `server_protection`; returns both close reasons.
fn mismatch(
    client_protection: crate::conn::Protection,
    server_protection: crate::conn::Protection,
) -> (Option<CloseReason>, Option<CloseReason>) {
    let server = Endpoint::new(
        addr(SERVER),
        Some(Config {
            protection: server_protection,
            ..config(1)
        }),
    );
    let mut client = Endpoint::new(addr(1001), None);
    let client_config = Config {
        protection: client_protection,
        ..config(2)
    };
    let handle = client
        .connect(client_config, addr(SERVER), Instant::now())
        .unwrap();
    let mut net = Net::new(vec![server, client]);
    let closed = net.run_until(|e| {
        let server_closed = e[0]
            .handles()
            .next()
            .and_then(|h| e[0].connection_ref(h))
            .is_some_and(|c| c.close_reason().is_some());
        let client_closed = e[1]
            .connection_ref(handle)
            .is_some_and(|c| c.close_reason().is_some());
        server_closed && client_closed
    });
    assert!(closed, "both sides close at once");
    let server_handle = net.endpoints[0].handles().next().unwrap();
    (
        net.endpoints[0]
            .connection_ref(server_handle)
            .and_then(|c| c.close_reason().cloned()),
        net.endpoints[1]
            .connection_ref(handle)
            .and_then(|c| c.close_reason().cloned()),
    )
}

#[test]
fn protection_mismatch_fails_both_sides_naming_who_asked_for_what() {
    use crate::conn::{codes, Protection};
    for (client, server, expected) in [
        (
            Protection::Null,
            Protection::Tls,
            "protection mismatch: the client asked for Null protection (insecure), the server requires TLS 1.3",
        ),
        (
            Protection::Tls,
            Protection::Null,
            "protection mismatch: the client asked for TLS 1.3, the server requires Null protection (insecure)",
        ),
    ] {
        let (server_reason, client_reason) = mismatch(client, server);
        assert_eq!(
            server_reason,
            Some(CloseReason::Local {
                application: false,
                code: codes::CONNECTION_REFUSED,
                reason: expected.to_string()
            })
        );
        assert_eq!(
            client_reason,
            Some(CloseReason::Peer {
                application: false,
                code: codes::CONNECTION_REFUSED,
                reason: expected.to_string()
            })
        );
    }
}

/// How a dual-stack (IPv6) socket reports an IPv4 peer: `::ffff:a.b.c.d`.
fn mapped(address: SocketAddr) -> SocketAddr {
    match address {
        SocketAddr::V4(v4) => SocketAddr::new(v4.ip().to_ipv6_mapped().into(), v4.port()),
        SocketAddr::V6(_) => address,
    }
}

#[test]
fn an_ipv4_peer_in_both_spellings_is_one_connection_on_dual_stack_endpoints() {
    // Both ends on dual-stack sockets, as `sift-server` (on `[::]`) and a
    // client bound to `[::]` are. The client names the server in plain
    // IPv4; every other datagram in each direction arrives spelled
    // `::ffff:127.0.0.1`, as the kernel reports it, the rest plain: neither
    // end may see two peers, drop one spelling, or open a second
    // connection for the same connection ID.
    let dual_stack = |port: u16| SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, port));
    let mut server = Endpoint::new(dual_stack(SERVER), Some(config(1)));
    let mut client = Endpoint::new(dual_stack(1001), None);
    let mut now = Instant::now();
    let handle = client.connect(config(2), addr(SERVER), now).unwrap();
    let spell = |address: SocketAddr, count: &mut usize| {
        *count += 1;
        if *count % 2 == 1 {
            mapped(address)
        } else {
            address
        }
    };
    let (mut to_server, mut to_client) = (0usize, 0usize);
    let mut server_destinations = Vec::new();
    let mut buf = vec![0u8; 65_535];
    let mut request_sent = false;
    let mut request = Vec::new();
    let deadline = now + Duration::from_secs(5);
    while request.len() < 5 {
        assert!(now < deadline, "no request within 5 s of virtual time");
        if !request_sent && established(&mut client, handle) {
            let connection = client.connection(handle).unwrap();
            let stream = connection.stream_open_bi().unwrap();
            connection.stream_send(stream, b"hello", true).unwrap();
            request_sent = true;
        }
        let mut moved = false;
        while let Some((len, to)) = client.poll_transmit(now, &mut buf) {
            assert_eq!(to, addr(SERVER), "the client sends where it was told");
            server.recv(&mut buf[..len], spell(addr(1001), &mut to_server), now);
            moved = true;
        }
        while let Some((len, to)) = server.poll_transmit(now, &mut buf) {
            server_destinations.push(to);
            client.recv(&mut buf[..len], spell(addr(SERVER), &mut to_client), now);
            moved = true;
        }
        for handle in server.handles().collect::<Vec<_>>() {
            let connection = server.connection(handle).unwrap();
            for stream in connection.readable() {
                let mut chunk = [0u8; 64];
                if let Ok((len, _)) = connection.stream_recv(stream, &mut chunk) {
                    request.extend_from_slice(&chunk[..len]);
                }
            }
        }
        if !moved {
            let Some(next) = [client.timeout(now), server.timeout(now)]
                .into_iter()
                .flatten()
                .min()
            else {
                break;
            };
            now = next.max(now);
            client.on_timeout(now);
            server.on_timeout(now);
        }
    }
    assert_eq!(request, b"hello");
    assert!(
        to_server >= 2 && to_client >= 2,
        "both spellings were used in each direction ({to_server}, {to_client})"
    );
    assert_eq!(server.stats().connections_accepted, 1);
    assert_eq!(server.len(), 1);
    assert_eq!(server.stats().dropped_wrong_address, 0);
    assert_eq!(client.stats().dropped_wrong_address, 0);
    let accepted = server.accept().unwrap();
    let connection = server.connection(accepted).unwrap();
    assert_eq!(connection.remote(), addr(1001), "one spelling: plain IPv4");
    assert!(server_destinations.iter().all(|to| *to == addr(1001)));
}

/// A client's first datagram in a version sift does not speak: a long
/// header with `dcid` and `scid`, padded to `len` bytes.
fn other_version_datagram(version: u32, dcid: &[u8], scid: &[u8], len: usize) -> Vec<u8> {
    let mut datagram = vec![0xc0];
    datagram.extend_from_slice(&version.to_be_bytes());
    for cid in [dcid, scid] {
        datagram.push(cid.len() as u8);
        datagram.extend_from_slice(cid);
    }
    datagram.resize(len, 0);
    datagram
}

#[test]
fn a_server_answers_another_version_with_the_versions_it_speaks() {
    let mut server = Endpoint::new(addr(SERVER), Some(config(1)));
    let now = Instant::now();
    let mut buf = vec![0u8; 2048];
    // A QUIC v2 client with a 20-byte destination ID and a 5-byte source.
    let mut quic = other_version_datagram(0x6b33_43cf, &[0xd1; 20], &[0x5c; 5], 1200);
    assert_eq!(server.recv(&mut quic, addr(1001), now), None);
    let (len, to) = server.poll_transmit(now, &mut buf).expect("an answer");
    assert_eq!(to, addr(1001));
    let answer = parse_version_negotiation(&buf[..len]).unwrap();
    assert_eq!(answer.dcid, &[0x5c; 5], "the client's source ID comes back");
    assert_eq!(answer.scid, &[0xd1; 20]);
    let versions: Vec<u32> = answer.versions().collect();
    assert_eq!(versions.len(), 3);
    assert_eq!(versions[..2], [VERSION, crate::wire::QUIC_V1]);
    assert_eq!(versions[2] & 0x0f0f_0f0f, 0x0a0a_0a0a, "a reserved version");
    // Less than a client's first datagram, or a client endpoint: silence,
    // so a small packet cannot draw a bigger answer.
    let mut small = other_version_datagram(0x6b33_43cf, &[0xd1; 8], &[0x5c; 5], 1199);
    server.recv(&mut small, addr(1001), now);
    let mut client = Endpoint::new(addr(1001), None);
    client.recv(&mut quic, addr(SERVER), now);
    assert!(server.poll_transmit(now, &mut buf).is_none());
    assert!(client.poll_transmit(now, &mut buf).is_none());
    assert_eq!(server.stats().version_negotiations_sent, 1);
    assert_eq!(server.connections.len(), 0, "no state for other versions");
}

#[test]
fn version_negotiation_answers_share_the_stateless_rate_limit() {
    let mut server = Endpoint::new(addr(SERVER), Some(config(1)));
    let now = Instant::now();
    let mut buf = vec![0u8; 2048];
    let mut answers = 0;
    for _ in 0..3 * MAX_STATELESS_PER_SECOND {
        let mut datagram = other_version_datagram(0xff00_001d, &[1; 8], &[2; 8], 1200);
        server.recv(&mut datagram, addr(1001), now);
        while server.poll_transmit(now, &mut buf).is_some() {
            answers += 1;
        }
    }
    assert_eq!(answers, MAX_STATELESS_PER_SECOND);
}

/// A client endpoint that sent its first Initial, and that Initial's
/// destination and source connection IDs.
fn client_after_first_initial() -> (Endpoint, ConnectionHandle, Vec<u8>, Vec<u8>) {
    let mut client = Endpoint::new(addr(1001), None);
    let now = Instant::now();
    let handle = client.connect(config(2), addr(SERVER), now).unwrap();
    let mut buf = vec![0u8; 2048];
    let (len, _) = client
        .poll_transmit(now, &mut buf)
        .expect("the first Initial");
    let header = super::parse_any_header(&buf[..len]).unwrap();
    let (dcid, scid) = (
        header.dcid.as_slice().to_vec(),
        header.scid.as_slice().to_vec(),
    );
    (client, handle, dcid, scid)
}

fn version_negotiation(client_dcid: &[u8], client_scid: &[u8], versions: &[u32]) -> Vec<u8> {
    let mut out = Vec::new();
    encode_version_negotiation(&mut out, 0x2a, client_dcid, client_scid, versions).unwrap();
    out
}

#[test]
fn a_client_told_its_version_is_not_spoken_fails_at_once_naming_what_is() {
    let (mut client, handle, dcid, scid) = client_after_first_initial();
    let now = Instant::now();
    let mut answer = version_negotiation(&dcid, &scid, &[0xff00_001d, 0x6b33_43cf]);
    client.recv(&mut answer, addr(SERVER), now);
    let connection = client.connection_ref(handle).unwrap();
    assert!(connection.is_closed());
    let reason = connection.close_reason().unwrap();
    assert_eq!(
        reason,
        &CloseReason::VersionMismatch {
            offered: vec![0xff00_001d, 0x6b33_43cf]
        }
    );
    assert_eq!(
        reason.to_string(),
        "the server speaks none of our versions: it offers 0xff00001d, QUIC v2"
    );
    assert_eq!(client.stats().version_negotiations_received, 1);
}

#[test]
fn version_negotiations_that_cannot_be_the_servers_answer_are_ignored() {
    let (mut client, handle, dcid, scid) = client_after_first_initial();
    let now = Instant::now();
    for (mut forged, from) in [
        // Lists the version we sent: RFC 9000 §6.2 says ignore it (a
        // forged downgrade, or a confused server).
        (
            version_negotiation(&dcid, &scid, &[VERSION, 1]),
            addr(SERVER),
        ),
        // Does not echo the destination ID we chose.
        (version_negotiation(&[0xee; 8], &scid, &[2]), addr(SERVER)),
        // Names a connection we do not have.
        (version_negotiation(&dcid, &[0xee; 8], &[2]), addr(SERVER)),
        // From somewhere else.
        (version_negotiation(&dcid, &scid, &[2]), addr(7777)),
        // Not whole versions.
        (
            {
                let mut odd = version_negotiation(&dcid, &scid, &[2]);
                odd.pop();
                odd
            },
            addr(SERVER),
        ),
    ] {
        client.recv(&mut forged, from, now);
        assert!(!client.connection_ref(handle).unwrap().is_closed());
    }
}

#[test]
fn a_version_negotiation_after_the_handshake_began_is_ignored() {
    let secret = ServerSecret::new(&[9; SERVER_SECRET_LEN]);
    let (mut net, handle) = connected_pair(&secret);
    let connection = net.endpoints[1].connection_ref(handle).unwrap();
    let scid = connection.local_cid();
    let now = net.now;
    // Whatever the IDs: the client has heard from the server already.
    let mut late = version_negotiation(&[0; 8], scid.as_slice(), &[1]);
    net.endpoints[1].recv(&mut late, addr(SERVER), now);
    assert!(!net.endpoints[1].connection_ref(handle).unwrap().is_closed());
}

fn server_with_secret(secret: &ServerSecret, policy: RetryPolicy) -> Endpoint {
    let server_config = Config {
        server_secret: Some(secret.clone()),
        retry: policy,
        ..config(1)
    };
    Endpoint::new(addr(SERVER), Some(server_config))
}

#[test]
fn retry_round_trips_and_the_handshake_completes() {
    let secret = ServerSecret::new(&[9; SERVER_SECRET_LEN]);
    let server = server_with_secret(&secret, RetryPolicy::Always);
    let mut client = Endpoint::new(addr(1001), None);
    let handle = client
        .connect(config(2), addr(SERVER), Instant::now())
        .unwrap();
    let mut net = Net::new(vec![server, client]);
    assert!(net.run_until(|e| established(&mut e[1], handle)
        && e[0]
            .handles()
            .collect::<Vec<_>>()
            .into_iter()
            .any(|h| established(&mut e[0], h))));
    let (server, client) = (net.endpoints[0].stats(), net.endpoints[1].stats());
    assert_eq!(server.retries_sent, 1);
    assert_eq!(client.retries_received, 1);
    assert_eq!(server.connections_accepted, 1);
    assert_eq!(server.dropped_invalid_token, 0);
}

/// A client that sent its Initial, got the server's Retry and has its
/// second Initial (with the token) ready: (client, server, the Retry, the
/// second Initial).
fn second_initial(
    server: &mut Endpoint,
    now: Instant,
) -> (Endpoint, ConnectionHandle, Vec<u8>, Vec<u8>) {
    let mut client = Endpoint::new(addr(1001), None);
    let handle = client.connect(config(2), addr(SERVER), now).unwrap();
    let mut buf = vec![0u8; 2048];
    let (len, _) = client.poll_transmit(now, &mut buf).unwrap();
    assert_eq!(server.recv(&mut buf[..len], addr(1001), now), None);
    let (len, to) = server.poll_transmit(now, &mut buf).expect("a Retry");
    assert_eq!(to, addr(1001));
    let retry = buf[..len].to_vec();
    client.recv(&mut retry.clone(), addr(SERVER), now);
    assert_eq!(client.stats().retries_received, 1);
    let (len, _) = client.poll_transmit(now, &mut buf).unwrap();
    let initial = buf[..len].to_vec();
    let header = super::parse_any_header(&initial).unwrap();
    assert!(!header.token.is_empty(), "the token goes back");
    assert!(initial.len() >= 1200, "still a full-size Initial");
    (client, handle, retry, initial)
}

#[test]
fn a_token_from_another_address_or_another_server_is_refused() {
    // Past its lifetime, see
    // a_client_with_an_expired_retry_token_is_told_invalid_token_at_once.
    let secret = ServerSecret::new(&[9; SERVER_SECRET_LEN]);
    let mut server = server_with_secret(&secret, RetryPolicy::Always);
    let now = Instant::now();
    let (_client, _, _, initial) = second_initial(&mut server, now);
    // Replayed from elsewhere: the token is bound to 127.0.0.1:1001, so
    // it counts as no token, and the sender is asked for a Retry of its own.
    assert_eq!(server.recv(&mut initial.clone(), addr(6666), now), None);
    assert_eq!(server.stats().retries_sent, 2);
    assert!(server.is_empty(), "no state for it");
    // Another server (another secret) does not take it either.
    let other = ServerSecret::new(&[10; SERVER_SECRET_LEN]);
    let mut stranger = server_with_secret(&other, RetryPolicy::Always);
    assert_eq!(stranger.recv(&mut initial.clone(), addr(1001), now), None);
    assert_eq!(stranger.stats().retries_sent, 1);
    assert!(stranger.is_empty());
    // From its own address, in time: a connection, its address validated.
    let handle = server.recv(&mut initial.clone(), addr(1001), now);
    assert!(handle.is_some());
    assert_eq!(server.stats().connections_accepted, 1);
}

#[test]
fn a_client_with_an_expired_retry_token_is_told_invalid_token_at_once() {
    // RFC 9000 §8.1.2: the client will not take another Retry, so the
    // server closes with INVALID_TOKEN rather than leave it to time out.
    let secret = ServerSecret::new(&[9; SERVER_SECRET_LEN]);
    let mut server = server_with_secret(&secret, RetryPolicy::Always);
    let now = Instant::now();
    let (mut client, handle, _, initial) = second_initial(&mut server, now);
    let late = now + RETRY_TOKEN_LIFETIME + Duration::from_secs(1);
    server.recv(&mut initial.clone(), addr(1001), late);
    assert_eq!(server.stats().dropped_invalid_token, 1);
    assert!(server.is_empty(), "no connection for the application");
    assert_eq!(server.accept(), None);
    let mut buf = vec![0u8; 2048];
    let (len, to) = server
        .poll_transmit(late, &mut buf)
        .expect("an answer to the client");
    assert_eq!(to, addr(1001));
    assert!(
        len < 3 * initial.len(),
        "within the anti-amplification limit"
    );
    client.recv(&mut buf[..len], addr(SERVER), late);
    let refused = client.connection_ref(handle).unwrap();
    assert!(refused.is_closed());
    assert!(
        matches!(
            refused.close_reason(),
            Some(CloseReason::Peer {
                application: false,
                code: crate::conn::codes::INVALID_TOKEN,
                ..
            })
        ),
        "{:?}",
        refused.close_reason()
    );
}

#[test]
fn a_client_whose_nat_rebinds_after_a_retry_still_completes_its_handshake() {
    // A worker sent the client a Retry to balance the load; the client's
    // NAT gives it a new port before its next Initial. The token no longer
    // proves the address, but its IDs are the server's own: the connection
    // must announce the client's first destination ID as the original one
    // and the Retry's, or the client refuses the handshake (RFC 9000 §7.3).
    let secret = ServerSecret::new(&[9; SERVER_SECRET_LEN]);
    let now = Instant::now();
    let mut balancing = server_with_secret(&secret, RetryPolicy::Always);
    let (mut client, handle, _, initial) = second_initial(&mut balancing, now);
    // The worker the Retry named shares the secret and is not asking.
    let mut server = server_with_secret(&secret, RetryPolicy::Never);
    client.set_local_addr(addr(1099));
    assert!(server.recv(&mut initial.clone(), addr(1099), now).is_some());
    let mut net = Net::new(vec![server, client]);
    net.now = now;
    assert!(net.run_until(
        |e| established(&mut e[1], handle) && established(&mut e[0], ConnectionHandle(0))
    ));
    let server = net.endpoints[0].stats();
    assert_eq!((server.retries_sent, server.connections_accepted), (0, 1));
    assert_eq!(server.dropped_invalid_token, 0);
}

#[test]
fn a_client_takes_one_retry_and_only_a_genuine_one() {
    let secret = ServerSecret::new(&[9; SERVER_SECRET_LEN]);
    let now = Instant::now();
    let mut server = server_with_secret(&secret, RetryPolicy::Always);
    let (mut client, handle, retry, _) = second_initial(&mut server, now);
    // A second Retry is ignored (RFC 9000 §17.2.5.2).
    client.recv(&mut retry.clone(), addr(SERVER), now);
    assert_eq!(client.stats().retries_received, 1);

    // A damaged Retry fails its integrity tag; one from elsewhere is not
    // the server's.
    let mut server = server_with_secret(&secret, RetryPolicy::Always);
    let mut fresh = Endpoint::new(addr(1002), None);
    fresh.connect(config(3), addr(SERVER), now).unwrap();
    let mut buf = vec![0u8; 2048];
    let (len, _) = fresh.poll_transmit(now, &mut buf).unwrap();
    server.recv(&mut buf[..len], addr(1002), now);
    let (len, _) = server.poll_transmit(now, &mut buf).unwrap();
    let genuine = buf[..len].to_vec();
    let mut damaged = genuine.clone();
    damaged[len - 20] ^= 1;
    fresh.recv(&mut damaged, addr(SERVER), now);
    fresh.recv(&mut genuine.clone(), addr(7777), now);
    assert_eq!(fresh.stats().retries_received, 0);
    fresh.recv(&mut genuine.clone(), addr(SERVER), now);
    assert_eq!(fresh.stats().retries_received, 1);
    assert!(!client.connection_ref(handle).unwrap().is_closed());
}

#[test]
fn a_busy_server_switches_to_retry_when_handshakes_pile_up() {
    let secret = ServerSecret::new(&[9; SERVER_SECRET_LEN]);
    let mut server = server_with_secret(&secret, RetryPolicy::WhenBusy { half_open: 2 });
    let now = Instant::now();
    // Spoofed Initials that never complete: two get state, then Retry.
    for (i, dcid) in [[1u8; 8], [2; 8], [3; 8], [4; 8]].iter().enumerate() {
        let mut initial = initial_datagram(ConnectionId::new(dcid).unwrap(), 1200);
        let handle = server.recv(&mut initial, addr(2000 + i as u16), now);
        assert_eq!(handle.is_some(), i < 2, "Initial {i}");
    }
    assert_eq!(server.stats().retries_sent, 2);
    assert_eq!(server.len(), 2);
    // With the policy off, every Initial gets state.
    let mut open = server_with_secret(&secret, RetryPolicy::Never);
    for i in 0..4u8 {
        let mut initial = initial_datagram(ConnectionId::new(&[i + 1; 8]).unwrap(), 1200);
        assert!(open
            .recv(&mut initial, addr(3000 + u16::from(i)), now)
            .is_some());
    }
    assert_eq!(open.stats().retries_sent, 0);
}

#[test]
fn a_spoofed_initial_draws_at_most_three_times_its_size() {
    // RFC 9000 §8.1: before the client's address is validated the server
    // sends at most three times what it received from it, however many
    // times its handshake packets time out and are sent again.
    let mut server = Endpoint::new(addr(SERVER), Some(config(1)));
    let mut now = Instant::now();
    let mut initial = initial_datagram(ConnectionId::new(&[5; 8]).unwrap(), 1200);
    let received = initial.len();
    server.recv(&mut initial, addr(4444), now);
    let mut sent = 0;
    let mut buf = vec![0u8; 65_535];
    let deadline = now + DEFAULT_SERVER_HANDSHAKE_TIMEOUT + Duration::from_secs(1);
    while now < deadline {
        while let Some((len, to)) = server.poll_transmit(now, &mut buf) {
            assert_eq!(to, addr(4444));
            sent += len;
        }
        let Some(next) = server.timeout(now) else {
            break;
        };
        now = next.max(now + Duration::from_millis(1));
        server.on_timeout(now);
    }
    assert!(sent > 0, "the server answered");
    assert!(sent <= 3 * received, "sent {sent} bytes for {received}");
}

/// A client and server past their handshake (confirmed on the server), and
/// one genuine 1-RTT datagram from the client not yet delivered.
fn confirmed_pair_and_a_client_datagram() -> (Net, ConnectionHandle, Vec<u8>) {
    let server = Endpoint::new(addr(SERVER), Some(config(1)));
    let mut client = Endpoint::new(addr(1001), None);
    let handle = client
        .connect(config(2), addr(SERVER), Instant::now())
        .unwrap();
    let mut net = Net::new(vec![server, client]);
    assert!(net.run_until(|e| e[0]
        .connection_ref(ConnectionHandle(0))
        .is_some_and(|c| c.follows_migration())));
    let connection = net.endpoints[1].connection(handle).unwrap();
    let stream = connection.stream_open_bi().unwrap();
    connection.stream_send(stream, &[7; 3000], false).unwrap();
    let mut buf = vec![0u8; 2000];
    let now = net.now;
    let (len, _) = net.endpoints[1].poll_transmit(now, &mut buf).unwrap();
    (net, handle, buf[..len].to_vec())
}

#[test]
fn a_replayed_packet_from_a_spoofed_address_moves_nothing() {
    let (mut net, _, datagram) = confirmed_pair_and_a_client_datagram();
    let now = net.now;
    net.endpoints[0].recv(&mut datagram.clone(), addr(1001), now);
    // An on-path attacker replays it from an address of its choosing.
    net.endpoints[0].recv(&mut datagram.clone(), addr(6666), now);
    let server = net.endpoints[0]
        .connection_ref(ConnectionHandle(0))
        .unwrap();
    assert_eq!(server.remote(), addr(1001));
    assert_eq!(server.stats().peer_migrations, 0);
}

#[test]
fn a_new_path_is_held_to_three_times_what_came_from_it_until_validated() {
    let (mut net, _, datagram) = confirmed_pair_and_a_client_datagram();
    let now = net.now;
    // The client's genuine packet arrives from a new address, and nothing
    // more from there: the server may answer only 3× its size.
    net.endpoints[0].recv(&mut datagram.clone(), addr(1099), now);
    let server = net.endpoints[0]
        .connection_ref(ConnectionHandle(0))
        .unwrap();
    assert_eq!(server.remote(), addr(1099));
    let server_handle = ConnectionHandle(0);
    let connection = net.endpoints[0].connection(server_handle).unwrap();
    let stream = connection.stream_open_bi().unwrap();
    connection
        .stream_send(stream, &[9; 100_000], false)
        .unwrap();
    let mut sent = 0;
    let mut buf = vec![0u8; 2000];
    let mut t = now;
    // Until the server gives up on the silent new address (then it goes
    // back to the old one, a validated path).
    for _ in 0..50 {
        let gave_up = net.endpoints[0]
            .connection_ref(server_handle)
            .is_some_and(|c| c.stats().paths_abandoned > 0);
        if gave_up {
            break;
        }
        while let Some((len, to)) = net.endpoints[0].poll_transmit(t, &mut buf) {
            assert_eq!(to, addr(1099));
            sent += len;
        }
        t += Duration::from_millis(50);
        net.endpoints[0].on_timeout(t);
    }
    assert!(sent > 0);
    assert!(
        sent <= 3 * datagram.len(),
        "sent {sent} for {}",
        datagram.len()
    );
}

#[test]
fn a_new_address_that_never_answers_is_given_up_for_the_old_one() {
    // RFC 9000 §9.3.3: an attacker forwards a genuine packet from an
    // address of its own. The server moves there, challenges it, hears
    // nothing back, and returns to the client's validated address.
    let (mut net, handle, datagram) = confirmed_pair_and_a_client_datagram();
    let now = net.now;
    net.endpoints[0].recv(&mut datagram.clone(), addr(6666), now);
    let server_handle = ConnectionHandle(0);
    let server = net.endpoints[0].connection_ref(server_handle).unwrap();
    assert_eq!(server.remote(), addr(6666));
    // Nothing lives at 6666; the client stays quiet for a while.
    let mut buf = vec![0u8; 2000];
    let mut t = now;
    while net.endpoints[0]
        .connection_ref(server_handle)
        .is_some_and(|c| c.stats().paths_abandoned == 0)
    {
        while net.endpoints[0].poll_transmit(t, &mut buf).is_some() {}
        t = net.endpoints[0].timeout(t).expect("a timer").max(t);
        net.endpoints[0].on_timeout(t);
        assert!(t - now < Duration::from_secs(5), "never gave up");
    }
    let server = net.endpoints[0].connection_ref(server_handle).unwrap();
    assert_eq!(server.remote(), addr(1001));
    assert_eq!(server.stats().paths_validated, 0);
    // And the connection still works from the real client.
    net.now = t;
    let connection = net.endpoints[1].connection(handle).unwrap();
    let stream = connection.stream_open_bi().unwrap();
    connection.stream_send(stream, b"still me", true).unwrap();
    let mut read = Vec::new();
    assert!(net.run_until(|e| {
        let server = e[0].connection(server_handle).unwrap();
        let mut buf = [0u8; 8192];
        for id in server.readable() {
            while let Ok((n, _)) = server.stream_recv(id, &mut buf) {
                if n == 0 {
                    break;
                }
                read.extend_from_slice(&buf[..n]);
            }
        }
        read.ends_with(b"still me")
    }));
}

#[test]
fn a_second_move_that_never_answers_goes_back_to_the_last_validated_address() {
    // RFC 9000 §9.3.2: back to the last validated address, however many
    // unvalidated ones the peer seemed to pass through since.
    let (mut net, _, datagram) = confirmed_pair_and_a_client_datagram();
    let now = net.now;
    let mut buf = vec![0u8; 2000];
    let (len, _) = net.endpoints[1]
        .poll_transmit(now, &mut buf)
        .expect("a second datagram");
    let later = buf[..len].to_vec();
    // An attacker forwards both, from two addresses of its own.
    net.endpoints[0].recv(&mut datagram.clone(), addr(6666), now);
    net.endpoints[0].recv(&mut later.clone(), addr(7777), now);
    let server_handle = ConnectionHandle(0);
    let server = net.endpoints[0].connection_ref(server_handle).unwrap();
    assert_eq!(server.remote(), addr(7777));
    assert_eq!(server.stats().peer_migrations, 2);
    let mut t = now;
    while net.endpoints[0]
        .connection_ref(server_handle)
        .is_some_and(|c| c.stats().paths_abandoned == 0)
    {
        while net.endpoints[0].poll_transmit(t, &mut buf).is_some() {}
        t = net.endpoints[0].timeout(t).expect("a timer").max(t);
        net.endpoints[0].on_timeout(t);
        assert!(t - now < Duration::from_secs(5), "never gave up");
    }
    let server = net.endpoints[0].connection_ref(server_handle).unwrap();
    assert_eq!(server.remote(), addr(1001));
    assert!(!server.is_closed());
}

/// Runs `net` over a path of `one_way` latency and a bottleneck of
/// `rate` bytes/s each way with an unbounded queue, until `done` holds
/// (or 30 s of virtual time pass). Returns whether `done` held.
fn run_over_a_bottleneck(
    net: &mut Net,
    one_way: Duration,
    rate: u64,
    mut done: impl FnMut(&mut [Endpoint]) -> bool,
) -> bool {
    let deadline = net.now + Duration::from_secs(30);
    let mut buf = vec![0u8; 65_535];
    // (arrival, from, to, bytes), and when each sender's link is next free.
    let mut in_flight: Vec<(Instant, SocketAddr, SocketAddr, Vec<u8>)> = Vec::new();
    let mut link_free = vec![net.now; net.endpoints.len()];
    while net.now < deadline {
        if done(&mut net.endpoints) {
            return true;
        }
        for (index, free) in link_free.iter_mut().enumerate() {
            let from = net.endpoints[index].local_addr();
            while let Some((len, to)) = net.endpoints[index].poll_transmit(net.now, &mut buf) {
                let serialised = Duration::from_secs_f64(len as f64 / rate as f64);
                *free = (*free).max(net.now) + serialised;
                in_flight.push((*free + one_way, from, to, buf[..len].to_vec()));
            }
        }
        let mut delivered = false;
        while let Some(next) = in_flight
            .iter()
            .enumerate()
            .filter(|(_, (at, ..))| *at <= net.now)
            .min_by_key(|(_, (at, ..))| *at)
            .map(|(i, _)| i)
        {
            let (_, from, to, mut datagram) = in_flight.remove(next);
            if let Some(peer) = net.endpoints.iter_mut().find(|e| e.local_addr() == to) {
                peer.recv(&mut datagram, from, net.now);
            }
            delivered = true;
        }
        if delivered {
            continue;
        }
        let now = net.now;
        let next = net
            .endpoints
            .iter_mut()
            .filter_map(|e| e.timeout(now))
            .chain(in_flight.iter().map(|(at, ..)| *at))
            .min();
        let Some(next) = next else { break };
        net.now = next.max(net.now);
        for endpoint in &mut net.endpoints {
            endpoint.on_timeout(net.now);
        }
    }
    done(&mut net.endpoints)
}

#[test]
fn a_server_seals_no_path_state_for_an_address_its_client_has_not_proved() {
    // Issue 53, finding 1, over the endpoint: after a download through a
    // queue, one genuine 1-RTT packet of the client's, sent again from a
    // victim's address, moved the server there, and the endpoint sealed
    // at once a token with the old path's state (times the default RTT)
    // bound to the victim's address. Nothing is sealed for an address
    // until it proves itself.
    let secret = ServerSecret::new(&[9; SERVER_SECRET_LEN]);
    let server = server_with_secret(&secret, RetryPolicy::Never);
    let mut client = Endpoint::new(addr(1001), None);
    let handle = client
        .connect(config(2), addr(SERVER), Instant::now())
        .unwrap();
    let mut net = Net::new(vec![server, client]);
    let (one_way, rate) = (Duration::from_millis(20), 1_250_000);
    let server_handle = ConnectionHandle(0);
    assert!(run_over_a_bottleneck(&mut net, one_way, rate, |e| {
        established(&mut e[1], handle)
            && e[0]
                .connection_ref(server_handle)
                .is_some_and(|c| c.follows_migration())
    }));
    let len = 2_000_000;
    let connection = net.endpoints[0].connection(server_handle).unwrap();
    let stream = connection.stream_open_uni().unwrap();
    let data = vec![5u8; len];
    let (mut written, mut read) = (0, 0);
    let mut buf = vec![0u8; 65_536];
    assert!(run_over_a_bottleneck(&mut net, one_way, rate, |e| {
        let server = e[0].connection(server_handle).unwrap();
        if written < len {
            written += server
                .stream_send(stream, &data[written..], true)
                .unwrap_or(0);
        }
        let client = e[1].connection(handle).unwrap();
        for id in client.readable() {
            while let Ok((n, _)) = client.stream_recv(id, &mut buf) {
                if n == 0 {
                    break;
                }
                read += n;
            }
        }
        read == len
    }));
    let saved = net.endpoints[0].stats().path_states_saved;
    assert!(saved > 0, "the client's own address got a path state");

    // The client's next datagram, and the same again from the victim's.
    let connection = net.endpoints[1].connection(handle).unwrap();
    let stream = connection.stream_open_bi().unwrap();
    connection.stream_send(stream, b"more", false).unwrap();
    let now = net.now;
    let (len, _) = net.endpoints[1].poll_transmit(now, &mut buf).unwrap();
    let victim = SocketAddr::from(([127, 0, 0, 66], 4433));
    net.endpoints[0].recv(&mut buf[..len].to_vec(), victim, now);
    let server = net.endpoints[0].connection_ref(server_handle).unwrap();
    assert_eq!(server.remote(), victim);
    // Until the server gives the silent address up.
    let mut t = now;
    while net.endpoints[0]
        .connection_ref(server_handle)
        .is_some_and(|c| c.stats().paths_abandoned == 0)
    {
        assert_eq!(
            net.endpoints[0].stats().path_states_saved,
            saved,
            "a path state sealed for the victim's address"
        );
        while net.endpoints[0].poll_transmit(t, &mut buf).is_some() {}
        t = net.endpoints[0].timeout(t).expect("a timer").max(t);
        net.endpoints[0].on_timeout(t);
        assert!(t - now < Duration::from_secs(5), "never gave up");
    }
    assert_eq!(net.endpoints[0].stats().path_states_saved, saved);
}

/// A server that always asks for Retry and a client whose first
/// connection went through one and brought back a NEW_TOKEN token.
fn client_holding_a_new_token() -> (Net, ConnectionHandle) {
    let secret = ServerSecret::new(&[9; SERVER_SECRET_LEN]);
    let server = server_with_secret(&secret, RetryPolicy::Always);
    let mut client = Endpoint::new(addr(1001), None);
    let first = client
        .connect(config(2), addr(SERVER), Instant::now())
        .unwrap();
    let mut net = Net::new(vec![server, client]);
    assert!(net.run_until(|e| established(&mut e[1], first) && !e[1].tokens.is_empty()));
    assert_eq!(net.endpoints[0].stats().retries_sent, 1);
    (net, first)
}

#[test]
fn a_client_back_with_the_servers_new_token_skips_the_retry() {
    let (mut net, first) = client_holding_a_new_token();
    net.endpoints[1].connection(first).unwrap().close(0, "bye");

    // The second one brings the token: validated at once, no Retry.
    let now = net.now;
    let second = net.endpoints[1]
        .connect(config(3), addr(SERVER), now)
        .unwrap();
    assert!(net.endpoints[1].tokens.is_empty(), "a token is used once");
    assert!(net.run_until(|e| established(&mut e[1], second)));
    let server = net.endpoints[0].stats();
    assert_eq!(server.retries_sent, 1);
    assert_eq!(server.validated_by_token, 1);
}

#[test]
fn a_new_token_from_another_ip_address_gets_a_retry() {
    let (mut net, _) = client_holding_a_new_token();
    // Another host takes the token along.
    let token = net.endpoints[1].tokens.take(addr(SERVER)).unwrap();
    let mut thief = Endpoint::new(SocketAddr::from(([127, 0, 0, 9], 1001)), None);
    thief.tokens.insert(addr(SERVER), token);
    let stolen = thief.connect(config(4), addr(SERVER), net.now).unwrap();
    net.endpoints.push(thief);
    assert!(net.run_until(|e| established(&mut e[2], stolen)));
    let server = net.endpoints[0].stats();
    assert_eq!(server.validated_by_token, 0);
    assert_eq!(
        server.retries_sent, 2,
        "the thief proved its address with a Retry"
    );
}

/// Runs `net` until both ends of `handle` hold every connection ID the
/// other issued (the handshake's plus `ACTIVE_LIMIT - 1` more each way).
/// The client watches one reset token: that of the server ID it uses
/// (RFC 9000 §10.3.1: not those of spares).
fn run_until_ids_issued(net: &mut Net) {
    let full = crate::conn::ACTIVE_CONNECTION_ID_LIMIT as usize;
    assert!(net.run_until(|e| {
        e[0].routes.len() == full + 1 // + the client's first destination ID
            && e[1].routes.len() == full
            && e[1].reset_tokens.len() == 1
    }));
}

#[test]
fn after_the_handshake_each_side_issues_ids_and_its_endpoint_routes_them() {
    let secret = ServerSecret::new(&[9; SERVER_SECRET_LEN]);
    let (mut net, handle) = connected_pair(&secret);
    run_until_ids_issued(&mut net);
    // Every routed ID reaches the right connection.
    let client_routes: Vec<_> = net.endpoints[1].routes.values().copied().collect();
    assert!(client_routes.iter().all(|h| *h == handle));
    let server_routes: Vec<_> = net.endpoints[0].routes.values().copied().collect();
    assert!(server_routes.iter().all(|h| *h == ConnectionHandle(0)));
}

#[test]
fn a_client_that_rebinds_moves_to_a_fresh_id_and_the_server_answers_on_one_too() {
    let secret = ServerSecret::new(&[9; SERVER_SECRET_LEN]);
    let (mut net, handle) = connected_pair(&secret);
    run_until_ids_issued(&mut net);
    let server_handle = ConnectionHandle(0);
    let handshake_id = net.endpoints[0]
        .connection_ref(server_handle)
        .unwrap()
        .local_cid();

    net.endpoints[1]
        .rebound(addr(1099))
        .expect("the client may move");
    send_on_stream(&mut net, handle);
    assert!(net.run_until(|e| {
        e[0].connection_ref(server_handle)
            .is_some_and(|c| c.stats().paths_validated == 1)
            // The server learnt the client retired the handshake's ID.
            && !e[0].routes.contains_key(&handshake_id)
    }));
    let server = net.endpoints[0].connection_ref(server_handle).unwrap();
    assert_eq!(server.remote(), addr(1099));
    assert_eq!(server.stats().connection_id_switches, 1);
    let client = net.endpoints[1].connection_ref(handle).unwrap();
    assert_eq!(client.stats().connection_id_switches, 1);
    // Retired IDs are replaced: both sides hold a full set again, and
    // each side watches the reset token of the ID it sends to, only.
    run_until_ids_issued(&mut net);
    assert_eq!(net.endpoints[0].reset_tokens.len(), 1);
}

/// A stateless reset from `from` ending in `token`, to `endpoint`.
fn reset_to(net: &mut Net, endpoint: usize, from: SocketAddr, token: &ResetToken) {
    let mut reset = vec![0x41; 30];
    reset.extend_from_slice(token.as_bytes());
    let now = net.now;
    net.endpoints[endpoint].recv(&mut reset, from, now);
}

#[test]
fn a_reset_with_the_token_of_a_spare_id_not_yet_used_is_ignored() {
    let secret = ServerSecret::new(&[9; SERVER_SECRET_LEN]);
    let (mut net, handle) = connected_pair(&secret);
    run_until_ids_issued(&mut net);
    let in_use = net.endpoints[1]
        .connection_ref(handle)
        .unwrap()
        .peer_reset_token()
        .expect("the server gave a token");
    // The server's other IDs: spares the client holds and has not used.
    // RFC 9000 §10.3.1: their tokens are not checked.
    let spares: Vec<ResetToken> = net.endpoints[0]
        .routes
        .keys()
        .map(|cid| secret.reset_token(cid))
        .filter(|token| *token != in_use)
        .collect();
    assert!(spares.len() >= 3, "{}", spares.len());
    for token in &spares {
        reset_to(&mut net, 1, addr(SERVER), token);
        let client = net.endpoints[1].connection_ref(handle).unwrap();
        assert!(!client.is_closed(), "reset by a spare ID's token");
    }
    reset_to(&mut net, 1, addr(SERVER), &in_use);
    let client = net.endpoints[1].connection_ref(handle).unwrap();
    assert_eq!(client.close_reason(), Some(&CloseReason::StatelessReset));
}

#[test]
fn a_reset_that_names_a_connections_own_id_resets_it_when_it_does_not_decrypt() {
    let secret = ServerSecret::new(&[9; SERVER_SECRET_LEN]);
    let (mut net, handle) = connected_pair(&secret);
    run_until_ids_issued(&mut net);
    let token = net.endpoints[1]
        .connection_ref(handle)
        .unwrap()
        .peer_reset_token()
        .expect("the server gave a token");
    // A reset shaped as a short header to the client's own ID reaches the
    // connection and opens under no key: RFC 9000 §10.3.1 has the endpoint
    // check its last 16 bytes then too.
    let own = net.endpoints[1].connection_ref(handle).unwrap().local_cid();
    let mut reset = vec![0x41];
    reset.extend_from_slice(own.as_slice());
    reset.resize(40, 0x5a);
    reset.extend_from_slice(token.as_bytes());
    let now = net.now;
    assert_eq!(
        net.endpoints[1].recv(&mut reset, addr(SERVER), now),
        Some(handle),
        "routed to the connection"
    );
    let client = net.endpoints[1].connection_ref(handle).unwrap();
    assert_eq!(client.close_reason(), Some(&CloseReason::StatelessReset));
    assert_eq!(net.endpoints[1].stats().stateless_resets_received, 1);
}

#[test]
fn a_server_recognises_a_reset_with_the_token_of_the_client_id_it_uses() {
    let secret = ServerSecret::new(&[9; SERVER_SECRET_LEN]);
    let (mut net, handle) = connected_pair(&secret);
    run_until_ids_issued(&mut net);
    // The client moves: the server follows it to another of its IDs,
    // whose token the client gave in NEW_CONNECTION_ID.
    net.endpoints[1]
        .rebound(addr(1099))
        .expect("a confirmed client with a spare ID may move");
    send_on_stream(&mut net, handle);
    let server_handle = ConnectionHandle(0);
    assert!(net.run_until(|e| e[0]
        .connection_ref(server_handle)
        .is_some_and(|c| c.stats().paths_validated == 1)));
    let watched = net.endpoints[0].reset_tokens.tokens();
    let [(peer, token)] = watched[..] else {
        panic!("the server watches {} tokens, not 1", watched.len());
    };
    assert_eq!(peer, addr(1099));
    // From another address it is nothing (RFC 9000 §10.3.1).
    reset_to(&mut net, 0, addr(1001), &token);
    assert!(!net.endpoints[0]
        .connection_ref(server_handle)
        .unwrap()
        .is_closed());
    reset_to(&mut net, 0, addr(1099), &token);
    let server = net.endpoints[0].connection_ref(server_handle).unwrap();
    assert_eq!(server.close_reason(), Some(&CloseReason::StatelessReset));
    assert_eq!(net.endpoints[0].stats().stateless_resets_received, 1);
}

#[test]
fn an_endpoint_whose_client_may_not_move_yet_keeps_its_address() {
    // RFC 9000 §9: no move before the handshake is confirmed. The driver
    // asks the endpoint before it gives up its socket.
    let mut client = Endpoint::new(addr(1001), None);
    client
        .connect(config(2), addr(SERVER), Instant::now())
        .unwrap();
    let _ = client.rebound(addr(1099));
    assert_eq!(client.local_addr(), addr(1001));
    let error = client.may_rebind(addr(1099)).unwrap_err();
    assert!(error.to_string().contains("not confirmed"), "{error}");
}

#[test]
fn a_restarted_server_resets_a_client_that_moved_to_another_id() {
    let secret = ServerSecret::new(&[9; SERVER_SECRET_LEN]);
    let (mut net, handle) = connected_pair(&secret);
    run_until_ids_issued(&mut net);
    net.endpoints[1]
        .rebound(addr(1099))
        .expect("the client may move");
    send_on_stream(&mut net, handle);
    assert!(net.run_until(|e| e[0]
        .connection_ref(ConnectionHandle(0))
        .is_some_and(|c| c.stats().paths_validated == 1)));

    // The new server derives the reset token of whichever ID the client
    // now sends to from the same secret.
    restart_server(&mut net, Some(&secret));
    send_on_stream(&mut net, handle);
    assert!(net.run_until(|e| e[1].connection_ref(handle).is_some_and(|c| c.is_closed())));
    let client = net.endpoints[1].connection_ref(handle).unwrap();
    assert_eq!(client.close_reason(), Some(&CloseReason::StatelessReset));
}

/// A first client endpoint (port 1001) connected to `server` with a
/// config whose token store it shares with later clients; returns once the
/// server's address token is in the store.
fn first_client_with_a_token_store(
    server: Endpoint,
) -> (Net, TokenStore, Config, ConnectionHandle) {
    let store = TokenStore::new();
    let shared = Config {
        token_store: Some(store.clone()),
        ..config(2)
    };
    // One endpoint per connection, as the blocking API makes them.
    let mut first = Endpoint::new(addr(1001), None);
    let one = first
        .connect(shared.clone(), addr(SERVER), Instant::now())
        .unwrap();
    let mut net = Net::new(vec![server, first]);
    assert!(net.run_until(|e| established(&mut e[1], one) && !store.is_empty()));
    (net, store, shared, one)
}

#[test]
fn a_token_store_in_the_config_carries_tokens_across_client_endpoints() {
    let secret = ServerSecret::new(&[9; SERVER_SECRET_LEN]);
    let server = server_with_secret(&secret, RetryPolicy::Always);
    let (mut net, store, shared, one) = first_client_with_a_token_store(server);
    assert!(
        net.endpoints[1].tokens.is_empty(),
        "the token went to the shared store"
    );
    assert!(
        net.endpoints[1]
            .connection_ref(one)
            .unwrap()
            .stats()
            .retried
    );

    let mut second = Endpoint::new(addr(1002), None);
    let two = second.connect(shared, addr(SERVER), net.now).unwrap();
    assert!(store.is_empty(), "a token is used once");
    net.endpoints.push(second);
    assert!(net.run_until(|e| established(&mut e[2], two)));
    assert!(
        !net.endpoints[2]
            .connection_ref(two)
            .unwrap()
            .stats()
            .retried
    );
    let server = net.endpoints[0].stats();
    assert_eq!((server.retries_sent, server.validated_by_token), (1, 1));
}

#[test]
fn workers_share_out_the_connection_limit() {
    let loads = WorkerLoads::new(2, 3);
    let worker = |index| {
        Endpoint::new(
            addr(SERVER),
            Some(Config {
                cid_steering: crate::wire::CidSteering::new(index, 2, TEST_STEERING_KEY),
                ..config(1)
            }),
        )
        .with_max_connections(3)
        .with_worker_loads(Arc::clone(&loads))
    };
    assert_eq!(
        (worker(0).max_connections, worker(1).max_connections),
        (2, 1),
        "three connections over two workers"
    );
}

#[test]
fn a_worker_past_its_share_accepts_while_the_server_has_room() {
    // Limit 2 over two workers (one each). Worker 0 cannot move clients
    // (no server secret, so no Retry) and gets both; worker 1 is idle, so
    // the server has room for the second, and only a third is refused.
    let loads = WorkerLoads::new(2, 2);
    let server = Endpoint::new(
        addr(SERVER),
        Some(Config {
            cid_steering: crate::wire::CidSteering::new(0, 2, TEST_STEERING_KEY),
            ..config(1)
        }),
    )
    .with_max_connections(2)
    .with_worker_loads(Arc::clone(&loads));
    assert_eq!(server.max_connections, 1);
    let mut net = Net::new(vec![server]);
    for (n, seed) in [(1002u16, 2u64), (1003, 3)] {
        let mut client = Endpoint::new(addr(n), None);
        let handle = client.connect(config(seed), addr(SERVER), net.now).unwrap();
        net.endpoints.push(client);
        let at = net.endpoints.len() - 1;
        assert!(net.run_until(|e| established(&mut e[at], handle)));
    }
    assert_eq!(net.endpoints[0].stats().refused_busy, 0);
    assert_eq!(loads.serving(0), 2);
    let mut third = Endpoint::new(addr(1004), None);
    third.connect(config(4), addr(SERVER), net.now).unwrap();
    net.endpoints.push(third);
    assert!(net.run_until(|e| e[0].stats().refused_busy == 1));
}

#[test]
fn a_full_worker_refusing_a_client_still_counts_the_one_it_serves() {
    // Two workers with one connection each; worker 1 already serves its.
    let loads = WorkerLoads::new(2, 2);
    loads.publish(1, 1);
    let server = Endpoint::new(
        addr(SERVER),
        Some(Config {
            server_secret: Some(ServerSecret::new(&[9; SERVER_SECRET_LEN])),
            cid_steering: crate::wire::CidSteering::new(0, 2, TEST_STEERING_KEY),
            ..config(1)
        }),
    )
    .with_max_connections(2)
    .with_worker_loads(Arc::clone(&loads));
    let mut first = Endpoint::new(addr(1001), None);
    let one = first
        .connect(config(2), addr(SERVER), Instant::now())
        .unwrap();
    let mut net = Net::new(vec![server, first]);
    assert!(net.run_until(|e| established(&mut e[1], one)));
    assert_eq!(loads.serving(0), 1);
    // Nowhere has room: the next client is refused, busy.
    let mut second = Endpoint::new(addr(1002), None);
    second.connect(config(3), addr(SERVER), net.now).unwrap();
    net.endpoints.push(second);
    assert!(net.run_until(|e| e[0].stats().refused_busy == 1));
    assert_eq!(
        loads.serving(0),
        1,
        "the refused client is not counted, the served one is"
    );
}

#[test]
fn a_damaged_destination_id_still_reaches_the_one_connection_at_that_address() {
    let secret = ServerSecret::new(&[9; SERVER_SECRET_LEN]);
    let (mut net, handle) = connected_pair(&secret);
    send_on_stream(&mut net, handle);
    let mut buf = vec![0u8; 65_535];
    let (len, _) = net.endpoints[1].poll_transmit(net.now, &mut buf).unwrap();
    assert_eq!(buf[0] & 0x80, 0, "a 1-RTT packet");
    let mut damaged = buf[..len].to_vec();
    // A bit error in the destination ID (bytes 1..9 of a short header).
    damaged[3] ^= 0x10;
    let server = &mut net.endpoints[0];

    // The server's one connection with that client takes it, and rebuilds
    // the header (conn/repair.rs): the packet counts as received, where an
    // ID lookup alone would have answered a live client with a reset.
    let mut datagram = damaged.clone();
    assert_eq!(
        server.recv(&mut datagram, addr(1001), net.now),
        Some(ConnectionHandle(0))
    );
    let stats = server.connection_ref(ConnectionHandle(0)).unwrap().stats();
    assert_eq!(stats.damaged_headers_repaired, 1);
    assert_eq!(stats.header_corrupt_dropped, 0);
    assert_eq!(server.stats().dropped_unknown_connection, 0);
    assert_eq!(server.stats().stateless_resets_sent, 0);

    // From an address no connection has, it names an unknown connection.
    let mut datagram = damaged;
    assert_eq!(server.recv(&mut datagram, addr(1002), net.now), None);
    assert_eq!(server.stats().dropped_unknown_connection, 1);
}

#[test]
fn a_worker_resets_only_connection_ids_that_route_to_it() {
    // Worker 1 of 2. An unknown ID that routes to worker 0 came in a batch
    // the kernel steered by another connection's ID (GRO): its connection
    // may be alive at worker 0, so no reset ends it.
    let secret = ServerSecret::new(&[9; SERVER_SECRET_LEN]);
    let steering = crate::wire::CidSteering::new(1, 2, TEST_STEERING_KEY).unwrap();
    let mut worker = Endpoint::new(
        addr(SERVER),
        Some(Config {
            server_secret: Some(secret.clone()),
            cid_steering: Some(steering),
            ..config(1)
        }),
    );
    let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(21);
    let elsewhere = steering.for_worker(0).unwrap().draw(&mut rng);
    let here = steering.draw(&mut rng);
    let now = Instant::now();
    for (dcid, resets) in [(elsewhere, 0), (here, 1)] {
        // A short header naming the ID, then zeros (a packet that parses).
        let mut datagram = vec![0x40];
        datagram.extend_from_slice(dcid.as_slice());
        datagram.resize(60, 0);
        assert_eq!(worker.recv(&mut datagram, addr(1001), now), None);
        assert_eq!(worker.stats().stateless_resets_sent, resets);
    }
    assert_eq!(worker.stats().dropped_unknown_connection, 2);
    let mut buf = vec![0u8; 1500];
    let (len, to) = worker.poll_transmit(now, &mut buf).expect("the reset");
    let named = here;
    assert_eq!(to, addr(1001));
    assert!(buf[..len].ends_with(secret.reset_token(&named).as_bytes()));
    assert!(
        worker.poll_transmit(now, &mut buf).is_none(),
        "one reset only"
    );
}

/// Worker `index` of two, with the server secret, asking every new client
/// for a Retry.
fn retrying_worker(index: usize) -> Endpoint {
    Endpoint::new(
        addr(SERVER),
        Some(Config {
            server_secret: Some(ServerSecret::new(&[9; SERVER_SECRET_LEN])),
            retry: RetryPolicy::Always,
            cid_steering: crate::wire::CidSteering::new(index, 2, TEST_STEERING_KEY),
            ..config(1)
        }),
    )
}

/// `worker` answers a client's first Initial with a Retry at `now`; the
/// client's second Initial (with the token) is returned.
fn retried_initial(worker: &mut Endpoint, client_port: u16, now: Instant) -> Vec<u8> {
    let mut client = Endpoint::new(addr(client_port), None);
    client.connect(config(2), addr(SERVER), now).unwrap();
    let mut buf = vec![0u8; 2048];
    let (len, _) = client.poll_transmit(now, &mut buf).unwrap();
    assert_eq!(worker.recv(&mut buf[..len], addr(client_port), now), None);
    let (len, _) = worker.poll_transmit(now, &mut buf).expect("a Retry");
    client.recv(&mut buf[..len], addr(SERVER), now);
    let (len, _) = client.poll_transmit(now, &mut buf).unwrap();
    buf[..len].to_vec()
}

#[test]
fn workers_whose_token_clocks_started_apart_accept_each_others_retry_tokens() {
    // A worker that dated tokens from its own first `now` read another's
    // token as issued in the future (or long expired) and dropped the
    // client: seconds apart stalled clients, hours apart lost them.
    for apart in [Duration::from_secs(3), Duration::from_secs(2 * 3600)] {
        let t0 = Instant::now();
        let ledger = TokenLedger::new(TokenClock::new(t0, Duration::from_secs(1_700_000_000)));
        let mut busy = retrying_worker(0).with_token_ledger(ledger.clone());
        let mut light = retrying_worker(1).with_token_ledger(ledger);
        // The busy worker's first token operation is at t0...
        retried_initial(&mut busy, 2001, t0);
        // ...the light worker's is `apart` later, with a client the busy
        // worker sent its way.
        let later = t0 + apart;
        let mut initial = retried_initial(&mut busy, 2002, later);
        let handle = light.recv(&mut initial, addr(2002), later);
        assert!(handle.is_some(), "{apart:?} apart: the client is accepted");
        assert_eq!(light.stats().dropped_invalid_token, 0, "{apart:?} apart");
    }
}

#[test]
fn workers_each_on_a_clock_of_its_own_drop_each_others_clients() {
    // Why a server's workers must share one ledger: the skew, reproduced.
    let t0 = Instant::now();
    let mut busy = retrying_worker(0);
    let mut light = retrying_worker(1);
    retried_initial(&mut busy, 2001, t0);
    let later = t0 + Duration::from_secs(3);
    let mut initial = retried_initial(&mut busy, 2002, later);
    light.recv(&mut initial, addr(2002), later);
    assert_eq!(light.accept(), None, "the client is turned away");
    assert_eq!(light.stats().dropped_invalid_token, 1);
}

#[test]
fn an_address_token_is_accepted_once() {
    let (mut net, _) = client_holding_a_new_token();
    let token = net.endpoints[1].tokens.take(addr(SERVER)).unwrap();
    // Two connections from the client's IP address bring the same token:
    // the first skips the Retry, the replay does not.
    for port in [1002, 1003] {
        let mut again = Endpoint::new(addr(port), None);
        again.tokens.insert(addr(SERVER), token.clone());
        let handle = again
            .connect(config(u64::from(port)), addr(SERVER), net.now)
            .unwrap();
        net.endpoints.push(again);
        let index = net.endpoints.len() - 1;
        assert!(net.run_until(|e| established(&mut e[index], handle)));
    }
    let server = net.endpoints[0].stats();
    assert_eq!(server.validated_by_token, 1);
    assert_eq!(server.spent_address_tokens, 1);
    assert_eq!(server.retries_sent, 2, "the replay proved its address anew");
}

#[test]
fn a_shared_ledger_refuses_a_token_spent_at_another_worker() {
    let (mut net, _) = client_holding_a_new_token();
    let token = net.endpoints[1].tokens.take(addr(SERVER)).unwrap();
    let ledger = net.endpoints[0].token_ledger(net.now).clone();
    let mut other = server_with_secret(
        &ServerSecret::new(&[9; SERVER_SECRET_LEN]),
        RetryPolicy::Always,
    )
    .with_token_ledger(ledger);
    let now = net.now;
    // Spent at the first worker...
    let mut client = Endpoint::new(addr(1002), None);
    client.tokens.insert(addr(SERVER), token.clone());
    client.connect(config(4), addr(SERVER), now).unwrap();
    let mut buf = vec![0u8; 2048];
    let (len, _) = client.poll_transmit(now, &mut buf).unwrap();
    assert!(net.endpoints[0]
        .recv(&mut buf[..len], addr(1002), now)
        .is_some());
    // ...refused at the second.
    let mut thief = Endpoint::new(addr(1003), None);
    thief.tokens.insert(addr(SERVER), token);
    thief.connect(config(5), addr(SERVER), now).unwrap();
    let (len, _) = thief.poll_transmit(now, &mut buf).unwrap();
    assert_eq!(other.recv(&mut buf[..len], addr(1003), now), None);
    assert_eq!(other.stats().spent_address_tokens, 1);
    assert_eq!(other.stats().retries_sent, 1);
}

/// A server endpoint that asks every new client for a Retry and issues
/// session tickets (0-RTT on), and a client config of seed `seed` keeping
/// its tickets in `store`.
fn resuming_server_and_client(
    store: &crate::crypto::tls::TicketStore,
) -> (Endpoint, impl Fn(u64) -> Config + '_) {
    let cache = crate::crypto::tls::SessionCache::new(16, true);
    let server = Endpoint::new(
        addr(SERVER),
        Some(Config {
            server_secret: Some(ServerSecret::new(&[9; SERVER_SECRET_LEN])),
            retry: RetryPolicy::Always,
            tls: crate::crypto::TlsConfig {
                session_cache: Some(cache),
                ..process_loopback_config()
            },
            ..config(1)
        }),
    );
    let client = move |seed| Config {
        tls: crate::crypto::TlsConfig {
            tickets: Some(store.clone()),
            ..process_loopback_config()
        },
        ..config(seed)
    };
    (server, client)
}

#[test]
fn a_client_sent_a_retry_sends_its_zero_rtt_data_again_at_once() {
    // RFC 9002 §6.3 and RFC 9000 §17.2.5.3: what the 0-RTT packets carried
    // goes again, to the connection ID the Retry gave. Before, only the
    // Initial went again; the request waited until the server's first
    // ACKs showed the 0-RTT packets lost (about 1.7 s at 600 ms RTT).
    let store = crate::crypto::tls::TicketStore::new();
    let (server, client_config) = resuming_server_and_client(&store);
    let mut client = Endpoint::new(addr(1001), None);
    let first = client
        .connect(client_config(2), addr(SERVER), Instant::now())
        .unwrap();
    let mut net = Net::new(vec![server, client]);
    assert!(net.run_until(|e| established(&mut e[1], first) && !store.is_empty()));
    // Without its address token the next connection is sent a Retry too.
    net.endpoints[1].tokens.take(addr(SERVER)).unwrap();
    let now = net.now;
    let [server, client] = &mut net.endpoints[..] else {
        unreachable!()
    };
    let second = client.connect(client_config(3), addr(SERVER), now).unwrap();
    let connection = client.connection(second).unwrap();
    assert!(connection.early_data_possible(), "the ticket allows 0-RTT");
    let id = connection.stream_open_bi().unwrap();
    connection.mark_replay_safe(id);
    connection.stream_send(id, b"GET /a.bin", true).unwrap();

    // The first flight (Initial and 0-RTT) draws a Retry; the server keeps
    // no state, so the 0-RTT packets are dropped unread.
    let mut buf = vec![0u8; 65_535];
    while let Some((len, _)) = client.poll_transmit(now, &mut buf) {
        server.recv(&mut buf[..len], addr(1001), now);
    }
    let early_packets = client
        .connection_ref(second)
        .unwrap()
        .stats()
        .zero_rtt_packets;
    assert!(early_packets >= 1, "the request went in 0-RTT");
    let (len, _) = server.poll_transmit(now, &mut buf).expect("a Retry");
    client.recv(&mut buf[..len], addr(SERVER), now);
    assert_eq!(client.stats().retries_received, 2, "one per connection");

    // The client's next flight carries the request again, in 0-RTT, and
    // the server reads it before its handshake completes.
    while let Some((len, _)) = client.poll_transmit(now, &mut buf) {
        server.recv(&mut buf[..len], addr(1001), now);
    }
    let stats = client.connection_ref(second).unwrap().stats();
    assert!(
        stats.zero_rtt_packets > early_packets,
        "no 0-RTT packet after the Retry"
    );
    let accepted = std::iter::from_fn(|| server.accept())
        .last()
        .expect("the retried client is accepted");
    let served = server.connection(accepted).unwrap();
    assert!(!served.is_established());
    let readable = served.readable();
    let stream = *readable.first().expect("the request arrived in 0-RTT");
    let mut request = [0u8; 64];
    let (n, fin) = served.stream_recv(stream, &mut request).unwrap();
    assert_eq!((&request[..n], fin), (&b"GET /a.bin"[..], true));
    assert!(served.in_early_data());
}

#[test]
fn a_client_trace_labels_its_zero_rtt_packets_and_logs_the_retry() {
    // Before, 0-RTT packets were traced as `1RTT` and the Retry not at all.
    let dir = std::env::temp_dir().join(format!("sift-endpoint-retry-qlog-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let store = crate::crypto::tls::TicketStore::new();
    let (server, client_config) = resuming_server_and_client(&store);
    let mut client = Endpoint::new(addr(1001), None);
    let first = client
        .connect(client_config(2), addr(SERVER), Instant::now())
        .unwrap();
    let mut net = Net::new(vec![server, client]);
    assert!(net.run_until(|e| established(&mut e[1], first) && !store.is_empty()));
    net.endpoints[1].tokens.take(addr(SERVER)).unwrap();
    let traced = Config {
        trace: Some(crate::trace::TraceSink::qlog_dir(&dir)),
        ..client_config(3)
    };
    let second = net.endpoints[1]
        .connect(traced, addr(SERVER), net.now)
        .unwrap();
    let connection = net.endpoints[1].connection(second).unwrap();
    let id = connection.stream_open_bi().unwrap();
    connection.mark_replay_safe(id);
    connection.stream_send(id, b"GET /a.bin", true).unwrap();
    assert!(net.run_until(|e| established(&mut e[1], second)));
    let stats = net.endpoints[1].connection_ref(second).unwrap().stats();
    assert!(
        stats.zero_rtt_packets >= 2,
        "0-RTT before and after the Retry"
    );
    drop(net);

    let path = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.to_string_lossy().ends_with("-client.sqlog"))
        .expect("the client's trace");
    let events = crate::trace::read_trace(&path).unwrap();
    let of_type = |name: &str, ty: &str| {
        events
            .iter()
            .filter(|e| e.name == name && e.data["header"]["packet_type"] == ty)
            .count() as u64
    };
    assert_eq!(of_type("quic:packet_sent", "0RTT"), stats.zero_rtt_packets);
    assert_eq!(of_type("quic:packet_received", "retry"), 1);
    // RFC 9000 §17.2.5.3: the Retry resets no packet number space.
    for ty in ["initial", "0RTT"] {
        let numbers: Vec<u64> = events
            .iter()
            .filter(|e| e.name == "quic:packet_sent" && e.data["header"]["packet_type"] == ty)
            .filter_map(|e| e.data["header"]["packet_number"].as_u64())
            .collect();
        assert!(numbers.len() >= 2, "{ty}: {numbers:?}");
        assert!(numbers.windows(2).all(|w| w[0] < w[1]), "{ty}: {numbers:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The first Initial of a client at `port` bringing address token `token`.
fn initial_with_token(token: Vec<u8>, port: u16, now: Instant) -> Vec<u8> {
    let mut client = Endpoint::new(addr(port), None);
    client.tokens.insert(addr(SERVER), token);
    client
        .connect(config(u64::from(port)), addr(SERVER), now)
        .unwrap();
    let mut buf = vec![0u8; 65_535];
    let (len, _) = client.poll_transmit(now, &mut buf).unwrap();
    buf.truncate(len);
    buf
}

#[test]
fn a_client_back_with_an_address_token_is_served_by_the_worker_it_reached() {
    // Before, a worker serving more than another sent even a returning
    // client away with a balancing Retry: a round trip more, and its token
    // (spent before the Retry) lost, with its saved path state.
    let (mut net, _) = client_holding_a_new_token();
    let token = net.endpoints[1].tokens.take(addr(SERVER)).unwrap();
    let ledger = net.endpoints[0].token_ledger(net.now).clone();
    let loads = WorkerLoads::new(2, 64);
    loads.publish(0, 1);
    let mut busier = Endpoint::new(
        addr(SERVER),
        Some(Config {
            server_secret: Some(ServerSecret::new(&[9; SERVER_SECRET_LEN])),
            cid_steering: crate::wire::CidSteering::new(0, 2, TEST_STEERING_KEY),
            ..config(1)
        }),
    )
    .with_worker_loads(Arc::clone(&loads))
    .with_token_ledger(ledger);
    let now = net.now;
    let mut initial = initial_with_token(token, 1002, now);
    assert!(busier.recv(&mut initial, addr(1002), now).is_some());
    let stats = busier.stats();
    assert_eq!((stats.moved_to_other_worker, stats.retries_sent), (0, 0));
    assert_eq!(stats.validated_by_token, 1);
    // A client without a token is still sent to the lighter worker.
    let mut fresh = initial_datagram(ConnectionId::new(&[0x42; 8]).unwrap(), 1200);
    assert_eq!(busier.recv(&mut fresh, addr(1003), now), None);
    assert_eq!(busier.stats().moved_to_other_worker, 1);
}

#[test]
fn an_address_token_is_spent_only_by_a_connection_made_with_it() {
    // Before, a full server spent the token of a client it then refused:
    // back when the server had room, the client had to prove its address
    // again.
    let (mut net, _) = client_holding_a_new_token();
    let token = net.endpoints[1].tokens.take(addr(SERVER)).unwrap();
    let now = net.now;
    let server = &mut net.endpoints[0];
    server.max_connections = 1;
    let mut refused = initial_with_token(token.clone(), 1002, now);
    server.recv(&mut refused, addr(1002), now);
    assert_eq!(server.stats().refused_busy, 1);
    // Room again: the token validates the client's address.
    server
        .remove(ConnectionHandle(0))
        .expect("the first client");
    let mut back = initial_with_token(token, 1003, now);
    assert!(server.recv(&mut back, addr(1003), now).is_some());
    let stats = server.stats();
    assert_eq!(stats.spent_address_tokens, 0);
    assert_eq!(stats.validated_by_token, 1);
    assert_eq!(stats.retries_sent, 1, "only the first connection's Retry");
}

#[test]
fn a_qlog_directory_gets_no_file_for_clients_that_never_prove_their_address() {
    // Before, every client Initial opened a file, spoofed ones included:
    // a flood of them filled a disk.
    let dir = std::env::temp_dir().join(format!("sift-endpoint-qlog-flood-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let files = || std::fs::read_dir(&dir).unwrap().count();
    let mut server = Endpoint::new(
        addr(SERVER),
        Some(Config {
            trace: Some(crate::trace::TraceSink::qlog_dir(&dir)),
            ..config(1)
        }),
    );
    let now = Instant::now();
    for n in 1..=20u8 {
        let mut spoofed = initial_datagram(ConnectionId::new(&[n; 8]).unwrap(), 1200);
        assert!(server
            .recv(&mut spoofed, addr(3000 + u16::from(n)), now)
            .is_some());
    }
    let mut buf = vec![0u8; 65_535];
    while server.poll_transmit(now, &mut buf).is_some() {}
    assert_eq!(server.stats().connections_accepted, 20);
    assert_eq!(files(), 0);

    // A client that completes its handshake is traced.
    let mut client = Endpoint::new(addr(1001), None);
    let handle = client.connect(config(2), addr(SERVER), now).unwrap();
    let mut net = Net::new(vec![server, client]);
    net.now = now;
    assert!(net.run_until(|e| established(&mut e[1], handle)));
    drop(net);
    assert_eq!(files(), 1);
    let _ = std::fs::remove_dir_all(&dir);
}

mod rfc9000;
mod rfc9000_versions;
mod rfc9368;
mod rfc9369;

/// Bytes the server's connection to each of `clients` clients takes of a
/// 1 MB response right after the handshake, on a server with `budget`.
fn response_bytes_buffered(budget: Option<u64>, clients: u16) -> Vec<usize> {
    let server = Endpoint::new(addr(SERVER), Some(config(1))).with_send_budget(budget);
    let mut endpoints = vec![server];
    let mut handles = Vec::new();
    for i in 0..clients {
        let mut client = Endpoint::new(addr(1001 + i), None);
        handles.push(
            client
                .connect(config(10 + u64::from(i)), addr(SERVER), Instant::now())
                .unwrap(),
        );
        endpoints.push(client);
    }
    let mut net = Net::new(endpoints);
    assert!(net.run_until(|e| (0..handles.len()).all(|i| established(&mut e[i + 1], handles[i]))));
    let server = &mut net.endpoints[0];
    let response = vec![7u8; 1_000_000];
    server
        .handles()
        .collect::<Vec<_>>()
        .into_iter()
        .map(|handle| {
            let connection = server.connection(handle).unwrap();
            let stream = connection.stream_open_uni().unwrap();
            let mut taken = 0;
            while let Ok(n) = connection.stream_send(stream, &response[taken..], false) {
                if n == 0 {
                    break;
                }
                taken += n;
            }
            taken
        })
        .collect()
}

#[test]
fn a_send_budget_is_shared_among_the_connections() {
    // Without a budget each connection takes the whole response (its
    // 4 MiB floor); with 64 KiB shared by four, each takes three initial
    // windows, within the least share a connection is capped at.
    assert_eq!(response_bytes_buffered(None, 4), vec![1_000_000; 4]);
    let shared = response_bytes_buffered(Some(64 * 1024), 4);
    assert_eq!(shared.len(), 4);
    for taken in shared {
        assert!(
            (16 * 1024..=crate::stream::MIN_SEND_SHARE as usize).contains(&taken),
            "took {taken}"
        );
    }
    // 4 MiB among four: 1 MiB each, all of the response.
    assert_eq!(
        response_bytes_buffered(Some(4 << 20), 4),
        vec![1_000_000; 4]
    );
    // One connection alone keeps a floor of the whole budget.
    assert_eq!(response_bytes_buffered(Some(4 << 20), 1), vec![1_000_000]);
}

#[test]
fn a_look_at_the_deadlines_reads_only_the_connections_touched_since() {
    // Issue 58 asked whether the endpoint's timers cost in proportion to
    // its connections: 500 connections, one of them touched, and the next
    // deadline is found by reading that one's deadline and the heap's top,
    // not by asking all 500.
    let mut client = Endpoint::new(addr(1001), None);
    let now = Instant::now();
    let handles: Vec<ConnectionHandle> = (0..500)
        .map(|i| client.connect(config(100 + i), addr(SERVER), now).unwrap())
        .collect();
    let first = client.timeout(now);
    assert!(first.is_some());
    assert_eq!(
        client.timers.deadline_reads, 500,
        "each new connection once"
    );
    let mut buf = vec![0u8; 65_535];
    while client.poll_transmit(now, &mut buf).is_some() {}
    let before = client.timers.deadline_reads;
    assert_eq!(client.timeout(now), scanned_deadline(&client, now));
    let after_sends = client.timers.deadline_reads - before;
    assert!(after_sends <= 500, "the sends touched each connection once");
    // One connection touched: one deadline read.
    let before = client.timers.deadline_reads;
    client.connection(handles[250]).unwrap();
    assert_eq!(client.timeout(now), scanned_deadline(&client, now));
    assert_eq!(client.timers.deadline_reads - before, 1);
    // Nothing touched: none.
    let before = client.timers.deadline_reads;
    assert_eq!(client.timeout(now), scanned_deadline(&client, now));
    assert_eq!(client.timers.deadline_reads - before, 0);
}
