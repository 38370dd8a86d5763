//! Behaviour of the whole chain: what a simulator or `sift-link` user sees.

use std::time::{Duration, Instant};

use super::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn netem(spec: &str, seed: u64) -> Link {
    Link::new(LinkConfig::from_netem(spec).unwrap(), seed)
}

fn link(rate_bps: Option<u64>, queue: QueueLimit, loss: f64) -> Link {
    Link::new(
        LinkConfig {
            delay_ms: ms(50),
            rate_bps,
            queue,
            loss: LossModel::bernoulli(loss),
            ..LinkConfig::default()
        },
        7,
    )
}

/// Everything the link delivers, driving it by `next_event` like a simulator.
fn drain(link: &mut Link) -> Vec<Delivery> {
    let mut out = Vec::new();
    while let Some(t) = link.next_event() {
        while let Some(d) = link.poll_delivery(t) {
            out.push(d);
        }
    }
    out
}

#[test]
fn serialization_and_propagation_delays_add_up() {
    let t0 = Instant::now();
    // 1000 bytes at 8 Mb/s = 1 ms on the wire, then 50 ms of propagation.
    let mut l = link(Some(8_000_000), QueueLimit::Packets(10), 0.0);
    l.send(t0, 1, vec![0; 1000], Ecn::NotEct);
    l.send(t0, 2, vec![0; 1000], Ecn::NotEct);
    assert_eq!(l.next_event(), Some(t0 + ms(1)));
    assert!(l.poll_delivery(t0 + ms(50)).is_none());
    let first = l.poll_delivery(t0 + ms(51)).unwrap();
    assert_eq!((first.id, first.at), (1, t0 + ms(51)));
    let second = l.poll_delivery(t0 + ms(60)).unwrap();
    assert_eq!((second.id, second.at), (2, t0 + ms(52)));
    assert_eq!((second.corruption, second.duplicate), (None, false));
}

#[test]
fn full_queue_drops_tail_as_congestion() {
    let t0 = Instant::now();
    let mut l = link(Some(1_000_000), QueueLimit::Packets(2), 0.0);
    let fates: Vec<Fate> = (0..4)
        .map(|i| l.send(t0, i, vec![0; 1000], Ecn::NotEct))
        .collect();
    // The first leaves the queue for the serializer at once; two wait;
    // the fourth finds the queue full.
    assert_eq!(
        fates,
        [
            Fate::Delivered,
            Fate::Delivered,
            Fate::Delivered,
            Fate::QueueDrop
        ]
    );
    assert_eq!(l.counters().queue_drops, 1);
}

#[test]
fn byte_limited_queue() {
    let t0 = Instant::now();
    let mut l = link(Some(1_000_000), QueueLimit::Bytes(1500), 0.0);
    assert_eq!(l.send(t0, 0, vec![0; 1000], Ecn::NotEct), Fate::Delivered); // serializing
    assert_eq!(l.send(t0, 1, vec![0; 1000], Ecn::NotEct), Fate::Delivered);
    assert_eq!(l.send(t0, 2, vec![0; 1000], Ecn::NotEct), Fate::QueueDrop);
    assert_eq!(l.send(t0, 3, vec![0; 400], Ecn::NotEct), Fate::Delivered);
}

#[test]
fn bernoulli_loss_rate_and_repeatability() {
    let t0 = Instant::now();
    let run = |seed| {
        let mut l = Link::new(
            LinkConfig {
                loss: LossModel::bernoulli(0.1),
                ..LinkConfig::default()
            },
            seed,
        );
        (0..20_000u64)
            .map(|i| l.send(t0, i, vec![0; 10], Ecn::NotEct))
            .collect::<Vec<_>>()
    };
    let a = run(3);
    assert_eq!(a, run(3), "same seed, same fates");
    assert_ne!(a, run(4), "another seed, other fates");
    let lost = a.iter().filter(|f| **f == Fate::RandomLoss).count() as f64;
    // n = 20_000, p = 0.1: σ = sqrt(n·p·(1−p)) ≈ 42; allow 5σ.
    assert!((lost - 2_000.0).abs() < 5.0 * 42.5, "lost {lost}");
}

#[test]
fn serialization_time_counts_framing_exactly() {
    let t0 = Instant::now();
    // ATM framing: 100 bytes → 3 cells × 53 bytes = 159 bytes = 1272 bits
    // at 1 Mb/s = 1272 µs, plus 10 ms of delay.
    let mut l = netem("delay 10ms rate 1mbit 0 48 5", 1);
    l.send(t0, 0, vec![0; 100], Ecn::NotEct);
    let d = drain(&mut l);
    assert_eq!(d[0].at - t0, ms(10) + Duration::from_micros(1272));
}

#[test]
fn queue_limit_drops_exactly_the_overflow_of_a_burst() {
    let t0 = Instant::now();
    // 1250 bytes at 1 Mb/s = 10 ms each. A burst of 20 at t0: one goes on
    // the serializer, 5 wait, 14 are dropped.
    let mut l = netem("delay 30ms rate 1mbit limit 5", 1);
    let fates: Vec<Fate> = (0..20)
        .map(|i| l.send(t0, i, vec![0; 1250], Ecn::NotEct))
        .collect();
    let dropped: Vec<u64> = (0..20u64)
        .filter(|&i| fates[i as usize] == Fate::QueueDrop)
        .collect();
    assert_eq!(dropped, (6..20).collect::<Vec<u64>>());
    assert_eq!(l.queue_len(), 6);
    // At 25 ms two have left the serializer (10, 20 ms): room for two more.
    assert_eq!(
        l.send(t0 + ms(25), 20, vec![0; 1250], Ecn::NotEct),
        Fate::Delivered
    );
    assert_eq!(
        l.send(t0 + ms(25), 21, vec![0; 1250], Ecn::NotEct),
        Fate::Delivered
    );
    assert_eq!(
        l.send(t0 + ms(25), 22, vec![0; 1250], Ecn::NotEct),
        Fate::QueueDrop
    );
    // Deliveries: packet k leaves the serializer at (k+1)·10 ms, arrives 30 ms later.
    let arrivals: Vec<(u64, Duration)> = drain(&mut l).iter().map(|d| (d.id, d.at - t0)).collect();
    let expected: Vec<(u64, Duration)> = [0, 1, 2, 3, 4, 5, 20, 21]
        .iter()
        .enumerate()
        .map(|(k, &id)| (id, ms(10 * (k as u64 + 1) + 30)))
        .collect();
    assert_eq!(arrivals, expected);
    let c = l.counters();
    assert_eq!((c.offered, c.delivered, c.queue_drops), (23, 8, 15));
}

#[test]
fn reorder_gap_sends_every_fifth_packet_ahead() {
    let t0 = Instant::now();
    // Packet i sent at i ms. Ids 4, 9, 14 skip the 10 ms delay.
    let mut l = netem("delay 10ms reorder 100% gap 5", 1);
    for i in 0..15 {
        l.send(t0 + ms(i), i, vec![0; 100], Ecn::NotEct);
    }
    let order: Vec<(u64, u64)> = drain(&mut l)
        .iter()
        .map(|d| (d.id, (d.at - t0).as_millis() as u64))
        .collect();
    assert_eq!(
        order,
        [
            (4, 4),
            (9, 9),
            (0, 10),
            (1, 11),
            (2, 12),
            (3, 13),
            (14, 14),
            (5, 15),
            (6, 16),
            (7, 17),
            (8, 18),
            (10, 20),
            (11, 21),
            (12, 22),
            (13, 23)
        ]
    );
    assert_eq!(l.counters().reordered, 3);
}

#[test]
fn duplication_adds_copies_at_its_rate() {
    let t0 = Instant::now();
    let mut l = netem("duplicate 10%", 2);
    let n = 50_000u64;
    let fates: Vec<Fate> = (0..n)
        .map(|i| l.send(t0, i, vec![i as u8; 20], Ecn::NotEct))
        .collect();
    let deliveries = drain(&mut l);
    let copies = deliveries.iter().filter(|d| d.duplicate).count() as f64;
    // σ = sqrt(n·0.1·0.9) ≈ 67.
    assert!((copies - 5_000.0).abs() < 5.0 * 67.0, "copies {copies}");
    assert_eq!(deliveries.len() as f64, n as f64 + copies);
    let said_duplicated = fates.iter().filter(|f| **f == Fate::Duplicated).count() as f64;
    assert_eq!(said_duplicated, copies);
    // A copy follows its original and carries the same bytes.
    for pair in deliveries.windows(2).filter(|w| w[1].duplicate) {
        assert_eq!((pair[0].id, &pair[0].bytes), (pair[1].id, &pair[1].bytes));
    }
}

#[test]
fn outages_drop_exactly_the_packets_offered_inside_the_windows() {
    let t0 = Instant::now();
    // Down during [1000, 1200) ms and [2000, 2200) ms after the first packet.
    let mut l = netem("outage 1s 200ms", 1);
    let dropped: Vec<u64> = (0..300u64)
        .filter(|&i| l.send(t0 + ms(10 * i), i, vec![0; 10], Ecn::NotEct) == Fate::OutageDrop)
        .collect();
    let expected: Vec<u64> = (100..120).chain(200..220).collect();
    assert_eq!(dropped, expected);
    assert_eq!(l.counters().outage_drops, 40);
}

#[test]
fn a_stall_holds_packets_in_order_until_it_ends_and_loses_none() {
    let t0 = Instant::now();
    // Stalled during [1000, 1300) ms after the first packet; 10 ms of delay.
    let mut l = netem("delay 10ms stall 1s 300ms", 1);
    l.set_epoch(t0);
    let mut deliveries = Vec::new();
    for i in 0..200u64 {
        let now = t0 + ms(10 * i);
        assert_eq!(l.send(now, i, vec![0; 10], Ecn::NotEct), Fate::Delivered);
        while let Some(d) = l.poll_delivery(now) {
            deliveries.push(d);
        }
    }
    deliveries.extend(drain(&mut l));
    let ids: Vec<u64> = deliveries.iter().map(|d| d.id).collect();
    assert_eq!(ids, (0..200).collect::<Vec<_>>(), "all delivered, in order");
    let at = |id: usize| deliveries[id].at.duration_since(t0);
    assert_eq!(at(99), ms(1000), "before the stall: 990 + 10 ms");
    // Offered at 1000…1290 ms: all leave when the stall ends.
    for id in 100..130 {
        assert_eq!(at(id), ms(1310), "packet {id}");
    }
    assert_eq!(at(130), ms(1310));
    assert_eq!(at(131), ms(1320));
}

#[test]
fn rate_steps_serialize_at_the_rate_in_force() {
    let t0 = Instant::now();
    // 8 Mb/s for 100 ms, then 800 kb/s for 100 ms, repeating: 1000 bytes
    // take 1 ms, then 10 ms.
    let mut l = netem("rate-steps 8mbit 100ms 800kbit 100ms limit 1000", 1);
    l.set_epoch(t0);
    l.send(t0 + ms(50), 1, vec![0; 1000], Ecn::NotEct);
    l.send(t0 + ms(150), 2, vec![0; 1000], Ecn::NotEct);
    l.send(t0 + ms(250), 3, vec![0; 1000], Ecn::NotEct);
    let times: Vec<Duration> = drain(&mut l)
        .iter()
        .map(|d| d.at.duration_since(t0))
        .collect();
    assert_eq!(times, vec![ms(51), ms(160), ms(251)]);
    assert_eq!(l.config().rate_bps, Some(8_000_000));
    assert_eq!(
        l.config().to_netem(),
        "rate-steps 8000000bit 100ms 800000bit 100ms"
    );
}

#[test]
fn delay_steps_replace_the_propagation_delay_in_turn() {
    let t0 = Instant::now();
    // A LEO handover: 20 ms for 100 ms, then 60 ms for 100 ms, repeating.
    let mut config = LinkConfig {
        delay_ms: ms(20),
        delay_steps: vec![
            DelayStep {
                delay_ms: ms(20),
                duration_ms: ms(100),
            },
            DelayStep {
                delay_ms: ms(60),
                duration_ms: ms(100),
            },
        ],
        ..LinkConfig::ideal()
    };
    config.seed = Some(1);
    let mut l = Link::new(config, 1);
    l.set_epoch(t0);
    for (id, at) in [(1, 50), (2, 150), (3, 250)] {
        l.send(t0 + ms(at), id, vec![0; 100], Ecn::NotEct);
    }
    let times: Vec<Duration> = drain(&mut l)
        .iter()
        .map(|d| d.at.duration_since(t0))
        .collect();
    assert_eq!(times, vec![ms(70), ms(210), ms(270)]);
}

#[test]
fn the_epoch_can_be_set_before_the_first_packet() {
    let t0 = Instant::now();
    let mut l = netem("outage 100ms 10ms", 1);
    l.set_epoch(t0);
    assert_eq!(
        l.send(t0 + ms(105), 0, vec![0], Ecn::NotEct),
        Fate::OutageDrop
    );
}

#[test]
fn enabling_corruption_does_not_change_which_packets_are_lost() {
    let t0 = Instant::now();
    let lost = |spec: &str| {
        let mut l = netem(spec, 42);
        (0..5_000u64)
            .filter(|&i| l.send(t0, i, vec![0; 200], Ecn::NotEct) == Fate::RandomLoss)
            .collect::<Vec<_>>()
    };
    let plain = lost("loss 10%");
    assert_eq!(
        plain,
        lost("loss 10% corrupt 50% ber 1e-4 duplicate 5% delay 5ms 1ms")
    );
    assert!(!plain.is_empty());
}

fn twenty_byte_header(_: &[u8]) -> Option<usize> {
    Some(20)
}

#[test]
fn corrupted_packets_arrive_with_exactly_the_reported_flips_in_their_region() {
    let t0 = Instant::now();
    for (spec, header) in [
        ("corrupt 100% ber 1e-3 corrupt-where header", true),
        ("corrupt 100% ber 1e-3 corrupt-where payload", false),
    ] {
        let mut l = netem(spec, 3);
        l.set_header_len(twenty_byte_header);
        let original: Vec<u8> = (0..=255u8).cycle().take(500).collect();
        for i in 0..200 {
            let fate = l.send(t0, i, original.clone(), Ecn::NotEct);
            assert_eq!(
                fate,
                Fate::Corrupted {
                    header,
                    payload: !header
                }
            );
        }
        for d in drain(&mut l) {
            let c = d.corruption.unwrap();
            let flipped: Vec<usize> = (0..500 * 8)
                .filter(|b| (original[b / 8] ^ d.bytes[b / 8]) >> (b % 8) & 1 == 1)
                .collect();
            assert_eq!(flipped.len() as u32, c.flipped_bits);
            // Header = bytes 0..20 = bits 0..160.
            assert!(
                flipped.iter().all(|&b| (b < 160) == header),
                "{spec}: {flipped:?}"
            );
            assert_eq!((c.header, c.payload), (header, !header));
        }
        let counters = l.counters();
        assert_eq!(counters.corrupted, 200);
        assert_eq!(counters.corrupted_header, if header { 200 } else { 0 });
    }
}

#[test]
fn header_share_of_95_percent_hits_the_header_of_95_percent_of_corrupted_packets() {
    let t0 = Instant::now();
    let mut l = netem("corrupt 100% corrupt-where header=95%", 8);
    l.set_header_len(twenty_byte_header);
    let n = 10_000;
    let headers = (0..n)
        .filter(|&i| {
            matches!(
                l.send(t0, i, vec![0; 1200], Ecn::NotEct),
                Fate::Corrupted { header: true, .. }
            )
        })
        .count() as f64;
    // σ = sqrt(n·0.95·0.05) ≈ 21.8.
    assert!((headers - 9_500.0).abs() < 5.0 * 21.8, "{headers}");
}

#[test]
fn jitter_spreads_delays_around_the_mean() {
    let t0 = Instant::now();
    let mut l = netem("delay 50ms 10ms distribution normal", 4);
    for i in 0..20_000 {
        l.send(t0, i, vec![0; 10], Ecn::NotEct);
    }
    let delays: Vec<f64> = drain(&mut l)
        .iter()
        .map(|d| (d.at - t0).as_secs_f64() * 1e3)
        .collect();
    let mean = delays.iter().sum::<f64>() / delays.len() as f64;
    let sd = (delays.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / delays.len() as f64).sqrt();
    // Normal(50, 10) clipped at ±40 ms: mean 50, σ ≈ 10; σ(mean) = 10/√20000 ≈ 0.07.
    assert!((mean - 50.0).abs() < 5.0 * 0.071, "mean {mean}");
    assert!((sd - 10.0).abs() < 0.2, "sd {sd}");
    assert!(delays.iter().all(|&d| (10.0..=90.0).contains(&d)));
}

#[test]
fn slots_release_packets_in_bursts() {
    let t0 = Instant::now();
    let mut l = netem("delay 5ms slot 10ms packets 2", 1);
    for i in 0..5 {
        l.send(t0, i, vec![0; 100], Ecn::NotEct);
    }
    // Ready at 5 ms; the first slot opens 10 ms later and carries two.
    let times: Vec<u64> = drain(&mut l)
        .iter()
        .map(|d| (d.at - t0).as_millis() as u64)
        .collect();
    assert_eq!(times, [15, 15, 25, 25, 35]);
}

#[test]
fn a_busy_link_drains_completely_when_driven_by_next_event() {
    let t0 = Instant::now();
    let mut l = netem(
        "delay 20ms 15ms 30% distribution pareto rate 5mbit limit 40 loss 2% duplicate 3% reorder 10% gap 2 slot 1ms 4ms packets 3 corrupt 5%",
        5,
    );
    let mut accepted = 0;
    for i in 0..2_000u64 {
        let fate = l.send(
            t0 + Duration::from_micros(1_500 * i),
            i,
            vec![0; 700],
            Ecn::NotEct,
        );
        accepted += match fate {
            Fate::Delivered | Fate::Corrupted { .. } => 1,
            Fate::Duplicated => 2,
            _ => 0,
        };
    }
    let delivered = drain(&mut l);
    let c = l.counters();
    assert!(c.delivered > 1_500, "{c:?}");
    assert_eq!(c.delivered as usize, delivered.len());
    assert_eq!(
        c.offered + c.duplicated,
        c.delivered + c.queue_drops + c.random_losses + c.outage_drops
    );
    assert!(accepted <= delivered.len());
    assert!(
        delivered.windows(2).all(|w| w[0].at <= w[1].at),
        "arrival order"
    );
    assert!(l.next_event().is_none() && l.queue_len() == 0);
}

#[test]
fn same_seed_gives_the_same_deliveries_bit_for_bit() {
    let t0 = Instant::now();
    let run = |seed| {
        let mut l = netem(
            "delay 10ms 4ms 20% rate 2mbit loss gemodel 2% 40% ber 1e-5 corrupt-burst 1% 2-5 duplicate 2%",
            seed,
        );
        for i in 0..1_000u64 {
            l.send(
                t0 + Duration::from_micros(500 * i),
                i,
                vec![(i % 251) as u8; 300],
                Ecn::NotEct,
            );
        }
        drain(&mut l)
            .into_iter()
            .map(|d| (d.id, d.at, d.bytes, d.corruption, d.duplicate))
            .collect::<Vec<_>>()
    };
    assert_eq!(run(1), run(1));
    assert_ne!(run(1), run(2));
}

#[test]
fn the_seed_in_the_spec_overrides_the_callers_seed() {
    let t0 = Instant::now();
    let fates = |seed| {
        let mut l = netem("loss 30% seed 77", seed);
        (0..200)
            .map(|i| l.send(t0, i, vec![0], Ecn::NotEct))
            .collect::<Vec<_>>()
    };
    assert_eq!(fates(1), fates(2));
}

#[test]
fn hand_built_nonsense_configs_do_not_panic() {
    let t0 = Instant::now();
    let config = LinkConfig {
        loss: LossModel::FourState(FourState {
            p13: 2.0,
            p31: f64::NAN,
            p32: -1.0,
            p23: 0.5,
            p14: 0.0,
        }),
        corrupt: CorruptionConfig {
            probability: f64::INFINITY,
            ber: 7.0,
            burst: Some(CorruptBurst {
                probability: 0.5,
                min_packets: 9,
                max_packets: 0,
            }),
            region: CorruptRegion::HeaderShare(-3.0),
            ..CorruptionConfig::default()
        },
        reorder: Some(Reorder {
            probability: 1.0,
            correlation: 0.0,
            gap: 0,
        }),
        slot: Some(Slot {
            min_ms: ms(5),
            max_ms: ms(1),
            packets: Some(0),
            bytes: Some(0),
        }),
        outage: Some(Outage {
            every_ms: Duration::ZERO,
            duration_ms: ms(1),
        }),
        rate_bps: Some(0),
        queue: QueueLimit::Packets(10),
        ..LinkConfig::default()
    };
    assert!(config.validate().is_err());
    let mut l = Link::new(config, 1);
    l.set_header_len(|_| Some(usize::MAX));
    for i in 0..100 {
        l.send(t0 + ms(i), i, vec![0; (i % 3) as usize], Ecn::NotEct);
    }
    drain(&mut l);
}

/// Ids in the order they arrive, 500 packets of 1250 B sent 0.5 ms apart
/// (20 Mb/s) into `spec`.
fn arrival_order(spec: &str) -> Vec<u64> {
    let t0 = Instant::now();
    let mut l = netem(spec, 3);
    let mut out = Vec::new();
    for id in 0..500u64 {
        let now = t0 + Duration::from_micros(500 * id);
        while let Some(d) = l.poll_delivery(now) {
            out.push(d.id);
        }
        l.send(now, id, vec![0; 1250], Ecn::NotEct);
    }
    out.extend(drain(&mut l).into_iter().map(|d| d.id));
    out
}

fn overtaken(order: &[u64]) -> usize {
    order.windows(2).filter(|w| w[1] < w[0]).count()
}

#[test]
fn jitter_behind_a_rate_keeps_packet_order_as_netem() {
    // netem with rate: send time = max(previous, now + delay) + size/rate.
    let order = arrival_order("delay 20ms 5ms distribution normal rate 20mbit limit 200");
    assert_eq!(order.len(), 500);
    assert_eq!(overtaken(&order), 0);
}

#[test]
fn jitter_without_a_rate_or_with_jitter_reorder_reorders_as_netem_tfifo() {
    // σ = 5 ms against 0.5 ms spacing: most neighbours swap.
    for spec in [
        "delay 20ms 5ms distribution normal",
        "delay 20ms 5ms distribution normal rate 20mbit limit 200 jitter-reorder",
    ] {
        let order = arrival_order(spec);
        assert_eq!(order.len(), 500, "{spec}");
        assert!(overtaken(&order) > 100, "{spec}: {}", overtaken(&order));
    }
}

#[test]
fn the_ecn_codepoint_crosses_a_link_that_does_not_mark() {
    let mut l = netem("delay 10ms rate 10mbit", 1);
    let t0 = Instant::now();
    for (id, ecn) in [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce]
        .into_iter()
        .enumerate()
    {
        assert_eq!(l.send(t0, id as u64, vec![0; 100], ecn), Fate::Delivered);
    }
    let got: Vec<Ecn> = drain(&mut l).iter().map(|d| d.ecn).collect();
    assert_eq!(got, [Ecn::NotEct, Ecn::Ect1, Ecn::Ect0, Ecn::Ce]);
    assert_eq!(l.counters().delivered_ce, 1);
}

#[test]
fn netem_ecn_with_total_loss_marks_every_ect_packet_and_drops_not_ect() {
    let mut l = netem("delay 10ms loss 100% ecn", 1);
    let t0 = Instant::now();
    let sent = [Ecn::Ect0, Ecn::NotEct, Ecn::Ect1, Ecn::Ce, Ecn::NotEct];
    let fates: Vec<Fate> = sent
        .iter()
        .enumerate()
        .map(|(id, ecn)| l.send(t0, id as u64, vec![0; 100], *ecn))
        .collect();
    use Fate::{Delivered, RandomLoss};
    assert_eq!(
        fates,
        [Delivered, RandomLoss, Delivered, Delivered, RandomLoss]
    );
    let got: Vec<(u64, Ecn)> = drain(&mut l).iter().map(|d| (d.id, d.ecn)).collect();
    assert_eq!(got, [(0, Ecn::Ce), (2, Ecn::Ce), (3, Ecn::Ce)]);
    let c = l.counters();
    assert_eq!((c.loss_marks, c.random_losses, c.delivered_ce), (3, 2, 3));
    // Without `ecn` the same loss drops them all.
    let mut l = netem("delay 10ms loss 100%", 1);
    assert_eq!(l.send(t0, 0, vec![0; 100], Ecn::Ect0), RandomLoss);
}

#[test]
fn bleach_clears_the_field_before_any_stage_can_mark() {
    let mut l = netem("delay 10ms bleach", 1);
    let t0 = Instant::now();
    for (id, ecn) in [Ecn::Ect0, Ecn::Ce, Ecn::NotEct].into_iter().enumerate() {
        l.send(t0, id as u64, vec![0; 100], ecn);
    }
    assert!(drain(&mut l).iter().all(|d| d.ecn == Ecn::NotEct));
    assert_eq!(l.counters().bleached, 2);
    // A bleached packet is Not-ECT to the loss stage: dropped, not marked.
    let mut l = netem("delay 10ms loss 100% ecn bleach", 1);
    assert_eq!(l.send(t0, 0, vec![0; 100], Ecn::Ect0), Fate::RandomLoss);
    assert_eq!(l.counters().loss_marks, 0);
}

#[test]
fn deliveries_carry_their_queueing_delay() {
    // 1000 bytes at 8 Mb/s: 1 ms each; the third of three waits 2 ms.
    let mut l = netem("delay 5ms rate 8mbit", 1);
    let t0 = Instant::now();
    for id in 0..3 {
        l.send(t0, id, vec![0; 1000], Ecn::NotEct);
    }
    let waits: Vec<Duration> = drain(&mut l).iter().map(|d| d.queue_delay).collect();
    assert_eq!(waits, [ms(0), ms(1), ms(2)]);
    assert_eq!(l.queue_delays().samples(), 3);
    assert_eq!(l.queue_delays().percentile(1.0), Some(ms(2)));
}
