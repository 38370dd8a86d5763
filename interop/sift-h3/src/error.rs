//! sift's errors as h3's: a connection that ended says whether the peer's
//! HTTP/3 layer closed it (with its code) or it timed out, which h3 acts
//! on; anything else is carried along for the user to read.

use std::sync::Arc;

use h3::quic::{ConnectionErrorIncoming, StreamErrorIncoming};
use sift::tokio::{ConnectionError, ReadError, WriteError};

/// A sift connection's ending as h3 sees it.
pub(crate) fn connection(error: ConnectionError) -> ConnectionErrorIncoming {
    match error {
        ConnectionError::ClosedByPeer {
            application: true,
            code,
            ..
        } => ConnectionErrorIncoming::ApplicationClose { error_code: code },
        ConnectionError::TimedOut => ConnectionErrorIncoming::Timeout,
        other => ConnectionErrorIncoming::Undefined(Arc::new(other)),
    }
}

/// A stream call that failed because the connection ended.
pub(crate) fn stream_of_connection(error: ConnectionError) -> StreamErrorIncoming {
    StreamErrorIncoming::ConnectionErrorIncoming {
        connection_error: connection(error),
    }
}

/// A failed read: the peer's RESET_STREAM is h3's `StreamTerminated`.
pub(crate) fn read(error: ReadError) -> StreamErrorIncoming {
    match error {
        ReadError::Reset { error_code, .. } => StreamErrorIncoming::StreamTerminated { error_code },
        ReadError::Connection(error) => stream_of_connection(error),
        other @ ReadError::ClosedStream { .. } => StreamErrorIncoming::Unknown(Box::new(other)),
    }
}

/// A failed write: the peer's STOP_SENDING is h3's `StreamTerminated`.
pub(crate) fn write(error: WriteError) -> StreamErrorIncoming {
    match error {
        WriteError::Stopped { error_code, .. } => {
            StreamErrorIncoming::StreamTerminated { error_code }
        }
        WriteError::Connection(error) => stream_of_connection(error),
        other @ WriteError::ClosedStream { .. } => StreamErrorIncoming::Unknown(Box::new(other)),
    }
}

/// A stream ID sift handed out that h3 cannot represent. sift's IDs stay
/// below 2^62 (RFC 9000 §2.1), as h3's must, so this names a broken
/// invariant instead of panicking on it.
pub(crate) fn bad_id(id: u64) -> ConnectionErrorIncoming {
    ConnectionErrorIncoming::InternalError(format!("stream ID {id} is out of h3's range"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_application_close_keeps_its_http3_code() {
        let error = connection(ConnectionError::ClosedByPeer {
            application: true,
            code: 0x100,
            reason: String::new(),
        });
        assert!(matches!(
            error,
            ConnectionErrorIncoming::ApplicationClose { error_code: 0x100 }
        ));
    }

    #[test]
    fn a_peer_transport_close_is_not_an_http3_close() {
        let error = connection(ConnectionError::ClosedByPeer {
            application: false,
            code: 0x100,
            reason: String::new(),
        });
        assert!(matches!(error, ConnectionErrorIncoming::Undefined(_)));
    }

    #[test]
    fn an_idle_timeout_is_h3s_timeout() {
        assert!(matches!(
            connection(ConnectionError::TimedOut),
            ConnectionErrorIncoming::Timeout
        ));
    }

    #[test]
    fn reset_and_stop_sending_terminate_the_stream_with_the_peers_code() {
        let reset = read(ReadError::Reset {
            id: 4,
            error_code: 0x10c,
        });
        assert!(matches!(
            reset,
            StreamErrorIncoming::StreamTerminated { error_code: 0x10c }
        ));
        let stopped = write(WriteError::Stopped {
            id: 4,
            error_code: 0x10b,
        });
        assert!(matches!(
            stopped,
            StreamErrorIncoming::StreamTerminated { error_code: 0x10b }
        ));
    }

    #[test]
    fn a_stream_call_on_a_closed_connection_names_the_connection_error() {
        let error = write(WriteError::Connection(ConnectionError::TimedOut));
        assert!(matches!(
            error,
            StreamErrorIncoming::ConnectionErrorIncoming {
                connection_error: ConnectionErrorIncoming::Timeout
            }
        ));
    }
}
