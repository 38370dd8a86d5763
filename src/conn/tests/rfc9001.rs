//! RFC 9001 on the two-endpoint harness (issue 53's requirements map,
//! `docs/requirements.toml`): when each level's keys come and go, which
//! packets may leave or be opened with them, and the rules of key update.
//! A misbehaving peer is played by sealing packets with its real keys.

use std::cell::RefCell;

use super::*;
use crate::crypto::format::{for_version, QUIC_V1 as QUIC_V1_FORMAT};
use crate::crypto::tls::{process_loopback_config, SessionCache, TicketStore};
use crate::crypto::{PacketFormat, PacketProtection, TlsConfig};
use crate::wire::QUIC_V1;

/// RFC 9000 §20.1.
const KEY_UPDATE_ERROR: u64 = 0xe;

/// The types of the packets coalesced in `datagram`, in order.
fn packet_types(datagram: &[u8]) -> Vec<PacketType> {
    let mut types = Vec::new();
    let mut rest = datagram;
    while let Some(&first) = rest.first() {
        if first & 0x80 == 0 {
            types.push(PacketType::OneRtt);
            break;
        }
        let Some(format) = rest
            .get(1..5)
            .and_then(|v| for_version(u32::from_be_bytes(v.try_into().unwrap())))
        else {
            break;
        };
        let Ok(parsed) = format.parse(rest) else {
            break;
        };
        types.push(parsed.ty);
        rest = &rest[parsed.packet_len..];
    }
    types
}

/// A 1-RTT packet from the server to the client (sift/1), numbered
/// `packet_number`, sealed with `keys` and marked `key_phase`.
fn sealed_for_client(
    pair: &Pair,
    keys: &dyn PacketProtection,
    key_phase: bool,
    packet_number: u64,
    frames: &[u8],
) -> Vec<u8> {
    let header = Header {
        ty: PacketType::OneRtt,
        version: VERSION,
        dcid: pair.client.local_cid(),
        scid: pair.server.local_cid(),
        token: &[],
        packet_number,
        payload_len: 0,
        key_phase,
    };
    let mut datagram = Vec::new();
    seal_packet(&header, frames, keys, &mut datagram).unwrap();
    datagram
}

fn deliver_to_client(pair: &mut Pair, mut datagram: Vec<u8>) {
    let info = RecvInfo {
        from: addr(2),
        to: addr(1),
        now: pair.now,
        ecn: Ecn::NotEct,
    };
    let _ = pair.client.recv(&mut datagram, info);
}

fn deliver_to_server(pair: &mut Pair, mut datagram: Vec<u8>) {
    let info = RecvInfo {
        from: addr(1),
        to: addr(2),
        now: pair.now,
        ecn: Ecn::NotEct,
    };
    let _ = pair.server.recv(&mut datagram, info);
}

/// A PING frame.
fn ping() -> Vec<u8> {
    let mut frames = Vec::new();
    Frame::Ping.encode(&mut frames);
    frames
}

/// Reads whatever the server has received, so flow control never holds
/// the client back.
fn server_reads(pair: &mut Pair) {
    let mut buf = vec![0u8; 65_536];
    while let Some(stream) = pair.server.readable().first().copied() {
        match pair.server.stream_recv(stream, &mut buf) {
            Ok((n, fin)) if n > 0 || fin => {}
            _ => break,
        }
    }
}

fn closed_with(conn: &Connection) -> Option<u64> {
    match conn.close_reason() {
        Some(CloseReason::Local { code, .. }) => Some(*code),
        _ => None,
    }
}

// ---- RFC 9001 §4.1.2: HANDSHAKE_DONE ------------------------------------------

#[test]
fn the_server_sends_handshake_done_as_its_handshake_completes() {
    let mut pair = Pair::default();
    while !pair.server.is_established() {
        assert!(pair.step(&mut deliver_all));
    }
    let completed = pair.now;
    assert!(!pair.client.handshake_confirmed);
    let confirmed = pair.run_until(Duration::from_secs(1), &mut deliver_all, |p| {
        p.client.handshake_confirmed
    });
    assert!(confirmed);
    // The server's next datagram carried it: one hop later.
    assert_eq!(pair.now - completed, pair.one_way);
}

// ---- RFC 9001 §4.9.1: Initial keys -------------------------------------------

/// Runs a handshake through `path`, checking after every step that a side
/// that has sent (client) or opened (server) a Handshake packet holds no
/// Initial keys, and that no Initial packet numbers are used after.
fn check_initial_keys_through(path: &mut dyn FnMut(bool, u64, &[u8]) -> PathAction) {
    let mut pair = Pair::default();
    let mut initials_at_discard: [Option<u64>; 2] = [None, None];
    let done = pair.run_until(Duration::from_secs(10), path, |p| {
        for (index, conn) in [&p.client, &p.server].into_iter().enumerate() {
            let used_handshake = match conn.side {
                // The client drops them when it sends a Handshake packet...
                Side::Client => conn.spaces[SpaceId::Handshake].next_packet_number > 0,
                // ...the server when it opens one.
                Side::Server => conn.spaces[SpaceId::Handshake]
                    .acks
                    .largest_received()
                    .is_some(),
            };
            if used_handshake {
                assert!(
                    conn.spaces[SpaceId::Initial].keys.is_none(),
                    "{:?} kept Initial keys",
                    conn.side
                );
                let sent = conn.spaces[SpaceId::Initial].next_packet_number;
                let at_discard = *initials_at_discard[index].get_or_insert(sent);
                assert_eq!(sent, at_discard, "{:?} sent an Initial after", conn.side);
            }
        }
        p.client.handshake_confirmed && p.server.is_established()
    });
    assert!(done, "the handshake did not complete");
    assert!(initials_at_discard.iter().all(Option::is_some));
}

#[test]
fn a_client_drops_its_initial_keys_with_its_first_handshake_packet() {
    check_initial_keys_through(&mut deliver_all);
}

#[test]
fn a_server_drops_its_initial_keys_on_the_first_handshake_packet_it_opens() {
    // Lose the server's first flight once, so that Initials are resent
    // while Handshake packets are in flight.
    let mut path = |to_server: bool, index: u64, _: &[u8]| {
        if !to_server && index == 1 {
            PathAction::Drop
        } else {
            PathAction::Deliver
        }
    };
    check_initial_keys_through(&mut path);
}

#[test]
fn no_initial_packet_leaves_once_a_handshake_packet_has() {
    let seen: RefCell<[Vec<PacketType>; 2]> = RefCell::new([Vec::new(), Vec::new()]);
    let mut pair = Pair::default();
    let mut record = |to_server: bool, _: u64, bytes: &[u8]| {
        seen.borrow_mut()[usize::from(to_server)].extend(packet_types(bytes));
        PathAction::Deliver
    };
    let data = pattern(20_000);
    assert_eq!(transfer(&mut pair, &data, &mut record), data);
    for (side, types) in seen.borrow().iter().enumerate() {
        let first_handshake = types.iter().position(|t| *t == PacketType::Handshake);
        if let Some(first) = first_handshake {
            // The client's own: none at all after its first Handshake packet.
            if side == 1 {
                assert!(!types[first..].contains(&PacketType::Initial), "{types:?}");
            }
        }
    }
}

// ---- RFC 9001 §4.9, §4.9.3, §5.6: 0-RTT keys and packets ---------------------

/// A client keeping tickets in `store`, a server issuing them from `cache`.
fn resumable(store: &TicketStore, cache: &SessionCache) -> (Config, Config) {
    let tls = process_loopback_config();
    let client = Config {
        tls: TlsConfig {
            tickets: Some(store.clone()),
            ..tls.clone()
        },
        ..fixed_size()
    };
    let server = Config {
        tls: TlsConfig {
            session_cache: Some(cache.clone()),
            ..tls
        },
        ..fixed_size()
    };
    (client, server)
}

/// A pair whose client resumes with 0-RTT, a request written before its
/// first flight.
pub(super) fn resumed_pair() -> Pair {
    let (store, cache) = (TicketStore::new(), SessionCache::new(16, true));
    let (client, server) = resumable(&store, &cache);
    let mut first = Pair::new(client.clone(), server.clone());
    first.handshake();
    let got = first.run_until(Duration::from_secs(1), &mut deliver_all, |_| {
        !store.is_empty()
    });
    assert!(got, "no ticket");
    let mut pair = Pair::new(client, server);
    assert!(pair.client.early_data_possible());
    let id = pair.client.stream_open_bi().unwrap();
    pair.client.mark_replay_safe(id);
    pair.client.stream_send(id, &pattern(5_000), true).unwrap();
    pair
}

#[test]
fn zero_rtt_keys_are_gone_once_one_rtt_keys_are_installed() {
    let mut pair = resumed_pair();
    let mut server_had_zero_rtt_keys = false;
    let done = pair.run_until(Duration::from_secs(5), &mut deliver_all, |p| {
        // The client's 1-RTT keys replace its 0-RTT keys at once.
        if p.client.spaces[SpaceId::Data].keys.is_some() {
            assert!(p.client.zero_rtt.keys.is_none(), "client kept 0-RTT keys");
        }
        server_had_zero_rtt_keys |= p.server.zero_rtt.keys.is_some();
        // The server's go when its handshake completes, which the first
        // 1-RTT packet it may read follows.
        if p.server.handshake.is_complete() {
            assert!(p.server.zero_rtt.keys.is_none(), "server kept 0-RTT keys");
        }
        p.client.handshake_confirmed && p.server.is_established()
    });
    assert!(done);
    assert!(server_had_zero_rtt_keys, "0-RTT was not accepted");
    assert!(pair.client.stats().zero_rtt_accepted);
}

#[test]
fn no_zero_rtt_packet_leaves_after_one_rtt_and_none_from_the_server() {
    let mut pair = resumed_pair();
    let seen: RefCell<[Vec<PacketType>; 2]> = RefCell::new([Vec::new(), Vec::new()]);
    let mut record = |to_server: bool, _: u64, bytes: &[u8]| {
        seen.borrow_mut()[usize::from(to_server)].extend(packet_types(bytes));
        PathAction::Deliver
    };
    let confirmed = pair.run_until(Duration::from_secs(5), &mut record, |p| {
        server_reads(p);
        p.client.handshake_confirmed
    });
    assert!(confirmed);
    let id = pair.client.stream_open_bi().unwrap();
    pair.client
        .stream_send(id, &pattern(100_000), true)
        .unwrap();
    pair.run_until(Duration::from_secs(2), &mut record, |p| {
        server_reads(p);
        false
    });
    let [to_client, to_server] = &*seen.borrow();
    let first_one_rtt = to_server
        .iter()
        .position(|t| *t == PacketType::OneRtt)
        .unwrap();
    assert!(
        to_server[..first_one_rtt].contains(&PacketType::ZeroRtt),
        "the client sent no 0-RTT: the test shows nothing"
    );
    assert!(
        !to_server[first_one_rtt..].contains(&PacketType::ZeroRtt),
        "0-RTT after 1-RTT"
    );
    assert!(
        !to_client.contains(&PacketType::ZeroRtt),
        "the server sealed with 0-RTT keys"
    );
}

#[test]
fn a_client_discards_zero_rtt_packets_unread() {
    let mut pair = resumed_pair();
    pair.handshake();
    let before = pair.client.counters;
    // A 0-RTT packet, as if the server had sealed one: the client never
    // tries to open it.
    let header = Header {
        ty: PacketType::ZeroRtt,
        version: pair.client.version(),
        dcid: pair.client.local_cid(),
        scid: pair.server.local_cid(),
        token: &[],
        packet_number: 1_000,
        payload_len: 0,
        key_phase: false,
    };
    let mut datagram = Vec::new();
    let keys = pair.server.spaces[SpaceId::Data].keys.as_deref().unwrap();
    seal_packet(&header, &ping(), keys, &mut datagram).unwrap();
    deliver_to_client(&mut pair, datagram);
    let after = &pair.client.counters;
    assert_eq!(
        after.undecryptable_dropped,
        before.undecryptable_dropped + 1
    );
    assert_eq!(after.packets_received, before.packets_received);
    assert!(!pair.client.is_closing());
}

// ---- RFC 9001 §5.7: the client ---------------------------------------------------

#[test]
fn a_client_opens_no_one_rtt_packet_before_its_handshake_completes() {
    let v1 = || Config {
        versions: vec![QUIC_V1],
        ..fixed_size()
    };
    let mut pair = Pair::new(v1(), v1());
    // The client's Initial reaches the server, which then holds 1-RTT keys.
    assert!(pair.step(&mut deliver_all));
    let server_keys = pair.server.spaces[SpaceId::Data].keys.as_deref();
    let server_keys = server_keys.expect("a server has 1-RTT keys with its first flight");
    // A 1-RTT packet the server could send now, before the client has
    // even its Handshake keys.
    let header = Header {
        ty: PacketType::OneRtt,
        version: QUIC_V1,
        dcid: pair.client.local_cid(),
        scid: pair.server.local_cid(),
        token: &[],
        packet_number: 0,
        payload_len: 0,
        key_phase: false,
    };
    let mut datagram = vec![0u8; 256];
    let len = QUIC_V1_FORMAT
        .seal_into(
            &header,
            None,
            &ping(),
            server_keys,
            &mut Vec::new(),
            &mut datagram,
        )
        .unwrap();
    datagram.truncate(len);
    let before = pair.client.counters;
    deliver_to_client(&mut pair, datagram);
    // Held unread (conn/held.rs) or dropped, never opened.
    let after = pair.client.counters;
    assert_eq!(
        after.one_rtt_held + after.undecryptable_dropped,
        before.one_rtt_held + before.undecryptable_dropped + 1
    );
    assert_eq!(
        pair.client.counters.packets_received,
        before.packets_received
    );
    let done = pair.run_until(Duration::from_secs(5), &mut deliver_all, |p| {
        if p.client.spaces[SpaceId::Data].keys.is_some() {
            assert!(
                p.client.handshake.is_complete(),
                "1-RTT keys before completion"
            );
        }
        p.client.is_established()
    });
    assert!(done);
}

// ---- RFC 9001 §6: key update -------------------------------------------------

#[test]
fn the_next_phase_keys_are_ready_before_any_packet_needs_them() {
    let forcing = Config {
        key_update_interval: Some(20),
        ..fixed_size()
    };
    let mut pair = Pair::new(forcing, fixed_size());
    pair.handshake();
    for conn in [&pair.client, &pair.server] {
        assert!(conn.key_phases.next_keys().is_some(), "{:?}", conn.side);
    }
    let data = pattern(200_000);
    assert_eq!(transfer(&mut pair, &data, &mut deliver_all), data);
    assert!(pair.client.key_phases.updates >= 2);
    for conn in [&pair.client, &pair.server] {
        assert!(conn.key_phases.next_keys().is_some(), "{:?}", conn.side);
        assert!(conn.key_phases.previous_keys().is_some(), "{:?}", conn.side);
    }
}

#[test]
fn no_key_update_starts_before_the_handshake_is_confirmed() {
    let eager = Config {
        key_update_interval: Some(1),
        ..fixed_size()
    };
    let mut pair = Pair::new(eager, fixed_size());
    let id = pair.client.stream_open_bi().unwrap();
    pair.client
        .stream_send(id, &pattern(50_000), false)
        .unwrap();
    // The client completes its handshake; HANDSHAKE_DONE is still on its way.
    while !pair.client.is_established() {
        assert!(pair.step(&mut deliver_all));
    }
    pair.flush(&mut deliver_all);
    assert!(!pair.client.handshake_confirmed);
    let sent = pair.client.spaces[SpaceId::Data].next_packet_number;
    assert!(sent > 0, "the client sent 1-RTT packets");
    // The server acknowledges its latest 1-RTT packet, without confirming.
    let mut acked = RangeSet::default();
    acked.insert(sent - 1..sent);
    let mut frames = Vec::new();
    encode_ack(&acked, 0, 16, &mut frames);
    let server_pn = pair.server.spaces[SpaceId::Data].next_packet_number + 50;
    let keys = pair.server.spaces[SpaceId::Data].keys.as_deref().unwrap();
    let datagram = sealed_for_client(&pair, keys, false, server_pn, &frames);
    deliver_to_client(&mut pair, datagram);
    let mut buf = vec![0u8; 65_535];
    while let Ok(Some(_)) = pair.client.send(&mut buf, pair.now) {}
    assert!(!pair.client.is_closing());
    assert!(!pair.client.handshake_confirmed);
    assert_eq!(
        pair.client.key_phases.updates, 0,
        "updated before confirmation"
    );
    // Once confirmed, the interval of one packet takes effect.
    pair.client.stream_send(id, &pattern(50_000), true).unwrap();
    let updated = pair.run_until(Duration::from_secs(5), &mut deliver_all, |p| {
        server_reads(p);
        p.client.key_phases.updates > 0
    });
    assert!(updated && pair.client.handshake_confirmed);
}

#[test]
fn a_second_key_update_waits_for_an_ack_in_the_current_phase() {
    let forcing = Config {
        key_update_interval: Some(5),
        ..fixed_size()
    };
    let mut pair = Pair::new(forcing, fixed_size());
    pair.handshake();
    let data = pattern(50_000);
    assert_eq!(transfer(&mut pair, &data, &mut deliver_all), data);
    let updates = pair.client.key_phases.updates;
    let sent = pair.client.spaces[SpaceId::Data].next_packet_number;
    // From now on nothing reaches the client: no acknowledgement of any
    // packet of a new phase.
    let id = pair.client.stream_open_bi().unwrap();
    pair.client
        .stream_send(id, &pattern(100_000), true)
        .unwrap();
    let mut cut = |to_server: bool, _: u64, _: &[u8]| {
        if to_server {
            PathAction::Deliver
        } else {
            PathAction::Drop
        }
    };
    pair.run_until(Duration::from_secs(3), &mut cut, |_| false);
    assert!(pair.client.spaces[SpaceId::Data].next_packet_number >= sent + 20);
    assert!(
        pair.client.key_phases.updates <= updates + 1,
        "{} updates without an acknowledgement",
        pair.client.key_phases.updates - updates
    );
}

#[test]
fn the_ack_of_a_peer_key_update_leaves_under_the_new_keys() {
    let forcing = Config {
        key_update_interval: Some(30),
        ..fixed_size()
    };
    let mut pair = Pair::new(forcing, fixed_size());
    pair.handshake();
    let id = pair.client.stream_open_bi().unwrap();
    pair.client
        .stream_send(id, &pattern(200_000), true)
        .unwrap();
    while pair.server.key_phases.updates == 0 {
        assert!(pair.step(&mut deliver_all));
    }
    assert!(pair.server.key_phases.phase);
    // The first datagrams the server sends from now on (its ACK of the
    // update among them) are in the new phase.
    let phases = RefCell::new(Vec::new());
    let mut record = |to_server: bool, _: u64, bytes: &[u8]| {
        if !to_server {
            phases
                .borrow_mut()
                .push(parse_header(bytes).unwrap().key_phase);
        }
        PathAction::Deliver
    };
    while phases.borrow().is_empty() {
        assert!(pair.step(&mut record));
    }
    let phases = phases.into_inner();
    assert!(phases.iter().all(|phase| *phase), "{phases:?}");
}

#[test]
fn a_packet_that_seems_to_update_the_keys_but_does_not_open_is_dropped() {
    let mut pair = Pair::default();
    pair.handshake();
    let before = pair.client.counters;
    // Current keys, but the key-phase bit of the next phase.
    let packet_number = pair.server.spaces[SpaceId::Data].next_packet_number + 10;
    let keys = pair.server.spaces[SpaceId::Data].keys.as_deref().unwrap();
    let datagram = sealed_for_client(&pair, keys, true, packet_number, &ping());
    deliver_to_client(&mut pair, datagram);
    let after = &pair.client.counters;
    assert_eq!(
        after.header_corrupt_dropped,
        before.header_corrupt_dropped + 1
    );
    assert_eq!(after.packets_received, before.packets_received);
    assert_eq!(pair.client.key_phases.updates, 0);
    assert!(!pair.client.key_phases.phase);
    // The next keys are kept for the real update.
    assert!(pair.client.key_phases.next_keys().is_some());
    assert!(!pair.client.is_closing());
    let data = pattern(20_000);
    assert_eq!(transfer(&mut pair, &data, &mut deliver_all), data);
}

#[test]
fn old_keys_open_only_packets_numbered_below_the_new_phase() {
    let forcing = Config {
        key_update_interval: Some(10),
        ..fixed_size()
    };
    let mut pair = Pair::new(fixed_size(), forcing);
    pair.handshake();
    let data = pattern(100_000);
    assert_eq!(transfer(&mut pair, &data, &mut deliver_all), data);
    pair.run_until(Duration::from_secs(1), &mut deliver_all, |_| false);
    assert!(pair.server.key_phases.updates >= 1);
    assert_eq!(pair.client.key_phases.phase, pair.server.key_phases.phase);
    let old_phase = !pair.server.key_phases.phase;
    let lowest = pair
        .client
        .key_phases
        .lowest_received_in_phase()
        .expect("a packet of the new phase arrived");
    assert!(lowest > 0);

    // Old keys, numbered after the new phase began: dropped, nothing else.
    let before = pair.client.counters;
    let later = pair.server.spaces[SpaceId::Data].next_packet_number + 10;
    let keys = pair.server.key_phases.previous_keys().unwrap();
    let datagram = sealed_for_client(&pair, keys, old_phase, later, &ping());
    deliver_to_client(&mut pair, datagram);
    let after = pair.client.counters;
    assert_eq!(
        after.header_corrupt_dropped,
        before.header_corrupt_dropped + 1
    );
    assert_eq!(after.packets_received, before.packets_received);
    assert!(!pair.client.is_closing());

    // Old keys, numbered before it: still opened (a late packet).
    let keys = pair.server.key_phases.previous_keys().unwrap();
    let datagram = sealed_for_client(&pair, keys, old_phase, lowest - 1, &ping());
    deliver_to_client(&mut pair, datagram);
    let opened = &pair.client.counters;
    assert_eq!(opened.header_corrupt_dropped, after.header_corrupt_dropped);
    assert_eq!(
        opened.packets_received + opened.duplicate_packets,
        after.packets_received + after.duplicate_packets + 1
    );
    assert!(!pair.client.is_closing());
}

#[test]
fn a_peer_update_numbered_below_an_old_phase_packet_is_a_key_update_error() {
    let mut pair = Pair::default();
    pair.handshake();
    let next = pair.server.spaces[SpaceId::Data].next_packet_number;
    // Phase 0 opens packet next + 10...
    let keys = pair.server.spaces[SpaceId::Data].keys.as_deref().unwrap();
    let datagram = sealed_for_client(&pair, keys, false, next + 10, &ping());
    deliver_to_client(&mut pair, datagram);
    assert!(!pair.client.is_closing());
    // ...then phase 1 opens packet next + 5: newer keys on an older number.
    let keys = pair.server.key_phases.next_keys().unwrap();
    let datagram = sealed_for_client(&pair, keys, true, next + 5, &ping());
    deliver_to_client(&mut pair, datagram);
    assert_eq!(closed_with(&pair.client), Some(KEY_UPDATE_ERROR));
}

#[test]
fn a_key_update_starts_before_the_confidentiality_limit() {
    let mut pair = Pair::default();
    pair.handshake();
    let data = pattern(20_000);
    assert_eq!(transfer(&mut pair, &data, &mut deliver_all), data);
    assert_eq!(
        pair.client.key_phases.updates, 0,
        "no update far from the limit"
    );
    let keys = pair.client.spaces[SpaceId::Data].keys.as_deref().unwrap();
    let limit = keys.confidentiality_limit();
    assert_eq!(limit, 1 << 23, "AES-128-GCM (RFC 9001 §6.6)");
    // 2^16 packets short of the limit: the update is due now.
    pair.client.key_phases.set_sent_in_phase(limit - (1 << 16));
    assert_eq!(transfer(&mut pair, &data, &mut deliver_all), data);
    assert_eq!(pair.client.key_phases.updates, 1);
    assert_eq!(pair.server.key_phases.updates, 1, "the server followed");
}

// ---- RFC 9001 §8.3, §9.2: what a 0-RTT packet may carry ----------------------

/// A resumed pair stepped until the server has accepted 0-RTT but not
/// completed its handshake.
fn server_in_early_data() -> Pair {
    let mut pair = resumed_pair();
    while pair.server.zero_rtt.keys.is_none() {
        assert!(pair.step(&mut deliver_all));
    }
    assert!(!pair.server.handshake.is_complete());
    pair
}

/// A 0-RTT packet from the client carrying `frames`, as the client would
/// seal one.
fn zero_rtt_packet(pair: &mut Pair, frames: &[u8]) -> Vec<u8> {
    let packet_number = pair.client.spaces[SpaceId::Data].next_packet_number;
    pair.client.spaces[SpaceId::Data].next_packet_number += 1;
    let header = Header {
        ty: PacketType::ZeroRtt,
        version: pair.client.version(),
        dcid: pair.server.local_cid(),
        scid: pair.client.local_cid(),
        token: &[],
        packet_number,
        payload_len: 0,
        key_phase: false,
    };
    let mut datagram = Vec::new();
    let keys = pair.client.zero_rtt.keys.as_deref().unwrap();
    seal_packet(&header, frames, keys, &mut datagram).unwrap();
    datagram
}

#[test]
fn a_zero_rtt_packet_carrying_what_the_client_may_send_is_read() {
    let mut pair = server_in_early_data();
    let datagram = zero_rtt_packet(&mut pair, &ping());
    let before = pair.server.counters.packets_received;
    deliver_to_server(&mut pair, datagram);
    assert_eq!(pair.server.counters.packets_received, before + 1);
    assert!(!pair.server.is_closing());
}

#[test]
fn a_crypto_frame_in_a_zero_rtt_packet_is_a_protocol_violation() {
    let mut pair = server_in_early_data();
    let mut frames = Vec::new();
    Frame::Crypto {
        offset: 0,
        data: b"not in 0-RTT",
    }
    .encode(&mut frames);
    let datagram = zero_rtt_packet(&mut pair, &frames);
    deliver_to_server(&mut pair, datagram);
    assert_eq!(closed_with(&pair.server), Some(codes::PROTOCOL_VIOLATION));
}

#[test]
fn a_corrupted_frame_in_a_zero_rtt_packet_is_a_protocol_violation() {
    // CORRUPTED, sift's own frame, names received 1-RTT packets as ACK
    // does: nothing it could name exists before the handshake, and a
    // replayed 0-RTT packet must not carry it (RFC 9001 §9.2).
    let mut pair = server_in_early_data();
    let mut named = RangeSet::default();
    named.insert(0..1);
    let mut frames = Vec::new();
    encode_corrupted(&named, 16, &mut frames);
    let datagram = zero_rtt_packet(&mut pair, &frames);
    deliver_to_server(&mut pair, datagram);
    assert_eq!(closed_with(&pair.server), Some(codes::PROTOCOL_VIOLATION));
}
