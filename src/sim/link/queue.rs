//! The drop-tail queue in front of the serializer, limited in packets or
//! bytes.
//!
//! The packet being serialized has left the queue (Linux qdiscs count it the
//! same way: it has been dequeued to the device), so `limit 2` holds one
//! packet on the wire and two waiting. The link keeps the one in service
//! apart; the queue holds only waiting packets.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

/// How many packets (or bytes) the bottleneck queue holds, not counting the
/// packet being serialized.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueueLimit {
    /// At most this many packets wait (netem `limit N`).
    Packets(usize),
    /// At most this many bytes wait (sift's `limit-bytes N`).
    Bytes(usize),
}

/// netem's default `limit`: 1000 packets (iproute2 `tc/q_netem.c`, `opt.limit = 1000`).
pub const DEFAULT_QUEUE_PACKETS: usize = 1000;

impl Default for QueueLimit {
    fn default() -> Self {
        QueueLimit::Packets(DEFAULT_QUEUE_PACKETS)
    }
}

/// Something that takes room in the queue.
pub(crate) trait QueueItem {
    fn len_bytes(&self) -> usize;
}

/// A FIFO of waiting packets with a tail-drop limit. The packet being
/// serialized has already left it.
#[derive(Debug)]
pub(crate) struct DropTailQueue<T> {
    limit: QueueLimit,
    items: VecDeque<T>,
    bytes: usize,
}

/// Whether `waiting` packets of `waiting_bytes` in all leave no room under
/// `limit` for one more of `len` bytes.
pub(crate) fn over_limit(
    limit: QueueLimit,
    waiting: usize,
    waiting_bytes: usize,
    len: usize,
) -> bool {
    match limit {
        QueueLimit::Packets(n) => waiting >= n,
        QueueLimit::Bytes(n) => waiting_bytes.saturating_add(len) > n,
    }
}

impl<T: QueueItem> DropTailQueue<T> {
    pub(crate) fn new(limit: QueueLimit) -> Self {
        Self {
            limit,
            items: VecDeque::new(),
            bytes: 0,
        }
    }

    /// Whether an item of `len` bytes would be dropped now.
    pub(crate) fn would_drop(&self, len: usize) -> bool {
        over_limit(self.limit, self.items.len(), self.bytes, len)
    }

    /// Appends `item` at the tail, or hands it back if the queue is full.
    pub(crate) fn push_back(&mut self, item: T) -> Result<(), T> {
        if self.would_drop(item.len_bytes()) {
            return Err(item);
        }
        self.bytes += item.len_bytes();
        self.items.push_back(item);
        Ok(())
    }

    /// Puts `item` ahead of every waiting item, or hands it back if the
    /// queue is full: netem's reorder path.
    pub(crate) fn push_front(&mut self, item: T) -> Result<(), T> {
        if self.would_drop(item.len_bytes()) {
            return Err(item);
        }
        self.bytes += item.len_bytes();
        self.items.push_front(item);
        Ok(())
    }

    /// Appends `item` without checking the limit (a discipline that keeps
    /// one limit over several queues has checked it).
    pub(crate) fn push_back_unchecked(&mut self, item: T) {
        self.bytes += item.len_bytes();
        self.items.push_back(item);
    }

    /// Puts `item` at the head without checking the limit.
    pub(crate) fn push_front_unchecked(&mut self, item: T) {
        self.bytes += item.len_bytes();
        self.items.push_front(item);
    }

    pub(crate) fn front(&self) -> Option<&T> {
        self.items.front()
    }

    pub(crate) fn pop_front(&mut self) -> Option<T> {
        let item = self.items.pop_front()?;
        self.bytes -= item.len_bytes();
        Some(item)
    }

    /// Items waiting.
    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    /// Bytes waiting.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl QueueItem for usize {
        fn len_bytes(&self) -> usize {
            *self
        }
    }

    #[test]
    fn packet_limit_counts_the_waiting_packets() {
        let mut q = DropTailQueue::new(QueueLimit::Packets(2));
        assert_eq!(q.push_back(100), Ok(()));
        assert_eq!(q.push_back(100), Ok(()));
        assert_eq!(q.push_back(7), Err(7));
        assert_eq!(q.len(), 2);
    }

    #[test]
    fn byte_limit_admits_what_fits() {
        let mut q = DropTailQueue::new(QueueLimit::Bytes(1500));
        assert_eq!(q.push_back(1000), Ok(()));
        assert_eq!(q.push_back(1000), Err(1000));
        assert_eq!(q.push_back(500), Ok(()));
        assert_eq!(q.bytes(), 1500);
    }

    #[test]
    fn push_front_jumps_the_waiting_packets() {
        let mut q = DropTailQueue::new(QueueLimit::Packets(10));
        for len in [1, 2, 3] {
            q.push_back(len).unwrap();
        }
        q.push_front(9).unwrap();
        let order: Vec<usize> = std::iter::from_fn(|| q.pop_front()).collect();
        assert_eq!(order, [9, 1, 2, 3]);
    }
}
