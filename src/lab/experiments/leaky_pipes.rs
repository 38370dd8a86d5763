//! Large leaky pipes (issue 12): how much of a long, fat, lossy path each
//! controller fills. One 50 Mb/s bottleneck, queue one bandwidth-delay
//! product, 50 MB per transfer; the loss rate swept over 0.1–5% at a 100 ms
//! round trip and the round trip over 20–600 ms at 1%, for three kinds of
//! impairment on the data direction:
//!
//! - `loss`: Bernoulli random loss;
//! - `corrupt-notices-on`: Bernoulli corruption (one flipped bit anywhere in
//!   the datagram, netem's model), delivered, with corruption notices;
//! - `corrupt-notices-off`: the same with notices off (a corrupted packet is
//!   a drop).
//!
//! The figure of merit is goodput / (capacity·(1 − p)): 1 means the flow
//! used every packet the link could carry. The Mathis et al. bound for a
//! Reno-style flow, MSS/RTT·√(3/2)/√p, is drawn as a reference line. A second
//! part shares a clean bottleneck between one CUBIC flow and one
//! `westwood-a` or `bbr` flow for 60 s and reports each one's share and
//! Jain's index.
//!
//! Controllers run with sift's defaults (RFC 9002 recovery with pacing,
//! 10-packet initial window, HyStart++ for the loss-based ones): this
//! experiment is about sift on modern paths, not a paper's testbed.

use std::fmt::Write;

use super::{
    cell, controller, drop_tail_controllers, flow, label, link, name_number, param_f64, param_str,
    report_f64, report_str, scenario,
};
use crate::lab::metrics::{jain_fairness_index, run_goodputs_bps, window_goodput_bps};
use crate::lab::{Comparison, Experiment, Figure, Plan, Series, Table};
use crate::sim::link::{CorruptRegion, CorruptionConfig, LinkConfig};
use crate::sim::{Report, Scenario};

/// The experiment.
pub const EXPERIMENT: Experiment = Experiment {
    name: "leaky-pipes",
    title: "Large leaky pipes: goodput/(capacity·(1−p)) over 0.1–5% loss or corruption and 20–600 ms at 50 Mb/s",
    scenarios,
    compare,
};

/// The bottleneck rate (issue 12).
pub const RATE_BPS: u64 = 50_000_000;
/// The round trip of the loss sweep, milliseconds.
pub const BASE_RTT_MS: f64 = 100.0;
/// Bytes per transfer (issue 12: 50 MB).
pub const TRANSFER_BYTES: u64 = 50_000_000;
/// Loss (or corruption) rates of the loss sweep.
pub const LOSS_RATES: [f64; 5] = [0.001, 0.005, 0.01, 0.02, 0.05];
/// Round trips of the RTT sweep at 1%, milliseconds.
pub const RTTS_MS: [f64; 4] = [20.0, 100.0, 300.0, 600.0];
/// The sharing test's duration, seconds (issue 12: 60 s).
pub const SHARING_S: f64 = 60.0;
/// Virtual seconds before a transfer counts as cut off.
const TIME_LIMIT_S: f64 = 600.0;
/// A packet on the wire for the queue and the Mathis line: sift's default
/// datagram.
const DATAGRAM_BYTES: f64 = 1350.0;
/// Mathis, Semke, Mahdavi & Ott 1997: throughput ≤ (MSS/RTT)·C/√p with
/// C = √(3/2) for periodic loss and delayed ACKs off.
const MATHIS_C: f64 = 1.224_744_871_391_589;
/// Impairment kinds.
const KINDS: [&str; 3] = ["loss", "corrupt-notices-on", "corrupt-notices-off"];
/// The sharing test's challengers against CUBIC.
const CHALLENGERS: [&str; 2] = ["westwood-a", "bbr"];

/// A sweep point: impairment kind, rate p and round trip.
#[derive(Clone, Copy)]
struct Point {
    kind: &'static str,
    p: f64,
    rtt_ms: f64,
}

fn points(plan: &Plan) -> Vec<Point> {
    let mut out = vec![Point {
        kind: "loss",
        p: 0.0,
        rtt_ms: BASE_RTT_MS,
    }];
    let rates: Vec<f64> = plan.pick(LOSS_RATES.to_vec(), vec![0.01]);
    let rtts: Vec<f64> = plan.pick(RTTS_MS.to_vec(), vec![BASE_RTT_MS]);
    for kind in KINDS {
        for &p in &rates {
            out.push(Point {
                kind,
                p,
                rtt_ms: BASE_RTT_MS,
            });
        }
        for &rtt_ms in rtts.iter().filter(|&&r| r != BASE_RTT_MS) {
            out.push(Point {
                kind,
                p: 0.01,
                rtt_ms,
            });
        }
    }
    out
}

/// The queue: one bandwidth-delay product of full datagrams.
pub fn bdp_packets(rtt_ms: f64) -> usize {
    (RATE_BPS as f64 / 8.0 * rtt_ms / 1e3 / DATAGRAM_BYTES).round() as usize
}

/// The data direction for a point.
fn forward(point: Point) -> LinkConfig {
    let one_way = point.rtt_ms / 2.0;
    let queue = bdp_packets(point.rtt_ms);
    if point.kind == "loss" {
        return link(one_way, RATE_BPS, queue, point.p);
    }
    let mut config = link(one_way, RATE_BPS, queue, 0.0);
    config.corrupt = CorruptionConfig {
        probability: point.p,
        region: CorruptRegion::Any,
        ..CorruptionConfig::default()
    };
    config
}

/// One scenario per point and controller, plus the sharing scenarios.
pub fn scenarios(plan: &Plan) -> Vec<Scenario> {
    let seeds = plan.seeds(plan.pick(3, 1));
    let bytes = plan.pick(TRANSFER_BYTES, 5_000_000);
    let mut out = Vec::new();
    for point in points(plan) {
        for cc in drop_tail_controllers() {
            let Some(config) = controller(cc) else {
                continue;
            };
            let mut transfer = flow(config, bytes);
            transfer.corruption_notices = point.kind != "corrupt-notices-off";
            let mut s = scenario(
                format!(
                    "{}-{}-rtt-{}-{cc}",
                    point.kind,
                    name_number(point.p),
                    name_number(point.rtt_ms)
                ),
                seeds.clone(),
                TIME_LIMIT_S,
                forward(point),
                link(point.rtt_ms / 2.0, RATE_BPS, bdp_packets(point.rtt_ms), 0.0),
                vec![transfer],
            );
            s.sample_interval_ms = 500;
            label(&mut s, "part", "sweep");
            label(&mut s, "kind", point.kind);
            label(&mut s, "p", point.p);
            label(&mut s, "rtt_ms", point.rtt_ms);
            label(&mut s, "cc", cc);
            out.push(s);
        }
    }
    let sharing_s = plan.pick(SHARING_S, 10.0);
    for challenger in CHALLENGERS {
        let flows = ["cubic", challenger]
            .iter()
            .filter_map(|cc| Some(flow(controller(cc)?, 1 << 40)))
            .collect();
        let clean = link(BASE_RTT_MS / 2.0, RATE_BPS, bdp_packets(BASE_RTT_MS), 0.0);
        let mut s = scenario(
            format!("sharing-cubic-{challenger}"),
            seeds.clone(),
            sharing_s,
            clean.clone(),
            clean,
            flows,
        );
        s.sample_interval_ms = 500;
        label(&mut s, "part", "sharing");
        label(&mut s, "cc", challenger);
        out.push(s);
    }
    out
}

/// goodput/(capacity·(1 − p)) of every run of a sweep report, seed order.
fn fractions(report: &Report) -> Vec<f64> {
    let p = report_f64(report, "p").unwrap_or(0.0);
    let ceiling = RATE_BPS as f64 * (1.0 - p);
    report
        .runs
        .iter()
        .filter_map(|run| run_goodputs_bps(run).first().copied())
        .map(|goodput| goodput / ceiling)
        .collect()
}

/// The median (the mean of the middle two for an even count).
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// The Mathis bound as a fraction of capacity·(1 − p).
pub fn mathis_fraction(p: f64, rtt_ms: f64) -> f64 {
    let bps = DATAGRAM_BYTES * 8.0 / (rtt_ms / 1e3) * MATHIS_C / p.sqrt();
    bps / (RATE_BPS as f64 * (1.0 - p))
}

fn sweep<'a>(
    reports: &'a [Report],
    kind: &'a str,
) -> impl Iterator<Item = (&'a Report, f64, f64, &'a str)> + 'a {
    reports
        .iter()
        .filter(move |r| {
            report_str(r, "part") == Some("sweep") && report_str(r, "kind") == Some(kind)
        })
        .map(|r| {
            (
                r,
                report_f64(r, "p").unwrap_or(0.0),
                report_f64(r, "rtt_ms").unwrap_or(0.0),
                report_str(r, "cc").unwrap_or(""),
            )
        })
}

/// Median fraction of `cc` at (`kind`, `p`, `rtt_ms`) and the fractions.
fn at(reports: &[Report], kind: &str, p: f64, rtt_ms: f64, cc: &str) -> Vec<f64> {
    let kind = if p == 0.0 { "loss" } else { kind };
    sweep(reports, kind)
        .find(|&(_, rp, rr, rc)| rp == p && rr == rtt_ms && rc == cc)
        .map(|(r, ..)| fractions(r))
        .unwrap_or_default()
}

/// Builds the tables, figures and the targets section.
pub fn compare(reports: &[Report]) -> Comparison {
    let names = drop_tail_controllers();
    let mut md = String::new();
    let mut tables = Vec::new();
    let mut figures = Vec::new();
    let _ = writeln!(
        md,
        "{} Mb/s bottleneck, queue one BDP ({} packets at {BASE_RTT_MS} ms), one transfer; \
         cells are the median over seeds of goodput / (capacity·(1 − p)); runs cut off at \
         {TIME_LIMIT_S} s count the bytes they delivered.\n",
        RATE_BPS / 1_000_000,
        bdp_packets(BASE_RTT_MS)
    );

    let mut all = Table::new(
        "fractions",
        &["kind", "p", "rtt_ms", "cc", "seed", "fraction"],
    );
    for kind in KINDS {
        let mut ps: Vec<f64> = sweep(reports, kind)
            .filter(|&(_, _, rtt, _)| rtt == BASE_RTT_MS)
            .map(|(_, p, ..)| p)
            .collect();
        let mut rtts: Vec<f64> = sweep(reports, kind)
            .filter(|&(_, p, ..)| p == 0.01)
            .map(|(_, _, rtt, _)| rtt)
            .collect();
        for v in [&mut ps, &mut rtts] {
            v.sort_by(f64::total_cmp);
            v.dedup();
        }
        if ps.is_empty() {
            continue;
        }
        for (axis, values) in [("p", &ps), ("rtt_ms", &rtts)] {
            if values.len() < 2 && axis == "rtt_ms" {
                continue;
            }
            let header: Vec<String> = std::iter::once("cc".to_string())
                .chain(values.iter().map(|v| format!("{axis} = {v}")))
                .collect();
            let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
            let mut table = Table::new(&format!("{kind}-by-{axis}"), &header_refs);
            let mut series = Vec::new();
            for &cc in &names {
                let mut row = vec![cc.to_string()];
                let mut line = Vec::new();
                for &v in values.iter() {
                    let (p, rtt) = if axis == "p" {
                        (v, BASE_RTT_MS)
                    } else {
                        (0.01, v)
                    };
                    let f = at(reports, kind, p, rtt, cc);
                    let m = median(&f);
                    row.push(cell(m, 3));
                    if let Some(m) = m {
                        line.push((v, m));
                    }
                }
                table.push(row);
                series.push(Series {
                    label: cc.to_string(),
                    points: line,
                });
            }
            let mathis: Vec<(f64, f64)> = values
                .iter()
                .filter(|&&v| axis == "rtt_ms" || v > 0.0)
                .map(|&v| {
                    let (p, rtt) = if axis == "p" {
                        (v, BASE_RTT_MS)
                    } else {
                        (0.01, v)
                    };
                    (v, mathis_fraction(p, rtt).min(1.0))
                })
                .collect();
            series.push(Series {
                label: "Mathis bound (Reno)".into(),
                points: mathis,
            });
            let _ = writeln!(md, "### {kind}, by {axis}\n");
            md.push_str(&table.to_markdown());
            md.push('\n');
            figures.push(Figure {
                name: format!("{kind}-by-{axis}"),
                title: format!("{kind}: goodput / (capacity·(1−p))"),
                x_label: if axis == "p" {
                    "loss or corruption rate p (RTT 100 ms)".into()
                } else {
                    "round trip, ms (p = 1%)".into()
                },
                y_label: "fraction of capacity·(1−p)".into(),
                log_x: axis == "p",
                series: series
                    .into_iter()
                    .map(|mut s| {
                        s.points.retain(|&(x, _)| axis != "p" || x > 0.0);
                        s
                    })
                    .collect(),
            });
            tables.push(table);
        }
    }
    for report in reports
        .iter()
        .filter(|r| report_str(r, "part") == Some("sweep"))
    {
        for (run, f) in report.runs.iter().zip(fractions(report)) {
            all.push(vec![
                param_str(run, "kind").unwrap_or("").to_string(),
                format!("{}", param_f64(run, "p").unwrap_or(0.0)),
                format!("{}", param_f64(run, "rtt_ms").unwrap_or(0.0)),
                param_str(run, "cc").unwrap_or("").to_string(),
                run.seed.to_string(),
                format!("{f:.4}"),
            ]);
        }
    }
    tables.push(all);

    let (sharing_md, sharing_table) = sharing(reports);
    md.push_str(&sharing_md);
    tables.push(sharing_table);
    md.push_str(&targets(reports));
    Comparison {
        markdown: md,
        tables,
        figures,
    }
}

/// The sharing part: each flow's share of the link and Jain's index.
fn sharing(reports: &[Report]) -> (String, Table) {
    let mut table = Table::new(
        "sharing",
        &[
            "challenger",
            "seed",
            "cubic share",
            "challenger share",
            "Jain's index",
            "cubic share, 2nd half",
            "challenger share, 2nd half",
        ],
    );
    let mut md = String::from(
        "### Sharing a clean bottleneck with one CUBIC flow\n\n\
         Shares are of the link's rate, over the whole run and over its second half \
         (from the flows' time series): the second half shows where the split is heading \
         once both flows have left their start-up.\n\n",
    );
    for report in reports
        .iter()
        .filter(|r| report_str(r, "part") == Some("sharing"))
    {
        let challenger = report_str(report, "cc").unwrap_or("");
        for run in &report.runs {
            let goodputs = run_goodputs_bps(run);
            let share = |i: usize| goodputs.get(i).map(|g| g / RATE_BPS as f64);
            let late_share = |i: usize| {
                let flow = run.flows.get(i)?;
                window_goodput_bps(&flow.timeseries, run.end_s / 2.0, run.end_s)
                    .map(|g| g / RATE_BPS as f64)
            };
            table.push(vec![
                challenger.to_string(),
                run.seed.to_string(),
                cell(share(0), 3),
                cell(share(1), 3),
                cell(jain_fairness_index(&goodputs), 3),
                cell(late_share(0), 3),
                cell(late_share(1), 3),
            ]);
        }
    }
    md.push_str(&table.to_markdown());
    md.push('\n');
    (md, table)
}

/// The targets at 50 Mb/s, 100 ms, queue one BDP, next to what ran.
fn targets(reports: &[Report]) -> String {
    let names = drop_tail_controllers();
    let mut md =
        String::from("### Targets (issue 12)\n\n| target | measured | met |\n|---|---|---|\n");
    let mut row = |target: &str, measured: String, met: Option<bool>| {
        let met = match met {
            Some(true) => "yes",
            Some(false) => "no",
            None => "—",
        };
        let _ = writeln!(md, "| {target} | {measured} | {met} |");
    };
    let best = names
        .iter()
        .filter_map(|cc| Some((*cc, median(&at(reports, "loss", 0.01, BASE_RTT_MS, cc))?)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    row(
        "1% random loss: best controller ≥ 0.85",
        best.map_or("—".into(), |(cc, m)| format!("{cc} {m:.3}")),
        best.map(|(_, m)| m >= 0.85),
    );
    for cc in ["reno", "cubic", "veno"] {
        let f = at(reports, "corrupt-notices-on", 0.01, BASE_RTT_MS, cc);
        let worst = f.iter().copied().min_by(f64::total_cmp);
        row(
            &format!("1% corruption, notices on: {cc} ≥ 0.9 every seed"),
            if f.is_empty() {
                "—".into()
            } else {
                f.iter()
                    .map(|v| format!("{v:.3}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
            worst.map(|w| w >= 0.9),
        );
    }
    for &cc in &names {
        let m = median(&at(reports, "loss", 0.0, BASE_RTT_MS, cc));
        row(
            &format!("no loss: {cc} ≥ 0.95"),
            cell(m, 3),
            m.map(|m| m >= 0.95),
        );
    }
    for report in reports
        .iter()
        .filter(|r| report_str(r, "part") == Some("sharing"))
    {
        let challenger = report_str(report, "cc").unwrap_or("");
        let shares: Vec<f64> = report
            .runs
            .iter()
            .filter_map(|run| run_goodputs_bps(run).get(1).copied())
            .map(|g| g / RATE_BPS as f64)
            .collect();
        let m = median(&shares);
        row(
            &format!("sharing with CUBIC: {challenger} in [0.25, 0.75] of the link"),
            cell(m, 3),
            m.map(|m| (0.25..=0.75).contains(&m)),
        );
    }
    md.push_str(
        "\nThe no-loss ceiling is below 0.95 on this path for any controller that starts from \
         a 10-packet window: the handshake and slow start's doubling from 10 packets to one \
         BDP take about 0.6 s on top of the ~8.3 s the link needs for 50 MB plus sift's \
         headers, tags and frames (~4% of the bytes sent), so a perfect controller measures \
         about 0.90.\n",
    );
    md
}
