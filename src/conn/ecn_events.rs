//! ECN in the connection: where the validation of `conn::ecn` meets the
//! send and receive paths, the controller (through `recovery`) and the
//! trace. Kept apart from `ecn` so that the state machine, which the trace
//! names, imports nothing of the connection.

use std::time::Instant;

use super::ecn::{EcnCounts, EcnState, EcnStats, EcnTransition};
use super::{Connection, SentFrame};
use crate::recovery::{AckOutcome, SentPacket, SpaceId};
use crate::wire::Ecn;

impl Connection {
    /// The ECN-capable codepoint the controller asks for.
    fn ect_codepoint(&self) -> Ecn {
        match self.recovery.ect() {
            sift_cc::Ect::Ect0 => Ecn::Ect0,
            sift_cc::Ect::Ect1 => Ecn::Ect1,
        }
    }

    /// The codepoint of the next datagram on the connection's path.
    pub(super) fn ecn_for_datagram(&mut self, now: Instant) -> Ecn {
        let ect = self.ect_codepoint();
        let (ecn, transition) = self.ecn.codepoint(ect, now);
        self.on_ecn_transition(transition);
        ecn
    }

    /// A packet of `space` left in a datagram marked `ecn`.
    pub(super) fn ecn_on_packet_sent(
        &mut self,
        space: SpaceId,
        ecn: Ecn,
        ack_eliciting: bool,
        now: Instant,
    ) {
        let transition = self.ecn.on_packet_sent(space, ecn, ack_eliciting, now);
        self.on_ecn_transition(transition);
    }

    /// An ACK frame of `space` acknowledging up to `largest`, with the
    /// peer's ECN counts if it sent any, did `outcome`: validate the
    /// counts, count the packets of the test it showed lost, and answer new
    /// CE marks as congestion (after the ACK's `on_ack`, which recovery
    /// has made).
    pub(super) fn ecn_on_ack(
        &mut self,
        space: SpaceId,
        largest: u64,
        counts: Option<[u64; 3]>,
        outcome: &AckOutcome<SentFrame>,
        now: Instant,
    ) {
        let mut newly_acked = EcnCounts::default();
        for packet in &outcome.acked {
            newly_acked.add(packet.ecn);
        }
        let check = self.ecn.on_ack(space, largest, counts, newly_acked, now);
        self.on_ecn_transition(check.transition);
        if check.newly_marked > 0 {
            self.recovery
                .on_ce_marks(space, check.newly_marked, &outcome.acked, now);
        }
        self.ecn_on_lost(&outcome.lost, now);
    }

    /// Packets declared lost (by an ACK or the timer).
    pub(super) fn ecn_on_lost(&mut self, lost: &[SentPacket<SentFrame>], now: Instant) {
        // A lost path MTU probe was too big, not marked away.
        let lost = lost
            .iter()
            .filter(|p| !p.pmtu_probe)
            .map(|p| (p.ecn, p.ack_eliciting, p.time_sent));
        let transition = self.ecn.on_packets_lost(lost, now);
        self.on_ecn_transition(transition);
    }

    /// A probe timeout fired.
    pub(super) fn ecn_on_pto(&mut self) {
        let transition = self.ecn.on_pto();
        self.on_ecn_transition(transition);
    }

    /// The connection moved to a new network path: ECN is validated again
    /// there (RFC 9000 §13.4.2).
    pub(super) fn ecn_on_new_path(&mut self) {
        let transition = self.ecn.on_new_path(self.now);
        self.on_ecn_transition(transition);
    }

    /// A controller put in place mid-connection learns whether the path is
    /// validated.
    pub(super) fn ecn_tell_controller(&mut self) {
        if self.ecn.state() == EcnState::Capable {
            self.recovery.on_ecn_validated(true);
        }
    }

    fn on_ecn_transition(&mut self, transition: Option<EcnTransition>) {
        let Some(transition) = transition else {
            return;
        };
        match transition.failure {
            Some(failure) => tracing::debug!(
                remote = %self.remote,
                ?failure,
                "ECN validation failed: sending not-ECT"
            ),
            None => tracing::debug!(
                remote = %self.remote,
                from = transition.from.name(),
                to = transition.to.name(),
                "ECN validation"
            ),
        }
        if transition.to == EcnState::Capable {
            self.recovery.on_ecn_validated(true);
        } else if transition.from == EcnState::Capable {
            self.recovery.on_ecn_validated(false);
        }
        self.trace_ecn_state(transition);
    }

    /// What `Stats::ecn` shows.
    pub(super) fn ecn_stats(&self) -> EcnStats {
        EcnStats {
            state: self.ecn.state(),
            failure: self.ecn.last_failure(),
            sent: self.ecn.sent(),
            received: self.ecn_received(),
            reported_by_peer: self.ecn.reported(),
            congestion_events: self.recovery.stats().ecn_congestion_events,
        }
    }

    /// All the spaces' counts of what arrived (what our ACKs report).
    pub(super) fn ecn_received(&self) -> EcnCounts {
        self.spaces
            .iter()
            .fold(EcnCounts::default(), |a, space| a.plus(space.ecn_received))
    }
}
