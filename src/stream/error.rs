//! The two kinds of stream error: what the application did that cannot be
//! done now ([`StreamError`]), and what the peer did that breaks the protocol
//! and closes the connection ([`TransportError`]).

use super::id::StreamId;

/// Why an application call on a stream was refused. The connection stays up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// No such stream: never opened, or already closed and retired.
    #[error("stream {0} does not exist (never opened, or already closed)")]
    UnknownStream(StreamId),
    /// The stream does not carry data this way (writing a peer's
    /// unidirectional stream, reading one's own).
    #[error("stream {0} does not carry data in that direction")]
    WrongDirection(StreamId),
    /// The peer's MAX_STREAMS limit is reached; retry after it grows.
    #[error("the peer's stream limit is reached; retry after it grants more")]
    StreamsExhausted,
    /// The sending half was already finished (FIN written) or reset by this
    /// endpoint: no more data may be written.
    #[error("stream {0} was already finished or reset by this endpoint")]
    AlreadyFinished(StreamId),
    /// This endpoint asked the peer to stop sending (STOP_SENDING) and
    /// discards what arrives on the stream.
    #[error("stream {0} was stopped by this endpoint; its data is discarded")]
    ReceiveStopped(StreamId),
    /// The peer reset the stream (RESET_STREAM); data not yet read is gone.
    #[error("stream {id} was reset by the peer with error code {error_code}")]
    Reset {
        /// The stream.
        id: StreamId,
        /// The peer's error code.
        error_code: u64,
    },
    /// The peer asked us to stop sending (STOP_SENDING): writes fail.
    #[error("the peer stopped stream {id} with error code {error_code}")]
    Stopped {
        /// The stream.
        id: StreamId,
        /// The peer's error code.
        error_code: u64,
    },
    /// The stream was opened before the server rejected 0-RTT (RFC 9001
    /// §4.6.2): its state is gone and the server never saw it. Open a new
    /// stream and send the request again, if the negotiated protocol
    /// still wants it.
    #[error("stream {0} was opened in 0-RTT, which the server rejected: open a new stream and send again")]
    ZeroRttRejected(StreamId),
    /// Nothing can be done now: the send buffer is full, or no data is
    /// ready to read. Retry after progress (acks, or data arriving).
    #[error("the stream is blocked: nothing can be accepted or read now")]
    Blocked,
}

/// A transport error code (RFC 9000 §20.1) for a protocol violation found by
/// the stream layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TransportErrorCode {
    /// The peer sent more than the flow-control limits allow (0x3).
    FlowControlError,
    /// The peer opened a stream beyond the limit we granted (0x4).
    StreamLimitError,
    /// A frame for a stream in a state that does not allow it (0x5).
    StreamStateError,
    /// A final size changed, or data arrived beyond it (0x6).
    FinalSizeError,
    /// A frame field outside its encodable range, e.g. MAX_STREAMS above
    /// 2^60 (0x7; RFC 9000 §19.11).
    FrameEncodingError,
    /// Behaviour the protocol allows in small doses and we refuse in bulk,
    /// e.g. stream data fragmented beyond what reassembly keeps (0xa;
    /// RFC 9000 §21.9).
    ProtocolViolation,
}

impl TransportErrorCode {
    /// The code as sent in CONNECTION_CLOSE (RFC 9000 §20.1).
    pub fn code(self) -> u64 {
        match self {
            TransportErrorCode::FlowControlError => 0x3,
            TransportErrorCode::StreamLimitError => 0x4,
            TransportErrorCode::StreamStateError => 0x5,
            TransportErrorCode::FinalSizeError => 0x6,
            TransportErrorCode::FrameEncodingError => 0x7,
            TransportErrorCode::ProtocolViolation => 0xa,
        }
    }
}

/// A protocol violation by the peer: the connection must close with `code`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{code:?} (0x{:x}): {reason}", code.code())]
pub struct TransportError {
    /// What kind of violation, as sent in CONNECTION_CLOSE.
    pub code: TransportErrorCode,
    /// A short human-readable reason, also suitable for CONNECTION_CLOSE.
    pub reason: &'static str,
}

impl TransportError {
    pub(crate) fn flow_control(reason: &'static str) -> Self {
        Self {
            code: TransportErrorCode::FlowControlError,
            reason,
        }
    }

    pub(crate) fn stream_limit(reason: &'static str) -> Self {
        Self {
            code: TransportErrorCode::StreamLimitError,
            reason,
        }
    }

    pub(crate) fn stream_state(reason: &'static str) -> Self {
        Self {
            code: TransportErrorCode::StreamStateError,
            reason,
        }
    }

    pub(crate) fn final_size(reason: &'static str) -> Self {
        Self {
            code: TransportErrorCode::FinalSizeError,
            reason,
        }
    }

    pub(crate) fn frame_encoding(reason: &'static str) -> Self {
        Self {
            code: TransportErrorCode::FrameEncodingError,
            reason,
        }
    }

    pub(crate) fn protocol_violation(reason: &'static str) -> Self {
        Self {
            code: TransportErrorCode::ProtocolViolation,
            reason,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_rfc_9000_section_20_1() {
        assert_eq!(TransportErrorCode::FlowControlError.code(), 0x3);
        assert_eq!(TransportErrorCode::StreamLimitError.code(), 0x4);
        assert_eq!(TransportErrorCode::StreamStateError.code(), 0x5);
        assert_eq!(TransportErrorCode::FinalSizeError.code(), 0x6);
        assert_eq!(TransportErrorCode::FrameEncodingError.code(), 0x7);
        assert_eq!(TransportErrorCode::ProtocolViolation.code(), 0xa);
    }

    #[test]
    fn transport_error_message_names_code_and_reason() {
        let error = TransportError::final_size("FIN changed the final size");
        assert_eq!(
            error.to_string(),
            "FinalSizeError (0x6): FIN changed the final size"
        );
    }
}
