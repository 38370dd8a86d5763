//! The adaptive reordering window: RACK-TLP (RFC 8985) in RFC 9002 terms.
//!
//! RFC 9002 §6.1 declares a packet lost when `kPacketThreshold` (3) later
//! packets were acknowledged, or when it was sent more than
//! `kTimeThreshold`·max(smoothed_rtt, latest_rtt) (9/8) before now, and
//! allows both thresholds to adapt. Radio links reorder far more than 3
//! packets and more than an eighth of a round trip, so sift adapts them the
//! way RACK adapts its reordering window:
//!
//! - The time threshold becomes max(kTimeThreshold·rtt, rtt + RACK.reo_wnd),
//!   rtt = max(smoothed_rtt, latest_rtt): RACK's "sent RACK.rtt + reo_wnd
//!   before now" with RFC 9002's robust RTT. RACK.reo_wnd =
//!   min(RACK.reo_wnd_mult·RACK.min_RTT/4, SRTT) (§6.2 step 4) and
//!   `reo_wnd_mult` starts at 0, so until a loss proves spurious the
//!   threshold is RFC 9002's exactly: the window starts small.
//! - In QUIC a spurious loss is a packet acknowledged after it was declared
//!   lost (TCP learns the same from a DSACK). Each one grows `reo_wnd_mult`
//!   by one, at most once per round trip (`RACK.dsack_round`: until
//!   everything sent before the growth is acknowledged), and sets
//!   `RACK.reo_wnd_persist` to 16.
//! - sift also measures how late each spurious loss arrived: its age when
//!   acknowledged minus max(smoothed_rtt, latest_rtt). The window is at
//!   least that lateness plus one step (min_RTT/4), up to
//!   [`MAX_LATENESS_RTTS`]·rtt. RFC 8985 caps the window at SRTT because
//!   TCP's SRTT follows the packets that arrive in order; QUIC samples RTT
//!   only from the largest acknowledged packet (RFC 9002 §5.1), which on a
//!   reordering path is usually one that jumped ahead, so smoothed_rtt
//!   there sits well below what overtaken packets take (netem's `reorder`
//!   sends 5% of packets past the queue and the delay: smoothed_rtt ≈ 21 ms
//!   on a 40 ms path). Growing one min_RTT/4 step per round trip up to that
//!   SRTT never catches up.
//! - The packet threshold grows the same way, to the distance the late
//!   packet was overtaken by plus one (Linux `tcp_check_sack_reordering`:
//!   `reordering = max(reordering, fack − seq + 1)`), capped at 300 packets
//!   (Linux `tcp_max_reordering`).
//! - Decay: every recovery episode (congestion event) without a spurious loss
//!   since the previous one counts `reo_wnd_persist` down; at zero both
//!   thresholds return to their configured values ("reset the window after
//!   16 DSACK-free recoveries", §6.2 step 4).
//!
//! RFC 8985 leans on the packet threshold only until reordering has been
//! seen (`RACK.reordering_seen`, §6.2 step 3: reo_wnd = 0 while in recovery
//! or once DupThresh segments are SACKed) and then on time alone; sift keeps
//! both rules of RFC 9002 and widens both, so a path that never reorders
//! behaves exactly as RFC 9002 says. Tail-loss probes are RFC 9002's PTO,
//! unchanged (`timer.rs`). Corruption notices never pass through here.
//!
//! Everything in this file is a pure function of its inputs or a small
//! state machine fed packet numbers and durations: no clock, no I/O.

use std::time::{Duration, Instant};

use super::GRANULARITY;

/// RFC 8985 §6.2 step 4: the reordering window is reset after this many
/// recoveries without a spurious loss (`RACK.reo_wnd_persist = 16`).
pub const REO_WND_PERSIST: u32 = 16;
/// Largest `RACK.reo_wnd_mult` (Linux keeps `reo_wnd_steps` in a byte);
/// the window is capped at SRTT long before.
pub const MAX_REO_WND_MULT: u32 = 255;
/// The measured lateness of spurious losses widens the window up to this
/// many times max(smoothed_rtt, latest_rtt), so one absurdly late
/// acknowledgement cannot disable time-based loss detection.
pub const MAX_LATENESS_RTTS: u32 = 8;
/// Largest adaptive packet threshold: Linux's `tcp_max_reordering` default
/// (net.ipv4.tcp_max_reordering = 300).
pub const MAX_PACKET_THRESHOLD: u64 = 300;

/// RACK.reo_wnd (RFC 8985 §6.2 step 4, `RACK_update_reo_wnd`'s return):
/// min(reo_wnd_mult · min_RTT / 4, SRTT).
pub fn reordering_window(reo_wnd_mult: u32, min_rtt: Duration, smoothed_rtt: Duration) -> Duration {
    (min_rtt / 4).saturating_mul(reo_wnd_mult).min(smoothed_rtt)
}

/// How long after it was sent a packet overtaken by a later acknowledged
/// one is declared lost: max(kTimeThreshold·rtt, rtt + reo_wnd, kGranularity)
/// with rtt = max(smoothed_rtt, latest_rtt) (RFC 9002 §6.1.2, widened by
/// RFC 8985's reordering window; with `reo_wnd` zero it is RFC 9002's).
pub fn loss_delay(rtt: Duration, time_threshold: (u32, u32), reo_wnd: Duration) -> Duration {
    let (numerator, denominator) = time_threshold;
    let rfc9002 = rtt * numerator / denominator.max(1);
    rfc9002.max(rtt.saturating_add(reo_wnd)).max(GRANULARITY)
}

/// What loss detection concludes about one outstanding packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketState {
    /// Sent after the largest acknowledged: nothing can be said yet.
    InFlight,
    /// Overtaken, but within both thresholds: lost at this time unless
    /// acknowledged first (RACK's reordering timer).
    LostAt(Instant),
    /// Overtaken beyond a threshold: lost now.
    Lost,
}

/// RACK_detect_loss (RFC 8985 §6.2 step 5) for one packet, in RFC 9002
/// terms: a packet sent before the largest acknowledged one is lost once it
/// is `packet_threshold` packets behind it, or once `loss_delay` has passed
/// since it was sent.
pub fn detect_loss(
    packet_number: u64,
    time_sent: Instant,
    largest_acked: u64,
    packet_threshold: u64,
    loss_delay: Duration,
    now: Instant,
) -> PacketState {
    if packet_number > largest_acked {
        return PacketState::InFlight;
    }
    let deadline = time_sent.checked_add(loss_delay);
    let too_old = deadline.is_none_or(|deadline| deadline <= now);
    let too_far = largest_acked >= packet_number.saturating_add(packet_threshold);
    match deadline {
        Some(deadline) if !too_old && !too_far => PacketState::LostAt(deadline),
        _ => PacketState::Lost,
    }
}

/// The packet threshold after `packet_number` was acknowledged late while
/// `largest_acked` already was: far enough that it would not have been
/// declared lost (Linux `tcp_check_sack_reordering`), never lower than
/// before, at most [`MAX_PACKET_THRESHOLD`].
pub fn packet_threshold_after_reordering(
    current: u64,
    packet_number: u64,
    largest_acked: u64,
) -> u64 {
    let distance = largest_acked
        .saturating_sub(packet_number)
        .saturating_add(1);
    current.max(distance.min(MAX_PACKET_THRESHOLD))
}

/// The adaptive thresholds of one connection (RFC 8985's per-connection
/// RACK state that concerns reordering).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReorderingWindow {
    /// Whether spurious losses widen the thresholds at all.
    adaptive: bool,
    /// The configured packet threshold (RFC 9002 kPacketThreshold).
    base_packet_threshold: u64,
    /// The packet threshold in force.
    packet_threshold: u64,
    /// RACK.reo_wnd_mult; 0 until a loss proves spurious.
    reo_wnd_mult: u32,
    /// RACK.reo_wnd_persist: recoveries left before the thresholds reset.
    reo_wnd_persist: u32,
    /// RACK.dsack_round: the window grows again only once the largest
    /// acknowledged packet reaches this packet number.
    growth_round_end: Option<u64>,
    /// A spurious loss was seen since the last recovery episode began.
    spurious_since_episode: bool,
    /// The largest lateness of a spurious loss (plus one step) since the
    /// thresholds were last reset.
    lateness: Duration,
}

impl ReorderingWindow {
    /// Thresholds starting at RFC 9002's, widened by spurious losses only if
    /// `adaptive`.
    pub fn new(packet_threshold: u64, adaptive: bool) -> Self {
        Self {
            adaptive,
            base_packet_threshold: packet_threshold,
            packet_threshold,
            reo_wnd_mult: 0,
            reo_wnd_persist: 0,
            growth_round_end: None,
            spurious_since_episode: false,
            lateness: Duration::ZERO,
        }
    }

    /// The packet threshold in force.
    pub fn packet_threshold(&self) -> u64 {
        self.packet_threshold
    }

    /// RACK.reo_wnd_mult.
    #[cfg(test)]
    pub fn reo_wnd_mult(&self) -> u32 {
        self.reo_wnd_mult
    }

    /// The reordering window for these RTT views: RACK.reo_wnd, or the
    /// measured lateness if larger (at most [`MAX_LATENESS_RTTS`]·`rtt`,
    /// `rtt` = max(smoothed_rtt, latest_rtt)).
    pub fn window(&self, min_rtt: Duration, smoothed_rtt: Duration, rtt: Duration) -> Duration {
        let measured = self.lateness.min(rtt.saturating_mul(MAX_LATENESS_RTTS));
        reordering_window(self.reo_wnd_mult, min_rtt, smoothed_rtt).max(measured)
    }

    /// `packet_number` was acknowledged after it had been declared lost,
    /// `lateness` after max(smoothed_rtt, latest_rtt) had passed since it
    /// was sent, when the largest acknowledged packet was `largest_acked` and
    /// the largest sent `largest_sent` (RACK_update_reo_wnd's DSACK branch).
    /// `step` is RACK's min_RTT/4, added to the lateness as a margin.
    pub fn on_spurious_loss(
        &mut self,
        packet_number: u64,
        largest_acked: u64,
        largest_sent: u64,
        lateness: Duration,
        step: Duration,
    ) {
        self.spurious_since_episode = true;
        if !self.adaptive {
            return;
        }
        self.lateness = self.lateness.max(lateness.saturating_add(step));
        self.packet_threshold =
            packet_threshold_after_reordering(self.packet_threshold, packet_number, largest_acked);
        if self.growth_round_end.is_some() {
            return;
        }
        self.reo_wnd_mult = (self.reo_wnd_mult + 1).min(MAX_REO_WND_MULT);
        self.reo_wnd_persist = REO_WND_PERSIST;
        self.growth_round_end = Some(largest_sent.saturating_add(1));
    }

    /// The largest acknowledged packet is now `largest_acked`: a growth round
    /// that ended lets the window grow again (RFC 8985: SND.UNA ≥
    /// RACK.dsack_round).
    pub fn on_largest_acked(&mut self, largest_acked: u64) {
        if self
            .growth_round_end
            .is_some_and(|end| largest_acked >= end)
        {
            self.growth_round_end = None;
        }
    }

    /// A recovery episode begins (a congestion event). One without a
    /// spurious loss since the previous episode counts towards the reset.
    pub fn on_recovery_episode(&mut self) {
        if !std::mem::take(&mut self.spurious_since_episode) && self.reo_wnd_persist > 0 {
            self.reo_wnd_persist -= 1;
            if self.reo_wnd_persist == 0 {
                self.reo_wnd_mult = 0;
                self.lateness = Duration::ZERO;
                self.packet_threshold = self.base_packet_threshold;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn reordering_window_is_quarter_min_rtt_steps_capped_at_srtt() {
        // min_RTT 40 ms: steps of 10 ms; SRTT 50 ms caps the sixth step.
        let windows: Vec<u128> = (0..7)
            .map(|mult| reordering_window(mult, ms(40), ms(50)).as_millis())
            .collect();
        assert_eq!(windows, [0, 10, 20, 30, 40, 50, 50]);
    }

    #[test]
    fn loss_delay_is_rfc9002_until_the_window_exceeds_an_eighth() {
        // rtt 80 ms: RFC 9002's 9/8 → 90 ms; a 10 ms window (= rtt/8) adds
        // nothing, a 20 ms one makes it 100 ms.
        assert_eq!(loss_delay(ms(80), (9, 8), Duration::ZERO), ms(90));
        assert_eq!(loss_delay(ms(80), (9, 8), ms(10)), ms(90));
        assert_eq!(loss_delay(ms(80), (9, 8), ms(20)), ms(100));
        assert_eq!(
            loss_delay(Duration::ZERO, (9, 8), Duration::ZERO),
            GRANULARITY
        );
    }

    #[test]
    fn detect_loss_applies_both_thresholds_to_overtaken_packets_only() {
        let t0 = Instant::now();
        let delay = ms(45);
        // Sent after the largest acknowledged: no verdict.
        assert_eq!(detect_loss(9, t0, 8, 3, delay, t0), PacketState::InFlight);
        // Three behind: lost at once.
        assert_eq!(detect_loss(5, t0, 8, 3, delay, t0), PacketState::Lost);
        // Two behind: lost 45 ms after it was sent, unless acked first.
        assert_eq!(
            detect_loss(6, t0, 8, 3, delay, t0 + ms(10)),
            PacketState::LostAt(t0 + delay)
        );
        assert_eq!(
            detect_loss(6, t0, 8, 3, delay, t0 + delay),
            PacketState::Lost
        );
    }

    #[test]
    fn packet_threshold_grows_to_the_reordering_distance_and_is_capped() {
        // Packet 10 acked late while 30 was: 21 packets would have spared it.
        assert_eq!(packet_threshold_after_reordering(3, 10, 30), 21);
        assert_eq!(packet_threshold_after_reordering(40, 10, 30), 40);
        assert_eq!(
            packet_threshold_after_reordering(3, 0, 10_000),
            MAX_PACKET_THRESHOLD
        );
    }

    #[test]
    fn window_grows_once_per_round_trip_and_resets_after_sixteen_quiet_recoveries() {
        let mut window = ReorderingWindow::new(3, true);
        // A spurious loss of 10 (largest acked 14, largest sent 40).
        window.on_spurious_loss(10, 14, 40, Duration::ZERO, ms(10));
        assert_eq!((window.reo_wnd_mult(), window.packet_threshold()), (1, 5));
        // Another in the same round: the packet threshold grows, the
        // time window waits for the round to end (largest acked ≥ 41).
        window.on_spurious_loss(12, 20, 45, Duration::ZERO, ms(10));
        assert_eq!((window.reo_wnd_mult(), window.packet_threshold()), (1, 9));
        window.on_largest_acked(40);
        window.on_spurious_loss(41, 42, 60, Duration::ZERO, ms(10));
        assert_eq!(window.reo_wnd_mult(), 1, "round ends at 41");
        window.on_largest_acked(41);
        window.on_spurious_loss(50, 52, 80, Duration::ZERO, ms(10));
        assert_eq!(window.reo_wnd_mult(), 2);
        // Recoveries: the first follows spurious losses and does not count;
        // sixteen quiet ones reset both thresholds.
        window.on_recovery_episode();
        for _ in 0..15 {
            window.on_recovery_episode();
            assert_eq!(window.reo_wnd_mult(), 2);
        }
        window.on_recovery_episode();
        assert_eq!((window.reo_wnd_mult(), window.packet_threshold()), (0, 3));
    }

    #[test]
    fn a_fixed_window_never_adapts() {
        let mut window = ReorderingWindow::new(3, false);
        window.on_spurious_loss(10, 30, 40, ms(50), ms(10));
        assert_eq!((window.reo_wnd_mult(), window.packet_threshold()), (0, 3));
        assert_eq!(window.window(ms(40), ms(50), ms(50)), Duration::ZERO);
    }

    #[test]
    fn the_window_covers_the_measured_lateness_up_to_eight_rtts() {
        // QUIC's smoothed RTT follows the packets that jumped ahead (20 ms);
        // an overtaken one arrived 35 ms after that: window 35 + 5 ms.
        let mut window = ReorderingWindow::new(3, true);
        window.on_spurious_loss(10, 30, 40, ms(35), ms(5));
        assert_eq!(window.window(ms(20), ms(20), ms(20)), ms(40));
        // One absurd straggler: capped at 8 · 20 ms.
        window.on_spurious_loss(11, 30, 40, ms(5_000), ms(5));
        assert_eq!(window.window(ms(20), ms(20), ms(20)), ms(160));
    }
}
