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
    /// Numbers missing since the last packet that carried new data: the
    /// data a hole lacks was sent in these.
    missing: Vec<u64>,
    /// The longest packet received: more than any packet's stream bytes.
    longest_packet: u64,
}

impl LossReader {
    /// Packet `packet_number`, `packet_len` bytes long and carrying
    /// `frames`, was received intact. Returns the numbers the stream
    /// offsets prove were lost (every number missing since the last packet
    /// of new data, or none), to be named corrupted.
    pub(super) fn on_packet(
        &mut self,
        packet_number: u64,
        packet_len: usize,
        frames: &[u8],
    ) -> Vec<u64> {
        self.longest_packet = self.longest_packet.max(packet_len as u64);
        match self.largest {
            Some(largest) if packet_number <= largest => {
                self.missing.retain(|&pn| pn != packet_number);
            }
            _ => {
                let gap_start = self.largest.map_or(0, |l| l + 1);
                let room = MAX_NAMED_GAP.saturating_sub(self.missing.len() as u64);
                self.missing
                    .extend((gap_start..packet_number).take(room as usize));
                self.largest = Some(packet_number);
            }
        }
        let mut hole = 0;
        let mut new_data = false;
        for frame in parse_frames(frames) {
            let Ok(Frame::Stream {
                id, offset, data, ..
            }) = frame
            else {
                continue;
            };
            let end = offset.saturating_add(data.len() as u64);
            let highest = self.highest_end.get(&id).copied().unwrap_or(0);
            if end <= highest {
                continue;
            }
            new_data = true;
            hole += offset.saturating_sub(highest);
            if self.highest_end.len() < FOLLOWED_STREAMS || self.highest_end.contains_key(&id) {
                self.highest_end.insert(id, end);
            }
        }
        if !new_data {
            return Vec::new();
        }
        let missing = std::mem::take(&mut self.missing);
        // Each missing packet carried less than the longest packet, so the
        // hole needs at least this many of them: if fewer than are
        // missing, one may be a skipped number, and naming it would give
        // the lie away.
        if hole == 0
            || missing.is_empty()
            || hole.div_ceil(self.longest_packet) < missing.len() as u64
        {
            return Vec::new();
        }
        missing
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Packets of 1000 stream bytes, 1050 bytes long.
    const LEN: usize = 1050;

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
        assert!(reader.on_packet(0, LEN, &stream(0, 1000)).is_empty());
        assert!(reader.on_packet(1, LEN, &stream(1000, 1000)).is_empty());
        // 2 was skipped: 3 carries the next bytes.
        assert!(reader.on_packet(3, LEN, &stream(2000, 1000)).is_empty());
    }

    #[test]
    fn a_lost_packet_of_new_data_is_named() {
        let mut reader = LossReader::default();
        reader.on_packet(0, LEN, &stream(0, 1000));
        // 1 and 2 were lost: 2000 bytes missing.
        assert_eq!(reader.on_packet(3, LEN, &stream(3000, 1000)), vec![1, 2]);
    }

    #[test]
    fn a_gap_with_fewer_lost_packets_than_numbers_is_not_named() {
        let mut reader = LossReader::default();
        reader.on_packet(0, LEN, &stream(0, 1000));
        // One packet of data missing over two numbers: one was skipped.
        assert!(reader.on_packet(3, LEN, &stream(2000, 1000)).is_empty());
    }

    #[test]
    fn a_lost_retransmission_leaves_no_hole_and_is_not_named() {
        let mut reader = LossReader::default();
        reader.on_packet(0, LEN, &stream(0, 1000));
        reader.on_packet(2, LEN, &stream(2000, 1000));
        // 3 (a resend of 1000..2000) was lost; 4 resends nothing new
        // either, and 5 carries the next new bytes.
        assert!(reader.on_packet(4, LEN, &stream(1000, 1000)).is_empty());
        assert!(reader.on_packet(5, LEN, &stream(3000, 1000)).is_empty());
    }

    #[test]
    fn a_hole_older_than_the_gap_does_not_name_a_skipped_number() {
        let mut reader = LossReader::default();
        reader.on_packet(0, LEN, &stream(0, 1000));
        // 1 (1000..2000) is lost, 2 resends old bytes, 3 is skipped, 4
        // carries 2000..3000: one packet of data for two missing numbers.
        assert!(reader.on_packet(2, LEN, &stream(0, 1000)).is_empty());
        assert!(reader.on_packet(4, LEN, &stream(2000, 1000)).is_empty());
    }
}
