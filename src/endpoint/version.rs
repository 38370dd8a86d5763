//! Version negotiation on the endpoint (RFC 9000 §6): a server answers a
//! client's first datagram in another version with the versions it speaks;
//! a client hands a Version Negotiation to the connection it answers.

use std::net::SocketAddr;
use std::time::Instant;

use rand::{Rng, RngCore};

use super::{Endpoint, MIN_INITIAL_DATAGRAM};
use crate::wire::{
    encode_version_negotiation, parse_long_invariant, parse_version_negotiation, ConnectionId,
    VERSION_NEGOTIATION,
};

impl Endpoint {
    /// A long header of a version other than ours. A client's connection
    /// hears Version Negotiation from its server; a server answers a
    /// datagram big enough to be a client's first (RFC 9000 §6.1, §14.1)
    /// with the versions it speaks, and drops anything else.
    pub(super) fn on_other_version(
        &mut self,
        datagram: &[u8],
        version: u32,
        from: SocketAddr,
        now: Instant,
    ) {
        if version == VERSION_NEGOTIATION {
            let handle = parse_version_negotiation(datagram).ok().and_then(|vn| {
                let cid = ConnectionId::new(vn.dcid).ok()?;
                let handle = *self.routes.get(&cid)?;
                let entry = self.connections.get_mut(&handle)?;
                (entry.connection.remote() == from).then_some(())?;
                entry
                    .connection
                    .on_version_negotiation(vn.scid, vn.versions(), now);
                Some(handle)
            });
            if handle.is_some() {
                self.stats.version_negotiations_received += 1;
            } else {
                tracing::trace!(%from, "dropping a version negotiation for no connection of ours");
                self.stats.dropped_unknown_connection += 1;
            }
            return;
        }
        let header = match parse_long_invariant(datagram) {
            Ok(header) if self.server.is_some() && datagram.len() >= MIN_INITIAL_DATAGRAM => header,
            _ => {
                tracing::trace!(%from, version, "dropping a packet of another version");
                self.stats.dropped_malformed += 1;
                return;
            }
        };
        if !self.take_stateless_credit(now) {
            return;
        }
        // A reserved version beside ours, so clients that mishandle
        // unknown entries in the list are found early (RFC 9000 §6.3).
        let reserved = 0x0a0a_0a0a | (self.rng.next_u32() & 0xf0f0_f0f0);
        let mut versions = self
            .server
            .as_ref()
            .map_or_else(Vec::new, |config| config.versions.clone());
        versions.push(reserved);
        let mut answer = Vec::with_capacity(7 + header.dcid.len() + header.scid.len() + 8);
        let unused_bits = self.rng.random_range(0..=0x7fu8);
        if encode_version_negotiation(
            &mut answer,
            unused_bits,
            header.dcid,
            header.scid,
            &versions,
        )
        .is_err()
        {
            return;
        }
        tracing::debug!(%from, version = format_args!("{version:#010x}"), "answering another version with version negotiation");
        self.stats.version_negotiations_sent += 1;
        self.stateless.push_back((answer, from));
    }
}
