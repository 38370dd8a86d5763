//! RFC 9000 §12–§19 and RFC 9002 requirements the requirements map
//! (`docs/requirements.toml`) names, on the two-endpoint harness: packet
//! numbers and frames per space, coalescing, acknowledgements, probes and
//! the rules on frames each side may send.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use super::*;
use crate::endpoint::parse_any_header;
use crate::wire::{parse_frames, QUIC_V1};

/// What a traced connection sent and received, packet by packet.
#[derive(Debug, Default)]
struct PacketLog {
    /// (space, packet number, frames) of each packet sealed.
    sent: Vec<(SpaceId, u64, Vec<u8>)>,
    /// (space, packet number) of each packet accepted.
    received: Vec<(SpaceId, u64)>,
    /// Both, in the order they happened: (sent, space, packet number).
    order: Vec<(bool, SpaceId, u64)>,
}

#[derive(Debug)]
struct PacketLogger(Arc<Mutex<PacketLog>>);

impl crate::trace::Observer for PacketLogger {
    fn event(&mut self, _now: Instant, event: &crate::trace::Event<'_>) {
        use crate::trace::Event;
        let mut log = self.0.lock().unwrap();
        match *event {
            Event::PacketSent {
                space,
                packet_number,
                frames,
                ..
            } => {
                log.sent.push((space, packet_number, frames.to_vec()));
                log.order.push((true, space, packet_number));
            }
            Event::PacketReceived {
                space,
                packet_number,
                ..
            } => {
                log.received.push((space, packet_number));
                log.order.push((false, space, packet_number));
            }
            _ => {}
        }
    }
}

fn logged(conn: &mut Connection) -> Arc<Mutex<PacketLog>> {
    let log = Arc::default();
    conn.set_observer(Box::new(PacketLogger(Arc::clone(&log))));
    log
}

/// (type, destination ID, token length, packet number as sift/1 shows it)
/// of each packet coalesced in `datagram`, as far as their headers parse.
fn packets_of(datagram: &[u8]) -> Vec<(PacketType, ConnectionId, usize, u32)> {
    let mut packets = Vec::new();
    let mut rest = datagram;
    while !rest.is_empty() {
        let Ok(header) = parse_any_header(rest) else {
            break;
        };
        packets.push((
            header.ty,
            header.dcid,
            header.token.len(),
            header.truncated_pn,
        ));
        rest = &rest[header.packet_len.min(rest.len())..];
    }
    packets
}

/// The code of a close this endpoint started.
fn local_close_code(conn: &Connection) -> Option<u64> {
    match conn.close_reason() {
        Some(CloseReason::Local { code, .. }) => Some(*code),
        _ => None,
    }
}

/// A path that keeps the datagrams one way (`to_server`) in `kept` instead
/// of delivering them, and delivers the other way.
fn keeping(
    to_server: bool,
    kept: &Rc<RefCell<Vec<Vec<u8>>>>,
) -> impl FnMut(bool, u64, &[u8]) -> PathAction {
    let kept = Rc::clone(kept);
    move |towards_server, _, bytes| {
        if towards_server == to_server {
            kept.borrow_mut().push(bytes.to_vec());
            PathAction::Drop
        } else {
            PathAction::Deliver
        }
    }
}

/// The server's first datagrams, kept from the client; the client's first
/// flight reached the server.
fn servers_first_flight(pair: &mut Pair) -> Vec<Vec<u8>> {
    let kept = Rc::new(RefCell::new(Vec::new()));
    let mut path = keeping(false, &kept);
    for _ in 0..10 {
        if !kept.borrow().is_empty() {
            break;
        }
        pair.step(&mut path);
    }
    let flight = kept.borrow().clone();
    assert!(!flight.is_empty(), "the server sent nothing");
    flight
}

fn deliver_to_client(pair: &mut Pair, datagram: &mut [u8]) {
    let info = RecvInfo {
        from: addr(2),
        to: addr(1),
        now: pair.now,
        ecn: Ecn::NotEct,
    };
    let _ = pair.client.recv(datagram, info);
}

/// A long-header packet of the server's in `space` (Initial or
/// Handshake) carrying `frames`, sealed with the server's keys and
/// delivered to the client.
fn server_sends_long(pair: &mut Pair, space: SpaceId, frames: &[u8]) {
    let ty = match space {
        SpaceId::Initial => PacketType::Initial,
        _ => PacketType::Handshake,
    };
    let packet_number = pair.server.spaces[space].next_packet_number;
    pair.server.spaces[space].next_packet_number += 1;
    let header = Header {
        ty,
        version: pair.server.versions.current().version(),
        dcid: pair.client.local_cid(),
        scid: pair.server.local_cid(),
        token: &[],
        packet_number,
        payload_len: 0,
        key_phase: false,
    };
    let keys = pair.server.spaces[space]
        .keys
        .as_deref()
        .expect("the server has keys for the space");
    let format = pair.server.versions.current();
    let mut datagram = vec![0; 2000];
    let mut scratch = Vec::new();
    let len = format
        .seal_into(&header, None, frames, keys, &mut scratch, &mut datagram)
        .unwrap();
    datagram.truncate(len);
    deliver_to_client(pair, &mut datagram);
}

/// Runs until nothing is left to deliver and only the idle timer is armed
/// far ahead: the connection is quiet.
fn settle(pair: &mut Pair) {
    pair.run_until(Duration::from_secs(3), &mut deliver_all, |_| false);
}

#[test]
fn every_packet_has_a_new_number_and_at_least_one_frame_its_space_allows() {
    // RFC 9000 §12.3: numbers rise in each space and are never used twice;
    // §12.4: a packet holds at least one frame; §12.5: Initial and
    // Handshake packets carry only PADDING, PING, ACK, CRYPTO and a
    // transport CONNECTION_CLOSE; §13.2.6: an ACK names only packets of its
    // own space; §19.7, §19.15, §19.20: what a client or a server may put
    // in NEW_TOKEN, NEW_CONNECTION_ID and HANDSHAKE_DONE. Through a
    // handshake and a transfer with losses both ways, so retransmissions
    // and probes are among the packets.
    let mut pair = Pair::default();
    let logs = [logged(&mut pair.client), logged(&mut pair.server)];
    // What an endpoint gives a server to pass on (`Endpoint::address_token`).
    pair.server
        .send_new_token(b"a token for the next connection".to_vec());
    let mut lossy = |_: bool, index: u64, _: &[u8]| {
        if index % 5 == 2 {
            PathAction::Drop
        } else {
            PathAction::Deliver
        }
    };
    let done = pair.run_until(Duration::from_secs(20), &mut lossy, |p| {
        p.client.handshake_confirmed && p.server.is_established()
    });
    assert!(done, "no handshake through the lossy path");
    let data = pattern(200_000);
    assert_eq!(transfer(&mut pair, &data, &mut lossy), data);
    assert!(
        pair.client.stats().packets_lost > 0,
        "no retransmission seen"
    );

    let mut seen = Vec::new();
    for (side, log) in [Side::Client, Side::Server].into_iter().zip(&logs) {
        let log = log.lock().unwrap();
        let mut last: [Option<u64>; 3] = [None; 3];
        for (space, packet_number, frames) in &log.sent {
            let previous = last[space.index()].replace(*packet_number);
            assert!(
                previous.is_none_or(|p| p < *packet_number),
                "{space:?} packet {packet_number} after {previous:?}"
            );
            assert!(!frames.is_empty(), "{space:?} packet {packet_number}");
            for frame in parse_frames(frames) {
                let frame = frame.expect("frames we send parse");
                if *space != SpaceId::Data {
                    assert!(
                        matches!(
                            frame,
                            Frame::Padding { .. }
                                | Frame::Ping
                                | Frame::Ack(_)
                                | Frame::Crypto { .. }
                                | Frame::ConnectionClose {
                                    application: false,
                                    ..
                                }
                        ),
                        "{} in a {space:?} packet",
                        frame.name()
                    );
                }
                seen.push((side, frame.name()));
                match frame {
                    // §19.15: Retire Prior To never above the sequence.
                    Frame::NewConnectionId {
                        sequence,
                        retire_prior_to,
                        ..
                    } => assert!(retire_prior_to <= sequence),
                    // §19.7: only a server sends tokens, never empty ones.
                    Frame::NewToken { token } => {
                        assert_eq!(side, Side::Server);
                        assert!(!token.is_empty());
                    }
                    // §19.20: only a server, once its handshake completed,
                    // which takes the client's Finished in a Handshake packet.
                    Frame::HandshakeDone => {
                        assert_eq!(side, Side::Server);
                        let at = log
                            .order
                            .iter()
                            .position(|e| *e == (true, SpaceId::Data, *packet_number))
                            .unwrap();
                        assert!(log.order[..at]
                            .iter()
                            .any(|(sent, space, _)| !sent && *space == SpaceId::Handshake));
                    }
                    _ => {}
                }
                if let Frame::Ack(ack) = frame {
                    for range in ack.ranges.iter() {
                        for acked in range {
                            assert!(
                                log.received.contains(&(*space, acked)),
                                "{space:?} ACK names {acked}, not received in that space"
                            );
                        }
                    }
                }
            }
        }
    }
    for name in ["NEW_CONNECTION_ID", "NEW_TOKEN", "HANDSHAKE_DONE"] {
        assert!(
            seen.contains(&(Side::Server, name)),
            "the server sent no {name}"
        );
    }
}

#[test]
fn a_coalesced_datagram_has_one_destination_and_each_packet_is_processed_and_acknowledged() {
    // RFC 9000 §12.2: the server's first datagram coalesces its Initial and
    // Handshake packets, both to the client's ID; the client processes
    // each and acknowledges each in its own space.
    let mut pair = Pair::default();
    let mut flight = servers_first_flight(&mut pair);
    let first = &mut flight[0];
    let packets = packets_of(first);
    let types: Vec<PacketType> = packets.iter().map(|p| p.0).collect();
    assert_eq!(types, [PacketType::Initial, PacketType::Handshake]);
    assert!(packets.iter().all(|p| p.1 == pair.client.local_cid()));
    let before = pair.client.stats().packets_received;
    deliver_to_client(&mut pair, first);
    assert_eq!(pair.client.stats().packets_received, before + 2);
    for space in [SpaceId::Initial, SpaceId::Handshake] {
        assert_eq!(
            pair.client.spaces[space].acks.largest_received(),
            Some(0),
            "{space:?}"
        );
        assert!(
            pair.client.spaces[space].acks.ack_due(pair.now),
            "{space:?}"
        );
    }
}

#[test]
fn a_coalesced_packet_that_fails_to_open_leaves_the_rest_of_the_datagram_to_be_read() {
    // RFC 9000 §12.2: a packet of a datagram that cannot be decrypted is
    // dropped, and the packets after it are still processed. QUIC v1's
    // Length field is outside the AEAD's reach to damage unseen, so the
    // next packet is found; here a forged Initial goes first.
    let mut pair = Pair::new(versions(&[QUIC_V1]), versions(&[QUIC_V1]));
    let flight = servers_first_flight(&mut pair);
    let mut forged = vec![0xc3];
    forged.extend_from_slice(&QUIC_V1.to_be_bytes());
    for cid in [pair.client.local_cid(), pair.server.local_cid()] {
        forged.push(cid.len() as u8);
        forged.extend_from_slice(cid.as_slice());
    }
    forged.push(0); // no token
    forged.extend_from_slice(&[0x40, 60]); // Length: 60 bytes follow
    forged.extend((0..60u8).map(|i| i.wrapping_mul(37) ^ 0x5a));
    forged.extend_from_slice(&flight[0]);
    deliver_to_client(&mut pair, &mut forged);
    assert!(!pair.client.is_closing());
    assert_eq!(
        pair.client.spaces[SpaceId::Initial].acks.largest_received(),
        Some(0),
        "the server's Initial behind the forged packet was not read"
    );
    assert!(pair.client.spaces[SpaceId::Handshake].keys.is_some());
}

#[test]
fn a_packet_that_fails_authentication_is_neither_acknowledged_nor_taken_for_a_duplicate() {
    // RFC 9000 §12.3: duplicates are recognised only among packets that
    // opened; §13.1: a packet is acknowledged only once it opened and its
    // frames were processed. A damaged copy arrives first, then the
    // genuine packet with the same number.
    let mut pair = Pair::default();
    pair.handshake();
    settle(&mut pair);
    let id = pair.client.stream_open_bi().unwrap();
    pair.client.stream_send(id, b"once", true).unwrap();
    let kept = Rc::new(RefCell::new(Vec::new()));
    pair.flush(&mut keeping(true, &kept));
    let mut genuine = kept.borrow()[0].clone();
    let mut damaged = genuine.clone();
    let at = damaged.len() - 3;
    damaged[at] ^= 0x10;
    let info = RecvInfo {
        from: addr(1),
        to: addr(2),
        now: pair.now,
        ecn: Ecn::NotEct,
    };
    let largest_before = pair.server.spaces[SpaceId::Data].acks.largest_received();
    let received_before = pair.server.stats().packets_received;
    pair.server.recv(&mut damaged, info).unwrap();
    assert_eq!(pair.server.stats().packets_received, received_before);
    assert_eq!(
        pair.server.spaces[SpaceId::Data].acks.largest_received(),
        largest_before,
        "a packet that did not open is not acknowledged"
    );
    pair.server.recv(&mut genuine, info).unwrap();
    assert_eq!(pair.server.stats().packets_received, received_before + 1);
    assert_eq!(pair.server.counters.duplicate_packets, 0);
    let mut buf = [0u8; 16];
    let stream = pair.server.readable()[0];
    assert_eq!(
        pair.server.stream_recv(stream, &mut buf).unwrap(),
        (4, true)
    );
}

#[test]
fn frames_an_initial_or_handshake_packet_may_not_carry_are_protocol_violations() {
    // RFC 9000 §12.4, §12.5, §17.2.4: Initial and Handshake packets carry
    // only PADDING, PING, ACK, CRYPTO and a transport CONNECTION_CLOSE.
    fn frames(frame: Frame<'_>) -> Vec<u8> {
        let mut out = Vec::new();
        frame.encode(&mut out);
        out
    }
    let forbidden = [
        (SpaceId::Initial, frames(Frame::MaxData(1 << 20))),
        (
            SpaceId::Initial,
            frames(Frame::ConnectionClose {
                application: true,
                error_code: 7,
                frame_type: 0,
                reason: b"",
            }),
        ),
        (SpaceId::Handshake, frames(Frame::HandshakeDone)),
        (
            SpaceId::Handshake,
            frames(Frame::Stream {
                id: 1,
                offset: 0,
                data: b"early",
                fin: false,
            }),
        ),
    ];
    for (space, frames) in forbidden {
        let mut pair = Pair::default();
        // The client's later datagrams are lost, so the server keeps its
        // Handshake keys, and the client gets its own from the first flight.
        let mut first_only = |to_server: bool, index: u64, _: &[u8]| {
            if to_server && index > 1 {
                PathAction::Drop
            } else {
                PathAction::Deliver
            }
        };
        let ready = pair.run_until(Duration::from_secs(1), &mut first_only, |p| {
            p.client.spaces[SpaceId::Handshake].keys.is_some()
        });
        assert!(ready);
        server_sends_long(&mut pair, space, &frames);
        assert_eq!(
            local_close_code(&pair.client),
            Some(codes::PROTOCOL_VIOLATION),
            "{space:?} {frames:?}"
        );
    }
}

#[test]
fn an_unknown_frame_type_an_ack_below_zero_or_an_empty_token_is_a_frame_encoding_error() {
    // RFC 9000 §12.4 (unknown type), §19.3.1 (a range below packet 0),
    // §19.7 (an empty NEW_TOKEN).
    let undecodable: [&[u8]; 3] = [
        &[0x21],
        // ACK: largest 5, delay 0, no more ranges, first range 6.
        &[0x02, 5, 0, 0, 6],
        &[0x07, 0],
    ];
    for frames in undecodable {
        let mut pair = Pair::default();
        pair.handshake();
        server_sends_forged(&mut pair, frames);
        assert_eq!(
            local_close_code(&pair.client),
            Some(codes::FRAME_ENCODING_ERROR),
            "{frames:?}"
        );
    }
}

#[test]
fn an_ack_of_a_packet_never_sent_is_a_protocol_violation() {
    // RFC 9000 §13.1: an endpoint that can tell treats an acknowledgement
    // of a packet it did not send as PROTOCOL_VIOLATION (an optimistic ACK).
    let mut pair = Pair::default();
    pair.handshake();
    let next = pair.client.spaces[SpaceId::Data].next_packet_number;
    let mut acked = RangeSet::default();
    acked.insert(next + 10..next + 11);
    let mut frames = Vec::new();
    encode_ack(&acked, 0, 16, &mut frames);
    server_sends_forged(&mut pair, &frames);
    assert_eq!(
        local_close_code(&pair.client),
        Some(codes::PROTOCOL_VIOLATION)
    );
}

#[test]
fn one_ack_eliciting_packet_draws_one_ack_only_packet_which_draws_nothing() {
    // RFC 9000 §13.2.1: an ack-eliciting packet is acknowledged within
    // max_ack_delay, by at most one ACK-only packet; that packet elicits
    // nothing, and the peer sends nothing in answer to it.
    let mut pair = Pair::default();
    pair.handshake();
    settle(&mut pair);
    let log = logged(&mut pair.client);
    let sent_before = log.lock().unwrap().sent.len();
    server_sends_forged(&mut pair, &[0x01]); // PING
    let kept = Rc::new(RefCell::new(Vec::new()));
    let mut path = keeping(true, &kept);
    pair.run_until(Duration::from_secs(2), &mut path, |_| false);
    let answers = kept.borrow().clone();
    assert_eq!(answers.len(), 1, "one ACK for one PING");
    let log = log.lock().unwrap();
    let (space, _, frames) = &log.sent[sent_before];
    assert_eq!(*space, SpaceId::Data);
    assert!(parse_frames(frames).all(|f| matches!(f, Ok(Frame::Ack(_)))));
    drop(log);
    // Delivered, the ACK-only packet draws nothing from the server.
    let mut ack_only = answers[0].clone();
    let info = RecvInfo {
        from: addr(1),
        to: addr(2),
        now: pair.now,
        ecn: Ecn::NotEct,
    };
    pair.server.recv(&mut ack_only, info).unwrap();
    let mut buf = vec![0u8; 2048];
    for _ in 0..100 {
        assert!(pair.server.send(&mut buf, pair.now).unwrap().is_none());
        pair.now += Duration::from_millis(10);
        pair.server.on_timeout(pair.now);
    }
}

#[test]
fn the_ack_delay_field_reports_how_long_we_held_the_ack() {
    // RFC 9000 §13.2.5: ACK Delay is the time between the largest packet's
    // arrival and the ACK's departure, our own delay and nothing else; in
    // µs, our ack_delay_exponent being 0.
    assert_eq!(
        Pair::default()
            .client
            .handshake
            .local_params_mut()
            .ack_delay_exponent,
        0
    );
    let t0 = Instant::now();
    let mut acks = AckState::new(Duration::from_millis(25));
    acks.on_packet_received(0, true, t0);
    acks.on_packet_received(1, false, t0 + Duration::from_millis(3));
    let mut out = Vec::new();
    acks.write(t0 + Duration::from_millis(10), false, None, &mut out);
    match parse_frames(&out).next() {
        Some(Ok(Frame::Ack(ack))) => {
            assert_eq!(ack.ranges.largest(), 1);
            assert_eq!(ack.ack_delay_micros, 7_000);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_ack_with_ecn_counts_acknowledges_like_an_ack() {
    // RFC 9000 §19.3: both ACK types are handled: an ACK_ECN frame
    // acknowledges as a plain ACK does (its counts are `conn::ecn`'s).
    let mut pair = Pair::default();
    pair.handshake();
    settle(&mut pair);
    let id = pair.client.stream_open_bi().unwrap();
    pair.client.stream_send(id, b"ping", true).unwrap();
    let kept = Rc::new(RefCell::new(Vec::new()));
    pair.flush(&mut keeping(true, &kept));
    assert!(pair.client.recovery.bytes_in_flight() > 0);
    let largest = pair.client.spaces[SpaceId::Data].next_packet_number - 1;
    let mut frames = Vec::new();
    // ACK_ECN: largest, delay 0, no gaps, first range 0, ECT0 3, ECT1 0, CE 1.
    crate::wire::put_varint(&mut frames, 0x03);
    crate::wire::put_varint(&mut frames, largest);
    frames.extend_from_slice(&[0, 0, 0, 3, 0, 1]);
    server_sends_forged(&mut pair, &frames);
    assert!(!pair.client.is_closing());
    assert_eq!(pair.client.recovery.bytes_in_flight(), 0);
}

#[test]
fn outdated_credit_frames_are_accepted_and_change_nothing() {
    // RFC 9000 §13.3: a MAX_DATA smaller than one already received is
    // accepted (frames are resent and arrive out of order); §19.11: a
    // MAX_STREAMS that does not raise the limit is ignored. (That credit
    // never shrinks: `stream::flow` send_credit_reports_each_blocking_limit_once.)
    let mut pair = Pair::default();
    pair.handshake();
    let now = pair.now;
    for frame in [
        Frame::MaxData(1),
        Frame::MaxStreams { bidi: true, max: 1 },
        Frame::MaxStreams {
            bidi: false,
            max: 0,
        },
    ] {
        assert!(pair.client.process_frame(SpaceId::Data, frame, now).is_ok());
    }
    assert!(!pair.client.is_closing());
    for _ in 0..3 {
        assert!(pair.client.stream_open_bi().is_ok());
    }
    assert!(pair.client.stream_open_uni().is_ok());
}

#[test]
fn a_lost_handshake_done_is_sent_again_until_acknowledged() {
    // RFC 9000 §13.3: HANDSHAKE_DONE is resent until acknowledged. Every
    // server datagram that carries one is lost, twice.
    let mut pair = Pair::default();
    let server_log = logged(&mut pair.server);
    let mut lost = 0;
    let mut path = |to_server: bool, _: u64, _: &[u8]| {
        let carries = !to_server
            && server_log
                .lock()
                .unwrap()
                .sent
                .last()
                .is_some_and(|(_, _, frames)| {
                    parse_frames(frames).any(|f| matches!(f, Ok(Frame::HandshakeDone)))
                });
        if carries && lost < 2 {
            lost += 1;
            PathAction::Drop
        } else {
            PathAction::Deliver
        }
    };
    let confirmed = pair.run_until(Duration::from_secs(10), &mut path, |p| {
        p.client.handshake_confirmed
    });
    assert!(confirmed);
    assert_eq!(lost, 2);
    let sent = server_log.lock().unwrap();
    let carrying = sent
        .sent
        .iter()
        .filter(|(_, _, frames)| {
            parse_frames(frames).any(|f| matches!(f, Ok(Frame::HandshakeDone)))
        })
        .count();
    assert_eq!(carrying, 3);
}

#[test]
fn frames_only_a_server_sends_are_protocol_violations_from_a_client() {
    // RFC 9000 §19.7 (NEW_TOKEN), §19.20 (HANDSHAKE_DONE).
    let mut pair = Pair::default();
    pair.handshake();
    let now = pair.now;
    for frame in [Frame::NewToken { token: b"t" }, Frame::HandshakeDone] {
        let error = pair
            .server
            .process_frame(SpaceId::Data, frame, now)
            .unwrap_err();
        assert_eq!(error.code, codes::PROTOCOL_VIOLATION);
    }
    // And a client never sends one: only a server has tokens to give.
    pair.client.send_new_token(b"token".to_vec());
    assert!(pair.client.tokens.new_token_out.is_none());
}

#[test]
fn a_client_sends_no_server_only_transport_parameter_and_a_server_refuses_each() {
    // RFC 9000 §18.2: original_destination_connection_id, preferred_address,
    // retry_source_connection_id and stateless_reset_token are a server's;
    // a client's carry none, and a server refuses each.
    use super::super::recv::has_server_only_params;
    use crate::wire::TransportParams;
    let mut pair = Pair::default();
    assert!(!has_server_only_params(
        pair.client.handshake.local_params_mut()
    ));
    let cid = ConnectionId::new(&[7; 8]).unwrap();
    for params in [
        TransportParams {
            original_destination_connection_id: Some(cid),
            ..TransportParams::default()
        },
        TransportParams {
            retry_source_connection_id: Some(cid),
            ..TransportParams::default()
        },
        TransportParams {
            stateless_reset_token: Some([1; 16]),
            ..TransportParams::default()
        },
        TransportParams {
            preferred_address: Some(crate::wire::PreferredAddress {
                ipv4: None,
                ipv6: None,
                connection_id: cid,
                reset_token: [2; 16],
            }),
            ..TransportParams::default()
        },
    ] {
        assert!(has_server_only_params(&params), "{params:?}");
    }
}

#[test]
fn an_active_connection_id_limit_below_two_is_a_transport_parameter_error() {
    // RFC 9000 §18.2: the peer must allow at least two IDs.
    let mut pair = Pair::default();
    pair.server
        .handshake
        .local_params_mut()
        .active_connection_id_limit = 1;
    pair.run_until(Duration::from_secs(2), &mut deliver_all, |p| {
        p.client.is_closing()
    });
    assert_eq!(
        local_close_code(&pair.client),
        Some(codes::TRANSPORT_PARAMETER_ERROR)
    );
}

#[test]
fn a_server_initial_carries_no_token() {
    // RFC 9000 §17.2.2: only a client's Initials carry a token.
    let mut pair = Pair::default();
    let flight = servers_first_flight(&mut pair);
    let initials: Vec<usize> = flight
        .iter()
        .flat_map(|datagram| packets_of(datagram))
        .filter(|p| p.0 == PacketType::Initial)
        .map(|p| p.2)
        .collect();
    assert!(!initials.is_empty());
    assert!(initials.iter().all(|&len| len == 0), "{initials:?}");
}

#[test]
fn a_small_datagram_with_an_initial_does_not_close_the_server() {
    // RFC 9000 §14: a datagram under the size rules is at most dropped,
    // never a reason to close.
    let mut pair = Pair::default();
    servers_first_flight(&mut pair);
    let mut frames = Vec::new();
    Frame::Ping.encode(&mut frames);
    let header = Header {
        ty: PacketType::Initial,
        version: pair.client.versions.current().version(),
        dcid: pair.client.peer_cid,
        scid: pair.client.local_cid(),
        token: &[],
        packet_number: pair.client.spaces[SpaceId::Initial].next_packet_number,
        payload_len: 0,
        key_phase: false,
    };
    let keys = pair.client.spaces[SpaceId::Initial]
        .keys
        .as_deref()
        .unwrap();
    let format = pair.client.versions.current();
    let mut datagram = vec![0; 2000];
    let len = format
        .seal_into(&header, None, &frames, keys, &mut Vec::new(), &mut datagram)
        .unwrap();
    datagram.truncate(len);
    assert!(datagram.len() < MIN_INITIAL_DATAGRAM);
    let info = RecvInfo {
        from: addr(1),
        to: addr(2),
        now: pair.now,
        ecn: Ecn::NotEct,
    };
    pair.server.recv(&mut datagram, info).unwrap();
    assert!(!pair.server.is_closing());
}

#[test]
fn packet_numbers_run_out_in_a_silent_close() {
    // RFC 9000 §12.3: a sender that reaches the last packet number closes
    // without a CONNECTION_CLOSE or any other packet.
    let mut pair = Pair::default();
    pair.handshake();
    settle(&mut pair);
    pair.client.spaces[SpaceId::Data].next_packet_number = crate::wire::VARINT_MAX - 1;
    let id = pair.client.stream_open_bi().unwrap();
    pair.client.stream_send(id, b"one more", true).unwrap();
    let mut buf = vec![0u8; 2048];
    assert!(pair.client.send(&mut buf, pair.now).unwrap().is_none());
    assert!(pair.client.is_closed(), "{:?}", pair.client.state);
    let mut sent = 0;
    pair.run_until(
        Duration::from_secs(5),
        &mut |to_server, _, _| {
            sent += usize::from(to_server);
            PathAction::Deliver
        },
        |_| false,
    );
    assert_eq!(sent, 0);
}

#[test]
fn a_server_held_by_the_amplification_limit_arms_no_probe_timer() {
    // RFC 9002 §6.2.2.1: a server that may not send more before the client
    // speaks again does not arm its PTO: each firing would only back off.
    let mut pair = Pair::default();
    let mut first_only = |to_server: bool, index: u64, _: &[u8]| {
        if to_server && index == 1 {
            PathAction::Deliver
        } else {
            PathAction::Drop
        }
    };
    let mut blocked_at_ptos = None;
    let deadline = pair.now + Duration::from_secs(60);
    while pair.now < deadline && pair.step_before(&mut first_only, Some(deadline)) {
        let server = &pair.server;
        if server.stats().bytes_received > 0 && server.amplification_blocked() {
            blocked_at_ptos.get_or_insert(server.stats().ptos);
        }
    }
    let blocked_at = blocked_at_ptos.expect("the server used up its allowance");
    assert_eq!(pair.server.stats().ptos, blocked_at);
}

#[test]
fn a_probe_leaves_a_full_window_is_ack_eliciting_and_counts_in_flight() {
    // RFC 9002 §6.2.4: a PTO sends an ack-eliciting probe in its space;
    // §7.5: the window does not hold it back, and it counts in flight.
    let mut pair = Pair::default();
    pair.handshake();
    settle(&mut pair);
    let id = pair.client.stream_open_bi().unwrap();
    pair.client
        .stream_send(id, &pattern(1_000_000), true)
        .unwrap();
    let mut drop_to_server = |to_server: bool, _: u64, _: &[u8]| {
        if to_server {
            PathAction::Drop
        } else {
            PathAction::Deliver
        }
    };
    let probed = pair.run_until(Duration::from_secs(5), &mut drop_to_server, |p| {
        p.client.stats().ptos > 0 && p.client.spaces[SpaceId::Data].probes == 0
    });
    assert!(probed, "no probe went out");
    let stats = pair.client.stats();
    assert!(
        stats.bytes_in_flight > stats.cwnd,
        "{} in flight, window {}",
        stats.bytes_in_flight,
        stats.cwnd
    );
    let newest = pair
        .client
        .recovery
        .outstanding(SpaceId::Data)
        .last()
        .unwrap();
    assert!(newest.ack_eliciting);
}

#[test]
fn a_client_probes_with_a_full_size_initial_and_then_in_the_handshake_space() {
    // RFC 9002 §6.2.2.1: a client's probe is an Initial in a datagram of at
    // least 1200 bytes while it has no Handshake keys, a Handshake packet
    // once it has them.
    let mut pair = Pair::default();
    let kept = Rc::new(RefCell::new(Vec::new()));
    pair.run_until(Duration::from_secs(2), &mut keeping(true, &kept), |_| false);
    assert!(pair.client.stats().ptos >= 1);
    let sizes: Vec<usize> = kept.borrow().iter().map(Vec::len).collect();
    assert!(sizes.len() >= 2, "{sizes:?}");
    assert!(
        sizes.iter().all(|&len| len >= MIN_INITIAL_DATAGRAM),
        "{sizes:?}"
    );

    // Now with Handshake keys: the server's flight arrives, nothing of the
    // client's reaches the server after its first datagram.
    let mut pair = Pair::default();
    let log = logged(&mut pair.client);
    let mut first_only = |to_server: bool, index: u64, _: &[u8]| {
        if to_server && index > 1 {
            PathAction::Drop
        } else {
            PathAction::Deliver
        }
    };
    let got_keys = pair.run_until(Duration::from_secs(1), &mut first_only, |p| {
        p.client.spaces[SpaceId::Handshake].keys.is_some()
    });
    assert!(got_keys);
    let ptos = pair.client.stats().ptos;
    let before = log.lock().unwrap().sent.len();
    pair.run_until(Duration::from_secs(3), &mut first_only, |p| {
        p.client.stats().ptos > ptos
    });
    assert!(pair.client.stats().ptos > ptos);
    pair.flush(&mut first_only);
    let log = log.lock().unwrap();
    let probes: Vec<&(SpaceId, u64, Vec<u8>)> = log.sent[before..].iter().collect();
    assert!(
        probes
            .iter()
            .any(|(space, _, frames)| *space == SpaceId::Handshake
                && parse_frames(frames).flatten().any(|f| f.is_ack_eliciting())),
        "no ack-eliciting Handshake probe: {probes:?}"
    );
}

/// A QUIC v1 packet of the server's in `space` (Handshake or 1-RTT) with
/// `reserved` set in its first byte before protection, sealed with the
/// server's keys and delivered to the client.
fn server_sends_reserved_bits(pair: &mut Pair, space: SpaceId, reserved: u8) {
    let packet_number = pair.server.spaces[space].next_packet_number;
    pair.server.spaces[space].next_packet_number += 1;
    let header = Header {
        ty: if space == SpaceId::Data {
            PacketType::OneRtt
        } else {
            PacketType::Handshake
        },
        version: QUIC_V1,
        dcid: pair.client.local_cid(),
        scid: pair.server.local_cid(),
        token: &[],
        packet_number,
        payload_len: 0,
        key_phase: space == SpaceId::Data && pair.server.key_phases.phase,
    };
    let keys = pair.server.spaces[space].keys.as_deref().unwrap();
    let tag_len = keys.payload_tag_len();
    let mut packet = Vec::new();
    let pn_len = 4;
    let pn_offset = crate::wire::encode_quic_header(&header, pn_len, 24 + tag_len, &mut packet);
    packet[0] |= reserved;
    let header_len = packet.len();
    packet.push(0x01); // PING, then PADDING
    packet.resize(header_len + 24 + tag_len, 0);
    keys.seal_payload(packet_number, header_len, &mut packet)
        .unwrap();
    let sample: Vec<u8> = packet[pn_offset + 4..pn_offset + 20].to_vec();
    let (first, rest) = packet.split_first_mut().unwrap();
    keys.protect_header(
        &sample,
        first,
        &mut rest[pn_offset - 1..pn_offset - 1 + pn_len],
    )
    .unwrap();
    deliver_to_client(pair, &mut packet);
}

#[test]
fn reserved_bits_set_in_a_packet_that_opens_are_a_protocol_violation() {
    // RFC 9000 §17.2, §17.3.1: reserved bits are sent as 0 (the round trip
    // of every header in `wire::quic` shows it); a packet that opens with
    // either set, once both protections are off, is a PROTOCOL_VIOLATION.
    // Long headers (0x0c) in a Handshake packet, short ones (0x18) in 1-RTT.
    for (space, reserved) in [
        (SpaceId::Handshake, 0x00),
        (SpaceId::Handshake, 0x08),
        (SpaceId::Handshake, 0x04),
        (SpaceId::Data, 0x00),
        (SpaceId::Data, 0x08),
        (SpaceId::Data, 0x10),
    ] {
        let mut pair = Pair::new(versions(&[QUIC_V1]), versions(&[QUIC_V1]));
        if space == SpaceId::Data {
            pair.handshake();
        } else {
            // The server keeps its Handshake keys: the client's Finished
            // never reaches it.
            let mut first_only = |to_server: bool, index: u64, _: &[u8]| {
                if to_server && index > 1 {
                    PathAction::Drop
                } else {
                    PathAction::Deliver
                }
            };
            let ready = pair.run_until(Duration::from_secs(1), &mut first_only, |p| {
                p.client.spaces[SpaceId::Handshake].keys.is_some()
            });
            assert!(ready);
        }
        let received = pair.client.stats().packets_received;
        server_sends_reserved_bits(&mut pair, space, reserved);
        if reserved == 0 {
            // The forged packet itself is sound: it opens and is read.
            assert_eq!(pair.client.stats().packets_received, received + 1);
            assert!(!pair.client.is_closing());
        } else {
            assert_eq!(
                local_close_code(&pair.client),
                Some(codes::PROTOCOL_VIOLATION),
                "{space:?}, reserved bit {reserved:#04x}"
            );
        }
    }
}

#[test]
fn a_retry_after_the_servers_initial_is_discarded() {
    // RFC 9000 §17.2.5.2: once a client has processed an Initial from the
    // server, a Retry (a late or forged one) is discarded.
    let mut pair = Pair::default();
    let mut flight = servers_first_flight(&mut pair);
    deliver_to_client(&mut pair, &mut flight[0]);
    assert_eq!(
        pair.client.spaces[SpaceId::Initial].acks.largest_received(),
        Some(0)
    );
    let retry = retry_for(&pair, ConnectionId::new(&[0x77; 8]).unwrap(), b"token");
    let retry = crate::wire::parse_retry(&retry).unwrap();
    assert!(!pair.client.on_retry(&retry, pair.now));
    assert!(!pair.client.stats().retried);
}

/// A Retry from the client's server, for the client's first Initial,
/// giving `retry_scid` and `token`.
fn retry_for(pair: &Pair, retry_scid: ConnectionId, token: &[u8]) -> Vec<u8> {
    let version = pair.client.versions.original();
    let mut bytes = Vec::new();
    crate::wire::encode_retry_unsigned(
        &mut bytes,
        version,
        &pair.client.local_cid(),
        &retry_scid,
        token,
    )
    .unwrap();
    let tag = crate::crypto::retry::integrity_tag(
        version,
        pair.client.config.protection == Protection::Null,
        pair.client.original_dcid.as_slice(),
        &bytes,
    );
    bytes.extend_from_slice(&tag);
    bytes
}

/// The CRYPTO frames' (offset, data) of the client's Initial packets,
/// each packet's in turn.
fn initial_crypto(log: &PacketLog) -> Vec<Vec<(u64, Vec<u8>)>> {
    log.sent
        .iter()
        .filter(|(space, _, _)| *space == SpaceId::Initial)
        .map(|(_, _, frames)| {
            parse_frames(frames)
                .flatten()
                .filter_map(|frame| match frame {
                    Frame::Crypto { offset, data } => Some((offset, data.to_vec())),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

#[test]
fn after_a_retry_the_client_keeps_its_id_its_packet_numbers_and_its_client_hello() {
    // RFC 9000 §17.2.5.1: a Retry whose source ID is the client's first
    // destination is discarded; the client sends to the Retry's source ID
    // from then on. §17.2.5.2: it keeps its own source ID. §17.2.5.3: it
    // sends the same ClientHello again, and its packet numbers go on.
    let mut pair = Pair::default();
    let log = logged(&mut pair.client);
    let kept = Rc::new(RefCell::new(Vec::new()));
    pair.flush(&mut keeping(true, &kept));
    assert_eq!(kept.borrow().len(), 1);
    let scid = pair.client.local_cid();
    let original_dcid = pair.client.original_dcid;

    let same_id = retry_for(&pair, original_dcid, b"token");
    let same_id = crate::wire::parse_retry(&same_id).unwrap();
    assert!(!pair.client.on_retry(&same_id, pair.now));

    let retry_scid = ConnectionId::new(&[0x77; 8]).unwrap();
    let retry = retry_for(&pair, retry_scid, b"token");
    let retry = crate::wire::parse_retry(&retry).unwrap();
    assert!(pair.client.on_retry(&retry, pair.now));
    assert!(!pair.client.on_retry(&retry, pair.now), "one Retry only");
    pair.flush(&mut keeping(true, &kept));
    let datagrams = kept.borrow().clone();
    assert_eq!(datagrams.len(), 2);
    let again = parse_any_header(&datagrams[1]).unwrap();
    assert_eq!(again.dcid, retry_scid);
    assert_eq!(again.scid, scid);
    assert_eq!(again.token, b"token");
    assert_eq!(pair.client.local_cid(), scid);

    let log = log.lock().unwrap();
    let numbers: Vec<u64> = log
        .sent
        .iter()
        .filter(|(space, _, _)| *space == SpaceId::Initial)
        .map(|(_, pn, _)| *pn)
        .collect();
    assert_eq!(numbers, [0, 1], "numbering goes on after the Retry");
    let crypto = initial_crypto(&log);
    assert_eq!(crypto[0], crypto[1], "the same ClientHello");
}

#[test]
fn zero_rtt_packets_carry_no_ack_stop_with_one_rtt_and_are_acknowledged_in_one_rtt() {
    // RFC 9000 §17.2.3: a client's 0-RTT packets carry no ACK (an ACK of a
    // 1-RTT packet goes in a 1-RTT packet), and none leaves once it has
    // processed a 1-RTT packet; §13.2.6: the server acknowledges them in
    // 1-RTT packets, never in 0-RTT ones (it sends none).
    use crate::crypto::tls::{process_loopback_config, SessionCache, TicketStore};
    use crate::crypto::TlsConfig;
    let (store, cache) = (TicketStore::new(), SessionCache::new(16, true));
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
    let mut first = Pair::new(client.clone(), server.clone());
    first.handshake();
    let ticket = first.run_until(Duration::from_secs(1), &mut deliver_all, |_| {
        !store.is_empty()
    });
    assert!(ticket, "no session ticket");

    let mut pair = Pair::new(client, server);
    let client_log = logged(&mut pair.client);
    let server_log = logged(&mut pair.server);
    let id = pair.client.stream_open_bi().unwrap();
    pair.client.mark_replay_safe(id);
    let request = pattern(30_000);
    pair.client.stream_send(id, &request, true).unwrap();
    let wire = Rc::new(RefCell::new(Vec::new()));
    let seen = Rc::clone(&wire);
    let mut record = move |to_server: bool, _: u64, bytes: &[u8]| {
        for (ty, _, _, pn) in packets_of(bytes) {
            seen.borrow_mut().push((to_server, ty, u64::from(pn)));
        }
        PathAction::Deliver
    };
    let done = pair.run_until(Duration::from_secs(5), &mut record, |p| {
        p.client.handshake_confirmed && p.server.stats().zero_rtt_bytes > 0
    });
    assert!(done);
    assert!(pair.client.stats().zero_rtt_accepted);
    let wire = wire.borrow();
    let zero_rtt: Vec<u64> = wire
        .iter()
        .filter(|(to_server, ty, _)| *to_server && *ty == PacketType::ZeroRtt)
        .map(|(_, _, pn)| *pn)
        .collect();
    assert!(zero_rtt.len() >= 2, "{zero_rtt:?}");
    assert!(!wire
        .iter()
        .any(|(to_server, ty, _)| !to_server && *ty == PacketType::ZeroRtt));

    let log = client_log.lock().unwrap();
    for pn in &zero_rtt {
        let (_, _, frames) = log
            .sent
            .iter()
            .find(|(space, number, _)| *space == SpaceId::Data && number == pn)
            .expect("a 0-RTT packet the client sealed");
        assert!(
            !parse_frames(frames).any(|f| matches!(f, Ok(Frame::Ack(_)))),
            "0-RTT packet {pn} carries an ACK"
        );
        let sent_at = log
            .order
            .iter()
            .position(|entry| *entry == (true, SpaceId::Data, *pn))
            .unwrap();
        assert!(
            !log.order[..sent_at]
                .iter()
                .any(|(sent, space, _)| !sent && *space == SpaceId::Data),
            "0-RTT packet {pn} sent after a 1-RTT packet was processed"
        );
    }
    let server_log = server_log.lock().unwrap();
    let acked_in_one_rtt = |pn: u64| {
        server_log.sent.iter().any(|(space, _, frames)| {
            *space == SpaceId::Data
                && parse_frames(frames).flatten().any(|f| match f {
                    Frame::Ack(ack) => ack.ranges.iter().any(|r| r.contains(&pn)),
                    _ => false,
                })
        })
    };
    assert!(zero_rtt.iter().all(|&pn| acked_in_one_rtt(pn)));
}

#[test]
fn a_datagram_size_under_1200_bytes_is_refused() {
    // RFC 9000 §14: QUIC is not used below 1200-byte datagrams. A smaller
    // configured size is an error, not a smaller packet (path MTU
    // discovery never goes below 1200 either: `conn::pmtud`).
    for side in [Side::Client, Side::Server] {
        let config = with_test_tls(Config {
            max_datagram_size: MIN_INITIAL_DATAGRAM - 1,
            ..Config::default()
        });
        let made = match side {
            Side::Client => Connection::connect(config, addr(1), addr(2), Instant::now()),
            Side::Server => Connection::accept(config, addr(2), addr(1), Instant::now()),
        };
        match made {
            Err(Error::InvalidConfig(reason)) => {
                assert!(reason.contains("at least 1200"), "{reason}")
            }
            other => panic!("{side:?}: {:?}", other.map(|_| ())),
        }
    }
}

#[test]
fn a_coalesced_packet_for_another_connection_id_is_ignored() {
    // RFC 9000 §12.2: a packet behind the first in a datagram whose
    // destination ID is not this connection's is not processed, even
    // sealed under keys the connection holds.
    let mut pair = Pair::default();
    let flight = servers_first_flight(&mut pair);
    let mut datagram = flight[0].clone();
    let packets = packets_of(&datagram).len();
    let mut frames = Vec::new();
    Frame::Ping.encode(&mut frames);
    let header = Header {
        ty: PacketType::Initial,
        version: pair.server.versions.current().version(),
        dcid: ConnectionId::new(&[0xee; 8]).unwrap(),
        scid: pair.server.local_cid(),
        token: &[],
        packet_number: 7,
        payload_len: 0,
        key_phase: false,
    };
    let keys = pair.server.spaces[SpaceId::Initial]
        .keys
        .as_deref()
        .unwrap();
    let mut foreign = vec![0; 2000];
    let len = pair
        .server
        .versions
        .current()
        .seal_into(&header, None, &frames, keys, &mut Vec::new(), &mut foreign)
        .unwrap();
    datagram.extend_from_slice(&foreign[..len]);
    let before = pair.client.stats().packets_received;
    deliver_to_client(&mut pair, &mut datagram);
    assert_eq!(
        pair.client.stats().packets_received,
        before + packets as u64,
        "only the packets to the client's own ID"
    );
    assert_eq!(
        pair.client.spaces[SpaceId::Initial].acks.largest_received(),
        Some(0)
    );
}

#[test]
fn an_application_close_before_the_handshake_goes_as_a_transport_application_error() {
    // RFC 9000 §12.5: an application CONNECTION_CLOSE (0x1d) goes only in
    // 1-RTT packets; in an Initial or Handshake packet the close is the
    // transport frame (0x1c) with APPLICATION_ERROR and no reason
    // (§10.2.3), which gives nothing of the application away.
    let mut pair = Pair::default();
    let log = logged(&mut pair.client);
    let kept = Rc::new(RefCell::new(Vec::new()));
    pair.flush(&mut keeping(true, &kept));
    pair.client.close(42, "secret reason");
    pair.flush(&mut keeping(true, &kept));
    let log = log.lock().unwrap();
    let closes: Vec<(SpaceId, bool, u64, Vec<u8>)> = log
        .sent
        .iter()
        .flat_map(|(space, _, frames)| {
            parse_frames(frames)
                .flatten()
                .filter_map(|frame| match frame {
                    Frame::ConnectionClose {
                        application,
                        error_code,
                        reason,
                        ..
                    } => Some((*space, application, error_code, reason.to_vec())),
                    _ => None,
                })
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(
        closes,
        [(SpaceId::Initial, false, codes::APPLICATION_ERROR, vec![])]
    );
}

/// The frame names the client and the server sent over a fast upload
/// with two damaged payloads, a datagram offered on the way, and whether
/// the client could queue that datagram.
fn extension_frames(server: Config) -> (Vec<&'static str>, Vec<&'static str>, bool) {
    let mut pair = Pair::new(fixed_size(), server);
    let logs = [logged(&mut pair.client), logged(&mut pair.server)];
    pair.one_way = Duration::from_micros(50);
    pair.link_rate = Some(125_000_000);
    pair.handshake();
    let datagram = pair.client.send_datagram(b"unreliable").is_ok();
    let data = pattern(2_000_000);
    let mut damaged = damage_first_data(2, PathAction::DamagePayload);
    assert_eq!(transfer(&mut pair, &data, &mut damaged), data);
    let [client, server] = logs.map(|log| {
        let log = log.lock().unwrap();
        let mut names: Vec<&'static str> = log
            .sent
            .iter()
            .flat_map(|(_, _, frames)| {
                parse_frames(frames)
                    .flatten()
                    .map(|frame| frame.name())
                    .collect::<Vec<_>>()
            })
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    });
    (client, server, datagram)
}

#[test]
fn extension_frames_go_only_to_a_peer_that_offered_them() {
    // RFC 9000 §19.21: an extension frame is sent only once the peer has
    // said it understands it: CORRUPTED (corruption_notices), ACK_FREQUENCY
    // and IMMEDIATE_ACK (min_ack_delay), DATAGRAM (max_datagram_frame_size).
    let (client, server, datagram) = extension_frames(fixed_size());
    for name in ["ACK_FREQUENCY", "DATAGRAM"] {
        assert!(client.contains(&name), "with an offering peer: {client:?}");
    }
    assert!(server.contains(&"CORRUPTED"), "{server:?}");
    assert!(datagram);

    let refusing = Config {
        corruption_notices: false,
        ack_frequency: false,
        max_datagram_frame_size: None,
        ..fixed_size()
    };
    let (client, server, datagram) = extension_frames(refusing);
    for name in ["CORRUPTED", "ACK_FREQUENCY", "IMMEDIATE_ACK", "DATAGRAM"] {
        assert!(!client.contains(&name), "{name}: {client:?}");
        assert!(!server.contains(&name), "{name}: {server:?}");
    }
    assert!(!datagram);
}
