//! HTTP/3 file serving and fetching over any QUIC stack that implements
//! hyperium's `h3` traits (`h3::quic`): sift through `sift-h3`, quinn
//! through `h3-quinn`. The same server and client code runs on both, so a
//! difference between them is the transport's. quiche's peer speaks its
//! own HTTP/3 (`quiche::h3`) and shares only the [`Report`].
//!
//! - [`connection`]: GET of files under a root (200 with
//!   `content-length`; 404 outside it or for what is not a file; 405 for
//!   other methods), each request on a task of its own.
//! - [`over`]: every URL of one call on one connection, concurrently,
//!   each written whole or the call fails.
//!
//! Must not: speak HTTP/3 itself (framing, QPACK and settings are the
//! libraries').

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context};
use bytes::{Buf, Bytes};
use h3::client::SendRequest;
use h3::quic::{BidiStream, Connection, OpenStreams};
use h3::server::RequestStream;
use http::{Method, Request, Response, StatusCode};
use serde::{Deserialize, Serialize};
use tokio::io::AsyncReadExt;

use super::files::{self, Download, FileReport};
use super::url::Url;

/// The ALPN protocol of HTTP/3 (RFC 9114 §3.1).
pub use sift_h3::ALPN;

/// The most a response's DATA frame carries: one file read.
const CHUNK: usize = 64 * 1024;

/// A client's write buffer per file: one DATA frame's worth, so that 150
/// files at once hold 10 MB, not 150 MB.
const BODY_BUFFER: usize = CHUNK;

/// What the server makes of a request.
#[derive(Debug, PartialEq, Eq)]
pub enum Answer {
    /// Send this file.
    File(PathBuf),
    /// Answer with this status and no body.
    Status(StatusCode),
}

/// The answer to `method` on `path` under `root`.
pub fn answer(root: &Path, method: &Method, path: &str) -> Answer {
    if method != Method::GET {
        return Answer::Status(StatusCode::METHOD_NOT_ALLOWED);
    }
    match files::file_under(root, path) {
        Some(file) => Answer::File(file),
        None => Answer::Status(StatusCode::NOT_FOUND),
    }
}

/// Serves `root` on one connection until the client closes it. Each
/// request runs on a task of its own, so a large file does not hold the
/// others back. A clean close by the client (H3_NO_ERROR) is `Ok`.
pub async fn connection<C>(conn: C, root: Arc<PathBuf>) -> Result<(), h3::error::ConnectionError>
where
    C: Connection<Bytes> + Send + 'static,
    <C as OpenStreams<Bytes>>::BidiStream: BidiStream<Bytes> + Send + 'static,
    <<C as OpenStreams<Bytes>>::BidiStream as BidiStream<Bytes>>::SendStream: Send,
    <<C as OpenStreams<Bytes>>::BidiStream as BidiStream<Bytes>>::RecvStream: Send,
{
    let mut h3 = h3::server::Connection::<C, Bytes>::new(conn).await?;
    loop {
        match h3.accept().await {
            Ok(Some(resolver)) => {
                let root = Arc::clone(&root);
                tokio::spawn(async move {
                    let (request, stream) = match resolver.resolve_request().await {
                        Ok(resolved) => resolved,
                        Err(error) => {
                            eprintln!("a request could not be read: {error}");
                            return;
                        }
                    };
                    if let Err(error) = respond(&root, request, stream).await {
                        eprintln!("a response failed: {error}");
                    }
                });
            }
            Ok(None) => return Ok(()),
            Err(error) if error.is_h3_no_error() => return Ok(()),
            Err(error) => return Err(error),
        }
    }
}

/// Answers one request.
async fn respond<S>(
    root: &Path,
    request: Request<()>,
    mut stream: RequestStream<S, Bytes>,
) -> anyhow::Result<()>
where
    S: BidiStream<Bytes>,
{
    let path = request.uri().path();
    let opened = match answer(root, request.method(), path) {
        // A file that went away since the check is not found either.
        Answer::File(file) => open(&file).await.ok_or(StatusCode::NOT_FOUND),
        Answer::Status(status) => Err(status),
    };
    let (mut file, length) = match opened {
        Ok(opened) => opened,
        Err(status) => {
            stream
                .send_response(Response::builder().status(status).body(())?)
                .await?;
            stream.finish().await?;
            return Ok(());
        }
    };
    let response = Response::builder()
        .status(StatusCode::OK)
        .header(http::header::CONTENT_LENGTH, length)
        .body(())?;
    stream.send_response(response).await?;
    let mut sent = 0u64;
    loop {
        let mut chunk = vec![0u8; CHUNK];
        let read = file.read(&mut chunk).await?;
        if read == 0 {
            break;
        }
        chunk.truncate(read);
        sent += read as u64;
        stream.send_data(Bytes::from(chunk)).await?;
    }
    if sent != length {
        // The file changed while it was sent: the client must not take a
        // short or long body for the file.
        stream.stop_stream(h3::error::Code::H3_INTERNAL_ERROR);
        anyhow::bail!("{path}: {length} bytes announced, {sent} read");
    }
    stream.finish().await?;
    Ok(())
}

/// The file at `path` and its length, if it can be read.
async fn open(path: &Path) -> Option<(tokio::fs::File, u64)> {
    let file = tokio::fs::File::open(path).await.ok()?;
    let length = file.metadata().await.ok()?.len();
    Some((file, length))
}

/// What every HTTP/3 client here prints with `--json`: one object a call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// The QUIC stack underneath: `sift`, `quinn` or `quiche`.
    pub stack: String,
    /// The QUIC version the connection ran ("QUIC v1", "sift/1").
    pub version: String,
    /// The ALPN protocol agreed (`h3`).
    pub alpn: String,
    /// The files, in the order the URLs were given, each path with its
    /// leading `/`.
    pub files: Vec<FileReport>,
}

/// Runs h3's client on `conn`, fetches every URL of `urls` (one server's)
/// into `output_dir`, and closes the HTTP/3 connection (H3_NO_ERROR) once
/// all are done. The QUIC connection is then closed; its endpoint should
/// be left to see the close out.
pub async fn over<C>(conn: C, urls: &[Url], output_dir: &Path) -> anyhow::Result<Vec<FileReport>>
where
    C: Connection<Bytes>,
    <C as Connection<Bytes>>::OpenStreams: Clone + Send + 'static,
    <C as OpenStreams<Bytes>>::BidiStream: Send + 'static,
    <C as OpenStreams<Bytes>>::SendStream: Send,
    <C as Connection<Bytes>>::RecvStream: Send,
    C: Send + 'static,
{
    let (mut driver, requests) = h3::client::new(conn)
        .await
        .context("the HTTP/3 connection could not be set up")?;
    let driving = tokio::spawn(async move {
        let closed = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
        if closed.is_h3_no_error() {
            Ok(())
        } else {
            Err(closed)
        }
    });
    let fetched = all(requests, urls, output_dir).await;
    // Dropping the last request sender closed the connection (H3_NO_ERROR):
    // the driver ends too. A failure of its own matters only if the
    // downloads did not already fail.
    let driven = driving.await.context("the HTTP/3 driver task failed")?;
    let fetched = fetched?;
    driven.context("the HTTP/3 connection failed")?;
    Ok(fetched)
}

/// Fetches every URL at once over `requests` (one stream each), in the
/// order given, and drops `requests`.
pub async fn all<T>(
    requests: SendRequest<T, Bytes>,
    urls: &[Url],
    output_dir: &Path,
) -> anyhow::Result<Vec<FileReport>>
where
    T: OpenStreams<Bytes> + Clone + Send + 'static,
    T::BidiStream: Send + 'static,
{
    let mut tasks = tokio::task::JoinSet::new();
    for (index, url) in urls.iter().enumerate() {
        let path = format!("/{}", url.path);
        let output = files::output_path(output_dir, &path)?;
        let uri = format!("https://{}{path}", url.authority);
        let mut requests = requests.clone();
        tasks.spawn(async move {
            let fetched = one(&mut requests, &uri, &path, &output).await;
            if fetched.is_err() {
                // No partial file is left for a reader to take as the file.
                let _ = std::fs::remove_file(&output);
            }
            (index, fetched.with_context(|| path.clone()))
        });
    }
    drop(requests);
    let mut fetched = Vec::with_capacity(urls.len());
    while let Some(joined) = tasks.join_next().await {
        let (index, result) = joined.context("a download task failed")?;
        fetched.push((index, result?));
    }
    fetched.sort_by_key(|(index, _)| *index);
    Ok(fetched.into_iter().map(|(_, fetched)| fetched).collect())
}

/// Fetches one path into `output`.
async fn one<T>(
    requests: &mut SendRequest<T, Bytes>,
    uri: &str,
    path: &str,
    output: &Path,
) -> anyhow::Result<FileReport>
where
    T: OpenStreams<Bytes>,
{
    let request = http::Request::get(uri).body(())?;
    let mut stream = requests
        .send_request(request)
        .await
        .context("cannot send the request")?;
    stream.finish().await.context("cannot end the request")?;
    let response = stream.recv_response().await.context("no response came")?;
    if response.status() != StatusCode::OK {
        bail!("the server answered {}", response.status());
    }
    let announced = match response.headers().get(http::header::CONTENT_LENGTH) {
        Some(value) => Some(
            value
                .to_str()
                .ok()
                .and_then(|value| value.parse::<u64>().ok())
                .context("content-length is not a number")?,
        ),
        None => None,
    };
    let mut download = Download::create(output.to_path_buf(), path, BODY_BUFFER)?;
    while let Some(mut data) = stream.recv_data().await.context("the body broke off")? {
        while data.has_remaining() {
            let chunk = data.chunk();
            let len = chunk.len();
            download.write(chunk)?;
            data.advance(len);
        }
    }
    if let Some(announced) = announced.filter(|&a| a != download.bytes()) {
        bail!(
            "the server announced {announced} bytes and sent {}",
            download.bytes()
        );
    }
    download.finish()
}

impl Report {
    /// Prints the report on stdout: one JSON object, or a line a file.
    pub fn print(&self, json: bool) -> anyhow::Result<()> {
        if json {
            println!("{}", serde_json::to_string(self)?);
        } else {
            for file in &self.files {
                println!(
                    "{}  {} bytes  sha256 {}",
                    file.path, file.bytes, file.sha256
                );
            }
            eprintln!(
                "{} files over {} ({}, {})",
                self.files.len(),
                self.stack,
                self.version,
                self.alpn
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_get_of_a_file_under_the_root_is_served() {
        let root = std::env::temp_dir().join(format!("sift-h3-serve-{}", std::process::id()));
        std::fs::create_dir_all(root.join("dir")).unwrap();
        std::fs::write(root.join("f.bin"), b"x").unwrap();
        let served = answer(&root, &Method::GET, "/f.bin");
        assert_eq!(
            served,
            Answer::File(root.join("f.bin").canonicalize().unwrap())
        );
        let not_found = Answer::Status(StatusCode::NOT_FOUND);
        assert_eq!(answer(&root, &Method::GET, "/missing"), not_found);
        assert_eq!(answer(&root, &Method::GET, "/dir"), not_found);
        assert_eq!(answer(&root, &Method::GET, "/../f.bin"), not_found);
        assert_eq!(
            answer(&root, &Method::POST, "/f.bin"),
            Answer::Status(StatusCode::METHOD_NOT_ALLOWED)
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
