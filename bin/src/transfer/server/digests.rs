//! Whole-file digests for downloads: taken once per version of a file
//! (size, mtime and inode), kept while that version lasts, and shared by
//! every download that wants one while it is being taken.
//!
//! Owns: the cache and the passes under way. Must not: answer a stream
//! (the server decides when a download waits for its digest).

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use crate::transfer::digest::{Sha256Digest, Sha256Hasher};

/// What identifies one version of a file: size, mtime and inode.
#[derive(Clone, Copy, PartialEq)]
pub(super) struct FileVersion {
    /// The length, which a download announces.
    pub(super) len: u64,
    modified: Option<SystemTime>,
    inode: u64,
}

impl FileVersion {
    /// The version of the open `file` (an fstat: call it off the runtime).
    pub(super) fn of(file: &File) -> io::Result<Self> {
        let meta = file.metadata()?;
        Ok(Self {
            len: meta.len(),
            modified: meta.modified().ok(),
            inode: meta.ino(),
        })
    }
}

/// A file's digest with the version of the file it was taken of.
#[derive(Clone, Copy)]
struct CachedDigest {
    version: FileVersion,
    digest: Sha256Digest,
}

/// A digest pass under way for one version of a file: its result arrives
/// on `result` (`None` until then; the channel closes if the pass failed).
struct PendingDigest {
    version: FileVersion,
    result: tokio::sync::watch::Receiver<Option<Sha256Digest>>,
}

/// The digests of the served files, and those being taken.
#[derive(Default)]
pub(super) struct DigestCache {
    /// Whole-file digests, so resumes and repeated downloads do not re-read
    /// the file; an entry counts only while size, mtime and inode agree.
    digests: Arc<Mutex<HashMap<PathBuf, CachedDigest>>>,
    /// Digests being taken: one pass per version of a file however many
    /// downloads of it run at once; each waits for that pass's result.
    hashing: Arc<Mutex<HashMap<PathBuf, PendingDigest>>>,
    /// Tests: shared digest passes started.
    #[cfg(test)]
    pub(super) passes: Arc<std::sync::atomic::AtomicUsize>,
}

impl DigestCache {
    /// The file's digest, if it was taken of this version of it.
    pub(super) fn cached(&self, path: &Path, version: FileVersion) -> Option<Sha256Digest> {
        let cached = self.digests.lock().ok()?.get(path).copied()?;
        (cached.version == version).then_some(cached.digest)
    }

    /// Keeps `digest` as that of this version of the file.
    pub(super) fn remember(&self, path: &Path, version: FileVersion, digest: Sha256Digest) {
        if let Ok(mut cache) = self.digests.lock() {
            cache.insert(path.to_path_buf(), CachedDigest { version, digest });
        }
    }

    /// Where this version's digest will arrive: the pass already under way
    /// for it, or a new one started on the blocking pool. The pass keeps
    /// the digest in the cache when it is done.
    pub(super) fn pending(
        &self,
        path: &Path,
        file: &Arc<File>,
        version: FileVersion,
    ) -> tokio::sync::watch::Receiver<Option<Sha256Digest>> {
        let Ok(mut hashing) = self.hashing.lock() else {
            // A poisoned map: a closed channel makes the caller hash alone.
            return tokio::sync::watch::channel(None).1;
        };
        if let Some(pending) = hashing.get(path) {
            // A closed channel is a pass that failed: start another.
            if pending.version == version && pending.result.has_changed().is_ok() {
                return pending.result.clone();
            }
        }
        // A pass may have ended since the caller looked in the cache: it
        // keeps its digest there before it leaves `hashing`, so under this
        // lock the cache has it.
        if let Some(digest) = self.cached(path, version) {
            return tokio::sync::watch::channel(Some(digest)).1;
        }
        let (sender, result) = tokio::sync::watch::channel(None);
        hashing.insert(
            path.to_path_buf(),
            PendingDigest {
                version,
                result: result.clone(),
            },
        );
        #[cfg(test)]
        self.passes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (digests, hashing) = (Arc::clone(&self.digests), Arc::clone(&self.hashing));
        let (path, file) = (path.to_path_buf(), Arc::clone(file));
        tokio::task::spawn_blocking(move || {
            if let Ok(digest) = hash_whole(&file) {
                if let Ok(mut cache) = digests.lock() {
                    cache.insert(path.clone(), CachedDigest { version, digest });
                }
                sender.send_replace(Some(digest));
            }
            if let Ok(mut hashing) = hashing.lock() {
                if hashing.get(&path).is_some_and(|p| p.version == version) {
                    hashing.remove(&path);
                }
            }
        });
        result
    }
}

/// The digest of the whole of `file`, read from its start.
pub(super) fn hash_whole(file: &File) -> io::Result<Sha256Digest> {
    let mut reader: &File = file;
    reader.seek(SeekFrom::Start(0))?;
    let mut hasher = Sha256Hasher::new();
    hasher.update_from(&mut reader)?;
    Ok(hasher.finish())
}
