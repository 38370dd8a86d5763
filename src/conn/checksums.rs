//! Which datagrams leave without a UDP checksum.
//!
//! Corruption notices need corrupted datagrams to reach the receiver, so
//! they must travel without a UDP checksum (DESIGN §5): with one, the
//! receiver's kernel drops a datagram with a flipped bit and the loss looks
//! like congestion. But Linux refuses segmentation offload (GSO) on a
//! checksum-free send, and on a fast clean path that costs about half the
//! throughput for the same CPU (issue 17: 954 against 1923 Mb/s on
//! loopback). The connection therefore asks for checksum-free datagrams only
//! while the path has shown it damages or drops packets:
//!
//! - until the first loss or corruption notice, datagrams carry checksums
//!   and the driver may batch them with GSO;
//! - a packet declared lost or named corrupted (in the data space) makes
//!   every datagram checksum-free for a hold of max(2 s, 16·srtt) from the
//!   latest such event; a path that keeps impairing packets keeps renewing
//!   it, one that stays clean for the whole hold gets offloads back. A lost
//!   path MTU probe is no such event: the search expects to lose probes
//!   larger than the path, which would otherwise cost every connection on
//!   a path narrower than its interface its offloads after each search.
//!   (The io datapath also keeps checksums to a loopback peer, whatever
//!   the connection asks: `io::datapath`.)
//!
//! The price: on a path that has been clean for a hold, the first corrupted
//! datagram is dropped by the receiver's kernel and recovered as a loss
//! (one congestion response) instead of being named. A lost packet is the
//! trigger because the sender cannot tell that drop from any other loss;
//! corruption that comes more often than once per hold is always named.
//! Only connections that negotiated notices ever send checksum-free.

use std::time::{Duration, Instant};

/// The shortest checksum-free hold after an impairment.
pub const HOLD_MIN: Duration = Duration::from_secs(2);
/// The hold in smoothed RTTs, where that is longer.
pub const HOLD_RTTS: u32 = 16;

/// Whether datagrams go without a UDP checksum, from the path's record.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ChecksumPolicy {
    /// The latest loss or corruption notice in the data space.
    impaired_at: Option<Instant>,
}

impl ChecksumPolicy {
    /// A data-space packet was declared lost or named corrupted at `now`.
    pub(crate) fn on_impairment(&mut self, now: Instant) {
        self.impaired_at = Some(now);
    }

    /// Whether a datagram sent at `now` should carry no checksum:
    /// `notices` negotiated and an impairment within the hold.
    pub(crate) fn checksum_free(&self, notices: bool, now: Instant, srtt: Duration) -> bool {
        let hold = HOLD_MIN.max(srtt.saturating_mul(HOLD_RTTS));
        notices
            && self
                .impaired_at
                .is_some_and(|at| now.saturating_duration_since(at) < hold)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn checksums_stay_until_an_impairment_and_return_after_a_clean_hold() {
        let t0 = Instant::now();
        let mut policy = ChecksumPolicy::default();
        let srtt = ms(50);
        // A clean path: checksums (and offloads).
        assert!(!policy.checksum_free(true, t0, srtt));
        // A loss: checksum-free for max(2 s, 16 · 50 ms) = 2 s.
        policy.on_impairment(t0);
        assert!(policy.checksum_free(true, t0 + ms(1_999), srtt));
        assert!(!policy.checksum_free(true, t0 + ms(2_000), srtt));
        // Each impairment renews the hold; a long RTT lengthens it:
        // 16 · 200 ms = 3.2 s.
        policy.on_impairment(t0 + ms(1_000));
        assert!(policy.checksum_free(true, t0 + ms(2_500), srtt));
        assert!(policy.checksum_free(true, t0 + ms(4_100), ms(200)));
        assert!(!policy.checksum_free(true, t0 + ms(4_200), ms(200)));
    }

    #[test]
    fn without_notices_every_datagram_keeps_its_checksum() {
        let t0 = Instant::now();
        let mut policy = ChecksumPolicy::default();
        policy.on_impairment(t0);
        assert!(!policy.checksum_free(false, t0, ms(50)));
    }
}
