//! Loss recovery: RTT estimation, the sent-packet ledgers, RFC 9002 loss
//! detection and PTO, corruption notices, and the calls into the congestion
//! controller.
//!
//! Owns: which packets are outstanding, when they are declared lost or
//! corrupted, bytes in flight, the recovery period, pacing.
//! Must not: read the clock (callers pass `now`), know frame contents (the
//! connection's per-packet record is the opaque `F`), touch sockets.
//!
//! RTT has two views. Loss detection and the PTO use RFC 9002's estimator
//! (a sample per newly acknowledged largest packet). With adaptive
//! reordering on, controllers see Linux's `ca_rtt` instead: the RTT of the
//! newest packet each ACK delivers, and none while an older packet is
//! still outstanding (see `controller_rtt_sample`); a reordering link would
//! otherwise feed them mostly the RTTs of packets that overtook others.
//!
//! Files: `sent` (the per-space ledger), `rtt` (RFC 9002 §5 estimator),
//! `loss` (thresholds, persistent congestion, congestion events),
//! `reordering` (the adaptive reordering window, RACK-TLP in RFC 9002
//! terms), `spurious` (the memory of declared-lost packets, spurious losses
//! and undo of the congestion response), `timer` (the loss-detection timer:
//! PTO or RTO), `corruption` (CORRUPTED frames on the sender's side), `ecn` (the
//! response to CE marks),
//! `rate` (delivery-rate samples for the controller),
//! `pacer`, `notes` (its decisions, for a traced connection); this file is the facade the connection calls and the ACK path
//! that ties them together.

mod corruption;
mod ecn;
mod loss;
mod notes;
mod pacer;
mod rate;
mod reordering;
mod rtt;
mod sent;
mod spurious;
mod timer;

use std::collections::BTreeSet;
use std::ops::RangeInclusive;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use sift_cc::{
    AckEvent, CarefulResume, CarefulResumeChange, CarefulResumeConfig, CarefulResumeStatus,
    CongestionControl, LossVerdict, Metrics, SavedPath,
};

pub use notes::{LossTrigger, RecoveryNote};
pub use pacer::Pacer;
pub use rate::{DeliveryRateSampler, DeliverySnapshot};
pub use reordering::{MAX_PACKET_THRESHOLD, REO_WND_PERSIST};
pub use rtt::{RttEstimator, GRANULARITY, INITIAL_RTT, MAX_RTT_SAMPLE};
pub use sent::{SentLedger, SentPacket};
pub use spurious::LOST_MEMORY;

use corruption::CorruptionBudget;
pub use corruption::{
    CorruptedOutcome, CALM_MEMORY_PACKETS, HONEST_CORRUPTION_SHARE, INITIAL_CORRUPTION_CREDIT,
    INITIAL_QUEUED_NOTICE_CREDIT, MAX_CORRUPTION_CREDIT, QUEUED_NOTICE_CREDIT,
    QUEUED_RATE_MULTIPLE, QUEUE_FLOOR_DIVISOR, QUEUE_MEMORY,
};
use reordering::ReorderingWindow;
use spurious::{LostMemory, RecoveryEpisode};

/// RFC 9002 §6.1.1 kPacketThreshold.
pub const PACKET_THRESHOLD: u64 = 3;
/// RFC 9002 §6.1.2 kTimeThreshold = 9/8.
pub const TIME_THRESHOLD: (u32, u32) = (9, 8);
/// RFC 9002 §7.6.1 kPersistentCongestionThreshold.
pub const PERSISTENT_CONGESTION_THRESHOLD: u32 = 3;
/// Upper bound of a backed-off timeout. RFC 6298 §2.5: a maximum "MAY be
/// placed on RTO provided it is at least 60 seconds".
pub const MAX_TIMEOUT: Duration = Duration::from_secs(60);
/// Corrupted packet numbers remembered so that a notice repeated in later
/// ACK-bearing packets is recognised as a repeat, not as a bogus name.
const CORRUPTION_MEMORY: usize = 4096;

/// A packet-number space (RFC 9000 §12.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SpaceId {
    /// Initial packets.
    Initial,
    /// Handshake packets.
    Handshake,
    /// 1-RTT (application data) packets.
    Data,
}

impl SpaceId {
    /// Every space, in order.
    pub const ALL: [SpaceId; 3] = [SpaceId::Initial, SpaceId::Handshake, SpaceId::Data];

    /// The space's position in [`SpaceId::ALL`], for per-space arrays.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// What a retransmission timeout does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TimeoutMode {
    /// RFC 9002: a PTO sends probes and declares nothing lost; only
    /// persistent congestion collapses the window.
    Pto,
    /// Classic TCP (RFC 6298), as the papers' testbeds ran: the timeout
    /// declares every outstanding packet lost and collapses the window.
    Rto,
}

/// When the window-based pacing rate is 2·cwnd/srtt instead of RFC 9002's
/// 1.25·cwnd/srtt (`RecoveryConfig::slow_start_pacing`). Both apply only
/// while the window is below half of ssthresh, as Linux's
/// `sk_pacing_ss_ratio`.
///
/// In scenario TOML: `"off"`, `"first-slow-start"` or `"always"`; the
/// booleans of earlier files still read (`false` is off, `true` always),
/// and off and always are written as those booleans, so results of runs
/// that predate the third mode keep their bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SlowStartPacing {
    /// RFC 9002 §7.7's N = 1.25 throughout.
    #[default]
    Off,
    /// 2× only in the connection's first slow start: until its first
    /// congestion event that stands, or until a Careful Resume jump.
    FirstSlowStart,
    /// 2× in every slow start, as Linux.
    Always,
}

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum SlowStartPacingRepr {
    Bool(bool),
    Name(SlowStartPacingName),
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum SlowStartPacingName {
    Off,
    FirstSlowStart,
    Always,
}

impl Serialize for SlowStartPacing {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Off => SlowStartPacingRepr::Bool(false),
            Self::FirstSlowStart => SlowStartPacingRepr::Name(SlowStartPacingName::FirstSlowStart),
            Self::Always => SlowStartPacingRepr::Bool(true),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for SlowStartPacing {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match SlowStartPacingRepr::deserialize(deserializer)? {
            SlowStartPacingRepr::Bool(false)
            | SlowStartPacingRepr::Name(SlowStartPacingName::Off) => Self::Off,
            SlowStartPacingRepr::Name(SlowStartPacingName::FirstSlowStart) => Self::FirstSlowStart,
            SlowStartPacingRepr::Bool(true)
            | SlowStartPacingRepr::Name(SlowStartPacingName::Always) => Self::Always,
        })
    }
}

/// Every knob of loss recovery. Defaults are RFC 9002's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RecoveryConfig {
    /// Packets acked above a packet before it is declared lost.
    pub packet_threshold: u64,
    /// Time threshold as a fraction of max(srtt, latest_rtt).
    pub time_threshold: (u32, u32),
    /// RTT assumed before the first sample.
    pub initial_rtt: Duration,
    /// PTO periods a loss must span to count as persistent congestion.
    pub persistent_congestion_threshold: u32,
    /// PTO (RFC 9002) or RTO (classic TCP) behaviour on timeout.
    pub timeout: TimeoutMode,
    /// Lower bound of the timeout in `Rto` mode (Linux: 200 ms).
    pub min_rto: Duration,
    /// Upper bound of a backed-off PTO or RTO, so a long outage is probed
    /// at least this often.
    pub max_timeout: Duration,
    /// Pace packets over the round trip.
    pub pacing: bool,
    /// While the window is below half of ssthresh (slow start with room
    /// to grow), pace at twice cwnd/srtt instead of 1.25 times, as Linux
    /// does (`sk_pacing_ss_ratio` 200%): slow start doubles the window
    /// each round trip, and at 1.25·cwnd/srtt a round's packets take
    /// longer than a round trip to leave (2W at 1.25·~1.5W per srtt is
    /// ~1.07 srtt), so the pacer, not the window, sets the growth.
    /// Measured over sift-link at 600 ms (docs/notes/2026-11-27-long-paths.md,
    /// "Over real sockets"): each round of a 20 MB download spread over 640–800 ms,
    /// 657 ms behind an unpaced sender by the 2550th packet. `Always`
    /// lifts clean first slow starts (Vegas 0.33 → 0.81 in leaky-pipes)
    /// but costs CUBIC on lossy long paths, where `small_loss_rollback`
    /// restores slow start after almost every loss (long-paths resumed
    /// cubic 0.497 → 0.448, seeds 1–10); `FirstSlowStart` keeps the first
    /// and not the second (interop/results/2026-11-27-ss-pacing/README.md).
    /// Controllers with their own rate (BBR) are not affected.
    pub slow_start_pacing: SlowStartPacing,
    /// Widen the packet and time thresholds when a packet declared lost is
    /// acknowledged after all (RACK-TLP's adaptive reordering window, RFC
    /// 8985 §6.2, as RFC 9002 §6.1 allows). Off: the thresholds stay fixed.
    pub adaptive_reordering: bool,
    /// Undo a congestion event whose losses all prove spurious
    /// (`CongestionControl::on_spurious_congestion`). Off: a cut stands.
    pub undo_spurious_congestion: bool,
    /// Send a handshake flight again when the peer's probe shows it
    /// missing, before our own probe timeout (RFC 9002 §6.2.3, a few times
    /// per connection), and a server's HANDSHAKE_DONE when a client's
    /// Handshake packet shows it unconfirmed. Over sift-link at 30% loss both ways, quic-go's
    /// client against sift-server: 3 of 60 runs of five handshakes failed
    /// its 10 s deadline without it, 0 of 60 with it (median cell 8.6 →
    /// 5.2 s). Off: only the timeout resends, as the papers' stacks did.
    pub resend_crypto_on_peer_probe: bool,
}

impl Default for RecoveryConfig {
    fn default() -> Self {
        Self {
            packet_threshold: PACKET_THRESHOLD,
            time_threshold: TIME_THRESHOLD,
            initial_rtt: INITIAL_RTT,
            persistent_congestion_threshold: PERSISTENT_CONGESTION_THRESHOLD,
            timeout: TimeoutMode::Pto,
            min_rto: Duration::from_millis(200),
            max_timeout: MAX_TIMEOUT,
            pacing: true,
            slow_start_pacing: SlowStartPacing::Off,
            adaptive_reordering: true,
            undo_spurious_congestion: true,
            resend_crypto_on_peer_probe: true,
        }
    }
}

/// A loss verdict the controller made, with the packets it was about.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerdictRecord {
    /// The packet-number space of the packets.
    pub space: SpaceId,
    /// The packets declared lost.
    pub packet_numbers: Vec<u64>,
    /// What the controller judged the loss to be.
    pub verdict: LossVerdict,
    /// The verdict is withdrawn: every packet of its congestion event was
    /// acknowledged after all, and the event was undone. The packets were
    /// neither randomly nor congestively lost. `packet_numbers` and
    /// `verdict` repeat the earlier record this one withdraws.
    #[serde(default)]
    pub undone: bool,
}

/// Counters kept by recovery.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecoveryStats {
    /// Packets declared lost.
    pub lost_packets: u64,
    /// Bytes of the packets declared lost.
    pub lost_bytes: u64,
    /// Packets removed from flight by a corruption notice.
    pub corrupted_packets: u64,
    /// Packet numbers named in CORRUPTED frames that were never sent, already
    /// acked or already lost (and not a repeat of an applied notice).
    pub ignored_corruption_names: u64,
    /// Packets named corrupted beyond the corruption budget, or after the
    /// peer was caught naming a skipped number: counted as lost.
    pub corruption_names_over_budget: u64,
    /// Probe timeouts that fired.
    pub ptos: u64,
    /// Congestion events the controller was told of (one per recovery
    /// period).
    pub congestion_events: u64,
    /// Congestion events that were persistent congestion (RFC 9002 §7.6).
    pub persistent_congestion_events: u64,
    /// Packets acknowledged after they were declared lost.
    pub spurious_losses: u64,
    /// Congestion events undone because all their losses proved spurious.
    pub undone_congestion_events: u64,
    /// Congestion events started by CE marks (RFC 9002 §7.1), also counted
    /// in `congestion_events`.
    #[serde(default)]
    pub ecn_congestion_events: u64,
    /// Growth of the peer's ECN-CE counts that passed validation: packets
    /// of ours a queue marked.
    #[serde(default)]
    pub ce_marks_reported: u64,
}

/// What an ACK frame did.
#[derive(Debug)]
pub struct AckOutcome<F> {
    /// Packets newly acknowledged.
    pub acked: Vec<SentPacket<F>>,
    /// Packets the acknowledgement showed lost.
    pub lost: Vec<SentPacket<F>>,
}

/// What the loss-detection timer did.
#[derive(Debug)]
pub struct TimeoutOutcome<F> {
    /// Packets declared lost by the time threshold.
    pub lost: Vec<SentPacket<F>>,
    /// The space of `lost`, when packets were declared lost.
    pub lost_space: Option<SpaceId>,
    /// PTO fired: send this many ack-eliciting probes in this space.
    pub probes: Option<(SpaceId, u32)>,
}

#[derive(Debug)]
struct SpaceState<F> {
    ledger: SentLedger<F>,
    largest_acked: Option<u64>,
    largest_sent: Option<u64>,
    loss_time: Option<Instant>,
    time_of_last_ack_eliciting: Option<Instant>,
}

impl<F> Default for SpaceState<F> {
    fn default() -> Self {
        Self {
            ledger: SentLedger::default(),
            largest_acked: None,
            largest_sent: None,
            loss_time: None,
            time_of_last_ack_eliciting: None,
        }
    }
}

/// Loss recovery and congestion control for one connection.
#[derive(Debug)]
pub struct Recovery<F> {
    config: RecoveryConfig,
    spaces: [SpaceState<F>; 3],
    rtt: RttEstimator,
    first_rtt_sample: Option<Instant>,
    cc: Box<dyn CongestionControl>,
    bytes_in_flight: u64,
    pto_count: u32,
    recovery_start: Option<Instant>,
    /// RFC 9002 §7.3.2: on entering recovery a sender may send one packet
    /// beyond the window; set by a congestion event, spent by the next
    /// ack-eliciting packet (`may_send_beyond_window`).
    recovery_packet_allowed: bool,
    pacer: Pacer,
    /// The largest packet the connection sends, bytes (what the pacer's
    /// burst and the controller count packets in).
    mss: u64,
    rate: DeliveryRateSampler,
    app_limited: bool,
    /// The peer's max_ack_delay (RFC 9000 §18.2), applied once confirmed.
    max_ack_delay: Duration,
    handshake_confirmed: bool,
    has_handshake_keys: bool,
    /// When the last packet of any space was sent: the client's
    /// anti-deadlock timer runs from it (RFC 9002 §6.2.2.1 arms it when a
    /// packet is sent), not from the moment it is asked about.
    last_sent: Option<Instant>,
    recently_corrupted: BTreeSet<(SpaceId, u64)>,
    corruption_budget: CorruptionBudget,
    /// The adaptive packet and time thresholds.
    reordering: ReorderingWindow,
    /// Packets recently declared lost, to recognise them if acknowledged.
    lost_memory: LostMemory,
    /// The latest congestion event, while it may still be undone.
    episode: Option<RecoveryEpisode>,
    verdicts: Vec<VerdictRecord>,
    stats: RecoveryStats,
    /// Decisions for a trace, while one is kept (`notes.rs`).
    notes: Option<Vec<RecoveryNote>>,
    /// Why the packets being declared lost are lost, when it is not the
    /// packet or time threshold.
    loss_trigger: Option<LossTrigger>,
    /// What this connection saw of its path, for a later one (RFC 9959).
    observed: PathObservation,
    /// The first 1-RTT packet sent on the current path: only packets from
    /// it on tell what this path carries (a new path starts afresh).
    path_first_packet: u64,
    /// A saved path state to run Careful Resume from once the handshake
    /// is confirmed (`resume_path`).
    pending_resume: Option<(SavedPath, CarefulResumeConfig)>,
}

/// The capacity a connection saw on its path, for Careful Resume's saved
/// state (RFC 9959 §3.1): the largest delivery rate of a sample that was
/// not application-limited, and the largest flight that carried it.
#[derive(Clone, Copy, Debug, Default)]
struct PathObservation {
    /// Bytes per second.
    max_delivery_rate: f64,
    max_bytes_in_flight: u64,
}

impl<F> Recovery<F> {
    /// Recovery for a connection whose packets carry at most `mss` bytes.
    pub fn new(config: RecoveryConfig, cc: Box<dyn CongestionControl>, mss: u64) -> Self {
        let pacer = Self::pacer_for(cc.as_ref(), mss);
        Self {
            rtt: RttEstimator::new(config.initial_rtt),
            reordering: ReorderingWindow::new(config.packet_threshold, config.adaptive_reordering),
            lost_memory: LostMemory::default(),
            episode: None,
            config,
            spaces: Default::default(),
            first_rtt_sample: None,
            cc,
            bytes_in_flight: 0,
            pto_count: 0,
            recovery_start: None,
            recovery_packet_allowed: false,
            pacer,
            mss,
            rate: DeliveryRateSampler::default(),
            app_limited: false,
            max_ack_delay: Duration::from_millis(25),
            handshake_confirmed: false,
            has_handshake_keys: false,
            last_sent: None,
            recently_corrupted: BTreeSet::new(),
            corruption_budget: CorruptionBudget::default(),
            verdicts: Vec::new(),
            stats: RecoveryStats::default(),
            notes: None,
            loss_trigger: None,
            observed: PathObservation::default(),
            path_first_packet: 0,
            pending_resume: None,
        }
    }

    /// Runs the controller under Careful Resume from `saved` (RFC 9959):
    /// Reconnaissance from its own initial window. Call before data flows.
    ///
    /// Not before the handshake is confirmed: until then the peer has not
    /// shown it is who the saved state was kept for, nor that it is at the
    /// address packets go to (a spoofed Initial can carry a client's
    /// token), and an RTT sample of the handshake's spaces may come from
    /// anyone who can guess a packet number. The controller is wrapped at
    /// confirmation, and Careful Resume confirms the RTT with a sample
    /// taken after it.
    pub fn resume_path(&mut self, saved: SavedPath, config: CarefulResumeConfig, mss: u64) {
        if !self.handshake_confirmed {
            self.pending_resume = Some((saved, config));
            return;
        }
        self.wrap_in_careful_resume(saved, config, mss);
    }

    fn wrap_in_careful_resume(&mut self, saved: SavedPath, config: CarefulResumeConfig, mss: u64) {
        let placeholder: Box<dyn CongestionControl> =
            Box::new(sift_cc::Reno::new(sift_cc::RenoConfig::default(), mss));
        let inner = std::mem::replace(&mut self.cc, placeholder);
        self.cc = Box::new(CarefulResume::new(inner, saved, config, mss));
    }

    /// Careful Resume's state, when the controller runs under it.
    pub fn careful_resume(&self) -> Option<CarefulResumeStatus> {
        self.cc.careful_resume()
    }

    /// Careful Resume's phase changes since the last call, oldest first.
    pub fn drain_careful_resume_changes(&mut self) -> Vec<CarefulResumeChange> {
        self.cc.drain_careful_resume_changes()
    }

    /// What a later connection on this path may resume from (RFC 9959
    /// §3.1): the path's demonstrated capacity as a window — the largest
    /// delivery rate of a sample that was not application-limited times the
    /// minimum RTT, no more than the largest flight that was acknowledged —
    /// and the minimum RTT. `None` before any such sample, and before an
    /// RTT sample (the initial RTT is no measurement). Only packets sent
    /// on the current path count (`on_new_path`).
    pub fn observed_path(&self) -> Option<SavedPath> {
        let min_rtt = self.rtt.min();
        if self.observed.max_delivery_rate <= 0.0 || min_rtt.is_zero() || !self.rtt.has_sample() {
            return None;
        }
        let bdp = (self.observed.max_delivery_rate * min_rtt.as_secs_f64()) as u64;
        Some(SavedPath {
            cwnd: bdp.min(self.observed.max_bytes_in_flight),
            min_rtt,
        })
    }

    /// The pacer a controller asks for (Vegas H limits bursts).
    fn pacer_for(cc: &dyn CongestionControl, mss: u64) -> Pacer {
        let mut pacer = Pacer::new(mss);
        if let Some(limit) = cc.metrics().fields.get("burst_limit_packets") {
            pacer.set_burst_limit(*limit as u64, mss);
        }
        pacer
    }

    /// Hands congestion control to a new controller, which starts from its
    /// own initial state (window, estimates). Everything recovery knows —
    /// RTT, bytes in flight, the delivery-rate sampler, the recovery period
    /// — carries over. Meant for before data flows (a server switching to
    /// the controller a client asked for); later, the new controller simply
    /// learns the path again.
    pub fn replace_controller(&mut self, cc: Box<dyn CongestionControl>, mss: u64) {
        self.pacer = Self::pacer_for(cc.as_ref(), mss);
        self.mss = mss;
        self.cc = cc;
    }

    /// Packets now carry up to `mss` bytes (path MTU discovery changed the
    /// datagram size): the controller counts packets of the new size and
    /// the pacer's burst holds as many of them. The window stays in bytes,
    /// so what is in flight is still counted right.
    pub fn set_mss(&mut self, mss: u64) {
        if mss == self.mss || mss == 0 {
            return;
        }
        self.cc.set_mss(mss);
        self.pacer.rescale(mss);
        self.mss = mss;
    }

    /// The largest packet size the controller counts in, bytes.
    pub fn mss(&self) -> u64 {
        self.mss
    }

    /// The peer moved to a new network path (a new IP address, RFC 9000
    /// §9.4): what was learnt of the old one does not hold. `cc` starts
    /// from its initial window and the RTT estimate from the initial RTT;
    /// packets in flight stay in the ledger and leave flight when
    /// acknowledged or lost, but say nothing of what the new path carries:
    /// they give no RTT sample, grow no window and cut none, and the path
    /// observation (`observed_path`) starts again from the first packet
    /// sent on it. A saved state not yet taken up was for the old path.
    pub fn on_new_path(&mut self, cc: Box<dyn CongestionControl>, mss: u64) {
        self.replace_controller(cc, mss);
        self.rtt = RttEstimator::new(self.config.initial_rtt);
        self.observed = PathObservation::default();
        self.path_first_packet = self.spaces[SpaceId::Data.index()]
            .largest_sent
            .map_or(0, |largest| largest + 1);
        self.pending_resume = None;
        self.corruption_budget.on_new_path();
        self.recovery_start = None;
        self.episode = None;
    }

    // ---- state the connection tells us -------------------------------

    /// The peer's max_ack_delay, from its transport parameters.
    pub fn set_max_ack_delay(&mut self, delay: Duration) {
        self.max_ack_delay = delay;
    }

    /// Handshake keys are installed: the client's anti-deadlock probes go
    /// in the Handshake space from now on (RFC 9002 §6.2.2.1).
    pub fn set_handshake_keys(&mut self) {
        self.has_handshake_keys = true;
    }

    /// The handshake is confirmed: application-space PTOs may run and the
    /// peer's ack delay is trusted (RFC 9002 §5.3, §6.2.1), and a saved
    /// path state waiting for it is taken up (`resume_path`).
    pub fn set_handshake_confirmed(&mut self) {
        self.handshake_confirmed = true;
        if let Some((saved, config)) = self.pending_resume.take() {
            self.wrap_in_careful_resume(saved, config, self.mss);
        }
    }

    /// The sender ran out of data with window to spare.
    pub fn set_app_limited(&mut self, app_limited: bool) {
        self.app_limited = app_limited;
    }

    // ---- queries -------------------------------------------------------

    /// The RTT estimates.
    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }

    /// Bytes sent and neither acknowledged nor declared lost.
    pub fn bytes_in_flight(&self) -> u64 {
        self.bytes_in_flight
    }

    /// The controller's congestion window, bytes.
    pub fn window(&self) -> u64 {
        self.cc.window()
    }

    /// The controller's slow-start threshold, bytes.
    pub fn ssthresh(&self) -> u64 {
        self.cc.ssthresh()
    }

    /// The controller's own view (its phase and algorithm fields).
    pub fn cc_metrics(&self) -> Metrics {
        self.cc.metrics()
    }

    /// Counters of losses, corruption notices and timeouts.
    pub fn stats(&self) -> RecoveryStats {
        self.stats
    }

    /// Consecutive probe timeouts without an acknowledgement (the PTO
    /// backoff exponent, RFC 9002 §6.2.1).
    pub fn pto_count(&self) -> u32 {
        self.pto_count
    }

    /// The packet threshold in force (RFC 9002 kPacketThreshold, widened by
    /// reordering).
    pub fn packet_threshold(&self) -> u64 {
        self.reordering.packet_threshold()
    }

    /// RACK.reo_wnd: how much later than RFC 9002's time threshold allows an
    /// overtaken packet may still arrive.
    pub fn reordering_window(&self) -> Duration {
        self.reordering.window(
            self.rtt.min(),
            self.rtt.smoothed(),
            self.rtt.latest().max(self.rtt.smoothed()),
        )
    }

    /// Room left in the congestion window, in bytes.
    pub fn window_available(&self) -> u64 {
        self.cc.window().saturating_sub(self.bytes_in_flight)
    }

    /// Verdicts made since the last call, oldest first.
    pub fn drain_verdicts(&mut self) -> Vec<VerdictRecord> {
        std::mem::take(&mut self.verdicts)
    }

    /// Outstanding packets of a space, oldest first.
    pub fn outstanding(&self, space: SpaceId) -> impl Iterator<Item = &SentPacket<F>> {
        self.spaces[space.index()].ledger.iter()
    }

    /// The largest packet number the peer has acknowledged in `space`.
    pub fn largest_acked(&self, space: SpaceId) -> Option<u64> {
        self.spaces[space.index()].largest_acked
    }

    /// One PTO period (RFC 9002 §6.2.1), without backoff.
    pub fn pto_period(&self, space: SpaceId) -> Duration {
        let base = self.rtt.pto_base();
        if space == SpaceId::Data {
            base + self.max_ack_delay
        } else {
            base
        }
    }

    // ---- pacing ----------------------------------------------------------

    /// The rate packets are paced at, bytes per second: the controller's,
    /// or 1.25·cwnd/srtt (2·cwnd/srtt in slow start, with
    /// `slow_start_pacing`).
    pub fn current_pacing_rate(&self) -> u64 {
        self.pacing_rate()
    }

    fn pacing_rate(&self) -> u64 {
        self.cc.pacing_rate().unwrap_or_else(|| {
            let window = self.cc.window();
            let srtt = self.rtt.smoothed();
            if self.slow_start_pacing_applies() && window < self.cc.ssthresh() / 2 {
                Pacer::slow_start_rate_for(window, srtt)
            } else {
                Pacer::rate_for(window, srtt)
            }
        })
    }

    /// Whether `slow_start_pacing` allows 2·cwnd/srtt now (the window test
    /// aside).
    ///
    /// The first slow start ends at the first congestion event, and is
    /// back when that event is undone (`recovery_start` is cleared): an
    /// undone event was spurious, the controller gets its window and
    /// ssthresh back, and the path showed no congestion, so it is the same
    /// slow start. A controller's own rollback of a real loss (CUBIC's
    /// `small_loss_rollback`) is no undo here: with 2× after each of those
    /// rollbacks, CUBIC lost on lossy long paths (interop/results/2026-11-27-ss-pacing/
    /// README.md). A Careful Resume jump ends it too: the jump
    /// has CR's own pace, and after it the window is near the saved
    /// capacity, so 2·cwnd/srtt would send at about twice the path's rate
    /// rather than help a small window grow. A new path (`on_new_path`)
    /// starts a new first slow start.
    fn slow_start_pacing_applies(&self) -> bool {
        match self.config.slow_start_pacing {
            SlowStartPacing::Off => false,
            SlowStartPacing::Always => true,
            SlowStartPacing::FirstSlowStart => {
                self.recovery_start.is_none()
                    && !self.cc.careful_resume().is_some_and(|status| status.jumped)
            }
        }
    }

    /// When a packet of `bytes` may leave; `now` if at once.
    pub fn next_send_time(&mut self, now: Instant, bytes: u64) -> Instant {
        if !self.config.pacing {
            return now;
        }
        let rate = self.pacing_rate();
        self.pacer.next_send_time(now, bytes, rate)
    }

    // ---- events ----------------------------------------------------------

    /// A packet left. Call with the packet's final size.
    pub fn on_packet_sent(&mut self, space: SpaceId, mut packet: SentPacket<F>, now: Instant) {
        // A probe says nothing of whether the sender fills its window: its
        // acknowledgement must not grow the window (RFC 9002 §7.8).
        packet.app_limited = self.app_limited || packet.pmtu_probe;
        if packet.in_flight {
            packet.delivery = self
                .rate
                .on_packet_sent(now, self.bytes_in_flight, packet.size);
            self.bytes_in_flight += packet.size;
            self.cc.on_sent(now, packet.size, self.bytes_in_flight);
            if self.config.pacing {
                let rate = self.pacing_rate();
                self.pacer.on_sent(now, packet.size, rate);
            }
        }
        self.last_sent = Some(now);
        let state = &mut self.spaces[space.index()];
        if packet.ack_eliciting {
            state.time_of_last_ack_eliciting = Some(now);
            self.recovery_packet_allowed = false;
        }
        state.largest_sent = Some(
            state
                .largest_sent
                .map_or(packet.packet_number, |l| l.max(packet.packet_number)),
        );
        state.ledger.insert(packet);
    }

    /// An ACK frame arrived. `ranges` are the acknowledged packet numbers,
    /// largest first; the caller has checked none exceeds what was sent.
    pub fn on_ack_received(
        &mut self,
        space: SpaceId,
        ranges: impl Iterator<Item = RangeInclusive<u64>>,
        ack_delay: Duration,
        now: Instant,
    ) -> AckOutcome<F> {
        let mut acked = Vec::new();
        let mut late = Vec::new();
        let mut largest_in_frame = None;
        {
            let state = &mut self.spaces[space.index()];
            for range in ranges {
                largest_in_frame = Some(largest_in_frame.unwrap_or(0).max(*range.end()));
                late.extend(
                    self.lost_memory
                        .take_range(space, *range.start(), *range.end()),
                );
                state.ledger.remove_range(range, &mut acked);
            }
        }
        let Some(largest_in_frame) = largest_in_frame else {
            return AckOutcome {
                acked,
                lost: Vec::new(),
            };
        };
        let largest_acked = {
            let state = &mut self.spaces[space.index()];
            let largest = state
                .largest_acked
                .map_or(largest_in_frame, |l| l.max(largest_in_frame));
            state.largest_acked = Some(largest);
            largest
        };
        self.reordering.on_largest_acked(largest_acked);
        if !late.is_empty() {
            // Before loss detection, so this ACK already uses the widened
            // thresholds.
            self.on_spurious_losses(space, &late, now);
        }
        if acked.is_empty() {
            return AckOutcome {
                acked,
                lost: Vec::new(),
            };
        }
        acked.sort_by_key(|p| p.packet_number);

        // RTT sample: only when the frame's largest is newly acked and
        // ack-eliciting (RFC 9002 §5.1).
        let mut rtt_sampled = false;
        if let Some(largest) = acked.last() {
            // Not from a packet sent on the path the peer left (RFC 9000
            // §9.4).
            if largest.packet_number == largest_in_frame
                && self.on_current_path(space, largest.packet_number)
                && acked.iter().any(|p| p.ack_eliciting)
            {
                let latest = now.saturating_duration_since(largest.time_sent);
                let delay = match space {
                    SpaceId::Initial => Duration::ZERO,
                    _ if self.handshake_confirmed => ack_delay.min(self.max_ack_delay),
                    _ => ack_delay,
                };
                self.rtt.update(latest, delay);
                self.first_rtt_sample.get_or_insert(now);
                self.corruption_budget
                    .on_rtt_sample(self.rtt.latest(), self.rtt.min(), now);
                rtt_sampled = true;
            }
        }
        if space == SpaceId::Data {
            // After the sample: these packets crossed the path it shows.
            self.corruption_budget
                .earn(acked.iter().filter(|p| p.in_flight).count() as u64);
        }
        let controller_sampled = self.controller_rtt_sample(space, &acked, rtt_sampled, now);

        let mut lost = self.policy_early_losses(space, &acked, now);
        if !lost.is_empty() {
            self.loss_trigger = Some(LossTrigger::EarlyRetransmit);
            self.on_packets_lost(space, &lost, now);
            self.loss_trigger = None;
        }
        let early = lost.len();
        lost.extend(self.detect_lost(space, now));
        if lost.len() > early {
            self.on_packets_lost(space, &lost[early..], now);
        }
        self.on_packets_acked(space, &acked, controller_sampled, now);
        self.pto_count = 0;
        AckOutcome { acked, lost }
    }

    /// The RTT sample the controller sees for this ACK; returns whether
    /// there is one. Without adaptive reordering it is RFC 9002's. With it,
    /// it is Linux's `ca_rtt`: the RTT of the most recently sent packet the
    /// ACK newly acknowledged, so the ACKs that fill a reordering gap give
    /// samples too, and none is taken while a packet sent before that one
    /// is still outstanding. RFC 9002 samples only a newly acknowledged
    /// largest, which under reordering is nearly always a packet that
    /// overtook others: a faster way than the path's (netem's `reorder`
    /// sends it with no delay at all). Its RTT would halve a BDP estimate
    /// and hide the RTT rise HyStart++ watches for. Loss detection and
    /// the PTO keep RFC 9002's estimator.
    fn controller_rtt_sample(
        &mut self,
        space: SpaceId,
        acked: &[SentPacket<F>],
        rfc_sampled: bool,
        now: Instant,
    ) -> bool {
        if !self.config.adaptive_reordering {
            if rfc_sampled {
                self.rtt.controller_sample(self.rtt.latest());
            }
            return rfc_sampled;
        }
        let Some(newest) = acked.iter().rev().find(|p| p.ack_eliciting) else {
            return false;
        };
        let overtook = self.spaces[space.index()]
            .ledger
            .iter()
            .find(|p| p.in_flight)
            .is_some_and(|oldest| oldest.packet_number < newest.packet_number);
        if overtook {
            return false;
        }
        self.rtt
            .controller_sample(now.saturating_duration_since(newest.time_sent));
        true
    }

    fn on_packets_acked(
        &mut self,
        space: SpaceId,
        acked: &[SentPacket<F>],
        rtt_sampled: bool,
        now: Instant,
    ) {
        let mut acked_bytes = 0;
        let mut acked_packets = 0;
        let mut all_before_recovery = true;
        let mut largest: Option<&SentPacket<F>> = None;
        let mut any_in_flight = false;
        for packet in acked.iter().filter(|p| p.in_flight) {
            self.bytes_in_flight = self.bytes_in_flight.saturating_sub(packet.size);
            any_in_flight = true;
            if !self.on_current_path(space, packet.packet_number) {
                // Sent on the path the peer left: it only leaves flight
                // (RFC 9000 §9.4).
                continue;
            }
            acked_bytes += packet.size;
            acked_packets += 1;
            if self
                .recovery_start
                .is_none_or(|start| packet.time_sent > start)
            {
                all_before_recovery = false;
            }
            largest = Some(packet);
        }
        if !any_in_flight {
            return;
        }
        let rate = self
            .rate
            .on_ack(acked.iter().filter(|p| p.in_flight), now, self.rtt.min());
        // Only the current path's packets are observed and reach `cc`.
        let Some(largest) = largest else { return };
        if let Some(sample) = rate.filter(|s| !s.is_app_limited) {
            self.observed.max_delivery_rate =
                self.observed.max_delivery_rate.max(sample.delivery_rate);
            self.observed.max_bytes_in_flight =
                self.observed.max_bytes_in_flight.max(sample.tx_in_flight);
        }
        self.cc.on_ack(&AckEvent {
            now,
            acked_bytes,
            acked_packets,
            largest_acked: largest.packet_number,
            largest_acked_sent_time: largest.time_sent,
            rtt: self.rtt.sample(),
            rtt_sampled,
            bytes_in_flight: self.bytes_in_flight,
            app_limited: largest.app_limited,
            in_recovery: all_before_recovery,
            rate,
        });
    }

    /// Whether the one packet RFC 9002 §7.3.2 lets a sender send beyond
    /// the window on entering recovery is still to go.
    pub fn may_send_beyond_window(&self) -> bool {
        self.recovery_packet_allowed
    }

    /// Whether packet `packet_number` of `space` was sent on the current
    /// path, not one the peer left (`on_new_path`). Handshake spaces are
    /// gone before any move.
    fn on_current_path(&self, space: SpaceId, packet_number: u64) -> bool {
        space != SpaceId::Data || packet_number >= self.path_first_packet
    }

    /// Drops a space whose keys are discarded (RFC 9002 §6.4).
    pub fn discard_space(&mut self, space: SpaceId) -> Vec<SentPacket<F>> {
        let state = &mut self.spaces[space.index()];
        let dropped = state.ledger.drain();
        self.lost_memory.forget_space(space);
        state.loss_time = None;
        state.time_of_last_ack_eliciting = None;
        for packet in dropped.iter().filter(|p| p.in_flight) {
            self.bytes_in_flight = self.bytes_in_flight.saturating_sub(packet.size);
        }
        self.pto_count = 0;
        dropped
    }
}

#[cfg(test)]
mod rfc9002_tests;
#[cfg(test)]
mod tests;
