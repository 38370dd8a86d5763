//! The event queue: a binary heap ordered by (time, sequence number). Two
//! events due at the same instant come out in the order they were scheduled,
//! so a run never depends on how the heap happens to break ties.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::time::Instant;

/// One scheduled event: when, the tie-breaking sequence number, and what.
#[derive(Debug)]
struct Scheduled<E> {
    at: Instant,
    sequence: u64,
    event: E,
}

impl<E> PartialEq for Scheduled<E> {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at && self.sequence == other.sequence
    }
}

impl<E> Eq for Scheduled<E> {}

impl<E> PartialOrd for Scheduled<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<E> Ord for Scheduled<E> {
    /// Reversed, so that `BinaryHeap` (a max-heap) pops the earliest event,
    /// and among equal times the one scheduled first.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .at
            .cmp(&self.at)
            .then_with(|| other.sequence.cmp(&self.sequence))
    }
}

/// A deterministic priority queue of events.
#[derive(Debug)]
pub struct EventQueue<E> {
    heap: BinaryHeap<Scheduled<E>>,
    next_sequence: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    /// An empty queue.
    pub fn new() -> Self {
        Self {
            heap: BinaryHeap::new(),
            next_sequence: 0,
        }
    }

    /// Schedules `event` at `at`.
    pub fn push(&mut self, at: Instant, event: E) {
        let sequence = self.next_sequence;
        self.next_sequence += 1;
        self.heap.push(Scheduled {
            at,
            sequence,
            event,
        });
    }

    /// Removes and returns the earliest event (first scheduled among ties).
    pub fn pop(&mut self) -> Option<(Instant, E)> {
        self.heap.pop().map(|s| (s.at, s.event))
    }

    /// When the earliest event is due.
    pub fn peek_time(&self) -> Option<Instant> {
        self.heap.peek().map(|s| s.at)
    }

    /// Events waiting.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// No events waiting.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn earliest_event_comes_out_first() {
        let t0 = Instant::now();
        let mut queue = EventQueue::new();
        queue.push(t0 + Duration::from_millis(30), "late");
        queue.push(t0 + Duration::from_millis(10), "early");
        queue.push(t0 + Duration::from_millis(20), "middle");
        assert_eq!(queue.peek_time(), Some(t0 + Duration::from_millis(10)));
        let order: Vec<&str> = std::iter::from_fn(|| queue.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, ["early", "middle", "late"]);
        assert!(queue.is_empty());
    }

    #[test]
    fn events_at_the_same_instant_come_out_in_scheduling_order() {
        let t0 = Instant::now();
        let mut queue = EventQueue::new();
        // Interleave two instants so the heap has to reorder; within each
        // instant the scheduling order must survive.
        for i in 0..100u32 {
            let at = if i % 2 == 0 {
                t0
            } else {
                t0 + Duration::from_millis(1)
            };
            queue.push(at, i);
        }
        let popped: Vec<u32> = std::iter::from_fn(|| queue.pop().map(|(_, e)| e)).collect();
        let evens: Vec<u32> = (0..100).filter(|i| i % 2 == 0).collect();
        let odds: Vec<u32> = (0..100).filter(|i| i % 2 == 1).collect();
        assert_eq!(popped[..50], evens[..]);
        assert_eq!(popped[50..], odds[..]);
    }
}
