//! `frames`: [`parse_frames`] over arbitrary bytes.
//!
//! Invariants: decoding never panics; every decoded frame re-encodes to
//! exactly [`Frame::encoded_len`] bytes that decode to the same frame; the
//! re-encoded sequence decodes to the same sequence; ACK and CORRUPTED ranges
//! iterate as the validated, descending, disjoint ranges they claim to be;
//! a REPAIR span never reaches below packet number 0.

use std::ops::RangeInclusive;

use sift::wire::{
    encode_ack, encode_corrupted, frame_type, parse_frames, put_varint, AckRanges, ConnectionId,
    Frame, RangeSet, MAX_ACK_RANGES, VARINT_MAX,
};

use super::Seed;

/// Decodes `data` as a payload of frames and checks every frame decoded
/// before the first error.
pub fn run(data: &[u8]) {
    let mut decoded = Vec::new();
    let mut reencoded = Vec::new();
    for frame in parse_frames(data) {
        let Ok(frame) = frame else { break };
        check_frame(&frame);
        frame.encode(&mut reencoded);
        decoded.push(frame);
    }
    // Every frame consumes at least its type byte.
    assert!(decoded.len() <= data.len());
    // Frames are self-delimiting and adjacent PADDING runs are one frame on
    // decode, so the concatenation decodes to the same list.
    let again: Vec<Frame<'_>> = parse_frames(&reencoded)
        .collect::<Result<_, _>>()
        .expect("re-encoded frames decode");
    assert_eq!(again, decoded);
}

/// One frame survives encode → decode unchanged.
fn check_frame(frame: &Frame<'_>) {
    let mut bytes = Vec::new();
    frame.encode(&mut bytes);
    assert_eq!(
        bytes.len(),
        frame.encoded_len(),
        "encoded_len of {}",
        frame.name()
    );
    let mut frames = parse_frames(&bytes);
    let again = frames
        .next()
        .expect("an encoded frame is not empty")
        .expect("an encoded frame decodes");
    assert_eq!(again, *frame);
    assert!(
        frames.next().is_none(),
        "{} encoded as two frames",
        frame.name()
    );
    match frame {
        Frame::Ack(ack) => check_ranges(&ack.ranges),
        Frame::Corrupted(ranges) => check_ranges(ranges),
        Frame::Stream { offset, data, .. } | Frame::Crypto { offset, data } => {
            assert!(offset.saturating_add(data.len() as u64) <= VARINT_MAX);
        }
        // docs/repair.md §3: a span never reaches below packet number 0.
        Frame::Repair { first, last, .. } => assert!(first <= last && *last <= VARINT_MAX),
        Frame::Repaired(count) => assert!(*count <= VARINT_MAX),
        _ => {}
    }
}

/// RFC 9000 §19.3.1: ranges descend, each below the previous by at least
/// one missing number, from `largest` down to `smallest`.
fn check_ranges(ranges: &AckRanges<'_>) {
    assert!(ranges.num_ranges() >= 1 && ranges.num_ranges() <= MAX_ACK_RANGES + 1);
    let listed: Vec<RangeInclusive<u64>> = ranges.iter().collect();
    assert_eq!(listed.len() as u64, ranges.num_ranges());
    let first = listed.first().expect("at least one range");
    let last = listed.last().expect("at least one range");
    assert_eq!(*first.end(), ranges.largest());
    assert_eq!(*last.start(), ranges.smallest());
    for range in &listed {
        assert!(range.start() <= range.end());
    }
    for pair in listed.windows(2) {
        // largest of the next = smallest of the previous - gap - 2.
        assert!(
            pair[1].end().saturating_add(2) <= *pair[0].start(),
            "{listed:?}"
        );
    }
}

fn encoded(frame: Frame<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    frame.encode(&mut out);
    out
}

/// One encoding of every frame type, the short forms the encoder never
/// writes, ACK and CORRUPTED with several ranges, and a typical payload.
pub fn seeds() -> Vec<Seed> {
    let received: RangeSet = [0..3, 5..9, 12..13, 100..200].into_iter().collect();
    let mut ack = Vec::new();
    encode_ack(&received, 1_250, usize::MAX, &mut ack);
    let mut corrupted = Vec::new();
    encode_corrupted(
        &[7..8, 9..11].into_iter().collect(),
        usize::MAX,
        &mut corrupted,
    );

    let mut stream_to_end = Vec::new();
    put_varint(
        &mut stream_to_end,
        frame_type::STREAM | frame_type::STREAM_FIN_BIT,
    );
    put_varint(&mut stream_to_end, 4);
    stream_to_end.extend_from_slice(b"runs to the end");
    let mut datagram_to_end = Vec::new();
    put_varint(&mut datagram_to_end, frame_type::DATAGRAM);
    datagram_to_end.extend_from_slice(b"unreliable");

    let mut payload = ack.clone();
    payload.extend_from_slice(&corrupted);
    payload.extend_from_slice(&encoded(Frame::Stream {
        id: 0,
        offset: 1_000,
        data: b"GET /file",
        fin: true,
    }));
    payload.extend_from_slice(&encoded(Frame::MaxData(1 << 20)));
    payload.extend_from_slice(&encoded(Frame::Padding { len: 5 }));

    let mut seeds = vec![
        Seed::new("padding", encoded(Frame::Padding { len: 8 })),
        Seed::new("ping", encoded(Frame::Ping)),
        Seed::new(
            "path-challenge",
            encoded(Frame::PathChallenge { data: *b"8 bytes!" }),
        ),
        Seed::new(
            "path-response",
            encoded(Frame::PathResponse { data: [0xff; 8] }),
        ),
        Seed::new(
            "new-connection-id",
            encoded(Frame::NewConnectionId {
                sequence: 2,
                retire_prior_to: 1,
                cid: ConnectionId::new(b"8 bytes!").expect("8 bytes"),
                reset_token: [0x5a; 16],
            }),
        ),
        Seed::new(
            "retire-connection-id",
            encoded(Frame::RetireConnectionId { sequence: 1 }),
        ),
        Seed::new("ack", ack),
        Seed::new("corrupted", corrupted),
        Seed::new(
            "crypto",
            encoded(Frame::Crypto {
                offset: 0,
                data: b"client hello",
            }),
        ),
        Seed::new(
            "stream",
            encoded(Frame::Stream {
                id: 4,
                offset: 70_000,
                data: b"stream data",
                fin: false,
            }),
        ),
        Seed::new("stream-no-len", stream_to_end),
        Seed::new(
            "reset-stream",
            encoded(Frame::ResetStream {
                id: 8,
                error_code: 3,
                final_size: 4096,
            }),
        ),
        Seed::new(
            "stop-sending",
            encoded(Frame::StopSending {
                id: 8,
                error_code: 3,
            }),
        ),
        Seed::new("max-data", encoded(Frame::MaxData(1 << 30))),
        Seed::new(
            "max-stream-data",
            encoded(Frame::MaxStreamData { id: 1, max: 65_536 }),
        ),
        Seed::new(
            "max-streams-bidi",
            encoded(Frame::MaxStreams {
                bidi: true,
                max: 100,
            }),
        ),
        Seed::new(
            "max-streams-uni",
            encoded(Frame::MaxStreams {
                bidi: false,
                max: 3,
            }),
        ),
        Seed::new("data-blocked", encoded(Frame::DataBlocked(4_000))),
        Seed::new(
            "stream-data-blocked",
            encoded(Frame::StreamDataBlocked { id: 0, limit: 500 }),
        ),
        Seed::new(
            "streams-blocked-bidi",
            encoded(Frame::StreamsBlocked {
                bidi: true,
                limit: 10,
            }),
        ),
        Seed::new(
            "streams-blocked-uni",
            encoded(Frame::StreamsBlocked {
                bidi: false,
                limit: 10,
            }),
        ),
        Seed::new("new-token", encoded(Frame::NewToken { token: b"tok" })),
        Seed::new("handshake-done", encoded(Frame::HandshakeDone)),
        Seed::new("immediate-ack", encoded(Frame::ImmediateAck)),
        Seed::new(
            "ack-frequency",
            encoded(Frame::AckFrequency {
                sequence: 3,
                ack_eliciting_threshold: 9,
                request_max_ack_delay_micros: 2_500,
                reordering_threshold: 3,
            }),
        ),
        Seed::new(
            "repair",
            encoded(Frame::Repair {
                last: 1_000,
                first: 990,
                seed: 7,
                symbol: b"\x00\x05coded",
            }),
        ),
        Seed::new("repaired", encoded(Frame::Repaired(12))),
        Seed::new("datagram", encoded(Frame::Datagram { data: b"dgram" })),
        Seed::new("datagram-no-len", datagram_to_end),
        Seed::new(
            "connection-close",
            encoded(Frame::ConnectionClose {
                application: false,
                error_code: 0x07,
                frame_type: frame_type::STREAM,
                reason: b"flow control",
            }),
        ),
        Seed::new(
            "connection-close-app",
            encoded(Frame::ConnectionClose {
                application: true,
                error_code: 42,
                frame_type: 0,
                reason: b"bye",
            }),
        ),
    ];
    seeds.push(Seed::new("payload", payload));
    seeds
}
