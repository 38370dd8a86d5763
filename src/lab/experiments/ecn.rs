//! ECN and L4S (issue 55): what each controller makes of a bottleneck that
//! marks instead of dropping, when the link also loses packets at random.
//!
//! One 50 Mb/s bottleneck (queue limit 420 packets) managed by one of two
//! AQMs, in tc's words:
//!
//! - `codel`: CoDel with `ecn` and tc's defaults (target 5 ms, interval
//!   100 ms), the fq_codel of home routers without the flow queues;
//! - `dualpi2`: DualPI2 (RFC 9332) with tc's defaults, ECT(1) packets in the
//!   L4S queue marked from a 1 ms step, the classic queue under PI².
//!
//! Random loss (netem `loss`, which drops whatever the codepoint) is swept
//! over 0–2% at a 100 ms round trip and the round trip over 20–600 ms at
//! 1%. Every controller runs with ECN on (the transport's default), each
//! loss-differentiating one also as `NAME-ecn` (a loss with no CE mark in
//! its round is judged random once ECN is validated), and CUBIC once more
//! with ECN off, the loss-only baseline. The figures of merit are goodput /
//! (capacity·(1 − p)) and the forward queue's delay percentiles.
//!
//! A second part shares the bottleneck for 60 s: Prague (ECT(1)) beside
//! CUBIC (ECT(0)) in DualPI2, the coexistence DualPI2's coupling exists for;
//! and an ECN CUBIC beside a loss-only CUBIC in the CoDel queue.
//!
//! sift's defaults throughout (RFC 9002 recovery with pacing, HyStart++):
//! no paper ran ECN, so nothing is turned back.

use std::fmt::Write;

use super::leaky_pipes::median;
use super::{
    cell, flow, label, name_number, param_f64, param_str, report_f64, report_str, scenario,
};
use crate::lab::metrics::{jain_fairness_index, run_goodputs_bps, window_goodput_bps};
use crate::lab::{Comparison, Experiment, Figure, Plan, Series, Table};
use crate::sim::link::LinkConfig;
use crate::sim::{Report, RunReport, Scenario};
use sift_cc::CcConfig;

/// The experiment.
pub const EXPERIMENT: Experiment = Experiment {
    name: "ecn",
    title: "ECN and L4S: every controller on CoDel-ECN and DualPI2 bottlenecks with 0–2% random loss and 20–600 ms",
    scenarios,
    compare,
};

/// The bottleneck rate (issue 55).
pub const RATE_BPS: u64 = 50_000_000;
/// The round trip of the loss sweep, milliseconds.
pub const BASE_RTT_MS: f64 = 100.0;
/// Bytes per transfer (issue 55: 50 MB).
pub const TRANSFER_BYTES: u64 = 50_000_000;
/// Random loss rates of the loss sweep.
pub const LOSS_RATES: [f64; 4] = [0.0, 0.005, 0.01, 0.02];
/// Round trips of the RTT sweep at 1%, milliseconds.
pub const RTTS_MS: [f64; 4] = [20.0, 100.0, 300.0, 600.0];
/// The sharing part's duration, seconds.
pub const SHARING_S: f64 = 60.0;
/// The bottleneck queue's limit, packets (issue 55: 420, about one
/// bandwidth-delay product at 100 ms).
const LIMIT_PACKETS: usize = 420;
/// The round trip of Prague's own point and of the DualPI2 sharing pair
/// (issue 55: 20 ms each way).
pub const L4S_RTT_MS: f64 = 40.0;
/// Virtual seconds before a transfer counts as cut off.
const TIME_LIMIT_S: f64 = 600.0;
/// The AQMs, by the name tc gives them.
const AQMS: [&str; 2] = ["codel", "dualpi2"];
/// The suffix of a loss-only baseline: the controller with the transport's
/// ECN off, so the AQM drops its packets instead of marking them.
const NO_ECN: &str = "-no-ecn";
/// The controllers run loss-only too (the targets' baselines).
const LOSS_ONLY: [&str; 3] = ["cubic", "westwood-a", "bbr"];
/// The loss-only CUBIC of the CoDel sharing pair.
const CUBIC_NO_ECN: &str = "cubic-no-ecn";

/// The controllers of the sweep: every name, every `-ecn` variant, and the
/// loss-only baselines.
pub fn variants() -> Vec<String> {
    let mut out: Vec<String> = CcConfig::NAMES.iter().map(|n| n.to_string()).collect();
    out.extend(
        CcConfig::ECN_VERDICT_NAMES
            .iter()
            .map(|n| format!("{n}{}", CcConfig::ECN_VERDICT_SUFFIX)),
    );
    out.extend(LOSS_ONLY.iter().map(|n| format!("{n}{NO_ECN}")));
    out
}

/// The bottleneck's netem words for `aqm`, one-way `delay_ms` and loss `p`.
fn netem(aqm: &str, delay_ms: f64, p: f64) -> String {
    let queue = match aqm {
        "codel" => "codel target 5ms interval 100ms ecn",
        _ => "dualpi2",
    };
    let loss = if p > 0.0 {
        format!(" loss {}%", p * 100.0)
    } else {
        String::new()
    };
    format!(
        "delay {delay_ms}ms rate {}mbit limit {LIMIT_PACKETS}{loss} {queue}",
        RATE_BPS / 1_000_000
    )
}

/// One direction of the bottleneck; the words are ours, so they parse.
fn bottleneck(aqm: &str, delay_ms: f64, p: f64) -> LinkConfig {
    let words = netem(aqm, delay_ms, p);
    LinkConfig::from_netem(&words).unwrap_or_else(|e| panic!("{words}: {e}"))
}

/// A sweep point: AQM, loss rate and round trip.
#[derive(Clone, Copy)]
struct Point {
    aqm: &'static str,
    p: f64,
    rtt_ms: f64,
}

fn points(plan: &Plan) -> Vec<Point> {
    let rates: Vec<f64> = plan.pick(LOSS_RATES.to_vec(), vec![0.0, 0.01]);
    let rtts: Vec<f64> = plan.pick(RTTS_MS.to_vec(), vec![BASE_RTT_MS]);
    let mut out = Vec::new();
    for aqm in AQMS {
        out.extend(rates.iter().map(|&p| Point {
            aqm,
            p,
            rtt_ms: BASE_RTT_MS,
        }));
        if aqm == "dualpi2" {
            out.push(Point {
                aqm,
                p: 0.0,
                rtt_ms: L4S_RTT_MS,
            });
        }
        out.extend(
            rtts.iter()
                .filter(|&&r| r != BASE_RTT_MS)
                .map(|&rtt_ms| Point {
                    aqm,
                    p: 0.01,
                    rtt_ms,
                }),
        );
    }
    out
}

/// The flow of `variant` moving `bytes`.
fn transfer(variant: &str, bytes: u64) -> Option<crate::sim::scenario::FlowSpec> {
    let (name, ecn) = match variant.strip_suffix(NO_ECN) {
        Some(name) => (name, false),
        None => (variant, true),
    };
    let mut spec = flow(name.parse::<CcConfig>().ok()?, bytes);
    spec.ecn = ecn;
    Some(spec)
}

/// One scenario per point and variant, plus the sharing scenarios.
pub fn scenarios(plan: &Plan) -> Vec<Scenario> {
    let seeds = plan.seeds(plan.pick(3, 1));
    let bytes = plan.pick(TRANSFER_BYTES, 5_000_000);
    let mut out = Vec::new();
    for point in points(plan) {
        let one_way = point.rtt_ms / 2.0;
        for variant in variants() {
            let Some(spec) = transfer(&variant, bytes) else {
                continue;
            };
            let mut s = scenario(
                format!(
                    "{}-p-{}-rtt-{}-{variant}",
                    point.aqm,
                    name_number(point.p),
                    name_number(point.rtt_ms)
                ),
                seeds.clone(),
                TIME_LIMIT_S,
                bottleneck(point.aqm, one_way, point.p),
                bottleneck(point.aqm, one_way, 0.0),
                vec![spec],
            );
            s.sample_interval_ms = 500;
            label(&mut s, "part", "sweep");
            label(&mut s, "aqm", point.aqm);
            label(&mut s, "p", point.p);
            label(&mut s, "rtt_ms", point.rtt_ms);
            label(&mut s, "cc", variant.as_str());
            out.push(s);
        }
    }
    let sharing_s = plan.pick(SHARING_S, 15.0);
    for (aqm, pair) in [
        ("dualpi2", ["cubic", "prague"]),
        ("codel", [CUBIC_NO_ECN, "cubic"]),
    ] {
        let flows = pair
            .iter()
            .filter_map(|variant| transfer(variant, 1 << 40))
            .collect();
        let rtt_ms = match aqm {
            "dualpi2" => L4S_RTT_MS,
            _ => BASE_RTT_MS,
        };
        let mut s = scenario(
            format!("sharing-{aqm}-{}-{}", pair[0], pair[1]),
            seeds.clone(),
            sharing_s,
            bottleneck(aqm, rtt_ms / 2.0, 0.0),
            bottleneck(aqm, rtt_ms / 2.0, 0.0),
            flows,
        );
        s.sample_interval_ms = 500;
        label(&mut s, "part", "sharing");
        label(&mut s, "aqm", aqm);
        label(&mut s, "rtt_ms", rtt_ms);
        label(&mut s, "first", pair[0]);
        label(&mut s, "second", pair[1]);
        out.push(s);
    }
    out
}

/// goodput/(capacity·(1 − p)) of a sweep run.
fn fraction(run: &RunReport) -> Option<f64> {
    let p = param_f64(run, "p").unwrap_or(0.0);
    let goodput = run_goodputs_bps(run).first().copied()?;
    Some(goodput / (RATE_BPS as f64 * (1.0 - p)))
}

/// The sweep's reports at (`aqm`, `p`, `rtt_ms`) for `cc`.
fn at<'a>(reports: &'a [Report], aqm: &str, p: f64, rtt_ms: f64, cc: &str) -> Vec<&'a RunReport> {
    reports
        .iter()
        .filter(|r| {
            report_str(r, "part") == Some("sweep")
                && report_str(r, "aqm") == Some(aqm)
                && report_f64(r, "p") == Some(p)
                && report_f64(r, "rtt_ms") == Some(rtt_ms)
                && report_str(r, "cc") == Some(cc)
        })
        .flat_map(|r| r.runs.iter())
        .collect()
}

/// The median over seeds of `metric` at a point.
fn median_at(
    reports: &[Report],
    aqm: &str,
    p: f64,
    rtt_ms: f64,
    cc: &str,
    metric: fn(&RunReport) -> Option<f64>,
) -> Option<f64> {
    let values: Vec<f64> = at(reports, aqm, p, rtt_ms, cc)
        .into_iter()
        .filter_map(metric)
        .collect();
    median(&values)
}

fn queue_p99_ms(run: &RunReport) -> Option<f64> {
    let delay = &run.links.forward_queue_delay;
    (delay.samples > 0).then_some(delay.p99_ms)
}

fn queue_p50_ms(run: &RunReport) -> Option<f64> {
    let delay = &run.links.forward_queue_delay;
    (delay.samples > 0).then_some(delay.p50_ms)
}

fn ce_marks(run: &RunReport) -> Option<f64> {
    Some(run.links.forward.delivered_ce as f64)
}

/// The values of `key` the sweep ran for `aqm` with the other axis at its
/// base, sorted.
fn axis_values(reports: &[Report], aqm: &str, axis: &str) -> Vec<f64> {
    let mut values: Vec<f64> = reports
        .iter()
        .filter(|r| report_str(r, "part") == Some("sweep") && report_str(r, "aqm") == Some(aqm))
        .filter(|r| match axis {
            "p" => report_f64(r, "rtt_ms") == Some(BASE_RTT_MS),
            _ => report_f64(r, "p") == Some(0.01),
        })
        .filter_map(|r| report_f64(r, axis))
        .collect();
    values.sort_by(f64::total_cmp);
    values.dedup();
    values
}

/// Builds the tables, figures and the reading.
pub fn compare(reports: &[Report]) -> Comparison {
    let mut md = String::new();
    let mut tables = Vec::new();
    let mut figures = Vec::new();
    let _ = writeln!(
        md,
        "{} Mb/s bottleneck, queue limit {LIMIT_PACKETS} packets, one transfer per run; \
         cells are medians over seeds. `NAME-ecn` judges a loss with no CE mark in its round \
         random once ECN is validated; `NAME{NO_ECN}` runs with the transport's ECN off.\n",
        RATE_BPS / 1_000_000
    );
    let variants = variants();
    for aqm in AQMS {
        for axis in ["p", "rtt_ms"] {
            let values = axis_values(reports, aqm, axis);
            if values.len() < 2 {
                continue;
            }
            let point = |v: f64| match axis {
                "p" => (v, BASE_RTT_MS),
                _ => (0.01, v),
            };
            let mut header = vec!["cc".to_string()];
            for &v in &values {
                header.push(format!("{axis} = {v}"));
                header.push(format!("q99 ms ({v})"));
            }
            let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
            let mut table = Table::new(&format!("{aqm}-by-{axis}"), &header_refs);
            let mut series = Vec::new();
            for variant in &variants {
                let mut row = vec![variant.clone()];
                let mut line = Vec::new();
                for &v in &values {
                    let (p, rtt) = point(v);
                    let f = median_at(reports, aqm, p, rtt, variant, fraction);
                    row.push(cell(f, 3));
                    row.push(cell(
                        median_at(reports, aqm, p, rtt, variant, queue_p99_ms),
                        1,
                    ));
                    if let Some(f) = f {
                        line.push((v, f));
                    }
                }
                if row.iter().skip(1).all(|c| c == "—") {
                    continue;
                }
                table.push(row);
                series.push(Series {
                    label: variant.clone(),
                    points: line,
                });
            }
            let _ = writeln!(
                md,
                "### {aqm}, by {axis}\n\nGoodput / (capacity·(1 − p)) and the forward \
                 queue's 99th-percentile delay.\n"
            );
            md.push_str(&table.to_markdown());
            md.push('\n');
            figures.push(Figure {
                name: format!("{aqm}-by-{axis}"),
                title: format!("{aqm}: goodput / (capacity·(1−p))"),
                x_label: match axis {
                    "p" => format!("random loss p (RTT {BASE_RTT_MS} ms)"),
                    _ => "round trip, ms (p = 1%)".into(),
                },
                y_label: "fraction of capacity·(1−p)".into(),
                log_x: false,
                series,
            });
            tables.push(table);
        }
    }
    md.push_str(&targets(reports));
    md.push_str(&verdict_gain(reports));
    tables.push(all_runs(reports));
    let (sharing_md, sharing_table) = sharing(reports);
    md.push_str(&sharing_md);
    tables.push(sharing_table);
    Comparison {
        markdown: md,
        tables,
        figures,
    }
}

/// What the `-ecn` verdict changes: each loss-differentiating controller's
/// median fraction with and without it, at every point that ran.
fn verdict_gain(reports: &[Report]) -> String {
    let mut md = String::from(
        "### The ECN loss verdict: `NAME-ecn` over `NAME`\n\n\
         The ratio of median fractions at each point (above 1: judging unmarked losses \
         random paid).\n\n",
    );
    let mut header = vec!["aqm".to_string(), "p".into(), "rtt_ms".into()];
    header.extend(CcConfig::ECN_VERDICT_NAMES.iter().map(|n| n.to_string()));
    let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut table = Table::new("ecn-verdict-gain", &header_refs);
    for aqm in AQMS {
        let mut points: Vec<(f64, f64)> = axis_values(reports, aqm, "p")
            .into_iter()
            .map(|p| (p, BASE_RTT_MS))
            .chain(
                axis_values(reports, aqm, "rtt_ms")
                    .into_iter()
                    .filter(|&r| r != BASE_RTT_MS)
                    .map(|r| (0.01, r)),
            )
            .collect();
        points.dedup();
        for (p, rtt) in points {
            let mut row = vec![aqm.to_string(), format!("{p}"), format!("{rtt}")];
            for name in CcConfig::ECN_VERDICT_NAMES {
                let with = median_at(
                    reports,
                    aqm,
                    p,
                    rtt,
                    &format!("{name}{}", CcConfig::ECN_VERDICT_SUFFIX),
                    fraction,
                );
                let without = median_at(reports, aqm, p, rtt, name, fraction);
                row.push(cell(with.zip(without).map(|(w, o)| w / o), 3));
            }
            table.push(row);
        }
    }
    md.push_str(&table.to_markdown());
    md.push('\n');
    md
}

/// Every sweep run, one row each.
fn all_runs(reports: &[Report]) -> Table {
    let mut table = Table::new(
        "runs",
        &[
            "aqm", "p", "rtt_ms", "cc", "seed", "fraction", "q50_ms", "q99_ms", "ce_marks",
        ],
    );
    for report in reports
        .iter()
        .filter(|r| report_str(r, "part") == Some("sweep"))
    {
        for run in &report.runs {
            table.push(vec![
                param_str(run, "aqm").unwrap_or("").to_string(),
                format!("{}", param_f64(run, "p").unwrap_or(0.0)),
                format!("{}", param_f64(run, "rtt_ms").unwrap_or(0.0)),
                param_str(run, "cc").unwrap_or("").to_string(),
                run.seed.to_string(),
                cell(fraction(run), 4),
                cell(queue_p50_ms(run), 2),
                cell(queue_p99_ms(run), 2),
                cell(ce_marks(run), 0),
            ]);
        }
    }
    table
}

/// The sharing part: each flow's share of the link, Jain's index and the
/// queue's delay.
fn sharing(reports: &[Report]) -> (String, Table) {
    let mut table = Table::new(
        "sharing",
        &[
            "aqm",
            "first",
            "second",
            "seed",
            "first share",
            "second share",
            "Jain's index",
            "first share, 2nd half",
            "second share, 2nd half",
            "q50 ms",
            "q99 ms",
        ],
    );
    let mut md = String::from(
        "### Sharing the bottleneck for a while\n\n\
         Prague (ECT(1), the L4S queue) beside CUBIC (ECT(0), the classic queue) in DualPI2; \
         an ECN CUBIC beside a loss-only CUBIC in CoDel. Shares are of the link's rate over \
         the run and over its second half.\n\n",
    );
    for report in reports
        .iter()
        .filter(|r| report_str(r, "part") == Some("sharing"))
    {
        for run in &report.runs {
            let goodputs = run_goodputs_bps(run);
            let share = |i: usize| goodputs.get(i).map(|g| g / RATE_BPS as f64);
            let late_share = |i: usize| {
                let flow = run.flows.get(i)?;
                window_goodput_bps(&flow.timeseries, run.end_s / 2.0, run.end_s)
                    .map(|g| g / RATE_BPS as f64)
            };
            table.push(vec![
                report_str(report, "aqm").unwrap_or("").to_string(),
                report_str(report, "first").unwrap_or("").to_string(),
                report_str(report, "second").unwrap_or("").to_string(),
                run.seed.to_string(),
                cell(share(0), 3),
                cell(share(1), 3),
                cell(jain_fairness_index(&goodputs), 3),
                cell(late_share(0), 3),
                cell(late_share(1), 3),
                cell(queue_p50_ms(run), 2),
                cell(queue_p99_ms(run), 2),
            ]);
        }
    }
    md.push_str(&table.to_markdown());
    md.push('\n');
    (md, table)
}

/// Issue 55's targets beside what ran.
fn targets(reports: &[Report]) -> String {
    let mut md =
        String::from("### Targets (issue 55)\n\n| target | measured | met |\n|---|---|---|\n");
    let mut row = |target: String, measured: String, met: Option<bool>| {
        let met = match met {
            Some(true) => "yes",
            Some(false) => "no",
            None => "—",
        };
        let _ = writeln!(md, "| {target} | {measured} | {met} |");
    };
    for name in LOSS_ONLY {
        let mut best: Option<(String, f64, f64)> = None;
        for variant in [
            name.to_string(),
            format!("{name}{}", CcConfig::ECN_VERDICT_SUFFIX),
        ] {
            let f = median_at(reports, "codel", 0.01, BASE_RTT_MS, &variant, fraction);
            let q = median_at(reports, "codel", 0.01, BASE_RTT_MS, &variant, queue_p95_ms);
            if let (Some(f), Some(q)) = (f, q) {
                if best.as_ref().is_none_or(|(_, bf, _)| f > *bf) {
                    best = Some((variant, f, q));
                }
            }
        }
        let without = median_at(
            reports,
            "codel",
            0.01,
            BASE_RTT_MS,
            &format!("{name}{NO_ECN}"),
            fraction,
        );
        row(
            format!("CoDel-ECN, 1% loss, 100 ms: {name} ≥ 0.9 with ECN, queue q95 ≤ 20 ms"),
            best.as_ref().map_or("—".into(), |(v, f, q)| {
                format!("{v} {f:.3}, q95 {q:.1} ms (ECN off: {})", cell(without, 3))
            }),
            best.map(|(_, f, q)| f >= 0.9 && q <= 20.0),
        );
    }
    let f = median_at(reports, "dualpi2", 0.0, L4S_RTT_MS, "prague", fraction);
    let q = median_at(reports, "dualpi2", 0.0, L4S_RTT_MS, "prague", queue_p99_ms);
    row(
        format!("DualPI2, {L4S_RTT_MS} ms: Prague ≥ 0.9 with queue q99 ≤ 2 ms"),
        format!("{}, q99 {} ms", cell(f, 3), cell(q, 2)),
        f.zip(q).map(|(f, q)| f >= 0.9 && q <= 2.0),
    );
    for report in reports.iter().filter(|r| {
        report_str(r, "part") == Some("sharing") && report_str(r, "aqm") == Some("dualpi2")
    }) {
        let shares: Vec<f64> = report
            .runs
            .iter()
            .filter_map(|run| {
                let goodputs = run_goodputs_bps(run);
                let total: f64 = goodputs.iter().sum();
                (total > 0.0).then(|| goodputs.get(1).copied().unwrap_or(0.0) / total)
            })
            .collect();
        let m = median(&shares);
        row(
            "DualPI2: Prague beside CUBIC, each 0.3–0.7 of the bytes".into(),
            format!("Prague {}", cell(m, 3)),
            m.map(|m| (0.3..=0.7).contains(&m)),
        );
    }
    md.push('\n');
    md
}

fn queue_p95_ms(run: &RunReport) -> Option<f64> {
    let delay = &run.links.forward_queue_delay;
    (delay.samples > 0).then_some(delay.p95_ms)
}
