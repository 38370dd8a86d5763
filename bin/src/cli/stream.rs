//! sift's streams as the protocol's [`Duplex`] (blocking, for clients)
//! and [`AsyncDuplex`] (tokio, for the server).

use std::fs::File;
use std::io::{self, IoSliceMut};
use std::pin::Pin;
use std::task::{Context, Poll};

use sift::blocking::SiftStream;
use sift::tokio::{RecvStream, SendStream};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::transfer::cached_read::read_cached_vectored_at;
use crate::transfer::duplex::CopiedReads;
use crate::transfer::{AsyncDuplex, Duplex};

impl Duplex for SiftStream {
    fn finish(&mut self) -> io::Result<()> {
        SiftStream::finish(self).map_err(io::Error::from)
    }

    fn abort(&mut self, code: u64) {
        if let Err(e) = self.reset(code) {
            tracing::debug!(stream = %self.id(), error = %e, "reset failed");
        }
    }

    fn wait_delivered(&mut self) -> io::Result<()> {
        self.wait_acked().map_err(io::Error::from)
    }

    fn write_cached_file(
        &mut self,
        file: &File,
        offset: u64,
        max: usize,
    ) -> io::Result<Option<usize>> {
        let written = self.write_with(max, |room| read_cached_into(file, room, offset))?;
        Ok((written > 0).then_some(written))
    }

    fn read_in_place(
        &mut self,
        max: usize,
        consume: &mut dyn FnMut(&[u8]),
    ) -> io::Result<Option<usize>> {
        self.read_with(max, consume).map(Some)
    }
}

/// How a download takes its bytes from the stream (see
/// [`CopiedReads`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reads {
    /// Lent in place (`SiftStream::read_with`): hashed and written
    /// straight from the receive buffer, with the connection locked while
    /// they are. For a download alone on its connection.
    InPlace,
    /// Copied out first, then hashed and written with the connection free:
    /// for downloads side by side on one connection, which then hash in
    /// parallel, and none of which holds the others (or the endpoint's
    /// driving) through a slow disk.
    Copied,
}

impl Reads {
    /// Runs `f` on `stream`, its reads taken this way.
    pub fn on<S: Duplex, T>(self, stream: &mut S, f: impl FnOnce(&mut dyn Duplex) -> T) -> T {
        match self {
            Reads::InPlace => f(stream),
            Reads::Copied => f(&mut CopiedReads(stream)),
        }
    }
}

/// A bidirectional stream of the async API, both halves together, as the
/// server's [`AsyncDuplex`].
pub struct AsyncSiftStream {
    send: SendStream,
    recv: RecvStream,
}

impl AsyncSiftStream {
    /// The two halves `accept_bi` gave.
    pub fn new((send, recv): (SendStream, RecvStream)) -> Self {
        Self { send, recv }
    }
}

impl AsyncRead for AsyncSiftStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().recv).poll_read(cx, buf)
    }
}

impl AsyncWrite for AsyncSiftStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().send).poll_write(cx, data)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().send).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().send).poll_shutdown(cx)
    }
}

impl AsyncDuplex for AsyncSiftStream {
    fn finish(&mut self) -> io::Result<()> {
        self.send.finish().map_err(io::Error::from)
    }

    fn abort(&mut self, code: u64) {
        if let Err(e) = self.send.reset(code) {
            tracing::debug!(stream = %self.send.id(), error = %e, "reset failed");
        }
    }

    async fn wait_delivered(&mut self) -> io::Result<()> {
        self.send.acknowledged().await.map_err(io::Error::from)
    }

    async fn write_cached_file(
        &mut self,
        file: &File,
        offset: u64,
        max: usize,
    ) -> io::Result<Option<usize>> {
        let written = self
            .send
            .write_with(max, |room| read_cached_into(file, room, offset))
            .await
            .map_err(io::Error::from)?;
        Ok((written > 0).then_some(written))
    }
}

/// What the page cache holds of `file` at `offset`, read into a stream's
/// room: the count, 0 for anything else (the caller's fallback read says
/// what).
fn read_cached_into(file: &File, room: &mut [IoSliceMut<'_>], offset: u64) -> usize {
    read_cached_vectored_at(file, room, offset)
        .and_then(Result::ok)
        .unwrap_or(0)
}
