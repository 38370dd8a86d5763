//! `sift-client`'s address-validation tokens across runs. A server that
//! asks new clients for a Retry gives each one a NEW_TOKEN token; the next
//! run presents it and saves the round trip. They live in
//! `address-tokens` in the state directory, owner-only, one line per
//! server: `<address> <token in hex>`.
//!
//! A cache, not state anyone depends on: unreadable lines are skipped, a
//! save that fails is logged, and a lost token costs one Retry. It is
//! saved only into a state directory that exists already (made by
//! `known_hosts` on first contact, or by the user): a client run with
//! `--pin` creates no directory just for a cache. Tokens
//! are used once, so a server's line goes when its token is used and
//! comes back with the next one it sends.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::net::SocketAddr;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use sift::endpoint::TokenStore;

use super::state;

/// The tokens file in the state directory.
pub const TOKENS_FILE: &str = "address-tokens";

/// The tokens of earlier runs, and the file they go back to.
pub struct SavedTokens {
    path: Option<PathBuf>,
    store: TokenStore,
}

impl SavedTokens {
    /// Reads the tokens file of the state directory (`explicit`, or the
    /// default one). Without a state directory, tokens last one run.
    pub fn load(explicit: Option<&Path>) -> Self {
        let store = TokenStore::new();
        let path = match state::state_dir(explicit) {
            Ok(dir) => Some(dir.join(TOKENS_FILE)),
            Err(error) => {
                tracing::debug!(%error, "address tokens are not kept across runs");
                None
            }
        };
        if let Some(text) = path.as_ref().and_then(|p| fs::read_to_string(p).ok()) {
            for (server, token) in text.lines().filter_map(parse_line) {
                store.insert(server, token);
            }
        }
        Self { path, store }
    }

    /// The store to put in the client's config.
    pub fn store(&self) -> TokenStore {
        self.store.clone()
    }

    /// Writes the tokens held now back to the file (replacing it whole).
    pub fn save(&self) {
        let Some(path) = &self.path else { return };
        let mut entries = self.store.entries();
        entries.sort();
        let text: String = entries
            .iter()
            .map(|(server, token)| format!("{server} {}\n", crate::hex::encode(token)))
            .collect();
        if let Err(error) = write_private(path, text.as_bytes()) {
            tracing::debug!(%error, path = %path.display(), "cannot save address tokens");
        }
    }
}

fn parse_line(line: &str) -> Option<(SocketAddr, Vec<u8>)> {
    let (server, token) = line.split_once(' ')?;
    let token = crate::hex::decode(token.trim()).filter(|token| !token.is_empty())?;
    Some((server.parse().ok()?, token))
}

/// Replaces `path` with `bytes` through a temporary file, owner-only,
/// if its directory exists.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if !path.parent().is_some_and(Path::is_dir) {
        return Ok(());
    }
    // One temporary file per process: two clients saving at once each
    // replace the file whole, the last one winning.
    let temporary = path.with_extension(format!("{}.new", std::process::id()));
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temporary)?;
    file.write_all(bytes)?;
    fs::rename(&temporary, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transfer::test_dir::TestDir;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn tokens_saved_by_one_run_are_there_for_the_next() {
        let dir = TestDir::new("tokens-round-trip");
        let server: SocketAddr = "127.0.0.1:4433".parse().unwrap();
        let first = SavedTokens::load(Some(dir.path()));
        assert!(first.store().is_empty());
        first.store().insert(server, vec![0xab, 0x01]);
        first.save();
        let file = dir.path().join(TOKENS_FILE);
        assert_eq!(fs::read_to_string(&file).unwrap(), "127.0.0.1:4433 ab01\n");
        let mode = fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);

        let second = SavedTokens::load(Some(dir.path()));
        assert_eq!(second.store().take(server), Some(vec![0xab, 0x01]));
        // Used once: the next save drops it.
        second.save();
        assert_eq!(fs::read_to_string(&file).unwrap(), "");
    }

    #[test]
    fn damaged_lines_are_skipped() {
        let dir = TestDir::new("tokens-damaged");
        fs::write(
            dir.path().join(TOKENS_FILE),
            "not an address ab\n[::1]:4433 abc\n[::1]:4434 zz\n127.0.0.1:1 0f\n",
        )
        .unwrap();
        let tokens = SavedTokens::load(Some(dir.path()));
        assert_eq!(
            tokens.store().entries(),
            vec![("127.0.0.1:1".parse().unwrap(), vec![0x0f])]
        );
    }
}
