//! CUBIC as RFC 9438 writes it: the modern baseline (Linux's and quiche's
//! default).
//!
//! After a congestion event the window follows a cubic curve of the time since
//! the current congestion-avoidance epoch began,
//! `W_cubic(t) = C·(t − K)³ + W_max` (RFC 9438 §4.2), concave while below the
//! window at the last loss (`W_max`), convex above it. Next to it runs an
//! estimate of what Reno would have reached (`W_est`, §4.3) so that CUBIC is
//! never slower than Reno on short-RTT, small-window paths. Windows are bytes;
//! the RFC's curve is in segments, so every segment count is scaled by `mss`.
//! The window is the loss-based controllers' [`WindowCore`] with `cwnd` kept
//! in `f64`, so that growth along the curve a fraction of a byte per ACK is
//! never lost; this file holds the curve, W_est, the epoch and what an undo
//! restores beside the window (`CubicUndo`).
//!
//! Where the RFC leaves a choice, sift takes:
//! - the window before the cut (not flight size) as the base of the β cut
//!   (§4.6 allows either; the recovery module reports bytes in flight *after*
//!   the lost packets left, which would under-count);
//! - the smoothed RTT as the RTT of the target `W_cubic(t + RTT)` (§4.2);
//! - in the Reno-friendly region the window becomes `W_est` but never shrinks
//!   (the RFC says "set to W_est", which cannot be below a window that only
//!   grew since the epoch began unless the cubic increment overtook it);
//! - undo of spurious congestion events (§4.9): `on_congestion` saves
//!   cwnd, ssthresh, W_max, K, W_est, cwnd_prior and the epoch, and a
//!   spurious event restores them, the window to max(current, prior) as
//!   Linux's `tcp_undo_cwnd_reduction` does (the RFC restores the prior
//!   window; the window may have grown since, and undo never shrinks it);
//! - `small_loss_rollback` (on by default) starts from quiche's reading of
//!   draft-ietf-tcpm-rfc8312bis §4.9: a recovery period that ends having
//!   lost fewer than max(2, 20% of the window in packets) is taken for
//!   spurious and undone like one. quiche applies it to every such period,
//!   which also makes CUBIC ignore the few drops of a paced sender
//!   overflowing a drop-tail queue: measured with `sift-lab run` on issue
//!   12's path (50 Mb/s, 50 ms each way, queue 463), that rule takes 42.2 of
//!   47.5 Mb/s from an RFC CUBIC flow sharing the clean path for 60 s, and
//!   46.2 from a Reno flow. sift undoes a period only if the path showed no
//!   queue when its loss was found (`rollback_only_without_queue`): the
//!   least of the latest 16 RTT samples within RttThresh of min_rtt
//!   (RFC 9406's clamp(min_rtt/8, 4 ms, 16 ms)) plus 4·rttvar (RFC 6298's
//!   allowance for noise). A queue raises every sample, jitter and delayed
//!   ACKs only some. A queue overflowing is a full queue; a radio dropping
//!   a packet is not. On the same path: at 1% random loss
//!   0.60–0.82 of capacity·(1−p) (seeds 1–3) where RFC 9438 gets 0.03; clean
//!   and shared with one RFC CUBIC flow for 60 s, 23.9 / 23.7 Mb/s, the same
//!   split as two RFC CUBIC flows; against Reno 37.8 / 9.8, the same as RFC
//!   CUBIC against Reno. With 5 ms of jitter at 1% loss (`sift-lab
//!   reordering`) 0.737 of capacity, against 0.768 without jitter and
//!   0.176 for RFC 9438. In-order jitter (a cellular link: a late packet
//!   holds back those behind it) raises runs of more than 16 samples, so
//!   `rollback_jitter_robust` (on by default) also takes the loss for the
//!   link's when the last round's minimum RTT, less three times the
//!   measured jitter, is within RttThresh of min_rtt (`queue_estimate.rs`).
//!   Measured with `sift-lab run` on issue 36's path (20 Mb/s, 20 ms each
//!   way, queue 200, 1% loss, seeds 1–3, medians): with 5 ms of in-order
//!   normal jitter 0.448 → 0.663 of capacity·(1 − p), against 0.776 → 0.804
//!   without jitter; on a clean 50 Mb/s, 50 ms path with queue 420 for 60 s
//!   its share beside CUBIC and beside Reno is unchanged (0.495 and
//!   0.216 of the two flows' bytes to the other flow) and Westwood-A's
//!   falls from 0.476 to 0.370. That round is the last completed one, which
//!   at a slow start overflowing the queue began before the queue, so the
//!   rollback passes over a full queue; `rollback_floor_over_min_rtt` (off
//!   by default: it costs random loss and in-order jitter) takes the floor over the last
//!   min_rtt of ACKs instead. `small_loss_rollback = false` is RFC 9438 exactly
//!   (the paper-style baselines in tests use it);
//! - ECN (DESIGN §6.1, `ecn.rs`): a CE mark is a congestion event (RFC
//!   9438 §4.1 and §4.6 cut on ECN-Echo as on loss), and a recovery period
//!   that CE marks began or reached is never rolled back nor undone as
//!   spurious: a mark is the queue's own word, not a guess. With
//!   `ecn_loss_verdict` on a path whose ECN is validated, the rollback's
//!   queue test is replaced by the marks: a loss with no CE mark in its
//!   round is the link's (verdict random) and, if small, makes no cut at
//!   all, rather than a cut rolled back at the period's end (the window
//!   keeps growing through the period); a mark in that period, or losses
//!   reaching the small-loss threshold, make the cut then. Only once the
//!   path has marked at all: validation proves the path carries ECN, not
//!   that its bottleneck marks, and an initial slow start spared its
//!   random losses doubles past the queue before CoDel's first mark
//!   returns. A loss with a mark in its round is congestive and kept,
//!   unless that mark's cut already answered it (below). Measured with
//!   `sift-lab run` (50 Mb/s, 50 ms each way, queue 420, 1% loss,
//!   CoDel-ECN, 50 MB, seeds 1–3, medians): cut-then-rollback 0.507 of
//!   capacity·(1 − p) with the 95th percentile of queueing delay 6 ms; no
//!   cut from the start 0.881 but 74 ms (the slow start); no cut after
//!   the first mark 0.795 and 10 ms. On that path a loss arrives about
//!   every round, so a cut undone a round later held the window at 0.7
//!   most of the time. Off by default. With or without it, a loss of a
//!   packet sent before a cut CE marks made or confirmed, or judged
//!   congestive only by marks that came before that cut, is that cut's
//!   congestion, answered once (RFC 3168 §6.1.2), and a mark on a packet
//!   sent before the cut is not counted again. With `ecn_loss_verdict`, a
//!   mark in congestion avoidance at a shallow queue cuts by
//!   `ecn_multiplicative_decrease` (an RFC 8511 β_ecn, 0.85 as measured) instead of
//!   β_cubic: 0.795 → 0.847 on the path above;
//! - slow start is HyStart++ (RFC 9406, which RFC 9438 §4.10 recommends)
//!   unless `hystart` is off; when HyStart++ ends CSS the first epoch starts
//!   with W_max = cwnd and K = 0, as after a timeout.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::ecn::{EcnMemory, MARKED_BASIS};
use crate::hystart::{rtt_rise_threshold, HyStart, HyStartPhase};
use crate::queue_estimate::{
    BaseRttReset, QueueDelayEstimator, QueueEstimate, JITTER_ALLOWANCE_FACTOR,
};
use crate::ranges::{self, Range, Ranges, Valid};
use crate::{
    AckEvent, CongestionControl, EcnEvent, InvalidCcConfig, LossEvent, LossVerdict, Metrics,
    SpuriousCongestionEvent, VerdictBasis, WindowCore,
};

/// RFC 9438 §4.6 / §5: β_cubic, the multiplicative decrease factor.
pub const BETA_CUBIC: f64 = 0.7;
/// `ecn_multiplicative_decrease`: β for a cut CE marks made, with
/// `ecn_loss_verdict` (an RFC 8511 β_ecn; measured in the field's docs).
pub const BETA_ECN: f64 = 0.85;
/// `ecn_mark_cut_to_pipe`: the window a mark's cut keeps at most (a 5%
/// cut), so a mark is answered even when the RTT shows no queue yet.
pub const PIPE_CUT_MAX: f64 = 0.95;
/// RFC 9438 §5.1: C, the constant that sets how fast the cubic curve grows
/// (segments per second³).
pub const C_CUBIC: f64 = 0.4;
/// RFC 9002 §7.2: kInitialWindow is 10 packets (sift counts whole packets).
pub const INITIAL_WINDOW_PACKETS: u64 = 10;
/// RFC 9438 §4.2: the target window is clamped to at most 1.5·cwnd, so the
/// window never grows faster than slow start's ×1.5 per RTT.
pub const MAX_TARGET_GROWTH: f64 = 1.5;
/// `small_loss_rollback`: a recovery period that lost fewer packets than
/// this share of the window (percent) is undone (quiche's
/// ROLLBACK_THRESHOLD_PERCENT)...
pub const ROLLBACK_THRESHOLD_PERCENT: u64 = 20;
/// ...or fewer than this many packets (quiche's MIN_ROLLBACK_THRESHOLD).
pub const MIN_ROLLBACK_THRESHOLD: u64 = 2;
/// `rollback_only_without_queue`: RTT samples whose minimum measures the
/// standing queue (twice HyStart++'s N_RTT_SAMPLE: netem-style jitter
/// behind a rate holds eight in a row above the base often enough).
pub const QUEUE_SAMPLES: usize = 16;

/// CUBIC's parameters. Defaults are RFC 9438's.
///
/// Metrics fields reported by [`Cubic`]: `w_max_bytes` (W_max), `k_s` (K in
/// seconds) and `w_est_bytes` (W_est, the Reno-friendly estimate).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CubicConfig {
    /// β_cubic: the window after a congestion event is this fraction of the
    /// window before it (RFC 9438 §4.6). Must lie in (0, 1).
    #[serde(alias = "beta")]
    pub multiplicative_decrease: f64,
    /// C: the cubic curve's scale in segments per second³ (RFC 9438 §5.1).
    /// Must be positive.
    #[serde(alias = "c")]
    pub growth_constant: f64,
    /// Fast convergence (RFC 9438 §4.7): a loss below the previous W_max
    /// lowers W_max further, releasing bandwidth to newer flows.
    pub fast_convergence: bool,
    /// The Reno-friendly region (RFC 9438 §4.3): grow at least as fast as
    /// Reno would (W_est).
    pub reno_friendly: bool,
    /// Initial window in packets (RFC 9002 §7.2: 10).
    pub initial_window_packets: u64,
    /// Leave the initial slow start by HyStart++ (RFC 9406) instead of at the
    /// first loss.
    pub hystart: bool,
    /// Undo a congestion event whose recovery period lost fewer than
    /// max(2, 20% of the window) packets, as quiche does (see the module
    /// docs). Off: RFC 9438.
    pub small_loss_rollback: bool,
    /// With `small_loss_rollback`: undo only an event whose loss was found
    /// while the path showed no queue (module docs). Off: quiche's rule.
    pub rollback_only_without_queue: bool,
    /// With `rollback_only_without_queue`: the path also shows no queue when
    /// the last round's minimum RTT, less three times the measured jitter,
    /// is within RttThresh of min_rtt (`queue_estimate.rs`), so in-order
    /// delay jitter (a cellular link) does not read as a queue. Off: the
    /// latest 16 samples' test alone.
    pub rollback_jitter_robust: bool,
    /// With `rollback_jitter_robust`: take that round's minimum over the
    /// last min_rtt of ACKs, so a queue built within the last round (a
    /// slow start overflowing the queue) counts (`RecentRttFloor`). Off
    /// (the default): the last completed round's minimum, which began
    /// before such a queue, so the rollback passes over it. On keeps the
    /// guard's intent but costs random loss: measured with `sift-lab`
    /// (interop/results/2026-11-27-cubic-rollback/README.md), leaky-pipes
    /// 0.5% loss at 100 ms 0.747 → 0.716 of capacity·(1 − p) (seeds 1–10),
    /// and CUBIC's share beside BBR 0.505 → 0.407 (seeds 1–10); under
    /// in-order jitter, whose min_rtt is the jitter's low tail, more
    /// (cellular, steady, 5 ms normal, 1% loss: 0.670 → 0.499, seeds 1–3).
    pub rollback_floor_over_min_rtt: bool,
    /// With `small_loss_rollback`, on a path whose ECN is validated: the
    /// rollback judges a loss by the CE marks of its round instead of by
    /// the queue the RTT shows, and a small unmarked loss makes no cut
    /// (module docs; `--cc cubic-ecn`). Off: the RTT's test.
    pub ecn_loss_verdict: bool,
    /// With `ecn_loss_verdict`: β for a cut that CE marks made (a mark
    /// started the congestion event, or reached a period spared as random
    /// loss) in congestion avoidance while the RTT shows a shallow queue
    /// (the least of the latest samples within RttThresh of min_rtt), as
    /// RFC 8511's Alternative Backoff with ECN allows. A marking queue
    /// signals at a few milliseconds of queue, not at a full buffer, so
    /// β_cubic's 0.7 of the window left the pipe short for the rest of a
    /// 50 MB run (K ≈ 7 s at 50 Mb/s and 100 ms; fast convergence put
    /// W_max below the BDP). A mark that ends a slow start, or one behind a
    /// deep queue, keeps β_cubic: the window it answers doubled since the
    /// marked packet left. Measured with `sift-lab run` (50 Mb/s, 50 ms
    /// each way, queue 420, CoDel-ECN, 50 MB, seeds 1–3, medians of
    /// capacity·(1 − p), q95 of queueing delay): 1% loss 0.795 → 0.847
    /// (q95 10.2 ms both); 0% 0.882 and 2% 0.793 unchanged (q95 26.6 and
    /// 20.5 ms both); 0.9 gave 0.845 at 1%; applied to every marked cut,
    /// 0.85 took 0% loss's q95 from 26.6 to 73.7 ms (a slow start's
    /// overshoot drained in more cuts). Must lie in (0, 1); 0.7
    /// (= β_cubic) is the old rule.
    pub ecn_multiplicative_decrease: f64,
    /// With `ecn_loss_verdict`, on a path whose ECN is validated: the
    /// initial slow start spares a small unmarked loss seen while the RTT
    /// shows no queue (as after the path's first mark; a random loss no
    /// longer pauses it a round and halves the window before the pipe is
    /// full), and ends at HyStart++'s RTT rise straight in congestion
    /// avoidance, the window at the pipe the ACK rate measures (bytes
    /// acknowledged over the last RttThresh of ACKs, times min_rtt)
    /// instead of five rounds of CSS: a paced slow start shows the queue
    /// a round after it begins, with the window already twice the pipe,
    /// and a marking queue's first mark comes two rounds late (CoDel's
    /// interval, then the path), by which time the queue has overflowed.
    /// Marks on packets sent before that exit are its congestion, answered
    /// by it (counted as the path's marks, no cut). Measured with
    /// `sift-lab run` (50 Mb/s, 50 ms each way, queue 420, CoDel-ECN,
    /// 50 MB, seeds 1–3, medians): see docs/notes/2026-12-07-ecn.md,
    /// "Fourth pass". Off: the paper's slow start (HyStart++ and CSS, a
    /// cut at every loss until the first mark).
    pub ecn_slow_start_exit: bool,
    /// With `ecn_loss_verdict`: a mark's gentler cut (above) stops at the
    /// pipe, cwnd·min_rtt/(min_rtt + the standing queue the RTT shows),
    /// when that is more than `ecn_multiplicative_decrease` leaves: it
    /// drains the marking queue's few milliseconds and no more, so the
    /// bottleneck never idles while the window climbs back; a cut of 5% at
    /// least (`PIPE_CUT_MAX`). Measured with
    /// `sift-lab run` as `ecn_slow_start_exit`: see the notes' "Fourth
    /// pass". Off: `ecn_multiplicative_decrease` alone.
    pub ecn_mark_cut_to_pipe: bool,
}

impl Default for CubicConfig {
    fn default() -> Self {
        Self {
            multiplicative_decrease: BETA_CUBIC,
            growth_constant: C_CUBIC,
            fast_convergence: true,
            reno_friendly: true,
            initial_window_packets: INITIAL_WINDOW_PACKETS,
            hystart: true,
            small_loss_rollback: true,
            rollback_only_without_queue: true,
            rollback_jitter_robust: true,
            rollback_floor_over_min_rtt: false,
            ecn_loss_verdict: false,
            ecn_multiplicative_decrease: BETA_ECN,
            ecn_slow_start_exit: true,
            ecn_mark_cut_to_pipe: true,
        }
    }
}

impl CubicConfig {
    /// Each parameter's range: β and C as RFC 9438 allows them (§4.6,
    /// §5.1), so the controller never computes with a NaN or a growing
    /// "decrease"; out of range, they fall back to the RFC's.
    const RANGES: &'static Ranges<Self> = &[
        &Range {
            field: "multiplicative_decrease",
            value: |c: &mut Self| &mut c.multiplicative_decrease,
            valid: Valid::Where(|beta| beta > 0.0 && beta < 1.0),
            expected: "a fraction strictly between 0 and 1",
        },
        &Range {
            field: "ecn_multiplicative_decrease",
            value: |c: &mut Self| &mut c.ecn_multiplicative_decrease,
            valid: Valid::Where(|beta| beta > 0.0 && beta < 1.0),
            expected: "a fraction strictly between 0 and 1",
        },
        &Range {
            field: "growth_constant",
            value: |c: &mut Self| &mut c.growth_constant,
            valid: Valid::Where(|c| c.is_finite() && c > 0.0),
            expected: "a positive finite number",
        },
        &Range {
            field: "initial_window_packets",
            value: |c: &mut Self| &mut c.initial_window_packets,
            valid: Valid::AtLeast(1),
            expected: "at least 1",
        },
    ];

    /// Checks every value against the range RFC 9438 allows.
    pub fn validate(&self) -> Result<(), InvalidCcConfig> {
        ranges::validate("cubic", self, Self::RANGES)
    }

    /// The same configuration with every out-of-range value (those
    /// [`validate`](Self::validate) reports) put back in range.
    fn sanitized(self) -> Self {
        ranges::sanitized(self, Self::RANGES)
    }

    /// α_cubic = 3(1 − β)/(1 + β): the Reno-friendly additive increase per
    /// RTT, in segments, that matches Reno's average window (RFC 9438 §4.3).
    pub fn alpha_cubic(&self) -> f64 {
        let beta = self.multiplicative_decrease;
        3.0 * (1.0 - beta) / (1.0 + beta)
    }
}

/// The window curve of one congestion-avoidance epoch (RFC 9438 §4.2–§4.5),
/// windows in bytes. [`crate::WestwoodA`] grows along it too.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct CubicCurve {
    /// W_max: where the curve flattens, reached K seconds into the epoch.
    pub w_max: f64,
    /// K in seconds.
    pub k_seconds: f64,
    /// C scaled to bytes: bytes per second³.
    pub growth_bytes_per_s3: f64,
}

impl CubicCurve {
    /// The curve of an epoch that starts at `cwnd_epoch` below `w_max`:
    /// K = ∛((W_max − cwnd_epoch)/C) (Eq. 2); K = 0 when the window is
    /// already at or past W_max.
    pub fn new(w_max: f64, cwnd_epoch: f64, growth_bytes_per_s3: f64) -> Self {
        let k_seconds = if w_max > cwnd_epoch {
            ((w_max - cwnd_epoch) / growth_bytes_per_s3).cbrt()
        } else {
            0.0
        };
        Self {
            w_max,
            k_seconds,
            growth_bytes_per_s3,
        }
    }

    /// W_cubic(t), `t` seconds into the epoch (Eq. 1).
    pub fn window_at(&self, t_seconds: f64) -> f64 {
        self.w_max + self.growth_bytes_per_s3 * (t_seconds - self.k_seconds).powi(3)
    }

    /// The window after `acked` bytes at window `cwnd`, `t` seconds into
    /// the epoch: in the concave (cwnd < W_max) and convex regions alike,
    /// aim at where the curve will be one RTT from now, within
    /// [cwnd, 1.5·cwnd] (§4.4, §4.5).
    pub fn grow(&self, cwnd: f64, acked: f64, t_seconds: f64, rtt: Duration) -> f64 {
        let target = self
            .window_at(t_seconds + rtt.as_secs_f64())
            .min(MAX_TARGET_GROWTH * cwnd)
            .max(cwnd);
        cwnd + (target - cwnd) * acked / cwnd
    }
}

/// The least RTT sample acknowledged within the last min_rtt of ACKs, for
/// `rollback_jitter_robust`. A round counted from its first ACK to the first
/// ACK of a packet sent after it began lasts one RTT of ACKs, so when a
/// queue builds within a round, as in slow start, the last completed round
/// began before the queue and its floor is min_rtt: measured with `sift-lab
/// run` on leaky-pipes' `sharing-cubic-bbr` (seed 1), CUBIC found its first
/// loss with the latest samples at 203–209 ms against a 100.2 ms min_rtt
/// and the last completed round's floor at 100.24 ms, so the rollback
/// passed over a full queue. One min_rtt of ACKs is a round trip of the
/// empty path: a queue raises all of it; jitter, in runs shorter than the
/// path's delay, not all.
#[derive(Clone, Debug, Default)]
struct RecentRttFloor {
    /// (ACK time, sample), the samples increasing from front to back: a
    /// sample goes once a later one is no larger (it can no longer be the
    /// least) or once it is older than the window.
    samples: VecDeque<(Instant, Duration)>,
}

impl RecentRttFloor {
    /// Takes `sample`, acknowledged at `now`, and forgets what is older
    /// than `window` before it.
    fn on_sample(&mut self, now: Instant, sample: Duration, window: Duration) {
        while self.samples.back().is_some_and(|&(_, s)| s >= sample) {
            self.samples.pop_back();
        }
        self.samples.push_back((now, sample));
        while self
            .samples
            .front()
            .is_some_and(|&(at, _)| now.saturating_duration_since(at) > window)
        {
            self.samples.pop_front();
        }
    }

    /// The least sample of the window, if any.
    fn floor(&self) -> Option<Duration> {
        self.samples.front().map(|&(_, sample)| sample)
    }
}

/// The current congestion-avoidance stage ("epoch", RFC 9438 §4.2).
#[derive(Clone, Copy, Debug)]
struct Epoch {
    /// t_epoch, shifted later by every application-limited stretch (§5.8).
    start: Instant,
}

/// What RFC 9438 §4.9 saves before a reduction, beside prior_cwnd and
/// prior_ssthresh (the window's), to restore if the congestion event
/// proves spurious: prior_W_max, prior_K, prior_epoch_start, prior_W_est,
/// and cwnd_prior.
#[derive(Clone, Copy, Debug)]
struct CubicUndo {
    w_max: f64,
    k_seconds: f64,
    w_est: f64,
    cwnd_prior: f64,
    epoch: Option<Epoch>,
    last_verdict: Option<LossVerdict>,
}

/// The CUBIC controller.
#[derive(Debug, Clone)]
pub struct Cubic {
    config: CubicConfig,
    /// The window, its cwnd kept fractional so per-ACK growth is never
    /// lost.
    window: WindowCore<f64, CubicUndo>,
    /// W_max in bytes: the window just before the last reduction, lowered by
    /// fast convergence; 0 until the first epoch or after a timeout.
    w_max: f64,
    /// K in seconds: when the curve of the current epoch reaches W_max.
    k_seconds: f64,
    /// W_est in bytes: what Reno would have reached in this epoch.
    w_est: f64,
    /// cwnd_prior: the window just before the last reduction (§4.3 switches
    /// α_cubic to 1 once W_est reaches it).
    cwnd_prior: f64,
    epoch: Option<Epoch>,
    /// When the current application-limited stretch began, if one is running
    /// inside an epoch.
    app_limited_since: Option<Instant>,
    hystart: HyStart,
    last_verdict: Option<LossVerdict>,
    /// Packets declared lost since the last congestion event began.
    lost_in_recovery: u64,
    /// The RTT showed no queue when the last congestion event began.
    loss_without_queue: bool,
    /// The latest RTT samples (a ring of [`QUEUE_SAMPLES`]; `rtt_samples`
    /// counts them), whose minimum less min_rtt is the standing queue.
    recent_rtts: [Duration; QUEUE_SAMPLES],
    rtt_samples: usize,
    /// BaseRTT and the measured jitter, for `rollback_jitter_robust`.
    queue: QueueDelayEstimator,
    /// The least RTT of the last min_rtt of ACKs, for
    /// `rollback_jitter_robust`.
    recent_floor: RecentRttFloor,
    /// Congestion events undone by `small_loss_rollback`.
    rollbacks: u64,
    /// CE arrivals, validation and rounds, for the ECN rules.
    ecn: EcnMemory,
    /// The congestion event being judged was started by CE marks.
    judging_mark: bool,
    /// The ECN verdict on the current recovery period's loss, when the
    /// ECN rule judged it.
    ecn_verdict: Option<LossVerdict>,
    /// The numbers behind the last verdict, when marks or the ECN rule
    /// gave it.
    basis: Option<VerdictBasis>,
    /// The congestion event of the current recovery period, when the ECN
    /// rule judged its loss random and no cut was made: a mark in the
    /// period or losses past the small-loss threshold make it then.
    spared: Option<LossEvent>,
    /// When CE marks last made or confirmed a cut: a loss of a packet sent
    /// before it belongs to congestion already answered (RFC 3168 §6.1.2,
    /// once per window).
    mark_cut_at: Option<Instant>,
    /// The congestion event being judged is a spared one's deferred cut.
    cutting_spared: bool,
    /// The ACK rate of the initial slow start, for `ecn_slow_start_exit`.
    ack_rate: AckRate,
    /// When `ecn_slow_start_exit` ended the initial slow start: marks on
    /// packets sent before it are the congestion that exit answered.
    slow_start_exit_at: Option<Instant>,
}

/// Bytes acknowledged over the latest span of ACKs (`ecn_slow_start_exit`):
/// the bottleneck's rate once a queue has formed, since ACKs then leave at
/// its pace.
#[derive(Clone, Debug, Default)]
pub(crate) struct AckRate {
    /// (ACK time, bytes acknowledged up to and including that ACK).
    acks: VecDeque<(Instant, u64)>,
    total: u64,
}

impl AckRate {
    /// Takes an ACK of `bytes` at `now` and forgets ACKs older than `span`
    /// before it (keeping the newest of them, the span's start).
    pub(crate) fn on_ack(&mut self, now: Instant, bytes: u64, span: Duration) {
        self.total += bytes;
        self.acks.push_back((now, self.total));
        while self.acks.len() > 2
            && self
                .acks
                .get(1)
                .is_some_and(|&(at, _)| now.saturating_duration_since(at) >= span)
        {
            self.acks.pop_front();
        }
    }

    /// Bytes per second over the span kept, if it covers at least `min`.
    pub(crate) fn rate(&self, min: Duration) -> Option<f64> {
        let (&(first, at_first), &(last, total)) = (self.acks.front()?, self.acks.back()?);
        let elapsed = last.saturating_duration_since(first);
        (elapsed >= min && !elapsed.is_zero())
            .then(|| (total - at_first) as f64 / elapsed.as_secs_f64())
    }
}

impl Cubic {
    /// A controller for packets of `mss` bytes. Out-of-range configuration
    /// values fall back to RFC 9438's (see [`CubicConfig::validate`]).
    pub fn new(config: CubicConfig, mss: u64) -> Self {
        let config = config.sanitized();
        let window = WindowCore::new(mss, config.initial_window_packets);
        let ecn_loss_verdict = config.ecn_loss_verdict;
        Self {
            hystart: HyStart::new(config.hystart),
            config,
            w_max: 0.0,
            k_seconds: 0.0,
            w_est: window.cwnd,
            cwnd_prior: 0.0,
            window,
            epoch: None,
            app_limited_since: None,
            last_verdict: None,
            lost_in_recovery: 0,
            loss_without_queue: false,
            recent_rtts: [Duration::ZERO; QUEUE_SAMPLES],
            rtt_samples: 0,
            queue: QueueDelayEstimator::new(QueueEstimate::JitterRobust, BaseRttReset::Never),
            recent_floor: RecentRttFloor::default(),
            rollbacks: 0,
            ecn: EcnMemory::new(ecn_loss_verdict),
            judging_mark: false,
            ecn_verdict: None,
            basis: None,
            spared: None,
            mark_cut_at: None,
            cutting_spared: false,
            ack_rate: AckRate::default(),
            slow_start_exit_at: None,
        }
    }

    /// Restores the state saved by the last congestion event, if any
    /// (RFC 9438 §4.9); the window never shrinks.
    fn undo_congestion(&mut self) -> bool {
        let Some(undo) = self.window.undo() else {
            return false;
        };
        self.w_max = undo.w_max;
        self.k_seconds = undo.k_seconds;
        self.w_est = undo.w_est;
        self.cwnd_prior = undo.cwnd_prior;
        self.epoch = undo.epoch;
        self.app_limited_since = None;
        self.hystart.undo_congestion();
        self.last_verdict = undo.last_verdict;
        true
    }

    /// The queueing delay the path showed at a loss: the least of the
    /// latest RTT samples over min_rtt. A queue raises every sample; jitter
    /// and delayed ACKs raise some, which the minimum ignores. The smoothed
    /// RTT stands in until there are samples enough.
    fn standing_queue(&self, ev: &LossEvent) -> Duration {
        let recent = if self.rtt_samples >= QUEUE_SAMPLES {
            self.recent_rtts.iter().min().copied()
        } else {
            None
        };
        recent.unwrap_or(ev.rtt.smoothed).saturating_sub(ev.rtt.min)
    }

    /// The queueing delay by the round floor (`rollback_jitter_robust`): the
    /// least RTT of the last min_rtt of ACKs (`rollback_floor_over_min_rtt`)
    /// or of the last completed round over BaseRTT, less the jitter
    /// allowance (`queue_estimate.rs`).
    fn round_floor_queue(&self, smoothed: Duration) -> Option<Duration> {
        if !self.config.rollback_floor_over_min_rtt {
            return self.queue.queueing(smoothed).map(|(_, queueing)| queueing);
        }
        let base = self.queue.base_rtt()?;
        let allowance = self.queue.jitter().mul_f64(JITTER_ALLOWANCE_FACTOR);
        Some(
            self.recent_floor
                .floor()?
                .saturating_sub(base)
                .saturating_sub(allowance),
        )
    }

    /// Whether the RTT shows no more than a marking AQM's shallow queue at
    /// `ev` (`ecn_multiplicative_decrease`): the least of the latest
    /// samples within RttThresh of min_rtt. Without the rollback's 4·rttvar:
    /// a queue growing fast (a slow start's) raises rttvar with it.
    fn shallow_queue(&self, ev: &LossEvent) -> bool {
        self.standing_queue(ev) < rtt_rise_threshold(ev.rtt.min)
    }

    /// Whether `ecn_slow_start_exit` applies: the option and the ECN
    /// verdict on, the path's ECN validated, in the initial slow start that
    /// HyStart++ watches.
    fn ecn_slow_start(&self) -> bool {
        self.config.ecn_slow_start_exit
            && self.config.ecn_loss_verdict
            && self.ecn.validated()
            && self.hystart.phase() == HyStartPhase::SlowStart
            && self.window.cwnd < self.window.ssthresh as f64
    }

    /// `ecn_slow_start_exit` spares an unmarked small loss before the
    /// path's first mark: in the initial slow start or after its exit, at a
    /// shallow queue (the least of the latest RTT samples within RttThresh
    /// of min_rtt).
    fn ecn_exit_spares(&self, ev: &LossEvent) -> bool {
        (self.ecn_slow_start() || self.slow_start_exit_at.is_some()) && self.shallow_queue(ev)
    }

    /// `ecn_slow_start_exit`: HyStart++ saw the RTT rise at `ack`. The
    /// window goes to the pipe the ACK rate measures (never up), and
    /// congestion avoidance starts there, its curve's W_max that window.
    fn exit_slow_start(&mut self, ack: &AckEvent) {
        let span = rtt_rise_threshold(ack.rtt.min);
        let cwnd = self.window.cwnd;
        let pipe = self
            .ack_rate
            .rate(span / 2)
            .map_or(cwnd, |rate| rate * (ack.rtt.min + span / 4).as_secs_f64());
        let window = pipe.min(cwnd).max(self.window.minimum() as f64).floor();
        self.window.cwnd = window;
        self.window.ssthresh = window as u64;
        self.w_max = 0.0;
        self.k_seconds = 0.0;
        self.w_est = window;
        self.epoch = None;
        self.hystart.finish();
        self.window.forget_undo();
        self.ack_rate = AckRate::default();
        self.slow_start_exit_at = Some(ack.now);
        // Losses of packets sent before it are its overshoot, answered.
        self.mark_cut_at = Some(self.mark_cut_at.map_or(ack.now, |at| at.max(ack.now)));
    }

    /// `small_loss_rollback`, on the first ACK after a recovery period: undo
    /// it if it lost few packets for the window.
    fn roll_back_small_loss(&mut self) -> bool {
        if !self.config.small_loss_rollback {
            return false;
        }
        let threshold = self.small_loss_threshold();
        let queue_allows = match self.ecn_verdict {
            Some(verdict) => verdict == LossVerdict::Random,
            None => self.loss_without_queue || !self.config.rollback_only_without_queue,
        };
        // A period CE marks began or reached has nothing left to undo.
        if self.lost_in_recovery >= threshold || !queue_allows || !self.undo_congestion() {
            return false;
        }
        self.rollbacks += 1;
        true
    }

    /// Packets a recovery period may lose and still count as small:
    /// max(2, 20% of the window).
    fn small_loss_threshold(&self) -> u64 {
        let window_packets = self.window.cwnd as u64 / self.window.mss;
        (window_packets * ROLLBACK_THRESHOLD_PERCENT / 100).max(MIN_ROLLBACK_THRESHOLD)
    }

    /// The cut a spared period turned out to need (a mark in it, or more
    /// losses than a small loss), judged congestive.
    fn cut_spared(&mut self, marked: bool) {
        let Some(ev) = self.spared.take() else {
            return;
        };
        self.judging_mark = marked;
        self.cutting_spared = true;
        let lost = self.lost_in_recovery;
        self.on_congestion(&ev);
        self.lost_in_recovery = self.lost_in_recovery.max(lost);
        self.judging_mark = false;
        self.cutting_spared = false;
    }

    /// C scaled to bytes: the curve's coefficient in bytes per second³.
    fn growth_bytes_per_s3(&self) -> f64 {
        self.config.growth_constant * self.window.mss as f64
    }

    /// W_cubic(t) in bytes, `t` seconds into the epoch (RFC 9438 §4.2, Eq. 1).
    fn w_cubic(&self, t_seconds: f64) -> f64 {
        self.curve().window_at(t_seconds)
    }

    fn curve(&self) -> CubicCurve {
        CubicCurve {
            w_max: self.w_max,
            k_seconds: self.k_seconds,
            growth_bytes_per_s3: self.growth_bytes_per_s3(),
        }
    }

    /// Starts a congestion-avoidance epoch at `now` with the current window as
    /// cwnd_epoch (RFC 9438 §4.2). After a timeout, or when slow start carried
    /// the window past the old W_max, W_max becomes cwnd_epoch and K is 0
    /// (§4.8).
    fn start_epoch(&mut self, now: Instant) -> Epoch {
        let cwnd_epoch = self.window.cwnd;
        if self.w_max <= cwnd_epoch {
            self.w_max = cwnd_epoch;
            self.k_seconds = 0.0;
        } else {
            self.k_seconds =
                CubicCurve::new(self.w_max, cwnd_epoch, self.growth_bytes_per_s3()).k_seconds;
        }
        self.w_est = cwnd_epoch;
        let epoch = Epoch { start: now };
        self.epoch = Some(epoch);
        epoch
    }

    /// Congestion avoidance for `acked` bytes (RFC 9438 §4.3–§4.5).
    fn avoid(&mut self, acked: f64, now: Instant, smoothed_rtt: Duration) {
        let epoch = match self.epoch {
            Some(epoch) => epoch,
            None => self.start_epoch(now),
        };
        let cwnd = self.window.cwnd;
        if cwnd <= 0.0 {
            return;
        }
        let t = now.saturating_duration_since(epoch.start).as_secs_f64();

        // Reno-friendly estimate: α_cubic segments per window acked, and
        // Reno's own 1 segment once W_est has regained the pre-loss window.
        let alpha = if self.w_est >= self.cwnd_prior {
            1.0
        } else {
            self.config.alpha_cubic()
        };
        self.w_est += alpha * self.window.mss as f64 * acked / cwnd;

        if self.config.reno_friendly && self.w_cubic(t) < self.w_est {
            self.window.cwnd = cwnd.max(self.w_est);
            return;
        }
        self.window.cwnd = self.curve().grow(cwnd, acked, t, smoothed_rtt);
    }
}

impl CongestionControl for Cubic {
    fn on_sent(&mut self, _now: Instant, _bytes: u64, _bytes_in_flight: u64) {}

    fn on_ack(&mut self, ack: &AckEvent) {
        if ack.rtt_sampled {
            self.recent_rtts[self.rtt_samples % QUEUE_SAMPLES] = ack.rtt.latest;
            self.rtt_samples = self.rtt_samples.wrapping_add(1);
            if self.config.rollback_floor_over_min_rtt {
                // A window's worth of samples at most: kept only when read.
                self.recent_floor
                    .on_sample(ack.now, ack.rtt.latest, ack.rtt.min);
            }
        }
        self.queue.on_ack(ack);
        self.ecn.on_ack(ack);
        if !ack.in_recovery {
            // A spared period ends with nothing to undo.
            self.spared = None;
        } else if self.spared.is_none() {
            return;
        }
        if std::mem::take(&mut self.window.in_recovery) && self.roll_back_small_loss() {
            return;
        }
        if ack.app_limited {
            // RFC 9438 §5.8: no growth, and the epoch clock stops.
            if self.epoch.is_some() && self.app_limited_since.is_none() {
                self.app_limited_since = Some(ack.now);
            }
            return;
        }
        if let Some(since) = self.app_limited_since.take() {
            // Shift the curve later by the application-limited stretch, so
            // it keeps its shape instead of leaping ahead (Linux does the
            // same after idle).
            if let Some(epoch) = self.epoch.as_mut() {
                let paused = ack.now.saturating_duration_since(since);
                epoch.start = epoch.start.checked_add(paused).unwrap_or(epoch.start);
            }
        }

        let mut acked = ack.acked_bytes as f64;
        if self.window.cwnd < self.window.ssthresh as f64 {
            // RFC 9002 §7.3.1 slow start with byte counting (HyStart++ in the
            // initial one), stopping at ssthresh; the rest of this ACK counts
            // as avoidance.
            let ecn_exit = self.ecn_slow_start();
            if ecn_exit {
                self.hystart.set_exit_rise(crate::hystart::MIN_RTT_THRESH);
                let span = rtt_rise_threshold(ack.rtt.min);
                self.ack_rate.on_ack(ack.now, ack.acked_bytes, span);
            }
            let whole = self.window.cwnd.floor() as u64;
            let step = self.hystart.slow_start(whole, self.window.ssthresh, ack);
            if ecn_exit && matches!(self.hystart.phase(), HyStartPhase::Conservative { .. }) {
                self.exit_slow_start(ack);
                return;
            }
            self.window.cwnd += (step.cwnd - whole) as f64;
            self.window.ssthresh = step.ssthresh;
            acked = step.rest as f64;
            if step.rest == 0 {
                return;
            }
        }
        self.avoid(acked, ack.now, ack.rtt.smoothed);
    }

    fn on_congestion(&mut self, ev: &LossEvent) -> LossVerdict {
        // CUBIC tells random loss from congestion only by ECN.
        let ecn_verdict =
            (!self.judging_mark && !self.cutting_spared && self.config.small_loss_rollback)
                .then(|| self.ecn.loss_verdict(ev))
                .flatten();
        // The marks of its round already cut the window: once per window.
        // So when the packet was sent before that cut, or when the marks
        // that make the verdict congestive all came before it.
        let answered = !self.judging_mark
            && !self.cutting_spared
            && !ev.persistent
            && self.mark_cut_at.is_some_and(|at| {
                ev.largest_lost_sent_time <= at
                    || (ecn_verdict == Some(LossVerdict::Congestive)
                        && self.ecn.last_mark_at().is_some_and(|mark| mark <= at))
            });
        // An unmarked small loss on a validated path: no cut to undo later.
        // Only once the path has marked: validation shows the path carries
        // ECN, not that its bottleneck marks, and before the first mark a
        // slow start would double past the queue on spared losses.
        // With `ecn_slow_start_exit`, also in the initial slow start and
        // after its exit while the RTT shows no queue: the exit no longer
        // waits for a loss, and a queue that drops shows in the RTT.
        let spare = ecn_verdict == Some(LossVerdict::Random)
            && (self.ecn.marks() > 0 || self.ecn_exit_spares(ev))
            && (ev.lost_packets.len() as u64) < self.small_loss_threshold();
        if answered || spare {
            self.spared = spare.then(|| ev.clone());
            self.lost_in_recovery = ev.lost_packets.len() as u64;
            // The new period replaces the last: its saved state is stale.
            self.window.forget_undo();
            self.ecn_verdict = ecn_verdict;
            let verdict = if spare {
                LossVerdict::Random
            } else {
                LossVerdict::Congestive
            };
            self.basis = ecn_verdict.map(|verdict| VerdictBasis {
                verdict,
                values: self.ecn.basis_values(ev).to_vec(),
            });
            self.last_verdict = Some(verdict);
            return verdict;
        }
        self.spared = None;
        let beta = if self.judging_mark
            && self.config.ecn_loss_verdict
            && self.window.cwnd >= self.window.ssthresh as f64
            && self.shallow_queue(ev)
        {
            let pipe = if self.config.ecn_mark_cut_to_pipe {
                let min = ev.rtt.min.as_secs_f64();
                (min / (min + self.standing_queue(ev).as_secs_f64())).min(PIPE_CUT_MAX)
            } else {
                0.0
            };
            self.config.ecn_multiplicative_decrease.max(pipe)
        } else {
            self.config.multiplicative_decrease
        };
        let cwnd = self.window.cwnd;
        let floor = self.window.minimum();
        self.window.save_for_undo(CubicUndo {
            w_max: self.w_max,
            k_seconds: self.k_seconds,
            w_est: self.w_est,
            cwnd_prior: self.cwnd_prior,
            epoch: self.epoch,
            last_verdict: self.last_verdict,
        });

        self.cwnd_prior = cwnd;
        // RFC 9438 §4.7 fast convergence.
        self.w_max = if self.config.fast_convergence && cwnd < self.w_max {
            cwnd * (1.0 + beta) / 2.0
        } else {
            cwnd
        };
        // RFC 9438 §4.6: ssthresh = β·cwnd, never below RFC 9002's minimum.
        self.window.ssthresh = ((cwnd * beta) as u64).max(floor);
        if ev.persistent {
            // RFC 9438 §4.8: cwnd collapses as Reno's would (RFC 9002
            // persistent congestion: kMinimumWindow); the next epoch starts
            // with W_max = cwnd_epoch and K = 0.
            self.window.cwnd = floor as f64;
            self.w_max = 0.0;
            self.k_seconds = 0.0;
        } else {
            self.window.cwnd = self.window.ssthresh as f64;
        }
        self.w_est = self.window.cwnd;
        self.epoch = None;
        self.app_limited_since = None;
        self.hystart.on_congestion();
        self.window.in_recovery = !ev.persistent;
        self.lost_in_recovery = ev.lost_packets.len() as u64;
        // Noise is RFC 6298's: a sample within 4·rttvar is not a queue.
        let threshold = rtt_rise_threshold(ev.rtt.min);
        let recent_floor = self.standing_queue(ev) < threshold + 4 * ev.rtt.variance;
        let round_floor = self
            .round_floor_queue(ev.rtt.smoothed)
            .is_some_and(|queue| queue < threshold);
        self.loss_without_queue =
            recent_floor || (self.config.rollback_jitter_robust && round_floor);
        self.ecn_verdict = ecn_verdict;
        let verdict = self.ecn_verdict.unwrap_or(LossVerdict::Congestive);
        self.basis = if self.judging_mark {
            Some(VerdictBasis {
                verdict,
                values: vec![MARKED_BASIS],
            })
        } else {
            self.ecn_verdict.map(|verdict| VerdictBasis {
                verdict,
                values: self.ecn.basis_values(ev).to_vec(),
            })
        };
        self.last_verdict = Some(verdict);
        verdict
    }

    fn on_packets_lost(&mut self, ev: &crate::PacketsLost) {
        if self.window.in_recovery || self.spared.is_some() {
            self.lost_in_recovery += ev.packets.len() as u64;
        }
        if self.spared.is_some() && self.lost_in_recovery >= self.small_loss_threshold() {
            self.cut_spared(false);
        }
    }

    fn on_spurious_congestion(&mut self, _ev: &SpuriousCongestionEvent) {
        self.undo_congestion();
    }

    fn on_ecn(&mut self, ev: &EcnEvent) {
        // `ecn_slow_start_exit`: a mark on a packet sent before the exit is
        // the queue that exit answered. It shows the path marks; no cut.
        if self
            .slow_start_exit_at
            .is_some_and(|at| ev.largest_acked_sent_time <= at)
        {
            self.ecn.on_mark(ev.now);
            self.window.forget_undo();
            self.mark_cut_at = Some(self.mark_cut_at.map_or(ev.now, |at| at.max(ev.now)));
            return;
        }
        // A mark on a packet sent before the cut marks last made is the
        // congestion that cut answered (CoDel marks again while the cut
        // takes a round to drain its queue): it says nothing of the losses
        // of later rounds.
        let answered = !ev.new_congestion_event
            && self
                .mark_cut_at
                .is_some_and(|at| ev.largest_acked_sent_time <= at);
        if answered {
            return;
        }
        self.ecn.on_mark(ev.now);
        if ev.new_congestion_event {
            self.judging_mark = true;
            self.on_congestion(&ev.as_congestion());
            self.judging_mark = false;
        } else {
            // A period spared as random loss has marks in it: cut now.
            self.cut_spared(true);
        }
        // Marks confirm the period: neither the rollback nor a spurious
        // event may undo its cut.
        self.window.forget_undo();
        self.mark_cut_at = Some(self.mark_cut_at.map_or(ev.now, |at| at.max(ev.now)));
    }

    fn on_ecn_validated(&mut self, validated: bool) {
        self.ecn.set_validated(validated);
    }

    fn verdict_basis(&self) -> Option<VerdictBasis> {
        self.basis.clone()
    }

    fn set_mss(&mut self, mss: u64) {
        self.window.set_mss(mss);
    }

    /// Careful Resume's window, continued as from a plateau: W_max =
    /// cwnd, a new epoch at the next avoidance ACK.
    fn set_window(&mut self, cwnd: u64, ssthresh: Option<u64>) {
        self.window.set_window(cwnd, ssthresh);
        let cwnd = self.window.cwnd;
        self.w_max = cwnd;
        self.cwnd_prior = cwnd;
        self.w_est = cwnd;
        self.k_seconds = 0.0;
        self.epoch = None;
    }

    fn window(&self) -> u64 {
        self.window.bytes()
    }

    fn ssthresh(&self) -> u64 {
        self.window.ssthresh
    }

    fn metrics(&self) -> Metrics {
        let mut metrics = Metrics {
            algorithm: "cubic".into(),
            cwnd: self.window(),
            ssthresh: self.window.ssthresh,
            phase: self.window.phase(),
            last_verdict: self.last_verdict,
            fields: Default::default(),
        };
        metrics.fields.insert("w_max_bytes".into(), self.w_max);
        metrics.fields.insert("k_s".into(), self.k_seconds);
        metrics.fields.insert("w_est_bytes".into(), self.w_est);
        if self.config.small_loss_rollback {
            metrics
                .fields
                .insert("rollbacks".into(), self.rollbacks as f64);
        }
        metrics
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Phase;
    use crate::RttSample;

    const MSS: u64 = 1000;

    fn rtt(smoothed: Duration) -> RttSample {
        RttSample {
            latest: smoothed,
            min: smoothed,
            smoothed,
            variance: smoothed / 2,
        }
    }

    fn ack_at(now: Instant, bytes: u64, smoothed: Duration) -> AckEvent {
        AckEvent {
            now,
            acked_bytes: bytes,
            acked_packets: bytes / MSS,
            largest_acked: 0,
            largest_acked_sent_time: now,
            rtt: rtt(smoothed),
            rtt_sampled: true,
            bytes_in_flight: 0,
            app_limited: false,
            in_recovery: false,
            rate: None,
        }
    }

    fn loss(now: Instant, persistent: bool) -> LossEvent {
        LossEvent {
            now,
            lost_packets: vec![1],
            lost_bytes: MSS,
            largest_lost_sent_time: now,
            bytes_in_flight: 0,
            rtt: rtt(Duration::from_millis(100)),
            persistent,
        }
    }

    /// RFC 9438 exactly: the curve and its cuts, without the rollback.
    fn rfc9438() -> CubicConfig {
        CubicConfig {
            small_loss_rollback: false,
            ..CubicConfig::default()
        }
    }

    fn seconds(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    /// A controller whose window is 36 packets when the first loss hits.
    fn cubic_at_36_packets(reno_friendly: bool) -> Cubic {
        let config = CubicConfig {
            initial_window_packets: 36,
            reno_friendly,
            ..rfc9438()
        };
        Cubic::new(config, MSS)
    }

    fn assert_close(actual: f64, expected: f64) {
        assert!(
            (actual - expected).abs() < 1e-6,
            "expected {expected}, got {actual}"
        );
    }

    #[test]
    fn beta_cut_sets_window_and_ssthresh_to_seven_tenths() {
        let now = Instant::now();
        let mut cubic = cubic_at_36_packets(true);
        // β·cwnd = 0.7 · 36_000 = 25_200 for both.
        assert_eq!(
            cubic.on_congestion(&loss(now, false)),
            LossVerdict::Congestive
        );
        assert_eq!((cubic.window(), cubic.ssthresh()), (25_200, 25_200));
        let metrics = cubic.metrics();
        assert_eq!(metrics.phase, Phase::Recovery);
        assert_eq!(metrics.last_verdict, Some(LossVerdict::Congestive));
        assert_eq!(metrics.fields["w_max_bytes"], 36_000.0);
    }

    #[test]
    fn k_is_the_cube_root_of_the_window_deficit_over_c() {
        let t0 = Instant::now();
        let mut cubic = cubic_at_36_packets(true);
        cubic.on_congestion(&loss(t0, false));
        // The first ACK after recovery starts the epoch with cwnd_epoch =
        // 25.2 packets: K = ∛((W_max − cwnd_epoch)/C) = ∛((36 − 25.2)/0.4)
        // = ∛27 = 3 s.
        cubic.on_ack(&ack_at(t0, MSS, Duration::from_millis(100)));
        assert_close(cubic.metrics().fields["k_s"], 3.0);
    }

    #[test]
    fn curve_passes_through_w_max_at_k() {
        let t0 = Instant::now();
        let mut cubic = cubic_at_36_packets(false);
        cubic.on_congestion(&loss(t0, false));
        cubic.on_ack(&ack_at(t0, MSS, Duration::from_secs(1)));
        // W_cubic(K) = C·(K − K)³ + W_max = W_max.
        assert_close(cubic.w_cubic(3.0), 36_000.0);
        // W_cubic(0) = 400·(−3)³ + 36_000 = 25_200 = cwnd_epoch.
        assert_close(cubic.w_cubic(0.0), 25_200.0);
    }

    #[test]
    fn window_grows_concave_to_w_max_at_k_then_convex() {
        // RTT = 1 s and one ACK per RTT acknowledging the whole window, so
        // each ACK moves cwnd exactly onto the target W_cubic(t + 1 s):
        // cwnd += (target − cwnd)·acked/cwnd with acked = cwnd.
        // W_cubic(t) = 400·(t − 3)³ + 36_000 bytes (C·mss = 0.4·1000).
        let t0 = Instant::now();
        let rtt = seconds(1);
        let mut cubic = cubic_at_36_packets(false);
        cubic.on_congestion(&loss(t0, false)); // cwnd = 25_200, K = 3 s
        let mut windows = vec![cubic.window()];
        for second in 0..6 {
            let acked = cubic.window();
            cubic.on_ack(&ack_at(t0 + seconds(second), acked, rtt));
            windows.push(cubic.window());
        }
        // t = 0: W(1) = 36_000 − 400·8  = 32_800
        // t = 1: W(2) = 36_000 − 400·1  = 35_600
        // t = 2: W(3) = 36_000          = W_max: reached one RTT ahead of K
        // t = 3: W(4) = 36_000 + 400·1  = 36_400
        // t = 4: W(5) = 36_000 + 400·8  = 39_200
        // t = 5: W(6) = 36_000 + 400·27 = 46_800 (≤ 1.5·39_200, no clamp)
        assert_eq!(
            windows,
            vec![25_200, 32_800, 35_600, 36_000, 36_400, 39_200, 46_800]
        );
        // Growth per RTT shrinks towards W_max (concave), then grows (convex).
        let growth: Vec<u64> = windows.windows(2).map(|w| w[1] - w[0]).collect();
        assert_eq!(growth, vec![7_600, 2_800, 400, 400, 2_800, 7_600]);
    }

    #[test]
    fn target_is_clamped_to_one_and_a_half_windows() {
        // Far into the convex region the curve outruns 1.5·cwnd.
        let t0 = Instant::now();
        let rtt = seconds(1);
        let mut cubic = cubic_at_36_packets(false);
        cubic.on_congestion(&loss(t0, false));
        // The epoch starts: cwnd 25_200 → W(1) = 32_800.
        cubic.on_ack(&ack_at(t0, 25_200, rtt));
        // At t = 10 s: W(11) = 36_000 + 400·512 = 240_800 > 1.5·32_800 =
        // 49_200, so the full-window ACK lands on 49_200.
        cubic.on_ack(&ack_at(t0 + seconds(10), 32_800, rtt));
        assert_eq!(cubic.window(), 49_200);
    }

    #[test]
    fn reno_friendly_region_takes_over_on_short_rtt_small_windows() {
        // 10-packet window at loss: W_max = 10_000, cwnd = 7_000,
        // K = ∛(3_000/400) ≈ 1.96 s; RTT 10 ms; one full-window ACK.
        let t0 = Instant::now();
        let rtt = Duration::from_millis(10);
        let mut friendly = Cubic::new(rfc9438(), MSS);
        friendly.on_congestion(&loss(t0, false));
        friendly.on_ack(&ack_at(t0, 7_000, rtt));
        // W_est = 7_000 + α·mss·acked/cwnd with α = 3·0.3/1.7 = 0.9/1.7:
        // 7_000 + 0.529411…·1000 = 7_529.41; W_cubic(0) = 7_000 < W_est,
        // so cwnd = W_est.
        assert_close(friendly.window.cwnd, 7_000.0 + 900.0 / 1.7);
        assert_eq!(friendly.window(), 7_529);

        // Without the Reno-friendly region the curve alone barely moves:
        // W(0.01) = 10_000 + 400·(0.01 − 1.957)³ ≈ 7_045.9.
        let config = CubicConfig {
            reno_friendly: false,
            ..rfc9438()
        };
        let mut curve_only = Cubic::new(config, MSS);
        curve_only.on_congestion(&loss(t0, false));
        curve_only.on_ack(&ack_at(t0, 7_000, rtt));
        assert_eq!(curve_only.window(), 7_046);

        // Over 50 more round trips of 10 ms Reno's slope keeps winning.
        for round in 1..=50 {
            let now = t0 + rtt * round;
            let acked = friendly.window();
            friendly.on_ack(&ack_at(now, acked, rtt));
            let acked = curve_only.window();
            curve_only.on_ack(&ack_at(now, acked, rtt));
        }
        assert!(friendly.window() > curve_only.window());
        let metrics = friendly.metrics();
        assert!(metrics.fields["w_est_bytes"] > metrics.fields["w_max_bytes"]);
    }

    #[test]
    fn reno_friendly_increase_becomes_one_segment_per_window_past_the_prior_window() {
        let t0 = Instant::now();
        let rtt = Duration::from_millis(10);
        let mut cubic = Cubic::new(rfc9438(), MSS);
        cubic.on_congestion(&loss(t0, false)); // cwnd_prior = 10_000
        let mut now = t0;
        while cubic.w_est < 10_000.0 {
            let acked = cubic.window();
            cubic.on_ack(&ack_at(now, acked, rtt));
            now += rtt;
        }
        // Now α = 1: W_est grows by mss·acked/cwnd, one segment per window.
        let (w_est, cwnd) = (cubic.w_est, cubic.window.cwnd);
        cubic.on_ack(&ack_at(now, 500, rtt));
        assert_close(cubic.w_est, w_est + 1000.0 * 500.0 / cwnd);
    }

    #[test]
    fn fast_convergence_lowers_w_max_when_loss_comes_below_the_old_peak() {
        let t0 = Instant::now();
        let mut fast = cubic_at_36_packets(true);
        fast.on_congestion(&loss(t0, false)); // W_max 36_000, cwnd 25_200
        fast.on_congestion(&loss(t0, false));
        // cwnd 25_200 < W_max 36_000: W_max = 25_200·(1 + 0.7)/2 = 21_420;
        // ssthresh = cwnd = 0.7·25_200 = 17_640.
        assert_close(fast.metrics().fields["w_max_bytes"], 21_420.0);
        assert_eq!((fast.window(), fast.ssthresh()), (17_640, 17_640));

        let config = CubicConfig {
            initial_window_packets: 36,
            fast_convergence: false,
            ..rfc9438()
        };
        let mut plain = Cubic::new(config, MSS);
        plain.on_congestion(&loss(t0, false));
        plain.on_congestion(&loss(t0, false));
        // Without it W_max is simply the window at the loss.
        assert_close(plain.metrics().fields["w_max_bytes"], 25_200.0);
    }

    #[test]
    fn timeout_collapses_to_minimum_window_and_restarts_the_curve_at_k_zero() {
        let t0 = Instant::now();
        let rtt = seconds(1);
        let mut cubic = cubic_at_36_packets(false);
        cubic.on_congestion(&loss(t0, true));
        // ssthresh = 0.7·36_000 = 25_200; cwnd = kMinimumWindow = 2 packets.
        assert_eq!((cubic.window(), cubic.ssthresh()), (2_000, 25_200));
        let metrics = cubic.metrics();
        assert_eq!(metrics.phase, Phase::SlowStart);
        assert_eq!(metrics.fields["w_max_bytes"], 0.0);
        assert_eq!(metrics.fields["k_s"], 0.0);

        // Slow start climbs exactly to ssthresh (2_000 + 23_200).
        cubic.on_ack(&ack_at(t0, 23_200, rtt));
        assert_eq!(cubic.window(), 25_200);
        // The first avoidance ACK starts an epoch with W_max = cwnd_epoch =
        // 25_200 and K = 0: target W(0 + 1) = 25_200 + 400·1³ = 25_600.
        cubic.on_ack(&ack_at(t0 + rtt, 25_200, rtt));
        assert_eq!(cubic.window(), 25_600);
        let metrics = cubic.metrics();
        assert_eq!(metrics.fields["w_max_bytes"], 25_200.0);
        assert_eq!(metrics.fields["k_s"], 0.0);
    }

    #[test]
    fn app_limited_stretch_neither_grows_the_window_nor_advances_the_curve() {
        let t0 = Instant::now();
        let rtt = seconds(1);
        let mut cubic = cubic_at_36_packets(false);
        cubic.on_congestion(&loss(t0, false));
        cubic.on_ack(&ack_at(t0, 25_200, rtt)); // epoch at t0, cwnd 32_800

        // Application-limited from t0 + 1 s to t0 + 11 s: no growth.
        for second in [1, 5, 10] {
            let mut idle = ack_at(t0 + seconds(second), 32_800, rtt);
            idle.app_limited = true;
            cubic.on_ack(&idle);
            assert_eq!(cubic.window(), 32_800);
        }
        // At t0 + 11 s the epoch has run only 1 s (11 − 10 paused), so the
        // target is W(1 + 1) = 35_600, as if the pause never happened.
        // Unshifted it would be W(12) clamped to 1.5·32_800 = 49_200.
        cubic.on_ack(&ack_at(t0 + seconds(11), 32_800, rtt));
        assert_eq!(cubic.window(), 35_600);
    }

    #[test]
    fn spurious_congestion_restores_window_curve_and_epoch() {
        // RFC 9438 §4.9: a cut at 36 packets, then undo.
        let t0 = Instant::now();
        let mut cubic = cubic_at_36_packets(true);
        cubic.on_congestion(&loss(t0, false)); // 36 → 25.2 packets, W_max 36
        cubic.on_ack(&ack_at(t0, 0, Duration::from_millis(100))); // starts an epoch
        let after_cut = cubic.metrics();
        cubic.on_congestion(&loss(t0 + seconds(1), false)); // 25.2 → 17.64
        assert_eq!(cubic.window(), 17_640);
        cubic.on_spurious_congestion(&SpuriousCongestionEvent {
            now: t0 + seconds(2),
            congestion_at: t0 + seconds(1),
            lost_packets: vec![1],
            rtt: rtt(Duration::from_millis(100)),
        });
        // Back to the state after the first cut: window 25_200, ssthresh
        // 25_200, W_max 36_000 and K = ∛(10.8/0.4) = 3 s, epoch from t0.
        assert_eq!(cubic.metrics(), after_cut);
        assert_eq!(cubic.metrics().phase, Phase::CongestionAvoidance);
        assert_close(cubic.k_seconds, 3.0);
    }

    #[test]
    fn no_growth_while_in_recovery() {
        let t0 = Instant::now();
        let mut cubic = cubic_at_36_packets(true);
        cubic.on_congestion(&loss(t0, false));
        let mut old = ack_at(t0 + seconds(1), 10_000, seconds(1));
        old.in_recovery = true;
        cubic.on_ack(&old);
        assert_eq!(cubic.window(), 25_200);
        assert_eq!(cubic.metrics().phase, Phase::Recovery);
    }

    #[test]
    fn slow_start_doubles_per_window_and_hands_the_rest_to_avoidance() {
        let t0 = Instant::now();
        let rtt = seconds(1);
        let mut cubic = Cubic::new(rfc9438(), MSS);
        // IW = 10 packets; acking a full window doubles it (byte counting).
        cubic.on_ack(&ack_at(t0, 10_000, rtt));
        assert_eq!(cubic.window(), 20_000);
        assert_eq!(cubic.metrics().phase, Phase::SlowStart);

        // Timeout: ssthresh = 0.7·20_000 = 14_000, cwnd = 2_000.
        cubic.on_congestion(&loss(t0, true));
        // 13_000 acked: 12_000 of slow start reach ssthresh; the remaining
        // 1_000 start an epoch (W_max = 14_000, K = 0) in which
        // W_est = 14_000 + α·1000·1_000/14_000 > W_cubic(0) = 14_000, so the
        // Reno-friendly estimate wins: cwnd = 14_000 + (0.9/1.7)·1000/14.
        cubic.on_ack(&ack_at(t0 + rtt, 13_000, rtt));
        assert_close(cubic.window.cwnd, 14_000.0 + 900.0 / 1.7 / 14.0);
        assert_eq!(cubic.metrics().phase, Phase::CongestionAvoidance);
    }

    #[test]
    fn out_of_range_configuration_is_reported_and_never_used() {
        let config = CubicConfig {
            multiplicative_decrease: 1.5,
            ..rfc9438()
        };
        let err = config.validate().unwrap_err();
        assert_eq!(err.field, "multiplicative_decrease");
        assert!(err.to_string().contains("1.5"), "{err}");
        // The controller falls back to β = 0.7 instead of growing on loss.
        let mut cubic = Cubic::new(config, MSS);
        cubic.on_congestion(&loss(Instant::now(), false));
        assert_eq!(cubic.window(), 7_000);

        let nan_c = CubicConfig {
            growth_constant: f64::NAN,
            ..rfc9438()
        };
        assert_eq!(nan_c.validate().unwrap_err().field, "growth_constant");
        assert_eq!(CubicConfig::default().validate(), Ok(()));
    }

    #[test]
    fn cubic_is_selected_by_cli_name_and_by_scenario_file() {
        use crate::CcConfig;
        let by_name: CcConfig = "cubic".parse().unwrap();
        assert_eq!(by_name, CcConfig::Cubic(CubicConfig::default()));
        assert_eq!(by_name.name(), "cubic");
        assert!(CcConfig::NAMES.contains(&"cubic"));

        // RFC symbols are accepted as aliases of the descriptive names.
        let scenario = "name = \"cubic\"\nbeta = 0.8\nfast_convergence = false\n";
        let parsed: CcConfig = toml::from_str(scenario).unwrap();
        let expected = CubicConfig {
            multiplicative_decrease: 0.8,
            fast_convergence: false,
            ..CubicConfig::default()
        };
        assert_eq!(parsed, CcConfig::Cubic(expected));
        assert_eq!(parsed.validate(), Ok(()));
        assert!(toml::from_str::<CcConfig>("name = \"cubic\"\nbogus = 1\n").is_err());

        let built = by_name.build(MSS);
        assert_eq!(built.window(), 10_000);
        assert_eq!(built.metrics().algorithm, "cubic");
    }

    /// Declares `count` more packets lost during the recovery period.
    fn lose_more(cubic: &mut Cubic, now: Instant, count: u64) {
        cubic.on_packets_lost(&crate::test_support::packets_lost(now, 100, count));
    }

    /// A CUBIC of `config` out of slow start at 100 packets, cut by one
    /// loss, `extra` more packets lost in its recovery period, then the
    /// first ACK after the period. Returns the window before the cut.
    fn cut_and_recover(cubic: &mut Cubic, extra: u64) -> u64 {
        cut_and_recover_queued(cubic, extra, Duration::ZERO)
    }

    /// `cut_and_recover` with `queued` of queueing delay in the smoothed
    /// RTT when the loss is found (the minimum is 100 ms).
    fn cut_and_recover_queued(cubic: &mut Cubic, extra: u64, queued: Duration) -> u64 {
        let t0 = Instant::now();
        let srtt = Duration::from_millis(100);
        cubic.window.cwnd = (100 * MSS) as f64;
        cubic.window.ssthresh = 100 * MSS;
        let before = cubic.window();
        let mut event = loss(t0, false);
        event.rtt.smoothed += queued;
        event.rtt.latest += queued;
        event.rtt.variance = Duration::ZERO;
        cubic.on_congestion(&event);
        lose_more(cubic, t0, extra);
        let mut in_recovery = ack_at(t0 + srtt / 2, MSS, srtt);
        in_recovery.in_recovery = true;
        cubic.on_ack(&in_recovery);
        cubic.on_ack(&ack_at(t0 + srtt, MSS, srtt));
        before
    }

    #[test]
    fn small_loss_rollback_undoes_a_period_that_lost_few_packets() {
        let rolling = CubicConfig::default();
        assert!(rolling.small_loss_rollback && rolling.rollback_only_without_queue);
        // 1 + 12 = 13 lost, under 20% of the 70-packet window after the cut.
        let mut cubic = Cubic::new(rolling.clone(), MSS);
        let before = cut_and_recover(&mut cubic, 12);
        assert_eq!(cubic.window(), before);
        assert_eq!(cubic.ssthresh(), 100 * MSS);
        assert_eq!(cubic.metrics().fields["rollbacks"], 1.0);
        // 1 + 13 = 14 lost: 20% of 70, the cut stays.
        let mut cubic = Cubic::new(rolling, MSS);
        cut_and_recover(&mut cubic, 13);
        assert_eq!(cubic.ssthresh(), 70 * MSS);
        assert_eq!(cubic.metrics().fields["rollbacks"], 0.0);
    }

    #[test]
    fn a_small_loss_behind_a_queue_is_congestion_and_keeps_its_cut() {
        // RttThresh at 100 ms is 12.5 ms: 12 ms of queue still rolls back,
        // 13 ms does not (a drop-tail queue overflowing).
        for (queued_ms, rolled_back) in [(12, true), (13, false)] {
            let mut cubic = Cubic::new(CubicConfig::default(), MSS);
            cut_and_recover_queued(&mut cubic, 0, Duration::from_millis(queued_ms));
            let expected = if rolled_back { 100 } else { 70 };
            assert_eq!(cubic.ssthresh(), expected * MSS, "{queued_ms} ms queued");
        }
        // quiche's rule does not look at the queue.
        let quiche = CubicConfig {
            rollback_only_without_queue: false,
            ..CubicConfig::default()
        };
        let mut cubic = Cubic::new(quiche, MSS);
        cut_and_recover_queued(&mut cubic, 0, Duration::from_millis(50));
        assert_eq!(cubic.ssthresh(), 100 * MSS);
    }

    #[test]
    fn the_standing_queue_is_the_least_of_the_latest_samples() {
        // QUEUE_SAMPLES samples at 100 ms plus `extra[i % 8]`, then a loss
        // whose smoothed RTT (130 ms, no variance) would call every one of
        // them a queue.
        for (extra_ms, rolled_back) in [
            // Jitter: most samples high, one at the base.
            ([30, 25, 0, 40, 35, 30, 20, 30], true),
            // A standing queue: every sample at least 20 ms up.
            ([30, 25, 20, 40, 35, 30, 20, 30], false),
        ] {
            let t0 = Instant::now();
            // The latest samples' test alone: every ACK here ends a round,
            // and samples 20–40 ms up that jump by 5–20 ms are jitter to the
            // round-floor test (`rollback_jitter_robust`).
            let latest_only = CubicConfig {
                rollback_jitter_robust: false,
                ..CubicConfig::default()
            };
            let mut cubic = Cubic::new(latest_only, MSS);
            cubic.window.cwnd = (100 * MSS) as f64;
            cubic.window.ssthresh = 100 * MSS;
            for extra in extra_ms.iter().cycle().take(QUEUE_SAMPLES) {
                let mut ack = ack_at(t0, 0, Duration::from_millis(100));
                ack.rtt.latest += Duration::from_millis(*extra);
                cubic.on_ack(&ack);
            }
            let mut event = loss(t0, false);
            event.rtt.smoothed += Duration::from_millis(30);
            event.rtt.variance = Duration::ZERO;
            cubic.on_congestion(&event);
            let mut after = ack_at(
                t0 + Duration::from_millis(200),
                MSS,
                Duration::from_millis(100),
            );
            after.rtt_sampled = false;
            cubic.on_ack(&after);
            let expected = if rolled_back { 100 } else { 70 };
            assert_eq!(cubic.ssthresh(), expected * MSS, "{extra_ms:?}");
        }
    }

    #[test]
    fn in_order_jitter_that_raises_the_latest_samples_still_rolls_back_by_the_round_floor() {
        let ms = Duration::from_millis;
        for (jitter_robust, rolled_back) in [(true, true), (false, false)] {
            let config = CubicConfig {
                rollback_jitter_robust: jitter_robust,
                ..CubicConfig::default()
            };
            let t0 = Instant::now();
            let mut cubic = Cubic::new(config, MSS);
            cubic.window.cwnd = (100 * MSS) as f64;
            cubic.window.ssthresh = 100 * MSS;
            // Two rounds whose floor is the base, 100 ms …
            cubic.on_ack(&ack_at(t0, 0, ms(100)));
            let mut floor = ack_at(t0 + ms(100), 0, ms(100));
            floor.largest_acked_sent_time = t0 + ms(1);
            cubic.on_ack(&floor);
            // … then a run of 16 late samples in the next round (a late
            // packet holding back those behind it): 120 and 125 ms.
            for i in 0..QUEUE_SAMPLES {
                let mut late = ack_at(t0 + ms(110), 0, ms(100));
                late.largest_acked_sent_time = t0 + ms(5);
                late.rtt.latest = ms(if i % 2 == 0 { 120 } else { 125 });
                cubic.on_ack(&late);
            }
            // The latest 16 sit 20 ms over min_rtt, past RttThresh (12.5 ms)
            // with no variance: a queue by that test alone. The last round's
            // floor is 100 ms = min_rtt: none by the round floor.
            let mut event = loss(t0 + ms(120), false);
            event.rtt.variance = Duration::ZERO;
            cubic.on_congestion(&event);
            let mut after = ack_at(t0 + ms(300), MSS, ms(100));
            after.rtt_sampled = false;
            cubic.on_ack(&after);
            let expected = if rolled_back { 100 } else { 70 };
            assert_eq!(cubic.ssthresh(), expected * MSS, "{jitter_robust}");
        }
    }

    #[test]
    fn a_queue_built_within_the_last_round_is_congestion_and_keeps_its_cut() {
        // Slow start overflowing a drop-tail queue (leaky-pipes'
        // `sharing-cubic-bbr`, seed 1): min_rtt 100 ms, one ACK every 5 ms.
        for (over_min_rtt, rolled_back) in [(true, false), (false, true)] {
            let config = CubicConfig {
                rollback_floor_over_min_rtt: over_min_rtt,
                ..CubicConfig::default()
            };
            let rollbacks = slow_start_overflow_rollbacks(config);
            assert_eq!(rollbacks, u64::from(rolled_back), "{over_min_rtt}");
        }
    }

    /// Rollbacks of a CUBIC of `config` in slow start whose queue fills
    /// within one round and overflows: one packet lost, under the
    /// rollback's threshold, the latest 16 samples 100 ms over min_rtt.
    fn slow_start_overflow_rollbacks(config: CubicConfig) -> u64 {
        let ms = Duration::from_millis;
        let t0 = Instant::now();
        let mut cubic = Cubic::new(config, MSS);
        cubic.window.cwnd = (100 * MSS) as f64;
        let mut sample = |now: Duration, latest: Duration| {
            let mut ack = ack_at(t0 + now, 0, ms(100));
            ack.rtt.latest = latest;
            ack.largest_acked_sent_time = t0 + now - latest;
            cubic.on_ack(&ack);
        };
        // A round at the base ends at 100 ms; the next one begins there,
        // and its samples rise with the queue, 2.5 ms an ACK, to 200 ms.
        sample(ms(100), ms(100));
        for step in 0..40 {
            sample(ms(100 + 5 * step), ms(100) + ms(5 * step) / 2);
        }
        // The first ACK of a packet sent after 100 ms, at 300 ms, ends that
        // round: its floor is the base. The queue stays full (200–207 ms)
        // through the next round, which has not ended when the loss is
        // found at 400 ms.
        for step in 0..=20 {
            sample(ms(300 + 5 * step), ms(200 + step % 8));
        }
        // RttThresh is 12.5 ms, far under the queue.
        let mut event = loss(t0 + ms(400), false);
        event.rtt.variance = Duration::ZERO;
        cubic.on_congestion(&event);
        let mut after = ack_at(t0 + ms(500), MSS, ms(100));
        after.rtt_sampled = false;
        cubic.on_ack(&after);
        // A rollback restores slow start; the cut leaves ssthresh at 70.
        let rollbacks = cubic.metrics().fields["rollbacks"] as u64;
        let expected = if rollbacks == 1 { u64::MAX } else { 70 * MSS };
        assert_eq!(cubic.ssthresh(), expected);
        rollbacks
    }

    #[test]
    fn without_small_loss_rollback_one_loss_keeps_rfc_9438s_cut() {
        let rfc = CubicConfig {
            small_loss_rollback: false,
            ..CubicConfig::default()
        };
        let mut cubic = Cubic::new(rfc, MSS);
        cut_and_recover(&mut cubic, 0);
        assert_eq!(cubic.ssthresh(), 70 * MSS);
        assert!(!cubic.metrics().fields.contains_key("rollbacks"));
    }
}
