//! `stateless`: what endpoints send and take without a connection — Retry
//! packets, Version Negotiation packets and Retry tokens — on arbitrary
//! bytes. The first byte picks the case, the rest is the input:
//!
//! - `0`: [`parse_retry`]. Invariants: never panics; what parses re-encodes
//!   (IDs and token, then the tag) to exactly the input; [`is_retry`]
//!   agrees.
//! - `1`: [`parse_version_negotiation`]. Invariants: never panics; what
//!   parses re-encodes to the input with the same unused bits.
//! - `2`: the input as the token of a client Initial to a server that
//!   always asks for Retry. Invariants: never panics; never creates a
//!   connection (a token that opens needs the server's secret); the only
//!   answer is a Retry, and an empty token's parses and verifies.
//! - `3`: the input as a datagram to a client endpoint that has sent its
//!   first Initial. Invariants: never panics; the connection takes a Retry
//!   only if its tag verifies.

use std::net::SocketAddr;

use sift::conn::Protection;
use sift::crypto::{seal_packet, NullProtection, ServerSecret, SERVER_SECRET_LEN};
use sift::endpoint::{Endpoint, RetryPolicy};
use sift::wire::{
    encode_retry_unsigned, encode_version_negotiation, is_retry, parse_header, parse_retry,
    parse_version_negotiation, ConnectionId, Frame, Header, PacketType, VERSION,
};
use sift::Config;

use super::{base_instant, Seed};

const SERVER: u16 = 4433;

fn addr(port: u16) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], port))
}

/// Runs the case the first byte picks.
pub fn run(data: &[u8]) {
    let Some((&case, input)) = data.split_first() else {
        return;
    };
    match case % 4 {
        0 => retry_round_trip(input),
        1 => version_negotiation_round_trip(input),
        2 => token_at_a_retrying_server(input),
        _ => datagram_at_a_waiting_client(input),
    }
}

fn retry_round_trip(input: &[u8]) {
    let Ok(retry) = parse_retry(input) else {
        return;
    };
    assert!(is_retry(input));
    let mut again = Vec::new();
    encode_retry_unsigned(
        &mut again,
        retry.version,
        &retry.dcid,
        &retry.scid,
        retry.token,
    )
    .expect("a parsed token re-encodes");
    // A QUIC v1 Retry's four low flag bits are unused: any value parses.
    if retry.version == sift::wire::QUIC_V1 {
        again[0] = input[0];
    }
    assert_eq!(again, retry.signed);
    again.extend_from_slice(retry.tag);
    assert_eq!(again, input);
}

fn version_negotiation_round_trip(input: &[u8]) {
    let Ok(vn) = parse_version_negotiation(input) else {
        return;
    };
    let versions: Vec<u32> = vn.versions().collect();
    let mut again = Vec::new();
    // The client's IDs, as the packet echoes them swapped.
    encode_version_negotiation(&mut again, input[0] & 0x7f, vn.scid, vn.dcid, &versions)
        .expect("parsed IDs re-encode");
    assert_eq!(again, input);
}

fn server_config() -> Config {
    Config {
        protection: Protection::Null,
        server_secret: Some(ServerSecret::new(&[0x5e; SERVER_SECRET_LEN])),
        retry: RetryPolicy::Always,
        ..Config::default()
    }
}

/// A client Initial (Null tags) carrying `token`, padded to 1200 bytes.
fn initial_with_token(token: &[u8]) -> Option<Vec<u8>> {
    let dcid = ConnectionId::new(&[0xd0; 8]).ok()?;
    let header = Header {
        ty: PacketType::Initial,
        version: VERSION,
        dcid,
        scid: ConnectionId::new(&[0xc0; 8]).ok()?,
        token,
        packet_number: 0,
        payload_len: 0,
        key_phase: false,
    };
    let mut frames = Vec::new();
    Frame::Ping.encode(&mut frames);
    frames.resize(1200, 0);
    let mut datagram = Vec::new();
    seal_packet(&header, &frames, &NullProtection, &mut datagram).ok()?;
    Some(datagram)
}

fn token_at_a_retrying_server(token: &[u8]) {
    let Some(mut initial) = initial_with_token(token) else {
        return;
    };
    let now = base_instant();
    let mut server = Endpoint::new(addr(SERVER), Some(server_config()));
    assert_eq!(server.recv(&mut initial, addr(1001), now), None);
    assert!(server.is_empty(), "a fuzzed token opened");
    let mut buf = vec![0u8; 2048];
    let answer = server.poll_transmit(now, &mut buf);
    if token.is_empty() {
        let (len, _) = answer.expect("a Retry");
        let retry = parse_retry(&buf[..len]).expect("the Retry parses");
        let tag = sift::crypto::retry::integrity_tag(retry.version, true, &[0xd0; 8], retry.signed);
        assert_eq!(&tag, retry.tag);
        assert_eq!(retry.dcid.as_slice(), &[0xc0; 8]);
    } else {
        // Not ours: as if there were none, so a Retry (or nothing, for a
        // token that somehow opened but is stale).
        if let Some((len, _)) = answer {
            parse_retry(&buf[..len]).expect("the answer is a Retry");
        }
    }
}

fn datagram_at_a_waiting_client(input: &[u8]) {
    let now = base_instant();
    let mut client = Endpoint::new(addr(1001), None);
    let config = Config {
        protection: Protection::Null,
        ..Config::default()
    };
    let Ok(handle) = client.connect(config, addr(SERVER), now) else {
        return;
    };
    let mut buf = vec![0u8; 2048];
    let Some((len, _)) = client.poll_transmit(now, &mut buf) else {
        return;
    };
    let first_dcid = parse_header(&buf[..len])
        .map(|h| h.dcid)
        .expect("our own Initial parses");
    let mut datagram = input.to_vec();
    client.recv(&mut datagram, addr(SERVER), now);
    if client.stats().retries_received > 0 {
        let retry = parse_retry(input).expect("a taken Retry parses");
        let tag = sift::crypto::retry::integrity_tag(
            retry.version,
            true,
            first_dcid.as_slice(),
            retry.signed,
        );
        assert_eq!(&tag, retry.tag, "a Retry taken without a good tag");
    }
    // Whatever came in, the client can still send.
    let _ = client.poll_transmit(now, &mut buf);
    let _ = client.connection(handle);
}

/// A Retry, a Version Negotiation, tokens empty and forged, and a datagram
/// for a waiting client.
pub fn seeds() -> Vec<Seed> {
    let with_case = |case: u8, bytes: &[u8]| {
        let mut out = vec![case];
        out.extend_from_slice(bytes);
        out
    };
    let dcid = ConnectionId::new(&[1; 8]).expect("8 bytes");
    let scid = ConnectionId::new(&[2; 20]).expect("20 bytes");
    let mut retry = Vec::new();
    encode_retry_unsigned(&mut retry, VERSION, &dcid, &scid, b"a sealed token").expect("a token");
    let tag = sift::crypto::retry::integrity_tag(VERSION, true, &[9; 8], &retry);
    retry.extend_from_slice(&tag);
    // RFC 9001 §A.4's QUIC v1 Retry, unused flag bits set.
    let mut quic_retry = Vec::new();
    encode_retry_unsigned(
        &mut quic_retry,
        sift::wire::QUIC_V1,
        &ConnectionId::EMPTY,
        &ConnectionId::new(&[0xf0, 0x67, 0xa5, 0x50, 0x2a, 0x42, 0x62, 0xb5]).expect("8 bytes"),
        b"token",
    )
    .expect("a token");
    quic_retry[0] |= 0x0f;
    let tag = sift::crypto::retry::integrity_tag(
        sift::wire::QUIC_V1,
        false,
        &[0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08],
        &quic_retry,
    );
    quic_retry.extend_from_slice(&tag);
    let mut vn = Vec::new();
    encode_version_negotiation(&mut vn, 0x2a, &[1; 8], &[2; 8], &[VERSION, 0x1a2a_3a4a])
        .expect("short IDs");
    vec![
        Seed::new("retry", with_case(0, &retry)),
        Seed::new("retry-quic-v1", with_case(0, &quic_retry)),
        Seed::new("version-negotiation", with_case(1, &vn)),
        Seed::new("no-token", with_case(2, &[])),
        Seed::new("forged-token", with_case(2, &[0xab; 60])),
        Seed::new("retry-to-client", with_case(3, &retry)),
        Seed::new("vn-to-client", with_case(3, &vn)),
    ]
}
