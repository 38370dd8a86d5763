//! Behaviour of [`Streams`] as a whole, driven the way the connection
//! drives it: two `Streams`, one per endpoint, passing chunks and control
//! frames across by hand.

mod flow_control;
mod limits;
mod memory;
mod reset;
mod retransmission;
mod rfc9000;
mod rfc9000_frames;
mod round_robin;
mod transfer;

use std::time::{Duration, Instant};

use super::*;
use crate::Side;

/// A round trip used where auto-tuning needs one.
pub(super) const SRTT: Duration = Duration::from_millis(100);

/// Largest chunk in these tests: about one packet's worth.
pub(super) const CHUNK: usize = 1200;

/// A client and a server that have exchanged limits.
pub(super) fn pair(client: StreamConfig, server: StreamConfig) -> (Streams, Streams) {
    let mut client_streams = Streams::new(Side::Client, client.clone());
    let mut server_streams = Streams::new(Side::Server, server.clone());
    client_streams.set_peer_limits(&server.transport_limits());
    server_streams.set_peer_limits(&client.transport_limits());
    (client_streams, server_streams)
}

/// A client and a server with default limits.
pub(super) fn default_pair() -> (Streams, Streams) {
    pair(StreamConfig::default(), StreamConfig::default())
}

/// Applies a control frame from the peer.
pub(super) fn apply_control(to: &mut Streams, frame: ControlFrame) -> Result<(), TransportError> {
    match frame {
        ControlFrame::MaxData(max) => {
            to.on_max_data(max);
            Ok(())
        }
        ControlFrame::MaxStreamData { id, max } => to.on_max_stream_data(id, max),
        ControlFrame::MaxStreams { dir, max } => to.on_max_streams(dir, max),
        ControlFrame::ResetStream {
            id,
            error_code,
            final_size,
        } => to.on_reset_stream(id, error_code, final_size),
        ControlFrame::StopSending { id, error_code } => to.on_stop_sending(id, error_code),
        ControlFrame::DataBlocked(limit) => {
            to.on_data_blocked(limit);
            Ok(())
        }
        // No round trip is known here, so no report looks like the answer
        // to a late update.
        ControlFrame::StreamDataBlocked { id, limit } => {
            to.on_stream_data_blocked(id, limit, Instant::now(), Duration::ZERO)
        }
        ControlFrame::StreamsBlocked { dir, limit } => to.on_streams_blocked(dir, limit),
    }
}

/// Every pending control frame of `streams`.
pub(super) fn drain_control(streams: &mut Streams) -> Vec<ControlFrame> {
    std::iter::from_fn(|| streams.poll_control()).collect()
}

/// Moves every control frame from `from` to `to` and acknowledges it.
pub(super) fn exchange_control(from: &mut Streams, to: &mut Streams) {
    for frame in drain_control(from) {
        apply_control(to, frame).expect("valid control frame");
        from.on_control_acked(&frame);
    }
}

/// Polls one chunk of at most `max_len` bytes with its data.
pub(super) fn poll_chunk(streams: &mut Streams, max_len: usize) -> Option<(StreamChunk, Vec<u8>)> {
    let chunk = streams.poll_stream_chunk(max_len)?;
    let mut data = Vec::new();
    assert!(streams.chunk_data(&chunk, &mut data));
    assert_eq!(data.len(), chunk.len);
    Some((chunk, data))
}

/// Delivers every chunk `from` can send to `to` and acknowledges it.
/// Returns the chunks delivered.
pub(super) fn deliver_chunks(from: &mut Streams, to: &mut Streams) -> Vec<StreamChunk> {
    let mut delivered = Vec::new();
    while let Some((chunk, data)) = poll_chunk(from, CHUNK) {
        to.on_stream_frame(chunk.id, chunk.offset, &data, chunk.fin)
            .expect("valid STREAM frame");
        from.on_chunk_acked(&chunk);
        delivered.push(chunk);
    }
    delivered
}

/// Reads stream `id` until nothing more is ready: the bytes and whether
/// the FIN was reached.
pub(super) fn read_ready(streams: &mut Streams, id: StreamId, now: Instant) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match streams.read(id, &mut buf, now, SRTT, Duration::ZERO) {
            Ok((n, fin)) => {
                out.extend_from_slice(&buf[..n]);
                if fin {
                    return (out, true);
                }
            }
            Err(StreamError::Blocked) => return (out, false),
            Err(other) => panic!("unexpected read error on stream {id}: {other}"),
        }
    }
}

/// A byte string that is not all one value, so misplaced bytes show.
pub(super) fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
}
