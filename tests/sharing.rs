//! Issue 36: a controller beside one CUBIC flow on a clean drop-tail
//! bottleneck neither starves it nor starves itself. `bbr` keeps to its
//! share by the standing-queue rule (`BbrConfig::standing_queue_response`;
//! without it BBRv3 takes 0.74–0.76 of the bytes here, as 0.79–0.81 on
//! the 60 s leaky-pipes bottleneck), `westwood-a` by its PNCD test.
//!
//! The path is the leaky-pipes sharing bottleneck scaled down to run in
//! seconds: 20 Mb/s both ways, 50 ms each way, a one-BDP drop-tail queue
//! (185 packets of 1350 bytes), 40 s, both flows from t = 0, seeds 1–3.
//! `docs/notes/2026-11-26-sharing-with-cubic.md` has the 60 s figures.

mod support;

use support::{run, scenario};

/// Seeds whose median share is checked.
const SEEDS: [u64; 3] = [1, 2, 3];

/// The challenger's share of the two flows' bytes and Jain's index of the
/// two, per seed, for `challenger` (a TOML value) beside CUBIC.
fn shares_beside_cubic(challenger: &str) -> Vec<(f64, f64)> {
    let link = scenario(&format!(
        r#"
name = "sharing-cubic"
time_limit_s = 40
[bottleneck]
forward = "delay 50ms rate 20mbit limit 185"
reverse = "delay 50ms rate 20mbit limit 185"
[[flow]]
cc = "cubic"
bytes = 1_099_511_627_776
[[flow]]
cc = {challenger}
bytes = 1_099_511_627_776
"#
    ));
    SEEDS
        .iter()
        .map(|&seed| {
            let report = run(&link, seed);
            for flow in &report.flows {
                assert_eq!(
                    flow.mismatched_bytes, 0,
                    "{} delivers what was sent",
                    flow.cc
                );
                assert!(flow.error.is_none(), "{}: {:?}", flow.cc, flow.error);
            }
            let cubic = report.flows[0].bytes_received as f64;
            let other = report.flows[1].bytes_received as f64;
            let share = other / (cubic + other);
            let jain = (cubic + other).powi(2) / (2.0 * (cubic * cubic + other * other));
            (share, jain)
        })
        .collect()
}

/// The middle of `values` (three seeds: the second smallest).
fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The issue's bar: the challenger's median share of the two flows' bytes
/// in [0.3, 0.7] and Jain's index at least 0.9.
fn assert_shares_fairly(challenger: &str) {
    let runs = shares_beside_cubic(challenger);
    println!("{challenger} beside cubic: (share, Jain) per seed {runs:?}");
    let share = median(runs.iter().map(|r| r.0).collect());
    let jain = median(runs.iter().map(|r| r.1).collect());
    assert!(
        (0.3..=0.7).contains(&share),
        "{challenger}'s median share {share:.3} outside [0.3, 0.7]: {runs:?}"
    );
    assert!(
        jain >= 0.9,
        "{challenger}'s median Jain {jain:.3} < 0.9: {runs:?}"
    );
}

#[test]
fn bbr_leaves_cubic_its_share_of_a_clean_bottleneck() {
    assert_shares_fairly("\"bbr\"");
}

#[test]
fn westwood_a_keeps_its_share_beside_cubic() {
    assert_shares_fairly("\"westwood-a\"");
}
