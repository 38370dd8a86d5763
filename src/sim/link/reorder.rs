//! Reordering with netem's semantics (`reorder P [CORR] [gap DISTANCE]`).
//!
//! netem counts packets sent on the normal (delayed) path. Once DISTANCE − 1
//! packets have gone that way, each further packet is, with probability P,
//! "sent immediately": it skips the delay and goes to the head of the queue,
//! and the count restarts; otherwise it is delayed and the count goes on.
//! Without `gap`, DISTANCE = 1 (iproute2 sets it), so every packet is sent
//! immediately with probability P. `gap` without `reorder` is an error, and
//! reordering needs a delay to reorder against (both as iproute2).
//! Example: `delay 10ms reorder 100% gap 5` sends packets 5, 10, 15, …
//! (ids 4, 9, 14, … counting from 0) at once and delays the others.

use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::random::CorrelatedEvent;

/// netem's reorder parameters.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reorder {
    /// Probability that an eligible packet is sent immediately.
    pub probability: f64,
    /// Correlation of that draw with the previous one.
    #[serde(default)]
    pub correlation: f64,
    /// DISTANCE: packets 1..DISTANCE−1 after a reorder are always delayed.
    #[serde(default = "default_gap")]
    pub gap: u32,
}

fn default_gap() -> u32 {
    1
}

/// The reorder stage of one link direction.
#[derive(Clone, Debug)]
pub(crate) struct ReorderProcess {
    gap: u32,
    /// Packets sent on the normal path since the last reorder (netem `counter`).
    delayed_since_reorder: u32,
    event: CorrelatedEvent,
}

impl ReorderProcess {
    pub(crate) fn new(reorder: &Reorder) -> Self {
        Self {
            gap: reorder.gap.max(1),
            delayed_since_reorder: 0,
            event: CorrelatedEvent::new(reorder.probability, reorder.correlation),
        }
    }

    /// Whether this packet jumps ahead. Draws only for eligible packets,
    /// as the kernel does.
    pub(crate) fn send_immediately(&mut self, rng: &mut ChaCha8Rng) -> bool {
        if self.delayed_since_reorder < self.gap - 1 || !self.event.happens(rng) {
            self.delayed_since_reorder = self.delayed_since_reorder.saturating_add(1);
            return false;
        }
        self.delayed_since_reorder = 0;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::link::random::{stage_rng, Stage};

    #[test]
    fn gap_five_at_full_probability_reorders_every_fifth_packet() {
        let mut rng = stage_rng(1, Stage::Reorder);
        let mut p = ReorderProcess::new(&Reorder {
            probability: 1.0,
            correlation: 0.0,
            gap: 5,
        });
        let jumped: Vec<usize> = (0..15).filter(|_| p.send_immediately(&mut rng)).collect();
        assert_eq!(jumped, [4, 9, 14]);
    }

    #[test]
    fn without_gap_each_packet_jumps_with_probability_p() {
        // n = 100 000, p = 0.25: σ = sqrt(n·p·(1−p)) ≈ 137.
        let mut rng = stage_rng(2, Stage::Reorder);
        let mut p = ReorderProcess::new(&Reorder {
            probability: 0.25,
            correlation: 0.0,
            gap: 1,
        });
        let jumped = (0..100_000)
            .filter(|_| p.send_immediately(&mut rng))
            .count() as f64;
        assert!((jumped - 25_000.0).abs() < 5.0 * 137.0, "{jumped}");
    }
}
