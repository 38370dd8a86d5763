//! sift: a QUIC-style reliable transport for lossy links.
//!
//! Two ideas set sift apart from QUIC:
//! - every packet carries a separate header tag and payload tag, so a receiver
//!   that gets a packet with a good header and a bad payload names it in a
//!   `CORRUPTED` frame and the sender resends it without treating it as
//!   congestion (TCP HACK, Balan et al. 2002);
//! - congestion controllers that tell random loss from congestive loss
//!   (Veno, Enhanced Veno, Westwood, Vegas) plug in through [`sift_cc`].
//!
//! # Start here
//!
//! An echo server and a client on the async API ([`tokio`](mod@crate::tokio),
//! feature `tokio`, on by default): connections carry streams
//! ([`AsyncRead`](::tokio::io::AsyncRead) / [`AsyncWrite`](::tokio::io::AsyncWrite))
//! and unreliable datagrams.
//!
#![cfg_attr(feature = "tokio", doc = "```")]
#![cfg_attr(not(feature = "tokio"), doc = "```ignore")]
//! use sift::crypto::{ServerIdentity, ServerTrust, TlsConfig};
//! use sift::tokio::Endpoint;
//! use sift::Config;
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     // Server: echo every stream back.
//!     // A server presents a certificate (here a fresh self-signed one);
//!     // a client trusts it by its SHA-256 fingerprint, ssh-style.
//!     let identity = ServerIdentity::self_signed(&["localhost"])?;
//!     let pin = identity.fingerprint();
//!     let server_config = Config { tls: TlsConfig::server(identity), ..Config::default() };
//!     let server = Endpoint::server("127.0.0.1:0".parse()?, server_config)?;
//!     let address = server.local_addr();
//!     tokio::spawn(async move {
//!         while let Some(connection) = server.accept().await {
//!             tokio::spawn(async move {
//!                 while let Ok((mut send, mut recv)) = connection.accept_bi().await {
//!                     let request = recv.read_to_end(64 * 1024).await?;
//!                     send.write_all(&request).await?;
//!                     send.finish()?;
//!                 }
//!                 Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
//!             });
//!         }
//!     });
//!
//!     // Client: one request on one stream.
//!     let client_config = Config {
//!         tls: TlsConfig::client(ServerTrust::Pinned(vec![pin])),
//!         ..Config::default()
//!     };
//!     let client = Endpoint::client("0.0.0.0:0".parse()?, client_config)?;
//!     let connection = client.connect(address, "localhost").await?;
//!     let (mut send, mut recv) = connection.open_bi().await?;
//!     send.write_all(b"hello").await?;
//!     send.finish()?;
//!     assert_eq!(recv.read_to_end(1024).await?, b"hello");
//!     connection.close(0, "done");
//!     client.wait_idle().await; // the server heard the close
//!     Ok(())
//! }
//! ```
//!
//! [`Config`] chooses the congestion controller (`cc`), corruption notices
//! (on by default: the socket then turns UDP checksums off so damaged
//! datagrams reach sift), the limits, and TLS (`tls`: the server's
//! identity, the client's trust, ALPN `sift/1`; see `SECURITY.md`). More: the
//! examples `tokio_echo` (thousands of connections) and `tokio_kv`
//! (requests on streams, notifications as datagrams), and the other ways
//! in:
//! - [`blocking`]: `std::io::Read + Write` streams for simple programs,
//!   the endpoint driven by the thread that waits on it (a driver thread
//!   per endpoint takes over while none does);
//! - [`Connection`] and [`Endpoint`]: the sans-IO core, for your own event
//!   loop — it never touches a socket or reads a clock;
//! - [`sim`]: the deterministic simulator, and [`lab`], the papers'
//!   experiments on it.
//!
//! The path of a datagram through the crate:
//! `wire` (bytes ↔ structs) → `crypto` (header and payload tags) →
//! `recovery` / `stream` → `conn` (the sans-IO state machine) →
//! `endpoint` → `sim` (virtual time) or `io` (real sockets, under
//! `blocking` and `tokio`). `docs/design.md` in the repository is the
//! design: what each module owns, that path in detail, the threads, both
//! packet formats; comments cite its sections as "DESIGN §N".

#[cfg(target_os = "linux")]
pub mod blocking;
mod close;
pub mod conn;
pub mod crypto;
pub mod endpoint;
pub mod fec;
#[cfg(target_os = "linux")]
pub mod io;
pub mod lab;
pub mod recovery;
pub mod sim;
pub mod stream;
#[cfg(all(target_os = "linux", feature = "tokio"))]
pub mod tokio;
pub mod trace;
pub mod wire;

pub use close::CloseReason;
pub use conn::{Config, Connection, EarlyData, Error, RecvInfo, SendInfo, Stats};
pub use endpoint::{ConnectionHandle, Endpoint, EndpointError, EndpointStats, Transmit};

/// Which end of a connection this is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// The end that opened the connection.
    Client,
    /// The end that accepted it.
    Server,
}
pub use sift_cc as cc;
