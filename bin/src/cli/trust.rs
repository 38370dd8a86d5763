//! How `sift-client` trusts a server, like ssh: a known-hosts file keyed by
//! `host:port` (trust on first use), overridden by `--pin SHA256:…` or
//! `--ca FILE`.
//!
//! - First contact: any certificate is accepted, and once the handshake
//!   completed (the server proved it holds the key) its fingerprint is
//!   appended to the file, with one line on stderr saying so.
//! - Later contacts: the stored fingerprint must match; a different one is
//!   refused with one line naming both fingerprints and the line to remove.
//! - `--pin`: only the given fingerprints, the file is neither read nor
//!   written. `--ca`: WebPKI validation to the bundle's roots for the URL's
//!   host name; the file is not used either.
//!
//! File format: `host:port SHA256:<64 hex>` per line; `#` starts a comment.

use std::fs::{self, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::Context;
use sift::crypto::{CertificateRejected, CertificateVerifier, Fingerprint, ServerTrust, TlsConfig};

use super::state;
use super::url::SiftUrl;

/// One `host:port fingerprint` entry of a known-hosts file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KnownHost {
    /// `host:port` as the user wrote the host (IPv6 in brackets).
    pub host: String,
    pub fingerprint: Fingerprint,
    /// 1-based line number.
    pub line: usize,
}

/// Parses a known-hosts file's text; a malformed line is an error naming
/// `file` and the line.
pub fn parse_known_hosts(text: &str, file: &Path) -> anyhow::Result<Vec<KnownHost>> {
    let mut entries = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        let mut fields = line.split_whitespace();
        let (Some(host), Some(fingerprint), None) = (fields.next(), fields.next(), fields.next())
        else {
            anyhow::bail!(
                "{} line {}: expected \"host:port SHA256:…\", found {raw:?}",
                file.display(),
                index + 1
            );
        };
        let fingerprint = fingerprint
            .parse()
            .with_context(|| format!("{} line {}", file.display(), index + 1))?;
        entries.push(KnownHost {
            host: host.to_string(),
            fingerprint,
            line: index + 1,
        });
    }
    Ok(entries)
}

/// `host:port` as known-hosts keys it.
pub fn host_key(url: &SiftUrl) -> String {
    if url.host.contains(':') {
        format!("[{}]:{}", url.host, url.port)
    } else {
        format!("{}:{}", url.host, url.port)
    }
}

/// What the certificate must be.
#[derive(Debug)]
enum Rule {
    /// One of `--pin`.
    Pins(Vec<Fingerprint>),
    /// What the known-hosts file says.
    Known { file: PathBuf, entry: KnownHost },
    /// Nothing known: accept, remember after the handshake.
    FirstContact { file: PathBuf },
}

/// The client's certificate check, which keeps what the server presented
/// and why it was refused, to tell the user in one line.
#[derive(Debug)]
pub struct HostCheck {
    host: String,
    rule: Rule,
    presented: Mutex<Option<Fingerprint>>,
    refusal: Mutex<Option<String>>,
    /// On first contact, the key this run stored: later connections of
    /// the run (`--repeat`, `--reconnect`) must present it again, and it
    /// is stored once.
    stored: Mutex<Option<Fingerprint>>,
}

impl CertificateVerifier for HostCheck {
    fn verify(
        &self,
        end_entity: &[u8],
        _intermediates: &[&[u8]],
        _server_name: &str,
    ) -> Result<(), CertificateRejected> {
        let presented = Fingerprint::of_certificate(end_entity);
        if let Ok(mut slot) = self.presented.lock() {
            *slot = Some(presented);
        }
        let refusal = match &self.rule {
            Rule::Pins(pins) if !pins.contains(&presented) => Some(format!(
                "{} presented {presented}, which matches no --pin ({})",
                self.host,
                pins.iter()
                    .map(|pin| pin.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            Rule::Known { file, entry } if entry.fingerprint != presented => Some(format!(
                "the key of {} has changed: {} line {} has {}, the server presented {presented}; if the server was re-keyed on purpose, remove line {} of {} and connect again",
                self.host,
                file.display(),
                entry.line,
                entry.fingerprint,
                entry.line,
                file.display()
            )),
            Rule::FirstContact { file } => self
                .stored
                .lock()
                .ok()
                .and_then(|stored| *stored)
                .filter(|stored| *stored != presented)
                .map(|stored| {
                    format!(
                        "the key of {} changed during this run: this run stored {stored} in {}, the server now presented {presented}",
                        self.host,
                        file.display()
                    )
                }),
            _ => None,
        };
        match refusal {
            Some(reason) => {
                if let Ok(mut slot) = self.refusal.lock() {
                    *slot = Some(reason.clone());
                }
                Err(CertificateRejected(reason))
            }
            None => Ok(()),
        }
    }
}

/// The client's trust for one server: the TLS settings to connect with,
/// and what to do once connected (or refused).
#[derive(Debug, Clone)]
pub struct ClientTrust {
    tls: TlsConfig,
    check: Option<Arc<HostCheck>>,
}

impl ClientTrust {
    /// From the command line: `--pin`s, else `--ca`, else the known-hosts
    /// file `known_hosts` (default: in the state directory).
    pub fn from_options(
        url: &SiftUrl,
        pins: &[Fingerprint],
        ca: Option<&Path>,
        known_hosts: Option<&Path>,
        state_dir: Option<&Path>,
    ) -> anyhow::Result<Self> {
        let host = host_key(url);
        let server_name = url
            .host
            .parse::<std::net::IpAddr>()
            .is_err()
            .then(|| url.host.clone());
        if let Some(ca) = ca {
            let pem = fs::read(ca).with_context(|| format!("cannot read {}", ca.display()))?;
            let roots = ServerTrust::roots_from_pem(&pem)
                .with_context(|| format!("--ca {}", ca.display()))?;
            return Ok(Self {
                tls: TlsConfig {
                    server_name,
                    ..TlsConfig::client(roots)
                },
                check: None,
            });
        }
        let rule = if !pins.is_empty() {
            Rule::Pins(pins.to_vec())
        } else {
            let file = match known_hosts {
                Some(file) => file.to_path_buf(),
                None => state::state_dir(state_dir)?.join(state::KNOWN_HOSTS_FILE),
            };
            let entries = match fs::read_to_string(&file) {
                Ok(text) => parse_known_hosts(&text, &file)?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
                Err(e) => {
                    return Err(
                        anyhow::Error::new(e).context(format!("cannot read {}", file.display()))
                    )
                }
            };
            match entries.into_iter().find(|entry| entry.host == host) {
                Some(entry) => Rule::Known { file, entry },
                None => Rule::FirstContact { file },
            }
        };
        let check = Arc::new(HostCheck {
            host,
            rule,
            presented: Mutex::new(None),
            refusal: Mutex::new(None),
            stored: Mutex::new(None),
        });
        Ok(Self {
            tls: TlsConfig {
                server_name,
                ..TlsConfig::client(ServerTrust::Custom(check.clone()))
            },
            check: Some(check),
        })
    }

    /// No certificate is checked: for Null protection, which has none.
    pub fn none() -> Self {
        Self {
            tls: TlsConfig::default(),
            check: None,
        }
    }

    /// Trust in exactly one fingerprint, with nothing stored (the demo).
    pub fn pinned(fingerprint: Fingerprint) -> Self {
        Self {
            tls: TlsConfig::client(ServerTrust::Pinned(vec![fingerprint])),
            check: None,
        }
    }

    /// `config` trusting servers this way (and naming the server as the
    /// trust needs); the rest of its TLS settings (ALPN, ciphers, the key
    /// the client presents, the key log) are kept.
    pub fn apply(&self, config: sift::Config) -> sift::Config {
        let tls = TlsConfig {
            trust: self.tls.trust.clone(),
            server_name: self.tls.server_name.clone(),
            ..config.tls
        };
        sift::Config { tls, ..config }
    }

    /// Why the certificate was refused, if it was.
    pub fn refusal(&self) -> Option<String> {
        self.check.as_ref()?.refusal.lock().ok()?.clone()
    }

    /// After a completed handshake: on first contact, remember the key and
    /// say so on stderr.
    pub fn on_connected(&self) -> anyhow::Result<()> {
        let Some(check) = &self.check else {
            return Ok(());
        };
        let Rule::FirstContact { file } = &check.rule else {
            return Ok(());
        };
        let Some(presented) = check.presented.lock().ok().and_then(|slot| *slot) else {
            return Ok(());
        };
        let Ok(mut stored) = check.stored.lock() else {
            return Ok(());
        };
        if stored.is_some() {
            // An earlier connection of this run stored it (and `verify`
            // held this one to it).
            return Ok(());
        }
        append_known_host(file, &check.host, presented)?;
        *stored = Some(presented);
        eprintln!(
            "sift-client: first contact with {}: stored its key {presented} in {}",
            check.host,
            file.display()
        );
        Ok(())
    }
}

/// Appends `host fingerprint` to the known-hosts `file`, unless another
/// run stored the same key for `host` since this one read the file.
/// Clients started together (a script fetching several files at once from
/// a new server) each reach first contact: under an exclusive lock each
/// reads the file again, so their lines neither interleave nor repeat, and
/// one that finds a different key stored meanwhile is refused as a changed
/// key is.
fn append_known_host(file: &Path, host: &str, fingerprint: Fingerprint) -> anyhow::Result<()> {
    if let Some(dir) = file.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        state::create_private_dir(dir)?;
    }
    let mut out = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(0o600)
        .open(file)
        .with_context(|| format!("cannot open {}", file.display()))?;
    state::lock_exclusive(&out).with_context(|| format!("cannot lock {}", file.display()))?;
    let mut text = String::new();
    out.read_to_string(&mut text)
        .with_context(|| format!("cannot read {}", file.display()))?;
    let stored = parse_known_hosts(&text, file)?
        .into_iter()
        .find(|entry| entry.host == host);
    if let Some(entry) = stored {
        anyhow::ensure!(
            entry.fingerprint == fingerprint,
            "{host} presented {fingerprint}, but another sift-client stored {} for it in {} (line {}) meanwhile: one of them is not the server",
            entry.fingerprint,
            file.display(),
            entry.line
        );
        return Ok(());
    }
    // One write: appends of one write each never interleave.
    out.write_all(format!("{host} {fingerprint}\n").as_bytes())
        .with_context(|| format!("cannot write {}", file.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transfer::test_dir::TestDir;

    fn url(host: &str) -> SiftUrl {
        SiftUrl {
            scheme: Default::default(),
            host: host.into(),
            port: 4433,
            path: String::new(),
        }
    }

    #[test]
    fn known_hosts_lines_parse_with_comments_and_blank_lines() {
        let a = Fingerprint::of_certificate(b"a");
        let text = format!(
            "# sift known hosts\n\nexample.org:4433 {a}  # added by hand\n[::1]:5000 {a}\n"
        );
        let entries = parse_known_hosts(&text, Path::new("kh")).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(
            (entries[0].host.as_str(), entries[0].line),
            ("example.org:4433", 3)
        );
        assert_eq!(
            (entries[1].host.as_str(), entries[1].line),
            ("[::1]:5000", 4)
        );
        let error = parse_known_hosts("host:1 nothex\n", Path::new("kh")).unwrap_err();
        assert!(format!("{error:#}").contains("kh line 1"), "{error:#}");
    }

    #[test]
    fn first_contact_is_stored_then_a_changed_key_is_refused_naming_the_line() {
        let dir = TestDir::new("known-hosts");
        let file = dir.path().join("sub/known_hosts");
        let (old, new) = (b"old cert".as_slice(), b"new cert".as_slice());
        let first = ClientTrust::from_options(&url("h"), &[], None, Some(&file), None).unwrap();
        let check = first.check.clone().unwrap();
        assert!(check.verify(old, &[], "h").is_ok());
        first.on_connected().unwrap();
        let stored = fs::read_to_string(&file).unwrap();
        assert_eq!(
            stored,
            format!("h:4433 {}\n", Fingerprint::of_certificate(old))
        );

        let later = ClientTrust::from_options(&url("h"), &[], None, Some(&file), None).unwrap();
        let check = later.check.clone().unwrap();
        assert!(check.verify(old, &[], "h").is_ok());
        assert!(check.verify(new, &[], "h").is_err());
        let refusal = later.refusal().unwrap();
        for needed in [
            Fingerprint::of_certificate(old).to_string(),
            Fingerprint::of_certificate(new).to_string(),
            format!("remove line 1 of {}", file.display()),
        ] {
            assert!(refusal.contains(&needed), "{refusal}");
        }
        later.on_connected().unwrap();
        assert_eq!(
            fs::read_to_string(&file).unwrap(),
            stored,
            "nothing more stored"
        );
        // Another port of the same host is another server.
        let other = ClientTrust::from_options(
            &SiftUrl {
                port: 1,
                ..url("h")
            },
            &[],
            None,
            Some(&file),
            None,
        )
        .unwrap();
        assert!(other.check.unwrap().verify(new, &[], "h").is_ok());
    }

    #[test]
    fn connections_of_one_run_store_a_first_contact_once_and_hold_to_it() {
        let dir = TestDir::new("known-hosts-run");
        let file = dir.path().join("known_hosts");
        let trust = ClientTrust::from_options(&url("h"), &[], None, Some(&file), None).unwrap();
        // --repeat and --reconnect clone the trust for each connection.
        let (first, second) = (trust.clone(), trust.clone());
        first
            .check
            .as_ref()
            .unwrap()
            .verify(b"cert", &[], "h")
            .unwrap();
        first.on_connected().unwrap();
        // A resumed handshake presents no certificate: nothing new to store.
        second.on_connected().unwrap();
        let stored = fs::read_to_string(&file).unwrap();
        assert_eq!(stored.lines().count(), 1, "{stored}");
        let check = second.check.as_ref().unwrap();
        assert!(check.verify(b"cert", &[], "h").is_ok());
        assert!(check.verify(b"another cert", &[], "h").is_err());
        assert!(
            second
                .refusal()
                .unwrap()
                .contains("changed during this run"),
            "{:?}",
            second.refusal()
        );
    }

    #[test]
    fn runs_that_reach_first_contact_together_store_one_line_and_agree_on_the_key() {
        let dir = TestDir::new("known-hosts-together");
        let file = dir.path().join("known_hosts");
        // Each read the file before either stored anything.
        let runs: Vec<ClientTrust> = (0..3)
            .map(|_| ClientTrust::from_options(&url("h"), &[], None, Some(&file), None).unwrap())
            .collect();
        for (run, cert) in runs
            .iter()
            .zip([b"cert".as_slice(), b"cert", b"another cert"])
        {
            run.check.as_ref().unwrap().verify(cert, &[], "h").unwrap();
        }
        runs[0].on_connected().unwrap();
        runs[1].on_connected().unwrap();
        let stored = fs::read_to_string(&file).unwrap();
        assert_eq!(
            stored,
            format!("h:4433 {}\n", Fingerprint::of_certificate(b"cert"))
        );
        let error = format!("{:#}", runs[2].on_connected().unwrap_err());
        assert!(
            error.contains("another sift-client stored")
                && error.contains(&Fingerprint::of_certificate(b"another cert").to_string()),
            "{error}"
        );
        assert_eq!(fs::read_to_string(&file).unwrap(), stored);
    }

    #[test]
    fn first_contacts_from_many_threads_each_leave_one_whole_line() {
        let dir = TestDir::new("known-hosts-threads");
        let file = dir.path().join("known_hosts");
        let hosts = 16;
        std::thread::scope(|scope| {
            for index in 0..hosts {
                let file = &file;
                scope.spawn(move || {
                    let trust = ClientTrust::from_options(
                        &url(&format!("h{index}")),
                        &[],
                        None,
                        Some(file),
                        None,
                    )
                    .unwrap();
                    let cert = format!("cert {index}");
                    let check = trust.check.as_ref().unwrap();
                    check.verify(cert.as_bytes(), &[], "h").unwrap();
                    trust.on_connected().unwrap();
                });
            }
        });
        let entries = parse_known_hosts(&fs::read_to_string(&file).unwrap(), &file).unwrap();
        assert_eq!(entries.len(), hosts);
        for index in 0..hosts {
            let entry = entries
                .iter()
                .find(|entry| entry.host == format!("h{index}:4433"))
                .unwrap();
            let cert = format!("cert {index}");
            assert_eq!(
                entry.fingerprint,
                Fingerprint::of_certificate(cert.as_bytes())
            );
        }
    }

    #[test]
    fn pins_override_the_known_hosts_file() {
        let dir = TestDir::new("pins");
        let file = dir.path().join("known_hosts");
        let pin = Fingerprint::of_certificate(b"pinned");
        let trust = ClientTrust::from_options(&url("h"), &[pin], None, Some(&file), None).unwrap();
        let check = trust.check.clone().unwrap();
        assert!(check.verify(b"pinned", &[], "h").is_ok());
        assert!(check.verify(b"other", &[], "h").is_err());
        assert!(trust.refusal().unwrap().contains("matches no --pin"));
        trust.on_connected().unwrap();
        assert!(!file.exists(), "--pin writes nothing");
    }
}
