//! quiche 0.28 (Cloudflare's QUIC, TLS 1.3 through BoringSSL), the peer a
//! user would most likely pick instead of sift, on a mio loop of our own:
//!
//! - [`file`]: the file protocol's server and client (`quiche-server`,
//!   `quiche-client`), the comparison's baseline;
//! - [`hq`]: hq-interop, server and client (`quiche-hq`), for the matrix;
//! - [`h3`]: quiche's own HTTP/3 as a client (`quiche-h3-client`).
//!
//! What they share: [`config`] (one configuration with the like-for-like
//! settings, certificates and trust, key logs, connection IDs) and
//! [`socket`] (one UDP socket under a mio poll, packets sent at quiche's
//! pacing times). `interop/quiche-0.24/` compiles `config`, `socket` and
//! `file` against quiche 0.24 too; they must build against both.

pub mod config;
pub mod file;
pub mod h3;
pub mod hq;
pub mod socket;
