//! Packet protection: the header tag and the payload tag of DESIGN §3, behind
//! the [`PacketProtection`] trait, with encryption levels (= packet-number
//! spaces) and the whole-packet seal/open helpers the connection uses.
//!
//! Owns: computing and checking tags, in the order that makes corruption
//! notices possible — header tag first, payload tag second.
//!
//! Must not: parse frames, keep connection state, or read a clock. The
//! connection sees only the two seams here — [`PacketProtection`] (tags of
//! one level) and [`Session`] (the handshake that yields them) — and never
//! names rustls: Null mode ([`null`], for experiments only) and TLS 1.3
//! ([`tls`], rustls's QUIC API with the ring provider) implement both, the
//! way quinn-proto's `crypto` traits sit in front of its rustls module.
//!
//! Sealing and opening work in place on the caller's buffer: no allocation
//! per packet in either mode.

pub mod entropy;
pub mod format;
pub mod null;
pub mod packet;
pub mod retry;
pub mod secret;
pub mod session;
pub mod tls;

pub use entropy::{Entropy, ENTROPY_LEN};
pub use format::{PacketFormat, QuicFormat, SiftFormat};
pub use null::{NullProtection, NullSession};
pub use packet::{
    open_packet, open_with_rebuilt_header, seal_packet, seal_packet_into, sealed_len, OpenError,
};
pub use secret::{ResetToken, ServerSecret, SERVER_SECRET_LEN, TOKEN_NONCE_LEN, TOKEN_OVERHEAD};
pub use session::{HandshakeError, KeyChange, Session};
pub use tls::{
    Aead, CertificateRejected, CertificateVerifier, Fingerprint, IdentityError, ServerIdentity,
    ServerTrust, TlsConfig, TlsSession,
};

use crate::wire::{PacketType, HEADER_TAG_LEN};

/// An encryption level, which is also a packet-number space (RFC 9000 §12.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Level {
    /// Initial packets: keys derived from the client's first DCID.
    Initial,
    /// Handshake packets.
    Handshake,
    /// 1-RTT (short-header) packets: application data.
    OneRtt,
}

impl Level {
    /// Every level, in handshake order.
    pub const ALL: [Level; 3] = [Level::Initial, Level::Handshake, Level::OneRtt];

    /// The packet type that carries this level.
    pub fn packet_type(self) -> PacketType {
        match self {
            Level::Initial => PacketType::Initial,
            Level::Handshake => PacketType::Handshake,
            Level::OneRtt => PacketType::OneRtt,
        }
    }

    /// Position in [`Level::ALL`]: 0, 1 or 2, for per-space arrays.
    pub fn index(self) -> usize {
        match self {
            Level::Initial => 0,
            Level::Handshake => 1,
            Level::OneRtt => 2,
        }
    }
}

impl From<PacketType> for Level {
    fn from(ty: PacketType) -> Self {
        match ty {
            PacketType::Initial => Level::Initial,
            PacketType::Handshake => Level::Handshake,
            // 0-RTT shares the application data space (RFC 9000 §12.3);
            // its keys are the connection's concern.
            PacketType::ZeroRtt | PacketType::OneRtt => Level::OneRtt,
        }
    }
}

/// Why a payload could not be opened.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CryptoError {
    /// The packet is shorter than its header, header tag and payload tag.
    #[error("packet of {len} bytes is shorter than the {needed} bytes its tags need")]
    PacketTooShort {
        /// The packet's size.
        len: usize,
        /// The size its header and tags need.
        needed: usize,
    },
    /// The payload tag does not match the payload: it was corrupted (or
    /// forged).
    #[error("payload tag of packet {packet_number} does not match")]
    PayloadTagMismatch {
        /// The packet whose payload failed.
        packet_number: u64,
    },
    /// The cipher refused to seal (a payload beyond the AEAD's limit).
    #[error("cannot seal packet {packet_number}")]
    SealFailed {
        /// The packet that could not be sealed.
        packet_number: u64,
    },
    /// QUIC v1 cannot send the packet number unambiguously: the peer has
    /// acknowledged nothing within 2^31 numbers of it (RFC 9000 §17.1).
    #[error("packet {packet_number} is too far past the largest acknowledged ({largest_acked:?}) for a 4-byte packet number")]
    PacketNumberOutOfReach {
        /// The packet that could not be sealed.
        packet_number: u64,
        /// The largest packet number the peer acknowledged in its space.
        largest_acked: Option<u64>,
    },
    /// Header protection could not be applied or removed (a sample of the
    /// wrong size).
    #[error("header protection sample of the wrong size")]
    HeaderProtection,
}

/// The two tags of a packet (DESIGN §3) under one set of keys.
pub trait PacketProtection: Send + Sync + std::fmt::Debug {
    /// Bytes of the payload tag appended after the frames.
    fn payload_tag_len(&self) -> usize;

    /// Packets that may be sealed under these keys before a key update is
    /// due (RFC 9001 §6.6). Unlimited unless the cipher says otherwise.
    fn confidentiality_limit(&self) -> u64 {
        u64::MAX
    }
    /// Received packets that may fail authentication under this cipher in
    /// one connection, across all its keys, before it must close with
    /// AEAD_LIMIT_REACHED (RFC 9001 §6.6): each failure is an attempt at a
    /// forgery. Unlimited unless the cipher says otherwise (Null tags
    /// authenticate nothing to begin with).
    fn integrity_limit(&self) -> u64 {
        u64::MAX
    }

    /// QUIC header protection (RFC 9001 §5.4.1): masks the first byte's
    /// protected bits and `packet_number` (the field, 1 to 4 bytes) with
    /// the local key's mask of `sample`. Null protection masks nothing.
    fn protect_header(
        &self,
        _sample: &[u8],
        _first: &mut u8,
        _packet_number: &mut [u8],
    ) -> Result<(), CryptoError> {
        Ok(())
    }

    /// Removes the peer's header protection: unmasks `first`, then as many
    /// bytes of `packet_number` (given 4) as the unmasked first byte says.
    fn unprotect_header(
        &self,
        _sample: &[u8],
        _first: &mut u8,
        _packet_number: &mut [u8],
    ) -> Result<(), CryptoError> {
        Ok(())
    }

    /// The 8-byte header tag over `header` (every header byte before the tag).
    fn header_tag(&self, packet_number: u64, header: &[u8]) -> [u8; HEADER_TAG_LEN];

    /// Constant-time check of a received header tag.
    fn verify_header_tag(&self, packet_number: u64, header: &[u8], tag: &[u8]) -> bool;

    /// The header tag the peer's keys give `header`: what a received
    /// packet with this header carries (for rebuilding a damaged one).
    fn peer_header_tag(&self, packet_number: u64, header: &[u8]) -> [u8; HEADER_TAG_LEN];

    /// `packet` holds header, header tag, the plaintext frames and
    /// [`payload_tag_len`](Self::payload_tag_len) spare bytes at the end:
    /// seal the frames in place and write the payload tag into the spare
    /// bytes. `header_len` = bytes up to and including the header tag.
    fn seal_payload(
        &self,
        packet_number: u64,
        header_len: usize,
        packet: &mut [u8],
    ) -> Result<(), CryptoError>;

    /// `packet` holds header, header tag, sealed frames and the payload tag;
    /// open in place; returns the plaintext frames' length.
    fn open_payload(
        &self,
        packet_number: u64,
        header_len: usize,
        packet: &mut [u8],
    ) -> Result<usize, CryptoError>;
}

/// Where the payload tag starts in a `packet_len`-byte packet whose header
/// (and header tag) take `header_len` bytes: `None` if the packet cannot
/// hold the header and a `tag_len`-byte tag.
pub(crate) fn payload_tag_start(
    packet_len: usize,
    header_len: usize,
    tag_len: usize,
) -> Option<usize> {
    packet_len
        .checked_sub(tag_len)
        .filter(|start| *start >= header_len)
}

/// Compares two tags without stopping at the first difference, so the time
/// taken says nothing about where they differ. Lengths are public.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let difference = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    // black_box keeps the optimiser from turning the fold into an early exit.
    std::hint::black_box(difference) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_map_to_packet_types_and_back() {
        for (index, level) in Level::ALL.into_iter().enumerate() {
            assert_eq!(Level::from(level.packet_type()), level);
            assert_eq!(level.index(), index);
        }
        assert_eq!(Level::from(PacketType::OneRtt), Level::OneRtt);
    }

    #[test]
    fn constant_time_eq_compares_content_and_length() {
        assert!(constant_time_eq(b"abcd", b"abcd"));
        assert!(!constant_time_eq(b"abcd", b"abce"));
        assert!(!constant_time_eq(b"abcd", b"abc"));
        assert!(constant_time_eq(b"", b""));
    }
}
