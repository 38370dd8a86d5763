use super::*;

use crate::sim::ground_truth::FlowPacketCounters;

fn flow(id: usize, completion_s: Option<f64>) -> FlowReport {
    FlowReport {
        id,
        cc: "reno".into(),
        corruption_notices: true,
        bytes: 4_000_000,
        streams: 4,
        start_s: 0.0,
        first_byte_s: None,
        completion_s,
        goodput_bps: completion_s.map(|c| 4_000_000.0 * 8.0 / c),
        retransmitted_packets: 312,
        ptos: 2,
        corruption_notices_received: 5,
        verdicts: Verdicts::default(),
        bytes_received: if completion_s.is_some() {
            4_000_000
        } else {
            1_234
        },
        mismatched_bytes: 0,
        packets: FlowPacketCounters::default(),
        error: None,
        client_stats: Stats::default(),
        server_stats: Stats::default(),
        timeseries: vec![
            Sample {
                t_s: 0.0,
                cwnd: 12_000,
                ssthresh: None,
                srtt_ms: 0.0,
                min_rtt_ms: 0.0,
                bytes_sent: 0,
                bytes_delivered: 0,
                packets_lost: 0,
                retransmitted_packets: 0,
                cc: BTreeMap::new(),
            },
            Sample {
                t_s: 0.1,
                cwnd: 24_000,
                ssthresh: Some(20_000),
                srtt_ms: 51.5,
                min_rtt_ms: 50.0,
                bytes_sent: 30_000,
                bytes_delivered: 25_000,
                packets_lost: 1,
                retransmitted_packets: 1,
                cc: BTreeMap::from([("backlog_packets".to_string(), 2.5)]),
            },
        ],
    }
}

fn report(flows: Vec<FlowReport>) -> Report {
    Report {
        experiment: "veno-throughput".into(),
        sift_version: "0.1.0".into(),
        runs: vec![RunReport {
            seed: 1,
            params: BTreeMap::from([("loss".to_string(), serde_json::json!(0.01))]),
            flows,
            links: LinkReport::default(),
            cbr: Vec::new(),
            stop_reason: Some(StopReason::AllFlowsCompleted),
            end_s: 27.1,
            events: 1000,
        }],
    }
}

fn keys(value: &serde_json::Value) -> Vec<&str> {
    value
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect()
}

#[test]
fn results_json_has_the_documented_field_names() {
    let json: serde_json::Value =
        serde_json::from_str(&report(vec![flow(0, Some(27.1))]).to_json().unwrap()).unwrap();
    // DESIGN §11: these names are a contract; fields may be added, never renamed.
    for key in ["experiment", "sift_version", "runs"] {
        assert!(json.get(key).is_some(), "missing {key}");
    }
    let run = &json["runs"][0];
    for key in ["seed", "params", "flows", "links"] {
        assert!(run.get(key).is_some(), "missing runs[].{key}");
    }
    let flow = &run["flows"][0];
    for key in [
        "id",
        "cc",
        "corruption_notices",
        "bytes",
        "completion_s",
        "goodput_bps",
        "retransmitted_packets",
        "ptos",
        "corruption_notices_received",
        "verdicts",
    ] {
        assert!(flow.get(key).is_some(), "missing flows[].{key}");
    }
    // Sorted: serde_json::Value keeps insertion order when a dependency
    // (the qlog crate) turns on its `preserve_order`.
    let mut verdict_keys = keys(&flow["verdicts"]);
    verdict_keys.sort();
    assert_eq!(
        verdict_keys,
        [
            "congestive_as_congestive",
            "congestive_as_random",
            "congestive_as_spurious",
            "not_lost_as_congestive",
            "not_lost_as_random",
            "not_lost_as_spurious",
            "random_as_congestive",
            "random_as_random",
            "random_as_spurious",
        ]
    );
    assert_eq!(flow["completion_s"], serde_json::json!(27.1));
    assert_eq!(flow["cc"], serde_json::json!("reno"));
    assert_eq!(run["params"]["loss"], serde_json::json!(0.01));
    for key in ["forward", "reverse"] {
        let counters = &run["links"][key];
        for field in ["offered", "delivered", "queue_drops", "random_losses"] {
            assert!(counters.get(field).is_some(), "missing links.{key}.{field}");
        }
    }
}

#[test]
fn a_withdrawn_verdict_moves_to_the_spurious_column_of_its_row() {
    use crate::sim::ground_truth::TrueCause;
    use sift_cc::LossVerdict;
    let mut verdicts = Verdicts::default();
    verdicts.record(LossVerdict::Random, TrueCause::NotLost);
    verdicts.record(LossVerdict::Congestive, TrueCause::NotLost);
    verdicts.withdraw(LossVerdict::Random, TrueCause::NotLost);
    assert_eq!(
        (
            verdicts.not_lost_as_random,
            verdicts.not_lost_as_congestive,
            verdicts.not_lost_as_spurious
        ),
        (0, 1, 1)
    );
    // Accuracy counts only packets really lost.
    assert_eq!(verdicts.accuracy(), None);
}

#[test]
fn an_unfinished_flow_has_null_completion_and_goodput() {
    let json: serde_json::Value =
        serde_json::from_str(&report(vec![flow(0, None)]).to_json().unwrap()).unwrap();
    let flow = &json["runs"][0]["flows"][0];
    assert_eq!(flow["completion_s"], serde_json::Value::Null);
    assert_eq!(flow["goodput_bps"], serde_json::Value::Null);
}

#[test]
fn report_reads_back_from_its_json() {
    let original = report(vec![flow(0, Some(2.0)), flow(1, None)]);
    let text = original.to_json().unwrap();
    let read: Report = serde_json::from_str(&text).unwrap();
    assert_eq!(read.to_json().unwrap(), text);
}

#[test]
fn summary_tabulates_flows_and_never_invents_numbers() {
    let summary = report(vec![flow(0, Some(2.0)), flow(1, None)]).summary_markdown();
    // 4 000 000 bytes · 8 / 2 s = 16 Mb/s.
    assert!(
        summary.contains("| 0 | reno | on | 4000000 | 2.000 | 16.000 | 312 | 2 | 5 |"),
        "{summary}"
    );
    assert!(
        summary.contains("| 1 | reno | on | 4000000 | did not complete | — |"),
        "{summary}"
    );
    assert!(
        summary.contains("Flow 1 did not complete: the server read 1234 of 4000000 bytes"),
        "{summary}"
    );
    assert!(summary.contains("| direction | offered | delivered | queue drops | random losses |"));
    assert!(summary.contains("- `loss`: `0.01`"), "{summary}");
}

#[test]
fn timeseries_csv_has_fixed_columns_then_one_per_controller_metric() {
    let csv = timeseries_csv(&flow(0, Some(1.0)));
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines,
        [
            "t_s,cwnd,ssthresh,srtt_ms,min_rtt_ms,bytes_sent,bytes_delivered,packets_lost,retransmitted_packets,cc.backlog_packets",
            // Unset ssthresh and a metric the sample lacks are empty cells.
            "0,12000,,0,0,0,0,0,0,",
            "0.1,24000,20000,51.5,50,30000,25000,1,1,2.5",
        ]
    );
}

#[test]
fn write_puts_json_summary_and_csvs_in_the_directory() {
    let dir = std::env::temp_dir().join(format!("sift-report-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let report = report(vec![flow(0, Some(2.0)), flow(1, None)]);
    let written = report.write(&dir).unwrap();
    let names: Vec<String> = written
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "results.json",
            "summary.md",
            "timeseries_flow0.csv",
            "timeseries_flow1.csv"
        ]
    );
    let json = std::fs::read_to_string(dir.join("results.json")).unwrap();
    assert_eq!(json, report.to_json().unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn several_runs_name_their_csvs_by_seed() {
    let mut report = report(vec![flow(0, Some(2.0))]);
    let mut second = report.runs[0].clone();
    second.seed = 9;
    report.runs.push(second);
    let run = &report.runs[1];
    assert_eq!(
        report.timeseries_file_name(run, &run.flows[0]),
        "timeseries_seed9_flow0.csv"
    );
}
