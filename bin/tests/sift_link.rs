//! sift-link on loopback: the real binary between two UDP sockets set up
//! like sift's with corruption notices on (zero checksums sent and
//! accepted), over IPv4 and IPv6.

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::{Duration, Instant};

use common::{any_port, ipv6_or_skip, on_both_loopbacks};
use sift::io::{bind_udp, SocketOptions};
use sift::wire::Ecn;
use sift_bin::cli::ecn_socket::{enable_ecn_receive, recv_with_ecn, send_with_ecn};

const BIN: &str = env!("CARGO_BIN_EXE_sift-link");
/// Generous bound for anything that should happen at once on loopback.
const PATIENCE: Duration = Duration::from_secs(10);

/// A running sift-link whose stderr is read line by line.
struct Relay {
    child: Child,
    address: SocketAddr,
    stderr: Receiver<String>,
}

impl Relay {
    /// Listens on a free port of `listen` and relays to `server`.
    fn start(listen: IpAddr, server: SocketAddr, extra: &[&str]) -> Relay {
        let mut child = Command::new(BIN)
            .args(["--listen", &any_port(listen), "--to", &server.to_string()])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("sift-link starts");
        let (lines, stderr) = mpsc::channel();
        let pipe = child.stderr.take().expect("stderr is piped");
        thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                if lines.send(line).is_err() {
                    return;
                }
            }
        });
        let mut relay = Relay {
            child,
            address: "0.0.0.0:0".parse().unwrap(),
            stderr,
        };
        let ready = relay.wait_for_line("listening on");
        let address = ready
            .split("listening on ")
            .nth(1)
            .and_then(|rest| rest.split(',').next())
            .expect("the ready line names the address");
        relay.address = address.parse().expect("a socket address");
        relay
    }

    fn wait_for_line(&mut self, needle: &str) -> String {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return line,
                Ok(_) => {}
                Err(_) => panic!("sift-link never printed {needle:?}"),
            }
        }
    }

    fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success());
    }

    /// Stops the relay with SIGTERM; returns its exit status and the rest of stderr.
    fn stop(mut self) -> (ExitStatus, String) {
        self.signal("TERM");
        let status = self.child.wait().expect("sift-link exits");
        // The reader thread may not have reached the last lines when the
        // process is gone: read on until it meets the pipe's end and hangs up.
        let deadline = Instant::now() + PATIENCE;
        let mut rest = Vec::new();
        while let Ok(line) = self
            .stderr
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            rest.push(line);
        }
        (status, rest.join("\n"))
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        // Only if a test failed half-way: this child, by its own id.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A blocking socket on `loopback` set up as sift's is with corruption
/// notices on: it sends zero checksums and accepts them.
fn socket(loopback: IpAddr, read_timeout: Duration) -> UdpSocket {
    let options = SocketOptions {
        disable_checksums: true,
        ..SocketOptions::default()
    };
    socket_with(loopback, options, read_timeout)
}

fn socket_with(loopback: IpAddr, options: SocketOptions, read_timeout: Duration) -> UdpSocket {
    let (s, _) = bind_udp(SocketAddr::new(loopback, 0), options).unwrap();
    s.set_nonblocking(false).unwrap();
    s.set_read_timeout(Some(read_timeout)).unwrap();
    s
}

/// Every datagram arriving until none has come for the socket's read timeout.
fn receive_all(socket: &UdpSocket) -> Vec<(Vec<u8>, SocketAddr, Instant)> {
    let mut out = Vec::new();
    let mut buf = [0u8; 2048];
    while let Ok((len, from)) = socket.recv_from(&mut buf) {
        out.push((buf[..len].to_vec(), from, Instant::now()));
    }
    out
}

on_both_loopbacks!(delay_and_loss_are_applied_in_each_direction);
fn delay_and_loss_are_applied_in_each_direction(loopback: IpAddr) {
    let server = socket(loopback, Duration::from_millis(800));
    let relay = Relay::start(
        loopback,
        server.local_addr().unwrap(),
        &[
            "--forward",
            "delay 20ms loss 50%",
            "--reverse",
            "delay 20ms",
            "--seed",
            "7",
        ],
    );
    let client = socket(loopback, Duration::from_millis(800));
    let n = 200u32;
    let mut sent_at = HashMap::new();
    for i in 0..n {
        sent_at.insert(i, Instant::now());
        client.send_to(&i.to_be_bytes(), relay.address).unwrap();
    }
    let arrived = receive_all(&server);
    // Binomial(200, 0.5): σ = sqrt(200·0.25) ≈ 7.1; allow 5σ around 100.
    assert!(
        (65..=135).contains(&arrived.len()),
        "{} arrived",
        arrived.len()
    );
    for (bytes, from, at) in &arrived {
        let id = u32::from_be_bytes(bytes[..4].try_into().unwrap());
        let delay = *at - sent_at[&id];
        assert!(
            delay >= Duration::from_millis(20),
            "packet {id} took {delay:?}"
        );
        server.send_to(bytes, from).unwrap();
    }
    let echoed = receive_all(&client);
    assert_eq!(
        echoed.len(),
        arrived.len(),
        "the reverse direction loses nothing"
    );
    for (bytes, from, at) in &echoed {
        assert_eq!(*from, relay.address, "replies come back through the relay");
        let id = u32::from_be_bytes(bytes[..4].try_into().unwrap());
        assert!(
            *at - sent_at[&id] >= Duration::from_millis(40),
            "packet {id}"
        );
    }
    let (status, stderr) = relay.stop();
    assert!(status.success(), "{status:?}");
    assert!(
        stderr.contains(&format!(
            "forward: offered {n}, delivered {}",
            arrived.len()
        )),
        "{stderr}"
    );
}

on_both_loopbacks!(corrupt_100_percent_delivers_every_datagram_with_one_flipped_bit);
fn corrupt_100_percent_delivers_every_datagram_with_one_flipped_bit(loopback: IpAddr) {
    let server = socket(loopback, Duration::from_millis(500));
    let relay = Relay::start(
        loopback,
        server.local_addr().unwrap(),
        &["--forward", "corrupt 100%"],
    );
    let client = socket(loopback, Duration::from_millis(500));
    let original: Vec<u8> = (0..100u8).collect();
    for _ in 0..50 {
        client.send_to(&original, relay.address).unwrap();
    }
    let arrived = receive_all(&server);
    assert_eq!(arrived.len(), 50, "corruption never turns into a drop");
    for (bytes, _, _) in &arrived {
        assert_eq!(bytes.len(), original.len());
        let flipped: u32 = bytes
            .iter()
            .zip(&original)
            .map(|(a, b)| (a ^ b).count_ones())
            .sum();
        assert_eq!(flipped, 1);
    }
    relay.stop();
}

on_both_loopbacks!(each_client_gets_only_its_own_replies);
fn each_client_gets_only_its_own_replies(loopback: IpAddr) {
    let server = socket(loopback, Duration::from_millis(500));
    let relay = Relay::start(
        loopback,
        server.local_addr().unwrap(),
        &["--forward", "delay 5ms"],
    );
    let alice = socket(loopback, Duration::from_millis(500));
    let bob = socket(loopback, Duration::from_millis(500));
    for _ in 0..5 {
        alice.send_to(b"alice", relay.address).unwrap();
        bob.send_to(b"bob", relay.address).unwrap();
    }
    let arrived = receive_all(&server);
    assert_eq!(arrived.len(), 10);
    let upstreams: std::collections::BTreeSet<SocketAddr> =
        arrived.iter().map(|(_, from, _)| *from).collect();
    assert_eq!(upstreams.len(), 2, "one upstream socket per client");
    for (bytes, from, _) in &arrived {
        server.send_to(bytes, from).unwrap();
    }
    for (name, client) in [(&b"alice"[..], &alice), (&b"bob"[..], &bob)] {
        let replies = receive_all(client);
        assert_eq!(replies.len(), 5);
        assert!(replies.iter().all(|(bytes, _, _)| bytes == name));
    }
    relay.stop();
}

on_both_loopbacks!(sigusr1_prints_counters_and_the_relay_goes_on);
fn sigusr1_prints_counters_and_the_relay_goes_on(loopback: IpAddr) {
    let server = socket(loopback, Duration::from_millis(500));
    let mut relay = Relay::start(loopback, server.local_addr().unwrap(), &[]);
    let client = socket(loopback, Duration::from_millis(500));
    for _ in 0..3 {
        client.send_to(b"x", relay.address).unwrap();
    }
    assert_eq!(receive_all(&server).len(), 3);
    relay.signal("USR1");
    let line = relay.wait_for_line("forward:");
    assert!(line.contains("offered 3, delivered 3"), "{line}");
    client.send_to(b"y", relay.address).unwrap();
    assert_eq!(
        receive_all(&server).len(),
        1,
        "still relaying after SIGUSR1"
    );
    let (status, _) = relay.stop();
    assert!(status.success());
}

on_both_loopbacks!(json_log_records_each_packets_fate);
fn json_log_records_each_packets_fate(loopback: IpAddr) {
    let server = socket(loopback, Duration::from_millis(500));
    let path = std::env::temp_dir().join(format!(
        "sift-link-test-{}-{}.jsonl",
        std::process::id(),
        if loopback.is_ipv6() { "ipv6" } else { "ipv4" }
    ));
    let relay = Relay::start(
        loopback,
        server.local_addr().unwrap(),
        &[
            "--forward",
            "loss 100%",
            "--log",
            path.to_str().unwrap(),
            "--log-format",
            "json",
        ],
    );
    let client = socket(loopback, Duration::from_millis(200));
    for _ in 0..4 {
        client.send_to(&[0u8; 33], relay.address).unwrap();
    }
    assert!(
        receive_all(&server).is_empty(),
        "loss 100% drops everything"
    );
    let (status, _) = relay.stop();
    assert!(status.success());
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4, "{text}");
    for line in &lines {
        assert_eq!(line["direction"], "forward");
        assert_eq!(line["size"], 33);
        assert_eq!(line["fate"], "random-loss");
        assert_eq!(line["client"], client.local_addr().unwrap().to_string());
    }
}

on_both_loopbacks!(the_ecn_field_crosses_the_relay_and_loss_with_ecn_marks_ect_packets);
fn the_ecn_field_crosses_the_relay_and_loss_with_ecn_marks_ect_packets(loopback: IpAddr) {
    let server = socket(loopback, Duration::from_millis(800));
    enable_ecn_receive(&server).unwrap();
    let relay = Relay::start(
        loopback,
        server.local_addr().unwrap(),
        &["--forward", "loss 100% ecn"],
    );
    let client = socket(loopback, Duration::from_millis(800));
    enable_ecn_receive(&client).unwrap();
    // Forward: the Not-ECT datagram is lost, the ECT(0) one arrives CE.
    send_with_ecn(&client, b"not-ect", relay.address, Ecn::NotEct).unwrap();
    send_with_ecn(&client, b"ect0", relay.address, Ecn::Ect0).unwrap();
    let mut buf = [0u8; 64];
    let (len, upstream, ecn) = recv_with_ecn(&server, &mut buf).unwrap();
    assert_eq!((&buf[..len], ecn), (&b"ect0"[..], Ecn::Ce));
    assert!(
        recv_with_ecn(&server, &mut buf).is_err(),
        "the Not-ECT datagram was dropped"
    );
    // Reverse, an unimpaired link: each codepoint arrives as it was sent.
    for sent in [Ecn::Ect0, Ecn::Ect1, Ecn::NotEct, Ecn::Ce] {
        send_with_ecn(&server, b"reply", upstream, sent).unwrap();
        let (len, _, got) = recv_with_ecn(&client, &mut buf).unwrap();
        assert_eq!((&buf[..len], got), (&b"reply"[..], sent));
    }
    let (status, rest) = relay.stop();
    assert!(status.success());
    assert!(rest.contains("random losses 1,"), "{rest}");
    assert!(rest.contains("loss marks 1,"), "{rest}");
}

#[test]
fn corrupted_ipv6_datagrams_reach_a_receiver_that_checks_checksums() {
    // As over IPv4: what the relay sends carries a checksum over the bytes
    // it delivers, corrupted or not, so a receiver without
    // UDP_NO_CHECK6_RX (sift with notices off) still gets every datagram.
    let Some(ipv6) =
        ipv6_or_skip("corrupted_ipv6_datagrams_reach_a_receiver_that_checks_checksums")
    else {
        return;
    };
    let strict = socket_with(ipv6, SocketOptions::default(), Duration::from_millis(500));
    let relay = Relay::start(
        ipv6,
        strict.local_addr().unwrap(),
        &["--forward", "corrupt 100%"],
    );
    let client = socket(ipv6, Duration::from_millis(500));
    let original = [0x5au8; 64];
    for _ in 0..20 {
        client.send_to(&original, relay.address).unwrap();
    }
    let arrived = receive_all(&strict);
    assert_eq!(arrived.len(), 20, "every corrupted datagram arrives");
    for (bytes, _, _) in &arrived {
        let flipped: u32 = bytes
            .iter()
            .zip(&original)
            .map(|(a, b)| (a ^ b).count_ones())
            .sum();
        assert_eq!(flipped, 1, "delivered corrupted, not dropped");
    }
    relay.stop();
}

#[test]
fn send_zero_checksums_reaches_only_ipv6_receivers_that_accept_them() {
    let Some(ipv6) =
        ipv6_or_skip("send_zero_checksums_reaches_only_ipv6_receivers_that_accept_them")
    else {
        return;
    };
    let accepting_options = SocketOptions {
        accept_zero_checksums: true,
        ..SocketOptions::default()
    };
    let short = Duration::from_millis(300);
    for (options, expected) in [(SocketOptions::default(), 0), (accepting_options, 10)] {
        let server = socket_with(ipv6, options, short);
        let relay = Relay::start(
            ipv6,
            server.local_addr().unwrap(),
            &["--send-zero-checksums"],
        );
        let client = socket(ipv6, short);
        for _ in 0..10 {
            client.send_to(b"zero", relay.address).unwrap();
        }
        assert_eq!(
            receive_all(&server).len(),
            expected,
            "receiver accepts zero checksums: {}",
            options.accept_zero_checksums
        );
        relay.stop();
    }
}

#[test]
fn an_ipv4_client_of_a_dual_stack_relay_is_known_by_its_plain_address() {
    if ipv6_or_skip("an_ipv4_client_of_a_dual_stack_relay_is_known_by_its_plain_address").is_none()
    {
        return;
    }
    let ipv4: IpAddr = std::net::Ipv4Addr::LOCALHOST.into();
    let server = socket(ipv4, Duration::from_millis(500));
    let path = std::env::temp_dir().join(format!(
        "sift-link-test-{}-dual-stack.jsonl",
        std::process::id()
    ));
    let relay = Relay::start(
        std::net::Ipv6Addr::UNSPECIFIED.into(),
        server.local_addr().unwrap(),
        &["--log", path.to_str().unwrap(), "--log-format", "json"],
    );
    let client = socket(ipv4, Duration::from_millis(500));
    let relay_ipv4 = SocketAddr::new(ipv4, relay.address.port());
    client.send_to(b"ping", relay_ipv4).unwrap();
    let arrived = receive_all(&server);
    assert_eq!(arrived.len(), 1);
    server.send_to(b"pong", arrived[0].1).unwrap();
    let replies = receive_all(&client);
    assert_eq!(replies.len(), 1, "the reply finds the IPv4 client");
    assert_eq!(replies[0].1, relay_ipv4, "from the address it sent to");
    let (status, _) = relay.stop();
    assert!(status.success());
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let client_field = format!("\"client\":\"{}\"", client.local_addr().unwrap());
    assert_eq!(text.lines().count(), 4, "{text}");
    assert!(
        text.lines().all(|line| line.contains(&client_field)),
        "not {client_field}: {text}"
    );
}

#[test]
fn a_bad_spec_exits_non_zero_and_names_the_word() {
    let output = Command::new(BIN)
        .args([
            "--listen",
            "127.0.0.1:0",
            "--to",
            "127.0.0.1:9",
            "--forward",
            "delay 20ms lossy 1%",
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("at word 3 \"lossy\": unknown option"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "one clear line: {stderr}");
}

on_both_loopbacks!(an_address_in_use_is_one_clear_error);
fn an_address_in_use_is_one_clear_error(loopback: IpAddr) {
    let taken = socket(loopback, Duration::from_millis(10));
    let output = Command::new(BIN)
        .args([
            "--listen",
            &taken.local_addr().unwrap().to_string(),
            "--to",
            "127.0.0.1:9",
        ])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cannot listen on"), "{stderr}");
}

#[test]
fn help_shows_examples() {
    let output = Command::new(BIN).arg("--help").output().unwrap();
    assert!(output.status.success());
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("Examples:")
            && text.contains("--forward \"delay 60ms rate 1600kbit limit 12 loss 1%\"")
    );
    assert!(text.contains("codel target 5ms interval 100ms ecn") && text.contains("dualpi2"));
}

on_both_loopbacks!(a_route_relays_a_second_server_through_the_same_queue);
fn a_route_relays_a_second_server_through_the_same_queue(loopback: IpAddr) {
    let first = socket(loopback, Duration::from_millis(500));
    let second = socket(loopback, Duration::from_millis(500));
    let route = format!("{}={}", any_port(loopback), second.local_addr().unwrap());
    // 1000-byte datagrams at 80 kb/s: 100 ms each, so the queue of 5
    // cannot drain while the 20 below are offered.
    let mut relay = Relay::start(
        loopback,
        first.local_addr().unwrap(),
        &[
            "--route",
            &route,
            "--forward",
            "rate 80kbit limit 5",
            "--seed",
            "3",
        ],
    );
    let routed: SocketAddr = relay
        .wait_for_line("route: from ")
        .split("route: from ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .expect("the route line names its address")
        .parse()
        .expect("a socket address");
    assert_ne!(routed, relay.address);
    let alice = socket(loopback, Duration::from_millis(500));
    let bob = socket(loopback, Duration::from_millis(500));
    bob.send_to(&[b'b'; 1000], routed).unwrap();
    let first_of_bob = receive_all(&second);
    assert_eq!(first_of_bob.len(), 1, "the route carries bob's datagram");
    let bobs_upstream = first_of_bob[0].1;
    for _ in 0..10 {
        alice.send_to(&[b'a'; 1000], relay.address).unwrap();
        bob.send_to(&[b'b'; 1000], routed).unwrap();
    }
    let to_first = receive_all(&first);
    let to_second = receive_all(&second);
    assert!(to_first.iter().all(|(bytes, _, _)| bytes[0] == b'a'));
    assert!(to_second.iter().all(|(bytes, _, _)| bytes[0] == b'b'));
    // One queue for both: about 5 of the 20 get through (one in service,
    // the queue's 5), not up to 6 of each server's 10.
    let through = to_first.len() + to_second.len();
    assert!(
        through <= 7,
        "{through} of 20 datagrams passed a 5-packet queue"
    );
    // Replies go back to each client from the address it sent to.
    second.send_to(b"reply", bobs_upstream).unwrap();
    let replies = receive_all(&bob);
    assert_eq!(replies.len(), 1);
    assert_eq!(
        replies[0].1, routed,
        "bob's reply comes from the route's address"
    );
    assert!(receive_all(&alice).is_empty());
    relay.stop();
}

#[test]
fn a_route_without_an_equals_sign_is_one_clear_error() {
    let out = Command::new(BIN)
        .args([
            "--listen",
            "127.0.0.1:0",
            "--to",
            "127.0.0.1:9",
            "--route",
            "127.0.0.1:0",
        ])
        .output()
        .expect("sift-link runs");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is not LISTEN=TO"), "{stderr}");
}
