//! A windowed maximum over a virtual clock (ProbeBW cycles for max_bw,
//! packet-timed rounds for extra_acked), as draft-ietf-ccwg-bbr §5.5.4 and
//! §5.5.9 use it. The draft points at Kathleen Nichols' three-sample
//! approximation; this is the exact sliding maximum (a monotone queue), which
//! is as cheap for windows of a few slots.

use std::collections::VecDeque;

/// The maximum of the values seen in the last `window` time units.
#[derive(Clone, Debug, Default)]
pub struct WindowedMax {
    /// (time, value), times increasing, values strictly decreasing.
    samples: VecDeque<(u64, f64)>,
}

impl WindowedMax {
    /// Adds `value` at virtual time `time` (non-decreasing across calls) and
    /// returns the maximum over times in `(time − window, time]`.
    pub fn update(&mut self, value: f64, time: u64, window: u64) -> f64 {
        while self.samples.back().is_some_and(|&(_, v)| v <= value) {
            self.samples.pop_back();
        }
        self.samples.push_back((time, value));
        self.expire(time, window);
        self.best()
    }

    /// Drops samples older than the window ending at `time`.
    pub fn expire(&mut self, time: u64, window: u64) {
        while self
            .samples
            .front()
            .is_some_and(|&(t, _)| time.saturating_sub(t) >= window.max(1))
        {
            self.samples.pop_front();
        }
    }

    /// The current maximum, 0 when empty.
    pub fn best(&self) -> f64 {
        self.samples.front().map_or(0.0, |&(_, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maximum_covers_the_current_and_previous_slot_for_a_window_of_two() {
        let mut filter = WindowedMax::default();
        assert_eq!(filter.update(10.0, 0, 2), 10.0);
        assert_eq!(filter.update(4.0, 0, 2), 10.0);
        // Slot 1: slot 0's 10 is still inside the window.
        assert_eq!(filter.update(6.0, 1, 2), 10.0);
        // Slot 2: 10 (slot 0) expires; 6 (slot 1) remains the maximum.
        assert_eq!(filter.update(5.0, 2, 2), 6.0);
        // Slot 3: only slots 2 and 3.
        assert_eq!(filter.update(1.0, 3, 2), 5.0);
        // A window of one slot keeps the current slot only.
        assert_eq!(filter.update(2.0, 4, 1), 2.0);
    }
}
