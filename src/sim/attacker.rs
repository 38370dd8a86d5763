//! The attacker: a host of `sim::network` that does what SECURITY.md says
//! an attacker can do to a sift endpoint, so that every such attack runs as
//! a test and the census (`census`) measures what it bought.
//!
//! What it can do:
//! - **Spoof:** send any datagram in any address's name ([`Attacker::send`],
//!   [`Attacker::send_at`]), and let the datagrams of its own endpoint
//!   leave in another address's name ([`Attacker::spoof_as`]), as many as
//!   it allows ([`Attacker::allow_endpoint_datagrams`]).
//! - **Hold real keys:** its own client [`Endpoint`] makes genuine
//!   connections; once one has finished its handshake the attacker seals
//!   whatever 1-RTT frames it likes with that connection's keys and sends
//!   them from any address ([`Attacker::forge`]: PATH_CHALLENGE floods,
//!   probing packets, a PING that moves a connection).
//! - **Capture and replay:** it sees every datagram from or to an address
//!   it taps (`Network::tap`) and every datagram that reaches it, keeps
//!   them ([`Attacker::captured`]) and can send any again from anywhere;
//!   the tokens in them (a Retry's, an Initial's) are read with
//!   [`retry_token`] and [`initial_token`]; NEW_TOKEN tokens reach its own
//!   connections like any client's (`Config::token_store`).
//! - **Intercept:** on a tapped link it may drop or replace a datagram
//!   ([`Attacker::intercept`]): an on-path attacker rewriting sources.
//! - **Flood:** send a stream of datagrams made on demand at a fixed
//!   interval ([`Attacker::flood`]): Initials with and without tokens,
//!   first datagrams of versions nobody speaks, short headers for unknown
//!   connections.
//!
//! The `craft` functions build those datagrams. Nothing here reads a clock
//! or an unseeded RNG: the network passes `now`, and the bytes an attack
//! needs come from the caller.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::network::{Datagram, Node, Tapped};
use crate::crypto::seal_packet;
use crate::crypto::tls::initial_protection;
use crate::wire::{parse_retry, ConnectionId, Frame, Header, PacketType, VERSION};
use crate::{Config, Connection, ConnectionHandle, Endpoint, Side};

/// Captured datagrams kept at most; later ones are counted, not kept.
pub const MAX_CAPTURED: usize = 100_000;

/// A datagram the attacker saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Captured {
    /// The datagram.
    pub datagram: Datagram,
    /// When it was seen.
    pub at: Instant,
    /// It was addressed to the attacker (otherwise seen on a tapped link).
    pub arrived: bool,
}

/// What an intercepting attacker does with a datagram on a tapped link.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Interception {
    /// Let it through.
    Pass,
    /// Drop it.
    Drop,
    /// Drop it and send this instead (at once, from the attacker's link).
    Replace(Datagram),
}

/// Makes the `n`th datagram of a flood (from 0); `None` ends the flood.
pub type MakeDatagram = Box<dyn FnMut(u64) -> Option<Datagram>>;

/// Decides what happens to a datagram on a tapped link.
pub type Interceptor = Box<dyn FnMut(&Datagram) -> Interception>;

struct Flood {
    next_at: Instant,
    interval: Duration,
    remaining: u64,
    sent: u64,
    make: MakeDatagram,
}

/// What the attacker sent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AttackerStats {
    /// Datagrams sent, in all.
    pub datagrams_sent: u64,
    /// Their bytes.
    pub bytes_sent: u64,
    /// Datagrams its endpoint made that were not sent (beyond its
    /// allowance).
    pub endpoint_datagrams_withheld: u64,
    /// Datagrams seen but not kept (past [`MAX_CAPTURED`]).
    pub captures_dropped: u64,
}

/// A host that spoofs, captures, replays, forges and floods.
pub struct Attacker {
    home: SocketAddr,
    endpoint: Endpoint,
    /// The source address its endpoint's datagrams carry (`None`: `home`).
    spoof_as: Option<SocketAddr>,
    /// How many more of its endpoint's datagrams go out (`None`: all).
    endpoint_allowance: Option<u64>,
    outbox: VecDeque<Datagram>,
    later: BTreeMap<(Instant, u64), Datagram>,
    later_sequence: u64,
    floods: Vec<Flood>,
    captured: Vec<Captured>,
    interceptor: Option<Interceptor>,
    buffer: Vec<u8>,
    stats: AttackerStats,
}

impl Attacker {
    /// An attacker living at `home` (give the network that address), with
    /// a client endpoint there for connections of its own.
    pub fn new(home: SocketAddr) -> Self {
        Self {
            home,
            endpoint: Endpoint::new(home, None),
            spoof_as: None,
            endpoint_allowance: None,
            outbox: VecDeque::new(),
            later: BTreeMap::new(),
            later_sequence: 0,
            floods: Vec::new(),
            captured: Vec::new(),
            interceptor: None,
            buffer: vec![0; 65_536],
            stats: AttackerStats::default(),
        }
    }

    /// Where the attacker really is.
    pub fn home(&self) -> SocketAddr {
        self.home
    }

    /// Its client endpoint: connect, download, read tokens, as any client.
    pub fn endpoint(&mut self) -> &mut Endpoint {
        &mut self.endpoint
    }

    /// Its endpoint's datagrams leave in `address`'s name from now on
    /// (`None`: its own again). Answers go to `address`, not to it.
    pub fn spoof_as(&mut self, address: Option<SocketAddr>) {
        self.spoof_as = address;
    }

    /// Only `datagrams` more of its endpoint's datagrams go out (`None`: no
    /// limit); the rest are made and withheld, as a blind spoofer that has
    /// said what it wanted to say stays quiet.
    pub fn allow_endpoint_datagrams(&mut self, datagrams: Option<u64>) {
        self.endpoint_allowance = datagrams;
    }

    /// Sends `datagram` now, in whatever name it carries.
    pub fn send(&mut self, datagram: Datagram) {
        self.outbox.push_back(datagram);
    }

    /// Sends `datagram` at `at`.
    pub fn send_at(&mut self, at: Instant, datagram: Datagram) {
        self.later.insert((at, self.later_sequence), datagram);
        self.later_sequence += 1;
    }

    /// Sends `count` datagrams made by `make`, one every `interval` from
    /// `start`.
    pub fn flood(
        &mut self,
        start: Instant,
        interval: Duration,
        count: u64,
        make: impl FnMut(u64) -> Option<Datagram> + 'static,
    ) {
        self.floods.push(Flood {
            next_at: start,
            interval,
            remaining: count,
            sent: 0,
            make: Box::new(make),
        });
    }

    /// Whether every flood has sent all it was asked to.
    pub fn floods_done(&self) -> bool {
        self.floods.iter().all(|flood| flood.remaining == 0)
    }

    /// Seals `frames` with the 1-RTT keys of its connection `handle` (one
    /// that finished its handshake) and sends the packet to that
    /// connection's server in `from`'s name. Returns the datagram's length,
    /// or `None` if the connection cannot seal one (no keys, closed).
    pub fn forge(
        &mut self,
        handle: ConnectionHandle,
        frames: &[u8],
        from: SocketAddr,
        now: Instant,
    ) -> Option<usize> {
        let connection = self.endpoint.connection(handle)?;
        let to = connection.remote();
        let len = connection.forge_one_rtt(frames, &mut self.buffer, now)?;
        let bytes = self.buffer.get(..len)?.to_vec();
        self.send(Datagram { from, to, bytes });
        Some(len)
    }

    /// Decides the fate of every datagram on a tapped link from now on.
    pub fn intercept(&mut self, interceptor: impl FnMut(&Datagram) -> Interception + 'static) {
        self.interceptor = Some(Box::new(interceptor));
    }

    /// Stops intercepting: tapped datagrams pass again.
    pub fn stop_intercepting(&mut self) {
        self.interceptor = None;
    }

    /// Every datagram seen, in order.
    pub fn captured(&self) -> &[Captured] {
        &self.captured
    }

    /// What it sent.
    pub fn stats(&self) -> &AttackerStats {
        &self.stats
    }

    fn capture(&mut self, datagram: &Datagram, at: Instant, arrived: bool) {
        if self.captured.len() >= MAX_CAPTURED {
            self.stats.captures_dropped += 1;
            return;
        }
        self.captured.push(Captured {
            datagram: datagram.clone(),
            at,
            arrived,
        });
    }

    fn sent(&mut self, datagram: Datagram) -> Option<Datagram> {
        self.stats.datagrams_sent += 1;
        self.stats.bytes_sent += datagram.bytes.len() as u64;
        Some(datagram)
    }

    /// The next datagram its endpoint lets out, in the name it chose.
    fn poll_endpoint(&mut self, now: Instant) -> Option<Datagram> {
        loop {
            let (len, to) = self.endpoint.poll_transmit(now, &mut self.buffer)?;
            match &mut self.endpoint_allowance {
                Some(0) => {
                    self.stats.endpoint_datagrams_withheld += 1;
                    continue;
                }
                Some(left) => *left -= 1,
                None => {}
            }
            return Some(Datagram {
                from: self.spoof_as.unwrap_or(self.home),
                to,
                bytes: self.buffer.get(..len)?.to_vec(),
            });
        }
    }
}

impl Node for Attacker {
    fn recv(&mut self, mut datagram: Datagram, now: Instant) {
        self.capture(&datagram, now, true);
        if datagram.to == self.home {
            self.endpoint.recv(&mut datagram.bytes, datagram.from, now);
        }
    }

    fn poll_send(&mut self, now: Instant) -> Option<Datagram> {
        if let Some(datagram) = self.outbox.pop_front() {
            return self.sent(datagram);
        }
        if let Some(entry) = self.later.first_entry() {
            if entry.key().0 <= now {
                let datagram = entry.remove();
                return self.sent(datagram);
            }
        }
        for index in 0..self.floods.len() {
            let Some(flood) = self.floods.get_mut(index) else {
                break;
            };
            if flood.remaining == 0 || flood.next_at > now {
                continue;
            }
            let made = (flood.make)(flood.sent);
            flood.sent += 1;
            flood.next_at += flood.interval;
            flood.remaining = if made.is_some() {
                flood.remaining - 1
            } else {
                0
            };
            if let Some(datagram) = made {
                return self.sent(datagram);
            }
        }
        let datagram = self.poll_endpoint(now)?;
        self.sent(datagram)
    }

    fn next_wake(&mut self, now: Instant) -> Option<Instant> {
        let floods = self
            .floods
            .iter()
            .filter(|flood| flood.remaining > 0)
            .map(|flood| flood.next_at);
        let later = self.later.keys().next().map(|(at, _)| *at);
        floods.chain(later).chain(self.endpoint.timeout(now)).min()
    }

    fn on_wake(&mut self, now: Instant) {
        self.endpoint.on_timeout(now);
    }

    fn observe(&mut self, datagram: &Datagram, now: Instant) -> Tapped {
        self.capture(datagram, now, false);
        let Some(interceptor) = self.interceptor.as_mut() else {
            return Tapped::Pass;
        };
        match interceptor(datagram) {
            Interception::Pass => Tapped::Pass,
            Interception::Drop => Tapped::Drop,
            Interception::Replace(instead) => {
                self.outbox.push_back(instead);
                Tapped::Drop
            }
        }
    }
}

/// The token of a Retry packet, if `datagram` is one.
pub fn retry_token(datagram: &[u8]) -> Option<Vec<u8>> {
    parse_retry(datagram).ok().map(|retry| retry.token.to_vec())
}

/// The token an Initial packet carries (empty or not), if `datagram`
/// starts with an Initial of a version sift speaks.
pub fn initial_token(datagram: &[u8]) -> Option<Vec<u8>> {
    let header = crate::endpoint::parse_any_header(datagram).ok()?;
    (header.ty == crate::wire::PacketType::Initial).then(|| header.token.to_vec())
}

/// Datagrams to build attacks from.
pub mod craft {
    use super::*;

    /// The first datagram of a genuine client connection from `local` to
    /// `server` (its Initial with a ClientHello, padded to 1200 bytes),
    /// carrying `token` if one is given. Its connection IDs come from
    /// `config.rng_seed`.
    pub fn client_initial(
        config: Config,
        local: SocketAddr,
        server: SocketAddr,
        token: Option<Vec<u8>>,
        now: Instant,
    ) -> Option<Vec<u8>> {
        let mut connection = Connection::connect(config, local, server, now).ok()?;
        if let Some(token) = token {
            connection.use_token(token);
        }
        let mut buffer = vec![0; 65_536];
        let (len, _) = connection.send(&mut buffer, now).ok()??;
        buffer.truncate(len);
        Some(buffer)
    }

    /// The first datagram of a client of a version nobody speaks: a long
    /// header with `dcid` and `scid`, padded to `len` bytes. A server
    /// answers one of at least 1200 bytes with Version Negotiation.
    pub fn unknown_version_initial(version: u32, dcid: &[u8], scid: &[u8], len: usize) -> Vec<u8> {
        let mut datagram = vec![0xc0];
        datagram.extend_from_slice(&version.to_be_bytes());
        for cid in [dcid, scid] {
            datagram.push(u8::try_from(cid.len()).unwrap_or(u8::MAX));
            datagram.extend_from_slice(cid);
        }
        datagram.resize(len.max(datagram.len()), 0);
        datagram
    }

    /// A short-header datagram of `len` bytes naming `dcid` (8 bytes, as
    /// sift's IDs are), the rest `fill`: for a connection the server does
    /// not know, what draws a stateless reset.
    pub fn short_header(dcid: [u8; 8], len: usize, fill: u8) -> Vec<u8> {
        let mut datagram = vec![0x40];
        datagram.extend_from_slice(&dcid);
        datagram.resize(len.max(datagram.len()), fill);
        datagram
    }

    /// `count` PATH_CHALLENGE frames, the `n`th carrying `n` in its data:
    /// probing frames only, so a packet of them moves no connection.
    pub fn path_challenges(count: u8) -> Vec<u8> {
        let mut frames = Vec::new();
        for n in 0..count {
            Frame::PathChallenge { data: [n; 8] }.encode(&mut frames);
        }
        frames
    }

    /// A PING padded with PADDING to `len` bytes of frames: not a probing
    /// packet, so from a new address it moves a confirmed connection.
    pub fn padded_ping(len: usize) -> Vec<u8> {
        let mut frames = Vec::new();
        Frame::Ping.encode(&mut frames);
        frames.resize(len.max(frames.len()), 0);
        frames
    }

    /// A client Initial in sift/1 under the Initial keys of `dcid` (which
    /// anyone can derive, RFC 9001 §5.2): packet `packet_number` carrying
    /// `frames`, padded with PADDING to a datagram of `datagram_len` bytes.
    pub fn sift_initial(
        dcid: ConnectionId,
        scid: ConnectionId,
        packet_number: u64,
        frames: &[u8],
        datagram_len: usize,
    ) -> Option<Vec<u8>> {
        let header = Header {
            ty: PacketType::Initial,
            version: VERSION,
            dcid,
            scid,
            token: &[],
            packet_number,
            payload_len: 0,
            key_phase: false,
        };
        let keys = initial_protection(dcid.as_slice(), Side::Client);
        let mut frames = frames.to_vec();
        let mut datagram = Vec::new();
        // The payload length varint grows as the padding does: settle in
        // a few rounds.
        for _ in 0..3 {
            datagram.clear();
            seal_packet(&header, &frames, &keys, &mut datagram).ok()?;
            if datagram.len() >= datagram_len {
                break;
            }
            let short_by = datagram_len - datagram.len();
            frames.resize(frames.len() + short_by, 0);
        }
        Some(datagram)
    }

    /// A CRYPTO frame of `len` bytes of `fill` at `offset`.
    pub fn crypto_frame(offset: u64, len: usize, fill: u8) -> Vec<u8> {
        let data = vec![fill; len];
        let mut frames = Vec::new();
        Frame::Crypto {
            offset,
            data: &data,
        }
        .encode(&mut frames);
        frames
    }

    /// PATH_CHALLENGE frames padded with PADDING to `len` bytes of frames:
    /// a probing packet (RFC 9000 §9.1).
    pub fn padded_probe(count: u8, len: usize) -> Vec<u8> {
        let mut frames = path_challenges(count);
        frames.resize(len.max(frames.len()), 0);
        frames
    }
}
