//! An HTTP/3 file server over any transport h3 runs on: each request on
//! its own task, `GET` of a file under the root answered with its bytes
//! (200, with `content-length`), 404 for a path outside the root or that
//! is not a file, 405 for any other method.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use h3::quic::{BidiStream, Connection, OpenStreams};
use h3::server::RequestStream;
use http::{Method, Request, Response, StatusCode};
use tokio::io::AsyncReadExt;

use crate::baseline::protocol;

/// The most a response's DATA frame carries: one file read.
const CHUNK: usize = 64 * 1024;

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
    match protocol::resolve(root, path) {
        Ok(file) if file.is_file() => Answer::File(file),
        _ => Answer::Status(StatusCode::NOT_FOUND),
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
