//! The test cases: the quic-interop-runner's (testcases_quic.py), each
//! with its letter, its files, the link it runs over and what its check
//! asks of the wire and of the client's report; plus sift/1-upgrade.

use std::fmt;

/// One test case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Case {
    /// A handshake and a 1 KB file.
    Handshake,
    /// A handshake over a 1.5 s round trip: the client's ClientHello goes
    /// twice before the server's answer can arrive.
    LongRtt,
    /// Several files on one connection, 10 MB among them.
    Transfer,
    /// Many small files on one connection.
    Multiplexing,
    /// The server sends a Retry; the client's next Initial carries its token.
    Retry,
    /// A second connection resumes the first's TLS session.
    Resumption,
    /// A second connection sends its requests in 0-RTT.
    ZeroRtt,
    /// An HTTP/3 transaction.
    Http3,
    /// The client offers only ChaCha20-Poly1305.
    ChaCha20,
    /// The client updates its 1-RTT keys mid-transfer.
    KeyUpdate,
    /// A transfer over IPv6.
    Ipv6,
    /// The client's port changes under a NAT mid-transfer.
    RebindPort,
    /// The client's address (IP and port) changes under a NAT mid-transfer.
    RebindAddr,
    /// The runner's connectionmigration: the server offers a preferred
    /// address (RFC 9000 §9.6) and the client moves there.
    ConnectionMigration,
    /// The client moves to a new port itself (active migration, RFC 9000
    /// §9.2): what this matrix ran as connectionmigration before.
    ActiveMigration,
    /// Handshakes through 30% loss.
    HandshakeLoss,
    /// A transfer through 2% loss.
    TransferLoss,
    /// A transfer through 2% corruption.
    TransferCorruption,
    /// Handshakes through 30% corruption.
    HandshakeCorruption,
    /// A transfer while the link goes dark 2 s in every 7 s.
    Blackhole,
    /// The server keeps to 3× what an unvalidated client sent.
    AmplificationLimit,
    /// QUIC v2 chosen by compatible version negotiation.
    V2,
    /// A download with ECN: both sides mark, ACKs carry ECN counts.
    Ecn,
    /// sift ↔ sift: start in QUIC v1, upgrade to sift/1.
    SiftUpgrade,
    /// The runner's goodput measurement: 10 MB over 10 Mb/s, five times.
    Goodput,
    /// The runner's crosstraffic measurement: 25 MB over goodput's link
    /// beside a CUBIC flow started first, five times.
    CrossTraffic,
}

/// Every case, in the table's column order.
pub const ALL: [Case; 26] = [
    Case::Handshake,
    Case::LongRtt,
    Case::Transfer,
    Case::Multiplexing,
    Case::Retry,
    Case::Resumption,
    Case::ZeroRtt,
    Case::Http3,
    Case::ChaCha20,
    Case::KeyUpdate,
    Case::Ipv6,
    Case::RebindPort,
    Case::RebindAddr,
    Case::ConnectionMigration,
    Case::ActiveMigration,
    Case::HandshakeLoss,
    Case::TransferLoss,
    Case::TransferCorruption,
    Case::HandshakeCorruption,
    Case::Blackhole,
    Case::AmplificationLimit,
    Case::V2,
    Case::Ecn,
    Case::SiftUpgrade,
    Case::Goodput,
    Case::CrossTraffic,
];

/// Number of small files of the multiplexing case.
pub const MULTIPLEXING_FILES: usize = 1000;

/// Number of files (and so of 0-RTT requests) of the zerortt case.
pub const ZERO_RTT_FILES: usize = 40;

/// Length of the zerortt case's file names: long names make requests
/// that fill 0-RTT packets (the runner uses 250).
pub const ZERO_RTT_NAME_LEN: usize = 100;

/// Runs of the goodput measurement (the runner's `repetitions()`).
pub const GOODPUT_RUNS: usize = 5;

/// The ecn case's file: long enough that each side's ECN validation ends
/// many round trips before the transfer does, so marks at the end show
/// the validation passed.
pub const ECN_FILE_BYTES: u64 = 5_000_000;

/// Datagrams at the end of each direction that the ecn case wants
/// ECN-marked: a sender whose validation failed sends Not-ECT from then
/// on (RFC 9000 §13.4.2.2).
pub const ECN_TAIL: usize = 5;

/// The crosstraffic case's competitor: sift's CUBIC (RFC 9438) over QUIC
/// v1 through the same bottleneck, one implementation for every pair. The
/// runner's is a kernel TCP CUBIC flow (iperf); a kernel without netem
/// (as here) cannot delay TCP, so the cross flow is a UDP one through
/// sift-link's queue.
pub const CROSS_TRAFFIC_CC: &str = "cubic";

/// How long the cross flow runs before the measured client starts, in
/// its 1 s reports (the runner starts iperf first): past slow start on
/// this link, so the measured flow meets a competitor in its stride.
pub const CROSS_TRAFFIC_LEAD_REPORTS: usize = 2;

/// The runner's timeout for crosstraffic (`timeout()`: 180 s): its client
/// may take this long per run, whatever `--timeout` says for the rest.
pub const CROSS_TRAFFIC_TIMEOUT_S: u64 = 180;

/// Connections (one file each) of the handshakeloss case.
pub const HANDSHAKE_LOSS_RUNS: usize = 5;

/// Certificates in the amplificationlimit case's chain: enough that the
/// server's first flight is far more than 3× a client Initial (the
/// runner uses 9).
pub const AMPLIFICATION_CHAIN: usize = 9;

/// Certificates in the resumption case's chain: a full handshake's
/// flight of several kilobytes against a resumed one's few hundred bytes
/// (padding a datagram to 1200 bytes, as quinn does, cannot hide it).
pub const RESUMPTION_CHAIN: usize = 4;

/// `rebind-port`: how long an old NAT mapping lingers, seconds: longer
/// than the case's transfer.
pub const REBIND_LINGER_S: f64 = 30.0;

/// A case's link: `sift-link` between tap and server with these netem
/// specs (forward = client → server), and how often it rebinds.
#[derive(Clone, Debug, PartialEq)]
pub struct Link {
    /// Client → server.
    pub forward: &'static str,
    /// Server → client.
    pub reverse: &'static str,
    /// `--rebind-every SECS`.
    pub rebind_every_s: Option<f64>,
    /// `--rebind-linger SECS`: how long an old mapping still carries the
    /// server's replies after a rebinding.
    pub rebind_linger_s: Option<f64>,
    /// `--rebind-addr`: a rebinding changes the client's IP address too.
    pub rebind_addr: bool,
}

impl Case {
    /// The runner's name.
    pub fn name(self) -> &'static str {
        match self {
            Case::Handshake => "handshake",
            Case::LongRtt => "longrtt",
            Case::Transfer => "transfer",
            Case::Multiplexing => "multiplexing",
            Case::Retry => "retry",
            Case::Resumption => "resumption",
            Case::ZeroRtt => "zerortt",
            Case::Http3 => "http3",
            Case::ChaCha20 => "chacha20",
            Case::KeyUpdate => "keyupdate",
            Case::Ipv6 => "ipv6",
            Case::RebindPort => "rebind-port",
            Case::RebindAddr => "rebind-addr",
            Case::ConnectionMigration => "connectionmigration",
            Case::ActiveMigration => "activemigration",
            Case::HandshakeLoss => "handshakeloss",
            Case::TransferLoss => "transferloss",
            Case::TransferCorruption => "transfercorruption",
            Case::HandshakeCorruption => "handshakecorruption",
            Case::Blackhole => "blackhole",
            Case::AmplificationLimit => "amplificationlimit",
            Case::V2 => "v2",
            Case::Ecn => "ecn",
            Case::SiftUpgrade => "sift1-upgrade",
            Case::Goodput => "goodput",
            Case::CrossTraffic => "crosstraffic",
        }
    }

    /// The letter of the public interop pages (interop.seemann.io).
    pub fn letter(self) -> &'static str {
        match self {
            Case::Handshake => "H",
            Case::LongRtt => "LR",
            Case::Transfer => "DC",
            Case::Multiplexing => "M",
            Case::Retry => "S",
            Case::Resumption => "R",
            Case::ZeroRtt => "Z",
            Case::Http3 => "3",
            Case::ChaCha20 => "C20",
            Case::KeyUpdate => "U",
            Case::Ipv6 => "6",
            Case::RebindPort => "BP",
            Case::RebindAddr => "BA",
            Case::ConnectionMigration => "CM",
            Case::ActiveMigration => "AM",
            Case::HandshakeLoss => "L1",
            Case::TransferLoss => "L2",
            Case::TransferCorruption => "C2",
            Case::HandshakeCorruption => "C1",
            Case::Blackhole => "B",
            Case::AmplificationLimit => "A",
            Case::V2 => "V2",
            Case::Ecn => "E",
            Case::SiftUpgrade => "SU",
            Case::Goodput => "G",
            Case::CrossTraffic => "C",
        }
    }

    /// What a pass means.
    pub fn description(self) -> &'static str {
        match self {
            Case::Handshake => "one handshake, QUIC v1, a 1 KB file byte-exact",
            Case::LongRtt => "one handshake over a 1.5 s round trip (10 Mb/s, queue 25): the client sends its ClientHello again before the server's answer arrives, a 1 KB file",
            Case::Transfer => "files of 2, 3 and 10 MB on one connection, byte-exact, one handshake",
            Case::Multiplexing => "1000 files of 32 bytes on one connection (beyond the initial stream limit)",
            Case::Retry => "the server sends a Retry; the client's next Initial carries the token; one handshake",
            Case::Resumption => "two handshakes; the second resumes (its Handshake flight carries no certificate: under half the first's bytes)",
            Case::ZeroRtt => "two handshakes; the second connection's requests go in 0-RTT packets",
            Case::Http3 => "an HTTP/3 transaction (h3 examples)",
            Case::ChaCha20 => "the client offers only TLS_CHACHA20_POLY1305_SHA256; a 3 MB file byte-exact",
            Case::KeyUpdate => "the client initiates a key update during a 3 MB download; the server follows",
            Case::Ipv6 => "files of 5 and 10 KB over ::1",
            Case::RebindPort => "a 5 MB download at 20 Mb/s through a NAT that gives the client a new port every second",
            Case::RebindAddr => "a 5 MB download at 20 Mb/s through a NAT that gives the client a new IP address and port every second",
            Case::ConnectionMigration => "the server offers a preferred address (127.0.0.2, RFC 9000 §9.6) and serves there; the client moves to it once the handshake is confirmed and reports the 2 MB download done there",
            Case::ActiveMigration => "the client moves to a new port mid-download with a new connection ID; 2 MB at 20 Mb/s",
            Case::HandshakeLoss => "5 connections of one 1 KB file each through 30% loss both ways, 5 handshakes",
            Case::TransferLoss => "a 2 MB file at 10 Mb/s through 2% loss both ways",
            Case::TransferCorruption => "a 2 MB file at 10 Mb/s through 2% corruption both ways (damaged datagrams delivered)",
            Case::HandshakeCorruption => "5 connections of one 1 KB file each through 30% corruption both ways (damaged datagrams delivered), 5 handshakes",
            Case::Blackhole => "a 10 MB file at 10 Mb/s while the link goes dark for 2 s in every 7 s, both ways",
            Case::AmplificationLimit => "a 9-certificate chain; the client's datagrams 2-7 dropped; the server sends under 4× (3× + the runner's tolerance) what it got until the client's first Handshake packet",
            Case::V2 => "QUIC v2: the server answers in v2, the handshake runs in it and the client reports it (the runner's client starts in v1 and is moved by compatible version negotiation; sift-client, whose rustls cannot follow that move, and quic-go, which has no compatible negotiation, start in v2), a 1 KB file",
            Case::Ecn => "a 5 MB file byte-exact with ECN: the tap (which passes the ECN field on as it came) saw ECT-marked datagrams both ways, and the last of each side's datagrams still marked (quinn and quic-go stop marking when the peer's ACK-ECN counts fail their validation, as sift does); sift's side reports ECN validated (`capable`). Against a peer that sends no ECN the cell is unsupported, and sift's side must have failed safe (validation failed, the file byte-exact)",
            Case::SiftUpgrade => "sift ↔ sift: the client starts in QUIC v1, the connection runs sift/1, a file byte-exact",
            Case::Goodput => "measured: a 10 MB file at 10 Mb/s, 15 ms each way, queue 25 packets, MTU 1500, as H; goodput = 8 × 10 MB over the time from the server's first to its last 1-RTT datagram at the tap (the runner's), in kb/s, five runs (mean ± standard deviation)",
            Case::CrossTraffic => "measured: a 25 MB file over goodput's link (10 Mb/s, 15 ms each way, queue 25, MTU 1500) while a CUBIC flow, started 2 s before, shares the bottleneck queue: sift-client perf -R --cc cubic from a second sift-server through the same sift-link (a QUIC CUBIC flow over UDP, not the runner's kernel TCP one: this kernel has no netem to delay TCP); the measured flow's goodput as G's, and the cross flow's over the measured client's run, in kb/s, five runs (mean ± standard deviation)",
        }
    }

    /// The files served: (name, bytes).
    pub fn files(self) -> Vec<(String, u64)> {
        const KB: u64 = 1000;
        const MB: u64 = 1000 * KB;
        let named = |sizes: &[u64]| -> Vec<(String, u64)> {
            sizes
                .iter()
                .enumerate()
                .map(|(i, &bytes)| (format!("file{i}.bin"), bytes))
                .collect()
        };
        match self {
            Case::Handshake | Case::LongRtt | Case::Http3 | Case::V2 => named(&[KB]),
            Case::Blackhole | Case::Goodput => named(&[10 * MB]),
            Case::CrossTraffic => named(&[25 * MB]),
            Case::Transfer => named(&[2 * MB, 3 * MB, 10 * MB]),
            Case::Multiplexing => (0..MULTIPLEXING_FILES)
                .map(|i| (format!("m{i:04}"), 32))
                .collect(),
            Case::Retry => named(&[10 * KB]),
            Case::Resumption => named(&[5 * KB, 10 * KB]),
            Case::ZeroRtt => (0..ZERO_RTT_FILES)
                .map(|i| {
                    let stem = format!("z{i:02}");
                    let name = format!("{stem}{}", "x".repeat(ZERO_RTT_NAME_LEN - stem.len()));
                    (name, 32)
                })
                .collect(),
            Case::ChaCha20 | Case::KeyUpdate => named(&[3 * MB]),
            Case::Ecn => named(&[ECN_FILE_BYTES]),
            Case::Ipv6 => named(&[5 * KB, 10 * KB]),
            Case::RebindPort | Case::RebindAddr => named(&[5 * MB]),
            Case::ConnectionMigration
            | Case::ActiveMigration
            | Case::TransferLoss
            | Case::TransferCorruption => named(&[2 * MB]),
            Case::HandshakeLoss | Case::HandshakeCorruption => named(&[KB; HANDSHAKE_LOSS_RUNS]),
            Case::AmplificationLimit => named(&[5 * KB]),
            Case::SiftUpgrade => named(&[KB, 3 * MB]),
        }
    }

    /// The `sift-link` this case runs through, if any.
    pub fn link(self) -> Option<Link> {
        match self {
            Case::RebindPort => Some(Link {
                forward: "delay 15ms rate 20mbit limit 100",
                reverse: "delay 15ms rate 20mbit limit 100",
                rebind_every_s: Some(1.0),
                // As the runner's NAT, which keeps its stale mappings, and
                // a real one until its timer expires: packets in flight to
                // the old port still arrive. Dropping them at once strands
                // them for quiche 0.28, whose loss detection runs per path
                // and never declares them lost (cloudflare/quiche#2452).
                rebind_linger_s: Some(REBIND_LINGER_S),
                rebind_addr: false,
            }),
            // The runner's rebind-addr: its NAT moves the client to
            // another address of its pool (here 127.0.0.2, .3, …).
            Case::RebindAddr => Some(Link {
                forward: "delay 15ms rate 20mbit limit 100",
                reverse: "delay 15ms rate 20mbit limit 100",
                rebind_every_s: Some(1.0),
                rebind_linger_s: Some(REBIND_LINGER_S),
                rebind_addr: true,
            }),
            Case::ActiveMigration => Some(Link {
                forward: "delay 15ms rate 20mbit limit 100",
                reverse: "delay 15ms rate 20mbit limit 100",
                rebind_every_s: None,
                rebind_linger_s: None,
                rebind_addr: false,
            }),
            Case::HandshakeLoss => Some(Link {
                forward: "delay 15ms rate 10mbit limit 25 loss 30%",
                reverse: "delay 15ms rate 10mbit limit 25 loss 30%",
                rebind_every_s: None,
                rebind_linger_s: None,
                rebind_addr: false,
            }),
            Case::TransferLoss => Some(Link {
                forward: "delay 15ms rate 10mbit limit 25 loss 2%",
                reverse: "delay 15ms rate 10mbit limit 25 loss 2%",
                rebind_every_s: None,
                rebind_linger_s: None,
                rebind_addr: false,
            }),
            Case::TransferCorruption => Some(Link {
                forward: "delay 15ms rate 10mbit limit 25 corrupt 2%",
                reverse: "delay 15ms rate 10mbit limit 25 corrupt 2%",
                rebind_every_s: None,
                rebind_linger_s: None,
                rebind_addr: false,
            }),
            // The runner's scenarios (testcases_quic.py): simple-p2p with
            // 750 ms each way; corrupt-rate 30%; blackhole on 5 s, off 2 s.
            // The runner's measurements' link (testcases_quic.py
            // MeasurementGoodput: simple-p2p, 10 Mb/s, 15 ms, queue 25;
            // MeasurementCrossTraffic inherits it), with its Ethernet MTU:
            // on loopback sift's PMTUD (RFC 8899) otherwise grows its
            // datagrams to 8972 bytes, and a 25-packet queue of those holds
            // 180 ms at 10 Mb/s, not the runner's 28 ms.
            Case::Goodput | Case::CrossTraffic => Some(Link {
                forward: "delay 15ms rate 10mbit limit 25 mtu 1500",
                reverse: "delay 15ms rate 10mbit limit 25 mtu 1500",
                rebind_every_s: None,
                rebind_linger_s: None,
                rebind_addr: false,
            }),
            Case::LongRtt => Some(Link {
                forward: "delay 750ms rate 10mbit limit 25",
                reverse: "delay 750ms rate 10mbit limit 25",
                rebind_every_s: None,
                rebind_linger_s: None,
                rebind_addr: false,
            }),
            Case::HandshakeCorruption => Some(Link {
                forward: "delay 15ms rate 10mbit limit 25 corrupt 30%",
                reverse: "delay 15ms rate 10mbit limit 25 corrupt 30%",
                rebind_every_s: None,
                rebind_linger_s: None,
                rebind_addr: false,
            }),
            Case::Blackhole => Some(Link {
                forward: "delay 15ms rate 10mbit limit 25 outage 7s 2s",
                reverse: "delay 15ms rate 10mbit limit 25 outage 7s 2s",
                rebind_every_s: None,
                rebind_linger_s: None,
                rebind_addr: false,
            }),
            _ => None,
        }
    }

    /// Handshakes the check expects.
    pub fn handshakes(self) -> usize {
        match self {
            Case::Resumption | Case::ZeroRtt => 2,
            Case::HandshakeLoss | Case::HandshakeCorruption => HANDSHAKE_LOSS_RUNS,
            _ => 1,
        }
    }

    /// How many times the cell runs (the runner's measurements run five
    /// times, each with a fresh server, link and connection).
    pub fn repetitions(self) -> usize {
        match self {
            Case::Goodput | Case::CrossTraffic => GOODPUT_RUNS,
            _ => 1,
        }
    }

    /// Whether the cell is a measurement (a figure, not only a verdict).
    pub fn is_measurement(self) -> bool {
        matches!(self, Case::Goodput | Case::CrossTraffic)
    }

    /// Whether a CUBIC cross flow shares the link's bottleneck with the
    /// cell's transfer.
    pub fn cross_traffic(self) -> bool {
        self == Case::CrossTraffic
    }

    /// Whether the client runs once per file (the runner's multiconnect).
    pub fn connection_per_file(self) -> bool {
        matches!(self, Case::HandshakeLoss | Case::HandshakeCorruption)
    }

    /// Whether the tap sits between the link and the server rather than
    /// between the client and the link: where the link corrupts, the
    /// checks read the server's Initials (versions, source IDs) as the
    /// server sent them, not as damaged on their way to the client.
    pub fn tap_beside_server(self) -> bool {
        matches!(self, Case::HandshakeCorruption | Case::TransferCorruption)
    }

    /// Whether the cell runs over IPv6.
    pub fn ipv6(self) -> bool {
        self == Case::Ipv6
    }

    /// Parses a case by its name or letter.
    pub fn parse(text: &str) -> Option<Case> {
        ALL.into_iter()
            .find(|c| c.name() == text || c.letter().eq_ignore_ascii_case(text))
    }
}

impl serde::Serialize for Case {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl fmt::Display for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Parses a comma-separated list of case names (or letters).
pub fn parse_list(text: &str) -> anyhow::Result<Vec<Case>> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|name| {
            Case::parse(name).ok_or_else(|| {
                anyhow::anyhow!(
                    "no test case {name:?} (one of {})",
                    ALL.map(Case::name).join(", ")
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_letters_are_unique_and_parse_back() {
        for case in ALL {
            assert_eq!(Case::parse(case.name()), Some(case));
            assert_eq!(Case::parse(case.letter()), Some(case));
            assert_eq!(
                ALL.iter().filter(|c| c.letter() == case.letter()).count(),
                1
            );
        }
        assert!(parse_list("handshake,bogus").is_err());
        assert_eq!(
            parse_list("H, transfer").unwrap(),
            vec![Case::Handshake, Case::Transfer]
        );
    }

    #[test]
    fn transfer_serves_a_10_mb_file_and_multiplexing_a_thousand_distinct_names() {
        assert!(Case::Transfer.files().iter().any(|(_, b)| *b == 10_000_000));
        let mut names: Vec<String> = Case::Multiplexing
            .files()
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        names.dedup();
        assert_eq!(names.len(), MULTIPLEXING_FILES);
    }

    #[test]
    fn lossy_cases_run_through_a_link_and_loopback_ones_do_not() {
        assert!(Case::TransferCorruption
            .link()
            .unwrap()
            .forward
            .contains("corrupt"));
        assert!(Case::HandshakeLoss
            .link()
            .unwrap()
            .reverse
            .contains("loss 30%"));
        assert!(Case::RebindPort.link().unwrap().rebind_every_s.is_some());
        assert_eq!(Case::Handshake.link(), None);
    }

    #[test]
    fn crosstraffic_is_the_runners_25_mb_measurement_on_goodputs_link() {
        assert_eq!(Case::parse("C"), Some(Case::CrossTraffic));
        assert_eq!(Case::CrossTraffic.link(), Case::Goodput.link());
        assert_eq!(
            Case::CrossTraffic.files(),
            vec![("file0.bin".to_string(), 25_000_000)]
        );
        assert_eq!(Case::CrossTraffic.repetitions(), GOODPUT_RUNS);
        assert!(Case::CrossTraffic.is_measurement() && Case::CrossTraffic.cross_traffic());
        assert!(!Case::Goodput.cross_traffic());
    }

    #[test]
    fn the_measured_links_carry_ethernet_sized_packets_as_the_runners_do() {
        for case in [Case::Goodput, Case::CrossTraffic] {
            let link = case.link().unwrap();
            assert!(
                link.forward.ends_with("mtu 1500"),
                "{case}: {}",
                link.forward
            );
            assert!(
                link.reverse.ends_with("mtu 1500"),
                "{case}: {}",
                link.reverse
            );
        }
    }
}
