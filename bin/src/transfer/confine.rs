//! Keeping every request inside the served directory.
//!
//! Two gates, both required: a lexical one (no absolute paths, no `..`, no
//! NUL bytes, no names of our own temporary files), then a resolved one (the
//! canonical path, symlinks followed, must still start with the canonical
//! root). Files are then opened with `O_NOFOLLOW`, so a symlink swapped in
//! after the check is refused rather than followed.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

use thiserror::Error;

/// Uploads in progress are named `.NAME` + this + a random suffix; clients
/// can neither fetch nor overwrite them.
pub const UPLOAD_PART_MARKER: &str = ".sift-part-";

/// Why a path was not served.
#[derive(Debug, Error)]
pub enum PathError {
    #[error("path {path:?} refused: {reason}")]
    Refused { path: String, reason: &'static str },
    #[error("{path:?} not found")]
    NotFound { path: String },
    /// An upload into a directory the server does not have.
    #[error(
        "{path:?}: the server has no directory {directory:?} (an upload does not make directories)"
    )]
    NoDirectory { path: String, directory: String },
    #[error("{path:?}: {error}")]
    Io { path: String, error: io::Error },
}

/// The served directory, canonicalised once at start.
#[derive(Clone, Debug)]
pub struct Root {
    canonical: PathBuf,
}

/// Where an upload goes: an existing directory inside the root and a name.
#[derive(Clone, Debug)]
pub struct UploadTarget {
    /// The canonical directory that will hold the file.
    pub directory: PathBuf,
    /// The file's name in it (one component, no separators).
    pub file_name: String,
}

impl UploadTarget {
    /// The final path of the upload.
    pub fn path(&self) -> PathBuf {
        self.directory.join(&self.file_name)
    }
}

impl Root {
    /// The root at `dir`, which must exist and be a directory.
    pub fn new(dir: &Path) -> io::Result<Self> {
        let canonical = dir.canonicalize()?;
        if !canonical.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not a directory", canonical.display()),
            ));
        }
        Ok(Self { canonical })
    }

    /// The canonical root directory.
    pub fn path(&self) -> &Path {
        &self.canonical
    }

    /// The lexical gate: the request path split into plain components.
    /// `""` and `"."` mean the root itself.
    pub fn components(raw: &str) -> Result<Vec<String>, PathError> {
        let refuse = |reason| PathError::Refused {
            path: raw.to_string(),
            reason,
        };
        if raw.contains('\0') {
            return Err(refuse("contains a NUL byte"));
        }
        if raw.starts_with('/') {
            return Err(refuse("absolute paths are not served"));
        }
        let mut parts = Vec::new();
        for component in Path::new(raw).components() {
            match component {
                Component::Normal(name) => {
                    let name = name.to_str().ok_or_else(|| refuse("not valid UTF-8"))?;
                    if name.contains(UPLOAD_PART_MARKER) {
                        return Err(refuse("names an upload in progress"));
                    }
                    parts.push(name.to_string());
                }
                Component::CurDir => {}
                Component::ParentDir => return Err(refuse("`..` is not allowed")),
                Component::RootDir | Component::Prefix(_) => {
                    return Err(refuse("absolute paths are not served"))
                }
            }
        }
        Ok(parts)
    }

    /// Resolves an existing path (GET, LIST): canonicalised, and refused if
    /// that lands outside the root (a symlink pointing out).
    pub fn resolve_existing(&self, raw: &str) -> Result<PathBuf, PathError> {
        let mut joined = self.canonical.clone();
        joined.extend(Self::components(raw)?);
        let canonical = joined.canonicalize().map_err(|e| io_error(raw, e))?;
        self.check_inside(raw, &canonical)?;
        Ok(canonical)
    }

    /// Resolves where an upload may be written: the parent must exist inside
    /// the root, and the name must not be a directory or a symlink.
    pub fn resolve_upload(&self, raw: &str) -> Result<UploadTarget, PathError> {
        let mut parts = Self::components(raw)?;
        let file_name = parts.pop().ok_or(PathError::Refused {
            path: raw.to_string(),
            reason: "an upload needs a file name",
        })?;
        let mut parent = self.canonical.clone();
        parent.extend(&parts);
        let directory = parent.canonicalize().map_err(|e| match io_error(raw, e) {
            PathError::NotFound { path } => PathError::NoDirectory {
                directory: parts.join("/"),
                path,
            },
            other => other,
        })?;
        self.check_inside(raw, &directory)?;
        if !directory.is_dir() {
            return Err(PathError::Refused {
                path: raw.to_string(),
                reason: "its parent is not a directory",
            });
        }
        let target = directory.join(&file_name);
        match target.symlink_metadata() {
            Ok(meta) if meta.file_type().is_symlink() => Err(PathError::Refused {
                path: raw.to_string(),
                reason: "it is a symbolic link",
            }),
            Ok(meta) if !meta.is_file() => Err(PathError::Refused {
                path: raw.to_string(),
                reason: "it exists and is not a regular file",
            }),
            Ok(_) => Ok(UploadTarget {
                directory,
                file_name,
            }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(UploadTarget {
                directory,
                file_name,
            }),
            Err(e) => Err(io_error(raw, e)),
        }
    }

    fn check_inside(&self, raw: &str, canonical: &Path) -> Result<(), PathError> {
        if canonical.starts_with(&self.canonical) {
            Ok(())
        } else {
            Err(PathError::Refused {
                path: raw.to_string(),
                reason: "it resolves outside the served directory",
            })
        }
    }
}

/// Opens a resolved regular file for reading without following a symlink
/// (one swapped in after resolution is refused) and without blocking on a
/// FIFO; anything but a regular file is refused.
pub fn open_regular_file(raw: &str, path: &Path) -> Result<File, PathError> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| io_error(raw, e))?;
    let meta = file.metadata().map_err(|e| io_error(raw, e))?;
    if !meta.is_file() {
        return Err(PathError::Refused {
            path: raw.to_string(),
            reason: "not a regular file",
        });
    }
    Ok(file)
}

fn io_error(raw: &str, error: io::Error) -> PathError {
    match error.kind() {
        io::ErrorKind::NotFound => PathError::NotFound {
            path: raw.to_string(),
        },
        // ELOOP: O_NOFOLLOW met a symlink.
        _ if error.raw_os_error() == Some(libc::ELOOP) => PathError::Refused {
            path: raw.to_string(),
            reason: "it is a symbolic link",
        },
        _ => PathError::Io {
            path: raw.to_string(),
            error,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transfer::test_dir::TestDir;
    use std::os::unix::fs::symlink;

    fn refused(result: Result<impl std::fmt::Debug, PathError>) -> bool {
        matches!(result, Err(PathError::Refused { .. }))
    }

    #[test]
    fn lexical_gate_refuses_parent_absolute_and_nul() {
        for raw in [
            "../x",
            "a/../../x",
            "a/..",
            "/etc/passwd",
            "a\0b",
            "x/.f.sift-part-1234",
        ] {
            assert!(refused(Root::components(raw)), "{raw:?} must be refused");
        }
        assert_eq!(Root::components("a/./b/").unwrap(), ["a", "b"]);
        assert!(Root::components("").unwrap().is_empty());
    }

    #[test]
    fn a_symlink_inside_root_pointing_outside_is_refused() {
        let outside = TestDir::new("confine-outside");
        std::fs::write(outside.path().join("secret"), b"s").unwrap();
        let root_dir = TestDir::new("confine-root");
        symlink(outside.path().join("secret"), root_dir.path().join("link")).unwrap();
        symlink(outside.path(), root_dir.path().join("dirlink")).unwrap();
        let root = Root::new(root_dir.path()).unwrap();
        assert!(refused(root.resolve_existing("link")));
        assert!(refused(root.resolve_existing("dirlink/secret")));
        assert!(refused(root.resolve_upload("dirlink/new")));
        assert!(refused(root.resolve_upload("link")));
    }

    #[test]
    fn a_symlink_that_stays_inside_root_is_served() {
        let root_dir = TestDir::new("confine-inner");
        std::fs::write(root_dir.path().join("real"), b"r").unwrap();
        symlink("real", root_dir.path().join("alias")).unwrap();
        let root = Root::new(root_dir.path()).unwrap();
        let resolved = root.resolve_existing("alias").unwrap();
        assert_eq!(resolved, root.path().join("real"));
    }

    #[test]
    fn missing_files_are_not_found_and_uploads_need_an_existing_parent() {
        let root_dir = TestDir::new("confine-missing");
        let root = Root::new(root_dir.path()).unwrap();
        assert!(matches!(
            root.resolve_existing("nope"),
            Err(PathError::NotFound { .. })
        ));
        let missing = root.resolve_upload("no/dir/f").unwrap_err();
        assert!(
            matches!(&missing, PathError::NoDirectory { directory, .. } if directory == "no/dir"),
            "{missing}"
        );
        let target = root.resolve_upload("new.bin").unwrap();
        assert_eq!(target.path(), root.path().join("new.bin"));
        assert!(refused(root.resolve_upload("")));
    }

    #[test]
    fn opening_refuses_symlinks_and_directories() {
        let root_dir = TestDir::new("confine-open");
        std::fs::write(root_dir.path().join("f"), b"x").unwrap();
        symlink("f", root_dir.path().join("l")).unwrap();
        assert!(open_regular_file("f", &root_dir.path().join("f")).is_ok());
        assert!(refused(open_regular_file("l", &root_dir.path().join("l"))));
        assert!(refused(open_regular_file(".", root_dir.path())));
    }
}
