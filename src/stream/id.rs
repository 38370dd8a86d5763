//! Stream identifiers: the two low bits name who opened a stream and whether
//! it carries data both ways (RFC 9000 §2.1).

use serde::{Deserialize, Serialize};

use crate::Side;

/// A stream identifier (RFC 9000 §2.1). Bit 0 is the initiator (0 client,
/// 1 server), bit 1 the direction (0 bidirectional, 1 unidirectional); the
/// remaining bits count streams of that type in the order they were opened.
pub type StreamId = u64;

/// Most streams of one type either endpoint may open: a stream ID is a
/// 62-bit varint and two bits name the type (RFC 9000 §4.6, §19.11:
/// a MAX_STREAMS value above 2^60 is a connection error).
pub const MAX_STREAM_COUNT: u64 = 1 << 60;

/// Largest final size a stream can have: offsets are 62-bit varints
/// (RFC 9000 §19.8: offset + length must not exceed 2^62 − 1).
pub const MAX_STREAM_OFFSET: u64 = (1 << 62) - 1;

/// Which way data flows on a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dir {
    /// Both endpoints send (RFC 9000 §2.1, bit 1 clear).
    Bi,
    /// Only the initiator sends (RFC 9000 §2.1, bit 1 set).
    Uni,
}

impl Dir {
    /// Both directions, in the order used for per-direction arrays.
    pub const ALL: [Dir; 2] = [Dir::Bi, Dir::Uni];

    /// Position of this direction in per-direction arrays.
    pub fn index(self) -> usize {
        match self {
            Dir::Bi => 0,
            Dir::Uni => 1,
        }
    }
}

/// The endpoint that opened stream `id` (RFC 9000 §2.1, bit 0).
pub fn stream_initiator(id: StreamId) -> Side {
    if id & 0x1 == 0 {
        Side::Client
    } else {
        Side::Server
    }
}

/// Whether stream `id` is bidirectional or unidirectional (RFC 9000 §2.1, bit 1).
pub fn stream_dir(id: StreamId) -> Dir {
    if id & 0x2 == 0 {
        Dir::Bi
    } else {
        Dir::Uni
    }
}

/// Position of stream `id` among the streams of its type: the n-th stream a
/// side opens in a direction has index n − 1.
pub fn stream_index(id: StreamId) -> u64 {
    id >> 2
}

/// The ID of the stream with `index` among those `initiator` opens in `dir`.
/// `None` when `index` is at or past [`MAX_STREAM_COUNT`].
pub fn stream_id(initiator: Side, dir: Dir, index: u64) -> Option<StreamId> {
    if index >= MAX_STREAM_COUNT {
        return None;
    }
    let initiator_bit = match initiator {
        Side::Client => 0,
        Side::Server => 1,
    };
    let dir_bit = match dir {
        Dir::Bi => 0,
        Dir::Uni => 2,
    };
    Some(index << 2 | dir_bit | initiator_bit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn low_bits_name_initiator_and_direction() {
        // RFC 9000 §2.1 table: 0x0 client bidi, 0x1 server bidi,
        // 0x2 client uni, 0x3 server uni.
        assert_eq!(
            (stream_initiator(0), stream_dir(0)),
            (Side::Client, Dir::Bi)
        );
        assert_eq!(
            (stream_initiator(1), stream_dir(1)),
            (Side::Server, Dir::Bi)
        );
        assert_eq!(
            (stream_initiator(2), stream_dir(2)),
            (Side::Client, Dir::Uni)
        );
        assert_eq!(
            (stream_initiator(3), stream_dir(3)),
            (Side::Server, Dir::Uni)
        );
        assert_eq!(
            (stream_initiator(7), stream_dir(7)),
            (Side::Server, Dir::Uni)
        );
    }

    #[test]
    fn stream_id_round_trips_through_index() {
        // The third server-initiated unidirectional stream: 2 << 2 | 2 | 1 = 11.
        assert_eq!(stream_id(Side::Server, Dir::Uni, 2), Some(11));
        assert_eq!(stream_index(11), 2);
        assert_eq!(stream_id(Side::Client, Dir::Bi, MAX_STREAM_COUNT), None);
        let last = stream_id(Side::Client, Dir::Bi, MAX_STREAM_COUNT - 1);
        assert_eq!(last.map(stream_index), Some(MAX_STREAM_COUNT - 1));
    }
}
