//! quiche's file peer and what it stands on (interop/src/peers/quiche),
//! without the hq-interop and HTTP/3 peers.

#[path = "../../src/peers/quiche/config.rs"]
pub mod config;
#[path = "../../src/peers/quiche/file.rs"]
pub mod file;
#[path = "../../src/peers/quiche/socket.rs"]
pub mod socket;
