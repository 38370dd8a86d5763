//! Reading a qlog trace back through the `qlog` crate's JSON-SEQ reader,
//! for `sift-lab plot` and the tests: every record must parse, either as
//! one of the crate's QUIC events or as a named extension event (sift's).

use std::path::{Path, PathBuf};

use serde_json::Value;

/// One event of a trace.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceEvent {
    /// Milliseconds since the trace's start.
    pub time_ms: f64,
    /// Its name with namespace (`quic:packet_sent`, `sift:loss_verdict`).
    pub name: String,
    /// Its data.
    pub data: Value,
    /// The `qlog` crate parsed it as one of its own event types (false:
    /// as an extension event).
    pub typed: bool,
}

/// A trace could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TraceReadError {
    /// The file could not be opened or its header parsed.
    #[error("cannot read qlog trace {path}: {message}")]
    Open {
        /// The trace.
        path: PathBuf,
        /// What the reader said.
        message: String,
    },
    /// Records of the file did not parse as events.
    #[error("qlog trace {path}: {unparsed} of {records} records are not qlog events (the first, record {first_index}: {first})")]
    Unparsed {
        /// The trace.
        path: PathBuf,
        /// Records after the header.
        records: usize,
        /// Records the reader skipped.
        unparsed: usize,
        /// The first record that is not a JSON event, counted from 1 after
        /// the header (0 if every record is one and the reader still
        /// skipped some).
        first_index: usize,
        /// Its first bytes, as text.
        first: String,
    },
}

/// Reads every event of the JSON-SEQ trace at `path` (`.sqlog`); fails if
/// the header or any record does not parse.
pub fn read_trace(path: &Path) -> Result<Vec<TraceEvent>, TraceReadError> {
    let open_error = |message: String| TraceReadError::Open {
        path: path.to_path_buf(),
        message,
    };
    let bytes = std::fs::read(path).map_err(|e| open_error(e.to_string()))?;
    // JSON-SEQ: each record starts with RS (0x1e); the first is the header.
    let records = bytes
        .split(|&b| b == 0x1e)
        .filter(|record| record.iter().any(|b| !b.is_ascii_whitespace()))
        .count()
        .saturating_sub(1);
    let reader =
        qlog::reader::QlogSeqReader::with_file(path).map_err(|e| open_error(e.to_string()))?;
    let mut events = Vec::with_capacity(records);
    for event in reader {
        let (value, typed) = match event {
            qlog::reader::Event::Qlog(event) => (serde_json::to_value(&event), true),
            qlog::reader::Event::Json(event) => (serde_json::to_value(&event), false),
        };
        let value = value.map_err(|e| open_error(e.to_string()))?;
        events.push(TraceEvent {
            time_ms: value.get("time").and_then(Value::as_f64).unwrap_or(0.0),
            name: value
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            data: value.get("data").cloned().unwrap_or(Value::Null),
            typed,
        });
    }
    if events.len() != records {
        let (first_index, first) = first_unparsed(&bytes).unwrap_or_default();
        return Err(TraceReadError::Unparsed {
            path: path.to_path_buf(),
            records,
            unparsed: records.saturating_sub(events.len()),
            first_index,
            first,
        });
    }
    Ok(events)
}

/// The first record after the header that is not a JSON object with a
/// time, a name and data (what an event needs), and its first bytes: what
/// a failed read points at.
fn first_unparsed(bytes: &[u8]) -> Option<(usize, String)> {
    const SHOWN: usize = 160;
    bytes
        .split(|&b| b == 0x1e)
        .filter(|record| record.iter().any(|b| !b.is_ascii_whitespace()))
        .skip(1)
        .enumerate()
        .find(|(_, record)| {
            !serde_json::from_slice::<Value>(record).is_ok_and(|value| {
                ["time", "name", "data"]
                    .iter()
                    .all(|key| value.get(key).is_some())
            })
        })
        .map(|(index, record)| {
            let shown = &record[..record.len().min(SHOWN)];
            (index + 1, String::from_utf8_lossy(shown).trim().to_string())
        })
}
