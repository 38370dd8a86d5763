//! The sift-lab command line, run as a user would run it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const SIFT_LAB: &str = env!("CARGO_BIN_EXE_sift-lab");

/// CBR over a lossy link: needs no connection, so it runs today.
const CBR_SCENARIO: &str = r#"
name = "cli-cbr"
seeds = [1, 2]
time_limit_s = 10

[bottleneck.forward]
delay_ms = 20.0
rate_bps = 10_000_000
queue = { packets = 30 }
loss = 0.02

[[cbr]]
rate_bps = 12_000_000
packet_size = 1000
stop_ms = 2000
"#;

struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("sift-lab-cli-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn file(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, contents).unwrap();
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn sift_lab(args: &[&str], dir: &Path) -> Output {
    Command::new(SIFT_LAB)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("sift-lab runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn run_writes_results_under_results_name_and_prints_the_summary() {
    let scratch = Scratch::new("default-out");
    scratch.file("cbr.toml", CBR_SCENARIO);
    let output = sift_lab(&["run", "cbr.toml"], &scratch.0);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(stdout.contains("# cli-cbr"), "{stdout}");
    assert!(stdout.contains("| cbr | direction |"), "{stdout}");
    assert!(
        stdout.contains("## Seed 1:") && stdout.contains("## Seed 2:"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Results written to results/cli-cbr"),
        "{stdout}"
    );
    let results = scratch.0.join("results/cli-cbr");
    for name in ["results.json", "summary.md", "scenario.toml"] {
        assert!(results.join(name).is_file(), "{name} missing");
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(results.join("results.json")).unwrap())
            .unwrap();
    assert_eq!(json["experiment"], "cli-cbr");
    assert_eq!(json["runs"].as_array().unwrap().len(), 2);
    // 12 Mb/s into a 10 Mb/s link: the queue overflows.
    assert!(
        json["runs"][0]["links"]["forward"]["queue_drops"]
            .as_u64()
            .unwrap()
            > 0
    );
}

#[test]
fn seed_and_out_select_one_run_and_the_directory() {
    let scratch = Scratch::new("seed-out");
    scratch.file("cbr.toml", CBR_SCENARIO);
    let output = sift_lab(
        &["run", "cbr.toml", "--seed", "9", "--out", "here"],
        &scratch.0,
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(scratch.0.join("here/results.json")).unwrap(),
    )
    .unwrap();
    let runs = json["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["seed"], 9);
}

#[test]
fn the_same_seed_writes_byte_identical_results() {
    let scratch = Scratch::new("repeat");
    scratch.file("cbr.toml", CBR_SCENARIO);
    for out in ["a", "b"] {
        let output = sift_lab(&["run", "cbr.toml", "--out", out], &scratch.0);
        assert!(output.status.success(), "{}", text(&output.stderr));
    }
    let read = |out: &str| std::fs::read(scratch.0.join(out).join("results.json")).unwrap();
    assert_eq!(read("a"), read("b"));
}

#[test]
fn an_unknown_key_fails_with_one_line_naming_file_and_key() {
    let scratch = Scratch::new("unknown-key");
    scratch.file(
        "bad.toml",
        "name = \"x\"\n[[cbr]]\nrate_bps = 1\npacket_size = 10\nburst = 3\n",
    );
    let output = sift_lab(&["run", "bad.toml"], &scratch.0);
    assert!(!output.status.success());
    let stderr = text(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("sift-lab: error: bad.toml:5:1: unknown field `burst`"),
        "{stderr}"
    );
    assert!(
        !scratch.0.join("results").exists(),
        "nothing is written on error"
    );
}

#[test]
fn a_missing_file_fails_with_one_line() {
    let scratch = Scratch::new("missing");
    let output = sift_lab(&["run", "nowhere.toml"], &scratch.0);
    assert!(!output.status.success());
    let stderr = text(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("cannot read scenario file nowhere.toml"),
        "{stderr}"
    );
}

#[test]
fn a_bad_value_fails_naming_the_key_and_value() {
    let scratch = Scratch::new("bad-value");
    scratch.file(
        "bad.toml",
        "name = \"x\"\n[bottleneck.forward]\nloss = 2.0\n",
    );
    let output = sift_lab(&["run", "bad.toml"], &scratch.0);
    assert!(!output.status.success());
    let stderr = text(&output.stderr);
    // The link table is checked as it is read, so the error points at the
    // table's line and names the field and the value.
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("bad.toml:2:"), "{stderr}");
    assert!(
        stderr.contains("loss.probability") && stderr.contains("got 2"),
        "{stderr}"
    );
}

#[test]
fn help_shows_examples() {
    let scratch = Scratch::new("help");
    for args in [
        &["--help"][..],
        &["run", "--help"][..],
        &["hack", "--help"][..],
    ] {
        let output = sift_lab(args, &scratch.0);
        assert!(output.status.success());
        let stdout = text(&output.stdout);
        assert!(stdout.contains("Examples:"), "{stdout}");
        assert!(
            stdout.contains("sift-lab run examples/scenarios/lossy-10mbit.toml"),
            "{stdout}"
        );
    }
    let output = sift_lab(&["--help"], &scratch.0);
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("veno-throughput") && stdout.contains("vegas-factorial"),
        "every experiment is a command: {stdout}"
    );
}

#[test]
fn list_names_every_paper_experiment_with_its_title() {
    let scratch = Scratch::new("list");
    let output = sift_lab(&["list"], &scratch.0);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    for name in [
        "veno-throughput",
        "veno-classification",
        "veno-coexistence",
        "veno-enhanced",
        "westwood",
        "hack",
        "vegas-factorial",
        "leaky-pipes",
        "veno-ns3",
    ] {
        assert!(
            stdout.lines().any(|line| line.starts_with(name)),
            "{name} missing from:\n{stdout}"
        );
    }
    assert!(stdout.contains("Veno Fig. 5"), "{stdout}");
}

#[test]
fn a_quick_experiment_writes_its_summary_results_csvs_and_figure() {
    let scratch = Scratch::new("quick-experiment");
    let output = sift_lab(&["veno-throughput", "--quick", "--out", "vt"], &scratch.0);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("| loss | reno (kB/s) | veno (kB/s) |"),
        "{stdout}"
    );
    assert!(stdout.contains("**At 1% loss:**"), "{stdout}");
    assert!(
        stdout.contains("146.5"),
        "the paper's number is quoted: {stdout}"
    );
    assert!(stdout.contains("Results written to vt"), "{stdout}");
    let dir = scratch.0.join("vt");
    for name in [
        "summary.md",
        "results.json",
        "throughput_vs_loss.csv",
        "fig5_throughput_vs_loss_points.csv",
        "reno-loss-0.01/results.json",
    ] {
        assert!(dir.join(name).is_file(), "{name} missing");
    }
    let svg = std::fs::read_to_string(dir.join("fig5_throughput_vs_loss.svg")).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("veno (sift)"),
        "{svg:.200}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    assert_eq!(json["experiment"], "veno-throughput");
    // Quick: 2 controllers × 3 loss rates, one seed each.
    let runs = json["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 6);
    assert!(runs.iter().all(|run| run["params"]["scenario"].is_string()));
    assert!(runs[0]["flows"][0]["goodput_bps"].as_f64().unwrap() > 0.0);
}

#[test]
fn seeds_sets_the_runs_per_scenario() {
    let scratch = Scratch::new("seeds");
    let output = sift_lab(
        &[
            "veno-classification",
            "--quick",
            "--seeds",
            "2",
            "--out",
            "vc",
        ],
        &scratch.0,
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(scratch.0.join("vc/results.json")).unwrap())
            .unwrap();
    let seeds: Vec<u64> = json["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| run["seed"].as_u64().unwrap())
        .collect();
    // Two scenarios (no UDP, 1 Mb/s UDP) × seeds 1 and 2.
    assert_eq!(seeds, [1, 2, 1, 2]);
    let output = sift_lab(&["hack", "--seeds", "0"], &scratch.0);
    assert!(!output.status.success(), "zero seeds is refused");
}

#[test]
fn run_accepts_every_controller_and_mixes_them_in_one_scenario() {
    let scratch = Scratch::new("six-controllers");
    let mut scenario = String::from(
        "name = \"six\"\n[bottleneck.forward]\ndelay_ms = 20.0\nrate_bps = 10_000_000\nqueue = { packets = 50 }\nloss = 0.005\n",
    );
    let names = [
        "reno",
        "cubic",
        "vegas",
        "veno",
        "veno-enhanced",
        "westwood",
    ];
    for name in names {
        scenario.push_str(&format!("[[flow]]\ncc = \"{name}\"\nbytes = 200_000\n"));
    }
    scratch.file("six.toml", &scenario);
    let output = sift_lab(&["run", "six.toml"], &scratch.0);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(scratch.0.join("results/six/results.json")).unwrap(),
    )
    .unwrap();
    let flows = json["runs"][0]["flows"].as_array().unwrap();
    let ccs: Vec<&str> = flows.iter().map(|f| f["cc"].as_str().unwrap()).collect();
    assert_eq!(ccs, names);
    for flow in flows {
        assert_eq!(flow["bytes_received"], 200_000, "{}", flow["cc"]);
        assert_eq!(flow["mismatched_bytes"], 0, "{}", flow["cc"]);
    }
}

#[test]
fn a_closed_output_pipe_is_not_an_error() {
    use std::process::Stdio;
    let scratch = Scratch::new("pipe");
    scratch.file("cbr.toml", CBR_SCENARIO);
    let mut child = Command::new(SIFT_LAB)
        .args(["run", "cbr.toml"])
        .current_dir(&scratch.0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Close our end of stdout before sift-lab writes its summary.
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    let stderr = text(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(output.status.success(), "{stderr}");
}

#[test]
fn shards_of_an_experiment_merge_into_the_report_of_one_run() {
    let scratch = Scratch::new("shards");
    let whole = sift_lab(
        &["veno-throughput", "--quick", "--out", "whole"],
        &scratch.0,
    );
    assert!(whole.status.success(), "{}", text(&whole.stderr));
    for k in 1..=2 {
        let shard = format!("{k}/2");
        let out = format!("s{k}");
        let run = sift_lab(
            &[
                "veno-throughput",
                "--quick",
                "--shard",
                &shard,
                "--out",
                &out,
            ],
            &scratch.0,
        );
        assert!(run.status.success(), "{}", text(&run.stderr));
        let stdout = text(&run.stdout);
        assert!(
            stdout.contains(&format!("shard {shard}: 3 runs"))
                && stdout.contains("sift-lab merge veno-throughput DIR... --out DIR --quick"),
            "{stdout}"
        );
        assert!(!scratch.0.join(&out).join("summary.md").exists());
    }
    let merged = sift_lab(
        &[
            "merge",
            "veno-throughput",
            "s1",
            "s2",
            "--out",
            "merged",
            "--quick",
        ],
        &scratch.0,
    );
    assert!(merged.status.success(), "{}", text(&merged.stderr));
    assert!(text(&merged.stdout).contains("| loss | reno (kB/s) | veno (kB/s) |"));
    let read =
        |dir: &str, name: &str| std::fs::read_to_string(scratch.0.join(dir).join(name)).unwrap();
    for name in ["results.json", "summary.md", "fig5_throughput_vs_loss.svg"] {
        assert!(
            read("merged", name) == read("whole", name),
            "merged {name} differs"
        );
    }
    // One shard alone is refused, naming what is missing, in one line.
    let partial = sift_lab(
        &[
            "merge",
            "veno-throughput",
            "s1",
            "--out",
            "partial",
            "--quick",
        ],
        &scratch.0,
    );
    assert!(!partial.status.success());
    let stderr = text(&partial.stderr);
    assert!(
        stderr.contains("no shard directory has scenario"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}

#[test]
fn a_malformed_shard_is_one_line_naming_the_form() {
    let scratch = Scratch::new("bad-shard");
    let run = sift_lab(&["hack", "--quick", "--shard", "3/2"], &scratch.0);
    assert!(!run.status.success());
    assert!(text(&run.stderr).contains("K/N"), "{}", text(&run.stderr));
}

/// Veno through a 2 Mb/s bottleneck with 12-packet buffers and 2% random
/// loss: random losses, judged random and congestive.
const VENO_LOSSY_SCENARIO: &str = r#"
name = "cli-qlog"
seeds = [3]
time_limit_s = 120

[bottleneck]
forward = "delay 30ms rate 2mbit limit 12 loss 2%"
reverse = "delay 30ms rate 2mbit limit 12"

[[flow]]
cc = "veno"
bytes = 1_000_000
"#;

#[test]
fn run_qlog_traces_carry_ground_truth_whose_confusion_matrix_equals_the_reported_one() {
    use sift::sim::ground_truth::TrueCause;
    use sift::sim::{Verdicts, LOSS_CLASSIFIED_EVENT};
    use sift::trace::read_trace;
    use sift_cc::LossVerdict;

    let scratch = Scratch::new("qlog");
    scratch.file("veno.toml", VENO_LOSSY_SCENARIO);
    let output = sift_lab(&["run", "veno.toml", "--out", "out", "--qlog"], &scratch.0);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let trace = scratch.0.join("out/qlog/seed-3-flow-0-client.sqlog");
    assert!(scratch
        .0
        .join("out/qlog/seed-3-flow-0-server.sqlog")
        .is_file());
    let events = read_trace(&trace).unwrap_or_else(|e| panic!("{e}"));
    let classified_name = format!("sift:{LOSS_CLASSIFIED_EVENT}");

    // Every loss verdict of the data space is followed by its ground truth,
    // one true cause per packet.
    let verdicts: Vec<_> = events
        .iter()
        .filter(|e| e.name == "sift:loss_verdict" && e.data["space"] == "application_data")
        .collect();
    let classified: Vec<_> = events
        .iter()
        .filter(|e| e.name == classified_name && e.data["undone"] == false)
        .collect();
    assert!(verdicts.len() > 5, "{} verdicts", verdicts.len());
    assert_eq!(classified.len(), verdicts.len());
    for (verdict, truth) in verdicts.iter().zip(&classified) {
        assert_eq!(truth.data["packet_numbers"], verdict.data["packet_numbers"]);
        assert_eq!(truth.data["verdict"], verdict.data["verdict"]);
        let causes = truth.data["true_causes"].as_array().expect("true causes");
        assert_eq!(
            causes.len(),
            truth.data["packet_numbers"].as_array().unwrap().len()
        );
    }

    // The confusion matrix rebuilt from the trace alone is the one the
    // run reports (and veno-classification tabulates).
    let mut from_trace = Verdicts::default();
    for event in events.iter().filter(|e| e.name == classified_name) {
        let verdict: LossVerdict = serde_json::from_value(event.data["verdict"].clone()).unwrap();
        let causes: Vec<Option<TrueCause>> =
            serde_json::from_value(event.data["true_causes"].clone()).unwrap();
        for truth in causes.into_iter().flatten() {
            if event.data["undone"] == true {
                from_trace.withdraw(verdict, truth);
            } else {
                from_trace.record(verdict, truth);
            }
        }
    }
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(scratch.0.join("out/results.json")).unwrap())
            .unwrap();
    let reported: Verdicts =
        serde_json::from_value(results["runs"][0]["flows"][0]["verdicts"].clone()).unwrap();
    assert_eq!(from_trace, reported);
    assert!(reported.random_as_random > 0, "{reported:?}");

    // The same trace plots, and rewrites for qvis.
    let output = sift_lab(&["plot", trace.to_str().unwrap()], &scratch.0);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(trace.with_extension("svg").is_file());
    let output = sift_lab(&["qvis", trace.to_str().unwrap()], &scratch.0);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let qvis = std::fs::read_to_string(scratch.0.join("out/qlog/seed-3-flow-0-client.qvis.sqlog"))
        .unwrap();
    let records: Vec<serde_json::Value> = qvis
        .split('\u{1e}')
        .filter(|r| !r.trim().is_empty())
        .map(|r| serde_json::from_str(r).unwrap())
        .collect();
    assert_eq!(records[0]["qlog_version"], "0.3");
    assert_eq!(records[0]["qlog_format"], "JSON-SEQ");
    let named = |name: &str| records.iter().filter(|r| r["name"] == name).count();
    let counted = |name: &str| events.iter().filter(|e| e.name == name).count();
    assert_eq!(named("transport:packet_sent"), counted("quic:packet_sent"));
    assert_eq!(named("recovery:packet_lost"), counted("quic:packet_lost"));
    assert_eq!(
        named("recovery:metrics_updated"),
        counted("quic:recovery_metrics_updated")
    );
    assert!(records
        .iter()
        .filter(|r| r["name"] == "transport:packet_sent")
        .all(|r| r["data"]["raw"]["length"].as_u64() > Some(0)
            && r["data"]["header"]["packet_number"].is_u64()));
}
