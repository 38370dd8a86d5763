//! The application on each end of a sift flow. The client opens `streams`
//! bidirectional streams once the handshake completes and writes `bytes`
//! split evenly across them, each ending with a FIN; when `stream_send`
//! accepts less than offered it simply tries again at the next event. The
//! server reads everything and checks every byte against the pattern the
//! client wrote, so "completed" means byte-exact delivery, not just a count.
//!
//! The payload is a fixed pattern (`offset mod 251`), so a write at any
//! offset is a slice of one shared buffer: retrying a blocked write costs no
//! copying and no allocation.

use std::collections::BTreeMap;

use crate::conn::{Error, StreamId};
use crate::stream::StreamError;

use super::transport::Transport;

/// Period of the payload pattern: a prime, so the pattern never lines up with
/// packet or chunk sizes and a misplaced segment shows as mismatched bytes.
pub const PATTERN_PERIOD: usize = 251;

/// Most bytes offered to `stream_send` in one call.
pub const WRITE_CHUNK: usize = 64 * 1024;

/// The byte the client writes at `offset` of every stream.
pub fn pattern_byte(offset: u64) -> u8 {
    // The remainder is below 251, so it always fits a byte.
    (offset % PATTERN_PERIOD as u64) as u8
}

/// One buffer holding the pattern from every phase, long enough for any write.
#[derive(Debug, Clone)]
pub struct Pattern {
    bytes: Vec<u8>,
}

impl Default for Pattern {
    fn default() -> Self {
        Self::new()
    }
}

impl Pattern {
    /// The pattern buffer: `WRITE_CHUNK + PATTERN_PERIOD` bytes.
    pub fn new() -> Self {
        Self {
            bytes: (0..(WRITE_CHUNK + PATTERN_PERIOD) as u64)
                .map(pattern_byte)
                .collect(),
        }
    }

    /// The pattern from stream offset `offset`, at most `len` bytes (and at
    /// most `WRITE_CHUNK`).
    pub fn slice(&self, offset: u64, len: u64) -> &[u8] {
        let phase = (offset % PATTERN_PERIOD as u64) as usize;
        let len = usize::try_from(len).unwrap_or(WRITE_CHUNK).min(WRITE_CHUNK);
        self.bytes.get(phase..phase + len).unwrap_or(&[])
    }

    /// How many bytes of `data`, read at stream offset `offset`, differ from
    /// the pattern.
    pub fn mismatches(&self, offset: u64, data: &[u8]) -> u64 {
        let mut mismatched = 0u64;
        let mut checked = 0usize;
        while checked < data.len() {
            let position = offset + checked as u64;
            let expected = self.slice(position, (data.len() - checked) as u64);
            if expected.is_empty() {
                break;
            }
            let actual = data.get(checked..checked + expected.len()).unwrap_or(&[]);
            if actual != expected {
                mismatched += actual.iter().zip(expected).filter(|(a, e)| a != e).count() as u64;
            }
            checked += expected.len();
        }
        mismatched
    }
}

/// Bytes stream `index` of `streams` carries when `bytes` are split evenly:
/// the first `bytes % streams` streams carry one byte more.
pub fn stream_share(bytes: u64, streams: u64, index: u64) -> u64 {
    if streams == 0 {
        return 0;
    }
    bytes / streams + u64::from(index < bytes % streams)
}

/// The client's writing progress on one stream.
#[derive(Debug, Clone)]
struct StreamWriter {
    id: StreamId,
    total: u64,
    written: u64,
    fin_written: bool,
}

/// The client application: opens the streams and writes the payload.
#[derive(Debug, Clone)]
pub struct SenderApp {
    bytes: u64,
    streams_wanted: u64,
    streams: Vec<StreamWriter>,
}

impl SenderApp {
    /// An application that will send `bytes` over `streams` streams.
    pub fn new(bytes: u64, streams: u64) -> Self {
        Self {
            bytes,
            streams_wanted: streams,
            streams: Vec::new(),
        }
    }

    /// Every byte and every FIN has been handed to the connection.
    pub fn finished_writing(&self) -> bool {
        self.streams.len() as u64 == self.streams_wanted
            && self.streams.iter().all(|s| s.fin_written)
    }

    /// Bytes handed to the connection so far.
    pub fn bytes_written(&self) -> u64 {
        self.streams.iter().map(|s| s.written).sum()
    }

    /// Opens what streams it can and writes what the connection accepts.
    /// Nothing happens before the handshake completes. A refused open, or a
    /// full send buffer, is retried at the next call; any other error from
    /// `stream_send` is returned.
    pub fn pump<T: Transport>(&mut self, conn: &mut T, pattern: &Pattern) -> Result<(), Error> {
        if !conn.is_established() || self.finished_writing() {
            return Ok(());
        }
        while (self.streams.len() as u64) < self.streams_wanted {
            let index = self.streams.len() as u64;
            match conn.stream_open_bi() {
                Ok(id) => self.streams.push(StreamWriter {
                    id,
                    total: stream_share(self.bytes, self.streams_wanted, index),
                    written: 0,
                    fin_written: false,
                }),
                // Most likely the peer's stream limit: try again later.
                Err(_) => break,
            }
        }
        for stream in self.streams.iter_mut().filter(|s| !s.fin_written) {
            loop {
                let remaining = stream.total - stream.written;
                let chunk = pattern.slice(stream.written, remaining);
                let fin = chunk.len() as u64 == remaining;
                let accepted = match conn.stream_send(stream.id, chunk, fin) {
                    Ok(accepted) => accepted.min(chunk.len()),
                    // The send buffer is full: acknowledgements will make
                    // room, and the next call goes on from here.
                    Err(Error::Stream(StreamError::Blocked)) => return Ok(()),
                    Err(e) => return Err(e),
                };
                stream.written += accepted as u64;
                if accepted == chunk.len() && fin {
                    stream.fin_written = true;
                    break;
                }
                if accepted < chunk.len() || accepted == 0 {
                    // The stream (or the connection) is full: retry later.
                    break;
                }
            }
        }
        Ok(())
    }
}

/// The server's reading progress on one stream.
#[derive(Debug, Clone, Copy, Default)]
struct StreamReader {
    received: u64,
    fin: bool,
}

/// The server application: reads every stream to its FIN and checks the bytes.
#[derive(Debug, Clone)]
pub struct ReceiverApp {
    bytes_expected: u64,
    streams_expected: u64,
    streams: BTreeMap<StreamId, StreamReader>,
    bytes_received: u64,
    fins_received: u64,
    mismatched_bytes: u64,
}

impl ReceiverApp {
    /// An application expecting `bytes` over `streams` streams.
    pub fn new(bytes: u64, streams: u64) -> Self {
        Self {
            bytes_expected: bytes,
            streams_expected: streams,
            streams: BTreeMap::new(),
            bytes_received: 0,
            fins_received: 0,
            mismatched_bytes: 0,
        }
    }

    /// Reads everything readable into `buf`, checking it against the pattern.
    pub fn drain<T: Transport>(&mut self, conn: &mut T, buf: &mut [u8], pattern: &Pattern) {
        if buf.is_empty() {
            return;
        }
        for id in conn.readable() {
            // An error here means "nothing more on this stream now".
            while let Ok((read, fin)) = conn.stream_recv(id, buf) {
                let read = read.min(buf.len());
                let stream = self.streams.entry(id).or_default();
                if let Some(data) = buf.get(..read) {
                    self.mismatched_bytes += pattern.mismatches(stream.received, data);
                }
                stream.received += read as u64;
                self.bytes_received += read as u64;
                if fin && !stream.fin {
                    stream.fin = true;
                    self.fins_received += 1;
                }
                if fin || read == 0 {
                    break;
                }
            }
        }
    }

    /// Every byte and every FIN has been read.
    pub fn is_complete(&self) -> bool {
        self.bytes_received == self.bytes_expected && self.fins_received == self.streams_expected
    }

    /// Bytes read so far.
    pub fn bytes_received(&self) -> u64 {
        self.bytes_received
    }

    /// Bytes read that differ from what the client wrote.
    pub fn mismatched_bytes(&self) -> u64 {
        self.mismatched_bytes
    }

    /// Streams that have delivered their FIN.
    pub fn fins_received(&self) -> u64 {
        self.fins_received
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_split_evenly_with_the_remainder_on_the_first_streams() {
        // 10 bytes over 4 streams: 10 / 4 = 2 each, 10 % 4 = 2 streams get 3.
        let shares: Vec<u64> = (0..4).map(|i| stream_share(10, 4, i)).collect();
        assert_eq!(shares, [3, 3, 2, 2]);
        assert_eq!(shares.iter().sum::<u64>(), 10);
    }

    #[test]
    fn pattern_slices_start_at_any_offset() {
        let pattern = Pattern::new();
        // Offset 1000: 1000 mod 251 = 247, then 248, 249, 250, 0.
        assert_eq!(pattern.slice(1000, 5), [247, 248, 249, 250, 0]);
        assert_eq!(pattern.slice(0, u64::MAX).len(), WRITE_CHUNK);
    }

    #[test]
    fn mismatches_count_every_wrong_byte_across_chunks() {
        let pattern = Pattern::new();
        let offset = 12_345;
        let mut data: Vec<u8> = (0..(3 * WRITE_CHUNK) as u64)
            .map(|i| pattern_byte(offset + i))
            .collect();
        assert_eq!(pattern.mismatches(offset, &data), 0);
        data[7] ^= 1;
        data[WRITE_CHUNK + 3] ^= 0xff;
        assert_eq!(pattern.mismatches(offset, &data), 2);
        // Shifted by one byte, every byte is wrong.
        assert_eq!(pattern.mismatches(offset + 1, &data[..100]), 100);
    }
}
