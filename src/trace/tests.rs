use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::Value;
use sift_cc::LossVerdict;

use super::*;
use crate::sim::ground_truth::TrueCause;
use crate::sim::{FlowReport, Scenario, Simulation, Verdicts, LOSS_CLASSIFIED_EVENT};

/// Veno over a 2 Mb/s path that drops 2% and corrupts 1% of the data
/// packets, 12-packet buffers: losses of both kinds, corruption notices,
/// random and congestive verdicts.
const LOSSY_AND_CORRUPTING: &str = r#"
name = "traced"
seeds = [3]
time_limit_s = 120

[bottleneck]
forward = "delay 30ms rate 2mbit limit 12 loss 2% corrupt 1%"
reverse = "delay 30ms rate 2mbit limit 12"

[[flow]]
cc = "veno"
bytes = 1_000_000
corruption_notices = true
"#;

fn scratch_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sift-trace-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs seed `seed` of `scenario` traced into `dir`; the traces are
/// complete (the connections dropped) when this returns.
fn run_traced(scenario: &Scenario, seed: u64, dir: &Path) -> FlowReport {
    let mut simulation = Simulation::new(scenario, seed, Instant::now()).unwrap();
    simulation.trace_qlog(dir);
    simulation.run().unwrap();
    let report = simulation.report();
    drop(simulation);
    report.flows.into_iter().next().expect("one flow")
}

fn trace(dir: &Path, seed: u64, side: &str) -> Vec<TraceEvent> {
    read_trace(&dir.join(format!("seed-{seed}-flow-0-{side}.sqlog"))).unwrap()
}

fn count(events: &[TraceEvent], name: &str) -> u64 {
    events.iter().filter(|e| e.name == name).count() as u64
}

fn numbers(value: &Value) -> Vec<u64> {
    value
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default()
}

#[test]
fn simulated_traces_parse_back_and_count_what_stats_count() {
    let dir = scratch_dir("counts");
    let scenario = Scenario::from_toml_str(LOSSY_AND_CORRUPTING, "traced.toml").unwrap();
    let flow = run_traced(&scenario, 3, &dir);
    assert!(flow.completion_s.is_some(), "the transfer completes");
    let client = trace(&dir, 3, "client");
    let server = trace(&dir, 3, "server");
    for (events, stats) in [(&client, &flow.client_stats), (&server, &flow.server_stats)] {
        assert_eq!(count(events, "quic:packet_sent"), stats.packets_sent);
        assert_eq!(
            count(events, "quic:packet_received"),
            stats.packets_received
        );
        assert_eq!(count(events, "quic:packet_lost"), stats.packets_lost);
        assert_eq!(count(events, "sift:loss_verdict"), stats.congestion_events);
        assert_eq!(
            count(events, "sift:spurious_loss_undone"),
            stats.undone_congestion_events
        );
        assert_eq!(
            count(events, "sift:payload_corrupt_received"),
            stats.payload_corrupt_received
        );
        assert_eq!(
            count(events, "quic:parameters_set"),
            2,
            "ours and the peer's"
        );
        assert!(events
            .iter()
            .filter(|e| e.name.starts_with("quic:"))
            .all(|e| e.typed));
    }
    let stats = &flow.client_stats;
    assert!(stats.packets_lost > 0 && stats.corruption_notices_received > 0);
    // Every packet the receiver named corrupted shows in the sender's trace.
    let applied: u64 = client
        .iter()
        .filter(|e| e.name == "sift:corruption_applied")
        .map(|e| numbers(&e.data["packet_numbers"]).len() as u64)
        .sum();
    assert_eq!(applied, stats.corruption_notices_received);
    assert!(count(&server, "sift:corrupted_sent") > 0);
    assert!(count(&client, "sift:corrupted_received") > 0);
    // Veno's verdicts carry N and β, and agree with the rule N < β.
    let cc = &stats.cc.fields;
    let verdicts: Vec<&TraceEvent> = client
        .iter()
        .filter(|e| e.name == "sift:loss_verdict")
        .collect();
    let random = verdicts
        .iter()
        .filter(|e| e.data["verdict"] == "random")
        .count() as f64;
    // Undone verdicts move to Veno's spurious count.
    let undone_random = client
        .iter()
        .filter(|e| e.name == "sift:spurious_loss_undone" && e.data["verdict"] == "random")
        .count() as f64;
    assert_eq!(random - undone_random, cc["random_losses"]);
    for verdict in &verdicts {
        let values = &verdict.data["values"];
        let beta = values["beta_packets"].as_f64().unwrap();
        match values["backlog_packets"].as_f64() {
            Some(n) if verdict.data["persistent"] == false => {
                assert_eq!(verdict.data["verdict"] == "random", n < beta, "{verdict:?}")
            }
            _ => assert_eq!(verdict.data["verdict"], "congestive"),
        }
    }
    let metrics = count(&client, "quic:recovery_metrics_updated");
    assert!(metrics > 10, "{metrics} metrics updates");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn confusion_matrix_from_a_veno_classification_trace_equals_the_reported_one() {
    let dir = scratch_dir("matrix");
    let plan = crate::lab::Plan {
        quick: true,
        seeds: Some(1),
    };
    let scenario = (crate::lab::experiments::veno_classification::EXPERIMENT.scenarios)(&plan)
        .into_iter()
        .find(|s| s.name == "udp-1000kbps")
        .expect("the quick sweep has a background");
    let flow = run_traced(&scenario, 1, &dir);
    let client = trace(&dir, 1, "client");

    // The verdict each congestion event got, as recovery traced it.
    let mut traced_verdicts: BTreeMap<Vec<u64>, String> = BTreeMap::new();
    let mut matrix = Verdicts::default();
    let mut classified = 0;
    for event in &client {
        if event.name == "sift:loss_verdict" && event.data["space"] == "application_data" {
            traced_verdicts.insert(
                numbers(&event.data["packet_numbers"]),
                event.data["verdict"].as_str().unwrap().to_string(),
            );
        }
        if event.name != format!("sift:{LOSS_CLASSIFIED_EVENT}") {
            continue;
        }
        classified += 1;
        let packets = numbers(&event.data["packet_numbers"]);
        let verdict: LossVerdict = serde_json::from_value(event.data["verdict"].clone()).unwrap();
        assert_eq!(
            traced_verdicts.get(&packets).map(String::as_str),
            Some(event.data["verdict"].as_str().unwrap()),
            "the ground truth follows recovery's own verdict event"
        );
        let causes: Vec<Option<TrueCause>> =
            serde_json::from_value(event.data["true_causes"].clone()).unwrap();
        assert_eq!(causes.len(), packets.len());
        for truth in causes.into_iter().flatten() {
            if event.data["undone"] == true {
                matrix.withdraw(verdict, truth);
            } else {
                matrix.record(verdict, truth);
            }
        }
    }
    assert!(classified > 10, "{classified} classified losses");
    assert!(flow.verdicts.random_as_random > 0 && flow.verdicts.congestive_as_congestive > 0);
    assert_eq!(matrix, flow.verdicts);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn qlog_paths_name_the_connection_and_side() {
    let start = TraceStart {
        side: Side::Server,
        local_cid: ConnectionId::new(&[0xab, 0x01]).unwrap(),
        now: Instant::now(),
    };
    assert_eq!(
        qlog_path(Path::new("/q"), &start),
        Path::new("/q/ab01-server.sqlog")
    );
}

#[test]
fn a_trace_with_a_damaged_record_is_refused() {
    let dir = scratch_dir("damaged");
    let path = dir.join("t.sqlog");
    {
        let mut writer = QlogWriter::create(&path, Side::Client, Instant::now()).unwrap();
        let note = RecoveryNote::Corrupted {
            at: Instant::now(),
            space: SpaceId::Data,
            packet_numbers: vec![7],
        };
        writer.event(Instant::now(), &Event::Recovery(&note));
    }
    assert_eq!(read_trace(&path).unwrap().len(), 1);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(b"\x1e{\"time\": \"not a number\"}\n");
    std::fs::write(&path, bytes).unwrap();
    match read_trace(&path) {
        Err(TraceReadError::Unparsed {
            unparsed: 1,
            first_index: 2,
            first,
            ..
        }) => assert!(first.contains("not a number"), "{first}"),
        other => panic!("expected the damaged second record named, got {other:?}"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}
