//! The server side of PERF, the iperf3-style meter: a source of generated
//! bytes for a download, a sink for an upload. Nothing touches the disk.

use std::time::Instant;

use super::{drain, send, send_response, Failure, MAX_PERF_DURATION};
use crate::transfer::buffers::CHUNK_LEN;
use crate::transfer::duplex::AsyncDuplex;
use crate::transfer::perf::perf_pattern;
use crate::transfer::request::{PerfDirection, PerfLimit};
use crate::transfer::response::Response;

/// PERF: source or sink data for the meter.
pub(super) async fn perf<S: AsyncDuplex>(
    stream: &mut S,
    direction: PerfDirection,
    limit: PerfLimit,
) -> Result<u64, Failure> {
    send_response(stream, &Response::ok(0, None)).await?;
    match direction {
        PerfDirection::Download => {
            let buf = perf_pattern();
            let started = Instant::now();
            let mut sent = 0u64;
            loop {
                let chunk = match limit {
                    PerfLimit::Duration(d) if started.elapsed() >= d.min(MAX_PERF_DURATION) => {
                        break
                    }
                    PerfLimit::Bytes(n) if sent >= n => break,
                    PerfLimit::Bytes(n) => (n - sent).min(CHUNK_LEN as u64) as usize,
                    PerfLimit::Duration(_) => CHUNK_LEN,
                };
                send(stream, &buf[..chunk]).await?;
                sent += chunk as u64;
            }
            stream
                .finish()
                .map_err(|e| Failure::Broken(e.to_string()))?;
            Ok(sent)
        }
        PerfDirection::Upload => {
            let received = drain(stream, u64::MAX).await?;
            send_response(stream, &Response::ok(received, None)).await?;
            stream
                .finish()
                .map_err(|e| Failure::Broken(e.to_string()))?;
            Ok(received)
        }
    }
}
