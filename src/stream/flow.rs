//! Flow-control windows: the credit this endpoint grants its peer (with
//! receive-window auto-tuning) and the credit the peer grants us.
//!
//! Auto-tuning follows quiche (`src/flowcontrol.rs`): when the application
//! has consumed half the window, the limit moves to `consumed + window`; if
//! the previous update went out less than `2·srtt` earlier, the window, not
//! the application, was what held the sender back, so the window doubles
//! first, up to a ceiling. quinn grows its windows the same way in spirit but
//! from the send rate; quiche's rule needs only the update times.

use std::time::{Duration, Instant};

use super::id::MAX_STREAM_OFFSET;

/// Updates closer together than this many smoothed RTTs mean the window
/// limited the sender (quiche `flowcontrol.rs`, `WINDOW_TRIGGER_FACTOR = 2`).
pub const WINDOW_TRIGGER_FACTOR: u32 = 2;

/// How much the window grows when it limited the sender (quiche
/// `flowcontrol.rs`, `WINDOW_INCREASE_FACTOR = 2`).
pub const WINDOW_INCREASE_FACTOR: u64 = 2;

/// The connection window is kept at least this multiple of any stream's
/// window, so one busy stream is never held back by the connection limit
/// (quiche `stream/mod.rs`, `CONNECTION_WINDOW_FACTOR = 1.5`), as a fraction.
pub const CONNECTION_WINDOW_FACTOR: (u64, u64) = (3, 2);

/// A window bounded by the receiving socket grows past the socket's buffer
/// by at most this many times the bytes the path itself holds (delivery
/// rate × min RTT): twice what a window needs not to stall a sender on a
/// clean path (credit renewed every half window, half a round trip late),
/// the rest for the holes a loss leaves on a long path.
pub const PATH_BYTES_BEYOND_SOCKET: u64 = 4;

/// The credit this endpoint grants its peer on one stream or on the whole
/// connection: the largest offset (or byte count) the peer may send.
///
/// Bounded by the socket (`bounded_by_socket`), auto-tuning grows the
/// window no further than the socket's receive buffer plus
/// [`PATH_BYTES_BEYOND_SOCKET`] times what the path holds. Every granted
/// byte not yet read is on the path, in the socket's buffer, or in the
/// transport's; a window larger than path and socket together lets a
/// sender whose congestion window has grown that far (CUBIC probing on a
/// path with no other queue: loopback) fill the socket until the kernel
/// drops datagrams, a loss and a window decrease each time (issue 37: 1,000
/// to 2,000 retransmissions per GiB on loopback with 32 MiB stream
/// windows and a 4 MiB socket buffer). TCP never has this: its window is
/// its socket buffer.
#[derive(Clone, Debug)]
pub struct ReceiveWindow {
    /// The limit last granted (MAX_STREAM_DATA / MAX_DATA value).
    limit: u64,
    /// How far beyond the consumed bytes a new limit is set.
    window: u64,
    /// Ceiling for auto-tuning.
    max_window: u64,
    /// When the limit was last raised through auto-tuning.
    last_update: Option<Instant>,
    /// The receiving socket's buffer, in bytes of payload it holds;
    /// `None`: no bound.
    socket_bytes: Option<u64>,
    /// The time and the consumed count at the last tuned update: where the
    /// next delivery-rate sample starts.
    rate_mark: Option<(Instant, u64)>,
    /// Bytes the path held at the last sample: delivery rate × min RTT.
    path_bytes: u64,
}

impl ReceiveWindow {
    /// A window of `initial` bytes that auto-tuning may grow to `max_window`
    /// (never below `initial`). The first limit is `initial`.
    pub fn new(initial: u64, max_window: u64) -> Self {
        let initial = initial.min(MAX_STREAM_OFFSET);
        Self {
            limit: initial,
            window: initial,
            max_window: max_window.max(initial),
            last_update: None,
            socket_bytes: None,
            rate_mark: None,
            path_bytes: 0,
        }
    }

    /// Bounds auto-tuning by a receiving socket that holds `socket_bytes`
    /// of payload (`None`: no bound), see the type's docs. The window never
    /// shrinks below where it starts.
    pub fn bounded_by_socket(mut self, socket_bytes: Option<u64>) -> Self {
        self.socket_bytes = socket_bytes;
        self
    }

    /// The most the window may grow to now.
    fn ceiling(&self) -> u64 {
        match self.socket_bytes {
            Some(socket) => self.max_window.min(
                socket.saturating_add(self.path_bytes.saturating_mul(PATH_BYTES_BEYOND_SOCKET)),
            ),
            None => self.max_window,
        }
    }

    /// The limit granted to the peer.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// The current window size.
    pub fn window(&self) -> u64 {
        self.window
    }

    /// Whether the application has consumed at least half the window, so a
    /// new limit should be sent. `consumed` counts bytes read or discarded.
    pub fn update_due(&self, consumed: u64) -> bool {
        self.limit.saturating_sub(consumed) <= self.window / 2
    }

    /// Auto-tunes the window and raises the limit to `consumed + window`.
    /// Returns the new limit, or `None` when it did not grow. `min_rtt`
    /// sizes what the path holds, for a window bounded by its socket.
    pub fn update(
        &mut self,
        consumed: u64,
        now: Instant,
        srtt: Duration,
        min_rtt: Duration,
    ) -> Option<u64> {
        self.sample_path(consumed, now, srtt, min_rtt);
        if let Some(last) = self.last_update {
            // Half a window consumed in under two round trips: the reader
            // keeps up, so the window is what limits the sender.
            if now.saturating_duration_since(last) < srtt.saturating_mul(WINDOW_TRIGGER_FACTOR) {
                self.grow();
            }
        }
        self.last_update = Some(now);
        self.raise(consumed)
    }

    /// Takes a delivery-rate sample from the bytes consumed since the last
    /// one, once at least `srtt` has passed: what the path holds is that
    /// rate times `min_rtt`. Shorter samples overstate the rate: the
    /// connection's clock moves with the driver's turns, not with reads,
    /// so two updates a turn apart can be milliseconds of reads apart (a
    /// loopback run with 100 µs samples let the window past its socket).
    fn sample_path(&mut self, consumed: u64, now: Instant, srtt: Duration, min_rtt: Duration) {
        if let Some((at, from)) = self.rate_mark {
            let elapsed = now.saturating_duration_since(at);
            if elapsed.is_zero() || elapsed < srtt {
                return;
            }
            let bytes = u128::from(consumed.saturating_sub(from));
            self.path_bytes =
                u64::try_from(bytes * min_rtt.as_nanos() / elapsed.as_nanos()).unwrap_or(u64::MAX);
        }
        self.rate_mark = Some((now, consumed));
    }

    /// Raises the limit to `consumed + window` without touching the window
    /// size: for credit freed by discarded data, which says nothing about
    /// how fast the application reads.
    pub fn update_without_tuning(&mut self, consumed: u64) -> Option<u64> {
        self.raise(consumed)
    }

    /// The peer reports being blocked at our current limit while the reader
    /// has read everything in order (`consumed`): the window held the
    /// sender back, typically because a loss or corruption leaves a hole
    /// that holds `consumed` back for a round trip or two while the sender
    /// runs at full rate. Doubles the window (up to the ceiling) and raises
    /// the limit to `consumed + window` at once, rather than waiting for
    /// reads that the hole stops. Returns the new limit, or `None` when it
    /// did not move.
    pub fn grow_for_blocked_sender(&mut self, consumed: u64) -> Option<u64> {
        self.grow();
        // One growth per update: a second report of the same episode (a
        // repeat, or the connection's beside the stream's) finds no recent
        // update to call late, and the next read's update is not taken
        // for a quick successor of this one.
        self.last_update = None;
        self.raise(consumed)
    }

    /// Whether a peer's report that it was blocked at `limit`, below the
    /// limit we grant now, arrived within [`WINDOW_TRIGGER_FACTOR`]
    /// smoothed RTTs of our last update: that update was still on its way
    /// when the sender ran out (it blocked shortly before the update
    /// reached it), so the window, not the reader, held it. The report
    /// travels the data direction behind the queue the sender keeps, so it
    /// can take well over one round trip (150 ms at an srtt of 115 ms,
    /// measured on the path below); a report later than that says the
    /// update was lost instead. On a
    /// long lossy path the reader's in-order bytes trail what was sent by
    /// the flight plus a round trip or two of holes, so a window that
    /// seemed ample (4 MiB at 50 Mb/s over 100 ms) runs out just before
    /// each update lands, while reads keep pace and the `2·srtt` rule of
    /// [`update`](Self::update) never fires (issue 37, `loss1-50m-100ms`).
    pub fn update_was_late(&self, limit: u64, now: Instant, srtt: Duration) -> bool {
        limit < self.limit
            && self.last_update.is_some_and(|last| {
                now.saturating_duration_since(last) <= srtt.saturating_mul(WINDOW_TRIGGER_FACTOR)
            })
    }

    /// For the connection window: stays [`CONNECTION_WINDOW_FACTOR`] times
    /// ahead of a stream window of `stream_window` bytes, so one fast stream
    /// is not held back by the connection limit. Returns whether it grew.
    pub fn stay_ahead_of(&mut self, stream_window: u64) -> bool {
        let (num, den) = CONNECTION_WINDOW_FACTOR;
        self.ensure_window(stream_window.saturating_mul(num) / den)
    }

    /// Doubles the window, up to the ceiling.
    fn grow(&mut self) {
        self.window = self
            .window
            .saturating_mul(WINDOW_INCREASE_FACTOR)
            .min(self.ceiling())
            .max(self.window);
    }

    /// Grows the window to at least `min_window` (bounded by the ceiling).
    /// Returns whether it grew.
    pub fn ensure_window(&mut self, min_window: u64) -> bool {
        let target = min_window.min(self.ceiling());
        if target > self.window {
            self.window = target;
            true
        } else {
            false
        }
    }

    fn raise(&mut self, consumed: u64) -> Option<u64> {
        let next = consumed.saturating_add(self.window).min(MAX_STREAM_OFFSET);
        if next > self.limit {
            self.limit = next;
            Some(next)
        } else {
            None
        }
    }
}

/// The credit the peer grants us on one stream or on the whole connection.
#[derive(Clone, Debug, Default)]
pub struct SendCredit {
    /// The peer's limit (MAX_STREAM_DATA / MAX_DATA value).
    limit: u64,
    /// New bytes sent so far against the limit.
    used: u64,
    /// The limit at which we last reported being blocked, so each limit is
    /// reported once (RFC 9000 §4.1).
    blocked_reported_at: Option<u64>,
}

impl SendCredit {
    /// Credit up to `limit`.
    pub fn new(limit: u64) -> Self {
        Self {
            limit,
            used: 0,
            blocked_reported_at: None,
        }
    }

    /// The peer's current limit.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Bytes that may still be sent.
    pub fn available(&self) -> u64 {
        self.limit.saturating_sub(self.used)
    }

    /// Applies a new limit from the peer; limits never shrink (RFC 9000
    /// §4.1: a smaller value is ignored). Returns whether the limit grew.
    pub fn raise(&mut self, limit: u64) -> bool {
        if limit > self.limit {
            self.limit = limit;
            true
        } else {
            false
        }
    }

    /// Counts `bytes` of new data against the limit.
    pub fn consume(&mut self, bytes: u64) {
        self.used = self.used.saturating_add(bytes);
    }

    /// When the credit is used up and this limit was not reported yet,
    /// records it and returns it: the value for a (STREAM_)DATA_BLOCKED frame.
    pub fn take_blocked_report(&mut self) -> Option<u64> {
        if self.available() == 0 && self.blocked_reported_at != Some(self.limit) {
            self.blocked_reported_at = Some(self.limit);
            Some(self.limit)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIB: u64 = 1024;

    #[test]
    fn update_is_due_once_half_the_window_is_consumed() {
        let window = ReceiveWindow::new(100 * KIB, 1000 * KIB);
        // limit 100 KiB, window 100 KiB: due when limit − consumed ≤ 50 KiB.
        assert!(!window.update_due(49 * KIB));
        assert!(window.update_due(50 * KIB));
    }

    #[test]
    fn quick_successive_updates_double_the_window() {
        let t0 = Instant::now();
        let srtt = Duration::from_millis(100);
        let mut window = ReceiveWindow::new(100 * KIB, 1000 * KIB);
        // First update: nothing to compare with, window stays 100 KiB,
        // limit = 50 + 100 = 150 KiB.
        assert_eq!(
            window.update(50 * KIB, t0, srtt, Duration::ZERO),
            Some(150 * KIB)
        );
        assert_eq!(window.window(), 100 * KIB);
        // 150 ms later < 2·srtt = 200 ms: the window limited the sender.
        // Window 2·100 = 200 KiB, limit = 100 + 200 = 300 KiB.
        let t1 = t0 + Duration::from_millis(150);
        assert_eq!(
            window.update(100 * KIB, t1, srtt, Duration::ZERO),
            Some(300 * KIB)
        );
        assert_eq!(window.window(), 200 * KIB);
    }

    #[test]
    fn slow_reads_leave_the_window_alone() {
        let t0 = Instant::now();
        let srtt = Duration::from_millis(100);
        let mut window = ReceiveWindow::new(100 * KIB, 1000 * KIB);
        window.update(50 * KIB, t0, srtt, Duration::ZERO);
        // 250 ms later ≥ 2·srtt: the application, not the window, was slow.
        // Window stays 100 KiB, limit = 100 + 100 = 200 KiB.
        let t1 = t0 + Duration::from_millis(250);
        assert_eq!(
            window.update(100 * KIB, t1, srtt, Duration::ZERO),
            Some(200 * KIB)
        );
        assert_eq!(window.window(), 100 * KIB);
    }

    #[test]
    fn window_growth_stops_at_the_ceiling() {
        let t0 = Instant::now();
        let srtt = Duration::from_millis(100);
        let mut window = ReceiveWindow::new(100 * KIB, 300 * KIB);
        let mut consumed = 0;
        for _ in 0..5 {
            consumed += window.window() / 2;
            window.update(consumed, t0, srtt, Duration::ZERO);
        }
        // 100 → 200 → 300 (ceiling), never 400.
        assert_eq!(window.window(), 300 * KIB);
    }

    const MIB: u64 = 1024 * KIB;

    /// Updates every `step` of the receive window `window`, each half a
    /// window consumed later, as a reader that keeps up with a sender
    /// limited by nothing but the window does.
    fn drive(window: &mut ReceiveWindow, step: Duration, srtt: Duration, min_rtt: Duration) {
        let t0 = Instant::now();
        let mut consumed = 0;
        for i in 0..10 {
            consumed += window.window() / 2;
            window.update(consumed, t0 + step * i, srtt, min_rtt);
        }
    }

    #[test]
    fn a_socket_bound_window_stops_near_the_socket_on_a_path_that_holds_little() {
        // Loopback: 2 MiB read every 5 ms (about 3.4 Gb/s), min RTT 100 µs,
        // the RTT swollen to 3 ms by the socket's own queue. Unbounded, the
        // window doubles to its 32 MiB ceiling; bounded by a 4 MiB socket
        // it stays at the socket plus 4 × 42 kB of path.
        let srtt = Duration::from_millis(3);
        let min_rtt = Duration::from_micros(100);
        let step = Duration::from_millis(5);
        let mut unbounded = ReceiveWindow::new(4 * MIB, 32 * MIB);
        drive(&mut unbounded, step, srtt, min_rtt);
        assert_eq!(unbounded.window(), 32 * MIB);
        let mut bounded = ReceiveWindow::new(4 * MIB, 32 * MIB).bounded_by_socket(Some(4 * MIB));
        drive(&mut bounded, step, srtt, min_rtt);
        assert!(
            bounded.window() < 4 * MIB + 4 * 50 * KIB,
            "{}",
            bounded.window()
        );
        assert!(bounded.window() >= 4 * MIB);
    }

    #[test]
    fn a_socket_bound_window_still_grows_for_a_long_fast_path() {
        // 1 Gb/s over 100 ms (12.5 MB in flight), updates coming faster
        // than 2·srtt: once a round trip has given a rate sample, the
        // bound is the socket plus 4 × 12.5 MB, so the window reaches its
        // 32 MiB ceiling as it does unbounded.
        let srtt = Duration::from_millis(100);
        let mut window = ReceiveWindow::new(4 * MIB, 32 * MIB).bounded_by_socket(Some(4 * MIB));
        let t0 = Instant::now();
        let mut consumed = 0;
        let mut at = t0;
        for _ in 0..20 {
            let bytes = window.window() / 2;
            consumed += bytes;
            // At 125 MB/s, half the window takes bytes / 125 MB/s.
            at += Duration::from_nanos(bytes * 8);
            window.update(consumed, at, srtt, srtt);
        }
        assert_eq!(window.window(), 32 * MIB);
    }

    #[test]
    fn rate_samples_shorter_than_a_round_trip_are_not_taken() {
        // Two updates 100 µs apart on the connection's clock (one driver
        // turn) with 2 MiB read between them: 21 GB/s if taken, a path of
        // 2 MiB at a 100 µs min RTT, and the window would double.
        let srtt = Duration::from_millis(3);
        let min_rtt = Duration::from_micros(100);
        let mut window = ReceiveWindow::new(4 * MIB, 32 * MIB).bounded_by_socket(Some(4 * MIB));
        let t0 = Instant::now();
        window.update(2 * MIB, t0, srtt, min_rtt);
        window.update(4 * MIB, t0 + Duration::from_micros(100), srtt, min_rtt);
        assert_eq!(window.window(), 4 * MIB);
        // 5 ms after the first, 3 MiB read since (629 MB/s): 63 kB of path,
        // the window grows by four times that.
        window.update(5 * MIB, t0 + Duration::from_millis(5), srtt, min_rtt);
        assert!(window.window() > 4 * MIB);
        assert!(window.window() < 4 * MIB + 300_000, "{}", window.window());
    }

    #[test]
    fn a_blocked_sender_grows_a_socket_bound_window_only_to_its_bound() {
        let mut window = ReceiveWindow::new(4 * MIB, 32 * MIB).bounded_by_socket(Some(4 * MIB));
        for _ in 0..5 {
            window.grow_for_blocked_sender(0);
        }
        assert_eq!(window.window(), 4 * MIB, "no rate sample: the socket alone");
        assert!(!window.ensure_window(6 * MIB));
    }

    #[test]
    fn send_credit_reports_each_blocking_limit_once() {
        let mut credit = SendCredit::new(10);
        assert_eq!(credit.take_blocked_report(), None, "credit left");
        credit.consume(10);
        assert_eq!(credit.take_blocked_report(), Some(10));
        assert_eq!(credit.take_blocked_report(), None, "already reported");
        assert!(!credit.raise(5), "limits never shrink");
        assert!(credit.raise(20));
        assert_eq!(credit.available(), 10);
        credit.consume(10);
        assert_eq!(credit.take_blocked_report(), Some(20));
    }
}
