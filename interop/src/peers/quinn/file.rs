//! The file protocol over quinn: the bulk server and client the
//! comparison measures beside quiche's (`quinn-server`, `quinn-client`),
//! driven by the runner exactly like them.
//!
//! quinn as a user gets it otherwise: its pacer, GSO/GRO where the kernel
//! has them, a multi-threaded tokio runtime. quinn counts no
//! retransmitted packets and no PTOs: the counters' `retransmitted_packets`
//! is quinn's `PathStats::lost_packets` (quinn resends the frames of what
//! it declares lost), its `ptos` is 0.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use tokio::io::AsyncReadExt;

use super::config;
use super::trace::CcLog;
use crate::flow::FlowReport;
use crate::peers::cert::Certificate;
use crate::peers::file::{self, Answer, ProtocolError, Request, Response, SenderCounters};
use crate::peers::files::{Download, ONE_FILE_BUFFER};
use crate::peers::net::any_address;
use crate::peers::settings::CLOSE_GRACE;

/// How much of a file is read per write to the stream.
const READ_CHUNK: usize = 256 * 1024;

/// What the server is asked to do (the quiche server's options).
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// Address to listen on.
    pub listen: SocketAddr,
    /// Directory whose files are served.
    pub root: PathBuf,
    /// quinn congestion controller for the data the server sends.
    pub cc: String,
    /// Where the self-signed certificate and key are written.
    pub cert_dir: PathBuf,
    /// The largest UDP payload either way (`config::like_for_like`).
    pub max_datagram: usize,
    /// Where to write every connection's sender samples, if anywhere
    /// ([`super::trace`]).
    pub cc_log: Option<PathBuf>,
}

/// A bound server, ready to run.
pub struct Server {
    endpoint: quinn::Endpoint,
    root: Arc<PathBuf>,
    cc_log: Option<CcLog>,
}

impl Server {
    /// Makes the certificate, binds the socket and starts the endpoint.
    /// Must be called inside a tokio runtime.
    pub fn bind(options: &ServerOptions) -> anyhow::Result<Self> {
        if !options.root.is_dir() {
            anyhow::bail!("--root {} is not a directory", options.root.display());
        }
        let certificate = Certificate::generate(&options.cert_dir)?;
        let transport = config::like_for_like(&options.cc, options.max_datagram)?;
        let server = config::server(&certificate, file::ALPN, transport)?;
        let endpoint = config::endpoint(options.listen, Some(server))?;
        let cc_log = options.cc_log.as_deref().map(CcLog::create).transpose()?;
        Ok(Self {
            endpoint,
            root: Arc::new(options.root.clone()),
            cc_log,
        })
    }

    /// The address bound (the port when 0 was asked for).
    pub fn local_addr(&self) -> anyhow::Result<SocketAddr> {
        self.endpoint
            .local_addr()
            .context("the endpoint has no address")
    }

    /// Serves until the endpoint is closed.
    pub async fn run(self) {
        while let Some(incoming) = self.endpoint.accept().await {
            let root = self.root.clone();
            let cc_log = self.cc_log.clone();
            tokio::spawn(async move {
                // A handshake that fails ends only that connection.
                if let Ok(conn) = incoming.await {
                    if let Some(log) = cc_log {
                        tokio::spawn(log.record(conn.clone()));
                    }
                    serve(conn, root).await;
                }
            });
        }
    }
}

async fn serve(conn: quinn::Connection, root: Arc<PathBuf>) {
    let peer = conn.remote_address();
    while let Ok((send, recv)) = conn.accept_bi().await {
        let conn = conn.clone();
        let root = root.clone();
        tokio::spawn(async move {
            // A stream the peer resets ends only that stream.
            let _ = answer(&conn, send, recv, &root).await;
        });
    }
    let stats = conn.stats();
    println!(
        "client={peer} closed: sent {} packets, lost {}",
        stats.path.sent_packets, stats.path.lost_packets
    );
}

async fn answer(
    conn: &quinn::Connection,
    mut send: quinn::SendStream,
    mut recv: quinn::RecvStream,
    root: &std::path::Path,
) -> anyhow::Result<()> {
    let request = match recv.read_to_end(file::MAX_REQUEST_BYTES).await {
        Ok(bytes) => Request::parse(&bytes),
        Err(quinn::ReadToEndError::TooLong) => Err(ProtocolError::RequestTooLong),
        Err(e) => return Err(e.into()),
    };
    let answer = Answer::to(request, root, || counters(conn));
    send.write_all(&answer.head()).await?;
    if let Answer::File { path, file, size } = answer {
        println!("client={} GET {path} ({size} bytes)", conn.remote_address());
        let mut file = tokio::fs::File::from_std(file);
        let mut chunk = vec![0u8; READ_CHUNK];
        loop {
            // A read error ends the body early; the client sees fewer
            // bytes than announced and fails.
            let read = file.read(&mut chunk).await.unwrap_or(0);
            if read == 0 {
                break;
            }
            send.write_all(&chunk[..read]).await?;
        }
    }
    send.finish()?;
    // Keep the stream until the peer has everything (or goes away).
    let _ = send.stopped().await;
    Ok(())
}

/// The sender's counters in the file protocol's shape. quinn counts
/// neither retransmitted packets nor PTOs: `retransmitted_packets` carries
/// its lost packets (whose frames it resends), `ptos` is 0.
fn counters(conn: &quinn::Connection) -> SenderCounters {
    let path = conn.stats().path;
    SenderCounters {
        retransmitted_packets: path.lost_packets,
        lost_packets: path.lost_packets,
        ptos: 0,
        srtt_us: path.rtt.as_micros() as u64,
        cwnd: path.cwnd,
    }
}

/// What the client is asked to do.
#[derive(Clone, Debug)]
pub struct GetOptions {
    /// Server address.
    pub server: SocketAddr,
    /// Name sent in SNI and checked against the certificate.
    pub server_name: String,
    /// Path of the file on the server.
    pub path: String,
    /// Where to write it.
    pub output: PathBuf,
    /// quinn controller for what this client sends (requests, ACKs).
    pub cc: String,
    /// The server's certificate to trust (PEM); `None` verifies nothing.
    pub ca: Option<PathBuf>,
    /// The largest UDP payload either way (`config::like_for_like`).
    pub max_datagram: usize,
}

/// Downloads `options.path` into `options.output` and returns the report
/// (the server's counters, this client's timing and hash). Must be called
/// inside a tokio runtime.
pub async fn get(options: &GetOptions) -> anyhow::Result<FlowReport> {
    let endpoint = config::endpoint(any_address(options.server), None)?;
    let tls = config::ClientTls {
        ca: options.ca.as_deref(),
        ..Default::default()
    };
    let transport = config::like_for_like(&options.cc, options.max_datagram)?;
    let client = config::client(&tls, file::ALPN, transport)?;
    let conn = endpoint
        .connect_with(client, options.server, &options.server_name)
        .context("quinn connect")?
        .await
        .context("handshake failed")?;
    let mut download = Download::create(options.output.clone(), &options.path, ONE_FILE_BUFFER)?;
    let (mut send, mut recv) = conn.open_bi().await.context("cannot open a stream")?;
    download.requested_now();
    send.write_all(&Request::Get(options.path.clone()).encode())
        .await
        .context("cannot send the request")?;
    send.finish().context("cannot send the request")?;
    let mut response = Response::default();
    while let Some(chunk) = recv
        .read_chunk(usize::MAX, true)
        .await
        .context("download stream failed")?
    {
        response.take(&chunk.bytes, &mut download)?;
    }
    response.end(&download)?;
    let finished = download.finish()?;
    let counters = stats(&conn).await?;
    conn.close(0u32.into(), b"done");
    // The close reaches the server, or the grace runs out.
    let _ = tokio::time::timeout(CLOSE_GRACE, endpoint.wait_idle()).await;
    Ok(file::flow_report(&finished, &counters, &options.cc))
}

async fn stats(conn: &quinn::Connection) -> anyhow::Result<SenderCounters> {
    let (mut send, mut recv) = conn
        .open_bi()
        .await
        .context("cannot ask for the server's counters")?;
    send.write_all(&Request::Stats.encode())
        .await
        .context("cannot ask for the server's counters")?;
    send.finish()
        .context("cannot ask for the server's counters")?;
    let response = recv
        .read_to_end(file::MAX_REQUEST_BYTES)
        .await
        .context("counters stream failed")?;
    file::parse_counters(&response)
}
