//! Spreading new clients evenly over the workers of a multi-core server.
//!
//! The kernel hands a client's first Initial to the worker its (random)
//! destination connection ID routes to (`wire::steering`), so by itself the
//! spread is a coin toss per client: with 8 clients on 2 workers, one of
//! them gets 6 or more about 29% of the time. Workers therefore publish how
//! many clients they serve in one shared [`WorkerLoads`]; a worker that
//! gets a new client while another serves fewer answers with a Retry whose
//! connection ID routes to the lighter worker (RFC 9000 §8.1.2: the client's
//! next Initial goes to that ID, so the kernel routes it there). The Retry
//! token is sealed with the server secret every worker shares, so the other
//! worker accepts it, and a client that comes with a Retry token is never
//! moved again. Nor is a client back with a valid address token from an
//! earlier connection (NEW_TOKEN): the move would cost it the round trip
//! the token saves it, and with it the 0-RTT request and the saved path
//! state (RFC 9959) its first flight carried, for returning clients that
//! are rare against new ones. Its token is spent only by the connection
//! made with it (`endpoint::retry`).
//!
//! The cost is one round trip for the clients that are moved, and none for
//! the others; balancing needs Retry, so it needs the server secret (TLS).
//! A worker that sends a client away counts it at once as on its way to
//! the lighter worker, until a client with a Retry token arrives there, so
//! a burst of new clients does not all go to the same one. Clients that
//! never come back (spoofed Initials) would leave such counts behind, so a
//! worker has at most [`MAX_ON_THE_WAY`] of them.
//!
//! A worker's share of the connection limit is where balancing aims, not a
//! wall: a burst of new clients outruns the moves (at most
//! [`MAX_ON_THE_WAY`] on their way at once), and refusing a client while
//! the server as a whole had room failed 1–5% of 1000 simultaneous
//! downloads (`benches/many_downloads.sh --server sift-hq`). A worker past
//! its share refuses only when the workers together hold the whole limit;
//! their counts are read without a lock, so a burst may overshoot it by a
//! few.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// The most clients counted as on their way to one worker.
pub const MAX_ON_THE_WAY: usize = 16;

/// How many clients each worker of a socket group serves.
#[derive(Debug)]
pub struct WorkerLoads {
    /// The most clients all workers hold together (what "server busy"
    /// names).
    max_connections: usize,
    serving: Box<[AtomicUsize]>,
    /// Clients sent to each worker with a Retry that have not arrived.
    on_the_way: Box<[AtomicUsize]>,
}

impl WorkerLoads {
    /// Loads for `workers` workers, all idle, holding at most
    /// `max_connections` clients together.
    pub fn new(workers: usize, max_connections: usize) -> Arc<Self> {
        Arc::new(Self {
            max_connections,
            serving: (0..workers).map(|_| AtomicUsize::new(0)).collect(),
            on_the_way: (0..workers).map(|_| AtomicUsize::new(0)).collect(),
        })
    }

    /// The most clients all workers hold together.
    pub fn max_connections(&self) -> usize {
        self.max_connections
    }

    /// Each worker's share of `max_connections`: as equal as can be, the
    /// first ones taking the remainder.
    pub fn share(&self, worker: usize) -> usize {
        let workers = self.serving.len().max(1);
        self.max_connections / workers + usize::from(worker < self.max_connections % workers)
    }

    /// Clients worker `worker` serves, and those sent to it that have not
    /// arrived yet.
    pub fn serving(&self, worker: usize) -> usize {
        let load = |counts: &[AtomicUsize]| {
            counts
                .get(worker)
                .map_or(0, |count| count.load(Ordering::Relaxed))
        };
        load(&self.serving) + load(&self.on_the_way)
    }

    /// Clients all workers but `worker` serve, and those on their way to
    /// any worker: with `worker`'s own count, what the limit is held
    /// against.
    pub(crate) fn serving_elsewhere(&self, worker: usize) -> usize {
        let others: usize = (0..self.serving.len())
            .filter(|&other| other != worker)
            .map(|other| self.serving[other].load(Ordering::Relaxed))
            .sum();
        let on_the_way: usize = self
            .on_the_way
            .iter()
            .map(|count| count.load(Ordering::Relaxed))
            .sum();
        others + on_the_way
    }

    /// A client with a Retry token arrived at `worker`: one fewer on the
    /// way there.
    pub(crate) fn arrived(&self, worker: usize) {
        if let Some(count) = self.on_the_way.get(worker) {
            let _ = count.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
        }
    }

    /// Worker `worker` now serves `clients`.
    pub(crate) fn publish(&self, worker: usize, clients: usize) {
        if let Some(count) = self.serving.get(worker) {
            count.store(clients, Ordering::Relaxed);
        }
    }

    /// The worker a new client of `worker` should go to instead: the one
    /// serving fewest, if it serves fewer than `worker` (ties stay). Counts
    /// the client there at once.
    pub(crate) fn send_away_from(&self, worker: usize) -> Option<usize> {
        let mine = self.serving(worker);
        let (lightest, load) = (0..self.serving.len())
            .map(|other| (other, self.serving(other)))
            .min_by_key(|&(other, load)| (load, other != worker))?;
        if lightest == worker || load >= mine {
            return None;
        }
        self.on_the_way[lightest]
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                (n < MAX_ON_THE_WAY).then_some(n + 1)
            })
            .ok()?;
        Some(lightest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_client_moves_only_to_a_worker_that_serves_fewer() {
        let loads = WorkerLoads::new(3, 64);
        // All idle: stay.
        assert_eq!(loads.send_away_from(0), None);
        loads.publish(0, 1);
        // Worker 0 serves one, the others none: the lowest-numbered lighter
        // one takes it, and counts it at once.
        assert_eq!(loads.send_away_from(0), Some(1));
        assert_eq!(loads.serving(1), 1);
        assert_eq!(loads.send_away_from(0), Some(2));
        // Now 1 / 1 / 1: ties stay where they landed.
        assert_eq!(loads.send_away_from(0), None);
        assert_eq!(loads.send_away_from(2), None);
        // Worker 1 counts a client of its own before the sent one arrives:
        // the one on its way still counts.
        loads.publish(1, 1);
        assert_eq!(loads.serving(1), 2);
        loads.arrived(1);
        loads.publish(1, 2);
        assert_eq!(loads.serving(1), 2);
    }

    #[test]
    fn what_the_others_serve_counts_clients_on_their_way_anywhere() {
        let loads = WorkerLoads::new(3, 64);
        loads.publish(0, 5);
        loads.publish(1, 7);
        assert_eq!(loads.serving_elsewhere(0), 7);
        assert_eq!(loads.send_away_from(1), Some(2));
        assert_eq!(loads.serving_elsewhere(0), 8);
        assert_eq!(loads.serving_elsewhere(2), 13);
    }

    #[test]
    fn the_connection_limit_is_shared_out() {
        let loads = WorkerLoads::new(3, 64);
        assert_eq!(
            (0..3).map(|w| loads.share(w)).collect::<Vec<_>>(),
            [22, 21, 21]
        );
    }

    #[test]
    fn clients_that_never_arrive_count_only_so_much() {
        let loads = WorkerLoads::new(2, 64);
        loads.publish(0, 1_000);
        let sent = (0..100).filter_map(|_| loads.send_away_from(0)).count();
        assert_eq!(sent, MAX_ON_THE_WAY);
        assert_eq!(loads.serving(1), MAX_ON_THE_WAY);
    }

    #[test]
    fn sequential_clients_never_leave_workers_more_than_one_apart() {
        // Every client lands on worker 0 (the worst case for the kernel's
        // coin toss); moved ones are served where they were sent.
        let loads = WorkerLoads::new(2, 64);
        let mut serving = [0usize; 2];
        for _ in 0..9 {
            let at = match loads.send_away_from(0) {
                Some(other) => {
                    loads.arrived(other);
                    other
                }
                None => 0,
            };
            serving[at] += 1;
            loads.publish(at, serving[at]);
        }
        assert_eq!(serving, [5, 4]);
    }
}
