//! Spurious losses: packets declared lost that are acknowledged after all.
//!
//! `recovery` forgets a packet when it declares it lost; to notice that the
//! loss was spurious (reordering, jitter, a late ACK) it keeps a bounded
//! memory of recently declared-lost packets, [`LostMemory`]. An ACK that
//! names one of them is a spurious loss: it widens the reordering window
//! (`reordering.rs`) and counts towards undoing the congestion response.
//!
//! Undo (Linux `tcp_try_undo_recovery`; RFC 9438 §4.9): the latest
//! congestion event opens a [`RecoveryEpisode`] holding every packet declared
//! lost in it and in the rest of its recovery period. When all of them have
//! been acknowledged, nothing was lost and the controller is told to restore
//! its state (`CongestionControl::on_spurious_congestion`). One real loss in
//! the episode, a newer congestion event, or a packet the memory had to
//! forget, and the episode can no longer be undone. Linux asks the same of
//! its retransmissions (every one DSACKed); QUIC acknowledges the original
//! packet number instead.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use sift_cc::{LossVerdict, SpuriousCongestionEvent};

use super::{Recovery, SpaceId, VerdictRecord};

/// Packets declared lost that are remembered, at most: about two windows
/// of a 2000-packet flight; an older one acknowledged late is no longer
/// recognised (its bytes were counted lost long ago).
pub const LOST_MEMORY: usize = 4096;

/// What is remembered of a packet declared lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LostPacket {
    /// When it was sent.
    pub time_sent: Instant,
    /// Its size on the wire.
    pub size: u64,
}

/// Recently declared-lost packets, oldest forgotten first.
#[derive(Clone, Debug, Default)]
pub struct LostMemory {
    packets: BTreeMap<(SpaceId, u64), LostPacket>,
}

impl LostMemory {
    /// Remembers a packet declared lost, forgetting the oldest beyond
    /// [`LOST_MEMORY`]. A forgotten packet that belonged to the recovery
    /// episode keeps it from ever being undone: it can no longer be matched.
    pub fn remember(&mut self, space: SpaceId, packet_number: u64, packet: LostPacket) {
        self.packets.insert((space, packet_number), packet);
        while self.packets.len() > LOST_MEMORY {
            self.packets.pop_first();
        }
    }

    /// Takes out every remembered packet of `space` whose number lies in
    /// `first..=last`, in ascending order. Touches only packets that exist,
    /// so a forged range costs nothing.
    pub fn take_range(&mut self, space: SpaceId, first: u64, last: u64) -> Vec<(u64, LostPacket)> {
        if first > last {
            return Vec::new();
        }
        let keys: Vec<(SpaceId, u64)> = self
            .packets
            .range((space, first)..=(space, last))
            .map(|(key, _)| *key)
            .collect();
        keys.into_iter()
            .filter_map(|key| self.packets.remove(&key).map(|p| (key.1, p)))
            .collect()
    }

    /// Forgets every packet of `space` (its keys were discarded).
    pub fn forget_space(&mut self, space: SpaceId) {
        self.packets.retain(|(s, _), _| *s != space);
    }

    /// Packets remembered.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.packets.len()
    }
}

/// The latest congestion event and the packets that must all arrive for it
/// to be undone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecoveryEpisode {
    /// The space of the congestion event.
    pub space: SpaceId,
    /// The `now` of the congestion event.
    pub started_at: Instant,
    /// The packets of the congestion event (its `LossEvent::lost_packets`).
    pub starting_packets: Vec<u64>,
    /// The controller's verdict on them.
    pub verdict: LossVerdict,
    /// Declared lost in the episode and not acknowledged yet.
    outstanding: BTreeSet<u64>,
    /// Packets of another space were lost during the episode.
    spoiled: bool,
}

/// What acknowledging late packets did to an episode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EpisodeProgress {
    /// Packets of the episode are still unaccounted for.
    Pending,
    /// Every packet of the episode arrived: undo it.
    AllArrived,
}

impl RecoveryEpisode {
    /// An episode begun by a congestion event on `lost` with `verdict`.
    pub fn new(space: SpaceId, started_at: Instant, lost: &[u64], verdict: LossVerdict) -> Self {
        Self {
            space,
            started_at,
            starting_packets: lost.to_vec(),
            verdict,
            outstanding: lost.iter().copied().collect(),
            spoiled: false,
        }
    }

    /// More packets of `space` were declared lost during the episode's
    /// recovery period: they must arrive too.
    pub fn add_losses(&mut self, space: SpaceId, lost: impl IntoIterator<Item = u64>) {
        if space == self.space {
            self.outstanding.extend(lost);
        } else {
            // Losses in another space during the episode: not provably
            // spurious through this episode's space.
            self.spoiled = true;
        }
    }

    /// `packet_numbers` of `space`, declared lost, were acknowledged.
    pub fn on_arrived(
        &mut self,
        space: SpaceId,
        packet_numbers: impl IntoIterator<Item = u64>,
    ) -> EpisodeProgress {
        if space == self.space {
            for packet_number in packet_numbers {
                self.outstanding.remove(&packet_number);
            }
        }
        if self.outstanding.is_empty() && !self.spoiled {
            EpisodeProgress::AllArrived
        } else {
            EpisodeProgress::Pending
        }
    }
}

impl<F> Recovery<F> {
    /// `late` packets of `space`, declared lost, were acknowledged: widen
    /// the reordering window, and undo the episode if nothing in it was
    /// really lost.
    pub(super) fn on_spurious_losses(
        &mut self,
        space: SpaceId,
        late: &[(u64, LostPacket)],
        now: Instant,
    ) {
        self.stats.spurious_losses += late.len() as u64;
        let state = &self.spaces[space.index()];
        let largest_acked = state.largest_acked.unwrap_or(0);
        let largest_sent = state.largest_sent.unwrap_or(largest_acked);
        let rtt_basis = self.rtt.latest().max(self.rtt.smoothed());
        let step = self.rtt.min() / 4;
        for (packet_number, packet) in late {
            let age = now.saturating_duration_since(packet.time_sent);
            self.reordering.on_spurious_loss(
                *packet_number,
                largest_acked,
                largest_sent,
                age.saturating_sub(rtt_basis),
                step,
            );
        }
        let Some(episode) = self.episode.as_mut() else {
            return;
        };
        let progress = episode.on_arrived(space, late.iter().map(|(pn, _)| *pn));
        if progress == EpisodeProgress::AllArrived && self.config.undo_spurious_congestion {
            if let Some(episode) = self.episode.take() {
                self.undo_congestion(episode, now);
            }
        }
    }

    /// Tells the controller the episode's congestion event was spurious,
    /// ends its recovery period, and withdraws its verdict.
    fn undo_congestion(&mut self, episode: RecoveryEpisode, now: Instant) {
        self.stats.undone_congestion_events += 1;
        self.recovery_start = None;
        self.cc.on_spurious_congestion(&SpuriousCongestionEvent {
            now,
            congestion_at: episode.started_at,
            lost_packets: episode.starting_packets.clone(),
            rtt: self.rtt.sample(),
        });
        if self.noting() {
            self.note(super::RecoveryNote::Undone {
                at: now,
                space: episode.space,
                packet_numbers: episode.starting_packets.clone(),
                verdict: episode.verdict,
                cwnd: self.cc.window(),
            });
        }
        self.verdicts.push(VerdictRecord {
            space: episode.space,
            packet_numbers: episode.starting_packets,
            verdict: episode.verdict,
            undone: true,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lost(at: Instant) -> LostPacket {
        LostPacket {
            time_sent: at,
            size: 1200,
        }
    }

    #[test]
    fn memory_is_bounded_and_forgets_the_oldest() {
        let t0 = Instant::now();
        let mut memory = LostMemory::default();
        for pn in 0..=LOST_MEMORY as u64 {
            memory.remember(SpaceId::Data, pn, lost(t0));
        }
        assert_eq!(memory.len(), LOST_MEMORY);
        assert!(memory.take_range(SpaceId::Data, 0, 0).is_empty());
        let taken = memory.take_range(SpaceId::Data, 1, 2);
        assert_eq!(taken.iter().map(|(pn, _)| *pn).collect::<Vec<_>>(), [1, 2]);
        assert!(memory.take_range(SpaceId::Data, 5, 1 << 62).len() > 4000);
        assert!(memory.take_range(SpaceId::Initial, 0, u64::MAX).is_empty());
    }

    #[test]
    fn an_episode_is_undone_only_when_every_loss_in_it_arrived() {
        let t0 = Instant::now();
        let mut episode = RecoveryEpisode::new(SpaceId::Data, t0, &[4, 5], LossVerdict::Random);
        episode.add_losses(SpaceId::Data, [9]);
        assert_eq!(
            episode.on_arrived(SpaceId::Data, [4, 5]),
            EpisodeProgress::Pending
        );
        assert_eq!(
            episode.on_arrived(SpaceId::Data, [9]),
            EpisodeProgress::AllArrived
        );
        assert_eq!(episode.starting_packets, [4, 5]);
    }

    #[test]
    fn losses_in_another_space_keep_the_episode_from_being_undone() {
        let t0 = Instant::now();
        let mut episode = RecoveryEpisode::new(SpaceId::Data, t0, &[4], LossVerdict::Random);
        episode.add_losses(SpaceId::Handshake, [0]);
        assert_eq!(
            episode.on_arrived(SpaceId::Data, [4]),
            EpisodeProgress::Pending
        );
    }
}
