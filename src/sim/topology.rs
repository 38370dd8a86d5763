//! The dumbbell: every flow's client sits on the left, its server on the
//! right, and all traffic crosses one shared bottleneck `Link` per direction.
//! A flow may add an access link of its own (pure propagation delay) between
//! its client and the bottleneck, in both directions.
//!
//! Hosts get virtual addresses in 127.0.1.0/24 onwards (127.0.1.1, .2, …;
//! past .255 the count carries into the next octet). No socket is ever
//! opened: an address is only a name the connections and the router agree on.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::link::LinkConfig;

/// Which way a packet crosses the bottleneck.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    /// Client → server (left to right): data of sift flows.
    #[default]
    Forward,
    /// Server → client (right to left): acknowledgements of sift flows.
    Reverse,
}

impl Direction {
    /// Both directions, forward first.
    pub const BOTH: [Direction; 2] = [Direction::Forward, Direction::Reverse];

    /// The lower-case name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Direction::Forward => "forward",
            Direction::Reverse => "reverse",
        }
    }
}

/// Index of a link in the simulation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct LinkId(pub usize);

/// The shared bottleneck, client → server.
pub const BOTTLENECK_FORWARD: LinkId = LinkId(0);
/// The shared bottleneck, server → client.
pub const BOTTLENECK_REVERSE: LinkId = LinkId(1);

/// The first address handed out: hosts are numbered from 127.0.1.1.
const FIRST_HOST_ADDRESS: Ipv4Addr = Ipv4Addr::new(127, 0, 1, 1);
/// Port of every sift client (virtual).
pub const CLIENT_PORT: u16 = 50_000;
/// Port of every sift server (virtual; the sift default port).
pub const SERVER_PORT: u16 = 4433;
/// Port of CBR sources and sinks (virtual; the discard service).
pub const CBR_PORT: u16 = 9;
/// Most hosts a topology may hold, so every address stays inside 127.0.0.0/8.
pub const MAX_HOSTS: usize = 1 << 20;

/// The links a packet crosses, in order: at most an access link and the
/// bottleneck. Fixed size, so routing never allocates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Path {
    hops: [LinkId; 2],
    len: u8,
}

impl Path {
    fn one(link: LinkId) -> Self {
        Self {
            hops: [link, link],
            len: 1,
        }
    }

    fn two(first: LinkId, second: LinkId) -> Self {
        Self {
            hops: [first, second],
            len: 2,
        }
    }

    /// The link at position `hop`, if the path is that long.
    pub fn hop(&self, hop: usize) -> Option<LinkId> {
        if hop < usize::from(self.len) {
            self.hops.get(hop).copied()
        } else {
            None
        }
    }

    /// How many links the path crosses.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// A path always crosses at least the bottleneck.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Which endpoint a host address belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Host {
    /// The client of sift flow `n`.
    SiftClient(usize),
    /// The server of sift flow `n`.
    SiftServer(usize),
    /// The sender of CBR flow `n`.
    CbrSource(usize),
    /// The receiver of CBR flow `n`.
    CbrSink(usize),
}

/// The hosts and links of one sift flow.
#[derive(Clone, Debug)]
pub struct SiftFlowHosts {
    /// The client's virtual address.
    pub client: SocketAddr,
    /// The server's virtual address.
    pub server: SocketAddr,
    /// The flow's access links (client → bottleneck, bottleneck → client),
    /// when it has an access delay.
    pub access: Option<(LinkId, LinkId)>,
    /// The access links of the path the client moves to, if it does
    /// ([`Topology::add_second_path`]).
    pub second: Option<(LinkId, LinkId)>,
}

/// The hosts of one CBR flow.
#[derive(Clone, Debug)]
pub struct CbrHosts {
    /// The sender's virtual address.
    pub source: SocketAddr,
    /// The receiver's virtual address.
    pub sink: SocketAddr,
    /// Which way it crosses the bottleneck.
    pub direction: Direction,
}

/// A dumbbell network: addresses, links and routes.
#[derive(Clone, Debug)]
pub struct Topology {
    sift: Vec<SiftFlowHosts>,
    cbr: Vec<CbrHosts>,
    hosts: BTreeMap<SocketAddr, Host>,
    links: Vec<LinkConfig>,
}

/// The topology asked for more hosts than the address plan holds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{hosts} hosts do not fit the virtual address plan (at most {MAX_HOSTS})")]
pub struct TooManyHosts {
    /// Hosts asked for.
    pub hosts: usize,
}

/// The virtual address of host number `index` (0 → 127.0.1.1).
pub fn host_address(index: usize, port: u16) -> SocketAddr {
    let index = u32::try_from(index.min(MAX_HOSTS)).unwrap_or(0);
    let ip = Ipv4Addr::from(u32::from(FIRST_HOST_ADDRESS).saturating_add(index));
    SocketAddr::V4(SocketAddrV4::new(ip, port))
}

impl Topology {
    /// A dumbbell with one sift flow per entry of `access_delays` (zero = no
    /// access link) and one CBR flow per entry of `cbr_directions`.
    pub fn dumbbell(
        forward: LinkConfig,
        reverse: LinkConfig,
        access_delays: &[Duration],
        cbr_directions: &[Direction],
    ) -> Result<Self, TooManyHosts> {
        let hosts_needed = 2 * (access_delays.len() + cbr_directions.len());
        if hosts_needed > MAX_HOSTS {
            return Err(TooManyHosts {
                hosts: hosts_needed,
            });
        }
        let mut links = vec![forward, reverse];
        let mut hosts = BTreeMap::new();
        let mut next_host = 0usize;
        let mut sift = Vec::with_capacity(access_delays.len());
        for (flow, delay) in access_delays.iter().enumerate() {
            let client = host_address(next_host, CLIENT_PORT);
            let server = host_address(next_host + 1, SERVER_PORT);
            next_host += 2;
            let access = if delay.is_zero() {
                None
            } else {
                let up = LinkId(links.len());
                links.push(access_link(*delay));
                let down = LinkId(links.len());
                links.push(access_link(*delay));
                Some((up, down))
            };
            hosts.insert(client, Host::SiftClient(flow));
            hosts.insert(server, Host::SiftServer(flow));
            sift.push(SiftFlowHosts {
                client,
                server,
                access,
                second: None,
            });
        }
        let mut cbr = Vec::with_capacity(cbr_directions.len());
        for (flow, direction) in cbr_directions.iter().enumerate() {
            let left = host_address(next_host, CBR_PORT);
            let right = host_address(next_host + 1, CBR_PORT);
            next_host += 2;
            let (source, sink) = match direction {
                Direction::Forward => (left, right),
                Direction::Reverse => (right, left),
            };
            hosts.insert(source, Host::CbrSource(flow));
            hosts.insert(sink, Host::CbrSink(flow));
            cbr.push(CbrHosts {
                source,
                sink,
                direction: *direction,
            });
        }
        Ok(Self {
            sift,
            cbr,
            hosts,
            links,
        })
    }

    /// Every link's configuration, indexed by `LinkId`.
    pub fn link_configs(&self) -> &[LinkConfig] {
        &self.links
    }

    /// The sift flows' hosts.
    pub fn sift_flows(&self) -> &[SiftFlowHosts] {
        &self.sift
    }

    /// The CBR flows' hosts.
    pub fn cbr_flows(&self) -> &[CbrHosts] {
        &self.cbr
    }

    /// Who owns `address`.
    pub fn host(&self, address: &SocketAddr) -> Option<Host> {
        self.hosts.get(address).copied()
    }

    /// Gives sift flow `flow` a second access path (client → bottleneck
    /// `forward`, bottleneck → client `reverse`), which its client takes
    /// when it moves to another network. The links go after every other,
    /// so the seeds of the links a scenario already had do not change.
    pub fn add_second_path(&mut self, flow: usize, forward: LinkConfig, reverse: LinkConfig) {
        let Some(hosts) = self.sift.get_mut(flow) else {
            return;
        };
        let up = LinkId(self.links.len());
        self.links.push(forward);
        let down = LinkId(self.links.len());
        self.links.push(reverse);
        hosts.second = Some((up, down));
    }

    /// The links a packet of sift flow `flow` crosses in `direction`.
    pub fn sift_path(&self, flow: usize, direction: Direction) -> Path {
        self.sift_path_on(flow, direction, false)
    }

    /// Like [`Topology::sift_path`], on the second path once the client
    /// has `moved` (when the flow has one).
    pub fn sift_path_on(&self, flow: usize, direction: Direction, moved: bool) -> Path {
        let hosts = self.sift.get(flow);
        let access = match hosts {
            Some(hosts) if moved && hosts.second.is_some() => hosts.second,
            Some(hosts) => hosts.access,
            None => None,
        };
        match (direction, access) {
            (Direction::Forward, Some((up, _))) => Path::two(up, BOTTLENECK_FORWARD),
            (Direction::Forward, None) => Path::one(BOTTLENECK_FORWARD),
            (Direction::Reverse, Some((_, down))) => Path::two(BOTTLENECK_REVERSE, down),
            (Direction::Reverse, None) => Path::one(BOTTLENECK_REVERSE),
        }
    }

    /// The link a CBR packet crosses in `direction`.
    pub fn cbr_path(direction: Direction) -> Path {
        match direction {
            Direction::Forward => Path::one(BOTTLENECK_FORWARD),
            Direction::Reverse => Path::one(BOTTLENECK_REVERSE),
        }
    }
}

/// An access link: propagation delay only, no rate limit, no loss.
fn access_link(delay: Duration) -> LinkConfig {
    LinkConfig {
        delay_ms: delay,
        rate_bps: None,
        ..LinkConfig::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bottleneck() -> LinkConfig {
        LinkConfig::default()
    }

    #[test]
    fn every_host_gets_a_distinct_address_in_127_0_1() {
        let topology = Topology::dumbbell(
            bottleneck(),
            bottleneck(),
            &[Duration::ZERO, Duration::ZERO],
            &[Direction::Forward],
        )
        .unwrap();
        let flows = topology.sift_flows();
        assert_eq!(flows[0].client, "127.0.1.1:50000".parse().unwrap());
        assert_eq!(flows[0].server, "127.0.1.2:4433".parse().unwrap());
        assert_eq!(flows[1].client, "127.0.1.3:50000".parse().unwrap());
        assert_eq!(
            topology.cbr_flows()[0].source,
            "127.0.1.5:9".parse().unwrap()
        );
        assert_eq!(topology.host(&flows[1].server), Some(Host::SiftServer(1)));
        assert_eq!(topology.host(&"127.0.1.200:1".parse().unwrap()), None);
    }

    #[test]
    fn addresses_carry_into_the_next_octet() {
        // Host 254 is 127.0.1.1 + 254 = 127.0.1.255; host 255 carries over.
        assert_eq!(host_address(254, 1), "127.0.1.255:1".parse().unwrap());
        assert_eq!(host_address(255, 1), "127.0.2.0:1".parse().unwrap());
    }

    #[test]
    fn access_delay_adds_a_hop_on_the_client_side_of_both_paths() {
        let topology = Topology::dumbbell(
            bottleneck(),
            bottleneck(),
            &[Duration::ZERO, Duration::from_millis(5)],
            &[],
        )
        .unwrap();
        assert_eq!(topology.link_configs().len(), 4);
        let plain = topology.sift_path(0, Direction::Forward);
        assert_eq!((plain.len(), plain.hop(0)), (1, Some(BOTTLENECK_FORWARD)));
        let forward = topology.sift_path(1, Direction::Forward);
        assert_eq!(forward.hop(0), Some(LinkId(2)));
        assert_eq!(forward.hop(1), Some(BOTTLENECK_FORWARD));
        assert_eq!(forward.hop(2), None);
        let reverse = topology.sift_path(1, Direction::Reverse);
        assert_eq!(reverse.hop(0), Some(BOTTLENECK_REVERSE));
        assert_eq!(reverse.hop(1), Some(LinkId(3)));
        assert_eq!(
            topology.link_configs()[2].delay_ms,
            Duration::from_millis(5)
        );
    }

    #[test]
    fn reverse_cbr_sends_from_the_server_side() {
        let topology =
            Topology::dumbbell(bottleneck(), bottleneck(), &[], &[Direction::Reverse]).unwrap();
        let cbr = &topology.cbr_flows()[0];
        assert_eq!(cbr.source, "127.0.1.2:9".parse().unwrap());
        assert_eq!(
            Topology::cbr_path(Direction::Reverse).hop(0),
            Some(BOTTLENECK_REVERSE)
        );
    }
}
