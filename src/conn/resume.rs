//! Careful Resume on the connection (RFC 9959): taking a saved path state
//! into the controller, and offering what this connection saw of its path
//! for a later one. The phases themselves are `sift_cc::CarefulResume`; the
//! saved state travels in the server's address token (`endpoint::token`)
//! or, for a sender that is the client, wherever its application keeps it
//! (the simulator hands it from one flow to the next).
//!
//! No clock reads: `now` comes from the caller.

use sift_cc::{CarefulResumeStatus, SavedPath};

use super::Connection;

/// How much the observed capacity must grow before a new saved state is
/// offered (`Connection::path_state_to_save`): by a quarter, so that a
/// long connection re-issues its token a handful of times, not per ACK.
pub const SAVE_GROWTH: (u64, u64) = (5, 4);

/// What the connection resumed from and what it last offered to save.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct ResumeState {
    /// The saved state this connection runs Careful Resume from.
    pub(super) saved: Option<SavedPath>,
    /// The window of the last state `path_state_to_save` returned.
    pub(super) last_offered_cwnd: u64,
}

impl Connection {
    /// Runs this connection's controller under Careful Resume from `saved`,
    /// a path state an earlier connection on the same path observed
    /// (RFC 9959). Ignored when `Config::careful_resume` is off, or once
    /// 1-RTT data has been sent (the jump is for the start of a transfer).
    /// Returns whether it took effect.
    pub fn resume_path(&mut self, saved: SavedPath) -> bool {
        let Some(config) = self.config.careful_resume else {
            return false;
        };
        if self.resume.saved.is_some()
            || saved.cwnd == 0
            || self
                .recovery
                .largest_acked(crate::recovery::SpaceId::Data)
                .is_some()
        {
            return false;
        }
        // The datagram size now (path MTU discovery may have raised it).
        let mss = self.recovery.mss();
        self.recovery.resume_path(saved, config, mss);
        self.resume.saved = Some(saved);
        true
    }

    /// What a later connection on this path could resume from: the
    /// capacity this one demonstrated and its minimum RTT (RFC 9959 §3.1).
    pub fn observed_path(&self) -> Option<SavedPath> {
        self.recovery.observed_path()
    }

    /// The path state to save now, when Careful Resume is on, the
    /// handshake is confirmed, the peer's current address is validated
    /// and the observed capacity grew by [`SAVE_GROWTH`] since the last
    /// state this returned: a server seals it in a fresh NEW_TOKEN token
    /// bound to [`Connection::remote`]. `None` otherwise: a state sealed
    /// for an address the peer moved to but has not proved would let
    /// anyone who sends one packet from a victim's address aim a resumed
    /// window at it (issue 53).
    pub fn path_state_to_save(&mut self) -> Option<SavedPath> {
        self.config.careful_resume?;
        if !self.handshake_confirmed || !self.address_validated {
            return None;
        }
        let observed = self.observed_path()?;
        let (num, den) = SAVE_GROWTH;
        let threshold =
            u128::from(self.resume.last_offered_cwnd) * u128::from(num) / u128::from(den);
        if u128::from(observed.cwnd) <= threshold {
            return None;
        }
        self.resume.last_offered_cwnd = observed.cwnd;
        Some(observed)
    }

    /// A new path: nothing observed of it has been offered yet.
    pub(super) fn on_new_path_for_resume(&mut self) {
        self.resume.last_offered_cwnd = 0;
    }

    /// Careful Resume's phase and numbers, when this connection resumed.
    pub fn careful_resume(&self) -> Option<CarefulResumeStatus> {
        self.recovery.careful_resume()
    }

    /// After the controller was replaced before data flowed (a server
    /// switching to the controller its client asked for), the saved state
    /// still applies: wrap the new one too.
    pub(super) fn rewrap_resume(&mut self) {
        let (Some(saved), Some(config)) = (self.resume.saved, self.config.careful_resume) else {
            return;
        };
        if self
            .recovery
            .largest_acked(crate::recovery::SpaceId::Data)
            .is_some()
        {
            return;
        }
        // The datagram size now (path MTU discovery may have raised it).
        let mss = self.recovery.mss();
        self.recovery.resume_path(saved, config, mss);
    }
}
