//! The deterministic network simulator: virtual time, seeded randomness,
//! links with ground truth for every packet. Nothing here reads the wall
//! clock; a run repeats bit-for-bit for a given seed.

pub mod link;
