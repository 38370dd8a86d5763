//! The bottleneck queue's discipline: netem's drop-tail FIFO, or an active
//! queue manager that drops or ECN-marks at dequeue, in tc's words
//! (`tc-codel(8)`, `tc-dualpi2(8)`).
//!
//! The queue sits in front of the serializer, where packets wait and a
//! sojourn time exists; a discipline decides when the serializer takes the
//! next packet, so CoDel and DualPI2 drop at dequeue, as their Linux qdiscs
//! do by default. Their drops come after `Link::send` said the packet was
//! on its way: the link reports them through `Link::poll_late_drop`.
//!
//! The disciplines read no clock and draw from the link's own seeded
//! stream (`Stage::Aqm`); they must not touch a packet beyond its length,
//! its enqueue time and its ECN codepoint.

mod codel;
mod dualpi2;

use std::time::Instant;

use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::queue::{DropTailQueue, QueueLimit};
use super::{LinkCounters, Packet};
use crate::wire::Ecn;

pub use codel::{Codel, CODEL_DEFAULT_INTERVAL, CODEL_DEFAULT_TARGET};
pub use dualpi2::DualPi2;

use codel::CodelState;
use dualpi2::DualPi2State;

/// A device MTU as the Linux AQMs see it (`psched_mtu`: 1500 bytes of
/// Ethernet payload plus its 14-byte header). CoDel does not drop while
/// at most this much waits (`sch_codel.c`, `params.mtu`); DualPI2 neither
/// drops nor marks below two of them (`sch_dualpi2.c`, `must_drop`).
pub const DEVICE_MTU_BYTES: usize = 1514;

/// An active queue manager replacing the drop-tail discipline. The queue's
/// limit stays the link's `limit` (`LinkConfig::queue`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Aqm {
    /// CoDel (RFC 8289), as `tc qdisc … codel`.
    Codel(Codel),
    /// DualPI2 (RFC 9332), as `tc qdisc … dualpi2`.
    Dualpi2(DualPi2),
}

impl Aqm {
    /// Checks every parameter is in range.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            Aqm::Codel(c) => c.validate(),
            Aqm::Dualpi2(d) => d.validate(),
        }
    }
}

/// Marks `packet` CE instead of dropping it, if it is ECN-capable (an
/// already-CE packet counts: it stays CE and is not dropped, as Linux's
/// `INET_ECN_set_ce` has it).
fn try_mark(packet: &mut Packet) -> bool {
    if packet.ecn.is_ecn_capable() {
        packet.ecn = Ecn::Ce;
        true
    } else {
        false
    }
}

/// The queue in front of the serializer, with its discipline. It holds
/// only waiting packets; the one being serialized has left it.
pub(super) enum Discipline {
    DropTail(DropTailQueue<Packet>),
    Codel(Box<CodelState>),
    DualPi2(Box<DualPi2State>),
}

impl Discipline {
    pub(super) fn new(limit: QueueLimit, aqm: Option<&Aqm>) -> Self {
        match aqm {
            None => Discipline::DropTail(DropTailQueue::new(limit)),
            Some(Aqm::Codel(params)) => {
                Discipline::Codel(Box::new(CodelState::new(limit, params.clone())))
            }
            Some(Aqm::Dualpi2(params)) => {
                Discipline::DualPi2(Box::new(DualPi2State::new(limit, params.clone())))
            }
        }
    }

    /// Whether a packet of `len` bytes would be refused now (tail drop at
    /// the limit, for every discipline).
    pub(super) fn would_drop(&self, len: usize) -> bool {
        match self {
            Discipline::DropTail(q) => q.would_drop(len),
            Discipline::Codel(c) => c.queue.would_drop(len),
            Discipline::DualPi2(d) => d.would_drop(len),
        }
    }

    /// Queues `packet` at the tail, or at the head of the waiting packets
    /// (`front`, netem's reorder path); hands it back if the queue is full.
    pub(super) fn enqueue(
        &mut self,
        packet: Packet,
        front: bool,
        now: Instant,
    ) -> Result<(), Packet> {
        let queue = match self {
            Discipline::DropTail(q) => q,
            Discipline::Codel(c) => &mut c.queue,
            Discipline::DualPi2(d) => return d.enqueue(packet, front, now),
        };
        if front {
            queue.push_front(packet)
        } else {
            queue.push_back(packet)
        }
    }

    /// The next packet for the serializer at `now`, after the discipline
    /// has dropped (into `dropped`) or marked what it chose to.
    pub(super) fn dequeue(
        &mut self,
        now: Instant,
        rng: &mut ChaCha8Rng,
        counters: &mut LinkCounters,
        dropped: &mut Vec<Packet>,
    ) -> Option<Packet> {
        match self {
            Discipline::DropTail(q) => q.pop_front(),
            Discipline::Codel(c) => c.dequeue(now, counters, dropped),
            Discipline::DualPi2(d) => d.dequeue(now, rng, counters, dropped),
        }
    }

    /// Packets waiting.
    pub(super) fn len(&self) -> usize {
        match self {
            Discipline::DropTail(q) => q.len(),
            Discipline::Codel(c) => c.queue.len(),
            Discipline::DualPi2(d) => d.len(),
        }
    }
}

#[cfg(test)]
mod tests;
