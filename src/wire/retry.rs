//! The Retry packet (RFC 9000 §17.2.5): a server's stateless answer to a
//! client Initial, asking it to prove it owns its address by sending its
//! Initial again with the token. It goes out in the version of the Initial
//! it answers; the layouts differ only in the flags.
//!
//! ```text
//! sift/1:  flags = 1 1 1 K 0 0 0 0 | version(4) | dcid_len(1) dcid | scid_len(1) scid
//!          | token(rest) | integrity_tag(16)
//! QUIC v1: flags = 1 1 1 1 U U U U (U: unused, any value), the rest alike
//! QUIC v2: flags = 1 1 0 0 U U U U (RFC 9369 §3.2: Retry is type 0b00)
//! ```
//!
//! `dcid` is the client's source connection ID, `scid` the connection ID
//! the server picked; the client uses it as its destination from then on.
//! The integrity tag (computed in `crypto::retry`) covers the client's
//! original destination connection ID and every byte of the packet before
//! it, so corruption is caught and only someone who saw the client's
//! Initial can make a Retry it accepts.

use super::{
    put_u32, put_u8, ConnectionId, Reader, WireError, MAX_CID_LEN, QUIC_V1, QUIC_V2, VERSION,
};

/// Bytes of the Retry integrity tag.
pub const RETRY_INTEGRITY_TAG_LEN: usize = 16;
/// A sift/1 Retry's flags byte: long form, type 0b11, reserved bits zero.
pub const RETRY_FLAGS: u8 = 0x80 | (0b11 << 5);
/// A QUIC v1 Retry's flags: long form, fixed bit, type 0b11 (the low four
/// bits are unused).
const QUIC_RETRY_FLAGS: u8 = 0xf0;
/// A QUIC v2 Retry's flags: long form, fixed bit, type 0b00 (RFC 9369
/// §3.2; the low four bits are unused).
const QUIC_V2_RETRY_FLAGS: u8 = 0xc0;
/// The largest token a Retry may carry: the token goes back in an Initial,
/// which must fit a 1200-byte datagram with the client's first flight.
pub const MAX_RETRY_TOKEN_LEN: usize = 512;

/// A Retry packet, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retry<'a> {
    /// The version it was sent in.
    pub version: u32,
    /// The client's source connection ID.
    pub dcid: ConnectionId,
    /// The connection ID the server chose for the client to use.
    pub scid: ConnectionId,
    /// The token to send back in every later Initial.
    pub token: &'a [u8],
    /// The packet up to the integrity tag, which the tag covers.
    pub signed: &'a [u8],
    /// The integrity tag.
    pub tag: &'a [u8; RETRY_INTEGRITY_TAG_LEN],
}

/// Whether `datagram` starts like a Retry of a version sift speaks (the
/// flags byte and version only; [`parse_retry`] checks the rest).
pub fn is_retry(datagram: &[u8]) -> bool {
    let Some(version) = datagram.get(1..5) else {
        return false;
    };
    match u32::from_be_bytes([version[0], version[1], version[2], version[3]]) {
        VERSION => datagram[0] & 0xf0 == RETRY_FLAGS & 0xf0,
        QUIC_V1 => datagram[0] & 0xf0 == QUIC_RETRY_FLAGS,
        QUIC_V2 => datagram[0] & 0xf0 == QUIC_V2_RETRY_FLAGS,
        _ => false,
    }
}

/// The flags of a Retry in `version`, whose flags byte is `flags`, check.
fn retry_flags_valid(version: u32, flags: u8) -> bool {
    match version {
        VERSION => flags == RETRY_FLAGS,
        QUIC_V1 => flags & 0xf0 == QUIC_RETRY_FLAGS,
        QUIC_V2 => flags & 0xf0 == QUIC_V2_RETRY_FLAGS,
        _ => false,
    }
}

/// Parses a Retry that fills `datagram` (a Retry is never coalesced).
pub fn parse_retry(datagram: &[u8]) -> Result<Retry<'_>, WireError> {
    let mut reader = Reader::new(datagram);
    let flags = reader.u8()?;
    let version = reader.u32()?;
    if !retry_flags_valid(version, flags) {
        return Err(WireError::InvalidHeader(
            "not a Retry of a version we speak",
        ));
    }
    let dcid = read_cid(&mut reader)?;
    let scid = read_cid(&mut reader)?;
    let token_len = reader
        .remaining()
        .checked_sub(RETRY_INTEGRITY_TAG_LEN)
        .ok_or(WireError::InvalidHeader("Retry shorter than its tag"))?;
    if token_len == 0 || token_len > MAX_RETRY_TOKEN_LEN {
        return Err(WireError::InvalidHeader("Retry token empty or too long"));
    }
    let token = reader.bytes(token_len)?;
    let signed = &datagram[..reader.position()];
    let tag = reader
        .bytes(RETRY_INTEGRITY_TAG_LEN)?
        .try_into()
        .map_err(|_| WireError::InvalidHeader("Retry tag"))?;
    Ok(Retry {
        version,
        dcid,
        scid,
        token,
        signed,
        tag,
    })
}

/// Appends a Retry in `version` up to its integrity tag (which the caller
/// computes over these bytes and appends). The token must be
/// 1..=[`MAX_RETRY_TOKEN_LEN`] bytes.
pub fn encode_retry_unsigned(
    out: &mut Vec<u8>,
    version: u32,
    dcid: &ConnectionId,
    scid: &ConnectionId,
    token: &[u8],
) -> Result<(), WireError> {
    if token.is_empty() || token.len() > MAX_RETRY_TOKEN_LEN {
        return Err(WireError::InvalidHeader("Retry token empty or too long"));
    }
    let flags = match version {
        VERSION => RETRY_FLAGS,
        QUIC_V1 => QUIC_RETRY_FLAGS,
        QUIC_V2 => QUIC_V2_RETRY_FLAGS,
        _ => return Err(WireError::UnsupportedVersion(version)),
    };
    put_u8(out, flags);
    put_u32(out, version);
    for cid in [dcid, scid] {
        put_u8(out, cid.len() as u8);
        out.extend_from_slice(cid.as_slice());
    }
    out.extend_from_slice(token);
    Ok(())
}

fn read_cid(reader: &mut Reader<'_>) -> Result<ConnectionId, WireError> {
    let len = usize::from(reader.u8()?);
    if len > MAX_CID_LEN {
        return Err(WireError::ConnectionIdTooLong(len));
    }
    ConnectionId::new(reader.bytes(len)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cid(byte: u8, len: usize) -> ConnectionId {
        ConnectionId::new(&vec![byte; len]).unwrap()
    }

    fn retry(token: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_retry_unsigned(&mut out, VERSION, &cid(1, 8), &cid(2, 20), token).unwrap();
        out.extend_from_slice(&[0xaa; RETRY_INTEGRITY_TAG_LEN]);
        out
    }

    #[test]
    fn a_retry_round_trips() {
        let bytes = retry(b"token");
        assert!(is_retry(&bytes));
        let parsed = parse_retry(&bytes).unwrap();
        assert_eq!(parsed.dcid, cid(1, 8));
        assert_eq!(parsed.scid, cid(2, 20));
        assert_eq!(parsed.token, b"token");
        assert_eq!(
            parsed.signed,
            &bytes[..bytes.len() - RETRY_INTEGRITY_TAG_LEN]
        );
        assert_eq!(parsed.tag, &[0xaa; RETRY_INTEGRITY_TAG_LEN]);
    }

    #[test]
    fn truncated_or_odd_retries_are_errors() {
        let bytes = retry(b"token");
        // Cut into the IDs or leaving no token: errors. (A cut inside the
        // token moves the tag, which then fails to verify: `crypto::retry`.)
        let ids_end = 1 + 4 + 1 + 8 + 1 + 20;
        for len in 0..=ids_end + RETRY_INTEGRITY_TAG_LEN {
            assert!(parse_retry(&bytes[..len]).is_err(), "{len}");
        }
        // No token at all: the IDs, then only the tag.
        let mut tokenless = bytes[..1 + 4 + 1 + 8 + 1 + 20].to_vec();
        tokenless.extend_from_slice(&[0xaa; RETRY_INTEGRITY_TAG_LEN]);
        assert!(parse_retry(&tokenless).is_err());
        let mut flags = bytes.clone();
        flags[0] |= 0x01;
        assert!(parse_retry(&flags).is_err());
        let (one, two) = (cid(1, 8), cid(2, 8));
        assert!(encode_retry_unsigned(&mut Vec::new(), VERSION, &one, &two, b"").is_err());
        let long = vec![0; MAX_RETRY_TOKEN_LEN + 1];
        assert!(encode_retry_unsigned(&mut Vec::new(), VERSION, &one, &two, &long).is_err());
        assert!(encode_retry_unsigned(&mut Vec::new(), 7, &one, &two, b"t").is_err());
    }

    #[test]
    fn initials_and_handshakes_are_not_retries() {
        assert!(!is_retry(&[0xc0, 0x53, 0x46, 0x00, 0x01]));
        assert!(!is_retry(&[0x80, 0x53, 0x46, 0x00, 0x01]));
        assert!(!is_retry(&[0xe0, 0, 0, 0, 1]), "a v1 Handshake");
        assert!(!is_retry(&[0xf0, 0, 0, 0, 2]), "another version");
        // RFC 9369 §3.2: v1's Retry type bits are v2's Handshake, and v2's
        // Retry type bits are v1's Initial.
        assert!(!is_retry(&[0xf0, 0x6b, 0x33, 0x43, 0xcf]), "a v2 Handshake");
        assert!(!is_retry(&[0xd0, 0x6b, 0x33, 0x43, 0xcf]), "a v2 Initial");
        assert!(!is_retry(&[0xc0, 0, 0, 0, 1]), "a v1 Initial");
        assert!(is_retry(&[0xcf, 0x6b, 0x33, 0x43, 0xcf]), "a v2 Retry");
    }

    #[test]
    fn the_rfc_9369_retry_parses_as_a_v2_retry() {
        // RFC 9369 §A.4.
        let bytes: Vec<u8> = (0..72)
            .step_by(2)
            .map(|i| {
                let text =
                    "cf6b3343cf0008f067a5502a4262b5746f6b656ec8646ce8bfe33952d955543665dcc7b6";
                u8::from_str_radix(&text[i..i + 2], 16).unwrap()
            })
            .collect();
        let parsed = parse_retry(&bytes).unwrap();
        assert_eq!(parsed.version, QUIC_V2);
        assert_eq!(parsed.dcid, ConnectionId::EMPTY);
        assert_eq!(
            parsed.scid.as_slice(),
            [0xf0, 0x67, 0xa5, 0x50, 0x2a, 0x42, 0x62, 0xb5]
        );
        assert_eq!(parsed.token, b"token");
        let mut ours = Vec::new();
        encode_retry_unsigned(&mut ours, QUIC_V2, &parsed.dcid, &parsed.scid, b"token").unwrap();
        assert_eq!(ours[0], 0xc0, "unused bits sent as zero");
        assert_eq!(ours[1..], parsed.signed[1..]);
    }

    #[test]
    fn a_quic_v1_retry_takes_any_unused_bits() {
        let mut bytes = Vec::new();
        encode_retry_unsigned(&mut bytes, QUIC_V1, &cid(1, 0), &cid(2, 20), b"t").unwrap();
        bytes.extend_from_slice(&[0xaa; RETRY_INTEGRITY_TAG_LEN]);
        assert_eq!(bytes[0], 0xf0);
        bytes[0] = 0xf7;
        assert!(is_retry(&bytes));
        let parsed = parse_retry(&bytes).unwrap();
        assert_eq!(parsed.version, QUIC_V1);
        assert_eq!(parsed.token, b"t");
    }
}
