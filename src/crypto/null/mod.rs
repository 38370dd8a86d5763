//! Null protection (DESIGN §3, §4): CRC32C tags, plaintext frames.
//!
//! It detects corruption, not attacks: anyone can compute a CRC. For the
//! simulator and experiments only; both peers must choose it.
//! [`NullSession`] is its handshake: transport parameters in plaintext.

mod session;

pub use session::NullSession;

use super::{constant_time_eq, payload_tag_start, CryptoError, PacketProtection};
use crate::wire::HEADER_TAG_LEN;

/// Bytes of the Null payload tag: one CRC32C.
pub const NULL_PAYLOAD_TAG_LEN: usize = 4;

/// Null mode: header tag = CRC32C(header) big-endian in the first 4 bytes,
/// zero bytes after; payload tag = CRC32C over header, header tag and frames.
/// Frames stay plaintext.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NullProtection;

impl PacketProtection for NullProtection {
    fn payload_tag_len(&self) -> usize {
        NULL_PAYLOAD_TAG_LEN
    }

    fn header_tag(&self, _packet_number: u64, header: &[u8]) -> [u8; HEADER_TAG_LEN] {
        // The packet number is inside `header` already.
        let mut tag = [0u8; HEADER_TAG_LEN];
        let crc = crc32c::crc32c(header).to_be_bytes();
        tag[..crc.len()].copy_from_slice(&crc);
        tag
    }

    fn verify_header_tag(&self, packet_number: u64, header: &[u8], tag: &[u8]) -> bool {
        constant_time_eq(&self.header_tag(packet_number, header), tag)
    }

    fn peer_header_tag(&self, packet_number: u64, header: &[u8]) -> [u8; HEADER_TAG_LEN] {
        // A CRC has no keys: both ends compute the same.
        self.header_tag(packet_number, header)
    }

    fn seal_payload(
        &self,
        packet_number: u64,
        header_len: usize,
        packet: &mut [u8],
    ) -> Result<(), CryptoError> {
        let covered_len = payload_tag_start(packet.len(), header_len, NULL_PAYLOAD_TAG_LEN)
            .ok_or(CryptoError::SealFailed { packet_number })?;
        let (covered, tag) = packet.split_at_mut(covered_len);
        tag.copy_from_slice(&crc32c::crc32c(covered).to_be_bytes());
        Ok(())
    }

    fn open_payload(
        &self,
        packet_number: u64,
        header_len: usize,
        packet: &mut [u8],
    ) -> Result<usize, CryptoError> {
        let needed = header_len.saturating_add(NULL_PAYLOAD_TAG_LEN);
        let too_short = CryptoError::PacketTooShort {
            len: packet.len(),
            needed,
        };
        let covered_len =
            payload_tag_start(packet.len(), header_len, NULL_PAYLOAD_TAG_LEN).ok_or(too_short)?;
        let (covered, tag) = packet.split_at(covered_len);
        if !constant_time_eq(&crc32c::crc32c(covered).to_be_bytes(), tag) {
            return Err(CryptoError::PayloadTagMismatch { packet_number });
        }
        Ok(covered_len - header_len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_tag_is_big_endian_crc32c_then_zeros() {
        // CRC-32C check value (RFC 3720 §B.4 / the catalogue "check" field):
        // crc32c("123456789") = 0xe3069283.
        assert_eq!(
            NullProtection.header_tag(0, b"123456789"),
            [0xe3, 0x06, 0x92, 0x83, 0, 0, 0, 0]
        );
    }

    #[test]
    fn header_tag_with_nonzero_padding_or_wrong_length_is_rejected() {
        let good = NullProtection.header_tag(1, b"header");
        assert!(NullProtection.verify_header_tag(1, b"header", &good));
        let mut padded = good;
        padded[7] = 1;
        assert!(!NullProtection.verify_header_tag(1, b"header", &padded));
        assert!(!NullProtection.verify_header_tag(1, b"header", &good[..4]));
    }

    #[test]
    fn sealed_payload_opens_and_keeps_frames_in_plaintext() {
        let mut packet = b"HDR+TAG.".to_vec();
        packet.extend_from_slice(b"frames");
        packet.extend_from_slice(&[0; NULL_PAYLOAD_TAG_LEN]);
        NullProtection.seal_payload(9, 8, &mut packet).unwrap();
        assert_eq!(packet.len(), 8 + 6 + 4);
        assert_eq!(&packet[8..14], b"frames");
        assert_eq!(NullProtection.open_payload(9, 8, &mut packet), Ok(6));
        packet[10] ^= 0x10;
        assert_eq!(
            NullProtection.open_payload(9, 8, &mut packet),
            Err(CryptoError::PayloadTagMismatch { packet_number: 9 })
        );
    }

    #[test]
    fn packet_too_short_for_its_tag_is_an_error_not_a_panic() {
        let mut packet = [0u8; 10];
        assert_eq!(
            NullProtection.open_payload(0, 8, &mut packet),
            Err(CryptoError::PacketTooShort {
                len: 10,
                needed: 12
            })
        );
        assert_eq!(
            NullProtection.open_payload(0, 0, &mut []),
            Err(CryptoError::PacketTooShort { len: 0, needed: 4 })
        );
    }
}
