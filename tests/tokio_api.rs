//! The async API (`sift::tokio`) end to end on loopback: what a tokio
//! application would notice — bytes arrive exact on many streams at once
//! through a lossy path, cancelled calls leave everything usable, every
//! ending (close, reset, stop, idle timeout) reaches the other side with
//! its code and reason.

#![cfg(all(target_os = "linux", feature = "tokio"))]

use std::future::Future;
use std::net::SocketAddr;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sift::stream::StreamConfig;
use sift::tokio::{
    BindError, ConnectError, Connection, ConnectionError, Endpoint, EndpointConfig, ReadError,
    ReadToEndError, SendDatagramError, WriteError,
};
use sift::Config;
use tokio::io::AsyncWriteExt;
use tokio::net::UdpSocket;

/// Every test ends within this, or fails saying it hung.
const TEST_LIMIT: Duration = Duration::from_secs(60);

/// TLS 1.3, the default, with one self-signed identity both ends trust.
fn config() -> Config {
    Config {
        tls: sift::crypto::tls::process_loopback_config(),
        ..Config::default()
    }
}

/// `config()` with datagrams kept at their starting size: loopback's path
/// MTU would otherwise grow them to 8972 bytes, and a test of loss needs
/// the many packets of the usual size.
fn config_without_pmtud() -> Config {
    let mut config = config();
    config.pmtud.enabled = false;
    config
}

fn localhost() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

async fn bounded<T>(test: impl Future<Output = T>) -> T {
    tokio::time::timeout(TEST_LIMIT, test)
        .await
        .expect("the test hung")
}

/// `len` bytes that depend on `seed` (and differ between seeds).
fn generated(seed: u64, len: usize) -> Vec<u8> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut data = vec![0u8; len];
    rng.fill(&mut data[..]);
    data
}

/// Polls `future` once: what a `select!` that picks another branch does.
async fn poll_once<F: Future>(future: F) -> Poll<F::Output> {
    let mut future = pin!(future);
    std::future::poll_fn(|cx| Poll::Ready(future.as_mut().poll(cx))).await
}

/// A server endpoint, a client connected to it, and the server's side of
/// that connection.
async fn connected(config: Config) -> (Endpoint, Endpoint, Connection, Connection) {
    let server = Endpoint::server(localhost(), config.clone()).unwrap();
    let client = Endpoint::client(localhost(), config).unwrap();
    let (client_side, server_side) = tokio::join!(
        client.connect(server.local_addr(), "localhost"),
        server.accept()
    );
    (
        server,
        client,
        client_side.unwrap(),
        server_side.expect("the server accepts the client"),
    )
}

/// A UDP relay between one client and `server` that drops each datagram
/// with probability `loss` (seeded), or every datagram once `blackhole`
/// is set. Ends with the test's runtime.
async fn spawn_relay(
    server: SocketAddr,
    loss: f64,
    seed: u64,
    blackhole: Arc<AtomicBool>,
) -> SocketAddr {
    let socket = UdpSocket::bind(localhost()).await.unwrap();
    let relay = socket.local_addr().unwrap();
    tokio::spawn(async move {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut client = None;
        let mut buf = vec![0u8; 65_535];
        loop {
            let Ok((len, from)) = socket.recv_from(&mut buf).await else {
                continue;
            };
            let to = if from == server {
                match client {
                    Some(client) => client,
                    None => continue,
                }
            } else {
                client = Some(from);
                server
            };
            if blackhole.load(Ordering::Relaxed) || rng.random_bool(loss) {
                continue;
            }
            let _ = socket.send_to(&buf[..len], to).await;
        }
    });
    relay
}

/// Streams of this test: bidirectional ones the client opens (the server
/// echoes them) and unidirectional ones the server opens.
const STREAMS_EACH_WAY: u64 = 12;

fn stream_len(index: u64) -> usize {
    48 * 1024 + index as usize * 8 * 1024
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_streams_both_ways_arrive_byte_exact_through_five_percent_loss() {
    bounded(async {
        let server = Endpoint::server(localhost(), config_without_pmtud()).unwrap();
        let relay = spawn_relay(
            server.local_addr(),
            0.05,
            7,
            Arc::new(AtomicBool::new(false)),
        )
        .await;
        let serving = tokio::spawn(async move {
            let connection = server.accept().await.expect("a client");
            // The server's own streams: seed and content on each.
            let mut pushes = Vec::new();
            for index in 0..STREAMS_EACH_WAY {
                let connection = connection.clone();
                pushes.push(tokio::spawn(async move {
                    let mut send = connection.open_uni().await?;
                    send.write_all(&index.to_be_bytes()).await?;
                    send.write_all(&generated(1000 + index, stream_len(index)))
                        .await?;
                    send.finish()?;
                    send.stopped().await.map_err(WriteError::from)
                }));
            }
            // Echo every stream the client opens.
            let mut echoes = Vec::new();
            for _ in 0..STREAMS_EACH_WAY {
                let (mut send, mut recv) = connection.accept_bi().await.unwrap();
                echoes.push(tokio::spawn(async move {
                    let data = recv.read_to_end(1 << 20).await.unwrap();
                    send.write_all(&data).await.unwrap();
                    send.finish().unwrap();
                    send.stopped().await.unwrap();
                }));
            }
            for push in pushes {
                assert_eq!(push.await.unwrap(), Ok(None), "acknowledged in full");
            }
            for echo in echoes {
                echo.await.unwrap();
            }
            // Everything the server sent is acknowledged: only now may the
            // connection go (the client closing first could cut off acks).
            connection.close(0, "done");
            server.wait_idle().await;
        });

        let client = Endpoint::client(localhost(), config_without_pmtud()).unwrap();
        let connection = client.connect(relay, "localhost").await.unwrap();
        let mut exchanges = Vec::new();
        for index in 0..STREAMS_EACH_WAY {
            let connection = connection.clone();
            exchanges.push(tokio::spawn(async move {
                let sent = generated(index, stream_len(index));
                let (mut send, mut recv) = connection.open_bi().await.unwrap();
                let (written, echoed) = tokio::join!(
                    async {
                        send.write_all(&sent).await?;
                        send.finish()
                    },
                    recv.read_to_end(1 << 20)
                );
                written.unwrap();
                assert!(
                    echoed.unwrap() == sent,
                    "bidirectional stream {index} differs"
                );
            }));
        }
        let mut received = Vec::new();
        for _ in 0..STREAMS_EACH_WAY {
            let mut recv = connection.accept_uni().await.unwrap();
            received.push(tokio::spawn(async move {
                let data = recv.read_to_end(1 << 20).await.unwrap();
                let (index, content) = data.split_at(8);
                let index = u64::from_be_bytes(index.try_into().unwrap());
                assert!(
                    content == generated(1000 + index, stream_len(index)),
                    "unidirectional stream {index} differs"
                );
                index
            }));
        }
        for exchange in exchanges {
            exchange.await.unwrap();
        }
        let mut indices = Vec::new();
        for stream in received {
            indices.push(stream.await.unwrap());
        }
        indices.sort_unstable();
        assert_eq!(indices, (0..STREAMS_EACH_WAY).collect::<Vec<_>>());

        let stats = connection.stats();
        assert!(
            stats.packets_lost > 0,
            "the relay dropped packets: {stats:?}"
        );
        assert_eq!(
            connection.closed().await,
            ConnectionError::ClosedByPeer {
                application: true,
                code: 0,
                reason: "done".to_string()
            }
        );
        serving.await.unwrap();
    })
    .await
}

#[tokio::test]
async fn cancelled_read_takes_nothing_and_the_connection_stays_usable() {
    bounded(async {
        let (_server, _client, client, server) = connected(config()).await;
        let (mut send, mut recv) = client.open_bi().await.unwrap();
        send.write_all(b"first ").await.unwrap();
        let (_server_send, mut server_recv) = server.accept_bi().await.unwrap();
        let mut buf = [0u8; 6];
        assert_eq!(server_recv.read(&mut buf).await.unwrap(), Some(6));
        assert_eq!(&buf, b"first ");

        // Nothing more has been sent: the read waits, and is given up.
        let mut spare = [0u8; 64];
        assert!(poll_once(server_recv.read(&mut spare)).await.is_pending());

        send.write_all(b"second").await.unwrap();
        send.finish().unwrap();
        assert_eq!(server_recv.read_to_end(1024).await.unwrap(), b"second");

        // And the connection still carries new streams both ways.
        let (mut send, mut recv_again) = server.open_bi().await.unwrap();
        send.write_all(b"more").await.unwrap();
        send.finish().unwrap();
        let (_client_send, mut client_recv) = client.accept_bi().await.unwrap();
        assert_eq!(client_recv.read_to_end(1024).await.unwrap(), b"more");
        drop(recv_again.stop(0));
        drop(recv.stop(0));
    })
    .await
}

#[tokio::test]
async fn cancelled_write_loses_and_repeats_nothing() {
    bounded(async {
        let config = Config {
            streams: StreamConfig {
                send_buffer: 128 * 1024,
                ..StreamConfig::default()
            },
            ..config()
        };
        let (_server, _client, client, server) = connected(config).await;
        let data = generated(3, 4 << 20);
        let mut send = client.open_uni().await.unwrap();

        // The server reads nothing yet, so flow control and the send
        // buffer fill, and a write must wait: give it up there.
        let mut written = 0;
        loop {
            match poll_once(send.write(&data[written..])).await {
                Poll::Ready(result) => written += result.unwrap(),
                Poll::Pending => break,
            }
            assert!(written < data.len(), "writes never waited: no backpressure");
        }
        assert!(written > 0);

        let reader = tokio::spawn(async move {
            let mut recv = server.accept_uni().await.unwrap();
            recv.read_to_end(8 << 20).await.unwrap()
        });
        send.write_all(&data[written..]).await.unwrap();
        send.finish().unwrap();
        let received = reader.await.unwrap();
        assert_eq!(received.len(), data.len());
        assert!(
            received == data,
            "bytes lost or repeated at the cancelled write"
        );
    })
    .await
}

#[tokio::test]
async fn a_writer_held_by_the_peers_credit_wakes_when_the_reader_makes_room() {
    bounded(async {
        // The server grants 16 KiB per stream and never grows it: what the
        // client's stream takes is the credit plus send_beyond_credit, not
        // its 4 MiB send buffer.
        let streams = StreamConfig {
            initial_max_stream_data: 16 * 1024,
            max_stream_receive_window: 16 * 1024,
            ..StreamConfig::default()
        };
        let beyond = streams.send_beyond_credit as usize;
        let config = Config {
            streams,
            ..config()
        };
        let (_server, _client, client, server) = connected(config).await;
        let data = generated(4, 1 << 20);
        let mut send = client.open_uni().await.unwrap();
        let mut written = 0;
        while let Poll::Ready(result) = poll_once(send.write(&data[written..])).await {
            written += result.unwrap();
        }
        assert_eq!(written, 16 * 1024 + beyond, "credit plus the bound");

        // Each read the server makes is credit; the waiting writer must
        // wake for it, or this never ends.
        let reader = tokio::spawn(async move {
            let mut recv = server.accept_uni().await.unwrap();
            recv.read_to_end(2 << 20).await.unwrap()
        });
        send.write_all(&data[written..]).await.unwrap();
        send.finish().unwrap();
        let received = reader.await.unwrap();
        assert!(received == data, "the stream arrived altered");
    })
    .await
}

#[tokio::test]
async fn close_reaches_the_peer_with_code_and_reason() {
    bounded(async {
        let (_server, _client, client, server) = connected(config()).await;
        let (mut send, mut recv) = client.open_bi().await.unwrap();
        send.write_all(b"?").await.unwrap();
        let (_server_send, _server_recv) = server.accept_bi().await.unwrap();

        server.close(7, "maintenance");
        let expected = ConnectionError::ClosedByPeer {
            application: true,
            code: 7,
            reason: "maintenance".to_string(),
        };
        assert_eq!(client.closed().await, expected);
        assert_eq!(
            recv.read(&mut [0u8; 8]).await,
            Err(ReadError::Connection(expected.clone()))
        );
        assert_eq!(
            expected.to_string(),
            "the peer closed the connection (application code 7): maintenance"
        );
        assert_eq!(
            server.closed().await,
            ConnectionError::ClosedLocally {
                application: true,
                code: 7,
                reason: "maintenance".to_string()
            }
        );
        let io_error = std::io::Error::from(ReadError::Connection(expected));
        assert_eq!(io_error.kind(), std::io::ErrorKind::ConnectionReset);
    })
    .await
}

#[tokio::test]
async fn reset_fails_the_peers_read_with_its_code() {
    bounded(async {
        let (_server, _client, client, server) = connected(config()).await;
        let mut send = client.open_uni().await.unwrap();
        send.write_all(b"partial").await.unwrap();
        let mut recv = server.accept_uni().await.unwrap();
        send.reset(42).unwrap();
        let id = recv.id();
        let mut buf = [0u8; 64];
        let outcome = loop {
            // The bytes before the reset may or may not be read first.
            match recv.read(&mut buf).await {
                Ok(Some(_)) => continue,
                other => break other,
            }
        };
        assert_eq!(outcome, Err(ReadError::Reset { id, error_code: 42 }));
        assert_eq!(send.finish(), Err(WriteError::ClosedStream { id }));
    })
    .await
}

#[tokio::test]
async fn stopped_reports_the_peers_code_and_writes_then_fail() {
    bounded(async {
        let (_server, _client, client, server) = connected(config()).await;
        let mut send = client.open_uni().await.unwrap();
        send.write_all(b"unwanted").await.unwrap();
        let mut recv = server.accept_uni().await.unwrap();
        recv.stop(9).unwrap();
        assert_eq!(send.stopped().await, Ok(Some(9)));
        let id = send.id();
        assert_eq!(
            send.write(b"more").await,
            Err(WriteError::Stopped { id, error_code: 9 })
        );
        let mut buf = [0u8; 8];
        assert_eq!(
            recv.read(&mut buf).await,
            Err(ReadError::ClosedStream { id })
        );
    })
    .await
}

#[tokio::test]
async fn stopped_is_none_once_the_peer_acknowledged_everything() {
    bounded(async {
        let (_server, _client, client, server) = connected(config()).await;
        let mut send = client.open_uni().await.unwrap();
        send.write_all(&generated(5, 300_000)).await.unwrap();
        send.shutdown().await.unwrap();
        let mut recv = server.accept_uni().await.unwrap();
        let (stopped, data) = tokio::join!(send.stopped(), recv.read_to_end(1 << 20));
        assert_eq!(stopped, Ok(None));
        assert_eq!(data.unwrap(), generated(5, 300_000));
    })
    .await
}

#[tokio::test]
async fn acknowledged_waits_for_every_byte_without_ending_the_stream() {
    bounded(async {
        let (_server, _client, client, server) = connected(config()).await;
        let (mut send, _recv) = client.open_bi().await.unwrap();
        send.write_all(&generated(6, 300_000)).await.unwrap();
        // Nothing is acknowledged before the peer has it all.
        assert!(poll_once(send.acknowledged()).await.is_pending());
        let (_server_send, mut recv) = server.accept_bi().await.unwrap();
        let mut buf = vec![0u8; 300_000];
        let (acknowledged, ()) = tokio::join!(send.acknowledged(), async {
            let mut got = 0;
            while got < buf.len() {
                got += recv.read(&mut buf[got..]).await.unwrap().unwrap();
            }
        });
        assert_eq!(acknowledged, Ok(()));
        assert_eq!(buf, generated(6, 300_000));
        // The stream is still open: more can be written after.
        send.write_all(b"more").await.unwrap();
    })
    .await
}

#[tokio::test]
async fn read_to_end_past_the_limit_fails_and_stops_the_stream() {
    bounded(async {
        let (_server, _client, client, server) = connected(config()).await;
        // Unfinished, so that the sender still has something to be stopped.
        let mut send = client.open_uni().await.unwrap();
        send.write_all(&[1u8; 5000]).await.unwrap();
        let mut recv = server.accept_uni().await.unwrap();
        let id = recv.id();
        assert_eq!(
            recv.read_to_end(4096).await,
            Err(ReadToEndError::TooLong { id, limit: 4096 })
        );
        assert_eq!(send.stopped().await, Ok(Some(0)));
    })
    .await
}

#[tokio::test]
async fn datagrams_arrive_whole_and_oversized_ones_are_refused() {
    bounded(async {
        let (_server, _client, client, server) = connected(config()).await;
        let max = client.max_datagram_size().expect("datagrams negotiated");
        client.send_datagram(&[0xab; 1000]).unwrap();
        assert_eq!(server.read_datagram().await.unwrap(), vec![0xab; 1000]);
        assert_eq!(
            client.send_datagram(&vec![0; max + 1]),
            Err(SendDatagramError::TooLarge { len: max + 1, max })
        );
    })
    .await
}

#[tokio::test]
async fn idle_timeout_is_reported_when_the_server_vanishes() {
    bounded(async {
        let config = Config {
            idle_timeout: Duration::from_millis(800),
            ..config()
        };
        let server = Endpoint::server(localhost(), config.clone()).unwrap();
        let blackhole = Arc::new(AtomicBool::new(false));
        let relay = spawn_relay(server.local_addr(), 0.0, 1, Arc::clone(&blackhole)).await;
        let client = Endpoint::client(localhost(), config).unwrap();
        let connection = client.connect(relay, "localhost").await.unwrap();
        let (mut send, mut recv) = connection.open_bi().await.unwrap();
        send.write_all(b"anyone?").await.unwrap();
        blackhole.store(true, Ordering::Relaxed);
        let error = recv.read(&mut [0u8; 8]).await.unwrap_err();
        assert_eq!(error, ReadError::Connection(ConnectionError::TimedOut));
        assert_eq!(
            std::io::Error::from(error).kind(),
            std::io::ErrorKind::TimedOut
        );
    })
    .await
}

#[tokio::test]
async fn connect_to_a_silent_address_times_out_naming_it() {
    bounded(async {
        let silent = std::net::UdpSocket::bind(localhost()).unwrap();
        let remote = silent.local_addr().unwrap();
        let config = Config {
            idle_timeout: Duration::from_millis(500),
            ..config()
        };
        let client = Endpoint::client(localhost(), config).unwrap();
        let error = client.connect(remote, "localhost").await.unwrap_err();
        assert_eq!(
            error,
            ConnectError::TimedOut {
                remote,
                after: Duration::from_millis(500)
            }
        );
        assert!(error.to_string().contains(&remote.to_string()));
    })
    .await
}

#[tokio::test]
async fn connect_across_address_families_is_refused() {
    let client = Endpoint::client(localhost(), config()).unwrap();
    let remote: SocketAddr = "[::1]:4433".parse().unwrap();
    assert_eq!(
        client.connect(remote, "localhost").await.unwrap_err(),
        ConnectError::AddressFamily {
            remote,
            local: client.local_addr()
        }
    );
}

#[tokio::test]
async fn a_closed_connection_nobody_holds_leaves_room_for_the_next_client() {
    // Room for one connection: the next client is answered only if the
    // last one's connection was removed once its closing period ended.
    bounded(async {
        let mut endpoint_config = EndpointConfig::server(config());
        endpoint_config.max_connections = 1;
        let server = Endpoint::bind(localhost(), endpoint_config).unwrap();
        let client = Endpoint::client(localhost(), config()).unwrap();
        for round in 0..3 {
            let (client_side, server_side) = tokio::join!(
                client.connect(server.local_addr(), "localhost"),
                server.accept()
            );
            let client_side = client_side.unwrap_or_else(|e| panic!("round {round}: {e}"));
            let server_side = server_side.expect("the server accepts the client");
            // The server closes: its closing period ends on a timer.
            server_side.close(0, "done");
            client_side.closed().await;
            drop((client_side, server_side));
            server.wait_idle().await;
            client.wait_idle().await;
        }
    })
    .await
}

#[tokio::test]
async fn endpoint_close_ends_accept_and_connections_then_wait_idle_returns() {
    bounded(async {
        let (server, _client, client, server_side) = connected(config()).await;
        let accepting = {
            let server = server.clone();
            tokio::spawn(async move { server.accept().await.is_none() })
        };
        server.close(3, "shutting down");
        assert!(accepting.await.unwrap(), "accept returns None once closed");
        assert_eq!(
            client.closed().await,
            ConnectionError::ClosedByPeer {
                application: true,
                code: 3,
                reason: "shutting down".to_string()
            }
        );
        server.wait_idle().await;
        assert_eq!(
            server
                .connect(client.local_address(), "localhost")
                .await
                .unwrap_err(),
            ConnectError::EndpointClosed {
                local: server.local_addr()
            }
        );
        drop(server_side);
    })
    .await
}

#[test]
fn binding_outside_a_runtime_says_a_runtime_is_needed() {
    let error = Endpoint::client(localhost(), config()).unwrap_err();
    assert!(matches!(error, BindError::NoRuntime), "{error}");
}

#[tokio::test]
async fn a_server_without_an_identity_refuses_to_bind_under_tls() {
    let error = Endpoint::server(localhost(), Config::default()).unwrap_err();
    assert!(matches!(error, BindError::Config(_)), "{error}");
    assert!(error.to_string().contains("identity"), "{error}");
}

#[tokio::test]
async fn a_server_whose_key_is_not_the_pinned_one_is_refused() {
    bounded(async {
        let server = Endpoint::server(localhost(), config()).unwrap();
        let stranger = sift::crypto::ServerIdentity::self_signed(&["localhost"]).unwrap();
        let client_config = Config {
            tls: sift::crypto::TlsConfig::client(sift::crypto::ServerTrust::Pinned(vec![
                stranger.fingerprint()
            ])),
            ..Config::default()
        };
        let client = Endpoint::client(localhost(), client_config).unwrap();
        let error = client
            .connect(server.local_addr(), "localhost")
            .await
            .unwrap_err();
        assert!(error.to_string().contains("not pinned"), "{error}");
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_rebinds_its_socket_mid_download_gets_every_byte() {
    bounded(async {
        // With path MTU discovery on: 8972-byte datagrams on loopback.
        let (server, client, client_side, server_side) = connected(config()).await;
        let data = generated(41, 8 << 20);
        let sent = data.clone();
        let sender = tokio::spawn(async move {
            let (mut send, _recv) = server_side.accept_bi().await.unwrap();
            send.write_all(&sent).await.unwrap();
            send.finish().unwrap();
            server_side.closed().await;
            server_side
        });
        let (mut request, mut recv) = client_side.open_bi().await.unwrap();
        request.write_all(b"go").await.unwrap();
        let before = client.local_addr();
        let mut received = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        let mut moved = false;
        while let Some(n) = recv.read(&mut buf).await.unwrap() {
            received.extend_from_slice(&buf[..n]);
            if !moved && received.len() > data.len() / 3 {
                // The phone leaves Wi-Fi: a new socket, a new port.
                let after = client.rebind(localhost()).unwrap();
                assert_ne!(after, before);
                assert_eq!(client.local_addr(), after);
                moved = true;
            }
        }
        assert!(received == data, "the download differs after the move");
        client_side.close(0, "done");
        let server_side = sender.await.unwrap();
        let stats = server_side.stats();
        assert_eq!(stats.peer_migrations, 1, "{stats:?}");
        assert_eq!(stats.paths_validated, 1, "{stats:?}");
        // Neither side sends to the connection ID it used before the move.
        assert_eq!(stats.connection_id_switches, 1, "{stats:?}");
        assert_eq!(client_side.stats().connection_id_switches, 1);
        drop(server);
    })
    .await;
}

#[tokio::test]
async fn an_idle_client_that_rebinds_is_found_at_its_new_address() {
    bounded(async {
        let (_server, client, client_side, server_side) = connected(config()).await;
        // Not before the handshake is confirmed and a spare connection ID
        // is in (RFC 9000 §9, §9.5): the endpoint would refuse.
        client_side.migratable().await.unwrap();
        client.rebind(localhost()).unwrap();
        // The server speaks first. The client has nothing to say, so the
        // server can only learn its new address from the PING a rebound
        // endpoint sends; without it, this data would go to the closed
        // socket until the idle timeout.
        let mut send = server_side.open_uni().await.unwrap();
        send.write_all(b"found you").await.unwrap();
        send.finish().unwrap();
        let mut recv = client_side.accept_uni().await.unwrap();
        assert_eq!(recv.read_to_end(64).await.unwrap(), b"found you");
        let stats = server_side.stats();
        assert_eq!((stats.peer_migrations, stats.paths_validated), (1, 1));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_share_one_port_and_new_clients_go_to_the_least_busy() {
    bounded(async {
        // Two endpoints on one port (SO_REUSEPORT, routed by connection ID):
        // four clients that stay connected end two and two, each answered
        // by the worker that accepted it.
        let server_config = Config {
            server_secret: Some(sift::crypto::ServerSecret::new(
                &[7; sift::crypto::SERVER_SECRET_LEN],
            )),
            ..config()
        };
        let workers =
            Endpoint::bind_workers(localhost(), EndpointConfig::server(server_config), 2).unwrap();
        let port = workers[0].local_addr();
        assert_eq!(workers[1].local_addr(), port, "one port for both");
        // A worker reports its index before it answers: by the time the
        // client has the answer, the report is there.
        let (accepted_tx, accepted) = std::sync::mpsc::channel();
        for (index, worker) in workers.iter().enumerate() {
            let worker = worker.clone();
            let accepted_tx = accepted_tx.clone();
            tokio::spawn(async move {
                while let Some(connection) = worker.accept().await {
                    let _ = accepted_tx.send(index);
                    tokio::spawn(async move {
                        let (mut send, mut recv) = connection.accept_bi().await.unwrap();
                        let request = recv.read_to_end(1 << 20).await.unwrap();
                        send.write_all(&[index as u8]).await.unwrap();
                        send.write_all(&request).await.unwrap();
                        send.finish().unwrap();
                        connection.closed().await;
                    });
                }
            });
        }
        let mut held = Vec::new();
        let mut served = [0usize; 2];
        for seed in 0..4u64 {
            // A client endpoint each: a second connection of one endpoint
            // would bring the address token of its first, and a returning
            // client is served where it lands, never moved.
            let client = Endpoint::client(localhost(), config()).unwrap();
            let connection = client.connect(port, "localhost").await.unwrap();
            let (mut send, mut recv) = connection.open_bi().await.unwrap();
            let request = generated(seed, 100_000);
            send.write_all(&request).await.unwrap();
            send.finish().unwrap();
            let answer = recv.read_to_end(1 << 20).await.unwrap();
            let worker = accepted.try_recv().expect("a worker accepted");
            assert_eq!(usize::from(answer[0]), worker, "answered by its worker");
            assert_eq!(&answer[1..], &request[..], "client {seed}");
            served[worker] += 1;
            held.push((client, connection));
        }
        assert_eq!(served, [2, 2]);
        for (_, connection) in held {
            connection.close(0, "done");
        }
    })
    .await
}

/// A current-thread runtime on a thread of its own, as sift-server gives
/// each worker: its handle, and the sender whose drop ends it.
fn runtime_thread() -> (tokio::runtime::Handle, tokio::sync::oneshot::Sender<()>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let handle = runtime.handle().clone();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let _ = runtime.block_on(stopped);
    });
    (handle, stop)
}

#[tokio::test(flavor = "current_thread")]
async fn workers_driven_on_runtimes_of_their_own_serve_every_client() {
    bounded(async {
        // The test's runtime has one thread, busy with the clients: the
        // workers' packets are handled on their own threads' runtimes.
        let server_config = Config {
            server_secret: Some(sift::crypto::ServerSecret::new(
                &[7; sift::crypto::SERVER_SECRET_LEN],
            )),
            ..config()
        };
        let none = Endpoint::bind_workers_on(
            localhost(),
            EndpointConfig::server(server_config.clone()),
            &[],
        );
        assert!(
            matches!(none, Err(BindError::Config(_))),
            "no runtime, no worker"
        );
        let (runtimes, stops): (Vec<_>, Vec<_>) = (0..2).map(|_| runtime_thread()).unzip();
        let workers = Endpoint::bind_workers_on(
            localhost(),
            EndpointConfig::server(server_config),
            &runtimes,
        )
        .unwrap();
        let port = workers[0].local_addr();
        for worker in &workers {
            let worker = worker.clone();
            tokio::spawn(async move {
                while let Some(connection) = worker.accept().await {
                    tokio::spawn(async move {
                        let (mut send, mut recv) = connection.accept_bi().await.unwrap();
                        let request = recv.read_to_end(1 << 20).await.unwrap();
                        send.write_all(&request).await.unwrap();
                        send.finish().unwrap();
                        connection.closed().await;
                    });
                }
            });
        }
        let mut held = Vec::new();
        for seed in 0..4u64 {
            // New clients (a client endpoint each): a returning one, with
            // an address token, would not be moved.
            let client = Endpoint::client(localhost(), config()).unwrap();
            let connection = client.connect(port, "localhost").await.unwrap();
            let (mut send, mut recv) = connection.open_bi().await.unwrap();
            let request = generated(seed, 300_000);
            send.write_all(&request).await.unwrap();
            send.finish().unwrap();
            assert_eq!(
                recv.read_to_end(1 << 20).await.unwrap(),
                request,
                "client {seed}"
            );
            held.push((client, connection));
        }
        let accepted: Vec<u64> = workers
            .iter()
            .map(|w| w.stats().connections_accepted)
            .collect();
        assert_eq!(accepted, [2, 2], "both workers served");
        for (_, connection) in held {
            connection.close(0, "done");
        }
        drop(stops);
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_whose_address_changes_stays_with_the_worker_that_accepted_it() {
    bounded(async {
        // Two workers on one port. The kernel's own reuseport hash would
        // send a client's new 4-tuple to either socket; the steering
        // program routes by the connection ID, which the worker that issued
        // it drew to route back to it. Each client moves to a new port and asks again: the
        // same worker answers (a datagram steered elsewhere would be
        // dropped, and the exchange would hang). Six clients: with the
        // kernel's hash alone, all six staying put is a 1-in-64 chance.
        let workers =
            Endpoint::bind_workers(localhost(), EndpointConfig::server(config()), 2).unwrap();
        let port = workers[0].local_addr();
        for (index, worker) in workers.iter().enumerate() {
            let worker = worker.clone();
            tokio::spawn(async move {
                while let Some(connection) = worker.accept().await {
                    tokio::spawn(async move {
                        while let Ok((mut send, mut recv)) = connection.accept_bi().await {
                            let request = recv.read_to_end(1 << 20).await.unwrap();
                            send.write_all(&[index as u8]).await.unwrap();
                            send.write_all(&request).await.unwrap();
                            send.finish().unwrap();
                        }
                    });
                }
            });
        }
        async fn ask(connection: &sift::tokio::Connection, seed: u64) -> u8 {
            let (mut send, mut recv) = connection.open_bi().await.unwrap();
            let request = generated(seed, 20_000);
            send.write_all(&request).await.unwrap();
            send.finish().unwrap();
            let answer = recv.read_to_end(1 << 20).await.unwrap();
            assert_eq!(&answer[1..], &request[..], "request {seed}");
            answer[0]
        }
        for seed in 0..6u64 {
            let client = Endpoint::client(localhost(), config()).unwrap();
            let connection = client.connect(port, "localhost").await.unwrap();
            let worker = ask(&connection, seed).await;
            // Not before the server's spare connection ID is in (the move
            // would keep the old one): the answer can outrun it.
            connection.migratable().await.unwrap();
            let before = client.local_addr();
            assert_ne!(client.rebind(localhost()).unwrap(), before);
            assert_eq!(
                ask(&connection, seed + 100).await,
                worker,
                "client {seed} moved to another worker"
            );
            assert_eq!(connection.stats().connection_id_switches, 1);
            connection.close(0, "done");
        }
    })
    .await
}

#[tokio::test]
async fn workers_need_a_server_configuration() {
    let error = Endpoint::bind_workers(localhost(), EndpointConfig::client(config()), 2);
    assert!(matches!(error, Err(BindError::Config(_))));
}

#[tokio::test]
async fn a_server_that_asks_names_each_clients_key_and_lets_keyless_clients_in() {
    bounded(async {
        let mut server_config = config();
        server_config.tls.request_client_certificate = true;
        let server = Endpoint::server(localhost(), server_config).unwrap();
        let key = sift::crypto::ServerIdentity::self_signed(&["sift-client"]).unwrap();
        for client_key in [Some(key.clone()), None] {
            let mut client_config = config();
            client_config.tls.client_identity = client_key.clone();
            let client = Endpoint::client(localhost(), client_config).unwrap();
            let (client_side, server_side) = tokio::join!(
                client.connect(server.local_addr(), "localhost"),
                server.accept()
            );
            let client_side = client_side.expect("a client with or without a key connects");
            let server_side = server_side.expect("the server accepts it");
            assert_eq!(
                server_side.peer_certificate_fingerprint(),
                client_key.as_ref().map(|key| key.fingerprint())
            );
            // The client's view of the server is unchanged.
            assert_ne!(client_side.peer_certificate_fingerprint(), None);
        }
    })
    .await
}

/// `write_with`: bytes placed straight into the send buffer arrive exact
/// through loss, in whatever pieces the filler offers and takes (a short
/// fill, like a read that found fewer bytes cached, included), and a
/// finished stream refuses it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bytes_filled_in_place_arrive_byte_exact_through_loss() {
    bounded(async {
        let server = Endpoint::server(localhost(), config_without_pmtud()).unwrap();
        let relay = spawn_relay(
            server.local_addr(),
            0.03,
            11,
            Arc::new(AtomicBool::new(false)),
        )
        .await;
        let source = generated(77, 3 * 1024 * 1024 + 12_345);
        let sent = source.clone();
        let serving = tokio::spawn(async move {
            let connection = server.accept().await.expect("a client");
            let mut send = connection.open_uni().await.unwrap();
            send.write_all(b"head").await.unwrap();
            let (mut at, mut round) = (0usize, 0usize);
            while at < sent.len() {
                round += 1;
                // Offer 1 byte to 200 kB; every third fill takes only part
                // of the room it is given.
                let max = (round * 7919) % 200_000 + 1;
                let written = send
                    .write_with(max, |room| {
                        let mut taken = 0;
                        for slice in room.iter_mut() {
                            let want = slice.len().min(sent.len() - at - taken);
                            let want = if round % 3 == 0 { want / 2 } else { want };
                            slice[..want].copy_from_slice(&sent[at + taken..at + taken + want]);
                            taken += want;
                            if want < slice.len() {
                                break;
                            }
                        }
                        taken
                    })
                    .await
                    .unwrap();
                assert!(written <= max);
                at += written;
            }
            send.finish().unwrap();
            assert!(matches!(
                send.write_with(10, |_| 10).await,
                Err(WriteError::ClosedStream { .. })
            ));
            assert_eq!(send.stopped().await, Ok(None), "acknowledged in full");
            connection.close(0, "done");
            server.wait_idle().await;
        });
        let client = Endpoint::client(localhost(), config_without_pmtud()).unwrap();
        let connection = client.connect(relay, "localhost").await.unwrap();
        let mut recv = connection.accept_uni().await.unwrap();
        let data = recv.read_to_end(8 << 20).await.unwrap();
        assert_eq!(&data[..4], b"head");
        assert!(data[4..] == source[..], "the stream differs");
        assert!(
            connection.stats().packets_lost > 0,
            "the relay dropped packets"
        );
        serving.await.unwrap();
    })
    .await
}

/// A waker that counts its wake-ups.
struct CountingWaker(std::sync::atomic::AtomicUsize);

impl std::task::Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn data_for_one_stream_wakes_only_that_streams_reader() {
    bounded(async {
        let (_server, _client, client, server) = connected(config()).await;
        let (mut a_out, _a_back) = client.open_bi().await.unwrap();
        let (mut b_out, _b_back) = client.open_bi().await.unwrap();
        a_out.write_all(b"a").await.unwrap();
        b_out.write_all(b"b").await.unwrap();
        let (_a_reply, mut a_in) = server.accept_bi().await.unwrap();
        let (_b_reply, mut b_in) = server.accept_bi().await.unwrap();
        let mut buf = [0u8; 4096];
        assert_eq!(a_in.read(&mut buf).await.unwrap(), Some(1));
        assert_eq!(b_in.read(&mut buf).await.unwrap(), Some(1));

        // A reader waits on stream A.
        let counter = Arc::new(CountingWaker(Default::default()));
        let waker = std::task::Waker::from(Arc::clone(&counter));
        let mut cx = std::task::Context::from_waker(&waker);
        assert!(a_in.poll_read_data(&mut cx, &mut buf).is_pending());

        // Twenty datagrams for stream B, each read as it arrives.
        for round in 0..20u8 {
            b_out.write_all(&[round; 1000]).await.unwrap();
            let mut got = 0;
            while got < 1000 {
                got += b_in.read(&mut buf).await.unwrap().unwrap();
            }
        }
        assert_eq!(
            counter.0.load(Ordering::SeqCst),
            0,
            "stream B's data woke stream A's reader"
        );

        // Data for stream A wakes it.
        a_out.write_all(b"x").await.unwrap();
        while counter.0.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        match a_in.poll_read_data(&mut cx, &mut buf) {
            Poll::Ready(Ok(1)) => {}
            other => panic!("stream A read {other:?}"),
        }
    })
    .await;
}
