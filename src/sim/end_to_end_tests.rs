//! End-to-end transfers over the real `Connection` on simulated links. They
//! wait for the connection state machine (today's `Connection` is a skeleton
//! that never sends); the lead enables them by removing the `#[ignore]`s.

use std::time::Instant;

use super::report::{RunReport, StopReason};
use super::scenario::Scenario;
use super::world::Simulation;

/// 10 Mb/s, 25 ms each way (50 ms RTT), a 50-packet drop-tail queue and 1%
/// random loss on the data direction: the brief's reference lossy path.
fn lossy_10mbit(streams: u64) -> Scenario {
    let text = format!(
        r#"
name = "lossy-10mbit-{streams}-streams"
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
cc = "reno"
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

fn assert_byte_exact_completion(streams: u64) {
    let report = run(&lossy_10mbit(streams));
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
#[ignore = "needs the Connection state machine"]
fn reno_moves_10mb_over_a_lossy_10mbit_path_on_one_stream() {
    assert_byte_exact_completion(1);
}

#[test]
#[ignore = "needs the Connection state machine"]
fn reno_moves_10mb_over_a_lossy_10mbit_path_on_4_streams() {
    assert_byte_exact_completion(4);
}

#[test]
#[ignore = "needs the Connection state machine"]
fn reno_moves_10mb_over_a_lossy_10mbit_path_on_16_streams() {
    assert_byte_exact_completion(16);
}

#[test]
#[ignore = "needs the Connection state machine"]
fn a_clean_link_carries_20mb_at_90_percent_of_its_rate() {
    let mut scenario = lossy_10mbit(1);
    scenario.name = "clean-10mbit".into();
    scenario.bottleneck.forward.loss = 0.0;
    scenario.flows[0].bytes = 20_000_000;
    let report = run(&scenario);
    let flow = &report.flows[0];
    // 20 MB at 10 Mb/s takes 16 s on the wire; 90% of the rate is 9 Mb/s.
    let goodput = flow.goodput_bps.expect("the transfer completes");
    assert!(goodput >= 0.9 * 10_000_000.0, "goodput {goodput} b/s");
    assert_eq!(flow.bytes_received, 20_000_000);
    assert_eq!(flow.mismatched_bytes, 0);
}
