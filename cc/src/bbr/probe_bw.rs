//! ProbeBW (draft-ietf-ccwg-bbr §5.3.3, §5.5.10): the DOWN / CRUISE /
//! REFILL / UP cycle, when to probe, and how losses while probing set the
//! long-term bound `inflight_longterm`.

use std::time::Duration;

use super::{AckPhase, Bbr, BbrState, BETA, DEFAULT_CWND_GAIN, HEADROOM};
use crate::{LostPacket, RateSample};

/// draft §5.3.3.1: ProbeBW_DOWN paces at 0.90·bw.
pub const PROBE_DOWN_PACING_GAIN: f64 = 0.9;
/// draft §5.3.3.2–3: CRUISE and REFILL pace at bw.
pub const PROBE_CRUISE_PACING_GAIN: f64 = 1.0;
/// draft §5.3.3.4: ProbeBW_UP paces at 1.25·bw …
pub const PROBE_UP_PACING_GAIN: f64 = 1.25;
/// … with a window of 2.25·BDP.
pub const PROBE_UP_CWND_GAIN: f64 = 2.25;
/// draft §5.3.3.6: the wall-clock wait before probing is 2 s plus a uniform
/// draw in [0, 1) s (T_bbr).
pub const PROBE_WAIT_BASE: Duration = Duration::from_secs(2);
/// draft §5.3.3.6: T_reno is at most 63 rounds (62 or 63 by the draw of
/// `rounds_since_probe_up`).
pub const RENO_PROBE_ROUNDS_MAX: u64 = 63;

impl Bbr {
    pub(super) fn is_probing_bw(&self) -> bool {
        matches!(
            self.state,
            BbrState::Startup | BbrState::ProbeBwRefill | BbrState::ProbeBwUp
        )
    }

    pub(super) fn enter_probe_bw(&mut self) {
        self.cwnd_gain = DEFAULT_CWND_GAIN;
        self.start_probe_bw_down();
    }

    pub(super) fn start_probe_bw_down(&mut self) {
        self.reset_congestion_signals();
        self.probe_up_acked_per_inc = u64::MAX;
        self.pick_probe_wait();
        self.cycle_stamp = Some(self.now());
        self.ack_phase = AckPhase::ProbeStopping;
        self.start_round();
        self.state = BbrState::ProbeBwDown;
        self.pacing_gain = PROBE_DOWN_PACING_GAIN;
        self.cwnd_gain = DEFAULT_CWND_GAIN;
    }

    pub(super) fn start_probe_bw_cruise(&mut self) {
        self.state = BbrState::ProbeBwCruise;
        self.cruise_since = Some(self.now());
        self.previous_cruise_standing = self.standing_queue;
        self.standing_queue = false;
        self.pacing_gain = self.cruise_pacing_gain();
        self.cwnd_gain = DEFAULT_CWND_GAIN;
    }

    pub(super) fn start_probe_bw_refill(&mut self) {
        self.reset_short_term_model();
        self.bw_probe_up_rounds = 0;
        self.bw_probe_up_acked = 0;
        self.prev_probe_precautionary = false;
        self.ack_phase = AckPhase::Refilling;
        self.start_round();
        self.state = BbrState::ProbeBwRefill;
        self.pacing_gain = PROBE_CRUISE_PACING_GAIN;
        self.cwnd_gain = DEFAULT_CWND_GAIN;
    }

    pub(super) fn start_probe_bw_up(&mut self, rs: &RateSample) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.start_round();
        self.reset_full_bw();
        self.full_bw = rs.delivery_rate;
        self.state = BbrState::ProbeBwUp;
        self.pacing_gain = PROBE_UP_PACING_GAIN;
        self.cwnd_gain = PROBE_UP_CWND_GAIN;
        self.raise_inflight_longterm_slope();
    }

    /// UpdateProbeBWCyclePhase, on every ACK.
    pub(super) fn update_probe_bw_cycle_phase(&mut self, rs: &RateSample) {
        if !self.full_bw_reached {
            return;
        }
        if self.adapt_long_term_model(rs) {
            return;
        }
        match self.state {
            BbrState::ProbeBwDown => {
                if self.is_time_to_probe_bw() {
                    return;
                }
                if self.is_time_to_cruise() {
                    self.start_probe_bw_cruise();
                }
            }
            BbrState::ProbeBwCruise => {
                self.is_time_to_probe_bw();
            }
            BbrState::ProbeBwRefill => {
                // After one round of REFILL, start UP.
                if self.round_start {
                    self.is_bw_probe_sample = true;
                    self.start_probe_bw_up(rs);
                }
            }
            BbrState::ProbeBwUp => {
                if self.is_time_to_go_down(rs) {
                    self.prev_probe_too_high = false;
                    self.start_probe_bw_down();
                }
            }
            BbrState::Startup | BbrState::Drain | BbrState::ProbeRtt => {}
        }
    }

    /// Whether to leave DOWN or CRUISE for REFILL now (and do so).
    fn is_time_to_probe_bw(&mut self) -> bool {
        let elapsed = self
            .cycle_stamp
            .is_some_and(|stamp| self.now() > stamp + self.bw_probe_wait);
        if elapsed || self.is_reno_coexistence_probe_time() {
            self.start_probe_bw_refill();
            return true;
        }
        false
    }

    /// PickProbeWait: 0 or 1 rounds already "spent" (T_reno of 62 or 63
    /// rounds) and a wall-clock wait of 2–3 s.
    pub(super) fn pick_probe_wait(&mut self) {
        self.rounds_since_probe_up = u64::from(self.random_unit() >= 0.5);
        self.bw_probe_wait = PROBE_WAIT_BASE + Duration::from_secs_f64(self.random_unit());
    }

    fn is_reno_coexistence_probe_time(&self) -> bool {
        // TargetInflight in packets: Reno would need that many rounds to
        // grow back a window of this size.
        let reno_rounds = self.target_inflight() / self.mss;
        self.rounds_since_probe_up >= reno_rounds.min(RENO_PROBE_ROUNDS_MAX)
    }

    /// TargetInflight: the BDP, unless congestion cut the window below it.
    pub(super) fn target_inflight(&self) -> u64 {
        self.bdp_multiple(1.0).min(self.cwnd)
    }

    fn is_time_to_cruise(&self) -> bool {
        self.bytes_in_flight <= self.inflight_with_headroom()
            && self.bytes_in_flight <= self.inflight(1.0)
    }

    fn is_time_to_go_down(&mut self, rs: &RateSample) -> bool {
        if self.prev_probe_too_high && self.bytes_in_flight >= self.inflight_longterm {
            self.prev_probe_precautionary = true;
            return true;
        }
        if self.is_cwnd_limited() && self.cwnd >= self.inflight_longterm {
            // Bandwidth limited by inflight_longterm: keep probing.
            self.reset_full_bw();
            self.full_bw = rs.delivery_rate;
        } else if self.full_bw_now {
            return true;
        }
        false
    }

    /// InflightWithHeadroom: inflight_longterm less 15% for cross traffic.
    pub(super) fn inflight_with_headroom(&self) -> u64 {
        if self.inflight_longterm == u64::MAX {
            return u64::MAX;
        }
        let headroom = ((HEADROOM * self.inflight_longterm as f64) as u64).max(self.mss);
        self.inflight_longterm
            .saturating_sub(headroom)
            .max(self.min_pipe_cwnd())
    }

    fn raise_inflight_longterm_slope(&mut self) {
        let growth_this_round = if self.probes_additively() {
            1
        } else {
            1u64 << self.bw_probe_up_rounds
        };
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        self.probe_up_acked_per_inc = (self.cwnd / growth_this_round).max(self.mss);
    }

    fn probe_inflight_longterm_upward(&mut self, newly_acked: u64) {
        if !self.is_cwnd_limited() || self.cwnd < self.inflight_longterm {
            return;
        }
        self.bw_probe_up_acked += newly_acked;
        if self.bw_probe_up_acked >= self.probe_up_acked_per_inc {
            let delta = self.bw_probe_up_acked / self.probe_up_acked_per_inc;
            self.bw_probe_up_acked -= delta * self.probe_up_acked_per_inc;
            self.inflight_longterm = self.inflight_longterm.saturating_add(delta * self.mss);
        }
        if self.round_start {
            self.raise_inflight_longterm_slope();
        }
    }

    /// AdaptLongTermModel; true if it decided a state transition.
    fn adapt_long_term_model(&mut self, rs: &RateSample) -> bool {
        if self.ack_phase == AckPhase::ProbeStarting && self.round_start {
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.round_start {
            self.is_bw_probe_sample = false;
            self.ack_phase = AckPhase::Init;
            if self.state.is_probe_bw() && !rs.is_app_limited {
                self.advance_max_bw_filter();
            }
            if self.state.is_probe_bw()
                && self.prev_probe_precautionary
                && !self.prev_probe_too_high
            {
                self.start_probe_bw_refill();
                return true;
            }
        }
        if !self.is_inflight_too_high(rs) {
            if self.inflight_longterm == u64::MAX {
                return false;
            }
            if rs.tx_in_flight > self.inflight_longterm
                && !self.sent_before_queue_cut(rs)
                && !self.sent_before_mark_cut(rs)
            {
                self.inflight_longterm = rs.tx_in_flight;
            }
            if self.state == BbrState::ProbeBwUp {
                self.probe_inflight_longterm_upward(self.newly_acked);
            }
        }
        false
    }

    /// HandleLostPacket (draft §5.5.10.2), for a packet sent while probing.
    pub(super) fn handle_lost_packet(&mut self, packet: &LostPacket, lost_total: u64) {
        if !self.is_bw_probe_sample || self.loss_is_links_by_ecn() {
            return;
        }
        let rs = RateSample {
            tx_in_flight: packet.tx_in_flight,
            lost: lost_total.saturating_sub(packet.lost),
            is_app_limited: packet.is_app_limited,
            ..RateSample::default()
        };
        if self.is_inflight_too_high(&rs) {
            let at_loss = self.inflight_at_loss(&rs, packet.size);
            self.handle_inflight_too_high(at_loss, rs.is_app_limited);
        }
    }

    /// InflightAtLoss: the prefix of the packet at which the loss rate
    /// crossed LossThresh.
    pub(super) fn inflight_at_loss(&self, rs: &RateSample, size: u64) -> u64 {
        let thresh = self.loss_thresh();
        let inflight_prev = rs.tx_in_flight.saturating_sub(size) as f64;
        let lost_prev = rs.lost.saturating_sub(size) as f64;
        let lost_prefix = ((thresh * inflight_prev - lost_prev) / (1.0 - thresh)).max(0.0);
        (inflight_prev + lost_prefix) as u64
    }

    fn handle_inflight_too_high(&mut self, tx_in_flight: u64, app_limited: bool) {
        self.prev_probe_too_high = true;
        self.is_bw_probe_sample = false;
        if !app_limited {
            self.inflight_longterm =
                tx_in_flight.max((self.target_inflight() as f64 * BETA) as u64);
        }
        if self.state == BbrState::ProbeBwUp {
            self.undo_state = Some(BbrState::ProbeBwUp);
            self.start_probe_bw_down();
        }
    }
}
