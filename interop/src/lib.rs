//! sift next to quiche and quinn over the same emulated links.
//!
//! Three parts:
//! - [`baseline`]: a bulk-transfer client and server written against
//!   quiche's public API (its own TLS, a self-signed certificate made at
//!   start), run as `quiche-server` / `quiche-client` exactly like
//!   `sift-server` / `sift-client`, behind the same `sift-link`.
//! - [`quinn_peer`]: the same server and client over quinn 0.11 (its own
//!   rustls), run as `quinn-server` / `quinn-client`.
//! - [`compare`]: the runner behind `sift-compare`: every controller of both
//!   stacks over a checked-in list of link specs, same spec and seed for
//!   each, repeated; results as JSON, a markdown table and an SVG chart;
//!   loopback efficiency (throughput and CPU per GiB); shards and merge.
//!
//! - [`http3`]: HTTP/3 file serving and fetching with hyperium's h3 over
//!   sift (`sift-h3`) and quinn, and with quiche's own h3, for the
//!   `http3` case of the interop matrix: this is wire interop.
//!
//! [`flow`] is the one record both stacks' clients print with `--json`
//! (DESIGN §11's flow fields), so the runner reads them the same way.
//!
//! This is a side-by-side comparison, not wire interop: sift's packets
//! (split tags) are not QUIC v1's.

pub mod baseline;
pub mod compare;
pub mod flow;
#[path = "peers/hq.rs"]
pub mod hq;
pub mod http3;
pub mod matrix;
pub mod quinn_peer;
