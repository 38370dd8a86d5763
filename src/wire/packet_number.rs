//! Packet numbers on the wire, recovered against the largest packet number
//! received so far (RFC 9000 §17.1, §A.3): sift/1 always sends the low 32
//! bits; QUIC v1 sends 1 to 4 bytes, as few as keep twice the unacknowledged
//! range unambiguous (§A.2).

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
    decode_packet_number_of_len(largest_received, u64::from(truncated), PACKET_NUMBER_LEN)
}

/// RFC 9000 §A.3 for a packet number sent in `len` bytes (1 to 4).
pub fn decode_packet_number_of_len(
    largest_received: Option<u64>,
    truncated: u64,
    len: usize,
) -> u64 {
    /// RFC 9000 §A.3: candidates must stay below 2^62.
    const LIMIT: u64 = 1 << 62;
    let window: u64 = 1 << (8 * len.clamp(1, PACKET_NUMBER_LEN)); // pn_win
    let half_window = window / 2; // pn_hwin
    let mask = window - 1; // pn_mask

    let expected = largest_received.map_or(0, |largest| largest.saturating_add(1));
    let candidate = (expected & !mask) | (truncated & mask);
    if candidate.saturating_add(half_window) <= expected && candidate < LIMIT - window {
        candidate + window
    } else if candidate > expected.saturating_add(half_window) && candidate >= window {
        candidate - window
    } else {
        candidate
    }
}

/// Bytes QUIC v1 sends `packet_number` in (RFC 9000 §A.2): enough for
/// twice the distance to the largest acknowledged number. `None` when even
/// 4 bytes are too few (2^31 or more numbers unacknowledged): RFC 9000
/// §17.1 requires a length that spans twice that distance, so such a packet
/// must not be sent at all — a shorter number would decode to another.
pub fn packet_number_len(packet_number: u64, largest_acked: Option<u64>) -> Option<usize> {
    let unacked = match largest_acked {
        Some(largest) => packet_number.saturating_sub(largest),
        None => packet_number.saturating_add(1),
    };
    // Bits to represent twice the range (RFC 9000 §A.2: log2(n) + 1).
    let bits = 64 - unacked.saturating_mul(2).leading_zeros() as usize;
    let len = bits.div_ceil(8).max(1);
    (len <= PACKET_NUMBER_LEN).then_some(len)
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

    #[test]
    fn rfc_9000_appendix_a_examples_decode_and_encode() {
        // §A.3: largest 0xa82f30ea, 2-byte 0x9b32 decodes to 0xa82f9b32.
        assert_eq!(
            decode_packet_number_of_len(Some(0xa82f_30ea), 0x9b32, 2),
            0xa82f_9b32
        );
        // §A.2: 0xac5c02 with 0xabe8b3 acknowledged needs 2 bytes;
        // 0xace8fe with the same acknowledged needs 3.
        assert_eq!(packet_number_len(0xac5c02, Some(0xabe8b3)), Some(2));
        assert_eq!(packet_number_len(0xace8fe, Some(0xabe8b3)), Some(3));
        assert_eq!(packet_number_len(0, None), Some(1));
    }

    #[test]
    fn a_distance_four_bytes_cannot_span_has_no_length() {
        // RFC 9000 §17.1: 4 bytes span 2^32 numbers, so at most 2^31 - 1
        // may lie between the acknowledged and the packet.
        assert_eq!(packet_number_len((1 << 31) - 1, Some(0)), Some(4));
        assert_eq!(packet_number_len(1 << 31, Some(0)), None);
        // The fuzz finding (fuzz/corpus/packet_open_quic/regression-pn-lags-2-38).
        assert_eq!(packet_number_len((1 << 38) + 5, Some(5)), None);
        assert_eq!(packet_number_len(u64::MAX >> 2, None), None);
    }

    proptest! {
        #[test]
        fn shortest_encoding_decodes_at_a_receiver_that_saw_the_acknowledged(
            largest_acked in proptest::option::of(0u64..(1 << 40)),
            ahead in 1u64..(1 << 30),
            // The receiver saw anything from the acknowledged to just before.
            seen in 0u64..(1 << 30),
        ) {
            let pn = largest_acked.map_or(ahead - 1, |largest| largest + ahead);
            let len = packet_number_len(pn, largest_acked).expect("within 2^30");
            let received = largest_acked.map(|largest| largest + seen.min(ahead - 1));
            let truncated = pn & ((1u64 << (8 * len)) - 1);
            prop_assert_eq!(decode_packet_number_of_len(received, truncated, len), pn);
        }

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
