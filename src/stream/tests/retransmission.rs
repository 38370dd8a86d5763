//! Loss and acknowledgement feedback: lost ranges go out again before new
//! data, never when another copy was acknowledged, and acknowledged bytes
//! free the send buffer.

use std::time::Instant;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::*;

/// A client with one unidirectional stream holding `data`.
fn sender_with(data: &[u8], fin: bool) -> (Streams, StreamId) {
    let (mut client, _server) = default_pair();
    let id = client.open(Dir::Uni).unwrap();
    client.write(id, data, fin).unwrap();
    (client, id)
}

#[test]
fn lost_chunk_is_resent_before_new_data() {
    let (mut client, id) = sender_with(&pattern(5000), false);
    let first = client.poll_stream_chunk(1000).unwrap();
    let _second = client.poll_stream_chunk(1000).unwrap();
    client.on_chunk_lost(&first);
    let next = client.poll_stream_chunk(1000).unwrap();
    assert_eq!(
        next,
        StreamChunk {
            id,
            offset: 0,
            len: 1000,
            fin: false
        }
    );
    assert_eq!(
        client.poll_stream_chunk(1000).unwrap().offset,
        2000,
        "then new data"
    );
    assert_eq!(client.stats().bytes_retransmitted, 1000);
}

#[test]
fn resent_bytes_are_the_original_bytes() {
    let data = pattern(3000);
    let (mut client, _id) = sender_with(&data, false);
    let first = client.poll_stream_chunk(1200).unwrap();
    client.poll_stream_chunk(1200).unwrap();
    client.on_chunk_lost(&first);
    let (again, bytes) = poll_chunk(&mut client, 500).unwrap();
    // A smaller packet: 500 of the 1200 lost bytes fit.
    assert_eq!((again.offset, again.len), (0, 500));
    assert_eq!(bytes, data[..500]);
    let (rest, bytes) = poll_chunk(&mut client, 5000).unwrap();
    assert_eq!((rest.offset, rest.len), (500, 700));
    assert_eq!(bytes, data[500..1200]);
}

#[test]
fn lost_chunk_acked_by_a_later_copy_is_not_resent() {
    let (mut client, _id) = sender_with(&pattern(1000), false);
    let original = client.poll_stream_chunk(1000).unwrap();
    client.on_chunk_lost(&original);
    let copy = client.poll_stream_chunk(1000).unwrap();
    assert_eq!(copy.offset, original.offset);
    client.on_chunk_acked(&copy);
    // The first copy's loss is reported again (e.g. by a later timer):
    // the bytes are already acknowledged, so nothing goes out.
    client.on_chunk_lost(&original);
    assert_eq!(client.poll_stream_chunk(1000), None);
    assert!(!client.has_stream_data());
}

#[test]
fn a_late_ack_cancels_a_queued_retransmission() {
    let (mut client, _id) = sender_with(&pattern(1000), false);
    let chunk = client.poll_stream_chunk(1000).unwrap();
    client.on_chunk_lost(&chunk);
    assert!(client.has_stream_data());
    // Spurious loss: the original's ack arrives after all.
    client.on_chunk_acked(&chunk);
    assert!(!client.has_stream_data());
}

#[test]
fn acked_bytes_free_the_send_buffer() {
    let config = StreamConfig {
        send_buffer: 1000,
        ..StreamConfig::default()
    };
    let (mut client, _server) = pair(config, StreamConfig::default());
    let id = client.open(Dir::Uni).unwrap();
    assert_eq!(
        client.write(id, &pattern(1500), false),
        Ok(1000),
        "buffer holds 1000"
    );
    assert_eq!(client.write(id, b"x", false), Err(StreamError::Blocked));
    assert_eq!(client.writable().count(), 0);
    let chunk = client.poll_stream_chunk(600).unwrap();
    assert_eq!(
        client.write(id, b"x", false),
        Err(StreamError::Blocked),
        "sent is not acked"
    );
    client.on_chunk_acked(&chunk);
    assert_eq!(client.writable().collect::<Vec<_>>(), vec![id]);
    assert_eq!(client.write(id, &pattern(1500), false), Ok(600));
}

#[test]
fn the_send_buffer_follows_the_congestion_window_within_its_bounds() {
    let config = StreamConfig {
        send_buffer: 1000,
        max_send_buffer: 5000,
        ..StreamConfig::default()
    };
    let (mut client, _server) = pair(config, StreamConfig::default());
    let id = client.open(Dir::Uni).unwrap();
    // Three windows of 1000 bytes.
    client.size_send_buffer(1000);
    assert_eq!(client.write(id, &pattern(8000), false), Ok(3000));
    // A larger window, capped by the ceiling.
    client.size_send_buffer(100_000);
    assert_eq!(client.write(id, &pattern(8000), false), Ok(2000));
    // The window collapses (a timeout): never below the floor, and the
    // bytes already held stay, but nothing more until acks free room.
    client.size_send_buffer(10);
    assert_eq!(client.write(id, b"x", false), Err(StreamError::Blocked));
    assert_eq!(client.writable().count(), 0);
    while let Some(chunk) = client.poll_stream_chunk(600) {
        client.on_chunk_acked(&chunk);
        if client.writable().count() > 0 {
            break;
        }
    }
    assert_eq!(client.stats().bytes_sent, 4200, "room at 800 held");
}

#[test]
fn lost_fin_is_resent_alone_once_its_data_is_acked() {
    let (mut client, id) = sender_with(&pattern(100), true);
    let chunk = client.poll_stream_chunk(1000).unwrap();
    assert!(chunk.fin);
    client.on_chunk_lost(&chunk);
    // Before the resend the bytes are acked through another copy; only the
    // FIN is still missing.
    let data_only = StreamChunk {
        fin: false,
        ..chunk
    };
    client.on_chunk_acked(&data_only);
    assert_eq!(
        client.poll_stream_chunk(1000),
        Some(StreamChunk {
            id,
            offset: 100,
            len: 0,
            fin: true
        })
    );
    assert!(!client.is_finished_sending(id));
    client.on_chunk_acked(&StreamChunk {
        id,
        offset: 100,
        len: 0,
        fin: true,
    });
    assert!(client.is_finished_sending(id));
}

#[test]
fn a_lossy_path_still_delivers_every_byte_in_order() {
    let data = pattern(200_000);
    let (mut client, mut server) = default_pair();
    let id = client.open(Dir::Uni).unwrap();
    client.write(id, &data, true).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let now = Instant::now();
    let mut received = Vec::new();
    let mut fin = false;
    for _round in 0..1000 {
        // Each round: send what may be sent; 20 % of chunks are lost and
        // reported lost, the rest arrive and are acknowledged.
        while let Some((chunk, bytes)) = poll_chunk(&mut client, CHUNK) {
            if rng.random_bool(0.2) {
                client.on_chunk_lost(&chunk);
                break;
            }
            server
                .on_stream_frame(chunk.id, chunk.offset, &bytes, chunk.fin)
                .unwrap();
            client.on_chunk_acked(&chunk);
        }
        if server.readable().any(|r| r == id) {
            let (bytes, done) = read_ready(&mut server, id, now);
            received.extend(bytes);
            fin = done;
        }
        exchange_control(&mut server, &mut client);
        if fin {
            break;
        }
    }
    assert!(fin, "the FIN arrived");
    assert_eq!(received, data);
    assert!(client.is_finished_sending(id));
    assert!(client.stats().bytes_retransmitted > 0);
}

/// One round of a hostile path: every chunk the sender may send now is
/// either lost (reported lost), delivered and acked, delivered but
/// reported lost (a spurious loss), or delivered twice; deliveries are
/// shuffled.
fn hostile_round(client: &mut Streams, server: &mut Streams, rng: &mut ChaCha8Rng, loss: f64) {
    use rand::seq::SliceRandom;
    let mut batch = Vec::new();
    while let Some((chunk, bytes)) = poll_chunk(client, CHUNK) {
        batch.push((chunk, bytes));
        if batch.len() == 32 {
            break;
        }
    }
    let mut deliveries = Vec::new();
    for (chunk, bytes) in batch {
        if rng.random_bool(loss) {
            client.on_chunk_lost(&chunk);
            continue;
        }
        if rng.random_bool(0.1) {
            deliveries.push((chunk, bytes.clone()));
        }
        let spurious = rng.random_bool(0.1);
        deliveries.push((chunk, bytes));
        if spurious {
            client.on_chunk_lost(&chunk);
        } else {
            client.on_chunk_acked(&chunk);
        }
    }
    deliveries.shuffle(rng);
    for (chunk, bytes) in deliveries {
        server
            .on_stream_frame(chunk.id, chunk.offset, &bytes, chunk.fin)
            .unwrap();
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// Whatever the loss, reordering, duplication and spurious loss
    /// reports, both streams arrive intact and the sender ends up with
    /// nothing outstanding.
    #[test]
    fn hostile_paths_deliver_every_stream_intact(
        seed in proptest::prelude::any::<u64>(),
        loss in 0.0f64..0.5,
        sizes in proptest::collection::vec(0usize..40_000, 2),
    ) {
        let now = Instant::now();
        let small_windows = StreamConfig {
            initial_max_data: 30_000,
            initial_max_stream_data: 20_000,
            ..StreamConfig::default()
        };
        let (mut client, mut server) = pair(StreamConfig::default(), small_windows);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let streams: Vec<(StreamId, Vec<u8>)> = sizes
            .iter()
            .map(|&size| {
                let id = client.open(Dir::Uni).unwrap();
                let data = pattern(size);
                assert_eq!(client.write(id, &data, true), Ok(size));
                (id, data)
            })
            .collect();
        let mut received = vec![Vec::new(); streams.len()];
        let mut finished = vec![false; streams.len()];
        for _round in 0..5000 {
            hostile_round(&mut client, &mut server, &mut rng, loss);
            for (index, (id, _)) in streams.iter().enumerate() {
                if server.readable().any(|r| r == *id) {
                    let (bytes, fin) = read_ready(&mut server, *id, now);
                    received[index].extend(bytes);
                    finished[index] |= fin;
                }
            }
            exchange_control(&mut server, &mut client);
            exchange_control(&mut client, &mut server);
            if finished.iter().all(|&f| f) && !client.has_stream_data() {
                break;
            }
        }
        for (index, (id, data)) in streams.iter().enumerate() {
            proptest::prop_assert!(finished[index], "stream {} finished", id);
            proptest::prop_assert_eq!(&received[index], data);
            proptest::prop_assert!(client.is_finished_sending(*id));
        }
    }
}
