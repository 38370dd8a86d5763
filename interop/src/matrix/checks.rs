//! A cell's verdict from what was seen: the files on disk, the wire as the
//! tap saw it, and what the client reported. The runner's checks, minus
//! what needs decrypted packets: key updates and the offered cipher suite
//! come from the client's own report.

use serde::Serialize;
use serde_json::Value;

use super::cases::{Case, ECN_TAIL};
use super::tap::{ecn_name, EcnSeen, Wire, QUIC_V1, QUIC_V2};

/// What the checks looked at, kept in results.json for every cell.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Seen {
    /// Handshakes (distinct server Initial source IDs).
    pub handshakes: usize,
    /// Versions of the server's Initials.
    pub server_versions: Vec<String>,
    /// Versions of the client's Initials.
    pub client_versions: Vec<String>,
    /// Retry packets.
    pub retries: usize,
    /// Version Negotiation packets.
    pub version_negotiations: usize,
    /// Bytes of the client's 0-RTT packets.
    pub zero_rtt_bytes: usize,
    /// Bytes of the server's Handshake packets, per handshake.
    pub server_handshake_bytes: Vec<usize>,
    /// Client addresses seen.
    pub client_addresses: usize,
    /// Per move of the client: whether it used a new connection ID.
    pub migrations: Vec<bool>,
    /// Key updates the client reports having initiated.
    pub key_updates: Option<u64>,
    /// The version the client reports.
    pub client_version: Option<String>,
    /// Datagrams the tap relayed, both ways.
    pub datagrams: usize,
    /// The client's datagrams per ECN codepoint, as relayed.
    pub ecn_from_client: EcnSeen,
    /// The server's datagrams per ECN codepoint, as relayed.
    pub ecn_from_server: EcnSeen,
    /// The codepoints of the client's last datagrams, oldest first.
    pub ecn_last_from_client: Vec<String>,
    /// The codepoints of the server's last datagrams, oldest first.
    pub ecn_last_from_server: Vec<String>,
}

/// A version number as the runner prints it (`0x00000001`).
pub fn version_name(version: u32) -> String {
    format!("0x{version:08x}")
}

/// Key updates a client report names: a number, or an object whose
/// `initiated` field is one (or, lacking that, whose numbers add up).
pub fn key_updates(report: &Value) -> Option<u64> {
    match report.get("key_updates")? {
        Value::Number(n) => n.as_u64(),
        Value::Object(fields) => fields
            .get("initiated")
            .and_then(Value::as_u64)
            .or_else(|| Some(fields.values().filter_map(Value::as_u64).sum())),
        _ => None,
    }
}

/// The last line of `stdout` that is a JSON object: a client's report.
pub fn client_report(stdout: &str) -> Option<Value> {
    stdout
        .lines()
        .rev()
        .filter_map(|line| serde_json::from_str::<Value>(line.trim()).ok())
        .find(Value::is_object)
}

/// What the wire and the reports show, gathered.
pub fn seen(wire: &Wire, reports: &[Value]) -> Seen {
    let key_updates = reports.iter().filter_map(key_updates).reduce(|a, b| a + b);
    Seen {
        handshakes: wire.handshakes(),
        server_versions: wire
            .server_versions()
            .into_iter()
            .map(version_name)
            .collect(),
        client_versions: wire
            .client_versions()
            .into_iter()
            .map(version_name)
            .collect(),
        retries: wire.retries(),
        version_negotiations: wire.version_negotiations(),
        zero_rtt_bytes: wire.zero_rtt_bytes(),
        server_handshake_bytes: wire.server_handshake_bytes(),
        client_addresses: wire.client_addresses().len(),
        migrations: wire.migrations(),
        key_updates,
        client_version: reports
            .last()
            .and_then(|r| r.get("version"))
            .and_then(Value::as_str)
            .map(str::to_string),
        datagrams: wire.datagrams.len(),
        ecn_from_client: wire.ecn_counts(true),
        ecn_from_server: wire.ecn_counts(false),
        ecn_last_from_client: last_ecn(wire, true),
        ecn_last_from_server: last_ecn(wire, false),
    }
}

fn last_ecn(wire: &Wire, from_client: bool) -> Vec<String> {
    wire.last_ecn(from_client, ECN_TAIL)
        .into_iter()
        .map(|ecn| ecn_name(ecn).to_string())
        .collect()
}

/// The ECN state sift-client's `--json` report gives (`capable`, or
/// `failed:REASON`).
pub fn client_ecn_state(report: &Value) -> Option<String> {
    let ecn = report.get("ecn")?;
    let state = ecn.get("state")?.as_str()?;
    Some(match ecn.get("failure").and_then(Value::as_str) {
        Some(failure) => format!("{state}:{failure}"),
        None => state.to_string(),
    })
}

/// The ECN state of sift-server's last transfer line (its `ecn=` field).
pub fn server_ecn_state(stdout: &str) -> Option<String> {
    stdout.lines().rev().find_map(|line| {
        line.split_whitespace()
            .find_map(|field| field.strip_prefix("ecn="))
            .map(str::to_string)
    })
}

/// The ecn case's verdict beyond [`check`]: `sift` names each side that
/// is sift (`client`/`server`) with the ECN state it reports (`None`: it
/// reported none); `peer_limit` is why the other side takes no part in
/// ECN, if it does not. With ECN on both sides, both marked, both still
/// marked at the end, and sift validated. Against a peer without ECN,
/// sift must have failed safe: not validated, and sending Not-ECT at the
/// end.
pub fn check_ecn(
    wire: &Wire,
    sift: &[(&str, Option<String>)],
    peer_limit: Option<&str>,
) -> Result<(), String> {
    let sides = [("client", true), ("server", false)];
    match peer_limit {
        None => {
            for (side, from_client) in sides {
                let counts = wire.ecn_counts(from_client);
                if counts.marked() == 0 {
                    return Err(format!(
                        "the tap saw no ECN-marked datagram from the {side} ({counts:?})"
                    ));
                }
                let last = wire.last_ecn(from_client, ECN_TAIL);
                if last.is_empty() || last.contains(&sift::wire::Ecn::NotEct) {
                    let names: Vec<&str> = last.into_iter().map(ecn_name).collect();
                    return Err(format!(
                        "the {side} stopped marking: its last datagrams were {names:?} ({counts:?}); a sender stops when the peer's ACK-ECN counts fail its validation"
                    ));
                }
            }
            for (side, state) in sift {
                match state.as_deref() {
                    Some("capable") => {}
                    other => {
                        return Err(format!(
                            "sift's {side} reports ECN {}, not capable",
                            other.unwrap_or("nothing")
                        ))
                    }
                }
            }
        }
        Some(limit) => {
            for (side, state) in sift {
                let from_client = *side == "client";
                match state.as_deref() {
                    None => return Err(format!("sift's {side} reports no ECN state")),
                    Some("capable") => {
                        return Err(format!(
                            "sift's {side} reports ECN capable against a peer without ECN ({limit})"
                        ))
                    }
                    Some(_) => {}
                }
                let last = wire.last_ecn(from_client, ECN_TAIL);
                if last.iter().any(|ecn| *ecn != sift::wire::Ecn::NotEct) {
                    let names: Vec<&str> = last.into_iter().map(ecn_name).collect();
                    return Err(format!(
                        "sift's {side} still marks at the end against a peer without ECN: its last datagrams were {names:?}"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The verdict of a cell whose client ended well and whose files were
/// byte-exact: `Err` names the first check that failed.
pub fn check(case: Case, wire: &Wire, reports: &[Value]) -> Result<(), String> {
    let seen = seen(wire, reports);
    if seen.handshakes != case.handshakes() {
        return Err(format!(
            "expected {} handshake(s), the server's Initials show {}",
            case.handshakes(),
            seen.handshakes
        ));
    }
    if case == Case::SiftUpgrade {
        if wire.first_client_version() != Some(QUIC_V1) {
            return Err(format!(
                "the client's first Initial should be QUIC v1; its Initials were {:?}",
                seen.client_versions
            ));
        }
        if !seen
            .client_version
            .as_deref()
            .is_some_and(|v| v.contains("sift/1"))
        {
            return Err(format!(
                "the client reports version {:?}, not sift/1",
                seen.client_version
            ));
        }
    } else if case == Case::V2 {
        // The runner's: the client's first Initial in v1 and the server
        // answering in v2 (compatible version negotiation). A client that
        // cannot follow an upgrade starts in v2 (`stacks`): its Initials
        // show which (`client_versions`).
        if !seen.server_versions.contains(&version_name(QUIC_V2)) {
            return Err(format!(
                "the server's Initials should be QUIC v2, were {:?}",
                seen.server_versions
            ));
        }
        if !seen
            .client_version
            .as_deref()
            .is_none_or(|v| v.contains('2'))
        {
            return Err(format!(
                "the client reports version {:?}, not QUIC v2",
                seen.client_version
            ));
        }
    } else if seen.server_versions != [version_name(QUIC_V1)] {
        return Err(format!(
            "the server's Initials should be QUIC v1 only, were {:?}",
            seen.server_versions
        ));
    }
    match case {
        Case::Retry => {
            if seen.retries == 0 {
                return Err("no Retry packet seen".into());
            }
            if !wire.token_used_after_retry() {
                return Err("no client Initial carried the Retry's token".into());
            }
        }
        Case::Resumption => match seen.server_handshake_bytes[..] {
            [first, second] if second * 2 < first => {}
            ref flights => {
                return Err(format!(
                    "the second handshake is not a resumed one: server Handshake bytes per handshake {flights:?} (a resumed flight carries no certificate)"
                ))
            }
        },
        Case::ZeroRtt if seen.zero_rtt_bytes == 0 => {
            return Err("the client sent no 0-RTT packet".into());
        }
        Case::ChaCha20 => {
            let cipher = reports
                .last()
                .and_then(|r| r.get("cipher"))
                .and_then(Value::as_str);
            if let Some(cipher) = cipher {
                if !cipher.to_ascii_uppercase().contains("CHACHA20") {
                    return Err(format!("the client reports cipher {cipher}"));
                }
            }
        }
        Case::KeyUpdate if seen.key_updates.unwrap_or(0) == 0 => {
            return Err("the client reports no key update it initiated".into());
        }
        Case::ConnectionMigration => {
            // The preferred path does not pass the tap (the server binds
            // the address it offers): the client's report says where it
            // ended.
            let moved = reports
                .last()
                .and_then(|r| r.get("on_preferred_address"))
                .and_then(Value::as_bool);
            if moved != Some(true) {
                return Err(format!(
                    "the client does not report ending on the server's preferred address (on_preferred_address: {moved:?})"
                ));
            }
        }
        Case::ActiveMigration => {
            if seen.migrations.is_empty() {
                return Err(
                    "the client never moved to a new address with 1-RTT packets".into()
                );
            }
            if seen.migrations.contains(&false) {
                return Err(
                    "the client's first packet from its new address reused the old connection ID"
                        .into(),
                );
            }
        }
        Case::AmplificationLimit => {
            wire.amplification()?;
        }
        Case::LongRtt => {
            let initials = wire.client_initials_before_server();
            if initials < 2 {
                return Err(format!(
                    "the client sent its first flight {initials} time(s) before the server's answer could arrive; a 1.5 s round trip needs it again"
                ));
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::matrix::tap::{Datagram, LongType, Packet};

    fn datagram(from_client: bool, packets: Vec<Packet>) -> Datagram {
        Datagram {
            from_client,
            client: "127.0.0.1:1".parse().unwrap(),
            size: 1200,
            dropped: false,
            packets,
            at: std::time::Instant::now(),
            ecn: sift::wire::Ecn::NotEct,
        }
    }

    fn long(kind: LongType, scid: u8, size: usize) -> Packet {
        Packet::Long {
            kind,
            version: QUIC_V1,
            dcid: vec![],
            scid: vec![scid],
            token_len: 0,
            size,
        }
    }

    fn one_handshake() -> Wire {
        Wire {
            datagrams: vec![
                datagram(true, vec![long(LongType::Initial, 7, 1200)]),
                datagram(
                    false,
                    vec![
                        long(LongType::Initial, 1, 200),
                        long(LongType::Handshake, 1, 900),
                    ],
                ),
            ],
        }
    }

    #[test]
    fn a_long_rtt_handshake_needs_the_client_initial_twice_before_any_answer() {
        let once = one_handshake();
        assert!(check(Case::LongRtt, &once, &[])
            .unwrap_err()
            .contains("first flight"));
        let mut twice = one_handshake();
        twice
            .datagrams
            .insert(1, datagram(true, vec![long(LongType::Initial, 7, 1200)]));
        assert_eq!(check(Case::LongRtt, &twice, &[]), Ok(()));
        // A second Initial after the server's answer is not a resend of
        // the first flight.
        let mut late = one_handshake();
        late.datagrams
            .push(datagram(true, vec![long(LongType::Initial, 7, 1200)]));
        assert!(check(Case::LongRtt, &late, &[]).is_err());
    }

    #[test]
    fn a_plain_handshake_passes_and_a_second_one_fails_the_handshake_case() {
        let mut wire = one_handshake();
        assert_eq!(check(Case::Handshake, &wire, &[]), Ok(()));
        wire.datagrams
            .push(datagram(false, vec![long(LongType::Initial, 2, 200)]));
        assert!(check(Case::Handshake, &wire, &[])
            .unwrap_err()
            .contains("handshake"));
    }

    #[test]
    fn retry_needs_a_retry_and_a_token_after_it() {
        let wire = one_handshake();
        assert!(check(Case::Retry, &wire, &[]).is_err());
    }

    #[test]
    fn resumption_needs_a_small_second_handshake_flight() {
        let mut wire = one_handshake();
        wire.datagrams.push(datagram(
            false,
            vec![
                long(LongType::Initial, 2, 200),
                long(LongType::Handshake, 2, 100),
            ],
        ));
        assert_eq!(check(Case::Resumption, &wire, &[]), Ok(()));
        let mut full = one_handshake();
        full.datagrams.push(datagram(
            false,
            vec![
                long(LongType::Initial, 2, 200),
                long(LongType::Handshake, 2, 880),
            ],
        ));
        assert!(check(Case::Resumption, &full, &[]).is_err());
    }

    #[test]
    fn key_updates_come_from_the_clients_report_in_either_shape() {
        let wire = one_handshake();
        let numbered = serde_json::json!({"key_updates": 3});
        let split = serde_json::json!({"key_updates": {"initiated": 2, "answered": 0}});
        let none = serde_json::json!({"key_updates": 0});
        assert_eq!(check(Case::KeyUpdate, &wire, &[numbered]), Ok(()));
        assert_eq!(check(Case::KeyUpdate, &wire, &[split]), Ok(()));
        assert!(check(Case::KeyUpdate, &wire, &[none]).is_err());
    }

    #[test]
    fn chacha20_fails_when_the_client_reports_another_cipher() {
        let wire = one_handshake();
        let aes = serde_json::json!({"cipher": "TLS13_AES_128_GCM_SHA256"});
        let chacha = serde_json::json!({"cipher": "TLS_CHACHA20_POLY1305_SHA256"});
        assert!(check(Case::ChaCha20, &wire, &[aes]).is_err());
        assert_eq!(check(Case::ChaCha20, &wire, &[chacha]), Ok(()));
    }

    #[test]
    fn the_upgrade_case_wants_v1_initials_and_sift_1_reported() {
        let wire = one_handshake();
        let upgraded = serde_json::json!({"version": "sift/1"});
        let stayed = serde_json::json!({"version": "QUIC v1"});
        assert_eq!(check(Case::SiftUpgrade, &wire, &[upgraded]), Ok(()));
        assert!(check(Case::SiftUpgrade, &wire, &[stayed]).is_err());
    }

    fn ecn_wire(client: &[sift::wire::Ecn], server: &[sift::wire::Ecn]) -> Wire {
        let short = || {
            vec![Packet::Short {
                dcid: vec![],
                size: 1200,
            }]
        };
        let mut wire = one_handshake();
        for (from_client, codepoints) in [(true, client), (false, server)] {
            for &ecn in codepoints {
                wire.datagrams.push(Datagram {
                    ecn,
                    ..datagram(from_client, short())
                });
            }
        }
        wire
    }

    #[test]
    fn the_ecn_case_wants_marks_both_ways_to_the_end_and_sift_validated() {
        use sift::wire::Ecn::{Ect0, NotEct};
        let marked = ecn_wire(&[Ect0; 6], &[Ect0; 6]);
        let capable = [("server", Some("capable".to_string()))];
        assert_eq!(check_ecn(&marked, &capable, None), Ok(()));
        let unvalidated = [("client", Some("failed:bleached".to_string()))];
        assert!(check_ecn(&marked, &unvalidated, None)
            .unwrap_err()
            .contains("not capable"));
        // The server stopped marking near the end: its validation failed.
        let stopped = ecn_wire(&[Ect0; 6], &[Ect0, Ect0, Ect0, NotEct, NotEct]);
        assert!(check_ecn(&stopped, &capable, None)
            .unwrap_err()
            .contains("server stopped marking"));
        let unmarked = ecn_wire(&[NotEct; 6], &[Ect0; 6]);
        assert!(check_ecn(&unmarked, &capable, None)
            .unwrap_err()
            .contains("no ECN-marked datagram from the client"));
    }

    #[test]
    fn against_a_peer_without_ecn_sift_must_stop_marking_and_not_validate() {
        use sift::wire::Ecn::{Ect0, NotEct};
        let limit = Some("quiche has no ECN");
        let failed = [("server", Some("failed:missing-counts".to_string()))];
        let safe = ecn_wire(
            &[NotEct; 6],
            &[Ect0, Ect0, NotEct, NotEct, NotEct, NotEct, NotEct],
        );
        assert_eq!(check_ecn(&safe, &failed, limit), Ok(()));
        let still_marking = ecn_wire(&[NotEct; 6], &[Ect0; 6]);
        assert!(check_ecn(&still_marking, &failed, limit)
            .unwrap_err()
            .contains("still marks"));
        let capable = [("server", Some("capable".to_string()))];
        assert!(check_ecn(&safe, &capable, limit).is_err());
        assert_eq!(
            server_ecn_state("client=x op=GET result=ok sender=busy:1 ecn=failed:missing-counts\n"),
            Some("failed:missing-counts".to_string())
        );
        let report = serde_json::json!({"ecn": {"state": "failed", "failure": "bleached"}});
        assert_eq!(
            client_ecn_state(&report),
            Some("failed:bleached".to_string())
        );
    }

    #[test]
    fn the_client_report_is_the_last_json_object_printed() {
        let out = "progress\n{\"version\":\"QUIC v1\"}\n";
        assert_eq!(
            client_report(out).unwrap()["version"],
            Value::String("QUIC v1".into())
        );
        assert_eq!(client_report("no json"), None);
    }
}
