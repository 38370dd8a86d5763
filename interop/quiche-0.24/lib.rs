//! The quiche file peer (interop/src/peers/quiche/file.rs) compiled
//! against quiche 0.24: the same sources, another release, so that the
//! comparison can carry the release that does best on each link beside
//! the newest (issue 37). `quiche-server` and `quiche-client`'s sources
//! build on this library as `quiche024-server` and `quiche024-client`.
//!
//! The module tree is interop's, cut down to what those two need: the
//! sources reach each other by the same paths (`crate::peers::...`) in
//! both crates. A file here per module that holds others (`peers.rs`,
//! `peers/quiche.rs`), each child a `#[path]` to interop's source.

#[path = "../src/flow.rs"]
pub mod flow;
pub mod peers;
