//! Helpers shared by the simulator-driven integration tests: build a
//! scenario from TOML, run it with one seed, and read what a user would
//! look at (goodput, stalls) out of the report.

#![allow(dead_code)] // each test crate uses a different subset

use std::time::Instant;

use sift::sim::{FlowReport, RunReport, Scenario, Simulation, StopReason};

/// Parses a scenario written in the test; a typo is a test bug.
pub fn scenario(text: &str) -> Scenario {
    Scenario::from_toml_str(text, "test scenario").expect("the test's scenario is valid")
}

/// Runs `scenario` with `seed` to its end and hands back the finished
/// simulation (for ground truth and link counters beyond the report).
pub fn simulate(scenario: &Scenario, seed: u64) -> Simulation {
    let mut simulation =
        Simulation::new(scenario, seed, Instant::now()).expect("the scenario builds");
    simulation.run().expect("the run ends cleanly");
    simulation
}

/// Runs `scenario` with `seed` and returns its report.
pub fn run(scenario: &Scenario, seed: u64) -> RunReport {
    simulate(scenario, seed).report()
}

/// Asserts every flow of the run completed and delivered every byte as sent.
pub fn assert_all_complete_and_exact(report: &RunReport) {
    assert_eq!(
        report.stop_reason,
        Some(StopReason::AllFlowsCompleted),
        "flow errors: {:?}",
        report.flows.iter().map(|f| &f.error).collect::<Vec<_>>()
    );
    for flow in &report.flows {
        assert_eq!(
            flow.bytes_received, flow.bytes,
            "flow {} ({})",
            flow.id, flow.cc
        );
        assert_eq!(flow.mismatched_bytes, 0, "flow {} ({})", flow.id, flow.cc);
    }
}

/// The flow's goodput, in bits per second; panics if it did not complete.
pub fn goodput_bps(flow: &FlowReport) -> f64 {
    flow.goodput_bps.unwrap_or_else(|| {
        panic!(
            "flow {} ({}) did not complete: {} of {} bytes, error {:?}",
            flow.id, flow.cc, flow.bytes_received, flow.bytes, flow.error
        )
    })
}

/// Bits delivered per second until the flow completed or the run ended: the
/// goodput for a completed flow, and still a number for one that was cut off.
pub fn delivered_goodput_bps(flow: &FlowReport, run_end_s: f64) -> f64 {
    let seconds = flow.completion_s.unwrap_or(run_end_s - flow.start_s);
    if seconds > 0.0 {
        flow.bytes_received as f64 * 8.0 / seconds
    } else {
        0.0
    }
}

/// The longest stretch of the transfer in which the server application read
/// nothing new, in seconds, from the first byte read to the last: a stall
/// shows up here. (The handshake before the first byte is not counted: its
/// retries follow the initial PTO, not the transfer's recovery.)
pub fn longest_stall_s(flow: &FlowReport) -> f64 {
    let mut longest = 0.0f64;
    let mut last_progress: Option<(f64, u64)> = None;
    for sample in flow
        .timeseries
        .iter()
        .skip_while(|s| s.bytes_delivered == 0)
    {
        match last_progress {
            Some((t, bytes)) if sample.bytes_delivered == bytes => {
                longest = longest.max(sample.t_s - t);
            }
            _ => last_progress = Some((sample.t_s, sample.bytes_delivered)),
        }
        if sample.bytes_delivered >= flow.bytes {
            break;
        }
    }
    longest
}

/// The mean of `values`.
pub fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len().max(1) as f64
}
