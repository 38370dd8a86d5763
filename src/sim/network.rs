//! An addressed network of nodes, in virtual time: endpoints (not bare
//! connections, as in `world`), the hosts that attack them, and victims.
//! neqo's test-fixture simulator composes nodes in a ring; here every node
//! owns addresses and a datagram goes to the owner of its destination, so
//! that a node can send in any address's name (spoofing), watch another
//! host's link (on-path capture) and the census (`census`) can follow each
//! address.
//!
//! - **Nodes** are plain state machines fed datagrams and wake-ups
//!   ([`Node`]); the network owns the clock and asks them for datagrams.
//! - **Delay:** a datagram takes the sender's access delay plus the
//!   receiver's; a node may have a downlink of limited rate, where what
//!   arrives waits its turn (an unbounded first-in first-out queue).
//!   Nothing is lost or reordered: attacks here are about what an
//!   endpoint can be made to send, and a perfect network makes that the
//!   most it can be.
//! - **Ground truth:** a datagram is genuine when its sender owns its source
//!   address; the census gets every datagram with that truth.
//! - **Taps:** a node tapping an address sees every datagram from or to it
//!   as it leaves its sender, and may drop it (an on-path attacker).
//!
//! Nothing reads the wall clock: time is an anchor handed in plus offsets,
//! and ties between events break in scheduling order, so a run repeats.

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet};
use std::marker::PhantomData;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::census::Census;
use super::clock::VirtualClock;
use super::events::EventQueue;
use super::world::{MAX_DATAGRAMS_PER_DRAIN, MAX_EVENTS_PER_INSTANT};
use crate::Endpoint;

/// The access delay a node gets unless told otherwise: 10 ms each way per
/// host, so two hosts are 20 ms apart (40 ms round trip).
pub const DEFAULT_ACCESS_DELAY: Duration = Duration::from_millis(10);

/// One UDP datagram: where it says it comes from, where it goes, its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Datagram {
    /// The source address it carries (the sender's choice).
    pub from: SocketAddr,
    /// Its destination.
    pub to: SocketAddr,
    /// The UDP payload.
    pub bytes: Vec<u8>,
}

/// What a tapping node does with a datagram it sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tapped {
    /// Let it go on.
    Pass,
    /// Drop it (the tapping node may send something else instead).
    Drop,
}

/// A host on the network.
pub trait Node {
    /// A datagram for one of this node's addresses arrived.
    fn recv(&mut self, datagram: Datagram, now: Instant);
    /// The next datagram this node sends now, if any.
    fn poll_send(&mut self, now: Instant) -> Option<Datagram>;
    /// When this node next wants [`Node::on_wake`]; `None`: only when a
    /// datagram arrives.
    fn next_wake(&mut self, now: Instant) -> Option<Instant>;
    /// The time [`Node::next_wake`] named came.
    fn on_wake(&mut self, now: Instant);
    /// A datagram from or to an address this node taps, as it leaves its
    /// sender.
    fn observe(&mut self, _datagram: &Datagram, _now: Instant) -> Tapped {
        Tapped::Pass
    }
}

/// A node the network can hand back by its type.
trait AnyNode: Node {
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<N: Node + 'static> AnyNode for N {
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// Names a node of one type on one network.
pub struct NodeId<N> {
    index: usize,
    node: PhantomData<fn() -> N>,
}

impl<N> Clone for NodeId<N> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<N> Copy for NodeId<N> {}

impl<N> std::fmt::Debug for NodeId<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NodeId({})", self.index)
    }
}

/// The network could not go on.
#[derive(Debug, thiserror::Error)]
pub enum NetworkError {
    /// Events kept coming at one virtual instant.
    #[error("virtual time stopped at {at_s} s: more than {events} events at one instant")]
    Livelock {
        /// The instant, virtual seconds.
        at_s: f64,
        /// Events processed there.
        events: u64,
    },
    /// A node kept producing datagrams at one instant.
    #[error("node {node} produced more than {datagrams} datagrams at {at_s} s without pausing")]
    SendLoop {
        /// The node's index.
        node: usize,
        /// Datagrams produced at that instant.
        datagrams: u64,
        /// The instant, virtual seconds.
        at_s: f64,
    },
}

struct Slot {
    node: Box<dyn AnyNode>,
    access_delay: Duration,
    /// The downlink's rate, bits per second (`None`: unlimited).
    downlink_bps: Option<u64>,
    /// When the downlink finishes what it already carries.
    downlink_free: Option<Instant>,
    /// The wake-up currently scheduled; queue entries for other times are
    /// stale.
    wake: Option<Instant>,
}

enum Event {
    Deliver {
        node: usize,
        datagram: Datagram,
        genuine: bool,
    },
    Wake(usize),
}

/// Counters of what the network carried.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NetworkStats {
    /// Datagrams nodes sent.
    pub datagrams_sent: u64,
    /// Datagrams sent in an address's name by a node that does not own it.
    pub datagrams_spoofed: u64,
    /// Datagrams delivered to a node.
    pub datagrams_delivered: u64,
    /// Datagrams to an address no node owns (dropped).
    pub datagrams_unrouted: u64,
    /// Datagrams a tapping node dropped.
    pub datagrams_intercepted: u64,
}

/// Nodes, the addresses they own, the clock and the census of one run.
pub struct Network {
    clock: VirtualClock,
    events: EventQueue<Event>,
    nodes: Vec<Slot>,
    owners: BTreeMap<SocketAddr, usize>,
    /// Which nodes tap which addresses.
    taps: BTreeMap<SocketAddr, Vec<usize>>,
    /// Nodes handed out since they were last serviced: their sends and
    /// timers are looked at before the next event.
    touched: BTreeSet<usize>,
    census: Census,
    events_at_instant: u64,
    stats: NetworkStats,
}

impl Network {
    /// An empty network whose virtual time zero is `base` (nothing depends
    /// on its value).
    pub fn new(base: Instant) -> Self {
        Self {
            clock: VirtualClock::new(base),
            events: EventQueue::new(),
            nodes: Vec::new(),
            owners: BTreeMap::new(),
            taps: BTreeMap::new(),
            touched: BTreeSet::new(),
            census: Census::new(),
            events_at_instant: 0,
            stats: NetworkStats::default(),
        }
    }

    /// The current virtual instant.
    pub fn now(&self) -> Instant {
        self.clock.now()
    }

    /// Virtual time since the run began.
    pub fn elapsed(&self) -> Duration {
        self.clock.elapsed()
    }

    /// Adds `node`, owning `addresses`, with the default access delay.
    pub fn add<N: Node + 'static>(&mut self, node: N, addresses: &[SocketAddr]) -> NodeId<N> {
        self.add_with_delay(node, addresses, DEFAULT_ACCESS_DELAY)
    }

    /// Adds `node`, owning `addresses`, `access_delay` from the network.
    pub fn add_with_delay<N: Node + 'static>(
        &mut self,
        node: N,
        addresses: &[SocketAddr],
        access_delay: Duration,
    ) -> NodeId<N> {
        let index = self.nodes.len();
        self.nodes.push(Slot {
            node: Box::new(node),
            access_delay,
            downlink_bps: None,
            downlink_free: None,
            wake: None,
        });
        for address in addresses {
            self.owners.insert(*address, index);
        }
        self.touched.insert(index);
        NodeId {
            index,
            node: PhantomData,
        }
    }

    /// Adds an endpoint node at its endpoint's address and counts what it
    /// sends in the census.
    pub fn add_endpoint(&mut self, node: EndpointNode) -> NodeId<EndpointNode> {
        let address = node.endpoint.local_addr();
        self.census.watch(address);
        self.add(node, &[address])
    }

    /// Datagrams to `id` cross a downlink of `bits_per_second` after their
    /// delay, one after another: a bottleneck where a queue builds.
    pub fn set_downlink<N>(&mut self, id: NodeId<N>, bits_per_second: u64) {
        if let Some(slot) = self.nodes.get_mut(id.index) {
            slot.downlink_bps = Some(bits_per_second.max(1));
        }
    }

    /// `id` owns `address` from now on (a host that moved, or one more
    /// address of an attacker's).
    pub fn give_address<N>(&mut self, id: NodeId<N>, address: SocketAddr) {
        self.owners.insert(address, id.index);
    }

    /// `id` sees every datagram from or to `address` as it leaves its
    /// sender, and may drop it ([`Node::observe`]).
    pub fn tap<N>(&mut self, id: NodeId<N>, address: SocketAddr) {
        self.taps.entry(address).or_default().push(id.index);
    }

    /// The node `id` names. Handing it out counts as touching it: what it
    /// has to send goes before the next event.
    pub fn node<N: Node + 'static>(&mut self, id: NodeId<N>) -> &mut N {
        self.touched.insert(id.index);
        self.nodes
            .get_mut(id.index)
            .and_then(|slot| slot.node.as_any_mut().downcast_mut::<N>())
            .expect("a NodeId names a node of its type on the network that made it")
    }

    /// The bytes each watched endpoint sent to each address against what
    /// arrived from it.
    pub fn census(&self) -> &Census {
        &self.census
    }

    /// The census, to watch more endpoints.
    pub fn census_mut(&mut self) -> &mut Census {
        &mut self.census
    }

    /// What the network carried.
    pub fn stats(&self) -> &NetworkStats {
        &self.stats
    }

    /// Runs for `duration` of virtual time.
    pub fn run_for(&mut self, duration: Duration) -> Result<(), NetworkError> {
        let until = self.now() + duration;
        self.run_until(until, |_| false).map(|_| ())
    }

    /// Runs until `done` holds (asked before every event) or virtual time
    /// reaches `deadline`; returns whether `done` held. The clock stands at
    /// `deadline` when it did not.
    pub fn run_until(
        &mut self,
        deadline: Instant,
        mut done: impl FnMut(&mut Network) -> bool,
    ) -> Result<bool, NetworkError> {
        loop {
            self.service_touched()?;
            if done(self) {
                return Ok(true);
            }
            // What `done` touched (it may have queued datagrams) goes first.
            self.service_touched()?;
            match self.events.peek_time() {
                Some(at) if at <= deadline => self.step()?,
                _ => {
                    self.clock.advance_to(deadline);
                    return Ok(false);
                }
            }
        }
    }

    fn step(&mut self) -> Result<(), NetworkError> {
        let Some((at, event)) = self.events.pop() else {
            return Ok(());
        };
        if at > self.clock.now() {
            self.events_at_instant = 0;
        }
        self.clock.advance_to(at);
        self.events_at_instant += 1;
        if self.events_at_instant > MAX_EVENTS_PER_INSTANT {
            return Err(NetworkError::Livelock {
                at_s: self.clock.elapsed().as_secs_f64(),
                events: MAX_EVENTS_PER_INSTANT,
            });
        }
        let now = self.clock.now();
        match event {
            Event::Deliver {
                node,
                datagram,
                genuine,
            } => {
                self.stats.datagrams_delivered += 1;
                self.census.on_arrived(
                    datagram.from,
                    datagram.to,
                    datagram.bytes.len(),
                    genuine,
                    self.clock.elapsed(),
                );
                if let Some(slot) = self.nodes.get_mut(node) {
                    slot.node.recv(datagram, now);
                }
                self.service(node)
            }
            Event::Wake(node) => {
                let Some(slot) = self.nodes.get_mut(node) else {
                    return Ok(());
                };
                if slot.wake != Some(at) {
                    return Ok(()); // stale: re-armed since
                }
                slot.wake = None;
                slot.node.on_wake(now);
                self.service(node)
            }
        }
    }

    fn service_touched(&mut self) -> Result<(), NetworkError> {
        while let Some(node) = self.touched.pop_first() {
            self.service(node)?;
        }
        Ok(())
    }

    /// Sends what `node` has to send now and re-arms its wake-up.
    fn service(&mut self, node: usize) -> Result<(), NetworkError> {
        let now = self.clock.now();
        let mut datagrams = 0u64;
        loop {
            let Some(slot) = self.nodes.get_mut(node) else {
                return Ok(());
            };
            let Some(datagram) = slot.node.poll_send(now) else {
                break;
            };
            datagrams += 1;
            if datagrams > MAX_DATAGRAMS_PER_DRAIN {
                return Err(NetworkError::SendLoop {
                    node,
                    datagrams: MAX_DATAGRAMS_PER_DRAIN,
                    at_s: self.clock.elapsed().as_secs_f64(),
                });
            }
            self.send(node, datagram);
        }
        let Some(slot) = self.nodes.get_mut(node) else {
            return Ok(());
        };
        let wake = slot.node.next_wake(now).map(|at| at.max(now));
        if wake != slot.wake {
            slot.wake = wake;
            if let Some(at) = wake {
                self.events.push(at, Event::Wake(node));
            }
        }
        Ok(())
    }

    /// Puts a datagram `sender` made on its way.
    fn send(&mut self, sender: usize, datagram: Datagram) {
        let now = self.clock.now();
        self.stats.datagrams_sent += 1;
        let genuine = self.owners.get(&datagram.from) == Some(&sender);
        if genuine {
            let opens = crate::endpoint::parse_any_header(&datagram.bytes)
                .is_ok_and(|header| header.ty == crate::wire::PacketType::Initial);
            self.census
                .on_sent(datagram.from, datagram.to, datagram.bytes.len(), opens);
        } else {
            self.stats.datagrams_spoofed += 1;
        }
        let mut tappers: Vec<usize> = Vec::new();
        for address in [datagram.from, datagram.to] {
            for &tapper in self.taps.get(&address).into_iter().flatten() {
                if tapper != sender && !tappers.contains(&tapper) {
                    tappers.push(tapper);
                }
            }
        }
        for tapper in tappers {
            let verdict = match self.nodes.get_mut(tapper) {
                Some(slot) => slot.node.observe(&datagram, now),
                None => Tapped::Pass,
            };
            // What the tapper sends instead goes out before the next event.
            self.touched.insert(tapper);
            if verdict == Tapped::Drop {
                self.stats.datagrams_intercepted += 1;
                return;
            }
        }
        let Some(&receiver) = self.owners.get(&datagram.to) else {
            self.stats.datagrams_unrouted += 1;
            return;
        };
        let sender_delay = self
            .nodes
            .get(sender)
            .map_or(Duration::ZERO, |s| s.access_delay);
        let Some(slot) = self.nodes.get_mut(receiver) else {
            return;
        };
        let mut arrival = now + sender_delay + slot.access_delay;
        if let Some(bps) = slot.downlink_bps {
            let start = slot.downlink_free.map_or(arrival, |free| free.max(arrival));
            let bits = datagram.bytes.len() as u64 * 8;
            arrival = start + Duration::from_nanos(bits.saturating_mul(1_000_000_000) / bps);
            slot.downlink_free = Some(arrival);
        }
        self.events.push(
            arrival,
            Event::Deliver {
                node: receiver,
                datagram,
                genuine,
            },
        );
    }
}

/// What an endpoint's application does after anything happened to it:
/// accept connections, read and write streams.
pub trait Application {
    /// Called after every datagram and wake-up of the endpoint.
    fn run(&mut self, endpoint: &mut Endpoint, now: Instant);
}

impl<F: FnMut(&mut Endpoint, Instant)> Application for F {
    fn run(&mut self, endpoint: &mut Endpoint, now: Instant) {
        self(endpoint, now)
    }
}

/// An [`Endpoint`] as a host, with an application, forgetting connections
/// once closed as the real-socket drivers do (unless told to keep them).
pub struct EndpointNode {
    endpoint: Endpoint,
    application: Option<Box<dyn Application>>,
    forget_closed: bool,
    buffer: Vec<u8>,
}

impl EndpointNode {
    /// A host running `endpoint` and no application.
    pub fn new(endpoint: Endpoint) -> Self {
        Self {
            endpoint,
            application: None,
            forget_closed: true,
            buffer: vec![0; 65_536],
        }
    }

    /// Keeps closed connections, so that a test can read why they closed.
    pub fn keeping_closed(mut self) -> Self {
        self.forget_closed = false;
        self
    }

    /// Runs `application` after everything that happens to the endpoint.
    pub fn with_application(mut self, application: impl Application + 'static) -> Self {
        self.application = Some(Box::new(application));
        self
    }

    /// The endpoint.
    pub fn endpoint(&mut self) -> &mut Endpoint {
        &mut self.endpoint
    }

    fn after_event(&mut self, now: Instant) {
        if let Some(application) = self.application.as_mut() {
            application.run(&mut self.endpoint, now);
        }
        if self.forget_closed {
            self.endpoint.remove_closed();
        }
    }
}

impl Node for EndpointNode {
    fn recv(&mut self, mut datagram: Datagram, now: Instant) {
        self.endpoint.recv(&mut datagram.bytes, datagram.from, now);
        self.after_event(now);
    }

    fn poll_send(&mut self, now: Instant) -> Option<Datagram> {
        let (len, to) = self.endpoint.poll_transmit(now, &mut self.buffer)?;
        Some(Datagram {
            from: self.endpoint.local_addr(),
            to,
            bytes: self.buffer.get(..len)?.to_vec(),
        })
    }

    fn next_wake(&mut self, now: Instant) -> Option<Instant> {
        self.endpoint.timeout(now)
    }

    fn on_wake(&mut self, now: Instant) {
        self.endpoint.on_timeout(now);
        self.after_event(now);
    }
}

/// A host that sends nothing and keeps count of what reached it: the
/// victim an attacker aims an endpoint at.
#[derive(Clone, Debug, Default)]
pub struct Sink {
    /// Datagrams that arrived.
    pub datagrams: u64,
    /// Their bytes.
    pub bytes: u64,
    /// The largest one, in bytes.
    pub largest: usize,
}

impl Node for Sink {
    fn recv(&mut self, datagram: Datagram, _now: Instant) {
        self.datagrams += 1;
        self.bytes += datagram.bytes.len() as u64;
        self.largest = self.largest.max(datagram.bytes.len());
    }

    fn poll_send(&mut self, _now: Instant) -> Option<Datagram> {
        None
    }

    fn next_wake(&mut self, _now: Instant) -> Option<Instant> {
        None
    }

    fn on_wake(&mut self, _now: Instant) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(last: u8) -> SocketAddr {
        SocketAddr::from(([10, 0, 0, last], 4000))
    }

    /// Sends what it is given, when it is given it.
    #[derive(Default)]
    struct Sender {
        queue: Vec<Datagram>,
    }

    impl Node for Sender {
        fn recv(&mut self, _datagram: Datagram, _now: Instant) {}
        fn poll_send(&mut self, _now: Instant) -> Option<Datagram> {
            self.queue.pop()
        }
        fn next_wake(&mut self, _now: Instant) -> Option<Instant> {
            None
        }
        fn on_wake(&mut self, _now: Instant) {}
    }

    /// Drops everything it sees on a tapped link.
    struct Blackhole;

    impl Node for Blackhole {
        fn recv(&mut self, _datagram: Datagram, _now: Instant) {}
        fn poll_send(&mut self, _now: Instant) -> Option<Datagram> {
            None
        }
        fn next_wake(&mut self, _now: Instant) -> Option<Instant> {
            None
        }
        fn on_wake(&mut self, _now: Instant) {}
        fn observe(&mut self, _datagram: &Datagram, _now: Instant) -> Tapped {
            Tapped::Drop
        }
    }

    fn datagram(from: SocketAddr, to: SocketAddr, len: usize) -> Datagram {
        Datagram {
            from,
            to,
            bytes: vec![0; len],
        }
    }

    #[test]
    fn a_datagram_reaches_the_owner_of_its_destination_after_both_access_delays() {
        let start = Instant::now();
        let mut net = Network::new(start);
        let sender = net.add(Sender::default(), &[addr(1)]);
        let sink = net.add_with_delay(Sink::default(), &[addr(2)], Duration::from_millis(30));
        net.node(sender).queue.push(datagram(addr(1), addr(2), 100));
        // 10 ms + 30 ms.
        net.run_for(Duration::from_millis(39)).unwrap();
        assert_eq!(net.node(sink).datagrams, 0);
        net.run_for(Duration::from_millis(1)).unwrap();
        assert_eq!(net.node(sink).bytes, 100);
        assert_eq!(net.stats().datagrams_spoofed, 0);
    }

    #[test]
    fn a_datagram_in_another_hosts_name_is_spoofed_and_proves_nothing() {
        let mut net = Network::new(Instant::now());
        let sender = net.add(Sender::default(), &[addr(1)]);
        net.census_mut().watch(addr(2));
        net.add(Sink::default(), &[addr(2)]);
        net.node(sender).queue.push(datagram(addr(9), addr(2), 100));
        net.run_for(Duration::from_millis(50)).unwrap();
        assert_eq!(net.stats().datagrams_spoofed, 1);
        let record = net.census().get(addr(2), addr(9)).unwrap();
        assert_eq!(record.spoofed_received, 100);
        assert!(!record.proved());
    }

    #[test]
    fn a_tapping_node_sees_and_may_drop_what_crosses_its_address() {
        let mut net = Network::new(Instant::now());
        let sender = net.add(Sender::default(), &[addr(1)]);
        let sink = net.add(Sink::default(), &[addr(2)]);
        let tapper = net.add(Blackhole, &[addr(3)]);
        net.tap(tapper, addr(2));
        net.node(sender).queue.push(datagram(addr(1), addr(2), 100));
        net.run_for(Duration::from_millis(50)).unwrap();
        assert_eq!(net.node(sink).datagrams, 0);
        assert_eq!(net.stats().datagrams_intercepted, 1);
    }

    #[test]
    fn a_slow_downlink_serves_datagrams_one_after_another() {
        let start = Instant::now();
        let mut net = Network::new(start);
        let sender = net.add(Sender::default(), &[addr(1)]);
        let sink = net.add(Sink::default(), &[addr(2)]);
        // 1000 bytes at 8 Mb/s: 1 ms each, after the 20 ms of delay.
        net.set_downlink(sink, 8_000_000);
        for _ in 0..3 {
            net.node(sender)
                .queue
                .push(datagram(addr(1), addr(2), 1000));
        }
        net.run_for(Duration::from_micros(21_999)).unwrap();
        assert_eq!(net.node(sink).datagrams, 1);
        net.run_for(Duration::from_micros(1_001)).unwrap();
        assert_eq!(net.node(sink).datagrams, 3);
    }

    #[test]
    fn a_datagram_to_an_address_nobody_owns_is_counted_and_dropped() {
        let mut net = Network::new(Instant::now());
        net.census_mut().watch(addr(1));
        let sender = net.add(Sender::default(), &[addr(1)]);
        net.node(sender).queue.push(datagram(addr(1), addr(7), 10));
        net.run_for(Duration::from_millis(50)).unwrap();
        assert_eq!(net.stats().datagrams_unrouted, 1);
        assert_eq!(net.census().get(addr(1), addr(7)).unwrap().bytes_sent, 10);
    }
}
