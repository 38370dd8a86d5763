//! When to send repair, and how much: one small function of what the sender
//! sees of its path (DESIGN §5.2). Coding pays where a round trip is dear
//! and loss is present: on long paths, for the tail of a transfer and for
//! small transfers. Elsewhere a retransmission is cheaper than any repair
//! symbol, so nothing is sent: a clean or short path pays nothing.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Whether a connection codes (`Config::repair`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RepairMode {
    /// Offer coding; send repair where [`RepairPolicy`] says it pays.
    #[default]
    Auto,
    /// Offer coding and send repair on any path that has shown a loss,
    /// however short its round trip (for experiments).
    On,
    /// Neither offer nor take part in coding.
    Off,
}

impl std::str::FromStr for RepairMode {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Self::Auto),
            "on" => Ok(Self::On),
            "off" => Ok(Self::Off),
            _ => Err(format!("unknown repair mode {s:?}: auto, on or off")),
        }
    }
}

impl std::fmt::Display for RepairMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Auto => "auto",
            Self::On => "on",
            Self::Off => "off",
        })
    }
}

/// The policy's knobs, with the values measured in `docs/notes/2026-12-08-repair.md`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RepairPolicy {
    /// Coding pays only when a round trip costs at least this much (auto).
    pub long_path_rtt: Duration,
    /// Repair symbols sent per expected loss, above the loss rate itself:
    /// the rate of interleaved repair is `loss · (1 + margin)`.
    pub margin: f64,
    /// Standard deviations of the binomial loss count a tail's repair
    /// covers (k = n·p + z·√(n·p) + 1).
    pub tail_deviations: f64,
    /// Most repair symbols for one tail.
    pub max_tail_symbols: u64,
    /// Interleaved repair rate never above this fraction of source packets.
    pub max_rate: f64,
}

impl Default for RepairPolicy {
    fn default() -> Self {
        Self {
            long_path_rtt: Duration::from_millis(150),
            margin: 0.5,
            tail_deviations: 2.0,
            max_tail_symbols: 64,
            max_rate: 0.25,
        }
    }
}

/// What the sender knows of its path when it decides.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PathView {
    /// The path's round-trip time without queueing (the minimum seen): a
    /// long path, not a deep queue, is where repair pays (a queue's losses
    /// are congestion, which repair must not hide from the controller).
    pub min_rtt: Duration,
    /// Fraction of packets lost (declared lost, named corrupted, or rebuilt
    /// by the peer), recent; 0 until a loss is seen.
    pub loss_rate: f64,
}

impl RepairPolicy {
    /// Is coding worth keeping source symbols for on this path?
    pub fn armed(&self, mode: RepairMode, path: &PathView) -> bool {
        match mode {
            RepairMode::Off => false,
            RepairMode::On => path.loss_rate > 0.0,
            RepairMode::Auto => path.loss_rate > 0.0 && path.min_rtt >= self.long_path_rtt,
        }
    }

    /// One repair symbol after every this many source packets while the
    /// sender has more to send; `None`: no interleaved repair.
    pub fn interleave_every(&self, mode: RepairMode, path: &PathView) -> Option<u64> {
        if !self.armed(mode, path) {
            return None;
        }
        self.interval_at(path.loss_rate)
    }

    /// Source packets per interleaved repair symbol at `loss_rate`, on a
    /// path where repair is armed.
    pub fn interval_at(&self, loss_rate: f64) -> Option<u64> {
        let rate = (loss_rate * (1.0 + self.margin)).min(self.max_rate);
        if rate <= 0.0 {
            return None;
        }
        Some((1.0 / rate).floor().max(1.0) as u64)
    }

    /// Repair symbols to send when the sender has nothing more to send and
    /// `unacked` source packets are still unacknowledged: enough for the
    /// losses the flight may hold, so that its last losses cost no round
    /// trip.
    pub fn tail_symbols(&self, mode: RepairMode, path: &PathView, unacked: u64) -> u64 {
        if unacked == 0 || !self.armed(mode, path) {
            return 0;
        }
        let expected = unacked as f64 * path.loss_rate;
        let symbols = expected + self.tail_deviations * expected.sqrt() + 1.0;
        (symbols.ceil() as u64)
            .min(self.max_tail_symbols)
            .min(unacked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(rtt_ms: u64, loss_rate: f64) -> PathView {
        PathView {
            min_rtt: Duration::from_millis(rtt_ms),
            loss_rate,
        }
    }

    #[test]
    fn auto_sends_nothing_on_a_clean_or_short_path() {
        let policy = RepairPolicy::default();
        assert!(!policy.armed(RepairMode::Auto, &path(600, 0.0)), "clean");
        assert!(!policy.armed(RepairMode::Auto, &path(100, 0.02)), "short");
        assert_eq!(
            policy.tail_symbols(RepairMode::Auto, &path(100, 0.05), 300),
            0
        );
        assert_eq!(
            policy.interleave_every(RepairMode::Auto, &path(600, 0.0)),
            None
        );
        assert!(policy.armed(RepairMode::On, &path(10, 0.01)));
        assert!(!policy.armed(RepairMode::Off, &path(600, 0.05)));
    }

    #[test]
    fn repair_grows_with_the_loss_the_path_shows() {
        let policy = RepairPolicy::default();
        // 5% · 1.5 = 7.5%: one symbol per 13 source packets.
        assert_eq!(
            policy.interleave_every(RepairMode::Auto, &path(600, 0.05)),
            Some(13)
        );
        // 1% · 1.5: one per 66.
        assert_eq!(
            policy.interleave_every(RepairMode::Auto, &path(600, 0.01)),
            Some(66)
        );
        // 300 packets at 5%: 15 expected + 2·√15 + 1 = 23.7 → 24.
        assert_eq!(
            policy.tail_symbols(RepairMode::Auto, &path(600, 0.05), 300),
            24
        );
        // At most the flight itself, and the cap.
        assert_eq!(policy.tail_symbols(RepairMode::Auto, &path(600, 0.5), 3), 3);
        assert_eq!(
            policy.tail_symbols(RepairMode::Auto, &path(600, 0.3), 5000),
            64
        );
    }
}
