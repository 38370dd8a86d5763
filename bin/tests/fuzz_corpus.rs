//! Replays the `transfer_request` fuzz corpus on stable Rust: every file
//! under `fuzz/corpus/transfer_request/` (seeds and kept finds) and
//! `fuzz/artifacts/transfer_request/` (crashes found locally; not checked
//! in) goes through the function the libFuzzer binary calls. The sift
//! workspace's other targets are replayed by `tests/fuzz_corpus.rs` of the
//! `sift` package.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

#[path = "../../fuzz/src/bin_targets/transfer_request.rs"]
mod transfer_request;

fn target_dir(kind: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz")
        .join(kind)
        .join("transfer_request")
}

/// Replays every file in `dir` (none if it does not exist); returns the
/// failures and how many files ran.
fn replay_dir(dir: &Path) -> (Vec<String>, usize) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return (Vec::new(), 0);
    };
    let mut files: Vec<PathBuf> = entries
        .map(|entry| entry.expect("readable directory entry").path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    let mut failures = Vec::new();
    for file in &files {
        let input = std::fs::read(file).expect("readable corpus file");
        if catch_unwind(AssertUnwindSafe(|| transfer_request::run(&input))).is_err() {
            failures.push(file.display().to_string());
        }
    }
    (failures, files.len())
}

#[test]
fn every_transfer_request_corpus_input_passes_the_target() {
    let (failures, replayed) = replay_dir(&target_dir("corpus"));
    assert!(
        failures.is_empty(),
        "failing inputs:\n{}",
        failures.join("\n")
    );
    assert!(
        replayed >= transfer_request::seeds().len(),
        "the corpus lacks seeds: run make_corpus"
    );
}

#[test]
fn every_local_transfer_request_crash_artifact_passes_once_fixed() {
    let (failures, _) = replay_dir(&target_dir("artifacts"));
    assert!(
        failures.is_empty(),
        "failing inputs:\n{}",
        failures.join("\n")
    );
}

#[test]
fn generated_transfer_request_seeds_pass_the_target() {
    for (name, bytes) in transfer_request::seeds() {
        let outcome = catch_unwind(AssertUnwindSafe(|| transfer_request::run(&bytes)));
        assert!(outcome.is_ok(), "seed {name}");
    }
}
