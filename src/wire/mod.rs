//! The wire format (DESIGN §3): packet headers, frames, varints, connection
//! IDs, ACK ranges, transport parameters and version negotiation, as pure
//! parse/serialize.
//!
//! Owns: bytes ↔ structs. Parsing is a function from `&[u8]` to
//! `Result<_, WireError>` that never panics, checks every length against what
//! remains before using it, limits every count, and borrows from the input
//! instead of allocating.
//!
//! Must not: depend on any other module of the crate, compute or check tags
//! (that is `crypto`), hold connection state, or read a clock.

pub mod cid;
pub mod ecn;
pub mod frame;
pub mod header;
pub mod packet_number;
pub mod quic;
pub mod ranges;
pub mod retry;
pub mod steering;
pub mod transport_params;
pub mod varint;
pub mod version;

pub use cid::{ConnectionId, MAX_CID_LEN, SHORT_HEADER_DCID_LEN};
pub use ecn::Ecn;
pub use frame::{
    crypto_frame_overhead, encode_ack, encode_ack_ecn, encode_corrupted, encode_stream_header,
    frame_type, parse_frames, stream_frame_overhead, AckFrame, AckRanges, AckRangesIter, Frame,
    Frames, MAX_ACK_RANGES,
};
pub use header::{
    header_region_len, parse_header, Header, PacketType, ParsedHeader, HEADER_TAG_LEN, VERSION,
};
pub use packet_number::{
    decode_packet_number, decode_packet_number_of_len, packet_number_len, truncate_packet_number,
    PACKET_NUMBER_LEN,
};
pub use quic::{
    encode_quic_header, parse_quic_header, quic_header_len, reserved_bits_clear,
    reveal_packet_number, HEADER_PROTECTION_SAMPLE_LEN, QUIC_V1, QUIC_V2,
};
pub use ranges::RangeSet;
pub use retry::{
    encode_retry_unsigned, is_retry, parse_retry, Retry, MAX_RETRY_TOKEN_LEN,
    RETRY_INTEGRITY_TAG_LEN,
};
pub use steering::CidSteering;
pub use transport_params::{
    PreferredAddress, TransportParams, VersionInformation, MAX_ACK_DELAY_LIMIT_MS,
    MIN_ACTIVE_CONNECTION_ID_LIMIT, RESET_TOKEN_LEN,
};
pub use varint::{
    check_varint, put_u16, put_u32, put_u8, put_varint, varint_len, Reader, VARINT_MAX,
};
pub use version::{
    encode_version_negotiation, parse_long_invariant, parse_version_negotiation, version_name,
    LongInvariant, VersionNegotiation, VERSION_NEGOTIATION,
};

/// Why bytes could not be parsed (or a value could not be encoded).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// A field runs past the end of the input.
    #[error("unexpected end of input: needed {needed} bytes, {remaining} remain")]
    UnexpectedEnd {
        /// Bytes the field needs.
        needed: usize,
        /// Bytes left in the input.
        remaining: usize,
    },
    /// A value does not fit a variable-length integer (RFC 9000 §16: < 2^62).
    #[error("value {0} does not fit a varint (max 2^62 - 1)")]
    VarintTooLarge(u64),
    /// A connection ID longer than RFC 9000 §17.2 allows.
    #[error("connection ID of {0} bytes is longer than 20")]
    ConnectionIdTooLong(usize),
    /// A frame type this version does not define.
    #[error("unknown frame type {0:#x}")]
    UnknownFrameType(u64),
    /// A frame whose fields contradict each other or the protocol.
    #[error("invalid {frame} frame: {reason}")]
    InvalidFrame {
        /// The frame type's name.
        frame: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// STREAM or CRYPTO data that would end past 2^62 - 1 (RFC 9000 §19.8).
    #[error("{frame} frame data would end at offset {end}, past 2^62 - 1")]
    OffsetTooLarge {
        /// The frame type's name.
        frame: &'static str,
        /// Where the data would end.
        end: u64,
    },
    /// A MAX_STREAMS or STREAMS_BLOCKED count above 2^60 (RFC 9000 §19.11).
    #[error("{frame} frame names {value} streams, above 2^60")]
    StreamLimitTooLarge {
        /// The frame type's name.
        frame: &'static str,
        /// The count given.
        value: u64,
    },
    /// An ACK or CORRUPTED range that would reach below packet number 0.
    #[error("{frame} frame range {range_index} reaches below packet number 0")]
    AckRangeUnderflow {
        /// The frame type's name.
        frame: &'static str,
        /// Which range (0 is the first).
        range_index: u64,
    },
    /// An ACK or CORRUPTED frame with more ranges than we accept.
    #[error("{count} ACK ranges exceed the limit of {limit}")]
    TooManyRanges {
        /// Ranges in the frame.
        count: u64,
        /// Ranges accepted.
        limit: u64,
    },
    /// A header whose fields contradict the layout of DESIGN §3.
    #[error("invalid packet header: {0}")]
    InvalidHeader(&'static str),
    /// A long header of another version.
    #[error("unsupported version {0:#010x}")]
    UnsupportedVersion(u32),
    /// A long-header packet type sift does not use (the two type bits).
    #[error("unsupported long-header packet type {0:#04b}")]
    UnsupportedPacketType(u8),
    /// A packet whose payload cannot even hold its payload tag.
    #[error("payload of {payload_len} bytes is shorter than its {tag_len}-byte tag")]
    PayloadTooShort {
        /// The payload's length.
        payload_len: usize,
        /// The tag's length.
        tag_len: usize,
    },
    /// A transport parameter sent twice (RFC 9000 §7.4).
    #[error("transport parameter {0:#x} appears twice")]
    DuplicateTransportParameter(u64),
    /// A transport parameter whose value does not have the layout of its id.
    #[error("transport parameter {id:#x} is malformed: {reason}")]
    MalformedTransportParameter {
        /// The parameter's id.
        id: u64,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A transport parameter whose value is out of its allowed range.
    #[error("transport parameter {name} = {value} is out of range")]
    TransportParameterOutOfRange {
        /// The parameter's name.
        name: &'static str,
        /// The value given.
        value: u64,
    },
}
