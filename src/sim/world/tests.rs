//! Event-loop tests. CBR runs use the links alone; flow runs use `Toy`, a
//! scripted transport (hello/welcome handshake, a fixed per-stream window,
//! fixed 1 ms pacing, per-packet acks, no loss recovery) whose timing is
//! simple enough to predict to the nanosecond.

use std::cell::Cell;
use std::collections::{BTreeMap, VecDeque};

use sift_cc::{Metrics, Phase};

use super::*;
use crate::conn::{Error, SendInfo, Stats, StreamId};
use crate::sim::ground_truth::PacketRecord;
use crate::sim::link::LinkConfig;
use crate::sim::link::QueueLimit;
use crate::sim::report::Report;
use crate::sim::scenario::{Bottleneck, CbrSpec, FlowSpec};

thread_local! {
    /// How long a Toy client waits before its hello (exercises timers).
    static HELLO_DELAY: Cell<Duration> = const { Cell::new(Duration::ZERO) };
}

/// Per-stream bytes a Toy sender keeps unacknowledged: small, so
/// `stream_send` regularly accepts less than offered.
const TOY_WINDOW: u64 = 20_000;
/// Payload bytes per Toy data datagram.
const TOY_PAYLOAD: u64 = 1000;
/// Data datagram header: type, stream id, offset, fin.
const TOY_HEADER: usize = 1 + 8 + 8 + 1;
/// The Toy sender paces one data datagram per millisecond.
const TOY_PACING: Duration = Duration::from_millis(1);

const HELLO: u8 = 0;
const WELCOME: u8 = 1;
const DATA: u8 = 2;
const ACK: u8 = 3;

#[derive(Debug, Default)]
struct ToySendStream {
    accepted: u64,
    sent: u64,
    acked: u64,
    fin_accepted: bool,
    fin_sent: bool,
}

#[derive(Debug, Default)]
struct ToyRecvStream {
    data: VecDeque<u8>,
    next_offset: u64,
    fin: bool,
    fin_read: bool,
}

#[derive(Debug)]
struct Toy {
    side: Side,
    local: SocketAddr,
    remote: SocketAddr,
    established: bool,
    hello_at: Option<Instant>,
    welcome_owed: bool,
    send_streams: BTreeMap<StreamId, ToySendStream>,
    recv_streams: BTreeMap<StreamId, ToyRecvStream>,
    acks_owed: VecDeque<(StreamId, u64)>,
    next_paced: Option<Instant>,
    bytes_sent: u64,
    bytes_acked: u64,
}

impl Toy {
    fn new(side: Side, local: SocketAddr, remote: SocketAddr, now: Instant) -> Self {
        Self {
            side,
            local,
            remote,
            established: false,
            hello_at: (side == Side::Client).then(|| now + HELLO_DELAY.with(Cell::get)),
            welcome_owed: false,
            send_streams: BTreeMap::new(),
            recv_streams: BTreeMap::new(),
            acks_owed: VecDeque::new(),
            next_paced: None,
            bytes_sent: 0,
            bytes_acked: 0,
        }
    }

    fn datagram(&mut self, len: usize, at: Instant) -> Option<(usize, SendInfo)> {
        self.bytes_sent += len as u64;
        Some((
            len,
            SendInfo {
                from: self.local,
                to: self.remote,
                at,
                checksum_free: false,
                ecn: crate::wire::Ecn::NotEct,
            },
        ))
    }
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_be_bytes(word)
}

impl Transport for Toy {
    fn connect(
        _: Config,
        local: SocketAddr,
        remote: SocketAddr,
        now: Instant,
    ) -> Result<Self, Error> {
        Ok(Toy::new(Side::Client, local, remote, now))
    }

    fn accept(
        _: Config,
        local: SocketAddr,
        remote: SocketAddr,
        now: Instant,
    ) -> Result<Self, Error> {
        Ok(Toy::new(Side::Server, local, remote, now))
    }

    fn recv(&mut self, datagram: &mut [u8], _info: RecvInfo) -> Result<usize, Error> {
        match datagram[0] {
            HELLO => {
                self.established = true;
                self.welcome_owed = true;
            }
            WELCOME => self.established = true,
            DATA => {
                let id = u64_at(datagram, 1);
                let offset = u64_at(datagram, 9);
                let fin = datagram[17] == 1;
                let stream = self.recv_streams.entry(id).or_default();
                assert_eq!(
                    offset, stream.next_offset,
                    "the Toy expects in-order delivery"
                );
                stream.data.extend(&datagram[TOY_HEADER..]);
                stream.next_offset += (datagram.len() - TOY_HEADER) as u64;
                stream.fin |= fin;
                self.acks_owed.push_back((id, stream.next_offset));
            }
            ACK => {
                let id = u64_at(datagram, 1);
                let through = u64_at(datagram, 9);
                if let Some(stream) = self.send_streams.get_mut(&id) {
                    self.bytes_acked += through.saturating_sub(stream.acked);
                    stream.acked = stream.acked.max(through);
                }
            }
            _ => panic!("unknown Toy datagram"),
        }
        Ok(datagram.len())
    }

    fn send(&mut self, out: &mut [u8], now: Instant) -> Result<Option<(usize, SendInfo)>, Error> {
        if self.side == Side::Client && !self.established {
            if self.hello_at.is_some_and(|at| at <= now) {
                self.hello_at = None;
                out[0] = HELLO;
                return Ok(self.datagram(1, now));
            }
            return Ok(None);
        }
        if self.welcome_owed {
            self.welcome_owed = false;
            out[0] = WELCOME;
            return Ok(self.datagram(1, now));
        }
        if let Some((id, through)) = self.acks_owed.pop_front() {
            out[0] = ACK;
            out[1..9].copy_from_slice(&id.to_be_bytes());
            out[9..17].copy_from_slice(&through.to_be_bytes());
            return Ok(self.datagram(17, now));
        }
        let next = self
            .send_streams
            .iter_mut()
            .find(|(_, s)| s.sent < s.accepted || (s.fin_accepted && !s.fin_sent));
        let Some((&id, stream)) = next else {
            return Ok(None);
        };
        let len = (stream.accepted - stream.sent).min(TOY_PAYLOAD);
        out[0] = DATA;
        out[1..9].copy_from_slice(&id.to_be_bytes());
        out[9..17].copy_from_slice(&stream.sent.to_be_bytes());
        stream.sent += len;
        let fin = stream.fin_accepted && stream.sent == stream.accepted;
        stream.fin_sent |= fin;
        out[17] = u8::from(fin);
        // The payload itself travels in the datagram: the receiver checks it.
        let at = self.next_paced.map_or(now, |paced| paced.max(now));
        self.next_paced = Some(at + TOY_PACING);
        let payload = TOY_HEADER..TOY_HEADER + len as usize;
        let start = stream.sent - len;
        for (i, byte) in out[payload].iter_mut().enumerate() {
            *byte = crate::sim::flow::pattern_byte(start + i as u64);
        }
        Ok(self.datagram(TOY_HEADER + len as usize, at))
    }

    fn timeout(&self, now: Instant) -> Option<Duration> {
        self.hello_at.map(|at| at.saturating_duration_since(now))
    }

    fn on_timeout(&mut self, _now: Instant) {}

    fn is_established(&self) -> bool {
        self.established
    }

    fn is_closed(&self) -> bool {
        false
    }

    fn stream_open_bi(&mut self) -> Result<StreamId, Error> {
        let id = 4 * self.send_streams.len() as u64;
        self.send_streams.insert(id, ToySendStream::default());
        Ok(id)
    }

    fn stream_send(&mut self, id: StreamId, data: &[u8], fin: bool) -> Result<usize, Error> {
        let stream = self.send_streams.get_mut(&id).ok_or(Error::Closed)?;
        let free = TOY_WINDOW - (stream.accepted - stream.acked);
        let accepted = (data.len() as u64).min(free);
        stream.accepted += accepted;
        if fin && accepted == data.len() as u64 {
            stream.fin_accepted = true;
        }
        Ok(accepted as usize)
    }

    fn stream_recv(&mut self, id: StreamId, buf: &mut [u8]) -> Result<(usize, bool), Error> {
        let stream = self.recv_streams.get_mut(&id).ok_or(Error::Closed)?;
        let n = buf.len().min(stream.data.len());
        for (slot, byte) in buf.iter_mut().zip(stream.data.drain(..n)) {
            *slot = byte;
        }
        let fin = stream.fin && stream.data.is_empty() && !stream.fin_read;
        stream.fin_read |= fin;
        Ok((n, fin))
    }

    fn readable(&self) -> Vec<StreamId> {
        self.recv_streams
            .iter()
            .filter(|(_, s)| !s.data.is_empty() || (s.fin && !s.fin_read))
            .map(|(id, _)| *id)
            .collect()
    }

    fn stats(&self) -> Stats {
        Stats {
            bytes_sent: self.bytes_sent,
            cwnd: 12_345,
            ssthresh: u64::MAX,
            srtt_us: 50_000,
            cc: Metrics {
                algorithm: "toy".into(),
                cwnd: 12_345,
                ssthresh: u64::MAX,
                phase: Phase::SlowStart,
                last_verdict: None,
                fields: BTreeMap::from([("acked_bytes".to_string(), self.bytes_acked as f64)]),
            },
            ..Stats::default()
        }
    }
}

fn link(delay_ms: u64, rate_bps: u64, queue_packets: usize, loss: f64) -> LinkConfig {
    LinkConfig {
        delay_ms: Duration::from_millis(delay_ms),
        rate_bps: Some(rate_bps),
        queue: QueueLimit::Packets(queue_packets),
        loss: loss.into(),
        ..LinkConfig::default()
    }
}

fn scenario(forward: LinkConfig, reverse: LinkConfig) -> Scenario {
    Scenario {
        name: "test".into(),
        seeds: vec![1],
        time_limit_s: 60.0,
        sample_interval_ms: 100,
        bottleneck: Bottleneck { forward, reverse },
        flows: Vec::new(),
        cbr: Vec::new(),
        params: BTreeMap::new(),
    }
}

fn flow(bytes: u64, streams: u64) -> FlowSpec {
    FlowSpec {
        cc: Default::default(),
        bytes,
        streams,
        corruption_notices: true,
        start_ms: 0.0,
        count: 1,
        access_delay_ms: 0.0,
        max_datagram_size: None,
        pmtud: true,
        recovery: Default::default(),
        idle_timeout_s: None,
        protection: crate::sim::scenario::simulated_protection(),
        key_update_interval: None,
        repair_damaged_headers: true,
        lying_receiver: crate::conn::ReceiverLie::Honest,
        rebind_at_ms: None,
        new_address_at_ms: None,
        new_path: None,
        after_flow: None,
        resume_path: false,
        careful_resume: true,
        careful_resume_config: None,
        ecn: true,
        repair: Default::default(),
    }
}

fn cbr(rate_bps: u64, packet_size: usize, stop_ms: f64) -> CbrSpec {
    CbrSpec {
        rate_bps,
        packet_size,
        on_ms: None,
        off_ms: 0.0,
        start_ms: 0.0,
        stop_ms: Some(stop_ms),
        direction: Direction::Forward,
        count: 1,
    }
}

fn run_toy(scenario: &Scenario, seed: u64) -> (Simulation<Toy>, RunReport) {
    let mut sim = Simulation::<Toy>::with_transport(scenario, seed, Instant::now()).unwrap();
    sim.run().unwrap();
    let report = sim.report();
    (sim, report)
}

fn run_links_only(scenario: &Scenario, seed: u64) -> RunReport {
    let mut sim = Simulation::new(scenario, seed, Instant::now()).unwrap();
    sim.run().unwrap();
    sim.report()
}

#[test]
fn cbr_below_the_link_rate_arrives_at_its_own_rate() {
    // 1 Mb/s of 1000-byte datagrams for 10 s over a 10 Mb/s link: one
    // datagram every 8000 bits / 1e6 bit/s = 8 ms, 10 s / 8 ms = 1250 sent,
    // each on the wire for 0.8 ms, so none waits and none is dropped.
    let mut s = scenario(link(25, 10_000_000, 50, 0.0), link(25, 10_000_000, 50, 0.0));
    s.cbr.push(cbr(1_000_000, 1000, 10_000.0));
    let report = run_links_only(&s, 1);
    let cbr = &report.cbr[0];
    assert_eq!(cbr.counters.sent_packets, 1250);
    assert_eq!(cbr.counters.delivered_packets, 1250);
    assert_eq!(cbr.counters.queue_drops, 0);
    // 1250 · 1000 bytes = 1 Mb/s · 10 s / 8, within one packet.
    assert!(cbr.counters.delivered_bytes.abs_diff(1_250_000) <= 1000);
    let throughput = cbr.throughput_bps.unwrap();
    assert!(
        (throughput - 1e6).abs() * 10.0 / 8.0 <= 1000.0,
        "{throughput}"
    );
    assert_eq!(report.stop_reason, Some(StopReason::Idle));
}

#[test]
fn a_codel_bottleneck_counts_its_dequeue_drops_as_queue_drops() {
    // 12 Mb/s of Not-ECT CBR into a 10 Mb/s CoDel queue (limit 1000, never
    // reached in 5 s): CoDel drops at dequeue, after the link said the
    // datagrams were on their way; each drop still reaches the counters.
    let mut forward = link(25, 10_000_000, 1000, 0.0);
    forward.aqm = Some(crate::sim::link::Aqm::Codel(Default::default()));
    let mut s = scenario(forward, link(25, 10_000_000, 50, 0.0));
    s.cbr.push(cbr(12_000_000, 1000, 5_000.0));
    let report = run_links_only(&s, 1);
    let cbr = &report.cbr[0];
    assert!(cbr.counters.queue_drops > 100, "{:?}", cbr.counters);
    assert_eq!(
        cbr.counters.delivered_packets + cbr.counters.queue_drops,
        cbr.counters.sent_packets,
        "every datagram is delivered or dropped"
    );
    assert_eq!(report.links.forward.aqm_drops, cbr.counters.queue_drops);
    assert_eq!(report.links.forward.queue_drops, 0);
}

#[test]
fn cbr_above_the_link_rate_is_cut_to_the_link_rate_by_queue_drops() {
    // 20 Mb/s offered to a 10 Mb/s link with a 50-packet queue for 10 s:
    // 10 s / 0.4 ms = 25 000 sent; the link carries one per 0.8 ms.
    let mut s = scenario(link(25, 10_000_000, 50, 0.0), link(25, 10_000_000, 50, 0.0));
    s.cbr.push(cbr(20_000_000, 1000, 10_000.0));
    let report = run_links_only(&s, 1);
    let cbr = &report.cbr[0];
    assert_eq!(cbr.counters.sent_packets, 25_000);
    assert!(cbr.counters.queue_drops > 12_000, "{:?}", cbr.counters);
    assert_eq!(cbr.counters.random_losses, 0);
    assert_eq!(
        cbr.counters.delivered_packets + cbr.counters.queue_drops,
        cbr.counters.sent_packets,
        "every datagram is delivered or dropped"
    );
    // Back-to-back arrivals: exactly the link rate, within one packet over 10 s.
    let throughput = cbr.throughput_bps.unwrap();
    assert!(
        (throughput - 1e7).abs() * 10.0 / 8.0 <= 1000.0,
        "{throughput}"
    );
    // Delivered: what the link serialized in 10 s (12 500) plus what was
    // queued or on the wire when sending stopped (at most 50 + 1).
    assert!(
        (12_500..=12_551).contains(&cbr.counters.delivered_packets),
        "{:?}",
        cbr.counters
    );
    assert_eq!(report.links.forward.queue_drops, cbr.counters.queue_drops);
    assert_eq!(
        report.links.forward.delivered,
        cbr.counters.delivered_packets
    );
}

#[test]
fn on_off_cbr_sends_only_while_on() {
    // 1 Mb/s, 1000 B (8 ms apart), on 100 ms / off 100 ms for 1 s:
    // five on periods of ⌈100 / 8⌉ = 13 datagrams each.
    let mut s = scenario(link(5, 10_000_000, 50, 0.0), link(5, 10_000_000, 50, 0.0));
    let mut spec = cbr(1_000_000, 1000, 1000.0);
    spec.on_ms = Some(100.0);
    spec.off_ms = 100.0;
    s.cbr.push(spec);
    let report = run_links_only(&s, 1);
    assert_eq!(report.cbr[0].counters.sent_packets, 5 * 13);
}

#[test]
fn reverse_cbr_loads_the_reverse_link_only() {
    let mut s = scenario(link(5, 10_000_000, 50, 0.0), link(5, 10_000_000, 50, 0.0));
    let mut spec = cbr(1_000_000, 1000, 100.0);
    spec.direction = Direction::Reverse;
    s.cbr.push(spec);
    let report = run_links_only(&s, 1);
    assert_eq!(report.links.forward.offered, 0);
    assert_eq!(report.links.reverse.offered, 13);
}

#[test]
fn same_seed_gives_identical_results_and_another_seed_differs_under_loss() {
    let mut s = scenario(
        link(10, 10_000_000, 50, 0.05),
        link(10, 10_000_000, 50, 0.0),
    );
    s.cbr.push(cbr(2_000_000, 500, 2000.0));
    let json = |seed| {
        let report = Report {
            experiment: "test".into(),
            sift_version: "0".into(),
            runs: vec![run_links_only(&s, seed)],
        };
        report.to_json().unwrap()
    };
    let first = json(7);
    assert_eq!(first, json(7));
    assert_ne!(first, json(8));
}

#[test]
fn every_link_gets_its_own_seed_from_the_run_seed() {
    // Same loss on both directions: the two links must not drop the same
    // datagrams (they would if they shared one seed).
    let mut s = scenario(
        link(1, 100_000_000, 1000, 0.3),
        link(1, 100_000_000, 1000, 0.3),
    );
    s.cbr.push(cbr(1_000_000, 100, 1000.0));
    let mut reverse = cbr(1_000_000, 100, 1000.0);
    reverse.direction = Direction::Reverse;
    s.cbr.push(reverse);
    let report = run_links_only(&s, 3);
    assert_ne!(report.cbr[0].counters.random_losses, 0);
    assert_ne!(
        report.cbr[0].counters.random_losses,
        report.cbr[1].counters.random_losses
    );
}

/// One 10 000-byte stream over 10 Mb/s, 25 ms each way.
fn small_transfer() -> Scenario {
    let mut s = scenario(
        link(25, 10_000_000, 100, 0.0),
        link(25, 10_000_000, 100, 0.0),
    );
    s.flows.push(flow(10_000, 1));
    s
}

#[test]
fn completion_time_follows_handshake_pacing_and_propagation() {
    let (_, report) = run_toy(&small_transfer(), 1);
    let flow = &report.flows[0];
    // Hello (1 byte, 800 ns on the wire) arrives at 25.0008 ms; the welcome
    // is back at 50.0016 ms; ten 1018-byte datagrams (814.4 µs each) leave
    // 1 ms apart from then, the last at 59.0016 ms, and arrives at
    // 59.0016 + 0.8144 + 25 = 84.816 ms.
    assert_eq!(flow.completion_s, Some(0.084_816));
    // Goodput: 10 000 · 8 bits / 0.084816 s.
    assert_eq!(flow.goodput_bps, Some(80_000.0 / 0.084_816));
    assert_eq!(flow.bytes_received, 10_000);
    assert_eq!(flow.mismatched_bytes, 0);
    assert_eq!(report.stop_reason, Some(StopReason::AllFlowsCompleted));
    assert_eq!(report.end_s, 0.084_816);
}

#[test]
fn paced_datagrams_wait_for_their_time() {
    let (sim, _) = run_toy(&small_transfer(), 1);
    let clock = sim.clock();
    let data_sent: Vec<Duration> = sim
        .ground_truth()
        .records()
        .iter()
        .filter(|r| r.direction == Direction::Forward && r.size > 1)
        .map(|r| clock.offset_of(r.sent_at))
        .collect();
    assert_eq!(data_sent.len(), 10);
    // The Toy paces 1 ms apart even though the window would allow a burst.
    for (k, sent) in data_sent.iter().enumerate() {
        assert_eq!(
            *sent,
            Duration::from_nanos(50_001_600 + k as u64 * 1_000_000)
        );
    }
}

#[test]
fn connection_timers_fire_at_their_deadline() {
    // The client's hello waits for a 7 ms timer: everything shifts by 7 ms.
    HELLO_DELAY.with(|d| d.set(Duration::from_millis(7)));
    let (_, report) = run_toy(&small_transfer(), 1);
    HELLO_DELAY.with(|d| d.set(Duration::ZERO));
    assert_eq!(report.flows[0].completion_s, Some(0.091_816));
}

#[test]
fn transfers_complete_byte_exact_over_many_streams() {
    for streams in [1, 4, 16] {
        let mut s = scenario(
            link(25, 10_000_000, 100, 0.0),
            link(25, 10_000_000, 100, 0.0),
        );
        // 300 001 bytes: not a multiple of the stream count or the payload.
        s.flows.push(flow(300_001, streams));
        let (_, report) = run_toy(&s, 1);
        let flow = &report.flows[0];
        assert!(flow.completion_s.is_some(), "{streams} streams: {flow:?}");
        assert_eq!(flow.bytes_received, 300_001, "{streams} streams");
        assert_eq!(flow.mismatched_bytes, 0, "{streams} streams");
        assert_eq!(flow.error, None);
    }
}

#[test]
fn ground_truth_records_every_datagram_of_a_flow() {
    let (sim, report) = run_toy(&small_transfer(), 1);
    let truth = sim.ground_truth();
    // Client: hello + 10 data; server: welcome + 10 acks.
    let counters = truth.flow_counters(0).unwrap();
    assert_eq!(counters.forward.packets_sent, 11);
    assert_eq!(counters.reverse.packets_sent, 11);
    assert_eq!(counters.forward.delivered, 11);
    assert_eq!(counters.forward.bytes_sent, 1 + 10 * 1018);
    assert_eq!(report.flows[0].packets, *counters);
    // The run stops when the server has read the last byte, at 84.816 ms.
    // The first ack left at 75.8144 ms (first data arrival) and needs 25 ms
    // more: all ten acks are still on their way; only the welcome arrived.
    assert_eq!(counters.reverse.delivered, 1);
    let in_flight: Vec<&PacketRecord> = truth
        .records()
        .iter()
        .filter(|r| r.delivered_at.is_none())
        .collect();
    assert_eq!(in_flight.len(), 10);
    assert!(in_flight.iter().all(|r| r.direction == Direction::Reverse));
    for record in truth.records() {
        assert_eq!(record.flow, 0);
        assert_eq!(record.fate, Some(Fate::Delivered));
    }
}

#[test]
fn access_delay_lengthens_only_that_flows_path() {
    let mut s = small_transfer();
    s.flows[0].access_delay_ms = 5.0;
    let (sim, _) = run_toy(&s, 1);
    let hello = sim.ground_truth().record(0).unwrap();
    // Hello: 5 ms access + 800 ns on the bottleneck wire + 25 ms.
    assert_eq!(
        hello.delivered_at.unwrap() - hello.sent_at,
        Duration::from_nanos(30_000_800)
    );
}

#[test]
fn time_series_is_sampled_on_the_interval_and_ends_at_the_stop() {
    let mut s = scenario(
        link(25, 10_000_000, 100, 0.0),
        link(25, 10_000_000, 100, 0.0),
    );
    s.flows.push(flow(200_000, 1));
    let (_, report) = run_toy(&s, 1);
    let samples = &report.flows[0].timeseries;
    let times: Vec<f64> = samples.iter().take(3).map(|s| s.t_s).collect();
    assert_eq!(times, [0.0, 0.1, 0.2]);
    assert_eq!(samples.last().unwrap().t_s, report.end_s);
    assert_eq!(samples.last().unwrap().bytes_delivered, 200_000);
    assert_eq!(samples[1].cwnd, 12_345);
    assert_eq!(samples[1].ssthresh, None, "u64::MAX means not yet set");
    assert!(samples[1].cc.contains_key("acked_bytes"));
}

#[test]
fn a_flow_still_running_at_the_time_limit_has_no_completion() {
    let mut s = scenario(
        link(25, 10_000_000, 100, 0.0),
        link(25, 10_000_000, 100, 0.0),
    );
    s.flows.push(flow(1_000_000, 1));
    s.time_limit_s = 0.5;
    let (_, report) = run_toy(&s, 1);
    let flow = &report.flows[0];
    assert_eq!(report.stop_reason, Some(StopReason::TimeLimit));
    assert_eq!(report.end_s, 0.5);
    assert_eq!(flow.completion_s, None);
    assert_eq!(flow.goodput_bps, None);
    assert!(flow.bytes_received > 0 && flow.bytes_received < 1_000_000);
}

#[test]
fn later_flows_start_at_their_start_time() {
    let mut s = small_transfer();
    let mut late = flow(10_000, 1);
    late.start_ms = 200.0;
    s.flows.push(late);
    let (_, report) = run_toy(&s, 1);
    assert_eq!(report.flows[1].start_s, 0.2);
    assert_eq!(report.flows[1].timeseries.first().unwrap().t_s, 0.2);
    // Same path, no competition by then: the same 84.816 ms.
    assert_eq!(report.flows[1].completion_s, Some(0.084_816));
    assert_eq!(report.end_s, 0.284_816);
}

#[test]
fn a_scenario_with_nothing_to_do_stops_at_once() {
    let s = scenario(
        link(25, 10_000_000, 100, 0.0),
        link(25, 10_000_000, 100, 0.0),
    );
    let report = run_links_only(&s, 1);
    assert_eq!(report.stop_reason, Some(StopReason::Idle));
    assert_eq!(report.end_s, 0.0);
}
