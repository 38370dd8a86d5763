//! The body of every fuzz target, as a plain function of the input bytes,
//! and the seed inputs each target starts from.
//!
//! Owns: what each target feeds sift and which invariants it asserts. A
//! broken invariant panics, which libFuzzer reports as a crash and the
//! corpus replay test reports as a failure.
//! Must not: depend on anything but `sift`, `std` and `arbitrary`. The sift
//! workspace includes this directory by path (`tests/fuzz_corpus.rs`), where
//! neither libFuzzer nor this crate's other modules exist.

pub mod frames;
pub mod header;
pub mod packet_open;
pub mod transport_params;

/// A named input for a target's seed corpus.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seed {
    /// File name under `fuzz/corpus/<target>/`.
    pub name: String,
    /// The input.
    pub bytes: Vec<u8>,
}

impl Seed {
    /// A seed called `name` holding `bytes`.
    pub fn new(name: impl Into<String>, bytes: Vec<u8>) -> Self {
        Self {
            name: name.into(),
            bytes,
        }
    }
}

/// One fuzz target.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    /// The cargo-fuzz binary's name, which is also its corpus directory.
    pub name: &'static str,
    /// Feeds one input to sift and asserts the target's invariants.
    pub run: fn(&[u8]),
    /// The inputs `make_corpus` writes to the seed corpus.
    pub seeds: fn() -> Vec<Seed>,
}

/// Every target, in the order `run-all.sh` runs them.
pub const ALL: &[Target] = &[
    Target {
        name: "header",
        run: header::run,
        seeds: header::seeds,
    },
    Target {
        name: "frames",
        run: frames::run,
        seeds: frames::seeds,
    },
    Target {
        name: "transport_params",
        run: transport_params::run,
        seeds: transport_params::seeds,
    },
    Target {
        name: "packet_open",
        run: packet_open::run,
        seeds: packet_open::seeds,
    },
];

/// The target called `name`.
pub fn by_name(name: &str) -> Option<&'static Target> {
    ALL.iter().find(|target| target.name == name)
}
