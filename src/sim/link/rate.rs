//! Serialization: how long a packet occupies the link at `rate`, with
//! netem's link-layer framing (`rate RATE [PACKETOVERHEAD [CELLSIZE
//! [CELLOVERHEAD]]]`).
//!
//! Following the kernel's `packet_time_ns()` (net/sched/sch_netem.c): the
//! packet overhead is added to the datagram length first; with a cell size
//! the result is rounded up to whole cells and each cell costs
//! `cell_size + cell_overhead` bytes (ATM: `rate 1mbit 0 48 5`, 48-byte
//! payload cells with 5-byte headers). A negative overhead may shrink the
//! accounted length, never below zero.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Link-layer framing charged on top of each datagram at the serializer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Framing {
    /// Bytes added to (or, if negative, removed from) every packet: netem PACKETOVERHEAD.
    pub packet_overhead: i32,
    /// Cell size in bytes; 0 = no cells: netem CELLSIZE.
    pub cell_size: u32,
    /// Bytes added to (or removed from) every cell: netem CELLOVERHEAD.
    pub cell_overhead: i32,
}

impl Framing {
    /// No framing: the datagram's own length is what the link carries.
    pub fn is_none(&self) -> bool {
        *self == Framing::default()
    }

    /// The number of bytes the link spends to carry a `len`-byte datagram.
    pub fn wire_bytes(&self, len: usize) -> u64 {
        let with_overhead = (len as i64).saturating_add(self.packet_overhead as i64);
        let with_overhead = with_overhead.max(0) as u64;
        if self.cell_size == 0 {
            return with_overhead;
        }
        let cell = self.cell_size as u64;
        let cells = with_overhead.div_ceil(cell);
        let per_cell = (cell as i64 + self.cell_overhead as i64).max(0) as u64;
        cells.saturating_mul(per_cell)
    }
}

/// Time to put a `len`-byte datagram on a link of `rate_bps` bits per
/// second; zero when the rate is unset (infinitely fast) or zero.
pub fn serialization_time(rate_bps: Option<u64>, framing: &Framing, len: usize) -> Duration {
    match rate_bps {
        Some(rate) if rate > 0 => {
            let bits = framing.wire_bytes(len) as u128 * 8;
            let nanos = bits * 1_000_000_000 / rate as u128;
            Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
        }
        _ => Duration::ZERO,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialization_time_is_bits_over_rate() {
        // 1500 bytes = 12 000 bits at 1.6 Mb/s = 7.5 ms exactly.
        let t = serialization_time(Some(1_600_000), &Framing::default(), 1500);
        assert_eq!(t, Duration::from_micros(7_500));
        assert_eq!(
            serialization_time(None, &Framing::default(), 1500),
            Duration::ZERO
        );
    }

    #[test]
    fn packet_overhead_is_added_before_cells() {
        // 100 + 14 = 114 bytes = 912 bits at 1 Mb/s = 912 µs.
        let ethernet = Framing {
            packet_overhead: 14,
            ..Framing::default()
        };
        assert_eq!(ethernet.wire_bytes(100), 114);
        assert_eq!(
            serialization_time(Some(1_000_000), &ethernet, 100),
            Duration::from_micros(912)
        );
    }

    #[test]
    fn cells_round_up_and_carry_their_own_overhead() {
        // ATM: 100 bytes → ⌈100/48⌉ = 3 cells of 48 + 5 = 53 bytes = 159 bytes.
        let atm = Framing {
            packet_overhead: 0,
            cell_size: 48,
            cell_overhead: 5,
        };
        assert_eq!(atm.wire_bytes(100), 159);
        assert_eq!(atm.wire_bytes(96), 106, "exactly two cells");
    }

    #[test]
    fn negative_overhead_never_goes_below_zero() {
        let strip = Framing {
            packet_overhead: -40,
            ..Framing::default()
        };
        assert_eq!(strip.wire_bytes(100), 60);
        assert_eq!(strip.wire_bytes(20), 0);
    }
}
