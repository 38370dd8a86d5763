use std::time::Duration;

use proptest::prelude::*;

use super::*;
use crate::sim::link::{Aqm, Codel, Correlated, CorruptionConfig, DualPi2};

fn parse_ok(spec: &str) -> LinkConfig {
    parse(spec).unwrap_or_else(|e| panic!("{spec:?}: {e}"))
}

fn parse_err(spec: &str) -> NetemError {
    match parse(spec) {
        Ok(config) => panic!("{spec:?} parsed as {config:?}"),
        Err(e) => e,
    }
}

#[test]
fn an_empty_spec_is_an_ideal_link() {
    assert_eq!(parse_ok(""), LinkConfig::ideal());
    assert_eq!(parse_ok("   "), LinkConfig::ideal());
    assert_eq!(format(&LinkConfig::ideal()), "");
}

#[test]
fn the_design_example_parses() {
    let c = parse_ok("delay 60ms rate 1600kbit limit 12 loss 1%");
    assert_eq!(c.delay_ms, Duration::from_millis(60));
    assert_eq!(c.rate_bps, Some(1_600_000));
    assert_eq!(c.queue, QueueLimit::Packets(12));
    assert_eq!(c.loss, LossModel::bernoulli(0.01));
}

#[test]
fn delay_takes_jitter_correlation_and_a_distribution() {
    let c = parse_ok("delay 100ms 10ms 25% distribution paretonormal");
    assert_eq!(c.delay_ms, Duration::from_millis(100));
    assert_eq!(c.jitter_ms, Duration::from_millis(10));
    assert_eq!(c.delay_correlation, 0.25);
    assert_eq!(c.distribution, Distribution::ParetoNormal);
    assert_eq!(parse_ok("latency 5ms").delay_ms, Duration::from_millis(5));
}

#[test]
fn times_take_tc_units_and_a_bare_number_is_microseconds() {
    for (text, nanos) in [
        ("2s", 2_000_000_000u64),
        ("1.5sec", 1_500_000_000),
        ("20ms", 20_000_000),
        ("0.25msecs", 250_000),
        ("750us", 750_000),
        ("300", 300_000),
        ("40ns", 40),
    ] {
        let c = parse_ok(&format!("delay {text}"));
        assert_eq!(c.delay_ms, Duration::from_nanos(nanos), "{text}");
    }
}

#[test]
fn rates_take_tc_units() {
    for (text, bps) in [
        ("1600kbit", 1_600_000u64),
        ("10mbit", 10_000_000),
        ("10Mbit", 10_000_000),
        ("1gbit", 1_000_000_000),
        ("1kibit", 1024),
        ("1mibit", 1_048_576),
        ("9600", 9600),
        ("100bps", 800),
        ("1.5mbps", 12_000_000),
    ] {
        assert_eq!(
            parse_ok(&format!("rate {text}")).rate_bps,
            Some(bps),
            "{text}"
        );
    }
}

#[test]
fn rate_takes_packet_and_cell_overheads() {
    let c = parse_ok("rate 1mbit -4 48 5");
    assert_eq!(
        c.framing,
        Framing {
            packet_overhead: -4,
            cell_size: 48,
            cell_overhead: 5
        }
    );
    assert_eq!(parse_ok("rate 1mbit 14").framing.packet_overhead, 14);
}

#[test]
fn loss_models_take_netem_defaults() {
    assert_eq!(parse_ok("loss 2%").loss, LossModel::bernoulli(0.02));
    assert_eq!(parse_ok("drop 0.02").loss, LossModel::bernoulli(0.02));
    assert_eq!(
        parse_ok("loss random 2% 50%").loss,
        LossModel::Bernoulli {
            probability: 0.02,
            correlation: 0.5
        }
    );
    assert_eq!(
        parse_ok("loss state 5%").loss,
        LossModel::FourState(FourState::from_p13(0.05))
    );
    assert_eq!(
        parse_ok("loss state 5% 40% 20% 30% 1%").loss,
        LossModel::FourState(FourState {
            p13: 0.05,
            p31: 0.4,
            p32: 0.2,
            p23: 0.3,
            p14: 0.01
        })
    );
    assert_eq!(
        parse_ok("loss gemodel 1%").loss,
        LossModel::GilbertElliott(GilbertElliott::from_p(0.01))
    );
    assert_eq!(
        parse_ok("loss gemodel 1% 30% 90% 0.1%").loss,
        LossModel::GilbertElliott(GilbertElliott {
            p: 0.01,
            r: 0.3,
            one_minus_h: 0.9,
            one_minus_k: 0.001
        })
    );
}

#[test]
fn corruption_options_and_extensions_parse() {
    let c = parse_ok(
        "corrupt 2% 10% ber 1e-5 corrupt-gemodel 1% 25% corrupt-burst 5% 2-10 corrupt-where header=95%",
    );
    assert_eq!((c.corrupt.probability, c.corrupt.correlation), (0.02, 0.1));
    assert_eq!(c.corrupt.ber, 1e-5);
    assert_eq!(
        c.corrupt.gemodel,
        Some(GilbertElliott {
            r: 0.25,
            ..GilbertElliott::from_p(0.01)
        })
    );
    assert_eq!(
        c.corrupt.burst,
        Some(CorruptBurst {
            probability: 0.05,
            min_packets: 2,
            max_packets: 10
        })
    );
    assert_eq!(c.corrupt.region, CorruptRegion::HeaderShare(0.95));
    assert_eq!(
        parse_ok("corrupt-burst 1% 4")
            .corrupt
            .burst
            .map(|b| (b.min_packets, b.max_packets)),
        Some((4, 4))
    );
    assert_eq!(
        parse_ok("corrupt-where payload").corrupt.region,
        CorruptRegion::Payload
    );
}

#[test]
fn duplicate_reorder_slot_outage_limit_and_seed_parse() {
    let c = parse_ok(
        "delay 10ms duplicate 1% 5% reorder 25% 50% gap 5 slot 1ms 5ms packets 4 bytes 8kb outage 10s 500ms limit 50 seed 7",
    );
    assert_eq!(
        c.duplicate,
        Correlated {
            probability: 0.01,
            correlation: 0.05
        }
    );
    assert_eq!(
        c.reorder,
        Some(Reorder {
            probability: 0.25,
            correlation: 0.5,
            gap: 5
        })
    );
    assert_eq!(
        c.slot,
        Some(Slot {
            min_ms: Duration::from_millis(1),
            max_ms: Duration::from_millis(5),
            packets: Some(4),
            bytes: Some(8192)
        })
    );
    assert_eq!(
        c.outage,
        Some(Outage {
            every_ms: Duration::from_secs(10),
            duration_ms: Duration::from_millis(500)
        })
    );
    assert_eq!((c.queue, c.seed), (QueueLimit::Packets(50), Some(7)));
    assert_eq!(
        parse_ok("delay 1ms reorder 10%").reorder.map(|r| r.gap),
        Some(1)
    );
    assert_eq!(
        parse_ok("slot 2ms").slot.map(|s| s.max_ms),
        Some(Duration::from_millis(2))
    );
    assert_eq!(
        parse_ok("limit-bytes 64kb").queue,
        QueueLimit::Bytes(65_536)
    );
}

#[test]
fn an_unknown_option_names_the_word_its_position_and_the_choices() {
    let e = parse_err("delay 20ms lossy 1%");
    assert_eq!((e.position, e.word.as_str()), (3, "lossy"));
    let text = e.to_string();
    assert!(
        text.starts_with("at word 3 \"lossy\": unknown option (expected one of: limit, limit-bytes, delay, distribution, rate, loss,"),
        "{text}"
    );
}

#[test]
fn bad_values_point_at_the_value() {
    for (spec, position, word, reason_part) in [
        ("delay 20xs", 2, "20xs", "not a time"),
        ("rate fast", 2, "fast", "not a rate"),
        ("rate 10%", 2, "10%", "needs a device"),
        ("rate 0bit", 2, "0bit", "must be > 0"),
        ("loss 150%", 2, "150%", "0%..=100%"),
        ("loss 1", 2, "1", "ambiguous"),
        ("loss 5", 2, "5", "fraction in 0..=1"),
        ("loss wobbly 1%", 2, "wobbly", "unknown loss model"),
        ("corrupt-burst 1% 10-2", 3, "10-2", "1 <= MIN <= MAX"),
        (
            "corrupt-where middle",
            2,
            "middle",
            "not a corruption region",
        ),
        ("distribution zipf", 2, "zipf", "unknown distribution"),
        ("limit many", 2, "many", "not a whole number"),
        ("slot 5ms 1ms", 3, "1ms", "MAX_DELAY"),
        ("stall 1s 2s", 3, "2s", "at most its period"),
        ("rate-steps 10mbit", 1, "rate-steps", "missing TIME"),
        ("rate-steps 10mbit 0s", 3, "0s", "must last > 0"),
        (
            "rate 1mbit rate-steps 10mbit 1s",
            3,
            "rate-steps",
            "replaces rate",
        ),
        ("outage 1s 2s", 3, "2s", "at most its period"),
        ("delay 1ms reorder 10% gap 0", 6, "0", "at least 1"),
    ] {
        let e = parse_err(spec);
        assert_eq!(
            (e.position, e.word.as_str()),
            (position, word),
            "{spec}: {e}"
        );
        assert!(e.reason.contains(reason_part), "{spec}: {e}");
    }
}

#[test]
fn missing_arguments_point_at_the_option() {
    let e = parse_err("loss 1% delay");
    assert_eq!((e.position, e.word.as_str()), (3, "delay"));
    assert!(e.reason.contains("missing TIME"), "{e}");
    let e = parse_err("outage 1s");
    assert_eq!(e.position, 1);
}

#[test]
fn cross_option_rules_follow_iproute2() {
    let e = parse_err("reorder 25%");
    assert_eq!((e.position, e.word.as_str()), (1, "reorder"));
    assert!(e.reason.contains("needs some delay"), "{e}");
    let e = parse_err("delay 10ms gap 5");
    assert_eq!((e.position, e.word.as_str()), (3, "gap"));
    let e = parse_err("delay 10ms distribution normal");
    assert_eq!((e.position, e.word.as_str()), (3, "distribution"));
    let e = parse_err("loss 1% loss 2%");
    assert_eq!(e.position, 3);
    assert!(e.reason.contains("given twice (first at word 1)"), "{e}");
    let e = parse_err("limit 10 limit-bytes 5000");
    assert_eq!(e.position, 3);
    let e = parse_err("delay 5ms ecn");
    assert_eq!((e.position, e.word.as_str()), (3, "ecn"));
    assert!(e.reason.contains("needs a loss model"), "{e}");
    assert!(parse_err("slot distribution normal 1ms 1ms")
        .reason
        .contains("not supported"));
    assert!(parse_err("loss state 60% 50% 60%")
        .reason
        .contains("p31 + p32"));
}

#[test]
fn the_ecn_example_gives_random_loss_and_codel_marking() {
    let c =
        parse_ok("delay 50ms rate 50mbit limit 420 loss 1% codel target 5ms interval 100ms ecn");
    assert_eq!(c.queue, QueueLimit::Packets(420));
    assert_eq!(c.loss, LossModel::bernoulli(0.01));
    // `ecn` after `codel` is CoDel's: the random loss still drops.
    assert!(!c.ecn);
    assert_eq!(
        c.aqm,
        Some(Aqm::Codel(Codel {
            target_ms: Duration::from_millis(5),
            interval_ms: Duration::from_millis(100),
            ecn: true,
            ce_threshold_ms: None,
        }))
    );
    assert_eq!(
        format(&c),
        "limit 420 delay 50ms rate 50000000bit loss random 0.01 codel target 5ms interval 100ms ecn"
    );
}

#[test]
fn netem_ecn_goes_before_the_aqm_and_other_words_return_to_netem() {
    let c = parse_ok("loss 1% ecn codel target 10ms bleach seed 3");
    assert!(c.ecn && c.bleach);
    assert_eq!(c.seed, Some(3));
    let Some(Aqm::Codel(codel)) = &c.aqm else {
        panic!("{c:?}");
    };
    assert!(!codel.ecn, "codel defaults to noecn, as tc's");
    assert_eq!(codel.target_ms, Duration::from_millis(10));
    assert_eq!(codel.interval_ms, Duration::from_millis(100));
    assert_eq!(parse_ok(&format(&c)), c);
}

#[test]
fn dualpi2_takes_tc_defaults_and_its_options() {
    let c = parse_ok("rate 50mbit dualpi2");
    assert_eq!(c.aqm, Some(Aqm::Dualpi2(DualPi2::default())));
    let d = DualPi2::default();
    assert_eq!(d.target_ms, Duration::from_millis(15));
    assert_eq!(d.tupdate_ms, Duration::from_millis(16));
    assert_eq!(
        (d.alpha, d.beta, d.coupling_factor),
        (0.16015625, 3.19921875, 2.0)
    );
    assert_eq!(d.step_thresh_ms, Duration::from_millis(1));
    let c = parse_ok(
        "dualpi2 limit 300 target 20ms tupdate 10ms alpha 0.3 beta 4 coupling_factor 3 step_thresh 2ms classic_protection 20% any_ect overflow delay 5ms",
    );
    assert_eq!(c.queue, QueueLimit::Packets(300));
    assert_eq!(c.delay_ms, Duration::from_millis(5));
    let Some(Aqm::Dualpi2(d)) = &c.aqm else {
        panic!("{c:?}");
    };
    assert_eq!(d.target_ms, Duration::from_millis(20));
    assert_eq!(d.tupdate_ms, Duration::from_millis(10));
    assert_eq!((d.alpha, d.beta, d.coupling_factor), (0.3, 4.0, 3.0));
    assert_eq!(d.step_thresh_ms, Duration::from_millis(2));
    assert_eq!(d.classic_protection, 20);
    assert!(d.any_ect && !d.drop_on_overload);
    assert_eq!(parse_ok(&format(&c)), c);
}

#[test]
fn bad_aqm_values_are_one_clear_line() {
    for (spec, position, reason) in [
        ("codel target 0ms", 3, "must be > 0"),
        ("codel interval soon", 3, "not a time"),
        ("codel ecn noecn", 3, "codel ecn given twice"),
        ("codel limit 10 limit 20", 4, "codel limit given twice"),
        (
            "limit 10 codel limit 20",
            4,
            "limit given twice (first at word 1)",
        ),
        ("limit-bytes 9000 codel limit 20", 4, "exclusive"),
        ("codel dualpi2", 2, "given twice"),
        ("dualpi2 alpha -1", 3, "not a gain"),
        ("dualpi2 coupling_factor 0", 3, "coupling factor"),
        ("dualpi2 classic_protection 150", 3, "percentage"),
        ("dualpi2 step_thresh 30p", 3, "TIME only"),
        ("dualpi2 target", 2, "missing TIME"),
    ] {
        let e = parse_err(spec);
        assert_eq!(e.position, position, "{spec}: {e}");
        assert!(e.reason.contains(reason), "{spec}: {e}");
        assert!(!e.to_string().contains('\n'), "{spec}: {e}");
    }
}

#[test]
fn to_netem_prints_the_canonical_form() {
    let c = parse_ok("loss 1% limit 12 rate 1600kbit delay 60ms");
    assert_eq!(
        c.to_netem(),
        "limit 12 delay 60ms rate 1600000bit loss random 0.01"
    );
    assert_eq!(LinkConfig::default().to_netem(), "delay 10ms");
    let c = parse_ok("delay 1.5ms 250us 1% distribution normal rate 1mbit 0 48 5 corrupt-where header=95% loss state 1%");
    assert_eq!(
        c.to_netem(),
        "delay 1500us 250us 0.01 distribution normal rate 1000000bit 0 48 5 loss state 0.01 0.99 0.0 1.0 0.0 corrupt-where header=0.95"
    );
}

fn probability() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(0.0),
        Just(1.0),
        0.0f64..=1.0,
        (0u32..=100).prop_map(|n| n as f64 / 100.0)
    ]
}

fn positive_probability() -> impl Strategy<Value = f64> {
    prop_oneof![Just(1.0), 1e-9f64..=1.0]
}

fn duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        (0u64..10_000).prop_map(Duration::from_millis),
        (0u64..10_000_000_000).prop_map(Duration::from_nanos),
    ]
}

fn positive_duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        (1u64..10_000).prop_map(Duration::from_millis),
        (1u64..10_000_000_000).prop_map(Duration::from_nanos),
    ]
}

fn gemodel() -> impl Strategy<Value = GilbertElliott> {
    (probability(), probability(), probability(), probability()).prop_map(|(p, r, h, k)| {
        GilbertElliott {
            p,
            r,
            one_minus_h: h,
            one_minus_k: k,
        }
    })
}

fn loss() -> impl Strategy<Value = LossModel> {
    prop_oneof![
        (probability(), probability()).prop_map(|(p, c)| LossModel::Bernoulli {
            probability: p,
            correlation: c
        }),
        (
            probability(),
            probability(),
            probability(),
            probability(),
            probability()
        )
            .prop_map(|(p13, p14_share, p31, p32_share, p23)| {
                // Keep p13 + p14 ≤ 1 and p31 + p32 ≤ 1.
                LossModel::FourState(FourState {
                    p13,
                    p14: (1.0 - p13) * p14_share,
                    p31,
                    p32: (1.0 - p31) * p32_share,
                    p23,
                })
            }),
        gemodel().prop_map(LossModel::GilbertElliott),
    ]
}

fn region() -> impl Strategy<Value = CorruptRegion> {
    prop_oneof![
        Just(CorruptRegion::Any),
        Just(CorruptRegion::Header),
        Just(CorruptRegion::Payload),
        probability().prop_map(CorruptRegion::HeaderShare),
    ]
}

fn corruption() -> impl Strategy<Value = CorruptionConfig> {
    (
        probability(),
        probability(),
        prop_oneof![Just(0.0), 1e-12f64..=1e-2],
        proptest::option::of(gemodel()),
        proptest::option::of(
            (probability(), 1u32..20, 0u32..20).prop_map(|(p, min, extra)| CorruptBurst {
                probability: p,
                min_packets: min,
                max_packets: min + extra,
            }),
        ),
        region(),
    )
        .prop_map(
            |(probability, correlation, ber, gemodel, burst, region)| CorruptionConfig {
                probability,
                correlation,
                ber,
                gemodel,
                burst,
                region,
            },
        )
}

fn aqm() -> impl Strategy<Value = Aqm> {
    let codel = (
        positive_duration(),
        positive_duration(),
        any::<bool>(),
        proptest::option::of(duration()),
    )
        .prop_map(|(target_ms, interval_ms, ecn, ce_threshold_ms)| {
            Aqm::Codel(Codel {
                target_ms,
                interval_ms,
                ecn,
                ce_threshold_ms,
            })
        });
    let dualpi2 = (
        (
            duration(),
            positive_duration(),
            0.001f64..100.0,
            0.001f64..100.0,
        ),
        (
            1u8..=255,
            duration(),
            0u8..=100,
            any::<bool>(),
            any::<bool>(),
        ),
    )
        .prop_map(
            |((target_ms, tupdate_ms, alpha, beta), (k, step, wc, any_ect, drop))| {
                Aqm::Dualpi2(DualPi2 {
                    target_ms,
                    tupdate_ms,
                    alpha,
                    beta,
                    coupling_factor: f64::from(k),
                    step_thresh_ms: step,
                    classic_protection: wc,
                    any_ect,
                    drop_on_overload: drop,
                })
            },
        );
    prop_oneof![codel, dualpi2]
}

fn link_config() -> impl Strategy<Value = LinkConfig> {
    let timing = (
        duration(),
        (
            prop_oneof![Just(Duration::ZERO), positive_duration()],
            any::<bool>(),
        ),
        probability(),
        prop::sample::select(Distribution::ALL.to_vec()),
        proptest::option::of(1u64..100_000_000_000),
        (-100i32..100, prop_oneof![Just(0u32), 1u32..100], -10i32..10),
        prop_oneof![
            (0usize..5000).prop_map(QueueLimit::Packets),
            (1usize..10_000_000).prop_map(QueueLimit::Bytes)
        ],
    );
    let impairments = (
        loss(),
        corruption(),
        (probability(), probability()),
        proptest::option::of((positive_probability(), probability(), 1u32..100)),
        proptest::option::of((
            positive_duration(),
            duration(),
            proptest::option::of(1u32..100),
            proptest::option::of(1u64..1_000_000),
        )),
        proptest::option::of((positive_duration(), 0.0f64..=1.0)),
        proptest::option::of(any::<u64>()),
    );
    (timing, impairments).prop_map(|(timing, impairments)| {
        let (
            delay,
            (jitter, jitter_reorders),
            delay_correlation,
            distribution,
            rate,
            framing,
            queue,
        ) = timing;
        let (loss, corrupt, duplicate, reorder, slot, outage, seed) = impairments;
        let jittered = !jitter.is_zero();
        // Reordering needs a delay: give it one.
        let delay = if reorder.is_some() && delay.is_zero() {
            Duration::from_millis(1)
        } else {
            delay
        };
        LinkConfig {
            delay_ms: delay,
            jitter_ms: jitter,
            delay_correlation: if jittered { delay_correlation } else { 0.0 },
            distribution: if jittered {
                distribution
            } else {
                Distribution::Uniform
            },
            jitter_reorders: jittered && jitter_reorders,
            rate_bps: rate,
            framing: if rate.is_some() {
                Framing {
                    packet_overhead: framing.0,
                    cell_size: framing.1,
                    cell_overhead: framing.2,
                }
            } else {
                Framing::default()
            },
            queue,
            loss,
            ecn: false,
            aqm: None,
            bleach: false,
            corrupt,
            duplicate: Correlated {
                probability: duplicate.0,
                correlation: duplicate.1,
            },
            reorder: reorder.map(|(probability, correlation, gap)| Reorder {
                probability,
                correlation,
                gap,
            }),
            slot: slot.map(|(min, extra, packets, bytes)| Slot {
                min_ms: min,
                max_ms: min + extra,
                packets,
                bytes,
            }),
            outage: outage.map(|(every, share)| Outage {
                every_ms: every,
                duration_ms: every.mul_f64(share).max(Duration::from_nanos(1)).min(every),
            }),
            // The same windows as stalls: both print and parse alike.
            stall: outage.map(|(every, share)| Outage {
                every_ms: every * 2,
                duration_ms: every.mul_f64(share).max(Duration::from_nanos(1)).min(every),
            }),
            // Some MTU whenever there is a seed, so the round trip covers it.
            mtu: seed.map(|seed| 68 + (seed % 9000) as u32),
            rate_steps: Vec::new(),
            delay_steps: Vec::new(),
            seed,
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn to_netem_round_trips(config in link_config()) {
        prop_assert_eq!(config.validate(), Ok(()));
        let text = config.to_netem();
        let back = LinkConfig::from_netem(&text);
        prop_assert_eq!(back.as_ref(), Ok(&config), "{}", text);
    }

    #[test]
    fn ecn_bleach_and_aqm_round_trip(
        base in link_config(),
        ecn in any::<bool>(),
        bleach in any::<bool>(),
        aqm in proptest::option::of(aqm()),
    ) {
        let mut config = base;
        config.ecn = ecn && config.loss != LossModel::default();
        config.bleach = bleach;
        config.aqm = aqm;
        prop_assert_eq!(config.validate(), Ok(()));
        let text = config.to_netem();
        let back = LinkConfig::from_netem(&text);
        prop_assert_eq!(back.as_ref(), Ok(&config), "{}", text);
    }

    #[test]
    fn parsing_never_panics(spec in "[a-z0-9%.= -]{0,60}") {
        let _ = parse(&spec);
    }

    #[test]
    fn parsing_known_words_in_any_order_never_panics(
        words in prop::collection::vec(
            prop_oneof![
                prop::sample::select(OPTIONS.to_vec()).prop_map(str::to_string),
                prop::sample::select(vec!["1%", "0.5", "20ms", "1", "-3", "random", "state", "gemodel", "header=5%", "2-4", "packets", "bytes", "normal", "10mbit"]).prop_map(str::to_string),
            ],
            0..12,
        )
    ) {
        let _ = parse(&words.join(" "));
    }
}
