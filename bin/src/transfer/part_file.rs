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

/// A download's partial file, from its destination to the end: where the
/// bytes go until the file is verified, what a resume continues from, the
/// rename into place, the removal of a bad one and what an interrupted
/// one leaves for the user. Made once per download from its destination.
///
/// A destination that exists and is neither a file nor a directory
/// (`/dev/null`, a FIFO, a terminal) is written in place: renaming a
/// partial file over it would replace the device or the pipe with a
/// regular file (as root, `/dev/null` itself). Anything else goes through
/// `DEST.sift-part` beside it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DownloadPart {
    dest: PathBuf,
    /// Where the bytes go: `dest` itself when `in_place`, else its part file.
    path: PathBuf,
    in_place: bool,
}

impl DownloadPart {
    /// The partial file of a download to `dest`, as `dest` stands now.
    pub fn new(dest: &Path) -> Self {
        let in_place = std::fs::metadata(dest).is_ok_and(|meta| !meta.is_file() && !meta.is_dir());
        let path = if in_place {
            dest.to_path_buf()
        } else {
            Self::part_path(dest)
        };
        Self {
            dest: dest.to_path_buf(),
            path,
            in_place,
        }
    }

    /// The name of `dest`'s part file, `DEST.sift-part`, whether or not a
    /// download to `dest` would use it.
    pub fn part_path(dest: &Path) -> PathBuf {
        let mut name = OsString::from(dest.as_os_str());
        name.push(DOWNLOAD_PART_SUFFIX);
        PathBuf::from(name)
    }

    /// Where the download ends up.
    pub fn dest(&self) -> &Path {
        &self.dest
    }

    /// Where the download writes until it is verified: the part file, or
    /// the destination itself when it [`writes_in_place`](Self::writes_in_place).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the download goes straight into a device or a pipe, with no
    /// part file of its own (nothing to resume, rename or remove).
    pub fn writes_in_place(&self) -> bool {
        self.in_place
    }

    /// Where a resume continues: the part file's length, 0 when there is
    /// none or the download writes in place.
    pub fn resume_offset(&self) -> io::Result<u64> {
        if self.in_place {
            return Ok(0);
        }
        match self.path.metadata() {
            Ok(meta) => Ok(meta.len()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(0),
            Err(e) => Err(e),
        }
    }

    /// Opens the file to write to: a device or pipe as it is, a part file
    /// appended to from `offset` (a resume) or created afresh at 0.
    pub fn open(&self, offset: u64) -> io::Result<File> {
        if self.in_place {
            OpenOptions::new().write(true).open(&self.path)
        } else if offset > 0 {
            OpenOptions::new().append(true).open(&self.path)
        } else {
            File::create(&self.path)
        }
    }

    /// Flushes a finished part file to disk, so that its rename does not
    /// put an unwritten file in place; a device or pipe has nothing to keep.
    pub fn sync(&self, file: &File) -> io::Result<()> {
        if self.in_place {
            Ok(())
        } else {
            file.sync_all()
        }
    }

    /// Renames the part file, whole and verified, to the destination.
    pub fn commit(&self) -> io::Result<()> {
        if self.in_place {
            Ok(())
        } else {
            std::fs::rename(&self.path, &self.dest)
        }
    }

    /// Removes a part file that will never be whole (best effort); a
    /// device or pipe is left as it is.
    pub fn remove(&self) {
        if !self.in_place {
            let _ = std::fs::remove_file(&self.path);
        }
    }

    /// What an interrupted download leaves, for the user: the part file
    /// and how to go on, or, for a download written in place into a device
    /// or a pipe, that nothing is kept to resume.
    pub fn interrupted_note(&self) -> String {
        if self.in_place {
            format!(
                "{} is not a regular file, so nothing is kept to resume",
                self.path.display()
            )
        } else {
            format!(
                "partial download kept in {} — run again with --resume",
                self.path.display()
            )
        }
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
        let null = DownloadPart::new(Path::new("/dev/null"));
        assert!(null.writes_in_place());
        assert_eq!(null.path(), Path::new("/dev/null"));
        assert_eq!(null.resume_offset().unwrap(), 0);
        assert_eq!(
            null.interrupted_note(),
            "/dev/null is not a regular file, so nothing is kept to resume"
        );
        let dir = TestDir::new("interrupted-note");
        let file = DownloadPart::new(&dir.path().join("big.iso"));
        assert!(!file.writes_in_place());
        assert_eq!(file.path(), DownloadPart::part_path(file.dest()));
        assert!(file
            .interrupted_note()
            .ends_with("big.iso.sift-part — run again with --resume"));
    }

    #[test]
    fn a_download_part_resumes_from_its_length_and_commits_into_place() {
        let dir = TestDir::new("download-part");
        let part = DownloadPart::new(&dir.path().join("f.bin"));
        assert_eq!(part.resume_offset().unwrap(), 0, "no part file yet");
        part.open(0).unwrap().write_all(b"half").unwrap();
        assert_eq!(part.resume_offset().unwrap(), 4);
        let mut out = part.open(4).unwrap();
        out.write_all(b" more").unwrap();
        part.sync(&out).unwrap();
        part.commit().unwrap();
        assert_eq!(std::fs::read(part.dest()).unwrap(), b"half more");
        assert!(!part.path().exists());

        let again = DownloadPart::new(&dir.path().join("g.bin"));
        again.open(0).unwrap().write_all(b"bad").unwrap();
        again.remove();
        assert!(!again.path().exists() && !again.dest().exists());
    }

    #[test]
    fn a_download_into_a_device_neither_renames_nor_removes_it() {
        let null = DownloadPart::new(Path::new("/dev/null"));
        null.open(0).unwrap().write_all(b"gone").unwrap();
        null.commit().unwrap();
        null.remove();
        let kind = std::fs::metadata("/dev/null").unwrap().file_type();
        assert!(!kind.is_file(), "still a device: {kind:?}");
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
            DownloadPart::part_path(Path::new("out/file.bin")),
            PathBuf::from("out/file.bin.sift-part")
        );
    }
}
