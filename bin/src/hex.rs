//! Lowercase hex, for digests and tokens that people and files read.

/// `bytes` as lowercase hex, two digits a byte.
pub fn encode(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The bytes `text` spells in hex (either case), or `None` for an odd
/// length or anything but hex digits.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 || !text.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_what_is_not_hex() {
        assert_eq!(encode(&[0x00, 0xab, 0x7f]), "00ab7f");
        assert_eq!(decode("00AB7f"), Some(vec![0x00, 0xab, 0x7f]));
        assert_eq!(decode(""), Some(vec![]));
        for bad in ["abc", "zz", "+f", "é1"] {
            assert_eq!(decode(bad), None, "{bad}");
        }
    }
}
