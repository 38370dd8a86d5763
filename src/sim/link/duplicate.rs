//! Duplication (netem `duplicate P [CORR]`): with probability P a second
//! copy of the packet enters the link right behind the original.
//!
//! As in netem, the copy is made after the loss decision and is never
//! duplicated again; unlike netem (which re-enqueues the copy at the root
//! qdisc, where it meets the loss model a second time), the copy only meets
//! the corruption model (independently of the original), the reorder gap and
//! the queue.

use serde::{Deserialize, Serialize};

/// A probability with netem's optional packet-to-packet correlation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Correlated {
    /// Probability per packet, 0.0..=1.0.
    pub probability: f64,
    /// Correlation with the previous packet's draw, 0.0..=1.0.
    pub correlation: f64,
}

impl Correlated {
    /// True if the event never happens.
    pub fn is_none(&self) -> bool {
        self.probability == 0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::link::random::{stage_rng, CorrelatedEvent, Stage};

    #[test]
    fn zero_probability_is_none() {
        assert!(Correlated::default().is_none());
        let mut rng = stage_rng(1, Stage::Duplicate);
        let mut event = CorrelatedEvent::new(0.0, 0.9);
        assert!((0..1000).all(|_| !event.happens(&mut rng)));
    }
}
