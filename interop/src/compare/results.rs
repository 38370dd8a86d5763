//! What a comparison produced, as written to `results.json`: the plan, how
//! the machine was, and one record per run. `merge` joins the files of
//! several shards of the same plan.

use std::path::Path;

use anyhow::{bail, Context};
use serde::{Deserialize, Serialize};

use super::plan::{Plan, Unit};
use crate::flow::FlowReport;

/// The quiche version the baseline is built with (interop/Cargo.lock).
pub const QUICHE_VERSION: &str = "0.28.0";

/// The quinn version the quinn peer is built with (interop/Cargo.lock).
pub const QUINN_VERSION: &str = "0.11.12";

/// The quic-go release the quic-go peer is built with
/// (interop/quic-go/go.mod).
pub const QUIC_GO_VERSION: &str = "0.65.0";

/// The quiche release built apart as `quiche-0.24`
/// (interop/quiche-0.24/Cargo.lock).
pub const QUICHE_024_VERSION: &str = "0.24.9";

/// The data direction's counters, as `sift-link` printed them on exit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkCounters {
    pub offered: u64,
    pub delivered: u64,
    pub queue_drops: u64,
    pub random_losses: u64,
    pub corrupted: u64,
}

/// One run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub unit: Unit,
    /// The download finished and the file is byte-exact.
    pub ok: bool,
    /// Why not, in one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The file on disk has the source's SHA-256 and size.
    pub byte_exact: bool,
    /// The client's `--json` report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flow: Option<FlowReport>,
    /// Wall-clock seconds of the client process.
    pub wall_s: f64,
    /// User + system CPU seconds of the client and of the server.
    pub cpu_client_s: f64,
    pub cpu_server_s: f64,
    /// sift-link's counters for the data direction (link runs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<LinkCounters>,
}

/// How loaded the machine was (1-minute load average at start and end of
/// this file's runs) and how big: numbers from a shared machine are noisy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    pub cores: usize,
    pub load_start: f64,
    pub load_end: f64,
    /// Shards that ran at once on this machine (set by the user).
    #[serde(default)]
    pub note: String,
}

/// The whole `results.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Results {
    pub tool: String,
    pub sift_version: String,
    pub quiche_version: String,
    /// Every peer's name and version ("quiche 0.28.0", "quinn 0.11.12",
    /// "quiche-0.24 0.24.9"); empty in files from before quinn joined.
    #[serde(default)]
    pub peer_versions: Vec<String>,
    /// The protection sift rows used, and why.
    pub sift_protection: String,
    pub plan: Plan,
    /// The shards joined here ("1/1" for a run in one piece).
    pub shards: Vec<String>,
    pub machines: Vec<Machine>,
    /// The command line(s) that made it.
    pub commands: Vec<String>,
    pub runs: Vec<RunRecord>,
}

impl Results {
    /// Reads a `results.json`.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        serde_json::from_str(&text)
            .with_context(|| format!("{} is not a sift-compare results.json", path.display()))
    }

    /// Pretty JSON with a final newline.
    pub fn to_json(&self) -> anyhow::Result<String> {
        let mut json = serde_json::to_string_pretty(self)?;
        json.push('\n');
        Ok(json)
    }

    /// Units of the plan with no run here, in plan order.
    pub fn missing(&self) -> Vec<Unit> {
        self.plan
            .units()
            .into_iter()
            .filter(|unit| !self.runs.iter().any(|run| &run.unit == unit))
            .collect()
    }

    /// Joins shard results of one plan: runs in plan order, a unit run by
    /// two shards kept once (the first file's). Plans must be identical.
    pub fn merge(parts: Vec<Results>) -> anyhow::Result<Results> {
        let mut parts = parts.into_iter();
        let Some(mut merged) = parts.next() else {
            bail!("nothing to merge");
        };
        for part in parts {
            if part.plan != merged.plan {
                bail!(
                    "cannot merge results of different plans (links, controllers, repetitions, seed or loopback size differ): run every shard with the same options"
                );
            }
            if part.sift_protection != merged.sift_protection {
                bail!(
                    "cannot merge sift runs with different protection: {:?} and {:?}",
                    merged.sift_protection,
                    part.sift_protection
                );
            }
            merged.shards.extend(part.shards);
            merged.machines.extend(part.machines);
            merged.commands.extend(part.commands);
            for run in part.runs {
                if !merged.runs.iter().any(|r| r.unit == run.unit) {
                    merged.runs.push(run);
                }
            }
        }
        let order = merged.plan.units();
        merged
            .runs
            .sort_by_key(|run| order.iter().position(|unit| unit == &run.unit));
        Ok(merged)
    }
}

/// The counters of one direction from sift-link's exit report
/// (`  reverse: offered 3179, delivered 3148, queue drops 0, random losses 31, …, corrupted 0 (…)`).
pub fn parse_link_counters(stderr: &str, direction: &str) -> Option<LinkCounters> {
    let prefix = format!("{direction}:");
    let line = stderr
        .lines()
        .rev()
        .find(|line| line.trim_start().starts_with(&prefix))?;
    let count = |name: &str| -> Option<u64> {
        let rest = &line[line.find(name)? + name.len()..];
        let digits: String = rest
            .trim_start()
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        digits.parse().ok()
    };
    Some(LinkCounters {
        offered: count("offered")?,
        delivered: count("delivered")?,
        queue_drops: count("queue drops")?,
        random_losses: count("random losses")?,
        corrupted: count("corrupted")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::plan::{loopback_variants, Stack};

    const LINK_EXIT: &str = "sift-link: counters after 4.3 s, 1 client(s)
  forward: offered 816, delivered 816, queue drops 0, random losses 0, outage drops 0, corrupted 0 (header 0, payload 0, bits 0), duplicated 0, reordered 0
  reverse: offered 2331, delivered 2307, queue drops 3, random losses 24, outage drops 0, corrupted 46 (header 1, payload 45, bits 50), duplicated 0, reordered 0
";

    #[test]
    fn link_counters_are_read_from_sift_links_exit_report() {
        let data = parse_link_counters(LINK_EXIT, "reverse").unwrap();
        assert_eq!(
            data,
            LinkCounters {
                offered: 2331,
                delivered: 2307,
                queue_drops: 3,
                random_losses: 24,
                corrupted: 46
            }
        );
        assert_eq!(parse_link_counters("nothing", "reverse"), None);
    }

    fn results(shard: &str, units: &[Unit]) -> Results {
        let plan = Plan {
            links: vec![],
            variants: vec![],
            loopback_variants: loopback_variants(&[Stack::Quiche, Stack::Quinn], false, false),
            loopback_bytes: 1,
            reps: 2,
            seed: 1,
        };
        Results {
            tool: "sift-compare".into(),
            sift_version: "0".into(),
            quiche_version: QUICHE_VERSION.into(),
            peer_versions: vec![],
            sift_protection: "Null".into(),
            plan,
            shards: vec![shard.into()],
            machines: vec![],
            commands: vec![],
            runs: units
                .iter()
                .map(|unit| RunRecord {
                    unit: unit.clone(),
                    ok: true,
                    error: None,
                    byte_exact: true,
                    flow: None,
                    wall_s: 1.0,
                    cpu_client_s: 0.0,
                    cpu_server_s: 0.0,
                    link: None,
                })
                .collect(),
        }
    }

    #[test]
    fn merged_shards_hold_every_unit_once_in_plan_order() {
        let template = results("1/1", &[]);
        let units = template.plan.units();
        let shard = |k| sift::lab::Shard::new(k, 2).unwrap();
        let first = results("1/2", &template.plan.shard_units(shard(1)));
        let second = results("2/2", &template.plan.shard_units(shard(2)));
        assert!(!first.missing().is_empty());
        let merged = Results::merge(vec![second, first.clone(), first]).unwrap();
        let merged_units: Vec<Unit> = merged.runs.iter().map(|r| r.unit.clone()).collect();
        assert_eq!(merged_units, units);
        assert!(merged.missing().is_empty());
        assert_eq!(merged.shards, ["2/2", "1/2", "1/2"]);
    }

    #[test]
    fn results_of_different_plans_do_not_merge() {
        let a = results("1/2", &[]);
        let mut b = results("2/2", &[]);
        b.plan.reps = 5;
        assert!(Results::merge(vec![a.clone(), b]).is_err());
        let mut c = results("2/2", &[]);
        c.sift_protection = "the sift binaries' default protection".into();
        assert!(Results::merge(vec![a, c]).is_err());
    }

    #[test]
    fn the_recorded_peer_versions_are_the_ones_in_the_lock_files() {
        let lock = include_str!("../../Cargo.lock");
        assert!(
            lock.contains(&format!(
                "name = \"quiche\"\nversion = \"{QUICHE_VERSION}\""
            )),
            "interop/Cargo.lock has another quiche than {QUICHE_VERSION}"
        );
        assert!(
            lock.contains(&format!("name = \"quinn\"\nversion = \"{QUINN_VERSION}\"")),
            "interop/Cargo.lock has another quinn than {QUINN_VERSION}"
        );
        let go_mod = include_str!("../../quic-go/go.mod");
        assert!(
            go_mod.contains(&format!("github.com/quic-go/quic-go v{QUIC_GO_VERSION}\n")),
            "interop/quic-go/go.mod has another quic-go than {QUIC_GO_VERSION}"
        );
        let apart = include_str!("../../quiche-0.24/Cargo.lock");
        assert!(
            apart.contains(&format!(
                "name = \"quiche\"\nversion = \"{QUICHE_024_VERSION}\""
            )),
            "interop/quiche-0.24/Cargo.lock has another quiche than {QUICHE_024_VERSION}"
        );
    }
}
