//! Enhanced Veno (Zhou, Fu, Zhang, Lau & Foh, IEEE Communications Letters
//! 2006): Veno that stops cutting its window at random losses while the
//! congestion loss rate is not rising, so a lightly loaded lossy link is used
//! fully.
//!
//! Random losses (Veno's N < β) at times T_1, T_2, … split the connection
//! into intervals; C_i counts the congestive losses between T_{i−1} and T_i,
//! and con_r_i = C_i/(T_i − T_{i−1}) (§III, Eq. 2). At the random loss T_i the
//! window is kept if con_r_i ≤ con_r_{i−1} and cut to 4/5 otherwise;
//! congestive losses halve it as Veno does (Eq. 3). con_r_0 = 0.
//!
//! T_0 is "connection start". A controller reads no clock, so sift takes T_0
//! to be the `now` of the first event the controller sees (normally the
//! first packet sent). Timeouts count as congestive losses in C_i (Veno
//! treats them as severe congestion), and so do corruption notices that
//! `corruption_respects_backlog` turns into congestive losses.
//!
//! Everything else — N, BaseRTT, growth, timeouts, undo — is Veno's, by
//! composition: this controller wraps a [`Veno`] and only chooses the share
//! of the window a random loss keeps. A congestion event that proves
//! spurious is neither random nor congestive: undoing it also takes it out
//! of C_i (congestive) or reopens the interval it closed (random), so
//! con_r counts only losses that happened.
//!
//! ECN is Veno's (`veno.rs`): a CE mark is a congestive loss in C_i, and
//! marks inside a recovery period whose loss was judged random take that
//! judgement back (the interval it closed reopens) and count as congestive.

use std::time::{Duration, Instant};

use crate::reno::LOSS_REDUCTION;
use crate::veno::{Veno, VenoConfig};
use crate::{
    AckEvent, CongestionControl, CorruptionEvent, EcnEvent, LossEvent, LossVerdict, Metrics,
    SpuriousCongestionEvent,
};

/// A random loss that keeps the whole window (Zhou et al., Eq. 3, first case).
const KEEP_WINDOW: (u64, u64) = (1, 1);

/// The Enhanced Veno controller: Veno plus the congestion loss rate.
///
/// Metrics fields: Veno's `backlog_packets` and `base_rtt_ms`, plus
/// `congestion_loss_rate` (con_r at the last random loss, congestive losses
/// per second) and `congestive_losses_in_interval` (C counted so far since
/// the last random loss).
#[derive(Debug, Clone)]
pub struct VenoEnhanced {
    veno: Veno,
    /// T_{i−1}: the last random loss, or T_0 (the first event seen).
    interval_start: Option<Instant>,
    /// C_i: congestive losses since `interval_start`.
    congestive_losses_in_interval: u64,
    /// con_r_{i−1}, in congestive losses per second (con_r_0 = 0).
    previous_loss_rate: f64,
    /// The interval state before the last congestion event, until undone
    /// or replaced.
    undo: Option<IntervalUndo>,
}

/// The congestion-loss-rate state a spurious congestion event restores.
#[derive(Clone, Copy, Debug)]
struct IntervalUndo {
    interval_start: Option<Instant>,
    congestive_losses_in_interval: u64,
    previous_loss_rate: f64,
}

impl VenoEnhanced {
    /// A controller for packets of `mss` bytes, with Veno's parameters (the
    /// enhancement adds no constant of its own).
    pub fn new(config: VenoConfig, mss: u64) -> Self {
        Self {
            veno: Veno::new(config, mss),
            interval_start: None,
            congestive_losses_in_interval: 0,
            previous_loss_rate: 0.0,
            undo: None,
        }
    }

    /// The Veno this controller refines.
    pub fn veno(&self) -> &Veno {
        &self.veno
    }

    /// con_r at the last random loss, in congestive losses per second.
    pub fn congestion_loss_rate(&self) -> f64 {
        self.previous_loss_rate
    }

    /// Undoes the last congestion event and the interval state beside it
    /// (see [`Veno::undo_congestion`] for `spurious`); whether there was
    /// one to undo.
    fn undo_congestion(&mut self, spurious: bool) -> bool {
        if self.veno.undo_congestion(spurious).is_none() {
            return false;
        }
        if let Some(undo) = self.undo.take() {
            self.interval_start = undo.interval_start;
            self.congestive_losses_in_interval = undo.congestive_losses_in_interval;
            self.previous_loss_rate = undo.previous_loss_rate;
        }
        true
    }

    /// Records T_0 at the first event.
    fn observe(&mut self, now: Instant) {
        self.interval_start.get_or_insert(now);
    }

    /// Closes the interval at the random loss `now` (T_i) and returns
    /// con_r_i. Equal times (only possible with synthetic events) count as
    /// one nanosecond so that the rate stays finite.
    fn close_interval(&mut self, now: Instant) -> f64 {
        let start = self.interval_start.unwrap_or(now);
        let elapsed = now
            .saturating_duration_since(start)
            .max(Duration::from_nanos(1));
        let rate = self.congestive_losses_in_interval as f64 / elapsed.as_secs_f64();
        self.interval_start = Some(now);
        self.congestive_losses_in_interval = 0;
        rate
    }
}

impl CongestionControl for VenoEnhanced {
    fn on_sent(&mut self, now: Instant, bytes: u64, bytes_in_flight: u64) {
        self.observe(now);
        self.veno.on_sent(now, bytes, bytes_in_flight);
    }

    fn on_ack(&mut self, ack: &AckEvent) {
        self.observe(ack.now);
        self.veno.on_ack(ack);
    }

    fn verdict_basis(&self) -> Option<crate::VerdictBasis> {
        self.veno.last_basis()
    }

    fn on_congestion(&mut self, ev: &LossEvent) -> LossVerdict {
        self.observe(ev.now);
        let verdict = self.veno.judge_loss(ev);
        self.undo = Some(IntervalUndo {
            interval_start: self.interval_start,
            congestive_losses_in_interval: self.congestive_losses_in_interval,
            previous_loss_rate: self.previous_loss_rate,
        });
        self.veno.note_congestion(verdict);
        let keep = match verdict {
            LossVerdict::Congestive => {
                self.congestive_losses_in_interval += 1;
                LOSS_REDUCTION
            }
            LossVerdict::Random => {
                let rate = self.close_interval(ev.now);
                let rising = rate > self.previous_loss_rate;
                self.previous_loss_rate = rate;
                if rising {
                    self.veno.reduction_for(LossVerdict::Random)
                } else {
                    KEEP_WINDOW
                }
            }
        };
        self.veno.reduce(ev.now, verdict, keep, ev.persistent);
        verdict
    }

    fn on_corruption(&mut self, ev: &CorruptionEvent) {
        self.observe(ev.now);
        if self.veno.corruption_is_congestive(ev) {
            self.congestive_losses_in_interval += 1;
            self.veno
                .reduce(ev.now, LossVerdict::Congestive, LOSS_REDUCTION, false);
        }
    }

    fn on_spurious_congestion(&mut self, _ev: &SpuriousCongestionEvent) {
        self.undo_congestion(true);
    }

    fn on_ecn(&mut self, ev: &EcnEvent) {
        self.observe(ev.now);
        self.veno.ecn_mut().on_mark(ev.now);
        let respond = ev.new_congestion_event
            || (self.veno.marks_overrule_random_cut() && self.undo_congestion(false));
        if respond {
            self.veno.set_judging_mark(true);
            self.on_congestion(&ev.as_congestion());
            self.veno.set_judging_mark(false);
        }
        self.veno.forget_undo();
        self.undo = None;
    }

    fn on_ecn_validated(&mut self, validated: bool) {
        self.veno.on_ecn_validated(validated);
    }

    fn set_mss(&mut self, mss: u64) {
        self.veno.set_mss(mss);
    }

    /// Careful Resume's window: Veno's.
    fn set_window(&mut self, cwnd: u64, ssthresh: Option<u64>) {
        self.veno.set_window(cwnd, ssthresh);
    }

    fn window(&self) -> u64 {
        self.veno.window()
    }

    fn ssthresh(&self) -> u64 {
        self.veno.ssthresh()
    }

    fn metrics(&self) -> Metrics {
        let mut metrics = self.veno.metrics();
        metrics.algorithm = "veno-enhanced".into();
        metrics
            .fields
            .insert("congestion_loss_rate".into(), self.previous_loss_rate);
        metrics.fields.insert(
            "congestive_losses_in_interval".into(),
            self.congestive_losses_in_interval as f64,
        );
        metrics
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{ack, corruption, loss, ms, rtt, spurious, MSS};

    fn enhanced(initial_window_packets: u64) -> VenoEnhanced {
        let config = VenoConfig {
            initial_window_packets,
            queue_estimate: crate::queue_estimate::QueueEstimate::Paper,
            ..VenoConfig::default()
        };
        VenoEnhanced::new(config, MSS)
    }

    /// Feeds an RTT sample without growing the window.
    fn sample(cc: &mut VenoEnhanced, now: Instant, latest_ms: u64, smoothed_ms: u64) {
        let mut a = ack(now, now, 1, rtt(latest_ms, smoothed_ms), 0);
        a.in_recovery = true;
        cc.on_ack(&a);
    }

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    /// A congestive loss at `now`: BaseRTT 70 ms against a smoothed 100 ms
    /// gives N = cwnd·30/100 packets, ≥ β for windows of 10 packets or more.
    fn congestive_loss(cc: &mut VenoEnhanced, now: Instant) -> LossVerdict {
        sample(cc, now, 70, 100);
        cc.on_congestion(&loss(now, rtt(100, 100), false))
    }

    /// A random loss at `now`: BaseRTT equal to the smoothed RTT, N = 0.
    fn random_loss(cc: &mut VenoEnhanced, now: Instant) -> LossVerdict {
        sample(cc, now, 100, 100);
        cc.on_congestion(&loss(now, rtt(100, 100), false))
    }

    #[test]
    fn an_undone_congestive_loss_leaves_the_congestion_loss_rate_alone() {
        let t0 = Instant::now();
        let mut cc = enhanced(10);
        cc.on_sent(t0, MSS, MSS); // T_0
                                  // A congestive loss (C = 1), proved spurious: C back to 0.
        assert_eq!(
            congestive_loss(&mut cc, t0 + secs(1)),
            LossVerdict::Congestive
        );
        assert_eq!(cc.window(), 5_000);
        cc.on_spurious_congestion(&spurious(t0 + secs(1), rtt(100, 100)));
        assert_eq!(cc.window(), 10_000);
        assert_eq!(cc.metrics().fields["congestive_losses_in_interval"], 0.0);
        assert_eq!(cc.metrics().fields["spurious_losses"], 1.0);
        // The next random loss at 2 s (BaseRTT 70 kept through the undo,
        // smoothed 70: N = 0): con_r = 0/2 s = 0 ≤ 0 → window kept, which a
        // counted congestive loss (con_r = 0.5/s > 0) would not allow.
        sample(&mut cc, t0 + secs(2), 70, 70);
        let verdict = cc.on_congestion(&loss(t0 + secs(2), rtt(70, 70), false));
        assert_eq!(verdict, LossVerdict::Random);
        assert_eq!(cc.window(), 10_000);
    }

    #[test]
    fn enhanced_veno_keeps_window_at_random_loss_while_no_congestion_loss_occurs() {
        let t0 = Instant::now();
        let mut cc = enhanced(10);
        // T_0
        cc.on_sent(t0, MSS, MSS);
        // C_1 = 0: con_r_1 = 0/1 s = 0 ≤ con_r_0 = 0 → window kept.
        assert_eq!(random_loss(&mut cc, t0 + secs(1)), LossVerdict::Random);
        assert_eq!((cc.window(), cc.ssthresh()), (10_000, 10_000));
        assert_eq!(cc.congestion_loss_rate(), 0.0);
    }

    #[test]
    fn enhanced_veno_cuts_four_fifths_when_congestion_loss_rate_rises() {
        let t0 = Instant::now();
        let mut cc = enhanced(40);
        // T_0
        cc.on_sent(t0, MSS, MSS);
        // N = 40·30/100 = 12 ≥ 3: congestive, 40_000/2 = 20_000; C_1 = 1.
        assert_eq!(
            congestive_loss(&mut cc, t0 + secs(1)),
            LossVerdict::Congestive
        );
        assert_eq!(cc.window(), 20_000);
        // T_1 = 2 s: con_r_1 = 1/(2 − 0) s = 0.5/s > con_r_0 = 0 → ×4/5.
        assert_eq!(random_loss(&mut cc, t0 + secs(2)), LossVerdict::Random);
        assert_eq!((cc.window(), cc.ssthresh()), (16_000, 16_000));
        assert_eq!(cc.congestion_loss_rate(), 0.5);
    }

    #[test]
    fn enhanced_veno_keeps_window_when_congestion_loss_rate_holds_or_falls() {
        let t0 = Instant::now();
        let mut cc = enhanced(40);
        cc.on_sent(t0, MSS, MSS);
        // Congestive: 20_000; then con_r_1 = 0.5 > 0: 16_000.
        congestive_loss(&mut cc, t0 + secs(1));
        random_loss(&mut cc, t0 + secs(2));
        // N = 16·30/100 = 4.8 ≥ 3: congestive, 16_000/2 = 8_000; C_2 = 1.
        congestive_loss(&mut cc, t0 + secs(3));
        assert_eq!(cc.window(), 8_000);
        // T_2 = 4 s: con_r_2 = 1/(4 − 2) s = 0.5 ≤ con_r_1 = 0.5 → kept.
        random_loss(&mut cc, t0 + secs(4));
        assert_eq!((cc.window(), cc.ssthresh()), (8_000, 8_000));
        // T_3 = 5 s: con_r_3 = 0/1 s = 0 ≤ 0.5 → kept.
        random_loss(&mut cc, t0 + secs(5));
        assert_eq!((cc.window(), cc.ssthresh()), (8_000, 8_000));
        assert_eq!(cc.congestion_loss_rate(), 0.0);
    }

    #[test]
    fn enhanced_veno_connection_start_is_the_first_event_seen() {
        let t0 = Instant::now();
        let mut cc = enhanced(40);
        // Built long before; the first event (a packet sent at 10 s) is T_0.
        cc.on_sent(t0 + secs(10), MSS, MSS);
        congestive_loss(&mut cc, t0 + secs(11));
        random_loss(&mut cc, t0 + secs(12));
        // con_r_1 = 1/(12 − 10) s = 0.5/s, not 1/12.
        assert_eq!(cc.congestion_loss_rate(), 0.5);
    }

    #[test]
    fn enhanced_veno_counts_a_timeout_as_a_congestive_loss() {
        let t0 = Instant::now();
        let mut cc = enhanced(40);
        cc.on_sent(t0, MSS, MSS);
        sample(&mut cc, t0, 100, 100);
        // Timeout: ssthresh = 40_000/2, cwnd = 2 packets, C_1 = 1.
        let verdict = cc.on_congestion(&loss(t0 + secs(1), rtt(100, 100), true));
        assert_eq!(verdict, LossVerdict::Congestive);
        assert_eq!((cc.window(), cc.ssthresh()), (2_000, 20_000));
        // slow start: 10_000
        cc.on_ack(&ack(t0 + secs(1), t0 + secs(1), 8, rtt(100, 100), 0));
        // con_r_1 = 1/2 s > 0 → ×4/5: 10_000·4/5 = 8_000.
        random_loss(&mut cc, t0 + secs(2));
        assert_eq!(cc.window(), 8_000);
    }

    #[test]
    fn enhanced_veno_counts_corruption_judged_congestive() {
        let t0 = Instant::now();
        let config = VenoConfig {
            initial_window_packets: 40,
            corruption_respects_backlog: true,
            queue_estimate: crate::queue_estimate::QueueEstimate::Paper,
            ..VenoConfig::default()
        };
        let mut cc = VenoEnhanced::new(config, MSS);
        cc.on_sent(t0, MSS, MSS);
        sample(&mut cc, t0, 70, 100);
        // N = 40·30/100 = 12 ≥ 3: the notice is a congestive loss, 20_000.
        cc.on_corruption(&corruption(t0 + secs(1), rtt(100, 100)));
        assert_eq!(cc.window(), 20_000);
        assert_eq!(cc.metrics().fields["congestive_losses_in_interval"], 1.0);
        // con_r_1 = 1/2 s > 0 → ×4/5: 16_000.
        random_loss(&mut cc, t0 + secs(2));
        assert_eq!(cc.window(), 16_000);
    }

    #[test]
    fn enhanced_veno_reports_its_rate_beside_veno_metrics() {
        let t0 = Instant::now();
        let mut cc = enhanced(10);
        cc.on_sent(t0, MSS, MSS);
        sample(&mut cc, t0 + ms(1), 50, 100);
        let m = cc.metrics();
        assert_eq!(m.algorithm, "veno-enhanced");
        // N = 10·(100 − 50)/100 = 5.
        assert_eq!(m.fields["backlog_packets"], 5.0);
        assert_eq!(m.fields["base_rtt_ms"], 50.0);
        assert_eq!(m.fields["congestion_loss_rate"], 0.0);
    }
}
