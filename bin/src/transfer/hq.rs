//! hq-interop: HTTP/0.9 over QUIC, the file protocol of the QUIC interop
//! runner, so that any QUIC client fetches from `sift-server` and
//! `sift-client` fetches from any QUIC server.
//!
//! One request per bidirectional stream: the client sends
//! `GET /PATH\r\n` and ends its side; the server answers with the file's
//! bytes and a FIN. There is no status, no length and no digest: a clean
//! FIN is the only "done", so a server that cannot serve a path resets the
//! stream ([`abort_codes`]) rather than send anything a client could take
//! for the file. `%XX` escapes in the path are decoded; a query or
//! fragment is ignored, as HTTP servers do for a file.
//!
//! Owns: the request line (both sides) and the client side of a download.
//! The server side is [`super::FileServer::serve_hq`], beside sift's own
//! protocol, so that path confinement and file reading are one code.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use thiserror::Error;
use tokio::io::{AsyncRead, AsyncReadExt};

use super::buffers::{CHUNK_LEN, DOWNLOAD_READ_LEN};
use super::digest::{Sha256Digest, Sha256Hasher};
use super::duplex::{is_stopped, read_to_sink, reset_code, Duplex, ReadToSinkError};
use super::part_file::DownloadPart;

/// The ALPN of hq-interop.
pub const ALPN: &[u8] = b"hq-interop";

/// The longest request line taken: a path, not a document.
pub const MAX_REQUEST_LEN: usize = 4096;

/// Stream error codes of an hq-interop server that cannot serve a request
/// (HTTP/0.9 has none of its own; these are sift's, in the application's
/// space).
pub mod abort_codes {
    /// The request was not `GET /PATH`.
    pub const BAD_REQUEST: u64 = 0x400;
    /// The path is outside the root, or not a file sift serves.
    pub const REFUSED: u64 = 0x403;
    /// No such file.
    pub const NOT_FOUND: u64 = 0x404;
    /// The server failed reading the file.
    pub const INTERNAL: u64 = 0x500;
}

/// Why a request line was refused, or an hq download failed. Each message
/// is one line for a person.
#[derive(Debug, Error)]
pub enum HqError {
    #[error("bad hq-interop request: {0}")]
    BadRequest(String),
    #[error("the request line is longer than {MAX_REQUEST_LEN} bytes")]
    TooLong,
    #[error("the server refused /{path} (stream reset, code {code:#x}{})", describe_code(*code))]
    Refused { path: String, code: u64 },
    #[error("transfer of /{path} cut short after {received} bytes ({reason}); {left}")]
    Interrupted {
        path: String,
        received: u64,
        reason: String,
        left: PartialLeft,
    },
    #[error("{context}: {error}")]
    Local { context: String, error: io::Error },
}

/// What an interrupted hq download left behind (there is no resume
/// without a length).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartialLeft {
    /// The request did not get through: nothing was written.
    Nothing,
    /// The `.sift-part` file was removed.
    Removed,
    /// The destination is a device or a pipe, written in place.
    InPlace,
}

impl std::fmt::Display for PartialLeft {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Nothing => "nothing was written",
            Self::Removed => "partial file removed",
            Self::InPlace => "what arrived was written in place (not a regular file)",
        })
    }
}

fn describe_code(code: u64) -> &'static str {
    match code {
        abort_codes::BAD_REQUEST => ": bad request",
        abort_codes::REFUSED => ": refused path",
        abort_codes::NOT_FOUND => ": not found",
        abort_codes::INTERNAL => ": server error",
        _ => "",
    }
}

/// The request line for `path` (without its leading `/`), with bytes
/// outside the unreserved set and `/` escaped.
pub fn encode_request(path: &str) -> Vec<u8> {
    let mut line = b"GET /".to_vec();
    for &b in path.as_bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            line.push(b);
        } else {
            line.extend_from_slice(format!("%{b:02X}").as_bytes());
        }
    }
    line.extend_from_slice(b"\r\n");
    line
}

/// The path a request line asks for, without its leading `/`, `%XX`
/// decoded, query and fragment dropped. The line may end in `\r\n`, `\n`
/// or nothing (the stream's end).
pub fn parse_request(line: &[u8]) -> Result<String, HqError> {
    let line = line
        .strip_suffix(b"\n")
        .map_or(line, |l| l.strip_suffix(b"\r").unwrap_or(l));
    let target = line.strip_prefix(b"GET ").ok_or_else(|| {
        HqError::BadRequest(format!("expected \"GET /PATH\", got {:?}", lossy(line)))
    })?;
    let target = target.strip_prefix(b"/").ok_or_else(|| {
        HqError::BadRequest(format!("the path must start with '/': {:?}", lossy(target)))
    })?;
    let end = target
        .iter()
        .position(|b| *b == b'?' || *b == b'#')
        .unwrap_or(target.len());
    let decoded = percent_decode(&target[..end])?;
    String::from_utf8(decoded).map_err(|_| HqError::BadRequest("the path is not UTF-8".into()))
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(&bytes[..bytes.len().min(64)]).into_owned()
}

fn percent_decode(raw: &[u8]) -> Result<Vec<u8>, HqError> {
    if let Some(b) = raw
        .iter()
        .find(|b| b.is_ascii_whitespace() || b.is_ascii_control())
    {
        return Err(HqError::BadRequest(format!(
            "byte {b:#04x} in the path (HTTP/0.9 has no version field)"
        )));
    }
    unescape(raw).ok_or_else(|| HqError::BadRequest("a bad %-escape in the path".into()))
}

/// `raw` with each `%XX` escape decoded (RFC 3986 §2.1); `None` for a `%`
/// not followed by two hex digits.
pub fn unescape(raw: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(raw.len());
    let mut bytes = raw.iter().copied();
    while let Some(b) = bytes.next() {
        if b != b'%' {
            out.push(b);
            continue;
        }
        let hex = [bytes.next()?, bytes.next()?];
        let value = std::str::from_utf8(&hex)
            .ok()
            .and_then(|h| u8::from_str_radix(h, 16).ok())?;
        out.push(value);
    }
    Some(out)
}

/// Reads a request line: up to and including its `\n`, or to the end of
/// the stream, at most [`MAX_REQUEST_LEN`] bytes. Bytes after the `\n`
/// (a client has no business sending any) are left unread.
pub async fn read_request<R: AsyncRead + Unpin + ?Sized>(
    stream: &mut R,
) -> Result<Vec<u8>, HqError> {
    let mut line = Vec::with_capacity(64);
    let mut byte = [0u8; 1];
    loop {
        let n = stream
            .read(&mut byte)
            .await
            .map_err(|error| HqError::Local {
                context: "reading the request".into(),
                error,
            })?;
        if n == 0 {
            return Ok(line);
        }
        line.push(byte[0]);
        if byte[0] == b'\n' {
            return Ok(line);
        }
        if line.len() > MAX_REQUEST_LEN {
            return Err(HqError::TooLong);
        }
    }
}

/// A download that completed.
#[derive(Clone, Debug)]
pub struct HqOutcome {
    pub bytes: u64,
    pub sha256: Sha256Digest,
    /// When the server's FIN arrived.
    pub finished_at: Instant,
}

/// Downloads `path` (without its leading `/`) over `stream`, whose
/// request [`request`] already sent, to `dest`: into `dest`'s
/// `.sift-part` file, renamed to `dest` once the server's FIN arrived. A
/// reset or a broken stream removes the partial file (there is no resume
/// without a length), and says how far it got. A `dest` that is a device
/// or a FIFO (`/dev/null`) is written in place and left in place. The
/// request goes apart so that several can leave at once, before any
/// answer is read (0-RTT).
pub fn get_requested<S: Duplex + ?Sized>(
    stream: &mut S,
    path: &str,
    dest: &Path,
    progress: &mut dyn FnMut(u64),
) -> Result<HqOutcome, HqError> {
    let local = |context: String| move |error| HqError::Local { context, error };
    let part = DownloadPart::new(dest);
    let (verb, left) = if part.writes_in_place() {
        ("opening", PartialLeft::InPlace)
    } else {
        ("creating", PartialLeft::Removed)
    };
    let file = part
        .open(0)
        .map_err(local(format!("{verb} {}", part.path().display())))?;
    let result = receive(stream, path, file, part.path(), left, progress);
    finish_part(result, &part)
}

/// Sends the request line for `path` and closes our direction. A server
/// that has the line may stop our direction before it sees our FIN
/// (STOP_SENDING, code 0 from sift): the answer still comes, so only
/// reading the answer decides.
pub fn request<S: Duplex + ?Sized>(stream: &mut S, path: &str) -> Result<(), HqError> {
    let sent = stream
        .write_all(&encode_request(path))
        .and_then(|()| stream.finish());
    match sent {
        Err(error) if !is_stopped(&error) => Err(interrupted(path, 0, PartialLeft::Nothing)(error)),
        _ => Ok(()),
    }
}

/// The `.sift-part` file renamed to its destination when the download is
/// whole, removed when it is not (a device or a pipe stays as it is).
fn finish_part(
    result: Result<HqOutcome, HqError>,
    part: &DownloadPart,
) -> Result<HqOutcome, HqError> {
    let local = |context: String| move |error| HqError::Local { context, error };
    match result {
        Ok(outcome) => {
            part.commit().map_err(local(format!(
                "renaming {} to {}",
                part.path().display(),
                part.dest().display()
            )))?;
            Ok(outcome)
        }
        Err(error) => {
            part.remove();
            Err(error)
        }
    }
}

/// How a stream error `received` bytes into `path` reads: the server's
/// refusal (a reset before any of the file), or an interruption (a reset
/// part way, with its code, or a broken connection).
fn interrupted(
    path: &str,
    received: u64,
    left: PartialLeft,
) -> impl FnOnce(io::Error) -> HqError + '_ {
    move |error: io::Error| {
        let reason = match reset_code(&error) {
            Some(code) if received == 0 => {
                return HqError::Refused {
                    path: path.to_string(),
                    code,
                }
            }
            Some(code) => format!(
                "the server reset the stream, code {code:#x}{}",
                describe_code(code)
            ),
            None => error.to_string(),
        };
        HqError::Interrupted {
            path: path.to_string(),
            received,
            reason,
            left,
        }
    }
}

fn receive<S: Duplex + ?Sized>(
    stream: &mut S,
    path: &str,
    file: File,
    part: &Path,
    left: PartialLeft,
    progress: &mut dyn FnMut(u64),
) -> Result<HqOutcome, HqError> {
    let mut out = BufWriter::with_capacity(CHUNK_LEN, file);
    let mut hasher = Sha256Hasher::new();
    let mut buf = vec![0u8; DOWNLOAD_READ_LEN];
    let mut received = 0u64;
    loop {
        let read = read_to_sink(stream, &mut buf, DOWNLOAD_READ_LEN, &mut |bytes| {
            hasher.update(bytes);
            out.write_all(bytes)
        });
        let n = match read {
            Ok(n) => n,
            Err(ReadToSinkError::Stream(e)) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(ReadToSinkError::Stream(e)) => return Err(interrupted(path, received, left)(e)),
            Err(ReadToSinkError::Sink(error)) => {
                return Err(HqError::Local {
                    context: format!("writing {}", part.display()),
                    error,
                })
            }
        };
        if n == 0 {
            break;
        }
        received += n as u64;
        progress(received);
    }
    let finished_at = Instant::now();
    out.flush().map_err(|error| HqError::Local {
        context: format!("writing {}", part.display()),
        error,
    })?;
    Ok(HqOutcome {
        bytes: received,
        sha256: hasher.finish(),
        finished_at,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_line_round_trips_with_escapes() {
        for path in ["file.bin", "dir/sub/f-1_2.txt", "a b%c", "ünï"] {
            let line = encode_request(path);
            assert!(line.starts_with(b"GET /") && line.ends_with(b"\r\n"));
            assert!(!line[4..line.len() - 2].contains(&b' '));
            assert_eq!(parse_request(&line).unwrap(), path);
        }
    }

    #[test]
    fn request_lines_end_in_crlf_lf_or_nothing_and_drop_the_query() {
        assert_eq!(parse_request(b"GET /x\r\n").unwrap(), "x");
        assert_eq!(parse_request(b"GET /x\n").unwrap(), "x");
        assert_eq!(parse_request(b"GET /x").unwrap(), "x");
        assert_eq!(parse_request(b"GET /dir/x?y=1#z").unwrap(), "dir/x");
        assert_eq!(parse_request(b"GET /").unwrap(), "");
    }

    #[test]
    fn malformed_request_lines_are_refused() {
        for line in [
            &b"PUT /x\r\n"[..],
            b"GET x\r\n",
            b"GET /x HTTP/1.1\r\n",
            b"GET /%zz\r\n",
            b"GET /%4\r\n",
            b"GET /\xff\r\n",
            b"",
        ] {
            assert!(
                matches!(parse_request(line), Err(HqError::BadRequest(_))),
                "{line:?}"
            );
        }
    }

    #[test]
    fn a_reset_names_its_code() {
        let reset = sift::blocking::SiftIoError::StreamReset {
            id: 0,
            error_code: abort_codes::NOT_FOUND,
        };
        assert_eq!(
            reset_code(&io::Error::from(reset)),
            Some(abort_codes::NOT_FOUND)
        );
        let other = io::Error::new(io::ErrorKind::ConnectionReset, "code 5");
        assert_eq!(reset_code(&other), None);
        let stopped = sift::blocking::SiftIoError::StreamStopped {
            id: 0,
            error_code: 0,
        };
        assert!(is_stopped(&io::Error::from(stopped)));
        assert!(!is_stopped(&other));
    }

    #[test]
    fn a_reset_before_the_body_is_a_refusal_and_one_part_way_an_interruption() {
        let reset = || {
            io::Error::from(sift::blocking::SiftIoError::StreamReset {
                id: 0,
                error_code: abort_codes::INTERNAL,
            })
        };
        let refused = interrupted("big", 0, PartialLeft::Nothing)(reset());
        assert!(
            matches!(&refused, HqError::Refused { code, .. } if *code == abort_codes::INTERNAL),
            "{refused:?}"
        );
        let cut = interrupted("big", 331_323_120, PartialLeft::Removed)(reset());
        assert_eq!(
            cut.to_string(),
            "transfer of /big cut short after 331323120 bytes (the server reset the stream, \
             code 0x500: server error); partial file removed"
        );
    }

    #[test]
    fn a_download_to_a_fifo_writes_into_it_and_leaves_it_in_place() {
        // `sift-client get https://… -o /dev/null` must not rename a
        // partial file over the device (as root it replaced /dev/null). A
        // FIFO stands in for it here.
        use std::os::unix::fs::FileTypeExt;
        use std::os::unix::net::UnixStream;
        let dir = crate::transfer::test_dir::TestDir::new("hq-fifo");
        let fifo = dir.path().join("pipe");
        let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read(fifo).unwrap())
        };
        let (mut server, mut client) = UnixStream::pair().unwrap();
        let sender = {
            let data = data.clone();
            std::thread::spawn(move || {
                server.write_all(&data).unwrap();
                server.shutdown(std::net::Shutdown::Write).unwrap();
            })
        };
        let outcome = get_requested(&mut client, "f.bin", &fifo, &mut |_| {}).unwrap();
        sender.join().unwrap();
        assert_eq!(outcome.bytes, data.len() as u64);
        // Checked before joining: a replaced FIFO would leave the reader
        // waiting for a writer forever.
        let kind = std::fs::symlink_metadata(&fifo).unwrap().file_type();
        assert!(kind.is_fifo(), "still a FIFO: {kind:?}");
        assert!(!DownloadPart::part_path(&fifo).exists());
        assert_eq!(reader.join().unwrap(), data);
    }

    /// A stream that yields `data`, then fails as a dead connection does.
    struct CutShort {
        data: io::Cursor<Vec<u8>>,
    }

    impl io::Read for CutShort {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            match io::Read::read(&mut self.data, buf)? {
                0 => Err(io::Error::new(io::ErrorKind::TimedOut, "idle timeout")),
                n => Ok(n),
            }
        }
    }

    impl Write for CutShort {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Duplex for CutShort {
        fn finish(&mut self) -> io::Result<()> {
            Ok(())
        }
        fn abort(&mut self, _code: u64) {}
    }

    #[test]
    fn a_cut_short_download_says_what_it_left() {
        let dir = crate::transfer::test_dir::TestDir::new("hq-cut");
        let cut = || CutShort {
            data: io::Cursor::new(vec![7u8; 5000]),
        };
        let dest = dir.path().join("f.bin");
        let error = get_requested(&mut cut(), "f.bin", &dest, &mut |_| {}).unwrap_err();
        assert!(
            matches!(
                error,
                HqError::Interrupted {
                    received: 5000,
                    left: PartialLeft::Removed,
                    ..
                }
            ),
            "{error}"
        );
        assert!(
            error.to_string().ends_with("partial file removed"),
            "{error}"
        );
        assert!(!dest.exists() && !DownloadPart::part_path(&dest).exists());

        // A device or pipe keeps what arrived, and the message says so.
        let null = Path::new("/dev/null");
        let error = get_requested(&mut cut(), "f.bin", null, &mut |_| {}).unwrap_err();
        assert!(
            matches!(
                error,
                HqError::Interrupted {
                    left: PartialLeft::InPlace,
                    ..
                }
            ),
            "{error}"
        );
        assert!(!error.to_string().contains("removed"), "{error}");
        assert!(null.exists());
    }
}
