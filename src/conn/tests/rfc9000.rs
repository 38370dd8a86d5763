//! RFC 9000 §5–§11 requirements on one connection, each named in
//! `docs/requirements.toml`: connection IDs and transport parameters,
//! CRYPTO buffering, address validation, path responses, the idle timeout
//! and the closing and draining states. The two-endpoint harness of
//! `conn::tests`, with packets forged under the real keys where a
//! misbehaving peer is needed.

use std::sync::{Arc, Mutex};

use super::*;
use crate::wire::parse_frames;

/// What a connection sent, packet by packet: its space, when, and its
/// frames (decoded from the plaintext the trace sees).
#[derive(Debug, Default)]
struct SentLog {
    packets: Vec<SentPacketRecord>,
}

#[derive(Debug)]
struct SentPacketRecord {
    space: SpaceId,
    at: Instant,
    frames: Vec<u8>,
}

impl SentPacketRecord {
    fn frames(&self) -> impl Iterator<Item = Frame<'_>> {
        parse_frames(&self.frames).flatten()
    }
}

#[derive(Debug)]
struct SentLogger(Arc<Mutex<SentLog>>);

impl crate::trace::Observer for SentLogger {
    fn event(&mut self, now: Instant, event: &crate::trace::Event<'_>) {
        if let crate::trace::Event::PacketSent { space, frames, .. } = *event {
            self.0.lock().unwrap().packets.push(SentPacketRecord {
                space,
                at: now,
                frames: frames.to_vec(),
            });
        }
    }
}

fn sent_log(conn: &mut Connection) -> Arc<Mutex<SentLog>> {
    let log = Arc::default();
    conn.set_observer(Box::new(SentLogger(Arc::clone(&log))));
    log
}

fn transport_close_code(conn: &Connection) -> Option<u64> {
    match conn.close_reason() {
        Some(CloseReason::Local {
            application: false,
            code,
            ..
        }) => Some(*code),
        _ => None,
    }
}

fn encoded(frames: &[Frame<'_>]) -> Vec<u8> {
    let mut out = Vec::new();
    for frame in frames {
        frame.encode(&mut out);
    }
    out
}

/// Every datagram `from` has to send now, handed to `to` at once.
fn hand_over(from: &mut Connection, to: &mut Connection, now: Instant) -> Vec<usize> {
    let mut sizes = Vec::new();
    let mut buf = vec![0u8; 65_535];
    while let Ok(Some((len, info))) = from.send(&mut buf, now) {
        sizes.push(len);
        let _ = to.recv(
            &mut buf[..len],
            RecvInfo {
                from: info.from,
                to: info.to,
                now,
                ecn: Ecn::NotEct,
            },
        );
    }
    sizes
}

/// An Initial packet sealed by `sender` under its own Initial keys, as if
/// it came from the source ID `scid`, padded to 1200 bytes.
fn forged_initial(sender: &mut Connection, dcid: ConnectionId, scid: ConnectionId) -> Vec<u8> {
    let space = SpaceId::Initial;
    let packet_number = sender.spaces[space].next_packet_number;
    sender.spaces[space].next_packet_number += 1;
    let mut frames = encoded(&[Frame::Ping]);
    frames.resize(1100, 0);
    let header = Header {
        ty: PacketType::Initial,
        version: sender.versions.current().version(),
        dcid,
        scid,
        token: &[],
        packet_number,
        payload_len: 0,
        key_phase: false,
    };
    let keys = sender.spaces[space]
        .keys
        .as_deref()
        .expect("Initial keys in hand");
    let mut datagram = vec![0u8; 2000];
    let mut scratch = Vec::new();
    let len = sender
        .versions
        .current()
        .seal_into(&header, None, &frames, keys, &mut scratch, &mut datagram)
        .unwrap();
    datagram.truncate(len);
    datagram
}

// ---- §5 connection IDs --------------------------------------------------

#[test]
fn connection_ids_of_one_connection_are_never_repeated_and_share_no_pattern() {
    // RFC 9000 §5.1, §5.1.1: each ID is issued once, and one connection's
    // IDs carry nothing an observer could link them by. A hundred IDs
    // issued in turn (the peer retiring each): all different, sequence
    // numbers one apart, and any two differ in many of their 64 bits.
    let mut ids = cid::ConnectionIds::new(ConnectionId::new(&[1; 8]).unwrap(), None, false);
    ids.on_peer_params(2, None);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(99);
    let mut issued = Vec::new();
    let mut sequences = Vec::new();
    ids.replenish(&mut rng, None);
    while issued.len() < 100 {
        let (sequence, cid, _) = ids.next_announcement().expect("a new ID");
        sequences.push(sequence);
        issued.push(cid);
        // The peer retires the previous ID in a packet sent to the new one.
        ids.on_retire_connection_id(sequence - 1, cid.as_slice(), &mut rng, None)
            .unwrap();
        while ids.poll_change().is_some() {} // the endpoint's routes
    }
    assert_eq!(sequences, (1..=100).collect::<Vec<u64>>());
    for (i, a) in issued.iter().enumerate() {
        assert_eq!(a.len(), 8);
        for b in &issued[i + 1..] {
            let differing: u32 = a
                .as_slice()
                .iter()
                .zip(b.as_slice())
                .map(|(x, y)| (x ^ y).count_ones())
                .sum();
            assert!(differing >= 8, "{a} and {b} differ in {differing} bits");
        }
    }
}

#[test]
fn a_peer_that_makes_us_retire_id_after_id_is_cut_off() {
    // RFC 9000 §5.1.2: the retirements waiting to be sent are bounded, at
    // no fewer than twice our active_connection_id_limit; a peer that
    // keeps raising Retire Prior To while ours go unsent is closed with
    // CONNECTION_ID_LIMIT_ERROR rather than grow the queue for ever.
    let id = |n: u64| ConnectionId::new(&n.to_be_bytes()).unwrap();
    let mut ids = cid::ConnectionIds::new(id(1_000), None, false);
    let mut current = id(2_000);
    let mut refused = None;
    for sequence in 1..200 {
        // Each frame retires every earlier ID, the one we send to included.
        match ids.on_new_connection_id(sequence, sequence, id(sequence), [0; 16], current) {
            Ok(switched) => current = switched.unwrap_or(current),
            Err(error) => {
                refused = Some((sequence, error.code));
                break;
            }
        }
    }
    let (at, code) = refused.expect("the peer was cut off");
    assert_eq!(code, codes::CONNECTION_ID_LIMIT_ERROR);
    assert!(at > 2 * cid::ACTIVE_LIMIT, "cut off after {at} retirements");
    let queued = std::iter::from_fn(|| ids.next_retirement()).count() as u64;
    assert!(queued >= 2 * cid::ACTIVE_LIMIT, "{queued} retirements held");
}

#[test]
fn a_frame_error_after_frames_already_acted_on_closes_the_connection() {
    // RFC 9000 §5.2: a packet is either wholly undone or the connection
    // fails. Here a STREAM frame is followed by an unknown frame type: a
    // connection error, not a half-applied packet.
    let mut pair = Pair::default();
    pair.handshake();
    let mut frames = encoded(&[Frame::Stream {
        id: 3,
        offset: 0,
        data: b"applied first",
        fin: false,
    }]);
    frames.push(0x3f); // no such frame type
    server_sends_forged(&mut pair, &frames);
    assert_eq!(
        transport_close_code(&pair.client),
        Some(codes::FRAME_ENCODING_ERROR)
    );
}

// ---- §7 handshake, transport parameters, CRYPTO --------------------------

#[test]
fn a_later_initial_with_another_source_id_moves_neither_side() {
    // RFC 9000 §7.2: a client takes the server's ID from the first Initial
    // only, and a server the client's from the first it received.
    let mut pair = Pair::default();
    let now = pair.now;
    hand_over(&mut pair.client, &mut pair.server, now);
    let client_id = pair.client.local_cid();
    assert_eq!(pair.server.peer_cid, client_id);
    // A second client Initial, claiming another source ID.
    let (to, other) = (pair.client.peer_cid, ConnectionId::new(&[0xee; 8]).unwrap());
    let mut late = forged_initial(&mut pair.client, to, other);
    let from_client = RecvInfo {
        from: addr(1),
        to: addr(2),
        now,
        ecn: Ecn::NotEct,
    };
    let _ = pair.server.recv(&mut late, from_client);
    assert_eq!(pair.server.peer_cid, client_id, "the server stays");

    hand_over(&mut pair.server, &mut pair.client, now);
    let server_id = pair.server.local_cid();
    assert_eq!(pair.client.peer_cid, server_id);
    let mut late = forged_initial(&mut pair.server, client_id, other);
    let from_server = RecvInfo {
        from: addr(2),
        to: addr(1),
        now,
        ecn: Ecn::NotEct,
    };
    let _ = pair.client.recv(&mut late, from_server);
    assert_eq!(pair.client.peer_cid, server_id, "the client stays");
}

/// Runs a handshake whose server announced `tamper`ed parameters; returns
/// the client's transport error code, if it closed with one.
fn client_refusal(tamper: impl FnOnce(&mut Pair)) -> Option<u64> {
    let mut pair = Pair::default();
    tamper(&mut pair);
    pair.run_until(Duration::from_secs(2), &mut deliver_all, |p| {
        p.client.is_closing() || p.client.is_established()
    });
    transport_close_code(&pair.client)
}

#[test]
fn server_parameters_that_misname_the_handshakes_connection_ids_are_refused() {
    // RFC 9000 §7.3: each ID parameter must match the packets, and a
    // missing initial_source_connection_id or
    // original_destination_connection_id is a TRANSPORT_PARAMETER_ERROR;
    // so is a retry_source_connection_id without a Retry.
    let refused = Some(codes::TRANSPORT_PARAMETER_ERROR);
    let other = ConnectionId::new(&[0xee; 8]).unwrap();
    assert_eq!(client_refusal(|_| {}), None, "untouched: no refusal");
    assert_eq!(
        client_refusal(|p| {
            p.server
                .handshake
                .local_params_mut()
                .initial_source_connection_id = Some(other)
        }),
        refused,
        "another initial_source_connection_id"
    );
    assert_eq!(
        client_refusal(|p| {
            p.server
                .handshake
                .local_params_mut()
                .initial_source_connection_id = None
        }),
        refused,
        "no initial_source_connection_id"
    );
    assert_eq!(
        client_refusal(|p| {
            p.server
                .handshake
                .local_params_mut()
                .retry_source_connection_id = Some(other)
        }),
        refused,
        "a Retry that never happened"
    );
    // The server names the destination ID the client's Initials used; a
    // client that chose another (as if the packets were redirected)
    // refuses it.
    assert_eq!(client_refusal(|p| p.client.original_dcid = other), refused);
}

#[test]
fn client_parameters_that_misname_its_source_id_are_refused() {
    // RFC 9000 §7.3, the server's side: the client's
    // initial_source_connection_id must be the source ID of its Initials,
    // and present.
    let server_refusal = |tamper: &dyn Fn(&mut Pair)| {
        let mut pair = Pair::default();
        tamper(&mut pair);
        pair.run_until(Duration::from_secs(2), &mut deliver_all, |p| {
            p.server.is_closing() || p.server.is_established()
        });
        transport_close_code(&pair.server)
    };
    let refused = Some(codes::TRANSPORT_PARAMETER_ERROR);
    assert_eq!(server_refusal(&|_| {}), None);
    // Packets from another source ID than the parameter names.
    assert_eq!(
        server_refusal(&|p| p.client.local_cid = ConnectionId::new(&[0xee; 8]).unwrap()),
        refused
    );
    // No initial_source_connection_id at all: a client hello made anew
    // without it.
    assert_eq!(
        server_refusal(&|p| {
            let mut params = p.client.handshake.local_params_mut().clone();
            params.initial_source_connection_id = None;
            let version = p.client.versions.original();
            p.client.handshake =
                Handshake::new(Side::Client, &p.client.config, addr(2), version, params).unwrap();
        }),
        refused
    );
}

#[test]
fn a_server_announcing_more_than_2_pow_60_streams_is_refused() {
    // RFC 9000 §4.6, §7.4: a stream count above 2^60 in a transport
    // parameter closes the connection with TRANSPORT_PARAMETER_ERROR.
    for bidi in [true, false] {
        let code = client_refusal(|p| {
            let params = p.server.handshake.local_params_mut();
            if bidi {
                params.initial_max_streams_bidi = (1 << 60) + 1;
            } else {
                params.initial_max_streams_uni = (1 << 60) + 1;
            }
        });
        assert_eq!(code, Some(codes::TRANSPORT_PARAMETER_ERROR), "bidi {bidi}");
    }
}

#[test]
fn four_kilobytes_of_crypto_data_out_of_order_are_buffered() {
    // RFC 9000 §7.5: at least 4096 bytes of out-of-order CRYPTO data.
    let mut pair = Pair::default();
    pair.handshake();
    let data = pattern(4096);
    let frames = encoded(&[Frame::Crypto {
        offset: 20_000,
        data: &data,
    }]);
    server_sends_forged(&mut pair, &frames[..]);
    assert!(
        !pair.client.is_closing(),
        "{:?}",
        pair.client.close_reason()
    );
}

#[test]
fn crypto_data_beyond_the_buffer_closes_with_crypto_buffer_exceeded() {
    // RFC 9000 §7.5: an endpoint that does not buffer more closes with
    // CRYPTO_BUFFER_EXCEEDED (0x0d), not a TLS alert.
    let mut pair = Pair::default();
    pair.handshake();
    let frames = encoded(&[Frame::Crypto {
        offset: 1 << 30,
        data: b"far ahead",
    }]);
    server_sends_forged(&mut pair, &frames);
    assert_eq!(transport_close_code(&pair.client), Some(0x0d));
}

#[test]
fn a_packet_whose_crypto_data_is_already_held_is_still_acknowledged() {
    // RFC 9000 §7.5: CRYPTO data received before is dropped, but its
    // packet was processed and is acknowledged. The 1-RTT stream of the
    // handshake carries the server's session tickets; their first bytes,
    // sent again (as garbage: only the offset matters), change nothing.
    let server = Config {
        tls: crate::crypto::TlsConfig {
            session_cache: Some(crate::crypto::tls::SessionCache::new(16, true)),
            ..crate::crypto::tls::process_loopback_config()
        },
        ..fixed_size()
    };
    let mut pair = Pair::new(fixed_size(), server);
    pair.handshake();
    pair.run_until(Duration::from_secs(1), &mut deliver_all, |_| false);
    let packet_number = pair.server.spaces[SpaceId::Data].next_packet_number;
    let frames = encoded(&[Frame::Crypto {
        offset: 0,
        data: &[0xaa; 10],
    }]);
    server_sends_forged(&mut pair, &frames);
    assert!(
        !pair.client.is_closing(),
        "{:?}",
        pair.client.close_reason()
    );
    let acks = &pair.client.spaces[SpaceId::Data].acks;
    assert_eq!(acks.largest_received(), Some(packet_number));
    assert!(acks.deadline().is_some(), "an ACK is owed for it");
}

// ---- §8 address validation ------------------------------------------------

#[test]
fn a_client_whose_server_is_silent_repeats_its_initial_in_full_size_datagrams() {
    // RFC 9000 §8.1: without Handshake keys the client's probe timeouts
    // send Initial packets in datagrams of at least 1200 bytes.
    let mut pair = Pair::default();
    let mut sizes = Vec::new();
    pair.run_until(
        Duration::from_secs(5),
        &mut |to_server, _, bytes| {
            if to_server {
                sizes.push(bytes.len());
            }
            PathAction::Drop
        },
        |_| false,
    );
    assert!(sizes.len() >= 3, "probes sent: {sizes:?}");
    assert!(
        sizes.iter().all(|&size| size >= MIN_INITIAL_DATAGRAM),
        "{sizes:?}"
    );
}

#[test]
fn every_byte_of_a_datagram_from_an_unvalidated_client_counts_toward_its_allowance() {
    // RFC 9000 §8.1: the anti-amplification budget counts whole datagrams
    // (padding, coalesced packets), three times over.
    let mut pair = Pair::default();
    let now = pair.now;
    let sizes = hand_over(&mut pair.client, &mut pair.server, now);
    let received: usize = sizes.iter().sum();
    assert!(received >= MIN_INITIAL_DATAGRAM);
    assert!(!pair.server.address_validated);
    assert_eq!(
        pair.server.path.unproven.allowance(pair.server.remote),
        3 * received as u64
    );
    let mut sent = 0;
    let mut buf = vec![0u8; 65_535];
    while let Ok(Some((len, _))) = pair.server.send(&mut buf, now) {
        sent += len;
    }
    assert!(sent <= 3 * received, "{sent} for {received}");
}

#[test]
fn a_small_datagram_with_a_path_challenge_is_answered_at_once_and_only_once() {
    // RFC 9000 §8.2.1: a datagram carrying PATH_CHALLENGE is not dropped
    // for being small; §8.2.2: its data comes back in a PATH_RESPONSE at
    // once (not held for an ACK timer), and one challenge gets one
    // response, which is never repeated, even when it is lost.
    let mut pair = Pair::default();
    pair.handshake();
    pair.run_until(Duration::from_secs(1), &mut deliver_all, |_| false);
    let log = sent_log(&mut pair.client);
    let challenge = [0x5a; 8];
    server_sends_forged(
        &mut pair,
        &encoded(&[Frame::PathChallenge { data: challenge }]),
    );
    let mut buf = vec![0u8; 65_535];
    let (len, _) = pair
        .client
        .send(&mut buf, pair.now)
        .unwrap()
        .expect("the response goes now");
    assert!(len >= MIN_INITIAL_DATAGRAM, "expanded: {len}");
    let responses = |log: &SentLog| {
        log.packets
            .iter()
            .flat_map(|p| p.frames().collect::<Vec<_>>())
            .filter(|f| matches!(f, Frame::PathResponse { data } if *data == challenge))
            .count()
    };
    assert_eq!(responses(&log.lock().unwrap()), 1);
    // That datagram is lost; the client carries on (PTOs, ACKs) without
    // sending the response again.
    let id = pair.client.stream_open_bi().unwrap();
    pair.client.stream_send(id, b"more", true).unwrap();
    pair.run_until(
        Duration::from_secs(3),
        &mut |to_server, _, _| {
            if to_server {
                PathAction::Drop
            } else {
                PathAction::Deliver
            }
        },
        |_| false,
    );
    assert_eq!(responses(&log.lock().unwrap()), 1);
}

// ---- §10 idle timeout, closing and draining --------------------------------

#[test]
fn the_idle_timeout_is_never_shorter_than_three_probe_timeouts() {
    // RFC 9000 §10.1: a 10 ms idle timeout on a 400 ms round trip still
    // gives the peer three PTOs to answer.
    let config = Config {
        idle_timeout: Duration::from_millis(10),
        ..fixed_size()
    };
    let mut pair = Pair::new(config.clone(), config);
    pair.one_way = Duration::from_millis(200);
    pair.handshake();
    let pto = pair.client.recovery.pto_period(SpaceId::Data);
    assert!(pto >= Duration::from_millis(400), "{pto:?}");
    let closed = pair.run_until(
        Duration::from_secs(30),
        &mut |_, _, _| PathAction::Drop,
        |p| p.client.is_closed(),
    );
    assert!(closed);
    assert_eq!(pair.client.close_reason(), Some(&CloseReason::IdleTimeout));
    // The idle timer last restarted at `last_activity` (a packet heard,
    // or the first one sent after it).
    let idle = pair.now - pair.client.last_activity;
    assert!(idle >= 3 * pto, "closed after {idle:?} idle; PTO {pto:?}");
}

#[test]
fn a_draining_connection_sends_nothing_whatever_arrives() {
    // RFC 9000 §10.2.2: once the peer's CONNECTION_CLOSE arrived (or a
    // stateless reset), nothing more is sent.
    let mut pair = Pair::default();
    pair.handshake();
    pair.server.close(7, "bye");
    pair.run_until(Duration::from_millis(100), &mut deliver_all, |p| {
        p.client.is_closed()
    });
    assert!(pair.client.is_closed());
    let sent = pair.client.stats().packets_sent;
    for _ in 0..5 {
        server_sends_forged(&mut pair, &encoded(&[Frame::Ping]));
    }
    let mut buf = vec![0u8; 65_535];
    assert!(matches!(pair.client.send(&mut buf, pair.now), Ok(None)));
    assert_eq!(pair.client.stats().packets_sent, sent);

    let mut pair = Pair::default();
    pair.handshake();
    let now = pair.now;
    pair.client.on_stateless_reset(now);
    let id = pair.client.stream_open_bi();
    assert!(id.is_err(), "closed to the application too");
    assert!(matches!(pair.client.send(&mut buf, now), Ok(None)));
}

#[test]
fn a_closing_connection_answers_at_most_three_times_what_arrives() {
    // RFC 9000 §10.2.1: a closing endpoint answers packets with its
    // CONNECTION_CLOSE without opening them, so an attacker that knows the
    // connection ID and spoofs the peer's address could make it send
    // more than it receives. What it sends in answer stays within three
    // times what arrived, at a slowing rate; packets from another address
    // are not answered.
    let mut pair = Pair::default();
    pair.handshake();
    let log = sent_log(&mut pair.client);
    pair.client.close(1, &"a long reason ".repeat(20));
    let now = pair.now;
    let mut buf = vec![0u8; 65_535];
    let (first, _) = pair.client.send(&mut buf, now).unwrap().expect("the close");
    assert!(first > 200, "the reason went with it: {first} bytes");
    let junk_len = 24;
    let mut junk = vec![0x40u8; junk_len];
    junk[1..9].copy_from_slice(pair.client.local_cid().as_slice());
    let (mut received, mut answered, mut answers) = (0, 0, 0);
    for i in 0..100 {
        let at = now + Duration::from_millis(i);
        let from = if i % 10 == 9 { addr(77) } else { addr(2) };
        let _ = pair.client.recv(
            &mut junk.clone(),
            RecvInfo {
                from,
                to: addr(1),
                now: at,
                ecn: Ecn::NotEct,
            },
        );
        if from == addr(2) {
            received += junk_len;
        }
        while let Ok(Some((len, info))) = pair.client.send(&mut buf, at) {
            assert_eq!(info.to, addr(2));
            answered += len;
            answers += 1;
        }
    }
    assert!(answers > 0, "a peer that missed the close hears it again");
    assert!(
        answered <= 3 * received,
        "answered {answered} bytes to {received}"
    );
    assert!(answers <= 10, "{answers} answers to 90 packets");
    assert_eq!(log.lock().unwrap().packets.len(), answers + 1);
}

#[test]
fn after_confirmation_a_close_leaves_in_a_1rtt_packet_only() {
    // RFC 9000 §10.2.3.
    let mut pair = Pair::default();
    pair.handshake();
    pair.run_until(Duration::from_secs(1), &mut deliver_all, |_| false);
    let log = sent_log(&mut pair.server);
    pair.server.close(3, "done");
    let mut buf = vec![0u8; 65_535];
    pair.server
        .send(&mut buf, pair.now)
        .unwrap()
        .expect("the close");
    let log = log.lock().unwrap();
    assert_eq!(log.packets.len(), 1);
    assert_eq!(log.packets[0].space, SpaceId::Data);
    assert!(log.packets[0].frames().any(|f| matches!(
        f,
        Frame::ConnectionClose {
            application: true,
            error_code: 3,
            ..
        }
    )));
}

#[test]
fn an_application_close_before_confirmation_is_a_transport_error_without_its_reason_in_handshake_packets(
) {
    // RFC 9000 §10.2.3: in Initial and Handshake packets an application's
    // CONNECTION_CLOSE (0x1d) becomes a transport one (0x1c) with
    // APPLICATION_ERROR and no reason phrase; the 1-RTT copy keeps both.
    let mut pair = Pair::default();
    let now = pair.now;
    hand_over(&mut pair.client, &mut pair.server, now);
    assert!(!pair.server.handshake_confirmed);
    let log = sent_log(&mut pair.server);
    pair.server.close(7, "the secret reason");
    hand_over(&mut pair.server, &mut pair.client, now);
    let log = log.lock().unwrap();
    let mut spaces = Vec::new();
    for packet in &log.packets {
        for frame in packet.frames() {
            if let Frame::ConnectionClose {
                application,
                error_code,
                reason,
                ..
            } = frame
            {
                spaces.push(packet.space);
                if packet.space == SpaceId::Data {
                    assert!(application);
                    assert_eq!((error_code, reason), (7, &b"the secret reason"[..]));
                } else {
                    assert!(!application, "{:?}", packet.space);
                    assert_eq!(error_code, codes::APPLICATION_ERROR);
                    assert!(
                        reason.is_empty(),
                        "the reason stays out of {:?}",
                        packet.space
                    );
                }
            }
        }
    }
    assert!(spaces.contains(&SpaceId::Initial), "{spaces:?}");
    assert!(spaces.contains(&SpaceId::Handshake), "{spaces:?}");
}

#[test]
fn path_challenge_data_comes_from_the_connections_entropy() {
    // RFC 9000 §8.2.1: PATH_CHALLENGE data is unpredictable: drawn from
    // the connection's 256 bits of entropy (which the blocking and tokio
    // APIs fill from the operating system), not from its simulation seed,
    // and new for every challenge.
    let challenges = |entropy: [u8; 32]| {
        let server = Config {
            entropy: Some(crate::crypto::Entropy::new(entropy)),
            ..fixed_size()
        };
        let mut pair = Pair::new(fixed_size(), server);
        pair.handshake();
        let dcid = pair.server.path.dcid_on_path.expect("a 1-RTT packet came");
        [9, 10].map(|port| {
            pair.server
                .migrate_to(SocketAddr::new(addr(1).ip(), port), dcid);
            pair.server.path.challenge.expect("a challenge")
        })
    };
    let (a, b) = (challenges([1; 32]), challenges([2; 32]));
    assert_ne!(a[0], a[1], "each challenge new");
    assert_ne!(a[0], b[0], "same seed, other entropy: other data");
}

#[test]
fn a_path_challenge_is_repeated_no_sooner_than_a_probe_timeout() {
    // RFC 9000 §9.4 (RFC 9002 §6.2.1): an unanswered PATH_CHALLENGE goes
    // again no more often than a probe timeout would send a packet.
    let mut pair = Pair::default();
    pair.handshake();
    pair.run_until(Duration::from_secs(1), &mut deliver_all, |_| false);
    let log = sent_log(&mut pair.server);
    let pto = pair.server.recovery.pto_period(SpaceId::Data);
    // The client's packet arrived from a new port (room to answer it
    // plenty of times), and nothing from there comes back.
    let to = SocketAddr::new(addr(1).ip(), 3);
    let keep = pair.server.remote;
    pair.server.path.unproven.on_received(to, 100_000, keep);
    let dcid = pair.server.path.dcid_on_path.expect("a 1-RTT packet came");
    pair.server.migrate_to(to, dcid);
    // The path left is challenged once too (§9.3.3): not a repeat.
    let old_path = pair.server.path.old_path.map(|probe| probe.data);
    pair.run_until(
        Duration::from_secs(2),
        &mut |_, _, _| PathAction::Drop,
        |_| false,
    );
    let log = log.lock().unwrap();
    let sent: Vec<Instant> = log
        .packets
        .iter()
        .filter(|p| {
            p.frames()
                .any(|f| matches!(f, Frame::PathChallenge { data } if Some(data) != old_path))
        })
        .map(|p| p.at)
        .collect();
    assert!(sent.len() >= 3, "challenges sent: {}", sent.len());
    for pair in sent.windows(2) {
        assert!(
            pair[1] - pair[0] >= pto,
            "{:?} apart, PTO {pto:?}",
            pair[1] - pair[0]
        );
    }
}

#[test]
fn a_zero_rtt_client_takes_only_the_limits_from_its_ticket() {
    // RFC 9000 §7.4.1: a client sending 0-RTT uses the stream and data
    // limits remembered with the ticket, but none of ack_delay_exponent,
    // max_ack_delay, the connection ID parameters or the reset token:
    // those are the defaults until the server's new values arrive, and
    // then the new ones. (A sift server announces ack_delay_exponent 0;
    // the default is 3.)
    use crate::crypto::tls::{process_loopback_config, SessionCache, TicketStore};
    let (store, cache) = (TicketStore::new(), SessionCache::new(16, true));
    let tls = process_loopback_config();
    let client = Config {
        tls: crate::crypto::TlsConfig {
            tickets: Some(store.clone()),
            ..tls.clone()
        },
        ..fixed_size()
    };
    let server = Config {
        tls: crate::crypto::TlsConfig {
            session_cache: Some(cache.clone()),
            ..tls
        },
        server_secret: Some(crate::crypto::ServerSecret::new(
            &[4; crate::crypto::SERVER_SECRET_LEN],
        )),
        ..fixed_size()
    };
    let mut first = Pair::new(client.clone(), server.clone());
    first.handshake();
    assert!(
        first.run_until(Duration::from_secs(1), &mut deliver_all, |_| !store
            .is_empty())
    );
    assert_eq!(first.client.peer_ack_delay_exponent, 0);
    assert!(first.client.peer_reset_token().is_some());

    let mut pair = Pair::new(client, server);
    assert!(pair.client.early_data_possible(), "resuming with 0-RTT");
    assert!(
        pair.client.zero_rtt.remembered.is_some(),
        "limits from the ticket"
    );
    let default_exponent = crate::wire::transport_params::DEFAULT_ACK_DELAY_EXPONENT;
    assert_eq!(pair.client.peer_ack_delay_exponent, default_exponent);
    assert_eq!(pair.client.peer_reset_token(), None);
    assert_eq!(pair.client.peer_cid, pair.client.original_dcid);
    // sift's own corruption_notices is optional to store, and not used
    // until the new handshake says both ends offer it.
    assert!(!pair.client.corruption_notices_negotiated());
    pair.handshake();
    assert!(pair.client.is_resumed());
    assert_eq!(
        pair.client.peer_ack_delay_exponent, 0,
        "the server's new value"
    );
    assert!(pair.client.peer_reset_token().is_some());
    assert!(pair.client.corruption_notices_negotiated());
}

#[test]
fn overlapping_crypto_fragments_cannot_make_a_level_hold_more_than_its_buffer() {
    // RFC 9000 §7.5: out-of-order CRYPTO data is buffered up to a limit,
    // then CRYPTO_BUFFER_EXCEEDED. The limit is on the bytes held, not
    // only on how far ahead they reach: a thousand bytes at each of the
    // offsets 1, 2, 3 … all lie within 64 KiB of the start, yet would
    // hold some 64 MB.
    let mut pair = Pair::default();
    let refused = (1..2000u64).find_map(|offset| {
        pair.server
            .handshake
            .on_crypto(Level::Initial, offset, &[0xab; 1000])
            .err()
            .map(|error| (offset, error))
    });
    let (offset, error) = refused.expect("the overlapping fragments were refused");
    assert_eq!(error.error_code(), 0x0d);
    assert!(offset <= 66, "refused only at fragment {offset}");
}

#[test]
fn a_shorter_copy_of_crypto_data_already_held_loses_none_of_it() {
    // A peer may split a retransmission of CRYPTO data differently (QUIC
    // stacks other than sift do): a short copy at the offset of a longer
    // fragment held out of order must not replace it, or the bytes it
    // does not cover, already acknowledged, would never come again.
    let mut pair = Pair::default();
    let (offset, hello) = pair
        .client
        .handshake
        .poll_crypto(Level::Initial, 10_000)
        .expect("the client hello");
    assert_eq!(offset, 0);
    let version = pair.client.versions.original();
    let server = &mut pair.server.handshake;
    server.set_client_original_version(version);
    server.on_crypto(Level::Initial, 10, &hello[10..]).unwrap();
    server
        .on_crypto(Level::Initial, 10, &hello[10..20])
        .unwrap();
    let progress = server.on_crypto(Level::Initial, 0, &hello[..10]).unwrap();
    assert!(progress.peer_params, "the whole hello was read");
}

#[test]
fn a_client_hello_longer_than_the_crypto_buffer_is_refused() {
    // RFC 9000 §7.5, and SECURITY.md's promise: a sift server reads the
    // whole ClientHello before it makes its TLS session, so the hello
    // waits in the Initial level's buffer. One that claims to be 16 MB
    // long is refused once it passes the buffer's 64 KiB, not held whole.
    let mut pair = Pair::default();
    let version = pair.client.versions.original();
    let server = &mut pair.server.handshake;
    server.set_client_original_version(version);
    let mut hello = vec![1, 0xff, 0xff, 0xff];
    hello.resize(1000, 0);
    let refused = (0..200u64).find_map(|chunk| {
        let bytes = if chunk == 0 {
            &hello[..]
        } else {
            &[0; 1000][..]
        };
        server
            .on_crypto(Level::Initial, chunk * 1000, bytes)
            .err()
            .map(|error| (chunk, error))
    });
    let (chunk, error) = refused.expect("the endless hello was refused");
    assert_eq!(error.error_code(), 0x0d);
    assert!(chunk <= 66, "refused only at chunk {chunk}");
}
