//! The quinn peer: a bulk-transfer server and client over quinn 0.11 (its
//! own rustls with the ring provider, on tokio), speaking the baseline's
//! request protocol ([`crate::baseline::protocol`]) and printing the same
//! report, so that the runner drives `quinn-server` / `quinn-client` exactly
//! like the quiche pair.
//!
//! Owns quinn's transport and TLS configuration ([`config`]), the socket it
//! runs on, the two endpoints ([`server`], [`client`]) and the server's
//! sender sampler ([`trace`]). Choices made to
//! compare like with like (each also in the README):
//! - 1350-byte UDP payloads and no path MTU discovery, as the quiche pair
//!   and sift's default `max_datagram_size`.
//! - The same flow-control windows and idle timeout as the quiche pair
//!   ([`crate::baseline::tls`]); 4 MiB socket buffers.
//! - quinn as a user gets it otherwise: its pacer, GSO/GRO where the kernel
//!   has them, a multi-threaded tokio runtime.
//! - quinn counts no retransmitted packets and no PTOs: the report's
//!   `retransmitted_packets` is quinn's `PathStats::lost_packets` (quinn
//!   resends the frames of what it declares lost), its `ptos` is 0.

pub mod client;
#[path = "../peers/quinn/config.rs"]
pub mod config;
#[path = "../peers/quinn/file.rs"]
pub mod server;
#[path = "../peers/quinn/trace.rs"]
pub mod trace;
