//! The transport settings every peer runs with, whatever its stack, so
//! that the comparison sets controllers against each other and not
//! datagram sizes, windows or timeouts (each choice is also in the
//! README's *Choices made to compare like with like*).

use std::time::Duration;

/// UDP payload size, both directions: sift's `max_datagram_size` default
/// (src/conn), so every stack puts the same bytes in each packet.
pub const MAX_DATAGRAM_SIZE: usize = 1350;

/// The largest `--max-datagram` the bulk peers take: loopback's jumbo
/// size, where sift's path MTU discovery settles.
pub const LARGEST_DATAGRAM_SIZE: usize = 8972;

/// The smallest datagram a QUIC endpoint must be able to send
/// (RFC 9000 §14: 1200 bytes of UDP payload).
pub const SMALLEST_DATAGRAM_SIZE: usize = 1200;

/// Connection-level receive window: 64 MiB. A 20 Mb/s, 600 ms satellite
/// path holds 1.5 MB; a loopback path at several Gb/s with a few ms of
/// scheduling delay holds tens of MB. Windows must never be the limit.
pub const MAX_DATA: u64 = 64 << 20;

/// Per-stream receive window: 32 MiB (see [`MAX_DATA`]).
pub const MAX_STREAM_DATA: u64 = 32 << 20;

/// Idle timeout: long enough for a 600 ms RTT path (or a lossy matrix
/// case) with backed-off probes, short enough that a dead peer ends a run.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a finished client waits for the server to see its close.
pub const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// clap value parser for the bulk peers' `--max-datagram`:
/// [`SMALLEST_DATAGRAM_SIZE`] to [`LARGEST_DATAGRAM_SIZE`] bytes of UDP
/// payload.
pub fn parse_max_datagram(text: &str) -> Result<usize, String> {
    let bytes: usize = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number of bytes"))?;
    if !(SMALLEST_DATAGRAM_SIZE..=LARGEST_DATAGRAM_SIZE).contains(&bytes) {
        return Err(format!(
            "{bytes} is out of range: {SMALLEST_DATAGRAM_SIZE} to {LARGEST_DATAGRAM_SIZE} bytes"
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_datagram_takes_1200_to_loopback_size() {
        assert_eq!(parse_max_datagram("8972"), Ok(LARGEST_DATAGRAM_SIZE));
        assert_eq!(parse_max_datagram("1200"), Ok(1200));
        for bad in ["1199", "8973", "big"] {
            assert!(parse_max_datagram(bad).is_err(), "{bad}");
        }
    }
}
