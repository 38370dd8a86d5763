//! The limits each endpoint grants: ours ([`StreamConfig`], advertised in our
//! transport parameters) and the peer's ([`PeerLimits`], from its).

use serde::{Deserialize, Serialize};

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

/// What this endpoint grants its peer (sent in transport parameters) and its
/// own buffer limits.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct StreamConfig {
    /// Connection receive window at the start, in bytes (RFC 9000 §18.2
    /// initial_max_data).
    pub initial_max_data: u64,
    /// Per-stream receive window at the start, for every kind of stream
    /// (RFC 9000 §18.2 initial_max_stream_data_*).
    pub initial_max_stream_data: u64,
    /// Ceiling for auto-tuning of the connection receive window.
    pub max_receive_window: u64,
    /// Ceiling for auto-tuning of each stream's receive window.
    pub max_stream_receive_window: u64,
    /// Concurrent bidirectional streams the peer may open (RFC 9000 §18.2
    /// initial_max_streams_bidi; one more is granted per stream retired).
    pub max_streams_bidi: u64,
    /// Concurrent unidirectional streams the peer may open.
    pub max_streams_uni: u64,
    /// Bytes the application may queue on one stream beyond what the peer
    /// has acknowledged, at least (credit allowing, see
    /// `send_beyond_credit`). The connection grows the buffer with its
    /// congestion window (`Streams::size_send_buffer`) up to
    /// `max_send_buffer`. Also the floor of the connection's send buffer.
    pub send_buffer: u64,
    /// Ceiling for that growth: the most one stream's send buffer holds.
    pub max_send_buffer: u64,
    /// Ceiling for the bytes held across the send buffers of all streams
    /// of one connection, written and not yet acknowledged: the most a
    /// connection's send side holds, whatever the peer does. The
    /// connection's buffer follows the congestion window like a stream's
    /// (three windows, from `send_buffer` up to this), so N streams share
    /// one budget instead of multiplying it.
    pub max_connection_send_buffer: u64,
    /// Bytes a stream accepts beyond the peer's credit for it
    /// (MAX_STREAM_DATA), and all streams together beyond the peer's
    /// connection credit (MAX_DATA). A peer that grants no credit pins at
    /// most this much of its connection's memory. It lets a request be
    /// written before the handshake tells the peer's limits, and leaves
    /// bytes waiting at a limit, which is what makes the sender report
    /// (STREAM_)DATA_BLOCKED and the receiver grow a window that held it.
    pub send_beyond_credit: u64,
    /// Most runs of received bytes held beyond a gap, across all streams
    /// of the connection. Each costs about 100 bytes besides its data; a
    /// peer that sends one byte in every two within its credit would make
    /// reassembly cost ~50× the receive window without this cap. More is a
    /// connection error (PROTOCOL_VIOLATION, RFC 9000 §21.9). An honest
    /// peer leaves at most one per packet lost in flight.
    pub max_out_of_order_segments: u64,
    /// Bytes of payload the receiving socket's buffer holds, when a socket
    /// is known (the I/O layer fills it in from what the kernel granted:
    /// `Endpoint::with_socket_receive_bytes`): auto-tuning then grows the
    /// receive windows past it only by what the path holds (delivery rate
    /// × min RTT, `stream::flow`), so a sender cannot fill the socket until
    /// the kernel drops datagrams. `None`: only the ceilings above bound
    /// the windows (the simulator, which has no socket).
    pub socket_receive_bytes: Option<u64>,
}

impl Default for StreamConfig {
    /// Initial windows of 4 MiB per stream and 6 MiB per connection (1.5×,
    /// the auto-tuning ratio). A window must be about twice the
    /// bandwidth-delay product not to stall a sender (credit is renewed
    /// every half window, half a round trip late); 4 MiB is that for
    /// 50 Mb/s over 100 ms with room to spare, and on longer paths slow
    /// start leaves auto-tuning time to double it. With 512 KiB and 1 MiB
    /// that 100 ms path stalled three times in slow start, each stall
    /// draining the queue (and with it HyStart++'s RTT signal). quinn
    /// starts streams at 1.25 MB, Chromium at 6 MB per stream and 15 MB per
    /// connection; auto-tuning grows windows to the ceilings below either
    /// way. The send buffer starts at 4 MiB too and grows with the
    /// congestion window: a hole stays in it for about two round trips, so
    /// on a 600 ms path at 50 Mb/s a fixed 4 MiB held the sender to about
    /// half the link. A connection's streams share one send budget of up
    /// to 32 MiB, three windows of 50 Mb/s × 600 ms with room for the
    /// window's overshoot, and accept 64 KiB beyond the peer's credit: a
    /// peer that grants none pins 64 KiB per connection, one that grants
    /// credit and never acknowledges at most 32 MiB (quinn's `send_window`
    /// is 10 MB). 65 536 out-of-order segments (about 6.5 MB of overhead)
    /// are more than the packets of a 64 MiB window (56 000 of 1200 bytes).
    fn default() -> Self {
        Self {
            initial_max_data: 6 * MIB,
            initial_max_stream_data: 4 * MIB,
            max_receive_window: 64 * MIB,
            max_stream_receive_window: 32 * MIB,
            max_streams_bidi: 100,
            max_streams_uni: 100,
            send_buffer: 4 * MIB,
            max_send_buffer: 32 * MIB,
            max_connection_send_buffer: 32 * MIB,
            send_beyond_credit: 64 * KIB,
            max_out_of_order_segments: 65_536,
            socket_receive_bytes: None,
        }
    }
}

impl StreamConfig {
    /// The limits this configuration grants the peer, as they go into our
    /// transport parameters.
    pub fn transport_limits(&self) -> PeerLimits {
        PeerLimits {
            initial_max_data: self.initial_max_data,
            initial_max_stream_data_bidi_local: self.initial_max_stream_data,
            initial_max_stream_data_bidi_remote: self.initial_max_stream_data,
            initial_max_stream_data_uni: self.initial_max_stream_data,
            initial_max_streams_bidi: self.max_streams_bidi,
            initial_max_streams_uni: self.max_streams_uni,
        }
    }
}

/// What the peer granted us, from its transport parameters (RFC 9000 §18.2).
/// "Local" and "remote" are from the peer's point of view.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerLimits {
    /// Bytes we may send on the whole connection.
    pub initial_max_data: u64,
    /// Bytes we may send on a bidirectional stream the peer opened.
    pub initial_max_stream_data_bidi_local: u64,
    /// Bytes we may send on a bidirectional stream we opened.
    pub initial_max_stream_data_bidi_remote: u64,
    /// Bytes we may send on a unidirectional stream we opened.
    pub initial_max_stream_data_uni: u64,
    /// Bidirectional streams we may open.
    pub initial_max_streams_bidi: u64,
    /// Unidirectional streams we may open.
    pub initial_max_streams_uni: u64,
}
