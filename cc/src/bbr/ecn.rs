//! What BBR does with CE marks, and the ECN loss verdict beside its loss
//! rules (DESIGN §6.1).
//!
//! draft-ietf-ccwg-bbr §"ECN" specifies no particular response to CE, but
//! says a connection that sends ECT "MUST treat any CE marks as
//! congestion". sift's BBR does, in the draft's own terms, once per loss
//! round (the round its loss signals are counted in):
//! - a round with CE marks is a congestion round for the short-term model,
//!   as a round with loss is: outside a bandwidth probe, `bw_shortterm` and
//!   `inflight_shortterm` are cut by β = 0.7 (draft §5.5.10.3
//!   `BBRLossLowerBounds`), and the leaky-pipe rule never lifts a cut in a
//!   marked round;
//! - a CE mark that arrives in Startup or ProbeBW_UP is "inflight too
//!   high" at once: it ends Startup or the probe, and bounds
//!   `inflight_longterm` at the BDP over (1 − headroom)
//!   ([`Bbr::marked_inflight_bound`]), so that the DOWN phase (and Drain,
//!   after a marked Startup: the draft leaves Drain's window at 2·BDP)
//!   holds the flight there and drains the queue at the bottleneck's rate
//!   rather than at the 10% DOWN's pacing leaves (65% in Drain), and
//!   CRUISE, with the draft's 15%
//!   headroom below the bound, keeps one BDP in flight: a full pipe and no
//!   queue. Samples of packets sent before the mark do not raise the bound
//!   back (the draft raises it to any sample's flight that did not lose
//!   too much). Measured on 50 Mb/s, 50 ms each way, CoDel, 1% loss
//!   (docs/notes/2026-12-07-ecn.md): with Linux's threshold probes ran the
//!   queue to 60–70 ms and DOWN took 0.6 s to drain it (q95 98 ms); any
//!   mark, at the end of its round, left q95 at 74 ms; acting at the mark
//!   with the bound, probes peak near 30 ms for a round and q95 is 41 ms,
//!   Startup's overshoot (the first mark comes back 200 ms after the queue
//!   passed CoDel's target), which Drain held at the bound cuts to 18 ms.
//!   Linux's BBRv3 alpha
//!   waits for CE on [`ECN_THRESH`] (50%) of a round's packets, a threshold
//!   for data-centre shallow-threshold marking (every packet above a few
//!   packets of queue), and applies it only below a 5 ms min_rtt. BBR sends
//!   ECT(0), and every queue that marks ECT(0) marks classically: CoDel
//!   marks one packet per interval/√count (RFC 8289 §5), far below half a
//!   round, so a 50% threshold let probes fill the queue until it dropped.
//!   A classic mark already says the queue stood above the AQM's target for
//!   an interval: the probe has found the pipe's limit, and the flight
//!   beyond the BDP is queue. Linux's α-scaled
//!   cut of `inflight_lo` (DCTCP-style, for L4S marking) is not taken
//!   either: the β cut is the draft's response to congestion;
//! - once such a mark bounded the flight, the path marks, and
//!   (`marked_path_fills_pipe`, on by default) the window rather than the
//!   pacing holds the flight ([`Bbr::marked_path_cap`]): CRUISE paces at
//!   1.05·bw with a window of 1.03 BDP, and Drain and DOWN hold one BDP.
//!   Pacing at `bw`, a rate of delivered packets, less the draft's 1%
//!   margin kept the link 98% busy at 1% loss (0.891 of capacity·(1 − p));
//!   with the rule 0.906, q95 18.4 ms on every seed, the median queue
//!   1.8–2.3 ms, under CoDel's target;
//! - a loss episode in which CE marks arrived is never undone as spurious:
//!   the marks confirmed the congestion.
//!
//! With `ecn_loss_verdict` on a path whose ECN is validated, a loss in a
//! round with no CE mark in it or the round before (the round the lost
//! packet was sent in) is the link's: it neither cuts the short-term model,
//! nor counts towards a probe's `LossThresh`, nor ends Startup, and its
//! congestion event is judged random. Off by default.

use super::probe_bw::PROBE_CRUISE_PACING_GAIN;
use super::{Bbr, BbrState, HEADROOM, MARKED_CRUISE_BDP, MARKED_CRUISE_PACING_GAIN};
use crate::{EcnEvent, LossVerdict, RateSample};

/// Linux BBRv3 `bbr_ecn_thresh`: a round in which CE marked at least half
/// the delivered packets had too much in flight. Written for shallow-
/// threshold marking; sift's BBR ends a probe at any classic mark (module
/// docs) and keeps this only to report `ce_ratio` against.
pub const ECN_THRESH: f64 = 0.5;

impl Bbr {
    /// CE marks arrived (the trait's `on_ecn`).
    pub(super) fn note_marks(&mut self, ev: &EcnEvent) {
        self.now = Some(ev.now);
        self.ce_in_round = true;
        // A peer may report more marks than packets: the ratio saturates.
        self.marked_in_round = self
            .marked_in_round
            .saturating_add(ev.newly_marked.saturating_mul(self.mss));
        self.marked_since_loss = true;
        self.ecn_marks += 1;
        self.respond_to_probe_mark();
    }

    /// The bound a probe's mark sets on `inflight_longterm`: the BDP over
    /// (1 − [`HEADROOM`]), so CRUISE's headroom leaves one BDP in flight.
    pub(super) fn marked_inflight_bound(&self) -> u64 {
        ((self.bdp_multiple(1.0) as f64 / (1.0 - HEADROOM)) as u64).max(self.min_pipe_cwnd())
    }

    /// A classic mark in Startup or ProbeBW_UP: the pipe is full and the
    /// flight beyond the BDP is queue (module docs).
    fn respond_to_probe_mark(&mut self) {
        let bound = self.marked_inflight_bound();
        match self.state {
            BbrState::Startup if !self.full_bw_reached => {
                self.undo_state = None;
                self.full_bw_reached = true;
                self.inflight_longterm = bound;
                self.startup_marked = true;
            }
            BbrState::ProbeBwUp => {
                self.prev_probe_too_high = true;
                self.is_bw_probe_sample = false;
                self.inflight_longterm = self.inflight_longterm.min(bound);
                self.start_probe_bw_down();
            }
            _ => return,
        }
        self.mark_cut_delivered = self.delivered;
        self.mark_bounded = true;
    }

    /// The marking-path rule (`BbrConfig::marked_path_fills_pipe`): on a
    /// path whose mark bounded the flight, CRUISE's window is
    /// [`MARKED_CRUISE_BDP`]·BDP (at least its headroom), and Drain after a
    /// marked Startup and ProbeBW_DOWN hold the flight at CRUISE's headroom
    /// (one BDP) so the queue drains at the bottleneck's rate. `None`
    /// elsewhere: the draft's caps apply.
    pub(super) fn marked_path_cap(&self) -> Option<u64> {
        if !self.config.marked_path_fills_pipe || !self.mark_bounded {
            return None;
        }
        match self.state {
            BbrState::ProbeBwCruise => Some(
                self.inflight_with_headroom()
                    .max(self.bdp_multiple(MARKED_CRUISE_BDP)),
            ),
            BbrState::ProbeBwDown => Some(self.inflight_with_headroom()),
            BbrState::Drain if self.startup_marked => Some(self.inflight_with_headroom()),
            _ => None,
        }
    }

    /// CRUISE's pacing gain: [`MARKED_CRUISE_PACING_GAIN`] under the
    /// marking-path rule (the window holds the flight), else the draft's.
    pub(super) fn cruise_pacing_gain(&self) -> f64 {
        if self.config.marked_path_fills_pipe && self.mark_bounded {
            MARKED_CRUISE_PACING_GAIN
        } else {
            PROBE_CRUISE_PACING_GAIN
        }
    }

    /// Whether the sampled packet left before a probe's mark bounded
    /// `inflight_longterm`: its flight is the one that was marked.
    pub(super) fn sent_before_mark_cut(&self, rs: &RateSample) -> bool {
        rs.prior_delivered < self.mark_cut_delivered
    }

    /// Whether the ECN loss verdict judges a loss now random: the option
    /// is on, the path's ECN validated, and no CE mark arrived in this loss
    /// round or the one before.
    pub(super) fn loss_is_links_by_ecn(&self) -> bool {
        self.config.ecn_loss_verdict
            && self.ecn_validated
            && !self.ce_in_round
            && !self.ce_in_last_round
    }

    /// The ECN verdict on a congestion event, when the rule applies.
    pub(super) fn ecn_loss_verdict(&self, persistent: bool) -> Option<LossVerdict> {
        if persistent || !self.config.ecn_loss_verdict || !self.ecn_validated {
            return None;
        }
        Some(if self.ce_in_round || self.ce_in_last_round {
            LossVerdict::Congestive
        } else {
            LossVerdict::Random
        })
    }

    /// At the end of a loss round: the share of the delivered bytes CE
    /// marked (`ce_ratio`), and the round's marks become the last round's.
    pub(super) fn end_marked_round(&mut self, delivered_in_round: u64) {
        let ratio = self.marked_in_round as f64 / delivered_in_round.max(1) as f64;
        self.last_round_ce_ratio = if self.ce_in_round { ratio } else { 0.0 };
        self.ce_in_last_round = self.ce_in_round;
        self.ce_in_round = false;
        self.marked_in_round = 0;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::super::tests::{ack, cruising, one_lost};
    use super::*;
    use crate::test_support::{marks, ms};
    use crate::{BbrConfig, CongestionControl};

    #[test]
    fn a_cruise_round_with_ce_marks_cuts_the_short_term_model_as_a_lossy_one() {
        let t0 = Instant::now() + ms(1_000);
        // A queue-free round without loss: the leaky-pipe rule lifts any cut.
        let mut clean = cruising(t0, BbrConfig::default());
        clean.on_ack(&ack(t0 + ms(100), 100, 900_000.0, 1_000_000, 1_001_000));
        assert_eq!(clean.bw_shortterm(), f64::INFINITY);
        // The same round with a mark: bw_shortterm = max(bw_latest 900_000,
        // 0.7·1 MB/s), inflight_shortterm = max(1_000, 0.7·200_000).
        let mut marked = cruising(t0, BbrConfig::default());
        marked.on_ecn(&marks(t0 + ms(50), t0, 1, 1, true));
        marked.on_ack(&ack(t0 + ms(100), 100, 900_000.0, 1_000_000, 1_001_000));
        assert_eq!(marked.bw_shortterm(), 900_000.0);
        assert_eq!(marked.inflight_shortterm(), 140_000);
        assert_eq!(marked.metrics().fields["ecn_marks"], 1.0);
    }

    /// A BBR in Startup after two rounds of doubling rate samples, with
    /// `marked` of the second round's `packets` packets CE marked.
    fn startup_round_of(packets: u64, marked: u64) -> Bbr {
        let t0 = Instant::now() + ms(1_000);
        let mut bbr = Bbr::new(BbrConfig::default(), 1_000);
        bbr.on_ack(&ack(t0, 100, 100_000.0, 0, 1_000));
        if marked > 0 {
            bbr.on_ecn(&marks(t0 + ms(50), t0, marked, packets, true));
        }
        let delivered = 1_000 + packets * 1_000;
        bbr.on_ack(&ack(t0 + ms(100), 100, 200_000.0, 1_000, delivered));
        bbr
    }

    fn startup_round(marked: u64) -> Bbr {
        startup_round_of(1, marked)
    }

    #[test]
    fn a_round_with_half_its_packets_marked_ends_startup() {
        // Unmarked, the bandwidth doubled: Startup goes on.
        assert_eq!(startup_round(0).state(), BbrState::Startup);
        // Its one packet marked (ratio 1 ≥ 0.5): the pipe is full.
        let marked = startup_round(1);
        assert!(marked.full_bw_reached);
        assert_ne!(marked.state(), BbrState::Startup);
        assert_eq!(marked.metrics().fields["ce_ratio"], 1.0);
    }

    #[test]
    fn one_classic_mark_in_a_startup_round_ends_startup() {
        // One packet of twenty marked (5%, as CoDel marks): BBR's ECT(0)
        // is marked by a classic AQM, whose first mark means the queue
        // stood above its target for an interval.
        let marked = startup_round_of(20, 1);
        assert!(marked.full_bw_reached);
        assert_ne!(marked.state(), BbrState::Startup);
        assert_eq!(marked.metrics().fields["ce_ratio"], 0.05);
        assert_eq!(startup_round_of(20, 0).state(), BbrState::Startup);
    }

    #[test]
    fn after_a_marked_startup_drain_holds_the_flight_at_the_bound() {
        // In Drain with a 2·BDP window (BDP = 200_000 B/s · 100 ms =
        // 20_000): after a marked Startup, the window is held at the
        // bound, 20_000 / 0.85; after a loss-ended one, the draft's.
        let in_drain = |marked: u64| {
            let mut bbr = startup_round_of(20, marked);
            // The bound alone (the marking-path rule holds one BDP:
            // `after_a_marked_startup_drain_holds_the_flight_at_one_bdp`).
            bbr.config.marked_path_fills_pipe = false;
            bbr.full_bw_reached = true;
            bbr.inflight_longterm = bbr.marked_inflight_bound();
            bbr.state = BbrState::Drain;
            bbr.cwnd = 40_000;
            bbr.bound_cwnd_for_model();
            bbr.window()
        };
        assert_eq!(in_drain(1), 23_529);
        assert_eq!(in_drain(0), 40_000);
    }

    #[test]
    fn one_classic_mark_in_a_probe_round_ends_the_probe() {
        let t0 = Instant::now() + ms(1_000);
        let mut bbr = cruising(t0, BbrConfig::default());
        bbr.state = BbrState::ProbeBwUp;
        bbr.is_bw_probe_sample = true;
        // A round of 100 packets, one marked.
        bbr.on_ecn(&marks(t0 + ms(50), t0, 1, 100, true));
        assert_eq!(bbr.state(), BbrState::ProbeBwDown);
        assert!(bbr.prev_probe_too_high);
        // The bound: BDP 100_000 (1 MB/s · 100 ms) / 0.85.
        assert_eq!(bbr.inflight_longterm, 117_647);
        // An ACK of packets sent before the mark, with their larger
        // flight, does not raise it back.
        let mut before = ack(t0 + ms(100), 100, 1_000_000.0, 990_000, 1_100_000);
        before.rate.as_mut().unwrap().tx_in_flight = 300_000;
        bbr.on_ack(&before);
        assert_eq!(bbr.inflight_longterm, 117_647);
    }

    /// A cruising BBR whose probe a CE mark ended (now in ProbeBW_DOWN,
    /// `inflight_longterm` at the mark's bound 117_647), its window at
    /// 200_000 before the caps.
    fn marked_probe(config: BbrConfig) -> Bbr {
        let t0 = Instant::now() + ms(1_000);
        let mut bbr = cruising(t0, config);
        bbr.state = BbrState::ProbeBwUp;
        bbr.is_bw_probe_sample = true;
        bbr.on_ecn(&marks(t0 + ms(50), t0, 1, 100, true));
        assert_eq!(bbr.state(), BbrState::ProbeBwDown);
        assert_eq!(bbr.inflight_longterm, 117_647);
        bbr
    }

    fn capped(mut bbr: Bbr) -> u64 {
        bbr.cwnd = 200_000;
        bbr.bound_cwnd_for_model();
        bbr.window()
    }

    #[test]
    fn on_a_marking_path_the_window_not_the_pacing_holds_the_flight() {
        let off = BbrConfig {
            marked_path_fills_pipe: false,
            ..BbrConfig::default()
        };
        // DOWN after the mark: held at CRUISE's headroom (0.85 · 117_647,
        // one BDP) with the rule, at the bound without it.
        assert_eq!(capped(marked_probe(BbrConfig::default())), 100_000);
        assert_eq!(capped(marked_probe(off.clone())), 117_647);
        // CRUISE: paced at 1.05 · bw with a window of 1.03 BDP, against
        // the draft's 1.0 · bw and the headroom's one BDP.
        let cruise = |config: BbrConfig| {
            let mut bbr = marked_probe(config);
            bbr.start_probe_bw_cruise();
            bbr
        };
        let on = cruise(BbrConfig::default());
        assert_eq!(on.pacing_gain, MARKED_CRUISE_PACING_GAIN);
        assert_eq!(capped(on), 103_000);
        let draft = cruise(off);
        assert_eq!(draft.pacing_gain, PROBE_CRUISE_PACING_GAIN);
        assert_eq!(capped(draft), 100_000);
    }

    #[test]
    fn without_a_mark_the_marking_path_rule_changes_nothing() {
        // A cruising BBR that never saw a mark: same gain and window with
        // the rule on or off (paths without marks are bit-identical).
        let t0 = Instant::now() + ms(1_000);
        let on = cruising(t0, BbrConfig::default());
        let off = cruising(
            t0,
            BbrConfig {
                marked_path_fills_pipe: false,
                ..BbrConfig::default()
            },
        );
        assert_eq!(on.pacing_gain, off.pacing_gain);
        assert_eq!(capped(on), capped(off));
    }

    #[test]
    fn after_a_marked_startup_drain_holds_the_flight_at_one_bdp() {
        // As `after_a_marked_startup_drain_holds_the_flight_at_the_bound`,
        // with the marking-path rule: CRUISE's headroom, one BDP (20_000).
        let in_drain = |rule: bool| {
            let mut bbr = startup_round_of(20, 1);
            bbr.config.marked_path_fills_pipe = rule;
            bbr.full_bw_reached = true;
            bbr.inflight_longterm = bbr.marked_inflight_bound();
            bbr.state = BbrState::Drain;
            bbr.cwnd = 40_000;
            bbr.bound_cwnd_for_model();
            bbr.window()
        };
        assert_eq!(in_drain(true), 20_000);
        assert_eq!(in_drain(false), 23_529);
    }

    #[test]
    fn with_the_ecn_verdict_a_lossy_round_without_marks_keeps_the_model() {
        let t0 = Instant::now() + ms(1_000);
        let config = BbrConfig {
            background_loss_tolerance: false,
            ecn_loss_verdict: true,
            ..BbrConfig::default()
        };
        let round = |validated: bool, marked: bool| {
            let mut bbr = cruising(t0, config.clone());
            bbr.on_ecn_validated(validated);
            if marked {
                bbr.on_ecn(&marks(t0, t0, 1, 1, false));
            }
            bbr.on_packets_lost(&one_lost(t0, 1_000_500));
            let verdict = bbr.on_congestion(&crate::test_support::loss(
                t0,
                crate::test_support::rtt(100, 100),
                false,
            ));
            bbr.on_ack(&ack(t0 + ms(100), 100, 900_000.0, 1_000_500, 1_001_000));
            (verdict, bbr.bw_shortterm())
        };
        // Validated, no mark: the link's loss, no cut.
        assert_eq!(round(true, false), (LossVerdict::Random, f64::INFINITY));
        // A mark in the round: congestion, the draft's cut.
        assert_eq!(round(true, true), (LossVerdict::Congestive, 900_000.0));
        // Not validated: the draft's cut (and its verdict: 1 of 1 lost).
        assert_eq!(round(false, false).1, 900_000.0);
    }
}
