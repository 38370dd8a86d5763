//! Long paths (issue 34): what Careful Resume (RFC 9959) gives a second
//! connection on a satellite path. Every scenario runs two connections one
//! after the other on one bottleneck: the first from sift's normal start,
//! the second either fresh (`fresh`) or resuming from the path state the
//! first one's sender saw (`careful-resume`). The sender is the simulated
//! client, which keeps its own saved state (the server's token carries it
//! over real sockets).
//!
//! Parts:
//! - `targets`: the cells — `leaky-pipes`' 600 ms column (50 Mb/s,
//!   50 MB, 1% loss, and 1% corruption with notices on) and 20 Mb/s, 600
//!   ms, 2% loss;
//! - `sweep`: RTT 300–1200 ms (GEO), 5–100 Mb/s, loss 0–2%, and a LEO path
//!   whose RTT steps between 40 and 70 ms every 15 s (handovers);
//! - `changed`: the path lost capacity between the two connections
//!   (halved, and halved with the RTT doubled) while a CUBIC flow shares
//!   it: how many packets the resumed connection loses against a fresh
//!   one, whether it retreats, and what its start costs the CUBIC flow.
//!
//! Figure of merit: goodput over the whole transfer (handshake included)
//! divided by capacity·(1 − p); time to first byte from the connection's
//! start.

use std::fmt::Write;
use std::time::Duration;

use super::leaky_pipes::median;
use super::{cell, controller, flow, label, link, name_number, report_f64, report_str, scenario};
use crate::lab::metrics::{run_goodputs_bps, window_goodput_bps};
use crate::lab::{Comparison, Experiment, Figure, Plan, Series, Table};
use crate::sim::link::{CorruptRegion, CorruptionConfig, DelayStep, LinkConfig, RateStep};
use crate::sim::scenario::FlowSpec;
use crate::sim::{FlowReport, Report, RunReport, Scenario};

/// The experiment.
pub const EXPERIMENT: Experiment = Experiment {
    name: "long-paths",
    title: "Long paths: a second connection with and without Careful Resume (RFC 9959) over GEO and LEO paths",
    scenarios,
    compare,
};

/// A packet on the wire, for queue sizes: sift's default datagram.
const DATAGRAM_BYTES: f64 = 1350.0;
/// Virtual seconds before a run is cut off.
const TIME_LIMIT_S: f64 = 300.0;
/// Transfers carry this many seconds of the bottleneck's capacity (50 MB
/// at 50 Mb/s, as `leaky-pipes`).
const TRANSFER_SECONDS: f64 = 8.0;
/// The targets for a resumed connection and for a first one.
pub const RESUMED_TARGET: f64 = 0.85;
/// The target for a first connection.
pub const FIRST_TARGET: f64 = 0.6;
/// The share of its earlier throughput a competing flow must keep.
pub const COMPETITOR_TARGET: f64 = 0.8;
/// `changed`: when the path changes, seconds.
const CHANGE_AT_S: f64 = 60.0;
/// `changed`: the competing flow starts this long before the change...
const COMPETITOR_LEAD_S: f64 = 20.0;
/// ...and the second connection this long after it.
const SECOND_AFTER_CHANGE_S: f64 = 20.0;
/// `changed`: the window over which the competitor's throughput is
/// compared, from the second connection's start, seconds.
const COST_WINDOW_S: f64 = 10.0;

/// One path: a data direction and what labels it.
#[derive(Clone, Copy)]
struct Point {
    part: &'static str,
    kind: &'static str,
    p: f64,
    rtt_ms: f64,
    rate_bps: u64,
    /// LEO: the one-way delay steps between `rtt_ms/2` and this, every 15 s.
    leo_step_ms: Option<f64>,
}

fn bdp_packets(rate_bps: u64, rtt_ms: f64) -> usize {
    (rate_bps as f64 / 8.0 * rtt_ms / 1e3 / DATAGRAM_BYTES).round() as usize
}

fn transfer_bytes(rate_bps: u64) -> u64 {
    (rate_bps as f64 / 8.0 * TRANSFER_SECONDS) as u64
}

fn forward(point: Point) -> LinkConfig {
    let queue = bdp_packets(point.rate_bps, point.rtt_ms);
    let mut config = if point.kind == "loss" {
        link(point.rtt_ms / 2.0, point.rate_bps, queue, point.p)
    } else {
        let mut config = link(point.rtt_ms / 2.0, point.rate_bps, queue, 0.0);
        config.corrupt = CorruptionConfig {
            probability: point.p,
            region: CorruptRegion::Any,
            ..CorruptionConfig::default()
        };
        config
    };
    leo_steps(&mut config, point);
    config
}

fn leo_steps(config: &mut LinkConfig, point: Point) {
    if let Some(step_ms) = point.leo_step_ms {
        let every = Duration::from_secs(15);
        config.delay_steps = vec![
            DelayStep {
                delay_ms: Duration::from_secs_f64(point.rtt_ms / 2e3),
                duration_ms: every,
            },
            DelayStep {
                delay_ms: Duration::from_secs_f64(step_ms / 1e3),
                duration_ms: every,
            },
        ];
    }
}

fn points(plan: &Plan) -> Vec<Point> {
    let target = |kind, p, rate_bps| Point {
        part: "targets",
        kind,
        p,
        rtt_ms: 600.0,
        rate_bps,
        leo_step_ms: None,
    };
    let mut out = vec![
        target("loss", 0.01, 50_000_000),
        target("corrupt-notices-on", 0.01, 50_000_000),
        target("loss", 0.02, 20_000_000),
    ];
    let sweep = |p, rtt_ms, rate_bps| Point {
        part: "sweep",
        kind: "loss",
        p,
        rtt_ms,
        rate_bps,
        leo_step_ms: None,
    };
    let full_sweep = vec![
        sweep(0.01, 300.0, 50_000_000),
        sweep(0.01, 1200.0, 50_000_000),
        sweep(0.01, 600.0, 5_000_000),
        sweep(0.01, 600.0, 100_000_000),
        sweep(0.0, 600.0, 50_000_000),
        sweep(0.02, 600.0, 50_000_000),
        Point {
            part: "sweep",
            kind: "loss",
            p: 0.005,
            rtt_ms: 40.0,
            rate_bps: 100_000_000,
            leo_step_ms: Some(35.0),
        },
    ];
    if plan.quick {
        // Seconds, not minutes: one target cell and one sweep point at 5 Mb/s.
        out.truncate(1);
        out[0].rate_bps = 5_000_000;
        out.push(sweep(0.01, 1200.0, 5_000_000));
    } else {
        out.extend(full_sweep);
    }
    out
}

/// The controllers of a target cell: the best of `leaky-pipes` for loss
/// (bbr) and for corruption with notices (westwood-a), and CUBIC, the
/// common default; the sweep runs bbr.
fn controllers(part: &str, plan: &Plan) -> Vec<&'static str> {
    match (part, plan.quick) {
        (_, true) => vec!["bbr"],
        ("targets", false) => vec!["bbr", "westwood-a", "cubic"],
        _ => vec!["bbr"],
    }
}

const VARIANTS: [&str; 2] = ["fresh", "careful-resume"];

fn two_connections(cc: sift_cc::CcConfig, bytes: u64, variant: &str) -> Vec<FlowSpec> {
    let first = flow(cc.clone(), bytes);
    let mut second = flow(cc, bytes);
    second.after_flow = Some(0);
    second.start_ms = 0.0;
    second.resume_path = variant == "careful-resume";
    vec![first, second]
}

/// Every scenario.
pub fn scenarios(plan: &Plan) -> Vec<Scenario> {
    let seeds = plan.seeds(plan.pick(3, 1));
    let mut out = Vec::new();
    for point in points(plan) {
        for cc in controllers(point.part, plan) {
            let Some(config) = controller(cc) else {
                continue;
            };
            for variant in VARIANTS {
                let mut flows =
                    two_connections(config.clone(), transfer_bytes(point.rate_bps), variant);
                for flow in &mut flows {
                    flow.corruption_notices = point.kind != "corrupt-notices-off";
                }
                let mut reverse = link(point.rtt_ms / 2.0, point.rate_bps, 1000, 0.0);
                leo_steps(&mut reverse, point);
                let mut s = scenario(
                    format!(
                        "{}-{}-{}-rtt-{}-{}mbit-{cc}-{variant}",
                        point.part,
                        point.kind,
                        name_number(point.p),
                        name_number(point.rtt_ms),
                        point.rate_bps / 1_000_000
                    ),
                    seeds.clone(),
                    TIME_LIMIT_S,
                    forward(point),
                    reverse,
                    flows,
                );
                s.sample_interval_ms = 200;
                label(&mut s, "part", point.part);
                label(&mut s, "kind", point.kind);
                label(&mut s, "p", point.p);
                label(&mut s, "rtt_ms", point.rtt_ms);
                label(&mut s, "rate_mbps", point.rate_bps as f64 / 1e6);
                label(&mut s, "leo", point.leo_step_ms.is_some());
                label(&mut s, "cc", cc);
                label(&mut s, "variant", variant);
                out.push(s);
            }
        }
    }
    out.extend(changed_scenarios(plan, &seeds));
    out
}

/// `changed`: 50 Mb/s and 600 ms at first, no random loss; at
/// `CHANGE_AT_S` the data direction drops to 25 Mb/s (and, for
/// `halved-rtt-doubled`, both directions' delay doubles). A CUBIC flow
/// joins `COMPETITOR_LEAD_S` before the change and runs to the end; the
/// second connection starts `SECOND_AFTER_CHANGE_S` after it.
fn changed_scenarios(plan: &Plan, seeds: &[u64]) -> Vec<Scenario> {
    let rate: u64 = plan.pick(50_000_000, 10_000_000);
    let rtt_ms = 600.0;
    let bytes = transfer_bytes(rate) / 2;
    let change = Duration::from_secs_f64(CHANGE_AT_S);
    let forever = Duration::from_secs(1_000_000);
    let mut out = Vec::new();
    for change_kind in ["halved", "halved-rtt-doubled"] {
        for cc in plan.pick(vec!["cubic", "bbr"], vec!["cubic"]) {
            let Some(config) = controller(cc) else {
                continue;
            };
            for variant in VARIANTS {
                let mut forward = link(rtt_ms / 2.0, rate, bdp_packets(rate, rtt_ms), 0.0);
                forward.rate_steps = vec![
                    RateStep {
                        rate_bps: rate,
                        duration_ms: change,
                    },
                    RateStep {
                        rate_bps: rate / 2,
                        duration_ms: forever,
                    },
                ];
                let mut reverse = link(rtt_ms / 2.0, rate, 1000, 0.0);
                if change_kind == "halved-rtt-doubled" {
                    for direction in [&mut forward, &mut reverse] {
                        direction.delay_steps = vec![
                            DelayStep {
                                delay_ms: Duration::from_secs_f64(rtt_ms / 2e3),
                                duration_ms: change,
                            },
                            DelayStep {
                                delay_ms: Duration::from_secs_f64(rtt_ms / 1e3),
                                duration_ms: forever,
                            },
                        ];
                    }
                }
                let mut flows = two_connections(config.clone(), bytes, variant);
                flows[1].start_ms = (CHANGE_AT_S + SECOND_AFTER_CHANGE_S) * 1e3;
                let Some(cubic) = controller("cubic") else {
                    continue;
                };
                let mut competitor = flow(cubic, 1 << 40);
                competitor.start_ms = (CHANGE_AT_S - COMPETITOR_LEAD_S) * 1e3;
                flows.push(competitor);
                let time_limit = CHANGE_AT_S + SECOND_AFTER_CHANGE_S + plan.pick(60.0, 30.0);
                let mut s = scenario(
                    format!("changed-{change_kind}-{cc}-{variant}"),
                    seeds.to_vec(),
                    time_limit,
                    forward,
                    reverse,
                    flows,
                );
                s.sample_interval_ms = 200;
                label(&mut s, "part", "changed");
                label(&mut s, "change", change_kind);
                label(&mut s, "rate_mbps", rate as f64 / 1e6);
                label(&mut s, "cc", cc);
                label(&mut s, "variant", variant);
                out.push(s);
            }
        }
    }
    out
}

/// goodput/(capacity·(1 − p)) of flow `index` of every run, seed order.
fn fractions(report: &Report, index: usize) -> Vec<f64> {
    let p = report_f64(report, "p").unwrap_or(0.0);
    let rate = report_f64(report, "rate_mbps").unwrap_or(0.0) * 1e6;
    let ceiling = rate * (1.0 - p);
    report
        .runs
        .iter()
        .filter_map(|run| run_goodputs_bps(run).get(index).copied())
        .map(|goodput| goodput / ceiling)
        .collect()
}

fn first_byte_s(report: &Report, index: usize) -> Vec<f64> {
    report
        .runs
        .iter()
        .filter_map(|run| run.flows.get(index)?.first_byte_s)
        .collect()
}

fn find<'a>(reports: &'a [Report], part: &str, like: &Report, variant: &str) -> Option<&'a Report> {
    let key = |r: &Report| {
        (
            report_str(r, "kind").map(str::to_string),
            report_f64(r, "p").map(f64::to_bits),
            report_f64(r, "rtt_ms").map(f64::to_bits),
            report_f64(r, "rate_mbps").map(f64::to_bits),
            report_str(r, "change").map(str::to_string),
            report_str(r, "cc").map(str::to_string),
        )
    };
    let wanted = key(like);
    reports.iter().find(|r| {
        report_str(r, "part") == Some(part)
            && report_str(r, "variant") == Some(variant)
            && key(r) == wanted
    })
}

fn met(value: Option<f64>, target: f64) -> &'static str {
    match value {
        Some(v) if v >= target => "yes",
        Some(_) => "no",
        None => "—",
    }
}

/// The targets and sweep tables.
fn transfer_table(reports: &[Report], part: &str) -> Table {
    let mut table = Table::new(
        part,
        &[
            "kind",
            "p",
            "rtt_ms",
            "Mb/s",
            "cc",
            "first",
            "second, fresh",
            "second, Careful Resume",
            "TTFB first s",
            "TTFB resumed s",
            "jumped",
            "retreated",
            "resumed ≥ 0.85",
            "first ≥ 0.6",
        ],
    );
    for fresh in reports.iter().filter(|r| {
        report_str(r, "part") == Some(part) && report_str(r, "variant") == Some("fresh")
    }) {
        let resumed = find(reports, part, fresh, "careful-resume");
        let first = median(&fractions(fresh, 0));
        let second_fresh = median(&fractions(fresh, 1));
        let second_cr = resumed.and_then(|r| median(&fractions(r, 1)));
        let statuses: Vec<_> = resumed
            .map(|r| {
                r.runs
                    .iter()
                    .filter_map(|run| run.flows.get(1)?.client_stats.careful_resume)
                    .collect()
            })
            .unwrap_or_default();
        let count = |f: fn(&sift_cc::CarefulResumeStatus) -> bool| {
            format!(
                "{}/{}",
                statuses.iter().filter(|s| f(s)).count(),
                resumed.map_or(0, |r| r.runs.len())
            )
        };
        let leo = fresh
            .runs
            .first()
            .and_then(|run| run.params.get("leo"))
            .and_then(|v| v.as_bool())
            .unwrap_or(false);
        table.push(vec![
            report_str(fresh, "kind").unwrap_or("").to_string(),
            format!("{}", report_f64(fresh, "p").unwrap_or(0.0)),
            format!(
                "{}{}",
                report_f64(fresh, "rtt_ms").unwrap_or(0.0),
                if leo { " (LEO steps)" } else { "" }
            ),
            format!("{}", report_f64(fresh, "rate_mbps").unwrap_or(0.0)),
            report_str(fresh, "cc").unwrap_or("").to_string(),
            cell(first, 3),
            cell(second_fresh, 3),
            cell(second_cr, 3),
            cell(median(&first_byte_s(fresh, 0)), 2),
            cell(resumed.and_then(|r| median(&first_byte_s(r, 1))), 2),
            count(|s| s.jumped),
            count(|s| s.retreated),
            met(second_cr, RESUMED_TARGET).to_string(),
            met(first, FIRST_TARGET).to_string(),
        ]);
    }
    table
}

/// What the second connection lost and cost the competitor, per run.
struct ChangedRun {
    lost: u64,
    competitor_bps: Option<f64>,
    retreated: bool,
}

fn changed_run(run: &RunReport) -> Option<ChangedRun> {
    let second = run.flows.get(1)?;
    let competitor = run.flows.get(2)?;
    let from = second.start_s;
    Some(ChangedRun {
        lost: second.client_stats.packets_lost,
        competitor_bps: window_goodput_bps(&competitor.timeseries, from, from + COST_WINDOW_S),
        retreated: second
            .client_stats
            .careful_resume
            .is_some_and(|s| s.retreated),
    })
}

fn changed_table(reports: &[Report]) -> Table {
    let mut table = Table::new(
        "changed",
        &[
            "change",
            "cc",
            "lost, fresh",
            "lost, Careful Resume",
            "retreated",
            "competitor Mb/s, fresh",
            "competitor Mb/s, Careful Resume",
            "kept share",
            "loses no more",
            "kept ≥ 0.8",
        ],
    );
    for fresh in reports.iter().filter(|r| {
        report_str(r, "part") == Some("changed") && report_str(r, "variant") == Some("fresh")
    }) {
        let Some(resumed) = find(reports, "changed", fresh, "careful-resume") else {
            continue;
        };
        let runs = |r: &Report| r.runs.iter().filter_map(changed_run).collect::<Vec<_>>();
        let (f, c) = (runs(fresh), runs(resumed));
        let lost = |v: &[ChangedRun]| median(&v.iter().map(|r| r.lost as f64).collect::<Vec<_>>());
        let competitor = |v: &[ChangedRun]| {
            median(
                &v.iter()
                    .filter_map(|r| r.competitor_bps)
                    .collect::<Vec<_>>(),
            )
        };
        let (lost_f, lost_c) = (lost(&f), lost(&c));
        let (comp_f, comp_c) = (competitor(&f), competitor(&c));
        let kept = comp_c
            .zip(comp_f)
            .filter(|(_, f)| *f > 0.0)
            .map(|(c, f)| c / f);
        table.push(vec![
            report_str(fresh, "change").unwrap_or("").to_string(),
            report_str(fresh, "cc").unwrap_or("").to_string(),
            cell(lost_f, 0),
            cell(lost_c, 0),
            format!("{}/{}", c.iter().filter(|r| r.retreated).count(), c.len()),
            cell(comp_f.map(|b| b / 1e6), 2),
            cell(comp_c.map(|b| b / 1e6), 2),
            cell(kept, 3),
            match lost_f.zip(lost_c) {
                Some((f, c)) if c <= f => "yes".into(),
                Some(_) => "no".into(),
                None => "—".into(),
            },
            met(kept, COMPETITOR_TARGET).to_string(),
        ]);
    }
    table
}

/// The summary.
pub fn compare(reports: &[Report]) -> Comparison {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "Two connections one after the other on one bottleneck (queue one BDP, data \
         direction impaired); the second is `fresh` or resumes from the first one's saved \
         path state under Careful Resume (RFC 9959). Fractions are goodput over the whole \
         transfer (handshake included) / (capacity·(1 − p)), medians over seeds; TTFB is \
         the time from a connection's start to the first payload byte at the receiver. \
         `jumped`/`retreated` count runs.\n"
    );
    let targets = transfer_table(reports, "targets");
    let sweep = transfer_table(reports, "sweep");
    let changed = changed_table(reports);
    for (title, table) in [
        ("Targets (issue 34)", &targets),
        (
            "Sweep: GEO 300–1200 ms, 5–100 Mb/s, 0–2% loss; LEO handovers",
            &sweep,
        ),
    ] {
        let _ = writeln!(md, "### {title}\n");
        md.push_str(&table.to_markdown());
        md.push('\n');
    }
    let _ = writeln!(
        md,
        "### The path changed between the two connections\n\n\
         At {CHANGE_AT_S} s the data direction's capacity halves (and in \
         `halved-rtt-doubled` both directions' delay doubles); a CUBIC flow started \
         {COMPETITOR_LEAD_S} s before and runs to the end; the second connection starts \
         {SECOND_AFTER_CHANGE_S} s after the change. `lost` is the second connection's \
         packets declared lost (median); the competitor's throughput is over the first \
         {COST_WINDOW_S} s of the second connection, and `kept share` is Careful Resume's \
         over fresh's.\n"
    );
    md.push_str(&changed.to_markdown());
    md.push('\n');
    Comparison {
        markdown: md,
        tables: vec![targets, sweep, changed],
        figures: ["targets", "sweep"]
            .into_iter()
            .flat_map(|part| figures(reports, part))
            .collect(),
    }
}

/// Megabytes delivered against seconds since the connection started, of
/// its first seed's run, from the flow's time series.
fn delivery_curve(label: &str, flow: &FlowReport) -> Series {
    Series {
        label: label.into(),
        points: flow
            .timeseries
            .iter()
            .filter(|sample| sample.t_s >= flow.start_s)
            .map(|sample| {
                (
                    sample.t_s - flow.start_s,
                    sample.bytes_delivered as f64 / 1e6,
                )
            })
            .collect(),
    }
}

/// One figure per cell of `part`: the first connection, a fresh second and
/// a resumed second, each from its own start, so that Careful Resume's
/// head start shows as the gap between the two second connections.
fn figures(reports: &[Report], part: &str) -> Vec<Figure> {
    let mut figures = Vec::new();
    for fresh in reports.iter().filter(|r| {
        report_str(r, "part") == Some(part) && report_str(r, "variant") == Some("fresh")
    }) {
        let Some(fresh_run) = fresh.runs.first() else {
            continue;
        };
        let resumed_run = find(reports, part, fresh, "careful-resume").and_then(|r| r.runs.first());
        let mut series = Vec::new();
        let flows = [
            ("first connection", Some(fresh_run), 0),
            ("second, fresh", Some(fresh_run), 1),
            ("second, Careful Resume", resumed_run, 1),
        ];
        for (label, run, index) in flows {
            if let Some(flow) = run.and_then(|run| run.flows.get(index)) {
                series.push(delivery_curve(label, flow));
            }
        }
        let name = fresh
            .experiment
            .strip_suffix("-fresh")
            .unwrap_or(&fresh.experiment)
            .to_string();
        figures.push(Figure {
            title: format!(
                "Long paths, {name}: data delivered from each connection's start (seed {})",
                fresh_run.seed
            ),
            name,
            x_label: "seconds since the connection started".into(),
            y_label: "MB delivered".into(),
            log_x: false,
            series,
        });
    }
    figures
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_point_runs_both_variants_and_the_second_waits_for_the_first() {
        let scenarios = scenarios(&Plan::default());
        for s in &scenarios {
            assert_eq!(s.flows[1].after_flow, Some(0), "{}", s.name);
            let resumes = s.name.ends_with("careful-resume");
            assert_eq!(s.flows[1].resume_path, resumes, "{}", s.name);
        }
        let count = |v: &str| scenarios.iter().filter(|s| s.name.ends_with(v)).count();
        assert_eq!(count("-fresh"), count("-careful-resume"));
        // The three target cells, with three controllers each.
        let targets = scenarios
            .iter()
            .filter(|s| s.name.starts_with("targets-"))
            .count();
        assert_eq!(targets, 3 * 3 * 2);
    }

    #[test]
    fn a_target_cell_moves_50_mb_at_50_mbit_over_600_ms() {
        assert_eq!(transfer_bytes(50_000_000), 50_000_000);
        assert_eq!(bdp_packets(50_000_000, 600.0), 2778);
    }

    #[test]
    fn every_transfer_cell_draws_its_three_connections() {
        // The quick plan's transfer cells, cut to 300 kB so that a debug
        // build simulates them in moments.
        let reports: Vec<Report> = scenarios(&Plan {
            quick: true,
            seeds: None,
        })
        .into_iter()
        .filter(|s| !s.name.starts_with("changed"))
        .map(|mut s| {
            for flow in &mut s.flows {
                flow.bytes = 300_000;
            }
            crate::lab::simulate(&s).unwrap()
        })
        .collect();
        // One target cell and one sweep point, fresh and resumed.
        assert_eq!(reports.len(), 4);
        let figures = compare(&reports).figures;
        assert_eq!(figures.len(), 2);
        for figure in &figures {
            let labels: Vec<&str> = figure.series.iter().map(|s| s.label.as_str()).collect();
            assert_eq!(
                labels,
                [
                    "first connection",
                    "second, fresh",
                    "second, Careful Resume"
                ],
                "{}",
                figure.name
            );
            for series in &figure.series {
                let (t, delivered) = *series.points.last().expect("a curve has points");
                assert!(
                    t > 0.0 && delivered >= 0.3,
                    "{}: {t} s, {delivered} MB",
                    figure.name
                );
            }
        }
    }
}
