//! The drop-tail queue in front of the serializer, limited in packets or
//! bytes.
//!
//! The packet being serialized has left the queue (Linux qdiscs count it the
//! same way: it has been dequeued to the device), so `limit 2` holds one
//! packet on the wire and two waiting.

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

/// A FIFO with a tail-drop limit. The front item may be "in service" (on
/// the serializer): it still sits at the front but does not count against
/// the limit.
#[derive(Debug)]
pub(crate) struct DropTailQueue<T> {
    limit: QueueLimit,
    items: VecDeque<T>,
    bytes: usize,
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
    pub(crate) fn would_drop(&self, len: usize, head_in_service: bool) -> bool {
        let (waiting, waiting_bytes) = match (head_in_service, self.items.front()) {
            (true, Some(head)) => (self.items.len() - 1, self.bytes - head.len_bytes()),
            _ => (self.items.len(), self.bytes),
        };
        match self.limit {
            QueueLimit::Packets(n) => waiting >= n,
            QueueLimit::Bytes(n) => waiting_bytes.saturating_add(len) > n,
        }
    }

    /// Appends `item` at the tail, or hands it back if the queue is full.
    pub(crate) fn push_back(&mut self, item: T, head_in_service: bool) -> Result<(), T> {
        if self.would_drop(item.len_bytes(), head_in_service) {
            return Err(item);
        }
        self.bytes += item.len_bytes();
        self.items.push_back(item);
        Ok(())
    }

    /// Puts `item` ahead of every waiting item (behind the one in service),
    /// or hands it back if the queue is full: netem's reorder path.
    pub(crate) fn push_front(&mut self, item: T, head_in_service: bool) -> Result<(), T> {
        if self.would_drop(item.len_bytes(), head_in_service) {
            return Err(item);
        }
        self.bytes += item.len_bytes();
        let at = if head_in_service && !self.items.is_empty() {
            1
        } else {
            0
        };
        self.items.insert(at, item);
        Ok(())
    }

    pub(crate) fn front(&self) -> Option<&T> {
        self.items.front()
    }

    pub(crate) fn pop_front(&mut self) -> Option<T> {
        let item = self.items.pop_front()?;
        self.bytes -= item.len_bytes();
        Some(item)
    }

    /// Items in the queue, including the one in service.
    pub(crate) fn len(&self) -> usize {
        self.items.len()
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
    fn packet_limit_does_not_count_the_packet_in_service() {
        let mut q = DropTailQueue::new(QueueLimit::Packets(2));
        assert_eq!(q.push_back(100, false), Ok(()));
        // The first is now on the serializer; two more fit, the third does not.
        assert_eq!(q.push_back(100, true), Ok(()));
        assert_eq!(q.push_back(100, true), Ok(()));
        assert_eq!(q.push_back(7, true), Err(7));
        assert_eq!(q.len(), 3);
    }

    #[test]
    fn byte_limit_admits_what_fits() {
        let mut q = DropTailQueue::new(QueueLimit::Bytes(1500));
        assert_eq!(q.push_back(1000, false), Ok(()));
        assert_eq!(q.push_back(1000, true), Ok(()));
        assert_eq!(q.push_back(1000, true), Err(1000));
        assert_eq!(q.push_back(500, true), Ok(()));
    }

    #[test]
    fn push_front_jumps_the_waiting_packets_but_not_the_one_in_service() {
        let mut q = DropTailQueue::new(QueueLimit::Packets(10));
        for len in [1, 2, 3] {
            q.push_back(len, true).unwrap();
        }
        q.push_front(9, true).unwrap();
        let order: Vec<usize> = std::iter::from_fn(|| q.pop_front()).collect();
        assert_eq!(order, [1, 9, 2, 3]);
    }
}
