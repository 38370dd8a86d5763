//! The Retry integrity tag (RFC 9001 §5.8, for sift's Retry layout): a tag
//! over the client's original destination connection ID and the Retry
//! packet, under a key everyone knows. It is not a secret: it lets a client
//! discard a Retry damaged on the way or forged by someone who never saw
//! its Initial (the original DCID is the part an off-path attacker lacks).
//!
//! TLS: AES-128-GCM with a fixed key and nonce, as QUIC does; the key and
//! nonce are SHA-256 of sift's own labels, so a QUIC v1 Retry never
//! verifies as a sift one. Null: CRC32C of the same bytes in the first four
//! bytes, zeroes after, as Null's header tag.

use ring::{aead, digest};

use crate::wire::RETRY_INTEGRITY_TAG_LEN;

const KEY_LABEL: &[u8] = b"sift v1 retry integrity key";
const NONCE_LABEL: &[u8] = b"sift v1 retry integrity nonce";

/// The bytes a Retry integrity tag covers: the original destination
/// connection ID, length-prefixed, then the Retry up to its tag.
fn pseudo_packet(original_dcid: &[u8], retry: &[u8]) -> Vec<u8> {
    let mut pseudo = Vec::with_capacity(1 + original_dcid.len() + retry.len());
    pseudo.push(original_dcid.len() as u8);
    pseudo.extend_from_slice(original_dcid);
    pseudo.extend_from_slice(retry);
    pseudo
}

/// The TLS-mode tag of a Retry (`retry` up to its tag) answering a client
/// whose first destination connection ID was `original_dcid`.
pub fn aead_integrity_tag(original_dcid: &[u8], retry: &[u8]) -> [u8; RETRY_INTEGRITY_TAG_LEN] {
    let key_bytes = digest::digest(&digest::SHA256, KEY_LABEL);
    let nonce_bytes = digest::digest(&digest::SHA256, NONCE_LABEL);
    let key = aead::UnboundKey::new(&aead::AES_128_GCM, &key_bytes.as_ref()[..16])
        .expect("16 bytes is an AES-128 key");
    let key = aead::LessSafeKey::new(key);
    let nonce = aead::Nonce::try_assume_unique_for_key(&nonce_bytes.as_ref()[..aead::NONCE_LEN])
        .expect("12 bytes is a GCM nonce");
    let pseudo = pseudo_packet(original_dcid, retry);
    let tag = key
        .seal_in_place_separate_tag(nonce, aead::Aad::from(&pseudo[..]), &mut [])
        .expect("an empty plaintext seals");
    let mut out = [0u8; RETRY_INTEGRITY_TAG_LEN];
    out.copy_from_slice(tag.as_ref());
    out
}

/// The Null-mode tag: CRC32C, zero-padded.
pub fn null_integrity_tag(original_dcid: &[u8], retry: &[u8]) -> [u8; RETRY_INTEGRITY_TAG_LEN] {
    let mut out = [0u8; RETRY_INTEGRITY_TAG_LEN];
    let crc = crc32c::crc32c(&pseudo_packet(original_dcid, retry));
    out[..4].copy_from_slice(&crc.to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tag_covers_the_original_dcid_and_every_byte() {
        for tag in [aead_integrity_tag, null_integrity_tag] {
            let retry = b"a retry packet up to its tag";
            let good = tag(&[1; 8], retry);
            assert_eq!(tag(&[1; 8], retry), good, "deterministic");
            assert_ne!(tag(&[2; 8], retry), good, "another client's Initial");
            for i in 0..retry.len() {
                let mut flipped = *retry;
                flipped[i] ^= 0x10;
                assert_ne!(tag(&[1; 8], &flipped), good, "byte {i}");
            }
        }
    }
}
