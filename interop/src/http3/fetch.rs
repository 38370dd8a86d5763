//! An HTTP/3 client over any transport h3 runs on: every path of one call
//! requested at once on one connection, one request stream each, each
//! body written to its file as it arrives and hashed; the call fails
//! unless every file came whole (status 200, as many bytes as
//! `content-length` says, the stream's end).

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use bytes::{Buf, Bytes};
use h3::client::SendRequest;
use h3::quic::{Connection, OpenStreams};
use serde::{Deserialize, Serialize};

use super::target::{self, Targets};
use crate::baseline::client::Sink;

/// One file fetched whole.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fetched {
    /// The URL's path.
    pub path: String,
    /// The body's length.
    pub bytes: u64,
    /// SHA-256 of the body, lowercase hex.
    pub sha256: String,
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
    /// The files, in the order the URLs were given.
    pub files: Vec<Fetched>,
}

/// Runs h3's client on `conn`, fetches every path of `targets` into
/// `output_dir`, and closes the HTTP/3 connection (H3_NO_ERROR) once all
/// are done. The QUIC connection is then closed; its endpoint should be
/// left to see the close out.
pub async fn over<C>(conn: C, targets: &Targets, output_dir: &Path) -> anyhow::Result<Vec<Fetched>>
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
    let fetched = all(requests, targets, output_dir).await;
    // Dropping the last request sender closed the connection (H3_NO_ERROR):
    // the driver ends too. A failure of its own matters only if the
    // downloads did not already fail.
    let driven = driving.await.context("the HTTP/3 driver task failed")?;
    let fetched = fetched?;
    driven.context("the HTTP/3 connection failed")?;
    Ok(fetched)
}

/// Fetches every path of `targets` at once over `requests` (one stream
/// each), in the order given, and drops `requests`.
pub async fn all<T>(
    requests: SendRequest<T, Bytes>,
    targets: &Targets,
    output_dir: &Path,
) -> anyhow::Result<Vec<Fetched>>
where
    T: OpenStreams<Bytes> + Clone + Send + 'static,
    T::BidiStream: Send + 'static,
{
    let mut tasks = tokio::task::JoinSet::new();
    for (index, path) in targets.paths.iter().enumerate() {
        let output = target::output_path(output_dir, path)?;
        let uri = format!("https://{}{}", targets.authority, path);
        let path = path.clone();
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
    let mut fetched = Vec::with_capacity(targets.paths.len());
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
    output: &PathBuf,
) -> anyhow::Result<Fetched>
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
    if response.status() != http::StatusCode::OK {
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
    if let Some(parent) = output.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    let file =
        File::create(output).with_context(|| format!("cannot create {}", output.display()))?;
    let mut sink = Sink::new(file);
    let mut bytes = 0u64;
    while let Some(mut data) = stream.recv_data().await.context("the body broke off")? {
        while data.has_remaining() {
            let chunk = data.chunk();
            let len = chunk.len();
            sink.write(chunk)?;
            bytes += len as u64;
            data.advance(len);
        }
    }
    if announced.is_some_and(|announced| announced != bytes) {
        bail!(
            "the server announced {} bytes and sent {bytes}",
            announced.unwrap_or_default()
        );
    }
    let sha256 = sink.finish(output)?;
    Ok(Fetched {
        path: path.to_string(),
        bytes,
        sha256,
    })
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
