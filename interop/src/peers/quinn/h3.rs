//! quinn's configuration for HTTP/3 (ALPN `h3`, quinn's default transport
//! settings): a server presenting PEM files, a client trusting a PEM CA.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A server configuration presenting the certificate and key in these PEM
/// files.
pub fn server(cert_pem: &Path, key_pem: &Path) -> anyhow::Result<quinn::ServerConfig> {
    let cert = CertificateDer::from_pem_file(cert_pem)
        .with_context(|| format!("cannot read {}", cert_pem.display()))?;
    let key = PrivateKeyDer::from_pem_file(key_pem)
        .with_context(|| format!("cannot read {}", key_pem.display()))?;
    let mut tls = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .context("rustls refuses TLS 1.3")?
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .context("rustls refuses the certificate")?;
    tls.alpn_protocols = vec![sift_h3::ALPN.to_vec()];
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls)
        .context("rustls configuration unfit for QUIC")?;
    Ok(quinn::ServerConfig::with_crypto(Arc::new(crypto)))
}

/// A client configuration trusting the certificates in `ca_pem`, or any
/// certificate without one (`None`: the handshake signature is still
/// checked against the certificate's key).
pub fn client(ca_pem: Option<&Path>) -> anyhow::Result<quinn::ClientConfig> {
    let builder = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .context("rustls refuses TLS 1.3")?;
    let mut tls = match ca_pem {
        Some(ca_pem) => builder.with_root_certificates(roots(ca_pem)?),
        None => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAny(provider()))),
    }
    .with_no_client_auth();
    tls.alpn_protocols = vec![sift_h3::ALPN.to_vec()];
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls)
        .context("rustls configuration unfit for QUIC")?;
    Ok(quinn::ClientConfig::new(Arc::new(crypto)))
}

/// The certificates in `ca_pem` as rustls roots.
fn roots(ca_pem: &Path) -> anyhow::Result<rustls::RootCertStore> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca_pem)
        .with_context(|| format!("cannot read {}", ca_pem.display()))?
    {
        let cert = cert.with_context(|| format!("{} holds a bad certificate", ca_pem.display()))?;
        roots
            .add(cert)
            .with_context(|| format!("rustls refuses the certificate in {}", ca_pem.display()))?;
    }
    Ok(roots)
}

/// Accepts any server certificate, but checks the handshake signature
/// with the provider's algorithms, so the server must hold the key.
#[derive(Debug)]
struct AcceptAny(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &rustls::pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
