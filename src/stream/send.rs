//! The sending half of one stream: bytes the application wrote, which of them
//! are unsent, in flight, acknowledged or waiting to be resent, and whether
//! the FIN or a RESET_STREAM closed it (RFC 9000 §3.1).
//!
//! Bytes are kept from the lowest unacknowledged offset to the end of what
//! the application wrote; an acknowledged prefix is dropped at once, and
//! its memory freed (in blocks, `blocks.rs`), so the buffer holds at most
//! the in-flight window plus the unsent backlog.

use std::io::IoSliceMut;
use std::ops::Range;

use super::blocks::{ByteBlocks, SpareBlocks};
use super::ranges::RangeSet;

/// How the sending half was closed, if it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendClosure {
    /// Not reset: still open for writes, or finished with a FIN.
    Open,
    /// Reset by this endpoint: RESET_STREAM carries `error_code` and
    /// `final_size`; `acked` once the peer acknowledged it.
    Reset {
        error_code: u64,
        final_size: u64,
        acked: bool,
    },
}

/// A chunk of the stream chosen for the next packet: offsets, and whether
/// it carries the FIN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkPlan {
    /// Offset of the first byte.
    pub offset: u64,
    /// Data bytes (0 for a FIN-only chunk).
    pub len: usize,
    /// The chunk ends the stream.
    pub fin: bool,
}

/// The sending half of a stream.
#[derive(Clone, Debug)]
pub struct SendBuffer {
    /// Bytes from `acked_offset` to `written_offset`.
    bytes: ByteBlocks,
    /// Every byte below this offset is acknowledged and dropped.
    acked_offset: u64,
    /// Total bytes the application wrote (the final size once FIN is written).
    written_offset: u64,
    /// Lowest offset never sent; new data starts here.
    unsent_offset: u64,
    /// Acknowledged ranges at or above `acked_offset` (out-of-order acks).
    acked: RangeSet,
    /// Ranges declared lost and not acknowledged since: sent again first.
    retransmit: RangeSet,
    /// The application wrote the FIN.
    fin_written: bool,
    /// The FIN went out at least once.
    fin_sent: bool,
    /// The FIN was lost and must go out again.
    fin_lost: bool,
    /// The peer acknowledged the FIN.
    fin_acked: bool,
    /// Reset by this endpoint.
    closure: SendClosure,
    /// The peer asked us to stop (STOP_SENDING) with this error code.
    stopped_by_peer: Option<u64>,
}

impl Default for SendBuffer {
    fn default() -> Self {
        Self::new()
    }
}

impl SendBuffer {
    /// An empty, open sending half.
    pub fn new() -> Self {
        Self {
            bytes: ByteBlocks::new(),
            acked_offset: 0,
            written_offset: 0,
            unsent_offset: 0,
            acked: RangeSet::new(),
            retransmit: RangeSet::new(),
            fin_written: false,
            fin_sent: false,
            fin_lost: false,
            fin_acked: false,
            closure: SendClosure::Open,
            stopped_by_peer: None,
        }
    }

    /// Bytes held: written but not yet acknowledged.
    pub fn buffered(&self) -> u64 {
        self.written_offset - self.acked_offset
    }

    /// Bytes stored: written and not yet acknowledged, none after a reset.
    /// Memory allocated for them is within two blocks of this
    /// (`blocks.rs`).
    pub fn held(&self) -> u64 {
        self.bytes.len() as u64
    }

    /// Total bytes the application wrote.
    pub fn written_offset(&self) -> u64 {
        self.written_offset
    }

    /// How the half was closed.
    pub fn closure(&self) -> SendClosure {
        self.closure
    }

    /// The error code of the peer's STOP_SENDING, if it sent one.
    pub fn stopped_by_peer(&self) -> Option<u64> {
        self.stopped_by_peer
    }

    /// Records the peer's STOP_SENDING.
    pub fn set_stopped_by_peer(&mut self, error_code: u64) {
        self.stopped_by_peer.get_or_insert(error_code);
    }

    /// Whether the application may still write.
    pub fn is_writable(&self) -> bool {
        !self.fin_written && self.closure == SendClosure::Open && self.stopped_by_peer.is_none()
    }

    /// Appends `data`, into the connection's `spare` blocks first. The
    /// caller checks [`is_writable`](Self::is_writable) and the buffer limit.
    pub fn write(&mut self, data: &[u8], spare: &mut SpareBlocks) {
        self.bytes.extend(data, spare);
        self.written_offset += data.len() as u64;
    }

    /// Appends up to `max` bytes that `fill` writes straight into the
    /// buffer ([`ByteBlocks::extend_with`]); returns how many. The caller
    /// checks as for [`write`](Self::write).
    pub fn write_with(
        &mut self,
        max: usize,
        spare: &mut SpareBlocks,
        fill: impl FnOnce(&mut [IoSliceMut<'_>]) -> usize,
    ) -> usize {
        let written = self.bytes.extend_with(max, spare, fill);
        self.written_offset += written as u64;
        written
    }

    /// Marks the end of the stream at the current written offset.
    pub fn write_fin(&mut self) {
        self.fin_written = true;
    }

    /// Everything, FIN included, is acknowledged: nothing more to deliver.
    pub fn is_all_acked(&self) -> bool {
        self.fin_written && self.fin_acked && self.acked_offset == self.written_offset
    }

    /// Every byte written so far is acknowledged (FIN or not).
    pub fn is_written_data_acked(&self) -> bool {
        self.acked_offset == self.written_offset
    }

    /// The sending half needs nothing more: all data and FIN acknowledged,
    /// or the reset acknowledged.
    pub fn is_done(&self) -> bool {
        match self.closure {
            SendClosure::Reset { acked, .. } => acked,
            SendClosure::Open => self.is_all_acked(),
        }
    }

    /// Lost bytes (or a lost FIN) wait to be sent again.
    pub fn has_retransmission(&self) -> bool {
        self.closure == SendClosure::Open && (!self.retransmit.is_empty() || self.fin_lost)
    }

    /// Whether [`next_retransmission`](Self::next_retransmission) with
    /// `max_len` would return a chunk.
    pub fn retransmission_fits(&self, max_len: usize) -> bool {
        self.closure == SendClosure::Open
            && if self.retransmit.is_empty() {
                self.fin_lost
            } else {
                max_len > 0
            }
    }

    /// Bytes never sent yet.
    pub fn unsent_bytes(&self) -> u64 {
        match self.closure {
            SendClosure::Open => self.written_offset - self.unsent_offset,
            SendClosure::Reset { .. } => 0,
        }
    }

    /// A written FIN that never went out, with no data left before it.
    fn fin_only_pending(&self) -> bool {
        self.fin_written && !self.fin_sent && self.unsent_offset == self.written_offset
    }

    /// Whether new data or a first FIN could go out, given `credit` bytes of
    /// flow-control credit for new data.
    pub fn has_new_data(&self, credit: u64) -> bool {
        self.closure == SendClosure::Open
            && ((self.unsent_bytes() > 0 && credit > 0) || self.fin_only_pending())
    }

    /// Unsent bytes are waiting but `credit` is zero: flow control blocks us.
    pub fn is_blocked_by(&self, credit: u64) -> bool {
        self.closure == SendClosure::Open && self.unsent_bytes() > 0 && credit == 0
    }

    /// Takes the next lost range (or lost FIN) to resend, at most `max_len`
    /// bytes, and marks it in flight.
    pub fn next_retransmission(&mut self, max_len: usize) -> Option<ChunkPlan> {
        if self.closure != SendClosure::Open {
            return None;
        }
        if let Some(range) = self.retransmit.first() {
            let len = (range.end - range.start).min(max_len as u64);
            if len == 0 {
                return None;
            }
            let end = range.start + len;
            self.retransmit.remove(range.start..end);
            // The FIN rides on the chunk that reaches the final size.
            let fin = self.fin_written && self.fin_sent && end == self.written_offset;
            if fin {
                self.fin_lost = false;
            }
            return Some(ChunkPlan {
                offset: range.start,
                len: len as usize,
                fin,
            });
        }
        if self.fin_lost {
            self.fin_lost = false;
            return Some(ChunkPlan {
                offset: self.written_offset,
                len: 0,
                fin: true,
            });
        }
        None
    }

    /// Takes up to `max_len` new bytes (within `credit`) and marks them in
    /// flight; a chunk that reaches the end of a finished stream carries the
    /// FIN (a FIN-only chunk needs no credit).
    pub fn next_new_data(&mut self, max_len: usize, credit: u64) -> Option<ChunkPlan> {
        if self.closure != SendClosure::Open {
            return None;
        }
        let len = self.unsent_bytes().min(max_len as u64).min(credit);
        let end = self.unsent_offset + len;
        let fin = self.fin_written && !self.fin_sent && end == self.written_offset;
        if len == 0 && !fin {
            return None;
        }
        let offset = self.unsent_offset;
        self.unsent_offset = end;
        if fin {
            self.fin_sent = true;
        }
        Some(ChunkPlan {
            offset,
            len: len as usize,
            fin,
        })
    }

    /// Appends bytes `range` to `out`. Returns `false`, appending nothing,
    /// when they are not all held (acknowledged or reset since).
    pub fn copy_range(&self, range: Range<u64>, out: &mut Vec<u8>) -> bool {
        if range.start < self.acked_offset
            || range.end > self.written_offset
            || range.start > range.end
        {
            return false;
        }
        if !matches!(self.closure, SendClosure::Open) {
            return false;
        }
        let start = (range.start - self.acked_offset) as usize;
        let end = (range.end - self.acked_offset) as usize;
        self.bytes.copy_to(start, end, out)
    }

    /// The peer acknowledged `range` (and the FIN if `fin`): drop the
    /// acknowledged prefix (its emptied blocks to `spare`, or freed if
    /// none), forget any queued resend of it.
    pub fn on_acked(&mut self, range: Range<u64>, fin: bool, mut spare: Option<&mut SpareBlocks>) {
        if self.closure != SendClosure::Open {
            return;
        }
        let start = range.start.max(self.acked_offset);
        let end = range.end.min(self.unsent_offset);
        if start < end {
            self.retransmit.remove(start..end);
            self.acked.insert(start..end);
        }
        if fin && self.fin_sent {
            self.fin_acked = true;
            self.fin_lost = false;
        }
        while let Some(first) = self.acked.first() {
            if first.start > self.acked_offset {
                break;
            }
            self.acked.remove(first.clone());
            let drop = (first.end - self.acked_offset) as usize;
            self.bytes.drop_front(drop, spare.as_deref_mut());
            self.acked_offset = first.end;
        }
    }

    /// `range` (and the FIN if `fin`) was lost: queue what is not
    /// acknowledged by another copy for resending. Returns the bytes queued.
    pub fn on_lost(&mut self, range: Range<u64>, fin: bool) -> u64 {
        if self.closure != SendClosure::Open {
            return 0;
        }
        let start = range.start.max(self.acked_offset);
        let end = range.end.min(self.unsent_offset);
        let mut queued = 0;
        if start < end {
            for gap in self.acked.gaps_in(start..end) {
                queued += gap.end - gap.start;
                self.retransmit.insert(gap);
            }
        }
        if fin && self.fin_sent && !self.fin_acked {
            self.fin_lost = true;
        }
        queued
    }

    /// Abandons sending (RFC 9000 §3.1 "Reset Sent"): drops every byte and
    /// returns the final size, the highest offset sent. `None` when there is
    /// nothing to reset (already reset, or everything acknowledged).
    pub fn reset(&mut self, error_code: u64) -> Option<u64> {
        if self.closure != SendClosure::Open || self.is_all_acked() {
            return None;
        }
        let final_size = self.unsent_offset;
        self.closure = SendClosure::Reset {
            error_code,
            final_size,
            acked: false,
        };
        self.bytes.clear(None);
        self.acked = RangeSet::new();
        self.retransmit = RangeSet::new();
        self.fin_lost = false;
        Some(final_size)
    }

    /// The peer acknowledged our RESET_STREAM.
    pub fn on_reset_acked(&mut self) {
        if let SendClosure::Reset { acked, .. } = &mut self.closure {
            *acked = true;
        }
    }

    /// Whether a RESET_STREAM is outstanding (sent or to send, not acked).
    pub fn reset_unacked(&self) -> bool {
        matches!(self.closure, SendClosure::Reset { acked: false, .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(data: &[u8], fin: bool) -> SendBuffer {
        let mut buffer = SendBuffer::new();
        buffer.write(data, &mut SpareBlocks::default());
        if fin {
            buffer.write_fin();
        }
        buffer
    }

    fn bytes_of(buffer: &SendBuffer, plan: ChunkPlan) -> Vec<u8> {
        let mut out = Vec::new();
        assert!(buffer.copy_range(plan.offset..plan.offset + plan.len as u64, &mut out));
        out
    }

    #[test]
    fn new_data_is_cut_by_max_len_and_credit() {
        let mut buffer = written(b"abcdefghij", true);
        let plan = buffer.next_new_data(4, 100);
        assert_eq!(
            plan,
            Some(ChunkPlan {
                offset: 0,
                len: 4,
                fin: false
            })
        );
        // Credit 3 is tighter than max_len 100.
        let plan = buffer.next_new_data(100, 3);
        assert_eq!(
            plan,
            Some(ChunkPlan {
                offset: 4,
                len: 3,
                fin: false
            })
        );
        // The last 3 bytes reach the final size: FIN rides along.
        let plan = buffer
            .next_new_data(100, 100)
            .map(|p| (p, bytes_of(&buffer, p)));
        assert_eq!(
            plan,
            Some((
                ChunkPlan {
                    offset: 7,
                    len: 3,
                    fin: true
                },
                b"hij".to_vec()
            ))
        );
        assert_eq!(buffer.next_new_data(100, 100), None);
    }

    #[test]
    fn fin_written_after_all_data_sent_goes_alone() {
        let mut buffer = written(b"abc", false);
        buffer.next_new_data(100, 100);
        buffer.write_fin();
        // A FIN-only chunk needs no credit.
        assert_eq!(
            buffer.next_new_data(100, 0),
            Some(ChunkPlan {
                offset: 3,
                len: 0,
                fin: true
            })
        );
    }

    #[test]
    fn acked_prefix_is_dropped_out_of_order_acks_wait() {
        let mut buffer = written(&[7; 300], false);
        for _ in 0..3 {
            buffer.next_new_data(100, u64::MAX);
        }
        buffer.on_acked(100..200, false, None);
        assert_eq!(buffer.buffered(), 300, "a hole at 0..100 keeps everything");
        buffer.on_acked(0..100, false, None);
        assert_eq!(buffer.buffered(), 100, "0..200 acknowledged and dropped");
    }

    #[test]
    fn lost_range_already_acked_by_another_copy_is_not_resent() {
        let mut buffer = written(&[1; 200], false);
        buffer.next_new_data(100, u64::MAX);
        buffer.next_new_data(100, u64::MAX);
        buffer.on_acked(50..100, false, None);
        // Lost 0..150: only 0..50 and 100..150 are missing at the peer.
        assert_eq!(buffer.on_lost(0..150, false), 100);
        assert_eq!(
            buffer.next_retransmission(1000),
            Some(ChunkPlan {
                offset: 0,
                len: 50,
                fin: false
            })
        );
        assert_eq!(
            buffer.next_retransmission(1000),
            Some(ChunkPlan {
                offset: 100,
                len: 50,
                fin: false
            })
        );
        assert_eq!(buffer.next_retransmission(1000), None);
    }

    #[test]
    fn copy_spans_the_ring_boundary() {
        let mut buffer = SendBuffer::new();
        buffer.write(&(0..=255).collect::<Vec<u8>>(), &mut SpareBlocks::default());
        buffer.next_new_data(200, u64::MAX);
        buffer.on_acked(0..200, false, None);
        buffer.write(&(0..=255).collect::<Vec<u8>>(), &mut SpareBlocks::default());
        let mut out = Vec::new();
        assert!(buffer.copy_range(250..260, &mut out));
        assert_eq!(out, vec![250, 251, 252, 253, 254, 255, 0, 1, 2, 3]);
        assert!(!buffer.copy_range(100..210, &mut out), "0..200 is gone");
    }

    #[test]
    fn reset_final_size_is_the_highest_offset_sent() {
        let mut buffer = written(&[0; 1000], false);
        buffer.next_new_data(300, u64::MAX);
        assert_eq!(buffer.reset(9), Some(300));
        assert_eq!(
            buffer.next_new_data(100, u64::MAX),
            None,
            "nothing more is sent"
        );
        assert_eq!(buffer.reset(9), None, "only once");
    }
}
