//! Dropping the async API's handles gives everything back: the driver
//! tasks end and their sockets and timers are closed. Alone in its test
//! binary, because it counts the process's file descriptors and the
//! runtime's tasks, which other tests running in parallel would change.

#![cfg(all(target_os = "linux", feature = "tokio"))]

use std::time::{Duration, Instant};

use sift::tokio::Endpoint;
use sift::Config;

fn open_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .expect("procfs lists our descriptors")
        .count()
}

fn alive_tasks() -> usize {
    tokio::runtime::Handle::current()
        .metrics()
        .num_alive_tasks()
}

/// Waits (at most `limit`) until `done` holds; false if it never did.
async fn eventually(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while !done() {
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_every_handle_ends_the_drivers_and_closes_their_sockets() {
    let descriptors_before = open_descriptors();
    let tasks_before = alive_tasks();

    let config = Config {
        tls: sift::crypto::tls::process_loopback_config(),
        ..Config::default()
    };
    let server = Endpoint::server("127.0.0.1:0".parse().unwrap(), config.clone()).unwrap();
    let client = Endpoint::client("127.0.0.1:0".parse().unwrap(), config).unwrap();
    let (client_side, server_side) = tokio::join!(
        client.connect(server.local_addr(), "localhost"),
        server.accept()
    );
    let (client_side, server_side) = (client_side.unwrap(), server_side.unwrap());
    // One driver task and two descriptors (socket, timerfd) per endpoint.
    assert_eq!(alive_tasks(), tasks_before + 2);
    assert_eq!(open_descriptors(), descriptors_before + 4);

    // Leave things half done: a stream half read, a task waiting for a
    // stream that never comes, a datagram never read.
    let (mut send, recv) = client_side.open_bi().await.unwrap();
    send.write_all(&[7u8; 100_000]).await.unwrap();
    let (_server_send, mut server_recv) = server_side.accept_bi().await.unwrap();
    let mut some = [0u8; 1000];
    server_recv.read(&mut some).await.unwrap();
    let waiting = {
        let server_side = server_side.clone();
        tokio::spawn(async move { server_side.accept_uni().await.map(|_| ()) })
    };
    client_side.send_datagram(b"unread").unwrap();

    waiting.abort();
    drop((send, recv, server_recv, _server_send));
    drop((client_side, server_side, client, server));

    assert!(
        eventually(Duration::from_secs(10), || alive_tasks() == tasks_before).await,
        "driver tasks still alive: {} more than before",
        alive_tasks() - tasks_before
    );
    assert!(
        eventually(Duration::from_secs(10), || open_descriptors()
            == descriptors_before)
        .await,
        "descriptors still open: {} more than before",
        open_descriptors() - descriptors_before
    );
}
