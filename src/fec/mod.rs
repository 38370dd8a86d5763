//! Erasure coding between sift ends (DESIGN §5.2, `docs/repair.md`): repair
//! symbols over recent source packets, so that a receiver rebuilds a lost
//! packet without waiting a round trip for its retransmission.
//!
//! The code is a sliding-window random linear code over GF(2^8), the shape
//! of draft-michel-quic-fec and FlEC: a repair symbol names a span of packet
//! numbers and a seed, and is the sum of the span's source symbols each
//! multiplied by a coefficient the seed and its packet number give. Any k
//! repair symbols over a span rebuild k losses in it with high probability,
//! whichever they are; a later symbol over an overlapping span still helps.
//!
//! Pure: no clock, no socket, no RNG; `conn::fec` decides when to send and
//! feeds the decoder, `policy` says how much.

pub mod decoder;
pub mod gf256;
pub mod policy;
pub mod symbol;

pub use decoder::{Decoder, Limits, Rebuilt, RepairSymbol, Unused};
pub use symbol::{encode_repair, SymbolStore};
