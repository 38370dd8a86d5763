//! Loss detection (RFC 9002 §6.1) and what a loss does: the packet and time
//! thresholds (widened by the adaptive reordering window, `reordering.rs`),
//! the Vegas early-retransmit policies the controller may ask for,
//! persistent congestion (§7.6), and congestion events — at most one per
//! recovery period — with the controller's verdict recorded for the lab.
//! Every packet declared lost is remembered (`spurious.rs`) so that a late
//! acknowledgement can prove the loss spurious.

use std::time::Instant;

use sift_cc::LossEvent;

use super::reordering::{detect_loss, loss_delay, PacketState};
use super::spurious::{LostPacket, RecoveryEpisode};
use super::{LossTrigger, Recovery, RecoveryNote, SentPacket, SpaceId, VerdictRecord};

impl<F> Recovery<F> {
    /// Vegas C and D (Hengartner et al. §VI), when the controller asks for
    /// them: retransmit the oldest outstanding packet early.
    pub(super) fn policy_early_losses(
        &mut self,
        space: SpaceId,
        acked: &[SentPacket<F>],
        now: Instant,
    ) -> Vec<SentPacket<F>> {
        let policy = self.cc.recovery_policy();
        if !(policy.fine_grained_early_retransmit || policy.retransmit_on_partial_ack) {
            return Vec::new();
        }
        let state = &self.spaces[space.index()];
        let Some(oldest) = state.ledger.oldest() else {
            return Vec::new();
        };
        let newest_acked = acked.last().map_or(0, |p| p.packet_number);
        if oldest.packet_number > newest_acked {
            return Vec::new(); // no gap below what was acked
        }
        let fine_timeout = policy.fine_grained_early_retransmit
            && now.saturating_duration_since(oldest.time_sent) > self.rtt.fine_grained_timeout();
        let partial_ack = policy.retransmit_on_partial_ack
            && self
                .recovery_start
                .is_some_and(|start| oldest.time_sent <= start);
        if !(fine_timeout || partial_ack) {
            return Vec::new();
        }
        let pn = oldest.packet_number;
        self.spaces[space.index()]
            .ledger
            .remove(pn)
            .into_iter()
            .collect()
    }

    /// RFC 9002 §6.1: packet and time thresholds, each as wide as the
    /// reordering seen so far (RFC 8985 §6.2 `RACK_detect_loss`).
    pub(super) fn detect_lost(&mut self, space: SpaceId, now: Instant) -> Vec<SentPacket<F>> {
        let rtt_basis = self.rtt.latest().max(self.rtt.smoothed());
        let loss_delay = loss_delay(
            rtt_basis,
            self.config.time_threshold,
            self.reordering_window(),
        );
        let packet_threshold = self.reordering.packet_threshold();
        let state = &mut self.spaces[space.index()];
        state.loss_time = None;
        let Some(largest_acked) = state.largest_acked else {
            return Vec::new();
        };
        let mut lost_numbers = Vec::new();
        let mut loss_time: Option<Instant> = None;
        for packet in state.ledger.iter() {
            match detect_loss(
                packet.packet_number,
                packet.time_sent,
                largest_acked,
                packet_threshold,
                loss_delay,
                now,
            ) {
                PacketState::InFlight => break,
                PacketState::Lost => lost_numbers.push(packet.packet_number),
                PacketState::LostAt(when) => {
                    loss_time = Some(loss_time.map_or(when, |t| t.min(when)));
                }
            }
        }
        state.loss_time = loss_time;
        lost_numbers
            .into_iter()
            .filter_map(|pn| state.ledger.remove(pn))
            .collect()
    }

    pub(super) fn on_packets_lost(&mut self, space: SpaceId, lost: &[SentPacket<F>], now: Instant) {
        let (lost_bytes, newest_lost) = self.remove_lost_from_flight(space, lost, now);
        self.report_lost(lost, now);
        let Some(newest_lost) = newest_lost else {
            return;
        };
        let persistent = self.in_persistent_congestion(space, lost);
        let in_current_period = self
            .recovery_start
            .is_some_and(|start| newest_lost <= start)
            && self.cc.recovery_policy().one_reduction_per_window;
        if in_current_period && !persistent {
            // No second cut, but the episode is undone only if these
            // arrive too.
            if let Some(episode) = self.episode.as_mut() {
                episode.add_losses(
                    space,
                    lost.iter()
                        .filter(|p| !p.pmtu_probe)
                        .map(|p| p.packet_number),
                );
            }
            return;
        }
        self.congestion_event(space, lost, lost_bytes, newest_lost, persistent, now);
    }

    /// Takes lost packets out of flight and remembers them; returns the
    /// in-flight bytes of those sent on the current path and the send time
    /// of the newest of them (None if none was).
    fn remove_lost_from_flight(
        &mut self,
        space: SpaceId,
        lost: &[SentPacket<F>],
        now: Instant,
    ) -> (u64, Option<Instant>) {
        let mut lost_bytes = 0;
        let mut newest_lost: Option<Instant> = None;
        let largest_acked = self.spaces[space.index()].largest_acked;
        let packet_threshold = self.reordering.packet_threshold();
        for packet in lost {
            if packet.pmtu_probe {
                if packet.in_flight {
                    self.bytes_in_flight = self.bytes_in_flight.saturating_sub(packet.size);
                }
                continue;
            }
            if self.noting() {
                let trigger = self.loss_trigger.unwrap_or_else(|| {
                    let by_count = largest_acked.is_some_and(|largest| {
                        largest >= packet.packet_number.saturating_add(packet_threshold)
                    });
                    if by_count {
                        LossTrigger::PacketThreshold
                    } else {
                        LossTrigger::TimeThreshold
                    }
                });
                self.note(RecoveryNote::Lost {
                    at: now,
                    space,
                    packet_number: packet.packet_number,
                    size: packet.size,
                    trigger,
                });
            }
            self.stats.lost_packets += 1;
            self.stats.lost_bytes += packet.size;
            self.lost_memory.remember(
                space,
                packet.packet_number,
                LostPacket {
                    time_sent: packet.time_sent,
                    size: packet.size,
                },
            );
            if packet.in_flight {
                self.bytes_in_flight = self.bytes_in_flight.saturating_sub(packet.size);
            }
            if packet.in_flight && self.on_current_path(space, packet.packet_number) {
                // Only a loss on the current path is congestion there
                // (RFC 9000 §9.4).
                lost_bytes += packet.size;
                newest_lost =
                    Some(newest_lost.map_or(packet.time_sent, |t| t.max(packet.time_sent)));
            }
        }
        (lost_bytes, newest_lost)
    }

    /// Starts a recovery period and tells the controller; records its
    /// verdict against the packets of this event.
    fn congestion_event(
        &mut self,
        space: SpaceId,
        lost: &[SentPacket<F>],
        lost_bytes: u64,
        newest_lost: Instant,
        persistent: bool,
        now: Instant,
    ) {
        self.recovery_start = Some(now);
        self.recovery_packet_allowed = true;
        self.reordering.on_recovery_episode();
        self.stats.congestion_events += 1;
        if persistent {
            self.stats.persistent_congestion_events += 1;
        }
        let lost_packets: Vec<u64> = lost
            .iter()
            .filter(|p| !p.pmtu_probe)
            .map(|p| p.packet_number)
            .collect();
        let verdict = self.cc.on_congestion(&LossEvent {
            now,
            lost_packets: lost_packets.clone(),
            lost_bytes,
            largest_lost_sent_time: newest_lost,
            bytes_in_flight: self.bytes_in_flight,
            rtt: self.rtt.sample(),
            persistent,
        });
        if self.noting() {
            self.note(RecoveryNote::Verdict {
                at: now,
                space,
                packet_numbers: lost_packets.clone(),
                verdict,
                persistent,
                basis: self.cc.verdict_basis(),
                cwnd: self.cc.window(),
                ssthresh: self.cc.ssthresh(),
            });
        }
        self.episode = Some(RecoveryEpisode::new(space, now, &lost_packets, verdict));
        self.verdicts.push(VerdictRecord {
            space,
            packet_numbers: lost_packets,
            verdict,
            undone: false,
        });
    }

    /// RFC 9002 §7.6: a run of consecutive lost ack-eliciting packets,
    /// all sent after the first RTT sample, spanning the persistent
    /// congestion duration.
    fn in_persistent_congestion(&self, space: SpaceId, lost: &[SentPacket<F>]) -> bool {
        let Some(first_sample) = self.first_rtt_sample else {
            return false;
        };
        let duration = self.pto_period(space) * self.config.persistent_congestion_threshold;
        let mut run: Option<(u64, Instant)> = None; // (previous pn, run start time)
        for packet in lost.iter().filter(|p| {
            p.ack_eliciting
                && !p.pmtu_probe
                && p.time_sent > first_sample
                && self.on_current_path(space, p.packet_number)
        }) {
            run = match run {
                Some((previous, start)) if packet.packet_number == previous + 1 => {
                    if packet.time_sent.saturating_duration_since(start) >= duration {
                        return true;
                    }
                    Some((packet.packet_number, start))
                }
                _ => Some((packet.packet_number, packet.time_sent)),
            };
        }
        false
    }

    pub(super) fn on_timeout_loss(&mut self, space: SpaceId, lost: &[SentPacket<F>], now: Instant) {
        let (lost_bytes, newest_lost) = self.remove_lost_from_flight(space, lost, now);
        self.report_lost(lost, now);
        let old_path_only = lost
            .iter()
            .all(|p| !self.on_current_path(space, p.packet_number));
        if old_path_only && !lost.is_empty() {
            // Nothing sent on the current path was lost (RFC 9000 §9.4).
            return;
        }
        self.congestion_event(
            space,
            lost,
            lost_bytes,
            newest_lost.unwrap_or(now),
            true,
            now,
        );
    }
}
