//! Where the tools keep state, and the server's identity in it.
//!
//! One state directory (DESIGN §1): `--state-dir`, else `$XDG_DATA_HOME/sift`,
//! else `~/.local/share/sift`. `sift-server` keeps its certificate and key
//! there (`server-cert.pem`, `server-key.pem`, made with rcgen on first
//! run), and its static secret (`server-secret`, 32 random bytes, made on
//! first run), from which it derives stateless reset tokens: kept across
//! restarts, so a restarted server can tell clients at once that their
//! connections are gone. It reads `authorized_clients` there: the keys of
//! the clients that may upload (`cli::authorized`). `sift-client` keeps
//! `known_hosts` there, and its own key (`client-cert.pem`,
//! `client-key.pem`, made on its first upload or `sift-client id`), which
//! it presents to servers that ask. The directory is created readable by
//! its owner only, and the key and secret files likewise. Runs started
//! together (a script's parallel first uploads, two servers on one state)
//! make each file once, under a lock on the directory ([`StateLock`]), and
//! a file is linked into place whole, so no run reads one half written.
//!
//! The state directory must not be served: `sift-server` refuses to start
//! when it is `--root` or inside it ([`refuse_state_inside_root`]). A root
//! inside the state directory is allowed: nothing of the state is under
//! it, and paths never leave the root.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::Context;
use ring::rand::{SecureRandom, SystemRandom};
use sift::crypto::{ServerIdentity, ServerSecret, SERVER_SECRET_LEN};

/// The server's certificate chain, PEM, in the state directory.
pub const CERT_FILE: &str = "server-cert.pem";
/// The server's private key, PEM, in the state directory.
pub const KEY_FILE: &str = "server-key.pem";
/// The server's static secret (stateless reset tokens), in the state
/// directory.
pub const SECRET_FILE: &str = "server-secret";
/// The client's known hosts, in the state directory.
pub const KNOWN_HOSTS_FILE: &str = "known_hosts";
/// The client's certificate (self-signed; its fingerprint names the
/// client), in the state directory.
pub const CLIENT_CERT_FILE: &str = "client-cert.pem";
/// The client's private key, PEM, in the state directory.
pub const CLIENT_KEY_FILE: &str = "client-key.pem";
/// The fingerprints of the clients that may upload to the server, in its
/// state directory.
pub const AUTHORIZED_CLIENTS_FILE: &str = "authorized_clients";

/// The state directory: `explicit`, or the user's data directory's `sift`.
pub fn state_dir(explicit: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(dir) = explicit {
        return Ok(dir.to_path_buf());
    }
    let non_empty = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty());
    if let Some(data) = non_empty("XDG_DATA_HOME") {
        return Ok(PathBuf::from(data).join("sift"));
    }
    if let Some(home) = non_empty("HOME") {
        return Ok(PathBuf::from(home).join(".local/share/sift"));
    }
    anyhow::bail!("no state directory: set --state-dir (neither XDG_DATA_HOME nor HOME is set)")
}

/// Creates `dir` (and parents) if needed, owner-only.
pub fn create_private_dir(dir: &Path) -> anyhow::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("cannot create the state directory {}", dir.display()))
}

/// Where the server's identity came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdentitySource {
    /// Made now and saved in the state directory.
    Created,
    /// Read from the state directory.
    Loaded,
    /// Read from files the user named.
    Given,
}

/// The server's identity: from `cert`/`key` if given, else from the state
/// directory, made there (self-signed, rcgen) on first run.
pub fn server_identity(
    state: &Path,
    cert_and_key: Option<(&Path, &Path)>,
) -> anyhow::Result<(ServerIdentity, IdentitySource)> {
    if let Some((cert, key)) = cert_and_key {
        return Ok((read_identity(cert, key)?, IdentitySource::Given));
    }
    let stored = stored_identity(
        state,
        CERT_FILE,
        KEY_FILE,
        "localhost",
        true,
        "clients",
        ServerIdentity::self_signed_ecdsa,
    )?;
    stored.with_context(|| format!("no server identity in {}", state.display()))
}

/// The client's key, from the state directory: made there first if
/// `create` (a new one says [`IdentitySource::Created`]), else `None` when
/// there is none yet.
pub fn client_identity(
    state: &Path,
    create: bool,
) -> anyhow::Result<Option<(ServerIdentity, IdentitySource)>> {
    stored_identity(
        state,
        CLIENT_CERT_FILE,
        CLIENT_KEY_FILE,
        "sift-client",
        create,
        "servers",
        ServerIdentity::self_signed,
    )
}

/// A certificate and key kept in `state` as `cert_file` and `key_file`,
/// made by `make` (self-signed for `name`) when missing and `create`: the
/// server's ECDSA P-256, which every QUIC client verifies; the client's
/// Ed25519, which only sift servers ask for. `peers` names who would see
/// a new key, for the error about half of one.
fn stored_identity(
    state: &Path,
    cert_file: &str,
    key_file: &str,
    name: &str,
    create: bool,
    peers: &str,
    make: fn(&[&str]) -> Result<ServerIdentity, sift::crypto::IdentityError>,
) -> anyhow::Result<Option<(ServerIdentity, IdentitySource)>> {
    let cert = state.join(cert_file);
    let key = state.join(key_file);
    match (cert.exists(), key.exists()) {
        (true, true) => return Ok(Some((read_identity(&cert, &key)?, IdentitySource::Loaded))),
        (false, false) if !create => return Ok(None),
        _ => {}
    }
    // Missing, or half there: another run may be making it at this moment
    // (two clients started together, each on its first upload). Under the
    // lock the first makes it and the others load it.
    let _lock = StateLock::take(state)?;
    match (cert.exists(), key.exists()) {
        (true, true) => Ok(Some((read_identity(&cert, &key)?, IdentitySource::Loaded))),
        (false, false) if !create => Ok(None),
        (false, false) => {
            let identity = make(&[name]).context("cannot make a self-signed certificate")?;
            // The key first: a run that finds both files (without the
            // lock) finds both whole.
            write_new_file(&key, identity.private_key_pem().as_bytes(), 0o600)?;
            write_new_file(&cert, identity.chain_pem().as_bytes(), 0o644)?;
            Ok(Some((identity, IdentitySource::Created)))
        }
        _ => anyhow::bail!(
            "{} holds only one of {cert_file} and {key_file}: restore the other, or remove both to make a new identity ({peers} will see a changed key)",
            state.display()
        ),
    }
}

/// An exclusive lock on the state directory (`flock` on the directory
/// itself, made first if missing), held until dropped: runs started
/// together that each find a file missing make it once between them.
pub struct StateLock {
    _directory: fs::File,
}

impl StateLock {
    /// Waits for the lock on `dir`.
    pub fn take(dir: &Path) -> anyhow::Result<Self> {
        create_private_dir(dir)?;
        let directory =
            fs::File::open(dir).with_context(|| format!("cannot open {}", dir.display()))?;
        lock_exclusive(&directory).with_context(|| format!("cannot lock {}", dir.display()))?;
        Ok(Self {
            _directory: directory,
        })
    }
}

/// Takes an exclusive `flock` on `file`, held until it is closed.
pub fn lock_exclusive(file: &fs::File) -> std::io::Result<()> {
    loop {
        // SAFETY: flock on a descriptor `file` keeps open.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(());
        }
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

/// Refuses a state directory that is `root` or lies under it: everything
/// under the root can be downloaded (the server's private key and secret)
/// and overwritten (the list of clients that may upload). Both paths are
/// compared after resolving symlinks and `..`; a state directory that does
/// not exist yet is judged by where it would be created.
pub fn refuse_state_inside_root(state: &Path, root: &Path) -> anyhow::Result<()> {
    let canonical_state = canonical_even_if_missing(state)?;
    let canonical_root = root
        .canonicalize()
        .with_context(|| format!("cannot resolve {}", root.display()))?;
    if !canonical_state.starts_with(&canonical_root) {
        return Ok(());
    }
    let place = if canonical_state == canonical_root {
        "is the served --root"
    } else {
        "is inside the served --root"
    };
    anyhow::bail!(
        "the state directory {} {place} {}: clients could download the server's private key and rewrite its authorized_clients; serve another directory, or keep the state elsewhere with --state-dir DIR",
        canonical_state.display(),
        canonical_root.display()
    )
}

/// `path` with symlinks and `..` resolved as far as it exists, and the
/// missing rest appended as written.
fn canonical_even_if_missing(path: &Path) -> anyhow::Result<PathBuf> {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .context("cannot read the current directory")?
            .join(path)
    };
    let mut existing = absolute.as_path();
    let mut missing = Vec::new();
    loop {
        match existing.canonicalize() {
            Ok(canonical) => {
                let mut resolved = canonical;
                for part in missing.iter().rev() {
                    match part {
                        std::path::Component::ParentDir => {
                            resolved.pop();
                        }
                        std::path::Component::CurDir => {}
                        other => resolved.push(other),
                    }
                }
                return Ok(resolved);
            }
            Err(_) => {
                let Some(parent) = existing.parent() else {
                    return Ok(absolute);
                };
                if let Some(last) = existing.components().next_back() {
                    missing.push(last);
                }
                existing = parent;
            }
        }
    }
}

/// The server's static secret, from the state directory, made there on
/// first run.
pub fn server_secret(state: &Path) -> anyhow::Result<ServerSecret> {
    let path = state.join(SECRET_FILE);
    if path.exists() {
        return read_server_secret(&path);
    }
    // Two servers started together on one state directory make one secret.
    let _lock = StateLock::take(state)?;
    if path.exists() {
        return read_server_secret(&path);
    }
    let mut bytes = [0u8; SERVER_SECRET_LEN];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| anyhow::anyhow!("the operating system's random number generator failed"))?;
    write_new_file(&path, &bytes, 0o600)?;
    Ok(ServerSecret::new(&bytes))
}

fn read_server_secret(path: &Path) -> anyhow::Result<ServerSecret> {
    let bytes = fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let bytes: [u8; SERVER_SECRET_LEN] = bytes.as_slice().try_into().map_err(|_| {
        anyhow::anyhow!(
            "{} is {} bytes, not {SERVER_SECRET_LEN}: remove it to make a new one (clients of the old one will wait for their idle timeout once)",
            path.display(),
            bytes.len()
        )
    })?;
    Ok(ServerSecret::new(&bytes))
}

fn read_identity(cert: &Path, key: &Path) -> anyhow::Result<ServerIdentity> {
    let cert_pem = fs::read(cert).with_context(|| format!("cannot read {}", cert.display()))?;
    let key_pem = fs::read(key).with_context(|| format!("cannot read {}", key.display()))?;
    ServerIdentity::from_pem(&cert_pem, &key_pem).with_context(|| {
        format!(
            "cannot use the certificate {} with the key {}",
            cert.display(),
            key.display()
        )
    })
}

/// Writes a file that must not exist yet, with `mode`: whole or not at
/// all, as a reader that does not take the [`StateLock`] sees it (written
/// under a temporary name, then linked to `path`, which fails if `path`
/// exists).
fn write_new_file(path: &Path, bytes: &[u8], mode: u32) -> anyhow::Result<()> {
    let temporary = path.with_extension(format!("{}.new", std::process::id()));
    let written = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&temporary)
        .and_then(|mut file| file.write_all(bytes).and_then(|()| file.sync_all()))
        .with_context(|| format!("cannot write {}", temporary.display()))
        .and_then(|()| {
            match fs::hard_link(&temporary, path) {
                Err(error) if error.kind() != std::io::ErrorKind::AlreadyExists => {
                    // A file system without hard links: under the state
                    // lock nothing else makes `path` meanwhile.
                    fs::rename(&temporary, path)
                }
                linked => linked,
            }
            .with_context(|| format!("cannot create {}", path.display()))
        });
    let _ = fs::remove_file(&temporary);
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transfer::test_dir::TestDir;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_server_secret_is_made_once_private_and_then_reused() {
        let dir = TestDir::new("state-secret");
        let state = dir.path().join("state");
        let cid = sift::wire::ConnectionId::new(&[1; 8]).unwrap();
        let first = server_secret(&state).unwrap();
        let mode = fs::metadata(state.join(SECRET_FILE))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
        let again = server_secret(&state).unwrap();
        assert_eq!(first.reset_token(&cid), again.reset_token(&cid));

        fs::write(state.join(SECRET_FILE), b"short").unwrap();
        let error = server_secret(&state).unwrap_err().to_string();
        assert!(error.contains("is 5 bytes, not 32"), "{error}");
    }

    #[test]
    fn runs_started_together_make_one_identity_and_one_secret() {
        let dir = TestDir::new("state-together");
        let state = dir.path().join("state");
        let runs = 8;
        let made: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..runs)
                .map(|_| {
                    let state = &state;
                    scope.spawn(move || {
                        let (identity, source) = client_identity(state, true).unwrap().unwrap();
                        let secret = server_secret(state).unwrap();
                        let cid = sift::wire::ConnectionId::new(&[1; 8]).unwrap();
                        (identity.fingerprint(), source, secret.reset_token(&cid))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let created = made
            .iter()
            .filter(|(_, source, _)| *source == IdentitySource::Created)
            .count();
        assert_eq!(created, 1, "one run made the key, the others loaded it");
        assert!(made
            .iter()
            .all(|(fingerprint, _, token)| *fingerprint == made[0].0 && *token == made[0].2));
        let left: Vec<_> = fs::read_dir(&state)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .filter(|name| name.ends_with(".new"))
            .collect();
        assert!(left.is_empty(), "temporary files left: {left:?}");
    }

    #[test]
    fn first_run_creates_an_identity_that_later_runs_reuse() {
        let dir = TestDir::new("state-identity");
        let state = dir.path().join("nested/state");
        let (first, source) = server_identity(&state, None).unwrap();
        assert_eq!(source, IdentitySource::Created);
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&state.join(KEY_FILE)), 0o600);
        assert_eq!(mode(&state), 0o700);
        let (again, source) = server_identity(&state, None).unwrap();
        assert_eq!(source, IdentitySource::Loaded);
        assert_eq!(again.fingerprint(), first.fingerprint());
    }

    #[test]
    fn a_half_present_identity_is_an_error_not_a_new_key() {
        let dir = TestDir::new("state-half");
        server_identity(dir.path(), None).unwrap();
        fs::remove_file(dir.path().join(KEY_FILE)).unwrap();
        let error = server_identity(dir.path(), None).unwrap_err().to_string();
        assert!(error.contains("only one of"), "{error}");
        assert!(!dir.path().join(KEY_FILE).exists());
    }

    #[test]
    fn the_client_key_is_made_only_when_asked_then_kept_private() {
        let dir = TestDir::new("state-client-key");
        let state = dir.path().join("client-state");
        assert!(client_identity(&state, false).unwrap().is_none());
        assert!(!state.exists(), "looking makes no directory");
        let (first, source) = client_identity(&state, true).unwrap().unwrap();
        assert_eq!(source, IdentitySource::Created);
        let mode = fs::metadata(state.join(CLIENT_KEY_FILE))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
        let (again, source) = client_identity(&state, false).unwrap().unwrap();
        assert_eq!(source, IdentitySource::Loaded);
        assert_eq!(again.fingerprint(), first.fingerprint());
        // The server's identity in the same directory is another key.
        let (server, _) = server_identity(&state, None).unwrap();
        assert_ne!(server.fingerprint(), first.fingerprint());
    }

    #[test]
    fn a_state_directory_at_or_under_the_root_is_refused_even_before_it_exists() {
        let dir = TestDir::new("state-in-root");
        let root = dir.path().join("root");
        fs::create_dir_all(root.join("sub")).unwrap();
        for state in [
            root.clone(),
            root.join("sub"),
            root.join("not/yet/made"),
            root.join("sub/../elsewhere"),
        ] {
            let error = refuse_state_inside_root(&state, &root)
                .unwrap_err()
                .to_string();
            assert!(error.contains("--root"), "{}: {error}", state.display());
        }
        // A symlink out of the root's sight still lands in it.
        let link = dir.path().join("link-to-root");
        std::os::unix::fs::symlink(&root, &link).unwrap();
        assert!(refuse_state_inside_root(&link.join("state"), &root).is_err());
        // Beside the root, or the root inside the state: allowed.
        refuse_state_inside_root(&dir.path().join("state"), &root).unwrap();
        refuse_state_inside_root(&dir.path().join("rooted"), &root).unwrap();
        refuse_state_inside_root(dir.path(), &root.join("sub")).unwrap();
        // A name that only starts like the root is not inside it.
        refuse_state_inside_root(&dir.path().join("root-state"), &root).unwrap();
    }

    #[test]
    fn explicit_state_dir_wins() {
        assert_eq!(
            state_dir(Some(Path::new("/x/y"))).unwrap(),
            PathBuf::from("/x/y")
        );
    }
}
