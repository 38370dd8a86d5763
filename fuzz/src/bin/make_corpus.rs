//! Writes every target's seed inputs to `fuzz/corpus/<target>/<seed>`.
//! Run from anywhere: `cargo run --manifest-path fuzz/Cargo.toml --bin
//! make_corpus`. Existing files with other names (inputs the fuzzer found and
//! someone kept) are left alone.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let corpus = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let mut written = 0;
    for target in sift_fuzz::targets::ALL {
        let dir = corpus.join(target.name);
        if let Err(error) = std::fs::create_dir_all(&dir) {
            eprintln!("make_corpus: cannot create {}: {error}", dir.display());
            return ExitCode::FAILURE;
        }
        for seed in (target.seeds)() {
            // A seed must not trip its own target.
            (target.run)(&seed.bytes);
            let path = dir.join(&seed.name);
            if let Err(error) = std::fs::write(&path, &seed.bytes) {
                eprintln!("make_corpus: cannot write {}: {error}", path.display());
                return ExitCode::FAILURE;
            }
            written += 1;
        }
    }
    println!(
        "make_corpus: wrote {written} seeds under {}",
        corpus.display()
    );
    ExitCode::SUCCESS
}
