//! The quinn client: downloads one file with `GET`, hashing it as it is
//! written, then asks for the server's sender counters with `STATS` and
//! closes. Timed as the quiche client and `sift-client`: from sending the
//! request to the verified file.

use std::fs::File;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use super::config;
use crate::baseline::client::Sink;
use crate::baseline::protocol::{self, Request, SenderCounters, MAX_REQUEST_BYTES};
use crate::flow::{goodput_bps, FlowReport, QUIC_V1};

/// How long a finished client waits for the server to see its close.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

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
    /// The server's certificate to trust (PEM).
    pub ca: PathBuf,
    /// The largest UDP payload either way (`config::transport`).
    pub max_datagram: usize,
}

/// Downloads `options.path` into `options.output` and returns the report
/// (the server's counters, this client's timing and hash). Must be called
/// inside a tokio runtime.
pub async fn get(options: &GetOptions) -> anyhow::Result<FlowReport> {
    let bind: SocketAddr = if options.server.is_ipv4() {
        "0.0.0.0:0".parse()?
    } else {
        "[::]:0".parse()?
    };
    let endpoint = config::endpoint(config::socket(bind)?, None)?;
    let client = config::client(&options.ca, &options.cc, options.max_datagram)?;
    let conn = endpoint
        .connect_with(client, options.server, &options.server_name)
        .context("quinn connect")?
        .await
        .context("handshake failed")?;
    let file = File::create(&options.output)
        .with_context(|| format!("cannot create {}", options.output.display()))?;
    let mut sink = Sink::new(file);
    let (mut send, mut recv) = conn.open_bi().await.context("cannot open a stream")?;
    let started = Instant::now();
    send.write_all(&Request::Get(options.path.clone()).encode())
        .await
        .context("cannot send the request")?;
    send.finish().context("cannot send the request")?;
    let mut header = Vec::new();
    let mut expected = None;
    let mut received = 0u64;
    while let Some(chunk) = recv
        .read_chunk(usize::MAX, true)
        .await
        .context("download stream failed")?
    {
        let mut body = &chunk.bytes[..];
        if expected.is_none() {
            header.extend_from_slice(body);
            body = &[];
            if let Some((size, header_len)) = protocol::parse_response_header(&header)? {
                expected = Some(size);
                let rest = header.split_off(header_len);
                sink.write(&rest)?;
                received += rest.len() as u64;
            }
        }
        sink.write(body)?;
        received += body.len() as u64;
    }
    let Some(size) = expected else {
        bail!("server ended the response before its header");
    };
    if received != size {
        bail!("server announced {size} bytes and sent {received}");
    }
    let sha256 = sink.finish(&options.output)?;
    let elapsed = started.elapsed();
    let counters = stats(&conn).await?;
    conn.close(0u32.into(), b"done");
    // The close reaches the server, or the grace runs out.
    let _ = tokio::time::timeout(CLOSE_GRACE, endpoint.wait_idle()).await;
    let completion_s = elapsed.as_secs_f64();
    Ok(FlowReport {
        id: 0,
        path: options.path.clone(),
        cc: options.cc.clone(),
        corruption_notices: false,
        bytes: received,
        completion_s,
        goodput_bps: goodput_bps(received, completion_s),
        retransmitted_packets: counters.retransmitted_packets,
        ptos: counters.ptos,
        corruption_notices_received: 0,
        srtt_us: counters.srtt_us,
        cwnd: counters.cwnd,
        lost_packets: Some(counters.lost_packets),
        sha256,
        version: Some(QUIC_V1.to_string()),
    })
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
        .read_to_end(MAX_REQUEST_BYTES)
        .await
        .context("counters stream failed")?;
    let Some((_, header_len)) = protocol::parse_response_header(&response)? else {
        bail!("server's counters came without a header");
    };
    serde_json::from_slice(&response[header_len..]).context("server's counters are not JSON")
}
