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
//! - a round in which CE marked at least [`ECN_THRESH`] of the packets
//!   delivered is "inflight too high", as Linux's BBRv3 alpha reads its
//!   `bbr_ecn_thresh` (50%): it ends Startup and a bandwidth probe, and sets
//!   `inflight_longterm` as a probe's excess loss does. Linux applies its
//!   ECN rules only below a 5 ms min_rtt (a data-centre shallow-threshold
//!   marking); the draft's MUST has no such bound, so sift applies them on
//!   every path. Linux's α-scaled cut of `inflight_lo` (DCTCP-style, for
//!   L4S marking) is not taken: BBR sends ECT(0), whose queues mark
//!   classically, and the β cut is the draft's response to congestion;
//! - a loss episode in which CE marks arrived is never undone as spurious:
//!   the marks confirmed the congestion.
//!
//! With `ecn_loss_verdict` on a path whose ECN is validated, a loss in a
//! round with no CE mark in it or the round before (the round the lost
//! packet was sent in) is the link's: it neither cuts the short-term model,
//! nor counts towards a probe's `LossThresh`, nor ends Startup, and its
//! congestion event is judged random. Off by default.

use super::{Bbr, BbrState};
use crate::{EcnEvent, LossVerdict};

/// Linux BBRv3 `bbr_ecn_thresh`: a round in which CE marked at least half
/// the delivered packets had too much in flight.
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
    /// marked, and whether it reached [`ECN_THRESH`]: Startup ends, a probe
    /// stops, `inflight_longterm` is set from the round's flight.
    pub(super) fn end_marked_round(&mut self, delivered_in_round: u64) {
        let ratio = self.marked_in_round as f64 / delivered_in_round.max(1) as f64;
        self.last_round_ce_ratio = if self.ce_in_round { ratio } else { 0.0 };
        if self.ce_in_round && ratio >= ECN_THRESH {
            if self.state == BbrState::Startup && !self.full_bw_reached {
                self.undo_state = None;
                self.full_bw_reached = true;
                self.inflight_longterm = self.bdp_multiple(1.0).max(self.inflight_latest);
            } else if self.is_bw_probe_sample {
                let inflight = self.inflight_latest.max(self.min_pipe_cwnd());
                self.handle_marked_inflight_too_high(inflight);
            }
        }
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
    /// `marked` of the second round's one packet CE marked.
    fn startup_round(marked: u64) -> Bbr {
        let t0 = Instant::now() + ms(1_000);
        let mut bbr = Bbr::new(BbrConfig::default(), 1_000);
        bbr.on_ack(&ack(t0, 100, 100_000.0, 0, 1_000));
        if marked > 0 {
            bbr.on_ecn(&marks(t0 + ms(50), t0, marked, 1, true));
        }
        bbr.on_ack(&ack(t0 + ms(100), 100, 200_000.0, 1_000, 2_000));
        bbr
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
