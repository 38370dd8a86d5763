//! The endpoint's deadline index: which connections may have a datagram to
//! send, and each connection's next deadline in a min-heap, so that a
//! driver turn costs in proportion to the connections it touched, not to
//! every connection held.
//!
//! A connection's deadline (its timer, or a server's handshake deadline)
//! and whether it has anything to send change only when the endpoint hands
//! it something: a datagram, a timer firing, a send, the application's
//! access through [`Endpoint::connection`](super::Endpoint::connection).
//! Each of those marks the connection *touched*. Touched connections are
//! asked again for their deadline before the next look at the heap, and are
//! *active* (asked for datagrams) until a send finds nothing. An untouched
//! connection whose last send found nothing has nothing until its timer
//! fires: the sans-IO contract says every change with time alone is a
//! timer (pacing, acknowledgement delay, loss detection, idle).
//!
//! The heap keeps stale entries (a deadline that moved) and skips them when
//! they reach the top; it is rebuilt from the live deadlines when stale ones
//! outnumber them. Ties and sets are in handle order, so runs repeat.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};
use std::time::Instant;

use super::{ConnectionHandle, Entry};

/// Stale heap entries tolerated, beyond one per armed connection, before
/// the heap is rebuilt.
const STALE_SLACK: usize = 64;

/// Deadlines and send candidates of an endpoint's connections.
#[derive(Debug, Default)]
pub(super) struct TimerIndex {
    /// `(deadline, connection)`, earliest first; an entry is live while
    /// `armed` holds the same deadline for the connection.
    heap: BinaryHeap<Reverse<(Instant, ConnectionHandle)>>,
    /// The deadline each connection has in the heap.
    armed: HashMap<ConnectionHandle, Instant>,
    /// Touched since their deadline was last read.
    touched: BTreeSet<ConnectionHandle>,
    /// May have a datagram to send.
    active: BTreeSet<ConnectionHandle>,
    /// Connection deadlines read so far: what a look at the heap cost.
    #[cfg(test)]
    pub(super) deadline_reads: u64,
}

impl TimerIndex {
    /// `handle` changed (or is new): read its deadline again, and ask it
    /// for datagrams.
    pub(super) fn touch(&mut self, handle: ConnectionHandle) {
        self.touched.insert(handle);
        self.active.insert(handle);
    }

    /// Every connection changed (the endpoint moved, or a rare packet
    /// reached one without saying which).
    pub(super) fn touch_all<'a>(&mut self, handles: impl Iterator<Item = &'a ConnectionHandle>) {
        for &handle in handles {
            self.touch(handle);
        }
    }

    /// `handle` found nothing to send: skip it until it is touched again.
    pub(super) fn idle(&mut self, handle: ConnectionHandle) {
        self.active.remove(&handle);
    }

    /// `handle` was removed.
    pub(super) fn forget(&mut self, handle: ConnectionHandle) {
        self.armed.remove(&handle);
        self.touched.remove(&handle);
        self.active.remove(&handle);
    }

    /// The first connection at or after `cursor` (wrapping around) that may
    /// have a datagram.
    pub(super) fn next_active(&self, cursor: ConnectionHandle) -> Option<ConnectionHandle> {
        self.active
            .range(cursor..)
            .next()
            .or_else(|| self.active.iter().next())
            .copied()
    }

    /// Reads the deadline of every touched connection into the heap.
    pub(super) fn refresh(
        &mut self,
        connections: &BTreeMap<ConnectionHandle, Entry>,
        now: Instant,
    ) {
        for handle in std::mem::take(&mut self.touched) {
            let Some(entry) = connections.get(&handle) else {
                self.armed.remove(&handle);
                continue;
            };
            #[cfg(test)]
            {
                self.deadline_reads += 1;
            }
            match deadline(entry, now) {
                Some(at) => {
                    if self.armed.insert(handle, at) != Some(at) {
                        self.heap.push(Reverse((at, handle)));
                    }
                }
                None => {
                    self.armed.remove(&handle);
                }
            }
        }
        if self.heap.len() > 2 * self.armed.len() + STALE_SLACK {
            self.heap = self
                .armed
                .iter()
                .map(|(&handle, &at)| Reverse((at, handle)))
                .collect();
        }
    }

    /// The earliest live deadline (call [`refresh`](Self::refresh) first).
    pub(super) fn next(&mut self) -> Option<Instant> {
        while let Some(&Reverse((at, handle))) = self.heap.peek() {
            if self.armed.get(&handle) == Some(&at) {
                return Some(at);
            }
            self.heap.pop();
        }
        None
    }

    /// Takes the connections whose deadline is at or before `now` out of
    /// the heap (call [`refresh`](Self::refresh) first), in handle order.
    /// The caller fires them and touches them.
    pub(super) fn take_due(&mut self, now: Instant) -> Vec<ConnectionHandle> {
        let mut due = Vec::new();
        while let Some(&Reverse((at, handle))) = self.heap.peek() {
            if at > now {
                break;
            }
            self.heap.pop();
            if self.armed.get(&handle) == Some(&at) {
                self.armed.remove(&handle);
                due.push(handle);
            }
        }
        due.sort_unstable();
        due
    }
}

/// A connection's next deadline: its timer, a server's handshake deadline,
/// or at once for a busy refusal whose closing period is over (the
/// endpoint forgets it when it fires).
pub(super) fn deadline(entry: &Entry, now: Instant) -> Option<Instant> {
    if entry.refusing && entry.connection.is_closed() {
        return Some(now);
    }
    let timer = entry.connection.timeout(now).map(|wait| now + wait);
    [timer, entry.pending_handshake_deadline()]
        .into_iter()
        .flatten()
        .min()
}
