//! Variable-length integers (RFC 9000 §16), fixed-width big-endian integers,
//! and the bounds-checked [`Reader`] every parser in `wire` is built on.

use super::WireError;

/// RFC 9000 §16: the largest value a varint holds, 2^62 - 1.
pub const VARINT_MAX: u64 = (1 << 62) - 1;

/// Bytes `put_varint` writes for `v`: 1, 2, 4 or 8 (RFC 9000 §16, Table 4).
pub fn varint_len(v: u64) -> usize {
    if v < (1 << 6) {
        1
    } else if v < (1 << 14) {
        2
    } else if v < (1 << 30) {
        4
    } else {
        8
    }
}

/// `v` if it fits a varint, else [`WireError::VarintTooLarge`]. For values
/// that come from a user (error codes, limits) before they reach an encoder.
pub fn check_varint(v: u64) -> Result<u64, WireError> {
    if v <= VARINT_MAX {
        Ok(v)
    } else {
        Err(WireError::VarintTooLarge(v))
    }
}

/// Appends `v` in its shortest varint form. The caller guarantees
/// `v <= VARINT_MAX` (see [`check_varint`]); larger values are a bug.
pub fn put_varint(out: &mut Vec<u8>, v: u64) {
    debug_assert!(v <= VARINT_MAX, "varint {v} exceeds 2^62 - 1");
    match varint_len(v) {
        1 => out.push(v as u8),
        2 => out.extend_from_slice(&(v as u16 | 0x4000).to_be_bytes()),
        4 => out.extend_from_slice(&(v as u32 | 0x8000_0000).to_be_bytes()),
        _ => out.extend_from_slice(&(v | 0xc000_0000_0000_0000).to_be_bytes()),
    }
}

/// Appends one byte.
pub fn put_u8(out: &mut Vec<u8>, v: u8) {
    out.push(v);
}

/// Appends a big-endian `u16`.
pub fn put_u16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_be_bytes());
}

/// Appends a big-endian `u32`.
pub fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_be_bytes());
}

/// A cursor over borrowed bytes: every read checks what remains first and
/// returns [`WireError::UnexpectedEnd`] instead of panicking. Slices it hands
/// out borrow from the input.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    position: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, position: 0 }
    }

    /// Bytes not yet read.
    pub fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.position)
    }

    /// Bytes read so far.
    pub fn position(&self) -> usize {
        self.position
    }

    /// True when everything has been read.
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }

    /// The unread bytes; does not advance.
    pub fn rest(&self) -> &'a [u8] {
        self.buf.get(self.position..).unwrap_or(&[])
    }

    /// The next `n` bytes, advancing past them.
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        let rest = self.rest();
        let taken = rest.get(..n).ok_or(WireError::UnexpectedEnd {
            needed: n,
            remaining: rest.len(),
        })?;
        self.position += n;
        Ok(taken)
    }

    /// The next `N` bytes as an array.
    fn array<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.bytes(N)?);
        Ok(out)
    }

    /// One byte.
    pub fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.array::<1>()?[0])
    }

    /// A big-endian `u16`.
    pub fn u16(&mut self) -> Result<u16, WireError> {
        Ok(u16::from_be_bytes(self.array()?))
    }

    /// A big-endian `u32`.
    pub fn u32(&mut self) -> Result<u32, WireError> {
        Ok(u32::from_be_bytes(self.array()?))
    }

    /// A varint in any of its four lengths (non-minimal encodings are
    /// accepted, as RFC 9000 §16 allows).
    pub fn varint(&mut self) -> Result<u64, WireError> {
        let first = *self.rest().first().ok_or(WireError::UnexpectedEnd {
            needed: 1,
            remaining: 0,
        })?;
        let len = 1usize << (first >> 6);
        let bytes = self.bytes(len)?;
        let mut value = u64::from(first & 0x3f);
        for byte in bytes.iter().skip(1) {
            value = (value << 8) | u64::from(*byte);
        }
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn encoded(v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        put_varint(&mut out, v);
        out
    }

    #[test]
    fn varint_length_changes_exactly_at_each_boundary() {
        // RFC 9000 Table 4: 6, 14, 30 and 62 usable bits.
        let cases = [
            (0, 1),
            (63, 1),
            (64, 2),
            (16_383, 2),
            (16_384, 4),
            ((1 << 30) - 1, 4),
            (1 << 30, 8),
            (VARINT_MAX, 8),
        ];
        for (value, len) in cases {
            assert_eq!(varint_len(value), len, "varint_len({value})");
            let bytes = encoded(value);
            assert_eq!(bytes.len(), len, "encoding of {value}");
            let mut reader = Reader::new(&bytes);
            assert_eq!(reader.varint(), Ok(value));
            assert!(reader.is_empty());
        }
    }

    #[test]
    fn varint_decodes_the_rfc_9000_appendix_a1_examples() {
        let cases: [(&[u8], u64); 5] = [
            (
                &[0xc2, 0x19, 0x7c, 0x5e, 0xff, 0x14, 0xe8, 0x8c],
                151_288_809_941_952_652,
            ),
            (&[0x9d, 0x7f, 0x3e, 0x7d], 494_878_333),
            (&[0x7b, 0xbd], 15_293),
            (&[0x25], 37),
            // Non-minimal two-byte encoding of 37 is still 37.
            (&[0x40, 0x25], 37),
        ];
        for (bytes, value) in cases {
            assert_eq!(Reader::new(bytes).varint(), Ok(value), "{bytes:02x?}");
        }
        assert_eq!(encoded(151_288_809_941_952_652), cases[0].0);
        assert_eq!(encoded(494_878_333), cases[1].0);
        assert_eq!(encoded(15_293), cases[2].0);
    }

    #[test]
    fn truncated_varint_reports_how_many_bytes_were_missing() {
        // 0x80 announces a 4-byte varint; only 2 bytes are there.
        let mut reader = Reader::new(&[0x80, 0x01]);
        assert_eq!(
            reader.varint(),
            Err(WireError::UnexpectedEnd {
                needed: 4,
                remaining: 2
            })
        );
        assert_eq!(reader.position(), 0, "a failed read does not advance");
        assert_eq!(
            Reader::new(&[]).varint(),
            Err(WireError::UnexpectedEnd {
                needed: 1,
                remaining: 0
            })
        );
    }

    #[test]
    fn check_varint_rejects_values_above_2_pow_62_minus_1() {
        assert_eq!(check_varint(VARINT_MAX), Ok(VARINT_MAX));
        assert_eq!(
            check_varint(VARINT_MAX + 1),
            Err(WireError::VarintTooLarge(VARINT_MAX + 1))
        );
    }

    #[test]
    fn fixed_width_reads_are_big_endian_and_bounds_checked() {
        let mut out = Vec::new();
        put_u8(&mut out, 0xab);
        put_u16(&mut out, 0x1234);
        put_u32(&mut out, 0xdead_beef);
        assert_eq!(out, [0xab, 0x12, 0x34, 0xde, 0xad, 0xbe, 0xef]);
        let mut reader = Reader::new(&out);
        assert_eq!(reader.u8(), Ok(0xab));
        assert_eq!(reader.u16(), Ok(0x1234));
        assert_eq!(reader.rest(), &[0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(reader.u32(), Ok(0xdead_beef));
        assert_eq!(
            reader.u8(),
            Err(WireError::UnexpectedEnd {
                needed: 1,
                remaining: 0
            })
        );
        assert_eq!(reader.position(), 7);
    }

    proptest! {
        #[test]
        fn varint_round_trips_any_value_up_to_the_maximum(value in 0..=VARINT_MAX) {
            let bytes = encoded(value);
            prop_assert_eq!(bytes.len(), varint_len(value));
            let mut reader = Reader::new(&bytes);
            prop_assert_eq!(reader.varint(), Ok(value));
            prop_assert!(reader.is_empty());
        }

        #[test]
        fn reader_never_reads_past_its_input(
            bytes in proptest::collection::vec(any::<u8>(), 0..32),
            wanted in 0usize..40,
        ) {
            let mut reader = Reader::new(&bytes);
            let _ = reader.varint();
            let before = reader.position();
            match reader.bytes(wanted) {
                Ok(taken) => prop_assert_eq!(taken.len(), wanted),
                Err(_) => prop_assert_eq!(reader.position(), before),
            }
            prop_assert!(reader.position() <= bytes.len());
        }
    }
}
