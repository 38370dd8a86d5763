//! hq-interop over quinn 0.11 (rustls with the ring provider, on tokio):
//! the server behind `quinn-hq server` and the client behind
//! `quinn-hq client`.
//!
//! quinn does what the runner's cases ask through its public API: Retry
//! (`Incoming::retry` for a client whose address is not yet validated),
//! resumption and 0-RTT (rustls' in-memory session cache, shared by both
//! connections of one client, and `Connecting::into_0rtt`), a key update
//! (`Connection::force_key_update`), ChaCha20 (a provider with that one
//! suite), active migration (`Endpoint::rebind`, which also moves to a new
//! connection ID). It speaks QUIC v1 only (quinn-proto's
//! `DEFAULT_SUPPORTED_VERSIONS`). Key logs go to `SSLKEYLOGFILE`
//! (`rustls::KeyLogFile`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::AsyncReadExt;

use super::{ClientOptions, ClientReport, Download, FileReport, Url, ALPN};

/// How long a finished client waits for the server to see its close.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// How much of a file is read per write to a stream.
const READ_CHUNK: usize = 64 * 1024;

/// The idle timeout both ends ask for: long enough for the lossy cases'
/// backed-off probes, short enough that a dead peer ends a cell.
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// What `quinn-hq server` is asked to do.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// Directory whose files are served.
    pub root: PathBuf,
    /// Certificate chain (PEM).
    pub cert: PathBuf,
    /// Its private key (PEM).
    pub key: PathBuf,
    /// Send a Retry to every client whose address is not yet validated.
    pub retry: bool,
}

fn provider(chacha20_only: bool) -> Arc<rustls::crypto::CryptoProvider> {
    let mut provider = rustls::crypto::ring::default_provider();
    if chacha20_only {
        provider
            .cipher_suites
            .retain(|s| s.suite() == rustls::CipherSuite::TLS13_CHACHA20_POLY1305_SHA256);
    }
    Arc::new(provider)
}

fn transport() -> anyhow::Result<quinn::TransportConfig> {
    let mut transport = quinn::TransportConfig::default();
    transport
        .max_idle_timeout(Some(
            quinn::IdleTimeout::try_from(IDLE_TIMEOUT).context("idle timeout out of range")?,
        ))
        .max_concurrent_bidi_streams(quinn::VarInt::from_u64(super::MAX_CONCURRENT_STREAMS)?);
    Ok(transport)
}

/// The server's quinn configuration: the certificate chain, hq-interop,
/// 0-RTT accepted, key log.
pub fn server_config(cert: &Path, key: &Path) -> anyhow::Result<quinn::ServerConfig> {
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
    tls.alpn_protocols = vec![ALPN.to_vec()];
    // QUIC wants all or nothing here (RFC 9001 §4.6.1).
    tls.max_early_data_size = u32::MAX;
    tls.key_log = Arc::new(rustls::KeyLogFile::new());
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls)
        .context("rustls configuration unfit for QUIC")?;
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    config.transport_config(Arc::new(transport()?));
    Ok(config)
}

/// A bound server, ready to run.
pub struct Server {
    endpoint: quinn::Endpoint,
    root: Arc<PathBuf>,
    retry: bool,
}

impl Server {
    /// Binds the socket and starts the endpoint (inside a tokio runtime).
    pub fn bind(options: &ServerOptions) -> anyhow::Result<Self> {
        if !options.root.is_dir() {
            bail!("--root {} is not a directory", options.root.display());
        }
        let config = server_config(&options.cert, &options.key)?;
        // The socket asks for sift's receive buffer, as the bulk pair and
        // quiche's do: quinn's own bind keeps the kernel default (212992
        // bytes here), which overflows under a thousand connections'
        // handshakes and acknowledgements.
        let socket = crate::quinn_peer::config::socket(options.listen)?;
        let endpoint = crate::quinn_peer::config::endpoint(socket, Some(config))
            .with_context(|| format!("cannot listen on {}", options.listen))?;
        Ok(Self {
            endpoint,
            root: Arc::new(options.root.clone()),
            retry: options.retry,
        })
    }

    /// The address bound.
    pub fn local_addr(&self) -> anyhow::Result<SocketAddr> {
        self.endpoint
            .local_addr()
            .context("the endpoint has no address")
    }

    /// Serves until the endpoint is closed.
    pub async fn run(self) {
        while let Some(incoming) = self.endpoint.accept().await {
            if self.retry && !incoming.remote_address_validated() {
                // Only fails when the client's Initial carried a token already.
                let _ = incoming.retry();
                continue;
            }
            let root = self.root.clone();
            tokio::spawn(async move {
                // A handshake that fails ends only that connection.
                if let Ok(conn) = incoming.await {
                    serve(conn, root).await;
                }
            });
        }
    }
}

async fn serve(conn: quinn::Connection, root: Arc<PathBuf>) {
    let peer = conn.remote_address();
    while let Ok((send, recv)) = conn.accept_bi().await {
        let root = root.clone();
        tokio::spawn(async move {
            // A stream the peer resets ends only that stream.
            let _ = answer(send, recv, &root).await;
        });
    }
    let stats = conn.stats();
    eprintln!(
        "client={peer} closed: sent {} packets, lost {}",
        stats.path.sent_packets, stats.path.lost_packets
    );
}

async fn answer(
    mut send: quinn::SendStream,
    mut recv: quinn::RecvStream,
    root: &Path,
) -> anyhow::Result<()> {
    let request = recv.read_to_end(super::MAX_REQUEST_BYTES).await?;
    let file = match super::parse_request(&request) {
        Ok(path) => super::resolve(root, &path).map(|full| (path, full)),
        Err(_) => None,
    };
    let Some((path, full)) = file else {
        // HTTP/0.9 has no status: a refused request is a reset stream.
        send.reset(quinn::VarInt::from_u32(0x10c))?;
        return Ok(());
    };
    let mut file = tokio::fs::File::open(&full).await?;
    let mut chunk = vec![0u8; READ_CHUNK];
    loop {
        let read = file.read(&mut chunk).await?;
        if read == 0 {
            break;
        }
        send.write_all(&chunk[..read]).await?;
    }
    send.finish()?;
    eprintln!("GET /{path}");
    // Keep the stream until the peer has everything (or goes away).
    let _ = send.stopped().await;
    Ok(())
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

/// The client's quinn configuration for `options` (trust, cipher suites,
/// early data, key log). Both connections of a resuming client share it,
/// and with it rustls' session cache.
pub fn client_config(options: &ClientOptions) -> anyhow::Result<quinn::ClientConfig> {
    let provider = provider(options.chacha20);
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .context("rustls refuses TLS 1.3")?;
    let mut tls = match &options.ca {
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for cert in CertificateDer::pem_file_iter(ca)
                .with_context(|| format!("cannot read {}", ca.display()))?
            {
                roots
                    .add(cert.with_context(|| format!("{} holds a bad certificate", ca.display()))?)
                    .with_context(|| format!("rustls refuses a certificate of {}", ca.display()))?;
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        }
        None => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
            .with_no_client_auth(),
    };
    tls.alpn_protocols = vec![ALPN.to_vec()];
    tls.enable_early_data = options.zero_rtt;
    tls.key_log = Arc::new(rustls::KeyLogFile::new());
    // Initial packets are always AES-128-GCM (RFC 9001 §5.2), whatever
    // the handshake negotiates.
    let initial = rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256
        .tls13()
        .and_then(|suite| suite.quic_suite())
        .context("ring has no QUIC suite for AES-128-GCM")?;
    let crypto = quinn::crypto::rustls::QuicClientConfig::with_initial(Arc::new(tls), initial)
        .context("rustls configuration unfit for QUIC")?;
    let mut config = quinn::ClientConfig::new(Arc::new(crypto));
    config.transport_config(Arc::new(transport()?));
    Ok(config)
}

fn any_address(like: SocketAddr) -> SocketAddr {
    if like.is_ipv4() {
        (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    }
}

/// Runs the client (inside a tokio runtime): every URL downloaded into
/// `options.output_dir`, or an error naming the first file that failed.
pub async fn run_client(options: &ClientOptions) -> anyhow::Result<ClientReport> {
    let first = options.urls.first().context("no URL given")?;
    let server = first.address;
    let server_name = first.server_name();
    let endpoint = quinn::Endpoint::client(any_address(server)).context("cannot bind a socket")?;
    let config = client_config(options)?;
    let mut report = ClientReport {
        stack: "quinn".into(),
        version: "QUIC v1".into(),
        alpn: String::from_utf8_lossy(ALPN).into_owned(),
        cipher: options
            .chacha20
            .then(|| "TLS_CHACHA20_POLY1305_SHA256".to_string()),
        ..Default::default()
    };
    let connections = options.connections();
    let last = connections.len() - 1;
    for (index, urls) in connections.into_iter().enumerate() {
        let connecting = endpoint
            .connect_with(config.clone(), server, &server_name)
            .context("quinn refuses to connect")?;
        let resuming = index > 0;
        let (conn, early) = if resuming && options.zero_rtt {
            match connecting.into_0rtt() {
                Ok((conn, accepted)) => (conn, Some(accepted)),
                Err(connecting) => (connecting.await.context("handshake failed")?, None),
            }
        } else {
            (connecting.await.context("handshake failed")?, None)
        };
        report.handshakes += 1;
        let files = fetch_all(&endpoint, &conn, urls, options, &mut report).await;
        if let Some(accepted) = early {
            report.zero_rtt_accepted = Some(accepted.await);
        }
        conn.close(0u32.into(), b"done");
        report.files.extend(files?);
        if index < last {
            // The next connection resumes: the session tickets came with
            // the first connection's data, long before its end.
            endpoint.wait_idle().await;
        }
    }
    let _ = tokio::time::timeout(CLOSE_GRACE, endpoint.wait_idle()).await;
    Ok(report)
}

async fn fetch_all(
    endpoint: &quinn::Endpoint,
    conn: &quinn::Connection,
    urls: &[Url],
    options: &ClientOptions,
    report: &mut ClientReport,
) -> anyhow::Result<Vec<FileReport>> {
    let (first_data, mut first_data_seen) = tokio::sync::watch::channel(false);
    let first_data = Arc::new(first_data);
    let mut tasks = tokio::task::JoinSet::new();
    // Requests go out from this task, back to back, so that a resumed
    // connection sends them before its handshake ends, in 0-RTT; each
    // response is read by a task of its own. Past the stream limit,
    // `open_bi` waits for responses to end.
    for (order, url) in urls.iter().enumerate() {
        let path = url.path.clone();
        // The finished send half may go: quinn still delivers what it holds.
        let recv = match request(conn, &path).await {
            Ok(recv) => recv,
            Err(e) => return Err(e.context(format!("/{path}"))),
        };
        let dir = options.output_dir.clone();
        let first_data = first_data.clone();
        tasks.spawn(async move {
            let result = fetch(recv, &path, &dir, &first_data).await;
            (order, result.with_context(|| format!("/{path}")))
        });
    }
    let mut acted = false;
    let mut files = vec![None; urls.len()];
    let mut error = None;
    loop {
        tokio::select! {
            changed = first_data_seen.changed(), if !acted => {
                acted = true;
                if changed.is_ok() {
                    act_once_data_flows(endpoint, conn, options, report)?;
                }
            }
            joined = tasks.join_next() => {
                let Some(joined) = joined else { break };
                let (order, result) = joined.context("a download task died")?;
                match result {
                    Ok(file) => files[order] = Some(file),
                    Err(e) => {
                        error.get_or_insert(e);
                    }
                }
            }
        }
    }
    if let Some(error) = error {
        return Err(error);
    }
    Ok(files.into_iter().flatten().collect())
}

/// The key update and the migration, once the first response bytes are in
/// (1-RTT keys confirmed, a transfer under way).
fn act_once_data_flows(
    endpoint: &quinn::Endpoint,
    conn: &quinn::Connection,
    options: &ClientOptions,
    report: &mut ClientReport,
) -> anyhow::Result<()> {
    if options.key_update && report.key_updates == 0 {
        conn.force_key_update();
        report.key_updates += 1;
    }
    if options.migrate && !report.migrated {
        let local = endpoint
            .local_addr()
            .context("the endpoint has no address")?;
        let socket = std::net::UdpSocket::bind(any_address(local))
            .context("cannot bind a socket to migrate to")?;
        endpoint
            .rebind(socket)
            .context("cannot move to the new socket")?;
        report.migrated = true;
    }
    Ok(())
}

async fn request(conn: &quinn::Connection, path: &str) -> anyhow::Result<quinn::RecvStream> {
    let (mut send, recv) = conn.open_bi().await.context("cannot open a stream")?;
    send.write_all(&super::request(path))
        .await
        .context("cannot send the request")?;
    send.finish().context("cannot send the request")?;
    Ok(recv)
}

async fn fetch(
    mut recv: quinn::RecvStream,
    path: &str,
    dir: &Path,
    first_data: &tokio::sync::watch::Sender<bool>,
) -> anyhow::Result<FileReport> {
    let mut download = Download::create(dir, path)?;
    while let Some(chunk) = recv
        .read_chunk(usize::MAX, true)
        .await
        .context("response stream failed")?
    {
        first_data.send_if_modified(|seen| !std::mem::replace(seen, true));
        download.write(&chunk.bytes)?;
    }
    Ok(download.finish())
}
