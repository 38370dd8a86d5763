//! The sender's answer to CE marks (RFC 9002 §7.1, §B.7 `ProcessECN`): a
//! growth of the peer's ECN-CE count is a congestion event, at most one per
//! recovery period, handed to the controller as an [`EcnEvent`] after the
//! same ACK's `on_ack`. Validating the counts is the connection's
//! (`conn::ecn`); only counts that passed reach this file.

use std::time::Instant;

use sift_cc::{EcnEvent, Ect};

use super::{Recovery, SentPacket, SpaceId};

impl<F> Recovery<F> {
    /// The peer's ECN-CE count of `space` grew by `newly_marked` with an
    /// ACK that newly acknowledged `acked` (the outcome of
    /// [`Recovery::on_ack_received`] for that frame). Returns whether it
    /// started a new congestion event.
    ///
    /// The recovery period follows RFC 9002 §B.7: the event is new when
    /// the largest acknowledged packet was sent after the current period
    /// began, and a new period starts now. With no packet of the current
    /// path newly acknowledged, the marks are counted and nothing more:
    /// the marked packets were declared lost already, and their loss was
    /// answered.
    pub fn on_ce_marks(
        &mut self,
        space: SpaceId,
        newly_marked: u64,
        acked: &[SentPacket<F>],
        now: Instant,
    ) -> bool {
        if newly_marked == 0 {
            return false;
        }
        self.stats.ce_marks_reported += newly_marked;
        let on_path: Vec<&SentPacket<F>> = acked
            .iter()
            .filter(|p| p.in_flight && self.on_current_path(space, p.packet_number))
            .collect();
        let Some(largest) = on_path.iter().max_by_key(|p| p.packet_number) else {
            return false;
        };
        let largest_acked_sent_time = largest.time_sent;
        let new_congestion_event = self
            .recovery_start
            .is_none_or(|start| largest_acked_sent_time > start);
        // The network named this congestion: a loss episode it overlaps is
        // no longer a candidate for undo.
        self.episode = None;
        if new_congestion_event {
            self.recovery_start = Some(now);
            self.recovery_packet_allowed = true;
            self.reordering.on_recovery_episode();
            self.stats.congestion_events += 1;
            self.stats.ecn_congestion_events += 1;
        }
        self.cc.on_ecn(&EcnEvent {
            now,
            newly_marked,
            acked_packets: on_path.len() as u64,
            acked_bytes: on_path.iter().map(|p| p.size).sum(),
            largest_acked_sent_time,
            new_congestion_event,
            bytes_in_flight: self.bytes_in_flight,
            rtt: self.rtt.sample(),
        });
        new_congestion_event
    }

    /// The path's ECN validation changed (RFC 9000 §13.4.2): the
    /// controller may weigh losses with it.
    pub fn on_ecn_validated(&mut self, validated: bool) {
        self.cc.on_ecn_validated(validated);
    }

    /// The ECN-capable codepoint the controller asks for.
    pub fn ect(&self) -> Ect {
        self.cc.ect()
    }
}
