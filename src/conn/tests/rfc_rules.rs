//! RFC 9000 and RFC 9001 requirements of the handshake and of packet
//! protection, one test each, on the two-endpoint harness: what a server
//! does with 1-RTT packets before its handshake completes (RFC 9001 §5.7),
//! which source IDs each side accepts after the other's first Initial
//! (RFC 9000 §7.2), the 1200-byte floor for Initials both ways (§14.1),
//! and the confidentiality limit without a key update (RFC 9001 §6.6).

use super::*;
use crate::crypto::format::for_version;
use crate::crypto::{PacketFormat, PacketProtection};

/// The long-header packets at the start of `datagram`, and the
/// short-header packet after them (empty if there is none).
fn split_long_headers(datagram: &[u8]) -> (&[u8], &[u8]) {
    let mut offset = 0;
    while datagram.get(offset).is_some_and(|first| first & 0x80 != 0) {
        let packet = &datagram[offset..];
        let version = u32::from_be_bytes(packet[1..5].try_into().unwrap());
        let format = for_version(version).expect("a version sift speaks");
        offset += format
            .parse(packet)
            .expect("a whole long header")
            .packet_len;
    }
    datagram.split_at(offset)
}

/// Whether `datagram` carries an Initial packet.
fn carries_initial(datagram: &[u8]) -> bool {
    let (long, _) = split_long_headers(datagram);
    let mut rest = long;
    while !rest.is_empty() {
        let version = u32::from_be_bytes(rest[1..5].try_into().unwrap());
        let parsed = for_version(version).unwrap().parse(rest).unwrap();
        if parsed.ty == PacketType::Initial {
            return true;
        }
        rest = &rest[parsed.packet_len..];
    }
    false
}

/// Everything `conn` sends now, datagram by datagram.
fn drain_datagrams(conn: &mut Connection, now: Instant) -> Vec<Vec<u8>> {
    let mut buf = vec![0u8; 65_535];
    let mut sent = Vec::new();
    while let Ok(Some((len, _))) = conn.send(&mut buf, now) {
        sent.push(buf[..len].to_vec());
    }
    sent
}

fn to_server(now: Instant) -> RecvInfo {
    RecvInfo {
        from: addr(1),
        to: addr(2),
        now,
        ecn: Ecn::NotEct,
    }
}

fn to_client(now: Instant) -> RecvInfo {
    RecvInfo {
        from: addr(2),
        to: addr(1),
        now,
        ecn: Ecn::NotEct,
    }
}

/// A transport CONNECTION_CLOSE: what a forger would send to end a
/// handshake.
fn close_frame() -> Vec<u8> {
    let mut frames = Vec::new();
    Frame::ConnectionClose {
        application: false,
        error_code: codes::PROTOCOL_VIOLATION,
        frame_type: 0,
        reason: b"forged",
    }
    .encode(&mut frames);
    frames
}

/// `frames` sealed in one Initial of `format` under `keys`, unpadded.
fn initial_packet(
    format: &dyn PacketFormat,
    keys: &dyn PacketProtection,
    dcid: ConnectionId,
    scid: ConnectionId,
    packet_number: u64,
    frames: &[u8],
) -> Vec<u8> {
    let header = Header {
        ty: PacketType::Initial,
        version: format.version(),
        dcid,
        scid,
        token: &[],
        packet_number,
        payload_len: 0,
        key_phase: false,
    };
    let mut datagram = vec![0u8; 2000];
    let len = format
        .seal_into(&header, None, frames, keys, &mut Vec::new(), &mut datagram)
        .unwrap();
    datagram.truncate(len);
    datagram
}

#[test]
fn a_server_holds_one_rtt_packets_until_its_handshake_completes() {
    let mut pair = Pair::default();
    // Until the client completes: its Finished is queued, not yet sent.
    assert!(
        pair.run_until(Duration::from_secs(5), &mut deliver_all, |p| {
            p.client.is_established()
        })
    );
    assert!(!pair.server.is_established());
    let id = pair.client.stream_open_bi().unwrap();
    pair.client.stream_send(id, b"early request", true).unwrap();
    let mut finished = Vec::new();
    let mut one_rtt = Vec::new();
    for datagram in drain_datagrams(&mut pair.client, pair.now) {
        let (long, short) = split_long_headers(&datagram);
        finished.push(long.to_vec());
        one_rtt.push(short.to_vec());
    }
    one_rtt.retain(|packet| !packet.is_empty());
    assert!(!one_rtt.is_empty(), "the request rides in a 1-RTT packet");

    // The 1-RTT packets overtake the client's Finished: RFC 9001 §5.7,
    // not read (nor acknowledged) before the handshake completes.
    for packet in &mut one_rtt {
        pair.server.recv(packet, to_server(pair.now)).unwrap();
    }
    assert!(
        pair.server.readable().is_empty(),
        "the server acted on 1-RTT data before its handshake completed"
    );
    assert_eq!(
        pair.server.spaces[SpaceId::Data].acks.largest_received(),
        None,
        "nor took it for acknowledgement"
    );
    assert_eq!(pair.server.stats().one_rtt_held, one_rtt.len() as u64);

    // The Finished arrives: the held request is read at once.
    for packet in &mut finished {
        pair.server.recv(packet, to_server(pair.now)).unwrap();
    }
    assert!(pair.server.is_established());
    let stream = *pair
        .server
        .readable()
        .first()
        .expect("the held request, read once the handshake completed");
    let mut out = [0u8; 64];
    let (n, fin) = pair.server.stream_recv(stream, &mut out).unwrap();
    assert_eq!((&out[..n], fin), (&b"early request"[..], true));
}

#[test]
fn a_client_discards_long_headers_from_another_source_id_than_the_servers_first_initial() {
    let mut pair = Pair::default();
    // Until the client has read the server's first Initial; it has not
    // answered yet, so it still holds Initial keys.
    assert!(
        pair.run_until(Duration::from_secs(1), &mut deliver_all, |p| {
            p.client.peer_cid_learned
        })
    );
    // Anyone who saw the client's Initial can seal an Initial (its keys
    // come from the client's destination ID): RFC 9000 §7.2 makes the
    // server's first source ID the only one the client accepts.
    let forger = ConnectionId::new(&[0xee; 8]).unwrap();
    assert_ne!(forger, pair.client.peer_cid);
    let mut forged = initial_packet(
        pair.server.versions.current(),
        pair.server.spaces[SpaceId::Initial]
            .keys
            .as_deref()
            .unwrap(),
        pair.client.local_cid(),
        forger,
        pair.server.spaces[SpaceId::Initial].next_packet_number + 3,
        &close_frame(),
    );
    let before = pair.client.stats().malformed_dropped;
    pair.client.recv(&mut forged, to_client(pair.now)).unwrap();
    assert!(
        !pair.client.is_closing(),
        "a forged Initial ended the handshake"
    );
    assert_eq!(pair.client.stats().malformed_dropped, before + 1);
    pair.handshake();
}

#[test]
fn a_server_discards_a_later_client_initial_from_another_source_id() {
    let mut pair = Pair::default();
    for datagram in &mut drain_datagrams(&mut pair.client, pair.now) {
        pair.server.recv(datagram, to_server(pair.now)).unwrap();
    }
    assert!(pair.server.peer_cid_learned);
    // The client's Initial keys are public to anyone who saw its first
    // Initial: RFC 9000 §7.2 has the server discard a later Initial whose
    // source ID is not the one the client's first Initial named.
    let forger = ConnectionId::new(&[0xee; 8]).unwrap();
    assert_ne!(forger, pair.client.local_cid());
    let mut frames = close_frame();
    frames.resize(MIN_INITIAL_DATAGRAM, 0); // PADDING: no size excuse
    let mut forged = initial_packet(
        pair.client.versions.current(),
        pair.client.spaces[SpaceId::Initial]
            .keys
            .as_deref()
            .unwrap(),
        pair.client.peer_cid,
        forger,
        pair.client.spaces[SpaceId::Initial].next_packet_number + 3,
        &frames,
    );
    assert!(forged.len() >= MIN_INITIAL_DATAGRAM);
    let before = pair.server.stats().malformed_dropped;
    pair.server.recv(&mut forged, to_server(pair.now)).unwrap();
    assert!(
        !pair.server.is_closing(),
        "a forged Initial ended the handshake"
    );
    assert_eq!(pair.server.stats().malformed_dropped, before + 1);
    pair.handshake();
}

#[test]
fn a_server_holds_its_initial_rather_than_send_it_under_1200_bytes() {
    let mut pair = Pair::default();
    let mut first_flight = drain_datagrams(&mut pair.client, pair.now);
    for datagram in &mut first_flight {
        pair.server.recv(datagram, to_server(pair.now)).unwrap();
    }
    // The server's answer is lost, and only 600 bytes of its
    // anti-amplification allowance are left.
    let lost = drain_datagrams(&mut pair.server, pair.now);
    assert!(lost.iter().any(|d| carries_initial(d)));
    let client = pair.server.remote;
    let spent = pair.server.path.unproven.allowance(client) - 600;
    pair.server.path.unproven.on_sent(client, spent as usize);
    // RFC 9000 §14.1: never an ack-eliciting Initial under 1200 bytes, so
    // the probe of the lost Initial cannot leave, and RFC 9002 §6.2.2.1
    // arms no probe timer for it: whatever the timers do over several
    // PTO periods, no Initial leaves and no PTO fires.
    let mut resent = Vec::new();
    let until = pair.now + Duration::from_secs(5);
    while let Some(wait) = pair.server.timeout(pair.now) {
        if pair.now + wait > until {
            break;
        }
        pair.now += wait;
        pair.server.on_timeout(pair.now);
        resent.extend(drain_datagrams(&mut pair.server, pair.now));
    }
    pair.now = until;
    assert!(!pair.server.is_closed());
    assert_eq!(pair.server.recovery.pto_count(), 0);
    assert!(resent.iter().map(Vec::len).sum::<usize>() <= 600);
    for datagram in &resent {
        assert!(
            !carries_initial(datagram),
            "an Initial left in a datagram of {} bytes",
            datagram.len()
        );
    }
    // The client's next datagram (its own PTO resend) raises the
    // allowance: the held Initial goes, full size.
    for datagram in &mut first_flight {
        pair.server.recv(datagram, to_server(pair.now)).unwrap();
    }
    // RFC 9002 §6.2.2.1: the probe timer is armed again, already due.
    assert_eq!(pair.server.timeout(pair.now), Some(Duration::ZERO));
    pair.server.on_timeout(pair.now);
    assert_eq!(pair.server.recovery.pto_count(), 1);
    let resent = drain_datagrams(&mut pair.server, pair.now);
    let initials: Vec<usize> = resent
        .iter()
        .filter(|d| carries_initial(d))
        .map(Vec::len)
        .collect();
    assert!(!initials.is_empty(), "the Initial was held, not dropped");
    assert!(initials.iter().all(|len| *len >= 1200), "{initials:?}");
}

#[test]
fn a_server_discards_a_client_initial_in_a_datagram_under_1200_bytes() {
    let mut pair = Pair::default();
    for datagram in &mut drain_datagrams(&mut pair.client, pair.now) {
        pair.server.recv(datagram, to_server(pair.now)).unwrap();
    }
    assert!(pair.server.peer_cid_learned);
    // A later client Initial, unpadded: RFC 9000 §14.1 has the server
    // discard it, the connection's first Initial or not.
    let mut small = initial_packet(
        pair.client.versions.current(),
        pair.client.spaces[SpaceId::Initial]
            .keys
            .as_deref()
            .unwrap(),
        pair.client.peer_cid,
        pair.client.local_cid(),
        pair.client.spaces[SpaceId::Initial].next_packet_number,
        &close_frame(),
    );
    assert!(small.len() < 1200);
    let before = pair.server.stats().malformed_dropped;
    pair.server.recv(&mut small, to_server(pair.now)).unwrap();
    assert!(!pair.server.is_closing(), "a small Initial was acted on");
    assert_eq!(pair.server.stats().malformed_dropped, before + 1);
    pair.handshake();
}

#[test]
fn at_the_confidentiality_limit_without_a_key_update_the_connection_closes() {
    let null = Config {
        protection: Protection::Null,
        ..fixed_size()
    };
    let mut pair = Pair::new(null.clone(), null);
    pair.handshake();
    // Null keys cannot be updated; let them seal 3000 packets at most
    // (AES-GCM's 2^23 is out of a test's reach).
    const LIMIT: u64 = 3000;
    pair.client.confidentiality_limit = Some(LIMIT);
    let id = pair.client.stream_open_bi().unwrap();
    let chunk = pattern(64 * 1024);
    let mut buf = vec![0u8; 65_536];
    let closed = pair.run_until(Duration::from_secs(120), &mut deliver_all, |p| {
        let _ = p.client.stream_send(id, &chunk, false);
        while let Some(stream) = p.server.readable().first().copied() {
            match p.server.stream_recv(stream, &mut buf) {
                Ok((n, _)) if n > 0 => {}
                _ => break,
            }
        }
        p.client.is_closed() || p.client.key_phases.sent_in_phase > LIMIT
    });
    assert!(closed, "the client went on");
    assert!(
        pair.client.key_phases.sent_in_phase <= LIMIT,
        "the client sealed past its limit"
    );
    // RFC 9001 §6.6: AEAD_LIMIT_REACHED, and never a packet past the limit.
    assert!(matches!(
        pair.client.close_reason(),
        Some(CloseReason::Local {
            code: codes::AEAD_LIMIT_REACHED,
            ..
        })
    ));
    assert!(matches!(
        pair.server.close_reason(),
        Some(CloseReason::Peer {
            code: codes::AEAD_LIMIT_REACHED,
            ..
        })
    ));
}

/// A server holding 1-RTT packets probes once for the client's Finished
/// (`held::probe_for_finished`): replayed (or spoofed) 1-RTT packets from
/// the client's address buy one small Handshake probe per connection, not
/// one per packet, and it leaves within the address's 3x allowance.
#[test]
fn held_one_rtt_packets_buy_one_probe_for_the_finished_however_many() {
    let mut pair = Pair::default();
    assert!(
        pair.run_until(Duration::from_secs(5), &mut deliver_all, |p| {
            p.client.is_established()
        })
    );
    let id = pair.client.stream_open_bi().unwrap();
    pair.client.stream_send(id, b"early request", true).unwrap();
    let one_rtt: Vec<Vec<u8>> = drain_datagrams(&mut pair.client, pair.now)
        .iter()
        .map(|d| split_long_headers(d).1.to_vec())
        .filter(|p| !p.is_empty())
        .collect();
    assert!(!one_rtt.is_empty());
    // Everything the server had to send so far has left.
    drain_datagrams(&mut pair.server, pair.now);
    let sent_before = pair.server.stats().bytes_sent;
    let received_before = pair.server.stats().bytes_received;
    for _ in 0..20 {
        for packet in &one_rtt {
            let mut copy = packet.clone();
            let _ = pair.server.recv(&mut copy, to_server(pair.now));
        }
    }
    let probes = drain_datagrams(&mut pair.server, pair.now);
    assert_eq!(probes.len(), 1, "one Handshake probe for the Finished");
    assert!(probes[0][0] & 0x80 != 0, "a long header (Handshake)");
    assert!(probes[0].len() < 200, "{} bytes", probes[0].len());
    let sent = pair.server.stats().bytes_sent - sent_before;
    let received = pair.server.stats().bytes_received - received_before;
    assert!(sent <= 3 * received, "{sent} sent for {received} received");
    // Later held packets probe no more.
    for packet in &one_rtt {
        let mut copy = packet.clone();
        let _ = pair.server.recv(&mut copy, to_server(pair.now));
    }
    assert!(drain_datagrams(&mut pair.server, pair.now).is_empty());
}
