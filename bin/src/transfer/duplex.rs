//! What the protocol needs from a stream: bytes both ways, and a way to end
//! our sending direction (FIN) while still reading. A sift stream provides
//! it; so do Unix and TCP sockets, which is how the protocol is tested
//! without a network. Clients use the blocking [`Duplex`]; the server, which
//! serves many streams on a few threads, the async [`AsyncDuplex`].

use std::fs::File;
use std::future::Future;
use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;

use sift::blocking::SiftIoError;
use tokio::io::{AsyncRead, AsyncWrite};

/// A bidirectional byte stream with a half-close.
pub trait Duplex: Read + Write {
    /// Ends our sending direction: the peer reads end-of-file after the
    /// data written so far. Reading still works.
    fn finish(&mut self) -> io::Result<()>;

    /// Abandons our sending direction: the peer sees an error, not a clean
    /// end, so it cannot mistake a cut-short transfer for a complete one.
    fn abort(&mut self, code: u64);

    /// Waits until the peer has everything written so far (a transport
    /// with no acknowledgements of its own has nothing to wait for).
    fn wait_delivered(&mut self) -> io::Result<()> {
        self.flush()
    }

    /// Sends up to `max` bytes of `file` from `offset` that the page cache
    /// holds, read straight into the stream's send buffer, as
    /// [`AsyncDuplex::write_cached_file`] does: `Ok(None)` when this stream
    /// cannot (the default) or the bytes are not cached.
    fn write_cached_file(
        &mut self,
        _file: &File,
        _offset: u64,
        _max: usize,
    ) -> io::Result<Option<usize>> {
        Ok(None)
    }

    /// Reads up to `max` bytes without copying them out: waits like a read,
    /// then lends them to `consume` in order, in one or more slices, each
    /// taken whole, and returns how many (0 at the end). `Ok(None)` when
    /// this stream cannot (the default): the caller reads into a buffer of
    /// its own. See [`read_to_sink`].
    fn read_in_place(
        &mut self,
        _max: usize,
        _consume: &mut dyn FnMut(&[u8]),
    ) -> io::Result<Option<usize>> {
        Ok(None)
    }
}

/// One read of up to `max` bytes (at most `buf`'s length) handed to
/// `sink`: in place where the stream lends its bytes
/// ([`Duplex::read_in_place`]), through `buf` otherwise. Returns how many
/// bytes were read (0 at the end of the stream); a failure of `sink` (a
/// full disk) is returned as `Err(SinkError)` apart from the stream's own
/// errors.
pub fn read_to_sink<S: Duplex + ?Sized>(
    stream: &mut S,
    buf: &mut [u8],
    max: usize,
    sink: &mut dyn FnMut(&[u8]) -> io::Result<()>,
) -> Result<usize, ReadToSinkError> {
    let max = max.min(buf.len());
    let mut failed = None;
    let lent = stream
        .read_in_place(max, &mut |bytes| {
            if failed.is_none() {
                failed = sink(bytes).err();
            }
        })
        .map_err(ReadToSinkError::Stream)?;
    if let Some(error) = failed {
        return Err(ReadToSinkError::Sink(error));
    }
    if let Some(n) = lent {
        return Ok(n);
    }
    let n = stream
        .read(&mut buf[..max])
        .map_err(ReadToSinkError::Stream)?;
    sink(&buf[..n]).map_err(ReadToSinkError::Sink)?;
    Ok(n)
}

/// Why [`read_to_sink`] failed: the stream, or what took the bytes.
#[derive(Debug)]
pub enum ReadToSinkError {
    Stream(io::Error),
    Sink(io::Error),
}

impl Duplex for UnixStream {
    fn finish(&mut self) -> io::Result<()> {
        self.flush()?;
        self.shutdown(Shutdown::Write)
    }

    fn abort(&mut self, _code: u64) {
        let _ = self.shutdown(Shutdown::Both);
    }
}

impl Duplex for TcpStream {
    fn finish(&mut self) -> io::Result<()> {
        self.flush()?;
        self.shutdown(Shutdown::Write)
    }

    fn abort(&mut self, _code: u64) {
        let _ = self.shutdown(Shutdown::Both);
    }
}

/// The bodies of [`Duplex`]'s sending-side methods (all but
/// `read_in_place`), forwarded to `**self`: for the pointer impls below
/// and [`CopiedReads`].
macro_rules! forward_sending {
    () => {
        fn finish(&mut self) -> io::Result<()> {
            (**self).finish()
        }

        fn abort(&mut self, code: u64) {
            (**self).abort(code)
        }

        fn wait_delivered(&mut self) -> io::Result<()> {
            (**self).wait_delivered()
        }

        fn write_cached_file(
            &mut self,
            file: &File,
            offset: u64,
            max: usize,
        ) -> io::Result<Option<usize>> {
            (**self).write_cached_file(file, offset, max)
        }
    };
}

/// [`Duplex`] through a pointer to one: every method forwarded, so that
/// none falls back to its default (`wait_delivered` to a flush).
macro_rules! forward_duplex {
    ($($pointer:ty),*) => {$(
        impl<T: Duplex + ?Sized> Duplex for $pointer {
            forward_sending!();

            fn read_in_place(
                &mut self,
                max: usize,
                consume: &mut dyn FnMut(&[u8]),
            ) -> io::Result<Option<usize>> {
                (**self).read_in_place(max, consume)
            }
        }
    )*};
}

forward_duplex!(&mut T, Box<T>);

/// A stream whose reads are copied out, never lent in place: everything
/// else is the stream's own. For downloads side by side on one
/// connection, which then hash and write their bytes without holding the
/// connection, and one another, while they do.
pub struct CopiedReads<'a, S: ?Sized>(pub &'a mut S);

impl<S: ?Sized> std::ops::Deref for CopiedReads<'_, S> {
    type Target = S;

    fn deref(&self) -> &S {
        self.0
    }
}

impl<S: ?Sized> std::ops::DerefMut for CopiedReads<'_, S> {
    fn deref_mut(&mut self) -> &mut S {
        self.0
    }
}

impl<S: Read + ?Sized> Read for CopiedReads<'_, S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

impl<S: Write + ?Sized> Write for CopiedReads<'_, S> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.0.write(data)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl<S: Duplex + ?Sized> Duplex for CopiedReads<'_, S> {
    forward_sending!();
}

/// [`Duplex`] for a task: reads and writes wait without holding a thread.
pub trait AsyncDuplex: AsyncRead + AsyncWrite + Unpin + Send {
    /// Ends our sending direction after the data written so far, without
    /// waiting for the peer. Reading still works.
    fn finish(&mut self) -> io::Result<()>;

    /// Abandons our sending direction: the peer sees an error, not a clean
    /// end.
    fn abort(&mut self, code: u64);

    /// Waits until the peer has everything written so far.
    fn wait_delivered(&mut self) -> impl Future<Output = io::Result<()>> + Send;

    /// Sends up to `max` bytes of `file` from `offset` that the page cache
    /// holds, read straight into the stream's send buffer (no copy through
    /// a buffer of ours), waiting for room as a write does: `Some(n)` for
    /// the `n > 0` bytes sent. `None` when this stream cannot (the
    /// default), or when the bytes are not cached or past the end: the
    /// caller reads and writes them itself. An error is the stream's.
    fn write_cached_file(
        &mut self,
        _file: &File,
        _offset: u64,
        _max: usize,
    ) -> impl Future<Output = io::Result<Option<usize>>> + Send {
        async { Ok(None) }
    }
}

/// A Unix socket as the server's stream, for tests of the protocol without
/// a network.
impl AsyncDuplex for tokio::net::UnixStream {
    fn finish(&mut self) -> io::Result<()> {
        // What was written is already with the kernel: shut at once.
        shutdown(self, libc::SHUT_WR)
    }

    fn abort(&mut self, _code: u64) {
        let _ = shutdown(self, libc::SHUT_RDWR);
    }

    async fn wait_delivered(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `shutdown(2)` on a tokio Unix socket, which offers only an async
/// shutdown of the write side.
fn shutdown(socket: &tokio::net::UnixStream, how: libc::c_int) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: shutdown(2) on the open descriptor the socket owns.
    if unsafe { libc::shutdown(socket.as_raw_fd(), how) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The sift stream error inside `error`, as sift's streams report them
/// through `io::Error`.
fn sift_error(error: &io::Error) -> Option<&SiftIoError> {
    error.get_ref()?.downcast_ref::<SiftIoError>()
}

/// The code of the peer's reset, when `error` is a stream reset by the
/// peer.
pub fn reset_code(error: &io::Error) -> Option<u64> {
    match sift_error(error)? {
        SiftIoError::StreamReset { error_code, .. } => Some(*error_code),
        _ => None,
    }
}

/// Whether `error` is the peer's STOP_SENDING of our direction.
pub fn is_stopped(error: &io::Error) -> bool {
    matches!(sift_error(error), Some(SiftIoError::StreamStopped { .. }))
}

/// Stream error codes this protocol uses when it abandons a stream.
pub mod abort_codes {
    /// The sender could not produce the data it announced (file changed,
    /// read error).
    pub const SOURCE_FAILED: u64 = 1;
    /// The server gave up on the stream before answering: the request did
    /// not arrive in time and the client took no answer either.
    pub const UNANSWERED: u64 = 2;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stream that records which of its own methods ran.
    #[derive(Default)]
    struct Recorder {
        delivered_waits: u32,
        cached_writes: u32,
        reads_in_place: u32,
    }

    impl Read for Recorder {
        fn read(&mut self, _buf: &mut [u8]) -> io::Result<usize> {
            Ok(0)
        }
    }

    impl Write for Recorder {
        fn write(&mut self, data: &[u8]) -> io::Result<usize> {
            Ok(data.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Duplex for Recorder {
        fn finish(&mut self) -> io::Result<()> {
            Ok(())
        }

        fn abort(&mut self, _code: u64) {}

        fn wait_delivered(&mut self) -> io::Result<()> {
            self.delivered_waits += 1;
            Ok(())
        }

        fn write_cached_file(
            &mut self,
            _file: &File,
            _offset: u64,
            max: usize,
        ) -> io::Result<Option<usize>> {
            self.cached_writes += 1;
            Ok(Some(max))
        }

        fn read_in_place(
            &mut self,
            max: usize,
            consume: &mut dyn FnMut(&[u8]),
        ) -> io::Result<Option<usize>> {
            self.reads_in_place += 1;
            consume(&vec![1; max]);
            Ok(Some(max))
        }
    }

    /// Through `&mut` and `Box` a stream's own methods run, not the
    /// trait's defaults (a flush for `wait_delivered`, nothing for
    /// `write_cached_file`).
    #[test]
    fn pointers_to_a_stream_use_its_own_methods() {
        let file = File::open("/dev/null").unwrap();
        let mut boxed: Box<Recorder> = Box::default();
        Duplex::wait_delivered(&mut boxed).unwrap();
        assert_eq!(
            Duplex::write_cached_file(&mut boxed, &file, 0, 7).unwrap(),
            Some(7)
        );
        let mut by_ref = &mut *boxed;
        Duplex::wait_delivered(&mut by_ref).unwrap();
        assert_eq!(
            Duplex::write_cached_file(&mut by_ref, &file, 0, 9).unwrap(),
            Some(9)
        );
        let mut lent = 0;
        assert_eq!(
            Duplex::read_in_place(&mut by_ref, 5, &mut |b| lent += b.len()).unwrap(),
            Some(5)
        );
        assert_eq!(lent, 5);
        assert_eq!(
            (
                boxed.delivered_waits,
                boxed.cached_writes,
                boxed.reads_in_place
            ),
            (2, 2, 1)
        );
    }

    /// `Reads::on` lends a stream's bytes in place, or makes it copy them
    /// out while its sending half stays its own.
    #[test]
    fn reads_on_a_stream_lend_in_place_or_copy() {
        use crate::cli::stream::Reads;
        let file = File::open("/dev/null").unwrap();
        let mut recorder = Recorder::default();
        for reads in [Reads::InPlace, Reads::Copied] {
            let lent = reads.on(&mut recorder, |stream| {
                assert_eq!(stream.write_cached_file(&file, 0, 3).unwrap(), Some(3));
                stream.read_in_place(4, &mut |_| {}).unwrap()
            });
            assert_eq!(lent, (reads == Reads::InPlace).then_some(4), "{reads:?}");
        }
        assert_eq!((recorder.reads_in_place, recorder.cached_writes), (1, 2));
    }

    /// `read_to_sink` hands the sink what the stream lends in place, or
    /// what it reads into the buffer when it lends nothing; a sink's
    /// failure is told apart from the stream's.
    #[test]
    fn read_to_sink_takes_bytes_in_place_or_through_the_buffer() {
        let mut buf = [0u8; 8];
        let mut seen = Vec::new();
        let mut recorder = Recorder::default();
        let n = read_to_sink(&mut recorder, &mut buf, 6, &mut |b| {
            seen.extend_from_slice(b);
            Ok(())
        })
        .unwrap();
        assert_eq!((n, seen.as_slice()), (6, &[1u8; 6][..]));
        let (mut near, mut far) = UnixStream::pair().unwrap();
        far.write_all(b"abc").unwrap();
        drop(far);
        let mut seen = Vec::new();
        let n = read_to_sink(&mut near, &mut buf, 8, &mut |b| {
            seen.extend_from_slice(b);
            Ok(())
        })
        .unwrap();
        assert_eq!((n, seen.as_slice()), (3, &b"abc"[..]));
        let failed = read_to_sink(&mut recorder, &mut buf, 4, &mut |_| {
            Err(io::Error::other("disk full"))
        });
        assert!(matches!(failed, Err(ReadToSinkError::Sink(_))));
    }
}
