//! The connection's side of tracing (`crate::trace`): the observer it
//! holds, and what it reports after each `recv`, `send` and `on_timeout`
//! that no single call site sees — recovery's decisions, moved estimates,
//! a new controller phase, key updates, the close.
//! Untraced, every hook is one `None` check.

use std::time::Instant;

use sift_cc::Phase;

use super::Connection;
use crate::trace::{Event, Observer, RecoveryMetrics, TraceStart};
use crate::wire::TransportParams;

/// An observer and what it has been told, so that changes are reported once.
#[derive(Debug)]
pub(super) struct Tracing {
    pub(super) observer: Box<dyn Observer>,
    phase: Option<Phase>,
    key_updates: u64,
    checksum_free: Option<bool>,
    address_validated: bool,
    closed: bool,
}

impl Connection {
    /// Reports every event of this connection to `observer` from now on
    /// (replacing any observer set before), starting with our transport
    /// parameters.
    pub fn set_observer(&mut self, observer: Box<dyn Observer>) {
        self.recovery.keep_notes(true);
        let mut tracing = Box::new(Tracing {
            observer,
            phase: None,
            key_updates: self.key_phases.updates,
            checksum_free: None,
            address_validated: false,
            closed: false,
        });
        let params = self.handshake.local_params_mut().clone();
        tracing.observer.event(
            self.now,
            &Event::ParametersSet {
                local: true,
                params: &params,
            },
        );
        self.trace = Some(tracing);
    }

    /// Stops tracing and hands the observer back.
    pub fn take_observer(&mut self) -> Option<Box<dyn Observer>> {
        self.recovery.keep_notes(false);
        self.trace.take().map(|tracing| tracing.observer)
    }

    /// Whether an observer is set.
    pub fn is_traced(&self) -> bool {
        self.trace.is_some()
    }

    /// Adds an event from outside the connection to its trace, named
    /// `name` in sift's namespace (the simulator's ground truth). Nothing
    /// happens when the connection is not traced.
    pub fn annotate(&mut self, now: Instant, name: &'static str, data: &serde_json::Value) {
        if let Some(tracing) = self.trace.as_mut() {
            tracing
                .observer
                .event(now, &Event::Annotation { name, data });
        }
    }

    /// The observer `Config::trace` makes for this connection, if any.
    pub(super) fn start_trace(&mut self) {
        let Some(sink) = self.config.trace.clone() else {
            return;
        };
        let start = TraceStart {
            side: self.side,
            local_cid: self.local_cid,
            now: self.now,
        };
        if let Some(observer) = sink.observer_for(&start) {
            self.set_observer(observer);
        }
    }

    pub(super) fn trace_event(&mut self, event: &Event<'_>) {
        if let Some(tracing) = self.trace.as_mut() {
            tracing.observer.event(self.now, event);
        }
    }

    pub(super) fn trace_peer_params(&mut self, params: &TransportParams) {
        self.trace_event(&Event::ParametersSet {
            local: false,
            params,
        });
    }

    pub(super) fn trace_checksum_free(&mut self, checksum_free: bool) {
        let Some(tracing) = self.trace.as_mut() else {
            return;
        };
        if tracing.checksum_free != Some(checksum_free) {
            tracing.checksum_free = Some(checksum_free);
            tracing
                .observer
                .event(self.now, &Event::ChecksumFreeChanged { checksum_free });
        }
    }

    /// ECN validation changed state (`conn::ecn`).
    pub(super) fn trace_ecn_state(&mut self, transition: super::ecn::EcnTransition) {
        self.trace_event(&Event::EcnStateUpdated {
            old: transition.from,
            new: transition.to,
            failure: transition.failure,
        });
    }

    /// Reports what changed since the last call: the peer's address
    /// validated, recovery's decisions, the estimates, the controller's
    /// phase, key updates and the close.
    pub(super) fn trace_flush(&mut self) {
        if self.trace.is_none() {
            return;
        }
        let ecn_received = self.ecn_received().to_array();
        let Some(tracing) = self.trace.as_mut() else {
            return;
        };
        let now = self.now;
        if self.address_validated && !tracing.address_validated {
            tracing.address_validated = true;
            tracing.observer.event(now, &Event::AddressValidated);
        }
        for note in self.recovery.drain_notes() {
            tracing.observer.event(now, &Event::Recovery(&note));
        }
        let rtt = self.recovery.rtt();
        let metrics = RecoveryMetrics {
            cwnd: self.recovery.window(),
            ssthresh: self.recovery.ssthresh(),
            bytes_in_flight: self.recovery.bytes_in_flight(),
            smoothed_rtt: rtt.smoothed(),
            latest_rtt: rtt.latest(),
            min_rtt: rtt.min(),
            rtt_variance: rtt.variance(),
            pto_count: self.recovery.pto_count(),
            pacing_rate: self.recovery.current_pacing_rate(),
            ecn_received,
            ecn_reported: self.ecn.reported().to_array(),
        };
        tracing
            .observer
            .event(now, &Event::MetricsUpdated(&metrics));
        let phase = self.recovery.cc_metrics().phase;
        if tracing.phase != Some(phase) {
            let old = tracing.phase.replace(phase);
            tracing
                .observer
                .event(now, &Event::CongestionStateUpdated { old, new: phase });
        }
        let changes = self.recovery.drain_careful_resume_changes();
        if let Some(status) = self.recovery.careful_resume() {
            for change in &changes {
                tracing.observer.event(
                    now,
                    &Event::CarefulResumePhaseUpdated {
                        change,
                        status: &status,
                    },
                );
            }
        }
        if self.key_phases.updates != tracing.key_updates {
            tracing.key_updates = self.key_phases.updates;
            tracing.observer.event(
                now,
                &Event::KeyUpdated {
                    generation: self.key_phases.updates,
                },
            );
        }
        if let (Some(reason), false) = (self.close_reason.as_ref(), tracing.closed) {
            tracing.closed = true;
            tracing.observer.event(now, &Event::Closed(reason));
        }
    }
}
