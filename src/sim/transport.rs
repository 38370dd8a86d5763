//! What the simulator needs from a connection: exactly the sans-IO surface of
//! [`Connection`]. The simulator is generic over it so that its own tests can
//! drive flows with a small scripted transport while the real state machine
//! is elsewhere; production runs always use `Connection`.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::conn::{Config, Connection, Error, RecvInfo, SendInfo, Stats, StreamId};
use crate::recovery::VerdictRecord;

/// The sans-IO connection surface the simulator drives (DESIGN §2).
pub trait Transport: Sized {
    /// Starts a client connection from `local` to `remote`.
    fn connect(
        config: Config,
        local: SocketAddr,
        remote: SocketAddr,
        now: Instant,
    ) -> Result<Self, Error>;
    /// A server connection at `local` waiting for the client at `remote`.
    fn accept(
        config: Config,
        local: SocketAddr,
        remote: SocketAddr,
        now: Instant,
    ) -> Result<Self, Error>;
    /// Processes one received datagram.
    fn recv(&mut self, datagram: &mut [u8], info: RecvInfo) -> Result<usize, Error>;
    /// Writes the next datagram into `out`, with its destination and pacing time.
    fn send(&mut self, out: &mut [u8], now: Instant) -> Result<Option<(usize, SendInfo)>, Error>;
    /// Time until `on_timeout` must be called.
    fn timeout(&self, now: Instant) -> Option<Duration>;
    /// Fires expired timers.
    fn on_timeout(&mut self, now: Instant);
    /// The handshake has completed.
    fn is_established(&self) -> bool;
    /// The connection will send nothing more.
    fn is_closed(&self) -> bool;
    /// Opens a bidirectional stream.
    fn stream_open_bi(&mut self) -> Result<StreamId, Error>;
    /// Queues stream data; may accept fewer bytes than offered.
    fn stream_send(&mut self, id: StreamId, data: &[u8], fin: bool) -> Result<usize, Error>;
    /// Reads in-order stream data: `(bytes read, fin reached)`.
    fn stream_recv(&mut self, id: StreamId, buf: &mut [u8]) -> Result<(usize, bool), Error>;
    /// Streams with something to read.
    fn readable(&self) -> Vec<StreamId>;
    /// Counters and estimates.
    fn stats(&self) -> Stats;
    /// Loss verdicts made since the last call (none for transports without
    /// a classifying controller).
    fn drain_loss_verdicts(&mut self) -> Vec<VerdictRecord> {
        Vec::new()
    }
    /// Whether the connection writes a trace that `annotate` adds to.
    fn is_traced(&self) -> bool {
        false
    }
    /// Adds the simulator's `name` event to the connection's trace.
    fn annotate(&mut self, _now: Instant, _name: &'static str, _data: &serde_json::Value) {}
    /// What this connection saw of its path, for a later one (RFC 9959).
    fn observed_path(&self) -> Option<sift_cc::SavedPath> {
        None
    }
    /// Runs Careful Resume from `saved`; whether it took effect.
    fn resume_path(&mut self, _saved: sift_cc::SavedPath) -> bool {
        false
    }
}

impl Transport for Connection {
    fn connect(
        config: Config,
        local: SocketAddr,
        remote: SocketAddr,
        now: Instant,
    ) -> Result<Self, Error> {
        Connection::connect(config, local, remote, now)
    }

    fn accept(
        config: Config,
        local: SocketAddr,
        remote: SocketAddr,
        now: Instant,
    ) -> Result<Self, Error> {
        Connection::accept(config, local, remote, now)
    }

    fn recv(&mut self, datagram: &mut [u8], info: RecvInfo) -> Result<usize, Error> {
        let result = Connection::recv(self, datagram, info);
        // The simulator delivers by address, not connection ID: nothing
        // to route.
        while self.poll_cid_change().is_some() {}
        result
    }

    fn send(&mut self, out: &mut [u8], now: Instant) -> Result<Option<(usize, SendInfo)>, Error> {
        Connection::send(self, out, now)
    }

    fn timeout(&self, now: Instant) -> Option<Duration> {
        Connection::timeout(self, now)
    }

    fn on_timeout(&mut self, now: Instant) {
        Connection::on_timeout(self, now)
    }

    fn is_established(&self) -> bool {
        Connection::is_established(self)
    }

    fn is_closed(&self) -> bool {
        Connection::is_closed(self)
    }

    fn stream_open_bi(&mut self) -> Result<StreamId, Error> {
        Connection::stream_open_bi(self)
    }

    fn stream_send(&mut self, id: StreamId, data: &[u8], fin: bool) -> Result<usize, Error> {
        Connection::stream_send(self, id, data, fin)
    }

    fn stream_recv(&mut self, id: StreamId, buf: &mut [u8]) -> Result<(usize, bool), Error> {
        Connection::stream_recv(self, id, buf)
    }

    fn readable(&self) -> Vec<StreamId> {
        Connection::readable(self)
    }

    fn observed_path(&self) -> Option<sift_cc::SavedPath> {
        Connection::observed_path(self)
    }

    fn resume_path(&mut self, saved: sift_cc::SavedPath) -> bool {
        Connection::resume_path(self, saved)
    }

    fn stats(&self) -> Stats {
        Connection::stats(self)
    }

    fn drain_loss_verdicts(&mut self) -> Vec<VerdictRecord> {
        Connection::drain_loss_verdicts(self)
    }

    fn is_traced(&self) -> bool {
        Connection::is_traced(self)
    }

    fn annotate(&mut self, now: Instant, name: &'static str, data: &serde_json::Value) {
        Connection::annotate(self, now, name, data)
    }
}
