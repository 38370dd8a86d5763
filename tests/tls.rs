//! TLS 1.3 end to end on the simulator (issue 11): the handshake survives
//! loss and corruption, key updates keep long transfers exact, and the split
//! tags under AEAD classify damage exactly as Null mode's CRCs do.
//!
//! Fixed seeds throughout; handshake contents vary (TLS randomness), but
//! sizes do not (Ed25519 signatures, X25519 shares), so runs repeat.

mod support;

use sift::sim::Scenario;
use support::{assert_all_complete_and_exact, run, scenario, simulate};

/// One flow of `bytes` over a 10 ms path with `forward` / `reverse`
/// impairments; `extra` adds flow keys.
fn tls_flow(forward: &str, reverse: &str, bytes: u64, extra: &str) -> Scenario {
    scenario(&format!(
        r#"
name = "tls"
time_limit_s = 600
[bottleneck]
forward = "delay 10ms rate 20mbit {forward}"
reverse = "delay 10ms rate 20mbit {reverse}"
[[flow]]
cc = "cubic"
bytes = {bytes}
protection = "tls"
{extra}
"#
    ))
}

#[test]
fn handshake_completes_under_heavy_loss_and_corruption_on_several_seeds() {
    for (forward, reverse) in [
        ("", ""),
        ("loss 10%", "loss 10%"),
        ("loss 30%", "loss 30%"),
        ("corrupt 2%", "corrupt 2%"),
    ] {
        let link = tls_flow(forward, reverse, 30_000, "");
        for seed in 1..=4 {
            let report = run(&link, seed);
            assert_all_complete_and_exact(&report);
            let flow = &report.flows[0];
            // Both ends ran the TLS handshake: their stats count the same
            // packets as Null mode would, and the transfer needed 1-RTT keys.
            assert!(
                flow.server_stats.packets_received > 0,
                "{forward}, seed {seed}"
            );
        }
    }
}

#[test]
fn forced_key_updates_every_300_packets_keep_20_mb_byte_exact() {
    let link = tls_flow(
        "loss 0.5% corrupt 0.5%",
        "loss 0.5%",
        20_000_000,
        "key_update_interval = 300",
    );
    let report = run(&link, 3);
    assert_all_complete_and_exact(&report);
    let flow = &report.flows[0];
    let (client, server) = (&flow.client_stats, &flow.server_stats);
    // 20 MB is about 15,000 full packets from the client: one update per
    // 300 of them is about 50, and the server follows every one.
    assert!(client.key_updates >= 40, "{} updates", client.key_updates);
    assert!(
        client.key_updates.abs_diff(server.key_updates) <= 1,
        "client saw {} updates, server {}",
        client.key_updates,
        server.key_updates
    );
    assert!(flow.corruption_notices_received > 0, "notices still work");
}

/// The same link and seed under Null and under TLS. The TLS flow's datagrams
/// are 12 bytes larger (a 16-byte AEAD tag instead of a 4-byte CRC), so both
/// carry the same frames in about the same packets; the link has no rate
/// limit and pacing is off, so sizes do not move timings either. Bits are
/// aimed at the header or at the payload: with `corrupt-where any` a flip's
/// region would depend on the packet's size, which is the one thing the
/// modes do not share. Then every damaged packet is classified the same way
/// in both runs, and the counts a user sees must agree. The receiver drops
/// damaged headers as HACK's does (`repair_damaged_headers = false`): whether
/// one could be named depends on whether it failed its tag or its parse,
/// which the modes do not share (below); naming is tested in
/// `tests/corruption.rs`.
#[test]
fn corruption_counts_under_tls_equal_those_under_null() {
    let link = |region: &str, protection: &str, datagram: usize| {
        scenario(&format!(
            r#"
name = "same-damage"
[bottleneck]
forward = "delay 15ms corrupt 2% corrupt-where {region}"
reverse = "delay 15ms corrupt 2% corrupt-where payload"
[[flow]]
cc = "reno"
bytes = 2_000_000
protection = "{protection}"
max_datagram_size = {datagram}
pmtud = false
recovery = {{ pacing = false }}
repair_damaged_headers = false
"#
        ))
    };
    // The data direction's damage and what both ends made of it. (The
    // acknowledgement direction is damaged too, but how many of its packets
    // arrive after the client is done differs with the handshake's bytes.)
    // A damaged header is dropped either as failing its tag or as not
    // parsing at all (a flipped length bit that points past the datagram):
    // which one depends on the length's bits, which differ by the tag
    // sizes, so the two are counted together.
    let counts = |report: &sift::sim::RunReport| {
        let flow = &report.flows[0];
        let (client, server) = (&flow.client_stats, &flow.server_stats);
        let link = &report.links.forward;
        (
            [
                link.corrupted,
                link.corrupted_header,
                link.corrupted_payload,
            ],
            [
                server.payload_corrupt_received,
                server.header_corrupt_dropped + server.malformed_dropped,
            ],
            [
                client.corruption_notices_received,
                client.corruption_notices_ignored,
            ],
        )
    };
    for region in ["payload", "header"] {
        for seed in 1..=3 {
            let null = simulate(&link(region, "null", 1350), seed).report();
            let tls = simulate(&link(region, "tls", 1362), seed).report();
            assert_all_complete_and_exact(&null);
            assert_all_complete_and_exact(&tls);
            assert_eq!(counts(&tls), counts(&null), "{region}, seed {seed}");
            // How many ACKs carry those notices depends on when the server
            // has something else to send, such as a NEW_CONNECTION_ID again
            // after the reverse link damaged it; which reverse packets are
            // damaged shifts with the handshake's packet count, which the
            // modes do not share. So CORRUPTED frames agree only nearly.
            let frames = |report: &sift::sim::RunReport| {
                report.flows[0].server_stats.corruption_notices_sent
            };
            assert!(
                frames(&tls).abs_diff(frames(&null)) <= 2,
                "{region}, seed {seed}: {} CORRUPTED frames under TLS, {} under Null",
                frames(&tls),
                frames(&null)
            );
            let (forward, server, _) = counts(&tls);
            let damaged = if region == "payload" {
                server[0]
            } else {
                server[1]
            };
            assert!(damaged > 10, "{region}, seed {seed}: {server:?}");
            // Every payload hit is noticed; every header hit is dropped
            // (malformed_dropped also counts packets that came before their
            // keys, hence at least).
            if region == "payload" {
                assert_eq!(damaged, forward[0], "{region}, seed {seed}: each one seen");
            } else {
                assert!(
                    damaged >= forward[0],
                    "{region}, seed {seed}: each one dropped"
                );
                assert_eq!(
                    frames(&tls),
                    0,
                    "{region}, seed {seed}: no notice for a bad header"
                );
            }
        }
    }
}
