//! A connection of the async API: a handle to one connection of a shared
//! endpoint. Every call runs on the sans-IO connection under the
//! endpoint's lock; a call that must wait registers its task with the
//! connection (see `shared.rs`).

use std::future::poll_fn;
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::error::{ConnectionError, SendDatagramError};
use super::recv::RecvStream;
use super::send::SendStream;
use super::shared::{Held, Shared, State, Wait};
use crate::endpoint::ConnectionHandle;
use crate::io::handshake_completed;
use crate::stream::{Dir, StreamError, StreamId};
use crate::{Error, Side, Stats};

/// The shared part of a [`Connection`] and its streams. The last one
/// dropped closes the connection (code 0).
#[derive(Debug)]
pub(super) struct ConnInner {
    pub(super) shared: Arc<Shared>,
    pub(super) handle: ConnectionHandle,
    pub(super) remote: SocketAddr,
    pub(super) side: Side,
    /// The name the client asked for in `connect` (`None` on the server).
    pub(super) server_name: Option<String>,
}

impl ConnInner {
    /// A handle for a connection the application now holds. Called with
    /// the endpoint's lock held, so the driver cannot remove the
    /// connection in between.
    pub(super) fn register(
        state: &mut State,
        shared: &Arc<Shared>,
        handle: ConnectionHandle,
        remote: SocketAddr,
        side: Side,
        server_name: Option<String>,
    ) -> Arc<Self> {
        state.held.insert(handle, Held::default());
        Arc::new(Self {
            shared: Arc::clone(shared),
            handle,
            remote,
            side,
            server_name,
        })
    }

    /// One attempt at an operation on the connection. `Ready` wakes the
    /// driver, for the attempt may have given the connection something to
    /// send; `Pending` registers the task to be woken when the connection
    /// changes. A connection whose driver stopped fails.
    pub(super) fn poll_with<T, E: From<ConnectionError>>(
        &self,
        cx: &mut Context<'_>,
        attempt: impl FnOnce(&mut crate::Connection, &mut Held) -> Poll<Result<T, E>>,
    ) -> Poll<Result<T, E>> {
        self.poll_with_wake(cx, Wait::Any, |_| true, attempt)
    }

    /// [`Self::poll_with`], registering a `Pending` task for `wait` only
    /// (a read or a write of one stream), and waking the driver after a
    /// `Ready` attempt only if `wake` says the connection has something new
    /// to send (a read that only moved bytes out has not).
    pub(super) fn poll_with_wake<T, E: From<ConnectionError>>(
        &self,
        cx: &mut Context<'_>,
        wait: Wait,
        wake: impl FnOnce(&crate::Connection) -> bool,
        attempt: impl FnOnce(&mut crate::Connection, &mut Held) -> Poll<Result<T, E>>,
    ) -> Poll<Result<T, E>> {
        let mut guard = self.shared.lock();
        let state = &mut *guard;
        let found = state
            .endpoint
            .connection(self.handle)
            .zip(state.held.get_mut(&self.handle));
        let Some((connection, held)) = found else {
            return Poll::Ready(Err(state
                .connection_error(self.shared.local, self.handle)
                .into()));
        };
        match attempt(connection, held) {
            Poll::Ready(result) => {
                if wake(connection) {
                    state.wake_driver();
                }
                Poll::Ready(result)
            }
            Poll::Pending if state.stopped.is_some() => Poll::Ready(Err(state
                .connection_error(self.shared.local, self.handle)
                .into())),
            Poll::Pending => {
                held.register(wait, cx.waker());
                Poll::Pending
            }
        }
    }

    /// An operation that never waits (and may give the driver work).
    pub(super) fn with<T>(
        &self,
        operation: impl FnOnce(&mut crate::Connection, &mut Held) -> T,
    ) -> Result<T, ConnectionError> {
        let mut guard = self.shared.lock();
        let state = &mut *guard;
        let found = state
            .endpoint
            .connection(self.handle)
            .zip(state.held.get_mut(&self.handle));
        let Some((connection, held)) = found else {
            return Err(state.connection_error(self.shared.local, self.handle));
        };
        let result = operation(connection, held);
        state.wake_driver();
        Ok(result)
    }

    /// The error for an operation the connection refused because it is
    /// closing or closed.
    pub(super) fn closed_error(&self, connection: &crate::Connection) -> ConnectionError {
        match connection.close_reason() {
            Some(reason) => reason.into(),
            None => ConnectionError::EndpointStopped {
                local: self.shared.local,
                reason: "the connection closed without a reason".to_string(),
            },
        }
    }
}

impl Drop for ConnInner {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.held.remove(&self.handle);
        if let Some(connection) = state.endpoint.connection(self.handle) {
            connection.close(0, "");
        }
        state.released.push(self.handle);
        state.wake_driver();
    }
}

/// A connection: open and accept streams, send and receive datagrams,
/// close. Clones share the connection; it closes (application code 0)
/// once every clone and every stream of it is dropped, so call
/// [`close`](Self::close) with a code of your own, or
/// [`Endpoint::wait_idle`](super::Endpoint::wait_idle) after it, to end
/// gracefully.
#[derive(Clone, Debug)]
pub struct Connection {
    pub(super) inner: Arc<ConnInner>,
}

impl Connection {
    /// Waits until the handshake completed (or the connection closed).
    pub(super) async fn established(&self) -> Result<(), ConnectionError> {
        poll_fn(|cx| {
            self.inner.poll_with(cx, |connection, _| {
                if handshake_completed(connection) {
                    Poll::Ready(Ok(()))
                } else if connection.is_closing() {
                    Poll::Ready(Err(self.inner.closed_error(connection)))
                } else {
                    Poll::Pending
                }
            })
        })
        .await
    }

    /// Opens a stream of ours, waiting while the peer's stream limit is
    /// reached.
    async fn open(&self, dir: Dir) -> Result<StreamId, ConnectionError> {
        poll_fn(|cx| {
            self.inner.poll_with(cx, |connection, _| {
                let opened = match dir {
                    Dir::Bi => connection.stream_open_bi(),
                    Dir::Uni => connection.stream_open_uni(),
                };
                match opened {
                    Ok(id) => Poll::Ready(Ok(id)),
                    // Wait for the peer to grant more streams.
                    Err(Error::Stream(StreamError::StreamsExhausted)) => Poll::Pending,
                    Err(_) => Poll::Ready(Err(self.inner.closed_error(connection))),
                }
            })
        })
        .await
    }

    /// Waits for the peer's next stream of `dir`.
    async fn accept(&self, dir: Dir) -> Result<StreamId, ConnectionError> {
        poll_fn(|cx| {
            self.inner
                .poll_with(cx, |connection, _| match connection.stream_accept(dir) {
                    Some(id) => Poll::Ready(Ok(id)),
                    None if connection.is_closing() => {
                        Poll::Ready(Err(self.inner.closed_error(connection)))
                    }
                    None => Poll::Pending,
                })
        })
        .await
    }

    /// Both halves of bidirectional stream `id`.
    fn halves(&self, id: StreamId) -> (SendStream, RecvStream) {
        (
            SendStream::new(Arc::clone(&self.inner), id),
            RecvStream::new(Arc::clone(&self.inner), id),
        )
    }

    /// Opens a bidirectional stream, waiting while the peer's limit on
    /// concurrent streams is reached. The peer learns of the stream when
    /// data (or the end of the stream) is first sent on it.
    pub async fn open_bi(&self) -> Result<(SendStream, RecvStream), ConnectionError> {
        let id = self.open(Dir::Bi).await?;
        Ok(self.halves(id))
    }

    /// Opens a unidirectional (send-only) stream, waiting while the peer's
    /// limit is reached.
    pub async fn open_uni(&self) -> Result<SendStream, ConnectionError> {
        let id = self.open(Dir::Uni).await?;
        Ok(SendStream::new(Arc::clone(&self.inner), id))
    }

    /// Waits for the peer's next bidirectional stream. A stream shows up
    /// once the peer sent something on it.
    pub async fn accept_bi(&self) -> Result<(SendStream, RecvStream), ConnectionError> {
        let id = self.accept(Dir::Bi).await?;
        Ok(self.halves(id))
    }

    /// Waits for the peer's next unidirectional (receive-only) stream.
    pub async fn accept_uni(&self) -> Result<RecvStream, ConnectionError> {
        let id = self.accept(Dir::Uni).await?;
        Ok(RecvStream::new(Arc::clone(&self.inner), id))
    }

    /// Queues an unreliable datagram (RFC 9221). Never waits: a datagram
    /// that the congestion window holds back too long, or that is lost,
    /// is simply not delivered.
    pub fn send_datagram(&self, data: &[u8]) -> Result<(), SendDatagramError> {
        self.inner
            .with(|connection, _| match connection.send_datagram(data) {
                Ok(()) => Ok(()),
                Err(Error::DatagramsUnsupported) => Err(SendDatagramError::UnsupportedByPeer),
                Err(Error::DatagramTooLarge { len, max }) => {
                    Err(SendDatagramError::TooLarge { len, max })
                }
                Err(_) => Err(self.inner.closed_error(connection).into()),
            })?
    }

    /// Waits for the next datagram from the peer.
    pub async fn read_datagram(&self) -> Result<Vec<u8>, ConnectionError> {
        poll_fn(|cx| {
            self.inner
                .poll_with(cx, |connection, _| match connection.recv_datagram() {
                    Some(datagram) => Poll::Ready(Ok(datagram)),
                    None if connection.is_closing() => {
                        Poll::Ready(Err(self.inner.closed_error(connection)))
                    }
                    None => Poll::Pending,
                })
        })
        .await
    }

    /// The largest datagram the peer accepts now, if it accepts any.
    pub fn max_datagram_size(&self) -> Option<usize> {
        let state = self.inner.shared.lock();
        state
            .endpoint
            .connection_ref(self.inner.handle)
            .and_then(|connection| connection.max_datagram_len())
    }

    /// Counters and estimates: bytes, packets, losses, corruption notices,
    /// congestion window, RTT.
    pub fn stats(&self) -> Stats {
        let state = self.inner.shared.lock();
        state
            .endpoint
            .connection_ref(self.inner.handle)
            .map(|connection| connection.stats())
            .unwrap_or_default()
    }

    /// Runs `cc` for the data this end sends from now on (RTT and loss
    /// state carry over; see [`crate::Connection::set_congestion_control`]):
    /// a server switching to the controller a client asked for.
    pub fn set_congestion_control(&self, cc: sift_cc::CcConfig) -> Result<(), Error> {
        self.inner
            .with(|connection, _| connection.set_congestion_control(cc))
            .map_err(|_| Error::Closed)?
    }

    /// Closes the connection at once with an application error `code` and
    /// `reason`: pending and later calls on it and its streams fail with
    /// [`ConnectionError::ClosedLocally`], data not yet acknowledged is
    /// abandoned, and the peer's calls fail with
    /// [`ConnectionError::ClosedByPeer`]. Closing again changes nothing.
    /// The endpoint's driver keeps answering the peer for a short closing
    /// period; [`Endpoint::wait_idle`](super::Endpoint::wait_idle) waits
    /// for it.
    pub fn close(&self, code: u64, reason: &str) {
        let mut to_wake = Vec::new();
        {
            let mut state = self.inner.shared.lock();
            if let Some(connection) = state.endpoint.connection(self.inner.handle) {
                connection.close(code, reason);
            }
            if let Some(held) = state.held.get_mut(&self.inner.handle) {
                held.take_all(&mut to_wake);
            }
            state.wake_driver();
        }
        to_wake.into_iter().for_each(std::task::Waker::wake);
    }

    /// Waits until this client may move to a new address
    /// ([`crate::Connection::can_migrate`]): the handshake is confirmed and
    /// the server gave a spare connection ID, so that a move is not
    /// linkable (RFC 9000 §9.5). Fails if the connection closes first.
    pub async fn migratable(&self) -> Result<(), ConnectionError> {
        poll_fn(|cx| {
            self.inner.poll_with(cx, |connection, _| {
                if connection.can_migrate() {
                    Poll::Ready(Ok(()))
                } else if connection.is_closing() {
                    Poll::Ready(Err(self.inner.closed_error(connection)))
                } else {
                    Poll::Pending
                }
            })
        })
        .await
    }

    /// Waits until the connection closes, for whatever reason, and says
    /// why.
    pub async fn closed(&self) -> ConnectionError {
        let result = poll_fn(|cx| {
            self.inner.poll_with(cx, |connection, _| {
                if connection.is_closing() {
                    Poll::Ready(Ok(self.inner.closed_error(connection)))
                } else {
                    Poll::Pending
                }
            })
        })
        .await;
        // `Err`: the driver stopped, which closes the connection too.
        result.unwrap_or_else(|error: ConnectionError| error)
    }

    /// Why the connection closed, once it is closing or closed.
    pub fn close_reason(&self) -> Option<ConnectionError> {
        let state = self.inner.shared.lock();
        let connection = state.endpoint.connection_ref(self.inner.handle)?;
        connection
            .is_closing()
            .then(|| self.inner.closed_error(connection))
    }

    /// SHA-256 of the certificate the peer presented: on a server that
    /// asks for client certificates, the client's key, proven by its
    /// handshake signature (see
    /// [`crate::Connection::peer_certificate_fingerprint`]). `None` for a
    /// client without a key, under Null protection, and once the
    /// connection is gone.
    pub fn peer_certificate_fingerprint(&self) -> Option<crate::crypto::Fingerprint> {
        let state = self.inner.shared.lock();
        state
            .endpoint
            .connection_ref(self.inner.handle)?
            .peer_certificate_fingerprint()
    }

    /// Server: the client's 0-RTT data was accepted and the handshake has
    /// not completed, so what was read so far may be a replay (see
    /// [`crate::Connection::in_early_data`]). True once the connection is
    /// gone: nothing read on it can be shown not to be a replay then. To
    /// act on a request only once it cannot be one, wait for
    /// [`handshake_completed`](Self::handshake_completed).
    pub fn in_early_data(&self) -> bool {
        let state = self.inner.shared.lock();
        state
            .endpoint
            .connection_ref(self.inner.handle)
            .is_none_or(|connection| connection.in_early_data())
    }

    /// What became of 0-RTT ([`crate::Connection::early_data`]); `None`
    /// once the connection is gone. A client of this API connects after
    /// its handshake completes, so it opens no stream in 0-RTT and none of
    /// its streams is discarded by a rejection: the answer is settled and
    /// only tells what the handshake saved.
    pub fn early_data(&self) -> Option<crate::EarlyData> {
        let state = self.inner.shared.lock();
        state
            .endpoint
            .connection_ref(self.inner.handle)
            .map(crate::Connection::early_data)
    }

    /// Waits until the handshake has completed. At a server, nothing the
    /// client sent can be a replay of its 0-RTT data from then on (RFC
    /// 8446 §8): a replayed first flight never completes a handshake. Fails
    /// if the connection closes first.
    pub async fn handshake_completed(&self) -> Result<(), ConnectionError> {
        self.established().await
    }

    /// The ALPN protocol the TLS handshake agreed on (`None` under Null
    /// protection, and once the connection is gone): a server that offers
    /// several picks the application protocol by it.
    pub fn alpn_protocol(&self) -> Option<Vec<u8>> {
        let state = self.inner.shared.lock();
        state
            .endpoint
            .connection_ref(self.inner.handle)?
            .alpn_protocol()
            .map(<[u8]>::to_vec)
    }

    /// The peer's address.
    pub fn remote_address(&self) -> SocketAddr {
        self.inner.remote
    }

    /// The address of the endpoint this connection runs on (the latest
    /// one after `Endpoint::rebind`).
    pub fn local_address(&self) -> SocketAddr {
        self.inner.shared.lock().endpoint.local_addr()
    }

    /// Which end of the connection this is.
    pub fn side(&self) -> Side {
        self.inner.side
    }

    /// The server name given to [`Endpoint::connect`](super::Endpoint::connect)
    /// (`None` for a connection a server accepted). Under TLS it was sent
    /// as SNI and checked against the certificate when the client trusts
    /// roots; pinned trust and Null protection do not check it.
    pub fn server_name(&self) -> Option<&str> {
        self.inner.server_name.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::super::Endpoint;
    use crate::Config;

    #[tokio::test]
    async fn a_connection_that_is_gone_may_have_been_early_data() {
        // Before, in_early_data() said false once the endpoint no longer
        // held the connection: a server asking about a request it read
        // from a replayed 0-RTT flight was told it was safe to act on.
        let config = Config {
            tls: crate::crypto::tls::process_loopback_config(),
            ..Config::default()
        };
        let local = "127.0.0.1:0".parse().unwrap();
        let server = Endpoint::server(local, config.clone()).unwrap();
        let client = Endpoint::client(local, config).unwrap();
        let (client_side, server_side) = tokio::join!(
            client.connect(server.local_addr(), "localhost"),
            server.accept()
        );
        let (_client_side, server_side) = (client_side.unwrap(), server_side.unwrap());
        server_side.handshake_completed().await.unwrap();
        assert!(!server_side.in_early_data(), "a completed handshake");
        let handle = server_side.inner.handle;
        server_side.inner.shared.lock().endpoint.remove(handle);
        assert!(server_side.in_early_data(), "fails closed once gone");
        assert!(server_side.handshake_completed().await.is_err());
    }
}
