//! The loss-detection timer (RFC 9002 §6.2, Appendix A.8): the earliest
//! time-threshold loss, else the probe timeout with exponential backoff (or
//! a classic RTO, RFC 6298, when the configuration asks for one), and the
//! client's anti-deadlock timer before the handshake is confirmed.

use std::time::{Duration, Instant};

use super::{Recovery, SpaceId, TimeoutMode, TimeoutOutcome};

impl<F> Recovery<F> {
    pub(super) fn timeout_duration(&self, space: SpaceId) -> Duration {
        let backoff = 1u32 << self.pto_count.min(16);
        let base = match self.config.timeout {
            TimeoutMode::Pto => self.pto_period(space),
            TimeoutMode::Rto => self.pto_period(space).max(self.config.min_rto),
        };
        // The cap never shortens the first, un-backed-off timeout.
        (base * backoff).min(self.config.max_timeout.max(base))
    }

    pub(super) fn earliest_loss_time(&self) -> Option<(Instant, SpaceId)> {
        SpaceId::ALL
            .iter()
            .filter_map(|&s| self.spaces[s.index()].loss_time.map(|t| (t, s)))
            .min()
    }

    pub(super) fn pto_time(&self, now: Instant) -> Option<(Instant, SpaceId)> {
        let any_in_flight = SpaceId::ALL
            .iter()
            .any(|s| self.spaces[s.index()].ledger.has_ack_eliciting());
        if !any_in_flight {
            // Client anti-deadlock (RFC 9002 §6.2.2.1): until the handshake
            // is confirmed, keep a timer so a lost server flight is probed.
            if self.handshake_confirmed {
                return None;
            }
            let space = if self.has_handshake_keys {
                SpaceId::Handshake
            } else {
                SpaceId::Initial
            };
            // From the last packet sent: a deadline taken from `now` would
            // move every time it is asked for, and never fire.
            let armed_at = self.last_sent.unwrap_or(now);
            return Some((armed_at + self.timeout_duration(space), space));
        }
        let mut best: Option<(Instant, SpaceId)> = None;
        for space in SpaceId::ALL {
            let state = &self.spaces[space.index()];
            if !state.ledger.has_ack_eliciting() {
                continue;
            }
            if space == SpaceId::Data && !self.handshake_confirmed {
                break;
            }
            let Some(last) = state.time_of_last_ack_eliciting else {
                continue;
            };
            let at = last + self.timeout_duration(space);
            if best.is_none_or(|(t, _)| at < t) {
                best = Some((at, space));
            }
        }
        best
    }

    /// When the time-threshold loss timer fires (RFC 9002 §6.1.2), if a
    /// packet waits for it; unlike [`Recovery::loss_detection_timer`], never
    /// a probe timeout.
    pub fn loss_time(&self) -> Option<Instant> {
        self.earliest_loss_time().map(|(t, _)| t)
    }

    /// When the loss-detection timer fires, if armed. `anti_deadlock` is
    /// true for a client that has not yet confirmed the handshake.
    pub fn loss_detection_timer(&self, now: Instant, anti_deadlock: bool) -> Option<Instant> {
        if let Some((t, _)) = self.earliest_loss_time() {
            return Some(t);
        }
        let any_in_flight = SpaceId::ALL
            .iter()
            .any(|s| self.spaces[s.index()].ledger.has_ack_eliciting());
        if !any_in_flight && !anti_deadlock {
            return None;
        }
        self.pto_time(now).map(|(t, _)| t)
    }

    /// The loss-detection timer fired (RFC 9002 §6.2 OnLossDetectionTimeout).
    pub fn on_loss_detection_timeout(&mut self, now: Instant) -> TimeoutOutcome<F> {
        if let Some((_, space)) = self.earliest_loss_time() {
            let lost = self.detect_lost(space, now);
            if !lost.is_empty() {
                self.on_packets_lost(space, &lost, now);
            }
            return TimeoutOutcome {
                lost,
                lost_space: Some(space),
                probes: None,
            };
        }
        let Some((_, space)) = self.pto_time(now) else {
            return TimeoutOutcome {
                lost: Vec::new(),
                lost_space: None,
                probes: None,
            };
        };
        self.stats.ptos += 1;
        self.pto_count += 1;
        match self.config.timeout {
            TimeoutMode::Pto => TimeoutOutcome {
                lost: Vec::new(),
                lost_space: None,
                probes: Some((space, if self.pto_count > 1 { 2 } else { 1 })),
            },
            TimeoutMode::Rto => {
                // Go-back-N: everything outstanding is presumed lost and the
                // window collapses (RFC 6298 §5.5, RFC 5681 §3.1).
                let lost = self.spaces[space.index()].ledger.drain();
                self.spaces[space.index()].loss_time = None;
                self.loss_trigger = Some(super::LossTrigger::Timeout);
                self.on_timeout_loss(space, &lost, now);
                self.loss_trigger = None;
                TimeoutOutcome {
                    lost,
                    lost_space: Some(space),
                    probes: Some((space, 1)),
                }
            }
        }
    }
}
