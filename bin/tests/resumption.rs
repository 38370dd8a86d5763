//! Session resumption and 0-RTT between the real binaries on loopback:
//! `sift-client --repeat` resumes its first connection's TLS session and
//! sends its request in 0-RTT; a server or client with tickets off makes
//! full handshakes. Files arrive byte-exact either way.

mod common;

use common::{content, expect_success, json_report, run_client, Server, TestDir};

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
