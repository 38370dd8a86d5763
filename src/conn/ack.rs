//! Receiver-side acknowledgement state of one packet-number space: which
//! packets arrived, when an ACK is due (RFC 9000 §13.2.1, or what the peer
//! asked for with ACK_FREQUENCY), and which packets arrived with a good
//! header but a damaged payload (the CORRUPTED notices to send).

use std::time::{Duration, Instant};

use crate::wire::{encode_ack_ecn, encode_corrupted, RangeSet};

/// RFC 9000 §13.2.2: acknowledge at least every second ack-eliciting
/// packet, i.e. at most one may wait (draft-ietf-quic-ack-frequency-13's
/// Ack-Eliciting Threshold of 1).
pub const DEFAULT_ACK_ELICITING_THRESHOLD: u64 = 1;
/// RFC 9000 §13.2.1: any packet out of order is acknowledged at once
/// (draft-ietf-quic-ack-frequency-13's Reordering Threshold of 1).
pub const DEFAULT_REORDERING_THRESHOLD: u64 = 1;
/// DESIGN §5: a corruption notice is repeated in this many ACK-bearing
/// packets, so one lost notice does not send the packet down the loss path.
pub const CORRUPTION_NOTICE_REPEATS: u8 = 3;
/// At most this many ranges in one ACK frame (older ranges were reported
/// before and are pruned once an ACK of ours is acknowledged).
pub const MAX_ACK_RANGES_SENT: usize = 64;
/// Packets below the largest acknowledged ACK that stay tracked while a gap
/// below them is open, so a packet that arrives late (reordering) is still
/// accepted and acknowledged rather than taken for a duplicate; a gap older
/// than this is given up (the sender has long declared it lost). 1024
/// packets are ~0.5 s at 20 Mb/s of 1250-byte packets.
pub const REORDERING_TRACKED_PACKETS: u64 = 1024;
/// Disjoint runs of received packet numbers kept at most. Pruning
/// (`on_ack_acked`) needs the peer to acknowledge our ACKs; a peer that
/// leaves a gap after every packet and never does would otherwise grow the
/// set by a range per packet. 1024 ranges span at least 2048 packets, past
/// [`REORDERING_TRACKED_PACKETS`], where pruning gives gaps up anyway.
pub const MAX_TRACKED_RANGES: usize = 1024;
/// Corrupted packet numbers awaiting (re)notification, at most. A flood of
/// corrupted packets cannot grow this without bound.
const MAX_PENDING_CORRUPTED: usize = 256;

#[derive(Debug)]
struct PendingNotice {
    packet_number: u64,
    repeats_left: u8,
}

/// ACK and CORRUPTED bookkeeping for one space.
#[derive(Debug)]
pub struct AckState {
    received: RangeSet,
    /// Packets below this were received long ago and are pruned from
    /// `received`; a packet below it is treated as a duplicate.
    floor: u64,
    largest_received: Option<u64>,
    largest_received_at: Option<Instant>,
    ack_eliciting_unacked: u64,
    /// Ack-eliciting packets that may wait for the delayed-ACK timer.
    ack_eliciting_threshold: u64,
    /// How far below the largest received a missing packet may lie before
    /// the gap elicits an immediate ACK; 0: gaps never do.
    reordering_threshold: u64,
    /// The largest packet number our last ACK reported: gaps below it were
    /// reported already.
    largest_reported: Option<u64>,
    /// Anything (even non-eliciting) received since the last ACK we sent.
    unacked: bool,
    /// When our last ACK frame of this space went out.
    last_sent_at: Option<Instant>,
    deadline: Option<Instant>,
    immediate: bool,
    max_ack_delay: Duration,
    corrupted: Vec<PendingNotice>,
    /// Misbehave: name every gap as corrupted (`Config::lie_about_losses`).
    lie_about_gaps: bool,
}

impl AckState {
    /// `max_ack_delay` is ours; `Duration::ZERO` acknowledges at once
    /// (Initial and Handshake spaces, RFC 9000 §13.2.1).
    pub fn new(max_ack_delay: Duration) -> Self {
        Self {
            received: RangeSet::default(),
            floor: 0,
            largest_received: None,
            largest_received_at: None,
            ack_eliciting_unacked: 0,
            ack_eliciting_threshold: DEFAULT_ACK_ELICITING_THRESHOLD,
            reordering_threshold: DEFAULT_REORDERING_THRESHOLD,
            largest_reported: None,
            unacked: false,
            last_sent_at: None,
            deadline: None,
            immediate: false,
            max_ack_delay,
            corrupted: Vec::new(),
            lie_about_gaps: false,
        }
    }

    /// A receiver that names every gap in what it received as corrupted
    /// (`Config::lie_about_losses`): the attack the sender's corruption
    /// budget is for.
    pub fn lying_about_gaps(mut self, lie: bool) -> Self {
        self.lie_about_gaps = lie;
        self
    }

    /// Acknowledges as the peer asked in an ACK_FREQUENCY frame. A delayed
    /// ACK already pending keeps its deadline; the new delay applies from
    /// the next one.
    pub fn set_frequency(&mut self, threshold: u64, max_ack_delay: Duration, reordering: u64) {
        self.ack_eliciting_threshold = threshold;
        self.max_ack_delay = max_ack_delay;
        self.reordering_threshold = reordering;
        if self.ack_eliciting_unacked > threshold {
            self.immediate = true;
        }
    }

    /// IMMEDIATE_ACK: the peer wants an ACK now.
    pub fn request_immediate(&mut self) {
        self.immediate = true;
    }

    /// The largest packet number received intact, for packet-number decoding.
    pub fn largest_received(&self) -> Option<u64> {
        self.largest_received
    }

    /// Whether `packet_number` was already received (or is too old to tell).
    pub fn is_duplicate(&self, packet_number: u64) -> bool {
        packet_number < self.floor || self.received.contains(packet_number)
    }

    /// Below this packet number, nothing says which packets arrived: the
    /// tracker forgot them (`on_ack_acked`), received or given up.
    pub fn tracked_from(&self) -> u64 {
        self.floor
    }

    /// A packet was received and its frames processed.
    pub fn on_packet_received(&mut self, packet_number: u64, ack_eliciting: bool, now: Instant) {
        let previous = self.largest_received;
        if self.lie_about_gaps {
            let first_missing = self.largest_received.map_or(0, |l| l + 1);
            // A bounded lie per gap: this is a test adversary, not a flood.
            for missing in (first_missing..packet_number).take(MAX_PENDING_CORRUPTED) {
                self.on_corrupted(missing);
            }
        }
        self.received.insert_one(packet_number);
        while self.received.len() > MAX_TRACKED_RANGES {
            // The oldest run is given up: its packets, and the gap below
            // the next run, count as duplicates if they come again.
            let Some(oldest) = self.received.pop_min() else {
                break;
            };
            self.floor = self.floor.max(oldest.end);
        }
        if self.largest_received.is_none_or(|l| packet_number > l) {
            self.largest_received = Some(packet_number);
            self.largest_received_at = Some(now);
        }
        self.unacked = true;
        if !ack_eliciting {
            return;
        }
        self.ack_eliciting_unacked += 1;
        // RFC 9000 §13.2.1: acknowledge at once when a packet arrives out of
        // order (the sender's loss detection needs it) or every second one;
        // draft-ietf-quic-ack-frequency-13 §6 lets the peer move both limits.
        let out_of_order = match self.reordering_threshold {
            0 => false,
            // RFC 9000: anything but the next packet in line.
            1 => previous.map_or(packet_number != 0, |l| packet_number != l + 1),
            _ => {
                previous.is_some_and(|l| packet_number < l)
                    || self.unreported_gap_reaches(packet_number)
            }
        };
        if out_of_order
            || self.ack_eliciting_unacked > self.ack_eliciting_threshold
            || self.max_ack_delay.is_zero()
        {
            self.immediate = true;
        } else if self.deadline.is_none() {
            self.deadline = Some(now + self.max_ack_delay);
        }
    }

    /// Whether a packet missing since our last ACK lies at least the
    /// reordering threshold below `packet_number` (just received): the
    /// point where the sender's packet-threshold loss detection wants to
    /// hear of it (draft-ietf-quic-ack-frequency-13 §6.2).
    fn unreported_gap_reaches(&self, packet_number: u64) -> bool {
        let from = self
            .largest_reported
            .map_or(self.floor, |largest| (largest + 1).max(self.floor));
        let missing = self.first_missing_from(from);
        missing < packet_number && packet_number - missing >= self.reordering_threshold
    }

    /// A packet arrived with a verified header and a damaged payload.
    /// Returns false if it needs no notice (a duplicate, or already noted).
    pub fn on_corrupted(&mut self, packet_number: u64) -> bool {
        if self.is_duplicate(packet_number)
            || self
                .corrupted
                .iter()
                .any(|n| n.packet_number == packet_number)
        {
            return false;
        }
        if self.corrupted.len() >= MAX_PENDING_CORRUPTED {
            self.corrupted.remove(0);
        }
        self.corrupted.push(PendingNotice {
            packet_number,
            repeats_left: CORRUPTION_NOTICE_REPEATS,
        });
        // The sender is waiting to resend: tell it now.
        self.immediate = true;
        true
    }

    /// An ACK must go out now.
    pub fn ack_due(&self, now: Instant) -> bool {
        self.immediate || self.deadline.is_some_and(|d| d <= now)
    }

    /// Whether to piggyback an ACK on a packet sent anyway: ack-eliciting
    /// packets or corruption notices wait, or packets that elicit nothing
    /// (the peer's own ACKs) arrived and nothing was acknowledged for
    /// `interval` (a round trip). RFC 9000 §13.2.1 asks no ACK for
    /// ACK-only packets, but the peer prunes its ACK ranges only once it
    /// learns we saw them (§13.2.4); so a peer that only acknowledges hears
    /// of it once a round trip, not in every second data packet, where
    /// each ACK frame took 20–30 bytes of a 1350-byte datagram (1.8% of a
    /// bulk download's payload, `interop/results/2026-11-27-v1-header/`).
    pub fn worth_piggybacking(&self, now: Instant, interval: Duration) -> bool {
        self.ack_eliciting_unacked > 0
            || self.has_corruption_notices()
            || (self.unacked
                && self
                    .last_sent_at
                    .is_none_or(|sent| now.saturating_duration_since(sent) >= interval))
    }

    /// Corruption notices are waiting to be (re)sent.
    pub fn has_corruption_notices(&self) -> bool {
        self.corrupted.iter().any(|n| n.repeats_left > 0)
    }

    /// When the delayed-ACK timer fires.
    pub fn deadline(&self) -> Option<Instant> {
        if self.immediate {
            return self.largest_received_at;
        }
        self.deadline
    }

    /// Appends an ACK frame (an ACK_ECN frame with `ecn_counts`, RFC 9000
    /// §19.3.2; and, if `notices` and any are pending, a CORRUPTED frame)
    /// to `out`. Returns the largest packet number acked.
    pub fn write(
        &mut self,
        now: Instant,
        notices: bool,
        ecn_counts: Option<[u64; 3]>,
        out: &mut Vec<u8>,
    ) -> Option<u64> {
        let largest = self.largest_received;
        if largest.is_some() {
            let delay = self
                .largest_received_at
                .map_or(Duration::ZERO, |at| now.saturating_duration_since(at));
            encode_ack_ecn(
                &self.received,
                delay.as_micros() as u64,
                MAX_ACK_RANGES_SENT,
                ecn_counts,
                out,
            );
        }
        if notices && self.has_corruption_notices() {
            let mut names = RangeSet::default();
            for notice in self.corrupted.iter_mut().filter(|n| n.repeats_left > 0) {
                names.insert_one(notice.packet_number);
                notice.repeats_left -= 1;
            }
            encode_corrupted(&names, MAX_ACK_RANGES_SENT, out);
            self.corrupted.retain(|n| n.repeats_left > 0);
        }
        self.ack_eliciting_unacked = 0;
        self.unacked = false;
        self.last_sent_at = Some(now);
        self.deadline = None;
        self.immediate = false;
        self.largest_reported = largest;
        largest
    }

    /// The peer acknowledged a packet of ours that acked up to `largest`:
    /// older ranges need not be reported again (RFC 9000 §13.2.4). Only the
    /// received prefix is pruned, though: a packet still missing below
    /// `largest` may be late rather than lost, and must be recognised as new
    /// when it comes (RFC 9000 §13.2.3 lets a receiver prune, not oblige it).
    /// A gap older than [`REORDERING_TRACKED_PACKETS`] is given up.
    pub fn on_ack_acked(&mut self, largest: u64) {
        let first_missing = self.first_missing_from(self.floor);
        let floor = largest
            .min(first_missing)
            .max(largest.saturating_sub(REORDERING_TRACKED_PACKETS));
        if floor > self.floor {
            self.floor = floor;
            self.received.remove_below(floor);
        }
    }

    /// The smallest packet number at or above `from` not yet received.
    fn first_missing_from(&self, from: u64) -> u64 {
        let mut next = from;
        for range in self.received.iter() {
            if range.start > next {
                break;
            }
            next = next.max(range.end);
        }
        next
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{parse_frames, Frame};

    fn frames(buf: &[u8]) -> Vec<String> {
        parse_frames(buf)
            .map(|f| format!("{:?}", f.expect("valid frame")))
            .collect()
    }

    #[test]
    fn every_second_ack_eliciting_packet_is_acked_at_once() {
        let t0 = Instant::now();
        let mut acks = AckState::new(Duration::from_millis(25));
        acks.on_packet_received(0, true, t0);
        assert!(!acks.ack_due(t0));
        assert_eq!(acks.deadline(), Some(t0 + Duration::from_millis(25)));
        acks.on_packet_received(1, true, t0);
        assert!(acks.ack_due(t0));
    }

    #[test]
    fn acks_of_acks_ride_along_once_a_round_trip() {
        let t0 = Instant::now();
        let rtt = Duration::from_millis(20);
        let mut acks = AckState::new(Duration::from_millis(25));
        // The peer's first ACK-only packet: acknowledged on our next data
        // packet, so that it may prune what it reports.
        acks.on_packet_received(0, false, t0);
        assert!(!acks.ack_due(t0));
        assert!(acks.worth_piggybacking(t0, rtt));
        acks.write(t0, false, None, &mut Vec::new());
        // More of them within the round trip: nothing rides along.
        let t1 = t0 + Duration::from_millis(5);
        acks.on_packet_received(1, false, t1);
        acks.on_packet_received(2, false, t1);
        assert!(!acks.worth_piggybacking(t1, rtt));
        // A round trip after our last ACK, they are acknowledged again.
        assert!(acks.worth_piggybacking(t0 + rtt, rtt));
        // An ack-eliciting packet always is.
        acks.on_packet_received(3, true, t1);
        assert!(acks.worth_piggybacking(t1, rtt));
        acks.write(t1, false, None, &mut Vec::new());
        // So is a pending corruption notice.
        assert!(!acks.worth_piggybacking(t1, rtt));
        acks.on_corrupted(5);
        assert!(acks.worth_piggybacking(t1, rtt));
    }

    #[test]
    fn a_peer_that_leaves_gaps_and_never_acks_our_acks_is_tracked_within_the_cap() {
        let t0 = Instant::now();
        let mut acks = AckState::new(Duration::from_millis(25));
        let sent = 4 * MAX_TRACKED_RANGES as u64;
        for n in 0..sent {
            acks.on_packet_received(2 * n, false, t0);
            assert!(acks.received.len() <= MAX_TRACKED_RANGES);
        }
        // The newest runs are still told apart; the oldest were given up.
        assert!(!acks.is_duplicate(2 * sent - 1));
        assert!(acks.is_duplicate(2 * sent - 2));
        assert!(acks.is_duplicate(1));
        let mut out = Vec::new();
        assert_eq!(acks.write(t0, false, None, &mut out), Some(2 * sent - 2));
    }

    #[test]
    fn packets_that_elicit_nothing_never_make_an_ack_due_even_across_gaps() {
        // RFC 9000 §13.2.1: nothing is sent in answer to a packet that
        // elicits no ACK, gaps before it or not (two ACK-only senders would
        // otherwise answer each other forever).
        let t0 = Instant::now();
        let mut acks = AckState::new(Duration::from_millis(25));
        for pn in [0, 2, 5, 9] {
            acks.on_packet_received(pn, false, t0);
            assert!(!acks.ack_due(t0), "packet {pn}");
            assert_eq!(acks.deadline(), None, "packet {pn}");
        }
        assert!(!acks.ack_due(t0 + Duration::from_secs(10)));
    }

    #[test]
    fn pruning_keeps_the_largest_packet_number_received() {
        // RFC 9000 §13.2.3: ranges may go once acknowledged, the largest
        // number processed never does: it decodes the next packet numbers.
        let t0 = Instant::now();
        let mut acks = AckState::new(Duration::ZERO);
        for pn in 0..10 {
            acks.on_packet_received(pn, true, t0);
        }
        acks.on_ack_acked(9);
        acks.on_ack_acked(REORDERING_TRACKED_PACKETS + 50);
        assert_eq!(acks.largest_received(), Some(9));
        assert!(acks.is_duplicate(9));
    }

    #[test]
    fn a_gap_is_acked_at_once() {
        let t0 = Instant::now();
        let mut acks = AckState::new(Duration::from_millis(25));
        acks.on_packet_received(0, true, t0);
        let mut out = Vec::new();
        acks.write(t0, false, None, &mut out);
        acks.on_packet_received(2, true, t0);
        assert!(acks.ack_due(t0));
    }

    #[test]
    fn an_ack_frequency_request_moves_both_thresholds() {
        let t0 = Instant::now();
        let mut acks = AckState::new(Duration::from_millis(25));
        acks.set_frequency(9, Duration::from_millis(2), 3);
        for pn in 0..9 {
            acks.on_packet_received(pn, true, t0);
            assert!(!acks.ack_due(t0), "packet {pn}");
        }
        assert_eq!(acks.deadline(), Some(t0 + Duration::from_millis(2)));
        acks.on_packet_received(9, true, t0);
        assert!(acks.ack_due(t0), "the tenth is acked at once");
        acks.write(t0, false, None, &mut Vec::new());

        // 10 missing: 11 and 12 wait, 13 is three past the gap.
        for pn in 11..=12 {
            acks.on_packet_received(pn, true, t0);
            assert!(!acks.ack_due(t0), "packet {pn}");
        }
        acks.on_packet_received(13, true, t0);
        assert!(acks.ack_due(t0), "the gap reached the reordering threshold");
        acks.write(t0, false, None, &mut Vec::new());
        // The gap is reported: later packets do not re-trigger it, but the
        // late packet itself is acked at once.
        acks.on_packet_received(14, true, t0);
        assert!(!acks.ack_due(t0));
        acks.on_packet_received(10, true, t0);
        assert!(acks.ack_due(t0));
    }

    #[test]
    fn reordering_threshold_zero_ignores_order_and_immediate_ack_overrides() {
        let t0 = Instant::now();
        let mut acks = AckState::new(Duration::from_millis(25));
        acks.set_frequency(9, Duration::from_millis(5), 0);
        acks.on_packet_received(5, true, t0);
        acks.on_packet_received(2, true, t0);
        assert!(!acks.ack_due(t0));
        acks.request_immediate();
        assert!(acks.ack_due(t0));
    }

    #[test]
    fn corruption_notice_repeats_three_times_then_stops() {
        let t0 = Instant::now();
        let mut acks = AckState::new(Duration::from_millis(25));
        acks.on_packet_received(0, true, t0);
        assert!(acks.on_corrupted(1));
        assert!(!acks.on_corrupted(1), "already noted");
        assert!(!acks.on_corrupted(0), "received intact: not corrupted");
        assert!(acks.ack_due(t0));
        for _ in 0..CORRUPTION_NOTICE_REPEATS {
            let mut out = Vec::new();
            acks.write(t0, true, None, &mut out);
            let written = frames(&out);
            assert_eq!(written.len(), 2, "{written:?}");
            assert!(
                matches!(parse_frames(&out).nth(1), Some(Ok(Frame::Corrupted(r))) if r.largest() == 1)
            );
        }
        let mut out = Vec::new();
        acks.write(t0, true, None, &mut out);
        assert_eq!(frames(&out).len(), 1, "only the ACK after three repeats");
    }

    #[test]
    fn pruned_ranges_count_as_duplicates() {
        let t0 = Instant::now();
        let mut acks = AckState::new(Duration::ZERO);
        for pn in 0..10 {
            acks.on_packet_received(pn, true, t0);
        }
        acks.on_ack_acked(8);
        assert!(acks.is_duplicate(3));
        assert!(acks.is_duplicate(9));
        assert!(!acks.is_duplicate(10));
    }

    #[test]
    fn a_late_packet_below_an_acknowledged_ack_is_still_new() {
        // 0..=9 but 4 arrive (4 is reordered); our ACK up to 9 is acked.
        let t0 = Instant::now();
        let mut acks = AckState::new(Duration::ZERO);
        for pn in (0..10).filter(|&pn| pn != 4) {
            acks.on_packet_received(pn, true, t0);
        }
        acks.on_ack_acked(9);
        assert!(acks.is_duplicate(3), "the received prefix is pruned");
        assert!(!acks.is_duplicate(4), "the late packet is new");
        assert!(acks.is_duplicate(7));
        acks.on_packet_received(4, true, t0);
        acks.on_ack_acked(9);
        assert!(acks.is_duplicate(4));
        // A gap older than the tracked span is given up.
        acks.on_packet_received(REORDERING_TRACKED_PACKETS + 20, true, t0);
        acks.on_ack_acked(REORDERING_TRACKED_PACKETS + 20);
        assert!(acks.is_duplicate(15));
    }
}
