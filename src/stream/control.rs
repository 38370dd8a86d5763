//! What the stream layer asks the connection to send: descriptors of STREAM
//! frames ([`StreamChunk`]) and of flow-control and stream-state frames
//! ([`ControlFrame`]). The connection encodes them; nothing here touches
//! wire bytes.

use serde::{Deserialize, Serialize};

use super::id::{Dir, StreamId};

/// A piece of a stream for one STREAM frame (RFC 9000 §19.8). The bytes come
/// from [`Streams::chunk_data`](super::Streams::chunk_data).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct StreamChunk {
    /// The stream.
    pub id: StreamId,
    /// Stream offset of the first byte.
    pub offset: u64,
    /// Data bytes; 0 for a FIN-only chunk.
    pub len: usize,
    /// The chunk ends the stream (its end is the final size).
    pub fin: bool,
}

/// A flow-control or stream-state frame to send (RFC 9000 §19.4–§19.14).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ControlFrame {
    /// MAX_DATA: the connection limit we grant.
    MaxData(u64),
    /// MAX_STREAM_DATA: the limit we grant on one stream.
    MaxStreamData {
        /// The stream.
        id: StreamId,
        /// The limit, bytes.
        max: u64,
    },
    /// MAX_STREAMS: how many streams of `dir` the peer may open in total.
    MaxStreams {
        /// Which kind of stream.
        dir: Dir,
        /// The cumulative count.
        max: u64,
    },
    /// RESET_STREAM: we abandon sending on `id`.
    ResetStream {
        /// The stream.
        id: StreamId,
        /// The application's error code.
        error_code: u64,
        /// Bytes sent on the stream before the reset.
        final_size: u64,
    },
    /// STOP_SENDING: we ask the peer to abandon sending on `id`.
    StopSending {
        /// The stream.
        id: StreamId,
        /// The application's error code.
        error_code: u64,
    },
    /// DATA_BLOCKED: the peer's connection limit stops us at this value.
    DataBlocked(u64),
    /// STREAM_DATA_BLOCKED: the peer's limit on `id` stops us at `limit`.
    StreamDataBlocked {
        /// The stream.
        id: StreamId,
        /// The limit that stops us, bytes.
        limit: u64,
    },
    /// STREAMS_BLOCKED: the peer's stream limit for `dir` stops us at `limit`.
    StreamsBlocked {
        /// Which kind of stream.
        dir: Dir,
        /// The count that stops us.
        limit: u64,
    },
}

/// A control frame waiting to go out. Values that can change (limits) are
/// read from the current state when the frame is polled, so a frame is never
/// sent stale. Variant order is sending priority: resets first (they free
/// resources at both ends), then credit, then blocked reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum PendingControl {
    ResetStream(StreamId),
    StopSending(StreamId),
    MaxData,
    MaxStreamData(StreamId),
    MaxStreams(Dir),
    DataBlocked(u64),
    StreamDataBlocked(StreamId, u64),
    StreamsBlocked(Dir, u64),
}

/// Whether a pending frame can go out now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ControlReadiness {
    /// Send this.
    Ready(ControlFrame),
    /// No longer needed (stream gone, limit moved on): drop it.
    Stale,
    /// Needed, but the peer does not know the stream yet (opened beyond its
    /// MAX_STREAMS): keep it.
    Wait,
}
