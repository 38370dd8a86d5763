//! `h3::quic::RecvStream` over a [`sift::tokio::RecvStream`]: each poll
//! hands h3 what the stream holds, up to [`READ_CHUNK`] bytes.

use std::task::{Context, Poll};

use bytes::Bytes;
use h3::error::Code;
use h3::quic::{self, ConnectionErrorIncoming, StreamErrorIncoming, StreamId};

use crate::error;

/// The most one poll reads: a 64 KiB buffer per stream that is being
/// read, as quinn's default read chunk is of the same order and the
/// HTTP/3 frames of a download are copied once.
const READ_CHUNK: usize = 64 * 1024;

/// The receiving half of a sift stream. Dropped before the end of the
/// stream, it asks the peer to stop sending with H3_NO_ERROR, as RFC 9114
/// §4.1.1 has a server do when its response is complete before the
/// request (sift's own default code, 0, is not an HTTP/3 code).
pub struct RecvStream {
    stream: sift::tokio::RecvStream,
    id: StreamId,
    /// Where a read lands before h3 gets its bytes; allocated on the first
    /// read and freed at the end of the stream, so that idle streams hold
    /// none.
    buffer: Vec<u8>,
}

impl RecvStream {
    pub(crate) fn new(stream: sift::tokio::RecvStream) -> Result<Self, ConnectionErrorIncoming> {
        let id = StreamId::try_from(stream.id()).map_err(|_| error::bad_id(stream.id()))?;
        Ok(Self {
            stream,
            id,
            buffer: Vec::new(),
        })
    }
}

impl quic::RecvStream for RecvStream {
    type Buf = Bytes;

    /// The next bytes of the stream, or `None` at its end.
    fn poll_data(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<Self::Buf>, StreamErrorIncoming>> {
        if self.buffer.is_empty() {
            self.buffer = vec![0; READ_CHUNK];
        }
        let read = std::task::ready!(self.stream.poll_read_data(cx, &mut self.buffer))
            .map_err(error::read)?;
        if read == 0 {
            self.buffer = Vec::new();
            return Poll::Ready(Ok(None));
        }
        let data = self.buffer.get(..read).unwrap_or_default();
        Poll::Ready(Ok(Some(Bytes::copy_from_slice(data))))
    }

    /// Asks the peer to stop sending (STOP_SENDING with `error_code`); a
    /// stream already ended stays as it was.
    fn stop_sending(&mut self, error_code: u64) {
        let _ = self.stream.stop(error_code);
    }

    fn recv_id(&self) -> StreamId {
        self.id
    }
}

impl Drop for RecvStream {
    fn drop(&mut self) {
        // Refused (and nothing sent) once the stream ended, was reset or
        // was stopped already.
        let _ = self.stream.stop(Code::H3_NO_ERROR.value());
    }
}
