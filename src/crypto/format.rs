//! The packet format seam: how one version lays out and protects a packet.
//!
//! sift speaks two versions whose packets differ and whose everything else
//! (frames, streams, recovery, TLS through rustls with v1 keys) is shared
//! (DESIGN §3.1):
//! - **sift/1** ([`SIFT_V1`]): a header tag and a payload tag, no header
//!   protection, 4-byte packet numbers; a damaged payload behind a good
//!   header is named in a CORRUPTED frame;
//! - **QUIC v1** ([`QUIC_V1`]): header protection over 1–4 byte packet
//!   numbers and one AEAD tag over the frames (RFC 9000 §17, RFC 9001 §5);
//!   any damage looks like a forgery, so nothing can be named;
//! - **QUIC v2** ([`QUIC_V2`]): v1's layout and protection with other
//!   long-header type bits (RFC 9369 §3.2); its keys differ (its own
//!   Initial salt and labels), which the level's keys carry, not the format.
//!
//! A connection holds one [`PacketFormat`] for short headers and picks a
//! long header's by its version field ([`for_version`]); it never asks
//! which version it runs to decide how to seal or open. The format uses the
//! level's [`PacketProtection`] (keys) and `wire`'s header layouts; it keeps
//! no state.

use super::packet::{open_packet, seal_packet_into, sealed_len, whole_packet, OpenError};
use super::{CryptoError, PacketProtection};
use crate::wire::{
    encode_quic_header, packet_number_len, parse_header, parse_quic_header, quic_header_len,
    reserved_bits_clear, reveal_packet_number, Header, ParsedHeader, WireError,
    HEADER_PROTECTION_SAMPLE_LEN, PACKET_NUMBER_LEN, QUIC_V1 as QUIC_V1_VERSION,
    QUIC_V2 as QUIC_V2_VERSION, SHORT_HEADER_DCID_LEN, VERSION as SIFT_V1_VERSION,
};

/// One version's packet layout and protection.
pub trait PacketFormat: Send + Sync + std::fmt::Debug {
    /// The version number on the wire.
    fn version(&self) -> u32;

    /// Whether a receiver can tell a damaged payload from a damaged (or
    /// forged) header: the split tags that corruption notices need.
    fn names_corrupted_packets(&self) -> bool;

    /// Parses the header of the packet at the start of `datagram` as far as
    /// it is readable without keys, and checks that the packet is all there.
    fn parse<'a>(&self, datagram: &'a [u8]) -> Result<ParsedHeader<'a>, WireError>;

    /// Makes the packet number and key phase readable: removes header
    /// protection from `packet` in place with the peer's header key in
    /// `keys`, and completes `parsed`.
    fn unprotect(
        &self,
        parsed: &mut ParsedHeader<'_>,
        packet: &mut [u8],
        keys: &dyn PacketProtection,
    ) -> Result<(), OpenError>;

    /// Authenticates and decrypts the packet `parsed` describes (in
    /// `packet[..parsed.packet_len]`, unprotected), numbered
    /// `packet_number`; returns the plaintext frames.
    fn open<'a>(
        &self,
        parsed: &ParsedHeader<'_>,
        packet_number: u64,
        packet: &'a mut [u8],
        keys: &dyn PacketProtection,
    ) -> Result<&'a [u8], OpenError>;

    /// Exact bytes [`PacketFormat::seal_into`] writes for `frames_len`
    /// bytes of frames, the peer having acknowledged up to `largest_acked`
    /// in this packet-number space.
    fn sealed_len(
        &self,
        header: &Header<'_>,
        largest_acked: Option<u64>,
        frames_len: usize,
        keys: &dyn PacketProtection,
    ) -> usize;

    /// Writes the sealed packet into `out`, returning its length
    /// ([`PacketFormat::sealed_len`]). `header_scratch` is reused between
    /// calls; `out` too small is [`CryptoError::SealFailed`].
    fn seal_into(
        &self,
        header: &Header<'_>,
        largest_acked: Option<u64>,
        frames: &[u8],
        keys: &dyn PacketProtection,
        header_scratch: &mut Vec<u8>,
        out: &mut [u8],
    ) -> Result<usize, CryptoError>;
}

/// sift/1: DESIGN §3's split tags.
#[derive(Debug)]
pub struct SiftFormat;

/// QUIC version 1 (RFC 9000 §17 headers, RFC 9001 §5 protection) and
/// version 2 (RFC 9369), told apart by `version`.
#[derive(Debug)]
pub struct QuicFormat {
    version: u32,
}

/// The sift/1 format.
pub static SIFT_V1: SiftFormat = SiftFormat;
/// The QUIC v1 format.
pub static QUIC_V1: QuicFormat = QuicFormat {
    version: QUIC_V1_VERSION,
};
/// The QUIC v2 format.
pub static QUIC_V2: QuicFormat = QuicFormat {
    version: QUIC_V2_VERSION,
};

/// The format of `version`, if sift speaks it.
pub fn for_version(version: u32) -> Option<&'static dyn PacketFormat> {
    match version {
        SIFT_V1_VERSION => Some(&SIFT_V1),
        QUIC_V1_VERSION => Some(&QUIC_V1),
        QUIC_V2_VERSION => Some(&QUIC_V2),
        _ => None,
    }
}

impl PacketFormat for SiftFormat {
    fn version(&self) -> u32 {
        SIFT_V1_VERSION
    }

    fn names_corrupted_packets(&self) -> bool {
        true
    }

    fn parse<'a>(&self, datagram: &'a [u8]) -> Result<ParsedHeader<'a>, WireError> {
        parse_header(datagram)
    }

    fn unprotect(
        &self,
        _parsed: &mut ParsedHeader<'_>,
        _packet: &mut [u8],
        _keys: &dyn PacketProtection,
    ) -> Result<(), OpenError> {
        // Nothing is hidden: the header tag guards the packet number.
        Ok(())
    }

    fn open<'a>(
        &self,
        parsed: &ParsedHeader<'_>,
        packet_number: u64,
        packet: &'a mut [u8],
        keys: &dyn PacketProtection,
    ) -> Result<&'a [u8], OpenError> {
        open_packet(parsed, packet_number, packet, keys)
    }

    fn sealed_len(
        &self,
        header: &Header<'_>,
        _largest_acked: Option<u64>,
        frames_len: usize,
        keys: &dyn PacketProtection,
    ) -> usize {
        sealed_len(header, frames_len, keys)
    }

    fn seal_into(
        &self,
        header: &Header<'_>,
        _largest_acked: Option<u64>,
        frames: &[u8],
        keys: &dyn PacketProtection,
        header_scratch: &mut Vec<u8>,
        out: &mut [u8],
    ) -> Result<usize, CryptoError> {
        seal_packet_into(header, frames, keys, header_scratch, out)
    }
}

impl QuicFormat {
    /// Frames padded so that the header protection sample, 4 bytes past
    /// the packet number's start, fits (RFC 9001 §5.4.2).
    fn padded_frames_len(frames_len: usize, pn_len: usize, tag_len: usize) -> usize {
        let least =
            (PACKET_NUMBER_LEN + HEADER_PROTECTION_SAMPLE_LEN).saturating_sub(pn_len + tag_len);
        frames_len.max(least)
    }
}

impl PacketFormat for QuicFormat {
    fn version(&self) -> u32 {
        self.version
    }

    fn names_corrupted_packets(&self) -> bool {
        false
    }

    fn parse<'a>(&self, datagram: &'a [u8]) -> Result<ParsedHeader<'a>, WireError> {
        parse_quic_header(datagram, self.version, SHORT_HEADER_DCID_LEN)
    }

    fn unprotect(
        &self,
        parsed: &mut ParsedHeader<'_>,
        packet: &mut [u8],
        keys: &dyn PacketProtection,
    ) -> Result<(), OpenError> {
        // The packet number's length is itself masked: offer the longest.
        let (sample, first, pn_field) =
            header_protection_parts(packet, parsed.header_len, PACKET_NUMBER_LEN)
                .ok_or(WireError::InvalidHeader("too short for header protection"))?;
        keys.unprotect_header(&sample, first, pn_field)
            .map_err(|_| OpenError::HeaderCorrupt)?;
        // Reserved bits are judged once the packet authenticates (`open`).
        reveal_packet_number(parsed, *first, pn_field);
        Ok(())
    }

    fn open<'a>(
        &self,
        parsed: &ParsedHeader<'_>,
        packet_number: u64,
        packet: &'a mut [u8],
        keys: &dyn PacketProtection,
    ) -> Result<&'a [u8], OpenError> {
        let packet = whole_packet(parsed, packet)?;
        let header_len = parsed.header_len;
        // One tag covers header and payload: a failure cannot say which was
        // damaged, and a damaged header cannot even be trusted to name the
        // packet. No notice is possible; the packet is simply not there.
        let frames_len = keys
            .open_payload(packet_number, header_len, packet)
            .map_err(|_| OpenError::HeaderCorrupt)?;
        // RFC 9000 §17.2, §17.3.1: reserved bits set in an authentic packet
        // are a protocol violation.
        if !reserved_bits_clear(packet[0]) {
            return Err(OpenError::ReservedBitsSet);
        }
        let packet: &'a [u8] = packet;
        header_len
            .checked_add(frames_len)
            .and_then(|end| packet.get(header_len..end))
            .ok_or(OpenError::HeaderCorrupt)
    }

    fn sealed_len(
        &self,
        header: &Header<'_>,
        largest_acked: Option<u64>,
        frames_len: usize,
        keys: &dyn PacketProtection,
    ) -> usize {
        // A number out of reach is refused by `seal_into`; its size here is
        // the longest, which is never too little.
        let pn_len =
            packet_number_len(header.packet_number, largest_acked).unwrap_or(PACKET_NUMBER_LEN);
        let tag_len = keys.payload_tag_len();
        let payload_len = Self::padded_frames_len(frames_len, pn_len, tag_len) + tag_len;
        quic_header_len(header, pn_len, payload_len) + payload_len
    }

    fn seal_into(
        &self,
        header: &Header<'_>,
        largest_acked: Option<u64>,
        frames: &[u8],
        keys: &dyn PacketProtection,
        header_scratch: &mut Vec<u8>,
        out: &mut [u8],
    ) -> Result<usize, CryptoError> {
        // RFC 9000 §17.1: a length that cannot span twice the distance to
        // the largest acknowledged would decode to another number: refuse.
        let pn_len = packet_number_len(header.packet_number, largest_acked).ok_or(
            CryptoError::PacketNumberOutOfReach {
                packet_number: header.packet_number,
                largest_acked,
            },
        )?;
        self.seal_with_pn_len(header, pn_len, frames, keys, header_scratch, out)
    }
}

impl QuicFormat {
    /// [`PacketFormat::seal_into`] with the packet number in `pn_len`
    /// bytes (1 to 4) rather than the fewest that are unambiguous.
    pub fn seal_with_pn_len(
        &self,
        header: &Header<'_>,
        pn_len: usize,
        frames: &[u8],
        keys: &dyn PacketProtection,
        header_scratch: &mut Vec<u8>,
        out: &mut [u8],
    ) -> Result<usize, CryptoError> {
        let packet_number = header.packet_number;
        let pn_len = pn_len.clamp(1, PACKET_NUMBER_LEN);
        let tag_len = keys.payload_tag_len();
        let padded_len = Self::padded_frames_len(frames.len(), pn_len, tag_len);
        let header = Header {
            version: self.version,
            ..*header
        };
        header_scratch.clear();
        let pn_offset = encode_quic_header(&header, pn_len, padded_len + tag_len, header_scratch);
        let header_len = header_scratch.len();
        let len = header_len + padded_len + tag_len;
        let packet = out
            .get_mut(..len)
            .ok_or(CryptoError::SealFailed { packet_number })?;
        packet[..header_len].copy_from_slice(header_scratch);
        packet[header_len..header_len + frames.len()].copy_from_slice(frames);
        // PADDING frames are zero bytes.
        packet[header_len + frames.len()..header_len + padded_len].fill(0);
        keys.seal_payload(packet_number, header_len, packet)?;
        let (sample, first, pn_field) = header_protection_parts(packet, pn_offset, pn_len)
            .ok_or(CryptoError::SealFailed { packet_number })?;
        keys.protect_header(&sample, first, pn_field)?;
        Ok(len)
    }
}

/// What header protection reads and masks in `packet` (RFC 9001 §5.4.2):
/// the sample, taken as if the packet number were 4 bytes long whatever its
/// length; the first byte; and `pn_len` bytes of packet number at
/// `pn_offset`. `None` if the packet is too short to hold them.
fn header_protection_parts(
    packet: &mut [u8],
    pn_offset: usize,
    pn_len: usize,
) -> Option<([u8; HEADER_PROTECTION_SAMPLE_LEN], &mut u8, &mut [u8])> {
    let sample_at = pn_offset + PACKET_NUMBER_LEN;
    let sample = packet
        .get(sample_at..sample_at + HEADER_PROTECTION_SAMPLE_LEN)?
        .try_into()
        .ok()?;
    let (first, rest) = packet.split_first_mut()?;
    // `rest` starts one byte into the packet.
    let pn_field = rest.get_mut(pn_offset.checked_sub(1)?..pn_offset - 1 + pn_len)?;
    Some((sample, first, pn_field))
}

#[cfg(test)]
mod tests;
