//! sift: a QUIC-style reliable transport for lossy links.
//!
//! The path of a datagram through the crate:
//! `wire` (bytes ↔ structs) → `crypto` (header and payload tags) →
//! `recovery` / `stream` → `conn` (the sans-IO state machine) → `sim` (virtual
//! time) or, later, `io` (real sockets).
//!
//! Two ideas set sift apart from QUIC:
//! - every packet carries a separate header tag and payload tag, so a receiver
//!   that gets a packet with a good header and a bad payload names it in a
//!   `CORRUPTED` frame and the sender resends it without treating it as
//!   congestion (TCP HACK, Balan et al. 2002);
//! - congestion controllers that tell random loss from congestive loss
//!   (Veno, Enhanced Veno, Westwood, Vegas) plug in through [`sift_cc`].

#[cfg(target_os = "linux")]
pub mod blocking;
pub mod conn;
pub mod crypto;
pub mod endpoint;
#[cfg(target_os = "linux")]
pub mod io;
pub mod lab;
pub mod recovery;
pub mod sim;
pub mod stream;
#[cfg(all(target_os = "linux", feature = "tokio"))]
pub mod tokio;
pub mod wire;

pub use conn::{Config, Connection, Error, RecvInfo, SendInfo, Stats};
pub use endpoint::{ConnectionHandle, Endpoint, EndpointError, EndpointStats};

/// Which end of a connection this is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Client,
    Server,
}
pub use sift_cc as cc;
