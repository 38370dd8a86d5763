//! The file protocol (ALPN `sift-interop/1`) of the comparison's bulk
//! peers, one request per bidirectional stream:
//!
//! - `GET <path>\n` → `OK <size>\n` then exactly `size` bytes of the file,
//!   then FIN; or `ERR <reason>\n`, FIN.
//! - `STATS\n` → `OK <len>\n` then the sender's counters as JSON
//!   ([`SenderCounters`]), taken once the client has the whole file.
//!
//! Paths are relative to the server's root ([`files::resolve`] refuses
//! anything that would leave it). What every stack's server and client
//! share beyond the wire: the [`Answer`] to a request, the [`Response`]
//! read into a download, the [`FlowReport`] made of it, and the summary a
//! client prints without `--json`. The timing matches `sift-client`: from
//! sending the request to the verified file.

use std::fs::File;
use std::path::Path;

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};

use super::files::{self, Download, FileReport};
use crate::flow::{goodput_bps, FlowReport, QUIC_V1};

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

/// What a server sends on a request's stream.
pub enum Answer {
    /// `OK <size>`, then the file's bytes.
    File {
        /// The path asked for.
        path: String,
        /// The file, open.
        file: File,
        /// Its length, announced in the header.
        size: u64,
    },
    /// A whole response held in memory: the counters, or a refusal.
    Whole(Vec<u8>),
}

impl Answer {
    /// The answer to `request` for a server of `root`; `counters` are the
    /// sender's, asked for only by `STATS`.
    pub fn to(
        request: Result<Request, ProtocolError>,
        root: &Path,
        counters: impl FnOnce() -> SenderCounters,
    ) -> Self {
        let refusal = |reason: String| Answer::Whole(err_header(&reason));
        match request {
            Err(e) => refusal(e.to_string()),
            Ok(Request::Stats) => {
                let body = serde_json::to_vec(&counters()).unwrap_or_default();
                let mut whole = ok_header(body.len() as u64);
                whole.extend_from_slice(&body);
                Answer::Whole(whole)
            }
            Ok(Request::Get(path)) => {
                let opened = files::resolve(root, &path)
                    .map_err(|e| e.to_string())
                    .and_then(|full| {
                        let file = File::open(&full).map_err(|e| format!("{path}: {e}"))?;
                        let metadata = file.metadata().map_err(|e| format!("{path}: {e}"))?;
                        if !metadata.is_file() {
                            return Err(format!("{path} is not a file"));
                        }
                        Ok((file, metadata.len()))
                    });
                match opened {
                    Ok((file, size)) => Answer::File { path, file, size },
                    Err(reason) => refusal(reason),
                }
            }
        }
    }

    /// What goes first on the stream: the header, or the whole response.
    pub fn head(&self) -> Vec<u8> {
        match self {
            Answer::File { size, .. } => ok_header(*size),
            Answer::Whole(bytes) => bytes.clone(),
        }
    }
}

/// A response arriving in pieces: its header line, then the body,
/// written into a download.
#[derive(Debug, Default)]
pub struct Response {
    header: Vec<u8>,
    size: Option<u64>,
}

impl Response {
    /// Takes the next piece of the stream: header bytes until the line
    /// ends, then body bytes into `download`.
    pub fn take(&mut self, bytes: &[u8], download: &mut Download) -> anyhow::Result<()> {
        if self.size.is_some() {
            return download.write(bytes);
        }
        self.header.extend_from_slice(bytes);
        if let Some((size, header_len)) = parse_response_header(&self.header)? {
            self.size = Some(size);
            let body = self.header.split_off(header_len);
            download.write(&body)?;
        }
        Ok(())
    }

    /// The stream ended: the body must be as long as the header said.
    pub fn end(&self, download: &Download) -> anyhow::Result<()> {
        let Some(size) = self.size else {
            bail!("server ended the response before its header");
        };
        if download.bytes() != size {
            bail!(
                "server announced {size} bytes and sent {}",
                download.bytes()
            );
        }
        Ok(())
    }
}

/// The sender's counters from a whole `STATS` response.
pub fn parse_counters(response: &[u8]) -> anyhow::Result<SenderCounters> {
    let Some((_, header_len)) = parse_response_header(response)? else {
        bail!("server's counters came without a header");
    };
    serde_json::from_slice(&response[header_len..]).context("server's counters are not JSON")
}

/// The report of a download: this client's timing and hash, the server's
/// counters, the controller `cc` the server was asked to run.
pub fn flow_report(file: &FileReport, counters: &SenderCounters, cc: &str) -> FlowReport {
    let completion_s = file.elapsed_us as f64 / 1e6;
    FlowReport {
        id: 0,
        path: file.path.clone(),
        cc: cc.to_string(),
        corruption_notices: false,
        bytes: file.bytes,
        completion_s,
        goodput_bps: goodput_bps(file.bytes, completion_s),
        retransmitted_packets: counters.retransmitted_packets,
        ptos: counters.ptos,
        corruption_notices_received: 0,
        srtt_us: counters.srtt_us,
        cwnd: counters.cwnd,
        lost_packets: Some(counters.lost_packets),
        sha256: file.sha256.clone(),
        version: Some(QUIC_V1.to_string()),
    }
}

/// Prints a client's report: one JSON object with `json`, else a summary
/// of the download into `output`.
pub fn print(report: &FlowReport, output: &Path, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string(report)?);
    } else {
        println!(
            "get {} ({})\n  bytes        {}\n  time         {:.2} s\n  goodput      {:.2} Mb/s\n  retransmits  {} packets, {} lost, {} PTOs (sender)\n  srtt         {:.1} ms\n  cwnd         {} bytes\n  cc           {}\n  sha256       {}",
            report.path,
            output.display(),
            report.bytes,
            report.completion_s,
            report.goodput_bps / 1e6,
            report.retransmitted_packets,
            report.lost_packets.unwrap_or(0),
            report.ptos,
            report.srtt_us as f64 / 1000.0,
            report.cwnd,
            report.cc,
            report.sha256
        );
    }
    Ok(())
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
    fn a_response_in_pieces_fills_the_download_and_must_be_whole() {
        let dir =
            std::env::temp_dir().join(format!("sift-interop-response-{}", std::process::id()));
        let mut download = Download::under(&dir, "f", files::UNBUFFERED).unwrap();
        let mut response = Response::default();
        for piece in [
            &b"OK"[..],
            b" 5
ab",
            b"cde",
        ] {
            response.take(piece, &mut download).unwrap();
        }
        response.end(&download).unwrap();
        assert_eq!(download.finish().unwrap().bytes, 5);
        let mut short = Download::under(&dir, "g", files::UNBUFFERED).unwrap();
        let mut response = Response::default();
        response
            .take(
                b"OK 9
abc",
                &mut short,
            )
            .unwrap();
        assert!(response.end(&short).is_err());
        assert!(Response::default().end(&short).is_err(), "no header at all");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn stats_answer_with_the_counters_a_client_reads_back() {
        let counters = SenderCounters {
            retransmitted_packets: 3,
            ptos: 1,
            ..Default::default()
        };
        let answer = Answer::to(Ok(Request::Stats), Path::new("/"), || counters);
        assert_eq!(parse_counters(&answer.head()).unwrap(), counters);
        let refused = Answer::to(Ok(Request::Get("../x".into())), Path::new("/tmp"), || {
            counters
        });
        assert!(String::from_utf8_lossy(&refused.head()).starts_with("ERR "));
    }
}
