//! The server's answers: a response header, and after a download's data the
//! file's digest (when the response did not carry it) and a trailer with
//! the sender's statistics.
//!
//! Response body: `status u8, size u64, has_digest u8, [sha256 32], message`.
//! Digest body: `sha256 32`. A server that knows a file's digest (it hashed
//! that version before) puts it in the response; otherwise it hashes the
//! bytes as it sends them and sends the digest after them, so the first
//! byte of a large file never waits for a pass over the whole file.
//! Trailer body: the sender's [`SenderReport`] as JSON.

use serde::{Deserialize, Serialize};

use super::digest::{Sha256Digest, SHA256_LEN};
use super::error::ProtocolError;
use super::frame::{encode_frame, put_string, split_frame, BodyReader, FrameKind, MAX_BODY_LEN};

/// How a request went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Done (or, before an upload's data, "go ahead").
    Ok = 0,
    /// No such file or directory under the root.
    NotFound = 1,
    /// The path leaves the root or names something the server will not serve.
    RefusedPath = 2,
    /// The request or the upload is larger than the server accepts.
    TooLarge = 3,
    /// The server's disk is full; nothing was kept.
    DiskFull = 4,
    /// The uploaded bytes do not have the announced SHA-256; nothing was kept.
    HashMismatch = 5,
    /// Something failed on the server.
    Internal = 6,
    /// The request did not parse, or asks for something impossible
    /// (e.g. a resume offset past the end of the file).
    BadRequest = 7,
    /// The request names a congestion controller this server does not run
    /// for clients (unknown, or not in its `--accept-cc` list).
    RefusedController = 8,
    /// The server takes no upload from this client now: it is read-only,
    /// the client's key is not authorised, or too much is being uploaded
    /// at once.
    RefusedUpload = 9,
}

impl Status {
    /// The status for a wire byte, if it names one.
    pub fn from_byte(byte: u8) -> Option<Self> {
        Some(match byte {
            0 => Self::Ok,
            1 => Self::NotFound,
            2 => Self::RefusedPath,
            3 => Self::TooLarge,
            4 => Self::DiskFull,
            5 => Self::HashMismatch,
            6 => Self::Internal,
            7 => Self::BadRequest,
            8 => Self::RefusedController,
            9 => Self::RefusedUpload,
            _ => return None,
        })
    }

    /// A short lowercase name for logs and errors.
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::NotFound => "not found",
            Status::RefusedPath => "refused path",
            Status::TooLarge => "too large",
            Status::DiskFull => "disk full",
            Status::HashMismatch => "hash mismatch",
            Status::Internal => "internal error",
            Status::BadRequest => "bad request",
            Status::RefusedController => "refused controller",
            Status::RefusedUpload => "upload refused",
        }
    }
}

/// A response header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    pub status: Status,
    /// GET: the whole file's size; LIST: the listing's size; PUT: bytes kept.
    pub size: u64,
    /// SHA-256 of the whole file (or listing), when there is one.
    pub sha256: Option<Sha256Digest>,
    /// For a person: why it failed, or empty.
    pub message: String,
}

/// Responses carry at most this many bytes of message; longer ones are cut.
const MAX_MESSAGE_LEN: usize = 1024;

impl Response {
    /// A success carrying `size` and the digest.
    pub fn ok(size: u64, sha256: Option<Sha256Digest>) -> Self {
        Self {
            status: Status::Ok,
            size,
            sha256,
            message: String::new(),
        }
    }

    /// A failure with a message.
    pub fn error(status: Status, message: impl Into<String>) -> Self {
        Self {
            status,
            size: 0,
            sha256: None,
            message: message.into(),
        }
    }

    /// The response as one frame (messages over 1 KiB are cut at a
    /// character boundary).
    pub fn encode(&self) -> Result<Vec<u8>, ProtocolError> {
        let mut body = vec![self.status as u8];
        body.extend_from_slice(&self.size.to_be_bytes());
        match self.sha256 {
            Some(digest) => {
                body.push(1);
                body.extend_from_slice(&digest.0);
            }
            None => body.push(0),
        }
        let mut cut = self.message.len().min(MAX_MESSAGE_LEN);
        while !self.message.is_char_boundary(cut) {
            cut -= 1;
        }
        put_string(&mut body, &self.message[..cut], "message")?;
        encode_frame(FrameKind::Response, &body)
    }
}

/// Parses one complete response frame. Never panics.
pub fn parse_response(bytes: &[u8]) -> Result<Response, ProtocolError> {
    let body = expect_kind(bytes, FrameKind::Response, "response")?;
    let mut reader = BodyReader::new(body);
    let status_byte = reader.u8()?;
    let status = Status::from_byte(status_byte).ok_or(ProtocolError::BadValue {
        field: "status",
        value: status_byte.into(),
    })?;
    let size = reader.u64()?;
    let sha256 = match reader.u8()? {
        0 => None,
        1 => {
            let mut digest = [0u8; SHA256_LEN];
            digest.copy_from_slice(reader.take(SHA256_LEN)?);
            Some(Sha256Digest(digest))
        }
        other => {
            return Err(ProtocolError::BadValue {
                field: "digest flag",
                value: other.into(),
            })
        }
    };
    let message = reader.string("message")?;
    reader.finish()?;
    Ok(Response {
        status,
        size,
        sha256,
        message,
    })
}

fn expect_kind<'a>(
    bytes: &'a [u8],
    wanted: FrameKind,
    name: &'static str,
) -> Result<&'a [u8], ProtocolError> {
    let (kind, body) = split_frame(bytes)?;
    if kind != wanted {
        return Err(ProtocolError::UnexpectedKind {
            expected: name,
            found: kind as u8,
        });
    }
    Ok(body)
}

/// The data sender's view of the transfer, sent by the server after a
/// download's data so the client can report the sender-side counters
/// (retransmissions happen at the sender). Fields follow DESIGN §11's names.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SenderReport {
    /// The sender's congestion controller.
    pub cc: String,
    /// Both sides negotiated corruption notices.
    pub corruption_notices: bool,
    /// The version the connection ran ("sift/1", "QUIC v1").
    #[serde(default)]
    pub version: String,
    pub retransmitted_packets: u64,
    pub ptos: u64,
    pub corruption_notices_received: u64,
    /// Congestion window at the end, bytes.
    pub cwnd: u64,
    /// Smoothed RTT at the end, microseconds.
    pub srtt_us: u64,
    /// The largest datagram the sender sent at the end, bytes (where path
    /// MTU discovery settled). 0 from a sender that did not say.
    #[serde(default)]
    pub max_datagram_size: u64,
    /// Path MTU probes the sender sent, and of them lost.
    #[serde(default)]
    pub pmtu_probes_sent: u64,
    #[serde(default)]
    pub pmtu_probes_lost: u64,
    /// Path MTU black holes the sender detected.
    #[serde(default)]
    pub pmtu_black_holes: u64,
    /// Datagrams the sender sent without a UDP checksum (corruption
    /// notices negotiated and the path impaired: `conn::checksums`); such
    /// datagrams leave one per system call, without segmentation offload.
    #[serde(default)]
    pub checksum_free_datagrams: u64,
    /// Careful Resume (RFC 9959), when the sender resumed from a saved
    /// path state: its phase, the saved and jump windows, whether it
    /// jumped and whether it retreated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub careful_resume: Option<sift_cc::CarefulResumeStatus>,
    /// Where the sender's time went: busy, or held back by the window,
    /// the pacer, the receiver's credit or the application (zero from a
    /// sender that did not say).
    #[serde(default)]
    pub send_times: sift::conn::SendTimes,
    /// The sender's ECN (RFC 9000 §13.4): its path's validation state, the
    /// packets it sent and received per codepoint, and the CE marks the
    /// receiver reported (state `testing` and zero counts from a sender
    /// that did not say).
    #[serde(default)]
    pub ecn: sift::conn::ecn::EcnStats,
    /// The sender's erasure coding (docs/repair.md): negotiated, repair
    /// symbols and bytes sent, packets the receiver rebuilt (zero from a
    /// sender that did not say).
    #[serde(default)]
    pub repair: sift::conn::fec::RepairStats,
}

impl SenderReport {
    /// The report from a connection's statistics.
    pub fn from_stats(stats: &sift::Stats) -> Self {
        Self {
            cc: stats.cc.algorithm.clone(),
            corruption_notices: stats.corruption_notices_negotiated,
            version: stats.version.clone(),
            retransmitted_packets: stats.retransmitted_packets,
            ptos: stats.ptos,
            corruption_notices_received: stats.corruption_notices_received,
            cwnd: stats.cwnd,
            srtt_us: stats.srtt_us,
            max_datagram_size: stats.max_datagram_size,
            pmtu_probes_sent: stats.pmtu_probes_sent,
            pmtu_probes_lost: stats.pmtu_probes_lost,
            pmtu_black_holes: stats.pmtu_black_holes,
            checksum_free_datagrams: stats.checksum_free_datagrams,
            careful_resume: stats.careful_resume,
            send_times: stats.send_times,
            ecn: stats.ecn,
            repair: stats.repair.clone(),
        }
    }

    /// The report as a trailer frame.
    pub fn encode(&self) -> Result<Vec<u8>, ProtocolError> {
        let json =
            serde_json::to_vec(self).map_err(|e| ProtocolError::BadTrailer(e.to_string()))?;
        if json.len() > MAX_BODY_LEN {
            return Err(ProtocolError::TooLarge {
                len: json.len(),
                max: MAX_BODY_LEN,
            });
        }
        encode_frame(FrameKind::Trailer, &json)
    }
}

/// A digest frame.
pub fn encode_digest(digest: Sha256Digest) -> Result<Vec<u8>, ProtocolError> {
    encode_frame(FrameKind::Digest, &digest.0)
}

/// Parses one complete digest frame. Never panics.
pub fn parse_digest(bytes: &[u8]) -> Result<Sha256Digest, ProtocolError> {
    let body = expect_kind(bytes, FrameKind::Digest, "digest")?;
    let digest: [u8; SHA256_LEN] = body.try_into().map_err(|_| ProtocolError::MissingDigest)?;
    Ok(Sha256Digest(digest))
}

/// Parses one complete trailer frame. Never panics.
pub fn parse_trailer(bytes: &[u8]) -> Result<SenderReport, ProtocolError> {
    let body = expect_kind(bytes, FrameKind::Trailer, "trailer")?;
    serde_json::from_slice(body).map_err(|e| ProtocolError::BadTrailer(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transfer::digest::sha256;

    #[test]
    fn digests_round_trip_and_a_short_one_is_an_error() {
        let digest = sha256(b"file");
        assert_eq!(
            parse_digest(&encode_digest(digest).unwrap()).unwrap(),
            digest
        );
        let short = encode_frame(FrameKind::Digest, &[1; 31]).unwrap();
        assert!(matches!(
            parse_digest(&short),
            Err(ProtocolError::MissingDigest)
        ));
        let trailer = encode_frame(FrameKind::Trailer, b"{}").unwrap();
        assert!(matches!(
            parse_digest(&trailer),
            Err(ProtocolError::UnexpectedKind { .. })
        ));
    }

    #[test]
    fn responses_round_trip_with_and_without_digest() {
        for response in [
            Response::ok(5_000_000, Some(sha256(b"file"))),
            Response::ok(0, None),
            Response::error(
                Status::RefusedPath,
                "path \"../x\" leaves the served directory",
            ),
            Response::error(Status::DiskFull, ""),
        ] {
            assert_eq!(
                parse_response(&response.encode().unwrap()).unwrap(),
                response
            );
        }
    }

    #[test]
    fn every_status_byte_round_trips() {
        for byte in 0..=9u8 {
            assert_eq!(Status::from_byte(byte).unwrap() as u8, byte);
        }
        assert_eq!(Status::from_byte(10), None);
    }

    #[test]
    fn a_long_message_is_cut_on_a_character_boundary() {
        // 600 two-byte characters = 1200 bytes; the cut at 1024 falls on a boundary (512 chars).
        let response = Response::error(Status::Internal, "é".repeat(600));
        let parsed = parse_response(&response.encode().unwrap()).unwrap();
        assert_eq!(parsed.message.len(), 1024);
    }

    #[test]
    fn an_unknown_status_or_digest_flag_is_an_error() {
        let mut frame = Response::ok(1, None).encode().unwrap();
        frame[8] = 99;
        assert!(matches!(
            parse_response(&frame),
            Err(ProtocolError::BadValue {
                field: "status",
                value: 99
            })
        ));
        let mut frame = Response::ok(1, None).encode().unwrap();
        frame[17] = 2;
        assert!(matches!(
            parse_response(&frame),
            Err(ProtocolError::BadValue {
                field: "digest flag",
                value: 2
            })
        ));
    }

    #[test]
    fn trailer_round_trips_and_rejects_non_json() {
        let report = SenderReport {
            cc: "veno".into(),
            corruption_notices: true,
            version: "sift/1".into(),
            retransmitted_packets: 12,
            ptos: 1,
            corruption_notices_received: 3,
            cwnd: 40_000,
            srtt_us: 51_000,
            max_datagram_size: 1472,
            pmtu_probes_sent: 7,
            pmtu_probes_lost: 3,
            pmtu_black_holes: 0,
            checksum_free_datagrams: 0,
            careful_resume: None,
            send_times: sift::conn::SendTimes {
                busy_us: 1_000,
                credit_limited_us: 20,
                ..Default::default()
            },
            ecn: sift::conn::ecn::EcnStats {
                state: sift::conn::EcnState::Capable,
                reported_by_peer: sift::conn::EcnCounts {
                    ect0: 90,
                    ect1: 0,
                    ce: 4,
                },
                ..Default::default()
            },
            repair: Default::default(),
        };
        assert_eq!(parse_trailer(&report.encode().unwrap()).unwrap(), report);
        let garbage = encode_frame(FrameKind::Trailer, b"{not json").unwrap();
        assert!(matches!(
            parse_trailer(&garbage),
            Err(ProtocolError::BadTrailer(_))
        ));
    }
}
