//! ECN on the connection's path (RFC 9000 §13.4): which codepoint our
//! datagrams leave with, and whether the path and the peer can be trusted
//! with it, checked from the ECN counts the peer's ACK frames carry
//! (§13.4.2, with the states of the sample algorithm in Appendix A.4).
//!
//! Owns: the validation states (testing, unknown, failed, capable) and
//! what moves between them, the per-space counts of what we sent and what
//! the peer last reported. The counts of what *arrived* (what our ACKs
//! report) are kept per space in `spaces`. Must not: read a clock (callers
//! pass `now`) or touch a socket (`io` writes and reads the IP field).
//!
//! Retrying: RFC 9000 §13.4.2 lets an endpoint validate again later. sift
//! tests a failed path again after [`RETRY_AFTER`], doubling with each
//! failure on the path up to [`MAX_RETRY_AFTER`], and at once on a new path
//! (a migration). A retry costs at most [`TESTING_PACKETS`] marked packets:
//! on a bleaching path nothing, on a path that drops ECT packets up to ten
//! losses (a black hole, caught as all of them lost).

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::recovery::SpaceId;
use crate::wire::Ecn;

/// RFC 9000 Appendix A.4: "set the ECT(0) codepoint for the first ten
/// outgoing packets on a path".
pub const TESTING_PACKETS: u64 = 10;
/// RFC 9000 Appendix A.4: "or for a period of three PTOs".
pub const TESTING_PTOS: u32 = 3;
/// sift's choice: how long after a failure a path is tested again (RFC 9000
/// §13.4.2 allows revalidation "at any later time"); doubled per failure.
pub const RETRY_AFTER: Duration = Duration::from_secs(60);
/// The longest wait before another test, whatever the failures.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(16 * 60);

/// Where ECN validation of the path stands (RFC 9000 Appendix A.4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EcnState {
    /// Marking the first packets on the path and waiting for ACKs to show
    /// the marks arrive and are counted.
    #[default]
    Testing,
    /// The test packets are sent, no ACK has validated them yet: packets
    /// leave not-ECT meanwhile.
    Unknown,
    /// The path or the peer lost, cleared or miscounted the marks: packets
    /// leave not-ECT (until a retry).
    Failed,
    /// Marks cross the path and the peer counts them: packets leave ECT
    /// and CE marks are congestion.
    Capable,
    /// ECN is turned off in the config: nothing is marked or reported.
    Off,
}

impl EcnState {
    /// The name qlog and the stats give it.
    pub fn name(self) -> &'static str {
        match self {
            EcnState::Testing => "testing",
            EcnState::Unknown => "unknown",
            EcnState::Failed => "failed",
            EcnState::Capable => "capable",
            EcnState::Off => "off",
        }
    }
}

/// Why validation failed, for logs, traces and tests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EcnFailure {
    /// An ACK newly acknowledged ECT packets and carried no ECN counts.
    MissingCounts,
    /// A count went down.
    CountsDecreased,
    /// The counts grew by less than the ECT packets newly acknowledged:
    /// the marks were cleared on the way (bleaching) or not counted.
    Bleached,
    /// An ECT count exceeds the packets we sent with that codepoint: the
    /// peer counts a codepoint we did not use (ECT(0) as ECT(1)).
    WrongCodepoint,
    /// ECT and CE together exceed the ECT packets we sent: more marks
    /// than marked packets (a peer or a path that invents CE).
    OverReported,
    /// Every ack-eliciting packet marked in the test was lost: a path that
    /// drops ECT packets (Appendix A.4).
    MarkedPacketsLost,
}

/// Counts of the three ECN-capable codepoints, in an ACK frame's order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EcnCounts {
    /// ECT(0).
    pub ect0: u64,
    /// ECT(1).
    pub ect1: u64,
    /// CE.
    pub ce: u64,
}

impl EcnCounts {
    /// Counts one packet that carried `ecn` (not-ECT counts nowhere).
    pub fn add(&mut self, ecn: Ecn) {
        match ecn {
            Ecn::NotEct => {}
            Ecn::Ect0 => self.ect0 += 1,
            Ecn::Ect1 => self.ect1 += 1,
            Ecn::Ce => self.ce += 1,
        }
    }

    /// ECT(0), ECT(1), CE: the fields of an ACK_ECN frame.
    pub fn to_array(self) -> [u64; 3] {
        [self.ect0, self.ect1, self.ce]
    }

    /// From an ACK_ECN frame's fields.
    pub fn from_array([ect0, ect1, ce]: [u64; 3]) -> Self {
        Self { ect0, ect1, ce }
    }

    /// All three together.
    pub fn total(self) -> u64 {
        self.ect0.saturating_add(self.ect1).saturating_add(self.ce)
    }

    /// Nothing counted.
    pub fn is_zero(self) -> bool {
        self.total() == 0
    }

    /// These counts plus `other`'s.
    pub fn plus(self, other: EcnCounts) -> Self {
        Self {
            ect0: self.ect0.saturating_add(other.ect0),
            ect1: self.ect1.saturating_add(other.ect1),
            ce: self.ce.saturating_add(other.ce),
        }
    }
}

/// A change of [`EcnState`], for the connection to trace and tell the
/// controller of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EcnTransition {
    /// The state left.
    pub from: EcnState,
    /// The state entered.
    pub to: EcnState,
    /// Why, when validation failed.
    pub failure: Option<EcnFailure>,
}

/// What checking one ACK frame's ECN counts found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckCheck {
    /// How much the CE count grew, when the counts passed: marks the
    /// sender answers as congestion (RFC 9002 §7.1).
    pub newly_marked: u64,
    /// The state changed.
    pub transition: Option<EcnTransition>,
}

/// ECN validation of the connection's path, and the counts it rests on.
#[derive(Debug)]
pub struct EcnValidation {
    state: EcnState,
    /// Packets sent with each codepoint, per space, over the connection
    /// (the peer's counts are per space and never reset).
    sent: [EcnCounts; 3],
    /// The peer's counts in the last ACK frame that passed, per space.
    reported: [EcnCounts; 3],
    /// The largest packet number acknowledged by an ACK frame whose counts
    /// were checked, per space: an older frame is reordered and is not
    /// checked (RFC 9000 §13.4.2.1).
    largest_checked: [Option<u64>; 3],
    /// The current test: marked packets sent, PTOs fired, and the
    /// ack-eliciting marked packets sent and lost; only packets sent from
    /// `test_started` on belong to it.
    test_packets: u64,
    test_ptos: u32,
    test_eliciting_sent: u64,
    test_eliciting_lost: u64,
    test_started: Option<Instant>,
    /// Failures on this path, for the retry backoff.
    failures: u32,
    retry_at: Option<Instant>,
    /// The last failure, for stats.
    last_failure: Option<EcnFailure>,
}

impl EcnValidation {
    /// Validation that starts testing with the first packet, or `Off`.
    pub fn new(enabled: bool) -> Self {
        Self {
            state: if enabled {
                EcnState::Testing
            } else {
                EcnState::Off
            },
            sent: Default::default(),
            reported: Default::default(),
            largest_checked: [None; 3],
            test_packets: 0,
            test_ptos: 0,
            test_eliciting_sent: 0,
            test_eliciting_lost: 0,
            test_started: None,
            failures: 0,
            retry_at: None,
            last_failure: None,
        }
    }

    /// Where validation stands.
    pub fn state(&self) -> EcnState {
        self.state
    }

    /// Why validation last failed, if it ever did.
    pub fn last_failure(&self) -> Option<EcnFailure> {
        self.last_failure
    }

    /// Packets sent with each codepoint, all spaces.
    pub fn sent(&self) -> EcnCounts {
        self.sent
            .iter()
            .fold(EcnCounts::default(), |a, b| a.plus(*b))
    }

    /// The peer's last validated counts of `space`.
    pub fn reported_in(&self, space: SpaceId) -> EcnCounts {
        self.reported[space.index()]
    }

    /// The peer's last validated counts, all spaces.
    pub fn reported(&self) -> EcnCounts {
        self.reported
            .iter()
            .fold(EcnCounts::default(), |a, b| a.plus(*b))
    }

    fn enter(&mut self, to: EcnState, failure: Option<EcnFailure>) -> Option<EcnTransition> {
        let from = std::mem::replace(&mut self.state, to);
        (from != to).then_some(EcnTransition { from, to, failure })
    }

    /// The codepoint the next datagram leaves with, given the one the
    /// controller asks for: ECT while testing or capable, not-ECT
    /// otherwise. A failed path whose retry time has come starts a new
    /// test here (the transition is returned).
    pub fn codepoint(&mut self, ect: Ecn, now: Instant) -> (Ecn, Option<EcnTransition>) {
        let mut transition = None;
        if self.state == EcnState::Failed && self.retry_at.is_some_and(|at| at <= now) {
            transition = self.start_test(now);
        }
        let ecn = match self.state {
            EcnState::Testing | EcnState::Capable => ect,
            EcnState::Unknown | EcnState::Failed | EcnState::Off => Ecn::NotEct,
        };
        (ecn, transition)
    }

    fn start_test(&mut self, now: Instant) -> Option<EcnTransition> {
        if self.state == EcnState::Off {
            return None;
        }
        self.test_packets = 0;
        self.test_ptos = 0;
        self.test_eliciting_sent = 0;
        self.test_eliciting_lost = 0;
        self.test_started = Some(now);
        self.retry_at = None;
        self.enter(EcnState::Testing, None)
    }

    /// A packet of `space` left with `ecn`. The test ends (unknown) after
    /// [`TESTING_PACKETS`] marked packets.
    pub fn on_packet_sent(
        &mut self,
        space: SpaceId,
        ecn: Ecn,
        ack_eliciting: bool,
        now: Instant,
    ) -> Option<EcnTransition> {
        self.sent[space.index()].add(ecn);
        if self.state != EcnState::Testing || !ecn.is_ecn_capable() {
            return None;
        }
        self.test_started.get_or_insert(now);
        self.test_packets += 1;
        self.test_eliciting_sent += u64::from(ack_eliciting);
        if self.test_packets >= TESTING_PACKETS {
            return self.enter(EcnState::Unknown, None);
        }
        None
    }

    /// A probe timeout fired. The test ends (unknown) after
    /// [`TESTING_PTOS`] of them, so a path that drops ECT packets delays
    /// the handshake by three PTOs at most.
    pub fn on_pto(&mut self) -> Option<EcnTransition> {
        if self.state != EcnState::Testing {
            return None;
        }
        self.test_ptos += 1;
        if self.test_ptos >= TESTING_PTOS {
            return self.enter(EcnState::Unknown, None);
        }
        None
    }

    /// Packets were declared lost: `(codepoint, ack-eliciting, time sent)`
    /// of each. Once the test is over, its marked ack-eliciting packets
    /// all lost mean a path that drops ECT (Appendix A.4): failed.
    pub fn on_packets_lost(
        &mut self,
        lost: impl IntoIterator<Item = (Ecn, bool, Instant)>,
        now: Instant,
    ) -> Option<EcnTransition> {
        if !matches!(self.state, EcnState::Testing | EcnState::Unknown) {
            return None;
        }
        let started = self.test_started?;
        self.test_eliciting_lost += lost
            .into_iter()
            .filter(|(ecn, eliciting, sent)| ecn.is_ecn_capable() && *eliciting && *sent >= started)
            .count() as u64;
        if self.state == EcnState::Unknown
            && self.test_eliciting_sent > 0
            && self.test_eliciting_lost >= self.test_eliciting_sent
        {
            return self.fail(EcnFailure::MarkedPacketsLost, now);
        }
        None
    }

    /// Checks an ACK frame of `space` acknowledging up to `largest`, with
    /// the peer's `counts` (`None`: a plain ACK), which newly acknowledged
    /// `newly_acked` packets by the codepoint we sent them with (RFC 9000
    /// §13.4.2.1). Only a frame whose largest acknowledged grows is
    /// checked: an older one may be reordered.
    pub fn on_ack(
        &mut self,
        space: SpaceId,
        largest: u64,
        counts: Option<[u64; 3]>,
        newly_acked: EcnCounts,
        now: Instant,
    ) -> AckCheck {
        if matches!(self.state, EcnState::Off | EcnState::Failed) {
            return AckCheck::default();
        }
        let index = space.index();
        if self.largest_checked[index].is_some_and(|checked| largest <= checked) {
            return AckCheck::default();
        }
        self.largest_checked[index] = Some(largest);
        let newly_ect = newly_acked.ect0 + newly_acked.ect1;
        let Some(counts) = counts else {
            if newly_ect > 0 {
                return self.failed_check(EcnFailure::MissingCounts, now);
            }
            return AckCheck::default();
        };
        let counts = EcnCounts::from_array(counts);
        let before = self.reported[index];
        if counts.ect0 < before.ect0 || counts.ect1 < before.ect1 || counts.ce < before.ce {
            return self.failed_check(EcnFailure::CountsDecreased, now);
        }
        let sent = self.sent[index];
        if counts.ect0 > sent.ect0 || counts.ect1 > sent.ect1 {
            return self.failed_check(EcnFailure::WrongCodepoint, now);
        }
        if counts.total() > sent.ect0 + sent.ect1 {
            return self.failed_check(EcnFailure::OverReported, now);
        }
        let increase = EcnCounts {
            ect0: counts.ect0 - before.ect0,
            ect1: counts.ect1 - before.ect1,
            ce: counts.ce - before.ce,
        };
        if increase.ect0 + increase.ce < newly_acked.ect0
            || increase.ect1 + increase.ce < newly_acked.ect1
        {
            return self.failed_check(EcnFailure::Bleached, now);
        }
        self.reported[index] = counts;
        let transition =
            if newly_ect > 0 && matches!(self.state, EcnState::Testing | EcnState::Unknown) {
                self.enter(EcnState::Capable, None)
            } else {
                None
            };
        AckCheck {
            newly_marked: increase.ce,
            transition,
        }
    }

    fn failed_check(&mut self, failure: EcnFailure, now: Instant) -> AckCheck {
        AckCheck {
            newly_marked: 0,
            transition: self.fail(failure, now),
        }
    }

    fn fail(&mut self, failure: EcnFailure, now: Instant) -> Option<EcnTransition> {
        self.failures = self.failures.saturating_add(1);
        let backoff = RETRY_AFTER
            .saturating_mul(1 << (self.failures - 1).min(16))
            .min(MAX_RETRY_AFTER);
        self.retry_at = Some(now + backoff);
        self.last_failure = Some(failure);
        self.enter(EcnState::Failed, Some(failure))
    }

    /// The connection moved to a new path (RFC 9000 §13.4.2: validation is
    /// per path): test it afresh.
    pub fn on_new_path(&mut self, now: Instant) -> Option<EcnTransition> {
        self.failures = 0;
        self.start_test(now)
    }
}

/// ECN on a connection, for `Stats` and `--json`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EcnStats {
    /// Where validation of the path stands.
    pub state: EcnState,
    /// Why it last failed, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<EcnFailure>,
    /// Packets we sent, by codepoint (all spaces).
    pub sent: EcnCounts,
    /// Packets we received, by the codepoint they arrived with: what our
    /// ACKs reported.
    pub received: EcnCounts,
    /// The peer's counts of our packets, as last validated: `ce` is how
    /// many a queue marked.
    pub reported_by_peer: EcnCounts,
    /// Congestion events that CE marks started.
    pub congestion_events: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    const DATA: SpaceId = SpaceId::Data;

    fn at(start: Instant, ms: u64) -> Instant {
        start + Duration::from_millis(ms)
    }

    /// Validation after `n` ECT(0) ack-eliciting packets of the Data space.
    fn sent_ect0(n: u64) -> (EcnValidation, Instant) {
        let t0 = Instant::now();
        let mut ecn = EcnValidation::new(true);
        for _ in 0..n {
            let (codepoint, _) = ecn.codepoint(Ecn::Ect0, t0);
            ecn.on_packet_sent(DATA, codepoint, true, t0);
        }
        (ecn, t0)
    }

    fn ect0(n: u64) -> EcnCounts {
        EcnCounts {
            ect0: n,
            ..EcnCounts::default()
        }
    }

    #[test]
    fn the_first_ten_packets_are_marked_then_none_until_validated() {
        let t0 = Instant::now();
        let mut ecn = EcnValidation::new(true);
        let mut marked = 0;
        for _ in 0..15 {
            let (codepoint, _) = ecn.codepoint(Ecn::Ect0, t0);
            marked += u64::from(codepoint == Ecn::Ect0);
            ecn.on_packet_sent(DATA, codepoint, true, t0);
        }
        assert_eq!(marked, TESTING_PACKETS);
        assert_eq!(ecn.state(), EcnState::Unknown);
        let check = ecn.on_ack(DATA, 4, Some([5, 0, 0]), ect0(5), t0);
        assert_eq!(check.transition.map(|t| t.to), Some(EcnState::Capable));
        assert_eq!(ecn.codepoint(Ecn::Ect0, t0).0, Ecn::Ect0);
    }

    #[test]
    fn honest_counts_validate_the_path() {
        let (mut ecn, t0) = sent_ect0(3);
        let check = ecn.on_ack(DATA, 2, Some([2, 0, 1]), ect0(3), t0);
        assert_eq!(ecn.state(), EcnState::Capable);
        assert_eq!(check.newly_marked, 1);
        assert_eq!(
            check.transition.map(|t| (t.from, t.to)),
            Some((EcnState::Testing, EcnState::Capable))
        );
    }

    #[test]
    fn bleached_marks_fail_validation_and_stop_marking() {
        let (mut ecn, t0) = sent_ect0(3);
        let check = ecn.on_ack(DATA, 2, Some([0, 0, 0]), ect0(3), t0);
        assert_eq!(
            check.transition.and_then(|t| t.failure),
            Some(EcnFailure::Bleached)
        );
        assert_eq!(ecn.codepoint(Ecn::Ect0, t0).0, Ecn::NotEct);
    }

    #[test]
    fn an_ack_of_ect_packets_without_counts_fails_validation() {
        let (mut ecn, t0) = sent_ect0(2);
        ecn.on_ack(DATA, 1, None, ect0(2), t0);
        assert_eq!(ecn.last_failure(), Some(EcnFailure::MissingCounts));
    }

    #[test]
    fn counts_that_decrease_fail_validation() {
        let (mut ecn, t0) = sent_ect0(6);
        ecn.on_ack(DATA, 2, Some([3, 0, 0]), ect0(3), t0);
        assert_eq!(ecn.state(), EcnState::Capable);
        ecn.on_ack(DATA, 5, Some([2, 0, 4]), ect0(3), t0);
        assert_eq!(ecn.last_failure(), Some(EcnFailure::CountsDecreased));
    }

    #[test]
    fn more_ce_than_marked_packets_fails_validation() {
        let (mut ecn, t0) = sent_ect0(3);
        let check = ecn.on_ack(DATA, 2, Some([0, 0, 4]), ect0(3), t0);
        assert_eq!(ecn.last_failure(), Some(EcnFailure::OverReported));
        assert_eq!(
            check.newly_marked, 0,
            "invented marks are no congestion signal"
        );
    }

    #[test]
    fn ect0_counted_as_ect1_fails_validation() {
        let (mut ecn, t0) = sent_ect0(3);
        ecn.on_ack(DATA, 2, Some([0, 3, 0]), ect0(3), t0);
        assert_eq!(ecn.last_failure(), Some(EcnFailure::WrongCodepoint));
    }

    #[test]
    fn a_reordered_ack_with_older_counts_is_not_checked() {
        let (mut ecn, t0) = sent_ect0(6);
        ecn.on_ack(DATA, 5, Some([6, 0, 0]), ect0(6), t0);
        // An earlier ACK, overtaken: smaller counts, a smaller largest.
        let check = ecn.on_ack(DATA, 2, Some([3, 0, 0]), EcnCounts::default(), t0);
        assert_eq!(check, AckCheck::default());
        assert_eq!(ecn.state(), EcnState::Capable);
    }

    #[test]
    fn counts_larger_than_the_newly_acked_pass_when_acks_were_lost() {
        let (mut ecn, t0) = sent_ect0(6);
        // The ACK of packets 0..=2 was lost; this one newly acks 3..=5 and
        // counts all six.
        ecn.on_ack(DATA, 5, Some([6, 0, 0]), ect0(3), t0);
        assert_eq!(ecn.state(), EcnState::Capable);
    }

    #[test]
    fn all_marked_packets_lost_is_a_black_hole_and_fails() {
        let (mut ecn, t0) = sent_ect0(TESTING_PACKETS);
        assert_eq!(ecn.state(), EcnState::Unknown);
        let lost = (0..TESTING_PACKETS).map(|_| (Ecn::Ect0, true, t0));
        let transition = ecn.on_packets_lost(lost, at(t0, 300));
        assert_eq!(
            transition.and_then(|t| t.failure),
            Some(EcnFailure::MarkedPacketsLost)
        );
    }

    #[test]
    fn three_ptos_end_the_test() {
        let (mut ecn, _) = sent_ect0(1);
        assert_eq!(ecn.on_pto(), None);
        assert_eq!(ecn.on_pto(), None);
        assert_eq!(ecn.on_pto().map(|t| t.to), Some(EcnState::Unknown));
    }

    #[test]
    fn a_failed_path_is_tested_again_after_the_backoff() {
        let (mut ecn, t0) = sent_ect0(3);
        ecn.on_ack(DATA, 2, Some([0, 0, 0]), ect0(3), t0);
        let just_before = t0 + RETRY_AFTER - Duration::from_millis(1);
        assert_eq!(ecn.codepoint(Ecn::Ect0, just_before).0, Ecn::NotEct);
        let (codepoint, transition) = ecn.codepoint(Ecn::Ect0, t0 + RETRY_AFTER);
        assert_eq!(codepoint, Ecn::Ect0);
        assert_eq!(transition.map(|t| t.to), Some(EcnState::Testing));
        // A second failure waits twice as long.
        ecn.on_packet_sent(DATA, Ecn::Ect0, true, t0 + RETRY_AFTER);
        ecn.on_ack(DATA, 3, Some([0, 0, 0]), ect0(1), t0 + RETRY_AFTER);
        assert_eq!(ecn.state(), EcnState::Failed);
        let retry = t0 + RETRY_AFTER + RETRY_AFTER * 2;
        assert_eq!(
            ecn.codepoint(Ecn::Ect0, retry - Duration::from_millis(1)).0,
            Ecn::NotEct
        );
        assert_eq!(ecn.codepoint(Ecn::Ect0, retry).0, Ecn::Ect0);
    }

    #[test]
    fn a_new_path_restarts_validation() {
        let (mut ecn, t0) = sent_ect0(3);
        ecn.on_ack(DATA, 2, Some([3, 0, 0]), ect0(3), t0);
        let transition = ecn.on_new_path(t0);
        assert_eq!(
            transition.map(|t| (t.from, t.to)),
            Some((EcnState::Capable, EcnState::Testing))
        );
    }

    #[test]
    fn ecn_off_marks_nothing_and_checks_nothing() {
        let t0 = Instant::now();
        let mut ecn = EcnValidation::new(false);
        assert_eq!(ecn.codepoint(Ecn::Ect0, t0).0, Ecn::NotEct);
        assert_eq!(
            ecn.on_ack(DATA, 0, Some([0, 0, 9]), EcnCounts::default(), t0),
            AckCheck::default()
        );
        assert_eq!(ecn.on_new_path(t0), None);
        assert_eq!(ecn.state(), EcnState::Off);
    }
}
