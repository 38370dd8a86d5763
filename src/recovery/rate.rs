//! Delivery-rate sampling (draft-cheng-iccrg-delivery-rate-estimation, as
//! draft-ietf-ccwg-bbr §4.1 restates it): every packet in flight remembers
//! how much had been delivered when it left, and the ACK of the most recently
//! sent packet among those it acknowledges yields a rate sample — bytes
//! delivered since that packet left over the longer of its send and ACK
//! intervals. Any controller reads the sample from `AckEvent::rate`.
//!
//! Two sift rules on top of the draft:
//! - a packet named in a CORRUPTED frame crossed the path, so it counts as
//!   delivered (C.delivered grows by its size when the notice arrives) and
//!   never as lost: a corrupting link is not a slower link;
//! - the connection marks an application-limited bubble (C.app_limited) when
//!   its send queue runs dry with window to spare (`on_send_queue_empty`),
//!   the draft's CheckIfApplicationLimited at the one point where sift's
//!   sender learns it has nothing more to send.

use std::time::{Duration, Instant};

use sift_cc::{LostPacket, PacketsLost, RateSample};

use super::{Recovery, SentPacket};

/// What the sender knew when a packet left (the per-packet "P" state of the
/// draft, §3.2).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeliverySnapshot {
    /// C.delivered when the packet was sent (P.delivered).
    pub delivered: u64,
    /// C.delivered_time when the packet was sent (P.delivered_time).
    pub delivered_time: Option<Instant>,
    /// C.first_send_time when the packet was sent (P.first_send_time).
    pub first_send_time: Option<Instant>,
    /// C.lost when the packet was sent (P.lost).
    pub lost: u64,
    /// Bytes in flight just after it was sent, itself included
    /// (P.tx_in_flight).
    pub tx_in_flight: u64,
    /// The connection was application-limited when it was sent
    /// (P.is_app_limited).
    pub is_app_limited: bool,
}

/// The connection-wide ("C") state of the draft.
#[derive(Clone, Debug, Default)]
pub struct DeliveryRateSampler {
    /// C.delivered: bytes acknowledged or reported corrupted.
    delivered: u64,
    /// C.delivered_time: when `delivered` last grew.
    delivered_time: Option<Instant>,
    /// C.first_send_time: the send time of the packet most recently marked
    /// delivered (or, after idle, of the first packet sent).
    first_send_time: Option<Instant>,
    /// C.lost: bytes declared lost.
    lost: u64,
    /// C.app_limited: the `delivered` value that ends the current
    /// application-limited bubble; 0 when not application-limited.
    app_limited_until: u64,
}

impl DeliveryRateSampler {
    /// Total bytes delivered (C.delivered).
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// Total bytes declared lost (C.lost).
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// OnPacketSent (draft §3.2): the snapshot to keep with a packet of
    /// `size` bytes sent at `now` with `in_flight_before` bytes already in
    /// flight.
    pub fn on_packet_sent(
        &mut self,
        now: Instant,
        in_flight_before: u64,
        size: u64,
    ) -> DeliverySnapshot {
        if in_flight_before == 0 {
            // Nothing in flight: the sampling interval starts now, not at
            // the last ACK before an idle stretch.
            self.first_send_time = Some(now);
            self.delivered_time = Some(now);
        }
        DeliverySnapshot {
            delivered: self.delivered,
            delivered_time: self.delivered_time.or(Some(now)),
            first_send_time: self.first_send_time.or(Some(now)),
            lost: self.lost,
            tx_in_flight: in_flight_before + size,
            is_app_limited: self.app_limited_until != 0,
        }
    }

    /// UpdateRateSample for every packet of one ACK, then GenerateRateSample
    /// (draft §3.3): `acked` are the newly acknowledged in-flight packets,
    /// `min_rtt` the connection's minimum RTT. `None` if `acked` is empty.
    pub fn on_ack<'a, F: 'a>(
        &mut self,
        acked: impl IntoIterator<Item = &'a SentPacket<F>>,
        now: Instant,
        min_rtt: Duration,
    ) -> Option<RateSample> {
        let mut newest: Option<&SentPacket<F>> = None;
        for packet in acked {
            self.delivered += packet.size;
            self.delivered_time = Some(now);
            // IsNewestPacket: the latest send time, the larger packet number
            // on a tie.
            if newest.is_none_or(|n| {
                (packet.time_sent, packet.packet_number) > (n.time_sent, n.packet_number)
            }) {
                newest = Some(packet);
            }
        }
        let newest = newest?;
        self.first_send_time = Some(newest.time_sent);
        // The bubble is over once the data sent during it is delivered.
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        let snapshot = newest.delivery;
        let send_elapsed = newest
            .time_sent
            .saturating_duration_since(snapshot.first_send_time.unwrap_or(newest.time_sent));
        let ack_elapsed =
            now.saturating_duration_since(snapshot.delivered_time.unwrap_or(newest.time_sent));
        let interval = send_elapsed.max(ack_elapsed);
        let delivered = self.delivered - snapshot.delivered;
        // An interval shorter than the minimum RTT over-estimates the rate
        // (draft §3.3): report the volumes, not a rate.
        let delivery_rate = if interval < min_rtt || interval.is_zero() {
            0.0
        } else {
            delivered as f64 / interval.as_secs_f64()
        };
        Some(RateSample {
            delivery_rate,
            interval,
            delivered,
            prior_delivered: snapshot.delivered,
            delivered_total: self.delivered,
            lost_total: self.lost,
            lost: self.lost - snapshot.lost,
            tx_in_flight: snapshot.tx_in_flight,
            is_app_limited: snapshot.is_app_limited,
        })
    }

    /// A packet in flight was declared lost.
    pub fn on_lost(&mut self, size: u64) {
        self.lost += size;
    }

    /// A packet in flight was named in a CORRUPTED frame: it reached the
    /// receiver, so it is delivered for the rate model.
    pub fn on_corrupted(&mut self, size: u64, now: Instant) {
        self.delivered += size;
        self.delivered_time = Some(now);
    }

    /// MarkConnectionAppLimited (draft §3.4) with `bytes_in_flight` in flight.
    pub fn mark_app_limited(&mut self, bytes_in_flight: u64) {
        self.app_limited_until = (self.delivered + bytes_in_flight).max(1);
    }
}

impl<F> Recovery<F> {
    /// The connection's send queue ran dry: if the window has room, the
    /// sender is application-limited until what is in flight is delivered
    /// (CheckIfApplicationLimited, draft §3.4).
    pub fn on_send_queue_empty(&mut self) {
        if self.bytes_in_flight < self.cc.window() {
            self.rate.mark_app_limited(self.bytes_in_flight);
        }
    }

    /// Counts newly lost packets as lost for the rate model and reports them
    /// to the controller (every declaration, not once per recovery period).
    pub(super) fn report_lost(&mut self, lost: &[SentPacket<F>], now: Instant) {
        let packets: Vec<LostPacket> = lost
            .iter()
            .filter(|p| p.in_flight && !p.pmtu_probe)
            .map(|p| {
                self.rate.on_lost(p.size);
                LostPacket {
                    packet_number: p.packet_number,
                    size: p.size,
                    delivered: p.delivery.delivered,
                    lost: p.delivery.lost,
                    tx_in_flight: p.delivery.tx_in_flight,
                    is_app_limited: p.delivery.is_app_limited,
                }
            })
            .collect();
        if packets.is_empty() {
            return;
        }
        self.cc.on_packets_lost(&PacketsLost {
            now,
            packets,
            lost_total: self.rate.lost(),
            delivered_total: self.rate.delivered(),
            bytes_in_flight: self.bytes_in_flight,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// Sends a 1000-byte packet numbered `pn` at `now` with `in_flight`
    /// bytes already out, as the facade does.
    fn send(
        sampler: &mut DeliveryRateSampler,
        pn: u64,
        now: Instant,
        in_flight: u64,
    ) -> SentPacket<()> {
        SentPacket {
            packet_number: pn,
            time_sent: now,
            size: 1000,
            ack_eliciting: true,
            in_flight: true,
            app_limited: false,
            pmtu_probe: false,
            ecn: crate::wire::Ecn::NotEct,
            delivery: sampler.on_packet_sent(now, in_flight, 1000),
            frames: Vec::new(),
        }
    }

    #[test]
    fn rate_is_bytes_delivered_since_the_newest_acked_packet_left_over_its_interval() {
        let t0 = Instant::now();
        let mut sampler = DeliveryRateSampler::default();
        // Ten packets 10 ms apart from an idle start; all acked 100 ms after
        // they left, one ACK per packet.
        let packets: Vec<_> = (0..10)
            .map(|i| send(&mut sampler, i, t0 + ms(10 * i), 1000 * i))
            .collect();
        let mut last = None;
        for (i, p) in packets.iter().enumerate() {
            last = sampler.on_ack([p], t0 + ms(100 + 10 * i as u64), ms(100));
        }
        // The last ACK (t0 + 190 ms) samples packet 9: sent at 90 ms when 0
        // bytes were delivered, first_send_time t0 (still in flight since),
        // delivered_time t0. send_elapsed = 90 ms, ack_elapsed = 190 ms:
        // interval 190 ms, 10_000 bytes → 52_631.57… B/s.
        let sample = last.unwrap();
        assert_eq!(sample.interval, ms(190));
        assert_eq!((sample.delivered, sample.prior_delivered), (10_000, 0));
        assert!((sample.delivery_rate - 10_000.0 / 0.19).abs() < 1e-6);
        assert_eq!(sample.tx_in_flight, 10_000);
        assert!(!sample.is_app_limited);

        // A packet sent now (t0 + 190, after the ACK) takes
        // first_send_time = 90 ms (packet 9's) and delivered_time = 190 ms.
        // It is acked at 290 ms alone: send_elapsed = 100 ms, ack_elapsed =
        // 100 ms, 1000 bytes → 10_000 B/s.
        let p = send(&mut sampler, 10, t0 + ms(190), 0);
        assert_eq!(p.delivery.delivered, 10_000);
        let sample = sampler.on_ack([&p], t0 + ms(290), ms(100)).unwrap();
        assert_eq!(sample.interval, ms(100));
        assert!((sample.delivery_rate - 10_000.0).abs() < 1e-6);
    }

    #[test]
    fn an_interval_shorter_than_min_rtt_gives_volumes_but_no_rate() {
        let t0 = Instant::now();
        let mut sampler = DeliveryRateSampler::default();
        let p = send(&mut sampler, 0, t0, 0);
        // Acked after 40 ms with min_rtt 50 ms: interval 40 ms < 50 ms.
        let sample = sampler.on_ack([&p], t0 + ms(40), ms(50)).unwrap();
        assert_eq!(sample.delivery_rate, 0.0);
        assert_eq!((sample.delivered, sample.interval), (1000, ms(40)));
    }

    #[test]
    fn corrupted_packets_count_as_delivered_and_losses_as_lost() {
        let t0 = Instant::now();
        let mut sampler = DeliveryRateSampler::default();
        let packets: Vec<_> = (0..4)
            .map(|i| send(&mut sampler, i, t0, 1000 * i))
            .collect();
        // Packet 0 is reported corrupted, packet 1 lost; 2 and 3 are acked at
        // 100 ms. C.delivered = 1000 (corrupted) + 2000 (acked) = 3000, all
        // since the packets left (P.delivered = 0): 3000 B over 100 ms.
        sampler.on_corrupted(1000, t0 + ms(90));
        sampler.on_lost(1000);
        let sample = sampler
            .on_ack([&packets[2], &packets[3]], t0 + ms(100), ms(100))
            .unwrap();
        assert_eq!((sample.delivered, sample.delivered_total), (3000, 3000));
        assert!((sample.delivery_rate - 30_000.0).abs() < 1e-6);
        // RS.lost counts the loss, not the corruption; tx_in_flight is
        // packet 3's (4000 with itself).
        assert_eq!((sample.lost, sample.lost_total), (1000, 1000));
        assert_eq!(sample.tx_in_flight, 4000);
    }

    #[test]
    fn packets_sent_in_an_app_limited_bubble_give_app_limited_samples_until_it_is_delivered() {
        let t0 = Instant::now();
        let mut sampler = DeliveryRateSampler::default();
        let first = send(&mut sampler, 0, t0, 0);
        // The queue ran dry with 1000 bytes in flight: the bubble ends when
        // C.delivered passes 0 + 1000.
        sampler.mark_app_limited(1000);
        let second = send(&mut sampler, 1, t0 + ms(10), 1000);
        assert!(!first.delivery.is_app_limited);
        assert!(second.delivery.is_app_limited);
        // Acking the first (delivered 1000, not past 1000) keeps the bubble.
        sampler.on_ack([&first], t0 + ms(100), ms(100));
        let third = send(&mut sampler, 2, t0 + ms(100), 1000);
        assert!(third.delivery.is_app_limited);
        // Acking the second (delivered 2000 > 1000) ends it; its own sample
        // is still application-limited.
        let sample = sampler.on_ack([&second], t0 + ms(110), ms(100)).unwrap();
        assert!(sample.is_app_limited);
        let fourth = send(&mut sampler, 3, t0 + ms(110), 1000);
        assert!(!fourth.delivery.is_app_limited);
    }
}
