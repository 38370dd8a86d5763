//! Veno §III-C / Fig. 7 (Fu & Liew 2003): five connections, a mixture of
//! Reno and Veno, share a 4 Mb/s bottleneck (28-packet buffers, 120 ms
//! round trip, MSS 1460), without random loss and with 1%. Fairness within
//! each group (Jain's index) and friendliness towards Reno (Reno's average
//! throughput next to Venos, divided by its average with no Veno present,
//! Zhou et al.'s F).

use std::fmt::Write;

use super::{
    cell, classic_recovery, controller, flow, incomplete_note, kilobytes_per_s, label, link,
    name_number, paper_stack, report_f64, scenario, with_windows,
};
use crate::lab::metrics::{jain_fairness_index, mean, run_goodputs_bps, std_dev};
use crate::lab::{Comparison, Experiment, Figure, Plan, Series, Table};
use crate::sim::{Report, Scenario};

/// The experiment.
pub const EXPERIMENT: Experiment = Experiment {
    name: "veno-coexistence",
    title: "Veno §III-C / Fig. 7: five Reno/Veno connections sharing 4 Mb/s — fairness and friendliness",
    scenarios,
    compare,
};

/// Bottleneck rate both ways (§III-C: "a common bottleneck link of 4 Mb/s").
pub const RATE_BPS: u64 = 4_000_000;
/// One-way delay: the paper's 120 ms round trip, split evenly.
pub const ONE_WAY_DELAY_MS: f64 = 60.0;
/// Router buffers (§III-C: Bf = Br = 28).
pub const BUFFER_PACKETS: usize = 28;
/// Connections per experiment (Fig. 7: "a total of five connections").
pub const CONNECTIONS: usize = 5;
/// Gap between connection starts, so five handshakes do not move in lockstep.
pub const START_GAP_MS: f64 = 100.0;

fn veno_counts(plan: &Plan) -> Vec<usize> {
    plan.pick((0..=CONNECTIONS).collect(), vec![0, 2, 5])
}

/// One scenario per random-loss rate and number of Venos (the rest Reno).
pub fn scenarios(plan: &Plan) -> Vec<Scenario> {
    let seeds = plan.seeds(plan.pick(2, 1));
    let bytes = plan.pick(8_000_000, 1_000_000);
    let mut out = Vec::new();
    for loss in [0.0, 0.01] {
        for venos in veno_counts(plan) {
            let flows = (0..CONNECTIONS)
                .filter_map(|i| {
                    let cc = if i < venos { "veno" } else { "reno" };
                    let mut transfer =
                        flow(paper_stack(with_windows(controller(cc)?, 1, 1)), bytes);
                    transfer.max_datagram_size = Some(1460);
                    transfer.pmtud = false; // the paper's packet size throughout
                    transfer.recovery = classic_recovery();
                    transfer.start_ms = i as f64 * START_GAP_MS;
                    Some(transfer)
                })
                .collect();
            let mut s = scenario(
                format!("venos-{venos}-loss-{}", name_number(loss)),
                seeds.clone(),
                5000.0,
                link(ONE_WAY_DELAY_MS, RATE_BPS, BUFFER_PACKETS, loss),
                link(ONE_WAY_DELAY_MS, RATE_BPS, BUFFER_PACKETS, 0.0),
                flows,
            );
            label(&mut s, "venos", venos as u64);
            label(&mut s, "loss", loss);
            out.push(s);
        }
    }
    out
}

/// Per-scenario numbers, averaged over seeds.
struct Mix {
    loss: f64,
    venos: usize,
    reno_mean: Option<f64>,
    reno_sd: Option<f64>,
    veno_mean: Option<f64>,
    veno_sd: Option<f64>,
    jain_all: Option<f64>,
    jain_reno: Option<f64>,
    jain_veno: Option<f64>,
}

fn mix(report: &Report) -> Option<Mix> {
    let loss = report_f64(report, "loss")?;
    let venos = report_f64(report, "venos")? as usize;
    let (mut reno, mut veno) = (Vec::new(), Vec::new());
    let (mut jain_all, mut jain_reno, mut jain_veno) = (Vec::new(), Vec::new(), Vec::new());
    for run in &report.runs {
        let goodputs: Vec<(String, f64)> = run
            .flows
            .iter()
            .zip(run_goodputs_bps(run))
            .map(|(flow, g)| (flow.cc.clone(), kilobytes_per_s(g)))
            .collect();
        let of = |cc: &str| -> Vec<f64> {
            goodputs
                .iter()
                .filter(|(c, _)| c == cc)
                .map(|(_, g)| *g)
                .collect()
        };
        let (r, v) = (of("reno"), of("veno"));
        jain_all.extend(jain_fairness_index(
            &goodputs.iter().map(|(_, g)| *g).collect::<Vec<_>>(),
        ));
        jain_reno.extend((r.len() > 1).then(|| jain_fairness_index(&r)).flatten());
        jain_veno.extend((v.len() > 1).then(|| jain_fairness_index(&v)).flatten());
        reno.extend(r);
        veno.extend(v);
    }
    Some(Mix {
        loss,
        venos,
        reno_mean: mean(&reno),
        reno_sd: std_dev(&reno),
        veno_mean: mean(&veno),
        veno_sd: std_dev(&veno),
        jain_all: mean(&jain_all),
        jain_reno: mean(&jain_reno),
        jain_veno: mean(&jain_veno),
    })
}

/// Puts the mixes next to Fig. 7's observations.
pub fn compare(reports: &[Report]) -> Comparison {
    let mixes: Vec<Mix> = reports.iter().filter_map(mix).collect();
    let mut table = Table::new(
        "coexistence",
        &[
            "loss",
            "venos",
            "reno mean (kB/s)",
            "reno sd",
            "veno mean (kB/s)",
            "veno sd",
            "Jain (all 5)",
            "Jain (renos)",
            "Jain (venos)",
            "friendliness F",
        ],
    );
    let mut series = Vec::new();
    for loss in [0.0, 0.01] {
        let all_reno = mixes
            .iter()
            .find(|m| m.loss == loss && m.venos == 0)
            .and_then(|m| m.reno_mean);
        let mut reno_line = Vec::new();
        let mut veno_line = Vec::new();
        for m in mixes.iter().filter(|m| m.loss == loss) {
            let friendliness = match (m.reno_mean, all_reno) {
                (Some(r), Some(base)) if base > 0.0 => Some(r / base),
                _ => None,
            };
            table.push(vec![
                format!("{loss}"),
                m.venos.to_string(),
                cell(m.reno_mean, 1),
                cell(m.reno_sd, 1),
                cell(m.veno_mean, 1),
                cell(m.veno_sd, 1),
                cell(m.jain_all, 3),
                cell(m.jain_reno, 3),
                cell(m.jain_veno, 3),
                cell(friendliness, 2),
            ]);
            if let Some(r) = m.reno_mean {
                reno_line.push((m.venos as f64, r));
            }
            if let Some(v) = m.veno_mean {
                veno_line.push((m.venos as f64, v));
            }
        }
        let tag = if loss == 0.0 { "no loss" } else { "1% loss" };
        series.push(Series {
            label: format!("reno, {tag}"),
            points: reno_line,
        });
        series.push(Series {
            label: format!("veno, {tag}"),
            points: veno_line,
        });
    }
    let figure = Figure {
        name: "throughput_vs_venos".into(),
        title: "Veno Fig. 7: average throughput per connection, 5 connections on 4 Mb/s".into(),
        x_label: "number of Veno connections (of 5)".into(),
        y_label: "average goodput (kB/s)".into(),
        log_x: false,
        series,
    };
    let mut md = String::new();
    let _ = writeln!(
        md,
        "Five transfers per run, started {START_GAP_MS} ms apart, over {} Mb/s both ways, \
         {ONE_WAY_DELAY_MS} ms each way, {BUFFER_PACKETS}-packet buffers; the first k are Veno, \
         the rest Reno. sd = standard deviation across the group's connections and seeds. \
         Friendliness F = Reno's mean with k Venos / Reno's mean with none (1 = Reno unharmed).\n",
        RATE_BPS as f64 / 1e6
    );
    md.push_str(&table.to_markdown());
    md.push_str(&incomplete_note(reports));
    md.push_str(
        "\n**The paper (Fig. 7, text):** \"All the data points exhibit small standard \
         deviations. Therefore, fairness is observed within the group of Reno or Veno \
         connections\"; \"the curves are nearly horizontal regardless of the combination of \
         Reno and Veno connections\" (Veno does not starve Reno); \"Veno has somewhat higher \
         throughput than Reno in nonlossy environments, but in lossy networks, significant \
         improvements over Reno are obtained.\" The paper gives the figure, not its numbers: \
         compare the shape — Jain's index near 1 within each group, F near 1, Veno above Reno \
         at 1% loss.\n\
         \n### Choices\n\n\
         - Classic 2002 TCP for both (`timeout = \"rto\"`, no pacing, classic slow start without HyStart++, 1-packet initial and \
         post-timeout windows), as in veno-throughput.\n\
         - 8 MB per connection (1 MB with `--quick`) instead of 32 MB, and starts 100 ms apart.\n\
         \n### Differences and why\n\n\
         - **Throughput per connection** is each transfer's bytes over its own completion time. \
         Connections that finish early leave the link to the others for the rest of their \
         transfers, as in the paper's file transfers; with a smaller file the tail is a larger \
         share, which flattens differences slightly.\n\
         - **Identical transfers** with one seed can synchronise their losses on a drop-tail \
         queue; the start offsets and the seeds' different random-loss draws break that, \
         the paper's real hosts had timing noise instead.\n",
    );
    Comparison {
        markdown: md,
        tables: vec![table],
        figures: vec![figure],
    }
}
