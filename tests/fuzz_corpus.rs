//! Replays the fuzz corpus on stable Rust, so CI catches a regression
//! without nightly or libFuzzer: every file under `fuzz/corpus/<target>/`
//! (seeds and kept finds) and `fuzz/artifacts/<target>/` (crashes found
//! locally; not checked in) goes through the same function the libFuzzer
//! binary calls. A failing input names its file; reproduce it with
//! `cargo +nightly fuzz run <target> <file>` from the repository root.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

#[path = "../fuzz/src/targets/mod.rs"]
mod targets;

/// Targets whose corpus another package replays: `transfer_request` needs
/// `sift-bin`, which `sift` cannot depend on (`bin/tests/fuzz_corpus.rs`).
const REPLAYED_ELSEWHERE: &[&str] = &["transfer_request"];

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

/// Every file directly under `dir`, sorted; none if `dir` does not exist.
fn files_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|entry| entry.expect("readable directory entry").path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    files
}

/// Subdirectories of `dir` with their names, sorted; none if it does not
/// exist.
fn subdirectories(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut dirs: Vec<(String, PathBuf)> = entries
        .map(|entry| entry.expect("readable directory entry").path())
        .filter(|path| path.is_dir())
        .map(|path| {
            let name = path
                .file_name()
                .expect("a directory entry has a name")
                .to_string_lossy()
                .into_owned();
            (name, path)
        })
        .collect();
    dirs.sort();
    dirs
}

/// Runs `input` through `target`, turning a panic into a message.
fn replay(target: &targets::Target, input: &[u8]) -> Result<(), String> {
    catch_unwind(AssertUnwindSafe(|| (target.run)(input))).map_err(|panic| {
        panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "non-string panic".to_string())
    })
}

/// Replays every file of every target directory under `root`; returns the
/// failures and how many files ran.
fn replay_tree(root: &Path) -> (Vec<String>, usize) {
    let mut failures = Vec::new();
    let mut replayed = 0;
    for (name, dir) in subdirectories(root) {
        if REPLAYED_ELSEWHERE.contains(&name.as_str()) {
            continue;
        }
        let Some(target) = targets::by_name(&name) else {
            failures.push(format!(
                "{}: no fuzz target is called {name}",
                dir.display()
            ));
            continue;
        };
        for file in files_in(&dir) {
            let input = std::fs::read(&file).expect("readable corpus file");
            if let Err(message) = replay(target, &input) {
                failures.push(format!("{}: {message}", file.display()));
            }
            replayed += 1;
        }
    }
    (failures, replayed)
}

#[test]
fn every_checked_in_corpus_input_passes_its_target() {
    let (failures, replayed) = replay_tree(&fuzz_dir().join("corpus"));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(replayed > 0, "the corpus is empty");
}

#[test]
fn every_local_crash_artifact_passes_its_target_once_fixed() {
    // Artifacts exist only where someone ran the fuzzer; each one is a bug
    // until its target passes it.
    let (failures, _) = replay_tree(&fuzz_dir().join("artifacts"));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_target_has_a_checked_in_seed_corpus() {
    for target in targets::ALL {
        let dir = fuzz_dir().join("corpus").join(target.name);
        let on_disk = files_in(&dir);
        assert!(
            !on_disk.is_empty(),
            "{} is empty: run `cargo run --manifest-path fuzz/Cargo.toml --bin make_corpus`",
            dir.display()
        );
        for seed in (target.seeds)() {
            assert!(
                dir.join(&seed.name).is_file(),
                "seed {}/{} is missing: run make_corpus",
                target.name,
                seed.name
            );
        }
    }
}

#[test]
fn generated_seeds_pass_their_targets() {
    for target in targets::ALL {
        for seed in (target.seeds)() {
            if let Err(message) = replay(target, &seed.bytes) {
                panic!("seed {}/{}: {message}", target.name, seed.name);
            }
        }
    }
}
