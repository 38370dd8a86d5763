//! Both sides of the protocol over Unix socket pairs: what a client sees
//! and what lands on the server's disk.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use super::*;
use crate::transfer::client::{self, ClientError};
use crate::transfer::digest::sha256;
use crate::transfer::duplex::Duplex;
use crate::transfer::frame::read_frame;
use crate::transfer::listing::EntryKind;
use crate::transfer::part_file::DownloadPart;
use crate::transfer::perf::{run_perf, PerfOptions};
use crate::transfer::request::{PerfDirection, PerfLimit};
use crate::transfer::response::parse_response;
use crate::transfer::test_dir::TestDir;

/// Deterministic, non-repeating-looking content (xorshift64).
fn content(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// A server of `root` that takes uploads from anyone.
fn server_with(root: &TestDir) -> FileServer {
    FileServer::new(Root::new(root.path()).unwrap()).allowing_uploads(UploadPolicy::Anyone)
}

/// Runs `server.serve` on one end of a socket pair and `client` on the other.
fn exchange<T: Send>(
    server: &FileServer,
    client: impl FnOnce(&mut UnixStream) -> T + Send,
) -> (T, TransferRecord) {
    exchange_as(server, &NoConnection, client)
}

/// [`exchange`] over a connection that is `connection`.
fn exchange_as<T: Send>(
    server: &FileServer,
    connection: &(dyn ServedConnection + Sync),
    client: impl FnOnce(&mut UnixStream) -> T + Send,
) -> (T, TransferRecord) {
    let (server_end, mut client_end) = UnixStream::pair().unwrap();
    std::thread::scope(|scope| {
        let handle = scope.spawn(move || serve_on_a_runtime(server, connection, server_end));
        let out = client(&mut client_end);
        drop(client_end);
        (out, handle.join().unwrap())
    })
}

/// Serves one stream as the server does, as a task, on a runtime of its
/// own.
fn serve_on_a_runtime(
    server: &FileServer,
    connection: &(dyn ServedConnection + Sync),
    stream: UnixStream,
) -> TransferRecord {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        stream.set_nonblocking(true).unwrap();
        let mut stream = tokio::net::UnixStream::from_std(stream).unwrap();
        server.serve(&mut stream, connection).await
    })
}

fn no_progress() -> impl FnMut(u64, u64) {
    |_, _| {}
}

/// Sends raw bytes as a request and returns the parsed response.
fn raw_request(server: &FileServer, bytes: Vec<u8>) -> (Response, TransferRecord) {
    exchange(server, move |stream| {
        stream.write_all(&bytes).unwrap();
        stream.finish().unwrap();
        let frame = read_frame(stream).unwrap();
        parse_response(&frame).unwrap()
    })
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

#[test]
fn get_delivers_the_file_byte_exact_with_its_digest() {
    let root = TestDir::new("srv-get-root");
    let out = TestDir::new("srv-get-out");
    let data = content(300_000, 1);
    std::fs::write(root.path().join("f.bin"), &data).unwrap();
    let server = server_with(&root);
    let dest = out.path().join("f.bin");
    let (outcome, record) = exchange(&server, |s| {
        client::get(
            s,
            "f.bin",
            &DownloadPart::new(&dest),
            false,
            None,
            &mut no_progress(),
        )
    });
    let outcome = outcome.unwrap();
    assert_eq!(std::fs::read(&dest).unwrap(), data);
    assert_eq!(outcome.sha256, sha256(&data));
    assert_eq!(
        (outcome.bytes, outcome.size, outcome.resumed_from),
        (300_000, 300_000, 0)
    );
    assert!(!DownloadPart::part_path(&dest).exists());
    assert_eq!(
        (record.verb, record.bytes, record.status),
        ("GET", 300_000, Some(Status::Ok))
    );
}

/// A raw GET of `path`: the response, then every byte up to the end of
/// the stream.
fn raw_get(server: &FileServer, path: &str) -> (Response, Vec<u8>) {
    let request = Request::Get {
        path: path.into(),
        offset: 0,
        cc: None,
    };
    let (answer, _) = exchange(server, move |stream| {
        stream.write_all(&request.encode().unwrap()).unwrap();
        stream.finish().unwrap();
        let response = parse_response(&read_frame(stream).unwrap()).unwrap();
        let mut rest = Vec::new();
        stream.read_to_end(&mut rest).unwrap();
        (response, rest)
    });
    answer
}

/// A GET of `f.bin` to `dest` from a server that answers `response`, sends
/// `bytes` and ends the stream.
fn get_from_a_dying_server(
    dest: &Path,
    response: Response,
    bytes: &[u8],
) -> Result<client::GetOutcome, ClientError> {
    let (mut server_end, mut client_end) = UnixStream::pair().unwrap();
    let announced = response.encode().unwrap();
    let sent = bytes.to_vec();
    let dying = std::thread::spawn(move || {
        let _ = read_frame(&mut server_end);
        server_end.write_all(&announced).unwrap();
        server_end.write_all(&sent).unwrap();
    });
    let outcome = client::get(
        &mut client_end,
        "f.bin",
        &DownloadPart::new(dest),
        false,
        None,
        &mut no_progress(),
    );
    dying.join().unwrap();
    outcome
}

/// A client's end of a stream that notes, at its first read past
/// `trailer_at` bytes (where the sender's counters begin), whether `dest`
/// already holds `file` whole.
struct TrailerWatch<'a> {
    inner: UnixStream,
    consumed: usize,
    trailer_at: usize,
    dest: &'a Path,
    file: &'a [u8],
    in_place_at_trailer: Option<bool>,
}

impl Read for TrailerWatch<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.consumed >= self.trailer_at && self.in_place_at_trailer.is_none() {
            let whole = std::fs::read(self.dest).is_ok_and(|got| got == self.file);
            self.in_place_at_trailer = Some(whole);
        }
        let n = self.inner.read(buf)?;
        self.consumed += n;
        Ok(n)
    }
}

impl Write for TrailerWatch<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.inner.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl Duplex for TrailerWatch<'_> {
    fn finish(&mut self) -> std::io::Result<()> {
        self.inner.finish()
    }

    fn abort(&mut self, code: u64) {
        self.inner.abort(code);
    }
}

#[test]
fn a_download_is_in_place_before_the_sender_counters_arrive() {
    // The server sends its counters once its data is acknowledged, a round
    // trip after the last byte: the client must not hold the file (or the
    // transfer's time) for them. Its reads are exact, so the first read
    // past the data is the trailer's.
    let out = TestDir::new("srv-get-trailer-out");
    let dest = out.path().join("f.bin");
    let data = content(20_000, 9);
    let report = SenderReport {
        cc: "cubic".into(),
        corruption_notices: true,
        version: "sift/1".into(),
        retransmitted_packets: 7,
        ptos: 1,
        corruption_notices_received: 2,
        cwnd: 12_000,
        srtt_us: 40_000,
        max_datagram_size: 1472,
        pmtu_probes_sent: 7,
        pmtu_probes_lost: 3,
        pmtu_black_holes: 0,
        checksum_free_datagrams: 0,
        careful_resume: None,
        send_times: Default::default(),
        ecn: Default::default(),
        repair: Default::default(),
    };
    let response = Response::ok(data.len() as u64, Some(sha256(&data)))
        .encode()
        .unwrap();
    let (mut server_end, client_end) = UnixStream::pair().unwrap();
    // Everything the server says fits in the socket's buffer.
    server_end.write_all(&response).unwrap();
    server_end.write_all(&data).unwrap();
    server_end.write_all(&report.encode().unwrap()).unwrap();
    server_end.finish().unwrap();
    let mut watch = TrailerWatch {
        inner: client_end,
        consumed: 0,
        trailer_at: response.len() + data.len(),
        dest: &dest,
        file: &data,
        in_place_at_trailer: None,
    };
    let outcome = client::get(
        &mut watch,
        "f.bin",
        &DownloadPart::new(&dest),
        false,
        None,
        &mut no_progress(),
    )
    .unwrap();
    assert_eq!(
        watch.in_place_at_trailer,
        Some(true),
        "the file waited for the sender's counters"
    );
    assert_eq!(outcome.sender, Some(report), "the counters still arrive");
    assert!(!DownloadPart::part_path(&dest).exists());
}

#[test]
fn a_file_not_hashed_yet_is_hashed_as_it_is_sent_and_announced_next_time() {
    // The first download of a version of a file does not wait for a pass
    // over it: no digest in the response, a digest frame after the data.
    // The server keeps it, so the next download has it up front; a changed
    // file is hashed again.
    let root = TestDir::new("srv-digest-root");
    let data = content(100_000, 4);
    std::fs::write(root.path().join("f.bin"), &data).unwrap();
    let server = server_with(&root);
    let (first, rest) = raw_get(&server, "f.bin");
    assert_eq!(first.sha256, None);
    assert_eq!(&rest[..100_000], &data[..]);
    let digest_frame = encode_digest(sha256(&data)).unwrap();
    assert_eq!(
        &rest[100_000..100_000 + digest_frame.len()],
        &digest_frame[..]
    );
    let (second, rest) = raw_get(&server, "f.bin");
    assert_eq!(second.sha256, Some(sha256(&data)));
    assert_eq!(rest, data, "no digest frame after the data");
    let changed = content(100_001, 5);
    std::fs::write(root.path().join("f.bin"), &changed).unwrap();
    let (third, _) = raw_get(&server, "f.bin");
    assert_eq!(third.sha256, None, "a new version is hashed anew");
}

#[test]
fn downloads_of_a_new_file_at_once_share_one_digest_pass() {
    // Every download gets the right digest (up front or after the data),
    // and however they interleave the file is hashed once: a download that
    // starts while a pass is under way waits for it, one that starts after
    // it finds the digest kept.
    let root = TestDir::new("srv-digest-shared");
    let data = content(4_000_000, 7);
    std::fs::write(root.path().join("f.bin"), &data).unwrap();
    let server = server_with(&root);
    let digest = sha256(&data);
    let frame = encode_digest(digest).unwrap();
    std::thread::scope(|scope| {
        let gets: Vec<_> = (0..6)
            .map(|_| scope.spawn(|| raw_get(&server, "f.bin")))
            .collect();
        for get in gets {
            let (response, rest) = get.join().unwrap();
            assert_eq!(&rest[..data.len()], &data[..]);
            match response.sha256 {
                Some(up_front) => assert_eq!(up_front, digest),
                None => assert_eq!(&rest[data.len()..], &frame[..]),
            }
        }
    });
    let passes = server
        .digests
        .passes
        .load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(passes, 1, "one pass over the file");
}

#[test]
fn a_download_whose_digest_never_comes_keeps_its_partial() {
    let out = TestDir::new("srv-nodigest-out");
    let data = content(10_000, 6);
    let dest = out.path().join("f.bin");
    let outcome = get_from_a_dying_server(&dest, Response::ok(10_000, None), &data);
    assert!(
        matches!(
            outcome,
            Err(ClientError::Interrupted {
                received: 10_000,
                ..
            })
        ),
        "{outcome:?}"
    );
    assert!(!dest.exists());
    assert_eq!(std::fs::read(DownloadPart::part_path(&dest)).unwrap(), data);
}

#[test]
fn a_download_to_a_device_or_fifo_writes_into_it_and_leaves_it_in_place() {
    // `sift-client get … -o /dev/null` must not rename a partial file over
    // the device. A FIFO stands in for it here (replacing /dev/null would
    // break the machine if this failed).
    use std::os::unix::fs::FileTypeExt;
    let root = TestDir::new("srv-fifo-root");
    let out = TestDir::new("srv-fifo-out");
    let data = content(300_000, 7);
    std::fs::write(root.path().join("f.bin"), &data).unwrap();
    let fifo = out.path().join("pipe");
    let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    let server = server_with(&root);
    let (outcome, _) = exchange(&server, |s| {
        client::get(
            s,
            "f.bin",
            &DownloadPart::new(&fifo),
            false,
            None,
            &mut no_progress(),
        )
    });
    assert_eq!(outcome.unwrap().sha256, sha256(&data));
    // Checked before joining: a replaced FIFO would leave the reader
    // waiting for a writer forever.
    let kind = std::fs::symlink_metadata(&fifo).unwrap().file_type();
    assert!(kind.is_fifo(), "still a FIFO: {kind:?}");
    assert!(!DownloadPart::part_path(&fifo).exists());
    assert_eq!(reader.join().unwrap(), data);
}

#[test]
fn an_interrupted_download_keeps_its_partial_and_resume_fetches_only_the_rest() {
    let root = TestDir::new("srv-resume-root");
    let out = TestDir::new("srv-resume-out");
    let data = content(200_000, 2);
    std::fs::write(root.path().join("f.bin"), &data).unwrap();
    let dest = out.path().join("f.bin");

    // A server that announces the file, sends 70 000 bytes and dies.
    let announced = Response::ok(200_000, Some(sha256(&data)));
    let interrupted = get_from_a_dying_server(&dest, announced, &data[..70_000]);
    assert!(matches!(
        interrupted,
        Err(ClientError::Interrupted {
            received: 70_000,
            expected: 200_000,
            ..
        })
    ));
    assert!(!dest.exists(), "nothing that looks complete");
    assert_eq!(
        std::fs::read(DownloadPart::part_path(&dest)).unwrap(),
        &data[..70_000]
    );

    let server = server_with(&root);
    let (outcome, record) = exchange(&server, |s| {
        client::get(
            s,
            "f.bin",
            &DownloadPart::new(&dest),
            true,
            None,
            &mut no_progress(),
        )
    });
    let outcome = outcome.unwrap();
    // 200 000 − 70 000 = 130 000 bytes travel on the resume.
    assert_eq!((outcome.resumed_from, outcome.bytes), (70_000, 130_000));
    assert_eq!(record.bytes, 130_000);
    assert_eq!(std::fs::read(&dest).unwrap(), data);
}

#[test]
fn a_resume_over_a_wrong_partial_fails_the_hash_and_removes_it() {
    let root = TestDir::new("srv-badpart-root");
    let out = TestDir::new("srv-badpart-out");
    let data = content(50_000, 3);
    std::fs::write(root.path().join("f.bin"), &data).unwrap();
    let dest = out.path().join("f.bin");
    std::fs::write(DownloadPart::part_path(&dest), vec![0u8; 10_000]).unwrap();
    let server = server_with(&root);
    let (outcome, _) = exchange(&server, |s| {
        client::get(
            s,
            "f.bin",
            &DownloadPart::new(&dest),
            true,
            None,
            &mut no_progress(),
        )
    });
    assert!(matches!(outcome, Err(ClientError::HashMismatch { .. })));
    assert!(!dest.exists());
    assert!(!DownloadPart::part_path(&dest).exists());
}

#[test]
fn a_resume_offset_past_the_end_is_a_bad_request() {
    let root = TestDir::new("srv-offset-root");
    std::fs::write(root.path().join("f"), b"short").unwrap();
    let server = server_with(&root);
    let request = Request::Get {
        path: "f".into(),
        offset: 6,
        cc: None,
    };
    let (response, record) = raw_request(&server, request.encode().unwrap());
    assert_eq!(response.status, Status::BadRequest);
    assert!(
        response.message.contains("offset 6"),
        "{}",
        response.message
    );
    assert_eq!(record.status, Some(Status::BadRequest));
}

#[test]
fn put_keeps_the_file_once_its_digest_matches() {
    let root = TestDir::new("srv-put-root");
    let local = TestDir::new("srv-put-local");
    let data = content(250_000, 4);
    let source = local.path().join("up.bin");
    std::fs::write(&source, &data).unwrap();
    let server = server_with(&root);
    let (outcome, record) = exchange(&server, |s| {
        client::put(
            s,
            client::LocalUpload::prepare(&source).unwrap(),
            "up.bin",
            &mut no_progress(),
        )
    });
    let outcome = outcome.unwrap();
    assert_eq!((outcome.bytes, outcome.sha256), (250_000, sha256(&data)));
    assert_eq!(std::fs::read(root.path().join("up.bin")).unwrap(), data);
    assert_eq!(files_in(root.path()), ["up.bin"], "no temporary file left");
    assert_eq!((record.verb, record.bytes), ("PUT", 250_000));
}

#[test]
fn put_with_a_wrong_digest_keeps_nothing() {
    let root = TestDir::new("srv-putbad-root");
    let server = server_with(&root);
    let (response, record) = exchange(&server, |stream| {
        let request = Request::Put {
            path: "x.bin".into(),
            size: 4,
            sha256: sha256(b"abcd"),
        };
        stream.write_all(&request.encode().unwrap()).unwrap();
        let go_ahead = parse_response(&read_frame(stream).unwrap()).unwrap();
        assert_eq!(go_ahead.status, Status::Ok);
        stream.write_all(b"abce").unwrap();
        stream.finish().unwrap();
        parse_response(&read_frame(stream).unwrap()).unwrap()
    });
    assert_eq!(response.status, Status::HashMismatch);
    assert_eq!(record.status, Some(Status::HashMismatch));
    assert!(files_in(root.path()).is_empty());
}

#[test]
fn put_on_a_full_disk_answers_disk_full_and_removes_the_temporary_file() {
    let root = TestDir::new("srv-full-root");
    let local = TestDir::new("srv-full-local");
    let source = local.path().join("big.bin");
    std::fs::write(&source, content(400_000, 5)).unwrap();
    let mut server = server_with(&root);
    server.disk_capacity = Some(100_000);
    let (outcome, record) = exchange(&server, |s| {
        client::put(
            s,
            client::LocalUpload::prepare(&source).unwrap(),
            "big.bin",
            &mut no_progress(),
        )
    });
    assert!(
        matches!(
            &outcome,
            Err(ClientError::Server {
                status: Status::DiskFull,
                ..
            })
        ),
        "{outcome:?}"
    );
    assert_eq!(record.status, Some(Status::DiskFull));
    assert!(files_in(root.path()).is_empty());
}

#[test]
fn a_download_the_client_abandons_is_recorded_with_the_bytes_sent() {
    let root = TestDir::new("srv-abandon-root");
    let size = 4_000_000;
    std::fs::write(root.path().join("big.bin"), content(size, 3)).unwrap();
    let server = server_with(&root);
    let request = Request::Get {
        path: "big.bin".into(),
        offset: 0,
        cc: None,
    };
    let ((), record) = exchange(&server, move |stream| {
        stream.write_all(&request.encode().unwrap()).unwrap();
        let mut first = vec![0u8; 100_000];
        stream.read_exact(&mut first).unwrap();
        // Gone, with most of the file unsent.
    });
    assert_eq!(record.status, None, "{}", record.detail);
    assert!(
        (100_000..size as u64).contains(&record.bytes),
        "{} bytes recorded",
        record.bytes
    );
}

#[test]
fn a_file_that_shrinks_while_sent_is_cut_and_recorded_with_the_bytes_that_went_out() {
    let root = TestDir::new("srv-shrink-root");
    let path = root.path().join("big.bin");
    std::fs::write(&path, content(4_000_000, 4)).unwrap();
    let server = server_with(&root);
    let request = Request::Get {
        path: "big.bin".into(),
        offset: 0,
        cc: None,
    };
    let (received, record) = exchange(&server, move |stream| {
        stream.write_all(&request.encode().unwrap()).unwrap();
        let mut first = vec![0u8; 100_000];
        stream.read_exact(&mut first).unwrap();
        // The server holds at most the socket's buffers and a chunk more
        // than this, far below the new end.
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(2_000_000)
            .unwrap();
        let mut rest = Vec::new();
        let _ = stream.read_to_end(&mut rest);
        first.len() + rest.len()
    });
    assert_eq!(record.status, None, "{}", record.detail);
    assert_eq!(record.bytes, 2_000_000, "{}", record.detail);
    assert!(record.detail.contains("shrank"), "{}", record.detail);
    // The response frame and the 2 MB, never a clean end past them.
    assert!(received < 2_001_000, "{received} bytes received");
}

#[test]
fn a_client_that_vanishes_mid_upload_leaves_no_file() {
    let root = TestDir::new("srv-vanish-root");
    let server = server_with(&root);
    let ((), record) = exchange(&server, |stream| {
        let request = Request::Put {
            path: "x.bin".into(),
            size: 1_000_000,
            sha256: sha256(b""),
        };
        stream.write_all(&request.encode().unwrap()).unwrap();
        let _ = read_frame(stream).unwrap();
        stream.write_all(&[7u8; 10_000]).unwrap();
        stream.finish().unwrap();
    });
    assert_eq!(record.status, None);
    assert!(
        record.detail.contains("10000 of 1000000"),
        "{}",
        record.detail
    );
    assert!(files_in(root.path()).is_empty());
}

#[test]
fn traversal_attempts_are_refused_and_nothing_is_written_outside() {
    let parent = TestDir::new("srv-trav");
    let root_path = parent.path().join("root");
    std::fs::create_dir(&root_path).unwrap();
    std::fs::write(parent.path().join("secret"), b"outside").unwrap();
    std::os::unix::fs::symlink(parent.path().join("secret"), root_path.join("link")).unwrap();
    std::os::unix::fs::symlink(parent.path(), root_path.join("up")).unwrap();
    let server =
        FileServer::new(Root::new(&root_path).unwrap()).allowing_uploads(UploadPolicy::Anyone);
    for path in [
        "../secret",
        "/etc/passwd",
        "a/../../secret",
        "link",
        "up/secret",
    ] {
        let get = Request::Get {
            path: path.into(),
            offset: 0,
            cc: None,
        };
        let (response, _) = raw_request(&server, get.encode().unwrap());
        assert_eq!(response.status, Status::RefusedPath, "GET {path}");
    }
    for path in ["../x", "/tmp/x", "a/../../x", "up/x", "link"] {
        let put = Request::Put {
            path: path.into(),
            size: 1,
            sha256: sha256(b"x"),
        };
        let (response, _) = raw_request(&server, put.encode().unwrap());
        assert_eq!(response.status, Status::RefusedPath, "PUT {path}");
    }
    assert_eq!(files_in(parent.path()), ["root", "secret"]);
    assert_eq!(
        std::fs::read(parent.path().join("secret")).unwrap(),
        b"outside"
    );
}

#[test]
fn list_shows_entries_sorted_and_hides_uploads_in_progress() {
    let root = TestDir::new("srv-list");
    std::fs::write(root.path().join("b.txt"), b"12345").unwrap();
    std::fs::create_dir(root.path().join("a-dir")).unwrap();
    std::fs::write(root.path().join(".c.sift-part-00ff"), b"partial").unwrap();
    let server = server_with(&root);
    let (entries, record) = exchange(&server, |s| client::list(s, ""));
    let entries = entries.unwrap();
    let summary: Vec<(&str, EntryKind, u64)> = entries
        .iter()
        .map(|e| (e.name.as_str(), e.kind, e.size))
        .collect();
    assert_eq!(
        summary,
        [("a-dir", EntryKind::Dir, 0), ("b.txt", EntryKind::File, 5)]
    );
    assert_eq!((record.verb, record.status), ("LIST", Some(Status::Ok)));
}

#[test]
fn a_missing_file_is_not_found() {
    let root = TestDir::new("srv-missing");
    let out = TestDir::new("srv-missing-out");
    let server = server_with(&root);
    let dest = out.path().join("x");
    let (outcome, _) = exchange(&server, |s| {
        client::get(
            s,
            "nope.bin",
            &DownloadPart::new(&dest),
            false,
            None,
            &mut no_progress(),
        )
    });
    assert!(matches!(
        outcome,
        Err(ClientError::Server {
            status: Status::NotFound,
            ..
        })
    ));
    assert!(
        files_in(out.path()).is_empty(),
        "no partial for a refused request"
    );
}

#[test]
fn garbage_and_oversized_requests_get_an_error_answer() {
    let root = TestDir::new("srv-garbage");
    let server = server_with(&root);
    let (response, record) = raw_request(&server, b"GET / HTTP/1.1\r\n\r\n".to_vec());
    assert_eq!(response.status, Status::BadRequest);
    assert_eq!(record.verb, "?");
    let mut oversized = crate::transfer::frame::MAGIC.to_vec();
    oversized.extend_from_slice(&[1, 1, 0x20, 0x00]);
    let (response, _) = raw_request(&server, oversized);
    assert_eq!(response.status, Status::TooLarge);
}

#[test]
fn perf_counts_what_each_direction_moved() {
    let root = TestDir::new("srv-perf");
    let server = server_with(&root);
    for direction in [PerfDirection::Upload, PerfDirection::Download] {
        let mut intervals = Vec::new();
        let (summary, record) = exchange(&server, |s| {
            run_perf(
                s,
                PerfOptions {
                    direction,
                    duration: Duration::from_millis(200),
                    interval: Duration::from_millis(50),
                },
                &|| None,
                &mut |i| intervals.push(i.clone()),
            )
        });
        let summary = summary.unwrap();
        assert!(summary.bytes > 0);
        assert_eq!(summary.bytes, summary.bytes_received, "{direction:?}");
        assert_eq!(record.bytes, summary.bytes, "server and client agree");
        assert!(!intervals.is_empty());
        let counted: u64 = intervals.iter().map(|i| i.bytes).sum();
        assert_eq!(counted, summary.bytes, "intervals add up to the total");
        // No sliver of an interval at the end: the last runs on to it.
        for interval in &intervals {
            assert!(
                interval.end_s - interval.start_s >= 0.005,
                "{direction:?}: {:.4}-{:.4}",
                interval.start_s,
                interval.end_s
            );
        }
    }
}

/// A connection whose client proved `key` (or none).
struct KeyedConnection(Option<Fingerprint>);

impl ServedConnection for KeyedConnection {
    fn sender_report(&self) -> Option<SenderReport> {
        None
    }

    fn use_controller(&self, _cc: CcConfig) -> Result<(), String> {
        Ok(())
    }

    fn client_key(&self) -> Option<Fingerprint> {
        self.0
    }

    fn wait_for_handshake(&self) -> Pin<Box<dyn Future<Output = bool> + Send + '_>> {
        Box::pin(std::future::ready(true))
    }
}

/// Admits exactly one key.
struct OneKey(Fingerprint);

impl super::super::uploads::ClientGate for OneKey {
    fn admit(&self, key: Option<Fingerprint>) -> Result<(), String> {
        match key {
            Some(key) if key == self.0 => Ok(()),
            other => Err(format!("key {other:?} is not the one")),
        }
    }
}

/// Uploads `data` as `name` over `connection`: the client's outcome.
fn put_as(
    server: &FileServer,
    connection: &(dyn ServedConnection + Sync),
    source: &Path,
    name: &str,
) -> (Result<client::PutOutcome, ClientError>, TransferRecord) {
    exchange_as(server, connection, |s| {
        client::put(
            s,
            client::LocalUpload::prepare(source).unwrap(),
            name,
            &mut no_progress(),
        )
    })
}

#[test]
fn a_read_only_server_refuses_uploads_in_one_line_and_writes_nothing() {
    let root = TestDir::new("srv-ro-root");
    let local = TestDir::new("srv-ro-local");
    let source = local.path().join("up.bin");
    std::fs::write(&source, content(1000, 8)).unwrap();
    let server = FileServer::new(Root::new(root.path()).unwrap());
    let key = KeyedConnection(Some(Fingerprint::of_certificate(b"client")));
    let (outcome, record) = put_as(&server, &key, &source, "up.bin");
    let error = outcome.unwrap_err();
    assert!(
        matches!(
            error,
            ClientError::Server {
                status: Status::RefusedUpload,
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "upload refused: this server is read-only (start it with --allow-put)"
    );
    assert_eq!(record.status, Some(Status::RefusedUpload));
    assert!(files_in(root.path()).is_empty());
}

#[test]
fn only_the_key_the_gate_admits_may_upload() {
    let root = TestDir::new("srv-gate-root");
    let local = TestDir::new("srv-gate-local");
    let data = content(70_000, 9);
    let source = local.path().join("up.bin");
    std::fs::write(&source, &data).unwrap();
    let known = Fingerprint::of_certificate(b"known");
    let server = FileServer::new(Root::new(root.path()).unwrap())
        .allowing_uploads(UploadPolicy::Clients(std::sync::Arc::new(OneKey(known))));
    for stranger in [
        KeyedConnection(None),
        KeyedConnection(Some(Fingerprint::of_certificate(b"stranger"))),
    ] {
        let (outcome, _) = put_as(&server, &stranger, &source, "up.bin");
        let error = outcome.unwrap_err().to_string();
        assert!(error.starts_with("upload refused: key"), "{error}");
        assert!(files_in(root.path()).is_empty());
    }
    let (outcome, _) = put_as(&server, &KeyedConnection(Some(known)), &source, "up.bin");
    assert_eq!(outcome.unwrap().bytes, 70_000);
    assert_eq!(std::fs::read(root.path().join("up.bin")).unwrap(), data);
}

#[test]
fn an_upload_past_the_cap_beside_one_in_progress_is_refused_and_fits_after_it() {
    let root = TestDir::new("srv-cap-root");
    let local = TestDir::new("srv-cap-local");
    let source = local.path().join("up.bin");
    std::fs::write(&source, content(60_000, 10)).unwrap();
    let server = server_with(&root).with_upload_budget(UploadBudget::new(100_000, 0));
    // Another upload of 50 000 bytes is in progress: 50 000 + 60 000 is
    // past the 100 000-byte cap.
    let in_progress = server.upload_budget().reserve(50_000, None).unwrap();
    let (outcome, record) = put_as(&server, &NoConnection, &source, "up.bin");
    let error = outcome.unwrap_err().to_string();
    assert_eq!(
        error,
        "upload refused: 50000 bytes are being uploaded already and this server takes at most 100000 at once: 60000 more do not fit now, try again later"
    );
    assert_eq!(record.status, Some(Status::RefusedUpload));
    assert!(files_in(root.path()).is_empty());
    // Once it ended, the same upload fits, and its own share is released.
    drop(in_progress);
    let (outcome, _) = put_as(&server, &NoConnection, &source, "up.bin");
    assert_eq!(outcome.unwrap().bytes, 60_000);
    assert_eq!(server.upload_budget().in_progress(), 0);
}

#[test]
fn a_request_that_does_not_arrive_in_time_is_answered_and_recorded() {
    let root = TestDir::new("srv-slow-request");
    let server = server_with(&root).with_request_timeout(Duration::from_millis(200));
    let request = Request::List { path: ".".into() }.encode().unwrap();
    let (response, record) = exchange(&server, move |stream| {
        // Half a request, then nothing: the server must not wait for the
        // rest beyond its timeout (a server that did fails the read here
        // instead of hanging the test).
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        stream.write_all(&request[..request.len() / 2]).unwrap();
        parse_response(&read_frame(stream).unwrap()).unwrap()
    });
    assert_eq!(response.status, Status::BadRequest);
    assert_eq!(
        response.message, "no complete request within 0.2 s",
        "the client is told why"
    );
    assert_eq!(
        (record.verb, record.status),
        ("?", Some(Status::BadRequest))
    );
    assert_eq!(record.detail, "no complete request within 0.2 s");
}

/// A connection whose requests came in 0-RTT data, replayed: its
/// handshake never completes.
struct ReplayedConnection;

impl ServedConnection for ReplayedConnection {
    fn sender_report(&self) -> Option<SenderReport> {
        None
    }

    fn use_controller(&self, _cc: CcConfig) -> Result<(), String> {
        Ok(())
    }

    fn client_key(&self) -> Option<Fingerprint> {
        Some(Fingerprint::of_certificate(b"client"))
    }

    fn wait_for_handshake(&self) -> Pin<Box<dyn Future<Output = bool> + Send + '_>> {
        Box::pin(std::future::ready(false))
    }
}

#[test]
fn from_early_data_a_download_is_served_and_generated_data_is_not() {
    // Before, PERF was served from 0-RTT data: a replayed first flight
    // made the server send up to an hour of generated data.
    let root = TestDir::new("srv-early-root");
    let out = TestDir::new("srv-early-out");
    let data = content(50_000, 11);
    std::fs::write(root.path().join("f.bin"), &data).unwrap();
    let server = server_with(&root);
    let dest = out.path().join("f.bin");
    let (outcome, record) = exchange_as(&server, &ReplayedConnection, |s| {
        client::get(
            s,
            "f.bin",
            &DownloadPart::new(&dest),
            false,
            None,
            &mut no_progress(),
        )
    });
    assert_eq!(outcome.unwrap().bytes, 50_000, "a GET is replay-safe");
    assert_eq!(record.status, Some(Status::Ok));

    let request = Request::Perf {
        direction: PerfDirection::Download,
        limit: PerfLimit::Duration(Duration::from_millis(200)),
    };
    let (received, record) = exchange_as(&server, &ReplayedConnection, |s| {
        s.write_all(&request.encode().unwrap()).unwrap();
        s.finish().unwrap();
        let mut received = Vec::new();
        let _ = s.read_to_end(&mut received);
        received
    });
    assert_eq!(record.verb, "PERF");
    assert_eq!((record.bytes, record.status), (0, None), "{record:?}");
    assert!(received.is_empty(), "{} bytes sent", received.len());
}

#[test]
fn an_upload_in_early_data_waits_for_the_handshake_and_a_replayed_one_writes_nothing() {
    let root = TestDir::new("srv-early-put-root");
    let local = TestDir::new("srv-early-put-local");
    let source = local.path().join("up.bin");
    std::fs::write(&source, content(10_000, 12)).unwrap();
    let server = server_with(&root);
    let (outcome, record) = put_as(&server, &ReplayedConnection, &source, "up.bin");
    assert!(outcome.is_err());
    assert_eq!((record.verb, record.bytes, record.status), ("PUT", 0, None));
    assert!(
        record.detail.contains("replayed 0-RTT"),
        "{}",
        record.detail
    );
    assert!(files_in(root.path()).is_empty(), "nothing written");
    // Once the handshake completes (here: at once) the same upload lands.
    let (outcome, _) = put_as(&server, &NoConnection, &source, "up.bin");
    assert_eq!(outcome.unwrap().bytes, 10_000);
}
