//! What [`Streams`] asks the connection to send, and what happened to it:
//! control frames and stream chunks out, acknowledgements and losses in.
//!
//! Order of stream chunks: lost ranges first, then new data, round-robin
//! across streams one chunk per stream per turn (quinn and quiche both
//! rotate this way), so many streams share the path fairly.

use std::ops::Bound::{Excluded, Included, Unbounded};

use super::control::{ControlFrame, ControlReadiness, PendingControl, StreamChunk};
use super::send::SendClosure;
use super::streams::{SendTally, StreamState, Streams};
use super::StreamId;
use crate::wire::varint::varint_len;

impl Streams {
    /// Pops the next control frame to send, if any.
    pub fn poll_control(&mut self) -> Option<ControlFrame> {
        let mut stale = Vec::new();
        let mut ready = None;
        for &pending in &self.pending {
            match self.control_readiness(pending) {
                ControlReadiness::Ready(frame) => {
                    ready = Some((pending, frame));
                    break;
                }
                ControlReadiness::Stale => stale.push(pending),
                ControlReadiness::Wait => {}
            }
        }
        for pending in stale {
            self.pending.remove(&pending);
        }
        let (pending, frame) = ready?;
        self.pending.remove(&pending);
        Some(frame)
    }

    /// Whether [`poll_control`](Self::poll_control) would return a frame.
    pub fn has_control(&self) -> bool {
        self.pending
            .iter()
            .any(|&pending| matches!(self.control_readiness(pending), ControlReadiness::Ready(_)))
    }

    /// The frame for a pending entry, built from the current state.
    fn control_readiness(&self, pending: PendingControl) -> ControlReadiness {
        use ControlReadiness::{Ready, Stale, Wait};
        let known = |id: StreamId| self.peer_stream_window.knows(id);
        match pending {
            PendingControl::ResetStream(id) => {
                match self.streams.get(&id).and_then(|s| s.send.as_ref()) {
                    Some(send) => match send.buffer.closure() {
                        SendClosure::Reset {
                            error_code,
                            final_size,
                            acked: false,
                        } if known(id) => Ready(ControlFrame::ResetStream {
                            id,
                            error_code,
                            final_size,
                        }),
                        SendClosure::Reset { acked: false, .. } => Wait,
                        _ => Stale,
                    },
                    None => Stale,
                }
            }
            PendingControl::StopSending(id) => {
                match self.streams.get(&id).and_then(|s| s.recv.as_ref()) {
                    Some(recv) if recv.buffer.final_size().is_none() => {
                        match recv.stop_error_code {
                            Some(error_code) if known(id) => {
                                Ready(ControlFrame::StopSending { id, error_code })
                            }
                            Some(_) => Wait,
                            None => Stale,
                        }
                    }
                    _ => Stale,
                }
            }
            PendingControl::MaxData => Ready(ControlFrame::MaxData(self.connection_recv.limit())),
            PendingControl::MaxStreamData(id) => {
                match self.streams.get(&id).and_then(|s| s.recv.as_ref()) {
                    Some(recv) if recv.buffer.wants_credit() => {
                        if known(id) {
                            Ready(ControlFrame::MaxStreamData {
                                id,
                                max: recv.window.limit(),
                            })
                        } else {
                            Wait
                        }
                    }
                    _ => Stale,
                }
            }
            PendingControl::MaxStreams(dir) => Ready(ControlFrame::MaxStreams {
                dir,
                max: self.local_max_streams[dir.index()],
            }),
            PendingControl::DataBlocked(limit) => {
                if self.connection_send.limit() == limit && self.connection_send.available() == 0 {
                    Ready(ControlFrame::DataBlocked(limit))
                } else {
                    Stale
                }
            }
            PendingControl::StreamDataBlocked(id, limit) => {
                match self.streams.get(&id).and_then(|s| s.send.as_ref()) {
                    Some(send)
                        if known(id)
                            && send.credit.limit() == limit
                            && send.credit.available() == 0
                            && send.buffer.closure() == SendClosure::Open =>
                    {
                        Ready(ControlFrame::StreamDataBlocked { id, limit })
                    }
                    _ => Stale,
                }
            }
            PendingControl::StreamsBlocked(dir, limit) => {
                let window = &self.peer_stream_window;
                if window.max_streams[dir.index()] == limit && self.next_local[dir.index()] >= limit
                {
                    Ready(ControlFrame::StreamsBlocked { dir, limit })
                } else {
                    Stale
                }
            }
        }
    }

    /// The next chunk to put in a packet, with at most `max_len` data bytes:
    /// lost ranges first, then new data within the peer's stream and
    /// connection credit, round-robin across streams. A FIN-only chunk has
    /// `len` 0. The range is marked in flight; fetch its bytes with
    /// [`chunk_data`](Self::chunk_data) before feeding back any ack or loss.
    /// When credit runs out, DATA_BLOCKED / STREAM_DATA_BLOCKED is queued
    /// once per limit value. Nothing before the peer's limits are known.
    pub fn poll_stream_chunk(&mut self, max_len: usize) -> Option<StreamChunk> {
        if !self.peer_stream_window.limits_known {
            return None;
        }
        self.report_blocked_streams();
        let connection_credit = self.connection_send.available();
        let window = self.peer_stream_window;
        let resend = self
            .rotation()
            .find(|(&id, stream)| {
                window.knows(id)
                    && self.may_send_now(id)
                    && stream
                        .send
                        .as_ref()
                        .is_some_and(|send| send.buffer.retransmission_fits(max_len))
            })
            .map(|(&id, _)| (id, true));
        let chosen = resend.or_else(|| {
            self.rotation()
                .find(|(&id, stream)| {
                    window.knows(id)
                        && self.may_send_now(id)
                        && stream.send.as_ref().is_some_and(|send| {
                            let credit = send
                                .credit
                                .available()
                                .min(connection_credit)
                                .min(max_len as u64);
                            send.buffer.has_new_data(credit)
                        })
                })
                .map(|(&id, _)| (id, false))
        });
        let (id, is_resend) = chosen?;
        let send = self.streams.get_mut(&id)?.send.as_mut()?;
        let plan = if is_resend {
            let plan = send.buffer.next_retransmission(max_len)?;
            self.stats.bytes_retransmitted += plan.len as u64;
            plan
        } else {
            let credit = send.credit.available().min(connection_credit);
            let plan = send.buffer.next_new_data(max_len, credit)?;
            self.send_tally.unsent = self.send_tally.unsent.saturating_sub(plan.len as u64);
            send.credit.consume(plan.len as u64);
            self.connection_send.consume(plan.len as u64);
            self.stats.bytes_sent += plan.len as u64;
            plan
        };
        self.last_served = Some(id);
        Some(StreamChunk {
            id,
            offset: plan.offset,
            len: plan.len,
            fin: plan.fin,
        })
    }

    /// The most bytes the head of the next STREAM frame (type, stream ID,
    /// offset, length) can take when it carries at most `room` bytes: the
    /// highest stream that exists, an offset no higher than the peer's
    /// connection credit (no stream's offset can pass it), a length of
    /// `room`. Sizing chunks by the real head rather than the largest
    /// possible one (19 bytes) leaves no unused tail in a full packet:
    /// 11 bytes of every 1350-byte datagram went unused before (issue 37).
    pub fn stream_frame_overhead(&self, room: usize) -> usize {
        let highest_id = self.streams.keys().next_back().copied().unwrap_or(0);
        1 + varint_len(highest_id)
            + varint_len(self.connection_send.limit())
            + varint_len(room as u64)
    }

    /// Streams in round-robin order, starting after the last one served.
    fn rotation(&self) -> impl Iterator<Item = (&StreamId, &StreamState)> + '_ {
        let last = self.last_served.unwrap_or(StreamId::MAX);
        self.streams
            .range((Excluded(last), Unbounded))
            .chain(self.streams.range((Unbounded, Included(last))))
    }

    /// Queues DATA_BLOCKED / STREAM_DATA_BLOCKED for credit that has run
    /// out while data waits, once per limit value (RFC 9000 §4.1).
    fn report_blocked_streams(&mut self) {
        let window = self.peer_stream_window;
        let mut connection_blocked = false;
        for (&id, stream) in &mut self.streams {
            let Some(send) = stream.send.as_mut() else {
                continue;
            };
            if !window.knows(id) || send.buffer.unsent_bytes() == 0 {
                continue;
            }
            if self.connection_send.available() == 0 {
                connection_blocked = true;
            }
            if send.buffer.is_blocked_by(send.credit.available()) {
                if let Some(limit) = send.credit.take_blocked_report() {
                    self.pending
                        .insert(PendingControl::StreamDataBlocked(id, limit));
                    self.stats.stream_data_blocked += 1;
                }
            }
        }
        if connection_blocked {
            if let Some(limit) = self.connection_send.take_blocked_report() {
                self.pending.insert(PendingControl::DataBlocked(limit));
                self.stats.data_blocked += 1;
            }
        }
    }

    /// Appends the bytes of `chunk` to `out`. Returns `false`, appending
    /// nothing, when they are no longer held (acknowledged or reset since
    /// the chunk was polled): the frame should then be dropped.
    pub fn chunk_data(&self, chunk: &StreamChunk, out: &mut Vec<u8>) -> bool {
        let Some(send) = self.streams.get(&chunk.id).and_then(|s| s.send.as_ref()) else {
            return false;
        };
        let end = chunk.offset.saturating_add(chunk.len as u64);
        send.buffer.copy_range(chunk.offset..end, out)
    }

    /// Whether stream bytes were sent and are not yet acknowledged.
    pub fn has_unacked_data(&self) -> bool {
        self.send_tally.held > self.send_tally.unsent
    }

    /// Whether written bytes wait that were never sent.
    pub fn has_unsent_data(&self) -> bool {
        self.send_tally.unsent > 0
    }

    /// Whether written bytes wait that the peer's credit (the stream's or
    /// the connection's) holds back.
    pub fn is_credit_blocked(&self) -> bool {
        let connection_credit = self.connection_send.available();
        self.streams.values().any(|stream| {
            stream.send.as_ref().is_some_and(|send| {
                send.buffer
                    .is_blocked_by(send.credit.available().min(connection_credit))
            })
        })
    }

    /// Whether [`poll_stream_chunk`](Self::poll_stream_chunk) would return
    /// a chunk now (given room for at least one byte).
    pub fn has_stream_data(&self) -> bool {
        if !self.peer_stream_window.limits_known {
            return false;
        }
        let connection_credit = self.connection_send.available();
        self.streams.iter().any(|(&id, stream)| {
            self.peer_stream_window.knows(id)
                && self.may_send_now(id)
                && stream.send.as_ref().is_some_and(|send| {
                    send.buffer.has_retransmission()
                        || send
                            .buffer
                            .has_new_data(send.credit.available().min(connection_credit))
                })
        })
    }

    /// The peer acknowledged `chunk`: its bytes leave the send buffer. A
    /// stream whose halves are both done is retired.
    pub fn on_chunk_acked(&mut self, chunk: &StreamChunk) {
        let Some(send) = self
            .streams
            .get_mut(&chunk.id)
            .and_then(|s| s.send.as_mut())
        else {
            return;
        };
        let end = chunk.offset.saturating_add(chunk.len as u64);
        let before = SendTally::of(&send.buffer);
        let spare = self.writer_waiting.then_some(&mut self.spare_blocks);
        send.buffer.on_acked(chunk.offset..end, chunk.fin, spare);
        self.send_tally.replace(before, SendTally::of(&send.buffer));
        if self.send_tally.held == 0 {
            self.writer_waiting = false;
        }
        self.trim_spare();
        self.retire_if_done(chunk.id);
    }

    /// `chunk` was lost: its bytes not acknowledged by another copy are
    /// queued to be sent again, ahead of new data. Nothing is resent on a
    /// reset stream.
    pub fn on_chunk_lost(&mut self, chunk: &StreamChunk) {
        let Some(send) = self
            .streams
            .get_mut(&chunk.id)
            .and_then(|s| s.send.as_mut())
        else {
            return;
        };
        let end = chunk.offset.saturating_add(chunk.len as u64);
        send.buffer.on_lost(chunk.offset..end, chunk.fin);
    }

    /// The peer acknowledged `frame`. An acknowledged RESET_STREAM closes
    /// our sending half.
    pub fn on_control_acked(&mut self, frame: &ControlFrame) {
        if let ControlFrame::ResetStream { id, .. } = *frame {
            if let Some(send) = self.streams.get_mut(&id).and_then(|s| s.send.as_mut()) {
                send.buffer.on_reset_acked();
                self.retire_if_done(id);
            }
        }
    }

    /// `frame` was lost: queue it again if it still matters. Credit frames
    /// are resent only if their value is still the current one (a newer
    /// value supersedes them); RESET_STREAM and STOP_SENDING until acked or
    /// moot; BLOCKED frames only while still blocked at that limit.
    pub fn on_control_lost(&mut self, frame: &ControlFrame) {
        let pending = match *frame {
            ControlFrame::MaxData(max) => {
                (max == self.connection_recv.limit()).then_some(PendingControl::MaxData)
            }
            ControlFrame::MaxStreamData { id, max } => self
                .streams
                .get(&id)
                .and_then(|s| s.recv.as_ref())
                .is_some_and(|recv| recv.window.limit() == max)
                .then_some(PendingControl::MaxStreamData(id)),
            ControlFrame::MaxStreams { dir, max } => (max == self.local_max_streams[dir.index()])
                .then_some(PendingControl::MaxStreams(dir)),
            ControlFrame::ResetStream { id, .. } => self
                .streams
                .get(&id)
                .and_then(|s| s.send.as_ref())
                .is_some_and(|send| send.buffer.reset_unacked())
                .then_some(PendingControl::ResetStream(id)),
            ControlFrame::StopSending { id, .. } => Some(PendingControl::StopSending(id)),
            ControlFrame::DataBlocked(limit) => Some(PendingControl::DataBlocked(limit)),
            ControlFrame::StreamDataBlocked { id, limit } => {
                Some(PendingControl::StreamDataBlocked(id, limit))
            }
            ControlFrame::StreamsBlocked { dir, limit } => {
                Some(PendingControl::StreamsBlocked(dir, limit))
            }
        };
        // Entries that are no longer needed are dropped when polled.
        if let Some(pending) = pending {
            self.pending.insert(pending);
        }
    }
}
