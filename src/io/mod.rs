//! The real-socket driver: a mio event loop that runs an
//! [`Endpoint`](crate::endpoint::Endpoint) over a UDP socket with the real
//! clock.
//!
//! `datapath` is the part any runtime shares (the socket, batching, one
//! turn of read–step–write); `driver` is the mio loop around it, and the
//! async API (`crate::tokio`) puts tokio's readiness around the same turn.
//!
//! Owns: the socket and its options (buffer sizes, UDP checksums chosen per
//! datagram when corruption notices are offered, the ECN field of each
//! datagram read and written: `ecn`, `SO_REUSEPORT` groups
//! routed by connection ID: `steering`), reading and writing datagrams,
//! the poll, the timer that honours the endpoint's `timeout` (which
//! includes pacing), waking from application threads, and what a client's
//! connect waits for (`connect`), the same in `blocking` and `tokio`.
//! Must not: hold protocol state (that is `conn` and `endpoint`), or be
//! needed by them — `Connection` and `Endpoint` know nothing of sockets.
//! This is the one place (with `blocking` and `tokio`) that reads the clock and draws
//! seeds from the OS.
//!
//! Linux only: it uses `timerfd` and Linux socket options.

mod batch;
mod connect;
mod datapath;
mod driver;
mod ecn;
mod socket;
mod steering;
mod timer;

pub use batch::{
    enable_gro, gso_supported, recv_segments, send_segments, Received, UDP_GRO, UDP_SEGMENT,
};
pub use connect::CONNECT_TIMEOUT;
pub(crate) use connect::{connect_timeout, handshake_completed};
pub use datapath::{Control, Datapath, EndpointHost, Progress, Turn};
pub use driver::{Driven, Driver};
pub use ecn::enable_ecn_reception;
pub use socket::{
    bind_udp, checksums_disabled, ipv6_loopback_available, mtu_discover_mode,
    zero_checksums_accepted, SocketOptions, SocketReport, SOCKET_BUFFER_BYTES, SO_NO_CHECK,
    UDP_NO_CHECK6_RX, UDP_NO_CHECK6_TX,
};
pub use steering::{
    attach_cid_steering, bind_reuseport_group, steering_key, PROGRAM_LEN, SO_ATTACH_REUSEPORT_CBPF,
};
pub use timer::Timer;

/// A seed for connection IDs from the operating system's RNG. The sans-IO
/// core never draws one itself (runs must repeat in the simulator).
pub fn os_seed() -> u64 {
    use rand::RngCore;
    rand::rng().next_u64()
}

/// 256 bits from the operating system's generator, for a connection or a
/// server endpoint to derive its unpredictable values from
/// (`crypto::entropy`).
pub fn os_entropy() -> crate::crypto::Entropy {
    use rand::TryRngCore;
    let mut bytes = [0u8; crate::crypto::ENTROPY_LEN];
    // The kernel's generator itself (getrandom), not a user-space one
    // seeded from it: a failure here is a broken system, not an input.
    rand::rngs::OsRng
        .try_fill_bytes(&mut bytes)
        .expect("the operating system's random number generator failed");
    crate::crypto::Entropy::new(bytes)
}

/// The wall clock as tokens are dated by it, read once: give the same
/// clock (in one [`TokenLedger`](crate::endpoint::TokenLedger)) to every
/// worker of a server, so each reads another's tokens right.
pub fn token_clock() -> crate::endpoint::TokenClock {
    use std::time::{Instant, SystemTime, UNIX_EPOCH};
    let unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    crate::endpoint::TokenClock::new(Instant::now(), unix)
}
