//! Where a sender's time went: what held each stretch of a transfer back.
//!
//! Linux keeps the same for TCP (`tcpi_busy_time`, `tcpi_rwnd_limited`,
//! `tcpi_sndbuf_limited` in `TCP_INFO`, shown by `ss -i`). Here every poll
//! for a packet after the handshake says what it found, and the time until
//! the next poll is charged to that: packets left (busy), or data waited
//! for the congestion window, for the pacer, for the peer's credit, or for
//! the application to write more while stream data was in flight. Time
//! with nothing to send and no stream data in flight is idle and not
//! charged. The clock is the `now` each poll is given, so the simulator
//! repeats it.
//!
//! This accounting (first as a throw-away build) found what held sift back
//! on loopback: 0.7–1 s of a 1.3 s download waiting for a pacer whose
//! bucket was too small for the host's timer
//! (`interop/results/2026-11-27-pacing-burst`).

use std::time::Instant;

use serde::{Deserialize, Serialize};

/// Microseconds a connection's sending spent in each state, since the
/// handshake completed (as of its last poll for a packet).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendTimes {
    /// Ack-eliciting packets left and the sender came back for more.
    pub busy_us: u64,
    /// Data waited for room in the congestion window.
    pub window_limited_us: u64,
    /// Data waited for the pacer.
    pub pacing_limited_us: u64,
    /// Written data waited for the peer's flow-control credit (stream or
    /// connection).
    pub credit_limited_us: u64,
    /// Stream data was in flight and the application had written nothing
    /// more to send.
    pub app_limited_us: u64,
}

/// What one poll for a packet found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SendState {
    Busy,
    WindowLimited,
    PacingLimited,
    CreditLimited,
    AppLimited,
    /// Nothing to send and no stream data in flight: not charged.
    Idle,
}

/// The state since the last poll, and the time charged so far.
#[derive(Clone, Debug, Default)]
pub(crate) struct SendClock {
    current: Option<(SendState, Instant)>,
    times: SendTimes,
}

impl SendClock {
    /// A poll at `now` found `state`: the time since the previous poll
    /// goes to what that one found.
    pub fn enter(&mut self, state: SendState, now: Instant) {
        if let Some((previous, since)) = self.current.replace((state, now)) {
            let times = &mut self.times;
            let slot = match previous {
                SendState::Busy => &mut times.busy_us,
                SendState::WindowLimited => &mut times.window_limited_us,
                SendState::PacingLimited => &mut times.pacing_limited_us,
                SendState::CreditLimited => &mut times.credit_limited_us,
                SendState::AppLimited => &mut times.app_limited_us,
                SendState::Idle => return,
            };
            let elapsed = now.saturating_duration_since(since).as_micros();
            *slot = slot.saturating_add(u64::try_from(elapsed).unwrap_or(u64::MAX));
        }
    }

    pub fn times(&self) -> SendTimes {
        self.times
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn each_stretch_goes_to_what_the_poll_before_it_found() {
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        let mut clock = SendClock::default();
        clock.enter(SendState::Busy, at(0));
        clock.enter(SendState::Busy, at(0)); // several polls in one turn
        clock.enter(SendState::PacingLimited, at(2));
        clock.enter(SendState::Idle, at(5));
        clock.enter(SendState::CreditLimited, at(100));
        clock.enter(SendState::AppLimited, at(107));
        clock.enter(SendState::WindowLimited, at(111));
        clock.enter(SendState::Busy, at(112));
        assert_eq!(
            clock.times(),
            SendTimes {
                busy_us: 2_000,
                window_limited_us: 1_000,
                pacing_limited_us: 3_000,
                credit_limited_us: 7_000,
                app_limited_us: 4_000,
            },
            "idle (5..100 ms) is not charged, the current state not yet"
        );
    }
}
