//! Issue 14: a receiver that lies. A CORRUPTED frame exempts a packet from
//! congestion control, so a receiver that names every loss corrupted would
//! keep its sender's window whole while honest flows back off. sift bounds
//! that with skipped packet numbers (a liar names gaps, and some gaps are
//! numbers never sent) and a corruption budget tied to what the path shows
//! (SECURITY.md); these runs show the bound holds on a shared bottleneck,
//! also against a liar that reads stream offsets and never names a skipped
//! number (issue 33), and that an honest receiver on a badly corrupting
//! link keeps its notices.
//!
//! Fixed seeds; medians of seeds 1–3 where the issue asks for them.

mod support;

use sift::sim::{FlowReport, Scenario};
use support::{delivered_goodput_bps, goodput_bps, run, scenario};

const SEEDS: [u64; 3] = [1, 2, 3];

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// 20 Mb/s, 20 ms each way, a drop-tail queue of one BDP (75 packets of
/// 1350 bytes), shared for 60 s by a CUBIC flow whose receiver lies and one
/// whose receiver is honest. (Two honest CUBIC flows split it 1.12, 1.03
/// and 1.33 to 1 on these seeds: the first to start keeps an edge.)
/// Without ECN, as the bounds were measured: nothing on this path marks,
/// and ACK_ECN's extra bytes alone reshuffle a 60 s race between two flows
/// (bbr's offset-reading liar measured 1.40, 1.00, 1.50 with ECN on).
fn shared_bottleneck() -> String {
    r#"
name = "liar-and-honest"
time_limit_s = 60
[bottleneck]
forward = "delay 20ms rate 20mbit limit 75"
reverse = "delay 20ms rate 20mbit"
[[flow]]
cc = "cubic"
bytes = 1_000_000_000
lying_receiver = true
ecn = false
[[flow]]
cc = "cubic"
bytes = 1_000_000_000
ecn = false
"#
    .to_string()
}

/// Runs a shared bottleneck whose flow 0 is the liar and flow 1 honest;
/// both byte-exact. Returns the liar's flow and its goodput over the
/// honest one's.
fn liar_against_honest(scenario: &Scenario, seed: u64) -> (FlowReport, f64) {
    let report = run(scenario, seed);
    let end = report.end_s;
    let (liar, honest) = (&report.flows[0], &report.flows[1]);
    assert_eq!(liar.mismatched_bytes + honest.mismatched_bytes, 0);
    let ratio = delivered_goodput_bps(liar, end) / delivered_goodput_bps(honest, end);
    (liar.clone(), ratio)
}

#[test]
fn a_lying_receiver_gets_at_most_one_and_a_half_times_an_honest_flow() {
    let scenario = scenario(&shared_bottleneck());
    let mut ratios = Vec::new();
    for seed in SEEDS {
        let (liar, ratio) = liar_against_honest(&scenario, seed);
        let client = &liar.client_stats;
        // The lie was told, and seen through.
        assert!(liar.server_stats.corruption_notices_sent > 0);
        assert!(
            client.corruption_notices_distrusted,
            "seed {seed}: {client:?}"
        );
        assert!(
            ratio <= 1.5,
            "seed {seed}: the liar got {ratio:.2}× the honest flow"
        );
        ratios.push(ratio);
    }
    eprintln!("liar / honest goodput, seeds 1-3: {ratios:.2?}");
}

/// The same shared bottleneck, the liar now one that reads stream offsets
/// (`lying_receiver = "real-losses"`): it names only the gaps that leave a
/// hole in the data, never a skipped number, so no witness catches it, and
/// only the corruption budget's queue rule holds it (`recovery::corruption`).
fn shared_with_an_offset_reader(cc: &str) -> String {
    shared_bottleneck()
        .replace("lying_receiver = true", "lying_receiver = \"real-losses\"")
        .replace("\"cubic\"", &format!("\"{cc}\""))
}

#[test]
fn a_receiver_that_names_only_real_losses_gets_at_most_1_3_times_an_honest_flow() {
    for cc in ["cubic", "reno", "bbr"] {
        let scenario = scenario(&shared_with_an_offset_reader(cc));
        let mut ratios = Vec::new();
        for seed in SEEDS {
            let (liar, ratio) = liar_against_honest(&scenario, seed);
            let client = &liar.client_stats;
            // It lied, was never caught naming a skipped number, and the
            // budget turned its lies into losses.
            assert!(
                liar.server_stats.corruption_notices_sent > 0,
                "{cc} seed {seed}"
            );
            assert!(!client.corruption_notices_distrusted, "{cc} seed {seed}");
            assert!(
                client.corruption_notices_over_budget > 0,
                "{cc} seed {seed}"
            );
            ratios.push(ratio);
        }
        eprintln!("{cc}: offset-reading liar / honest goodput, seeds 1-3: {ratios:.2?}");
        assert!(
            median(ratios.clone()) <= 1.3,
            "{cc}: the liar got {ratios:.2?}× the honest flow"
        );
    }
}

#[test]
fn an_honest_receiver_behind_ten_percent_corruption_keeps_its_notices() {
    // The same path, alone, with 10% of the data packets corrupted: BBR
    // under corruption anywhere in the packet (a damaged header is a loss),
    // and CUBIC, the default, under payload corruption.
    for (cc, corrupt) in [
        ("bbr", "corrupt 10%"),
        ("cubic", "corrupt 10% corrupt-where payload"),
    ] {
        let scenario = scenario(&format!(
            r#"
name = "honest-corrupt-10"
time_limit_s = 120
[bottleneck]
forward = "delay 20ms rate 20mbit limit 75 {corrupt}"
reverse = "delay 20ms rate 20mbit"
[[flow]]
cc = "{cc}"
bytes = 20_000_000
"#
        ));
        let mut fractions = Vec::new();
        for seed in SEEDS {
            let report = run(&scenario, seed);
            let flow = &report.flows[0];
            let client = &flow.client_stats;
            assert!(
                client.corruption_notices_received > 1000,
                "{cc} seed {seed}"
            );
            assert!(!client.corruption_notices_distrusted, "{cc} seed {seed}");
            // While a queue shows, notices are honoured at twice the calm
            // rate: an honest link stays inside it but for the odd notice
            // of a slow start, before the calm rate is well measured (BBR
            // seed 1: 2 of 1690).
            assert!(
                client.corruption_notices_over_budget * 200 <= client.corruption_notices_received,
                "{cc} seed {seed}: {} of {} notices over budget",
                client.corruption_notices_over_budget,
                client.corruption_notices_received
            );
            fractions.push(goodput_bps(flow) / (20e6 * 0.9));
        }
        eprintln!("{cc}: goodput / capacity·(1−p), seeds 1-3: {fractions:.3?}");
        assert!(median(fractions.clone()) >= 0.8, "{cc}: {fractions:?}");
    }
}
