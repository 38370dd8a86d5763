//! TLS packet protection: DESIGN §3's two tags under one level's AEAD keys.
//!
//! - header tag = the AEAD tag of an *empty* plaintext with the header as
//!   associated data, sealed with the packet number in a separate nonce
//!   domain (bit 62 set; packet numbers stay below 2^62, RFC 9000 §12.3), so
//!   the header tag and the payload never share a nonce; truncated to 8
//!   bytes and compared in constant time;
//! - payload tag = the AEAD seal of the frames, in place, with header and
//!   header tag as associated data (the full 16-byte tag).
//!
//! sift/1 has no header protection: packet numbers and the key phase are
//! visible on the wire (SECURITY.md). QUIC v1 packets use the same packet
//! keys as a plain AEAD over the frames plus the level's header protection
//! keys (RFC 9001 §5.4), which stay the same across key updates (§6) and are
//! shared by every phase's protection.

use std::sync::Arc;

use rustls::quic::{HeaderProtectionKey, PacketKey};

use crate::crypto::{constant_time_eq, payload_tag_start, CryptoError, PacketProtection};
use crate::wire::HEADER_TAG_LEN;

/// Set in the nonce's packet number for header tags (DESIGN §3).
pub const HEADER_TAG_NONCE_BIT: u64 = 1 << 62;
/// Bytes of every TLS 1.3 AEAD tag QUIC uses (AES-GCM, ChaCha20-Poly1305).
pub const TLS_PAYLOAD_TAG_LEN: usize = 16;

/// One level's keys: `local` seals what we send, `remote` opens what the
/// peer sent.
pub struct TlsProtection {
    local: Box<dyn PacketKey>,
    remote: Box<dyn PacketKey>,
    header: HeaderKeys,
}

/// One level's header protection keys: `local` masks what we send,
/// `remote` unmasks what the peer sent.
#[derive(Clone)]
pub struct HeaderKeys {
    local: Arc<dyn HeaderProtectionKey>,
    remote: Arc<dyn HeaderProtectionKey>,
}

impl HeaderKeys {
    /// Keys masking with `local` and unmasking with `remote`.
    pub fn new(local: Box<dyn HeaderProtectionKey>, remote: Box<dyn HeaderProtectionKey>) -> Self {
        Self {
            local: Arc::from(local),
            remote: Arc::from(remote),
        }
    }
}

impl std::fmt::Debug for TlsProtection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TlsProtection")
    }
}

impl TlsProtection {
    /// Keys sealing with `local` and opening with `remote`, with the
    /// level's header protection keys.
    pub fn new(local: Box<dyn PacketKey>, remote: Box<dyn PacketKey>, header: HeaderKeys) -> Self {
        Self {
            local,
            remote,
            header,
        }
    }

    /// The header protection keys, for the next key phase's protection.
    pub fn header_keys(&self) -> HeaderKeys {
        self.header.clone()
    }

    fn tag_under(key: &dyn PacketKey, packet_number: u64, header: &[u8]) -> Option<[u8; 16]> {
        let tag = key
            .encrypt_in_place(packet_number | HEADER_TAG_NONCE_BIT, header, &mut [])
            .ok()?;
        tag.as_ref().try_into().ok()
    }

    /// The 8 bytes of [`Self::tag_under`] a header carries.
    fn truncated_tag_under(
        key: &dyn PacketKey,
        packet_number: u64,
        header: &[u8],
    ) -> [u8; HEADER_TAG_LEN] {
        // Sealing an empty plaintext cannot exceed the AEAD's input limit,
        // so the fallback is never taken; an all-zero tag would not verify.
        let full = Self::tag_under(key, packet_number, header).unwrap_or_default();
        let mut tag = [0u8; HEADER_TAG_LEN];
        tag.copy_from_slice(&full[..HEADER_TAG_LEN]);
        tag
    }
}

impl PacketProtection for TlsProtection {
    fn payload_tag_len(&self) -> usize {
        TLS_PAYLOAD_TAG_LEN
    }

    fn confidentiality_limit(&self) -> u64 {
        self.local.confidentiality_limit()
    }

    /// RFC 9001 §6.6: 2^52 for AES-GCM, 2^36 for ChaCha20-Poly1305. The
    /// header tag is the AEAD tag truncated to 8 bytes, so a forged header
    /// passes with odds 2^-64 a try: over 2^36 tries that is 2^-28, which
    /// the limit's own margin covers.
    fn integrity_limit(&self) -> u64 {
        self.remote.integrity_limit()
    }

    fn header_tag(&self, packet_number: u64, header: &[u8]) -> [u8; HEADER_TAG_LEN] {
        Self::truncated_tag_under(&*self.local, packet_number, header)
    }

    fn peer_header_tag(&self, packet_number: u64, header: &[u8]) -> [u8; HEADER_TAG_LEN] {
        Self::truncated_tag_under(&*self.remote, packet_number, header)
    }

    fn verify_header_tag(&self, packet_number: u64, header: &[u8], tag: &[u8]) -> bool {
        match Self::tag_under(&*self.remote, packet_number, header) {
            Some(expected) => constant_time_eq(&expected[..HEADER_TAG_LEN], tag),
            None => false,
        }
    }

    fn protect_header(
        &self,
        sample: &[u8],
        first: &mut u8,
        packet_number: &mut [u8],
    ) -> Result<(), CryptoError> {
        self.header
            .local
            .encrypt_in_place(sample, first, packet_number)
            .map_err(|_| CryptoError::HeaderProtection)
    }

    fn unprotect_header(
        &self,
        sample: &[u8],
        first: &mut u8,
        packet_number: &mut [u8],
    ) -> Result<(), CryptoError> {
        self.header
            .remote
            .decrypt_in_place(sample, first, packet_number)
            .map_err(|_| CryptoError::HeaderProtection)
    }

    fn seal_payload(
        &self,
        packet_number: u64,
        header_len: usize,
        packet: &mut [u8],
    ) -> Result<(), CryptoError> {
        let failed = CryptoError::SealFailed { packet_number };
        let frames_end = payload_tag_start(packet.len(), header_len, TLS_PAYLOAD_TAG_LEN)
            .ok_or(failed.clone())?;
        let (header, rest) = packet.split_at_mut(header_len);
        let (frames, tag_room) = rest.split_at_mut(frames_end - header_len);
        let tag = self
            .local
            .encrypt_in_place(packet_number, header, frames)
            .map_err(|_| failed)?;
        tag_room.copy_from_slice(tag.as_ref());
        Ok(())
    }

    fn open_payload(
        &self,
        packet_number: u64,
        header_len: usize,
        packet: &mut [u8],
    ) -> Result<usize, CryptoError> {
        let needed = header_len.saturating_add(TLS_PAYLOAD_TAG_LEN);
        if packet.len() < needed {
            return Err(CryptoError::PacketTooShort {
                len: packet.len(),
                needed,
            });
        }
        let (header, sealed) = packet.split_at_mut(header_len);
        self.remote
            .decrypt_in_place(packet_number, header, sealed)
            .map(<[u8]>::len)
            .map_err(|_| CryptoError::PayloadTagMismatch { packet_number })
    }
}
