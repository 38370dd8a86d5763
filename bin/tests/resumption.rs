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

#[test]
fn a_repeated_get_resumes_and_sends_its_request_in_zero_rtt() {
    let dir = TestDir::new("resume-0rtt");
    let root = dir.subdir("root");
    let original = content(300_000, 3);
    std::fs::write(root.join("data.bin"), &original).unwrap();
    let server = Server::start(&root, &[]);
    let dest = dir.path().join("out.bin");
    let out = run_client(&[
        "get",
        &server.url("data.bin"),
        "-o",
        dest.to_str().unwrap(),
        "--json",
        "--repeat",
        "2",
        &server.pin(),
    ]);
    let reports = reports(&expect_success(&out));
    assert_eq!(reports.len(), 2, "one report per connection");
    assert_eq!(std::fs::read(&dest).unwrap(), original);
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
    let dir = TestDir::new("resume-off");
    let root = dir.subdir("root");
    std::fs::write(root.join("data.bin"), content(10_000, 4)).unwrap();
    let server = Server::start(&root, &["--no-session-tickets"]);
    let dest = dir.path().join("out.bin");
    let out = run_client(&[
        "get",
        &server.url("data.bin"),
        "-o",
        dest.to_str().unwrap(),
        "--json",
        "--repeat",
        "2",
        &server.pin(),
    ]);
    for report in reports(&expect_success(&out)) {
        assert_eq!(report["tls_resumed"], false);
        assert_eq!(report["zero_rtt"], "none");
    }
}

#[test]
fn no_0rtt_resumes_but_sends_nothing_early() {
    let dir = TestDir::new("resume-no-0rtt");
    let root = dir.subdir("root");
    let original = content(10_000, 5);
    std::fs::write(root.join("data.bin"), &original).unwrap();
    let server = Server::start(&root, &[]);
    let dest = dir.path().join("out.bin");
    let out = run_client(&[
        "get",
        &server.url("data.bin"),
        "-o",
        dest.to_str().unwrap(),
        "--json",
        "--repeat",
        "2",
        "--no-0rtt",
        &server.pin(),
    ]);
    let reports = reports(&expect_success(&out));
    assert_eq!(reports[1]["tls_resumed"], true);
    assert_eq!(reports[1]["zero_rtt"], "none");
    assert_eq!(reports[1]["zero_rtt_bytes"], 0);
    assert_eq!(std::fs::read(&dest).unwrap(), original);
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
