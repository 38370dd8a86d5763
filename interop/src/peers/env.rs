//! The environment every peer honours, named as the interop runner names
//! it:
//!
//! - `SSLKEYLOGFILE`: the NSS key log. Every connection's TLS secrets are
//!   appended to that file, so Wireshark can decrypt a capture (the
//!   matrix keeps them with a failing cell's logs). Every peer writes it.
//! - `QLOGDIR`: one qlog trace per connection in that directory. sift's
//!   ends write them (`sift::trace::TraceSink::qlog_dir`, as `sift-server`
//!   and `sift-client` do); quiche's and quinn's peers do not: their
//!   `qlog` features build other releases of the qlog crate than sift's
//!   (0.17 and 0.15), for traces nothing here reads yet. quic-go's
//!   peer (interop/quic-go/) writes quic-go's own. A peer that writes
//!   qlog writes it there.
//!
//! An empty value is the same as none.

use std::fs::File;
use std::path::PathBuf;

use anyhow::Context;

/// The key log's variable.
pub const KEY_LOG: &str = "SSLKEYLOGFILE";

/// The qlog directory's variable.
pub const QLOG_DIR: &str = "QLOGDIR";

fn path_of(variable: &str) -> Option<PathBuf> {
    std::env::var_os(variable)
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
}

/// The key log file `SSLKEYLOGFILE` names, if it names one.
pub fn key_log_path() -> Option<PathBuf> {
    path_of(KEY_LOG)
}

/// The key log, opened for appending, for a stack that takes a writer
/// (quiche). `None` when none is asked for, or when it cannot be opened:
/// no key log is no reason to fail a connection.
pub fn open_key_log() -> Option<File> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(key_log_path()?)
        .ok()
}

/// The directory `QLOGDIR` names, created if missing; `None` when it names
/// none.
pub fn qlog_dir() -> anyhow::Result<Option<PathBuf>> {
    let Some(dir) = path_of(QLOG_DIR) else {
        return Ok(None);
    };
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("cannot create the qlog directory {}", dir.display()))?;
    Ok(Some(dir))
}
