//! The packet path of a run: datagrams onto links, link wake-ups, routing
//! hop by hop, arrival at the destination host, CBR sends, and the ground
//! truth of every datagram's fate on the way.

use super::*;
use crate::sim::link::LateDrop;
use crate::wire::Ecn;

impl<T: Transport> Simulation<T> {
    /// Puts a datagram from `endpoint`, carrying the ECN codepoint its
    /// connection chose, on the first link of its path.
    pub(super) fn transmit(&mut self, endpoint: EndpointRef, packet: Vec<u8>, ecn: Ecn) {
        let direction = match endpoint.side {
            Side::Client => Direction::Forward,
            Side::Server => Direction::Reverse,
        };
        let id = self
            .truth
            .on_sent(endpoint.flow, direction, &packet, self.clock.now());
        self.census_sent(endpoint, id, &packet);
        let moved = self.flows.get(endpoint.flow).is_some_and(|f| f.moved);
        let path = self.topology.sift_path_on(endpoint.flow, direction, moved);
        if let Some(first) = path.hop(0) {
            self.offer(first, id, packet, ecn);
        }
    }

    /// Offers a sift datagram carrying ECN codepoint `ecn` to a link and
    /// records its fate.
    pub(super) fn offer(&mut self, link: LinkId, id: u64, packet: Vec<u8>, ecn: Ecn) {
        let now = self.clock.now();
        let Some(slot) = self.links.get_mut(link.0) else {
            return;
        };
        let fate = slot.link.send(now, id, packet, ecn);
        self.truth.on_fate(id, fate);
        self.schedule_link(link);
    }

    /// Records the link's late drops (an AQM drops at dequeue) and makes
    /// sure the link is woken for its next event.
    pub(super) fn schedule_link(&mut self, link: LinkId) {
        let now = self.clock.now();
        let Some(slot) = self.links.get_mut(link.0) else {
            return;
        };
        while let Some(LateDrop { id, .. }) = slot.link.poll_late_drop() {
            match cbr_flow_of(id) {
                Some(index) => {
                    if let Some(cbr) = self.cbr.get_mut(index) {
                        cbr.counters.queue_drops += 1;
                    }
                }
                None => self.truth.on_fate(id, Fate::QueueDrop),
            }
        }
        if let Some(next) = slot.link.next_event() {
            let next = next.max(now);
            if slot.wake.is_none_or(|wake| next < wake) {
                slot.wake = Some(next);
                self.events.push(next, Event::LinkWake(link));
            }
        }
    }

    /// A datagram came out of `link`: on to the next link of its path, or
    /// into the destination host.
    pub(super) fn on_delivery(&mut self, link: LinkId, delivery: Delivery) -> Result<(), SimError> {
        let now = self.clock.now();
        if let Some(index) = cbr_flow_of(delivery.id) {
            let t_s = self.clock.offset_of(now).as_secs_f64();
            if let Some(cbr) = self.cbr.get_mut(index) {
                cbr.counters.delivered_packets += 1;
                cbr.counters.delivered_bytes += delivery.bytes.len() as u64;
                cbr.counters.first_arrival_s.get_or_insert(t_s);
                cbr.counters.last_arrival_s = Some(t_s);
            }
            self.recycle(delivery.bytes);
            return Ok(());
        }
        let Some(record) = self.truth.record(delivery.id) else {
            self.recycle(delivery.bytes);
            return Ok(());
        };
        let (flow, direction) = (record.flow, record.direction);
        // The next hop follows from the link it came out of, not from a
        // per-packet counter, so a copy made by a duplicating link takes the
        // same route as the original.
        // A packet sent before its client moved finishes on the path it
        // started on.
        let moved = self.flows.get(flow).is_some_and(|f| f.moved);
        let next = [moved, !moved].into_iter().find_map(|on| {
            let path = self.topology.sift_path_on(flow, direction, on);
            (0..path.len())
                .find(|&hop| path.hop(hop) == Some(link))
                .map(|hop| path.hop(hop + 1))
        });
        let next = next.flatten();
        if let Some(next) = next {
            self.offer(next, delivery.id, delivery.bytes, delivery.ecn);
            return Ok(());
        }
        self.truth.on_delivered(delivery.id, now);
        let side = match direction {
            Direction::Forward => Side::Server,
            Direction::Reverse => Side::Client,
        };
        self.census_arrived(delivery.id, delivery.bytes.len(), flow, side);
        let mut bytes = delivery.bytes;
        if let Some(flow_state) = self.flows.get_mut(flow) {
            let end = flow_state.endpoint_mut(side);
            let info = RecvInfo {
                from: end.peer,
                to: end.address,
                now,
                ecn: delivery.ecn,
            };
            if let Some(conn) = end.conn.as_mut() {
                if let Err(e) = conn.recv(&mut bytes, info) {
                    flow_state.note_error(format!("{} recv: {e}", side_name(side)));
                }
            }
        }
        self.recycle(bytes);
        self.service(EndpointRef { flow, side })
    }

    pub(super) fn send_cbr(&mut self, index: usize) {
        let now = self.clock.now();
        let mut packet = self.pool.pop().unwrap_or_default();
        let Some(cbr) = self.cbr.get_mut(index) else {
            return;
        };
        packet.clear();
        packet.resize(cbr.schedule.packet_size(), 0);
        let id = cbr_packet_id(index, cbr.next_sequence);
        cbr.next_sequence += 1;
        cbr.counters.sent_packets += 1;
        cbr.counters.sent_bytes += packet.len() as u64;
        let link = match cbr.direction {
            Direction::Forward => BOTTLENECK_FORWARD,
            Direction::Reverse => BOTTLENECK_REVERSE,
        };
        if let Some(next) = cbr.schedule.next_send() {
            self.events.push(self.clock.at(next), Event::CbrSend(index));
        }
        let Some(slot) = self.links.get_mut(link.0) else {
            return;
        };
        let fate = slot.link.send(now, id, packet, Ecn::NotEct);
        if let Some(cbr) = self.cbr.get_mut(index) {
            match fate {
                Fate::QueueDrop => cbr.counters.queue_drops += 1,
                Fate::RandomLoss => cbr.counters.random_losses += 1,
                _ => {}
            }
        }
        self.schedule_link(link);
    }

    pub(super) fn recycle(&mut self, packet: Vec<u8>) {
        self.pool.push(packet);
    }
}
