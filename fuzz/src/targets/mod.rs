//! The body of every fuzz target, as a plain function of the input bytes,
//! and the seed inputs each target starts from.
//!
//! Owns: what each target feeds sift and which invariants it asserts. A
//! broken invariant panics, which libFuzzer reports as a crash and the
//! corpus replay test reports as a failure.
//! Must not: depend on anything but `sift`, `std` and `arbitrary`. The sift
//! workspace includes this directory by path (`tests/fuzz_corpus.rs`), where
//! neither libFuzzer nor this crate's other modules exist.

pub mod ack_corrupted;
pub mod frames;
pub mod header;
pub mod netem_spec;
pub mod packet_open;
pub mod packet_open_quic;
pub mod packet_open_tls;
pub mod recv_datagram;
pub mod repair;
pub mod stateless;
pub mod stream_ops;
pub mod transport_params;

use std::sync::OnceLock;
use std::time::Instant;

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
    Target {
        name: "packet_open_tls",
        run: packet_open_tls::run,
        seeds: packet_open_tls::seeds,
    },
    Target {
        name: "packet_open_quic",
        run: packet_open_quic::run,
        seeds: packet_open_quic::seeds,
    },
    Target {
        name: "recv_datagram_client",
        run: recv_datagram::run_client,
        seeds: recv_datagram::seeds_client,
    },
    Target {
        name: "recv_datagram_server",
        run: recv_datagram::run_server,
        seeds: recv_datagram::seeds_server,
    },
    Target {
        name: "recv_datagram_tls_client",
        run: recv_datagram::run_tls_client,
        seeds: recv_datagram::seeds_tls_client,
    },
    Target {
        name: "recv_datagram_tls_server",
        run: recv_datagram::run_tls_server,
        seeds: recv_datagram::seeds_tls_server,
    },
    Target {
        name: "recv_datagram_quic_client",
        run: recv_datagram::run_quic_client,
        seeds: recv_datagram::seeds_quic_client,
    },
    Target {
        name: "recv_datagram_quic_server",
        run: recv_datagram::run_quic_server,
        seeds: recv_datagram::seeds_quic_server,
    },
    Target {
        name: "ack_corrupted",
        run: ack_corrupted::run,
        seeds: ack_corrupted::seeds,
    },
    Target {
        name: "stream_ops",
        run: stream_ops::run,
        seeds: stream_ops::seeds,
    },
    Target {
        name: "netem_spec",
        run: netem_spec::run,
        seeds: netem_spec::seeds,
    },
    Target {
        name: "stateless",
        run: stateless::run,
        seeds: stateless::seeds,
    },
    Target {
        name: "repair",
        run: repair::run,
        seeds: repair::seeds,
    },
];

/// The target called `name`.
pub fn by_name(name: &str) -> Option<&'static Target> {
    ALL.iter().find(|target| target.name == name)
}

/// The clock's origin for targets that need time: one `Instant` for the
/// whole process, read once, so that an input replays the same way (sift
/// only ever uses differences from it).
pub fn base_instant() -> Instant {
    static BASE: OnceLock<Instant> = OnceLock::new();
    *BASE.get_or_init(Instant::now)
}

/// Seeds for targets that decode their input with `arbitrary`, which has no
/// inverse: fixed pseudo-random byte strings of the given lengths, from
/// SplitMix64 (Steele, Lea & Flood 2014) started at `seed`.
pub fn pseudo_random_seeds(seed: u64, lengths: &[usize]) -> Vec<Seed> {
    let mut state = seed;
    let mut next_byte = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) as u8
    };
    lengths
        .iter()
        .enumerate()
        .map(|(index, len)| {
            let bytes = (0..*len).map(|_| next_byte()).collect();
            Seed::new(format!("random-{index}-{len}"), bytes)
        })
        .collect()
}
