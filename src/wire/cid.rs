//! Connection IDs: up to 20 opaque bytes held inline, so they are `Copy` and
//! never allocate.

use std::fmt;

use super::WireError;

/// RFC 9000 §17.2: a connection ID is at most 20 bytes in version 1.
pub const MAX_CID_LEN: usize = 20;

/// Length of the destination connection ID in a short (1-RTT) header
/// (DESIGN §3: fixed, so short headers need no length byte).
pub const SHORT_HEADER_DCID_LEN: usize = 8;

/// An opaque connection ID of 0 to 20 bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ConnectionId {
    // Bytes past `len` are always zero, so the derived comparisons and hash
    // see only the ID itself.
    bytes: [u8; MAX_CID_LEN],
    len: u8,
}

impl ConnectionId {
    /// The zero-length connection ID.
    pub const EMPTY: ConnectionId = ConnectionId {
        bytes: [0; MAX_CID_LEN],
        len: 0,
    };

    /// A connection ID holding a copy of `bytes`, which must be at most 20
    /// bytes long.
    pub fn new(bytes: &[u8]) -> Result<Self, WireError> {
        let mut id = Self::EMPTY;
        let slot = id
            .bytes
            .get_mut(..bytes.len())
            .ok_or(WireError::ConnectionIdTooLong(bytes.len()))?;
        slot.copy_from_slice(bytes);
        // Cannot truncate: bytes.len() <= MAX_CID_LEN here.
        id.len = bytes.len() as u8;
        Ok(id)
    }

    /// The ID's bytes.
    pub fn as_slice(&self) -> &[u8] {
        self.bytes.get(..usize::from(self.len)).unwrap_or(&[])
    }

    /// Length in bytes, 0 to 20.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// True for the zero-length ID.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl TryFrom<&[u8]> for ConnectionId {
    type Error = WireError;

    fn try_from(bytes: &[u8]) -> Result<Self, WireError> {
        Self::new(bytes)
    }
}

impl AsRef<[u8]> for ConnectionId {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl fmt::Display for ConnectionId {
    /// Lower-case hex, no separators; the empty ID prints as nothing.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in self.as_slice() {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for ConnectionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ConnectionId({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_id_keeps_up_to_twenty_bytes() {
        let bytes: Vec<u8> = (1..=20).collect();
        let id = ConnectionId::new(&bytes).expect("20 bytes fit");
        assert_eq!(id.as_slice(), bytes.as_slice());
        assert_eq!(id.len(), 20);
        assert!(!id.is_empty());
    }

    #[test]
    fn connection_id_of_twenty_one_bytes_is_rejected_with_its_length() {
        assert_eq!(
            ConnectionId::new(&[0; 21]),
            Err(WireError::ConnectionIdTooLong(21))
        );
    }

    #[test]
    fn connection_id_prints_as_hex() {
        let id = ConnectionId::new(&[0x00, 0xab, 0x0f]).expect("3 bytes fit");
        assert_eq!(id.to_string(), "00ab0f");
        assert_eq!(format!("{id:?}"), "ConnectionId(00ab0f)");
        assert_eq!(ConnectionId::EMPTY.to_string(), "");
    }

    #[test]
    fn ids_compare_by_content_and_length() {
        let short = ConnectionId::new(&[1, 2]).expect("fits");
        let padded = ConnectionId::new(&[1, 2, 0]).expect("fits");
        assert_ne!(short, padded, "a trailing zero byte is part of the ID");
        assert_eq!(short, ConnectionId::new(&[1, 2]).expect("fits"));
    }
}
