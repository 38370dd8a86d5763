//! Outages (sift's `outage EVERY DURATION`): every EVERY the link goes down
//! for DURATION and drops every packet offered meanwhile. Windows are
//! counted from the link's epoch (`Link::set_epoch`, else the first packet
//! offered): down during [epoch + k·EVERY, epoch + k·EVERY + DURATION) for
//! k = 1, 2, …, so a link always starts up.
//!
//! The outage acts where packets enter the link: packets already queued or
//! propagating when it starts still arrive (a sender-side radio blackout).
//!
//! The same windows make stalls (`stall EVERY DURATION`): the serializer
//! starts nothing inside one, so packets wait rather than drop.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// A periodic outage.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outage {
    /// Period between the starts of two outages (> 0).
    #[serde(with = "super::config::duration_ms")]
    pub every_ms: Duration,
    /// How long each outage lasts (≤ `every_ms`).
    #[serde(with = "super::config::duration_ms")]
    pub duration_ms: Duration,
}

impl Outage {
    /// When the window covering `now` ends, if one does.
    pub fn window_end(&self, epoch: Instant, now: Instant) -> Option<Instant> {
        if !self.is_down(epoch, now) {
            return None;
        }
        let every = self.every_ms.as_nanos();
        let since = now.saturating_duration_since(epoch).as_nanos();
        let start = since - since % every;
        let end = start + self.duration_ms.as_nanos();
        Some(epoch + std::time::Duration::from_nanos(u64::try_from(end).ok()?))
    }

    /// Whether the link is down at `now`, for a link whose epoch is `epoch`.
    pub fn is_down(&self, epoch: Instant, now: Instant) -> bool {
        let every = self.every_ms.as_nanos();
        if every == 0 || self.duration_ms.is_zero() {
            return false;
        }
        let since = now.saturating_duration_since(epoch).as_nanos();
        since >= every && since % every < self.duration_ms.as_nanos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_ends_its_duration_after_it_began() {
        let epoch = Instant::now();
        let o = Outage {
            every_ms: Duration::from_secs(1),
            duration_ms: Duration::from_millis(200),
        };
        let at = |ms: u64| epoch + Duration::from_millis(ms);
        assert_eq!(o.window_end(epoch, at(2050)), Some(at(2200)));
        assert_eq!(o.window_end(epoch, at(2200)), None);
        assert_eq!(o.window_end(epoch, at(500)), None);
    }

    #[test]
    fn outage_windows_start_every_period_after_the_epoch() {
        let epoch = Instant::now();
        let o = Outage {
            every_ms: Duration::from_secs(1),
            duration_ms: Duration::from_millis(200),
        };
        let down = |ms: u64| o.is_down(epoch, epoch + Duration::from_millis(ms));
        // Up for the first second, then down for [1000, 1200), [2000, 2200), …
        assert!(!down(0) && !down(200) && !down(999));
        assert!(down(1000) && down(1199));
        assert!(!down(1200) && !down(1999));
        assert!(down(2000) && !down(2200));
        assert!(!o.is_down(
            epoch,
            epoch.checked_sub(Duration::from_secs(5)).unwrap_or(epoch)
        ));
    }
}
