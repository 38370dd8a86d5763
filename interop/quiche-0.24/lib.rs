//! The quiche baseline (interop/src/baseline) compiled against quiche 0.24:
//! the same sources, another release, so that the comparison can carry the
//! release that does best on each link beside the newest (issue 37).

#[path = "../src/baseline/mod.rs"]
pub mod baseline;
#[path = "../src/flow.rs"]
pub mod flow;
