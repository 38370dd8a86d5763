//! sift-demo: one command, no arguments needed, a verified transfer through
//! a lossy, corrupting link.

mod common;

use std::net::IpAddr;
use std::process::Command;

use common::*;

const DEMO: &str = env!("CARGO_BIN_EXE_sift-demo");

on_both_loopbacks!(the_demo_moves_a_file_through_a_lossy_corrupting_link_and_verifies_it);
fn the_demo_moves_a_file_through_a_lossy_corrupting_link_and_verifies_it(loopback: IpAddr) {
    // A smaller file and a shorter delay than the defaults keep the test
    // quick; an Ethernet-sized MTU keeps loopback's path MTU discovery from
    // carrying the file in a few dozen 9000-byte datagrams.
    let mut demo = Command::new(DEMO);
    demo.args([
        "--size",
        "400000",
        "--link",
        "delay 5ms loss 2% corrupt 5% mtu 1500",
        "--json",
    ]);
    if loopback.is_ipv6() {
        demo.arg("--ipv6");
    }
    let out = run_bounded(&mut demo);
    let report = json_report(&expect_success(&out));
    assert_eq!(report["flow"]["bytes"], 400_000);
    assert_eq!(report["flow"]["sha256"].as_str().unwrap().len(), 64);
    let reverse = &report["link"]["reverse"];
    assert!(reverse["offered"].as_u64().unwrap() > 200, "{reverse}");
    assert!(
        !stderr_of(&out).contains("warning"),
        "the demo runs under TLS: {}",
        stderr_of(&out)
    );
    // Corrupted datagrams were delivered and named (over IPv6 too, where
    // sift's zero-checksum datagrams need the relay to accept them).
    assert!(reverse["corrupted"].as_u64().unwrap() > 0, "{reverse}");
    let notices = report["flow"]["corruption_notices_received"].as_u64();
    assert!(notices.unwrap_or(0) > 0, "{report}");
}

#[test]
fn a_bad_link_spec_is_a_one_line_error() {
    let out = run_bounded(Command::new(DEMO).args(["--link", "delay 25ms lossy 1%"]));
    let error = expect_one_line_error(&out);
    assert!(error.contains("lossy"), "{error}");
}
