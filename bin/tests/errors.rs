//! What users see when something is wrong: one line on stderr, a non-zero
//! exit, no panic and no backtrace.

mod common;

use std::net::{IpAddr, UdpSocket};
use std::process::Command;

use common::*;

#[test]
fn a_bad_url_is_a_one_line_error() {
    for url in [
        "http://example.org/x",
        "sift:///x",
        "sift://host:99999/x",
        "sift://[::1/x",
    ] {
        let out = run_client(&["get", url, NO_KNOWN_HOSTS]);
        let error = expect_one_line_error(&out);
        assert!(error.contains("bad URL"), "{url}: {error}");
    }
}

on_both_loopbacks!(an_unreachable_server_is_no_answer_within_10s);
fn an_unreachable_server_is_no_answer_within_10s(loopback: IpAddr) {
    // A bound socket that never answers: the handshake times out.
    let silent = UdpSocket::bind((loopback, 0)).unwrap();
    let url = format!("sift://{}/f.bin", silent.local_addr().unwrap());
    let dir = TestDir::new("unreachable");
    let dest = dir.path().join("f.bin");
    let out = run_client(&["get", &url, "-o", dest.to_str().unwrap(), NO_KNOWN_HOSTS]);
    let error = expect_one_line_error(&out);
    let expected = format!("no answer from {} within 10s", silent.local_addr().unwrap());
    assert!(error.contains(&expected), "{error}");
}

#[test]
fn a_server_of_no_version_we_speak_is_named_at_once() {
    // A stand-in for a server of other versions: answers every long header
    // with Version Negotiation offering QUIC v2 and draft-29. (One that
    // offers QUIC v1, the version the client sent, is a forgery the client
    // ignores: RFC 9000 §6.2.)
    let server = UdpSocket::bind((IPV4, 0)).unwrap();
    let url = format!("sift://{}/", server.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        while let Ok((len, from)) = server.recv_from(&mut buf) {
            let Ok(header) = sift::wire::parse_long_invariant(&buf[..len]) else {
                continue;
            };
            let mut answer = Vec::new();
            sift::wire::encode_version_negotiation(
                &mut answer,
                0,
                header.dcid,
                header.scid,
                &[0x6b33_43cf, 0xff00_001d],
            )
            .unwrap();
            let _ = server.send_to(&answer, from);
        }
    });
    let started = std::time::Instant::now();
    let out = run_client(&["ls", &url, NO_KNOWN_HOSTS]);
    let error = expect_one_line_error(&out);
    assert!(
        error.contains("the server speaks none of our versions: it offers QUIC v2, 0xff00001d"),
        "{error}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

#[test]
fn null_and_tls_ends_both_fail_at_once_saying_who_asked_for_what() {
    let dir = TestDir::new("mismatch");
    std::fs::write(dir.path().join("f"), b"x").unwrap();
    for (server_flags, client_flag, message) in [
        (
            &["--insecure-null-crypto"][..],
            NO_KNOWN_HOSTS,
            "protection mismatch: the client asked for TLS 1.3, the server requires Null protection (insecure)",
        ),
        (
            &[][..],
            "--insecure-null-crypto",
            "protection mismatch: the client asked for Null protection (insecure), the server requires TLS 1.3",
        ),
    ] {
        let server = Server::start(dir.path(), server_flags);
        let out = run_client(&["ls", &server.url(""), client_flag]);
        let error = expect_one_line_error(&out);
        assert!(error.contains(message), "{error}");
        let logged = wait_for_line(&server.stderr, "the server's mismatch line", |l| {
            l.contains("protection mismatch")
        });
        assert!(logged.contains(message), "{logged}");
    }
}

#[test]
fn with_the_flag_both_say_loudly_that_nothing_is_protected() {
    let dir = TestDir::new("warning");
    std::fs::write(dir.path().join("f"), b"x").unwrap();
    let server = Server::start(dir.path(), &["--insecure-null-crypto"]);
    assert!(server.fingerprint.is_empty(), "no identity under Null");
    let out = run_client(&["ls", &server.url(""), "--insecure-null-crypto"]);
    expect_success(&out);
    let warning =
        "warning: --insecure-null-crypto: Null protection, no encryption, no authentication";
    assert!(stderr_of(&out).contains(warning), "{}", stderr_of(&out));
    wait_for_line(&server.stderr, "the server's warning", |l| {
        l.contains(warning)
    });
}

#[test]
fn a_missing_file_is_not_found_and_leaves_nothing_behind() {
    let dir = TestDir::new("notfound");
    let root = dir.subdir("root");
    let local = dir.subdir("local");
    let server = Server::start(&root, &[]);
    let dest = local.join("nope.bin");
    let out = run_client(&[
        "get",
        &server.url("nope.bin"),
        "-o",
        dest.to_str().unwrap(),
        &server.pin(),
    ]);
    let error = expect_one_line_error(&out);
    assert!(error.contains("not found"), "{error}");
    assert_eq!(std::fs::read_dir(&local).unwrap().count(), 0);
}

#[test]
fn an_output_that_is_a_directory_takes_the_file_under_its_name() {
    let dir = TestDir::new("output-dir");
    let root = dir.subdir("root");
    let local = dir.subdir("local");
    std::fs::write(root.join("f.bin"), content(50_000, 3)).unwrap();
    let server = Server::start(&root, &[]);
    // An existing directory, with or without its slash, over either
    // protocol.
    for (url, output) in [
        (server.url("f.bin"), local.to_str().unwrap().to_string()),
        (
            server.url("f.bin").replacen("sift://", "https://", 1),
            format!("{}/", local.join("hq").display()),
        ),
    ] {
        if output.ends_with("hq/") {
            std::fs::create_dir(local.join("hq")).unwrap();
        }
        expect_success(&run_client(&["get", &url, "-o", &output, &server.pin()]));
    }
    assert_eq!(
        std::fs::read(local.join("f.bin")).unwrap(),
        content(50_000, 3)
    );
    assert_eq!(
        std::fs::read(local.join("hq/f.bin")).unwrap(),
        content(50_000, 3)
    );
    let names: Vec<_> = std::fs::read_dir(&local)
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "no part file left: {names:?}");
    // A directory that is not there fails before dialing, in one line.
    for output in ["missing/", "missing/f.bin"] {
        let missing = local.join(output);
        let out = run_client(&[
            "get",
            "sift://127.0.0.1:9/f.bin",
            "-o",
            missing.to_str().unwrap(),
            NO_KNOWN_HOSTS,
        ]);
        let error = expect_one_line_error(&out);
        assert!(error.contains("missing does not exist"), "{error}");
    }
}

#[test]
fn an_unknown_controller_is_named() {
    let out = run_client(&["get", "sift://127.0.0.1/f", "--cc", "bbr3", NO_KNOWN_HOSTS]);
    assert!(!out.status.success());
    let stderr = stderr_of(&out);
    assert!(
        stderr.contains("unknown congestion controller \"bbr3\""),
        "{stderr}"
    );
}

#[test]
fn help_shows_examples_for_every_subcommand() {
    for args in [
        &["--help"][..],
        &["get", "--help"],
        &["put", "--help"],
        &["ls", "--help"],
        &["perf", "--help"],
    ] {
        let out = run_client(args);
        assert!(stdout_of(&out).contains("Example"), "{args:?}");
    }
    let out = run_bounded(Command::new(SERVER).arg("--help"));
    assert!(stdout_of(&out).contains("Examples"));
}
