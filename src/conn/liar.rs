//! Attack models of a receiver that lies in CORRUPTED frames, to escape its
//! sender's congestion control (SECURITY.md, "Trust model of corruption
//! notices"). Only the simulator's experiments and the tests turn them on
//! (`Config::lie_about_losses`); an honest endpoint never builds one.
//!
//! - [`ReceiverLie::EveryGap`] names every gap in the packet numbers it
//!   received: skipped numbers among them, so the skip witnesses
//!   (`conn::skip`) catch it.
//! - [`ReceiverLie::RealLosses`] reads the stream offsets of what it
//!   decrypts. A skipped number leaves no hole in the STREAM offsets, a
//!   lost packet of new data does; this receiver names a gap only when the
//!   hole it sees accounts for every missing number, so it never names a
//!   skipped one and never trips a witness. It is the attacker the
//!   sender's corruption budget (`recovery::corruption`) is measured
//!   against.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::wire::{parse_frames, Frame};

/// How a receiver misbehaves in its CORRUPTED frames.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReceiverLie {
    /// Names only packets that arrived with a damaged payload.
    #[default]
    Honest,
    /// Names every gap in the packet numbers received.
    EveryGap,
    /// Names the gaps it can tell were real losses from the holes they
    /// leave in the stream offsets, and no other.
    RealLosses,
}

/// Streams whose offsets the liar follows, at most: a bulk transfer has a
/// handful, and the model is a test adversary, not a server.
const FOLLOWED_STREAMS: usize = 64;
/// The longest gap the liar names in one go (more would be a burst the
/// sender cannot have had in flight at once).
const MAX_NAMED_GAP: u64 = 256;

/// [`ReceiverLie::RealLosses`]: which gaps in the 1-RTT packet numbers were
/// real losses of stream data.
#[derive(Debug, Default)]
pub(super) struct LossReader {
    /// The end of the highest-offset data received, per stream.
    highest_end: HashMap<u64, u64>,
    /// The largest packet number received.
    largest: Option<u64>,
    /// The most new stream bytes one packet has carried.
    packet_payload: u64,
}

impl LossReader {
    /// Packet `packet_number`, carrying `frames`, was received intact.
    /// Returns the numbers in the gap just below it that the stream
    /// offsets prove were lost (all of them or none), to be named
    /// corrupted.
    pub(super) fn on_packet(&mut self, packet_number: u64, frames: &[u8]) -> Vec<u64> {
        let gap_start = self.largest.map_or(0, |l| l + 1);
        let mut hole = 0;
        for frame in parse_frames(frames) {
            let Ok(Frame::Stream {
                id, offset, data, ..
            }) = frame
            else {
                continue;
            };
            let end = offset.saturating_add(data.len() as u64);
            let highest = self.highest_end.get(&id).copied().unwrap_or(0);
            hole += offset.saturating_sub(highest);
            if end > highest
                && (self.highest_end.len() < FOLLOWED_STREAMS || self.highest_end.contains_key(&id))
            {
                self.highest_end.insert(id, end);
                self.packet_payload = self.packet_payload.max(end - offset.max(highest));
            }
        }
        if self.largest.is_some_and(|l| packet_number <= l) {
            return Vec::new();
        }
        self.largest = Some(packet_number);
        let gap = packet_number - gap_start;
        if gap == 0 || gap > MAX_NAMED_GAP || hole == 0 || self.packet_payload == 0 {
            return Vec::new();
        }
        // Packets of new data the hole needs: if fewer than the numbers
        // missing, one of them may be a skipped number, and naming it would
        // give the lie away.
        let lost_packets = hole.div_ceil(self.packet_payload);
        if lost_packets < gap {
            return Vec::new();
        }
        (gap_start..packet_number).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(offset: u64, len: usize) -> Vec<u8> {
        let mut out = Vec::new();
        Frame::Stream {
            id: 0,
            offset,
            data: &vec![7; len],
            fin: false,
        }
        .encode(&mut out);
        out
    }

    #[test]
    fn a_skipped_number_leaves_no_hole_and_is_not_named() {
        let mut reader = LossReader::default();
        assert!(reader.on_packet(0, &stream(0, 1000)).is_empty());
        assert!(reader.on_packet(1, &stream(1000, 1000)).is_empty());
        // 2 was skipped: 3 carries the next bytes.
        assert!(reader.on_packet(3, &stream(2000, 1000)).is_empty());
    }

    #[test]
    fn a_lost_packet_of_new_data_is_named() {
        let mut reader = LossReader::default();
        reader.on_packet(0, &stream(0, 1000));
        // 1 and 2 were lost: 2000 bytes missing.
        assert_eq!(reader.on_packet(3, &stream(3000, 1000)), vec![1, 2]);
    }

    #[test]
    fn a_gap_with_fewer_lost_packets_than_numbers_is_not_named() {
        let mut reader = LossReader::default();
        reader.on_packet(0, &stream(0, 1000));
        // One packet of data missing over two numbers: one was skipped.
        assert!(reader.on_packet(3, &stream(2000, 1000)).is_empty());
    }

    #[test]
    fn a_lost_retransmission_leaves_no_hole_and_is_not_named() {
        let mut reader = LossReader::default();
        reader.on_packet(0, &stream(0, 1000));
        reader.on_packet(2, &stream(2000, 1000));
        // 3 (a resend of 1000..2000) was lost; 4 resends nothing new.
        assert!(reader.on_packet(4, &stream(1000, 1000)).is_empty());
    }
}
