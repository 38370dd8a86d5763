//! The data of a LIST response: a JSON array of entries, sorted by name.

use std::fs::Metadata;

use serde::{Deserialize, Serialize};

/// What a directory entry is. Symlinks are listed as such, not followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryKind {
    File,
    Dir,
    Symlink,
    Other,
}

/// One entry of a listing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListEntry {
    /// The name inside the listed directory.
    pub name: String,
    pub kind: EntryKind,
    /// Size in bytes (files); 0 for the others.
    pub size: u64,
}

impl ListEntry {
    /// The entry for `name` from its (not followed) metadata.
    pub fn from_metadata(name: String, meta: &Metadata) -> Self {
        let file_type = meta.file_type();
        let kind = if file_type.is_symlink() {
            EntryKind::Symlink
        } else if file_type.is_dir() {
            EntryKind::Dir
        } else if file_type.is_file() {
            EntryKind::File
        } else {
            EntryKind::Other
        };
        let size = if kind == EntryKind::File {
            meta.len()
        } else {
            0
        };
        Self { name, kind, size }
    }
}
