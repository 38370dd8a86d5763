//! TCP Veno (Fu & Liew, IEEE JSAC 21(2), 2003): Reno whose additive increase
//! and multiplicative decrease follow a Vegas-style estimate of how many of
//! the connection's packets sit in the bottleneck queue.
//!
//! N = cwnd·(RTT − BaseRTT)/RTT packets (§II-A), with RTT the smoothed RTT and
//! BaseRTT the smallest RTT sample since the last loss: the paper resets it
//! at every loss, timeout or fast retransmit, and relearns it from the next
//! samples. A loss with N < β is judged random and keeps 4/5 of the window;
//! otherwise it is congestive and halves the window as Reno (§II-B.3). In
//! congestion avoidance with N ≥ β only every other newly acked packet earns
//! Reno's increase (§II-B.2). Slow start and timeouts are Reno's (HyStart++
//! unless `hystart` is off, as for Reno).
//!
//! Where Linux `tcp_veno` differs — BaseRTT kept across losses, RTT taken as
//! the round's minimum, growth every other *window* through its `inc` flag —
//! sift follows the paper (DESIGN §6); the tests named `*_as_paper_*` pin
//! each choice. Without a BaseRTT sample since the last loss N is unknown and
//! Veno behaves exactly as Reno (halve on loss, grow on every ACK).
//!
//! Two options depart from the paper (`queue_estimate.rs`):
//! - `queue_estimate`: `paper` (smoothed RTT) or `jitter-robust` (the last
//!   round's minimum RTT less a jitter allowance learnt from consecutive
//!   samples). **The default is `jitter-robust`** for Veno and Enhanced
//!   Veno, the controllers users pick for lossy links: in-order delay
//!   jitter (a cellular link) reads as a standing queue under the paper's
//!   estimate. Measured with `sift-lab run` on issue 36's path (20 Mb/s,
//!   20 ms each way, queue 200, 1% loss, 10 MB, seeds 1–3, medians of
//!   goodput / (capacity·(1 − p))), without → with 5 ms of in-order normal
//!   jitter: Enhanced Veno 0.702 → 0.138 (paper), 0.770 → 0.762 (jitter-
//!   robust); Veno 0.260 → 0.137 (paper), 0.259 → 0.239 (jitter-robust).
//!   The paper experiments run `paper` (`lab::experiments::paper_stack`).
//! - `base_rtt_reset`: `at-loss` (the paper, default) or `never` (Linux,
//!   ns-3). With the jitter-robust estimate `never` is the worse choice on
//!   that path (Enhanced Veno 0.296, Veno 0.229 with jitter): a
//!   connection-long minimum is a deeper tail of the jitter than the
//!   minimum since the last loss.
//!
//! **ECN** (DESIGN §6.1, `ecn.rs`). A CE mark is congestion: it takes the
//! congestive branch (ssthresh = cwnd/2) whatever N says, and marks inside
//! a recovery period whose loss was judged random turn that cut into the
//! congestive one. With `ecn_loss_verdict` on a path whose ECN is
//! validated, a loss is judged by its round instead of by N: congestive
//! with a CE mark in it, random without. Off by default, and in the paper
//! experiments (whose paths have no ECN).
//!
//! A congestion event that proves spurious (every packet it declared lost
//! arrived after all) is undone: the window, ssthresh, BaseRTT and the last
//! verdict return to their values before it, and the verdict moves from the
//! random or congestive count to the spurious one (metrics
//! `random_losses`, `congestive_losses`, `spurious_losses`): the loss was
//! neither, and the classification counters must not claim otherwise.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::ecn::{EcnMemory, MARKED_BASIS};
use crate::hystart::HyStart;
use crate::queue_estimate::{BaseRttReset, QueueDelayEstimator, QueueEstimate};
use crate::reno::{INITIAL_WINDOW_PACKETS, LOSS_REDUCTION};
use crate::{
    AckEvent, CongestionControl, CorruptionEvent, EcnEvent, LossEvent, LossVerdict, Metrics,
    SpuriousCongestionEvent, VerdictBasis, WindowCore,
};

/// Veno's backlog threshold β, in packets (Fu & Liew 2003, §II-A: "β = 3 is a
/// good setting").
pub const BACKLOG_THRESHOLD_PACKETS: f64 = 3.0;
/// Window kept after a loss judged random (Fu & Liew 2003, §II-B.3:
/// ssthresh = cwnd·4/5; "a factor of larger than 3/4 is desirable").
pub const RANDOM_LOSS_REDUCTION: (u64, u64) = (4, 5);

/// Veno's parameters. Defaults are the paper's; the initial and timeout
/// windows are Reno's (`RenoConfig`), since the paper leaves Reno's slow
/// start and timeout untouched (§II-B.1, §II-B.3) and a Veno–Reno comparison
/// should differ only in Veno's refinements.
///
/// Metrics fields (`Metrics::fields`): `backlog_packets` (N at the last
/// estimate; 0 while no BaseRTT sample has been taken since the last loss),
/// `base_rtt_ms` (BaseRTT; 0 while unknown), and the verdict counts
/// `random_losses`, `congestive_losses` and `spurious_losses`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VenoConfig {
    /// β: the backlog N, in packets, at or above which the connection is
    /// judged congestive.
    pub backlog_threshold_packets: f64,
    /// The share of the window kept after a loss judged random, as
    /// (numerator, denominator): the paper's 4/5.
    pub random_loss_reduction: (u64, u64),
    /// Initial window in packets (Reno's default: RFC 9002's 10; the paper's
    /// 2002 testbed started from 1).
    pub initial_window_packets: u64,
    /// Window after a timeout, in packets: RFC 9002 uses 2, classic TCP
    /// (and the paper's Reno, §II-B.3) 1.
    pub timeout_window_packets: u64,
    /// On a corruption notice (HACK), if N ≥ β, treat the notice as a
    /// congestive loss: contention on shared media corrupts frames too. Off,
    /// a corruption notice never touches the window.
    pub corruption_respects_backlog: bool,
    /// Leave the initial slow start by HyStart++ (RFC 9406), as Reno does by
    /// default; the paper experiments turn it off.
    pub hystart: bool,
    /// How N is estimated: `paper` (smoothed RTT − BaseRTT) or
    /// `jitter-robust` (the round's minimum RTT − BaseRTT − a jitter
    /// allowance; `queue_estimate.rs`). Default `jitter-robust`: on a path
    /// with in-order delay jitter the paper's estimate judges every random
    /// loss congestive. The paper experiments run `paper`.
    pub queue_estimate: QueueEstimate,
    /// When BaseRTT is forgotten: `at-loss` (the paper, §II-A) or `never`
    /// (Linux `tcp_veno`, ns-3 `TcpVeno`).
    pub base_rtt_reset: BaseRttReset,
    /// On a path whose ECN is validated, judge a loss by its round instead
    /// of by N: congestive with a CE mark in it, random without (`ecn.rs`;
    /// `--cc veno-ecn`). Off: the paper's N against β.
    pub ecn_loss_verdict: bool,
}

impl Default for VenoConfig {
    fn default() -> Self {
        Self {
            backlog_threshold_packets: BACKLOG_THRESHOLD_PACKETS,
            random_loss_reduction: RANDOM_LOSS_REDUCTION,
            initial_window_packets: INITIAL_WINDOW_PACKETS,
            timeout_window_packets: 2,
            corruption_respects_backlog: false,
            hystart: true,
            queue_estimate: QueueEstimate::JitterRobust,
            base_rtt_reset: BaseRttReset::AtLoss,
            ecn_loss_verdict: false,
        }
    }
}

/// Loss verdicts made so far, by kind; an undone verdict moves to
/// `spurious`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VerdictCounts {
    /// Congestion events judged random (N < β).
    pub random: u64,
    /// Congestion events judged congestive (N ≥ β, unknown N, timeouts).
    pub congestive: u64,
    /// Congestion events later proved spurious and undone.
    pub spurious: u64,
}

impl VerdictCounts {
    /// Counts a verdict.
    pub fn count(&mut self, verdict: LossVerdict) {
        match verdict {
            LossVerdict::Random => self.random += 1,
            LossVerdict::Congestive => self.congestive += 1,
        }
    }

    /// Takes back one `verdict`, which CE marks overruled: the event is
    /// counted again under its new verdict.
    pub fn retract(&mut self, verdict: LossVerdict) {
        let slot = match verdict {
            LossVerdict::Random => &mut self.random,
            LossVerdict::Congestive => &mut self.congestive,
        };
        *slot = slot.saturating_sub(1);
    }

    /// Moves one `verdict` to the spurious count: the loss was neither.
    pub fn withdraw(&mut self, verdict: LossVerdict) {
        let slot = match verdict {
            LossVerdict::Random => &mut self.random,
            LossVerdict::Congestive => &mut self.congestive,
        };
        *slot = slot.saturating_sub(1);
        self.spurious += 1;
    }

    /// Adds the counts as metrics fields `random_losses`,
    /// `congestive_losses` and `spurious_losses`.
    pub fn insert_into(&self, fields: &mut std::collections::BTreeMap<String, f64>) {
        fields.insert("random_losses".into(), self.random as f64);
        fields.insert("congestive_losses".into(), self.congestive as f64);
        fields.insert("spurious_losses".into(), self.spurious as f64);
    }
}

/// What Veno restores beside the window when a congestion event proves
/// spurious.
#[derive(Clone, Copy, Debug)]
pub(crate) struct VenoUndo {
    base_rtt: Option<Duration>,
    verdict: LossVerdict,
    last_verdict: Option<LossVerdict>,
}

/// The Veno controller. See the module docs for the rules it follows.
#[derive(Debug, Clone)]
pub struct Veno {
    config: VenoConfig,
    window: WindowCore<u64, VenoUndo>,
    hystart: HyStart,
    /// BaseRTT (the smallest RTT sample since the last loss, or over the
    /// connection under `base_rtt_reset = never`) and the RTT N is measured
    /// at.
    queue: QueueDelayEstimator,
    /// N, in packets, at the last estimate (None without BaseRTT).
    backlog_packets: Option<f64>,
    /// In the congestive state (N ≥ β), whether the next newly acked packet
    /// earns the increase: the parity of "every other new ACK" (§II-B.2),
    /// carried across ACK frames.
    next_packet_credited: bool,
    last_verdict: Option<LossVerdict>,
    /// When the window was last reduced, so corruption notices cut at most
    /// once per smoothed RTT.
    last_reduction_at: Option<Instant>,
    verdicts: VerdictCounts,
    /// The numbers behind the last loss verdict (for traces).
    basis: Option<VerdictBasis>,
    /// CE arrivals, validation and rounds, for the ECN rules.
    ecn: EcnMemory,
    /// The congestion event being judged was started by CE marks.
    judging_mark: bool,
}

impl Veno {
    /// A controller for packets of `mss` bytes.
    pub fn new(config: VenoConfig, mss: u64) -> Self {
        Self {
            window: WindowCore::new(mss, config.initial_window_packets),
            hystart: HyStart::new(config.hystart),
            queue: QueueDelayEstimator::new(config.queue_estimate, config.base_rtt_reset),
            ecn: EcnMemory::new(config.ecn_loss_verdict),
            judging_mark: false,
            config,
            backlog_packets: None,
            next_packet_credited: false,
            last_verdict: None,
            last_reduction_at: None,
            verdicts: VerdictCounts::default(),
            basis: None,
        }
    }

    /// Loss verdicts so far, spurious ones apart.
    pub fn verdict_counts(&self) -> VerdictCounts {
        self.verdicts
    }

    /// Records `verdict` for a congestion event about to reduce the window,
    /// and what undoing it would restore.
    pub(crate) fn note_congestion(&mut self, verdict: LossVerdict) {
        self.window.save_for_undo(VenoUndo {
            base_rtt: self.queue.base_rtt(),
            verdict,
            last_verdict: self.last_verdict,
        });
        self.verdicts.count(verdict);
    }

    /// Undoes the last congestion event, if it was not undone already;
    /// returns the verdict it had. `spurious`: the loss was neither random
    /// nor congestive; otherwise CE marks overruled its verdict, which is
    /// taken back to be counted again.
    pub(crate) fn undo_congestion(&mut self, spurious: bool) -> Option<LossVerdict> {
        let undo = self.window.undo()?;
        // BaseRTT was forgotten at the cut; what was learnt since still counts.
        let base_rtt = match (undo.base_rtt, self.queue.base_rtt()) {
            (Some(before), Some(since)) => Some(before.min(since)),
            (before, since) => before.or(since),
        };
        self.queue.set_base_rtt(base_rtt);
        self.hystart.undo_congestion();
        self.last_verdict = undo.last_verdict;
        if spurious {
            self.verdicts.withdraw(undo.verdict);
        } else {
            self.verdicts.retract(undo.verdict);
        }
        Some(undo.verdict)
    }

    /// The parameters this controller runs with.
    pub fn config(&self) -> &VenoConfig {
        &self.config
    }

    /// N, the estimated backlog in packets, as of the last event; None while
    /// no RTT sample has been taken since the last loss.
    pub fn backlog_packets(&self) -> Option<f64> {
        self.backlog_packets
    }

    /// BaseRTT: the smallest RTT sample since the last loss, if any.
    pub fn base_rtt(&self) -> Option<Duration> {
        self.queue.base_rtt()
    }

    /// The verdict of the last window reduction, if there was one.
    pub fn last_verdict(&self) -> Option<LossVerdict> {
        self.last_verdict
    }

    /// N = cwnd·(RTT − BaseRTT)/RTT in packets for the current window, by
    /// the configured estimator at smoothed RTT `smoothed`. A smoothed RTT
    /// below BaseRTT (the average lags a sudden drop) means no queue: N = 0.
    fn estimate_backlog(&self, smoothed: Duration) -> Option<f64> {
        self.queue
            .backlog_packets(self.window.cwnd, self.window.mss, smoothed)
    }

    /// Whether the last estimate puts the connection in the congestive
    /// state (N ≥ β). Unknown N is not congestive.
    fn backlog_at_or_above_beta(&self) -> bool {
        self.backlog_packets
            .is_some_and(|n| n >= self.config.backlog_threshold_packets)
    }

    /// Veno's judgement of a loss (§II-B.3): random if N < β, congestive
    /// otherwise. A timeout is severe congestion whatever N says (Veno
    /// leaves Reno's timeout alone), and a loss with N unknown is congestive
    /// so that Veno falls back to Reno's halving.
    ///
    /// CE marks are congestive whatever N says; with `ecn_loss_verdict` on a
    /// validated path the round's marks judge the loss instead of N.
    pub(crate) fn judge_loss(&mut self, ev: &LossEvent) -> LossVerdict {
        self.backlog_packets = self.estimate_backlog(ev.rtt.smoothed);
        let by_ecn = self.ecn.loss_verdict(ev);
        let verdict = match (self.backlog_packets, by_ecn) {
            _ if ev.persistent || self.judging_mark => LossVerdict::Congestive,
            (_, Some(verdict)) => verdict,
            (Some(n), None) if n < self.config.backlog_threshold_packets => LossVerdict::Random,
            _ => LossVerdict::Congestive,
        };
        let mut basis = self.basis_of(verdict, ev);
        if self.judging_mark {
            basis.values.push(MARKED_BASIS);
        } else if by_ecn.is_some() {
            basis.values.extend(self.ecn.basis_values(ev));
        }
        self.basis = Some(basis);
        verdict
    }

    /// The ECN memory, for Enhanced Veno's `on_ecn`.
    pub(crate) fn ecn_mut(&mut self) -> &mut EcnMemory {
        &mut self.ecn
    }

    /// While set, the congestion event being judged was started by CE
    /// marks: congestive.
    pub(crate) fn set_judging_mark(&mut self, marked: bool) {
        self.judging_mark = marked;
    }

    /// Whether CE marks now arriving fall in a recovery period whose loss
    /// was judged random: the verdict they overrule.
    pub(crate) fn marks_overrule_random_cut(&self) -> bool {
        self.window.in_recovery && self.last_verdict == Some(LossVerdict::Random)
    }

    /// CE marks confirmed the last cut: it can no longer prove spurious.
    pub(crate) fn forget_undo(&mut self) {
        self.window.forget_undo();
    }

    /// What a trace shows beside `verdict`: N (absent when unknown), β,
    /// and the window and RTTs N came from.
    fn basis_of(&self, verdict: LossVerdict, ev: &LossEvent) -> VerdictBasis {
        let mut values = Vec::with_capacity(6);
        if let Some(n) = self.backlog_packets {
            values.push(("backlog_packets", n));
        }
        values.push(("beta_packets", self.config.backlog_threshold_packets));
        values.push(("cwnd_bytes", self.window.cwnd as f64));
        values.push(("smoothed_rtt_us", ev.rtt.smoothed.as_micros() as f64));
        if let Some(base) = self.base_rtt() {
            values.push(("base_rtt_us", base.as_micros() as f64));
        }
        values.push(("persistent", f64::from(u8::from(ev.persistent))));
        VerdictBasis { verdict, values }
    }

    /// The numbers behind the last loss verdict.
    pub(crate) fn last_basis(&self) -> Option<VerdictBasis> {
        self.basis.clone()
    }

    /// The share of the window Veno keeps for `verdict` (§II-B.3).
    pub(crate) fn reduction_for(&self, verdict: LossVerdict) -> (u64, u64) {
        match verdict {
            LossVerdict::Random => self.config.random_loss_reduction,
            LossVerdict::Congestive => LOSS_REDUCTION,
        }
    }

    /// Applies a window reduction: ssthresh = cwnd·`keep` (at least two
    /// packets), cwnd = ssthresh, or the timeout window if `persistent`.
    /// Every reduction is a loss for BaseRTT, which is forgotten and
    /// relearned from the next samples (§II-A).
    pub(crate) fn reduce(
        &mut self,
        now: Instant,
        verdict: LossVerdict,
        keep: (u64, u64),
        persistent: bool,
    ) {
        let timeout_window = self
            .window
            .packets(self.config.timeout_window_packets.max(1));
        self.window.reduce(keep, persistent, timeout_window);
        self.hystart.on_congestion();
        self.next_packet_credited = false;
        self.queue.on_loss();
        self.last_verdict = Some(verdict);
        self.last_reduction_at = Some(now);
    }

    /// Whether a corruption notice counts as a congestive loss: only with
    /// `corruption_respects_backlog`, only if N ≥ β, and at most once per
    /// smoothed RTT after the last reduction (the notices of one burst belong
    /// to one event, as losses do to one recovery period, RFC 9002 §7.3.2).
    pub(crate) fn corruption_is_congestive(&mut self, ev: &CorruptionEvent) -> bool {
        if !self.config.corruption_respects_backlog {
            return false;
        }
        let within_last_reduction = self
            .last_reduction_at
            .and_then(|at| at.checked_add(ev.rtt.smoothed))
            .is_some_and(|until| ev.now < until);
        if within_last_reduction {
            return false;
        }
        self.backlog_packets = self.estimate_backlog(ev.rtt.smoothed);
        self.backlog_at_or_above_beta()
    }

    /// Congestion avoidance for `bytes` in `packets` newly acked packets:
    /// Reno's mss·acked/cwnd below β; at or above β only every other packet
    /// counts, so the window grows one packet per two round trips.
    fn grow_in_avoidance(&mut self, bytes: u64, packets: u64, congestive: bool) {
        let credited = if congestive {
            self.every_other_packet(bytes, packets)
        } else {
            bytes
        };
        self.window.grow_linearly(credited);
    }

    /// The bytes of every other packet among `packets` newly acked ones,
    /// continuing the parity of earlier ACKs (packets are taken as equal
    /// shares of `bytes`).
    fn every_other_packet(&mut self, bytes: u64, packets: u64) -> u64 {
        let packets = packets.max(1);
        let credited_packets = if self.next_packet_credited {
            packets.div_ceil(2)
        } else {
            packets / 2
        };
        if packets % 2 == 1 {
            self.next_packet_credited = !self.next_packet_credited;
        }
        (u128::from(bytes) * u128::from(credited_packets) / u128::from(packets)) as u64
    }
}

impl CongestionControl for Veno {
    fn on_sent(&mut self, _now: Instant, _bytes: u64, _bytes_in_flight: u64) {}

    fn verdict_basis(&self) -> Option<VerdictBasis> {
        self.last_basis()
    }

    fn on_ack(&mut self, ack: &AckEvent) {
        // Estimators update even in recovery: that is how BaseRTT is
        // relearned after the loss that reset it.
        self.queue.on_ack(ack);
        self.ecn.on_ack(ack);
        self.backlog_packets = self.estimate_backlog(ack.rtt.smoothed);
        if !self.window.ack_may_grow(ack) {
            return;
        }
        let congestive = self.backlog_at_or_above_beta();
        if self.window.cwnd < self.window.ssthresh {
            // Slow start as Reno, never past ssthresh in one step; the rest
            // of the ACK is avoidance credit.
            let window = &mut self.window;
            let step = self.hystart.slow_start(window.cwnd, window.ssthresh, ack);
            (window.cwnd, window.ssthresh) = (step.cwnd, step.ssthresh);
            let rest = step.rest;
            if rest > 0 {
                let rest_packets = (u128::from(ack.acked_packets) * u128::from(rest))
                    .div_ceil(u128::from(ack.acked_bytes))
                    as u64;
                self.grow_in_avoidance(rest, rest_packets, congestive);
            }
        } else {
            self.grow_in_avoidance(ack.acked_bytes, ack.acked_packets, congestive);
        }
    }

    fn on_congestion(&mut self, ev: &LossEvent) -> LossVerdict {
        let verdict = self.judge_loss(ev);
        let keep = self.reduction_for(verdict);
        self.note_congestion(verdict);
        self.reduce(ev.now, verdict, keep, ev.persistent);
        verdict
    }

    fn on_corruption(&mut self, ev: &CorruptionEvent) {
        if self.corruption_is_congestive(ev) {
            self.reduce(ev.now, LossVerdict::Congestive, LOSS_REDUCTION, false);
        }
    }

    fn on_spurious_congestion(&mut self, _ev: &SpuriousCongestionEvent) {
        self.undo_congestion(true);
    }

    fn on_ecn(&mut self, ev: &EcnEvent) {
        self.ecn.on_mark(ev.now);
        let respond = ev.new_congestion_event
            || (self.marks_overrule_random_cut() && self.undo_congestion(false).is_some());
        if respond {
            self.set_judging_mark(true);
            self.on_congestion(&ev.as_congestion());
            self.set_judging_mark(false);
        }
        self.forget_undo();
    }

    fn on_ecn_validated(&mut self, validated: bool) {
        self.ecn.set_validated(validated);
    }

    fn set_mss(&mut self, mss: u64) {
        self.window.set_mss(mss);
    }

    fn set_window(&mut self, cwnd: u64, ssthresh: Option<u64>) {
        self.window.set_window(cwnd, ssthresh);
    }

    fn window(&self) -> u64 {
        self.window.cwnd
    }

    fn ssthresh(&self) -> u64 {
        self.window.ssthresh
    }

    fn metrics(&self) -> Metrics {
        let mut fields = std::collections::BTreeMap::new();
        fields.insert(
            "backlog_packets".to_string(),
            self.backlog_packets.unwrap_or(0.0),
        );
        fields.insert(
            "base_rtt_ms".to_string(),
            self.queue
                .base_rtt()
                .map_or(0.0, |d| d.as_secs_f64() * 1000.0),
        );
        fields.insert(
            "jitter_ms".to_string(),
            self.queue.jitter().as_secs_f64() * 1000.0,
        );
        self.verdicts.insert_into(&mut fields);
        Metrics {
            algorithm: "veno".into(),
            cwnd: self.window.cwnd,
            ssthresh: self.window.ssthresh,
            phase: self.window.phase(),
            last_verdict: self.last_verdict,
            fields,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{ack, corruption, loss, ms, rtt, spurious, MSS};
    use crate::Phase;

    /// The paper's Veno (smoothed RTT against BaseRTT, reset at loss),
    /// which the exact-value tests below pin.
    fn veno() -> Veno {
        Veno::new(paper(), MSS)
    }

    fn paper() -> VenoConfig {
        VenoConfig {
            queue_estimate: QueueEstimate::Paper,
            ..VenoConfig::default()
        }
    }

    /// Feeds an RTT sample without growing the window (an app-limited ACK).
    fn sample(veno: &mut Veno, now: Instant, latest_ms: u64, smoothed_ms: u64) {
        let mut a = ack(now, now, 1, rtt(latest_ms, smoothed_ms), 0);
        a.app_limited = true;
        veno.on_ack(&a);
    }

    /// Acks `count` packets one ACK each, every one with the same RTT views.
    fn ack_each(veno: &mut Veno, now: Instant, count: u64, latest_ms: u64, smoothed_ms: u64) {
        for _ in 0..count {
            veno.on_ack(&ack(now, now, 1, rtt(latest_ms, smoothed_ms), 0));
        }
    }

    #[test]
    fn an_undone_random_loss_is_counted_as_neither_random_nor_congestive() {
        let now = Instant::now();
        let mut veno = veno();
        // BaseRTT 100 = smoothed 100: N = 0 < β, a random loss keeps 4/5.
        sample(&mut veno, now, 100, 100);
        assert_eq!(
            veno.on_congestion(&loss(now, rtt(100, 100), false)),
            LossVerdict::Random
        );
        assert_eq!((veno.window(), veno.ssthresh()), (8_000, 8_000));
        assert_eq!(veno.base_rtt(), None, "forgotten at the loss");
        sample(&mut veno, now, 120, 110);
        veno.on_spurious_congestion(&spurious(now, rtt(120, 110)));
        // Window and ssthresh as before the loss (10 packets, slow start);
        // BaseRTT the smaller of before (100) and since (120).
        assert_eq!((veno.window(), veno.ssthresh()), (10_000, u64::MAX));
        assert_eq!(veno.base_rtt(), Some(ms(100)));
        assert_eq!(veno.last_verdict(), None);
        let counts = veno.verdict_counts();
        assert_eq!(
            (counts.random, counts.congestive, counts.spurious),
            (0, 0, 1)
        );
        let fields = veno.metrics().fields;
        assert_eq!(fields["spurious_losses"], 1.0);
        assert_eq!(fields["random_losses"], 0.0);
    }

    #[test]
    fn veno_slow_start_doubles_per_window_as_reno() {
        let now = Instant::now();
        let mut veno = veno();
        // IW = 10 packets = 10_000 bytes; acking all of it adds 10_000.
        veno.on_ack(&ack(now, now, 10, rtt(100, 100), 0));
        assert_eq!((veno.window(), veno.ssthresh()), (20_000, u64::MAX));
    }

    #[test]
    fn veno_random_loss_cuts_to_four_fifths_as_paper_and_linux() {
        let now = Instant::now();
        let mut veno = veno();
        // cwnd 20_000
        veno.on_ack(&ack(now, now, 10, rtt(100, 100), 0));
        // N = 20·(100 − 100)/100 = 0 < β = 3: random; ssthresh = 20_000·4/5.
        let verdict = veno.on_congestion(&loss(now, rtt(100, 100), false));
        assert_eq!(verdict, LossVerdict::Random);
        assert_eq!((veno.window(), veno.ssthresh()), (16_000, 16_000));
        assert_eq!(veno.metrics().last_verdict, Some(LossVerdict::Random));
    }

    #[test]
    fn veno_halves_when_backlog_at_or_above_beta() {
        let now = Instant::now();
        let mut veno = veno();
        // BaseRTT 70 ms, cwnd stays 10_000
        sample(&mut veno, now, 70, 70);
        // N = 10·(100 − 70)/100 = 3.0 ≥ β = 3: congestive; ssthresh = 10_000/2.
        let verdict = veno.on_congestion(&loss(now, rtt(100, 100), false));
        assert_eq!(verdict, LossVerdict::Congestive);
        assert_eq!((veno.window(), veno.ssthresh()), (5_000, 5_000));
    }

    #[test]
    fn veno_judges_loss_random_just_below_beta() {
        let now = Instant::now();
        let mut veno = veno();
        sample(&mut veno, now, 71, 71);
        // N = 10·(100 − 71)/100 = 2.9 < 3: random; 10_000·4/5 = 8_000.
        let verdict = veno.on_congestion(&loss(now, rtt(100, 100), false));
        assert_eq!(verdict, LossVerdict::Random);
        assert_eq!((veno.window(), veno.ssthresh()), (8_000, 8_000));
        assert_eq!(veno.metrics().fields["backlog_packets"], 2.9);
    }

    #[test]
    fn veno_verdict_basis_shows_the_backlog_it_judged_by() {
        let now = Instant::now();
        let mut veno = veno();
        assert_eq!(veno.verdict_basis(), None, "no verdict yet");
        sample(&mut veno, now, 70, 70);
        // N = 10·(100 − 70)/100 = 3.0 ≥ β = 3: congestive, from cwnd 10_000.
        veno.on_congestion(&loss(now, rtt(100, 100), false));
        let basis = veno.verdict_basis().expect("a verdict was made");
        assert_eq!(basis.verdict, LossVerdict::Congestive);
        let value = |name| basis.values.iter().find(|(n, _)| *n == name).map(|v| v.1);
        assert_eq!(value("backlog_packets"), Some(3.0));
        assert_eq!(value("beta_packets"), Some(3.0));
        assert_eq!(value("cwnd_bytes"), Some(10_000.0));
        assert_eq!(value("base_rtt_us"), Some(70_000.0));
    }

    #[test]
    fn veno_windows_never_fall_below_two_packets() {
        let now = Instant::now();
        let config = VenoConfig {
            initial_window_packets: 2,
            ..paper()
        };
        let mut veno = Veno::new(config, MSS);
        sample(&mut veno, now, 100, 100);
        // Random: 2_000·4/5 = 1_600, floored at 2 packets = 2_000.
        veno.on_congestion(&loss(now, rtt(100, 100), false));
        assert_eq!((veno.window(), veno.ssthresh()), (2_000, 2_000));
    }

    #[test]
    fn veno_grows_on_every_acked_packet_below_beta() {
        let now = Instant::now();
        let mut veno = veno();
        sample(&mut veno, now, 100, 100);
        // random: cwnd 8_000
        veno.on_congestion(&loss(now, rtt(100, 100), false));
        // N = 8·(100 − 100)/100 = 0 < 3: Reno's increase, one mss per 8_000 acked.
        ack_each(&mut veno, now, 7, 100, 100);
        assert_eq!(veno.window(), 8_000);
        ack_each(&mut veno, now, 1, 100, 100);
        assert_eq!(veno.window(), 9_000);
    }

    /// Puts Veno in congestion avoidance at cwnd 8_000 with BaseRTT 50 ms,
    /// so later ACKs at smoothed 100 ms give N = 8·(100 − 50)/100 = 4 ≥ 3.
    fn congestive_avoidance_at_eight_packets(now: Instant) -> Veno {
        let mut veno = veno();
        sample(&mut veno, now, 100, 100);
        veno.on_congestion(&loss(now, rtt(100, 100), false)); // random: 8_000
        let mut first = ack(now, now, 1, rtt(50, 100), 0);
        first.in_recovery = true; // relearns BaseRTT = 50 ms, no growth
        veno.on_ack(&first);
        assert_eq!(veno.backlog_packets(), Some(4.0));
        veno
    }

    #[test]
    fn veno_grows_on_every_other_acked_packet_at_or_above_beta() {
        let now = Instant::now();
        let mut veno = congestive_avoidance_at_eight_packets(now);
        // Packets 2, 4, …, 16 are credited: after 15 packets 7·1_000 < 8_000.
        ack_each(&mut veno, now, 15, 100, 100);
        assert_eq!(veno.window(), 8_000);
        // The 16th completes 8·1_000 credited bytes: +1 mss.
        ack_each(&mut veno, now, 1, 100, 100);
        assert_eq!(veno.window(), 9_000);
    }

    #[test]
    fn veno_every_other_packet_parity_spans_ack_frames() {
        let now = Instant::now();
        let mut veno = congestive_avoidance_at_eight_packets(now);
        // ACKs of 3, 5, 7 and 1 packets: 16 packets, of which 1 + 3 + 3 + 1
        // = 8 are credited (parity carried over), 8_000 bytes: +1 mss.
        for packets in [3, 5, 7] {
            veno.on_ack(&ack(now, now, packets, rtt(100, 100), 0));
        }
        assert_eq!(veno.window(), 8_000);
        veno.on_ack(&ack(now, now, 1, rtt(100, 100), 0));
        assert_eq!(veno.window(), 9_000);
    }

    #[test]
    fn veno_credits_every_other_packet_not_every_other_window_as_paper_not_linux() {
        let now = Instant::now();
        let mut veno = congestive_avoidance_at_eight_packets(now);
        // Linux's `inc` flag starts at 1, so its first full window acked in
        // the congestive state adds a packet (8 → 9). The paper credits every
        // other packet: 4·1_000 = 4_000 < 8_000, no growth yet.
        ack_each(&mut veno, now, 8, 100, 100);
        assert_eq!(veno.window(), 8_000);
    }

    #[test]
    fn veno_base_rtt_is_relearned_after_every_loss_as_paper_not_kept_as_linux() {
        let now = Instant::now();
        let config = VenoConfig {
            initial_window_packets: 20,
            ..paper()
        };
        let mut veno = Veno::new(config, MSS);
        // BaseRTT 70 ms
        sample(&mut veno, now, 70, 70);
        // N = 20·(70 − 70)/70 = 0: random, 20_000·4/5 = 16_000; BaseRTT forgotten.
        veno.on_congestion(&loss(now, rtt(70, 70), false));
        assert_eq!(veno.base_rtt(), None);
        let mut relearn = ack(now, now, 1, rtt(100, 100), 0);
        relearn.in_recovery = true;
        veno.on_ack(&relearn);
        assert_eq!(veno.base_rtt(), Some(ms(100)));
        // Paper: N = 16·(100 − 100)/100 = 0 → random, 16_000·4/5 = 12_800.
        // Linux keeps BaseRTT = 70 ms: N = 16·30/100 = 4.8 → it would halve.
        let verdict = veno.on_congestion(&loss(now, rtt(100, 100), false));
        assert_eq!(verdict, LossVerdict::Random);
        assert_eq!(veno.window(), 12_800);
    }

    #[test]
    fn veno_base_rtt_is_kept_across_losses_under_never_as_linux_and_ns3() {
        let now = Instant::now();
        let config = VenoConfig {
            initial_window_packets: 20,
            base_rtt_reset: BaseRttReset::Never,
            ..paper()
        };
        let mut veno = Veno::new(config, MSS);
        sample(&mut veno, now, 70, 70);
        // N = 0: random, 20_000·4/5 = 16_000; BaseRTT kept at 70 ms.
        veno.on_congestion(&loss(now, rtt(70, 70), false));
        assert_eq!(veno.base_rtt(), Some(ms(70)));
        let mut later = ack(now, now, 1, rtt(100, 100), 0);
        later.in_recovery = true;
        veno.on_ack(&later);
        // N = 16·(100 − 70)/100 = 4.8 ≥ β: congestive, 16_000/2 = 8_000.
        let verdict = veno.on_congestion(&loss(now, rtt(100, 100), false));
        assert_eq!(verdict, LossVerdict::Congestive);
        assert_eq!(veno.window(), 8_000);
    }

    #[test]
    fn veno_backlog_uses_smoothed_rtt_as_paper_not_round_minimum_as_linux() {
        let now = Instant::now();
        let mut veno = veno();
        // BaseRTT 70 ms; then samples of 100 ms, the smoothed RTT at 80 ms.
        sample(&mut veno, now, 70, 70);
        sample(&mut veno, now, 100, 80);
        // Paper: N = 10·(80 − 70)/80 = 1.25 → random, 8_000.
        // Linux (RTT = round minimum 100 ms): N = 10·30/100 = 3 → halve.
        let verdict = veno.on_congestion(&loss(now, rtt(100, 80), false));
        assert_eq!(verdict, LossVerdict::Random);
        assert_eq!(veno.window(), 8_000);
        assert_eq!(veno.metrics().fields["backlog_packets"], 1.25);
    }

    #[test]
    fn veno_timeout_collapses_as_reno_whatever_the_backlog() {
        let now = Instant::now();
        let mut veno = veno();
        // cwnd 20_000, N = 0
        veno.on_ack(&ack(now, now, 10, rtt(100, 100), 0));
        // Timeout: ssthresh = 20_000/2, cwnd = 2 packets; judged congestive.
        let verdict = veno.on_congestion(&loss(now, rtt(100, 100), true));
        assert_eq!(verdict, LossVerdict::Congestive);
        assert_eq!((veno.window(), veno.ssthresh()), (2_000, 10_000));
        assert_eq!(veno.metrics().phase, Phase::SlowStart);

        let classic = VenoConfig {
            timeout_window_packets: 1,
            ..paper()
        };
        let mut classic = Veno::new(classic, MSS);
        classic.on_congestion(&loss(now, rtt(100, 100), true));
        assert_eq!((classic.window(), classic.ssthresh()), (1_000, 5_000));
    }

    #[test]
    fn veno_without_a_sample_since_the_last_loss_halves_as_reno() {
        let now = Instant::now();
        let mut veno = veno();
        sample(&mut veno, now, 100, 100);
        // random: 8_000
        veno.on_congestion(&loss(now, rtt(100, 100), false));
        // No sample since: N unknown, so Reno's rule: 8_000/2 = 4_000.
        let verdict = veno.on_congestion(&loss(now, rtt(100, 100), false));
        assert_eq!(verdict, LossVerdict::Congestive);
        assert_eq!(veno.window(), 4_000);
    }

    #[test]
    fn veno_does_not_grow_in_recovery_or_when_app_limited() {
        let now = Instant::now();
        let mut veno = veno();
        let mut a = ack(now, now, 5, rtt(100, 100), 0);
        a.in_recovery = true;
        veno.on_ack(&a);
        a.in_recovery = false;
        a.app_limited = true;
        veno.on_ack(&a);
        assert_eq!(veno.window(), 10_000);
        assert_eq!(veno.base_rtt(), Some(ms(100)));
    }

    #[test]
    fn corruption_leaves_veno_window_alone_by_default() {
        let now = Instant::now();
        let mut veno = veno();
        sample(&mut veno, now, 70, 70);
        // N = 10·(100 − 70)/100 = 3 ≥ β, but the option is off.
        veno.on_corruption(&corruption(now, rtt(100, 100)));
        assert_eq!((veno.window(), veno.ssthresh()), (10_000, u64::MAX));
        assert_eq!(veno.last_verdict(), None);
    }

    fn respecting_backlog() -> Veno {
        let config = VenoConfig {
            corruption_respects_backlog: true,
            ..paper()
        };
        Veno::new(config, MSS)
    }

    #[test]
    fn corruption_with_backlog_at_beta_halves_when_option_on() {
        let now = Instant::now();
        let mut veno = respecting_backlog();
        sample(&mut veno, now, 70, 70);
        // N = 10·30/100 = 3 ≥ β: a congestive loss, 10_000/2 = 5_000.
        veno.on_corruption(&corruption(now, rtt(100, 100)));
        assert_eq!((veno.window(), veno.ssthresh()), (5_000, 5_000));
        assert_eq!(veno.last_verdict(), Some(LossVerdict::Congestive));
    }

    #[test]
    fn corruption_below_beta_leaves_window_even_when_option_on() {
        let now = Instant::now();
        let mut veno = respecting_backlog();
        sample(&mut veno, now, 71, 71);
        // N = 10·29/100 = 2.9 < β: a link error, the window stays.
        veno.on_corruption(&corruption(now, rtt(100, 100)));
        assert_eq!(veno.window(), 10_000);
        assert_eq!(veno.last_verdict(), None);
    }

    #[test]
    fn corruption_cuts_at_most_once_per_smoothed_rtt() {
        let now = Instant::now();
        let mut veno = respecting_backlog();
        sample(&mut veno, now, 70, 70);
        // 5_000
        veno.on_corruption(&corruption(now, rtt(100, 100)));
        // BaseRTT relearned at 20 ms: N = 5·(100 − 20)/100 = 4 ≥ β.
        sample(&mut veno, now + ms(10), 20, 100);
        veno.on_corruption(&corruption(now + ms(50), rtt(100, 100)));
        assert_eq!(veno.window(), 5_000, "same burst: within one srtt");
        veno.on_corruption(&corruption(now + ms(100), rtt(100, 100)));
        assert_eq!(veno.window(), 2_500, "a smoothed RTT later: 5_000/2");
    }

    #[test]
    fn veno_and_enhanced_veno_are_selected_by_name_and_round_trip_through_serde() {
        use crate::CcConfig;
        let defaults = [
            ("veno", CcConfig::Veno(VenoConfig::default())),
            (
                "veno-enhanced",
                CcConfig::VenoEnhanced(VenoConfig::default()),
            ),
        ];
        for (name, expected) in defaults {
            let parsed: CcConfig = name.parse().unwrap();
            assert_eq!(parsed, expected);
            assert_eq!(parsed.name(), name);
            assert_eq!(parsed.build(MSS).metrics().algorithm, name);
            let json = serde_json::to_string(&parsed).unwrap();
            assert_eq!(serde_json::from_str::<CcConfig>(&json).unwrap(), parsed);
        }
        let custom: CcConfig = serde_json::from_str(
            r#"{"name":"veno","random_loss_reduction":[3,4],"corruption_respects_backlog":true}"#,
        )
        .unwrap();
        let expected = VenoConfig {
            random_loss_reduction: (3, 4),
            corruption_respects_backlog: true,
            ..VenoConfig::default()
        };
        assert_eq!(custom, CcConfig::Veno(expected));
        assert!(serde_json::from_str::<CcConfig>(r#"{"name":"veno","beta":2}"#).is_err());
    }

    #[test]
    fn veno_metrics_report_backlog_and_base_rtt() {
        let now = Instant::now();
        let mut veno = veno();
        let m = veno.metrics();
        assert_eq!(m.algorithm, "veno");
        assert_eq!(
            (m.fields["backlog_packets"], m.fields["base_rtt_ms"]),
            (0.0, 0.0)
        );
        sample(&mut veno, now, 50, 100);
        // N = 10·(100 − 50)/100 = 5 packets; BaseRTT 50 ms.
        let m = veno.metrics();
        assert_eq!(
            (m.fields["backlog_packets"], m.fields["base_rtt_ms"]),
            (5.0, 50.0)
        );
    }
}
