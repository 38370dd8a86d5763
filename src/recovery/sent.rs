//! The sent-packet ledger of one packet-number space.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use std::time::Instant;

use super::rate::DeliverySnapshot;

/// A packet the sender is waiting to hear about. `F` is the connection's
/// record of what the packet carried, handed back on ack, loss or corruption
/// so the connection can retransmit or release it.
#[derive(Clone, Debug)]
pub struct SentPacket<F> {
    /// The packet's number in its space.
    pub packet_number: u64,
    /// When it was sent.
    pub time_sent: Instant,
    /// Bytes on the wire.
    pub size: u64,
    /// It carries a frame other than ACK, PADDING or CONNECTION_CLOSE, so
    /// the peer acknowledges it.
    pub ack_eliciting: bool,
    /// Counted in bytes-in-flight (ack-eliciting or padding).
    pub in_flight: bool,
    /// The sender had nothing more to send when this left (RFC 9002 §7.8).
    pub app_limited: bool,
    /// A path MTU probe (`conn::pmtud`): its loss says the packet was too
    /// big for the path, not that the path is congested (RFC 9000 §14.4),
    /// so it only leaves flight: no congestion event, no loss count, no
    /// spurious-loss memory.
    pub pmtu_probe: bool,
    /// The ECN codepoint its datagram left with (RFC 9000 §13.4): an
    /// acknowledgement of an ECT packet must come with ECN counts that grew
    /// (`conn::ecn`).
    pub ecn: crate::wire::Ecn,
    /// The delivery-rate state when it left (`rate`); the recovery facade
    /// fills it in, so a new packet starts with the default.
    pub delivery: DeliverySnapshot,
    /// What it carried, for retransmission or release.
    pub frames: Vec<F>,
}

/// Outstanding packets of one space, in packet-number order.
#[derive(Debug)]
pub struct SentLedger<F> {
    packets: BTreeMap<u64, SentPacket<F>>,
    ack_eliciting_outstanding: u64,
}

impl<F> Default for SentLedger<F> {
    fn default() -> Self {
        Self {
            packets: BTreeMap::new(),
            ack_eliciting_outstanding: 0,
        }
    }
}

impl<F> SentLedger<F> {
    /// Records a packet just sent.
    pub fn insert(&mut self, packet: SentPacket<F>) {
        if packet.ack_eliciting {
            self.ack_eliciting_outstanding += 1;
        }
        self.packets.insert(packet.packet_number, packet);
    }

    /// Takes an outstanding packet out (acknowledged, lost or corrupted).
    pub fn remove(&mut self, packet_number: u64) -> Option<SentPacket<F>> {
        let packet = self.packets.remove(&packet_number)?;
        if packet.ack_eliciting {
            self.ack_eliciting_outstanding -= 1;
        }
        Some(packet)
    }

    /// Removes every outstanding packet whose number lies in `range`,
    /// appending them to `out` in ascending order. Touches only packets that
    /// exist, so a forged range of 2^62 numbers costs nothing.
    pub fn remove_range(&mut self, range: RangeInclusive<u64>, out: &mut Vec<SentPacket<F>>) {
        let numbers: Vec<u64> = self.packets.range(range).map(|(pn, _)| *pn).collect();
        for pn in numbers {
            if let Some(packet) = self.remove(pn) {
                out.push(packet);
            }
        }
    }

    /// An outstanding packet, if it is.
    pub fn get(&self, packet_number: u64) -> Option<&SentPacket<F>> {
        self.packets.get(&packet_number)
    }

    /// Outstanding packets in ascending packet-number order.
    pub fn iter(&self) -> impl Iterator<Item = &SentPacket<F>> {
        self.packets.values()
    }

    /// The oldest outstanding packet.
    pub fn oldest(&self) -> Option<&SentPacket<F>> {
        self.packets.values().next()
    }

    /// Some outstanding packet is ack-eliciting.
    pub fn has_ack_eliciting(&self) -> bool {
        self.ack_eliciting_outstanding > 0
    }

    /// No packet is outstanding.
    pub fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }

    /// Outstanding packets.
    pub fn len(&self) -> usize {
        self.packets.len()
    }

    /// Empties the ledger (keys discarded), returning what was outstanding.
    pub fn drain(&mut self) -> Vec<SentPacket<F>> {
        self.ack_eliciting_outstanding = 0;
        std::mem::take(&mut self.packets).into_values().collect()
    }
}
