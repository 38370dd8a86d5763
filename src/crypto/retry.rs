//! The Retry integrity tag (RFC 9001 §5.8, for sift's Retry layout): a tag
//! over the client's original destination connection ID and the Retry
//! packet, under a key everyone knows. It is not a secret: it lets a client
//! discard a Retry damaged on the way or forged by someone who never saw
//! its Initial (the original DCID is the part an off-path attacker lacks).
//!
//! TLS: AES-128-GCM with a fixed key and nonce, as QUIC does. QUIC v1 uses
//! RFC 9001 §5.8's key and nonce, QUIC v2 RFC 9369 §3.3.3's; sift/1 uses SHA-256 of sift's own labels,
//! so a Retry of one version never verifies as the other's. Null: CRC32C of
//! the same bytes in the first four bytes, zeroes after, as Null's header
//! tag.

use ring::{aead, digest};

use crate::wire::{QUIC_V1, QUIC_V2, RETRY_INTEGRITY_TAG_LEN};

const KEY_LABEL: &[u8] = b"sift v1 retry integrity key";
const NONCE_LABEL: &[u8] = b"sift v1 retry integrity nonce";
/// RFC 9001 §5.8.
const QUIC_V1_KEY: [u8; 16] = [
    0xbe, 0x0c, 0x69, 0x0b, 0x9f, 0x66, 0x57, 0x5a, 0x1d, 0x76, 0x6b, 0x54, 0xe3, 0x68, 0xc8, 0x4e,
];
const QUIC_V1_NONCE: [u8; 12] = [
    0x46, 0x15, 0x99, 0xd3, 0x5d, 0x63, 0x2b, 0xf2, 0x23, 0x98, 0x25, 0xbb,
];
/// RFC 9369 §3.3.3.
const QUIC_V2_KEY: [u8; 16] = [
    0x8f, 0xb4, 0xb0, 0x1b, 0x56, 0xac, 0x48, 0xe2, 0x60, 0xfb, 0xcb, 0xce, 0xad, 0x7c, 0xcc, 0x92,
];
const QUIC_V2_NONCE: [u8; 12] = [
    0xd8, 0x69, 0x69, 0xbc, 0x2d, 0x7c, 0x6d, 0x99, 0x90, 0xef, 0xb0, 0x4a,
];

/// The tag of a Retry in `version` (`retry` up to its tag) answering a
/// client whose first destination connection ID was `original_dcid`;
/// `null` for a Null-protection sift/1 Retry.
pub fn integrity_tag(
    version: u32,
    null: bool,
    original_dcid: &[u8],
    retry: &[u8],
) -> [u8; RETRY_INTEGRITY_TAG_LEN] {
    match (version, null) {
        (QUIC_V1, _) => aes_gcm_tag(&QUIC_V1_KEY, &QUIC_V1_NONCE, original_dcid, retry),
        (QUIC_V2, _) => aes_gcm_tag(&QUIC_V2_KEY, &QUIC_V2_NONCE, original_dcid, retry),
        (_, true) => null_integrity_tag(original_dcid, retry),
        (_, false) => aead_integrity_tag(original_dcid, retry),
    }
}

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
    aes_gcm_tag(
        &key_bytes.as_ref()[..16],
        &nonce_bytes.as_ref()[..aead::NONCE_LEN],
        original_dcid,
        retry,
    )
}

fn aes_gcm_tag(
    key: &[u8],
    nonce: &[u8],
    original_dcid: &[u8],
    retry: &[u8],
) -> [u8; RETRY_INTEGRITY_TAG_LEN] {
    let key = aead::UnboundKey::new(&aead::AES_128_GCM, key).expect("16 bytes is an AES-128 key");
    let key = aead::LessSafeKey::new(key);
    let nonce = aead::Nonce::try_assume_unique_for_key(nonce).expect("12 bytes is a GCM nonce");
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

    /// RFC 9001 §A.4: the Retry answering the client Initial of §A.2.
    #[test]
    fn rfc_9001_sample_retry_tag_is_reproduced() {
        let retry = hex("ff000000010008f067a5502a4262b5746f6b656e");
        let tag = integrity_tag(QUIC_V1, false, &hex("8394c8f03e515708"), &retry);
        assert_eq!(tag.to_vec(), hex("04a265ba2eff4d829058fb3f0f2496ba"));
    }

    /// RFC 9369 §A.4: the same Retry in v2, its type bits 0b00.
    #[test]
    fn rfc_9369_sample_retry_tag_is_reproduced() {
        let retry = hex("cf6b3343cf0008f067a5502a4262b5746f6b656e");
        let tag = integrity_tag(QUIC_V2, false, &hex("8394c8f03e515708"), &retry);
        assert_eq!(tag.to_vec(), hex("c8646ce8bfe33952d955543665dcc7b6"));
        // A v1 tag over the same bytes differs: a Retry of one version
        // never verifies as another's.
        assert_ne!(
            integrity_tag(QUIC_V1, false, &hex("8394c8f03e515708"), &retry),
            tag
        );
    }

    fn hex(text: &str) -> Vec<u8> {
        (0..text.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
            .collect()
    }

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
