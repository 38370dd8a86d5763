//! The receiving half of one stream: ordered reassembly of STREAM frames,
//! the final size, and a peer's RESET_STREAM (RFC 9000 §3.2, §4.5).
//!
//! Only bytes not yet read are kept: those that arrived in order (up to the
//! first gap) in one ring buffer, those beyond a gap as disjoint segments
//! keyed by offset. In-order frames, the common case, are appended to the
//! ring without an allocation or map work; a frame that closes a gap pulls
//! the segments it reaches into the ring. Frames beyond the flow-control
//! window are refused before they get here, so the bytes held are bounded
//! by the window; each segment also costs about 100 bytes of map entry and
//! allocation, so a peer sending one byte in every two could make that
//! ~50× the window, and the connection caps the number of segments
//! instead (`Streams::on_stream_frame`). An out-of-order frame costs
//! O(log n) map work.

use std::collections::{BTreeMap, VecDeque};

use super::error::TransportError;

/// A RESET_STREAM received from the peer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerReset {
    /// The application error code the peer gave.
    pub error_code: u64,
    /// The application was told (a read returned the reset).
    pub reported: bool,
}

/// How a frame changed the counters that flow control needs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Received {
    /// Growth of the highest offset received: what the connection window is
    /// charged (RFC 9000 §4.1 counts offsets, not copies).
    pub highest_growth: u64,
    /// Bytes not seen before, stored or discarded.
    pub new_bytes: u64,
    /// Growth of the bytes no longer occupying the window (discarded on a
    /// stopped or reset stream).
    pub consumed_growth: u64,
}

/// The receiving half of a stream.
#[derive(Clone, Debug, Default)]
pub struct RecvBuffer {
    /// Unread bytes that arrived in order: offsets `read_offset` up to
    /// `ordered_end()`.
    ordered: VecDeque<u8>,
    /// Unread bytes beyond a gap, keyed by stream offset; disjoint, all
    /// above `ordered_end()`.
    segments: BTreeMap<u64, Vec<u8>>,
    /// Bytes delivered to the application.
    read_offset: u64,
    /// Highest offset received (end of the furthest frame).
    highest_received: u64,
    /// Known once a FIN or RESET_STREAM arrives.
    final_size: Option<u64>,
    /// A read returned the end of the stream.
    fin_delivered: bool,
    /// The peer reset the stream.
    reset: Option<PeerReset>,
    /// The application asked the peer to stop; arriving data is discarded.
    stopped: bool,
    /// Bytes no longer occupying the window: read or discarded.
    consumed: u64,
}

impl RecvBuffer {
    /// An empty receiving half.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes read or discarded: what the window may move past.
    pub fn consumed(&self) -> u64 {
        self.consumed
    }

    /// Runs of bytes held beyond a gap. Each costs a map entry and an
    /// allocation on top of its bytes, so the connection caps their number
    /// (`StreamConfig::max_out_of_order_segments`).
    pub fn out_of_order_segments(&self) -> u64 {
        self.segments.len() as u64
    }

    /// Highest offset received so far.
    pub fn highest_received(&self) -> u64 {
        self.highest_received
    }

    /// The stream's final size, once a FIN or reset told it.
    pub fn final_size(&self) -> Option<u64> {
        self.final_size
    }

    /// The peer's reset, if any.
    pub fn reset(&self) -> Option<PeerReset> {
        self.reset
    }

    /// Whether the application stopped the stream.
    pub fn is_stopped(&self) -> bool {
        self.stopped
    }

    /// Whether MAX_STREAM_DATA updates still make sense: the final size is
    /// unknown and nobody abandoned the stream (RFC 9000 §3.2: none once the
    /// size is known).
    pub fn wants_credit(&self) -> bool {
        self.final_size.is_none() && !self.stopped && self.reset.is_none()
    }

    /// Bytes that arrived in order and wait for the application.
    pub fn unread_in_order(&self) -> u64 {
        self.ordered.len() as u64
    }

    /// Whether a read would return something: bytes, the end of the
    /// stream, or the peer's reset.
    pub fn is_readable(&self) -> bool {
        if self.stopped {
            return false;
        }
        if let Some(reset) = self.reset {
            return !reset.reported;
        }
        !self.ordered.is_empty()
            || (self.final_size == Some(self.read_offset) && !self.fin_delivered)
    }

    /// Nothing more for the application: end of stream read, reset
    /// reported, or stopped with the final size known.
    pub fn is_done(&self) -> bool {
        self.fin_delivered
            || self.reset.is_some_and(|reset| reset.reported)
            || (self.stopped && self.final_size.is_some())
    }

    /// Checks the final-size rules for a frame covering `offset..end`
    /// (RFC 9000 §4.5), without changing anything.
    pub fn check_frame(&self, end: u64, fin: bool) -> Result<(), TransportError> {
        match self.final_size {
            Some(final_size) if end > final_size => Err(TransportError::final_size(
                "STREAM data beyond the stream's final size",
            )),
            Some(final_size) if fin && end != final_size => Err(TransportError::final_size(
                "STREAM FIN changed the stream's final size",
            )),
            None if fin && end < self.highest_received => Err(TransportError::final_size(
                "STREAM FIN below data already received",
            )),
            _ => Ok(()),
        }
    }

    /// Takes in a frame already checked by [`check_frame`](Self::check_frame)
    /// and flow control. `offset + data.len()` must not overflow.
    pub fn receive(&mut self, offset: u64, data: &[u8], fin: bool) -> Received {
        let end = offset.saturating_add(data.len() as u64);
        let mut received = Received {
            highest_growth: end.saturating_sub(self.highest_received),
            ..Received::default()
        };
        self.highest_received = self.highest_received.max(end);
        if fin {
            self.final_size = Some(end);
        }
        if self.reset.is_some() {
            return received;
        }
        if self.stopped {
            received.new_bytes = received.highest_growth;
            received.consumed_growth = self.highest_received - self.consumed;
            self.consumed = self.highest_received;
            return received;
        }
        received.new_bytes = self.store(offset, data);
        received
    }

    /// The offset just past the bytes held in order.
    fn ordered_end(&self) -> u64 {
        self.read_offset + self.ordered.len() as u64
    }

    /// Keeps the parts of `data` not already held or read. Returns how many
    /// bytes were new.
    fn store(&mut self, offset: u64, data: &[u8]) -> u64 {
        let end = offset.saturating_add(data.len() as u64);
        let held = self.ordered_end();
        if end <= held {
            return 0;
        }
        let (offset, data) = if offset < held {
            (
                held,
                data.get((held - offset) as usize..).unwrap_or_default(),
            )
        } else {
            (offset, data)
        };
        if offset == held {
            self.append_in_order(data)
        } else {
            self.store_beyond_gap(offset, data)
        }
    }

    /// `data` starts where the in-order bytes end: appends it, then pulls
    /// in the segments it reaches. Returns the bytes not held before.
    fn append_in_order(&mut self, data: &[u8]) -> u64 {
        let start = self.ordered_end();
        self.ordered.extend(data);
        let mut new_bytes = data.len() as u64;
        loop {
            let ordered_end = self.ordered_end();
            let Some(entry) = self.segments.first_entry() else {
                break;
            };
            let segment_start = *entry.key();
            if segment_start > ordered_end {
                break;
            }
            let segment = entry.remove();
            let segment_end = segment_start + segment.len() as u64;
            // The part this frame brought again was held already.
            let overlap = segment_end
                .min(start + data.len() as u64)
                .saturating_sub(segment_start.max(start));
            new_bytes -= overlap.min(new_bytes);
            if segment_end > ordered_end {
                let tail = (ordered_end - segment_start) as usize;
                self.ordered.extend(segment.get(tail..).unwrap_or_default());
            }
        }
        new_bytes
    }

    /// `data` starts beyond a gap: keeps what no segment holds yet.
    fn store_beyond_gap(&mut self, offset: u64, data: &[u8]) -> u64 {
        let end = offset.saturating_add(data.len() as u64);
        let mut offset = offset;
        let mut data = data;
        if let Some((&before_start, before)) = self.segments.range(..=offset).next_back() {
            let before_end = before_start + before.len() as u64;
            if before_end >= end {
                return 0;
            }
            if before_end > offset {
                data = data
                    .get((before_end - offset) as usize..)
                    .unwrap_or_default();
                offset = before_end;
            }
        }
        let mut stored = 0;
        while !data.is_empty() {
            let next = self
                .segments
                .range(offset..end)
                .next()
                .map(|(&start, segment)| (start, start + segment.len() as u64));
            let Some((next_start, next_end)) = next else {
                stored += data.len() as u64;
                self.segments.insert(offset, data.to_vec());
                break;
            };
            if next_start > offset {
                let gap = (next_start - offset) as usize;
                let piece = data.get(..gap).unwrap_or_default();
                stored += piece.len() as u64;
                self.segments.insert(offset, piece.to_vec());
            }
            let skip_to = next_end.min(end);
            data = data.get((skip_to - offset) as usize..).unwrap_or_default();
            offset = skip_to;
        }
        stored
    }

    /// Copies in-order bytes into `buf`. Returns the bytes copied and
    /// whether the end of the stream was reached (all data read). The
    /// streams read through [`read_with`](Self::read_with); this is its
    /// copying form, for tests.
    #[cfg(test)]
    pub fn read(&mut self, buf: &mut [u8]) -> (usize, bool) {
        let mut at = 0;
        self.read_with(buf.len(), &mut |bytes| {
            if let Some(to) = buf.get_mut(at..at + bytes.len()) {
                to.copy_from_slice(bytes);
            }
            at += bytes.len();
        })
    }

    /// Like [`read`](Self::read), without a copy: lends up to `max` bytes
    /// in order to `consume`, as one or two slices (the ring's two halves),
    /// each taken whole.
    pub fn read_with(&mut self, max: usize, consume: &mut dyn FnMut(&[u8])) -> (usize, bool) {
        let take = max.min(self.ordered.len());
        let (front, back) = self.ordered.as_slices();
        let from_front = take.min(front.len());
        if let Some(bytes) = front.get(..from_front).filter(|b| !b.is_empty()) {
            consume(bytes);
        }
        if let Some(bytes) = back.get(..take - from_front).filter(|b| !b.is_empty()) {
            consume(bytes);
        }
        self.ordered.drain(..take);
        self.read_offset += take as u64;
        self.consumed = self.consumed.max(self.read_offset);
        let fin = self.final_size == Some(self.read_offset);
        if fin {
            self.fin_delivered = true;
        }
        (take, fin)
    }

    /// Checks a RESET_STREAM's final size against what is known
    /// (RFC 9000 §4.5), without changing anything.
    pub fn check_reset(&self, final_size: u64) -> Result<(), TransportError> {
        match self.final_size {
            Some(known) if known != final_size => Err(TransportError::final_size(
                "RESET_STREAM changed the stream's final size",
            )),
            _ if final_size < self.highest_received => Err(TransportError::final_size(
                "RESET_STREAM final size below data already received",
            )),
            _ => Ok(()),
        }
    }

    /// Applies a checked RESET_STREAM: unread data is dropped and the whole
    /// final size counts as consumed (RFC 9000 §4.5). A stream already read
    /// to its end, or already reset, ignores it.
    pub fn on_reset(&mut self, error_code: u64, final_size: u64) -> Received {
        if self.fin_delivered || self.reset.is_some() {
            return Received::default();
        }
        let received = Received {
            highest_growth: final_size.saturating_sub(self.highest_received),
            new_bytes: final_size.saturating_sub(self.highest_received),
            consumed_growth: final_size.saturating_sub(self.consumed),
        };
        self.highest_received = self.highest_received.max(final_size);
        self.final_size = Some(final_size);
        self.consumed = self.consumed.max(final_size);
        self.ordered = VecDeque::new();
        self.segments.clear();
        self.reset = Some(PeerReset {
            error_code,
            reported: self.stopped,
        });
        received
    }

    /// The application was told about the reset.
    pub fn mark_reset_reported(&mut self) {
        if let Some(reset) = &mut self.reset {
            reset.reported = true;
        }
    }

    /// The application no longer wants the data: drop what is buffered and
    /// discard what arrives. Returns the growth of the consumed count.
    pub fn stop(&mut self) -> u64 {
        if self.stopped {
            return 0;
        }
        self.stopped = true;
        self.ordered = VecDeque::new();
        self.segments.clear();
        let growth = self.highest_received.saturating_sub(self.consumed);
        self.consumed = self.consumed.max(self.highest_received);
        growth
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn read_all(buffer: &mut RecvBuffer) -> (Vec<u8>, bool) {
        let mut out = Vec::new();
        let mut buf = [0u8; 37];
        loop {
            let (n, fin) = buffer.read(&mut buf);
            out.extend_from_slice(&buf[..n]);
            if fin || n == 0 {
                return (out, fin);
            }
        }
    }

    /// `read_with` lends the bytes in order and whole, across the ring's
    /// wrap (two slices), at most `max` at a time, with the end of the
    /// stream where `read` would say it.
    #[test]
    fn a_read_in_place_lends_the_bytes_in_order_across_the_rings_wrap() {
        let mut buffer = RecvBuffer::new();
        let data: Vec<u8> = (0..200u8).collect();
        buffer.receive(0, &data[..150], false);
        let mut first = [0u8; 120];
        assert_eq!(buffer.read(&mut first), (120, false));
        // Appended after a drain: the ring wraps around its end.
        buffer.receive(150, &data[150..], true);
        let mut lent = Vec::new();
        let mut slices = 0;
        let (n, fin) = buffer.read_with(60, &mut |bytes| {
            lent.extend_from_slice(bytes);
            slices += 1;
        });
        assert_eq!((n, fin), (60, false));
        assert_eq!(lent, &data[120..180]);
        let (n, fin) = buffer.read_with(1000, &mut |bytes| lent.extend_from_slice(bytes));
        assert_eq!((n, fin), (20, true));
        assert_eq!(lent, &data[120..]);
        assert_eq!(buffer.consumed(), 200);
        assert!(slices >= 1);
    }

    #[test]
    fn out_of_order_bytes_wait_for_the_gap() {
        let mut buffer = RecvBuffer::new();
        buffer.receive(3, b"def", true);
        assert!(!buffer.is_readable(), "0..3 missing");
        assert_eq!(read_all(&mut buffer), (Vec::new(), false));
        buffer.receive(0, b"abc", false);
        assert_eq!(read_all(&mut buffer), (b"abcdef".to_vec(), true));
    }

    #[test]
    fn fin_only_after_all_data() {
        let mut buffer = RecvBuffer::new();
        buffer.receive(0, b"ab", false);
        buffer.receive(4, b"", true);
        assert_eq!(
            read_all(&mut buffer),
            (b"ab".to_vec(), false),
            "2..4 missing"
        );
        buffer.receive(2, b"cd", false);
        assert_eq!(read_all(&mut buffer), (b"cd".to_vec(), true));
    }

    #[test]
    fn duplicates_count_once() {
        let mut buffer = RecvBuffer::new();
        assert_eq!(buffer.receive(0, b"abcd", false).new_bytes, 4);
        // 2..6 overlaps 2..4: only 4..6 is new; highest grows 4 → 6.
        let received = buffer.receive(2, b"cdef", false);
        assert_eq!((received.new_bytes, received.highest_growth), (2, 2));
        assert_eq!(buffer.receive(1, b"bc", false), Received::default());
    }

    #[test]
    fn final_size_rules() {
        let mut buffer = RecvBuffer::new();
        buffer.receive(0, b"abcdef", false);
        assert!(
            buffer.check_frame(4, true).is_err(),
            "FIN below data received"
        );
        buffer.receive(6, b"", true);
        assert!(
            buffer.check_frame(7, false).is_err(),
            "data past the final size"
        );
        assert!(buffer.check_frame(5, true).is_err(), "FIN moved");
        assert!(buffer.check_frame(6, true).is_ok(), "the same FIN again");
        assert!(buffer.check_reset(7).is_err(), "reset moved the final size");
        assert!(buffer.check_reset(6).is_ok());
    }

    #[test]
    fn reset_drops_unread_data_and_consumes_the_final_size() {
        let mut buffer = RecvBuffer::new();
        buffer.receive(0, b"abcd", false);
        let mut buf = [0u8; 1];
        buffer.read(&mut buf);
        // Read 1 of 4 bytes; final size 10: 10 − 1 = 9 bytes freed,
        // highest grows 4 → 10.
        let received = buffer.on_reset(7, 10);
        assert_eq!((received.consumed_growth, received.highest_growth), (9, 6));
        assert!(buffer.is_readable(), "the reset is there to report");
        assert_eq!(buffer.read(&mut buf), (0, false));
    }

    proptest! {
        /// Whatever the order, duplication and overlap of the frames, the
        /// bytes read back are exactly the bytes sent, and the FIN comes
        /// only after the last of them.
        #[test]
        fn any_order_of_overlapping_frames_reads_back_the_string(
            message in proptest::collection::vec(any::<u8>(), 1..2000),
            cuts in proptest::collection::vec((0usize..2000, 1usize..300), 1..40),
            order_seed in any::<u64>(),
            read_between in any::<bool>(),
        ) {
            let len = message.len();
            // Frames: random (possibly overlapping) slices, plus a tiling so
            // every byte is covered; the last tile carries the FIN.
            let mut frames: Vec<(usize, usize, bool)> = cuts
                .iter()
                .map(|&(start, span)| (start % len, ((start % len) + span).min(len), false))
                .collect();
            let mut start = 0;
            while start < len {
                let end = (start + 97).min(len);
                frames.push((start, end, end == len));
                start = end;
            }
            // Duplicate a few and shuffle deterministically from the seed.
            let duplicates: Vec<_> = frames.iter().step_by(3).cloned().collect();
            frames.extend(duplicates);
            let mut state = order_seed | 1;
            for i in (1..frames.len()).rev() {
                state ^= state << 13; state ^= state >> 7; state ^= state << 17;
                frames.swap(i, (state % (i as u64 + 1)) as usize);
            }

            let mut buffer = RecvBuffer::new();
            let mut out = Vec::new();
            let mut fin_seen = false;
            let mut new_bytes = 0;
            for (start, end, fin) in frames {
                let data = &message[start..end];
                prop_assert!(buffer.check_frame(end as u64, fin).is_ok());
                new_bytes += buffer.receive(start as u64, data, fin).new_bytes;
                if read_between {
                    let (bytes, fin) = read_all(&mut buffer);
                    prop_assert!(!fin_seen || bytes.is_empty(), "nothing after the FIN");
                    out.extend(bytes);
                    fin_seen |= fin;
                    prop_assert!(!fin || out.len() == len, "FIN only after all data");
                }
            }
            let (bytes, fin) = read_all(&mut buffer);
            out.extend(bytes);
            prop_assert!(fin || fin_seen);
            prop_assert_eq!(out, message);
            prop_assert_eq!(new_bytes, len as u64, "every byte counted new exactly once");
        }
    }
}
