//! One stream of a blocking connection, as `std::io::Read + Write`.

use std::io::{self, IoSliceMut, Read, Write};
use std::sync::Arc;

use super::connection::{closed_error, BlockingConnection, ConnInner, Step};
use super::SiftIoError;
use crate::stream::{stream_dir, stream_initiator, Dir, StreamError, StreamId};
use crate::Error;

/// One stream of a [`BlockingConnection`]: `Read` returns `Ok(0)` at the
/// peer's FIN, `Write` blocks while the send buffer is full.
pub struct SiftStream {
    conn: Arc<ConnInner>,
    id: StreamId,
    /// We may send on it (bidirectional, or our unidirectional stream).
    sends: bool,
    /// We may receive on it.
    receives: bool,
    /// FIN written or stream reset: no more writes.
    send_done: bool,
    /// FIN read (or reset seen): reads return `Ok(0)` / the error again.
    recv_done: bool,
    /// Opened before the server answered this client's 0-RTT: gone if it
    /// refused (then the ID may name a new stream, which this handle must
    /// not touch).
    early: bool,
}

impl std::fmt::Debug for SiftStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SiftStream")
            .field("id", &self.id)
            .field("remote", &self.conn.remote)
            .finish()
    }
}

impl SiftStream {
    /// `early`: opened before the server answered this client's 0-RTT.
    pub(super) fn new(conn: Arc<ConnInner>, id: StreamId, early: bool) -> Self {
        let side = conn
            .peek(|connection| connection.side())
            .unwrap_or(crate::Side::Client);
        let ours = stream_initiator(id) == side;
        let bidirectional = stream_dir(id) == Dir::Bi;
        Self {
            conn,
            id,
            sends: ours || bidirectional,
            receives: !ours || bidirectional,
            send_done: false,
            recv_done: false,
            early,
        }
    }

    /// The stream was opened before the server rejected 0-RTT: it is gone
    /// (its calls fail with [`SiftIoError::ZeroRttRejected`]), the server
    /// never saw it, and its request is to be sent again on a new stream.
    pub fn is_zero_rtt_rejected(&self) -> bool {
        self.early
            && self
                .conn
                .peek(|connection| connection.zero_rtt_rejected())
                .unwrap_or(false)
    }

    /// The error for any call on this stream once 0-RTT was rejected.
    fn rejected(&self, connection: &crate::Connection) -> Option<SiftIoError> {
        (self.early && connection.zero_rtt_rejected())
            .then_some(SiftIoError::ZeroRttRejected { id: self.id })
    }

    /// The stream ID (RFC 9000 §2.1).
    pub fn id(&self) -> StreamId {
        self.id
    }

    /// Ends the sending half: the peer reads `Ok(0)` after the data
    /// written so far. Does not wait; doing it twice changes nothing.
    pub fn finish(&mut self) -> Result<(), SiftIoError> {
        if self.send_done {
            return Ok(());
        }
        let id = self.id;
        self.conn
            .with(|connection| {
                if let Some(rejected) = self.rejected(connection) {
                    return Err(rejected);
                }
                match connection.stream_send(id, &[], true) {
                    Ok(_) => Ok(()),
                    Err(Error::Closed) => Err(closed_error(connection)),
                    Err(other) => Err(stream_error(other)),
                }
            })
            .unwrap_or(Err(SiftIoError::Connection(Error::Closed)))?;
        self.send_done = true;
        Ok(())
    }

    /// Waits until the peer has acknowledged every byte written so far,
    /// without ending the stream (a sender that wants its final counters).
    pub fn wait_acked(&mut self) -> Result<(), SiftIoError> {
        let id = self.id;
        self.conn.block_on(
            None,
            &|| format!("stream {id} data not acknowledged"),
            &mut |connection| {
                if let Some(rejected) = self.rejected(connection) {
                    Step::Ready(Err(rejected))
                } else if connection.stream_data_acked(id) {
                    Step::Ready(Ok(()))
                } else if connection.is_closing() {
                    Step::Ready(Err(closed_error(connection)))
                } else {
                    Step::Pending
                }
            },
        )
    }

    /// Finishes the stream and waits until the peer acknowledged all of it
    /// (or the connection closes, which is an error).
    pub fn finish_and_wait(&mut self) -> Result<(), SiftIoError> {
        self.finish()?;
        let id = self.id;
        self.conn.block_on(
            None,
            &|| format!("stream {id} not acknowledged"),
            &mut |connection| {
                if let Some(rejected) = self.rejected(connection) {
                    Step::Ready(Err(rejected))
                } else if connection.stream_finished_sending(id) {
                    Step::Ready(Ok(()))
                } else if connection.is_closing() {
                    Step::Ready(Err(closed_error(connection)))
                } else {
                    Step::Pending
                }
            },
        )
    }

    /// Abandons the sending half with `error_code` (RESET_STREAM): data not
    /// yet delivered is dropped, the peer's reads fail with the code.
    pub fn reset(&mut self, error_code: u64) -> Result<(), SiftIoError> {
        let id = self.id;
        self.conn
            .with(|connection| {
                if let Some(rejected) = self.rejected(connection) {
                    return Err(rejected);
                }
                match connection.stream_reset(id, error_code) {
                    Ok(()) => Ok(()),
                    Err(Error::Closed) => Err(closed_error(connection)),
                    Err(other) => Err(stream_error(other)),
                }
            })
            .unwrap_or(Err(SiftIoError::Connection(Error::Closed)))?;
        self.send_done = true;
        Ok(())
    }

    /// Asks the peer to stop sending (STOP_SENDING `error_code`); later
    /// reads fail.
    pub fn stop_sending(&mut self, error_code: u64) -> Result<(), SiftIoError> {
        let id = self.id;
        self.conn
            .with(|connection| {
                if let Some(rejected) = self.rejected(connection) {
                    return Err(rejected);
                }
                match connection.stream_stop_sending(id, error_code) {
                    Ok(()) => Ok(()),
                    Err(Error::Closed) => Err(closed_error(connection)),
                    Err(other) => Err(stream_error(other)),
                }
            })
            .unwrap_or(Err(SiftIoError::Connection(Error::Closed)))?;
        self.recv_done = true;
        Ok(())
    }

    /// The connection this stream belongs to.
    pub fn connection(&self) -> BlockingConnection {
        BlockingConnection {
            inner: Arc::clone(&self.conn),
        }
    }
}

/// Stream-level refusals, with the peer's codes kept apart.
fn stream_error(error: Error) -> SiftIoError {
    match error {
        Error::Stream(StreamError::Reset { id, error_code }) => {
            SiftIoError::StreamReset { id, error_code }
        }
        Error::Stream(StreamError::Stopped { id, error_code }) => {
            SiftIoError::StreamStopped { id, error_code }
        }
        Error::Stream(StreamError::ZeroRttRejected(id)) => SiftIoError::ZeroRttRejected { id },
        other => SiftIoError::Connection(other),
    }
}

/// A read call on the connection: bytes read, and whether the stream
/// ended there.
type StreamRead<'a> = dyn FnMut(&mut crate::Connection) -> Result<(usize, bool), Error> + 'a;

impl Read for SiftStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let id = self.id;
        Ok(self.receive(&mut |connection| connection.stream_recv(id, buf))?)
    }
}

impl SiftStream {
    /// Reads up to `max` bytes without copying them out: waits like
    /// [`read`](Read::read) until there is something, then lends what
    /// arrived in order to `consume`, as one or two slices of the stream's
    /// receive buffer, each consumed whole. Returns how many bytes it lent;
    /// 0 at the end of the stream.
    ///
    /// `consume` runs with the connection locked, like
    /// [`write_with`](Self::write_with)'s fill: while it runs, no other
    /// thread reads or writes on the connection and nobody drives its
    /// endpoint. Keep it to work on the bytes themselves (a hash, a write
    /// to a local file), and use [`read`](Read::read) where that work may
    /// block (a pipe, a slow disk) or where other threads use the
    /// connection at the same time. A lone download that hashes and writes
    /// what it reads this way saves the copy into a buffer of its own.
    pub fn read_with(&mut self, max: usize, mut consume: impl FnMut(&[u8])) -> io::Result<usize> {
        if max == 0 {
            return Ok(0);
        }
        let id = self.id;
        Ok(self.receive(&mut |connection| connection.stream_recv_with(id, max, &mut consume))?)
    }

    /// One read, waiting for data: `recv` is the connection call.
    fn receive(&mut self, recv: &mut StreamRead<'_>) -> Result<usize, SiftIoError> {
        if self.recv_done {
            return Ok(0);
        }
        let id = self.id;
        let early = self.early;
        let mut fin = false;
        let result = self.conn.block_on(
            None,
            &|| format!("no data on stream {id}"),
            &mut |connection| {
                // Checked first: the ID may name a new stream now.
                if early && connection.zero_rtt_rejected() {
                    return Step::Ready(Err(SiftIoError::ZeroRttRejected { id }));
                }
                match recv(connection) {
                    Ok((read, at_end)) => {
                        fin = at_end;
                        // A read frees receive credit, but the peer hears of
                        // it only once half a window is read: waking the
                        // driver for every other read was most of a download's
                        // wake-ups of it (2 400 per GiB), each a hand-off to
                        // another core.
                        if connection.has_pending_stream_frames() {
                            Step::Ready(Ok(read))
                        } else {
                            Step::ReadyQuiet(Ok(read))
                        }
                    }
                    Err(Error::Stream(StreamError::Blocked)) if connection.is_closing() => {
                        Step::Ready(Err(closed_error(connection)))
                    }
                    Err(Error::Stream(StreamError::Blocked)) => Step::Pending,
                    Err(Error::Closed) => Step::Ready(Err(closed_error(connection))),
                    Err(other) => Step::Ready(Err(stream_error(other))),
                }
            },
        );
        if fin {
            self.recv_done = true;
        }
        result
    }

    /// Writes up to `max` bytes that `fill` places straight into the
    /// stream's send buffer, waiting like [`write`](Write::write) until
    /// there is room; returns how many `fill` wrote. A file read this way
    /// lands in the send buffer without a copy through a buffer of the
    /// caller's.
    ///
    /// `fill` is called once, with the connection locked (the driver
    /// waits): it gets the room as slices in stream order and returns how
    /// many bytes it wrote into them, in order (as `readv` fills its
    /// buffers). Keep it short: a read of what the page cache holds
    /// (`preadv2` with `RWF_NOWAIT`), never one that may wait for a disk
    /// or a peer. A `fill` that wrote nothing returns 0, and so does this.
    pub fn write_with(
        &mut self,
        max: usize,
        mut fill: impl FnMut(&mut [IoSliceMut<'_>]) -> usize,
    ) -> io::Result<usize> {
        if max == 0 {
            return Ok(0);
        }
        let id = self.id;
        self.send_some(&mut |connection| connection.stream_send_with(id, max, &mut fill))
    }

    /// One write, waiting for room: `send` is the connection call.
    fn send_some(
        &mut self,
        send: &mut dyn FnMut(&mut crate::Connection) -> Result<usize, Error>,
    ) -> io::Result<usize> {
        let id = self.id;
        let early = self.early;
        let written = self.conn.block_on(
            None,
            &|| format!("no room on stream {id}"),
            &mut |connection| {
                // Checked first: the ID may name a new stream now.
                if early && connection.zero_rtt_rejected() {
                    return Step::Ready(Err(SiftIoError::ZeroRttRejected { id }));
                }
                match send(connection) {
                    Ok(written) => Step::Ready(Ok(written)),
                    Err(Error::Stream(StreamError::Blocked)) => Step::Pending,
                    Err(Error::Closed) => Step::Ready(Err(closed_error(connection))),
                    Err(other) => Step::Ready(Err(stream_error(other))),
                }
            },
        )?;
        Ok(written)
    }
}

impl Write for SiftStream {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if data.is_empty() {
            return Ok(0);
        }
        let id = self.id;
        self.send_some(&mut |connection| connection.stream_send(id, data, false))
    }

    /// Returns at once: written data is already with the connection. Use
    /// [`SiftStream::finish_and_wait`] to wait for acknowledgement.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for SiftStream {
    fn drop(&mut self) {
        let id = self.id;
        let finish = self.sends && !self.send_done;
        let stop = self.receives && !self.recv_done;
        if finish || stop {
            let early = self.early;
            self.conn.with(|connection| {
                if early && connection.zero_rtt_rejected() {
                    // Gone: the ID may name a new stream now.
                    return;
                }
                if finish {
                    let _ = connection.stream_send(id, &[], true);
                }
                if stop {
                    let _ = connection.stream_stop_sending(id, 0);
                }
            });
        }
    }
}
