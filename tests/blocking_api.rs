//! The blocking API's promises, one behaviour per test, over loopback:
//! FIN, reset, STOP_SENDING on drop, datagrams, unidirectional streams,
//! close reasons. Every wait is bounded by a channel timeout.

#![cfg(target_os = "linux")]

use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use sift::blocking::{self, BlockingConnection, Listener, SiftIoError};
use sift::conn::CloseReason;
use sift::Config;

const STEP_LIMIT: Duration = Duration::from_secs(30);

/// The default config with a self-signed identity that both ends trust.
fn config() -> Config {
    Config {
        tls: sift::crypto::tls::process_loopback_config(),
        ..Config::default()
    }
}

/// A connected pair: (client, server side of the same connection).
fn pair(config: Config) -> (BlockingConnection, BlockingConnection) {
    let listener =
        Listener::bind("127.0.0.1:0".parse::<SocketAddr>().unwrap(), config.clone()).unwrap();
    let addr = listener.local_addr();
    let (accepted_tx, accepted) = mpsc::channel();
    thread::spawn(move || {
        let _ = accepted_tx.send(listener.accept_timeout(STEP_LIMIT));
        // The listener may go: accepted connections live on.
    });
    let client = blocking::connect(addr, config).unwrap();
    let server = accepted.recv_timeout(STEP_LIMIT).unwrap().unwrap();
    (client, server)
}

/// Runs `f` on a thread and waits for its result, at most STEP_LIMIT.
fn bounded<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(STEP_LIMIT).expect("finished in time")
}

#[test]
fn read_returns_data_then_zero_at_fin() {
    let (client, server) = pair(config());
    let mut stream = client.open_bi().unwrap();
    stream.write_all(b"hello").unwrap();
    stream.finish().unwrap();
    let (data, after_end) = bounded(move || {
        let mut incoming = server.accept_bi().unwrap();
        let mut data = Vec::new();
        incoming.read_to_end(&mut data).unwrap();
        let mut buf = [0u8; 8];
        (data, incoming.read(&mut buf).unwrap())
    });
    assert_eq!(data, b"hello");
    assert_eq!(after_end, 0, "reads after the FIN keep returning 0");
}

/// `write_with`: bytes filled in place arrive in order past the send
/// buffer's limit (the writer waits for room between fills, as `write`
/// does), short fills included; a finished stream refuses it.
#[test]
fn bytes_filled_in_place_arrive_in_order() {
    let (client, server) = pair(config());
    let source: Vec<u8> = (0..6_000_000u32).map(|i| (i % 253) as u8).collect();
    let sent = source.clone();
    let writer = thread::spawn(move || {
        let mut stream = client.open_bi().unwrap();
        let (mut at, mut round) = (0usize, 0usize);
        while at < sent.len() {
            round += 1;
            let max = (round * 7919) % 300_000 + 1;
            let written = stream
                .write_with(max, |room| {
                    let mut taken = 0;
                    for slice in room.iter_mut() {
                        let want = slice.len().min(sent.len() - at - taken);
                        // Every fourth fill stops short, as a read may.
                        let want = if round % 4 == 0 { want / 3 } else { want };
                        slice[..want].copy_from_slice(&sent[at + taken..at + taken + want]);
                        taken += want;
                        if want < slice.len() {
                            break;
                        }
                    }
                    taken
                })
                .unwrap();
            assert!(written <= max);
            at += written;
        }
        stream.finish().unwrap();
        assert!(stream.write_with(10, |_| 10).is_err(), "finished");
        stream.wait_acked().unwrap();
        (stream, client)
    });
    let received = bounded(move || {
        let mut incoming = server.accept_bi().unwrap();
        let mut data = Vec::new();
        incoming.read_to_end(&mut data).unwrap();
        data
    });
    assert!(received == source, "the stream differs");
    writer.join().unwrap();
}

#[test]
fn reset_stream_fails_the_peers_read_with_its_code() {
    let (client, server) = pair(config());
    let mut stream = client.open_bi().unwrap();
    stream.write_all(b"partial").unwrap();
    let (accepted_tx, accepted) = mpsc::channel();
    let reader = thread::spawn(move || {
        let mut incoming = server.accept_bi().unwrap();
        let _ = accepted_tx.send(());
        let mut buf = [0u8; 64];
        loop {
            match incoming.read(&mut buf) {
                Ok(0) => return Err("FIN instead of a reset".to_string()),
                Ok(_) => continue,
                Err(error) => return Ok(error),
            }
        }
    });
    accepted.recv_timeout(STEP_LIMIT).unwrap();
    stream.reset(77).unwrap();
    let (done_tx, done) = mpsc::channel();
    thread::spawn(move || {
        let _ = done_tx.send(reader.join());
    });
    let error = done.recv_timeout(STEP_LIMIT).unwrap().unwrap().unwrap();
    assert_eq!(error.kind(), ErrorKind::ConnectionReset);
    assert!(error.to_string().contains("error code 77"), "{error}");
}

#[test]
fn dropping_a_stream_without_finish_ends_it_with_a_fin() {
    let (client, server) = pair(config());
    let mut stream = client.open_uni().unwrap();
    stream.write_all(b"last words").unwrap();
    drop(stream);
    let data = bounded(move || {
        let mut incoming = server.accept_uni().unwrap();
        let mut data = Vec::new();
        incoming.read_to_end(&mut data).map(|_| data)
    });
    assert_eq!(data.unwrap(), b"last words");
}

#[test]
fn finish_and_wait_returns_once_the_peer_acknowledged_everything() {
    let (client, server) = pair(config());
    let mut stream = client.open_uni().unwrap();
    stream.write_all(&vec![3u8; 1_000_000]).unwrap();
    // Dropping the last server handle closes the connection at once, maybe
    // before the ACK of the FIN leaves: keep one until the writer is done.
    let _server_alive = server.clone();
    let reader = thread::spawn(move || {
        let mut incoming = server.accept_uni().unwrap();
        let mut data = Vec::new();
        incoming.read_to_end(&mut data).map(|_| data.len())
    });
    bounded(move || stream.finish_and_wait()).unwrap();
    assert_eq!(bounded(move || reader.join().unwrap()).unwrap(), 1_000_000);
}

#[test]
fn datagrams_arrive_whole() {
    let (client, server) = pair(config());
    client.send_datagram(b"ping").unwrap();
    let datagram = bounded(move || server.recv_datagram());
    assert_eq!(datagram.unwrap(), b"ping");
}

#[test]
fn closing_fails_the_peers_read_with_code_and_reason() {
    let (client, server) = pair(config());
    let mut stream = client.open_bi().unwrap();
    stream.write_all(b"x").unwrap();
    let (accepted_tx, accepted) = mpsc::channel();
    let reader = thread::spawn(move || {
        let mut incoming = server.accept_bi().unwrap();
        let _ = accepted_tx.send(());
        let mut buf = [0u8; 8];
        let first = incoming.read(&mut buf);
        let second = incoming.read(&mut buf);
        (first.map(|n| n.min(1)), second, server.close_reason())
    });
    accepted.recv_timeout(STEP_LIMIT).unwrap();
    client.close(7, "bye");
    let (first, second, reason) = bounded(move || reader.join().unwrap());
    assert_eq!(first.unwrap(), 1);
    let error = second.expect_err("the connection closed");
    assert_eq!(error.kind(), ErrorKind::ConnectionAborted);
    assert_eq!(
        error.to_string(),
        "connection closed: closed by peer (application code 7): bye"
    );
    assert_eq!(
        reason,
        Some(CloseReason::Peer {
            application: true,
            code: 7,
            reason: "bye".into()
        })
    );
}

#[test]
fn operations_after_close_name_the_local_close() {
    let (client, _server) = pair(config());
    client.close(3, "done here");
    match client.open_bi() {
        Err(SiftIoError::Closed(reason)) => {
            assert_eq!(
                reason.to_string(),
                "closed locally (application code 3): done here"
            )
        }
        other => panic!("expected a closed error, got {other:?}"),
    }
}

#[test]
fn clones_share_one_connection() {
    let (client, server) = pair(config());
    let clone = client.clone();
    drop(client);
    // The connection is still open through the clone.
    let mut stream = clone.open_bi().unwrap();
    stream.write_all(b"still here").unwrap();
    stream.finish().unwrap();
    let data = bounded(move || {
        let mut incoming = server.accept_bi().unwrap();
        let mut data = Vec::new();
        incoming.read_to_end(&mut data).map(|_| data)
    });
    assert_eq!(data.unwrap(), b"still here");
}

#[test]
fn dropping_the_listener_releases_its_port() {
    let listener = Listener::bind("127.0.0.1:0".parse().unwrap(), config()).unwrap();
    let addr = listener.local_addr();
    drop(listener);
    // The driver thread ends and closes the socket; retry the bind until it
    // has (bounded: a port kept forever fails the test).
    let started = std::time::Instant::now();
    loop {
        if std::net::UdpSocket::bind(addr).is_ok() {
            break;
        }
        assert!(
            started.elapsed() < STEP_LIMIT,
            "{addr} is still bound after the listener was dropped"
        );
        thread::yield_now();
    }
}

#[test]
fn listener_at_its_connection_limit_refuses_further_clients_saying_it_is_busy() {
    let listener =
        Listener::bind_with_max_connections("127.0.0.1:0".parse().unwrap(), config(), 1).unwrap();
    let addr = listener.local_addr();
    let first = blocking::connect(addr, config()).unwrap();
    // The second client is told at once, well before its idle timeout.
    let patient = Config {
        idle_timeout: Duration::from_secs(30),
        ..config()
    };
    let started = std::time::Instant::now();
    let error = blocking::connect(addr, patient).expect_err("the second client is refused");
    assert!(
        error.to_string().contains("server busy: 1 clients"),
        "{error}"
    );
    assert!(
        started.elapsed() < STEP_LIMIT,
        "the refusal took {:?}",
        started.elapsed()
    );
    assert!(first.is_established(), "the first client is unaffected");
    drop(listener);
}

#[test]
fn accept_timeout_names_the_listener_and_the_wait() {
    let listener = Listener::bind("127.0.0.1:0".parse().unwrap(), config()).unwrap();
    let error = listener
        .accept_timeout(Duration::from_millis(100))
        .expect_err("nobody connects");
    assert_eq!(
        error.to_string(),
        format!(
            "no client connected to {} within 100ms",
            listener.local_addr()
        )
    );
}

#[test]
fn a_client_that_rebinds_its_socket_mid_download_gets_every_byte() {
    // Small receive windows: when the client moves, most of the file is
    // still to be sent, so it must come over the new path.
    let mut small_windows = config();
    small_windows.streams.max_receive_window = 512 << 10;
    small_windows.streams.max_stream_receive_window = 256 << 10;
    let (client, server) = pair(small_windows);
    let data: Vec<u8> = (0..4u32 << 20).map(|i| (i * 7 + i / 251) as u8).collect();
    let sent = data.clone();
    let server_thread = thread::spawn(move || {
        let mut send = server.open_uni().unwrap();
        send.write_all(&sent).unwrap();
        send.finish().unwrap();
        // Every byte acknowledged: the client answered the path challenge
        // (which came with data on the new path) before its last ACKs.
        send.wait_acked().unwrap();
        server
    });
    let before = client.local_addr();
    let moving = client.clone();
    let received = bounded(move || {
        let mut recv = moving.accept_uni().unwrap();
        let mut received = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        let mut moved = None;
        loop {
            let n = recv.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            received.extend_from_slice(&buf[..n]);
            if moved.is_none() && received.len() > (4 << 20) / 3 {
                // The phone leaves Wi-Fi: a new socket, a new port.
                moved = Some(moving.rebind("127.0.0.1:0".parse().unwrap()).unwrap());
            }
        }
        (received, moved)
    });
    let (received, moved) = received;
    let after = moved.expect("rebound mid-download");
    assert_ne!(after, before);
    assert_eq!(client.local_addr(), after);
    assert!(received == data, "the download differs after the move");
    let server = server_thread.join().unwrap();
    let stats = server.stats();
    assert_eq!(
        (stats.peer_migrations, stats.paths_validated),
        (1, 1),
        "{stats:?}"
    );
    // Neither side sends to the connection ID it used before the move.
    assert_eq!(stats.connection_id_switches, 1, "{stats:?}");
    assert_eq!(client.stats().connection_id_switches, 1);
}

#[test]
fn a_client_waits_for_a_spare_connection_id_then_moves_unlinkably() {
    // Right after connect the server's spare connection IDs may not have
    // arrived; a move before them would keep the old ID (RFC 9000 §9.5).
    let (client, server) = pair(config());
    client
        .wait_can_migrate(Duration::from_secs(10))
        .expect("the server gives spare connection IDs after the handshake");
    assert!(client.can_migrate());
    client.rebind("127.0.0.1:0".parse().unwrap()).unwrap();
    let mut send = client.open_uni().unwrap();
    send.write_all(b"from the new port").unwrap();
    send.finish().unwrap();
    let mut recv = server.accept_uni().unwrap();
    let mut got = Vec::new();
    recv.read_to_end(&mut got).unwrap();
    assert_eq!(got, b"from the new port");
    assert_eq!(client.stats().connection_id_switches, 1);
}

#[test]
fn a_server_connection_cannot_rebind_its_listeners_socket() {
    let (_client, server) = pair(config());
    let error = server.rebind("127.0.0.1:0".parse().unwrap()).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("server connection cannot rebind"),
        "{error}"
    );
}

/// A connected pair whose server asks for client certificates and whose
/// client presents `client_key` (if any): (client, server side).
fn pair_with_client_key(
    client_key: Option<sift::crypto::ServerIdentity>,
) -> (BlockingConnection, BlockingConnection) {
    let mut server_config = config();
    server_config.tls.request_client_certificate = true;
    let listener =
        Listener::bind("127.0.0.1:0".parse::<SocketAddr>().unwrap(), server_config).unwrap();
    let addr = listener.local_addr();
    let (accepted_tx, accepted) = mpsc::channel();
    thread::spawn(move || {
        let _ = accepted_tx.send(listener.accept_timeout(STEP_LIMIT));
    });
    let mut client_config = config();
    client_config.tls.client_identity = client_key;
    let client = blocking::connect(addr, client_config).unwrap();
    let server = accepted.recv_timeout(STEP_LIMIT).unwrap().unwrap();
    (client, server)
}

#[test]
fn the_server_side_names_the_key_its_client_proved() {
    let key = sift::crypto::ServerIdentity::self_signed(&["sift-client"]).unwrap();
    let (client, server) = pair_with_client_key(Some(key.clone()));
    assert_eq!(
        server.peer_certificate_fingerprint(),
        Some(key.fingerprint())
    );
    // And the client still sees the server's, as before.
    assert_ne!(client.peer_certificate_fingerprint(), None);
    assert_ne!(
        client.peer_certificate_fingerprint(),
        Some(key.fingerprint())
    );
}

#[test]
fn a_client_without_a_key_still_connects_and_downloads_from_a_server_that_asks() {
    let (client, server) = pair_with_client_key(None);
    assert_eq!(server.peer_certificate_fingerprint(), None);
    let mut request = client.open_bi().unwrap();
    request.write_all(b"GET file").unwrap();
    request.finish().unwrap();
    // The server's side lives on until the client has read the answer.
    let (asked, _server) = bounded(move || {
        let mut incoming = server.accept_bi().unwrap();
        let mut asked = Vec::new();
        incoming.read_to_end(&mut asked).unwrap();
        incoming.write_all(b"the file").unwrap();
        incoming.finish().unwrap();
        (asked, server)
    });
    assert_eq!(asked, b"GET file");
    let answer = bounded(move || {
        let mut answer = Vec::new();
        request.read_to_end(&mut answer).unwrap();
        answer
    });
    assert_eq!(answer, b"the file");
}

/// The thread that waits, drives: a lone reader runs its endpoint's turns
/// itself (decrypting what it reads on its own core), so that most turns
/// of a download run on it rather than on the driver thread.
#[test]
fn a_lone_reader_drives_its_connection_itself() {
    let (client, server) = pair(config());
    let size = 20_000_000usize;
    let writer = thread::spawn(move || {
        let mut stream = server.open_bi().unwrap();
        let chunk = vec![0x5au8; 64 * 1024];
        let mut left = size;
        while left > 0 {
            let n = left.min(chunk.len());
            stream.write_all(&chunk[..n]).unwrap();
            left -= n;
        }
        stream.finish_and_wait().unwrap();
        server
    });
    let before = client.driver_turns();
    let read = bounded(move || {
        let mut stream = client.accept_bi().unwrap();
        let mut buf = vec![0u8; 256 * 1024];
        let mut read = 0;
        loop {
            let n = stream.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            read += n;
        }
        (read, client)
    });
    let (read, client) = read;
    let _server = writer.join().unwrap();
    assert_eq!(read, size);
    let turns = client.driver_turns();
    let by_reader = turns.application - before.application;
    let by_driver_thread = turns.driver_thread - before.driver_thread;
    assert!(
        by_reader > by_driver_thread,
        "the reader ran {by_reader} turns, the driver thread {by_driver_thread}"
    );
}

/// While the application's threads are away from the connection (here
/// blocked on a channel), the driver thread drives it: the tail of an
/// upload that `write_all` left in the send buffer still reaches the peer.
#[test]
fn the_driver_thread_carries_on_while_the_application_is_away() {
    let (client, server) = pair(config());
    let size = 2_000_000usize;
    let (received_tx, received) = mpsc::channel();
    thread::spawn(move || {
        let mut incoming = server.accept_bi().unwrap();
        let mut data = Vec::new();
        let result = incoming.read_to_end(&mut data).map(|_| data.len());
        let _ = received_tx.send(result.map_err(|e| e.to_string()));
        server
    });
    let mut stream = client.open_bi().unwrap();
    stream.write_all(&vec![7u8; size]).unwrap();
    stream.finish().unwrap();
    let before = client.driver_turns();
    // Away: nothing of this thread touches the connection until the peer
    // has everything.
    let got = received
        .recv_timeout(STEP_LIMIT)
        .expect("the peer read it all in time");
    assert_eq!(got, Ok(size));
    let after = client.driver_turns();
    assert!(
        after.driver_thread > before.driver_thread,
        "the driver thread sent the tail: {before:?} then {after:?}"
    );
}

/// Several threads waiting on one connection at once each get their
/// stream whole (the driver thread drives for them and wakes each).
#[test]
fn threads_reading_streams_of_one_connection_at_once_each_get_theirs() {
    let (client, server) = pair(config());
    let streams = 4usize;
    let size = 3_000_000usize;
    let writer = thread::spawn(move || {
        let mut opened: Vec<_> = (0..streams).map(|_| server.open_bi().unwrap()).collect();
        for (index, stream) in opened.iter_mut().enumerate() {
            stream.write_all(&[index as u8]).unwrap();
        }
        let chunk = vec![0u8; 32 * 1024];
        for _ in 0..size / chunk.len() {
            for stream in &mut opened {
                stream.write_all(&chunk).unwrap();
            }
        }
        for stream in &mut opened {
            stream.finish_and_wait().unwrap();
        }
        server
    });
    let readers: Vec<_> = (0..streams)
        .map(|_| {
            let mut stream = client.accept_bi().unwrap();
            thread::spawn(move || {
                let mut data = Vec::new();
                stream.read_to_end(&mut data).unwrap();
                (data[0], data.len())
            })
        })
        .collect();
    let mut seen: Vec<(u8, usize)> =
        bounded(move || readers.into_iter().map(|r| r.join().unwrap()).collect());
    let _server = writer.join().unwrap();
    seen.sort();
    let expected: Vec<(u8, usize)> = (0..streams)
        .map(|i| (i as u8, 1 + size / (32 * 1024) * 32 * 1024))
        .collect();
    assert_eq!(seen, expected);
}

/// `read_with` lends a download's bytes in place, in order and whole, and
/// returns 0 at the end, like `read`.
#[test]
fn a_read_in_place_gets_every_byte_in_order() {
    let (client, server) = pair(config());
    let source: Vec<u8> = (0..5_000_000u32).map(|i| (i % 251) as u8).collect();
    let sent = source.clone();
    thread::spawn(move || {
        let mut stream = server.open_bi().unwrap();
        stream.write_all(&sent).unwrap();
        stream.finish_and_wait().unwrap();
        server
    });
    let got = bounded(move || {
        let mut stream = client.accept_bi().unwrap();
        let mut got = Vec::new();
        let mut calls = 0;
        loop {
            let n = stream
                .read_with(100_000, |bytes| got.extend_from_slice(bytes))
                .unwrap();
            if n == 0 {
                break;
            }
            assert!(n <= 100_000);
            calls += 1;
        }
        assert!(calls >= 50, "at most 100 kB a call: {calls} calls");
        got
    });
    assert!(got == source, "the bytes arrived in order");
}

#[test]
fn a_stream_whose_zero_rtt_was_rejected_fails_and_the_request_sent_again_is_answered() {
    use sift::crypto::tls::{process_loopback_config, SessionCache, TicketStore};
    use sift::crypto::TlsConfig;
    use sift::EarlyData;

    let tickets = TicketStore::new();
    let client_config = Config {
        tls: TlsConfig {
            tickets: Some(tickets.clone()),
            ..process_loopback_config()
        },
        ..Config::default()
    };
    // A new session cache each: the second server is the first restarted.
    let server_config = || Config {
        tls: TlsConfig {
            session_cache: Some(SessionCache::new(16, true)),
            ..process_loopback_config()
        },
        ..Config::default()
    };
    // Answers one request on one connection with `answer`.
    let serve = |listener: Listener, answer: &'static [u8]| {
        thread::spawn(move || {
            let connection = listener.accept_timeout(STEP_LIMIT).unwrap();
            let mut stream = connection.accept_bi().unwrap();
            let mut request = Vec::new();
            stream.read_to_end(&mut request).unwrap();
            stream.write_all(answer).unwrap();
            stream.finish_and_wait().unwrap();
            request
        })
    };

    let listener = Listener::bind("127.0.0.1:0".parse().unwrap(), server_config()).unwrap();
    let addr = listener.local_addr();
    let first = serve(listener, b"first");
    let client = blocking::connect(addr, client_config.clone()).unwrap();
    let mut stream = client.open_bi().unwrap();
    stream.write_all(b"GET /a").unwrap();
    stream.finish().unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    assert_eq!(first.join().unwrap(), b"GET /a");
    // The tickets came with the handshake, before the answer.
    assert!(!tickets.is_empty(), "no ticket to resume with");
    drop((stream, client));

    // The first server's socket closes once its connection has drained.
    let started = std::time::Instant::now();
    let restarted = loop {
        match Listener::bind(addr, server_config()) {
            Ok(listener) => break listener,
            Err(error) => assert!(started.elapsed() < STEP_LIMIT, "{addr}: {error}"),
        }
        thread::yield_now();
    };
    let second = serve(restarted, b"second");
    let client = bounded(move || blocking::connect_early(addr, client_config).unwrap());
    let mut early = client.open_bi_replay_safe().unwrap();
    early.write_all(b"GET /b").unwrap();
    early.finish().unwrap();
    let error = bounded(move || {
        let result = early.read(&mut [0u8; 64]);
        (result, early)
    });
    let (result, early) = error;
    let error = result.expect_err("a read of a discarded stream");
    assert_eq!(error.kind(), ErrorKind::ConnectionReset);
    let inner = error
        .into_inner()
        .unwrap()
        .downcast::<SiftIoError>()
        .unwrap();
    assert!(
        matches!(*inner, SiftIoError::ZeroRttRejected { id } if id == early.id()),
        "{inner}"
    );
    assert!(early.is_zero_rtt_rejected());
    assert_eq!(client.early_data().unwrap(), EarlyData::Rejected);

    // Sent again on a new stream, which takes the old one's ID; dropping
    // the stale handle does not touch it.
    let mut again = client.open_bi_replay_safe().unwrap();
    assert_eq!(again.id(), early.id());
    assert!(!again.is_zero_rtt_rejected());
    again.write_all(b"GET /b").unwrap();
    drop(early);
    again.finish().unwrap();
    let answer = bounded(move || {
        let mut answer = Vec::new();
        again.read_to_end(&mut answer).map(|_| answer)
    });
    assert_eq!(answer.unwrap(), b"second");
    assert_eq!(second.join().unwrap(), b"GET /b");
}
