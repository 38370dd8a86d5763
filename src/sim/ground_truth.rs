//! Ground truth: what really happened to every datagram. Each sift datagram
//! gets an id (its index here) and a record of its flow, direction, size,
//! send time, its fate on the links and when it arrived. The lead joins these
//! records with the controllers' loss verdicts to build the confusion matrix
//! (Fu & Liew 2003, Table I).
//!
//! CBR datagrams are counted per CBR flow but not recorded one by one (they
//! carry no controller verdicts, and a long CBR run would otherwise fill
//! memory): their ids have the top bit set and carry the CBR flow index.

use std::collections::BTreeMap;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::link::Fate;
use super::topology::Direction;
use crate::wire::{parse_header, PacketType};

/// Marks a CBR datagram id.
const CBR_ID_FLAG: u64 = 1 << 63;
/// CBR ids keep the flow index above this many bits of sequence number.
const CBR_SEQUENCE_BITS: u32 = 32;

/// The id of CBR flow `flow`'s datagram number `sequence` (the sequence
/// number wraps; only the flow index is ever read back).
pub fn cbr_packet_id(flow: usize, sequence: u64) -> u64 {
    let flow = (flow as u64) & ((1 << (63 - CBR_SEQUENCE_BITS)) - 1);
    CBR_ID_FLAG | (flow << CBR_SEQUENCE_BITS) | (sequence & ((1 << CBR_SEQUENCE_BITS) - 1))
}

/// The CBR flow a datagram id belongs to, if it is a CBR id.
pub fn cbr_flow_of(id: u64) -> Option<usize> {
    if id & CBR_ID_FLAG == 0 {
        return None;
    }
    usize::try_from((id & !CBR_ID_FLAG) >> CBR_SEQUENCE_BITS).ok()
}

/// The life of one sift datagram.
#[derive(Clone, Debug, PartialEq)]
pub struct PacketRecord {
    /// The sift flow it belongs to.
    pub flow: usize,
    /// Forward (client → server) or reverse.
    pub direction: Direction,
    /// Datagram size in bytes.
    pub size: usize,
    /// When the sender's connection released it (after pacing).
    pub sent_at: Instant,
    /// What the links did to it: the first fate other than `Delivered` on its
    /// path, else `Delivered`. `None` while it has not reached a link that
    /// decides (it is still on an access link).
    pub fate: Option<Fate>,
    /// When it (first) reached the receiving host.
    pub delivered_at: Option<Instant>,
    /// The packet number of the 1-RTT packet it carries, if any (visible:
    /// sift has no header protection). Joins controller verdicts, which
    /// name packet numbers, to this record.
    pub packet_number: Option<u64>,
}

/// Why a packet really went missing, from the links' point of view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TrueCause {
    /// A full queue dropped it.
    Congestive,
    /// The link lost or damaged it (loss model, outage, bit errors).
    Random,
    /// It arrived intact: the loss the sender declared was spurious.
    NotLost,
}

impl TrueCause {
    /// The cause behind a link fate; `None` while the fate is unknown.
    pub fn of(fate: Option<Fate>) -> Option<TrueCause> {
        Some(match fate? {
            Fate::QueueDrop => TrueCause::Congestive,
            Fate::RandomLoss | Fate::OutageDrop | Fate::TooBig | Fate::Corrupted { .. } => {
                TrueCause::Random
            }
            Fate::Delivered | Fate::Duplicated => TrueCause::NotLost,
        })
    }
}

/// The 1-RTT packet number in a datagram, if it carries a 1-RTT packet
/// (always the last of coalesced packets). Packet numbers are sent as their
/// low 32 bits; a simulated flow stays far below 2^32 packets.
pub fn one_rtt_packet_number(datagram: &[u8]) -> Option<u64> {
    let mut rest = datagram;
    while !rest.is_empty() {
        let header = parse_header(rest).ok()?;
        if header.ty == PacketType::OneRtt {
            return Some(u64::from(header.truncated_pn));
        }
        rest = rest.get(header.packet_len..)?;
    }
    None
}

/// Per-direction packet counts of one flow, from ground truth.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirectionCounters {
    /// Datagrams the endpoint sent.
    pub packets_sent: u64,
    /// Their bytes.
    pub bytes_sent: u64,
    /// Datagrams that reached the other endpoint (duplicates count twice).
    pub delivered: u64,
    /// Dropped by a full queue: congestion.
    pub queue_drops: u64,
    /// Dropped by a loss model: random loss.
    pub random_losses: u64,
}

/// A flow's ground-truth counts, both directions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlowPacketCounters {
    /// Client → server.
    pub forward: DirectionCounters,
    /// Server → client.
    pub reverse: DirectionCounters,
}

impl FlowPacketCounters {
    /// The counters of one direction.
    pub fn direction(&self, direction: Direction) -> &DirectionCounters {
        match direction {
            Direction::Forward => &self.forward,
            Direction::Reverse => &self.reverse,
        }
    }

    fn direction_mut(&mut self, direction: Direction) -> &mut DirectionCounters {
        match direction {
            Direction::Forward => &mut self.forward,
            Direction::Reverse => &mut self.reverse,
        }
    }
}

/// Every sift datagram's record, indexed by id, and per-flow totals.
#[derive(Clone, Debug, Default)]
pub struct GroundTruth {
    records: Vec<PacketRecord>,
    /// (flow, forward?, 1-RTT packet number) → datagram id.
    by_packet_number: BTreeMap<(usize, bool, u64), u64>,
    per_flow: Vec<FlowPacketCounters>,
}

impl GroundTruth {
    /// Ground truth for `flows` sift flows.
    pub fn new(flows: usize) -> Self {
        Self {
            records: Vec::new(),
            by_packet_number: BTreeMap::new(),
            per_flow: vec![FlowPacketCounters::default(); flows],
        }
    }

    /// Every record; a datagram's id is its index.
    pub fn records(&self) -> &[PacketRecord] {
        &self.records
    }

    /// The record of datagram `id`.
    pub fn record(&self, id: u64) -> Option<&PacketRecord> {
        self.records.get(usize::try_from(id).ok()?)
    }

    /// The record of the datagram that carried 1-RTT packet `packet_number`
    /// of `flow` in `direction`.
    pub fn by_packet_number(
        &self,
        flow: usize,
        direction: Direction,
        packet_number: u64,
    ) -> Option<&PacketRecord> {
        let id =
            *self
                .by_packet_number
                .get(&(flow, direction == Direction::Forward, packet_number))?;
        self.record(id)
    }

    /// The counts of sift flow `flow`.
    pub fn flow_counters(&self, flow: usize) -> Option<&FlowPacketCounters> {
        self.per_flow.get(flow)
    }

    /// Records a datagram leaving its sender and returns its id.
    pub(crate) fn on_sent(
        &mut self,
        flow: usize,
        direction: Direction,
        datagram: &[u8],
        now: Instant,
    ) -> u64 {
        let id = self.records.len() as u64;
        let size = datagram.len();
        let packet_number = one_rtt_packet_number(datagram);
        if let Some(pn) = packet_number {
            self.by_packet_number
                .insert((flow, direction == Direction::Forward, pn), id);
        }
        self.records.push(PacketRecord {
            flow,
            direction,
            size,
            sent_at: now,
            fate: None,
            delivered_at: None,
            packet_number,
        });
        if let Some(counters) = self.per_flow.get_mut(flow) {
            let counters = counters.direction_mut(direction);
            counters.packets_sent += 1;
            counters.bytes_sent += size as u64;
        }
        id
    }

    /// Records the fate a link gave datagram `id`.
    pub(crate) fn on_fate(&mut self, id: u64, fate: Fate) {
        let Some(record) = usize::try_from(id)
            .ok()
            .and_then(|index| self.records.get_mut(index))
        else {
            return;
        };
        // Keep the first news that is not plain delivery (a corrupted packet
        // stays corrupted after a clean access link).
        if record.fate.is_none() || record.fate == Some(Fate::Delivered) {
            record.fate = Some(fate);
        }
        if let Some(counters) = self.per_flow.get_mut(record.flow) {
            let counters = counters.direction_mut(record.direction);
            match fate {
                Fate::QueueDrop => counters.queue_drops += 1,
                Fate::RandomLoss => counters.random_losses += 1,
                _ => {}
            }
        }
    }

    /// Records datagram `id` arriving at its receiver.
    pub(crate) fn on_delivered(&mut self, id: u64, now: Instant) {
        let Some(record) = usize::try_from(id)
            .ok()
            .and_then(|index| self.records.get_mut(index))
        else {
            return;
        };
        record.delivered_at.get_or_insert(now);
        if let Some(counters) = self.per_flow.get_mut(record.flow) {
            counters.direction_mut(record.direction).delivered += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cbr_ids_carry_the_flow_and_never_collide_with_sift_ids() {
        let id = cbr_packet_id(7, 123_456);
        assert_eq!(cbr_flow_of(id), Some(7));
        assert_eq!(cbr_flow_of(cbr_packet_id(7, u64::MAX)), Some(7));
        assert_eq!(cbr_flow_of(0), None);
        assert_eq!(cbr_flow_of(1 << 40), None);
    }

    #[test]
    fn fates_are_counted_per_flow_and_direction() {
        let t0 = Instant::now();
        let mut truth = GroundTruth::new(2);
        let a = truth.on_sent(1, Direction::Forward, &[0; 1200], t0);
        let b = truth.on_sent(1, Direction::Forward, &[0; 1200], t0);
        let c = truth.on_sent(1, Direction::Reverse, &[0; 60], t0);
        truth.on_fate(a, Fate::QueueDrop);
        truth.on_fate(b, Fate::Delivered);
        truth.on_delivered(b, t0);
        truth.on_fate(c, Fate::RandomLoss);
        let counters = truth.flow_counters(1).unwrap();
        assert_eq!(counters.forward.packets_sent, 2);
        assert_eq!(counters.forward.bytes_sent, 2400);
        assert_eq!(counters.forward.queue_drops, 1);
        assert_eq!(counters.forward.delivered, 1);
        assert_eq!(counters.reverse.random_losses, 1);
        assert_eq!(
            truth.flow_counters(0).unwrap(),
            &FlowPacketCounters::default()
        );
        assert_eq!(truth.record(a).unwrap().fate, Some(Fate::QueueDrop));
        assert_eq!(truth.record(b).unwrap().delivered_at, Some(t0));
    }

    #[test]
    fn a_drop_is_not_overwritten_by_a_later_hop() {
        let t0 = Instant::now();
        let mut truth = GroundTruth::new(1);
        let id = truth.on_sent(0, Direction::Reverse, &[0; 100], t0);
        truth.on_fate(id, Fate::RandomLoss);
        truth.on_fate(id, Fate::Delivered);
        assert_eq!(truth.record(id).unwrap().fate, Some(Fate::RandomLoss));
    }
}
