//! The file protocol over sift's blocking API (`sift-peer`), so that
//! quiche and sift talk to each other over QUIC v1: `sift-peer serve`
//! answers `quiche-client`, `sift-peer get` fetches from `quiche-server`.
//! The wire interop proof of the QUIC v1 issue; the interop matrix
//! (hq-interop, HTTP/3) builds on it.

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::Context;
use sift::blocking::{connect, BlockingConnection, Listener};

use crate::peers::cert::{Certificate, LOCALHOST};
use crate::peers::file::{self, Answer, Request, Response, SenderCounters};
use crate::peers::files::{Download, ONE_FILE_BUFFER};
use crate::peers::url::{Url, QUIC};

use super::Trust;

/// Serves the files under `root` on `listen`, presenting a fresh
/// self-signed certificate written into `cert_dir` (ECDSA P-256, which
/// every TLS stack verifies) for clients to trust; says `listening on
/// ADDR` on stdout once bound. Returns only on an error.
pub fn serve(
    listen: SocketAddr,
    root: PathBuf,
    cert_dir: &Path,
    versions: Vec<u32>,
) -> anyhow::Result<()> {
    let certificate = Certificate::generate(cert_dir)?;
    let identity = super::identity(Some(&certificate))?;
    let config = super::server(file::ALPN, identity, versions)?;
    let listener = Listener::bind(listen, config).context("bind")?;
    println!("listening on {}", listener.local_addr());
    loop {
        let connection = listener.accept().context("accept")?;
        let root = root.clone();
        std::thread::spawn(move || serve_connection(&connection, &root));
    }
}

fn serve_connection(connection: &BlockingConnection, root: &Path) {
    while let Ok(mut stream) = connection.accept_bi() {
        let mut request = Vec::new();
        if stream.read_to_end(&mut request).is_err() {
            break;
        }
        let answer = Answer::to(Request::parse(&request), root, || {
            let stats = connection.stats();
            SenderCounters {
                retransmitted_packets: stats.retransmitted_packets,
                lost_packets: stats.packets_lost,
                ptos: stats.ptos,
                srtt_us: stats.srtt_us,
                cwnd: stats.cwnd,
            }
        });
        let mut written = stream.write_all(&answer.head());
        if let Answer::File { mut file, .. } = answer {
            written = written.and_then(|()| std::io::copy(&mut file, &mut stream).map(|_| ()));
        }
        let _ = written
            .map_err(std::io::Error::other)
            .and_then(|()| stream.finish_and_wait().map_err(std::io::Error::other));
    }
    let stats = connection.stats();
    println!(
        "client={} closed: version {}, sent {} packets, lost {}",
        connection.remote_addr(),
        stats.version,
        stats.packets_sent,
        stats.packets_lost
    );
}

/// Downloads `quic://HOST:PORT/PATH` into `output`, trusting the roots in
/// `ca` for the name `localhost`; returns one JSON object: bytes, sha256,
/// version, whether corruption notices were negotiated, completion_s.
pub fn get(
    url: &str,
    output: &Path,
    ca: &Path,
    versions: Vec<u32>,
) -> anyhow::Result<serde_json::Value> {
    let url = Url::parse(url, QUIC)?;
    let trust = Trust::Ca(ca.to_path_buf());
    let config = super::client(file::ALPN, &trust, LOCALHOST, versions)?;
    let mut download = Download::create(output.to_path_buf(), &url.path, ONE_FILE_BUFFER)?;
    let connection = connect(url.address, config).context("connect")?;
    let mut stream = connection.open_bi()?;
    stream.write_all(&Request::Get(url.path.clone()).encode())?;
    stream.finish()?;
    let mut response = Response::default();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let read = stream.read(&mut buf)?;
        if read == 0 {
            break;
        }
        response.take(&buf[..read], &mut download)?;
    }
    response.end(&download)?;
    let finished = download.finish()?;
    let stats = connection.stats();
    connection.close(0, "done");
    Ok(serde_json::json!({
        "bytes": finished.bytes,
        "sha256": finished.sha256,
        "version": stats.version,
        "corruption_notices": stats.corruption_notices_negotiated,
        "completion_s": finished.elapsed_us as f64 / 1e6,
    }))
}
