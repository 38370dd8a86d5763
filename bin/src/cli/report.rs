//! What `sift-client` prints when a transfer ends: an iperf3-like summary,
//! or with `--json` one object with DESIGN §11's flow fields plus `sha256`
//! and `path`.

use std::time::Duration;

use serde::Serialize;

use super::format;
use crate::transfer::SenderReport;

/// One transfer, in DESIGN §11's flow schema (fields may be added, never
/// renamed). Counters are the data sender's: the server's for `get` (from
/// its trailer), this client's for `put`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FlowReport {
    pub id: u64,
    /// "get" or "put".
    pub operation: &'static str,
    /// The path on the server.
    pub path: String,
    /// The local file.
    pub local_path: String,
    /// The sender's congestion controller.
    pub cc: String,
    /// Corruption notices were negotiated.
    pub corruption_notices: bool,
    /// The version the connection ran: "sift/1" between sift ends, "QUIC
    /// v1" with any other QUIC peer (no corruption notices).
    pub version: String,
    /// Payload bytes this transfer moved (only the rest, when resuming).
    pub bytes: u64,
    /// Bytes already present locally when a resumed download started.
    pub resumed_from: u64,
    /// Seconds from sending the request to the verified file.
    pub completion_s: f64,
    /// `bytes`·8 / `completion_s`.
    pub goodput_bps: f64,
    pub retransmitted_packets: u64,
    pub ptos: u64,
    pub corruption_notices_received: u64,
    pub srtt_us: u64,
    pub cwnd: u64,
    /// The largest datagram the sender sent at the end, bytes: where path
    /// MTU discovery settled (UDP payload).
    pub max_datagram_size: u64,
    /// Path MTU probes the sender sent, and of them lost.
    pub pmtu_probes_sent: u64,
    pub pmtu_probes_lost: u64,
    /// Path MTU black holes the sender detected.
    pub pmtu_black_holes: u64,
    /// SHA-256 of the whole file.
    pub sha256: String,
    /// The TLS handshake resumed an earlier session (a ticket).
    pub tls_resumed: bool,
    /// What became of this client's 0-RTT data: "accepted", "rejected"
    /// (the request was sent again on a new stream once the handshake
    /// completed) or "none" (not sent).
    pub zero_rtt: &'static str,
    /// Request bytes this client sent in 0-RTT packets.
    pub zero_rtt_bytes: u64,
    /// The client moved to the server's preferred address (RFC 9000
    /// §9.6) and ended there.
    pub on_preferred_address: bool,
    /// Seconds from starting the connection to the server's first byte
    /// (its answer to the request), handshake included; 0 when not known.
    pub time_to_first_byte_s: f64,
    /// When the first byte arrived (not serialised).
    #[serde(skip)]
    pub first_byte_at: Option<std::time::Instant>,
    /// The sender's Careful Resume (RFC 9959), when it resumed from a saved
    /// path state (a `get` whose address token carried one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub careful_resume: Option<sift_cc::CarefulResumeStatus>,
    /// Where the sender's time went, microseconds: busy, or held back by
    /// its window, its pacer, the receiver's credit or the application.
    pub send_times: sift::conn::SendTimes,
    /// The sender's ECN: `state` (testing, unknown, failed, capable, off;
    /// `failure` says why it failed), packets `sent` and `received` per
    /// codepoint (`ect0`, `ect1`, `ce`), the receiver's counts of the
    /// sender's packets (`reported_by_peer`: its `ce` are the CE marks the
    /// path made) and the congestion events they started.
    pub ecn: sift::conn::ecn::EcnStats,
    /// The sender's erasure coding: `negotiated`, `symbols_sent`,
    /// `repair_bytes_sent`, `tail_symbols_sent`, `peer_rebuilt` (packets the
    /// receiver rebuilt from them) and the `loss_rate` that sized them.
    pub repair: sift::conn::fec::RepairStats,
}

/// The parts of a report that are not counters.
pub struct Transfer<'a> {
    pub operation: &'static str,
    pub path: &'a str,
    pub local_path: &'a str,
    pub bytes: u64,
    pub resumed_from: u64,
    pub elapsed: Duration,
    pub sha256: String,
}

impl FlowReport {
    /// A report from the transfer and the sender's counters.
    pub fn new(transfer: Transfer<'_>, sender: &SenderReport) -> Self {
        let completion_s = transfer.elapsed.as_secs_f64();
        Self {
            id: 0,
            operation: transfer.operation,
            path: transfer.path.to_string(),
            local_path: transfer.local_path.to_string(),
            cc: sender.cc.clone(),
            corruption_notices: sender.corruption_notices,
            version: sender.version.clone(),
            bytes: transfer.bytes,
            resumed_from: transfer.resumed_from,
            completion_s,
            goodput_bps: if completion_s > 0.0 {
                transfer.bytes as f64 * 8.0 / completion_s
            } else {
                0.0
            },
            retransmitted_packets: sender.retransmitted_packets,
            ptos: sender.ptos,
            corruption_notices_received: sender.corruption_notices_received,
            srtt_us: sender.srtt_us,
            cwnd: sender.cwnd,
            max_datagram_size: sender.max_datagram_size,
            pmtu_probes_sent: sender.pmtu_probes_sent,
            pmtu_probes_lost: sender.pmtu_probes_lost,
            pmtu_black_holes: sender.pmtu_black_holes,
            sha256: transfer.sha256,
            tls_resumed: false,
            zero_rtt: "none",
            zero_rtt_bytes: 0,
            on_preferred_address: false,
            time_to_first_byte_s: 0.0,
            first_byte_at: None,
            careful_resume: sender.careful_resume,
            send_times: sender.send_times,
            ecn: sender.ecn,
            repair: sender.repair.clone(),
        }
    }

    /// Notes when the server's first byte arrived.
    pub fn with_first_byte(mut self, at: Option<std::time::Instant>) -> Self {
        self.first_byte_at = at;
        self
    }

    /// Sets `time_to_first_byte_s` from when the connection started.
    pub fn first_byte_since(&mut self, dialed: std::time::Instant) {
        if let Some(at) = self.first_byte_at {
            self.time_to_first_byte_s = at.saturating_duration_since(dialed).as_secs_f64();
        }
    }

    /// Adds how this client's connection started: resumed or not, and its
    /// 0-RTT's fate (from the client's own `stats`).
    pub fn with_session(mut self, stats: &sift::Stats) -> Self {
        self.tls_resumed = stats.resumed;
        self.zero_rtt = zero_rtt_fate(stats);
        self.zero_rtt_bytes = stats.zero_rtt_bytes;
        self.on_preferred_address = stats.on_preferred_address;
        self
    }

    /// The iperf3-like summary for a person.
    pub fn summary(&self) -> String {
        let notices = if self.corruption_notices { "on" } else { "off" };
        let mut out = format!("{} {} ({})\n", self.operation, self.path, self.local_path);
        let mut row = |name: &str, value: String| out.push_str(&format!("  {name:<12} {value}\n"));
        let resumed = if self.resumed_from > 0 {
            format!(", resumed after {}", format::bytes(self.resumed_from))
        } else {
            String::new()
        };
        row(
            "bytes",
            format!("{} ({}){resumed}", self.bytes, format::bytes(self.bytes)),
        );
        row("time", format!("{:.2} s", self.completion_s));
        if self.time_to_first_byte_s > 0.0 {
            row(
                "first byte",
                format!("{:.3} s after connecting", self.time_to_first_byte_s),
            );
        }
        row("goodput", format::rate(self.goodput_bps));
        row(
            "retransmits",
            format!(
                "{} packets, {} PTOs (sender)",
                self.retransmitted_packets, self.ptos
            ),
        );
        if self.version.starts_with("QUIC v") {
            row(
                "corrupted",
                format!("{} peer: no corruption notices", self.version),
            );
        } else {
            row(
                "corrupted",
                format!(
                    "{} packets notified (corruption notices {notices})",
                    self.corruption_notices_received
                ),
            );
        }
        if !self.version.is_empty() {
            row("version", self.version.clone());
        }
        if self.tls_resumed || self.zero_rtt != "none" {
            row(
                "session",
                format!(
                    "{}, 0-RTT {} ({} bytes early)",
                    if self.tls_resumed {
                        "resumed"
                    } else {
                        "full handshake"
                    },
                    self.zero_rtt,
                    self.zero_rtt_bytes
                ),
            );
        }
        if self.on_preferred_address {
            row(
                "path",
                "moved to the server's preferred address".to_string(),
            );
        }
        if let Some(cr) = self.careful_resume {
            let what = match (cr.jumped, cr.retreated) {
                (false, _) => "did not jump".to_string(),
                (true, false) => format!("jumped to {}", format::bytes(cr.jump_cwnd)),
                (true, true) => format!(
                    "jumped to {}, retreated (the path carried less)",
                    format::bytes(cr.jump_cwnd)
                ),
            };
            row(
                "resume",
                format!(
                    "Careful Resume from {} saved: {what}",
                    format::bytes(cr.saved_cwnd)
                ),
            );
        }
        if let Some(shares) = send_time_shares(&self.send_times) {
            let shares: Vec<String> = shares
                .iter()
                .map(|(what, share)| format!("{what} {share:.0}%"))
                .collect();
            row("sender", shares.join(", "));
        }
        row("ecn", ecn_summary(&self.ecn));
        if self.repair.negotiated {
            row("repair", repair_summary(&self.repair));
        }
        row("srtt", format::micros_as_ms(self.srtt_us));
        row("cwnd", format::bytes(self.cwnd));
        row("cc", self.cc.clone());
        row("sha256", self.sha256.clone());
        out
    }
}

/// One line on the sender's ECN: whether the path validated, and the
/// marks the receiver reported.
pub fn ecn_summary(ecn: &sift::conn::ecn::EcnStats) -> String {
    use sift::conn::EcnState;
    match ecn.state {
        EcnState::Off => "off".to_string(),
        EcnState::Failed => format!(
            "failed ({}): sent not-ECT",
            ecn.failure
                .map_or("no reason given".to_string(), |f| format!("{f:?}")
                    .to_lowercase())
        ),
        state => format!(
            "{}, {} CE marks in {} ECT packets (sender)",
            state.name(),
            ecn.reported_by_peer.ce,
            ecn.sent.ect0 + ecn.sent.ect1
        ),
    }
}

/// One line on erasure coding, from the sender's side.
pub fn repair_summary(repair: &sift::conn::fec::RepairStats) -> String {
    if repair.symbols_sent == 0 && repair.packets_rebuilt == 0 {
        return "negotiated, no repair sent (a short or clean path)".to_string();
    }
    format!(
        "{} symbols sent ({}, {} for tails), {} packets rebuilt by the receiver",
        repair.symbols_sent,
        format::bytes(repair.repair_bytes_sent),
        repair.tail_symbols_sent,
        repair.peer_rebuilt,
    )
}

/// Where the sender's time went, as percentages of the time charged, in
/// the order busy, window, pacer, credit, application; `None` when
/// nothing was charged (a sender that said nothing, or only received).
pub fn send_time_shares(times: &sift::conn::SendTimes) -> Option<[(&'static str, f64); 5]> {
    let parts = [
        ("busy", times.busy_us),
        ("window", times.window_limited_us),
        ("pacer", times.pacing_limited_us),
        ("credit", times.credit_limited_us),
        ("application", times.app_limited_us),
    ];
    let total: u64 = parts.iter().map(|(_, us)| us).sum();
    (total > 0).then(|| parts.map(|(what, us)| (what, us as f64 * 100.0 / total as f64)))
}

/// What became of a client's 0-RTT data: "accepted", "rejected" or
/// "none" (it sent none).
pub fn zero_rtt_fate(stats: &sift::Stats) -> &'static str {
    if stats.zero_rtt_accepted {
        "accepted"
    } else if stats.zero_rtt_rejected {
        "rejected"
    } else {
        "none"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> FlowReport {
        FlowReport::new(
            Transfer {
                operation: "get",
                path: "f.bin",
                local_path: "out/f.bin",
                bytes: 4_000_000,
                resumed_from: 0,
                elapsed: Duration::from_millis(27_100),
                sha256: "ab".repeat(32),
            },
            &SenderReport {
                cc: "veno".into(),
                corruption_notices: false,
                version: "sift/1".into(),
                retransmitted_packets: 312,
                ptos: 2,
                corruption_notices_received: 0,
                cwnd: 40_000,
                srtt_us: 120_000,
                max_datagram_size: 1472,
                pmtu_probes_sent: 7,
                pmtu_probes_lost: 3,
                pmtu_black_holes: 0,
                checksum_free_datagrams: 0,
                careful_resume: None,
                send_times: sift::conn::SendTimes {
                    busy_us: 630_000,
                    credit_limited_us: 200_000,
                    app_limited_us: 170_000,
                    ..Default::default()
                },
                ecn: sift::conn::ecn::EcnStats {
                    state: sift::conn::EcnState::Capable,
                    sent: sift::conn::EcnCounts {
                        ect0: 2900,
                        ..Default::default()
                    },
                    reported_by_peer: sift::conn::EcnCounts {
                        ect0: 2888,
                        ect1: 0,
                        ce: 12,
                    },
                    ..Default::default()
                },
                repair: Default::default(),
            },
        )
    }

    #[test]
    fn goodput_is_bits_per_second_over_completion_time() {
        // DESIGN §11's example: 4 000 000 B · 8 / 27.1 s = 1 180 811 b/s.
        assert!((report().goodput_bps - 1_180_811.8).abs() < 1.0);
    }

    #[test]
    fn json_has_the_design_flow_fields_plus_sha256_and_path() {
        let json = serde_json::to_value(report()).unwrap();
        for field in [
            "bytes",
            "completion_s",
            "goodput_bps",
            "retransmitted_packets",
            "ptos",
            "corruption_notices_received",
            "cc",
            "corruption_notices",
            "version",
            "sha256",
            "path",
            "max_datagram_size",
            "pmtu_probes_sent",
            "pmtu_probes_lost",
            "pmtu_black_holes",
            "send_times",
            "ecn",
        ] {
            assert!(json.get(field).is_some(), "missing {field}");
        }
        assert_eq!(json["cc"], "veno");
        assert_eq!(json["ecn"]["state"], "capable");
        assert_eq!(json["ecn"]["sent"]["ect0"], 2900);
        assert_eq!(json["ecn"]["reported_by_peer"]["ce"], 12);
        assert!(json["ecn"]["received"].get("ce").is_some());
    }

    #[test]
    fn the_summary_says_whether_ecn_validated_and_how_many_marks() {
        let mut flow = report();
        let text = flow.summary();
        assert!(
            text.contains("capable, 12 CE marks in 2900 ECT packets (sender)"),
            "{text}"
        );
        flow.ecn.state = sift::conn::EcnState::Failed;
        flow.ecn.failure = Some(sift::conn::EcnFailure::Bleached);
        assert!(flow.summary().contains("failed (bleached)"));
    }

    #[test]
    fn the_summary_shows_what_iperf3_users_look_for() {
        let text = report().summary();
        for expected in [
            "4000000",
            "27.10 s",
            "1.18 Mb/s",
            "312 packets",
            "120.0 ms",
            "39.06 KiB",
            "busy 63%, window 0%, pacer 0%, credit 20%, application 17%",
        ] {
            assert!(text.contains(expected), "{expected} missing from\n{text}");
        }
    }

    #[test]
    fn a_sender_that_said_nothing_of_its_time_gets_no_row() {
        let mut flow = report();
        flow.send_times = Default::default();
        let text = flow.summary();
        assert!(
            !text
                .lines()
                .any(|line| line.trim_start().starts_with("sender")),
            "{text}"
        );
    }

    #[test]
    fn a_quic_v1_peer_is_said_to_give_no_corruption_notices() {
        let mut flow = report();
        assert!(flow.summary().contains("corruption notices off"));
        flow.version = "QUIC v1".into();
        let text = flow.summary();
        assert!(
            text.contains("QUIC v1 peer: no corruption notices"),
            "{text}"
        );
        assert!(!text.contains("packets notified"), "{text}");
    }
}
