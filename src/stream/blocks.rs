//! [`ByteBlocks`]: the bytes of a send buffer, kept in blocks of at most
//! [`BLOCK_BYTES`] so that memory follows what is held. A `VecDeque<u8>`
//! keeps the capacity of its largest moment, so a stream that once held
//! 32 MiB would pin 32 MiB until it closed, and the connection's cap on
//! bytes held would not bound memory; here an acknowledged block leaves
//! the stream at once, and what a stream allocates stays within two blocks
//! of what it holds.
//!
//! [`SpareBlocks`]: where the emptied blocks go. A bulk sender empties
//! blocks at the front as fast as it fills new ones at the back; freeing
//! each one made glibc trim its heap and grow it again, so every new
//! block's pages were faulted in and zeroed anew (35–135 thousand page
//! faults per GiB on a loopback server, which spent a fifth more CPU than
//! with the blocks kept: `interop/results/2026-11-27-spare-blocks/`). So
//! the connection keeps them for any stream's next writes, the block
//! emptied last first:
//! - only while its application waits for room (a write found the send
//!   buffer full since it last held nothing), and not once it writes a
//!   stream's FIN: a server whose responses all fit frees blocks as they
//!   empty, and a thousand of them do not each hold a whole response until
//!   it ends (peak memory 530 → 930 MB for 1000 concurrent 1 MB downloads,
//!   when every emptied block was kept);
//! - only within the room left in its send buffer, so what its streams
//!   hold and keep together stays within the buffer's cap (plus two blocks
//!   a stream);
//! - none once a stream retires and no other holds anything.

use std::collections::VecDeque;
use std::io::IoSliceMut;

/// Size of one block. Small enough that the two partly used blocks at the
/// ends cost little beside a stream's data; large enough that a 32 MiB
/// buffer is 2048 blocks.
pub const BLOCK_BYTES: usize = 16 * 1024;

/// Emptied blocks of one connection, kept for the next writes of any of
/// its streams (the module's doc says why).
#[derive(Debug, Default)]
pub struct SpareBlocks {
    blocks: Vec<Vec<u8>>,
}

impl SpareBlocks {
    /// A block to append to: a kept one, or a new empty one (allocated as
    /// it is filled).
    fn take(&mut self) -> Vec<u8> {
        let mut block = self.blocks.pop().unwrap_or_default();
        block.clear();
        block
    }

    /// A whole block of initialised bytes to be written over: a kept one
    /// as it was (a block leaves a queue full, so this costs nothing), or
    /// a new zeroed one.
    fn take_whole(&mut self) -> Vec<u8> {
        let mut block = self.blocks.pop().unwrap_or_default();
        block.resize(BLOCK_BYTES, 0);
        block
    }

    /// Keeps an emptied block, or frees it if it never grew to a whole
    /// block. Its bytes stay as they were: [`take_whole`](Self::take_whole)
    /// hands them out to be overwritten without zeroing them first.
    fn keep(&mut self, block: Vec<u8>) {
        if block.capacity() == BLOCK_BYTES {
            self.blocks.push(block);
        }
    }

    /// Frees kept blocks beyond `room` bytes.
    pub fn trim(&mut self, room: u64) {
        let keep = usize::try_from(room / BLOCK_BYTES as u64).unwrap_or(usize::MAX);
        self.blocks.truncate(keep);
    }

    /// Frees every kept block.
    pub fn clear(&mut self) {
        self.blocks = Vec::new();
    }

    /// Bytes allocated in kept blocks.
    #[cfg(test)]
    pub fn allocated(&self) -> usize {
        self.blocks.iter().map(Vec::capacity).sum()
    }
}

/// A queue of bytes: appended at the back, dropped from the front, copied
/// out by position.
///
/// Every block but the last holds exactly [`BLOCK_BYTES`]; the first
/// `front_skip` bytes of the first block are already dropped. So byte `i`
/// of the queue sits at position `i + front_skip`, in block
/// `position / BLOCK_BYTES`.
#[derive(Clone, Debug, Default)]
pub struct ByteBlocks {
    blocks: VecDeque<Vec<u8>>,
    front_skip: usize,
    len: usize,
}

impl ByteBlocks {
    /// An empty queue; allocates nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Bytes allocated for data (the capacity of every block).
    #[cfg(test)]
    pub fn allocated(&self) -> usize {
        self.blocks.iter().map(Vec::capacity).sum()
    }

    /// Appends `data`, into blocks from `spare` first. A new block grows by
    /// doubling up to [`BLOCK_BYTES`], so a short stream allocates about
    /// what it writes.
    pub fn extend(&mut self, mut data: &[u8], spare: &mut SpareBlocks) {
        while !data.is_empty() {
            let last = match self.blocks.back_mut() {
                Some(last) if last.len() < BLOCK_BYTES => last,
                _ => {
                    self.blocks.push_back(spare.take());
                    match self.blocks.back_mut() {
                        Some(last) => last,
                        None => return,
                    }
                }
            };
            let take = (BLOCK_BYTES - last.len()).min(data.len());
            let needed = last.len() + take;
            if needed > last.capacity() {
                let target = needed.max(last.capacity() * 2).min(BLOCK_BYTES);
                last.reserve_exact(target - last.len());
            }
            let (now, rest) = data.split_at(take);
            last.extend_from_slice(now);
            self.len += take;
            data = rest;
        }
    }

    /// Appends up to `max` bytes that `fill` writes straight into the
    /// queue's blocks, and returns how many it wrote: the caller's bytes
    /// are not copied through a buffer of its own (a file read lands in the
    /// blocks). `fill` gets the room in queue order (the last block's tail,
    /// then whole blocks from `spare` or new) and returns how many bytes it
    /// wrote, filling the slices in order as `readv` does; a count beyond
    /// the room is taken as the room.
    ///
    /// The room ends at a block boundary when `max` reaches past one, so
    /// that a writer of whole blocks never leaves a partial block whose
    /// tail must be zeroed before the next fill. Blocks `fill` left empty
    /// go back to `spare`, or are freed if they were new.
    pub fn extend_with(
        &mut self,
        max: usize,
        spare: &mut SpareBlocks,
        fill: impl FnOnce(&mut [IoSliceMut<'_>]) -> usize,
    ) -> usize {
        let tail = match self.blocks.back() {
            Some(last) if last.len() < BLOCK_BYTES => BLOCK_BYTES - last.len(),
            _ => 0,
        };
        let room = if max > tail + BLOCK_BYTES {
            tail + (max - tail) / BLOCK_BYTES * BLOCK_BYTES
        } else {
            max
        };
        if room == 0 {
            return 0;
        }
        // The room of each block lent, from the first with room on.
        let first = self.blocks.len() - usize::from(tail > 0);
        let mut lent = Vec::with_capacity(room / BLOCK_BYTES + 2);
        if tail > 0 {
            let start = BLOCK_BYTES - tail;
            lent.push(start..BLOCK_BYTES.min(start + room));
        }
        let mut left = room - tail.min(room);
        // New blocks past this count were allocated, not taken from spare.
        let from_spare = self.blocks.len() + spare.blocks.len();
        while left > 0 {
            let take = left.min(BLOCK_BYTES);
            self.blocks.push_back(spare.take_whole());
            lent.push(0..take);
            left -= take;
        }
        let written = {
            let mut slices: Vec<IoSliceMut<'_>> = Vec::with_capacity(lent.len());
            for (block, range) in self.blocks.range_mut(first..).zip(&lent) {
                if range.end > block.len() {
                    // The last block's tail: zeroed once so it can be lent,
                    // in a block grown to whole size, not doubled past it.
                    block.reserve_exact(BLOCK_BYTES - block.len());
                    block.resize(range.end, 0);
                }
                slices.push(IoSliceMut::new(&mut block[range.clone()]));
            }
            fill(&mut slices).min(room)
        };
        // Trim each block to what was written (the tail block stays, at
        // least as it was); return the untouched new ones.
        let mut left = written;
        let mut index = first;
        for (i, range) in lent.iter().enumerate() {
            let used = left.min(range.len());
            left -= used;
            if used == 0 && (i > 0 || tail == 0) {
                break;
            }
            if let Some(block) = self.blocks.get_mut(index) {
                block.truncate(range.start + used);
            }
            index += 1;
        }
        // Untouched blocks go back where they came from: to `spare`, or
        // freed if allocated here (so `spare` keeps only what was dropped).
        while self.blocks.len() > index {
            let allocated_here = self.blocks.len() > from_spare;
            if let Some(block) = self.blocks.pop_back() {
                if !allocated_here {
                    spare.keep(block);
                }
            }
        }
        self.len += written;
        written
    }

    /// Drops the first `count` bytes (all of them if fewer are held),
    /// handing every block they emptied to `spare`, or freeing it if none.
    pub fn drop_front(&mut self, count: usize, mut spare: Option<&mut SpareBlocks>) {
        let count = count.min(self.len);
        self.len -= count;
        if self.len == 0 {
            self.clear(spare);
            return;
        }
        self.front_skip += count;
        while self.front_skip >= BLOCK_BYTES {
            // Bytes remain, so this block is full and not the last one.
            if let (Some(block), Some(spare)) = (self.blocks.pop_front(), spare.as_deref_mut()) {
                spare.keep(block);
            }
            self.front_skip -= BLOCK_BYTES;
        }
    }

    /// Drops everything, handing every block to `spare`, or freeing them
    /// if none.
    pub fn clear(&mut self, spare: Option<&mut SpareBlocks>) {
        let blocks = std::mem::take(&mut self.blocks);
        if let Some(spare) = spare {
            for block in blocks {
                spare.keep(block);
            }
        }
        self.front_skip = 0;
        self.len = 0;
    }

    /// Appends bytes `start..end` of the queue to `out`. Returns `false`,
    /// appending nothing, when the range is not all held.
    pub fn copy_to(&self, start: usize, end: usize, out: &mut Vec<u8>) -> bool {
        if start > end || end > self.len {
            return false;
        }
        let mut position = start + self.front_skip;
        let stop = end + self.front_skip;
        while position < stop {
            let index = position % BLOCK_BYTES;
            let take = (BLOCK_BYTES - index).min(stop - position);
            let Some(piece) = self
                .blocks
                .get(position / BLOCK_BYTES)
                .and_then(|block| block.get(index..index + take))
            else {
                return false;
            };
            out.extend_from_slice(piece);
            position += take;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn dropped_blocks_leave_the_queue_at_once_for_the_spare() {
        let mut spare = SpareBlocks::default();
        let mut queue = ByteBlocks::new();
        queue.extend(&vec![1; 10 * BLOCK_BYTES], &mut spare);
        assert_eq!(queue.allocated(), 10 * BLOCK_BYTES);
        queue.drop_front(9 * BLOCK_BYTES + 10, Some(&mut spare));
        // One block holds the rest: a VecDeque would still hold ten.
        assert_eq!(queue.len(), BLOCK_BYTES - 10);
        assert_eq!(queue.allocated(), BLOCK_BYTES);
        assert_eq!(spare.allocated(), 9 * BLOCK_BYTES);
        queue.drop_front(BLOCK_BYTES, Some(&mut spare));
        assert_eq!(queue.allocated(), 0);
        assert_eq!(spare.allocated(), 10 * BLOCK_BYTES);
        spare.clear();
        assert_eq!(spare.allocated(), 0);
    }

    #[test]
    fn new_writes_fill_spare_blocks_before_allocating() {
        let mut spare = SpareBlocks::default();
        let mut first = ByteBlocks::new();
        first.extend(&vec![1; 3 * BLOCK_BYTES], &mut spare);
        let kept: Vec<*const u8> = first.blocks.iter().map(|b| b.as_ptr()).collect();
        first.drop_front(3 * BLOCK_BYTES, Some(&mut spare));
        // Another stream of the connection writes into the very blocks.
        let mut second = ByteBlocks::new();
        second.extend(&vec![2; 3 * BLOCK_BYTES], &mut spare);
        assert_eq!(spare.allocated(), 0);
        for block in &second.blocks {
            assert!(kept.contains(&block.as_ptr()));
            assert_eq!(block.capacity(), BLOCK_BYTES);
        }
        let mut out = Vec::new();
        assert!(second.copy_to(0, second.len(), &mut out));
        assert!(out.iter().all(|&b| b == 2));
    }

    #[test]
    fn the_spare_keeps_whole_blocks_within_the_room_it_is_trimmed_to() {
        let mut spare = SpareBlocks::default();
        let mut queue = ByteBlocks::new();
        queue.extend(&vec![1; 10 * BLOCK_BYTES], &mut spare);
        queue.drop_front(queue.len(), Some(&mut spare));
        assert_eq!(spare.allocated(), 10 * BLOCK_BYTES);
        spare.trim(4 * BLOCK_BYTES as u64 + 100);
        assert_eq!(spare.allocated(), 4 * BLOCK_BYTES);
        spare.clear();
        // A short stream's block never grew whole: freed, not kept.
        queue.extend(b"GET /file", &mut spare);
        queue.drop_front(queue.len(), Some(&mut spare));
        assert_eq!(spare.allocated(), 0);
    }

    #[test]
    fn a_short_write_allocates_about_its_size() {
        let mut queue = ByteBlocks::new();
        queue.extend(b"GET /file", &mut SpareBlocks::default());
        assert!(queue.allocated() < 64, "{}", queue.allocated());
    }

    #[test]
    fn copies_span_block_boundaries() {
        let data: Vec<u8> = (0..3 * BLOCK_BYTES).map(|i| (i % 251) as u8).collect();
        let mut spare = SpareBlocks::default();
        let mut queue = ByteBlocks::new();
        queue.extend(&data, &mut spare);
        queue.drop_front(100, Some(&mut spare));
        let mut out = Vec::new();
        assert!(queue.copy_to(BLOCK_BYTES - 200, 2 * BLOCK_BYTES, &mut out));
        assert_eq!(out, data[BLOCK_BYTES - 100..2 * BLOCK_BYTES + 100]);
        assert!(
            !queue.copy_to(0, queue.len() + 1, &mut out),
            "beyond the end"
        );
    }

    /// A `fill` that writes `data` into the room as `readv` would, and
    /// returns the count.
    fn fill_from(data: &[u8]) -> impl FnOnce(&mut [IoSliceMut<'_>]) -> usize + '_ {
        move |room| {
            let mut written = 0;
            for slice in room.iter_mut() {
                let take = slice.len().min(data.len() - written);
                slice[..take].copy_from_slice(&data[written..written + take]);
                written += take;
            }
            written
        }
    }

    #[test]
    fn a_fill_lands_in_the_blocks_and_ends_on_a_block_boundary() {
        let mut spare = SpareBlocks::default();
        let mut queue = ByteBlocks::new();
        queue.extend(b"header", &mut spare);
        let data: Vec<u8> = (0..5 * BLOCK_BYTES).map(|i| (i % 251) as u8).collect();
        // Room for 3.5 blocks past the header's tail: the fill stops at
        // the third boundary.
        let max = BLOCK_BYTES - 6 + 3 * BLOCK_BYTES + BLOCK_BYTES / 2;
        let mut room_lens = Vec::new();
        let written = queue.extend_with(max, &mut spare, |room| {
            room_lens = room.iter().map(|s| s.len()).collect();
            fill_from(&data)(room)
        });
        assert_eq!(
            room_lens,
            vec![BLOCK_BYTES - 6, BLOCK_BYTES, BLOCK_BYTES, BLOCK_BYTES]
        );
        assert_eq!(written, 4 * BLOCK_BYTES - 6);
        assert_eq!(queue.len(), 4 * BLOCK_BYTES);
        let mut out = Vec::new();
        assert!(queue.copy_to(0, queue.len(), &mut out));
        assert_eq!(&out[..6], b"header");
        assert_eq!(out[6..], data[..written]);
    }

    #[test]
    fn a_short_fill_returns_the_blocks_it_did_not_touch() {
        let mut spare = SpareBlocks::default();
        let mut queue = ByteBlocks::new();
        queue.extend(&vec![1; 4 * BLOCK_BYTES], &mut spare);
        queue.drop_front(4 * BLOCK_BYTES, Some(&mut spare));
        assert_eq!(spare.allocated(), 4 * BLOCK_BYTES);
        // Room for four blocks, a read that found 100 bytes.
        let written = queue.extend_with(4 * BLOCK_BYTES, &mut spare, fill_from(&[9; 100]));
        assert_eq!(written, 100);
        assert_eq!(queue.len(), 100);
        assert_eq!(queue.allocated(), BLOCK_BYTES);
        assert_eq!(spare.allocated(), 3 * BLOCK_BYTES);
        // Nothing written: nothing held, nothing lost.
        let before = spare.allocated();
        assert_eq!(queue.extend_with(3 * BLOCK_BYTES, &mut spare, |_| 0), 0);
        assert_eq!(queue.len(), 100);
        assert_eq!(spare.allocated() + queue.allocated(), before + BLOCK_BYTES);
        // A fill that claims more than its room is held to the room.
        assert_eq!(queue.extend_with(10, &mut spare, |_| usize::MAX), 10);
        assert_eq!(queue.len(), 110);
    }

    #[test]
    fn spare_blocks_are_written_over_without_zeroing() {
        let mut spare = SpareBlocks::default();
        let mut first = ByteBlocks::new();
        first.extend(&vec![7; 2 * BLOCK_BYTES], &mut spare);
        let kept: Vec<*const u8> = first.blocks.iter().map(|b| b.as_ptr()).collect();
        first.drop_front(2 * BLOCK_BYTES, Some(&mut spare));
        let mut second = ByteBlocks::new();
        // The room lent is the old bytes, not zeros: a fill sees them.
        let written = second.extend_with(2 * BLOCK_BYTES, &mut spare, |room| {
            assert!(room.iter().all(|s| s.iter().all(|&b| b == 7)));
            room.iter().map(|s| s.len()).sum()
        });
        assert_eq!(written, 2 * BLOCK_BYTES);
        for block in &second.blocks {
            assert!(kept.contains(&block.as_ptr()));
        }
    }

    proptest! {
        /// Against a plain VecDeque: the same bytes after any writes
        /// (copied or filled in place) and drops, never more than two
        /// blocks allocated beyond them, and what is kept spare no more
        /// than what was dropped.
        #[test]
        fn behaves_like_a_deque_and_allocates_what_it_holds(
            ops in proptest::collection::vec((0u8..3, 0usize..40_000, 0usize..40_000), 1..60)
        ) {
            let mut spare = SpareBlocks::default();
            let mut peak = 0;
            let mut queue = ByteBlocks::new();
            let mut model: VecDeque<u8> = VecDeque::new();
            let mut next = 0u8;
            for (op, amount, fill_max) in ops {
                if op < 2 {
                    let data: Vec<u8> = (0..amount)
                        .map(|_| { next = next.wrapping_add(7); next })
                        .collect();
                    if op == 0 {
                        queue.extend(&data, &mut spare);
                        model.extend(&data);
                    } else {
                        let written = queue.extend_with(fill_max, &mut spare, fill_from(&data));
                        prop_assert!(written <= fill_max && written <= data.len());
                        model.extend(&data[..written]);
                    }
                    peak = peak.max(queue.len());
                } else {
                    queue.drop_front(amount, Some(&mut spare));
                    model.drain(..amount.min(model.len()));
                }
                prop_assert_eq!(queue.len(), model.len());
                prop_assert!(queue.allocated() <= queue.len() + 2 * BLOCK_BYTES);
                prop_assert!(spare.allocated() + queue.len() <= peak + 2 * BLOCK_BYTES);
                let mut out = Vec::new();
                prop_assert!(queue.copy_to(0, queue.len(), &mut out));
                prop_assert!(out.iter().eq(model.iter()));
            }
        }
    }
}
