//! Prague, the L4S sender (RFC 9331 §4.3, draft-briscoe-iccrg-prague-
//! congestion-control): DCTCP's scalable response to CE marks, made safe
//! for the public Internet. Linux's `tcp_prague.c` and picoquic's
//! `prague.c` were read for the numbers below, not copied.
//!
//! - **ECT(1)** on every packet ([`CongestionControl::ect`]): the L4S
//!   identifier (RFC 9331 §4.1) that puts the flow in a DualPI2's L4S queue.
//! - **α**, the marked fraction's moving average: once per round, α ←
//!   (1 − g)·α + g·F with F = packets CE marked / packets acknowledged in
//!   the round and g = 1/16 ([`ALPHA_GAIN`], DCTCP's and Linux Prague's).
//!   Linux's default (`prague_alpha_mode` 0): α starts at 0 and is averaged
//!   only once a first mark has shown an AQM on the path.
//! - **The scalable cut**: on CE marks that start a new congestion event
//!   (once per round, the recovery module's rule), cwnd ← cwnd·(1 − α/2),
//!   ssthresh ← cwnd (RFC 9331 §4.3's "scalable congestion control", DCTCP
//!   RFC 8257 §3.3). Packets the ACK reported marked earn no increase
//!   (Linux: "only additive increase for ACK of non-marked packets"), and
//!   unlike a loss a mark does not stop the window growing for a round.
//! - **Slow start** is classic (RFC 5681, byte counting, no HyStart++, as
//!   Linux's `tcp_slow_start`) and ends at the first CE mark, which cuts
//!   the window by CUBIC's β = 0.7 ([`FIRST_MARK_REDUCTION`]; α is still 0
//!   then, and Linux halves: "half cwnd at 1st mark"). Paced at twice the
//!   window per round, slow start crosses the L4S queue's 1 ms step once the
//!   window passes about half the BDP, and that mark comes back a round
//!   later, with the window about the BDP: halving it left half the pipe for
//!   the one-packet-a-round increase to refill (on 50 Mb/s, 20 ms each way,
//!   a 208-packet BDP: 3–4 s, 0.876 of capacity over 50 MB). β = 0.7 gave
//!   0.929, 0.8 gave 0.941, picoquic's one packet down 0.940 but a q99 of
//!   6–7 ms; the classic flows DualPI2 couples Prague with cut by 0.7, and
//!   the queue's q99 stayed at 1.3 ms (docs/notes/2026-12-07-ecn.md).
//! - **Additive increase with RTT independence** (RFC 9331 §4.3 "reduce
//!   RTT dependence"): one packet per round, except that once the flow has
//!   spent [`RTT_TRANSITION_ROUNDS`] rounds out of slow start, a smoothed
//!   RTT below the reference RTT ([`RTT_TARGET`], 25 ms) scales the
//!   increase by (srtt/25 ms)², so the *rate* grows by mss/(25 ms)² per
//!   second whatever the RTT: what a 25 ms flow's window of +1 packet per
//!   round amounts to (Linux `prague_rate_scaled_ai_ack_increase`). In that
//!   mode α is also averaged, and the window cut, at most once per 25 ms.
//! - **Pacing** at cwnd/srtt (Linux Prague's 100%, against the 120% of
//!   Linux's other controllers and the recovery module's 1.25), doubled while
//!   cwnd < ssthresh/2 (slow start), from the larger of the window and the
//!   bytes in flight (`prague_update_pacing_rate`). Linux's ±3% rate
//!   wobble per round and its sub-two-packet virtual window are left out.
//! - **Classic fallback on loss** (RFC 9331 §4.3 requires a response to
//!   loss at least as strong as Reno's): a loss halves the window, Reno's
//!   β = 1/2 as Linux Prague's `prague_enter_loss` does (not CUBIC's), and
//!   the window does not grow until the recovery period ends; persistent
//!   congestion collapses it to `timeout_window_packets`. A loss that proves
//!   spurious is undone (Linux `prague_cwnd_undo`). On a path whose ECN
//!   fails validation Prague therefore runs as Reno without HyStart++.
//!
//! Where picoquic's `prague.c` differs, sift follows Linux: picoquic lets α
//! jump to F when more than half a round is marked and then halves the
//! window as for a loss, leaves slow start at the first mark one packet
//! down rather than halved, and has no RTT-independent scaling below 25 ms
//! (it speeds slow start up on paths longer than its reference RTT).
//!
//! Metrics fields: `alpha` (α), `rtt_independent` (0/1), `ai_packets_per_round`
//! (the additive increase per round, in packets), `ce_cuts` (windows cut
//! for CE) and `saw_ce` (0/1).

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::ranges::{self, Range, Ranges, Valid};
use crate::rounds::RoundTracker;
use crate::{
    slow_start, AckEvent, CongestionControl, EcnEvent, Ect, InvalidCcConfig, LossEvent,
    LossVerdict, Metrics, SpuriousCongestionEvent, WindowCore,
};

/// g, the gain of α's moving average: 1/16 (RFC 8257 §4.2's
/// recommendation for DCTCP; Linux Prague's `PRAGUE_SHIFT_G` = 4).
pub const ALPHA_GAIN: f64 = 1.0 / 16.0;
/// The reference RTT below which Prague's increase is scaled to be RTT
/// independent (Linux Prague's `RTT_TARGET`, 25 ms;
/// draft-briscoe-iccrg-prague-congestion-control §2.3.5).
pub const RTT_TARGET: Duration = Duration::from_millis(25);
/// Rounds out of slow start before RTT independence applies (Linux
/// Prague's `DEFAULT_RTT_TRANSITION`): short flows keep their speed.
pub const RTT_TRANSITION_ROUNDS: u64 = 4;
/// Pacing gain in congestion avoidance: 100% of cwnd/srtt (Linux Prague).
pub const PACING_GAIN: f64 = 1.0;
/// Pacing gain while cwnd < ssthresh/2: 200% (Linux Prague's `rate <<= 1`).
pub const SLOW_START_PACING_GAIN: f64 = 2.0;
/// RFC 9002 §7.2 initial window, in packets.
pub const INITIAL_WINDOW_PACKETS: u64 = 10;
/// A loss halves the window (Reno's β, Linux Prague's `prague_enter_loss`).
pub const LOSS_REDUCTION: f64 = 0.5;
/// The first CE mark, which ends slow start before α has a history, keeps
/// 0.7 of the window: CUBIC's β (RFC 9438 §4.6), the cut of the classic
/// flows DualPI2 couples Prague with (module docs: Linux halves).
pub const FIRST_MARK_REDUCTION: f64 = 0.7;
/// Packets that may leave back to back (see `metrics`): the pacer's burst.
pub const BURST_LIMIT_PACKETS: u64 = 2;

/// Prague's parameters; the defaults are Linux Prague's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PragueConfig {
    /// Initial window in packets.
    pub initial_window_packets: u64,
    /// Window after persistent congestion, in packets (RFC 9002's 2).
    pub timeout_window_packets: u64,
    /// The reference RTT for RTT independence, in milliseconds (25).
    /// Must be positive.
    pub rtt_target_ms: u64,
    /// Rounds out of slow start before RTT independence applies (4).
    pub rtt_transition_rounds: u64,
}

impl Default for PragueConfig {
    fn default() -> Self {
        Self {
            initial_window_packets: INITIAL_WINDOW_PACKETS,
            timeout_window_packets: 2,
            rtt_target_ms: RTT_TARGET.as_millis() as u64,
            rtt_transition_rounds: RTT_TRANSITION_ROUNDS,
        }
    }
}

impl PragueConfig {
    /// Each parameter's range: windows of at least one packet, a positive
    /// reference RTT (Linux Prague's when out of range).
    const RANGES: &'static Ranges<Self> = &[
        &Range {
            field: "initial_window_packets",
            value: |c: &mut Self| &mut c.initial_window_packets,
            valid: Valid::AtLeast(1),
            expected: "at least 1",
        },
        &Range {
            field: "timeout_window_packets",
            value: |c: &mut Self| &mut c.timeout_window_packets,
            valid: Valid::AtLeast(1),
            expected: "at least 1",
        },
        &Range {
            field: "rtt_target_ms",
            value: |c: &mut Self| &mut c.rtt_target_ms,
            valid: Valid::Where(|ms| ms > 0),
            expected: "a positive number of milliseconds",
        },
    ];

    /// Checks every value against its range.
    pub fn validate(&self) -> Result<(), InvalidCcConfig> {
        ranges::validate("prague", self, Self::RANGES)
    }

    fn sanitized(self) -> Self {
        ranges::sanitized(self, Self::RANGES)
    }
}

/// The Prague controller. See the module docs.
#[derive(Debug, Clone)]
pub struct Prague {
    config: PragueConfig,
    /// The window, kept fractional: RTT-independent growth is a fraction of
    /// a byte per ACK on short paths.
    window: WindowCore<f64>,
    rounds: RoundTracker,
    /// α, the moving average of the marked fraction.
    alpha: f64,
    /// A CE mark has been seen: the path has an AQM.
    saw_ce: bool,
    /// Packets acknowledged and CE marked since α was last averaged.
    acked_since_alpha: u64,
    marked_since_alpha: u64,
    /// When α was last averaged, and when the window was last cut for CE.
    alpha_at: Option<Instant>,
    cut_at: Option<Instant>,
    /// Rounds completed out of slow start (Linux's `ca->round`).
    rounds_out_of_slow_start: u64,
    /// A loss's recovery period is running: no growth (a mark's is not).
    in_loss: bool,
    smoothed_rtt: Option<Duration>,
    bytes_in_flight: u64,
    /// What the last ACK grew the window by, and the packets it acked: the
    /// share of it earned by packets then reported marked is taken back.
    last_growth: f64,
    last_acked_packets: u64,
    /// Windows cut for CE.
    ce_cuts: u64,
}

impl Prague {
    /// A controller for packets of `mss` bytes. Out-of-range configuration
    /// values fall back to the defaults (see [`PragueConfig::validate`]).
    pub fn new(config: PragueConfig, mss: u64) -> Self {
        let config = config.sanitized();
        Self {
            window: WindowCore::new(mss, config.initial_window_packets),
            config,
            rounds: RoundTracker::default(),
            alpha: 0.0,
            saw_ce: false,
            acked_since_alpha: 0,
            marked_since_alpha: 0,
            alpha_at: None,
            cut_at: None,
            rounds_out_of_slow_start: 0,
            in_loss: false,
            smoothed_rtt: None,
            bytes_in_flight: 0,
            last_growth: 0.0,
            last_acked_packets: 0,
            ce_cuts: 0,
        }
    }

    /// α, the moving average of the marked fraction.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    fn rtt_target(&self) -> Duration {
        Duration::from_millis(self.config.rtt_target_ms)
    }

    fn in_slow_start(&self) -> bool {
        self.window.cwnd < self.window.ssthresh as f64
    }

    /// RTT independence applies: out of slow start for long enough.
    fn rtt_independent(&self) -> bool {
        !self.in_slow_start() && self.rounds_out_of_slow_start >= self.config.rtt_transition_rounds
    }

    /// The additive increase per round, in packets: 1, or (srtt/target)²
    /// below the reference RTT once RTT independent.
    fn increase_per_round(&self) -> f64 {
        match self.smoothed_rtt {
            Some(srtt) if self.rtt_independent() && srtt < self.rtt_target() => {
                let ratio = srtt.as_secs_f64() / self.rtt_target().as_secs_f64();
                ratio * ratio
            }
            _ => 1.0,
        }
    }

    /// Whether the reference RTT has passed since `at`: in RTT-independent
    /// mode α is averaged, and the window cut, at most that often.
    fn target_elapsed_since(&self, at: Option<Instant>, now: Instant) -> bool {
        !self.rtt_independent()
            || at.is_none_or(|at| now.saturating_duration_since(at) >= self.rtt_target())
    }

    /// At the end of a round: α ← (1 − g)·α + g·F, once an AQM has shown.
    fn end_round(&mut self, now: Instant) {
        if !self.in_slow_start() {
            self.rounds_out_of_slow_start += 1;
        }
        if !self.saw_ce {
            self.acked_since_alpha = 0;
            self.marked_since_alpha = 0;
            return;
        }
        if !self.target_elapsed_since(self.alpha_at, now) {
            return;
        }
        let marked_fraction = if self.acked_since_alpha == 0 {
            0.0
        } else {
            (self.marked_since_alpha as f64 / self.acked_since_alpha as f64).min(1.0)
        };
        self.alpha += ALPHA_GAIN * (marked_fraction - self.alpha);
        self.alpha_at = Some(now);
        self.acked_since_alpha = 0;
        self.marked_since_alpha = 0;
    }

    /// Grows the window for one ACK: slow start up to ssthresh, then the
    /// additive increase; returns by how much.
    fn grow(&mut self, ack: &AckEvent) -> f64 {
        let before = self.window.cwnd;
        let mut acked = ack.acked_bytes;
        if self.in_slow_start() {
            let whole = self.window.cwnd.floor() as u64;
            let (cwnd, rest) = slow_start(whole, self.window.ssthresh, acked);
            self.window.cwnd += (cwnd - whole) as f64;
            acked = rest;
        }
        if acked > 0 && self.window.cwnd > 0.0 {
            let mss = self.window.mss as f64;
            self.window.cwnd += mss * self.increase_per_round() * acked as f64 / self.window.cwnd;
        }
        self.window.cwnd - before
    }

    /// cwnd ← max(`cwnd`, minimum window), ssthresh ← cwnd: a cut.
    fn cut_to(&mut self, cwnd: f64, now: Instant) {
        let floor = self.window.minimum() as f64;
        self.window.cwnd = cwnd.max(floor);
        self.window.ssthresh = self.window.cwnd as u64;
        self.window.increase = Default::default();
        self.last_growth = 0.0;
        self.cut_at = Some(now);
        self.ce_cuts += 1;
    }
}

impl CongestionControl for Prague {
    fn on_sent(&mut self, _now: Instant, _bytes: u64, bytes_in_flight: u64) {
        self.bytes_in_flight = bytes_in_flight;
    }

    fn on_ack(&mut self, ack: &AckEvent) {
        if !ack.rtt.smoothed.is_zero() {
            self.smoothed_rtt = Some(ack.rtt.smoothed);
        }
        self.bytes_in_flight = ack.bytes_in_flight;
        self.acked_since_alpha = self.acked_since_alpha.saturating_add(ack.acked_packets);
        if self.rounds.on_ack(ack) {
            self.end_round(ack.now);
        }
        self.last_growth = 0.0;
        self.last_acked_packets = ack.acked_packets;
        if self.in_loss && !ack.in_recovery {
            self.in_loss = false;
            self.window.in_recovery = false;
        }
        if self.in_loss || ack.app_limited {
            return;
        }
        self.last_growth = self.grow(ack);
    }

    fn on_ecn(&mut self, ev: &EcnEvent) {
        // A peer may report more marks than packets: F is capped at 1.
        let marked = ev.newly_marked;
        self.marked_since_alpha = self.marked_since_alpha.saturating_add(marked);
        // Marked packets earn no increase.
        if self.last_acked_packets > 0 {
            let share = marked.min(self.last_acked_packets) as f64 / self.last_acked_packets as f64;
            self.window.cwnd -= self.last_growth * share;
            self.last_growth -= self.last_growth * share;
        }
        if !ev.new_congestion_event {
            // At most one cut per round (the recovery module's rule).
        } else if !self.saw_ce {
            // The first mark: an AQM is on the path. α is still 0: the
            // window is cut by CUBIC's β and slow start ends.
            self.alpha_at = Some(ev.now);
            let cut = self.window.cwnd * FIRST_MARK_REDUCTION;
            self.cut_to(cut, ev.now);
        } else if self.target_elapsed_since(self.cut_at, ev.now) {
            let cwnd = self.window.cwnd * (1.0 - self.alpha / 2.0);
            self.cut_to(cwnd, ev.now);
        }
        self.saw_ce = true;
        self.window.forget_undo();
    }

    fn on_congestion(&mut self, ev: &LossEvent) -> LossVerdict {
        self.window.save_for_undo(());
        self.last_growth = 0.0;
        let floor = self.window.minimum();
        self.window.ssthresh = ((self.window.cwnd * LOSS_REDUCTION) as u64).max(floor);
        self.window.cwnd = if ev.persistent {
            self.window
                .packets(self.config.timeout_window_packets)
                .max(1) as f64
        } else {
            self.window.ssthresh as f64
        };
        // No growth from ACKs of packets sent before the loss, a timeout's
        // included (RFC 9002 §7.3.2).
        self.in_loss = true;
        self.window.in_recovery = !ev.persistent;
        LossVerdict::Congestive
    }

    fn on_spurious_congestion(&mut self, _ev: &SpuriousCongestionEvent) {
        if self.window.undo().is_some() {
            self.in_loss = false;
        }
    }

    fn ect(&self) -> Ect {
        Ect::Ect1
    }

    fn set_mss(&mut self, mss: u64) {
        self.window.set_mss(mss);
    }

    fn set_window(&mut self, cwnd: u64, ssthresh: Option<u64>) {
        self.window.set_window(cwnd, ssthresh);
    }

    fn window(&self) -> u64 {
        // Rounded up, as Linux rounds its fractional window.
        self.window.cwnd.ceil() as u64
    }

    fn ssthresh(&self) -> u64 {
        self.window.ssthresh
    }

    fn pacing_rate(&self) -> Option<u64> {
        let srtt = self.smoothed_rtt?;
        let gain = if self.window.cwnd < self.window.ssthresh as f64 / 2.0 {
            SLOW_START_PACING_GAIN
        } else {
            PACING_GAIN
        };
        let bytes = self.window.cwnd.max(self.bytes_in_flight as f64);
        Some((gain * bytes / srtt.as_secs_f64().max(1e-6)) as u64)
    }

    fn metrics(&self) -> Metrics {
        let mut metrics = Metrics {
            algorithm: "prague".into(),
            cwnd: self.window(),
            ssthresh: self.window.ssthresh,
            phase: self.window.phase(),
            last_verdict: None,
            fields: Default::default(),
        };
        let f = &mut metrics.fields;
        f.insert("alpha".into(), self.alpha);
        f.insert(
            "rtt_independent".into(),
            f64::from(u8::from(self.rtt_independent())),
        );
        f.insert("ai_packets_per_round".into(), self.increase_per_round());
        f.insert("ce_cuts".into(), self.ce_cuts as f64);
        f.insert("saw_ce".into(), f64::from(u8::from(self.saw_ce)));
        // The L4S queue marks from a 1 ms step (RFC 9332 §2.5.1.2): a
        // burst longer than that is marked whatever the window, and at
        // 20 Mb/s 1 ms is under two packets. Linux's and picoquic's Prague
        // pace every packet; here no more than two leave back to back.
        f.insert("burst_limit_packets".into(), BURST_LIMIT_PACKETS as f64);
        metrics
    }
}

#[cfg(test)]
mod tests;
