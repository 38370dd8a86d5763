use super::*;
use sift_cc::{CcConfig, RenoConfig};

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
    let corrupted = r.on_corrupted(SpaceId::Data, [0..=0].into_iter(), t0 + ms(50));
    assert_eq!(numbers(&corrupted), [0]);
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
        numbers(&r.on_corrupted(SpaceId::Data, [1..=1].into_iter(), t0)),
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
