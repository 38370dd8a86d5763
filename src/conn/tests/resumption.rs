//! Session resumption and 0-RTT (`conn::zero_rtt`, `crypto::tls`), on the
//! two-endpoint harness: a first connection leaves a ticket, a second one
//! resumes with it.

use super::*;
use crate::crypto::tls::{process_loopback_config, SessionCache, TicketScope, TicketStore};
use crate::crypto::{ServerIdentity, ServerTrust, TlsConfig};
use crate::stream::StreamError;
use crate::wire::QUIC_V1;

/// A client keeping tickets in `store`, a server issuing them from `cache`.
fn resumable(store: &TicketStore, cache: &SessionCache) -> (Config, Config) {
    let tls = process_loopback_config();
    let client = Config {
        tls: TlsConfig {
            tickets: Some(store.clone()),
            ..tls.clone()
        },
        ..Config::default()
    };
    let server = Config {
        tls: TlsConfig {
            session_cache: Some(cache.clone()),
            ..tls
        },
        ..Config::default()
    };
    (client, server)
}

/// The scope of the harness's server (127.0.0.1 port 2) in `version`.
fn scope(version: u32) -> TicketScope {
    TicketScope {
        server: "127.0.0.1".to_string(),
        port: 2,
        version,
    }
}

/// A full handshake that leaves the client's tickets in `store`.
fn first_connection(client: Config, server: Config, store: &TicketStore) {
    let mut pair = Pair::new(client, server);
    pair.handshake();
    assert!(!pair.client.is_resumed());
    let got = pair.run_until(Duration::from_secs(1), &mut deliver_all, |_| {
        !store.is_empty()
    });
    assert!(got, "the server sent no session ticket");
}

/// Opens a stream on the client, marks it replay-safe if `replay_safe`,
/// and writes `request` with FIN, before the client sent anything.
fn early_request(pair: &mut Pair, request: &[u8], replay_safe: bool) -> StreamId {
    let id = pair.client.stream_open_bi().unwrap();
    if replay_safe {
        pair.client.mark_replay_safe(id);
    }
    assert_eq!(
        pair.client.stream_send(id, request, true).unwrap(),
        request.len()
    );
    id
}

/// Steps until the server has read a whole request; returns it and
/// whether the server's handshake was still incomplete then.
fn server_reads_request(pair: &mut Pair) -> (Vec<u8>, bool) {
    let mut received = Vec::new();
    let mut buf = vec![0u8; 4096];
    for _ in 0..10_000 {
        while let Some(stream) = pair.server.readable().first().copied() {
            let (n, fin) = pair.server.stream_recv(stream, &mut buf).unwrap();
            received.extend_from_slice(&buf[..n]);
            if fin {
                return (received, !pair.server.is_established());
            }
            if n == 0 {
                break;
            }
        }
        assert!(pair.step(&mut deliver_all), "the request never arrived");
    }
    panic!("the request never arrived");
}

#[test]
fn second_connection_resumes_and_its_request_arrives_in_zero_rtt() {
    let (store, cache) = (TicketStore::new(), SessionCache::new(16, true));
    let (client, server) = resumable(&store, &cache);
    first_connection(client.clone(), server.clone(), &store);

    let mut pair = Pair::new(client, server);
    early_request(&mut pair, b"GET /a.bin", true);
    let (request, early) = server_reads_request(&mut pair);
    assert_eq!(request, b"GET /a.bin");
    // Read half a round trip after the client started: 0-RTT, not 1-RTT.
    assert!(early, "the request waited for the handshake");
    assert!(pair.server.in_early_data());
    pair.handshake();
    assert!(!pair.server.in_early_data());
    let (client, server) = (pair.client.stats(), pair.server.stats());
    assert!(client.resumed && server.resumed);
    assert!(client.zero_rtt_accepted && !client.zero_rtt_rejected);
    assert_eq!(client.zero_rtt_bytes, 10);
    assert_eq!(server.zero_rtt_bytes, 10);
    assert!(client.zero_rtt_packets >= 1);
}

#[test]
fn a_held_first_flight_leaves_with_the_request_written_after_it() {
    let (store, cache) = (TicketStore::new(), SessionCache::new(16, true));
    let (client, server) = resumable(&store, &cache);
    first_connection(client.clone(), server.clone(), &store);

    let mut pair = Pair::new(client, server);
    pair.client.hold_first_flight();
    let mut buf = vec![0u8; 65_535];
    assert!(
        pair.client.send(&mut buf, pair.now).unwrap().is_none(),
        "a held first flight went out"
    );
    early_request(&mut pair, b"GET /a.bin", true);
    // The write let it go: the ClientHello and the request go together.
    assert!(
        !pair.client.release_first_flight(),
        "still held after a write"
    );
    let (request, early) = server_reads_request(&mut pair);
    assert_eq!(request, b"GET /a.bin");
    assert!(early, "the request waited for the handshake");
    assert_eq!(pair.client.stats().zero_rtt_bytes, 10);
}

#[test]
fn a_first_flight_is_held_only_when_it_could_carry_zero_rtt() {
    // No ticket: nothing could go early, so nothing is held.
    let mut pair = Pair::default();
    pair.client.hold_first_flight();
    assert!(!pair.client.release_first_flight());
    pair.handshake();

    // Released by a wait, with no write: the handshake runs as usual.
    let (store, cache) = (TicketStore::new(), SessionCache::new(16, true));
    let (client, server) = resumable(&store, &cache);
    first_connection(client.clone(), server.clone(), &store);
    let mut pair = Pair::new(client, server);
    pair.client.hold_first_flight();
    assert!(pair.client.release_first_flight());
    assert!(!pair.client.release_first_flight(), "released twice");
    pair.handshake();
    assert!(pair.client.stats().resumed);
}

#[test]
fn a_stream_not_marked_replay_safe_waits_for_one_rtt() {
    let (store, cache) = (TicketStore::new(), SessionCache::new(16, true));
    let (client, server) = resumable(&store, &cache);
    first_connection(client.clone(), server.clone(), &store);

    let mut pair = Pair::new(client, server);
    // An upload: not replay-safe.
    early_request(&mut pair, b"PUT /up.bin", false);
    let (request, early) = server_reads_request(&mut pair);
    assert_eq!(request, b"PUT /up.bin");
    assert!(!early, "a PUT was read before the handshake completed");
    let stats = pair.client.stats();
    assert!(stats.resumed);
    assert_eq!(stats.zero_rtt_bytes, 0);
    assert_eq!(pair.server.stats().zero_rtt_bytes, 0);
}

/// A client resuming with 0-RTT from a server that took its first
/// connection with `server` and now runs `rejecting`, which refuses the
/// early data.
fn pair_rejecting_zero_rtt(
    rejecting: impl FnOnce(Config, &TicketStore, &SessionCache) -> Config,
) -> Pair {
    let (store, cache) = (TicketStore::new(), SessionCache::new(16, true));
    let (client, server) = resumable(&store, &cache);
    first_connection(client.clone(), server.clone(), &store);
    let server = rejecting(server, &store, &cache);
    Pair::new(client, server)
}

/// A server that issues tickets but takes no early data.
fn without_early_data(_: Config, store: &TicketStore, cache: &SessionCache) -> Config {
    let mut no_early_data = cache.clone();
    no_early_data.early_data = false;
    resumable(store, &no_early_data).1
}

/// The server answers the first whole request it reads with `answer`;
/// steps until the client has read all of it on `stream`, and returns
/// the request and the answer read.
fn request_answered(pair: &mut Pair, stream: StreamId, answer: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let (request, _) = server_reads_request(pair);
    assert!(
        pair.server.readable().is_empty(),
        "a second request arrived"
    );
    // Both ends name a stream alike.
    pair.server.stream_send(stream, answer, true).unwrap();
    let mut read = Vec::new();
    let mut buf = vec![0u8; 65_536];
    let done = pair.run_until(Duration::from_secs(10), &mut deliver_all, |p| loop {
        match p.client.stream_recv(stream, &mut buf) {
            Ok((n, fin)) => {
                read.extend_from_slice(&buf[..n]);
                if fin {
                    return true;
                }
            }
            Err(Error::Stream(StreamError::Blocked)) => return false,
            Err(other) => panic!("reading the answer: {other}"),
        }
    });
    assert!(done, "the answer did not arrive whole");
    (request, read)
}

#[test]
fn zero_rtt_rejected_by_the_server_resets_every_stream() {
    let mut pair = pair_rejecting_zero_rtt(without_early_data);
    let request = early_request(&mut pair, b"GET /a.bin", true);
    // Not replay-safe: its bytes wait in the stream's buffer.
    let upload = pair.client.stream_open_bi().unwrap();
    pair.client
        .stream_send(upload, b"PUT /b.bin", false)
        .unwrap();
    assert_eq!(pair.client.early_data(), EarlyData::Offered);
    pair.handshake();
    assert!(pair.client.zero_rtt_rejected());
    assert_eq!(pair.client.early_data(), EarlyData::Rejected);
    let stats = pair.client.stats();
    assert!(stats.resumed && stats.zero_rtt_rejected && !stats.zero_rtt_accepted);
    assert_eq!(stats.zero_rtt_bytes, 10, "the request went in 0-RTT");
    // Refused unread: no congestion signal.
    assert_eq!(stats.congestion_events, 0);

    // Buffered data gone, and no 0-RTT byte is sent again in 1-RTT.
    assert_eq!(stats.stream_send_buffered, 0);
    pair.run_until(Duration::from_secs(1), &mut deliver_all, |_| false);
    assert_eq!(pair.client.streams.stats().bytes_retransmitted, 0);
    assert!(
        pair.server.readable().is_empty(),
        "a stream reached the server"
    );
    assert_eq!(pair.server.streams.stats().streams_opened_remote, 0);
    assert_eq!(pair.server.streams.stats().bytes_received, 0);

    // A stale handle fails with its own error, for every call.
    let mut buf = [0u8; 16];
    let rejected = |id| Error::Stream(StreamError::ZeroRttRejected(id));
    let send = pair.client.stream_send(request, b"x", false);
    assert_eq!(send, Err(rejected(request)));
    let recv = pair.client.stream_recv(upload, &mut buf);
    assert_eq!(recv, Err(rejected(upload)));
    assert_eq!(pair.client.stream_reset(upload, 1), Err(rejected(upload)));
    assert!(pair.client.readable().is_empty() && pair.client.writable().is_empty());

    // IDs start again at 0, with nothing buffered on them.
    let again = pair.client.stream_open_bi().unwrap();
    assert_eq!(again, request, "the stream IDs did not start again");
    assert_eq!(pair.client.stats().stream_send_buffered, 0);
    // Opened again, the ID is a new stream; the next one is still stale.
    let send = pair.client.stream_send(upload, b"x", false);
    assert_eq!(send, Err(rejected(upload)));
    pair.client.stream_send(again, b"GET /c.bin", true).unwrap();
    let (request, answer) = request_answered(&mut pair, again, b"c");
    assert_eq!(request, b"GET /c.bin", "0-RTT bytes reached the server");
    assert_eq!(answer, b"c");
}

#[test]
fn a_request_redone_after_zero_rtt_was_rejected_gets_the_whole_answer() {
    let mut pair = pair_rejecting_zero_rtt(without_early_data);
    early_request(&mut pair, b"GET /a.bin", true);
    pair.handshake();
    assert!(pair.client.zero_rtt_rejected());
    assert_eq!(pair.client.alpn_protocol(), Some(&b"sift/1"[..]));
    // The application sends its request again on a new stream.
    let stream = pair.client.stream_open_bi().unwrap();
    pair.client
        .stream_send(stream, b"GET /a.bin", true)
        .unwrap();
    let answer: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let (request, read) = request_answered(&mut pair, stream, &answer);
    assert_eq!(request, b"GET /a.bin");
    assert!(read == answer, "the answer did not arrive byte-exact");
}

#[test]
fn zero_rtt_accepted_by_the_server_keeps_its_streams() {
    let (store, cache) = (TicketStore::new(), SessionCache::new(16, true));
    let (client, server) = resumable(&store, &cache);
    first_connection(client.clone(), server.clone(), &store);
    let mut pair = Pair::new(client, server);
    let stream = early_request(&mut pair, b"GET /a.bin", true);
    let (request, answer) = request_answered(&mut pair, stream, b"the answer");
    assert_eq!(request, b"GET /a.bin");
    assert_eq!(answer, b"the answer");
    assert_eq!(pair.client.early_data(), EarlyData::Accepted);
    assert!(!pair.client.zero_rtt_rejected());
    // The early stream counts: the next one is stream 4.
    assert_eq!(pair.client.stream_open_bi().unwrap(), stream + 4);
}

#[test]
fn zero_rtt_refused_by_a_restarted_server_resets_the_streams_and_is_redone() {
    // A new cache: the server restarted and knows no ticket.
    let mut pair =
        pair_rejecting_zero_rtt(|_, store, _| resumable(store, &SessionCache::new(16, true)).1);
    let early = early_request(&mut pair, b"GET /a.bin", true);
    pair.handshake();
    let stats = pair.client.stats();
    assert!(!stats.resumed && stats.zero_rtt_rejected && !stats.zero_rtt_accepted);
    assert_eq!(stats.zero_rtt_bytes, 10);
    assert_eq!(stats.congestion_events, 0);
    let stream = pair.client.stream_open_bi().unwrap();
    assert_eq!(stream, early);
    pair.client
        .stream_send(stream, b"GET /a.bin", true)
        .unwrap();
    let (request, answer) = request_answered(&mut pair, stream, b"a");
    assert_eq!(
        request, b"GET /a.bin",
        "the request arrived other than once"
    );
    assert_eq!(answer, b"a");
}

#[test]
fn a_ticket_resumes_once() {
    let (store, cache) = (TicketStore::new(), SessionCache::new(16, true));
    let (client, server) = resumable(&store, &cache);
    first_connection(client.clone(), server.clone(), &store);
    let held = store.count(&scope(crate::wire::VERSION));
    assert!(held >= 1, "tickets are filed under sift/1, the version run");

    let mut pair = Pair::new(client, server);
    assert_eq!(store.count(&scope(crate::wire::VERSION)), held - 1);
    pair.handshake();
    assert!(pair.client.is_resumed());
}

#[test]
fn a_sift1_ticket_is_not_used_to_start_quic_v1() {
    let (store, cache) = (TicketStore::new(), SessionCache::new(16, true));
    let (client, server) = resumable(&store, &cache);
    first_connection(client.clone(), server.clone(), &store);
    assert_eq!(store.count(&scope(QUIC_V1)), 0);

    let v1_only = Config {
        versions: vec![QUIC_V1],
        ..client
    };
    let mut pair = Pair::new(v1_only, server);
    early_request(&mut pair, b"GET /a.bin", true);
    pair.handshake();
    let stats = pair.client.stats();
    assert!(!stats.resumed && stats.zero_rtt_packets == 0);
    assert!(store.count(&scope(crate::wire::VERSION)) >= 1);
}

#[test]
fn resumption_does_not_bypass_the_pin() {
    let (store, cache) = (TicketStore::new(), SessionCache::new(16, true));
    let (client, server) = resumable(&store, &cache);
    first_connection(client.clone(), server.clone(), &store);

    // Same store, pinned to another key: the ticket got under the first
    // pin must not vouch for this server.
    let other = ServerIdentity::self_signed(&["localhost"]).unwrap();
    let mut pinned_elsewhere = client;
    pinned_elsewhere.tls.trust = Some(ServerTrust::Pinned(vec![other.fingerprint()]));
    let mut pair = Pair::new(pinned_elsewhere, server);
    let ok = pair.run_until(Duration::from_secs(5), &mut deliver_all, |p| {
        p.client.is_established() || p.client.is_closing() || p.client.is_closed()
    });
    assert!(ok);
    assert!(
        !pair.client.is_established(),
        "a resumed session skipped the pin"
    );
    assert!(!pair.client.is_resumed());
}

#[test]
fn an_early_request_is_answered_within_three_times_what_came_from_an_unproved_address() {
    // A replayed first flight (ClientHello and a 0-RTT GET) from an address
    // nobody validated: the server serves the GET before the handshake
    // completes, which a replay's never does, and sends that address at
    // most three times what came from it (RFC 9000 §8.1).
    let (store, cache) = (TicketStore::new(), SessionCache::new(16, true));
    let (client, server) = resumable(&store, &cache);
    first_connection(client.clone(), server.clone(), &store);
    let mut pair = Pair::new(client, server);
    early_request(&mut pair, b"GET /a.bin", true);

    // Only what the client sent before the server answered arrives.
    let counts = std::rc::Rc::new(std::cell::Cell::new((0u64, 0u64, false)));
    let seen = std::rc::Rc::clone(&counts);
    let mut first_flight_only = move |to_server: bool, _: u64, bytes: &[u8]| {
        let (received, sent, answered) = seen.get();
        if to_server && answered {
            return PathAction::Drop;
        }
        let len = bytes.len() as u64;
        seen.set(if to_server {
            (received + len, sent, answered)
        } else {
            (received, sent + len, true)
        });
        PathAction::Deliver
    };
    let answer = vec![7u8; 100_000];
    let mut answered = false;
    let mut buf = vec![0u8; 4096];
    pair.run_until(Duration::from_secs(8), &mut first_flight_only, |p| {
        while let Some(stream) = p.server.readable().first().copied() {
            let (_, fin) = p.server.stream_recv(stream, &mut buf).unwrap();
            if fin && !answered {
                assert!(p.server.in_early_data(), "served before the handshake");
                p.server.stream_send(stream, &answer, true).unwrap();
                answered = true;
            }
        }
        false
    });
    assert!(answered, "the early request was read");
    assert!(!pair.server.is_established());
    let (received, sent, _) = counts.get();
    assert!(
        sent <= 3 * received,
        "{sent} bytes sent for {received} received"
    );
    assert!(
        answer.len() as u64 > 3 * received,
        "the limit held something back"
    );
}

#[test]
fn a_server_whose_limits_shrank_since_the_ticket_accepts_no_zero_rtt_with_it() {
    // RFC 9000 §7.4.1: 0-RTT data keeps to the limits remembered with the
    // ticket, so a server that now announces less must not accept it.
    let (store, cache) = (TicketStore::new(), SessionCache::new(16, true));
    let (client, server) = resumable(&store, &cache);
    first_connection(client.clone(), server.clone(), &store);

    let mut smaller = server.clone();
    smaller.streams.initial_max_data = server.streams.initial_max_data / 2;
    let mut pair = Pair::new(client, smaller);
    early_request(&mut pair, b"GET /a.bin", true);
    pair.handshake();
    let stats = pair.client.stats();
    assert!(!stats.zero_rtt_accepted && stats.zero_rtt_rejected);
    assert!(!pair.server.stats().resumed);
    assert!(!pair.client.is_closed());
    // Sent again by the application, under the smaller limits.
    let stream = pair.client.stream_open_bi().unwrap();
    pair.client
        .stream_send(stream, b"GET /a.bin", true)
        .unwrap();
    let (request, early) = server_reads_request(&mut pair);
    assert_eq!(request, b"GET /a.bin");
    assert!(!early, "the request was read from 0-RTT data");
}

#[test]
fn a_server_with_the_same_limits_under_a_new_config_still_accepts_zero_rtt() {
    let (store, cache) = (TicketStore::new(), SessionCache::new(16, true));
    let (client, server) = resumable(&store, &cache);
    first_connection(client.clone(), server.clone(), &store);

    let mut other = server.clone();
    other.idle_timeout = server.idle_timeout * 2; // not a 0-RTT limit
    let mut pair = Pair::new(client, other);
    early_request(&mut pair, b"GET /a.bin", true);
    let (_, early) = server_reads_request(&mut pair);
    assert!(early, "the request waited for the handshake");
    pair.handshake();
    assert!(pair.client.stats().zero_rtt_accepted);
}

#[test]
fn a_client_sends_no_zero_rtt_once_the_servers_own_parameters_are_read() {
    // RFC 9000 §7.4.1: 0-RTT data keeps to the limits remembered with the
    // ticket. The server's parameters replace them in flow control at
    // once, before the 1-RTT keys arrive; 0-RTT stops there.
    let (store, cache) = (TicketStore::new(), SessionCache::new(16, true));
    let (client, server) = resumable(&store, &cache);
    first_connection(client, server.clone(), &store);
    let (client, _) = resumable(&store, &cache);
    let mut pair = Pair::new(client, server);
    early_request(&mut pair, b"GET /a.bin", true);
    assert!(pair.client.early_data_possible());
    let mut larger = pair.client.handshake.remembered_params().unwrap();
    larger.initial_max_data *= 4;
    pair.client.handshake.set_peer_params(larger);
    assert!(!pair.client.early_data_possible());
    let mut buf = vec![0u8; 65_535];
    let mut sent = 0;
    while let Ok(Some((len, _))) = pair.client.send(&mut buf, pair.now) {
        sent += 1;
        let mut rest = &buf[..len];
        while rest.first().is_some_and(|first| first & 0x80 != 0) {
            let version = u32::from_be_bytes(rest[1..5].try_into().unwrap());
            let format = crate::crypto::format::for_version(version).unwrap();
            let parsed = crate::crypto::PacketFormat::parse(format, rest).unwrap();
            assert_ne!(parsed.ty, crate::wire::PacketType::ZeroRtt);
            rest = &rest[parsed.packet_len..];
        }
        assert!(rest.is_empty(), "a short-header packet before 1-RTT keys");
    }
    assert!(sent > 0, "no first flight");
}
