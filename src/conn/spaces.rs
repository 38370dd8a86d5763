//! The state a connection keeps per packet-number space (RFC 9000 §12.3):
//! the keys that seal and open the space's packets, the next packet number
//! to send, the receiver's ACK state and the probes a PTO still owes.
//!
//! Owns: grouping that state in one `PacketSpace` per space, and indexing
//! the three by `SpaceId`. Must not: decide anything; the connection's
//! send and receive paths drive each field (the sent packets themselves
//! stay in `recovery`, the CRYPTO streams in `handshake`).

use std::ops::{Index, IndexMut};

use super::ack::AckState;
use super::ecn::EcnCounts;
use crate::crypto::PacketProtection;
use crate::recovery::SpaceId;

/// One packet-number space's state.
#[derive(Debug)]
pub(super) struct PacketSpace {
    /// Keys for the space's packets; for 1-RTT the current key phase's
    /// (the others are in `KeyPhases`). `None` before they are installed
    /// and once discarded (RFC 9001 §4.9).
    pub(super) keys: Option<Box<dyn PacketProtection>>,
    /// The packet number the next packet sent in the space takes.
    pub(super) next_packet_number: u64,
    /// What arrived in the space and the ACKs owed for it.
    pub(super) acks: AckState,
    /// Ack-eliciting packets a PTO (or a path change) asked for and not yet
    /// sent.
    pub(super) probes: u32,
    /// Packets of the space processed, by the ECN field of the datagram
    /// each came in (RFC 9000 §13.4.1): what our ACK_ECN frames report.
    pub(super) ecn_received: EcnCounts,
}

impl PacketSpace {
    /// A space with no packet sent or received yet.
    pub(super) fn new(keys: Option<Box<dyn PacketProtection>>, acks: AckState) -> Self {
        PacketSpace {
            keys,
            next_packet_number: 0,
            acks,
            probes: 0,
            ecn_received: EcnCounts::default(),
        }
    }
}

// Indexing by `SpaceId` rather than `SpaceId::index()` names the space at
// each use, and borrows only `spaces`, so other fields stay free alongside.
impl Index<SpaceId> for [PacketSpace; 3] {
    type Output = PacketSpace;

    fn index(&self, space: SpaceId) -> &PacketSpace {
        &self[space.index()]
    }
}

impl IndexMut<SpaceId> for [PacketSpace; 3] {
    fn index_mut(&mut self, space: SpaceId) -> &mut PacketSpace {
        &mut self[space.index()]
    }
}
