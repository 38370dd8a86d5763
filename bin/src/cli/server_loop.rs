//! The server's threads: one per connection accepting its streams, one per
//! stream serving it. A client's failure ends its own threads only.

use std::net::SocketAddr;
use std::sync::Arc;

use sift::blocking::{BlockingConnection, Listener, SiftIoError};

use super::format;
use crate::transfer::{FileServer, SenderReport, ServedConnection, TransferRecord};

/// Where transfer lines go (stdout for `sift-server`).
pub type LineSink = Arc<dyn Fn(&str) + Send + Sync>;

/// The one line per transfer the server prints, `key=value` fields:
/// client, op, path, bytes, time, goodput, result (and why, on failure).
pub fn transfer_line(client: SocketAddr, record: &TransferRecord) -> String {
    let mut line = format!(
        "client={client} op={} path={:?} bytes={} time={:.3}s goodput={} result={}",
        record.verb,
        record.path,
        record.bytes,
        record.elapsed.as_secs_f64(),
        format::rate(record.goodput_bps()).replace(' ', ""),
        record.result().replace(' ', "-"),
    );
    if !record.detail.is_empty() {
        line.push_str(&format!(" reason={:?}", record.detail));
    }
    line
}

impl ServedConnection for BlockingConnection {
    fn sender_report(&self) -> Option<SenderReport> {
        Some(SenderReport::from_stats(&self.stats()))
    }

    fn use_controller(&self, cc: sift_cc::CcConfig) -> Result<(), String> {
        self.set_congestion_control(cc).map_err(|e| e.to_string())
    }

    fn client_key(&self) -> Option<sift::crypto::Fingerprint> {
        self.peer_certificate_fingerprint()
    }
}

/// Accepts clients until the listener fails, serving each on its own
/// threads.
pub fn serve(listener: &Listener, files: Arc<FileServer>, lines: LineSink) -> anyhow::Result<()> {
    loop {
        match listener.accept() {
            Ok(connection) => {
                let files = Arc::clone(&files);
                let lines = Arc::clone(&lines);
                let spawned = std::thread::Builder::new()
                    .name(format!("conn {}", connection.remote_addr()))
                    .spawn(move || serve_connection(connection, files, lines));
                if let Err(e) = spawned {
                    tracing::warn!(error = %e, "could not start a connection thread");
                }
            }
            Err(e @ SiftIoError::EndpointStopped { .. }) => {
                return Err(anyhow::Error::new(e).context("the server socket stopped"))
            }
            Err(e) => tracing::debug!(error = %e, "a client did not connect"),
        }
    }
}

/// Serves every stream the client opens until the connection closes.
fn serve_connection(connection: BlockingConnection, files: Arc<FileServer>, lines: LineSink) {
    let client = connection.remote_addr();
    tracing::info!(%client, "client connected");
    let mut workers = Vec::new();
    loop {
        let mut stream = match connection.accept_bi() {
            Ok(stream) => stream,
            Err(e) => {
                tracing::info!(%client, reason = %e, "client gone");
                break;
            }
        };
        let files = Arc::clone(&files);
        let lines = Arc::clone(&lines);
        let stats_source = connection.clone();
        let worker = std::thread::Builder::new()
            .name(format!("stream {client}"))
            .spawn(move || {
                let record = files.serve(&mut stream, &stats_source);
                lines(&transfer_line(client, &record));
            });
        match worker {
            Ok(handle) => workers.push(handle),
            Err(e) => tracing::warn!(%client, error = %e, "could not start a stream thread"),
        }
        workers.retain(|w| !w.is_finished());
    }
    for worker in workers {
        let _ = worker.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transfer::Status;
    use std::time::Duration;

    #[test]
    fn a_transfer_line_names_client_op_path_bytes_time_goodput_result() {
        let record = TransferRecord {
            verb: "GET",
            path: "dir/f.bin".into(),
            bytes: 5_000_000,
            elapsed: Duration::from_secs(2),
            status: Some(Status::Ok),
            detail: String::new(),
        };
        // 5 000 000 B · 8 / 2 s = 20 Mb/s
        assert_eq!(
            transfer_line("127.0.0.1:5000".parse().unwrap(), &record),
            "client=127.0.0.1:5000 op=GET path=\"dir/f.bin\" bytes=5000000 time=2.000s goodput=20.00Mb/s result=ok"
        );
        let refused = TransferRecord {
            status: Some(Status::RefusedPath),
            detail: "`..` is not allowed".into(),
            ..record
        };
        assert!(transfer_line("127.0.0.1:5000".parse().unwrap(), &refused)
            .ends_with("result=refused-path reason=\"`..` is not allowed\""));
    }
}
