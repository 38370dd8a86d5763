//! The receiving half of a stream, as `tokio::io::AsyncRead`.

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::connection::ConnInner;
use super::error::{ReadError, ReadToEndError};
use super::shared::Wait;
use crate::stream::{StreamError, StreamId};
use crate::Error;

/// Where the receiving half stands, as far as this handle knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RecvState {
    Open,
    /// Everything was read, up to the peer's end of the stream.
    Finished,
    /// The peer reset the stream with this code.
    Reset(u64),
    /// We asked the peer to stop sending.
    Stopped,
}

/// The receiving half of a stream. Reading frees the peer's flow-control
/// credit, so a slow reader holds a fast sender back rather than
/// buffering without bound.
///
/// Dropping it before the end of the stream asks the peer to stop sending
/// (STOP_SENDING with code 0), as [`stop`](Self::stop) does.
#[derive(Debug)]
pub struct RecvStream {
    conn: Arc<ConnInner>,
    id: StreamId,
    state: RecvState,
}

impl RecvStream {
    pub(super) fn new(conn: Arc<ConnInner>, id: StreamId) -> Self {
        Self {
            conn,
            id,
            state: RecvState::Open,
        }
    }

    /// The stream ID (RFC 9000 §2.1).
    pub fn id(&self) -> StreamId {
        self.id
    }

    /// Reads into `buf`, waiting until data or the end of the stream is
    /// there: the bytes read, 0 at the end (for a non-empty `buf`).
    /// Cancelling the wait loses nothing: bytes leave the stream only in
    /// the poll that returns them.
    pub fn poll_read_data(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<Result<usize, ReadError>> {
        let id = self.id;
        match self.state {
            RecvState::Open => {}
            RecvState::Finished => return Poll::Ready(Ok(0)),
            RecvState::Reset(error_code) => {
                return Poll::Ready(Err(ReadError::Reset { id, error_code }))
            }
            RecvState::Stopped => return Poll::Ready(Err(ReadError::ClosedStream { id })),
        }
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let conn = &self.conn;
        let state = &mut self.state;
        // A read frees credit, but the peer hears of it only once half a
        // window is read: the driver is woken for that, not for every read.
        let wake = |connection: &crate::Connection| connection.has_pending_stream_frames();
        conn.poll_with_wake(cx, Wait::Read(id), wake, |connection, _| {
            match connection.stream_recv(id, buf) {
                Ok((read, at_end)) => {
                    if at_end {
                        *state = RecvState::Finished;
                    }
                    Poll::Ready(Ok(read))
                }
                Err(Error::Stream(StreamError::Blocked)) if connection.is_closing() => {
                    Poll::Ready(Err(conn.closed_error(connection).into()))
                }
                Err(Error::Stream(StreamError::Blocked)) => Poll::Pending,
                Err(Error::Stream(StreamError::Reset { error_code, .. })) => {
                    *state = RecvState::Reset(error_code);
                    Poll::Ready(Err(ReadError::Reset { id, error_code }))
                }
                Err(Error::Closed) => Poll::Ready(Err(conn.closed_error(connection).into())),
                Err(_) => Poll::Ready(Err(ReadError::ClosedStream { id })),
            }
        })
    }

    /// Reads into `buf`: `Some(bytes read)`, or `None` at the end of the
    /// stream.
    pub async fn read(&mut self, buf: &mut [u8]) -> Result<Option<usize>, ReadError> {
        if buf.is_empty() {
            return Ok(Some(0));
        }
        let read = poll_fn(|cx| self.poll_read_data(cx, buf)).await?;
        Ok((read > 0).then_some(read))
    }

    /// Reads the rest of the stream, failing with
    /// [`ReadToEndError::TooLong`] (and stopping the stream) once it holds
    /// more than `limit` bytes.
    pub async fn read_to_end(&mut self, limit: usize) -> Result<Vec<u8>, ReadToEndError> {
        let mut data = Vec::new();
        let mut chunk = vec![0u8; limit.saturating_add(1).min(64 * 1024)];
        while let Some(read) = self.read(&mut chunk).await? {
            if data.len() + read > limit {
                let _ = self.stop(0);
                return Err(ReadToEndError::TooLong { id: self.id, limit });
            }
            data.extend_from_slice(chunk.get(..read).unwrap_or_default());
        }
        Ok(data)
    }

    /// Asks the peer to stop sending (STOP_SENDING with `error_code`) and
    /// discards what arrives from now on; later reads fail with
    /// [`ReadError::ClosedStream`]. Fails if the stream already ended.
    pub fn stop(&mut self, error_code: u64) -> Result<(), ReadError> {
        let id = self.id;
        match self.state {
            RecvState::Open => {}
            RecvState::Reset(error_code) => return Err(ReadError::Reset { id, error_code }),
            RecvState::Finished | RecvState::Stopped => return Err(ReadError::ClosedStream { id }),
        }
        let conn = &self.conn;
        conn.with(
            |connection, _| match connection.stream_stop_sending(id, error_code) {
                Ok(()) => Ok(()),
                Err(Error::Closed) => Err(ReadError::from(conn.closed_error(connection))),
                Err(_) => Err(ReadError::ClosedStream { id }),
            },
        )??;
        self.state = RecvState::Stopped;
        Ok(())
    }
}

impl tokio::io::AsyncRead for RecvStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let read = match this.poll_read_data(cx, buf.initialize_unfilled()) {
            Poll::Ready(Ok(read)) => read,
            Poll::Ready(Err(error)) => return Poll::Ready(Err(error.into())),
            Poll::Pending => return Poll::Pending,
        };
        buf.advance(read);
        Poll::Ready(Ok(()))
    }
}

impl Drop for RecvStream {
    fn drop(&mut self) {
        let (id, open) = (self.id, self.state == RecvState::Open);
        let _ = self.conn.with(|connection, held| {
            held.forget_stream(Wait::Read(id));
            if open {
                let _ = connection.stream_stop_sending(id, 0);
            }
        });
    }
}
