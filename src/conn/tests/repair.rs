//! Erasure coding between sift ends (`conn::fec`, docs/repair.md): what a
//! user of a long lossy path would notice if it broke — lost packets
//! waiting a round trip again, repair on a path where it costs, or a peer
//! that did not offer coding seeing a frame it cannot read.

use super::*;
use crate::fec::policy::RepairMode;

fn long_path_pair(client: RepairMode, server: RepairMode) -> Pair {
    let mut pair = Pair::new(
        Config {
            repair: client,
            ..fixed_size()
        },
        Config {
            repair: server,
            ..fixed_size()
        },
    );
    // 400 ms round trip: past the policy's 150 ms, where a round trip is dear.
    pair.one_way = Duration::from_millis(200);
    pair
}

/// Drops every 20th data datagram from the client (5%).
fn five_percent_of_data(to_server: bool, index: u64, bytes: &[u8]) -> PathAction {
    if to_server && bytes.len() > 1000 && index % 20 == 7 {
        PathAction::Drop
    } else {
        PathAction::Deliver
    }
}

#[test]
fn lost_packets_on_a_long_lossy_path_are_rebuilt_not_resent() {
    let mut pair = long_path_pair(RepairMode::Auto, RepairMode::Auto);
    pair.handshake();
    let data = pattern(400_000);
    assert_eq!(transfer(&mut pair, &data, &mut five_percent_of_data), data);
    let (client, server) = (pair.client.stats(), pair.server.stats());
    assert!(client.repair.negotiated && server.repair.negotiated);
    assert!(client.repair.symbols_sent > 0, "{:?}", client.repair);
    assert!(
        server.repair.packets_rebuilt > 0,
        "the receiver rebuilt nothing: {:?}",
        server.repair
    );
    // A rebuilt packet is acknowledged as received: never declared lost,
    // never sent again. The first losses (before the sender saw any) are.
    let dropped = pair.datagrams_to_server / 20;
    assert!(
        client.retransmitted_packets + server.repair.packets_rebuilt >= dropped / 2
            && client.retransmitted_packets < dropped,
        "retransmitted {} of {dropped} dropped, {} rebuilt",
        client.retransmitted_packets,
        server.repair.packets_rebuilt
    );
}

#[test]
fn a_clean_long_path_sends_no_repair() {
    let mut pair = long_path_pair(RepairMode::Auto, RepairMode::Auto);
    pair.handshake();
    let data = pattern(300_000);
    assert_eq!(transfer(&mut pair, &data, &mut deliver_all), data);
    let client = pair.client.stats();
    assert!(client.repair.negotiated);
    assert_eq!(client.repair.symbols_sent, 0);
    assert_eq!(client.repair.repair_bytes_sent, 0);
}

#[test]
fn a_short_path_sends_no_repair_however_lossy() {
    let mut pair = Pair::default();
    pair.handshake();
    let data = pattern(300_000);
    assert_eq!(transfer(&mut pair, &data, &mut five_percent_of_data), data);
    let client = pair.client.stats();
    assert!(client.repair.negotiated, "auto offers coding");
    assert!(client.retransmitted_packets > 0);
    assert_eq!(client.repair.symbols_sent, 0, "a round trip is cheap here");
}

#[test]
fn on_repairs_a_short_lossy_path_too() {
    let mut pair = Pair::new(
        Config {
            repair: RepairMode::On,
            ..fixed_size()
        },
        fixed_size(),
    );
    pair.handshake();
    let data = pattern(300_000);
    assert_eq!(transfer(&mut pair, &data, &mut five_percent_of_data), data);
    assert!(pair.client.stats().repair.symbols_sent > 0);
}

#[test]
fn coding_needs_both_sides() {
    let mut pair = long_path_pair(RepairMode::On, RepairMode::Off);
    pair.handshake();
    let data = pattern(200_000);
    assert_eq!(transfer(&mut pair, &data, &mut five_percent_of_data), data);
    let (client, server) = (pair.client.stats(), pair.server.stats());
    assert!(!client.repair.negotiated && !server.repair.negotiated);
    assert_eq!(client.repair.symbols_sent, 0);
}

#[test]
fn a_repair_frame_without_coding_negotiated_is_a_protocol_violation() {
    let mut pair = long_path_pair(RepairMode::Off, RepairMode::Auto);
    pair.handshake();
    let now = pair.now;
    let frame = Frame::Repair {
        last: 3,
        first: 0,
        seed: 1,
        symbol: &[0, 1, 9],
    };
    let error = pair
        .client
        .process_frame(SpaceId::Data, frame, now)
        .expect_err("the client never offered coding");
    assert_eq!(error.code, codes::PROTOCOL_VIOLATION);
    let error = pair
        .client
        .process_frame(SpaceId::Data, Frame::Repaired(1), now)
        .expect_err("nor REPAIRED");
    assert_eq!(error.code, codes::PROTOCOL_VIOLATION);
}

#[test]
fn a_corrupted_payload_is_an_erasure_the_code_can_fill() {
    // Every 20th data datagram arrives with its payload damaged: the
    // receiver names it (CORRUPTED) and may rebuild it too; the sender's
    // resend and the rebuilt packet are the same bytes, whichever comes
    // first, and the transfer stays byte-exact with no congestion event.
    let mut pair = long_path_pair(RepairMode::On, RepairMode::On);
    pair.handshake();
    let data = pattern(400_000);
    let path = |to_server: bool, index: u64, bytes: &[u8]| {
        if to_server && bytes.len() > 1000 && index % 20 == 7 {
            PathAction::DamagePayload
        } else {
            PathAction::Deliver
        }
    };
    let mut lossy = |to_server: bool, index: u64, bytes: &[u8]| {
        if to_server && index == 30 {
            PathAction::Drop // one loss, so that the sender's policy arms
        } else {
            path(to_server, index, bytes)
        }
    };
    assert_eq!(transfer(&mut pair, &data, &mut lossy), data);
    let (client, server) = (pair.client.stats(), pair.server.stats());
    assert!(server.payload_corrupt_received > 0);
    assert!(client.repair.symbols_sent > 0);
    assert!(
        server.repair.packets_rebuilt > 0,
        "no damaged packet rebuilt: {:?}",
        server.repair
    );
    assert!(client.corruption_notices_received > 0);
    // The one congestion event is the dropped packet's, before the policy
    // armed; damage is never congestion.
    assert!(client.congestion_events <= 1, "{client:?}");
}
