//! Per-event traces of a connection: what it sent and received, what
//! recovery declared lost and why, what the controller judged and on what
//! numbers, how its window and RTT moved (DESIGN §2 `set_observer`).
//!
//! Owns: the events a connection reports ([`Event`]), the observer trait
//! that receives them ([`Observer`]), the per-connection factory a
//! [`crate::conn::Config`] carries ([`TraceSink`]), and the qlog writer
//! (`qlog`, JSON-SEQ through quiche's `qlog` crate).
//! Must not: read the clock (every event carries the connection's `now`),
//! or cost anything when no observer is set: the connection builds events
//! only behind `if let Some(observer)`.

mod qlog;
mod qlog_dir;
mod read;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sift_cc::Phase;

use crate::recovery::{RecoveryNote, SpaceId};
use crate::wire::{ConnectionId, TransportParams};
use crate::{CloseReason, Side};

pub use self::qlog::{QlogWriter, QLOG_EXTENSION, SIFT_EVENT_PREFIX};
pub use self::qlog_dir::{
    QlogLimits, DEFAULT_MAX_HELD_QLOG_BYTES, DEFAULT_MAX_OPEN_QLOG_FILES, DEFAULT_MAX_QLOG_BYTES,
};
pub use self::read::{read_trace, TraceEvent, TraceReadError};

/// Recovery's estimates after an event, for a metrics update.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RecoveryMetrics {
    /// The congestion window, bytes.
    pub cwnd: u64,
    /// The slow-start threshold, bytes (`u64::MAX` before the first loss).
    pub ssthresh: u64,
    /// Bytes in flight.
    pub bytes_in_flight: u64,
    /// RFC 9002 smoothed_rtt.
    pub smoothed_rtt: Duration,
    /// RFC 9002 latest_rtt.
    pub latest_rtt: Duration,
    /// RFC 9002 min_rtt.
    pub min_rtt: Duration,
    /// RFC 9002 rttvar.
    pub rtt_variance: Duration,
    /// Consecutive PTOs.
    pub pto_count: u32,
    /// The pacing rate, bytes per second.
    pub pacing_rate: u64,
    /// Packets received by ECN codepoint (ECT(0), ECT(1), CE), all spaces:
    /// what our ACKs report.
    pub ecn_received: [u64; 3],
    /// The peer's validated counts of our packets (ECT(0), ECT(1), CE).
    pub ecn_reported: [u64; 3],
}

/// One thing that happened to a connection. Borrowed: an observer that
/// keeps an event copies what it needs.
#[derive(Debug)]
pub enum Event<'a> {
    /// Transport parameters: ours at the start (`local`), the peer's when
    /// they arrive.
    ParametersSet {
        /// Ours (true) or the peer's.
        local: bool,
        /// The parameters.
        params: &'a TransportParams,
    },
    /// A packet was sealed into a datagram.
    PacketSent {
        /// Its space.
        space: SpaceId,
        /// A 0-RTT packet (application data under the early keys).
        zero_rtt: bool,
        /// Its packet number.
        packet_number: u64,
        /// Its size on the wire, bytes.
        size: u64,
        /// Its frames, unencrypted (decoded by the observer if it wants).
        frames: &'a [u8],
    },
    /// A packet was opened and its frames accepted for processing.
    PacketReceived {
        /// Its space.
        space: SpaceId,
        /// A 0-RTT packet (application data under the early keys).
        zero_rtt: bool,
        /// Its packet number.
        packet_number: u64,
        /// Its size on the wire, bytes.
        size: u64,
        /// Its frames, decrypted.
        frames: &'a [u8],
    },
    /// The client took the server's Retry (RFC 9000 §17.2.5).
    RetryReceived {
        /// Its size on the wire, bytes.
        size: u64,
        /// The connection ID it gave the client to use.
        scid: ConnectionId,
        /// The length of its token (the token itself is not traced: it
        /// vouches for the client's address).
        token_len: u64,
    },
    /// A packet arrived with a verified header and a damaged payload: a
    /// CORRUPTED frame will name it if notices were negotiated.
    PayloadCorrupt {
        /// Its space.
        space: SpaceId,
        /// Its packet number (from the verified header).
        packet_number: u64,
        /// Its size on the wire, bytes.
        size: u64,
    },
    /// A recovery decision: a loss, a verdict, an undo, a notice applied.
    Recovery(&'a RecoveryNote),
    /// Recovery's estimates changed.
    MetricsUpdated(&'a RecoveryMetrics),
    /// The controller moved between slow start, avoidance and recovery.
    CongestionStateUpdated {
        /// The phase before, if one was reported.
        old: Option<Phase>,
        /// The phase now.
        new: Phase,
    },
    /// Careful Resume (RFC 9959) changed phase (the event of
    /// draft-ietf-tsvwg-careful-resume-qlog).
    CarefulResumePhaseUpdated {
        /// The change: old and new phase, trigger, window and pipe size.
        change: &'a sift_cc::CarefulResumeChange,
        /// The saved state the connection resumes from.
        status: &'a sift_cc::CarefulResumeStatus,
    },
    /// The 1-RTT keys changed phase (RFC 9001 §6).
    KeyUpdated {
        /// How many key updates so far, this one included.
        generation: u64,
    },
    /// Path MTU discovery changed the largest datagram sent (qlog's
    /// `quic:mtu_updated`).
    MtuUpdated {
        /// The size before, bytes (UDP payload).
        old: u64,
        /// The size now, bytes.
        new: u64,
        /// The search is over.
        done: bool,
    },
    /// ECN validation of the path changed state (qlog's
    /// `quic:ecn_state_updated`).
    EcnStateUpdated {
        /// The state before.
        old: crate::conn::ecn::EcnState,
        /// The state now.
        new: crate::conn::ecn::EcnState,
        /// Why validation failed, when it did.
        failure: Option<crate::conn::ecn::EcnFailure>,
    },
    /// Datagrams now leave without (true) or with a UDP checksum.
    ChecksumFreeChanged {
        /// Without a checksum from now on.
        checksum_free: bool,
    },
    /// A 1-RTT packet whose damaged header was rebuilt and opened: it is
    /// processed as if it had arrived intact (its `PacketReceived` follows).
    HeaderRepaired {
        /// Its packet number (the one the rebuilt header carried).
        packet_number: u64,
        /// Its size on the wire, bytes.
        size: u64,
        /// How many headers repaired over the connection, this one included.
        total: u64,
    },
    /// A 1-RTT packet that never arrived, rebuilt from the peer's repair
    /// symbols (`conn::fec`): processed and acknowledged as received.
    PacketRebuilt {
        /// Its packet number.
        packet_number: u64,
        /// Its payload, bytes.
        size: u64,
        /// How many packets rebuilt over the connection, this one included.
        total: u64,
    },
    /// The peer's address is validated (RFC 9000 §8.1): by a Handshake
    /// packet, a token, or from the start at a client. Reported once; a
    /// qlog directory opens a server connection's file only then.
    AddressValidated,
    /// The connection closed (or began closing).
    Closed(&'a CloseReason),
    /// An event from outside the connection, named in sift's namespace
    /// (the simulator's ground truth).
    Annotation {
        /// The event's name, without the namespace.
        name: &'static str,
        /// Its data.
        data: &'a serde_json::Value,
    },
}

/// Receives a connection's events. Set one per connection with
/// [`crate::conn::Connection::set_observer`] or through
/// [`crate::conn::Config::trace`].
pub trait Observer: Send + fmt::Debug {
    /// One event at the connection's `now`.
    fn event(&mut self, now: Instant, event: &Event<'_>);
}

/// What a trace sink learns of the connection it makes an observer for.
#[derive(Clone, Copy, Debug)]
pub struct TraceStart {
    /// Which end.
    pub side: Side,
    /// Our connection ID: names the trace file.
    pub local_cid: ConnectionId,
    /// The connection's start (the trace's time zero).
    pub now: Instant,
}

type MakeObserver = dyn Fn(&TraceStart) -> Option<Box<dyn Observer>> + Send + Sync;

/// Makes an observer for each new connection (`Config::trace`); `None`
/// from the function leaves that connection untraced.
#[derive(Clone)]
pub struct TraceSink(Arc<MakeObserver>);

impl TraceSink {
    /// A sink that calls `make` for every connection.
    pub fn new(
        make: impl Fn(&TraceStart) -> Option<Box<dyn Observer>> + Send + Sync + 'static,
    ) -> Self {
        Self(Arc::new(make))
    }

    /// One qlog file per connection in `dir`, named
    /// `{local connection ID}-{client|server}.sqlog` (the interop
    /// runner's `QLOGDIR` convention), within the default [`QlogLimits`]:
    /// a server connection's file is written only once its client's
    /// address is validated, at most 256 files are open at once and the
    /// traces write at most 1 GiB in all (`qlog_dir`'s module docs). A file
    /// that cannot be created is logged and that connection goes untraced.
    pub fn qlog_dir(dir: impl Into<PathBuf>) -> Self {
        Self::qlog_dir_limited(dir, QlogLimits::default())
    }

    /// [`TraceSink::qlog_dir`] within `limits`.
    pub fn qlog_dir_limited(dir: impl Into<PathBuf>, limits: QlogLimits) -> Self {
        let dir = Arc::new(qlog_dir::QlogDir::new(dir.into(), limits));
        Self::new(move |start| dir.observer_for(start))
    }

    /// The observer for a connection starting as `start`.
    pub fn observer_for(&self, start: &TraceStart) -> Option<Box<dyn Observer>> {
        (self.0)(start)
    }
}

impl fmt::Debug for TraceSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TraceSink")
    }
}

/// Where [`TraceSink::qlog_dir`] writes the trace of `start`.
pub fn qlog_path(dir: &Path, start: &TraceStart) -> PathBuf {
    let cid: String = start
        .local_cid
        .as_slice()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    dir.join(format!("{cid}-{}.{QLOG_EXTENSION}", side_name(start.side)))
}

fn side_name(side: Side) -> &'static str {
    match side {
        Side::Client => "client",
        Side::Server => "server",
    }
}

#[cfg(test)]
mod tests;
