//! Cellular-like paths (issue 36): every controller where the radio delays
//! rather than loses. Not a paper's experiment; it runs sift's defaults.
//!
//! A cellular link delivers in order (RLC acknowledged mode) with a delay
//! that varies from packet to packet, stalls now and then (a handover, a
//! deep fade), and a rate that moves with the scheduler's share. On the
//! data direction of a 20 ms-each-way path with a 200-packet queue:
//! - `steady`: 20 Mb/s;
//! - `radio`: the rate steps 30 → 10 → 25 → 8 Mb/s (3, 2, 2, 3 s,
//!   repeating) and the serializer stalls for 150 ms every 5 s, packets
//!   waiting rather than lost (`rate-steps`, `stall`);
//!
//! each with in-order jitter 0, 5 or 20 ms (normal, or Pareto-tailed) and
//! 0, 1 or 2% random loss. A cell's figure is goodput / (capacity ·
//! (1 − p)), the median over seeds, the capacity being what the link
//! offered while the flow ran. The sharing part puts each controller
//! beside one CUBIC flow on a few of the cells and reports both shares and
//! Jain's index: what the cell's best controller costs the others.

use std::fmt::Write;
use std::time::Duration;

use super::{cell, controller, flow, label, link, name_number, report_f64, report_str, scenario};
use crate::lab::metrics::{jain_fairness_index, run_goodputs_bps};
use crate::lab::{Comparison, Experiment, Figure, Plan, Series, Table};
use crate::sim::link::{rate_at, Distribution, LinkConfig, Outage, RateStep};
use crate::sim::{Report, Scenario};

/// The experiment.
pub const EXPERIMENT: Experiment = Experiment {
    name: "cellular",
    title: "Cellular-like paths: in-order jitter (normal and Pareto), stalls and rate steps, with 0–2% loss; every controller, and what the best costs CUBIC",
    scenarios,
    compare,
};

/// The steady profile's rate.
pub const RATE_BPS: u64 = 20_000_000;
/// One-way propagation delay, each direction.
pub const DELAY_MS: f64 = 20.0;
/// Drop-tail queue at the bottleneck, packets.
pub const QUEUE_PACKETS: usize = 200;
/// Bytes per single-flow transfer.
pub const TRANSFER_BYTES: u64 = 10_000_000;
/// Seconds of each sharing run.
pub const SHARING_S: f64 = 20.0;
/// The radio profile's rate schedule: (Mb/s, seconds), repeating.
const RADIO_STEPS: [(u64, u64); 4] = [(30, 3), (10, 2), (25, 2), (8, 3)];
/// The radio profile's stalls: 150 ms every 5 s.
const RADIO_STALL_MS: (u64, u64) = (5_000, 150);
/// Random loss of each cell.
const LOSSES: [f64; 3] = [0.0, 0.01, 0.02];

/// The path's profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Profile {
    Steady,
    Radio,
}

impl Profile {
    fn name(self) -> &'static str {
        match self {
            Profile::Steady => "steady",
            Profile::Radio => "radio",
        }
    }

    /// Mean capacity: the schedule's mean rate, less the time stalled.
    fn capacity_bps(self) -> f64 {
        match self {
            Profile::Steady => RATE_BPS as f64,
            Profile::Radio => {
                let bits: u64 = RADIO_STEPS
                    .iter()
                    .map(|(mbit, s)| mbit * 1_000_000 * s)
                    .sum();
                let secs: u64 = RADIO_STEPS.iter().map(|(_, s)| s).sum();
                let (every, stalled) = RADIO_STALL_MS;
                bits as f64 / secs as f64 * (1.0 - stalled as f64 / every as f64)
            }
        }
    }

    /// Mean capacity over the first `seconds` of a run (the link's epoch
    /// is the run's start, where every flow starts): what a transfer that
    /// long was offered, stepping the schedule and the stalls a
    /// millisecond at a time as the link does.
    fn capacity_over_bps(self, seconds: f64) -> f64 {
        if self == Profile::Steady {
            return RATE_BPS as f64;
        }
        let ms = (seconds * 1e3).round().max(1.0) as u64;
        let steps = radio_steps();
        let (every, stalled) = RADIO_STALL_MS;
        let mut bits = 0.0;
        for t in 0..ms {
            let stalling = t >= every && t % every < stalled;
            if !stalling {
                let rate = rate_at(&steps, Duration::from_millis(t)).unwrap_or(0);
                bits += rate as f64 / 1e3;
            }
        }
        bits / (ms as f64 / 1e3)
    }
}

/// In-order jitter of a cell: σ in ms and its distribution.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Jitter {
    ms: f64,
    distribution: Distribution,
}

impl Jitter {
    fn name(self) -> String {
        match self.ms {
            0.0 => "none".into(),
            ms => format!("{ms}ms-{}", self.distribution),
        }
    }
}

fn radio_steps() -> Vec<RateStep> {
    RADIO_STEPS
        .iter()
        .map(|&(mbit, secs)| RateStep {
            rate_bps: mbit * 1_000_000,
            duration_ms: Duration::from_secs(secs),
        })
        .collect()
}

/// The data direction of a cell.
fn forward_link(profile: Profile, jitter: Jitter, loss: f64) -> LinkConfig {
    let mut forward = link(DELAY_MS, RATE_BPS, QUEUE_PACKETS, loss);
    if jitter.ms > 0.0 {
        // Behind the rate, without `jitter-reorder`: in order, as RLC AM.
        forward.jitter_ms = Duration::from_secs_f64(jitter.ms / 1e3);
        forward.distribution = jitter.distribution;
    }
    if profile == Profile::Radio {
        forward.rate_steps = radio_steps();
        forward.rate_bps = forward.rate_steps.first().map(|step| step.rate_bps);
        let (every, stalled) = RADIO_STALL_MS;
        forward.stall = Some(Outage {
            every_ms: Duration::from_millis(every),
            duration_ms: Duration::from_millis(stalled),
        });
    }
    forward
}

fn jitters(plan: &Plan) -> Vec<Jitter> {
    let normal = |ms| Jitter {
        ms,
        distribution: Distribution::Normal,
    };
    let pareto = |ms| Jitter {
        ms,
        distribution: Distribution::Pareto,
    };
    plan.pick(
        vec![
            normal(0.0),
            normal(5.0),
            normal(20.0),
            pareto(5.0),
            pareto(20.0),
        ],
        vec![normal(0.0), pareto(5.0)],
    )
}

/// The cells the sharing part runs on.
fn sharing_cells(plan: &Plan) -> Vec<(Profile, Jitter, f64)> {
    let mut cells = Vec::new();
    for profile in [Profile::Steady, Profile::Radio] {
        for jitter in jitters(plan)
            .into_iter()
            .filter(|j| j.ms == 0.0 || (j.ms == 5.0 && j.distribution == Distribution::Pareto))
        {
            for loss in plan.pick(vec![0.0, 0.01], vec![0.01]) {
                cells.push((profile, jitter, loss));
            }
        }
    }
    cells
}

fn labels(s: &mut Scenario, part: &str, profile: Profile, jitter: Jitter, loss: f64, cc: &str) {
    label(s, "part", part);
    label(s, "profile", profile.name());
    label(s, "jitter", jitter.name());
    label(s, "loss", loss);
    label(s, "cc", cc);
}

/// Every controller alone on every cell, then beside CUBIC on a few.
pub fn scenarios(plan: &Plan) -> Vec<Scenario> {
    let seeds = plan.seeds(3);
    let bytes = plan.pick(TRANSFER_BYTES, 2_000_000);
    let controllers: Vec<&str> = plan.pick(super::drop_tail_controllers(), vec!["cubic", "bbr"]);
    let reverse = link(DELAY_MS, RATE_BPS, QUEUE_PACKETS, 0.0);
    let mut out = Vec::new();
    for profile in [Profile::Steady, Profile::Radio] {
        for jitter in jitters(plan) {
            for loss in plan.pick(LOSSES.to_vec(), vec![0.0, 0.01]) {
                for &cc in &controllers {
                    let Some(config) = controller(cc) else {
                        continue;
                    };
                    let mut s = scenario(
                        format!(
                            "{}-jitter-{}-loss-{}-{cc}",
                            profile.name(),
                            jitter.name(),
                            name_number(loss)
                        ),
                        seeds.clone(),
                        300.0,
                        forward_link(profile, jitter, loss),
                        reverse.clone(),
                        vec![flow(config, bytes)],
                    );
                    s.sample_interval_ms = 200;
                    labels(&mut s, "alone", profile, jitter, loss, cc);
                    out.push(s);
                }
            }
        }
    }
    let sharing_s = plan.pick(SHARING_S, 5.0);
    for (profile, jitter, loss) in sharing_cells(plan) {
        for &cc in controllers.iter().filter(|cc| **cc != "cubic") {
            let flows = ["cubic", cc]
                .iter()
                .filter_map(|name| Some(flow(controller(name)?, 1 << 40)))
                .collect();
            let mut s = scenario(
                format!(
                    "sharing-{}-jitter-{}-loss-{}-cubic-{cc}",
                    profile.name(),
                    jitter.name(),
                    name_number(loss)
                ),
                seeds.clone(),
                sharing_s,
                forward_link(profile, jitter, loss),
                reverse.clone(),
                flows,
            );
            s.sample_interval_ms = 500;
            labels(&mut s, "sharing", profile, jitter, loss, cc);
            out.push(s);
        }
    }
    out
}

fn median(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(values[n / 2]),
        _ => Some((values[n / 2 - 1] + values[n / 2]) / 2.0),
    }
}

/// The report of one part, cell and controller.
fn find<'a>(
    reports: &'a [Report],
    part: &str,
    profile: &str,
    jitter: &str,
    loss: f64,
    cc: &str,
) -> Option<&'a Report> {
    reports.iter().find(|r| {
        report_str(r, "part") == Some(part)
            && report_str(r, "profile") == Some(profile)
            && report_str(r, "jitter") == Some(jitter)
            && report_f64(r, "loss") == Some(loss)
            && report_str(r, "cc") == Some(cc)
    })
}

/// Median over seeds of goodput / (capacity · (1 − p)) of a flow alone.
fn fraction(
    reports: &[Report],
    profile: Profile,
    jitter: &str,
    loss: f64,
    cc: &str,
) -> Option<f64> {
    let report = find(reports, "alone", profile.name(), jitter, loss, cc)?;
    median(
        report
            .runs
            .iter()
            .filter_map(|run| {
                // What the link offered while the flow ran.
                let flow = run.flows.first()?;
                let seconds = flow.completion_s.unwrap_or(run.end_s - flow.start_s);
                let goodput = run_goodputs_bps(run).first().copied()?;
                Some(goodput / (profile.capacity_over_bps(seconds) * (1.0 - loss)))
            })
            .collect(),
    )
}

/// Medians over seeds of CUBIC's and the challenger's share of the two
/// flows' bytes, and of Jain's index.
fn sharing(
    reports: &[Report],
    profile: Profile,
    jitter: &str,
    loss: f64,
    cc: &str,
) -> Option<(f64, f64, f64)> {
    let report = find(reports, "sharing", profile.name(), jitter, loss, cc)?;
    let (mut cubic, mut other, mut jain) = (Vec::new(), Vec::new(), Vec::new());
    for run in &report.runs {
        let goodputs = run_goodputs_bps(run);
        let total: f64 = goodputs.iter().sum();
        if goodputs.len() == 2 && total > 0.0 {
            cubic.push(goodputs[0] / total);
            other.push(goodputs[1] / total);
            jain.extend(jain_fairness_index(&goodputs));
        }
    }
    Some((median(cubic)?, median(other)?, median(jain)?))
}

/// The values of a label across reports of a part, in first-seen order.
fn seen(reports: &[Report], part: &str, key: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in reports
        .iter()
        .filter(|r| report_str(r, "part") == Some(part))
    {
        let value = report_str(r, key)
            .map(str::to_string)
            .or_else(|| report_f64(r, key).map(|v| v.to_string()));
        if let Some(value) = value {
            if !out.contains(&value) {
                out.push(value);
            }
        }
    }
    out
}

/// One table per profile (cells × controllers), the best of each cell
/// named, and the sharing table.
pub fn compare(reports: &[Report]) -> Comparison {
    let controllers = seen(reports, "alone", "cc");
    let jitter_names = seen(reports, "alone", "jitter");
    let losses: Vec<f64> = seen(reports, "alone", "loss")
        .iter()
        .filter_map(|l| l.parse().ok())
        .collect();
    let mut md = String::new();
    let _ = writeln!(
        md,
        "One transfer of {} MB per run (or less in a quick plan), {DELAY_MS} ms each way, a \
         {QUEUE_PACKETS}-packet queue; impairments on the data direction, jitter in order. \
         Cells: goodput / (capacity · (1 − p)), median over seeds, the capacity being what \
         the link offered while the flow ran: {:.1} Mb/s steady; radio's schedule averages \
         {:.2} Mb/s over a period (rate steps less stalls), more early on.\n",
        TRANSFER_BYTES / 1_000_000,
        Profile::Steady.capacity_bps() / 1e6,
        Profile::Radio.capacity_bps() / 1e6,
    );
    let mut tables = Vec::new();
    let mut best = Table::new(
        "best",
        &["profile", "jitter", "loss", "best", "fraction", "runner-up"],
    );
    for profile in [Profile::Steady, Profile::Radio] {
        let name = profile.name().to_string();
        let mut columns = vec!["jitter", "loss"];
        columns.extend(controllers.iter().map(String::as_str));
        let mut table = Table::new(&name, &columns);
        for jitter in &jitter_names {
            for &loss in &losses {
                let values: Vec<(String, Option<f64>)> = controllers
                    .iter()
                    .map(|cc| (cc.clone(), fraction(reports, profile, jitter, loss, cc)))
                    .collect();
                let mut row = vec![jitter.clone(), format!("{}%", loss * 100.0)];
                row.extend(values.iter().map(|(_, v)| cell(*v, 3)));
                table.push(row);
                let mut ranked: Vec<(String, f64)> = values
                    .into_iter()
                    .filter_map(|(cc, v)| Some((cc, v?)))
                    .collect();
                ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
                if let Some((top, value)) = ranked.first() {
                    best.push(vec![
                        profile.name().into(),
                        jitter.clone(),
                        format!("{}%", loss * 100.0),
                        top.clone(),
                        format!("{value:.3}"),
                        ranked
                            .get(1)
                            .map_or("—".into(), |(cc, v)| format!("{cc} {v:.3}")),
                    ]);
                }
            }
        }
        let _ = writeln!(md, "#### {} profile\n", profile.name());
        md.push_str(&table.to_markdown());
        md.push('\n');
        tables.push(table);
    }
    md.push_str("#### The best controller of each cell\n\n");
    md.push_str(&best.to_markdown());
    md.push('\n');
    tables.push(best);

    let mut shared = Table::new(
        "sharing",
        &[
            "profile",
            "jitter",
            "loss",
            "challenger",
            "cubic share",
            "challenger share",
            "Jain",
        ],
    );
    for profile in [Profile::Steady, Profile::Radio] {
        for jitter in seen(reports, "sharing", "jitter") {
            for loss in seen(reports, "sharing", "loss")
                .iter()
                .filter_map(|l| l.parse::<f64>().ok())
            {
                for cc in seen(reports, "sharing", "cc") {
                    let Some((cubic, other, jain)) = sharing(reports, profile, &jitter, loss, &cc)
                    else {
                        continue;
                    };
                    shared.push(vec![
                        profile.name().into(),
                        jitter.clone(),
                        format!("{}%", loss * 100.0),
                        cc,
                        format!("{cubic:.3}"),
                        format!("{other:.3}"),
                        format!("{jain:.3}"),
                    ]);
                }
            }
        }
    }
    let _ = writeln!(
        md,
        "#### Beside one CUBIC flow ({SHARING_S} s, both from t = 0)\n\nShares of the two flows' \
         bytes, medians over seeds: a challenger that takes much more than half costs CUBIC \
         that much.\n"
    );
    md.push_str(&shared.to_markdown());
    tables.push(shared);
    Comparison {
        markdown: md,
        tables,
        figures: figures(reports, &controllers, &jitter_names, &losses),
    }
}

/// One figure per profile and jitter: each controller's goodput fraction
/// across the loss sweep, what the profile's table holds, drawn.
fn figures(
    reports: &[Report],
    controllers: &[String],
    jitter_names: &[String],
    losses: &[f64],
) -> Vec<Figure> {
    let mut figures = Vec::new();
    for profile in [Profile::Steady, Profile::Radio] {
        for jitter in jitter_names {
            let series = controllers
                .iter()
                .map(|cc| Series {
                    label: cc.clone(),
                    points: losses
                        .iter()
                        .filter_map(|&loss| {
                            Some((loss * 100.0, fraction(reports, profile, jitter, loss, cc)?))
                        })
                        .collect(),
                })
                .collect();
            figures.push(Figure {
                name: format!("{}-jitter-{jitter}", profile.name()),
                title: format!(
                    "Cellular, {} profile, jitter {jitter}: goodput across the loss sweep",
                    profile.name()
                ),
                x_label: "random loss (%)".into(),
                y_label: "goodput / (capacity · (1 − p))".into(),
                log_x: false,
                series,
            });
        }
    }
    figures
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_radio_profile_steps_its_rate_and_stalls_and_jitter_keeps_order() {
        let jitter = Jitter {
            ms: 5.0,
            distribution: Distribution::Pareto,
        };
        let radio = forward_link(Profile::Radio, jitter, 0.01);
        assert_eq!(
            radio.to_netem(),
            "limit 200 delay 20ms 5ms distribution pareto rate-steps 30000000bit 3s \
             10000000bit 2s 25000000bit 2s 8000000bit 3s loss random 0.01 stall 5s 150ms"
        );
        assert_eq!(radio.validate(), Ok(()));
        assert!(!radio.jitter_reorders);
        // (90 + 20 + 50 + 24) Mbit / 10 s = 18.4 Mb/s, stalled 3% of the time.
        assert!((Profile::Radio.capacity_bps() - 18.4e6 * 0.97).abs() < 1.0);
        // The first 3 s are the 30 Mb/s step; 10 s cover one period and
        // one stall (at 5 s; the next starts at 10 s).
        assert!((Profile::Radio.capacity_over_bps(2.0) - 30e6).abs() < 1.0);
        let period = 18.4e6 - 0.15 * 25e6 / 10.0;
        assert!((Profile::Radio.capacity_over_bps(10.0) - period).abs() < 1.0);
        assert_eq!(
            forward_link(
                Profile::Steady,
                Jitter {
                    ms: 0.0,
                    distribution: Distribution::Normal
                },
                0.0
            )
            .to_netem(),
            "limit 200 delay 20ms rate 20000000bit"
        );
    }

    #[test]
    fn a_quick_plan_has_both_profiles_and_a_sharing_part() {
        let plan = Plan {
            quick: true,
            seeds: Some(1),
        };
        let all = scenarios(&plan);
        let part = |p: &str| {
            all.iter()
                .filter(|s| s.params.get("part").and_then(|v| v.as_str()) == Some(p))
                .count()
        };
        // 2 profiles × 2 jitters × 2 losses × 2 controllers alone; 2
        // profiles × 2 jitters × 1 loss × 1 challenger beside CUBIC.
        assert_eq!((part("alone"), part("sharing")), (16, 4));
    }

    #[test]
    fn every_profile_and_jitter_draws_each_controller_across_the_losses() {
        // The quick plan's solo cells (two controllers), cut to 200 kB so
        // that a debug build simulates them in moments.
        let reports: Vec<Report> = scenarios(&Plan {
            quick: true,
            seeds: Some(1),
        })
        .into_iter()
        .filter(|s| report_part(s) == "alone")
        .map(|mut s| {
            for flow in &mut s.flows {
                flow.bytes = 200_000;
            }
            crate::lab::simulate(&s).unwrap()
        })
        .collect();
        // Two profiles, two jitters, two losses, two controllers.
        assert_eq!(reports.len(), 16);
        let figures = compare(&reports).figures;
        let quick_jitters = 2;
        assert_eq!(figures.len(), 2 * quick_jitters);
        for figure in &figures {
            let labels: Vec<&str> = figure.series.iter().map(|s| s.label.as_str()).collect();
            assert_eq!(labels.len(), 2, "{}: {labels:?}", figure.name);
            for series in &figure.series {
                assert!(
                    !series.points.is_empty(),
                    "{}: {}",
                    figure.name,
                    series.label
                );
                assert!(series.points.iter().all(|&(_, y)| y > 0.0 && y.is_finite()));
            }
        }
    }

    fn report_part(s: &Scenario) -> &str {
        s.params.get("part").and_then(|v| v.as_str()).unwrap_or("")
    }
}
