//! One direction of a simulated link: a chain of stages a packet passes in
//! order — impairments (loss, corruption), a drop-tail queue drained by a
//! serializer at `rate`, then propagation `delay`. Time is virtual: every call
//! takes `now`. Randomness comes from a seeded ChaCha RNG, so a link repeats
//! bit-for-bit for a given seed.
//!
//! The link keeps the ground truth of every packet (`Fate`): that is what lets
//! the simulator score a controller's loss verdicts.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// How many packets (or bytes) the bottleneck queue holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueueLimit {
    Packets(usize),
    Bytes(usize),
}

/// Parameters of one link direction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LinkConfig {
    /// One-way propagation delay.
    #[serde(with = "duration_ms")]
    pub delay_ms: Duration,
    /// Serialization rate in bits per second; `None` = infinitely fast.
    pub rate_bps: Option<u64>,
    /// Drop-tail queue in front of the serializer.
    pub queue: QueueLimit,
    /// Independent (Bernoulli) loss probability per packet, 0.0..=1.0.
    pub loss: f64,
}

impl Default for LinkConfig {
    fn default() -> Self {
        Self {
            delay_ms: Duration::from_millis(10),
            rate_bps: None,
            queue: QueueLimit::Packets(1000),
            loss: 0.0,
        }
    }
}

/// Serialize a `Duration` as (fractional) milliseconds in scenario files.
mod duration_ms {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64() * 1e3)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let ms = f64::deserialize(d)?;
        if !(ms.is_finite() && ms >= 0.0) {
            return Err(serde::de::Error::custom(
                "delay must be a non-negative number of ms",
            ));
        }
        Ok(Duration::from_secs_f64(ms / 1e3))
    }
}

/// What happened to a packet on this link: the ground truth.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fate {
    /// Delivered intact.
    Delivered,
    /// Dropped because the queue was full: congestion.
    QueueDrop,
    /// Dropped by the loss model: a random (link) loss.
    RandomLoss,
}

/// A packet leaving the link.
#[derive(Clone, Debug)]
pub struct Delivery {
    /// The caller's tag for this packet, as given to `send`.
    pub id: u64,
    pub bytes: Vec<u8>,
    pub at: Instant,
}

/// Counters over the link's life.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkCounters {
    pub offered: u64,
    pub delivered: u64,
    pub queue_drops: u64,
    pub random_losses: u64,
}

struct Queued {
    id: u64,
    bytes: Vec<u8>,
}

struct InFlight {
    id: u64,
    bytes: Vec<u8>,
    arrives: Instant,
}

/// One direction of a link.
pub struct Link {
    config: LinkConfig,
    rng: ChaCha8Rng,
    queue: VecDeque<Queued>,
    queued_bytes: usize,
    /// When the serializer finishes the packet at the head of the queue.
    serializer_free_at: Option<Instant>,
    propagating: VecDeque<InFlight>,
    counters: LinkCounters,
}

impl Link {
    /// A link with its own RNG stream.
    pub fn new(config: LinkConfig, seed: u64) -> Self {
        Self {
            config,
            rng: ChaCha8Rng::seed_from_u64(seed),
            queue: VecDeque::new(),
            queued_bytes: 0,
            serializer_free_at: None,
            propagating: VecDeque::new(),
            counters: LinkCounters::default(),
        }
    }

    /// The link's parameters.
    pub fn config(&self) -> &LinkConfig {
        &self.config
    }

    /// Offers a packet at `now`. Returns its fate if it was decided at once
    /// (dropped); `Fate::Delivered` means it is on its way.
    pub fn send(&mut self, now: Instant, id: u64, bytes: Vec<u8>) -> Fate {
        self.advance(now);
        self.counters.offered += 1;
        if self.config.loss > 0.0 && self.rng.random_bool(self.config.loss.min(1.0)) {
            self.counters.random_losses += 1;
            return Fate::RandomLoss;
        }
        // The packet on the serializer has left the queue (netem and Linux
        // qdiscs count it the same way).
        let (waiting, waiting_bytes) = match (self.serializer_free_at, self.queue.front()) {
            (Some(_), Some(head)) => (self.queue.len() - 1, self.queued_bytes - head.bytes.len()),
            _ => (self.queue.len(), self.queued_bytes),
        };
        let full = match self.config.queue {
            QueueLimit::Packets(n) => waiting >= n,
            QueueLimit::Bytes(n) => waiting_bytes + bytes.len() > n,
        };
        if full {
            self.counters.queue_drops += 1;
            return Fate::QueueDrop;
        }
        self.queued_bytes += bytes.len();
        self.queue.push_back(Queued { id, bytes });
        if self.serializer_free_at.is_none() {
            self.start_serializing(now);
        }
        self.advance(now);
        Fate::Delivered
    }

    fn serialization_time(&self, len: usize) -> Duration {
        match self.config.rate_bps {
            Some(rate) if rate > 0 => Duration::from_nanos((len as u64 * 8 * 1_000_000_000) / rate),
            _ => Duration::ZERO,
        }
    }

    fn start_serializing(&mut self, now: Instant) {
        self.serializer_free_at = self
            .queue
            .front()
            .map(|head| now + self.serialization_time(head.bytes.len()));
    }

    /// Moves packets whose serialization finished by `now` onto the wire.
    fn advance(&mut self, now: Instant) {
        while let Some(done) = self.serializer_free_at {
            if done > now {
                break;
            }
            let Some(head) = self.queue.pop_front() else {
                self.serializer_free_at = None;
                break;
            };
            self.queued_bytes -= head.bytes.len();
            self.propagating.push_back(InFlight {
                id: head.id,
                bytes: head.bytes,
                arrives: done + self.config.delay_ms,
            });
            self.serializer_free_at = self
                .queue
                .front()
                .map(|next| done + self.serialization_time(next.bytes.len()));
        }
    }

    /// The next instant at which something happens on this link.
    pub fn next_event(&self) -> Option<Instant> {
        let arrival = self.propagating.front().map(|p| p.arrives);
        match (arrival, self.serializer_free_at) {
            (Some(a), Some(s)) => Some(a.min(s)),
            (a, s) => a.or(s),
        }
    }

    /// The next packet that has arrived by `now`, in arrival order.
    pub fn poll_delivery(&mut self, now: Instant) -> Option<Delivery> {
        self.advance(now);
        if self.propagating.front()?.arrives > now {
            return None;
        }
        let p = self.propagating.pop_front()?;
        self.counters.delivered += 1;
        Some(Delivery {
            id: p.id,
            bytes: p.bytes,
            at: p.arrives,
        })
    }

    /// Packets waiting in the queue or on the serializer.
    pub fn queue_len(&self) -> usize {
        self.queue.len()
    }

    /// Counters so far.
    pub fn counters(&self) -> LinkCounters {
        self.counters
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(rate_bps: Option<u64>, queue: QueueLimit, loss: f64) -> Link {
        Link::new(
            LinkConfig {
                delay_ms: Duration::from_millis(50),
                rate_bps,
                queue,
                loss,
            },
            7,
        )
    }

    #[test]
    fn serialization_and_propagation_delays_add_up() {
        let t0 = Instant::now();
        // 1000 bytes at 8 Mb/s = 1 ms on the wire, then 50 ms of propagation.
        let mut l = link(Some(8_000_000), QueueLimit::Packets(10), 0.0);
        l.send(t0, 1, vec![0; 1000]);
        l.send(t0, 2, vec![0; 1000]);
        assert_eq!(l.next_event(), Some(t0 + Duration::from_millis(1)));
        assert!(l.poll_delivery(t0 + Duration::from_millis(50)).is_none());
        let first = l.poll_delivery(t0 + Duration::from_millis(51)).unwrap();
        assert_eq!((first.id, first.at), (1, t0 + Duration::from_millis(51)));
        let second = l.poll_delivery(t0 + Duration::from_millis(60)).unwrap();
        assert_eq!((second.id, second.at), (2, t0 + Duration::from_millis(52)));
    }

    #[test]
    fn full_queue_drops_tail_as_congestion() {
        let t0 = Instant::now();
        let mut l = link(Some(1_000_000), QueueLimit::Packets(2), 0.0);
        let fates: Vec<Fate> = (0..4).map(|i| l.send(t0, i, vec![0; 1000])).collect();
        // The first leaves the queue for the serializer at once; two wait;
        // the fourth finds the queue full.
        assert_eq!(
            fates,
            [
                Fate::Delivered,
                Fate::Delivered,
                Fate::Delivered,
                Fate::QueueDrop
            ]
        );
        assert_eq!(l.counters().queue_drops, 1);
    }

    #[test]
    fn byte_limited_queue() {
        let t0 = Instant::now();
        let mut l = link(Some(1_000_000), QueueLimit::Bytes(1500), 0.0);
        assert_eq!(l.send(t0, 0, vec![0; 1000]), Fate::Delivered); // serializing
        assert_eq!(l.send(t0, 1, vec![0; 1000]), Fate::Delivered);
        assert_eq!(l.send(t0, 2, vec![0; 1000]), Fate::QueueDrop);
        assert_eq!(l.send(t0, 3, vec![0; 400]), Fate::Delivered);
    }

    #[test]
    fn bernoulli_loss_rate_and_repeatability() {
        let t0 = Instant::now();
        let run = |seed| {
            let mut l = Link::new(
                LinkConfig {
                    loss: 0.1,
                    ..LinkConfig::default()
                },
                seed,
            );
            (0..20_000u64)
                .map(|i| l.send(t0, i, vec![0; 10]))
                .collect::<Vec<_>>()
        };
        let a = run(3);
        assert_eq!(a, run(3), "same seed, same fates");
        let lost = a.iter().filter(|f| **f == Fate::RandomLoss).count() as f64;
        // n = 20_000, p = 0.1: σ = sqrt(n·p·(1−p)) ≈ 42; allow 5σ.
        assert!((lost - 2_000.0).abs() < 5.0 * 42.5, "lost {lost}");
    }
}
