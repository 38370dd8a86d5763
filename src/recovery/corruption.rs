//! Corruption notices on the sender's side (DESIGN §5, HACK): a CORRUPTED
//! frame takes the packets it names out of flight without a congestion
//! event, and names that match nothing outstanding are counted, not trusted.
//!
//! A notice is the receiver's word, and a receiver that called every loss
//! corruption would never see a window cut. Three defences bound what lying
//! buys (SECURITY.md, "Trust model of corruption notices"):
//!
//! - **Witnesses.** The connection skips a packet number now and then
//!   (`conn::skip`). A receiver only ever names packets whose authenticated
//!   header it received, so naming a skipped number proves it names gaps it
//!   never saw; the connection then calls [`Recovery::distrust_notices`]
//!   and every later notice counts as a loss. This catches a receiver that
//!   names every gap, not one that decrypts what it gets and names only
//!   the gaps that leave a hole in the stream offsets (a skip leaves none).
//! - **The path's own record.** Corruption is a property of the link: a
//!   bit error hits a packet whatever the queue in front of it holds (HACK
//!   §4 draws it per packet from a bit error rate, 2–15% of packets, and
//!   leaves "congestion along with corruption" to future work, §6). A
//!   drop-tail queue drops only when full, so real losses come while the
//!   path shows a queue, at the top of the RTT range. The sender therefore
//!   sorts every packet that crosses the path (acknowledged or named) by
//!   what the latest RTT sample showed: a *queue* when its excess over
//!   min_rtt is at least half the largest excess seen in the last
//!   10–20 s ([`QUEUE_MEMORY`]), and at least [`GRANULARITY`] and
//!   1/[`QUEUE_FLOOR_DIVISOR`] of min_rtt; *calm* otherwise. Notices
//!   while calm are honoured (within the share below); while the path
//!   shows a queue, at most [`QUEUED_RATE_MULTIPLE`] times the rate at
//!   which notices come while it is calm, measured over the latest
//!   [`CALM_MEMORY_PACKETS`] calm packets, plus a credit saved up
//!   ([`INITIAL_QUEUED_NOTICE_CREDIT`] at first, [`QUEUED_NOTICE_CREDIT`]
//!   at most). An honest link corrupts the same share in both states, so its notices fit with room to spare; a liar
//!   that names only real losses names nothing while calm and so has only
//!   the initial credit: its queue-time losses count as losses, with the
//!   congestion response (and out of the delivery-rate model) that
//!   follows.
//! - **A share.** Whatever the states, notices are honoured for at most one
//!   in [`HONEST_CORRUPTION_SHARE`] of the packets that crossed the path,
//!   with credit for a burst: a link that damages more than a quarter of
//!   what it carries is beyond what corruption notices are for.
//!
//! What the record cannot see: a receiver that also games ACK timing
//! (delays some ACKs to inflate the largest excess, or evens out its RTT
//! samples so a queue never shows), or that names intact packets while
//! calm to raise the calm rate (each such lie costs it a resent packet,
//! and buys [`QUEUED_RATE_MULTIPLE`] queue-time lies per calm lie at equal
//! packet counts). Such a receiver is held by the share alone.

use std::ops::RangeInclusive;
use std::time::{Duration, Instant};

use sift_cc::CorruptionEvent;

use super::{Recovery, SentPacket, SpaceId, CORRUPTION_MEMORY, GRANULARITY};

/// Notices are honoured for at most one in this many packets that crossed
/// the path.
pub const HONEST_CORRUPTION_SHARE: u64 = 4;
/// Notices a connection may honour before any packet was acknowledged.
pub const INITIAL_CORRUPTION_CREDIT: u64 = 16;
/// The longest run of notices honoured back to back (a burst of errors on
/// a radio link): the credit saved up at most.
pub const MAX_CORRUPTION_CREDIT: u64 = 64;
/// While the path shows a queue, notices are honoured at most at this
/// multiple of the rate at which they come while it is calm. Twice: an
/// honest link's queue-time rate is its calm rate, and the margin absorbs
/// the chance in a few thousand packets.
pub const QUEUED_RATE_MULTIPLE: u64 = 2;
/// Queue-time notices honoured beyond the rate rule at the start, before
/// the path has shown its calm rate (a slow start begins calm, so an
/// honest link has shown it by the time a queue stands).
pub const INITIAL_QUEUED_NOTICE_CREDIT: u64 = 4;
/// Queue-time notices saved up at most (a burst of corruption while a
/// queue stands).
pub const QUEUED_NOTICE_CREDIT: u64 = 16;
/// The calm rate is measured over about this many of the latest calm
/// packets: the counts halve when the packets reach twice this, so the
/// rate follows a link whose corruption changes.
pub const CALM_MEMORY_PACKETS: u64 = 8192;
/// How long the largest RTT excess seen stays the yardstick of a queue:
/// a window of between one and two of these.
pub const QUEUE_MEMORY: Duration = Duration::from_secs(10);
/// A queue shows only when the RTT excess is at least min_rtt over this
/// (and [`GRANULARITY`]): the first round trips of a slow start, paced
/// and a few milliseconds apart, would otherwise read as a queue before
/// the calm rate is known. Queues shallower than this stay calm (see
/// SECURITY.md).
pub const QUEUE_FLOOR_DIVISOR: u32 = 16;
/// Fixed-point scale of the queue-time credit: units per notice.
const CREDIT_SCALE: u64 = 1 << 20;

/// What the latest RTT sample shows of the queue on the path: its excess
/// over min_rtt against the largest excess of the last 10–20 s.
#[derive(Debug, Default)]
struct QueueWatch {
    excess: Duration,
    min: Duration,
    /// The largest excess of the current and the previous window.
    largest: [Duration; 2],
    window_start: Option<Instant>,
}

impl QueueWatch {
    fn on_rtt_sample(&mut self, latest: Duration, min: Duration, now: Instant) {
        let start = *self.window_start.get_or_insert(now);
        if now.saturating_duration_since(start) >= QUEUE_MEMORY {
            self.largest = [Duration::ZERO, self.largest[0]];
            self.window_start = Some(now);
        }
        self.excess = latest.saturating_sub(min);
        self.min = min;
        self.largest[0] = self.largest[0].max(self.excess);
    }

    /// The latest sample is at least half the largest excess seen, and
    /// more than timer and pacing noise: [`GRANULARITY`] and
    /// 1/[`QUEUE_FLOOR_DIVISOR`] of min_rtt.
    fn shows_queue(&self) -> bool {
        let largest = self.largest[0].max(self.largest[1]);
        self.excess >= GRANULARITY.max(self.min / QUEUE_FLOOR_DIVISOR)
            && self.excess.saturating_mul(2) >= largest
    }
}

/// Credit for honouring notices: the share of everything that crossed the
/// path, and the queue-time credit that follows the calm rate.
#[derive(Debug)]
pub(super) struct CorruptionBudget {
    /// Share credit, in units of 1/[`HONEST_CORRUPTION_SHARE`] of a
    /// notice: each packet that crosses earns one unit, each honoured
    /// notice costs a whole notice.
    units: u64,
    distrusted: bool,
    queue: QueueWatch,
    /// Packets that crossed while the path was calm, and the notices
    /// among them (both halved now and then: [`CALM_MEMORY_PACKETS`]).
    calm_packets: u64,
    calm_notices: u64,
    /// Queue-time credit, in 1/`CREDIT_SCALE` of a notice.
    queued_credit: u64,
}

impl Default for CorruptionBudget {
    fn default() -> Self {
        Self {
            units: INITIAL_CORRUPTION_CREDIT * HONEST_CORRUPTION_SHARE,
            distrusted: false,
            queue: QueueWatch::default(),
            calm_packets: 0,
            calm_notices: 0,
            queued_credit: INITIAL_QUEUED_NOTICE_CREDIT * CREDIT_SCALE,
        }
    }
}

impl CorruptionBudget {
    /// A new RTT sample: `latest` and the path's `min`.
    pub(super) fn on_rtt_sample(&mut self, latest: Duration, min: Duration, now: Instant) {
        self.queue.on_rtt_sample(latest, min, now);
    }

    /// The peer moved to a new path: what the old one showed is no
    /// yardstick.
    pub(super) fn on_new_path(&mut self) {
        self.queue = QueueWatch::default();
    }

    /// `packets` more packets crossed the path.
    pub(super) fn earn(&mut self, packets: u64) {
        self.units = self
            .units
            .saturating_add(packets)
            .min(MAX_CORRUPTION_CREDIT * HONEST_CORRUPTION_SHARE);
        if self.queue.shows_queue() {
            // K · (calm notices / calm packets) of a notice per packet. No
            // prior: a liar's path shows a queue nearly all the time, and
            // any prior over its few calm packets would be its budget.
            let per_packet = (QUEUED_RATE_MULTIPLE * CREDIT_SCALE * self.calm_notices)
                .checked_div(self.calm_packets)
                .unwrap_or(0);
            self.queued_credit = self
                .queued_credit
                .saturating_add(per_packet.saturating_mul(packets))
                .min(QUEUED_NOTICE_CREDIT * CREDIT_SCALE);
        } else {
            self.calm_packets = self.calm_packets.saturating_add(packets);
            if self.calm_packets >= 2 * CALM_MEMORY_PACKETS {
                self.calm_packets /= 2;
                self.calm_notices /= 2;
            }
        }
    }

    /// Whether one more notice may be honoured; takes its cost if so.
    /// Call after [`CorruptionBudget::earn`] for the named packet.
    fn spend(&mut self) -> bool {
        if self.distrusted {
            return false;
        }
        let queued = self.queue.shows_queue();
        if !queued {
            self.calm_notices = self.calm_notices.saturating_add(1);
        }
        if self.units < HONEST_CORRUPTION_SHARE || queued && self.queued_credit < CREDIT_SCALE {
            return false;
        }
        if queued {
            self.queued_credit -= CREDIT_SCALE;
        }
        self.units -= HONEST_CORRUPTION_SHARE;
        true
    }
}

impl<F> Recovery<F> {
    /// The peer named a packet number we never sent in a CORRUPTED frame
    /// (one we skipped): it names gaps, not damaged packets. Its notices
    /// count as losses from now on.
    pub fn distrust_notices(&mut self) {
        self.corruption_budget.distrusted = true;
    }

    /// Whether [`Recovery::distrust_notices`] was called.
    pub fn notices_distrusted(&self) -> bool {
        self.corruption_budget.distrusted
    }

    /// A CORRUPTED frame named `ranges` in `space`. Outstanding packets named
    /// there leave flight and are returned for retransmission: within the
    /// budget as corrupted, without a congestion event; beyond it as lost.
    /// Call before processing an ACK in the same packet, or a corrupted
    /// packet with three later acks is counted as congestion.
    pub fn on_corrupted(
        &mut self,
        space: SpaceId,
        ranges: impl Iterator<Item = RangeInclusive<u64>>,
        now: Instant,
    ) -> CorruptedOutcome<F> {
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
            return CorruptedOutcome::default();
        }
        // Within the budget a named packet crossed the path (delivered for
        // the rate model); beyond it, the notice is a loss like any other,
        // and the rate model counts it lost.
        let mut honoured = Vec::with_capacity(corrupted.len());
        let mut over_budget = Vec::new();
        for packet in corrupted {
            self.recently_corrupted
                .insert((space, packet.packet_number));
            self.corruption_budget.earn(1);
            if self.corruption_budget.spend() {
                honoured.push(packet);
            } else {
                over_budget.push(packet);
            }
        }
        while self.recently_corrupted.len() > CORRUPTION_MEMORY {
            self.recently_corrupted.pop_first();
        }
        if !over_budget.is_empty() {
            self.stats.corruption_names_over_budget += over_budget.len() as u64;
            self.loss_trigger = Some(super::LossTrigger::CorruptionOverBudget);
            self.on_packets_lost(space, &over_budget, now);
            self.loss_trigger = None;
        }
        let corrupted = honoured;
        if corrupted.is_empty() {
            return CorruptedOutcome {
                corrupted,
                lost: over_budget,
            };
        }
        let mut corrupted_bytes = 0;
        for packet in &corrupted {
            if packet.in_flight {
                self.bytes_in_flight = self.bytes_in_flight.saturating_sub(packet.size);
                corrupted_bytes += packet.size;
                // It crossed the path: delivered for the rate model, not lost.
                self.rate.on_corrupted(packet.size, now);
            }
        }
        self.stats.corrupted_packets += corrupted.len() as u64;
        if self.noting() {
            self.note(super::RecoveryNote::Corrupted {
                at: now,
                space,
                packet_numbers: corrupted.iter().map(|p| p.packet_number).collect(),
            });
        }
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
        CorruptedOutcome {
            corrupted,
            lost: over_budget,
        }
    }
}

/// What a CORRUPTED frame did. Both lists go back for retransmission; they
/// differ in what they cost the window and in which counter holds them.
#[derive(Debug)]
pub struct CorruptedOutcome<F> {
    /// Named packets honoured as corrupted: out of flight, no congestion
    /// event (`RecoveryStats::corrupted_packets`).
    pub corrupted: Vec<SentPacket<F>>,
    /// Named packets beyond the notice budget (or of a distrusted peer):
    /// declared lost like any other loss (`RecoveryStats::lost_packets`).
    pub lost: Vec<SentPacket<F>>,
}

impl<F> Default for CorruptedOutcome<F> {
    fn default() -> Self {
        Self {
            corrupted: Vec::new(),
            lost: Vec::new(),
        }
    }
}

impl<F> CorruptedOutcome<F> {
    /// Whether the frame named nothing outstanding.
    pub fn is_empty(&self) -> bool {
        self.corrupted.is_empty() && self.lost.is_empty()
    }

    /// Every named packet, the corrupted first: what goes again.
    pub fn into_resent(self) -> Vec<SentPacket<F>> {
        let mut packets = self.corrupted;
        packets.extend(self.lost);
        packets
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// A budget whose latest RTT sample showed `excess_ms` above a 100 ms
    /// minimum, after one of 100 ms excess (the largest).
    fn budget_at(excess_ms: u64) -> CorruptionBudget {
        let t0 = Instant::now();
        let mut budget = CorruptionBudget::default();
        budget.on_rtt_sample(ms(200), ms(100), t0);
        budget.on_rtt_sample(ms(100 + excess_ms), ms(100), t0 + ms(1));
        budget
    }

    #[test]
    fn a_sample_at_half_the_largest_excess_shows_a_queue() {
        assert!(budget_at(100).queue.shows_queue());
        assert!(budget_at(50).queue.shows_queue());
        assert!(!budget_at(49).queue.shows_queue());
        // A path that never queued: no excess is a queue.
        let mut flat = CorruptionBudget::default();
        flat.on_rtt_sample(ms(100), ms(100), Instant::now());
        assert!(!flat.queue.shows_queue());
        // Under 1/16 of min_rtt (6.25 ms of 100) is noise, not a queue.
        let mut jitter = CorruptionBudget::default();
        jitter.on_rtt_sample(ms(106), ms(100), Instant::now());
        assert!(!jitter.queue.shows_queue());
        jitter.on_rtt_sample(ms(107), ms(100), Instant::now());
        assert!(jitter.queue.shows_queue());
    }

    #[test]
    fn the_largest_excess_is_forgotten_after_two_windows() {
        let t0 = Instant::now();
        let mut watch = QueueWatch::default();
        watch.on_rtt_sample(ms(200), ms(100), t0);
        watch.on_rtt_sample(ms(140), ms(100), t0 + QUEUE_MEMORY);
        // 40 of a largest 100 (previous window): calm.
        assert!(!watch.shows_queue());
        watch.on_rtt_sample(ms(140), ms(100), t0 + QUEUE_MEMORY * 2);
        // The 100 ms excess is two windows old: 40 is the largest now.
        assert!(watch.shows_queue());
    }

    #[test]
    fn queue_time_notices_are_honoured_at_twice_the_calm_rate() {
        let mut budget = budget_at(10);
        // Calm: 1024 packets cross, 8 of them named.
        budget.earn(1016);
        for _ in 0..8 {
            budget.earn(1);
            assert!(budget.spend());
        }
        assert_eq!((budget.calm_packets, budget.calm_notices), (1024, 8));
        // A queue shows: the initial credit (4 notices) is honoured.
        let start = budget.queue.window_start.unwrap();
        budget.queue.on_rtt_sample(ms(190), ms(100), start);
        assert!(budget.queue.shows_queue());
        for _ in 0..INITIAL_QUEUED_NOTICE_CREDIT {
            assert!(budget.spend());
        }
        assert!(!budget.spend(), "credit spent");
        assert_eq!(
            (budget.calm_packets, budget.calm_notices),
            (1024, 8),
            "queue-time names are not calm ones"
        );
        // Each queued packet earns 2 · 8/1024 = 1/64 of a notice: 128
        // packets earn two.
        budget.earn(128);
        assert!(budget.spend());
        assert!(budget.spend());
        assert!(!budget.spend());
        // At most 16 are saved: 6400 packets earn 100.
        budget.earn(6400);
        let honoured = (0..100).filter(|_| budget.spend()).count() as u64;
        assert_eq!(honoured, QUEUED_NOTICE_CREDIT);
    }

    #[test]
    fn a_receiver_that_names_nothing_while_calm_gets_only_the_credit_in_a_queue() {
        let mut budget = budget_at(10);
        budget.earn(5000);
        let start = budget.queue.window_start.unwrap();
        budget.queue.on_rtt_sample(ms(200), ms(100), start);
        let mut honoured = 0;
        for _ in 0..1000 {
            budget.earn(20);
            honoured += u64::from(budget.spend());
        }
        assert_eq!(honoured, INITIAL_QUEUED_NOTICE_CREDIT);
    }

    #[test]
    fn the_calm_rate_follows_the_latest_calm_packets() {
        let mut budget = budget_at(10);
        budget.earn(2 * CALM_MEMORY_PACKETS - 1);
        assert_eq!(budget.calm_packets, 2 * CALM_MEMORY_PACKETS - 1);
        budget.earn(1);
        assert_eq!(budget.calm_packets, CALM_MEMORY_PACKETS);
    }
}
