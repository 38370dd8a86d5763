//! The quinn server: serves the files under a root directory, one `GET` per
//! bidirectional stream, to any number of clients, and answers `STATS` with
//! its sender counters for that connection (the quiche server's protocol,
//! [`crate::baseline::protocol`]).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use tokio::io::AsyncReadExt;

use super::config;
use super::trace::CcLog;
use crate::baseline::protocol::{self, Request, SenderCounters, MAX_REQUEST_BYTES};
use crate::baseline::tls::Certificate;

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
    /// The largest UDP payload either way (`config::transport`).
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
        let cert = Certificate::generate(&options.cert_dir)?;
        let server = config::server(
            &cert.cert_pem,
            &cert.key_pem,
            &options.cc,
            options.max_datagram,
        )?;
        let endpoint = config::endpoint(config::socket(options.listen)?, Some(server))?;
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
    let request = match recv.read_to_end(MAX_REQUEST_BYTES).await {
        Ok(bytes) => Request::parse(&bytes),
        Err(quinn::ReadToEndError::TooLong) => Err(protocol::ProtocolError::RequestTooLong),
        Err(e) => return Err(e.into()),
    };
    match request {
        Err(e) => {
            send.write_all(&protocol::err_header(&e.to_string()))
                .await?
        }
        Ok(Request::Stats) => {
            let body = serde_json::to_vec(&counters(conn))?;
            send.write_all(&protocol::ok_header(body.len() as u64))
                .await?;
            send.write_all(&body).await?;
        }
        Ok(Request::Get(path)) => match open(root, &path).await {
            Err(reason) => send.write_all(&protocol::err_header(&reason)).await?,
            Ok((mut file, size)) => {
                println!("client={} GET {path} ({size} bytes)", conn.remote_address());
                send.write_all(&protocol::ok_header(size)).await?;
                let mut chunk = vec![0u8; READ_CHUNK];
                loop {
                    // A read error ends the body early; the client sees
                    // fewer bytes than announced and fails.
                    let read = file.read(&mut chunk).await.unwrap_or(0);
                    if read == 0 {
                        break;
                    }
                    send.write_all(&chunk[..read]).await?;
                }
            }
        },
    }
    send.finish()?;
    // Keep the stream until the peer has everything (or goes away).
    let _ = send.stopped().await;
    Ok(())
}

async fn open(root: &std::path::Path, path: &str) -> Result<(tokio::fs::File, u64), String> {
    let full = protocol::resolve(root, path).map_err(|e| e.to_string())?;
    let file = tokio::fs::File::open(&full)
        .await
        .map_err(|e| format!("{path}: {e}"))?;
    let metadata = file.metadata().await.map_err(|e| format!("{path}: {e}"))?;
    if !metadata.is_file() {
        return Err(format!("{path} is not a file"));
    }
    Ok((file, metadata.len()))
}

/// The sender's counters in the baseline's shape. quinn counts neither
/// retransmitted packets nor PTOs: `retransmitted_packets` carries its lost
/// packets (whose frames it resends), `ptos` is 0.
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
