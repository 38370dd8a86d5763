//! Virtual time: a fixed anchor `Instant` plus an offset that only the event
//! loop moves forward. Nothing here reads the wall clock; the anchor is handed
//! in by the caller, and every result is a function of offsets from it.

use std::time::{Duration, Instant};

/// The simulator's clock. Time only moves when the event loop says so, and
/// never backwards.
#[derive(Clone, Copy, Debug)]
pub struct VirtualClock {
    base: Instant,
    now: Instant,
}

impl VirtualClock {
    /// A clock standing at `base` (virtual time zero).
    pub fn new(base: Instant) -> Self {
        Self { base, now: base }
    }

    /// Virtual time zero.
    pub fn base(&self) -> Instant {
        self.base
    }

    /// The current virtual instant.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Virtual time elapsed since zero.
    pub fn elapsed(&self) -> Duration {
        self.now - self.base
    }

    /// The instant `offset` after virtual time zero.
    pub fn at(&self, offset: Duration) -> Instant {
        self.base + offset
    }

    /// How far `instant` lies after virtual time zero (zero if before it).
    pub fn offset_of(&self, instant: Instant) -> Duration {
        instant.saturating_duration_since(self.base)
    }

    /// Moves the clock to `instant`; an instant in the past leaves it where it
    /// is, so time never runs backwards.
    pub fn advance_to(&mut self, instant: Instant) {
        if instant > self.now {
            self.now = instant;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_starts_at_zero_and_never_runs_backwards() {
        let base = Instant::now();
        let mut clock = VirtualClock::new(base);
        assert_eq!(clock.elapsed(), Duration::ZERO);
        clock.advance_to(base + Duration::from_millis(250));
        clock.advance_to(base + Duration::from_millis(100));
        assert_eq!(clock.elapsed(), Duration::from_millis(250));
        assert_eq!(clock.offset_of(clock.now()), Duration::from_millis(250));
        assert_eq!(
            clock.at(Duration::from_secs(1)),
            base + Duration::from_secs(1)
        );
    }
}
