//! The client side of GET, PUT and LIST over one stream.
//!
//! A download goes to `FILE.sift-part` and is renamed to `FILE` only when
//! the SHA-256 of the whole file matches the server's; an interrupted one
//! keeps the partial file, and a resume continues it from its length.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use thiserror::Error;

use super::buffers::{CHUNK_LEN, DOWNLOAD_READ_LEN};
use super::cached_read::read_at;
use super::digest::{sha256, Sha256Digest, Sha256Hasher};
use super::duplex::{abort_codes, read_to_sink, reset_code, Duplex, ReadToSinkError};
use super::error::ProtocolError;
use super::frame::read_frame;
use super::listing::ListEntry;
use super::part_file::DownloadPart;
use super::request::Request;
use super::response::{
    parse_digest, parse_response, parse_trailer, Response, SenderReport, Status,
};

/// A listing larger than this is refused rather than held in memory.
pub const MAX_LISTING_LEN: u64 = 64 * 1024 * 1024;

/// Why a client operation failed. Each message is one line for a person.
#[derive(Debug, Error)]
pub enum ClientError {
    #[error("{}", server_refusal(*status, message))]
    Server { status: Status, message: String },
    #[error(
        "transfer interrupted after {received} of {expected} bytes ({reason}); {}",
        partial.interrupted_note()
    )]
    Interrupted {
        received: u64,
        expected: u64,
        partial: DownloadPart,
        reason: String,
    },
    #[error("SHA-256 mismatch: the server announced {expected}, the received file has {actual}; {} removed", partial.display())]
    HashMismatch {
        expected: Sha256Digest,
        actual: Sha256Digest,
        partial: PathBuf,
    },
    #[error("{context}: {error}")]
    Local { context: String, error: io::Error },
    #[error("connection lost: {0}")]
    Connection(String),
    #[error("bad answer from the server: {0}")]
    Protocol(ProtocolError),
}

/// A refusal from the server as one line: an upload refusal says so
/// first, for it is about who may write, not about the request.
fn server_refusal(status: Status, message: &str) -> String {
    match status {
        Status::RefusedUpload => format!("upload refused: {message}"),
        other => format!("server says {}: {message}", other.name()),
    }
}

/// Why a download's stream broke, for a person: the server's reset when it
/// could not go on reading the file, or the stream's own error.
fn download_cut(error: &io::Error) -> String {
    match reset_code(error) {
        Some(abort_codes::SOURCE_FAILED) => {
            "the server stopped sending: its file changed or could not be read".into()
        }
        _ => error.to_string(),
    }
}

fn local(context: impl Into<String>) -> impl FnOnce(io::Error) -> ClientError {
    let context = context.into();
    move |error| ClientError::Local { context, error }
}

fn connection(what: &'static str) -> impl FnOnce(io::Error) -> ClientError {
    move |e| ClientError::Connection(format!("{what}: {e}"))
}

/// Sends a request frame.
pub fn send_request<S: Write + ?Sized>(
    stream: &mut S,
    request: &Request,
) -> Result<(), ClientError> {
    let frame = request.encode().map_err(ClientError::Protocol)?;
    stream
        .write_all(&frame)
        .map_err(connection("sending the request"))
}

/// Ends a request with FIN. A server that already has the whole request may
/// stop reading (STOP_SENDING) before the FIN arrives: that is no failure,
/// its response says how the request went.
pub fn finish_request<S: Duplex + ?Sized>(stream: &mut S) -> Result<(), ClientError> {
    match stream.finish() {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.map_err(connection("sending the request")),
    }
}

/// Reads a response header; a non-ok status becomes `ClientError::Server`.
pub fn read_ok_response<S: Read + ?Sized>(stream: &mut S) -> Result<Response, ClientError> {
    let frame = read_frame(stream).map_err(|e| match e {
        ProtocolError::EndOfStream => {
            ClientError::Connection("the server ended the stream without answering".into())
        }
        ProtocolError::Io(e) => ClientError::Connection(format!("waiting for the answer: {e}")),
        other => ClientError::Protocol(other),
    })?;
    let response = parse_response(&frame).map_err(ClientError::Protocol)?;
    if response.status != Status::Ok {
        return Err(ClientError::Server {
            status: response.status,
            message: response.message,
        });
    }
    Ok(response)
}

/// A finished download.
#[derive(Clone, Debug)]
pub struct GetOutcome {
    /// Where the file now is.
    pub dest: PathBuf,
    /// Bytes received by this transfer (the rest, when resuming).
    pub bytes: u64,
    /// Bytes already in the partial file when this transfer started.
    pub resumed_from: u64,
    /// The whole file's size.
    pub size: u64,
    pub sha256: Sha256Digest,
    /// When the file was verified and in place: where the transfer's time
    /// ends (the sender's counters arrive a round trip later).
    pub verified_at: Instant,
    /// The server's sender-side counters, if it sent them.
    pub sender: Option<SenderReport>,
}

/// Downloads `remote_path` to `part`'s destination (via its `.sift-part`,
/// or in place for a device or a FIFO: see [`DownloadPart`]). With
/// `resume`, an existing partial file is continued from its length and the
/// final hash still covers the whole file. With `controller` (a `--cc` name) the
/// server is asked to send the file under that congestion controller.
/// `progress(done, total)` is called as bytes arrive.
pub fn get<S: Duplex + ?Sized>(
    stream: &mut S,
    remote_path: &str,
    part: &DownloadPart,
    resume: bool,
    controller: Option<&str>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<GetOutcome, ClientError> {
    let partial = part.path();
    let offset = if resume {
        part.resume_offset()
            .map_err(local(format!("reading {}", partial.display())))?
    } else {
        0
    };
    let mut hasher = Sha256Hasher::new();
    if offset > 0 {
        let mut existing =
            File::open(partial).map_err(local(format!("opening {}", partial.display())))?;
        hasher
            .update_from(&mut (&mut existing).take(offset))
            .map_err(local(format!("reading {}", partial.display())))?;
    }
    send_request(
        stream,
        &Request::Get {
            path: remote_path.to_string(),
            offset,
            cc: controller.map(str::to_string),
        },
    )?;
    finish_request(stream)?;
    let response = read_ok_response(stream)?;
    // Known to the server already, or sent after the data.
    let announced = response.sha256;
    if announced.is_none() && offset > 0 {
        return Err(ClientError::Protocol(ProtocolError::MissingDigest));
    }
    let size = response.size;
    let mut out = part
        .open(offset)
        .map_err(local(format!("writing {}", partial.display())))?;
    progress(offset, size);

    let wanted = size.saturating_sub(offset);
    let mut buf = vec![0u8; DOWNLOAD_READ_LEN];
    let mut received = 0u64;
    while received < wanted {
        let want = (wanted - received).min(DOWNLOAD_READ_LEN as u64) as usize;
        let interrupted = |reason: String| ClientError::Interrupted {
            received: offset + received,
            expected: size,
            partial: part.clone(),
            reason,
        };
        let read = read_to_sink(stream, &mut buf, want, &mut |bytes| {
            hasher.update(bytes);
            out.write_all(bytes)
        });
        let n = match read {
            Ok(0) => return Err(interrupted("the server ended the stream early".into())),
            Ok(n) => n,
            Err(ReadToSinkError::Stream(e)) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(ReadToSinkError::Stream(e)) => return Err(interrupted(download_cut(&e))),
            Err(ReadToSinkError::Sink(error)) => {
                return Err(local(format!("writing {}", partial.display()))(error))
            }
        };
        received += n as u64;
        progress(offset + received, size);
        if received % (1 << 20) < n as u64 {
            tracing::debug!(received = offset + received, size, "download progress");
        }
    }
    let expected = match announced {
        Some(digest) => digest,
        None => read_frame(stream)
            .and_then(|frame| parse_digest(&frame))
            .map_err(|e| ClientError::Interrupted {
                received: offset + received,
                expected: size,
                partial: part.clone(),
                reason: format!("no digest after the data: {e}"),
            })?,
    };
    part.sync(&out)
        .map_err(local(format!("writing {}", partial.display())))?;
    drop(out);
    let actual = hasher.finish();
    if actual != expected {
        part.remove();
        return Err(ClientError::HashMismatch {
            expected,
            actual,
            partial: partial.to_path_buf(),
        });
    }
    part.commit().map_err(local(format!(
        "renaming {} to {}",
        partial.display(),
        part.dest().display()
    )))?;
    // The file is whole, verified and in place: the download is done. The
    // server sends its counters once it has seen the data acknowledged, a
    // round trip after the last byte, and neither the file nor the
    // transfer's time waits for them.
    let verified_at = Instant::now();
    let sender = read_trailer(stream);
    await_end_of_stream(stream);
    Ok(GetOutcome {
        dest: part.dest().to_path_buf(),
        bytes: received,
        resumed_from: offset,
        size,
        sha256: actual,
        verified_at,
        sender,
    })
}

/// The optional trailer after a download's data. The data is complete and
/// verified by its digest either way, so a missing or bad trailer only
/// costs the sender-side counters.
fn read_trailer<S: Read + ?Sized>(stream: &mut S) -> Option<SenderReport> {
    match read_frame(stream).and_then(|frame| parse_trailer(&frame)) {
        Ok(report) => Some(report),
        Err(ProtocolError::EndOfStream) => None,
        Err(e) => {
            tracing::debug!(error = %e, "no usable trailer after the data");
            None
        }
    }
}

/// Waits for the server's end of stream after its last frame. The answer is
/// complete without it, but a client that closes the connection before the
/// server's FIN arrives races the server's `finish`, and the server then
/// logs a transfer that succeeded as interrupted. Anything after the last
/// frame is not ours to judge: errors and stray bytes end the wait.
fn await_end_of_stream<S: Read + ?Sized>(stream: &mut S) {
    let mut byte = [0u8; 1];
    loop {
        match stream.read(&mut byte) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Ok(0) | Ok(_) | Err(_) => return,
        }
    }
}

/// A finished upload.
#[derive(Clone, Debug)]
pub struct PutOutcome {
    /// Bytes sent.
    pub bytes: u64,
    pub sha256: Sha256Digest,
}

/// A local file opened and hashed, ready to upload. Preparing it before
/// connecting means a missing or unreadable file costs no connection.
#[derive(Debug)]
pub struct LocalUpload {
    shown: String,
    file: File,
    size: u64,
    sha256: Sha256Digest,
}

impl LocalUpload {
    /// Opens `source` (a regular file) and computes its SHA-256.
    pub fn prepare(source: &Path) -> Result<Self, ClientError> {
        let shown = source.display().to_string();
        let mut file = File::open(source).map_err(local(format!("opening {shown}")))?;
        let meta = file.metadata().map_err(local(format!("reading {shown}")))?;
        if !meta.is_file() {
            return Err(ClientError::Local {
                context: format!("uploading {shown}"),
                error: io::Error::new(io::ErrorKind::InvalidInput, "not a regular file"),
            });
        }
        let size = meta.len();
        let mut hasher = Sha256Hasher::new();
        hasher
            .update_from(&mut (&mut file).take(size))
            .map_err(local(format!("reading {shown}")))?;
        Ok(Self {
            shown,
            file,
            size,
            sha256: hasher.finish(),
        })
    }

    /// The file's size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The file's SHA-256.
    pub fn sha256(&self) -> Sha256Digest {
        self.sha256
    }
}

/// Uploads a prepared local file to `remote_path`. The server keeps it
/// only if the SHA-256 of what it received matches ours.
pub fn put<S: Duplex + ?Sized>(
    stream: &mut S,
    upload: LocalUpload,
    remote_path: &str,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<PutOutcome, ClientError> {
    let LocalUpload {
        shown,
        file,
        size,
        sha256: digest,
    } = upload;
    send_request(
        stream,
        &Request::Put {
            path: remote_path.to_string(),
            size,
            sha256: digest,
        },
    )?;
    read_ok_response(stream)?;
    progress(0, size);
    let mut buf = vec![0u8; CHUNK_LEN];
    let mut sent = 0u64;
    while sent < size {
        let want = (size - sent).min(CHUNK_LEN as u64) as usize;
        // What the page cache holds (the digest pass just read it) goes
        // straight into the stream's send buffer; the rest is read here.
        let straight = stream
            .write_cached_file(&file, sent, want)
            .map_err(|e| ClientError::Connection(format!("after {sent} of {size} bytes: {e}")))?;
        if let Some(n) = straight {
            sent += n as u64;
            progress(sent, size);
            continue;
        }
        let n =
            read_at(&file, &mut buf[..want], sent).map_err(local(format!("reading {shown}")))?;
        if n == 0 {
            stream.abort(abort_codes::SOURCE_FAILED);
            return Err(ClientError::Local {
                context: format!("uploading {shown}"),
                error: io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("the file shrank to {sent} bytes while being sent"),
                ),
            });
        }
        stream
            .write_all(&buf[..n])
            .map_err(|e| ClientError::Connection(format!("after {sent} of {size} bytes: {e}")))?;
        sent += n as u64;
        progress(sent, size);
    }
    stream.finish().map_err(connection("ending the upload"))?;
    let response = read_ok_response(stream)?;
    await_end_of_stream(stream);
    Ok(PutOutcome {
        bytes: sent,
        sha256: response.sha256.unwrap_or(digest),
    })
}

/// Lists `remote_path` (a directory's entries, or one file's).
pub fn list<S: Duplex + ?Sized>(
    stream: &mut S,
    remote_path: &str,
) -> Result<Vec<ListEntry>, ClientError> {
    send_request(
        stream,
        &Request::List {
            path: remote_path.to_string(),
        },
    )?;
    finish_request(stream)?;
    let response = read_ok_response(stream)?;
    if response.size > MAX_LISTING_LEN {
        return Err(ClientError::Protocol(ProtocolError::TooLarge {
            len: usize::try_from(response.size).unwrap_or(usize::MAX),
            max: MAX_LISTING_LEN as usize,
        }));
    }
    let mut json = vec![0u8; response.size as usize];
    stream
        .read_exact(&mut json)
        .map_err(connection("reading the listing"))?;
    await_end_of_stream(stream);
    if let Some(expected) = response.sha256 {
        let actual = sha256(&json);
        if actual != expected {
            return Err(ClientError::Connection(format!(
                "the listing's SHA-256 is {actual}, the server announced {expected}"
            )));
        }
    }
    serde_json::from_slice(&json)
        .map_err(|e| ClientError::Protocol(ProtocolError::BadListing(e.to_string())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_download_the_server_gave_up_on_says_why_in_words() {
        let reset = |error_code| {
            io::Error::from(sift::blocking::SiftIoError::StreamReset { id: 0, error_code })
        };
        assert_eq!(
            download_cut(&reset(abort_codes::SOURCE_FAILED)),
            "the server stopped sending: its file changed or could not be read"
        );
        assert_eq!(
            download_cut(&reset(7)),
            "stream 0 was reset by the peer with error code 7"
        );
    }
}
