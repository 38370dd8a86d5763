//! Round trips delimited by send time: a round ends at the first ACK of a
//! packet sent after the round began, the controller-side equivalent of
//! "an ACK at or beyond the SND.NXT recorded when the round began" (RFC 9406
//! §4.2) for controllers that see send times but not sequence numbers.

use std::time::Instant;

use crate::AckEvent;

/// Counts round trips from the ACK stream.
#[derive(Clone, Debug, Default)]
pub struct RoundTracker {
    /// When the current round began (an ACK time), if one has.
    start: Option<Instant>,
    /// Rounds completed.
    count: u64,
}

impl RoundTracker {
    /// Whether `ack` ends the current round (the first ACK always does);
    /// a new round then begins at `ack.now`.
    pub fn on_ack(&mut self, ack: &AckEvent) -> bool {
        let ended = self
            .start
            .is_none_or(|start| ack.largest_acked_sent_time >= start);
        if ended {
            self.start = Some(ack.now);
            self.count += 1;
        }
        ended
    }

    /// Rounds completed so far.
    pub fn count(&self) -> u64 {
        self.count
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{ack, ms, rtt};

    #[test]
    fn a_round_ends_when_a_packet_sent_after_it_began_is_acked() {
        let t0 = Instant::now();
        let mut rounds = RoundTracker::default();
        // The first ACK (t0 + 100 ms) ends round 0 and begins round 1.
        assert!(rounds.on_ack(&ack(t0 + ms(100), t0, 1, rtt(100, 100), 0)));
        // Packets sent before t0 + 100 ms do not end round 1 …
        assert!(!rounds.on_ack(&ack(t0 + ms(150), t0 + ms(50), 1, rtt(100, 100), 0)));
        // … one sent at or after it does.
        assert!(rounds.on_ack(&ack(t0 + ms(200), t0 + ms(100), 1, rtt(100, 100), 0)));
        assert_eq!(rounds.count(), 2);
    }
}
