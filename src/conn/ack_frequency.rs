//! ACK frequency (draft-ietf-quic-ack-frequency-13), the data sender's half:
//! what to ask the peer for, and the ACK_FREQUENCY frames that ask it. The
//! receiver's half (honouring a request) is `AckState::set_frequency`.
//!
//! Why: on a fast path every second packet costs the receiver a sent ACK
//! and the sender a received one, a system call and a packet open each. On
//! loopback at 3–4 Gb/s that is some 150 000 ACKs a second.
//!
//! Decisions:
//! - **When.** Only on a fast path: a window of at least
//!   [`MIN_WINDOW_PACKETS`] (so that one ACK per [`DECIMATED_THRESHOLD`]+1
//!   packets still gives 8 or more ACKs per window, the draft's §8 concern
//!   for the ACK clock) *and* at least [`FAST_PATH_PACKETS_PER_SECOND`]
//!   packets per smoothed RTT. The papers' links (at most 100 Mb/s, under
//!   10 000 packets a second) never qualify, so every experiment keeps
//!   RFC 9000's ACK every second packet, and with it every per-ACK signal the
//!   loss-differentiating controllers read. Leaving takes half the rate, so
//!   a path at the boundary does not flap.
//! - **What.** Ack-eliciting threshold 9 (an ACK every tenth packet, as
//!   Chromium's ACK decimation and Linux's GRO-sized ACKs roughly do), and
//!   on wider windows the [`WIDE_THRESHOLDS`], each once the window still
//!   gives 16 ACKs at it: 31 from 512 packets, 63 from 1024 (loopback:
//!   every ACK costs both ends a system call and a packet to seal or open;
//!   one in 32 packets moved a GiB with 3% less CPU and 3% faster than one
//!   in 10, twelve interleaved pairs in
//!   `interop/results/2026-11-28-lone-client`, and one in 64 another 1–3%,
//!   `interop/results/2026-12-01-caller-drives`); a
//!   max_ack_delay of a quarter of the smoothed RTT, never below the peer's
//!   min_ack_delay and never above its own max_ack_delay (so the PTO, which
//!   uses the transport parameter, stays an upper bound and needs no
//!   change); the reordering threshold equal to our packet threshold, so
//!   that a gap is reported exactly when packet-threshold loss detection
//!   could act on it, not earlier.
//! - **Loss of a frame.** Only the latest request matters: a lost frame is
//!   sent again, under a new sequence number, only if nothing newer left.
//! - **Probes** carry IMMEDIATE_ACK instead of PING once the peer takes
//!   these frames, so a probe is answered without waiting for the timer.

use std::time::Duration;

use super::ack::{DEFAULT_ACK_ELICITING_THRESHOLD, DEFAULT_REORDERING_THRESHOLD};
use crate::wire::Frame;

/// What we advertise as min_ack_delay: the timer granularity of RFC 9002
/// (kGranularity); the driver's timers are no finer.
pub const MIN_ACK_DELAY: Duration = Duration::from_millis(1);
/// The ack-eliciting threshold asked for on a fast path: an ACK every tenth
/// ack-eliciting packet.
pub const DECIMATED_THRESHOLD: u64 = 9;
/// The least window, in packets, in which fewer ACKs are asked for.
pub const MIN_WINDOW_PACKETS: u64 = 80;
/// The ack-eliciting threshold asked for on a fast path whose window
/// holds 16 ACKs at it (512 packets): an ACK every 32nd packet.
pub const WIDE_THRESHOLD: u64 = 31;
/// Thresholds for ever wider windows, each asked for once the window holds
/// 16 ACKs' worth of packets at it, and kept down to half that (the same
/// half-way rule as the fast path's): one ACK in 32 packets from 512, one
/// in 64 from 1024.
pub const WIDE_THRESHOLDS: [u64; 2] = [WIDE_THRESHOLD, 63];

/// The widest of [`WIDE_THRESHOLDS`] a window of `packets` takes, with
/// `current` the threshold in force (`None`: none of them).
fn wide_threshold(packets: u64, current: u64) -> Option<u64> {
    WIDE_THRESHOLDS.iter().copied().rev().find(|&threshold| {
        let window = ACKS_PER_WIDE_WINDOW * (threshold + 1);
        packets
            >= if current >= threshold {
                window / 2
            } else {
                window
            }
    })
}

/// ACKs per window on a wide window.
const ACKS_PER_WIDE_WINDOW: u64 = 16;

/// The least sending rate (window per smoothed RTT), in packets a second,
/// at which fewer ACKs are asked for.
pub const FAST_PATH_PACKETS_PER_SECOND: u64 = 25_000;
/// The largest max_ack_delay a peer may ask of us: RFC 9000 §18.2's limit
/// on the transport parameter, so no request can push a timer out of range.
pub const MAX_REQUESTED_ACK_DELAY: Duration =
    Duration::from_millis(crate::wire::MAX_ACK_DELAY_LIMIT_MS - 1);

/// How often to be acknowledged: the content of one ACK_FREQUENCY frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckRequest {
    /// Ack-eliciting packets that may go unacknowledged.
    pub threshold: u64,
    /// The longest an ACK may be delayed.
    pub max_ack_delay: Duration,
    /// How far out of order before an immediate ACK; 0: never.
    pub reordering: u64,
}

impl AckRequest {
    /// RFC 9000's behaviour under the peer's own max_ack_delay.
    fn rfc9000(max_ack_delay: Duration) -> Self {
        Self {
            threshold: DEFAULT_ACK_ELICITING_THRESHOLD,
            max_ack_delay,
            reordering: DEFAULT_REORDERING_THRESHOLD,
        }
    }
}

/// What the path looks like to the sender when it decides.
#[derive(Clone, Copy, Debug)]
pub struct PathView {
    /// Congestion window, bytes.
    pub window: u64,
    /// Bytes per packet.
    pub mss: u64,
    /// Smoothed RTT.
    pub srtt: Duration,
    /// The loss detector's packet threshold.
    pub packet_threshold: u64,
}

/// The sender's ACK-frequency state for one connection.
#[derive(Debug)]
pub struct AckFrequency {
    /// Our min_ack_delay when we take part (`Config::ack_frequency`).
    own_min_ack_delay: Option<Duration>,
    /// The peer's min_ack_delay, once its transport parameters say it
    /// takes ACK_FREQUENCY frames.
    peer_min_ack_delay: Option<Duration>,
    /// The peer's max_ack_delay transport parameter.
    peer_max_ack_delay: Duration,
    /// The request in force (sent or to be sent).
    current: AckRequest,
    /// Whether `current` still has to be sent.
    pending: bool,
    /// The sequence number of the latest frame sent.
    latest_sent: Option<u64>,
    next_sequence: u64,
    /// The largest sequence number received from the peer.
    peer_sequence: Option<u64>,
}

impl AckFrequency {
    /// `enabled`: advertise min_ack_delay, honour the peer's frames and
    /// send our own. `max_ack_delay` is ours, which min_ack_delay may not
    /// exceed.
    pub fn new(enabled: bool, max_ack_delay: Duration) -> Self {
        Self {
            // The transport parameter carries whole milliseconds.
            own_min_ack_delay: enabled.then(|| {
                MIN_ACK_DELAY.min(Duration::from_millis(max_ack_delay.as_millis() as u64))
            }),
            peer_min_ack_delay: None,
            peer_max_ack_delay: super::DEFAULT_MAX_ACK_DELAY,
            current: AckRequest::rfc9000(super::DEFAULT_MAX_ACK_DELAY),
            pending: false,
            latest_sent: None,
            next_sequence: 0,
            peer_sequence: None,
        }
    }

    /// Whether we advertise min_ack_delay and so accept the peer's frames.
    pub fn enabled(&self) -> bool {
        self.own_min_ack_delay.is_some()
    }

    /// The min_ack_delay transport parameter we send, µs.
    pub fn own_min_ack_delay_micros(&self) -> Option<u64> {
        self.own_min_ack_delay.map(|delay| delay.as_micros() as u64)
    }

    /// The peer's transport parameters arrived.
    pub fn on_peer_params(&mut self, min_ack_delay_micros: Option<u64>, max_ack_delay: Duration) {
        self.peer_max_ack_delay = max_ack_delay;
        self.current = AckRequest::rfc9000(max_ack_delay);
        self.peer_min_ack_delay = min_ack_delay_micros
            .filter(|_| self.enabled())
            .map(Duration::from_micros);
    }

    /// Whether we may send ACK_FREQUENCY and IMMEDIATE_ACK frames.
    pub fn peer_takes_frames(&self) -> bool {
        self.peer_min_ack_delay.is_some()
    }

    /// The request in force.
    #[cfg(test)]
    pub fn current(&self) -> AckRequest {
        self.current
    }

    /// Decides what to ask for on this path; a change is sent with the
    /// next packet.
    pub fn update(&mut self, path: PathView) {
        let Some(peer_min) = self.peer_min_ack_delay else {
            return;
        };
        let decimating = self.current.threshold > DEFAULT_ACK_ELICITING_THRESHOLD;
        let packets = path.window / path.mss.max(1);
        let srtt = path.srtt.max(Duration::from_micros(1));
        let per_second = (packets as f64 / srtt.as_secs_f64()) as u64;
        // Half the rate to leave again: no flapping at the boundary.
        let (least_window, least_rate) = if decimating {
            (MIN_WINDOW_PACKETS / 2, FAST_PATH_PACKETS_PER_SECOND / 2)
        } else {
            (MIN_WINDOW_PACKETS, FAST_PATH_PACKETS_PER_SECOND)
        };
        let fast = packets >= least_window && per_second >= least_rate;
        let wide = wide_threshold(packets, self.current.threshold);
        let wanted = if fast {
            AckRequest {
                threshold: wide.unwrap_or(DECIMATED_THRESHOLD),
                max_ack_delay: (srtt / 4).clamp(peer_min, self.peer_max_ack_delay.max(peer_min)),
                reordering: path.packet_threshold,
            }
        } else {
            AckRequest::rfc9000(self.peer_max_ack_delay)
        };
        if wanted.threshold != self.current.threshold
            || wanted.reordering != self.current.reordering
            || far_apart(wanted.max_ack_delay, self.current.max_ack_delay)
        {
            self.current = wanted;
            self.pending = true;
        }
    }

    /// The ACK_FREQUENCY frame to send now, with its sequence number, if
    /// one is due and fits in `room` bytes (else it waits for the next
    /// packet).
    pub fn poll_frame(&mut self, room: usize) -> Option<(u64, Frame<'static>)> {
        if !self.pending || !self.peer_takes_frames() {
            return None;
        }
        let sequence = self.next_sequence;
        let request = self.current;
        let frame = Frame::AckFrequency {
            sequence,
            ack_eliciting_threshold: request.threshold,
            request_max_ack_delay_micros: request.max_ack_delay.as_micros() as u64,
            reordering_threshold: request.reordering,
        };
        if frame.encoded_len() > room {
            return None;
        }
        self.pending = false;
        self.next_sequence += 1;
        self.latest_sent = Some(sequence);
        Some((sequence, frame))
    }

    /// Whether a frame is waiting to be sent.
    pub fn has_pending_frame(&self) -> bool {
        self.pending && self.peer_takes_frames()
    }

    /// A packet carrying our frame `sequence` was lost: send the request in
    /// force again if nothing newer left since.
    pub fn on_frame_lost(&mut self, sequence: u64) {
        if self.latest_sent == Some(sequence) {
            self.pending = true;
        }
    }

    /// The peer's ACK_FREQUENCY frame: the request to honour, or `None` for
    /// a frame older than one already applied (§4: ignore it). Errors are
    /// the draft's PROTOCOL_VIOLATIONs, as text.
    pub fn on_peer_frame(
        &mut self,
        sequence: u64,
        threshold: u64,
        requested_delay_micros: u64,
        reordering: u64,
    ) -> Result<Option<AckRequest>, &'static str> {
        let Some(own_min) = self.own_min_ack_delay else {
            return Err("ACK_FREQUENCY frame without our min_ack_delay");
        };
        if requested_delay_micros < own_min.as_micros() as u64 {
            return Err("ACK_FREQUENCY asks for less than our min_ack_delay");
        }
        if self.peer_sequence.is_some_and(|seen| sequence <= seen) {
            return Ok(None);
        }
        self.peer_sequence = Some(sequence);
        Ok(Some(AckRequest {
            threshold,
            max_ack_delay: Duration::from_micros(requested_delay_micros)
                .min(MAX_REQUESTED_ACK_DELAY),
            reordering,
        }))
    }
}

/// Delays more than a factor of two apart: worth a new frame.
fn far_apart(a: Duration, b: Duration) -> bool {
    a > b * 2 || b > a * 2
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The least window, in packets, in which [`WIDE_THRESHOLD`] is asked
    /// for.
    const WIDE_WINDOW_PACKETS: u64 = ACKS_PER_WIDE_WINDOW * (WIDE_THRESHOLD + 1);

    fn path(window_packets: u64, srtt_ms: f64) -> PathView {
        PathView {
            window: window_packets * 1350,
            mss: 1350,
            srtt: Duration::from_secs_f64(srtt_ms / 1000.0),
            packet_threshold: 3,
        }
    }

    fn negotiated() -> AckFrequency {
        let mut frequency = AckFrequency::new(true, Duration::from_millis(25));
        frequency.on_peer_params(Some(1000), Duration::from_millis(25));
        frequency
    }

    #[test]
    fn a_fast_path_asks_for_an_ack_every_tenth_packet() {
        let mut frequency = negotiated();
        // A fast LAN: 400 packets in 1.4 ms.
        frequency.update(path(400, 1.4));
        let (sequence, frame) = frequency.poll_frame(1200).expect("a request");
        assert_eq!(sequence, 0);
        assert_eq!(
            frame,
            Frame::AckFrequency {
                sequence: 0,
                ack_eliciting_threshold: DECIMATED_THRESHOLD,
                // A quarter of 1.4 ms is below the peer's 1 ms minimum.
                request_max_ack_delay_micros: 1000,
                reordering_threshold: 3,
            }
        );
        assert!(frequency.poll_frame(1200).is_none(), "sent once");
        // Nothing changed: nothing more to send.
        frequency.update(path(420, 1.5));
        assert!(!frequency.has_pending_frame());
        // A frame that does not fit waits for a packet with room.
        frequency.update(path(100, 10.0));
        assert!(frequency.poll_frame(3).is_none());
        assert!(frequency.poll_frame(1200).is_some());
    }

    #[test]
    fn a_wide_window_asks_for_an_ack_every_32nd_packet_and_keeps_16_a_window() {
        let mut frequency = negotiated();
        // A fast path with 600 packets in flight in 0.2 ms.
        frequency.update(path(600, 0.2));
        assert_eq!(frequency.current().threshold, WIDE_THRESHOLD);
        // Halfway down the window, it holds; below half, every tenth again.
        frequency.poll_frame(1200).unwrap();
        frequency.update(path(WIDE_WINDOW_PACKETS / 2, 0.2));
        assert!(!frequency.has_pending_frame());
        frequency.update(path(WIDE_WINDOW_PACKETS / 2 - 1, 0.2));
        assert_eq!(frequency.current().threshold, DECIMATED_THRESHOLD);
        // And up only from the whole window.
        frequency.update(path(WIDE_WINDOW_PACKETS - 1, 0.2));
        assert_eq!(frequency.current().threshold, DECIMATED_THRESHOLD);
        frequency.update(path(WIDE_WINDOW_PACKETS, 0.2));
        assert_eq!(frequency.current().threshold, WIDE_THRESHOLD);
    }

    #[test]
    fn a_wider_window_asks_for_an_ack_every_64th_packet_with_the_same_halfway_rule() {
        let mut frequency = negotiated();
        // Loopback: 7000 packets in 1.4 ms.
        frequency.update(path(7000, 1.4));
        assert_eq!(frequency.current().threshold, 63);
        // 16 ACKs a window at 64 needs 1024 packets; it holds down to 512,
        // where one in 32 takes over, and comes back only at 1024.
        frequency.update(path(512, 1.4));
        assert_eq!(frequency.current().threshold, 63);
        frequency.update(path(511, 1.4));
        assert_eq!(frequency.current().threshold, WIDE_THRESHOLD);
        frequency.update(path(1023, 1.4));
        assert_eq!(frequency.current().threshold, WIDE_THRESHOLD);
        frequency.update(path(1024, 1.4));
        assert_eq!(frequency.current().threshold, 63);
    }

    #[test]
    fn the_papers_links_keep_rfc_9000_acks() {
        let mut frequency = negotiated();
        // 50 Mb/s, 100 ms: a 420-packet window, 4200 packets a second.
        frequency.update(path(420, 100.0));
        // 2 Mb/s, short RTT: 20 packets.
        frequency.update(path(20, 1.0));
        assert!(frequency.poll_frame(1200).is_none());
        assert_eq!(frequency.current().threshold, 1);
    }

    #[test]
    fn leaving_the_fast_path_takes_half_the_rate() {
        let mut frequency = negotiated();
        frequency.update(path(100, 2.0)); // 50 000 packets a second
        assert_eq!(frequency.current().threshold, DECIMATED_THRESHOLD);
        frequency.update(path(100, 5.0)); // 20 000: still decimating
        assert_eq!(frequency.current().threshold, DECIMATED_THRESHOLD);
        frequency.update(path(100, 10.0)); // 10 000: back to RFC 9000
        assert_eq!(
            frequency.current(),
            AckRequest::rfc9000(Duration::from_millis(25))
        );
        assert!(frequency.has_pending_frame());
    }

    #[test]
    fn the_delay_asked_for_stays_within_the_peers_bounds() {
        let mut frequency = negotiated();
        frequency.update(path(5000, 8.0));
        assert_eq!(frequency.current().max_ack_delay, Duration::from_millis(2));
        // A long fat path: a quarter RTT would pass the peer's 25 ms.
        frequency.update(path(100_000, 200.0));
        assert_eq!(frequency.current().max_ack_delay, Duration::from_millis(25));
    }

    #[test]
    fn only_the_latest_request_is_sent_again() {
        let mut frequency = negotiated();
        frequency.update(path(7000, 1.4));
        let (first, _) = frequency.poll_frame(1200).unwrap();
        frequency.update(path(100, 10.0));
        let (second, _) = frequency.poll_frame(1200).unwrap();
        frequency.on_frame_lost(first);
        assert!(!frequency.has_pending_frame(), "superseded");
        frequency.on_frame_lost(second);
        let (third, frame) = frequency.poll_frame(1200).expect("resent");
        assert_eq!(third, 2, "under a new sequence number");
        assert!(matches!(
            frame,
            Frame::AckFrequency {
                ack_eliciting_threshold: 1,
                ..
            }
        ));
    }

    #[test]
    fn nothing_is_sent_to_a_peer_without_min_ack_delay() {
        let mut frequency = AckFrequency::new(true, Duration::from_millis(25));
        frequency.on_peer_params(None, Duration::from_millis(25));
        frequency.update(path(7000, 1.4));
        assert!(frequency.poll_frame(1200).is_none());
        assert!(!frequency.peer_takes_frames());
        // Nor when we do not take part ourselves.
        let mut frequency = AckFrequency::new(false, Duration::from_millis(25));
        frequency.on_peer_params(Some(1000), Duration::from_millis(25));
        frequency.update(path(7000, 1.4));
        assert!(frequency.poll_frame(1200).is_none());
    }

    #[test]
    fn peer_frames_are_ordered_and_checked() {
        let mut frequency = negotiated();
        let request = frequency.on_peer_frame(4, 9, 2000, 3).unwrap().unwrap();
        assert_eq!(request.threshold, 9);
        assert_eq!(request.max_ack_delay, Duration::from_millis(2));
        assert_eq!(frequency.on_peer_frame(4, 1, 2000, 1), Ok(None), "a repeat");
        assert_eq!(
            frequency.on_peer_frame(3, 1, 2000, 1),
            Ok(None),
            "an older one"
        );
        assert!(
            frequency.on_peer_frame(5, 1, 999, 1).is_err(),
            "below min_ack_delay"
        );
        let huge = frequency
            .on_peer_frame(6, 1, u64::MAX >> 2, 1)
            .unwrap()
            .unwrap();
        assert_eq!(huge.max_ack_delay, MAX_REQUESTED_ACK_DELAY, "capped");
        let mut refusing = AckFrequency::new(false, Duration::from_millis(25));
        assert!(refusing.on_peer_frame(0, 9, 2000, 3).is_err());
    }
}
