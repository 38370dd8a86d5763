//! The deterministic network simulator: sift connections and CBR background
//! traffic over simulated links, in virtual time.
//!
//! - **Virtual time.** Time is a fixed anchor `Instant` (handed in by the
//!   caller) plus an offset that only the event loop moves. Nothing here reads
//!   the wall clock; connections get `now` from the simulator.
//! - **Seeded randomness.** Every link draws its seed from the run's seed
//!   through ChaCha, so a run is a pure function of (scenario, seed) and
//!   repeats bit-for-bit: the same seed writes byte-identical reports.
//! - **Events.** One binary-heap queue ordered by (time, sequence number):
//!   ties break in scheduling order, never by heap accident.
//! - **Ground truth.** Every datagram has an id and a record of what the links
//!   did to it, so controller verdicts can be scored against the truth.
//!
//! This module owns the event loop (`world`), the topology, the flows'
//! applications, scenarios and reports; and, for attacks on endpoints, an
//! addressed network of endpoint hosts (`network`), the attacker that runs
//! on it (`attacker`) and the census of bytes sent to addresses that never
//! proved themselves (`census`). It must not reach into a
//! connection's internals (only its sans-IO surface, `transport`) nor
//! re-implement link behaviour (that is `link`).

pub mod attacker;
pub mod cbr;
pub mod census;
pub mod clock;
pub mod events;
pub mod flow;
pub mod ground_truth;
pub mod link;
pub mod network;
pub mod report;
pub mod scenario;
pub mod topology;
pub mod transport;
pub mod world;

#[cfg(test)]
mod careful_resume_tests;
#[cfg(test)]
mod end_to_end_tests;

pub use clock::VirtualClock;
pub use ground_truth::{DirectionCounters, FlowPacketCounters, GroundTruth, PacketRecord};
pub use report::{FlowReport, Report, ReportError, RunReport, Sample, StopReason, Verdicts};
pub use scenario::{Scenario, ScenarioError};
pub use topology::Direction;
pub use transport::Transport;
pub use world::{SimError, Simulation, LOSS_CLASSIFIED_EVENT};
