//! DualPI2, the DualQ Coupled AQM (RFC 9332), as Linux's `dualpi2` qdisc
//! runs it (`net/sched/sch_dualpi2.c`, Linux 6.16).
//!
//! Two FIFOs share one limit. ECT(1) and CE packets (with `any_ect`, ECT(0)
//! too) go to the L4S queue, the rest to the classic queue. Every `tupdate`
//! a PI controller moves the base probability p′ by
//! α·(qdelay − target) + β·(qdelay − qdelay_before), qdelay being the
//! larger sojourn time of the two queues' heads. At dequeue a classic packet
//! is dropped, or marked if ECN-capable, with p_C = p′² (two rolls of p′);
//! an L4S packet is marked with the coupled p_CL = k·p′, and besides marked
//! whenever its own sojourn time exceeds `step_thresh` (the native step
//! AQM): together RFC 9332's p_L = max(p_CL, step). On overload (k·p′ > 1)
//! L4S packets see classic drops (p′²) and are otherwise marked, unless
//! `overflow` asks to mark only and let the queue fill. A weighted
//! round-robin gives the classic queue `classic_protection` percent of the
//! bytes when both are backlogged (the kernel's credit scheme).
//!
//! Where sift differs from the qdisc:
//! - the PI update runs at `tupdate` steps from the first packet the
//!   queue saw, computed when the link is next touched (the result is the
//!   same as a timer's: the queue does not change in between);
//! - drops happen at dequeue only (`drop_dequeue`, the default); there is
//!   no `drop_enqueue`, `memlimit`, `min_qlen_step` (always 0), packet-count
//!   `step_thresh`, `max_rtt`/`typical_rtt` or GSO splitting;
//! - the queue limit is the link's `limit` (tc's dualpi2 defaults to 10000
//!   packets; sift keeps netem's 1000 unless told);
//! - probabilities are floating point, not 32-bit fixed point.

use std::time::{Duration, Instant};

use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::{try_mark, DEVICE_MTU_BYTES};
use crate::sim::link::config::duration_ms;
use crate::sim::link::queue::{over_limit, DropTailQueue, QueueLimit};
use crate::sim::link::random::unit;
use crate::sim::link::{LinkCounters, Packet};
use crate::wire::Ecn;

/// Percentages of `classic_protection` add up to this (the kernel's `MAX_WC`).
const MAX_WEIGHT: i64 = 100;

/// DualPI2's parameters, as `tc qdisc … dualpi2` names them, with its
/// defaults (`dualpi2_reset_default`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DualPi2 {
    /// The classic queue's target delay (`target`, 15 ms).
    #[serde(with = "duration_ms")]
    pub target_ms: Duration,
    /// How often the PI controller updates p′ (`tupdate`, 16 ms).
    #[serde(with = "duration_ms")]
    pub tupdate_ms: Duration,
    /// Integral gain in Hz (`alpha`, 0.16: the kernel's 41/256).
    pub alpha: f64,
    /// Proportional gain in Hz (`beta`, 3.2: the kernel's 819/256).
    pub beta: f64,
    /// Coupling factor k between the queues (`coupling_factor`, 2: window
    /// fairness for equal RTTs, RFC 9332 §2.4).
    pub coupling_factor: f64,
    /// The L4S queue's step threshold (`step_thresh`, 1 ms).
    #[serde(with = "duration_ms")]
    pub step_thresh_ms: Duration,
    /// The classic queue's share of the scheduler in percent
    /// (`classic_protection`, 10).
    pub classic_protection: u8,
    /// ECT(0) goes to the L4S queue too (`any_ect`; default `l4s_ect`:
    /// only ECT(1) and CE).
    pub any_ect: bool,
    /// On overload, L4S packets see classic drops (`drop_on_overload`,
    /// the default); `false` is `overflow`: mark only and let the queue's
    /// limit drop.
    pub drop_on_overload: bool,
}

impl Default for DualPi2 {
    fn default() -> Self {
        Self {
            target_ms: Duration::from_millis(15),
            tupdate_ms: Duration::from_millis(16),
            alpha: 41.0 / 256.0,
            beta: 819.0 / 256.0,
            coupling_factor: 2.0,
            step_thresh_ms: Duration::from_millis(1),
            classic_protection: 10,
            any_ect: false,
            drop_on_overload: true,
        }
    }
}

impl DualPi2 {
    pub(super) fn validate(&self) -> Result<(), String> {
        if self.tupdate_ms.is_zero() {
            return Err("dualpi2 tupdate must be > 0".into());
        }
        for (name, gain) in [("alpha", self.alpha), ("beta", self.beta)] {
            if !(gain.is_finite() && gain > 0.0 && gain < 1e6) {
                return Err(format!("dualpi2 {name} must be a number > 0, got {gain}"));
            }
        }
        if !(self.coupling_factor.is_finite() && (1.0..=255.0).contains(&self.coupling_factor)) {
            return Err(format!(
                "dualpi2 coupling_factor must be in 1..=255, got {}",
                self.coupling_factor
            ));
        }
        if i64::from(self.classic_protection) > MAX_WEIGHT {
            return Err("dualpi2 classic_protection must be a percentage, 0..=100".into());
        }
        Ok(())
    }

    /// Whether `ecn` is classified into the L4S queue.
    fn is_l4s(&self, ecn: Ecn) -> bool {
        match ecn {
            Ecn::Ect1 | Ecn::Ce => true,
            Ecn::Ect0 => self.any_ect,
            Ecn::NotEct => false,
        }
    }
}

/// The two queues, the PI controller and the scheduler's credit.
pub(crate) struct DualPi2State {
    params: DualPi2,
    limit: QueueLimit,
    l4s: DropTailQueue<Packet>,
    classic: DropTailQueue<Packet>,
    /// p′, the base probability, in 0..=1.
    probability: f64,
    /// The queue delay at the last update.
    last_qdelay: Duration,
    /// When the next PI update is due; set by the first packet.
    next_update: Option<Instant>,
    /// The round-robin credit in byte-percent: ≤ 0 serves the L4S queue.
    credit: i64,
}

impl DualPi2State {
    pub(super) fn new(limit: QueueLimit, params: DualPi2) -> Self {
        let credit = initial_credit(&params);
        Self {
            params,
            limit,
            l4s: DropTailQueue::new(limit),
            classic: DropTailQueue::new(limit),
            probability: 0.0,
            last_qdelay: Duration::ZERO,
            next_update: None,
            credit,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.l4s.len() + self.classic.len()
    }

    pub(super) fn would_drop(&self, len: usize) -> bool {
        over_limit(
            self.limit,
            self.len(),
            self.l4s.bytes() + self.classic.bytes(),
            len,
        )
    }

    pub(super) fn enqueue(
        &mut self,
        packet: Packet,
        front: bool,
        now: Instant,
    ) -> Result<(), Packet> {
        self.catch_up(now);
        if self.would_drop(packet.bytes.len()) {
            return Err(packet);
        }
        let queue = if self.params.is_l4s(packet.ecn) {
            &mut self.l4s
        } else {
            &mut self.classic
        };
        if front {
            queue.push_front_unchecked(packet);
        } else {
            queue.push_back_unchecked(packet);
        }
        Ok(())
    }

    /// The larger sojourn time of the two heads at `now`.
    fn queue_delay(&self, now: Instant) -> Duration {
        [self.l4s.front(), self.classic.front()]
            .into_iter()
            .flatten()
            .map(|p| now.saturating_duration_since(p.enqueued_at))
            .max()
            .unwrap_or(Duration::ZERO)
    }

    /// Runs every PI update due by `now` (`calculate_probability`).
    fn catch_up(&mut self, now: Instant) {
        let tupdate = self.params.tupdate_ms;
        let mut next = *self.next_update.get_or_insert(now + tupdate);
        while next <= now {
            if self.len() == 0 && self.probability == 0.0 && self.last_qdelay.is_zero() {
                // Idle and settled: every update until now changes nothing.
                let behind =
                    now.saturating_duration_since(next).as_nanos() / tupdate.as_nanos().max(1);
                let skip = u32::try_from(behind).unwrap_or(u32::MAX);
                next += tupdate.saturating_mul(skip);
                next += tupdate;
                continue;
            }
            let qdelay = self.queue_delay(next);
            let error = qdelay.as_secs_f64() - self.params.target_ms.as_secs_f64();
            let growth = qdelay.as_secs_f64() - self.last_qdelay.as_secs_f64();
            let updated = self.probability + self.params.alpha * error + self.params.beta * growth;
            self.probability = updated.clamp(0.0, 1.0);
            if !self.params.drop_on_overload {
                // Keep the L4S probability at most 100% (window fairness when overflowing).
                self.probability = self.probability.min(1.0 / self.params.coupling_factor);
            }
            self.last_qdelay = qdelay;
            next += tupdate;
        }
        self.next_update = Some(next);
    }

    /// The next packet for the serializer (`dualpi2_qdisc_dequeue`).
    pub(super) fn dequeue(
        &mut self,
        now: Instant,
        rng: &mut ChaCha8Rng,
        counters: &mut LinkCounters,
        dropped: &mut Vec<Packet>,
    ) -> Option<Packet> {
        self.catch_up(now);
        loop {
            let (mut packet, from_l4s, credit_change) = self.pick()?;
            match self.decide(&mut packet, from_l4s, now, rng) {
                Verdict::Drop => {
                    counters.aqm_drops += 1;
                    dropped.push(packet);
                }
                Verdict::Mark => {
                    counters.aqm_marks += 1;
                    self.credit += credit_change;
                    return Some(packet);
                }
                Verdict::Pass => {
                    self.credit += credit_change;
                    return Some(packet);
                }
            }
        }
    }

    /// Takes the head of the queue the scheduler serves next, with the
    /// credit change serving it makes (`dequeue_packet`).
    fn pick(&mut self) -> Option<(Packet, bool, i64)> {
        let wc = i64::from(self.params.classic_protection);
        let wl = MAX_WEIGHT - wc;
        let classic_waiting = self.classic.len() > 0;
        if self.l4s.len() > 0 && (!classic_waiting || self.credit <= 0) {
            let packet = self.l4s.pop_front()?;
            let change = if classic_waiting {
                wc * packet.bytes.len() as i64
            } else {
                0
            };
            Some((packet, true, change))
        } else if classic_waiting {
            let l4s_waiting = self.l4s.len() > 0;
            let packet = self.classic.pop_front()?;
            let change = if l4s_waiting {
                -wl * packet.bytes.len() as i64
            } else {
                0
            };
            Some((packet, false, change))
        } else {
            self.credit = initial_credit(&self.params);
            None
        }
    }

    /// Drop, mark or pass a dequeued packet (`must_drop`, then the step AQM
    /// for the L4S queue).
    fn decide(
        &self,
        packet: &mut Packet,
        from_l4s: bool,
        now: Instant,
        rng: &mut ChaCha8Rng,
    ) -> Verdict {
        let backlog = self.l4s.bytes() + self.classic.bytes();
        let p = self.probability;
        let mut roll = |probability: f64| unit(rng) < probability;
        let mut marked = false;
        if backlog >= 2 * DEVICE_MTU_BYTES {
            let coupled = p * self.params.coupling_factor;
            let overload = coupled > 1.0;
            if !from_l4s {
                if roll(p) && roll(p) {
                    if overload || !try_mark(packet) {
                        return Verdict::Drop;
                    }
                    marked = true;
                }
            } else if overload {
                if self.params.drop_on_overload && roll(p) && roll(p) {
                    return Verdict::Drop;
                }
                marked = try_mark(packet) || marked;
            } else if roll(coupled) {
                if !try_mark(packet) {
                    return Verdict::Drop;
                }
                marked = true;
            }
        }
        if from_l4s
            && now.saturating_duration_since(packet.enqueued_at) > self.params.step_thresh_ms
        {
            if !try_mark(packet) {
                return Verdict::Drop;
            }
            marked = true;
        }
        if marked {
            Verdict::Mark
        } else {
            Verdict::Pass
        }
    }
}

/// What the AQM does with a dequeued packet.
enum Verdict {
    Drop,
    Mark,
    Pass,
}

/// The credit the scheduler starts from: one MTU's worth weighted by
/// (wc − wl), negative by default so the L4S queue goes first
/// (`dualpi2_calculate_c_protection`).
fn initial_credit(params: &DualPi2) -> i64 {
    let wc = i64::from(params.classic_protection);
    DEVICE_MTU_BYTES as i64 * (wc - (MAX_WEIGHT - wc))
}
