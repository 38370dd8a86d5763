//! Files that are not finished yet: an upload's temporary file on the server
//! (removed unless its digest matched) and a download's `.sift-part` on the
//! client (kept for `--resume`).

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use ring::rand::SecureRandom;

use super::confine::{UploadTarget, UPLOAD_PART_MARKER};

/// Suffix of a client's partial download: `FILE.sift-part`.
pub const DOWNLOAD_PART_SUFFIX: &str = ".sift-part";

/// The partial-download path for a destination file.
pub fn download_part_path(dest: &Path) -> PathBuf {
    let mut name = OsString::from(dest.as_os_str());
    name.push(DOWNLOAD_PART_SUFFIX);
    PathBuf::from(name)
}

/// Whether a download to `dest` goes straight into it rather than through
/// its `.sift-part` file: `dest` exists and is neither a file nor a
/// directory (`/dev/null`, a FIFO, a terminal). Renaming a partial file
/// over such a `dest` would replace the device or the pipe with a regular
/// file (as root, `/dev/null` itself).
pub fn download_writes_in_place(dest: &Path) -> bool {
    std::fs::metadata(dest).is_ok_and(|meta| !meta.is_file() && !meta.is_dir())
}

/// Where a download to `dest` writes until it is verified: `dest` itself
/// when [`download_writes_in_place`], else its `.sift-part` file.
pub fn download_partial_path(dest: &Path) -> PathBuf {
    if download_writes_in_place(dest) {
        dest.to_path_buf()
    } else {
        download_part_path(dest)
    }
}

/// What an interrupted download leaves, for the user: the partial file
/// and how to go on, or, for a download written in place into a device or
/// a pipe (`partial` is then the destination), that nothing is kept to
/// resume.
pub fn interrupted_download_note(partial: &Path) -> String {
    if download_writes_in_place(partial) {
        format!(
            "{} is not a regular file, so nothing is kept to resume",
            partial.display()
        )
    } else {
        format!(
            "partial download kept in {} — run again with --resume",
            partial.display()
        )
    }
}

/// Whether an I/O error means the disk (or the user's quota) is full.
pub fn is_disk_full(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(libc::ENOSPC) | Some(libc::EDQUOT)
    )
}

/// An upload being received: `.NAME.sift-part-RANDOM` in the target's
/// directory (same filesystem, so the final rename is atomic). Removed on
/// drop unless `commit` moved it into place.
pub struct UploadPart {
    path: PathBuf,
    file: File,
    committed: bool,
}

impl UploadPart {
    /// Creates a fresh temporary file beside the target; never reuses or
    /// follows an existing name.
    pub fn create(target: &UploadTarget) -> io::Result<Self> {
        let mut suffix = [0u8; 8];
        ring::rand::SystemRandom::new()
            .fill(&mut suffix)
            .map_err(|_| io::Error::other("the system random generator failed"))?;
        let suffix: String = suffix.iter().map(|b| format!("{b:02x}")).collect();
        let path = target
            .directory
            .join(format!(".{}{UPLOAD_PART_MARKER}{suffix}", target.file_name));
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)?;
        Ok(Self {
            path,
            file,
            committed: false,
        })
    }

    /// The temporary file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open file, to write the received bytes to.
    pub fn file(&mut self) -> &mut File {
        &mut self.file
    }

    /// Flushes the data to disk and renames the file to `dest`.
    pub fn commit(mut self, dest: &Path) -> io::Result<()> {
        self.file.sync_all()?;
        std::fs::rename(&self.path, dest)?;
        self.committed = true;
        Ok(())
    }
}

impl Drop for UploadPart {
    fn drop(&mut self) {
        if !self.committed {
            if let Err(e) = std::fs::remove_file(&self.path) {
                tracing::warn!(path = %self.path.display(), error = %e, "could not remove an abandoned upload");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transfer::test_dir::TestDir;
    use std::io::Write;

    #[test]
    fn an_interrupted_download_into_a_device_has_nothing_to_resume() {
        let null = Path::new("/dev/null");
        assert_eq!(download_partial_path(null), null);
        let note = interrupted_download_note(&download_partial_path(null));
        assert_eq!(
            note,
            "/dev/null is not a regular file, so nothing is kept to resume"
        );
        let dir = TestDir::new("interrupted-note");
        let file = dir.path().join("big.iso");
        let partial = download_partial_path(&file);
        assert_eq!(partial, download_part_path(&file));
        assert!(interrupted_download_note(&partial)
            .ends_with("big.iso.sift-part — run again with --resume"));
    }

    fn target(dir: &TestDir, name: &str) -> UploadTarget {
        UploadTarget {
            directory: dir.path().to_path_buf(),
            file_name: name.to_string(),
        }
    }

    #[test]
    fn an_abandoned_upload_leaves_nothing_behind() {
        let dir = TestDir::new("part-abandon");
        let mut part = UploadPart::create(&target(&dir, "f.bin")).unwrap();
        part.file().write_all(b"half").unwrap();
        let temp = part.path().to_path_buf();
        let name = temp.file_name().unwrap().to_str().unwrap().to_string();
        assert!(name.starts_with(".f.bin.sift-part-"), "{name}");
        drop(part);
        assert!(!temp.exists());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_committed_upload_replaces_the_target() {
        let dir = TestDir::new("part-commit");
        let dest = dir.path().join("f.bin");
        std::fs::write(&dest, b"old").unwrap();
        let mut part = UploadPart::create(&target(&dir, "f.bin")).unwrap();
        part.file().write_all(b"new").unwrap();
        part.commit(&dest).unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"new");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn disk_full_is_recognised_from_the_os_error() {
        assert!(is_disk_full(&io::Error::from_raw_os_error(libc::ENOSPC)));
        assert!(!is_disk_full(&io::Error::from_raw_os_error(libc::EACCES)));
        // /dev/full answers every write with ENOSPC.
        let mut full = OpenOptions::new().write(true).open("/dev/full").unwrap();
        assert!(is_disk_full(
            &full.write_all(b"x").and_then(|_| full.flush()).unwrap_err()
        ));
    }

    #[test]
    fn the_download_part_sits_beside_the_destination() {
        assert_eq!(
            download_part_path(Path::new("out/file.bin")),
            PathBuf::from("out/file.bin.sift-part")
        );
    }
}
