//! The certificates servers present: the PEM files a caller gives
//! (`--cert`, `--key`, as the interop runner hands every server `/certs`),
//! or a fresh self-signed one for `localhost` made at start.
//!
//! Self-signed certificates are ECDSA P-256 (rcgen's default), which every
//! TLS stack here verifies: sift's own self-signed identity is Ed25519,
//! whose signatures quiche's BoringSSL does not offer to verify
//! (`NoSignatureSchemesInCommon`).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

/// The name self-signed certificates are made for, and the name clients
/// check when a URL gives an address (SNI carries no addresses).
pub const LOCALHOST: &str = "localhost";

/// A fresh self-signed certificate for [`LOCALHOST`] and its private key,
/// both PEM.
pub fn self_signed() -> anyhow::Result<(String, String)> {
    let certified = rcgen::generate_simple_self_signed(vec![LOCALHOST.to_string()])
        .context("cannot make a self-signed certificate")?;
    Ok((certified.cert.pem(), certified.key_pair.serialize_pem()))
}

/// A certificate chain and its key, as PEM files (quiche reads files).
#[derive(Clone, Debug)]
pub struct Certificate {
    /// The certificate chain.
    pub cert_pem: PathBuf,
    /// Its private key.
    pub key_pem: PathBuf,
}

impl Certificate {
    /// Makes a fresh self-signed certificate and writes it and its key
    /// into `dir` (created if needed, readable by this user only) as
    /// `cert.pem` and `key.pem`.
    pub fn generate(dir: &Path) -> anyhow::Result<Self> {
        let (cert, key) = self_signed()?;
        create_private_dir(dir)?;
        let cert_pem = dir.join("cert.pem");
        let key_pem = dir.join("key.pem");
        std::fs::write(&cert_pem, cert)
            .with_context(|| format!("cannot write {}", cert_pem.display()))?;
        std::fs::write(&key_pem, key)
            .with_context(|| format!("cannot write {}", key_pem.display()))?;
        Ok(Self { cert_pem, key_pem })
    }

    /// The given files (`--cert` and `--key` go together), or a fresh
    /// self-signed certificate written into `scratch`.
    pub fn given_or_generated(
        cert: Option<&Path>,
        key: Option<&Path>,
        scratch: &Path,
    ) -> anyhow::Result<Self> {
        match (cert, key) {
            (Some(cert), Some(key)) => Ok(Self {
                cert_pem: cert.to_path_buf(),
                key_pem: key.to_path_buf(),
            }),
            (None, None) => Self::generate(scratch),
            _ => bail!("--cert and --key go together"),
        }
    }
}

fn create_private_dir(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("cannot create {}", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_certificate_is_written_as_pem_and_given_files_are_kept() {
        let dir = std::env::temp_dir().join(format!("sift-interop-cert-{}", std::process::id()));
        let made = Certificate::given_or_generated(None, None, &dir).unwrap();
        let cert = std::fs::read_to_string(&made.cert_pem).unwrap();
        assert!(cert.starts_with("-----BEGIN CERTIFICATE-----"), "{cert}");
        let given =
            Certificate::given_or_generated(Some(&made.cert_pem), Some(&made.key_pem), &dir)
                .unwrap();
        assert_eq!(given.cert_pem, made.cert_pem);
        assert!(Certificate::given_or_generated(Some(&made.cert_pem), None, &dir).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
