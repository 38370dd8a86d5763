//! RFC 9000 §3–§4 requirements the other stream tests leave implicit,
//! each named in `docs/requirements.toml`: what a sender may no longer
//! send once a stream is reset or fully acknowledged, which credit frames
//! are ignored, and flow control on the half of a stream still open.

use std::time::Instant;

use super::*;

/// A sender whose stream data and FIN were all acknowledged ("Data Recvd",
/// RFC 9000 §3.3) sends nothing more on that stream: a late loss report
/// resends nothing, a reset queues no RESET_STREAM, and no credit report
/// goes out for it.
#[test]
fn a_stream_whose_data_is_all_acknowledged_sends_nothing_more() {
    let (mut client, mut server) = default_pair();
    let id = client.open(Dir::Bi).unwrap();
    client.write(id, &pattern(3000), true).unwrap();
    let chunks = deliver_chunks(&mut client, &mut server);
    assert!(
        client.is_finished_sending(id),
        "every byte and the FIN acked"
    );
    // A loss report that arrives after the acknowledgements.
    for chunk in &chunks {
        client.on_chunk_lost(chunk);
    }
    assert!(!client.has_stream_data(), "nothing resent from Data Recvd");
    assert_eq!(client.poll_stream_chunk(CHUNK), None);
    // The stream still exists (the server's half is open), yet a reset of
    // ours now has nothing to abandon.
    client.reset(id, 5).unwrap();
    assert_eq!(drain_control(&mut client), Vec::new());
    // Credit the peer sends now changes nothing either.
    client.on_max_stream_data(id, 1 << 20).unwrap();
    assert_eq!(client.poll_stream_chunk(CHUNK), None);
    assert_eq!(drain_control(&mut client), Vec::new());
}

/// After RESET_STREAM ("Reset Sent" and "Reset Recvd", RFC 9000 §3.3) no
/// STREAM or STREAM_DATA_BLOCKED frame goes out for the stream, whatever
/// credit or loss reports arrive, and nothing is sent at or past the final
/// size the reset named (§4.5).
#[test]
fn a_reset_stream_sends_neither_stream_data_nor_stream_data_blocked() {
    let server_config = StreamConfig {
        initial_max_stream_data: 1000,
        ..StreamConfig::default()
    };
    let (mut client, _server) = pair(StreamConfig::default(), server_config);
    let id = client.open(Dir::Uni).unwrap();
    client.write(id, &pattern(5000), false).unwrap();
    let sent: Vec<StreamChunk> = std::iter::from_fn(|| client.poll_stream_chunk(CHUNK)).collect();
    assert_eq!(sent.iter().map(|c| c.len).sum::<usize>(), 1000);
    // Blocked at the peer's limit: the report is queued, not yet sent.
    client.reset(id, 3).unwrap();
    let frames = drain_control(&mut client);
    assert_eq!(
        frames,
        vec![ControlFrame::ResetStream {
            id,
            error_code: 3,
            final_size: 1000
        }],
        "the queued STREAM_DATA_BLOCKED was dropped with the data"
    );
    // Reset Sent: neither credit nor a loss report brings data back.
    client.on_max_stream_data(id, 1 << 20).unwrap();
    for chunk in &sent {
        client.on_chunk_lost(chunk);
    }
    assert!(!client.has_stream_data());
    assert_eq!(client.poll_stream_chunk(CHUNK), None);
    assert!(drain_control(&mut client).is_empty());
    // Reset Recvd: the same.
    client.on_control_acked(&frames[0]);
    assert!(client.is_finished_sending(id));
    client.on_max_stream_data(id, 1 << 21).ok();
    assert_eq!(client.poll_stream_chunk(CHUNK), None);
    assert!(drain_control(&mut client).is_empty());
    // The final size is fixed: nothing more may be written.
    assert!(client.write(id, b"late", false).is_err());
}

/// MAX_DATA and MAX_STREAM_DATA that do not raise a limit are ignored
/// (RFC 9000 §4.1): a stale, reordered update cannot take credit back.
#[test]
fn smaller_max_data_and_max_stream_data_are_ignored() {
    let server_config = StreamConfig {
        initial_max_data: 4000,
        initial_max_stream_data: 3000,
        ..StreamConfig::default()
    };
    let (mut client, _server) = pair(StreamConfig::default(), server_config);
    let id = client.open(Dir::Uni).unwrap();
    client.write(id, &pattern(10_000), false).unwrap();
    // Late frames naming smaller limits than the transport parameters.
    client.on_max_data(1000);
    client.on_max_stream_data(id, 500).unwrap();
    let sent: usize = std::iter::from_fn(|| client.poll_stream_chunk(CHUNK))
        .map(|c| c.len)
        .sum();
    assert_eq!(sent, 3000, "the stream's own limit of 3000 still holds");
    client.on_max_stream_data(id, 6000).unwrap();
    client.on_max_stream_data(id, 3500).unwrap();
    let more: usize = std::iter::from_fn(|| client.poll_stream_chunk(CHUNK))
        .map(|c| c.len)
        .sum();
    assert_eq!(more, 1000, "then the connection's 4000 in all");
}

/// MAX_STREAMS that does not raise the limit is ignored (RFC 9000 §4.6).
#[test]
fn a_smaller_max_streams_is_ignored() {
    let server_config = StreamConfig {
        max_streams_uni: 3,
        ..StreamConfig::default()
    };
    let (mut client, _server) = pair(StreamConfig::default(), server_config);
    client.on_max_streams(Dir::Uni, 1).unwrap();
    let opened: Vec<StreamId> = std::iter::from_fn(|| client.open(Dir::Uni).ok()).collect();
    assert_eq!(opened, vec![2, 6, 10], "the limit of 3 stands");
    client.on_max_streams(Dir::Uni, 5).unwrap();
    client.on_max_streams(Dir::Uni, 4).unwrap();
    assert_eq!(client.open(Dir::Uni), Ok(14));
    assert_eq!(client.open(Dir::Uni), Ok(18));
    assert_eq!(client.open(Dir::Uni), Err(StreamError::StreamsExhausted));
}

/// A bidirectional stream whose sending half we reset keeps flow control
/// on its receiving half until that half ends (RFC 9000 §4.4): data
/// within our window is taken, data beyond it is a FLOW_CONTROL_ERROR.
#[test]
fn a_reset_sending_half_leaves_the_receiving_half_flow_controlled() {
    let client_config = StreamConfig {
        initial_max_stream_data: 1000,
        ..StreamConfig::default()
    };
    let (mut client, mut server) = pair(client_config, StreamConfig::default());
    let id = client.open(Dir::Bi).unwrap();
    client.write(id, b"request", false).unwrap();
    deliver_chunks(&mut client, &mut server);
    client.reset(id, 1).unwrap();
    let reset = drain_control(&mut client);
    apply_control(&mut server, reset[0]).unwrap();
    client.on_control_acked(&reset[0]);
    assert!(client.is_finished_sending(id), "our half is done");
    // The server's half still runs under the client's window of 1000.
    client
        .on_stream_frame(id, 0, &pattern(1000), false)
        .unwrap();
    let error = client
        .on_stream_frame(id, 1000, &pattern(1), false)
        .unwrap_err();
    assert_eq!(error.code, TransportErrorCode::FlowControlError);
    let (read, fin) = read_ready(&mut client, id, Instant::now());
    assert_eq!((read.len(), fin), (1000, false));
}
