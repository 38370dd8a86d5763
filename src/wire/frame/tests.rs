//! Frame encoding and decoding, as specifications.

// Lists of ranges (not of values) are what these tests are about.
#![allow(clippy::single_range_in_vec_init)]

use super::*;
use proptest::prelude::*;

fn encoded(frame: &Frame<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    frame.encode(&mut out);
    out
}

fn parse_all(payload: &[u8]) -> Vec<Result<Frame<'_>, WireError>> {
    parse_frames(payload).collect()
}

fn only_frame(payload: &[u8]) -> Result<Frame<'_>, WireError> {
    let mut frames = parse_frames(payload);
    let frame = frames.next().expect("one frame")?;
    assert!(
        frames.next().is_none(),
        "exactly one frame in {payload:02x?}"
    );
    Ok(frame)
}

fn set(ranges: &[std::ops::Range<u64>]) -> RangeSet {
    ranges.iter().cloned().collect()
}

fn ack_ranges(frame: &Frame<'_>) -> Vec<RangeInclusive<u64>> {
    match frame {
        Frame::Ack(ack) => ack.ranges.iter().collect(),
        Frame::Corrupted(ranges) => ranges.iter().collect(),
        other => panic!("not an ACK or CORRUPTED frame: {other:?}"),
    }
}

#[test]
fn ack_with_one_range_has_no_gap_pairs() {
    let mut out = Vec::new();
    encode_ack(&set(&[5..11]), 100, 8, &mut out);
    // type 0x02, largest 10, delay 100 (two-byte varint 0x4064),
    // range_count 0, first_range 10 - 5 = 5.
    assert_eq!(out, [0x02, 10, 0x40, 0x64, 0, 5]);
    let frame = only_frame(&out).expect("valid ACK");
    let Frame::Ack(ack) = frame else {
        panic!("{frame:?}")
    };
    assert_eq!(ack.ack_delay_micros, 100);
    assert_eq!(ack.ranges.largest(), 10);
    assert_eq!(ack.ranges.smallest(), 5);
    assert_eq!(ack.ranges.num_ranges(), 1);
    assert_eq!(ack_ranges(&frame), [5..=10]);
}

#[test]
fn an_ack_with_ecn_counts_is_written_as_type_0x03_and_reads_back() {
    let mut out = Vec::new();
    encode_ack_ecn(&set(&[5..11]), 100, 8, Some([7, 1, 300]), &mut out);
    assert_eq!(out[0], 0x03);
    let Frame::Ack(ack) = only_frame(&out).expect("valid ACK_ECN") else {
        panic!("not an ACK")
    };
    assert_eq!(ack.ecn_counts, Some([7, 1, 300]));
    assert_eq!(ack.ack_delay_micros, 100);
    let mut plain = Vec::new();
    encode_ack_ecn(&set(&[5..11]), 100, 8, None, &mut plain);
    assert_eq!(plain[0], 0x02, "no counts: a plain ACK");
}

#[test]
fn ack_ecn_counts_are_read_and_written_back() {
    // RFC 9000 §19.3.2: an ACK frame of type 0x03 ends in ECT(0), ECT(1)
    // and CE counts (quinn sends them).
    let bytes = [0x03, 10, 0x40, 0x64, 0, 5, 7, 0, 0x40, 0x80];
    let frame = only_frame(&bytes).expect("valid ACK_ECN");
    let Frame::Ack(ack) = frame else {
        panic!("{frame:?}")
    };
    assert_eq!(ack.ecn_counts, Some([7, 0, 128]));
    assert_eq!(ack_ranges(&frame), [5..=10]);
    let mut out = Vec::new();
    frame.encode(&mut out);
    assert_eq!(out, bytes);
    assert!(only_frame(&bytes[..9]).is_err(), "a count cut short");
}

#[test]
fn ack_with_many_ranges_lists_them_largest_first() {
    // 300 ranges {3i, 3i+1}, each separated by one missing number.
    let received: RangeSet = (0..300u64).map(|i| 3 * i..3 * i + 2).collect();
    let mut out = Vec::new();
    encode_ack(&received, 0, 1000, &mut out);
    let frame = only_frame(&out).expect("valid ACK");
    let expected: Vec<_> = (0..300u64).rev().map(|i| 3 * i..=3 * i + 1).collect();
    assert_eq!(ack_ranges(&frame), expected);
    let Frame::Ack(ack) = frame else {
        panic!("{frame:?}")
    };
    assert_eq!(ack.ranges.smallest(), 0);
    assert_eq!(ack.ranges.largest(), 898);
}

#[test]
fn ack_keeps_only_the_highest_max_ranges() {
    let received = set(&[1..2, 4..6, 8..9, 20..30]);
    let mut out = Vec::new();
    encode_ack(&received, 0, 2, &mut out);
    let frame = only_frame(&out).expect("valid ACK");
    assert_eq!(ack_ranges(&frame), [20..=29, 8..=8]);
}

#[test]
fn ack_never_writes_more_ranges_than_a_decoder_accepts() {
    let received: RangeSet = (0..2000u64).map(|i| 2 * i..2 * i + 1).collect();
    let mut out = Vec::new();
    encode_ack(&received, 0, usize::MAX, &mut out);
    let frame = only_frame(&out).expect("valid ACK");
    // MAX_ACK_RANGES pairs after the first range: 1025 ranges.
    assert_eq!(ack_ranges(&frame).len(), 1025);
    assert_eq!(ack_ranges(&frame)[0], 3998..=3998);
}

#[test]
fn ack_of_nothing_writes_nothing() {
    let mut out = Vec::new();
    encode_ack(&RangeSet::new(), 0, 10, &mut out);
    encode_ack(&set(&[1..3]), 0, 0, &mut out);
    encode_corrupted(&RangeSet::new(), 10, &mut out);
    assert!(out.is_empty());
}

#[test]
fn corrupted_frame_encodes_ranges_without_an_ack_delay() {
    let mut out = Vec::new();
    encode_corrupted(&set(&[3..5, 7..8]), 8, &mut out);
    // type 0x20, largest 7, range_count 1, first_range 0,
    // gap = 7 - 4 - 2 = 1, range_len = 4 - 3 = 1.
    assert_eq!(out, [0x20, 7, 1, 0, 1, 1]);
    let frame = only_frame(&out).expect("valid CORRUPTED");
    assert!(matches!(frame, Frame::Corrupted(_)));
    assert_eq!(ack_ranges(&frame), [7..=7, 3..=4]);
    assert!(!frame.is_ack_eliciting());
}

#[test]
fn ack_first_range_reaching_below_zero_is_rejected() {
    // largest 3, delay 0, range_count 0, first_range 4: 3 - 4 < 0.
    assert_eq!(
        only_frame(&[0x02, 3, 0, 0, 4]),
        Err(WireError::AckRangeUnderflow {
            frame: "ACK",
            range_index: 0
        })
    );
}

#[test]
fn ack_gap_reaching_below_zero_is_rejected() {
    // largest 10, first_range 2: smallest 8; gap 7: next largest 8 - 7 - 2 < 0.
    assert_eq!(
        only_frame(&[0x02, 10, 0, 1, 2, 7, 0]),
        Err(WireError::AckRangeUnderflow {
            frame: "ACK",
            range_index: 1
        })
    );
    // gap 6: next largest 0; range_len 1: 0 - 1 < 0.
    assert_eq!(
        only_frame(&[0x02, 10, 0, 1, 2, 6, 1]),
        Err(WireError::AckRangeUnderflow {
            frame: "ACK",
            range_index: 1
        })
    );
    // gap 6, range_len 0: the range 0..=0 is fine.
    let frame = only_frame(&[0x02, 10, 0, 1, 2, 6, 0]).expect("valid ACK");
    assert_eq!(ack_ranges(&frame), [8..=10, 0..=0]);
}

#[test]
fn corrupted_range_underflow_names_the_frame() {
    assert_eq!(
        only_frame(&[0x20, 1, 0, 2]),
        Err(WireError::AckRangeUnderflow {
            frame: "CORRUPTED",
            range_index: 0
        })
    );
}

#[test]
fn ack_with_more_than_max_ack_ranges_is_rejected_before_reading_them() {
    // range_count 1025 as a two-byte varint 0x4401.
    assert_eq!(
        only_frame(&[0x02, 10, 0, 0x44, 0x01, 0]),
        Err(WireError::TooManyRanges {
            count: 1025,
            limit: MAX_ACK_RANGES
        })
    );
}

#[test]
fn ack_range_count_beyond_the_payload_is_an_unexpected_end() {
    // range_count 5 but only one (gap, len) pair follows.
    assert!(matches!(
        only_frame(&[0x02, 100, 0, 5, 1, 1, 1]),
        Err(WireError::UnexpectedEnd { .. })
    ));
}

#[test]
fn stream_frame_is_written_with_offset_and_length() {
    let frame = Frame::Stream {
        id: 1,
        offset: 2,
        data: b"xy",
        fin: false,
    };
    // type 0x08|OFF|LEN = 0x0e, id 1, offset 2, len 2, data.
    assert_eq!(encoded(&frame), [0x0e, 1, 2, 2, b'x', b'y']);
    // Overhead: type, id, offset, len = 4 bytes; plus 2 data bytes.
    assert_eq!(stream_frame_overhead(1, 2, 2), 4);
    assert_eq!(frame.encoded_len(), 6);
    let fin = Frame::Stream {
        id: 1,
        offset: 2,
        data: b"xy",
        fin: true,
    };
    assert_eq!(encoded(&fin)[0], 0x0f);
}

#[test]
fn stream_frame_without_len_runs_to_the_end_and_without_off_starts_at_zero() {
    // type 0x09 = STREAM|FIN, id 4, then data to the end of the payload.
    assert_eq!(
        only_frame(&[0x09, 4, b'a', b'b', b'c']),
        Ok(Frame::Stream {
            id: 4,
            offset: 0,
            data: b"abc",
            fin: true
        })
    );
}

#[test]
fn stream_data_ending_past_2_pow_62_is_rejected() {
    let mut out = vec![0x0e, 0];
    put_varint(&mut out, VARINT_MAX);
    out.extend_from_slice(&[1, 0xff]);
    assert_eq!(
        only_frame(&out),
        Err(WireError::OffsetTooLarge {
            frame: "STREAM",
            end: 1 << 62
        })
    );
}

#[test]
fn crypto_data_ending_past_2_pow_62_is_rejected() {
    let mut out = vec![0x06];
    put_varint(&mut out, VARINT_MAX - 1);
    out.extend_from_slice(&[2, 0xaa, 0xbb]);
    assert_eq!(
        only_frame(&out),
        Err(WireError::OffsetTooLarge {
            frame: "CRYPTO",
            end: 1 << 62
        })
    );
    assert_eq!(crypto_frame_overhead(0, 100), 1 + 1 + 2);
}

#[test]
fn datagram_without_length_runs_to_the_end_of_the_payload() {
    assert_eq!(
        only_frame(&[0x30, 1, 2, 3]),
        Ok(Frame::Datagram { data: &[1, 2, 3] })
    );
    let frame = Frame::Datagram { data: &[1, 2, 3] };
    assert_eq!(encoded(&frame), [0x31, 3, 1, 2, 3]);
}

#[test]
fn connection_close_reason_longer_than_the_payload_is_rejected() {
    // Transport close: code 1, frame_type 8, reason_len 10, 2 bytes present.
    assert_eq!(
        only_frame(&[0x1c, 1, 8, 10, b'h', b'i']),
        Err(WireError::UnexpectedEnd {
            needed: 10,
            remaining: 2
        })
    );
}

#[test]
fn application_close_carries_no_frame_type() {
    let frame = Frame::ConnectionClose {
        application: true,
        error_code: 7,
        frame_type: 0,
        reason: b"bye",
    };
    assert_eq!(encoded(&frame), [0x1d, 7, 3, b'b', b'y', b'e']);
    assert_eq!(only_frame(&encoded(&frame)), Ok(frame));
}

#[test]
fn padding_runs_coalesce_into_one_frame() {
    assert_eq!(
        parse_all(&[0, 0, 0, 0x01, 0]),
        [
            Ok(Frame::Padding { len: 3 }),
            Ok(Frame::Ping),
            Ok(Frame::Padding { len: 1 })
        ]
    );
    assert_eq!(encoded(&Frame::Padding { len: 4 }), [0, 0, 0, 0]);
}

#[test]
fn parsing_stops_after_the_first_error() {
    assert_eq!(
        parse_all(&[0x01, 0x21, 0x01]),
        [Ok(Frame::Ping), Err(WireError::UnknownFrameType(0x21))]
    );
}

#[test]
fn frame_type_must_be_minimally_encoded() {
    // PING as a two-byte varint.
    assert_eq!(
        only_frame(&[0x40, 0x01]),
        Err(WireError::InvalidFrame {
            frame: "frame type",
            reason: "type is not minimally encoded"
        })
    );
}

#[test]
fn empty_new_token_is_rejected() {
    assert_eq!(
        only_frame(&[0x07, 0]),
        Err(WireError::InvalidFrame {
            frame: "NEW_TOKEN",
            reason: "empty token"
        })
    );
}

#[test]
fn new_connection_id_round_trips_with_its_reset_token() {
    let frame = Frame::NewConnectionId {
        sequence: 3,
        retire_prior_to: 1,
        cid: ConnectionId::new(&[7; 8]).unwrap(),
        reset_token: [9; 16],
    };
    let bytes = encoded(&frame);
    assert_eq!(bytes.len(), 1 + 1 + 1 + 1 + 8 + 16);
    assert_eq!(only_frame(&bytes), Ok(frame));
    let retire = Frame::RetireConnectionId { sequence: 300 };
    assert_eq!(only_frame(&encoded(&retire)), Ok(retire));
}

#[test]
fn new_connection_id_with_a_bad_length_or_retire_prior_to_is_rejected() {
    // (sequence, retire_prior_to, length byte, bytes after it)
    let frame = |sequence: u8, retire: u8, len: u8, rest: usize| {
        let mut bytes = vec![0x18, sequence, retire, len];
        bytes.resize(bytes.len() + rest, 0);
        bytes
    };
    let invalid = [
        ("zero length", frame(1, 0, 0, 16)),
        ("21 bytes", frame(1, 0, 21, 21 + 16)),
        (
            "retire_prior_to above the sequence number",
            frame(4, 5, 8, 8 + 16),
        ),
    ];
    for (what, bytes) in invalid {
        assert!(
            matches!(
                only_frame(&bytes),
                Err(WireError::InvalidFrame {
                    frame: "NEW_CONNECTION_ID",
                    ..
                })
            ),
            "{what}"
        );
    }
    // A reset token cut short.
    assert!(matches!(
        only_frame(&frame(1, 0, 8, 8 + 15)),
        Err(WireError::UnexpectedEnd { .. })
    ));
}

#[test]
fn stream_limits_above_2_pow_60_are_rejected() {
    let mut out = vec![0x12];
    put_varint(&mut out, (1 << 60) + 1);
    assert_eq!(
        only_frame(&out),
        Err(WireError::StreamLimitTooLarge {
            frame: "MAX_STREAMS",
            value: (1 << 60) + 1
        })
    );
    out[0] = 0x17;
    assert_eq!(
        only_frame(&out),
        Err(WireError::StreamLimitTooLarge {
            frame: "STREAMS_BLOCKED",
            value: (1 << 60) + 1
        })
    );
}

#[test]
fn only_padding_ack_corrupted_and_close_do_not_elicit_acks() {
    let mut ack = Vec::new();
    encode_ack(&set(&[0..1]), 0, 1, &mut ack);
    let ack = only_frame(&ack).expect("valid ACK");
    let not_eliciting = [
        Frame::Padding { len: 1 },
        ack,
        Frame::ConnectionClose {
            application: false,
            error_code: 0,
            frame_type: 0,
            reason: b"",
        },
    ];
    for frame in not_eliciting {
        assert!(!frame.is_ack_eliciting(), "{}", frame.name());
    }
    let eliciting = [
        Frame::Ping,
        Frame::Crypto {
            offset: 0,
            data: b"",
        },
        Frame::MaxData(1),
        Frame::HandshakeDone,
        Frame::ImmediateAck,
        Frame::AckFrequency {
            sequence: 0,
            ack_eliciting_threshold: 9,
            request_max_ack_delay_micros: 1000,
            reordering_threshold: 3,
        },
        Frame::Datagram { data: b"" },
    ];
    for frame in eliciting {
        assert!(frame.is_ack_eliciting(), "{}", frame.name());
    }
}

// ---- property tests ----

/// A frame's owned ingredients; `build` borrows a `Frame` from them.
#[derive(Clone, Debug)]
enum Spec {
    Padding(usize),
    Ping,
    HandshakeDone,
    ImmediateAck,
    AckFrequency(u64, u64, u64, u64),
    /// An encoded ACK or CORRUPTED frame and the ranges it must name.
    Ranges {
        encoded: Vec<u8>,
        expected: Vec<RangeInclusive<u64>>,
        ack_delay: Option<u64>,
    },
    Crypto(u64, Vec<u8>),
    Stream(u64, u64, Vec<u8>, bool),
    ResetStream(u64, u64, u64),
    StopSending(u64, u64),
    MaxData(u64),
    MaxStreamData(u64, u64),
    MaxStreams(bool, u64),
    DataBlocked(u64),
    StreamDataBlocked(u64, u64),
    StreamsBlocked(bool, u64),
    NewToken(Vec<u8>),
    NewConnectionId(u64, u64, Vec<u8>, [u8; 16]),
    RetireConnectionId(u64),
    Datagram(Vec<u8>),
    ConnectionClose(bool, u64, u64, Vec<u8>),
}

fn build(spec: &Spec) -> Frame<'_> {
    match spec {
        Spec::Padding(len) => Frame::Padding { len: *len },
        Spec::Ping => Frame::Ping,
        Spec::HandshakeDone => Frame::HandshakeDone,
        Spec::ImmediateAck => Frame::ImmediateAck,
        Spec::AckFrequency(sequence, threshold, delay, reordering) => Frame::AckFrequency {
            sequence: *sequence,
            ack_eliciting_threshold: *threshold,
            request_max_ack_delay_micros: *delay,
            reordering_threshold: *reordering,
        },
        Spec::Ranges { encoded, .. } => only_frame(encoded).expect("encoder output decodes"),
        Spec::Crypto(offset, data) => Frame::Crypto {
            offset: *offset,
            data,
        },
        Spec::Stream(id, offset, data, fin) => Frame::Stream {
            id: *id,
            offset: *offset,
            data,
            fin: *fin,
        },
        Spec::ResetStream(id, error_code, final_size) => Frame::ResetStream {
            id: *id,
            error_code: *error_code,
            final_size: *final_size,
        },
        Spec::StopSending(id, error_code) => Frame::StopSending {
            id: *id,
            error_code: *error_code,
        },
        Spec::MaxData(max) => Frame::MaxData(*max),
        Spec::MaxStreamData(id, max) => Frame::MaxStreamData { id: *id, max: *max },
        Spec::MaxStreams(bidi, max) => Frame::MaxStreams {
            bidi: *bidi,
            max: *max,
        },
        Spec::DataBlocked(limit) => Frame::DataBlocked(*limit),
        Spec::StreamDataBlocked(id, limit) => Frame::StreamDataBlocked {
            id: *id,
            limit: *limit,
        },
        Spec::StreamsBlocked(bidi, limit) => Frame::StreamsBlocked {
            bidi: *bidi,
            limit: *limit,
        },
        Spec::NewToken(token) => Frame::NewToken { token },
        Spec::NewConnectionId(sequence, retire_prior_to, cid, reset_token) => {
            Frame::NewConnectionId {
                sequence: *sequence,
                retire_prior_to: *retire_prior_to,
                cid: ConnectionId::new(cid).expect("at most 20 bytes"),
                reset_token: *reset_token,
            }
        }
        Spec::RetireConnectionId(sequence) => Frame::RetireConnectionId {
            sequence: *sequence,
        },
        Spec::Datagram(data) => Frame::Datagram { data },
        Spec::ConnectionClose(application, error_code, frame_type, reason) => {
            Frame::ConnectionClose {
                application: *application,
                error_code: *error_code,
                frame_type: if *application { 0 } else { *frame_type },
                reason,
            }
        }
    }
}

/// Values at every varint length.
fn any_varint() -> impl Strategy<Value = u64> {
    prop_oneof![
        0u64..64,
        64u64..16_384,
        16_384u64..(1 << 30),
        (1u64 << 30)..=VARINT_MAX
    ]
}

fn any_bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(any::<u8>(), 0..max)
}

fn any_ranges_spec() -> impl Strategy<Value = Spec> {
    let start = prop_oneof![0u64..1_000, 0u64..VARINT_MAX - 100];
    (
        proptest::collection::vec((start, 1u64..5), 1..40),
        1usize..50,
        proptest::option::of(any_varint()),
    )
        .prop_map(|(ranges, max_ranges, ack_delay)| {
            let set: RangeSet = ranges.into_iter().map(|(s, len)| s..s + len).collect();
            let mut encoded = Vec::new();
            match ack_delay {
                Some(delay) => encode_ack(&set, delay, max_ranges, &mut encoded),
                None => encode_corrupted(&set, max_ranges, &mut encoded),
            }
            let expected = set
                .iter()
                .rev()
                .take(max_ranges)
                .map(|r| r.start..=r.end - 1)
                .collect();
            Spec::Ranges {
                encoded,
                expected,
                ack_delay,
            }
        })
}

fn any_spec() -> impl Strategy<Value = Spec> {
    let data_at_offset = || {
        any_bytes(64).prop_flat_map(|data| {
            let max_offset = VARINT_MAX - data.len() as u64;
            (
                prop_oneof![0..=max_offset.min(5000), 0..=max_offset],
                Just(data),
            )
        })
    };
    prop_oneof![
        (1usize..40).prop_map(Spec::Padding),
        Just(Spec::Ping),
        Just(Spec::HandshakeDone),
        Just(Spec::ImmediateAck),
        (any_varint(), any_varint(), any_varint(), any_varint())
            .prop_map(|(a, b, c, d)| Spec::AckFrequency(a, b, c, d)),
        any_ranges_spec(),
        data_at_offset().prop_map(|(offset, data)| Spec::Crypto(offset, data)),
        (any_varint(), data_at_offset(), any::<bool>())
            .prop_map(|(id, (offset, data), fin)| Spec::Stream(id, offset, data, fin)),
        (any_varint(), any_varint(), any_varint()).prop_map(|(a, b, c)| Spec::ResetStream(a, b, c)),
        (any_varint(), any_varint()).prop_map(|(a, b)| Spec::StopSending(a, b)),
        any_varint().prop_map(Spec::MaxData),
        (any_varint(), any_varint()).prop_map(|(a, b)| Spec::MaxStreamData(a, b)),
        (any::<bool>(), 0u64..=1 << 60).prop_map(|(bidi, max)| Spec::MaxStreams(bidi, max)),
        any_varint().prop_map(Spec::DataBlocked),
        (any_varint(), any_varint()).prop_map(|(a, b)| Spec::StreamDataBlocked(a, b)),
        (any::<bool>(), 0u64..=1 << 60).prop_map(|(bidi, max)| Spec::StreamsBlocked(bidi, max)),
        proptest::collection::vec(any::<u8>(), 1..64).prop_map(Spec::NewToken),
        (
            any_varint(),
            proptest::collection::vec(any::<u8>(), 1..=20),
            any::<[u8; 16]>()
        )
            .prop_flat_map(|(sequence, cid, token)| (
                Just(sequence),
                0..=sequence,
                Just(cid),
                Just(token)
            ))
            .prop_map(|(sequence, retire, cid, token)| Spec::NewConnectionId(
                sequence, retire, cid, token
            )),
        any_varint().prop_map(Spec::RetireConnectionId),
        any_bytes(64).prop_map(Spec::Datagram),
        (any::<bool>(), any_varint(), any_varint(), any_bytes(40))
            .prop_map(|(app, code, ty, reason)| Spec::ConnectionClose(app, code, ty, reason)),
    ]
}

fn borrows_from(input: &[u8], part: &[u8]) -> bool {
    let input_start = input.as_ptr() as usize;
    let part_start = part.as_ptr() as usize;
    part_start >= input_start && part_start + part.len() <= input_start + input.len()
}

/// Every byte string a frame holds.
fn borrowed_slices<'a>(frame: &Frame<'a>) -> Vec<&'a [u8]> {
    match *frame {
        Frame::Ack(AckFrame { ranges, .. }) | Frame::Corrupted(ranges) => vec![ranges.pairs],
        Frame::Crypto { data, .. } | Frame::Stream { data, .. } | Frame::Datagram { data } => {
            vec![data]
        }
        Frame::NewToken { token } => vec![token],
        Frame::ConnectionClose { reason, .. } => vec![reason],
        _ => Vec::new(),
    }
}

/// Decodes `payload` to the end and checks what every decoded frame holds.
fn check_decodes_safely(payload: &[u8]) -> Result<(), TestCaseError> {
    for frame in parse_frames(payload) {
        let Ok(frame) = frame else { break };
        for slice in borrowed_slices(&frame) {
            prop_assert!(
                borrows_from(payload, slice),
                "{:?} outside the input",
                frame
            );
        }
        // Validated ranges iterate without underflow, largest first.
        if let Frame::Ack(AckFrame { ranges, .. }) | Frame::Corrupted(ranges) = frame {
            let listed: Vec<_> = ranges.iter().take(2000).collect();
            prop_assert_eq!(listed.len() as u64, ranges.num_ranges());
            prop_assert_eq!(listed.first().map(|r| *r.end()), Some(ranges.largest()));
            prop_assert_eq!(listed.last().map(|r| *r.start()), Some(ranges.smallest()));
            for pair in listed.windows(2) {
                prop_assert!(pair[1].end() + 1 < *pair[0].start());
            }
        }
        // Whatever decodes re-encodes to something that decodes the same.
        let again = encoded(&frame);
        prop_assert_eq!(again.len(), frame.encoded_len());
        prop_assert_eq!(only_frame(&again), Ok(frame));
    }
    Ok(())
}

proptest! {
    #[test]
    fn every_frame_round_trips(spec in any_spec()) {
        let frame = build(&spec);
        let bytes = encoded(&frame);
        prop_assert_eq!(bytes.len(), frame.encoded_len());
        let parsed = only_frame(&bytes);
        prop_assert_eq!(parsed, Ok(frame));
        if let Spec::Ranges { encoded, expected, ack_delay } = &spec {
            prop_assert_eq!(&bytes, encoded);
            prop_assert_eq!(&ack_ranges(&frame), expected);
            if let (Frame::Ack(ack), Some(delay)) = (frame, ack_delay) {
                prop_assert_eq!(ack.ack_delay_micros, *delay);
            }
        }
        if let Frame::Stream { id, offset, data, .. } = frame {
            prop_assert_eq!(
                bytes.len(),
                stream_frame_overhead(id, offset, data.len()) + data.len()
            );
        }
        if let Frame::Crypto { offset, data } = frame {
            prop_assert_eq!(
                bytes.len(),
                crypto_frame_overhead(offset, data.len()) + data.len()
            );
        }
    }

    #[test]
    fn frame_sequences_round_trip(specs in proptest::collection::vec(any_spec(), 1..8)) {
        let frames: Vec<Frame<'_>> = specs.iter().map(build).collect();
        let mut payload = Vec::new();
        for frame in &frames {
            frame.encode(&mut payload);
        }
        // Adjacent PADDING frames decode as one run.
        let mut expected: Vec<Frame<'_>> = Vec::new();
        for frame in frames {
            match (expected.last_mut(), frame) {
                (Some(Frame::Padding { len }), Frame::Padding { len: more }) => *len += more,
                _ => expected.push(frame),
            }
        }
        let parsed: Result<Vec<_>, _> = parse_frames(&payload).collect();
        prop_assert_eq!(parsed, Ok(expected));
    }

    #[test]
    fn parse_frames_never_panics_on_arbitrary_bytes(payload in any_bytes(128)) {
        check_decodes_safely(&payload)?;
    }

    #[test]
    fn parse_frames_never_panics_on_damaged_valid_payloads(
        specs in proptest::collection::vec(any_spec(), 1..6),
        damage in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut payload = Vec::new();
        for spec in &specs {
            build(spec).encode(&mut payload);
        }
        for (index, mask) in damage {
            let at = index.index(payload.len());
            payload[at] ^= mask;
        }
        payload.truncate(cut.index(payload.len() + 1));
        check_decodes_safely(&payload)?;
    }
}

#[test]
fn a_stream_header_and_its_data_are_the_frame() {
    let data = [7u8; 300];
    for (id, offset, fin) in [(0, 0, false), (4, 1 << 20, true), (1 << 40, 63, false)] {
        let mut whole = Vec::new();
        Frame::Stream {
            id,
            offset,
            data: &data,
            fin,
        }
        .encode(&mut whole);
        let mut split = Vec::new();
        encode_stream_header(id, offset, data.len(), fin, &mut split);
        split.extend_from_slice(&data);
        assert_eq!(split, whole);
    }
}
