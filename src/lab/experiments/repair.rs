//! Repair without a round trip (issue 57): erasure coding between sift
//! ends (`docs/repair.md`) against plain retransmission, over long and
//! short paths, random and bursty loss, small and bulk transfers.
//!
//! Parts:
//! - `targets`: the cells — 20 Mb/s, 300 ms each way, queue 1000,
//!   bbr: 1 MB at 2% and 5% loss and 100 kB at 5%, seeds 1–20, repair
//!   `off` and `auto`, each completion time over the same transfer on the
//!   loss-free path; a resumed 50 MB on 50 Mb/s, 300 ms each way, 1% loss
//!   (Careful Resume alone against Careful Resume with repair); and the
//!   no-cost check, 50 MB bulk on 50 Mb/s, 50 ms each way, 1% loss;
//! - `sweep`: RTT 20–600 ms, 0–5% random loss and Gilbert–Elliott bursts,
//!   100 kB and 1 MB, repair off / auto / on.
//!
//! Figures of merit: completion time over the loss-free path's (median,
//! 90th percentile, worst over the seeds), goodput over capacity·(1 − p)
//! for the bulk cells, and the bytes repair cost (REPAIR frames sent, as a
//! share of the transfer).

use std::fmt::Write;

use super::leaky_pipes::median;
use super::{cell, controller, flow, label, link, name_number, report_f64, report_str, scenario};
use crate::fec::policy::RepairMode;
use crate::lab::{Comparison, Experiment, Plan, Table};
use crate::sim::link::LinkConfig;
use crate::sim::scenario::FlowSpec;
use crate::sim::{FlowReport, Report, Scenario};

/// The experiment.
pub const EXPERIMENT: Experiment = Experiment {
    name: "repair",
    title: "Repair without a round trip: erasure coding against retransmission on long lossy paths",
    scenarios,
    compare,
};

/// Virtual seconds before a run is cut off.
const TIME_LIMIT_S: f64 = 600.0;
/// The targets: 90th percentile of completion over loss-free.
pub const TARGETS: [(&str, f64); 3] = [("1MB-2%", 1.05), ("1MB-5%", 1.1), ("100kB-5%", 1.1)];
/// A resumed 50 MB at 600 ms with 1% loss reaches this share of capacity·(1 − p).
pub const RESUMED_TARGET: f64 = 0.85;
/// Bulk goodput with `auto` at least this share of repair off's, where
/// repair does not pay.
pub const NO_COST_TARGET: f64 = 0.98;

/// One cell: the path and the transfer.
#[derive(Clone, Copy)]
struct Cell {
    part: &'static str,
    name: &'static str,
    one_way_ms: f64,
    rate_bps: u64,
    queue: usize,
    loss: Loss,
    bytes: u64,
    resumed: bool,
}

#[derive(Clone, Copy, PartialEq)]
enum Loss {
    Random(f64),
    /// Gilbert–Elliott bursts: netem's `loss gemodel p r` (about p/(p+r) of
    /// the packets lost, in bursts of 1/r on average).
    Bursts(f64, f64),
}

impl Loss {
    fn rate(self) -> f64 {
        match self {
            Loss::Random(p) => p,
            Loss::Bursts(p, r) => p / (p + r),
        }
    }

    fn label(self) -> String {
        match self {
            Loss::Random(p) => format!("{}%", p * 100.0),
            Loss::Bursts(p, r) => format!("ge {}% {}%", p * 100.0, r * 100.0),
        }
    }
}

fn forward(cell: &Cell) -> LinkConfig {
    match cell.loss {
        Loss::Random(p) => link(cell.one_way_ms, cell.rate_bps, cell.queue, p),
        Loss::Bursts(p, r) => {
            let spec = format!(
                "delay {}ms rate {}bit limit {} loss gemodel {}% {}%",
                cell.one_way_ms,
                cell.rate_bps,
                cell.queue,
                p * 100.0,
                r * 100.0
            );
            LinkConfig::from_netem(&spec).unwrap_or_else(|_| LinkConfig::ideal())
        }
    }
}

fn cells(plan: &Plan) -> Vec<Cell> {
    let target = |name, loss, bytes| Cell {
        part: "targets",
        name,
        one_way_ms: 300.0,
        rate_bps: 20_000_000,
        queue: 1000,
        loss: Loss::Random(loss),
        bytes,
        resumed: false,
    };
    let mut out = vec![
        target("1MB-0%", 0.0, 1_000_000),
        target("1MB-2%", 0.02, 1_000_000),
        target("1MB-5%", 0.05, 1_000_000),
        target("100kB-0%", 0.0, 100_000),
        target("100kB-5%", 0.05, 100_000),
    ];
    let bulk = plan.pick(50_000_000, 5_000_000);
    out.push(Cell {
        part: "targets",
        name: "resumed-50MB-600ms-1%",
        one_way_ms: 300.0,
        rate_bps: 50_000_000,
        queue: 2778,
        loss: Loss::Random(0.01),
        bytes: bulk,
        resumed: true,
    });
    out.push(Cell {
        part: "targets",
        name: "bulk-50MB-100ms-1%",
        one_way_ms: 50.0,
        rate_bps: 50_000_000,
        queue: 420,
        loss: Loss::Random(0.01),
        bytes: bulk,
        resumed: false,
    });
    if plan.quick {
        return out;
    }
    for one_way_ms in [10.0, 50.0, 150.0, 300.0] {
        for loss in [
            Loss::Random(0.0),
            Loss::Random(0.01),
            Loss::Random(0.05),
            Loss::Bursts(0.01, 0.3),
        ] {
            for bytes in [100_000, 1_000_000] {
                out.push(Cell {
                    part: "sweep",
                    name: "sweep",
                    one_way_ms,
                    rate_bps: 20_000_000,
                    queue: 1000,
                    loss,
                    bytes,
                    resumed: false,
                });
            }
        }
    }
    out
}

fn modes(cell: &Cell) -> Vec<RepairMode> {
    if cell.part == "sweep" {
        vec![RepairMode::Off, RepairMode::Auto, RepairMode::On]
    } else {
        vec![RepairMode::Off, RepairMode::Auto]
    }
}

fn flows(cell: &Cell, mode: RepairMode) -> Vec<FlowSpec> {
    let Some(cc) = controller("bbr") else {
        return Vec::new();
    };
    let mut first = flow(cc.clone(), cell.bytes);
    first.repair = mode;
    if !cell.resumed {
        return vec![first];
    }
    let mut second = flow(cc, cell.bytes);
    second.after_flow = Some(0);
    second.resume_path = true;
    second.repair = mode;
    vec![first, second]
}

/// Every scenario.
pub fn scenarios(plan: &Plan) -> Vec<Scenario> {
    let mut out = Vec::new();
    for cell in cells(plan) {
        let seeds = match (cell.part, cell.bytes > 10_000_000) {
            (_, true) => plan.seeds(plan.pick(3, 1)),
            ("targets", false) => plan.seeds(plan.pick(20, 3)),
            _ => plan.seeds(plan.pick(5, 1)),
        };
        for mode in modes(&cell) {
            let rtt = (cell.one_way_ms * 2.0) as u64;
            let mut s = scenario(
                format!(
                    "{}-{}-rtt-{rtt}-loss-{}-{}-{}",
                    cell.part,
                    cell.name.replace('%', "pct"),
                    name_number(cell.loss.rate()),
                    if matches!(cell.loss, Loss::Bursts(..)) {
                        "ge"
                    } else {
                        "random"
                    },
                    cell.bytes
                ) + &format!("-{mode}"),
                seeds.clone(),
                TIME_LIMIT_S,
                forward(&cell),
                link(cell.one_way_ms, cell.rate_bps, cell.queue, 0.0),
                flows(&cell, mode),
            );
            label(&mut s, "part", cell.part);
            label(&mut s, "cell", cell.name);
            label(&mut s, "rtt_ms", rtt as f64);
            label(&mut s, "loss", cell.loss.label());
            label(&mut s, "loss_rate", cell.loss.rate());
            label(&mut s, "bytes", cell.bytes as f64);
            label(&mut s, "rate_bps", cell.rate_bps as f64);
            label(&mut s, "repair", mode.to_string());
            out.push(s);
        }
    }
    out
}

/// The flow whose transfer the cell measures: the second of a resumed pair.
fn measured(run: &crate::sim::RunReport) -> Option<&FlowReport> {
    run.flows.last()
}

/// Completion times (s) of the measured flow over the seeds; `inf` for a
/// run that did not complete.
fn completions(report: &Report) -> Vec<f64> {
    report
        .runs
        .iter()
        .map(|run| {
            measured(run)
                .and_then(|f| f.completion_s)
                .unwrap_or(f64::INFINITY)
        })
        .collect()
}

/// REPAIR bytes the measured flow's sender spent, as a share of its bytes.
fn repair_share(report: &Report) -> Option<f64> {
    let shares: Vec<f64> = report
        .runs
        .iter()
        .filter_map(measured)
        .map(|f| f.client_stats.repair.repair_bytes_sent as f64 / f.bytes.max(1) as f64)
        .collect();
    median(&shares)
}

/// Goodput over capacity·(1 − p) of the measured flow, median over seeds.
fn capacity_share(report: &Report) -> Option<f64> {
    let rate = report_f64(report, "rate_bps")?;
    let p = report_f64(report, "loss_rate")?;
    let shares: Vec<f64> = report
        .runs
        .iter()
        .filter_map(measured)
        .filter_map(|f| Some(f.goodput_bps? / (rate * (1.0 - p))))
        .collect();
    median(&shares)
}

/// The value at fraction `q` of the sorted `values` (nearest rank).
fn percentile(values: &[f64], q: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[rank - 1])
}

fn find<'a>(reports: &'a [Report], matches: &dyn Fn(&Report) -> bool) -> Option<&'a Report> {
    reports.iter().find(|r| matches(r))
}

fn same_path(a: &Report, b: &Report) -> bool {
    ["part", "rtt_ms", "bytes"]
        .iter()
        .all(|k| report_f64(a, k) == report_f64(b, k) && report_str(a, k) == report_str(b, k))
}

/// The loss-free median completion of the path and transfer of `report`.
fn loss_free(reports: &[Report], report: &Report) -> Option<f64> {
    let base = find(reports, &|r| {
        same_path(r, report)
            && report_f64(r, "loss_rate") == Some(0.0)
            && report_str(r, "repair") == Some("off")
    })?;
    median(&completions(base))
}

/// The cells, then the sweep.
pub fn compare(reports: &[Report]) -> Comparison {
    let mut targets = Table::new(
        "targets",
        &[
            "cell",
            "repair",
            "median",
            "p90",
            "worst",
            "target p90",
            "met",
            "repair bytes",
        ],
    );
    for report in reports
        .iter()
        .filter(|r| report_str(r, "part") == Some("targets"))
    {
        let cell_name = report_str(report, "cell").unwrap_or("");
        if cell_name.contains("50MB") {
            continue;
        }
        let Some(base) = loss_free(reports, report) else {
            continue;
        };
        let ratios: Vec<f64> = completions(report).iter().map(|c| c / base).collect();
        let target = TARGETS.iter().find(|(n, _)| *n == cell_name).map(|t| t.1);
        let p90 = percentile(&ratios, 0.9);
        let repair = report_str(report, "repair").unwrap_or("");
        targets.push(vec![
            cell_name.to_string(),
            repair.to_string(),
            cell(median(&ratios), 3),
            cell(p90, 3),
            cell(percentile(&ratios, 1.0), 3),
            cell(target, 2),
            match (target, p90, repair) {
                (Some(t), Some(v), "auto") => if v <= t { "yes" } else { "no" }.to_string(),
                _ => String::new(),
            },
            cell(repair_share(report).map(|s| s * 100.0), 1) + "%",
        ]);
    }
    let mut bulk = Table::new(
        "bulk",
        &[
            "cell",
            "repair",
            "goodput / capacity·(1−p)",
            "auto / off",
            "target",
            "repair bytes",
        ],
    );
    for name in ["resumed-50MB-600ms-1%", "bulk-50MB-100ms-1%"] {
        let off = find(reports, &|r| {
            report_str(r, "cell") == Some(name) && report_str(r, "repair") == Some("off")
        });
        for report in reports
            .iter()
            .filter(|r| report_str(r, "cell") == Some(name))
        {
            let share = capacity_share(report);
            let against_off = off.and_then(capacity_share).zip(share).map(|(o, s)| s / o);
            let target = if name.starts_with("resumed") {
                format!("≥ {RESUMED_TARGET} of capacity")
            } else {
                format!("auto ≥ {NO_COST_TARGET}× off")
            };
            bulk.push(vec![
                name.to_string(),
                report_str(report, "repair").unwrap_or("").to_string(),
                cell(share, 3),
                cell(against_off, 3),
                target,
                cell(repair_share(report).map(|s| s * 100.0), 2) + "%",
            ]);
        }
    }
    let mut sweep = Table::new(
        "sweep",
        &[
            "rtt ms",
            "loss",
            "bytes",
            "repair",
            "median",
            "p90",
            "repair bytes",
        ],
    );
    for report in reports
        .iter()
        .filter(|r| report_str(r, "part") == Some("sweep"))
    {
        let Some(base) = loss_free(reports, report) else {
            continue;
        };
        let ratios: Vec<f64> = completions(report).iter().map(|c| c / base).collect();
        sweep.push(vec![
            cell(report_f64(report, "rtt_ms"), 0),
            report_str(report, "loss").unwrap_or("").to_string(),
            cell(report_f64(report, "bytes"), 0),
            report_str(report, "repair").unwrap_or("").to_string(),
            cell(median(&ratios), 3),
            cell(percentile(&ratios, 0.9), 3),
            cell(repair_share(report).map(|s| s * 100.0), 1) + "%",
        ]);
    }
    let mut md = String::new();
    let _ = writeln!(
        md,
        "Completion time over the same transfer on the loss-free path (median, 90th \
         percentile, worst over the seeds), bbr, repair `off` (plain retransmission) and \
         `auto` (sift's default); repair bytes are REPAIR frames sent as a share of the \
         transfer.\n"
    );
    md.push_str(&targets.to_markdown());
    md.push_str("\n### Bulk transfers\n\n");
    md.push_str(&bulk.to_markdown());
    if !sweep.rows.is_empty() {
        md.push_str("\n### Sweep (20 Mb/s, queue 1000)\n\n");
        md.push_str(&sweep.to_markdown());
    }
    md.push('\n');
    md.push_str(&super::incomplete_note(reports));
    Comparison {
        markdown: md,
        tables: vec![targets, bulk, sweep],
        figures: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plan_has_every_target_cell_with_and_without_repair() {
        let quick = scenarios(&Plan {
            quick: true,
            seeds: None,
        });
        for name in ["1MB-2%", "1MB-5%", "100kB-5%", "resumed-50MB-600ms-1%"] {
            for mode in ["off", "auto"] {
                assert!(
                    quick
                        .iter()
                        .any(
                            |s| s.params.get("cell").and_then(|v| v.as_str()) == Some(name)
                                && s.params.get("repair").and_then(|v| v.as_str()) == Some(mode)
                        ),
                    "{name} {mode}"
                );
            }
        }
        let resumed = quick
            .iter()
            .find(|s| s.name.contains("resumed"))
            .expect("the resumed cell");
        assert_eq!(resumed.flows[1].after_flow, Some(0));
        assert!(resumed.flows[1].resume_path);
        let full = scenarios(&Plan {
            quick: false,
            seeds: None,
        });
        assert!(full.len() > quick.len());
        assert!(full.iter().any(|s| s.name.contains("-ge-")));
    }

    #[test]
    fn percentiles_take_the_nearest_rank() {
        let values: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(percentile(&values, 0.9), Some(18.0));
        assert_eq!(percentile(&values, 1.0), Some(20.0));
        assert_eq!(percentile(&[], 0.9), None);
    }
}
