//! QUIC version 1 packet headers (RFC 9000 §17), as bytes: the other packet
//! format sift speaks, with every QUIC peer (DESIGN §3.1). QUIC version 2
//! (RFC 9369) lays its headers out the same way with other long-header
//! type bits (§3.2), so it is parsed and written here too.
//!
//! ```text
//! Long:  flags = 1 1 T T R R P P | version(4) | dcid_len(1) dcid | scid_len(1) scid
//!        | [token_len(varint) token: Initial only] | length(varint) | pn(1-4) | payload
//! Short: flags = 0 1 S R R K P P | dcid | pn(1-4) | payload
//! ```
//!
//! The low bits of the flags (R R P P, or R R K P P) and the packet number
//! are under header protection (RFC 9001 §5.4), which `crypto` removes: a
//! header parses here only up to the packet number, and
//! [`reveal_packet_number`] finishes it once the mask is off. `length`
//! counts the packet number and the payload; a short header's packet fills
//! the rest of the datagram. The payload ends in the AEAD tag.
//!
//! Where sift/1 ([`super::header`]) differs: no header protection, a fixed
//! 4-byte packet number, a header tag, and type bits one place higher.

#[cfg(doc)]
use super::cid::SHORT_HEADER_DCID_LEN;
use super::cid::{ConnectionId, MAX_CID_LEN};
use super::header::{Header, PacketType, ParsedHeader, LONG_FORM_BIT};
use super::varint::{put_u32, put_u8, put_varint, varint_len, Reader};
use super::WireError;

/// QUIC version 1 (RFC 9000).
pub const QUIC_V1: u32 = 0x0000_0001;
/// QUIC version 2 (RFC 9369 §3.1).
pub const QUIC_V2: u32 = 0x6b33_43cf;

/// The fixed bit, set in both header forms (RFC 9000 §17.2, §17.3).
const FIXED_BIT: u8 = 0x40;
/// Long-header type bits 5-4.
const LONG_TYPE_SHIFT: u8 = 4;
/// Protected bits of the first byte: reserved bits and packet number length
/// (and the key phase in short headers).
const LONG_RESERVED_BITS: u8 = 0x0c;
const SHORT_RESERVED_BITS: u8 = 0x18;
const SHORT_KEY_PHASE_BIT: u8 = 0x04;
const PN_LEN_BITS: u8 = 0x03;

/// The largest packet number length.
pub const MAX_PN_LEN: usize = 4;

/// The long-header type bits of a QUIC v1 Retry (RFC 9000 §17.2.5).
pub const QUIC_RETRY_TYPE: u8 = 0b11;
/// The long-header type bits of a QUIC v2 Retry (RFC 9369 §3.2).
pub const QUIC_V2_RETRY_TYPE: u8 = 0b00;

/// The long-header type bits of `ty` in `version`: v1's (RFC 9000 §17.2:
/// Initial 0b00, 0-RTT 0b01, Handshake 0b10) unless `version` is v2,
/// whose types move up by one (RFC 9369 §3.2: Initial 0b01, 0-RTT 0b10,
/// Handshake 0b11).
fn long_type_bits(version: u32, ty: PacketType) -> u8 {
    let v1 = super::header::long_type_bits(ty);
    if version == QUIC_V2 {
        (v1 + 1) & 0b11
    } else {
        v1
    }
}

/// The packet type of long-header type bits `bits` in `version` (the
/// inverse of [`long_type_bits`]); a Retry's bits are an error here.
fn long_packet_type(version: u32, bits: u8) -> Result<PacketType, WireError> {
    let v1_bits = if version == QUIC_V2 {
        bits.wrapping_sub(1) & 0b11
    } else {
        bits
    };
    super::header::long_packet_type(v1_bits).map_err(|_| WireError::UnsupportedPacketType(bits))
}

/// Appends `header` in the QUIC v1 layout with its packet number in
/// `pn_len` bytes (1 to 4), before any protection; `payload_len` is the
/// sealed payload after the packet number (frames and AEAD tag). Returns
/// where the packet number starts, for header protection.
pub fn encode_quic_header(
    header: &Header<'_>,
    pn_len: usize,
    payload_len: usize,
    out: &mut Vec<u8>,
) -> usize {
    let pn_len = pn_len.clamp(1, MAX_PN_LEN);
    let start = out.len();
    let pn_bits = (pn_len - 1) as u8;
    match header.ty {
        PacketType::Initial | PacketType::ZeroRtt | PacketType::Handshake => {
            let type_bits = long_type_bits(header.version, header.ty);
            put_u8(
                out,
                LONG_FORM_BIT | FIXED_BIT | (type_bits << LONG_TYPE_SHIFT) | pn_bits,
            );
            put_u32(out, header.version);
            for cid in [&header.dcid, &header.scid] {
                // A ConnectionId is at most 20 bytes, so its length fits.
                put_u8(out, cid.len() as u8);
                out.extend_from_slice(cid.as_slice());
            }
            if header.ty == PacketType::Initial {
                put_varint(out, header.token.len() as u64);
                out.extend_from_slice(header.token);
            }
            put_varint(out, (pn_len + payload_len) as u64);
        }
        PacketType::OneRtt => {
            let key_phase = if header.key_phase {
                SHORT_KEY_PHASE_BIT
            } else {
                0
            };
            put_u8(out, FIXED_BIT | key_phase | pn_bits);
            out.extend_from_slice(header.dcid.as_slice());
        }
    }
    let pn_offset = out.len() - start;
    let pn = header.packet_number.to_be_bytes();
    out.extend_from_slice(&pn[pn.len() - pn_len..]);
    pn_offset
}

/// Bytes [`encode_quic_header`] appends, packet number included.
pub fn quic_header_len(header: &Header<'_>, pn_len: usize, payload_len: usize) -> usize {
    let pn_len = pn_len.clamp(1, MAX_PN_LEN);
    let before_pn = match header.ty {
        PacketType::Initial => {
            7 + header.dcid.len()
                + header.scid.len()
                + varint_len(header.token.len() as u64)
                + header.token.len()
                + varint_len((pn_len + payload_len) as u64)
        }
        PacketType::ZeroRtt | PacketType::Handshake => {
            7 + header.dcid.len() + header.scid.len() + varint_len((pn_len + payload_len) as u64)
        }
        PacketType::OneRtt => 1 + header.dcid.len(),
    };
    before_pn + pn_len
}

/// Parses a QUIC v1 or v2 header (of `version`, whose long headers have
/// v1's layout) up to its protected packet number, and checks that the packet
/// is all there. In the result, `header_len` is where the packet number
/// starts and `payload_len` what follows it up to the packet's end;
/// `truncated_pn`, `key_phase` and the final lengths come from
/// [`reveal_packet_number`] once header protection is off. A short header's
/// destination ID is `short_dcid_len` bytes: the receiver's own IDs' length
/// (sift's are [`SHORT_HEADER_DCID_LEN`]).
pub fn parse_quic_header(
    datagram: &[u8],
    version: u32,
    short_dcid_len: usize,
) -> Result<ParsedHeader<'_>, WireError> {
    let mut reader = Reader::new(datagram);
    let flags = reader.u8()?;
    if flags & FIXED_BIT == 0 {
        return Err(WireError::InvalidHeader("fixed bit is clear"));
    }
    let (ty, packet_version, dcid, scid, token, packet_end) = if flags & LONG_FORM_BIT != 0 {
        let packet_version = reader.u32()?;
        if packet_version != version {
            return Err(WireError::UnsupportedVersion(packet_version));
        }
        let ty = long_packet_type(version, (flags >> LONG_TYPE_SHIFT) & 0b11)?;
        let dcid = read_cid(&mut reader)?;
        let scid = read_cid(&mut reader)?;
        let token = if ty == PacketType::Initial {
            let token_len = usize::try_from(reader.varint()?)
                .map_err(|_| WireError::InvalidHeader("token length exceeds the datagram"))?;
            reader.bytes(token_len)?
        } else {
            &[]
        };
        let length = usize::try_from(reader.varint()?)
            .ok()
            .filter(|len| *len <= reader.remaining())
            .ok_or(WireError::InvalidHeader("truncated"))?;
        (
            ty,
            packet_version,
            dcid,
            scid,
            token,
            reader.position() + length,
        )
    } else {
        let dcid = ConnectionId::new(reader.bytes(short_dcid_len)?)?;
        (
            PacketType::OneRtt,
            version,
            dcid,
            ConnectionId::EMPTY,
            &[][..],
            datagram.len(),
        )
    };
    let pn_offset = reader.position();
    // RFC 9001 §5.4.2: the sample starts 4 bytes after the packet number's
    // start and is 16 bytes long, whatever the packet number's length.
    if packet_end < pn_offset + MAX_PN_LEN + HEADER_PROTECTION_SAMPLE_LEN {
        return Err(WireError::InvalidHeader(
            "packet too short for a header protection sample",
        ));
    }
    Ok(ParsedHeader {
        ty,
        version: packet_version,
        dcid,
        scid,
        token,
        truncated_pn: 0,
        pn_len: 0,
        key_phase: false,
        header_len: pn_offset,
        payload_len: packet_end - pn_offset,
        packet_len: packet_end,
    })
}

/// Bytes of the header protection sample (RFC 9001 §5.4.2).
pub const HEADER_PROTECTION_SAMPLE_LEN: usize = 16;

/// Completes `parsed` (from [`parse_quic_header`]) from the unmasked first
/// byte and packet number bytes: the packet number, its length, the key
/// phase, and the header's final length. Returns whether the reserved bits
/// are zero, which RFC 9000 §17.2 requires of a packet that then opens.
pub fn reveal_packet_number(parsed: &mut ParsedHeader<'_>, first: u8, pn_bytes: &[u8]) -> bool {
    let pn_len = usize::from(first & PN_LEN_BITS) + 1;
    let pn_offset = parsed.header_len;
    let truncated = pn_bytes
        .iter()
        .take(pn_len)
        .fold(0u32, |acc, byte| (acc << 8) | u32::from(*byte));
    parsed.truncated_pn = truncated;
    parsed.pn_len = pn_len;
    parsed.header_len = pn_offset + pn_len;
    parsed.payload_len = parsed.packet_len - parsed.header_len;
    if !parsed.ty.is_long() {
        parsed.key_phase = first & SHORT_KEY_PHASE_BIT != 0;
    }
    reserved_bits_clear(first)
}

/// Whether an unprotected first byte has its reserved bits clear.
pub fn reserved_bits_clear(first: u8) -> bool {
    let reserved = if first & LONG_FORM_BIT != 0 {
        LONG_RESERVED_BITS
    } else {
        SHORT_RESERVED_BITS
    };
    first & reserved == 0
}

fn read_cid(reader: &mut Reader<'_>) -> Result<ConnectionId, WireError> {
    let len = usize::from(reader.u8()?);
    if len > MAX_CID_LEN {
        return Err(WireError::ConnectionIdTooLong(len));
    }
    ConnectionId::new(reader.bytes(len)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cid(bytes: &[u8]) -> ConnectionId {
        ConnectionId::new(bytes).expect("short")
    }

    fn header(ty: PacketType, packet_number: u64) -> Header<'static> {
        Header {
            ty,
            version: QUIC_V1,
            dcid: cid(&[0xd0; 8]),
            scid: cid(&[0x5c; 5]),
            token: if ty == PacketType::Initial {
                b"tk"
            } else {
                b""
            },
            packet_number,
            payload_len: 0,
            key_phase: true,
        }
    }

    #[test]
    fn rfc_9001_client_initial_header_has_the_documented_bytes() {
        // RFC 9001 §A.2: c300000001088394c8f03e5157080000449e00000002,
        // before header protection (pn 2 in 4 bytes, length 1182).
        let header = Header {
            ty: PacketType::Initial,
            version: QUIC_V1,
            dcid: cid(&[0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08]),
            scid: ConnectionId::EMPTY,
            token: &[],
            packet_number: 2,
            payload_len: 0,
            key_phase: false,
        };
        let mut out = Vec::new();
        let pn_offset = encode_quic_header(&header, 4, 1178, &mut out);
        let expected = [
            0xc3, 0x00, 0x00, 0x00, 0x01, 0x08, 0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08,
            0x00, 0x00, 0x44, 0x9e, 0x00, 0x00, 0x00, 0x02,
        ];
        assert_eq!(out, expected);
        assert_eq!(pn_offset, 18);
        assert_eq!(quic_header_len(&header, 4, 1178), expected.len());
    }

    #[test]
    fn rfc_9369_initial_headers_have_the_documented_bytes() {
        // RFC 9369 §A.2 and §A.3, before header protection: v2's Initial
        // type bits are 0b01 (0xd3: long, fixed, type 01, pn length 4).
        let client = Header {
            ty: PacketType::Initial,
            version: QUIC_V2,
            dcid: cid(&[0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08]),
            scid: ConnectionId::EMPTY,
            token: &[],
            packet_number: 2,
            payload_len: 0,
            key_phase: false,
        };
        let mut out = Vec::new();
        encode_quic_header(&client, 4, 1178, &mut out);
        assert_eq!(out, hex("d36b3343cf088394c8f03e5157080000449e00000002"));
        let server = Header {
            dcid: ConnectionId::EMPTY,
            scid: cid(&[0xf0, 0x67, 0xa5, 0x50, 0x2a, 0x42, 0x62, 0xb5]),
            packet_number: 1,
            ..client
        };
        out.clear();
        encode_quic_header(&server, 2, 115, &mut out);
        assert_eq!(out, hex("d16b3343cf0008f067a5502a4262b50040750001"));
    }

    #[test]
    fn v2_long_header_types_are_v1_types_moved_up_by_one() {
        // RFC 9369 §3.2: Initial 0b01, 0-RTT 0b10, Handshake 0b11, Retry 0b00.
        for (ty, v1_bits, v2_bits) in [
            (PacketType::Initial, 0b00, 0b01),
            (PacketType::ZeroRtt, 0b01, 0b10),
            (PacketType::Handshake, 0b10, 0b11),
        ] {
            assert_eq!(long_type_bits(QUIC_V1, ty), v1_bits, "{ty:?}");
            assert_eq!(long_type_bits(QUIC_V2, ty), v2_bits, "{ty:?}");
            assert_eq!(long_packet_type(QUIC_V2, v2_bits), Ok(ty));
        }
        assert_eq!(
            long_packet_type(QUIC_V2, QUIC_V2_RETRY_TYPE),
            Err(WireError::UnsupportedPacketType(QUIC_V2_RETRY_TYPE))
        );
        assert_eq!(
            long_packet_type(QUIC_V1, QUIC_RETRY_TYPE),
            Err(WireError::UnsupportedPacketType(QUIC_RETRY_TYPE))
        );
    }

    fn hex(text: &str) -> Vec<u8> {
        (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn packets_shorter_than_a_sample_are_refused() {
        let mut out = Vec::new();
        encode_quic_header(&header(PacketType::OneRtt, 1), 1, 0, &mut out);
        out.resize(out.len() + 18, 0); // one byte short of pn offset + 20
        assert_eq!(
            parse_quic_header(&out, QUIC_V1, 8),
            Err(WireError::InvalidHeader(
                "packet too short for a header protection sample"
            ))
        );
        out.push(0);
        assert!(parse_quic_header(&out, QUIC_V1, 8).is_ok());
    }

    #[test]
    fn a_long_header_of_another_version_is_named() {
        let mut out = Vec::new();
        let other = Header {
            version: 0x5346_0001,
            ..header(PacketType::Handshake, 0)
        };
        encode_quic_header(&other, 1, 40, &mut out);
        out.resize(out.len() + 40, 0);
        assert_eq!(
            parse_quic_header(&out, QUIC_V1, 8),
            Err(WireError::UnsupportedVersion(0x5346_0001))
        );
    }

    #[test]
    fn a_packet_with_its_fixed_bit_clear_or_a_connection_id_over_twenty_bytes_is_refused() {
        // RFC 9000 §17.2, §17.3.1: version 1 packets have the fixed bit
        // set; §17.2: a version 1 long header's IDs are at most 20 bytes.
        for ty in [
            PacketType::Initial,
            PacketType::Handshake,
            PacketType::OneRtt,
        ] {
            let mut out = Vec::new();
            encode_quic_header(&header(ty, 1), 2, 40, &mut out);
            out.resize(out.len() + 40, 0);
            assert!(parse_quic_header(&out, QUIC_V1, 8).is_ok(), "{ty:?}");
            out[0] &= !FIXED_BIT;
            assert_eq!(
                parse_quic_header(&out, QUIC_V1, 8),
                Err(WireError::InvalidHeader("fixed bit is clear")),
                "{ty:?}"
            );
        }
        for (dcid_len, scid_len) in [(21, 0), (8, 21)] {
            let mut out = vec![0xe0];
            out.extend_from_slice(&QUIC_V1.to_be_bytes());
            for len in [dcid_len, scid_len] {
                out.push(len as u8);
                out.extend(std::iter::repeat_n(0x11, len));
            }
            out.extend_from_slice(&[0x40, 40]);
            out.resize(out.len() + 40, 0);
            assert_eq!(
                parse_quic_header(&out, QUIC_V1, 8),
                Err(WireError::ConnectionIdTooLong(21))
            );
        }
    }

    #[test]
    fn the_spin_bit_is_never_set_and_never_read() {
        // RFC 9000 §17.4: sift does not spin. It sends the bit as 0 and
        // reads a packet the same whatever the peer put there.
        const SPIN_BIT: u8 = 0x20;
        let mut out = Vec::new();
        encode_quic_header(&header(PacketType::OneRtt, 7), 2, 40, &mut out);
        assert_eq!(out[0] & SPIN_BIT, 0);
        out.resize(out.len() + 40, 0);
        fn read(bytes: &[u8]) -> (ParsedHeader<'_>, bool) {
            let mut parsed = parse_quic_header(bytes, QUIC_V1, 8).unwrap();
            let at = parsed.header_len;
            let clear = reveal_packet_number(&mut parsed, bytes[0], &bytes[at..at + 4]);
            (parsed, clear)
        }
        let plain = read(&out).0.without_token();
        out[0] |= SPIN_BIT;
        let spun = read(&out);
        assert_eq!(plain, spun.0.without_token());
        assert!(spun.1, "the spin bit is no reserved bit");
    }

    proptest! {
        #[test]
        fn headers_round_trip_through_parse_and_reveal(
            version in prop_oneof![Just(QUIC_V1), Just(QUIC_V2)],
            ty in prop_oneof![
                Just(PacketType::Initial),
                Just(PacketType::ZeroRtt),
                Just(PacketType::Handshake),
                Just(PacketType::OneRtt)
            ],
            packet_number in 0u64..(1 << 32),
            pn_len in 1usize..=4,
            payload_len in 20usize..2000,
            key_phase in any::<bool>(),
            trailing in proptest::collection::vec(any::<u8>(), 0..30),
        ) {
            let header = Header { key_phase, version, ..header(ty, packet_number) };
            let mut datagram = Vec::new();
            encode_quic_header(&header, pn_len, payload_len, &mut datagram);
            prop_assert_eq!(datagram.len(), quic_header_len(&header, pn_len, payload_len));
            datagram.resize(datagram.len() + payload_len, 0x5a);
            let packet_len = datagram.len();
            if ty.is_long() {
                // A following coalesced packet does not change the parse.
                datagram.extend_from_slice(&trailing);
            }
            let mut parsed = parse_quic_header(&datagram, version, 8).expect("ours parses");
            prop_assert_eq!(parsed.ty, ty);
            prop_assert_eq!(parsed.dcid, header.dcid);
            prop_assert_eq!(parsed.packet_len, packet_len);
            let pn_offset = parsed.header_len;
            let first = datagram[0];
            let reserved_clear =
                reveal_packet_number(&mut parsed, first, &datagram[pn_offset..pn_offset + 4]);
            prop_assert!(reserved_clear);
            prop_assert_eq!(parsed.pn_len, pn_len);
            prop_assert_eq!(parsed.header_len, packet_len - payload_len);
            prop_assert_eq!(parsed.payload_len, payload_len);
            prop_assert_eq!(parsed.key_phase, !ty.is_long() && key_phase);
            let mask = (1u64 << (8 * pn_len)) - 1;
            prop_assert_eq!(u64::from(parsed.truncated_pn), packet_number & mask);
        }

        #[test]
        fn parse_never_panics_on_arbitrary_bytes(
            bytes in proptest::collection::vec(any::<u8>(), 0..80)
        ) {
            if let Ok(mut parsed) = parse_quic_header(&bytes, QUIC_V1, 8) {
                prop_assert!(parsed.packet_len <= bytes.len());
                let at = parsed.header_len;
                let first = bytes[0];
                reveal_packet_number(&mut parsed, first, &bytes[at..at + 4]);
                prop_assert!(parsed.header_len + parsed.payload_len == parsed.packet_len);
            }
        }
    }
}
