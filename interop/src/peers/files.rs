//! The files peers serve and write, each kept inside its directory: what
//! a request's path names under a server's root ([`resolve`],
//! [`file_under`]), where a client writes a fetched path ([`output_path`]),
//! and a [`Download`] being written and hashed, whose [`FileReport`] every
//! client prints.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Component, Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};

/// A request's path that leads out of the served directory (or names
/// nothing there).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("path {0:?} leaves the served directory")]
pub struct OutsideRoot(pub String);

/// `path` under `root`, refusing absolute paths, `..` and symlinks that
/// lead out of `root`, and paths that name nothing.
pub fn resolve(root: &Path, path: &str) -> Result<PathBuf, OutsideRoot> {
    let outside = || OutsideRoot(path.to_string());
    let relative = Path::new(path.trim_start_matches('/'));
    if relative
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(outside());
    }
    let root = root.canonicalize().map_err(|_| outside())?;
    let full = root.join(relative).canonicalize().map_err(|_| outside())?;
    if full.starts_with(&root) {
        Ok(full)
    } else {
        Err(outside())
    }
}

/// The regular file under `root` a request for `path` names, or `None`
/// when it would leave `root` or is not a regular file.
pub fn file_under(root: &Path, path: &str) -> Option<PathBuf> {
    resolve(root, path).ok().filter(|full| full.is_file())
}

/// Where the file fetched for `path` goes: the same relative path under
/// `dir` (as the interop runner's `/downloads`), refusing anything that
/// would leave `dir`. A query or fragment is not part of the name.
pub fn output_path(dir: &Path, path: &str) -> anyhow::Result<PathBuf> {
    let name = path.split(['?', '#']).next().unwrap_or_default();
    let relative = Path::new(name.trim_start_matches('/'));
    let confined = relative
        .components()
        .all(|component| matches!(component, Component::Normal(_)));
    if !confined || relative.as_os_str().is_empty() {
        bail!("{path:?} does not name a file under {}", dir.display());
    }
    Ok(dir.join(relative))
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// One file a client fetched whole, as its `--json` report lists it.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct FileReport {
    /// The path requested.
    pub path: String,
    /// Bytes written.
    pub bytes: u64,
    /// SHA-256 of what was written, lowercase hex.
    pub sha256: String,
    /// Microseconds from the request to the last byte written (sift's
    /// `completion_s`, in whole microseconds); 0 from a report without it.
    #[serde(default)]
    pub elapsed_us: u64,
}

/// Buffer of a client that fetches one large file (the file protocol's
/// clients): the file is written in 1 MiB pieces.
pub const ONE_FILE_BUFFER: usize = 1 << 20;

/// Buffer of a client that fetches many files at once: none (the stacks
/// hand over chunks of kilobytes), so that thousands at once (the
/// multiplexing case) cost no buffer memory.
pub const UNBUFFERED: usize = 0;

/// A download being written: its file and the running SHA-256 of what
/// went in.
pub struct Download {
    path: String,
    output: PathBuf,
    writer: BufWriter<File>,
    digest: ring::digest::Context,
    bytes: u64,
    requested: Instant,
}

impl Download {
    /// Creates `output` (and its folders) for the download of `path`,
    /// written through a buffer of `buffer` bytes; the clock starts now.
    pub fn create(output: PathBuf, path: &str, buffer: usize) -> anyhow::Result<Self> {
        if let Some(parent) = output.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create {}", parent.display()))?;
        }
        let file =
            File::create(&output).with_context(|| format!("cannot create {}", output.display()))?;
        Ok(Self {
            path: path.to_string(),
            output,
            writer: BufWriter::with_capacity(buffer, file),
            digest: ring::digest::Context::new(&ring::digest::SHA256),
            bytes: 0,
            requested: Instant::now(),
        })
    }

    /// [`Download::create`] at `path`'s place under `dir`
    /// ([`output_path`]).
    pub fn under(dir: &Path, path: &str, buffer: usize) -> anyhow::Result<Self> {
        Self::create(output_path(dir, path)?, path, buffer)
    }

    /// Restarts the clock: the request leaves now (for a client that
    /// creates its file before it connects).
    pub fn requested_now(&mut self) {
        self.requested = Instant::now();
    }

    /// The path requested.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The file written.
    pub fn output(&self) -> &Path {
        &self.output
    }

    /// Bytes written so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Hashes and writes `bytes`.
    pub fn write(&mut self, bytes: &[u8]) -> anyhow::Result<()> {
        self.digest.update(bytes);
        self.bytes += bytes.len() as u64;
        self.writer
            .write_all(bytes)
            .with_context(|| format!("cannot write {}", self.output.display()))
    }

    /// Flushes the file and reports it, timed from the request.
    pub fn finish(mut self) -> anyhow::Result<FileReport> {
        self.writer
            .flush()
            .with_context(|| format!("cannot write {}", self.output.display()))?;
        Ok(FileReport {
            elapsed_us: self.requested.elapsed().as_micros() as u64,
            path: self.path,
            bytes: self.bytes,
            sha256: hex(self.digest.finish().as_ref()),
        })
    }

    /// Removes the file: it did not come whole, and no partial file is
    /// left for a reader to take as the file.
    pub fn abandon(self) {
        let output = self.output.clone();
        drop(self);
        let _ = std::fs::remove_file(output);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_that_leave_the_root_are_refused() {
        let root =
            std::env::temp_dir().join(format!("sift-interop-resolve-{}", std::process::id()));
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/file"), b"x").unwrap();
        assert_eq!(
            resolve(&root, "/sub/file").unwrap(),
            root.canonicalize().unwrap().join("sub/file")
        );
        for bad in ["../etc/passwd", "sub/../../x", "missing"] {
            assert!(resolve(&root, bad).is_err(), "{bad:?} was accepted");
        }
        assert!(file_under(&root, "sub/file").is_some());
        assert_eq!(file_under(&root, "sub"), None, "a directory is no file");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn output_paths_stay_under_the_directory() {
        let dir = Path::new("/downloads");
        assert_eq!(
            output_path(dir, "/sub/f.bin?x=1").unwrap(),
            Path::new("/downloads/sub/f.bin")
        );
        assert_eq!(
            output_path(dir, "a/b").unwrap(),
            Path::new("/downloads/a/b")
        );
        for bad in ["/../etc/passwd", "/a/../../b", "/", "/./f", "../x"] {
            assert!(output_path(dir, bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn a_download_reports_its_bytes_and_their_sha256() {
        let dir =
            std::env::temp_dir().join(format!("sift-interop-download-{}", std::process::id()));
        let mut download = Download::under(&dir, "/sub/abc", UNBUFFERED).unwrap();
        download.write(b"ab").unwrap();
        download.write(b"c").unwrap();
        let report = download.finish().unwrap();
        // SHA-256("abc"), FIPS 180-2 Appendix B.1.
        assert_eq!(
            report.sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!((report.path.as_str(), report.bytes), ("/sub/abc", 3));
        assert_eq!(std::fs::read(dir.join("sub/abc")).unwrap(), b"abc");
        let partial = Download::under(&dir, "gone", UNBUFFERED).unwrap();
        partial.abandon();
        assert!(!dir.join("gone").exists());
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(hex(&[0, 0xab, 0x0f]), "00ab0f");
    }
}
