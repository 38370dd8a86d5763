//! Corruption notices on the sender's side (DESIGN §5, HACK): a CORRUPTED
//! frame takes the packets it names out of flight without a congestion
//! event, and names that match nothing outstanding are counted, not trusted.
//!
//! A notice is the receiver's word, and a receiver that called every loss
//! corruption would never see a window cut. Two defences bound what lying
//! buys (SECURITY.md, "Trust model of corruption notices"):
//!
//! - **Witnesses.** The connection skips a packet number now and then
//!   (`conn::skip`). A receiver only ever names packets whose authenticated
//!   header it received, so naming a skipped number proves it names gaps it
//!   never saw; the connection then calls [`Recovery::distrust_notices`]
//!   and every later notice counts as a loss. A receiver cannot tell a
//!   skipped number from a lost packet: both are gaps.
//! - **A budget.** Notices are honoured for at most one in
//!   [`HONEST_CORRUPTION_SHARE`] of the packets that crossed the path
//!   (acknowledged or named corrupted), with credit for a burst: a link that
//!   damages more than a quarter of what it carries is beyond what
//!   corruption notices are for (HACK measured 2–15%), and notices beyond
//!   the budget are losses, with the congestion response that follows.
//!   Honest receivers on any link sift targets never reach it; a liar that
//!   avoids every skipped number still cannot hide more than that share.

use std::ops::RangeInclusive;
use std::time::Instant;

use sift_cc::CorruptionEvent;

use super::{Recovery, SentPacket, SpaceId, CORRUPTION_MEMORY};

/// Notices are honoured for at most one in this many packets that crossed
/// the path.
pub const HONEST_CORRUPTION_SHARE: u64 = 4;
/// Notices a connection may honour before any packet was acknowledged.
pub const INITIAL_CORRUPTION_CREDIT: u64 = 16;
/// The longest run of notices honoured back to back (a burst of errors on
/// a radio link): the credit saved up at most.
pub const MAX_CORRUPTION_CREDIT: u64 = 64;

/// Credit for honouring notices, in units of 1/[`HONEST_CORRUPTION_SHARE`]
/// of a notice: each packet that crosses the path earns one unit, each
/// honoured notice costs a whole notice.
#[derive(Debug)]
pub(super) struct CorruptionBudget {
    units: u64,
    distrusted: bool,
}

impl Default for CorruptionBudget {
    fn default() -> Self {
        Self {
            units: INITIAL_CORRUPTION_CREDIT * HONEST_CORRUPTION_SHARE,
            distrusted: false,
        }
    }
}

impl CorruptionBudget {
    /// `packets` more packets crossed the path.
    pub(super) fn earn(&mut self, packets: u64) {
        self.units = self
            .units
            .saturating_add(packets)
            .min(MAX_CORRUPTION_CREDIT * HONEST_CORRUPTION_SHARE);
    }

    /// Whether one more notice may be honoured; takes its cost if so.
    fn spend(&mut self) -> bool {
        if self.distrusted || self.units < HONEST_CORRUPTION_SHARE {
            return false;
        }
        self.units -= HONEST_CORRUPTION_SHARE;
        true
    }
}

impl<F> Recovery<F> {
    /// The peer named a packet number we never sent in a CORRUPTED frame
    /// (one we skipped): it names gaps, not damaged packets. Its notices
    /// count as losses from now on.
    pub fn distrust_notices(&mut self) {
        self.corruption_budget.distrusted = true;
    }

    /// Whether [`Recovery::distrust_notices`] was called.
    pub fn notices_distrusted(&self) -> bool {
        self.corruption_budget.distrusted
    }

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
        // Within the budget a named packet crossed the path (delivered for
        // the rate model); beyond it, the notice is a loss like any other.
        let mut honoured = Vec::with_capacity(corrupted.len());
        let mut over_budget = Vec::new();
        for packet in corrupted {
            self.recently_corrupted
                .insert((space, packet.packet_number));
            self.corruption_budget.earn(1);
            if self.corruption_budget.spend() {
                honoured.push(packet);
            } else {
                over_budget.push(packet);
            }
        }
        while self.recently_corrupted.len() > CORRUPTION_MEMORY {
            self.recently_corrupted.pop_first();
        }
        if !over_budget.is_empty() {
            self.stats.corruption_names_over_budget += over_budget.len() as u64;
            self.on_packets_lost(space, &over_budget, now);
        }
        let corrupted = honoured;
        if corrupted.is_empty() {
            return over_budget;
        }
        let mut corrupted_bytes = 0;
        for packet in &corrupted {
            if packet.in_flight {
                self.bytes_in_flight = self.bytes_in_flight.saturating_sub(packet.size);
                corrupted_bytes += packet.size;
                // It crossed the path: delivered for the rate model, not lost.
                self.rate.on_corrupted(packet.size, now);
            }
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
        let mut corrupted = corrupted;
        corrupted.extend(over_budget);
        corrupted
    }
}
