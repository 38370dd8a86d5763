//! The endpoint: many connections over one socket address.
//!
//! Owns: demultiplexing datagrams to connections by destination connection
//! ID, creating server connections from new client Initials (and queueing
//! them for `accept`), the connection limit, and fair round-robin
//! transmission across connections.
//! Must not: touch a socket, read a clock or use an unseeded RNG — like
//! `Connection` it is sans-IO, driven by `io` (real sockets) or a test.
//!
//! Files: this one routes and accepts; what the endpoint answers without a
//! connection lives beside it — `reset` (stateless reset), `version`
//! (version negotiation), `retry` (asking for and checking Retry) with
//! `token` (what a Retry token holds, sealed under the server secret);
//! `timers` indexes the connections' deadlines and which may send, so a
//! driver turn costs what it touched, not every connection held.
//!
//! What is dropped, and counted in [`EndpointStats`]:
//! - datagrams whose first packet header does not parse;
//! - a new client Initial in a datagram shorter than 1200 bytes
//!   (RFC 9000 §14.1: it cannot prove the path carries full-size datagrams,
//!   and answering it would amplify);
//! - packets for a connection ID we do not know (short headers, and long
//!   headers other than a client's first Initial). A server with a
//!   [`ServerSecret`](crate::crypto::ServerSecret) answers a short-header
//!   one with a stateless reset (below);
//! - datagrams whose source address is not the address of the connection
//!   they name, unless the connection follows a migrating client (a server
//!   connection past its handshake: it then checks that the packet is
//!   genuine and the newest before moving, `conn::path`). Addresses are compared in one
//!   spelling: an IPv4 peer seen by a dual-stack socket as `::ffff:a.b.c.d`
//!   is the same peer as `a.b.c.d` ([`canonical_peer`]);
//! - new Initials beyond the connection limit, once the endpoint is already
//!   refusing [`MAX_REFUSING`] others (below).
//!
//! What the endpoint answers without a connection:
//! - **A full server says so.** A new client Initial beyond the connection
//!   limit gets CONNECTION_REFUSED with the reason "server busy: N clients"
//!   ([`busy_reason`]), sent in Initial keys derived from the client's own
//!   packet and without any TLS work ([`Connection::refuse`]), so the
//!   client can give up or retry at once instead of waiting out a timeout.
//!   At most [`MAX_REFUSING`] refusals are held at a time (each is a small
//!   connection in its closing period); past that, Initials are dropped.
//! - **A bad Retry token is named.** A client Initial carrying a Retry
//!   token of ours that expired or names another connection ID gets
//!   INVALID_TOKEN the same way (RFC 9000 §8.1.2: the client will not take
//!   a second Retry, so silence would only make it wait out its timeout),
//!   counted among the refusals.
//! - **A stateless reset** (RFC 9000 §10.3) for a short-header packet whose
//!   connection ID the server does not know, typically because it
//!   restarted: the datagram is [`RESET_FIRST_BYTE_BITS`] plus unpredictable
//!   bytes, made to look like a short-header packet, ending with the token
//!   the server derived from that connection ID when it issued it. It is
//!   shorter than the packet that caused it (so two endpoints cannot keep
//!   resetting each other) and at most [`MAX_STATELESS_PER_SECOND`] are sent.
//!   Either endpoint recognises a reset by its last 16 bytes, for any
//!   datagram that matches no connection or whose first packet its
//!   connection could not open: the token of a peer connection ID
//!   one of its connections sends to, from that peer's address, compared
//!   in constant time (`reset`). The connection then drains with
//!   [`CloseReason::StatelessReset`](crate::conn::CloseReason).
//! - **Version negotiation** (RFC 9000 §6) for a long header of another
//!   version in a datagram of at least 1200 bytes: the versions this server
//!   speaks, sift v1 and a reserved one, under the same rate limit. A
//!   client connection still waiting for its first packet closes on it
//!   with [`CloseReason::VersionMismatch`](crate::conn::CloseReason), which
//!   names what the server offers.

mod balance;
mod ledger;
mod reset;
mod retry;
mod timers;
mod token;
mod version;

pub use balance::WorkerLoads;
pub use ledger::{TokenClock, TokenLedger, MAX_SPENT_TOKENS};
// Settings the connection config carries and the endpoint acts on; they
// live in `conn` so that it depends only downward.
pub use crate::conn::retry_policy::{RetryPolicy, DEFAULT_RETRY_HALF_OPEN};
pub use crate::conn::token_store::{TokenStore, MAX_REMEMBERED_TOKENS};
use token::{TokenError, ValidToken};
pub use token::{ADDRESS_TOKEN_LIFETIME, CLOCK_TOLERANCE, RETRY_TOKEN_LIFETIME};

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::conn::{canonical_peer, CidChange, MIN_INITIAL_DATAGRAM};
use crate::crypto::format::for_version;
use crate::crypto::ResetToken;
use crate::wire::{
    is_retry, parse_long_invariant, CidSteering, ConnectionId, Ecn, PacketType, ParsedHeader,
    WireError, RESET_TOKEN_LEN, SHORT_HEADER_DCID_LEN,
};
use crate::{Config, Connection, Error, RecvInfo};

/// Connections one server endpoint holds at once unless told otherwise.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// How long a server connection may take to complete its handshake before
/// the endpoint forgets it. Without a limit a single forged Initial would
/// hold a connection slot forever (RFC 9000 §21.6 asks servers to bound
/// the state spent on unvalidated clients). Set per endpoint with
/// [`Endpoint::with_handshake_timeout`]. Not a client's connect wait
/// (`io::CONNECT_TIMEOUT`).
pub const DEFAULT_SERVER_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// The old name of [`DEFAULT_SERVER_HANDSHAKE_TIMEOUT`].
#[deprecated(
    since = "0.1.0",
    note = "renamed `DEFAULT_SERVER_HANDSHAKE_TIMEOUT`: a server's bound on handshakes, not a client's connect wait"
)]
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = DEFAULT_SERVER_HANDSHAKE_TIMEOUT;

/// Busy refusals held at once (each a connection in its closing period).
pub const MAX_REFUSING: usize = 64;
/// Stateless answers (resets and version negotiation) sent per second at
/// most (and in one burst).
pub const MAX_STATELESS_PER_SECOND: u32 = 100;
/// A stateless reset's first byte: a short header's form bits (`01`), the
/// rest unpredictable.
pub const RESET_FIRST_BYTE_BITS: u8 = 0x40;
/// The longest stateless reset sent: about a short-header packet with one
/// small frame, so it looks like one.
const MAX_RESET_LEN: usize = 43;
/// The shortest: 1 byte of form bits, 4 unpredictable bytes, the token
/// (RFC 9000 §10.3's 21-byte minimum, for sift's own smallest packet size
/// a receiver would still examine).
const MIN_RESET_LEN: usize = 1 + 4 + RESET_TOKEN_LEN;
/// Datagrams the endpoint queues on its own account (resets) at most.
const MAX_QUEUED_STATELESS: usize = 64;

/// The reason a full server gives when it refuses a client: stable, so
/// clients can tell "busy, try again" from other refusals.
pub fn busy_reason(clients: usize) -> String {
    format!("server busy: {clients} clients")
}

/// Whether a peer's CONNECTION_REFUSED reason says the server was full
/// (see [`busy_reason`]): worth retrying later.
pub fn is_busy_refusal(reason: &str) -> bool {
    reason.starts_with("server busy:")
}
/// A datagram [`Endpoint::poll_transmit_datagram`] wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transmit {
    /// Its length in the buffer.
    pub len: usize,
    /// Where it goes.
    pub to: SocketAddr,
    /// The local address it leaves from: the endpoint's, or a server's
    /// preferred address (`Config::preferred_address`) once a connection
    /// moved there. A driver with one socket may ignore it.
    pub from: SocketAddr,
    /// Send it without a UDP checksum: its connection offered corruption
    /// notices and its path has lately lost or damaged packets, so a
    /// corrupted copy must reach the peer to be named. Otherwise send it
    /// with a checksum, which lets Linux batch it with segmentation offload.
    /// (`io`'s datapath keeps the checksum to a loopback peer, where it
    /// costs nothing and hides nothing.)
    pub checksum_free: bool,
    /// The ECN codepoint for its IP header (RFC 9000 §13.4): its
    /// connection's choice; not-ECT for the endpoint's own datagrams.
    pub ecn: Ecn,
    /// The connection it belongs to; `None` for the endpoint's own
    /// (stateless resets). A segmentation-offload batch holds one
    /// connection's datagrams only: a multi-worker server's kernel steers
    /// the whole batch by its first datagram's connection ID.
    pub connection: Option<ConnectionHandle>,
}

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
    /// New client Initials dropped because the endpoint was full and
    /// already refusing [`MAX_REFUSING`] others.
    pub dropped_connection_limit: u64,
    /// New clients told "server busy" (CONNECTION_REFUSED) because the
    /// endpoint was full.
    #[serde(default)]
    pub refused_busy: u64,
    /// Stateless resets sent for packets naming unknown connection IDs.
    #[serde(default)]
    pub stateless_resets_sent: u64,
    /// Stateless resets received that ended one of our connections.
    #[serde(default)]
    pub stateless_resets_received: u64,
    /// Server connections forgotten because their handshake did not
    /// complete in time.
    #[serde(default)]
    pub handshakes_timed_out: u64,
    /// Version Negotiation packets sent to clients of other versions.
    #[serde(default)]
    pub version_negotiations_sent: u64,
    /// Version Negotiation packets that reached one of our connections.
    #[serde(default)]
    pub version_negotiations_received: u64,
    /// Retry packets sent to new clients (address validation).
    #[serde(default)]
    pub retries_sent: u64,
    /// Retry packets one of our client connections took.
    #[serde(default)]
    pub retries_received: u64,
    /// Client Initials whose Retry token was ours but expired or named
    /// another connection ID: answered with INVALID_TOKEN (RFC 9000
    /// §8.1.2) and no connection, or dropped while [`MAX_REFUSING`]
    /// refusals are held already.
    #[serde(default)]
    pub dropped_invalid_token: u64,
    /// New clients whose address a NEW_TOKEN token from an earlier
    /// connection validated (no Retry needed).
    #[serde(default)]
    pub validated_by_token: u64,
    /// Connections that resumed from the path state in their client's
    /// token (Careful Resume, RFC 9959).
    #[serde(default)]
    pub careful_resumes: u64,
    /// NEW_TOKEN tokens issued with a saved path state.
    #[serde(default)]
    pub path_states_saved: u64,
    /// NEW_TOKEN tokens refused because they were used before (a replay),
    /// issued before this server started, or found the ledger full: their
    /// clients count as bringing no token.
    #[serde(default)]
    pub spent_address_tokens: u64,
    /// New clients sent to a less busy worker with a Retry (multi-worker
    /// servers; also counted in `retries_sent`).
    #[serde(default)]
    pub moved_to_other_worker: u64,
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
    TooManyConnections {
        /// The endpoint's connection limit.
        limit: usize,
    },
}

/// One connection and the connection IDs that route to it.
#[derive(Debug)]
struct Entry {
    connection: Connection,
    /// Our own connection IDs (the handshake's and those issued since with
    /// NEW_CONNECTION_ID), and for a server connection also the client's
    /// first destination ID (its Initials use it until it learns ours).
    routes: Vec<ConnectionId>,
    /// Server connections: forgotten if not established by then.
    handshake_deadline: Option<Instant>,
    /// A busy refusal, not a connection the application will see.
    refusing: bool,
    /// The peer's stateless reset tokens registered in `reset_tokens`, with
    /// the address they were registered for.
    reset_tokens: Vec<(SocketAddr, ResetToken)>,
    /// The peer address this connection is indexed under in `peers`.
    peer: SocketAddr,
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
    /// The connections whose timers the last `on_timeout` ran.
    timed_out: Vec<ConnectionHandle>,
    max_connections: usize,
    handshake_timeout: Duration,
    /// Payload bytes the socket's receive buffer holds, for connections
    /// whose config names none (`StreamConfig::socket_receive_bytes`).
    socket_receive_bytes: Option<u64>,
    /// Bytes of send buffer shared among the connections
    /// ([`Self::with_send_budget`]); `None`: each keeps its config's.
    send_budget: Option<u64>,
    /// A BTreeMap so iteration (timers, round-robin) is in handle order and
    /// runs repeat exactly.
    connections: BTreeMap<ConnectionHandle, Entry>,
    routes: HashMap<ConnectionId, ConnectionHandle>,
    /// Connections by peer address, for the one packet an ID cannot route:
    /// a 1-RTT packet whose header a bit error damaged (its ID, or its
    /// parse), which the connection may rebuild (`conn/repair.rs`).
    peers: HashMap<SocketAddr, Vec<ConnectionHandle>>,
    next_handle: u64,
    /// The first handle `poll_transmit` asks next.
    transmit_cursor: ConnectionHandle,
    incoming: VecDeque<ConnectionHandle>,
    /// Connections held that are busy refusals.
    refusing: usize,
    /// Our connections by the stateless reset tokens of the peer IDs they
    /// use and the peer's address (a reset must come from the peer's
    /// address), compared in constant time.
    reset_tokens: reset::ResetWatch,
    /// Datagrams the endpoint sends on its own account: stateless resets.
    stateless: VecDeque<(Vec<u8>, SocketAddr)>,
    /// The local address the datagram being handled came to (a server
    /// may receive on its preferred address too): a new connection's.
    recv_to: SocketAddr,
    /// Stateless resets that may still be sent in the current second.
    stateless_credit: u32,
    stateless_credit_since: Option<Instant>,
    /// Unpredictable bytes of stateless resets (seeded: runs repeat).
    rng: ChaCha8Rng,
    /// The clock tokens are dated by and the address tokens spent: shared
    /// by every endpoint of a server, or this endpoint's own from its first
    /// `now` (`with_token_ledger`).
    ledger: Option<TokenLedger>,
    /// Client: the latest NEW_TOKEN token of each server, used once by
    /// the next connection to it (unless the connection's config names a
    /// shared store).
    tokens: TokenStore,
    /// A multi-worker server: every worker's load, to send new clients to
    /// the least busy (`balance`).
    loads: Option<Arc<WorkerLoads>>,
    /// Deadlines and send candidates, by connection (`timers`).
    timers: timers::TimerIndex,
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

/// The header of the first packet in `datagram`, in the layout its version
/// gives it: a long header names its version; a short header's connection
/// ID sits in the same place in every version sift speaks, so routing reads
/// it as sift/1 would and the connection parses the rest.
pub(crate) fn parse_any_header(datagram: &[u8]) -> Result<ParsedHeader<'_>, WireError> {
    match datagram.first() {
        Some(first) if first & 0x80 != 0 => {
            let version = parse_long_invariant(datagram)?.version;
            let format = for_version(version).ok_or(WireError::UnsupportedVersion(version))?;
            format.parse(datagram)
        }
        _ => {
            let dcid = datagram
                .get(1..1 + SHORT_HEADER_DCID_LEN)
                .ok_or(WireError::InvalidHeader("short header too short"))?;
            Ok(ParsedHeader {
                ty: PacketType::OneRtt,
                version: 0,
                dcid: ConnectionId::new(dcid)?,
                scid: ConnectionId::EMPTY,
                token: &[],
                truncated_pn: 0,
                pn_len: 0,
                key_phase: false,
                header_len: 1 + SHORT_HEADER_DCID_LEN,
                payload_len: datagram.len() - 1 - SHORT_HEADER_DCID_LEN,
                packet_len: datagram.len(),
            })
        }
    }
}

impl Endpoint {
    /// An endpoint at `local`. With `server: Some(config)` it accepts new
    /// connections, each with a copy of `config` (its `rng_seed` mixed with
    /// the connection's handle).
    pub fn new(local: SocketAddr, server: Option<Config>) -> Self {
        let seed = server.as_ref().map_or(0, |config| config.rng_seed) ^ 0x7e5e_7e5e;
        let rng = match server.as_ref().and_then(|config| config.entropy) {
            Some(entropy) => entropy.rng(b"endpoint"),
            None => ChaCha8Rng::seed_from_u64(seed),
        };
        Self {
            local,
            server,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            handshake_timeout: DEFAULT_SERVER_HANDSHAKE_TIMEOUT,
            socket_receive_bytes: None,
            send_budget: None,
            connections: BTreeMap::new(),
            routes: HashMap::new(),
            peers: HashMap::new(),
            next_handle: 0,
            transmit_cursor: ConnectionHandle(0),
            incoming: VecDeque::new(),
            refusing: 0,
            timed_out: Vec::new(),
            reset_tokens: reset::ResetWatch::default(),
            stateless: VecDeque::new(),
            recv_to: local,
            stateless_credit: MAX_STATELESS_PER_SECOND,
            stateless_credit_since: None,
            rng,
            ledger: None,
            tokens: TokenStore::new(),
            loads: None,
            timers: timers::TimerIndex::default(),
            stats: EndpointStats::default(),
        }
    }

    /// Makes this endpoint one worker of a multi-worker server (its config's
    /// `cid_steering` names which): it publishes how many clients it serves
    /// in `loads` and sends a new client to a worker that serves fewer, with
    /// a Retry (see `endpoint::balance`; needs the server secret). It holds
    /// its share of the connection limit the loads were made with, so the
    /// workers together hold no more than that limit.
    pub fn with_worker_loads(mut self, loads: Arc<WorkerLoads>) -> Self {
        if let Some(index) = self.worker_index() {
            self.max_connections = loads.share(index);
        }
        self.loads = Some(loads);
        self
    }

    /// Dates tokens by `ledger`'s clock and spends address tokens in it.
    /// Give every endpoint of one server the same ledger (clones share
    /// it): each then accepts the others' Retry and address tokens for
    /// exactly their lifetimes, and an address token only once across
    /// them all. Without one the endpoint keeps its own, its clock read
    /// from its first `now`.
    pub fn with_token_ledger(mut self, ledger: TokenLedger) -> Self {
        self.ledger = Some(ledger);
        self
    }

    /// Limits how many connections (including closed ones not yet removed)
    /// the endpoint holds; further client Initials are dropped.
    pub fn with_max_connections(mut self, max_connections: usize) -> Self {
        self.max_connections = max_connections;
        self
    }

    /// Tells the connections this endpoint makes that its socket's receive
    /// buffer holds `bytes` of payload, unless their config says otherwise:
    /// their receive windows then grow past it only by what the path holds
    /// (`StreamConfig::socket_receive_bytes`). The I/O layer calls it with
    /// what the kernel granted.
    pub fn with_socket_receive_bytes(mut self, bytes: u64) -> Self {
        self.socket_receive_bytes = Some(bytes);
        self
    }

    /// Shares `budget` bytes of send buffer among the connections: each
    /// may buffer at least its share, `budget / connections` (never more
    /// than its `StreamConfig::send_buffer`), and at most that share (never
    /// less than `stream::MIN_SEND_SHARE`), and between the two three
    /// congestion windows as always. One connection keeps its whole 4 MiB
    /// floor and 32 MiB ceiling under a budget of 32 MiB or more; ten
    /// thousand downloads of 1 MB from one server no longer each buffer
    /// the whole response, nor three windows grown while they all queue
    /// behind each other (509 KB per client at the peak before,
    /// `benches/many_downloads.sh --clients 10000`,
    /// docs/notes/2026-12-08-many-clients.md). A connection's share is
    /// set whenever the endpoint hands it a datagram or the application
    /// reaches it, so it follows the count as connections come and go.
    /// `None` (the default): each connection keeps its config's buffers.
    pub fn with_send_budget(mut self, budget: Option<u64>) -> Self {
        self.send_budget = budget;
        self
    }

    /// The share of the endpoint's send budget one connection gets now
    /// (`None`: no budget).
    fn send_share(&self) -> Option<u64> {
        let connections = u64::try_from(self.connections.len().max(1)).unwrap_or(u64::MAX);
        self.send_budget.map(|budget| budget / connections)
    }

    /// How long a server connection may take to complete its handshake
    /// before it is removed (see [`DEFAULT_SERVER_HANDSHAKE_TIMEOUT`]).
    pub fn with_handshake_timeout(mut self, handshake_timeout: Duration) -> Self {
        self.handshake_timeout = handshake_timeout;
        self
    }

    /// The address this endpoint receives on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Reports `local` as the endpoint's address from now on (a driver
    /// that is about to move to a socket there).
    pub fn set_local_addr(&mut self, local: SocketAddr) {
        self.local = local;
    }

    /// Whether the endpoint's connections may all move to a socket at
    /// `local`: the first reason one may not, as an error
    /// ([`Connection::on_local_address_changed`]). A driver asks before it
    /// gives up its socket.
    pub fn may_rebind(&self, local: SocketAddr) -> Result<(), crate::conn::Error> {
        if local == self.local {
            return Ok(());
        }
        match self
            .connections
            .values()
            .find_map(|entry| entry.connection.why_not_move())
        {
            Some(reason) => Err(crate::conn::Error::MigrationRefused(reason)),
            None => Ok(()),
        }
    }

    /// The driver moved the endpoint to a socket at `local` (a client
    /// changing networks): datagrams now come and go there, and each
    /// connection says something from it at once, so that its peer learns
    /// the new address even if the connection was only receiving, and
    /// moves to a connection ID of the peer's it has not used yet.
    /// Refused, with nothing changed, if a connection may not move
    /// ([`Endpoint::may_rebind`]): the driver keeps its old socket.
    pub fn rebound(&mut self, local: SocketAddr) -> Result<(), crate::conn::Error> {
        self.may_rebind(local)?;
        self.local = local;
        let handles: Vec<ConnectionHandle> = self.connections.keys().copied().collect();
        for handle in handles {
            if let Some(entry) = self.connections.get_mut(&handle) {
                // Each one agreed in `may_rebind`.
                let _ = entry.connection.on_local_address_changed(local);
            }
            self.apply_cid_changes(handle);
            self.timers.touch(handle);
        }
        Ok(())
    }

    /// Whether new client connections are accepted.
    pub fn is_server(&self) -> bool {
        self.server.is_some()
    }

    /// Counters of routed and dropped datagrams.
    pub fn stats(&self) -> &EndpointStats {
        &self.stats
    }

    /// Connections held (open or closed, until removed), busy refusals
    /// not counted.
    pub fn len(&self) -> usize {
        self.connections.len() - self.refusing
    }

    /// No connections are held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every connection's handle, in creation order (busy refusals,
    /// which the application never sees, left out).
    pub fn handles(&self) -> impl Iterator<Item = ConnectionHandle> + '_ {
        self.connections
            .iter()
            .filter(|(_, entry)| !entry.refusing)
            .map(|(handle, _)| *handle)
    }

    /// Starts a client connection to `remote`. Its connection IDs come from
    /// `config.rng_seed` mixed with the new handle.
    pub fn connect(
        &mut self,
        config: Config,
        remote: SocketAddr,
        now: Instant,
    ) -> Result<ConnectionHandle, EndpointError> {
        if self.len() >= self.max_connections {
            return Err(EndpointError::TooManyConnections {
                limit: self.max_connections,
            });
        }
        let handle = ConnectionHandle(self.next_handle);
        let store = config.token_store.as_ref().unwrap_or(&self.tokens);
        let token = store.take(remote);
        let mut config = Config {
            rng_seed: mix_seed(config.rng_seed, handle),
            entropy: config
                .entropy
                .map(|entropy| entropy.derive(b"connection", handle.0)),
            ..config
        };
        self.bound_by_socket(&mut config);
        let mut connection = Connection::connect(config, self.local, remote, now)?;
        if let Some(token) = token {
            connection.use_token(token);
        }
        // A client's handshake wait is its application's business.
        self.insert(handle, connection, None, None, false)?;
        Ok(handle)
    }

    /// Gives `config` this endpoint's socket bound, unless it names one.
    fn bound_by_socket(&self, config: &mut Config) {
        let streams = &mut config.streams;
        streams.socket_receive_bytes = streams.socket_receive_bytes.or(self.socket_receive_bytes);
    }

    fn insert(
        &mut self,
        handle: ConnectionHandle,
        connection: Connection,
        client_initial_dcid: Option<ConnectionId>,
        handshake_deadline: Option<Instant>,
        refusing: bool,
    ) -> Result<(), EndpointError> {
        let mut routes = vec![connection.local_cid()];
        routes.extend(client_initial_dcid);
        if let Some(taken) = routes.iter().find(|cid| self.routes.contains_key(cid)) {
            return Err(EndpointError::ConnectionIdInUse(*taken));
        }
        for cid in &routes {
            self.routes.insert(*cid, handle);
        }
        let peer = connection.remote();
        self.peers.entry(peer).or_default().push(handle);
        self.connections.insert(
            handle,
            Entry {
                connection,
                routes,
                handshake_deadline,
                refusing,
                reset_tokens: Vec::new(),
                peer,
            },
        );
        self.refusing += usize::from(refusing);
        self.next_handle += 1;
        self.timers.touch(handle);
        Ok(())
    }

    /// Hands one received datagram to its connection, creating a server
    /// connection for a new client Initial. Returns the connection it went
    /// to; `None` if it was dropped (see the module docs and `stats`). The
    /// datagram counts as not-ECT: a driver that reads the ECN field of
    /// the IP header uses [`Endpoint::recv_with_ecn`].
    pub fn recv(
        &mut self,
        datagram: &mut [u8],
        from: SocketAddr,
        now: Instant,
    ) -> Option<ConnectionHandle> {
        let local = self.local;
        self.recv_on(datagram, from, local, Ecn::NotEct, now)
    }

    /// [`Endpoint::recv`] of a datagram that arrived with `ecn` in its IP
    /// header (RFC 9000 §13.4.1: its connection counts it).
    pub fn recv_with_ecn(
        &mut self,
        datagram: &mut [u8],
        from: SocketAddr,
        ecn: Ecn,
        now: Instant,
    ) -> Option<ConnectionHandle> {
        let local = self.local;
        self.recv_on(datagram, from, local, ecn, now)
    }

    /// [`Endpoint::recv`] for a datagram that came to local address `to`
    /// (the endpoint's own, or a server's preferred address
    /// (`Config::preferred_address`) its driver also receives on) with
    /// `ecn` in its IP header.
    pub fn recv_on(
        &mut self,
        datagram: &mut [u8],
        from: SocketAddr,
        to: SocketAddr,
        ecn: Ecn,
        now: Instant,
    ) -> Option<ConnectionHandle> {
        self.recv_to = to;
        // A dual-stack socket spells an IPv4 peer `::ffff:a.b.c.d`: take the
        // one spelling connections keep, so the address check below, the
        // accepted connection and the logs all agree.
        let from = canonical_peer(from);
        self.stats.datagrams_received += 1;
        // A Retry, a version negotiation or a stateless reset reaches a
        // connection without being routed to it: rare, so every connection
        // is asked again for its timer when one did.
        let unrouted = |stats: &EndpointStats| {
            stats.retries_received
                + stats.version_negotiations_received
                + stats.stateless_resets_received
        };
        let unrouted_before = unrouted(&self.stats);
        // A version this server does not list is answered before its
        // packet type is read: a v2 Retry's type bits are a v1 Initial's.
        let routed = if let Some(version) = self.unoffered_version(datagram) {
            if !self.recognise_reset(datagram, from, now) {
                self.on_other_version(datagram, version, from, now);
            }
            None
        } else if is_retry(datagram) {
            self.on_retry(datagram, from, now);
            None
        } else {
            self.route(datagram, from, now)
        };
        if unrouted(&self.stats) != unrouted_before {
            self.timers.touch_all(self.connections.keys());
        }
        let handle = routed?;
        self.timers.touch(handle);
        let share = self.send_share();
        let entry = self.connections.get_mut(&handle)?;
        if !entry.connection.accepts_from(from) {
            tracing::debug!(%from, expected = %entry.connection.remote(), "dropping a datagram from the wrong address");
            self.stats.dropped_wrong_address += 1;
            return None;
        }
        let info = RecvInfo { from, to, now, ecn };
        entry.connection.set_send_share(share);
        // Opening may overwrite the datagram: keep its last 16 bytes for
        // the reset check below.
        let tail = datagram.last_chunk::<RESET_TOKEN_LEN>().copied();
        // `Err(Closed)` means the connection is already closed: the datagram
        // is simply too late.
        let _ = entry.connection.recv(datagram, info);
        // RFC 9000 §10.3.1: a datagram whose first packet does not open may
        // be a stateless reset, even one that names a connection's own ID.
        if entry.connection.first_packet_unprocessed() {
            if let Some(tail) = tail.filter(|_| datagram.len() >= MIN_RESET_LEN) {
                if self.recognise_reset_tail(&tail, from, now) {
                    // Perhaps another connection with that peer: rare.
                    self.timers.touch_all(self.connections.keys());
                }
            }
        }
        let Some(entry) = self.connections.get_mut(&handle) else {
            return Some(handle);
        };
        if let Some(token) = entry.connection.take_new_token() {
            let store = entry.connection.token_store().unwrap_or(&self.tokens);
            store.insert(from, token);
        }
        // Careful Resume: a server saves what it saw of the path in a fresh
        // token whenever that grew (RFC 9959 §3.1), statelessly.
        if let Some(saved) = entry.connection.path_state_to_save() {
            let peer = entry.connection.remote();
            if let Some(token) = self.address_token(peer, now, Some(saved)) {
                if let Some(entry) = self.connections.get_mut(&handle) {
                    entry.connection.send_new_token(token);
                    self.stats.path_states_saved += 1;
                }
            }
        }
        let Some(entry) = self.connections.get_mut(&handle) else {
            return Some(handle);
        };
        let moved = entry.connection.remote() != entry.peer;
        self.apply_cid_changes(handle);
        if moved {
            self.reindex_peer(handle);
        }
        self.stats.datagrams_routed += 1;
        Some(handle)
    }

    /// The connection a datagram goes to: by its destination ID, a new
    /// server connection for a client's first Initial, or, for a header a
    /// bit error broke, the one connection with that peer, which may rebuild
    /// it (`conn/repair.rs`). `None`: dropped, or answered statelessly.
    fn route(
        &mut self,
        datagram: &[u8],
        from: SocketAddr,
        now: Instant,
    ) -> Option<ConnectionHandle> {
        let header = match parse_any_header(datagram) {
            Ok(header) => header,
            Err(WireError::UnsupportedVersion(version)) => {
                // Another version may shape a stateless reset as a long
                // header: a token we watch at its end makes it one
                // (RFC 9000 §10.3).
                if !self.recognise_reset(datagram, from, now) {
                    self.on_other_version(datagram, version, from, now);
                }
                return None;
            }
            Err(error) => {
                // A stateless reset is unpredictable bytes: it rarely parses.
                if self.recognise_reset(datagram, from, now) {
                    return None;
                }
                let damaged = self.damaged_cid_route(from);
                if damaged.is_none() {
                    tracing::trace!(%from, %error, "dropping a datagram whose header does not parse");
                    self.stats.dropped_malformed += 1;
                }
                return damaged;
            }
        };
        let (ty, dcid) = (header.ty, header.dcid);
        if let Some(&handle) = self.routes.get(&dcid) {
            return Some(handle);
        }
        if ty == PacketType::Initial && self.server.is_some() {
            return self.accept_initial(
                datagram.len(),
                header.version,
                dcid,
                header.scid,
                header.token,
                from,
                now,
            );
        }
        if self.recognise_reset(datagram, from, now) {
            return None;
        }
        if ty == PacketType::OneRtt {
            // An ID a bit error damaged: the connection's header tag check
            // fails and it may rebuild the header.
            if let Some(handle) = self.damaged_cid_route(from) {
                return Some(handle);
            }
        }
        tracing::trace!(%from, %dcid, ?ty, "dropping a packet for an unknown connection");
        self.stats.dropped_unknown_connection += 1;
        if ty == PacketType::OneRtt {
            self.send_stateless_reset(&dcid, datagram.len(), from, now);
        }
        None
    }

    /// Server: the version of a long header in a version sift knows but
    /// this server does not list, for none of its connections: answered
    /// with Version Negotiation like a version sift does not know (RFC
    /// 9000 §6.1), so `--versions` decides what a server speaks. A first
    /// flight in QUIC v1 still reaches a server that lists sift/1 alone,
    /// which moves it to sift/1 without a round trip as it always has
    /// (the same TLS key schedule: `conn::version`).
    fn unoffered_version(&self, datagram: &[u8]) -> Option<u32> {
        let offered = &self.server.as_ref()?.versions;
        let header = parse_long_invariant(datagram).ok()?;
        let version = header.version;
        let convertible = offered.iter().any(|ours| {
            crate::conn::version::compatible(version, *ours)
                && crate::crypto::tls::same_key_schedule(version, *ours)
        });
        if version == crate::wire::VERSION_NEGOTIATION
            || offered.contains(&version)
            || convertible
            || for_version(version).is_none()
        {
            return None;
        }
        let ours = ConnectionId::new(header.dcid)
            .ok()
            .is_some_and(|cid| self.routes.contains_key(&cid));
        (!ours).then_some(version)
    }

    /// Creates a server connection for a client's first Initial (or asks
    /// the client for a Retry first, or refuses it when full).
    #[allow(clippy::too_many_arguments)]
    fn accept_initial(
        &mut self,
        datagram_len: usize,
        version: u32,
        client_dcid: ConnectionId,
        client_scid: ConnectionId,
        token: &[u8],
        from: SocketAddr,
        now: Instant,
    ) -> Option<ConnectionHandle> {
        if datagram_len < MIN_INITIAL_DATAGRAM {
            tracing::debug!(%from, datagram_len, "dropping a client Initial shorter than 1200 bytes");
            self.stats.dropped_small_initial += 1;
            return None;
        }
        let full = self.is_full();
        if full && self.refusing >= MAX_REFUSING {
            tracing::debug!(%from, limit = self.max_connections, "endpoint full: dropping a new client Initial");
            self.stats.dropped_connection_limit += 1;
            return None;
        }
        // A Retry token answers our Retry; a NEW_TOKEN one from an earlier
        // connection validates the address as well; one that is not ours
        // or stale counts as none (RFC 9000 §8.1.3).
        let checked = if token.is_empty() {
            Err(TokenError::NotOurs)
        } else {
            self.check_token(token, &client_dcid, from, now)
        };
        let retried = matches!(
            checked,
            Ok(ValidToken::Retry(_) | ValidToken::RetryFromNewAddress(_))
        );
        let bad_retry = matches!(
            checked,
            Err(TokenError::Expired | TokenError::WrongConnectionId)
        );
        // A client back with an address token stays where it landed:
        // moving it would cost it the round trip the token saves, and the
        // path state the token carries (`balance`).
        let returning = matches!(checked, Ok(ValidToken::Address { .. }));
        // A full worker sends new clients to one with room, too.
        if !retried && !bad_retry && !returning {
            if let Some(worker) = self.lighter_worker() {
                tracing::debug!(%from, worker, "sending a new client to a less busy worker");
                self.stats.moved_to_other_worker += 1;
                self.send_retry(client_dcid, client_scid, version, from, now, Some(worker));
                return None;
            }
        }
        // Only the connection made with an address token spends it: a
        // client refused as busy keeps it for when the server has room.
        let checked = match checked {
            Ok(valid @ ValidToken::Address { issued, name, .. }) if !full => {
                if self.spend_address_token(name, issued, from, now) {
                    Ok(valid)
                } else {
                    Err(TokenError::Spent)
                }
            }
            other => other,
        };
        // A bad Retry token of ours is answered, not dropped (below).
        let mut invalid_token = None;
        let validated = match checked {
            Ok(ValidToken::RetryFromNewAddress(_)) if !full && self.retry_wanted() => {
                // This server proves addresses now: another address with
                // our token (a replay, or a NAT rebinding the client) is
                // asked for a Retry of its own, as if it had none. A client
                // that already took one ignores it and times out.
                tracing::debug!(%from, "a Retry token from another address: asking again");
                self.send_retry(client_dcid, client_scid, version, from, now, None);
                return None;
            }
            Ok(valid) => Some(valid),
            Err(error @ (TokenError::Expired | TokenError::WrongConnectionId)) => {
                self.stats.dropped_invalid_token += 1;
                // RFC 9000 §8.1.2: the client takes no second Retry; tell
                // it now (one small datagram, held as a refusal) rather
                // than leave it to time out.
                if self.refusing >= MAX_REFUSING {
                    tracing::debug!(%from, %error, "dropping a client Initial with a bad Retry token");
                    return None;
                }
                tracing::debug!(%from, %error, "closing with INVALID_TOKEN: a bad Retry token");
                invalid_token = Some(error);
                None
            }
            Err(TokenError::NotOurs | TokenError::Stale | TokenError::Spent) => {
                if !full && self.retry_wanted() {
                    self.send_retry(client_dcid, client_scid, version, from, now, None);
                    return None;
                }
                None
            }
        };
        if retried {
            if let (Some(loads), Some(mine)) = (&self.loads, self.worker_index()) {
                loads.arrived(mine);
            }
        }
        let template = self.server.as_ref()?;
        let handle = ConnectionHandle(self.next_handle);
        let mut config = Config {
            rng_seed: mix_seed(template.rng_seed, handle),
            entropy: template
                .entropy
                .map(|entropy| entropy.derive(b"connection", handle.0)),
            ..template.clone()
        };
        self.bound_by_socket(&mut config);
        let mut connection = match Connection::accept(config, self.recv_to, from, now) {
            Ok(connection) => connection,
            Err(error) => {
                tracing::warn!(%error, "cannot accept connections with this server config");
                self.stats.dropped_connection_limit += 1;
                return None;
            }
        };
        if full {
            tracing::debug!(%from, limit = self.max_connections, "endpoint full: refusing a new client");
            let limit = self
                .loads
                .as_ref()
                .map_or(self.max_connections, |loads| loads.max_connections());
            connection.refuse(busy_reason(limit));
        } else if let Some(error) = invalid_token {
            connection.refuse_token(error.to_string());
        } else {
            match validated {
                Some(ValidToken::Retry(contents)) => {
                    connection.accept_retried(contents.original_dcid, contents.retry_scid, true)
                }
                Some(ValidToken::RetryFromNewAddress(contents)) => {
                    // The Retry only balanced the workers (or the server has
                    // stopped asking since): go on, with the IDs the client
                    // expects and the anti-amplification limit on its new
                    // address until the handshake proves it.
                    tracing::debug!(%from, "a client's address changed after our Retry");
                    connection.accept_retried(contents.original_dcid, contents.retry_scid, false)
                }
                Some(ValidToken::Address { saved, .. }) => {
                    self.stats.validated_by_token += 1;
                    connection.accept_validated();
                    // The token proved the client's IP: the path state it
                    // carries was saved for this client (RFC 9959 §3.1).
                    if saved.is_some_and(|saved| connection.resume_path(saved)) {
                        self.stats.careful_resumes += 1;
                    }
                }
                None => {}
            }
            if let Some(token) = self.address_token(from, now, None) {
                connection.send_new_token(token);
            }
        }
        // A timeout too large for the clock means no deadline.
        let deadline = now.checked_add(self.handshake_timeout);
        let refusing = full || invalid_token.is_some();
        if let Err(error) = self.insert(handle, connection, Some(client_dcid), deadline, refusing) {
            tracing::warn!(%error, %from, "dropping a new client Initial");
            self.stats.dropped_unknown_connection += 1;
            return None;
        }
        if full {
            self.stats.refused_busy += 1;
        } else if invalid_token.is_none() {
            self.stats.connections_accepted += 1;
            self.incoming.push_back(handle);
        }
        self.publish_load();
        Some(handle)
    }

    /// Which worker this is, if it is one of a multi-worker server's.
    fn cid_steering(&self) -> Option<CidSteering> {
        self.server.as_ref()?.cid_steering
    }

    /// This worker's index, if it is one of a multi-worker server's.
    fn worker_index(&self) -> Option<usize> {
        self.cid_steering().map(CidSteering::index)
    }

    /// Whether a new client must be refused: this endpoint holds its
    /// share of the connection limit and, for a worker, the workers
    /// together hold the whole of it (`balance`: a share is a target).
    fn is_full(&self) -> bool {
        if self.len() < self.max_connections {
            return false;
        }
        match (&self.loads, self.worker_index()) {
            (Some(loads), Some(mine)) => {
                self.len() + loads.serving_elsewhere(mine) >= loads.max_connections()
            }
            _ => true,
        }
    }

    /// The worker a new client should go to instead of this one, if this
    /// one is a worker, can send a Retry, and another serves fewer.
    fn lighter_worker(&self) -> Option<usize> {
        let loads = self.loads.as_ref()?;
        let mine = self.worker_index()?;
        self.server.as_ref()?.server_secret.as_ref()?;
        loads.send_away_from(mine)
    }

    /// Tells the other workers how many clients this one serves.
    fn publish_load(&self) {
        if let (Some(loads), Some(mine)) = (&self.loads, self.worker_index()) {
            // `len` already leaves out the clients being refused.
            loads.publish(mine, self.len());
        }
    }

    /// The next datagram to send, from the connections in turn (one
    /// datagram each, round-robin), written into `buf`: its length and
    /// destination. `None` when no connection has anything to send now.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<(usize, SocketAddr)> {
        self.poll_transmit_datagram(now, buf)
            .map(|transmit| (transmit.len, transmit.to))
    }

    /// [`Endpoint::poll_transmit`], saying also whether the datagram is to
    /// leave without a UDP checksum (for drivers that can choose per
    /// datagram; see [`Transmit::checksum_free`]).
    pub fn poll_transmit_datagram(&mut self, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        while let Some((datagram, to)) = self.stateless.pop_front() {
            // A buffer too small for a reset drops it: it is only advice.
            if let Some(out) = buf.get_mut(..datagram.len()) {
                out.copy_from_slice(&datagram);
                return Some(Transmit {
                    len: datagram.len(),
                    to,
                    from: self.local,
                    checksum_free: false,
                    // The endpoint's own datagrams (reset, version
                    // negotiation, Retry) belong to no validated path.
                    ecn: Ecn::NotEct,
                    connection: None,
                });
            }
        }
        // Round-robin over the connections that may have something (the
        // others would find nothing: `timers`), from the cursor on. Each
        // one that finds nothing leaves the active set, so this ends.
        let mut cursor = self.transmit_cursor;
        while let Some(handle) = self.timers.next_active(cursor) {
            if let Some(sent) = self.poll_transmit_on(handle, now, buf) {
                self.transmit_cursor = ConnectionHandle(handle.0 + 1);
                return Some(sent);
            }
            cursor = ConnectionHandle(handle.0 + 1);
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
    ) -> Option<Transmit> {
        let Some(entry) = self.connections.get_mut(&handle) else {
            self.timers.forget(handle);
            return None;
        };
        // Sending moves timers (pacing, loss detection, idle).
        self.timers.touch(handle);
        match entry.connection.send(buf, now) {
            Ok(Some((len, info))) => Some(Transmit {
                len,
                to: info.to,
                from: info.from,
                checksum_free: info.checksum_free,
                ecn: info.ecn,
                connection: Some(handle),
            }),
            // Closed connections send nothing more.
            Ok(None) | Err(_) => {
                self.timers.idle(handle);
                None
            }
        }
    }

    /// The earliest timer of any connection (or handshake deadline). Reads
    /// again only the connections touched since the last call (`timers`).
    pub fn timeout(&mut self, now: Instant) -> Option<Instant> {
        self.timers.refresh(&self.connections, now);
        self.timers.next()
    }

    /// Fires the expired timers of the connections whose deadline has
    /// passed, removes server connections whose handshake did not complete
    /// in time, and forgets busy refusals whose closing period is over.
    pub fn on_timeout(&mut self, now: Instant) {
        self.timers.refresh(&self.connections, now);
        self.timed_out.clear();
        let mut expired = Vec::new();
        let mut refused = Vec::new();
        for handle in self.timers.take_due(now) {
            let Some(entry) = self.connections.get_mut(&handle) else {
                continue;
            };
            self.timers.touch(handle);
            self.timed_out.push(handle);
            if entry.pending_handshake_deadline().is_some_and(|d| d <= now) {
                expired.push(handle);
                continue;
            }
            if entry
                .connection
                .timeout(now)
                .is_some_and(|wait| wait.is_zero())
            {
                entry.connection.on_timeout(now);
            }
            // Busy refusals are the endpoint's own: it forgets them once
            // their closing period is over (the application never saw them).
            if entry.refusing && entry.connection.is_closed() {
                refused.push(handle);
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
        for handle in refused {
            self.remove(handle);
        }
    }

    /// The connections whose timers the last [`Endpoint::on_timeout`] ran
    /// (some may be gone since): the only ones a timer can have closed, so
    /// a host looks at these instead of at every connection.
    pub fn timed_out(&self) -> &[ConnectionHandle] {
        &self.timed_out
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
        // What the caller does may give it something to send or move a timer.
        self.timers.touch(handle);
        let share = self.send_share();
        let connection = &mut self.connections.get_mut(&handle)?.connection;
        connection.set_send_share(share);
        Some(connection)
    }

    /// Read-only access to a connection.
    pub fn connection_ref(&self, handle: ConnectionHandle) -> Option<&Connection> {
        self.connections.get(&handle).map(|entry| &entry.connection)
    }

    /// Makes the route and reset-token changes a connection asks for: IDs
    /// it issued or the peer retired, tokens of the peer's IDs it holds.
    fn apply_cid_changes(&mut self, handle: ConnectionHandle) {
        let Some(entry) = self.connections.get_mut(&handle) else {
            return;
        };
        while let Some(change) = entry.connection.poll_cid_change() {
            match change {
                CidChange::Route(cid) => {
                    if self.routes.contains_key(&cid) {
                        // 2^-64 odds per pair: the peer will find the ID
                        // unusable and use another.
                        tracing::warn!(%cid, "a new connection ID is already in use; not routing it");
                        continue;
                    }
                    self.routes.insert(cid, handle);
                    entry.routes.push(cid);
                }
                CidChange::Unroute(cid) => {
                    if let Some(index) = entry.routes.iter().position(|route| *route == cid) {
                        entry.routes.swap_remove(index);
                        self.routes.remove(&cid);
                    }
                }
                CidChange::WatchResetToken(token) => {
                    let peer = entry.connection.remote();
                    self.reset_tokens.insert(peer, token, handle);
                    entry.reset_tokens.push((peer, token));
                }
                CidChange::ForgetResetToken(token) => {
                    entry.reset_tokens.retain(|(peer, watched)| {
                        let keep = *watched != token;
                        if !keep {
                            self.reset_tokens.remove(*peer, watched, handle);
                        }
                        keep
                    });
                }
            }
        }
    }

    /// The connection a damaged packet from `from` (an unknown destination
    /// ID, or a header that does not parse) may belong to: the one
    /// connection with that peer (with corruption notices, the only reason
    /// to look), if exactly one has it.
    fn damaged_cid_route(&self, from: SocketAddr) -> Option<ConnectionHandle> {
        match self.peers.get(&from)?.as_slice() {
            [only] => self
                .connections
                .get(only)
                .is_some_and(|entry| entry.connection.corruption_notices_negotiated())
                .then_some(*only),
            _ => None,
        }
    }

    /// Follows a connection to its peer's new address in `peers`.
    fn reindex_peer(&mut self, handle: ConnectionHandle) {
        let Some(entry) = self.connections.get_mut(&handle) else {
            return;
        };
        let now = entry.connection.remote();
        if now == entry.peer {
            return;
        }
        let before = std::mem::replace(&mut entry.peer, now);
        self.unindex_peer(before, handle);
        self.peers.entry(now).or_default().push(handle);
    }

    fn unindex_peer(&mut self, peer: SocketAddr, handle: ConnectionHandle) {
        if let Some(handles) = self.peers.get_mut(&peer) {
            handles.retain(|&h| h != handle);
            if handles.is_empty() {
                self.peers.remove(&peer);
            }
        }
    }

    /// Removes one connection and its routes; later packets for it are
    /// dropped as unknown.
    pub fn remove(&mut self, handle: ConnectionHandle) -> Option<Connection> {
        self.timers.forget(handle);
        let entry = self.connections.remove(&handle)?;
        self.unindex_peer(entry.peer, handle);
        for cid in &entry.routes {
            self.routes.remove(cid);
        }
        for (peer, token) in &entry.reset_tokens {
            self.reset_tokens.remove(*peer, token, handle);
        }
        self.refusing -= usize::from(entry.refusing);
        self.publish_load();
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
mod tests;
