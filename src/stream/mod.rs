//! Streams: the state of every stream of one connection — send and receive
//! buffers, ordered reassembly, FIN, RESET_STREAM and STOP_SENDING,
//! stream-count limits, and connection- and stream-level flow control with
//! receive-window auto-tuning (RFC 9000 §2–4, §19), and send buffers sized
//! from the congestion window the connection reports.
//!
//! Owns: which stream bytes are unsent, in flight, acknowledged or to be
//! resent; what the peer may send us and what we may send it.
//! Must not: encode or parse wire bytes (the connection encodes the
//! [`StreamChunk`]s and [`ControlFrame`]s handed out here), know about
//! packets, or read the clock (callers pass `now` and `srtt`).
//! Depends only on [`crate::Side`], std, serde and thiserror.
//!
//! Lifecycle: a stream is retired (its state dropped) once every half it
//! has is done — the sending half when all data and the FIN, or our
//! RESET_STREAM, are acknowledged; the receiving half when the application
//! read the FIN or was told of the peer's reset, or stopped the stream and
//! the final size is known. A retired peer stream gives the peer one more
//! stream (MAX_STREAMS). A bidirectional peer stream therefore needs the
//! application to finish or reset its own half too. A client whose 0-RTT
//! the server rejected drops every stream at once and starts its IDs over
//! ([`Streams::zero_rtt_rejected`], RFC 9001 §4.6.2).
//!
//! Memory a peer can make a connection hold (SECURITY.md, "Memory a peer
//! can pin"; every limit a [`StreamConfig`] field):
//! - Sending: a stream takes writes up to the least of its send buffer
//!   (three congestion windows, `send_buffer`..`max_send_buffer`) and the
//!   peer's credit for it plus `send_beyond_credit`; all streams together
//!   up to the connection's send buffer (sized the same way, at most
//!   `max_connection_send_buffer`) and the peer's connection credit plus
//!   `send_beyond_credit`. Acknowledged bytes leave their stream at once,
//!   in blocks (`blocks.rs`); emptied blocks are kept for the next writes
//!   only while the application waits for room, and only within the room
//!   left in the connection's send buffer, so held and kept together stay
//!   within it. Defaults: 64 KiB for a peer that grants no credit, 32 MiB
//!   for any peer.
//! - Receiving: only what our windows grant is accepted, at most
//!   `max_stream_receive_window` per stream and `max_receive_window` per
//!   connection (64 MiB), in at most `max_out_of_order_segments` pieces
//!   beyond gaps, on at most `max_streams_bidi + max_streams_uni` peer
//!   streams at once.

mod blocks;
mod config;
mod control;
mod error;
mod flow;
mod id;
mod incoming;
mod outgoing;
mod ranges;
mod recv;
mod send;
mod streams;

#[cfg(test)]
mod tests;

pub use config::{PeerLimits, StreamConfig};
pub use control::{ControlFrame, StreamChunk};
pub use error::{StreamError, TransportError, TransportErrorCode};
pub use flow::{CONNECTION_WINDOW_FACTOR, WINDOW_INCREASE_FACTOR, WINDOW_TRIGGER_FACTOR};
pub use id::{
    stream_dir, stream_id, stream_index, stream_initiator, Dir, StreamId, MAX_STREAM_COUNT,
    MAX_STREAM_OFFSET,
};
pub use streams::{StreamStats, Streams, MIN_SEND_SHARE, SEND_BUFFER_WINDOWS};
