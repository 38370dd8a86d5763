//! TCP Westwood with agile probing, TCPW-A (Yamada, Wang, Sanadidi & Gerla,
//! "TCP Westwood with agile probing: dealing with dynamic, large, leaky
//! pipes", IEEE ICC 2004), beside the paper-faithful [`crate::Westwood`].
//!
//! TCPW sets ssthresh from an estimate of the rate the connection is
//! eligible for (ERE·RTTmin) after a loss, so a random loss costs little. Its
//! weakness on a long fat pipe is growth: slow start either overshoots or
//! ends at the first random loss, and congestion avoidance then adds one
//! packet per round trip — forty seconds to fill a 420-packet pipe. TCPW-A
//! adds two mechanisms:
//!
//! 1. **Agile probing** (at connection start and after a timeout): instead of
//!    slow start towards an arbitrary ssthresh, ssthresh is repeatedly reset
//!    to max(ssthresh, ERE·RTTmin) on every ACK, and whenever it rises above
//!    cwnd the window climbs exponentially again; when ERE stops growing,
//!    cwnd passes ssthresh and growth is linear. Probing ends at the first
//!    loss.
//! 2. **Persistent non-congestion detection (PNCD)** in congestion
//!    avoidance: when the achieved rate keeps up with the expected rate for
//!    a considerable time there is unused bandwidth, and agile probing
//!    starts again.
//!
//! Losses are Westwood's: ssthresh = max(ERE·RTTmin, 2 packets), cwnd =
//! min(cwnd, ssthresh); after a timeout cwnd = 1 packet and agile probing.
//! The estimate lives in [`eligible_rate`]. Where these docs say RTTmin, sift
//! uses the jitter-robust [`base_rtt`] (below).
//!
//! **Sources.** The ICC 2004 paper itself was not available to this
//! implementation; what it follows is the paper's abstract (IEEE Xplore
//! record), the authors' slides for it ("TCP Westwood with Agile Probing:
//! Handling Dynamic Large Leaky Pipes", slideplayer), the UCLA TCPW pages,
//! and the ABSE/CRB estimation papers they build on (Wang, Valla, Sanadidi,
//! Gerla, Globecom 2002). Where those leave a number or a rule open, sift
//! chose, and says so here:
//! - the ERE sampling interval T_k = RTT·(ER − RE)/ER is bounded to
//!   [RTTmin/8, RTT] and a sample is the dispersion of the ACKs inside it
//!   (see [`eligible_rate`]); the filter is Westwood's Tustin filter with
//!   τ = 500 ms, seeded with the first sample;
//! - agile probing starts with ssthresh = the initial window, so every step
//!   beyond it is earned by the estimate, not by a preset threshold;
//! - PNCD's "achieved rate follows the expected rate" is RE ≥ 7/8·ER over a
//!   round trip (a standing queue below RTTmin/8, the same fraction RFC 9406
//!   treats as a real RTT rise), and "a considerable time" is three
//!   consecutive such rounds (`non_congestion_rounds`); a congestive loss
//!   resets the count, a random one does not;
//! - sift paces: during agile probing at 2·cwnd/srtt (Linux's slow-start
//!   pacing ratio), so ACK trains can show more rate than the window
//!   achieves, and otherwise at the recovery module's 1.25·cwnd/srtt;
//! - a loss is judged [`LossVerdict::Random`] when the window is within an
//!   eighth of the eligible window (ERE·RTTmin ≥ 7/8·cwnd, PNCD's fraction:
//!   a standing queue below RTTmin/8), congestive otherwise. TCPW-A does not
//!   classify losses, but this is what its response amounts to, and the
//!   simulator's confusion matrix can then score it. The eighth matters: a
//!   window-limited flow with no queue measures ERE ≈ cwnd/RTT, so
//!   ERE·RTTmin sits a hair under cwnd, and judging by the exact comparison
//!   made every random loss a congestive one, which reset PNCD on any path
//!   that loses a packet per round trip (600 ms at 1% loss: the window
//!   stayed at a sixth of the pipe for the whole transfer). Measured,
//!   medians of seeds 1–3, exact comparison → an eighth: `leaky-pipes` at
//!   1% loss 0.845 → 0.956 (20 ms), 0.759 → 0.799 (100 ms), 0.327 → 0.421
//!   (300 ms), 0.163 → 0.248 (600 ms), at 5% and 100 ms 0.423 → 0.559;
//!   the clean path (0.892) and the share against CUBIC (0.414) unchanged;
//!   `sift-lab reordering` at 1% loss 0.814 → 0.899 without jitter and
//!   0.672 → 0.724 with 5 ms;
//! - probing ends at a congestive loss; a random one leaves it running with
//!   its ssthresh: on a leaky pipe the first random loss would otherwise
//!   end the start-up climb long before the pipe is full (measured:
//!   `leaky-pipes`). Out of probing, a random loss still takes Westwood's
//!   cut to ERE·RTTmin (at most an eighth) but no CUBIC curve;
//! - a congestion event that proves spurious is undone as for `westwood`:
//!   window and ssthresh as before it (the window never shrinks), agile
//!   probing and PNCD's count as they were, and its verdict moves to
//!   `spurious_losses`; the estimate, a measurement, stays.
//!
//! **ECN** (DESIGN §6.1, `ecn.rs`). A CE mark is judged congestive whatever
//! the eligible window says, and takes the congestive branch (ssthresh =
//! ERE·RTTmin, probing and the initial climb end, the CUBIC curve starts);
//! marks inside a recovery period whose loss was judged random overrule
//! that judgement. With `ecn_loss_verdict` on a path whose ECN is
//! validated, a loss is judged by its round instead of by the eligible
//! window: congestive with a CE mark in it, random without. Off by default.
//! With it, the response is milder where ECN vouches for it (each an
//! option, unused without the verdict): a loss judged random leaves the
//! window up to `ecn_random_headroom_packets` above ERE·RTTmin (the
//! marking AQM bounds that queue), and a cut ECN judged congestive goes no
//! lower than cwnd·RTTbase/SRTT (`ecn_mark_cut_to_pipe`); both on by
//! default. `ecn_random_grows_in_recovery` (off) lets the window grow
//! through a random loss's recovery period.
//!
//! **Radio paths: delay jitter.** The paper's ns-2 paths have none; radio
//! links give each packet its own delay, and two things break:
//! - *RTTmin is one lucky packet.* The eligible window and ER stand for "the
//!   path with an empty queue", which on a jittery path is the mean RTT,
//!   not the minimum: with 5 ms of jitter on a 40 ms path ERE·RTTmin stays
//!   12% under a window that fills the path, agile probing never climbs and
//!   every random loss looks congestive. sift uses the lowest mean RTT of a
//!   round instead ([`base_rtt`]), the same number as RTTmin without jitter.
//! - *ACK dispersion shows no capacity.* Agile probing climbs fast because
//!   a packet pair leaves the bottleneck at its rate; jitter behind the
//!   bottleneck scatters those gaps, ERE sees only the achieved rate, and
//!   a window that grows linearly makes an estimate that grows linearly.
//!   So the initial agile probing may climb past ERE·RTTbase
//!   (`climb_until_queue`, on by default), at half of slow start's pace,
//!   for as long as no queue shows: until a round's mean RTT rises above
//!   RTTbase by RFC 9406's threshold (RTTbase/8, clamped to 4–16 ms; see
//!   [`BaseRtt::queue_building`]). Then ERE alone decides again. A loss
//!   judged random leaves the climb running, as it leaves agile probing
//!   running; a congestive one or a timeout ends it (and its undo resumes
//!   it). Agile probing restarted by PNCD or a timeout is TCPW-A's alone.
//!   Why half pace: an RTT rise shows a round after the queue starts, so
//!   the window overshoots the pipe by one round's growth. At slow start's
//!   pace that overflowed a one-BDP queue on `leaky-pipes` (50 Mb/s,
//!   100 ms, no loss: 0.89 → 0.79 of capacity, where ERE alone had found
//!   the pipe by packet pairs, and TCPW-A's cut after the overflow left the
//!   window below it). At CSS's quarter pace the climb
//!   was too slow for a lossy, jittery path (0.62 of capacity at 1% loss
//!   and 5 ms of jitter, against 0.82 without jitter). Half pace keeps the
//!   first at 0.89 with no loss and the second at 0.70.
//!
//! Measured with `sift-lab reordering` (20 Mb/s, 20 ms each way, medians of
//! seeds 1–3), before → after both changes: 5 ms jitter 0.703 → 0.898 of
//! capacity; 1% loss with 5 ms jitter 0.362 → 0.695 (0.801 without
//! jitter). The base RTT alone (`climb_until_queue = false`) gives about
//! 0.76 and 0.66.
//!
//! **Sharing with CUBIC** (`cubic_growth`, on by default). TCPW's claim is
//! friendliness to Reno; today's incumbent is CUBIC, which cuts to 0.7 of
//! its window and regrows along a cubic curve. Beside it, a flow that cuts
//! to ERE·RTTmin — half its window when the queue it shares is full — and
//! then adds a packet per round trip keeps less after every cut (measured:
//! `sift-lab leaky-pipes`, one CUBIC flow on the clean path for 60 s:
//! Westwood-A got 0.18 of the link). So after a cut, congestion avoidance
//! grows along CUBIC's curve (RFC 9438 Eq. 1–2, C = 0.4) from the window
//! the cut left back to the one before it, or along TCPW-A's line when
//! that is higher: CUBIC's Reno-friendly rule turned round. The cut stays
//! TCPW's — the flow still drains its own queue and a loss within the
//! eligible window costs nothing — only the regrowth is faster: back to
//! the old window in K = ∛((W_max − cwnd)/C) seconds rather than one packet
//! per round trip. No W_max reduction (CUBIC's fast convergence): the
//! ERE cut already gives a newcomer room. Random losses and agile probing
//! leave the curve alone, a timeout drops it, and its clock stops while
//! the sender is application-limited (RFC 9438 §5.8). Measured, medians
//! of seeds 1–3: the share against CUBIC 0.18 → 0.38 (Jain's index 0.72 →
//! 0.96); against Reno 0.41 → 0.52 (CUBIC takes 0.76 from Reno there).
//! Alone on the `leaky-pipes` path at 0.1–2% loss it moves by at most
//! 0.013 (at 5%, where seeds spread 0.38–0.63, 0.49 → 0.42); `sift-lab
//! reordering` at 1% loss with 5 ms jitter 0.70 → 0.67, still within 20%
//! of the 0.81 it gets without jitter.

pub mod base_rtt;
pub mod eligible_rate;

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

pub use base_rtt::BaseRtt;
pub use eligible_rate::EligibleRate;

use crate::cubic::{AckRate, CubicCurve, C_CUBIC};
use crate::ecn::{EcnMemory, MARKED_BASIS};
use crate::hystart::{rtt_rise_threshold, MIN_RTT_THRESH, N_RTT_SAMPLE};
use crate::ranges::{self, Range, Ranges, Valid};
use crate::rounds::RoundTracker;
use crate::veno::VerdictCounts;
use crate::westwood::{FILTER_TIME_CONSTANT_MS, VIRTUAL_SAMPLE_DIVISOR};
use crate::{
    slow_start, AckEvent, AdditiveIncrease, CongestionControl, EcnEvent, InvalidCcConfig,
    LossEvent, LossVerdict, Metrics, Phase, SpuriousCongestionEvent, VerdictBasis, WindowCore,
};

/// RFC 9002 §7.2 initial window (TCPW-A's ns-2 runs started from 1–2; sift's
/// controllers all start at 10 unless a scenario says otherwise).
pub const INITIAL_WINDOW_PACKETS: u64 = 10;
/// TCPW after a timeout: `cwin = 1` (Casetti et al. 2002, §3.2), kept by TCPW-A.
pub const TIMEOUT_WINDOW_PACKETS: u64 = 1;
/// PNCD: consecutive non-congested rounds before agile probing resumes
/// (sift's reading of "a considerably long time", see the module docs).
pub const NON_CONGESTION_ROUNDS: u64 = 3;
/// PNCD boundary: a round is non-congested if RE ≥ ER·7/8.
pub const NON_CONGESTION_FRACTION: (u64, u64) = (7, 8);
/// Pacing gain during agile probing: Linux's `sysctl_tcp_pacing_ss_ratio`
/// (200%).
pub const AGILE_PACING_GAIN: f64 = 2.0;
/// With the ECN verdict, the packets of queue a loss judged random leaves
/// above ERE·RTTmin (`ecn_random_headroom_packets`): about 5 ms at 50 Mb/s,
/// CoDel's target, so the marking AQM bounds what it adds.
pub const ECN_RANDOM_HEADROOM_PACKETS: u64 = 20;
/// The initial climb past the eligible window grows by acked bytes over
/// this: half of slow start's pace (sift's choice, see the module docs).
pub const CLIMB_GROWTH_DIVISOR: u64 = 2;

/// Westwood-A's parameters.
///
/// Metrics fields reported by [`WestwoodA`]: `ere_bps` (ERE, bits per
/// second), `achieved_bps` (RE), `expected_bps` (ER = cwnd/RTTbase),
/// `sampling_interval_ms` (T_k), `rtt_min_ms`, `base_rtt_ms` (RTTbase),
/// `agile_probing` (1 while probing), `climbing` (1 while the initial climb
/// past the eligible window lasts), `non_congested_rounds` (PNCD's count),
/// and `random_losses`,
/// `congestive_losses`, `spurious_losses` (congestion events by verdict).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WestwoodAConfig {
    /// τ of the ERE filter, in milliseconds. Must be positive.
    pub filter_time_constant_ms: u64,
    /// m: a virtual zero sample every τ/m without ACKs. At least 2.
    pub virtual_sample_divisor: u32,
    /// Initial window in packets.
    pub initial_window_packets: u64,
    /// Window after a timeout, in packets.
    pub timeout_window_packets: u64,
    /// PNCD: consecutive non-congested rounds that restart agile probing.
    /// At least 1.
    pub non_congestion_rounds: u64,
    /// Let the initial agile probing climb past ERE·RTTbase, at half of
    /// slow start's pace, until a queue shows (see the module docs).
    pub climb_until_queue: bool,
    /// After a window cut, grow along CUBIC's curve back towards the window
    /// before it when that is faster than one packet per round trip (see
    /// the module docs); false gives the paper's linear growth.
    pub cubic_growth: bool,
    /// On a path whose ECN is validated, judge a loss by its round instead
    /// of by the eligible window: congestive with a CE mark in it, random
    /// without (`ecn.rs`; `--cc westwood-a-ecn`).
    pub ecn_loss_verdict: bool,
    /// With `ecn_loss_verdict`, a loss judged random by ECN (no CE mark in
    /// its round) leaves the window at most this many packets above
    /// ERE·RTTmin instead of at it: a few packets of queue keep the pipe
    /// full through the next random loss, and the marking AQM says when
    /// the queue is too long. Unused without the verdict (every paper rule
    /// as it was). Default 20 (~5 ms at 50 Mb/s). Measured with
    /// `ecn_mark_cut_to_pipe` (50 Mb/s, 50 ms each way, CoDel `ecn`, 1%
    /// loss, 50 MB, medians of seeds 1–3; docs/notes/2026-12-07-ecn.md):
    /// see `ecn_mark_cut_to_pipe`.
    pub ecn_random_headroom_packets: u64,
    /// With `ecn_loss_verdict`, a loss judged random by ECN starts no
    /// recovery period that freezes growth (RFC 9002 §7.3.2): the window
    /// goes on growing on ACKs of packets sent before it. Unused without
    /// the verdict. Off by default: with the other two options it lifts
    /// the 1% point from 0.855 to 0.878 of capacity·(1 − p), but beside a
    /// CUBIC flow at 1% loss it takes 0.80 of the link (0.61 without it,
    /// 0.57 before any of the three), outside the 0.3–0.7 fairness bound.
    pub ecn_random_grows_in_recovery: bool,
    /// With `ecn_loss_verdict`, a congestion event judged by ECN (started
    /// by CE marks or a loss with a mark in its round) cuts to at least
    /// the window's share outside the queue, cwnd·RTTbase/SRTT, rather than
    /// to ERE·RTTmin alone: a marking AQM marks only a full pipe, and ERE,
    /// window-limited and filtered, sat 7–10% under the bottleneck's rate
    /// for seconds after each cut. Unused without the verdict. With the
    /// 20-packet headroom (on by default), `westwood-a-ecn` on the 1% path
    /// above: 0.812 → 0.855 of capacity·(1 − p), q95 of the queue 1.5–3.3
    /// → 3.3–10.2 ms.
    pub ecn_mark_cut_to_pipe: bool,
    /// With `ecn_loss_verdict`, on a path whose ECN is validated: the
    /// initial agile probing ends once the latest eight RTT samples all
    /// lie 4 ms (RFC 9406's MIN_RTT_THRESH) above RTTmin, with the window
    /// at the pipe the ACK rate measures (bytes acknowledged over the last
    /// RttThresh of ACKs, times RTTmin + RttThresh/4) and CUBIC's curve
    /// from there, instead of ssthresh following an ERE that ACK
    /// compression lifts past the bottleneck's rate (the window overflowed
    /// the queue, then three congestive cuts). Until then a loss ECN
    /// judges random freezes no growth (the probing ends at the RTT rise,
    /// not at a loss; at 1% loss a recovery period every round held it to
    /// half the pipe for a second). Losses and marks of packets sent before
    /// the exit are its overshoot, answered by it. Unused without the
    /// verdict. Measured with `sift-lab run` (50 Mb/s, 50 ms each way,
    /// queue 420, CoDel-ECN, 1% loss, 50 MB, seeds 1–3, medians): 0.863 →
    /// 0.903 of capacity·(1 − p), q95 of the queue 4.6 → 4.1 ms;
    /// docs/notes/2026-12-07-ecn.md, "Fourth pass".
    pub ecn_start_exit: bool,
}

impl Default for WestwoodAConfig {
    fn default() -> Self {
        Self {
            filter_time_constant_ms: FILTER_TIME_CONSTANT_MS,
            virtual_sample_divisor: VIRTUAL_SAMPLE_DIVISOR,
            initial_window_packets: INITIAL_WINDOW_PACKETS,
            timeout_window_packets: TIMEOUT_WINDOW_PACKETS,
            non_congestion_rounds: NON_CONGESTION_ROUNDS,
            climb_until_queue: true,
            cubic_growth: true,
            ecn_loss_verdict: false,
            ecn_random_headroom_packets: ECN_RANDOM_HEADROOM_PACKETS,
            ecn_random_grows_in_recovery: false,
            ecn_mark_cut_to_pipe: true,
            ecn_start_exit: true,
        }
    }
}

impl WestwoodAConfig {
    /// Each parameter's range: Westwood's τ and m, windows of at least one
    /// packet, and at least one round for PNCD.
    const RANGES: &'static Ranges<Self> = &[
        &Range {
            field: "filter_time_constant_ms",
            value: |c: &mut Self| &mut c.filter_time_constant_ms,
            valid: Valid::Where(|ms| ms > 0),
            expected: "a positive number of milliseconds",
        },
        &Range {
            field: "virtual_sample_divisor",
            value: |c: &mut Self| &mut c.virtual_sample_divisor,
            valid: Valid::AtLeast(VIRTUAL_SAMPLE_DIVISOR),
            expected: "at least 2 (Nyquist)",
        },
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
            field: "non_congestion_rounds",
            value: |c: &mut Self| &mut c.non_congestion_rounds,
            valid: Valid::AtLeast(1),
            expected: "at least 1",
        },
    ];

    /// Checks every value against the range the algorithm allows.
    pub fn validate(&self) -> Result<(), InvalidCcConfig> {
        ranges::validate("westwood-a", self, Self::RANGES)
    }

    /// The same configuration with out-of-range values put back in range:
    /// τ the default, the others their least valid value.
    fn sanitized(self) -> Self {
        ranges::sanitized(self, Self::RANGES)
    }
}

/// The Westwood-A controller.
#[derive(Debug, Clone)]
pub struct WestwoodA {
    config: WestwoodAConfig,
    window: WindowCore<u64, WestwoodAUndo>,
    ere: EligibleRate,
    /// RTTmin over the connection.
    rtt_min: Option<Duration>,
    /// The lowest round-mean RTT: RTTmin made robust to jitter.
    base_rtt: BaseRtt,
    /// The initial agile probing may still climb past the eligible window.
    climbing: bool,
    /// The latest smoothed RTT, for the pacing rate.
    smoothed_rtt: Option<Duration>,
    /// In agile probing.
    agile: bool,
    rounds: RoundTracker,
    /// PNCD: consecutive non-congested rounds in congestion avoidance.
    non_congested_rounds: u64,
    last_verdict: Option<LossVerdict>,
    verdicts: VerdictCounts,
    /// The numbers behind the last loss verdict (for traces).
    basis: Option<VerdictBasis>,
    /// The CUBIC curve congestion avoidance may follow since the last cut.
    epoch: Option<CurveEpoch>,
    /// CE arrivals, validation and rounds, for the ECN rules.
    ecn: EcnMemory,
    /// The congestion event being judged was started by CE marks.
    judging_mark: bool,
    /// The current recovery period follows a loss ECN judged random and
    /// `ecn_random_grows_in_recovery` lets the window grow through it.
    growing_through_recovery: bool,
    /// `ecn_start_exit`: still in the initial agile probing, no congestive
    /// event nor exit yet.
    initial_probe: bool,
    /// The ACK rate of the initial probing, for `ecn_start_exit`.
    ack_rate: AckRate,
    /// The latest RTT samples (a ring; `rtt_samples` counts them).
    recent_rtts: [Duration; N_RTT_SAMPLE as usize],
    rtt_samples: u32,
    /// When `ecn_start_exit` ended the initial probing.
    start_exit_at: Option<Instant>,
    /// Losses of packets sent up to here belong to that exit's overshoot:
    /// the exit, extended by the marks it answered.
    start_answered_until: Option<Instant>,
}

/// Growth along CUBIC's curve after a cut (`cubic_growth`).
#[derive(Clone, Copy, Debug)]
struct CurveEpoch {
    curve: CubicCurve,
    /// When the cut happened, moved later by application-limited stretches.
    start: Instant,
    /// When the current application-limited stretch began.
    app_limited_since: Option<Instant>,
}

impl CurveEpoch {
    /// Stops the curve's clock while the sender is application-limited (as
    /// CUBIC does, RFC 9438 §5.8), so it does not leap ahead afterwards.
    fn note_app_limited(&mut self, now: Instant, app_limited: bool) {
        match (app_limited, self.app_limited_since) {
            (true, None) => self.app_limited_since = Some(now),
            (false, Some(since)) => {
                let paused = now.saturating_duration_since(since);
                self.start = self.start.checked_add(paused).unwrap_or(self.start);
                self.app_limited_since = None;
            }
            _ => {}
        }
    }
}

/// What Westwood-A restores beside the window when a congestion event
/// proves spurious.
#[derive(Clone, Copy, Debug)]
struct WestwoodAUndo {
    agile: bool,
    non_congested_rounds: u64,
    verdict: LossVerdict,
    last_verdict: Option<LossVerdict>,
    /// The event ended the climb past the eligible window.
    ended_climb: bool,
    epoch: Option<CurveEpoch>,
}

impl WestwoodA {
    /// A controller for packets of `mss` bytes; out-of-range configuration
    /// values fall back to the defaults (see [`WestwoodAConfig::validate`]).
    pub fn new(config: WestwoodAConfig, mss: u64) -> Self {
        let config = config.sanitized();
        let mut window = WindowCore::new(mss, config.initial_window_packets);
        // Agile probing from the start: ssthresh grows only as ERE does.
        window.ssthresh = window.cwnd;
        Self {
            ere: EligibleRate::new(
                Duration::from_millis(config.filter_time_constant_ms),
                config.virtual_sample_divisor,
            ),
            climbing: config.climb_until_queue,
            ecn: EcnMemory::new(config.ecn_loss_verdict),
            judging_mark: false,
            growing_through_recovery: false,
            initial_probe: true,
            ack_rate: AckRate::default(),
            recent_rtts: [Duration::ZERO; N_RTT_SAMPLE as usize],
            rtt_samples: 0,
            start_exit_at: None,
            start_answered_until: None,
            config,
            window,
            rtt_min: None,
            base_rtt: BaseRtt::default(),
            smoothed_rtt: None,
            agile: true,
            rounds: RoundTracker::default(),
            non_congested_rounds: 0,
            last_verdict: None,
            verdicts: VerdictCounts::default(),
            basis: None,
            epoch: None,
        }
    }

    /// ERE in bytes per second.
    pub fn eligible_rate(&self) -> f64 {
        self.ere.bytes_per_second()
    }

    /// Whether agile probing is running.
    pub fn is_agile_probing(&self) -> bool {
        self.agile
    }

    /// The empty-path round trip the paper calls RTTmin: the lowest round
    /// mean ([`BaseRtt`]), or `None` before an RTT sample.
    fn base_rtt(&self) -> Option<Duration> {
        self.rtt_min.map(|rtt_min| self.base_rtt.get(rtt_min))
    }

    /// ERE·RTTbase in bytes (no floor); 0 before an RTT sample.
    fn eligible_window(&self) -> u64 {
        let Some(base) = self.base_rtt() else {
            return 0;
        };
        (self.ere.bytes_per_second() * base.as_secs_f64()) as u64
    }

    /// cwnd·RTTbase/`srtt`: the part of the window not queued, when the
    /// pipe is full; 0 before an RTT sample.
    fn pipe_window(&self, srtt: Duration) -> u64 {
        match self.base_rtt() {
            Some(base) if !srtt.is_zero() => {
                let pipe = u128::from(self.window.cwnd) * base.as_nanos() / srtt.as_nanos();
                u64::try_from(pipe)
                    .unwrap_or(u64::MAX)
                    .min(self.window.cwnd)
            }
            _ => 0,
        }
    }

    /// ER = cwnd/RTTbase, bytes per second.
    fn expected_rate(&self) -> f64 {
        self.base_rtt()
            .map_or(0.0, |rtt| self.window.cwnd as f64 / rtt.as_secs_f64())
    }

    fn observe_rtt(&mut self, ack: &AckEvent) {
        self.smoothed_rtt = Some(ack.rtt.smoothed);
        if !ack.rtt_sampled {
            return;
        }
        if !ack.rtt.latest.is_zero() {
            self.base_rtt.on_sample(ack.rtt.latest);
        }
        for candidate in [ack.rtt.latest, ack.rtt.min] {
            if !candidate.is_zero() {
                self.rtt_min = Some(self.rtt_min.map_or(candidate, |m| m.min(candidate)));
            }
        }
    }

    /// Agile probing's growth for one ACK: exponential below ssthresh (the
    /// eligible window), linear above it — or, while the initial climb
    /// lasts, half of slow start's pace past it.
    fn agile_growth(&mut self, ack: &AckEvent) {
        let window = &mut self.window;
        let (cwnd, rest) = slow_start(window.cwnd, window.ssthresh, ack.acked_bytes);
        window.cwnd = cwnd;
        if self.climbing && self.base_rtt.queue_building() {
            self.climbing = false;
        }
        if rest == 0 {
            return;
        }
        if self.climbing {
            window.cwnd += rest / CLIMB_GROWTH_DIVISOR;
        } else {
            window.grow_linearly(rest);
        }
    }

    /// PNCD at the end of a round in congestion avoidance: counts
    /// non-congested rounds and restarts agile probing after enough.
    fn detect_persistent_non_congestion(&mut self) {
        let (num, den) = NON_CONGESTION_FRACTION;
        let boundary = self.expected_rate() * num as f64 / den as f64;
        if self.ere.achieved_rate() >= boundary && boundary > 0.0 {
            self.non_congested_rounds += 1;
        } else {
            self.non_congested_rounds = 0;
        }
        if self.non_congested_rounds >= self.config.non_congestion_rounds {
            self.agile = true;
            self.non_congested_rounds = 0;
        }
    }

    /// Starts growth along CUBIC's curve from the window a cut left
    /// (`cwnd_epoch`) back to the one before it.
    fn start_curve(&mut self, now: Instant, before_cut: u64) {
        if !self.config.cubic_growth {
            return;
        }
        let curve = CubicCurve::new(
            before_cut as f64,
            self.window.cwnd as f64,
            C_CUBIC * self.window.mss as f64,
        );
        self.epoch = Some(CurveEpoch {
            curve,
            start: now,
            app_limited_since: None,
        });
    }

    /// Undoes the last cut, if it was not undone already. `spurious`: the
    /// loss was neither random nor congestive; otherwise CE marks overruled
    /// its verdict, which is counted again. Whether there was one.
    fn undo_congestion(&mut self, spurious: bool) -> bool {
        let Some(undo) = self.window.undo() else {
            return false;
        };
        self.agile = undo.agile;
        self.non_congested_rounds = undo.non_congested_rounds;
        self.climbing |= undo.ended_climb;
        self.epoch = undo.epoch;
        self.last_verdict = undo.last_verdict;
        if spurious {
            self.verdicts.withdraw(undo.verdict);
        } else {
            self.verdicts.retract(undo.verdict);
        }
        true
    }

    /// Whether `ecn_start_exit` watches this ACK: the option and the
    /// verdict on, the path's ECN validated, in the initial probing.
    fn ecn_start(&self) -> bool {
        self.config.ecn_start_exit
            && self.config.ecn_loss_verdict
            && self.ecn.validated()
            && self.initial_probe
            && self.agile
    }

    /// `ecn_start_exit` for one ACK: the RTT rise ends the initial probing
    /// at the ACK rate's pipe.
    fn watch_start(&mut self, ack: &AckEvent) {
        if !self.ecn_start() {
            return;
        }
        let Some(base) = self.base_rtt() else {
            return;
        };
        let span = rtt_rise_threshold(base);
        self.ack_rate.on_ack(ack.now, ack.acked_bytes, span);
        if !ack.rtt_sampled {
            return;
        }
        self.recent_rtts[(self.rtt_samples % N_RTT_SAMPLE) as usize] = ack.rtt.latest;
        self.rtt_samples = self.rtt_samples.saturating_add(1);
        let Some(rtt_min) = self.rtt_min else {
            return;
        };
        let risen = self.rtt_samples >= N_RTT_SAMPLE
            && self
                .recent_rtts
                .iter()
                .min()
                .is_some_and(|&least| least >= rtt_min + MIN_RTT_THRESH);
        if !risen {
            return;
        }
        let cwnd = self.window.cwnd;
        let pipe = self
            .ack_rate
            .rate(span / 2)
            .map_or(cwnd, |rate| (rate * (base + span / 4).as_secs_f64()) as u64);
        self.window.cwnd = pipe.max(self.window.minimum());
        self.window.ssthresh = self.window.cwnd;
        self.agile = false;
        self.climbing = false;
        self.initial_probe = false;
        self.window.forget_undo();
        if self.config.cubic_growth {
            let window = self.window.cwnd as f64;
            self.epoch = Some(CurveEpoch {
                curve: CubicCurve::new(window, window, C_CUBIC * self.window.mss as f64),
                start: ack.now,
                app_limited_since: None,
            });
        }
        self.start_exit_at = Some(ack.now);
        self.start_answered_until = Some(ack.now);
    }

    /// The window's phase, agile probing counted as slow start.
    fn phase(&self) -> Phase {
        match self.window.phase() {
            Phase::CongestionAvoidance if self.agile => Phase::SlowStart,
            phase => phase,
        }
    }
}

impl CongestionControl for WestwoodA {
    fn on_sent(&mut self, now: Instant, _bytes: u64, _bytes_in_flight: u64) {
        self.ere.advance_to(now);
    }

    fn on_ack(&mut self, ack: &AckEvent) {
        self.ecn.on_ack(ack);
        let round_ended = self.rounds.on_ack(ack);
        if round_ended {
            self.base_rtt.on_round_end();
        }
        self.observe_rtt(ack);
        let base_rtt = self.base_rtt().unwrap_or(ack.rtt.min);
        self.ere.on_ack(
            ack.now,
            ack.acked_bytes,
            self.window.cwnd,
            base_rtt,
            ack.rtt.smoothed,
        );
        self.watch_start(ack);
        if ack.in_recovery && !self.growing_through_recovery {
            return;
        }
        if let Some(epoch) = self.epoch.as_mut() {
            epoch.note_app_limited(ack.now, ack.app_limited);
        }
        let may_grow = if ack.in_recovery {
            // A random loss by ECN's verdict: its recovery period freezes
            // nothing (`ecn_random_grows_in_recovery`).
            !ack.app_limited
        } else {
            self.growing_through_recovery = false;
            self.window.ack_may_grow(ack)
        };
        if !may_grow {
            return;
        }
        if self.agile {
            // Agile probing: ssthresh follows the eligible window upwards.
            self.window.ssthresh = self.window.ssthresh.max(self.eligible_window());
            self.agile_growth(ack);
            return;
        }
        if round_ended && self.window.cwnd >= self.window.ssthresh {
            self.detect_persistent_non_congestion();
        }
        // Exponential below ssthresh (after a loss cut it), linear above —
        // or along CUBIC's curve where that is faster.
        let window = &mut self.window;
        let (cwnd, rest) = slow_start(window.cwnd, window.ssthresh, ack.acked_bytes);
        window.cwnd = cwnd;
        if rest == 0 {
            return;
        }
        window.grow_linearly(rest);
        if let Some(epoch) = self.epoch {
            let t = ack.now.saturating_duration_since(epoch.start).as_secs_f64();
            let along_curve = epoch
                .curve
                .grow(cwnd as f64, rest as f64, t, ack.rtt.smoothed);
            window.cwnd = window.cwnd.max(along_curve as u64);
        }
    }

    fn verdict_basis(&self) -> Option<VerdictBasis> {
        self.basis.clone()
    }

    fn on_congestion(&mut self, ev: &LossEvent) -> LossVerdict {
        self.ere.advance_to(ev.now);
        // `ecn_start_exit`: the overshoot that exit answered.
        if !ev.persistent
            && !self.judging_mark
            && self
                .start_answered_until
                .is_some_and(|until| ev.largest_lost_sent_time <= until)
        {
            self.window.forget_undo();
            self.last_verdict = Some(LossVerdict::Congestive);
            return LossVerdict::Congestive;
        }
        let floor = self.window.minimum();
        let eligible = self.eligible_window();
        // Within an eighth, the gap is the estimate's, not a queue (module
        // docs): a window-limited flow measures ERE·RTTmin just under cwnd.
        let (num, den) = NON_CONGESTION_FRACTION;
        let by_ecn = (!self.judging_mark)
            .then(|| self.ecn.loss_verdict(ev))
            .flatten();
        let verdict = if ev.persistent || self.judging_mark {
            LossVerdict::Congestive
        } else if let Some(verdict) = by_ecn {
            verdict
        } else if eligible < self.window.cwnd / den * num {
            LossVerdict::Congestive
        } else {
            LossVerdict::Random
        };
        self.window.save_for_undo(WestwoodAUndo {
            agile: self.agile,
            non_congested_rounds: self.non_congested_rounds,
            verdict,
            last_verdict: self.last_verdict,
            ended_climb: verdict == LossVerdict::Congestive && self.climbing,
            epoch: self.epoch,
        });
        self.verdicts.count(verdict);
        let mut values = vec![
            ("ere_bps", self.ere.bytes_per_second() * 8.0),
            (
                "rtt_min_us",
                self.base_rtt().map_or(0.0, |rtt| rtt.as_micros() as f64),
            ),
            ("eligible_window_bytes", eligible as f64),
            ("cwnd_bytes", self.window.cwnd as f64),
            ("persistent", f64::from(u8::from(ev.persistent))),
        ];
        if self.judging_mark {
            values.push(MARKED_BASIS);
        } else if by_ecn.is_some() {
            values.extend(self.ecn.basis_values(ev));
        }
        self.basis = Some(VerdictBasis { verdict, values });
        if ev.persistent {
            // Timeout: TCPW's cwin = 1, then agile probing again.
            self.window.ssthresh = eligible.max(floor);
            self.window.cwnd = self.window.packets(self.config.timeout_window_packets);
            self.agile = true;
            self.epoch = None;
        } else if verdict == LossVerdict::Random && self.agile {
            // The window is within what the path is eligible for: the loss
            // is the link's, and probing goes on towards its target.
            self.window.ssthresh = self.window.ssthresh.max(eligible).max(floor);
        } else if verdict == LossVerdict::Random && by_ecn.is_some() {
            // ECN says the loss is the link's: Westwood's cut to the
            // eligible window, plus the headroom of a few packets of queue
            // that the marking AQM bounds.
            self.window.ssthresh = eligible.max(floor);
            let headroom = self
                .config
                .ecn_random_headroom_packets
                .saturating_mul(self.window.mss);
            self.window.cwnd = self
                .window
                .cwnd
                .min(self.window.ssthresh.saturating_add(headroom));
            self.agile = false;
        } else {
            let before_cut = self.window.cwnd;
            let target = if (self.judging_mark || by_ecn.is_some())
                && self.config.ecn_loss_verdict
                && self.config.ecn_mark_cut_to_pipe
            {
                eligible.max(self.pipe_window(ev.rtt.smoothed))
            } else {
                eligible
            };
            self.window.ssthresh = target.max(floor);
            self.window.cwnd = self.window.cwnd.min(self.window.ssthresh);
            self.agile = false;
            if verdict == LossVerdict::Congestive {
                self.start_curve(ev.now, before_cut);
            }
        }
        if verdict == LossVerdict::Congestive {
            self.non_congested_rounds = 0;
            self.window.increase = AdditiveIncrease::default();
            // A congestive loss ends the initial climb; a random one, like
            // agile probing, leaves it running.
            self.climbing = false;
            self.initial_probe = false;
        }
        self.window.in_recovery = !ev.persistent;
        // `ecn_start_exit`: the initial probing grows through a random
        // loss's period too (it ends at the RTT rise, not at a loss).
        self.growing_through_recovery = (self.config.ecn_random_grows_in_recovery
            || self.ecn_start())
            && verdict == LossVerdict::Random
            && by_ecn.is_some();
        self.last_verdict = Some(verdict);
        verdict
    }

    fn on_spurious_congestion(&mut self, _ev: &SpuriousCongestionEvent) {
        self.undo_congestion(true);
    }

    fn on_ecn(&mut self, ev: &EcnEvent) {
        self.ecn.on_mark(ev.now);
        // `ecn_start_exit`: a mark on a packet sent before the exit is the
        // queue that exit answered.
        if self
            .start_exit_at
            .is_some_and(|at| ev.largest_acked_sent_time <= at)
        {
            self.start_answered_until = self.start_answered_until.max(Some(ev.now));
            self.window.forget_undo();
            return;
        }
        let overrule = self.window.in_recovery && self.last_verdict == Some(LossVerdict::Random);
        if ev.new_congestion_event || (overrule && self.undo_congestion(false)) {
            self.judging_mark = true;
            self.on_congestion(&ev.as_congestion());
            self.judging_mark = false;
        }
        self.window.forget_undo();
    }

    fn on_ecn_validated(&mut self, validated: bool) {
        self.ecn.set_validated(validated);
    }

    fn set_mss(&mut self, mss: u64) {
        self.window.set_mss(mss);
    }

    /// Careful Resume's window, and no curve to follow from it.
    fn set_window(&mut self, cwnd: u64, ssthresh: Option<u64>) {
        self.window.set_window(cwnd, ssthresh);
        self.epoch = None;
    }

    fn window(&self) -> u64 {
        self.window.cwnd
    }

    fn ssthresh(&self) -> u64 {
        self.window.ssthresh
    }

    fn pacing_rate(&self) -> Option<u64> {
        if !self.agile {
            return None;
        }
        let srtt = self.smoothed_rtt?.as_secs_f64();
        (srtt > 0.0).then(|| (AGILE_PACING_GAIN * self.window.cwnd as f64 / srtt) as u64)
    }

    fn metrics(&self) -> Metrics {
        let mut metrics = Metrics {
            algorithm: "westwood-a".into(),
            cwnd: self.window.cwnd,
            ssthresh: self.window.ssthresh,
            phase: self.phase(),
            last_verdict: self.last_verdict,
            fields: Default::default(),
        };
        let fields = &mut metrics.fields;
        fields.insert("ere_bps".into(), self.ere.bytes_per_second() * 8.0);
        fields.insert("achieved_bps".into(), self.ere.achieved_rate() * 8.0);
        fields.insert("expected_bps".into(), self.expected_rate() * 8.0);
        fields.insert(
            "sampling_interval_ms".into(),
            self.ere.sampling_interval().as_secs_f64() * 1e3,
        );
        fields.insert(
            "rtt_min_ms".into(),
            self.rtt_min.map_or(0.0, |rtt| rtt.as_secs_f64() * 1e3),
        );
        fields.insert(
            "base_rtt_ms".into(),
            self.base_rtt().map_or(0.0, |rtt| rtt.as_secs_f64() * 1e3),
        );
        fields.insert("agile_probing".into(), f64::from(u8::from(self.agile)));
        fields.insert("climbing".into(), f64::from(u8::from(self.climbing)));
        fields.insert(
            "non_congested_rounds".into(),
            self.non_congested_rounds as f64,
        );
        self.verdicts.insert_into(fields);
        metrics
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hystart::N_RTT_SAMPLE;
    use crate::test_support::{ack, loss, marks, ms, rtt, MSS};

    /// ACKs of one 1000-byte packet each, `spacing` apart from `start`, for
    /// packets sent one 100 ms RTT earlier; returns the time of the last.
    fn train(westwood: &mut WestwoodA, start: Instant, spacing: Duration, count: u32) -> Instant {
        let mut now = start;
        for i in 0..count {
            now = start + spacing * i;
            westwood.on_ack(&ack(now, now - ms(100), 1, rtt(100, 100), 0));
        }
        now
    }

    #[test]
    fn agile_probing_raises_ssthresh_to_ere_times_rtt_min_and_climbs_exponentially() {
        let t0 = Instant::now() + ms(1_000);
        let mut westwood = without_climb();
        // Agile probing from the start with ssthresh = IW = 10_000.
        assert!(westwood.is_agile_probing());
        assert_eq!((westwood.window(), westwood.ssthresh()), (10_000, 10_000));
        // The first ACK has no partner in T_k: no ERE yet; at ssthresh the
        // 1_000 bytes are avoidance credit (< one window), cwnd stays.
        train(&mut westwood, t0, ms(1), 1);
        assert_eq!((westwood.window(), westwood.ssthresh()), (10_000, 10_000));
        // The second ACK, 1 ms later: the train's dispersion, 1_000 B/1 ms =
        // 1 MB/s, seeds ERE; ssthresh = ERE·RTTmin = 1e6 · 0.1 = 100_000 and
        // the ACK grows cwnd as slow start: 11_000.
        train(&mut westwood, t0 + ms(1), ms(1), 1);
        assert!((westwood.eligible_rate() - 1_000_000.0).abs() < 1e-6);
        assert_eq!((westwood.window(), westwood.ssthresh()), (11_000, 100_000));
        // Eight more ACKs of the same train: +1_000 each (exponential).
        train(&mut westwood, t0 + ms(2), ms(1), 8);
        assert_eq!(westwood.window(), 19_000);
        assert_eq!(westwood.metrics().phase, Phase::SlowStart);
        // Pacing during agile probing: 2·cwnd/srtt = 2·19_000/0.1 B/s.
        assert_eq!(westwood.pacing_rate(), Some(380_000));
    }

    /// A Westwood-A that probed with ERE = 1 MB/s (ssthresh 100_000) up to
    /// cwnd 19_000.
    fn probed() -> (WestwoodA, Instant) {
        let t0 = Instant::now() + ms(1_000);
        let mut westwood = without_climb();
        let last = train(&mut westwood, t0, ms(1), 10);
        assert_eq!(westwood.window(), 19_000);
        (westwood, last)
    }

    #[test]
    fn loss_below_the_eligible_window_keeps_cwnd_and_is_judged_random() {
        let (mut westwood, last) = probed();
        // ERE·RTTmin = 100_000 ≥ cwnd 19_000: the loss is the link's; cwnd
        // unchanged, ssthresh max(100_000, 100_000), and agile probing goes
        // on (still pacing at 2·cwnd/srtt).
        let verdict = westwood.on_congestion(&loss(last, rtt(100, 100), false));
        assert_eq!(verdict, LossVerdict::Random);
        assert_eq!((westwood.window(), westwood.ssthresh()), (19_000, 100_000));
        assert!(westwood.is_agile_probing());
        assert_eq!(westwood.pacing_rate(), Some(380_000));
        assert_eq!(westwood.metrics().fields["random_losses"], 1.0);
    }

    #[test]
    fn loss_above_the_eligible_window_cuts_to_it_and_is_judged_congestive() {
        let t0 = Instant::now() + ms(1_000);
        let config = WestwoodAConfig {
            initial_window_packets: 200,
            climb_until_queue: false,
            ..WestwoodAConfig::default()
        };
        let mut westwood = WestwoodA::new(config, MSS);
        let last = train(&mut westwood, t0, ms(1), 10);
        // ERE 1 MB/s → eligible window 100_000 < cwnd 200_000 (+ no
        // avoidance growth yet: 9_000 < 200_000 acked): cwnd = ssthresh =
        // 100_000.
        assert_eq!(westwood.window(), 200_000);
        let verdict = westwood.on_congestion(&loss(last, rtt(100, 100), false));
        assert_eq!(verdict, LossVerdict::Congestive);
        assert_eq!((westwood.window(), westwood.ssthresh()), (100_000, 100_000));
        assert_eq!(westwood.metrics().phase, Phase::Recovery);
    }

    #[test]
    fn timeout_collapses_to_one_packet_and_probes_again() {
        let (mut westwood, last) = probed();
        // 300 ms without ACKs: one virtual zero sample at τ/m = 250 ms
        // (α = (1000 − 250)/(1000 + 250) = 3/5) gives ERE = 3/5·1e6 +
        // 1/5·(0 + 1e6) = 800_000 B/s. ssthresh = ERE·RTTmin = 80_000, cwnd
        // = TCPW's 1 packet, and agile probing restarts (below ssthresh, so
        // the climb is exponential at once).
        let verdict = westwood.on_congestion(&loss(last + ms(300), rtt(100, 100), true));
        assert_eq!(verdict, LossVerdict::Congestive);
        assert_eq!((westwood.window(), westwood.ssthresh()), (1_000, 80_000));
        assert!(westwood.is_agile_probing());
    }

    #[test]
    fn an_undone_loss_restores_window_probing_and_counts_as_spurious() {
        let t0 = Instant::now() + ms(1_000);
        let config = WestwoodAConfig {
            initial_window_packets: 200,
            climb_until_queue: false,
            ..WestwoodAConfig::default()
        };
        let mut westwood = WestwoodA::new(config, MSS);
        let last = train(&mut westwood, t0, ms(1), 10);
        // Cut 200_000 → 100_000 (ERE·RTTmin), probing over …
        westwood.on_congestion(&loss(last, rtt(100, 100), false));
        assert_eq!(westwood.window(), 100_000);
        assert!(!westwood.is_agile_probing());
        // … and undone: 200_000 with ssthresh 200_000 (as before: agile
        // probing had raised it to max(IW, 100_000) = 200_000), probing again.
        westwood.on_spurious_congestion(&SpuriousCongestionEvent {
            now: last + ms(50),
            congestion_at: last,
            lost_packets: vec![1],
            rtt: rtt(100, 100),
        });
        assert_eq!((westwood.window(), westwood.ssthresh()), (200_000, 200_000));
        assert!(westwood.is_agile_probing());
        let metrics = westwood.metrics();
        assert_eq!(metrics.last_verdict, None);
        assert_eq!(metrics.fields["congestive_losses"], 0.0);
        assert_eq!(metrics.fields["spurious_losses"], 1.0);
        assert!((westwood.eligible_rate() - 1_000_000.0).abs() < 1e-6);
    }

    #[test]
    fn ssthresh_after_a_loss_is_floored_at_two_packets() {
        // No ERE yet: ssthresh = max(0, 2 packets).
        let mut westwood = without_climb();
        westwood.on_congestion(&loss(Instant::now(), rtt(100, 100), false));
        assert_eq!((westwood.window(), westwood.ssthresh()), (2_000, 2_000));
    }

    /// Drives one 100 ms round of congestion avoidance: ten ACKs 10 ms apart,
    /// each for a packet sent 100 ms earlier, acknowledging `bytes` each.
    fn avoidance_round(westwood: &mut WestwoodA, start: Instant, bytes: u64) -> Instant {
        let mut now = start;
        for i in 0..10 {
            now = start + ms(10 * i);
            let mut event = ack(now, now - ms(100), 1, rtt(100, 100), 0);
            event.acked_bytes = bytes;
            westwood.on_ack(&event);
        }
        now + ms(10)
    }

    /// A Westwood-A in congestion avoidance at cwnd = ssthresh = 8_000.
    fn in_avoidance() -> (WestwoodA, Instant) {
        let t0 = Instant::now() + ms(1_000);
        let mut westwood = without_climb();
        // Ten ACKs of 800 bytes 10 ms apart: ERE = 80 kB/s, so ERE·RTTmin =
        // 8_000, below 7/8 of cwnd 10_000: the loss is judged congestive,
        // cuts to 8_000 and ends agile probing.
        let next = avoidance_round(&mut westwood, t0, 800);
        let verdict = westwood.on_congestion(&loss(next, rtt(100, 100), false));
        assert_eq!(verdict, LossVerdict::Congestive);
        assert_eq!((westwood.window(), westwood.ssthresh()), (8_000, 8_000));
        assert!(!westwood.is_agile_probing());
        (westwood, next)
    }

    #[test]
    fn three_rounds_achieving_the_expected_rate_restart_agile_probing() {
        let (mut westwood, mut next) = in_avoidance();
        // Each round acknowledges a full window (RE = cwnd/100 ms = ER); a
        // round ends at the first ACK of a packet sent after the last round
        // began, here each round's first ACK. Two non-congested round ends
        // count 1 and 2; the third restarts agile probing (and PNCD rests
        // while probing).
        let mut counts = Vec::new();
        for _ in 0..4 {
            let bytes = westwood.window() / 10;
            next = avoidance_round(&mut westwood, next, bytes);
            counts.push((
                westwood.metrics().fields["non_congested_rounds"],
                westwood.is_agile_probing(),
            ));
        }
        assert_eq!(
            counts,
            vec![(1.0, false), (2.0, false), (0.0, true), (0.0, true)]
        );
    }

    #[test]
    fn a_loss_within_an_eighth_of_the_eligible_window_is_the_links_and_keeps_pncd_counting() {
        let (mut westwood, mut next) = in_avoidance();
        // A non-congested round (RE = ER) counts 1 and grows cwnd by
        // about a packet past ERE·RTTmin = 8_000.
        let bytes = westwood.window() / 10;
        next = avoidance_round(&mut westwood, next, bytes);
        assert_eq!(westwood.metrics().fields["non_congested_rounds"], 1.0);
        let before = westwood.window();
        let eligible = westwood.eligible_window();
        assert!(
            eligible < before && eligible * 8 >= before * 7,
            "{eligible} of {before}"
        );
        // A random loss now: Westwood's rule still sets cwnd = ssthresh =
        // ERE·RTTmin, but a cut that small is the estimate's noise on a
        // window-limited flow, not a queue: the loss is judged random and
        // PNCD's count stands.
        let verdict = westwood.on_congestion(&loss(next, rtt(100, 100), false));
        assert_eq!(verdict, LossVerdict::Random);
        assert_eq!(
            (westwood.window(), westwood.ssthresh()),
            (eligible, eligible)
        );
        assert_eq!(westwood.metrics().fields["non_congested_rounds"], 1.0);
        // Two more such rounds restart agile probing (three in all).
        for _ in 0..2 {
            let bytes = westwood.window() / 10;
            next = avoidance_round(&mut westwood, next, bytes);
        }
        assert!(westwood.is_agile_probing());
    }

    #[test]
    fn rounds_short_of_the_expected_rate_never_restart_agile_probing() {
        let (mut westwood, mut next) = in_avoidance();
        // RE held at 75% of ER (6_000 of an 8_000-byte window per round).
        // The first round end still sees the previous round's ACKs in its
        // RTT of history (9·800 + 600 bytes = 78 kB/s ≥ 7/8·80 kB/s) and
        // counts 1; from then on RE = 60 kB/s < 70 kB/s resets the count.
        let mut counts = Vec::new();
        for _ in 0..6 {
            next = avoidance_round(&mut westwood, next, 600);
            counts.push(westwood.metrics().fields["non_congested_rounds"]);
            assert!(!westwood.is_agile_probing());
        }
        assert_eq!(counts, vec![1.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
    }

    /// A Westwood-A without the initial climb, to isolate TCPW-A's rules.
    fn without_climb() -> WestwoodA {
        let config = WestwoodAConfig {
            climb_until_queue: false,
            ..WestwoodAConfig::default()
        };
        WestwoodA::new(config, MSS)
    }

    #[test]
    fn the_eligible_window_uses_a_rounds_mean_rtt_not_its_luckiest_packet() {
        let t0 = Instant::now() + ms(1_000);
        let mut westwood = without_climb();
        // One round of ten ACKs 1 ms apart (a 1 MB/s train) whose RTT samples
        // alternate 30 and 50 ms, as on a jittery 40 ms path.
        for i in 0..10u32 {
            let now = t0 + ms(u64::from(i));
            let latest = if i % 2 == 0 { 30 } else { 50 };
            westwood.on_ack(&ack(now, now - ms(100), 1, rtt(latest, 40), 0));
        }
        // Until a round ends, RTTmin stands in: ssthresh = 1 MB/s · 30 ms.
        assert_eq!(westwood.ssthresh(), 30_000);
        // The first ACK for a packet sent after the round began ends it:
        // ten samples, mean 40 ms, so ERE (still 1 MB/s) · 40 ms.
        let now = t0 + ms(10);
        westwood.on_ack(&ack(now, t0, 1, rtt(40, 40), 0));
        let fields = westwood.metrics().fields;
        assert_eq!((fields["rtt_min_ms"], fields["base_rtt_ms"]), (30.0, 40.0));
        assert_eq!(westwood.ssthresh(), 40_000);
    }

    #[test]
    fn the_initial_climb_passes_an_ere_that_sees_no_capacity_until_a_queue_shows() {
        // ACKs of one packet every 10 ms over a 100 ms path: ERE = 100 kB/s
        // and ERE·RTTbase = 10_000 = the initial window, as when jitter
        // scatters the bottleneck's packet gaps. TCPW-A alone grows linearly
        // above ssthresh: one packet for the window of ACKs.
        let t0 = Instant::now() + ms(1_000);
        let mut tcpw_a = without_climb();
        avoidance_round(&mut tcpw_a, t0, 1_000);
        assert_eq!((tcpw_a.window(), tcpw_a.ssthresh()), (11_000, 10_000));
        // The climb adds half of every acked byte: 10_000 + 10 · 500.
        let mut westwood = WestwoodA::new(WestwoodAConfig::default(), MSS);
        let next = avoidance_round(&mut westwood, t0, 1_000);
        assert_eq!((westwood.window(), westwood.ssthresh()), (15_000, 10_000));
        assert_eq!(westwood.metrics().fields["climbing"], 1.0);
        // That round (mean RTT 100 ms) is the baseline; in the next, RTTs
        // of 113 ms (more than 100/8 above it) show a queue: the eighth
        // such sample ends the climb, and from then on growth is TCPW-A's.
        let mut now = next;
        for i in 0..N_RTT_SAMPLE {
            now = next + ms(10 * u64::from(i));
            westwood.on_ack(&ack(now, now - ms(100), 1, rtt(113, 100), 0));
        }
        assert_eq!(westwood.metrics().fields["base_rtt_ms"], 100.0);
        assert_eq!(westwood.metrics().fields["climbing"], 0.0);
        let window = westwood.window();
        westwood.on_ack(&ack(now + ms(10), now - ms(90), 1, rtt(113, 100), 0));
        assert!(westwood.window() - window < 500, "{}", westwood.window());
    }

    #[test]
    fn a_random_loss_leaves_the_climb_running_a_congestive_one_ends_it_until_undone() {
        let t0 = Instant::now() + ms(1_000);
        let climbing = |westwood: &WestwoodA| westwood.metrics().fields["climbing"] == 1.0;
        let mut westwood = WestwoodA::new(WestwoodAConfig::default(), MSS);
        let next = avoidance_round(&mut westwood, t0, 1_000);
        // cwnd 15_000 above the eligible 10_000: a loss now cuts
        // (congestive) and ends both agile probing and the climb.
        westwood.on_congestion(&loss(next, rtt(100, 100), false));
        assert_eq!(westwood.window(), 10_000);
        assert!(!climbing(&westwood));
        // Undone: the climb resumes with the window and agile probing.
        westwood.on_spurious_congestion(&SpuriousCongestionEvent {
            now: next,
            congestion_at: next,
            lost_packets: vec![1],
            rtt: rtt(100, 100),
        });
        assert_eq!(westwood.window(), 15_000);
        assert!(climbing(&westwood) && westwood.is_agile_probing());
        // A train at 1 MB/s from the start puts ERE·RTTbase (100_000) far
        // above the window: a loss then is the link's and the climb goes on.
        let mut westwood = WestwoodA::new(WestwoodAConfig::default(), MSS);
        let last = train(&mut westwood, t0, ms(1), 10);
        let verdict = westwood.on_congestion(&loss(last, rtt(100, 100), false));
        assert_eq!(verdict, LossVerdict::Random);
        assert!(climbing(&westwood));
    }

    /// A Westwood-A cut from 200_000 to its eligible window 100_000 (ERE
    /// 1 MB/s · RTTmin 100 ms), now in congestion avoidance.
    fn cut_in_half(cubic_growth: bool) -> (WestwoodA, Instant) {
        let config = WestwoodAConfig {
            initial_window_packets: 200,
            climb_until_queue: false,
            cubic_growth,
            ..WestwoodAConfig::default()
        };
        let mut westwood = WestwoodA::new(config, MSS);
        let last = train(&mut westwood, Instant::now() + ms(1_000), ms(1), 10);
        let verdict = westwood.on_congestion(&loss(last, rtt(100, 100), false));
        assert_eq!(verdict, LossVerdict::Congestive);
        assert_eq!(westwood.window(), 100_000);
        (westwood, last)
    }

    /// ACKs every 20 ms, each for a tenth of the window, behind a standing
    /// queue (200 ms RTTs on the 100 ms path, so PNCD sees congestion), from
    /// `from` until `until`; `app_limited` marks them all. Returns the time
    /// of the last.
    fn queued_acks(
        westwood: &mut WestwoodA,
        from: Instant,
        until: Instant,
        app_limited: bool,
    ) -> Instant {
        let mut now = from;
        while now < until {
            now += ms(20);
            let mut event = ack(now, now - ms(200), 1, rtt(200, 200), 0);
            event.acked_bytes = westwood.window() / 10;
            event.app_limited = app_limited;
            westwood.on_ack(&event);
        }
        now
    }

    #[test]
    fn after_a_cut_avoidance_follows_cubics_curve_back_to_the_window_before_it() {
        // W_max = 200_000, cwnd_epoch = 100_000: K = ∛(100_000/(0.4·1000))
        // = ∛250 ≈ 6.3 s. The curve climbs steeply at first and flattens
        // towards W_max (within 2.5% of it 4 s after the cut), where TCPW-A's
        // line has added one packet per 200 ms round: 20 packets.
        let (mut cubic, cut) = cut_in_half(true);
        let (mut linear, _) = cut_in_half(false);
        for westwood in [&mut cubic, &mut linear] {
            queued_acks(westwood, cut, cut + ms(4_000), false);
            assert!(!westwood.is_agile_probing());
        }
        assert!(
            (195_000..=200_000).contains(&cubic.window()),
            "{}",
            cubic.window()
        );
        assert_eq!(linear.window(), 120_000);
        // On the plateau the line is the faster: both add about a packet a
        // round.
        let at_4s = cubic.window();
        queued_acks(&mut cubic, cut + ms(4_000), cut + ms(6_000), false);
        queued_acks(&mut linear, cut + ms(4_000), cut + ms(6_000), false);
        assert!((10_000..11_000).contains(&(cubic.window() - at_4s)));
        assert_eq!(linear.window(), 130_000);
        // Past K the curve turns convex and outruns the line: at K + 5 s it
        // is at W_max + C·5.2³ packets ≈ 256_000 (the line alone: ~233_000).
        let k = Duration::from_secs_f64(250f64.cbrt());
        queued_acks(&mut cubic, cut + ms(6_000), cut + k + ms(5_000), false);
        assert!(cubic.window() > 250_000, "{}", cubic.window());
    }

    #[test]
    fn the_curve_waits_while_the_sender_is_application_limited() {
        // Two seconds of growth, or two seconds of growth with a 5 s
        // application-limited pause in the middle, end at the same window:
        // the pause neither grows the window nor moves the curve on.
        let (mut steady, cut) = cut_in_half(true);
        queued_acks(&mut steady, cut, cut + ms(2_000), false);
        let (mut paused, cut) = cut_in_half(true);
        let mut now = queued_acks(&mut paused, cut, cut + ms(1_000), false);
        let before_pause = paused.window();
        now = queued_acks(&mut paused, now, now + ms(5_000), true);
        assert_eq!(paused.window(), before_pause);
        queued_acks(&mut paused, now, now + ms(1_000), false);
        let (a, b) = (steady.window() as f64, paused.window() as f64);
        assert!((a - b).abs() / a < 0.01, "{a} vs {b}");
    }

    #[test]
    fn westwood_a_is_selected_by_name_and_scenario_file() {
        use crate::CcConfig;
        let by_name: CcConfig = "westwood-a".parse().unwrap();
        assert_eq!(by_name, CcConfig::WestwoodA(WestwoodAConfig::default()));
        assert_eq!(by_name.name(), "westwood-a");
        let parsed: CcConfig =
            toml::from_str("name = \"westwood-a\"\nnon_congestion_rounds = 5\n").unwrap();
        let expected = WestwoodAConfig {
            non_congestion_rounds: 5,
            ..WestwoodAConfig::default()
        };
        assert_eq!(parsed, CcConfig::WestwoodA(expected));
        let invalid: CcConfig =
            toml::from_str("name = \"westwood-a\"\nnon_congestion_rounds = 0\n").unwrap();
        assert_eq!(
            invalid.validate().unwrap_err().field,
            "non_congestion_rounds"
        );
        assert_eq!(by_name.build(MSS).metrics().algorithm, "westwood-a");
    }

    /// A `westwood-a-ecn` on a validated path, cut by a CE mark to its
    /// eligible window 8_000 (ERE 80 kB/s · 100 ms, as [`in_avoidance`]),
    /// then two rounds without marks; `config` sets the ECN options.
    fn ecn_in_avoidance(config: WestwoodAConfig) -> (WestwoodA, Instant) {
        let config = WestwoodAConfig {
            climb_until_queue: false,
            ecn_loss_verdict: true,
            ..config
        };
        let mut westwood = WestwoodA::new(config, MSS);
        westwood.on_ecn_validated(true);
        let t0 = Instant::now() + ms(1_000);
        let mut next = avoidance_round(&mut westwood, t0, 800);
        westwood.on_ecn(&marks(next, next - ms(100), 1, 1, true));
        assert!(!westwood.is_agile_probing());
        for _ in 0..2 {
            next = avoidance_round(&mut westwood, next, 800);
        }
        (westwood, next)
    }

    /// The paper's response to a random loss, kept with the ECN options off.
    fn paper_ecn_options() -> WestwoodAConfig {
        WestwoodAConfig {
            ecn_random_headroom_packets: 0,
            ecn_random_grows_in_recovery: false,
            ecn_mark_cut_to_pipe: false,
            ..WestwoodAConfig::default()
        }
    }

    #[test]
    fn a_loss_ecn_judges_random_leaves_headroom_above_the_eligible_window() {
        // About 9_300 before the loss (grown past the eligible 8_000 by the
        // rounds' ACKs): the paper cuts to ERE·RTTmin, the option to
        // ERE·RTTmin + 1 packet.
        let options = WestwoodAConfig {
            ecn_random_headroom_packets: 1,
            ..paper_ecn_options()
        };
        for (config, headroom) in [(paper_ecn_options(), 0), (options, 1_000)] {
            let (mut westwood, next) = ecn_in_avoidance(config);
            let eligible = westwood.eligible_window();
            assert!(
                westwood.window() > eligible + 1_000,
                "{}",
                westwood.window()
            );
            let verdict = westwood.on_congestion(&loss(next, rtt(100, 100), false));
            assert_eq!(verdict, LossVerdict::Random);
            assert_eq!(westwood.window(), eligible + headroom);
        }
    }

    #[test]
    fn a_loss_ecn_judges_random_freezes_no_growth_with_the_option() {
        let options = WestwoodAConfig {
            ecn_random_grows_in_recovery: true,
            ..paper_ecn_options()
        };
        let mut grown = Vec::new();
        for config in [paper_ecn_options(), options] {
            let (mut westwood, next) = ecn_in_avoidance(config);
            westwood.on_congestion(&loss(next, rtt(100, 100), false));
            let cut = westwood.window();
            // A round of ACKs for packets sent before the recovery period.
            for i in 0..10 {
                let now = next + ms(10 * i);
                let mut event = ack(now, next - ms(50), 1, rtt(100, 100), 0);
                event.in_recovery = true;
                westwood.on_ack(&event);
            }
            grown.push(westwood.window() - cut);
        }
        assert_eq!(grown[0], 0, "RFC 9002 §7.3.2: no growth in recovery");
        assert!(grown[1] > 0, "{grown:?}");
    }

    #[test]
    fn a_mark_cuts_to_the_window_outside_the_queue_with_the_option() {
        // RTTs of 125 ms on the 100 ms path: a fifth of the window is
        // queue. ERE (80 kB/s, window-limited) gives 8_000; cwnd·100/125
        // gives 0.8 of the window before the mark.
        let options = WestwoodAConfig {
            ecn_mark_cut_to_pipe: true,
            ..paper_ecn_options()
        };
        let mut cuts = Vec::new();
        for config in [paper_ecn_options(), options] {
            let (mut westwood, next) = ecn_in_avoidance(config);
            let before = westwood.window();
            let mut mark = marks(next, next - ms(50), 1, 1, true);
            mark.rtt = rtt(125, 125);
            westwood.on_ecn(&mark);
            cuts.push((before, westwood.eligible_window(), westwood.window()));
        }
        let (_, eligible, paper) = cuts[0];
        assert_eq!(paper, eligible);
        let (before, eligible, pipe) = cuts[1];
        assert!(pipe > eligible, "{cuts:?}");
        assert_eq!(pipe, before * 4 / 5);
    }
}
