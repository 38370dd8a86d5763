//! Whole-packet seal and open: header, header tag, frames, payload tag.
//!
//! Opening checks the header tag first and the payload tag second. That order
//! is the point of sift (HACK, Balan et al.): a packet whose header verifies
//! but whose payload does not has a trustworthy packet number, so the
//! receiver can name it in a CORRUPTED frame instead of staying silent.

use std::ops::Range;

use super::{CryptoError, PacketProtection};
use crate::wire::{
    varint_len, ConnectionId, Header, PacketType, ParsedHeader, WireError, HEADER_TAG_LEN, VERSION,
};

/// Why a received packet could not be opened, in the order the checks run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    /// The header tag does not match: nothing in the packet can be trusted,
    /// not even its packet number. Drop it silently.
    #[error("header tag does not match")]
    HeaderCorrupt,
    /// The header verified, the payload did not: the packet number is
    /// trustworthy and the packet may be named in a CORRUPTED frame.
    #[error("payload tag does not match")]
    PayloadCorrupt,
    /// The packet does not have the shape its (verified) header describes.
    #[error("malformed packet: {0}")]
    Malformed(#[from] WireError),
    /// A QUIC v1 packet that authenticated with reserved header bits set
    /// (RFC 9000 §17.2: a PROTOCOL_VIOLATION).
    #[error("reserved header bits set")]
    ReservedBitsSet,
}

/// Appends header, header tag, frames and payload tag to `out` (which may
/// already hold earlier coalesced packets), sealing in place: `out` grows by
/// exactly [`sealed_len`] bytes and nothing else is allocated. Sets
/// `payload_len` itself (frames.len() + tag length); `header.payload_len` is
/// ignored. On error `out` is left as it was.
pub fn seal_packet(
    header: &Header<'_>,
    frames: &[u8],
    protection: &dyn PacketProtection,
    out: &mut Vec<u8>,
) -> Result<(), CryptoError> {
    let tag_len = protection.payload_tag_len();
    let header = Header {
        payload_len: frames.len() + tag_len,
        ..*header
    };
    let start = out.len();
    out.reserve(sealed_len(&header, frames.len(), protection));
    header.encode(out);
    let tag = protection.header_tag(header.packet_number, &out[start..]);
    out.extend_from_slice(&tag);
    let header_len = out.len() - start;
    out.extend_from_slice(frames);
    out.resize(out.len() + tag_len, 0);
    let sealed = protection.seal_payload(header.packet_number, header_len, &mut out[start..]);
    if sealed.is_err() {
        out.truncate(start);
    }
    sealed
}

/// As [`seal_packet`], but straight into `out` (the unused rest of a
/// datagram, which may be a slice of the driver's send batch), so the sealed
/// packet is never copied. `header_scratch` holds the header's bytes while
/// they are tagged; reused, it allocates nothing. Returns the bytes written,
/// exactly [`sealed_len`]; `out` too small to hold them is a
/// [`CryptoError::SealFailed`] with nothing written.
pub fn seal_packet_into(
    header: &Header<'_>,
    frames: &[u8],
    protection: &dyn PacketProtection,
    header_scratch: &mut Vec<u8>,
    out: &mut [u8],
) -> Result<usize, CryptoError> {
    let tag_len = protection.payload_tag_len();
    let header = Header {
        payload_len: frames.len() + tag_len,
        ..*header
    };
    header_scratch.clear();
    header.encode(header_scratch);
    let header_len = header_scratch.len() + HEADER_TAG_LEN;
    let len = header_len + frames.len() + tag_len;
    let packet = out.get_mut(..len).ok_or(CryptoError::SealFailed {
        packet_number: header.packet_number,
    })?;
    let tag = protection.header_tag(header.packet_number, header_scratch);
    let (head, body) = packet.split_at_mut(header_len);
    head[..header_scratch.len()].copy_from_slice(header_scratch);
    head[header_scratch.len()..].copy_from_slice(&tag);
    body[..frames.len()].copy_from_slice(frames);
    protection.seal_payload(header.packet_number, header_len, packet)?;
    Ok(len)
}

/// Exact bytes [`seal_packet`] appends for `frames_len` bytes of frames (the
/// payload_len varint grows with the size).
pub fn sealed_len(
    header: &Header<'_>,
    frames_len: usize,
    protection: &dyn PacketProtection,
) -> usize {
    let payload_len = frames_len + protection.payload_tag_len();
    let header = Header {
        payload_len,
        ..*header
    };
    header.encoded_len() + HEADER_TAG_LEN + payload_len
}

/// The packet `parsed` describes at the start of `packet`, or the error for
/// a buffer shorter than it.
pub(crate) fn whole_packet<'a>(
    parsed: &ParsedHeader<'_>,
    packet: &'a mut [u8],
) -> Result<&'a mut [u8], WireError> {
    let remaining = packet.len();
    packet
        .get_mut(..parsed.packet_len)
        .ok_or(WireError::UnexpectedEnd {
            needed: parsed.packet_len,
            remaining,
        })
}

/// Checks the header tag, then the payload tag, of the packet `parsed`
/// describes (it occupies `packet[..parsed.packet_len]`); `packet_number` is
/// the full decoded number. On success returns the plaintext frames.
pub fn open_packet<'a>(
    parsed: &ParsedHeader<'_>,
    packet_number: u64,
    packet: &'a mut [u8],
    protection: &dyn PacketProtection,
) -> Result<&'a [u8], OpenError> {
    let packet = whole_packet(parsed, packet)?;
    let tag_end = parsed.header_len + HEADER_TAG_LEN;
    let (header, tag) = packet
        .get(..tag_end)
        .map(|region| region.split_at(parsed.header_len))
        .ok_or(WireError::UnexpectedEnd {
            needed: tag_end,
            remaining: packet.len(),
        })?;
    if !protection.verify_header_tag(packet_number, header, tag) {
        return Err(OpenError::HeaderCorrupt);
    }
    let tag_len = protection.payload_tag_len();
    if parsed.payload_len < tag_len {
        return Err(WireError::PayloadTooShort {
            payload_len: parsed.payload_len,
            tag_len,
        }
        .into());
    }
    let frames_len = protection
        .open_payload(packet_number, tag_end, packet)
        .map_err(|_| OpenError::PayloadCorrupt)?;
    // A protection that reports more plaintext than the packet holds is
    // treated like a failed check rather than trusted.
    let packet: &'a [u8] = packet;
    tag_end
        .checked_add(frames_len)
        .and_then(|frames_end| packet.get(tag_end..frames_end))
        .ok_or(OpenError::PayloadCorrupt)
}

/// Opens a 1-RTT packet whose header failed its tag by rebuilding the
/// header it would have if it were packet `packet_number` to `dcid` in key
/// phase `key_phase`, filling the rest of `packet` (the last packet of its
/// datagram, as 1-RTT packets are). The header of a 1-RTT packet is nearly
/// all known to its receiver, so damage confined to it need not cost the
/// packet: with the right guess the rebuilt header and its tag are the
/// sender's, and the payload tag, which covers them, verifies. A wrong guess,
/// a damaged payload, or a forgery fails that tag: the repair is as
/// authentic as any opened packet. Works on a copy in `scratch` (the
/// failed tag checks leave no trace in `packet`); on success returns where
/// the frames lie in `scratch`.
pub fn open_with_rebuilt_header(
    packet: &[u8],
    dcid: ConnectionId,
    packet_number: u64,
    key_phase: bool,
    protection: &dyn PacketProtection,
    scratch: &mut Vec<u8>,
) -> Option<Range<usize>> {
    let mut header = Header {
        ty: PacketType::OneRtt,
        version: VERSION,
        dcid,
        scid: ConnectionId::EMPTY,
        token: &[],
        packet_number,
        payload_len: 0,
        key_phase,
    };
    // payload_len is what follows the tag, and its varint's own size moves
    // where the tag ends: take the size that agrees with itself.
    let fixed = header.encoded_len() - varint_len(0) + HEADER_TAG_LEN;
    header.payload_len = [1, 2, 4, 8].into_iter().find_map(|varint| {
        let payload_len = packet.len().checked_sub(fixed + varint)?;
        (varint_len(payload_len as u64) == varint).then_some(payload_len)
    })?;
    if header.payload_len < protection.payload_tag_len() {
        return None;
    }
    scratch.clear();
    header.encode(scratch);
    let header_len = scratch.len();
    let tag = protection.peer_header_tag(packet_number, scratch);
    scratch.extend_from_slice(&tag);
    let tag_end = scratch.len();
    scratch.extend_from_slice(packet.get(tag_end..)?);
    let frames_len = protection
        .open_payload(packet_number, header_len + HEADER_TAG_LEN, scratch)
        .ok()?;
    let frames = tag_end..tag_end.checked_add(frames_len)?;
    scratch.get(frames.clone()).map(|_| frames)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::NullProtection;
    use crate::wire::{
        decode_packet_number, parse_header, ConnectionId, PacketType, SHORT_HEADER_DCID_LEN,
        VERSION,
    };
    use proptest::prelude::*;

    const FRAMES: &[u8] = &[0x01, 0x06, 0x00, 0x03, b'a', b'b', b'c'];

    fn short_header(packet_number: u64) -> Header<'static> {
        Header {
            ty: PacketType::OneRtt,
            version: VERSION,
            dcid: ConnectionId::new(&[0x5c; SHORT_HEADER_DCID_LEN]).expect("8 bytes"),
            scid: ConnectionId::EMPTY,
            token: &[],
            packet_number,
            payload_len: 0,
            key_phase: false,
        }
    }

    fn initial_header(packet_number: u64) -> Header<'static> {
        Header {
            ty: PacketType::Initial,
            scid: ConnectionId::new(&[0xc1, 0xc2, 0xc3]).expect("3 bytes"),
            token: b"tk",
            ..short_header(packet_number)
        }
    }

    fn sealed(header: &Header<'_>, frames: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        seal_packet(header, frames, &NullProtection, &mut out).expect("Null seals anything");
        out
    }

    /// What a receiver does with the first packet of a datagram: parse, decode
    /// the packet number against `largest_received`, open. Returns the frames
    /// and the packet's length.
    fn receive(
        datagram: &mut [u8],
        largest_received: Option<u64>,
    ) -> Result<(Vec<u8>, usize), OpenError> {
        let parsed = parse_header(datagram)?.without_token();
        let packet_number = decode_packet_number(largest_received, parsed.truncated_pn);
        let frames = open_packet(&parsed, packet_number, datagram, &NullProtection)?;
        Ok((frames.to_vec(), parsed.packet_len))
    }

    #[test]
    fn a_sealed_packet_opens_to_its_frames() {
        for header in [short_header(41), initial_header(41)] {
            let mut packet = sealed(&header, FRAMES);
            assert_eq!(
                packet.len(),
                sealed_len(&header, FRAMES.len(), &NullProtection)
            );
            assert_eq!(
                receive(&mut packet, Some(40)),
                Ok((FRAMES.to_vec(), packet.len()))
            );
        }
    }

    #[test]
    fn payload_len_counts_frames_and_payload_tag() {
        let packet = sealed(&short_header(1), FRAMES);
        let parsed = parse_header(&packet).expect("valid");
        // 7 bytes of frames + 4 bytes of CRC32C.
        assert_eq!(parsed.payload_len, 11);
        // flags 1 + dcid 8 + pn 4 + payload_len 1 = 14, tag 8, payload 11.
        assert_eq!(parsed.packet_len, 14 + 8 + 11);
    }

    #[test]
    fn sealing_into_a_slice_writes_what_sealing_into_a_vec_appends() {
        let tls = crate::crypto::tls::initial_protection(&[0x5c; 8], crate::Side::Client);
        for protection in [&NullProtection as &dyn PacketProtection, &tls] {
            let header = short_header(7);
            let mut expected = Vec::new();
            seal_packet(&header, FRAMES, protection, &mut expected).unwrap();
            let mut out = [0xeeu8; 200];
            let mut scratch = Vec::new();
            let len =
                seal_packet_into(&header, FRAMES, protection, &mut scratch, &mut out).unwrap();
            assert_eq!(&out[..len], &expected[..]);
            assert_eq!(out[len], 0xee, "nothing written past the packet");
            let mut small = vec![0u8; len - 1];
            assert!(
                seal_packet_into(&header, FRAMES, protection, &mut scratch, &mut small).is_err()
            );
        }
    }

    #[test]
    fn sealed_len_follows_the_payload_len_varint_growth() {
        let header = short_header(0);
        // 59 + 4 = 63 fits one varint byte; 60 + 4 = 64 needs two.
        assert_eq!(sealed_len(&header, 59, &NullProtection), 14 + 8 + 63);
        assert_eq!(sealed_len(&header, 60, &NullProtection), 15 + 8 + 64);
        for frames_len in [0, 59, 60, 16_379, 16_380] {
            let frames = vec![0u8; frames_len];
            assert_eq!(
                sealed(&header, &frames).len(),
                sealed_len(&header, frames_len, &NullProtection)
            );
        }
    }

    #[test]
    fn coalesced_packets_seal_and_open_in_sequence() {
        let mut datagram = Vec::new();
        seal_packet(&initial_header(0), b"\x01", &NullProtection, &mut datagram).unwrap();
        let first_len = datagram.len();
        seal_packet(&short_header(0), FRAMES, &NullProtection, &mut datagram).unwrap();
        assert_eq!(
            receive(&mut datagram, None),
            Ok((b"\x01".to_vec(), first_len))
        );
        assert_eq!(
            receive(&mut datagram[first_len..], None),
            Ok((FRAMES.to_vec(), datagram.len() - first_len))
        );
    }

    /// Bytes of the header region whose flips cannot change how the header
    /// parses (connection IDs, token, packet number, header tag, key phase):
    /// each must give exactly HeaderCorrupt.
    fn content_bit(header: &Header<'_>, byte: usize, bit: usize) -> bool {
        let header_len = header.encoded_len();
        let pn_start = header_len - 1 - 4; // payload_len is one byte here
        let in_pn_or_tag = (pn_start..pn_start + 4).contains(&byte) || byte >= header_len;
        match header.ty {
            // flags(1) dcid(8)
            PacketType::OneRtt => in_pn_or_tag || (1..9).contains(&byte) || (byte, bit) == (0, 0),
            // flags(1) version(4) dcid_len(1) dcid(8) scid_len(1) scid(3)
            // token_len(1) token(2)
            _ => {
                in_pn_or_tag
                    || (6..14).contains(&byte)
                    || (15..18).contains(&byte)
                    || (19..21).contains(&byte)
            }
        }
    }

    #[test]
    fn any_single_bit_flip_in_the_header_region_is_caught_before_the_payload() {
        for header in [short_header(0x0102_0304), initial_header(0x0102_0304)] {
            let packet = sealed(&header, FRAMES);
            let region = header.encoded_len() + HEADER_TAG_LEN;
            let mut header_corrupt = 0;
            for byte in 0..region {
                for bit in 0..8 {
                    let mut damaged = packet.clone();
                    damaged[byte] ^= 1 << bit;
                    let outcome = receive(&mut damaged, Some(0x0102_0303));
                    // Never accepted, never mistaken for payload corruption:
                    // either the header no longer parses or its tag fails.
                    match outcome {
                        Err(OpenError::HeaderCorrupt) => header_corrupt += 1,
                        Err(OpenError::Malformed(_)) => assert!(
                            !content_bit(&header, byte, bit),
                            "{:?}: flip of byte {byte} bit {bit} did not parse",
                            header.ty
                        ),
                        other => panic!(
                            "{:?}: flip of byte {byte} bit {bit} gave {other:?}",
                            header.ty
                        ),
                    }
                }
            }
            let content_bits = (0..region)
                .flat_map(|byte| (0..8).map(move |bit| (byte, bit)))
                .filter(|&(byte, bit)| content_bit(&header, byte, bit))
                .count();
            assert!(header_corrupt >= content_bits, "{:?}", header.ty);
        }
    }

    #[test]
    fn a_short_header_damaged_anywhere_is_rebuilt_when_its_number_is_guessed() {
        use crate::crypto::tls::initial_protection;
        use crate::Side;
        let (client, server) = (
            initial_protection(&[0x5c; 8], Side::Client),
            initial_protection(&[0x5c; 8], Side::Server),
        );
        let pairs: [(&dyn PacketProtection, &dyn PacketProtection); 2] =
            [(&NullProtection, &NullProtection), (&client, &server)];
        for (sealer, opener) in pairs {
            let header = short_header(0x0102_0304);
            let mut packet = Vec::new();
            seal_packet(&header, FRAMES, sealer, &mut packet).unwrap();
            let region = header.encoded_len() + HEADER_TAG_LEN;
            let mut scratch = Vec::new();
            let mut rebuild = |damaged: &[u8], packet_number| {
                open_with_rebuilt_header(
                    damaged,
                    header.dcid,
                    packet_number,
                    false,
                    opener,
                    &mut scratch,
                )
                .map(|frames| scratch[frames].to_vec())
            };
            // A whole byte wrong (a burst) in any field: flags, ID, packet
            // number, length or the header tag itself.
            for byte in 0..region {
                let mut damaged = packet.clone();
                damaged[byte] ^= 0xff;
                assert_eq!(
                    rebuild(&damaged, 0x0102_0304).as_deref(),
                    Some(FRAMES),
                    "byte {byte}"
                );
                // Another number's header is not this packet's.
                assert_eq!(rebuild(&damaged, 0x0102_0305), None, "byte {byte}");
            }
            // The payload damaged too: nothing to repair.
            let mut damaged = packet.clone();
            damaged[3] ^= 0x10;
            damaged[region + 1] ^= 0x01;
            assert_eq!(rebuild(&damaged, 0x0102_0304), None);
        }
    }

    #[test]
    fn any_single_bit_flip_in_the_payload_region_is_payload_corrupt() {
        for header in [short_header(7), initial_header(7)] {
            let packet = sealed(&header, FRAMES);
            let region = header.encoded_len() + HEADER_TAG_LEN;
            assert_eq!(packet.len() - region, FRAMES.len() + 4);
            for byte in region..packet.len() {
                for bit in 0..8 {
                    let mut damaged = packet.clone();
                    damaged[byte] ^= 1 << bit;
                    assert_eq!(
                        receive(&mut damaged, Some(6)),
                        Err(OpenError::PayloadCorrupt),
                        "{:?}: flip of byte {byte} bit {bit}",
                        header.ty
                    );
                }
            }
        }
    }

    #[test]
    fn payload_too_short_for_its_tag_is_malformed_once_the_header_verifies() {
        // A header announcing 2 payload bytes, with a valid header tag.
        let header = Header {
            payload_len: 2,
            ..short_header(3)
        };
        let mut packet = Vec::new();
        header.encode(&mut packet);
        let tag = NullProtection.header_tag(3, &packet);
        packet.extend_from_slice(&tag);
        packet.extend_from_slice(&[0, 0]);
        assert_eq!(
            receive(&mut packet, Some(2)),
            Err(OpenError::Malformed(WireError::PayloadTooShort {
                payload_len: 2,
                tag_len: 4
            }))
        );
    }

    #[test]
    fn packet_slice_shorter_than_the_parsed_packet_is_malformed() {
        let mut packet = sealed(&short_header(3), FRAMES);
        let parsed = parse_header(&packet).expect("valid").without_token();
        let short = packet.len() - 1;
        assert_eq!(
            open_packet(&parsed, 3, &mut packet[..short], &NullProtection),
            Err(OpenError::Malformed(WireError::UnexpectedEnd {
                needed: parsed.packet_len,
                remaining: short
            }))
        );
    }

    proptest! {
        #[test]
        fn sealed_packets_open_to_their_frames(
            ty in prop_oneof![
                Just(PacketType::Initial),
                Just(PacketType::Handshake),
                Just(PacketType::OneRtt)
            ],
            packet_number in 0u64..(1 << 62),
            frames in proptest::collection::vec(any::<u8>(), 0..300),
            token in proptest::collection::vec(any::<u8>(), 0..40),
            earlier in proptest::collection::vec(any::<u8>(), 0..3),
        ) {
            let header = Header { ty, token: &token, ..short_header(packet_number) };
            // Bytes already in `out` (an earlier coalesced packet) stay put.
            let mut out = earlier.clone();
            seal_packet(&header, &frames, &NullProtection, &mut out).expect("Null seals anything");
            prop_assert_eq!(&out[..earlier.len()], &earlier[..]);
            let packet = &mut out[earlier.len()..];
            prop_assert_eq!(packet.len(), sealed_len(&header, frames.len(), &NullProtection));
            let packet_len = packet.len();
            let opened = receive(packet, packet_number.checked_sub(1));
            prop_assert_eq!(opened, Ok((frames, packet_len)));
        }
    }
}
