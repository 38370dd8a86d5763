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
    /// A block to fill: a kept one, or a new empty one (allocated as it is
    /// filled).
    fn take(&mut self) -> Vec<u8> {
        self.blocks.pop().unwrap_or_default()
    }

    /// Keeps an emptied block, or frees it if it never grew to a whole
    /// block.
    fn keep(&mut self, mut block: Vec<u8>) {
        if block.capacity() == BLOCK_BYTES {
            block.clear();
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

    proptest! {
        /// Against a plain VecDeque: the same bytes after any writes and
        /// drops, never more than two blocks allocated beyond them, and
        /// what is kept spare no more than what was dropped.
        #[test]
        fn behaves_like_a_deque_and_allocates_what_it_holds(
            ops in proptest::collection::vec((any::<bool>(), 0usize..40_000), 1..60)
        ) {
            let mut spare = SpareBlocks::default();
            let mut peak = 0;
            let mut queue = ByteBlocks::new();
            let mut model: VecDeque<u8> = VecDeque::new();
            let mut next = 0u8;
            for (write, amount) in ops {
                if write {
                    let data: Vec<u8> = (0..amount)
                        .map(|_| { next = next.wrapping_add(7); next })
                        .collect();
                    queue.extend(&data, &mut spare);
                    model.extend(&data);
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
