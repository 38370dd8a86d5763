//! The framing shared by every header of the file-transfer protocol:
//!
//! ```text
//! magic "SIFT" (4) | version (1) | kind (1) | body_len (u16, big-endian) | body
//! ```
//!
//! A frame is bounded (`MAX_FRAME_LEN`), so a reader never allocates more
//! than that whatever the peer sends.

use std::io::Read;

use tokio::io::{AsyncRead, AsyncReadExt};

use super::error::ProtocolError;

/// The four bytes every frame starts with.
pub const MAGIC: [u8; 4] = *b"SIFT";
/// The protocol version this build speaks.
pub const VERSION: u8 = 1;
/// Bytes before the body: magic, version, kind, body length.
pub const FRAME_PREFIX_LEN: usize = 8;
/// The largest frame (prefix + body) either side accepts, in bytes.
pub const MAX_FRAME_LEN: usize = 4096;
/// The largest body, in bytes.
pub const MAX_BODY_LEN: usize = MAX_FRAME_LEN - FRAME_PREFIX_LEN;

/// What a frame carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum FrameKind {
    Get = 1,
    Put = 2,
    List = 3,
    Perf = 4,
    /// The server's answer to a request.
    Response = 0x80,
    /// Sender-side statistics after a download's data.
    Trailer = 0x81,
    /// The downloaded file's SHA-256, after its data, when the response
    /// did not carry it.
    Digest = 0x82,
}

impl FrameKind {
    /// The kind for a wire byte, if it names one.
    pub fn from_byte(byte: u8) -> Option<Self> {
        Some(match byte {
            1 => Self::Get,
            2 => Self::Put,
            3 => Self::List,
            4 => Self::Perf,
            0x80 => Self::Response,
            0x81 => Self::Trailer,
            0x82 => Self::Digest,
            _ => return None,
        })
    }
}

/// Wraps `body` in a frame of `kind`. Fails if the body is over `MAX_BODY_LEN`.
pub fn encode_frame(kind: FrameKind, body: &[u8]) -> Result<Vec<u8>, ProtocolError> {
    if body.len() > MAX_BODY_LEN {
        return Err(ProtocolError::TooLarge {
            len: body.len() + FRAME_PREFIX_LEN,
            max: MAX_FRAME_LEN,
        });
    }
    let mut out = Vec::with_capacity(FRAME_PREFIX_LEN + body.len());
    out.extend_from_slice(&MAGIC);
    out.push(VERSION);
    out.push(kind as u8);
    out.extend_from_slice(&(body.len() as u16).to_be_bytes());
    out.extend_from_slice(body);
    Ok(out)
}

/// Checks a complete frame and returns its kind and body. Rejects a bad
/// magic, another version, an unknown kind, a length that disagrees with the
/// bytes given, and anything over `MAX_FRAME_LEN`.
pub fn split_frame(bytes: &[u8]) -> Result<(FrameKind, &[u8]), ProtocolError> {
    let (kind, body_len) = parse_prefix(bytes)?;
    let body = &bytes[FRAME_PREFIX_LEN.min(bytes.len())..];
    match body.len().cmp(&body_len) {
        std::cmp::Ordering::Less => Err(ProtocolError::Truncated {
            needed: FRAME_PREFIX_LEN + body_len,
            available: bytes.len(),
        }),
        std::cmp::Ordering::Greater => Err(ProtocolError::TrailingBytes {
            count: body.len() - body_len,
        }),
        std::cmp::Ordering::Equal => Ok((kind, body)),
    }
}

/// Parses the 8-byte prefix: the kind and the body length it announces.
fn parse_prefix(bytes: &[u8]) -> Result<(FrameKind, usize), ProtocolError> {
    let Some(prefix) = bytes.get(..FRAME_PREFIX_LEN) else {
        return Err(ProtocolError::Truncated {
            needed: FRAME_PREFIX_LEN,
            available: bytes.len(),
        });
    };
    let mut magic = [0u8; 4];
    magic.copy_from_slice(&prefix[..4]);
    if magic != MAGIC {
        return Err(ProtocolError::BadMagic { found: magic });
    }
    if prefix[4] != VERSION {
        return Err(ProtocolError::UnsupportedVersion {
            version: prefix[4],
            supported: VERSION,
        });
    }
    let kind =
        FrameKind::from_byte(prefix[5]).ok_or(ProtocolError::UnknownKind { kind: prefix[5] })?;
    let body_len = u16::from_be_bytes([prefix[6], prefix[7]]) as usize;
    if body_len > MAX_BODY_LEN {
        return Err(ProtocolError::TooLarge {
            len: body_len + FRAME_PREFIX_LEN,
            max: MAX_FRAME_LEN,
        });
    }
    Ok((kind, body_len))
}

/// Reads one whole frame from `reader`: the prefix, then exactly the body it
/// announces (never more than `MAX_FRAME_LEN` bytes in all).
pub fn read_frame<R: Read + ?Sized>(reader: &mut R) -> Result<Vec<u8>, ProtocolError> {
    let mut frame = vec![0u8; FRAME_PREFIX_LEN];
    read_exact_or_eof(reader, &mut frame)?;
    let (_, body_len) = parse_prefix(&frame)?;
    frame.resize(FRAME_PREFIX_LEN + body_len, 0);
    read_exact_or_eof(reader, &mut frame[FRAME_PREFIX_LEN..])?;
    Ok(frame)
}

/// [`read_frame`] for a task: waits for the bytes without holding a thread.
pub async fn read_frame_async<R: AsyncRead + Unpin + ?Sized>(
    reader: &mut R,
) -> Result<Vec<u8>, ProtocolError> {
    let mut frame = vec![0u8; FRAME_PREFIX_LEN];
    reader
        .read_exact(&mut frame)
        .await
        .map_err(end_of_stream_or_io)?;
    let (_, body_len) = parse_prefix(&frame)?;
    frame.resize(FRAME_PREFIX_LEN + body_len, 0);
    reader
        .read_exact(&mut frame[FRAME_PREFIX_LEN..])
        .await
        .map_err(end_of_stream_or_io)?;
    Ok(frame)
}

fn end_of_stream_or_io(error: std::io::Error) -> ProtocolError {
    if error.kind() == std::io::ErrorKind::UnexpectedEof {
        ProtocolError::EndOfStream
    } else {
        ProtocolError::Io(error)
    }
}

fn read_exact_or_eof<R: Read + ?Sized>(
    reader: &mut R,
    buf: &mut [u8],
) -> Result<(), ProtocolError> {
    reader.read_exact(buf).map_err(end_of_stream_or_io)
}

/// A bounds-checked reader over a frame body: every accessor checks the
/// length first, so parsing never panics.
pub struct BodyReader<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl<'a> BodyReader<'a> {
    /// Reads `bytes` from the start.
    pub fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, position: 0 }
    }

    /// The next `count` bytes.
    pub fn take(&mut self, count: usize) -> Result<&'a [u8], ProtocolError> {
        let end = self
            .position
            .checked_add(count)
            .filter(|end| *end <= self.bytes.len())
            .ok_or(ProtocolError::Truncated {
                needed: FRAME_PREFIX_LEN + self.position.saturating_add(count),
                available: FRAME_PREFIX_LEN + self.bytes.len(),
            })?;
        let slice = &self.bytes[self.position..end];
        self.position = end;
        Ok(slice)
    }

    /// One byte.
    pub fn u8(&mut self) -> Result<u8, ProtocolError> {
        Ok(self.take(1)?[0])
    }

    /// A big-endian u16.
    pub fn u16(&mut self) -> Result<u16, ProtocolError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    /// A big-endian u64.
    pub fn u64(&mut self) -> Result<u64, ProtocolError> {
        let mut b = [0u8; 8];
        b.copy_from_slice(self.take(8)?);
        Ok(u64::from_be_bytes(b))
    }

    /// A UTF-8 string prefixed by its u16 length; `field` names it in errors.
    pub fn string(&mut self, field: &'static str) -> Result<String, ProtocolError> {
        let len = self.u16()? as usize;
        let bytes = self.take(len)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| ProtocolError::NotUtf8 { field })
    }

    /// Whether every byte has been read (an optional last field is absent).
    pub fn is_empty(&self) -> bool {
        self.position >= self.bytes.len()
    }

    /// Fails if bytes remain after the last field.
    pub fn finish(self) -> Result<(), ProtocolError> {
        match self.bytes.len() - self.position {
            0 => Ok(()),
            count => Err(ProtocolError::TrailingBytes { count }),
        }
    }
}

/// Appends a u16-length-prefixed string; fails if it is longer than a u16.
pub fn put_string(
    out: &mut Vec<u8>,
    value: &str,
    field: &'static str,
) -> Result<(), ProtocolError> {
    let len = u16::try_from(value.len()).map_err(|_| ProtocolError::FieldTooLong {
        field,
        len: value.len(),
    })?;
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(value.as_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_round_trips_and_rejects_a_lying_length() {
        let frame = encode_frame(FrameKind::List, b"abc").unwrap();
        // 4 magic + 1 version + 1 kind + 2 length + 3 body = 11 bytes.
        assert_eq!(frame.len(), 11);
        assert_eq!(split_frame(&frame).unwrap(), (FrameKind::List, &b"abc"[..]));
        assert!(matches!(
            split_frame(&frame[..10]),
            Err(ProtocolError::Truncated {
                needed: 11,
                available: 10
            })
        ));
        let mut longer = frame.clone();
        longer.push(0);
        assert!(matches!(
            split_frame(&longer),
            Err(ProtocolError::TrailingBytes { count: 1 })
        ));
    }

    #[test]
    fn a_frame_announcing_more_than_four_kib_is_refused_before_reading_it() {
        let mut prefix = MAGIC.to_vec();
        prefix.extend_from_slice(&[VERSION, FrameKind::Get as u8, 0xff, 0xff]);
        let mut reader = &prefix[..];
        assert!(matches!(
            read_frame(&mut reader),
            Err(ProtocolError::TooLarge {
                len: 65_543,
                max: 4096
            })
        ));
    }

    #[test]
    fn a_stream_that_ends_inside_a_frame_is_end_of_stream() {
        let frame = encode_frame(FrameKind::Get, b"abcdef").unwrap();
        let mut reader = &frame[..9];
        assert!(matches!(
            read_frame(&mut reader),
            Err(ProtocolError::EndOfStream)
        ));
    }

    #[test]
    fn oversized_bodies_are_not_encoded() {
        assert!(encode_frame(FrameKind::Response, &[0; MAX_BODY_LEN]).is_ok());
        assert!(matches!(
            encode_frame(FrameKind::Response, &[0; MAX_BODY_LEN + 1]),
            Err(ProtocolError::TooLarge {
                len: 4097,
                max: 4096
            })
        ));
    }
}
