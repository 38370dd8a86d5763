//! Issue 4: links that deliver packets with flipped bits, end to end on the
//! simulator. sift's split integrity tags let a receiver name a packet whose
//! header survived and whose payload did not (a CORRUPTED frame); the sender
//! resends it without treating it as congestion (TCP HACK, Balan et al.
//! 2002). These tests pin what a user of a lossy radio link would notice:
//! the transfer stays byte-exact, the window is not cut for corruption, the
//! fallbacks never stall, and notices pay off.
//!
//! Fixed seeds throughout: every number repeats exactly.

mod support;

use sift::sim::link::Fate;
use sift::sim::{Direction, Scenario, Simulation};
use support::{
    assert_all_complete_and_exact, delivered_goodput_bps, longest_stall_s, mean, run, scenario,
    simulate,
};

/// A 10 Mb/s path, 10 ms each way, a queue deep enough never to overflow
/// for these transfers, corruption `corrupt` on the data direction only and
/// `reverse_loss` on the acknowledgement direction; one Reno transfer of
/// `bytes` with notices `notices`.
fn corrupting_link(corrupt: &str, reverse_loss: &str, notices: bool, bytes: u64) -> Scenario {
    scenario(&format!(
        r#"
name = "corrupting-link"
time_limit_s = 600
[bottleneck]
forward = "delay 10ms rate 10mbit {corrupt}"
reverse = "delay 10ms rate 10mbit {reverse_loss}"
[[flow]]
cc = "reno"
bytes = {bytes}
corruption_notices = {notices}
"#
    ))
}

/// Client → server datagrams the link delivered with flipped bits only in
/// the payload, counting only full-size (data-carrying) ones: these are
/// the packets a CORRUPTED frame can name while they are still outstanding.
fn payload_corrupted_data_packets(simulation: &Simulation, min_size: usize) -> u64 {
    simulation
        .ground_truth()
        .records()
        .iter()
        .filter(|record| {
            record.direction == Direction::Forward
                && record.size >= min_size
                && record.fate
                    == Some(Fate::Corrupted {
                        header: false,
                        payload: true,
                    })
        })
        .count() as u64
}

/// Smallest datagram counted as a data packet: sift fills datagrams to
/// `max_datagram_size` (1350 by default) while it has data to send.
const DATA_PACKET_MIN_BYTES: usize = 1200;

/// A clean link apart from a handful of payload corruptions: each damaged
/// packet is named by the receiver, resent once, and costs no window. A
/// user would see Reno back off on a link that loses nothing if this broke.
#[test]
fn a_corrupted_payload_is_resent_once_without_a_window_cut() {
    let link = corrupting_link("corrupt 0.5% corrupt-where payload", "", true, 1_000_000);
    let simulation = simulate(&link, 1);
    let report = simulation.report();
    assert_all_complete_and_exact(&report);
    let flow = &report.flows[0];
    let corrupted = payload_corrupted_data_packets(&simulation, DATA_PACKET_MIN_BYTES);
    assert!(
        (3..=20).contains(&corrupted),
        "a handful of corruptions, got {corrupted}"
    );
    assert_eq!(report.links.forward.corrupted_header, 0);
    let client = &flow.client_stats;
    assert!(client.corruption_notices_negotiated);
    assert_eq!(client.corruption_notices_received, corrupted);
    assert_eq!(
        client.retransmitted_packets, corrupted,
        "each corrupted packet is resent exactly once"
    );
    assert_eq!(client.packets_lost, 0, "nothing was lost, only corrupted");
    assert_eq!(client.congestion_events, 0, "corruption is not congestion");
    // No queue ever filled, so nothing may shrink the window.
    let windows: Vec<u64> = flow.timeseries.iter().map(|s| s.cwnd).collect();
    assert!(
        windows.windows(2).all(|pair| pair[1] >= pair[0]),
        "cwnd shrank: {windows:?}"
    );
}

/// The path of `corrupting_link` with 1% of packets damaged in the
/// header only, a 1 MB Reno transfer with notices on, and the receiver
/// rebuilding damaged headers (`repair_damaged_headers`) or not.
fn damaged_header_link(repair_damaged_headers: bool) -> Scenario {
    let mut link = corrupting_link("corrupt 1% corrupt-where header", "", true, 1_000_000);
    link.flows[0].repair_damaged_headers = repair_damaged_headers;
    link
}

/// Flipped bits in the header, and a receiver as HACK's: the header tag
/// fails, the receiver cannot tell whose packet it was, so it drops it
/// silently and the sender finds out by loss detection, exactly as without
/// notices.
#[test]
fn with_hacks_receiver_a_corrupted_header_follows_the_loss_path() {
    let report = run(&damaged_header_link(false), 1);
    assert_all_complete_and_exact(&report);
    let flow = &report.flows[0];
    let corrupted = report.links.forward.corrupted_header;
    assert!(corrupted >= 3, "the link corrupted {corrupted} headers");
    assert_eq!(report.links.forward.corrupted_payload, 0);
    assert_eq!(flow.client_stats.corruption_notices_received, 0);
    assert_eq!(flow.server_stats.corruption_notices_sent, 0);
    assert_eq!(flow.server_stats.damaged_headers_repaired, 0);
    // A flip may break the header's parse (malformed) or only its tag; either
    // way the receiver drops the packet without naming it.
    assert_eq!(
        flow.server_stats.header_corrupt_dropped + flow.server_stats.malformed_dropped,
        corrupted
    );
    assert!(
        flow.client_stats.packets_lost > 0,
        "the dropped packets are declared lost"
    );
    assert!(flow.client_stats.congestion_events > 0);
}

/// sift's receiver rebuilds a damaged 1-RTT header (`src/conn/repair.rs`):
/// on a link that damages only headers, a packet whose payload opens under
/// the rebuilt header is kept as if it had arrived intact, so it is neither
/// resent nor a congestion signal; only a header too damaged to parse is
/// still a loss.
#[test]
fn a_damaged_header_is_rebuilt_and_its_packet_kept() {
    let report = run(&damaged_header_link(true), 1);
    assert_all_complete_and_exact(&report);
    let flow = &report.flows[0];
    let (client, server) = (&flow.client_stats, &flow.server_stats);
    let corrupted = report.links.forward.corrupted_header;
    assert!(corrupted >= 3, "the link corrupted {corrupted} headers");
    assert_eq!(
        server.damaged_headers_repaired + server.header_corrupt_dropped + server.malformed_dropped,
        corrupted
    );
    assert!(
        server.damaged_headers_repaired * 4 >= corrupted * 3,
        "{} of {corrupted} repaired ({} failed the tag, {} did not parse)",
        server.damaged_headers_repaired,
        server.header_corrupt_dropped,
        server.malformed_dropped
    );
    // Nothing to name, and only the unrepaired are lost.
    assert_eq!(client.corruption_notices_received, 0);
    assert_eq!(
        client.packets_lost,
        server.header_corrupt_dropped + server.malformed_dropped
    );
    let hack = run(&damaged_header_link(false), 1);
    assert_eq!(
        hack.flows[0].client_stats.packets_lost,
        hack.links.forward.corrupted_header
    );
}

/// The acknowledgement direction loses 40% of its packets, so some
/// CORRUPTED frames (each repeated in the next three ACK-bearing packets)
/// never arrive. Those packets must then be declared lost the usual way:
/// a user would see the transfer hang if the sender waited for a notice.
#[test]
fn a_lost_corrupted_frame_falls_back_to_loss_detection_without_a_stall() {
    let link = corrupting_link(
        "corrupt 2% corrupt-where payload",
        "loss 40%",
        true,
        3_000_000,
    );
    let simulation = simulate(&link, 1);
    let report = simulation.report();
    assert_all_complete_and_exact(&report);
    let flow = &report.flows[0];
    let corrupted = payload_corrupted_data_packets(&simulation, DATA_PACKET_MIN_BYTES);
    let notified = flow.client_stats.corruption_notices_received;
    assert!(report.links.reverse.random_losses > 0);
    assert!(
        notified < corrupted,
        "some notices must be lost for this test to mean anything: {notified} of {corrupted}"
    );
    assert!(
        flow.client_stats.packets_lost >= corrupted - notified,
        "every un-notified corrupted packet is declared lost: lost {}, un-notified {}",
        flow.client_stats.packets_lost,
        corrupted - notified
    );
    // 20 ms round trips: a stall would last a PTO backoff or the 30 s
    // idle timeout, not a fraction of a second.
    let stall = longest_stall_s(flow);
    assert!(stall < 1.0, "delivery stalled for {stall} s");
}

/// Without negotiated notices a corrupted packet is just a drop: the "no
/// HACK" baseline of every experiment. The receiver names nothing, the
/// sender declares each damaged data packet lost and backs off.
#[test]
fn with_notices_off_a_corrupted_packet_is_a_drop() {
    let link = corrupting_link("corrupt 1% corrupt-where payload", "", false, 1_000_000);
    let simulation = simulate(&link, 1);
    let report = simulation.report();
    assert_all_complete_and_exact(&report);
    let flow = &report.flows[0];
    let corrupted = payload_corrupted_data_packets(&simulation, DATA_PACKET_MIN_BYTES);
    assert!(
        corrupted >= 3,
        "the link corrupted {corrupted} data packets"
    );
    assert!(!flow.client_stats.corruption_notices_negotiated);
    assert_eq!(flow.client_stats.corruption_notices_received, 0);
    assert_eq!(flow.server_stats.corruption_notices_sent, 0);
    assert_eq!(
        flow.server_stats.payload_corrupt_received,
        report.links.forward.corrupted_payload
    );
    assert!(
        flow.client_stats.packets_lost >= corrupted,
        "lost {} of {corrupted} corrupted data packets",
        flow.client_stats.packets_lost
    );
    assert!(flow.client_stats.congestion_events > 0);
}

/// The HACK paper's long-latency (satellite-like) link, Table 1's burst
/// row: 10 Mb/s, 300 ms each way, bursts of 2–10 corrupted packets started
/// with probability 5% per packet, 256 KB transfers, classic TCP timeouts.
fn hack_burst_link(cc: &str, header_share: &str, notices: bool) -> Scenario {
    scenario(&format!(
        r#"
name = "hack-burst"
time_limit_s = 3000
[bottleneck]
forward = "delay 300ms rate 10mbit limit 100 corrupt-burst 5% 2-10 corrupt-where {header_share}"
reverse = "delay 300ms rate 10mbit limit 100"
[[flow]]
cc = {{ name = "{cc}", initial_window_packets = 2, timeout_window_packets = 1 }}
bytes = 262_144
max_datagram_size = 1460
corruption_notices = {notices}
recovery = {{ timeout = "rto", pacing = false }}
"#
    ))
}

/// Mean delivered goodput over seeds 1–3 (a burst can cost a run its
/// connection when notices are off, so a cut-off run still counts by what
/// it delivered).
fn mean_delivered_goodput(link: &Scenario) -> f64 {
    let goodputs: Vec<f64> = [1, 2, 3]
        .iter()
        .map(|&seed| {
            let report = run(link, seed);
            let flow = &report.flows[0];
            assert_eq!(flow.mismatched_bytes, 0);
            delivered_goodput_bps(flow, report.end_s)
        })
        .collect();
    mean(&goodputs)
}

/// Table 1 of the HACK paper: with bursty corruption on a long link,
/// notices win with every header-corruption share, for Reno and Veno alike.
/// Single seeds are noisy here (a transfer meets only a few bursts), so the
/// comparison uses means over three seeds.
#[test]
fn on_the_hack_burst_link_notices_beat_no_notices_for_reno_and_veno() {
    for cc in ["reno", "veno"] {
        for header_share in ["header=0%", "header=95%"] {
            let on = mean_delivered_goodput(&hack_burst_link(cc, header_share, true));
            let off = mean_delivered_goodput(&hack_burst_link(cc, header_share, false));
            println!(
                "{cc}, {header_share}: notices on {on:.0} b/s, off {off:.0} b/s, ratio {:.2}",
                on / off
            );
            assert!(on > off, "{cc} {header_share}: on {on} vs off {off}");
        }
    }
}

/// The HACK paper's random (white-noise) errors on its low-latency link:
/// 2% to 15% of packets corrupted (only payloads hit, the paper's best
/// case), 2 MB transfers. Notices may never make a transfer slower. Means
/// over three seeds per point, since one seed's corruptions land differently
/// with and without notices.
#[test]
fn under_random_corruption_from_2_to_15_percent_notices_are_never_slower() {
    for percent in [2, 5, 10, 15] {
        let corrupt = format!("corrupt {percent}% corrupt-where payload");
        let mut goodput = [0.0; 2];
        for (slot, notices) in [(0, true), (1, false)] {
            let link = corrupting_link(&corrupt, "", notices, 2_000_000);
            let goodputs: Vec<f64> = [1, 2, 3]
                .iter()
                .map(|&seed| {
                    let report = run(&link, seed);
                    assert_all_complete_and_exact(&report);
                    support::goodput_bps(&report.flows[0])
                })
                .collect();
            goodput[slot] = mean(&goodputs);
        }
        let [on, off] = goodput;
        println!(
            "{percent}% corruption: notices on {on:.0} b/s, off {off:.0} b/s, ratio {:.2}",
            on / off
        );
        assert!(on >= off, "{percent}%: on {on} vs off {off}");
    }
}
