//! `h3::quic::Connection` and `h3::quic::OpenStreams` over a
//! [`sift::tokio::Connection`]: accepting and opening streams.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Buf;
use h3::error::Code;
use h3::quic::{self, ConnectionErrorIncoming, StreamErrorIncoming};
use sift::tokio::ConnectionError;

use crate::bidi::BidiStream;
use crate::error;
use crate::recv::RecvStream;
use crate::send::SendStream;

/// A sift call in progress (open or accept). sift's calls are
/// cancellation-safe, so dropping one that has not finished loses nothing.
type Waiting<T> = Pin<Box<dyn Future<Output = Result<T, ConnectionError>> + Send + Sync>>;

/// Both halves of a bidirectional sift stream.
type Halves = (sift::tokio::SendStream, sift::tokio::RecvStream);

/// Polls the call in `slot`, starting it with `start` if none is running,
/// and clears the slot once it finished.
fn poll_call<T>(
    slot: &mut Option<Waiting<T>>,
    cx: &mut Context<'_>,
    start: impl FnOnce() -> Waiting<T>,
) -> Poll<Result<T, ConnectionError>> {
    let call = slot.get_or_insert_with(start);
    let result = std::task::ready!(call.as_mut().poll(cx));
    *slot = None;
    Poll::Ready(result)
}

/// An HTTP/3 connection's QUIC transport: a sift connection that h3 accepts
/// streams from and opens streams on. Make one from a connection whose
/// ALPN is `h3` ([`crate::ALPN`]).
pub struct Connection {
    conn: sift::tokio::Connection,
    opener: OpenStreams,
    accepting_bi: Option<Waiting<Halves>>,
    accepting_uni: Option<Waiting<sift::tokio::RecvStream>>,
}

impl Connection {
    /// Wraps an established sift connection.
    pub fn new(conn: sift::tokio::Connection) -> Self {
        Self {
            opener: OpenStreams::new(conn.clone()),
            conn,
            accepting_bi: None,
            accepting_uni: None,
        }
    }

    /// The sift connection underneath (for its statistics, addresses, or
    /// to wait for its end).
    pub fn inner(&self) -> &sift::tokio::Connection {
        &self.conn
    }
}

impl<B: Buf> quic::Connection<B> for Connection {
    type RecvStream = RecvStream;
    type OpenStreams = OpenStreams;

    fn poll_accept_recv(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Self::RecvStream, ConnectionErrorIncoming>> {
        let conn = &self.conn;
        let stream = std::task::ready!(poll_call(&mut self.accepting_uni, cx, || {
            let conn = conn.clone();
            Box::pin(async move { conn.accept_uni().await })
        }))
        .map_err(error::connection)?;
        Poll::Ready(RecvStream::new(stream))
    }

    fn poll_accept_bidi(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Self::BidiStream, ConnectionErrorIncoming>> {
        let conn = &self.conn;
        let (send, recv) = std::task::ready!(poll_call(&mut self.accepting_bi, cx, || {
            let conn = conn.clone();
            Box::pin(async move { conn.accept_bi().await })
        }))
        .map_err(error::connection)?;
        Poll::Ready(BidiStream::new(send, recv))
    }

    fn opener(&self) -> Self::OpenStreams {
        self.opener.clone()
    }
}

impl<B: Buf> quic::OpenStreams<B> for Connection {
    type BidiStream = BidiStream<B>;
    type SendStream = SendStream<B>;

    fn poll_open_bidi(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Self::BidiStream, StreamErrorIncoming>> {
        self.opener.poll_open_bidi(cx)
    }

    fn poll_open_send(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Self::SendStream, StreamErrorIncoming>> {
        self.opener.poll_open_send(cx)
    }

    fn close(&mut self, code: Code, reason: &[u8]) {
        <OpenStreams as quic::OpenStreams<B>>::close(&mut self.opener, code, reason);
    }
}

/// Opens streams on a sift connection for h3 (one per request a client
/// sends, and the control and QPACK streams). Clones share the connection
/// and each waits for its own stream.
pub struct OpenStreams {
    conn: sift::tokio::Connection,
    opening_bi: Option<Waiting<Halves>>,
    opening_uni: Option<Waiting<sift::tokio::SendStream>>,
}

impl OpenStreams {
    fn new(conn: sift::tokio::Connection) -> Self {
        Self {
            conn,
            opening_bi: None,
            opening_uni: None,
        }
    }
}

impl Clone for OpenStreams {
    /// Another opener on the same connection, with no open in progress.
    fn clone(&self) -> Self {
        Self::new(self.conn.clone())
    }
}

impl<B: Buf> quic::OpenStreams<B> for OpenStreams {
    type BidiStream = BidiStream<B>;
    type SendStream = SendStream<B>;

    fn poll_open_bidi(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Self::BidiStream, StreamErrorIncoming>> {
        let conn = &self.conn;
        let (send, recv) = std::task::ready!(poll_call(&mut self.opening_bi, cx, || {
            let conn = conn.clone();
            Box::pin(async move { conn.open_bi().await })
        }))
        .map_err(error::stream_of_connection)?;
        Poll::Ready(BidiStream::new(send, recv).map_err(|connection_error| {
            StreamErrorIncoming::ConnectionErrorIncoming { connection_error }
        }))
    }

    fn poll_open_send(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Self::SendStream, StreamErrorIncoming>> {
        let conn = &self.conn;
        let send = std::task::ready!(poll_call(&mut self.opening_uni, cx, || {
            let conn = conn.clone();
            Box::pin(async move { conn.open_uni().await })
        }))
        .map_err(error::stream_of_connection)?;
        Poll::Ready(SendStream::new(send).map_err(|connection_error| {
            StreamErrorIncoming::ConnectionErrorIncoming { connection_error }
        }))
    }

    /// Closes the connection at once with h3's `code` (an HTTP/3 error
    /// code, RFC 9114 §8.1) as the application error.
    fn close(&mut self, code: Code, reason: &[u8]) {
        self.conn
            .close(code.value(), &String::from_utf8_lossy(reason));
    }
}
