//! sift's configuration for HTTP/3: ALPN `h3`, the server's certificate
//! (PEM files, or a fresh self-signed one), the client's trust, the
//! versions spoken, and the NSS key log that `SSLKEYLOGFILE` names.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context};
use sift::crypto::{
    CertificateRejected, CertificateVerifier, Fingerprint, ServerIdentity, ServerTrust, TlsConfig,
};
use sift::Config;

/// The versions named on a command line (`sift/1`, `v1`), most preferred
/// first.
pub fn versions(names: &[String]) -> anyhow::Result<Vec<u32>> {
    names
        .iter()
        .map(|name| match name.as_str() {
            "sift/1" | "sift" => Ok(sift::wire::VERSION),
            "v1" | "quic" => Ok(sift::wire::QUIC_V1),
            other => bail!("unknown version {other:?} (sift/1 or v1)"),
        })
        .collect()
}

/// rustls's key log to the file `SSLKEYLOGFILE` names, when it is set.
fn key_log() -> Option<Arc<dyn rustls::KeyLog>> {
    std::env::var_os("SSLKEYLOGFILE").map(|_| Arc::new(rustls::KeyLogFile::new()) as _)
}

/// A server's configuration: the certificate and key in `cert_key` (PEM
/// files) or, without them, a fresh self-signed ECDSA P-256 certificate
/// for `localhost`.
pub fn server(cert_key: Option<(&Path, &Path)>, versions: Vec<u32>) -> anyhow::Result<Config> {
    let identity = match cert_key {
        Some((cert, key)) => {
            let read = |path: &Path| {
                std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))
            };
            ServerIdentity::from_pem(&read(cert)?, &read(key)?)
                .with_context(|| format!("{} and {}", cert.display(), key.display()))?
        }
        // ECDSA P-256 (rcgen's default), which every TLS stack verifies:
        // sift's own self-signed identity is Ed25519, which quiche's
        // BoringSSL does not offer.
        None => {
            let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_string()])
                .context("cannot make a self-signed certificate")?;
            ServerIdentity::from_pem(
                certified.cert.pem().as_bytes(),
                certified.key_pair.serialize_pem().as_bytes(),
            )
            .context("the self-signed certificate")?
        }
    };
    Ok(Config {
        tls: TlsConfig {
            alpn_protocols: vec![sift_h3::ALPN.to_vec()],
            key_log: key_log(),
            ..TlsConfig::server(identity)
        },
        versions,
        ..Config::default()
    })
}

/// How a client trusts the server.
#[derive(Clone, Debug)]
pub enum Trust {
    /// Certificates chaining to the roots in this PEM file, for the name.
    Ca(PathBuf),
    /// Exactly the certificate with this SHA-256.
    Pin(Fingerprint),
    /// Any certificate (the handshake signature is still checked against
    /// its key): for tests against a server whose certificate is unknown.
    Insecure,
}

/// Accepts every certificate ([`Trust::Insecure`]).
#[derive(Debug)]
struct AcceptAny;

impl CertificateVerifier for AcceptAny {
    fn verify(&self, _: &[u8], _: &[&[u8]], _: &str) -> Result<(), CertificateRejected> {
        Ok(())
    }
}

/// A client's configuration trusting by `trust`, checking the name
/// `server_name` where the trust checks names.
pub fn client(trust: &Trust, server_name: &str, versions: Vec<u32>) -> anyhow::Result<Config> {
    let trust = match trust {
        Trust::Ca(path) => ServerTrust::roots_from_pem(
            &std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?,
        )
        .with_context(|| format!("{} holds no usable certificate", path.display()))?,
        Trust::Pin(fingerprint) => ServerTrust::Pinned(vec![*fingerprint]),
        Trust::Insecure => ServerTrust::Custom(Arc::new(AcceptAny)),
    };
    Ok(Config {
        tls: TlsConfig {
            alpn_protocols: vec![sift_h3::ALPN.to_vec()],
            server_name: Some(server_name.to_string()),
            key_log: key_log(),
            ..TlsConfig::client(trust)
        },
        versions,
        ..Config::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_versions_are_known_by_name_and_others_refused() {
        let names = ["sift/1".to_string(), "v1".to_string()];
        assert_eq!(
            versions(&names).unwrap(),
            [sift::wire::VERSION, sift::wire::QUIC_V1]
        );
        assert!(versions(&["v2".to_string()]).is_err());
    }

    #[test]
    fn configs_offer_h3_and_only_h3() {
        let server = server(None, vec![sift::wire::QUIC_V1]).unwrap();
        assert_eq!(server.tls.alpn_protocols, [b"h3".to_vec()]);
        let client = client(&Trust::Insecure, "localhost", vec![sift::wire::QUIC_V1]).unwrap();
        assert_eq!(client.tls.alpn_protocols, [b"h3".to_vec()]);
    }
}
