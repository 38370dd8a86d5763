//! sift-cc: congestion controllers behind one trait.
//!
//! A controller is a plain struct fed events by the recovery module. It owns no
//! timers and never reads the clock: every event carries `now`. Windows are in
//! bytes; the papers speak in packets, so every controller is built with the
//! connection's maximum segment size (`mss`) and converts.
//!
//! Shared parts, each written once:
//! - `window.rs`: [`WindowCore`], the window every loss-based controller
//!   (Reno, Westwood, Veno, Vegas, Westwood-A, CUBIC) embeds. It owns `mss`,
//!   `cwnd`, `ssthresh`, Reno's additive-increase credit, the recovery flag
//!   and the undo of a spurious cut, and the operations that are the same
//!   for all of them (`set_mss`, Careful Resume's `set_window`, saving and
//!   undoing a cut, the phase). How a window grows and how much a loss cuts
//!   stay in each controller's file. BBR is model-based and keeps its own.
//! - `ranges.rs`: one table of valid ranges per config, from which both
//!   `validate` and `sanitized` read.
//! - `queue_estimate.rs`, `rounds.rs`, `hystart.rs`: the BaseRTT and
//!   queueing-delay estimators, round counting and HyStart++ slow start.
//! - `ecn.rs`: [`EcnMemory`], what a controller remembers of ECN (CE
//!   arrivals, validation, rounds) for the rule that a CE mark is never
//!   random and the option that judges an unmarked loss random on a
//!   validated path (DESIGN §6.1).
//!
//! This crate knows nothing of `sift`: the dependency points one way only.
//! The decisions behind each controller are §6 of the repository's
//! `docs/design.md` (cited in comments as "DESIGN §6").

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::str::FromStr;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

pub mod bbr;
pub mod careful_resume;
pub mod cubic;
pub mod ecn;
pub mod hystart;
pub mod prague;
pub mod queue_estimate;
mod ranges;
pub mod reno;
pub mod rounds;
pub mod vegas;
pub mod veno;
pub mod veno_enhanced;
pub mod westwood;
pub mod westwood_a;
pub mod window;

#[cfg(test)]
mod config_tests;
#[cfg(test)]
mod ecn_tests;
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod undo_tests;

pub use bbr::{Bbr, BbrConfig};
pub use careful_resume::{
    CarefulResume, CarefulResumeChange, CarefulResumeConfig, CarefulResumePhase,
    CarefulResumeStatus, CarefulResumeTrigger, SavedPath,
};
pub use cubic::{Cubic, CubicConfig};
pub use ecn::EcnMemory;
pub use prague::{Prague, PragueConfig};
pub use queue_estimate::{BaseRttReset, QueueEstimate};
pub use reno::{Reno, RenoConfig};
pub use vegas::{Vegas, VegasConfig, VegasPhaseGroup};
pub use veno::{Veno, VenoConfig};
pub use veno_enhanced::VenoEnhanced;
pub use westwood::{BandwidthSampling, Westwood, WestwoodConfig};
pub use westwood_a::{WestwoodA, WestwoodAConfig};
pub use window::{AdditiveIncrease, WindowBytes, WindowCore, WindowUndo};

/// The three views of round-trip time the recovery module keeps (RFC 9002 §5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RttSample {
    /// The sample taken from this ACK (`latest_rtt`).
    pub latest: Duration,
    /// The smallest sample over the connection (`min_rtt`).
    pub min: Duration,
    /// The exponentially weighted mean (`smoothed_rtt`).
    pub smoothed: Duration,
    /// The mean deviation (`rttvar`).
    pub variance: Duration,
}

/// What one ACK frame newly acknowledged. Delivered once per ACK frame that
/// acknowledges at least one new ack-eliciting packet.
#[derive(Clone, Debug)]
pub struct AckEvent {
    /// When the ACK was processed.
    pub now: Instant,
    /// Bytes newly acknowledged by this ACK (exact, from the ACK ranges).
    pub acked_bytes: u64,
    /// Packets newly acknowledged by this ACK.
    pub acked_packets: u64,
    /// Largest packet number newly acknowledged.
    pub largest_acked: u64,
    /// When the largest newly acknowledged packet was sent.
    pub largest_acked_sent_time: Instant,
    /// RTT estimates after this ACK was applied. `latest` is a fresh sample only
    /// if `rtt_sampled` is true.
    pub rtt: RttSample,
    /// Whether this ACK produced an RTT sample (its largest acked was newly
    /// acked and ack-eliciting).
    pub rtt_sampled: bool,
    /// Bytes in flight after the acknowledged packets were removed.
    pub bytes_in_flight: u64,
    /// The sender was application-limited when the acked packets were sent:
    /// the window must not grow (RFC 9002 §7.8).
    pub app_limited: bool,
    /// Every newly acked packet was sent before the current recovery period
    /// began: the window must not grow, estimators may still update.
    pub in_recovery: bool,
    /// The delivery-rate sample this ACK produced (draft-cheng-iccrg-
    /// delivery-rate-estimation), for controllers that model the path's
    /// bandwidth; `None` when the sender does not sample (synthetic events).
    pub rate: Option<RateSample>,
}

/// One delivery-rate sample (draft-cheng-iccrg-delivery-rate-estimation §3,
/// the `rs` of draft-ietf-ccwg-bbr §2.3), taken from the most recently sent
/// packet an ACK newly acknowledged. Volumes are bytes; the sender counts a
/// packet named in a CORRUPTED frame as delivered (it crossed the path) and
/// never as lost.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RateSample {
    /// Bytes delivered over `interval` divided by it, in bytes per second;
    /// zero when the interval is shorter than the minimum RTT and so gives
    /// no reliable sample (RS.delivery_rate).
    pub delivery_rate: f64,
    /// The sampling interval: the longer of the send and ACK intervals
    /// (RS.interval).
    pub interval: Duration,
    /// Bytes delivered over the interval (RS.delivered).
    pub delivered: u64,
    /// Total bytes delivered when the sampled packet was sent
    /// (RS.prior_delivered, the packet's P.delivered).
    pub prior_delivered: u64,
    /// Total bytes delivered over the connection, this ACK included
    /// (C.delivered).
    pub delivered_total: u64,
    /// Total bytes declared lost over the connection (C.lost).
    pub lost_total: u64,
    /// Bytes declared lost between the sampled packet's send and this ACK
    /// (RS.lost).
    pub lost: u64,
    /// Bytes in flight just after the sampled packet was sent, itself
    /// included (RS.tx_in_flight).
    pub tx_in_flight: u64,
    /// The sampled packet was sent while the sender was application-limited
    /// (RS.is_app_limited): a low rate says nothing about the path.
    pub is_app_limited: bool,
}

/// What the sender knew when a packet it now declares lost was sent: the
/// per-packet state of draft-cheng-iccrg-delivery-rate-estimation §3.2, which
/// BBR's per-loss step reads (draft-ietf-ccwg-bbr §5.5.10.2
/// `HandleLostPacket`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LostPacket {
    /// Its packet number.
    pub packet_number: u64,
    /// Its size in bytes.
    pub size: u64,
    /// Total bytes delivered when it was sent (P.delivered).
    pub delivered: u64,
    /// Total bytes lost when it was sent (P.lost).
    pub lost: u64,
    /// Bytes in flight just after it was sent, itself included
    /// (P.tx_in_flight).
    pub tx_in_flight: u64,
    /// The sender was application-limited when it was sent.
    pub is_app_limited: bool,
}

/// Packets newly declared lost, reported every time loss detection declares
/// any (unlike [`LossEvent`], which comes once per recovery period).
#[derive(Clone, Debug)]
pub struct PacketsLost {
    /// When they were declared lost.
    pub now: Instant,
    /// The packets, in packet-number order; only packets that counted in
    /// flight.
    pub packets: Vec<LostPacket>,
    /// Total bytes declared lost over the connection, these included (C.lost).
    pub lost_total: u64,
    /// Total bytes delivered over the connection (C.delivered).
    pub delivered_total: u64,
    /// Bytes in flight after they were removed.
    pub bytes_in_flight: u64,
}

/// A congestion event: packets declared lost, at most once per recovery period
/// (or for every loss when the recovery policy turns the one-reduction rule off).
#[derive(Clone, Debug)]
pub struct LossEvent {
    /// When the loss was declared.
    pub now: Instant,
    /// Packet numbers declared lost in this event (for verdict reporting).
    pub lost_packets: Vec<u64>,
    /// Bytes declared lost in this event.
    pub lost_bytes: u64,
    /// When the newest lost packet was sent.
    pub largest_lost_sent_time: Instant,
    /// Bytes in flight after the lost packets were removed.
    pub bytes_in_flight: u64,
    /// RTT estimates at the time of the loss.
    pub rtt: RttSample,
    /// A timeout-class event: RFC 9002 persistent congestion, or a
    /// retransmission timeout under a classic policy. Collapse the window.
    pub persistent: bool,
}

/// The sender learnt (from a CORRUPTED frame) that packets reached the
/// receiver with a good header and a damaged payload: a link error, not a
/// queue overflow (TCP HACK, Balan et al. 2002).
#[derive(Clone, Debug)]
pub struct CorruptionEvent {
    /// When the notice was processed.
    pub now: Instant,
    /// Packet numbers named by the notice that were still outstanding.
    pub corrupted_packets: Vec<u64>,
    /// Their bytes, which have left bytes-in-flight.
    pub corrupted_bytes: u64,
    /// Bytes in flight after they were removed.
    pub bytes_in_flight: u64,
    /// RTT estimates at the time of the notice.
    pub rtt: RttSample,
}

/// The peer's ACK reported more packets marked Congestion Experienced than
/// before (RFC 9000 §13.4.1: the ECN-CE count of an ACK frame grew). A CE
/// mark is congestion the network names outright (RFC 3168; RFC 9002 §7.1):
/// no controller may judge it random. Delivered for every ACK frame whose CE
/// count grew, after that ACK's `on_ack`.
///
/// Marks that arrive inside a recovery period a loss began
/// (`new_congestion_event` false) confirm that period as congestion: a
/// controller that judged its loss random answers again with the congestive
/// branch of its rule, and no controller undoes that period's cut as
/// spurious (RFC 9438 §4.9 undoes only what loss detection got wrong).
#[derive(Clone, Debug)]
pub struct EcnEvent {
    /// When the ACK was processed.
    pub now: Instant,
    /// How much the ECN-CE count grew with this ACK: packets newly reported
    /// marked.
    pub newly_marked: u64,
    /// Packets this ACK newly acknowledged, marked or not: with
    /// `newly_marked`, the marked fraction a scalable controller (Prague,
    /// RFC 9331) averages.
    pub acked_packets: u64,
    /// Bytes this ACK newly acknowledged.
    pub acked_bytes: u64,
    /// When the largest packet this ACK acknowledged was sent: a congestion
    /// response starts its recovery period there (RFC 9002 §B.7
    /// `ProcessECN`).
    pub largest_acked_sent_time: Instant,
    /// The recovery module counts this as a new congestion event: the
    /// largest acknowledged packet was sent after the current recovery
    /// period began. A classic controller reduces once, only then; the
    /// recovery module has already started a new recovery period.
    pub new_congestion_event: bool,
    /// Bytes in flight after the acknowledged packets were removed.
    pub bytes_in_flight: u64,
    /// RTT estimates after this ACK was applied.
    pub rtt: RttSample,
}

impl EcnEvent {
    /// The congestion event the marks amount to under the classic response
    /// (RFC 9002 §7.1): a loss of nothing, its recovery period starting at
    /// the largest acknowledged packet's send time, never a timeout.
    pub fn as_congestion(&self) -> LossEvent {
        LossEvent {
            now: self.now,
            lost_packets: Vec::new(),
            lost_bytes: 0,
            largest_lost_sent_time: self.largest_acked_sent_time,
            bytes_in_flight: self.bytes_in_flight,
            rtt: self.rtt,
            persistent: false,
        }
    }
}

/// The ECN-capable codepoint a controller asks its packets to carry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Ect {
    /// ECT(0), the classic response to CE (RFC 3168): every controller's
    /// default.
    #[default]
    Ect0,
    /// ECT(1): an L4S sender with a scalable response to CE (RFC 9331).
    Ect1,
}

/// A congestion event proved spurious: every packet declared lost in the
/// recovery episode it started was acknowledged after all (reordering or a
/// late ACK, not a drop). The controller restores the state it had just
/// before that event's `on_congestion` (Linux's undo; RFC 9438 §4.9 for
/// CUBIC). Delivered at most once per congestion event, and only for the
/// latest one.
#[derive(Clone, Debug)]
pub struct SpuriousCongestionEvent {
    /// When the last of the episode's packets was acknowledged.
    pub now: Instant,
    /// The `now` of the congestion event being undone.
    pub congestion_at: Instant,
    /// The packet numbers of that congestion event (`LossEvent::lost_packets`).
    pub lost_packets: Vec<u64>,
    /// RTT estimates at the time of the undo.
    pub rtt: RttSample,
}

/// A controller's judgement of why packets were lost. The simulator compares
/// it against ground truth to build the loss-classification confusion matrix
/// (Fu & Liew 2003, Table I).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LossVerdict {
    /// The controller believes the loss came from a full queue.
    Congestive,
    /// The controller believes the loss came from the link (bit errors).
    Random,
}

/// The numbers behind a controller's latest loss verdict, as it saw them
/// when it judged: what a trace shows next to the verdict so a reader can
/// check the arithmetic (Veno's N against β, Westwood's BWE·RTTmin, TCPW-A's
/// ERE·RTTmin against cwnd).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct VerdictBasis {
    /// The verdict these numbers led to.
    pub verdict: LossVerdict,
    /// `(name, value)` pairs under stable names, in the units the name says
    /// (`backlog_packets`, `bwe_bps`, `rtt_min_us`, `ssthresh_bytes`, ...).
    pub values: Vec<(&'static str, f64)>,
}

/// Knobs a controller turns in the recovery module (loss detection), not in
/// its own window arithmetic. Vegas's algorithms C, D and E live here
/// (Hengartner et al., §VI).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecoveryPolicy {
    /// Vegas C: on an ACK that leaves a gap, retransmit the oldest unacked
    /// packet at once if it has been outstanding longer than the fine-grained
    /// timeout (srtt + 4·rttvar), without waiting for the packet threshold.
    pub fine_grained_early_retransmit: bool,
    /// Vegas D: after a retransmission, an ACK that acknowledges new data but
    /// leaves older packets unacked (a partial ACK) retransmits the next
    /// unacked packet at once.
    pub retransmit_on_partial_ack: bool,
    /// Vegas E / RFC 9002 §7.3.2: at most one window reduction per round trip
    /// (recovery period). Off: every loss event reaches `on_congestion`.
    pub one_reduction_per_window: bool,
}

impl Default for RecoveryPolicy {
    /// RFC 9002 behaviour: packet and time thresholds only, one reduction per
    /// recovery period.
    fn default() -> Self {
        Self {
            fine_grained_early_retransmit: false,
            retransmit_on_partial_ack: false,
            one_reduction_per_window: true,
        }
    }
}

/// Where the controller is in its cycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    SlowStart,
    CongestionAvoidance,
    Recovery,
}

/// A snapshot of a controller's state, for `Stats`, logs and simulator time
/// series. `fields` carries algorithm-specific values under stable names
/// (e.g. `backlog_packets` for Veno's N, `bwe_bps` for Westwood).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    pub algorithm: String,
    pub cwnd: u64,
    pub ssthresh: u64,
    pub phase: Phase,
    /// The most recent loss verdict, if the controller has made one.
    pub last_verdict: Option<LossVerdict>,
    #[serde(default)]
    pub fields: BTreeMap<String, f64>,
}

/// A congestion controller. See the module docs for the contract.
pub trait CongestionControl: Send + Debug {
    /// A packet of `bytes` counted in flight was sent; `bytes_in_flight`
    /// includes it.
    fn on_sent(&mut self, now: Instant, bytes: u64, bytes_in_flight: u64);

    /// One ACK frame newly acknowledged data.
    fn on_ack(&mut self, ack: &AckEvent);

    /// Packets were declared lost. Returns the controller's verdict, which the
    /// caller records against the packets in `ev.lost_packets`.
    fn on_congestion(&mut self, ev: &LossEvent) -> LossVerdict;

    /// Packets were reported corrupted by the receiver (HACK). By default the
    /// window is left alone: corruption is not congestion.
    fn on_corruption(&mut self, _ev: &CorruptionEvent) {}

    /// Loss detection declared packets lost; called for every declaration,
    /// before `on_congestion` (which comes at most once per recovery
    /// period). Model-based controllers (BBR) read each packet's send-time
    /// state here; by default nothing happens.
    fn on_packets_lost(&mut self, _ev: &PacketsLost) {}

    /// The latest congestion event proved spurious: restore the state from
    /// just before it (see [`SpuriousCongestionEvent`]). A loss it judged
    /// random or congestive was neither; controllers that count verdicts
    /// move it to their spurious count. The default keeps the reduced
    /// window, for a controller that has nothing to restore.
    fn on_spurious_congestion(&mut self, _ev: &SpuriousCongestionEvent) {}

    /// The peer reported CE marks (see [`EcnEvent`]). The default is the
    /// classic response (RFC 9002 §7.1, RFC 3168): when the marks start a
    /// new congestion event, react as to a congestive loss of nothing, by
    /// calling `on_congestion` with an event that names no lost packet. A
    /// controller that judges losses must override it: a mark is never
    /// random.
    fn on_ecn(&mut self, ev: &EcnEvent) {
        if ev.new_congestion_event {
            let _ = self.on_congestion(&ev.as_congestion());
        }
    }

    /// The path's ECN validation (RFC 9000 §13.4.2) changed: `true` once the
    /// peer's ACKs have shown that marks survive the path and are counted,
    /// `false` when validation failed or the path changed. While it is
    /// `true`, a round with losses and no CE mark is evidence of random loss,
    /// which a loss-differentiating controller may weigh. Ignored by default.
    fn on_ecn_validated(&mut self, _validated: bool) {}

    /// The codepoint this controller's packets carry while ECN is in use.
    fn ect(&self) -> Ect {
        Ect::Ect0
    }

    /// The latest loss verdict and the numbers behind it, for traces;
    /// `None` before the first congestion event, and for controllers that
    /// judge every loss congestive by rule (the default).
    fn verdict_basis(&self) -> Option<VerdictBasis> {
        None
    }

    /// The connection's packets now carry up to `mss` bytes (path MTU
    /// discovery raised the datagram size, or fell back after a black
    /// hole). The window stays in bytes; what the controller counts in
    /// packets (growth per round trip, minimum and timeout windows,
    /// thresholds in packets) uses the new size from now on, and the
    /// window is at least the new minimum. quinn's `on_mtu_update`. The
    /// default ignores it, for a controller that keeps no packet size.
    fn set_mss(&mut self, _mss: u64) {}

    /// The congestion window, in bytes.
    fn window(&self) -> u64;

    /// The slow-start threshold, in bytes (`u64::MAX` until the first loss).
    fn ssthresh(&self) -> u64;

    /// A pacing rate in bytes per second, if the controller wants one; the
    /// recovery module otherwise paces at 1.25·cwnd/srtt (2·cwnd/srtt in
    /// slow start, `RecoveryConfig::slow_start_pacing`).
    fn pacing_rate(&self) -> Option<u64> {
        None
    }

    /// How the recovery module should detect loss for this controller.
    fn recovery_policy(&self) -> RecoveryPolicy {
        RecoveryPolicy::default()
    }

    /// A snapshot for stats and time series.
    fn metrics(&self) -> Metrics;

    /// Careful Resume (RFC 9959) hands the controller a window at a phase
    /// change: it continues from `cwnd` bytes (and `ssthresh`, when given)
    /// under its own rules, its growth state restarted from there. Every
    /// controller of this crate takes it; the default ignores it, for a
    /// controller that cannot run under Careful Resume.
    fn set_window(&mut self, _cwnd: u64, _ssthresh: Option<u64>) {}

    /// Careful Resume jumped from a saved path state: a model-based
    /// controller (BBR) seeds its bandwidth (bytes per second) and minimum
    /// RTT from it. Window-based controllers ignore it (the default).
    fn seed_path_model(&mut self, _bandwidth: f64, _min_rtt: Duration) {}

    /// Careful Resume validated its jump: a controller with a Startup
    /// (BBR) may end it once its bandwidth estimate reaches `bandwidth`
    /// (bytes per second), the saved path's, instead of probing past it.
    /// Others ignore it (the default).
    fn set_startup_target(&mut self, _bandwidth: f64) {}

    /// Careful Resume's state, when this controller runs under it.
    fn careful_resume(&self) -> Option<CarefulResumeStatus> {
        None
    }

    /// Careful Resume's phase changes since the last call, oldest first.
    fn drain_careful_resume_changes(&mut self) -> Vec<CarefulResumeChange> {
        Vec::new()
    }
}

/// Which controller to run and its parameters, with serde for scenario files
/// and `FromStr` for `--cc NAME` (paper defaults).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "name", rename_all = "kebab-case")]
pub enum CcConfig {
    Reno(RenoConfig),
    Cubic(CubicConfig),
    Westwood(WestwoodConfig),
    /// Vegas decomposed into its algorithms A–J (Hengartner et al. 2000).
    Vegas(VegasConfig),
    /// Veno (Fu & Liew 2003).
    Veno(VenoConfig),
    /// Enhanced Veno (Zhou et al.): Veno's parameters, no new constants.
    VenoEnhanced(VenoConfig),
    /// Westwood with agile probing (Yamada et al. 2004).
    WestwoodA(WestwoodAConfig),
    /// BBRv3 (draft-ietf-ccwg-bbr).
    Bbr(BbrConfig),
    /// Prague, the L4S sender (RFC 9331 §4.3): ECT(1), a DCTCP-style
    /// scalable response to CE.
    Prague(PragueConfig),
}

impl CcConfig {
    /// Every controller's name. `FromStr` accepts these, and each of
    /// [`Self::ECN_VERDICT_NAMES`] with [`Self::ECN_VERDICT_SUFFIX`].
    pub const NAMES: &'static [&'static str] = &[
        "reno",
        "cubic",
        "vegas",
        "veno",
        "veno-enhanced",
        "westwood",
        "westwood-a",
        "bbr",
        "prague",
    ];

    /// The loss-differentiating controllers, whose configs have
    /// `ecn_loss_verdict`: on a path with validated ECN, a loss with no CE
    /// mark in its round is judged random (`ecn.rs`).
    pub const ECN_VERDICT_NAMES: &'static [&'static str] = &[
        "cubic",
        "veno",
        "veno-enhanced",
        "westwood",
        "westwood-a",
        "bbr",
    ];

    /// `NAME-ecn` selects controller `NAME` with `ecn_loss_verdict` on
    /// (`--cc westwood-a-ecn`).
    pub const ECN_VERDICT_SUFFIX: &'static str = "-ecn";

    /// The name this configuration is selected by: `NAME-ecn` when the
    /// ECN loss verdict is on, so that a peer asked by name runs it too.
    pub fn name(&self) -> &'static str {
        let ecn = self.ecn_loss_verdict() == Some(true);
        match self {
            CcConfig::Reno(_) => "reno",
            CcConfig::Cubic(_) if ecn => "cubic-ecn",
            CcConfig::Cubic(_) => "cubic",
            CcConfig::Westwood(_) if ecn => "westwood-ecn",
            CcConfig::Westwood(_) => "westwood",
            CcConfig::Vegas(_) => "vegas",
            CcConfig::Veno(_) if ecn => "veno-ecn",
            CcConfig::Veno(_) => "veno",
            CcConfig::VenoEnhanced(_) if ecn => "veno-enhanced-ecn",
            CcConfig::VenoEnhanced(_) => "veno-enhanced",
            CcConfig::WestwoodA(_) if ecn => "westwood-a-ecn",
            CcConfig::WestwoodA(_) => "westwood-a",
            CcConfig::Bbr(_) if ecn => "bbr-ecn",
            CcConfig::Bbr(_) => "bbr",
            CcConfig::Prague(_) => "prague",
        }
    }

    /// Whether the ECN loss verdict is on (`ecn_loss_verdict`); `None` for
    /// a controller that does not judge losses.
    pub fn ecn_loss_verdict(&self) -> Option<bool> {
        match self {
            CcConfig::Cubic(c) => Some(c.ecn_loss_verdict),
            CcConfig::Westwood(c) => Some(c.ecn_loss_verdict),
            CcConfig::Veno(c) | CcConfig::VenoEnhanced(c) => Some(c.ecn_loss_verdict),
            CcConfig::WestwoodA(c) => Some(c.ecn_loss_verdict),
            CcConfig::Bbr(c) => Some(c.ecn_loss_verdict),
            CcConfig::Reno(_) | CcConfig::Vegas(_) | CcConfig::Prague(_) => None,
        }
    }

    /// The same controller with the ECN loss verdict `on`; a controller
    /// that does not judge losses is returned unchanged.
    pub fn with_ecn_loss_verdict(mut self, on: bool) -> Self {
        match &mut self {
            CcConfig::Cubic(c) => c.ecn_loss_verdict = on,
            CcConfig::Westwood(c) => c.ecn_loss_verdict = on,
            CcConfig::Veno(c) | CcConfig::VenoEnhanced(c) => c.ecn_loss_verdict = on,
            CcConfig::WestwoodA(c) => c.ecn_loss_verdict = on,
            CcConfig::Bbr(c) => c.ecn_loss_verdict = on,
            CcConfig::Reno(_) | CcConfig::Vegas(_) | CcConfig::Prague(_) => {}
        }
        self
    }

    /// The window the controller starts from, in packets.
    pub fn initial_window_packets(&self) -> u64 {
        match self {
            CcConfig::Reno(c) => c.initial_window_packets,
            CcConfig::Cubic(c) => c.initial_window_packets,
            CcConfig::Westwood(c) => c.initial_window_packets,
            // Algorithm G starts every Vegas from two packets.
            CcConfig::Vegas(c) if c.two_packet_windows => vegas::TWO_PACKET_WINDOW,
            CcConfig::Vegas(c) => c.initial_window_packets,
            CcConfig::Veno(c) | CcConfig::VenoEnhanced(c) => c.initial_window_packets,
            CcConfig::WestwoodA(c) => c.initial_window_packets,
            CcConfig::Bbr(c) => c.initial_window_packets,
            CcConfig::Prague(c) => c.initial_window_packets,
        }
    }

    /// The same controller, started from `packets` packets instead of
    /// RFC 9002's ten (`validate` refuses 0). The first flight is paced
    /// over the first round trip like every window, but a large one still
    /// lands in a shared bottleneck's queue before any feedback: for long
    /// paths one controls, as quinn's BBR starts at 200. Vegas gives up
    /// algorithm G's two-packet start for it (its window after a timeout
    /// stays two packets).
    pub fn with_initial_window(mut self, packets: u64) -> Self {
        if let CcConfig::Vegas(c) = &mut self {
            if c.two_packet_windows {
                c.two_packet_windows = false;
                c.timeout_window_packets = vegas::TWO_PACKET_WINDOW;
            }
        }
        let field = match &mut self {
            CcConfig::Reno(c) => &mut c.initial_window_packets,
            CcConfig::Cubic(c) => &mut c.initial_window_packets,
            CcConfig::Westwood(c) => &mut c.initial_window_packets,
            CcConfig::Vegas(c) => &mut c.initial_window_packets,
            CcConfig::Veno(c) | CcConfig::VenoEnhanced(c) => &mut c.initial_window_packets,
            CcConfig::WestwoodA(c) => &mut c.initial_window_packets,
            CcConfig::Bbr(c) => &mut c.initial_window_packets,
            CcConfig::Prague(c) => &mut c.initial_window_packets,
        };
        *field = packets;
        self
    }

    /// Builds the controller for a connection whose packets carry at most
    /// `mss` bytes counted against the window.
    pub fn build(&self, mss: u64) -> Box<dyn CongestionControl> {
        match self {
            CcConfig::Reno(c) => Box::new(Reno::new(c.clone(), mss)),
            CcConfig::Cubic(c) => Box::new(Cubic::new(c.clone(), mss)),
            CcConfig::Westwood(c) => Box::new(Westwood::new(c.clone(), mss)),
            CcConfig::Vegas(c) => Box::new(Vegas::new(c.clone(), mss)),
            CcConfig::Veno(c) => Box::new(Veno::new(c.clone(), mss)),
            CcConfig::VenoEnhanced(c) => Box::new(VenoEnhanced::new(c.clone(), mss)),
            CcConfig::WestwoodA(c) => Box::new(WestwoodA::new(c.clone(), mss)),
            CcConfig::Bbr(c) => Box::new(Bbr::new(c.clone(), mss)),
            CcConfig::Prague(c) => Box::new(Prague::new(c.clone(), mss)),
        }
    }

    /// Checks the parameters against the ranges their algorithm allows.
    /// `build` never fails: a controller given an out-of-range value falls
    /// back to its paper's default for that value, so callers that load
    /// configurations from users should call this first and report the error.
    pub fn validate(&self) -> Result<(), InvalidCcConfig> {
        if self.initial_window_packets() == 0 {
            return Err(InvalidCcConfig::new(
                self.name(),
                "initial_window_packets",
                0,
                "at least 1",
            ));
        }
        match self {
            CcConfig::Reno(_) => Ok(()),
            CcConfig::Cubic(c) => c.validate(),
            CcConfig::Westwood(c) => c.validate(),
            CcConfig::Vegas(_) => Ok(()),
            CcConfig::Veno(_) | CcConfig::VenoEnhanced(_) => Ok(()),
            CcConfig::WestwoodA(c) => c.validate(),
            CcConfig::Bbr(c) => c.validate(),
            CcConfig::Prague(c) => c.validate(),
        }
    }
}

impl Default for CcConfig {
    fn default() -> Self {
        CcConfig::Reno(RenoConfig::default())
    }
}

/// `--cc` named a controller sift does not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown congestion controller {name:?} (expected one of: {}; or one of {} with {})",
    CcConfig::NAMES.join(", "),
    CcConfig::ECN_VERDICT_NAMES.join(", "),
    CcConfig::ECN_VERDICT_SUFFIX
)]
pub struct UnknownController {
    pub name: String,
}

impl FromStr for CcConfig {
    type Err = UnknownController;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        let name = name.trim().to_ascii_lowercase();
        if let Some(base) = name.strip_suffix(CcConfig::ECN_VERDICT_SUFFIX) {
            if CcConfig::ECN_VERDICT_NAMES.contains(&base) {
                return Ok(base.parse::<CcConfig>()?.with_ecn_loss_verdict(true));
            }
        }
        match name.as_str() {
            "reno" => Ok(CcConfig::Reno(RenoConfig::default())),
            "cubic" => Ok(CcConfig::Cubic(CubicConfig::default())),
            "westwood" => Ok(CcConfig::Westwood(WestwoodConfig::default())),
            "vegas" => Ok(CcConfig::Vegas(VegasConfig::default())),
            "veno" => Ok(CcConfig::Veno(VenoConfig::default())),
            "veno-enhanced" => Ok(CcConfig::VenoEnhanced(VenoConfig::default())),
            "westwood-a" => Ok(CcConfig::WestwoodA(WestwoodAConfig::default())),
            "bbr" => Ok(CcConfig::Bbr(BbrConfig::default())),
            "prague" => Ok(CcConfig::Prague(PragueConfig::default())),
            other => Err(UnknownController {
                name: other.to_string(),
            }),
        }
    }
}

/// A controller parameter outside the range its algorithm allows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{algorithm} parameter {field} = {value} is out of range: expected {expected}")]
pub struct InvalidCcConfig {
    /// The controller's name (as in `--cc`).
    pub algorithm: &'static str,
    /// The configuration field, as spelt in scenario files.
    pub field: &'static str,
    /// The value that was given.
    pub value: String,
    /// What the field accepts.
    pub expected: &'static str,
}

impl InvalidCcConfig {
    /// The error for `algorithm`'s `field` holding `value`.
    pub fn new(
        algorithm: &'static str,
        field: &'static str,
        value: impl std::fmt::Display,
        expected: &'static str,
    ) -> Self {
        Self {
            algorithm,
            field,
            value: value.to_string(),
            expected,
        }
    }
}

/// Floor for every window: two packets (RFC 9002 kMinimumWindow).
pub fn minimum_window(mss: u64) -> u64 {
    2 * mss
}

/// A multiplicative decrease: `bytes·numerator/denominator`, exact (128-bit
/// intermediate), for the papers' fractions (Reno's 1/2, Veno's 4/5, Vegas's
/// 3/4). A decrease never grows the window: a zero denominator or a fraction
/// above one leaves `bytes` unchanged.
pub fn scale_window(bytes: u64, (numerator, denominator): (u64, u64)) -> u64 {
    if denominator == 0 || numerator >= denominator {
        return bytes;
    }
    // numerator < denominator, so the quotient is below `bytes` and fits.
    (u128::from(bytes) * u128::from(numerator) / u128::from(denominator)) as u64
}

/// RFC 5681 §3.1 slow start with RFC 3465 byte counting, never past
/// ssthresh in one step: returns the new window and the acked bytes left
/// over, which the caller counts as congestion-avoidance credit. Below
/// ssthresh only; at or above it, everything is left over.
pub fn slow_start(cwnd: u64, ssthresh: u64, acked: u64) -> (u64, u64) {
    if cwnd >= ssthresh {
        return (cwnd, acked);
    }
    let slow = acked.min(ssthresh - cwnd);
    (cwnd + slow, acked - slow)
}
