//! Loss recovery: RTT estimation, the sent-packet ledgers, RFC 9002 loss
//! detection and PTO, corruption notices, and the calls into the congestion
//! controller.
//!
//! Owns: which packets are outstanding, when they are declared lost or
//! corrupted, bytes in flight, the recovery period, pacing.
//! Must not: read the clock (callers pass `now`), know frame contents (the
//! connection's per-packet record is the opaque `F`), touch sockets.

mod pacer;
mod rtt;
mod sent;

use std::collections::BTreeSet;
use std::ops::RangeInclusive;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use sift_cc::{AckEvent, CongestionControl, CorruptionEvent, LossEvent, LossVerdict, Metrics};

pub use pacer::Pacer;
pub use rtt::{RttEstimator, GRANULARITY, INITIAL_RTT, MAX_RTT_SAMPLE};
pub use sent::{SentLedger, SentPacket};

/// RFC 9002 §6.1.1 kPacketThreshold.
pub const PACKET_THRESHOLD: u64 = 3;
/// RFC 9002 §6.1.2 kTimeThreshold = 9/8.
pub const TIME_THRESHOLD: (u32, u32) = (9, 8);
/// RFC 9002 §7.6.1 kPersistentCongestionThreshold.
pub const PERSISTENT_CONGESTION_THRESHOLD: u32 = 3;
/// Corrupted packet numbers remembered so that a notice repeated in later
/// ACK-bearing packets is recognised as a repeat, not as a bogus name.
const CORRUPTION_MEMORY: usize = 4096;

/// A packet-number space (RFC 9000 §12.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SpaceId {
    Initial,
    Handshake,
    Data,
}

impl SpaceId {
    pub const ALL: [SpaceId; 3] = [SpaceId::Initial, SpaceId::Handshake, SpaceId::Data];

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
    /// Pace packets over the round trip.
    pub pacing: bool,
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
            pacing: true,
        }
    }
}

/// A loss verdict the controller made, with the packets it was about.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerdictRecord {
    pub space: SpaceId,
    pub packet_numbers: Vec<u64>,
    pub verdict: LossVerdict,
}

/// Counters kept by recovery.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecoveryStats {
    pub lost_packets: u64,
    pub lost_bytes: u64,
    /// Packets removed from flight by a corruption notice.
    pub corrupted_packets: u64,
    /// Packet numbers named in CORRUPTED frames that were never sent, already
    /// acked or already lost (and not a repeat of an applied notice).
    pub ignored_corruption_names: u64,
    pub ptos: u64,
    pub congestion_events: u64,
    pub persistent_congestion_events: u64,
}

/// What an ACK frame did.
#[derive(Debug)]
pub struct AckOutcome<F> {
    pub acked: Vec<SentPacket<F>>,
    pub lost: Vec<SentPacket<F>>,
}

/// What the loss-detection timer did.
#[derive(Debug)]
pub struct TimeoutOutcome<F> {
    pub lost: Vec<SentPacket<F>>,
    pub lost_space: Option<SpaceId>,
    /// PTO fired: send this many ack-eliciting probes in this space.
    pub probes: Option<(SpaceId, u32)>,
}

#[derive(Debug)]
struct SpaceState<F> {
    ledger: SentLedger<F>,
    largest_acked: Option<u64>,
    loss_time: Option<Instant>,
    time_of_last_ack_eliciting: Option<Instant>,
}

impl<F> Default for SpaceState<F> {
    fn default() -> Self {
        Self {
            ledger: SentLedger::default(),
            largest_acked: None,
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
    pacer: Pacer,
    app_limited: bool,
    /// The peer's max_ack_delay (RFC 9000 §18.2), applied once confirmed.
    max_ack_delay: Duration,
    handshake_confirmed: bool,
    has_handshake_keys: bool,
    recently_corrupted: BTreeSet<(SpaceId, u64)>,
    verdicts: Vec<VerdictRecord>,
    stats: RecoveryStats,
}

impl<F> Recovery<F> {
    /// Recovery for a connection whose packets carry at most `mss` bytes.
    pub fn new(config: RecoveryConfig, cc: Box<dyn CongestionControl>, mss: u64) -> Self {
        let mut pacer = Pacer::new(mss);
        if let Some(limit) = cc.metrics().fields.get("burst_limit_packets") {
            pacer.set_burst_limit(*limit as u64, mss);
        }
        Self {
            rtt: RttEstimator::new(config.initial_rtt),
            config,
            spaces: Default::default(),
            first_rtt_sample: None,
            cc,
            bytes_in_flight: 0,
            pto_count: 0,
            recovery_start: None,
            pacer,
            app_limited: false,
            max_ack_delay: Duration::from_millis(25),
            handshake_confirmed: false,
            has_handshake_keys: false,
            recently_corrupted: BTreeSet::new(),
            verdicts: Vec::new(),
            stats: RecoveryStats::default(),
        }
    }

    // ---- state the connection tells us -------------------------------

    /// The peer's max_ack_delay, from its transport parameters.
    pub fn set_max_ack_delay(&mut self, delay: Duration) {
        self.max_ack_delay = delay;
    }

    pub fn set_handshake_keys(&mut self) {
        self.has_handshake_keys = true;
    }

    /// The handshake is confirmed: application-space PTOs may run and the
    /// peer's ack delay is trusted (RFC 9002 §5.3, §6.2.1).
    pub fn set_handshake_confirmed(&mut self) {
        self.handshake_confirmed = true;
    }

    /// The sender ran out of data with window to spare.
    pub fn set_app_limited(&mut self, app_limited: bool) {
        self.app_limited = app_limited;
    }

    // ---- queries -------------------------------------------------------

    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }

    pub fn bytes_in_flight(&self) -> u64 {
        self.bytes_in_flight
    }

    pub fn window(&self) -> u64 {
        self.cc.window()
    }

    pub fn ssthresh(&self) -> u64 {
        self.cc.ssthresh()
    }

    pub fn cc_metrics(&self) -> Metrics {
        self.cc.metrics()
    }

    pub fn stats(&self) -> RecoveryStats {
        self.stats
    }

    pub fn pto_count(&self) -> u32 {
        self.pto_count
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

    fn pacing_rate(&self) -> u64 {
        self.cc
            .pacing_rate()
            .unwrap_or_else(|| Pacer::rate_for(self.cc.window(), self.rtt.smoothed()))
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
        packet.app_limited = self.app_limited;
        if packet.in_flight {
            self.bytes_in_flight += packet.size;
            self.cc.on_sent(now, packet.size, self.bytes_in_flight);
            if self.config.pacing {
                let rate = self.pacing_rate();
                self.pacer.on_sent(now, packet.size, rate);
            }
        }
        let state = &mut self.spaces[space.index()];
        if packet.ack_eliciting {
            state.time_of_last_ack_eliciting = Some(now);
        }
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
        let mut largest_in_frame = None;
        {
            let state = &mut self.spaces[space.index()];
            for range in ranges {
                largest_in_frame = Some(largest_in_frame.unwrap_or(0).max(*range.end()));
                state.ledger.remove_range(range, &mut acked);
            }
        }
        let Some(largest_in_frame) = largest_in_frame else {
            return AckOutcome {
                acked,
                lost: Vec::new(),
            };
        };
        {
            let state = &mut self.spaces[space.index()];
            state.largest_acked = Some(
                state
                    .largest_acked
                    .map_or(largest_in_frame, |l| l.max(largest_in_frame)),
            );
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
            if largest.packet_number == largest_in_frame && acked.iter().any(|p| p.ack_eliciting) {
                let latest = now.saturating_duration_since(largest.time_sent);
                let delay = match space {
                    SpaceId::Initial => Duration::ZERO,
                    _ if self.handshake_confirmed => ack_delay.min(self.max_ack_delay),
                    _ => ack_delay,
                };
                self.rtt.update(latest, delay);
                self.first_rtt_sample.get_or_insert(now);
                rtt_sampled = true;
            }
        }

        let mut lost = self.policy_early_losses(space, &acked, now);
        lost.extend(self.detect_lost(space, now));
        if !lost.is_empty() {
            self.on_packets_lost(space, &lost, now);
        }
        self.on_packets_acked(&acked, rtt_sampled, now);
        self.pto_count = 0;
        AckOutcome { acked, lost }
    }

    /// Vegas C and D (Hengartner et al. §VI), when the controller asks for
    /// them: retransmit the oldest outstanding packet early.
    fn policy_early_losses(
        &mut self,
        space: SpaceId,
        acked: &[SentPacket<F>],
        now: Instant,
    ) -> Vec<SentPacket<F>> {
        let policy = self.cc.recovery_policy();
        if !(policy.fine_grained_early_retransmit || policy.retransmit_on_partial_ack) {
            return Vec::new();
        }
        let state = &self.spaces[space.index()];
        let Some(oldest) = state.ledger.oldest() else {
            return Vec::new();
        };
        let newest_acked = acked.last().map_or(0, |p| p.packet_number);
        if oldest.packet_number > newest_acked {
            return Vec::new(); // no gap below what was acked
        }
        let fine_timeout = policy.fine_grained_early_retransmit
            && now.saturating_duration_since(oldest.time_sent) > self.rtt.fine_grained_timeout();
        let partial_ack = policy.retransmit_on_partial_ack
            && self
                .recovery_start
                .is_some_and(|start| oldest.time_sent <= start);
        if !(fine_timeout || partial_ack) {
            return Vec::new();
        }
        let pn = oldest.packet_number;
        self.spaces[space.index()]
            .ledger
            .remove(pn)
            .into_iter()
            .collect()
    }

    /// RFC 9002 §6.1: packet and time thresholds.
    fn detect_lost(&mut self, space: SpaceId, now: Instant) -> Vec<SentPacket<F>> {
        let (num, den) = self.config.time_threshold;
        let rtt_basis = self.rtt.latest().max(self.rtt.smoothed());
        let loss_delay = (rtt_basis * num / den).max(GRANULARITY);
        let lost_send_time = now.checked_sub(loss_delay);
        let packet_threshold = self.config.packet_threshold;
        let state = &mut self.spaces[space.index()];
        state.loss_time = None;
        let Some(largest_acked) = state.largest_acked else {
            return Vec::new();
        };
        let mut lost_numbers = Vec::new();
        let mut loss_time: Option<Instant> = None;
        for packet in state.ledger.iter() {
            if packet.packet_number > largest_acked {
                break;
            }
            let too_old = lost_send_time.is_some_and(|t| packet.time_sent <= t);
            let too_far = largest_acked >= packet.packet_number + packet_threshold;
            if too_old || too_far {
                lost_numbers.push(packet.packet_number);
            } else {
                let when = packet.time_sent + loss_delay;
                loss_time = Some(loss_time.map_or(when, |t| t.min(when)));
            }
        }
        state.loss_time = loss_time;
        lost_numbers
            .into_iter()
            .filter_map(|pn| state.ledger.remove(pn))
            .collect()
    }

    fn on_packets_acked(&mut self, acked: &[SentPacket<F>], rtt_sampled: bool, now: Instant) {
        let mut acked_bytes = 0;
        let mut acked_packets = 0;
        let mut all_before_recovery = true;
        let mut largest: Option<&SentPacket<F>> = None;
        for packet in acked.iter().filter(|p| p.in_flight) {
            self.bytes_in_flight = self.bytes_in_flight.saturating_sub(packet.size);
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
        let Some(largest) = largest else { return };
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
        });
    }

    /// Takes lost packets out of flight; returns their in-flight bytes and
    /// the send time of the newest one (None if none was in flight).
    fn remove_lost_from_flight(&mut self, lost: &[SentPacket<F>]) -> (u64, Option<Instant>) {
        let mut lost_bytes = 0;
        let mut newest_lost: Option<Instant> = None;
        for packet in lost {
            self.stats.lost_packets += 1;
            self.stats.lost_bytes += packet.size;
            if packet.in_flight {
                self.bytes_in_flight = self.bytes_in_flight.saturating_sub(packet.size);
                lost_bytes += packet.size;
                newest_lost =
                    Some(newest_lost.map_or(packet.time_sent, |t| t.max(packet.time_sent)));
            }
        }
        (lost_bytes, newest_lost)
    }

    /// Starts a recovery period and tells the controller; records its
    /// verdict against the packets of this event.
    fn congestion_event(
        &mut self,
        space: SpaceId,
        lost: &[SentPacket<F>],
        lost_bytes: u64,
        newest_lost: Instant,
        persistent: bool,
        now: Instant,
    ) {
        self.recovery_start = Some(now);
        self.stats.congestion_events += 1;
        if persistent {
            self.stats.persistent_congestion_events += 1;
        }
        let lost_packets: Vec<u64> = lost.iter().map(|p| p.packet_number).collect();
        let verdict = self.cc.on_congestion(&LossEvent {
            now,
            lost_packets: lost_packets.clone(),
            lost_bytes,
            largest_lost_sent_time: newest_lost,
            bytes_in_flight: self.bytes_in_flight,
            rtt: self.rtt.sample(),
            persistent,
        });
        self.verdicts.push(VerdictRecord {
            space,
            packet_numbers: lost_packets,
            verdict,
        });
    }

    fn on_packets_lost(&mut self, space: SpaceId, lost: &[SentPacket<F>], now: Instant) {
        let (lost_bytes, newest_lost) = self.remove_lost_from_flight(lost);
        let Some(newest_lost) = newest_lost else {
            return;
        };
        let persistent = self.in_persistent_congestion(space, lost);
        let in_current_period = self
            .recovery_start
            .is_some_and(|start| newest_lost <= start)
            && self.cc.recovery_policy().one_reduction_per_window;
        if in_current_period && !persistent {
            return;
        }
        self.congestion_event(space, lost, lost_bytes, newest_lost, persistent, now);
    }

    /// RFC 9002 §7.6: a run of consecutive lost ack-eliciting packets,
    /// all sent after the first RTT sample, spanning the persistent
    /// congestion duration.
    fn in_persistent_congestion(&self, space: SpaceId, lost: &[SentPacket<F>]) -> bool {
        let Some(first_sample) = self.first_rtt_sample else {
            return false;
        };
        let duration = self.pto_period(space) * self.config.persistent_congestion_threshold;
        let mut run: Option<(u64, Instant)> = None; // (previous pn, run start time)
        for packet in lost
            .iter()
            .filter(|p| p.ack_eliciting && p.time_sent > first_sample)
        {
            run = match run {
                Some((previous, start)) if packet.packet_number == previous + 1 => {
                    if packet.time_sent.saturating_duration_since(start) >= duration {
                        return true;
                    }
                    Some((packet.packet_number, start))
                }
                _ => Some((packet.packet_number, packet.time_sent)),
            };
        }
        false
    }

    /// A CORRUPTED frame named `ranges` in `space`. Outstanding packets named
    /// there leave flight without a congestion event and are returned for
    /// retransmission. Call before processing an ACK in the same packet, or a
    /// corrupted packet with three later acks is counted as congestion.
    pub fn on_corrupted(
        &mut self,
        space: SpaceId,
        ranges: impl Iterator<Item = RangeInclusive<u64>>,
        now: Instant,
    ) -> Vec<SentPacket<F>> {
        let mut corrupted = Vec::new();
        for range in ranges {
            let before = corrupted.len();
            self.spaces[space.index()]
                .ledger
                .remove_range(range.clone(), &mut corrupted);
            let named = range.end().saturating_sub(*range.start()).saturating_add(1);
            let found = (corrupted.len() - before) as u64;
            let repeats = self
                .recently_corrupted
                .range((space, *range.start())..=(space, *range.end()))
                .count() as u64;
            self.stats.ignored_corruption_names = self
                .stats
                .ignored_corruption_names
                .saturating_add(named.saturating_sub(found).saturating_sub(repeats));
        }
        if corrupted.is_empty() {
            return corrupted;
        }
        let mut corrupted_bytes = 0;
        for packet in &corrupted {
            self.recently_corrupted
                .insert((space, packet.packet_number));
            if packet.in_flight {
                self.bytes_in_flight = self.bytes_in_flight.saturating_sub(packet.size);
                corrupted_bytes += packet.size;
            }
        }
        while self.recently_corrupted.len() > CORRUPTION_MEMORY {
            self.recently_corrupted.pop_first();
        }
        self.stats.corrupted_packets += corrupted.len() as u64;
        self.cc.on_corruption(&CorruptionEvent {
            now,
            corrupted_packets: corrupted.iter().map(|p| p.packet_number).collect(),
            corrupted_bytes,
            bytes_in_flight: self.bytes_in_flight,
            rtt: self.rtt.sample(),
        });
        // The notice proves the path is alive: it resets PTO backoff as an
        // ACK does.
        self.pto_count = 0;
        corrupted
    }

    /// Drops a space whose keys are discarded (RFC 9002 §6.4).
    pub fn discard_space(&mut self, space: SpaceId) -> Vec<SentPacket<F>> {
        let state = &mut self.spaces[space.index()];
        let dropped = state.ledger.drain();
        state.loss_time = None;
        state.time_of_last_ack_eliciting = None;
        for packet in dropped.iter().filter(|p| p.in_flight) {
            self.bytes_in_flight = self.bytes_in_flight.saturating_sub(packet.size);
        }
        self.pto_count = 0;
        dropped
    }

    // ---- the loss-detection timer ---------------------------------------

    fn timeout_duration(&self, space: SpaceId) -> Duration {
        let backoff = 1u32 << self.pto_count.min(16);
        match self.config.timeout {
            TimeoutMode::Pto => self.pto_period(space) * backoff,
            TimeoutMode::Rto => self.pto_period(space).max(self.config.min_rto) * backoff,
        }
    }

    fn earliest_loss_time(&self) -> Option<(Instant, SpaceId)> {
        SpaceId::ALL
            .iter()
            .filter_map(|&s| self.spaces[s.index()].loss_time.map(|t| (t, s)))
            .min()
    }

    fn pto_time(&self, now: Instant) -> Option<(Instant, SpaceId)> {
        let any_in_flight = SpaceId::ALL
            .iter()
            .any(|s| self.spaces[s.index()].ledger.has_ack_eliciting());
        if !any_in_flight {
            // Client anti-deadlock (RFC 9002 §6.2.2.1): until the handshake
            // is confirmed, keep a timer so a lost server flight is probed.
            if self.handshake_confirmed {
                return None;
            }
            let space = if self.has_handshake_keys {
                SpaceId::Handshake
            } else {
                SpaceId::Initial
            };
            return Some((now + self.timeout_duration(space), space));
        }
        let mut best: Option<(Instant, SpaceId)> = None;
        for space in SpaceId::ALL {
            let state = &self.spaces[space.index()];
            if !state.ledger.has_ack_eliciting() {
                continue;
            }
            if space == SpaceId::Data && !self.handshake_confirmed {
                break;
            }
            let Some(last) = state.time_of_last_ack_eliciting else {
                continue;
            };
            let at = last + self.timeout_duration(space);
            if best.is_none_or(|(t, _)| at < t) {
                best = Some((at, space));
            }
        }
        best
    }

    /// When the loss-detection timer fires, if armed. `anti_deadlock` is
    /// true for a client that has not yet confirmed the handshake.
    pub fn loss_detection_timer(&self, now: Instant, anti_deadlock: bool) -> Option<Instant> {
        if let Some((t, _)) = self.earliest_loss_time() {
            return Some(t);
        }
        let any_in_flight = SpaceId::ALL
            .iter()
            .any(|s| self.spaces[s.index()].ledger.has_ack_eliciting());
        if !any_in_flight && !anti_deadlock {
            return None;
        }
        self.pto_time(now).map(|(t, _)| t)
    }

    /// The loss-detection timer fired (RFC 9002 §6.2 OnLossDetectionTimeout).
    pub fn on_loss_detection_timeout(&mut self, now: Instant) -> TimeoutOutcome<F> {
        if let Some((_, space)) = self.earliest_loss_time() {
            let lost = self.detect_lost(space, now);
            if !lost.is_empty() {
                self.on_packets_lost(space, &lost, now);
            }
            return TimeoutOutcome {
                lost,
                lost_space: Some(space),
                probes: None,
            };
        }
        let Some((_, space)) = self.pto_time(now) else {
            return TimeoutOutcome {
                lost: Vec::new(),
                lost_space: None,
                probes: None,
            };
        };
        self.stats.ptos += 1;
        self.pto_count += 1;
        match self.config.timeout {
            TimeoutMode::Pto => TimeoutOutcome {
                lost: Vec::new(),
                lost_space: None,
                probes: Some((space, if self.pto_count > 1 { 2 } else { 1 })),
            },
            TimeoutMode::Rto => {
                // Go-back-N: everything outstanding is presumed lost and the
                // window collapses (RFC 6298 §5.5, RFC 5681 §3.1).
                let lost = self.spaces[space.index()].ledger.drain();
                self.spaces[space.index()].loss_time = None;
                self.on_timeout_loss(space, &lost, now);
                TimeoutOutcome {
                    lost,
                    lost_space: Some(space),
                    probes: Some((space, 1)),
                }
            }
        }
    }

    fn on_timeout_loss(&mut self, space: SpaceId, lost: &[SentPacket<F>], now: Instant) {
        let (lost_bytes, newest_lost) = self.remove_lost_from_flight(lost);
        self.congestion_event(
            space,
            lost,
            lost_bytes,
            newest_lost.unwrap_or(now),
            true,
            now,
        );
    }
}

#[cfg(test)]
mod tests;
