//! The Veno link cross-checked against ns-3 3.44 (issue 36): NewReno, Veno
//! with each BaseRTT rule, Westwood+ and Vegas, one transfer each, over the
//! Veno paper's link (1.6 Mb/s both ways, 120 ms round trip, 12-packet
//! drop-tail buffer, MSS 1460, 4 MB) at 10⁻³, 10⁻² and 5·10⁻² random loss,
//! next to what ns-3 3.44's `TcpNewReno`, `TcpVeno`, `TcpWestwoodPlus` and
//! `TcpVegas` deliver on the same link (SACK on, seeds 1–3).
//!
//! The question it answers: sift's Veno gains far more over Reno than
//! ns-3's does, and the Veno paper resets BaseRTT at every loss where
//! Linux's `tcp_veno` and ns-3's `TcpVeno` never do
//! (`base_rtt_reset = at-loss | never`). Both Veno rows use the paper's
//! estimator (smoothed RTT), as ns-3 does not use the jitter-robust one.
//!
//! The stack is ns-3's defaults where sift has them: a 10-packet initial
//! window, one packet after a timeout, RTO timeouts, no pacing, no
//! HyStart++, no undo or adaptive reordering (`classic_recovery`); sift's
//! ACK ranges stand for SACK.

use std::fmt::Write;

use super::{
    cell, classic_recovery, controller, flow, kilobytes_per_s, label, link, name_number,
    paper_stack, report_f64, report_str, scenario, with_windows,
};
use crate::lab::metrics::{mean, run_goodputs_bps};
use crate::lab::{Comparison, Experiment, Plan, Table};
use crate::sim::{Report, Scenario};
use sift_cc::{BandwidthSampling, BaseRttReset, CcConfig};

/// The experiment.
pub const EXPERIMENT: Experiment = Experiment {
    name: "veno-ns3",
    title:
        "Veno link vs ns-3 3.44: NewReno, Veno (BaseRTT reset at loss / never), Westwood+, Vegas",
    scenarios,
    compare,
};

/// The Veno link (Fu & Liew 2003, §III-B), as `veno-throughput` runs it.
use super::veno_throughput::{BUFFER_PACKETS, MSS_BYTES, ONE_WAY_DELAY_MS, RATE_BPS};

/// Loss rates of the cross-check.
pub const LOSS_RATES: [f64; 3] = [1e-3, 1e-2, 5e-2];
/// ns-3 3.44 on the same link, kB/s at 10⁻³ / 10⁻² / 5·10⁻² (issue 36: SACK
/// on, seeds 1–3, 4 MB).
pub const NS3_KBS: [(&str, [f64; 3]); 4] = [
    ("newreno", [170.0, 73.6, 27.9]),
    ("veno", [169.8, 83.2, 29.9]),
    ("westwood+", [162.8, 145.1, 101.5]),
    ("vegas", [173.3, 82.0, 28.8]),
];
/// The rows: label, controller name, and the ns-3 row it is set against.
const ROWS: [(&str, &str, &str); 5] = [
    ("newreno", "reno", "newreno"),
    ("veno, BaseRTT reset at loss (paper)", "veno", "veno"),
    ("veno, BaseRTT never reset (Linux, ns-3)", "veno", "veno"),
    ("westwood+", "westwood", "westwood+"),
    ("vegas", "vegas", "vegas"),
];

/// The configuration of row `index`.
fn row_config(index: usize) -> Option<CcConfig> {
    let (_, name, _) = ROWS.get(index)?;
    let mut cc = paper_stack(with_windows(controller(name)?, 10, 1));
    match &mut cc {
        CcConfig::Veno(c) => {
            c.base_rtt_reset = if index == 1 {
                BaseRttReset::AtLoss
            } else {
                BaseRttReset::Never
            };
        }
        CcConfig::Westwood(c) => c.sampling = BandwidthSampling::PerRtt,
        _ => {}
    }
    Some(cc)
}

/// One scenario per row and loss rate.
pub fn scenarios(plan: &Plan) -> Vec<Scenario> {
    let bytes = plan.pick(4_000_000, 1_000_000);
    let seeds = plan.seeds(plan.pick(3, 1));
    let mut out = Vec::new();
    for (index, (row, ..)) in ROWS.iter().enumerate() {
        for loss in LOSS_RATES {
            let Some(config) = row_config(index) else {
                continue;
            };
            let mut transfer = flow(config, bytes);
            transfer.max_datagram_size = Some(MSS_BYTES);
            transfer.pmtud = false; // the paper's packet size throughout
            transfer.recovery = classic_recovery();
            let mut s = scenario(
                format!("row-{index}-loss-{}", name_number(loss)),
                seeds.clone(),
                5000.0,
                link(ONE_WAY_DELAY_MS, RATE_BPS, BUFFER_PACKETS, loss),
                link(ONE_WAY_DELAY_MS, RATE_BPS, BUFFER_PACKETS, 0.0),
                vec![transfer],
            );
            label(&mut s, "row", *row);
            label(&mut s, "loss", loss);
            out.push(s);
        }
    }
    out
}

/// Mean goodput in kB/s of `row` at `loss`, over the seeds.
fn lookup(reports: &[Report], row: &str, loss: f64) -> Option<f64> {
    let report = reports
        .iter()
        .find(|r| report_str(r, "row") == Some(row) && report_f64(r, "loss") == Some(loss))?;
    let values: Vec<f64> = report
        .runs
        .iter()
        .filter_map(|run| run_goodputs_bps(run).first().copied())
        .map(kilobytes_per_s)
        .collect();
    mean(&values)
}

/// The ns-3 figures of row `ns3` at loss index `i`.
fn ns3(ns3: &str, i: usize) -> Option<f64> {
    NS3_KBS
        .iter()
        .find(|(name, _)| *name == ns3)
        .and_then(|(_, v)| v.get(i).copied())
}

/// sift next to ns-3, and Veno's gain over NewReno under each rule.
pub fn compare(reports: &[Report]) -> Comparison {
    let mut header = vec!["row".to_string()];
    for loss in LOSS_RATES {
        header.push(format!("sift {loss}"));
        header.push(format!("ns-3 {loss}"));
    }
    let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut table = Table::new("sift_vs_ns3_kBps", &header_refs);
    for (row, _, ns3_row) in ROWS {
        let mut cells = vec![row.to_string()];
        for (i, &loss) in LOSS_RATES.iter().enumerate() {
            cells.push(cell(lookup(reports, row, loss), 1));
            cells.push(cell(ns3(ns3_row, i), 1));
        }
        table.push(cells);
    }
    let mut gains = Table::new(
        "veno_gain_over_newreno",
        &["loss", "sift, at loss", "sift, never", "ns-3"],
    );
    for (i, &loss) in LOSS_RATES.iter().enumerate() {
        let reno = lookup(reports, ROWS[0].0, loss);
        let gain = |v: Option<f64>, r: Option<f64>| match (v, r) {
            (Some(v), Some(r)) if r > 0.0 => format!("{:+.0}%", (v / r - 1.0) * 100.0),
            _ => "—".to_string(),
        };
        gains.push(vec![
            format!("{loss}"),
            gain(lookup(reports, ROWS[1].0, loss), reno),
            gain(lookup(reports, ROWS[2].0, loss), reno),
            gain(ns3("veno", i), ns3("newreno", i)),
        ]);
    }
    let mut md = String::new();
    let _ = writeln!(
        md,
        "One transfer per run over the Veno link (1.6 Mb/s both ways, 120 ms round trip, \
         12-packet drop-tail buffer, MSS 1460), mean goodput over seeds in kB/s; ns-3 3.44's \
         figures on the same link (SACK on, seeds 1–3, 4 MB) beside them. sift's stack as \
         ns-3's defaults: 10-packet initial window, RTO timeouts to one packet, no pacing, no \
         HyStart++, no undo; both Veno rows use the paper's estimator (smoothed RTT).\n"
    );
    md.push_str(&table.to_markdown());
    md.push_str("\n### Veno's gain over NewReno\n\n");
    md.push_str(&gains.to_markdown());
    md.push('\n');
    Comparison {
        markdown: md,
        tables: vec![table, gains],
        figures: Vec::new(),
    }
}
