//! Packet numbers on the wire: always the low 32 bits, recovered against the
//! largest packet number received so far (RFC 9000 §17.1, §A.3).

/// Bytes of a packet number in every header (DESIGN §3: fixed 4 bytes, so
/// the header layout never depends on the number).
pub const PACKET_NUMBER_LEN: usize = 4;

/// The bits of `packet_number` that go on the wire.
pub fn truncate_packet_number(packet_number: u64) -> u32 {
    // Truncation is the point: only the low 32 bits are sent.
    packet_number as u32
}

/// The full packet number closest to `largest_received + 1` whose low 32 bits
/// are `truncated` (RFC 9000 §A.3 with pn_nbits = 32). With nothing received
/// yet, the expected number is 0.
pub fn decode_packet_number(largest_received: Option<u64>, truncated: u32) -> u64 {
    const WINDOW: u64 = 1 << 32; // pn_win
    const HALF_WINDOW: u64 = WINDOW / 2; // pn_hwin
    const MASK: u64 = WINDOW - 1; // pn_mask
    /// RFC 9000 §A.3: candidates must stay below 2^62.
    const LIMIT: u64 = 1 << 62;

    let expected = largest_received.map_or(0, |largest| largest.saturating_add(1));
    let candidate = (expected & !MASK) | u64::from(truncated);
    if candidate.saturating_add(HALF_WINDOW) <= expected && candidate < LIMIT - WINDOW {
        candidate + WINDOW
    } else if candidate > expected.saturating_add(HALF_WINDOW) && candidate >= WINDOW {
        candidate - WINDOW
    } else {
        candidate
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn first_packet_decodes_against_an_expected_zero() {
        assert_eq!(decode_packet_number(None, 0), 0);
        assert_eq!(decode_packet_number(None, 7), 7);
        // 2^32 - 1 is more than half a window above 0 but cannot go lower.
        assert_eq!(decode_packet_number(None, u32::MAX), u64::from(u32::MAX));
    }

    #[test]
    fn decoding_wraps_forward_across_a_32_bit_boundary() {
        // largest = 2^32 - 2, expected = 2^32 - 1; truncated 1 is 2 ahead of
        // expected in the next window: 2^32 + 1.
        assert_eq!(decode_packet_number(Some((1 << 32) - 2), 1), (1 << 32) + 1);
    }

    #[test]
    fn decoding_wraps_backward_for_a_late_packet() {
        // largest = 2^32 + 5, expected = 2^32 + 6; truncated 2^32 - 3 is a
        // late packet from the previous window: 2^32 - 3.
        assert_eq!(
            decode_packet_number(Some((1 << 32) + 5), u32::MAX - 2),
            (1 << 32) - 3
        );
    }

    #[test]
    fn huge_largest_received_does_not_overflow() {
        let decoded = decode_packet_number(Some(u64::MAX), 0);
        assert_eq!(decoded & 0xffff_ffff, 0);
    }

    proptest! {
        #[test]
        fn packet_number_within_half_a_window_of_expected_round_trips(
            largest in 0u64..(1 << 62) - (1 << 31),
            offset in -(1i64 << 30)..=(1i64 << 30),
        ) {
            let expected = largest + 1;
            let pn = expected.saturating_add_signed(offset);
            prop_assume!(pn < (1 << 62));
            prop_assert_eq!(
                decode_packet_number(Some(largest), truncate_packet_number(pn)),
                pn
            );
        }
    }
}
