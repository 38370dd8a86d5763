//! quinn's transport configuration (controller by name, windows, payload
//! size), its rustls configurations, and the UDP socket both endpoints bind.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use quinn::congestion::{BbrConfig, ControllerFactory, CubicConfig, NewRenoConfig};
use quinn::{IdleTimeout, TransportConfig, VarInt};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::baseline::protocol::ALPN;
use crate::baseline::tls::{
    IDLE_TIMEOUT_MS, LARGEST_DATAGRAM_SIZE, MAX_DATA, MAX_DATAGRAM_SIZE, MAX_STREAM_DATA,
};

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

/// quinn's controller factory named `cc` (one of [`CONTROLLERS`]).
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
            CONTROLLERS
                .iter()
                .chain(EXTRA_CONTROLLERS)
                .copied()
                .collect::<Vec<_>>()
                .join(", ")
        ),
    })
}

/// The transport settings both endpoints share, with controller `cc`:
/// 1350-byte datagrams ([`MAX_DATAGRAM_SIZE`], the links' size), or, when
/// `max_datagram` is larger, quinn's path MTU discovery from there up to it
/// (loopback, where sift's reaches 8972).
pub fn transport(cc: &str, max_datagram: usize) -> anyhow::Result<TransportConfig> {
    let mut transport = TransportConfig::default();
    let idle = IdleTimeout::try_from(Duration::from_millis(IDLE_TIMEOUT_MS))
        .context("idle timeout out of range")?;
    let payload = MAX_DATAGRAM_SIZE as u16;
    transport
        .max_idle_timeout(Some(idle))
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

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A server configuration presenting the certificate and key in these PEM
/// files, with controller `cc`.
pub fn server(
    cert_pem: &Path,
    key_pem: &Path,
    cc: &str,
    max_datagram: usize,
) -> anyhow::Result<quinn::ServerConfig> {
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
    tls.alpn_protocols = vec![ALPN.to_vec()];
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls)
        .context("rustls configuration unfit for QUIC")?;
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    config.transport_config(Arc::new(transport(cc, max_datagram)?));
    Ok(config)
}

/// A client configuration trusting exactly the certificate in `ca_pem`,
/// with controller `cc`.
pub fn client(ca_pem: &Path, cc: &str, max_datagram: usize) -> anyhow::Result<quinn::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca_pem)
        .with_context(|| format!("cannot read {}", ca_pem.display()))?
    {
        let cert = cert.with_context(|| format!("{} holds a bad certificate", ca_pem.display()))?;
        roots
            .add(cert)
            .with_context(|| format!("rustls refuses the certificate in {}", ca_pem.display()))?;
    }
    let mut tls = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .context("rustls refuses TLS 1.3")?
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![ALPN.to_vec()];
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls)
        .context("rustls configuration unfit for QUIC")?;
    let mut config = quinn::ClientConfig::new(Arc::new(crypto));
    config.transport_config(Arc::new(transport(cc, max_datagram)?));
    Ok(config)
}

/// A UDP socket bound to `addr` with sift's buffer size asked for
/// (`sift::io::SOCKET_BUFFER_BYTES`, as the quiche pair asks; the kernel may
/// grant less), ready for a quinn endpoint.
pub fn socket(addr: SocketAddr) -> anyhow::Result<std::net::UdpSocket> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))
        .context("cannot open a UDP socket")?;
    // Smaller buffers than asked for are not fatal: the kernel caps them.
    let _ = socket.set_recv_buffer_size(sift::io::SOCKET_BUFFER_BYTES);
    let _ = socket.set_send_buffer_size(sift::io::SOCKET_BUFFER_BYTES);
    socket
        .bind(&addr.into())
        .with_context(|| format!("cannot bind {addr}"))?;
    Ok(socket.into())
}

/// A quinn endpoint on `socket` (a server when `server` is given).
pub fn endpoint(
    socket: std::net::UdpSocket,
    server: Option<quinn::ServerConfig>,
) -> anyhow::Result<quinn::Endpoint> {
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
        for cc in CONTROLLERS.iter().chain(EXTRA_CONTROLLERS) {
            assert!(
                transport(cc, MAX_DATAGRAM_SIZE).is_ok(),
                "quinn refused {cc}"
            );
        }
    }

    #[test]
    fn an_unknown_controller_is_refused_with_the_known_ones_named() {
        let error = transport("bbr2", MAX_DATAGRAM_SIZE)
            .err()
            .unwrap()
            .to_string();
        assert!(
            error.contains("bbr2") && error.contains("newreno") && error.contains("bbr-iw10"),
            "{error}"
        );
    }
}
