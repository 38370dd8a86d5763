use super::*;

/// CBR only, with loss, so the seed matters; no connection needed.
const LOSSY_CBR: &str = r#"
name = "lossy-cbr"
seeds = [1, 2]
time_limit_s = 5

[bottleneck.forward]
delay_ms = 10.0
rate_bps = 10_000_000
queue = { packets = 20 }
loss = 0.05

[[cbr]]
rate_bps = 2_000_000
packet_size = 500
stop_ms = 1000
"#;

fn scratch_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sift-lab-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn lossy_cbr() -> Scenario {
    Scenario::from_toml_str(LOSSY_CBR, "lossy-cbr.toml").unwrap()
}

#[test]
fn run_scenario_writes_every_file_and_one_run_per_seed() {
    let dir = scratch_dir("files");
    let report = run_scenario(&lossy_cbr(), &dir).unwrap();
    assert_eq!(report.experiment, "lossy-cbr");
    assert_eq!(report.sift_version, SIFT_VERSION);
    let seeds: Vec<u64> = report.runs.iter().map(|r| r.seed).collect();
    assert_eq!(seeds, [1, 2]);
    for name in ["results.json", "summary.md", "scenario.toml"] {
        assert!(dir.join(name).is_file(), "{name} missing");
    }
    // The written scenario runs again as is.
    let again = Scenario::load(&dir.join("scenario.toml")).unwrap();
    assert_eq!(again, lossy_cbr());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn same_seed_writes_byte_identical_results_and_seeds_differ() {
    let first = scratch_dir("repeat-a");
    let second = scratch_dir("repeat-b");
    let report = run_scenario(&lossy_cbr(), &first).unwrap();
    run_scenario(&lossy_cbr(), &second).unwrap();
    let read = |dir: &Path, name: &str| std::fs::read(dir.join(name)).unwrap();
    assert_eq!(read(&first, "results.json"), read(&second, "results.json"));
    assert_eq!(read(&first, "summary.md"), read(&second, "summary.md"));
    // 5% loss over ~500 datagrams: the two seeds lose different ones.
    let losses: Vec<u64> = report
        .runs
        .iter()
        .map(|run| run.cbr[0].counters.random_losses)
        .collect();
    assert_ne!(
        report.runs[0].cbr[0].counters, report.runs[1].cbr[0].counters,
        "{losses:?}"
    );
    std::fs::remove_dir_all(&first).unwrap();
    std::fs::remove_dir_all(&second).unwrap();
}

fn two_rates(_plan: &Plan) -> Vec<Scenario> {
    [1_000_000u64, 4_000_000]
        .iter()
        .map(|rate| {
            let mut scenario = lossy_cbr();
            scenario.name = format!("cbr-{}mbit", rate / 1_000_000);
            scenario.seeds = vec![1];
            scenario.cbr[0].rate_bps = *rate;
            scenario
                .params
                .insert("rate_bps".into(), serde_json::json!(rate));
            scenario
        })
        .collect()
}

fn compare_delivered(reports: &[Report]) -> Comparison {
    let mut table = Table::new("delivered", &["scenario", "delivered"]);
    for r in reports {
        table.push(vec![
            r.experiment.clone(),
            r.runs[0].cbr[0].counters.delivered_packets.to_string(),
        ]);
    }
    let markdown = reports
        .iter()
        .map(|r| {
            format!(
                "{}: {} delivered",
                r.experiment, r.runs[0].cbr[0].counters.delivered_packets
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    Comparison {
        markdown,
        tables: vec![table],
        figures: vec![Figure {
            name: "delivered_vs_rate".into(),
            title: "delivered".into(),
            x_label: "rate".into(),
            y_label: "packets".into(),
            log_x: false,
            series: vec![Series {
                label: "cbr".into(),
                points: vec![(1.0, 2.0)],
            }],
        }],
    }
}

#[test]
fn an_experiment_runs_each_scenario_into_its_own_directory_and_compares() {
    let dir = scratch_dir("experiment");
    let experiment = Experiment {
        name: "cbr-sweep",
        title: "delivered datagrams against offered rate",
        scenarios: two_rates,
        compare: compare_delivered,
    };
    let outcome = run_experiment(&experiment, &Plan::default(), &dir).unwrap();
    assert_eq!(outcome.reports.len(), 2);
    assert!(dir.join("cbr-1mbit/results.json").is_file());
    assert!(dir.join("cbr-4mbit/results.json").is_file());
    assert!(dir.join("delivered.csv").is_file());
    assert!(dir.join("delivered_vs_rate_points.csv").is_file());
    // One combined report: a run per scenario × seed, labelled by scenario.
    let combined: Report =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    assert_eq!(combined.experiment, "cbr-sweep");
    let labels: Vec<&str> = combined
        .runs
        .iter()
        .map(|run| run.params["scenario"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["cbr-1mbit", "cbr-4mbit"]);
    let summary = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert_eq!(summary, outcome.summary);
    assert!(summary.starts_with("# cbr-sweep: delivered datagrams against offered rate"));
    assert!(summary.contains("cbr-4mbit: "), "{summary}");
    assert!(
        summary.contains("[cbr-1mbit](cbr-1mbit/summary.md)"),
        "{summary}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_experiment_with_two_scenarios_of_one_name_is_refused() {
    let experiment = Experiment {
        name: "clash",
        title: "two runs, one directory",
        scenarios: |_| vec![lossy_cbr(), lossy_cbr()],
        compare: |_| Comparison::default(),
    };
    let error = run_experiment(&experiment, &Plan::default(), &scratch_dir("clash")).unwrap_err();
    assert!(
        matches!(error, LabError::DuplicateScenario { .. }),
        "{error}"
    );
}

#[test]
fn a_plan_picks_its_seeds_and_sweep() {
    assert_eq!(Plan::default().seeds(3), [1, 2, 3]);
    let plan = Plan {
        quick: true,
        seeds: Some(2),
    };
    assert_eq!(plan.seeds(5), [1, 2]);
    assert_eq!(plan.pick("full", "quick"), "quick");
    assert_eq!(
        Plan {
            quick: false,
            seeds: Some(0)
        }
        .seeds(4),
        [1],
        "at least one seed"
    );
}

#[test]
fn shards_merge_into_the_files_of_a_run_in_one_piece() {
    let experiment = experiments::find("hack").unwrap();
    let plan = Plan {
        quick: true,
        seeds: Some(2),
    };
    let whole = scratch_dir("shard-whole");
    run_experiment(experiment, &plan, &whole).unwrap();
    let shard_dirs: Vec<PathBuf> = (1..=3)
        .map(|k| {
            let dir = scratch_dir(&format!("shard-{k}"));
            run_experiment_shard(experiment, &plan, Shard::new(k, 3).unwrap(), &dir).unwrap();
            dir
        })
        .collect();
    let merged = scratch_dir("shard-merged");
    merge_experiment(experiment, &plan, &shard_dirs, &merged).unwrap();
    let read = |dir: &Path, name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
    for name in ["results.json", "summary.md"] {
        // Not assert_eq!: a mismatch would print megabytes.
        assert!(
            read(&merged, name) == read(&whole, name),
            "merged {name} differs"
        );
    }
    // Without the last shard, merge names what is missing.
    let error = merge_experiment(
        experiment,
        &plan,
        &shard_dirs[..2],
        &scratch_dir("shard-partial"),
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("no shard directory has scenario"), "{error}");
    for dir in shard_dirs.iter().chain([&whole, &merged]) {
        let _ = std::fs::remove_dir_all(dir);
    }
    let _ = std::fs::remove_dir_all(scratch_dir("shard-partial"));
}
