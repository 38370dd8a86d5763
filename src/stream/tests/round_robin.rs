//! Sharing the path: one chunk per stream per turn, retransmissions of any
//! stream before new data of all.

use super::*;

#[test]
fn sixteen_streams_take_turns() {
    let (mut client, _server) = default_pair();
    let ids: Vec<StreamId> = (0..16).map(|_| client.open(Dir::Uni).unwrap()).collect();
    for &id in &ids {
        client.write(id, &pattern(10_000), false).unwrap();
    }
    // Three turns of 16 chunks: each turn serves every stream once, in
    // stream order, and each stream's offsets advance by one chunk a turn.
    for turn in 0..3u64 {
        let served: Vec<(StreamId, u64)> = (0..16)
            .map(|_| {
                let chunk = client.poll_stream_chunk(1000).unwrap();
                (chunk.id, chunk.offset)
            })
            .collect();
        let expected: Vec<(StreamId, u64)> = ids.iter().map(|&id| (id, turn * 1000)).collect();
        assert_eq!(served, expected, "turn {turn}");
    }
}

#[test]
fn a_stream_that_runs_dry_leaves_the_rotation() {
    let (mut client, _server) = default_pair();
    let short = client.open(Dir::Uni).unwrap();
    let long = client.open(Dir::Uni).unwrap();
    client.write(short, &pattern(1000), true).unwrap();
    client.write(long, &pattern(5000), false).unwrap();
    let order: Vec<StreamId> = std::iter::from_fn(|| client.poll_stream_chunk(1000))
        .map(|chunk| chunk.id)
        .collect();
    assert_eq!(order, vec![short, long, long, long, long, long]);
}

#[test]
fn retransmissions_of_any_stream_go_before_new_data() {
    let (mut client, _server) = default_pair();
    let a = client.open(Dir::Uni).unwrap();
    let b = client.open(Dir::Uni).unwrap();
    client.write(a, &pattern(5000), false).unwrap();
    client.write(b, &pattern(5000), false).unwrap();
    let a0 = client.poll_stream_chunk(1000).unwrap();
    let b0 = client.poll_stream_chunk(1000).unwrap();
    client.on_chunk_lost(&b0);
    client.on_chunk_lost(&a0);
    // Both lost chunks go out first (rotation after b: a, then b), new
    // data only afterwards.
    let next: Vec<(StreamId, u64)> = (0..4)
        .map(|_| client.poll_stream_chunk(1000).unwrap())
        .map(|chunk| (chunk.id, chunk.offset))
        .collect();
    assert_eq!(next, vec![(a, 0), (b, 0), (a, 1000), (b, 1000)]);
}
