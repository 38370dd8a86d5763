//! The async API's errors: each says what happened and names the code,
//! reason, stream or address involved; each converts into the
//! `std::io::Error` that `AsyncRead`/`AsyncWrite` callers get.

use std::io;
use std::net::SocketAddr;

use crate::conn::CloseReason;
use crate::endpoint::EndpointError;
use crate::stream::StreamId;

/// ": reason", or nothing for an empty reason.
fn with_reason(reason: &str) -> String {
    if reason.is_empty() {
        String::new()
    } else {
        format!(": {reason}")
    }
}

/// "application code 7" or "transport error 0xa".
fn describe_code(application: bool, code: u64) -> String {
    if application {
        format!("application code {code}")
    } else {
        format!("transport error 0x{code:x}")
    }
}

/// Why a connection can no longer be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectionError {
    /// The peer closed the connection (CONNECTION_CLOSE): its application
    /// with an application code, or its transport on a protocol error it
    /// found in our packets (`application: false`).
    #[error("the peer closed the connection ({}){}", describe_code(*application, *code), with_reason(reason))]
    ClosedByPeer {
        /// The code is the application's (not a transport error).
        application: bool,
        /// The peer's error code.
        code: u64,
        /// The peer's reason phrase (may be empty).
        reason: String,
    },
    /// This endpoint closed the connection: the application
    /// ([`Connection::close`](super::Connection::close),
    /// [`Endpoint::close`](super::Endpoint::close)), or the transport on a
    /// protocol error found in the peer's packets (`application: false`).
    #[error("the connection was closed locally ({}){}", describe_code(*application, *code), with_reason(reason))]
    ClosedLocally {
        /// The code is the application's (not a transport error).
        application: bool,
        /// The error code sent to the peer.
        code: u64,
        /// The reason phrase sent to the peer (may be empty).
        reason: String,
    },
    /// Nothing was heard from the peer for the idle timeout
    /// ([`Config::idle_timeout`](crate::Config::idle_timeout)).
    #[error("idle timeout: nothing heard from the peer")]
    TimedOut,
    /// The peer sent a stateless reset: it no longer knows this connection
    /// (it restarted or lost its state).
    #[error(
        "the peer reset the connection: it no longer knows it (it restarted or lost its state)"
    )]
    Reset,
    /// The server does not speak this version (it answered with Version
    /// Negotiation); the text names what it offers.
    #[error("{0}")]
    VersionMismatch(String),
    /// The endpoint's driver task ended (its socket failed), so nothing
    /// more is sent or received.
    #[error("the endpoint on {local} stopped: {reason}")]
    EndpointStopped {
        /// The endpoint's address.
        local: SocketAddr,
        /// What ended the driver.
        reason: String,
    },
}

impl From<&CloseReason> for ConnectionError {
    fn from(reason: &CloseReason) -> Self {
        match reason.clone() {
            CloseReason::Peer {
                application,
                code,
                reason,
            } => Self::ClosedByPeer {
                application,
                code,
                reason,
            },
            CloseReason::Local {
                application,
                code,
                reason,
            } => Self::ClosedLocally {
                application,
                code,
                reason,
            },
            CloseReason::IdleTimeout | CloseReason::PathValidationFailed => Self::TimedOut,
            CloseReason::StatelessReset => Self::Reset,
            reason @ CloseReason::VersionMismatch { .. } => {
                Self::VersionMismatch(reason.to_string())
            }
        }
    }
}

impl From<ConnectionError> for io::Error {
    fn from(error: ConnectionError) -> Self {
        let kind = match error {
            ConnectionError::TimedOut => io::ErrorKind::TimedOut,
            ConnectionError::ClosedByPeer { .. } | ConnectionError::Reset => {
                io::ErrorKind::ConnectionReset
            }
            ConnectionError::ClosedLocally { .. } | ConnectionError::EndpointStopped { .. } => {
                io::ErrorKind::ConnectionAborted
            }
            ConnectionError::VersionMismatch(_) => io::ErrorKind::ConnectionRefused,
        };
        io::Error::new(kind, error)
    }
}

/// Why an endpoint could not be bound.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// The endpoint's driver task needs a tokio runtime with I/O and time
    /// enabled: bind from inside one (`#[tokio::main]`,
    /// `Runtime::block_on`, or a task).
    #[error("no tokio runtime: bind the endpoint from inside a tokio runtime")]
    NoRuntime,
    /// The socket could not be created, configured or bound.
    #[error("cannot bind a UDP socket on {addr}: {source}")]
    Io {
        /// The address asked for.
        addr: SocketAddr,
        /// What the operating system said.
        source: io::Error,
    },
    /// The server configuration cannot accept connections (under TLS: no
    /// identity, or an unusable certificate or key).
    #[error("cannot serve with this configuration: {0}")]
    Config(crate::conn::Error),
    /// A connection of the endpoint may not move to a new address now
    /// (RFC 9000 §9): the endpoint kept its socket.
    #[error("{0}")]
    MoveRefused(crate::conn::Error),
}

/// Why [`Endpoint::connect`](super::Endpoint::connect) did not yield a
/// connection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectError {
    /// [`Endpoint::close`](super::Endpoint::close) was called: the
    /// endpoint makes no new connections.
    #[error("the endpoint on {local} is closed: it makes no new connections")]
    EndpointClosed {
        /// The endpoint's address.
        local: SocketAddr,
    },
    /// The remote address is of the other IP family than the endpoint's
    /// socket (an IPv6 address from an IPv4 socket, or the reverse).
    #[error("cannot reach {remote} from the endpoint on {local}: the address families differ")]
    AddressFamily {
        /// The address asked for.
        remote: SocketAddr,
        /// The endpoint's address.
        local: SocketAddr,
    },
    /// The endpoint refused the connection: it holds its limit of
    /// connections, or the configuration cannot work.
    #[error(transparent)]
    Endpoint(#[from] EndpointError),
    /// The handshake did not complete in time (the server is silent or
    /// unreachable).
    #[error("no answer from {remote} within {after:?}")]
    TimedOut {
        /// The address asked for.
        remote: SocketAddr,
        /// How long the handshake waited.
        after: std::time::Duration,
    },
    /// The connection closed before its handshake completed, or the
    /// endpoint's driver stopped.
    #[error("connecting to {remote} failed: {source}")]
    Connection {
        /// The address asked for.
        remote: SocketAddr,
        /// How the connection ended.
        source: ConnectionError,
    },
}

/// Why a write (or `finish`, `reset`) on a [`SendStream`](super::SendStream)
/// failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    /// The peer asked us to stop sending (STOP_SENDING) with `error_code`.
    #[error("the peer stopped stream {id} with error code {error_code}")]
    Stopped {
        /// The stream.
        id: StreamId,
        /// The peer's error code.
        error_code: u64,
    },
    /// This end already finished or reset the stream.
    #[error("stream {id} was already finished or reset")]
    ClosedStream {
        /// The stream.
        id: StreamId,
    },
    /// The connection closed.
    #[error(transparent)]
    Connection(#[from] ConnectionError),
}

impl From<WriteError> for io::Error {
    fn from(error: WriteError) -> Self {
        match error {
            WriteError::Connection(inner) => inner.into(),
            WriteError::Stopped { .. } => io::Error::new(io::ErrorKind::BrokenPipe, error),
            WriteError::ClosedStream { .. } => io::Error::new(io::ErrorKind::NotConnected, error),
        }
    }
}

/// Why a read (or `stop`) on a [`RecvStream`](super::RecvStream) failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// The peer reset the stream (RESET_STREAM) with `error_code`; data
    /// not yet read is gone.
    #[error("stream {id} was reset by the peer with error code {error_code}")]
    Reset {
        /// The stream.
        id: StreamId,
        /// The peer's error code.
        error_code: u64,
    },
    /// This end stopped the stream ([`RecvStream::stop`](super::RecvStream::stop)).
    #[error("stream {id} was stopped by this end: its data is discarded")]
    ClosedStream {
        /// The stream.
        id: StreamId,
    },
    /// The connection closed.
    #[error(transparent)]
    Connection(#[from] ConnectionError),
}

impl From<ReadError> for io::Error {
    fn from(error: ReadError) -> Self {
        match error {
            ReadError::Connection(inner) => inner.into(),
            ReadError::Reset { .. } => io::Error::new(io::ErrorKind::ConnectionReset, error),
            ReadError::ClosedStream { .. } => io::Error::new(io::ErrorKind::NotConnected, error),
        }
    }
}

/// Why [`RecvStream::read_to_end`](super::RecvStream::read_to_end)
/// failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReadToEndError {
    /// The stream holds more than the caller's limit.
    #[error("stream {id} holds more than the limit of {limit} bytes")]
    TooLong {
        /// The stream.
        id: StreamId,
        /// The caller's limit.
        limit: usize,
    },
    /// Reading failed.
    #[error(transparent)]
    Read(#[from] ReadError),
}

/// Why [`Connection::send_datagram`](super::Connection::send_datagram)
/// failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendDatagramError {
    /// The peer does not accept DATAGRAM frames (its
    /// `max_datagram_frame_size` is absent), or our configuration refuses
    /// them.
    #[error("the peer does not accept datagrams")]
    UnsupportedByPeer,
    /// The datagram does not fit the peer's limit or one packet.
    #[error("a datagram of {len} bytes exceeds the limit of {max} bytes")]
    TooLarge {
        /// The datagram's size.
        len: usize,
        /// The largest the connection can send now.
        max: usize,
    },
    /// The connection closed.
    #[error(transparent)]
    Connection(#[from] ConnectionError),
}
