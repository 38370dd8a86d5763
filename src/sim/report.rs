//! The report of a simulated experiment (DESIGN §11): `results.json` in one
//! stable schema users script against, `summary.md` for people, and one
//! time-series CSV per flow. Field names may be added, never renamed.
//!
//! Everything is built from structs and `BTreeMap`s, never hash maps, so the
//! same seed writes byte-identical files. A flow that did not finish within
//! the time limit has `completion_s` and `goodput_bps` set to null, and the
//! summary says so: no number is ever invented for it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::conn::Stats;

use super::cbr::CbrCounters;
use super::ground_truth::{FlowPacketCounters, TrueCause};
use super::link::{LinkCounters, QueueDelaySummary};
use super::topology::Direction;
use sift_cc::LossVerdict;

/// The results of one experiment: every run (one per seed).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    /// The experiment or scenario name.
    pub experiment: String,
    /// The sift version that produced it.
    pub sift_version: String,
    /// One entry per seed.
    pub runs: Vec<RunReport>,
}

/// Why a run stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StopReason {
    /// Every sift flow delivered all its bytes.
    AllFlowsCompleted,
    /// Every sift flow either completed or its connection closed first.
    AllFlowsEnded,
    /// The virtual time limit passed first.
    TimeLimit,
    /// Nothing was left that could happen (no timers, no packets, no traffic).
    Idle,
}

impl StopReason {
    /// How the summary phrases it.
    pub fn describe(self) -> &'static str {
        match self {
            StopReason::AllFlowsCompleted => "all flows completed",
            StopReason::AllFlowsEnded => "every flow completed or closed",
            StopReason::TimeLimit => "time limit reached",
            StopReason::Idle => "nothing left to happen",
        }
    }
}

/// One seed's run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunReport {
    /// The run's seed.
    pub seed: u64,
    /// The run's knobs (the scenario's settings and labels), free-form.
    pub params: BTreeMap<String, serde_json::Value>,
    /// One entry per sift flow.
    pub flows: Vec<FlowReport>,
    /// Bottleneck counters per direction.
    pub links: LinkReport,
    /// CBR background flows.
    #[serde(default)]
    pub cbr: Vec<CbrReport>,
    /// Why the run stopped; null in a report taken before it stopped.
    pub stop_reason: Option<StopReason>,
    /// Virtual time when the run stopped (or of the report), in seconds.
    pub end_s: f64,
    /// Events the simulator processed (a measure of work, not of time).
    pub events: u64,
}

/// The bottleneck's counters, per direction.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct LinkReport {
    /// Client side → server side.
    pub forward: LinkCounters,
    /// Server side → client side.
    pub reverse: LinkCounters,
    /// How long packets waited in the forward bottleneck's queue: what an
    /// AQM keeps short and a marking controller should too.
    #[serde(default)]
    pub forward_queue_delay: QueueDelaySummary,
    /// The same for the reverse direction.
    #[serde(default)]
    pub reverse_queue_delay: QueueDelaySummary,
}

/// How a controller classified losses against the ground truth (Fu & Liew
/// 2003, Table I). Rows: true cause; columns: verdict.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdicts {
    /// Random (link) losses the controller judged random.
    pub random_as_random: u64,
    /// Random losses it judged congestive.
    pub random_as_congestive: u64,
    /// Congestive (queue) losses it judged random.
    pub congestive_as_random: u64,
    /// Congestive losses it judged congestive.
    pub congestive_as_congestive: u64,
    /// Packets declared lost that in fact arrived (spurious losses).
    #[serde(default)]
    pub not_lost_as_random: u64,
    /// Packets declared lost that in fact arrived, judged congestive.
    #[serde(default)]
    pub not_lost_as_congestive: u64,
    /// Verdicts withdrawn because the congestion event proved spurious
    /// (every packet of it was acknowledged) and was undone: the controller
    /// no longer calls these losses random or congestive. Moved here from
    /// the `*_as_random` / `*_as_congestive` cell of the same row.
    #[serde(default)]
    pub not_lost_as_spurious: u64,
    #[serde(default)]
    pub random_as_spurious: u64,
    #[serde(default)]
    pub congestive_as_spurious: u64,
}

impl Verdicts {
    /// Counts one lost packet: the controller's verdict against the truth.
    pub fn record(&mut self, verdict: LossVerdict, truth: TrueCause) {
        let slot = match (truth, verdict) {
            (TrueCause::Random, LossVerdict::Random) => &mut self.random_as_random,
            (TrueCause::Random, LossVerdict::Congestive) => &mut self.random_as_congestive,
            (TrueCause::Congestive, LossVerdict::Random) => &mut self.congestive_as_random,
            (TrueCause::Congestive, LossVerdict::Congestive) => &mut self.congestive_as_congestive,
            (TrueCause::NotLost, LossVerdict::Random) => &mut self.not_lost_as_random,
            (TrueCause::NotLost, LossVerdict::Congestive) => &mut self.not_lost_as_congestive,
        };
        *slot += 1;
    }

    /// Withdraws one earlier `verdict` on a packet whose true cause is
    /// `truth`: its congestion event was undone, and the packet moves to the
    /// spurious column of its row.
    pub fn withdraw(&mut self, verdict: LossVerdict, truth: TrueCause) {
        let (slot, spurious) = match (truth, verdict) {
            (TrueCause::Random, LossVerdict::Random) => {
                (&mut self.random_as_random, &mut self.random_as_spurious)
            }
            (TrueCause::Random, LossVerdict::Congestive) => {
                (&mut self.random_as_congestive, &mut self.random_as_spurious)
            }
            (TrueCause::Congestive, LossVerdict::Random) => (
                &mut self.congestive_as_random,
                &mut self.congestive_as_spurious,
            ),
            (TrueCause::Congestive, LossVerdict::Congestive) => (
                &mut self.congestive_as_congestive,
                &mut self.congestive_as_spurious,
            ),
            (TrueCause::NotLost, LossVerdict::Random) => {
                (&mut self.not_lost_as_random, &mut self.not_lost_as_spurious)
            }
            (TrueCause::NotLost, LossVerdict::Congestive) => (
                &mut self.not_lost_as_congestive,
                &mut self.not_lost_as_spurious,
            ),
        };
        *slot = slot.saturating_sub(1);
        *spurious += 1;
    }

    /// Share of really-lost packets classified correctly, if any were.
    pub fn accuracy(&self) -> Option<f64> {
        let right = self.random_as_random + self.congestive_as_congestive;
        let total = right + self.random_as_congestive + self.congestive_as_random;
        (total > 0).then(|| right as f64 / total as f64)
    }
}

/// One sift flow's results.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FlowReport {
    /// The flow's index in the scenario.
    pub id: usize,
    /// The controller's name.
    pub cc: String,
    /// The flow offered corruption notices.
    pub corruption_notices: bool,
    /// Payload the client set out to send.
    pub bytes: u64,
    /// Streams the payload was spread over.
    pub streams: u64,
    /// When the client connected, in virtual seconds.
    pub start_s: f64,
    /// Seconds from the start to the server reading the last byte and FIN;
    /// null when the flow did not complete.
    pub completion_s: Option<f64>,
    /// `bytes`·8 / `completion_s`; null when the flow did not complete.
    pub goodput_bps: Option<f64>,
    /// Seconds from the start to the server reading the first payload
    /// byte (time to first byte); null when none arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_byte_s: Option<f64>,
    /// The sender's retransmitted packets.
    pub retransmitted_packets: u64,
    /// The sender's probe timeouts.
    pub ptos: u64,
    /// CORRUPTED notices the sender received.
    pub corruption_notices_received: u64,
    /// Loss-classification confusion matrix.
    pub verdicts: Verdicts,
    /// Payload bytes the server application read.
    pub bytes_received: u64,
    /// Bytes read that differ from what the client wrote (must be 0).
    pub mismatched_bytes: u64,
    /// Ground-truth packet counts per direction.
    pub packets: FlowPacketCounters,
    /// The first error that ended or hindered the flow, if any.
    pub error: Option<String>,
    /// The client connection's final statistics.
    pub client_stats: Stats,
    /// The server connection's final statistics.
    pub server_stats: Stats,
    /// Samples every `sample_interval_ms` of virtual time.
    pub timeseries: Vec<Sample>,
}

/// One time-series sample of a flow (sender's view, except `bytes_delivered`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Virtual time, seconds.
    pub t_s: f64,
    /// Congestion window, bytes.
    pub cwnd: u64,
    /// Slow-start threshold, bytes; null while unset (infinite).
    pub ssthresh: Option<u64>,
    /// Smoothed RTT, milliseconds.
    pub srtt_ms: f64,
    /// Minimum RTT, milliseconds.
    pub min_rtt_ms: f64,
    /// Bytes the client has sent (all packets).
    pub bytes_sent: u64,
    /// Payload bytes the server application has read.
    pub bytes_delivered: u64,
    /// Packets the sender has declared lost.
    pub packets_lost: u64,
    /// Packets the sender has retransmitted.
    pub retransmitted_packets: u64,
    /// The controller's own metrics (`Stats.cc.fields`).
    pub cc: BTreeMap<String, f64>,
}

impl Sample {
    /// A sample from the sender's stats at `t_s`.
    pub fn from_stats(t_s: f64, sender: &Stats, bytes_delivered: u64) -> Self {
        Self {
            t_s,
            cwnd: sender.cwnd,
            ssthresh: (sender.ssthresh != u64::MAX).then_some(sender.ssthresh),
            srtt_ms: sender.srtt_us as f64 / 1e3,
            min_rtt_ms: sender.min_rtt_us as f64 / 1e3,
            bytes_sent: sender.bytes_sent,
            bytes_delivered,
            packets_lost: sender.packets_lost,
            retransmitted_packets: sender.retransmitted_packets,
            cc: sender.cc.fields.clone(),
        }
    }
}

/// One CBR flow's results.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CbrReport {
    /// The CBR flow's index in the scenario.
    pub id: usize,
    /// Which way it crosses the bottleneck.
    pub direction: Direction,
    /// Its sending rate, bits per second.
    pub rate_bps: u64,
    /// Its packet size, bytes.
    pub packet_size: usize,
    /// What it sent and what arrived.
    #[serde(flatten)]
    pub counters: CbrCounters,
    /// The receive rate (see `CbrCounters::throughput_bps`); null with fewer
    /// than two arrivals.
    pub throughput_bps: Option<f64>,
}

/// A report could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// A file could not be written.
    #[error("cannot write {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The report could not be encoded.
    #[error("cannot encode the report as JSON: {0}")]
    Json(#[from] serde_json::Error),
}

impl Report {
    /// The report as pretty JSON, ending in a newline.
    pub fn to_json(&self) -> Result<String, ReportError> {
        let mut json = serde_json::to_string_pretty(self)?;
        json.push('\n');
        Ok(json)
    }

    /// Writes `results.json`, `summary.md` and the time-series CSVs into
    /// `dir` (created if needed). Returns the paths written.
    pub fn write(&self, dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
        std::fs::create_dir_all(dir).map_err(|source| ReportError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let mut files = vec![
            ("results.json".to_string(), self.to_json()?),
            ("summary.md".to_string(), self.summary_markdown()),
        ];
        for run in &self.runs {
            for flow in &run.flows {
                files.push((self.timeseries_file_name(run, flow), timeseries_csv(flow)));
            }
        }
        let mut written = Vec::with_capacity(files.len());
        for (name, contents) in files {
            let path = dir.join(name);
            std::fs::write(&path, contents).map_err(|source| ReportError::Io {
                path: path.clone(),
                source,
            })?;
            written.push(path);
        }
        Ok(written)
    }

    /// `timeseries_flowN.csv`, or `timeseries_seedS_flowN.csv` when the
    /// report holds several runs.
    pub fn timeseries_file_name(&self, run: &RunReport, flow: &FlowReport) -> String {
        if self.runs.len() > 1 {
            format!("timeseries_seed{}_flow{}.csv", run.seed, flow.id)
        } else {
            format!("timeseries_flow{}.csv", flow.id)
        }
    }

    /// A readable summary: per run, a table of flows, CBR flows and link
    /// counters, then the parameters.
    pub fn summary_markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# {}\n", self.experiment);
        let _ = writeln!(
            out,
            "sift {} · {} run{} (virtual time; seeded, repeatable)\n",
            self.sift_version,
            self.runs.len(),
            if self.runs.len() == 1 { "" } else { "s" }
        );
        for run in &self.runs {
            write_run_summary(&mut out, run);
        }
        out
    }
}

fn write_run_summary(out: &mut String, run: &RunReport) {
    let _ = writeln!(
        out,
        "## Seed {}: {} at {:.3} s\n",
        run.seed,
        run.stop_reason
            .map_or("still running", StopReason::describe),
        run.end_s
    );
    if !run.flows.is_empty() {
        let _ = writeln!(
            out,
            "| flow | cc | notices | bytes | completion (s) | goodput (Mb/s) | retransmits | PTOs | notices received |"
        );
        let _ = writeln!(out, "|---:|---|---|---:|---:|---:|---:|---:|---:|");
        for flow in &run.flows {
            let (completion, goodput) = match (flow.completion_s, flow.goodput_bps) {
                (Some(c), Some(g)) => (format!("{c:.3}"), format!("{:.3}", g / 1e6)),
                (Some(c), None) => (format!("{c:.3}"), "—".to_string()),
                _ => ("did not complete".to_string(), "—".to_string()),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                flow.id,
                flow.cc,
                if flow.corruption_notices { "on" } else { "off" },
                flow.bytes,
                completion,
                goodput,
                flow.retransmitted_packets,
                flow.ptos,
                flow.corruption_notices_received
            );
        }
        let _ = writeln!(out);
        for flow in run.flows.iter().filter(|f| f.completion_s.is_none()) {
            let _ = write!(
                out,
                "Flow {} did not complete: the server read {} of {} bytes by {:.3} s, so it has no completion time or goodput.",
                flow.id, flow.bytes_received, flow.bytes, run.end_s
            );
            if let Some(error) = &flow.error {
                let _ = write!(out, " Error: {error}.");
            }
            let _ = writeln!(out, "\n");
        }
        for flow in run.flows.iter().filter(|f| f.mismatched_bytes > 0) {
            let _ = writeln!(
                out,
                "Flow {}: {} bytes read differ from what was sent.\n",
                flow.id, flow.mismatched_bytes
            );
        }
    }
    if !run.cbr.is_empty() {
        let _ = writeln!(out, "### CBR background\n");
        let _ = writeln!(
            out,
            "| cbr | direction | rate (Mb/s) | packet (B) | sent | delivered | queue drops | random losses | throughput (Mb/s) |"
        );
        let _ = writeln!(out, "|---:|---|---:|---:|---:|---:|---:|---:|---:|");
        for cbr in &run.cbr {
            let _ = writeln!(
                out,
                "| {} | {} | {:.3} | {} | {} | {} | {} | {} | {} |",
                cbr.id,
                cbr.direction.name(),
                cbr.rate_bps as f64 / 1e6,
                cbr.packet_size,
                cbr.counters.sent_packets,
                cbr.counters.delivered_packets,
                cbr.counters.queue_drops,
                cbr.counters.random_losses,
                cbr.throughput_bps
                    .map_or("—".to_string(), |t| format!("{:.3}", t / 1e6))
            );
        }
        let _ = writeln!(out);
    }
    write_link_table(out, &run.links);
    if !run.params.is_empty() {
        let _ = writeln!(out, "### Parameters\n");
        for (key, value) in &run.params {
            let _ = writeln!(out, "- `{key}`: `{value}`");
        }
        let _ = writeln!(out);
    }
}

/// Link counters shown first in the summary, in this order.
const LINK_COLUMNS: &[&str] = &["offered", "delivered", "queue_drops", "random_losses"];

/// The link table takes its columns from the counters' own fields, so
/// counters added to the link model show up without touching this code.
fn write_link_table(out: &mut String, links: &LinkReport) {
    let rows: Vec<(&str, BTreeMap<String, serde_json::Value>)> =
        [("forward", &links.forward), ("reverse", &links.reverse)]
            .into_iter()
            .map(|(name, counters)| {
                let fields = serde_json::to_value(counters)
                    .ok()
                    .and_then(|value| serde_json::from_value(value).ok())
                    .unwrap_or_default();
                (name, fields)
            })
            .collect();
    // The four classic counters first, in their natural order, then any
    // others alphabetically.
    let mut columns: Vec<&String> = Vec::new();
    for known in LINK_COLUMNS {
        if let Some((key, _)) = rows.iter().find_map(|(_, f)| f.get_key_value(*known)) {
            columns.push(key);
        }
    }
    for (_, fields) in &rows {
        for key in fields.keys() {
            if !columns.contains(&key) {
                columns.push(key);
            }
        }
    }
    let _ = writeln!(out, "### Bottleneck\n");
    let header: Vec<String> = columns.iter().map(|c| c.replace('_', " ")).collect();
    let _ = writeln!(out, "| direction | {} |", header.join(" | "));
    let _ = writeln!(out, "|---|{}", "---:|".repeat(columns.len()));
    for (name, fields) in &rows {
        let cells: Vec<String> = columns
            .iter()
            .map(|c| fields.get(*c).map_or(String::new(), |v| v.to_string()))
            .collect();
        let _ = writeln!(out, "| {name} | {} |", cells.join(" | "));
    }
    let _ = writeln!(out);
}

/// A flow's time series as CSV: fixed columns, then one `cc.NAME` column per
/// controller metric seen in any sample (empty where a sample lacks it).
pub fn timeseries_csv(flow: &FlowReport) -> String {
    let metric_names: BTreeSet<&String> = flow
        .timeseries
        .iter()
        .flat_map(|sample| sample.cc.keys())
        .collect();
    let mut out = String::from(
        "t_s,cwnd,ssthresh,srtt_ms,min_rtt_ms,bytes_sent,bytes_delivered,packets_lost,retransmitted_packets",
    );
    for name in &metric_names {
        let _ = write!(out, ",cc.{name}");
    }
    out.push('\n');
    for sample in &flow.timeseries {
        let _ = write!(
            out,
            "{},{},{},{},{},{},{},{},{}",
            sample.t_s,
            sample.cwnd,
            sample.ssthresh.map_or(String::new(), |s| s.to_string()),
            sample.srtt_ms,
            sample.min_rtt_ms,
            sample.bytes_sent,
            sample.bytes_delivered,
            sample.packets_lost,
            sample.retransmitted_packets
        );
        for name in &metric_names {
            match sample.cc.get(*name) {
                Some(value) => {
                    let _ = write!(out, ",{value}");
                }
                None => out.push(','),
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests;
