//! The qlog writer: a connection's events as JSON-SEQ through quiche's
//! `qlog` crate (its main schema and QUIC event definitions, `quic:*`),
//! plus sift's own events in the `sift:` namespace, which the schema allows
//! for extensions: CORRUPTED sent and received, payloads that arrived
//! damaged, the controller's loss verdicts with the numbers behind them,
//! spurious losses undone, corruption notices applied, checksum-free
//! datagrams on and off, header repair, and the simulator's ground truth.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use qlog::events::quic::{
    AckRange, CongestionStateUpdated, ConnectionClosed, ErrorSpace, KeyType, KeyUpdated,
    MtuUpdated, PacketHeader, PacketLost, PacketLostTrigger, PacketReceived, PacketSent,
    PacketType, ParametersSet, QuicFrame, RecoveryMetricsUpdated, StreamType, TransportInitiator,
};
use qlog::events::{EventData, EventImportance, JsonEvent, RawInfo};
use qlog::streamer::{EventTimePrecision, QlogStreamer};
use qlog::{CommonFields, ReferenceTime, TraceSeq, VantagePoint, VantagePointType};
use serde_json::{json, Value};
use sift_cc::{LossVerdict, Phase};

use super::{Event, Observer, RecoveryMetrics};
use crate::recovery::{LossTrigger, RecoveryNote, SpaceId};
use crate::wire::{frame_type, parse_frames, Frame, TransportParams};
use crate::{CloseReason, Side};

/// The file extension of a JSON-SEQ qlog (the `qlog` crate's reader picks
/// its decoder by it).
pub const QLOG_EXTENSION: &str = "sqlog";

/// The namespace of sift's own events.
pub const SIFT_EVENT_PREFIX: &str = "sift:";

/// Writes one connection's qlog. Write errors are logged once and end the
/// trace; the connection goes on.
pub struct QlogWriter {
    streamer: QlogStreamer,
    /// The streamer's writer, to flush when the connection closes: a
    /// server's connection may be dropped long after, or never if the
    /// process is killed.
    output: SharedWriter,
    side: Side,
    /// The last metrics written, so that an update carries only changes.
    last_metrics: Option<RecoveryMetrics>,
    failed: bool,
    /// The connection closed: every later event (a draining connection's
    /// packets) is flushed as it is written, since the process may exit
    /// before the trace is dropped and a buffered record would be left
    /// half written.
    closed: bool,
}

impl std::fmt::Debug for QlogWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QlogWriter")
            .field("side", &self.side)
            .field("failed", &self.failed)
            .finish_non_exhaustive()
    }
}

impl QlogWriter {
    /// A trace of a connection of `side` starting at `start` (time zero),
    /// written to `writer`. Writes the JSON-SEQ header at once.
    pub fn new(
        writer: Box<dyn Write + Send + Sync>,
        side: Side,
        start: Instant,
    ) -> io::Result<Self> {
        let vantage = VantagePoint {
            name: Some(format!("sift {}", env!("CARGO_PKG_VERSION"))),
            ty: match side {
                Side::Client => VantagePointType::Client,
                Side::Server => VantagePointType::Server,
            },
            flow: None,
        };
        let common = CommonFields {
            reference_time: ReferenceTime::new_monotonic(None),
            ..CommonFields::default()
        };
        let trace = TraceSeq::new(
            Some("sift connection".to_string()),
            None,
            Some(common),
            Some(vantage),
            vec![],
        );
        let output = SharedWriter(Arc::new(Mutex::new(writer)));
        let mut streamer = QlogStreamer::new(
            Some("sift".to_string()),
            None,
            start,
            trace,
            EventImportance::Extra,
            EventTimePrecision::MicroSeconds,
            Box::new(output.clone()),
        );
        streamer.start_log().map_err(to_io)?;
        Ok(Self {
            streamer,
            output,
            side,
            last_metrics: None,
            failed: false,
            closed: false,
        })
    }

    /// A trace written to a new file at `path`.
    pub fn create(path: &Path, side: Side, start: Instant) -> io::Result<Self> {
        let file = File::create(path)?;
        Self::new(Box::new(BufWriter::new(file)), side, start)
    }

    fn quic(&mut self, now: Instant, data: EventData) {
        if self.failed {
            return;
        }
        let result = self.streamer.add_event_data_with_instant(data, now);
        self.check(result);
    }

    fn sift(&mut self, now: Instant, name: &str, data: Value) {
        if self.failed {
            return;
        }
        let event = JsonEvent {
            time: 0.0,
            importance: EventImportance::Core,
            name: format!("{SIFT_EVENT_PREFIX}{name}"),
            data,
        };
        let result = self.streamer.add_event_with_instant(event, now);
        self.check(result);
    }

    fn check(&mut self, result: qlog::Result<()>) {
        if let Err(error) = result {
            tracing::warn!(%error, "qlog trace stopped: cannot write it");
            self.failed = true;
        }
    }

    fn packet(&mut self, now: Instant, event: &Event<'_>) {
        let (space, zero_rtt, packet_number, size, frames, sent) = match *event {
            Event::PacketSent {
                space,
                zero_rtt,
                packet_number,
                size,
                frames,
            } => (space, zero_rtt, packet_number, size, frames, true),
            Event::PacketReceived {
                space,
                zero_rtt,
                packet_number,
                size,
                frames,
            } => (space, zero_rtt, packet_number, size, frames, false),
            _ => return,
        };
        let mut qlog_frames = Vec::new();
        let mut notices = Vec::new();
        for frame in parse_frames(frames) {
            // Our own frames always decode; a peer's that did not were
            // refused before this event.
            let Ok(frame) = frame else { break };
            if let Frame::Corrupted(ranges) = &frame {
                notices.extend(ranges.iter().map(|r| json!([r.start(), r.end()])));
            }
            qlog_frames.push(qlog_frame(&frame));
        }
        let mut header = header(space, packet_number, size);
        if zero_rtt {
            header.packet_type = PacketType::ZeroRtt;
        }
        // The whole packet's size is `raw.length` (what qvis's congestion
        // graph counts bytes by).
        let raw = Some(RawInfo {
            length: Some(size),
            payload_length: None,
            data: None,
        });
        let data = if sent {
            EventData::QuicPacketSent(PacketSent {
                header,
                raw,
                frames: Some(qlog_frames),
                ..PacketSent::default()
            })
        } else {
            EventData::QuicPacketReceived(PacketReceived {
                header,
                raw,
                frames: Some(qlog_frames),
                ..PacketReceived::default()
            })
        };
        self.quic(now, data);
        if !notices.is_empty() {
            let name = if sent {
                "corrupted_sent"
            } else {
                "corrupted_received"
            };
            self.sift(
                now,
                name,
                json!({ "packet_number": packet_number, "ranges": notices }),
            );
        }
    }

    fn recovery(&mut self, note: &RecoveryNote) {
        match note {
            RecoveryNote::Lost {
                at,
                space,
                packet_number,
                size,
                trigger,
            } => {
                let mut ex = qlog::events::ExData::new();
                ex.insert("sift:trigger".into(), json!(trigger_name(*trigger)));
                let data = EventData::QuicPacketLost(PacketLost {
                    header: Some(header(*space, *packet_number, *size)),
                    trigger: qlog_trigger(*trigger),
                    ..PacketLost::default()
                });
                if !self.failed {
                    let result = self.streamer.add_event_data_ex_with_instant(data, ex, *at);
                    self.check(result);
                }
            }
            RecoveryNote::Verdict {
                at,
                space,
                packet_numbers,
                verdict,
                persistent,
                basis,
                cwnd,
                ssthresh,
            } => {
                let values: serde_json::Map<String, Value> = basis
                    .iter()
                    .flat_map(|b| b.values.iter())
                    .map(|(name, value)| ((*name).to_string(), json!(value)))
                    .collect();
                self.sift(
                    *at,
                    "loss_verdict",
                    json!({
                        "space": space_name(*space),
                        "packet_numbers": packet_numbers,
                        "verdict": verdict_name(*verdict),
                        "persistent": persistent,
                        "values": values,
                        "cwnd": cwnd,
                        "ssthresh": finite(*ssthresh),
                    }),
                );
            }
            RecoveryNote::Undone {
                at,
                space,
                packet_numbers,
                verdict,
                cwnd,
            } => self.sift(
                *at,
                "spurious_loss_undone",
                json!({
                    "space": space_name(*space),
                    "packet_numbers": packet_numbers,
                    "verdict": verdict_name(*verdict),
                    "cwnd": cwnd,
                }),
            ),
            RecoveryNote::Corrupted {
                at,
                space,
                packet_numbers,
            } => self.sift(
                *at,
                "corruption_applied",
                json!({ "space": space_name(*space), "packet_numbers": packet_numbers }),
            ),
        }
    }

    fn metrics(&mut self, now: Instant, m: &RecoveryMetrics) {
        let last = self.last_metrics.replace(*m);
        let changed = |f: fn(&RecoveryMetrics) -> u64| match last {
            Some(last) if f(&last) == f(m) => None,
            _ => Some(f(m)),
        };
        let changed_ms = |f: fn(&RecoveryMetrics) -> Duration| match last {
            Some(last) if f(&last) == f(m) => None,
            _ => Some(millis(f(m))),
        };
        let update = RecoveryMetricsUpdated {
            min_rtt: changed_ms(|m| m.min_rtt),
            smoothed_rtt: changed_ms(|m| m.smoothed_rtt),
            latest_rtt: changed_ms(|m| m.latest_rtt),
            rtt_variance: changed_ms(|m| m.rtt_variance),
            pto_count: changed(|m| u64::from(m.pto_count)).map(|c| c.min(u16::MAX as u64) as u16),
            congestion_window: changed(|m| m.cwnd),
            bytes_in_flight: changed(|m| m.bytes_in_flight),
            ssthresh: changed(|m| m.ssthresh).and_then(finite),
            pacing_rate: changed(|m| m.pacing_rate).map(|bytes| bytes.saturating_mul(8)),
            ex_data: ecn_metrics(last.as_ref(), m),
            ..RecoveryMetricsUpdated::default()
        };
        if update == RecoveryMetricsUpdated::default() {
            return;
        }
        self.quic(now, EventData::QuicMetricsUpdated(update));
    }
}

impl Observer for QlogWriter {
    fn event(&mut self, now: Instant, event: &Event<'_>) {
        match event {
            Event::PacketSent { .. } | Event::PacketReceived { .. } => self.packet(now, event),
            Event::ParametersSet { local, params } => {
                let data = parameters(*local, params);
                self.quic(now, EventData::QuicParametersSet(Box::new(data)));
                self.sift(
                    now,
                    "parameters_set",
                    json!({
                        "owner": if *local { "local" } else { "remote" },
                        "corruption_notices": params.corruption_notices,
                    }),
                );
            }
            Event::RetryReceived {
                size,
                scid,
                token_len,
            } => {
                let token = qlog::Token {
                    ty: Some(qlog::TokenType::Retry),
                    details: None,
                    raw: Some(RawInfo {
                        length: Some(*token_len),
                        payload_length: None,
                        data: None,
                    }),
                };
                let header = PacketHeader {
                    packet_type: PacketType::Retry,
                    token: Some(Box::new(token)),
                    scil: u8::try_from(scid.len()).ok(),
                    scid: Some(hex(scid.as_slice())),
                    ..PacketHeader::default()
                };
                self.quic(
                    now,
                    EventData::QuicPacketReceived(PacketReceived {
                        header,
                        raw: Some(RawInfo {
                            length: Some(*size),
                            payload_length: None,
                            data: None,
                        }),
                        ..PacketReceived::default()
                    }),
                );
            }
            Event::PayloadCorrupt {
                space,
                packet_number,
                size,
            } => self.sift(
                now,
                "payload_corrupt_received",
                json!({
                    "space": space_name(*space),
                    "packet_number": packet_number,
                    "length": size,
                }),
            ),
            Event::Recovery(note) => self.recovery(note),
            Event::MetricsUpdated(metrics) => self.metrics(now, metrics),
            Event::CongestionStateUpdated { old, new } => self.quic(
                now,
                EventData::QuicCongestionStateUpdated(CongestionStateUpdated {
                    old: old.map(|p| phase_name(p).to_string()),
                    new: phase_name(*new).to_string(),
                    trigger: None,
                }),
            ),
            Event::CarefulResumePhaseUpdated { change, status } => self.sift(
                now,
                "careful_resume_phase_updated",
                json!({
                    "old": change.old,
                    "new": change.new,
                    "trigger": change.trigger,
                    "state_data": {
                        "pipesize": change.pipesize,
                        "congestion_window": change.cwnd,
                        "jump_cwnd": status.jump_cwnd,
                    },
                    "restored_data": {
                        "saved_congestion_window": status.saved_cwnd,
                        "saved_rtt": status.saved_rtt_us as f64 / 1000.0,
                    },
                }),
            ),
            Event::KeyUpdated { generation } => {
                for key_type in [KeyType::Client1RttSecret, KeyType::Server1RttSecret] {
                    self.quic(
                        now,
                        EventData::QuicKeyUpdated(KeyUpdated {
                            key_type,
                            old: None,
                            new: None,
                            key_phase: Some(*generation),
                            trigger: None,
                        }),
                    );
                }
            }
            Event::MtuUpdated { old, new, done } => self.quic(
                now,
                EventData::QuicMtuUpdated(MtuUpdated {
                    old: u32::try_from(*old).ok(),
                    new: u32::try_from(*new).unwrap_or(u32::MAX),
                    done: Some(*done),
                }),
            ),
            Event::EcnStateUpdated { old, new, failure } => {
                self.quic(
                    now,
                    EventData::QuicEcnStateUpdated(qlog::events::quic::EcnStateUpdated {
                        old: qlog_ecn_state(*old),
                        new: qlog_ecn_state(*new).unwrap_or_default(),
                    }),
                );
                if let Some(failure) = failure {
                    self.sift(now, "ecn_validation_failed", json!({ "reason": failure }));
                }
            }
            Event::ChecksumFreeChanged { checksum_free } => self.sift(
                now,
                "checksum_free_datagrams",
                json!({ "on": checksum_free }),
            ),
            Event::HeaderRepaired {
                packet_number,
                size,
                total,
            } => self.sift(
                now,
                "header_repaired",
                json!({
                    "space": space_name(SpaceId::Data),
                    "packet_number": packet_number,
                    "length": size,
                    "total": total,
                }),
            ),
            Event::PacketRebuilt {
                packet_number,
                size,
                total,
            } => self.sift(
                now,
                "packet_rebuilt",
                json!({
                    "space": space_name(SpaceId::Data),
                    "packet_number": packet_number,
                    "payload_length": size,
                    "total": total,
                }),
            ),
            Event::AddressValidated => self.sift(now, "address_validated", json!({})),
            Event::Closed(reason) => {
                let closed = connection_closed(reason);
                self.quic(now, EventData::QuicConnectionClosed(closed));
                self.closed = true;
            }
            Event::Annotation { name, data } => self.sift(now, name, (*data).clone()),
        }
        if self.closed && !self.failed {
            if let Err(error) = self.output.flush() {
                tracing::warn!(%error, "qlog trace stopped: cannot write it");
                self.failed = true;
            }
        }
    }
}

/// The trace's output, shared by the streamer and the writer's close.
#[derive(Clone)]
struct SharedWriter(Arc<Mutex<Box<dyn Write + Send + Sync>>>);

impl SharedWriter {
    fn with<T>(&self, f: impl FnOnce(&mut dyn Write) -> io::Result<T>) -> io::Result<T> {
        let mut writer = self
            .0
            .lock()
            .map_err(|_| io::Error::other("qlog writer poisoned"))?;
        f(writer.as_mut())
    }
}

impl Write for SharedWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.with(|w| w.write(buf))
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.with(|w| w.write_all(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.with(|w| w.flush())
    }
}

fn to_io(error: qlog::Error) -> io::Error {
    match error {
        qlog::Error::IoError(error) => error,
        other => io::Error::other(other.to_string()),
    }
}

fn millis(d: Duration) -> f32 {
    d.as_secs_f32() * 1000.0
}

/// `u64::MAX` (ssthresh before the first loss) is "none yet".
fn finite(bytes: u64) -> Option<u64> {
    (bytes != u64::MAX).then_some(bytes)
}

fn header(space: SpaceId, packet_number: u64, size: u64) -> PacketHeader {
    PacketHeader {
        packet_type: match space {
            SpaceId::Initial => PacketType::Initial,
            SpaceId::Handshake => PacketType::Handshake,
            SpaceId::Data => PacketType::OneRtt,
        },
        packet_number: Some(packet_number),
        length: Some(size.min(u64::from(u16::MAX)) as u16),
        ..PacketHeader::default()
    }
}

fn qlog_trigger(trigger: LossTrigger) -> Option<PacketLostTrigger> {
    match trigger {
        LossTrigger::PacketThreshold => Some(PacketLostTrigger::ReorderingThreshold),
        LossTrigger::TimeThreshold => Some(PacketLostTrigger::TimeThreshold),
        LossTrigger::Timeout => Some(PacketLostTrigger::PtoExpired),
        LossTrigger::EarlyRetransmit | LossTrigger::CorruptionOverBudget => None,
    }
}

/// sift's name for a loss trigger (`sift:trigger` on `quic:packet_lost`).
pub(crate) fn trigger_name(trigger: LossTrigger) -> &'static str {
    match trigger {
        LossTrigger::PacketThreshold => "packet_threshold",
        LossTrigger::TimeThreshold => "time_threshold",
        LossTrigger::Timeout => "timeout",
        LossTrigger::EarlyRetransmit => "early_retransmit",
        LossTrigger::CorruptionOverBudget => "corruption_over_budget",
    }
}

fn verdict_name(verdict: LossVerdict) -> &'static str {
    match verdict {
        LossVerdict::Random => "random",
        LossVerdict::Congestive => "congestive",
    }
}

fn space_name(space: SpaceId) -> &'static str {
    match space {
        SpaceId::Initial => "initial",
        SpaceId::Handshake => "handshake",
        SpaceId::Data => "application_data",
    }
}

fn phase_name(phase: Phase) -> &'static str {
    match phase {
        Phase::SlowStart => "slow_start",
        Phase::CongestionAvoidance => "congestion_avoidance",
        Phase::Recovery => "recovery",
    }
}

fn raw_length(len: usize) -> Option<Box<RawInfo>> {
    Some(Box::new(RawInfo {
        length: None,
        payload_length: Some(len as u64),
        data: None,
    }))
}

fn stream_type(bidi: bool) -> StreamType {
    if bidi {
        StreamType::Bidirectional
    } else {
        StreamType::Unidirectional
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn qlog_frame(frame: &Frame<'_>) -> QuicFrame {
    match *frame {
        Frame::Padding { len } => QuicFrame::Padding {
            raw: raw_length(len),
        },
        Frame::Ping => QuicFrame::Ping { raw: None },
        Frame::Ack(ack) => QuicFrame::Ack {
            ack_delay: Some(ack.ack_delay_micros as f32 / 1000.0),
            acked_ranges: Some(
                ack.ranges
                    .iter()
                    .map(|r| AckRange::new(*r.start(), *r.end()))
                    .collect(),
            ),
            ect1: None,
            ect0: None,
            ce: None,
            raw: None,
        },
        Frame::Corrupted(_) => QuicFrame::Unknown {
            frame_type_bytes: Some(frame_type::CORRUPTED),
            raw: None,
        },
        Frame::Repair { symbol, .. } => QuicFrame::Unknown {
            frame_type_bytes: Some(frame_type::REPAIR),
            raw: raw_length(symbol.len()),
        },
        Frame::Repaired(_) => QuicFrame::Unknown {
            frame_type_bytes: Some(frame_type::REPAIRED),
            raw: None,
        },
        Frame::Crypto { offset, data } => QuicFrame::Crypto {
            offset,
            raw: raw_length(data.len()),
        },
        Frame::Stream {
            id,
            offset,
            data,
            fin,
        } => QuicFrame::Stream {
            stream_id: id,
            offset: Some(offset),
            fin: Some(fin),
            raw: raw_length(data.len()),
        },
        Frame::ResetStream {
            id,
            error_code,
            final_size,
        } => QuicFrame::ResetStream {
            stream_id: id,
            error: qlog::events::ApplicationError::Unknown,
            error_code: Some(error_code),
            final_size,
            raw: None,
        },
        Frame::StopSending { id, error_code } => QuicFrame::StopSending {
            stream_id: id,
            error: qlog::events::ApplicationError::Unknown,
            error_code: Some(error_code),
            raw: None,
        },
        Frame::MaxData(maximum) => QuicFrame::MaxData { maximum, raw: None },
        Frame::MaxStreamData { id, max } => QuicFrame::MaxStreamData {
            stream_id: id,
            maximum: max,
            raw: None,
        },
        Frame::MaxStreams { bidi, max } => QuicFrame::MaxStreams {
            stream_type: stream_type(bidi),
            maximum: max,
            raw: None,
        },
        Frame::DataBlocked(limit) => QuicFrame::DataBlocked { limit, raw: None },
        Frame::StreamDataBlocked { id, limit } => QuicFrame::StreamDataBlocked {
            stream_id: id,
            limit,
            raw: None,
        },
        Frame::StreamsBlocked { bidi, limit } => QuicFrame::StreamsBlocked {
            stream_type: stream_type(bidi),
            limit,
            raw: None,
        },
        Frame::NewToken { token } => QuicFrame::NewToken {
            token: qlog::Token {
                ty: Some(qlog::TokenType::Resumption),
                details: None,
                raw: Some(RawInfo {
                    length: Some(token.len() as u64),
                    payload_length: None,
                    data: None,
                }),
            },
            raw: None,
        },
        Frame::HandshakeDone => QuicFrame::HandshakeDone { raw: None },
        Frame::AckFrequency { .. } => QuicFrame::Unknown {
            frame_type_bytes: Some(frame_type::ACK_FREQUENCY),
            raw: None,
        },
        Frame::ImmediateAck => QuicFrame::Unknown {
            frame_type_bytes: Some(frame_type::IMMEDIATE_ACK),
            raw: None,
        },
        Frame::NewConnectionId {
            sequence,
            retire_prior_to,
            cid,
            reset_token: _,
        } => QuicFrame::NewConnectionId {
            sequence_number: sequence,
            retire_prior_to,
            connection_id_length: Some(cid.as_slice().len() as u8),
            connection_id: hex(cid.as_slice()),
            // Never written: whoever reads the trace could end the
            // connection with it (RFC 9000 §10.3).
            stateless_reset_token: None,
            raw: None,
        },
        Frame::RetireConnectionId { sequence } => QuicFrame::RetireConnectionId {
            sequence_number: sequence,
            raw: None,
        },
        Frame::PathChallenge { data } => QuicFrame::PathChallenge {
            data: Some(hex(&data)),
            raw: None,
        },
        Frame::PathResponse { data } => QuicFrame::PathResponse {
            data: Some(hex(&data)),
            raw: None,
        },
        Frame::Datagram { data } => QuicFrame::Datagram {
            raw: raw_length(data.len()),
        },
        Frame::ConnectionClose {
            application,
            error_code,
            frame_type,
            reason,
        } => QuicFrame::ConnectionClose {
            error_space: Some(if application {
                ErrorSpace::Application
            } else {
                ErrorSpace::Transport
            }),
            error: None,
            error_code: Some(error_code),
            reason: Some(String::from_utf8_lossy(reason).into_owned()),
            reason_bytes: None,
            trigger_frame_type: (!application).then_some(frame_type),
        },
    }
}

fn parameters(local: bool, params: &TransportParams) -> ParametersSet {
    let cid = |c: Option<crate::wire::ConnectionId>| c.map(|c| hex(c.as_slice()));
    ParametersSet {
        initiator: Some(if local {
            TransportInitiator::Local
        } else {
            TransportInitiator::Remote
        }),
        original_destination_connection_id: cid(params.original_destination_connection_id),
        initial_source_connection_id: cid(params.initial_source_connection_id),
        retry_source_connection_id: cid(params.retry_source_connection_id),
        max_idle_timeout: Some(params.max_idle_timeout_ms),
        max_udp_payload_size: Some(params.max_udp_payload_size),
        max_ack_delay: Some(params.max_ack_delay_ms),
        active_connection_id_limit: Some(params.active_connection_id_limit),
        initial_max_data: Some(params.initial_max_data),
        initial_max_stream_data_bidi_local: Some(params.initial_max_stream_data_bidi_local),
        initial_max_stream_data_bidi_remote: Some(params.initial_max_stream_data_bidi_remote),
        initial_max_stream_data_uni: Some(params.initial_max_stream_data_uni),
        initial_max_streams_bidi: Some(params.initial_max_streams_bidi),
        initial_max_streams_uni: Some(params.initial_max_streams_uni),
        max_datagram_frame_size: params.max_datagram_frame_size,
        ..ParametersSet::default()
    }
}

fn connection_closed(reason: &CloseReason) -> ConnectionClosed {
    let (initiator, error_code, text, trigger) = match reason {
        CloseReason::Local {
            application,
            code,
            reason,
        } => (
            TransportInitiator::Local,
            Some(*code),
            Some(reason.clone()),
            if *application {
                qlog::events::quic::ConnectionClosedTrigger::Application
            } else {
                qlog::events::quic::ConnectionClosedTrigger::Error
            },
        ),
        CloseReason::Peer {
            application,
            code,
            reason,
        } => (
            TransportInitiator::Remote,
            Some(*code),
            Some(reason.clone()),
            if *application {
                qlog::events::quic::ConnectionClosedTrigger::Application
            } else {
                qlog::events::quic::ConnectionClosedTrigger::Error
            },
        ),
        CloseReason::IdleTimeout => (
            TransportInitiator::Local,
            None,
            None,
            qlog::events::quic::ConnectionClosedTrigger::IdleTimeout,
        ),
        CloseReason::StatelessReset => (
            TransportInitiator::Remote,
            None,
            None,
            qlog::events::quic::ConnectionClosedTrigger::StatelessReset,
        ),
        CloseReason::VersionMismatch { .. } => (
            TransportInitiator::Remote,
            None,
            None,
            qlog::events::quic::ConnectionClosedTrigger::VersionMismatch,
        ),
        #[allow(unreachable_patterns)]
        other => (
            TransportInitiator::Local,
            None,
            Some(other.to_string()),
            qlog::events::quic::ConnectionClosedTrigger::Error,
        ),
    };
    ConnectionClosed {
        initiator: Some(initiator),
        connection_error: None,
        application_error: None,
        error_code,
        internal_code: None,
        reason: text,
        trigger: Some(trigger),
    }
}

/// qlog's name for an ECN validation state (`Off` has none: it never
/// changes).
fn qlog_ecn_state(state: crate::conn::ecn::EcnState) -> Option<qlog::events::quic::EcnState> {
    use crate::conn::ecn::EcnState;
    use qlog::events::quic::EcnState as Qlog;
    match state {
        EcnState::Testing => Some(Qlog::Testing),
        EcnState::Unknown => Some(Qlog::Unknown),
        EcnState::Failed => Some(Qlog::Failed),
        EcnState::Capable => Some(Qlog::Capable),
        EcnState::Off => None,
    }
}

/// The ECN counts of a metrics update, where they changed: extension
/// fields `ecn_received` (what arrived, by codepoint) and `ecn_reported`
/// (the peer's counts of ours), each `{ "ect0", "ect1", "ce" }`.
fn ecn_metrics(last: Option<&RecoveryMetrics>, m: &RecoveryMetrics) -> qlog::events::ExData {
    let mut data = qlog::events::ExData::new();
    let counts = |[ect0, ect1, ce]: [u64; 3]| json!({ "ect0": ect0, "ect1": ect1, "ce": ce });
    if last.is_none_or(|l| l.ecn_received != m.ecn_received) && m.ecn_received != [0; 3] {
        data.insert("ecn_received".into(), counts(m.ecn_received));
    }
    if last.is_none_or(|l| l.ecn_reported != m.ecn_reported) && m.ecn_reported != [0; 3] {
        data.insert("ecn_reported".into(), counts(m.ecn_reported));
    }
    data
}
