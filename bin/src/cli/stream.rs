//! sift's blocking streams as the protocol's [`Duplex`].

use std::io;

use sift::blocking::SiftStream;

use crate::transfer::Duplex;

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
}
