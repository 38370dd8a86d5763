//! What a relay saw on the wire, per direction: datagrams and bytes, the
//! long-header packets of each version by type, Version Negotiation, and
//! how many handshakes clients started — what the QUIC interop runner reads
//! from a packet capture, counted by `sift-link --stats` without one.
//!
//! Only the version-independent invariants (RFC 8999) and each version's
//! unprotected long-header fields are read: the packet type and the
//! lengths that split coalesced packets. Nothing is decrypted.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use sift::crypto::format::SIFT_V1;
use sift::crypto::PacketFormat;
use sift::wire::{
    is_retry, parse_long_invariant, PacketType, Reader, QUIC_V1, QUIC_V2, VERSION,
    VERSION_NEGOTIATION,
};

/// Versions counted each under its own key; packets of any further version
/// share [`OTHER_VERSIONS`]. Anyone can send a datagram with a long header
/// of any version through a relay (greased versions, RFC 9000 §15, or a
/// flood of made-up ones), so the map must not grow with them; sift/1, v1,
/// v2 and a few greased ones fit well.
pub const MAX_VERSIONS: usize = 16;
/// The key of the bucket for versions beyond [`MAX_VERSIONS`].
pub const OTHER_VERSIONS: &str = "other";
/// Distinct client source connection IDs remembered to count handshakes.
/// A spoofing client can make up a new one in every Initial; past this
/// many, a new ID is counted in `untracked_initials` instead. An interop
/// case starts a handful of handshakes; a load test a few thousand.
pub const MAX_TRACKED_SCIDS: usize = 16_384;

/// Long-header packets of one version, by type.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LongHeaders {
    pub initial: u64,
    #[serde(rename = "0rtt")]
    pub zero_rtt: u64,
    pub handshake: u64,
    pub retry: u64,
    /// Packets of the version whose type or length did not parse.
    pub unparsed: u64,
}

/// One direction's counts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Census {
    pub datagrams: u64,
    pub bytes: u64,
    /// By version, written `0x%08x`: the first [`MAX_VERSIONS`] seen, then
    /// every further one under [`OTHER_VERSIONS`].
    pub long_headers: BTreeMap<String, LongHeaders>,
    /// Datagrams that began with a short header.
    pub short_headers: u64,
    pub version_negotiation: u64,
    /// Distinct source connection IDs of the Initial packets seen: on the
    /// client's direction, the handshakes clients started (a client keeps
    /// its SCID across a Retry and a version change). At most
    /// [`MAX_TRACKED_SCIDS`]; see `untracked_initials` beyond.
    pub client_initial_scids: u64,
    /// Initials whose source connection ID was new once
    /// [`MAX_TRACKED_SCIDS`] were remembered: handshakes beyond the count
    /// above (or repeats of one the census could not remember).
    pub untracked_initials: u64,
    #[serde(skip)]
    initial_scids: BTreeSet<Vec<u8>>,
    /// A Handshake packet went this way (from a client: its address is
    /// validated, RFC 9000 §8.1).
    #[serde(skip)]
    pub handshake_seen: bool,
}

/// Bytes each side sent before the client's first Handshake packet, the
/// point a server has validated the client's address: the server may
/// send at most three times what it received until then (RFC 9000 §8.1,
/// the runner's `amplificationlimit` case).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct BeforeValidation {
    pub client_bytes: u64,
    pub server_bytes: u64,
}

impl BeforeValidation {
    /// Counts a datagram of `len` bytes that went `from_client` or back,
    /// while `validated` is false (the client's census has seen no
    /// Handshake packet yet, this datagram included).
    pub fn record(&mut self, from_client: bool, len: usize, validated: bool) {
        if validated {
            return;
        }
        match from_client {
            true => self.client_bytes += len as u64,
            false => self.server_bytes += len as u64,
        }
    }

    /// The server sent at most three times what it received.
    pub fn within_limit(&self) -> bool {
        self.server_bytes <= 3 * self.client_bytes
    }
}

impl Census {
    /// Counts one datagram, as offered to the link.
    pub fn record(&mut self, datagram: &[u8]) {
        self.datagrams += 1;
        self.bytes += datagram.len() as u64;
        let mut rest = datagram;
        while let Some(&first) = rest.first() {
            if first & 0x80 == 0 {
                // A short header runs to the datagram's end.
                if rest.len() == datagram.len() {
                    self.short_headers += 1;
                }
                return;
            }
            let Ok(invariant) = parse_long_invariant(rest) else {
                return;
            };
            if invariant.version == VERSION_NEGOTIATION {
                self.version_negotiation += 1;
                return;
            }
            let counts = self.version_counts(invariant.version);
            if is_retry(rest) {
                counts.retry += 1;
                return;
            }
            let Some((ty, len)) = long_packet(invariant.version, rest) else {
                counts.unparsed += 1;
                return;
            };
            match ty {
                LongType::Initial => {
                    counts.initial += 1;
                    self.count_initial_scid(invariant.scid);
                }
                LongType::ZeroRtt => counts.zero_rtt += 1,
                LongType::Handshake => {
                    counts.handshake += 1;
                    self.handshake_seen = true;
                }
            }
            rest = &rest[len.min(rest.len())..];
        }
    }

    /// The counts of `version`: its own until [`MAX_VERSIONS`] have their
    /// own, the shared [`OTHER_VERSIONS`] bucket after that.
    fn version_counts(&mut self, version: u32) -> &mut LongHeaders {
        let key = format!("{version:#010x}");
        let own_keys =
            self.long_headers.len() - usize::from(self.long_headers.contains_key(OTHER_VERSIONS));
        let key = if own_keys < MAX_VERSIONS || self.long_headers.contains_key(&key) {
            key
        } else {
            OTHER_VERSIONS.to_string()
        };
        self.long_headers.entry(key).or_default()
    }

    /// Counts a client Initial's source ID: a new handshake while fewer
    /// than [`MAX_TRACKED_SCIDS`] are remembered, untracked after.
    fn count_initial_scid(&mut self, scid: &[u8]) {
        if self.initial_scids.contains(scid) {
            return;
        }
        if self.initial_scids.len() < MAX_TRACKED_SCIDS {
            self.initial_scids.insert(scid.to_vec());
            self.client_initial_scids = self.initial_scids.len() as u64;
        } else {
            self.untracked_initials += 1;
        }
    }
}

/// The long-header packet types that carry a length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LongType {
    Initial,
    ZeroRtt,
    Handshake,
}

/// The type and whole length of the long-header packet at the start of
/// `packet`, in the layout of `version`; `None` for a version sift does
/// not know or a packet that does not parse.
fn long_packet(version: u32, packet: &[u8]) -> Option<(LongType, usize)> {
    match version {
        QUIC_V1 | QUIC_V2 => quic_packet(version, packet),
        VERSION => {
            let parsed = SIFT_V1.parse(packet).ok()?;
            let ty = match parsed.ty {
                PacketType::Initial => LongType::Initial,
                PacketType::ZeroRtt => LongType::ZeroRtt,
                PacketType::Handshake => LongType::Handshake,
                PacketType::OneRtt => return None,
            };
            Some((ty, parsed.packet_len))
        }
        _ => None,
    }
}

/// RFC 9000 §17.2: the type bits, the Initial's token, then the Length of
/// the rest (packet number and payload). QUIC v2's type bits are v1's plus
/// one (RFC 9369 §3.2).
fn quic_packet(version: u32, packet: &[u8]) -> Option<(LongType, usize)> {
    let invariant = parse_long_invariant(packet).ok()?;
    let bits = (packet[0] >> 4) & 0b11;
    let v1_bits = if version == QUIC_V2 {
        bits.wrapping_sub(1) & 0b11
    } else {
        bits
    };
    let ty = match v1_bits {
        0 => LongType::Initial,
        1 => LongType::ZeroRtt,
        2 => LongType::Handshake,
        _ => return None,
    };
    let mut reader = Reader::new(invariant.rest);
    if ty == LongType::Initial {
        let token_len = usize::try_from(reader.varint().ok()?).ok()?;
        reader.bytes(token_len).ok()?;
    }
    let length = usize::try_from(reader.varint().ok()?).ok()?;
    let header_len = packet.len() - invariant.rest.len() + reader.position();
    Some((ty, header_len.checked_add(length)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A QUIC v1 long header of type bits `ty` with `payload` bytes after
    /// the Length (an Initial gets an empty token).
    fn v1_packet(ty: u8, scid: &[u8], payload: usize) -> Vec<u8> {
        let mut p = vec![0xc0 | (ty << 4)];
        p.extend_from_slice(&QUIC_V1.to_be_bytes());
        p.push(4);
        p.extend_from_slice(&[9, 9, 9, 9]);
        p.push(scid.len() as u8);
        p.extend_from_slice(scid);
        if ty == 0 {
            p.push(0);
        }
        sift::wire::put_varint(&mut p, payload as u64);
        p.extend(std::iter::repeat_n(0xaa, payload));
        p
    }

    #[test]
    fn coalesced_v1_packets_are_counted_by_type() {
        let mut datagram = v1_packet(0, &[1, 2], 40);
        datagram.extend(v1_packet(2, &[1, 2], 30));
        datagram.extend_from_slice(&[0x40, 1, 2, 3]); // a short header after them
        let mut census = Census::default();
        census.record(&datagram);
        let v1 = &census.long_headers["0x00000001"];
        assert_eq!((v1.initial, v1.handshake, v1.zero_rtt), (1, 1, 0));
        assert_eq!(census.short_headers, 0, "the short header was coalesced");
        assert_eq!(census.bytes, datagram.len() as u64);
    }

    #[test]
    fn v2_packets_are_counted_by_their_own_type_bits() {
        // RFC 9369 §3.2: v2's Initial is v1's type bits 0b01, its
        // Handshake 0b11, its Retry 0b00.
        let v2 = |v1_type: u8| {
            let mut p = v1_packet(v1_type, &[1, 2], 30);
            p[0] = 0xc0 | (((v1_type + 1) & 0b11) << 4);
            p[1..5].copy_from_slice(&QUIC_V2.to_be_bytes());
            p
        };
        let mut datagram = v2(0);
        datagram.extend(v2(2));
        let mut census = Census::default();
        census.record(&datagram);
        let mut retry = vec![0xc0];
        retry.extend_from_slice(&QUIC_V2.to_be_bytes());
        retry.extend_from_slice(&[0, 0]);
        retry.extend_from_slice(&[0u8; 20]);
        census.record(&retry);
        let counts = &census.long_headers["0x6b3343cf"];
        assert_eq!(
            (
                counts.initial,
                counts.handshake,
                counts.retry,
                counts.unparsed
            ),
            (1, 1, 1, 0)
        );
    }

    #[test]
    fn handshakes_are_distinct_client_scids_in_initials() {
        let mut census = Census::default();
        for scid in [&[1u8, 1][..], &[1, 1], &[2, 2]] {
            census.record(&v1_packet(0, scid, 20));
        }
        census.record(&v1_packet(1, &[3, 3], 20));
        assert_eq!(census.client_initial_scids, 2);
        assert_eq!(census.long_headers["0x00000001"].zero_rtt, 1);
    }

    #[test]
    fn version_negotiation_retry_and_short_headers_are_told_apart() {
        let mut census = Census::default();
        let mut vn = vec![0x80, 0, 0, 0, 0, 1, 7, 1, 8];
        vn.extend_from_slice(&QUIC_V1.to_be_bytes());
        census.record(&vn);
        let mut retry = vec![0xf0];
        retry.extend_from_slice(&QUIC_V1.to_be_bytes());
        retry.extend_from_slice(&[0, 0]);
        retry.extend_from_slice(&[0u8; 20]);
        census.record(&retry);
        census.record(&[0x41, 2, 3]);
        assert_eq!(census.version_negotiation, 1);
        assert_eq!(census.long_headers["0x00000001"].retry, 1);
        assert_eq!(census.short_headers, 1);
    }

    #[test]
    fn bytes_before_validation_stop_at_the_clients_first_handshake_packet() {
        let mut client = Census::default();
        let mut before = BeforeValidation::default();
        let from_client = |census: &mut Census, before: &mut BeforeValidation, d: &[u8]| {
            census.record(d);
            before.record(true, d.len(), census.handshake_seen);
        };
        from_client(&mut client, &mut before, &v1_packet(0, &[1], 1100));
        before.record(false, 3000, client.handshake_seen);
        before.record(false, 400, client.handshake_seen);
        assert!(!before.within_limit(), "3400 > 3 × 1120");
        from_client(&mut client, &mut before, &v1_packet(2, &[1], 50));
        before.record(false, 50_000, client.handshake_seen);
        assert_eq!(before.server_bytes, 3400, "validated: no longer counted");
        assert_eq!(before.client_bytes, v1_packet(0, &[1], 1100).len() as u64);
    }

    #[test]
    fn versions_past_the_cap_share_one_bucket() {
        let mut census = Census::default();
        let versions = MAX_VERSIONS as u32 + 100;
        for version in 0..versions {
            let mut datagram = vec![0xc0];
            datagram.extend_from_slice(&(0x1a2a_0000 + version).to_be_bytes());
            datagram.extend_from_slice(&[0, 0, 1, 2, 3]);
            census.record(&datagram);
            census.record(&datagram);
        }
        assert_eq!(census.long_headers.len(), MAX_VERSIONS + 1);
        assert_eq!(census.long_headers[OTHER_VERSIONS].unparsed, 2 * 100);
        let counted: u64 = census.long_headers.values().map(|v| v.unparsed).sum();
        assert_eq!(
            counted,
            2 * u64::from(versions),
            "every packet counted once"
        );
    }

    #[test]
    fn client_scids_past_the_cap_are_counted_not_remembered() {
        let mut census = Census::default();
        let scids = MAX_TRACKED_SCIDS as u32 + 100;
        for scid in 0..scids {
            census.record(&v1_packet(0, &scid.to_be_bytes(), 20));
        }
        // A known ID again: neither a new handshake nor untracked.
        census.record(&v1_packet(0, &0u32.to_be_bytes(), 20));
        assert_eq!(census.client_initial_scids, MAX_TRACKED_SCIDS as u64);
        assert_eq!(census.untracked_initials, 100);
        assert_eq!(census.initial_scids.len(), MAX_TRACKED_SCIDS);
        assert_eq!(
            census.long_headers["0x00000001"].initial,
            u64::from(scids) + 1
        );
    }

    #[test]
    fn garbage_is_counted_as_bytes_and_nothing_else() {
        let mut census = Census::default();
        census.record(&[0xff; 3]);
        census.record(&[]);
        census.record(&[0xc0, 0xde, 0xad, 0xbe, 0xef, 0, 0, 5, 5]);
        assert_eq!(census.datagrams, 3);
        assert_eq!(census.long_headers["0xdeadbeef"].unparsed, 1);
    }
}
