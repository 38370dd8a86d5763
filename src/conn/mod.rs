//! The sans-IO connection: `recv` datagrams in, `send` datagrams out,
//! `timeout`/`on_timeout` for timers. It never touches a socket and never
//! reads a clock: the caller passes `now` everywhere.
//!
//! SKELETON: the public surface only; the state machine lands with the
//! foundation work.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use sift_cc::{CcConfig, Metrics};

pub use crate::Side;

/// A stream identifier (RFC 9000 §2.1: the two low bits give initiator and
/// direction).
pub type StreamId = u64;

/// Connection configuration. Defaults suit a long fat lossy link.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(default)]
pub struct Config {
    /// Congestion controller and its parameters.
    pub cc: CcConfig,
    /// Offer corruption notices (the HACK option). Both peers must offer it.
    pub corruption_notices: bool,
    /// Largest UDP payload this endpoint sends, in bytes.
    pub max_datagram_size: usize,
    /// Close after this long without hearing from the peer.
    pub idle_timeout: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            cc: CcConfig::default(),
            corruption_notices: true,
            max_datagram_size: 1350,
            idle_timeout: Duration::from_secs(30),
        }
    }
}

/// Where and when a received datagram arrived.
#[derive(Clone, Copy, Debug)]
pub struct RecvInfo {
    pub from: SocketAddr,
    pub to: SocketAddr,
    pub now: Instant,
}

/// Where a datagram from `send` goes, and the earliest time it should leave
/// (pacing).
#[derive(Clone, Copy, Debug)]
pub struct SendInfo {
    pub from: SocketAddr,
    pub to: SocketAddr,
    pub at: Instant,
}

/// A connection-level error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("the connection is closed")]
    Closed,
}

/// Counters and estimates, for reports and `--json`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Stats {
    pub packets_sent: u64,
    pub packets_received: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub packets_lost: u64,
    pub retransmitted_packets: u64,
    pub ptos: u64,
    pub corruption_notices_received: u64,
    pub cwnd: u64,
    pub ssthresh: u64,
    pub srtt_us: u64,
    pub min_rtt_us: u64,
    pub cc: Option<Metrics>,
}

/// A sift connection.
#[derive(Debug)]
pub struct Connection {
    side: Side,
}

impl Connection {
    /// Starts a client connection to `remote`.
    pub fn connect(
        _config: Config,
        _local: SocketAddr,
        _remote: SocketAddr,
        _now: Instant,
    ) -> Result<Self, Error> {
        Ok(Self { side: Side::Client })
    }

    /// A server connection that waits for the client's first Initial from
    /// `remote`.
    pub fn accept(
        _config: Config,
        _local: SocketAddr,
        _remote: SocketAddr,
        _now: Instant,
    ) -> Result<Self, Error> {
        Ok(Self { side: Side::Server })
    }

    /// Processes one datagram. Damaged or unknown packets are counted, not
    /// errors; `Err` means the connection is closed.
    pub fn recv(&mut self, datagram: &mut [u8], _info: RecvInfo) -> Result<usize, Error> {
        Ok(datagram.len())
    }

    /// Writes the next datagram into `out`. `Ok(None)`: nothing to send now.
    pub fn send(
        &mut self,
        _out: &mut [u8],
        _now: Instant,
    ) -> Result<Option<(usize, SendInfo)>, Error> {
        Ok(None)
    }

    /// Time until `on_timeout` must be called, if a timer is armed.
    pub fn timeout(&self, _now: Instant) -> Option<Duration> {
        None
    }

    /// Fires expired timers (loss detection, PTO, ACK delay, idle, pacing).
    pub fn on_timeout(&mut self, _now: Instant) {}

    /// Which end this is.
    pub fn side(&self) -> Side {
        self.side
    }

    /// The handshake has completed.
    pub fn is_established(&self) -> bool {
        false
    }

    /// The connection is closed (or draining) and will send nothing more.
    pub fn is_closed(&self) -> bool {
        false
    }

    /// Opens a bidirectional stream.
    pub fn stream_open_bi(&mut self) -> Result<StreamId, Error> {
        Err(Error::Closed)
    }

    /// Queues `data` on a stream; returns how many bytes were accepted.
    pub fn stream_send(&mut self, _id: StreamId, _data: &[u8], _fin: bool) -> Result<usize, Error> {
        Err(Error::Closed)
    }

    /// Reads in-order bytes from a stream: `(bytes read, fin reached)`.
    pub fn stream_recv(&mut self, _id: StreamId, _buf: &mut [u8]) -> Result<(usize, bool), Error> {
        Err(Error::Closed)
    }

    /// Streams with data (or a FIN or reset) to read.
    pub fn readable(&self) -> Vec<StreamId> {
        Vec::new()
    }

    /// Counters and estimates.
    pub fn stats(&self) -> Stats {
        Stats::default()
    }
}
