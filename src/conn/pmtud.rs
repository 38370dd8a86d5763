//! Path MTU discovery: DPLPMTUD (RFC 8899) as RFC 9000 §14.3 applies it
//! to QUIC. Owns the search for the largest datagram the path carries,
//! black-hole detection, and the timer that searches again; the
//! connection sends the probes (PING + PADDING, one in flight) and feeds
//! back what was acknowledged and lost.
//!
//! Sizes are UDP payloads, as `Config::max_datagram_size`. Three sizes
//! bound the search, as quinn's `MtuDiscoveryConfig` does:
//! - the *start*, `Config::max_datagram_size` (1350 by default): what the
//!   connection sends from its first packet, unconfirmed, as sift always
//!   has (quinn's `initial_mtu`). The search only goes up from it.
//! - the *base*, 1200 ([`BASE_DATAGRAM_SIZE`], RFC 9000 §14's
//!   BASE_PLPMTU, quinn's `min_mtu`): every QUIC path carries it, so a
//!   black hole falls back there.
//! - the *ceiling*: the smallest of [`PmtudConfig::max_datagram_size`]
//!   (a cap, 8972 by default: a 9000-byte jumbo frame over IPv4), the
//!   local interface's MTU less the IP and UDP headers
//!   ([`PmtudConfig::interface_mtu`]), and the peer's
//!   max_udp_payload_size. Never below the start.
//!
//! The search walks common link MTUs upward (RFC 8899 §5.3.2's probe
//! table: 1280, 1400, 1420, 1492, 1500, 9000, less the headers of the
//! path's IP family) and then the ceiling; a size lost [`MAX_PROBES`]
//! times in a row is too big. Between the last size that passed and one
//! that failed it then halves the gap (quinn's binary search) down to
//! [`MIN_STEP`] bytes, unless the gap is wider than [`MAX_REFINED_GAP`]
//! (link MTUs between Ethernet's and a jumbo frame hardly exist, and
//! every failed step costs three lost probes). So a 1500-byte path
//! settles on exactly 1472 bytes over IPv4 and 1452 over IPv6.
//!
//! Must not: read a clock (callers pass `now`), know packets beyond their
//! number and size.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// RFC 9000 §14: the smallest maximum datagram size every QUIC path must
/// carry (RFC 8899's BASE_PLPMTU for QUIC). A black hole falls back here.
pub const BASE_DATAGRAM_SIZE: usize = 1200;
/// RFC 8899 §5.1.2 MAX_PROBES: a size whose probe is lost this many times
/// in a row is taken to be too big.
pub const MAX_PROBES: u32 = 3;
/// RFC 8899 §5.1.1 PMTU_RAISE_TIMER (600 s, quinn's default interval
/// too): how long after a search ends the next one starts, in case the
/// path now carries more.
pub const DEFAULT_SEARCH_INTERVAL: Duration = Duration::from_secs(600);
/// Bursts of packets larger than the base (runs of consecutive packet
/// numbers), lost while no large packet sent after them was acknowledged
/// and no packet of the base size or smaller was lost with them, before the
/// path counts as a black hole (quinn's `BLACK_HOLE_THRESHOLD` counts such
/// bursts too). Bursts, not packets: a full queue or receive buffer drops
/// hundreds of packets in a row while the small ones behind them (ACK-only
/// packets) pass, which one burst cannot tell from a black hole; a black
/// hole keeps swallowing every large packet, one burst per probe timeout.
pub const BLACK_HOLE_THRESHOLD: u32 = 3;
/// Packet numbers this far apart or closer belong to one loss burst: sift
/// skips a packet number now and then (`conn::skip`), which must not split
/// a burst in two.
const BURST_GAP: u64 = 2;
/// The binary search stops when the gap between what passed and what
/// failed is this small, bytes (quinn's `BINARY_SEARCH_MINIMUM_CHANGE`).
pub const MIN_STEP: usize = 20;
/// Gaps wider than this, bytes, are not searched between a size that
/// passed and one that failed: between Ethernet's 1500 and a jumbo frame's
/// 9000 no common link MTU lies, and each failed step costs `MAX_PROBES`
/// lost probes.
pub const MAX_REFINED_GAP: usize = 1024;
/// Link MTUs (largest IP packets) common enough to probe first: IPv6's
/// minimum, tunnels (1400, WireGuard's 1420), PPPoE (1492), Ethernet and
/// jumbo frames.
pub const COMMON_LINK_MTUS: [usize; 6] = [1280, 1400, 1420, 1492, 1500, 9000];
/// The MTU assumed for a local interface towards a remote host: Ethernet.
pub const ETHERNET_MTU: usize = 1500;
/// Linux's loopback MTU, assumed towards a loopback peer.
pub const LOOPBACK_MTU: usize = 65_536;
/// IPv4 (20) and UDP (8) headers, bytes.
pub const IPV4_UDP_HEADERS: usize = 28;
/// IPv6 (40) and UDP (8) headers, bytes.
pub const IPV6_UDP_HEADERS: usize = 48;
/// Default cap of the search: a 9000-byte jumbo frame's UDP payload over
/// IPv4. Loopback's 64 KiB MTU would allow more, but every receive slot
/// (16 KiB, `io::batch`) and GSO batch (64 KiB) must hold the largest
/// datagram, and a window counted in a few huge packets is coarse.
pub const DEFAULT_MAX_DATAGRAM_SIZE: usize = 9000 - IPV4_UDP_HEADERS;

/// Path MTU discovery settings (`Config::pmtud`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PmtudConfig {
    /// Search for a larger datagram size than `Config::max_datagram_size`
    /// once the handshake is confirmed, and fall back to 1200 bytes on a
    /// black hole. On by default, as in quinn. Off: every datagram is
    /// `Config::max_datagram_size` bytes at most, as before path MTU
    /// discovery (what the papers' experiments run).
    pub enabled: bool,
    /// The largest UDP payload the search tries, bytes
    /// ([`DEFAULT_MAX_DATAGRAM_SIZE`] by default). Also what this end
    /// advertises as its max_udp_payload_size when enabled.
    pub max_datagram_size: usize,
    /// The local interface's MTU (largest IP packet), bytes. `None`: 65536
    /// (Linux's loopback) towards a loopback peer, 1500 (Ethernet)
    /// otherwise. A host on a jumbo-frame network sets 9000; the simulator
    /// sets 1500 (its hosts' loopback addresses are only labels).
    pub interface_mtu: Option<usize>,
    /// How long after a search ends the next one starts (RFC 8899's
    /// PMTU_RAISE_TIMER).
    pub search_interval: Duration,
}

impl Default for PmtudConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            max_datagram_size: DEFAULT_MAX_DATAGRAM_SIZE,
            interface_mtu: None,
            search_interval: DEFAULT_SEARCH_INTERVAL,
        }
    }
}

impl PmtudConfig {
    /// The same settings, turned off.
    pub fn disabled() -> Self {
        Self {
            enabled: false,
            ..Self::default()
        }
    }
}

/// IP and UDP header bytes towards `peer`.
pub fn headers_towards(peer: SocketAddr) -> usize {
    let ipv4 = match peer {
        SocketAddr::V4(_) => true,
        SocketAddr::V6(v6) => v6.ip().to_ipv4_mapped().is_some(),
    };
    if ipv4 {
        IPV4_UDP_HEADERS
    } else {
        IPV6_UDP_HEADERS
    }
}

/// What the search is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Off, or waiting for the first search (the handshake).
    Idle,
    /// Probing; `failed` is the smallest size known too big in this
    /// search, `next` the size to probe (`None`: the search is over).
    Searching {
        failed: Option<usize>,
        next: Option<usize>,
        /// Probes of `next` lost in a row.
        lost: u32,
        /// The packet number of the probe in flight.
        in_flight: Option<u64>,
    },
    /// Settled; the next search starts at `search_at`.
    Settled { search_at: Instant },
}

/// Counters for `Stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PmtudCounters {
    /// Probes sent.
    pub probes_sent: u64,
    /// Probes declared lost.
    pub probes_lost: u64,
    /// Black holes detected (fell back to the base size).
    pub black_holes: u64,
}

/// A change of the datagram size, for the connection to apply and trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SizeChange {
    /// The size before, bytes.
    pub old: usize,
    /// The size now, bytes.
    pub new: usize,
    /// The search is over (for qlog's `done`).
    pub done: bool,
}

/// The search state of one connection.
#[derive(Clone, Debug)]
pub struct Pmtud {
    enabled: bool,
    /// The size sent from the start (`Config::max_datagram_size`).
    initial: usize,
    /// The largest datagram sent now.
    current: usize,
    /// `PmtudConfig::max_datagram_size`.
    cap: usize,
    /// `PmtudConfig::interface_mtu`.
    interface_mtu: Option<usize>,
    /// The peer's max_udp_payload_size.
    peer_limit: usize,
    /// The search's ceiling (`set_ceiling`).
    ceiling: usize,
    /// IP and UDP header bytes of the path's family.
    headers: usize,
    search_interval: Duration,
    phase: Phase,
    /// The largest packet number acknowledged among packets larger than
    /// the base: losses of large packets sent before it are not a black
    /// hole (a later large one got through).
    largest_acked_large: Option<u64>,
    /// Bursts of large packets lost since then (black-hole suspicion).
    suspicious_bursts: u32,
    /// The number of the last large packet counted in a suspicious burst.
    last_suspicious: Option<u64>,
    /// The first packet number sent on the current path: packets numbered
    /// below it went on a path left behind (`on_path_change`).
    path_start: u64,
    counters: PmtudCounters,
}

impl Pmtud {
    /// The search for a connection that starts at `initial` bytes towards
    /// `peer`.
    pub fn new(config: &PmtudConfig, initial: usize, peer: SocketAddr) -> Self {
        let mut pmtud = Self {
            enabled: config.enabled,
            initial,
            current: initial,
            cap: config.max_datagram_size,
            interface_mtu: config.interface_mtu,
            peer_limit: usize::MAX,
            ceiling: initial,
            headers: headers_towards(peer),
            search_interval: config.search_interval,
            phase: Phase::Idle,
            largest_acked_large: None,
            suspicious_bursts: 0,
            last_suspicious: None,
            path_start: 0,
            counters: PmtudCounters::default(),
        };
        pmtud.set_ceiling(peer);
        pmtud
    }

    /// The ceiling towards `peer`: the cap, the interface's MTU less the
    /// headers, the peer's limit; never below the start.
    fn set_ceiling(&mut self, peer: SocketAddr) {
        self.headers = headers_towards(peer);
        // `peer` is canonical (`conn::canonical_peer`): a mapped IPv4
        // loopback address is spelt 127.x.
        let interface = self.interface_mtu.unwrap_or(if peer.ip().is_loopback() {
            LOOPBACK_MTU
        } else {
            ETHERNET_MTU
        });
        self.ceiling = self
            .cap
            .min(interface.saturating_sub(self.headers))
            .min(self.peer_limit)
            .max(self.initial);
    }

    /// The largest datagram to send now, bytes.
    pub fn current(&self) -> usize {
        self.current
    }

    /// The search's ceiling, bytes.
    pub fn ceiling(&self) -> usize {
        self.ceiling
    }

    /// Probes and black holes so far.
    pub fn counters(&self) -> PmtudCounters {
        self.counters
    }

    /// The peer's max_udp_payload_size arrived: the ceiling is no higher.
    pub fn on_peer_limit(&mut self, max_udp_payload: u64, peer: SocketAddr) {
        self.peer_limit = usize::try_from(max_udp_payload).unwrap_or(usize::MAX);
        self.set_ceiling(peer);
    }

    /// The next size to probe above `lo`, below `failed` (if a size
    /// failed) and at most the ceiling: the smallest common link MTU in
    /// that range (or the ceiling), else the middle of a gap worth
    /// halving, else none (the search is over).
    fn next_probe(&self, lo: usize, failed: Option<usize>) -> Option<usize> {
        let upper = failed.map_or(self.ceiling, |f| f.saturating_sub(1).min(self.ceiling));
        let candidate = COMMON_LINK_MTUS
            .iter()
            .map(|mtu| mtu.saturating_sub(self.headers))
            .chain(std::iter::once(self.ceiling))
            .filter(|&size| size > lo && size <= upper)
            .min();
        if candidate.is_some() {
            return candidate;
        }
        let failed = failed?;
        let gap = failed.saturating_sub(lo);
        (gap > MIN_STEP && gap <= MAX_REFINED_GAP).then_some(lo + gap / 2)
    }

    fn start_search(&mut self, failed: Option<usize>, now: Instant) {
        let next = self.next_probe(self.current, failed);
        self.phase = Phase::Searching {
            failed,
            next,
            lost: 0,
            in_flight: None,
        };
        self.settle_if_done(now);
    }

    fn settle_if_done(&mut self, now: Instant) {
        if let Phase::Searching {
            next: None,
            in_flight: None,
            ..
        } = self.phase
        {
            self.phase = Phase::Settled {
                search_at: now + self.search_interval,
            };
        }
    }

    /// The size of a probe to send now, if one is due: the handshake is
    /// confirmed (the caller checks), no probe is in flight, and a search
    /// is on or its timer came due. Starts the search on first call.
    pub fn poll_probe(&mut self, now: Instant) -> Option<usize> {
        if !self.enabled {
            return None;
        }
        match self.phase {
            Phase::Idle => self.start_search(None, now),
            Phase::Settled { search_at } if search_at <= now => self.start_search(None, now),
            _ => {}
        }
        match self.phase {
            Phase::Searching {
                next: Some(size),
                in_flight: None,
                ..
            } => Some(size),
            _ => None,
        }
    }

    /// The probe asked for went out as packet `packet_number`.
    pub fn on_probe_sent(&mut self, packet_number: u64) {
        if let Phase::Searching { in_flight, .. } = &mut self.phase {
            *in_flight = Some(packet_number);
            self.counters.probes_sent += 1;
        }
    }

    /// A probe of `size` bytes was acknowledged: the path carries it.
    pub fn on_probe_acked(
        &mut self,
        packet_number: u64,
        size: usize,
        now: Instant,
    ) -> Option<SizeChange> {
        let Phase::Searching {
            failed, in_flight, ..
        } = self.phase
        else {
            return None;
        };
        if in_flight != Some(packet_number) {
            return None;
        }
        let old = self.current;
        self.current = self.current.max(size);
        self.largest_acked_large = self.largest_acked_large.max(Some(packet_number));
        self.phase = Phase::Searching {
            failed,
            next: self.next_probe(self.current, failed),
            lost: 0,
            in_flight: None,
        };
        self.settle_if_done(now);
        (self.current != old).then_some(SizeChange {
            old,
            new: self.current,
            done: matches!(self.phase, Phase::Settled { .. }),
        })
    }

    /// A probe was declared lost: after `MAX_PROBES` in a row its size is
    /// too big, and the search goes on below it (or ends).
    pub fn on_probe_lost(&mut self, packet_number: u64, size: usize, now: Instant) {
        let Phase::Searching {
            failed,
            next,
            lost,
            in_flight,
        } = self.phase
        else {
            return;
        };
        if in_flight != Some(packet_number) {
            return;
        }
        self.counters.probes_lost += 1;
        let lost = lost + 1;
        self.phase = if lost >= MAX_PROBES {
            let failed = Some(failed.map_or(size, |f| f.min(size)));
            Phase::Searching {
                failed,
                next: self.next_probe(self.current, failed),
                lost: 0,
                in_flight: None,
            }
        } else {
            Phase::Searching {
                failed,
                next,
                lost,
                in_flight: None,
            }
        };
        self.settle_if_done(now);
    }

    /// Ordinary packets (not probes) were acknowledged: `(number, size)`.
    pub fn on_acked(&mut self, packets: impl Iterator<Item = (u64, usize)>) {
        let path_start = self.path_start;
        for (packet_number, size) in packets.filter(|&(number, _)| number >= path_start) {
            if size > BASE_DATAGRAM_SIZE {
                self.largest_acked_large = self.largest_acked_large.max(Some(packet_number));
                self.forget_suspicion();
            }
        }
    }

    /// Ordinary ack-eliciting packets (not probes) were declared lost
    /// together: `(number, size)`. Counts the bursts of large packets lost
    /// with no later large one acknowledged; a small one lost among them
    /// means loss, not a too-small path. At [`BLACK_HOLE_THRESHOLD`] bursts
    /// the path is a black hole: back to the base size, and search again
    /// below the size that vanished.
    pub fn on_lost(
        &mut self,
        packets: impl Iterator<Item = (u64, usize)>,
        now: Instant,
    ) -> Option<SizeChange> {
        if !self.enabled || self.current <= BASE_DATAGRAM_SIZE {
            return None;
        }
        let path_start = self.path_start;
        // In packet-number order, as the recovery ledger declares them.
        for (packet_number, size) in packets.filter(|&(number, _)| number >= path_start) {
            if size <= BASE_DATAGRAM_SIZE {
                self.forget_suspicion();
                return None;
            }
            if self
                .largest_acked_large
                .is_some_and(|largest| packet_number <= largest)
            {
                continue;
            }
            let same_burst = self
                .last_suspicious
                .is_some_and(|last| packet_number.abs_diff(last) <= BURST_GAP);
            if !same_burst {
                self.suspicious_bursts += 1;
            }
            self.last_suspicious = Some(packet_number);
        }
        if self.suspicious_bursts < BLACK_HOLE_THRESHOLD {
            return None;
        }
        let old = self.current;
        self.counters.black_holes += 1;
        self.forget_suspicion();
        self.current = BASE_DATAGRAM_SIZE;
        self.start_search(Some(old), now);
        Some(SizeChange {
            old,
            new: self.current,
            done: matches!(self.phase, Phase::Settled { .. }),
        })
    }

    /// A large packet got through, or a small one was lost with the large
    /// ones: what was lost so far says nothing of the path's size.
    fn forget_suspicion(&mut self) {
        self.suspicious_bursts = 0;
        self.last_suspicious = None;
    }

    /// A black hole is suspected (large packets outstanding past a probe
    /// timeout): PTO probes should be no larger than the base, so that
    /// one gets through and shows the large ones lost.
    pub fn pto_probe_size(&self) -> Option<usize> {
        (self.enabled && self.current > BASE_DATAGRAM_SIZE).then_some(BASE_DATAGRAM_SIZE)
    }

    /// One end moved (a new port, or a new path): packets numbered below
    /// `first_packet` went where the connection no longer is, so their
    /// fate says nothing about where it is now (RFC 9000 §9.4: packets
    /// sent on the old path do not count for the new one). Their losses
    /// are no black hole, and a probe among them neither passes nor fails.
    pub fn on_path_change(&mut self, first_packet: u64) {
        self.path_start = first_packet;
        self.largest_acked_large = None;
        self.forget_suspicion();
        if let Phase::Searching { in_flight, .. } = &mut self.phase {
            *in_flight = None;
        }
    }

    /// The path changed (a new peer or local IP address; `on_path_change`
    /// first): what was learnt does not hold. With discovery on, back to
    /// the base size, the one every path carries and the one a padded
    /// PATH_CHALLENGE proves (RFC 8899 §5.2: a new path starts from
    /// BASE_PLPMTU; RFC 9000 §8.2.1, §14); search again once the path is
    /// validated. Off, the only size stays.
    pub fn on_new_path(&mut self, peer: SocketAddr, now: Instant) -> Option<SizeChange> {
        let old = self.current;
        self.set_ceiling(peer);
        self.current = if self.enabled {
            BASE_DATAGRAM_SIZE
        } else {
            self.initial
        };
        self.largest_acked_large = None;
        self.forget_suspicion();
        if self.enabled && self.phase != Phase::Idle {
            self.start_search(None, now);
        }
        (old != self.current).then_some(SizeChange {
            old,
            new: self.current,
            done: false,
        })
    }
}

#[cfg(test)]
mod tests;
