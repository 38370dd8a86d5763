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
        let out = run_client(&["get", url, "--insecure-null-crypto"]);
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
    let out = run_client(&[
        "get",
        &url,
        "-o",
        dest.to_str().unwrap(),
        "--insecure-null-crypto",
    ]);
    let error = expect_one_line_error(&out);
    let expected = format!("no answer from {} within 10s", silent.local_addr().unwrap());
    assert!(error.contains(&expected), "{error}");
}

#[test]
fn both_binaries_refuse_to_run_without_insecure_null_crypto() {
    let dir = TestDir::new("noflag");
    let out = run_bounded(
        Command::new(SERVER)
            .args(["--listen", "127.0.0.1:0", "--root"])
            .arg(dir.path()),
    );
    let error = expect_one_line_error(&out);
    assert!(error.contains("--insecure-null-crypto"), "{error}");
    assert!(
        stdout_of(&out).is_empty(),
        "the server must not start listening"
    );

    let out = run_client(&["get", "sift://127.0.0.1:4433/f"]);
    let error = expect_one_line_error(&out);
    assert!(error.contains("--insecure-null-crypto"), "{error}");
}

#[test]
fn with_the_flag_both_say_loudly_that_nothing_is_protected() {
    let dir = TestDir::new("warning");
    std::fs::write(dir.path().join("f"), b"x").unwrap();
    let server = Server::start(dir.path(), &[]);
    let out = run_client(&["ls", &server.url(""), "--insecure-null-crypto"]);
    expect_success(&out);
    assert!(stderr_of(&out).contains(
        "warning: Null protection: no encryption, no authentication — for experiments only"
    ));
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
        "--insecure-null-crypto",
    ]);
    let error = expect_one_line_error(&out);
    assert!(error.contains("not found"), "{error}");
    assert_eq!(std::fs::read_dir(&local).unwrap().count(), 0);
}

#[test]
fn an_unknown_controller_is_named() {
    let out = run_client(&[
        "get",
        "sift://127.0.0.1/f",
        "--cc",
        "bbr",
        "--insecure-null-crypto",
    ]);
    assert!(!out.status.success());
    let stderr = stderr_of(&out);
    assert!(
        stderr.contains("unknown congestion controller \"bbr\""),
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
