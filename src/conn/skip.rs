//! Skipped packet numbers (RFC 9000 §21.4): now and then the sender leaves
//! a 1-RTT packet number unused. A receiver cannot tell a skipped number
//! from a lost packet, so
//!
//! - an ACK that covers a skipped number acknowledges a packet that never
//!   existed: an optimistic ACK, and the connection closes
//!   (PROTOCOL_VIOLATION, RFC 9000 §13.1);
//! - a CORRUPTED frame that names one names a gap, not a damaged packet
//!   (whose authenticated header it would have needed): the receiver claims
//!   losses as corruption, and its notices count as losses from then on
//!   (`recovery::corruption`).
//!
//! Gaps are drawn from the connection's seeded RNG, uniformly in
//! `1..=2·MEAN_SKIP_GAP`, so a run repeats exactly and a receiver cannot
//! predict them. One number in [`MEAN_SKIP_GAP`] costs a packet number and,
//! at the receiver, one more ACK range for a while.

use std::collections::VecDeque;
use std::ops::RangeInclusive;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// On average one packet number in this many is skipped.
pub const MEAN_SKIP_GAP: u64 = 128;
/// Skipped numbers remembered (about 8000 packets of history), oldest
/// forgotten first: a receiver's ACK ranges stop reaching that far back
/// long before.
const REMEMBERED_SKIPS: usize = 64;

/// Which 1-RTT packet numbers were skipped, and which is skipped next.
#[derive(Debug)]
pub struct PacketNumberSkips {
    rng: ChaCha8Rng,
    next_skip: u64,
    skipped: VecDeque<u64>,
    total: u64,
}

impl PacketNumberSkips {
    /// Skips drawn from `rng`, starting above packet number 0.
    pub fn from_rng(mut rng: ChaCha8Rng) -> Self {
        let next_skip = rng.random_range(1..=2 * MEAN_SKIP_GAP);
        Self {
            rng,
            next_skip,
            skipped: VecDeque::with_capacity(REMEMBERED_SKIPS),
            total: 0,
        }
    }

    /// The packet number to use next, given the next unused one; moves
    /// `next` past a number due to be skipped. Idempotent until `next` is
    /// used.
    pub fn next_packet_number(&mut self, next: &mut u64) -> u64 {
        if *next >= self.next_skip {
            let skipped = *next;
            if self.skipped.len() == REMEMBERED_SKIPS {
                self.skipped.pop_front();
            }
            self.skipped.push_back(skipped);
            self.total += 1;
            *next += 1;
            self.next_skip = *next + self.rng.random_range(1..=2 * MEAN_SKIP_GAP);
        }
        *next
    }

    /// The first skipped number in `range`, if any.
    pub fn first_skipped_in(&self, range: &RangeInclusive<u64>) -> Option<u64> {
        // Kept in increasing order: one binary search per ACK range.
        let first = self.skipped.partition_point(|&pn| pn < *range.start());
        self.skipped
            .get(first)
            .copied()
            .filter(|pn| pn <= range.end())
    }

    /// Numbers skipped so far (remembered or not).
    pub fn total(&self) -> u64 {
        self.total
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    /// Sends `packets` packets, returning the numbers used.
    fn send(skips: &mut PacketNumberSkips, next: &mut u64, packets: usize) -> Vec<u64> {
        (0..packets)
            .map(|_| {
                let pn = skips.next_packet_number(next);
                *next += 1;
                pn
            })
            .collect()
    }

    #[test]
    fn skipped_numbers_are_never_used_and_are_recognised() {
        let mut skips = PacketNumberSkips::from_rng(ChaCha8Rng::seed_from_u64(7));
        let mut next = 0;
        let used = send(&mut skips, &mut next, 10_000);
        let skipped: Vec<u64> = (0..next).filter(|pn| !used.contains(pn)).collect();
        // About one in MEAN_SKIP_GAP, each a lone number.
        assert!((50..110).contains(&skipped.len()), "{}", skipped.len());
        assert!(skipped.windows(2).all(|w| w[1] > w[0] + 1));
        for &pn in skipped.iter().rev().take(REMEMBERED_SKIPS) {
            assert_eq!(skips.first_skipped_in(&(pn..=pn)), Some(pn));
            assert_eq!(skips.first_skipped_in(&(pn - 1..=pn + 5)), Some(pn));
        }
        for &pn in used.iter().rev().take(1000) {
            assert_eq!(skips.first_skipped_in(&(pn..=pn)), None);
        }
    }

    #[test]
    fn asking_twice_without_sending_skips_once() {
        let mut skips = PacketNumberSkips::from_rng(ChaCha8Rng::seed_from_u64(1));
        let mut next = skips.next_skip;
        let first = skips.next_packet_number(&mut next);
        assert_eq!(skips.next_packet_number(&mut next), first);
        assert_eq!(first, skips.skipped[0] + 1);
    }

    #[test]
    fn the_same_seed_skips_the_same_numbers() {
        let run = |seed| {
            let mut skips = PacketNumberSkips::from_rng(ChaCha8Rng::seed_from_u64(seed));
            let mut next = 0;
            send(&mut skips, &mut next, 2_000)
        };
        assert_eq!(run(3), run(3));
        assert_ne!(run(3), run(4));
    }
}
