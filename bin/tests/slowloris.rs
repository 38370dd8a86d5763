//! Clients that open streams and never finish their requests (slowloris):
//! the server spends no thread on them, closes each at the request
//! deadline, and serves other clients meanwhile.

mod common;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use common::*;
use sift::conn::Protection;
use sift::tokio::{Connection, Endpoint, RecvStream, SendStream};
use sift_bin::cli::common::{transport_config, OnOff};
use sift_bin::transfer::frame::read_frame_async;
use sift_bin::transfer::{parse_response, Request, Status};
use sift_cc::CcConfig;

/// Client connections of the slowloris, and streams each opens (the
/// transport's default limit of concurrent streams per connection).
const CONNECTIONS: usize = 10;
const STREAMS_PER_CONNECTION: usize = 100;

/// The server's threads as /proc counts them.
fn threads_of(pid: u32) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc");
    status
        .lines()
        .find_map(|line| line.strip_prefix("Threads:"))
        .and_then(|count| count.trim().parse().ok())
        .expect("a Threads: line")
}

/// Opens `CONNECTIONS` × `STREAMS_PER_CONNECTION` streams to `server`, on
/// each the first half of a GET request and nothing more.
async fn open_half_requests(
    server: SocketAddr,
) -> (Endpoint, Vec<Connection>, Vec<(SendStream, RecvStream)>) {
    let config = transport_config(Protection::Null, CcConfig::default(), OnOff::On);
    let endpoint = Endpoint::client("127.0.0.1:0".parse().unwrap(), config).unwrap();
    let request = Request::Get {
        path: "f.bin".into(),
        offset: 0,
        cc: None,
    }
    .encode()
    .unwrap();
    let mut connections = Vec::new();
    let mut streams = Vec::new();
    for _ in 0..CONNECTIONS {
        let connection = endpoint.connect(server, "").await.expect("connect");
        for _ in 0..STREAMS_PER_CONNECTION {
            let (mut send, recv) = connection.open_bi().await.expect("open a stream");
            send.write_all(&request[..request.len() / 2])
                .await
                .expect("send half a request");
            streams.push((send, recv));
        }
        connections.push(connection);
    }
    (endpoint, connections, streams)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn half_open_request_streams_pin_no_thread_and_are_answered_at_the_deadline() {
    let root = TestDir::new("slowloris-deadline");
    std::fs::write(root.path().join("f.bin"), content(100_000, 7)).unwrap();
    let (threads, io_threads, timeout_secs) = (2, 2, 2);
    let server = Server::start(
        root.path(),
        &[
            "--insecure-null-crypto",
            "--workers",
            "1",
            "--threads",
            &threads.to_string(),
            "--io-threads",
            &io_threads.to_string(),
            "--request-timeout",
            &timeout_secs.to_string(),
            "--max-streams-per-client",
            &STREAMS_PER_CONNECTION.to_string(),
        ],
    );
    // The main thread, the worker's (and its file thread, for a client it
    // serves alone), the serving threads and at most the file pool.
    let pool = 1 + 2 + threads + io_threads;
    let pid = server.pid();
    assert!(
        threads_of(pid) <= pool,
        "{} threads at start",
        threads_of(pid)
    );

    runtime().block_on(async {
        let opened = Instant::now();
        let (_endpoint, _connections, streams) = open_half_requests(server.addr).await;
        let mut peak = 0;
        let mut answers = Vec::new();
        for (send, mut recv) in streams {
            peak = peak.max(threads_of(pid));
            let answer = tokio::time::timeout(EVENT_TIMEOUT, recv.read_to_end(4096))
                .await
                .expect("an answer before the test's deadline")
                .expect("the server answers and ends the stream");
            answers.push(answer);
            drop(send);
        }
        let answered = opened.elapsed();
        peak = peak.max(threads_of(pid));
        assert!(
            peak <= pool,
            "{peak} server threads with {} half-open streams; the pool is {pool}",
            answers.len()
        );
        // Every stream was served from after its request began, so none
        // can have been closed before the deadline.
        assert!(answered >= Duration::from_secs(timeout_secs));
        for answer in &answers {
            let response = parse_response(answer).expect("an error response");
            assert_eq!(response.status, Status::BadRequest);
            assert_eq!(response.message, "no complete request within 2.0 s");
        }
        assert_eq!(answers.len(), CONNECTIONS * STREAMS_PER_CONNECTION);
    });
    for _ in 0..CONNECTIONS * STREAMS_PER_CONNECTION {
        let line = server.next_transfer_line();
        assert!(
            line.contains("op=? ") && line.contains("result=bad-request"),
            "{line}"
        );
    }
}

#[test]
fn a_slowloris_does_not_hold_up_another_clients_download() {
    let root = TestDir::new("slowloris-other");
    let out = TestDir::new("slowloris-other-out");
    let data = content(1_000_000, 8);
    std::fs::write(root.path().join("f.bin"), &data).unwrap();
    // One serving thread and one file thread: a server that waited on a
    // stalled stream with either would serve no one else. The deadline is
    // far beyond the download, so the slowloris holds every stream it has
    // while the download runs.
    let server = Server::start(
        root.path(),
        &[
            "--insecure-null-crypto",
            "--threads",
            "1",
            "--io-threads",
            "1",
            "--request-timeout",
            "600",
        ],
    );
    let runtime = runtime();
    // Held open (by this runtime's threads) while the download runs.
    let slowloris = runtime.block_on(open_half_requests(server.addr));
    let dest = out.path().join("f.bin");
    let output = run_client(&[
        "get",
        &server.url("f.bin"),
        "-o",
        dest.to_str().unwrap(),
        "--insecure-null-crypto",
    ]);
    expect_success(&output);
    assert_eq!(std::fs::read(&dest).unwrap(), data);
    drop(slowloris);
    let first = server.next_transfer_line();
    assert!(
        first.contains("op=GET") && first.contains("result=ok"),
        "the download is the first stream to end: {first}"
    );
}

/// Opens a stream on `connection` and sends `bytes` on it (and the end of
/// the stream if `complete`).
async fn open_with(
    connection: &Connection,
    bytes: &[u8],
    complete: bool,
) -> (SendStream, RecvStream) {
    let (mut send, recv) = connection.open_bi().await.expect("open a stream");
    send.write_all(bytes).await.expect("send");
    if complete {
        send.finish().expect("finish");
    }
    (send, recv)
}

#[test]
fn a_stream_past_a_cap_waits_for_a_place_instead_of_being_served() {
    let root = TestDir::new("slowloris-cap");
    let request = Request::List { path: ".".into() }.encode().unwrap();
    for cap in ["--max-streams-per-client", "--max-streams"] {
        let server = Server::start(
            root.path(),
            &[
                "--insecure-null-crypto",
                "--workers",
                "1",
                "--request-timeout",
                "1",
                cap,
                "1",
                "-v",
            ],
        );
        runtime().block_on(async {
            let config = transport_config(Protection::Null, CcConfig::default(), OnOff::On);
            let endpoint = Endpoint::client("127.0.0.1:0".parse().unwrap(), config).unwrap();
            let first = endpoint.connect(server.addr, "").await.expect("connect");
            // The first stream takes the only place with half a request...
            let (held, _held_recv) = open_with(&first, &request[..4], false).await;
            held.acknowledged().await.expect("the server has it");
            // Acknowledged is not yet served: wait until the server says
            // the stream holds its place, or the second could take it.
            wait_for_line(&server.stderr, "the first stream's place", |line| {
                line.contains("stream has its place")
            });
            // ...so a complete request after it, from the same client or
            // another, is served only once the first stream's deadline
            // freed the place.
            let second = match cap {
                "--max-streams" => endpoint.connect(server.addr, "").await.expect("connect"),
                _ => first.clone(),
            };
            let (_send, mut recv) = open_with(&second, &request, true).await;
            let response = tokio::time::timeout(EVENT_TIMEOUT, read_frame_async(&mut recv))
                .await
                .expect("an answer before the test's deadline")
                .expect("a response");
            assert_eq!(parse_response(&response).unwrap().status, Status::Ok);
        });
        let first_line = server.next_transfer_line();
        let second_line = server.next_transfer_line();
        assert!(
            first_line.contains("result=bad-request"),
            "{cap}: {first_line}"
        );
        assert!(
            second_line.contains("op=LIST") && second_line.contains("result=ok"),
            "{cap}: {second_line}"
        );
    }
}
