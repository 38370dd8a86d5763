//! `sift-lab qvis TRACE.sqlog`: a trace rewritten for qvis.
//!
//! sift's traces follow the schema the `qlog` crate writes (the current
//! qlog drafts: `file_schema`, `quic:` events). qvis (quiclog/qvis, checked
//! at 72c8c4b, October 2025) reads only up to qlog 0.3 (main schema -01):
//! its JSON-SEQ loader refuses a header without `qlog_version` and
//! `qlog_format: "JSON-SEQ"`, and its congestion graph and sequence diagram
//! look events up under the 0.3 names (`transport:packet_sent`,
//! `recovery:metrics_updated`, …). This rewrites the header and renames the
//! events qvis draws; field layout is the same in both versions except the
//! transport parameters' owner and a STREAM frame's length, also rewritten.
//! sift's own events keep their `sift:` names (qvis lists them).

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::{json, Map, Value};

use sift::trace::{read_trace, TraceEvent};

/// The qlog version qvis reads that is closest to the crate's.
const QVIS_QLOG_VERSION: &str = "0.3";

/// Current event names and their qlog 0.3 names.
const RENAMED: &[(&str, &str)] = &[
    ("quic:packet_sent", "transport:packet_sent"),
    ("quic:packet_received", "transport:packet_received"),
    ("quic:parameters_set", "transport:parameters_set"),
    ("quic:packet_lost", "recovery:packet_lost"),
    ("quic:recovery_metrics_updated", "recovery:metrics_updated"),
    (
        "quic:congestion_state_updated",
        "recovery:congestion_state_updated",
    ),
    ("quic:key_updated", "security:key_updated"),
    ("quic:connection_closed", "connectivity:connection_closed"),
];

/// What a rewrite wrote.
#[derive(Debug)]
pub struct Rewritten {
    /// The file written.
    pub out: PathBuf,
    /// Events written.
    pub events: usize,
    /// Of them, `transport:packet_sent` (what qvis's graphs are built on).
    pub packets_sent: usize,
}

/// Where `sift-lab qvis TRACE` writes by default: `NAME.qvis.sqlog` beside
/// `NAME.sqlog` (qvis picks its JSON-SEQ reader by the `.sqlog` ending).
pub fn default_out(trace: &Path) -> PathBuf {
    let stem = trace
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = stem.strip_suffix(".sqlog").unwrap_or(&stem);
    trace.with_file_name(format!("{stem}.qvis.sqlog"))
}

/// Reads the trace at `trace` (every record must parse, as for `plot`) and
/// writes its qvis form to `out`.
pub fn rewrite_trace(trace: &Path, out: &Path) -> anyhow::Result<Rewritten> {
    let events = read_trace(trace)?;
    let bytes = std::fs::read(trace).with_context(|| format!("cannot read {}", trace.display()))?;
    let header = bytes
        .split(|&b| b == 0x1e)
        .find(|record| record.iter().any(|b| !b.is_ascii_whitespace()))
        .and_then(|record| serde_json::from_slice::<Value>(record).ok())
        .with_context(|| format!("{} has no qlog header record", trace.display()))?;
    let records = qvis_records(&header, &events);
    let mut text = String::new();
    for record in &records {
        text.push('\u{1e}');
        text.push_str(&record.to_string());
        text.push('\n');
    }
    std::fs::write(out, text).with_context(|| format!("cannot write {}", out.display()))?;
    Ok(Rewritten {
        out: out.to_path_buf(),
        events: records.len() - 1,
        packets_sent: records
            .iter()
            .filter(|r| r["name"] == "transport:packet_sent")
            .count(),
    })
}

/// The JSON-SEQ records of the qvis form: its header, then the events in
/// time order (qvis re-sorts, with an alert, a trace that is not).
pub fn qvis_records(header: &Value, events: &[TraceEvent]) -> Vec<Value> {
    let trace = &header["trace"];
    let title = header["title"].as_str().unwrap_or("sift connection");
    let mut records = vec![json!({
        "qlog_version": QVIS_QLOG_VERSION,
        "qlog_format": "JSON-SEQ",
        "title": title,
        "description": format!(
            "{} rewritten for qvis (qlog {QVIS_QLOG_VERSION} event names) by sift-lab qvis",
            header["file_schema"].as_str().unwrap_or("a qlog trace")
        ),
        "trace": {
            "title": trace["title"].as_str().unwrap_or(title),
            "vantage_point": trace["vantage_point"],
            "common_fields": { "time_format": "relative", "reference_time": 0 },
            "configuration": { "time_units": "ms" },
        },
    })];
    let mut sorted: Vec<&TraceEvent> = events.iter().collect();
    sorted.sort_by(|a, b| a.time_ms.total_cmp(&b.time_ms));
    records.extend(sorted.into_iter().map(|event| {
        let name = RENAMED
            .iter()
            .find(|(current, _)| *current == event.name)
            .map_or(event.name.as_str(), |(_, old)| old);
        json!({ "time": event.time_ms, "name": name, "data": qvis_data(name, &event.data) })
    }));
    records
}

fn qvis_data(name: &str, data: &Value) -> Value {
    let mut data = data.clone();
    match name {
        "transport:parameters_set" => {
            if let Some(fields) = data.as_object_mut() {
                if let Some(initiator) = fields.remove("initiator") {
                    fields.insert("owner".into(), initiator);
                }
            }
        }
        "transport:packet_sent" | "transport:packet_received" => {
            for frame in data["frames"].as_array_mut().into_iter().flatten() {
                let Some(frame) = frame.as_object_mut() else {
                    continue;
                };
                let is_data = matches!(
                    frame.get("frame_type").and_then(Value::as_str),
                    Some("stream" | "crypto" | "datagram")
                );
                if is_data && !frame.contains_key("length") {
                    if let Some(length) = payload_length(frame) {
                        frame.insert("length".into(), length);
                    }
                }
            }
        }
        _ => {}
    }
    data
}

fn payload_length(frame: &Map<String, Value>) -> Option<Value> {
    frame.get("raw")?.get("payload_length").cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(time_ms: f64, name: &str, data: Value) -> TraceEvent {
        TraceEvent {
            time_ms,
            name: name.to_string(),
            data,
            typed: name.starts_with("quic:"),
        }
    }

    #[test]
    fn the_qvis_form_has_a_0_3_header_and_the_0_3_event_names_in_time_order() {
        let header = json!({
            "file_schema": "urn:ietf:params:qlog:file:sequential",
            "serialization_format": "JSON-SEQ",
            "title": "sift",
            "trace": { "title": "sift connection", "vantage_point": { "type": "server" } },
        });
        let events = [
            event(
                1.0,
                "quic:parameters_set",
                json!({ "initiator": "remote", "initial_max_data": 100 }),
            ),
            event(
                3.0,
                "quic:packet_sent",
                json!({
                    "header": { "packet_type": "1RTT", "packet_number": 4 },
                    "raw": { "length": 1200 },
                    "frames": [{ "frame_type": "stream", "stream_id": 0, "raw": { "payload_length": 1100 } }],
                }),
            ),
            event(
                2.0,
                "quic:recovery_metrics_updated",
                json!({ "congestion_window": 14720 }),
            ),
            event(4.0, "sift:loss_verdict", json!({ "verdict": "random" })),
        ];
        let records = qvis_records(&header, &events);
        assert_eq!(records[0]["qlog_version"], "0.3");
        assert_eq!(records[0]["qlog_format"], "JSON-SEQ");
        assert_eq!(records[0]["trace"]["vantage_point"]["type"], "server");
        let names: Vec<&str> = records[1..]
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "transport:parameters_set",
                "recovery:metrics_updated",
                "transport:packet_sent",
                "sift:loss_verdict"
            ]
        );
        assert_eq!(records[1]["data"]["owner"], "remote");
        assert_eq!(records[3]["data"]["raw"]["length"], 1200);
        assert_eq!(records[3]["data"]["frames"][0]["length"], 1100);
        assert_eq!(records[2]["data"]["congestion_window"], 14720);
    }

    #[test]
    fn the_qvis_form_is_written_beside_the_trace() {
        assert_eq!(
            default_out(Path::new("q/ab-client.sqlog")),
            Path::new("q/ab-client.qvis.sqlog")
        );
    }
}
