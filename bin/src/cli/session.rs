//! A client's operations on a sift connection: connect with a clear
//! "no answer" or "server busy" error (or wait for a busy server), then
//! download or upload over one stream and report.

use std::path::Path;
use std::time::{Duration, Instant};

use sift::blocking::{self, BlockingConnection, SiftIoError, SiftStream};
use sift::conn::{codes, CloseReason};
use sift::crypto::tls::DEFAULT_ALPN;
use sift::endpoint::is_busy_refusal;

use super::interrupt;
use super::progress::Progress;
use super::report::{FlowReport, Transfer};
use super::stream::Reads;
use super::trust::ClientTrust;
use super::url::SiftUrl;
use crate::transfer::client;
use crate::transfer::part_file::DownloadPart;
use crate::transfer::SenderReport;

/// Application close code for a client that is done.
pub const CLOSE_DONE: u64 = 0;

/// How long a client waits without hearing from the server before it asks
/// (a keep-alive PING): a downloading client only acknowledges, so without
/// it a client whose server died or restarted would wait out the whole
/// idle timeout. A restarted server answers the PING with a stateless
/// reset, so the client knows within about this long.
pub const KEEP_ALIVE: Duration = Duration::from_millis(500);
/// First wait before trying a busy server again; doubled per try.
const BUSY_FIRST_BACKOFF: Duration = Duration::from_millis(500);
/// Longest wait between tries of a busy server.
const BUSY_MAX_BACKOFF: Duration = Duration::from_secs(8);

/// Connects to the URL's server, waiting at most the handshake timeout,
/// and checks its certificate by `trust` (TLS). A refused certificate is
/// one line saying why; a first contact is remembered. A full server's
/// refusal ("server busy: N clients") is retried with exponential backoff
/// for up to `wait` (each retry said on stderr), or is the error at once.
pub fn connect(
    url: &SiftUrl,
    mut config: sift::Config,
    trust: &ClientTrust,
    wait: Option<Duration>,
) -> anyhow::Result<BlockingConnection> {
    config.keep_alive_interval.get_or_insert(KEEP_ALIVE);
    let give_up = wait.map(|wait| Instant::now() + wait);
    let mut backoff = BUSY_FIRST_BACKOFF;
    loop {
        match connect_once(url, config.clone(), trust) {
            Err(Refusal::Busy(reason)) => {
                let retry_at = Instant::now() + backoff;
                match give_up {
                    Some(give_up) if retry_at <= give_up => {
                        eprintln!(
                            "sift-client: {reason}; trying again in {:.1} s",
                            backoff.as_secs_f64()
                        );
                        std::thread::sleep(backoff);
                        backoff = (backoff * 2).min(BUSY_MAX_BACKOFF);
                    }
                    Some(_) => anyhow::bail!("{reason} (still busy after waiting)"),
                    None => anyhow::bail!("{reason} (try again later, or pass --wait)"),
                }
            }
            Err(Refusal::Other(error)) => return Err(error),
            Ok(connection) => return Ok(connection),
        }
    }
}

/// Why one connection attempt failed.
enum Refusal {
    /// The server is full: its reason phrase.
    Busy(String),
    Other(anyhow::Error),
}

fn connect_once(
    url: &SiftUrl,
    config: sift::Config,
    trust: &ClientTrust,
) -> Result<BlockingConnection, Refusal> {
    let remote = url.resolve().map_err(|e| Refusal::Other(e.into()))?;
    let tls = config.protection == sift::conn::Protection::Tls;
    let config = if tls { trust.apply(config) } else { config };
    // A resuming client returns at once when its request can go in 0-RTT.
    let connect = if config.tls.tickets.is_some() {
        blocking::connect_early
    } else {
        blocking::connect
    };
    let connection = connect(remote, config).map_err(|e| match e {
        SiftIoError::Closed(CloseReason::Peer {
            application: false,
            code: codes::CONNECTION_REFUSED,
            reason,
        }) if is_busy_refusal(&reason) => Refusal::Busy(reason),
        _ if trust.refusal().is_some() => {
            Refusal::Other(anyhow::anyhow!("{}", trust.refusal().unwrap_or_default()))
        }
        SiftIoError::Timeout { after, .. } => Refusal::Other(anyhow::anyhow!(
            "no answer from {} within {}s",
            url.authority(),
            after.as_secs().max(1)
        )),
        other => Refusal::Other(
            anyhow::Error::new(other).context(format!("connecting to {}", url.authority())),
        ),
    })?;
    if tls {
        trust.on_connected().map_err(Refusal::Other)?;
    }
    Ok(connection)
}

/// The one line for a connection the server reset (a stateless reset: it
/// restarted, or otherwise lost the connection), if that is how it ended.
pub fn restarted_server(connection: &BlockingConnection) -> Option<&'static str> {
    matches!(connection.close_reason(), Some(CloseReason::StatelessReset))
        .then_some("server restarted: it no longer knows this connection (stateless reset)")
}

/// After a request on `stream` failed: whether the server rejected the
/// 0-RTT it went in, which discarded the stream unread (RFC 9001 §4.6.2),
/// so that the request is to be sent again on a new stream. An error if
/// the protocol the server chose is not `alpn`, the one the request
/// assumed.
pub fn redo_after_rejected_zero_rtt(
    connection: &BlockingConnection,
    stream: &SiftStream,
    alpn: &[u8],
) -> anyhow::Result<bool> {
    if !stream.is_zero_rtt_rejected() {
        return Ok(false);
    }
    match connection.alpn_protocol() {
        Some(chosen) if chosen == alpn => Ok(true),
        chosen => anyhow::bail!(
            "the server rejected 0-RTT and chose protocol {}, not {}: the request was not sent again",
            chosen.map_or_else(
                || "none".to_string(),
                |chosen| String::from_utf8_lossy(&chosen).into_owned()
            ),
            String::from_utf8_lossy(alpn)
        ),
    }
}

/// Downloads `remote_path` to `dest`, resuming a `.sift-part` if asked, and
/// asking the server to send it under `controller` if one is given;
/// `reads` says how its bytes leave the stream (in place when it is alone
/// on the connection).
pub fn download(
    connection: &BlockingConnection,
    remote_path: &str,
    dest: &Path,
    resume: bool,
    controller: Option<&str>,
    quiet: bool,
    reads: Reads,
) -> anyhow::Result<FlowReport> {
    let part = DownloadPart::new(dest);
    interrupt::announce_on_interrupt(format!("interrupted: {}", part.interrupted_note()));
    // A download is safe to replay: it may leave in 0-RTT.
    let mut stream = connection.open_bi_replay_safe()?;
    let mut progress = Progress::new(remote_path, quiet);
    let started = Instant::now();
    let mut first_byte = None;
    let mut on_progress = |done, total| {
        // The first call: the server's answer arrived.
        first_byte.get_or_insert_with(Instant::now);
        progress.update(done, total)
    };
    let mut get = |stream: &mut SiftStream| {
        reads.on(stream, |stream| {
            client::get(
                stream,
                remote_path,
                &part,
                resume,
                controller,
                &mut on_progress,
            )
        })
    };
    let mut outcome = get(&mut stream);
    if outcome.is_err() && redo_after_rejected_zero_rtt(connection, &stream, DEFAULT_ALPN)? {
        stream = connection.open_bi()?;
        outcome = get(&mut stream);
    }
    progress.finish();
    let outcome = outcome.map_err(|error| match restarted_server(connection) {
        Some(line) => anyhow::anyhow!("{line}; {}", part.interrupted_note()),
        None => error.into(),
    })?;
    let elapsed = outcome.verified_at.saturating_duration_since(started);
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
    )
    .with_session(&connection.stats())
    .with_first_byte(first_byte))
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
    let outcome = outcome.map_err(|error| match restarted_server(connection) {
        Some(line) => anyhow::anyhow!("{line}; run the upload again"),
        None => error.into(),
    })?;
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
    )
    .with_session(&connection.stats()))
}
