//! The sans-IO connection: `recv` datagrams in, `send` datagrams out,
//! `timeout`/`on_timeout` for timers, and the stream and datagram API.
//!
//! Owns: the handshake, packet-number spaces, ACK and CORRUPTED generation,
//! packet assembly, and the glue between `recovery` and `stream`.
//! Must not: touch a socket or read a clock (callers pass `now`), or use an
//! unseeded RNG (connection IDs come from `Config::rng_seed`).

mod ack;
mod ack_frequency;
mod checksums;
mod cid;
mod closing;
pub mod ecn;
mod ecn_events;
mod error;
pub mod fec;
mod forge;
mod handshake;
mod held;
mod keys;
mod liar;
mod path;
pub mod pmtud;
mod preferred;
mod recv;
mod repair;
pub mod resume;
pub mod retry_policy;
mod send;
mod send_times;
mod skip;
mod spaces;
mod stats;
pub mod token_store;
mod tokens;
mod trace;
pub mod version;
mod zero_rtt;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sift_cc::CcConfig;

use crate::crypto::{Entropy, Fingerprint, Level, ResetToken, ServerSecret, TlsConfig};
use crate::recovery::{Recovery, RecoveryConfig, SpaceId, VerdictRecord};
use crate::stream::{ControlFrame, Dir, PeerLimits, StreamChunk, StreamConfig, Streams};
use crate::wire::{ConnectionId, Ecn, TransportParams, SHORT_HEADER_DCID_LEN};

pub use crate::stream::StreamId;
pub use crate::CloseReason;
pub use crate::Side;
pub use ecn::{EcnCounts, EcnFailure, EcnState};
pub use error::{codes, Error};
pub use liar::ReceiverLie;
pub use path::canonical_peer;
pub use pmtud::PmtudConfig;
pub use preferred::{MoveState, PreferredAddresses};
pub use send_times::SendTimes;
pub use stats::Stats;
pub use zero_rtt::EarlyData;

use ack::AckState;
pub(crate) use cid::CidChange;
use cid::ConnectionIds;
#[cfg(test)]
pub(crate) use cid::ACTIVE_LIMIT as ACTIVE_CONNECTION_ID_LIMIT;
use error::TransportFailure;
use handshake::Handshake;
use keys::KeyPhases;
use path::PathValidation;
use skip::PacketNumberSkips;
use spaces::PacketSpace;
use stats::Counters;

/// Mixed into the seed of each side's packet-number skips, so client and
/// server of one seed skip differently.
const SKIP_SEED_SALT: [u64; 2] = [0x5c1f_0000_0000_0001, 0x5c1f_0000_0000_0002];
/// The same for PATH_CHALLENGE data.
const PATH_SEED_SALT: [u64; 2] = [0x9a7e_0000_0000_0001, 0x9a7e_0000_0000_0002];
/// The labels each side's skips and PATH_CHALLENGE data derive under, when
/// the connection has entropy.
const SKIP_LABEL: [&[u8]; 2] = [b"client packet number skips", b"server packet number skips"];
const PATH_LABEL: [&[u8]; 2] = [b"client path challenges", b"server path challenges"];

/// RFC 9000 §14.1: the smallest datagram that may carry a client Initial.
pub const MIN_INITIAL_DATAGRAM: usize = 1200;
/// RFC 9000 §18.2 default max_ack_delay.
pub const DEFAULT_MAX_ACK_DELAY: Duration = Duration::from_millis(25);
/// Received datagrams (DATAGRAM frames) buffered for the application, at most.
const MAX_QUEUED_DATAGRAMS: usize = 1024;
/// Handshake flights sent again on the peer's probe, at most, per
/// connection (RFC 9002 §6.2.3: "a limited number of times"; once mends a
/// single loss, the rest a lossy radio path's runs of them).
const EARLY_CRYPTO_RESENDS: u64 = 4;

/// How packets are protected. Both peers must choose the same: a client
/// and a server that differ both fail at once, saying who asked for what.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protection {
    /// CRC32C tags, no encryption, no authentication: for experiments and
    /// the simulator only.
    Null,
    /// TLS 1.3 (rustls, ring provider): AEAD header and payload tags,
    /// encrypted frames, an authenticated server. Needs `Config::tls`.
    #[default]
    Tls,
}

impl Protection {
    /// A few words for messages: "TLS 1.3" or "Null protection (insecure)".
    pub fn describe(self) -> &'static str {
        match self {
            Protection::Null => "Null protection (insecure)",
            Protection::Tls => "TLS 1.3",
        }
    }
}

/// Connection configuration. Defaults suit a long fat lossy link.
#[derive(Clone, Debug)]
pub struct Config {
    /// Congestion controller and its parameters.
    pub cc: CcConfig,
    /// Loss recovery knobs (RFC 9002 defaults).
    pub recovery: RecoveryConfig,
    /// Stream limits and flow-control windows.
    pub streams: StreamConfig,
    /// Packet protection: TLS 1.3 unless set to Null.
    pub protection: Protection,
    /// TLS settings: a server's identity, a client's trust, server name,
    /// ALPN. Unused with Null protection.
    pub tls: TlsConfig,
    /// Initiate a 1-RTT key update after this many packets sent in a key
    /// phase (RFC 9001 §6). `None`: only near the cipher's confidentiality
    /// limit. For tests and experiments; TLS only.
    pub key_update_interval: Option<u64>,
    /// Offer corruption notices (the HACK option). Both peers must offer it.
    pub corruption_notices: bool,
    /// Largest UDP payload this endpoint sends from the start, in bytes
    /// (≥ 1200). With path MTU discovery on, the size the search starts
    /// from (quinn's `initial_mtu`); off, the only size.
    pub max_datagram_size: usize,
    /// Path MTU discovery (`conn::pmtud`, RFC 8899 as RFC 9000 §14.3
    /// applies it): on by default, it probes above `max_datagram_size` up
    /// to what the path, the interface and the peer allow (1472 bytes on
    /// an IPv4 Ethernet path, 1452 on IPv6, up to 8972 on loopback), and
    /// falls back to 1200 on a black hole. `PmtudConfig::disabled()` keeps
    /// every datagram at `max_datagram_size`.
    pub pmtud: PmtudConfig,
    /// Close after this long without hearing from the peer (zero: never).
    pub idle_timeout: Duration,
    /// How long we may delay an ACK (sent to the peer as max_ack_delay).
    pub max_ack_delay: Duration,
    /// Take part in ACK frequency (draft-ietf-quic-ack-frequency-13):
    /// advertise min_ack_delay, honour the peer's ACK_FREQUENCY and
    /// IMMEDIATE_ACK frames, and on a fast path ask the peer for an ACK
    /// every tenth packet instead of every second (`conn::ack_frequency`).
    pub ack_frequency: bool,
    /// Accept DATAGRAM frames up to this size (`None`: refuse them).
    pub max_datagram_frame_size: Option<u64>,
    /// Seed for connection IDs, the packet numbers skipped and
    /// PATH_CHALLENGE data when `entropy` is `None`: the simulator derives
    /// it from the run's seed so runs repeat exactly. 64 bits, mixed by
    /// invertible steps: not for real sockets.
    pub rng_seed: u64,
    /// 256 bits from the operating system that every unpredictable value
    /// of the connection derives from instead of `rng_seed`
    /// (`crypto::entropy`). The blocking and tokio APIs set it for every
    /// connection; an endpoint derives each connection's own from its
    /// server config's.
    pub entropy: Option<Entropy>,
    /// Server: the static secret its stateless reset tokens derive from
    /// (RFC 9000 §10.3). Kept across restarts (`sift-server` keeps it in its
    /// state directory), it lets a restarted server tell clients at once
    /// that their connections are gone. `None`: no tokens, no resets.
    pub server_secret: Option<ServerSecret>,
    /// Server: the worker whose connection IDs this endpoint issues, when
    /// several endpoints share one address (`SO_REUSEPORT`) and the kernel
    /// routes datagrams to them by a keyed hash of the connection ID
    /// (`wire::steering`; the key comes with it, drawn by `io`). IDs stay
    /// entirely random to anyone without the key. `None`: one endpoint.
    pub cid_steering: Option<crate::wire::CidSteering>,
    /// Server: when new clients must prove their address with a Retry
    /// before the endpoint keeps state for them (RFC 9000 §8.1.2). Needs
    /// `server_secret` to seal tokens; without one there is no Retry.
    pub retry: retry_policy::RetryPolicy,
    /// Send a PING when nothing has been heard from the peer for this long
    /// (and again every interval while it stays quiet). A receiver that
    /// only acknowledges sends nothing once the sender falls silent; this
    /// makes it ask, so a dead or restarted peer is found within about one
    /// interval (a restarted server answers with a stateless reset).
    /// `None`: never; the idle timeout alone ends a silent connection.
    pub keep_alive_interval: Option<Duration>,
    /// Client: where NEW_TOKEN tokens are kept for later connections to the
    /// same server, shared by every endpoint that connects with this
    /// config. `None`: each endpoint keeps its own.
    pub token_store: Option<token_store::TokenStore>,
    /// With corruption notices: open a 1-RTT packet whose header arrived
    /// damaged under the header it must have had, when that can be rebuilt
    /// (`conn/repair.rs`). HACK's receiver, which drops such a packet, is
    /// `false`.
    pub repair_damaged_headers: bool,
    /// Misbehave as a receiver: name losses as corrupted, so the sender
    /// does not cut its window for them (`conn::liar`). The attacks the
    /// corruption budget and skipped packet numbers defend against
    /// (SECURITY.md), for the simulator's experiments and tests; never set
    /// it otherwise.
    #[doc(hidden)]
    pub lie_about_losses: ReceiverLie,
    /// The versions this end speaks, most preferred first (`conn::version`):
    /// by default sift/1 then QUIC v1. A client starts in QUIC v1 under TLS
    /// and offers the rest; a server answers in the first the client offers.
    pub versions: Vec<u32>,
    /// Makes a trace for each connection (`crate::trace`), such as one
    /// qlog file per connection in a directory. `None` (the default): no
    /// tracing, at no cost.
    pub trace: Option<crate::trace::TraceSink>,
    /// Careful Resume (RFC 9959) for the data this end sends: a connection
    /// given a saved path state (`Connection::resume_path`; a server finds
    /// one in the client's address token) jumps to half its window once the
    /// path proves the same, and a server saves what it sees in the tokens
    /// it issues. `None`: off (no state saved, none used). On by default:
    /// nothing changes without a saved state from the same client IP, and
    /// the RFC's checks (RTT within bounds, half the saved window, Safe
    /// Retreat) bound what a stale one can cost.
    pub careful_resume: Option<sift_cc::CarefulResumeConfig>,
    /// Explicit Congestion Notification (RFC 9000 §13.4): mark datagrams
    /// ECT (ECT(0), or ECT(1) for an L4S controller) while the path's
    /// validation allows (`conn::ecn`), report the marks that arrive in
    /// ACK_ECN frames, and answer CE marks as congestion. On by default.
    /// Off: every datagram leaves not-ECT and ACKs carry no counts, as
    /// from a stack without ECN.
    pub ecn: bool,
    /// Server: offer these addresses as its preferred address (RFC 9000
    /// §9.6, §18.2), with a connection ID of sequence number 1 and its
    /// reset token, and serve the connection there too once the client
    /// moves (`conn::preferred`). The driver must receive on them:
    /// `sift::tokio::Endpoint::bind` binds them beside the
    /// listening address. `None` (the default): no offer.
    pub preferred_address: Option<PreferredAddresses>,
    /// Client: move to a server's preferred address once the handshake is
    /// confirmed (RFC 9000 §9.6.1), validating it first. On by default;
    /// off, the client stays on the address it connected to and keeps the
    /// offered connection ID as a spare.
    pub move_to_preferred_address: bool,
    /// Erasure coding between sift ends (`conn::fec`, `docs/repair.md`):
    /// offered unless `Off`; `Auto` sends repair symbols only where the
    /// policy finds a round trip dear and the path lossy, `On` wherever
    /// the path has shown a loss.
    pub repair: crate::fec::policy::RepairMode,
    /// When and how much repair `Auto` and `On` send.
    pub repair_policy: crate::fec::policy::RepairPolicy,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            cc: CcConfig::default(),
            recovery: RecoveryConfig::default(),
            streams: StreamConfig::default(),
            protection: Protection::Tls,
            tls: TlsConfig::default(),
            key_update_interval: None,
            corruption_notices: true,
            max_datagram_size: 1350,
            pmtud: PmtudConfig::default(),
            idle_timeout: Duration::from_secs(30),
            max_ack_delay: DEFAULT_MAX_ACK_DELAY,
            ack_frequency: true,
            max_datagram_frame_size: Some(65_535),
            rng_seed: 0,
            entropy: None,
            server_secret: None,
            cid_steering: None,
            retry: retry_policy::RetryPolicy::default(),
            keep_alive_interval: None,
            token_store: None,
            repair_damaged_headers: true,
            lie_about_losses: ReceiverLie::Honest,
            versions: version::DEFAULT_VERSIONS.to_vec(),
            trace: None,
            careful_resume: Some(sift_cc::CarefulResumeConfig::default()),
            ecn: true,
            preferred_address: None,
            move_to_preferred_address: true,
            repair: crate::fec::policy::RepairMode::Auto,
            repair_policy: crate::fec::policy::RepairPolicy::default(),
        }
    }
}

impl Config {
    /// The generator for one purpose (`label`) of a connection: keyed by
    /// its entropy, or seeded from `rng_seed` xor `salt` (as sift always
    /// has, so simulator runs stay as they were).
    pub(crate) fn rng(&self, label: &[u8], salt: u64) -> ChaCha8Rng {
        match &self.entropy {
            Some(entropy) => entropy.rng(label),
            None => ChaCha8Rng::seed_from_u64(self.rng_seed ^ salt),
        }
    }

    /// The largest datagram a connection with this config may send or
    /// announce it takes, bytes: what a driver's buffers must hold.
    pub fn largest_datagram_size(&self) -> usize {
        if self.pmtud.enabled {
            self.max_datagram_size.max(self.pmtud.max_datagram_size)
        } else {
            self.max_datagram_size
        }
    }

    /// Checks that `side` can make connections with this config: the
    /// datagram size, the controller's parameters, and under TLS a
    /// server's identity or a client's trust. A server should call it
    /// before it listens, so that it refuses to start rather than fail
    /// every client.
    pub fn validate(&self, side: Side) -> Result<(), Error> {
        if self.max_datagram_size < MIN_INITIAL_DATAGRAM {
            return Err(Error::InvalidConfig(format!(
                "max_datagram_size must be at least {MIN_INITIAL_DATAGRAM} bytes, not {}",
                self.max_datagram_size
            )));
        }
        self.cc
            .validate()
            .map_err(|e| Error::InvalidConfig(e.to_string()))?;
        if self.versions.is_empty()
            || self
                .versions
                .iter()
                .any(|v| crate::crypto::format::for_version(*v).is_none())
        {
            return Err(Error::InvalidConfig(format!(
                "versions must list some of {}",
                version::SUPPORTED_VERSIONS
                    .map(crate::wire::version_name)
                    .join(", ")
            )));
        }
        if let (Side::Server, Some(preferred)) = (side, &self.preferred_address) {
            preferred
                .validate()
                .map_err(|e| Error::InvalidConfig(e.to_string()))?;
        }
        if self.protection == Protection::Tls {
            crate::crypto::TlsSession::validate(&self.tls, side)
                .map_err(|e| Error::InvalidConfig(e.to_string()))?;
        }
        Ok(())
    }
}

/// Where and when a received datagram arrived.
#[derive(Clone, Copy, Debug)]
pub struct RecvInfo {
    /// The sender's address.
    pub from: SocketAddr,
    /// The address it was received on.
    pub to: SocketAddr,
    /// When it arrived.
    pub now: Instant,
    /// The ECN field of its IP header (RFC 9000 §13.4.1); `NotEct` where
    /// the driver cannot read it.
    pub ecn: Ecn,
}

/// Where a datagram from `send` goes, and the earliest time it may leave.
/// sift paces by not producing a packet before its time (the pacing instant
/// is a timer), so `at` is the `now` given to `send`.
#[derive(Clone, Copy, Debug)]
pub struct SendInfo {
    /// The address to send from.
    pub from: SocketAddr,
    /// The address to send to.
    pub to: SocketAddr,
    /// The earliest time it may leave (the `now` given to `send`).
    pub at: Instant,
    /// Send it without a UDP checksum, so that corruption on the path
    /// reaches the peer to be named (see `conn::checksums`); otherwise with
    /// one, which lets the driver batch it with segmentation offload.
    pub checksum_free: bool,
    /// The ECN codepoint to put in its IP header (RFC 9000 §13.4).
    pub ecn: Ecn,
}

/// What a sent packet carried, kept in the recovery ledger so that loss,
/// corruption or acknowledgement can be acted on per frame.
#[derive(Clone, Debug)]
pub(crate) enum SentFrame {
    /// An ACK frame acknowledging up to `largest`.
    Ack {
        largest: Option<u64>,
    },
    Crypto {
        offset: u64,
        data: Vec<u8>,
    },
    Stream(StreamChunk),
    Control(ControlFrame),
    HandshakeDone,
    /// Our PATH_CHALLENGE with this data.
    PathChallenge([u8; 8]),
    /// Our NEW_TOKEN.
    NewToken,
    /// Our NEW_CONNECTION_ID with this sequence number.
    NewConnectionId(u64),
    /// Our RETIRE_CONNECTION_ID for the peer's ID with this sequence number.
    RetireConnectionId(u64),
    /// Our ACK_FREQUENCY with this sequence number.
    AckFrequency(u64),
}

#[derive(Clone, Debug, PartialEq)]
enum State {
    Handshaking,
    Established,
    /// We sent CONNECTION_CLOSE; answer further packets with it until `until`.
    Closing {
        until: Instant,
    },
    /// The peer closed; stay silent until `until`.
    Draining {
        until: Instant,
    },
    Closed,
}

/// A pending CONNECTION_CLOSE of ours.
#[derive(Clone, Debug)]
struct CloseFrame {
    application: bool,
    code: u64,
    reason: String,
}

/// A sift connection.
#[derive(Debug)]
pub struct Connection {
    side: Side,
    config: Config,
    local: SocketAddr,
    remote: SocketAddr,
    state: State,
    local_cid: ConnectionId,
    peer_cid: ConnectionId,
    /// The client's first destination CID (RFC 9000 §7.3).
    original_dcid: ConnectionId,
    peer_cid_learned: bool,
    handshake: Handshake,
    /// The version spoken, and the packet format that goes with it.
    versions: version::Versions,
    /// Keys, packet numbers, ACK state and owed probes per packet-number
    /// space, indexed by `SpaceId` (`spaces.rs`).
    spaces: [PacketSpace; 3],
    key_phases: KeyPhases,
    /// Server moved from the client's original version to one with other
    /// Initial keys (QUIC v1 to v2): the original's, which open the
    /// client's Initials still in that version (RFC 9368 §2.3, RFC 9369
    /// §4). Dropped with the Initial space.
    original_initial_keys: Option<Box<dyn crate::crypto::PacketProtection>>,
    /// Server: the client's first Initial asked for this other protection.
    protection_mismatch: Option<Protection>,
    /// Server: refuse the client's first Initial with this code and reason.
    refusal: Option<(u64, String)>,
    /// Packets that may fail authentication before the connection closes,
    /// when not the cipher's own limit (tests reach it quickly).
    integrity_limit: Option<u64>,
    /// Packets that may be sealed under one set of 1-RTT keys, when not
    /// the cipher's own limit (tests reach it quickly).
    confidentiality_limit: Option<u64>,
    /// The source connection ID of the peer's first Initial: a client
    /// discards long-header packets with another, a server Initials
    /// (RFC 9000 §7.2).
    peer_first_scid: Option<ConnectionId>,
    /// The last datagram's first packet reached an open connection and was
    /// not processed (not opened, or held): the endpoint checks it for a
    /// stateless reset (RFC 9000 §10.3.1).
    first_packet_unprocessed: bool,
    /// 1-RTT packets received before the handshake completed, unread.
    held: held::HeldPackets,
    /// Retry and NEW_TOKEN tokens, in and out (`tokens.rs`).
    tokens: tokens::Tokens,
    /// 1-RTT packet numbers left unused, against optimistic ACKs and
    /// receivers that call losses corruption.
    skips: PacketNumberSkips,
    /// Attack model only (`Config::lie_about_losses`): the receiver that
    /// reads stream offsets to name real losses corrupted.
    loss_reader: Option<liar::LossReader>,
    /// Path validation after the peer moved (RFC 9000 §8.2, §9).
    path: PathValidation,
    /// Client: its move to the server's preferred address (`preferred`).
    client_move: preferred::ClientMove,
    /// Server: its preferred address and the path a client opened there.
    server_offer: preferred::ServerOffer,
    /// The datagram being processed came to our preferred address, before
    /// we moved there (server).
    recv_on_preferred: bool,
    /// Path MTU discovery: the datagram size in force and its search.
    pmtud: pmtud::Pmtud,
    /// Unpredictable PATH_CHALLENGE data (seeded: runs repeat).
    path_rng: ChaCha8Rng,
    /// Careful Resume: the saved state used and the last one offered.
    resume: resume::ResumeState,
    /// The source address of the datagram being processed, and its size
    /// (a server's Initials must come in 1200 bytes, RFC 9000 §14.1; held
    /// 1-RTT packets keep their own, `held`).
    recv_from: SocketAddr,
    recv_datagram_len: usize,
    /// The ECN field of the datagram being processed (held 1-RTT packets
    /// keep their own, `held`).
    recv_ecn: Ecn,
    /// ECN validation of the path and the counts it rests on (`ecn`).
    ecn: ecn::EcnValidation,
    /// The destination ID of the packet being processed.
    recv_dcid: ConnectionId,
    /// Issued and received connection IDs beyond the handshake's.
    cids: ConnectionIds,
    recovery: Recovery<SentFrame>,
    streams: Streams,
    handshake_confirmed: bool,
    handshake_done_pending: bool,
    /// The peer's current address is validated: a server's client sent a
    /// Handshake packet, a token, or echoed a PATH_CHALLENGE sent there.
    /// Until then what goes there is limited (`path::UnprovenAddresses`).
    address_validated: bool,
    notices_negotiated: bool,
    /// A server's Handshake probe for the client's Finished went
    /// (`held::probe_for_finished`).
    probed_for_finished: bool,
    /// Erasure coding, both directions (`fec`).
    coding: fec::Coding,
    /// Which datagrams leave without a UDP checksum.
    checksums: checksums::ChecksumPolicy,
    /// Buffers the send path reuses.
    send_scratch: send::SendScratch,
    /// How often we ask the peer to acknowledge, and its requests to us.
    ack_frequency: ack_frequency::AckFrequency,
    idle_timeout: Option<Duration>,
    last_activity: Instant,
    ack_eliciting_since_activity: bool,
    /// When the keep-alive timer last restarted: the last datagram from the
    /// peer, or the last keep-alive PING.
    keep_alive_since: Instant,
    pacing_until: Option<Instant>,
    /// What each poll for a packet found, and the time charged to it.
    send_clock: send_times::SendClock,
    /// What held ack-eliciting data back in the current poll (the window
    /// or the pacer), for `send_clock`.
    send_held_by: Option<send_times::SendState>,
    close_frame: Option<CloseFrame>,
    close_pending: bool,
    /// What the closing state answered, and may still (`closing`).
    closing: closing::ClosingAnswers,
    close_reason: Option<CloseReason>,
    peer_max_datagram_frame_size: Option<u64>,
    /// The peer sent disable_active_migration (RFC 9000 §18.2).
    peer_disables_migration: bool,
    peer_max_udp_payload: u64,
    /// The peer's ACK delays are in units of 2^this µs (RFC 9000 §18.2).
    peer_ack_delay_exponent: u64,
    datagrams_out: VecDeque<Vec<u8>>,
    datagrams_in: VecDeque<Vec<u8>>,
    now: Instant,
    counters: Counters,
    /// The observer of every event, when traced (`conn/trace.rs`).
    trace: Option<Box<trace::Tracing>>,
    /// 0-RTT keys and what became of the early data (`zero_rtt`).
    zero_rtt: zero_rtt::ZeroRtt,
}

fn space_of(level: Level) -> SpaceId {
    match level {
        Level::Initial => SpaceId::Initial,
        Level::Handshake => SpaceId::Handshake,
        Level::OneRtt => SpaceId::Data,
    }
}

fn level_of(space: SpaceId) -> Level {
    match space {
        SpaceId::Initial => Level::Initial,
        SpaceId::Handshake => Level::Handshake,
        SpaceId::Data => Level::OneRtt,
    }
}

/// The secret a server derives reset tokens from (a client has none).
fn server_secret(side: Side, config: &Config) -> Option<&ServerSecret> {
    match side {
        Side::Server => config.server_secret.as_ref(),
        Side::Client => None,
    }
}

fn random_cid(rng: &mut ChaCha8Rng, steering: Option<crate::wire::CidSteering>) -> ConnectionId {
    if let Some(steering) = steering {
        return steering.draw(rng);
    }
    let mut bytes = [0u8; SHORT_HEADER_DCID_LEN];
    rng.fill_bytes(&mut bytes);
    ConnectionId::new(&bytes).expect("8 bytes is a valid connection ID length")
}

impl Connection {
    /// Starts a client connection to `remote`.
    pub fn connect(
        config: Config,
        local: SocketAddr,
        remote: SocketAddr,
        now: Instant,
    ) -> Result<Self, Error> {
        let mut rng = config.rng(b"client connection ids", 0);
        let local_cid = random_cid(&mut rng, None);
        let original_dcid = random_cid(&mut rng, None);
        Self::new(
            Side::Client,
            config,
            local,
            remote,
            local_cid,
            original_dcid,
            now,
        )
    }

    /// A server connection that waits for the client's first Initial from
    /// `remote`.
    pub fn accept(
        config: Config,
        local: SocketAddr,
        remote: SocketAddr,
        now: Instant,
    ) -> Result<Self, Error> {
        let mut rng = config.rng(b"server connection ids", 0x5e7e_5e7e);
        let local_cid = random_cid(&mut rng, config.cid_steering);
        // Learned from the client's first Initial.
        let unknown = ConnectionId::new(&[]).expect("empty connection ID");
        Self::new(Side::Server, config, local, remote, local_cid, unknown, now)
    }

    fn new(
        side: Side,
        config: Config,
        local: SocketAddr,
        remote: SocketAddr,
        local_cid: ConnectionId,
        original_dcid: ConnectionId,
        now: Instant,
    ) -> Result<Self, Error> {
        config.validate(side)?;
        let reset_token = match (side, &config.server_secret) {
            (Side::Server, Some(secret)) => Some(secret.reset_token(&local_cid)),
            _ => None,
        };
        let ack_frequency =
            ack_frequency::AckFrequency::new(config.ack_frequency, config.max_ack_delay);
        let versions = match side {
            Side::Client => {
                // A held ticket names the version to start in: 0-RTT goes
                // out in the version a connection starts in, and a ticket
                // resumes only in the version it came from (`crypto::tls`).
                let resumable = match (&config.tls.tickets, config.protection) {
                    (Some(tickets), Protection::Tls) => tickets.version_for(
                        &config
                            .tls
                            .server_name
                            .clone()
                            .unwrap_or_else(|| remote.ip().to_string()),
                        remote.port(),
                        &config.versions,
                    ),
                    _ => None,
                };
                let original = resumable.unwrap_or_else(|| {
                    version::client_original(&config.versions, config.protection == Protection::Tls)
                });
                version::Versions::client(original, &config.versions)
            }
            Side::Server => version::Versions::server(&config.versions),
        };
        let params = TransportParams {
            // A server's is set once it has chosen (`handshake`).
            version_information: (side == Side::Client)
                .then(|| versions.information(versions.original())),
            original_destination_connection_id: None,
            initial_source_connection_id: Some(local_cid),
            max_idle_timeout_ms: config.idle_timeout.as_millis() as u64,
            max_udp_payload_size: config.largest_datagram_size() as u64,
            initial_max_data: config.streams.initial_max_data,
            initial_max_stream_data_bidi_local: config.streams.initial_max_stream_data,
            initial_max_stream_data_bidi_remote: config.streams.initial_max_stream_data,
            initial_max_stream_data_uni: config.streams.initial_max_stream_data,
            initial_max_streams_bidi: config.streams.max_streams_bidi,
            initial_max_streams_uni: config.streams.max_streams_uni,
            max_ack_delay_ms: config.max_ack_delay.as_millis() as u64,
            // ACK delays in plain microseconds, as sift has always sent them.
            ack_delay_exponent: 0,
            min_ack_delay_micros: ack_frequency.own_min_ack_delay_micros(),
            max_datagram_frame_size: config.max_datagram_frame_size,
            corruption_notices: config.corruption_notices,
            repair_max_span: (config.repair != crate::fec::policy::RepairMode::Off)
                .then_some(fec::MAX_SPAN),
            stateless_reset_token: reset_token.map(|token| *token.as_bytes()),
            active_connection_id_limit: cid::ACTIVE_LIMIT,
            ..TransportParams::default()
        };
        let mss = config.max_datagram_size as u64;
        let recovery = Recovery::new(config.recovery.clone(), config.cc.build(mss), mss);
        let streams = Streams::new(side, config.streams.clone());
        let handshake = Handshake::new(side, &config, remote, versions.original(), params)
            .map_err(|error| Error::InvalidConfig(error.to_string()))?;
        // A server derives its Initial keys from the client's first Initial.
        let initial_keys = (side == Side::Client).then(|| {
            keys::initial_keys(
                config.protection,
                versions.original(),
                original_dcid.as_slice(),
                side,
            )
        });
        let mut conn = Self {
            side,
            local,
            // One spelling of the peer, so a dual-stack socket's mapped form of an
            // IPv4 peer still matches (see `path`).
            remote: canonical_peer(remote),
            state: State::Handshaking,
            local_cid,
            peer_cid: original_dcid,
            original_dcid,
            peer_cid_learned: false,
            handshake,
            versions,
            spaces: [
                PacketSpace::new(initial_keys, AckState::new(Duration::ZERO)),
                PacketSpace::new(None, AckState::new(Duration::ZERO)),
                PacketSpace::new(
                    None,
                    AckState::new(config.max_ack_delay)
                        .lying_about_gaps(config.lie_about_losses == ReceiverLie::EveryGap),
                ),
            ],
            key_phases: KeyPhases::default(),
            original_initial_keys: None,
            protection_mismatch: None,
            tokens: tokens::Tokens::default(),
            refusal: None,
            skips: PacketNumberSkips::from_rng(
                config.rng(SKIP_LABEL[side as usize], SKIP_SEED_SALT[side as usize]),
            ),
            loss_reader: (config.lie_about_losses == ReceiverLie::RealLosses)
                .then(liar::LossReader::default),
            path: PathValidation::default(),
            client_move: preferred::ClientMove::default(),
            server_offer: preferred::ServerOffer::default(),
            recv_on_preferred: false,
            pmtud: pmtud::Pmtud::new(
                &config.pmtud,
                config.max_datagram_size,
                canonical_peer(remote),
            ),
            path_rng: config.rng(PATH_LABEL[side as usize], PATH_SEED_SALT[side as usize]),
            resume: resume::ResumeState::default(),
            recv_from: canonical_peer(remote),
            recv_datagram_len: 0,
            recv_ecn: Ecn::NotEct,
            ecn: ecn::EcnValidation::new(config.ecn),
            integrity_limit: None,
            confidentiality_limit: None,
            peer_first_scid: None,
            first_packet_unprocessed: false,
            held: held::HeldPackets::default(),
            recv_dcid: local_cid,
            cids: ConnectionIds::new(local_cid, reset_token, true)
                .steered_by(config.cid_steering.filter(|_| side == Side::Server)),
            recovery,
            streams,
            handshake_confirmed: false,
            handshake_done_pending: false,
            address_validated: side == Side::Client,
            notices_negotiated: false,
            probed_for_finished: false,
            coding: fec::Coding::new(config.repair, config.repair_policy),
            checksums: checksums::ChecksumPolicy::default(),
            send_scratch: send::SendScratch::default(),
            ack_frequency,
            idle_timeout: None,
            last_activity: now,
            ack_eliciting_since_activity: false,
            keep_alive_since: now,
            pacing_until: None,
            send_clock: Default::default(),
            send_held_by: None,
            close_frame: None,
            close_pending: false,
            closing: closing::ClosingAnswers::default(),
            close_reason: None,
            peer_max_datagram_frame_size: None,
            peer_disables_migration: false,
            peer_max_udp_payload: MIN_INITIAL_DATAGRAM as u64,
            peer_ack_delay_exponent: crate::wire::transport_params::DEFAULT_ACK_DELAY_EXPONENT,
            datagrams_out: VecDeque::new(),
            datagrams_in: VecDeque::new(),
            now,
            counters: Counters::default(),
            trace: None,
            zero_rtt: zero_rtt::ZeroRtt::default(),
            config,
        };
        conn.start_trace();
        conn.start_zero_rtt();
        conn.offer_preferred_address();
        Ok(conn)
    }

    // ---- state -----------------------------------------------------------

    /// Which end this is.
    pub fn side(&self) -> Side {
        self.side
    }

    /// The peer's address, an IPv4 peer always in its plain IPv4 spelling
    /// ([`canonical_peer`]).
    pub fn remote(&self) -> SocketAddr {
        self.remote
    }

    /// Our address.
    pub fn local(&self) -> SocketAddr {
        self.local
    }

    /// Our connection ID (what the peer puts in its packets' DCID).
    pub fn local_cid(&self) -> ConnectionId {
        self.local_cid
    }

    /// The handshake has completed.
    pub fn is_established(&self) -> bool {
        self.handshake.is_complete() && !self.is_closed()
    }

    /// A client may move to a new address now (RFC 9000 §9): the
    /// handshake is confirmed, the server gave a connection ID the new
    /// path can use (§9.5), so the move is not linkable, and it did not
    /// disable active migration (§18.2). A move it may not make is refused
    /// ([`Connection::on_local_address_changed`]).
    pub fn can_migrate(&self) -> bool {
        self.side == Side::Client
            && self.state == State::Established
            && self.why_not_move().is_none()
    }

    /// Why this end may not send from a new local address now, if it may
    /// not. A connection that is closing or closed says nothing more that
    /// matters and may move.
    pub(crate) fn why_not_move(&self) -> Option<&'static str> {
        if self.is_closing() {
            return None;
        }
        if self.side == Side::Server {
            return Some("a server does not move; only clients migrate (RFC 9000 §9)");
        }
        if !self.handshake_confirmed || self.state != State::Established {
            return Some("the handshake is not confirmed yet (RFC 9000 §9)");
        }
        // RFC 9000 §18.2: the parameter covers the handshake's address
        // only, not a client that acted on a preferred_address.
        if self.peer_disables_migration && self.client_move.state != MoveState::Moved {
            return Some("the server disabled active migration (RFC 9000 §18.2)");
        }
        if self.peer_cid.is_empty() {
            return Some("the server uses zero-length connection IDs: the move would be linkable (RFC 9000 §9.5)");
        }
        if !self.cids.has_spare() {
            return Some("the server has given no spare connection ID yet (RFC 9000 §9.5)");
        }
        None
    }

    /// The connection is draining or closed and will send nothing more.
    pub fn is_closed(&self) -> bool {
        matches!(self.state, State::Draining { .. } | State::Closed)
    }

    /// Closing or closed: no new data is accepted.
    pub fn is_closing(&self) -> bool {
        !matches!(self.state, State::Handshaking | State::Established)
    }

    /// Why the connection closed, once it has.
    pub fn close_reason(&self) -> Option<&CloseReason> {
        self.close_reason.as_ref()
    }

    /// The version packets go out in (`conn::version`): a client's original
    /// until the server answers in another it offered, a server's once it
    /// chose for the client.
    pub fn version(&self) -> u32 {
        self.versions.current().version()
    }

    /// Both sides offered corruption notices.
    pub fn corruption_notices_negotiated(&self) -> bool {
        self.notices_negotiated
    }

    /// The congestion controller this connection runs.
    pub fn congestion_control(&self) -> &CcConfig {
        &self.config.cc
    }

    /// Runs `cc` from now on for the data this endpoint sends, starting from
    /// its initial window; RTT and loss-recovery state carry over. Meant for
    /// after the handshake and before data flows — a server switching to the
    /// controller a client asked for its download — but safe at any time.
    pub fn set_congestion_control(&mut self, cc: CcConfig) -> Result<(), Error> {
        cc.validate()
            .map_err(|e| Error::InvalidConfig(e.to_string()))?;
        let mss = self.pmtud.current() as u64;
        self.recovery.replace_controller(cc.build(mss), mss);
        self.ecn_tell_controller();
        self.config.cc = cc;
        self.rewrap_resume();
        Ok(())
    }

    /// The ALPN protocol agreed in the TLS handshake.
    pub fn alpn_protocol(&self) -> Option<&[u8]> {
        self.handshake.alpn_protocol()
    }

    /// SHA-256 of the certificate the peer presented, once it arrived: on
    /// a client, the server's; on a server that asks for client
    /// certificates ([`crate::crypto::TlsConfig::request_client_certificate`]),
    /// the client's, whose key signed the handshake. `None` under Null
    /// protection and for a client that presented none.
    pub fn peer_certificate_fingerprint(&self) -> Option<Fingerprint> {
        self.handshake.peer_certificate_fingerprint()
    }

    /// The token that ends a stateless reset from the peer: the server's,
    /// once its transport parameters arrived (clients send none).
    pub fn peer_reset_token(&self) -> Option<ResetToken> {
        self.cids.current_reset_token()
    }

    /// The store its NEW_TOKEN tokens go to, if the config names one.
    pub(crate) fn token_store(&self) -> Option<&token_store::TokenStore> {
        self.config.token_store.as_ref()
    }

    /// The next change to this connection's routes or reset tokens that
    /// the endpoint routing its datagrams must make (see `cid`).
    pub(crate) fn poll_cid_change(&mut self) -> Option<CidChange> {
        self.cids.poll_change()
    }

    /// Issues connection IDs up to what the peer keeps, once the
    /// handshake is confirmed.
    fn issue_connection_ids(&mut self) {
        if self.handshake_confirmed && self.state == State::Established {
            let secret = server_secret(self.side, &self.config);
            self.cids.replenish(&mut self.path_rng, secret);
            self.start_preferred_move();
        }
    }

    /// Sends to another of the peer's connection IDs, if it gave a spare,
    /// so the new path cannot be linked to the old one (RFC 9000 §9.5).
    fn switch_peer_cid(&mut self) {
        if let Some(cid) = self.cids.switch() {
            tracing::debug!(from = %self.peer_cid, to = %cid, "moving to another of the peer's connection IDs");
            self.peer_cid = cid;
        }
    }

    /// Whether the first packet of the last datagram reached this open
    /// connection and was not processed: RFC 9000 §10.3.1 has the endpoint
    /// check such a datagram for a stateless reset.
    pub(crate) fn first_packet_unprocessed(&self) -> bool {
        self.first_packet_unprocessed
    }

    /// The peer sent a stateless reset (RFC 9000 §10.3.1; the endpoint
    /// recognised its token): the peer has lost this connection's state,
    /// typically because it restarted. Nothing more is sent; the connection
    /// drains and then closes.
    pub fn on_stateless_reset(&mut self, now: Instant) {
        if self.is_closed() {
            return;
        }
        self.now = now;
        tracing::debug!("the peer reset the connection (stateless reset)");
        self.close_reason = Some(CloseReason::StatelessReset);
        self.close_pending = false;
        let until = now + self.recovery.pto_period(SpaceId::Data) * 3;
        self.state = State::Draining { until };
    }

    /// Client, still handshaking: the server answered our Initial with a
    /// Version Negotiation packet. `echoed_dcid` is its source connection
    /// ID, which must be the destination ID we chose. Ignored (RFC 9000
    /// §6.2) once any packet from the server was processed, if the IDs do
    /// not match, if the list names our own version (a forgery or a
    /// confused server: not a reason to give up), or if this attempt
    /// already answers one (RFC 9368 §4). If the server lists a version we
    /// speak, the handshake starts over in it (RFC 9368 §2.1); otherwise
    /// the connection closes at once with [`CloseReason::VersionMismatch`].
    pub fn on_version_negotiation(
        &mut self,
        echoed_dcid: &[u8],
        offered: impl IntoIterator<Item = u32>,
        now: Instant,
    ) {
        if self.side != Side::Client
            || self.state != State::Handshaking
            || self.peer_cid_learned
            || self.tokens.retry.is_some()
            || echoed_dcid != self.original_dcid.as_slice()
        {
            return;
        }
        let offered: Vec<u32> = offered.into_iter().collect();
        // RFC 9000 §6.2: a list naming the version we sent is a forgery
        // (or a confused server), never a reason to give up or downgrade.
        if offered.contains(&self.versions.original()) || self.versions.after_negotiation() {
            return;
        }
        self.now = now;
        let tls = self.config.protection == Protection::Tls;
        if let Some(version) =
            version::client_choice_from_negotiation(&self.config.versions, &offered, tls)
        {
            if self.start_over_in(version) {
                return;
            }
        }
        let reason = CloseReason::VersionMismatch { offered };
        tracing::debug!("{reason}");
        self.close_reason = Some(reason);
        self.close_pending = false;
        // The server kept no state: there is nobody to tell and nothing to drain.
        self.state = State::Draining { until: now };
    }

    /// Client: abandons the first flight (the server kept no state) and
    /// starts the handshake again in `version`, after a Version
    /// Negotiation (RFC 9368 §2.1): a new TLS session, so ALPN is
    /// negotiated afresh (§6), and the same connection IDs. What 0-RTT
    /// packets carried is sent again. False if the new session cannot be
    /// made.
    fn start_over_in(&mut self, version: u32) -> bool {
        let tls = self.config.protection == Protection::Tls;
        let mut params = self.handshake.local_params_mut().clone();
        let versions =
            version::Versions::client_after_negotiation(version, &self.config.versions, tls);
        params.version_information = Some(versions.information(version));
        let Ok(handshake) =
            Handshake::new(Side::Client, &self.config, self.remote, version, params)
        else {
            return false;
        };
        tracing::debug!(
            version = format_args!("{version:#010x}"),
            "the server does not speak our version: starting over in one it lists"
        );
        self.handshake = handshake;
        self.versions = versions;
        self.spaces[SpaceId::Initial].keys = Some(keys::initial_keys(
            self.config.protection,
            version,
            self.original_dcid.as_slice(),
            Side::Client,
        ));
        // The abandoned ClientHello is not resent: the new session wrote its own.
        self.recovery.discard_space(SpaceId::Initial);
        let early = self.recovery.discard_space(SpaceId::Data);
        self.on_packets_lost(SpaceId::Data, early);
        self.zero_rtt.keys = None;
        self.zero_rtt.outcome = zero_rtt::EarlyData::NotOffered;
        self.start_zero_rtt();
        true
    }

    /// Whether a datagram from another address than the peer's may be for
    /// this connection (a server whose client moved; see `path`): once the
    /// handshake is confirmed, and never on a client.
    pub fn follows_migration(&self) -> bool {
        self.side == Side::Server && self.handshake_confirmed && self.state == State::Established
    }

    /// This endpoint moved to another local address (a client that changed
    /// networks and rebound its socket). The server learns the new address
    /// only from a packet sent from it, and a downloading client may have
    /// nothing to send: send an ack-eliciting PING now (RFC 9000 §9.2). A
    /// new local IP address is a new path: congestion control and the RTT
    /// estimate start over (RFC 9000 §9.4), as the server's do when it
    /// sees one; a new port on the same address (or on the unspecified
    /// address, which says nothing about the path) keeps them.
    ///
    /// Refused, with nothing changed, when this end may not move
    /// ([`Connection::can_migrate`]): before the handshake is confirmed,
    /// without a spare connection ID of the server's, against its
    /// `disable_active_migration`, or on a server (RFC 9000 §9, §9.5).
    pub fn on_local_address_changed(&mut self, local: SocketAddr) -> Result<(), Error> {
        if local == self.local {
            return Ok(());
        }
        if let Some(reason) = self.why_not_move() {
            return Err(Error::MigrationRefused(reason));
        }
        let old = std::mem::replace(&mut self.local, local);
        if self.state == State::Established {
            self.pmtud
                .on_path_change(self.spaces[SpaceId::Data].next_packet_number);
            if !path::only_port_changed(old, local) {
                self.start_new_path();
            }
            self.switch_peer_cid();
            let probes = &mut self.spaces[SpaceId::Data].probes;
            *probes = (*probes).max(1);
        }
        Ok(())
    }

    /// A new network path: congestion control, the RTT estimate and the
    /// path MTU start over (RFC 9000 §9.4, §14.3; the MTU from 1200 bytes,
    /// `pmtud::Pmtud::on_new_path`).
    fn start_new_path(&mut self) {
        if let Some(change) = self.pmtud.on_new_path(self.remote, self.now) {
            self.on_datagram_size_changed(change);
        }
        let mss = self.pmtud.current() as u64;
        self.recovery.on_new_path(self.config.cc.build(mss), mss);
        self.ecn_on_new_path();
        self.on_new_path_for_resume();
    }

    /// The peer's highest-numbered packet came from `to`, sent to our ID
    /// `dcid`: send there from now on and validate the new path (see
    /// `path`), on an ID of the peer's not used on another path (RFC 9000
    /// §9.5). Without a spare, the current ID goes on only where §9.5
    /// allows it: the peer kept the ID it sent to (a NAT rebinding), or
    /// its IDs are empty. Otherwise the move is not followed: the
    /// connection stays where it was.
    fn migrate_to(&mut self, to: SocketAddr, dcid: ConnectionId) {
        let rebinding = self.path.dcid_on_path == Some(dcid);
        match self.cids.switch_for(to) {
            Some(cid) => {
                tracing::debug!(from = %self.peer_cid, to = %cid, "moving to another of the peer's connection IDs");
                self.peer_cid = cid;
            }
            None if rebinding || self.peer_cid.is_empty() => {}
            None => {
                tracing::debug!(%to, "the peer moved to a new connection ID and left us none unused for its new address: not following (RFC 9000 §9.5)");
                return;
            }
        }
        let old = self.remote;
        self.remote = to;
        self.path.migrations += 1;
        self.pmtud
            .on_path_change(self.spaces[SpaceId::Data].next_packet_number);
        if !path::only_port_changed(old, to) {
            self.start_new_path();
        }
        // A token waiting to go was sealed for the address the peer left:
        // it goes nowhere else, least of all to an address not validated.
        self.tokens.new_token_out = None;
        self.tokens.new_token_pending = false;
        let was_validated = self.address_validated;
        // Unvalidated again: three times what arrived from it (the budget
        // it has had since its first datagram, probes and their answers
        // included), until the challenge comes back.
        self.address_validated = false;
        // Where to go back to if this address never answers: the last
        // validated one (RFC 9000 §9.3.2), which is still the one before
        // if the peer moves again while a validation is under way.
        let previous = if was_validated {
            Some(old)
        } else {
            self.path.previous
        };
        let mut data = [0u8; 8];
        self.path_rng.fill_bytes(&mut data);
        // RFC 9000 §8.2.4: three PTOs, and no less than six initial RTTs.
        let patience =
            (self.recovery.pto_period(SpaceId::Data) * 3).max(self.config.recovery.initial_rtt * 6);
        self.path.challenge(data, self.now + patience, previous);
        if was_validated {
            // RFC 9000 §9.3.3: the path left is challenged too, so that a
            // peer still there (the move was a packet an attacker
            // forwarded) answers, and its packets bring the connection back.
            let mut old_data = [0u8; 8];
            self.path_rng.fill_bytes(&mut old_data);
            self.path.challenge_old_path(old, old_data);
        }
        tracing::debug!(%old, new = %to, "the peer moved: validating its new address");
    }

    /// The peer's current address proved itself: nothing limits what goes
    /// there from now on.
    fn on_address_validated(&mut self) {
        self.address_validated = true;
        self.path.unproven.on_validated(self.remote);
    }

    /// The new address never echoed our challenge: go back to the last
    /// validated address; with none, end the connection silently,
    /// discarding its state (RFC 9000 §9.3.2). A server follows only a
    /// confirmed client, whose address its handshake validated, so that
    /// last case is a safeguard.
    fn abandon_path_validation(&mut self) {
        let failed = self.remote;
        match self.path.give_up() {
            Some(previous) => {
                tracing::debug!(%failed, %previous, "the new address did not answer: back to the previous one");
                self.remote = previous;
                self.address_validated = true;
            }
            None => {
                tracing::debug!(%failed, "the new address did not answer, and there is none to go back to: closing silently");
                self.close_reason = Some(CloseReason::PathValidationFailed);
                self.close_pending = false;
                self.state = State::Closed;
                self.trace_flush();
            }
        }
    }

    /// Client, still handshaking: the server answered our Initial with a
    /// Retry (RFC 9000 §8.1.2, §17.2.5). If it is for us (our source ID,
    /// an integrity tag over the destination ID we chose), the first one,
    /// and names a new connection ID, the client sends its Initial again to
    /// that ID, under Initial keys derived from it, carrying the token; the
    /// server's transport parameters must then name this Retry. Returns
    /// whether the Retry was taken.
    pub fn on_retry(&mut self, retry: &crate::wire::Retry<'_>, now: Instant) -> bool {
        if self.side != Side::Client
            || self.state != State::Handshaking
            || self.peer_cid_learned
            || self.tokens.retry.is_some()
            || retry.dcid != self.local_cid
            || retry.scid == self.original_dcid
            || retry.version != self.versions.original()
            || *retry.tag
                != crate::crypto::retry::integrity_tag(
                    retry.version,
                    self.config.protection == Protection::Null,
                    self.original_dcid.as_slice(),
                    retry.signed,
                )
        {
            return false;
        }
        self.now = now;
        tracing::debug!(scid = %retry.scid, "the server asked for a Retry: sending the Initial again with its token");
        self.trace_event(&crate::trace::Event::RetryReceived {
            size: (retry.signed.len() + retry.tag.len()) as u64,
            scid: retry.scid,
            token_len: retry.token.len() as u64,
        });
        self.tokens.retry = Some((retry.token.to_vec(), retry.scid));
        self.peer_cid = retry.scid;
        self.spaces[SpaceId::Initial].keys = Some(keys::initial_keys(
            self.config.protection,
            self.versions.original(),
            retry.scid.as_slice(),
            Side::Client,
        ));
        // RFC 9002 §6.3: recovery starts afresh, for the server kept
        // nothing. What the Initials carried goes again in the new keys,
        // and what the 0-RTT packets carried goes again at once, to the
        // connection ID the Retry gave (RFC 9000 §17.2.5.3), rather than
        // when the server's first ACKs show it lost. None of it was lost.
        for space in [SpaceId::Initial, SpaceId::Data] {
            let sent = self.recovery.discard_space(space);
            self.send_again(space, sent);
        }
        true
    }

    /// Server: `token` goes to the client in a NEW_TOKEN frame once the
    /// handshake is done, for its next connection to skip address
    /// validation (RFC 9000 §8.1.3). The endpoint seals it.
    pub fn send_new_token(&mut self, token: Vec<u8>) {
        if self.side == Side::Server && !token.is_empty() {
            self.tokens.new_token_out = Some(token);
            // After the handshake, a later token (one carrying a saved path
            // state, RFC 9959) goes at once; before it, with HANDSHAKE_DONE.
            self.tokens.new_token_pending |= self.handshake_confirmed;
        }
    }

    /// Client, before anything is sent: carry `token` (from an earlier
    /// connection's NEW_TOKEN to the same server) in our Initials.
    pub fn use_token(&mut self, token: Vec<u8>) {
        if self.side == Side::Client && self.spaces[SpaceId::Initial].next_packet_number == 0 {
            self.tokens.initial_token = token;
        }
    }

    /// Client: the latest token the server gave for a later connection.
    pub fn take_new_token(&mut self) -> Option<Vec<u8>> {
        self.tokens.new_token_in.take()
    }

    /// Server, before the client's first Initial arrives: the client's
    /// Initial carried a token from an earlier connection's NEW_TOKEN, so
    /// its address is validated (no anti-amplification limit).
    pub fn accept_validated(&mut self) {
        if self.side == Side::Server && !self.peer_cid_learned {
            self.address_validated = true;
        }
    }

    /// Server, before the client's first Initial arrives: the client's
    /// Initial carried a valid Retry token, so our transport parameters
    /// name the Retry: `original_dcid` from the client's first Initial and
    /// `retry_scid`, the ID the Retry gave it (RFC 9000 §7.3). If it came
    /// from the address the Retry went to (`address_validated`), that
    /// address is validated (no anti-amplification limit).
    pub fn accept_retried(
        &mut self,
        original_dcid: ConnectionId,
        retry_scid: ConnectionId,
        address_validated: bool,
    ) {
        if self.side == Side::Server && !self.peer_cid_learned {
            self.address_validated = address_validated;
            self.tokens.retried_from = Some((original_dcid, retry_scid));
        }
    }

    /// Server, before the client's first Initial arrives: answer it with
    /// CONNECTION_REFUSED and `reason`, in Initial keys the client can read,
    /// instead of starting a handshake (no TLS work is done). A full server
    /// says so at once this way rather than staying silent.
    pub fn refuse(&mut self, reason: impl Into<String>) {
        if self.side == Side::Server && !self.peer_cid_learned {
            self.refusal = Some((codes::CONNECTION_REFUSED, reason.into()));
        }
    }

    /// Server, before the client's first Initial arrives: its Retry token
    /// is ours but expired or names another connection ID. The client will
    /// not take a second Retry, so it is told at once with INVALID_TOKEN
    /// (RFC 9000 §8.1.2), the way [`Connection::refuse`] answers.
    pub fn refuse_token(&mut self, reason: impl Into<String>) {
        if self.side == Side::Server && !self.peer_cid_learned {
            self.refusal = Some((codes::INVALID_TOKEN, reason.into()));
        }
    }

    /// Closes the connection with an application error code and reason.
    pub fn close(&mut self, code: u64, reason: &str) {
        self.release_first_flight();
        self.start_closing(CloseFrame {
            application: true,
            code,
            reason: reason.to_string(),
        });
    }

    fn start_closing(&mut self, frame: CloseFrame) {
        if self.is_closing() {
            return;
        }
        self.close_reason = Some(CloseReason::Local {
            application: frame.application,
            code: frame.code,
            reason: frame.reason.clone(),
        });
        self.close_frame = Some(frame);
        self.close_pending = true;
        let until = self.now + self.recovery.pto_period(SpaceId::Data) * 3;
        self.state = State::Closing { until };
    }

    /// RFC 9000 §12.3: the packet numbers of a space are used up. The
    /// connection ends without a CONNECTION_CLOSE or any other packet
    /// (there is no number left to send one under); it drains, so what
    /// still arrives is absorbed.
    fn close_on_exhausted_packet_numbers(&mut self) {
        tracing::warn!(remote = %self.remote, "packet numbers exhausted: closing without a word");
        self.close_reason = Some(CloseReason::Local {
            application: false,
            code: codes::INTERNAL_ERROR,
            reason: "packet numbers exhausted (nothing was sent)".to_string(),
        });
        self.close_frame = None;
        self.close_pending = false;
        let until = self.now + self.recovery.pto_period(SpaceId::Data) * 3;
        self.state = State::Draining { until };
    }

    fn fail(&mut self, failure: TransportFailure) {
        tracing::debug!(code = failure.code, reason = %failure.reason, "closing on protocol error");
        self.start_closing(CloseFrame {
            application: false,
            code: failure.code,
            reason: failure.reason,
        });
    }

    // ---- timers ----------------------------------------------------------

    /// When the next keep-alive PING is due, if keep-alive is on.
    fn keep_alive_deadline(&self) -> Option<Instant> {
        let interval = self.config.keep_alive_interval?;
        (self.state == State::Established).then(|| self.keep_alive_since + interval)
    }

    fn idle_deadline(&self) -> Option<Instant> {
        let timeout = self.idle_timeout?;
        // RFC 9000 §10.1: never shorter than three PTOs.
        let floor = self.recovery.pto_period(SpaceId::Data) * 3;
        Some(self.last_activity + timeout.max(floor))
    }

    fn next_timer(&self, now: Instant) -> Option<Instant> {
        match self.state {
            State::Closed => return None,
            State::Closing { until } | State::Draining { until } => return Some(until),
            State::Handshaking | State::Established => {}
        }
        let mut timers = [
            self.idle_deadline(),
            self.loss_detection_timer(now),
            self.pacing_until,
            self.keep_alive_deadline(),
            self.path.deadline,
            self.path.repeat_at,
            self.client_move.next_timer(),
            None,
            None,
            None,
        ];
        for space in SpaceId::ALL {
            if self.spaces[space].keys.is_some() {
                timers[7 + space.index()] = self.spaces[space].acks.deadline();
            }
        }
        timers.into_iter().flatten().min()
    }

    /// Recovery's loss-detection timer as this connection arms it: a
    /// client keeps its anti-deadlock probe until the handshake is
    /// confirmed, and a server that may send nothing more to an address it
    /// has not validated arms no probe timeout until the client sends again
    /// (RFC 9002 §6.2.2.1): a probe could not leave, and each firing would
    /// only back the timer off.
    fn loss_detection_timer(&self, now: Instant) -> Option<Instant> {
        if self.amplification_blocked() {
            return self.recovery.loss_time();
        }
        let anti_deadlock = self.side == Side::Client && !self.handshake_confirmed;
        self.recovery.loss_detection_timer(now, anti_deadlock)
    }

    /// Time until `on_timeout` must be called, if a timer is armed.
    pub fn timeout(&self, now: Instant) -> Option<Duration> {
        self.next_timer(now)
            .map(|at| at.saturating_duration_since(now))
    }

    /// Fires expired timers: closing, idle, loss detection and PTO, pacing.
    pub fn on_timeout(&mut self, now: Instant) {
        self.now = now;
        match self.state {
            State::Closed => return,
            State::Closing { until } | State::Draining { until } => {
                if until <= now {
                    self.state = State::Closed;
                }
                return;
            }
            State::Handshaking | State::Established => {}
        }
        if self.idle_deadline().is_some_and(|d| d <= now) {
            self.close_reason = Some(CloseReason::IdleTimeout);
            self.state = State::Closed;
            self.trace_flush();
            return;
        }
        if self.pacing_until.is_some_and(|t| t <= now) {
            self.pacing_until = None;
        }
        if self.keep_alive_deadline().is_some_and(|t| t <= now) {
            // An ack-eliciting PING: recovery then probes on its own if it
            // goes unanswered.
            self.keep_alive_since = now;
            self.spaces[SpaceId::Data].probes = self.spaces[SpaceId::Data].probes.max(1);
            self.counters.keep_alives_sent += 1;
        }
        if self.path.deadline.is_some_and(|t| t <= now) {
            self.abandon_path_validation();
            if self.state == State::Closed {
                return;
            }
        }
        if self.path.repeat_at.is_some_and(|t| t <= now) {
            self.path.on_repeat_due();
        }
        self.client_move.on_timeout(now);
        if self.loss_detection_timer(now).is_some_and(|t| t <= now) {
            let outcome = self.recovery.on_loss_detection_timeout(now);
            if let Some(space) = outcome.lost_space {
                self.ecn_on_lost(&outcome.lost, now);
                self.on_packets_lost(space, outcome.lost);
            }
            if let Some((space, count)) = outcome.probes {
                self.ecn_on_pto();
                self.spaces[space].probes += count;
                if space != SpaceId::Data {
                    self.requeue_outstanding_crypto(space);
                }
            }
            self.streams.size_send_buffer(self.recovery.window());
        }
        self.trace_flush();
    }

    /// RFC 9002 §6.2.3: an ack-eliciting packet in a handshake space whose
    /// ACKs left our CRYPTO data there unacknowledged a round trip after we
    /// last sent it is the peer's probe: its timer fired without our
    /// flight. Send the flight again now instead of at our own probe
    /// timeout, a few times per connection (within the address's
    /// amplification limit, as every send). Our timeout backs off from
    /// the peer's schedule (a server without an RTT sample waits 1 s, then
    /// 2 s, 4 s), so on a lossy path the peer's probes are the extra tries
    /// that complete the handshake before its deadline: quic-go's client
    /// gives up after 10 s, and at 30% loss both ways one connection in
    /// some 75 ran out of tries against sift-server without these.
    pub(super) fn resend_crypto_on_peer_probe(&mut self, space: SpaceId, now: Instant) {
        if space == SpaceId::Data
            || !self.config.recovery.resend_crypto_on_peer_probe
            || self.counters.early_crypto_resends >= EARLY_CRYPTO_RESENDS
        {
            return;
        }
        let last_crypto_sent = self
            .recovery
            .outstanding(space)
            .filter(|p| {
                p.frames
                    .iter()
                    .any(|f| matches!(f, SentFrame::Crypto { .. }))
            })
            .map(|p| p.time_sent)
            .max();
        let Some(sent) = last_crypto_sent else {
            return;
        };
        // Sooner, the peer may have sent its probe before our flight
        // reached it. A probe the peer sent the moment our flight would
        // have arrived (a server holding 1-RTT packets sent with our
        // Finished, `probe_for_finished`) comes back one round trip after
        // it, which the smoothed RTT's first samples overstate.
        if now.saturating_duration_since(sent) < self.recovery.rtt().min() * 7 / 8 {
            return;
        }
        self.counters.early_crypto_resends += 1;
        self.requeue_outstanding_crypto(space);
        // As a probe (RFC 9002 §7.5: beyond the window): a client's window
        // is full of the 1-RTT packets it sent with its lost Finished, and
        // would hold the Finished back until its own probe timeout.
        let probes = &mut self.spaces[space].probes;
        *probes = (*probes).max(1);
    }

    /// A Handshake packet reaching a server that has discarded its
    /// Handshake keys while its HANDSHAKE_DONE is unacknowledged: the
    /// client is still probing with its Finished, so it has not confirmed
    /// the handshake (RFC 9001 §4.1.2). Send HANDSHAKE_DONE again now, in
    /// a probe, rather than at our Data timeout, which a lossy handshake
    /// can have pushed past the client's idle timeout: a first RTT sample
    /// taken from a Handshake packet the client held until its lost
    /// ServerHello came is that whole wait (quic-go's client, 30% loss,
    /// went 30 s without a packet and closed). Counted with the early
    /// crypto resends, and with them at most four times.
    pub(super) fn resend_handshake_done_on_client_probe(&mut self) {
        if self.side != Side::Server
            || !self.handshake_confirmed
            || self.handshake_done_pending
            || !self.config.recovery.resend_crypto_on_peer_probe
            || self.counters.early_crypto_resends >= EARLY_CRYPTO_RESENDS
        {
            return;
        }
        let unacknowledged = self.recovery.outstanding(SpaceId::Data).any(|p| {
            p.frames
                .iter()
                .any(|f| matches!(f, SentFrame::HandshakeDone))
        });
        if !unacknowledged {
            return;
        }
        self.counters.early_crypto_resends += 1;
        self.handshake_done_pending = true;
        let probes = &mut self.spaces[SpaceId::Data].probes;
        *probes = (*probes).max(1);
    }

    /// A PTO in a handshake space re-sends every unacknowledged CRYPTO
    /// frame: the peer may be missing any of them.
    fn requeue_outstanding_crypto(&mut self, space: SpaceId) {
        let level = level_of(space);
        let frames: Vec<(u64, Vec<u8>)> = self
            .recovery
            .outstanding(space)
            .flat_map(|p| p.frames.iter())
            .filter_map(|f| match f {
                SentFrame::Crypto { offset, data } => Some((*offset, data.clone())),
                _ => None,
            })
            .collect();
        for (offset, data) in frames.into_iter().rev() {
            self.handshake.requeue(level, offset, data);
        }
    }

    // ---- per-frame delivery feedback ---------------------------------------

    fn on_packets_lost(
        &mut self,
        space: SpaceId,
        packets: Vec<crate::recovery::SentPacket<SentFrame>>,
    ) {
        if space == SpaceId::Data && !packets.is_empty() {
            let lost = packets.iter().filter(|p| !p.pmtu_probe);
            self.coding.on_outcomes([], lost.map(|p| p.packet_number));
            // A lost path MTU probe was too big for the path, which says
            // nothing of damage: only other losses start a checksum-free hold.
            if packets.iter().any(|p| !p.pmtu_probe) {
                self.checksums.on_impairment(self.now);
            }
            self.pmtud_on_lost(&packets);
        }
        self.send_again(space, packets);
    }

    /// Queues again what `packets` of `space` carried: lost, or never read
    /// (a Retry discards what went before it).
    fn send_again(&mut self, space: SpaceId, packets: Vec<crate::recovery::SentPacket<SentFrame>>) {
        for packet in packets {
            let mut retransmits = false;
            for frame in packet.frames {
                match frame {
                    SentFrame::Crypto { offset, data } => {
                        self.handshake.requeue(level_of(space), offset, data);
                        retransmits = true;
                    }
                    SentFrame::Stream(chunk) => {
                        self.streams.on_chunk_lost(&chunk);
                        retransmits = true;
                    }
                    SentFrame::Control(control) => self.streams.on_control_lost(&control),
                    SentFrame::HandshakeDone => self.handshake_done_pending = true,
                    SentFrame::PathChallenge(data) => self.path.on_challenge_lost(data),
                    SentFrame::NewToken => {
                        self.tokens.new_token_pending = self.tokens.new_token_out.is_some()
                    }
                    SentFrame::NewConnectionId(sequence) => {
                        self.cids.on_announcement_lost(sequence)
                    }
                    SentFrame::AckFrequency(sequence) => self.ack_frequency.on_frame_lost(sequence),
                    SentFrame::RetireConnectionId(sequence) => {
                        self.cids.on_retirement_lost(sequence)
                    }
                    SentFrame::Ack { .. } => {}
                }
            }
            if retransmits {
                self.counters.retransmitted_packets += 1;
            }
        }
    }

    fn on_packets_acked(
        &mut self,
        space: SpaceId,
        packets: Vec<crate::recovery::SentPacket<SentFrame>>,
    ) {
        if space == SpaceId::Data {
            if let Some(largest) = packets.iter().map(|p| p.packet_number).max() {
                self.key_phases.on_acked(largest);
            }
            self.coding
                .on_outcomes(packets.iter().map(|p| p.packet_number), []);
        }
        for packet in packets {
            for frame in packet.frames {
                match frame {
                    SentFrame::Ack {
                        largest: Some(largest),
                    } => self.spaces[space].acks.on_ack_acked(largest),
                    SentFrame::Stream(chunk) => self.streams.on_chunk_acked(&chunk),
                    SentFrame::Control(control) => self.streams.on_control_acked(&control),
                    SentFrame::NewConnectionId(sequence) => {
                        self.cids.on_announcement_acked(sequence)
                    }
                    SentFrame::Ack { largest: None }
                    | SentFrame::Crypto { .. }
                    | SentFrame::HandshakeDone
                    | SentFrame::PathChallenge(_)
                    | SentFrame::RetireConnectionId(_)
                    | SentFrame::AckFrequency(_) => {}
                    // A newer token (a fresher saved path state) may be
                    // waiting to go: only the one sent last is done.
                    SentFrame::NewToken if !self.tokens.new_token_pending => {
                        self.tokens.new_token_out = None
                    }
                    SentFrame::NewToken => {}
                }
            }
        }
    }

    /// Path MTU discovery learns from 1-RTT losses: a probe's, or a run of
    /// large packets' (a black hole).
    fn pmtud_on_lost(&mut self, packets: &[crate::recovery::SentPacket<SentFrame>]) {
        let now = self.now;
        for probe in packets.iter().filter(|p| p.pmtu_probe) {
            self.pmtud
                .on_probe_lost(probe.packet_number, probe.size as usize, now);
        }
        let ordinary = packets
            .iter()
            .filter(|p| !p.pmtu_probe && p.ack_eliciting)
            .map(|p| (p.packet_number, p.size as usize));
        if let Some(change) = self.pmtud.on_lost(ordinary, now) {
            tracing::debug!(
                from = change.old,
                to = change.new,
                "large packets vanish while smaller ones pass: a path MTU black hole"
            );
            self.on_datagram_size_changed(change);
        }
    }

    /// ... and from acknowledgements (heard before the same ACK's losses):
    /// a probe's raises the size.
    pub(super) fn pmtud_on_acked(&mut self, packets: &[crate::recovery::SentPacket<SentFrame>]) {
        let now = self.now;
        self.pmtud.on_acked(
            packets
                .iter()
                .filter(|p| !p.pmtu_probe)
                .map(|p| (p.packet_number, p.size as usize)),
        );
        for probe in packets.iter().filter(|p| p.pmtu_probe) {
            if let Some(change) =
                self.pmtud
                    .on_probe_acked(probe.packet_number, probe.size as usize, now)
            {
                tracing::debug!(from = change.old, to = change.new, "path MTU raised");
                self.on_datagram_size_changed(change);
            }
        }
    }

    /// The datagram size changed: the controller and pacer count packets
    /// of the new size, and a trace says so.
    fn on_datagram_size_changed(&mut self, change: pmtud::SizeChange) {
        self.recovery.set_mss(change.new as u64);
        if let Some(tracing) = self.trace.as_mut() {
            tracing.observer.event(
                self.now,
                &crate::trace::Event::MtuUpdated {
                    old: change.old as u64,
                    new: change.new as u64,
                    done: change.done,
                },
            );
        }
    }

    fn discard_space(&mut self, space: SpaceId) {
        if space == SpaceId::Initial {
            self.original_initial_keys = None;
        }
        if self.spaces[space].keys.take().is_some() {
            self.recovery.discard_space(space);
            self.spaces[space].probes = 0;
        }
    }

    // ---- streams -----------------------------------------------------------

    fn check_open(&self) -> Result<(), Error> {
        if self.is_closing() {
            Err(Error::Closed)
        } else {
            Ok(())
        }
    }

    /// Opens a bidirectional stream.
    pub fn stream_open_bi(&mut self) -> Result<StreamId, Error> {
        self.check_open()?;
        Ok(self.streams.open(Dir::Bi)?)
    }

    /// Opens a unidirectional stream.
    pub fn stream_open_uni(&mut self) -> Result<StreamId, Error> {
        self.check_open()?;
        Ok(self.streams.open(Dir::Uni)?)
    }

    /// Queues `data` on a stream; returns how many bytes were accepted
    /// (fewer when the stream's or the connection's send buffer is full, or
    /// the peer's credit plus `StreamConfig::send_beyond_credit` is used
    /// up: retry when the stream is writable, after acknowledgements or
    /// credit arrive). `fin` applies only if everything was accepted. The
    /// send buffers follow the congestion window
    /// (`Streams::size_send_buffer`).
    pub fn stream_send(&mut self, id: StreamId, data: &[u8], fin: bool) -> Result<usize, Error> {
        self.check_open()?;
        self.streams.size_send_buffer(self.recovery.window());
        let written = self.streams.write(id, data, fin)?;
        if written > 0 || fin {
            self.release_first_flight();
        }
        Ok(written)
    }

    /// This connection's share of its endpoint's send budget
    /// (`Endpoint::with_send_budget`; `None`: no budget): the floor and the
    /// ceiling of its send buffers (`Streams::set_send_share`).
    pub fn set_send_share(&mut self, share: Option<u64>) {
        self.streams.set_send_share(share);
    }

    /// Writes up to `max` bytes that `fill` places straight into a
    /// stream's send buffer, and returns how many: `fill` gets the room as
    /// slices in stream order and returns how many bytes it wrote into
    /// them, in order (as `readv` fills its buffers). A file read this way
    /// lands in the send buffer with no copy through the caller's buffer.
    /// `Err(Stream(Blocked))` when there is no room (`fill` is not called).
    pub fn stream_send_with(
        &mut self,
        id: StreamId,
        max: usize,
        fill: impl FnOnce(&mut [std::io::IoSliceMut<'_>]) -> usize,
    ) -> Result<usize, Error> {
        self.check_open()?;
        self.streams.size_send_buffer(self.recovery.window());
        let written = self.streams.write_with(id, max, fill)?;
        if written > 0 {
            self.release_first_flight();
        }
        Ok(written)
    }

    /// Reads in-order bytes from a stream: `(bytes read, fin reached)`.
    pub fn stream_recv(&mut self, id: StreamId, buf: &mut [u8]) -> Result<(usize, bool), Error> {
        if matches!(self.state, State::Closed) && self.streams.readable().next().is_none() {
            return Err(Error::Closed);
        }
        let rtt = self.recovery.rtt();
        let (srtt, min_rtt) = (rtt.smoothed(), rtt.min());
        Ok(self.streams.read(id, buf, self.now, srtt, min_rtt)?)
    }

    /// Like [`stream_recv`](Self::stream_recv) without a copy: up to `max`
    /// bytes are lent to `consume` in stream order, as one or two slices
    /// of the receive buffer, each taken whole (hash them, write them out).
    /// Returns how many were lent and whether the stream ended there.
    pub fn stream_recv_with(
        &mut self,
        id: StreamId,
        max: usize,
        consume: &mut dyn FnMut(&[u8]),
    ) -> Result<(usize, bool), Error> {
        if matches!(self.state, State::Closed) && self.streams.readable().next().is_none() {
            return Err(Error::Closed);
        }
        let rtt = self.recovery.rtt();
        let (srtt, min_rtt) = (rtt.smoothed(), rtt.min());
        Ok(self
            .streams
            .read_with(id, max, consume, self.now, srtt, min_rtt)?)
    }

    /// Whether stream-layer frames wait to be sent (MAX_DATA,
    /// MAX_STREAM_DATA, MAX_STREAMS, STOP_SENDING, RESET_STREAM, the
    /// BLOCKED reports). After a read: whether it freed credit the peer
    /// must hear of now, or only moved bytes out.
    pub fn has_pending_stream_frames(&self) -> bool {
        self.streams.has_control()
    }

    /// Abandons sending on a stream (RESET_STREAM with `error_code`).
    pub fn stream_reset(&mut self, id: StreamId, error_code: u64) -> Result<(), Error> {
        self.check_open()?;
        Ok(self.streams.reset(id, error_code)?)
    }

    /// Asks the peer to stop sending on a stream (STOP_SENDING).
    pub fn stream_stop_sending(&mut self, id: StreamId, error_code: u64) -> Result<(), Error> {
        self.check_open()?;
        Ok(self.streams.stop_sending(id, error_code)?)
    }

    /// The next stream the peer opened that the application has not seen.
    pub fn stream_accept(&mut self, dir: Dir) -> Option<StreamId> {
        self.streams.accept(dir)
    }

    /// Whether [`Connection::stream_accept`] may have a stream of `dir` to
    /// give (for drivers deciding whom to wake).
    pub fn has_stream_to_accept(&self, dir: Dir) -> bool {
        self.streams.has_stream_to_accept(dir)
    }

    /// Whether every byte written to the stream so far was acked (the FIN
    /// need not be written).
    pub fn stream_data_acked(&self, id: StreamId) -> bool {
        self.streams.is_written_data_acked(id)
    }

    /// Whether everything written to the stream, and its FIN, was acked.
    pub fn stream_finished_sending(&self, id: StreamId) -> bool {
        self.streams.is_finished_sending(id)
    }

    /// Streams with data, a FIN or a reset to read.
    pub fn readable(&self) -> Vec<StreamId> {
        self.streams.readable().collect()
    }

    /// Streams that can accept data now.
    pub fn writable(&self) -> Vec<StreamId> {
        self.streams.writable().collect()
    }

    /// Whether a read of stream `id` would return at once: bytes, its end,
    /// a reset, or an error (not a stream we receive on).
    pub fn stream_is_readable(&self, id: StreamId) -> bool {
        self.streams.is_readable(id)
    }

    /// Whether a write to stream `id` would return at once: room for
    /// bytes, or an error (finished, reset, stopped, not ours).
    pub fn stream_is_writable(&self, id: StreamId) -> bool {
        self.streams.is_writable(id)
    }

    // ---- datagrams -----------------------------------------------------------

    /// The largest datagram (RFC 9221) that can be sent now, once the peer
    /// said it takes them: its `max_datagram_frame_size` counts the whole
    /// frame (type, length and payload), and one frame must fit a 1-RTT
    /// packet of the datagram size path MTU discovery is at now. That size
    /// can fall (a black hole, a new path); a datagram queued for a larger
    /// one is then dropped unsent (`Stats::datagrams_dropped`).
    pub fn max_datagram_len(&self) -> Option<usize> {
        let peer = self.peer_max_datagram_frame_size?;
        Some(max_datagram_payload(peer).min(self.datagram_payload_room()))
    }

    /// The largest DATAGRAM payload a packet of the current size holds.
    fn datagram_payload_room(&self) -> usize {
        self.pmtud
            .current()
            .saturating_sub(DATAGRAM_PACKET_OVERHEAD)
    }

    /// Queues an unreliable datagram (RFC 9221).
    pub fn send_datagram(&mut self, data: &[u8]) -> Result<(), Error> {
        self.check_open()?;
        let max = self.max_datagram_len().ok_or(Error::DatagramsUnsupported)?;
        if data.len() > max {
            return Err(Error::DatagramTooLarge {
                len: data.len(),
                max,
            });
        }
        self.datagrams_out.push_back(data.to_vec());
        Ok(())
    }

    /// The next received datagram, if any.
    pub fn recv_datagram(&mut self) -> Option<Vec<u8>> {
        self.datagrams_in.pop_front()
    }

    // ---- observation -------------------------------------------------------

    /// Loss verdicts the controller made since the last call, with the
    /// packet numbers involved (the simulator scores them).
    pub fn drain_loss_verdicts(&mut self) -> Vec<VerdictRecord> {
        self.recovery.drain_verdicts()
    }

    /// Counters and estimates.
    pub fn stats(&self) -> Stats {
        let recovery = self.recovery.stats();
        let rtt = self.recovery.rtt();
        let c = &self.counters;
        Stats {
            packets_sent: c.packets_sent,
            packets_received: c.packets_received,
            bytes_sent: c.bytes_sent,
            bytes_received: c.bytes_received,
            packets_lost: recovery.lost_packets,
            retransmitted_packets: c.retransmitted_packets,
            ptos: recovery.ptos,
            congestion_events: recovery.congestion_events,
            spurious_losses: recovery.spurious_losses,
            undone_congestion_events: recovery.undone_congestion_events,
            packet_threshold: self.recovery.packet_threshold(),
            reordering_window_us: self.recovery.reordering_window().as_micros() as u64,
            corruption_notices_received: recovery.corrupted_packets,
            corruption_notices_ignored: recovery.ignored_corruption_names,
            corruption_notices_over_budget: recovery.corruption_names_over_budget,
            corruption_notices_distrusted: self.recovery.notices_distrusted(),
            packet_numbers_skipped: self.skips.total(),
            peer_migrations: self.path.migrations,
            retried: self.tokens.retry.is_some(),
            resumed: self.handshake.is_resumed(),
            zero_rtt_accepted: self.zero_rtt.outcome == zero_rtt::EarlyData::Accepted,
            zero_rtt_rejected: self.zero_rtt.outcome == zero_rtt::EarlyData::Rejected,
            zero_rtt_bytes: self.zero_rtt.stream_bytes,
            zero_rtt_packets: self.zero_rtt.packets,
            connection_id_switches: self.cids.switches,
            paths_validated: self.path.validated,
            paths_abandoned: self.path.abandoned,
            path_responses_withheld: self.counters.path_responses_withheld,
            on_preferred_address: self.client_move.state == MoveState::Moved
                || self.server_offer.moved,
            corruption_notices_sent: c.corruption_notices_sent,
            payload_corrupt_received: c.payload_corrupt_received,
            header_corrupt_dropped: c.header_corrupt_dropped,
            damaged_headers_repaired: c.damaged_headers_repaired,
            malformed_dropped: c.malformed_dropped + c.undecryptable_dropped,
            one_rtt_held: c.one_rtt_held,
            corruption_notices_negotiated: self.notices_negotiated,
            version: crate::wire::version_name(self.versions.current().version()),
            cipher: self
                .handshake
                .cipher_suite()
                .map_or_else(String::new, |aead| aead.name().to_string()),
            checksum_free_datagrams: c.checksum_free_datagrams,
            authentication_failures: c.authentication_failures,
            key_updates: self.key_phases.updates,
            keep_alives_sent: self.counters.keep_alives_sent,
            early_crypto_resends: self.counters.early_crypto_resends,
            max_datagram_size: self.pmtud.current() as u64,
            datagrams_dropped: c.datagrams_dropped,
            pmtu_probes_sent: self.pmtud.counters().probes_sent,
            pmtu_probes_lost: self.pmtud.counters().probes_lost,
            pmtu_black_holes: self.pmtud.counters().black_holes,
            cwnd: self.recovery.window(),
            ssthresh: self.recovery.ssthresh(),
            bytes_in_flight: self.recovery.bytes_in_flight(),
            stream_send_buffered: self.streams.stats().send_buffered,
            srtt_us: rtt.smoothed().as_micros() as u64,
            min_rtt_us: rtt.min().as_micros() as u64,
            rttvar_us: rtt.variance().as_micros() as u64,
            careful_resume: self.recovery.careful_resume(),
            ecn: self.ecn_stats(),
            repair: self.coding.stats(),
            send_times: self.send_clock.times(),
            cc: self.recovery.cc_metrics(),
        }
    }

    fn peer_limits(params: &TransportParams) -> PeerLimits {
        PeerLimits {
            initial_max_data: params.initial_max_data,
            initial_max_stream_data_bidi_local: params.initial_max_stream_data_bidi_local,
            initial_max_stream_data_bidi_remote: params.initial_max_stream_data_bidi_remote,
            initial_max_stream_data_uni: params.initial_max_stream_data_uni,
            initial_max_streams_bidi: params.initial_max_streams_bidi,
            initial_max_streams_uni: params.initial_max_streams_uni,
        }
    }
}

/// Bytes of a 1-RTT packet that a DATAGRAM frame's payload cannot use: the
/// short header (a 20-byte connection ID, a 4-byte packet number), the
/// AEAD tag(s), the frame's type and length, and room for an ACK frame.
const DATAGRAM_PACKET_OVERHEAD: usize = 64;

/// The largest payload of a DATAGRAM frame (type 0x31, with a length) of
/// at most `frame_size` bytes: RFC 9221 §3's `max_datagram_frame_size`.
fn max_datagram_payload(frame_size: u64) -> usize {
    let mut payload = frame_size.saturating_sub(1);
    while payload > 0 && 1 + crate::wire::varint::varint_len(payload) as u64 + payload > frame_size
    {
        payload -= 1;
    }
    usize::try_from(payload).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests;
