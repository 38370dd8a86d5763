//! Corruption notices on the sender's side (DESIGN §5, HACK): a CORRUPTED
//! frame takes the packets it names out of flight without a congestion
//! event, and names that match nothing outstanding are counted, not trusted.

use std::ops::RangeInclusive;
use std::time::Instant;

use sift_cc::CorruptionEvent;

use super::{Recovery, SentPacket, SpaceId, CORRUPTION_MEMORY};

impl<F> Recovery<F> {
    /// A CORRUPTED frame named `ranges` in `space`. Outstanding packets named
    /// there leave flight without a congestion event and are returned for
    /// retransmission. Call before processing an ACK in the same packet, or a
    /// corrupted packet with three later acks is counted as congestion.
    pub fn on_corrupted(
        &mut self,
        space: SpaceId,
        ranges: impl Iterator<Item = RangeInclusive<u64>>,
        now: Instant,
    ) -> Vec<SentPacket<F>> {
        let mut corrupted = Vec::new();
        for range in ranges {
            let before = corrupted.len();
            self.spaces[space.index()]
                .ledger
                .remove_range(range.clone(), &mut corrupted);
            let named = range.end().saturating_sub(*range.start()).saturating_add(1);
            let found = (corrupted.len() - before) as u64;
            let repeats = self
                .recently_corrupted
                .range((space, *range.start())..=(space, *range.end()))
                .count() as u64;
            self.stats.ignored_corruption_names = self
                .stats
                .ignored_corruption_names
                .saturating_add(named.saturating_sub(found).saturating_sub(repeats));
        }
        if corrupted.is_empty() {
            return corrupted;
        }
        let mut corrupted_bytes = 0;
        for packet in &corrupted {
            self.recently_corrupted
                .insert((space, packet.packet_number));
            if packet.in_flight {
                self.bytes_in_flight = self.bytes_in_flight.saturating_sub(packet.size);
                corrupted_bytes += packet.size;
                // It crossed the path: delivered for the rate model, not lost.
                self.rate.on_corrupted(packet.size, now);
            }
        }
        while self.recently_corrupted.len() > CORRUPTION_MEMORY {
            self.recently_corrupted.pop_first();
        }
        self.stats.corrupted_packets += corrupted.len() as u64;
        self.cc.on_corruption(&CorruptionEvent {
            now,
            corrupted_packets: corrupted.iter().map(|p| p.packet_number).collect(),
            corrupted_bytes,
            bytes_in_flight: self.bytes_in_flight,
            rtt: self.rtt.sample(),
        });
        // The notice proves the path is alive: it resets PTO backoff as an
        // ACK does.
        self.pto_count = 0;
        corrupted
    }
}
