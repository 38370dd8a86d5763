//! The quiche baseline: a bulk-transfer server and client over quiche's
//! public API, the reference a user would pick instead of sift.
//!
//! Owns the little request protocol ([`protocol`]), quiche's configuration
//! and the self-signed certificate ([`tls`]), the event loop over one UDP
//! socket that honours quiche's pacing times ([`socket`]), and the two
//! endpoints ([`server`], [`client`]). It knows nothing of sift's library:
//! the runner meets both stacks only through their binaries.
//!
//! Choices made to compare like with like (each also in the README):
//! - 1350-byte UDP payloads, sift's `max_datagram_size` default.
//! - Pacing as quiche schedules it: a packet whose `SendInfo::at` is in the
//!   future waits in user space until then (quiche's examples send at once;
//!   sift paces, and behind a 12-packet queue unpaced bursts would be an
//!   unfair handicap).
//! - One `sendto` per datagram (no GSO), as quiche's examples do.
//! - Flow-control windows large enough never to limit a 600 ms satellite
//!   path at 20 Mb/s (so controllers, not windows, are compared).

pub mod client;
#[path = "../peers/file.rs"]
pub mod protocol;
#[path = "../peers/quiche/file.rs"]
pub mod server;
#[path = "../peers/quiche/socket.rs"]
pub mod socket;
#[path = "../peers/quiche/config.rs"]
pub mod tls;
