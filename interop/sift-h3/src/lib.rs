//! HTTP/3 on sift: the [`h3`] crate's QUIC traits (`h3::quic`)
//! implemented over sift's async API ([`sift::tokio`]), so that h3's
//! client and server run on a sift connection unchanged.
//!
//! Wrap a connection from [`sift::tokio::Endpoint::accept`] or
//! [`connect`](sift::tokio::Endpoint::connect) in a [`Connection`] and hand
//! it to h3. Both ends must agree on ALPN `h3` ([`ALPN`]). Here a server
//! and a client on loopback (the README has each alone, as a program):
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! use sift::crypto::{ServerIdentity, TlsConfig};
//! use sift::tokio::Endpoint;
//! use sift::Config;
//!
//! let identity = ServerIdentity::self_signed(&["localhost"])?;
//! let tls = TlsConfig { alpn_protocols: vec![sift_h3::ALPN.to_vec()], ..TlsConfig::loopback(identity) };
//! let config = Config { tls, ..Config::default() };
//! let server = Endpoint::server("127.0.0.1:0".parse()?, config.clone())?;
//! let address = server.local_addr();
//! tokio::spawn(async move {
//!     let connection = server.accept().await.ok_or("the endpoint closed")?;
//!     let mut h3 = h3::server::Connection::<_, bytes::Bytes>::new(sift_h3::Connection::new(connection)).await?;
//!     while let Some(resolver) = h3.accept().await? {
//!         let (_request, mut stream) = resolver.resolve_request().await?;
//!         stream.send_response(http::Response::new(())).await?;
//!         stream.send_data(bytes::Bytes::from_static(b"hello")).await?;
//!         stream.finish().await?;
//!     }
//!     Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
//! });
//!
//! let client = Endpoint::client("127.0.0.1:0".parse()?, config)?;
//! let connection = client.connect(address, "localhost").await?;
//! let (mut driver, mut requests) = h3::client::new(sift_h3::Connection::new(connection)).await?;
//! tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });
//! let mut stream = requests.send_request(http::Request::get("https://localhost/").body(())?).await?;
//! stream.finish().await?;
//! assert_eq!(stream.recv_response().await?.status(), 200);
//! let mut body = Vec::new();
//! while let Some(mut chunk) = stream.recv_data().await? {
//!     use bytes::Buf;
//!     body.extend_from_slice(&chunk.copy_to_bytes(chunk.remaining()));
//! }
//! assert_eq!(body, b"hello");
//! # Ok(())
//! # }
//! ```
//!
//! Shape after `h3-quinn`, the reference backend: one thin wrapper per
//! trait ([`Connection`] and [`OpenStreams`], [`SendStream`],
//! [`RecvStream`], [`BidiStream`]) that holds no protocol logic of its
//! own; every decision is sift's or h3's. sift's async calls are
//! cancellation-safe, so a pending open or accept is a stored future that
//! takes a stream only in the poll that returns it.
//!
//! Owns: the mapping between h3's poll-style traits and sift's
//! futures, and between their errors. Must not: frame, buffer beyond one
//! read, or decide anything about HTTP/3.

// The README's server and client, compiled as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod bidi;
mod connection;
mod error;
mod recv;
mod send;

pub use bidi::BidiStream;
pub use connection::{Connection, OpenStreams};
pub use recv::RecvStream;
pub use send::SendStream;

/// The ALPN protocol of HTTP/3 (RFC 9114 §3.1).
pub const ALPN: &[u8] = b"h3";
