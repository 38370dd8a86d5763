//! sift's standing-queue rule (`BbrConfig::standing_queue_response`): how
//! BBR yields to a loss-based flow that keeps the bottleneck's queue full.
//!
//! The draft bounds BBR's flight only when a bandwidth probe loses more than
//! `LossThresh` (2%) of it (`inflight_longterm`), and its short-term cut
//! never goes below what the last round delivered. Beside CUBIC on a
//! drop-tail buffer of about one BDP neither binds: CUBIC keeps the queue
//! near full, BBR's probes push it over, and the drops are shared by
//! arrival, so BBR sees 0.3% loss — well under 2% — while CUBIC cuts its
//! window at every one of them. Measured with `sift-lab run` (50 Mb/s,
//! 50 ms each way, queue 420, 60 s, seeds 1–3): BBR took 0.81 of the two
//! flows' bytes, holding 1.5 BDP in flight with `inflight_longterm` at 1.7
//! BDP (docs/notes/2026-11-26-sharing-with-cubic.md). Linux's BBRv3 says as
//! much of itself: its probing time scale aims at Reno/CUBIC fairness "up
//! to a BDP of at least 62 packets"; this path's is 463.
//!
//! The rule: a loss round whose RTT samples of packets sent in
//! ProbeBW_CRUISE all stayed above min_rtt by more than min_rtt/8 (RFC
//! 9406's fraction) or ten jitter steps, where the path jitters, ran over a
//! standing queue. When the last CRUISE round and the end of the CRUISE
//! phase before it both saw one (BBR's own leftover queue does not outlive
//! the DOWN between them), another flow keeps it, and any loss in ProbeBW is
//! a congestion signal, as it is for that flow: `inflight_longterm` becomes
//! β = 0.7 times the flight when the lost packet left (never below the BDP
//! estimate), once per round trip (losses of packets sent before the cut
//! belong to the same episode, and their ACKs do not raise the bound back),
//! and a probe in progress stops (ProbeBW_DOWN). BBR then cruises with the
//! draft's headroom below that bound; ProbeBW_UP doubles its step each
//! round as the draft does until the bound is back at the flight of the last
//! cut, and beyond it adds one packet a round (CUBIC-like: fast back to the
//! last overflow, cautious past it). A lossy or jittery link without another
//! flow's queue never raises the signal: measured, BBR alone keeps its
//! figures to the bit (docs/notes/2026-11-26-sharing-with-cubic.md).

use std::time::{Duration, Instant};

use super::{Bbr, BbrState, BETA, QUEUE_FREE_RTT_DIVISOR};
use crate::{LostPacket, RateSample};

/// The standing-queue rule's jitter allowance, in mean steps between
/// consecutive RTT samples (RFC 3550 §6.4.1). Another flow's queue moves by
/// a packet's serialisation between samples (0.1–0.2 ms measured beside
/// CUBIC at 50 Mb/s); in-order jitter lifts a round's floor above min_rtt by
/// up to ~8 mean steps (issue 36's 5 ms path: floors 9–15 ms above min_rtt,
/// steps 1.8–4.7 ms).
pub const STANDING_QUEUE_JITTER_FACTOR: f64 = 10.0;

impl Bbr {
    /// An RTT sample of a packet that left at `sent`: kept for the
    /// standing-queue verdict if it left in ProbeBW_CRUISE, where BBR paces
    /// at its bandwidth estimate and builds no queue of its own (samples of
    /// packets sent in a probe or in DOWN carry BBR's own queue).
    pub(super) fn note_cruise_rtt(&mut self, rtt: Duration, sent: Instant) {
        if self.state == BbrState::ProbeBwCruise
            && self.cruise_since.is_some_and(|since| sent >= since)
        {
            self.cruise_round_min_rtt = Some(self.cruise_round_min_rtt.map_or(rtt, |m| m.min(rtt)));
        }
    }

    /// At the end of a loss round: whether the packets it acknowledged that
    /// left in CRUISE all met a queue that never drained (another flow's).
    /// A round without such samples keeps the last verdict.
    pub(super) fn note_standing_queue(&mut self) {
        if let (Some(round_min), Some(min_rtt)) = (self.cruise_round_min_rtt, self.min_rtt) {
            self.cruise_queue_delay = round_min.saturating_sub(min_rtt);
            let allowance = (min_rtt / QUEUE_FREE_RTT_DIVISOR)
                .max(self.jitter.jitter().mul_f64(STANDING_QUEUE_JITTER_FACTOR));
            self.standing_queue = self.cruise_queue_delay > allowance;
        }
    }

    /// A packet declared lost: under a standing queue, a congestion signal
    /// (module docs).
    pub(super) fn respond_to_standing_queue_loss(&mut self, packet: &LostPacket) {
        if !self.config.standing_queue_response
            || !self.standing_queue_seen()
            || !self.state.is_probe_bw()
            || packet.is_app_limited
            || packet.delivered < self.queue_cut_delivered
        {
            return;
        }
        let floor = self.bdp_multiple(1.0);
        let cut = ((BETA * packet.tx_in_flight as f64) as u64).max(floor);
        self.inflight_longterm = self.inflight_longterm.min(cut).max(self.min_pipe_cwnd());
        self.queue_loss_inflight = packet.tx_in_flight;
        // Packets sent before now were lost to the same overflow.
        self.queue_cut_delivered = self.delivered;
        self.standing_queue_cuts += 1;
        if matches!(self.state, BbrState::ProbeBwRefill | BbrState::ProbeBwUp) {
            self.prev_probe_too_high = true;
            self.is_bw_probe_sample = false;
            self.start_probe_bw_down();
        }
    }

    /// Whether the sampled packet left before the last standing-queue cut:
    /// its flight is the one the cut answered, so it must not raise
    /// `inflight_longterm` back (the draft raises the bound to any sample's
    /// flight that did not lose too much).
    pub(super) fn sent_before_queue_cut(&self, rs: &RateSample) -> bool {
        self.config.standing_queue_response && rs.prior_delivered < self.queue_cut_delivered
    }

    /// Whether ProbeBW_UP raises `inflight_longterm` by one packet a round
    /// (Reno's additive increase) rather than doubling the step each round:
    /// over a standing queue the doubling overshoots by up to a window
    /// before the loss it causes is even detected.
    pub(super) fn probes_additively(&self) -> bool {
        self.config.standing_queue_response
            && self.standing_queue_seen()
            && self.inflight_longterm >= self.queue_loss_inflight
    }

    /// Whether another flow keeps a standing queue: the last CRUISE round
    /// ran over one, and so did the end of the CRUISE phase before (BBR's
    /// own queue, left over from Startup or a probe, does not outlive the
    /// DOWN phase between them).
    fn standing_queue_seen(&self) -> bool {
        self.standing_queue && self.previous_cruise_standing
    }
}
