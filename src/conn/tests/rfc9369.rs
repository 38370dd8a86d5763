//! RFC 9369 (QUIC version 2) on the two-endpoint harness: a client that
//! starts in v2 completes its handshake and moves data in v2, key updates
//! included, and a server that prefers v2 moves a v1 client that offers
//! it there by compatible negotiation (RFC 9368) without a round trip.

use super::*;
use crate::wire::{QUIC_V1, QUIC_V2};

/// The long-header version of every datagram that starts with one.
fn long_versions(pair: &mut Pair) -> Vec<(bool, u32)> {
    let mut seen = Vec::new();
    let mut watch = |to_server: bool, _: u64, bytes: &[u8]| {
        if bytes.first().is_some_and(|first| first & 0x80 != 0) {
            seen.push((
                to_server,
                u32::from_be_bytes(bytes[1..5].try_into().unwrap()),
            ));
        }
        PathAction::Deliver
    };
    let ok = pair.run_until(Duration::from_secs(5), &mut watch, |p| {
        p.client.is_established() && p.server.is_established() && p.client.handshake_confirmed
    });
    assert!(ok, "handshake did not complete");
    seen
}

#[test]
fn a_v2_client_and_server_handshake_and_transfer_in_v2() {
    let mut pair = Pair::new(versions(&[QUIC_V2]), versions(&[QUIC_V2, QUIC_V1]));
    let seen = long_versions(&mut pair);
    assert!(!seen.is_empty());
    assert!(
        seen.iter().all(|(_, version)| *version == QUIC_V2),
        "every long header in v2: {seen:x?}"
    );
    assert_eq!(pair.client.version(), QUIC_V2);
    assert_eq!(pair.server.version(), QUIC_V2);
    assert_eq!(pair.server.stats().version, "QUIC v2");
    assert!(!pair.client.corruption_notices_negotiated());
    let data = pattern(300_000);
    assert_eq!(transfer(&mut pair, &data, &mut deliver_all), data);
}

#[test]
fn key_updates_work_in_quic_v2() {
    // RFC 9369 §3.3.2: "quicv2 ku" derives the next phase's secrets.
    let config = || Config {
        key_update_interval: Some(50),
        ..versions(&[QUIC_V2])
    };
    let mut pair = Pair::new(config(), config());
    pair.handshake();
    let data = pattern(600_000);
    assert_eq!(transfer(&mut pair, &data, &mut deliver_all), data);
    assert!(pair.client.stats().key_updates >= 2);
}

#[test]
fn a_v2_client_transfers_through_loss() {
    let mut pair = Pair::new(versions(&[QUIC_V2]), versions(&[QUIC_V2]));
    pair.handshake();
    let mut count = 0;
    let mut lossy = |_: bool, _: u64, _: &[u8]| {
        count += 1;
        if count % 29 == 0 {
            PathAction::Drop
        } else {
            PathAction::Deliver
        }
    };
    let data = pattern(400_000);
    assert_eq!(transfer(&mut pair, &data, &mut lossy), data);
    assert!(pair.client.stats().packets_lost > 0);
}

#[test]
fn a_client_offering_v1_and_v2_stays_in_v1_as_its_tls_session_cannot_move() {
    // rustls fixes the key schedule when the client's session is made:
    // a client in v1 does not offer v2, so a server preferring v2 keeps
    // it in v1 instead of moving it where it could not follow.
    let mut pair = Pair::new(versions(&[QUIC_V1, QUIC_V2]), versions(&[QUIC_V2, QUIC_V1]));
    let seen = long_versions(&mut pair);
    assert!(
        seen.iter().all(|(_, version)| *version == QUIC_V1),
        "{seen:x?}"
    );
    assert_eq!(pair.client.version(), QUIC_V1);
    assert_eq!(pair.server.version(), QUIC_V1);
    let data = pattern(100_000);
    assert_eq!(transfer(&mut pair, &data, &mut deliver_all), data);
}

/// A pair whose client starts in v1 offering v2, with a TLS session that
/// already runs v2's key schedule (`Versions::with_session_in`: what a
/// TLS stack that can switch mid-handshake gives a client, and rustls
/// does not), and whose server speaks `server_versions`.
fn v1_client_able_to_follow_to_v2(server_versions: &[u32]) -> Pair {
    let mut pair = Pair::new(versions(&[QUIC_V1, QUIC_V2]), versions(server_versions));
    let client = &mut pair.client;
    client.versions =
        version::Versions::client(QUIC_V1, &[QUIC_V1, QUIC_V2]).with_session_in(QUIC_V2);
    let mut params = client.handshake.local_params_mut().clone();
    params.version_information = Some(client.versions.information(QUIC_V1));
    assert_eq!(
        params.version_information.as_ref().unwrap().available,
        [QUIC_V1, QUIC_V2]
    );
    client.handshake =
        handshake::Handshake::new(Side::Client, &client.config, client.remote, QUIC_V2, params)
            .unwrap();
    pair
}

#[test]
fn a_server_preferring_v2_moves_a_v1_client_that_offers_it_without_a_round_trip() {
    // RFC 9368 §2.3 and RFC 9369 §4: the server reads the client's v1
    // Initial under v1's Initial keys, answers from its first packet in
    // v2 (v2's Initial keys from the same client destination ID), and
    // still opens the client's Initials that come in v1.
    let mut pair = v1_client_able_to_follow_to_v2(&[QUIC_V2, QUIC_V1]);
    let seen = long_versions(&mut pair);
    let to_server: Vec<u32> = seen.iter().filter(|s| s.0).map(|s| s.1).collect();
    let to_client: Vec<u32> = seen.iter().filter(|s| !s.0).map(|s| s.1).collect();
    assert_eq!(to_server.first(), Some(&QUIC_V1), "{seen:x?}");
    assert!(to_server[1..].iter().all(|v| *v == QUIC_V2), "{seen:x?}");
    assert!(to_client.iter().all(|v| *v == QUIC_V2), "{seen:x?}");
    assert_eq!(pair.client.version(), QUIC_V2);
    assert_eq!(pair.server.version(), QUIC_V2);
    let data = pattern(200_000);
    assert_eq!(transfer(&mut pair, &data, &mut deliver_all), data);
    // As fast as a client that starts in v2.
    let upgraded = time_to_established_pair(v1_client_able_to_follow_to_v2(&[QUIC_V2, QUIC_V1]));
    let direct = time_to_established_pair(Pair::new(versions(&[QUIC_V2]), versions(&[QUIC_V2])));
    assert_eq!(upgraded, direct, "no round trip");
}

/// How long `pair`'s client takes to be established over the test path.
fn time_to_established_pair(mut pair: Pair) -> Duration {
    let start = pair.now;
    let ok = pair.run_until(Duration::from_secs(5), &mut deliver_all, |p| {
        p.client.is_established()
    });
    assert!(ok, "handshake did not complete");
    pair.now - start
}

#[test]
fn a_server_preferring_v2_reads_a_second_client_initial_still_in_v1() {
    // A client's Initial in its original version may come after the
    // server moved (a retransmission, the rest of a long ClientHello):
    // the server keeps v1's Initial keys for it.
    // The client's v1 Initial again after the server moved: opened (and
    // found a duplicate), not dropped as undecryptable or forged.
    let mut first = None;
    let mut grab = |to_server: bool, _: u64, bytes: &[u8]| {
        if to_server && first.is_none() {
            first = Some(bytes.to_vec());
        }
        PathAction::Deliver
    };
    let mut fresh = v1_client_able_to_follow_to_v2(&[QUIC_V2, QUIC_V1]);
    fresh.flush(&mut grab);
    let mut first = first.expect("the client's first datagram");
    assert_eq!(u32::from_be_bytes(first[1..5].try_into().unwrap()), QUIC_V1);
    assert!(fresh.step(&mut deliver_all));
    assert_eq!(fresh.server.version(), QUIC_V2);
    let before = fresh.server.counters;
    let from = addr(1);
    let now = fresh.now;
    fresh
        .server
        .recv(
            &mut first,
            RecvInfo {
                from,
                to: addr(2),
                now,
                ecn: Ecn::NotEct,
            },
        )
        .unwrap();
    let after = &fresh.server.counters;
    assert_eq!(after.undecryptable_dropped, before.undecryptable_dropped);
    assert_eq!(after.header_corrupt_dropped, before.header_corrupt_dropped);
    assert_eq!(after.duplicate_packets, before.duplicate_packets + 1);
    fresh.handshake();
    assert_eq!(fresh.client.version(), QUIC_V2);
}

#[test]
fn a_server_preferring_v1_keeps_a_client_offering_v2_in_v1() {
    let mut pair = v1_client_able_to_follow_to_v2(&[QUIC_V1, QUIC_V2]);
    // The client's session runs v2's schedule, so it cannot finish a v1
    // handshake: what matters is that the server stayed in v1.
    pair.flush(&mut deliver_all);
    pair.step(&mut deliver_all);
    assert_eq!(pair.server.version(), QUIC_V1);
}
