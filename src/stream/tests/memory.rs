//! What a peer can make us hold: the send side accepts bytes only within
//! the peer's credit plus `send_beyond_credit`, and all streams of a
//! connection share one send buffer (`max_connection_send_buffer`).

use super::*;

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

/// Writes `data` to `id` until it is refused; returns the bytes accepted.
fn write_until_blocked(streams: &mut Streams, id: StreamId, data: &[u8]) -> u64 {
    let mut accepted = 0;
    loop {
        let rest = data.get(accepted as usize..).unwrap_or_default();
        if rest.is_empty() {
            return accepted;
        }
        match streams.write(id, rest, false) {
            Ok(n) => accepted += n as u64,
            Err(StreamError::Blocked) => return accepted,
            Err(other) => panic!("unexpected write error on stream {id}: {other}"),
        }
    }
}

#[test]
fn a_stream_without_peer_credit_accepts_only_the_bound_beyond_it() {
    // The server grants no credit on the streams the client opens.
    let server = StreamConfig {
        initial_max_stream_data: 0,
        ..StreamConfig::default()
    };
    let (mut client, _server) = pair(StreamConfig::default(), server);
    let id = client.open(Dir::Bi).unwrap();
    let accepted = write_until_blocked(&mut client, id, &pattern(1 << 20));
    // Credit 0 + send_beyond_credit 64 KiB, though the send buffer has 4 MiB.
    assert_eq!(accepted, 64 * KIB);
    assert_eq!(client.stats().send_buffered, 64 * KIB);
    assert!(client.writable().next().is_none(), "nothing is writable");
    assert_eq!(client.write(id, b"x", false), Err(StreamError::Blocked));
}

#[test]
fn a_hundred_streams_without_connection_credit_share_one_bound() {
    // A peer that grants streams but no connection credit at all.
    let server = StreamConfig {
        initial_max_data: 0,
        ..StreamConfig::default()
    };
    let (mut client, _server) = pair(StreamConfig::default(), server);
    let data = pattern(256 << 10);
    let mut accepted = 0;
    for _ in 0..100 {
        let id = client.open(Dir::Bi).unwrap();
        match client.write(id, &data, false) {
            Ok(n) => accepted += n as u64,
            Err(StreamError::Blocked) => {}
            Err(other) => panic!("unexpected write error: {other}"),
        }
    }
    // 100 streams × 4 MiB of stream credit, but MAX_DATA 0: the connection
    // takes send_beyond_credit (64 KiB) in all, not 100 × anything.
    assert_eq!(accepted, 64 * KIB);
    assert_eq!(client.stats().send_buffered, 64 * KIB);
}

#[test]
fn a_hundred_streams_with_credit_hold_at_most_the_connection_send_buffer() {
    // A peer that grants plenty of credit and then never acknowledges.
    let client_config = StreamConfig {
        send_buffer: 64 * KIB,
        max_send_buffer: MIB,
        max_connection_send_buffer: 2 * MIB,
        ..StreamConfig::default()
    };
    let server = StreamConfig {
        initial_max_data: 1 << 30,
        initial_max_stream_data: 64 * MIB,
        ..StreamConfig::default()
    };
    let (mut client, _server) = pair(client_config, server);
    // A large congestion window: each stream's buffer may grow to 1 MiB.
    client.size_send_buffer(100 * MIB);
    let ids: Vec<StreamId> = (0..100).map(|_| client.open(Dir::Bi).unwrap()).collect();
    let data = pattern(MIB as usize);
    let accepted: u64 = ids
        .iter()
        .map(|&id| write_until_blocked(&mut client, id, &data))
        .sum();
    // 100 × 1 MiB of stream buffers, one 2 MiB connection buffer.
    assert_eq!(accepted, 2 * MIB);
    assert_eq!(client.stats().send_buffered, 2 * MIB);
    // Sending does not free memory; only acknowledgements do.
    while client.poll_stream_chunk(CHUNK).is_some() {}
    assert!(client.writable().next().is_none());
}

#[test]
fn credit_arriving_unblocks_a_writer_blocked_by_the_peers_limit() {
    let server_config = StreamConfig {
        initial_max_stream_data: 16 * KIB,
        max_stream_receive_window: 16 * KIB,
        ..StreamConfig::default()
    };
    let (mut client, mut server) = pair(StreamConfig::default(), server_config);
    let id = client.open(Dir::Bi).unwrap();
    let data = pattern(MIB as usize);
    let first = write_until_blocked(&mut client, id, &data);
    assert_eq!(first, 16 * KIB + 64 * KIB, "credit plus the bound");
    // The server takes in what its limit allows and reads it: credit
    // moves to 16 + 16 KiB.
    deliver_chunks(&mut client, &mut server);
    let t0 = Instant::now();
    let (read, _) = read_ready(&mut server, id, t0);
    assert_eq!(read.len() as u64, 16 * KIB);
    assert!(client.writable().next().is_none(), "no credit arrived yet");
    exchange_control(&mut server, &mut client);
    assert_eq!(client.writable().collect::<Vec<_>>(), vec![id]);
    let more = write_until_blocked(&mut client, id, &data[first as usize..]);
    assert_eq!(more, 16 * KIB, "exactly the new credit");
}

#[test]
fn acknowledgements_on_one_stream_make_room_for_another() {
    let client_config = StreamConfig {
        send_buffer: 64 * KIB,
        max_connection_send_buffer: 64 * KIB,
        ..StreamConfig::default()
    };
    let (mut client, mut server) = pair(client_config, StreamConfig::default());
    let first = client.open(Dir::Bi).unwrap();
    let second = client.open(Dir::Bi).unwrap();
    let data = pattern(128 << 10);
    assert_eq!(write_until_blocked(&mut client, first, &data), 64 * KIB);
    assert_eq!(
        client.write(second, &data, false),
        Err(StreamError::Blocked)
    );
    deliver_chunks(&mut client, &mut server);
    assert_eq!(client.stats().send_buffered, 0);
    assert_eq!(write_until_blocked(&mut client, second, &data), 64 * KIB);
}

#[test]
fn the_connection_send_buffer_follows_the_window_up_to_its_cap() {
    // Defaults: 4 MiB floor, 32 MiB cap. The peer grants far more.
    let server = StreamConfig {
        initial_max_data: 1 << 30,
        initial_max_stream_data: 1 << 30,
        ..StreamConfig::default()
    };
    let (mut client, _server) = pair(StreamConfig::default(), server);
    let ids: Vec<StreamId> = (0..4).map(|_| client.open(Dir::Bi).unwrap()).collect();
    let data = pattern(12 << 20);
    let write_all_streams = |client: &mut Streams| -> u64 {
        ids.iter()
            .map(|&id| write_until_blocked(client, id, &data))
            .sum()
    };
    // 50 Mb/s × 600 ms is 3.75 MB; three windows are 11.25 MB, shared by
    // the four streams.
    client.size_send_buffer(3_750_000);
    assert_eq!(write_all_streams(&mut client), 11_250_000);
    // A window of 20 MB would ask for 60 MB: the connection stops at 32 MiB.
    client.size_send_buffer(20_000_000);
    write_all_streams(&mut client);
    assert_eq!(client.stats().send_buffered, 32 * MIB);
}

#[test]
fn one_stream_grows_with_the_window_as_before() {
    // One stream on a long fat path: its buffer and the connection's are
    // the same three windows, so a single download is not held back.
    let server = StreamConfig {
        initial_max_data: 1 << 30,
        initial_max_stream_data: 1 << 30,
        ..StreamConfig::default()
    };
    let (mut client, _server) = pair(StreamConfig::default(), server);
    let id = client.open(Dir::Uni).unwrap();
    client.size_send_buffer(3_750_000);
    let accepted = write_until_blocked(&mut client, id, &pattern(16 << 20));
    assert_eq!(accepted, 11_250_000);
}

#[test]
fn stream_data_fragmented_beyond_the_reassembly_limit_is_a_protocol_violation() {
    let server_config = StreamConfig {
        max_out_of_order_segments: 8,
        ..StreamConfig::default()
    };
    let (mut client, mut server) = pair(StreamConfig::default(), server_config);
    let id = client.open(Dir::Bi).unwrap();
    // One byte in every two: each one a segment of its own, ~100 bytes of
    // bookkeeping for one byte of window.
    for i in 0..8u64 {
        server.on_stream_frame(id, 2 * i + 1, b"x", false).unwrap();
    }
    let error = server.on_stream_frame(id, 17, b"x", false).unwrap_err();
    assert_eq!(error.code, TransportErrorCode::ProtocolViolation);
}

#[test]
fn filled_gaps_and_resets_give_their_segments_back() {
    let server_config = StreamConfig {
        max_out_of_order_segments: 8,
        ..StreamConfig::default()
    };
    let (mut client, mut server) = pair(StreamConfig::default(), server_config);
    let first = client.open(Dir::Bi).unwrap();
    let second = client.open(Dir::Bi).unwrap();
    for i in 0..8u64 {
        server
            .on_stream_frame(first, 2 * i + 1, b"x", false)
            .unwrap();
    }
    // The gaps fill: everything is in order, no segment is left.
    for i in 0..8u64 {
        server.on_stream_frame(first, 2 * i, b"y", false).unwrap();
    }
    for i in 0..8u64 {
        server
            .on_stream_frame(second, 2 * i + 1, b"x", false)
            .unwrap();
    }
    // A reset drops the second stream's segments: room for eight more.
    server.on_reset_stream(second, 0, 100).unwrap();
    for i in 0..8u64 {
        server
            .on_stream_frame(first, 100 + 2 * i, b"x", false)
            .unwrap();
    }
}

#[test]
fn a_waiting_writer_reuses_emptied_send_blocks_within_the_connection_send_buffer() {
    let buffer = 256 * KIB;
    let client_config = StreamConfig {
        send_buffer: buffer,
        max_connection_send_buffer: buffer,
        ..StreamConfig::default()
    };
    let (mut client, mut server) = pair(client_config, StreamConfig::default());
    let id = client.open(Dir::Uni).unwrap();
    // More than the buffer takes: the writer waits for room.
    let data = pattern(2 * buffer as usize);
    assert_eq!(write_until_blocked(&mut client, id, &data), buffer);
    deliver_chunks(&mut client, &mut server);
    // Everything acknowledged: the blocks are kept, up to the whole buffer.
    assert_eq!(client.stats().send_buffered, 0);
    assert_eq!(client.spare_blocks.allocated() as u64, buffer);

    // The next writes fill the kept blocks: nothing new is allocated.
    assert_eq!(write_until_blocked(&mut client, id, &data), buffer);
    assert_eq!(client.spare_blocks.allocated(), 0);
    // Acknowledged piece by piece and written again as room opens: what is
    // held and kept together never exceeds the buffer.
    let mut rewrites = 0;
    while let Some((chunk, bytes)) = poll_chunk(&mut client, 5000) {
        server
            .on_stream_frame(chunk.id, chunk.offset, &bytes, chunk.fin)
            .unwrap();
        client.on_chunk_acked(&chunk);
        let kept = client.spare_blocks.allocated() as u64;
        assert!(kept + client.stats().send_buffered <= buffer);
        if rewrites < 100 {
            write_until_blocked(&mut client, id, &data[..5000]);
            rewrites += 1;
            let kept = client.spare_blocks.allocated() as u64;
            assert!(kept + client.stats().send_buffered <= buffer);
        }
    }

    // The writer ends the stream: nothing more will be written into the
    // kept blocks, so they are freed, and so is what it empties after.
    assert!(client.spare_blocks.allocated() > 0);
    assert_eq!(write_until_blocked(&mut client, id, &data), buffer);
    client.write(id, b"", true).unwrap();
    assert_eq!(client.spare_blocks.allocated(), 0);
    while !deliver_chunks(&mut client, &mut server).is_empty() {
        assert_eq!(client.spare_blocks.allocated(), 0);
    }
    assert_eq!(client.stats().send_buffered, 0);
}

#[test]
fn writes_that_all_fit_free_their_send_blocks_as_they_empty() {
    // A server's responses that fit its send buffer: nothing waits for
    // room, so nothing is kept for writes that will not come.
    let (mut server, mut client) = default_pair();
    for _ in 0..3 {
        let id = server.open(Dir::Uni).unwrap();
        assert_eq!(
            server.write(id, &pattern(1_000_000), true).unwrap(),
            1_000_000
        );
        let mut acked = 0;
        while let Some((chunk, bytes)) = poll_chunk(&mut server, 50_000) {
            client
                .on_stream_frame(chunk.id, chunk.offset, &bytes, chunk.fin)
                .unwrap();
            server.on_chunk_acked(&chunk);
            acked += chunk.len;
            assert_eq!(server.spare_blocks.allocated(), 0, "after {acked} bytes");
        }
    }
}

#[test]
fn a_share_of_a_send_budget_buffers_a_response_by_the_share_not_whole() {
    // A 1 MB response on a fresh connection (initial window 13 500 bytes):
    // with the 4 MiB floor it is buffered whole, which for 10 000 clients
    // of one server is 10 GB; with a share of an endpoint's budget
    // (`Endpoint::with_send_budget`), three windows within the share.
    let (mut client, _server) = pair(StreamConfig::default(), server_config_for_floor());
    let id = client.open(Dir::Uni).unwrap();
    let response = pattern(1_000_000);
    client.size_send_buffer(13_500);
    assert_eq!(write_until_blocked(&mut client, id, &response), 1_000_000);

    let (mut client, _server) = pair(StreamConfig::default(), server_config_for_floor());
    let id = client.open(Dir::Uni).unwrap();
    // A share below the least: three initial windows.
    client.set_send_share(Some(16 * KIB));
    client.size_send_buffer(13_500);
    assert_eq!(write_until_blocked(&mut client, id, &response), 3 * 13_500);
    // A grown window grows the buffer only to the ceiling.
    client.size_send_buffer(100_000);
    write_until_blocked(&mut client, id, &response);
    assert_eq!(client.stats().send_buffered, MIN_SEND_SHARE);
    // A larger share is the floor, up to the configured one.
    client.set_send_share(Some(200 * KIB));
    client.size_send_buffer(13_500);
    assert_eq!(client.send_buffer, 200 * KIB);
    client.set_send_share(Some(64 * MIB));
    client.size_send_buffer(13_500);
    assert_eq!(client.send_buffer, 4 * MIB);
    // `None` restores the configured floor and ceiling.
    client.set_send_share(Some(0));
    client.set_send_share(None);
    client.size_send_buffer(20_000_000);
    assert_eq!(client.send_buffer, 32 * MIB);
}

fn server_config_for_floor() -> StreamConfig {
    StreamConfig {
        initial_max_data: 1 << 30,
        initial_max_stream_data: 1 << 30,
        ..StreamConfig::default()
    }
}

#[test]
fn one_streams_readiness_is_what_the_lists_of_every_stream_say() {
    // What the tokio host asks of the one stream a task waits on.
    let (mut client, mut server) = pair(StreamConfig::default(), StreamConfig::default());
    let a = client.open(Dir::Bi).unwrap();
    let b = client.open(Dir::Bi).unwrap();
    client.write(a, b"a", false).unwrap();
    client.write(b, b"b", false).unwrap();
    deliver_chunks(&mut client, &mut server);
    read_ready(&mut server, a, Instant::now());
    assert!(!server.is_readable(a), "stream A was read empty");
    assert!(server.is_readable(b), "stream B has a byte");
    assert_eq!(server.readable().collect::<Vec<_>>(), vec![b]);
    // Not a stream we know: a read reports that at once.
    assert!(server.is_readable(stream_id(Side::Client, Dir::Bi, 40).unwrap()));
    // A writer with room, and one held by the peer's credit.
    assert!(client.is_writable(a));
    let server_config = StreamConfig {
        initial_max_stream_data: 0,
        ..StreamConfig::default()
    };
    let (mut client, _server) = pair(StreamConfig::default(), server_config);
    let id = client.open(Dir::Bi).unwrap();
    write_until_blocked(&mut client, id, &pattern(1 << 20));
    assert!(!client.is_writable(id), "held by the peer's credit");
    assert_eq!(client.writable().count(), 0);
    // Finished: a write fails at once, so a waiting writer must hear of it.
    client.write(id, &[], true).unwrap();
    assert!(client.is_writable(id));
}
