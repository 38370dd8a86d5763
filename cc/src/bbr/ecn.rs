//! What BBR does with CE marks, and the ECN loss verdict beside its loss
//! rules (DESIGN §5.1).
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
