//! One test per arrow of RFC 9959's phase diagram, on Reno (whose rules
//! are simplest to compute by hand) with 1000-byte packets: the saved path
//! carried 400 packets at 600 ms, so the jump is 200 packets.

use std::time::{Duration, Instant};

use super::*;
use crate::test_support::{ack, loss, ms, MSS};
use crate::{CcConfig, Reno, RenoConfig, RttSample};

const SAVED_CWND: u64 = 400 * MSS;
const JUMP: u64 = 200 * MSS;

fn saved() -> SavedPath {
    SavedPath {
        cwnd: SAVED_CWND,
        min_rtt: ms(600),
    }
}

fn rtt_of(min_ms: u64) -> RttSample {
    RttSample {
        latest: ms(min_ms),
        min: ms(min_ms),
        smoothed: ms(min_ms),
        variance: ms(min_ms) / 4,
    }
}

fn resumed(config: CarefulResumeConfig) -> CarefulResume {
    let reno = Reno::new(RenoConfig::default(), MSS);
    CarefulResume::new(Box::new(reno), saved(), config, MSS)
}

/// Sends the 10-packet initial window at `t0`, filling it (cwnd-limited),
/// then an ACK with an RTT of `rtt_ms` for the first packet.
fn reconnaissance(rtt_ms: u64) -> (CarefulResume, Instant) {
    reconnaissance_of(resumed(CarefulResumeConfig::default()), rtt_ms)
}

/// [`reconnaissance`] for a given resumed controller.
fn reconnaissance_of(mut cr: CarefulResume, rtt_ms: u64) -> (CarefulResume, Instant) {
    let t0 = Instant::now();
    for i in 1..=10 {
        cr.on_sent(t0, MSS, i * MSS);
    }
    let now = t0 + ms(rtt_ms);
    // One packet acked: Reno's slow start makes cwnd 11 packets; 9 remain
    // in flight.
    cr.on_ack(&ack(now, t0, 1, rtt_of(rtt_ms), 9 * MSS));
    (cr, now)
}

fn phases(cr: &mut CarefulResume) -> Vec<(CarefulResumePhase, CarefulResumeTrigger)> {
    cr.drain_careful_resume_changes()
        .into_iter()
        .map(|c| (c.new, c.trigger))
        .collect()
}

#[test]
fn reconnaissance_jumps_to_half_the_saved_window_when_rtt_confirmed_and_cwnd_limited() {
    let (mut cr, _) = reconnaissance(600);
    assert_eq!(cr.phase(), CarefulResumePhase::Unvalidated);
    // jump_cwnd = saved_cwnd/2 = 200 packets.
    assert_eq!(cr.window(), JUMP);
    assert_eq!(
        phases(&mut cr),
        vec![(
            CarefulResumePhase::Unvalidated,
            CarefulResumeTrigger::CwndLimited
        )]
    );
    // PipeSize starts at the flight size at the jump: 9 packets.
    assert_eq!(cr.careful_resume().unwrap().pipesize, 9 * MSS);
}

/// Sends the 10-packet initial window at `t0` (cwnd-limited), then an ACK
/// with an RTT of `rtt_ms` for its first three packets only.
fn initial_window_partly_acked(
    config: CarefulResumeConfig,
    rtt_ms: u64,
) -> (CarefulResume, Instant) {
    let t0 = Instant::now();
    let mut cr = resumed(config);
    for i in 1..=10 {
        cr.on_sent(t0, MSS, i * MSS);
    }
    let now = t0 + ms(rtt_ms);
    cr.on_ack(&ack(now, t0, 3, rtt_of(rtt_ms), 7 * MSS));
    (cr, now)
}

#[test]
fn over_a_queued_path_the_jump_waits_until_the_initial_window_is_acknowledged() {
    // 1000 ms against the saved 600 ms: a queue the saved path did not have.
    let (mut cr, now) = initial_window_partly_acked(CarefulResumeConfig::default(), 1000);
    // RTT confirmed and cwnd-limited, but 7 packets of the window that
    // filled are not acknowledged yet.
    assert_eq!(cr.phase(), CarefulResumePhase::Reconnaissance);
    // Their ACK comes after slow start sent more (not cwnd-limited now):
    // the window filled once and the sender is not application-limited.
    cr.on_sent(now, MSS, 8 * MSS);
    cr.on_ack(&ack(now + ms(1), now - ms(1000), 7, rtt_of(1000), MSS));
    assert_eq!(cr.phase(), CarefulResumePhase::Unvalidated);
    assert_eq!(cr.window(), JUMP);
}

#[test]
fn at_the_saved_rtt_the_jump_does_not_wait_for_the_initial_window() {
    // 740 ms is within 5/4 of the saved 600 ms: the first ACK jumps.
    let (cr, _) = initial_window_partly_acked(CarefulResumeConfig::default(), 740);
    assert_eq!(cr.phase(), CarefulResumePhase::Unvalidated);
}

#[test]
fn a_loss_of_the_initial_window_found_after_its_first_ack_prevents_the_jump() {
    // Packets of the initial window were dropped at a full queue (the RTT,
    // 1000 ms, shows it); the ACK of the first three comes before the loss
    // can be declared.
    let (mut cr, now) = initial_window_partly_acked(CarefulResumeConfig::default(), 1000);
    cr.on_congestion(&loss(now + ms(10), rtt_of(1000), false));
    assert_eq!(cr.phase(), CarefulResumePhase::Normal);
    let status = cr.careful_resume().unwrap();
    assert!(!status.jumped && !status.retreated, "{status:?}");
    // Without the wait the first ACK jumps, and the same loss comes only
    // after the jump is on its way: Safe Retreat.
    let earlier = CarefulResumeConfig {
        jump_after_reconnaissance_acked: false,
        ..CarefulResumeConfig::default()
    };
    let (mut cr, now) = initial_window_partly_acked(earlier, 1000);
    assert_eq!(cr.phase(), CarefulResumePhase::Unvalidated);
    // Seven of the initial window's packets, before any of the jump left.
    lose(&mut cr, now + ms(10), 7, true);
    assert_eq!(cr.phase(), CarefulResumePhase::SafeRetreat);
}

#[test]
fn the_jump_is_paced_over_the_current_rtt() {
    let (cr, _) = reconnaissance(500);
    // 200_000 bytes over 0.5 s = 400_000 B/s.
    assert_eq!(cr.pacing_rate(), Some(400_000));
}

#[test]
fn no_jump_while_the_sender_is_not_cwnd_limited() {
    let t0 = Instant::now();
    let mut cr = resumed(CarefulResumeConfig::default());
    // Three packets under a 10-packet window: the data does not warrant a jump.
    for i in 1..=3 {
        cr.on_sent(t0, MSS, i * MSS);
    }
    cr.on_ack(&ack(t0 + ms(600), t0, 1, rtt_of(600), 2 * MSS));
    assert_eq!(cr.phase(), CarefulResumePhase::Reconnaissance);
    assert_eq!(cr.window(), 11 * MSS);
}

#[test]
fn an_rtt_below_half_the_saved_one_goes_to_normal() {
    let (mut cr, _) = reconnaissance(299);
    assert_eq!(cr.phase(), CarefulResumePhase::Normal);
    assert_eq!(
        phases(&mut cr),
        vec![(
            CarefulResumePhase::Normal,
            CarefulResumeTrigger::RttNotValidated
        )]
    );
    assert_eq!(cr.window(), 11 * MSS);
}

/// RFC 9959's own bounds and nothing more: the RTT within [saved/2,
/// 10·saved] confirms the path, and the first ACK may jump.
fn rfc_letter() -> CarefulResumeConfig {
    CarefulResumeConfig {
        jump_after_reconnaissance_acked: false,
        rtt_upper_factor: RTT_UPPER_FACTOR,
        ..CarefulResumeConfig::default()
    }
}

#[test]
fn under_the_rfc_letter_an_rtt_up_to_ten_times_the_saved_one_is_confirmed() {
    let at = |rtt_ms| reconnaissance_of(resumed(rfc_letter()), rtt_ms).0.phase();
    assert_eq!(at(300), CarefulResumePhase::Unvalidated);
    assert_eq!(at(6000), CarefulResumePhase::Unvalidated);
    assert_eq!(at(6001), CarefulResumePhase::Normal);
}

#[test]
fn an_rtt_above_twice_the_saved_one_goes_to_normal() {
    let (mut cr, _) = reconnaissance(1201);
    assert_eq!(cr.phase(), CarefulResumePhase::Normal);
    assert_eq!(
        phases(&mut cr),
        vec![(
            CarefulResumePhase::Normal,
            CarefulResumeTrigger::RttNotValidated
        )]
    );
    // Twice the saved RTT is still the path; it queues, so the jump waits
    // for the rest of the initial window.
    assert_eq!(
        reconnaissance(1200).0.phase(),
        CarefulResumePhase::Reconnaissance
    );
    assert_eq!(
        reconnaissance(300).0.phase(),
        CarefulResumePhase::Unvalidated
    );
}

#[test]
fn a_loss_in_reconnaissance_goes_to_normal_without_a_jump() {
    let t0 = Instant::now();
    let mut cr = resumed(CarefulResumeConfig::default());
    cr.on_sent(t0, MSS, MSS);
    cr.on_congestion(&loss(t0 + ms(700), rtt_of(600), false));
    assert_eq!(cr.phase(), CarefulResumePhase::Normal);
    // Reno's own response: 10 packets halved.
    assert_eq!(cr.window(), 5 * MSS);
}

#[test]
fn a_window_already_at_the_jump_goes_to_normal() {
    let t0 = Instant::now();
    let reno = Reno::new(
        RenoConfig {
            initial_window_packets: 200,
            ..RenoConfig::default()
        },
        MSS,
    );
    let mut cr = CarefulResume::new(Box::new(reno), saved(), CarefulResumeConfig::default(), MSS);
    for i in 1..=200 {
        cr.on_sent(t0, MSS, i * MSS);
    }
    cr.on_ack(&ack(t0 + ms(600), t0, 1, rtt_of(600), 199 * MSS));
    assert_eq!(cr.phase(), CarefulResumePhase::Normal);
    assert_eq!(
        phases(&mut cr),
        vec![(
            CarefulResumePhase::Normal,
            CarefulResumeTrigger::CwndLargerThanJump
        )]
    );
}

/// Unvalidated with the jump sent from `now` on: `packets` packets, 1 ms
/// apart, on top of the 9 in flight.
fn send_jump(cr: &mut CarefulResume, now: Instant, packets: u64) -> Instant {
    let mut t = now;
    for i in 1..=packets {
        t = now + Duration::from_millis(i);
        cr.on_sent(t, MSS, (9 + i) * MSS);
    }
    t
}

/// `packets` packets declared lost at `now` as the recovery module does
/// it: every declaration to `on_packets_lost`, then one congestion event
/// (when `congestion`, the first of a recovery period). Returns the
/// verdict of the event, if any.
fn lose(
    cr: &mut CarefulResume,
    now: Instant,
    packets: u64,
    congestion: bool,
) -> Option<LossVerdict> {
    cr.on_packets_lost(&crate::test_support::packets_lost(now, 0, packets));
    congestion.then(|| cr.on_congestion(&loss(now, rtt_of(600), false)))
}

#[test]
fn sending_the_whole_jump_enters_validating_with_the_flight_size() {
    let (mut cr, now) = reconnaissance(600);
    // 191 more packets make the flight 200 packets, the whole jump.
    send_jump(&mut cr, now, 191);
    assert_eq!(cr.phase(), CarefulResumePhase::Validating);
    // cwnd = flight size, handed to Reno.
    assert_eq!(cr.window(), 200 * MSS);
    assert_eq!(
        phases(&mut cr).last(),
        Some(&(
            CarefulResumePhase::Validating,
            CarefulResumeTrigger::LastUnvalidatedPacketSent
        ))
    );
}

#[test]
fn the_first_unvalidated_packet_acked_enters_validating() {
    let (mut cr, now) = reconnaissance(600);
    let first = now + ms(1);
    send_jump(&mut cr, now, 50);
    // An ACK of a packet sent before the jump keeps Unvalidated...
    cr.on_ack(&ack(now + ms(10), now - ms(1), 1, rtt_of(600), 58 * MSS));
    assert_eq!(cr.phase(), CarefulResumePhase::Unvalidated);
    // ...the first packet of the jump moves on: cwnd = flight (57 packets).
    cr.on_ack(&ack(first + ms(600), first, 1, rtt_of(600), 57 * MSS));
    assert_eq!(cr.phase(), CarefulResumePhase::Validating);
    assert_eq!(cr.window(), 57 * MSS);
}

#[test]
fn a_sender_that_did_not_use_the_jump_goes_to_normal_with_the_pipe() {
    let (mut cr, now) = reconnaissance(600);
    let first = now + ms(1);
    send_jump(&mut cr, now, 1);
    // PipeSize = 9 (flight at the jump) + 9 + 1 acked = 19 packets; the
    // flight (0) is below it: rate-limited.
    cr.on_ack(&ack(first + ms(600), first, 10, rtt_of(600), 0));
    assert_eq!(cr.phase(), CarefulResumePhase::Normal);
    assert_eq!(cr.window(), 19 * MSS);
    assert_eq!(
        phases(&mut cr).last(),
        Some(&(
            CarefulResumePhase::Normal,
            CarefulResumeTrigger::RateLimited
        ))
    );
}

#[test]
fn the_last_unvalidated_packet_acked_enters_normal() {
    let (mut cr, now) = reconnaissance(600);
    let last = send_jump(&mut cr, now, 191);
    assert_eq!(cr.phase(), CarefulResumePhase::Validating);
    cr.on_ack(&ack(
        last + ms(599),
        last - ms(1),
        1,
        rtt_of(600),
        199 * MSS,
    ));
    assert_eq!(cr.phase(), CarefulResumePhase::Validating);
    cr.on_ack(&ack(last + ms(600), last, 1, rtt_of(600), 198 * MSS));
    assert_eq!(cr.phase(), CarefulResumePhase::Normal);
    assert_eq!(
        phases(&mut cr).last(),
        Some(&(
            CarefulResumePhase::Normal,
            CarefulResumeTrigger::LastUnvalidatedPacketAcknowledged
        ))
    );
}

#[test]
fn a_loss_while_validating_retreats_to_half_the_pipe() {
    let (mut cr, now) = reconnaissance(600);
    let last = send_jump(&mut cr, now, 191);
    // 100 packets acked: PipeSize = 9 + 100 = 109 packets.
    cr.on_ack(&ack(last + ms(300), now, 100, rtt_of(600), 100 * MSS));
    // 20 of the 191 jumped packets lost (10%): the jump overfilled.
    lose(&mut cr, last + ms(301), 20, true);
    assert_eq!(cr.phase(), CarefulResumePhase::SafeRetreat);
    // cwnd = PipeSize/2 = 54.5 packets, in bytes 54_500.
    assert_eq!(cr.window(), 54_500);
    assert!(cr.careful_resume().unwrap().retreated);
}

#[test]
fn a_loss_while_unvalidated_retreats() {
    let (mut cr, now) = reconnaissance(600);
    send_jump(&mut cr, now, 20);
    lose(&mut cr, now + ms(50), 2, true);
    assert_eq!(cr.phase(), CarefulResumePhase::SafeRetreat);
    // PipeSize = 9 packets: half is 4.5, above the 2-packet minimum.
    assert_eq!(cr.window(), 4_500);
}

#[test]
fn safe_retreat_ends_when_the_jump_is_acked_with_ssthresh_from_the_pipe() {
    let (mut cr, now) = reconnaissance(600);
    let last = send_jump(&mut cr, now, 191);
    cr.on_ack(&ack(last + ms(300), now, 100, rtt_of(600), 100 * MSS));
    lose(&mut cr, last + ms(301), 20, true);
    // ACKs during the retreat add to the pipe but not to the window.
    cr.on_ack(&ack(
        last + ms(400),
        last - ms(2),
        50,
        rtt_of(600),
        40 * MSS,
    ));
    assert_eq!(cr.phase(), CarefulResumePhase::SafeRetreat);
    assert_eq!(cr.window(), 54_500);
    cr.on_ack(&ack(last + ms(601), last, 1, rtt_of(600), 39 * MSS));
    assert_eq!(cr.phase(), CarefulResumePhase::Normal);
    // PipeSize = 109 + 50 + 1 = 160 packets; ssthresh = 160/2 = 80 packets,
    // the window stays where the retreat put it (54.5 packets, now Reno's).
    assert_eq!(cr.ssthresh(), 80 * MSS);
    assert_eq!(cr.window(), 54_500);
    assert_eq!(
        phases(&mut cr).last(),
        Some(&(
            CarefulResumePhase::Normal,
            CarefulResumeTrigger::ExitRecovery
        ))
    );
}

#[test]
fn a_random_loss_verdict_does_not_retreat_unless_configured() {
    // Veno judges a loss random when its backlog N is below β: here no
    // queue (RTT = base RTT), so N = 0.
    let build = |config| {
        let veno: CcConfig = "veno".parse().unwrap();
        CarefulResume::new(veno.build(MSS), saved(), config, MSS)
    };
    for (config, retreats) in [
        (CarefulResumeConfig::default(), false),
        (
            CarefulResumeConfig {
                retreat_on_random_loss: true,
                ..CarefulResumeConfig::default()
            },
            true,
        ),
    ] {
        let (mut cr, now) = reconnaissance_of(build(config), 600);
        assert_eq!(cr.phase(), CarefulResumePhase::Unvalidated);
        send_jump(&mut cr, now, 20);
        // 2 of the 20 jumped packets (10%): only the verdict decides.
        let verdict = lose(&mut cr, now + ms(50), 2, true);
        assert_eq!(verdict, Some(LossVerdict::Random));
        assert_eq!(
            cr.phase() == CarefulResumePhase::SafeRetreat,
            retreats,
            "{config:?}"
        );
    }
}

#[test]
fn every_window_controller_continues_from_the_handed_window() {
    for name in CcConfig::NAMES {
        let mut cc = name.parse::<CcConfig>().unwrap().build(MSS);
        cc.set_window(123 * MSS, Some(100 * MSS));
        assert_eq!(cc.window(), 123 * MSS, "{name}");
    }
}

#[test]
fn a_new_packet_size_reaches_the_controller_it_wraps() {
    let mut cr = resumed(CarefulResumeConfig::default());
    assert_eq!(cr.window(), 10 * MSS);
    // Path MTU discovery: packets nine times larger. Reno's floor of two
    // packets is now above its initial window of ten small ones.
    cr.set_mss(9 * MSS);
    assert_eq!(cr.window(), crate::minimum_window(9 * MSS));
}

#[test]
fn the_jump_stays_half_the_saved_bytes_after_the_packet_size_grows() {
    let mut cr = resumed(CarefulResumeConfig::default());
    cr.set_mss(2 * MSS);
    let (cr, _) = reconnaissance_of(cr, 600);
    assert_eq!(cr.phase(), CarefulResumePhase::Unvalidated);
    assert_eq!(cr.window(), JUMP);
}

/// BBR resumed from `saved()` (400 packets per 600 ms: 666_667 B/s) under
/// `config`: the jump, then an ACK of a jumped packet whose rate sample
/// shows 600_000 B/s (0.9 of the saved rate). BBR's state index after it.
fn bbr_state_after_a_saved_rate_sample(config: CarefulResumeConfig) -> f64 {
    let bbr: CcConfig = "bbr".parse().unwrap();
    let cr = CarefulResume::new(bbr.build(MSS), saved(), config, MSS);
    let (mut cr, now) = reconnaissance_of(cr, 600);
    assert_eq!(cr.phase(), CarefulResumePhase::Unvalidated);
    let sent = send_jump(&mut cr, now, 20);
    let mut event = ack(sent + ms(600), sent, 1, rtt_of(600), 20 * MSS);
    event.rate = Some(crate::RateSample {
        delivery_rate: 600_000.0,
        interval: ms(600),
        delivered: MSS,
        prior_delivered: 10 * MSS,
        delivered_total: 11 * MSS,
        tx_in_flight: 20 * MSS,
        ..crate::RateSample::default()
    });
    cr.on_ack(&event);
    cr.metrics().fields["state"]
}

#[test]
fn bbr_leaves_startup_once_it_measures_the_saved_rate() {
    let state = bbr_state_after_a_saved_rate_sample(CarefulResumeConfig::default());
    assert_ne!(state, 0.0, "Startup is state 0");
}

#[test]
fn under_the_rfc_letter_bbr_stays_in_startup_at_the_saved_rate() {
    let letter = CarefulResumeConfig {
        startup_exit_at_saved_rate: false,
        ..CarefulResumeConfig::default()
    };
    assert_eq!(bbr_state_after_a_saved_rate_sample(letter), 0.0);
}

/// A 700-packet jump: the saved path carried 1400 packets.
fn resumed_700(config: CarefulResumeConfig) -> (CarefulResume, Instant) {
    let reno = Reno::new(RenoConfig::default(), MSS);
    let saved = SavedPath {
        cwnd: 1400 * MSS,
        min_rtt: ms(600),
    };
    let (mut cr, now) =
        reconnaissance_of(CarefulResume::new(Box::new(reno), saved, config, MSS), 600);
    assert_eq!(cr.phase(), CarefulResumePhase::Unvalidated);
    // 691 more packets: the whole jump is in flight.
    let last = send_jump(&mut cr, now, 691);
    assert_eq!(cr.phase(), CarefulResumePhase::Validating);
    (cr, last)
}

/// sift's measured option: a share of the jump may be lost before a
/// congestive loss retreats.
fn loss_share() -> CarefulResumeConfig {
    CarefulResumeConfig {
        retreat_loss_permille: MEASURED_RETREAT_LOSS_PERMILLE,
        ..CarefulResumeConfig::default()
    }
}

#[test]
fn under_the_loss_share_option_one_loss_in_a_700_packet_jump_does_not_retreat() {
    let (mut cr, last) = resumed_700(loss_share());
    let before = cr.window();
    // Reno judges it congestive, and it is Reno's loss as usual...
    let verdict = lose(&mut cr, last + ms(300), 1, true);
    assert_eq!(verdict, Some(LossVerdict::Congestive));
    // ...but one packet in 700 says nothing about the jump.
    assert_eq!(cr.phase(), CarefulResumePhase::Validating);
    assert!(!cr.careful_resume().unwrap().retreated);
    // Reno halved the flight size it was handed.
    assert_eq!(cr.window(), before / 2);
    // A sprinkle more in the same recovery period (1% of the jump, only
    // `on_packets_lost`) is still below 2%.
    lose(&mut cr, last + ms(310), 6, false);
    assert_eq!(cr.phase(), CarefulResumePhase::Validating);
    cr.on_ack(&ack(last + ms(600), last, 1, rtt_of(600), 600 * MSS));
    assert_eq!(cr.phase(), CarefulResumePhase::Normal);
    assert!(!cr.careful_resume().unwrap().retreated);
}

#[test]
fn under_the_loss_share_option_a_jump_that_loses_a_tenth_retreats_within_the_recovery_period() {
    let (mut cr, last) = resumed_700(loss_share());
    // The overflow's first declaration: 3 packets, below 2%...
    lose(&mut cr, last + ms(300), 3, true);
    assert_eq!(cr.phase(), CarefulResumePhase::Validating);
    // ...the rest of the burst arrives in the same recovery period: 70
    // packets in all, 10% of the jump.
    lose(&mut cr, last + ms(305), 67, false);
    assert_eq!(cr.phase(), CarefulResumePhase::SafeRetreat);
    assert!(cr.careful_resume().unwrap().retreated);
}

#[test]
fn by_default_one_congestive_loss_in_a_700_packet_jump_retreats() {
    // RFC 9959 §3.3: congestion detected while unvalidated retreats, and
    // Reno judges every loss congestion.
    let (mut cr, last) = resumed_700(CarefulResumeConfig::default());
    let verdict = lose(&mut cr, last + ms(300), 1, true);
    assert_eq!(verdict, Some(LossVerdict::Congestive));
    assert_eq!(cr.phase(), CarefulResumePhase::SafeRetreat);
    assert!(cr.careful_resume().unwrap().retreated);
}

#[test]
fn under_the_loss_share_option_one_loss_retreats_once_an_rtt_since_the_jump_shows_a_queue() {
    let (mut cr, last) = resumed_700(loss_share());
    // An ACK of a jumped packet 800 ms after it left: above 5/4 of the
    // saved 600 ms, the jump is sitting in a queue.
    let mut queued = rtt_of(600);
    queued.latest = ms(800);
    cr.on_ack(&ack(last + ms(200), last - ms(600), 1, queued, 699 * MSS));
    assert_eq!(cr.phase(), CarefulResumePhase::Validating);
    lose(&mut cr, last + ms(300), 1, true);
    assert_eq!(cr.phase(), CarefulResumePhase::SafeRetreat);
}

#[test]
fn ce_marks_while_unvalidated_retreat_whatever_the_loss_share_allows() {
    // RFC 9959 §3.3 treats ECN-CE as it treats loss; a mark is never the
    // link's, so the loss-share option does not hold it back.
    for config in [CarefulResumeConfig::default(), loss_share()] {
        let (mut cr, now) = reconnaissance(600);
        cr.config = config;
        send_jump(&mut cr, now, 20);
        phases(&mut cr);
        cr.on_ecn(&crate::test_support::marks(now + ms(50), now, 1, 1, false));
        assert_eq!(cr.phase(), CarefulResumePhase::SafeRetreat);
        assert_eq!(
            phases(&mut cr),
            vec![(
                CarefulResumePhase::SafeRetreat,
                CarefulResumeTrigger::CongestionExperienced
            )]
        );
        assert!(cr.careful_resume().unwrap().retreated);
    }
}

#[test]
fn ce_marks_before_the_jump_end_careful_resume() {
    let t0 = Instant::now();
    let mut cr = resumed(CarefulResumeConfig::default());
    cr.on_sent(t0, MSS, MSS);
    cr.on_ecn(&crate::test_support::marks(t0 + ms(600), t0, 1, 1, true));
    assert_eq!(cr.phase(), CarefulResumePhase::Normal);
}
