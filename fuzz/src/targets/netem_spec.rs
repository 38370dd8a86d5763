//! `netem_spec`: the `tc netem` spec parser, [`LinkConfig::from_netem`], on
//! arbitrary UTF-8 (other bytes are not a spec anyone can type).
//!
//! Invariants: parsing never panics; `str::parse` agrees with
//! `from_netem`; a spec that parses is valid ([`LinkConfig::validate`]),
//! and its canonical form ([`LinkConfig::to_netem`], also `Display`)
//! parses back to an equal config and is a fixed point of
//! parse-then-print.

use sift::sim::link::LinkConfig;

use super::Seed;

/// Parses `data` as a netem spec and checks the canonical round trip.
pub fn run(data: &[u8]) {
    let Ok(spec) = std::str::from_utf8(data) else {
        return;
    };
    let parsed = LinkConfig::from_netem(spec);
    assert_eq!(
        spec.parse::<LinkConfig>(),
        parsed,
        "FromStr and from_netem disagree"
    );
    let Ok(config) = parsed else {
        return;
    };
    assert_eq!(
        config.validate(),
        Ok(()),
        "{spec:?} parsed to an invalid config"
    );
    let canonical = config.to_netem();
    assert_eq!(config.to_string(), canonical, "Display is the netem form");
    let reparsed = LinkConfig::from_netem(&canonical).unwrap_or_else(|error| {
        panic!("canonical form {canonical:?} of {spec:?} does not parse: {error}")
    });
    assert_eq!(
        reparsed, config,
        "{spec:?} → {canonical:?} parses to another config"
    );
    assert_eq!(reparsed.to_netem(), canonical, "the canonical form moved");
}

/// Every option of the syntax, alone and combined, as a user would type it.
pub fn seeds() -> Vec<Seed> {
    [
        ("empty", ""),
        (
            "design-example",
            "delay 60ms rate 1600kbit limit 12 loss 1%",
        ),
        (
            "delay-jitter-normal",
            "delay 100ms 10ms 25% distribution normal",
        ),
        ("delay-pareto", "delay 50ms 5ms distribution paretonormal"),
        ("latency-bare-micros", "latency 2500"),
        ("rate-framing", "rate 10mbit 20 64 4 limit 100"),
        ("rate-bytes", "rate 125kbps limit-bytes 64k"),
        ("loss-random-correlated", "loss random 2% 25%"),
        ("loss-fraction", "drop 0.005"),
        ("loss-state", "loss state 1% 10% 70% 0.1% 1%"),
        ("loss-gemodel", "loss gemodel 1% 10% 70% 0.1%"),
        ("corrupt", "corrupt 0.1% 25%"),
        ("ber-header", "ber 1e-5 corrupt-where header"),
        ("corrupt-gemodel", "corrupt-gemodel 1% 10%"),
        (
            "corrupt-burst",
            "corrupt-burst 1% 2-5 corrupt-where payload",
        ),
        ("corrupt-where-share", "corrupt 5% corrupt-where header=5%"),
        ("duplicate", "duplicate 1% 10%"),
        ("reorder-gap", "delay 10ms reorder 25% 50% gap 5"),
        ("slot", "slot 10ms 20ms packets 4 bytes 3000"),
        ("outage-seed", "outage 10s 500ms seed 42"),
        (
            "everything",
            "limit 50 delay 20ms 2ms distribution uniform rate 8mbit loss 0.5% \
             corrupt 1% duplicate 0.1% reorder 1% gap 3 seed 7",
        ),
    ]
    .into_iter()
    .map(|(name, spec)| Seed::new(name, spec.as_bytes().to_vec()))
    .collect()
}
