//! What a controller remembers of ECN, written once: whether the path's ECN
//! is validated, when CE marks arrived, and the rounds a lost packet's
//! "round" is counted in.
//!
//! Two rules of DESIGN §6.1 read it:
//! - a CE mark is congestion, never random (RFC 3168 §6.1.2, RFC 9002 §7.1):
//!   every controller answers it with the congestive branch of its rule, and
//!   a cut that CE marks have confirmed is no longer undone as spurious;
//! - on a path whose ECN is validated (RFC 9000 §13.4.2), a loss with no CE
//!   mark in its round is judged random ([`EcnMemory::loss_verdict`]), for
//!   the loss-differentiating controllers that turn on `ecn_loss_verdict`
//!   (off by default; the lead chooses from `sift-lab ecn`). A marking
//!   queue marks before it drops, so a drop from a full queue comes with
//!   marks around it; a radio's loss comes alone.
//!
//! "Its round" is the round trip the lost packet was sent in: a CE mark
//! that arrived at or after the start of that round counts. Rounds are
//! [`RoundTracker`]'s (delimited by send time), and the last
//! [`ROUND_HISTORY`] round starts are kept; a packet older than all of them
//! counts every mark ever received (the cautious side: congestive).

use std::collections::VecDeque;
use std::time::Instant;

use crate::rounds::RoundTracker;
use crate::{AckEvent, LossEvent, LossVerdict};

/// Round starts kept to place a lost packet in its round: losses are
/// declared within a few round trips of the send (RFC 9002 §6.1: a packet
/// threshold or 9/8 of an RTT; a timeout is persistent congestion and
/// judged by the controller's own rule).
pub const ROUND_HISTORY: usize = 8;

/// The ECN state a controller keeps for its loss verdicts.
#[derive(Clone, Debug, Default)]
pub struct EcnMemory {
    /// The controller's `ecn_loss_verdict` option.
    loss_verdict_enabled: bool,
    /// The path's ECN is validated (`on_ecn_validated`).
    validated: bool,
    rounds: RoundTracker,
    /// When the latest rounds began (ACK times), oldest first.
    round_starts: VecDeque<Instant>,
    /// When the latest CE mark arrived.
    last_mark_at: Option<Instant>,
    /// CE events received (ACKs whose CE count grew).
    marks: u64,
}

impl EcnMemory {
    /// Memory for a controller whose `ecn_loss_verdict` option is `enabled`.
    pub fn new(enabled: bool) -> Self {
        Self {
            loss_verdict_enabled: enabled,
            ..Self::default()
        }
    }

    /// Counts rounds from the ACK stream.
    pub fn on_ack(&mut self, ack: &AckEvent) {
        if self.rounds.on_ack(ack) {
            if self.round_starts.len() == ROUND_HISTORY {
                self.round_starts.pop_front();
            }
            self.round_starts.push_back(ack.now);
        }
    }

    /// A CE mark arrived at `now`.
    pub fn on_mark(&mut self, now: Instant) {
        self.last_mark_at = Some(self.last_mark_at.map_or(now, |at| at.max(now)));
        self.marks += 1;
    }

    /// The path's ECN validation changed.
    pub fn set_validated(&mut self, validated: bool) {
        self.validated = validated;
    }

    /// Whether the path's ECN is validated.
    pub fn validated(&self) -> bool {
        self.validated
    }

    /// When the latest CE mark arrived.
    pub fn last_mark_at(&self) -> Option<Instant> {
        self.last_mark_at
    }

    /// CE events received so far.
    pub fn marks(&self) -> u64 {
        self.marks
    }

    /// Whether a CE mark arrived since the round a packet sent at `sent`
    /// was sent in began.
    pub fn mark_in_round_of(&self, sent: Instant) -> bool {
        let round_start = self.round_starts.iter().rev().find(|&&start| start <= sent);
        match (self.last_mark_at, round_start) {
            (None, _) => false,
            (Some(at), Some(&start)) => at >= start,
            // Older than every round kept (or before the first): any mark.
            (Some(_), None) => true,
        }
    }

    /// The ECN rule's verdict on `ev`, when it applies: the option is on,
    /// the path's ECN is validated and the event is not a timeout (which
    /// each controller judges by its own rule). Congestive with a CE mark
    /// in the round of the newest lost packet, random without.
    pub fn loss_verdict(&self, ev: &LossEvent) -> Option<LossVerdict> {
        if !self.loss_verdict_enabled || !self.validated || ev.persistent {
            return None;
        }
        Some(if self.mark_in_round_of(ev.largest_lost_sent_time) {
            LossVerdict::Congestive
        } else {
            LossVerdict::Random
        })
    }

    /// The numbers behind an ECN verdict on `ev`, for a [`crate::VerdictBasis`]:
    /// `ecn_validated` and `ce_in_round` (0 or 1).
    pub fn basis_values(&self, ev: &LossEvent) -> [(&'static str, f64); 2] {
        [
            ("ecn_validated", f64::from(u8::from(self.validated))),
            (
                "ce_in_round",
                f64::from(u8::from(self.mark_in_round_of(ev.largest_lost_sent_time))),
            ),
        ]
    }
}

/// What a verdict basis shows for a congestion event that CE marks started:
/// `ce_marked` = 1.
pub const MARKED_BASIS: (&str, f64) = ("ce_marked", 1.0);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{ack, loss, ms, rtt};

    fn loss_sent_at(now: Instant, sent: Instant) -> LossEvent {
        let mut ev = loss(now, rtt(100, 100), false);
        ev.largest_lost_sent_time = sent;
        ev
    }

    #[test]
    fn a_mark_counts_for_a_loss_sent_in_the_round_it_arrived_in_or_later() {
        let t0 = Instant::now();
        let mut ecn = EcnMemory::new(true);
        ecn.set_validated(true);
        // Rounds begin at t0 + 100 ms and t0 + 200 ms.
        ecn.on_ack(&ack(t0 + ms(100), t0, 1, rtt(100, 100), 0));
        ecn.on_ack(&ack(t0 + ms(200), t0 + ms(100), 1, rtt(100, 100), 0));
        ecn.on_mark(t0 + ms(150));
        // Sent at 120 ms (round from 100 ms): the mark at 150 ms counts.
        let in_round = loss_sent_at(t0 + ms(300), t0 + ms(120));
        assert_eq!(ecn.loss_verdict(&in_round), Some(LossVerdict::Congestive));
        // Sent at 210 ms (round from 200 ms): the mark came before it.
        let later = loss_sent_at(t0 + ms(300), t0 + ms(210));
        assert_eq!(ecn.loss_verdict(&later), Some(LossVerdict::Random));
        assert_eq!(
            ecn.basis_values(&later),
            [("ecn_validated", 1.0), ("ce_in_round", 0.0)]
        );
    }

    #[test]
    fn without_validation_or_the_option_or_for_a_timeout_the_rule_says_nothing() {
        let t0 = Instant::now();
        let ev = loss_sent_at(t0 + ms(300), t0 + ms(210));
        let mut off = EcnMemory::new(false);
        off.set_validated(true);
        assert_eq!(off.loss_verdict(&ev), None);
        let unvalidated = EcnMemory::new(true);
        assert_eq!(unvalidated.loss_verdict(&ev), None);
        let mut on = EcnMemory::new(true);
        on.set_validated(true);
        let mut timeout = ev.clone();
        timeout.persistent = true;
        assert_eq!(on.loss_verdict(&timeout), None);
        assert_eq!(on.loss_verdict(&ev), Some(LossVerdict::Random));
    }

    #[test]
    fn a_loss_older_than_every_round_kept_counts_any_mark() {
        let t0 = Instant::now();
        let mut ecn = EcnMemory::new(true);
        ecn.set_validated(true);
        for round in 1..=(ROUND_HISTORY as u64 + 2) {
            let at = t0 + ms(100 * round);
            ecn.on_ack(&ack(at, at - ms(100), 1, rtt(100, 100), 0));
        }
        ecn.on_mark(t0 + ms(50));
        // Sent at 150 ms: its round start (100 ms) is no longer kept.
        let old = loss_sent_at(t0 + ms(1_000), t0 + ms(150));
        assert_eq!(ecn.loss_verdict(&old), Some(LossVerdict::Congestive));
    }
}
