//! What can be wrong with the bytes of a request, response or trailer.

use thiserror::Error;

/// A malformed or unreadable protocol header. Every variant names the value
/// that was wrong, so the peer's error message says what to fix.
#[derive(Debug, Error)]
pub enum ProtocolError {
    #[error("header truncated: needs {needed} bytes, has {available}")]
    Truncated { needed: usize, available: usize },
    #[error("not a sift transfer header: starts with {found:02x?}, expected \"SIFT\"")]
    BadMagic { found: [u8; 4] },
    #[error("protocol version {version} is not supported (this build speaks {supported})")]
    UnsupportedVersion { version: u8, supported: u8 },
    #[error("unknown header kind {kind:#04x}")]
    UnknownKind { kind: u8 },
    #[error("expected a {expected} header, got kind {found:#04x}")]
    UnexpectedKind { expected: &'static str, found: u8 },
    #[error("header of {len} bytes is over the {max}-byte limit")]
    TooLarge { len: usize, max: usize },
    #[error("{count} unexpected bytes after the last header field")]
    TrailingBytes { count: usize },
    #[error("{field} is not valid UTF-8")]
    NotUtf8 { field: &'static str },
    #[error("{field} of {len} bytes does not fit its 16-bit length")]
    FieldTooLong { field: &'static str, len: usize },
    #[error("unknown {field} value {value}")]
    BadValue { field: &'static str, value: u64 },
    #[error("trailer is not valid statistics JSON: {0}")]
    BadTrailer(String),
    #[error("the response carries no SHA-256 for the file")]
    MissingDigest,
    #[error("listing is not valid JSON: {0}")]
    BadListing(String),
    #[error("the stream ended before a complete header")]
    EndOfStream,
    #[error("no complete request within {:.1} s", after.as_secs_f64())]
    RequestTimedOut { after: std::time::Duration },
    #[error("reading the header: {0}")]
    Io(#[from] std::io::Error),
}
