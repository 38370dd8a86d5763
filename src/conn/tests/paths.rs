//! Path validation and migration (`conn::path`, RFC 9000 §8.2, §9) on the
//! two-endpoint harness: the harness delivers a datagram only to the
//! address its receiver is at, so a response or data sent to where a peer
//! was is lost, as a socket left behind by a move would lose it.

use super::*;
use crate::wire::parse_frames;

/// What a traced connection sent that validates paths: (PATH_CHALLENGE
/// or PATH_RESPONSE, packet size), and the datagram sizes path MTU
/// discovery moved to.
#[derive(Debug, Default)]
struct PathLog {
    challenges: Vec<u64>,
    responses: Vec<u64>,
    mtu_updates: Vec<u64>,
}

#[derive(Debug)]
struct PathLogger(std::sync::Arc<std::sync::Mutex<PathLog>>);

impl crate::trace::Observer for PathLogger {
    fn event(&mut self, _now: Instant, event: &crate::trace::Event<'_>) {
        use crate::trace::Event;
        let mut log = self.0.lock().unwrap();
        match *event {
            Event::PacketSent {
                space: SpaceId::Data,
                size,
                frames,
                ..
            } => {
                for frame in parse_frames(frames).flatten() {
                    match frame {
                        Frame::PathChallenge { .. } => log.challenges.push(size),
                        Frame::PathResponse { .. } => log.responses.push(size),
                        _ => {}
                    }
                }
            }
            Event::MtuUpdated { new, .. } => log.mtu_updates.push(new),
            _ => {}
        }
    }
}

fn logged(conn: &mut Connection) -> std::sync::Arc<std::sync::Mutex<PathLog>> {
    let log = std::sync::Arc::default();
    conn.set_observer(Box::new(PathLogger(std::sync::Arc::clone(&log))));
    log
}

/// The server sends `data` on a stream; once the client has read
/// `move_after` bytes it moves to `to` (`on_local_address_changed`, as a
/// rebound socket does). Returns what the client read and the server's
/// datagram size just before the move.
fn download_with_a_move(
    pair: &mut Pair,
    data: &[u8],
    move_after: usize,
    to: SocketAddr,
) -> (Vec<u8>, u64) {
    let id = pair.server.stream_open_uni().unwrap();
    let mut written = 0;
    let mut received = Vec::new();
    let mut buf = vec![0u8; 65_536];
    let mut size_before = None;
    let start = pair.now;
    loop {
        assert!(
            pair.now - start < Duration::from_secs(60),
            "download stalled at {} bytes: {:?}",
            received.len(),
            pair.server.stats()
        );
        if written < data.len() {
            let end = (written + 64 * 1024).min(data.len());
            // Blocked (a full send buffer) is no error: try again later.
            if let Ok(accepted) =
                pair.server
                    .stream_send(id, &data[written..end], end == data.len())
            {
                written += accepted;
            }
        }
        while let Some(stream) = pair.client.readable().first().copied() {
            let (n, fin) = pair.client.stream_recv(stream, &mut buf).unwrap();
            received.extend_from_slice(&buf[..n]);
            if fin {
                return (received, size_before.expect("moved"));
            }
            if n == 0 {
                break;
            }
        }
        if size_before.is_none() && received.len() >= move_after {
            size_before = Some(pair.server.stats().max_datagram_size);
            pair.client
                .on_local_address_changed(to)
                .expect("the client may move");
        }
        assert!(pair.step(&mut deliver_all), "nothing left to do");
    }
}

#[test]
fn a_client_that_rebinds_mid_download_keeps_its_path_mtu_and_is_validated() {
    // Loopback: path MTU discovery settles on 8972-byte datagrams. The
    // move strands a window of them on the old port: lost, but not to a
    // black hole, which would drop the server to 1200 bytes and search
    // its way back (to 1472, its table's last step below a jumbo frame).
    let mut pair = Pair::with_pmtud();
    pair.handshake();
    let data = pattern(6_000_000);
    let new_port = SocketAddr::new(addr(1).ip(), 3);
    let (received, size_before) = download_with_a_move(&mut pair, &data, 2_000_000, new_port);
    assert!(received == data, "the download differs");
    assert_eq!(size_before, 8972);
    let server = pair.server.stats();
    assert_eq!(server.peer_migrations, 1, "{server:?}");
    assert_eq!(server.paths_validated, 1, "{server:?}");
    assert!(
        server.packets_lost > 0,
        "the move stranded packets: {server:?}"
    );
    assert_eq!(server.pmtu_black_holes, 0, "{server:?}");
    assert_eq!(server.max_datagram_size, 8972, "{server:?}");
}

#[test]
fn a_client_that_moves_to_another_ip_is_sent_1200_byte_datagrams_until_the_search_rises() {
    // A new IP address is a new path whose MTU is unknown: the server
    // starts again from the size every path carries (RFC 9000 §14).
    let mut pair = Pair::with_pmtud();
    pair.handshake();
    let log = logged(&mut pair.server);
    let data = pattern(3_000_000);
    let new_ip = SocketAddr::from(([127, 0, 0, 9], 1));
    let (received, _) = download_with_a_move(&mut pair, &data, 1_000_000, new_ip);
    assert!(received == data, "the download differs");
    let server = pair.server.stats();
    assert_eq!((server.peer_migrations, server.paths_validated), (1, 1));
    let log = log.lock().unwrap();
    let moved = log
        .mtu_updates
        .iter()
        .position(|&size| size == pmtud::BASE_DATAGRAM_SIZE as u64);
    assert!(moved.is_some(), "{:?}", log.mtu_updates);
    assert_eq!(log.mtu_updates.last(), Some(&8972), "searched up again");
}

#[test]
fn path_challenges_and_responses_go_in_1200_byte_datagrams_where_the_limit_allows() {
    let mut pair = Pair::default();
    pair.handshake();
    let (server_log, client_log) = (logged(&mut pair.server), logged(&mut pair.client));
    let data = pattern(2_000_000);
    let new_port = SocketAddr::new(addr(1).ip(), 3);
    let (received, _) = download_with_a_move(&mut pair, &data, 500_000, new_port);
    assert!(received == data, "the download differs");
    let server = pair.server.stats();
    assert_eq!((server.peer_migrations, server.paths_validated), (1, 1));
    let (server_log, client_log) = (server_log.lock().unwrap(), client_log.lock().unwrap());
    // The first challenge goes to the path the client left, full size:
    // that address was validated (RFC 9000 §9.3.3).
    assert!(
        server_log.challenges[0] >= 1200,
        "{:?}",
        server_log.challenges
    );
    // The new path's first: all the client had sent from its new port was
    // an ACK, and three times that is under 1200 bytes (RFC 9000 §8.1).
    let first = server_log.challenges[1];
    assert!(first < 1200, "{:?}", server_log.challenges);
    // Its answer validated the address, not the path's MTU: a second
    // challenge goes full size (RFC 9000 §8.2.1).
    let last = *server_log.challenges.last().unwrap();
    assert!(last >= 1200, "{:?}", server_log.challenges);
    // The client, not held by any limit, answers full size.
    assert!(!client_log.responses.is_empty());
    assert!(
        client_log.responses.iter().all(|&size| size >= 1200),
        "{:?}",
        client_log.responses
    );
}

#[test]
fn a_path_response_goes_back_on_the_path_its_challenge_came_on() {
    // The client probes a new address (RFC 9000 §9.1): a packet of only
    // PATH_CHALLENGE and PADDING, which moves nothing. The server's answer
    // must go there, not to the address the connection uses: only then
    // does the client learn the new path works both ways.
    let mut pair = Pair::default();
    pair.handshake();
    pair.run_until(Duration::from_secs(1), &mut deliver_all, |_| false);
    let server_log = logged(&mut pair.server);
    let probe_from = SocketAddr::new(addr(1).ip(), 3);
    pair.client.local = probe_from;
    let now = pair.now;
    // Nothing left to acknowledge (written away as if sent), so the probe
    // carries only PATH_CHALLENGE and PADDING: a probing packet (§9.1).
    pair.client.spaces[SpaceId::Data]
        .acks
        .write(now, false, None, &mut Vec::new());
    pair.client
        .path
        .challenge([7; 8], now + Duration::from_secs(5), None);
    let answered = pair.run_until(Duration::from_secs(1), &mut deliver_all, |p| {
        p.client.stats().paths_validated == 1
    });
    assert!(answered, "the response went elsewhere");
    assert_eq!(
        pair.server.stats().peer_migrations,
        0,
        "a probe moves nothing"
    );
    let responses = &server_log.lock().unwrap().responses;
    assert_eq!(responses.len(), 1, "{responses:?}");
    assert!(responses[0] >= 1200, "expanded: {responses:?}");
}

#[test]
fn new_connection_id_from_a_peer_with_zero_length_ids_is_a_protocol_violation() {
    let mut pair = Pair::default();
    pair.handshake();
    let frame = |sequence| Frame::NewConnectionId {
        sequence,
        retire_prior_to: 0,
        cid: ConnectionId::new(&[9; 8]).unwrap(),
        reset_token: [3; 16],
    };
    let now = pair.now;
    // A peer with IDs may give more.
    assert!(pair
        .server
        .process_frame(SpaceId::Data, frame(7), now)
        .is_ok());
    // One that asked for zero-length IDs (RFC 9000 §19.15) may not.
    pair.server.peer_cid = ConnectionId::new(&[]).unwrap();
    let error = pair
        .server
        .process_frame(SpaceId::Data, frame(8), now)
        .unwrap_err();
    assert_eq!(error.code, codes::PROTOCOL_VIOLATION);
}

#[test]
fn a_client_may_not_send_a_preferred_address() {
    use super::recv::has_server_only_params;
    use crate::wire::TransportParams;
    assert!(!has_server_only_params(&TransportParams::default()));
    let preferred = TransportParams {
        preferred_address: Some(preferred_address()),
        ..TransportParams::default()
    };
    assert!(has_server_only_params(&preferred));
}

/// A server's preferred_address with a connection ID of its own.
fn preferred_address() -> crate::wire::PreferredAddress {
    crate::wire::PreferredAddress {
        ipv4: Some("192.0.2.1:443".parse().unwrap()),
        ipv6: None,
        connection_id: ConnectionId::new(&[0xaa; 8]).unwrap(),
        reset_token: [0xbb; 16],
    }
}

#[test]
fn a_client_takes_the_preferred_address_id_as_the_servers_number_one() {
    // RFC 9000 §5.1.1, §18.2: the connection ID in preferred_address is
    // the server's sequence number 1. The sift server offering it here
    // does not know that, and issues another ID as its number 1: a client
    // that took the preferred one finds the contradiction.
    let mut pair = Pair::default();
    pair.server.handshake.local_params_mut().preferred_address = Some(preferred_address());
    pair.run_until(Duration::from_secs(2), &mut deliver_all, |p| {
        p.client.close_reason().is_some()
    });
    match pair.client.close_reason() {
        Some(CloseReason::Local {
            application: false,
            code,
            reason,
        }) => {
            assert_eq!(*code, codes::PROTOCOL_VIOLATION);
            assert!(reason.contains("1 repeated with another ID"), "{reason}");
        }
        other => panic!("the client took no ID from preferred_address: {other:?}"),
    }
}

/// Whether the client may move once it holds a spare connection ID, with
/// the server's disable_active_migration set or not.
fn client_may_move(server_disables_migration: bool) -> bool {
    let mut pair = Pair::default();
    pair.server
        .handshake
        .local_params_mut()
        .disable_active_migration = server_disables_migration;
    pair.handshake();
    pair.run_until(Duration::from_secs(1), &mut deliver_all, |p| {
        p.client.cids.has_spare()
    });
    assert!(pair.client.cids.has_spare());
    pair.client.can_migrate()
}

#[test]
fn a_client_does_not_move_when_the_server_disables_active_migration() {
    assert!(client_may_move(false));
    assert!(!client_may_move(true));
}

/// Seals `frames` in the client's next 1-RTT packet, under its real keys,
/// as the datagram a client would send (it is the attacker here, or a
/// peer whose packets an attacker replays).
fn client_datagram(pair: &mut Pair, frames: &[u8]) -> Vec<u8> {
    let space = SpaceId::Data;
    let client = &mut pair.client;
    let packet_number = client.spaces[space].next_packet_number;
    client.spaces[space].next_packet_number += 1;
    let header = client.header_for(space, packet_number);
    let keys = client.spaces[space].keys.as_deref().unwrap();
    let mut datagram = vec![0u8; 2000];
    let mut scratch = Vec::new();
    let len = client
        .versions
        .current()
        .seal_into(
            &header,
            client.recovery.largest_acked(space),
            frames,
            keys,
            &mut scratch,
            &mut datagram,
        )
        .unwrap();
    datagram.truncate(len);
    datagram
}

/// Delivers `datagram` to the server as if it came from `from`.
fn server_receives_from(pair: &mut Pair, mut datagram: Vec<u8>, from: SocketAddr) {
    let info = RecvInfo {
        from,
        to: pair.server.local(),
        now: pair.now,
        ecn: Ecn::NotEct,
    };
    let _ = pair.server.recv(&mut datagram, info);
}

/// Everything the server sends now and on its timers over `span`: the
/// bytes of the datagrams addressed to `to`. Nothing is delivered.
fn server_sends_to(pair: &mut Pair, to: SocketAddr, span: Duration) -> usize {
    let mut buf = vec![0u8; 65_535];
    let end = pair.now + span;
    let mut bytes = 0;
    loop {
        while let Ok(Some((len, info))) = pair.server.send(&mut buf, pair.now) {
            if info.to == to {
                bytes += len;
            }
        }
        let Some(wait) = pair.server.timeout(pair.now) else {
            break;
        };
        let next = pair.now + wait.max(Duration::from_millis(1));
        if next > end {
            break;
        }
        pair.now = next;
        pair.server.on_timeout(next);
    }
    bytes
}

/// A datagram of four PATH_CHALLENGEs (and nothing else: a probe, so the
/// server does not move) from the client.
fn four_challenges(pair: &mut Pair, round: u8) -> Vec<u8> {
    let mut frames = Vec::new();
    for i in 0..4 {
        Frame::PathChallenge {
            data: [round, i, 0, 0, 0, 0, 0, 1],
        }
        .encode(&mut frames);
    }
    client_datagram(pair, &frames)
}

#[test]
fn path_challenges_from_an_unproven_address_draw_at_most_three_times_their_bytes() {
    // Issue 53, finding 2: a client sends small datagrams of four
    // PATH_CHALLENGEs with a victim's source address. Every answer to an
    // address that has not proved itself counts against one budget of
    // three times what came from it (RFC 9000 §8, §8.2.2).
    let mut pair = Pair::default();
    pair.handshake();
    pair.run_until(Duration::from_secs(1), &mut deliver_all, |_| false);
    let victim = SocketAddr::from(([192, 0, 2, 66], 4433));
    let (mut arrived, mut sent) = (0, 0);
    for round in 0..10 {
        let datagram = four_challenges(&mut pair, round);
        arrived += datagram.len();
        server_receives_from(&mut pair, datagram, victim);
        sent += server_sends_to(&mut pair, victim, Duration::from_millis(20));
    }
    sent += server_sends_to(&mut pair, victim, Duration::from_secs(5));
    assert!(arrived < 100 * 10, "small datagrams: {arrived} bytes");
    assert!(sent > 0, "the probes were answered");
    assert!(
        sent <= 3 * arrived,
        "{sent} bytes to the victim for {arrived} from it"
    );
    assert_eq!(pair.server.remote(), addr(1), "probes move nothing");
}

#[test]
fn an_address_that_probes_then_moves_has_one_budget() {
    // The same address first probes (PATH_RESPONSEs go to it alone),
    // then sends a non-probing packet (the server moves there and
    // challenges it). Neither resets what it has already been sent.
    let mut pair = Pair::default();
    pair.handshake();
    pair.run_until(Duration::from_secs(1), &mut deliver_all, |_| false);
    let victim = SocketAddr::from(([192, 0, 2, 66], 4433));
    let probe = four_challenges(&mut pair, 1);
    let mut arrived = probe.len();
    server_receives_from(&mut pair, probe, victim);
    let mut sent = server_sends_to(&mut pair, victim, Duration::from_millis(20));
    let mut ping = Vec::new();
    Frame::Ping.encode(&mut ping);
    let moving = client_datagram(&mut pair, &ping);
    arrived += moving.len();
    server_receives_from(&mut pair, moving, victim);
    assert_eq!(
        pair.server.remote(),
        victim,
        "a non-probing packet moves it"
    );
    let id = pair.server.stream_open_uni().unwrap();
    pair.server.stream_send(id, &[5; 50_000], false).unwrap();
    sent += server_sends_to(&mut pair, victim, Duration::from_secs(5));
    assert!(
        sent <= 3 * arrived,
        "{sent} bytes to the new address for {arrived} from it"
    );
}

/// The datagrams the server sends now, to `to`.
fn server_datagrams_to(pair: &mut Pair, to: SocketAddr) -> Vec<Vec<u8>> {
    let mut buf = vec![0u8; 65_535];
    let mut datagrams = Vec::new();
    while let Ok(Some((len, info))) = pair.server.send(&mut buf, pair.now) {
        if info.to == to {
            datagrams.push(buf[..len].to_vec());
        }
    }
    datagrams
}

/// A full-size probe (one PATH_CHALLENGE, padded) from the client.
fn probe(pair: &mut Pair, data: [u8; 8]) -> Vec<u8> {
    let mut frames = Vec::new();
    Frame::PathChallenge { data }.encode(&mut frames);
    frames.resize(1150, 0);
    client_datagram(pair, &frames)
}

/// The destination connection ID of a 1-RTT datagram to the client
/// (its IDs are 8 bytes, after the flags byte).
fn short_header_dcid(datagram: &[u8]) -> &[u8] {
    &datagram[1..1 + SHORT_HEADER_DCID_LEN]
}

#[test]
fn responses_to_a_probing_address_carry_a_connection_id_used_on_no_other_path() {
    // RFC 9000 §9.5: an endpoint does not send to two addresses under one
    // connection ID; a server answering a probe from a new address picks
    // one of the client's unused IDs for it.
    let mut pair = Pair::default();
    pair.handshake();
    pair.run_until(Duration::from_secs(1), &mut deliver_all, |_| false);
    let current = pair.server.peer_cid;
    let (first, second) = (
        SocketAddr::from(([127, 0, 0, 1], 7001)),
        SocketAddr::from(([127, 0, 0, 1], 7002)),
    );
    let datagram = probe(&mut pair, [1; 8]);
    server_receives_from(&mut pair, datagram, first);
    let answers = server_datagrams_to(&mut pair, first);
    assert_eq!(answers.len(), 1);
    let first_id = short_header_dcid(&answers[0]).to_vec();
    assert_ne!(first_id, current.as_slice(), "the current path's ID");
    // The same address again: the same ID, which it has already seen.
    let datagram = probe(&mut pair, [2; 8]);
    server_receives_from(&mut pair, datagram, first);
    let answers = server_datagrams_to(&mut pair, first);
    assert_eq!(short_header_dcid(&answers[0]), first_id);
    // Another address: another ID still.
    let datagram = probe(&mut pair, [3; 8]);
    server_receives_from(&mut pair, datagram, second);
    let answers = server_datagrams_to(&mut pair, second);
    let second_id = short_header_dcid(&answers[0]);
    assert_ne!(second_id, current.as_slice());
    assert_ne!(second_id, first_id);
    // The connection itself still sends on its own ID.
    assert_eq!(pair.server.peer_cid, current);
    assert_eq!(pair.server.remote(), addr(1));
}

#[test]
fn without_an_unused_connection_id_a_probe_goes_unanswered_and_a_move_to_a_new_id_is_not_followed()
{
    // RFC 9000 §9.5: an endpoint out of connection IDs "cannot ... respond
    // to probes or attempts by its peer to migrate", except that a peer
    // whose packets keep the ID they had (a NAT rebinding) may be
    // followed on the current one.
    let mut pair = Pair::default();
    // The client gives the server one ID besides the handshake's.
    pair.server
        .handshake
        .local_params_mut()
        .active_connection_id_limit = 2;
    pair.handshake();
    pair.run_until(Duration::from_secs(1), &mut deliver_all, |_| false);
    let probing = SocketAddr::from(([127, 0, 0, 1], 7001));
    let datagram = probe(&mut pair, [1; 8]);
    server_receives_from(&mut pair, datagram, probing);
    assert_eq!(server_datagrams_to(&mut pair, probing).len(), 1);
    // The one spare went to that address: none is left for another.
    let other = SocketAddr::from(([127, 0, 0, 1], 7002));
    let datagram = probe(&mut pair, [2; 8]);
    server_receives_from(&mut pair, datagram, other);
    assert!(server_datagrams_to(&mut pair, other).is_empty());
    assert_eq!(pair.server.stats().path_responses_withheld, 1);

    // The client moves to a third address and to a new ID of the server's.
    let handshake_id = pair.client.peer_cid;
    pair.client.peer_cid = pair.client.cids.switch().expect("the server issued IDs");
    let mut ping = Vec::new();
    Frame::Ping.encode(&mut ping);
    let moving = client_datagram(&mut pair, &ping);
    server_receives_from(&mut pair, moving, SocketAddr::from(([127, 0, 0, 1], 7003)));
    assert_eq!(pair.server.remote(), addr(1), "followed with a linkable ID");
    assert_eq!(pair.server.stats().peer_migrations, 0);

    // A NAT rebinding keeps the ID the client sent to: followed.
    pair.client.peer_cid = handshake_id;
    let rebound = SocketAddr::from(([127, 0, 0, 1], 7004));
    let moving = client_datagram(&mut pair, &ping);
    server_receives_from(&mut pair, moving, rebound);
    assert_eq!(pair.server.remote(), rebound);
}

/// The server sends `len` bytes on a stream, all delivered; returns once
/// the client has read them.
fn download(pair: &mut Pair, len: usize) {
    let id = pair.server.stream_open_uni().unwrap();
    let data = pattern(len);
    let (mut written, mut read) = (0, 0);
    let mut buf = vec![0u8; 65_536];
    while read < len {
        if written < len {
            let end = (written + 64 * 1024).min(len);
            if let Ok(n) = pair.server.stream_send(id, &data[written..end], end == len) {
                written += n;
            }
        }
        for stream in pair.client.readable() {
            while let Ok((n, _)) = pair.client.stream_recv(stream, &mut buf) {
                if n == 0 {
                    break;
                }
                read += n;
            }
        }
        assert!(pair.step(&mut deliver_all), "the download stalled");
    }
}

#[test]
fn a_spoofed_move_seals_no_path_state_and_sends_no_token_to_the_new_address() {
    // Issue 53, finding 1: one 1-RTT packet of the client's from a
    // victim's address moved the server there, and the state of the old
    // path (times the 333 ms default RTT) was sealed at once in a token
    // bound to the victim's address, and sent there with any token still
    // pending. Tokens and saved path states are for validated addresses.
    let mut pair = Pair::default();
    // A 10 Mb/s bottleneck with a queue: the flight outgrows the path's
    // bandwidth-delay product, as on any path a download fills.
    pair.link_rate = Some(1_250_000);
    pair.handshake();
    download(&mut pair, 2_000_000);
    // What the endpoint would have sealed by now, for the client's own
    // address; and one more token waiting to go.
    while pair.server.path_state_to_save().is_some() {}
    pair.server
        .send_new_token(b"bound to the client's address".to_vec());
    pair.client.take_new_token();

    // A full-size datagram: room for 3600 bytes to the victim.
    let victim = SocketAddr::from(([192, 0, 2, 66], 4433));
    let mut ping = Vec::new();
    Frame::Ping.encode(&mut ping);
    ping.resize(1150, 0);
    let spoofed = client_datagram(&mut pair, &ping);
    server_receives_from(&mut pair, spoofed, victim);
    assert_eq!(pair.server.remote(), victim);
    assert_eq!(
        pair.server.path_state_to_save(),
        None,
        "a path state for an address nobody validated"
    );
    // Whatever reaches the victim, read by the one who can: the client.
    let mut to_victim = Vec::new();
    let mut buf = vec![0u8; 65_535];
    let end = pair.now + Duration::from_secs(5);
    while pair.now < end && pair.server.remote() == victim {
        while let Ok(Some((len, info))) = pair.server.send(&mut buf, pair.now) {
            if info.to == victim {
                to_victim.push(buf[..len].to_vec());
            }
        }
        assert_eq!(pair.server.path_state_to_save(), None);
        let Some(wait) = pair.server.timeout(pair.now) else {
            break;
        };
        pair.now += wait.max(Duration::from_millis(1));
        let now = pair.now;
        pair.server.on_timeout(now);
    }
    assert!(!to_victim.is_empty(), "the server challenged the victim");
    for mut datagram in to_victim {
        let info = RecvInfo {
            from: addr(2),
            to: addr(1),
            now: pair.now,
            ecn: Ecn::NotEct,
        };
        let _ = pair.client.recv(&mut datagram, info);
    }
    assert_eq!(
        pair.client.take_new_token(),
        None,
        "a token went to the victim"
    );
}

#[test]
fn a_validated_new_address_gets_the_path_state_of_its_own_path() {
    // The client really moved: once its new address echoed the challenge
    // and the new path carried data, its state is offered, with the RTT
    // measured on it (20 ms here), not the old path's nor the default.
    let mut pair = Pair::default();
    pair.handshake();
    let new_ip = SocketAddr::from(([127, 0, 0, 9], 1));
    let (received, _) = download_with_a_move(&mut pair, &pattern(3_000_000), 1_000_000, new_ip);
    assert_eq!(received.len(), 3_000_000);
    assert_eq!(pair.server.stats().paths_validated, 1);
    let saved = pair
        .server
        .path_state_to_save()
        .expect("a state of the new path");
    assert!(saved.min_rtt < Duration::from_millis(30), "{saved:?}");
}

/// Whether the client's move to another port took effect: its address,
/// and a datagram sent from there.
fn moved(pair: &mut Pair) -> bool {
    let to = SocketAddr::new(addr(1).ip(), 9);
    let _ = pair.client.on_local_address_changed(to);
    let mut buf = vec![0u8; 65_535];
    let sent_from_there = matches!(
        pair.client.send(&mut buf, pair.now),
        Ok(Some((_, info))) if info.from == to
    );
    pair.client.local() == to || sent_from_there
}

#[test]
fn a_client_refuses_to_move_before_confirmation_without_a_spare_id_or_when_the_server_says_so() {
    // RFC 9000 §9: no move before the handshake is confirmed, nor to a
    // server that sent disable_active_migration (§18.2); §9.5: none
    // without an unused connection ID of the server's. `can_migrate`
    // advised this; the connection now refuses.
    let mut pair = Pair::default();
    assert!(!moved(&mut pair), "before the handshake");

    // Earlier moves used up the server's spare IDs; its next ones have
    // not arrived.
    let mut pair = Pair::default();
    pair.handshake();
    while let Some(cid) = pair.client.cids.switch() {
        pair.client.peer_cid = cid;
    }
    assert!(!moved(&mut pair), "with no spare ID");

    let mut pair = Pair::default();
    pair.server
        .handshake
        .local_params_mut()
        .disable_active_migration = true;
    pair.handshake();
    pair.run_until(Duration::from_secs(1), &mut deliver_all, |p| {
        p.client.cids.has_spare()
    });
    assert!(!moved(&mut pair), "against disable_active_migration");

    let mut pair = Pair::default();
    pair.handshake();
    pair.run_until(Duration::from_secs(1), &mut deliver_all, |p| {
        p.client.cids.has_spare()
    });
    assert!(moved(&mut pair), "once it may");
}

#[test]
fn a_server_connection_does_not_move() {
    let mut pair = Pair::default();
    pair.handshake();
    pair.run_until(Duration::from_secs(1), &mut deliver_all, |_| false);
    let error = pair
        .server
        .on_local_address_changed(SocketAddr::new(addr(2).ip(), 9))
        .unwrap_err();
    assert!(matches!(error, Error::MigrationRefused(_)), "{error}");
    assert_eq!(pair.server.local(), addr(2));
}

#[test]
fn a_failed_validation_with_no_validated_address_to_return_to_closes_silently() {
    // RFC 9000 §9.3.2: with nothing validated to go back to, the
    // connection ends without a word and its state is discarded.
    let mut pair = Pair::default();
    pair.handshake();
    pair.run_until(Duration::from_secs(1), &mut deliver_all, |_| false);
    let moved_to = SocketAddr::new(addr(1).ip(), 3);
    pair.client
        .on_local_address_changed(moved_to)
        .expect("the client may move");
    // The server hears the client from there; nothing it sends arrives.
    let mut to_server_only = |to_server: bool, _: u64, _: &[u8]| {
        if to_server {
            PathAction::Deliver
        } else {
            PathAction::Drop
        }
    };
    assert!(
        pair.run_until(Duration::from_secs(1), &mut to_server_only, |p| {
            p.server.remote() == moved_to
        })
    );
    // As if the address it came from had never been validated.
    pair.server.path.previous = None;
    assert!(
        pair.run_until(Duration::from_secs(10), &mut to_server_only, |p| {
            p.server.is_closed()
        }),
        "the connection lives on at an address that never answered: {:?}",
        pair.server.stats()
    );
    assert!(
        matches!(pair.server.state, State::Closed),
        "its state is discarded at once, no draining"
    );
    assert_eq!(
        pair.server.close_reason(),
        Some(&CloseReason::PathValidationFailed)
    );
    let sent = pair.server.stats().bytes_sent;
    pair.run_until(Duration::from_secs(1), &mut deliver_all, |_| false);
    assert_eq!(
        pair.server.stats().bytes_sent,
        sent,
        "silently: no CONNECTION_CLOSE"
    );
}

#[test]
fn an_apparent_migration_challenges_the_path_left_and_its_answer_brings_the_connection_back() {
    // RFC 9000 §9.3.3: an attacker forwards one of the client's packets
    // from its own address; the server moves there, and challenges the
    // path it left too. The client, still there, answers, and its next
    // packets bring the server back long before the new address's
    // validation would have failed.
    let mut pair = Pair::default();
    pair.handshake();
    pair.run_until(Duration::from_secs(1), &mut deliver_all, |_| false);
    let attacker = SocketAddr::from(([192, 0, 2, 66], 4433));
    let mut ping = Vec::new();
    Frame::Ping.encode(&mut ping);
    let forwarded = client_datagram(&mut pair, &ping);
    server_receives_from(&mut pair, forwarded, attacker);
    assert_eq!(pair.server.remote(), attacker);
    let mut buf = vec![0u8; 65_535];
    let (mut to_attacker, mut to_old_path) = (Vec::new(), Vec::new());
    while let Ok(Some((len, info))) = pair.server.send(&mut buf, pair.now) {
        let datagram = buf[..len].to_vec();
        match info.to {
            to if to == attacker => to_attacker.push(datagram),
            to if to == addr(1) => to_old_path.push(datagram),
            to => panic!("a datagram to {to}"),
        }
    }
    // One full-size datagram to the path left, under an ID not used
    // toward the attacker's address (RFC 9000 §9.5).
    assert_eq!(to_old_path.len(), 1);
    let challenge = to_old_path.remove(0);
    assert!(challenge.len() >= 1200, "{} bytes", challenge.len());
    assert!(!to_attacker.is_empty());
    for datagram in &to_attacker {
        assert_ne!(short_header_dcid(datagram), short_header_dcid(&challenge));
    }
    let mut datagram = challenge;
    let _ = pair.client.recv(
        &mut datagram,
        RecvInfo {
            from: pair.server.local(),
            to: pair.client.local(),
            now: pair.now,
            ecn: Ecn::NotEct,
        },
    );
    let back = pair.run_until(Duration::from_millis(300), &mut deliver_all, |p| {
        p.server.remote() == addr(1) && p.server.path.old_path_answered == 1
    });
    assert!(back, "the server is still at {}", pair.server.remote());
    assert_eq!(pair.server.path.abandoned, 0, "it came back by the answer");
}

// ---- the server's preferred address (RFC 9000 §9.6, `conn::preferred`) ----

/// The address the preferred-address tests' server offers (loopback: a
/// second IP, the same port).
fn preferred_addr() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 2], 2))
}

/// A pair whose server offers `preferred_addr()`, `client` tuned by the
/// caller.
fn pair_with_preferred(client: Config) -> Pair {
    let server = Config {
        preferred_address: Some(super::PreferredAddresses {
            ipv4: Some("127.0.0.2:2".parse().unwrap()),
            ipv6: None,
        }),
        ..fixed_size()
    };
    Pair::new(client, server)
}

/// The server sends `data` on a stream; returns what the client read.
fn download_bytes(pair: &mut Pair, data: &[u8]) -> Vec<u8> {
    let id = pair.server.stream_open_uni().unwrap();
    let mut written = 0;
    let mut received = Vec::new();
    let mut buf = vec![0u8; 65_536];
    let start = pair.now;
    loop {
        assert!(
            pair.now - start < Duration::from_secs(60),
            "download stalled at {} bytes: {:?}",
            received.len(),
            pair.server.stats()
        );
        if written < data.len() {
            let end = (written + 64 * 1024).min(data.len());
            if let Ok(accepted) =
                pair.server
                    .stream_send(id, &data[written..end], end == data.len())
            {
                written += accepted;
            }
        }
        while let Some(stream) = pair.client.readable().first().copied() {
            let (n, fin) = pair.client.stream_recv(stream, &mut buf).unwrap();
            received.extend_from_slice(&buf[..n]);
            if fin {
                return received;
            }
            if n == 0 {
                break;
            }
        }
        assert!(pair.step(&mut deliver_all), "nothing left to do");
    }
}

#[test]
fn a_client_moves_to_the_preferred_address_and_the_download_completes_there() {
    // RFC 9000 §9.6: once the handshake is confirmed the client validates
    // the preferred address and sends there under the offered ID; the
    // server answers from it and moves once the path is validated. A
    // user would see a download that stalls or ends on the old address.
    let mut pair = pair_with_preferred(fixed_size());
    let log = logged(&mut pair.server);
    pair.handshake();
    let data = pattern(2_000_000);
    assert!(
        download_bytes(&mut pair, &data) == data,
        "the download differs"
    );
    assert_eq!(
        pair.client.preferred_address_move(),
        super::MoveState::Moved
    );
    assert_eq!(pair.client.remote(), preferred_addr());
    assert_eq!(
        pair.server.local(),
        preferred_addr(),
        "the server moved too"
    );
    assert!(pair.client.stats().on_preferred_address);
    assert!(pair.server.stats().on_preferred_address);
    // The offered ID is the one in use: the server's number 1.
    let offered = pair
        .server
        .handshake
        .local_params_mut()
        .preferred_address
        .unwrap();
    assert_eq!(pair.client.peer_cid, offered.connection_id);
    // The server challenged the new path itself (§9.6.2; the interop
    // runner asks it of a new path's first packet).
    assert!(!log.lock().unwrap().challenges.is_empty());
}

#[test]
fn a_client_told_not_to_move_stays_on_the_handshake_address() {
    let client = Config {
        move_to_preferred_address: false,
        ..fixed_size()
    };
    let mut pair = pair_with_preferred(client);
    pair.handshake();
    let data = pattern(500_000);
    assert!(
        download_bytes(&mut pair, &data) == data,
        "the download differs"
    );
    assert_eq!(
        pair.client.preferred_address_move(),
        super::MoveState::Declined
    );
    assert_eq!(pair.client.remote(), addr(2));
    assert_eq!(pair.server.local(), addr(2));
    assert!(!pair.server.stats().on_preferred_address);
}

#[test]
fn disable_active_migration_does_not_stop_the_move_to_a_preferred_address() {
    // RFC 9000 §18.2: the parameter "does not prohibit connection
    // migration after a client has acted on a preferred_address".
    let mut pair = pair_with_preferred(fixed_size());
    pair.server
        .handshake
        .local_params_mut()
        .disable_active_migration = true;
    pair.handshake();
    assert!(!pair.client.can_migrate(), "not on the handshake's address");
    let data = pattern(300_000);
    assert!(
        download_bytes(&mut pair, &data) == data,
        "the download differs"
    );
    assert_eq!(pair.client.remote(), preferred_addr());
    pair.run_until(Duration::from_secs(1), &mut deliver_all, |p| {
        p.client.cids.has_spare()
    });
    assert!(
        pair.client.can_migrate(),
        "moved: the parameter no longer applies"
    );
}

/// The client closes on the server's preferred_address `offer`; returns
/// the code and reason.
fn client_refuses_offer(offer: crate::wire::PreferredAddress) -> (u64, String) {
    let mut pair = Pair::default();
    pair.server.handshake.local_params_mut().preferred_address = Some(offer);
    pair.run_until(Duration::from_secs(2), &mut deliver_all, |p| {
        p.client.close_reason().is_some()
    });
    match pair.client.close_reason() {
        Some(CloseReason::Local {
            application: false,
            code,
            reason,
        }) => (*code, reason.clone()),
        other => panic!("the client took the offer: {other:?}"),
    }
}

#[test]
fn a_malformed_preferred_address_is_a_transport_parameter_error() {
    // RFC 9000 §18.2: no address at all, an unspecified one with a port,
    // or a zero-length connection ID.
    let no_address = crate::wire::PreferredAddress {
        ipv4: None,
        ipv6: None,
        ..preferred_address()
    };
    let unspecified = crate::wire::PreferredAddress {
        ipv4: Some("0.0.0.0:443".parse().unwrap()),
        ..preferred_address()
    };
    let empty_id = crate::wire::PreferredAddress {
        connection_id: ConnectionId::new(&[]).unwrap(),
        ..preferred_address()
    };
    for offer in [no_address, unspecified, empty_id] {
        let (code, reason) = client_refuses_offer(offer);
        assert_eq!(code, codes::TRANSPORT_PARAMETER_ERROR, "{reason}");
    }
}

#[test]
fn the_server_sends_an_unvalidated_preferred_path_at_most_three_times_what_came() {
    // RFC 9000 §8, §9.6.2: small packets to the preferred address (a
    // spoofed source, or a client whose answers are lost) draw challenges
    // from there, but never more than three times their bytes, and the
    // server keeps sending from its original address.
    let mut pair = pair_with_preferred(Config {
        move_to_preferred_address: false,
        ..fixed_size()
    });
    pair.handshake();
    pair.run_until(Duration::from_secs(1), &mut deliver_all, |_| false);
    let (mut arrived, mut sent) = (0, 0);
    let mut buf = vec![0u8; 65_535];
    for _ in 0..10 {
        let mut frames = Vec::new();
        Frame::Ping.encode(&mut frames);
        let mut datagram = client_datagram(&mut pair, &frames);
        arrived += datagram.len();
        let info = RecvInfo {
            from: addr(1),
            to: preferred_addr(),
            now: pair.now,
            ecn: crate::wire::Ecn::NotEct,
        };
        let _ = pair.server.recv(&mut datagram, info);
        while let Ok(Some((len, info))) = pair.server.send(&mut buf, pair.now) {
            if info.from == preferred_addr() {
                sent += len;
            }
        }
        pair.now += Duration::from_millis(5);
    }
    assert!(arrived < 100 * 10, "small datagrams: {arrived} bytes");
    assert!(sent > 0, "the path was challenged");
    assert!(sent <= 3 * arrived, "{sent} bytes for {arrived}");
    assert_eq!(pair.server.local(), addr(2), "not validated: no move");
}

#[test]
fn a_client_whose_preferred_address_never_answers_stays_on_the_original() {
    // RFC 9000 §9.6.1: validation first, and a failed one leaves the
    // client where it was. Nothing listens at the offered address here.
    let mut pair = pair_with_preferred(fixed_size());
    pair.handshake();
    pair.server.server_offer.addresses.clear();
    let data = pattern(300_000);
    assert!(
        download_bytes(&mut pair, &data) == data,
        "the download differs"
    );
    pair.run_until(Duration::from_secs(10), &mut deliver_all, |p| {
        p.client.preferred_address_move() == super::MoveState::GaveUp
    });
    assert_eq!(
        pair.client.preferred_address_move(),
        super::MoveState::GaveUp
    );
    assert_eq!(pair.client.remote(), addr(2), "still on the original");
    assert!(!pair.client.stats().on_preferred_address);
}
