//! HTTP/3 on sift: hyperium's `h3`, unchanged, over sift through the
//! `sift-h3` crate, running the same server and client code as quinn's
//! (`peers::h3`): `sift-h3-server` serves the files under a root (GET
//! only; 404 outside it), QUIC v1 to any QUIC client and sift/1 to a sift
//! client that offers it; `sift-h3-client` fetches every URL of one call
//! on one connection, one request stream each, at once.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use sift::tokio::Endpoint;

use super::Trust;
use crate::peers::cert::Certificate;
use crate::peers::h3::{self, Report, ALPN};
use crate::peers::net::any_address;
use crate::peers::url::Url;

/// Serves the files under `root` on `listen`, presenting `certificate`
/// or, without one, a fresh self-signed certificate whose fingerprint it
/// prints; says `listening on ADDR` on stderr once bound, and each
/// connection's version as it comes and goes. Must be called inside a
/// tokio runtime.
pub async fn serve(
    listen: SocketAddr,
    root: &Path,
    certificate: Option<&Certificate>,
    versions: Vec<u32>,
) -> anyhow::Result<()> {
    let root = root
        .canonicalize()
        .with_context(|| format!("--root {}", root.display()))?;
    anyhow::ensure!(
        root.is_dir(),
        "--root {} is not a directory",
        root.display()
    );
    let identity = super::identity(certificate)?;
    if certificate.is_none() {
        eprintln!("self-signed certificate {}", identity.fingerprint());
    }
    let config = super::server(ALPN, identity, versions)?;
    let endpoint = Endpoint::server(listen, config).context("cannot listen")?;
    eprintln!("listening on {}", endpoint.local_addr());
    let root = Arc::new(root);
    while let Some(conn) = endpoint.accept().await {
        let root = Arc::clone(&root);
        tokio::spawn(async move {
            let remote = conn.remote_address();
            let version = conn.stats().version;
            eprintln!("{remote}: connected ({version})");
            match h3::connection(sift_h3::Connection::new(conn.clone()), root).await {
                Ok(()) => eprintln!("{remote}: closed ({version})"),
                Err(error) => eprintln!("{remote}: failed ({version}): {error}"),
            }
        });
    }
    Ok(())
}

/// Fetches every URL (one server's) into `output_dir` over one
/// connection, trusting by `trust` for the name `server_name`. Must be
/// called inside a tokio runtime.
pub async fn fetch(
    urls: &[Url],
    server_name: &str,
    trust: &Trust,
    versions: Vec<u32>,
    output_dir: &Path,
) -> anyhow::Result<Report> {
    let server = urls.first().context("no URL given")?.address;
    let config = super::client(ALPN, trust, server_name, versions)?;
    let endpoint =
        Endpoint::client(any_address(server), config).context("cannot open a UDP socket")?;
    let conn = endpoint
        .connect(server, server_name)
        .await
        .with_context(|| format!("cannot connect to {server}"))?;
    let version = conn.stats().version;
    let fetched = h3::over(sift_h3::Connection::new(conn.clone()), urls, output_dir).await;
    // h3 closed the connection (H3_NO_ERROR) when it was done; see the
    // close out so that the server hears it.
    drop(conn);
    endpoint.wait_idle().await;
    Ok(Report {
        stack: "sift".into(),
        version,
        alpn: String::from_utf8_lossy(ALPN).into_owned(),
        files: fetched?,
    })
}
