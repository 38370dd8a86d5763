//! The window every loss-based controller keeps, written once.
//!
//! Reno, Westwood, Veno, Vegas, Westwood-A and CUBIC differ in how they
//! grow and cut a congestion window, not in what the window is: `mss`,
//! `cwnd`, `ssthresh`, Reno's congestion-avoidance credit, whether a
//! recovery period is running, and what to restore if the last cut proves
//! spurious. [`WindowCore`] holds that state and the operations that are
//! the same for all of them (a new packet size, Careful Resume's window,
//! saving and undoing a cut, the phase); each controller embeds one and
//! keeps its paper's rules in its own file. quiche shares one `Congestion`
//! state between its controllers the same way.
//!
//! No rule of a paper lives here: a cut's size, a timeout's window and
//! when to grow are the controllers'. The helpers for Reno's arithmetic
//! ([`WindowCore::reduce`], [`WindowCore::grow_as_reno`]) are there for the
//! controllers whose papers keep Reno's (Veno §II-B, Westwood §3, Vegas
//! with its algorithms off).

use std::fmt::Debug;

use crate::hystart::HyStart;
use crate::{minimum_window, scale_window, AckEvent, Phase};

/// A window's unit: whole bytes (`u64`), or bytes kept fractional so that
/// per-ACK growth along a curve is never lost (`f64`, CUBIC).
pub trait WindowBytes: Copy + Debug + PartialOrd {
    /// `bytes` in this unit.
    fn from_bytes(bytes: u64) -> Self;
    /// The larger of the two.
    fn larger(self, other: Self) -> Self;
    /// Whole bytes, as the recovery module counts them.
    fn whole_bytes(self) -> u64;
    /// Whether the window is below `bytes`.
    fn is_below(self, bytes: u64) -> bool;
}

impl WindowBytes for u64 {
    fn from_bytes(bytes: u64) -> Self {
        bytes
    }

    fn larger(self, other: Self) -> Self {
        self.max(other)
    }

    fn whole_bytes(self) -> u64 {
        self
    }

    fn is_below(self, bytes: u64) -> bool {
        self < bytes
    }
}

impl WindowBytes for f64 {
    fn from_bytes(bytes: u64) -> Self {
        bytes as f64
    }

    fn larger(self, other: Self) -> Self {
        self.max(other)
    }

    fn whole_bytes(self) -> u64 {
        self.round() as u64
    }

    fn is_below(self, bytes: u64) -> bool {
        self < bytes as f64
    }
}

/// The window state a loss-based controller restores on a spurious
/// congestion event: the window and ssthresh from just before the cut. The
/// window never shrinks on undo (Linux `tcp_undo_cwnd_reduction`: cwnd =
/// max(cwnd, prior)); ssthresh returns to its prior value (RFC 9438 §4.9).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowUndo<W = u64> {
    /// cwnd just before the reduction, in bytes.
    pub cwnd: W,
    /// ssthresh just before the reduction, in bytes.
    pub ssthresh: u64,
}

impl<W: WindowBytes> WindowUndo<W> {
    /// (cwnd, ssthresh) after undoing the reduction from a window that is
    /// now `cwnd`.
    pub fn restore(&self, cwnd: W) -> (W, u64) {
        (cwnd.larger(self.cwnd), self.ssthresh)
    }
}

/// Shared slow-start / congestion-avoidance arithmetic. In slow start the
/// window grows by the bytes acked (RFC 5681 §3.1 with RFC 3465 byte counting);
/// in congestion avoidance by mss·acked/cwnd per ACK, accumulated in
/// `bytes_acked_in_ca` so fractional growth is never lost.
#[derive(Clone, Debug, Default)]
pub struct AdditiveIncrease {
    /// Bytes acked since the window last grew by one mss in avoidance.
    pub bytes_acked_in_ca: u64,
}

impl AdditiveIncrease {
    /// Congestion avoidance: returns the new window after `acked` bytes were
    /// acknowledged at window `cwnd` (grows by one mss per window acked).
    pub fn grow(&mut self, cwnd: u64, acked: u64, mss: u64) -> u64 {
        self.bytes_acked_in_ca += acked;
        let mut cwnd = cwnd;
        while self.bytes_acked_in_ca >= cwnd {
            self.bytes_acked_in_ca -= cwnd;
            cwnd += mss;
        }
        cwnd
    }
}

/// A loss-based controller's window: the state every such controller keeps
/// and the operations that do not depend on its rules. `W` is the window's
/// unit ([`WindowBytes`]); `S` is what the controller restores beside the
/// window when a cut proves spurious (its verdict, its estimators' phase).
#[derive(Clone, Debug)]
pub struct WindowCore<W = u64, S = ()> {
    /// Bytes per packet: what the papers' packet counts are multiplied by.
    pub mss: u64,
    /// The congestion window, in bytes.
    pub cwnd: W,
    /// The slow-start threshold, in bytes (`u64::MAX` until the first loss).
    pub ssthresh: u64,
    /// Reno's congestion-avoidance credit; CUBIC grows by its curve and
    /// leaves it alone.
    pub increase: AdditiveIncrease,
    /// A recovery period is running: set by a cut that is not a timeout,
    /// ended by the first ACK of a packet sent after it began (RFC 9002
    /// §7.3.2).
    pub in_recovery: bool,
    /// The window before the last cut, with the controller's own state,
    /// until it is undone or replaced.
    undo: Option<(WindowUndo<W>, S)>,
}

impl<W: WindowBytes, S> WindowCore<W, S> {
    /// The window of a new connection: `initial_packets` packets (at least
    /// one) of `mss` bytes (at least one), ssthresh unbounded.
    pub fn new(mss: u64, initial_packets: u64) -> Self {
        let mss = mss.max(1);
        Self {
            mss,
            cwnd: W::from_bytes(initial_packets.max(1) * mss),
            ssthresh: u64::MAX,
            increase: AdditiveIncrease::default(),
            in_recovery: false,
            undo: None,
        }
    }

    /// `packets` packets, in bytes.
    pub fn packets(&self, packets: u64) -> u64 {
        packets * self.mss
    }

    /// RFC 9002 kMinimumWindow at the current packet size.
    pub fn minimum(&self) -> u64 {
        minimum_window(self.mss)
    }

    /// The window in whole bytes.
    pub fn bytes(&self) -> u64 {
        self.cwnd.whole_bytes()
    }

    /// Packets now carry up to `mss` bytes (path MTU discovery): what the
    /// controller counts in packets uses the new size from now on, and the
    /// window is at least the new minimum.
    pub fn set_mss(&mut self, mss: u64) {
        self.mss = mss;
        self.cwnd = self.cwnd.larger(W::from_bytes(minimum_window(mss)));
    }

    /// Careful Resume's window (RFC 9959 phase change): continue from
    /// `cwnd` (at least the minimum window) and `ssthresh` when given,
    /// additive increase restarted; the last cut can no longer be undone.
    pub fn set_window(&mut self, cwnd: u64, ssthresh: Option<u64>) {
        self.cwnd = W::from_bytes(cwnd.max(self.minimum()));
        if let Some(ssthresh) = ssthresh {
            self.ssthresh = ssthresh;
        }
        self.increase = AdditiveIncrease::default();
        self.undo = None;
    }

    /// Saves the window, and `state` beside it, before a cut.
    pub fn save_for_undo(&mut self, state: S) {
        let window = WindowUndo {
            cwnd: self.cwnd,
            ssthresh: self.ssthresh,
        };
        self.undo = Some((window, state));
    }

    /// Forgets the last cut's saved state: CE marks confirmed it as
    /// congestion, so it can no longer prove spurious.
    pub fn forget_undo(&mut self) {
        self.undo = None;
    }

    /// Undoes the last cut, if it was not undone already: the window
    /// returns to at least what it was, ssthresh to what it was, additive
    /// increase restarts and the recovery period ends. Returns the state
    /// saved beside it, for the controller to restore.
    pub fn undo(&mut self) -> Option<S> {
        let (window, state) = self.undo.take()?;
        (self.cwnd, self.ssthresh) = window.restore(self.cwnd);
        self.increase = AdditiveIncrease::default();
        self.in_recovery = false;
        Some(state)
    }

    /// Whether an ACK may grow the window: not while every packet it acks
    /// was sent before the recovery period began (RFC 9002 §7.3.2; any
    /// other ACK ends the period), nor when the sender was
    /// application-limited (RFC 9002 §7.8).
    pub fn ack_may_grow(&mut self, ack: &AckEvent) -> bool {
        if ack.in_recovery {
            return false;
        }
        self.in_recovery = false;
        !ack.app_limited
    }

    /// Recovery, slow start (below ssthresh) or congestion avoidance.
    pub fn phase(&self) -> Phase {
        if self.in_recovery {
            Phase::Recovery
        } else if self.cwnd.is_below(self.ssthresh) {
            Phase::SlowStart
        } else {
            Phase::CongestionAvoidance
        }
    }
}

impl<S> WindowCore<u64, S> {
    /// Reno's congestion avoidance for `acked` bytes: one mss per window
    /// acked (RFC 5681 §3.1).
    pub fn grow_linearly(&mut self, acked: u64) {
        self.cwnd = self.increase.grow(self.cwnd, acked, self.mss);
    }

    /// Reno's growth for one ACK (RFC 5681 §3.1, RFC 9002 §7.3.1): slow
    /// start by `hystart` up to ssthresh, the rest of the ACK linearly.
    pub fn grow_as_reno(&mut self, hystart: &mut HyStart, ack: &AckEvent) {
        let step = hystart.slow_start(self.cwnd, self.ssthresh, ack);
        (self.cwnd, self.ssthresh) = (step.cwnd, step.ssthresh);
        if step.rest > 0 {
            self.grow_linearly(step.rest);
        }
    }

    /// A multiplicative decrease (RFC 5681 §3.2, RFC 9002 §7.3.2):
    /// ssthresh = cwnd·`keep`, at least the minimum window; cwnd =
    /// ssthresh, or `timeout_window` bytes after a timeout (`persistent`).
    /// Additive increase restarts; a cut that is not a timeout begins a
    /// recovery period.
    pub fn reduce(&mut self, keep: (u64, u64), persistent: bool, timeout_window: u64) {
        self.ssthresh = scale_window(self.cwnd, keep).max(self.minimum());
        self.cwnd = if persistent {
            timeout_window
        } else {
            self.ssthresh
        };
        self.increase = AdditiveIncrease::default();
        self.in_recovery = !persistent;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{ack, ms, rtt, MSS};
    use std::time::Instant;

    #[test]
    fn a_new_window_is_its_initial_packets_with_ssthresh_unbounded() {
        let window: WindowCore = WindowCore::new(MSS, 10);
        assert_eq!((window.cwnd, window.ssthresh), (10_000, u64::MAX));
        // Zero packets or a zero mss would never grow: one of each.
        let window: WindowCore = WindowCore::new(0, 0);
        assert_eq!((window.mss, window.cwnd), (1, 1));
    }

    #[test]
    fn a_smaller_packet_size_keeps_the_window_and_a_larger_one_raises_its_floor() {
        let mut window: WindowCore = WindowCore::new(MSS, 3);
        window.set_mss(1200); // 3_000 ≥ 2·1_200: kept
        assert_eq!((window.mss, window.cwnd), (1200, 3_000));
        window.set_mss(1500); // 3_000 = 2·1_500: kept
        assert_eq!(window.cwnd, 3_000);
        window.set_mss(9000); // floor 18_000
        assert_eq!(window.cwnd, 18_000);
        let mut curve: WindowCore<f64> = WindowCore::new(MSS, 1);
        curve.set_mss(1200);
        assert_eq!(curve.cwnd, 2_400.0);
    }

    #[test]
    fn careful_resumes_window_is_floored_and_ends_the_undo() {
        let mut window: WindowCore<u64, &str> = WindowCore::new(MSS, 10);
        window.save_for_undo("before");
        window.increase.bytes_acked_in_ca = 700;
        window.set_window(500, Some(40_000));
        // 500 < 2·1_000: the minimum window.
        assert_eq!((window.cwnd, window.ssthresh), (2_000, 40_000));
        assert_eq!(window.increase.bytes_acked_in_ca, 0);
        assert_eq!(window.undo(), None);
        window.set_window(30_000, None);
        assert_eq!((window.cwnd, window.ssthresh), (30_000, 40_000));
    }

    #[test]
    fn undo_restores_ssthresh_and_never_shrinks_the_window() {
        let mut window: WindowCore<u64, &str> = WindowCore::new(MSS, 10);
        window.save_for_undo("verdict");
        window.reduce((1, 2), false, 0); // ssthresh = cwnd = 5_000
        assert_eq!(window.phase(), Phase::Recovery);
        assert_eq!(window.undo(), Some("verdict"));
        assert_eq!((window.cwnd, window.ssthresh), (10_000, u64::MAX));
        assert_eq!(window.phase(), Phase::SlowStart);
        // A window that grew past the saved one keeps its size.
        window.save_for_undo("again");
        window.cwnd = 50_000;
        assert_eq!(window.undo(), Some("again"));
        assert_eq!(window.cwnd, 50_000);
        // Once only.
        assert_eq!(window.undo(), None);
    }

    #[test]
    fn a_timeout_collapses_to_its_window_without_a_recovery_period() {
        let mut window: WindowCore = WindowCore::new(MSS, 10);
        window.reduce((1, 2), true, 1_000);
        assert_eq!((window.cwnd, window.ssthresh), (1_000, 5_000));
        assert_eq!(window.phase(), Phase::SlowStart);
        // ssthresh never below two packets: 3_000·1/2 = 1_500 → 2_000.
        let mut small: WindowCore = WindowCore::new(MSS, 3);
        small.reduce((1, 2), false, 0);
        assert_eq!((small.cwnd, small.ssthresh), (2_000, 2_000));
    }

    #[test]
    fn only_an_ack_after_recovery_that_is_not_app_limited_grows() {
        let now = Instant::now();
        let mut window: WindowCore = WindowCore::new(MSS, 10);
        window.reduce((1, 2), false, 0);
        let mut a = ack(now, now, 1, rtt(100, 100), 0);
        a.in_recovery = true;
        assert!(!window.ack_may_grow(&a));
        assert!(window.in_recovery, "an ACK of older packets keeps it");
        a.in_recovery = false;
        a.app_limited = true;
        assert!(!window.ack_may_grow(&a));
        assert!(!window.in_recovery, "any later ACK ends it");
        a.app_limited = false;
        assert!(window.ack_may_grow(&a));
    }

    #[test]
    fn reno_growth_is_slow_start_to_ssthresh_then_one_mss_per_window() {
        let now = Instant::now() + ms(1);
        let mut window: WindowCore = WindowCore::new(MSS, 2);
        window.ssthresh = 5_000;
        let mut hystart = HyStart::new(false);
        // 2_000 + 4_000 acked: 3_000 reaches ssthresh, 1_000 of credit.
        window.grow_as_reno(&mut hystart, &ack(now, now, 4, rtt(100, 100), 0));
        assert_eq!(
            (window.cwnd, window.increase.bytes_acked_in_ca),
            (5_000, 1_000)
        );
        // 4_000 more completes a window of credit: +1 mss.
        window.grow_as_reno(&mut hystart, &ack(now, now, 4, rtt(100, 100), 0));
        assert_eq!((window.cwnd, window.increase.bytes_acked_in_ca), (6_000, 0));
    }
}
