//! quinn 0.11 (rustls with the ring provider, on tokio), the Rust stack
//! most Rust users reach for:
//!
//! - [`file`]: the file protocol's server and client (`quinn-server`,
//!   `quinn-client`), measured beside quiche's;
//! - [`hq`]: hq-interop, server and client (`quinn-hq`), for the matrix;
//! - [`h3`]: HTTP/3 on h3-quinn, server and client (`quinn-h3-server`,
//!   `quinn-h3-client`), the same h3 code as sift's;
//! - [`trace`]: the file server's sender sampler (`quinn-server --cc-log`).
//!
//! What they share is [`config`]: transport settings, rustls for both
//! ends, the endpoint on a socket with sift's buffer size.

pub mod config;
pub mod file;
pub mod h3;
pub mod hq;
pub mod trace;
