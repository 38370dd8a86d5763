use super::*;
use sift_cc::{CarefulResumeConfig, CarefulResumePhase, CcConfig, RenoConfig, SavedPath};

const MSS: u64 = 1000;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn recovery(config: RecoveryConfig) -> Recovery<u64> {
    let mut r = Recovery::new(
        config,
        CcConfig::Reno(RenoConfig::default()).build(MSS),
        MSS,
    );
    r.set_handshake_confirmed();
    r.set_max_ack_delay(Duration::ZERO);
    r
}

fn send(r: &mut Recovery<u64>, pn: u64, at: Instant) {
    r.on_packet_sent(
        SpaceId::Data,
        SentPacket {
            packet_number: pn,
            time_sent: at,
            size: MSS,
            ack_eliciting: true,
            in_flight: true,
            app_limited: false,
            pmtu_probe: false,
            ecn: crate::wire::Ecn::NotEct,
            delivery: Default::default(),
            frames: vec![pn],
        },
        at,
    );
}

fn numbers(packets: &[SentPacket<u64>]) -> Vec<u64> {
    packets.iter().map(|p| p.packet_number).collect()
}

#[test]
fn ack_removes_from_flight_and_samples_rtt() {
    let t0 = Instant::now();
    let mut r = recovery(RecoveryConfig::default());
    send(&mut r, 0, t0);
    send(&mut r, 1, t0);
    assert_eq!(r.bytes_in_flight(), 2 * MSS);
    let out = r.on_ack_received(
        SpaceId::Data,
        [0..=1].into_iter(),
        Duration::ZERO,
        t0 + ms(100),
    );
    assert_eq!(numbers(&out.acked), [0, 1]);
    assert_eq!(r.bytes_in_flight(), 0);
    assert_eq!(r.rtt().smoothed(), ms(100));
    // Reno slow start: IW 10_000 + 2_000 acked.
    assert_eq!(r.window(), 12_000);
}

#[test]
fn packet_threshold_declares_three_behind_lost_and_arms_time_threshold() {
    let t0 = Instant::now();
    let mut r = recovery(RecoveryConfig::default());
    for pn in 0..5 {
        send(&mut r, pn, t0);
    }
    // Ack 4 only, 10 ms later: 0 and 1 are ≥ 3 behind → lost; 2 and 3 wait
    // for the time threshold (9/8 · 10 ms after they were sent).
    let out = r.on_ack_received(
        SpaceId::Data,
        [4..=4].into_iter(),
        Duration::ZERO,
        t0 + ms(10),
    );
    assert_eq!(numbers(&out.lost), [0, 1]);
    let timer = r.loss_detection_timer(t0 + ms(10), false).unwrap();
    assert_eq!(timer, t0 + Duration::from_micros(11_250));
    let fired = r.on_loss_detection_timeout(timer);
    assert_eq!(numbers(&fired.lost), [2, 3]);
    assert_eq!(r.bytes_in_flight(), 0);
    assert_eq!(r.stats().lost_packets, 4);
}

#[test]
fn one_window_reduction_per_recovery_period() {
    let t0 = Instant::now();
    let mut r = recovery(RecoveryConfig::default());
    for pn in 0..10 {
        send(&mut r, pn, t0);
    }
    r.on_ack_received(
        SpaceId::Data,
        [3..=3].into_iter(),
        Duration::ZERO,
        t0 + ms(100),
    );
    // IW 10_000 + 1_000 acked in slow start... the loss of 0 came first:
    // cwnd 10_000 → 5_000; the ack of 3 was sent before recovery: no growth.
    assert_eq!(r.window(), 5_000);
    // More losses of packets sent before the period began: no second cut.
    r.on_ack_received(
        SpaceId::Data,
        [6..=6].into_iter(),
        Duration::ZERO,
        t0 + ms(101),
    );
    assert_eq!(r.window(), 5_000);
    assert_eq!(r.stats().congestion_events, 1);
    assert_eq!(r.drain_verdicts().len(), 1);
}

#[test]
fn corrupted_packet_leaves_flight_without_window_cut() {
    let t0 = Instant::now();
    let mut r = recovery(RecoveryConfig::default());
    for pn in 0..5 {
        send(&mut r, pn, t0);
    }
    let before = r.window();
    // The receiver's packet carries CORRUPTED(0) and ACK(1..=4): applied in
    // that order, packet 0 is a corruption, not a loss.
    let named = r.on_corrupted(SpaceId::Data, [0..=0].into_iter(), t0 + ms(50));
    assert_eq!(numbers(&named.corrupted), [0]);
    assert!(named.lost.is_empty());
    let out = r.on_ack_received(
        SpaceId::Data,
        [1..=4].into_iter(),
        Duration::ZERO,
        t0 + ms(50),
    );
    assert!(out.lost.is_empty());
    assert_eq!(r.bytes_in_flight(), 0);
    assert!(
        r.window() >= before,
        "a corruption notice must not shrink the window"
    );
    assert_eq!(r.stats().congestion_events, 0);
    assert_eq!(r.stats().corrupted_packets, 1);
}

#[test]
fn bogus_corruption_names_are_ignored_and_counted_but_repeats_are_not() {
    let t0 = Instant::now();
    let mut r = recovery(RecoveryConfig::default());
    send(&mut r, 0, t0);
    send(&mut r, 1, t0);
    assert_eq!(
        numbers(
            &r.on_corrupted(SpaceId::Data, [1..=1].into_iter(), t0)
                .corrupted
        ),
        [1]
    );
    // A repeat of the same notice (the receiver repeats it 3 times).
    assert!(r
        .on_corrupted(SpaceId::Data, [1..=1].into_iter(), t0)
        .is_empty());
    assert_eq!(r.stats().ignored_corruption_names, 0);
    // Never sent: 5..=9, and a forged huge range that must cost nothing.
    assert!(r
        .on_corrupted(SpaceId::Data, [5..=9].into_iter(), t0)
        .is_empty());
    assert_eq!(r.stats().ignored_corruption_names, 5);
    assert!(r
        .on_corrupted(SpaceId::Data, [100..=(1u64 << 62)].into_iter(), t0)
        .is_empty());
    assert_eq!(r.bytes_in_flight(), MSS, "packet 0 untouched");
}

#[test]
fn pto_fires_after_srtt_plus_4_rttvar_and_backs_off() {
    let t0 = Instant::now();
    let mut r = recovery(RecoveryConfig::default());
    send(&mut r, 0, t0);
    r.on_ack_received(
        SpaceId::Data,
        [0..=0].into_iter(),
        Duration::ZERO,
        t0 + ms(100),
    );
    // srtt 100, rttvar 50: PTO = 100 + 200 = 300 ms after the last send.
    let t1 = t0 + ms(100);
    send(&mut r, 1, t1);
    assert_eq!(r.loss_detection_timer(t1, false), Some(t1 + ms(300)));
    let out = r.on_loss_detection_timeout(t1 + ms(300));
    assert_eq!(out.probes, Some((SpaceId::Data, 1)));
    assert!(out.lost.is_empty(), "a PTO declares nothing lost");
    // Backoff: the next PTO is twice as long.
    assert_eq!(
        r.loss_detection_timer(t1 + ms(300), false),
        Some(t1 + ms(600))
    );
    assert_eq!(r.stats().ptos, 1);
}

#[test]
fn rto_mode_declares_all_lost_and_collapses_window() {
    let t0 = Instant::now();
    let mut r = recovery(RecoveryConfig {
        timeout: TimeoutMode::Rto,
        ..RecoveryConfig::default()
    });
    send(&mut r, 0, t0);
    r.on_ack_received(
        SpaceId::Data,
        [0..=0].into_iter(),
        Duration::ZERO,
        t0 + ms(100),
    );
    for pn in 1..4 {
        send(&mut r, pn, t0 + ms(100));
    }
    let at = r.loss_detection_timer(t0 + ms(100), false).unwrap();
    let out = r.on_loss_detection_timeout(at);
    assert_eq!(numbers(&out.lost), [1, 2, 3]);
    // Reno: ssthresh = 11_000/2 = 5_500, cwnd = 2 packets (RFC 9002 floor).
    assert_eq!((r.window(), r.ssthresh()), (2_000, 5_500));
    assert_eq!(r.bytes_in_flight(), 0);
}

#[test]
fn persistent_congestion_collapses_window() {
    let t0 = Instant::now();
    let mut r = recovery(RecoveryConfig::default());
    send(&mut r, 0, t0);
    r.on_ack_received(
        SpaceId::Data,
        [0..=0].into_iter(),
        Duration::ZERO,
        t0 + ms(100),
    );
    // PTO period = 100 + 4·50 = 300 ms; persistent duration = 900 ms.
    // Packets 1..=10 sent over 1 s, all lost, then 11 acked.
    for pn in 1..=10 {
        send(&mut r, pn, t0 + ms(100 + pn * 100));
    }
    send(&mut r, 11, t0 + ms(1200));
    r.on_ack_received(
        SpaceId::Data,
        [11..=11].into_iter(),
        Duration::ZERO,
        t0 + ms(1300),
    );
    assert_eq!(r.stats().persistent_congestion_events, 1);
    assert_eq!(r.window(), 2_000);
}

#[test]
fn discarding_a_space_releases_its_bytes() {
    let t0 = Instant::now();
    let mut r = recovery(RecoveryConfig::default());
    r.on_packet_sent(
        SpaceId::Initial,
        SentPacket {
            packet_number: 0,
            time_sent: t0,
            size: 1200,
            ack_eliciting: true,
            in_flight: true,
            app_limited: false,
            pmtu_probe: false,
            ecn: crate::wire::Ecn::NotEct,
            delivery: Default::default(),
            frames: vec![],
        },
        t0,
    );
    assert_eq!(r.bytes_in_flight(), 1200);
    assert_eq!(r.discard_space(SpaceId::Initial).len(), 1);
    assert_eq!(r.bytes_in_flight(), 0);
}

#[test]
fn acks_arriving_after_long_backed_off_ptos_never_overflow_the_timer() {
    // Each cycle: a packet goes unanswered through 17 PTOs (the backoff caps
    // at 2^16 periods), then is acked. Uncapped, the RTT sample grows by
    // ~2^16 per cycle and the fourth PTO deadline overflows `Instant`;
    // capped at MAX_RTT_SAMPLE, every deadline stays representable.
    let t0 = Instant::now();
    let mut r = recovery(RecoveryConfig::default());
    let mut now = t0;
    for pn in 0..5 {
        send(&mut r, pn, now);
        for _ in 0..17 {
            now = r
                .loss_detection_timer(now, false)
                .expect("an ack-eliciting packet is outstanding");
            r.on_loss_detection_timeout(now);
        }
        let out = r.on_ack_received(SpaceId::Data, [pn..=pn].into_iter(), Duration::ZERO, now);
        assert_eq!(numbers(&out.acked), [pn]);
        assert!(r.rtt().latest() <= MAX_RTT_SAMPLE);
    }
}

#[test]
fn backed_off_timeouts_are_capped() {
    let t0 = Instant::now();
    let mut r = recovery(RecoveryConfig {
        max_timeout: Duration::from_secs(2),
        ..RecoveryConfig::default()
    });
    send(&mut r, 0, t0);
    r.on_ack_received(
        SpaceId::Data,
        [0..=0].into_iter(),
        Duration::ZERO,
        t0 + ms(100),
    );
    send(&mut r, 1, t0 + ms(100));
    // PTO 300 ms, then 600, 1200, and 2400 → capped at 2 s from then on.
    let mut at = t0 + ms(100);
    let mut gaps = Vec::new();
    for _ in 0..5 {
        let fire = r.loss_detection_timer(at, false).unwrap();
        gaps.push((fire - (t0 + ms(100))).as_millis());
        r.on_loss_detection_timeout(fire);
        at = fire;
    }
    assert_eq!(gaps, [300, 600, 1200, 2000, 2000]);
}

// ---- reordering: spurious losses, the adaptive window, undo ------------

/// An ACK frame of `range` (no ack delay) arriving at `at`.
fn ack(r: &mut Recovery<u64>, range: RangeInclusive<u64>, at: Instant) -> AckOutcome<u64> {
    r.on_ack_received(SpaceId::Data, [range].into_iter(), Duration::ZERO, at)
}

/// RFC 8985 §3.4's fast-recovery example, in QUIC terms: P1, P2, P3 sent
/// back to back, P1 missing when the ACK of P2 and P3 arrives. With fewer
/// than kPacketThreshold packets above it, P1 waits for the reordering
/// timer (here RFC 9002's 9/8·RTT), then is declared lost.
#[test]
fn rfc8985_fast_recovery_example_waits_for_the_reordering_timer() {
    let t0 = Instant::now();
    let mut r = recovery(RecoveryConfig::default());
    send(&mut r, 0, t0);
    ack(&mut r, 0..=0, t0 + ms(100));
    let t1 = t0 + ms(100);
    for pn in 1..=3 {
        send(&mut r, pn, t1);
    }
    // srtt = latest = 100 ms: P1 is lost 112.5 ms after it was sent.
    let out = ack(&mut r, 2..=3, t1 + ms(100));
    assert!(out.lost.is_empty());
    let timer = r.loss_detection_timer(t1 + ms(100), false).unwrap();
    assert_eq!(timer, t1 + Duration::from_micros(112_500));
    assert_eq!(numbers(&r.on_loss_detection_timeout(timer).lost), [1]);
}

/// Sends 0 and acks it at 100 ms (srtt = min_rtt = 100 ms), then sends
/// `count` packets from 1 at `t1`, 1 ms apart. Returns `t1`.
fn connected_with_flight(r: &mut Recovery<u64>, t0: Instant, count: u64) -> Instant {
    send(r, 0, t0);
    ack(r, 0..=0, t0 + ms(100));
    let t1 = t0 + ms(100);
    for pn in 1..=count {
        send(r, pn, t1 + ms(pn - 1));
    }
    t1
}

#[test]
fn a_packet_acked_after_it_was_declared_lost_widens_both_thresholds() {
    let t0 = Instant::now();
    let mut r = recovery(RecoveryConfig::default());
    let t1 = connected_with_flight(&mut r, t0, 20);
    // Packet 1 is overtaken by 2..=10: declared lost (9 ≥ 3 behind).
    let out = ack(&mut r, 2..=10, t1 + ms(110));
    assert_eq!(numbers(&out.lost), [1]);
    assert_eq!(
        (r.packet_threshold(), r.reordering_window()),
        (3, Duration::ZERO)
    );
    // ...and then arrives: a spurious loss. The packet threshold becomes the
    // distance it was overtaken by plus one (10 − 1 + 1). The time window
    // covers how late it was: 112 ms old against max(srtt, latest) = 101 ms
    // (the ACK of 10, sent at +9 ms), 11 ms, plus one step of min_rtt/4 =
    // 25 ms: 36 ms (more than RACK's single 25 ms step).
    ack(&mut r, 1..=10, t1 + ms(112));
    assert_eq!(r.stats().spurious_losses, 1);
    assert_eq!((r.packet_threshold(), r.reordering_window()), (10, ms(36)));
    // Now packet 11 overtaken by 12..=20 (9 packets) survives the packet
    // threshold, and the time threshold waits max(srtt, latest) + 36 ms.
    let out = ack(&mut r, 12..=20, t1 + ms(120));
    assert!(out.lost.is_empty(), "within the widened thresholds");
    assert!(r.loss_detection_timer(t1 + ms(120), false).unwrap() > t1 + ms(10) + ms(112));
}

#[test]
fn the_window_decays_after_sixteen_recoveries_without_spurious_losses() {
    let t0 = Instant::now();
    let mut r = recovery(RecoveryConfig::default());
    let mut now = connected_with_flight(&mut r, t0, 10);
    ack(&mut r, 5..=10, now + ms(110));
    ack(&mut r, 1..=4, now + ms(111));
    assert_eq!(r.packet_threshold(), 10);
    // Recovery episodes whose losses are real (never acked). The first
    // closes the episode that had the spurious losses; sixteen quiet ones
    // follow it.
    let mut pn = 11;
    for episode in 0..=REO_WND_PERSIST {
        assert_eq!(r.packet_threshold(), 10, "episode {episode}");
        now += ms(1_000);
        for k in 0..12 {
            send(&mut r, pn + k, now);
        }
        // The first is overtaken by 11 packets: lost, a new congestion event.
        ack(&mut r, (pn + 1)..=(pn + 11), now + ms(100));
        pn += 12;
    }
    assert_eq!(r.stats().congestion_events, 2 + u64::from(REO_WND_PERSIST));
    assert_eq!(
        (r.packet_threshold(), r.reordering_window()),
        (3, Duration::ZERO)
    );
}

#[test]
fn a_congestion_event_whose_losses_all_arrive_is_undone() {
    let t0 = Instant::now();
    let mut r = recovery(RecoveryConfig::default());
    let t1 = connected_with_flight(&mut r, t0, 10);
    let before = r.window();
    ack(&mut r, 4..=10, t1 + ms(110));
    assert_eq!(r.window(), before / 2, "Reno halves at the loss of 1..=3");
    // 2 and 3 arrive: 1 is still missing, no undo yet.
    ack(&mut r, 2..=10, t1 + ms(111));
    assert_eq!(r.stats().undone_congestion_events, 0);
    assert_eq!(r.window(), before / 2);
    ack(&mut r, 1..=10, t1 + ms(112));
    assert_eq!(r.stats().undone_congestion_events, 1);
    assert!(r.window() >= before, "the cut is undone");
    let verdicts = r.drain_verdicts();
    assert_eq!(verdicts.len(), 2);
    assert!(!verdicts[0].undone && verdicts[1].undone);
    assert_eq!(verdicts[1].packet_numbers, [1, 2, 3]);
}

#[test]
fn one_real_loss_in_the_episode_keeps_the_cut() {
    let t0 = Instant::now();
    let mut r = recovery(RecoveryConfig::default());
    let t1 = connected_with_flight(&mut r, t0, 10);
    let before = r.window();
    ack(&mut r, 4..=10, t1 + ms(110));
    // 2 and 3 arrive late; 1 never does.
    ack(&mut r, 2..=10, t1 + ms(111));
    assert_eq!(r.stats().spurious_losses, 2);
    assert_eq!(r.stats().undone_congestion_events, 0);
    assert_eq!(r.window(), before / 2);
}

#[test]
fn with_adaptation_and_undo_off_recovery_is_rfc9002_exactly() {
    let t0 = Instant::now();
    let mut r = recovery(RecoveryConfig {
        adaptive_reordering: false,
        undo_spurious_congestion: false,
        ..RecoveryConfig::default()
    });
    let t1 = connected_with_flight(&mut r, t0, 10);
    let before = r.window();
    ack(&mut r, 4..=10, t1 + ms(110));
    ack(&mut r, 1..=10, t1 + ms(111));
    // Counted honestly, but neither threshold nor window changes.
    assert_eq!(r.stats().spurious_losses, 3);
    assert_eq!(
        (r.packet_threshold(), r.reordering_window()),
        (3, Duration::ZERO)
    );
    assert_eq!(r.window(), before / 2);
    assert_eq!(r.stats().undone_congestion_events, 0);
}

#[test]
fn a_corruption_notice_is_acted_on_at_once_however_wide_the_reordering_window() {
    let t0 = Instant::now();
    let mut r = recovery(RecoveryConfig::default());
    let t1 = connected_with_flight(&mut r, t0, 30);
    // Widen the window: 1 overtaken by 2..=20, then acked.
    ack(&mut r, 2..=20, t1 + ms(110));
    ack(&mut r, 1..=20, t1 + ms(111));
    assert_eq!(r.packet_threshold(), 20);
    let window = r.window();
    let in_flight = r.bytes_in_flight();
    // CORRUPTED(21) with ACK(22): 21 leaves flight at once, no cut, no wait.
    let now = t1 + ms(125);
    let named = r.on_corrupted(SpaceId::Data, [21..=21].into_iter(), now);
    assert_eq!(numbers(&named.corrupted), [21]);
    assert_eq!(r.bytes_in_flight(), in_flight - MSS);
    let out = r.on_ack_received(
        SpaceId::Data,
        [1..=20, 22..=22].into_iter().rev(),
        Duration::ZERO,
        now,
    );
    assert!(out.lost.is_empty());
    assert!(r.window() >= window);
    assert_eq!(r.stats().congestion_events, 1, "only the spurious one");
}

#[test]
fn notices_beyond_the_budget_are_losses_and_the_budget_refills_as_packets_cross() {
    let t0 = Instant::now();
    let mut r = recovery(RecoveryConfig::default());
    for pn in 0..100 {
        send(&mut r, pn, t0);
    }
    // A burst of 40 notices before anything was acknowledged: the initial
    // credit (16) is honoured; the rest crossed the budget and are losses.
    let window = r.window();
    let named = r.on_corrupted(SpaceId::Data, [0..=39].into_iter(), t0 + ms(50));
    let stats = r.stats();
    // Each named packet also earns its quarter: 16 + 40/4 = 26 honoured.
    let honoured = INITIAL_CORRUPTION_CREDIT + 40 / HONEST_CORRUPTION_SHARE;
    // Each is reported once, as what the counters call it.
    assert_eq!(named.corrupted.len() as u64, honoured);
    assert_eq!(named.lost.len() as u64, 40 - honoured);
    assert_eq!(
        named.into_resent().len(),
        40,
        "every named packet is resent"
    );
    assert_eq!(stats.corrupted_packets, honoured);
    assert_eq!(stats.corruption_names_over_budget, 40 - honoured);
    assert_eq!(stats.lost_packets, 40 - honoured);
    assert_eq!(stats.congestion_events, 1);
    assert!(r.window() < window, "the losses cut the window");

    // 60 packets acknowledged earn 15 more notices.
    ack(&mut r, 40..=99, t0 + ms(100));
    for pn in 100..200 {
        send(&mut r, pn, t0 + ms(100));
    }
    let before = r.stats().corrupted_packets;
    r.on_corrupted(SpaceId::Data, [100..=119].into_iter(), t0 + ms(150));
    // 15 from the ACKs and a quarter of each of 20 named: 20 fit.
    assert_eq!(r.stats().corrupted_packets - before, 20);
}

#[test]
fn a_notice_beyond_the_budget_is_reported_as_the_loss_it_is_counted_as() {
    // The fuzz finding (fuzz/corpus/ack_corrupted/regression-lost-count-23-vs-22):
    // a CORRUPTED frame whose last name fell beyond the budget was counted
    // in `lost_packets` but handed back among the corrupted ones.
    let t0 = Instant::now();
    let mut r = recovery(RecoveryConfig::default());
    for pn in 0..30 {
        send(&mut r, pn, t0);
    }
    let named = r.on_corrupted(SpaceId::Data, [0..=29].into_iter(), t0 + ms(50));
    let stats = r.stats();
    assert!(!named.lost.is_empty(), "30 names at once exceed the budget");
    assert_eq!(named.corrupted.len() as u64, stats.corrupted_packets);
    assert_eq!(named.lost.len() as u64, stats.lost_packets);
    let mut resent = numbers(&named.into_resent());
    resent.sort_unstable();
    assert_eq!(resent, (0..30).collect::<Vec<_>>());
}

#[test]
fn an_honest_share_of_corruption_never_touches_the_budget() {
    let t0 = Instant::now();
    let mut r = recovery(RecoveryConfig::default());
    // One packet in five corrupted, for 10 000 packets.
    let mut now = t0;
    for round in 0..1000u64 {
        let first = round * 10;
        for pn in first..first + 10 {
            send(&mut r, pn, now);
        }
        now += ms(10);
        r.on_corrupted(SpaceId::Data, [first..=first + 1].into_iter(), now);
        ack(&mut r, first + 2..=first + 9, now);
    }
    let stats = r.stats();
    assert_eq!(stats.corrupted_packets, 2000);
    assert_eq!(stats.corruption_names_over_budget, 0);
    assert_eq!(stats.congestion_events, 0);
}

#[test]
fn a_distrusted_peer_has_every_notice_counted_as_a_loss() {
    let t0 = Instant::now();
    let mut r = recovery(RecoveryConfig::default());
    for pn in 0..10 {
        send(&mut r, pn, t0);
    }
    r.distrust_notices();
    assert!(r.notices_distrusted());
    let named = r.on_corrupted(SpaceId::Data, [3..=3].into_iter(), t0 + ms(50));
    assert!(named.corrupted.is_empty());
    assert_eq!(numbers(&named.lost), [3]);
    let stats = r.stats();
    assert_eq!(stats.corrupted_packets, 0);
    assert_eq!((stats.lost_packets, stats.congestion_events), (1, 1));
}

/// Packets 0, 1, 2 sent 1 ms apart; 2 overtakes the others (netem's
/// `reorder`: no delay at all) and is acknowledged 20 ms after it left,
/// then 0 and 1 arrive and are acknowledged 40 ms after they left.
fn overtaken_flight(r: &mut Recovery<u64>, t0: Instant) {
    for pn in 0..3 {
        send(r, pn, t0 + ms(pn));
    }
    ack(r, 2..=2, t0 + ms(22));
    // The peer's ACK names all three; only 0 and 1 are new.
    ack(r, 0..=2, t0 + ms(41));
}

#[test]
fn controllers_take_no_rtt_from_a_packet_that_overtook_others_but_do_from_the_gap_filling_ack() {
    let t0 = Instant::now();
    let mut r = recovery(RecoveryConfig::default());
    overtaken_flight(&mut r, t0);
    // RFC 9002 samples only the overtaking packet: 20 ms, for loss
    // detection and the PTO as before.
    assert_eq!((r.rtt().latest(), r.rtt().min()), (ms(20), ms(20)));
    // The controller saw the ACK of 1, the newest packet the second ACK
    // delivered, with nothing older outstanding: 40 ms.
    let seen = r.rtt().sample();
    assert_eq!((seen.latest, seen.min), (ms(40), ms(40)));
}

#[test]
fn without_adaptive_reordering_controllers_see_rfc9002_samples() {
    let t0 = Instant::now();
    let mut r = recovery(RecoveryConfig {
        adaptive_reordering: false,
        ..RecoveryConfig::default()
    });
    overtaken_flight(&mut r, t0);
    let seen = r.rtt().sample();
    assert_eq!((seen.latest, seen.min), (ms(20), ms(20)));
}

#[test]
fn a_clients_anti_deadlock_timer_runs_from_its_last_packet_and_fires() {
    // RFC 9002 §6.2.2.1: a client whose Handshake packets are all acked
    // (nothing ack-eliciting in flight) but whose handshake is not
    // confirmed keeps a PTO, so a server stopped by its amplification
    // limit hears from it again.
    let t0 = Instant::now();
    let mut r: Recovery<u64> = Recovery::new(
        RecoveryConfig::default(),
        CcConfig::Reno(RenoConfig::default()).build(MSS),
        MSS,
    );
    r.set_handshake_keys();
    // An ACK-only Handshake packet: nothing ack-eliciting in flight.
    r.on_packet_sent(
        SpaceId::Handshake,
        SentPacket {
            packet_number: 0,
            time_sent: t0,
            size: 50,
            ack_eliciting: false,
            in_flight: false,
            app_limited: false,
            pmtu_probe: false,
            ecn: crate::wire::Ecn::NotEct,
            delivery: Default::default(),
            frames: vec![],
        },
        t0,
    );
    let armed = r.loss_detection_timer(t0, true).unwrap();
    assert!(armed > t0);
    // Asked again later, the deadline has not moved: it fires.
    assert_eq!(r.loss_detection_timer(armed, true), Some(armed));
    let out = r.on_loss_detection_timeout(armed);
    assert_eq!(out.probes, Some((SpaceId::Handshake, 1)));
    // Without the anti-deadlock rule (a server), nothing is armed.
    assert_eq!(r.loss_detection_timer(armed, false), None);
}

#[test]
fn slow_start_paces_at_twice_the_window_per_round_trip() {
    // Slow start doubles the window each round trip; at 1.25·cwnd/srtt a
    // round's packets would take longer than the round trip to leave.
    let t0 = Instant::now();
    for (mode, gain_x4) in [
        (SlowStartPacing::Always, 8),
        (SlowStartPacing::FirstSlowStart, 8),
        (SlowStartPacing::Off, 5),
    ] {
        let mut r = recovery(RecoveryConfig {
            slow_start_pacing: mode,
            ..RecoveryConfig::default()
        });
        send(&mut r, 0, t0);
        r.on_ack_received(
            SpaceId::Data,
            [0..=0].into_iter(),
            Duration::ZERO,
            t0 + ms(100),
        );
        // Reno slow start: IW 10_000 + 1_000 acked; srtt 100 ms.
        assert_eq!(r.window(), 11_000);
        assert_eq!(
            r.current_pacing_rate(),
            11_000 * 10 * gain_x4 / 4,
            "slow_start_pacing {mode:?}"
        );
    }
}

#[test]
fn first_slow_start_pacing_ends_at_the_first_congestion_event() {
    // A timeout collapses the window to two packets under ssthresh 5_500:
    // slow start again, with room to grow. Linux's rule paces it at 2×;
    // the first-slow-start rule no longer does.
    let t0 = Instant::now();
    for (mode, gain_x4) in [
        (SlowStartPacing::Always, 8),
        (SlowStartPacing::FirstSlowStart, 5),
    ] {
        let mut r = recovery(RecoveryConfig {
            slow_start_pacing: mode,
            timeout: TimeoutMode::Rto,
            ..RecoveryConfig::default()
        });
        let t1 = connected_with_flight(&mut r, t0, 10);
        let at = r.loss_detection_timer(t1, false).unwrap();
        assert_eq!(r.on_loss_detection_timeout(at).lost.len(), 10);
        assert_eq!((r.window(), r.ssthresh()), (2_000, 5_500));
        assert_eq!(
            r.current_pacing_rate(),
            2_000 * 10 * gain_x4 / 4,
            "slow_start_pacing {mode:?}"
        );
    }
}

#[test]
fn an_undone_congestion_event_gives_the_first_slow_start_back() {
    let t0 = Instant::now();
    let mut r = recovery(RecoveryConfig {
        slow_start_pacing: SlowStartPacing::FirstSlowStart,
        ..RecoveryConfig::default()
    });
    let t1 = connected_with_flight(&mut r, t0, 10);
    ack(&mut r, 4..=10, t1 + ms(110));
    let srtt = r.rtt().smoothed();
    assert_eq!(r.current_pacing_rate(), Pacer::rate_for(r.window(), srtt));
    // 1..=3 arrive after all: the cut is undone, and Reno is back in the
    // slow start it was in, ssthresh unset.
    ack(&mut r, 1..=10, t1 + ms(112));
    assert_eq!(r.stats().undone_congestion_events, 1);
    assert_eq!(r.ssthresh(), u64::MAX);
    let srtt = r.rtt().smoothed();
    assert_eq!(
        r.current_pacing_rate(),
        Pacer::slow_start_rate_for(r.window(), srtt)
    );
}

#[test]
fn a_careful_resume_jump_ends_the_first_slow_start() {
    // After the jump the window is the saved path's; 2·cwnd/srtt would be
    // about twice the path's rate.
    let t0 = Instant::now();
    for mode in [SlowStartPacing::Always, SlowStartPacing::FirstSlowStart] {
        let mut r = recovery(RecoveryConfig {
            slow_start_pacing: mode,
            ..RecoveryConfig::default()
        });
        let saved = SavedPath {
            cwnd: 100_000,
            min_rtt: ms(100),
        };
        r.resume_path(saved, CarefulResumeConfig::default(), MSS);
        for pn in 0..10 {
            send(&mut r, pn, t0);
        }
        ack(&mut r, 0..=9, t0 + ms(100));
        let status = r.careful_resume().unwrap();
        assert_eq!(status.phase, CarefulResumePhase::Unvalidated);
        let t1 = t0 + ms(100);
        for pn in 10..50 {
            send(&mut r, pn, t1);
        }
        ack(&mut r, 10..=10, t1 + ms(100));
        assert_eq!(
            r.careful_resume().unwrap().phase,
            CarefulResumePhase::Validating
        );
        assert_eq!((r.window(), r.ssthresh()), (39_000, u64::MAX));
        let srtt = r.rtt().smoothed();
        let expected = match mode {
            SlowStartPacing::Always => Pacer::slow_start_rate_for(39_000, srtt),
            _ => Pacer::rate_for(39_000, srtt),
        };
        assert_eq!(r.current_pacing_rate(), expected, "{mode:?}");
    }
}

#[test]
fn slow_start_pacing_reads_names_and_the_old_booleans() {
    let read = |text: &str| {
        toml::from_str::<RecoveryConfig>(text)
            .unwrap()
            .slow_start_pacing
    };
    assert_eq!(read("slow_start_pacing = \"off\""), SlowStartPacing::Off);
    assert_eq!(read("slow_start_pacing = false"), SlowStartPacing::Off);
    assert_eq!(
        read("slow_start_pacing = \"first-slow-start\""),
        SlowStartPacing::FirstSlowStart
    );
    assert_eq!(
        read("slow_start_pacing = \"always\""),
        SlowStartPacing::Always
    );
    assert_eq!(read("slow_start_pacing = true"), SlowStartPacing::Always);
    assert!(toml::from_str::<RecoveryConfig>("slow_start_pacing = \"on\"").is_err());
    // Off and always are written as the booleans earlier results hold.
    let json = |mode| serde_json::to_string(&mode).unwrap();
    assert_eq!(json(SlowStartPacing::Off), "false");
    assert_eq!(json(SlowStartPacing::Always), "true");
    assert_eq!(
        json(SlowStartPacing::FirstSlowStart),
        "\"first-slow-start\""
    );
}

#[test]
fn congestion_avoidance_paces_at_five_quarters_of_the_window_even_with_slow_start_pacing() {
    let t0 = Instant::now();
    let mut r = recovery(RecoveryConfig {
        slow_start_pacing: SlowStartPacing::Always,
        ..RecoveryConfig::default()
    });
    for pn in 0..10 {
        send(&mut r, pn, t0);
    }
    // Packet 0 is lost (three acked above it): ssthresh = cwnd = 5_000.
    r.on_ack_received(
        SpaceId::Data,
        [3..=3].into_iter(),
        Duration::ZERO,
        t0 + ms(100),
    );
    assert_eq!((r.window(), r.ssthresh()), (5_000, 5_000));
    assert_eq!(r.current_pacing_rate(), 5_000 * 10 * 5 / 4);
}

#[test]
fn entering_recovery_allows_one_packet_beyond_the_window_until_the_next_ack_eliciting_one() {
    // RFC 9002 §7.3.2. The connection spends it in the handshake's spaces
    // (`Connection::may_send_ack_eliciting`).
    let t0 = Instant::now();
    let mut r = recovery(RecoveryConfig::default());
    for pn in 0..10 {
        send(&mut r, pn, t0);
    }
    assert!(!r.may_send_beyond_window());
    r.on_ack_received(
        SpaceId::Data,
        [3..=3].into_iter(),
        Duration::ZERO,
        t0 + ms(100),
    );
    assert!(r.bytes_in_flight() + MSS > r.window());
    assert!(r.may_send_beyond_window());
    // A later ack in the same period starts no new one.
    r.on_ack_received(
        SpaceId::Data,
        [4..=4].into_iter(),
        Duration::ZERO,
        t0 + ms(101),
    );
    assert!(r.may_send_beyond_window());
    send(&mut r, 10, t0 + ms(102));
    assert!(!r.may_send_beyond_window());
}

/// A flight of `count` packets from `first`, sent at `at` and acknowledged
/// together `rtt` later.
fn flight_acked(r: &mut Recovery<u64>, first: u64, count: u64, at: Instant, rtt: Duration) {
    for pn in first..first + count {
        send(r, pn, at);
    }
    ack(r, first..=first + count - 1, at + rtt);
}

#[test]
fn a_new_path_starts_its_observations_afresh() {
    // Issue 53, finding 1: what a connection saw of one path is no saved
    // state for another. Right after a move the RTT estimate is back to
    // its 333 ms default; the old path's rate times that was offered as
    // the new path's window.
    let t0 = Instant::now();
    let mut r = recovery(RecoveryConfig::default());
    flight_acked(&mut r, 0, 10, t0, ms(10));
    let t1 = t0 + ms(10);
    flight_acked(&mut r, 10, 20, t1, ms(10));
    assert!(r.observed_path().is_some(), "the old path was observed");
    // A flight in the air when the peer moves.
    let t2 = t1 + ms(10);
    for pn in 30..40 {
        send(&mut r, pn, t2);
    }
    r.on_new_path(CcConfig::Reno(RenoConfig::default()).build(MSS), MSS);
    assert_eq!(r.observed_path(), None, "nothing seen of the new path yet");
    // Its acknowledgement says how long the move took, not what the new
    // path carries.
    ack(&mut r, 30..=39, t2 + ms(50));
    assert_eq!(r.observed_path(), None, "packets of the old path");
    // A flight of the new path's own: observed, with its RTT.
    let t3 = t2 + ms(50);
    flight_acked(&mut r, 40, 10, t3, ms(40));
    let observed = r.observed_path().expect("the new path's flight");
    assert_eq!(observed.min_rtt, ms(40));
}

/// Sends `count` packets of `space` from `first` at `at`.
fn send_in(r: &mut Recovery<u64>, space: SpaceId, first: u64, count: u64, at: Instant) {
    for pn in first..first + count {
        r.on_packet_sent(
            space,
            SentPacket {
                packet_number: pn,
                time_sent: at,
                size: MSS,
                ack_eliciting: true,
                in_flight: true,
                app_limited: false,
                pmtu_probe: false,
                ecn: crate::wire::Ecn::NotEct,
                delivery: Default::default(),
                frames: vec![pn],
            },
            at,
        );
    }
}

#[test]
fn careful_resume_takes_no_rtt_sample_from_a_handshake_not_yet_confirmed() {
    // Issue 53, finding 1: a spoofed Initial carrying a client's token
    // makes a server resume that client's saved path toward the victim;
    // one blind Initial ACK of the server's first flight gave Careful
    // Resume its RTT sample and the window jumped to half the saved one
    // with no handshake ever completed.
    let t0 = Instant::now();
    let mut r: Recovery<u64> = Recovery::new(
        RecoveryConfig::default(),
        CcConfig::Reno(RenoConfig::default()).build(MSS),
        MSS,
    );
    let saved = SavedPath {
        cwnd: 1_000_000,
        min_rtt: ms(100),
    };
    r.resume_path(saved, CarefulResumeConfig::default(), MSS);
    // The server's first flight fills its initial window.
    send_in(&mut r, SpaceId::Initial, 0, 10, t0);
    r.on_ack_received(
        SpaceId::Initial,
        [0..=0].into_iter(),
        Duration::ZERO,
        t0 + ms(100),
    );
    send_in(&mut r, SpaceId::Initial, 10, 2, t0 + ms(100));
    let jumped = r.careful_resume().is_some_and(|status| status.jumped);
    assert!(!jumped, "jumped on an unconfirmed handshake's sample");
    assert!(r.window() < 20 * MSS, "window {}", r.window());

    // Once the handshake is confirmed, a 1-RTT sample lets it jump.
    r.discard_space(SpaceId::Initial);
    r.set_handshake_confirmed();
    let t1 = t0 + ms(200);
    for pn in 0..12 {
        send(&mut r, pn, t1);
    }
    ack(&mut r, 0..=0, t1 + ms(100));
    send(&mut r, 12, t1 + ms(100));
    let status = r.careful_resume().expect("resumed");
    assert!(status.jumped, "{status:?}");
}

#[test]
fn packets_sent_before_a_move_feed_neither_the_new_paths_controller_nor_its_rtt() {
    // RFC 9000 §9.4: what was sent on the old path says nothing of the new
    // one. Its acknowledgements give no RTT sample and grow no window, and
    // its losses cut none; it only leaves flight.
    let t0 = Instant::now();
    let mut r = recovery(RecoveryConfig::default());
    flight_acked(&mut r, 0, 10, t0, ms(10));
    let t1 = t0 + ms(10);
    for pn in 10..30 {
        send(&mut r, pn, t1);
    }
    r.on_new_path(CcConfig::Reno(RenoConfig::default()).build(MSS), MSS);
    let (window, ssthresh) = (r.window(), r.ssthresh());
    let events = r.stats().congestion_events;
    // The old flight arrives late, all but its first four, which are lost.
    let outcome = ack(&mut r, 14..=29, t1 + ms(500));
    assert_eq!(numbers(&outcome.lost), vec![10, 11, 12, 13]);
    assert!(!r.rtt().has_sample(), "an RTT sample from the old path");
    assert_eq!((r.window(), r.ssthresh()), (window, ssthresh));
    assert_eq!(r.stats().congestion_events, events);
    assert_eq!(r.bytes_in_flight(), 0, "the old flight left flight");
    // The new path's own flight: sampled, and the window grows.
    flight_acked(&mut r, 30, 5, t1 + ms(500), ms(40));
    assert_eq!(r.rtt().latest(), ms(40));
    assert!(r.window() > window);
}
