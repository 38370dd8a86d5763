//! Vegas specification tests: exact windows and round estimates derived by
//! hand from Hengartner et al., the Vegas′ fixes, and the replay against
//! Reno that pins "all algorithms off = Reno".

use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::*;
use crate::test_support::{ack, loss, ms, rtt, spurious, MSS};
use crate::{CcConfig, Phase, Reno, RenoConfig, RttSample};

/// Feeds an RTT sample without growing the window and outside any round.
fn sample(vegas: &mut Vegas, now: Instant, latest_ms: u64) {
    let mut a = ack(now, now, 1, rtt(latest_ms, latest_ms), 0);
    a.app_limited = true;
    vegas.on_ack(&a);
}

/// Sends `packets` at `start` (opening a round) and ends the round with the
/// ACK of the first of them after `rtt_ms`, its only RTT sample. windowSize =
/// the `packets − 1` still in flight + the one acked = `packets`·MSS.
fn round(vegas: &mut Vegas, start: Instant, packets: u64, rtt_ms: u64) -> Instant {
    for _ in 0..packets {
        vegas.on_sent(start, MSS, 0);
    }
    let end = start + ms(rtt_ms);
    let in_flight = packets.saturating_sub(1) * MSS;
    vegas.on_ack(&ack(end, start, 1, rtt(rtt_ms, rtt_ms), in_flight));
    end
}

/// `count` single-packet ACKs for packets sent at `sent`, outside any round.
fn ack_each(vegas: &mut Vegas, now: Instant, sent: Instant, count: u64) {
    for _ in 0..count {
        vegas.on_ack(&ack(now, sent, 1, rtt(100, 100), MSS * 20));
    }
}

/// Vegas in congestion avoidance at cwnd 5_000 (a loss halved the initial
/// 10 packets) with BaseRTT 100 ms.
fn in_avoidance(config: VegasConfig, t0: Instant) -> Vegas {
    let mut vegas = Vegas::new(config, MSS);
    vegas.on_congestion(&loss(t0, rtt(100, 100), false));
    assert_eq!((vegas.window(), vegas.ssthresh()), (5_000, 5_000));
    let mut relearn = ack(t0, t0, 1, rtt(100, 100), 0);
    relearn.in_recovery = true;
    vegas.on_ack(&relearn);
    vegas
}

fn only_slow_start_detection() -> VegasConfig {
    VegasConfig {
        slow_start_detection: true,
        ..VegasConfig::all_off()
    }
}

#[test]
fn presets_switch_the_papers_phase_groups() {
    let letters = |c: &VegasConfig| {
        [
            ('A', c.slow_start_detection),
            ('B', c.avoidance_detection),
            ('C', c.fine_grained_retransmit),
            ('D', c.retransmit_on_partial_ack),
            ('E', c.one_reduction_per_window),
            ('F', c.quarter_reduction),
            ('G', c.two_packet_windows),
            ('H', c.burst_limit),
            ('I', c.hold_when_not_keeping_up),
            ('J', c.spike_suppression),
        ]
        .iter()
        .filter(|(_, on)| *on)
        .map(|(letter, _)| *letter)
        .collect::<String>()
    };
    assert_eq!(letters(&VegasConfig::all_off()), "");
    assert_eq!(letters(&VegasConfig::full()), "ABCDEFGHI");
    assert_eq!(letters(&VegasConfig::default()), "ABCDEFGHI");
    // §VIII-A: slow start = A, G; avoidance = B; recovery = C, D, E, F.
    assert_eq!(letters(&VegasConfig::slow_start()), "AG");
    assert_eq!(letters(&VegasConfig::congestion_avoidance()), "B");
    assert_eq!(letters(&VegasConfig::recovery()), "CDEF");
    // H, I, J stay off in every cell of the factorial design.
    assert_eq!(
        letters(&VegasConfig::factorial(true, true, true)),
        "ABCDEFG"
    );
    assert_eq!(
        letters(&VegasConfig::factorial(true, false, true)),
        "ACDEFG"
    );
    let thresholds = VegasConfig::full();
    assert_eq!(
        (
            thresholds.alpha_packets,
            thresholds.beta_packets,
            thresholds.gamma_packets
        ),
        (1.0, 3.0, 1.0)
    );
}

#[test]
fn recovery_policy_carries_algorithms_c_d_e() {
    let full = Vegas::new(VegasConfig::full(), MSS).recovery_policy();
    assert_eq!(
        full,
        RecoveryPolicy {
            fine_grained_early_retransmit: true,
            retransmit_on_partial_ack: true,
            one_reduction_per_window: true,
        }
    );
    // E off: every loss event reaches on_congestion, as BSD Reno halved at
    // every fast retransmit.
    let off = Vegas::new(VegasConfig::all_off(), MSS).recovery_policy();
    assert_eq!(
        off,
        RecoveryPolicy {
            fine_grained_early_retransmit: false,
            retransmit_on_partial_ack: false,
            one_reduction_per_window: false,
        }
    );
}

/// One step of a random event sequence.
enum Step {
    Sent { now: Instant, bytes: u64 },
    Ack(AckEvent),
    Loss(LossEvent),
    Undo(SpuriousCongestionEvent),
}

/// `count` random events: sends, ACKs of 1–16 packets with random RTT
/// views, recovery and app-limited flags, congestion events and timeouts.
fn random_steps(seed: u64, count: usize) -> Vec<Step> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut now = Instant::now() + ms(1_000);
    let mut steps = Vec::with_capacity(count);
    for _ in 0..count {
        now += ms(rng.random_range(0..50));
        let roll = rng.random_range(0..100);
        let step = if roll < 40 {
            Step::Sent {
                now,
                bytes: rng.random_range(1..=MSS),
            }
        } else if roll < 88 {
            let packets = rng.random_range(1..=16);
            let latest = ms(rng.random_range(20..300));
            let smoothed = ms(rng.random_range(20..300));
            Step::Ack(AckEvent {
                now,
                acked_bytes: packets * MSS - rng.random_range(0..MSS / 2),
                acked_packets: packets,
                largest_acked: 0,
                largest_acked_sent_time: now.checked_sub(latest).unwrap_or(now),
                rtt: RttSample {
                    latest,
                    min: latest.min(smoothed),
                    smoothed,
                    variance: smoothed / 2,
                },
                rtt_sampled: rng.random_bool(0.8),
                bytes_in_flight: rng.random_range(0..60 * MSS),
                app_limited: rng.random_bool(0.1),
                in_recovery: rng.random_bool(0.15),
                rate: None,
            })
        } else if roll < 97 {
            let mut ev = loss(now, rtt(100, 100), rng.random_bool(0.3));
            ev.lost_bytes = rng.random_range(1..=4) * MSS;
            Step::Loss(ev)
        } else {
            Step::Undo(spurious(now, rtt(100, 100)))
        };
        steps.push(step);
    }
    steps
}

fn apply(cc: &mut dyn CongestionControl, step: &Step) -> Option<LossVerdict> {
    match step {
        Step::Sent { now, bytes } => {
            cc.on_sent(*now, *bytes, 0);
            None
        }
        Step::Ack(a) => {
            cc.on_ack(a);
            None
        }
        Step::Loss(ev) => Some(cc.on_congestion(ev)),
        Step::Undo(ev) => {
            cc.on_spurious_congestion(ev);
            None
        }
    }
}

/// Replays `steps` on Reno and on Vegas built from `vegas_config` (same
/// initial and timeout windows) and asserts identical windows after each.
fn assert_matches_reno(vegas_config: VegasConfig, steps: &[Step]) {
    let reno_config = RenoConfig {
        initial_window_packets: vegas_config.initial_window_packets,
        timeout_window_packets: vegas_config.timeout_window_packets,
        // Vegas never had HyStart++: its Reno is the classic slow start.
        hystart: false,
        one_reduction_per_window: vegas_config.one_reduction_per_window,
    };
    let mut reno = Reno::new(reno_config, MSS);
    let mut vegas = Vegas::new(vegas_config, MSS);
    assert_eq!(
        vegas.recovery_policy().one_reduction_per_window,
        reno.recovery_policy().one_reduction_per_window
    );
    for (index, step) in steps.iter().enumerate() {
        let reno_verdict = apply(&mut reno, step);
        let vegas_verdict = apply(&mut vegas, step);
        assert_eq!(
            (vegas.window(), vegas.ssthresh(), vegas_verdict),
            (reno.window(), reno.ssthresh(), reno_verdict),
            "event {index}"
        );
    }
}

#[test]
fn all_off_vegas_matches_reno_event_for_event() {
    for (seed, initial, timeout) in [(1, 10, 2), (2, 1, 1), (3, 2, 1), (4, 4, 2)] {
        let config = VegasConfig {
            initial_window_packets: initial,
            timeout_window_packets: timeout,
            ..VegasConfig::all_off()
        };
        assert_matches_reno(config, &random_steps(seed, 10_000));
    }
}

#[test]
fn algorithms_outside_the_window_arithmetic_leave_it_reno() {
    // C, D, E act in the recovery module, H in the sender, J in pacing.
    let config = VegasConfig {
        fine_grained_retransmit: true,
        retransmit_on_partial_ack: true,
        one_reduction_per_window: true,
        burst_limit: true,
        spike_suppression: true,
        ..VegasConfig::all_off()
    };
    assert_matches_reno(config, &random_steps(5, 10_000));
}

#[test]
fn two_packet_windows_at_start_and_after_timeout_with_g() {
    let now = Instant::now();
    let mut vegas = Vegas::new(VegasConfig::slow_start(), MSS);
    assert_eq!(vegas.window(), 2_000);
    vegas.on_ack(&ack(now, now, 2, rtt(100, 100), 0)); // slow start: 4_000
    vegas.on_congestion(&loss(now, rtt(100, 100), true));
    // Timeout: ssthresh = max(4_000/2, 2 packets) = 2_000, cwnd = 2 packets.
    assert_eq!((vegas.window(), vegas.ssthresh()), (2_000, 2_000));

    // G off: Reno's configured windows, here 10 packets and 1 after a timeout.
    let config = VegasConfig {
        timeout_window_packets: 1,
        ..VegasConfig::all_off()
    };
    let mut vegas = Vegas::new(config, MSS);
    assert_eq!(vegas.window(), 10_000);
    vegas.on_congestion(&loss(now, rtt(100, 100), true));
    assert_eq!((vegas.window(), vegas.ssthresh()), (1_000, 5_000));
}

#[test]
fn recovery_keeps_three_quarters_with_f_but_timeout_still_halves() {
    let now = Instant::now();
    let mut vegas = Vegas::new(VegasConfig::recovery(), MSS);
    // F: 10_000·3/4 = 7_500.
    vegas.on_congestion(&loss(now, rtt(100, 100), false));
    assert_eq!((vegas.window(), vegas.ssthresh()), (7_500, 7_500));
    // Timeout: ssthresh = 7_500/2 = 3_750, cwnd = 2 packets (G off).
    vegas.on_congestion(&loss(now, rtt(100, 100), true));
    assert_eq!((vegas.window(), vegas.ssthresh()), (2_000, 3_750));

    let mut reno_like = Vegas::new(VegasConfig::all_off(), MSS);
    reno_like.on_congestion(&loss(now, rtt(100, 100), false));
    assert_eq!(reno_like.window(), 5_000);
}

#[test]
fn vegas_judges_every_loss_congestive() {
    let now = Instant::now();
    let mut vegas = Vegas::new(VegasConfig::full(), MSS);
    assert_eq!(vegas.metrics().last_verdict, None);
    for persistent in [false, true] {
        let verdict = vegas.on_congestion(&loss(now, rtt(100, 100), persistent));
        assert_eq!(verdict, LossVerdict::Congestive);
    }
    assert_eq!(vegas.metrics().last_verdict, Some(LossVerdict::Congestive));
}

#[test]
fn avoidance_shrinks_one_packet_when_diff_exceeds_beta_with_b() {
    let t0 = Instant::now();
    let mut vegas = in_avoidance(VegasConfig::congestion_avoidance(), t0);
    // diff = (5_000 − 5_000·100/300)/1_000 = 3.33 > β = 3: cwnd 5_000 − 1_000.
    let end = round(&mut vegas, t0 + ms(1), 5, 300);
    assert_eq!((vegas.window(), vegas.ssthresh()), (4_000, 4_000));
    // Held for the rest of the round.
    ack_each(&mut vegas, end, t0 + ms(1), 4);
    assert_eq!(vegas.window(), 4_000);
}

#[test]
fn avoidance_holds_when_diff_between_alpha_and_beta_with_b() {
    let t0 = Instant::now();
    let mut vegas = in_avoidance(VegasConfig::congestion_avoidance(), t0);
    // diff = (5_000 − 5_000·100/250)/1_000 = 3.0: not above β, hold.
    let end = round(&mut vegas, t0 + ms(1), 5, 250);
    ack_each(&mut vegas, end, t0 + ms(1), 4);
    assert_eq!(vegas.window(), 5_000);
    // Expected = 5_000 B/0.1 s = 400 kb/s; Actual = 5_000 B/0.25 s = 160 kb/s.
    let fields = vegas.metrics().fields;
    assert_eq!(fields["diff_packets"], 3.0);
    assert_eq!(fields["expected_bps"], 400_000.0);
    assert_eq!(fields["actual_bps"], 160_000.0);
    assert_eq!(fields["base_rtt_ms"], 100.0);
}

#[test]
fn avoidance_grows_linearly_when_diff_below_alpha_with_b() {
    let t0 = Instant::now();
    let mut vegas = in_avoidance(VegasConfig::congestion_avoidance(), t0);
    // diff = (5_000 − 5_000·100/110)/1_000 = 0.45 < α = 1: Reno's increase,
    // the round-ending ACK and 4 more complete 5_000 acked: +1 packet.
    let end = round(&mut vegas, t0 + ms(1), 5, 110);
    ack_each(&mut vegas, end, t0 + ms(1), 4);
    assert_eq!(vegas.window(), 6_000);
}

#[test]
fn without_b_avoidance_grows_as_reno_whatever_the_diff() {
    let t0 = Instant::now();
    let mut vegas = in_avoidance(VegasConfig::all_off(), t0);
    // diff = 3.33 as above, ignored: 5 packets acked at cwnd 5_000 → +1.
    let end = round(&mut vegas, t0 + ms(1), 5, 300);
    ack_each(&mut vegas, end, t0 + ms(1), 4);
    assert_eq!(vegas.window(), 6_000);
}

#[test]
fn slow_start_grows_only_every_other_round_with_a() {
    let t0 = Instant::now();
    let mut vegas = Vegas::new(only_slow_start_detection(), MSS);
    sample(&mut vegas, t0, 100);
    // Round 1: diff = (10_000 − 10_000·100/100)/1_000 = 0 ≤ γ; the next round
    // holds the window.
    let t1 = t0 + ms(1);
    let end = round(&mut vegas, t1, 10, 100);
    ack_each(&mut vegas, end, t1, 9);
    assert_eq!(vegas.window(), 10_000);
    // Round 2: diff 0 again; this round grows, 10 packets acked → 20_000.
    let t2 = end + ms(1);
    let end = round(&mut vegas, t2, 10, 100);
    ack_each(&mut vegas, end, t2, 9);
    assert_eq!(vegas.window(), 20_000);
}

#[test]
fn without_a_slow_start_grows_every_round_as_reno() {
    let t0 = Instant::now();
    let mut vegas = Vegas::new(VegasConfig::all_off(), MSS);
    sample(&mut vegas, t0, 100);
    let t1 = t0 + ms(1);
    let end = round(&mut vegas, t1, 10, 100);
    ack_each(&mut vegas, end, t1, 9);
    assert_eq!(vegas.window(), 20_000);
}

#[test]
fn vegas_slow_start_exit_keeps_the_window_as_brakmo_not_linux_target() {
    let t0 = Instant::now();
    let mut vegas = Vegas::new(only_slow_start_detection(), MSS);
    sample(&mut vegas, t0, 100);
    // diff = (10_000 − 10_000·100/200)/1_000 = 5 > γ = 1: slow start ends at
    // cwnd 10_000 (ssthresh = cwnd). Linux would cut to target + 1 =
    // 10·100/200 + 1 = 6 packets.
    let t1 = t0 + ms(1);
    let end = round(&mut vegas, t1, 10, 200);
    assert_eq!((vegas.window(), vegas.ssthresh()), (10_000, 10_000));
    assert_eq!(vegas.metrics().phase, Phase::CongestionAvoidance);
    // Then linear: 10 packets acked at cwnd 10_000 → +1 packet.
    ack_each(&mut vegas, end, t1, 9);
    assert_eq!(vegas.window(), 11_000);
}

#[test]
fn no_increase_while_the_sender_cannot_keep_up_with_i() {
    let now = Instant::now();
    let config = VegasConfig {
        hold_when_not_keeping_up: true,
        ..VegasConfig::all_off()
    };
    let mut vegas = Vegas::new(config, MSS);
    // Outstanding when the ACK arrived = 6_000 + 1_000; cwnd 10_000 exceeds
    // it by 3_000 > 2 packets: no growth.
    vegas.on_ack(&ack(now, now, 1, rtt(100, 100), 6_000));
    assert_eq!(vegas.window(), 10_000);
    // 7_000 + 1_000 outstanding: 2_000 is not more than 2 packets: grow.
    vegas.on_ack(&ack(now, now, 1, rtt(100, 100), 7_000));
    assert_eq!(vegas.window(), 11_000);
}

#[test]
fn vegas_window_size_has_no_ack_size_term_as_vegas_prime() {
    let t0 = Instant::now();
    let mut vegas = Vegas::new(VegasConfig::all_off(), MSS);
    sample(&mut vegas, t0, 100);
    let t1 = t0 + ms(1);
    for _ in 0..5 {
        vegas.on_sent(t1, MSS, 0);
    }
    // One large ACK for all 5 packets. windowSize = 0 left + 5_000 acked, so
    // Expected = Actual = 5_000 B/0.1 s and diff = 0. The released code's
    // min(maxseg − acked, 0) = −4_000 would give windowSize 1_000, diff −4
    // (Expected < Actual: the invariant of §VII-C broken).
    vegas.on_ack(&ack(t1 + ms(100), t1, 5, rtt(100, 100), 0));
    let fields = vegas.metrics().fields;
    assert_eq!(fields["diff_packets"], 0.0);
    assert_eq!(fields["expected_bps"], 400_000.0);
    assert_eq!(fields["actual_bps"], 400_000.0);
}

#[test]
fn vegas_round_restarts_after_a_timeout_as_vegas_prime() {
    let t0 = Instant::now();
    let mut vegas = Vegas::new(VegasConfig::all_off(), MSS);
    sample(&mut vegas, t0, 100);
    let t1 = t0 + ms(1);
    for _ in 0..10 {
        vegas.on_sent(t1, MSS, 0);
    }
    vegas.on_congestion(&loss(t1 + ms(50), rtt(100, 100), true));
    for _ in 0..2 {
        vegas.on_sent(t1 + ms(60), MSS, 0);
    }
    // An ACK for data sent before the timeout restarts the round again.
    vegas.on_ack(&ack(t1 + ms(100), t1, 1, rtt(100, 100), 11_000));
    assert_eq!(vegas.last_estimate(), None);
    let t2 = t1 + ms(110);
    for _ in 0..2 {
        vegas.on_sent(t2, MSS, 0);
    }
    vegas.on_ack(&ack(t2 + ms(100), t2, 1, rtt(100, 100), 1_000));
    // rttLen = the 2_000 bytes of the new round: Actual = 2_000 B/0.1 s =
    // 160 kb/s (counting from before the timeout: 14_000 B, 1.12 Mb/s).
    let fields = vegas.metrics().fields;
    assert_eq!(fields["actual_bps"], 160_000.0);
    assert_eq!(fields["diff_packets"], 0.0);
}

#[test]
fn vegas_base_rtt_is_the_connection_minimum_as_vegas_prime() {
    let t0 = Instant::now();
    let mut vegas = Vegas::new(VegasConfig::all_off(), MSS);
    sample(&mut vegas, t0, 100);
    // A round of a single segment: the released Vegas reset baseRTT here;
    // Vegas′ keeps the minimum (§VII-B). diff = (1_000 − 1_000·100/150)/1_000.
    round(&mut vegas, t0 + ms(1), 1, 150);
    let fields = vegas.metrics().fields;
    assert_eq!(fields["base_rtt_ms"], 100.0);
    assert_eq!(fields["diff_packets"], (1_000.0 - 1e11 / 1.5e8) / 1_000.0);
}

#[test]
fn vegas_actual_uses_the_mean_rtt_of_the_round_as_paper_not_minimum_as_linux() {
    let t0 = Instant::now();
    let mut vegas = Vegas::new(VegasConfig::all_off(), MSS);
    sample(&mut vegas, t0, 100);
    let t1 = t0 + ms(1);
    for _ in 0..4 {
        vegas.on_sent(t1, MSS, 0);
    }
    // An older packet acked inside the round: a 300 ms sample, no evaluation.
    vegas.on_ack(&ack(t1 + ms(10), t0, 1, rtt(300, 300), 4_000));
    assert_eq!(vegas.last_estimate(), None);
    // The marker's ACK: rtt = (300 + 100)/2 = 200 ms; windowSize = 3_000 +
    // 1_000. diff = (4_000 − 4_000·100/200)/1_000 = 2 (Linux's round minimum,
    // 100 ms, would give 0); Actual = 4_000 B/0.2 s = 160 kb/s.
    vegas.on_ack(&ack(t1 + ms(100), t1, 1, rtt(100, 100), 3_000));
    let fields = vegas.metrics().fields;
    assert_eq!(fields["diff_packets"], 2.0);
    assert_eq!(fields["actual_bps"], 160_000.0);
}

#[test]
fn burst_limit_is_reported_to_the_sender_with_h() {
    let full = Vegas::new(VegasConfig::full(), MSS);
    assert_eq!(full.burst_limit_packets(), Some(3));
    assert_eq!(full.metrics().fields["burst_limit_packets"], 3.0);
    let off = Vegas::new(VegasConfig::all_off(), MSS);
    assert_eq!(off.burst_limit_packets(), None);
    assert!(!off.metrics().fields.contains_key("burst_limit_packets"));
}

#[test]
fn spike_suppression_paces_at_twice_the_measured_rate_with_j() {
    let t0 = Instant::now();
    let config = VegasConfig {
        spike_suppression: true,
        ..VegasConfig::all_off()
    };
    let mut vegas = Vegas::new(config, MSS);
    sample(&mut vegas, t0, 100);
    assert_eq!(vegas.pacing_rate(), None, "nothing measured yet");
    // Actual = 5_000 B/0.1 s = 50_000 B/s; J allows twice that.
    round(&mut vegas, t0 + ms(1), 5, 100);
    assert_eq!(vegas.pacing_rate(), Some(100_000));

    let mut unpaced = Vegas::new(VegasConfig::all_off(), MSS);
    sample(&mut unpaced, t0, 100);
    round(&mut unpaced, t0 + ms(1), 5, 100);
    assert_eq!(unpaced.pacing_rate(), None);
}

#[test]
fn vegas_is_selected_by_name_and_round_trips_through_serde() {
    let parsed: CcConfig = "vegas".parse().unwrap();
    assert_eq!(parsed, CcConfig::Vegas(VegasConfig::default()));
    // `--cc vegas` is the released Vegas with the jitter-robust diff; the
    // paper's presets keep the paper's.
    assert_eq!(
        VegasConfig::default(),
        VegasConfig {
            queue_estimate: QueueEstimate::JitterRobust,
            ..VegasConfig::full()
        }
    );
    assert_eq!(parsed.name(), "vegas");
    assert_eq!(parsed.build(MSS).metrics().algorithm, "vegas");

    let factorial = CcConfig::Vegas(VegasConfig::factorial(true, false, true));
    let json = serde_json::to_string(&factorial).unwrap();
    assert_eq!(serde_json::from_str::<CcConfig>(&json).unwrap(), factorial);
    let partial: CcConfig =
        serde_json::from_str(r#"{"name":"vegas","avoidance_detection":false}"#).unwrap();
    let expected = VegasConfig {
        avoidance_detection: false,
        ..VegasConfig::default()
    };
    assert_eq!(partial, CcConfig::Vegas(expected));
    assert!(serde_json::from_str::<CcConfig>(r#"{"name":"vegas","alfa":2}"#).is_err());
}

#[test]
fn jitter_robust_diff_reads_a_round_whose_floor_is_base_rtt_as_no_queue() {
    for (estimate, queued) in [
        (QueueEstimate::Paper, true),
        (QueueEstimate::JitterRobust, false),
    ] {
        let config = VegasConfig {
            queue_estimate: estimate,
            ..VegasConfig::full()
        };
        let t0 = Instant::now();
        let mut vegas = Vegas::new(config, MSS);
        sample(&mut vegas, t0, 100);
        // A round of 20 packets whose samples jump between 100 and 160 ms
        // (in-order jitter, no queue: the floor is BaseRTT).
        let t1 = t0 + ms(200);
        for _ in 0..20 {
            vegas.on_sent(t1, MSS, 0);
        }
        for latest in [100, 160, 100, 160] {
            vegas.on_ack(&ack(t1 + ms(latest), t0, 1, rtt(latest, 130), 0));
        }
        vegas.on_ack(&ack(t1 + ms(160), t1, 1, rtt(160, 130), 19 * MSS));
        let diff = vegas.last_estimate().unwrap().diff_packets;
        if queued {
            // Mean of 100, 160, 100, 160, 160 = 136 ms:
            // diff = 20 − 20·100/136 = 5.29 > β.
            assert!((diff - 5.294).abs() < 1e-3, "paper: {diff}");
        } else {
            // Floor 100 ms, less the allowance, never below BaseRTT: 100 ms;
            // diff = 20 − 20·100/100 = 0.
            assert_eq!(diff, 0.0, "jitter-robust");
        }
    }
}
