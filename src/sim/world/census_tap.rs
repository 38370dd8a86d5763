//! The census (`sim::census`) on a scenario's run: opt in with
//! [`Simulation::attach_census`], then every sift datagram is counted as
//! its endpoint sent it (from its address to its peer's) and as it
//! arrived. Nothing here is spoofed, so the census shows what honest
//! endpoints send an address before it proves itself: a client's new
//! address after it moves, above all.

use std::collections::HashMap;

use super::*;
use crate::sim::census::Census;

/// The census and the addresses of the datagrams still on their way.
pub(super) struct CensusTap {
    census: Census,
    /// By datagram id: (from, to) as sent. Entries of datagrams the links
    /// dropped stay: a census is for tests, whose runs are short.
    addresses: HashMap<u64, (SocketAddr, SocketAddr)>,
}

impl<T: Transport> Simulation<T> {
    /// Counts, from now on, what every sift endpoint sends each address
    /// against what arrives from it (`sim::census`). Call before `run`.
    pub fn attach_census(&mut self) {
        let mut census = Census::new();
        for flow in &self.flows {
            census.watch(flow.client.address);
            census.watch(flow.server.address);
        }
        self.census = Some(CensusTap {
            census,
            addresses: HashMap::new(),
        });
    }

    /// The census, if attached.
    pub fn census(&self) -> Option<&Census> {
        self.census.as_ref().map(|tap| &tap.census)
    }

    /// A client at `old` moved to `new`: what it sends and receives there
    /// is still its own.
    pub(super) fn census_watch_move(&mut self, old: SocketAddr, new: SocketAddr) {
        if let Some(tap) = self.census.as_mut() {
            tap.census.watch_move(old, new);
        }
    }

    /// Datagram `id` (`packet`) leaves `endpoint`.
    pub(super) fn census_sent(&mut self, endpoint: EndpointRef, id: u64, packet: &[u8]) {
        let Some(tap) = self.census.as_mut() else {
            return;
        };
        let Some(flow) = self.flows.get(endpoint.flow) else {
            return;
        };
        let end = match endpoint.side {
            Side::Client => &flow.client,
            Side::Server => &flow.server,
        };
        let opens = crate::endpoint::parse_any_header(packet)
            .is_ok_and(|header| header.ty == crate::wire::PacketType::Initial);
        tap.census
            .on_sent(end.address, end.peer, packet.len(), opens);
        tap.addresses.insert(id, (end.address, end.peer));
    }

    /// Datagram `id` of `len` bytes reached `side` of `flow`. It counts as
    /// from the address the receiving connection is told (its peer's
    /// current one, as `RecvInfo` says), and as reaching the address it
    /// was sent to.
    pub(super) fn census_arrived(&mut self, id: u64, len: usize, flow: usize, side: Side) {
        let elapsed = self.clock.elapsed();
        let Some(tap) = self.census.as_mut() else {
            return;
        };
        let Some(flow) = self.flows.get(flow) else {
            return;
        };
        let told = match side {
            Side::Client => flow.client.peer,
            Side::Server => flow.server.peer,
        };
        // A duplicating link delivers a datagram twice: keep its addresses.
        if let Some(&(_, to)) = tap.addresses.get(&id) {
            tap.census.on_arrived(told, to, len, true, elapsed);
        }
    }
}
