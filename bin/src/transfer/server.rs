//! The server side of one stream: read the request, serve it from under the
//! root, answer, and say what happened in a [`TransferRecord`].
//!
//! A failure here is this stream's alone: every error becomes a response
//! (or, mid-data, an aborted stream) and a record; nothing panics and
//! nothing outside the root is read or written.
//!
//! Serving is async: a stream waiting for its request, for the client's
//! credit or for its data holds no thread. Every file-system call (open,
//! stat, read, write, hash, rename, list) runs on the runtime's bounded
//! blocking pool, one chunk at a time, so a slow disk delays the streams
//! that use it and never the runtime's few threads. The one exception is a
//! read of what the page cache already holds (`cached_read`), which cannot
//! wait for the disk.
//!
//! Beside it: `digests`, the whole-file digests a download carries, taken
//! once per version of a file; `perf`, PERF's source and sink.

use std::fs::File;
use std::future::Future;
use std::io::{self, Write};
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::buffers::CHUNK_LEN;
use super::cached_read::{read_at, read_cached_at};
use super::confine::{open_regular_file, PathError, Root, UPLOAD_PART_MARKER};
use super::digest::{sha256, Sha256Digest, Sha256Hasher};
use super::duplex::{abort_codes, AsyncDuplex};
use super::error::ProtocolError;
use super::frame::read_frame_async;
use super::hq;
use super::listing::ListEntry;
use super::part_file::{is_disk_full, UploadPart};
use super::request::{parse_request, Request};
use super::response::{encode_digest, Response, SenderReport, Status};
use super::uploads::{BudgetRefusal, UploadBudget, UploadPolicy};
use digests::{hash_whole, DigestCache, FileVersion};
use sift::crypto::Fingerprint;
use sift_cc::CcConfig;

mod digests;
mod perf;

/// The longest PERF measurement the server takes part in.
pub const MAX_PERF_DURATION: Duration = Duration::from_secs(3600);
/// How long a client has to send its whole request once the stream is
/// being served (`sift-server --request-timeout`): a request is at most
/// one 4 KiB frame, so only a client that means to hold the stream
/// (slowloris) takes longer.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an error answer may wait for the client's credit before the
/// stream is reset instead: a client that grants none must not keep the
/// stream.
pub const ANSWER_GRACE: Duration = Duration::from_secs(2);

/// What serving one stream may ask of the connection it arrived on.
pub trait ServedConnection {
    /// The connection's sender-side counters, for a download's trailer.
    fn sender_report(&self) -> Option<SenderReport>;
    /// Sends the connection's data under `cc` from now on (a client asked
    /// for it); an error says why not.
    fn use_controller(&self, cc: CcConfig) -> Result<(), String>;
    /// The fingerprint of the key the client proved in the handshake, if
    /// it presented one: what decides whether it may upload.
    fn client_key(&self) -> Option<Fingerprint> {
        None
    }
    /// Waits until the connection's handshake has completed: true then,
    /// false if the connection ended first. Until then a request may have
    /// come in 0-RTT data that an attacker replays (RFC 8446 §8), and a
    /// replayed first flight never completes a handshake, so a request
    /// that is not replay-safe waits for this (RFC 8470 §3). No default:
    /// a connection that cannot tell must answer false.
    fn wait_for_handshake(&self) -> Pin<Box<dyn Future<Output = bool> + Send + '_>>;
}

/// A stream with no sift connection behind it (the protocol over a socket
/// pair, in tests): no counters, no controller to switch.
pub struct NoConnection;

impl ServedConnection for NoConnection {
    fn sender_report(&self) -> Option<SenderReport> {
        None
    }

    fn use_controller(&self, cc: CcConfig) -> Result<(), String> {
        Err(format!(
            "this stream has no congestion controller to switch to {}",
            cc.name()
        ))
    }

    /// A socket pair carries no 0-RTT data: nothing on it is a replay.
    fn wait_for_handshake(&self) -> Pin<Box<dyn Future<Output = bool> + Send + '_>> {
        Box::pin(std::future::ready(true))
    }
}

/// What one stream did, for the server's one-line-per-transfer log.
#[derive(Clone, Debug, PartialEq)]
pub struct TransferRecord {
    /// GET, PUT, LIST, PERF, or "?" when the request never arrived.
    pub verb: &'static str,
    pub path: String,
    /// Payload bytes moved (sent for GET/LIST/PERF down, received for PUT/PERF up).
    pub bytes: u64,
    pub elapsed: Duration,
    /// `None`: the stream broke before the transfer completed.
    pub status: Option<Status>,
    /// Why it failed, or empty.
    pub detail: String,
}

impl TransferRecord {
    /// Payload bits per second over the transfer.
    pub fn goodput_bps(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 {
            self.bytes as f64 * 8.0 / secs
        } else {
            0.0
        }
    }

    /// "ok", the status name, or "interrupted".
    pub fn result(&self) -> &'static str {
        self.status.map_or("interrupted", Status::name)
    }
}

/// How a request went wrong.
enum Failure {
    /// Answer the client with this status and message.
    Answer(Status, String),
    /// The stream broke (or was aborted): nothing more can be said on it.
    Broken(String),
    /// The stream broke after `moved` bytes of the file were sent: the
    /// record says how far it got.
    Cut { moved: u64, reason: String },
}

impl From<PathError> for Failure {
    fn from(error: PathError) -> Self {
        let status = match &error {
            PathError::Refused { .. } => Status::RefusedPath,
            PathError::NotFound { .. } | PathError::NoDirectory { .. } => Status::NotFound,
            PathError::Io { .. } => Status::Internal,
        };
        Failure::Answer(status, error.to_string())
    }
}

/// Writes to the client: any error means the client is gone.
async fn send(stream: &mut (impl AsyncWrite + Unpin), bytes: &[u8]) -> Result<(), Failure> {
    stream
        .write_all(bytes)
        .await
        .map_err(|e| Failure::Broken(format!("sending: {e}")))
}

async fn send_response(
    stream: &mut (impl AsyncWrite + Unpin),
    response: &Response,
) -> Result<(), Failure> {
    let frame = response
        .encode()
        .map_err(|e| Failure::Broken(format!("encoding the response: {e}")))?;
    send(stream, &frame).await
}

/// Runs file-system work on the runtime's blocking pool (bounded by the
/// runtime's `max_blocking_threads`), never on a thread that serves tasks.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Failure> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| Failure::Answer(Status::Internal, format!("a file task failed: {e}")))
}

/// Serves GET, PUT, LIST and PERF under one root. Shared by every
/// connection's tasks.
pub struct FileServer {
    root: Root,
    /// Whole-file digests, taken once per version of a file.
    digests: DigestCache,
    /// Controllers a client may ask for its downloads (`--cc` names).
    accepted_controllers: Vec<String>,
    /// The initial window of the controllers clients ask for, in packets
    /// (`None`: each controller's default).
    initial_window: Option<u64>,
    /// Who may upload: nobody unless the server says otherwise.
    uploads: UploadPolicy,
    /// Bytes being uploaded at once, reserved per upload.
    upload_budget: UploadBudget,
    /// How long a stream's request may take to arrive.
    request_timeout: Duration,
    /// Tests: uploads fail with ENOSPC past this many bytes, as on a full disk.
    #[cfg(test)]
    disk_capacity: Option<u64>,
}

impl FileServer {
    /// A server of the files under `root` that runs any controller a client
    /// asks for.
    pub fn new(root: Root) -> Self {
        Self {
            root,
            digests: DigestCache::default(),
            accepted_controllers: CcConfig::NAMES.iter().map(|n| n.to_string()).collect(),
            initial_window: None,
            uploads: UploadPolicy::ReadOnly,
            upload_budget: UploadBudget::default(),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            #[cfg(test)]
            disk_capacity: None,
        }
    }

    /// Answers (and frees) a stream whose request has not fully arrived
    /// `timeout` after it began being served.
    pub fn with_request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Accepts client requests for these controllers only (`--cc` names).
    pub fn accepting_controllers(mut self, names: Vec<String>) -> Self {
        self.accepted_controllers = names;
        self
    }

    /// Starts the controllers clients ask for at `packets` packets, as
    /// the server's own (`--initial-window`).
    pub fn with_initial_window(mut self, packets: u64) -> Self {
        self.initial_window = Some(packets);
        self
    }

    /// Takes uploads from the clients `policy` admits (the default:
    /// none, a read-only server).
    pub fn allowing_uploads(mut self, policy: UploadPolicy) -> Self {
        self.uploads = policy;
        self
    }

    /// Bounds the bytes being uploaded at once by `budget`.
    pub fn with_upload_budget(mut self, budget: UploadBudget) -> Self {
        self.upload_budget = budget;
        self
    }

    /// Who may upload.
    pub fn upload_policy(&self) -> &UploadPolicy {
        &self.uploads
    }

    /// The bound on bytes being uploaded at once.
    pub fn upload_budget(&self) -> &UploadBudget {
        &self.upload_budget
    }

    /// The controllers a client may ask for.
    pub fn accepted_controllers(&self) -> &[String] {
        &self.accepted_controllers
    }

    /// The configuration for a client's `--cc NAME`, if this server runs it.
    fn controller_for(&self, name: &str) -> Result<CcConfig, Failure> {
        let refuse = || {
            Failure::Answer(
                Status::RefusedController,
                format!(
                    "controller {name:?} is not offered here (accepted: {})",
                    self.accepted_controllers.join(", ")
                ),
            )
        };
        let config: CcConfig = name.parse().map_err(|_| refuse())?;
        if !self.accepted_controllers.iter().any(|n| n == config.name()) {
            return Err(refuse());
        }
        Ok(match self.initial_window {
            Some(packets) => config.with_initial_window(packets),
            None => config,
        })
    }

    /// The served root.
    pub fn root(&self) -> &Root {
        &self.root
    }

    /// Serves one stream to its end. `connection` gives the connection's
    /// sender-side statistics for a download's trailer and switches its
    /// controller when a client asks. A request that has not arrived
    /// within the request timeout is answered with an error.
    pub async fn serve<S: AsyncDuplex>(
        &self,
        stream: &mut S,
        connection: &(dyn ServedConnection + Sync),
    ) -> TransferRecord {
        let started = Instant::now();
        let request =
            match tokio::time::timeout(self.request_timeout, read_frame_async(stream)).await {
                Ok(frame) => frame.and_then(|frame| parse_request(&frame)),
                Err(_) => Err(ProtocolError::RequestTimedOut {
                    after: self.request_timeout,
                }),
            };
        let (verb, path, outcome) = match request {
            Ok(request) => {
                let outcome = self.dispatch(stream, &request, connection).await;
                (request.verb(), request.path().to_string(), outcome)
            }
            Err(ProtocolError::EndOfStream) => (
                "?",
                String::new(),
                Err(Failure::Broken("the stream ended before a request".into())),
            ),
            Err(ProtocolError::Io(e)) => ("?", String::new(), Err(Failure::Broken(e.to_string()))),
            Err(e) => {
                let status = match e {
                    ProtocolError::TooLarge { .. } => Status::TooLarge,
                    _ => Status::BadRequest,
                };
                (
                    "?",
                    String::new(),
                    Err(Failure::Answer(status, e.to_string())),
                )
            }
        };
        let (bytes, status, detail) = match outcome {
            Ok(bytes) => (bytes, Some(Status::Ok), String::new()),
            Err(Failure::Answer(status, message)) => {
                // The refusal is the outcome once it is written: a client
                // that read it closes at once, which may overtake the
                // acknowledgement `finish` waits for. A client that grants
                // no credit for it gets a reset instead of holding the
                // stream.
                let answer = Response::error(status, message.clone());
                match tokio::time::timeout(ANSWER_GRACE, send_response(stream, &answer)).await {
                    Ok(Ok(())) => {
                        let _ = stream.finish();
                        (0, Some(status), message)
                    }
                    Ok(Err(_)) => (0, None, message),
                    Err(_) => {
                        stream.abort(abort_codes::UNANSWERED);
                        (0, None, message)
                    }
                }
            }
            Err(Failure::Broken(reason)) => (0, None, reason),
            Err(Failure::Cut { moved, reason }) => (moved, None, reason),
        };
        TransferRecord {
            verb,
            path,
            bytes,
            elapsed: started.elapsed(),
            status,
            detail,
        }
    }

    /// Serves one hq-interop stream ([`super::hq`]: HTTP/0.9, for any
    /// QUIC client): reads `GET /PATH`, answers with the file's bytes and
    /// a FIN, or resets the stream with a code saying why not — there is
    /// no status line to say it in. Uploads, listings and controllers are
    /// sift's own protocol's alone. A GET only reads, so it is served from
    /// 0-RTT data too, before the handshake completes (SECURITY.md).
    pub async fn serve_hq<S: AsyncDuplex>(&self, stream: &mut S) -> TransferRecord {
        let started = Instant::now();
        let request =
            match tokio::time::timeout(self.request_timeout, hq::read_request(stream)).await {
                Ok(line) => line.and_then(|line| hq::parse_request(&line)),
                Err(_) => Err(hq::HqError::BadRequest(format!(
                    "no whole request line within {} s",
                    self.request_timeout.as_secs_f64()
                ))),
            };
        let path = match request {
            Ok(path) => path,
            Err(error) => {
                let local = matches!(error, hq::HqError::Local { .. });
                if !local {
                    stream.abort(hq::abort_codes::BAD_REQUEST);
                }
                return TransferRecord {
                    verb: "GET",
                    path: String::new(),
                    bytes: 0,
                    elapsed: started.elapsed(),
                    status: (!local).then_some(Status::BadRequest),
                    detail: error.to_string(),
                };
            }
        };
        let (bytes, status, detail) = match self.send_hq(stream, &path).await {
            Ok(bytes) => (bytes, Some(Status::Ok), String::new()),
            Err(Failure::Answer(status, message)) => {
                stream.abort(match status {
                    Status::NotFound => hq::abort_codes::NOT_FOUND,
                    Status::RefusedPath => hq::abort_codes::REFUSED,
                    Status::BadRequest => hq::abort_codes::BAD_REQUEST,
                    _ => hq::abort_codes::INTERNAL,
                });
                (0, Some(status), message)
            }
            Err(Failure::Broken(reason)) => (0, None, reason),
            Err(Failure::Cut { moved, reason }) => (moved, None, reason),
        };
        TransferRecord {
            verb: "GET",
            path,
            bytes,
            elapsed: started.elapsed(),
            status,
            detail,
        }
    }

    /// The file at `path` down an hq-interop stream, then its FIN.
    async fn send_hq<S: AsyncDuplex>(&self, stream: &mut S, path: &str) -> Result<u64, Failure> {
        let (file, size) = {
            let (root, path) = (self.root.clone(), path.to_string());
            blocking(move || -> Result<_, Failure> {
                let resolved = root.resolve_existing(&path)?;
                let file = open_regular_file(&path, &resolved)?;
                let size = file.metadata().map_err(internal)?.len();
                Ok((file, size))
            })
            .await??
        };
        let sent = send_file(&Arc::new(file), 0, stream, size).await?;
        if sent < size {
            // A short file would read as a whole one: never end it cleanly.
            stream.abort(hq::abort_codes::INTERNAL);
            return Err(shrank(path, sent, size));
        }
        stream
            .finish()
            .map_err(|e| Failure::Broken(e.to_string()))?;
        Ok(sent)
    }

    async fn dispatch<S: AsyncDuplex>(
        &self,
        stream: &mut S,
        request: &Request,
        connection: &(dyn ServedConnection + Sync),
    ) -> Result<u64, Failure> {
        // What may run on 0-RTT data, before the handshake completes, is
        // what a replay cannot turn into harm (SECURITY.md): the rest
        // waits, and a replay is never acted on.
        if !request.replay_safe() && !connection.wait_for_handshake().await {
            return Err(Failure::Broken(format!(
                "the connection ended before its handshake completed: a {} that may be a replayed 0-RTT request is not acted on",
                request.verb()
            )));
        }
        match request {
            Request::Get { path, offset, cc } => {
                if let Some(name) = cc {
                    // Before any data: the whole download runs under it.
                    let config = self.controller_for(name)?;
                    connection
                        .use_controller(config)
                        .map_err(|e| Failure::Answer(Status::Internal, e))?;
                }
                self.get(stream, path, *offset, connection).await
            }
            Request::Put { path, size, sha256 } => {
                // Before anything touches the disk: who may write at all.
                self.uploads
                    .admit(connection.client_key())
                    .map_err(|refusal| Failure::Answer(Status::RefusedUpload, refusal))?;
                self.put(stream, path, *size, *sha256).await
            }
            Request::List { path } => self.list(stream, path).await,
            Request::Perf { direction, limit } => perf::perf(stream, *direction, *limit).await,
        }
    }

    async fn get<S: AsyncDuplex>(
        &self,
        stream: &mut S,
        path: &str,
        offset: u64,
        connection: &(dyn ServedConnection + Sync),
    ) -> Result<u64, Failure> {
        let (resolved, file, version) = {
            let (root, path) = (self.root.clone(), path.to_string());
            blocking(move || -> Result<_, Failure> {
                let resolved = root.resolve_existing(&path)?;
                let file = open_regular_file(&path, &resolved)?;
                let version = FileVersion::of(&file).map_err(internal)?;
                Ok((resolved, file, version))
            })
            .await??
        };
        let size = version.len;
        if offset > size {
            return Err(Failure::Answer(
                Status::BadRequest,
                format!("offset {offset} is past the end of the {size}-byte file {path:?}"),
            ));
        }
        // A whole file whose digest is not known yet is sent at once, the
        // digest following the data: one pass on the blocking pool hashes
        // each version of a file, shared by every download running at the
        // same time (a thousand concurrent GETs of a new file hash it once).
        // A resume needs the digest of bytes it does not send, so it waits.
        let file = Arc::new(file);
        let known = match self.digests.cached(&resolved, version) {
            Some(digest) => Some(digest),
            None if offset > 0 => Some(self.digest_of(&resolved, &file, version).await?),
            None => None,
        };
        let pending = known
            .is_none()
            .then(|| self.digests.pending(&resolved, &file, version));
        send_response(stream, &Response::ok(size, known)).await?;
        let wanted = size - offset;
        let sent = send_file(&file, offset, stream, wanted).await?;
        if sent < wanted {
            // The file shrank under us: never let the client see a clean end.
            stream.abort(abort_codes::SOURCE_FAILED);
            return Err(shrank(path, sent, wanted));
        }
        if let Some(mut pending) = pending {
            let shared = pending
                .wait_for(Option::is_some)
                .await
                .ok()
                .and_then(|d| *d);
            let digest = match shared {
                Some(digest) => digest,
                // The shared pass failed: take one of our own.
                None => self.digest_of(&resolved, &file, version).await?,
            };
            let frame = encode_digest(digest)
                .map_err(|e| Failure::Broken(format!("encoding the digest: {e}")))?;
            send(stream, &frame).await?;
        }
        // The trailer reports the sender's counters for the whole transfer:
        // take them once the data is acknowledged, not when it was merely
        // queued (the send buffer holds megabytes).
        stream
            .wait_delivered()
            .await
            .map_err(|e| Failure::Broken(e.to_string()))?;
        if let Some(report) = connection.sender_report() {
            let frame = report
                .encode()
                .map_err(|e| Failure::Broken(format!("encoding the trailer: {e}")))?;
            send(stream, &frame).await?;
        }
        stream
            .finish()
            .map_err(|e| Failure::Broken(e.to_string()))?;
        Ok(sent)
    }

    /// The whole file's digest, from the cache when the file is unchanged,
    /// else read and hashed on the blocking pool.
    async fn digest_of(
        &self,
        path: &Path,
        file: &Arc<File>,
        version: FileVersion,
    ) -> Result<Sha256Digest, Failure> {
        if let Some(digest) = self.digests.cached(path, version) {
            return Ok(digest);
        }
        let file = Arc::clone(file);
        let digest = blocking(move || hash_whole(&file).map_err(internal)).await??;
        self.digests.remember(path, version, digest);
        Ok(digest)
    }

    async fn put<S: AsyncDuplex>(
        &self,
        stream: &mut S,
        path: &str,
        size: u64,
        expected: Sha256Digest,
    ) -> Result<u64, Failure> {
        let (target, free) = {
            let (root, path) = (self.root.clone(), path.to_string());
            blocking(move || -> Result<_, Failure> {
                let target = root.resolve_upload(&path)?;
                let free = available_bytes(&target.directory);
                Ok((target, free))
            })
            .await??
        };
        let mut reservation = self
            .upload_budget
            .reserve(size, free)
            .map_err(budget_refusal)?;
        let part = {
            let target = target.clone();
            blocking(move || UploadPart::create(&target)).await?
        };
        let mut part = part.map_err(|e| storage_failure(&e))?;
        // "Go ahead": the client sends the data only after this.
        send_response(stream, &Response::ok(0, None)).await?;
        let mut hasher = Sha256Hasher::new();
        let mut buf = vec![0u8; CHUNK_LEN];
        let mut received = 0u64;
        while received < size {
            let want = (size - received).min(CHUNK_LEN as u64) as usize;
            let n = read_some(stream, &mut buf[..want]).await?;
            if n == 0 {
                return Err(Failure::Broken(format!(
                    "the client stopped after {received} of {size} bytes"
                )));
            }
            hasher.update(&buf[..n]);
            let stored;
            (part, buf, stored) = self.store(part, buf, n, received).await?;
            if stored.is_ok() {
                reservation.wrote(n as u64);
            }
            if let Err(e) = stored {
                drop(part);
                if is_disk_full(&e) {
                    // Take in the rest (bounded by the announced size) so the
                    // client, still sending, reaches our answer.
                    let rest = size - received - n as u64;
                    let _ = drain(stream, rest).await;
                }
                return Err(storage_failure(&e));
            }
            received += n as u64;
        }
        if read_some(stream, &mut buf[..1]).await? != 0 {
            return Err(Failure::Answer(
                Status::BadRequest,
                format!("more data than the announced {size} bytes"),
            ));
        }
        let actual = hasher.finish();
        if actual != expected {
            return Err(Failure::Answer(
                Status::HashMismatch,
                format!("received data has SHA-256 {actual}, announced {expected}; nothing kept"),
            ));
        }
        blocking(move || part.commit(&target.path()))
            .await?
            .map_err(|e| storage_failure(&e))?;
        send_response(stream, &Response::ok(size, Some(actual))).await?;
        stream
            .finish()
            .map_err(|e| Failure::Broken(e.to_string()))?;
        Ok(size)
    }

    /// Appends `buf[..len]` to the upload on the blocking pool (`already`
    /// bytes are stored), giving back the upload and the buffer.
    async fn store(
        &self,
        mut part: UploadPart,
        buf: Vec<u8>,
        len: usize,
        already: u64,
    ) -> Result<(UploadPart, Vec<u8>, io::Result<()>), Failure> {
        #[cfg(test)]
        let capacity = self.disk_capacity;
        blocking(move || {
            #[cfg(test)]
            if capacity.is_some_and(|capacity| already + len as u64 > capacity) {
                return (part, buf, Err(io::Error::from_raw_os_error(libc::ENOSPC)));
            }
            #[cfg(not(test))]
            let _ = already;
            let stored = part.file().write_all(&buf[..len]);
            (part, buf, stored)
        })
        .await
    }

    async fn list<S: AsyncDuplex>(&self, stream: &mut S, path: &str) -> Result<u64, Failure> {
        let (root, owned_path) = (self.root.clone(), path.to_string());
        let json = blocking(move || list_json(&root, &owned_path)).await??;
        send_response(
            stream,
            &Response::ok(json.len() as u64, Some(sha256(&json))),
        )
        .await?;
        send(stream, &json).await?;
        stream
            .finish()
            .map_err(|e| Failure::Broken(e.to_string()))?;
        Ok(json.len() as u64)
    }
}

/// LIST's answer for `path`: the entries of a directory (or the one file)
/// as JSON, uploads in progress left out.
fn list_json(root: &Root, path: &str) -> Result<Vec<u8>, Failure> {
    let resolved = root.resolve_existing(path)?;
    let meta = resolved.metadata().map_err(internal)?;
    let mut entries = Vec::new();
    if meta.is_dir() {
        for entry in std::fs::read_dir(&resolved).map_err(internal)? {
            let entry = entry.map_err(internal)?;
            let Ok(name) = entry.file_name().into_string() else {
                continue; // not UTF-8: not addressable by a request either
            };
            if name.contains(UPLOAD_PART_MARKER) {
                continue;
            }
            if let Ok(meta) = entry.path().symlink_metadata() {
                entries.push(ListEntry::from_metadata(name, &meta));
            }
        }
        entries.sort_by(|a, b| a.name.cmp(&b.name));
    } else {
        let name = resolved
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or(path)
            .to_string();
        entries.push(ListEntry::from_metadata(name, &meta));
    }
    serde_json::to_vec(&entries).map_err(|e| internal(io::Error::other(e)))
}

/// Reads once; an error means the client is gone.
async fn read_some<R: AsyncRead + Unpin + ?Sized>(
    reader: &mut R,
    buf: &mut [u8],
) -> Result<usize, Failure> {
    reader
        .read(buf)
        .await
        .map_err(|e| Failure::Broken(format!("receiving: {e}")))
}

/// Reads and discards up to `limit` bytes, stopping early at the end of
/// the stream; returns the count.
async fn drain<R: AsyncRead + Unpin + ?Sized>(reader: &mut R, limit: u64) -> Result<u64, Failure> {
    let mut buf = vec![0u8; CHUNK_LEN];
    let mut drained = 0u64;
    while drained < limit {
        let want = (limit - drained).min(CHUNK_LEN as u64) as usize;
        let n = read_some(reader, &mut buf[..want]).await?;
        if n == 0 {
            break;
        }
        drained += n as u64;
    }
    Ok(drained)
}

/// Sends up to `limit` bytes of `file` from `offset`, stopping early at
/// its end, and returns the count. What the page cache holds goes straight
/// into the stream's send buffer where the stream can take it so
/// (`write_cached_file`); otherwise each chunk is read here if cached, or
/// on the blocking pool if not, then written. Read errors on the file are
/// internal errors; write errors mean the client is gone.
async fn send_file<W: AsyncDuplex + ?Sized>(
    file: &Arc<File>,
    offset: u64,
    writer: &mut W,
    limit: u64,
) -> Result<u64, Failure> {
    // Allocated on first use: a download served straight from the page
    // cache never needs it, and 10 000 of them each holding 64 KiB would
    // be 640 MB.
    let mut buf = Vec::new();
    let mut sent = 0u64;
    while sent < limit {
        let want = (limit - sent).min(CHUNK_LEN as u64) as usize;
        let at = offset + sent;
        let cut = |e: std::io::Error| Failure::Cut {
            moved: sent,
            reason: format!("sending: {e}"),
        };
        let straight = writer
            .write_cached_file(file, at, want)
            .await
            .map_err(cut)?;
        if let Some(n) = straight {
            sent += n as u64;
            continue;
        }
        if buf.is_empty() {
            buf = vec![0u8; CHUNK_LEN];
        }
        // What the page cache holds is read here; only a read that would
        // wait for the disk goes to the blocking pool.
        let read = match read_cached_at(file, &mut buf[..want], at) {
            Some(read) => read,
            None => {
                let file = Arc::clone(file);
                let read;
                (buf, read) = blocking(move || {
                    let read = read_at(&file, &mut buf[..want], at);
                    (buf, read)
                })
                .await?;
                read
            }
        };
        let n = read.map_err(internal)?;
        if n == 0 {
            break;
        }
        writer.write_all(&buf[..n]).await.map_err(cut)?;
        sent += n as u64;
    }
    Ok(sent)
}

/// A file that ended after `sent` of the `wanted` bytes it had when the
/// transfer began: recorded with the bytes that did go out.
fn shrank(path: &str, sent: u64, wanted: u64) -> Failure {
    Failure::Cut {
        moved: sent,
        reason: format!("{path:?} shrank while being sent ({sent} of {wanted} bytes)"),
    }
}

fn internal(error: io::Error) -> Failure {
    Failure::Answer(Status::Internal, error.to_string())
}

fn budget_refusal(refusal: BudgetRefusal) -> Failure {
    let status = match refusal {
        BudgetRefusal::OverCap { .. } => Status::RefusedUpload,
        BudgetRefusal::NoRoom { .. } => Status::DiskFull,
    };
    Failure::Answer(status, refusal.to_string())
}

fn storage_failure(error: &io::Error) -> Failure {
    if is_disk_full(error) {
        Failure::Answer(
            Status::DiskFull,
            "the server's disk is full; the upload was not kept".into(),
        )
    } else {
        Failure::Answer(Status::Internal, format!("storing the upload: {error}"))
    }
}

/// Bytes available to unprivileged writers on the filesystem holding `dir`.
fn available_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut stats = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `c_path` is a valid NUL-terminated string and `stats` is a
    // properly sized out-parameter that statvfs fills on success.
    let rc = unsafe { libc::statvfs(c_path.as_ptr(), stats.as_mut_ptr()) };
    if rc != 0 {
        return None;
    }
    // SAFETY: statvfs returned 0, so it initialised `stats`.
    let stats = unsafe { stats.assume_init() };
    // The field widths differ between platforms (u32 on some 32-bit ones).
    #[allow(clippy::unnecessary_cast)]
    Some((stats.f_bavail as u64).saturating_mul(stats.f_frsize as u64))
}

#[cfg(test)]
mod tests;
