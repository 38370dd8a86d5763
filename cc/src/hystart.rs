//! HyStart++ (RFC 9406): the slow start of the loss-based controllers.
//!
//! Classic slow start doubles the window every round trip until a loss, and
//! on a long path with a buffer of one bandwidth-delay product it overshoots
//! by a whole window: hundreds of packets lost in one round, often a timeout.
//! HyStart++ watches the minimum RTT of each round: once it rises by a
//! threshold (the queue has started to build) the window grows at a quarter
//! of slow start's pace (Conservative Slow Start, CSS) for up to five rounds,
//! and then congestion avoidance takes over. If the RTT falls back during
//! CSS, the rise was jitter and slow start resumes.
//!
//! Decisions where the RFC leaves a choice:
//! - rounds are delimited by send time, not sequence numbers: a round ends at
//!   the first ACK for a packet sent after the round began (RFC 9406 §4.2
//!   `windowEnd = SND.NXT`; a controller sees send times, not SND.NXT);
//! - HyStart++ runs in the initial slow start only; after the first loss or
//!   timeout it is done and slow start is the classic one (§4.2: "use
//!   HyStart++ only for the initial slow start");
//! - no per-ACK growth limit L: sift paces, and §4.2 sets L = infinity for
//!   paced senders (a scenario that turns pacing off should turn HyStart++
//!   off too, as the paper experiments do);
//! - the exit test reads the minimum of the round's latest N_RTT_SAMPLE
//!   samples, not of the whole round (§4.2's currentRoundMinRTT). A paced
//!   sender's queue starts in the middle of a round, and the round's first
//!   samples, taken before it, keep the whole-round minimum low until the
//!   round ends: on a 100 ms path with a one-BDP buffer the window then
//!   doubles once more and overflows the buffer by a window (issue 12:
//!   CUBIC lost 1370 packets on a clean 50 Mb/s path, 830 with this and
//!   358 with the next choice too). Eight
//!   samples in a row above the threshold are as strong a signal against
//!   jitter as the RFC's eight samples per round;
//! - for the same reason CSS starts the round's minimum afresh at its
//!   baseline, which is where the RFC's currentRoundMinRTT stands when CSS
//!   begins: the round's earlier, unqueued samples would otherwise read as
//!   jitter at the next ACK and send the window back to slow start.
//!
//! The controller owns ssthresh and cwnd; this type only decides how much of
//! an ACK slow start may add and when to hand over to congestion avoidance.

use std::time::Duration;

use crate::rounds::RoundTracker;
use crate::{slow_start, AckEvent};

/// RFC 9406 §4.3 MIN_RTT_THRESH: the smallest RTT rise that ends slow start.
pub const MIN_RTT_THRESH: Duration = Duration::from_millis(4);
/// RFC 9406 §4.3 MAX_RTT_THRESH: the largest RTT rise required.
pub const MAX_RTT_THRESH: Duration = Duration::from_millis(16);
/// RFC 9406 §4.3 MIN_RTT_DIVISOR: the threshold is lastRoundMinRTT / 8.
pub const MIN_RTT_DIVISOR: u32 = 8;
/// RFC 9406 §4.3 N_RTT_SAMPLE: RTT samples a round needs before it counts.
pub const N_RTT_SAMPLE: u32 = 8;
/// RFC 9406 §4.3 CSS_GROWTH_DIVISOR: CSS grows at 1/4 of slow start's pace.
pub const CSS_GROWTH_DIVISOR: u64 = 4;
/// RFC 9406 §4.3 CSS_ROUNDS: rounds of CSS before congestion avoidance.
pub const CSS_ROUNDS: u32 = 5;

/// RFC 9406 §4.2's RttThresh: the rise over a base RTT that means a queue
/// is building (an eighth of it, between 4 and 16 ms). CUBIC's
/// `small_loss_rollback` reads it too.
pub fn rtt_rise_threshold(base: Duration) -> Duration {
    (base / MIN_RTT_DIVISOR).clamp(MIN_RTT_THRESH, MAX_RTT_THRESH)
}

/// Where HyStart++ is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HyStartPhase {
    /// Slow start, watching each round's minimum RTT.
    SlowStart,
    /// Conservative Slow Start, entered when the RTT rose to `baseline`.
    Conservative {
        /// cssBaselineMinRtt: the RTT that ended slow start (the minimum
        /// of the latest samples).
        baseline: Duration,
        /// CSS rounds completed.
        rounds: u32,
    },
    /// Off: disabled, or the initial slow start is over.
    Done,
}

/// What slow start made of one ACK.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlowStartStep {
    /// The new window.
    pub cwnd: u64,
    /// The new slow-start threshold: the window itself once CSS is over
    /// (RFC 9406 §4.2: "enter congestion avoidance by setting ssthresh to
    /// cwnd"), else unchanged.
    pub ssthresh: u64,
    /// Acked bytes slow start did not use (all of them at or above
    /// ssthresh), which the controller credits to congestion avoidance.
    pub rest: u64,
}

/// The HyStart++ state of one connection.
#[derive(Clone, Debug)]
pub struct HyStart {
    phase: HyStartPhase,
    rounds: RoundTracker,
    /// lastRoundMinRTT.
    last_round_min_rtt: Option<Duration>,
    /// currentRoundMinRTT.
    current_round_min_rtt: Option<Duration>,
    /// rttSampleCount of the current round.
    rtt_samples: u32,
    /// The round's latest N_RTT_SAMPLE samples (a ring; `rtt_samples`
    /// says how many are filled), whose minimum the exit test reads.
    recent: [Duration; N_RTT_SAMPLE as usize],
    /// The phase the latest congestion event ended, for its undo.
    before_congestion: Option<HyStartPhase>,
    /// The RTT rise that ends slow start, when the controller sets one
    /// instead of RttThresh (CUBIC's `ecn_slow_start_exit`).
    exit_rise: Option<Duration>,
}

impl HyStart {
    /// HyStart++ for a new connection; `enabled = false` is classic slow start.
    pub fn new(enabled: bool) -> Self {
        Self {
            phase: if enabled {
                HyStartPhase::SlowStart
            } else {
                HyStartPhase::Done
            },
            rounds: RoundTracker::default(),
            last_round_min_rtt: None,
            current_round_min_rtt: None,
            rtt_samples: 0,
            recent: [Duration::ZERO; N_RTT_SAMPLE as usize],
            before_congestion: None,
            exit_rise: None,
        }
    }

    /// Ends slow start at an RTT rise of `rise` instead of RttThresh.
    pub fn set_exit_rise(&mut self, rise: Duration) {
        self.exit_rise = Some(rise);
    }

    /// Where HyStart++ is.
    pub fn phase(&self) -> HyStartPhase {
        self.phase
    }

    /// A loss or timeout: the initial slow start is over (RFC 9406 §4.2).
    pub fn on_congestion(&mut self) {
        self.before_congestion = Some(self.phase);
        self.phase = HyStartPhase::Done;
    }

    /// The initial slow start ended by the controller's own rule (CUBIC's
    /// `ecn_slow_start_exit`), not by a congestion event: nothing to undo.
    pub fn finish(&mut self) {
        self.before_congestion = None;
        self.phase = HyStartPhase::Done;
    }

    /// The latest congestion event proved spurious (the controller undid
    /// its window cut): the initial slow start was not over after all, so
    /// HyStart++ watches it again, from a fresh round. Without this a
    /// reordering that fools loss detection once, early, leaves the rest of
    /// slow start to classic doubling and its overshoot.
    pub fn undo_congestion(&mut self) {
        if let Some(phase) = self.before_congestion.take() {
            self.phase = phase;
        }
    }

    /// Slow start for one ACK at window `cwnd`: nothing at or above
    /// `ssthresh`, classic slow start (RFC 5681 with byte counting) once
    /// HyStart++ is done, else the RFC 9406 §4.2 rules.
    pub fn slow_start(&mut self, cwnd: u64, ssthresh: u64, ack: &AckEvent) -> SlowStartStep {
        if cwnd >= ssthresh {
            return SlowStartStep {
                cwnd,
                ssthresh,
                rest: ack.acked_bytes,
            };
        }
        if self.phase == HyStartPhase::Done {
            let (cwnd, rest) = slow_start(cwnd, ssthresh, ack.acked_bytes);
            return SlowStartStep {
                cwnd,
                ssthresh,
                rest,
            };
        }
        let round_ended = self.track_round(ack);
        if ack.rtt_sampled {
            let latest = ack.rtt.latest;
            self.current_round_min_rtt =
                Some(self.current_round_min_rtt.map_or(latest, |m| m.min(latest)));
            self.recent[(self.rtt_samples % N_RTT_SAMPLE) as usize] = latest;
            self.rtt_samples = self.rtt_samples.saturating_add(1);
        }
        let mut enter_avoidance = false;
        match self.phase {
            HyStartPhase::SlowStart => self.check_delay_increase(),
            HyStartPhase::Conservative { baseline, rounds } => {
                if self.rtt_samples >= N_RTT_SAMPLE
                    && self.current_round_min_rtt.is_some_and(|m| m < baseline)
                {
                    // The rise was jitter: resume slow start (§4.2).
                    self.phase = HyStartPhase::SlowStart;
                } else if round_ended {
                    let rounds = rounds + 1;
                    if rounds >= CSS_ROUNDS {
                        self.phase = HyStartPhase::Done;
                        enter_avoidance = true;
                    } else {
                        self.phase = HyStartPhase::Conservative { baseline, rounds };
                    }
                }
            }
            HyStartPhase::Done => {}
        }
        // CSS grows at a quarter of slow start's pace (§4.2), the ACK that
        // ends it included.
        let growth = if enter_avoidance || matches!(self.phase, HyStartPhase::Conservative { .. }) {
            ack.acked_bytes / CSS_GROWTH_DIVISOR
        } else {
            ack.acked_bytes
        };
        let (cwnd, rest) = slow_start(cwnd, ssthresh, growth);
        SlowStartStep {
            cwnd,
            ssthresh: if enter_avoidance { cwnd } else { ssthresh },
            rest,
        }
    }

    /// Starts a new round when `ack` covers a packet sent after the current
    /// one began; returns whether a round ended.
    fn track_round(&mut self, ack: &AckEvent) -> bool {
        let ended = self.rounds.on_ack(ack);
        if ended {
            self.last_round_min_rtt = self.current_round_min_rtt.take();
            self.rtt_samples = 0;
        }
        ended
    }

    /// RFC 9406 §4.2: leave slow start for CSS once this round's RTT
    /// exceeds the last round's minimum by the threshold; "this round's RTT"
    /// is the minimum of its latest N_RTT_SAMPLE samples (see the module
    /// docs for why not the whole round's minimum).
    fn check_delay_increase(&mut self) {
        let Some(last) = self.last_round_min_rtt else {
            return;
        };
        if self.rtt_samples < N_RTT_SAMPLE {
            return;
        }
        let Some(&current) = self.recent.iter().min() else {
            return;
        };
        let rise = self.exit_rise.unwrap_or_else(|| rtt_rise_threshold(last));
        if current >= last + rise {
            self.phase = HyStartPhase::Conservative {
                baseline: current,
                rounds: 0,
            };
            // In the RFC, currentRoundMinRTT equals cssBaselineMinRtt when
            // CSS starts, and only a later sample below it means jitter.
            // Here the round's earlier, unqueued samples lie below the
            // baseline: left in, they would end CSS at the next ACK.
            self.current_round_min_rtt = Some(current);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    use crate::test_support::{ms, rtt, MSS};

    /// An ACK at `now` of one 1000-byte packet sent at `sent`, with an RTT
    /// sample of `rtt_ms`.
    fn ack(now: Instant, sent: Instant, rtt_ms: u64) -> AckEvent {
        let mut ack = crate::test_support::ack(now, sent, 1, rtt(rtt_ms, rtt_ms), 0);
        ack.largest_acked_sent_time = sent;
        ack
    }

    /// Feeds one round of `count` ACKs with RTT `rtt_ms`, for packets sent
    /// at `sent` (after the previous round began), each ACK 1 ms after the
    /// last from `start`; returns the window and the time of the last ACK.
    fn round(
        hystart: &mut HyStart,
        cwnd: &mut u64,
        start: Instant,
        sent: Instant,
        count: u64,
        rtt_ms: u64,
    ) -> Instant {
        let mut now = start;
        for i in 0..count {
            now = start + ms(i);
            let step = hystart.slow_start(*cwnd, u64::MAX, &ack(now, sent, rtt_ms));
            *cwnd = step.cwnd;
        }
        now
    }

    #[test]
    fn rtt_rise_of_an_eighth_moves_slow_start_to_quarter_pace_growth() {
        let t0 = Instant::now();
        let mut hystart = HyStart::new(true);
        let mut cwnd = 10 * MSS;
        // Round 1 (packets sent at t0): 8 samples of 100 ms, slow start adds
        // each ACK's 1000 bytes: 10_000 + 8·1_000 = 18_000.
        let end = round(&mut hystart, &mut cwnd, t0 + ms(100), t0, 8, 100);
        assert_eq!(cwnd, 18_000);
        // Round 2 (sent after round 1 began): threshold = clamp(100/8 = 12.5,
        // 4, 16) = 12.5 ms. Seven samples of 113 ms are not enough
        // (N_RTT_SAMPLE = 8): still slow start, +7_000.
        let sent = end;
        let start = end + ms(100);
        round(&mut hystart, &mut cwnd, start, sent, 7, 113);
        assert_eq!(cwnd, 25_000);
        assert_eq!(hystart.phase(), HyStartPhase::SlowStart);
        // The eighth: 113 ≥ 100 + 12.5, so CSS starts with baseline 113 ms and
        // this ACK already grows by 1_000/4 = 250.
        let step = hystart.slow_start(cwnd, u64::MAX, &ack(start + ms(7), sent, 113));
        assert_eq!(step.cwnd, 25_250);
        assert_eq!(step.ssthresh, u64::MAX);
        assert_eq!(
            hystart.phase(),
            HyStartPhase::Conservative {
                baseline: ms(113),
                rounds: 0
            }
        );
    }

    /// Round 1: eight samples of 100 ms. Round 2 starts unqueued (eight
    /// more of 100 ms, so its minimum stays 100 ms for good), then the
    /// queue builds: `queued` samples of 113 ms. Returns HyStart, the
    /// window, the time of the latest ACK and when round 2 was sent.
    fn queue_builds_mid_round(queued: u64) -> (HyStart, u64, Instant, Instant) {
        let t0 = Instant::now();
        let mut hystart = HyStart::new(true);
        let mut cwnd = 10 * MSS;
        let sent = round(&mut hystart, &mut cwnd, t0 + ms(100), t0, 8, 100);
        let last = round(&mut hystart, &mut cwnd, sent + ms(100), sent, 8, 100);
        let last = round(&mut hystart, &mut cwnd, last + ms(1), sent, queued, 113);
        (hystart, cwnd, last, sent)
    }

    #[test]
    fn a_queue_that_starts_mid_round_ends_slow_start_in_that_round() {
        let (mut hystart, cwnd, last, sent) = queue_builds_mid_round(7);
        assert_eq!(
            hystart.phase(),
            HyStartPhase::SlowStart,
            "seven are not eight"
        );
        hystart.slow_start(cwnd, u64::MAX, &ack(last + ms(1), sent, 113));
        assert_eq!(
            hystart.phase(),
            HyStartPhase::Conservative {
                baseline: ms(113),
                rounds: 0
            },
            "the latest eight all rose by 13 ms ≥ 12.5 ms"
        );
    }

    #[test]
    fn css_entered_mid_round_holds_for_the_rest_of_that_round() {
        // CSS began at the eighth queued sample (baseline 113 ms), and the
        // queue keeps growing in the same round. The round's first samples
        // (100 ms) are below the baseline, but they came before CSS: no
        // sample since is, so CSS holds and each ACK grows by a quarter.
        let (mut hystart, mut cwnd, last, sent) = queue_builds_mid_round(8);
        let entered = cwnd;
        round(&mut hystart, &mut cwnd, last + ms(1), sent, 8, 118);
        assert_eq!(
            hystart.phase(),
            HyStartPhase::Conservative {
                baseline: ms(113),
                rounds: 0
            }
        );
        assert_eq!(cwnd, entered + 8 * 250);
        // A sample below the baseline after the entry is jitter, as in the
        // RFC: slow start resumes.
        hystart.slow_start(cwnd, u64::MAX, &ack(last + ms(20), sent, 104));
        assert_eq!(hystart.phase(), HyStartPhase::SlowStart);
    }

    #[test]
    fn small_rise_below_the_threshold_keeps_slow_start() {
        let t0 = Instant::now();
        let mut hystart = HyStart::new(true);
        let mut cwnd = 10 * MSS;
        let end = round(&mut hystart, &mut cwnd, t0 + ms(100), t0, 8, 100);
        // 112 < 100 + 12.5: no exit; slow start adds all 8_000.
        round(&mut hystart, &mut cwnd, end + ms(100), end, 8, 112);
        assert_eq!(cwnd, 26_000);
        assert_eq!(hystart.phase(), HyStartPhase::SlowStart);
    }

    #[test]
    fn threshold_is_clamped_between_four_and_sixteen_milliseconds() {
        // 20 ms RTT: 20/8 = 2.5 ms is raised to 4 ms, so 23 ms stays in slow
        // start and 24 ms leaves it; 600 ms RTT: 75 ms is capped at 16 ms, so
        // 615 ms stays and 616 ms leaves.
        for (base, risen, exits) in [
            (20, 23, false),
            (20, 24, true),
            (600, 615, false),
            (600, 616, true),
        ] {
            let t0 = Instant::now();
            let mut hystart = HyStart::new(true);
            let mut cwnd = 10 * MSS;
            let end = round(&mut hystart, &mut cwnd, t0 + ms(base), t0, 8, base);
            round(&mut hystart, &mut cwnd, end + ms(base), end, 8, risen);
            let conservative = matches!(hystart.phase(), HyStartPhase::Conservative { .. });
            assert_eq!(conservative, exits, "base {base} ms, risen to {risen} ms");
        }
    }

    /// A HyStart++ that has just entered CSS (baseline 113 ms) at 25_250 B;
    /// returns it, the window and the time the CSS round began.
    fn in_css() -> (HyStart, u64, Instant) {
        let t0 = Instant::now();
        let mut hystart = HyStart::new(true);
        let mut cwnd = 10 * MSS;
        let end = round(&mut hystart, &mut cwnd, t0 + ms(100), t0, 8, 100);
        let css_start = end + ms(100);
        round(&mut hystart, &mut cwnd, css_start, end, 8, 113);
        assert_eq!(cwnd, 25_250);
        (hystart, cwnd, css_start)
    }

    #[test]
    fn five_css_rounds_end_slow_start_with_ssthresh_at_the_window() {
        let (mut hystart, mut cwnd, mut start) = in_css();
        // Four more rounds of 8 ACKs at 113 ms: each ACK adds 250 and each
        // round's first ACK counts one CSS round; rounds 1–4 leave CSS on.
        for completed in 1..=4 {
            let sent = start + ms(10);
            start += ms(113);
            round(&mut hystart, &mut cwnd, start, sent, 8, 113);
            assert_eq!(
                hystart.phase(),
                HyStartPhase::Conservative {
                    baseline: ms(113),
                    rounds: completed
                }
            );
        }
        assert_eq!(cwnd, 25_250 + 4 * 8 * 250);
        // The fifth round boundary ends CSS: this ACK grows by 250 and sets
        // ssthresh = cwnd = 33_500.
        let sent = start + ms(10);
        let step = hystart.slow_start(cwnd, u64::MAX, &ack(start + ms(113), sent, 113));
        assert_eq!((step.cwnd, step.ssthresh), (33_500, 33_500));
        assert_eq!(hystart.phase(), HyStartPhase::Done);
    }

    #[test]
    fn rtt_back_below_the_baseline_in_css_resumes_slow_start() {
        let (mut hystart, mut cwnd, start) = in_css();
        // Next round: eight samples of 105 ms < baseline 113 ms. The first
        // seven grow by 250 each (CSS); the eighth proves the rise spurious
        // and grows by the full 1_000.
        let sent = start + ms(10);
        round(&mut hystart, &mut cwnd, start + ms(113), sent, 8, 105);
        assert_eq!(cwnd, 25_250 + 7 * 250 + 1_000);
        assert_eq!(hystart.phase(), HyStartPhase::SlowStart);
    }

    #[test]
    fn disabled_or_after_a_loss_it_is_classic_slow_start_up_to_ssthresh() {
        let t0 = Instant::now();
        for mut hystart in [HyStart::new(false), {
            let mut h = HyStart::new(true);
            h.on_congestion();
            h
        }] {
            assert_eq!(hystart.phase(), HyStartPhase::Done);
            // 10_000 at ssthresh 10_500: 500 of a 1_000-byte ACK is slow
            // start, the other 500 is avoidance credit.
            let step = hystart.slow_start(10_000, 10_500, &ack(t0, t0, 300));
            assert_eq!((step.cwnd, step.ssthresh, step.rest), (10_500, 10_500, 500));
        }
    }

    #[test]
    fn an_undone_congestion_event_gives_slow_start_back_to_hystart() {
        let mut hystart = HyStart::new(true);
        hystart.on_congestion();
        assert_eq!(hystart.phase(), HyStartPhase::Done);
        hystart.undo_congestion();
        assert_eq!(hystart.phase(), HyStartPhase::SlowStart);
        // Only the latest event is undone, and only once.
        hystart.undo_congestion();
        assert_eq!(hystart.phase(), HyStartPhase::SlowStart);
        // Classic slow start (HyStart++ off) stays classic.
        let mut classic = HyStart::new(false);
        classic.on_congestion();
        classic.undo_congestion();
        assert_eq!(classic.phase(), HyStartPhase::Done);
    }
}
