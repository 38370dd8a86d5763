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

use anyhow::{bail, Context};
use tokio::io::AsyncReadExt;

use super::config;
use crate::peers::cert::Certificate;
use crate::peers::files::{self, Download, FileReport, UNBUFFERED};
use crate::peers::hq::{self, ClientOptions, ClientReport, ALPN};
use crate::peers::net::{self, any_address};
use crate::peers::settings::CLOSE_GRACE;
use crate::peers::url::Url;

/// How much of a file is read per write to a stream.
const READ_CHUNK: usize = 64 * 1024;

/// What `quinn-hq server` is asked to do.
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// Directory whose files are served.
    pub root: PathBuf,
    /// The certificate chain and key presented.
    pub certificate: Certificate,
    /// Send a Retry to every client whose address is not yet validated.
    pub retry: bool,
}

/// quinn's defaults with the stream limit hq-interop servers grant.
fn transport() -> anyhow::Result<quinn::TransportConfig> {
    let mut transport = config::defaults()?;
    transport.max_concurrent_bidi_streams(quinn::VarInt::from_u64(hq::MAX_CONCURRENT_STREAMS)?);
    Ok(transport)
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
        let config = config::server(&options.certificate, ALPN, transport()?)?;
        // The socket asks for sift's receive buffer (`peers::net`): quinn's
        // own bind keeps the kernel default, which overflows under a
        // thousand connections' handshakes and acknowledgements.
        let endpoint = config::endpoint(options.listen, Some(config))
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
    let request = recv.read_to_end(hq::MAX_REQUEST_BYTES).await?;
    let file = match hq::parse_request(&request) {
        Ok(path) => files::file_under(root, &path).map(|full| (path, full)),
        Err(_) => None,
    };
    let Some((path, full)) = file else {
        // HTTP/0.9 has no status: a refused request is a reset stream.
        send.reset(quinn::VarInt::from_u32(hq::NOT_FOUND_ERROR))?;
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

/// The client's quinn configuration for `options` (trust, cipher suites,
/// early data, key log). Both connections of a resuming client share it,
/// and with it rustls' session cache.
pub fn client_config(options: &ClientOptions) -> anyhow::Result<quinn::ClientConfig> {
    let tls = config::ClientTls {
        ca: options.ca.as_deref(),
        chacha20_only: options.chacha20,
        early_data: options.zero_rtt,
    };
    config::client(&tls, ALPN, transport()?)
}

/// Runs the client (inside a tokio runtime): every URL downloaded into
/// `options.output_dir`, or an error naming the first file that failed.
pub async fn run_client(options: &ClientOptions) -> anyhow::Result<ClientReport> {
    let first = options.urls.first().context("no URL given")?;
    let server = first.address;
    let server_name = first.server_name();
    let endpoint = config::endpoint(any_address(server), None).context("cannot bind a socket")?;
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
        let socket =
            net::bind_udp(any_address(local)).context("cannot bind a socket to migrate to")?;
        endpoint
            .rebind(socket)
            .context("cannot move to the new socket")?;
        report.migrated = true;
    }
    Ok(())
}

async fn request(conn: &quinn::Connection, path: &str) -> anyhow::Result<quinn::RecvStream> {
    let (mut send, recv) = conn.open_bi().await.context("cannot open a stream")?;
    send.write_all(&hq::request(path))
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
    let mut download = Download::under(dir, path, UNBUFFERED)?;
    while let Some(chunk) = recv
        .read_chunk(usize::MAX, true)
        .await
        .context("response stream failed")?
    {
        first_data.send_if_modified(|seen| !std::mem::replace(seen, true));
        download.write(&chunk.bytes)?;
    }
    download.finish()
}
