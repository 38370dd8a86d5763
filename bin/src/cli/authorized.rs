//! `sift-server`'s list of clients that may upload: `authorized_clients`
//! in the state directory, like ssh's `authorized_keys` but of
//! fingerprints. One client per line: its key's fingerprint (as
//! `sift-client id` prints it: `SHA256:` and 64 hex digits, or bare hex,
//! or openssl's `AA:BB:…`), then optionally a name for people; `#` starts
//! a comment line, blank lines are skipped.
//!
//! The file is read again at every upload, so a client added (or removed)
//! counts from its next upload, without a restart. A missing file
//! authorises nobody.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use anyhow::Context;
use sift::crypto::Fingerprint;

use crate::transfer::ClientGate;

/// One authorised client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthorizedClient {
    /// Its key's fingerprint.
    pub fingerprint: Fingerprint,
    /// What the line calls it (may be empty).
    pub name: String,
}

/// Parses the file's text; an error names the line that is wrong.
pub fn parse_authorized_clients(text: &str) -> Result<Vec<AuthorizedClient>, String> {
    let mut clients = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (first, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
        let fingerprint = first
            .parse::<Fingerprint>()
            .map_err(|error| format!("line {}: {error}", index + 1))?;
        clients.push(AuthorizedClient {
            fingerprint,
            name: rest.trim().to_string(),
        });
    }
    Ok(clients)
}

/// The clients listed in `authorized_clients`, read from the file each
/// time a client asks to upload.
#[derive(Clone, Debug)]
pub struct AuthorizedClientsFile {
    path: PathBuf,
}

impl AuthorizedClientsFile {
    /// The list at `path` (it need not exist yet).
    pub fn new(path: PathBuf) -> Self {
        Self { path }
    }

    /// Where the list lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The clients listed now: none if the file does not exist; an error
    /// if it cannot be read or a line is not a fingerprint.
    pub fn read(&self) -> anyhow::Result<Vec<AuthorizedClient>> {
        let text = match fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => {
                return Err(error).with_context(|| format!("cannot read {}", self.path.display()))
            }
        };
        parse_authorized_clients(&text)
            .map_err(|error| anyhow::anyhow!("{}: {error}", self.path.display()))
    }
}

impl ClientGate for AuthorizedClientsFile {
    fn admit(&self, key: Option<Fingerprint>) -> Result<(), String> {
        let file = self.path.display();
        let Some(key) = key else {
            return Err(format!(
                "this server takes uploads only from clients whose key it knows, and this client presented none: `sift-client id` makes one and prints its fingerprint, for the server's owner to add to {file}"
            ));
        };
        let clients = self.read().map_err(|error| {
            tracing::warn!(%error, "the list of clients that may upload is unreadable");
            format!("the server cannot read its list of clients that may upload ({error:#})")
        })?;
        if clients.iter().any(|client| client.fingerprint == key) {
            Ok(())
        } else {
            Err(format!(
                "this client's key {key} is not authorised here: the server's owner can add it as a line of {file}"
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transfer::test_dir::TestDir;

    fn key(seed: &[u8]) -> Fingerprint {
        Fingerprint::of_certificate(seed)
    }

    #[test]
    fn lines_hold_a_fingerprint_and_an_optional_name_with_comments_skipped() {
        let (alice, bob) = (key(b"alice"), key(b"bob"));
        let bare_hex: String = bob.to_string()[7..].to_uppercase();
        let text = format!("# uploaders\n\n{alice}  alice's laptop\n   {bare_hex}\n");
        assert_eq!(
            parse_authorized_clients(&text).unwrap(),
            [
                AuthorizedClient {
                    fingerprint: alice,
                    name: "alice's laptop".into()
                },
                AuthorizedClient {
                    fingerprint: bob,
                    name: String::new()
                },
            ]
        );
        let error = parse_authorized_clients(&format!("{alice}\nSHA256:beef bad\n")).unwrap_err();
        assert!(
            error.starts_with("line 2: not a SHA-256 fingerprint"),
            "{error}"
        );
    }

    #[test]
    fn only_listed_keys_may_upload_and_the_refusal_names_key_and_file() {
        let dir = TestDir::new("authorized-clients");
        let path = dir.path().join("authorized_clients");
        let gate = AuthorizedClientsFile::new(path.clone());
        let (listed, stranger) = (key(b"listed"), key(b"stranger"));

        // No file yet: nobody.
        let refusal = gate.admit(Some(listed)).unwrap_err();
        assert!(refusal.contains(&listed.to_string()), "{refusal}");
        assert!(refusal.contains(&path.display().to_string()), "{refusal}");

        // Read at every upload: added now, admitted now.
        fs::write(&path, format!("{listed} laptop\n")).unwrap();
        assert_eq!(gate.admit(Some(listed)), Ok(()));
        let refusal = gate.admit(Some(stranger)).unwrap_err();
        assert!(refusal.contains(&stranger.to_string()), "{refusal}");
        assert!(!refusal.contains('\n'), "one line: {refusal}");
        let refusal = gate.admit(None).unwrap_err();
        assert!(refusal.contains("presented none"), "{refusal}");

        // A broken list admits nobody.
        fs::write(&path, format!("{listed}\nnot-a-key\n")).unwrap();
        let refusal = gate.admit(Some(listed)).unwrap_err();
        assert!(refusal.contains("line 2"), "{refusal}");
    }
}
