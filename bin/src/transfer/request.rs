//! Requests: one per bidirectional stream, the first frame the client sends.
//!
//! Bodies (all integers big-endian, strings u16-length-prefixed UTF-8):
//! ```text
//! GET   path, offset u64 [, cc]          resume a download from `offset`;
//!                                        `cc`, if present, names the
//!                                        controller the server should send
//!                                        the file with
//! PUT   path, size u64, sha256 [32]      upload `size` bytes whose digest is `sha256`
//! LIST  path                             a directory listing (or one file's entry)
//! PERF  direction u8, limit u8, value u64
//!         direction 0: the client sends, the server sinks
//!         direction 1: the server sends, the client sinks
//!         limit 0: `value` milliseconds; limit 1: `value` bytes
//! ```

use std::time::Duration;

use super::digest::{Sha256Digest, SHA256_LEN};
use super::error::ProtocolError;
use super::frame::{encode_frame, put_string, split_frame, BodyReader, FrameKind};

/// Who sends the data of a PERF measurement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PerfDirection {
    /// The client sends, the server counts and discards (iperf3's default).
    Upload,
    /// The server sends, the client counts and discards (iperf3's `-R`).
    Download,
}

/// When a PERF measurement's sender stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PerfLimit {
    /// After this long.
    Duration(Duration),
    /// After this many bytes.
    Bytes(u64),
}

/// A client request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// Download `path`, starting at byte `offset` (resume), with the
    /// server's data under controller `cc` (a `--cc` name) if one is asked.
    Get {
        path: String,
        offset: u64,
        cc: Option<String>,
    },
    /// Upload `size` bytes to `path`; the server keeps them only if their
    /// SHA-256 is `sha256`.
    Put {
        path: String,
        size: u64,
        sha256: Sha256Digest,
    },
    /// List the directory (or the file) at `path`.
    List { path: String },
    /// A throughput measurement.
    Perf {
        direction: PerfDirection,
        limit: PerfLimit,
    },
}

impl Request {
    /// The request's verb, for logs.
    pub fn verb(&self) -> &'static str {
        match self {
            Request::Get { .. } => "GET",
            Request::Put { .. } => "PUT",
            Request::List { .. } => "LIST",
            Request::Perf { .. } => "PERF",
        }
    }

    /// Whether the server may act on it before the handshake completes,
    /// when it may be 0-RTT data an attacker replays (RFC 8446 §8): a
    /// download or a listing only reads, so serving it twice harms no one
    /// (RFC 8470's reasoning for HTTP's GET); an upload writes, and PERF
    /// makes the server generate data for as long as it asks.
    pub fn replay_safe(&self) -> bool {
        matches!(self, Request::Get { .. } | Request::List { .. })
    }

    /// The path it names (PERF names none).
    pub fn path(&self) -> &str {
        match self {
            Request::Get { path, .. } | Request::Put { path, .. } | Request::List { path } => path,
            Request::Perf { .. } => "",
        }
    }

    /// The request as one frame.
    pub fn encode(&self) -> Result<Vec<u8>, ProtocolError> {
        let mut body = Vec::new();
        let kind = match self {
            Request::Get { path, offset, cc } => {
                put_string(&mut body, path, "path")?;
                body.extend_from_slice(&offset.to_be_bytes());
                if let Some(cc) = cc {
                    put_string(&mut body, cc, "controller")?;
                }
                FrameKind::Get
            }
            Request::Put { path, size, sha256 } => {
                put_string(&mut body, path, "path")?;
                body.extend_from_slice(&size.to_be_bytes());
                body.extend_from_slice(&sha256.0);
                FrameKind::Put
            }
            Request::List { path } => {
                put_string(&mut body, path, "path")?;
                FrameKind::List
            }
            Request::Perf { direction, limit } => {
                body.push(match direction {
                    PerfDirection::Upload => 0,
                    PerfDirection::Download => 1,
                });
                let (limit_kind, value) = match limit {
                    PerfLimit::Duration(d) => {
                        (0u8, u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
                    }
                    PerfLimit::Bytes(n) => (1u8, *n),
                };
                body.push(limit_kind);
                body.extend_from_slice(&value.to_be_bytes());
                FrameKind::Perf
            }
        };
        encode_frame(kind, &body)
    }
}

/// Parses one complete request frame. Never panics; anything malformed,
/// oversized, of another version or with bytes left over is an error.
pub fn parse_request(bytes: &[u8]) -> Result<Request, ProtocolError> {
    let (kind, body) = split_frame(bytes)?;
    let mut reader = BodyReader::new(body);
    let request = match kind {
        FrameKind::Get => Request::Get {
            path: reader.string("path")?,
            offset: reader.u64()?,
            // Optional and last: a request without it is an older client's.
            cc: if reader.is_empty() {
                None
            } else {
                Some(reader.string("controller")?)
            },
        },
        FrameKind::Put => {
            let path = reader.string("path")?;
            let size = reader.u64()?;
            let mut digest = [0u8; SHA256_LEN];
            digest.copy_from_slice(reader.take(SHA256_LEN)?);
            Request::Put {
                path,
                size,
                sha256: Sha256Digest(digest),
            }
        }
        FrameKind::List => Request::List {
            path: reader.string("path")?,
        },
        FrameKind::Perf => {
            let direction = match reader.u8()? {
                0 => PerfDirection::Upload,
                1 => PerfDirection::Download,
                other => {
                    return Err(ProtocolError::BadValue {
                        field: "perf direction",
                        value: other.into(),
                    })
                }
            };
            let limit_kind = reader.u8()?;
            let value = reader.u64()?;
            let limit = match limit_kind {
                0 => PerfLimit::Duration(Duration::from_millis(value)),
                1 => PerfLimit::Bytes(value),
                other => {
                    return Err(ProtocolError::BadValue {
                        field: "perf limit",
                        value: other.into(),
                    })
                }
            };
            Request::Perf { direction, limit }
        }
        FrameKind::Response | FrameKind::Trailer | FrameKind::Digest => {
            return Err(ProtocolError::UnexpectedKind {
                expected: "request",
                found: kind as u8,
            })
        }
    };
    reader.finish()?;
    Ok(request)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transfer::digest::sha256;
    use crate::transfer::frame::{MAGIC, MAX_FRAME_LEN, VERSION};
    use proptest::prelude::*;

    fn examples() -> Vec<Request> {
        vec![
            Request::Get {
                path: "dir/file.bin".into(),
                offset: 0,
                cc: None,
            },
            Request::Get {
                path: "ünïcode name".into(),
                offset: u64::MAX,
                cc: Some("bbr".into()),
            },
            Request::Put {
                path: "up.bin".into(),
                size: 5_000_000,
                sha256: sha256(b"x"),
            },
            Request::List { path: "".into() },
            Request::Perf {
                direction: PerfDirection::Download,
                limit: PerfLimit::Duration(Duration::from_secs(2)),
            },
            Request::Perf {
                direction: PerfDirection::Upload,
                limit: PerfLimit::Bytes(1 << 30),
            },
        ]
    }

    #[test]
    fn every_request_kind_round_trips() {
        for request in examples() {
            let frame = request.encode().unwrap();
            assert_eq!(parse_request(&frame).unwrap(), request);
        }
    }

    #[test]
    fn get_frame_layout_is_as_documented() {
        let frame = Request::Get {
            path: "a".into(),
            offset: 7,
            cc: None,
        }
        .encode()
        .unwrap();
        // prefix 8 + path length 2 + "a" 1 + offset 8 = 19 bytes; body 11.
        assert_eq!(
            frame,
            [b'S', b'I', b'F', b'T', 1, 1, 0, 11, 0, 1, b'a', 0, 0, 0, 0, 0, 0, 0, 7]
        );
        // A requested controller follows as one more string: body 11 + 5.
        let with_cc = Request::Get {
            path: "a".into(),
            offset: 7,
            cc: Some("bbr".into()),
        }
        .encode()
        .unwrap();
        assert_eq!(with_cc[..8], [b'S', b'I', b'F', b'T', 1, 1, 0, 16]);
        assert_eq!(with_cc[19..], [0, 3, b'b', b'b', b'r']);
    }

    #[test]
    fn garbage_is_rejected_with_a_reason() {
        assert!(matches!(
            parse_request(b""),
            Err(ProtocolError::Truncated { .. })
        ));
        assert!(matches!(
            parse_request(b"GET /etc/passwd HTTP/1.1\r\n"),
            Err(ProtocolError::BadMagic { .. })
        ));
        let mut wrong_version = MAGIC.to_vec();
        wrong_version.extend_from_slice(&[9, 1, 0, 0]);
        assert!(matches!(
            parse_request(&wrong_version),
            Err(ProtocolError::UnsupportedVersion { version: 9, .. })
        ));
        let mut unknown = MAGIC.to_vec();
        unknown.extend_from_slice(&[VERSION, 0x42, 0, 0]);
        assert!(matches!(
            parse_request(&unknown),
            Err(ProtocolError::UnknownKind { kind: 0x42 })
        ));
    }

    #[test]
    fn a_path_longer_than_its_frame_is_truncated_not_a_panic() {
        // Body claims a 500-byte path but carries 3 bytes.
        let mut frame = MAGIC.to_vec();
        frame.extend_from_slice(&[
            VERSION,
            FrameKind::List as u8,
            0,
            5,
            0x01,
            0xf4,
            b'a',
            b'b',
            b'c',
        ]);
        assert!(matches!(
            parse_request(&frame),
            Err(ProtocolError::Truncated { .. })
        ));
    }

    #[test]
    fn invalid_utf8_paths_and_bad_perf_fields_are_refused() {
        let mut frame = MAGIC.to_vec();
        frame.extend_from_slice(&[VERSION, FrameKind::List as u8, 0, 3, 0, 1, 0xff]);
        assert!(matches!(
            parse_request(&frame),
            Err(ProtocolError::NotUtf8 { field: "path" })
        ));
        let mut perf = MAGIC.to_vec();
        perf.extend_from_slice(&[
            VERSION,
            FrameKind::Perf as u8,
            0,
            10,
            7,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            0,
            1,
        ]);
        assert!(matches!(
            parse_request(&perf),
            Err(ProtocolError::BadValue {
                field: "perf direction",
                value: 7
            })
        ));
    }

    #[test]
    fn responses_are_not_requests() {
        let frame = encode_frame(FrameKind::Response, &[]).unwrap();
        assert!(matches!(
            parse_request(&frame),
            Err(ProtocolError::UnexpectedKind { found: 0x80, .. })
        ));
    }

    #[test]
    fn a_path_too_long_for_one_frame_cannot_be_encoded() {
        let request = Request::List {
            path: "p".repeat(MAX_FRAME_LEN),
        };
        assert!(matches!(
            request.encode(),
            Err(ProtocolError::TooLarge { .. })
        ));
    }

    proptest! {
        #[test]
        fn parse_request_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = parse_request(&bytes);
        }

        #[test]
        fn parse_request_never_panics_behind_a_valid_prefix(
            kind in 0u8..6, body in proptest::collection::vec(any::<u8>(), 0..64)
        ) {
            let mut frame = MAGIC.to_vec();
            frame.extend_from_slice(&[VERSION, kind, 0, body.len() as u8]);
            frame.extend_from_slice(&body);
            let _ = parse_request(&frame);
        }

        #[test]
        fn get_round_trips(
            path in "\\PC{0,40}",
            offset in any::<u64>(),
            cc in proptest::option::of("[a-z-]{0,16}"),
        ) {
            let request = Request::Get { path, offset, cc };
            prop_assert_eq!(parse_request(&request.encode().unwrap()).unwrap(), request);
        }
    }
}
