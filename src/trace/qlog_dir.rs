//! The traces of a qlog directory (`QLOGDIR`, `--qlog DIR`): one file per
//! connection whose peer proved its address, and what they may cost.
//!
//! A server makes a connection for every client Initial it takes, spoofed
//! ones and busy refusals included, and opening a file for each let a
//! flood of spoofed Initials fill a disk. So:
//! - a server connection's trace is held in memory, at most
//!   [`QlogLimits::max_held_bytes`], until its client's address is
//!   validated (a Handshake packet, a Retry token or an address token:
//!   [`Event::AddressValidated`]), and only then written to its file; a
//!   connection that never gets there (a spoofed Initial, a refusal, a
//!   handshake that times out) leaves no file, and one whose held trace
//!   outgrows the limit goes untraced. A client's trace is written from
//!   the start: it chose its server.
//! - at most [`QlogLimits::max_open_files`] traces are open at once; a
//!   connection validated while that many are open goes untraced.
//! - the traces of one directory write at most [`QlogLimits::max_bytes`]
//!   in all; past that every trace stops (between two events, so each
//!   file still parses) and no new one starts.
//!
//! Each limit reached is logged once per directory.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use super::{qlog_path, Event, Observer, QlogWriter, TraceStart};
use crate::Side;

/// Trace files a qlog directory holds open at once, by default.
pub const DEFAULT_MAX_OPEN_QLOG_FILES: usize = 256;
/// Bytes the traces of a qlog directory write in all, by default: 1 GiB.
pub const DEFAULT_MAX_QLOG_BYTES: u64 = 1 << 30;
/// Bytes of a server connection's trace held before its client's address
/// is validated, by default. A handshake's first flight takes about 10 KiB.
pub const DEFAULT_MAX_HELD_QLOG_BYTES: usize = 64 * 1024;

/// What the traces of one qlog directory may cost ([`super::TraceSink::qlog_dir_limited`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QlogLimits {
    /// Trace files open at once.
    pub max_open_files: usize,
    /// Bytes written to the directory in all.
    pub max_bytes: u64,
    /// Bytes of one server connection's trace held in memory until its
    /// client's address is validated.
    pub max_held_bytes: usize,
}

impl Default for QlogLimits {
    fn default() -> Self {
        Self {
            max_open_files: DEFAULT_MAX_OPEN_QLOG_FILES,
            max_bytes: DEFAULT_MAX_QLOG_BYTES,
            max_held_bytes: DEFAULT_MAX_HELD_QLOG_BYTES,
        }
    }
}

/// One qlog directory and what its traces have spent, shared by them all.
#[derive(Debug)]
pub(super) struct QlogDir {
    dir: PathBuf,
    limits: QlogLimits,
    open_files: AtomicUsize,
    bytes_written: AtomicU64,
    warned_files: AtomicBool,
    warned_bytes: AtomicBool,
}

impl QlogDir {
    pub(super) fn new(dir: PathBuf, limits: QlogLimits) -> Self {
        Self {
            dir,
            limits,
            open_files: AtomicUsize::new(0),
            bytes_written: AtomicU64::new(0),
            warned_files: AtomicBool::new(false),
            warned_bytes: AtomicBool::new(false),
        }
    }

    /// The observer of a connection starting as `start`: `None` once the
    /// directory's bytes are spent.
    pub(super) fn observer_for(self: &Arc<Self>, start: &TraceStart) -> Option<Box<dyn Observer>> {
        if self.bytes_spent() {
            return None;
        }
        let file = Arc::new(Mutex::new(TraceFile {
            path: qlog_path(&self.dir, start),
            state: FileState::Held(Vec::new()),
            dir: Arc::clone(self),
        }));
        let writer = match QlogWriter::new(
            Box::new(SharedFile(Arc::clone(&file))),
            start.side,
            start.now,
        ) {
            Ok(writer) => writer,
            Err(error) => {
                tracing::warn!(%error, "cannot start a qlog trace");
                return None;
            }
        };
        if start.side == Side::Client {
            lock(&file).open();
        }
        Some(Box::new(DirTrace {
            writer,
            file,
            stopped: false,
        }))
    }

    fn bytes_spent(&self) -> bool {
        self.bytes_written.load(Ordering::Relaxed) >= self.limits.max_bytes
    }

    /// Takes a place among the open files, if one is free.
    fn take_file(&self) -> bool {
        let max = self.limits.max_open_files;
        let taken = self
            .open_files
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |open| {
                (open < max).then_some(open + 1)
            })
            .is_ok();
        if !taken && !self.warned_files.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                dir = %self.dir.display(),
                max,
                "qlog: this many traces are open already; connections go untraced until one closes"
            );
        }
        taken
    }

    fn give_back_file(&self) {
        let _ = self
            .open_files
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |open| {
                open.checked_sub(1)
            });
    }

    /// Counts `bytes` written; false once the directory's bytes are spent.
    fn charge(&self, bytes: usize) -> bool {
        let before = self
            .bytes_written
            .fetch_add(bytes as u64, Ordering::Relaxed);
        let within = before.saturating_add(bytes as u64) < self.limits.max_bytes;
        if !within && !self.warned_bytes.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                dir = %self.dir.display(),
                max_bytes = self.limits.max_bytes,
                "qlog: the traces wrote all they may; tracing stops"
            );
        }
        within
    }
}

/// Where one trace's bytes are.
#[derive(Debug)]
enum FileState {
    /// In memory, until the peer's address is validated.
    Held(Vec<u8>),
    /// In its file (a place among the open files taken).
    Open(BufWriter<File>),
    /// Given up: written no more.
    Stopped,
}

/// One connection's trace, its writer's output.
#[derive(Debug)]
struct TraceFile {
    path: PathBuf,
    state: FileState,
    dir: Arc<QlogDir>,
}

impl TraceFile {
    /// Writes what is held to the trace's file and the rest straight there.
    fn open(&mut self) {
        if !matches!(self.state, FileState::Held(_)) {
            return;
        }
        let FileState::Held(held) = std::mem::replace(&mut self.state, FileState::Stopped) else {
            return;
        };
        if self.dir.bytes_spent() || !self.dir.take_file() {
            return;
        }
        match create(&self.path, &held) {
            Ok(file) if self.dir.charge(held.len()) => self.state = FileState::Open(file),
            Ok(_) => self.dir.give_back_file(),
            Err(error) => {
                tracing::warn!(path = %self.path.display(), %error, "cannot write a qlog trace");
                self.dir.give_back_file();
            }
        }
    }

    /// Whether the next event may be written; stops the trace if not.
    fn may_write(&mut self) -> bool {
        let go_on = match &self.state {
            FileState::Held(held) => held.len() <= self.dir.limits.max_held_bytes,
            FileState::Open(_) => !self.dir.bytes_spent(),
            FileState::Stopped => false,
        };
        if !go_on {
            self.stop();
        }
        go_on
    }

    fn stop(&mut self) {
        if let FileState::Open(mut file) = std::mem::replace(&mut self.state, FileState::Stopped) {
            if let Err(error) = file.flush() {
                tracing::warn!(path = %self.path.display(), %error, "cannot write a qlog trace");
            }
            self.dir.give_back_file();
        }
    }
}

impl Drop for TraceFile {
    fn drop(&mut self) {
        self.stop();
    }
}

fn create(path: &Path, held: &[u8]) -> io::Result<BufWriter<File>> {
    let mut file = BufWriter::new(File::create(path)?);
    file.write_all(held)?;
    Ok(file)
}

fn lock(file: &Mutex<TraceFile>) -> MutexGuard<'_, TraceFile> {
    file.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The writer a trace's [`QlogWriter`] writes through.
struct SharedFile(Arc<Mutex<TraceFile>>);

impl Write for SharedFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut guard = lock(&self.0);
        let file = &mut *guard;
        match &mut file.state {
            FileState::Held(held) => held.extend_from_slice(buf),
            FileState::Open(out) => {
                out.write_all(buf)?;
                // Past the limit the trace stops before its next event,
                // not in the middle of this one.
                file.dir.charge(buf.len());
            }
            FileState::Stopped => {}
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut lock(&self.0).state {
            FileState::Open(out) => out.flush(),
            FileState::Held(_) | FileState::Stopped => Ok(()),
        }
    }
}

/// A connection's observer in a qlog directory: the qlog writer, its file
/// opened once the peer's address is validated.
struct DirTrace {
    writer: QlogWriter,
    file: Arc<Mutex<TraceFile>>,
    stopped: bool,
}

impl std::fmt::Debug for DirTrace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirTrace")
            .field("path", &lock(&self.file).path)
            .field("stopped", &self.stopped)
            .finish_non_exhaustive()
    }
}

impl Observer for DirTrace {
    fn event(&mut self, now: Instant, event: &Event<'_>) {
        if self.stopped {
            return;
        }
        if !lock(&self.file).may_write() {
            self.stopped = true;
            return;
        }
        self.writer.event(now, event);
        if matches!(event, Event::AddressValidated) {
            lock(&self.file).open();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ConnectionId;

    fn scratch(test: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("sift-qlog-dir-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn start(side: Side, cid: u8) -> TraceStart {
        TraceStart {
            side,
            local_cid: ConnectionId::new(&[cid; 8]).unwrap(),
            now: Instant::now(),
        }
    }

    fn files(dir: &Path) -> usize {
        std::fs::read_dir(dir).unwrap().count()
    }

    /// Some events of a connection, `count` of them.
    fn events(observer: &mut dyn Observer, count: usize) {
        let frames = [1u8; 100];
        for packet_number in 0..count as u64 {
            observer.event(
                Instant::now(),
                &Event::PacketSent {
                    space: crate::recovery::SpaceId::Initial,
                    zero_rtt: false,
                    packet_number,
                    size: 1200,
                    frames: &frames,
                },
            );
        }
    }

    #[test]
    fn a_server_trace_gets_its_file_only_once_the_address_is_validated() {
        let path = scratch("validated");
        let dir = Arc::new(QlogDir::new(path.clone(), QlogLimits::default()));
        let mut unvalidated = dir.observer_for(&start(Side::Server, 1)).unwrap();
        events(unvalidated.as_mut(), 3);
        drop(unvalidated);
        assert_eq!(files(&path), 0, "a spoofed Initial leaves no file");

        let mut validated = dir.observer_for(&start(Side::Server, 2)).unwrap();
        events(validated.as_mut(), 3);
        validated.event(Instant::now(), &Event::AddressValidated);
        events(validated.as_mut(), 2);
        drop(validated);
        let trace = qlog_path(&path, &start(Side::Server, 2));
        let read = super::super::read_trace(&trace).unwrap();
        assert_eq!(
            read.iter().filter(|e| e.name == "quic:packet_sent").count(),
            5
        );
        assert_eq!(dir.open_files.load(Ordering::Relaxed), 0);

        let mut client = dir.observer_for(&start(Side::Client, 3)).unwrap();
        events(client.as_mut(), 1);
        assert_eq!(files(&path), 2, "a client's trace is written at once");
        client.event(Instant::now(), &Event::AddressValidated);
        events(client.as_mut(), 2);
        drop(client);
        let trace = qlog_path(&path, &start(Side::Client, 3));
        let read = super::super::read_trace(&trace).unwrap();
        assert_eq!(
            read.iter().filter(|e| e.name == "quic:packet_sent").count(),
            3
        );
        let _ = std::fs::remove_dir_all(&path);
    }

    #[test]
    fn a_held_trace_past_its_limit_is_given_up() {
        let path = scratch("held");
        let limits = QlogLimits {
            max_held_bytes: 4096,
            ..QlogLimits::default()
        };
        let dir = Arc::new(QlogDir::new(path.clone(), limits));
        let mut observer = dir.observer_for(&start(Side::Server, 1)).unwrap();
        events(observer.as_mut(), 100);
        observer.event(Instant::now(), &Event::AddressValidated);
        drop(observer);
        assert_eq!(files(&path), 0);
        let _ = std::fs::remove_dir_all(&path);
    }

    #[test]
    fn open_files_and_bytes_written_are_capped() {
        let path = scratch("caps");
        let limits = QlogLimits {
            max_open_files: 2,
            max_bytes: 64 * 1024,
            ..QlogLimits::default()
        };
        let dir = Arc::new(QlogDir::new(path.clone(), limits));
        let mut open: Vec<_> = (0..3)
            .map(|cid| dir.observer_for(&start(Side::Client, cid)).unwrap())
            .collect();
        assert_eq!(files(&path), 2, "two open at once");
        open.truncate(1);
        let mut third = dir.observer_for(&start(Side::Client, 9)).unwrap();
        assert_eq!(files(&path), 3, "a place freed");
        events(third.as_mut(), 10_000);
        drop(third);
        drop(open);
        let written: u64 = std::fs::read_dir(&path)
            .unwrap()
            .map(|e| e.unwrap().metadata().unwrap().len())
            .sum();
        // Stopped before the event after the limit: one event beyond at most.
        assert!(written < 64 * 1024 + 4096, "{written} bytes");
        let trace = qlog_path(&path, &start(Side::Client, 9));
        assert!(super::super::read_trace(&trace).is_ok(), "it still parses");
        assert!(dir.observer_for(&start(Side::Client, 10)).is_none());
        let _ = std::fs::remove_dir_all(&path);
    }
}
