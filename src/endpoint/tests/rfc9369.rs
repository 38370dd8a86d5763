//! RFC 9369 (QUIC version 2) on the endpoint: a server that lists v2
//! accepts a client whose first Initial is v2, Retry included (v2's type
//! bits and integrity key), and one that does not list it answers with
//! Version Negotiation, which sends a client that also speaks v1 there.

use super::*;
use crate::conn::retry_policy::RetryPolicy;
use crate::wire::{QUIC_V1, QUIC_V2};

fn version_of(datagram: &[u8]) -> u32 {
    u32::from_be_bytes(datagram[1..5].try_into().unwrap())
}

fn speaking(seed: u64, versions: &[u32]) -> Config {
    Config {
        versions: versions.to_vec(),
        ..config(seed)
    }
}

#[test]
fn a_v2_client_passes_a_v2_retry_and_is_established() {
    let secret = ServerSecret::new(&[9; SERVER_SECRET_LEN]);
    let server_config = Config {
        server_secret: Some(secret.clone()),
        retry: RetryPolicy::Always,
        ..speaking(1, &[VERSION, QUIC_V1, QUIC_V2])
    };
    let mut server = Endpoint::new(addr(SERVER), Some(server_config));
    let mut client = Endpoint::new(addr(1001), None);
    let now = Instant::now();
    let handle = client
        .connect(speaking(2, &[QUIC_V2]), addr(SERVER), now)
        .unwrap();
    let mut buf = vec![0u8; 65_535];
    let (len, _) = client.poll_transmit(now, &mut buf).unwrap();
    assert_eq!(version_of(&buf[..len]), QUIC_V2);
    // RFC 9369 §3.2: a v2 Initial's type bits are 0b01.
    assert_eq!(buf[0] & 0xf0, 0xd0);
    server.recv(&mut buf[..len], addr(1001), now);
    let (len, _) = server.poll_transmit(now, &mut buf).expect("a Retry");
    let mut retry = buf[..len].to_vec();
    assert_eq!(version_of(&retry), QUIC_V2);
    assert_eq!(retry[0] & 0xf0, 0xc0, "a v2 Retry's type bits are 0b00");
    client.recv(&mut retry, addr(SERVER), now);
    assert_eq!(client.stats().retries_received, 1);
    // RFC 9369 §4.1: the Initial that carries the token is in v2 too.
    let (len, _) = client
        .poll_transmit(now, &mut buf)
        .expect("the Initial again");
    assert_eq!(version_of(&buf[..len]), QUIC_V2);
    server.recv(&mut buf[..len], addr(1001), now);
    let mut net = Net::new(vec![server, client]);
    net.now = now;
    assert!(net.run_until(|e| established(&mut e[1], handle)));
    let connection = net.endpoints[1].connection_ref(handle).unwrap();
    assert_eq!(connection.version(), QUIC_V2);
}

#[test]
fn a_v2_retry_with_a_v1_tag_is_ignored() {
    // A Retry's tag is the version's own (RFC 9369 §3.3.3): one tagged
    // under v1's key does not verify in v2.
    let secret = ServerSecret::new(&[9; SERVER_SECRET_LEN]);
    let server_config = Config {
        server_secret: Some(secret.clone()),
        retry: RetryPolicy::Always,
        ..speaking(1, &[QUIC_V2])
    };
    let mut server = Endpoint::new(addr(SERVER), Some(server_config));
    let mut client = Endpoint::new(addr(1001), None);
    let now = Instant::now();
    let handle = client
        .connect(speaking(2, &[QUIC_V2]), addr(SERVER), now)
        .unwrap();
    let mut buf = vec![0u8; 65_535];
    let (len, _) = client.poll_transmit(now, &mut buf).unwrap();
    let original_dcid = crate::wire::parse_long_invariant(&buf[..len])
        .unwrap()
        .dcid
        .to_vec();
    server.recv(&mut buf[..len], addr(1001), now);
    let (len, _) = server.poll_transmit(now, &mut buf).expect("a Retry");
    let mut retry = buf[..len].to_vec();
    let signed = retry.len() - crate::wire::RETRY_INTEGRITY_TAG_LEN;
    let v1_tag =
        crate::crypto::retry::integrity_tag(QUIC_V1, false, &original_dcid, &retry[..signed]);
    retry[signed..].copy_from_slice(&v1_tag);
    client.recv(&mut retry, addr(SERVER), now);
    assert_eq!(client.stats().retries_received, 0);
    assert!(!established(&mut client, handle));
}

#[test]
fn a_server_not_offering_v2_answers_a_v2_client_which_starts_over_in_v1() {
    // The default server speaks sift/1 and v1: a client that prefers v2
    // but speaks v1 too hears Version Negotiation and starts over in v1
    // (RFC 9368 §2.1), then moves to sift/1 only if it listed it.
    let mut server = Endpoint::new(addr(SERVER), Some(config(1)));
    let mut client = Endpoint::new(addr(1001), None);
    let now = Instant::now();
    let handle = client
        .connect(speaking(2, &[QUIC_V2, QUIC_V1]), addr(SERVER), now)
        .unwrap();
    let mut buf = vec![0u8; 65_535];
    let (len, _) = client.poll_transmit(now, &mut buf).unwrap();
    assert_eq!(version_of(&buf[..len]), QUIC_V2);
    assert_eq!(server.recv(&mut buf[..len], addr(1001), now), None);
    let (len, _) = server.poll_transmit(now, &mut buf).expect("an answer");
    let answer = parse_version_negotiation(&buf[..len]).unwrap();
    let offered: Vec<u32> = answer.versions().collect();
    assert_eq!(offered[..2], [VERSION, QUIC_V1]);
    assert_eq!(
        server.connections.len(),
        0,
        "no state for a version it does not list"
    );
    let mut net = Net::new(vec![server, client]);
    net.now = now;
    net.endpoints[1].recv(&mut buf[..len], addr(SERVER), now);
    assert!(net.run_until(|e| established(&mut e[1], handle)));
    let connection = net.endpoints[1].connection_ref(handle).unwrap();
    assert_eq!(connection.version(), QUIC_V1);
}
