//! The AQMs through a whole link: what a sender behind a CoDel or DualPI2
//! bottleneck sees.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::sim::link::{Delivery, Link, LinkConfig};
use crate::wire::Ecn;

/// 1250-byte packets: 1 ms each on a 10 Mb/s serializer.
const PACKET: usize = 1250;

fn link(spec: &str, seed: u64) -> Link {
    Link::new(LinkConfig::from_netem(spec).unwrap(), seed)
}

/// What came out of a run: each delivery, the ids dropped late, and the
/// codepoint each id was sent with.
struct Run {
    delivered: Vec<Delivery>,
    late_drops: Vec<u64>,
    sent: HashMap<u64, Ecn>,
}

/// Offers packets at the given (time offset, codepoint) pairs, in order,
/// and drains the link by its own events until it is empty.
fn run(link: &mut Link, sends: &[(Duration, Ecn)]) -> Run {
    let t0 = Instant::now();
    let mut out = Run {
        delivered: Vec::new(),
        late_drops: Vec::new(),
        sent: HashMap::new(),
    };
    let mut next = 0;
    loop {
        let send_at = sends.get(next).map(|(at, _)| t0 + *at);
        let now = match (send_at, link.next_event()) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => match a.or(b) {
                Some(t) => t,
                None => break,
            },
        };
        if send_at == Some(now) {
            let ecn = sends[next].1;
            let id = next as u64;
            link.send(now, id, vec![0; PACKET], ecn);
            out.sent.insert(id, ecn);
            next += 1;
        }
        while let Some(d) = link.poll_delivery(now) {
            out.delivered.push(d);
        }
        while let Some(drop) = link.poll_late_drop() {
            assert_eq!(drop.len, PACKET);
            out.late_drops.push(drop.id);
        }
    }
    out
}

/// `count` packets every `spacing`, codepoints taken in turn from `ecns`.
fn paced(count: usize, spacing: Duration, ecns: &[Ecn]) -> Vec<(Duration, Ecn)> {
    (0..count)
        .map(|i| (spacing * i as u32, ecns[i % ecns.len()]))
        .collect()
}

#[test]
fn codel_with_ecn_marks_ect_packets_and_drops_not_ect_under_a_standing_queue() {
    // 10 Mb/s offered 12.5 Mb/s (a packet every 0.8 ms) for 3 s: the queue
    // stands far above 5 ms for far longer than 100 ms.
    let mut l = link(
        "rate 10mbit limit 1000 codel target 5ms interval 100ms ecn",
        1,
    );
    let sends = paced(3750, Duration::from_micros(800), &[Ecn::Ect0, Ecn::NotEct]);
    let out = run(&mut l, &sends);
    let c = l.counters();
    assert!(c.aqm_marks > 10 && c.aqm_drops > 10, "{c:?}");
    assert_eq!(c.queue_drops, 0, "the limit is never reached: {c:?}");
    assert_eq!(out.late_drops.len() as u64, c.aqm_drops);
    for id in &out.late_drops {
        assert_eq!(
            out.sent[id],
            Ecn::NotEct,
            "CoDel dropped an ECT packet: {id}"
        );
    }
    let marked = out.delivered.iter().filter(|d| d.ecn == Ecn::Ce).count() as u64;
    assert_eq!(marked, c.aqm_marks);
    for d in &out.delivered {
        let sent = out.sent[&d.id];
        assert!(
            d.ecn == sent || (sent == Ecn::Ect0 && d.ecn == Ecn::Ce),
            "{sent:?} -> {:?}",
            d.ecn
        );
    }
    assert_eq!(out.delivered.len() + out.late_drops.len(), sends.len());
}

#[test]
fn codel_without_ecn_drops_ect_packets_too() {
    let mut l = link("rate 10mbit codel target 5ms interval 100ms", 1);
    let out = run(
        &mut l,
        &paced(3750, Duration::from_micros(800), &[Ecn::Ect0]),
    );
    let c = l.counters();
    assert_eq!(c.aqm_marks, 0);
    assert!(c.aqm_drops > 10, "{c:?}");
    assert!(out.delivered.iter().all(|d| d.ecn == Ecn::Ect0));
}

#[test]
fn codel_marks_nothing_while_the_sojourn_stays_under_target() {
    // Bursts of 4 at 10 Mb/s every 10 ms: the last of each waits 3 ms < 5 ms.
    let mut l = link("rate 10mbit codel target 5ms interval 100ms ecn", 1);
    let sends: Vec<(Duration, Ecn)> = (0..2000)
        .map(|i| (Duration::from_millis(10 * (i / 4) as u64), Ecn::Ect0))
        .collect();
    let out = run(&mut l, &sends);
    let c = l.counters();
    assert_eq!((c.aqm_marks, c.aqm_drops), (0, 0), "{c:?}");
    assert!(out.delivered.iter().all(|d| d.ecn == Ecn::Ect0));
    let p99 = l.queue_delays().percentile(0.99).unwrap();
    assert!(p99 <= Duration::from_millis(3), "{p99:?}");
}

#[test]
fn codel_ce_threshold_marks_every_ect_packet_over_it() {
    // Same bursts: packets waiting 2 or 3 ms pass a 1.5 ms threshold.
    let mut l = link("rate 10mbit codel ce_threshold 1500us", 1);
    let sends: Vec<(Duration, Ecn)> = (0..400)
        .map(|i| (Duration::from_millis(10 * (i / 4) as u64), Ecn::Ect1))
        .collect();
    let out = run(&mut l, &sends);
    for d in &out.delivered {
        let over = d.queue_delay > Duration::from_micros(1500);
        assert_eq!(
            d.ecn == Ecn::Ce,
            over,
            "{:?} waited {:?}",
            d.id,
            d.queue_delay
        );
    }
    assert_eq!(l.counters().aqm_marks, 200);
}

#[test]
fn dualpi2_step_marks_l4s_packets_that_wait_over_a_millisecond() {
    // Bursts of 3 ECT(1) packets every 10 ms at 10 Mb/s wait 0, 1 and 2 ms;
    // under two MTUs wait behind each, so PI2's coupled marking never
    // applies (`must_drop`'s guard): only the step marks the third.
    let mut l = link("rate 10mbit dualpi2", 3);
    let sends: Vec<(Duration, Ecn)> = (0..1200)
        .map(|i| (Duration::from_millis(10 * (i / 3) as u64), Ecn::Ect1))
        .collect();
    let out = run(&mut l, &sends);
    assert_eq!(out.delivered.len(), 1200);
    for d in &out.delivered {
        let over = d.queue_delay > Duration::from_millis(1);
        assert_eq!(
            d.ecn == Ecn::Ce,
            over,
            "{} waited {:?}",
            d.id,
            d.queue_delay
        );
    }
    assert_eq!(l.counters().aqm_marks, 400);
    // The same bursts in the classic queue are not marked at all.
    let mut l = link("rate 10mbit dualpi2", 3);
    let classic: Vec<(Duration, Ecn)> = sends.iter().map(|(t, _)| (*t, Ecn::Ect0)).collect();
    let out = run(&mut l, &classic);
    assert!(out.delivered.iter().all(|d| d.ecn == Ecn::Ect0));
    assert_eq!(l.counters().aqm_marks, 0);
}

#[test]
fn dualpi2_marks_l4s_more_often_than_classic_when_coupled_and_serves_both() {
    // Every 300 ms a classic ECT(0) flow sends at 1.18× the rate for
    // 150 ms, standing a queue over the 15 ms target that then drains; an
    // ECT(1) flow at 20% rides the L4S queue throughout. PI2 raises p′:
    // classic packets are marked with p′², L4S ones with 2·p′ (and the step).
    let classic = (0..4u64).flat_map(|cycle| {
        (0..176u64).map(move |i| (Duration::from_micros(300_000 * cycle + 850 * i), Ecn::Ect0))
    });
    let l4s = (0..240u64).map(|i| (Duration::from_micros(5000 * i + 250), Ecn::Ect1));
    let mut sends: Vec<(Duration, Ecn)> = classic.chain(l4s).collect();
    sends.sort_by_key(|(t, _)| *t);
    let mut l = link("rate 10mbit limit 1000 dualpi2", 5);
    let out = run(&mut l, &sends);
    let share = |sent: Ecn| {
        let of: Vec<&Delivery> = out
            .delivered
            .iter()
            .filter(|d| out.sent[&d.id] == sent)
            .collect();
        let marked = of.iter().filter(|d| d.ecn == Ecn::Ce).count();
        (of.len(), marked as f64 / of.len().max(1) as f64)
    };
    let (l4s_delivered, l4s_marked) = share(Ecn::Ect1);
    let (classic_delivered, classic_marked) = share(Ecn::Ect0);
    // Nothing dropped: every packet is ECN-capable and p′ stays below overload.
    assert_eq!(
        (l4s_delivered, classic_delivered),
        (240, 704),
        "{:?}",
        l.counters()
    );
    assert!(classic_marked > 0.0, "{classic_marked}");
    assert!(
        l4s_marked > 2.0 * classic_marked,
        "L4S {l4s_marked} vs classic {classic_marked}"
    );
    // The L4S queue stays short while the classic one stands.
    let worst_l4s = out
        .delivered
        .iter()
        .filter(|d| out.sent[&d.id] == Ecn::Ect1)
        .map(|d| d.queue_delay)
        .max()
        .unwrap();
    let worst_classic = out.delivered.iter().map(|d| d.queue_delay).max().unwrap();
    assert!(worst_l4s <= Duration::from_millis(2), "{worst_l4s:?}");
    assert!(
        worst_classic > Duration::from_millis(15),
        "{worst_classic:?}"
    );
}

#[test]
fn dualpi2_gives_the_classic_queue_its_protected_share() {
    // 100 packets in each queue at once, all ECN-capable; `overflow` keeps
    // p′ below overload so they are marked, never dropped. While both
    // wait, the classic queue gets 10% of the bytes.
    let mut sends: Vec<(Duration, Ecn)> = Vec::new();
    for _ in 0..100 {
        sends.push((Duration::ZERO, Ecn::Ect1));
        sends.push((Duration::ZERO, Ecn::Ect0));
    }
    let mut l = link("rate 10mbit dualpi2 overflow", 1);
    let out = run(&mut l, &sends);
    assert_eq!(out.delivered.len(), 200, "{:?}", l.counters());
    let first_half = &out.delivered[..100];
    let classic = first_half
        .iter()
        .filter(|d| out.sent[&d.id] == Ecn::Ect0)
        .count();
    // The first packet is served on arrival (an ECT(1) one), then 9 L4S to 1 classic.
    assert!(
        (8..=12).contains(&classic),
        "{classic} classic packets in the first 100"
    );
}

#[test]
fn aqm_marks_and_drops_repeat_for_a_seed() {
    let sends = paced(
        3000,
        Duration::from_micros(800),
        &[Ecn::Ect0, Ecn::Ect1, Ecn::NotEct],
    );
    let trace = |seed: u64| {
        let mut l = link("rate 10mbit limit 200 loss 1% ecn dualpi2", seed);
        let out = run(&mut l, &sends);
        let marks: Vec<(u64, Ecn)> = out.delivered.iter().map(|d| (d.id, d.ecn)).collect();
        (marks, out.late_drops, l.counters())
    };
    let (marks, drops, counters) = trace(7);
    assert!(
        counters.aqm_marks > 0 && counters.aqm_drops > 0,
        "{counters:?}"
    );
    assert_eq!(trace(7), (marks.clone(), drops.clone(), counters));
    assert_ne!(trace(8).0, marks, "another seed, other rolls");
}
