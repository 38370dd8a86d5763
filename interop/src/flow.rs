//! The record a client prints with `--json` at the end of a download: the
//! DESIGN §11 flow fields plus `sha256` and `path`. `sift-client --json`
//! prints it; `quiche-client --json` prints the same fields, so the runner
//! parses both with this one struct. Counters are the data sender's (the
//! server's, for a download).

use serde::{Deserialize, Serialize};

/// One finished download.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FlowReport {
    /// Flow number within its run (always 0 here: one download per run).
    #[serde(default)]
    pub id: u64,
    /// The path on the server.
    #[serde(default)]
    pub path: String,
    /// The sender's congestion controller, by the name its stack uses.
    pub cc: String,
    /// Whether corruption notices were negotiated (always false for quiche).
    #[serde(default)]
    pub corruption_notices: bool,
    /// Payload bytes delivered.
    pub bytes: u64,
    /// Seconds from sending the request to the verified file.
    pub completion_s: f64,
    /// `bytes`·8 / `completion_s`.
    pub goodput_bps: f64,
    /// Packets the sender retransmitted (quiche: `Stats::retrans`).
    #[serde(default)]
    pub retransmitted_packets: u64,
    /// Probe timeouts the sender took (quiche: `PathStats::total_pto_count`).
    #[serde(default)]
    pub ptos: u64,
    /// Packets the receiver named in CORRUPTED frames.
    #[serde(default)]
    pub corruption_notices_received: u64,
    /// The sender's smoothed RTT at the end, microseconds.
    #[serde(default)]
    pub srtt_us: u64,
    /// The sender's congestion window at the end, bytes.
    #[serde(default)]
    pub cwnd: u64,
    /// Packets the sender declared lost (quiche only; sift counts
    /// retransmissions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_packets: Option<u64>,
    /// SHA-256 of the file received, lowercase hex.
    pub sha256: String,
    /// The version the connection spoke, as sift's client names it:
    /// `"sift/1"` or [`QUIC_V1`] (what every peer's client speaks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// How a flow report names QUIC version 1 (as `sift-client --json` does).
pub const QUIC_V1: &str = "QUIC v1";

/// `bytes`·8 / `seconds`, or 0 for an instant transfer.
pub fn goodput_bps(bytes: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes as f64 * 8.0 / seconds
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sift_clients_json_parses_as_a_flow_report() {
        // What `sift-client get … --json` printed for a 3 MB download.
        let line = r#"{"id":0,"operation":"get","path":"f.bin","local_path":"/tmp/out.bin","cc":"cubic","corruption_notices":true,"bytes":3000000,"resumed_from":0,"completion_s":3.62,"goodput_bps":6622863.7,"retransmitted_packets":24,"ptos":0,"corruption_notices_received":0,"srtt_us":21454,"cwnd":22598,"sha256":"446e"}"#;
        let flow: FlowReport = serde_json::from_str(line).unwrap();
        assert_eq!(flow.cc, "cubic");
        assert_eq!(flow.bytes, 3_000_000);
        assert_eq!(flow.retransmitted_packets, 24);
        assert_eq!(flow.lost_packets, None);
    }

    #[test]
    fn goodput_is_bits_per_second_and_zero_for_no_time() {
        assert_eq!(goodput_bps(1_000_000, 2.0), 4_000_000.0);
        assert_eq!(goodput_bps(5, 0.0), 0.0);
    }
}
