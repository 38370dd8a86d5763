//! `header`: [`parse_header`] on arbitrary bytes.
//!
//! Invariants: parsing never panics; a parsed packet lies inside the input;
//! [`header_region_len`] agrees with the parse; re-encoding the parsed fields
//! with [`Header::encode`] gives the same bytes (up to non-minimal varints,
//! the only freedom the layout has) and parses back to the same fields.

use sift::crypto::{seal_packet, NullProtection};
use sift::wire::{
    header_region_len, parse_header, ConnectionId, Header, PacketType, ParsedHeader,
    HEADER_TAG_LEN, SHORT_HEADER_DCID_LEN, VERSION,
};

use super::Seed;

/// Parses `data` and checks the round trip.
pub fn run(data: &[u8]) {
    let Ok(parsed) = parse_header(data) else {
        assert_eq!(
            header_region_len(data),
            None,
            "header_region_len found a header that parse_header rejects"
        );
        return;
    };
    check_layout(data, &parsed);
    check_reencoding(data, &parsed);
}

/// The lengths the parse reports describe a packet inside `data`.
fn check_layout(data: &[u8], parsed: &ParsedHeader<'_>) {
    assert_eq!(
        parsed.packet_len,
        parsed.header_len + HEADER_TAG_LEN + parsed.payload_len,
        "packet_len is header, tag and payload"
    );
    assert!(
        parsed.packet_len <= data.len(),
        "packet of {} bytes parsed from {} bytes",
        parsed.packet_len,
        data.len()
    );
    assert_eq!(
        header_region_len(data),
        Some(parsed.header_len + HEADER_TAG_LEN)
    );
    match parsed.ty {
        PacketType::OneRtt => {
            assert_eq!(parsed.dcid.len(), SHORT_HEADER_DCID_LEN);
            assert!(parsed.scid.is_empty() && parsed.token.is_empty());
            assert_eq!(parsed.version, VERSION);
        }
        PacketType::ZeroRtt | PacketType::Handshake => {
            assert!(parsed.token.is_empty() && !parsed.key_phase);
        }
        PacketType::Initial => assert!(!parsed.key_phase),
    }
    // The token borrows from the header bytes.
    if !parsed.token.is_empty() {
        let start = data.as_ptr() as usize;
        let token_at = parsed.token.as_ptr() as usize;
        assert!(token_at >= start && token_at + parsed.token.len() <= start + parsed.header_len);
    }
}

/// Encodes the parsed fields again and parses the result.
fn check_reencoding(data: &[u8], parsed: &ParsedHeader<'_>) {
    let header = Header {
        ty: parsed.ty,
        version: parsed.version,
        dcid: parsed.dcid,
        scid: parsed.scid,
        token: parsed.token,
        // Only the low 32 bits are on the wire; the rest is not encoded.
        packet_number: u64::from(parsed.truncated_pn),
        payload_len: parsed.payload_len,
        key_phase: parsed.key_phase,
    };
    let mut encoded = Vec::new();
    header.encode(&mut encoded);
    assert_eq!(encoded.len(), header.encoded_len());
    // Flags, version, CID lengths and the packet number have one encoding
    // each; token_len and payload_len are varints the peer may have padded.
    // So the canonical encoding is never longer, and identical when as long.
    assert!(
        encoded.len() <= parsed.header_len,
        "re-encoded header of {} bytes is longer than the {} parsed",
        encoded.len(),
        parsed.header_len
    );
    let original = data
        .get(..parsed.header_len)
        .expect("header lies inside the input");
    if encoded.len() == parsed.header_len {
        assert_eq!(encoded, original, "same length, different bytes");
    }

    // The tag and payload of the original, behind the canonical header, make
    // a packet that parses to the same fields.
    let rest = data
        .get(parsed.header_len..parsed.packet_len)
        .expect("packet lies inside the input");
    encoded.extend_from_slice(rest);
    let reparsed = parse_header(&encoded).expect("a re-encoded header parses");
    assert_eq!(
        reparsed,
        ParsedHeader {
            token: reparsed.token,
            header_len: header.encoded_len(),
            packet_len: encoded.len(),
            ..*parsed
        }
    );
    assert_eq!(reparsed.token, parsed.token);
}

fn cid(bytes: &[u8]) -> ConnectionId {
    ConnectionId::new(bytes).expect("seed connection IDs are at most 20 bytes")
}

fn sealed(header: &Header<'_>, frames: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    seal_packet(header, frames, &NullProtection, &mut out).expect("Null seals any packet");
    out
}

/// Valid packets of every type, sealed with Null protection.
pub fn seeds() -> Vec<Seed> {
    let one_rtt = Header {
        ty: PacketType::OneRtt,
        version: VERSION,
        dcid: cid(&[0x11; SHORT_HEADER_DCID_LEN]),
        scid: ConnectionId::EMPTY,
        token: &[],
        packet_number: 7,
        payload_len: 0,
        key_phase: false,
    };
    let initial = Header {
        ty: PacketType::Initial,
        dcid: cid(&[0xd1, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8]),
        scid: cid(&[0x5c, 0x5d, 0x5e, 0x5f]),
        packet_number: 0,
        ..one_rtt
    };
    let handshake = Header {
        ty: PacketType::Handshake,
        packet_number: 1,
        ..initial
    };
    // PING, then a CRYPTO frame at offset 0 with 5 bytes.
    let frames: &[u8] = &[0x01, 0x06, 0x00, 0x05, b'h', b'e', b'l', b'l', b'o'];
    let mut coalesced = sealed(&initial, frames);
    coalesced.extend_from_slice(&sealed(&handshake, frames));
    coalesced.extend_from_slice(&sealed(&one_rtt, frames));
    vec![
        Seed::new("initial", sealed(&initial, frames)),
        Seed::new(
            "initial-with-token",
            sealed(
                &Header {
                    token: b"retry-token",
                    ..initial
                },
                frames,
            ),
        ),
        Seed::new(
            "initial-max-cids",
            sealed(
                &Header {
                    dcid: cid(&[0xaa; 20]),
                    scid: cid(&[0xbb; 20]),
                    ..initial
                },
                frames,
            ),
        ),
        Seed::new(
            "initial-empty-cids",
            sealed(
                &Header {
                    dcid: ConnectionId::EMPTY,
                    scid: ConnectionId::EMPTY,
                    ..initial
                },
                &[],
            ),
        ),
        Seed::new("handshake", sealed(&handshake, frames)),
        Seed::new("one-rtt", sealed(&one_rtt, frames)),
        Seed::new(
            "one-rtt-key-phase",
            sealed(
                &Header {
                    key_phase: true,
                    packet_number: 0x1_2345_6789,
                    ..one_rtt
                },
                frames,
            ),
        ),
        // 100 bytes of frames: payload_len takes a two-byte varint.
        Seed::new("one-rtt-long-payload", sealed(&one_rtt, &[0x01; 100])),
        Seed::new("coalesced", coalesced),
    ]
}
