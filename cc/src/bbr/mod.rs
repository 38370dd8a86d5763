//! BBRv3 as draft-ietf-ccwg-bbr writes it (the text of the IETF CCWG draft
//! repository; Linux's `tcp_bbr.c` v3 branch and quiche's `gcongestion`
//! BBR2 were read as references, not copied).
//!
//! BBR builds a model of the path — the bottleneck bandwidth (`max_bw`, a
//! windowed maximum of delivery-rate samples) and the round-trip propagation
//! delay (`min_rtt`) — and paces at a gain times the bandwidth, with the
//! window a gain times the bandwidth-delay product. A state machine probes:
//! Startup doubles the rate every round until the bandwidth stops growing (or
//! the loss rate passes 2%), Drain empties the queue Startup built, ProbeBW
//! cycles DOWN / CRUISE / REFILL / UP to find more bandwidth while leaving
//! headroom, and ProbeRTT drains the queue every 5 s to refresh `min_rtt`.
//! Losses shape two bounds: a long-term `inflight_longterm` (set when a
//! probe's loss rate passes `LossThresh`) and a short-term
//! `bw_shortterm`/`inflight_shortterm` (cut each round that saw loss while not
//! probing).
//!
//! Delivery-rate samples come from the recovery module's sampler through
//! [`AckEvent::rate`]; per-packet loss state through
//! [`CongestionControl::on_packets_lost`].
//!
//! **Corruption.** A packet named in a CORRUPTED frame crossed the path: the
//! sampler counts it as delivered (so the bandwidth model sees the link's
//! real rate) and never as lost, so it does not count toward `LossThresh`
//! nor cut the short-term model. BBR does nothing in `on_corruption`.
//!
//! **Leaky pipes** (sift's one change to the algorithm, `BbrConfig::
//! background_loss_tolerance`, on by default). The draft cuts its
//! short-term model after every round with any loss while not probing, and
//! leaves Startup at 2% loss; on a link that drops 1% at random that keeps
//! the flow well below the path's rate (measured in `sift-lab leaky-pipes`:
//! 0.62–0.84 of capacity·(1−p) at 1%, 50 Mb/s, 100 ms). Under the rule,
//! rounds whose RTT samples show no queue (all within min_rtt/8 of
//! min_rtt) teach a background loss rate (moving average, weight 1/8,
//! capped at 10%); a probe's loss threshold applies to losses above it;
//! such rounds do not end Startup, and if their loss stays within the
//! threshold they neither cut the short-term model nor keep an earlier cut.
//! Rounds with a queue — competing flows, Startup's overshoot — cut it at
//! any loss, as the draft does.
//!
//! **Sharing with CUBIC** (sift's second change, `BbrConfig::
//! standing_queue_response`, on by default; `coexistence.rs`). The draft
//! bounds its flight only above 2% loss in a probe, and beside CUBIC on a
//! one-BDP buffer BBR loses 0.3%: it took 0.79–0.81 of two flows' bytes.
//! Under the rule, a loss over another flow's standing queue cuts
//! `inflight_longterm` as CUBIC cuts its window (0.57–0.58, Jain 0.97),
//! and BBR alone is unchanged on the lossy and jittery paths measured
//! (docs/notes/2026-11-26-sharing-with-cubic.md). With both rules off, the draft exactly.
//!
//! **ECN** (`ecn.rs`): the draft's MUST — CE marks are congestion — read in
//! the draft's own terms: a marked round cuts the short-term model as a
//! lossy one does, a mark in Startup or ProbeBW_UP is inflight too high
//! at once (BBR's ECT(0) is marked by classic AQMs, which mark far below
//! Linux BBRv3's half-a-round threshold) and bounds `inflight_longterm` at
//! the BDP over (1 − headroom), and `ecn_loss_verdict` (off by default)
//! takes a loss in a round without marks on a validated path for the
//! link's. Once a mark has bounded the flight (`marked_path_fills_pipe`,
//! on by default), the window holds CRUISE's flight at 1.03 BDP, paced
//! at 1.05·bw, and Drain and DOWN hold one BDP.
//!
//! Where sift chooses (each pinned by a test):
//! - the draft's `random_int_between` / `random_float_between` (ProbeBW wait)
//!   come from a xorshift generator seeded with a constant and stirred with
//!   the bytes delivered at each draw: deterministic for a run, different
//!   between flows (sift's rule: no unseeded randomness in `cc/`);
//! - the initial pacing rate is set at the first RTT sample
//!   (2.77·InitialCwnd/srtt, draft §5.6.2 `InitPacingRate`); before it, the
//!   recovery module's default pacing applies;
//! - the draft's `MarkConnectionAppLimited` in ProbeRTT cannot reach the
//!   recovery module's sampler: BBR instead treats samples taken in ProbeRTT
//!   as application-limited itself;
//! - Startup's loss exit follows Linux's reading of the draft's criteria: at
//!   the end of a loss round, at least 6 discontiguous lost ranges in it and
//!   a loss rate above `LossThresh` over the sampled packet's flight;
//! - `C.is_cwnd_limited` is "the window was full when a packet left, in this
//!   or the previous round";
//! - on a congestion event BBR reports [`LossVerdict::Congestive`] if the
//!   event lost more than `LossThresh` of the flight, else
//!   [`LossVerdict::Random`]: BBR does not classify, but that is the line
//!   its model draws.

mod coexistence;
mod ecn;
mod filter;
mod probe_bw;

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use filter::WindowedMax;

use crate::queue_estimate::JitterMeter;
use crate::ranges::{self, Range, Ranges, Valid};
use crate::veno::VerdictCounts;
pub use ecn::ECN_THRESH;

use crate::{
    AckEvent, CongestionControl, EcnEvent, LossEvent, LossVerdict, Metrics, PacketsLost, Phase,
    RateSample, SpuriousCongestionEvent,
};

/// draft §2.5: BBR.StartupPacingGain = 4·ln 2 ≈ 2.77, the least gain that
/// doubles the sending rate each round.
pub const STARTUP_PACING_GAIN: f64 = 2.77;
/// draft §2.5: BBR.DrainPacingGain = 0.5, drains Startup's queue in a round.
pub const DRAIN_PACING_GAIN: f64 = 0.5;
/// draft §2.6: BBR.DefaultCwndGain = 2.
pub const DEFAULT_CWND_GAIN: f64 = 2.0;
/// draft §2.5: BBR.PacingMarginPercent = 1.
pub const PACING_MARGIN_PERCENT: f64 = 1.0;
/// draft §2.8: BBR.LossThresh, the tolerated per-round loss rate (2%).
pub const LOSS_THRESH: f64 = 0.02;
/// draft §2.8: BBR.Beta, the multiplicative decrease per lossy round (0.7).
pub const BETA: f64 = 0.7;
/// draft §2.8: BBR.Headroom, the share of inflight_longterm left free (0.15).
pub const HEADROOM: f64 = 0.15;
/// draft §2.8: BBR.MinPipeCwnd = 4 packets.
pub const MIN_PIPE_CWND_PACKETS: u64 = 4;
/// draft §2.11: BBR.MaxBwFilterLen = 2 ProbeBW cycles.
pub const MAX_BW_FILTER_LEN: u64 = 2;
/// draft §2.12: BBR.ExtraAckedFilterLen = 10 rounds.
pub const EXTRA_ACKED_FILTER_LEN: u64 = 10;
/// draft §2.14.1: BBR.MinRTTFilterLen = 10 s.
pub const MIN_RTT_FILTER_LEN: Duration = Duration::from_secs(10);
/// draft §2.14.2: BBR.ProbeRTTCwndGain = 0.5.
pub const PROBE_RTT_CWND_GAIN: f64 = 0.5;
/// draft §2.14.2: BBR.ProbeRTTDuration = 200 ms.
pub const PROBE_RTT_DURATION: Duration = Duration::from_millis(200);
/// draft §2.14.2: BBR.ProbeRTTInterval = 5 s.
pub const PROBE_RTT_INTERVAL: Duration = Duration::from_secs(5);
/// draft §5.3.1.3: Startup exits on loss only after this many discontiguous
/// lost ranges in a round (BBRStartupFullLossCnt).
pub const STARTUP_FULL_LOSS_COUNT: u32 = 6;
/// draft §5.3.1.2: a round "without much growth" grew max_bw by < 25%.
pub const FULL_BW_GROWTH: f64 = 1.25;
/// draft §5.3.1.2: three such rounds fill the pipe.
pub const FULL_BW_ROUNDS: u32 = 3;
/// draft §5.6.3: the send quantum is at most 64 KB.
pub const MAX_SEND_QUANTUM: u64 = 64 * 1024;
/// sift's leaky-pipe rule: the background loss rate averages CRUISE rounds
/// with weight 1/8 (the RFC 6298 smoothing gain, so about eight rounds of
/// memory).
pub const BACKGROUND_LOSS_GAIN: f64 = 8.0;
/// sift's leaky-pipe rule: a round whose RTT samples all stay within
/// min_rtt/8 of min_rtt ran without a queue (RFC 9406's fraction).
pub const QUEUE_FREE_RTT_DIVISOR: u32 = 8;
/// sift's leaky-pipe rule: at most 10% loss is taken as the link's; above
/// that BBR behaves as the draft whatever the link.
pub const MAX_BACKGROUND_LOSS_RATE: f64 = 0.1;
/// sift's long-path rule: a sample within min_rtt/64 of the ProbeRTT
/// minimum confirms it (9.4 ms at 600 ms, 0.3 ms at 20 ms).
pub const MIN_RTT_CONFIRM_DIVISOR: u32 = 64;
/// Careful Resume: Startup ends once max_bw reaches this share of the saved
/// path's bandwidth (7/8: a max filter's samples sit just under the rate
/// that filled it).
pub const RESUME_TARGET_SHARE: f64 = 0.875;
/// RFC 9002 §7.2 initial window, in packets.
pub const INITIAL_WINDOW_PACKETS: u64 = 10;
/// sift's marking-path rule: CRUISE's pacing gain once a probe's CE mark
/// bounded the flight (the window holds it; `BbrConfig::
/// marked_path_fills_pipe`). Measured 1.02 / 1.05 / 1.1 with the window
/// at one BDP: 0.902 / 0.899 / 0.904; 1.05 with the window below.
pub const MARKED_CRUISE_PACING_GAIN: f64 = 1.05;
/// sift's marking-path rule: CRUISE's window in BDPs on a marking path
/// (3 ms of queue at 100 ms, under CoDel's 5 ms target). Measured 1.02 /
/// 1.03 / 1.05: 0.906 each, median queue 1.0–1.4 / 1.8–2.3 / 3.8–4.1 ms.
pub const MARKED_CRUISE_BDP: f64 = 1.03;

/// BBR's parameters. The defaults are the draft's.
///
/// Metrics fields reported by [`Bbr`]: `state` (0 Startup, 1 Drain, 2
/// ProbeBW_DOWN, 3 CRUISE, 4 REFILL, 5 UP, 6 ProbeRTT), `bw_bps`,
/// `max_bw_bps`, `pacing_rate_bps`, `min_rtt_ms`, `pacing_gain`,
/// `cwnd_gain`, `inflight_longterm_bytes` and `inflight_shortterm_bytes` (−1
/// while unbounded), `round_count`, `full_bw_reached` (0/1),
/// `standing_queue` (0/1: the last CRUISE round ran over a standing queue),
/// `standing_queue_ms` (how far that round's smallest RTT sat above min_rtt)
/// and `standing_queue_cuts` (cuts the standing-queue rule made),
/// `ecn_marks` (CE events) and `ce_ratio` (the share of the last loss
/// round's bytes CE marked), and
/// `random_losses`, `congestive_losses`, `spurious_losses` (congestion events
/// by verdict).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BbrConfig {
    /// Initial window in packets (the transport's, draft §5.6.4.1).
    pub initial_window_packets: u64,
    /// BBR.LossThresh: the loss rate a bandwidth probe tolerates.
    pub loss_threshold: f64,
    /// sift's leaky-pipe rule (on by default; off is the draft exactly):
    /// losses in rounds that show no queue (every RTT sample within
    /// min_rtt/8 of min_rtt) are the link's background loss rate, and a
    /// probe's `loss_threshold` applies to the loss rate above it; a
    /// queue-free round neither ends Startup nor, if its loss is within the
    /// threshold, cuts the short-term model (and it lifts an earlier cut at
    /// once instead of at the next probe). Rounds with a queue follow the
    /// draft.
    pub background_loss_tolerance: bool,
    /// sift's standing-queue rule (`coexistence.rs`; off is the draft):
    /// while the last ProbeBW_CRUISE round ran over a queue that never
    /// drained (another flow's), any loss sets `inflight_longterm` to 0.7
    /// of the flight when the lost packet left, once per round trip, and
    /// stops a probe, so that BBR yields to a loss-based flow as that flow
    /// yields to it.
    pub standing_queue_response: bool,
    /// sift's long-path rule (on by default; off is the draft): an RTT
    /// sample within min_rtt/[`MIN_RTT_CONFIRM_DIVISOR`] of the ProbeRTT
    /// minimum renews that minimum's stamp, as a lower sample does. Such a
    /// sample ran over no queue of ours, so it is what ProbeRTT would
    /// measure; without the rule a path whose RTT never drops below its
    /// first sample enters ProbeRTT every 5 s, which at 600 ms halves the
    /// window for a round trip in mid-Startup.
    pub queue_free_samples_renew_min_rtt: bool,
    /// sift's probe-first rule (off by default; off is the draft): a
    /// ProbeRTT that falls due while ProbeBW_REFILL or ProbeBW_UP runs waits
    /// until the probe ends (ProbeBW_DOWN). The draft enters ProbeRTT from
    /// any state and its exit restarts the cycle at CRUISE with a new 2–3 s
    /// wait; at a 1.9 s RTT beside a loss-based flow's standing queue (which
    /// ProbeRTT cannot drain, so the 5 s timer keeps running out) every UP
    /// was cut within 1.5 rounds and `inflight_longterm` grew two packets
    /// in 33 s (docs/notes/2026-11-27-long-paths.md, "Path changed").
    pub probe_rtt_waits_for_bw_probe: bool,
    /// On a path whose ECN is validated, a loss in a round without CE marks
    /// is the link's: no short-term cut, no count towards `LossThresh` or
    /// Startup's exit, a random verdict (`ecn.rs`; `--cc bbr-ecn`). Off:
    /// the draft's loss rules.
    pub ecn_loss_verdict: bool,
    /// sift's marking-path rule (on by default; off is the ECN response
    /// alone, `ecn.rs`): once a probe's CE mark has bounded
    /// `inflight_longterm`, the window, not the pacing, holds the flight.
    /// CRUISE paces at [`MARKED_CRUISE_PACING_GAIN`] with a window of
    /// [`MARKED_CRUISE_BDP`]·BDP (or CRUISE's headroom, if larger), and
    /// Drain after a marked Startup and DOWN hold the flight at CRUISE's
    /// headroom, so the queue drains at the bottleneck's rate. Why: the
    /// bandwidth samples count delivered packets, so pacing at `bw` less the
    /// 1% margin leaves the bottleneck idle by the loss rate and the margin
    /// (a link that loses 1% before its queue, as netem does, ran at 98%),
    /// and a window of exactly one BDP idles it at every delayed ACK; on a
    /// path that marks, the AQM bounds the queue the extra 3% may build. On
    /// 50 Mb/s, 50 ms each way, CoDel with ECN, 1% loss, 50 MB (seeds 1–3,
    /// docs/notes/2026-12-07-ecn.md "Third pass"): 0.891 → 0.906 of
    /// capacity·(1 − p), q95 18.4 → 18.4 ms, the median queue 0 → 1.8 ms.
    /// Paths without marks never set the bound: bit-identical.
    pub marked_path_fills_pipe: bool,
}

impl Default for BbrConfig {
    fn default() -> Self {
        Self {
            initial_window_packets: INITIAL_WINDOW_PACKETS,
            loss_threshold: LOSS_THRESH,
            background_loss_tolerance: true,
            standing_queue_response: true,
            queue_free_samples_renew_min_rtt: true,
            probe_rtt_waits_for_bw_probe: false,
            ecn_loss_verdict: false,
            marked_path_fills_pipe: true,
        }
    }
}

impl BbrConfig {
    /// Each parameter's range: a window of at least one packet, and
    /// BBR.LossThresh a loss rate (draft §2.8), the draft's when out
    /// of range.
    const RANGES: &'static Ranges<Self> = &[
        &Range {
            field: "initial_window_packets",
            value: |c: &mut Self| &mut c.initial_window_packets,
            valid: Valid::AtLeast(1),
            expected: "at least 1",
        },
        &Range {
            field: "loss_threshold",
            value: |c: &mut Self| &mut c.loss_threshold,
            valid: Valid::Where(|rate| rate > 0.0 && rate < 1.0),
            expected: "a fraction strictly between 0 and 1",
        },
    ];

    /// Checks every value against the range the draft allows.
    pub fn validate(&self) -> Result<(), crate::InvalidCcConfig> {
        ranges::validate("bbr", self, Self::RANGES)
    }

    fn sanitized(self) -> Self {
        ranges::sanitized(self, Self::RANGES)
    }
}

/// The BBR state machine's states (draft §5.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BbrState {
    Startup,
    Drain,
    ProbeBwDown,
    ProbeBwCruise,
    ProbeBwRefill,
    ProbeBwUp,
    ProbeRtt,
}

impl BbrState {
    fn index(self) -> f64 {
        match self {
            BbrState::Startup => 0.0,
            BbrState::Drain => 1.0,
            BbrState::ProbeBwDown => 2.0,
            BbrState::ProbeBwCruise => 3.0,
            BbrState::ProbeBwRefill => 4.0,
            BbrState::ProbeBwUp => 5.0,
            BbrState::ProbeRtt => 6.0,
        }
    }

    fn is_probe_bw(self) -> bool {
        matches!(
            self,
            BbrState::ProbeBwDown
                | BbrState::ProbeBwCruise
                | BbrState::ProbeBwRefill
                | BbrState::ProbeBwUp
        )
    }
}

/// What the ACKs being received tell about bandwidth probing (draft §2.13).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AckPhase {
    Init,
    Refilling,
    ProbeStarting,
    ProbeFeedback,
    ProbeStopping,
}

/// The BBRv3 controller.
#[derive(Debug, Clone)]
pub struct Bbr {
    config: BbrConfig,
    mss: u64,
    now: Option<Instant>,

    // Output control parameters.
    cwnd: u64,
    /// C.pacing_rate in bytes per second; `None` until the first RTT sample.
    pacing_rate: Option<f64>,
    state: BbrState,
    pacing_gain: f64,
    cwnd_gain: f64,

    // Connection inputs as of the latest event.
    bytes_in_flight: u64,
    delivered: u64,
    /// The window was full when a packet left in this round / the last.
    cwnd_limited_this_round: bool,
    cwnd_limited_last_round: bool,
    in_recovery: bool,
    prior_cwnd: u64,
    /// The latest rate sample was application-limited (C.app_limited as the
    /// controller sees it).
    last_app_limited: bool,
    /// RS.newly_acked of the ACK being processed.
    newly_acked: u64,

    // Round counting (draft §5.5.1).
    round_count: u64,
    round_start: bool,
    next_round_delivered: u64,

    // Bandwidth model.
    max_bw_filter: WindowedMax,
    max_bw: f64,
    bw_shortterm: f64,
    bw: f64,
    cycle_count: u64,

    // RTT model.
    min_rtt: Option<Duration>,
    min_rtt_stamp: Option<Instant>,
    probe_rtt_min_delay: Option<Duration>,
    probe_rtt_min_stamp: Option<Instant>,
    probe_rtt_expired: bool,
    /// ProbeRTT fell due during a bandwidth probe and waits for its end
    /// (probe-first rule).
    probe_rtt_pending: bool,
    /// Careful Resume: the saved path's bandwidth; Startup ends when
    /// max_bw reaches [`RESUME_TARGET_SHARE`] of it.
    resume_target_bw: Option<f64>,

    // Aggregation.
    extra_acked_filter: WindowedMax,
    extra_acked: f64,
    extra_acked_interval_start: Option<Instant>,
    extra_acked_delivered: u64,

    // Volume model.
    inflight_longterm: u64,
    inflight_shortterm: u64,

    // Congestion signals.
    bw_latest: f64,
    inflight_latest: u64,
    loss_round_delivered: u64,
    loss_round_start: bool,
    is_loss_in_round: bool,
    loss_events_in_round: u32,
    /// Bytes declared lost in the current loss round.
    lost_in_round: u64,
    /// The link's background loss rate: a moving average of the loss rate of
    /// rounds that ran without a queue (leaky-pipe rule).
    background_loss_rate: f64,
    /// The largest RTT sample of the current loss round.
    round_max_rtt: Option<Duration>,
    /// The smallest RTT sample of the current loss round among packets
    /// sent in ProbeBW_CRUISE since it began (standing-queue rule).
    cruise_round_min_rtt: Option<Duration>,

    /// When ProbeBW_CRUISE began, while in it.
    cruise_since: Option<Instant>,
    /// Packet-to-packet RTT variation, for the standing-queue rule's
    /// allowance on jittery paths.
    jitter: JitterMeter,
    /// The last ProbeBW_CRUISE round ran over a standing queue.
    standing_queue: bool,
    /// The last round of the CRUISE phase before the current one did too.
    previous_cruise_standing: bool,
    /// How far the last CRUISE round's smallest sample sat above min_rtt.
    cruise_queue_delay: Duration,
    /// C.delivered at the last standing-queue cut: losses of packets sent
    /// before it belong to that episode.
    queue_cut_delivered: u64,
    /// The flight when the packet behind the last standing-queue cut left:
    /// where the queue overflowed (CUBIC's W_max).
    queue_loss_inflight: u64,
    /// Cuts the standing-queue rule has made (a metrics field).
    standing_queue_cuts: u64,
    /// The loss round that just ended ran without a queue.
    last_round_queue_free: bool,
    /// C.delivered when the current loss round began.
    loss_round_start_delivered: u64,
    last_lost_packet: Option<u64>,

    // Startup.
    full_bw: f64,
    full_bw_count: u32,
    full_bw_now: bool,
    full_bw_reached: bool,
    drain_start_round: u64,

    // ProbeBW.
    ack_phase: AckPhase,
    is_bw_probe_sample: bool,
    bw_probe_up_acked: u64,
    probe_up_acked_per_inc: u64,
    bw_probe_up_rounds: u32,
    rounds_since_probe_up: u64,
    bw_probe_wait: Duration,
    cycle_stamp: Option<Instant>,
    prev_probe_too_high: bool,
    prev_probe_precautionary: bool,

    // ProbeRTT.
    probe_rtt_done_stamp: Option<Instant>,
    probe_rtt_round_done: bool,
    idle_restart: bool,

    // Undo (draft §5.5.11).
    /// The state left because of the loss episode (Startup, ProbeBW_UP).
    undo_state: Option<BbrState>,
    undo_bw_shortterm: f64,
    undo_inflight_shortterm: u64,
    undo_inflight_longterm: u64,
    /// The verdicts of the congestion events since the episode began.
    undo_verdicts: Vec<LossVerdict>,

    // ECN (`ecn.rs`).
    /// CE marks arrived in the current loss round.
    ce_in_round: bool,
    /// ... and in the one before.
    ce_in_last_round: bool,
    /// Bytes CE marked in the current loss round (marked packets × mss).
    marked_in_round: u64,
    /// CE marks arrived since the last loss episode began: it stays.
    marked_since_loss: bool,
    /// The path's ECN is validated.
    ecn_validated: bool,
    /// CE events received (a metrics field).
    ecn_marks: u64,
    /// `delivered` when a probe's mark last bounded `inflight_longterm`:
    /// samples of packets sent before it carry the flight that was marked.
    mark_cut_delivered: u64,
    /// Startup ended at a mark: Drain holds the flight at
    /// `inflight_longterm` (`ecn.rs`).
    startup_marked: bool,
    /// A probe's CE mark has bounded `inflight_longterm`: the path marks
    /// (the marking-path rule).
    mark_bounded: bool,
    /// The share of the last loss round's delivered bytes CE marked.
    last_round_ce_ratio: f64,

    /// xorshift64 state for the ProbeBW wait draws.
    random: u64,
    last_verdict: Option<LossVerdict>,
    verdicts: VerdictCounts,
}

/// The xorshift seed: any non-zero constant (sift's determinism rule).
const RANDOM_SEED: u64 = 0x9E37_79B9_7F4A_7C15;

impl Bbr {
    /// A controller for packets of `mss` bytes.
    pub fn new(config: BbrConfig, mss: u64) -> Self {
        let config = config.sanitized();
        let mss = mss.max(1);
        let cwnd = config.initial_window_packets * mss;
        Self {
            config,
            mss,
            now: None,
            cwnd,
            pacing_rate: None,
            state: BbrState::Startup,
            pacing_gain: STARTUP_PACING_GAIN,
            cwnd_gain: DEFAULT_CWND_GAIN,
            bytes_in_flight: 0,
            delivered: 0,
            cwnd_limited_this_round: false,
            cwnd_limited_last_round: false,
            in_recovery: false,
            prior_cwnd: 0,
            last_app_limited: false,
            newly_acked: 0,
            round_count: 0,
            round_start: false,
            next_round_delivered: 0,
            max_bw_filter: WindowedMax::default(),
            max_bw: 0.0,
            bw_shortterm: f64::INFINITY,
            bw: 0.0,
            cycle_count: 0,
            min_rtt: None,
            min_rtt_stamp: None,
            probe_rtt_min_delay: None,
            probe_rtt_min_stamp: None,
            probe_rtt_expired: false,
            probe_rtt_pending: false,
            resume_target_bw: None,
            extra_acked_filter: WindowedMax::default(),
            extra_acked: 0.0,
            extra_acked_interval_start: None,
            extra_acked_delivered: 0,
            inflight_longterm: u64::MAX,
            inflight_shortterm: u64::MAX,
            bw_latest: 0.0,
            inflight_latest: 0,
            loss_round_delivered: 0,
            loss_round_start: false,
            is_loss_in_round: false,
            loss_events_in_round: 0,
            lost_in_round: 0,
            background_loss_rate: 0.0,
            round_max_rtt: None,
            cruise_round_min_rtt: None,
            cruise_since: None,
            jitter: JitterMeter::default(),
            standing_queue: false,
            previous_cruise_standing: false,
            cruise_queue_delay: Duration::ZERO,
            queue_cut_delivered: 0,
            queue_loss_inflight: 0,
            standing_queue_cuts: 0,
            last_round_queue_free: false,
            loss_round_start_delivered: 0,
            last_lost_packet: None,
            full_bw: 0.0,
            full_bw_count: 0,
            full_bw_now: false,
            full_bw_reached: false,
            drain_start_round: 0,
            ack_phase: AckPhase::Init,
            is_bw_probe_sample: false,
            bw_probe_up_acked: 0,
            probe_up_acked_per_inc: u64::MAX,
            bw_probe_up_rounds: 0,
            rounds_since_probe_up: 0,
            bw_probe_wait: Duration::ZERO,
            cycle_stamp: None,
            prev_probe_too_high: false,
            prev_probe_precautionary: false,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            idle_restart: false,
            undo_state: None,
            undo_bw_shortterm: f64::INFINITY,
            undo_inflight_shortterm: u64::MAX,
            undo_inflight_longterm: u64::MAX,
            undo_verdicts: Vec::new(),
            ce_in_round: false,
            ce_in_last_round: false,
            marked_in_round: 0,
            marked_since_loss: false,
            ecn_validated: false,
            ecn_marks: 0,
            mark_cut_delivered: 0,
            startup_marked: false,
            mark_bounded: false,
            last_round_ce_ratio: 0.0,
            random: RANDOM_SEED,
            last_verdict: None,
            verdicts: VerdictCounts::default(),
        }
    }

    /// The state the machine is in.
    pub fn state(&self) -> BbrState {
        self.state
    }

    /// BBR.bw in bytes per second.
    pub fn bandwidth(&self) -> f64 {
        self.bw
    }

    /// BBR.max_bw in bytes per second.
    pub fn max_bandwidth(&self) -> f64 {
        self.max_bw
    }

    /// BBR.min_rtt, once sampled.
    pub fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }

    /// BBR.inflight_longterm in bytes (`u64::MAX` while unbounded).
    pub fn inflight_longterm(&self) -> u64 {
        self.inflight_longterm
    }

    /// BBR.inflight_shortterm in bytes (`u64::MAX` while unbounded).
    pub fn inflight_shortterm(&self) -> u64 {
        self.inflight_shortterm
    }

    /// BBR.bw_shortterm in bytes per second (infinite while unbounded).
    pub fn bw_shortterm(&self) -> f64 {
        self.bw_shortterm
    }

    fn now(&self) -> Instant {
        self.now.unwrap_or_else(Instant::now)
    }

    fn min_pipe_cwnd(&self) -> u64 {
        MIN_PIPE_CWND_PACKETS * self.mss
    }

    fn initial_cwnd(&self) -> u64 {
        self.config.initial_window_packets * self.mss
    }

    /// Whether a packet leaving an empty pipe restarts from idle: the sender
    /// was application-limited.
    fn idle_restart_candidate(&self) -> bool {
        self.last_app_limited
    }

    fn is_cwnd_limited(&self) -> bool {
        self.cwnd_limited_this_round || self.cwnd_limited_last_round
    }

    /// A uniform draw in [0, 1), deterministic for the run.
    fn random_unit(&mut self) -> f64 {
        self.random ^= self.delivered.wrapping_mul(0x2545_F491_4F6C_DD1D);
        if self.random == 0 {
            self.random = RANDOM_SEED;
        }
        self.random ^= self.random << 13;
        self.random ^= self.random >> 7;
        self.random ^= self.random << 17;
        (self.random >> 11) as f64 / (1u64 << 53) as f64
    }

    // ---- per-ACK model updates (draft §5.2.3) ---------------------------

    fn update_latest_delivery_signals(&mut self, rs: &RateSample) {
        self.loss_round_start = false;
        self.bw_latest = self.bw_latest.max(rs.delivery_rate);
        self.inflight_latest = self.inflight_latest.max(rs.delivered);
        if rs.prior_delivered >= self.loss_round_delivered {
            self.loss_round_delivered = self.delivered;
            self.loss_round_start = true;
        }
    }

    fn advance_latest_delivery_signals(&mut self, rs: &RateSample) {
        if self.loss_round_start {
            self.bw_latest = rs.delivery_rate;
            self.inflight_latest = rs.delivered;
        }
    }

    fn reset_congestion_signals(&mut self) {
        self.is_loss_in_round = false;
        self.loss_events_in_round = 0;
        self.lost_in_round = 0;
        self.loss_round_start_delivered = self.delivered;
        self.bw_latest = 0.0;
        self.inflight_latest = 0;
    }

    fn update_congestion_signals(&mut self, rs: &RateSample) {
        self.update_max_bw(rs);
        if !self.loss_round_start {
            return;
        }
        let delivered = self
            .delivered
            .saturating_sub(self.loss_round_start_delivered);
        let round_loss_rate =
            self.lost_in_round as f64 / (delivered + self.lost_in_round).max(1) as f64;
        self.last_round_queue_free = self.round_was_queue_free();
        if self.config.background_loss_tolerance && self.last_round_queue_free {
            // Losses with no queue are the link's own.
            let rate = round_loss_rate.min(MAX_BACKGROUND_LOSS_RATE);
            self.background_loss_rate = (self.background_loss_rate * (BACKGROUND_LOSS_GAIN - 1.0)
                + rate)
                / BACKGROUND_LOSS_GAIN;
        }
        self.adapt_lower_bounds_from_congestion(round_loss_rate);
        self.end_marked_round(delivered);
        self.note_standing_queue();
        self.is_loss_in_round = false;
        self.lost_in_round = 0;
        self.loss_round_start_delivered = self.delivered;
        self.round_max_rtt = None;
        self.cruise_round_min_rtt = None;
    }

    /// Whether every RTT sample of the loss round stayed within an eighth of
    /// min_rtt of it (the fraction RFC 9406 takes for a real RTT rise): the
    /// path held no standing queue.
    fn round_was_queue_free(&self) -> bool {
        match (self.round_max_rtt, self.min_rtt) {
            (Some(max), Some(min)) => max <= min + min / QUEUE_FREE_RTT_DIVISOR,
            _ => false,
        }
    }

    fn adapt_lower_bounds_from_congestion(&mut self, round_loss_rate: f64) {
        if self.is_probing_bw() {
            return;
        }
        // CE marks are congestion whatever the RTT or the loss rate say.
        let marked = self.ce_in_round;
        if !marked
            && self.config.background_loss_tolerance
            && self.last_round_queue_free
            && round_loss_rate <= self.loss_thresh()
        {
            // No queue, and within what the link loses on its own: lift any
            // short-term cut now.
            self.reset_short_term_model();
            return;
        }
        if !marked && (!self.is_loss_in_round || self.loss_is_links_by_ecn()) {
            return;
        }
        // InitLowerBounds, then LossLowerBounds.
        if self.bw_shortterm.is_infinite() {
            self.bw_shortterm = self.max_bw;
        }
        if self.inflight_shortterm == u64::MAX {
            self.inflight_shortterm = self.cwnd;
        }
        self.bw_shortterm = self.bw_latest.max(BETA * self.bw_shortterm);
        self.inflight_shortterm = self
            .inflight_latest
            .max((BETA * self.inflight_shortterm as f64) as u64);
    }

    fn reset_short_term_model(&mut self) {
        self.bw_shortterm = f64::INFINITY;
        self.inflight_shortterm = u64::MAX;
    }

    fn bound_bw_for_model(&mut self) {
        self.bw = self.max_bw.min(self.bw_shortterm);
    }

    fn update_round(&mut self, rs: &RateSample) {
        if rs.prior_delivered >= self.next_round_delivered {
            self.start_round();
            self.round_count += 1;
            self.rounds_since_probe_up += 1;
            self.round_start = true;
            self.cwnd_limited_last_round = self.cwnd_limited_this_round;
            self.cwnd_limited_this_round = false;
        } else {
            self.round_start = false;
        }
    }

    fn start_round(&mut self) {
        self.next_round_delivered = self.delivered;
    }

    fn update_max_bw(&mut self, rs: &RateSample) {
        self.update_round(rs);
        if rs.delivery_rate > 0.0 && (rs.delivery_rate >= self.max_bw || !rs.is_app_limited) {
            self.max_bw =
                self.max_bw_filter
                    .update(rs.delivery_rate, self.cycle_count, MAX_BW_FILTER_LEN);
        }
    }

    fn advance_max_bw_filter(&mut self) {
        self.cycle_count += 1;
        self.max_bw_filter
            .expire(self.cycle_count, MAX_BW_FILTER_LEN);
    }

    fn update_ack_aggregation(&mut self, newly_acked: u64) {
        let now = self.now();
        let start = *self.extra_acked_interval_start.get_or_insert(now);
        let interval = now.saturating_duration_since(start).as_secs_f64();
        let mut expected = self.bw * interval;
        if self.extra_acked_delivered as f64 <= expected {
            self.extra_acked_delivered = 0;
            self.extra_acked_interval_start = Some(now);
            expected = 0.0;
        }
        self.extra_acked_delivered += newly_acked;
        let extra = (self.extra_acked_delivered as f64 - expected).min(self.cwnd as f64);
        let window = if self.full_bw_reached {
            EXTRA_ACKED_FILTER_LEN
        } else {
            1
        };
        self.extra_acked = self
            .extra_acked_filter
            .update(extra, self.round_count, window);
    }

    fn reset_full_bw(&mut self) {
        self.full_bw = 0.0;
        self.full_bw_count = 0;
        self.full_bw_now = false;
    }

    fn check_full_bw_reached(&mut self, rs: &RateSample) {
        if let Some(target) = self.resume_target_bw {
            if self.state == BbrState::Startup && self.max_bw >= RESUME_TARGET_SHARE * target {
                // The path carries what it carried before: the pipe is full.
                self.resume_target_bw = None;
                self.full_bw_now = true;
                self.full_bw_reached = true;
                return;
            }
        }
        if self.full_bw_now || !self.round_start || rs.is_app_limited {
            return;
        }
        if rs.delivery_rate >= self.full_bw * FULL_BW_GROWTH {
            self.reset_full_bw();
            self.full_bw = rs.delivery_rate;
            return;
        }
        self.full_bw_count += 1;
        self.full_bw_now = self.full_bw_count >= FULL_BW_ROUNDS;
        if self.full_bw_now {
            self.full_bw_reached = true;
        }
    }

    /// The loss rate BBR tolerates: LossThresh, above the background loss
    /// rate under the leaky-pipe rule.
    pub(super) fn loss_thresh(&self) -> f64 {
        if self.config.background_loss_tolerance {
            self.config.loss_threshold + self.background_loss_rate
        } else {
            self.config.loss_threshold
        }
    }

    fn is_inflight_too_high(&self, rs: &RateSample) -> bool {
        rs.lost as f64 > rs.tx_in_flight as f64 * self.loss_thresh()
    }

    fn check_startup_done(&mut self, rs: &RateSample) {
        self.check_startup_high_loss(rs);
        if self.state == BbrState::Startup && self.full_bw_reached {
            self.enter_drain();
        }
    }

    /// draft §5.3.1.3 (see the module docs for the criteria used).
    fn check_startup_high_loss(&mut self, rs: &RateSample) {
        if !self.loss_round_start {
            return;
        }
        // Under the leaky-pipe rule, losses in a round without a queue did
        // not come from Startup overfilling the pipe.
        let queue_free_exempt = (self.config.background_loss_tolerance
            && self.last_round_queue_free)
            || self.loss_is_links_by_ecn();
        if self.state == BbrState::Startup
            && !self.full_bw_reached
            && !queue_free_exempt
            && self.loss_events_in_round >= STARTUP_FULL_LOSS_COUNT
            && self.is_inflight_too_high(rs)
        {
            self.undo_state = Some(BbrState::Startup);
            self.full_bw_reached = true;
            self.inflight_longterm = self.bdp_multiple(1.0).max(self.inflight_latest);
        }
        // The count covers one loss round.
        self.loss_events_in_round = 0;
    }

    fn enter_startup(&mut self) {
        self.state = BbrState::Startup;
        self.pacing_gain = STARTUP_PACING_GAIN;
        self.cwnd_gain = DEFAULT_CWND_GAIN;
    }

    fn enter_drain(&mut self) {
        self.state = BbrState::Drain;
        self.pacing_gain = DRAIN_PACING_GAIN;
        self.cwnd_gain = DEFAULT_CWND_GAIN;
        self.drain_start_round = self.round_count;
    }

    fn check_drain_done(&mut self) {
        if self.state == BbrState::Drain
            && (self.bytes_in_flight <= self.inflight(1.0)
                || self.round_count > self.drain_start_round + 3)
        {
            self.enter_probe_bw();
        }
    }

    fn update_min_rtt(&mut self, ack: &AckEvent) {
        let now = self.now();
        self.probe_rtt_expired = self
            .probe_rtt_min_stamp
            .is_some_and(|stamp| now > stamp + PROBE_RTT_INTERVAL);
        if ack.rtt_sampled {
            let rtt = ack.rtt.latest;
            self.round_max_rtt = Some(self.round_max_rtt.map_or(rtt, |m| m.max(rtt)));
            self.jitter.on_sample(rtt);
            self.note_cruise_rtt(rtt, ack.largest_acked_sent_time);
            if self.probe_rtt_min_delay.is_none_or(|m| rtt < m) || self.probe_rtt_expired {
                self.probe_rtt_min_delay = Some(rtt);
                self.probe_rtt_min_stamp = Some(now);
            } else if self.config.queue_free_samples_renew_min_rtt
                && self
                    .probe_rtt_min_delay
                    .is_some_and(|m| rtt <= m + m / MIN_RTT_CONFIRM_DIVISOR)
            {
                // As good as what ProbeRTT would see: renew the stamps.
                self.probe_rtt_min_stamp = Some(now);
                if self.min_rtt == self.probe_rtt_min_delay {
                    self.min_rtt_stamp = Some(now);
                }
            }
        }
        let min_rtt_expired = self
            .min_rtt_stamp
            .is_some_and(|stamp| now > stamp + MIN_RTT_FILTER_LEN);
        if let Some(delay) = self.probe_rtt_min_delay {
            if self.min_rtt.is_none_or(|m| delay < m) || min_rtt_expired {
                self.min_rtt = Some(delay);
                self.min_rtt_stamp = self.probe_rtt_min_stamp;
            }
        }
    }

    fn check_probe_rtt(&mut self, rs: &RateSample) {
        let due = self.probe_rtt_expired || self.probe_rtt_pending;
        if self.state != BbrState::ProbeRtt && due && !self.idle_restart && self.probe_rtt_waits() {
            self.probe_rtt_pending = true;
        } else if self.state != BbrState::ProbeRtt && due && !self.idle_restart {
            self.probe_rtt_pending = false;
            self.enter_probe_rtt();
            self.save_cwnd();
            self.probe_rtt_done_stamp = None;
            self.ack_phase = AckPhase::ProbeStopping;
            self.start_round();
        }
        if self.state == BbrState::ProbeRtt {
            self.handle_probe_rtt();
        }
        if rs.delivered > 0 {
            self.idle_restart = false;
        }
    }

    /// Whether a due ProbeRTT waits for the bandwidth probe in progress
    /// (probe-first rule): ProbeBW_DOWN, where the probe ends, lets it in.
    fn probe_rtt_waits(&self) -> bool {
        self.config.probe_rtt_waits_for_bw_probe
            && matches!(self.state, BbrState::ProbeBwRefill | BbrState::ProbeBwUp)
    }

    fn enter_probe_rtt(&mut self) {
        self.state = BbrState::ProbeRtt;
        self.pacing_gain = 1.0;
        self.cwnd_gain = PROBE_RTT_CWND_GAIN;
    }

    fn handle_probe_rtt(&mut self) {
        let now = self.now();
        if self.probe_rtt_done_stamp.is_none() && self.bytes_in_flight <= self.probe_rtt_cwnd() {
            self.probe_rtt_done_stamp = Some(now + PROBE_RTT_DURATION);
            self.probe_rtt_round_done = false;
            self.start_round();
        } else if self.probe_rtt_done_stamp.is_some() {
            if self.round_start {
                self.probe_rtt_round_done = true;
            }
            if self.probe_rtt_round_done {
                self.check_probe_rtt_done();
            }
        }
    }

    fn check_probe_rtt_done(&mut self) {
        let now = self.now();
        if self.probe_rtt_done_stamp.is_some_and(|done| now > done) {
            self.probe_rtt_min_stamp = Some(now);
            self.restore_cwnd();
            self.exit_probe_rtt();
        }
    }

    fn exit_probe_rtt(&mut self) {
        self.reset_short_term_model();
        if self.full_bw_reached {
            self.start_probe_bw_down();
            self.start_probe_bw_cruise();
        } else {
            self.enter_startup();
        }
    }

    // ---- control parameters (draft §5.6) --------------------------------

    fn bdp_multiple(&self, gain: f64) -> u64 {
        let Some(min_rtt) = self.min_rtt else {
            return self.initial_cwnd();
        };
        (gain * self.bw * min_rtt.as_secs_f64()) as u64
    }

    fn send_quantum(&self) -> u64 {
        let rate = self.pacing_rate.unwrap_or(0.0);
        ((rate / 1000.0) as u64).clamp(2 * self.mss, MAX_SEND_QUANTUM.max(2 * self.mss))
    }

    fn quantization_budget(&self, inflight: u64) -> u64 {
        // QUIC's offload budget is one send quantum (draft §5.5.8.2).
        let mut cap = inflight.max(self.send_quantum()).max(self.min_pipe_cwnd());
        if self.state == BbrState::ProbeBwUp {
            cap += 2 * self.mss;
        }
        cap
    }

    fn inflight(&self, gain: f64) -> u64 {
        self.quantization_budget(self.bdp_multiple(gain))
    }

    fn max_inflight(&self) -> u64 {
        let cap = self.bdp_multiple(self.cwnd_gain) + self.extra_acked as u64;
        self.quantization_budget(cap)
    }

    fn probe_rtt_cwnd(&self) -> u64 {
        self.bdp_multiple(PROBE_RTT_CWND_GAIN)
            .max(self.min_pipe_cwnd())
    }

    fn set_pacing_rate_with_gain(&mut self, gain: f64) {
        let rate = gain * self.bw * (100.0 - PACING_MARGIN_PERCENT) / 100.0;
        if self.full_bw_reached || self.pacing_rate.is_none_or(|current| rate > current) {
            self.pacing_rate = Some(rate);
        }
    }

    fn set_cwnd(&mut self, newly_acked: u64) {
        let max_inflight = self.max_inflight();
        if self.full_bw_reached {
            self.cwnd = (self.cwnd + newly_acked).min(max_inflight);
        } else if self.cwnd < max_inflight || self.delivered < self.initial_cwnd() {
            self.cwnd += newly_acked;
        }
        self.cwnd = self.cwnd.max(self.min_pipe_cwnd());
        if self.state == BbrState::ProbeRtt {
            self.cwnd = self.cwnd.min(self.probe_rtt_cwnd());
        }
        self.bound_cwnd_for_model();
    }

    fn bound_cwnd_for_model(&mut self) {
        let mut cap = u64::MAX;
        if let Some(marked_cap) = self.marked_path_cap() {
            cap = marked_cap;
        } else if self.state.is_probe_bw() && self.state != BbrState::ProbeBwCruise {
            cap = self.inflight_longterm;
        } else if matches!(self.state, BbrState::ProbeRtt | BbrState::ProbeBwCruise) {
            cap = self.inflight_with_headroom();
        } else if self.state == BbrState::Drain && self.startup_marked {
            // sift's (`ecn.rs`): the draft leaves Drain's window at 2·BDP.
            cap = self.inflight_longterm;
        }
        cap = cap.min(self.inflight_shortterm).max(self.min_pipe_cwnd());
        self.cwnd = self.cwnd.min(cap);
    }

    /// SaveStateUponLoss (draft §5.5.11.1).
    fn save_state_upon_loss(&mut self) {
        self.save_cwnd();
        self.marked_since_loss = self.ce_in_round;
        self.undo_state = None;
        self.undo_bw_shortterm = self.bw_shortterm;
        self.undo_inflight_shortterm = self.inflight_shortterm;
        self.undo_inflight_longterm = self.inflight_longterm;
        self.undo_verdicts.clear();
    }

    fn save_cwnd(&mut self) {
        self.prior_cwnd = if !self.in_recovery && self.state != BbrState::ProbeRtt {
            self.cwnd
        } else {
            self.prior_cwnd.max(self.cwnd)
        };
    }

    fn restore_cwnd(&mut self) {
        self.cwnd = self.cwnd.max(self.prior_cwnd);
    }

    /// A rate sample for events that carry none (synthetic or unsampled
    /// ACKs): the ACK's own volume, no rate.
    fn sample_of(&self, ack: &AckEvent) -> RateSample {
        ack.rate.unwrap_or(RateSample {
            delivered: ack.acked_bytes,
            prior_delivered: self.delivered,
            delivered_total: self.delivered + ack.acked_bytes,
            tx_in_flight: ack.bytes_in_flight + ack.acked_bytes,
            ..RateSample::default()
        })
    }

    fn phase(&self) -> Phase {
        if self.in_recovery {
            Phase::Recovery
        } else if self.state == BbrState::Startup {
            Phase::SlowStart
        } else {
            Phase::CongestionAvoidance
        }
    }
}

impl CongestionControl for Bbr {
    fn on_sent(&mut self, now: Instant, bytes: u64, bytes_in_flight: u64) {
        self.now = Some(now);
        // HandleRestartFromIdle (draft §5.4.1): the first packet after idle.
        if bytes_in_flight == bytes && self.idle_restart_candidate() {
            self.idle_restart = true;
            self.extra_acked_interval_start = Some(now);
            if self.state.is_probe_bw() {
                self.set_pacing_rate_with_gain(1.0);
            } else if self.state == BbrState::ProbeRtt {
                self.check_probe_rtt_done();
            }
        }
        self.bytes_in_flight = bytes_in_flight;
        if bytes_in_flight >= self.cwnd.saturating_sub(self.mss) {
            self.cwnd_limited_this_round = true;
        }
    }

    fn on_ack(&mut self, ack: &AckEvent) {
        self.now = Some(ack.now);
        self.bytes_in_flight = ack.bytes_in_flight;
        let mut rs = self.sample_of(ack);
        if self.state == BbrState::ProbeRtt {
            // The draft marks the connection app-limited in ProbeRTT; the
            // sampler lives in recovery, so the mark is applied here.
            rs.is_app_limited = true;
        }
        self.delivered = rs.delivered_total;
        self.last_app_limited = rs.is_app_limited;
        self.newly_acked = ack.acked_bytes;
        if self.in_recovery && !ack.in_recovery {
            // Recovery is over: back to the last known good window.
            self.in_recovery = false;
            self.restore_cwnd();
        }
        if ack.rtt_sampled && self.pacing_rate.is_none() && !ack.rtt.smoothed.is_zero() {
            // InitPacingRate at the first RTT sample.
            let nominal = self.initial_cwnd() as f64 / ack.rtt.smoothed.as_secs_f64();
            self.pacing_rate = Some(STARTUP_PACING_GAIN * nominal);
        }

        // UpdateModelAndState.
        self.update_latest_delivery_signals(&rs);
        self.update_congestion_signals(&rs);
        self.update_ack_aggregation(ack.acked_bytes);
        self.check_full_bw_reached(&rs);
        self.check_startup_done(&rs);
        self.check_drain_done();
        self.update_probe_bw_cycle_phase(&rs);
        self.update_min_rtt(ack);
        self.check_probe_rtt(&rs);
        self.advance_latest_delivery_signals(&rs);
        self.bound_bw_for_model();

        // UpdateControlParameters.
        if self.bw > 0.0 {
            self.set_pacing_rate_with_gain(self.pacing_gain);
        }
        self.set_cwnd(ack.acked_bytes);
    }

    fn on_packets_lost(&mut self, ev: &PacketsLost) {
        self.now = Some(ev.now);
        self.bytes_in_flight = ev.bytes_in_flight;
        self.delivered = ev.delivered_total;
        for packet in &ev.packets {
            // NoteLoss, counting discontiguous lost ranges for Startup.
            if !self.is_loss_in_round {
                self.loss_round_delivered = self.delivered;
                self.save_state_upon_loss();
            }
            self.is_loss_in_round = true;
            self.lost_in_round += packet.size;
            if self
                .last_lost_packet
                .is_none_or(|last| packet.packet_number != last + 1)
            {
                self.loss_events_in_round += 1;
            }
            self.last_lost_packet = Some(packet.packet_number);
            self.handle_lost_packet(packet, ev.lost_total);
            self.respond_to_standing_queue_loss(packet);
        }
    }

    fn on_congestion(&mut self, ev: &LossEvent) -> LossVerdict {
        self.now = Some(ev.now);
        self.bytes_in_flight = ev.bytes_in_flight;
        self.save_cwnd();
        if ev.persistent {
            // OnEnterRTO: room for one packet.
            self.cwnd = ev.bytes_in_flight + self.mss;
        } else {
            self.in_recovery = true;
        }
        let flight = (ev.bytes_in_flight + ev.lost_bytes).max(1) as f64;
        let verdict = if let Some(verdict) = self.ecn_loss_verdict(ev.persistent) {
            verdict
        } else if ev.persistent || ev.lost_bytes as f64 > flight * self.config.loss_threshold {
            LossVerdict::Congestive
        } else {
            LossVerdict::Random
        };
        self.last_verdict = Some(verdict);
        self.verdicts.count(verdict);
        self.undo_verdicts.push(verdict);
        verdict
    }

    /// HandleSpuriousLossDetection (draft §5.5.11.2).
    fn on_spurious_congestion(&mut self, _ev: &SpuriousCongestionEvent) {
        self.restore_cwnd();
        self.in_recovery = false;
        if self.marked_since_loss {
            // CE marks confirmed the episode: its model cuts stay.
            return;
        }
        self.is_loss_in_round = false;
        self.reset_full_bw();
        self.bw_shortterm = self.bw_shortterm.max(self.undo_bw_shortterm);
        self.inflight_shortterm = self.inflight_shortterm.max(self.undo_inflight_shortterm);
        self.inflight_longterm = self.inflight_longterm.max(self.undo_inflight_longterm);
        match self.undo_state {
            Some(BbrState::Startup) if self.state != BbrState::Startup => {
                self.full_bw_reached = false;
                if self.state != BbrState::ProbeRtt {
                    self.enter_startup();
                }
            }
            Some(BbrState::ProbeBwUp)
                if self.state != BbrState::ProbeBwUp && self.state != BbrState::ProbeRtt =>
            {
                self.start_probe_bw_refill();
            }
            _ => {}
        }
        self.undo_state = None;
        for verdict in self.undo_verdicts.drain(..) {
            self.verdicts.withdraw(verdict);
        }
        self.bound_bw_for_model();
    }

    fn on_ecn(&mut self, ev: &EcnEvent) {
        self.note_marks(ev);
    }

    fn on_ecn_validated(&mut self, validated: bool) {
        self.ecn_validated = validated;
    }

    fn set_mss(&mut self, mss: u64) {
        self.mss = mss;
        self.cwnd = self.cwnd.max(self.min_pipe_cwnd());
    }

    /// Careful Resume's window (RFC 9959 phase change). With `ssthresh`
    /// (the end of a Safe Retreat) the seeded bandwidth is dropped: the
    /// model restarts from what the retreat window carries per min RTT.
    fn set_window(&mut self, cwnd: u64, ssthresh: Option<u64>) {
        self.cwnd = cwnd.max(self.mss * MIN_PIPE_CWND_PACKETS);
        if ssthresh.is_some() {
            self.resume_target_bw = None;
            let rtt = self.min_rtt.map_or(1.0, |rtt| rtt.as_secs_f64().max(1e-6));
            self.max_bw_filter = WindowedMax::default();
            self.max_bw =
                self.max_bw_filter
                    .update(cwnd as f64 / rtt, self.cycle_count, MAX_BW_FILTER_LEN);
            self.reset_full_bw();
        }
    }

    /// Careful Resume jumped: seed max_bw and min_rtt from the saved path
    /// (picoquic's BDP seed), so Startup goes on from the saved model.
    fn seed_path_model(&mut self, bandwidth: f64, min_rtt: Duration) {
        self.max_bw = self
            .max_bw_filter
            .update(bandwidth, self.cycle_count, MAX_BW_FILTER_LEN);
        if self.min_rtt.is_none_or(|known| min_rtt < known) {
            self.min_rtt = Some(min_rtt);
            self.min_rtt_stamp = self.now;
        }
    }

    /// Careful Resume validated its jump: Startup ends once max_bw reaches
    /// (7/8 of) the saved path's bandwidth instead of overshooting it by
    /// Startup's gain for the three rounds its plateau test needs.
    fn set_startup_target(&mut self, bandwidth: f64) {
        if self.state == BbrState::Startup && !self.full_bw_reached && bandwidth > 0.0 {
            self.resume_target_bw = Some(bandwidth);
        }
    }

    fn window(&self) -> u64 {
        self.cwnd
    }

    fn ssthresh(&self) -> u64 {
        u64::MAX
    }

    fn pacing_rate(&self) -> Option<u64> {
        self.pacing_rate.map(|rate| rate.max(1.0) as u64)
    }

    fn metrics(&self) -> Metrics {
        let mut metrics = Metrics {
            algorithm: "bbr".into(),
            cwnd: self.cwnd,
            ssthresh: u64::MAX,
            phase: self.phase(),
            last_verdict: self.last_verdict,
            fields: Default::default(),
        };
        let bounded = |bytes: u64| {
            if bytes == u64::MAX {
                -1.0
            } else {
                bytes as f64
            }
        };
        let f = &mut metrics.fields;
        f.insert("state".into(), self.state.index());
        f.insert("bw_bps".into(), self.bw * 8.0);
        f.insert("max_bw_bps".into(), self.max_bw * 8.0);
        f.insert(
            "pacing_rate_bps".into(),
            self.pacing_rate.unwrap_or(0.0) * 8.0,
        );
        f.insert(
            "min_rtt_ms".into(),
            self.min_rtt.map_or(0.0, |rtt| rtt.as_secs_f64() * 1e3),
        );
        f.insert("pacing_gain".into(), self.pacing_gain);
        f.insert("cwnd_gain".into(), self.cwnd_gain);
        f.insert(
            "inflight_longterm_bytes".into(),
            bounded(self.inflight_longterm),
        );
        f.insert(
            "inflight_shortterm_bytes".into(),
            bounded(self.inflight_shortterm),
        );
        f.insert("round_count".into(), self.round_count as f64);
        f.insert(
            "standing_queue".into(),
            f64::from(u8::from(self.standing_queue)),
        );
        f.insert(
            "standing_queue_ms".into(),
            self.cruise_queue_delay.as_secs_f64() * 1e3,
        );
        f.insert(
            "standing_queue_cuts".into(),
            self.standing_queue_cuts as f64,
        );
        f.insert(
            "full_bw_reached".into(),
            f64::from(u8::from(self.full_bw_reached)),
        );
        f.insert("ecn_marks".into(), self.ecn_marks as f64);
        f.insert("ce_ratio".into(), self.last_round_ce_ratio);
        self.verdicts.insert_into(f);
        metrics
    }
}

#[cfg(test)]
mod tests;
