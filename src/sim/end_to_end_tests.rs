//! End-to-end transfers over the real `Connection` on simulated links: what a
//! user of the library would notice first if the core broke.

use std::time::Instant;

use super::report::{RunReport, StopReason};
use super::scenario::Scenario;
use super::world::Simulation;

/// 10 Mb/s, 25 ms each way (50 ms RTT), a 50-packet drop-tail queue and 1%
/// random loss on the data direction: the brief's reference lossy path.
fn lossy_10mbit(cc: &str, streams: u64) -> Scenario {
    let text = format!(
        r#"
name = "lossy-10mbit-{cc}-{streams}-streams"
time_limit_s = 600
[bottleneck.forward]
delay_ms = 25.0
rate_bps = 10_000_000
queue = {{ packets = 50 }}
loss = 0.01
[bottleneck.reverse]
delay_ms = 25.0
rate_bps = 10_000_000
[[flow]]
cc = "{cc}"
bytes = 10_000_000
streams = {streams}
"#
    );
    Scenario::from_toml_str(&text, "lossy-10mbit").expect("a valid scenario")
}

fn run(scenario: &Scenario) -> RunReport {
    let mut simulation = Simulation::new(scenario, 1, Instant::now()).expect("a valid scenario");
    simulation.run().expect("the run ends cleanly");
    simulation.report()
}

fn assert_byte_exact_completion(cc: &str, streams: u64) {
    let report = run(&lossy_10mbit(cc, streams));
    let flow = &report.flows[0];
    assert_eq!(
        report.stop_reason,
        Some(StopReason::AllFlowsCompleted),
        "{flow:?}"
    );
    assert!(flow.completion_s.is_some(), "{flow:?}");
    assert_eq!(flow.bytes_received, 10_000_000);
    assert_eq!(flow.mismatched_bytes, 0, "every byte arrives as sent");
    assert!(
        flow.packets.forward.random_losses > 0,
        "the link really lost packets"
    );
}

#[test]
fn reno_moves_10mb_over_a_lossy_10mbit_path_on_1_4_and_16_streams() {
    for streams in [1, 4, 16] {
        assert_byte_exact_completion("reno", streams);
    }
}

#[test]
fn cubic_moves_10mb_over_a_lossy_10mbit_path_on_1_4_and_16_streams() {
    for streams in [1, 4, 16] {
        assert_byte_exact_completion("cubic", streams);
    }
}

fn assert_clean_link_use(cc: &str) {
    let mut scenario = lossy_10mbit(cc, 1);
    scenario.name = format!("clean-10mbit-{cc}");
    scenario.bottleneck.forward.loss = 0.0.into();
    scenario.flows[0].bytes = 20_000_000;
    let report = run(&scenario);
    let flow = &report.flows[0];
    // 20 MB at 10 Mb/s takes 16 s on the wire; 90% of the rate is 9 Mb/s.
    // The 50-packet queue is about one BDP (10 Mb/s · 50 ms = 62.5 kB).
    let goodput = flow.goodput_bps.expect("the transfer completes");
    assert!(goodput >= 0.9 * 10_000_000.0, "{cc}: goodput {goodput} b/s");
    assert_eq!(flow.bytes_received, 20_000_000);
    assert_eq!(flow.mismatched_bytes, 0);
}

#[test]
fn a_clean_link_carries_20mb_at_90_percent_of_its_rate_with_reno() {
    assert_clean_link_use("reno");
}

#[test]
fn a_clean_link_carries_20mb_at_90_percent_of_its_rate_with_cubic() {
    assert_clean_link_use("cubic");
}

#[test]
fn loss_verdicts_are_scored_against_ground_truth() {
    // The Veno paper's link (1.6 Mb/s, 120 ms RTT, 12-packet buffer) with 1%
    // random loss: Reno calls every loss congestive, Veno tells most random
    // losses apart. If the join broke, the matrix would be all zeros.
    let text = r#"
name = "verdicts"
[bottleneck.forward]
delay_ms = 60.0
rate_bps = 1_600_000
queue = { packets = 12 }
loss = 0.01
[bottleneck.reverse]
delay_ms = 60.0
rate_bps = 1_600_000
[[flow]]
cc = "reno"
bytes = 2_000_000
max_datagram_size = 1460
[[flow]]
cc = "veno"
bytes = 2_000_000
max_datagram_size = 1460
start_ms = 100_000
"#;
    let report = run(&Scenario::from_toml_str(text, "verdicts").unwrap());
    let reno = &report.flows[0].verdicts;
    let veno = &report.flows[1].verdicts;
    assert!(reno.random_as_congestive > 0, "{reno:?}");
    assert_eq!(
        reno.random_as_random + reno.congestive_as_random,
        0,
        "{reno:?}"
    );
    assert!(
        veno.random_as_random > veno.random_as_congestive,
        "{veno:?}"
    );
}

#[test]
fn the_same_seed_gives_a_byte_identical_report() {
    // Loss, corruption and a competing flow: every source of randomness in
    // play. Two runs with seed 1 must serialize identically; seed 2 differs.
    let text = r#"
name = "determinism"
[bottleneck]
forward = "delay 20ms rate 5mbit limit 30 loss 1% corrupt 1%"
reverse = "delay 20ms rate 5mbit"
[[flow]]
cc = "veno"
bytes = 500_000
[[flow]]
cc = "cubic"
bytes = 500_000
streams = 4
"#;
    let scenario = Scenario::from_toml_str(text, "determinism").unwrap();
    let json = |seed: u64| {
        let mut simulation = Simulation::new(&scenario, seed, Instant::now()).unwrap();
        simulation.run().unwrap();
        serde_json::to_string(&simulation.report()).unwrap()
    };
    let first = json(1);
    assert_eq!(first, json(1), "same seed, same bytes");
    assert_ne!(first, json(2), "another seed, another run");
}

/// A 2 MB upload over 50 Mb/s, 50 ms each way, whose links carry IP
/// packets of at most `mtu` bytes; the sender's stats.
fn upload_through_mtu(mtu: u32, pmtud: bool) -> crate::conn::Stats {
    let text = format!(
        r#"
name = "pmtu"
[bottleneck]
forward = "delay 50ms rate 50mbit limit 1000 mtu {mtu}"
reverse = "delay 50ms rate 50mbit mtu {mtu}"
[[flow]]
cc = "cubic"
bytes = 2_000_000
pmtud = {pmtud}
"#
    );
    let report = run(&Scenario::from_toml_str(&text, "pmtu").unwrap());
    let flow = &report.flows[0];
    assert_eq!(flow.bytes_received, 2_000_000, "{:?}", flow.error);
    assert_eq!(flow.mismatched_bytes, 0);
    flow.client_stats.clone()
}

#[test]
fn pmtud_settles_on_the_largest_datagram_a_1500_byte_path_carries() {
    // Ethernet hosts, a 1500-byte path: 1500 − 20 (IPv4) − 8 (UDP).
    let stats = upload_through_mtu(1500, true);
    assert_eq!(stats.max_datagram_size, 1472);
    assert_eq!(stats.pmtu_probes_lost, 0, "nothing above 1472 is tried");
}

#[test]
fn pmtud_finds_a_tunnels_smaller_mtu_without_a_loss_counted() {
    // A 1400-byte tunnel: 1372 passes, 1392 is lost three times.
    let stats = upload_through_mtu(1400, true);
    assert_eq!(stats.max_datagram_size, 1372);
    assert_eq!(stats.pmtu_probes_lost, 3);
    assert_eq!(stats.congestion_events, 0, "{stats:?}");
}

#[test]
fn without_pmtud_the_datagrams_stay_at_1350() {
    let stats = upload_through_mtu(1500, false);
    assert_eq!((stats.max_datagram_size, stats.pmtu_probes_sent), (1350, 0));
}
