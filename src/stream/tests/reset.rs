//! Abandoning streams: RESET_STREAM from either side, STOP_SENDING and the
//! final-size rules of RFC 9000 §4.5.

use std::time::{Duration, Instant};

use super::*;

#[test]
fn reset_final_size_is_the_highest_offset_sent() {
    let (mut client, _server) = default_pair();
    let id = client.open(Dir::Uni).unwrap();
    client.write(id, &pattern(5000), false).unwrap();
    let first = client.poll_stream_chunk(1200).unwrap();
    client.poll_stream_chunk(1200).unwrap();
    client.reset(id, 7).unwrap();
    // Two chunks of 1200 went out: final size 2400, whatever was written.
    assert_eq!(
        drain_control(&mut client),
        vec![ControlFrame::ResetStream {
            id,
            error_code: 7,
            final_size: 2400
        }]
    );
    assert_eq!(client.poll_stream_chunk(1200), None, "unsent data dropped");
    client.on_chunk_lost(&first);
    assert!(
        !client.has_stream_data(),
        "lost data of a reset stream is not resent"
    );
    assert_eq!(
        client.write(id, b"more", false),
        Err(StreamError::AlreadyFinished(id))
    );
}

#[test]
fn lost_reset_stream_is_resent_until_acked() {
    let (mut client, _server) = default_pair();
    let id = client.open(Dir::Uni).unwrap();
    client.reset(id, 3).unwrap();
    let reset = client.poll_control().unwrap();
    client.on_control_lost(&reset);
    assert_eq!(client.poll_control(), Some(reset));
    assert!(!client.is_finished_sending(id));
    client.on_control_acked(&reset);
    assert!(client.is_finished_sending(id));
    client.on_control_lost(&reset);
    assert!(
        !client.has_control(),
        "acked: a late loss report changes nothing"
    );
}

#[test]
fn reading_a_reset_stream_reports_the_error() {
    let now = Instant::now();
    let (_client, mut server) = default_pair();
    server.on_stream_frame(2, 0, &pattern(100), false).unwrap();
    server.on_reset_stream(2, 42, 300).unwrap();
    assert_eq!(
        server.readable().collect::<Vec<_>>(),
        vec![2],
        "the reset is news"
    );
    let mut buf = [0u8; 64];
    assert_eq!(
        server.read(2, &mut buf, now, SRTT, Duration::ZERO),
        Err(StreamError::Reset {
            id: 2,
            error_code: 42
        })
    );
    // Reported: the peer's stream is retired and one more is granted.
    assert_eq!(
        server.read(2, &mut buf, now, SRTT, Duration::ZERO),
        Err(StreamError::UnknownStream(2))
    );
    assert!(
        drain_control(&mut server).contains(&ControlFrame::MaxStreams {
            dir: Dir::Uni,
            max: 101
        })
    );
}

#[test]
fn reset_returns_the_unread_bytes_to_the_connection_window() {
    let server_config = StreamConfig {
        initial_max_data: 1000,
        ..StreamConfig::default()
    };
    let (_client, mut server) = pair(StreamConfig::default(), server_config);
    server.on_stream_frame(2, 0, &pattern(400), false).unwrap();
    // Final size 600 counts against the connection (RFC 9000 §4.5) and
    // is all discarded: consumed 600 ≥ 1000/2, limit 600 + 1000 = 1600.
    server.on_reset_stream(2, 1, 600).unwrap();
    assert!(drain_control(&mut server).contains(&ControlFrame::MaxData(1600)));
    // 1000 more on another stream fit in 1600 − 600 = 1000.
    assert!(server.on_stream_frame(6, 0, &pattern(1000), false).is_ok());
}

#[test]
fn stop_sending_makes_the_sender_reset() {
    let (mut client, mut server) = default_pair();
    let id = client.open(Dir::Uni).unwrap();
    client.write(id, &pattern(3000), false).unwrap();
    let (chunk, bytes) = poll_chunk(&mut client, 1000).unwrap();
    server
        .on_stream_frame(chunk.id, chunk.offset, &bytes, chunk.fin)
        .unwrap();

    server.stop_sending(id, 9).unwrap();
    let stop = drain_control(&mut server);
    assert_eq!(stop, vec![ControlFrame::StopSending { id, error_code: 9 }]);
    let mut buf = [0u8; 16];
    assert_eq!(
        server.read(id, &mut buf, Instant::now(), SRTT, Duration::ZERO),
        Err(StreamError::ReceiveStopped(id))
    );

    apply_control(&mut client, stop[0]).unwrap();
    // The error code is echoed; the final size is what was sent: 1000.
    let reset = drain_control(&mut client);
    assert_eq!(
        reset,
        vec![ControlFrame::ResetStream {
            id,
            error_code: 9,
            final_size: 1000
        }]
    );
    assert_eq!(
        client.write(id, b"x", false),
        Err(StreamError::Stopped { id, error_code: 9 })
    );
    // The reset reaches the stopped receiver: its stream is retired.
    apply_control(&mut server, reset[0]).unwrap();
    assert_eq!(server.readable().count(), 0);
    assert_eq!(
        server.read(id, &mut buf, Instant::now(), SRTT, Duration::ZERO),
        Err(StreamError::UnknownStream(id))
    );
}

#[test]
fn fin_that_changes_the_final_size_is_a_final_size_error() {
    let (_client, mut server) = default_pair();
    server.on_stream_frame(2, 0, &pattern(100), true).unwrap();
    let error = server
        .on_stream_frame(2, 0, &pattern(90), true)
        .unwrap_err();
    assert_eq!(error.code, TransportErrorCode::FinalSizeError);
}

#[test]
fn data_past_the_final_size_is_a_final_size_error() {
    let (_client, mut server) = default_pair();
    server.on_stream_frame(2, 50, &pattern(50), true).unwrap();
    let error = server
        .on_stream_frame(2, 90, &pattern(20), false)
        .unwrap_err();
    assert_eq!(error.code, TransportErrorCode::FinalSizeError);
}

#[test]
fn fin_below_data_already_received_is_a_final_size_error() {
    let (_client, mut server) = default_pair();
    server.on_stream_frame(2, 0, &pattern(100), false).unwrap();
    let error = server
        .on_stream_frame(2, 0, &pattern(50), true)
        .unwrap_err();
    assert_eq!(error.code, TransportErrorCode::FinalSizeError);
}

#[test]
fn reset_that_changes_the_final_size_is_a_final_size_error() {
    let (_client, mut server) = default_pair();
    server.on_stream_frame(2, 0, &pattern(100), true).unwrap();
    let error = server.on_reset_stream(2, 0, 120).unwrap_err();
    assert_eq!(error.code, TransportErrorCode::FinalSizeError);
    let (_client, mut server) = default_pair();
    server.on_stream_frame(2, 0, &pattern(100), false).unwrap();
    let error = server.on_reset_stream(2, 0, 99).unwrap_err();
    assert_eq!(
        error.code,
        TransportErrorCode::FinalSizeError,
        "below data received"
    );
}

#[test]
fn reset_on_our_own_unidirectional_stream_is_a_stream_state_error() {
    let (mut client, _server) = default_pair();
    let id = client.open(Dir::Uni).unwrap();
    let error = client.on_reset_stream(id, 0, 0).unwrap_err();
    assert_eq!(error.code, TransportErrorCode::StreamStateError);
}

#[test]
fn stop_sending_on_the_peer_unidirectional_stream_is_a_stream_state_error() {
    let (_client, mut server) = default_pair();
    let error = server.on_stop_sending(2, 0).unwrap_err();
    assert_eq!(error.code, TransportErrorCode::StreamStateError);
}
