//! RFC 9000 §5–§11 requirements on the endpoint, each named in
//! `docs/requirements.toml`: what a server drops without a connection,
//! the client's first destination ID, tokens, and when stateless resets
//! may be sent. The in-memory network and hand-made datagrams of
//! `endpoint::tests`.

use super::*;

/// The first packet header of each datagram `endpoint` sends now.
fn sent_headers(endpoint: &mut Endpoint, now: Instant) -> Vec<(ConnectionId, Vec<u8>, usize)> {
    let mut buf = vec![0u8; 65_535];
    let mut headers = Vec::new();
    while let Some((len, _)) = endpoint.poll_transmit(now, &mut buf) {
        let header = super::super::parse_any_header(&buf[..len]).unwrap();
        headers.push((header.dcid, header.token.to_vec(), len));
    }
    headers
}

/// Fires `endpoint`'s next timer; returns when that was.
fn next_timer(endpoint: &mut Endpoint, now: Instant) -> Instant {
    let at = endpoint.timeout(now).expect("a timer").max(now);
    endpoint.on_timeout(at);
    at
}

#[test]
fn a_server_drops_long_header_packets_for_connections_it_does_not_have() {
    // RFC 9000 §5.2.2: a server ignores Handshake (and 0-RTT) packets that
    // name no connection of its (a client sends those only after hearing
    // from it), creates nothing for them and answers nothing.
    let mut server = Endpoint::new(addr(SERVER), Some(config(1)));
    let now = Instant::now();
    for ty in [PacketType::Handshake, PacketType::ZeroRtt] {
        let header = Header {
            ty,
            version: VERSION,
            dcid: ConnectionId::new(&[0xab; 8]).unwrap(),
            scid: ConnectionId::new(&[0xcd; 8]).unwrap(),
            token: &[],
            packet_number: 0,
            payload_len: 0,
            key_phase: false,
        };
        let mut frames = Vec::new();
        Frame::Ping.encode(&mut frames);
        frames.resize(1200, 0);
        let mut datagram = Vec::new();
        seal_packet(&header, &frames, &NullProtection, &mut datagram).unwrap();
        assert_eq!(server.recv(&mut datagram, addr(1001), now), None, "{ty:?}");
    }
    assert_eq!(server.stats().dropped_unknown_connection, 2);
    assert!(server.is_empty());
    let mut buf = vec![0u8; 2048];
    assert!(server.poll_transmit(now, &mut buf).is_none(), "no answer");
}

#[test]
fn a_server_never_answers_a_version_negotiation_packet() {
    // RFC 9000 §6.1: a Version Negotiation packet, however large, draws
    // no Version Negotiation back (nor anything else).
    let mut server = Endpoint::new(addr(SERVER), Some(config(1)));
    let now = Instant::now();
    let versions: Vec<u32> = (0..300).map(|i| 0x1a2a_3a4a + i).collect();
    let mut datagram = version_negotiation(&[1; 8], &[2; 8], &versions);
    assert!(datagram.len() >= 1200);
    assert_eq!(server.recv(&mut datagram, addr(1001), now), None);
    let mut buf = vec![0u8; 2048];
    assert!(server.poll_transmit(now, &mut buf).is_none());
    assert_eq!(server.stats().version_negotiations_sent, 0);
    assert!(server.is_empty());
}

#[test]
fn a_client_keeps_one_unpredictable_destination_id_of_eight_bytes_until_the_server_answers() {
    // RFC 9000 §7.2: the client's first destination ID is at least 8
    // bytes, and every packet it sends before the server answers carries
    // the same one; two connections draw different ones.
    let mut client = Endpoint::new(addr(1001), None);
    let mut now = Instant::now();
    let first = client.connect(config(2), addr(SERVER), now).unwrap();
    let mut sent = sent_headers(&mut client, now);
    for _ in 0..3 {
        now = next_timer(&mut client, now);
        sent.extend(sent_headers(&mut client, now));
    }
    assert!(sent.len() >= 3, "{} datagrams", sent.len());
    let dcid = sent[0].0;
    assert!(dcid.len() >= 8);
    assert!(sent.iter().all(|(id, _, _)| *id == dcid));
    assert!(client.connection_ref(first).is_some());
    let second = client.connect(config(2), addr(SERVER), now).unwrap();
    let other = sent_headers(&mut client, now);
    assert_ne!(other[0].0, dcid, "connection {second:?} drew its own");
}

#[test]
fn every_initial_after_a_retry_carries_its_token() {
    // RFC 9000 §8.1.2: the Retry's token goes in every later Initial of
    // the connection, retransmissions included.
    let secret = ServerSecret::new(&[9; SERVER_SECRET_LEN]);
    let mut server = server_with_secret(&secret, RetryPolicy::Always);
    let mut now = Instant::now();
    let (mut client, _, _, initial) = second_initial(&mut server, now);
    let token = super::super::parse_any_header(&initial)
        .unwrap()
        .token
        .to_vec();
    // Nothing comes back: the client's probe timeouts send it again.
    let mut resent = Vec::new();
    for _ in 0..2 {
        now = next_timer(&mut client, now);
        resent.extend(sent_headers(&mut client, now));
    }
    assert!(!resent.is_empty());
    for (_, carried, len) in resent {
        assert_eq!(carried, token);
        assert!(len >= 1200);
    }
}

#[test]
fn a_retry_token_is_never_kept_for_a_later_connection() {
    // RFC 9000 §8.1.3: a Retry's token serves the attempt it answered only.
    let secret = ServerSecret::new(&[9; SERVER_SECRET_LEN]);
    let mut server = server_with_secret(&secret, RetryPolicy::Always);
    let now = Instant::now();
    let (mut client, handle, _, _) = second_initial(&mut server, now);
    assert!(client.tokens.is_empty());
    let retried = client.connection_ref(handle).unwrap().stats();
    assert!(retried.retried);
    // Another attempt from the same client: its Initial has no token.
    client.connect(config(3), addr(SERVER), now).unwrap();
    let headers = sent_headers(&mut client, now);
    assert_eq!(headers.len(), 1, "only the new connection has news");
    assert!(
        headers[0].1.is_empty(),
        "the new connection brings no token"
    );
}

#[test]
fn a_token_from_one_server_is_offered_to_that_server_only() {
    // RFC 9000 §8.1.3: a client keeps NEW_TOKEN tokens by server and
    // offers one only to the server that gave it.
    let mut client = Endpoint::new(addr(1001), None);
    client
        .tokens
        .insert(addr(SERVER), b"for 4433 only".to_vec());
    let now = Instant::now();
    client.connect(config(2), addr(5555), now).unwrap();
    let other = sent_headers(&mut client, now);
    assert!(other[0].1.is_empty(), "not offered to another server");
    client.connect(config(3), addr(SERVER), now).unwrap();
    let own = sent_headers(&mut client, now);
    assert_eq!(own[0].1, b"for 4433 only");
    // Every Initial of that connection carries it, retransmissions too.
    let later = next_timer(&mut client, now);
    let resent = sent_headers(&mut client, later);
    assert!(resent.iter().any(|(dcid, _, _)| *dcid == own[0].0));
    for (dcid, token, _) in resent {
        let expected: &[u8] = if dcid == own[0].0 {
            b"for 4433 only"
        } else {
            b""
        };
        assert_eq!(token, expected);
    }
}

#[test]
fn a_reset_shaped_like_a_long_header_of_another_version_still_resets() {
    // RFC 9000 §10.3: a datagram that ends in a reset token the client
    // watches is a stateless reset whatever its first bytes look like;
    // another version may use a long header for it.
    let secret = ServerSecret::new(&[9; SERVER_SECRET_LEN]);
    let (mut net, handle) = connected_pair(&secret);
    let token = net.endpoints[1]
        .connection_ref(handle)
        .unwrap()
        .peer_reset_token()
        .expect("the server gave a token");
    let mut reset = other_version_datagram(0x7a7a_7a7a, &[0x33; 8], &[0x44; 8], 40);
    reset.extend_from_slice(token.as_bytes());
    let now = net.now;
    net.endpoints[1].recv(&mut reset, addr(SERVER), now);
    let client = net.endpoints[1].connection_ref(handle).unwrap();
    assert_eq!(client.close_reason(), Some(&CloseReason::StatelessReset));
}

#[test]
fn address_tokens_differ_for_every_issue_and_show_nothing_in_common() {
    // RFC 9000 §8.1.3: every NEW_TOKEN token is unique, and nothing in it
    // lets an observer link it to its connection or to another token:
    // sealed under a fresh nonce, two tokens for one client at one
    // moment agree no more than random bytes would.
    let secret = ServerSecret::new(&[9; SERVER_SECRET_LEN]);
    let mut server = server_with_secret(&secret, RetryPolicy::Never);
    let now = Instant::now();
    let tokens: Vec<Vec<u8>> = (0..20)
        .map(|i| {
            let client = addr(1001 + (i % 2));
            server.address_token(client, now, None).expect("a token")
        })
        .collect();
    for (i, a) in tokens.iter().enumerate() {
        for b in &tokens[i + 1..] {
            assert_ne!(a, b);
            let same = a.iter().zip(b).filter(|(x, y)| x == y).count();
            assert!(same * 8 < a.len(), "{same} of {} bytes alike", a.len());
        }
    }
}

#[test]
fn a_live_connection_is_never_sent_a_stateless_reset() {
    // RFC 9000 §11: an endpoint that can still send a frame on the
    // connection does not reset it. Traffic both ways, on the handshake's
    // IDs and on fresh ones after a move, and packets to a connection
    // that is closing, draw no reset.
    let secret = ServerSecret::new(&[9; SERVER_SECRET_LEN]);
    let (mut net, handle) = connected_pair(&secret);
    run_until_ids_issued(&mut net);
    send_on_stream(&mut net, handle);
    net.endpoints[1]
        .rebound(addr(1099))
        .expect("the client may move");
    send_on_stream(&mut net, handle);
    assert!(net.run_until(|e| e[0]
        .connection_ref(ConnectionHandle(0))
        .is_some_and(|c| c.stats().paths_validated == 1)));
    net.endpoints[0]
        .connection(ConnectionHandle(0))
        .unwrap()
        .close(0, "done");
    send_on_stream(&mut net, handle);
    net.run_until(|_| false);
    assert_eq!(net.endpoints[0].stats().stateless_resets_sent, 0);
    assert_eq!(net.endpoints[1].stats().stateless_resets_received, 0);
    let client = net.endpoints[1].connection_ref(handle).unwrap();
    assert!(matches!(
        client.close_reason(),
        Some(CloseReason::Peer { .. })
    ));
}
