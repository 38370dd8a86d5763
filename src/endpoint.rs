//! The endpoint: many connections over one socket address.
//!
//! Owns: demultiplexing datagrams to connections by destination connection
//! ID, creating server connections from new client Initials (and queueing
//! them for `accept`), the connection limit, and fair round-robin
//! transmission across connections.
//! Must not: touch a socket, read a clock or use an unseeded RNG — like
//! `Connection` it is sans-IO, driven by `io` (real sockets) or a test.
//!
//! What is dropped, and counted in [`EndpointStats`]:
//! - datagrams whose first packet header does not parse;
//! - a new client Initial in a datagram shorter than 1200 bytes
//!   (RFC 9000 §14.1: it cannot prove the path carries full-size datagrams,
//!   and answering it would amplify);
//! - packets for a connection ID we do not know (short headers, and long
//!   headers other than a client's first Initial). RFC 9000 §10.3 answers
//!   those with a stateless reset; sift does not send one yet;
//! - datagrams whose source address is not the address of the connection
//!   they name (no connection migration);
//! - new Initials beyond the connection limit.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::conn::MIN_INITIAL_DATAGRAM;
use crate::wire::{parse_header, ConnectionId, PacketType};
use crate::{Config, Connection, Error, RecvInfo};

/// Connections one server endpoint holds at once unless told otherwise.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// How long a server connection may take to complete its handshake before
/// the endpoint forgets it. Without a limit a single forged Initial would
/// hold a connection slot forever (RFC 9000 §21.6 asks servers to bound
/// the state spent on unvalidated clients).
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Names one connection of an [`Endpoint`]. Handles are never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnectionHandle(u64);

impl ConnectionHandle {
    /// The handle's number, for logs.
    pub fn index(self) -> u64 {
        self.0
    }
}

/// What an endpoint did with the datagrams it was given. Field names are
/// stable, like [`crate::Stats`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndpointStats {
    /// Datagrams handed to `recv`.
    pub datagrams_received: u64,
    /// Datagrams delivered to a connection.
    pub datagrams_routed: u64,
    /// Server connections created from client Initials.
    pub connections_accepted: u64,
    /// First packet header did not parse.
    pub dropped_malformed: u64,
    /// New client Initials in datagrams shorter than 1200 bytes.
    pub dropped_small_initial: u64,
    /// Packets naming a connection ID this endpoint does not know.
    pub dropped_unknown_connection: u64,
    /// Datagrams from an address other than their connection's peer.
    pub dropped_wrong_address: u64,
    /// New client Initials refused because the endpoint was full.
    pub dropped_connection_limit: u64,
    /// Server connections forgotten because their handshake did not
    /// complete in time.
    #[serde(default)]
    pub handshakes_timed_out: u64,
}

/// Why the endpoint could not do what was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndpointError {
    /// The connection could not be created (e.g. an invalid `Config`).
    #[error(transparent)]
    Connection(#[from] Error),
    /// The new connection drew a connection ID another connection already
    /// uses (2^-64 odds per pair: a broken seed).
    #[error("connection ID {0} is already in use on this endpoint")]
    ConnectionIdInUse(ConnectionId),
    /// The endpoint holds `limit` connections already.
    #[error("the endpoint already holds {limit} connections")]
    TooManyConnections { limit: usize },
}

/// One connection and the connection IDs that route to it.
#[derive(Debug)]
struct Entry {
    connection: Connection,
    /// Our own connection ID, and for a server connection also the client's
    /// first destination ID (its Initials use it until it learns ours).
    routes: Vec<ConnectionId>,
    /// Server connections: forgotten if not established by then.
    handshake_deadline: Option<Instant>,
}

impl Entry {
    /// The handshake deadline while it still applies.
    fn pending_handshake_deadline(&self) -> Option<Instant> {
        self.handshake_deadline
            .filter(|_| !self.connection.is_established() && !self.connection.is_closed())
    }
}

/// Many connections over one local address, demultiplexed by destination
/// connection ID. A client endpoint (`server: None`) only has the
/// connections it made with [`Endpoint::connect`]; a server endpoint also
/// creates one for each new client Initial.
#[derive(Debug)]
pub struct Endpoint {
    local: SocketAddr,
    server: Option<Config>,
    max_connections: usize,
    handshake_timeout: Duration,
    /// A BTreeMap so iteration (timers, round-robin) is in handle order and
    /// runs repeat exactly.
    connections: BTreeMap<ConnectionHandle, Entry>,
    routes: HashMap<ConnectionId, ConnectionHandle>,
    next_handle: u64,
    /// The first handle `poll_transmit` asks next.
    transmit_cursor: ConnectionHandle,
    incoming: VecDeque<ConnectionHandle>,
    stats: EndpointStats,
}

/// SplitMix64 (Steele, Lea & Flood 2014): a well-mixed per-connection seed
/// from the configured seed and the handle, so every connection draws
/// different connection IDs while runs still repeat for a given seed.
fn mix_seed(seed: u64, handle: ConnectionHandle) -> u64 {
    let mut z = seed.wrapping_add(handle.0.wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Endpoint {
    /// An endpoint at `local`. With `server: Some(config)` it accepts new
    /// connections, each with a copy of `config` (its `rng_seed` mixed with
    /// the connection's handle).
    pub fn new(local: SocketAddr, server: Option<Config>) -> Self {
        Self {
            local,
            server,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            connections: BTreeMap::new(),
            routes: HashMap::new(),
            next_handle: 0,
            transmit_cursor: ConnectionHandle(0),
            incoming: VecDeque::new(),
            stats: EndpointStats::default(),
        }
    }

    /// Limits how many connections (including closed ones not yet removed)
    /// the endpoint holds; further client Initials are dropped.
    pub fn with_max_connections(mut self, max_connections: usize) -> Self {
        self.max_connections = max_connections;
        self
    }

    /// How long a server connection may take to complete its handshake
    /// before it is removed (see [`DEFAULT_HANDSHAKE_TIMEOUT`]).
    pub fn with_handshake_timeout(mut self, handshake_timeout: Duration) -> Self {
        self.handshake_timeout = handshake_timeout;
        self
    }

    /// The address this endpoint receives on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Whether new client connections are accepted.
    pub fn is_server(&self) -> bool {
        self.server.is_some()
    }

    /// Counters of routed and dropped datagrams.
    pub fn stats(&self) -> &EndpointStats {
        &self.stats
    }

    /// Connections held (open or closed, until removed).
    pub fn len(&self) -> usize {
        self.connections.len()
    }

    /// No connections are held.
    pub fn is_empty(&self) -> bool {
        self.connections.is_empty()
    }

    /// Every connection's handle, in creation order.
    pub fn handles(&self) -> impl Iterator<Item = ConnectionHandle> + '_ {
        self.connections.keys().copied()
    }

    /// Starts a client connection to `remote`. Its connection IDs come from
    /// `config.rng_seed` mixed with the new handle.
    pub fn connect(
        &mut self,
        config: Config,
        remote: SocketAddr,
        now: Instant,
    ) -> Result<ConnectionHandle, EndpointError> {
        if self.connections.len() >= self.max_connections {
            return Err(EndpointError::TooManyConnections {
                limit: self.max_connections,
            });
        }
        let handle = ConnectionHandle(self.next_handle);
        let config = Config {
            rng_seed: mix_seed(config.rng_seed, handle),
            ..config
        };
        let connection = Connection::connect(config, self.local, remote, now)?;
        // A client's handshake wait is its application's business.
        self.insert(handle, connection, None, None)?;
        Ok(handle)
    }

    fn insert(
        &mut self,
        handle: ConnectionHandle,
        connection: Connection,
        client_initial_dcid: Option<ConnectionId>,
        handshake_deadline: Option<Instant>,
    ) -> Result<(), EndpointError> {
        let mut routes = vec![connection.local_cid()];
        routes.extend(client_initial_dcid);
        if let Some(taken) = routes.iter().find(|cid| self.routes.contains_key(cid)) {
            return Err(EndpointError::ConnectionIdInUse(*taken));
        }
        for cid in &routes {
            self.routes.insert(*cid, handle);
        }
        self.connections.insert(
            handle,
            Entry {
                connection,
                routes,
                handshake_deadline,
            },
        );
        self.next_handle += 1;
        Ok(())
    }

    /// Hands one received datagram to its connection, creating a server
    /// connection for a new client Initial. Returns the connection it went
    /// to; `None` if it was dropped (see the module docs and `stats`).
    pub fn recv(
        &mut self,
        datagram: &mut [u8],
        from: SocketAddr,
        now: Instant,
    ) -> Option<ConnectionHandle> {
        self.stats.datagrams_received += 1;
        let (ty, dcid) = match parse_header(datagram) {
            Ok(header) => (header.ty, header.dcid),
            Err(error) => {
                tracing::trace!(%from, %error, "dropping a datagram whose header does not parse");
                self.stats.dropped_malformed += 1;
                return None;
            }
        };
        let handle = match self.routes.get(&dcid) {
            Some(&handle) => handle,
            None if ty == PacketType::Initial && self.server.is_some() => {
                self.accept_initial(datagram.len(), dcid, from, now)?
            }
            None => {
                tracing::trace!(%from, %dcid, ?ty, "dropping a packet for an unknown connection");
                self.stats.dropped_unknown_connection += 1;
                return None;
            }
        };
        let entry = self.connections.get_mut(&handle)?;
        if entry.connection.remote() != from {
            tracing::debug!(%from, expected = %entry.connection.remote(), "dropping a datagram from the wrong address");
            self.stats.dropped_wrong_address += 1;
            return None;
        }
        let info = RecvInfo {
            from,
            to: self.local,
            now,
        };
        // `Err(Closed)` means the connection is already closed: the datagram
        // is simply too late.
        let _ = entry.connection.recv(datagram, info);
        self.stats.datagrams_routed += 1;
        Some(handle)
    }

    /// Creates a server connection for a client's first Initial.
    fn accept_initial(
        &mut self,
        datagram_len: usize,
        client_dcid: ConnectionId,
        from: SocketAddr,
        now: Instant,
    ) -> Option<ConnectionHandle> {
        if datagram_len < MIN_INITIAL_DATAGRAM {
            tracing::debug!(%from, datagram_len, "dropping a client Initial shorter than 1200 bytes");
            self.stats.dropped_small_initial += 1;
            return None;
        }
        if self.connections.len() >= self.max_connections {
            tracing::debug!(%from, limit = self.max_connections, "endpoint full: dropping a new client Initial");
            self.stats.dropped_connection_limit += 1;
            return None;
        }
        let template = self.server.as_ref()?;
        let handle = ConnectionHandle(self.next_handle);
        let config = Config {
            rng_seed: mix_seed(template.rng_seed, handle),
            ..template.clone()
        };
        let connection = match Connection::accept(config, self.local, from, now) {
            Ok(connection) => connection,
            Err(error) => {
                tracing::warn!(%error, "cannot accept connections with this server config");
                self.stats.dropped_connection_limit += 1;
                return None;
            }
        };
        // A timeout too large for the clock means no deadline.
        let deadline = now.checked_add(self.handshake_timeout);
        if let Err(error) = self.insert(handle, connection, Some(client_dcid), deadline) {
            tracing::warn!(%error, %from, "dropping a new client Initial");
            self.stats.dropped_unknown_connection += 1;
            return None;
        }
        self.stats.connections_accepted += 1;
        self.incoming.push_back(handle);
        Some(handle)
    }

    /// The next datagram to send, from the connections in turn (one
    /// datagram each, round-robin), written into `buf`: its length and
    /// destination. `None` when no connection has anything to send now.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<(usize, SocketAddr)> {
        let mut cursor = self.transmit_cursor;
        for _ in 0..self.connections.len() {
            let handle = self
                .connections
                .range(cursor..)
                .next()
                .or_else(|| self.connections.iter().next())
                .map(|(handle, _)| *handle)?;
            cursor = ConnectionHandle(handle.0 + 1);
            if let Some(sent) = self.poll_transmit_on(handle, now, buf) {
                self.transmit_cursor = cursor;
                return Some(sent);
            }
        }
        None
    }

    /// The next datagram of one connection (for drivers that batch a
    /// connection's datagrams into one system call).
    pub fn poll_transmit_on(
        &mut self,
        handle: ConnectionHandle,
        now: Instant,
        buf: &mut [u8],
    ) -> Option<(usize, SocketAddr)> {
        let entry = self.connections.get_mut(&handle)?;
        match entry.connection.send(buf, now) {
            Ok(Some((len, info))) => Some((len, info.to)),
            // Closed connections send nothing more.
            Ok(None) | Err(_) => None,
        }
    }

    /// The earliest timer of any connection (or handshake deadline).
    pub fn timeout(&self, now: Instant) -> Option<Instant> {
        self.connections
            .values()
            .flat_map(|entry| {
                let timer = entry.connection.timeout(now).map(|wait| now + wait);
                [timer, entry.pending_handshake_deadline()]
            })
            .flatten()
            .min()
    }

    /// Fires the expired timers of every connection, and removes server
    /// connections whose handshake did not complete in time.
    pub fn on_timeout(&mut self, now: Instant) {
        let mut expired = Vec::new();
        for (handle, entry) in &mut self.connections {
            if entry.pending_handshake_deadline().is_some_and(|d| d <= now) {
                expired.push(*handle);
                continue;
            }
            if entry
                .connection
                .timeout(now)
                .is_some_and(|wait| wait.is_zero())
            {
                entry.connection.on_timeout(now);
            }
        }
        for handle in expired {
            tracing::debug!(
                handle = handle.0,
                "server handshake timed out: forgetting the connection"
            );
            self.stats.handshakes_timed_out += 1;
            self.remove(handle);
        }
    }

    /// The next connection a client opened to this server, not yet handed
    /// out. It may still be handshaking (see `Connection::is_established`).
    pub fn accept(&mut self) -> Option<ConnectionHandle> {
        while let Some(handle) = self.incoming.pop_front() {
            if self.connections.contains_key(&handle) {
                return Some(handle);
            }
        }
        None
    }

    /// The connection behind `handle`, unless it was removed.
    pub fn connection(&mut self, handle: ConnectionHandle) -> Option<&mut Connection> {
        self.connections
            .get_mut(&handle)
            .map(|entry| &mut entry.connection)
    }

    /// Read-only access to a connection.
    pub fn connection_ref(&self, handle: ConnectionHandle) -> Option<&Connection> {
        self.connections.get(&handle).map(|entry| &entry.connection)
    }

    /// Removes one connection and its routes; later packets for it are
    /// dropped as unknown.
    pub fn remove(&mut self, handle: ConnectionHandle) -> Option<Connection> {
        let entry = self.connections.remove(&handle)?;
        for cid in &entry.routes {
            self.routes.remove(cid);
        }
        Some(entry.connection)
    }

    /// Removes every closed (draining or closed) connection and returns
    /// them, so their close reasons and stats can still be read.
    pub fn remove_closed(&mut self) -> Vec<(ConnectionHandle, Connection)> {
        let closed: Vec<ConnectionHandle> = self
            .connections
            .iter()
            .filter(|(_, entry)| entry.connection.is_closed())
            .map(|(handle, _)| *handle)
            .collect();
        closed
            .into_iter()
            .filter_map(|handle| self.remove(handle).map(|c| (handle, c)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::crypto::{seal_packet, NullProtection};
    use crate::wire::{Frame, Header, VERSION};

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    const SERVER: u16 = 4433;

    fn config(seed: u64) -> Config {
        Config {
            rng_seed: seed,
            ..Config::default()
        }
    }

    /// Endpoints joined by a lossless, instant network, on a virtual clock.
    struct Net {
        endpoints: Vec<Endpoint>,
        now: Instant,
    }

    impl Net {
        fn new(endpoints: Vec<Endpoint>) -> Self {
            Self {
                endpoints,
                now: Instant::now(),
            }
        }

        /// Delivers everything every endpoint has to send, firing timers
        /// when the network is quiet, until `done` holds (or a bound of
        /// virtual time passes). Returns whether `done` held.
        fn run_until(&mut self, mut done: impl FnMut(&mut [Endpoint]) -> bool) -> bool {
            let deadline = self.now + Duration::from_secs(5);
            let mut buf = vec![0u8; 65_535];
            while self.now < deadline {
                if done(&mut self.endpoints) {
                    return true;
                }
                let mut moved = false;
                for index in 0..self.endpoints.len() {
                    let from = self.endpoints[index].local_addr();
                    while let Some((len, to)) =
                        self.endpoints[index].poll_transmit(self.now, &mut buf)
                    {
                        moved = true;
                        if let Some(peer) = self.endpoints.iter_mut().find(|e| e.local_addr() == to)
                        {
                            peer.recv(&mut buf[..len], from, self.now);
                        }
                    }
                }
                if !moved {
                    let next = self
                        .endpoints
                        .iter()
                        .filter_map(|e| e.timeout(self.now))
                        .min();
                    let Some(next) = next else { break };
                    self.now = next.max(self.now);
                    for endpoint in &mut self.endpoints {
                        endpoint.on_timeout(self.now);
                    }
                }
            }
            done(&mut self.endpoints)
        }
    }

    fn established(endpoint: &mut Endpoint, handle: ConnectionHandle) -> bool {
        endpoint
            .connection(handle)
            .is_some_and(|c| c.is_established())
    }

    /// A valid Initial packet (tags check) carrying a PING padded to
    /// `datagram_len` bytes, from a client that picked `dcid`.
    fn initial_datagram(dcid: ConnectionId, datagram_len: usize) -> Vec<u8> {
        let header = Header {
            ty: PacketType::Initial,
            version: VERSION,
            dcid,
            scid: ConnectionId::new(&[7; 8]).expect("8 bytes"),
            token: &[],
            packet_number: 0,
            payload_len: 0,
            key_phase: false,
        };
        let mut frames = Vec::new();
        Frame::Ping.encode(&mut frames);
        let mut datagram = Vec::new();
        // The payload length varint grows as we pad: settle in a few rounds.
        for _ in 0..3 {
            datagram.clear();
            seal_packet(&header, &frames, &NullProtection, &mut datagram);
            let short_by = datagram_len.saturating_sub(datagram.len());
            let over_by = datagram.len().saturating_sub(datagram_len);
            frames.resize(frames.len() + short_by - over_by.min(frames.len() - 1), 0);
        }
        datagram
    }

    #[test]
    fn server_demultiplexes_two_clients_by_connection_id() {
        let server = Endpoint::new(addr(SERVER), Some(config(1)));
        let mut client_a = Endpoint::new(addr(1001), None);
        let mut client_b = Endpoint::new(addr(1002), None);
        let a = client_a
            .connect(config(2), addr(SERVER), Instant::now())
            .unwrap();
        let b = client_b
            .connect(config(3), addr(SERVER), Instant::now())
            .unwrap();
        let mut net = Net::new(vec![server, client_a, client_b]);

        assert!(net.run_until(|e| established(&mut e[1], a) && established(&mut e[2], b)));
        for (index, handle, message) in [(1, a, &b"from a"[..]), (2, b, b"from b")] {
            let connection = net.endpoints[index].connection(handle).unwrap();
            let stream = connection.stream_open_bi().unwrap();
            connection.stream_send(stream, message, true).unwrap();
        }
        let mut received: Vec<(SocketAddr, Vec<u8>)> = Vec::new();
        assert!(net.run_until(|e| {
            while let Some(handle) = e[0].accept() {
                let connection = e[0].connection(handle).unwrap();
                received.push((connection.remote(), Vec::new()));
            }
            for (index, handle) in e[0].handles().collect::<Vec<_>>().into_iter().enumerate() {
                let connection = e[0].connection(handle).unwrap();
                if let Some(stream) = connection.readable().first().copied() {
                    let mut buf = [0u8; 64];
                    if let Ok((len, _)) = connection.stream_recv(stream, &mut buf) {
                        if let Some(slot) = received.get_mut(index) {
                            slot.1.extend_from_slice(&buf[..len]);
                        }
                    }
                }
            }
            received.len() == 2 && received.iter().all(|(_, data)| data.len() == 6)
        }));
        received.sort();
        assert_eq!(
            received,
            vec![
                (addr(1001), b"from a".to_vec()),
                (addr(1002), b"from b".to_vec())
            ]
        );
        assert_eq!(net.endpoints[0].stats().connections_accepted, 2);
        assert_eq!(net.endpoints[0].stats().dropped_unknown_connection, 0);
    }

    #[test]
    fn client_initial_smaller_than_1200_bytes_creates_no_connection() {
        let mut server = Endpoint::new(addr(SERVER), Some(config(1)));
        let dcid = ConnectionId::new(&[9; 8]).unwrap();

        let mut small = initial_datagram(dcid, 1199);
        assert_eq!(
            small.len(),
            1199,
            "the packet must be exactly one byte short"
        );
        assert_eq!(server.recv(&mut small, addr(1001), Instant::now()), None);
        assert_eq!(server.stats().dropped_small_initial, 1);
        assert!(server.is_empty());
        assert_eq!(server.accept(), None);

        // The same Initial at full size is accepted: the size alone decided.
        let mut full = initial_datagram(dcid, 1200);
        assert!(server.recv(&mut full, addr(1001), Instant::now()).is_some());
        assert_eq!(server.len(), 1);
        assert!(server.accept().is_some());
    }

    #[test]
    fn server_forgets_a_connection_whose_handshake_never_completes() {
        let start = Instant::now();
        let mut server = Endpoint::new(addr(SERVER), Some(config(1)))
            .with_handshake_timeout(Duration::from_secs(2));
        // A well-formed Initial with no handshake in it: nothing follows.
        let mut forged = initial_datagram(ConnectionId::new(&[5; 8]).unwrap(), 1200);
        server.recv(&mut forged, addr(1001), start).unwrap();
        assert_eq!(server.len(), 1);
        // The deadline is a timer: the driver will wake for it.
        assert!(server
            .timeout(start)
            .is_some_and(|at| at <= start + Duration::from_secs(2)));

        server.on_timeout(start + Duration::from_millis(1999));
        assert_eq!(server.len(), 1, "not before the deadline");
        server.on_timeout(start + Duration::from_secs(2));
        assert!(server.is_empty());
        assert_eq!(server.stats().handshakes_timed_out, 1);
        assert_eq!(
            server.accept(),
            None,
            "a forgotten connection is not handed out"
        );
    }

    #[test]
    fn handshake_timeout_beyond_the_clock_means_no_deadline() {
        let mut server =
            Endpoint::new(addr(SERVER), Some(config(1))).with_handshake_timeout(Duration::MAX);
        let mut initial = initial_datagram(ConnectionId::new(&[6; 8]).unwrap(), 1200);
        let now = Instant::now();
        assert!(server.recv(&mut initial, addr(1001), now).is_some());
        server.on_timeout(now + Duration::from_secs(3600));
        assert_eq!(server.len(), 1);
    }

    #[test]
    fn short_header_packet_for_an_unknown_connection_id_is_dropped() {
        let mut server = Endpoint::new(addr(SERVER), Some(config(1)));
        let header = Header {
            ty: PacketType::OneRtt,
            version: VERSION,
            dcid: ConnectionId::new(&[0xab; 8]).unwrap(),
            scid: ConnectionId::EMPTY,
            token: &[],
            packet_number: 5,
            payload_len: 0,
            key_phase: false,
        };
        let mut frames = Vec::new();
        Frame::Ping.encode(&mut frames);
        let mut datagram = Vec::new();
        seal_packet(&header, &frames, &NullProtection, &mut datagram);

        assert_eq!(server.recv(&mut datagram, addr(1001), Instant::now()), None);
        assert_eq!(server.stats().dropped_unknown_connection, 1);
        assert!(server.is_empty(), "only an Initial may create a connection");
    }

    #[test]
    fn client_endpoint_never_creates_connections_from_initials() {
        let mut client = Endpoint::new(addr(1001), None);
        let mut datagram = initial_datagram(ConnectionId::new(&[1; 8]).unwrap(), 1200);
        assert_eq!(
            client.recv(&mut datagram, addr(SERVER), Instant::now()),
            None
        );
        assert_eq!(client.stats().dropped_unknown_connection, 1);
        assert!(client.is_empty());
    }

    #[test]
    fn garbage_datagram_is_counted_as_malformed() {
        let mut server = Endpoint::new(addr(SERVER), Some(config(1)));
        let mut garbage = vec![0xc3; 1300];
        assert_eq!(server.recv(&mut garbage, addr(1001), Instant::now()), None);
        assert_eq!(server.stats().dropped_malformed, 1);
        assert!(server.is_empty());
    }

    #[test]
    fn datagram_from_another_address_than_its_connection_is_dropped() {
        let server = Endpoint::new(addr(SERVER), Some(config(1)));
        let mut client = Endpoint::new(addr(1001), None);
        let handle = client
            .connect(config(2), addr(SERVER), Instant::now())
            .unwrap();
        let mut net = Net::new(vec![server, client]);
        assert!(net.run_until(|e| established(&mut e[1], handle)));

        let connection = net.endpoints[1].connection(handle).unwrap();
        let stream = connection.stream_open_bi().unwrap();
        connection.stream_send(stream, b"hello", false).unwrap();
        let mut buf = vec![0u8; 2000];
        let now = net.now;
        let (len, to) = net.endpoints[1].poll_transmit(now, &mut buf).unwrap();
        assert_eq!(to, addr(SERVER));
        let before = net.endpoints[0].stats().datagrams_routed;
        assert_eq!(
            net.endpoints[0].recv(&mut buf[..len], addr(6666), now),
            None
        );
        assert_eq!(net.endpoints[0].stats().dropped_wrong_address, 1);
        assert_eq!(net.endpoints[0].stats().datagrams_routed, before);
    }

    #[test]
    fn initials_beyond_the_connection_limit_are_dropped() {
        let server = Endpoint::new(addr(SERVER), Some(config(1))).with_max_connections(1);
        let mut client_a = Endpoint::new(addr(1001), None);
        let mut client_b = Endpoint::new(addr(1002), None);
        let a = client_a
            .connect(config(2), addr(SERVER), Instant::now())
            .unwrap();
        let b = client_b
            .connect(config(3), addr(SERVER), Instant::now())
            .unwrap();
        let mut net = Net::new(vec![server, client_a, client_b]);

        assert!(net.run_until(|e| established(&mut e[1], a)));
        assert!(!established(&mut net.endpoints[2], b));
        assert_eq!(net.endpoints[0].len(), 1);
        assert!(net.endpoints[0].stats().dropped_connection_limit >= 1);
    }

    #[test]
    fn poll_transmit_takes_turns_between_connections() {
        let server = Endpoint::new(addr(SERVER), Some(config(1)));
        let mut clients = Endpoint::new(addr(1001), None);
        let a = clients
            .connect(config(2), addr(SERVER), Instant::now())
            .unwrap();
        let b = clients
            .connect(config(3), addr(SERVER), Instant::now())
            .unwrap();
        let mut net = Net::new(vec![server, clients]);
        assert!(net.run_until(|e| established(&mut e[1], a) && established(&mut e[1], b)));

        // Both connections queue more than one datagram's worth.
        let mut order = Vec::new();
        for handle in [a, b] {
            let connection = net.endpoints[1].connection(handle).unwrap();
            let stream = connection.stream_open_uni().unwrap();
            connection
                .stream_send(stream, &[0x55; 5000], false)
                .unwrap();
        }
        let mut buf = vec![0u8; 2000];
        let now = net.now;
        for _ in 0..4 {
            let before: Vec<u64> = [a, b]
                .iter()
                .map(|h| {
                    net.endpoints[1]
                        .connection_ref(*h)
                        .unwrap()
                        .stats()
                        .packets_sent
                })
                .collect();
            net.endpoints[1].poll_transmit(now, &mut buf).unwrap();
            let sender = [a, b]
                .iter()
                .zip(before)
                .find(|(h, sent)| {
                    net.endpoints[1]
                        .connection_ref(**h)
                        .unwrap()
                        .stats()
                        .packets_sent
                        > *sent
                })
                .map(|(h, _)| *h)
                .unwrap();
            order.push(sender);
        }
        assert_eq!(order, vec![a, b, a, b]);
    }

    #[test]
    fn each_connection_draws_its_own_connection_ids_from_one_seed() {
        let mut clients = Endpoint::new(addr(1001), None);
        let a = clients
            .connect(config(7), addr(SERVER), Instant::now())
            .unwrap();
        let b = clients
            .connect(config(7), addr(SERVER), Instant::now())
            .unwrap();
        let cid_a = clients.connection_ref(a).unwrap().local_cid();
        let cid_b = clients.connection_ref(b).unwrap().local_cid();
        assert_ne!(cid_a, cid_b);

        // And the same seed gives the same IDs again: runs repeat.
        let mut again = Endpoint::new(addr(1001), None);
        let a2 = again
            .connect(config(7), addr(SERVER), Instant::now())
            .unwrap();
        assert_eq!(again.connection_ref(a2).unwrap().local_cid(), cid_a);
    }

    #[test]
    fn removed_connection_no_longer_receives() {
        let server = Endpoint::new(addr(SERVER), Some(config(1)));
        let mut client = Endpoint::new(addr(1001), None);
        let handle = client
            .connect(config(2), addr(SERVER), Instant::now())
            .unwrap();
        let mut net = Net::new(vec![server, client]);
        assert!(net.run_until(|e| established(&mut e[1], handle)));
        let server_handle = net.endpoints[0].handles().next().unwrap();
        assert!(net.endpoints[0].remove(server_handle).is_some());

        let connection = net.endpoints[1].connection(handle).unwrap();
        let stream = connection.stream_open_bi().unwrap();
        connection.stream_send(stream, b"anyone?", false).unwrap();
        let mut buf = vec![0u8; 2000];
        let now = net.now;
        let (len, _) = net.endpoints[1].poll_transmit(now, &mut buf).unwrap();
        assert_eq!(
            net.endpoints[0].recv(&mut buf[..len], addr(1001), now),
            None
        );
        assert_eq!(net.endpoints[0].stats().dropped_unknown_connection, 1);
    }
}
