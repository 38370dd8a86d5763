//! Frames received from the peer, applied to [`Streams`]: STREAM,
//! RESET_STREAM, STOP_SENDING, MAX_DATA, MAX_STREAM_DATA, MAX_STREAMS and
//! the three BLOCKED hints. Every check happens before any state changes
//! (but the reassembly limit, see `on_stream_frame`); an `Err` is a
//! protocol violation that closes the connection.

use std::time::{Duration, Instant};

use super::control::PendingControl;
use super::error::TransportError;
use super::id::{
    stream_dir, stream_id, stream_index, stream_initiator, Dir, StreamId, MAX_STREAM_COUNT,
    MAX_STREAM_OFFSET,
};
use super::streams::{peer_side, SendTally, Streams};

/// Which half of a stream a frame is about, from our point of view.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Half {
    /// Frames about data we receive: STREAM, RESET_STREAM,
    /// STREAM_DATA_BLOCKED.
    Receiving,
    /// Frames about data we send: STOP_SENDING, MAX_STREAM_DATA.
    Sending,
}

impl Streams {
    /// Checks that stream `id` has the `half` a frame is about and exists
    /// or may be opened by the peer; opens peer streams up to `id`
    /// (RFC 9000 §3.2: opening stream n opens all lower ones of its type).
    /// `Ok(false)`: the stream was already retired; ignore the frame.
    fn admit_frame(&mut self, id: StreamId, half: Half) -> Result<bool, TransportError> {
        let local = stream_initiator(id) == self.side;
        let dir = stream_dir(id);
        if dir == Dir::Uni {
            match (half, local) {
                (Half::Receiving, true) => {
                    return Err(TransportError::stream_state(
                        "receive-side frame for our own unidirectional stream",
                    ))
                }
                (Half::Sending, false) => {
                    return Err(TransportError::stream_state(
                        "send-side frame for the peer's unidirectional stream",
                    ))
                }
                _ => {}
            }
        }
        let index = stream_index(id);
        if local {
            if index >= self.next_local[dir.index()] {
                return Err(TransportError::stream_state(
                    "frame for a stream of ours not yet opened",
                ));
            }
        } else {
            if index >= self.local_max_streams[dir.index()] {
                return Err(TransportError::stream_limit(
                    "peer opened a stream beyond our MAX_STREAMS",
                ));
            }
            let peer = peer_side(self.side);
            while self.next_remote[dir.index()] <= index {
                let next = self.next_remote[dir.index()];
                let Some(opened) = stream_id(peer, dir, next) else {
                    break;
                };
                let state = self.new_stream_state(opened);
                self.streams.insert(opened, state);
                self.next_remote[dir.index()] = next + 1;
                self.stats.streams_opened_remote += 1;
            }
        }
        Ok(self.streams.contains_key(&id))
    }

    /// A STREAM frame: `data` at `offset` on stream `id`, ending the stream
    /// if `fin`. Errors: data beyond our stream or connection limit
    /// (FLOW_CONTROL_ERROR), a final-size change or data past it
    /// (FINAL_SIZE_ERROR), our own unidirectional or an unopened stream of
    /// ours (STREAM_STATE_ERROR), a peer stream beyond our MAX_STREAMS
    /// (STREAM_LIMIT_ERROR).
    pub fn on_stream_frame(
        &mut self,
        id: StreamId,
        offset: u64,
        data: &[u8],
        fin: bool,
    ) -> Result<(), TransportError> {
        let end = offset
            .checked_add(data.len() as u64)
            .filter(|&end| end <= MAX_STREAM_OFFSET)
            .ok_or(TransportError::flow_control(
                "STREAM data ends beyond 2^62 - 1",
            ))?;
        if !self.admit_frame(id, Half::Receiving)? {
            return Ok(());
        }
        let Some(recv) = self.streams.get_mut(&id).and_then(|s| s.recv.as_mut()) else {
            return Ok(());
        };
        recv.buffer.check_frame(end, fin)?;
        if end > recv.window.limit() {
            return Err(TransportError::flow_control(
                "STREAM data beyond the stream's flow-control limit",
            ));
        }
        let growth = end.saturating_sub(recv.buffer.highest_received());
        if self.connection_received.saturating_add(growth) > self.connection_recv.limit() {
            return Err(TransportError::flow_control(
                "STREAM data beyond the connection's flow-control limit",
            ));
        }
        let segments_before = recv.buffer.out_of_order_segments();
        let received = recv.buffer.receive(offset, data, fin);
        let segments_after = recv.buffer.out_of_order_segments();
        self.out_of_order_segments =
            self.out_of_order_segments.saturating_sub(segments_before) + segments_after;
        // Checked after the frame is stored (how many pieces it leaves
        // depends on what is held), which is moot: the error closes the
        // connection.
        if self.out_of_order_segments > self.config.max_out_of_order_segments {
            return Err(TransportError::protocol_violation(
                "STREAM data fragmented beyond the reassembly limit",
            ));
        }
        self.connection_received += received.highest_growth;
        self.stats.bytes_received += received.new_bytes;
        self.on_connection_bytes_discarded(received.consumed_growth);
        self.retire_if_done(id);
        Ok(())
    }

    /// A RESET_STREAM frame: the peer abandoned stream `id` at
    /// `final_size`. Unread data is dropped; a read reports the reset.
    pub fn on_reset_stream(
        &mut self,
        id: StreamId,
        error_code: u64,
        final_size: u64,
    ) -> Result<(), TransportError> {
        if final_size > MAX_STREAM_OFFSET {
            return Err(TransportError::flow_control(
                "RESET_STREAM final size beyond 2^62 - 1",
            ));
        }
        if !self.admit_frame(id, Half::Receiving)? {
            return Ok(());
        }
        let Some(recv) = self.streams.get_mut(&id).and_then(|s| s.recv.as_mut()) else {
            return Ok(());
        };
        recv.buffer.check_reset(final_size)?;
        if final_size > recv.window.limit() {
            return Err(TransportError::flow_control(
                "RESET_STREAM final size beyond the stream's flow-control limit",
            ));
        }
        let growth = final_size.saturating_sub(recv.buffer.highest_received());
        if self.connection_received.saturating_add(growth) > self.connection_recv.limit() {
            return Err(TransportError::flow_control(
                "RESET_STREAM final size beyond the connection's flow-control limit",
            ));
        }
        self.out_of_order_segments = self
            .out_of_order_segments
            .saturating_sub(recv.buffer.out_of_order_segments());
        let received = recv.buffer.on_reset(error_code, final_size);
        self.connection_received += received.highest_growth;
        self.on_connection_bytes_discarded(received.consumed_growth);
        self.retire_if_done(id);
        Ok(())
    }

    /// A STOP_SENDING frame: the peer no longer wants stream `id`. We
    /// answer with RESET_STREAM echoing `error_code` (RFC 9000 §3.5), and
    /// the application's writes fail with `Stopped`.
    pub fn on_stop_sending(&mut self, id: StreamId, error_code: u64) -> Result<(), TransportError> {
        if !self.admit_frame(id, Half::Sending)? {
            return Ok(());
        }
        let Some(send) = self.streams.get_mut(&id).and_then(|s| s.send.as_mut()) else {
            return Ok(());
        };
        let before = SendTally::of(&send.buffer);
        send.buffer.set_stopped_by_peer(error_code);
        if send.buffer.reset(error_code).is_some() {
            self.pending.insert(PendingControl::ResetStream(id));
        }
        self.send_tally.replace(before, SendTally::of(&send.buffer));
        Ok(())
    }

    /// A MAX_DATA frame: the peer's connection limit for our data. Smaller
    /// values than we know are ignored (RFC 9000 §19.9).
    pub fn on_max_data(&mut self, max: u64) {
        self.connection_send.raise(max);
    }

    /// A MAX_STREAM_DATA frame: the peer's limit for our data on `id`.
    pub fn on_max_stream_data(&mut self, id: StreamId, max: u64) -> Result<(), TransportError> {
        if !self.admit_frame(id, Half::Sending)? {
            return Ok(());
        }
        if let Some(send) = self.streams.get_mut(&id).and_then(|s| s.send.as_mut()) {
            send.credit.raise(max);
        }
        Ok(())
    }

    /// A MAX_STREAMS frame: how many streams of `dir` we may open in total.
    /// Above 2^60 is FRAME_ENCODING_ERROR (RFC 9000 §19.11).
    pub fn on_max_streams(&mut self, dir: Dir, max: u64) -> Result<(), TransportError> {
        if max > MAX_STREAM_COUNT {
            return Err(TransportError::frame_encoding("MAX_STREAMS above 2^60"));
        }
        let limit = &mut self.peer_stream_window.max_streams[dir.index()];
        *limit = (*limit).max(max);
        Ok(())
    }

    /// A DATA_BLOCKED frame: the peer says our connection limit stops it at
    /// `limit`. If we already granted more (the MAX_DATA was lost or is
    /// late), send the current limit again. If it is our current limit and
    /// no stream has bytes the application has yet to read, the window, not
    /// the reader, held the sender: grow it now (see
    /// `ReceiveWindow::grow_for_blocked_sender`).
    pub fn on_data_blocked(&mut self, limit: u64) {
        let at_our_limit = self.connection_recv.limit() == limit;
        let reader_waits = || {
            !self
                .streams
                .values()
                .any(|s| s.recv.as_ref().is_some_and(|r| r.buffer.is_readable()))
        };
        if at_our_limit && reader_waits() {
            self.connection_recv
                .grow_for_blocked_sender(self.connection_consumed);
        }
        if self.connection_recv.limit() > limit {
            self.pending.insert(PendingControl::MaxData);
        }
    }

    /// A STREAM_DATA_BLOCKED frame for `id` at `limit`, arriving at `now`
    /// on a path of smoothed RTT `srtt`: as
    /// [`on_data_blocked`](Self::on_data_blocked), for one stream, and
    /// also when the report names a limit we raised less than a round trip
    /// before it came (`ReceiveWindow::update_was_late`). A stream window
    /// grown here keeps the connection window ahead of it, as reads do.
    pub fn on_stream_data_blocked(
        &mut self,
        id: StreamId,
        limit: u64,
        now: Instant,
        srtt: Duration,
    ) -> Result<(), TransportError> {
        if !self.admit_frame(id, Half::Receiving)? {
            return Ok(());
        }
        let Some(recv) = self.streams.get_mut(&id).and_then(|s| s.recv.as_mut()) else {
            return Ok(());
        };
        if !recv.buffer.wants_credit() {
            return Ok(());
        }
        // Blocked at our limit while the reader keeps up (under a quarter
        // of the window waits unread: a reader on its own thread always
        // has a little), or at the last limit while the update that
        // raised it was in flight: the window held it. A slow reader
        // leaves half the window or more unread when its sender blocks.
        let reader_keeps_up = recv.buffer.unread_in_order() < recv.window.window() / 4;
        let window_held_it = (recv.window.limit() == limit && reader_keeps_up)
            || recv.window.update_was_late(limit, now, srtt);
        if window_held_it
            && recv
                .window
                .grow_for_blocked_sender(recv.buffer.consumed())
                .is_some()
            && self.connection_recv.stay_ahead_of(recv.window.window())
            && self
                .connection_recv
                .update_without_tuning(self.connection_consumed)
                .is_some()
        {
            self.pending.insert(PendingControl::MaxData);
        }
        if recv.window.limit() > limit {
            self.pending.insert(PendingControl::MaxStreamData(id));
        }
        Ok(())
    }

    /// A STREAMS_BLOCKED frame for `dir` at `limit`: as
    /// [`on_data_blocked`](Self::on_data_blocked), for stream counts.
    /// Above 2^60 is FRAME_ENCODING_ERROR (RFC 9000 §19.14).
    pub fn on_streams_blocked(&mut self, dir: Dir, limit: u64) -> Result<(), TransportError> {
        if limit > MAX_STREAM_COUNT {
            return Err(TransportError::frame_encoding("STREAMS_BLOCKED above 2^60"));
        }
        if self.local_max_streams[dir.index()] > limit {
            self.pending.insert(PendingControl::MaxStreams(dir));
        }
        Ok(())
    }
}
