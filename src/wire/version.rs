//! Version negotiation (RFC 9000 §6 and §17.2.1), on the version-independent
//! long header of RFC 8999 §5.1.
//!
//! A server that gets a long header of a version it does not speak answers
//! with a Version Negotiation packet: version 0, the client's connection IDs
//! swapped, and the versions it does speak. Both ends read the connection
//! IDs through [`parse_long_invariant`], which holds for every version: an
//! unknown version may lay out everything after them differently.

use super::header::LONG_FORM_BIT;
use super::{put_u32, put_u8, Reader, WireError};

/// The version field of a Version Negotiation packet.
pub const VERSION_NEGOTIATION: u32 = 0;

/// Connection IDs in a long header of any version may be this long (RFC 8999
/// §5.1), longer than v1's 20 bytes; a server echoes them as they are.
pub const MAX_INVARIANT_CID_LEN: usize = 255;

/// The fields every version's long header shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LongInvariant<'a> {
    /// The version field.
    pub version: u32,
    /// Destination connection ID (up to 255 bytes).
    pub dcid: &'a [u8],
    /// Source connection ID (up to 255 bytes).
    pub scid: &'a [u8],
    /// Everything after the connection IDs.
    pub rest: &'a [u8],
}

/// Reads the version-independent fields of a long header; an error for a
/// short header or a datagram too short to hold them.
pub fn parse_long_invariant(datagram: &[u8]) -> Result<LongInvariant<'_>, WireError> {
    let mut reader = Reader::new(datagram);
    if reader.u8()? & LONG_FORM_BIT == 0 {
        return Err(WireError::InvalidHeader("not a long header"));
    }
    let version = reader.u32()?;
    let dcid_len = usize::from(reader.u8()?);
    let dcid = reader.bytes(dcid_len)?;
    let scid_len = usize::from(reader.u8()?);
    let scid = reader.bytes(scid_len)?;
    let rest = reader.bytes(reader.remaining())?;
    Ok(LongInvariant {
        version,
        dcid,
        scid,
        rest,
    })
}

/// A Version Negotiation packet, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionNegotiation<'a> {
    /// The client's source connection ID, echoed.
    pub dcid: &'a [u8],
    /// The client's destination connection ID, echoed.
    pub scid: &'a [u8],
    versions: &'a [u8],
}

impl VersionNegotiation<'_> {
    /// The versions the server offers, in its order.
    pub fn versions(&self) -> impl Iterator<Item = u32> + '_ {
        self.versions
            .chunks_exact(4)
            .map(|v| u32::from_be_bytes([v[0], v[1], v[2], v[3]]))
    }
}

/// Parses a Version Negotiation packet: version 0 and a non-empty list of
/// 32-bit versions filling the rest of the datagram.
pub fn parse_version_negotiation(datagram: &[u8]) -> Result<VersionNegotiation<'_>, WireError> {
    let header = parse_long_invariant(datagram)?;
    if header.version != VERSION_NEGOTIATION {
        return Err(WireError::InvalidHeader("not a version negotiation packet"));
    }
    if header.rest.is_empty() || header.rest.len() % 4 != 0 {
        return Err(WireError::InvalidHeader(
            "version negotiation list is empty or not whole versions",
        ));
    }
    Ok(VersionNegotiation {
        dcid: header.dcid,
        scid: header.scid,
        versions: header.rest,
    })
}

/// Writes a Version Negotiation packet answering a client whose long header
/// carried `client_dcid` and `client_scid`: the IDs swapped, then
/// `versions`. `unused_bits` fill the first byte's seven free bits (RFC 9000
/// §17.2.1 asks for them to be random). IDs longer than 255 bytes cannot
/// come from a parsed header and are refused.
pub fn encode_version_negotiation(
    out: &mut Vec<u8>,
    unused_bits: u8,
    client_dcid: &[u8],
    client_scid: &[u8],
    versions: &[u32],
) -> Result<(), WireError> {
    for cid in [client_dcid, client_scid] {
        if cid.len() > MAX_INVARIANT_CID_LEN {
            return Err(WireError::InvalidHeader(
                "connection ID longer than 255 bytes",
            ));
        }
    }
    put_u8(out, LONG_FORM_BIT | unused_bits);
    put_u32(out, VERSION_NEGOTIATION);
    // The client's source ID is our destination, and the reverse.
    for cid in [client_scid, client_dcid] {
        put_u8(out, cid.len() as u8);
        out.extend_from_slice(cid);
    }
    for &version in versions {
        put_u32(out, version);
    }
    Ok(())
}

/// A version's name for messages: the ones a sift user is likely to meet.
pub fn version_name(version: u32) -> String {
    match version {
        super::VERSION => "sift/1".into(),
        0x0000_0001 => "QUIC v1".into(),
        0x6b33_43cf => "QUIC v2".into(),
        // RFC 9000 §15: versions a server lists to keep clients honest.
        v if v & 0x0f0f_0f0f == 0x0a0a_0a0a => format!("{v:#010x} (reserved)"),
        v => format!("{v:#010x}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::VERSION;

    #[test]
    fn a_version_negotiation_swaps_the_ids_and_lists_the_versions() {
        let mut out = Vec::new();
        encode_version_negotiation(&mut out, 0x35, &[1, 2, 3], &[9; 8], &[VERSION, 0x1a2a3a4a])
            .unwrap();
        assert_eq!(out[0], 0x80 | 0x35);
        let vn = parse_version_negotiation(&out).unwrap();
        assert_eq!(vn.dcid, &[9; 8]);
        assert_eq!(vn.scid, &[1, 2, 3]);
        assert_eq!(vn.versions().collect::<Vec<_>>(), [VERSION, 0x1a2a3a4a]);
    }

    #[test]
    fn a_version_negotiation_reads_the_same_whatever_its_unused_bits() {
        // RFC 9000 §17.2.1: the seven bits after the form bit are set at
        // random by a server, and a client ignores them.
        let mut first = Vec::new();
        encode_version_negotiation(&mut first, 0, &[1; 8], &[2; 8], &[VERSION]).unwrap();
        let expected = parse_version_negotiation(&first).unwrap();
        for unused in 1..0x80 {
            let mut out = Vec::new();
            encode_version_negotiation(&mut out, unused, &[1; 8], &[2; 8], &[VERSION]).unwrap();
            assert_eq!(parse_version_negotiation(&out).unwrap(), expected);
        }
    }

    #[test]
    fn long_connection_ids_of_other_versions_are_read_and_echoed() {
        // An unknown version with a 200-byte destination ID (RFC 8999 allows 255).
        let mut datagram = vec![0xc0, 0xff, 0, 0, 0x1d, 200];
        datagram.extend_from_slice(&[7; 200]);
        datagram.push(0);
        datagram.extend_from_slice(&[0; 10]);
        let header = parse_long_invariant(&datagram).unwrap();
        assert_eq!(header.version, 0xff00_001d);
        assert_eq!(header.dcid.len(), 200);
        assert!(header.scid.is_empty());
        assert_eq!(header.rest.len(), 10);
        let mut out = Vec::new();
        encode_version_negotiation(&mut out, 0, header.dcid, header.scid, &[VERSION]).unwrap();
        assert_eq!(parse_version_negotiation(&out).unwrap().scid, &[7; 200]);
    }

    #[test]
    fn malformed_version_negotiations_are_errors() {
        let mut good = Vec::new();
        encode_version_negotiation(&mut good, 0, &[1], &[2], &[VERSION]).unwrap();
        // Every truncation fails: no list, a partial version, or cut IDs.
        for len in 0..good.len() {
            assert!(parse_version_negotiation(&good[..len]).is_err(), "{len}");
        }
        let mut odd = good.clone();
        odd.push(0);
        assert!(parse_version_negotiation(&odd).is_err());
        // Not version 0.
        let mut other = good.clone();
        other[4] = 1;
        assert!(parse_version_negotiation(&other).is_err());
        // A short header is never one.
        assert!(parse_long_invariant(&[0x40, 0, 0, 0, 0]).is_err());
    }

    #[test]
    fn versions_have_names_users_recognise() {
        assert_eq!(version_name(VERSION), "sift/1");
        assert_eq!(version_name(1), "QUIC v1");
        assert_eq!(version_name(0x6b3343cf), "QUIC v2");
        assert_eq!(version_name(0x1a2a3a4a), "0x1a2a3a4a (reserved)");
        assert_eq!(version_name(0xff00001d), "0xff00001d");
    }
}
