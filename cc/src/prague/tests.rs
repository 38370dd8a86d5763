//! Prague's rules, each from RFC 9331 §4.3 or Linux Prague, with the
//! arithmetic in the comments.

use std::time::{Duration, Instant};

use super::*;
use crate::test_support::{ack, loss, marks, ms, rtt, spurious, MSS};

/// An ACK of the whole window at `now`, the largest packet sent one RTT
/// earlier, with a smoothed RTT of `srtt_ms`: one round.
fn round(prague: &mut Prague, now: Instant, srtt_ms: u64) {
    let packets = prague.window() / MSS;
    prague.on_ack(&ack(
        now,
        now - ms(srtt_ms),
        packets,
        rtt(srtt_ms, srtt_ms),
        0,
    ));
}

/// A Prague past slow start at `cwnd_packets`, with a first mark seen.
fn in_avoidance(cwnd_packets: u64, t0: Instant) -> Prague {
    let mut prague = Prague::new(PragueConfig::default(), MSS);
    prague.set_window(cwnd_packets * MSS, Some(cwnd_packets * MSS));
    prague.on_ecn(&marks(t0, t0, 1, 0, false));
    prague
}

#[test]
fn prague_asks_for_ect1() {
    assert_eq!(Prague::new(PragueConfig::default(), MSS).ect(), Ect::Ect1);
}

#[test]
fn alpha_converges_to_the_marked_fraction() {
    let t0 = Instant::now();
    let mut prague = in_avoidance(100, t0);
    // 100 packets a round, 10 of them marked, no new congestion event (so
    // the window stays put): α ← α + (0.1 − α)/16 per round, so after 150
    // rounds α = 0.1·(1 − (15/16)^150) ≈ 0.09999.
    for n in 1..=150 {
        let now = t0 + ms(100 * n);
        prague.on_ack(&ack(now, now - ms(100), 100, rtt(100, 100), 0));
        prague.on_ecn(&marks(now, now - ms(100), 10, 100, false));
    }
    assert!(
        (prague.alpha() - 0.1).abs() < 1e-3,
        "α = {}",
        prague.alpha()
    );
    assert_eq!(prague.metrics().fields["alpha"], prague.alpha());
}

#[test]
fn alpha_stays_zero_until_a_first_mark_shows_an_aqm() {
    let t0 = Instant::now();
    let mut prague = Prague::new(PragueConfig::default(), MSS);
    for n in 1..=20 {
        round(&mut prague, t0 + ms(100 * n), 100);
    }
    assert_eq!(prague.alpha(), 0.0);
}

#[test]
fn a_ce_congestion_event_cuts_the_window_by_alpha_over_two_once_per_round() {
    let t0 = Instant::now();
    let mut prague = in_avoidance(100, t0);
    for n in 1..=40 {
        let now = t0 + ms(100 * n);
        prague.on_ack(&ack(now, now - ms(100), 100, rtt(100, 100), 0));
        prague.on_ecn(&marks(now, now - ms(100), 50, 100, false));
    }
    let alpha = prague.alpha();
    assert!(alpha > 0.4, "α = {alpha}");
    let before = prague.window.cwnd;
    let now = t0 + ms(4_050);
    prague.on_ecn(&marks(now, now - ms(100), 0, 0, true));
    // cwnd·(1 − α/2), and ssthresh with it.
    let expected = before * (1.0 - alpha / 2.0);
    assert!((prague.window.cwnd - expected).abs() < 1e-6);
    assert_eq!(prague.ssthresh(), expected as u64);
    // More marks in the same round (no new congestion event): no cut.
    prague.on_ecn(&marks(now, now - ms(100), 0, 0, false));
    assert!((prague.window.cwnd - expected).abs() < 1e-6);
}

#[test]
fn slow_start_ends_at_the_first_mark_with_the_window_cut_by_cubics_beta() {
    let t0 = Instant::now();
    let mut prague = Prague::new(PragueConfig::default(), MSS);
    round(&mut prague, t0 + ms(100), 100); // 10 → 20 packets
    assert_eq!(prague.window(), 20 * MSS);
    assert_eq!(prague.metrics().phase, crate::Phase::SlowStart);
    prague.on_ecn(&marks(t0 + ms(110), t0 + ms(100), 0, 0, true));
    // α is 0 then: the first mark keeps 0.7 of the window (Linux halves).
    assert_eq!((prague.window(), prague.ssthresh()), (14 * MSS, 14 * MSS));
    assert_eq!(prague.metrics().phase, crate::Phase::CongestionAvoidance);
}

#[test]
fn marked_packets_earn_no_increase() {
    let t0 = Instant::now();
    let mut prague = in_avoidance(100, t0);
    let now = t0 + ms(100);
    prague.on_ack(&ack(now, now - ms(100), 10, rtt(100, 100), 0));
    // 10 packets at 100 packets' window: +10·1000/100_000 packets = 100 bytes.
    assert!((prague.window.cwnd - 100_100.0).abs() < 1e-6);
    // Four of them were marked: 40 bytes taken back.
    prague.on_ecn(&marks(now, now - ms(100), 4, 10, false));
    assert!((prague.window.cwnd - 100_060.0).abs() < 1e-6);
}

/// How much a Prague in avoidance at `srtt_ms` raises its rate (cwnd/srtt,
/// bytes per second) over one second, after RTT independence set in.
fn rate_growth_per_second(srtt_ms: u64) -> f64 {
    let t0 = Instant::now();
    let mut prague = in_avoidance(100, t0);
    let mut now = t0;
    let srtt = Duration::from_millis(srtt_ms);
    for _ in 0..=RTT_TRANSITION_ROUNDS {
        now += srtt;
        round(&mut prague, now, srtt_ms);
    }
    assert_eq!(prague.metrics().fields["rtt_independent"], 1.0);
    let rate = |p: &Prague| p.window.cwnd / srtt.as_secs_f64();
    let before = rate(&prague);
    for _ in 0..(1_000 / srtt_ms) {
        now += srtt;
        // The whole window acked in one ACK (fractional window kept).
        let packets = (prague.window.cwnd / MSS as f64).round() as u64;
        prague.on_ack(&ack(now, now - srtt, packets, rtt(srtt_ms, srtt_ms), 0));
    }
    rate(&prague) - before
}

#[test]
fn below_25_ms_the_rate_grows_as_fast_whatever_the_rtt() {
    // Per round cwnd += mss·(srtt/25 ms)², so per second the rate grows by
    // mss/(25 ms)² = 1000/0.000625 = 1.6 MB/s per second at any RTT below
    // 25 ms. (The acked bytes are whole packets of a fractional window, so
    // each round's increase is within a packet's share of exact.)
    let expected = MSS as f64 / (0.025 * 0.025);
    for srtt_ms in [5, 10, 20] {
        let growth = rate_growth_per_second(srtt_ms);
        assert!(
            (growth - expected).abs() < expected * 0.02,
            "{srtt_ms} ms: {growth} against {expected}"
        );
    }
    // At 50 ms the classic +1 packet per round: 20 packets/s over 50 ms,
    // 400 kB/s per second.
    let classic = rate_growth_per_second(50);
    assert!((classic - 400_000.0).abs() < 400_000.0 * 0.02, "{classic}");
}

#[test]
fn a_loss_halves_the_window_as_reno_and_stops_growth_until_recovery_ends() {
    let t0 = Instant::now();
    let mut prague = in_avoidance(100, t0);
    assert_eq!(
        prague.on_congestion(&loss(t0 + ms(10), rtt(100, 100), false)),
        LossVerdict::Congestive
    );
    assert_eq!((prague.window(), prague.ssthresh()), (50 * MSS, 50 * MSS));
    let mut in_recovery = ack(t0 + ms(20), t0, 10, rtt(100, 100), 0);
    in_recovery.in_recovery = true;
    prague.on_ack(&in_recovery);
    assert_eq!(prague.window(), 50 * MSS);
    // Persistent congestion: two packets.
    prague.on_congestion(&loss(t0 + ms(30), rtt(100, 100), true));
    assert_eq!(prague.window(), 2 * MSS);
}

#[test]
fn a_spurious_loss_is_undone_but_a_ce_cut_is_not() {
    let t0 = Instant::now();
    let mut prague = in_avoidance(100, t0);
    prague.on_congestion(&loss(t0 + ms(10), rtt(100, 100), false));
    prague.on_spurious_congestion(&spurious(t0 + ms(20), rtt(100, 100)));
    assert_eq!(prague.window(), 100 * MSS);
    prague.on_ecn(&marks(t0 + ms(30), t0 + ms(25), 1, 1, true));
    let cut = prague.window();
    prague.on_spurious_congestion(&spurious(t0 + ms(40), rtt(100, 100)));
    assert_eq!(prague.window(), cut);
}

#[test]
fn pacing_is_the_window_over_srtt_and_twice_that_in_slow_start() {
    let t0 = Instant::now();
    let mut prague = Prague::new(PragueConfig::default(), MSS);
    assert_eq!(prague.pacing_rate(), None, "no RTT yet");
    round(&mut prague, t0 + ms(100), 100); // 20 packets, slow start
                                           // 2·20_000 bytes / 0.1 s.
    assert_eq!(prague.pacing_rate(), Some(400_000));
    prague.on_ecn(&marks(t0 + ms(110), t0 + ms(100), 0, 0, true)); // 14 packets
    assert_eq!(prague.pacing_rate(), Some(140_000));
}

#[test]
fn an_out_of_range_reference_rtt_is_refused_and_falls_back() {
    let bad = PragueConfig {
        rtt_target_ms: 0,
        ..PragueConfig::default()
    };
    assert_eq!(bad.validate().unwrap_err().field, "rtt_target_ms");
    let prague = Prague::new(bad, MSS);
    assert_eq!(prague.rtt_target(), RTT_TARGET);
}

#[test]
fn after_persistent_congestion_acks_of_older_packets_do_not_grow_the_window() {
    let t0 = Instant::now();
    let mut prague = in_avoidance(100, t0);
    prague.on_congestion(&loss(t0 + ms(10), rtt(100, 100), true));
    let mut older = ack(t0 + ms(20), t0, 1, rtt(100, 100), 0);
    older.in_recovery = true;
    prague.on_ack(&older);
    assert_eq!(prague.window(), 2 * MSS);
    // A packet sent after it: slow start again.
    prague.on_ack(&ack(t0 + ms(130), t0 + ms(30), 1, rtt(100, 100), 0));
    assert_eq!(prague.window(), 3 * MSS);
}
