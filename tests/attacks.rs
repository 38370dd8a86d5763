//! Every attack SECURITY.md names, run by the simulator's attacker
//! (`sift::sim::attacker`) against sift endpoints on an addressed network
//! (`sift::sim::network`), with the census (`sift::sim::census`) of what
//! each endpoint sent to every address that had not proved it owns itself.
//! Each test asserts that no such address got more than three times what
//! arrived in its name (RFC 9000 §8), and whatever else the attack must not
//! achieve: no state beyond the bound SECURITY.md states, no connection
//! moved or read by someone else.
//!
//! The network: a server at 10.0.0.1:443, an honest client at 10.0.0.2,
//! the attacker at 10.0.0.66 and victims at 10.0.0.99 and up (hosts that
//! only receive), each 10 ms from the network (40 ms round trips). TLS
//! throughout, since Retry and address tokens need it; seeds fixed.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use sift::crypto::tls::process_loopback_config;
use sift::crypto::{ServerSecret, SERVER_SECRET_LEN};
use sift::endpoint::RetryPolicy;
use sift::sim::attacker::{craft, Attacker};
use sift::sim::census::{Census, AMPLIFICATION_LIMIT};
use sift::sim::network::{Datagram, EndpointNode, Network, NodeId, Sink};
use sift::sim::{Scenario, Simulation};
use sift::stream::{Dir, StreamId};
use sift::{Config, ConnectionHandle, Endpoint};

fn host(last: u8, port: u16) -> SocketAddr {
    SocketAddr::from(([10, 0, 0, last], port))
}

fn server_addr() -> SocketAddr {
    host(1, 443)
}

fn client_addr() -> SocketAddr {
    host(2, 5000)
}

fn attacker_addr() -> SocketAddr {
    host(66, 5000)
}

fn victim_addr() -> SocketAddr {
    host(99, 5000)
}

const SECRET: [u8; SERVER_SECRET_LEN] = [0x5e; SERVER_SECRET_LEN];

/// A client's config under TLS, its IDs from `seed`.
fn client_config(seed: u64) -> Config {
    Config {
        rng_seed: seed,
        tls: process_loopback_config(),
        ..Config::default()
    }
}

/// The server's config: TLS, a server secret (so Retry and address
/// tokens), `retry` as its policy.
fn server_config(retry: RetryPolicy) -> Config {
    Config {
        server_secret: Some(ServerSecret::new(&SECRET)),
        retry,
        ..client_config(1)
    }
}

/// The server's application: accepts every connection and answers each
/// request stream, once its request ended, with `size` bytes. Counts the
/// request bytes it read per connection.
#[derive(Clone, Default)]
struct Served {
    /// Request bytes read, per server connection.
    read: Rc<RefCell<BTreeMap<ConnectionHandle, usize>>>,
    /// Requests answered (responses started).
    answered: Rc<RefCell<usize>>,
}

fn serve(size: usize, served: Served) -> impl FnMut(&mut Endpoint, Instant) {
    let mut responses: Vec<(ConnectionHandle, StreamId, usize)> = Vec::new();
    let mut buf = vec![0u8; 16 * 1024];
    let chunk = vec![0x42u8; 16 * 1024];
    move |endpoint: &mut Endpoint, _now: Instant| {
        while endpoint.accept().is_some() {}
        let handles: Vec<ConnectionHandle> = endpoint.handles().collect();
        for handle in handles {
            let Some(connection) = endpoint.connection(handle) else {
                continue;
            };
            while connection.stream_accept(Dir::Bi).is_some() {}
            for stream in connection.readable() {
                while let Ok((len, fin)) = connection.stream_recv(stream, &mut buf) {
                    *served.read.borrow_mut().entry(handle).or_default() += len;
                    if fin {
                        responses.push((handle, stream, size));
                        *served.answered.borrow_mut() += 1;
                        break;
                    }
                    if len == 0 {
                        break;
                    }
                }
            }
        }
        responses.retain_mut(|(handle, stream, left)| {
            let Some(connection) = endpoint.connection(*handle) else {
                return false;
            };
            while *left > 0 {
                let take = (*left).min(chunk.len());
                match connection.stream_send(*stream, &chunk[..take], take == *left) {
                    Ok(0) | Err(_) => break,
                    Ok(written) => *left -= written,
                }
            }
            *left > 0
        });
    }
}

/// A server endpoint at [`server_addr`] serving `size` bytes per request.
fn server(retry: RetryPolicy, size: usize, served: Served) -> EndpointNode {
    let endpoint = Endpoint::new(server_addr(), Some(server_config(retry)));
    EndpointNode::new(endpoint).with_application(serve(size, served))
}

/// Opens a request stream on `handle` and sends `request` with FIN.
fn request(endpoint: &mut Endpoint, handle: ConnectionHandle, request: &[u8]) -> StreamId {
    let connection = endpoint.connection(handle).expect("the connection is open");
    let stream = connection.stream_open_bi().expect("a stream");
    connection
        .stream_send(stream, request, true)
        .expect("the request fits");
    stream
}

/// Reads what has arrived on `stream`; returns (bytes, whether it ended).
fn read(endpoint: &mut Endpoint, handle: ConnectionHandle, stream: StreamId) -> (usize, bool) {
    let Some(connection) = endpoint.connection(handle) else {
        return (0, false);
    };
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0;
    loop {
        match connection.stream_recv(stream, &mut buf) {
            Ok((0, fin)) => return (total, fin),
            Ok((len, fin)) => {
                total += len;
                if fin {
                    return (total, true);
                }
            }
            Err(_) => return (total, false),
        }
    }
}

fn established(endpoint: &mut Endpoint, handle: ConnectionHandle) -> bool {
    endpoint
        .connection_ref(handle)
        .is_some_and(|c| c.is_established())
}

/// The attacker's own connection, past its handshake and confirmed at the
/// server (which follows a client that moves only then).
fn attacker_connected(
    net: &mut Network,
    attacker: NodeId<Attacker>,
    seed: u64,
) -> ConnectionHandle {
    let now = net.now();
    let handle = net
        .node(attacker)
        .endpoint()
        .connect(client_config(seed), server_addr(), now)
        .expect("the attacker connects");
    let deadline = now + Duration::from_secs(5);
    let done = net
        .run_until(deadline, |net| {
            established(net.node(attacker).endpoint(), handle)
        })
        .expect("the run goes on");
    assert!(done, "the attacker's handshake completed");
    // HANDSHAKE_DONE and the ACKs that confirm it.
    net.run_for(Duration::from_millis(200))
        .expect("the run goes on");
    handle
}

/// Fails with the census table when an address that never proved itself
/// got more than three times what arrived in its name.
#[track_caller]
fn assert_census_within_limit(census: &Census) -> f64 {
    let worst = census.worst_ratio();
    assert!(
        worst <= AMPLIFICATION_LIMIT,
        "an unproved address got {worst:.2}x what arrived in its name:\n{census}"
    );
    println!("worst ratio {worst:.2}\n{census}");
    worst
}

// ---------------------------------------------------------------------------
// The honest baseline: a download, measured by the same census.

#[test]
fn an_honest_download_gives_no_address_more_than_three_times_before_it_proves_itself() {
    let mut net = Network::new(Instant::now());
    let served = Served::default();
    net.add_endpoint(server(RetryPolicy::Never, 300_000, served));
    let client = net.add_endpoint(EndpointNode::new(Endpoint::new(client_addr(), None)));
    let now = net.now();
    let endpoint = net.node(client).endpoint();
    let handle = endpoint
        .connect(client_config(2), server_addr(), now)
        .unwrap();
    let stream = request(endpoint, handle, b"GET /");
    let mut got = 0;
    let done = net
        .run_until(now + Duration::from_secs(10), |net| {
            let (len, fin) = read(net.node(client).endpoint(), handle, stream);
            got += len;
            fin
        })
        .unwrap();
    assert!(done, "the download completed");
    assert_eq!(got, 300_000);
    let census = net.census();
    let client_record = census.get(server_addr(), client_addr()).unwrap();
    assert!(client_record.proved(), "the client proved its address");
    assert_census_within_limit(census);
}

/// A network holding a server (retrying by `retry`, answering requests
/// with `size` bytes), the attacker and a victim at [`victim_addr`].
fn attack_network(
    retry: RetryPolicy,
    size: usize,
) -> (
    Network,
    NodeId<EndpointNode>,
    NodeId<Attacker>,
    NodeId<Sink>,
) {
    let mut net = Network::new(Instant::now());
    let server = net.add_endpoint(server(retry, size, Served::default()));
    let attacker = net.add(Attacker::new(attacker_addr()), &[attacker_addr()]);
    let victim = net.add(Sink::default(), &[victim_addr()]);
    (net, server, attacker, victim)
}

/// The `n`th of many spoofed source addresses (10.0.1.0 and up): hosts
/// that do not exist, or victims that only receive.
fn spoofed(n: u64) -> SocketAddr {
    let [_, _, c, d] = (n as u32).to_be_bytes();
    SocketAddr::from(([10, 1, c, d], 7000))
}

/// A genuine client's first datagram (ClientHello, 1200 bytes) as if from
/// `from`, carrying `token` if given.
fn initial_from(from: SocketAddr, seed: u64, token: Option<Vec<u8>>, now: Instant) -> Datagram {
    let bytes = craft::client_initial(client_config(seed), from, server_addr(), token, now)
        .expect("a client makes its first Initial");
    Datagram {
        from,
        to: server_addr(),
        bytes,
    }
}

/// Runs `net` for `duration` and returns the most connections `server`
/// held at any moment.
fn run_watching_state(
    net: &mut Network,
    server: NodeId<EndpointNode>,
    duration: Duration,
) -> usize {
    let deadline = net.now() + duration;
    let mut most = 0;
    net.run_until(deadline, |net| {
        most = most.max(net.node(server).endpoint().len());
        false
    })
    .unwrap();
    most
}

// ---------------------------------------------------------------------------
// Address validation and Retry (SECURITY.md).

#[test]
fn a_spoofed_initial_draws_at_most_three_times_its_size_however_often_the_handshake_times_out() {
    // One genuine ClientHello in the victim's name. The server answers
    // and resends its flight until the handshake times out (10 s); all of
    // it goes to the victim, which never asked.
    let (mut net, server, attacker, victim) = attack_network(RetryPolicy::Never, 0);
    let now = net.now();
    let initial = initial_from(victim_addr(), 9, None, now);
    net.node(attacker).send(initial);
    net.run_for(Duration::from_secs(12)).unwrap();
    assert!(net.node(victim).bytes > 0, "the server answered");
    let stats = net.node(server).endpoint().stats().clone();
    assert_eq!(stats.handshakes_timed_out, 1);
    assert_eq!(
        net.node(server).endpoint().len(),
        0,
        "the half-open connection is forgotten"
    );
    assert_census_within_limit(net.census());
}

#[test]
fn a_flood_of_spoofed_initials_is_held_to_three_times_and_to_the_half_open_limit() {
    // 400 ClientHellos, one a millisecond, each in another address's name.
    // The server keeps state for at most 64 half-open handshakes
    // (`RetryPolicy::WhenBusy`), answers the rest with one small Retry
    // each, and forgets the half-open ones after 10 s.
    let (mut net, server, attacker, _) = attack_network(RetryPolicy::default(), 0);
    let start = net.now();
    net.node(attacker)
        .flood(start, Duration::from_millis(1), 400, move |n| {
            Some(initial_from(spoofed(n), 1000 + n, None, start))
        });
    let most = run_watching_state(&mut net, server, Duration::from_secs(12));
    let stats = net.node(server).endpoint().stats().clone();
    println!("most half-open connections held: {most}; {stats:?}");
    assert!(
        most <= sift::endpoint::DEFAULT_RETRY_HALF_OPEN,
        "held {most}"
    );
    assert!(stats.retries_sent >= 300, "{stats:?}");
    assert_eq!(net.node(server).endpoint().len(), 0, "all forgotten");
    assert_census_within_limit(net.census());
}

#[test]
fn initials_with_forged_or_borrowed_tokens_validate_no_address() {
    // The attacker holds a genuine NEW_TOKEN token, bound to its own IP
    // address, carrying the path state its download saved. It sends
    // Initials in other addresses' names with that token, with it damaged,
    // and with a token the server never made. Each counts as no token
    // (RFC 9000 §8.1.3): no address is validated by it, no Careful Resume
    // jump, the 3x limit holds. From its own address the token is
    // accepted once (RFC 9000 §8.1.4) and a replay of it counts as none.
    let (mut net, server, attacker, _) = attack_network(RetryPolicy::Never, 400_000);
    let tokens = sift::endpoint::TokenStore::new();
    let now = net.now();
    let config = Config {
        token_store: Some(tokens.clone()),
        ..client_config(3)
    };
    let endpoint = net.node(attacker).endpoint();
    let own = endpoint.connect(config, server_addr(), now).unwrap();
    let stream = request(endpoint, own, b"GET /");
    let mut got = 0;
    assert!(net
        .run_until(now + Duration::from_secs(10), |net| {
            got += read(net.node(attacker).endpoint(), own, stream).0;
            got == 400_000
        })
        .unwrap());
    net.run_for(Duration::from_millis(500)).unwrap();
    let token = tokens.take(server_addr()).expect("the server sent a token");
    let saved = net.node(server).endpoint().stats().path_states_saved;
    assert!(saved > 0, "the download saved a path state");

    let start = net.now();
    let mut damaged = token.clone();
    let middle = damaged.len() / 2;
    damaged[middle] ^= 0x20;
    let borrowed = token.clone();
    net.node(attacker)
        .flood(start, Duration::from_millis(2), 90, move |n| {
            let token = match n % 3 {
                0 => borrowed.clone(),
                1 => damaged.clone(),
                _ => vec![0x5a; 80],
            };
            Some(initial_from(spoofed(n), 2000 + n, Some(token), start))
        });
    net.run_for(Duration::from_secs(1)).unwrap();
    let stats = net.node(server).endpoint().stats().clone();
    assert_eq!(stats.validated_by_token, 0, "{stats:?}");
    assert_eq!(stats.careful_resumes, 0);

    // From its own address: once.
    let now = net.now();
    for seed in [4, 5] {
        let initial = initial_from(attacker_addr(), seed, Some(token.clone()), now);
        net.node(attacker).send(initial);
        net.run_for(Duration::from_millis(100)).unwrap();
    }
    let stats = net.node(server).endpoint().stats().clone();
    assert_eq!(stats.validated_by_token, 1, "{stats:?}");
    assert_eq!(stats.spent_address_tokens, 1);
    net.run_for(Duration::from_secs(12)).unwrap();
    assert_census_within_limit(net.census());
}

#[test]
fn a_captured_retry_token_replayed_from_elsewhere_or_late_validates_nothing() {
    // A server that asks every client for a Retry. The attacker sits on
    // the honest client's link and keeps its Initial that echoes the Retry
    // token, then sends it again once the client is gone: in the victim's
    // name within the token's 10 s (the server asks that address for a
    // Retry of its own), and from the client's own address after 10 s
    // (refused without an answer).
    let (mut net, server, attacker, victim) = attack_network(RetryPolicy::Always, 0);
    let client = net.add_endpoint(EndpointNode::new(Endpoint::new(client_addr(), None)));
    net.tap(attacker, client_addr());
    let now = net.now();
    let handle = net
        .node(client)
        .endpoint()
        .connect(client_config(2), server_addr(), now)
        .unwrap();
    assert!(net
        .run_until(now + Duration::from_secs(2), |net| {
            established(net.node(client).endpoint(), handle)
        })
        .unwrap());
    let echoed = net
        .node(attacker)
        .captured()
        .iter()
        .find(|c| {
            c.datagram.from == client_addr()
                && sift::sim::attacker::initial_token(&c.datagram.bytes)
                    .is_some_and(|token| !token.is_empty())
        })
        .map(|c| c.datagram.clone())
        .expect("the client echoed the Retry token");
    net.node(client)
        .endpoint()
        .connection(handle)
        .unwrap()
        .close(0, "done");
    net.run_for(Duration::from_secs(2)).unwrap();
    assert_eq!(net.node(server).endpoint().len(), 0, "the client is gone");

    let retries_before = net.node(server).endpoint().stats().retries_sent;
    for _ in 0..3 {
        net.node(attacker).send(Datagram {
            from: victim_addr(),
            ..echoed.clone()
        });
        net.run_for(Duration::from_millis(100)).unwrap();
    }
    let stats = net.node(server).endpoint().stats().clone();
    assert_eq!(stats.retries_sent, retries_before + 3, "{stats:?}");
    assert_eq!(
        stats.connections_accepted, 1,
        "no connection for the replays"
    );
    assert!(net.node(victim).bytes > 0);

    net.run_for(Duration::from_secs(9)).unwrap();
    net.node(attacker).send(echoed);
    net.run_for(Duration::from_millis(100)).unwrap();
    let stats = net.node(server).endpoint().stats().clone();
    assert_eq!(stats.dropped_invalid_token, 1, "{stats:?}");
    assert_eq!(stats.connections_accepted, 1);
    assert_census_within_limit(net.census());
}

#[test]
fn a_full_server_answers_a_flood_with_bounded_refusals() {
    // A server that holds two connections and never asks for Retry. Two
    // spoofed ClientHellos fill it; 300 more in 100 ms each get at most a
    // small CONNECTION_REFUSED, at most 64 held at once, the rest dropped.
    let mut net = Network::new(Instant::now());
    let endpoint = Endpoint::new(server_addr(), Some(server_config(RetryPolicy::Never)))
        .with_max_connections(2);
    let server =
        net.add_endpoint(EndpointNode::new(endpoint).with_application(serve(0, Served::default())));
    let attacker = net.add(Attacker::new(attacker_addr()), &[attacker_addr()]);
    let start = net.now();
    net.node(attacker)
        .flood(start, Duration::from_micros(333), 302, move |n| {
            Some(initial_from(spoofed(n), 3000 + n, None, start))
        });
    let most = run_watching_state(&mut net, server, Duration::from_millis(200));
    let stats = net.node(server).endpoint().stats().clone();
    println!("{stats:?}");
    assert!(most <= 2);
    assert!(
        stats.refused_busy <= sift::endpoint::MAX_REFUSING as u64,
        "{stats:?}"
    );
    assert!(stats.dropped_connection_limit > 0, "{stats:?}");
    net.run_for(Duration::from_secs(12)).unwrap();
    assert_census_within_limit(net.census());
}

// ---------------------------------------------------------------------------
// What the endpoint answers without a connection.

#[test]
fn version_negotiation_triggers_draw_small_answers_at_a_bounded_rate() {
    // 1000 first datagrams of a version nobody speaks in a second, in the
    // victim's name, and as many one byte short of 1200. Only full-size
    // ones are answered, at most 100 a second, each answer smaller than
    // its trigger; the server keeps no state for any.
    let (mut net, server, attacker, victim) = attack_network(RetryPolicy::default(), 0);
    let start = net.now();
    let from = victim_addr();
    net.node(attacker)
        .flood(start, Duration::from_millis(1), 2000, move |n| {
            let len = if n % 2 == 0 { 1200 } else { 1199 };
            let dcid = n.to_be_bytes();
            Some(Datagram {
                from,
                to: server_addr(),
                bytes: craft::unknown_version_initial(0x1a2a_3a4a, &dcid, &[7; 8], len),
            })
        });
    let most = run_watching_state(&mut net, server, Duration::from_millis(2500));
    let sent = net
        .node(server)
        .endpoint()
        .stats()
        .version_negotiations_sent;
    println!("version negotiations sent: {sent}");
    assert_eq!(most, 0, "no state for another version");
    assert!(sent > 0);
    assert!(
        sent <= 3 * u64::from(sift::endpoint::MAX_STATELESS_PER_SECOND),
        "{sent}"
    );
    assert!(net.node(victim).largest < 1200);
    assert_census_within_limit(net.census());
}

#[test]
fn packets_for_unknown_connections_draw_shorter_resets_at_a_bounded_rate() {
    // 1000 short-header datagrams in a second for connection IDs the
    // server never issued, in the victim's name: stateless resets, each
    // shorter than its trigger (so two endpoints cannot loop), at most 100
    // a second.
    let (mut net, server, attacker, victim) = attack_network(RetryPolicy::default(), 0);
    let start = net.now();
    let from = victim_addr();
    net.node(attacker)
        .flood(start, Duration::from_millis(1), 1000, move |n| {
            Some(Datagram {
                from,
                to: server_addr(),
                bytes: craft::short_header(n.to_be_bytes(), 60, 0x33),
            })
        });
    net.run_for(Duration::from_millis(1500)).unwrap();
    let resets = net.node(server).endpoint().stats().stateless_resets_sent;
    println!("stateless resets sent: {resets}");
    assert!(resets > 0);
    assert!(
        resets <= 2 * u64::from(sift::endpoint::MAX_STATELESS_PER_SECOND),
        "{resets}"
    );
    assert!(net.node(victim).largest < 60);
    assert_census_within_limit(net.census());
}

#[test]
fn a_forged_version_negotiation_cannot_move_a_client_to_another_version() {
    // An attacker on the client's link sees its first Initial and answers
    // first, in the server's name: a Version Negotiation listing the
    // version the client sent is ignored (the handshake completes in the
    // version both ends chose); one listing only a version the client does
    // not speak ends the connection, never moves it to another version
    // (RFC 9368 §4, SECURITY.md "The version upgrade").
    for (seed, offered, completes) in [
        (2u64, vec![sift::wire::QUIC_V1, 0x0a0a_0a0a], true),
        (3u64, vec![0x1a2a_3a4a], false),
    ] {
        let (mut net, _, attacker, _) = attack_network(RetryPolicy::Never, 0);
        let client = net
            .add_endpoint(EndpointNode::new(Endpoint::new(client_addr(), None)).keeping_closed());
        net.tap(attacker, client_addr());
        let now = net.now();
        let handle = net
            .node(client)
            .endpoint()
            .connect(client_config(seed), server_addr(), now)
            .unwrap();
        net.run_for(Duration::from_millis(1)).unwrap();
        let first = net
            .node(attacker)
            .captured()
            .first()
            .expect("the client's Initial")
            .datagram
            .bytes
            .clone();
        let header = sift::wire::parse_long_invariant(&first).unwrap();
        let mut forged = Vec::new();
        sift::wire::encode_version_negotiation(
            &mut forged,
            0x2a,
            header.dcid,
            header.scid,
            &offered,
        )
        .unwrap();
        net.node(attacker).send(Datagram {
            from: server_addr(),
            to: client_addr(),
            bytes: forged,
        });
        net.run_for(Duration::from_secs(2)).unwrap();
        let connection = net.node(client).endpoint().connection_ref(handle).unwrap();
        assert_eq!(connection.is_established(), completes, "{offered:x?}");
        if completes {
            assert_eq!(
                connection.version(),
                sift::wire::VERSION,
                "the upgrade held"
            );
        } else {
            assert!(matches!(
                connection.close_reason(),
                Some(sift::conn::CloseReason::VersionMismatch { .. })
            ));
        }
        assert_census_within_limit(net.census());
    }
}

#[test]
fn resets_forged_without_the_token_or_from_another_address_end_nothing() {
    // An attacker that cannot see the server's reset tokens sends a client
    // short datagrams in the server's name and from its own address while
    // the client downloads: none ends the connection.
    let (mut net, server, attacker, _) = attack_network(RetryPolicy::Never, 300_000);
    let client = net.add_endpoint(EndpointNode::new(Endpoint::new(client_addr(), None)));
    let now = net.now();
    let endpoint = net.node(client).endpoint();
    let handle = endpoint
        .connect(client_config(2), server_addr(), now)
        .unwrap();
    let stream = request(endpoint, handle, b"GET /");
    net.node(attacker)
        .flood(now, Duration::from_millis(5), 400, move |n| {
            let from = if n % 2 == 0 {
                server_addr()
            } else {
                attacker_addr()
            };
            Some(Datagram {
                from,
                to: client_addr(),
                bytes: craft::short_header(n.to_be_bytes(), 40 + (n % 20) as usize, n as u8),
            })
        });
    let mut got = 0;
    assert!(net
        .run_until(now + Duration::from_secs(10), |net| {
            let (len, fin) = read(net.node(client).endpoint(), handle, stream);
            got += len;
            fin
        })
        .unwrap());
    assert_eq!(got, 300_000);
    assert_eq!(
        net.node(client)
            .endpoint()
            .stats()
            .stateless_resets_received,
        0
    );
    let _ = server;
    assert_census_within_limit(net.census());
}

// ---------------------------------------------------------------------------
// Connection migration (SECURITY.md).

/// An honest client downloading `size` bytes, its link tapped by the
/// attacker; returns the client, its connection and the request stream.
fn tapped_download(
    net: &mut Network,
    attacker: NodeId<Attacker>,
    size_label: &[u8],
) -> (NodeId<EndpointNode>, ConnectionHandle, StreamId) {
    let client = net.add_endpoint(EndpointNode::new(Endpoint::new(client_addr(), None)));
    net.tap(attacker, client_addr());
    let now = net.now();
    let endpoint = net.node(client).endpoint();
    let handle = endpoint
        .connect(client_config(2), server_addr(), now)
        .unwrap();
    let stream = request(endpoint, handle, size_label);
    (client, handle, stream)
}

/// Runs until the download on `stream` ends; returns its bytes.
fn finish_download(
    net: &mut Network,
    client: NodeId<EndpointNode>,
    handle: ConnectionHandle,
    stream: StreamId,
    within: Duration,
) -> usize {
    let mut got = 0;
    let deadline = net.now() + within;
    let done = net
        .run_until(deadline, |net| {
            let (len, fin) = read(net.node(client).endpoint(), handle, stream);
            got += len;
            fin
        })
        .unwrap();
    assert!(done, "the download ended ({got} bytes so far)");
    got
}

/// The short-header datagrams the client sent that the attacker saw.
fn captured_short_headers(net: &mut Network, attacker: NodeId<Attacker>) -> Vec<Datagram> {
    net.node(attacker)
        .captured()
        .iter()
        .filter(|c| c.datagram.from == client_addr() && c.datagram.bytes[0] & 0x80 == 0)
        .map(|c| c.datagram.clone())
        .collect()
}

#[test]
fn a_replayed_packet_in_a_victims_name_moves_nothing() {
    // The attacker copies the client's 1-RTT datagrams off its link and
    // sends each again, late, in the victim's name: an old packet number
    // never moves a connection (SECURITY.md "Connection migration").
    let (mut net, server, attacker, victim) = attack_network(RetryPolicy::Never, 2_000_000);
    let (client, handle, stream) = tapped_download(&mut net, attacker, b"GET /");
    net.run_for(Duration::from_millis(300)).unwrap();
    for datagram in captured_short_headers(&mut net, attacker)
        .into_iter()
        .take(50)
    {
        net.node(attacker).send(Datagram {
            from: victim_addr(),
            ..datagram
        });
    }
    let got = finish_download(&mut net, client, handle, stream, Duration::from_secs(20));
    assert_eq!(got, 2_000_000);
    let server_endpoint = net.node(server).endpoint();
    let handle0 = server_endpoint.handles().next().unwrap();
    let connection = server_endpoint.connection_ref(handle0).unwrap();
    assert_eq!(connection.remote(), client_addr());
    assert_eq!(connection.stats().peer_migrations, 0);
    assert!(net.node(victim).datagrams <= 50);
    assert_census_within_limit(net.census());
}

#[test]
fn an_on_path_attacker_rewriting_sources_gets_three_times_and_the_server_returns() {
    // For 100 ms the attacker rewrites the source of every datagram the
    // client sends to the victim's address: genuine, newest packets, so
    // the server moves there. Until the victim echoes its challenge (it
    // never does) the server sends it at most three times what came in
    // its name, no path MTU probe among them; when the client's own
    // packets come again the server follows them back and the download
    // completes.
    let (mut net, server, attacker, victim) = attack_network(RetryPolicy::Never, 3_000_000);
    let (client, handle, stream) = tapped_download(&mut net, attacker, b"GET /");
    net.run_for(Duration::from_millis(150)).unwrap();
    net.node(attacker).intercept(|datagram| {
        if datagram.from == client_addr() {
            sift::sim::attacker::Interception::Replace(Datagram {
                from: victim_addr(),
                ..datagram.clone()
            })
        } else {
            sift::sim::attacker::Interception::Pass
        }
    });
    net.run_for(Duration::from_millis(100)).unwrap();
    net.node(attacker).stop_intercepting();
    let got = finish_download(&mut net, client, handle, stream, Duration::from_secs(30));
    assert_eq!(got, 3_000_000);
    let server_endpoint = net.node(server).endpoint();
    let handle0 = server_endpoint.handles().next().unwrap();
    let connection = server_endpoint.connection_ref(handle0).unwrap();
    println!("{:?}", connection.stats());
    assert_eq!(connection.remote(), client_addr());
    assert!(connection.stats().peer_migrations >= 1);
    assert!(net.node(victim).bytes > 0, "the server did move");
    assert!(
        net.node(victim).largest <= 1200,
        "no MTU probe to the victim"
    );
    assert_census_within_limit(net.census());
}

/// The forged move below, run to its end: the network and its nodes.
fn forged_move() -> (Network, NodeId<EndpointNode>, NodeId<Sink>) {
    let (mut net, server, attacker, victim) = attack_network(RetryPolicy::Never, 10_000_000);
    let handle = attacker_connected(&mut net, attacker, 7);
    request(net.node(attacker).endpoint(), handle, b"GET /");
    net.run_for(Duration::from_millis(200)).unwrap();
    let now = net.now();
    net.node(attacker)
        .forge(handle, &craft::padded_ping(1150), victim_addr(), now)
        .expect("1-RTT keys");
    net.node(attacker).allow_endpoint_datagrams(Some(0));
    net.run_for(Duration::from_secs(3)).unwrap();
    net.node(attacker).allow_endpoint_datagrams(None);
    net.run_for(Duration::from_secs(1)).unwrap();
    (net, server, victim)
}

#[test]
fn a_forged_move_to_a_victim_is_held_to_three_times_until_the_server_gives_up() {
    // The attacker downloads on its own connection, then seals a 1200-byte
    // PING with its keys and sends it in the victim's name: a genuine,
    // newest packet that is not a probe, so the server moves there. The
    // attacker then keeps quiet for 3 s. The victim gets at most three
    // times the PING (no MTU probe), and once its challenge goes
    // unanswered the server returns to the attacker's validated address
    // (RFC 9000 §9.3.3).
    let (mut net, server, victim) = forged_move();
    let server_endpoint = net.node(server).endpoint();
    let handle0 = server_endpoint.handles().next().unwrap();
    let connection = server_endpoint.connection_ref(handle0).unwrap();
    let stats = connection.stats();
    assert!(stats.peer_migrations >= 1, "the server moved");
    assert!(stats.paths_abandoned >= 1, "and gave the victim up");
    assert_eq!(connection.remote(), attacker_addr());
    assert!(net.node(victim).bytes > 0);
    assert!(
        net.node(victim).largest <= 1200,
        "no MTU probe to the victim"
    );
    assert_census_within_limit(net.census());
}

#[test]
fn the_same_attack_run_twice_gives_the_same_census() {
    // The network, the attacker and the endpoints read no clock and no
    // unseeded randomness: a run repeats, and so does its census.
    let first = forged_move().0.census().to_string();
    let second = forged_move().0.census().to_string();
    assert_eq!(first, second);
}

#[test]
fn connection_ids_beyond_the_limit_or_retired_unissued_close_the_attackers_connection() {
    // With its own keys the attacker issues more connection IDs than the
    // server takes, on one connection, and retires an ID never issued on
    // another: each is closed (CONNECTION_ID_LIMIT_ERROR,
    // PROTOCOL_VIOLATION) and the server forgets it.
    let (mut net, server, attacker, _) = attack_network(RetryPolicy::Never, 0);
    let cases: [(u64, Vec<u8>, u64); 2] = [
        (
            7,
            new_connection_ids(8),
            sift::conn::codes::CONNECTION_ID_LIMIT_ERROR,
        ),
        (
            8,
            retire_connection_id(1000),
            sift::conn::codes::PROTOCOL_VIOLATION,
        ),
    ];
    for (seed, frames, code) in cases {
        let handle = attacker_connected(&mut net, attacker, seed);
        let now = net.now();
        net.node(attacker)
            .forge(handle, &frames, attacker_addr(), now)
            .expect("1-RTT keys");
        net.run_for(Duration::from_secs(3)).unwrap();
        let connection = net
            .node(attacker)
            .endpoint()
            .connection_ref(handle)
            .unwrap();
        match connection.close_reason() {
            Some(sift::conn::CloseReason::Peer {
                application: false,
                code: got,
                ..
            }) => assert_eq!(*got, code),
            other => panic!("closed by {other:?}, not by the server with {code:#x}"),
        }
    }
    assert_eq!(
        net.node(server).endpoint().len(),
        0,
        "the server forgot both"
    );
    assert_census_within_limit(net.census());
}

/// `count` NEW_CONNECTION_ID frames.
fn new_connection_ids(count: u64) -> Vec<u8> {
    let mut frames = Vec::new();
    // Far above the sequence numbers the attacker's own endpoint issued.
    for sequence in 100..100 + count {
        sift::wire::Frame::NewConnectionId {
            sequence,
            retire_prior_to: 0,
            cid: sift::wire::ConnectionId::new(&[sequence as u8 + 0x40; 8]).unwrap(),
            reset_token: [sequence as u8; sift::wire::RESET_TOKEN_LEN],
        }
        .encode(&mut frames);
    }
    frames
}

/// A RETIRE_CONNECTION_ID frame naming `sequence`.
fn retire_connection_id(sequence: u64) -> Vec<u8> {
    let mut frames = Vec::new();
    sift::wire::Frame::RetireConnectionId { sequence }.encode(&mut frames);
    frames
}

// ---------------------------------------------------------------------------
// What TLS covers (SECURITY.md): replays.

#[test]
fn a_captured_packet_replayed_with_a_bit_flipped_does_not_keep_a_connection_alive() {
    // The client vanishes (the attacker drops everything it sends); the
    // attacker keeps replaying one of its captured 1-RTT datagrams with a
    // payload bit flipped, from its address, every 300 ms. Only
    // authenticated packets restart the idle timer, so the server still
    // closes the connection at its idle timeout and forgets it.
    let mut net = Network::new(Instant::now());
    let config = Config {
        idle_timeout: Duration::from_secs(2),
        ..server_config(RetryPolicy::Never)
    };
    let server = net.add_endpoint(
        EndpointNode::new(Endpoint::new(server_addr(), Some(config)))
            .with_application(serve(50_000, Served::default())),
    );
    let attacker = net.add(Attacker::new(attacker_addr()), &[attacker_addr()]);
    let (client, handle, stream) = tapped_download(&mut net, attacker, b"GET /");
    finish_download(&mut net, client, handle, stream, Duration::from_secs(5));
    let mut replayed = captured_short_headers(&mut net, attacker)
        .pop()
        .expect("a 1-RTT datagram");
    let last = replayed.bytes.len() - 1;
    replayed.bytes[last] ^= 0x01;
    net.node(attacker).intercept(|datagram| {
        if datagram.from == client_addr() {
            sift::sim::attacker::Interception::Drop
        } else {
            sift::sim::attacker::Interception::Pass
        }
    });
    let start = net.now();
    net.node(attacker)
        .flood(start, Duration::from_millis(300), 40, move |_| {
            Some(replayed.clone())
        });
    net.run_for(Duration::from_secs(8)).unwrap();
    assert_eq!(
        net.node(server).endpoint().len(),
        0,
        "the replays kept the connection alive"
    );
    assert_census_within_limit(net.census());
}

#[test]
fn a_client_hello_that_never_ends_holds_a_bounded_buffer_for_a_bounded_time() {
    // sift/1 Initials whose CRYPTO data starts 2000 bytes in, so the
    // ClientHello the server waits for never becomes whole, in the
    // victim's name. The server holds at most 64 KiB of it (SECURITY.md
    // "What the version upgrade lets a peer make a server hold"): 50 such
    // Initials (55 kB past the hole) keep the connection open until its
    // handshake times out; 70 (77 kB) start closing it at once. Either way it is
    // forgotten, and what it sends the victim stays within three times.
    for (packets, closes_early) in [(50u64, false), (70, true)] {
        let (mut net, server, attacker, _) = attack_network(RetryPolicy::Never, 0);
        let dcid = sift::wire::ConnectionId::new(&[0xd7; 8]).unwrap();
        let scid = sift::wire::ConnectionId::new(&[0x5c; 8]).unwrap();
        let start = net.now();
        net.node(attacker)
            .flood(start, Duration::from_millis(2), packets, move |n| {
                let frames = craft::crypto_frame(2000 + n * 1100, 1100, 0x16);
                let bytes = craft::sift_initial(dcid, scid, n, &frames, 1200)?;
                Some(Datagram {
                    from: victim_addr(),
                    to: server_addr(),
                    bytes,
                })
            });
        let most = run_watching_state(&mut net, server, Duration::from_secs(1));
        assert_eq!(most, 1, "one connection, whatever it was sent");
        let endpoint = net.node(server).endpoint();
        let closing = endpoint
            .handles()
            .next()
            .and_then(|handle| endpoint.connection_ref(handle))
            .is_none_or(|connection| connection.is_closing() || connection.is_closed());
        assert_eq!(closing, closes_early, "{packets} Initials");
        net.run_for(Duration::from_secs(11)).unwrap();
        let stats = net.node(server).endpoint().stats().clone();
        assert_eq!(stats.handshakes_timed_out, u64::from(!closes_early));
        assert_eq!(net.node(server).endpoint().len(), 0, "forgotten in time");
        assert_census_within_limit(net.census());
    }
}

#[test]
fn a_replayed_zero_rtt_flight_finds_no_session_and_its_request_is_never_read() {
    // A server that issues tickets and takes 0-RTT. The honest client
    // resumes and sends its request in 0-RTT; the attacker on its link
    // keeps that first flight and, once the connection is over, sends it
    // again in the victim's name and from the client's address. The
    // server took the ticket when it was first used, so each replay gets
    // a full handshake and its early data is never read (SECURITY.md
    // "Anti-replay"); the address token in it was spent too.
    use sift::crypto::tls::{SessionCache, TicketStore};
    let tickets = TicketStore::new();
    let mut server_config = server_config(RetryPolicy::Never);
    server_config.tls.session_cache = Some(SessionCache::new(16, true));
    let mut client = client_config(2);
    client.tls.tickets = Some(tickets.clone());

    let mut net = Network::new(Instant::now());
    let served = Served::default();
    let server = net.add_endpoint(
        EndpointNode::new(Endpoint::new(server_addr(), Some(server_config)))
            .with_application(serve(20_000, served.clone())),
    );
    let attacker = net.add(Attacker::new(attacker_addr()), &[attacker_addr()]);
    net.add(Sink::default(), &[victim_addr()]);
    let honest = net.add_endpoint(EndpointNode::new(Endpoint::new(client_addr(), None)));
    net.tap(attacker, client_addr());

    // The first connection leaves a ticket.
    let now = net.now();
    let endpoint = net.node(honest).endpoint();
    let first = endpoint
        .connect(client.clone(), server_addr(), now)
        .unwrap();
    let stream = request(endpoint, first, b"GET /first");
    finish_download(&mut net, honest, first, stream, Duration::from_secs(5));
    assert!(net
        .run_until(net.now() + Duration::from_secs(2), |_| !tickets.is_empty())
        .unwrap());
    net.node(honest)
        .endpoint()
        .connection(first)
        .unwrap()
        .close(0, "done");

    // The second resumes with its request in 0-RTT.
    net.run_for(Duration::from_millis(100)).unwrap();
    let resumed_at = net.now();
    let endpoint = net.node(honest).endpoint();
    let second = endpoint.connect(client, server_addr(), resumed_at).unwrap();
    let connection = endpoint.connection(second).unwrap();
    let stream = connection.stream_open_bi().unwrap();
    connection.mark_replay_safe(stream);
    connection.stream_send(stream, b"GET /early", true).unwrap();
    finish_download(&mut net, honest, second, stream, Duration::from_secs(5));
    let stats = net
        .node(honest)
        .endpoint()
        .connection_ref(second)
        .unwrap()
        .stats();
    assert!(stats.zero_rtt_accepted, "the request went in 0-RTT");
    let flight: Vec<Datagram> = net
        .node(attacker)
        .captured()
        .iter()
        .filter(|c| c.at == resumed_at && c.datagram.from == client_addr())
        .map(|c| c.datagram.clone())
        .collect();
    assert!(!flight.is_empty());
    net.node(honest)
        .endpoint()
        .connection(second)
        .unwrap()
        .close(0, "done");
    net.run_for(Duration::from_secs(2)).unwrap();

    // One replay at a time: both carry the client's first connection ID,
    // so the second would reach the first's connection.
    for from in [victim_addr(), client_addr()] {
        for datagram in &flight {
            net.node(attacker).send(Datagram {
                from,
                ..datagram.clone()
            });
        }
        net.run_for(Duration::from_secs(12)).unwrap();
    }
    assert_eq!(
        net.node(server).endpoint().stats().connections_accepted,
        4,
        "each replay got a connection"
    );
    let read = served.read.borrow().clone();
    println!("request bytes read per server connection: {read:?}");
    assert_eq!(*served.answered.borrow(), 2, "only the honest requests");
    assert!(
        read.iter().all(|(handle, _)| handle.index() < 2),
        "a replay's request was read: {read:?}"
    );
    assert_census_within_limit(net.census());
}

// ---------------------------------------------------------------------------
// The census on a scenario's run (`Simulation::attach_census`).

#[test]
fn a_client_that_moves_gets_at_most_three_times_at_its_new_address_before_it_proves_it() {
    // A client uploading 5 MB moves to another port, or to another IP
    // address, a second in. The server follows it and sends the new
    // address at most three times what came from there until the
    // client's answer shows it lives there (RFC 9000 §9.3).
    for (seed, moves) in [(1, "rebind_at_ms = 1000"), (2, "new_address_at_ms = 1000")] {
        let text = format!(
            r#"
name = "moving-client"
time_limit_s = 60
[bottleneck]
forward = "delay 20ms rate 20mbit limit 75"
reverse = "delay 20ms rate 20mbit"
[[flow]]
cc = "cubic"
bytes = 5_000_000
{moves}
"#
        );
        let scenario = Scenario::from_toml_str(&text, "moving client").unwrap();
        let mut simulation = Simulation::new(&scenario, seed, Instant::now()).unwrap();
        simulation.attach_census();
        simulation.run().unwrap();
        let report = simulation.report();
        assert_eq!(report.flows[0].bytes_received, 5_000_000, "{moves}");
        assert_eq!(report.flows[0].server_stats.peer_migrations, 1, "{moves}");
        let census = simulation.census().unwrap();
        let proved = census.records().filter(|record| record.proved()).count();
        assert!(proved >= 3, "both ends, and the new address:\n{census}");
        assert_census_within_limit(census);
    }
}

// ---------------------------------------------------------------------------
// Finding 1 of issue 53: a path state sealed for an address nobody
// validated, then used from there.

#[test]
fn a_token_obtained_by_moving_to_a_victim_does_not_aim_the_server_at_it() {
    // The attacker downloads 2 MB on its own connection (the server saves
    // the path state in its tokens) and keeps a session ticket. It seals
    // a 1200-byte PING with its keys and sends it in the victim's name:
    // the server moves there, and then back when the victim never answers;
    // whatever token it sealed meanwhile reaches the attacker too. The
    // attacker then opens a connection in the victim's name with the
    // newest token, a resumed ClientHello and a 0-RTT request, and says
    // nothing more. The victim must get at most three times what was sent
    // in its name (SECURITY.md "Address validation and Retry"): no token
    // sealed for an address that never proved itself may lift the limit.
    use sift::crypto::tls::{SessionCache, TicketStore};
    let mut config = server_config(RetryPolicy::Never);
    config.tls.session_cache = Some(SessionCache::new(16, true));
    let mut net = Network::new(Instant::now());
    let server = net.add_endpoint(
        EndpointNode::new(Endpoint::new(server_addr(), Some(config)))
            .with_application(serve(2_000_000, Served::default())),
    );
    let attacker = net.add(Attacker::new(attacker_addr()), &[attacker_addr()]);
    // A 10 Mb/s downlink: the download's flight outgrows the path's
    // delivery rate times its round trip, as on a real link with a queue.
    net.set_downlink(attacker, 10_000_000);
    net.add(Sink::default(), &[victim_addr()]);
    let tokens = sift::endpoint::TokenStore::new();
    let tickets = TicketStore::new();
    let mut attacker_config = client_config(7);
    attacker_config.token_store = Some(tokens.clone());
    attacker_config.tls.tickets = Some(tickets.clone());

    let now = net.now();
    let endpoint = net.node(attacker).endpoint();
    let own = endpoint
        .connect(attacker_config.clone(), server_addr(), now)
        .unwrap();
    let stream = request(endpoint, own, b"GET /");
    let mut got = 0;
    assert!(net
        .run_until(now + Duration::from_secs(20), |net| {
            got += read(net.node(attacker).endpoint(), own, stream).0;
            got == 2_000_000 && !tickets.is_empty()
        })
        .unwrap());
    net.run_for(Duration::from_millis(300)).unwrap();
    let mut collected: Vec<Vec<u8>> = tokens.take(server_addr()).into_iter().collect();

    // The move, and back.
    let now = net.now();
    net.node(attacker)
        .forge(own, &craft::padded_ping(1150), victim_addr(), now)
        .expect("1-RTT keys");
    let tokens_before = collected.len();
    net.run_until(now + Duration::from_secs(4), |_| {
        collected.extend(tokens.take(server_addr()));
        false
    })
    .unwrap();
    let saved = net.node(server).endpoint().stats().path_states_saved;
    println!(
        "tokens the attacker got: {} before the move, {} after; path states saved {saved}",
        tokens_before,
        collected.len() - tokens_before
    );
    net.node(attacker)
        .endpoint()
        .connection(own)
        .unwrap()
        .close(0, "done");
    net.run_for(Duration::from_millis(500)).unwrap();

    // In the victim's name: the newest token, a resumed hello and a
    // 0-RTT request, once.
    let token = collected.last().cloned();
    let spoof_store = sift::endpoint::TokenStore::new();
    if let Some(token) = token {
        spoof_store.insert(server_addr(), token);
    }
    let spoof_config = Config {
        token_store: Some(spoof_store),
        ..attacker_config
    };
    let now = net.now();
    let node = net.node(attacker);
    let endpoint = node.endpoint();
    let spoofed_handle = endpoint.connect(spoof_config, server_addr(), now).unwrap();
    let connection = endpoint.connection(spoofed_handle).unwrap();
    let stream = connection.stream_open_bi().unwrap();
    connection.mark_replay_safe(stream);
    connection.stream_send(stream, b"GET /", true).unwrap();
    let mut buffer = vec![0u8; 65_536];
    let mut flight = Vec::new();
    while let Some((len, to)) = endpoint.poll_transmit(now, &mut buffer) {
        flight.push(Datagram {
            from: victim_addr(),
            to,
            bytes: buffer[..len].to_vec(),
        });
    }
    node.allow_endpoint_datagrams(Some(0));
    println!(
        "first flight in the victim's name: {:?} bytes",
        flight.iter().map(|d| d.bytes.len()).collect::<Vec<_>>()
    );
    for datagram in flight {
        node.send(datagram);
    }
    net.run_for(Duration::from_secs(12)).unwrap();
    let stats = net.node(server).endpoint().stats().clone();
    println!("{stats:?}");
    assert_census_within_limit(net.census());
}

// ---------------------------------------------------------------------------
// Finding 2 of issue 53: PATH_CHALLENGE reflection.

#[test]
fn path_challenges_in_a_victims_name_draw_at_most_three_times_their_size() {
    // A client that finished a handshake sends small 1-RTT datagrams of
    // four PATH_CHALLENGEs each (probing frames only, so nothing moves) in
    // the victim's name. The server answers a probed path; the victim must
    // get at most three times what was sent in its name (RFC 9000 §8,
    // SECURITY.md "Connection migration"). Before the fix: 12x.
    let mut net = Network::new(Instant::now());
    net.add_endpoint(server(RetryPolicy::Never, 0, Served::default()));
    let attacker = net.add(Attacker::new(attacker_addr()), &[attacker_addr()]);
    net.add(Sink::default(), &[victim_addr()]);
    let handle = attacker_connected(&mut net, attacker, 7);
    let frames = craft::path_challenges(4);
    for round in 0..50u32 {
        let now = net.now();
        let len = net
            .node(attacker)
            .forge(handle, &frames, victim_addr(), now)
            .expect("the attacker holds 1-RTT keys");
        if round == 0 {
            println!("each forged datagram: {len} bytes");
        }
        net.run_for(Duration::from_millis(20)).unwrap();
    }
    net.run_for(Duration::from_secs(2)).unwrap();
    let census = net.census();
    let victim = census
        .get(server_addr(), victim_addr())
        .expect("datagrams arrived in the victim's name");
    assert!(victim.spoofed_received > 0);
    assert_census_within_limit(census);
}

#[test]
fn full_size_probes_in_a_victims_name_draw_at_most_three_times_their_size() {
    // The same with 1200-byte probing packets (four PATH_CHALLENGEs and
    // PADDING): each answer is padded to 1200 bytes, so four of them are
    // 4x. Every answer to an address that has not proved itself counts
    // against one budget of three times what arrived from it.
    let mut net = Network::new(Instant::now());
    net.add_endpoint(server(RetryPolicy::Never, 0, Served::default()));
    let attacker = net.add(Attacker::new(attacker_addr()), &[attacker_addr()]);
    net.add(Sink::default(), &[victim_addr()]);
    let handle = attacker_connected(&mut net, attacker, 7);
    let frames = craft::padded_probe(4, 1150);
    for _ in 0..20 {
        let now = net.now();
        net.node(attacker)
            .forge(handle, &frames, victim_addr(), now)
            .expect("the attacker holds 1-RTT keys");
        net.run_for(Duration::from_millis(50)).unwrap();
    }
    net.run_for(Duration::from_secs(2)).unwrap();
    assert_census_within_limit(net.census());
}
