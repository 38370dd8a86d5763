//! `h3::quic::SendStream` over a [`sift::tokio::SendStream`]: h3 hands
//! over one frame at a time, and `poll_ready` writes it out as the
//! stream's send buffer takes it.

use std::task::{Context, Poll};

use bytes::Buf;
use h3::quic::{self, ConnectionErrorIncoming, StreamErrorIncoming, StreamId, WriteBuf};

use crate::error;

/// The sending half of a sift stream (a request or response stream, or
/// one of h3's unidirectional streams).
pub struct SendStream<B: Buf> {
    stream: sift::tokio::SendStream,
    id: StreamId,
    /// The frame h3 gave with `send_data`, until all of it was written.
    writing: Option<WriteBuf<B>>,
}

impl<B: Buf> SendStream<B> {
    pub(crate) fn new(stream: sift::tokio::SendStream) -> Result<Self, ConnectionErrorIncoming> {
        let id = StreamId::try_from(stream.id()).map_err(|_| error::bad_id(stream.id()))?;
        Ok(Self {
            stream,
            id,
            writing: None,
        })
    }

    /// The error for h3 using the stream out of order (a frame given
    /// before the previous one was written): h3 closes the connection
    /// with H3_INTERNAL_ERROR.
    fn misused(what: &str) -> StreamErrorIncoming {
        StreamErrorIncoming::ConnectionErrorIncoming {
            connection_error: ConnectionErrorIncoming::InternalError(format!(
                "{what} while a frame was still being written"
            )),
        }
    }
}

impl<B: Buf> quic::SendStream<B> for SendStream<B> {
    /// Writes what is left of the last frame; ready once all of it is
    /// with the stream.
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), StreamErrorIncoming>> {
        while let Some(frame) = self.writing.as_mut() {
            let chunk = frame.chunk();
            if chunk.is_empty() {
                break;
            }
            let written =
                std::task::ready!(self.stream.poll_write_data(cx, chunk)).map_err(error::write)?;
            frame.advance(written);
        }
        self.writing = None;
        Poll::Ready(Ok(()))
    }

    fn send_data<T: Into<WriteBuf<B>>>(&mut self, data: T) -> Result<(), StreamErrorIncoming> {
        if self.writing.is_some() {
            return Err(Self::misused("send_data"));
        }
        self.writing = Some(data.into());
        Ok(())
    }

    /// Writes what is left of the last frame, then ends the stream (FIN).
    fn poll_finish(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), StreamErrorIncoming>> {
        std::task::ready!(self.poll_ready(cx))?;
        Poll::Ready(self.stream.finish().map_err(error::write))
    }

    /// Abandons the stream (RESET_STREAM with `reset_code`); a stream
    /// already ended stays as it was.
    fn reset(&mut self, reset_code: u64) {
        self.writing = None;
        let _ = self.stream.reset(reset_code);
    }

    fn send_id(&self) -> StreamId {
        self.id
    }
}

impl<B: Buf> quic::SendStreamUnframed<B> for SendStream<B> {
    fn poll_send<D: Buf>(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut D,
    ) -> Poll<Result<usize, StreamErrorIncoming>> {
        if self.writing.is_some() {
            return Poll::Ready(Err(Self::misused("poll_send")));
        }
        let written = std::task::ready!(self.stream.poll_write_data(cx, buf.chunk()))
            .map_err(error::write)?;
        buf.advance(written);
        Poll::Ready(Ok(written))
    }
}
