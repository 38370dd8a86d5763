//! One direction of a link, as a chain of stages a packet passes in order:
//!
//! ```text
//! send ─▶ mtu ─▶ bleach ─▶ outage ─▶ loss (or a CE mark, with `ecn`) ─▶ duplicate
//!      ─▶ corrupt ─▶ reorder ─▶ queue (drop-tail, CoDel or DualPI2: `aqm`)
//!      ─▶ serializer (rate or rate steps, framing, stalls) ─▶ propagation (delay, jitter)
//!      ─▶ slot gate ─▶ poll_delivery
//! ```
//!
//! Each packet carries its ECN codepoint (`wire::Ecn`) through the chain:
//! `send` takes the one it was sent with, and `Delivery::ecn` is the one it
//! leaves with — CE if a stage marked it, Not-ECT if the path bleached it.
//!
//! The same chain serves the deterministic simulator and the real-time
//! emulator `sift-link`; there is no second copy of the logic. Time is the
//! caller's: every call takes `now`, nothing here reads a clock. Randomness
//! comes from a seeded ChaCha RNG with one independent stream per stage, so a
//! link repeats bit-for-bit for a seed, and enabling one impairment does not
//! change what another decides. The link keeps the ground truth of every
//! packet (`Fate`, `Delivery::corruption`, `Delivery::duplicate`): that is
//! what lets the simulator score a controller's loss verdicts. It must not
//! know anything about the packets' contents beyond the header-length hook.
//!
//! Configs come from scenario-file tables or `tc netem` strings
//! (`LinkConfig::from_netem`, syntax in `netem.rs`).
//!
//! # Where sift differs from netem
//!
//! - **Order of rate and delay.** netem computes, in one qdisc, a send time
//!   of max(last packet's, now + delay) + size/rate: the delay overlaps the
//!   queueing. sift models a bottleneck router then a wire: the packet waits
//!   in the queue, is serialized at `rate`, then propagates for `delay`. An
//!   isolated packet takes delay + size/rate in both.
//! - **`limit`.** netem's limit counts every packet the qdisc holds,
//!   including those only being delayed (`delay 100ms limit 10` caps the
//!   packets in flight). sift's limit bounds the queue in front of the
//!   serializer, not counting the packet on it; packets propagating are on
//!   the wire and unbounded. Without `rate` the queue never fills.
//! - **Jitter and order: as netem.** netem (`sch_netem.c`, `netem_enqueue`)
//!   gives each packet its own delay and sends in time order (`tfifo`), so
//!   without `rate` jitter wider than the packet spacing reorders; with
//!   `rate` each send time is max(previous send time, now + delay) + size /
//!   rate, so jitter never reorders. sift does the same: behind a rate a
//!   packet is ready at max(its own time, the previous packet's), without one
//!   every packet keeps its own delay. `jitter-reorder` (`jitter_reorders`)
//!   asks for the per-packet delay behind a rate too, as netem does with the
//!   rate in a separate qdisc (`tbf`) — the radio hop behind a bottleneck.
//! - **Correlation.** netem mixes uniforms, (1 − ρ)·fresh + ρ·last, which
//!   narrows the distribution and lowers the rate of rare events below what
//!   was asked. sift repeats the previous draw with probability ρ, which
//!   keeps the asked rate and distribution exactly (`random.rs`).
//! - **Distributions.** Computed from their quantile functions rather than
//!   netem's 4096-entry tables, clipped at ±4σ as the tables are
//!   (`delay.rs`). With no `distribution`, the jitter is uniform: that is
//!   what the kernel does, although the man page says normal.
//! - **Corruption is delivered.** netem flips one bit and the receiver's UDP
//!   checksum then discards the packet. sift hands the corrupted bytes to the
//!   receiver and records which regions were hit; it adds bit error rates,
//!   bursts and placement (`corrupt.rs`).
//! - **Duplicates.** The copy is made after the loss decision and does not
//!   meet the loss model again (netem re-enqueues it at the root qdisc).
//! - **Reorder.** A packet "sent immediately" jumps to the head of the queue
//!   and skips the propagation delay, but is still serialized at `rate`.
//! - **Slots** are evaluated at each packet's ready time, not at dequeue
//!   calls (`slot.rs`); `slot distribution` is not supported.
//! - **Outages**, **stalls** (the serializer pauses, packets wait) and
//!   **rate steps** (a rate schedule that repeats) are sift's own, for
//!   cellular-like links (`outage.rs`, `config.rs`).
//! - **seed.** netem seeds one PRNG for everything; sift derives one stream
//!   per stage from the seed.
//! - **ECN.** netem's `ecn` is netem's: a packet `loss` picks is marked CE
//!   instead of dropped if it is ECN-capable. The AQMs are separate qdiscs
//!   in Linux (`tc qdisc add … codel` under netem); here `codel …` or
//!   `dualpi2 …` in the same spec replace the drop-tail discipline of the
//!   bottleneck queue, and `bleach` (sift's) clears the ECN field as the
//!   packet enters (`aqm/`).
//! - **Syntax.** Probabilities are `N%` or plain fractions, keywords are
//!   spelt out, repeated options are errors (`netem.rs`).

mod aqm;
mod config;
mod corrupt;
mod delay;
mod duplicate;
mod loss;
mod netem;
mod outage;
mod queue;
mod random;
mod rate;
mod reorder;
mod slot;
mod sojourn;
mod units;

#[cfg(test)]
mod tests;

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, VecDeque};
use std::time::{Duration, Instant};

use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

pub use aqm::{
    Aqm, Codel, DualPi2, CODEL_DEFAULT_INTERVAL, CODEL_DEFAULT_TARGET, DEVICE_MTU_BYTES,
};
pub use config::{delay_at, rate_at, DelayStep, LinkConfig, RateStep};
pub use config::{LinkConfigError, MIN_MTU, PROBABILITY_SUM_SLACK};
pub use corrupt::{BadRegion, CorruptBurst, CorruptRegion, Corruption, CorruptionConfig};
pub use delay::{
    standard_normal_quantile, Distribution, UnknownDistribution, DISTRIBUTION_CLIP_SIGMAS,
    PARETO_SHAPE,
};
pub use duplicate::Correlated;
pub use loss::{FourState, GilbertElliott, LossModel};
pub use netem::{NetemError, OPTIONS as NETEM_OPTIONS};
pub use outage::Outage;
pub use queue::{QueueLimit, DEFAULT_QUEUE_PACKETS};
pub use rate::{serialization_time, Framing};
pub use reorder::Reorder;
pub use slot::Slot;
pub use sojourn::{QueueDelaySummary, QueueDelays};

use aqm::Discipline;
use corrupt::CorruptionProcess;
use delay::{Jitter, Propagation};
use loss::LossProcess;
use queue::QueueItem;
use random::{stage_rng, CorrelatedEvent, Stage};
use reorder::ReorderProcess;
use slot::SlotGate;

use crate::wire::Ecn;

/// Finds the length of the header region of a datagram (for `corrupt-where`),
/// or `None` if it cannot tell; sift plugs in `sift::wire::header_region_len`.
pub type HeaderLenFn = fn(&[u8]) -> Option<usize>;

/// How many late drops (`Link::poll_late_drop`) wait for a caller that
/// does not poll them before the oldest are forgotten.
const MAX_LATE_DROPS: usize = 1 << 16;

/// IPv4 (20) and UDP (8) header bytes: what `mtu` adds to a datagram by
/// default.
pub const IPV4_UDP_HEADERS: usize = 28;

/// The default header hook: no header region, everything is payload.
fn no_header(_: &[u8]) -> Option<usize> {
    Some(0)
}

/// What happened to a packet on this link: the ground truth.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fate {
    /// On its way, intact.
    Delivered,
    /// Dropped by the queue, full or by its AQM's choice: congestion.
    /// An AQM decides at dequeue, after `send` returned `Delivered`: those
    /// drops come from `Link::poll_late_drop`.
    QueueDrop,
    /// Dropped by the loss model: a random (link) loss.
    RandomLoss,
    /// On its way with flipped bits in these regions.
    Corrupted {
        /// Bits flipped in the packet header.
        header: bool,
        /// Bits flipped in the payload.
        payload: bool,
    },
    /// On its way intact, and a second copy follows it.
    Duplicated,
    /// Dropped because the link was in an outage.
    OutageDrop,
    /// Dropped because the IP packet was larger than the link's `mtu`.
    TooBig,
}

/// A packet leaving the link.
#[derive(Clone, Debug)]
pub struct Delivery {
    /// The caller's tag for this packet, as given to `send`.
    pub id: u64,
    /// The datagram as it arrives (with any flipped bits).
    pub bytes: Vec<u8>,
    /// When it arrives.
    pub at: Instant,
    /// Which regions hold flipped bits, if it was corrupted.
    pub corruption: Option<Corruption>,
    /// This is the extra copy made by the duplication stage.
    pub duplicate: bool,
    /// Its ECN codepoint as it leaves: as sent, CE if a stage marked it,
    /// Not-ECT if the link bleached it.
    pub ecn: Ecn,
    /// How long it waited in the bottleneck queue (its sojourn time).
    pub queue_delay: Duration,
}

/// A packet an AQM dropped after `Link::send` admitted it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LateDrop {
    /// The caller's tag for it, as given to `send`.
    pub id: u64,
    /// Its datagram's length in bytes.
    pub len: usize,
}

/// Counters over the link's life. The ECN ones (marks, AQM drops,
/// bleached, CE delivered) are omitted from serialized reports while zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct LinkCounters {
    /// Packets given to `send`.
    pub offered: u64,
    /// Packets (copies included) handed out by `poll_delivery`.
    pub delivered: u64,
    /// Packets (copies included) dropped by the full queue.
    pub queue_drops: u64,
    /// Packets dropped by the loss model.
    pub random_losses: u64,
    /// Packets dropped during an outage.
    pub outage_drops: u64,
    /// Packets dropped for exceeding the link's MTU.
    pub mtu_drops: u64,
    /// Packets admitted with flipped bits (they are delivered).
    pub corrupted: u64,
    /// Corrupted packets with a flipped bit in the header region.
    pub corrupted_header: u64,
    /// Corrupted packets with a flipped bit in the payload region.
    pub corrupted_payload: u64,
    /// Bits flipped in all.
    pub bits_flipped: u64,
    /// Extra copies made by the duplication stage (the queue may still drop one).
    pub duplicated: u64,
    /// Packets sent ahead by the reorder stage.
    pub reordered: u64,
    /// ECN-capable packets the loss model picked and netem's `ecn` marked
    /// CE instead of dropping.
    #[serde(skip_serializing_if = "is_zero")]
    pub loss_marks: u64,
    /// Packets the AQM (CoDel, DualPI2) marked CE instead of dropping.
    #[serde(skip_serializing_if = "is_zero")]
    pub aqm_marks: u64,
    /// Packets (copies included) the AQM dropped at dequeue.
    #[serde(skip_serializing_if = "is_zero")]
    pub aqm_drops: u64,
    /// ECN-capable packets whose ECN field the link cleared (`bleach`).
    #[serde(skip_serializing_if = "is_zero")]
    pub bleached: u64,
    /// Packets (copies included) handed out carrying CE.
    #[serde(skip_serializing_if = "is_zero")]
    pub delivered_ce: u64,
}

/// The ECN counters are left out of reports while zero, so a run without
/// ECN reports what it did before.
fn is_zero(count: &u64) -> bool {
    *count == 0
}

/// A packet inside the link.
#[derive(Debug)]
struct Packet {
    id: u64,
    bytes: Vec<u8>,
    corruption: Option<Corruption>,
    duplicate: bool,
    /// Chosen by the reorder stage: skips the propagation delay.
    send_immediately: bool,
    /// Its ECN codepoint now.
    ecn: Ecn,
    /// When it entered the bottleneck queue.
    enqueued_at: Instant,
    /// How long it waited there, once the serializer took it.
    queue_delay: Duration,
}

impl QueueItem for Packet {
    fn len_bytes(&self) -> usize {
        self.bytes.len()
    }
}

/// A packet propagating, ordered by when it is ready, then by when it left
/// the serializer (so ties keep their order).
#[derive(Debug)]
struct Propagating {
    ready: Instant,
    sequence: u64,
    packet: Packet,
}

impl PartialEq for Propagating {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Propagating {}

impl PartialOrd for Propagating {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Propagating {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.ready, self.sequence).cmp(&(other.ready, other.sequence))
    }
}

/// A packet that has passed every stage and waits for `poll_delivery`.
#[derive(Debug)]
struct Arrived {
    at: Instant,
    packet: Packet,
}

/// One direction of a link.
pub struct Link {
    config: LinkConfig,
    /// IP and UDP header bytes added to a datagram for the MTU check.
    ip_headers: usize,
    header_len: HeaderLenFn,
    /// Origin of the outage windows.
    epoch: Option<Instant>,
    loss: LossProcess,
    loss_rng: ChaCha8Rng,
    duplicate: CorrelatedEvent,
    duplicate_rng: ChaCha8Rng,
    corruption: CorruptionProcess,
    reorder: Option<ReorderProcess>,
    reorder_rng: ChaCha8Rng,
    queue: Discipline,
    aqm_rng: ChaCha8Rng,
    /// The packet on the serializer (it has left the queue).
    in_service: Option<Packet>,
    /// When the serializer finishes `in_service`.
    serializer_free_at: Option<Instant>,
    /// Ids of packets the AQM dropped after `send` admitted them.
    late_drops: VecDeque<LateDrop>,
    /// Reused buffer for the AQM's drops of one dequeue.
    dropped: Vec<Packet>,
    queue_delays: QueueDelays,
    propagation: Propagation,
    delay_rng: ChaCha8Rng,
    propagating: BinaryHeap<Reverse<Propagating>>,
    /// When the last packet that took the propagation delay is ready; behind
    /// a rate, without `jitter_reorders`, no later packet is ready earlier.
    last_ready: Option<Instant>,
    next_sequence: u64,
    slot: Option<SlotGate>,
    slot_rng: ChaCha8Rng,
    arrived: VecDeque<Arrived>,
    counters: LinkCounters,
}

impl Link {
    /// A link with its own random streams, derived from `seed` (or from
    /// `config.seed`, which takes precedence when set).
    pub fn new(config: LinkConfig, seed: u64) -> Self {
        let seed = config.seed.unwrap_or(seed);
        let jitter = Jitter {
            jitter: config.jitter_ms,
            correlation: config.delay_correlation,
            distribution: config.distribution,
        };
        Self {
            ip_headers: IPV4_UDP_HEADERS,
            header_len: no_header,
            epoch: None,
            loss: LossProcess::new(&config.loss),
            loss_rng: stage_rng(seed, Stage::Loss),
            duplicate: CorrelatedEvent::new(
                config.duplicate.probability,
                config.duplicate.correlation,
            ),
            duplicate_rng: stage_rng(seed, Stage::Duplicate),
            corruption: CorruptionProcess::new(&config.corrupt, seed),
            reorder: config.reorder.as_ref().map(ReorderProcess::new),
            reorder_rng: stage_rng(seed, Stage::Reorder),
            queue: Discipline::new(config.queue, config.aqm.as_ref()),
            aqm_rng: stage_rng(seed, Stage::Aqm),
            in_service: None,
            serializer_free_at: None,
            late_drops: VecDeque::new(),
            dropped: Vec::new(),
            queue_delays: QueueDelays::default(),
            propagation: Propagation::new(config.delay_ms, jitter),
            delay_rng: stage_rng(seed, Stage::Delay),
            propagating: BinaryHeap::new(),
            last_ready: None,
            next_sequence: 0,
            slot: config.slot.map(SlotGate::new),
            slot_rng: stage_rng(seed, Stage::Slot),
            arrived: VecDeque::new(),
            counters: LinkCounters::default(),
            config,
        }
    }

    /// The link's parameters.
    pub fn config(&self) -> &LinkConfig {
        &self.config
    }

    /// Sets how the header region of a datagram is found, for
    /// `corrupt-where`. By default everything is payload.
    pub fn set_header_len(&mut self, header_len: HeaderLenFn) {
        self.header_len = header_len;
    }

    /// Sets the IP and UDP header bytes a datagram's packet carries, for
    /// `mtu` (28, IPv4's, by default; 48 for IPv6).
    pub fn set_ip_headers(&mut self, bytes: usize) {
        self.ip_headers = bytes;
    }

    /// Sets the origin of the outage windows; by default it is the `now` of
    /// the first `send`.
    pub fn set_epoch(&mut self, epoch: Instant) {
        self.epoch = Some(epoch);
    }

    /// Offers a packet sent with ECN codepoint `ecn` at `now`. Returns its
    /// fate if it was decided at once (dropped), or how it is on its way
    /// (`Delivered`, `Corrupted`, `Duplicated`; a packet marked CE instead
    /// of dropped is on its way). `Corrupted` wins over `Duplicated` when
    /// both apply; each `Delivery` carries its own truth. An AQM may still
    /// drop it at dequeue: see `poll_late_drop`.
    pub fn send(&mut self, now: Instant, id: u64, bytes: Vec<u8>, ecn: Ecn) -> Fate {
        self.advance(now);
        let epoch = *self.epoch.get_or_insert(now);
        self.counters.offered += 1;
        if self
            .config
            .mtu
            .is_some_and(|mtu| bytes.len() + self.ip_headers > mtu as usize)
        {
            // First: a router refuses the packet before any impairment.
            self.counters.mtu_drops += 1;
            return Fate::TooBig;
        }
        let mut ecn = ecn;
        if self.config.bleach && ecn != Ecn::NotEct {
            ecn = Ecn::NotEct;
            self.counters.bleached += 1;
        }
        if let Some(outage) = &self.config.outage {
            if outage.is_down(epoch, now) {
                self.counters.outage_drops += 1;
                return Fate::OutageDrop;
            }
        }
        if self.loss.lose(&mut self.loss_rng) {
            // netem's `ecn`: an ECN-capable packet is marked, not dropped.
            if self.config.ecn && ecn.is_ecn_capable() {
                ecn = Ecn::Ce;
                self.counters.loss_marks += 1;
            } else {
                self.counters.random_losses += 1;
                return Fate::RandomLoss;
            }
        }
        let header_len = (self.header_len)(&bytes).unwrap_or(0).min(bytes.len());
        let copy = self
            .duplicate
            .happens(&mut self.duplicate_rng)
            .then(|| bytes.clone());
        self.counters.duplicated += u64::from(copy.is_some());
        let original = self.admit(now, id, bytes, header_len, false, ecn);
        let copy_admitted = match copy {
            Some(copy) => self.admit(now, id, copy, header_len, true, ecn).is_some(),
            None => false,
        };
        self.advance(now);
        match original {
            None => Fate::QueueDrop,
            Some(Some(c)) => Fate::Corrupted {
                header: c.header,
                payload: c.payload,
            },
            Some(None) if copy_admitted => Fate::Duplicated,
            Some(None) => Fate::Delivered,
        }
    }

    /// Corrupts, reorders and queues one copy. `None` if the queue dropped
    /// it, else its corruption.
    fn admit(
        &mut self,
        now: Instant,
        id: u64,
        mut bytes: Vec<u8>,
        header_len: usize,
        duplicate: bool,
        ecn: Ecn,
    ) -> Option<Option<Corruption>> {
        let corruption = self.corruption.apply(&mut bytes, header_len);
        if self.queue.would_drop(bytes.len()) {
            self.counters.queue_drops += 1;
            return None;
        }
        // As netem: the reorder draw happens only for packets the queue takes.
        let send_immediately = match &mut self.reorder {
            Some(reorder) => reorder.send_immediately(&mut self.reorder_rng),
            None => false,
        };
        let packet = Packet {
            id,
            bytes,
            corruption,
            duplicate,
            send_immediately,
            ecn,
            enqueued_at: now,
            queue_delay: Duration::ZERO,
        };
        if self.queue.enqueue(packet, send_immediately, now).is_err() {
            // `would_drop` said there was room; count it as a drop anyway
            // rather than lose track of the packet.
            self.counters.queue_drops += 1;
            return None;
        }
        if let Some(c) = corruption {
            self.counters.corrupted += 1;
            self.counters.corrupted_header += u64::from(c.header);
            self.counters.corrupted_payload += u64::from(c.payload);
            self.counters.bits_flipped += u64::from(c.flipped_bits);
        }
        self.counters.reordered += u64::from(send_immediately);
        if self.in_service.is_none() {
            self.start_next(now);
        }
        Some(corruption)
    }

    /// When a packet of `len` bytes that could start at `t` is off the
    /// serializer: after any stall covering `t`, at the rate then in force.
    fn serialized_at(&self, t: Instant, len: usize) -> Instant {
        let epoch = self.epoch.unwrap_or(t);
        let start = self
            .config
            .stall
            .and_then(|stall| stall.window_end(epoch, t))
            .unwrap_or(t);
        let rate = if self.config.rate_steps.is_empty() {
            self.config.rate_bps
        } else {
            rate_at(
                &self.config.rate_steps,
                start.saturating_duration_since(epoch),
            )
        };
        start + serialization_time(rate, &self.config.framing, len)
    }

    /// Puts the packet the queue's discipline gives at `t` on the
    /// serializer (the AQM may drop some first), or leaves it idle.
    fn start_next(&mut self, t: Instant) {
        let mut dropped = std::mem::take(&mut self.dropped);
        let next = self
            .queue
            .dequeue(t, &mut self.aqm_rng, &mut self.counters, &mut dropped);
        for packet in dropped.drain(..) {
            // A copy's drop is not news: `send` never reported the copy.
            if !packet.duplicate {
                if self.late_drops.len() >= MAX_LATE_DROPS {
                    self.late_drops.pop_front();
                }
                self.late_drops.push_back(LateDrop {
                    id: packet.id,
                    len: packet.bytes.len(),
                });
            }
        }
        self.dropped = dropped;
        match next {
            Some(mut packet) => {
                packet.queue_delay = t.saturating_duration_since(packet.enqueued_at);
                self.queue_delays.record(packet.queue_delay);
                self.serializer_free_at = Some(self.serialized_at(t, packet.bytes.len()));
                self.in_service = Some(packet);
            }
            None => {
                self.serializer_free_at = None;
                self.in_service = None;
            }
        }
    }

    /// Moves packets whose serialization finished by `now` onto the wire.
    fn advance(&mut self, now: Instant) {
        while let Some(done) = self.serializer_free_at {
            if done > now {
                break;
            }
            let Some(head) = self.in_service.take() else {
                self.serializer_free_at = None;
                break;
            };
            let ready = if head.send_immediately {
                done
            } else {
                let mut own = done + self.propagation.sample(&mut self.delay_rng);
                let epoch = self.epoch.unwrap_or(done);
                if let Some(delay) = delay_at(
                    &self.config.delay_steps,
                    done.saturating_duration_since(epoch),
                ) {
                    // The step's delay replaces the base delay; jitter stays.
                    own = (own + delay)
                        .checked_sub(self.config.delay_ms)
                        .unwrap_or(done)
                        .max(done);
                }
                let in_order = self.config.rate_bps.is_some() && !self.config.jitter_reorders;
                let ready = match self.last_ready {
                    Some(last) if in_order => own.max(last),
                    _ => own,
                };
                self.last_ready = Some(ready);
                ready
            };
            self.propagating.push(Reverse(Propagating {
                ready,
                sequence: self.next_sequence,
                packet: head,
            }));
            self.next_sequence += 1;
            self.start_next(done);
        }
    }

    /// Passes packets that are ready by `now` through the slot gate. No
    /// packet still on the serializer can become ready before `now`, so
    /// these are final in ready order.
    fn gate(&mut self, now: Instant) {
        while self
            .propagating
            .peek()
            .is_some_and(|Reverse(p)| p.ready <= now)
        {
            let Some(Reverse(p)) = self.propagating.pop() else {
                break;
            };
            let at = match &mut self.slot {
                Some(gate) => gate.departure(p.ready, p.packet.bytes.len(), &mut self.slot_rng),
                None => p.ready,
            };
            self.arrived.push_back(Arrived {
                at,
                packet: p.packet,
            });
        }
    }

    /// The next instant at which something happens on this link.
    pub fn next_event(&self) -> Option<Instant> {
        [
            self.serializer_free_at,
            self.propagating.peek().map(|Reverse(p)| p.ready),
            self.arrived.front().map(|a| a.at),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// The next packet that has arrived by `now`, in arrival order.
    pub fn poll_delivery(&mut self, now: Instant) -> Option<Delivery> {
        self.advance(now);
        self.gate(now);
        if self.arrived.front()?.at > now {
            return None;
        }
        let a = self.arrived.pop_front()?;
        self.counters.delivered += 1;
        self.counters.delivered_ce += u64::from(a.packet.ecn == Ecn::Ce);
        Some(Delivery {
            id: a.packet.id,
            bytes: a.packet.bytes,
            at: a.at,
            corruption: a.packet.corruption,
            duplicate: a.packet.duplicate,
            ecn: a.packet.ecn,
            queue_delay: a.packet.queue_delay,
        })
    }

    /// A packet the AQM dropped at dequeue after `send` had returned that
    /// it was on its way (its fate is `QueueDrop`), oldest first.
    /// Drop-tail queues decide at `send` and leave none. Up to 65 536 wait
    /// for a caller that does not poll them.
    pub fn poll_late_drop(&mut self) -> Option<LateDrop> {
        self.late_drops.pop_front()
    }

    /// Packets waiting in the queue or on the serializer.
    pub fn queue_len(&self) -> usize {
        self.queue.len() + usize::from(self.in_service.is_some())
    }

    /// The sojourn times of every packet the serializer has taken.
    pub fn queue_delays(&self) -> &QueueDelays {
        &self.queue_delays
    }

    /// Counters so far.
    pub fn counters(&self) -> LinkCounters {
        self.counters
    }
}
