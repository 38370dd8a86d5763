//! Packet headers (DESIGN §3): the long header of Initial and Handshake
//! packets, the short header of 1-RTT packets, and where one packet ends in a
//! datagram of coalesced packets.
//!
//! ```text
//! Long:  flags = 1 T T K 0 0 0 0 | version(4) | dcid_len(1) dcid | scid_len(1) scid
//!        | [token_len(varint) token: Initial only] | pn(4) | payload_len(varint) | header_tag(8)
//! Short: flags = 0 1 0 0 0 0 0 K | dcid(8) | pn(4) | payload_len(varint) | header_tag(8)
//! ```
//!
//! `payload_len` counts the bytes after the header tag that belong to this
//! packet (frames and payload tag), so truncation is detected and the next
//! coalesced packet starts right after.

use super::cid::{ConnectionId, MAX_CID_LEN, SHORT_HEADER_DCID_LEN};
use super::packet_number::{truncate_packet_number, PACKET_NUMBER_LEN};
use super::varint::{put_u32, put_u8, put_varint, varint_len, Reader};
use super::WireError;

/// sift/1 ("SF" 0x0001), the version with split tags, in this layout. Long
/// headers of any other version are rejected here with
/// [`WireError::UnsupportedVersion`]; QUIC v1's are [`super::quic`]'s.
pub const VERSION: u32 = 0x5346_0001;

/// Bytes of the header tag that follows every header (DESIGN §3).
pub const HEADER_TAG_LEN: usize = 8;

/// Flags bit 7: set in long headers, clear in short ones.
pub(crate) const LONG_FORM_BIT: u8 = 0x80;
/// Short-header flags bit 6: always set (DESIGN §3, like QUIC's fixed bit).
const FIXED_BIT: u8 = 0x40;
/// Long-header flags bits 6-5: the packet type.
const LONG_TYPE_SHIFT: u8 = 5;
const LONG_TYPE_MASK: u8 = 0b11;
const LONG_TYPE_INITIAL: u8 = 0b00;
/// 0-RTT: the same type bits as QUIC v1's (RFC 9000 §17.2.3).
const LONG_TYPE_ZERO_RTT: u8 = 0b01;
const LONG_TYPE_HANDSHAKE: u8 = 0b10;
/// Long-header flags bits 4-0: K (reserved) and four zero bits.
const LONG_RESERVED_BITS: u8 = 0x1f;
/// Short-header flags bits 5-1: must be zero.
const SHORT_RESERVED_BITS: u8 = 0x3e;
/// Short-header flags bit 0: the key phase.
const KEY_PHASE_BIT: u8 = 0x01;

/// The kind of packet, which is also its packet-number space.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PacketType {
    /// Long header, carries the client's first flight and may carry a token.
    Initial,
    /// Long header, the client's early data under 0-RTT keys (RFC 9001
    /// §4.6); shares the application data packet-number space with 1-RTT.
    ZeroRtt,
    /// Long header, the rest of the handshake.
    Handshake,
    /// Short header, application data.
    OneRtt,
}

impl PacketType {
    /// True for the types that use the long header.
    pub fn is_long(self) -> bool {
        !matches!(self, PacketType::OneRtt)
    }
}

/// A header to send. Fields a packet type does not carry are ignored by
/// [`Header::encode`]: `version`, `scid` and `token` for 1-RTT, `token` for
/// Handshake, `key_phase` for long headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header<'a> {
    /// Which header layout and packet-number space.
    pub ty: PacketType,
    /// Long headers only; [`VERSION`] or [`QUIC_V1`](super::QUIC_V1).
    pub version: u32,
    /// Destination connection ID; exactly [`SHORT_HEADER_DCID_LEN`] bytes for
    /// 1-RTT (the caller guarantees it).
    pub dcid: ConnectionId,
    /// Source connection ID; empty for 1-RTT.
    pub scid: ConnectionId,
    /// Address-validation token; Initial only.
    pub token: &'a [u8],
    /// The full packet number; only the low 32 bits are written.
    pub packet_number: u64,
    /// Bytes after the header tag: frames plus payload tag.
    pub payload_len: usize,
    /// 1-RTT key phase.
    pub key_phase: bool,
}

impl Header<'_> {
    /// Appends every header byte before the header tag.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self.ty {
            PacketType::Initial | PacketType::ZeroRtt | PacketType::Handshake => {
                put_u8(
                    out,
                    LONG_FORM_BIT | (long_type_bits(self.ty) << LONG_TYPE_SHIFT),
                );
                put_u32(out, self.version);
                for cid in [&self.dcid, &self.scid] {
                    // A ConnectionId is at most 20 bytes, so its length fits.
                    put_u8(out, cid.len() as u8);
                    out.extend_from_slice(cid.as_slice());
                }
                if self.ty == PacketType::Initial {
                    put_varint(out, self.token.len() as u64);
                    out.extend_from_slice(self.token);
                }
            }
            PacketType::OneRtt => {
                // The receiver knows its own IDs' length (sift's are 8 bytes).
                put_u8(out, FIXED_BIT | u8::from(self.key_phase));
                out.extend_from_slice(self.dcid.as_slice());
            }
        }
        put_u32(out, truncate_packet_number(self.packet_number));
        put_varint(out, self.payload_len as u64);
    }

    /// Bytes [`Header::encode`] appends: every header byte before the tag.
    pub fn encoded_len(&self) -> usize {
        let type_specific = match self.ty {
            PacketType::Initial => {
                long_header_fixed_len(&self.dcid, &self.scid)
                    + varint_len(self.token.len() as u64)
                    + self.token.len()
            }
            PacketType::ZeroRtt | PacketType::Handshake => {
                long_header_fixed_len(&self.dcid, &self.scid)
            }
            PacketType::OneRtt => 1 + self.dcid.len(),
        };
        type_specific + PACKET_NUMBER_LEN + varint_len(self.payload_len as u64)
    }
}

/// The long-header type bits of `ty` (0 for a short header's).
pub(crate) fn long_type_bits(ty: PacketType) -> u8 {
    match ty {
        PacketType::Initial | PacketType::OneRtt => LONG_TYPE_INITIAL,
        PacketType::ZeroRtt => LONG_TYPE_ZERO_RTT,
        PacketType::Handshake => LONG_TYPE_HANDSHAKE,
    }
}

/// The packet type of long-header type bits `bits` (two bits).
pub(crate) fn long_packet_type(bits: u8) -> Result<PacketType, WireError> {
    match bits {
        LONG_TYPE_INITIAL => Ok(PacketType::Initial),
        LONG_TYPE_ZERO_RTT => Ok(PacketType::ZeroRtt),
        LONG_TYPE_HANDSHAKE => Ok(PacketType::Handshake),
        reserved => Err(WireError::UnsupportedPacketType(reserved)),
    }
}

/// Flags, version, and both length-prefixed connection IDs.
fn long_header_fixed_len(dcid: &ConnectionId, scid: &ConnectionId) -> usize {
    1 + 4 + 1 + dcid.len() + 1 + scid.len()
}

/// A header as received: what [`parse_header`] found at the start of a
/// datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParsedHeader<'a> {
    /// Which header layout and packet-number space.
    pub ty: PacketType,
    /// The long header's version; [`VERSION`] for short headers, which carry
    /// none.
    pub version: u32,
    /// Destination connection ID (8 bytes in short headers).
    pub dcid: ConnectionId,
    /// Empty for short headers.
    pub scid: ConnectionId,
    /// Initial only; empty otherwise.
    pub token: &'a [u8],
    /// The packet number's low `pn_len` bytes; see
    /// [`decode_packet_number_of_len`](super::decode_packet_number_of_len).
    pub truncated_pn: u32,
    /// Bytes of the packet number on the wire: always 4 in sift/1; 1 to 4
    /// in QUIC v1, 0 until header protection is removed.
    pub pn_len: usize,
    /// 1-RTT key phase; false for long headers.
    pub key_phase: bool,
    /// Bytes before the header tag.
    pub header_len: usize,
    /// Bytes after the header tag: frames plus payload tag.
    pub payload_len: usize,
    /// The whole packet: `header_len + HEADER_TAG_LEN + payload_len`. The
    /// next coalesced packet, if any, starts here.
    pub packet_len: usize,
}

impl ParsedHeader<'_> {
    /// A copy with the token emptied, so it no longer borrows the datagram
    /// and the datagram can be opened in place
    /// ([`open_packet`](crate::crypto::open_packet) takes it `&mut`). Read
    /// the token first if you need it.
    pub fn without_token(&self) -> ParsedHeader<'static> {
        ParsedHeader {
            token: &[],
            ..*self
        }
    }
}

/// Parses the header of the packet at the start of `datagram` and checks
/// that the whole packet (header tag and `payload_len` bytes) is present.
/// Tags are not checked here; that is `crypto`'s job.
pub fn parse_header(datagram: &[u8]) -> Result<ParsedHeader<'_>, WireError> {
    let mut reader = Reader::new(datagram);
    let flags = reader.u8()?;
    let (ty, version, dcid, scid, token, key_phase) = if flags & LONG_FORM_BIT != 0 {
        // Version first: another version may lay its flags out differently.
        let version = reader.u32()?;
        if version != VERSION {
            return Err(WireError::UnsupportedVersion(version));
        }
        let ty = long_packet_type((flags >> LONG_TYPE_SHIFT) & LONG_TYPE_MASK)?;
        if flags & LONG_RESERVED_BITS != 0 {
            return Err(WireError::InvalidHeader(
                "reserved long-header flag bits set",
            ));
        }
        let dcid = read_length_prefixed_cid(&mut reader)?;
        let scid = read_length_prefixed_cid(&mut reader)?;
        let token = if ty == PacketType::Initial {
            let token_len = reader.varint()?;
            let token_len = usize::try_from(token_len)
                .map_err(|_| WireError::InvalidHeader("token length exceeds the datagram"))?;
            reader.bytes(token_len)?
        } else {
            &[]
        };
        (ty, version, dcid, scid, token, false)
    } else {
        if flags & FIXED_BIT == 0 {
            return Err(WireError::InvalidHeader("short-header fixed bit is clear"));
        }
        if flags & SHORT_RESERVED_BITS != 0 {
            return Err(WireError::InvalidHeader(
                "reserved short-header flag bits set",
            ));
        }
        let dcid = ConnectionId::new(reader.bytes(SHORT_HEADER_DCID_LEN)?)?;
        let key_phase = flags & KEY_PHASE_BIT != 0;
        (
            PacketType::OneRtt,
            VERSION,
            dcid,
            ConnectionId::EMPTY,
            &[][..],
            key_phase,
        )
    };
    let truncated_pn = reader.u32()?;
    let payload_len = reader.varint()?;
    let header_len = reader.position();
    reader.bytes(HEADER_TAG_LEN)?;
    let payload_len = usize::try_from(payload_len)
        .ok()
        .filter(|len| *len <= reader.remaining())
        .ok_or(WireError::InvalidHeader("truncated"))?;
    Ok(ParsedHeader {
        ty,
        version,
        dcid,
        scid,
        token,
        truncated_pn,
        pn_len: PACKET_NUMBER_LEN,
        key_phase,
        header_len,
        payload_len,
        packet_len: header_len + HEADER_TAG_LEN + payload_len,
    })
}

fn read_length_prefixed_cid(reader: &mut Reader<'_>) -> Result<ConnectionId, WireError> {
    let len = usize::from(reader.u8()?);
    if len > MAX_CID_LEN {
        return Err(WireError::ConnectionIdTooLong(len));
    }
    ConnectionId::new(reader.bytes(len)?)
}

/// `header_len + HEADER_TAG_LEN` of the first packet in `datagram` if it
/// parses: where its "header" bytes end, for a simulator that aims bit flips
/// at the header or the payload.
pub fn header_region_len(datagram: &[u8]) -> Option<usize> {
    parse_header(datagram)
        .ok()
        .map(|parsed| parsed.header_len + HEADER_TAG_LEN)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::decode_packet_number;
    use proptest::prelude::*;

    fn cid(bytes: &[u8]) -> ConnectionId {
        ConnectionId::new(bytes).expect("test IDs are short")
    }

    fn short_header(packet_number: u64, payload_len: usize) -> Header<'static> {
        Header {
            ty: PacketType::OneRtt,
            version: VERSION,
            dcid: cid(&[0xd0; SHORT_HEADER_DCID_LEN]),
            scid: ConnectionId::EMPTY,
            token: &[],
            packet_number,
            payload_len,
            key_phase: true,
        }
    }

    /// Header, a zero header tag and `payload_len` bytes of payload.
    fn packet(header: &Header<'_>, payload_byte: u8) -> Vec<u8> {
        let mut out = Vec::new();
        header.encode(&mut out);
        out.extend_from_slice(&[0; HEADER_TAG_LEN]);
        out.resize(out.len() + header.payload_len, payload_byte);
        out
    }

    #[test]
    fn short_header_has_the_documented_layout() {
        let bytes = packet(&short_header(0x1_0000_0102, 3), 0xee);
        let expected: Vec<u8> = [
            &[0x41][..],               // 0 1 00000 K=1
            &[0xd0; 8],                // dcid
            &[0x00, 0x00, 0x01, 0x02], // low 32 bits of 0x1_0000_0102
            &[0x03],                   // payload_len
            &[0; HEADER_TAG_LEN],      // header tag
            &[0xee, 0xee, 0xee],       // payload
        ]
        .concat();
        assert_eq!(bytes, expected);
        // 1 + 8 + 4 + 1 = 14 bytes before the tag.
        assert_eq!(short_header(0, 3).encoded_len(), 14);
        assert_eq!(header_region_len(&bytes), Some(14 + HEADER_TAG_LEN));
    }

    #[test]
    fn initial_long_header_has_the_documented_layout() {
        let header = Header {
            ty: PacketType::Initial,
            version: VERSION,
            dcid: cid(&[1, 2]),
            scid: cid(&[3]),
            token: &[9, 9],
            packet_number: 7,
            payload_len: 0,
            key_phase: false,
        };
        let mut bytes = Vec::new();
        header.encode(&mut bytes);
        let expected: Vec<u8> = [
            &[0x80][..],               // 1 00 0 0000: Initial
            &[0x53, 0x46, 0x00, 0x01], // version
            &[2, 1, 2],                // dcid
            &[1, 3],                   // scid
            &[2, 9, 9],                // token
            &[0, 0, 0, 7],             // pn
            &[0],                      // payload_len
        ]
        .concat();
        assert_eq!(bytes, expected);
        assert_eq!(header.encoded_len(), expected.len());
    }

    #[test]
    fn handshake_flags_carry_type_bits_10_and_no_token() {
        let header = Header {
            ty: PacketType::Handshake,
            token: b"ignored",
            ..short_header(1, 0)
        };
        let mut bytes = Vec::new();
        header.encode(&mut bytes);
        assert_eq!(bytes[0], 0xc0, "1 10 0 0000");
        let bytes = packet(&header, 0);
        let parsed = parse_header(&bytes).expect("valid");
        assert_eq!(parsed.ty, PacketType::Handshake);
        assert_eq!(parsed.token, b"");
        assert!(!parsed.key_phase, "long headers have no key phase");
    }

    #[test]
    fn payload_len_beyond_the_datagram_is_reported_as_truncated() {
        let mut bytes = packet(&short_header(5, 10), 0);
        bytes.truncate(bytes.len() - 1);
        assert_eq!(
            parse_header(&bytes),
            Err(WireError::InvalidHeader("truncated"))
        );
    }

    #[test]
    fn missing_header_tag_is_an_unexpected_end() {
        let mut bytes = Vec::new();
        short_header(5, 0).encode(&mut bytes);
        bytes.extend_from_slice(&[0; 3]);
        assert_eq!(
            parse_header(&bytes),
            Err(WireError::UnexpectedEnd {
                needed: HEADER_TAG_LEN,
                remaining: 3
            })
        );
    }

    #[test]
    fn coalesced_packets_parse_one_after_another() {
        let first = Header {
            ty: PacketType::Initial,
            scid: cid(&[7; 4]),
            token: b"tok",
            ..short_header(0, 5)
        };
        let second = short_header(1, 20);
        let mut datagram = packet(&first, 0xaa);
        datagram.extend_from_slice(&packet(&second, 0xbb));

        let parsed_first = parse_header(&datagram).expect("first packet");
        assert_eq!(parsed_first.ty, PacketType::Initial);
        assert_eq!(parsed_first.token, b"tok");
        // header + tag + 5 bytes of payload.
        assert_eq!(
            parsed_first.packet_len,
            first.encoded_len() + HEADER_TAG_LEN + 5
        );
        let rest = &datagram[parsed_first.packet_len..];
        let parsed_second = parse_header(rest).expect("second packet");
        assert_eq!(parsed_second.ty, PacketType::OneRtt);
        assert_eq!(parsed_second.truncated_pn, 1);
        assert_eq!(parsed_second.packet_len, rest.len());
    }

    #[test]
    fn other_versions_are_rejected_with_the_version_seen() {
        let header = Header {
            ty: PacketType::Handshake,
            version: 1,
            ..short_header(0, 0)
        };
        assert_eq!(
            parse_header(&packet(&header, 0)),
            Err(WireError::UnsupportedVersion(1))
        );
    }

    #[test]
    fn reserved_long_packet_type_is_rejected() {
        // 0b11 is Retry in QUIC v1; sift/1 has none in this layout.
        let mut bytes = packet(
            &Header {
                ty: PacketType::Handshake,
                ..short_header(0, 0)
            },
            0,
        );
        bytes[0] = 0xe0;
        assert_eq!(
            parse_header(&bytes),
            Err(WireError::UnsupportedPacketType(0b11))
        );
    }

    #[test]
    fn zero_rtt_flags_carry_type_bits_01_and_no_token() {
        let header = Header {
            ty: PacketType::ZeroRtt,
            version: VERSION,
            dcid: cid(&[1; 8]),
            scid: cid(&[2; 8]),
            token: b"ignored",
            packet_number: 7,
            payload_len: 1,
            key_phase: false,
        };
        let bytes = packet(&header, 0);
        assert_eq!(bytes[0], 0xa0);
        let parsed = parse_header(&bytes).unwrap();
        assert_eq!(parsed.ty, PacketType::ZeroRtt);
        assert!(parsed.token.is_empty());
    }

    #[test]
    fn reserved_flag_bits_are_rejected() {
        let long = Header {
            ty: PacketType::Handshake,
            ..short_header(0, 0)
        };
        for bit in 0..5 {
            let mut bytes = packet(&long, 0);
            bytes[0] |= 1 << bit;
            assert!(
                matches!(parse_header(&bytes), Err(WireError::InvalidHeader(_))),
                "long flags bit {bit}"
            );
        }
        for bit in 1..6 {
            let mut bytes = packet(&short_header(0, 0), 0);
            bytes[0] |= 1 << bit;
            assert!(
                matches!(parse_header(&bytes), Err(WireError::InvalidHeader(_))),
                "short flags bit {bit}"
            );
        }
        let mut bytes = packet(&short_header(0, 0), 0);
        bytes[0] &= !FIXED_BIT;
        assert_eq!(
            parse_header(&bytes),
            Err(WireError::InvalidHeader("short-header fixed bit is clear"))
        );
    }

    #[test]
    fn long_header_connection_id_over_twenty_bytes_is_rejected() {
        let mut bytes = packet(
            &Header {
                ty: PacketType::Handshake,
                ..short_header(0, 0)
            },
            0,
        );
        bytes[5] = 21; // dcid_len
        assert_eq!(
            parse_header(&bytes),
            Err(WireError::ConnectionIdTooLong(21))
        );
    }

    #[test]
    fn token_longer_than_the_datagram_is_rejected() {
        let header = Header {
            ty: PacketType::Initial,
            dcid: ConnectionId::EMPTY,
            token: &[],
            ..short_header(0, 0)
        };
        let mut bytes = Vec::new();
        header.encode(&mut bytes);
        // flags, version, dcid_len 0, scid_len 0, then token_len: make it 63.
        bytes[7] = 63;
        assert!(matches!(
            parse_header(&bytes),
            Err(WireError::UnexpectedEnd { needed: 63, .. })
        ));
    }

    fn any_cid(max_len: usize) -> impl Strategy<Value = ConnectionId> {
        proptest::collection::vec(any::<u8>(), 0..=max_len)
            .prop_map(|bytes| ConnectionId::new(&bytes).expect("bounded length"))
    }

    prop_compose! {
        fn any_header_parts()(
            ty in prop_oneof![
                Just(PacketType::Initial),
                Just(PacketType::ZeroRtt),
                Just(PacketType::Handshake),
                Just(PacketType::OneRtt)
            ],
            long_dcid in any_cid(MAX_CID_LEN),
            short_dcid in proptest::collection::vec(any::<u8>(), SHORT_HEADER_DCID_LEN),
            scid in any_cid(MAX_CID_LEN),
            token in proptest::collection::vec(any::<u8>(), 0..100),
            packet_number in 0u64..(1 << 62),
            payload_len in prop_oneof![0usize..80, 60usize..70, 16_380usize..16_390],
            key_phase in any::<bool>(),
            trailing in proptest::collection::vec(any::<u8>(), 0..30),
        ) -> (PacketType, ConnectionId, ConnectionId, Vec<u8>, u64, usize, bool, Vec<u8>) {
            let dcid = if ty == PacketType::OneRtt {
                ConnectionId::new(&short_dcid).expect("8 bytes")
            } else {
                long_dcid
            };
            (ty, dcid, scid, token, packet_number, payload_len, key_phase, trailing)
        }
    }

    proptest! {
        #[test]
        fn headers_round_trip_through_parse(
            (ty, dcid, scid, token, packet_number, payload_len, key_phase, trailing)
                in any_header_parts()
        ) {
            let header = Header {
                ty,
                version: VERSION,
                dcid,
                scid,
                token: &token,
                packet_number,
                payload_len,
                key_phase,
            };
            let mut datagram = packet(&header, 0x5a);
            // Bytes of a following coalesced packet must not change the parse.
            datagram.extend_from_slice(&trailing);
            let parsed = parse_header(&datagram).expect("a header we wrote parses");
            prop_assert_eq!(parsed.ty, ty);
            prop_assert_eq!(parsed.version, VERSION);
            prop_assert_eq!(parsed.dcid, dcid);
            let long = ty.is_long();
            prop_assert_eq!(parsed.scid, if long { scid } else { ConnectionId::EMPTY });
            let expected_token: &[u8] = if ty == PacketType::Initial { &token } else { &[] };
            prop_assert_eq!(parsed.token, expected_token);
            prop_assert_eq!(parsed.key_phase, !long && key_phase);
            prop_assert_eq!(parsed.header_len, header.encoded_len());
            prop_assert_eq!(parsed.payload_len, payload_len);
            prop_assert_eq!(parsed.packet_len, datagram.len() - trailing.len());
            let previous = packet_number.checked_sub(1);
            prop_assert_eq!(
                decode_packet_number(previous, parsed.truncated_pn),
                packet_number
            );
        }

        #[test]
        fn parse_header_never_panics_on_arbitrary_bytes(
            bytes in proptest::collection::vec(any::<u8>(), 0..64)
        ) {
            if let Ok(parsed) = parse_header(&bytes) {
                prop_assert!(parsed.packet_len <= bytes.len());
                prop_assert_eq!(
                    header_region_len(&bytes),
                    Some(parsed.header_len + HEADER_TAG_LEN)
                );
            }
        }

        #[test]
        fn parse_header_never_panics_on_mutated_valid_headers(
            (ty, dcid, scid, token, packet_number, payload_len, key_phase, trailing)
                in any_header_parts(),
            flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
            cut in any::<prop::sample::Index>(),
        ) {
            let header = Header {
                ty, version: VERSION, dcid, scid, token: &token, packet_number, payload_len,
                key_phase,
            };
            let mut datagram = packet(&header, 0);
            datagram.extend_from_slice(&trailing);
            for (index, mask) in flips {
                let at = index.index(datagram.len());
                datagram[at] ^= mask;
            }
            datagram.truncate(cut.index(datagram.len() + 1));
            if let Ok(parsed) = parse_header(&datagram) {
                prop_assert!(parsed.packet_len <= datagram.len());
                let start = datagram.as_ptr() as usize;
                let token_at = parsed.token.as_ptr() as usize;
                prop_assert!(
                    parsed.token.is_empty()
                        || (token_at >= start && token_at + parsed.token.len() <= start + datagram.len()),
                    "the token borrows from the datagram"
                );
            }
        }
    }
}
