//! RFC 9002 requirements the requirements map (`docs/requirements.toml`)
//! names, each shown on recovery alone: RTT samples (§5), the probe
//! timeout (§6.2), discarded spaces (§6.4) and persistent congestion
//! (§7.6).

use super::*;
use sift_cc::{CcConfig, RenoConfig};

const MSS: u64 = 1000;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

/// Recovery before the handshake is confirmed, as a connection starts.
fn unconfirmed() -> Recovery<u64> {
    Recovery::new(
        RecoveryConfig::default(),
        CcConfig::Reno(RenoConfig::default()).build(MSS),
        MSS,
    )
}

fn packet(pn: u64, at: Instant, ack_eliciting: bool) -> SentPacket<u64> {
    SentPacket {
        packet_number: pn,
        time_sent: at,
        size: MSS,
        ack_eliciting,
        in_flight: ack_eliciting,
        app_limited: false,
        pmtu_probe: false,
        ecn: crate::wire::Ecn::NotEct,
        delivery: Default::default(),
        frames: vec![pn],
    }
}

fn send(r: &mut Recovery<u64>, space: SpaceId, pn: u64, at: Instant, ack_eliciting: bool) {
    r.on_packet_sent(space, packet(pn, at, ack_eliciting), at);
}

fn ack(
    r: &mut Recovery<u64>,
    space: SpaceId,
    range: RangeInclusive<u64>,
    delay: Duration,
    at: Instant,
) {
    r.on_ack_received(space, [range].into_iter(), delay, at);
}

#[test]
fn an_ack_of_only_packets_that_elicit_nothing_gives_no_rtt_sample() {
    // RFC 9002 §5.1: a sample needs a newly acknowledged ack-eliciting
    // packet; an ACK-only packet may sit in the peer's queue for long.
    let t0 = Instant::now();
    let mut r = unconfirmed();
    send(&mut r, SpaceId::Data, 0, t0, false);
    ack(&mut r, SpaceId::Data, 0..=0, Duration::ZERO, t0 + ms(500));
    assert!(!r.rtt().has_sample());
    assert_eq!(r.rtt().smoothed(), INITIAL_RTT);
    send(&mut r, SpaceId::Data, 1, t0 + ms(500), true);
    ack(&mut r, SpaceId::Data, 0..=1, Duration::ZERO, t0 + ms(540));
    assert!(r.rtt().has_sample());
    assert_eq!(r.rtt().latest(), ms(40));
}

#[test]
fn an_ack_whose_largest_was_acknowledged_before_gives_no_rtt_sample() {
    // RFC 9002 §5.1: one sample per largest acknowledged; an ACK that
    // newly acknowledges only older packets (filling a gap) gives none,
    // or a peer could feed the estimator the age of any packet.
    let t0 = Instant::now();
    let mut r = unconfirmed();
    send(&mut r, SpaceId::Data, 0, t0, true);
    send(&mut r, SpaceId::Data, 1, t0, true);
    ack(&mut r, SpaceId::Data, 1..=1, Duration::ZERO, t0 + ms(100));
    assert_eq!(r.rtt().latest(), ms(100));
    // Packet 0 arrives in a later ACK whose largest (1) is old news.
    r.on_ack_received(
        SpaceId::Data,
        [1..=1, 0..=0].into_iter(),
        Duration::ZERO,
        t0 + ms(900),
    );
    assert_eq!(r.rtt().latest(), ms(100), "no sample from the late ACK");
    assert_eq!(r.rtt().smoothed(), ms(100));
}

#[test]
fn the_peers_ack_delay_is_capped_at_its_max_ack_delay_once_confirmed() {
    // RFC 9002 §5.3: before confirmation the reported delay is taken as
    // it is; after, at most max_ack_delay, so a peer cannot make the path
    // look faster than it is by reporting long delays.
    let t0 = Instant::now();
    let sample = |confirmed: bool| {
        let mut r = unconfirmed();
        r.set_max_ack_delay(ms(25));
        if confirmed {
            r.set_handshake_confirmed();
        }
        send(&mut r, SpaceId::Data, 0, t0, true);
        ack(&mut r, SpaceId::Data, 0..=0, Duration::ZERO, t0 + ms(100));
        send(&mut r, SpaceId::Data, 1, t0 + ms(100), true);
        // 300 ms measured, the peer claims it held the ACK for 150 ms.
        ack(&mut r, SpaceId::Data, 1..=1, ms(150), t0 + ms(400));
        r.rtt().smoothed()
    };
    // Unconfirmed: adjusted 300 − 150 = 150 → srtt 7/8·100 + 1/8·150.
    assert_eq!(sample(false), Duration::from_micros(106_250));
    // Confirmed: adjusted 300 − 25 = 275 → srtt 7/8·100 + 1/8·275.
    assert_eq!(sample(true), Duration::from_micros(121_875));
}

#[test]
fn the_probe_timeout_is_never_shorter_than_the_timer_granularity() {
    // RFC 9002 §6.2.1: with no variance (identical samples) the PTO is
    // still smoothed_rtt + kGranularity, never smoothed_rtt alone.
    let mut rtt = RttEstimator::new(INITIAL_RTT);
    rtt.update(Duration::from_micros(10), Duration::ZERO);
    for _ in 0..64 {
        rtt.update(Duration::from_micros(10), Duration::ZERO);
    }
    assert!(rtt.variance() * 4 < GRANULARITY);
    assert_eq!(rtt.pto_base(), rtt.smoothed() + GRANULARITY);
}

#[test]
fn the_probe_timer_takes_the_earlier_handshake_space_and_waits_for_confirmation_for_data() {
    // RFC 9002 §6.2.1: with Initial and Handshake packets in flight the
    // timer is the earlier of the two; Application Data arms none until
    // the handshake is confirmed.
    let t0 = Instant::now();
    let mut r = unconfirmed();
    send(&mut r, SpaceId::Handshake, 0, t0, true);
    send(&mut r, SpaceId::Initial, 0, t0 + ms(10), true);
    send(&mut r, SpaceId::Data, 0, t0 + ms(5), true);
    let pto = r.pto_period(SpaceId::Initial);
    assert_eq!(r.loss_detection_timer(t0 + ms(10), false), Some(t0 + pto));
    let fired = r.on_loss_detection_timeout(t0 + pto);
    assert_eq!(fired.probes, Some((SpaceId::Handshake, 1)));

    // Only 0-RTT/1-RTT data in flight, handshake unconfirmed: no timer.
    let mut r = unconfirmed();
    send(&mut r, SpaceId::Data, 0, t0, true);
    assert_eq!(r.loss_detection_timer(t0, false), None);
    r.set_handshake_confirmed();
    assert!(r.loss_detection_timer(t0, false).is_some());
}

#[test]
fn discarding_a_space_resets_its_loss_and_probe_timers() {
    // RFC 9002 §6.2.2: keys discarded, the timers of their space go too,
    // and the PTO backoff starts over.
    let t0 = Instant::now();
    let mut r = unconfirmed();
    for pn in 0..4 {
        send(&mut r, SpaceId::Initial, pn, t0, true);
    }
    send(&mut r, SpaceId::Handshake, 0, t0 + ms(10), true);
    // Packet 3 acked 10 ms later: 0 is lost, 1 and 2 wait for the time
    // threshold (9/8 · 10 ms), the timer set.
    ack(&mut r, SpaceId::Initial, 3..=3, Duration::ZERO, t0 + ms(10));
    let now = t0 + ms(10);
    assert_eq!(
        r.loss_detection_timer(now, false),
        Some(t0 + Duration::from_micros(11_250))
    );
    r.discard_space(SpaceId::Initial);
    assert_eq!(r.bytes_in_flight(), MSS, "the Handshake packet only");
    // The Initial loss timer is gone: the Handshake PTO is what is left.
    let pto = now + r.pto_period(SpaceId::Handshake);
    assert_eq!(r.loss_detection_timer(now, false), Some(pto));
    let fired = r.on_loss_detection_timeout(pto);
    assert_eq!(fired.probes, Some((SpaceId::Handshake, 1)));
    assert_eq!(r.pto_count(), 1);
    r.discard_space(SpaceId::Handshake);
    assert_eq!(r.pto_count(), 0, "the backoff starts over");
    assert_eq!(r.bytes_in_flight(), 0);
    assert_eq!(r.loss_detection_timer(pto, false), None);
}

#[test]
fn the_time_threshold_timer_stands_in_for_the_probe_timer() {
    // RFC 9002 §6.2.1: while a packet waits for the time threshold, that
    // timer is the one set, not the PTO; when it fires it declares the
    // loss and sends no probe.
    let t0 = Instant::now();
    let mut r = unconfirmed();
    r.set_handshake_confirmed();
    for pn in 0..3 {
        send(&mut r, SpaceId::Data, pn, t0, true);
    }
    ack(&mut r, SpaceId::Data, 2..=2, Duration::ZERO, t0 + ms(80));
    // 9/8 · 80 ms after packets 0 and 1 were sent, well before a PTO.
    let timer = r.loss_detection_timer(t0 + ms(80), false).unwrap();
    assert_eq!(timer, t0 + ms(90));
    let fired = r.on_loss_detection_timeout(timer);
    assert_eq!(fired.lost.len(), 2);
    assert_eq!(fired.probes, None);
    assert_eq!(r.stats().ptos, 0);
}

#[test]
fn persistent_congestion_needs_lost_ack_eliciting_packets_spanning_the_period() {
    // RFC 9002 §7.6.2: the two packets that bound the period must be
    // ack-eliciting, since a receiver need not acknowledge the others
    // promptly. Lost ACK-only packets that widen the span to past the
    // period make no persistent congestion; ack-eliciting ones at the same
    // times do, and the window collapses to kMinimumWindow.
    let t0 = Instant::now();
    for ends_elicit in [false, true] {
        let mut r = unconfirmed();
        r.set_handshake_confirmed();
        r.set_max_ack_delay(Duration::ZERO);
        send(&mut r, SpaceId::Data, 0, t0, true);
        ack(&mut r, SpaceId::Data, 0..=0, Duration::ZERO, t0 + ms(100));
        // PTO period 100 + 4·50 = 300 ms: persistence needs 900 ms.
        // Ack-eliciting 2..=9 span 700 ms; 1 and 10 widen it to 1199 ms.
        send(&mut r, SpaceId::Data, 1, t0 + ms(101), ends_elicit);
        for pn in 2..=9 {
            send(
                &mut r,
                SpaceId::Data,
                pn,
                t0 + ms(400 + (pn - 2) * 100),
                true,
            );
        }
        for pn in 10..=13 {
            let ack_eliciting = pn > 10 || ends_elicit;
            send(&mut r, SpaceId::Data, pn, t0 + ms(1300), ack_eliciting);
        }
        ack(
            &mut r,
            SpaceId::Data,
            13..=13,
            Duration::ZERO,
            t0 + ms(1400),
        );
        assert_eq!(r.stats().lost_packets, 10);
        let persistent = r.stats().persistent_congestion_events;
        if ends_elicit {
            assert_eq!(persistent, 1);
            assert_eq!(r.window(), 2 * MSS, "kMinimumWindow");
        } else {
            assert_eq!(persistent, 0, "ACK-only packets bound no period");
            assert!(r.window() > 2 * MSS);
        }
    }
}

#[test]
fn min_rtt_is_the_first_sample_then_the_smallest_before_ack_delay() {
    // RFC 9002 §5.2: min_rtt starts at the first sample and then takes the
    // lesser of itself and each latest_rtt, ack delay not subtracted.
    let mut rtt = RttEstimator::new(INITIAL_RTT);
    rtt.update(ms(80), ms(5));
    assert_eq!(rtt.min(), ms(80));
    rtt.update(ms(120), Duration::ZERO);
    assert_eq!(rtt.min(), ms(80));
    rtt.update(ms(60), ms(50));
    assert_eq!(rtt.min(), ms(60), "the raw sample, not 60 − 50");
}

#[test]
fn every_controller_collapses_its_window_on_persistent_congestion() {
    // RFC 9002 §7: a controller other than RFC 9002's must still behave
    // as RFC 8085 §3.1 asks of congestion control; at the least, each of
    // sift's gives up its window when the path goes dark (§7.6.2), however
    // it judges single losses.
    let t0 = Instant::now();
    for name in CcConfig::NAMES {
        let cc: CcConfig = name.parse().unwrap();
        let mut r = Recovery::new(RecoveryConfig::default(), cc.build(MSS), MSS);
        r.set_handshake_confirmed();
        r.set_max_ack_delay(Duration::ZERO);
        // Slow start over a few round trips, then ten packets lost over a
        // second, a later one acknowledged.
        let mut pn = 0;
        for round in 0..5 {
            let at = t0 + ms(100 * round);
            let first = pn;
            for _ in 0..r.window() / MSS {
                send(&mut r, SpaceId::Data, pn, at, true);
                pn += 1;
            }
            ack(
                &mut r,
                SpaceId::Data,
                first..=pn - 1,
                Duration::ZERO,
                at + ms(100),
            );
        }
        let grown = r.window();
        let start = t0 + ms(600);
        for i in 0..10 {
            send(&mut r, SpaceId::Data, pn + i, start + ms(i * 150), true);
        }
        for i in 10..14 {
            send(&mut r, SpaceId::Data, pn + i, start + ms(1500), true);
        }
        ack(
            &mut r,
            SpaceId::Data,
            pn + 13..=pn + 13,
            Duration::ZERO,
            start + ms(1600),
        );
        assert_eq!(r.stats().persistent_congestion_events, 1, "{name}");
        // kMinimumWindow (Westwood: its one-packet timeout window). BBR
        // keeps what was in flight when the loss was declared plus one
        // packet, and never less than its 4-packet MinPipeCwnd
        // (draft-ietf-ccwg-bbr, OnEnterRTO).
        let floor = if *name == "bbr" {
            4 * MSS + r.bytes_in_flight()
        } else {
            2 * MSS
        };
        assert!(r.window() <= floor, "{name}: {grown} → {}", r.window());
        assert!(r.window() < grown, "{name}: {grown} → {}", r.window());
    }
}
