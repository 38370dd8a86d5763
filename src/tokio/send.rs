//! The sending half of a stream, as `tokio::io::AsyncWrite`.

use std::future::poll_fn;
use std::io::{self, IoSliceMut};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::connection::ConnInner;
use super::error::{ConnectionError, WriteError};
use super::shared::Wait;
use crate::stream::{StreamError, StreamId};
use crate::Error;

/// Where the sending half stands, as far as this handle knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SendState {
    Open,
    /// FIN queued by `finish`.
    Finished,
    /// RESET_STREAM queued by `reset`.
    Reset,
}

/// The sending half of a stream. Writes wait while the stream's send
/// buffer is full (the peer's flow-control credit and the congestion
/// window drain it), so a fast writer cannot run ahead of the path.
///
/// Dropping it finishes the stream (as [`finish`](Self::finish) does)
/// unless it was finished or reset; call [`reset`](Self::reset) to abandon
/// data instead.
#[derive(Debug)]
pub struct SendStream {
    conn: Arc<ConnInner>,
    id: StreamId,
    state: SendState,
}

impl SendStream {
    pub(super) fn new(conn: Arc<ConnInner>, id: StreamId) -> Self {
        // Watch for the peer's STOP_SENDING while this handle lives.
        let _ = conn.with(|_, held| held.send_streams.insert(id, None));
        Self {
            conn,
            id,
            state: SendState::Open,
        }
    }

    /// The stream ID (RFC 9000 §2.1).
    pub fn id(&self) -> StreamId {
        self.id
    }

    /// The error for a stream operation the connection refused.
    fn refused(
        &self,
        connection: &crate::Connection,
        stop: Option<u64>,
        error: Error,
    ) -> WriteError {
        let id = self.id;
        match (error, stop) {
            (Error::Stream(StreamError::Stopped { error_code, .. }), _) | (_, Some(error_code)) => {
                WriteError::Stopped { id, error_code }
            }
            (Error::Closed, None) => self.conn.closed_error(connection).into(),
            // Finished, or forgotten once its reset was acknowledged.
            (_, None) => WriteError::ClosedStream { id },
        }
    }

    /// Writes some of `data`, waiting until the stream takes at least one
    /// byte; returns how many it took. Cancelling the wait loses nothing:
    /// bytes are taken only by the poll that returns their count.
    pub fn poll_write_data(
        &mut self,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<Result<usize, WriteError>> {
        let id = self.id;
        self.poll_send(cx, data.is_empty(), &mut |connection| {
            connection.stream_send(id, data, false)
        })
    }

    /// Writes up to `max` bytes that `fill` places straight into the
    /// stream's send buffer, waiting like
    /// [`poll_write_data`](Self::poll_write_data) until there is room;
    /// returns how many `fill` wrote. A file read this way lands in the
    /// send buffer without a copy through a buffer of the caller's.
    ///
    /// `fill` is called once per ready poll, with the connection locked:
    /// it gets the room as slices in stream order and returns how many
    /// bytes it wrote into them, in order (as `readv` fills its buffers).
    /// Keep it short and never let it block: a read of what the page cache
    /// holds (`preadv2` with `RWF_NOWAIT`), not a read that may wait for a
    /// disk or a peer. A `fill` that wrote nothing returns 0 and the write
    /// returns `Ok(0)`.
    pub fn poll_write_with(
        &mut self,
        cx: &mut Context<'_>,
        max: usize,
        fill: &mut impl FnMut(&mut [IoSliceMut<'_>]) -> usize,
    ) -> Poll<Result<usize, WriteError>> {
        let id = self.id;
        self.poll_send(cx, max == 0, &mut |connection| {
            connection.stream_send_with(id, max, |slices| fill(slices))
        })
    }

    /// One write on an open stream, pending while it has no room: `send`
    /// is the connection call; `nothing` (an empty write) returns 0 at once.
    fn poll_send(
        &mut self,
        cx: &mut Context<'_>,
        nothing: bool,
        send: &mut dyn FnMut(&mut crate::Connection) -> Result<usize, Error>,
    ) -> Poll<Result<usize, WriteError>> {
        if self.state != SendState::Open {
            return Poll::Ready(Err(WriteError::ClosedStream { id: self.id }));
        }
        if nothing {
            return Poll::Ready(Ok(0));
        }
        let id = self.id;
        self.conn.poll_with_wake(
            cx,
            Wait::Write(id),
            |_| true,
            |connection, held| match send(connection) {
                Ok(written) => Poll::Ready(Ok(written)),
                Err(Error::Stream(StreamError::Blocked)) => Poll::Pending,
                Err(error) => {
                    let stop = held.send_streams.get(&id).copied().flatten();
                    Poll::Ready(Err(self.refused(connection, stop, error)))
                }
            },
        )
    }

    /// Writes up to `max` bytes that `fill` places straight into the send
    /// buffer (see [`poll_write_with`](Self::poll_write_with)).
    pub async fn write_with(
        &mut self,
        max: usize,
        mut fill: impl FnMut(&mut [IoSliceMut<'_>]) -> usize,
    ) -> Result<usize, WriteError> {
        poll_fn(|cx| self.poll_write_with(cx, max, &mut fill)).await
    }

    /// Writes some of `data` (see [`poll_write_data`](Self::poll_write_data)).
    pub async fn write(&mut self, data: &[u8]) -> Result<usize, WriteError> {
        poll_fn(|cx| self.poll_write_data(cx, data)).await
    }

    /// Writes all of `data`, waiting for room as needed. If the future is
    /// dropped early, a prefix of `data` may have been written.
    pub async fn write_all(&mut self, mut data: &[u8]) -> Result<(), WriteError> {
        while !data.is_empty() {
            let written = self.write(data).await?;
            data = data.get(written..).unwrap_or_default();
        }
        Ok(())
    }

    /// Ends the stream: the peer reads everything written so far, then the
    /// end. Does not wait (see [`stopped`](Self::stopped) for that).
    pub fn finish(&mut self) -> Result<(), WriteError> {
        if self.state != SendState::Open {
            return Err(WriteError::ClosedStream { id: self.id });
        }
        let id = self.id;
        self.end(SendState::Finished, |connection| {
            connection.stream_send(id, &[], true).map(drop)
        })
    }

    /// Abandons the stream with `error_code` (RESET_STREAM): data not yet
    /// delivered is dropped, and the peer's reads fail with the code.
    pub fn reset(&mut self, error_code: u64) -> Result<(), WriteError> {
        if self.state == SendState::Reset {
            return Err(WriteError::ClosedStream { id: self.id });
        }
        let id = self.id;
        self.end(SendState::Reset, |connection| {
            connection.stream_reset(id, error_code)
        })
    }

    /// Ends the sending half with `ending` (a FIN or a reset) and records
    /// it as `state`.
    fn end(
        &mut self,
        state: SendState,
        ending: impl FnOnce(&mut crate::Connection) -> Result<(), Error>,
    ) -> Result<(), WriteError> {
        let id = self.id;
        self.conn.with(|connection, held| {
            ending(connection).map_err(|error| {
                let stop = held.send_streams.get(&id).copied().flatten();
                self.refused(connection, stop, error)
            })
        })??;
        self.state = state;
        Ok(())
    }

    /// Waits until the peer has acknowledged every byte written so far,
    /// without ending the stream: a sender that wants its final counters
    /// before it finishes. Fails if the peer stopped the stream or the
    /// connection closed.
    pub async fn acknowledged(&self) -> Result<(), WriteError> {
        let id = self.id;
        poll_fn(|cx| {
            self.conn.poll_with(cx, |connection, held| {
                if let Some(Some(error_code)) = held.send_streams.get(&id) {
                    return Poll::Ready(Err(WriteError::Stopped {
                        id,
                        error_code: *error_code,
                    }));
                }
                if connection.stream_data_acked(id) {
                    Poll::Ready(Ok(()))
                } else if connection.is_closing() {
                    Poll::Ready(Err(self.conn.closed_error(connection).into()))
                } else {
                    Poll::Pending
                }
            })
        })
        .await
    }

    /// Waits until the stream needs nothing more from us: `Some(code)` if
    /// the peer asked us to stop sending (STOP_SENDING with `code`), or
    /// `None` once the stream was finished (or reset) and the peer
    /// acknowledged all of it.
    pub async fn stopped(&self) -> Result<Option<u64>, ConnectionError> {
        let id = self.id;
        poll_fn(|cx| {
            self.conn.poll_with(cx, |connection, held| {
                if let Some(Some(code)) = held.send_streams.get(&id) {
                    return Poll::Ready(Ok(Some(*code)));
                }
                if let Err(Error::Stream(StreamError::Stopped { error_code, .. })) =
                    connection.stream_send(id, &[], false)
                {
                    return Poll::Ready(Ok(Some(error_code)));
                }
                if connection.stream_finished_sending(id) {
                    Poll::Ready(Ok(None))
                } else if connection.is_closing() {
                    Poll::Ready(Err(self.conn.closed_error(connection)))
                } else {
                    Poll::Pending
                }
            })
        })
        .await
    }
}

impl tokio::io::AsyncWrite for SendStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut()
            .poll_write_data(cx, data)
            .map_err(io::Error::from)
    }

    /// Ready at once: written data is already with the connection.
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    /// Finishes the stream (once; later calls change nothing) without
    /// waiting for the peer's acknowledgement.
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.state == SendState::Finished {
            return Poll::Ready(Ok(()));
        }
        Poll::Ready(this.finish().map_err(io::Error::from))
    }
}

impl Drop for SendStream {
    fn drop(&mut self) {
        let id = self.id;
        let finish = self.state == SendState::Open;
        let _ = self.conn.with(|connection, held| {
            held.send_streams.remove(&id);
            held.forget_stream(Wait::Write(id));
            if finish {
                let _ = connection.stream_send(id, &[], true);
            }
        });
    }
}
