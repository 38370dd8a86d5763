//! sift's fuzz targets. Each target's body lives in [`targets`] as a plain
//! `fn(&[u8])`; the libFuzzer binaries in `fuzz_targets/` only call it, and
//! the sift workspace replays the checked-in corpus through the same
//! functions on stable Rust (`tests/fuzz_corpus.rs`). Targets for parsers of
//! `sift-bin` live in [`bin_targets`] and are replayed by `sift-bin`'s tests.

pub mod bin_targets;
pub mod targets;
