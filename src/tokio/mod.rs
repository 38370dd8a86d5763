//! The async API (feature `tokio`, on by default): an [`Endpoint`] makes
//! and accepts [`Connection`]s, whose streams are a [`SendStream`]
//! (`tokio::io::AsyncWrite`) and a [`RecvStream`] (`tokio::io::AsyncRead`).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use sift::crypto::{ServerIdentity, ServerTrust, TlsConfig};
//! use sift::tokio::Endpoint;
//! use sift::Config;
//!
//! // A server presents a certificate (here a fresh self-signed one);
//! // a client trusts it by its SHA-256 fingerprint, ssh-style.
//! let identity = ServerIdentity::self_signed(&["localhost"])?;
//! let pin = identity.fingerprint();
//! let server_config = Config { tls: TlsConfig::server(identity), ..Config::default() };
//! let server = Endpoint::server("127.0.0.1:0".parse()?, server_config)?;
//! let address = server.local_addr();
//! tokio::spawn(async move {
//!     while let Some(connection) = server.accept().await {
//!         // A datagram: unreliable, unordered, no stream needed.
//!         let ping = connection.read_datagram().await?;
//!         connection.send_datagram(&ping)?;
//!         // Dropping the connection would close it at once, before the
//!         // reply leaves: wait for the client to close it.
//!         connection.closed().await;
//!     }
//!     Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
//! });
//!
//! let client_config = Config {
//!     tls: TlsConfig::client(ServerTrust::Pinned(vec![pin])),
//!     ..Config::default()
//! };
//! let client = Endpoint::client("0.0.0.0:0".parse()?, client_config)?;
//! let connection = client.connect(address, "localhost").await?;
//! connection.send_datagram(b"ping")?;
//! // Datagrams may be lost: a real protocol would resend on a timer.
//! assert_eq!(connection.read_datagram().await?, b"ping");
//! connection.close(0, "done");
//! client.wait_idle().await;
//! # Ok(())
//! # }
//! ```
//!
//! How it works, after quinn's async crate: one driver task per endpoint
//! owns the socket (the same [`Datapath`](crate::io::Datapath) as the
//! blocking API's mio loop: GSO/GRO, mmsg batching, UDP checksums off for
//! corruption notices) and sleeps on tokio's readiness of the socket and
//! of a `timerfd`. Handles (`Endpoint`, `Connection`, streams) share the
//! sans-IO [`Endpoint`](crate::Endpoint) with it behind a mutex: a call
//! runs on the sans-IO connection directly, and one that must wait leaves
//! its task's waker with the connection, which the driver wakes when a
//! datagram for it arrives or a timer closes it. The sans-IO core knows
//! nothing of tokio.
//!
//! Owns: the driver task, waking, and turning connection events into the
//! errors of [`error`](self#errors).
//! Must not: hold protocol state of its own (everything is asked of the
//! `Endpoint` and `Connection`), or name tokio's I/O types outside
//! `driver.rs` (the runtime seam).
//!
//! Choices (like quinn's where it has one):
//! - Every call is cancellation-safe: a future dropped while it waits has
//!   taken nothing (a read returns its bytes in the poll that takes them,
//!   a write takes bytes only in the poll that reports them), so the
//!   connection and stream stay usable.
//! - Writes wait while the stream's send buffer is full and reads free
//!   flow-control credit: backpressure reaches the writer.
//! - A write may fill the send buffer in place
//!   ([`SendStream::write_with`]): the buffer's room is lent to a
//!   filler, such as a read of a file's cached pages, so a file server
//!   copies nothing through a buffer of its own (`sift-server` does).
//! - Dropping a [`SendStream`] finishes it; dropping a [`RecvStream`]
//!   before its end stops it (STOP_SENDING 0); dropping the last handle
//!   of a connection (and its streams) closes it with code 0.
//! - A peer opens a stream by sending on it: `accept_bi` sees a stream
//!   only once the peer wrote to it (or finished it).
//!
//! # Errors
//! [`ConnectionError`] says how a connection ended: closed by the peer
//! (with its code and reason), closed locally, or idle timeout. Stream
//! calls add the stream's own endings ([`WriteError::Stopped`],
//! [`ReadError::Reset`], with the peer's code). Each converts into the
//! `std::io::Error` that `AsyncRead`/`AsyncWrite` users see.

mod connection;
mod driver;
mod endpoint;
mod error;
mod recv;
mod send;
mod shared;

pub use connection::Connection;
pub use endpoint::{Endpoint, EndpointConfig};
pub use error::{
    BindError, ConnectError, ConnectionError, ReadError, ReadToEndError, SendDatagramError,
    WriteError,
};
pub use recv::RecvStream;
pub use send::SendStream;
