//! RFC 9368 on the two-endpoint harness (issue 53's requirements map): a
//! client that the server answers with Version Negotiation starts over in
//! a version both speak, once, and a server pays no attention to Version
//! Negotiation packets. The Version Negotiation is handed to the client
//! as its endpoint would (`endpoint::version`).

use super::*;
use crate::crypto::tls::DEFAULT_ALPN;
use crate::wire::QUIC_V1;

/// A version no one speaks, as a server lists beside its own (RFC 9000 §6.3).
const RESERVED: u32 = 0x1a2a_3a4a;

fn speaking(versions: &[u32]) -> Config {
    Config {
        versions: versions.to_vec(),
        ..fixed_size()
    }
}

/// A pair whose client's first flight was lost on its way to a server
/// that speaks only sift/1, and that then hears the server's Version
/// Negotiation listing `offered`.
fn told_to_use(offered: &[u32]) -> Pair {
    let mut pair = Pair::new(fixed_size(), speaking(&[VERSION]));
    pair.flush(&mut |_, _, _| PathAction::Drop);
    assert_eq!(pair.client.version(), QUIC_V1, "a TLS client starts in v1");
    let echoed = pair.client.original_dcid;
    let now = pair.now;
    pair.client
        .on_version_negotiation(echoed.as_slice(), offered.iter().copied(), now);
    pair
}

#[test]
fn a_client_told_to_use_another_version_it_speaks_starts_over_in_it() {
    let mut pair = told_to_use(&[VERSION, RESERVED]);
    assert!(!pair.client.is_closing() && !pair.client.is_closed());
    assert_eq!(pair.client.version(), VERSION);
    pair.handshake();
    assert_eq!(pair.client.version(), VERSION);
    assert_eq!(pair.server.version(), VERSION);
    // A new TLS session: ALPN negotiated afresh (RFC 9368 §6).
    assert_eq!(pair.client.handshake.alpn_protocol(), Some(DEFAULT_ALPN));
    let data = pattern(50_000);
    assert_eq!(transfer(&mut pair, &data, &mut deliver_all), data);
}

#[test]
fn a_version_negotiation_answering_the_second_attempt_is_ignored() {
    let mut pair = told_to_use(&[VERSION, RESERVED]);
    pair.flush(&mut |_, _, _| PathAction::Drop);
    // RFC 9368 §4: an attempt made on a Version Negotiation ignores any
    // other (here, one that would send it back to v1).
    let echoed = pair.client.original_dcid;
    let now = pair.now;
    pair.client
        .on_version_negotiation(echoed.as_slice(), [QUIC_V1], now);
    assert!(!pair.client.is_closing() && !pair.client.is_closed());
    assert_eq!(pair.client.version(), VERSION);
    pair.handshake();
}

#[test]
fn a_client_that_speaks_none_of_the_versions_offered_gives_up() {
    let pair = told_to_use(&[RESERVED, 0x6b33_43cf]);
    assert!(pair.client.is_closed() || pair.client.is_closing());
    assert!(matches!(
        pair.client.close_reason(),
        Some(CloseReason::VersionMismatch { .. })
    ));
}

#[test]
fn a_server_pays_no_attention_to_version_negotiation() {
    let mut pair = Pair::default();
    pair.flush(&mut deliver_all);
    assert!(pair.step(&mut deliver_all));
    let now = pair.now;
    let cid = pair.server.original_dcid;
    pair.server
        .on_version_negotiation(cid.as_slice(), [RESERVED], now);
    assert!(!pair.server.is_closing() && !pair.server.is_closed());
    pair.handshake();
}

#[test]
fn a_clients_version_information_lists_its_chosen_version() {
    // RFC 9368 §3: the chosen version is among the available ones, under
    // TLS (starting in v1) and Null (starting in sift/1) alike.
    for (protection, versions) in [
        (Protection::Tls, vec![VERSION, QUIC_V1]),
        (Protection::Tls, vec![QUIC_V1]),
        (Protection::Null, vec![VERSION]),
    ] {
        let config = Config {
            protection,
            versions,
            ..fixed_size()
        };
        let mut pair = Pair::new(config, fixed_size());
        let info = pair
            .client
            .handshake
            .local_params_mut()
            .version_information
            .clone()
            .expect("a client sends version_information");
        assert_eq!(info.chosen, pair.client.version());
        assert!(info.available.contains(&info.chosen), "{info:?}");
    }
}

#[test]
fn a_client_resuming_a_sift1_session_sends_its_zero_rtt_in_sift1() {
    // RFC 9368 §7.3: 0-RTT never needs converting, because a client with a
    // sift/1 ticket starts in sift/1 (a v1 ticket starts in v1).
    let mut pair = super::rfc9001::resumed_pair();
    assert_eq!(pair.client.version(), VERSION);
    assert!(pair.client.early_data_possible());
    let versions = std::cell::RefCell::new(Vec::new());
    pair.flush(&mut |to_server, _, bytes| {
        if to_server {
            versions
                .borrow_mut()
                .push(u32::from_be_bytes(bytes[1..5].try_into().unwrap()));
        }
        PathAction::Deliver
    });
    let versions = versions.into_inner();
    assert!(!versions.is_empty());
    assert!(versions.iter().all(|v| *v == VERSION), "{versions:x?}");
    pair.handshake();
    assert!(pair.client.stats().zero_rtt_accepted);
}
