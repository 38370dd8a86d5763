//! hq-interop (HTTP/0.9 over QUIC, ALPN `hq-interop`), the protocol of the
//! QUIC interop runner: the client opens one bidirectional stream per file
//! and sends `GET /path\r\n` with FIN; the server answers with the file's
//! bytes and FIN, or resets the stream when it has no such file.
//!
//! Owns what every stack's hq peer shares: the request line, the refusal's
//! code, the stream limit servers grant, the client's options (the
//! runner's client test cases) and its JSON report ([`ClientReport`]).
//! The peers themselves are `quiche::hq` and `quinn::hq` (in
//! [`crate::peers`]), run as `quiche-hq` and `quinn-hq`; sift's are
//! `sift-server` and `sift-client`.
//!
//! These peers are test tools: a client verifies the server only when given
//! `--ca`, and `--insecure` must be said out loud to verify nothing (the
//! interop runner's clients do not verify either).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::files::FileReport;
use super::url::Url;

/// The ALPN token of HTTP/0.9 over QUIC in the interop runner.
pub const ALPN: &[u8] = b"hq-interop";

/// The longest request a server reads before it gives up on the stream.
pub const MAX_REQUEST_BYTES: usize = 4096;

/// The application error a server resets a request's stream with when it
/// has no such file: hq-interop has no status line, so HTTP/3's
/// H3_REQUEST_REJECTED (RFC 9114 §8.1) stands in.
pub const NOT_FOUND_ERROR: u32 = 0x10b;

/// Stream limit servers grant at once: the multiplexing case opens
/// thousands of streams, and a higher limit lets the client keep many in
/// flight (the runner's servers raise theirs for that case too).
pub const MAX_CONCURRENT_STREAMS: u64 = 256;

/// Why a request line was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RequestError {
    /// Not `GET /path`.
    #[error("not an hq-interop request: {0:?}")]
    Malformed(String),
    /// Longer than [`MAX_REQUEST_BYTES`].
    #[error("request longer than {MAX_REQUEST_BYTES} bytes")]
    TooLong,
}

/// The request line for `path` (a leading `/` is added when missing).
pub fn request(path: &str) -> Vec<u8> {
    format!("GET /{}\r\n", path.trim_start_matches('/')).into_bytes()
}

/// The path of a request (`GET /path`, ended by CRLF, LF or the stream's
/// end), without its leading `/`.
pub fn parse_request(bytes: &[u8]) -> Result<String, RequestError> {
    if bytes.len() > MAX_REQUEST_BYTES {
        return Err(RequestError::TooLong);
    }
    let text = std::str::from_utf8(bytes)
        .map_err(|_| RequestError::Malformed(String::from_utf8_lossy(bytes).into_owned()))?;
    let line = text.split(['\r', '\n']).next().unwrap_or("");
    let path = line
        .strip_prefix("GET /")
        .filter(|p| !p.is_empty() && !p.contains(' '))
        .ok_or_else(|| RequestError::Malformed(line.to_string()))?;
    Ok(path.to_string())
}

/// What a client did, printed as one JSON object with `--json`: the same
/// field names as `sift-client --json` where they mean the same.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ClientReport {
    /// Which client (`quiche`, `quinn` or `quic-go`).
    pub stack: String,
    /// The QUIC version of the last connection.
    pub version: String,
    /// The ALPN agreed.
    pub alpn: String,
    /// Connections made (2 with `--resume` or `--zerortt`).
    pub handshakes: u32,
    /// Whether the last connection resumed a TLS session (`None`: the
    /// stack does not say).
    pub resumed: Option<bool>,
    /// Whether the server accepted the 0-RTT data (`None`: none sent, or
    /// the stack does not say).
    pub zero_rtt_accepted: Option<bool>,
    /// Key updates this client initiated.
    pub key_updates: u64,
    /// The only TLS 1.3 cipher suite offered, when restricted.
    pub cipher: Option<String>,
    /// Whether the client moved to a new local address mid-connection.
    pub migrated: bool,
    /// Every file written.
    pub files: Vec<FileReport>,
}

/// What a client may be asked to do beyond downloading (the interop
/// runner's client test cases).
#[derive(Clone, Debug, Default)]
pub struct ClientOptions {
    /// The files, all on one server.
    pub urls: Vec<Url>,
    /// Where downloads are written.
    pub output_dir: PathBuf,
    /// Trust this PEM bundle; `None` (with `--insecure`) verifies nothing.
    pub ca: Option<PathBuf>,
    /// Offer only TLS_CHACHA20_POLY1305_SHA256.
    pub chacha20: bool,
    /// Initiate a 1-RTT key update once data flows.
    pub key_update: bool,
    /// Fetch the first URL on one connection, the rest on a second that
    /// resumes the first's TLS session.
    pub resume: bool,
    /// As `resume`, with the second connection's requests in 0-RTT.
    pub zero_rtt: bool,
    /// Move to a new local port once data flows (active migration).
    pub migrate: bool,
}

impl ClientOptions {
    /// The URLs of each connection: all on one, or the first alone and the
    /// rest on a second when resuming.
    pub fn connections(&self) -> Vec<&[Url]> {
        if (self.resume || self.zero_rtt) && self.urls.len() > 1 {
            vec![&self.urls[..1], &self.urls[1..]]
        } else {
            vec![&self.urls[..]]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_lines_round_trip_and_end_at_crlf_lf_or_fin() {
        assert_eq!(request("/a/b.bin"), b"GET /a/b.bin\r\n");
        assert_eq!(parse_request(&request("f")).unwrap(), "f");
        assert_eq!(parse_request(b"GET /x\n").unwrap(), "x");
        assert_eq!(parse_request(b"GET /x").unwrap(), "x");
    }

    #[test]
    fn requests_other_than_get_of_a_path_are_refused() {
        for bad in [
            &b"PUT /x\r\n"[..],
            b"GET x\r\n",
            b"GET /\r\n",
            b"GET /a b\r\n",
        ] {
            assert!(parse_request(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            parse_request(&[b'a'; MAX_REQUEST_BYTES + 1]),
            Err(RequestError::TooLong)
        );
    }

    #[test]
    fn resuming_clients_fetch_the_first_file_alone_then_the_rest() {
        let url = |p: &str| Url {
            host: "h".into(),
            authority: "h:1".into(),
            address: "127.0.0.1:1".parse().unwrap(),
            path: p.into(),
        };
        let mut options = ClientOptions {
            urls: vec![url("a"), url("b"), url("c")],
            ..Default::default()
        };
        assert_eq!(options.connections().len(), 1);
        options.resume = true;
        let split = options.connections();
        assert_eq!((split[0].len(), split[1].len()), (1, 2));
    }
}
