//! Writes every target's seed inputs to `fuzz/corpus/<target>/<seed>`.
//! Run from anywhere: `cargo run --manifest-path fuzz/Cargo.toml --bin
//! make_corpus`. Existing files with other names (inputs the fuzzer found and
//! someone kept) are left alone.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use sift_fuzz::bin_targets::transfer_request;
use sift_fuzz::targets;

/// A target's corpus directory name, its body, and its named seeds.
type Job = (&'static str, fn(&[u8]), Vec<(String, Vec<u8>)>);

/// Runs each seed through its target (a seed must not trip it), then
/// writes it under `corpus/<name>/`. Returns how many were written.
fn write_seeds(
    corpus: &Path,
    name: &str,
    run: fn(&[u8]),
    seeds: Vec<(String, Vec<u8>)>,
) -> Result<usize, String> {
    let dir = corpus.join(name);
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    for (seed_name, bytes) in &seeds {
        run(bytes);
        let path = dir.join(seed_name);
        std::fs::write(&path, bytes)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(seeds.len())
}

fn main() -> ExitCode {
    let corpus = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let mut jobs: Vec<Job> = targets::ALL
        .iter()
        .map(|target| {
            let seeds = (target.seeds)()
                .into_iter()
                .map(|seed| (seed.name, seed.bytes))
                .collect();
            (target.name, target.run, seeds)
        })
        .collect();
    jobs.push((
        "transfer_request",
        transfer_request::run,
        transfer_request::seeds()
            .into_iter()
            .map(|(name, bytes)| (name.to_string(), bytes))
            .collect(),
    ));
    let mut written = 0;
    for (name, run, seeds) in jobs {
        match write_seeds(&corpus, name, run, seeds) {
            Ok(count) => written += count,
            Err(error) => {
                eprintln!("make_corpus: {error}");
                return ExitCode::FAILURE;
            }
        }
    }
    println!(
        "make_corpus: wrote {written} seeds under {}",
        corpus.display()
    );
    ExitCode::SUCCESS
}
