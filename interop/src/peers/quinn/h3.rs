//! HTTP/3 over quinn: hyperium's `h3` on h3's own quinn backend
//! (`h3-quinn`), running the same server and client code as sift's
//! (`peers::h3`), so that `sift-h3-client` has another stack's server to
//! fetch from and `sift-h3-server` another stack's client
//! (`quinn-h3-server`, `quinn-h3-client`). quinn's default transport
//! settings, as a user of h3-quinn gets them.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;

use super::config;
use crate::peers::cert::Certificate;
use crate::peers::h3::{self, Report, ALPN};
use crate::peers::net::any_address;
use crate::peers::url::Url;

/// Serves the files under `root` on `listen` with `certificate` until the
/// endpoint closes; says `listening on ADDR` on stderr once bound. Must be
/// called inside a tokio runtime.
pub async fn serve(
    listen: std::net::SocketAddr,
    root: &Path,
    certificate: &Certificate,
) -> anyhow::Result<()> {
    let root = root
        .canonicalize()
        .with_context(|| format!("--root {}", root.display()))?;
    let server = config::server(certificate, ALPN, config::defaults()?)?;
    let endpoint = config::endpoint(listen, Some(server))?;
    eprintln!("listening on {}", endpoint.local_addr()?);
    let root = Arc::new(root);
    while let Some(incoming) = endpoint.accept().await {
        let root = Arc::clone(&root);
        tokio::spawn(async move {
            let remote = incoming.remote_address();
            let conn = match incoming.await {
                Ok(conn) => conn,
                Err(error) => {
                    eprintln!("{remote}: handshake failed: {error}");
                    return;
                }
            };
            match h3::connection(h3_quinn::Connection::new(conn), root).await {
                Ok(()) => eprintln!("{remote}: closed"),
                Err(error) => eprintln!("{remote}: failed: {error}"),
            }
        });
    }
    Ok(())
}

/// Fetches every URL (one server's) into `output_dir` over one
/// connection, trusting the roots in `ca` or, without, any certificate.
/// Must be called inside a tokio runtime.
pub async fn fetch(
    urls: &[Url],
    server_name: &str,
    ca: Option<&Path>,
    output_dir: &Path,
) -> anyhow::Result<Report> {
    let server = urls.first().context("no URL given")?.address;
    let endpoint = config::endpoint(any_address(server), None)?;
    let tls = config::ClientTls {
        ca,
        ..Default::default()
    };
    let client = config::client(&tls, ALPN, config::defaults()?)?;
    let conn = endpoint
        .connect_with(client, server, server_name)
        .context("quinn connect")?
        .await
        .context("handshake failed")?;
    let fetched = h3::over(h3_quinn::Connection::new(conn.clone()), urls, output_dir).await;
    // h3 closed the connection when it was done; see the close out so
    // that the server hears it.
    drop(conn);
    endpoint.wait_idle().await;
    Ok(Report {
        stack: "quinn".into(),
        version: "QUIC v1".into(),
        alpn: String::from_utf8_lossy(ALPN).into_owned(),
        files: fetched?,
    })
}
