//! quinn's side of what every peer shares: transport settings (the
//! comparison's like-for-like ones, or quinn's defaults), rustls with the
//! ring provider for both ends (certificates from PEM files, trust in a
//! CA or in nothing, the key log), and the endpoint on a socket from
//! `peers::net`.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use quinn::congestion::{BbrConfig, ControllerFactory, CubicConfig, NewRenoConfig};
use quinn::{IdleTimeout, TransportConfig, VarInt};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::peers::cert::Certificate;
use crate::peers::settings::{
    IDLE_TIMEOUT, LARGEST_DATAGRAM_SIZE, MAX_DATA, MAX_DATAGRAM_SIZE, MAX_STREAM_DATA,
};
use crate::peers::{env, net};

/// The controllers quinn 0.11 has, by the names `--cc` takes, in the order
/// the runner tries them (`bbr` is quinn's experimental BBR).
pub const CONTROLLERS: &[&str] = &["cubic", "newreno", "bbr"];

/// Also taken by name, not run unless asked: `bbr-iw10`, quinn's BBR with
/// RFC 9002's initial window of ten datagrams. quinn 0.11's `BbrConfig`
/// starts at 200 × 1200 bytes (240 kB, 178 of our 1350-byte datagrams),
/// where its CUBIC and NewReno start at 14 720 bytes. The initial window
/// governs only the first round trip: quinn-proto 0.11.19's BBR enters
/// ProbeRtt at its first ACK that is not application-limited, and sends
/// against 0.75 × bandwidth estimate × min RTT from then on for a round
/// trip or more (`results/2026-11-27-quinn-start/`, issue 37).
pub const EXTRA_CONTROLLERS: &[&str] = &["bbr-iw10"];

/// Every name `--cc` takes: [`CONTROLLERS`], then [`EXTRA_CONTROLLERS`].
pub fn controller_names() -> Vec<&'static str> {
    CONTROLLERS
        .iter()
        .chain(EXTRA_CONTROLLERS)
        .copied()
        .collect()
}

/// quinn's controller factory named `cc` (one of [`controller_names`]).
pub fn controller(cc: &str) -> anyhow::Result<Arc<dyn ControllerFactory + Send + Sync>> {
    Ok(match cc {
        "cubic" => Arc::new(CubicConfig::default()),
        "newreno" => Arc::new(NewRenoConfig::default()),
        "bbr" => Arc::new(BbrConfig::default()),
        "bbr-iw10" => {
            let mut bbr = BbrConfig::default();
            bbr.initial_window(10 * MAX_DATAGRAM_SIZE as u64);
            Arc::new(bbr)
        }
        other => anyhow::bail!(
            "quinn has no congestion controller {other:?} (try one of {})",
            controller_names().join(", ")
        ),
    })
}

/// quinn's default transport settings with the shared idle timeout: what
/// the hq-interop and HTTP/3 peers run, as a user of quinn would.
pub fn defaults() -> anyhow::Result<TransportConfig> {
    let mut transport = TransportConfig::default();
    transport.max_idle_timeout(Some(
        IdleTimeout::try_from(IDLE_TIMEOUT).context("idle timeout out of range")?,
    ));
    Ok(transport)
}

/// The comparison's settings, with controller `cc`: 1350-byte datagrams
/// ([`MAX_DATAGRAM_SIZE`], the links' size), or, when `max_datagram` is
/// larger, quinn's path MTU discovery from there up to it (loopback, where
/// sift's reaches 8972); the shared windows.
pub fn like_for_like(cc: &str, max_datagram: usize) -> anyhow::Result<TransportConfig> {
    let mut transport = defaults()?;
    let payload = MAX_DATAGRAM_SIZE as u16;
    transport
        .initial_mtu(payload)
        .min_mtu(payload)
        .mtu_discovery_config((max_datagram > MAX_DATAGRAM_SIZE).then(|| {
            let mut discovery = quinn::MtuDiscoveryConfig::default();
            discovery.upper_bound(u16::try_from(max_datagram).unwrap_or(u16::MAX));
            discovery
        }))
        .receive_window(VarInt::from_u64(MAX_DATA).context("window out of range")?)
        .stream_receive_window(VarInt::from_u64(MAX_STREAM_DATA).context("window out of range")?)
        .send_window(MAX_DATA)
        .max_concurrent_bidi_streams(VarInt::from_u32(16))
        .max_concurrent_uni_streams(VarInt::from_u32(16))
        .congestion_controller_factory(controller(cc)?);
    Ok(transport)
}

/// rustls's ring provider, with TLS_CHACHA20_POLY1305_SHA256 as its only
/// cipher suite when `chacha20_only`.
pub fn provider(chacha20_only: bool) -> Arc<rustls::crypto::CryptoProvider> {
    let mut provider = rustls::crypto::ring::default_provider();
    if chacha20_only {
        provider
            .cipher_suites
            .retain(|s| s.suite() == rustls::CipherSuite::TLS13_CHACHA20_POLY1305_SHA256);
    }
    Arc::new(provider)
}

/// rustls's key log, when `SSLKEYLOGFILE` asks for one.
fn key_log() -> Option<Arc<dyn rustls::KeyLog>> {
    env::key_log_path().map(|_| Arc::new(rustls::KeyLogFile::new()) as _)
}

/// A server presenting `certificate` (its whole chain) for `alpn`, TLS
/// 1.3, 0-RTT accepted (QUIC wants all or nothing, RFC 9001 §4.6.1).
pub fn server(
    certificate: &Certificate,
    alpn: &[u8],
    transport: TransportConfig,
) -> anyhow::Result<quinn::ServerConfig> {
    let (cert, key) = (&certificate.cert_pem, &certificate.key_pem);
    let chain = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("cannot read {}", cert.display()))?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("{} holds a bad certificate", cert.display()))?;
    let key = PrivateKeyDer::from_pem_file(key)
        .with_context(|| format!("cannot read {}", key.display()))?;
    let mut tls = rustls::ServerConfig::builder_with_provider(provider(false))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .context("rustls refuses TLS 1.3")?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .context("rustls refuses the certificate")?;
    tls.alpn_protocols = vec![alpn.to_vec()];
    tls.max_early_data_size = u32::MAX;
    if let Some(key_log) = key_log() {
        tls.key_log = key_log;
    }
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls)
        .context("rustls configuration unfit for QUIC")?;
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    config.transport_config(Arc::new(transport));
    Ok(config)
}

/// What a client trusts and offers.
#[derive(Clone, Debug, Default)]
pub struct ClientTls<'a> {
    /// Certificates chaining to the roots in this PEM file; `None`: any
    /// certificate (the handshake signature is still checked).
    pub ca: Option<&'a Path>,
    /// Offer only TLS_CHACHA20_POLY1305_SHA256.
    pub chacha20_only: bool,
    /// Send requests in 0-RTT when resuming.
    pub early_data: bool,
}

/// A client for `alpn` trusting and offering as `tls` says. Both
/// connections of a resuming client share one, and with it rustls'
/// session cache.
pub fn client(
    tls: &ClientTls<'_>,
    alpn: &[u8],
    transport: TransportConfig,
) -> anyhow::Result<quinn::ClientConfig> {
    let provider = provider(tls.chacha20_only);
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .context("rustls refuses TLS 1.3")?;
    let mut config = match tls.ca {
        Some(ca) => builder
            .with_root_certificates(roots(ca)?)
            .with_no_client_auth(),
        None => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
            .with_no_client_auth(),
    };
    config.alpn_protocols = vec![alpn.to_vec()];
    config.enable_early_data = tls.early_data;
    if let Some(key_log) = key_log() {
        config.key_log = key_log;
    }
    // Initial packets are always AES-128-GCM (RFC 9001 §5.2), whatever
    // the handshake negotiates.
    let initial = rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256
        .tls13()
        .and_then(|suite| suite.quic_suite())
        .context("ring has no QUIC suite for AES-128-GCM")?;
    let crypto = quinn::crypto::rustls::QuicClientConfig::with_initial(Arc::new(config), initial)
        .context("rustls configuration unfit for QUIC")?;
    let mut client = quinn::ClientConfig::new(Arc::new(crypto));
    client.transport_config(Arc::new(transport));
    Ok(client)
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

/// Accepts any certificate (`--insecure`), but still checks the handshake
/// signature against it, so the server must hold the key.
#[derive(Debug)]
struct AnyCertificate(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
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

/// A quinn endpoint on a fresh socket bound to `addr` (`peers::net`'s
/// buffers), a server when `server` is given.
pub fn endpoint(
    addr: SocketAddr,
    server: Option<quinn::ServerConfig>,
) -> anyhow::Result<quinn::Endpoint> {
    let socket = net::bind_udp(addr).with_context(|| format!("cannot bind {addr}"))?;
    // Accept datagrams up to loopback's jumbo size (quinn's default is
    // 1472), so a peer's path MTU discovery can go as far as sift's.
    let mut config = quinn::EndpointConfig::default();
    config
        .max_udp_payload_size(LARGEST_DATAGRAM_SIZE as u16)
        .context("quinn refuses the datagram size")?;
    quinn::Endpoint::new(config, server, socket, Arc::new(quinn::TokioRuntime))
        .context("cannot start a quinn endpoint")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_controller_is_one_quinn_builds() {
        for cc in controller_names() {
            assert!(
                like_for_like(cc, MAX_DATAGRAM_SIZE).is_ok(),
                "quinn refused {cc}"
            );
        }
    }

    #[test]
    fn an_unknown_controller_is_refused_with_the_known_ones_named() {
        let error = like_for_like("bbr2", MAX_DATAGRAM_SIZE)
            .err()
            .unwrap()
            .to_string();
        assert!(
            error.contains("bbr2") && error.contains("newreno") && error.contains("bbr-iw10"),
            "{error}"
        );
    }
}
