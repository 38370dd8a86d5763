//! Connection statistics: counters and estimates, serde for reports.

use serde::{Deserialize, Serialize};
use sift_cc::Metrics;

/// Counters kept directly by the connection.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Counters {
    pub packets_sent: u64,
    pub packets_received: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
    pub retransmitted_packets: u64,
    pub header_corrupt_dropped: u64,
    pub damaged_headers_repaired: u64,
    pub payload_corrupt_received: u64,
    pub corruption_notices_sent: u64,
    pub malformed_dropped: u64,
    pub duplicate_packets: u64,
    pub undecryptable_dropped: u64,
    pub one_rtt_held: u64,
    /// Openings that failed authentication under Handshake or 1-RTT keys
    /// (a header tag, a payload tag, or a rebuilt header's try), counted
    /// against the cipher's integrity limit.
    pub authentication_failures: u64,
    pub keep_alives_sent: u64,
    pub early_crypto_resends: u64,
    pub checksum_free_datagrams: u64,
    pub datagrams_dropped: u64,
    pub path_responses_withheld: u64,
}

/// A snapshot of a connection, for `--json`, reports and logs. Field names
/// are stable: they may be added to, never renamed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Packets sent, all spaces.
    pub packets_sent: u64,
    /// Packets received intact.
    pub packets_received: u64,
    /// UDP payload bytes sent.
    pub bytes_sent: u64,
    /// UDP payload bytes received.
    pub bytes_received: u64,
    /// Packets declared lost (loss detection or timeout).
    pub packets_lost: u64,
    /// Packets whose content was queued again after loss or corruption.
    pub retransmitted_packets: u64,
    /// Probe timeouts fired.
    pub ptos: u64,
    /// Window reductions.
    pub congestion_events: u64,
    /// Packets acknowledged after they were declared lost (reordering).
    #[serde(default)]
    pub spurious_losses: u64,
    /// Window reductions undone because all their losses proved spurious.
    #[serde(default)]
    pub undone_congestion_events: u64,
    /// The packet threshold of loss detection in force (3, widened by
    /// reordering).
    #[serde(default)]
    pub packet_threshold: u64,
    /// The reordering window (RACK.reo_wnd) in force, microseconds.
    #[serde(default)]
    pub reordering_window_us: u64,
    /// Our packets the peer reported corrupted (applied notices).
    pub corruption_notices_received: u64,
    /// Packet numbers in CORRUPTED frames that named nothing outstanding.
    pub corruption_notices_ignored: u64,
    /// Packets named corrupted beyond the corruption budget, or after the
    /// peer was caught naming a packet number we skipped: counted as lost.
    #[serde(default)]
    pub corruption_notices_over_budget: u64,
    /// The peer named a skipped packet number as corrupted: all its
    /// notices count as losses.
    #[serde(default)]
    pub corruption_notices_distrusted: bool,
    /// 1-RTT packet numbers we left unused (RFC 9000 §21.4).
    #[serde(default)]
    pub packet_numbers_skipped: u64,
    /// Times the peer moved to another address (connection migration).
    #[serde(default)]
    pub peer_migrations: u64,
    /// Client: the server asked us to prove our address with a Retry
    /// before it accepted the connection (no valid NEW_TOKEN token).
    #[serde(default)]
    pub retried: bool,
    /// The TLS handshake resumed an earlier session with a ticket.
    #[serde(default)]
    pub resumed: bool,
    /// The server read the client's 0-RTT data.
    #[serde(default)]
    pub zero_rtt_accepted: bool,
    /// Client: it offered 0-RTT and the server refused it: every stream
    /// opened before the handshake completed was reset, unread by the
    /// server, for the application to send again (RFC 9001 §4.6.2).
    #[serde(default)]
    pub zero_rtt_rejected: bool,
    /// Stream bytes sent (client) or received (server) in 0-RTT packets.
    #[serde(default)]
    pub zero_rtt_bytes: u64,
    /// 0-RTT packets sent (client) or opened (server).
    #[serde(default)]
    pub zero_rtt_packets: u64,
    /// Times we moved to another of the peer's connection IDs (after an
    /// address change, or when the peer retired ours).
    #[serde(default)]
    pub connection_id_switches: u64,
    /// New peer addresses validated by an echoed PATH_CHALLENGE.
    #[serde(default)]
    pub paths_validated: u64,
    /// New peer addresses that never echoed our challenge (the connection
    /// went back to the previous one where it could).
    #[serde(default)]
    pub paths_abandoned: u64,
    /// PATH_RESPONSEs to a probing address not sent: they did not fit
    /// three times what came from there (RFC 9000 §8), or no unused
    /// connection ID of the peer's was left for that path (§9.5).
    #[serde(default)]
    pub path_responses_withheld: u64,
    /// The connection runs on the server's preferred address (RFC 9000
    /// §9.6): a client that moved there, a server that sends from it.
    #[serde(default)]
    pub on_preferred_address: bool,
    /// CORRUPTED frames we sent.
    pub corruption_notices_sent: u64,
    /// Packets we received with a good header and a bad payload.
    pub payload_corrupt_received: u64,
    /// Packets dropped because their header tag failed.
    pub header_corrupt_dropped: u64,
    /// Packets whose header failed its tag but whose payload opened under
    /// the header the receiver rebuilt for them (not counted as dropped).
    #[serde(default)]
    pub damaged_headers_repaired: u64,
    /// Datagrams or packets that did not parse.
    pub malformed_dropped: u64,
    /// 1-RTT packets that arrived before the handshake completed, held
    /// unread and received once it had (RFC 9001 §5.7).
    #[serde(default)]
    pub one_rtt_held: u64,
    /// Both sides offered corruption notices.
    pub corruption_notices_negotiated: bool,
    /// The version the connection runs: "sift/1" (split tags, corruption
    /// notices possible) or "QUIC v1" (any QUIC peer; no notices).
    #[serde(default)]
    pub version: String,
    /// The AEAD the TLS handshake settled on (`aes128`, `aes256`,
    /// `chacha20`); empty before it has, and under Null protection.
    #[serde(default)]
    pub cipher: String,
    /// Datagrams sent without a UDP checksum, so that corruption could
    /// reach the peer (only after the path lost or damaged a packet).
    #[serde(default)]
    pub checksum_free_datagrams: u64,
    /// Received packets (and header repair's tries) that failed
    /// authentication under Handshake or 1-RTT keys: damaged on the path,
    /// or forged. Past the cipher's integrity limit the connection closes.
    #[serde(default)]
    pub authentication_failures: u64,
    /// 1-RTT key updates (RFC 9001 §6), initiated by either side.
    #[serde(default)]
    pub key_updates: u64,
    /// Keep-alive PINGs sent because the peer had gone quiet.
    #[serde(default)]
    pub keep_alives_sent: u64,
    /// Handshake flights sent again before their probe timeout because the
    /// peer's own probe showed it was missing them (RFC 9002 §6.2.3).
    #[serde(default)]
    pub early_crypto_resends: u64,
    /// The largest datagram (UDP payload) sent now, bytes: where path MTU
    /// discovery settled, or `Config::max_datagram_size` with it off.
    #[serde(default)]
    pub max_datagram_size: u64,
    /// Unreliable datagrams (RFC 9221) dropped unsent: queued for a larger
    /// packet than the path took by the time they could leave.
    #[serde(default)]
    pub datagrams_dropped: u64,
    /// Path MTU probes sent.
    #[serde(default)]
    pub pmtu_probes_sent: u64,
    /// Path MTU probes declared lost (the path did not carry their size).
    #[serde(default)]
    pub pmtu_probes_lost: u64,
    /// Path MTU black holes detected: large packets vanished while smaller
    /// ones passed, and the size fell back to 1200 bytes.
    #[serde(default)]
    pub pmtu_black_holes: u64,
    /// Congestion window, bytes.
    pub cwnd: u64,
    /// Slow-start threshold, bytes (`u64::MAX` before the first loss).
    pub ssthresh: u64,
    /// Bytes sent and neither acknowledged nor declared lost.
    pub bytes_in_flight: u64,
    /// Bytes held in the send buffers of all streams: written by the
    /// application and not yet acknowledged (at most
    /// `StreamConfig::max_connection_send_buffer`).
    #[serde(default)]
    pub stream_send_buffered: u64,
    /// Smoothed RTT, microseconds (RFC 9002 §5.3).
    pub srtt_us: u64,
    /// Smallest RTT sample, microseconds.
    pub min_rtt_us: u64,
    /// RTT variation, microseconds (RFC 9002 §5.3).
    pub rttvar_us: u64,
    /// The controller's own view.
    pub cc: Metrics,
    /// Careful Resume (RFC 9959), when this connection resumed from a
    /// saved path state: the phase, the saved and jump windows, whether it
    /// jumped and whether it retreated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub careful_resume: Option<sift_cc::CarefulResumeStatus>,
    /// ECN (RFC 9000 §13.4): the path's validation state, the packets sent
    /// and received per codepoint, and the CE marks the peer reported.
    #[serde(default)]
    pub ecn: super::ecn::EcnStats,
    /// Erasure coding (`conn::fec`): negotiated, symbols sent and
    /// received, packets rebuilt here and at the peer.
    #[serde(default)]
    pub repair: super::fec::RepairStats,
    /// Where the sending side's time went since the handshake: busy, or
    /// held back by the window, the pacer, the peer's credit or the
    /// application.
    #[serde(default)]
    pub send_times: super::SendTimes,
}

impl Default for Stats {
    /// All counters zero, no controller state: what a connection reports
    /// before it has done anything.
    fn default() -> Self {
        Self {
            packets_sent: 0,
            packets_received: 0,
            bytes_sent: 0,
            bytes_received: 0,
            packets_lost: 0,
            retransmitted_packets: 0,
            ptos: 0,
            congestion_events: 0,
            spurious_losses: 0,
            undone_congestion_events: 0,
            packet_threshold: 0,
            reordering_window_us: 0,
            corruption_notices_received: 0,
            corruption_notices_ignored: 0,
            corruption_notices_over_budget: 0,
            corruption_notices_distrusted: false,
            packet_numbers_skipped: 0,
            peer_migrations: 0,
            retried: false,
            resumed: false,
            zero_rtt_accepted: false,
            zero_rtt_rejected: false,
            zero_rtt_bytes: 0,
            zero_rtt_packets: 0,
            connection_id_switches: 0,
            paths_validated: 0,
            paths_abandoned: 0,
            path_responses_withheld: 0,
            on_preferred_address: false,
            corruption_notices_sent: 0,
            payload_corrupt_received: 0,
            header_corrupt_dropped: 0,
            damaged_headers_repaired: 0,
            malformed_dropped: 0,
            one_rtt_held: 0,
            corruption_notices_negotiated: false,
            version: String::new(),
            cipher: String::new(),
            checksum_free_datagrams: 0,
            authentication_failures: 0,
            key_updates: 0,
            keep_alives_sent: 0,
            early_crypto_resends: 0,
            max_datagram_size: 0,
            datagrams_dropped: 0,
            pmtu_probes_sent: 0,
            pmtu_probes_lost: 0,
            pmtu_black_holes: 0,
            cwnd: 0,
            ssthresh: u64::MAX,
            bytes_in_flight: 0,
            stream_send_buffered: 0,
            srtt_us: 0,
            min_rtt_us: 0,
            rttvar_us: 0,
            careful_resume: None,
            ecn: Default::default(),
            repair: Default::default(),
            send_times: Default::default(),
            cc: Metrics {
                algorithm: String::new(),
                cwnd: 0,
                ssthresh: u64::MAX,
                phase: sift_cc::Phase::SlowStart,
                last_verdict: None,
                fields: Default::default(),
            },
        }
    }
}
