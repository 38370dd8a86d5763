//! The search state machine alone, driven by hand: what was probed, what
//! came back, where it settled.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::*;

fn remote_v4() -> SocketAddr {
    "192.0.2.7:4433".parse().unwrap()
}

fn remote_v6() -> SocketAddr {
    "[2001:db8::7]:4433".parse().unwrap()
}

fn loopback() -> SocketAddr {
    "127.0.0.1:4433".parse().unwrap()
}

fn search(peer: SocketAddr) -> Pmtud {
    Pmtud::new(&PmtudConfig::default(), 1350, peer)
}

/// Answers every probe as a path of `path_limit` bytes would (acked when
/// it fits, lost when not) until the search settles; returns the sizes
/// probed, in order. Packet numbers count up from `*pn`.
fn run(pmtud: &mut Pmtud, path_limit: usize, now: Instant, pn: &mut u64) -> Vec<usize> {
    let mut probed = Vec::new();
    while let Some(size) = pmtud.poll_probe(now) {
        assert!(probed.len() < 100, "the search does not end: {probed:?}");
        probed.push(size);
        pmtud.on_probe_sent(*pn);
        if size <= path_limit {
            pmtud.on_probe_acked(*pn, size, now);
        } else {
            pmtud.on_probe_lost(*pn, size, now);
        }
        *pn += 1;
    }
    probed
}

#[test]
fn search_walks_the_common_sizes_up_to_ethernets_ceiling() {
    // 1400, 1420, 1492 and 1500 less IPv4's 28 header bytes; the
    // interface (Ethernet) caps it at 1472: nothing lost.
    let mut pmtud = search(remote_v4());
    let t0 = Instant::now();
    let probed = run(&mut pmtud, 1472, t0, &mut 0);
    assert_eq!(probed, vec![1372, 1392, 1464, 1472]);
    assert_eq!(pmtud.current(), 1472);
    assert_eq!(pmtud.counters().probes_lost, 0);
}

#[test]
fn ipv6_path_settles_at_1452() {
    let mut pmtud = search(remote_v6());
    let probed = run(&mut pmtud, 1452, Instant::now(), &mut 0);
    assert_eq!(probed, vec![1352, 1372, 1444, 1452]);
    assert_eq!(pmtud.current(), 1452);
}

#[test]
fn acked_probe_raises_the_size_at_once() {
    let mut pmtud = search(remote_v4());
    let now = Instant::now();
    assert_eq!(pmtud.poll_probe(now), Some(1372));
    pmtud.on_probe_sent(9);
    assert_eq!(pmtud.poll_probe(now), None, "one probe in flight at most");
    let change = pmtud.on_probe_acked(9, 1372, now);
    assert_eq!(
        change,
        Some(SizeChange {
            old: 1350,
            new: 1372,
            done: false
        })
    );
    assert_eq!(pmtud.current(), 1372);
}

#[test]
fn a_size_lost_max_probes_times_is_the_ceiling_found() {
    // Loopback interface, a 1500-byte link behind it: 8972 (the cap) is
    // lost three times, and the gap to 1472 is too wide to halve.
    let mut pmtud = search(loopback());
    let probed = run(&mut pmtud, 1472, Instant::now(), &mut 0);
    assert_eq!(probed, vec![1372, 1392, 1464, 1472, 8972, 8972, 8972]);
    assert_eq!(pmtud.current(), 1472);
    assert_eq!(pmtud.counters().probes_lost, MAX_PROBES as u64);
    assert_eq!(pmtud.counters().probes_sent, 7);
}

#[test]
fn a_probe_lost_fewer_than_max_probes_times_is_sent_again_and_may_pass() {
    let mut pmtud = search(remote_v4());
    let now = Instant::now();
    assert_eq!(pmtud.poll_probe(now), Some(1372));
    pmtud.on_probe_sent(1);
    pmtud.on_probe_lost(1, 1372, now);
    assert_eq!(pmtud.poll_probe(now), Some(1372), "one loss is not enough");
    pmtud.on_probe_sent(2);
    pmtud.on_probe_acked(2, 1372, now);
    assert_eq!(pmtud.current(), 1372);
}

#[test]
fn loopback_goes_up_to_the_jumbo_cap() {
    let mut pmtud = search(loopback());
    run(&mut pmtud, 65_507, Instant::now(), &mut 0);
    assert_eq!(pmtud.current(), DEFAULT_MAX_DATAGRAM_SIZE);
}

#[test]
fn an_odd_path_is_found_to_within_the_minimum_step() {
    // A 1450-byte link: 1464 fails, the 72 bytes from 1392 are halved.
    let mut pmtud = search(remote_v4());
    let probed = run(&mut pmtud, 1422, Instant::now(), &mut 0);
    assert_eq!(&probed[..3], &[1372, 1392, 1464]);
    let current = pmtud.current();
    assert!(
        current <= 1422 && current + MIN_STEP > 1422,
        "settled at {current}, probed {probed:?}"
    );
}

#[test]
fn the_peers_limit_caps_the_ceiling() {
    let mut pmtud = search(loopback());
    pmtud.on_peer_limit(1400, loopback());
    let probed = run(&mut pmtud, 65_507, Instant::now(), &mut 0);
    assert_eq!(probed, vec![1372, 1392, 1400]);
    assert_eq!(pmtud.current(), 1400);
}

#[test]
fn the_ceiling_is_never_below_the_start() {
    let mut pmtud = search(remote_v4());
    pmtud.on_peer_limit(1200, remote_v4());
    assert_eq!(pmtud.ceiling(), 1350);
    assert_eq!(pmtud.poll_probe(Instant::now()), None);
    assert_eq!(pmtud.current(), 1350);
}

#[test]
fn a_black_hole_falls_back_to_the_base_and_searches_below_the_lost_size() {
    let mut pmtud = search(remote_v4());
    let now = Instant::now();
    let mut pn = 0;
    run(&mut pmtud, 1472, now, &mut pn);
    pmtud.on_acked([(100, 1472)].into_iter());
    // The path now carries 1400-byte IP packets: every full-size packet
    // sent after the last acknowledged one vanishes, in one burst per
    // probe timeout (the small probes between them pass).
    let change = pmtud.on_lost([(101, 1472), (102, 1472)].into_iter(), now);
    assert_eq!(change, None, "one burst is not yet a black hole");
    let change = pmtud.on_lost([(106, 1472), (107, 1472)].into_iter(), now);
    assert_eq!(change, None, "two are not either");
    let change = pmtud.on_lost([(111, 1472)].into_iter(), now);
    assert_eq!(
        change.map(|c| (c.old, c.new)),
        Some((1472, BASE_DATAGRAM_SIZE))
    );
    assert_eq!(pmtud.current(), BASE_DATAGRAM_SIZE);
    assert_eq!(pmtud.counters().black_holes, 1);
    let mut pn = 200;
    let probed = run(&mut pmtud, 1372, now, &mut pn);
    assert_eq!(probed[0], 1252, "searches again from the base");
    assert_eq!(pmtud.current(), 1372);
}

#[test]
fn losses_that_take_a_small_packet_too_are_not_a_black_hole() {
    let mut pmtud = search(remote_v4());
    let now = Instant::now();
    run(&mut pmtud, 1472, now, &mut 0);
    let lost = [(101, 1472), (102, 1472), (103, 1472), (104, 900)];
    assert_eq!(pmtud.on_lost(lost.into_iter(), now), None);
    assert_eq!(pmtud.current(), 1472);
}

#[test]
fn one_long_burst_of_large_losses_is_not_a_black_hole() {
    // A receive buffer overflowing: hundreds of full-size packets in a
    // row, a skipped packet number among them, then an ACK-only packet
    // acknowledged behind them.
    let mut pmtud = search(remote_v4());
    let now = Instant::now();
    run(&mut pmtud, 1472, now, &mut 0);
    pmtud.on_acked([(100, 1472)].into_iter());
    let burst = (101..400u64).filter(|&pn| pn != 250).map(|pn| (pn, 1472));
    assert_eq!(pmtud.on_lost(burst, now), None);
    // Declared in two parts (the packet threshold, then the time one):
    // still one burst.
    assert_eq!(
        pmtud.on_lost([(400, 1472), (401, 1472)].into_iter(), now),
        None
    );
    assert_eq!(pmtud.current(), 1472);
    assert_eq!(pmtud.counters().black_holes, 0);
}

#[test]
fn large_losses_before_a_later_large_ack_are_not_a_black_hole() {
    let mut pmtud = search(remote_v4());
    let now = Instant::now();
    run(&mut pmtud, 1472, now, &mut 0);
    pmtud.on_acked([(110, 1472)].into_iter());
    let lost = [(101, 1472), (102, 1472), (103, 1472), (104, 1472)];
    assert_eq!(pmtud.on_lost(lost.into_iter(), now), None);
    assert_eq!(pmtud.current(), 1472);
}

#[test]
fn the_search_starts_again_after_the_interval() {
    let mut pmtud = search(loopback());
    let t0 = Instant::now();
    run(&mut pmtud, 1472, t0, &mut 0);
    assert_eq!(pmtud.poll_probe(t0 + Duration::from_secs(599)), None);
    let later = t0 + DEFAULT_SEARCH_INTERVAL;
    // The path grew: the next search finds it.
    let probed = run(&mut pmtud, 9000, later, &mut 100);
    assert_eq!(probed, vec![8972]);
    assert_eq!(pmtud.current(), 8972);
}

#[test]
fn disabled_never_probes_nor_falls_back() {
    let mut pmtud = Pmtud::new(&PmtudConfig::disabled(), 1350, remote_v4());
    let now = Instant::now();
    assert_eq!(pmtud.poll_probe(now), None);
    let lost = [(1, 1350), (2, 1350), (3, 1350), (4, 1350)];
    assert_eq!(pmtud.on_lost(lost.into_iter(), now), None);
    assert_eq!(pmtud.current(), 1350);
}

#[test]
fn a_new_path_starts_over_from_the_base_size() {
    let mut pmtud = search(remote_v4());
    let now = Instant::now();
    run(&mut pmtud, 1472, now, &mut 0);
    let change = pmtud.on_new_path(remote_v6(), now);
    assert_eq!(change.map(|c| c.new), Some(BASE_DATAGRAM_SIZE));
    // IPv6's minimum link MTU less 48 bytes of headers.
    assert_eq!(pmtud.poll_probe(now), Some(1232));
}

#[test]
fn losses_from_before_a_move_are_no_black_hole_nor_a_failed_probe() {
    let mut pmtud = search(remote_v4());
    let now = Instant::now();
    let mut pn = 0;
    // A tunnel: the search settles below Ethernet's 1472.
    run(&mut pmtud, 1400, now, &mut pn);
    let settled = pmtud.current();
    assert!(settled > BASE_DATAGRAM_SIZE && settled < 1472, "{settled}");
    // A later search has a probe in flight when the peer moves.
    let later = now + DEFAULT_SEARCH_INTERVAL;
    let probe = pmtud.poll_probe(later).expect("a new search");
    pmtud.on_probe_sent(pn);
    let lost_before = pmtud.counters().probes_lost;
    pmtud.on_path_change(pn + 10);
    // Everything in flight to the old address is lost.
    let before_the_move = (pn..pn + 10).map(|number| (number, settled));
    assert_eq!(pmtud.on_lost(before_the_move, later), None);
    pmtud.on_probe_lost(pn, probe, later);
    assert_eq!(pmtud.current(), settled, "no black hole");
    assert_eq!(
        pmtud.counters().probes_lost,
        lost_before,
        "the probe's loss is not counted"
    );
    assert_eq!(
        pmtud.poll_probe(later),
        Some(probe),
        "probed again on the new path"
    );
    // Large packets sent since the move still count: three bursts of them.
    let after_the_move = [pn + 10, pn + 14, pn + 18].map(|number| (number, settled));
    assert!(
        pmtud.on_lost(after_the_move.into_iter(), later).is_some(),
        "a black hole"
    );
}
