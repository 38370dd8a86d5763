//! ECN for every controller by name (DESIGN §6.1): a CE mark is a
//! congestion event once per round, never random, never undone; and the
//! `-ecn` variants judge a loss by the marks of its round on a validated
//! path. A controller added later fails here until it answers CE.

use std::time::Instant;

use crate::test_support::{ack, loss, marks, ms, packets_lost, rtt, spurious, MSS};
use crate::{CcConfig, CongestionControl, LossVerdict};

/// `name`'s controller after two ACKs (t0 and t0 + 100 ms, two rounds)
/// that grow it past its initial window; the second round's samples sit
/// at the smoothed RTT, the first's below it, so Veno's N is well above β
/// (as in `undo_tests`).
fn grown(name: &str, t0: Instant) -> Box<dyn CongestionControl> {
    let mut cc = name.parse::<CcConfig>().expect("a known name").build(MSS);
    cc.on_sent(t0, MSS, MSS);
    cc.on_ack(&ack(t0, t0, 5, rtt(50, 100), 0));
    cc.on_ack(&ack(t0 + ms(100), t0 + ms(10), 5, rtt(100, 100), 0));
    cc
}

/// The window controllers: all but BBR, whose response to congestion is
/// its model's, once per round (`bbr::tests`).
fn window_controllers() -> impl Iterator<Item = &'static str> {
    CcConfig::NAMES
        .iter()
        .copied()
        .filter(|&name| name != "bbr")
}

#[test]
fn every_controller_cuts_its_window_when_ce_marks_start_a_congestion_event() {
    let t0 = Instant::now();
    for name in window_controllers() {
        let mut cc = grown(name, t0);
        let before = cc.window();
        cc.on_ecn(&marks(t0 + ms(110), t0 + ms(100), 1, 1, true));
        assert!(cc.window() < before, "{name}: {} ≥ {before}", cc.window());
        assert_eq!(
            cc.metrics().last_verdict.unwrap_or(LossVerdict::Congestive),
            LossVerdict::Congestive,
            "{name}: a mark is never random"
        );
    }
}

#[test]
fn no_controller_cuts_for_marks_inside_a_congestion_event_already_answered() {
    let t0 = Instant::now();
    for name in CcConfig::NAMES {
        let mut cc = grown(name, t0);
        let before = cc.window();
        cc.on_ecn(&marks(t0 + ms(110), t0 + ms(100), 1, 5, false));
        // Prague takes back what the marked packet earned: 1 of the last
        // ACK's 5 packets, whose slow start grew the window by 5_000.
        let expected = if *name == "prague" {
            before - MSS
        } else {
            before
        };
        assert_eq!(cc.window(), expected, "{name}");
    }
}

#[test]
fn a_cut_ce_marks_made_is_never_undone_as_spurious() {
    let t0 = Instant::now();
    for name in window_controllers() {
        let mut cc = grown(name, t0);
        cc.on_ecn(&marks(t0 + ms(110), t0 + ms(100), 1, 1, true));
        let cut = (cc.window(), cc.ssthresh());
        cc.on_spurious_congestion(&spurious(t0 + ms(120), rtt(100, 100)));
        assert_eq!((cc.window(), cc.ssthresh()), cut, "{name}");
    }
}

#[test]
fn marks_inside_a_losss_recovery_period_keep_its_cut_from_being_undone() {
    let t0 = Instant::now();
    for name in window_controllers() {
        let mut cc = grown(name, t0);
        let before = cc.window();
        cc.on_congestion(&loss(t0 + ms(110), rtt(100, 100), false));
        let cut = cc.window();
        assert!(cut < before, "{name}: the loss cuts");
        cc.on_ecn(&marks(t0 + ms(120), t0 + ms(90), 1, 1, false));
        cc.on_spurious_congestion(&spurious(t0 + ms(130), rtt(100, 100)));
        assert!(cc.window() <= cut, "{name}: {} > {cut}", cc.window());
    }
}

/// `name` with the path's ECN validated, grown as [`grown`], then, if
/// `marked`, CE marks at t0 + 110 ms (inside the round that began at
/// t0 + 100 ms) within no new congestion event; then a loss of a packet
/// sent at t0 + 150 ms, in that round.
fn verdict_on_loss(
    name: &str,
    validated: bool,
    marked: bool,
) -> (LossVerdict, Box<dyn CongestionControl>) {
    let t0 = Instant::now();
    let mut cc = grown(name, t0);
    cc.on_ecn_validated(validated);
    if marked {
        cc.on_ecn(&marks(t0 + ms(110), t0 + ms(100), 1, 1, false));
    }
    let verdict = cc.on_congestion(&loss(t0 + ms(150), rtt(100, 100), false));
    (verdict, cc)
}

#[test]
fn with_ecn_validated_a_loss_without_a_mark_in_its_round_is_random_and_with_one_congestive() {
    for base in CcConfig::ECN_VERDICT_NAMES {
        let name = format!("{base}{}", CcConfig::ECN_VERDICT_SUFFIX);
        let (verdict, cc) = verdict_on_loss(&name, true, false);
        assert_eq!(verdict, LossVerdict::Random, "{name}");
        if let Some(basis) = cc.verdict_basis() {
            assert!(basis.values.contains(&("ce_in_round", 0.0)), "{name}");
            assert!(basis.values.contains(&("ecn_validated", 1.0)), "{name}");
        }
        let (verdict, cc) = verdict_on_loss(&name, true, true);
        assert_eq!(verdict, LossVerdict::Congestive, "{name}");
        if let Some(basis) = cc.verdict_basis() {
            assert!(basis.values.contains(&("ce_in_round", 1.0)), "{name}");
        }
    }
}

#[test]
fn without_validation_or_without_the_option_each_paper_judges_the_loss() {
    for base in CcConfig::ECN_VERDICT_NAMES {
        let name = format!("{base}{}", CcConfig::ECN_VERDICT_SUFFIX);
        let (paper, _) = verdict_on_loss(base, true, false);
        let (unvalidated, _) = verdict_on_loss(&name, false, false);
        assert_eq!(unvalidated, paper, "{name} on an unvalidated path");
    }
    // CUBIC's paper judges every loss congestive, with ECN or without.
    assert_eq!(
        verdict_on_loss("cubic", true, false).0,
        LossVerdict::Congestive
    );
}

#[test]
fn the_ecn_variants_parse_and_only_for_loss_differentiating_controllers() {
    for base in CcConfig::ECN_VERDICT_NAMES {
        let name = format!("{base}-ecn");
        let config: CcConfig = name.parse().unwrap();
        // The name round-trips, so a peer asked by name runs the variant.
        assert_eq!(config.name(), name);
        assert_eq!(config.name().parse::<CcConfig>().unwrap(), config);
        assert_eq!(config.ecn_loss_verdict(), Some(true), "{base}");
        let plain: CcConfig = base.parse().unwrap();
        assert_eq!(
            plain.ecn_loss_verdict(),
            Some(false),
            "{base}: off by default"
        );
    }
    for name in ["reno-ecn", "vegas-ecn", "prague-ecn", "-ecn"] {
        assert!(name.parse::<CcConfig>().is_err(), "{name}");
    }
    let prague: CcConfig = "prague".parse().unwrap();
    assert_eq!(prague.build(MSS).ect(), crate::Ect::Ect1);
    assert_eq!(
        "cubic".parse::<CcConfig>().unwrap().build(MSS).ect(),
        crate::Ect::Ect0
    );
}

/// `name`'s controller after two rounds whose RTT samples all equal the
/// smoothed RTT: no queue, so Veno's N is 0 (a loss is random).
fn grown_without_queue(name: &str, t0: Instant) -> Box<dyn CongestionControl> {
    let mut cc = name.parse::<CcConfig>().expect("a known name").build(MSS);
    cc.on_sent(t0, MSS, MSS);
    cc.on_ack(&ack(t0, t0, 5, rtt(100, 100), 0));
    cc.on_ack(&ack(t0 + ms(100), t0 + ms(10), 5, rtt(100, 100), 0));
    cc
}

#[test]
fn veno_judges_a_loss_without_queue_random_but_a_mark_congestive() {
    let t0 = Instant::now();
    for name in ["veno", "veno-enhanced"] {
        let mut lossy = grown_without_queue(name, t0);
        let before = lossy.window();
        let verdict = lossy.on_congestion(&loss(t0 + ms(110), rtt(100, 100), false));
        assert_eq!(verdict, LossVerdict::Random, "{name}: N = 0 < β");
        let mut marked = grown_without_queue(name, t0);
        marked.on_ecn(&marks(t0 + ms(110), t0 + ms(100), 1, 1, true));
        // The congestive branch: ssthresh = cwnd/2.
        assert_eq!(marked.window(), before / 2, "{name}");
        let basis = marked.verdict_basis().expect("a verdict");
        assert_eq!(basis.verdict, LossVerdict::Congestive, "{name}");
        assert!(basis.values.contains(&("ce_marked", 1.0)), "{name}");
    }
}

#[test]
fn marks_inside_a_period_judged_random_turn_its_cut_congestive() {
    let t0 = Instant::now();
    for name in ["veno", "veno-enhanced"] {
        let mut cc = grown_without_queue(name, t0);
        let before = cc.window();
        assert_eq!(
            cc.on_congestion(&loss(t0 + ms(110), rtt(100, 100), false)),
            LossVerdict::Random
        );
        assert!(cc.window() > before / 2, "{name}: a random loss keeps more");
        cc.on_ecn(&marks(t0 + ms(120), t0 + ms(90), 1, 1, false));
        // Undone and cut again as congestive: half the window before the loss.
        assert_eq!(cc.window(), before / 2, "{name}");
        let fields = cc.metrics().fields;
        assert_eq!(
            (fields["random_losses"], fields["congestive_losses"]),
            (0.0, 1.0),
            "{name}: counted once, as congestive"
        );
    }
    // Westwood and Westwood-A, whose random branch the ECN rule takes.
    for name in ["westwood-ecn", "westwood-a-ecn"] {
        let mut cc = grown(name, t0);
        cc.on_ecn_validated(true);
        let verdict = cc.on_congestion(&loss(t0 + ms(150), rtt(100, 100), false));
        assert_eq!(verdict, LossVerdict::Random, "{name}");
        let kept = cc.window();
        cc.on_ecn(&marks(t0 + ms(160), t0 + ms(140), 1, 1, false));
        assert!(
            cc.window() < kept,
            "{name}: the marks take the congestive cut"
        );
        let basis = cc.verdict_basis().expect("a verdict");
        assert_eq!(basis.verdict, LossVerdict::Congestive, "{name}");
        assert!(basis.values.contains(&("ce_marked", 1.0)), "{name}");
    }
}

#[test]
fn westwood_with_the_ecn_verdict_keeps_its_window_at_a_random_loss() {
    let t0 = Instant::now();
    let mut cc = grown("westwood-ecn", t0);
    cc.on_ecn_validated(true);
    let before = (cc.window(), cc.ssthresh());
    cc.on_congestion(&loss(t0 + ms(150), rtt(100, 100), false));
    assert_eq!((cc.window(), cc.ssthresh()), before);
    // Without the option the paper's cut applies.
    let mut paper = grown("westwood", t0);
    paper.on_ecn_validated(true);
    paper.on_congestion(&loss(t0 + ms(150), rtt(100, 100), false));
    assert!(paper.window() < before.0);
}

/// The first ACK after CUBIC's recovery period (its packet sent after the
/// period began at t0 + 110 ms): where the small-loss rollback decides.
fn end_recovery(cc: &mut dyn CongestionControl, t0: Instant) {
    cc.on_ack(&ack(t0 + ms(250), t0 + ms(160), 1, rtt(100, 100), 0));
}

#[test]
fn cubic_rolls_back_a_small_loss_but_never_a_cut_marks_made_or_reached() {
    let t0 = Instant::now();
    // No queue, one packet lost: the rollback undoes the cut.
    let mut lossy = grown_without_queue("cubic", t0);
    let before = lossy.window();
    lossy.on_congestion(&loss(t0 + ms(110), rtt(100, 100), false));
    end_recovery(lossy.as_mut(), t0);
    assert_eq!(lossy.window(), before, "the small loss is rolled back");
    // CE marks started the period: the cut stays.
    let mut marked = grown_without_queue("cubic", t0);
    marked.on_ecn(&marks(t0 + ms(110), t0 + ms(100), 1, 1, true));
    end_recovery(marked.as_mut(), t0);
    assert!(marked.window() < before, "{} ≥ {before}", marked.window());
    // Marks reached a loss's period: the cut stays.
    let mut reached = grown_without_queue("cubic", t0);
    reached.on_congestion(&loss(t0 + ms(110), rtt(100, 100), false));
    reached.on_ecn(&marks(t0 + ms(120), t0 + ms(100), 1, 1, false));
    end_recovery(reached.as_mut(), t0);
    assert!(reached.window() < before, "{} ≥ {before}", reached.window());
}

#[test]
fn cubic_with_the_ecn_verdict_rolls_back_an_unmarked_loss_over_a_queue() {
    let t0 = Instant::now();
    // The loss is found with the smoothed RTT 50 ms over min_rtt, well past
    // RFC 9406's 6.25 ms and 4·rttvar (4 ms): a queue.
    let mut queued = loss(t0 + ms(150), rtt(100, 100), false);
    queued.rtt.min = ms(50);
    queued.rtt.variance = ms(1);
    // The RTT's test keeps the cut…
    let mut paper = grown("cubic", t0);
    paper.on_ecn_validated(true);
    let before = paper.window();
    paper.on_congestion(&queued);
    end_recovery(paper.as_mut(), t0);
    assert!(paper.window() < before);
    // … the marks' verdict (none in its round: random) rolls it back.
    let mut ecn = grown("cubic-ecn", t0);
    ecn.on_ecn_validated(true);
    assert_eq!(ecn.on_congestion(&queued), LossVerdict::Random);
    end_recovery(ecn.as_mut(), t0);
    assert!(ecn.window() >= before);
}

#[test]
fn cubic_cuts_once_for_a_mark_that_a_later_loss_in_its_round_shares() {
    let t0 = Instant::now();
    let mut cc = grown_without_queue("cubic-ecn", t0);
    cc.on_ecn_validated(true);
    // An unmarked loss, then a mark that reaches its period: one cut.
    cc.on_congestion(&loss(t0 + ms(110), rtt(100, 100), false));
    cc.on_ecn(&marks(t0 + ms(120), t0 + ms(100), 1, 1, false));
    end_recovery(cc.as_mut(), t0);
    let after_mark = cc.window();
    // A packet sent before that cut (t0 + 115 ms, in the mark's round) is
    // found lost in a new period: the mark it shares was answered.
    let mut same_round = loss(t0 + ms(260), rtt(100, 100), false);
    same_round.largest_lost_sent_time = t0 + ms(115);
    assert_eq!(cc.on_congestion(&same_round), LossVerdict::Congestive);
    assert!(
        cc.window() >= after_mark,
        "cut twice for one mark: {} < {after_mark}",
        cc.window()
    );
}

#[test]
fn cubic_with_the_ecn_verdict_keeps_its_window_at_an_unmarked_loss_until_marks_or_many_losses() {
    let t0 = Instant::now();
    let later = |cc: &mut dyn CongestionControl| {
        cc.on_ack(&ack(t0 + ms(450), t0 + ms(360), 1, rtt(100, 100), 0));
    };
    // An unmarked small loss on a path that has marked: no cut at all,
    // not a cut undone a round later.
    let mut spared = ecn_cubic_after_a_mark(t0);
    let before = spared.window();
    assert_eq!(
        spared.on_congestion(&loss(t0 + ms(300), rtt(100, 100), false)),
        LossVerdict::Random
    );
    assert_eq!(spared.window(), before);
    // A mark in that period is congestion: the cut comes then.
    let mut marked = ecn_cubic_after_a_mark(t0);
    marked.on_congestion(&loss(t0 + ms(300), rtt(100, 100), false));
    marked.on_ecn(&marks(t0 + ms(310), t0 + ms(290), 1, 1, false));
    assert!(marked.window() < before);
    later(marked.as_mut());
    assert!(
        marked.window() < before,
        "a marked cut is never rolled back"
    );
    // So do losses past the small-loss threshold.
    let mut burst = ecn_cubic_after_a_mark(t0);
    burst.on_congestion(&loss(t0 + ms(300), rtt(100, 100), false));
    burst.on_packets_lost(&packets_lost(t0 + ms(310), 2, 10));
    assert!(burst.window() < before);
    // Before the path has marked at all, in congestion avoidance that
    // `ecn_slow_start_exit` did not start, the cut is made (and rolled
    // back); in slow start that option spares it (tested below).
    let mut unmarked = grown("cubic-ecn", t0);
    unmarked.on_ecn_validated(true);
    let window = unmarked.window();
    unmarked.set_window(window, Some(window));
    let before = unmarked.window();
    unmarked.on_congestion(&loss(t0 + ms(110), rtt(100, 100), false));
    assert!(unmarked.window() < before);
    end_recovery(unmarked.as_mut(), t0);
    assert!(unmarked.window() >= before);
}

/// CUBIC with the ECN verdict on a validated path that has marked once
/// (its cut over by t0 + 250 ms), in congestion avoidance.
fn ecn_cubic_after_a_mark(t0: Instant) -> Box<dyn CongestionControl> {
    let mut cc = grown("cubic-ecn", t0);
    cc.on_ecn_validated(true);
    cc.on_ecn(&marks(t0 + ms(110), t0 + ms(100), 1, 1, true));
    end_recovery(cc.as_mut(), t0);
    let window = cc.window();
    cc.set_window(window, Some(window));
    cc
}

#[test]
fn cubic_does_not_count_a_mark_on_a_packet_sent_before_the_cut_against_a_later_loss() {
    let t0 = Instant::now();
    // The mark at t0 + 110 ms cut the window; a second mark, on a packet
    // sent before that cut (t0 + 105 ms), is the same congestion.
    let mut cc = ecn_cubic_after_a_mark(t0);
    cc.on_ecn(&marks(t0 + ms(260), t0 + ms(105), 1, 1, false));
    let before = cc.window();
    // A loss sent at t0 + 300 ms, in a round with no newer mark: random.
    let mut unmarked = loss(t0 + ms(400), rtt(100, 100), false);
    unmarked.largest_lost_sent_time = t0 + ms(300);
    assert_eq!(cc.on_congestion(&unmarked), LossVerdict::Random);
    assert_eq!(cc.window(), before);
}

#[test]
fn cubic_with_the_ecn_verdict_does_not_cut_again_for_a_mark_its_cut_answered() {
    let t0 = Instant::now();
    // The mark at t0 + 110 ms cut the window; a packet sent after that
    // cut (t0 + 120 ms) but in the mark's round is lost: no second cut.
    let mut cc = ecn_cubic_after_a_mark(t0);
    let before = cc.window();
    let mut same_round = loss(t0 + ms(230), rtt(100, 100), false);
    same_round.largest_lost_sent_time = t0 + ms(120);
    assert_eq!(cc.on_congestion(&same_round), LossVerdict::Congestive);
    assert!(cc.window() >= before, "{} < {before}", cc.window());
}

#[test]
fn cubic_with_the_ecn_verdict_cuts_less_for_a_mark_at_a_shallow_queue_only() {
    use crate::cubic::BETA_CUBIC;
    let t0 = Instant::now();
    // The window after a mark that starts a congestion event, over the
    // window before, with the RTT `smoothed_ms` over a 100 ms min_rtt, in
    // congestion avoidance (`avoiding`) or in slow start.
    const NO_PIPE: &str = "cubic-ecn without the pipe";
    let cut_in = |name: &str, smoothed_ms: u64, avoiding: bool| {
        let mut cc = if name == NO_PIPE {
            let config = CcConfig::Cubic(crate::CubicConfig {
                ecn_mark_cut_to_pipe: false,
                ..crate::CubicConfig::default()
            })
            .with_ecn_loss_verdict(true);
            let mut cc = config.build(MSS);
            cc.on_sent(t0, MSS, MSS);
            cc.on_ack(&ack(t0, t0, 5, rtt(50, 100), 0));
            cc.on_ack(&ack(t0 + ms(100), t0 + ms(10), 5, rtt(100, 100), 0));
            cc
        } else {
            grown(name, t0)
        };
        cc.on_ecn_validated(true);
        if avoiding {
            let window = cc.window();
            cc.set_window(window, Some(window));
        }
        let before = cc.window() as f64;
        let mut ev = marks(t0 + ms(110), t0 + ms(100), 1, 1, true);
        ev.rtt = rtt(100, smoothed_ms);
        cc.on_ecn(&ev);
        cc.window() as f64 / before
    };
    let cut = |name: &str, smoothed_ms: u64| cut_in(name, smoothed_ms, true);
    let close = |actual: f64, expected: f64| (actual - expected).abs() < 0.01;
    // CoDel's few milliseconds of queue: RFC 8511's gentler cut (with
    // `ecn_multiplicative_decrease` = 0.7, the old rule, this is 0.7).
    let shallow = cut(NO_PIPE, 105);
    assert!(close(shallow, 0.85), "{shallow}");
    // With `ecn_mark_cut_to_pipe` (on in `cubic-ecn`): the cut stops at
    // the pipe, cwnd·100/105, above 0.85 (and at 0.95 at most).
    let to_pipe = cut("cubic-ecn", 105);
    assert!(close(to_pipe, 100.0 / 105.0), "{to_pipe}");
    let no_queue = cut("cubic-ecn", 100);
    assert!(close(no_queue, 0.95), "{no_queue}");
    // The paper's CUBIC keeps β_cubic.
    let paper = cut("cubic", 105);
    assert!(close(paper, BETA_CUBIC), "{paper}");
    // A mark behind a deep queue (a slow start's overshoot): β_cubic.
    let deep = cut("cubic-ecn", 150);
    assert!(close(deep, BETA_CUBIC), "{deep}");
    // A mark that ends a slow start, which doubled the window since the
    // marked packet left: β_cubic.
    let slow_start = cut_in("cubic-ecn", 105, false);
    assert!(close(slow_start, BETA_CUBIC), "{slow_start}");
}

/// `cubic-ecn` with `ecn_slow_start_exit` set to `exit`, the path's ECN
/// validated, through one round of slow start (eight ACKs of ten packets
/// every 10 ms at 100 ms: 1 MB/s) and the first ACKs of a second round
/// whose RTT samples are 105 ms (`risen` of them). Returns the controller
/// and when its latest ACK came.
fn cubic_slow_start_rising(exit: bool, risen: u64) -> (Box<dyn CongestionControl>, Instant) {
    use crate::RttSample;
    let t0 = Instant::now();
    let config = CcConfig::Cubic(crate::CubicConfig {
        ecn_slow_start_exit: exit,
        ..crate::CubicConfig::default()
    })
    .with_ecn_loss_verdict(true);
    let mut cc = config.build(MSS);
    cc.on_ecn_validated(true);
    let mut now = t0;
    for i in 0..8 {
        now = t0 + ms(100 + 10 * i);
        cc.on_ack(&ack(now, t0 + ms(i), 10, rtt(100, 100), 0));
    }
    let risen_rtt = RttSample {
        latest: ms(105),
        min: ms(100),
        smoothed: ms(101),
        variance: ms(1),
    };
    for i in 0..risen {
        now = t0 + ms(200 + 10 * i);
        cc.on_ack(&ack(now, t0 + ms(100 + i), 10, risen_rtt, 0));
    }
    (cc, now)
}

#[test]
fn cubic_ecn_ends_slow_start_at_the_rtt_rise_with_the_window_at_the_ack_rate_pipe() {
    // Seven risen samples: still slow start, 10 + 80 + 70 packets.
    let (cc, _) = cubic_slow_start_rising(true, 7);
    assert_eq!(cc.window(), 160 * MSS);
    // The eighth (a rise of 5 ms ≥ MIN_RTT_THRESH): congestion avoidance
    // at the ACK rate (1 MB/s) times min_rtt plus a quarter of RttThresh
    // (100 + 12.5/4 ms): 103_125 bytes, not the 170 packets slow start
    // reached.
    let (exited, _) = cubic_slow_start_rising(true, 8);
    assert_eq!(exited.window(), 103_125);
    assert_eq!(exited.ssthresh(), 103_125);
    // Without the option: HyStart++'s RttThresh (12.5 ms) is not reached
    // and slow start goes on (with it at 5 ms, CSS would: no cut).
    let (paper, _) = cubic_slow_start_rising(false, 8);
    assert_eq!(paper.window(), 170 * MSS);
    assert_eq!(paper.ssthresh(), u64::MAX);
}

#[test]
fn cubic_ecn_slow_start_keeps_growing_through_an_unmarked_loss_without_queue() {
    let t0 = Instant::now();
    let loss_at = |exit: bool| {
        let (mut cc, now) = cubic_slow_start_rising(exit, 0);
        let before = cc.window();
        let verdict = cc.on_congestion(&loss(now + ms(5), rtt(100, 100), false));
        (verdict, cc.window(), before, cc.ssthresh())
    };
    // Before the path's first mark: spared, no cut, still slow start.
    let (verdict, after, before, ssthresh) = loss_at(true);
    assert_eq!(verdict, LossVerdict::Random);
    assert_eq!(after, before);
    assert_eq!(ssthresh, u64::MAX);
    // The old rule cuts (to roll back a round later).
    let (_, after, before, _) = loss_at(false);
    assert!(after < before, "{after} ≥ {before}");
    let _ = t0;
}

#[test]
fn cubic_ecn_takes_a_mark_on_a_packet_sent_before_its_slow_start_exit_as_answered() {
    let (mut cc, now) = cubic_slow_start_rising(true, 8);
    let exited = cc.window();
    // The queue the overshoot built is marked: the exit answered it.
    cc.on_ecn(&marks(now + ms(100), now - ms(1), 1, 1, true));
    assert_eq!(cc.window(), exited);
    // Nor does a loss of a packet sent in that mark's round.
    let mut same_round = loss(now + ms(400), rtt(100, 100), false);
    same_round.largest_lost_sent_time = now + ms(50);
    cc.on_congestion(&same_round);
    assert_eq!(cc.window(), exited);
    // Without the option the same mark cuts.
    let (mut paper, now) = cubic_slow_start_rising(false, 8);
    let before = paper.window();
    paper.on_ecn(&marks(now + ms(100), now - ms(1), 1, 1, true));
    assert!(paper.window() < before);
}

/// `westwood-a-ecn` with `ecn_start_exit` set to `exit`, the path's ECN
/// validated, through one round of probing (eight ACKs of ten packets
/// every 10 ms at 100 ms: 1 MB/s) and the first ACKs of a second round
/// whose RTT samples are 105 ms (`risen` of them).
fn westwood_a_probing_rising(exit: bool, risen: u64) -> (Box<dyn CongestionControl>, Instant) {
    use crate::RttSample;
    let t0 = Instant::now();
    let config = CcConfig::WestwoodA(crate::WestwoodAConfig {
        ecn_start_exit: exit,
        ..crate::WestwoodAConfig::default()
    })
    .with_ecn_loss_verdict(true);
    let mut cc = config.build(MSS);
    cc.on_ecn_validated(true);
    let mut now = t0;
    for i in 0..8 {
        now = t0 + ms(100 + 10 * i);
        cc.on_sent(now, MSS, MSS);
        cc.on_ack(&ack(now, t0 + ms(i), 10, rtt(100, 100), 0));
    }
    let risen_rtt = RttSample {
        latest: ms(105),
        min: ms(100),
        smoothed: ms(101),
        variance: ms(1),
    };
    for i in 0..risen {
        now = t0 + ms(200 + 10 * i);
        cc.on_sent(now, MSS, MSS);
        cc.on_ack(&ack(now, t0 + ms(100 + i), 10, risen_rtt, 0));
    }
    (cc, now)
}

fn agile_probing(cc: &dyn CongestionControl) -> f64 {
    cc.metrics().fields["agile_probing"]
}

#[test]
fn westwood_a_ecn_ends_its_initial_probing_at_the_rtt_rise_at_the_ack_rate_pipe() {
    let (probing, _) = westwood_a_probing_rising(true, 7);
    assert_eq!(agile_probing(probing.as_ref()), 1.0);
    // The eighth sample 5 ms up: probing ends, the window at the ACK
    // rate (1 MB/s) times RTTmin plus a quarter of RttThresh (~103 kB).
    let (exited, _) = westwood_a_probing_rising(true, 8);
    assert_eq!(agile_probing(exited.as_ref()), 0.0);
    let window = exited.window();
    assert!((100_000..=106_000).contains(&window), "{window}");
    assert_eq!(exited.ssthresh(), window);
    // Without the option, probing goes on.
    let (paper, _) = westwood_a_probing_rising(false, 8);
    assert_eq!(agile_probing(paper.as_ref()), 1.0);
}

#[test]
fn westwood_a_ecn_answers_a_loss_sent_before_its_probing_exit_with_that_exit() {
    let (mut cc, now) = westwood_a_probing_rising(true, 8);
    let exited = cc.window();
    let mut overshoot = loss(now + ms(100), rtt(100, 130), false);
    overshoot.largest_lost_sent_time = now - ms(1);
    cc.on_congestion(&overshoot);
    assert_eq!(cc.window(), exited);
}

#[test]
fn westwood_a_ecn_initial_probing_grows_through_a_random_losss_period() {
    let grows = |exit: bool| {
        let (mut cc, now) = westwood_a_probing_rising(exit, 0);
        assert_eq!(
            cc.on_congestion(&loss(now + ms(1), rtt(100, 100), false)),
            LossVerdict::Random
        );
        let before = cc.window();
        let mut in_period = ack(now + ms(5), now - ms(20), 10, rtt(100, 100), 0);
        in_period.in_recovery = true;
        cc.on_ack(&in_period);
        cc.window() > before
    };
    assert!(grows(true));
    assert!(!grows(false), "the old rule freezes growth for the period");
}
