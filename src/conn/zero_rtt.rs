//! 0-RTT (RFC 9001 §4.6, RFC 9000 §7.4.1): the client's early data on a
//! resumed connection, and the server's acceptance of it.
//!
//! - The client sends 0-RTT packets (long header type 0x1, in v1 and
//!   sift/1 alike) in the application data packet-number space, under the
//!   keys rustls derives from the ticket, until its 1-RTT keys arrive. Only
//!   streams the application marked replay-safe send in 0-RTT
//!   ([`Connection::mark_replay_safe`]): a GET or a listing may be
//!   replayed harmlessly, an upload may not and waits for 1-RTT.
//! - A driver may hold the client's first flight until the application
//!   writes its request ([`Connection::hold_first_flight`]), so the request
//!   goes with the ClientHello however short the path.
//! - Until the server's parameters arrive, the client sends within the
//!   limits remembered with the ticket (RFC 9000 §7.4.1). A server that
//!   accepted 0-RTT and then announces smaller limits breaks the rule:
//!   PROTOCOL_VIOLATION.
//! - A Retry (RFC 9000 §17.2.5.3): the server kept nothing of the first
//!   flight, so the client sends its 0-RTT data again at once, under the
//!   same keys, to the connection ID the Retry gave (`Connection::on_retry`).
//! - A server that rejects 0-RTT never reads those packets, and what the
//!   client assumed with them (protocol, limits) may no longer hold, so
//!   the client resets every stream (RFC 9001 §4.6.2), as quinn does: it
//!   learns of the rejection when its handshake completes, drops the 0-RTT
//!   packets from recovery without a congestion signal (nothing was
//!   congested) and resends none of their stream data; every stream is
//!   forgotten and the stream IDs start again at 0 under the server's
//!   actual limits (`Streams::zero_rtt_rejected`). The application
//!   learns it from [`Connection::zero_rtt_rejected`]
//!   ([`Connection::early_data`]), and calls on a discarded stream fail
//!   with [`StreamError::ZeroRttRejected`](crate::stream::StreamError);
//!   it sends its requests again on new streams if the negotiated
//!   protocol is still the one it assumed.
//! - A server opens 0-RTT packets from the moment it accepted the client's
//!   early data until its handshake completes; 0-RTT packets may carry no
//!   ACK, CRYPTO, HANDSHAKE_DONE, NEW_TOKEN, PATH_RESPONSE or
//!   RETIRE_CONNECTION_ID (RFC 9000 §12.4), nor CORRUPTED.
//!
//! No clock reads: like the rest of `conn`.

use super::error::{codes, TransportFailure};
use super::{Connection, SentFrame};
use crate::crypto::PacketProtection;
use crate::recovery::SpaceId;
use crate::stream::{PeerLimits, StreamId};
use crate::wire::Frame;
use crate::Side;

/// What became of 0-RTT on a connection ([`Connection::early_data`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EarlyData {
    /// Client: no 0-RTT keys, nothing was offered. Server: none accepted.
    #[default]
    NotOffered,
    /// Client: 0-RTT offered, the server's answer is not known yet (the
    /// handshake has not completed). A stream opened now is discarded if
    /// the server rejects it.
    Offered,
    /// The server read the early data: streams opened in 0-RTT go on.
    Accepted,
    /// Client: the server refused the early data. Every stream opened
    /// before the handshake completed was discarded, unread by the server
    /// (RFC 9001 §4.6.2).
    Rejected,
}

/// The connection's 0-RTT state.
#[derive(Debug, Default)]
pub(super) struct ZeroRtt {
    /// Client: seals 0-RTT packets. Server: opens them.
    pub keys: Option<Box<dyn PacketProtection>>,
    pub outcome: EarlyData,
    /// Client: the limits remembered with the ticket, used for 0-RTT.
    pub remembered: Option<PeerLimits>,
    /// Stream bytes sent (client) or received (server) in 0-RTT packets.
    pub stream_bytes: u64,
    /// 0-RTT packets sent (client) or opened (server).
    pub packets: u64,
    /// Client: the first flight waits for the application's first write
    /// ([`Connection::hold_first_flight`]).
    pub first_flight_held: bool,
}

/// RFC 9000 §12.4, Table 3: the frames a 0-RTT packet may not carry; and
/// CORRUPTED, sift's own, which names received 1-RTT packets as ACK does
/// (RFC 9001 §9.2: an extension is kept out of 0-RTT or says how a replay
/// affects it). REPAIR and REPAIRED likewise: coding starts on a path
/// seen after the handshake.
pub(super) fn frame_allowed_in_zero_rtt(frame: &Frame<'_>) -> bool {
    !matches!(
        frame,
        Frame::Ack(_)
            | Frame::Corrupted(_)
            | Frame::Repair { .. }
            | Frame::Repaired(_)
            | Frame::Crypto { .. }
            | Frame::HandshakeDone
            | Frame::NewToken { .. }
            | Frame::PathResponse { .. }
            | Frame::RetireConnectionId { .. }
    )
}

/// Whether `actual` reduces any limit of `remembered` (RFC 9000 §7.4.1).
fn reduces(remembered: &PeerLimits, actual: &PeerLimits) -> bool {
    actual.initial_max_data < remembered.initial_max_data
        || actual.initial_max_stream_data_bidi_local < remembered.initial_max_stream_data_bidi_local
        || actual.initial_max_stream_data_bidi_remote
            < remembered.initial_max_stream_data_bidi_remote
        || actual.initial_max_stream_data_uni < remembered.initial_max_stream_data_uni
        || actual.initial_max_streams_bidi < remembered.initial_max_streams_bidi
        || actual.initial_max_streams_uni < remembered.initial_max_streams_uni
}

impl Connection {
    /// Client, at creation: takes the 0-RTT keys and the remembered
    /// limits if the handshake resumes with a ticket that allows early
    /// data, and lets replay-safe streams send within those limits.
    pub(super) fn start_zero_rtt(&mut self) {
        if self.side != Side::Client || !self.config.tls.early_data {
            return;
        }
        let Some(keys) = self.handshake.zero_rtt_keys() else {
            return;
        };
        let Some(params) = self.handshake.remembered_params() else {
            return;
        };
        let limits = Self::peer_limits(&params);
        self.streams.set_peer_limits(&limits);
        self.streams.set_early_data_only(true);
        self.zero_rtt.remembered = Some(limits);
        self.zero_rtt.keys = Some(keys);
        self.zero_rtt.outcome = EarlyData::Offered;
        tracing::debug!(remote = %self.remote, "resuming with 0-RTT");
    }

    /// Client: 0-RTT packets go out now (keys, and no 1-RTT keys yet).
    /// Once the server's own transport parameters are read, none: they
    /// replace the remembered limits in `streams` at once, and RFC 9000
    /// §7.4.1 keeps 0-RTT data to the remembered ones. The 1-RTT keys
    /// come with the server's Finished, right behind.
    pub(super) fn sending_zero_rtt(&self) -> bool {
        self.side == Side::Client
            && self.zero_rtt.keys.is_some()
            && self.spaces[SpaceId::Data].keys.is_none()
            && self.handshake.peer_params().is_none()
    }

    /// The keys packets of `space` are sealed with now.
    pub(super) fn sealing_keys(&self, space: SpaceId) -> Option<&dyn PacketProtection> {
        if space == SpaceId::Data && self.sending_zero_rtt() {
            return self.zero_rtt.keys.as_deref();
        }
        if space == SpaceId::Data && self.one_rtt_keys_exhausted() {
            return None;
        }
        self.spaces[space].keys.as_deref()
    }

    /// Client, when its handshake completes: did the server take the
    /// early data? If so, the server's limits must not have shrunk; if
    /// not, every stream is reset ([`Connection::reject_zero_rtt`]).
    pub(super) fn settle_zero_rtt(&mut self) -> Result<(), TransportFailure> {
        self.zero_rtt.keys = None;
        self.streams.set_early_data_only(false);
        if self.side != Side::Client || self.zero_rtt.outcome != EarlyData::Offered {
            return Ok(());
        }
        if self.handshake.early_data_accepted() {
            self.zero_rtt.outcome = EarlyData::Accepted;
            let actual = self.handshake.peer_params().map(Self::peer_limits);
            if let (Some(remembered), Some(actual)) = (&self.zero_rtt.remembered, &actual) {
                if reduces(remembered, actual) {
                    return Err(TransportFailure::new(
                        codes::PROTOCOL_VIOLATION,
                        "the server accepted 0-RTT but reduced the limits remembered with its ticket",
                    ));
                }
            }
            return Ok(());
        }
        self.reject_zero_rtt();
        Ok(())
    }

    /// Client: the server rejected 0-RTT, so it read none of it, and what
    /// the client assumed (protocol, limits) may be wrong: every stream is
    /// reset, application state included (RFC 9001 §4.6.2; quinn-proto's
    /// `reject_0rtt`). The 0-RTT packets leave recovery without a loss or
    /// a congestion signal and their stream data is not sent again; the
    /// streams start as on a new connection, under the server's actual
    /// limits. What else the packets carried (connection IDs, ACK
    /// frequency) is queued again as after a loss.
    fn reject_zero_rtt(&mut self) {
        self.zero_rtt.outcome = EarlyData::Rejected;
        // Every Data packet outstanding now is a 0-RTT packet: 1-RTT keys
        // arrived with this very step.
        let unread = self.recovery.discard_space(SpaceId::Data);
        let actual = self.handshake.peer_params().map(Self::peer_limits);
        self.streams.zero_rtt_rejected(actual.as_ref());
        tracing::debug!(
            remote = %self.remote,
            packets = unread.len(),
            "the server rejected 0-RTT: every stream was reset"
        );
        let unread = unread
            .into_iter()
            .map(|mut packet| {
                // The streams they named are gone.
                packet
                    .frames
                    .retain(|frame| !matches!(frame, SentFrame::Stream(_) | SentFrame::Control(_)));
                packet
            })
            .collect();
        self.send_again(SpaceId::Data, unread);
    }

    /// What became of 0-RTT: on a client, whether it was offered and
    /// whether the server took it (known once the handshake completes);
    /// on a server, whether it accepted the client's.
    pub fn early_data(&self) -> EarlyData {
        self.zero_rtt.outcome
    }

    /// Client: the server rejected 0-RTT. Every stream opened before the
    /// handshake completed is gone (calls on it fail with
    /// [`StreamError::ZeroRttRejected`](crate::stream::StreamError)) and
    /// the server read none of it; the application opens new streams
    /// (from stream 0 again) and sends its requests again, if the
    /// negotiated protocol ([`Connection::alpn_protocol`]) is still the
    /// one it assumed (RFC 9001 §4.6.2).
    pub fn zero_rtt_rejected(&self) -> bool {
        self.zero_rtt.outcome == EarlyData::Rejected
    }

    /// Marks stream `id` replay-safe: until the handshake completes, its
    /// data may go out in 0-RTT packets, which an attacker can replay to
    /// the server (RFC 8446 §8). Mark only requests whose repetition does
    /// no harm (a download, a listing); other streams wait for 1-RTT.
    pub fn mark_replay_safe(&mut self, id: StreamId) {
        self.streams.mark_replay_safe(id);
    }

    /// Client, before anything was sent: keeps the first flight back until
    /// the application writes on a stream, closes, or calls
    /// [`Connection::release_first_flight`], so that a request written
    /// right after connecting leaves in 0-RTT beside the ClientHello. A
    /// driver that sends the moment a connection exists would otherwise
    /// race its application: on a short path the handshake completes
    /// before the request is written, and the round trip 0-RTT saves is
    /// lost. Does nothing unless 0-RTT is possible.
    pub fn hold_first_flight(&mut self) {
        if self.sending_zero_rtt() && self.counters.packets_sent == 0 {
            self.zero_rtt.first_flight_held = true;
        }
    }

    /// Lets a held first flight go ([`Connection::hold_first_flight`]);
    /// true if it was held. A driver's application calls it before it
    /// waits for anything from the peer.
    pub fn release_first_flight(&mut self) -> bool {
        std::mem::take(&mut self.zero_rtt.first_flight_held)
    }

    /// Whether the first flight is held back.
    pub(super) fn first_flight_held(&self) -> bool {
        self.zero_rtt.first_flight_held
    }

    /// Client: the connection sends 0-RTT now (it resumes with a ticket
    /// that allows early data, and the handshake has not completed):
    /// replay-safe streams may be written at once.
    pub fn early_data_possible(&self) -> bool {
        self.sending_zero_rtt()
    }

    /// The handshake resumed an earlier TLS session (a ticket).
    pub fn is_resumed(&self) -> bool {
        self.handshake.is_resumed()
    }

    /// Server: the client's 0-RTT data was accepted and the handshake has
    /// not completed yet, so what arrived so far may be a replay (RFC 8446
    /// §8). An application acts on a non-idempotent request only once
    /// this is false.
    pub fn in_early_data(&self) -> bool {
        self.side == Side::Server
            && self.zero_rtt.outcome == EarlyData::Accepted
            && !self.handshake.is_complete()
    }

    /// Server: the client's hello was read and its early data accepted.
    pub(super) fn accept_zero_rtt(&mut self, keys: Box<dyn PacketProtection>) {
        self.zero_rtt.keys = Some(keys);
        self.zero_rtt.outcome = EarlyData::Accepted;
    }
}
