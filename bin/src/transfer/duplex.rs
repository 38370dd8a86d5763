//! What the protocol needs from a stream: bytes both ways, and a way to end
//! our sending direction (FIN) while still reading. A sift stream provides
//! it; so do Unix and TCP sockets, which is how the protocol is tested
//! without a network.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;

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

impl<T: Duplex + ?Sized> Duplex for &mut T {
    fn finish(&mut self) -> io::Result<()> {
        (**self).finish()
    }

    fn abort(&mut self, code: u64) {
        (**self).abort(code)
    }
}

impl<T: Duplex + ?Sized> Duplex for Box<T> {
    fn finish(&mut self) -> io::Result<()> {
        (**self).finish()
    }

    fn abort(&mut self, code: u64) {
        (**self).abort(code)
    }
}

/// Stream error codes this protocol uses when it abandons a stream.
pub mod abort_codes {
    /// The sender could not produce the data it announced (file changed,
    /// read error).
    pub const SOURCE_FAILED: u64 = 1;
}
