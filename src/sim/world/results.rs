//! What a run exposes: its report and read access to its parts (clock,
//! ground truth, topology, links, connections) for callers that score or
//! inspect a run beyond the report.

use super::*;

impl<T: Transport> Simulation<T> {
    /// The results so far (final once the run has stopped).
    pub fn report(&self) -> RunReport {
        let flows =
            self.flows
                .iter()
                .enumerate()
                .map(|(id, flow)| {
                    let client_stats = flow
                        .client
                        .conn
                        .as_ref()
                        .map(Transport::stats)
                        .unwrap_or_default();
                    let server_stats = flow
                        .server
                        .conn
                        .as_ref()
                        .map(Transport::stats)
                        .unwrap_or_default();
                    let completion = flow
                        .completed_at
                        .zip(flow.started_at)
                        .map(|(done, start)| done.saturating_duration_since(start).as_secs_f64());
                    let goodput_bps = completion
                        .filter(|seconds| *seconds > 0.0)
                        .map(|seconds| flow.bytes as f64 * 8.0 / seconds);
                    let mut error = flow.error.clone();
                    if flow.misrouted > 0 && error.is_none() {
                        error = Some(format!(
                            "{} datagrams addressed to an unknown host were dropped",
                            flow.misrouted
                        ));
                    }
                    FlowReport {
                        id,
                        cc: flow.cc_name.clone(),
                        corruption_notices: flow.config.corruption_notices,
                        bytes: flow.bytes,
                        streams: flow.streams,
                        start_s: flow
                            .started_at
                            .map_or(flow.start, |at| self.clock.offset_of(at))
                            .as_secs_f64(),
                        completion_s: completion,
                        goodput_bps,
                        first_byte_s: flow.first_byte_at.zip(flow.started_at).map(
                            |(first, start)| first.saturating_duration_since(start).as_secs_f64(),
                        ),
                        retransmitted_packets: client_stats.retransmitted_packets,
                        ptos: client_stats.ptos,
                        corruption_notices_received: client_stats.corruption_notices_received,
                        verdicts: flow.verdicts,
                        bytes_received: flow.receiver.bytes_received(),
                        mismatched_bytes: flow.receiver.mismatched_bytes(),
                        packets: self.truth.flow_counters(id).copied().unwrap_or_default(),
                        error,
                        client_stats,
                        server_stats,
                        timeseries: flow.samples.clone(),
                    }
                })
                .collect();
        let cbr = self
            .cbr
            .iter()
            .enumerate()
            .map(|(id, cbr)| CbrReport {
                id,
                direction: cbr.direction,
                rate_bps: cbr.rate_bps,
                packet_size: cbr.schedule.packet_size(),
                throughput_bps: cbr.counters.throughput_bps(cbr.schedule.packet_size()),
                counters: cbr.counters.clone(),
            })
            .collect();
        let counters = |link: LinkId| {
            self.links
                .get(link.0)
                .map(|slot| slot.link.counters())
                .unwrap_or_default()
        };
        let queue_delay = |link: LinkId| {
            self.links
                .get(link.0)
                .map(|slot| slot.link.queue_delays().summary())
                .unwrap_or_default()
        };
        RunReport {
            seed: self.seed,
            params: self.params.clone(),
            flows,
            links: LinkReport {
                forward: counters(BOTTLENECK_FORWARD),
                reverse: counters(BOTTLENECK_REVERSE),
                forward_queue_delay: queue_delay(BOTTLENECK_FORWARD),
                reverse_queue_delay: queue_delay(BOTTLENECK_REVERSE),
            },
            cbr,
            stop_reason: self.stop,
            end_s: self.clock.elapsed().as_secs_f64(),
            events: self.events_processed,
        }
    }

    /// Why the run stopped, once it has.
    pub fn stop_reason(&self) -> Option<StopReason> {
        self.stop
    }

    /// The current virtual instant.
    pub fn now(&self) -> Instant {
        self.clock.now()
    }

    /// The virtual clock (for turning instants into offsets).
    pub fn clock(&self) -> &VirtualClock {
        &self.clock
    }

    /// The ground truth of every datagram (id → flow, direction, size, send
    /// time, fate, arrival).
    pub fn ground_truth(&self) -> &GroundTruth {
        &self.truth
    }

    /// Hosts, links and routes.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// A link, by id (`BOTTLENECK_FORWARD`, `BOTTLENECK_REVERSE`, access links).
    pub fn link(&self, id: LinkId) -> Option<&Link> {
        self.links.get(id.0).map(|slot| &slot.link)
    }

    /// Mutable access to a link, e.g. to install a hook before the run.
    pub fn link_mut(&mut self, id: LinkId) -> Option<&mut Link> {
        self.links.get_mut(id.0).map(|slot| &mut slot.link)
    }

    /// Sift flow `flow`'s client connection, once started.
    pub fn client(&self, flow: usize) -> Option<&T> {
        self.flows.get(flow)?.client.conn.as_ref()
    }

    /// Sift flow `flow`'s server connection, once started.
    pub fn server(&self, flow: usize) -> Option<&T> {
        self.flows.get(flow)?.server.conn.as_ref()
    }

    /// Mutable access to a client connection (e.g. to attach an observer).
    pub fn client_mut(&mut self, flow: usize) -> Option<&mut T> {
        self.flows.get_mut(flow)?.client.conn.as_mut()
    }

    /// Mutable access to a server connection.
    pub fn server_mut(&mut self, flow: usize) -> Option<&mut T> {
        self.flows.get_mut(flow)?.server.conn.as_mut()
    }

    /// When sift flow `flow` completed, as an offset from its start.
    pub fn completion(&self, flow: usize) -> Option<Duration> {
        let flow = self.flows.get(flow)?;
        Some(
            flow.completed_at?
                .saturating_duration_since(flow.started_at?),
        )
    }
}
