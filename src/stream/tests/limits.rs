//! Stream-count limits and stream states: MAX_STREAMS in both directions,
//! implicit opening, retiring, and frames for streams that cannot carry them.

use std::time::{Duration, Instant};

use super::*;

fn server_allowing(max_streams_bidi: u64, max_streams_uni: u64) -> StreamConfig {
    StreamConfig {
        max_streams_bidi,
        max_streams_uni,
        ..StreamConfig::default()
    }
}

#[test]
fn opening_past_the_peer_limit_fails_and_queues_streams_blocked() {
    let (mut client, _server) = pair(StreamConfig::default(), server_allowing(100, 2));
    assert_eq!(client.open(Dir::Uni), Ok(2));
    assert_eq!(client.open(Dir::Uni), Ok(6));
    assert_eq!(client.open(Dir::Uni), Err(StreamError::StreamsExhausted));
    assert_eq!(client.open(Dir::Uni), Err(StreamError::StreamsExhausted));
    assert_eq!(
        drain_control(&mut client),
        vec![ControlFrame::StreamsBlocked {
            dir: Dir::Uni,
            limit: 2
        }],
        "reported once per limit"
    );
    assert_eq!(
        client.open(Dir::Bi),
        Ok(0),
        "the other direction has its own limit"
    );
    client.on_max_streams(Dir::Uni, 3).unwrap();
    assert_eq!(client.open(Dir::Uni), Ok(10));
}

#[test]
fn retiring_peer_streams_gives_max_streams_credit() {
    let now = Instant::now();
    let (mut client, mut server) = pair(StreamConfig::default(), server_allowing(100, 1));
    let first = client.open(Dir::Uni).unwrap();
    client.write(first, b"hello", true).unwrap();
    deliver_chunks(&mut client, &mut server);
    assert_eq!(server.accept(Dir::Uni), Some(first));
    assert_eq!(
        read_ready(&mut server, first, now),
        (b"hello".to_vec(), true)
    );
    // Read to the end: retired, and the peer may open stream number 2.
    let credit = drain_control(&mut server);
    assert_eq!(
        credit,
        vec![ControlFrame::MaxStreams {
            dir: Dir::Uni,
            max: 2
        }]
    );
    assert_eq!(client.open(Dir::Uni), Err(StreamError::StreamsExhausted));
    apply_control(&mut client, credit[0]).unwrap();
    assert_eq!(client.open(Dir::Uni), Ok(6));
    assert!(
        client.is_finished_sending(first),
        "fin acked: retired at the sender too"
    );
}

#[test]
fn bidirectional_peer_stream_retires_only_when_both_halves_are_done() {
    let now = Instant::now();
    let (mut client, mut server) = default_pair();
    let id = client.open(Dir::Bi).unwrap();
    client.write(id, b"request", true).unwrap();
    deliver_chunks(&mut client, &mut server);
    assert_eq!(server.accept(Dir::Bi), Some(id));
    read_ready(&mut server, id, now);
    assert!(!server.has_control(), "the response half is still open");
    server.write(id, b"response", true).unwrap();
    deliver_chunks(&mut server, &mut client);
    assert_eq!(
        drain_control(&mut server),
        vec![ControlFrame::MaxStreams {
            dir: Dir::Bi,
            max: 101
        }]
    );
    assert_eq!(
        read_ready(&mut client, id, now),
        (b"response".to_vec(), true)
    );
}

#[test]
fn peer_opening_beyond_our_limit_is_a_stream_limit_error() {
    let (_client, mut server) = pair(StreamConfig::default(), server_allowing(100, 2));
    // Client uni stream index 2 (ID 2·4 + 2 = 10) is the third: limit 2.
    let error = server.on_stream_frame(10, 0, b"x", false).unwrap_err();
    assert_eq!(error.code, TransportErrorCode::StreamLimitError);
    assert!(server.on_stream_frame(6, 0, b"x", false).is_ok());
}

#[test]
fn opening_a_peer_stream_opens_the_lower_ones() {
    let (_client, mut server) = default_pair();
    server.on_stream_frame(14, 0, b"x", false).unwrap();
    let accepted: Vec<StreamId> = std::iter::from_fn(|| server.accept(Dir::Uni)).collect();
    assert_eq!(accepted, vec![2, 6, 10, 14]);
    assert_eq!(
        server.readable().collect::<Vec<_>>(),
        vec![14],
        "only 14 has data"
    );
    assert_eq!(server.stats().streams_opened_remote, 4);
}

#[test]
fn stream_frame_on_our_own_unidirectional_stream_is_a_stream_state_error() {
    let (mut client, _server) = default_pair();
    let id = client.open(Dir::Uni).unwrap();
    let error = client.on_stream_frame(id, 0, b"x", false).unwrap_err();
    assert_eq!(error.code, TransportErrorCode::StreamStateError);
}

#[test]
fn frames_for_a_stream_of_ours_never_opened_are_stream_state_errors() {
    let (mut client, _server) = default_pair();
    let error = client.on_stream_frame(0, 0, b"x", false).unwrap_err();
    assert_eq!(error.code, TransportErrorCode::StreamStateError);
    let error = client.on_max_stream_data(4, 100).unwrap_err();
    assert_eq!(error.code, TransportErrorCode::StreamStateError);
}

#[test]
fn max_stream_data_for_a_receive_only_stream_is_a_stream_state_error() {
    let (_client, mut server) = default_pair();
    let error = server.on_max_stream_data(2, 100).unwrap_err();
    assert_eq!(error.code, TransportErrorCode::StreamStateError);
}

#[test]
fn frames_for_retired_streams_are_ignored() {
    let now = Instant::now();
    let (_client, mut server) = default_pair();
    server.on_stream_frame(2, 0, b"done", true).unwrap();
    read_ready(&mut server, 2, now);
    // A late duplicate of the data, and even a reset, change nothing.
    assert!(server.on_stream_frame(2, 0, b"done", true).is_ok());
    assert!(server.on_reset_stream(2, 0, 4).is_ok());
    assert_eq!(server.readable().count(), 0);
}

#[test]
fn max_streams_above_two_to_the_sixtieth_is_an_error() {
    let (mut client, _server) = default_pair();
    let error = client.on_max_streams(Dir::Bi, (1 << 60) + 1).unwrap_err();
    assert_eq!(error.code, TransportErrorCode::FrameEncodingError);
    assert!(client.on_max_streams(Dir::Bi, 1 << 60).is_ok());
}

#[test]
fn streams_opened_before_the_peer_limits_wait_for_them() {
    let mut client = Streams::new(Side::Client, StreamConfig::default());
    let first = client.open(Dir::Uni).unwrap();
    let second = client.open(Dir::Uni).unwrap();
    client.write(first, b"early", true).unwrap();
    client.write(second, b"too many", true).unwrap();
    assert!(
        !client.has_stream_data(),
        "no limits known: nothing goes out"
    );
    assert_eq!(client.poll_stream_chunk(CHUNK), None);

    client.set_peer_limits(&server_allowing(100, 1).transport_limits());
    // The peer allows one unidirectional stream: the second waits.
    let chunk = client.poll_stream_chunk(CHUNK).unwrap();
    assert_eq!((chunk.id, chunk.len, chunk.fin), (first, 5, true));
    assert_eq!(client.poll_stream_chunk(CHUNK), None);
    assert_eq!(
        drain_control(&mut client),
        vec![ControlFrame::StreamsBlocked {
            dir: Dir::Uni,
            limit: 1
        }]
    );
    client.on_max_streams(Dir::Uni, 2).unwrap();
    assert_eq!(client.poll_stream_chunk(CHUNK).map(|c| c.id), Some(second));
}

#[test]
fn using_exactly_the_peer_limit_is_not_reported_as_blocked() {
    let mut client = Streams::new(Side::Client, StreamConfig::default());
    client.open(Dir::Bi).unwrap();
    client.set_peer_limits(&server_allowing(1, 1).transport_limits());
    assert!(!client.has_control());
}

#[test]
fn application_misuse_is_refused_with_the_stream_named() {
    let (mut client, _server) = default_pair();
    let now = Instant::now();
    let mut buf = [0u8; 8];
    let uni = client.open(Dir::Uni).unwrap();
    assert_eq!(
        client.read(uni, &mut buf, now, SRTT, Duration::ZERO),
        Err(StreamError::WrongDirection(uni))
    );
    assert_eq!(
        client.write(3, b"x", false),
        Err(StreamError::UnknownStream(3))
    );
    let bi = client.open(Dir::Bi).unwrap();
    assert_eq!(
        client.read(bi, &mut buf, now, SRTT, Duration::ZERO),
        Err(StreamError::Blocked)
    );
    assert_eq!(client.write(bi, b"", true), Ok(0));
    assert_eq!(
        client.write(bi, b"x", false),
        Err(StreamError::AlreadyFinished(bi))
    );
}
