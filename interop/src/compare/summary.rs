//! From runs to the numbers a reader compares: per link and variant, the
//! median goodput and its spread, the ratio to the best peer (any release
//! of quiche, quinn) on that link, and the medians of the counters that explain a difference
//! (retransmissions, PTOs, notices, what the link dropped), and the
//! link's ceiling for the download's size (`ceiling`) with each median's
//! share of it; per loopback variant, throughput and CPU seconds per GiB.

use serde::Serialize;

use super::ceiling;
use super::links::LinkSpec;
use super::plan::{Stack, Unit, Variant};
use super::results::{Results, RunRecord};
use crate::flow::FlowReport;

/// Median, minimum and maximum of a sample.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    /// `None` for an empty sample.
    pub fn of(values: &[f64]) -> Option<Self> {
        let mut sorted: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        if sorted.is_empty() {
            return None;
        }
        sorted.sort_by(f64::total_cmp);
        let middle = sorted.len() / 2;
        let median = if sorted.len() % 2 == 0 {
            (sorted[middle - 1] + sorted[middle]) / 2.0
        } else {
            sorted[middle]
        };
        Some(Self {
            median,
            min: sorted[0],
            max: sorted[sorted.len() - 1],
        })
    }
}

/// One variant on one link (or on loopback).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    pub variant: Variant,
    pub runs: usize,
    pub ok: usize,
    /// Goodput of the successful runs, bits per second.
    pub goodput_bps: Option<Spread>,
    /// Median goodput ÷ the best peer variant's median on this link.
    pub vs_best_peer: Option<f64>,
    /// Median goodput ÷ the link's ceiling for the download's size.
    pub vs_ceiling: Option<f64>,
    pub retransmitted_packets: Option<f64>,
    pub ptos: Option<f64>,
    pub corruption_notices_received: Option<f64>,
    /// The sender's congestion window when the download ended, bytes.
    pub cwnd_at_end: Option<f64>,
    pub link_queue_drops: Option<f64>,
    pub link_random_losses: Option<f64>,
    pub link_corrupted: Option<f64>,
    /// User + system CPU seconds of client and server per GiB moved.
    pub cpu_s_per_gib: Option<Spread>,
    /// The medians of the client's and of the server's share of it.
    pub cpu_client_s_per_gib: Option<f64>,
    pub cpu_server_s_per_gib: Option<f64>,
    /// Distinct reasons of failed runs.
    pub failures: Vec<String>,
}

/// Every variant on one link.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LinkSummary {
    pub link: LinkSpec,
    pub rows: Vec<Row>,
    /// Per peer stack run here (in [`Stack::PEERS`] order), its variant
    /// with the highest median goodput.
    pub best_of_peers: Vec<(Variant, f64)>,
    /// The peer variant with the highest median goodput (any peer).
    pub best_peer: Option<(Variant, f64)>,
    /// The sift variant with the highest median goodput.
    pub best_sift: Option<(Variant, f64)>,
    /// The most goodput a download of the link's size can reach on it
    /// ([`ceiling::Path::ceiling_bps`]), bits per second; `None` for a
    /// link the ceiling does not model.
    pub ceiling_bps: Option<f64>,
}

/// The whole comparison in numbers.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub links: Vec<LinkSummary>,
    pub loopback: Vec<Row>,
}

const GIB: f64 = (1u64 << 30) as f64;

/// Summarises `results` (missing runs are simply not counted).
pub fn summarize(results: &Results) -> Summary {
    let links = results
        .plan
        .links
        .iter()
        .map(|link| {
            let runs_of = |variant: &Variant| -> Vec<&RunRecord> {
                results
                    .runs
                    .iter()
                    .filter(|run| matches!(&run.unit, Unit::Link { link: name, variant: v, .. } if name == &link.name && v == variant))
                    .collect()
            };
            let mut rows: Vec<Row> = results
                .plan
                .variants
                .iter()
                .map(|variant| row(variant, &runs_of(variant)))
                .collect();
            let best = |stack: Stack| {
                rows.iter()
                    .filter(|row| row.variant.stack == stack)
                    .filter_map(|row| Some((row.variant.clone(), row.goodput_bps?.median)))
                    .max_by(|a, b| a.1.total_cmp(&b.1))
            };
            let best_of_peers: Vec<(Variant, f64)> =
                Stack::PEERS.iter().filter_map(|&stack| best(stack)).collect();
            let best_peer = best_of_peers
                .iter()
                .max_by(|a, b| a.1.total_cmp(&b.1))
                .cloned();
            let best_sift = best(Stack::Sift);
            let ceiling_bps = ceiling::Path::of_link(&link.data, &link.ack)
                .map(|path| path.ceiling_bps(link.file_bytes));
            if let Some(ceiling) = ceiling_bps.filter(|c| *c > 0.0) {
                for row in &mut rows {
                    row.vs_ceiling = row.goodput_bps.map(|g| g.median / ceiling);
                }
            }
            if let Some((_, reference)) = &best_peer {
                for row in &mut rows {
                    row.vs_best_peer = row
                        .goodput_bps
                        .filter(|_| *reference > 0.0)
                        .map(|g| g.median / reference);
                }
            }
            LinkSummary {
                link: link.clone(),
                rows,
                best_of_peers,
                best_peer,
                best_sift,
                ceiling_bps,
            }
        })
        .collect();
    let loopback = results
        .plan
        .loopback_variants
        .iter()
        .map(|variant| {
            let runs: Vec<&RunRecord> = results
                .runs
                .iter()
                .filter(
                    |run| matches!(&run.unit, Unit::Loopback { variant: v, .. } if v == variant),
                )
                .collect();
            row(variant, &runs)
        })
        .collect();
    Summary { links, loopback }
}

fn row(variant: &Variant, runs: &[&RunRecord]) -> Row {
    let ok: Vec<&RunRecord> = runs.iter().copied().filter(|run| run.ok).collect();
    let flows: Vec<_> = ok.iter().filter_map(|run| run.flow.as_ref()).collect();
    let median = |values: Vec<f64>| Spread::of(&values).map(|s| s.median);
    let flow_median = |counter: fn(&FlowReport) -> u64| {
        median(flows.iter().map(|&f| counter(f) as f64).collect())
    };
    let links: Vec<_> = ok.iter().filter_map(|run| run.link).collect();
    let per_gib = |cpu_s: fn(&RunRecord) -> f64| -> Vec<f64> {
        ok.iter()
            .filter_map(|&run| {
                let bytes = run.flow.as_ref()?.bytes as f64;
                (bytes > 0.0).then(|| cpu_s(run) * GIB / bytes)
            })
            .collect()
    };
    let mut failures: Vec<String> = runs.iter().filter_map(|run| run.error.clone()).collect();
    failures.sort();
    failures.dedup();
    Row {
        variant: variant.clone(),
        runs: runs.len(),
        ok: ok.len(),
        goodput_bps: Spread::of(&flows.iter().map(|f| f.goodput_bps).collect::<Vec<_>>()),
        vs_best_peer: None,
        vs_ceiling: None,
        retransmitted_packets: flow_median(|f| f.retransmitted_packets),
        ptos: flow_median(|f| f.ptos),
        corruption_notices_received: flow_median(|f| f.corruption_notices_received),
        cwnd_at_end: flow_median(|f| f.cwnd),
        link_queue_drops: median(links.iter().map(|l| l.queue_drops as f64).collect()),
        link_random_losses: median(links.iter().map(|l| l.random_losses as f64).collect()),
        link_corrupted: median(links.iter().map(|l| l.corrupted as f64).collect()),
        cpu_s_per_gib: Spread::of(&per_gib(|run| run.cpu_client_s + run.cpu_server_s)),
        cpu_client_s_per_gib: median(per_gib(|run| run.cpu_client_s)),
        cpu_server_s_per_gib: median(per_gib(|run| run.cpu_server_s)),
        failures,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::plan::{link_variants, Plan, Protection};
    use crate::compare::results::QUICHE_VERSION;

    #[test]
    fn median_of_odd_and_even_samples_and_spread_ends() {
        let odd = Spread::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((odd.median, odd.min, odd.max), (2.0, 1.0, 3.0));
        assert_eq!(Spread::of(&[1.0, 4.0]).unwrap().median, 2.5);
        assert_eq!(Spread::of(&[]), None);
    }

    fn run(link: &str, rep: u32, variant: &Variant, goodput_bps: f64, ok: bool) -> RunRecord {
        RunRecord {
            unit: Unit::Link {
                link: link.into(),
                rep,
                seed: u64::from(rep),
                variant: variant.clone(),
            },
            ok,
            error: (!ok).then(|| "timed out after 9 s".to_string()),
            byte_exact: ok,
            flow: ok.then(|| FlowReport {
                cc: variant.cc.clone(),
                bytes: 1 << 30,
                goodput_bps,
                retransmitted_packets: rep as u64,
                ..FlowReport::default()
            }),
            wall_s: 1.0,
            cpu_client_s: 1.0,
            cpu_server_s: 0.5,
            link: None,
        }
    }

    #[test]
    fn ratios_are_against_the_best_peer_median_and_failures_do_not_count() {
        let variants = link_variants(
            &[
                (Stack::Quiche, vec!["cubic".into(), "bbr2".into()]),
                (Stack::Quinn, vec!["newreno".into()]),
            ],
            &["veno".into()],
            &[true, false],
            Protection::Null,
        );
        let spec = LinkSpec {
            name: "l".into(),
            title: "t".into(),
            data: String::new(),
            ack: String::new(),
            file_bytes: 1,
            timeout_s: 9,
        };
        let plan = Plan {
            links: vec![spec],
            variants: variants.clone(),
            loopback_variants: vec![],
            loopback_bytes: 0,
            reps: 3,
            seed: 1,
        };
        let [cubic, bbr2, newreno, veno_on, veno_off] =
            [0, 1, 2, 3, 4].map(|i| variants[i].clone());
        let mut runs = Vec::new();
        for rep in 1..=3 {
            runs.push(run("l", rep, &cubic, 10e6, true));
            runs.push(run("l", rep, &newreno, 15e6, true));
            runs.push(run("l", rep, &bbr2, 20e6 + f64::from(rep), true));
            runs.push(run("l", rep, &veno_on, 5e6 * f64::from(rep), true));
            runs.push(run("l", rep, &veno_off, 1e6, rep == 1));
        }
        let results = Results {
            tool: "sift-compare".into(),
            sift_version: "0".into(),
            quiche_version: QUICHE_VERSION.into(),
            peer_versions: vec![],
            sift_protection: "Null".into(),
            plan,
            shards: vec!["1/1".into()],
            machines: vec![],
            commands: vec![],
            runs,
        };
        let summary = summarize(&results);
        let link = &summary.links[0];
        assert_eq!(link.best_peer.as_ref().unwrap().0, bbr2);
        let per_peer: Vec<&Variant> = link.best_of_peers.iter().map(|(v, _)| v).collect();
        assert_eq!(per_peer, [&bbr2, &newreno]);
        assert_eq!(link.best_sift.as_ref().unwrap().0, veno_on);
        let veno = &link.rows[3];
        // Median of 5, 10, 15 Mb/s = 10 Mb/s; best quiche median 20 Mb/s + 2 b/s.
        assert_eq!(veno.goodput_bps.unwrap().median, 10e6);
        assert!((veno.vs_best_peer.unwrap() - 10e6 / (20e6 + 2.0)).abs() < 1e-12);
        assert_eq!(veno.retransmitted_packets, Some(2.0));
        let failing = &link.rows[4];
        assert_eq!((failing.runs, failing.ok), (3, 1));
        assert_eq!(failing.failures, ["timed out after 9 s"]);
        // 1.5 CPU seconds for exactly one GiB.
        assert_eq!(veno.cpu_s_per_gib.unwrap().median, 1.5);
    }

    #[test]
    fn a_modelled_link_carries_its_ceiling_and_each_median_its_share_of_it() {
        let variants = link_variants(
            &[(Stack::Quinn, vec!["bbr".into()])],
            &["bbr".into()],
            &[true, false],
            Protection::Default,
        );
        let spec = |data: &str| LinkSpec {
            name: "l".into(),
            title: "t".into(),
            data: data.into(),
            ack: "delay 50ms".into(),
            file_bytes: 20_000_000,
            timeout_s: 9,
        };
        let results = |spec: LinkSpec| Results {
            tool: "sift-compare".into(),
            sift_version: "0".into(),
            quiche_version: QUICHE_VERSION.into(),
            peer_versions: vec![],
            sift_protection: "default".into(),
            plan: Plan {
                links: vec![spec],
                variants: variants.clone(),
                loopback_variants: vec![],
                loopback_bytes: 0,
                reps: 1,
                seed: 1,
            },
            shards: vec!["1/1".into()],
            machines: vec![],
            commands: vec![],
            runs: vec![
                run("l", 1, &variants[0], 30e6, true),
                run("l", 1, &variants[1], 40e6, true),
            ],
        };
        let lossy = "delay 50ms rate 50mbit limit 500 loss 1%";
        let summary = summarize(&results(spec(lossy)));
        let link = &summary.links[0];
        let ceiling = ceiling::Path::of_link(lossy, "delay 50ms")
            .unwrap()
            .ceiling_bps(20_000_000);
        assert_eq!(link.ceiling_bps, Some(ceiling));
        assert_eq!(link.rows[0].vs_ceiling, Some(30e6 / ceiling));
        assert_eq!(link.rows[1].vs_ceiling, Some(40e6 / ceiling));
        let markdown = crate::compare::report::markdown(&results(spec(lossy)), &summary);
        assert!(
            markdown.contains(&format!(
                "Ceiling for 20 MB: {}.",
                crate::compare::report::rate(ceiling)
            )),
            "{markdown}"
        );
        // No fixed rate: no ceiling, no shares.
        let unmodelled = summarize(&results(spec("delay 50ms")));
        assert_eq!(unmodelled.links[0].ceiling_bps, None);
        assert_eq!(unmodelled.links[0].rows[1].vs_ceiling, None);
    }
}
