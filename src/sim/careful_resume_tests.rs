//! Careful Resume (RFC 9959) end to end on the simulator: a second
//! connection on a satellite-like path resumes from what the first one's
//! sender saw, and retreats when the path lost capacity in between.

use std::time::Instant;

use sift_cc::CarefulResumePhase;

use super::report::{FlowReport, RunReport, StopReason};
use super::scenario::Scenario;
use super::world::Simulation;

/// 20 Mb/s, 150 ms each way (300 ms RTT), a drop-tail queue of `queue`
/// packets (555 of 1350 bytes are one BDP), no random loss; `rate_steps`
/// may change the data direction later. Flow 0 moves 10 MB; flow 1 moves 10 MB once flow 0 is done and
/// not before `second_start_ms`, resuming from flow 0's path state when
/// `resume` is set.
fn two_connections(
    cc: &str,
    resume: bool,
    queue: usize,
    forward_extra: &str,
    second_start_ms: u64,
) -> Scenario {
    two_connections_with(cc, resume, queue, forward_extra, second_start_ms, "")
}

/// [`two_connections`] whose second flow carries `flow_extra` (e.g. its
/// `careful_resume_config`).
fn two_connections_with(
    cc: &str,
    resume: bool,
    queue: usize,
    forward_extra: &str,
    second_start_ms: u64,
    flow_extra: &str,
) -> Scenario {
    let text = format!(
        r#"
name = "careful-resume-{cc}"
time_limit_s = 300
sample_interval_ms = 100
[bottleneck.forward]
delay_ms = 150.0
rate_bps = 20_000_000
queue = {{ packets = {queue} }}
{forward_extra}
[bottleneck.reverse]
delay_ms = 150.0
rate_bps = 20_000_000
[[flow]]
cc = "{cc}"
bytes = 10_000_000
[[flow]]
cc = "{cc}"
bytes = 10_000_000
after_flow = 0
start_ms = {second_start_ms}
resume_path = {resume}
{flow_extra}
"#
    );
    Scenario::from_toml_str(&text, "careful-resume").expect("a valid scenario")
}

fn run(scenario: &Scenario) -> RunReport {
    let mut simulation = Simulation::new(scenario, 1, Instant::now()).expect("a valid scenario");
    simulation.run().expect("the run ends cleanly");
    simulation.report()
}

fn completed(report: &RunReport) -> &FlowReport {
    assert_eq!(report.stop_reason, Some(StopReason::AllFlowsCompleted));
    let second = &report.flows[1];
    assert_eq!(second.bytes_received, 10_000_000);
    assert_eq!(second.mismatched_bytes, 0, "every byte arrives as sent");
    second
}

#[test]
fn a_resumed_connection_reaches_half_the_saved_window_within_three_rtts() {
    let report = run(&two_connections("reno", true, 555, "", 0));
    let second = completed(&report);
    let status = second
        .client_stats
        .careful_resume
        .expect("the second connection resumed");
    assert!(status.jumped && !status.retreated, "{status:?}");
    assert_eq!(status.phase, CarefulResumePhase::Normal);
    // The first connection's sender saw (about) the path's BDP: 20 Mb/s ·
    // 300 ms = 750 kB, less than two of it.
    assert!(
        (500_000..1_500_000).contains(&status.saved_cwnd),
        "{status:?}"
    );
    // Within three RTTs (900 ms) of its start the window holds the jump,
    // saved_cwnd/2, where slow start from 10 packets would need ~5 RTTs.
    let start = second.start_s;
    let reached = second
        .timeseries
        .iter()
        .find(|s| s.cwnd >= status.saved_cwnd / 2)
        .map(|s| s.t_s - start);
    assert!(reached.is_some_and(|t| t <= 0.9), "reached at {reached:?}");
    // And the transfer is faster than the same connection without it.
    let fresh = run(&two_connections("reno", false, 555, "", 0));
    let fresh_second = completed(&fresh);
    assert!(fresh_second.client_stats.careful_resume.is_none());
    assert!(
        second.completion_s.unwrap() < fresh_second.completion_s.unwrap(),
        "resumed {:?} s, fresh {:?} s",
        second.completion_s,
        fresh_second.completion_s
    );
}

#[test]
fn a_resumed_connection_retreats_when_the_path_lost_capacity() {
    // The data direction drops to 5 Mb/s at 40 s, before the second
    // connection starts at 41 s: the jump (half of ~750 kB paced over 300
    // ms, 10 Mb/s) is twice what the path now carries, and the 100-packet
    // queue (0.2 s at 5 Mb/s) cannot hide it.
    let steps = "rate_steps = [{ rate_bps = 20_000_000, duration_ms = 40_000 }, \
                 { rate_bps = 5_000_000, duration_ms = 10_000_000 }]";
    let report = run(&two_connections("reno", true, 100, steps, 41_000));
    assert!(report.flows[0].completion_s.unwrap() < 40.0);
    let second = completed(&report);
    let status = second.client_stats.careful_resume.expect("resumed");
    assert!(status.jumped && status.retreated, "{status:?}");
    assert_eq!(status.phase, CarefulResumePhase::Normal);
}

#[test]
fn bbr_resumed_under_the_rfc_letter_builds_a_deeper_queue_than_the_saved_rate_exit() {
    // BBR left in Startup after the jump paces at 2.77 times its estimate
    // until its three-round plateau test ends it, and queues what the
    // path cannot carry; ending Startup at the saved rate (the default)
    // queues less. The peak smoothed RTT of the second connection shows it.
    let peak_srtt_ms = |flow_extra: &str| {
        let report = run(&two_connections_with("bbr", true, 555, "", 0, flow_extra));
        let second = completed(&report);
        assert!(second.client_stats.careful_resume.expect("resumed").jumped);
        second
            .timeseries
            .iter()
            .map(|s| s.srtt_ms)
            .fold(0.0, f64::max)
    };
    let default = peak_srtt_ms("");
    let letter = peak_srtt_ms("careful_resume_config = { startup_exit_at_saved_rate = false }");
    assert!(
        default + 10.0 < letter,
        "peak srtt: default {default} ms, RFC letter {letter} ms"
    );
}

/// The path of [`two_connections`] halved at 30 s, with a CUBIC flow that
/// joins at 10 s and keeps its 555-packet queue full; the second
/// connection (2 MB, resuming) starts at 40 s with `flow_extra`.
fn behind_a_full_queue(flow_extra: &str) -> RunReport {
    let text = format!(
        r#"
name = "careful-resume-behind-a-full-queue"
time_limit_s = 70
sample_interval_ms = 100
[bottleneck.forward]
delay_ms = 150.0
rate_bps = 20_000_000
queue = {{ packets = 555 }}
rate_steps = [{{ rate_bps = 20_000_000, duration_ms = 30_000 }}, {{ rate_bps = 10_000_000, duration_ms = 10_000_000 }}]
[bottleneck.reverse]
delay_ms = 150.0
rate_bps = 20_000_000
[[flow]]
cc = "cubic"
bytes = 10_000_000
[[flow]]
cc = "cubic"
bytes = 2_000_000
after_flow = 0
start_ms = 40_000
resume_path = true
{flow_extra}
[[flow]]
cc = "cubic"
bytes = 1_000_000_000_000
start_ms = 10_000
"#
    );
    let scenario = Scenario::from_toml_str(&text, "careful-resume").expect("a valid scenario");
    run(&scenario)
}

#[test]
fn a_resumed_connection_does_not_jump_into_a_queue_another_flow_keeps_full() {
    // The competitor's queue shows in the handshake's RTT (well above twice
    // the saved 300 ms): the path is not the one that was saved, and the
    // connection starts as a fresh one would.
    let report = behind_a_full_queue("");
    let second = &report.flows[1];
    assert_eq!(second.bytes_received, 2_000_000);
    let status = second.client_stats.careful_resume.expect("resumed");
    assert!(!status.jumped && !status.retreated, "{status:?}");
    // Under RFC 9959's letter (an RTT up to ten times the saved one
    // confirms the path; the jump need not wait for the initial window)
    // it jumps into that queue and loses more.
    let letter = behind_a_full_queue(
        "careful_resume_config = { rtt_upper_factor = 10, jump_after_reconnaissance_acked = false }",
    );
    let letter_second = &letter.flows[1];
    assert!(
        letter_second
            .client_stats
            .careful_resume
            .expect("resumed")
            .jumped,
        "{:?}",
        letter_second.client_stats.careful_resume
    );
    assert!(
        letter_second.client_stats.packets_lost > second.client_stats.packets_lost,
        "lost: RFC letter {}, default {}",
        letter_second.client_stats.packets_lost,
        second.client_stats.packets_lost
    );
}
