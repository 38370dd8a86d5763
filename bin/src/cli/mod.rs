//! The command-line side of the tools: options shared by the binaries,
//! URLs, the server's threads, progress, summaries and the demo's relay.
//!
//! Owns: everything a person sees (lines, bars, JSON on stdout) and the
//! binding of the protocol to sift connections: `sift::blocking` for the
//! clients, `sift::tokio` for the server (`server_loop`).
//! Must not: implement protocol rules (those live in `transfer`).

pub mod authorized;
pub mod common;
pub mod ecn_socket;
pub mod fetch;
pub mod format;
pub mod interrupt;
pub mod progress;
pub mod relay;
pub mod report;
pub mod server_loop;
pub mod session;
pub mod state;
pub mod stream;
pub mod tokens;
pub mod trust;
pub mod url;
