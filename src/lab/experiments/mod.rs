//! The seed papers' experiments, one file per paper (DESIGN §10). Each
//! file holds a named [`Experiment`]: a builder that lays out the paper's
//! topology and parameters as scenarios (scaled by a [`Plan`](crate::lab::Plan)), and a
//! comparison that puts our numbers next to the numbers the paper prints,
//! with every difference and its reason.
//!
//! This module owns the experiment definitions and the builders they share;
//! it must not hold simulation logic (that is `sim`) or read any clock.
//!
//! The 2002 testbeds ran classic TCP. Each experiment states which of
//! sift's RFC 9002 defaults it turns back (`classic_recovery`, the paper's
//! initial window, `classic_slow_start`) and why, in its summary. Every
//! paper experiment runs classic slow start: HyStart++ (RFC 9406, sift's
//! default for the loss-based controllers) did not exist in the papers'
//! stacks, and their numbers are about what a loss does to the window.

use std::collections::BTreeMap;
use std::time::Duration;

use sift_cc::{
    BbrConfig, CcConfig, CubicConfig, PragueConfig, QueueEstimate, RenoConfig, VegasConfig,
    VenoConfig, WestwoodAConfig, WestwoodConfig,
};

use super::Experiment;
use crate::recovery::{RecoveryConfig, SlowStartPacing, TimeoutMode};
use crate::sim::link::{LinkConfig, LossModel, QueueLimit};
use crate::sim::scenario::{Bottleneck, FlowSpec};
use crate::sim::{Report, RunReport, Scenario};

pub mod cellular;
pub mod ecn;
pub mod hack;
pub mod leaky_pipes;
pub mod long_paths;
pub mod reordering;
pub mod repair;
pub mod vegas_factorial;
pub mod veno_classification;
pub mod veno_coexistence;
pub mod veno_enhanced;
pub mod veno_ns3;
pub mod veno_throughput;
pub mod westwood;

/// Every experiment, in the order `sift-lab list` shows them: the papers',
/// then sift's own (`reordering`, issue 18; `leaky-pipes`, issue 12;
/// `veno-ns3` and `cellular`, issue 36; `long-paths`, issue 34; `ecn`,
/// issue 55).
pub const ALL: [Experiment; 14] = [
    veno_throughput::EXPERIMENT,
    veno_classification::EXPERIMENT,
    veno_coexistence::EXPERIMENT,
    veno_enhanced::EXPERIMENT,
    westwood::EXPERIMENT,
    hack::EXPERIMENT,
    vegas_factorial::EXPERIMENT,
    reordering::EXPERIMENT,
    leaky_pipes::EXPERIMENT,
    veno_ns3::EXPERIMENT,
    cellular::EXPERIMENT,
    long_paths::EXPERIMENT,
    ecn::EXPERIMENT,
    repair::EXPERIMENT,
];

/// The experiment named `name`.
pub fn find(name: &str) -> Option<&'static Experiment> {
    ALL.iter().find(|experiment| experiment.name == name)
}

/// Classic TCP loss recovery, as the 2002 testbeds ran it: a timeout
/// declares everything outstanding lost and collapses the window (RFC 6298
/// / RFC 5681 §3.1, sift's `timeout = "rto"`), no pacing (2002 stacks sent
/// ack-clocked bursts), fixed loss thresholds and no undo of spurious
/// congestion responses. None of the papers' stacks adapted to reordering
/// or undid a cut: NetBSD 1.1 (Veno), ns-2's TCP agents (Enhanced Veno,
/// Westwood), x-sim's BSD Reno (Vegas) and Linux 2.2.10 (HACK) predate
/// RACK (2016) and Linux's undo (2.4), so every paper experiment runs with
/// `adaptive_reordering` and `undo_spurious_congestion` off.
pub fn classic_recovery() -> RecoveryConfig {
    RecoveryConfig {
        timeout: TimeoutMode::Rto,
        pacing: false,
        // Unpaced anyway; pinned so the default cannot reach the papers.
        slow_start_pacing: SlowStartPacing::Off,
        adaptive_reordering: false,
        undo_spurious_congestion: false,
        resend_crypto_on_peer_probe: false,
        ..RecoveryConfig::default()
    }
}

/// Controller `name` with its paper defaults; `None` for a name sift does
/// not have.
pub fn controller(name: &str) -> Option<CcConfig> {
    Some(match name {
        "reno" => CcConfig::Reno(RenoConfig::default()),
        "cubic" => CcConfig::Cubic(CubicConfig::default()),
        "vegas" => CcConfig::Vegas(VegasConfig::default()),
        "veno" => CcConfig::Veno(VenoConfig::default()),
        "veno-enhanced" => CcConfig::VenoEnhanced(VenoConfig::default()),
        "westwood" => CcConfig::Westwood(WestwoodConfig::default()),
        "westwood-a" => CcConfig::WestwoodA(WestwoodAConfig::default()),
        "bbr" => CcConfig::Bbr(BbrConfig::default()),
        "prague" => CcConfig::Prague(PragueConfig::default()),
        _ => return None,
    })
}

/// The controllers the experiments on dropping queues compare: every one
/// but Prague, whose scalable response needs a bottleneck that marks ECN
/// (`sift-lab ecn`); where the queue drops it is Reno's halving without
/// HyStart++, and it would only lengthen those runs.
pub fn drop_tail_controllers() -> Vec<&'static str> {
    CcConfig::NAMES
        .iter()
        .copied()
        .filter(|&name| name != "prague")
        .collect()
}

/// `cc` starting from `initial` packets and restarting from `after_timeout`
/// packets after a timeout (CUBIC and BBR have no timeout window of their
/// own).
pub fn with_windows(mut cc: CcConfig, initial: u64, after_timeout: u64) -> CcConfig {
    match &mut cc {
        CcConfig::Reno(c) => {
            c.initial_window_packets = initial;
            c.timeout_window_packets = after_timeout;
        }
        CcConfig::Cubic(c) => c.initial_window_packets = initial,
        CcConfig::Westwood(c) => {
            c.initial_window_packets = initial;
            c.timeout_window_packets = after_timeout;
        }
        CcConfig::Vegas(c) => {
            c.initial_window_packets = initial;
            c.timeout_window_packets = after_timeout;
        }
        CcConfig::Veno(c) | CcConfig::VenoEnhanced(c) => {
            c.initial_window_packets = initial;
            c.timeout_window_packets = after_timeout;
        }
        CcConfig::WestwoodA(c) => {
            c.initial_window_packets = initial;
            c.timeout_window_packets = after_timeout;
        }
        // BBR has no timeout window: an RTO leaves room for one packet.
        CcConfig::Bbr(c) => c.initial_window_packets = initial,
        CcConfig::Prague(c) => {
            c.initial_window_packets = initial;
            c.timeout_window_packets = after_timeout;
        }
    }
    cc
}

/// `cc` with classic slow start (RFC 5681: until the first loss) instead of
/// HyStart++, as the papers' stacks ran it. Controllers without HyStart++
/// (Vegas, Westwood-A) are returned unchanged.
pub fn classic_slow_start(mut cc: CcConfig) -> CcConfig {
    match &mut cc {
        CcConfig::Reno(c) => c.hystart = false,
        CcConfig::Cubic(c) => c.hystart = false,
        CcConfig::Westwood(c) => c.hystart = false,
        CcConfig::Veno(c) | CcConfig::VenoEnhanced(c) => c.hystart = false,
        CcConfig::Vegas(_) | CcConfig::WestwoodA(_) | CcConfig::Bbr(_) | CcConfig::Prague(_) => {}
    }
    cc
}

/// `cc` with the papers' own estimators where sift's defaults depart from
/// them: Veno's and Enhanced Veno's N from the smoothed RTT, Vegas's diff
/// from the round's mean RTT (`QueueEstimate::Paper`), instead of the
/// jitter-robust round minimum. Every paper experiment runs through it;
/// other controllers are returned unchanged.
pub fn paper_estimators(mut cc: CcConfig) -> CcConfig {
    match &mut cc {
        CcConfig::Veno(c) | CcConfig::VenoEnhanced(c) => c.queue_estimate = QueueEstimate::Paper,
        CcConfig::Vegas(c) => c.queue_estimate = QueueEstimate::Paper,
        _ => {}
    }
    cc
}

/// `cc` as the papers' stacks ran it: classic slow start and the papers'
/// estimators (`classic_slow_start`, `paper_estimators`).
pub fn paper_stack(cc: CcConfig) -> CcConfig {
    paper_estimators(classic_slow_start(cc))
}

/// One link direction: `delay_ms` of propagation, serialised at `rate_bps`
/// behind a drop-tail queue of `queue_packets`, losing packets at random
/// with probability `loss`.
pub fn link(delay_ms: f64, rate_bps: u64, queue_packets: usize, loss: f64) -> LinkConfig {
    LinkConfig {
        delay_ms: Duration::from_secs_f64(delay_ms.max(0.0) / 1e3),
        rate_bps: Some(rate_bps.max(1)),
        queue: QueueLimit::Packets(queue_packets.max(1)),
        loss: LossModel::bernoulli(loss),
        ..LinkConfig::ideal()
    }
}

/// A transfer of `bytes` under `cc`, with sift's defaults otherwise.
pub fn flow(cc: CcConfig, bytes: u64) -> FlowSpec {
    FlowSpec {
        cc,
        bytes,
        streams: 1,
        corruption_notices: true,
        start_ms: 0.0,
        count: 1,
        access_delay_ms: 0.0,
        max_datagram_size: None,
        pmtud: true,
        recovery: RecoveryConfig::default(),
        idle_timeout_s: None,
        protection: crate::sim::scenario::simulated_protection(),
        key_update_interval: None,
        repair_damaged_headers: true,
        lying_receiver: crate::conn::ReceiverLie::Honest,
        rebind_at_ms: None,
        new_address_at_ms: None,
        new_path: None,
        after_flow: None,
        resume_path: false,
        careful_resume: true,
        careful_resume_config: None,
        // The papers ran no ECN; `sift-lab ecn` turns it on per flow.
        ecn: false,
        // Nor erasure coding; `sift-lab repair` turns it on.
        repair: crate::fec::policy::RepairMode::Off,
    }
}

/// A scenario with the given bottleneck, flows and seeds.
pub fn scenario(
    name: String,
    seeds: Vec<u64>,
    time_limit_s: f64,
    forward: LinkConfig,
    reverse: LinkConfig,
    flows: Vec<FlowSpec>,
) -> Scenario {
    Scenario {
        name,
        seeds,
        time_limit_s,
        sample_interval_ms: crate::sim::scenario::DEFAULT_SAMPLE_INTERVAL_MS,
        bottleneck: Bottleneck { forward, reverse },
        flows,
        cbr: Vec::new(),
        params: BTreeMap::new(),
    }
}

/// Adds the label `key = value` to the scenario's params (copied into every
/// run's report, where `compare` finds it).
pub fn label(scenario: &mut Scenario, key: &str, value: impl Into<serde_json::Value>) {
    scenario.params.insert(key.to_string(), value.into());
}

/// The label `key` of a run, as a number.
pub fn param_f64(run: &RunReport, key: &str) -> Option<f64> {
    run.params.get(key)?.as_f64()
}

/// The label `key` of a run, as text.
pub fn param_str<'a>(run: &'a RunReport, key: &str) -> Option<&'a str> {
    run.params.get(key)?.as_str()
}

/// The label `key` of a report's scenario (read from its first run).
pub fn report_f64(report: &Report, key: &str) -> Option<f64> {
    param_f64(report.runs.first()?, key)
}

/// The label `key` of a report's scenario, as text.
pub fn report_str<'a>(report: &'a Report, key: &str) -> Option<&'a str> {
    param_str(report.runs.first()?, key)
}

/// Bits per second as kilobytes (1000 B) per second, the papers' unit.
pub fn kilobytes_per_s(bits_per_s: f64) -> f64 {
    bits_per_s / 8e3
}

/// A number with `decimals` places, or "—" for none.
pub fn cell(value: Option<f64>, decimals: usize) -> String {
    match value {
        Some(v) if v.is_finite() => format!("{v:.decimals$}"),
        _ => "—".to_string(),
    }
}

/// A ratio a/b as "1.80×", or "—" when it is undefined.
pub fn ratio_cell(numerator: Option<f64>, denominator: Option<f64>) -> String {
    match (numerator, denominator) {
        (Some(a), Some(b)) if b > 0.0 && a.is_finite() => format!("{:.2}×", a / b),
        _ => "—".to_string(),
    }
}

/// A number for scenario names: `0.01` → `0.01`, `1e-4` → `0.0001`.
pub fn name_number(value: f64) -> String {
    let text = format!("{value}");
    text.replace('-', "m")
}

/// How many flows of a report's runs did not complete, as a sentence for a
/// summary, or empty when all did.
pub fn incomplete_note(reports: &[Report]) -> String {
    let (mut incomplete, mut total) = (0usize, 0usize);
    for run in reports.iter().flat_map(|r| &r.runs) {
        for flow in &run.flows {
            total += 1;
            if flow.completion_s.is_none() {
                incomplete += 1;
            }
        }
    }
    if incomplete == 0 {
        String::new()
    } else {
        format!(
            "\n{incomplete} of {total} transfers did not complete (time limit, or the connection \
             closed after a long silence); they count by the bytes they delivered before the run \
             ended (`delivered goodput`).\n"
        )
    }
}

#[cfg(test)]
mod tests;
