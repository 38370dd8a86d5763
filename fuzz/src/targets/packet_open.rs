//! `packet_open`: how a corrupted packet is classified. A valid packet is
//! sealed with [`seal_packet`] and [`NullProtection`] from fuzzer-chosen
//! header fields and frames, bits chosen by the fuzzer are flipped, and the
//! damaged packet goes through `parse_header` → [`open_packet`].
//!
//! What is provable, and so asserted:
//! - The outcome equals an independent model of Null protection (DESIGN §3:
//!   header tag = CRC32C(header) big-endian then four zero bytes, payload
//!   tag = CRC32C over everything before it), computed with a bitwise CRC32C
//!   written here rather than the library's.
//! - Nothing changed (flips that cancel out included): the packet opens to
//!   its frames.
//! - Only payload bits changed: never `HeaderCorrupt`, never a parse error;
//!   `PayloadCorrupt` whenever the error is detectable, else at worst a CRC
//!   collision that opens.
//! - Only header-region bits changed and the header still parses to the same
//!   layout: `HeaderCorrupt` whenever the error is detectable. If the layout
//!   changed (a length byte was hit), only the model is asserted: a shifted
//!   header tag can match by chance, with probability 2^-32.
//!
//! "Detectable" is what CRC32C guarantees for codewords shorter than 2^31
//! bits: every error of 1 to 3 bits (Hamming distance 4; Koopman 2002,
//! "32-Bit Cyclic Redundancy Codes for Internet Applications", Table 1,
//! CRC-32C 0x8F6E37A0) and every error of an odd number of bits (the
//! Castagnoli polynomial has the factor x + 1: it has an even number of
//! terms). Storing the CRC big-endian permutes the tag's bits but not their
//! count, so both guarantees carry over. An even number of four or more
//! changed bits can collide; the fuzzer may find one, and that is allowed.

use sift::crypto::{open_packet, seal_packet, NullProtection, OpenError, PacketProtection};
use sift::wire::{
    decode_packet_number, parse_header, ConnectionId, Header, PacketType, HEADER_TAG_LEN,
    MAX_CID_LEN, SHORT_HEADER_DCID_LEN, VARINT_MAX, VERSION,
};

use super::Seed;

/// Bytes of the Null payload tag (one CRC32C).
const PAYLOAD_TAG_LEN: usize = 4;
/// Bytes of the header tag that hold the CRC32C; the rest must be zero.
const HEADER_CRC_LEN: usize = 4;
/// Most bit flips one input asks for.
const MAX_FLIPS: usize = 16;
/// CRC-32C (Castagnoli), reflected: the polynomial 0x1EDC6F41 bit-reversed.
const CRC32C_REFLECTED_POLY: u32 = 0x82F6_3B78;

/// Where one bit flip lands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flip {
    /// Byte offset modulo the packet length; with bit 15 set, counted from
    /// the packet's last byte instead of its first, so the fuzzer reaches the
    /// payload tag of long packets as easily as the header.
    pub position: u16,
    /// Which bit of that byte (low three bits).
    pub bit: u8,
}

impl Flip {
    const FROM_END: u16 = 0x8000;

    /// The byte this flip lands on in a packet of `packet_len` bytes.
    pub fn byte_index(self, packet_len: usize) -> usize {
        let offset = usize::from(self.position & !Self::FROM_END) % packet_len;
        if self.position & Self::FROM_END != 0 {
            packet_len - 1 - offset
        } else {
            offset
        }
    }

    /// The bit it flips.
    pub fn mask(self) -> u8 {
        1 << (self.bit & 7)
    }
}

/// A packet to seal and the flips to apply to it.
///
/// Input layout (bytes past the end read as zero, so every input is valid):
/// `kind(1) packet_number(8, big-endian) dcid_len(1) scid_len(1)
/// token_len(1) flip_count(1) flips(3 each: position(2, big-endian) bit(1))
/// dcid scid token frames(rest)`. `kind`: bits 0-1 the type (0 Initial,
/// 1 Handshake, 2 and 3 1-RTT), bit 2 the key phase.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input {
    pub ty: PacketType,
    pub key_phase: bool,
    /// Below 2^62.
    pub packet_number: u64,
    /// Exactly 8 bytes for 1-RTT, at most 20 otherwise.
    pub dcid: Vec<u8>,
    /// At most 20 bytes; not sent in 1-RTT.
    pub scid: Vec<u8>,
    /// Sent in Initial only.
    pub token: Vec<u8>,
    /// At most [`MAX_FLIPS`].
    pub flips: Vec<Flip>,
    /// The plaintext payload (the target does not parse it).
    pub frames: Vec<u8>,
}

/// Reads the input layout; missing bytes are zero.
struct Bytes<'a> {
    rest: &'a [u8],
}

impl<'a> Bytes<'a> {
    fn take(&mut self, n: usize) -> &'a [u8] {
        let (taken, rest) = self.rest.split_at(n.min(self.rest.len()));
        self.rest = rest;
        taken
    }

    fn fixed<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        let taken = self.take(N);
        out[..taken.len()].copy_from_slice(taken);
        out
    }

    fn u8(&mut self) -> u8 {
        self.fixed::<1>()[0]
    }
}

impl Input {
    /// Reads an input in the documented layout.
    pub fn decode(data: &[u8]) -> Self {
        let mut bytes = Bytes { rest: data };
        let kind = bytes.u8();
        let ty = match kind & 0b11 {
            0 => PacketType::Initial,
            1 => PacketType::Handshake,
            2 => PacketType::OneRtt,
            _ => PacketType::ZeroRtt,
        };
        let packet_number = u64::from_be_bytes(bytes.fixed()) & VARINT_MAX;
        let dcid_len = if ty == PacketType::OneRtt {
            bytes.u8();
            SHORT_HEADER_DCID_LEN
        } else {
            usize::from(bytes.u8()) % (MAX_CID_LEN + 1)
        };
        let scid_len = usize::from(bytes.u8()) % (MAX_CID_LEN + 1);
        let token_len = usize::from(bytes.u8());
        let flip_count = usize::from(bytes.u8()) % (MAX_FLIPS + 1);
        let flips = (0..flip_count)
            .map(|_| Flip {
                position: u16::from_be_bytes(bytes.fixed()),
                bit: bytes.u8() & 7,
            })
            .collect();
        let mut dcid = bytes.take(dcid_len).to_vec();
        dcid.resize(dcid_len, 0);
        let scid = bytes.take(scid_len).to_vec();
        let token = bytes.take(token_len).to_vec();
        Input {
            ty,
            key_phase: kind & 0b100 != 0,
            packet_number,
            dcid,
            scid,
            token,
            flips,
            frames: bytes.rest.to_vec(),
        }
    }

    /// The bytes [`Input::decode`] reads back as `self` (for seeds). Fields
    /// must respect the documented bounds.
    pub fn encode(&self) -> Vec<u8> {
        let ty_bits = match self.ty {
            PacketType::Initial => 0,
            PacketType::Handshake => 1,
            PacketType::OneRtt => 2,
            PacketType::ZeroRtt => 3,
        };
        let mut out = vec![ty_bits | (u8::from(self.key_phase) << 2)];
        out.extend_from_slice(&self.packet_number.to_be_bytes());
        for field in [&self.dcid, &self.scid, &self.token] {
            out.push(u8::try_from(field.len()).expect("fields fit a length byte"));
        }
        out.push(u8::try_from(self.flips.len()).expect("at most 16 flips"));
        for flip in &self.flips {
            out.extend_from_slice(&flip.position.to_be_bytes());
            out.push(flip.bit);
        }
        for field in [&self.dcid, &self.scid, &self.token, &self.frames] {
            out.extend_from_slice(field);
        }
        out
    }

    /// The header to seal.
    pub fn header(&self) -> Header<'_> {
        Header {
            ty: self.ty,
            version: VERSION,
            dcid: ConnectionId::new(&self.dcid).expect("decode bounds the length"),
            scid: if self.ty == PacketType::OneRtt {
                ConnectionId::EMPTY
            } else {
                ConnectionId::new(&self.scid).expect("decode bounds the length")
            },
            token: &self.token,
            packet_number: self.packet_number,
            payload_len: 0,
            key_phase: self.key_phase,
        }
    }
}

/// What happened to a received packet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Both tags verified; the frames.
    Opened(Vec<u8>),
    /// `parse_header` rejected the bytes.
    Unparsable,
    /// The header tag did not verify.
    HeaderCorrupt,
    /// The header verified, the payload tag did not.
    PayloadCorrupt,
    /// The header verified but the packet has not the shape it describes.
    Malformed,
}

/// Seals the input's packet, flips its bits, opens it, and checks the
/// outcome.
pub fn run(data: &[u8]) {
    let input = Input::decode(data);
    let header = input.header();
    let mut packet = Vec::new();
    seal_packet(&header, &input.frames, &NullProtection, &mut packet)
        .expect("Null seals any packet");
    let sealed = parse_header(&packet).expect("a sealed packet parses");
    assert_eq!(sealed.packet_len, packet.len());

    let mut damaged = packet.clone();
    for flip in &input.flips {
        damaged[flip.byte_index(packet.len())] ^= flip.mask();
    }
    let diff = Diff::new(&packet, &damaged, sealed.header_len);

    let outcome = receive(&damaged, input.packet_number);
    assert_eq!(
        outcome,
        model(&damaged),
        "open_packet disagrees with the Null protection model ({diff:?})"
    );

    if diff.total() == 0 {
        assert_eq!(outcome, Outcome::Opened(input.frames));
    } else if diff.header_region() == 0 {
        // The header and its tag are intact, so it parses and verifies.
        if detectable(diff.payload) {
            assert_eq!(outcome, Outcome::PayloadCorrupt, "{diff:?}");
        } else {
            assert!(
                matches!(outcome, Outcome::PayloadCorrupt | Outcome::Opened(_)),
                "{outcome:?} after {diff:?}"
            );
        }
    } else if diff.payload == 0 {
        let same_layout = parse_header(&damaged).is_ok_and(|parsed| {
            parsed.header_len == sealed.header_len && parsed.payload_len == sealed.payload_len
        });
        if same_layout && (diff.header_tag_padding > 0 || detectable(diff.header_codeword())) {
            assert_eq!(outcome, Outcome::HeaderCorrupt, "{diff:?}");
        }
    }
}

/// Bits that differ between the sealed and the damaged packet, by region.
#[derive(Clone, Copy, Debug, Default)]
struct Diff {
    /// Header bytes before the tag.
    header: u32,
    /// The header tag's CRC bytes.
    header_crc: u32,
    /// The header tag's zero bytes.
    header_tag_padding: u32,
    /// Frames and payload tag.
    payload: u32,
}

impl Diff {
    fn new(sealed: &[u8], damaged: &[u8], header_len: usize) -> Self {
        let mut diff = Diff::default();
        for (index, (a, b)) in sealed.iter().zip(damaged).enumerate() {
            let bits = (a ^ b).count_ones();
            let region = if index < header_len {
                &mut diff.header
            } else if index < header_len + HEADER_CRC_LEN {
                &mut diff.header_crc
            } else if index < header_len + HEADER_TAG_LEN {
                &mut diff.header_tag_padding
            } else {
                &mut diff.payload
            };
            *region += bits;
        }
        diff
    }

    /// Bits changed in what the header CRC protects, itself included.
    fn header_codeword(&self) -> u32 {
        self.header + self.header_crc
    }

    fn header_region(&self) -> u32 {
        self.header_codeword() + self.header_tag_padding
    }

    fn total(&self) -> u32 {
        self.header_region() + self.payload
    }
}

/// CRC32C is guaranteed to catch an error of this many bits (module docs).
fn detectable(changed_bits: u32) -> bool {
    (1..=3).contains(&changed_bits) || changed_bits % 2 == 1
}

/// What a receiver does: parse, recover the packet number against the one
/// before the sealed packet's, open.
fn receive(datagram: &[u8], sealed_packet_number: u64) -> Outcome {
    receive_with(datagram, sealed_packet_number, &NullProtection)
}

/// [`receive`] under any keys.
pub fn receive_with(
    datagram: &[u8],
    sealed_packet_number: u64,
    keys: &dyn PacketProtection,
) -> Outcome {
    let mut buffer = datagram.to_vec();
    let Ok(parsed) = parse_header(&buffer) else {
        return Outcome::Unparsable;
    };
    let parsed = parsed.without_token();
    let packet_number =
        decode_packet_number(sealed_packet_number.checked_sub(1), parsed.truncated_pn);
    match open_packet(&parsed, packet_number, &mut buffer, keys) {
        Ok(frames) => Outcome::Opened(frames.to_vec()),
        Err(OpenError::HeaderCorrupt) => Outcome::HeaderCorrupt,
        Err(OpenError::PayloadCorrupt) => Outcome::PayloadCorrupt,
        // Only QUIC v1 has reserved bits to check; sift/1's are in its tag.
        Err(OpenError::Malformed(_) | OpenError::ReservedBitsSet) => Outcome::Malformed,
    }
}

/// Null protection as DESIGN §3 specifies it, on the first packet of
/// `datagram`.
fn model(datagram: &[u8]) -> Outcome {
    let Ok(parsed) = parse_header(datagram) else {
        return Outcome::Unparsable;
    };
    let tag_end = parsed.header_len + HEADER_TAG_LEN;
    let (Some(header), Some(header_tag)) = (
        datagram.get(..parsed.header_len),
        datagram.get(parsed.header_len..tag_end),
    ) else {
        panic!("parse_header accepted a header longer than the datagram");
    };
    let mut expected_header_tag = crc32c(header).to_be_bytes().to_vec();
    expected_header_tag.resize(HEADER_TAG_LEN, 0);
    if header_tag != expected_header_tag {
        return Outcome::HeaderCorrupt;
    }
    if parsed.payload_len < PAYLOAD_TAG_LEN {
        return Outcome::Malformed;
    }
    let covered_end = parsed.packet_len - PAYLOAD_TAG_LEN;
    let (Some(covered), Some(payload_tag)) = (
        datagram.get(..covered_end),
        datagram.get(covered_end..parsed.packet_len),
    ) else {
        panic!("parse_header accepted a packet longer than the datagram");
    };
    if payload_tag != crc32c(covered).to_be_bytes() {
        return Outcome::PayloadCorrupt;
    }
    Outcome::Opened(
        datagram
            .get(tag_end..covered_end)
            .expect("frames lie between the tags")
            .to_vec(),
    )
}

/// CRC-32C (RFC 3720 §B.4), one bit at a time: slow, short, and independent
/// of the library sift uses.
fn crc32c(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for byte in bytes {
        crc ^= u32::from(*byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ CRC32C_REFLECTED_POLY
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// Packets of every type with no flips, and flips aimed at each region.
pub fn seeds() -> Vec<Seed> {
    // ACK of 0..=2, then a STREAM frame (OFF and LEN bits) with 4 bytes.
    let frames = vec![
        0x02, 0x02, 0x00, 0x00, 0x02, 0x0e, 0x00, 0x00, 0x04, b'd', b'a', b't', b'a',
    ];
    let one_rtt = Input {
        ty: PacketType::OneRtt,
        key_phase: false,
        packet_number: 41,
        dcid: vec![0x11; SHORT_HEADER_DCID_LEN],
        scid: Vec::new(),
        token: Vec::new(),
        flips: Vec::new(),
        frames,
    };
    let initial = Input {
        ty: PacketType::Initial,
        packet_number: 0,
        dcid: vec![0xd1, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8],
        scid: vec![0x5c, 0x5d, 0x5e, 0x5f],
        token: b"token".to_vec(),
        ..one_rtt.clone()
    };
    let handshake = Input {
        ty: PacketType::Handshake,
        packet_number: 3,
        token: Vec::new(),
        ..initial.clone()
    };
    let flip = |position, bit| Flip { position, bit };
    vec![
        Seed::new("initial-intact", initial.encode()),
        Seed::new("handshake-intact", handshake.encode()),
        Seed::new("one-rtt-intact", one_rtt.encode()),
        Seed::new(
            "one-rtt-key-phase-intact",
            Input {
                key_phase: true,
                packet_number: 0x3fff_ffff_ffff_ffff,
                ..one_rtt.clone()
            }
            .encode(),
        ),
        // Byte 10: inside the packet number (flags 1, dcid 8).
        Seed::new(
            "one-rtt-packet-number-flip",
            Input {
                flips: vec![flip(10, 0)],
                ..one_rtt.clone()
            }
            .encode(),
        ),
        // The last byte: the payload tag.
        Seed::new(
            "one-rtt-payload-tag-flip",
            Input {
                flips: vec![flip(Flip::FROM_END, 7)],
                ..one_rtt.clone()
            }
            .encode(),
        ),
        // Three flips in the frames, counted from the end.
        Seed::new(
            "handshake-three-payload-flips",
            Input {
                flips: vec![
                    flip(Flip::FROM_END | 5, 1),
                    flip(Flip::FROM_END | 6, 2),
                    flip(Flip::FROM_END | 9, 3),
                ],
                ..handshake.clone()
            }
            .encode(),
        ),
        // Byte 5: the dcid length, which moves everything after it.
        Seed::new(
            "initial-cid-length-flip",
            Input {
                flips: vec![flip(5, 0)],
                ..initial.clone()
            }
            .encode(),
        ),
        // Two flips that cancel: the packet is unchanged.
        Seed::new(
            "initial-cancelling-flips",
            Input {
                flips: vec![flip(20, 4), flip(20, 4)],
                ..initial.clone()
            }
            .encode(),
        ),
        // Header and payload both hit.
        Seed::new(
            "handshake-both-regions",
            Input {
                flips: vec![flip(2, 2), flip(Flip::FROM_END | 2, 0)],
                ..handshake
            }
            .encode(),
        ),
    ]
}
