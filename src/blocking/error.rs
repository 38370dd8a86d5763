//! The blocking API's error: what went wrong, naming the address, stream
//! or value involved, and how it maps onto `std::io::ErrorKind`.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use crate::conn::CloseReason;
use crate::endpoint::EndpointError;
use crate::stream::StreamId;
use crate::Error;

/// What went wrong in the blocking API. Each message names the address,
/// stream or value involved.
#[derive(Debug, thiserror::Error)]
pub enum SiftIoError {
    /// The socket or the event loop failed.
    #[error("I/O error: {0}")]
    Io(#[from] io::Error),
    /// The connection refused the operation.
    #[error(transparent)]
    Connection(#[from] Error),
    /// The endpoint refused (connection limit, bad configuration).
    #[error(transparent)]
    Endpoint(#[from] EndpointError),
    /// The connection is closed; the reason says by whom and why.
    #[error("connection closed: {0}")]
    Closed(CloseReason),
    /// Nothing happened within the allowed time.
    #[error("{what} within {after:?}")]
    Timeout {
        /// What did not happen.
        what: String,
        /// How long it was waited for.
        after: Duration,
    },
    /// The peer reset the stream.
    #[error("stream {id} was reset by the peer with error code {error_code}")]
    StreamReset {
        /// The stream.
        id: StreamId,
        /// The peer's error code.
        error_code: u64,
    },
    /// The peer asked us to stop sending on the stream.
    #[error("the peer stopped stream {id} with error code {error_code}")]
    StreamStopped {
        /// The stream.
        id: StreamId,
        /// The peer's error code.
        error_code: u64,
    },
    /// The stream was opened before the server rejected 0-RTT: it is gone
    /// and the server never saw it (RFC 9001 §4.6.2). Open a new stream
    /// and send again ([`BlockingConnection::early_data`](super::BlockingConnection::early_data)).
    #[error("stream {id} was opened in 0-RTT, which the server rejected: open a new stream and send again")]
    ZeroRttRejected {
        /// The stream.
        id: StreamId,
    },
    /// The endpoint's driver thread ended (its socket failed).
    #[error("the endpoint on {local} stopped: {reason}")]
    EndpointStopped {
        /// The endpoint's address.
        local: SocketAddr,
        /// What ended the driver.
        reason: String,
    },
}

impl From<SiftIoError> for io::Error {
    fn from(error: SiftIoError) -> Self {
        let kind = match &error {
            SiftIoError::Io(inner) => inner.kind(),
            SiftIoError::Closed(CloseReason::IdleTimeout) | SiftIoError::Timeout { .. } => {
                io::ErrorKind::TimedOut
            }
            SiftIoError::Closed(CloseReason::StatelessReset) => io::ErrorKind::ConnectionReset,
            SiftIoError::Closed(CloseReason::VersionMismatch { .. }) => {
                io::ErrorKind::ConnectionRefused
            }
            SiftIoError::Closed(_) | SiftIoError::EndpointStopped { .. } => {
                io::ErrorKind::ConnectionAborted
            }
            SiftIoError::StreamReset { .. } | SiftIoError::ZeroRttRejected { .. } => {
                io::ErrorKind::ConnectionReset
            }
            SiftIoError::StreamStopped { .. } => io::ErrorKind::BrokenPipe,
            SiftIoError::Connection(_) | SiftIoError::Endpoint(_) => io::ErrorKind::Other,
        };
        match error {
            SiftIoError::Io(inner) => inner,
            other => io::Error::new(kind, other),
        }
    }
}
