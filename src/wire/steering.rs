//! Connection IDs that name the worker serving them.
//!
//! A multi-core server runs one endpoint per worker, each on its own
//! `SO_REUSEPORT` socket bound to the same address. The kernel must hand
//! every datagram of a connection to the same worker, even after the
//! client's address changes (migration, NAT rebinding), so it cannot pick
//! by the 4-tuple: it picks by the destination connection ID, whose first
//! byte, modulo the number of workers, is the worker's index
//! (`io::attach_cid_steering` loads the program that does it).
//!
//! - A server connection's own IDs (the one in its first Initial, every
//!   NEW_CONNECTION_ID, a Retry's) are drawn at random and then given a
//!   first byte that names their worker ([`CidSteering::name`]); the other
//!   bytes stay random, so IDs are as unguessable as before but for
//!   log2(workers) bits.
//! - The client's first Initial carries an ID the client chose at random: it
//!   lands on worker `dcid[0] % workers`, which is as good as any, and its
//!   retransmissions (and 0-RTT) carry the same ID to the same worker.
//!
//! The first byte of the destination ID sits at a fixed offset in both
//! header forms ([`DCID_FIRST_BYTE_LONG`], [`DCID_FIRST_BYTE_SHORT`]), which
//! is what lets a few classic-BPF instructions route without parsing.

use super::header::LONG_FORM_BIT;

/// Offset of the destination connection ID's first byte in a long header:
/// flags (1), version (4), DCID length (1).
pub const DCID_FIRST_BYTE_LONG: u32 = 6;
/// Offset of the destination connection ID's first byte in a short header:
/// after the flags byte.
pub const DCID_FIRST_BYTE_SHORT: u32 = 1;
/// The most workers one socket group can steer among (IDs name a worker in
/// one byte, and every worker needs several values of it).
pub const MAX_WORKERS: usize = 128;

/// Worker `index` of `workers`: the connection IDs this endpoint issues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CidSteering {
    index: u8,
    workers: u8,
}

impl CidSteering {
    /// Worker `index` of `workers` (`1..=MAX_WORKERS`); `None` if out of
    /// range.
    pub fn new(index: usize, workers: usize) -> Option<Self> {
        if workers == 0 || workers > MAX_WORKERS || index >= workers {
            return None;
        }
        Some(Self {
            index: u8::try_from(index).ok()?,
            workers: u8::try_from(workers).ok()?,
        })
    }

    /// This worker's index.
    pub fn index(self) -> usize {
        usize::from(self.index)
    }

    /// How many workers share the socket group.
    pub fn workers(self) -> usize {
        usize::from(self.workers)
    }

    /// Rewrites the first byte of a freshly drawn random ID so that it names
    /// this worker, keeping as much of its randomness as fits:
    /// `index + workers · (byte mod ⌊256 / workers⌋)`, at most 255.
    pub fn name(self, cid: &mut [u8]) {
        if let Some(first) = cid.first_mut() {
            let workers = u16::from(self.workers);
            let choices = 256 / workers;
            let named = u16::from(self.index) + workers * (u16::from(*first) % choices);
            *first = u8::try_from(named).unwrap_or(self.index);
        }
    }

    /// The worker an ID's first byte names (what the kernel program
    /// computes): `None` for an empty ID.
    pub fn worker_of(cid: &[u8], workers: usize) -> Option<usize> {
        let first = *cid.first()?;
        Some(usize::from(first) % workers.max(1))
    }

    /// The worker the kernel program (`io::attach_cid_steering`) picks for
    /// `datagram`: the destination ID's first byte, read where the header
    /// form puts it. `None` for a datagram too short to hold it (the kernel
    /// then hashes).
    pub fn worker_of_datagram(datagram: &[u8], workers: usize) -> Option<usize> {
        let long_form = datagram.first()? & LONG_FORM_BIT != 0;
        let at = if long_form {
            DCID_FIRST_BYTE_LONG
        } else {
            DCID_FIRST_BYTE_SHORT
        };
        Self::worker_of(datagram.get(usize::try_from(at).ok()?..)?, workers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::header::{Header, PacketType};
    use crate::wire::{ConnectionId, VERSION};

    #[test]
    fn every_named_id_routes_back_to_its_worker() {
        for workers in [1, 2, 3, 7, 8, 100, MAX_WORKERS] {
            for index in 0..workers {
                let steering = CidSteering::new(index, workers).unwrap();
                for first in 0..=255u8 {
                    let mut cid = [first, 1, 2, 3, 4, 5, 6, 7];
                    steering.name(&mut cid);
                    assert_eq!(CidSteering::worker_of(&cid, workers), Some(index));
                    assert_eq!(&cid[1..], &[1, 2, 3, 4, 5, 6, 7], "the rest stays random");
                }
            }
        }
    }

    #[test]
    fn naming_keeps_every_choice_of_the_first_byte_it_can() {
        // Two workers: 128 first bytes each, none shared.
        let steering = CidSteering::new(1, 2).unwrap();
        let named: std::collections::BTreeSet<u8> = (0..=255u8)
            .map(|first| {
                let mut cid = [first];
                steering.name(&mut cid);
                cid[0]
            })
            .collect();
        assert_eq!(named.len(), 128);
        assert!(named.iter().all(|b| b % 2 == 1));
    }

    #[test]
    fn out_of_range_workers_are_refused() {
        assert!(CidSteering::new(0, 0).is_none());
        assert!(CidSteering::new(2, 2).is_none());
        assert!(CidSteering::new(0, MAX_WORKERS + 1).is_none());
    }

    #[test]
    fn the_offsets_are_where_both_header_forms_put_the_dcid() {
        let dcid = [0xab, 2, 3, 4, 5, 6, 7, 8];
        for (ty, offset) in [
            (PacketType::Initial, DCID_FIRST_BYTE_LONG),
            (PacketType::Handshake, DCID_FIRST_BYTE_LONG),
            (PacketType::OneRtt, DCID_FIRST_BYTE_SHORT),
        ] {
            let header = Header {
                ty,
                version: VERSION,
                dcid: ConnectionId::new(&dcid).unwrap(),
                scid: ConnectionId::new(&[9; 8]).unwrap(),
                token: &[],
                packet_number: 1,
                payload_len: 100,
                key_phase: false,
            };
            let mut datagram = Vec::new();
            header.encode(&mut datagram);
            assert_eq!(datagram[offset as usize], 0xab, "{ty:?}");
            assert_eq!(
                CidSteering::worker_of_datagram(&datagram, 7),
                CidSteering::worker_of(&dcid, 7),
                "{ty:?}"
            );
        }
        assert_eq!(CidSteering::worker_of_datagram(&[0x40], 2), None);
        assert_eq!(CidSteering::worker_of_datagram(&[], 2), None);
    }
}
