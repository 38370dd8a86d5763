//! HTTP/3 file serving and fetching, the matrix's `http3` case: the same
//! server and client code (hyperium's `h3`) over sift ([`sift_h3`]) and
//! over quinn (`h3-quinn`), and a client written against quiche's own
//! HTTP/3 ([`quiche_client`]), so that each end meets an HTTP/3 stack
//! that nobody here wrote.
//!
//! - [`target`]: `https://HOST:PORT/PATH` URLs, and where a fetched path
//!   is written under the output directory.
//! - [`serve`]: GET of files under a root (404 outside it or for what is
//!   not a file, 405 for other methods), generic over h3's QUIC traits.
//! - [`fetch`]: every URL of one call on one connection, concurrently,
//!   each written whole or the call fails; generic too.
//! - [`sift_setup`] and [`quinn_setup`]: each stack's TLS for ALPN `h3`.
//! - [`quiche_client`]: quiche's `h3` module driven by a mio loop.
//!
//! Owns: the `sift-h3-*`, `quinn-h3-*` and `quiche-h3-client` binaries'
//! behaviour. Must not: speak HTTP/3 itself (framing, QPACK and settings
//! are the libraries').

pub mod fetch;
#[path = "../peers/quiche/h3.rs"]
pub mod quiche_client;
#[path = "../peers/quinn/h3.rs"]
pub mod quinn_setup;
#[path = "../peers/h3.rs"]
pub mod serve;
#[path = "../peers/sift/mod.rs"]
pub mod sift_setup;
#[path = "../peers/url.rs"]
pub mod target;
