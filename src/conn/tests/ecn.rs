//! ECN (RFC 9000 §13.4, RFC 9002 §7.1) between two connections: the
//! counts each space reports, validation on honest and broken paths, and
//! the answer to CE marks. The state machine alone is tested in
//! `conn::ecn`.

use super::*;
use crate::conn::ecn::EcnState;
use crate::wire::put_varint;

/// A Pair whose path does `ecn_path` to each datagram's ECN field.
fn pair_with_ecn_path(ecn_path: impl FnMut(bool, Ecn) -> Ecn + 'static) -> Pair {
    let mut pair = Pair::default();
    pair.ecn_path = Box::new(ecn_path);
    pair
}

fn reno() -> Config {
    Config {
        cc: sift_cc::CcConfig::Reno(sift_cc::RenoConfig::default()),
        ..fixed_size()
    }
}

fn data(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// The client's ACK-eliciting 1-RTT packet numbers (`count` of them, a
/// PING each), sent and dropped, so that forged ACKs can name them.
fn client_sends_pings(pair: &mut Pair, count: usize) -> Vec<u64> {
    let mut numbers = Vec::new();
    let mut buf = vec![0u8; 2048];
    for _ in 0..count {
        pair.client.spaces[SpaceId::Data].probes = 1;
        let sent = pair.client.send(&mut buf, pair.now).unwrap();
        assert!(sent.is_some());
        numbers.push(pair.client.spaces[SpaceId::Data].next_packet_number - 1);
    }
    numbers
}

/// An ACK_ECN frame acknowledging `first..=largest` with these counts.
fn ack_ecn(first: u64, largest: u64, counts: [u64; 3]) -> Vec<u8> {
    let mut frame = Vec::new();
    put_varint(&mut frame, 0x03);
    put_varint(&mut frame, largest);
    put_varint(&mut frame, 0); // delay
    put_varint(&mut frame, 0); // no gaps
    put_varint(&mut frame, largest - first);
    for count in counts {
        put_varint(&mut frame, count);
    }
    frame
}

#[test]
fn an_honest_path_validates_ecn_at_both_ends() {
    let mut pair = Pair::default();
    pair.handshake();
    let sent = data(200_000);
    assert_eq!(transfer(&mut pair, &sent, &mut deliver_all), sent);
    for conn in [&pair.client, &pair.server] {
        let ecn = conn.stats().ecn;
        assert_eq!(ecn.state, EcnState::Capable, "{:?}: {ecn:?}", conn.side());
        assert!(ecn.sent.ect0 > 0 && ecn.received.ect0 > 0, "{ecn:?}");
        assert_eq!(ecn.reported_by_peer.ce, 0);
    }
    // Once capable, every packet is marked: nearly all the client's.
    let client = pair.client.stats();
    assert!(
        client.ecn.sent.ect0 * 10 > client.packets_sent * 9,
        "{client:?}"
    );
}

#[test]
fn ack_ecn_frames_report_the_counts_of_their_own_space() {
    let mut pair = Pair::default();
    pair.handshake();
    let sent = data(50_000);
    transfer(&mut pair, &sent, &mut deliver_all);
    settle_all(&mut pair);
    // The server's first flight coalesces an Initial and a Handshake
    // packet in one ECT(0) datagram: each counts in its own space.
    let client_initial = pair.client.spaces[SpaceId::Initial].ecn_received;
    let client_handshake = pair.client.spaces[SpaceId::Handshake].ecn_received;
    assert!(client_initial.ect0 > 0 && client_handshake.ect0 > 0);
    // Each space's ACK_ECN frames carry that space's counts: what the
    // client read for a space is what the server counted there (up to the
    // ACK-only packets that came after its last ACK). A server drops its
    // Handshake space as its handshake completes, with no ACK sent there.
    for space in [SpaceId::Initial, SpaceId::Data] {
        let counted = pair.server.spaces[space].ecn_received;
        let reported = pair.client.ecn.reported_in(space);
        assert!(reported.ect0 > 0, "{space:?}: {reported:?}");
        assert!(
            reported.ect0 <= counted.ect0 && counted.ect0 - reported.ect0 <= 2,
            "{space:?}: reported {reported:?}, counted {counted:?}"
        );
    }
    assert!(
        pair.client.ecn.reported_in(SpaceId::Data).ect0
            > pair.client.ecn.reported_in(SpaceId::Initial).ect0,
        "the spaces are counted apart"
    );
}

fn settle_all(pair: &mut Pair) {
    pair.run_until(Duration::from_secs(2), &mut deliver_all, |_| false);
}

#[test]
fn a_path_that_clears_every_mark_fails_validation_and_loses_nothing() {
    let mut pair = pair_with_ecn_path(|_, _| Ecn::NotEct);
    pair.handshake();
    let sent = data(200_000);
    assert_eq!(transfer(&mut pair, &sent, &mut deliver_all), sent);
    let client = pair.client.stats();
    assert_eq!(client.ecn.state, EcnState::Failed);
    assert_eq!(client.packets_lost, 0);
    // Only the test's packets were marked.
    assert!(
        client.ecn.sent.ect0 <= crate::conn::ecn::TESTING_PACKETS,
        "{:?}",
        client.ecn
    );
}

#[test]
fn a_path_that_clears_some_marks_fails_validation_as_bleaching() {
    let mut count = 0;
    let mut pair = pair_with_ecn_path(move |to_server, ecn| {
        count += u64::from(to_server);
        if to_server && count % 2 == 0 {
            Ecn::NotEct
        } else {
            ecn
        }
    });
    pair.handshake();
    transfer(&mut pair, &data(50_000), &mut deliver_all);
    assert_eq!(pair.client.stats().ecn.state, EcnState::Failed);
    assert_eq!(pair.client.stats().ecn.failure, Some(EcnFailure::Bleached));
}

#[test]
fn a_peer_that_counts_ect0_as_ect1_fails_validation() {
    let mut pair = pair_with_ecn_path(|to_server, ecn| match ecn {
        Ecn::Ect0 if to_server => Ecn::Ect1,
        other => other,
    });
    pair.handshake();
    transfer(&mut pair, &data(50_000), &mut deliver_all);
    let ecn = pair.client.stats().ecn;
    assert_eq!(
        (ecn.state, ecn.failure),
        (EcnState::Failed, Some(EcnFailure::WrongCodepoint))
    );
    // The server's own packets crossed honestly.
    assert_eq!(pair.server.stats().ecn.state, EcnState::Capable);
}

#[test]
fn a_peer_that_reports_more_ce_than_marked_packets_fails_validation() {
    let mut pair = Pair::new(reno(), reno());
    pair.handshake();
    settle_all(&mut pair);
    let before = pair.client.ecn.reported_in(SpaceId::Data);
    let sent = pair.client.ecn.sent();
    let events_before = pair.client.stats().congestion_events;
    let pings = client_sends_pings(&mut pair, 2);
    // Every packet ever sent in the space, and a hundred more, marked.
    let invented = [before.ect0, 0, sent.ect0 + 100];
    server_sends_forged(&mut pair, &ack_ecn(pings[0], pings[1], invented));
    let ecn = pair.client.stats().ecn;
    assert_eq!(
        (ecn.state, ecn.failure),
        (EcnState::Failed, Some(EcnFailure::OverReported))
    );
    assert_eq!(
        pair.client.stats().congestion_events,
        events_before,
        "invented marks are no congestion signal"
    );
}

#[test]
fn ecn_counts_that_decrease_fail_validation() {
    let mut pair = Pair::default();
    pair.handshake();
    settle_all(&mut pair);
    let before = pair.client.ecn.reported_in(SpaceId::Data);
    let pings = client_sends_pings(&mut pair, 4);
    let first = pings[0];
    server_sends_forged(
        &mut pair,
        &ack_ecn(first, pings[1], [before.ect0 + 2, 0, before.ce]),
    );
    assert_ne!(pair.client.ecn.state(), EcnState::Failed);
    server_sends_forged(
        &mut pair,
        &ack_ecn(first, pings[3], [before.ect0 + 1, 0, before.ce + 3]),
    );
    assert_eq!(pair.client.ecn.state(), EcnState::Failed);
    assert_eq!(
        pair.client.ecn.last_failure(),
        Some(EcnFailure::CountsDecreased)
    );
}

#[test]
fn a_reordered_ack_with_older_counts_does_not_fail_validation() {
    let mut pair = Pair::default();
    pair.handshake();
    settle_all(&mut pair);
    assert_eq!(pair.client.ecn.state(), EcnState::Capable);
    let before = pair.client.ecn.reported_in(SpaceId::Data);
    let pings = client_sends_pings(&mut pair, 4);
    let first = pings[0];
    // The later ACK overtakes the earlier one.
    server_sends_forged(
        &mut pair,
        &ack_ecn(first, pings[3], [before.ect0 + 4, 0, before.ce]),
    );
    server_sends_forged(
        &mut pair,
        &ack_ecn(first, pings[1], [before.ect0 + 2, 0, before.ce]),
    );
    assert_eq!(pair.client.ecn.state(), EcnState::Capable);
    assert_eq!(
        pair.client.ecn.reported_in(SpaceId::Data).ect0,
        before.ect0 + 4
    );
}

#[test]
fn ce_marks_within_one_round_cut_the_window_once() {
    // An AQM marks ten consecutive ECT packets of the client's, all in
    // one round of slow start: RFC 9002 §7.1 and §B.7 make one congestion
    // event of them, and nothing is lost.
    let mut marked = 0;
    let mut pair = Pair::new(reno(), reno());
    pair.ecn_path = Box::new(move |to_server, ecn| {
        if !to_server || !ecn.is_ecn_capable() {
            return ecn;
        }
        marked += 1;
        if (40..50).contains(&marked) {
            Ecn::Ce
        } else {
            ecn
        }
    });
    pair.handshake();
    let sent = data(400_000);
    assert_eq!(transfer(&mut pair, &sent, &mut deliver_all), sent);
    let client = pair.client.stats();
    assert_eq!(client.ecn.reported_by_peer.ce, 10, "{:?}", client.ecn);
    assert_eq!(client.ecn.congestion_events, 1);
    assert_eq!(client.congestion_events, 1, "no other event: nothing lost");
    assert_eq!(client.packets_lost, 0);
    assert_ne!(client.ssthresh, u64::MAX, "the window was cut");
}

#[test]
fn ce_marks_in_two_rounds_cut_the_window_twice() {
    let mut marked = 0;
    let mut pair = Pair::new(reno(), reno());
    pair.ecn_path = Box::new(move |to_server, ecn| {
        if !to_server || !ecn.is_ecn_capable() {
            return ecn;
        }
        marked += 1;
        if marked == 40 || marked == 200 {
            Ecn::Ce
        } else {
            ecn
        }
    });
    pair.handshake();
    transfer(&mut pair, &data(600_000), &mut deliver_all);
    let client = pair.client.stats();
    assert_eq!(client.ecn.reported_by_peer.ce, 2);
    assert_eq!(client.ecn.congestion_events, 2);
}

#[test]
fn with_ecn_off_nothing_is_marked_or_reported() {
    let off = Config {
        ecn: false,
        ..fixed_size()
    };
    let mut pair = Pair::new(off.clone(), off);
    pair.handshake();
    transfer(&mut pair, &data(50_000), &mut deliver_all);
    for conn in [&pair.client, &pair.server] {
        let ecn = conn.stats().ecn;
        assert_eq!(ecn.state, EcnState::Off);
        assert_eq!(ecn.sent, EcnCounts::default());
        assert_eq!(ecn.received, EcnCounts::default());
    }
}

#[test]
fn a_peer_without_ecn_fails_validation_safely() {
    // A peer that reads no ECN field and reports no counts (ECN off there).
    let off = Config {
        ecn: false,
        ..fixed_size()
    };
    let mut pair = Pair::new(fixed_size(), off);
    pair.handshake();
    let sent = data(100_000);
    assert_eq!(transfer(&mut pair, &sent, &mut deliver_all), sent);
    let client = pair.client.stats();
    assert_eq!(client.ecn.state, EcnState::Failed);
    assert_eq!(client.ecn.failure, Some(EcnFailure::MissingCounts));
    assert_eq!(client.packets_lost, 0);
}

#[test]
fn a_path_that_drops_marked_packets_fails_validation_and_the_transfer_completes() {
    // A black hole for ECT: every marked datagram from the client
    // vanishes, from its first Initial on.
    let marked = std::rc::Rc::new(std::cell::Cell::new(false));
    let seen = std::rc::Rc::clone(&marked);
    let mut pair = pair_with_ecn_path(move |to_server, ecn| {
        seen.set(to_server && ecn.is_ecn_capable());
        ecn
    });
    let mut drop_marked = move |_: bool, _: u64, _: &[u8]| {
        if marked.get() {
            PathAction::Drop
        } else {
            PathAction::Deliver
        }
    };
    let established = pair.run_until(Duration::from_secs(30), &mut drop_marked, |p| {
        p.client.is_established() && p.server.is_established() && p.client.handshake_confirmed
    });
    assert!(established, "the handshake went through once marks stopped");
    let sent = data(100_000);
    assert_eq!(transfer(&mut pair, &sent, &mut drop_marked), sent);
    let ecn = pair.client.stats().ecn;
    assert_eq!(ecn.state, EcnState::Failed, "{ecn:?}");
    assert_eq!(ecn.failure, Some(EcnFailure::MarkedPacketsLost));
}

#[test]
fn qlog_shows_the_validation_states_and_the_counts() {
    let dir = std::env::temp_dir().join(format!("sift-ecn-qlog-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("client.sqlog");
    let mut pair = Pair::default();
    let file = std::fs::File::create(&path).unwrap();
    let writer = crate::trace::QlogWriter::new(Box::new(file), Side::Client, pair.now).unwrap();
    pair.client.set_observer(Box::new(writer));
    pair.handshake();
    transfer(&mut pair, &data(50_000), &mut deliver_all);
    pair.client.close(0, "done");
    settle_all(&mut pair);
    drop(pair);
    let events = crate::trace::read_trace(&path).unwrap();
    let states: Vec<&str> = events
        .iter()
        .filter(|e| e.name == "quic:ecn_state_updated")
        .filter_map(|e| e.data["new"].as_str())
        .collect();
    assert_eq!(states.last(), Some(&"capable"), "{states:?}");
    // The counts ride in metrics updates (qlog's recovery_metrics_updated).
    assert!(events
        .iter()
        .any(|e| e.name == "quic:recovery_metrics_updated"
            && e.data["ecn_reported"]["ect0"]
                .as_u64()
                .is_some_and(|n| n > 0)));
    let _ = std::fs::remove_dir_all(&dir);
}
