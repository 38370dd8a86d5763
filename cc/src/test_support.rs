//! Event builders for controller unit tests: a virtual clock and ACK, loss
//! and corruption events with explicit RTT views, so each test states the
//! numbers its arithmetic uses.

use std::time::{Duration, Instant};

use crate::{
    AckEvent, CorruptionEvent, EcnEvent, LossEvent, LostPacket, PacketsLost, RttSample,
    SpuriousCongestionEvent,
};

/// The packet size every controller test uses, so windows read as packets × 1000.
pub(crate) const MSS: u64 = 1000;

/// Milliseconds as a `Duration`.
pub(crate) fn ms(millis: u64) -> Duration {
    Duration::from_millis(millis)
}

/// RTT views with a fresh sample `latest_ms` and a smoothed RTT `smoothed_ms`.
pub(crate) fn rtt(latest_ms: u64, smoothed_ms: u64) -> RttSample {
    RttSample {
        latest: ms(latest_ms),
        min: ms(latest_ms.min(smoothed_ms)),
        smoothed: ms(smoothed_ms),
        variance: ms(smoothed_ms) / 2,
    }
}

/// An ACK of `packets` full-sized packets carrying an RTT sample. The largest
/// acked packet was sent at `sent`; `bytes_in_flight` is what remains after.
pub(crate) fn ack(
    now: Instant,
    sent: Instant,
    packets: u64,
    rtt: RttSample,
    bytes_in_flight: u64,
) -> AckEvent {
    AckEvent {
        now,
        acked_bytes: packets * MSS,
        acked_packets: packets,
        largest_acked: 0,
        largest_acked_sent_time: sent,
        rtt,
        rtt_sampled: true,
        bytes_in_flight,
        app_limited: false,
        in_recovery: false,
        rate: None,
    }
}

/// A loss of one packet; `persistent` marks a timeout-class event.
pub(crate) fn loss(now: Instant, rtt: RttSample, persistent: bool) -> LossEvent {
    LossEvent {
        now,
        lost_packets: vec![1],
        lost_bytes: MSS,
        largest_lost_sent_time: now,
        bytes_in_flight: 0,
        rtt,
        persistent,
    }
}

/// `count` packets of `MSS` bytes from number `first` declared lost at
/// `now` (the recovery module's `on_packets_lost` call).
pub(crate) fn packets_lost(now: Instant, first: u64, count: u64) -> PacketsLost {
    let packets = (first..first + count)
        .map(|packet_number| LostPacket {
            packet_number,
            size: MSS,
            delivered: 0,
            lost: 0,
            tx_in_flight: 0,
            is_app_limited: false,
        })
        .collect();
    PacketsLost {
        now,
        packets,
        lost_total: count * MSS,
        delivered_total: 0,
        bytes_in_flight: 0,
    }
}

/// A corruption notice naming one outstanding packet.
pub(crate) fn corruption(now: Instant, rtt: RttSample) -> CorruptionEvent {
    CorruptionEvent {
        now,
        corrupted_packets: vec![1],
        corrupted_bytes: MSS,
        bytes_in_flight: 0,
        rtt,
    }
}

/// The undo of the last congestion event, which had lost packet 1.
pub(crate) fn spurious(now: Instant, rtt: RttSample) -> SpuriousCongestionEvent {
    SpuriousCongestionEvent {
        now,
        congestion_at: now,
        lost_packets: vec![1],
        rtt,
    }
}

/// An ACK of `acked` packets, the largest sent at `sent`, that reported
/// `marked` more of them CE marked; `new_event` says whether the recovery
/// module counts it a new congestion event.
pub(crate) fn marks(
    now: Instant,
    sent: Instant,
    marked: u64,
    acked: u64,
    new_event: bool,
) -> EcnEvent {
    EcnEvent {
        now,
        newly_marked: marked,
        acked_packets: acked,
        acked_bytes: acked * MSS,
        largest_acked_sent_time: sent,
        new_congestion_event: new_event,
        bytes_in_flight: 0,
        rtt: rtt(100, 100),
    }
}
