//! sift-demo: one command, no arguments needed, a verified transfer through
//! a lossy, corrupting link.

mod common;

use std::process::Command;

use common::*;

const DEMO: &str = env!("CARGO_BIN_EXE_sift-demo");

#[test]
fn the_demo_moves_a_file_through_a_lossy_corrupting_link_and_verifies_it() {
    // A smaller file and a shorter delay than the defaults keep the test quick.
    let out = run_bounded(Command::new(DEMO).args([
        "--size",
        "300000",
        "--link",
        "delay 5ms loss 2% corrupt 2%",
        "--json",
    ]));
    let report = json_report(&expect_success(&out));
    assert_eq!(report["flow"]["bytes"], 300_000);
    assert_eq!(report["flow"]["sha256"].as_str().unwrap().len(), 64);
    let reverse = &report["link"]["reverse"];
    assert!(reverse["offered"].as_u64().unwrap() > 200, "{reverse}");
    assert!(
        !stderr_of(&out).contains("warning"),
        "the demo runs under TLS: {}",
        stderr_of(&out)
    );
}

#[test]
fn a_bad_link_spec_is_a_one_line_error() {
    let out = run_bounded(Command::new(DEMO).args(["--link", "delay 25ms lossy 1%"]));
    let error = expect_one_line_error(&out);
    assert!(error.contains("lossy"), "{error}");
}
