//! A client's operations on a sift connection: connect with a clear
//! "no answer" error, then download or upload over one stream and report.

use std::path::Path;
use std::time::Instant;

use sift::blocking::{self, BlockingConnection, SiftIoError};

use super::interrupt;
use super::progress::Progress;
use super::report::{FlowReport, Transfer};
use super::trust::ClientTrust;
use super::url::SiftUrl;
use crate::transfer::client;
use crate::transfer::part_file::download_part_path;
use crate::transfer::SenderReport;

/// Application close code for a client that is done.
pub const CLOSE_DONE: u64 = 0;

/// Connects to the URL's server, waiting at most the handshake timeout,
/// and checks its certificate by `trust` (TLS). A refused certificate is
/// one line saying why; a first contact is remembered.
pub fn connect(
    url: &SiftUrl,
    config: sift::Config,
    trust: &ClientTrust,
) -> anyhow::Result<BlockingConnection> {
    let remote = url.resolve()?;
    let tls = config.protection == sift::conn::Protection::Tls;
    let config = if tls { trust.apply(config) } else { config };
    let connection = blocking::connect(remote, config).map_err(|e| match e {
        _ if trust.refusal().is_some() => {
            anyhow::anyhow!("{}", trust.refusal().unwrap_or_default())
        }
        SiftIoError::Timeout { after, .. } => anyhow::anyhow!(
            "no answer from {} within {}s",
            url.authority(),
            after.as_secs().max(1)
        ),
        other => anyhow::Error::new(other).context(format!("connecting to {}", url.authority())),
    })?;
    if tls {
        trust.on_connected()?;
    }
    Ok(connection)
}

/// Downloads `remote_path` to `dest`, resuming a `.sift-part` if asked, and
/// asking the server to send it under `controller` if one is given.
pub fn download(
    connection: &BlockingConnection,
    remote_path: &str,
    dest: &Path,
    resume: bool,
    controller: Option<&str>,
    quiet: bool,
) -> anyhow::Result<FlowReport> {
    let partial = download_part_path(dest);
    interrupt::announce_on_interrupt(format!(
        "interrupted: partial download kept in {} — run again with --resume",
        partial.display()
    ));
    let mut stream = connection.open_bi()?;
    let mut progress = Progress::new(remote_path, quiet);
    let started = Instant::now();
    let outcome = client::get(
        &mut stream,
        remote_path,
        dest,
        resume,
        controller,
        &mut |done, total| progress.update(done, total),
    );
    progress.finish();
    let outcome = outcome?;
    let elapsed = started.elapsed();
    let sender = outcome
        .sender
        .clone()
        .unwrap_or_else(|| SenderReport::from_stats(&connection.stats()));
    Ok(FlowReport::new(
        Transfer {
            operation: "get",
            path: remote_path,
            local_path: &dest.display().to_string(),
            bytes: outcome.bytes,
            resumed_from: outcome.resumed_from,
            elapsed,
            sha256: outcome.sha256.to_string(),
        },
        &sender,
    ))
}

/// Uploads a prepared local file (`client::LocalUpload::prepare`, done
/// before connecting) to `remote_path`.
pub fn upload(
    connection: &BlockingConnection,
    source: &Path,
    prepared: client::LocalUpload,
    remote_path: &str,
    quiet: bool,
) -> anyhow::Result<FlowReport> {
    let mut stream = connection.open_bi()?;
    let mut progress = Progress::new(remote_path, quiet);
    let started = Instant::now();
    let outcome = client::put(&mut stream, prepared, remote_path, &mut |done, total| {
        progress.update(done, total)
    });
    progress.finish();
    let outcome = outcome?;
    let elapsed = started.elapsed();
    Ok(FlowReport::new(
        Transfer {
            operation: "put",
            path: remote_path,
            local_path: &source.display().to_string(),
            bytes: outcome.bytes,
            resumed_from: 0,
            elapsed,
            sha256: outcome.sha256.to_string(),
        },
        &SenderReport::from_stats(&connection.stats()),
    ))
}
