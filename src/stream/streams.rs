//! [`Streams`]: every stream of one connection, the stream-count limits in
//! both directions and connection-level flow control. This file holds the
//! state and the application's calls; `incoming.rs` applies received frames
//! and `outgoing.rs` decides what to send and takes delivery feedback.

use std::collections::{BTreeMap, BTreeSet};
use std::io::IoSliceMut;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::blocks::SpareBlocks;
use super::config::{PeerLimits, StreamConfig};
use super::control::PendingControl;
use super::error::StreamError;
use super::flow::{ReceiveWindow, SendCredit, CONNECTION_WINDOW_FACTOR};
use super::id::{
    stream_dir, stream_id, stream_index, stream_initiator, Dir, StreamId, MAX_STREAM_COUNT,
    MAX_STREAM_OFFSET,
};
use super::recv::RecvBuffer;
use super::send::SendBuffer;
use crate::Side;

/// Congestion windows a stream's send buffer holds (see
/// [`Streams::size_send_buffer`]).
pub const SEND_BUFFER_WINDOWS: u64 = 3;

/// The least send buffer a share of an endpoint's send budget caps a
/// connection at ([`Streams::set_send_share`]): above three initial
/// windows of 1 350-byte datagrams (40 500 bytes) rounded to whole 16 KiB
/// blocks, so that a fresh connection is never held below its window.
pub const MIN_SEND_SHARE: u64 = 48 * 1024;

/// Counters of the stream layer, for reports.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamStats {
    /// New stream bytes handed out in chunks (first transmissions).
    pub bytes_sent: u64,
    /// Stream bytes handed out again after a loss.
    pub bytes_retransmitted: u64,
    /// Distinct stream bytes received from the peer.
    pub bytes_received: u64,
    /// Bytes the application read.
    pub bytes_read: u64,
    /// Streams this endpoint opened.
    pub streams_opened_local: u64,
    /// Streams the peer opened (explicitly or implicitly).
    pub streams_opened_remote: u64,
    /// DATA_BLOCKED frames queued: times the peer's connection limit held
    /// us back.
    pub data_blocked: u64,
    /// STREAM_DATA_BLOCKED frames queued: times a stream limit held us back.
    pub stream_data_blocked: u64,
    /// The connection receive window now (grows with auto-tuning).
    pub connection_receive_window: u64,
    /// Bytes held now across the send buffers of all streams: written and
    /// not yet acknowledged (at most
    /// [`StreamConfig::max_connection_send_buffer`]).
    pub send_buffered: u64,
}

/// What the send buffers of all streams hold together: the figures the
/// connection's limits apply to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct SendTally {
    /// Bytes stored: written and not yet acknowledged or dropped by a reset.
    pub(super) held: u64,
    /// Bytes written and never sent.
    pub(super) unsent: u64,
}

impl SendTally {
    /// The figures of one stream's send buffer.
    pub(super) fn of(buffer: &SendBuffer) -> Self {
        Self {
            held: buffer.held(),
            unsent: buffer.unsent_bytes(),
        }
    }

    /// One stream's figures changed from `before` to `after`.
    pub(super) fn replace(&mut self, before: Self, after: Self) {
        self.held = self.held.saturating_sub(before.held) + after.held;
        self.unsent = self.unsent.saturating_sub(before.unsent) + after.unsent;
    }
}

/// The sending half of stream `id`, for an application call. Takes the map,
/// not `self`, so callers may still touch the rest of `Streams`.
/// `missing` is the error for a stream that does not exist
/// ([`Streams::missing`]).
fn send_half(
    streams: &mut BTreeMap<StreamId, StreamState>,
    id: StreamId,
    missing: StreamError,
) -> Result<&mut SendHalf, StreamError> {
    let stream = streams.get_mut(&id).ok_or(missing)?;
    stream.send.as_mut().ok_or(StreamError::WrongDirection(id))
}

/// The receiving half of stream `id`, for an application call.
fn recv_half(
    streams: &mut BTreeMap<StreamId, StreamState>,
    id: StreamId,
    missing: StreamError,
) -> Result<&mut RecvHalf, StreamError> {
    let stream = streams.get_mut(&id).ok_or(missing)?;
    stream.recv.as_mut().ok_or(StreamError::WrongDirection(id))
}

/// The sending half of a stream and the peer's credit for it.
#[derive(Clone, Debug)]
pub(super) struct SendHalf {
    pub(super) buffer: SendBuffer,
    pub(super) credit: SendCredit,
}

impl SendHalf {
    /// Bytes this stream may take from the application now, on its own
    /// account: room in a buffer of `buffer_limit` bytes, and no further
    /// than `beyond_credit` past the peer's limit for it (quinn and quiche
    /// stop at the limit itself). The connection's room is the caller's.
    fn write_room(&self, buffer_limit: u64, beyond_credit: u64) -> u64 {
        let written = self.buffer.written_offset();
        let buffer_room = buffer_limit.saturating_sub(self.buffer.buffered());
        let credit_room = self
            .credit
            .limit()
            .saturating_add(beyond_credit)
            .saturating_sub(written);
        buffer_room
            .min(credit_room)
            .min(MAX_STREAM_OFFSET.saturating_sub(written))
    }
}

/// The receiving half of a stream and the credit we grant on it.
#[derive(Clone, Debug)]
pub(super) struct RecvHalf {
    pub(super) buffer: RecvBuffer,
    pub(super) window: ReceiveWindow,
    /// Error code of our STOP_SENDING, once the application stopped it.
    pub(super) stop_error_code: Option<u64>,
}

/// One stream: the halves that exist for its type (RFC 9000 §2.1: a
/// unidirectional stream has only the initiator's sending half and the
/// other end's receiving half).
#[derive(Clone, Debug)]
pub(super) struct StreamState {
    pub(super) send: Option<SendHalf>,
    pub(super) recv: Option<RecvHalf>,
}

/// Which of our streams the peer knows about: it accepts frames for our
/// stream n only while n is below its MAX_STREAMS.
#[derive(Clone, Copy, Debug)]
pub(super) struct PeerStreamWindow {
    pub(super) side: Side,
    pub(super) limits_known: bool,
    pub(super) max_streams: [u64; 2],
}

impl PeerStreamWindow {
    /// Whether frames about stream `id` may go to the peer.
    pub(super) fn knows(&self, id: StreamId) -> bool {
        stream_initiator(id) != self.side
            || (self.limits_known && stream_index(id) < self.max_streams[stream_dir(id).index()])
    }
}

/// Every stream of one connection: send and receive buffers, reassembly,
/// FIN, RESET_STREAM and STOP_SENDING, stream-count limits, and
/// connection- and stream-level flow control with receive-window
/// auto-tuning (RFC 9000 §2–4).
///
/// Sans-IO: it never encodes wire bytes and never reads the clock. The
/// connection feeds it received frames and delivery feedback, and polls it
/// for [`ControlFrame`](super::ControlFrame)s and
/// [`StreamChunk`](super::StreamChunk)s to encode.
#[derive(Debug)]
pub struct Streams {
    pub(super) side: Side,
    pub(super) config: StreamConfig,
    /// The peer's transport parameters, once the handshake delivered them.
    pub(super) peer_limits: Option<PeerLimits>,
    pub(super) streams: BTreeMap<StreamId, StreamState>,
    /// Index of the next stream we open, per direction.
    pub(super) next_local: [u64; 2],
    /// The peer's MAX_STREAMS per direction, and whether it is known.
    pub(super) peer_stream_window: PeerStreamWindow,
    /// The MAX_STREAMS limit we last reported blocked at, per direction.
    pub(super) streams_blocked_reported: [Option<u64>; 2],
    /// Index of the next peer stream not yet opened, per direction.
    pub(super) next_remote: [u64; 2],
    /// Our MAX_STREAMS to the peer, per direction.
    pub(super) local_max_streams: [u64; 2],
    /// Index of the next peer stream to hand out from `accept`.
    pub(super) next_accept: [u64; 2],
    /// The peer's connection-level credit for our new data.
    pub(super) connection_send: SendCredit,
    /// Our connection-level window for the peer's data.
    pub(super) connection_recv: ReceiveWindow,
    /// Sum over streams of the highest offset received (RFC 9000 §4.1).
    pub(super) connection_received: u64,
    /// Sum over streams of bytes read or discarded.
    pub(super) connection_consumed: u64,
    /// Control frames waiting to go out, in priority order.
    pub(super) pending: BTreeSet<PendingControl>,
    /// The stream that got the last chunk: round-robin starts after it.
    pub(super) last_served: Option<StreamId>,
    /// Bytes each stream may hold unacknowledged now: `config.send_buffer`
    /// grown with the congestion window (`size_send_buffer`).
    pub(super) send_buffer: u64,
    /// Bytes all streams together may hold unacknowledged now, sized like
    /// `send_buffer` up to `config.max_connection_send_buffer`.
    pub(super) connection_send_buffer: u64,
    /// The floor of both send buffers: `config.send_buffer`, or less when
    /// the endpoint shares a send budget among many connections
    /// ([`Self::set_send_share`]).
    pub(super) send_buffer_floor: u64,
    /// The ceiling of both send buffers below their config's, when the
    /// endpoint shares a send budget ([`Self::set_send_share`]).
    pub(super) send_buffer_ceiling: u64,
    /// What the send buffers of all streams hold.
    pub(super) send_tally: SendTally,
    /// Blocks the send buffers emptied, for their next writes: kept only
    /// while `writer_waiting`, no more than the room left in
    /// `connection_send_buffer` ([`Self::trim_spare`]), and none once a
    /// stream retires and no other holds anything.
    pub(super) spare_blocks: SpareBlocks,
    /// A write found the send buffer (or the peer's credit) full since
    /// the buffers last held nothing or a stream last ended: the
    /// application writes faster than the path drains, and emptied blocks
    /// will be filled again at once. A connection whose writes all fit (a
    /// server's short responses) frees blocks as they empty, as it did
    /// before blocks were kept, and so does one whose writer just wrote a
    /// stream's FIN.
    pub(super) writer_waiting: bool,
    /// Runs of received bytes held beyond a gap, all streams together
    /// (capped by `config.max_out_of_order_segments`).
    pub(super) out_of_order_segments: u64,
    pub(super) stats: StreamStats,
    /// Streams whose data may go out in 0-RTT (the application said a
    /// replay of it is harmless).
    pub(super) replay_safe: BTreeSet<StreamId>,
    /// Only `replay_safe` streams send now: the connection is in 0-RTT.
    pub(super) early_data_only: bool,
    /// Client, once the server rejected 0-RTT: how many streams of ours
    /// per direction were opened before (all discarded); those not opened
    /// again since are stale ([`Self::zero_rtt_rejected`]).
    pub(super) rejected_in_zero_rtt: [u64; 2],
}

impl Streams {
    /// The streams of a new connection on `side`, granting the peer what
    /// `config` says. Nothing is sent on streams until
    /// [`set_peer_limits`](Self::set_peer_limits).
    pub fn new(side: Side, config: StreamConfig) -> Self {
        // The connection window stays 1.5× ahead of a stream's (see
        // `flow::CONNECTION_WINDOW_FACTOR`), its bound too: one stream
        // held by both limits at once waits for two updates.
        let (num, den) = CONNECTION_WINDOW_FACTOR;
        let connection_recv =
            ReceiveWindow::new(config.initial_max_data, config.max_receive_window)
                .bounded_by_socket(config.socket_receive_bytes.map(|bytes| bytes * num / den));
        let send_buffer = config.send_buffer;
        let config_send_buffer = config.send_buffer;
        let connection_send_buffer = config.send_buffer.min(config.max_connection_send_buffer);
        let local_max_streams = [
            config.max_streams_bidi.min(MAX_STREAM_COUNT),
            config.max_streams_uni.min(MAX_STREAM_COUNT),
        ];
        Self {
            side,
            config,
            peer_limits: None,
            streams: BTreeMap::new(),
            next_local: [0; 2],
            peer_stream_window: PeerStreamWindow {
                side,
                limits_known: false,
                max_streams: [0; 2],
            },
            streams_blocked_reported: [None; 2],
            next_remote: [0; 2],
            local_max_streams,
            next_accept: [0; 2],
            connection_send: SendCredit::new(0),
            connection_recv,
            connection_received: 0,
            connection_consumed: 0,
            pending: BTreeSet::new(),
            last_served: None,
            replay_safe: BTreeSet::new(),
            early_data_only: false,
            rejected_in_zero_rtt: [0; 2],
            send_buffer,
            connection_send_buffer,
            send_buffer_floor: config_send_buffer,
            send_buffer_ceiling: u64::MAX,
            send_tally: SendTally::default(),
            spare_blocks: SpareBlocks::default(),
            writer_waiting: false,
            out_of_order_segments: 0,
            stats: StreamStats::default(),
        }
    }

    /// Sizes each stream's send buffer for a congestion window of
    /// `congestion_window` bytes: [`SEND_BUFFER_WINDOWS`] windows, within
    /// `config.send_buffer` and `config.max_send_buffer`. The buffer holds
    /// every byte from the oldest one not yet acknowledged, and a lost or
    /// corrupted packet keeps its bytes there for about two round trips
    /// (a round trip to learn of it, one for the repair's ACK) while the
    /// sender goes on at full rate; the third window is the data ready for
    /// the next send. Linux sizes a socket's send buffer the same way
    /// (`tcp_sndbuf_expand`: two windows of segments at their memory
    /// cost). The buffer shrinks with the window too: writes wait until
    /// acknowledgements bring the stream below it.
    ///
    /// The connection's buffer, shared by all its streams, is sized the
    /// same way up to `config.max_connection_send_buffer`, a hard cap: N
    /// streams share one path and one congestion window, so they need no
    /// more than one stream does.
    pub fn size_send_buffer(&mut self, congestion_window: u64) {
        let floor = self.send_buffer_floor;
        let windows = congestion_window.saturating_mul(SEND_BUFFER_WINDOWS);
        self.send_buffer = windows
            .min(self.config.max_send_buffer)
            .max(floor)
            .min(self.send_buffer_ceiling);
        self.connection_send_buffer = windows
            .max(floor)
            .min(self.config.max_connection_send_buffer)
            .min(self.send_buffer_ceiling);
        self.trim_spare();
    }

    /// This connection's share of its endpoint's send budget
    /// (`Endpoint::with_send_budget`), or `None` for no budget: the share
    /// is the floor of the send buffers (never above `config.send_buffer`)
    /// and their ceiling (never below [`MIN_SEND_SHARE`]); between the two
    /// they follow the congestion window as always. A server with
    /// thousands of clients then neither buffers every response whole (the
    /// 4 MiB floor) nor lets each connection's window grow its buffer while
    /// they all queue behind each other: 2 000 concurrent 1 MB downloads
    /// held 845 of the server's 922 MB peak in send buffers (heaptrack).
    pub fn set_send_share(&mut self, share: Option<u64>) {
        match share {
            Some(share) => {
                self.send_buffer_floor = share.min(self.config.send_buffer);
                self.send_buffer_ceiling = share.max(MIN_SEND_SHARE);
            }
            None => {
                self.send_buffer_floor = self.config.send_buffer;
                self.send_buffer_ceiling = u64::MAX;
            }
        }
    }

    /// Frees spare send blocks beyond the room left in the connection's
    /// send buffer, so that what the streams hold and keep together stays
    /// within it.
    pub(super) fn trim_spare(&mut self) {
        self.spare_blocks.trim(
            self.connection_send_buffer
                .saturating_sub(self.send_tally.held),
        );
    }

    /// Bytes all streams together may take from the application now: room
    /// in the connection's send buffer, and no further than
    /// `config.send_beyond_credit` past the peer's connection credit
    /// (counting bytes written and not yet sent against it, as quinn's
    /// `write_limit` counts `data_sent` against `max_data`).
    fn connection_write_room(&self) -> u64 {
        let buffer_room = self
            .connection_send_buffer
            .saturating_sub(self.send_tally.held);
        let credit_room = self
            .connection_send
            .available()
            .saturating_add(self.config.send_beyond_credit)
            .saturating_sub(self.send_tally.unsent);
        buffer_room.min(credit_room)
    }

    /// Marks stream `id` replay-safe: its data may go out in 0-RTT.
    pub fn mark_replay_safe(&mut self, id: StreamId) {
        self.replay_safe.insert(id);
    }

    /// While `on`, only replay-safe streams send (0-RTT, RFC 9001 §4.6).
    pub fn set_early_data_only(&mut self, on: bool) {
        self.early_data_only = on;
    }

    /// Whether stream `id` may send now (see [`Self::set_early_data_only`]).
    pub(super) fn may_send_now(&self, id: StreamId) -> bool {
        !self.early_data_only || self.replay_safe.contains(&id)
    }

    /// Applies the peer's transport parameters, once the handshake delivers
    /// them. Limits only grow; a stream count above 2^60 is clamped (the
    /// transport-parameter decoder must reject it, RFC 9000 §19.11).
    pub fn set_peer_limits(&mut self, peer: &PeerLimits) {
        self.peer_limits = Some(*peer);
        self.connection_send.raise(peer.initial_max_data);
        let window = &mut self.peer_stream_window;
        window.limits_known = true;
        for (dir, granted) in [
            (Dir::Bi, peer.initial_max_streams_bidi),
            (Dir::Uni, peer.initial_max_streams_uni),
        ] {
            let max = &mut window.max_streams[dir.index()];
            *max = (*max).max(granted.min(MAX_STREAM_COUNT));
        }
        let side = self.side;
        for (&id, stream) in &mut self.streams {
            if let Some(send) = &mut stream.send {
                send.credit.raise(initial_send_credit(side, peer, id));
            }
        }
        // Streams opened beyond the limit while it was unknown wait for more.
        for dir in Dir::ALL {
            if self.next_local[dir.index()] > self.peer_stream_window.max_streams[dir.index()] {
                self.report_streams_blocked_if_exhausted(dir);
            }
        }
    }

    /// Client, when the server rejected 0-RTT (RFC 9001 §4.6.2): the
    /// server never saw a stream, so every one is discarded — send and
    /// receive state, buffered data, flow-control accounting, stream-count
    /// credit, queued control frames — and streams start as on a new
    /// connection under the server's actual limits `peer`: the next stream
    /// opened is stream 0 again. Calls on a discarded stream's ID fail
    /// with [`StreamError::ZeroRttRejected`] until a stream with that ID
    /// is opened again. The counters of [`stats`](Self::stats) go on.
    pub fn zero_rtt_rejected(&mut self, peer: Option<&PeerLimits>) {
        let mut fresh = Streams::new(self.side, self.config.clone());
        fresh.stats = std::mem::take(&mut self.stats);
        fresh.send_buffer = self.send_buffer;
        fresh.connection_send_buffer = self.connection_send_buffer;
        fresh.rejected_in_zero_rtt = self.next_local;
        *self = fresh;
        if let Some(peer) = peer {
            self.set_peer_limits(peer);
        }
    }

    /// The error for a call on stream `id`, which does not exist:
    /// `ZeroRttRejected` if 0-RTT's rejection discarded it and it was not
    /// opened again, else `UnknownStream`.
    fn missing(&self, id: StreamId) -> StreamError {
        let index = stream_index(id);
        let dir = stream_dir(id).index();
        let stale = stream_initiator(id) == self.side
            && index >= self.next_local[dir]
            && index < self.rejected_in_zero_rtt[dir];
        if stale {
            StreamError::ZeroRttRejected(id)
        } else {
            StreamError::UnknownStream(id)
        }
    }

    /// Opens a stream of ours. Fails with `StreamsExhausted` (and queues
    /// STREAMS_BLOCKED) when the peer's MAX_STREAMS is reached. Before the
    /// peer's limits are known, opening succeeds and data waits.
    pub fn open(&mut self, dir: Dir) -> Result<StreamId, StreamError> {
        let index = self.next_local[dir.index()];
        if self.peer_stream_window.limits_known
            && index >= self.peer_stream_window.max_streams[dir.index()]
        {
            self.report_streams_blocked_if_exhausted(dir);
            return Err(StreamError::StreamsExhausted);
        }
        let id = stream_id(self.side, dir, index).ok_or(StreamError::StreamsExhausted)?;
        let state = self.new_stream_state(id);
        self.streams.insert(id, state);
        self.next_local[dir.index()] = index + 1;
        self.stats.streams_opened_local += 1;
        Ok(id)
    }

    /// Queues STREAMS_BLOCKED for `dir` once per limit value when we have
    /// opened as many streams as the peer allows.
    pub(super) fn report_streams_blocked_if_exhausted(&mut self, dir: Dir) {
        let window = &self.peer_stream_window;
        let limit = window.max_streams[dir.index()];
        let reported = &mut self.streams_blocked_reported[dir.index()];
        if window.limits_known && self.next_local[dir.index()] >= limit && *reported != Some(limit)
        {
            *reported = Some(limit);
            self.pending
                .insert(PendingControl::StreamsBlocked(dir, limit));
        }
    }

    /// The state of a newly opened stream `id` (ours or the peer's).
    pub(super) fn new_stream_state(&self, id: StreamId) -> StreamState {
        let local = stream_initiator(id) == self.side;
        let dir = stream_dir(id);
        let send = (local || dir == Dir::Bi).then(|| SendHalf {
            buffer: SendBuffer::new(),
            credit: SendCredit::new(
                self.peer_limits
                    .as_ref()
                    .map_or(0, |peer| initial_send_credit(self.side, peer, id)),
            ),
        });
        let recv = (!local || dir == Dir::Bi).then(|| RecvHalf {
            buffer: RecvBuffer::new(),
            window: ReceiveWindow::new(
                self.config.initial_max_stream_data,
                self.config.max_stream_receive_window,
            )
            .bounded_by_socket(self.config.socket_receive_bytes),
            stop_error_code: None,
        });
        StreamState { send, recv }
    }

    /// Queues `data` on stream `id`. Accepts as much as the limits allow
    /// and returns that count; the FIN applies only if all of `data` was
    /// accepted. `Ok(0)` only for an empty write (with or without FIN); no
    /// room is `Err(Blocked)`.
    ///
    /// The limits: the stream's send buffer (`size_send_buffer`), the
    /// peer's credit for the stream plus `config.send_beyond_credit`, and
    /// for all streams together the connection's send buffer and the
    /// peer's connection credit plus `config.send_beyond_credit`. Credit
    /// and acknowledgements arrive in datagrams, after which a blocked
    /// writer may try again.
    pub fn write(&mut self, id: StreamId, data: &[u8], fin: bool) -> Result<usize, StreamError> {
        self.write_within(id, data.len(), fin, |buffer, accepted, spare| {
            buffer.write(data.get(..accepted).unwrap_or_default(), spare);
            accepted
        })
    }

    /// Queues on stream `id` up to `max` bytes that `fill` writes straight
    /// into its send buffer (no copy through a buffer of the caller's), and
    /// returns how many it wrote: `fill` gets the room the limits of
    /// [`write`](Self::write) allow, as slices in stream order, and returns
    /// how many bytes it wrote into them, in order. `Err(Blocked)` when
    /// there is no room; `fill` is then not called.
    pub fn write_with(
        &mut self,
        id: StreamId,
        max: usize,
        fill: impl FnOnce(&mut [IoSliceMut<'_>]) -> usize,
    ) -> Result<usize, StreamError> {
        self.write_within(id, max, false, |buffer, accepted, spare| {
            buffer.write_with(accepted, spare, fill)
        })
    }

    /// The checks and accounting of a write of up to `wanted` bytes that
    /// `put` appends (given the room accepted): see [`write`](Self::write).
    fn write_within(
        &mut self,
        id: StreamId,
        wanted: usize,
        fin: bool,
        put: impl FnOnce(&mut SendBuffer, usize, &mut SpareBlocks) -> usize,
    ) -> Result<usize, StreamError> {
        let connection_room = self.connection_write_room();
        let (buffer_limit, beyond_credit) = (self.send_buffer, self.config.send_beyond_credit);
        let missing = self.missing(id);
        let send = send_half(&mut self.streams, id, missing)?;
        if let Some(error_code) = send.buffer.stopped_by_peer() {
            return Err(StreamError::Stopped { id, error_code });
        }
        if !send.buffer.is_writable() {
            return Err(StreamError::AlreadyFinished(id));
        }
        let room = send
            .write_room(buffer_limit, beyond_credit)
            .min(connection_room);
        let accepted = usize::try_from(room).unwrap_or(usize::MAX).min(wanted);
        self.writer_waiting |= accepted < wanted;
        if accepted == 0 && wanted > 0 {
            return Err(StreamError::Blocked);
        }
        let before = SendTally::of(&send.buffer);
        let written = put(&mut send.buffer, accepted, &mut self.spare_blocks);
        let finished = fin && written == wanted;
        if finished {
            send.buffer.write_fin();
        }
        self.send_tally.replace(before, SendTally::of(&send.buffer));
        if finished {
            // The writer is done with this stream: what it empties from
            // now on is freed, not kept for writes that will not come.
            self.writer_waiting = false;
            self.spare_blocks.clear();
        }
        Ok(written)
    }

    /// Reads in-order bytes of stream `id` into `buf`. Returns the bytes
    /// read and whether the end of the stream was reached (all data read).
    /// `Err(Blocked)` when nothing is ready; `Err(Reset)` once the peer
    /// reset the stream (unread data is dropped at once).
    ///
    /// Reading frees receive window: once half the window is consumed a
    /// MAX_STREAM_DATA / MAX_DATA is queued, auto-tuned with `now`, the
    /// connection's smoothed RTT `srtt` and, for windows bounded by their
    /// socket, its minimum RTT `min_rtt` (see `flow.rs`). A peer stream read
    /// to its end (and whose sending half, if any, is done) is retired and
    /// MAX_STREAMS credit is queued.
    pub fn read(
        &mut self,
        id: StreamId,
        buf: &mut [u8],
        now: Instant,
        srtt: Duration,
        min_rtt: Duration,
    ) -> Result<(usize, bool), StreamError> {
        let mut at = 0;
        self.read_with(
            id,
            buf.len(),
            &mut |bytes| {
                if let Some(to) = buf.get_mut(at..at + bytes.len()) {
                    to.copy_from_slice(bytes);
                }
                at += bytes.len();
            },
            now,
            srtt,
            min_rtt,
        )
    }

    /// Like [`read`](Self::read), without a copy: up to `max` bytes are
    /// lent to `consume` in order (one or two slices, each taken whole).
    pub fn read_with(
        &mut self,
        id: StreamId,
        max: usize,
        consume: &mut dyn FnMut(&[u8]),
        now: Instant,
        srtt: Duration,
        min_rtt: Duration,
    ) -> Result<(usize, bool), StreamError> {
        let missing = self.missing(id);
        let recv = recv_half(&mut self.streams, id, missing)?;
        if recv.buffer.is_stopped() {
            return Err(StreamError::ReceiveStopped(id));
        }
        if let Some(reset) = recv.buffer.reset() {
            recv.buffer.mark_reset_reported();
            self.retire_if_done(id);
            return Err(StreamError::Reset {
                id,
                error_code: reset.error_code,
            });
        }
        let consumed_before = recv.buffer.consumed();
        let (read, fin) = recv.buffer.read_with(max, consume);
        if read == 0 && !fin && max > 0 {
            return Err(StreamError::Blocked);
        }
        let consumed = recv.buffer.consumed();
        if recv.buffer.wants_credit()
            && recv.window.update_due(consumed)
            && recv.window.update(consumed, now, srtt, min_rtt).is_some()
        {
            self.pending.insert(PendingControl::MaxStreamData(id));
            self.connection_recv.stay_ahead_of(recv.window.window());
        }
        self.stats.bytes_read += read as u64;
        self.connection_consumed += consumed - consumed_before;
        if self.connection_recv.update_due(self.connection_consumed)
            && self
                .connection_recv
                .update(self.connection_consumed, now, srtt, min_rtt)
                .is_some()
        {
            self.pending.insert(PendingControl::MaxData);
        }
        if fin {
            self.retire_if_done(id);
        }
        Ok((read, fin))
    }

    /// Abandons sending on stream `id`: queues RESET_STREAM with the final
    /// size set to the highest offset sent, and drops unsent and
    /// retransmittable data. Doing it again, or after everything was
    /// acknowledged, changes nothing.
    pub fn reset(&mut self, id: StreamId, error_code: u64) -> Result<(), StreamError> {
        let missing = self.missing(id);
        let send = send_half(&mut self.streams, id, missing)?;
        let before = SendTally::of(&send.buffer);
        if send.buffer.reset(error_code).is_some() {
            self.pending.insert(PendingControl::ResetStream(id));
        }
        self.send_tally.replace(before, SendTally::of(&send.buffer));
        Ok(())
    }

    /// Asks the peer to stop sending on stream `id`: queues STOP_SENDING
    /// (unless the final size is already known) and discards data from now
    /// on; reads then fail with `ReceiveStopped`.
    pub fn stop_sending(&mut self, id: StreamId, error_code: u64) -> Result<(), StreamError> {
        let missing = self.missing(id);
        let recv = recv_half(&mut self.streams, id, missing)?;
        if recv.buffer.is_stopped() {
            return Ok(());
        }
        let final_size_known = recv.buffer.final_size().is_some();
        self.out_of_order_segments = self
            .out_of_order_segments
            .saturating_sub(recv.buffer.out_of_order_segments());
        let freed = recv.buffer.stop();
        recv.stop_error_code = Some(error_code);
        if !final_size_known {
            self.pending.insert(PendingControl::StopSending(id));
        }
        self.on_connection_bytes_discarded(freed);
        self.retire_if_done(id);
        Ok(())
    }

    /// Streams with something for a read: bytes, the end of the stream, or
    /// a reset to report. Peer streams show up here once they have data.
    pub fn readable(&self) -> impl Iterator<Item = StreamId> + '_ {
        self.streams.iter().filter_map(|(&id, stream)| {
            stream
                .recv
                .as_ref()
                .is_some_and(|recv| recv.buffer.is_readable())
                .then_some(id)
        })
    }

    /// Whether a read of stream `id` would not wait: it has bytes, its end
    /// or a reset to report, or it is not (or no longer) a stream we
    /// receive on, which a read reports at once. What
    /// [`readable`](Self::readable) says of one stream, without looking at
    /// every other.
    pub fn is_readable(&self, id: StreamId) -> bool {
        self.streams
            .get(&id)
            .and_then(|stream| stream.recv.as_ref())
            .is_none_or(|recv| recv.buffer.is_readable())
    }

    /// Whether a write to stream `id` would not wait: it has room, or it
    /// is finished, reset, stopped or gone, which a write reports at once.
    /// What [`writable`](Self::writable) says of one stream, and more.
    pub fn is_writable(&self, id: StreamId) -> bool {
        let Some(send) = self
            .streams
            .get(&id)
            .and_then(|stream| stream.send.as_ref())
        else {
            return true;
        };
        !send.buffer.is_writable()
            || (self.connection_write_room() > 0
                && send.write_room(self.send_buffer, self.config.send_beyond_credit) > 0)
    }

    /// Streams we send on that can accept data now (room within the
    /// limits [`write`](Self::write) names; not finished, reset or
    /// stopped).
    pub fn writable(&self) -> impl Iterator<Item = StreamId> + '_ {
        let connection_room = self.connection_write_room();
        let (buffer_limit, beyond_credit) = (self.send_buffer, self.config.send_beyond_credit);
        self.streams.iter().filter_map(move |(&id, stream)| {
            stream
                .send
                .as_ref()
                .is_some_and(|send| {
                    send.buffer.is_writable()
                        && connection_room > 0
                        && send.write_room(buffer_limit, beyond_credit) > 0
                })
                .then_some(id)
        })
    }

    /// The next peer-initiated stream of `dir` not yet handed to the
    /// application, in ID order. Streams already retired are skipped.
    /// Whether the peer opened streams of `dir` not accepted yet (a hint:
    /// one may already be gone again, which `accept` skips).
    pub fn has_stream_to_accept(&self, dir: Dir) -> bool {
        self.next_accept[dir.index()] < self.next_remote[dir.index()]
    }

    pub fn accept(&mut self, dir: Dir) -> Option<StreamId> {
        let peer = peer_side(self.side);
        while self.next_accept[dir.index()] < self.next_remote[dir.index()] {
            let index = self.next_accept[dir.index()];
            self.next_accept[dir.index()] = index + 1;
            let id = stream_id(peer, dir, index)?;
            if self.streams.contains_key(&id) {
                return Some(id);
            }
        }
        None
    }

    /// Every byte written to the stream so far has been acknowledged (true
    /// for a stream with no sending half or one already retired).
    pub fn is_written_data_acked(&self, id: StreamId) -> bool {
        self.streams
            .get(&id)
            .and_then(|stream| stream.send.as_ref())
            .is_none_or(|send| send.buffer.is_written_data_acked())
    }

    /// Whether the sending half of stream `id` has nothing outstanding:
    /// all data and the FIN acknowledged, or our RESET_STREAM acknowledged.
    /// True for a stream already retired; false for one never opened or
    /// one we do not send on.
    pub fn is_finished_sending(&self, id: StreamId) -> bool {
        match self.streams.get(&id) {
            Some(stream) => stream
                .send
                .as_ref()
                .is_some_and(|send| send.buffer.is_done()),
            None => {
                let local = stream_initiator(id) == self.side;
                let dir = stream_dir(id);
                let opened = if local {
                    stream_index(id) < self.next_local[dir.index()]
                } else {
                    stream_index(id) < self.next_remote[dir.index()]
                };
                opened && (local || dir == Dir::Bi)
            }
        }
    }

    /// Counters for reports.
    pub fn stats(&self) -> StreamStats {
        StreamStats {
            connection_receive_window: self.connection_recv.window(),
            send_buffered: self.send_tally.held,
            ..self.stats.clone()
        }
    }

    /// Which end of the connection this is.
    pub fn side(&self) -> Side {
        self.side
    }

    /// Discarded bytes (stopped or reset streams) free connection window;
    /// no auto-tuning, since discarding says nothing about read speed.
    pub(super) fn on_connection_bytes_discarded(&mut self, freed: u64) {
        if freed == 0 {
            return;
        }
        self.connection_consumed += freed;
        if self.connection_recv.update_due(self.connection_consumed)
            && self
                .connection_recv
                .update_without_tuning(self.connection_consumed)
                .is_some()
        {
            self.pending.insert(PendingControl::MaxData);
        }
    }

    /// Removes stream `id` once both its halves are done; a retired peer
    /// stream gives the peer one more stream of its type (MAX_STREAMS).
    pub(super) fn retire_if_done(&mut self, id: StreamId) {
        let Some(stream) = self.streams.get(&id) else {
            return;
        };
        let send_done = stream
            .send
            .as_ref()
            .is_none_or(|send| send.buffer.is_done());
        let recv_done = stream
            .recv
            .as_ref()
            .is_none_or(|recv| recv.buffer.is_done());
        if !(send_done && recv_done) {
            return;
        }
        if let Some(stream) = self.streams.remove(&id) {
            // Nothing is held by then; keep the tallies right regardless.
            if let Some(send) = stream.send {
                self.send_tally
                    .replace(SendTally::of(&send.buffer), SendTally::default());
            }
            if let Some(recv) = stream.recv {
                self.out_of_order_segments = self
                    .out_of_order_segments
                    .saturating_sub(recv.buffer.out_of_order_segments());
            }
            if self.send_tally.held == 0 {
                self.spare_blocks.clear();
            }
        }
        if stream_initiator(id) != self.side {
            let dir = stream_dir(id);
            let max = &mut self.local_max_streams[dir.index()];
            if *max < MAX_STREAM_COUNT {
                *max += 1;
                self.pending.insert(PendingControl::MaxStreams(dir));
            }
        }
    }
}

/// The other end.
pub(super) fn peer_side(side: Side) -> Side {
    match side {
        Side::Client => Side::Server,
        Side::Server => Side::Client,
    }
}

/// The peer's initial credit for our sending half of stream `id`
/// (RFC 9000 §18.2: "local" and "remote" from the peer's point of view).
fn initial_send_credit(side: Side, peer: &PeerLimits, id: StreamId) -> u64 {
    let ours = stream_initiator(id) == side;
    match (stream_dir(id), ours) {
        (Dir::Bi, true) => peer.initial_max_stream_data_bidi_remote,
        (Dir::Bi, false) => peer.initial_max_stream_data_bidi_local,
        (Dir::Uni, _) => peer.initial_max_stream_data_uni,
    }
}
