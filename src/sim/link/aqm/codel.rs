//! CoDel, the Controlled Delay AQM (RFC 8289), as Linux's `codel` qdisc
//! runs it (`include/net/codel_impl.h`): at dequeue, once the sojourn time
//! of the packets leaving has stayed above `target` for an `interval`, drop
//! (or with `ecn`, mark ECT packets CE) at intervals shrinking as
//! interval/√count, until the sojourn time falls below target again.
//!
//! Written from RFC 8289 §5 and the kernel's control flow, in floating
//! point: the kernel's Newton-step estimate of 1/√count is replaced by the
//! exact value, which changes drop times by well under a percent.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::{try_mark, DEVICE_MTU_BYTES};
use crate::sim::link::config::{duration_ms, optional_duration_ms};
use crate::sim::link::queue::{DropTailQueue, QueueLimit};
use crate::sim::link::{LinkCounters, Packet};

/// tc-codel(8)'s default `target`: 5 ms (RFC 8289 §4.4).
pub const CODEL_DEFAULT_TARGET: Duration = Duration::from_millis(5);
/// tc-codel(8)'s default `interval`: 100 ms (RFC 8289 §4.3).
pub const CODEL_DEFAULT_INTERVAL: Duration = Duration::from_millis(100);
/// When a new dropping state may resume the previous drop rate: if it
/// starts within 16 intervals of the last drop (`codel_impl.h`,
/// `codel_dequeue`; RFC 8289 §5.4 describes the same heuristic).
const RESUME_WITHIN_INTERVALS: u32 = 16;

/// CoDel's parameters, as `tc qdisc … codel [target TIME] [interval TIME]
/// [ecn|noecn] [ce_threshold TIME]` names them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Codel {
    /// Acceptable standing queue delay (`target`, default 5 ms).
    #[serde(with = "duration_ms")]
    pub target_ms: Duration,
    /// Window over which the sojourn time must stay above target before
    /// CoDel acts, and the base of its control law (`interval`, 100 ms).
    #[serde(with = "duration_ms")]
    pub interval_ms: Duration,
    /// Mark ECN-capable packets CE instead of dropping them (`ecn`; tc's
    /// codel defaults to `noecn`).
    pub ecn: bool,
    /// Also mark every ECN-capable packet whose sojourn exceeds this,
    /// whatever the control law says (`ce_threshold`, off by default): a
    /// shallow step for DCTCP-like senders.
    #[serde(with = "optional_duration_ms", skip_serializing_if = "Option::is_none")]
    pub ce_threshold_ms: Option<Duration>,
}

impl Default for Codel {
    fn default() -> Self {
        Self {
            target_ms: CODEL_DEFAULT_TARGET,
            interval_ms: CODEL_DEFAULT_INTERVAL,
            ecn: false,
            ce_threshold_ms: None,
        }
    }
}

impl Codel {
    pub(super) fn validate(&self) -> Result<(), String> {
        if self.interval_ms.is_zero() {
            return Err("codel interval must be > 0".into());
        }
        if self.target_ms.is_zero() {
            return Err("codel target must be > 0".into());
        }
        Ok(())
    }
}

/// CoDel's queue and state variables (RFC 8289 §5.2's names).
pub(crate) struct CodelState {
    pub(super) queue: DropTailQueue<Packet>,
    params: Codel,
    /// When the sojourn time will have been above target for an interval;
    /// `None` while it is below.
    first_above_time: Option<Instant>,
    /// In the dropping state.
    dropping: bool,
    /// When the next drop (or mark) is due in the dropping state.
    drop_next: Option<Instant>,
    /// Drops (and marks) since the dropping state began.
    count: u32,
    /// `count` when the last dropping state began.
    last_count: u32,
}

impl CodelState {
    pub(super) fn new(limit: QueueLimit, params: Codel) -> Self {
        Self {
            queue: DropTailQueue::new(limit),
            params,
            first_above_time: None,
            dropping: false,
            drop_next: None,
            count: 0,
            last_count: 0,
        }
    }

    /// `t + interval / √count`.
    fn control_law(&self, t: Instant) -> Instant {
        let count = f64::from(self.count.max(1));
        t + self.params.interval_ms.div_f64(count.sqrt())
    }

    /// Whether the sojourn time of `packet` (just dequeued) has been above
    /// target for an interval: RFC 8289 §5.3's `dodequeue`, with the
    /// kernel's guard that a queue holding at most one MTU is never cut.
    fn should_drop(&mut self, packet: Option<&Packet>, now: Instant) -> bool {
        let Some(packet) = packet else {
            self.first_above_time = None;
            return false;
        };
        let sojourn = now.saturating_duration_since(packet.enqueued_at);
        if sojourn < self.params.target_ms || self.queue.bytes() <= DEVICE_MTU_BYTES {
            self.first_above_time = None;
            return false;
        }
        match self.first_above_time {
            None => {
                self.first_above_time = Some(now + self.params.interval_ms);
                false
            }
            Some(at) => now > at,
        }
    }

    fn drop_packet(
        &mut self,
        packet: Packet,
        counters: &mut LinkCounters,
        dropped: &mut Vec<Packet>,
    ) {
        counters.aqm_drops += 1;
        dropped.push(packet);
    }

    /// The next packet for the serializer: RFC 8289 §5.5's dequeue.
    pub(super) fn dequeue(
        &mut self,
        now: Instant,
        counters: &mut LinkCounters,
        dropped: &mut Vec<Packet>,
    ) -> Option<Packet> {
        let mut packet = self.queue.pop_front();
        if packet.is_none() {
            self.dropping = false;
            return None;
        }
        let drop = self.should_drop(packet.as_ref(), now);
        if self.dropping {
            if !drop {
                // The sojourn time went below target: leave the dropping state.
                self.dropping = false;
            } else {
                // A large backlog may make several drops due at once.
                while self.dropping && self.drop_next.is_some_and(|next| now >= next) {
                    self.count = self.count.saturating_add(1);
                    let Some(mut current) = packet.take() else {
                        break;
                    };
                    if self.params.ecn && try_mark(&mut current) {
                        counters.aqm_marks += 1;
                        packet = Some(current);
                        self.drop_next = self.drop_next.map(|next| self.control_law(next));
                        break;
                    }
                    self.drop_packet(current, counters, dropped);
                    packet = self.queue.pop_front();
                    if self.should_drop(packet.as_ref(), now) {
                        self.drop_next = self.drop_next.map(|next| self.control_law(next));
                    } else {
                        self.dropping = false;
                    }
                }
            }
        } else if drop {
            if let Some(mut current) = packet.take() {
                if self.params.ecn && try_mark(&mut current) {
                    counters.aqm_marks += 1;
                    packet = Some(current);
                } else {
                    self.drop_packet(current, counters, dropped);
                    packet = self.queue.pop_front();
                    self.should_drop(packet.as_ref(), now);
                }
            }
            self.dropping = true;
            // Near the last dropping state, resume its rate (RFC 8289 §5.4).
            let delta = self.count.saturating_sub(self.last_count);
            let recent = self.drop_next.is_some_and(|next| {
                now.saturating_duration_since(next)
                    < self.params.interval_ms * RESUME_WITHIN_INTERVALS
            });
            self.count = if delta > 1 && recent { delta } else { 1 };
            self.last_count = self.count;
            self.drop_next = Some(self.control_law(now));
        }
        if let (Some(p), Some(threshold)) = (packet.as_mut(), self.params.ce_threshold_ms) {
            let sojourn = now.saturating_duration_since(p.enqueued_at);
            if sojourn > threshold && p.ecn != crate::wire::Ecn::Ce && try_mark(p) {
                counters.aqm_marks += 1;
            }
        }
        packet
    }
}
