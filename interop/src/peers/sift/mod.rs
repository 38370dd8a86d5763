//! sift's own ends for the protocols `sift-server` and `sift-client` do
//! not speak (they speak hq-interop and sift's file service, in `bin/`):
//!
//! - [`file`]: the file protocol over sift's blocking API (`sift-peer`),
//!   so that quiche's client and server talk to sift over QUIC v1;
//! - [`h3`]: HTTP/3 through the `sift-h3` crate, hyperium's `h3` on
//!   `sift::tokio` (`sift-h3-server`, `sift-h3-client`).
//!
//! What they share is here: the versions a command line names
//! ([`Versions`]), the server's identity and the client's trust, and one
//! [`sift::Config`] per role with ALPN, the key log (`SSLKEYLOGFILE`) and
//! one qlog trace per connection (`QLOGDIR`), as `sift-server` and
//! `sift-client` honour them.

pub mod file;
pub mod h3;

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use sift::crypto::{
    CertificateRejected, CertificateVerifier, Fingerprint, ServerIdentity, ServerTrust, TlsConfig,
};
use sift::Config;

use crate::peers::cert::{Certificate, LOCALHOST};
use crate::peers::env;

/// `--versions LIST`: the QUIC versions an end speaks.
#[derive(Args, Clone, Debug)]
pub struct Versions {
    /// Versions to speak, most preferred first: sift/1, v1 (a client
    /// starts in v1 and moves to sift/1 when the server offers it).
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "sift/1,v1",
        value_parser = parse_version
    )]
    pub versions: Vec<u32>,
}

/// A version by the name a command line gives it (`sift/1`, `v1`).
pub fn parse_version(name: &str) -> Result<u32, String> {
    match name {
        "sift/1" | "sift" => Ok(sift::wire::VERSION),
        "v1" | "quic" => Ok(sift::wire::QUIC_V1),
        other => Err(format!("unknown version {other:?} (sift/1 or v1)")),
    }
}

/// The identity a server presents: `certificate`'s PEM files, or a fresh
/// self-signed ECDSA P-256 certificate for localhost, as every peer's
/// (`peers::cert`: sift's own self-signed identity is Ed25519).
pub fn identity(certificate: Option<&Certificate>) -> anyhow::Result<ServerIdentity> {
    match certificate {
        Some(Certificate { cert_pem, key_pem }) => {
            let read = |path: &PathBuf| {
                std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))
            };
            ServerIdentity::from_pem(&read(cert_pem)?, &read(key_pem)?)
                .with_context(|| format!("{} and {}", cert_pem.display(), key_pem.display()))
        }
        None => ServerIdentity::self_signed_ecdsa(&[LOCALHOST])
            .context("cannot make a self-signed certificate"),
    }
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

/// What both roles share: `tls`, the versions, the key log, the qlog
/// directory.
fn config(tls: TlsConfig, alpn: &[u8], versions: Vec<u32>) -> anyhow::Result<Config> {
    let key_log = env::key_log_path().map(|_| Arc::new(rustls::KeyLogFile::new()) as _);
    Ok(Config {
        tls: TlsConfig {
            alpn_protocols: vec![alpn.to_vec()],
            key_log,
            ..tls
        },
        versions,
        trace: env::qlog_dir()?.map(sift::trace::TraceSink::qlog_dir),
        ..Config::default()
    })
}

/// A server's configuration for `alpn`, presenting `identity`.
pub fn server(alpn: &[u8], identity: ServerIdentity, versions: Vec<u32>) -> anyhow::Result<Config> {
    config(TlsConfig::server(identity), alpn, versions)
}

/// A client's configuration for `alpn`, trusting by `trust` and checking
/// the name `server_name` where the trust checks names.
pub fn client(
    alpn: &[u8],
    trust: &Trust,
    server_name: &str,
    versions: Vec<u32>,
) -> anyhow::Result<Config> {
    let trust = match trust {
        Trust::Ca(path) => ServerTrust::roots_from_pem(
            &std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?,
        )
        .with_context(|| format!("{} holds no usable certificate", path.display()))?,
        Trust::Pin(fingerprint) => ServerTrust::Pinned(vec![*fingerprint]),
        Trust::Insecure => ServerTrust::Custom(Arc::new(AcceptAny)),
    };
    let tls = TlsConfig {
        server_name: Some(server_name.to_string()),
        ..TlsConfig::client(trust)
    };
    config(tls, alpn, versions)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_versions_are_known_by_name_and_others_refused() {
        assert_eq!(parse_version("sift/1"), Ok(sift::wire::VERSION));
        assert_eq!(parse_version("v1"), Ok(sift::wire::QUIC_V1));
        assert!(parse_version("v2").is_err());
    }

    #[test]
    fn configs_offer_the_alpn_given_and_only_it() {
        let identity = identity(None).unwrap();
        let server = server(b"h3", identity, vec![sift::wire::QUIC_V1]).unwrap();
        assert_eq!(server.tls.alpn_protocols, [b"h3".to_vec()]);
        let client = client(b"h3", &Trust::Insecure, "localhost", vec![]).unwrap();
        assert_eq!(client.tls.alpn_protocols, [b"h3".to_vec()]);
        assert_eq!(client.tls.server_name.as_deref(), Some("localhost"));
    }
}
