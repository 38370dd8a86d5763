//! Scenario files: one TOML file describes a simulated experiment — the
//! bottleneck in each direction, the sift flows, the CBR background and the
//! seeds. The format (documented for users in `docs/scenarios.md`):
//!
//! ```toml
//! name = "lossy-10mbit"      # names the results directory; [A-Za-z0-9._-]
//! seeds = [1]                # one run per seed (default [1])
//! time_limit_s = 600         # virtual seconds before a run gives up (default 600)
//! sample_interval_ms = 100   # time-series sampling period (default 100)
//!
//! [bottleneck.forward]       # client → server (default: 10 ms, unlimited rate)
//! delay_ms = 25.0
//! rate_bps = 10_000_000
//! queue = { packets = 50 }   # or { bytes = N }
//! loss = 0.01                # Bernoulli loss probability
//! [bottleneck.reverse]       # server → client
//! delay_ms = 25.0
//! rate_bps = 10_000_000
//!
//! [[flow]]                   # a sift transfer, client → server
//! cc = "reno"                # or a table: cc = { name = "reno", initial_window_packets = 2 }
//! bytes = 10_000_000         # payload, split evenly over the streams
//! streams = 4                # bidirectional streams (default 1)
//! corruption_notices = true  # offer HACK notices (default true)
//! start_ms = 0               # when the client connects (default 0)
//! count = 1                  # identical copies of this flow (default 1)
//! access_delay_ms = 0        # extra one-way delay on this client's access link
//! # max_datagram_size = 1350 # optional: the connection's datagram size (to start with)
//! pmtud = true               # path MTU discovery above it (default true; hosts are
//!                            # on Ethernet: 1472 at most, less if a link's `mtu` is less)
//! protection = "null"        # "null" (default, fast) or "tls" (TLS 1.3, as on real links)
//! # key_update_interval = 300 # optional, TLS: update keys every N packets
//! # lying_receiver = true   # optional: the server names every gap corrupted (SECURITY.md);
//!                            # "real-losses": only gaps the stream offsets prove lost
//! # rebind_at_ms = 2000      # optional: the client's NAT maps it to another port then
//! # new_address_at_ms = 2000 # optional: the client moves to another IP address then
//! # new_path = { forward = "delay 40ms loss 2%", reverse = "delay 40ms" }  # ... onto these links
//!
//! [[cbr]]                    # constant-bit-rate UDP background
//! rate_bps = 1_000_000
//! packet_size = 1000
//! # on_ms = 500, off_ms = 500  (on/off periods), start_ms = 0, stop_ms = 10_000,
//! # direction = "forward" | "reverse", count = 1
//!
//! [params]                   # optional free-form labels copied into the report
//! loss_percent = 1
//! ```
//!
//! Unknown keys anywhere are errors naming the file, line and key; values are
//! checked (`validate`) before anything runs.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize};

use sift_cc::CcConfig;

use super::link::LinkConfig;
use super::topology::{Direction, MAX_HOSTS};
use crate::conn::{Protection, ReceiverLie};
use crate::recovery::RecoveryConfig;

/// Default virtual time limit of a run, in seconds.
pub const DEFAULT_TIME_LIMIT_S: f64 = 600.0;
/// Default time-series sampling period, in milliseconds.
pub const DEFAULT_SAMPLE_INTERVAL_MS: u64 = 100;
/// Longest time limit accepted (about 116 days of virtual time).
pub const MAX_TIME_LIMIT_S: f64 = 1e7;
/// Most sift and CBR flows (after `count` expansion) one scenario may hold:
/// each needs two hosts in the virtual address plan.
pub const MAX_FLOWS: usize = MAX_HOSTS / 2;
/// Most streams one flow may open.
pub const MAX_STREAMS_PER_FLOW: u64 = 100_000;
/// Largest UDP payload over IPv4 (65 535 − 8 − 20), the largest CBR datagram.
pub const MAX_DATAGRAM_BYTES: usize = 65_507;
/// Top-level scenario keys, which `[params]` labels may not reuse.
pub const RESERVED_PARAM_KEYS: &[&str] = &[
    "name",
    "seeds",
    "time_limit_s",
    "sample_interval_ms",
    "bottleneck",
    "flow",
    "cbr",
];

/// A simulated experiment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Names the experiment and its results directory.
    pub name: String,
    /// One run per seed.
    #[serde(default = "default_seeds")]
    pub seeds: Vec<u64>,
    /// Virtual seconds before a run stops with flows unfinished.
    #[serde(default = "default_time_limit_s")]
    pub time_limit_s: f64,
    /// Time-series sampling period in virtual milliseconds.
    #[serde(default = "default_sample_interval_ms")]
    pub sample_interval_ms: u64,
    /// The shared bottleneck.
    #[serde(default)]
    pub bottleneck: Bottleneck,
    /// Sift transfers (`[[flow]]` tables).
    #[serde(default, rename = "flow", skip_serializing_if = "Vec::is_empty")]
    pub flows: Vec<FlowSpec>,
    /// CBR background flows (`[[cbr]]` tables).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cbr: Vec<CbrSpec>,
    /// Free-form labels (e.g. the knob an experiment sweeps), copied into the
    /// report's `params`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub params: BTreeMap<String, serde_json::Value>,
}

/// The bottleneck link, one `LinkConfig` per direction.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bottleneck {
    /// Client → server.
    #[serde(default)]
    pub forward: LinkConfig,
    /// Server → client.
    #[serde(default)]
    pub reverse: LinkConfig,
}

/// One sift transfer (or `count` identical ones).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    /// The congestion controller: a name (`"reno"`) or a table with `name`
    /// and the controller's parameters.
    #[serde(default, deserialize_with = "cc_by_name_or_table")]
    pub cc: CcConfig,
    /// Payload bytes the client sends.
    pub bytes: u64,
    /// Bidirectional streams the payload is split over.
    #[serde(default = "one")]
    pub streams: u64,
    /// Offer corruption notices (HACK).
    #[serde(default = "default_corruption_notices")]
    pub corruption_notices: bool,
    /// When the client connects, in virtual milliseconds.
    #[serde(default)]
    pub start_ms: f64,
    /// Identical copies of this flow.
    #[serde(default = "one_usize")]
    pub count: usize,
    /// One-way delay of this client's own access link, in milliseconds
    /// (0 = attached straight to the bottleneck).
    #[serde(default)]
    pub access_delay_ms: f64,
    /// The connection's largest datagram; the connection default when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_datagram_size: Option<usize>,
    /// Path MTU discovery (`conn::pmtud`) from `max_datagram_size` up to
    /// what the links and the hosts' Ethernet interfaces (1500-byte MTU)
    /// carry. On by default, as in the connection; the papers'
    /// experiments turn it off to keep their packet size.
    #[serde(default = "default_pmtud")]
    pub pmtud: bool,
    /// Loss-recovery knobs (RFC 9002 defaults): e.g. `timeout = "rto"` and
    /// `pacing = false` for the 2002 testbeds' classic TCP behaviour.
    #[serde(default)]
    pub recovery: RecoveryConfig,
    /// The connection's idle timeout in seconds (the connection default,
    /// 30 s, when absent). Links with long error bursts under classic RTO
    /// backoff need minutes, as TCP's retry limits allow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout_s: Option<f64>,
    /// Packet protection. Null by default in the simulator, for speed (TLS
    /// costs CPU, not virtual time); `"tls"` runs the real handshake and
    /// AEAD tags with a self-signed identity made once per process.
    #[serde(default = "simulated_protection")]
    pub protection: Protection,
    /// TLS: initiate a key update every this many packets (a test knob).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_update_interval: Option<u64>,
    /// The receiver rebuilds a damaged 1-RTT header and keeps the packet if
    /// its payload opens (`Config::repair_damaged_headers`); `false` is
    /// HACK's receiver, which drops it.
    #[serde(default = "default_repair_damaged_headers")]
    pub repair_damaged_headers: bool,
    /// The server (the receiver) misbehaves: it names losses as corrupted,
    /// to escape congestion control. `true` or `"every-gap"`: every gap in
    /// what it receives; `"real-losses"`: only the gaps the stream offsets
    /// prove were losses, so it never names a skipped number. For the
    /// corruption-budget experiments (SECURITY.md, `conn::ReceiverLie`).
    #[serde(
        default,
        deserialize_with = "lie_from_bool_or_name",
        skip_serializing_if = "is_honest"
    )]
    pub lying_receiver: ReceiverLie,
    /// When the client's NAT rebinds it to another port (virtual
    /// milliseconds): the server sees its packets come from a new address
    /// and must follow it (connection migration, RFC 9000 §9).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rebind_at_ms: Option<f64>,
    /// When the client moves to another IP address (another network): a
    /// new path, on which congestion control starts over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_address_at_ms: Option<f64>,
    /// The access path the client is on after `new_address_at_ms` (its
    /// own links in each direction, in front of the bottleneck), e.g.
    /// `{ forward = "delay 40ms loss 2%", reverse = "delay 40ms" }`.
    /// Without it the client keeps its links.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_path: Option<Bottleneck>,
    /// Start when flow `after_flow` (its index among the expanded flows,
    /// earlier than this one) completed, and not before `start_ms`: a
    /// second connection on the same path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_flow: Option<usize>,
    /// With `after_flow`: the sender (the client) resumes from the path
    /// state the earlier flow's sender saw, as a client that keeps its own
    /// saved state would (Careful Resume, RFC 9959).
    #[serde(default, skip_serializing_if = "is_false")]
    pub resume_path: bool,
    /// Careful Resume in this flow's connections (`Config::careful_resume`).
    #[serde(default = "default_careful_resume")]
    pub careful_resume: bool,
    /// Careful Resume's knobs when it is on (`sift_cc::CarefulResumeConfig`),
    /// e.g. `{ startup_exit_at_saved_rate = false }` for the RFC's letter;
    /// sift's defaults without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub careful_resume_config: Option<sift_cc::CarefulResumeConfig>,
    /// ECN in this flow's connections (`Config::ecn`, RFC 9000 §13.4): on
    /// by default, as in the connection; `false` for a loss-only sender
    /// beside a marking one.
    #[serde(default = "default_ecn")]
    pub ecn: bool,
    /// Erasure coding (`Config::repair`, `docs/repair.md`): `"auto"` (the
    /// connection's default: repair where a round trip is dear and the
    /// path lossy), `"on"` (wherever the path has shown loss) or `"off"`.
    /// The papers' experiments run it off.
    #[serde(default)]
    pub repair: crate::fec::policy::RepairMode,
}

fn default_ecn() -> bool {
    crate::conn::Config::default().ecn
}

fn is_false(value: &bool) -> bool {
    !*value
}

fn default_careful_resume() -> bool {
    crate::conn::Config::default().careful_resume.is_some()
}

/// The simulator's default protection: Null (see [`FlowSpec::protection`]).
pub fn simulated_protection() -> Protection {
    Protection::Null
}

/// One constant-bit-rate UDP flow (or `count` identical ones).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CbrSpec {
    /// Sending rate while on, in bits per second.
    pub rate_bps: u64,
    /// Datagram size in bytes.
    pub packet_size: usize,
    /// Length of each "on" period in ms; absent = always on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_ms: Option<f64>,
    /// Length of each "off" period in ms.
    #[serde(default)]
    pub off_ms: f64,
    /// When the first period starts, in ms.
    #[serde(default)]
    pub start_ms: f64,
    /// When sending stops, in ms; absent = runs until the simulation ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_ms: Option<f64>,
    /// Which way it crosses the bottleneck.
    #[serde(default)]
    pub direction: Direction,
    /// Identical copies of this flow.
    #[serde(default = "one_usize")]
    pub count: usize,
}

fn default_seeds() -> Vec<u64> {
    vec![1]
}

fn default_time_limit_s() -> f64 {
    DEFAULT_TIME_LIMIT_S
}

fn default_sample_interval_ms() -> u64 {
    DEFAULT_SAMPLE_INTERVAL_MS
}

fn default_pmtud() -> bool {
    crate::conn::Config::default().pmtud.enabled
}

fn default_corruption_notices() -> bool {
    crate::conn::Config::default().corruption_notices
}

fn default_repair_damaged_headers() -> bool {
    crate::conn::Config::default().repair_damaged_headers
}

fn one() -> u64 {
    1
}

fn one_usize() -> usize {
    1
}

/// Accepts `cc = "reno"` (paper defaults) or `cc = { name = "reno", ... }`.
fn cc_by_name_or_table<'de, D: Deserializer<'de>>(deserializer: D) -> Result<CcConfig, D::Error> {
    use serde::de::Error;
    match toml::Value::deserialize(deserializer)? {
        toml::Value::String(name) => name.parse().map_err(D::Error::custom),
        table @ toml::Value::Table(_) => CcConfig::deserialize(table)
            .map_err(|e| D::Error::custom(format!("in `cc`: {}", e.message()))),
        other => Err(D::Error::custom(format!(
            "`cc` must be a controller name or a table with `name`, not a {}",
            other.type_str()
        ))),
    }
}

/// Accepts `lying_receiver = true | false` (every gap, or honest) or a
/// [`ReceiverLie`] name (`"honest"`, `"every-gap"`, `"real-losses"`).
fn lie_from_bool_or_name<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<ReceiverLie, D::Error> {
    use serde::de::Error;
    match toml::Value::deserialize(deserializer)? {
        toml::Value::Boolean(true) => Ok(ReceiverLie::EveryGap),
        toml::Value::Boolean(false) => Ok(ReceiverLie::Honest),
        name @ toml::Value::String(_) => ReceiverLie::deserialize(name)
            .map_err(|e| D::Error::custom(format!("in `lying_receiver`: {}", e.message()))),
        other => Err(D::Error::custom(format!(
            "`lying_receiver` must be true, false or a name, not a {}",
            other.type_str()
        ))),
    }
}

fn is_honest(lie: &ReceiverLie) -> bool {
    *lie == ReceiverLie::Honest
}

/// A scenario could not be read, parsed or accepted.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("cannot read scenario file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The TOML is malformed, has an unknown key, or a value of the wrong type.
    #[error("{location}: {message}")]
    Parse {
        /// `FILE:LINE:COLUMN` (or just the origin when the position is unknown).
        location: String,
        /// What the parser said.
        message: String,
    },
    /// A value is out of range.
    #[error("{origin}: {key} = {value}: {reason}")]
    Invalid {
        /// The file or text the scenario came from.
        origin: String,
        /// The key.
        key: String,
        /// The value given.
        value: String,
        /// Why it is refused.
        reason: String,
    },
    /// The scenario could not be written as TOML.
    #[error("cannot write scenario {name:?} as TOML: {message}")]
    Serialize {
        /// The scenario's name.
        name: String,
        /// What the encoder said.
        message: String,
    },
}

impl Scenario {
    /// Reads, parses and validates a scenario file.
    pub fn load(path: &Path) -> Result<Self, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::from_toml_str(&text, &path.display().to_string())
    }

    /// Parses and validates scenario text; `origin` (usually the file name)
    /// prefixes every error.
    pub fn from_toml_str(text: &str, origin: &str) -> Result<Self, ScenarioError> {
        let scenario: Scenario = toml::from_str(text).map_err(|e| ScenarioError::Parse {
            location: match e.span() {
                Some(span) => {
                    let (line, column) = line_and_column(text, span.start);
                    format!("{origin}:{line}:{column}")
                }
                None => origin.to_string(),
            },
            message: e.message().trim().to_string(),
        })?;
        scenario.validate_from(origin)?;
        Ok(scenario)
    }

    /// The scenario as TOML text (round-trips through `from_toml_str`).
    pub fn to_toml(&self) -> Result<String, ScenarioError> {
        toml::to_string(self).map_err(|e| ScenarioError::Serialize {
            name: self.name.clone(),
            message: e.to_string(),
        })
    }

    /// Checks every value; errors name the key and the offending value.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        self.validate_from(&format!("scenario {:?}", self.name))
    }

    fn validate_from(&self, origin: &str) -> Result<(), ScenarioError> {
        let invalid = |key: &str, value: &dyn std::fmt::Debug, reason: &str| {
            Err(ScenarioError::Invalid {
                origin: origin.to_string(),
                key: key.to_string(),
                value: format!("{value:?}"),
                reason: reason.to_string(),
            })
        };
        if self.name.is_empty()
            || self.name.starts_with('.')
            || !self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        {
            return invalid(
                "name",
                &self.name,
                "must be non-empty, use only letters, digits, '-', '_', '.', and not start with '.' (it names the results directory)",
            );
        }
        if self.seeds.is_empty() {
            return invalid("seeds", &self.seeds, "needs at least one seed");
        }
        for (i, seed) in self.seeds.iter().enumerate() {
            if self
                .seeds
                .get(..i)
                .is_some_and(|earlier| earlier.contains(seed))
            {
                return invalid(
                    "seeds",
                    &self.seeds,
                    "a seed is listed twice (it would repeat a run exactly)",
                );
            }
        }
        if !(self.time_limit_s.is_finite()
            && self.time_limit_s > 0.0
            && self.time_limit_s <= MAX_TIME_LIMIT_S)
        {
            return invalid(
                "time_limit_s",
                &self.time_limit_s,
                &format!("must be a number of seconds in (0, {MAX_TIME_LIMIT_S}]"),
            );
        }
        if self.sample_interval_ms == 0 {
            return invalid(
                "sample_interval_ms",
                &self.sample_interval_ms,
                "must be at least 1",
            );
        }
        for (direction, link) in [
            ("bottleneck.forward", &self.bottleneck.forward),
            ("bottleneck.reverse", &self.bottleneck.reverse),
        ] {
            check_link(origin, direction, link)?;
        }
        let mut total_flows = 0usize;
        for (i, flow) in self.flows.iter().enumerate() {
            let key = |field: &str| format!("flow[{i}].{field}");
            if let Some(after) = flow.after_flow {
                if after >= total_flows {
                    return invalid(
                        &key("after_flow"),
                        &after,
                        "must name an earlier flow (its index among the expanded flows)",
                    );
                }
            } else if flow.resume_path {
                return invalid(
                    &key("resume_path"),
                    &true,
                    "needs after_flow: the flow whose saved path state it resumes from",
                );
            }
            if flow.new_path.is_some() && flow.new_address_at_ms.is_none() {
                return invalid(
                    &key("new_path"),
                    &"{ … }",
                    "needs new_address_at_ms: the time the client moves onto it",
                );
            }
            for (field, at) in [
                ("rebind_at_ms", flow.rebind_at_ms),
                ("new_address_at_ms", flow.new_address_at_ms),
            ] {
                if let Some(at) = at {
                    if !(0.0..=MAX_TIME_LIMIT_S * 1e3).contains(&at) {
                        return invalid(
                            &key(field),
                            &at,
                            "must be a time in milliseconds, at least 0",
                        );
                    }
                }
            }
            if flow.bytes == 0 {
                return invalid(&key("bytes"), &flow.bytes, "must be at least 1");
            }
            if flow.streams == 0 || flow.streams > MAX_STREAMS_PER_FLOW {
                return invalid(
                    &key("streams"),
                    &flow.streams,
                    &format!("must be between 1 and {MAX_STREAMS_PER_FLOW}"),
                );
            }
            if flow.bytes < flow.streams {
                return invalid(
                    &key("bytes"),
                    &flow.bytes,
                    &format!(
                        "must be at least `streams` ({}) so every stream carries data",
                        flow.streams
                    ),
                );
            }
            check_ms(origin, &key("start_ms"), flow.start_ms)?;
            check_ms(origin, &key("access_delay_ms"), flow.access_delay_ms)?;
            if let Some(seconds) = flow.idle_timeout_s {
                check_ms(origin, &key("idle_timeout_s"), seconds * 1e3)?;
            }
            if flow.count == 0 {
                return invalid(&key("count"), &flow.count, "must be at least 1");
            }
            if let Some(size) = flow.max_datagram_size {
                if !(1200..=MAX_DATAGRAM_BYTES).contains(&size) {
                    return invalid(
                        &key("max_datagram_size"),
                        &size,
                        &format!("must be between 1200 (QUIC's minimum) and {MAX_DATAGRAM_BYTES}"),
                    );
                }
            }
            total_flows = total_flows.saturating_add(flow.count);
        }
        for (i, cbr) in self.cbr.iter().enumerate() {
            let key = |field: &str| format!("cbr[{i}].{field}");
            if cbr.rate_bps == 0 {
                return invalid(&key("rate_bps"), &cbr.rate_bps, "must be at least 1");
            }
            if cbr.packet_size == 0 || cbr.packet_size > MAX_DATAGRAM_BYTES {
                return invalid(
                    &key("packet_size"),
                    &cbr.packet_size,
                    &format!("must be between 1 and {MAX_DATAGRAM_BYTES} bytes"),
                );
            }
            check_ms(origin, &key("start_ms"), cbr.start_ms)?;
            check_ms(origin, &key("off_ms"), cbr.off_ms)?;
            if let Some(on) = cbr.on_ms {
                check_ms(origin, &key("on_ms"), on)?;
                if on == 0.0 {
                    return invalid(
                        &key("on_ms"),
                        &on,
                        "must be positive (omit it for always on)",
                    );
                }
            } else if cbr.off_ms > 0.0 {
                return invalid(&key("off_ms"), &cbr.off_ms, "needs `on_ms` as well");
            }
            if let Some(stop) = cbr.stop_ms {
                check_ms(origin, &key("stop_ms"), stop)?;
                if stop <= cbr.start_ms {
                    return invalid(&key("stop_ms"), &stop, "must be after `start_ms`");
                }
            }
            if cbr.count == 0 {
                return invalid(&key("count"), &cbr.count, "must be at least 1");
            }
            total_flows = total_flows.saturating_add(cbr.count);
        }
        if total_flows > MAX_FLOWS {
            return invalid(
                "flow",
                &total_flows,
                &format!("at most {MAX_FLOWS} flows (sift and CBR, after `count`)"),
            );
        }
        for key in self.params.keys() {
            if RESERVED_PARAM_KEYS.contains(&key.as_str()) {
                return invalid(
                    &format!("params.{key}"),
                    key,
                    "is a scenario key; pick another label",
                );
            }
        }
        Ok(())
    }

    /// The sift flows after `count` expansion, in report order.
    pub fn expanded_flows(&self) -> impl Iterator<Item = &FlowSpec> {
        self.flows
            .iter()
            .flat_map(|flow| std::iter::repeat_n(flow, flow.count))
    }

    /// The CBR flows after `count` expansion, in report order.
    pub fn expanded_cbr(&self) -> impl Iterator<Item = &CbrSpec> {
        self.cbr
            .iter()
            .flat_map(|cbr| std::iter::repeat_n(cbr, cbr.count))
    }

    /// The run's knobs for the report: the scenario's settings (everything but
    /// its name and seeds) plus the `[params]` labels.
    pub fn params(&self) -> BTreeMap<String, serde_json::Value> {
        let mut params = self.params.clone();
        let knobs = [
            ("time_limit_s", serde_json::to_value(self.time_limit_s)),
            (
                "sample_interval_ms",
                serde_json::to_value(self.sample_interval_ms),
            ),
            ("bottleneck", serde_json::to_value(&self.bottleneck)),
            ("flow", serde_json::to_value(&self.flows)),
            ("cbr", serde_json::to_value(&self.cbr)),
        ];
        for (key, value) in knobs {
            // These types always serialize; a failure would only drop a knob.
            if let Ok(value) = value {
                params.insert(key.to_string(), value);
            }
        }
        params
    }

    /// The time limit as a duration.
    pub fn time_limit(&self) -> Duration {
        Duration::try_from_secs_f64(self.time_limit_s).unwrap_or(Duration::ZERO)
    }

    /// The sampling period as a duration.
    pub fn sample_interval(&self) -> Duration {
        Duration::from_millis(self.sample_interval_ms.max(1))
    }
}

/// Milliseconds as a duration (negative or non-finite values as zero; they
/// are rejected by `validate`).
pub fn ms_to_duration(ms: f64) -> Duration {
    Duration::try_from_secs_f64(ms / 1e3).unwrap_or(Duration::ZERO)
}

fn check_ms(origin: &str, key: &str, ms: f64) -> Result<(), ScenarioError> {
    if (0.0..=MAX_TIME_LIMIT_S * 1e3).contains(&ms) {
        Ok(())
    } else {
        Err(ScenarioError::Invalid {
            origin: origin.to_string(),
            key: key.to_string(),
            value: format!("{ms:?}"),
            reason: format!(
                "must be a number of milliseconds in [0, {}]",
                MAX_TIME_LIMIT_S * 1e3
            ),
        })
    }
}

fn check_link(origin: &str, key: &str, link: &LinkConfig) -> Result<(), ScenarioError> {
    // The link model owns its own rules; the scenario only says where.
    link.validate().map_err(|e| ScenarioError::Invalid {
        origin: origin.to_string(),
        key: key.to_string(),
        value: link.to_netem(),
        reason: e.to_string(),
    })
}

/// 1-based line and column of byte `offset` in `text`.
fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

#[cfg(test)]
mod tests;
