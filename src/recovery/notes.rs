//! What recovery decided, one note per decision, for a connection that is
//! traced (`crate::trace`): each packet declared lost and why, each
//! controller verdict with the numbers behind it, each verdict undone, each
//! corruption notice applied. Kept only while the connection asks for them
//! (`Recovery::keep_notes`): an untraced connection pays one branch per
//! decision and allocates nothing.

use std::time::Instant;

use sift_cc::{LossVerdict, VerdictBasis};

use super::{Recovery, SpaceId};

/// Why loss detection declared a packet lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LossTrigger {
    /// At least the packet threshold of later packets were acknowledged
    /// (RFC 9002 §6.1.1; qlog's `reordering_threshold`).
    PacketThreshold,
    /// It was sent longer than the time threshold before a later
    /// acknowledged packet (RFC 9002 §6.1.2).
    TimeThreshold,
    /// A retransmission timeout declared everything outstanding lost
    /// (`TimeoutMode::Rto`; qlog's `pto_expired`).
    Timeout,
    /// The controller's early-retransmit policy (Vegas C and D).
    EarlyRetransmit,
    /// The peer named it corrupted beyond the corruption budget: counted as
    /// a loss.
    CorruptionOverBudget,
}

/// One recovery decision.
#[derive(Clone, Debug, PartialEq)]
pub enum RecoveryNote {
    /// A packet was declared lost.
    Lost {
        /// When.
        at: Instant,
        /// Its space.
        space: SpaceId,
        /// Its packet number.
        packet_number: u64,
        /// Its size in bytes.
        size: u64,
        /// Which rule declared it.
        trigger: LossTrigger,
    },
    /// A congestion event: the controller judged packets lost.
    Verdict {
        /// When.
        at: Instant,
        /// The packets' space.
        space: SpaceId,
        /// The packets of the event (`VerdictRecord::packet_numbers`).
        packet_numbers: Vec<u64>,
        /// The controller's verdict.
        verdict: LossVerdict,
        /// A timeout-class event (persistent congestion or an RTO).
        persistent: bool,
        /// The numbers behind the verdict, when the controller gives them.
        basis: Option<VerdictBasis>,
        /// cwnd and ssthresh after the controller's response, bytes.
        cwnd: u64,
        /// See `cwnd`.
        ssthresh: u64,
    },
    /// Every packet of the latest congestion event was acknowledged after
    /// all: the event and its verdict are withdrawn.
    Undone {
        /// When.
        at: Instant,
        /// The packets' space.
        space: SpaceId,
        /// The packets of the event undone.
        packet_numbers: Vec<u64>,
        /// The verdict withdrawn.
        verdict: LossVerdict,
        /// cwnd after the undo, bytes.
        cwnd: u64,
    },
    /// A CORRUPTED frame named outstanding packets: these left flight
    /// without a window cut (those beyond the budget are `Lost` notes).
    Corrupted {
        /// When.
        at: Instant,
        /// Their space.
        space: SpaceId,
        /// The packets honoured as corrupted.
        packet_numbers: Vec<u64>,
    },
}

impl<F> Recovery<F> {
    /// Keeps notes from now on (`true`) or stops and drops them.
    pub fn keep_notes(&mut self, keep: bool) {
        self.notes = keep.then(Vec::new);
    }

    /// The notes taken since the last call, oldest first; empty when notes
    /// are not kept.
    pub fn drain_notes(&mut self) -> impl Iterator<Item = RecoveryNote> + '_ {
        self.notes.iter_mut().flat_map(|notes| notes.drain(..))
    }

    /// Whether notes are kept: callers skip building one otherwise.
    pub(super) fn noting(&self) -> bool {
        self.notes.is_some()
    }

    pub(super) fn note(&mut self, note: RecoveryNote) {
        if let Some(notes) = self.notes.as_mut() {
            notes.push(note);
        }
    }
}
