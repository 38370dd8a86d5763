//! `Simulation`: the event loop that owns the hosts, links and flows of one
//! run. It repeatedly takes the earliest of: a flow starting, a link moving a
//! packet, a connection timer, a paced datagram becoming due, a CBR send, a
//! time-series sample. Deliveries go to the connection that owns the
//! destination address (`recv`), after which the endpoint's application runs
//! and its `send` is drained until it has nothing more (`Ok(None)`) or hands
//! back a datagram paced for later, which is held until then.
//!
//! A run stops when every sift flow has completed (or its connection
//! closed), when the time limit passes, or when nothing is left to happen.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::conn::{Config, Connection, ReceiverLie, RecvInfo};
use crate::Side;

use super::cbr::{CbrCounters, CbrSchedule};
use super::clock::VirtualClock;
use super::events::EventQueue;
use super::flow::{Pattern, ReceiverApp, SenderApp};
use super::ground_truth::{cbr_flow_of, cbr_packet_id, GroundTruth, TrueCause};
use super::link::{Delivery, Fate, Link};
use super::report::{CbrReport, FlowReport, LinkReport, RunReport, Sample, StopReason, Verdicts};
use super::scenario::{ms_to_duration, Scenario, ScenarioError};
use super::topology::{
    Direction, LinkId, TooManyHosts, Topology, BOTTLENECK_FORWARD, BOTTLENECK_REVERSE,
};
use super::transport::Transport;

/// Buffer `send` writes into: the largest UDP payload fits.
const SEND_BUFFER_BYTES: usize = 65_536;
/// Buffer the server application reads stream data into.
const READ_BUFFER_BYTES: usize = 64 * 1024;
/// More events than this at one virtual instant means time has stopped
/// moving (e.g. a timer that always asks to fire now): the run fails instead
/// of spinning forever.
pub const MAX_EVENTS_PER_INSTANT: u64 = 10_000_000;
/// More datagrams than this from one `send` drain means the connection never
/// says "nothing more": the run fails instead of spinning forever.
pub const MAX_DATAGRAMS_PER_DRAIN: u64 = 1_000_000;

/// A simulation could not be built or could not go on.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The scenario is invalid.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// The scenario needs more hosts than the address plan holds.
    #[error(transparent)]
    Topology(#[from] TooManyHosts),
    /// Events kept coming at one virtual instant: time could not advance.
    #[error("virtual time stopped at {at_s} s: more than {events} events at one instant")]
    Livelock {
        /// The instant, virtual seconds.
        at_s: f64,
        /// Events processed there.
        events: u64,
    },
    /// A connection kept producing datagrams at one instant.
    #[error("flow {flow}: the {} connection produced more than {datagrams} datagrams at {at_s} s without pausing", side_name(*side))]
    SendLoop {
        /// The flow.
        flow: usize,
        /// Which end.
        side: Side,
        /// Datagrams produced at that instant.
        datagrams: u64,
        /// The instant, virtual seconds.
        at_s: f64,
    },
    /// A connection reported a datagram longer than the buffer it wrote.
    #[error("flow {flow}: the {} connection reported a {len}-byte datagram from a {capacity}-byte buffer", side_name(*side))]
    OversizedDatagram {
        /// The flow.
        flow: usize,
        /// Which end.
        side: Side,
        /// The length reported.
        len: usize,
        /// The buffer's size.
        capacity: usize,
    },
}

/// "client" or "server", for messages.
fn side_name(side: Side) -> &'static str {
    match side {
        Side::Client => "client",
        Side::Server => "server",
    }
}

/// One end of a sift flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct EndpointRef {
    flow: usize,
    side: Side,
}

#[derive(Clone, Copy, Debug)]
enum Event {
    FlowStart(usize),
    /// The flow's client gets a new address: another port (`false`, a NAT
    /// rebinding) or another IP address (`true`).
    ClientMoves(usize, bool),
    LinkWake(LinkId),
    Timer(EndpointRef),
    PacingRelease(EndpointRef),
    CbrSend(usize),
    Sample,
}

struct LinkSlot {
    link: Link,
    /// The wake-up currently scheduled; queue entries for other times are stale.
    wake: Option<Instant>,
}

/// A datagram the connection paced for later.
struct Held {
    bytes: Vec<u8>,
    at: Instant,
    ecn: crate::wire::Ecn,
}

struct Endpoint<T> {
    conn: Option<T>,
    address: SocketAddr,
    peer: SocketAddr,
    /// The timer deadline currently scheduled; queue entries for other times
    /// are stale.
    timer: Option<Instant>,
    held: Option<Held>,
    closed: bool,
}

impl<T> Endpoint<T> {
    fn new(address: SocketAddr, peer: SocketAddr) -> Self {
        Self {
            conn: None,
            address,
            peer,
            timer: None,
            held: None,
            closed: false,
        }
    }
}

struct SiftFlow<T> {
    cc_name: String,
    config: Config,
    /// How the server lies about losses (`FlowSpec::lying_receiver`).
    lying_receiver: ReceiverLie,
    /// The client moved to its second path (`FlowSpec::new_path`).
    moved: bool,
    bytes: u64,
    streams: u64,
    start: Duration,
    client: Endpoint<T>,
    server: Endpoint<T>,
    sender: SenderApp,
    receiver: ReceiverApp,
    started_at: Option<Instant>,
    completed_at: Option<Instant>,
    /// Completed, or its client can no longer send.
    ended: bool,
    error: Option<String>,
    misrouted: u64,
    samples: Vec<Sample>,
    /// The sender's loss verdicts scored against ground truth.
    verdicts: Verdicts,
    /// Start after this flow completed (`FlowSpec::after_flow`).
    after_flow: Option<usize>,
    /// Resume from the path state `after_flow`'s sender saw.
    resume_path: bool,
    /// What this flow's sender saw of its path, taken when it completed.
    observed: Option<sift_cc::SavedPath>,
    /// When the server read the first payload byte.
    first_byte_at: Option<Instant>,
}

impl<T> SiftFlow<T> {
    fn endpoint_mut(&mut self, side: Side) -> &mut Endpoint<T> {
        match side {
            Side::Client => &mut self.client,
            Side::Server => &mut self.server,
        }
    }

    fn note_error(&mut self, error: String) {
        self.error.get_or_insert(error);
    }
}

struct CbrFlow {
    schedule: CbrSchedule,
    rate_bps: u64,
    direction: Direction,
    next_sequence: u64,
    counters: CbrCounters,
}

/// One run of a scenario with one seed, in virtual time.
pub struct Simulation<T: Transport = Connection> {
    seed: u64,
    params: BTreeMap<String, serde_json::Value>,
    clock: VirtualClock,
    time_limit: Instant,
    sample_interval: Duration,
    events: EventQueue<Event>,
    topology: Topology,
    links: Vec<LinkSlot>,
    flows: Vec<SiftFlow<T>>,
    cbr: Vec<CbrFlow>,
    truth: GroundTruth,
    pattern: Pattern,
    send_buffer: Vec<u8>,
    read_buffer: Vec<u8>,
    /// Spent packet buffers, reused for new datagrams.
    pool: Vec<Vec<u8>>,
    events_processed: u64,
    events_at_instant: u64,
    flows_ended: usize,
    stop: Option<StopReason>,
    /// What each endpoint sent each address (`attach_census`).
    census: Option<census_tap::CensusTap>,
}

impl Simulation<Connection> {
    /// A run of `scenario` with `seed`, on sift connections. `base` anchors
    /// virtual time zero; nothing depends on its value.
    pub fn new(scenario: &Scenario, seed: u64, base: Instant) -> Result<Self, SimError> {
        Self::with_transport(scenario, seed, base)
    }
}

/// The sift event a traced simulation adds to the sender's trace for every
/// loss verdict: the packets, the verdict, whether it was undone, and the
/// true cause of each packet's loss (`ground_truth::TrueCause`, `null`
/// where unknown).
pub const LOSS_CLASSIFIED_EVENT: &str = "loss_classified";

impl<T: Transport> Simulation<T> {
    /// Writes a qlog trace of every sift connection of this run into
    /// `dir`, as `seed-S-flow-F-{client|server}.sqlog`; the clients'
    /// traces carry the ground truth of every loss verdict
    /// ([`LOSS_CLASSIFIED_EVENT`]). Call before `run`.
    pub fn trace_qlog(&mut self, dir: &std::path::Path) {
        let seed = self.seed;
        for (index, flow) in self.flows.iter_mut().enumerate() {
            let dir = dir.to_path_buf();
            flow.config.trace = Some(crate::trace::TraceSink::new(move |start| {
                let side = match start.side {
                    Side::Client => "client",
                    Side::Server => "server",
                };
                let path = dir.join(format!(
                    "seed-{seed}-flow-{index}-{side}.{}",
                    crate::trace::QLOG_EXTENSION
                ));
                match crate::trace::QlogWriter::create(&path, start.side, start.now) {
                    Ok(writer) => Some(Box::new(writer) as Box<dyn crate::trace::Observer>),
                    Err(error) => {
                        tracing::warn!(path = %path.display(), %error, "cannot write a qlog trace");
                        None
                    }
                }
            }));
        }
    }

    /// A run of `scenario` with `seed` on any `Transport`.
    pub fn with_transport(scenario: &Scenario, seed: u64, base: Instant) -> Result<Self, SimError> {
        scenario.validate()?;
        let clock = VirtualClock::new(base);
        let flow_specs: Vec<_> = scenario.expanded_flows().collect();
        let cbr_specs: Vec<_> = scenario.expanded_cbr().collect();
        let access_delays: Vec<Duration> = flow_specs
            .iter()
            .map(|f| ms_to_duration(f.access_delay_ms))
            .collect();
        let cbr_directions: Vec<Direction> = cbr_specs.iter().map(|c| c.direction).collect();
        let mut topology = Topology::dumbbell(
            scenario.bottleneck.forward.clone(),
            scenario.bottleneck.reverse.clone(),
            &access_delays,
            &cbr_directions,
        )?;
        for (flow, spec) in flow_specs.iter().enumerate() {
            if let Some(path) = &spec.new_path {
                topology.add_second_path(flow, path.forward.clone(), path.reverse.clone());
            }
        }
        // Every link draws its own seed from the run's seed, in link order,
        // so a run is a pure function of (scenario, seed).
        let mut seeder = ChaCha8Rng::seed_from_u64(seed);
        let links = topology
            .link_configs()
            .iter()
            .map(|config| {
                let mut link = Link::new(config.clone(), seeder.random());
                // Corruption aimed at "header" or "payload" needs to know
                // where a sift packet's header ends; outages count from the
                // start of the run, not from the first packet.
                link.set_header_len(crate::wire::header_region_len);
                link.set_epoch(base);
                LinkSlot { link, wake: None }
            })
            .collect();
        let mut events = EventQueue::new();
        let flows = flow_specs
            .iter()
            .zip(topology.sift_flows())
            .enumerate()
            .map(|(index, (spec, hosts))| {
                let mut config = Config {
                    cc: spec.cc.clone(),
                    recovery: spec.recovery.clone(),
                    corruption_notices: spec.corruption_notices,
                    protection: spec.protection,
                    tls: crate::crypto::tls::process_loopback_config(),
                    key_update_interval: spec.key_update_interval,
                    repair_damaged_headers: spec.repair_damaged_headers,
                    // Connection IDs come from the run's seed too.
                    rng_seed: seeder.random(),
                    ..Config::default()
                };
                if let Some(size) = spec.max_datagram_size {
                    config.max_datagram_size = size;
                }
                // The simulated hosts sit on Ethernet; their 127/8
                // addresses are only labels, not a loopback interface.
                config.pmtud.enabled = spec.pmtud;
                config.pmtud.interface_mtu = Some(crate::conn::pmtud::ETHERNET_MTU);
                if let Some(seconds) = spec.idle_timeout_s {
                    config.idle_timeout = ms_to_duration(seconds * 1e3);
                }
                config.ecn = spec.ecn;
                config.repair = spec.repair;
                if !spec.careful_resume {
                    config.careful_resume = None;
                } else if let Some(knobs) = spec.careful_resume_config {
                    config.careful_resume = Some(knobs);
                }
                let start = ms_to_duration(spec.start_ms);
                if spec.after_flow.is_none() {
                    events.push(clock.at(start), Event::FlowStart(index));
                }
                for (at_ms, new_ip) in [(spec.rebind_at_ms, false), (spec.new_address_at_ms, true)]
                {
                    if let Some(at_ms) = at_ms {
                        events.push(
                            clock.at(ms_to_duration(at_ms)),
                            Event::ClientMoves(index, new_ip),
                        );
                    }
                }
                SiftFlow {
                    cc_name: spec.cc.name().to_string(),
                    config,
                    lying_receiver: spec.lying_receiver,
                    moved: false,
                    bytes: spec.bytes,
                    streams: spec.streams,
                    start,
                    client: Endpoint::new(hosts.client, hosts.server),
                    server: Endpoint::new(hosts.server, hosts.client),
                    sender: SenderApp::new(spec.bytes, spec.streams),
                    receiver: ReceiverApp::new(spec.bytes, spec.streams),
                    started_at: None,
                    completed_at: None,
                    ended: false,
                    error: None,
                    misrouted: 0,
                    samples: Vec::new(),
                    verdicts: Verdicts::default(),
                    after_flow: spec.after_flow,
                    resume_path: spec.resume_path,
                    observed: None,
                    first_byte_at: None,
                }
            })
            .collect();
        let cbr = cbr_specs
            .iter()
            .enumerate()
            .map(|(index, spec)| {
                let mut schedule = CbrSchedule::new(
                    spec.rate_bps,
                    spec.packet_size,
                    ms_to_duration(spec.start_ms),
                    spec.on_ms.map(ms_to_duration),
                    ms_to_duration(spec.off_ms),
                    spec.stop_ms.map(ms_to_duration),
                );
                if let Some(first) = schedule.next_send() {
                    events.push(clock.at(first), Event::CbrSend(index));
                }
                CbrFlow {
                    schedule,
                    rate_bps: spec.rate_bps,
                    direction: spec.direction,
                    next_sequence: 0,
                    counters: CbrCounters::default(),
                }
            })
            .collect();
        events.push(clock.now(), Event::Sample);
        Ok(Self {
            seed,
            params: scenario.params(),
            clock,
            time_limit: clock.at(scenario.time_limit()),
            sample_interval: scenario.sample_interval(),
            events,
            truth: GroundTruth::new(flow_specs.len()),
            topology,
            links,
            flows,
            cbr,
            pattern: Pattern::new(),
            send_buffer: vec![0; SEND_BUFFER_BYTES],
            read_buffer: vec![0; READ_BUFFER_BYTES],
            pool: Vec::new(),
            events_processed: 0,
            events_at_instant: 0,
            flows_ended: 0,
            stop: None,
            census: None,
        })
    }

    /// Runs until the run stops; returns why.
    pub fn run(&mut self) -> Result<StopReason, SimError> {
        loop {
            if let Some(reason) = self.step()? {
                return Ok(reason);
            }
        }
    }

    /// Processes one event. Returns why the run stopped, once it has.
    pub fn step(&mut self) -> Result<Option<StopReason>, SimError> {
        if self.stop.is_some() {
            return Ok(self.stop);
        }
        let Some((at, event)) = self.events.pop() else {
            self.finish(StopReason::Idle);
            return Ok(self.stop);
        };
        if at > self.time_limit {
            self.clock.advance_to(self.time_limit);
            self.finish(StopReason::TimeLimit);
            return Ok(self.stop);
        }
        if at > self.clock.now() {
            self.events_at_instant = 0;
        }
        self.clock.advance_to(at);
        self.events_at_instant += 1;
        self.events_processed += 1;
        if self.events_at_instant > MAX_EVENTS_PER_INSTANT {
            return Err(SimError::Livelock {
                at_s: self.clock.elapsed().as_secs_f64(),
                events: MAX_EVENTS_PER_INSTANT,
            });
        }
        match event {
            Event::FlowStart(flow) => self.start_flow(flow)?,
            Event::ClientMoves(flow, new_ip) => self.move_client(flow, new_ip),
            Event::LinkWake(link) => self.wake_link(link, at)?,
            Event::Timer(endpoint) => self.fire_timer(endpoint, at)?,
            Event::PacingRelease(endpoint) => self.release_paced(endpoint)?,
            Event::CbrSend(flow) => self.send_cbr(flow),
            Event::Sample => {
                self.sample();
                if !self.events.is_empty() {
                    self.events
                        .push(self.clock.now() + self.sample_interval, Event::Sample);
                }
            }
        }
        if !self.flows.is_empty() && self.flows_ended == self.flows.len() {
            let all_completed = self.flows.iter().all(|f| f.completed_at.is_some());
            self.finish(if all_completed {
                StopReason::AllFlowsCompleted
            } else {
                StopReason::AllFlowsEnded
            });
        }
        Ok(self.stop)
    }

    fn finish(&mut self, reason: StopReason) {
        self.stop = Some(reason);
        // End every time series at the stop time.
        self.sample();
    }

    /// The client of flow `index` gets a new address; its packets reach the
    /// server from there, and the server's reach it only if sent there.
    fn move_client(&mut self, index: usize, new_ip: bool) {
        let Some(flow) = self.flows.get_mut(index) else {
            return;
        };
        let old = flow.client.address;
        let moved = match (old, new_ip) {
            (SocketAddr::V4(v4), true) => {
                let [a, b, c, d] = v4.ip().octets();
                SocketAddr::from(([a, b, c.wrapping_add(100), d], v4.port()))
            }
            (_, _) => SocketAddr::new(old.ip(), old.port().wrapping_add(1000)),
        };
        tracing::debug!(flow = index, %old, new = %moved, "the client moves");
        flow.client.address = moved;
        flow.server.peer = moved;
        // A new network: its own links from now on, where it has some.
        flow.moved |= new_ip;
        self.census_watch_move(old, moved);
    }

    /// Flow `index` completed at `now`: the flows that wait for it start,
    /// at once or at their `start_ms`, whichever is later.
    fn start_followers(&mut self, index: usize, now: Instant) {
        for (follower, flow) in self.flows.iter().enumerate() {
            if flow.after_flow == Some(index) {
                let at = now.max(self.clock.at(flow.start));
                self.events.push(at, Event::FlowStart(follower));
            }
        }
    }

    fn start_flow(&mut self, index: usize) -> Result<(), SimError> {
        let now = self.clock.now();
        let Some(flow) = self.flows.get_mut(index) else {
            return Ok(());
        };
        flow.started_at = Some(now);
        let server_config = Config {
            lie_about_losses: flow.lying_receiver,
            ..flow.config.clone()
        };
        match T::accept(server_config, flow.server.address, flow.client.address, now) {
            Ok(conn) => flow.server.conn = Some(conn),
            Err(e) => flow.note_error(format!("server could not accept: {e}")),
        }
        match T::connect(
            flow.config.clone(),
            flow.client.address,
            flow.server.address,
            now,
        ) {
            Ok(conn) => flow.client.conn = Some(conn),
            Err(e) => flow.note_error(format!("client could not connect: {e}")),
        }
        let saved = match (flow.resume_path, flow.after_flow) {
            (true, Some(earlier)) => self.flows.get(earlier).and_then(|f| f.observed),
            _ => None,
        };
        if let (Some(saved), Some(flow)) = (saved, self.flows.get_mut(index)) {
            if let Some(conn) = flow.client.conn.as_mut() {
                conn.resume_path(saved);
            }
        }
        self.service(EndpointRef {
            flow: index,
            side: Side::Server,
        })?;
        self.service(EndpointRef {
            flow: index,
            side: Side::Client,
        })
    }

    fn wake_link(&mut self, link: LinkId, at: Instant) -> Result<(), SimError> {
        let now = self.clock.now();
        match self.links.get_mut(link.0) {
            Some(slot) if slot.wake == Some(at) => slot.wake = None,
            _ => return Ok(()), // stale: a newer wake-up replaced this one
        }
        while let Some(delivery) = self
            .links
            .get_mut(link.0)
            .and_then(|slot| slot.link.poll_delivery(now))
        {
            self.on_delivery(link, delivery)?;
        }
        self.schedule_link(link);
        Ok(())
    }

    fn fire_timer(&mut self, endpoint: EndpointRef, at: Instant) -> Result<(), SimError> {
        let now = self.clock.now();
        let Some(flow) = self.flows.get_mut(endpoint.flow) else {
            return Ok(());
        };
        let end = flow.endpoint_mut(endpoint.side);
        if end.timer != Some(at) {
            return Ok(()); // stale: the timer was re-armed since
        }
        end.timer = None;
        if let Some(conn) = end.conn.as_mut() {
            conn.on_timeout(now);
        }
        self.service(endpoint)
    }

    fn release_paced(&mut self, endpoint: EndpointRef) -> Result<(), SimError> {
        let now = self.clock.now();
        let Some(flow) = self.flows.get_mut(endpoint.flow) else {
            return Ok(());
        };
        let end = flow.endpoint_mut(endpoint.side);
        let due = end.held.as_ref().is_some_and(|held| held.at <= now);
        if !due {
            return Ok(());
        }
        if let Some(held) = end.held.take() {
            self.transmit(endpoint, held.bytes, held.ecn);
        }
        self.service(endpoint)
    }

    /// Runs an endpoint's application, drains its connection's datagrams and
    /// re-arms its timer. Called after anything happened to the endpoint.
    fn service(&mut self, endpoint: EndpointRef) -> Result<(), SimError> {
        let now = self.clock.now();
        let Some(flow) = self.flows.get_mut(endpoint.flow) else {
            return Ok(());
        };
        match endpoint.side {
            Side::Client => {
                if let Some(conn) = flow.client.conn.as_mut() {
                    if let Err(e) = flow.sender.pump(conn, &self.pattern) {
                        flow.error.get_or_insert(format!("client stream_send: {e}"));
                    }
                }
            }
            Side::Server => {
                if let Some(conn) = flow.server.conn.as_mut() {
                    flow.receiver
                        .drain(conn, &mut self.read_buffer, &self.pattern);
                    if flow.first_byte_at.is_none() && flow.receiver.bytes_received() > 0 {
                        flow.first_byte_at = Some(now);
                    }
                    if flow.completed_at.is_none() && flow.receiver.is_complete() {
                        flow.completed_at = Some(now);
                        flow.observed = flow.client.conn.as_ref().and_then(T::observed_path);
                        self.start_followers(endpoint.flow, now);
                    }
                }
            }
        }
        self.drain_sends(endpoint)?;
        self.score_verdicts(endpoint);
        self.rearm_timer(endpoint);
        self.update_flow_state(endpoint.flow);
        Ok(())
    }

    /// Scores the client's new loss verdicts against what the links really
    /// did to the data packets they name (the Veno paper's Table I).
    fn score_verdicts(&mut self, endpoint: EndpointRef) {
        if endpoint.side != Side::Client {
            return;
        }
        let Some(flow) = self.flows.get_mut(endpoint.flow) else {
            return;
        };
        let Some(conn) = flow.client.conn.as_mut() else {
            return;
        };
        let traced = conn.is_traced();
        for record in conn.drain_loss_verdicts() {
            if record.space != crate::recovery::SpaceId::Data {
                continue;
            }
            let mut truths = Vec::new();
            for &pn in &record.packet_numbers {
                let truth = self
                    .truth
                    .by_packet_number(endpoint.flow, Direction::Forward, pn)
                    .and_then(|datagram| TrueCause::of(datagram.fate));
                match truth {
                    Some(truth) if record.undone => flow.verdicts.withdraw(record.verdict, truth),
                    Some(truth) => flow.verdicts.record(record.verdict, truth),
                    None => {}
                }
                if traced {
                    truths.push(truth);
                }
            }
            if traced {
                // What no real-socket trace can have: what the link really
                // did to each packet the verdict is about.
                let data = serde_json::json!({
                    "packet_numbers": record.packet_numbers,
                    "verdict": record.verdict,
                    "undone": record.undone,
                    "true_causes": truths,
                });
                conn.annotate(self.clock.now(), LOSS_CLASSIFIED_EVENT, &data);
            }
        }
    }

    fn drain_sends(&mut self, endpoint: EndpointRef) -> Result<(), SimError> {
        let now = self.clock.now();
        let mut datagrams = 0u64;
        loop {
            let Some(flow) = self.flows.get_mut(endpoint.flow) else {
                return Ok(());
            };
            let end = flow.endpoint_mut(endpoint.side);
            if end.held.is_some() || end.closed {
                return Ok(());
            }
            let Some(conn) = end.conn.as_mut() else {
                return Ok(());
            };
            let (len, info) = match conn.send(&mut self.send_buffer, now) {
                Ok(Some(datagram)) => datagram,
                Ok(None) => return Ok(()),
                Err(e) => {
                    end.closed = true;
                    flow.note_error(format!("{} send: {e}", side_name(endpoint.side)));
                    return Ok(());
                }
            };
            datagrams += 1;
            if datagrams > MAX_DATAGRAMS_PER_DRAIN {
                return Err(SimError::SendLoop {
                    flow: endpoint.flow,
                    side: endpoint.side,
                    datagrams: MAX_DATAGRAMS_PER_DRAIN,
                    at_s: self.clock.elapsed().as_secs_f64(),
                });
            }
            let Some(data) = self.send_buffer.get(..len) else {
                return Err(SimError::OversizedDatagram {
                    flow: endpoint.flow,
                    side: endpoint.side,
                    len,
                    capacity: self.send_buffer.len(),
                });
            };
            // The dumbbell routes by destination address; the only host an
            // endpoint can reach is its peer.
            if info.to != end.peer {
                flow.misrouted += 1;
                tracing::warn!(flow = endpoint.flow, to = %info.to, "datagram to an unknown address dropped");
                continue;
            }
            let mut packet = self.pool.pop().unwrap_or_default();
            packet.clear();
            packet.extend_from_slice(data);
            if info.at > now {
                end.held = Some(Held {
                    bytes: packet,
                    at: info.at,
                    ecn: info.ecn,
                });
                self.events.push(info.at, Event::PacingRelease(endpoint));
                return Ok(());
            }
            self.transmit(endpoint, packet, info.ecn);
        }
    }

    fn rearm_timer(&mut self, endpoint: EndpointRef) {
        let now = self.clock.now();
        let Some(flow) = self.flows.get_mut(endpoint.flow) else {
            return;
        };
        let end = flow.endpoint_mut(endpoint.side);
        let deadline = end
            .conn
            .as_ref()
            .and_then(|conn| conn.timeout(now))
            .and_then(|delay| now.checked_add(delay));
        if deadline != end.timer {
            end.timer = deadline;
            if let Some(deadline) = deadline {
                self.events.push(deadline, Event::Timer(endpoint));
            }
        }
    }

    fn update_flow_state(&mut self, index: usize) {
        let Some(flow) = self.flows.get_mut(index) else {
            return;
        };
        if flow.ended {
            return;
        }
        let client_gone = match flow.client.conn.as_ref() {
            Some(conn) => flow.client.closed || conn.is_closed(),
            None => flow.started_at.is_some(),
        };
        if flow.completed_at.is_some() || client_gone {
            flow.ended = true;
            self.flows_ended += 1;
            if flow.completed_at.is_none() {
                flow.note_error(
                    "the client connection closed before the transfer completed".into(),
                );
            }
        }
    }

    fn sample(&mut self) {
        let t_s = self.clock.elapsed().as_secs_f64();
        for flow in self.flows.iter_mut().filter(|f| f.started_at.is_some()) {
            if flow.samples.last().is_some_and(|s| s.t_s >= t_s) {
                continue;
            }
            let stats = flow
                .client
                .conn
                .as_ref()
                .map(Transport::stats)
                .unwrap_or_default();
            flow.samples.push(Sample::from_stats(
                t_s,
                &stats,
                flow.receiver.bytes_received(),
            ));
        }
    }
}

mod census_tap;
mod packets;
mod results;

#[cfg(test)]
mod tests;
