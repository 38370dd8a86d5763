//! Slotting (netem `slot MIN [MAX] [packets N] [bytes N]`): packets leave
//! the link only at slot starts, in bursts of at most N packets / N bytes
//! per slot, as on Wi-Fi or DOCSIS links that send in aggregates.
//!
//! As the kernel's `netem_dequeue()`: a slot serves packets that were ready
//! by its start, while its budget lasts (a packet is sent if any bytes are
//! left, so the last one may overshoot the byte budget). When the budget is
//! spent the next slot starts MIN..MAX (uniform) later. A packet that
//! becomes ready after the pending slot's start opens a new slot MIN..MAX
//! after it becomes ready. sift evaluates this at each packet's ready time;
//! the kernel at its dequeue calls, which it also makes at enqueue time, so
//! idle-link timings can differ slightly. netem's `slot distribution …` form
//! is not supported.

use std::time::{Duration, Instant};

use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::random::unit;

/// netem's slot parameters.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slot {
    /// Shortest spacing between slot starts.
    #[serde(with = "super::config::duration_ms")]
    pub min_ms: Duration,
    /// Longest spacing (≥ `min_ms`); equal to it for fixed slots.
    #[serde(with = "super::config::duration_ms")]
    pub max_ms: Duration,
    /// Most packets sent per slot; `None` = no packet limit.
    #[serde(default)]
    pub packets: Option<u32>,
    /// Most bytes sent per slot; `None` = no byte limit.
    #[serde(default)]
    pub bytes: Option<u64>,
}

#[derive(Clone, Copy, Debug)]
struct OpenSlot {
    start: Instant,
    packets_left: i64,
    bytes_left: i64,
}

/// The slot gate of one link direction.
#[derive(Clone, Debug)]
pub(crate) struct SlotGate {
    slot: Slot,
    pending: Option<OpenSlot>,
}

impl SlotGate {
    pub(crate) fn new(slot: Slot) -> Self {
        Self {
            slot,
            pending: None,
        }
    }

    fn open(&self, start: Instant) -> OpenSlot {
        OpenSlot {
            start,
            packets_left: self.slot.packets.map_or(i64::MAX, i64::from),
            bytes_left: self
                .slot
                .bytes
                .map_or(i64::MAX, |b| i64::try_from(b).unwrap_or(i64::MAX)),
        }
    }

    fn spacing(&self, rng: &mut ChaCha8Rng) -> Duration {
        let min = self.slot.min_ms;
        let max = self.slot.max_ms.max(min);
        if max == min {
            return min;
        }
        min + (max - min).mul_f64(unit(rng))
    }

    /// When a packet of `len` bytes that is ready at `ready` leaves the
    /// link. Call in order of readiness.
    pub(crate) fn departure(
        &mut self,
        ready: Instant,
        len: usize,
        rng: &mut ChaCha8Rng,
    ) -> Instant {
        let mut slot = match self.pending {
            Some(slot) if slot.start >= ready => slot,
            _ => self.open(ready + self.spacing(rng)),
        };
        let departs = slot.start;
        slot.packets_left -= 1;
        slot.bytes_left = slot
            .bytes_left
            .saturating_sub(i64::try_from(len).unwrap_or(i64::MAX));
        if slot.packets_left <= 0 || slot.bytes_left <= 0 {
            slot = self.open(slot.start + self.spacing(rng));
        }
        self.pending = Some(slot);
        departs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::link::random::{stage_rng, Stage};

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn fixed_slots_release_at_most_n_packets_each() {
        let t0 = Instant::now();
        let mut rng = stage_rng(1, Stage::Slot);
        let mut gate = SlotGate::new(Slot {
            min_ms: ms(10),
            max_ms: ms(10),
            packets: Some(2),
            bytes: None,
        });
        // Five packets ready at t0: a slot opens 10 ms later and carries two;
        // the next slots follow every 10 ms.
        let departures: Vec<Duration> = (0..5)
            .map(|_| gate.departure(t0, 100, &mut rng) - t0)
            .collect();
        assert_eq!(departures, [ms(10), ms(10), ms(20), ms(20), ms(30)]);
        // A packet ready after the pending slot (t0 + 40 ms) waits a full spacing.
        assert_eq!(gate.departure(t0 + ms(45), 100, &mut rng) - t0, ms(55));
    }

    #[test]
    fn byte_budget_lets_the_last_packet_overshoot() {
        let t0 = Instant::now();
        let mut rng = stage_rng(1, Stage::Slot);
        let mut gate = SlotGate::new(Slot {
            min_ms: ms(5),
            max_ms: ms(5),
            packets: None,
            bytes: Some(1500),
        });
        // 1000 + 1000 > 1500: both go in the first slot, the third waits.
        let departures: Vec<Duration> = (0..3)
            .map(|_| gate.departure(t0, 1000, &mut rng) - t0)
            .collect();
        assert_eq!(departures, [ms(5), ms(5), ms(10)]);
    }

    #[test]
    fn random_spacing_stays_within_min_and_max() {
        let t0 = Instant::now();
        let mut rng = stage_rng(3, Stage::Slot);
        let mut gate = SlotGate::new(Slot {
            min_ms: ms(2),
            max_ms: ms(8),
            packets: Some(1),
            bytes: None,
        });
        let mut last = t0;
        for _ in 0..1000 {
            let d = gate.departure(t0, 10, &mut rng);
            let gap = d - last;
            assert!(gap >= ms(2) && gap <= ms(8), "{gap:?}");
            last = d;
        }
    }
}
