//! Spreading new clients evenly over the workers of a multi-core server.
//!
//! The kernel hands a client's first Initial to the worker its (random)
//! destination connection ID names (`wire::steering`), so by itself the
//! spread is a coin toss per client: with 8 clients on 2 workers, one of
//! them gets 6 or more about 29% of the time. Workers therefore publish how
//! many clients they serve in one shared [`WorkerLoads`]; a worker that
//! gets a new client while another serves fewer answers with a Retry whose
//! connection ID names the lighter worker (RFC 9000 §8.1.2: the client's
//! next Initial goes to that ID, so the kernel routes it there). The Retry
//! token is sealed with the server secret every worker shares, so the other
//! worker accepts it, and a client that comes with a Retry token is never
//! moved again.
//!
//! The cost is one round trip for the clients that are moved, and none for
//! the others; balancing needs Retry, so it needs the server secret (TLS).
//! A worker that sends a client away counts it at once on the lighter
//! worker (until that worker publishes its own count), so a burst of new
//! clients does not all go to the same one.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// How many clients each worker of a socket group serves.
#[derive(Debug)]
pub struct WorkerLoads {
    serving: Box<[AtomicUsize]>,
}

impl WorkerLoads {
    /// Loads for `workers` workers, all idle.
    pub fn new(workers: usize) -> Arc<Self> {
        Arc::new(Self {
            serving: (0..workers).map(|_| AtomicUsize::new(0)).collect(),
        })
    }

    /// Clients worker `worker` serves (or was sent and has not counted yet).
    pub fn serving(&self, worker: usize) -> usize {
        self.serving
            .get(worker)
            .map_or(0, |count| count.load(Ordering::Relaxed))
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
        self.serving[lightest].fetch_add(1, Ordering::Relaxed);
        Some(lightest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_client_moves_only_to_a_worker_that_serves_fewer() {
        let loads = WorkerLoads::new(3);
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
    }

    #[test]
    fn sequential_clients_never_leave_workers_more_than_one_apart() {
        // Every client lands on worker 0 (the worst case for the kernel's
        // coin toss); moved ones are served where they were sent.
        let loads = WorkerLoads::new(2);
        let mut serving = [0usize; 2];
        for _ in 0..9 {
            let at = loads.send_away_from(0).unwrap_or(0);
            serving[at] += 1;
            loads.publish(at, serving[at]);
        }
        assert_eq!(serving, [5, 4]);
    }
}
