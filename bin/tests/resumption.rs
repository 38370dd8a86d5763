//! Session resumption and 0-RTT between the real binaries on loopback:
//! `sift-client --repeat` resumes its first connection's TLS session and
//! sends its request in 0-RTT; a server or client with tickets off makes
//! full handshakes; a server that rejects the 0-RTT (one restarted
//! between the client's connections) makes the client reset its streams
//! and send its requests again. Files arrive byte-exact every way.

mod common;

use std::net::{SocketAddr, UdpSocket};

use common::{content, expect_success, json_report, run_client, Server, TestDir};

/// A UDP relay on loopback standing for a server that restarts between a
/// client's connections: the first client address it hears from is
/// relayed to `first`, every later one (each connection of
/// `sift-client` has a socket of its own) to `then`. Its threads end with
/// the test process.
fn restarting_relay(first: SocketAddr, then: SocketAddr) -> SocketAddr {
    let front = UdpSocket::bind("127.0.0.1:0").unwrap();
    let address = front.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut routes: Vec<(SocketAddr, UdpSocket)> = Vec::new();
        let mut buf = vec![0u8; 65_536];
        while let Ok((len, client)) = front.recv_from(&mut buf) {
            if !routes.iter().any(|(known, _)| *known == client) {
                let upstream = UdpSocket::bind("127.0.0.1:0").unwrap();
                upstream
                    .connect(if routes.is_empty() { first } else { then })
                    .unwrap();
                let (back, to_client) = (front.try_clone().unwrap(), upstream.try_clone().unwrap());
                std::thread::spawn(move || {
                    let mut buf = vec![0u8; 65_536];
                    while let Ok(len) = to_client.recv(&mut buf) {
                        let _ = back.send_to(&buf[..len], client);
                    }
                });
                routes.push((client, upstream));
            }
            if let Some((_, upstream)) = routes.iter().find(|(known, _)| *known == client) {
                let _ = upstream.send(&buf[..len]);
            }
        }
    });
    address
}

/// Two servers of `root` with one identity, the second knowing none of
/// the first's tickets, behind a [`restarting_relay`]: the servers (kept
/// running) and the address to reach them at.
fn restarted_servers(dir: &TestDir, root: &std::path::Path) -> (Server, Server, SocketAddr) {
    let state = dir.subdir("state");
    let first = Server::start_in(root, &[], &state);
    let then = Server::start_in(root, &[], &state);
    assert_eq!(first.fingerprint, then.fingerprint, "one identity");
    let relay = restarting_relay(first.addr, then.addr);
    (first, then, relay)
}

/// One JSON report per line of `stdout`.
fn reports(stdout: &str) -> Vec<serde_json::Value> {
    stdout.lines().map(json_report).collect()
}

/// `sift-client get --repeat 2 --json` of a `len`-byte file from a fresh
/// server started with `server_flags`: the file served, the file
/// downloaded, and one report per connection.
fn repeated_get(
    name: &str,
    len: usize,
    seed: u64,
    server_flags: &[&str],
    client_flags: &[&str],
) -> (Vec<u8>, Vec<u8>, Vec<serde_json::Value>) {
    let dir = TestDir::new(name);
    let root = dir.subdir("root");
    let original = content(len, seed);
    std::fs::write(root.join("data.bin"), &original).unwrap();
    let server = Server::start(&root, server_flags);
    let dest = dir.path().join("out.bin");
    let url = server.url("data.bin");
    let pin = server.pin();
    let mut args = vec![
        "get",
        &url,
        "-o",
        dest.to_str().unwrap(),
        "--json",
        "--repeat",
        "2",
    ];
    args.extend_from_slice(client_flags);
    args.push(&pin);
    let reports = reports(&expect_success(&run_client(&args)));
    (original, std::fs::read(&dest).unwrap(), reports)
}

#[test]
fn a_repeated_get_resumes_and_sends_its_request_in_zero_rtt() {
    let (original, downloaded, reports) = repeated_get("resume-0rtt", 300_000, 3, &[], &[]);
    assert_eq!(reports.len(), 2, "one report per connection");
    assert_eq!(downloaded, original);
    let (first, second) = (&reports[0], &reports[1]);
    assert_eq!(first["tls_resumed"], false);
    assert_eq!(first["zero_rtt"], "none");
    assert_eq!(second["tls_resumed"], true);
    assert_eq!(second["zero_rtt"], "accepted");
    assert!(second["zero_rtt_bytes"].as_u64().unwrap() > 0);
    assert_eq!(second["sha256"], first["sha256"]);
}

#[test]
fn a_server_without_tickets_gives_full_handshakes() {
    let (_, _, reports) = repeated_get("resume-off", 10_000, 4, &["--no-session-tickets"], &[]);
    for report in reports {
        assert_eq!(report["tls_resumed"], false);
        assert_eq!(report["zero_rtt"], "none");
    }
}

#[test]
fn no_0rtt_resumes_but_sends_nothing_early() {
    let (original, downloaded, reports) =
        repeated_get("resume-no-0rtt", 10_000, 5, &[], &["--no-0rtt"]);
    assert_eq!(reports[1]["tls_resumed"], true);
    assert_eq!(reports[1]["zero_rtt"], "none");
    assert_eq!(reports[1]["zero_rtt_bytes"], 0);
    assert_eq!(downloaded, original);
}

#[test]
fn a_put_is_never_sent_in_zero_rtt() {
    let dir = TestDir::new("resume-put");
    let root = dir.subdir("root");
    let server = Server::start(&root, &["--allow-put", "--allow-anonymous-put"]);
    let source = dir.path().join("up.bin");
    let original = content(20_000, 6);
    std::fs::write(&source, &original).unwrap();
    let out = run_client(&[
        "put",
        source.to_str().unwrap(),
        &server.url("up.bin"),
        "--json",
        "--repeat",
        "2",
        &server.pin(),
    ]);
    let reports = reports(&expect_success(&out));
    assert_eq!(reports[1]["tls_resumed"], true);
    assert_eq!(reports[1]["zero_rtt_bytes"], 0);
    assert_eq!(std::fs::read(root.join("up.bin")).unwrap(), original);
}

/// `sift-client get --reconnect` of three hq-interop files (`https://`)
/// from a fresh server: the files served, the files downloaded, and the
/// reports (one per connection).
fn reconnected_get(
    name: &str,
    client_flags: &[&str],
) -> (Vec<Vec<u8>>, Vec<Vec<u8>>, Vec<serde_json::Value>) {
    let dir = TestDir::new(name);
    let root = dir.subdir("root");
    let names = ["a.bin", "b.bin", "c.bin"];
    let originals: Vec<Vec<u8>> = (0..names.len() as u64)
        .map(|seed| content(40_000, 10 + seed))
        .collect();
    for (name, original) in names.iter().zip(&originals) {
        std::fs::write(root.join(name), original).unwrap();
    }
    let server = Server::start(&root, &[]);
    let out_dir = dir.subdir("out");
    let urls: Vec<String> = names
        .iter()
        .map(|name| server.url(name).replacen("sift://", "https://", 1))
        .collect();
    let pin = server.pin();
    let mut args: Vec<&str> = vec!["get"];
    args.extend(urls.iter().map(String::as_str));
    args.extend([
        "--output-dir",
        out_dir.to_str().unwrap(),
        "--json",
        "--reconnect",
    ]);
    args.extend_from_slice(client_flags);
    args.push(&pin);
    let reports = reports(&expect_success(&run_client(&args)));
    let downloaded = names
        .iter()
        .map(|name| std::fs::read(out_dir.join(name)).unwrap())
        .collect();
    (originals, downloaded, reports)
}

#[test]
fn reconnect_fetches_the_first_file_then_the_rest_over_a_resumed_connection_in_zero_rtt() {
    let (originals, downloaded, reports) = reconnected_get("reconnect-0rtt", &[]);
    assert_eq!(downloaded, originals);
    assert_eq!(reports.len(), 2, "one report per connection");
    let files = |report: &serde_json::Value| report["files"].as_array().unwrap().len();
    assert_eq!((files(&reports[0]), files(&reports[1])), (1, 2));
    assert_eq!(reports[0]["tls_resumed"], false);
    assert_eq!(reports[1]["tls_resumed"], true);
    // The server took the early data; whether the requests made it into
    // 0-RTT packets before the handshake ended is a race on loopback.
    assert_eq!(reports[1]["zero_rtt"], "accepted");
}

#[test]
fn reconnect_without_0rtt_resumes_and_waits_for_the_handshake() {
    let (originals, downloaded, reports) = reconnected_get("reconnect-no-0rtt", &["--no-0rtt"]);
    assert_eq!(downloaded, originals);
    assert_eq!(reports[1]["tls_resumed"], true);
    assert_eq!(reports[1]["zero_rtt"], "none");
    assert_eq!(reports[1]["zero_rtt_bytes"], 0);
}

#[test]
fn reconnect_needs_two_urls() {
    let out = run_client(&["get", "https://127.0.0.1:9/a.bin", "--reconnect"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--reconnect needs two URLs"), "{stderr}");
}

#[test]
fn a_repeated_get_from_a_server_without_early_data_arrives_byte_exact() {
    // Its tickets allow no early data, so nothing is sent in 0-RTT.
    let (original, downloaded, reports) =
        repeated_get("resume-server-no-0rtt", 100_000, 8, &["--no-0rtt"], &[]);
    assert_eq!(reports[1]["tls_resumed"], true);
    assert_eq!(reports[1]["zero_rtt"], "none");
    assert_eq!(downloaded, original);
}

#[test]
fn a_repeated_get_whose_zero_rtt_is_rejected_is_sent_again_and_arrives_byte_exact() {
    let dir = TestDir::new("resume-0rtt-rejected");
    let root = dir.subdir("root");
    let original = content(300_000, 9);
    std::fs::write(root.join("data.bin"), &original).unwrap();
    let (first, _then, relay) = restarted_servers(&dir, &root);
    let dest = dir.path().join("out.bin");
    let url = format!("sift://{relay}/data.bin");
    let out = run_client(&[
        "get",
        &url,
        "-o",
        dest.to_str().unwrap(),
        "--json",
        "--repeat",
        "2",
        &first.pin(),
    ]);
    let reports = reports(&expect_success(&out));
    assert_eq!(reports.len(), 2, "one report per connection");
    // The restarted server knew no ticket: no resumption, 0-RTT refused.
    assert_eq!(reports[1]["tls_resumed"], false);
    assert_eq!(reports[1]["zero_rtt"], "rejected");
    assert!(reports[1]["zero_rtt_bytes"].as_u64().unwrap() > 0);
    assert_eq!(reports[1]["sha256"], reports[0]["sha256"]);
    assert!(std::fs::read(&dest).unwrap() == original, "not byte-exact");
}

#[test]
fn hq_requests_whose_zero_rtt_is_rejected_are_sent_again_and_arrive_byte_exact() {
    let dir = TestDir::new("reconnect-0rtt-rejected");
    let root = dir.subdir("root");
    let names = ["a.bin", "b.bin", "c.bin"];
    let originals: Vec<Vec<u8>> = (0..names.len() as u64)
        .map(|seed| content(40_000, 20 + seed))
        .collect();
    for (name, original) in names.iter().zip(&originals) {
        std::fs::write(root.join(name), original).unwrap();
    }
    let (first, _then, relay) = restarted_servers(&dir, &root);
    let out_dir = dir.subdir("out");
    let urls: Vec<String> = names
        .iter()
        .map(|name| format!("https://{relay}/{name}"))
        .collect();
    let pin = first.pin();
    let mut args: Vec<&str> = vec!["get"];
    args.extend(urls.iter().map(String::as_str));
    args.extend([
        "--output-dir",
        out_dir.to_str().unwrap(),
        "--json",
        "--reconnect",
        &pin,
    ]);
    let reports = reports(&expect_success(&run_client(&args)));
    assert_eq!(reports.len(), 2, "one report per connection");
    assert_eq!(reports[1]["zero_rtt"], "rejected");
    assert_eq!(reports[1]["files"].as_array().unwrap().len(), 2);
    for (name, original) in names.iter().zip(&originals) {
        let downloaded = std::fs::read(out_dir.join(name)).unwrap();
        assert!(downloaded == *original, "{name} not byte-exact");
    }
}

#[test]
fn a_repeated_listing_whose_zero_rtt_is_rejected_is_asked_again() {
    let dir = TestDir::new("list-0rtt-rejected");
    let root = dir.subdir("root");
    std::fs::write(root.join("data.bin"), content(1_000, 30)).unwrap();
    let (first, _then, relay) = restarted_servers(&dir, &root);
    let url = format!("sift://{relay}/");
    let out = run_client(&["ls", &url, "--repeat", "2", &first.pin()]);
    let stdout = expect_success(&out);
    assert_eq!(stdout.matches("data.bin").count(), 2, "{stdout}");
}
