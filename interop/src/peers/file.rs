//! The baseline's request protocol, one request per bidirectional stream:
//!
//! - `GET <path>\n` → `OK <size>\n` then exactly `size` bytes of the file,
//!   then FIN; or `ERR <reason>\n`, FIN.
//! - `STATS\n` → `OK <len>\n` then the sender's counters as JSON
//!   ([`SenderCounters`]), taken once the client has the whole file.
//!
//! Paths are relative to the server's root; [`resolve`] refuses anything
//! that would leave it.

use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

/// ALPN protocol name both endpoints offer.
pub const ALPN: &[u8] = b"sift-interop/1";

/// The longest request line accepted (a guard against a peer that never
/// ends its line).
pub const MAX_REQUEST_BYTES: usize = 4096;

/// A client's request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// Send the file at this path (relative to the root).
    Get(String),
    /// Send the sender's counters for this connection.
    Stats,
}

/// A request or response line that cannot be understood.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ProtocolError {
    #[error("request is not `GET <path>` or `STATS`: {0:?}")]
    BadRequest(String),
    #[error("request longer than {MAX_REQUEST_BYTES} bytes")]
    RequestTooLong,
    #[error("response header is not `OK <size>` or `ERR <reason>`: {0:?}")]
    BadResponse(String),
    #[error("server refused: {0}")]
    Refused(String),
    #[error("path {0:?} leaves the served directory")]
    OutsideRoot(String),
}

impl Request {
    /// The bytes on the wire, FIN after them.
    pub fn encode(&self) -> Vec<u8> {
        match self {
            Request::Get(path) => format!("GET {path}\n").into_bytes(),
            Request::Stats => b"STATS\n".to_vec(),
        }
    }

    /// Parses a complete request (everything up to the FIN).
    pub fn parse(bytes: &[u8]) -> Result<Self, ProtocolError> {
        if bytes.len() > MAX_REQUEST_BYTES {
            return Err(ProtocolError::RequestTooLong);
        }
        let text = String::from_utf8_lossy(bytes);
        let line = text.strip_suffix('\n').unwrap_or(&text);
        if line == "STATS" {
            return Ok(Request::Stats);
        }
        match line.strip_prefix("GET ") {
            Some(path) if !path.is_empty() && !path.contains('\n') => {
                Ok(Request::Get(path.to_string()))
            }
            _ => Err(ProtocolError::BadRequest(line.to_string())),
        }
    }
}

/// The header line of a successful response.
pub fn ok_header(size: u64) -> Vec<u8> {
    format!("OK {size}\n").into_bytes()
}

/// The header line of a refusal.
pub fn err_header(reason: &str) -> Vec<u8> {
    format!("ERR {}\n", reason.replace('\n', " ")).into_bytes()
}

/// Splits a response's header line off: `Ok(Some((size, header_len)))` once
/// the line is complete, `Ok(None)` while it is still arriving.
pub fn parse_response_header(bytes: &[u8]) -> Result<Option<(u64, usize)>, ProtocolError> {
    let Some(end) = bytes.iter().position(|&b| b == b'\n') else {
        if bytes.len() > MAX_REQUEST_BYTES {
            return Err(ProtocolError::BadResponse(
                String::from_utf8_lossy(&bytes[..64]).into_owned(),
            ));
        }
        return Ok(None);
    };
    let line = String::from_utf8_lossy(&bytes[..end]);
    if let Some(reason) = line.strip_prefix("ERR ") {
        return Err(ProtocolError::Refused(reason.to_string()));
    }
    match line.strip_prefix("OK ").map(str::parse::<u64>) {
        Some(Ok(size)) => Ok(Some((size, end + 1))),
        _ => Err(ProtocolError::BadResponse(line.into_owned())),
    }
}

/// `path` under `root`, refusing absolute paths, `..` and symlinks that
/// lead out of `root`.
pub fn resolve(root: &Path, path: &str) -> Result<PathBuf, ProtocolError> {
    let outside = || ProtocolError::OutsideRoot(path.to_string());
    let relative = Path::new(path.trim_start_matches('/'));
    if relative
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(outside());
    }
    let root = root.canonicalize().map_err(|_| outside())?;
    let full = root.join(relative).canonicalize().map_err(|_| outside())?;
    if full.starts_with(&root) {
        Ok(full)
    } else {
        Err(outside())
    }
}

/// The data sender's counters for one connection, as the STATS response
/// carries them (quiche's names in the doc comments).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SenderCounters {
    /// `Stats::retrans`.
    pub retransmitted_packets: u64,
    /// `Stats::lost`.
    pub lost_packets: u64,
    /// `PathStats::total_pto_count`.
    pub ptos: u64,
    /// `PathStats::rtt`, microseconds.
    pub srtt_us: u64,
    /// `PathStats::cwnd`, bytes.
    pub cwnd: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip_through_their_encoding() {
        for request in [Request::Get("dir/big.bin".into()), Request::Stats] {
            assert_eq!(Request::parse(&request.encode()).unwrap(), request);
        }
    }

    #[test]
    fn garbage_and_oversized_requests_are_refused() {
        assert!(matches!(
            Request::parse(b"PUT x\n"),
            Err(ProtocolError::BadRequest(_))
        ));
        assert!(Request::parse(b"GET \n").is_err());
        assert_eq!(
            Request::parse(&vec![b'a'; MAX_REQUEST_BYTES + 1]),
            Err(ProtocolError::RequestTooLong)
        );
    }

    #[test]
    fn response_header_waits_for_its_newline_then_gives_size_and_length() {
        assert_eq!(parse_response_header(b"OK 12"), Ok(None));
        assert_eq!(parse_response_header(b"OK 12\nabc"), Ok(Some((12, 6))));
        assert_eq!(
            parse_response_header(b"ERR no such file\n"),
            Err(ProtocolError::Refused("no such file".into()))
        );
        assert!(parse_response_header(b"HELLO\n").is_err());
    }

    #[test]
    fn paths_that_leave_the_root_are_refused() {
        let root =
            std::env::temp_dir().join(format!("sift-interop-resolve-{}", std::process::id()));
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/file"), b"x").unwrap();
        assert_eq!(
            resolve(&root, "/sub/file").unwrap(),
            root.canonicalize().unwrap().join("sub/file")
        );
        for bad in ["../etc/passwd", "sub/../../x", "missing"] {
            assert!(resolve(&root, bad).is_err(), "{bad:?} was accepted");
        }
        std::fs::remove_dir_all(&root).unwrap();
    }
}
