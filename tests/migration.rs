//! Issue 14: a client whose address changes mid-transfer (a NAT that
//! rebinds it to another port, a phone that moves to another network)
//! keeps its connection. The simulator delivers the server's datagrams to
//! the client only if they are sent to its new address, so a server that
//! did not follow would stall the transfer.

mod support;

use support::{assert_all_complete_and_exact, goodput_bps, run, scenario};

fn moving_client(when: &str, loss: &str) -> String {
    format!(
        r#"
name = "moving-client"
time_limit_s = 120
[bottleneck]
forward = "delay 20ms rate 20mbit limit 75 {loss}"
reverse = "delay 20ms rate 20mbit {loss}"
[[flow]]
cc = "cubic"
bytes = 10_000_000
{when}
"#
    )
}

#[test]
fn a_client_rebound_to_another_port_mid_transfer_finishes_byte_exact() {
    for seed in [1, 2, 3] {
        let report = run(&scenario(&moving_client("rebind_at_ms = 1500", "")), seed);
        assert_all_complete_and_exact(&report);
        let server = &report.flows[0].server_stats;
        assert_eq!(server.peer_migrations, 1, "seed {seed}");
        assert_eq!(server.paths_validated, 1, "seed {seed}");
        // The move costs little: a clean 20 Mb/s path still carries most
        // of its rate over the whole transfer.
        let goodput = goodput_bps(&report.flows[0]);
        assert!(goodput > 0.8 * 20e6, "seed {seed}: {goodput}");
    }
}

#[test]
fn a_client_that_moves_to_another_address_on_a_lossy_path_finishes_byte_exact() {
    for seed in [1, 2, 3] {
        let report = run(
            &scenario(&moving_client("new_address_at_ms = 1500", "loss 1%")),
            seed,
        );
        assert_all_complete_and_exact(&report);
        let server = &report.flows[0].server_stats;
        assert_eq!(server.peer_migrations, 1, "seed {seed}");
        assert_eq!(server.paths_validated, 1, "seed {seed}");
    }
}

#[test]
fn without_a_move_nothing_migrates() {
    let report = run(&scenario(&moving_client("", "")), 1);
    assert_all_complete_and_exact(&report);
    let server = &report.flows[0].server_stats;
    assert_eq!((server.peer_migrations, server.paths_validated), (0, 0));
}

#[test]
fn a_client_that_moves_to_a_slower_lossier_network_finishes_byte_exact() {
    // Wi-Fi to cellular: from a clean 20 ms path onto one with 60 ms more
    // each way and 2% loss towards the server.
    let text = moving_client(
        "new_address_at_ms = 1500\nnew_path = { forward = \"delay 60ms loss 2%\", reverse = \"delay 60ms\" }",
        "",
    );
    for seed in [1, 2, 3] {
        let report = run(&scenario(&text), seed);
        assert_all_complete_and_exact(&report);
        let flow = &report.flows[0];
        assert_eq!(flow.server_stats.peer_migrations, 1, "seed {seed}");
        assert_eq!(flow.server_stats.paths_validated, 1, "seed {seed}");
        // It really moved: the new path's RTT is 160 ms, not 40.
        let srtt = flow.client_stats.srtt_us;
        assert!(srtt > 120_000, "seed {seed}: srtt {srtt} us");
        assert!(flow.packets.forward.random_losses > 0, "seed {seed}");
    }
}

#[test]
fn a_new_path_needs_the_time_of_the_move() {
    let text = moving_client("new_path = { forward = \"delay 60ms\" }", "");
    let error = sift::sim::Scenario::from_toml_str(&text, "test").unwrap_err();
    assert!(
        error.to_string().contains("needs new_address_at_ms"),
        "{error}"
    );
}
