//! RFC 9001's rules for the TLS handshake itself (issue 53's requirements
//! map, `docs/requirements.toml`): what sift's client offers, what its
//! server accepts, and the QUIC error each refusal closes with. Handshake
//! messages are read and rewritten here at the byte level (RFC 8446 §4),
//! so that a peer breaking a rule can be played without a broken TLS stack.

use std::net::{IpAddr, SocketAddr};

use super::config::{provider, server_config};
use super::*;
use crate::crypto::session::HandshakeError;
use crate::wire::TransportParams;

const LOCALHOST: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

/// RFC 8446 §4: handshake message types.
const CLIENT_HELLO: u8 = 1;
const NEW_SESSION_TICKET: u8 = 4;
const END_OF_EARLY_DATA: u8 = 5;
const CERTIFICATE_REQUEST: u8 = 13;
const KEY_UPDATE: u8 = 24;
/// RFC 8446 §4.2: extension types.
const EXT_SIGNATURE_ALGORITHMS: u16 = 13;
const EXT_EARLY_DATA: u16 = 42;
const EXT_SUPPORTED_VERSIONS: u16 = 43;
/// RFC 9001 §8.2.
const EXT_QUIC_TRANSPORT_PARAMETERS: u16 = 0x39;
/// RFC 9000 §20.1.
const PROTOCOL_VIOLATION: u64 = 0xa;

fn params() -> Vec<u8> {
    let mut out = Vec::new();
    TransportParams::default().encode(&mut out);
    out
}

fn identity() -> ServerIdentity {
    ServerIdentity::self_signed(&["localhost"]).unwrap()
}

/// A handshake message: type, 24-bit length, body.
fn message(kind: u8, body: &[u8]) -> Vec<u8> {
    let len = body.len() as u32;
    let mut out = vec![kind];
    out.extend_from_slice(&len.to_be_bytes()[1..]);
    out.extend_from_slice(body);
    out
}

/// The handshake messages in `bytes`, as (type, body).
fn messages(mut bytes: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut out = Vec::new();
    while bytes.len() >= 4 {
        let len = usize::from(bytes[1]) << 16 | usize::from(bytes[2]) << 8 | usize::from(bytes[3]);
        out.push((bytes[0], bytes[4..4 + len].to_vec()));
        bytes = &bytes[4 + len..];
    }
    out
}

/// A ClientHello taken apart (RFC 8446 §4.1.2), to be changed and put
/// back together.
struct Hello {
    version_and_random: Vec<u8>,
    session_id: Vec<u8>,
    cipher_suites: Vec<u16>,
    compression: Vec<u8>,
    extensions: Vec<(u16, Vec<u8>)>,
}

fn take<'a>(bytes: &mut &'a [u8], len: usize) -> &'a [u8] {
    let (head, rest) = bytes.split_at(len);
    *bytes = rest;
    head
}

fn take_u16(bytes: &mut &[u8]) -> u16 {
    u16::from_be_bytes(take(bytes, 2).try_into().unwrap())
}

impl Hello {
    fn parse(hello: &[u8]) -> Self {
        let [(CLIENT_HELLO, body)] = &messages(hello)[..] else {
            panic!("not one ClientHello");
        };
        let mut body = &body[..];
        let version_and_random = take(&mut body, 34).to_vec();
        let len = usize::from(take(&mut body, 1)[0]);
        let session_id = take(&mut body, len).to_vec();
        let len = usize::from(take_u16(&mut body));
        let mut suites = take(&mut body, len);
        let cipher_suites = (0..len / 2).map(|_| take_u16(&mut suites)).collect();
        let len = usize::from(take(&mut body, 1)[0]);
        let compression = take(&mut body, len).to_vec();
        let len = usize::from(take_u16(&mut body));
        let mut all = take(&mut body, len);
        let mut extensions = Vec::new();
        while !all.is_empty() {
            let kind = take_u16(&mut all);
            let len = usize::from(take_u16(&mut all));
            extensions.push((kind, take(&mut all, len).to_vec()));
        }
        Self {
            version_and_random,
            session_id,
            cipher_suites,
            compression,
            extensions,
        }
    }

    fn extension(&self, kind: u16) -> Option<&[u8]> {
        self.extensions
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, data)| &data[..])
    }

    fn without_extension(mut self, kind: u16) -> Self {
        self.extensions.retain(|(k, _)| *k != kind);
        self
    }

    fn encode(&self) -> Vec<u8> {
        let mut body = self.version_and_random.clone();
        body.push(self.session_id.len() as u8);
        body.extend_from_slice(&self.session_id);
        body.extend_from_slice(&(self.cipher_suites.len() as u16 * 2).to_be_bytes());
        for suite in &self.cipher_suites {
            body.extend_from_slice(&suite.to_be_bytes());
        }
        body.push(self.compression.len() as u8);
        body.extend_from_slice(&self.compression);
        let mut extensions = Vec::new();
        for (kind, data) in &self.extensions {
            extensions.extend_from_slice(&kind.to_be_bytes());
            extensions.extend_from_slice(&(data.len() as u16).to_be_bytes());
            extensions.extend_from_slice(data);
        }
        body.extend_from_slice(&(extensions.len() as u16).to_be_bytes());
        body.extend_from_slice(&extensions);
        message(CLIENT_HELLO, &body)
    }
}

/// The ClientHello a sift client with `config` sends.
fn client_hello(config: &TlsConfig) -> Vec<u8> {
    let mut client = TlsSession::client(config, LOCALHOST, params()).unwrap();
    let mut hello = Vec::new();
    assert!(client.write_handshake(&mut hello).is_none());
    hello
}

/// What one side wrote, at the level it wrote it.
type Written = Vec<(Level, Vec<u8>)>;

/// Takes everything `session` has to write now into `out`, at the write
/// level `level` follows; as `conn::handshake` does after each read, so
/// that bytes and key changes keep their order.
fn pump(session: &mut TlsSession, level: &mut Level, out: &mut Written) {
    loop {
        let mut bytes = Vec::new();
        let change = session.write_handshake(&mut bytes);
        if !bytes.is_empty() {
            out.push((*level, bytes));
        }
        match change {
            None => return,
            Some(KeyChange::Handshake(_)) => *level = Level::Handshake,
            Some(KeyChange::OneRtt(_)) => *level = Level::OneRtt,
        }
    }
}

/// Runs a handshake in memory until neither side has more to say; returns
/// the first error, or every message each side wrote at each level
/// (client's, then server's).
fn handshake(
    client: &mut TlsSession,
    server: &mut TlsSession,
) -> Result<(Written, Written), HandshakeError> {
    let mut levels = [Level::Initial, Level::Initial];
    let mut written: [Written; 2] = [Vec::new(), Vec::new()];
    let mut outbox: [Written; 2] = [Vec::new(), Vec::new()];
    pump(client, &mut levels[0], &mut outbox[0]);
    while !outbox[0].is_empty() || !outbox[1].is_empty() {
        for from in 0..2 {
            let to = 1 - from;
            for (level, bytes) in std::mem::take(&mut outbox[from]) {
                let receiver = if to == 0 { &mut *client } else { &mut *server };
                receiver.read_handshake(level, &bytes)?;
                pump(receiver, &mut levels[to], &mut outbox[to]);
                written[from].push((level, bytes));
            }
        }
    }
    let [client_wrote, server_wrote] = written;
    Ok((client_wrote, server_wrote))
}

/// The types of the messages written at `level`.
fn types_at(written: &Written, level: Level) -> Vec<u8> {
    written
        .iter()
        .filter(|(at, _)| *at == level)
        .flat_map(|(_, bytes)| messages(bytes))
        .map(|(kind, _)| kind)
        .collect()
}

/// A client and a server that completed a handshake under one loopback
/// identity; the server issues tickets when `tickets`.
fn completed(tickets: bool) -> (TlsSession, TlsSession) {
    let config = TlsConfig {
        session_cache: tickets.then(|| SessionCache::new(16, true)),
        ..TlsConfig::loopback(identity())
    };
    let mut client = TlsSession::client(&config, LOCALHOST, params()).unwrap();
    let mut server = TlsSession::server(&config, params()).unwrap();
    handshake(&mut client, &mut server).unwrap();
    assert!(!client.is_handshaking() && !server.is_handshaking());
    (client, server)
}

// ---- RFC 9001 §4.2: TLS 1.3 only ---------------------------------------------

#[test]
fn a_client_hello_offers_tls_1_3_only() {
    let hello = Hello::parse(&client_hello(&TlsConfig::loopback(identity())));
    // supported_versions: a one-entry list, TLS 1.3 (0x0304).
    assert_eq!(
        hello.extension(EXT_SUPPORTED_VERSIONS),
        Some(&[2, 0x03, 0x04][..])
    );
}

#[test]
fn a_client_hello_without_tls_1_3_fails_the_handshake() {
    // Without supported_versions a hello offers TLS 1.2 (its
    // legacy_version): the server must not go on in it.
    let config = TlsConfig::loopback(identity());
    let tls12 = Hello::parse(&client_hello(&config))
        .without_extension(EXT_SUPPORTED_VERSIONS)
        .encode();
    let mut server = TlsSession::server(&config, params()).unwrap();
    let error = server.read_handshake(Level::Initial, &tls12).unwrap_err();
    assert!(
        matches!(error, HandshakeError::Tls { .. }),
        "a TLS refusal, got {error:?}"
    );
}

// ---- RFC 9001 §4.4: no post-handshake client authentication ------------------

#[test]
fn a_server_asking_for_client_certificates_asks_only_during_the_handshake() {
    let server_identity = identity();
    let config = TlsConfig {
        request_client_certificate: true,
        session_cache: Some(SessionCache::new(16, true)),
        client_identity: Some(identity()),
        ..TlsConfig::loopback(server_identity)
    };
    let mut client = TlsSession::client(&config, LOCALHOST, params()).unwrap();
    let mut server = TlsSession::server(&config, params()).unwrap();
    let (_, server_wrote) = handshake(&mut client, &mut server).unwrap();
    assert!(
        types_at(&server_wrote, Level::Handshake).contains(&CERTIFICATE_REQUEST),
        "the request rides in the handshake"
    );
    let after = types_at(&server_wrote, Level::OneRtt);
    assert!(!after.is_empty(), "tickets follow the handshake");
    assert!(
        after.iter().all(|kind| *kind == NEW_SESSION_TICKET),
        "after the handshake only tickets: {after:?}"
    );
}

#[test]
fn a_certificate_request_after_the_handshake_is_a_protocol_violation() {
    let (mut client, _) = completed(false);
    // certificate_request_context "\x01", signature_algorithms: ed25519.
    let mut body = vec![1, 1];
    let extension = [0x00, 0x02, 0x08, 0x07];
    body.extend_from_slice(&(4 + extension.len() as u16).to_be_bytes());
    body.extend_from_slice(&EXT_SIGNATURE_ALGORITHMS.to_be_bytes());
    body.extend_from_slice(&(extension.len() as u16).to_be_bytes());
    body.extend_from_slice(&extension);
    let error = client
        .read_handshake(Level::OneRtt, &message(CERTIFICATE_REQUEST, &body))
        .unwrap_err();
    assert_eq!(error.error_code(), PROTOCOL_VIOLATION, "{error:?}");
}

// ---- RFC 9001 §4.6.1: 0-RTT is announced as 0xffffffff -----------------------

/// A NewSessionTicket body with an early_data extension of `max_early_data`.
fn ticket_with_early_data(max_early_data: u32) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&3600u32.to_be_bytes()); // ticket_lifetime
    body.extend_from_slice(&7u32.to_be_bytes()); // ticket_age_add
    body.extend_from_slice(&[1, 0]); // ticket_nonce
    body.extend_from_slice(&[0, 4, 1, 2, 3, 4]); // ticket
    body.extend_from_slice(&8u16.to_be_bytes()); // extensions
    body.extend_from_slice(&EXT_EARLY_DATA.to_be_bytes());
    body.extend_from_slice(&4u16.to_be_bytes());
    body.extend_from_slice(&max_early_data.to_be_bytes());
    message(NEW_SESSION_TICKET, &body)
}

/// The early_data extension's value in a NewSessionTicket body, if any.
fn early_data_of_ticket(body: &[u8]) -> Option<u32> {
    let mut body = body;
    take(&mut body, 8); // lifetime, age_add
    let len = usize::from(take(&mut body, 1)[0]);
    take(&mut body, len);
    let len = usize::from(take_u16(&mut body));
    take(&mut body, len);
    let len = usize::from(take_u16(&mut body));
    let mut extensions = take(&mut body, len);
    while !extensions.is_empty() {
        let kind = take_u16(&mut extensions);
        let len = usize::from(take_u16(&mut extensions));
        let data = take(&mut extensions, len);
        if kind == EXT_EARLY_DATA {
            return Some(u32::from_be_bytes(data.try_into().unwrap()));
        }
    }
    None
}

#[test]
fn a_server_announces_early_data_only_as_0xffffffff() {
    for early_data in [true, false] {
        let mut cache = SessionCache::new(16, true);
        cache.early_data = early_data;
        let config = TlsConfig {
            session_cache: Some(cache),
            ..TlsConfig::loopback(identity())
        };
        let expected = early_data.then_some(u32::MAX);
        let rustls_config = server_config(&config, None).unwrap();
        assert_eq!(
            rustls_config.max_early_data_size,
            expected.unwrap_or(0),
            "early data {early_data}"
        );
        let mut client = TlsSession::client(&config, LOCALHOST, params()).unwrap();
        let mut server = TlsSession::server(&config, params()).unwrap();
        let (_, server_wrote) = handshake(&mut client, &mut server).unwrap();
        let tickets: Vec<Option<u32>> = server_wrote
            .iter()
            .filter(|(level, _)| *level == Level::OneRtt)
            .flat_map(|(_, bytes)| messages(bytes))
            .filter(|(kind, _)| *kind == NEW_SESSION_TICKET)
            .map(|(_, body)| early_data_of_ticket(&body))
            .collect();
        assert!(!tickets.is_empty());
        assert!(
            tickets.iter().all(|value| *value == expected),
            "early data {early_data}: {tickets:?}"
        );
    }
}

#[test]
fn a_ticket_announcing_a_tls_early_data_size_is_a_protocol_violation() {
    let (mut client, _) = completed(false);
    // TLS over TCP would allow 16384 bytes; QUIC allows only 0xffffffff.
    let error = client
        .read_handshake(Level::OneRtt, &ticket_with_early_data(16_384))
        .unwrap_err();
    assert_eq!(error.error_code(), PROTOCOL_VIOLATION, "{error:?}");
    // The one value QUIC allows is taken.
    let (mut client, _) = completed(false);
    client
        .read_handshake(Level::OneRtt, &ticket_with_early_data(u32::MAX))
        .unwrap();
}

// ---- RFC 9001 §5.3, §5.4.1, §6.6: what every offered suite carries -----------

#[test]
fn every_cipher_suite_sift_offers_has_header_protection() {
    let suites = provider().cipher_suites.clone();
    assert_eq!(suites.len(), Aead::ALL.len());
    for suite in suites {
        let quic = suite
            .tls13()
            .and_then(|suite| suite.quic_suite())
            .unwrap_or_else(|| panic!("{:?} has no QUIC header protection", suite.suite()));
        let keys = quic.keys(&[0x83; 8], rustls::Side::Client, rustls::quic::Version::V1);
        // RFC 9001 §5.4.2: every scheme samples 16 bytes of ciphertext.
        assert_eq!(keys.local.header.sample_len(), 16, "{:?}", suite.suite());
    }
}

#[test]
fn every_cipher_suite_sift_offers_has_aead_limits() {
    for aead in Aead::ALL {
        let protection = public_seed_protection(aead, &[0x83; 8], Side::Client);
        // RFC 9001 §6.6: 2^23 packets sealed under AES-GCM (ChaCha20's
        // bound, 2^62, is beyond any packet number), and 2^52 (AES-GCM)
        // or 2^36 (ChaCha20) that fail authentication.
        let (confidentiality, integrity) = match aead {
            Aead::Aes128Gcm | Aead::Aes256Gcm => (1 << 23, 1 << 52),
            Aead::ChaCha20Poly1305 => (u64::MAX, 1 << 36),
        };
        assert_eq!(
            protection.confidentiality_limit(),
            confidentiality,
            "{aead}"
        );
        assert_eq!(protection.integrity_limit(), integrity, "{aead}");
    }
}

#[test]
fn a_client_hello_offering_an_unknown_cipher_suite_still_gets_an_answer() {
    let config = TlsConfig::loopback(identity());
    let mut hello = Hello::parse(&client_hello(&config));
    // TLS_AES_128_CCM_8_SHA256, which the ring provider does not have.
    hello.cipher_suites.insert(0, 0x1305);
    let mut server = TlsSession::server(&config, params()).unwrap();
    server
        .read_handshake(Level::Initial, &hello.encode())
        .unwrap();
    let mut server_hello = Vec::new();
    let change = server.write_handshake(&mut server_hello);
    assert!(matches!(change, Some(KeyChange::Handshake(_))));
    assert!(!server_hello.is_empty());
    assert_eq!(server.cipher_suite(), Some(Aead::Aes128Gcm));
}

// ---- RFC 9001 §6: no TLS KeyUpdate -------------------------------------------

#[test]
fn key_updates_write_no_tls_key_update_message() {
    let (mut client, mut server) = completed(false);
    for _ in 0..3 {
        assert!(client.next_one_rtt_keys().is_some());
        assert!(server.next_one_rtt_keys().is_some());
    }
    for session in [&mut client, &mut server] {
        let mut bytes = Vec::new();
        assert!(session.write_handshake(&mut bytes).is_none());
        assert!(
            messages(&bytes).iter().all(|(kind, _)| *kind != KEY_UPDATE),
            "{bytes:?}"
        );
    }
}

#[test]
fn a_tls_key_update_message_closes_with_unexpected_message() {
    let (mut client, mut server) = completed(false);
    for session in [&mut client, &mut server] {
        // update_not_requested
        let error = session
            .read_handshake(Level::OneRtt, &message(KEY_UPDATE, &[0]))
            .unwrap_err();
        assert_eq!(error.error_code(), 0x010a, "{error:?}");
    }
}

// ---- RFC 9001 §8.1: ALPN ---------------------------------------------------------

#[test]
fn a_server_that_selects_no_application_protocol_is_refused_by_the_client() {
    // A server configured with no ALPN selects none; the client offered one.
    let identity = identity();
    let server_config = TlsConfig {
        alpn_protocols: Vec::new(),
        ..TlsConfig::server(identity.clone())
    };
    let mut client =
        TlsSession::client(&TlsConfig::loopback(identity), LOCALHOST, params()).unwrap();
    let mut server = TlsSession::server(&server_config, params()).unwrap();
    let error = handshake(&mut client, &mut server).unwrap_err();
    assert_eq!(error.error_code(), 0x0178, "{error:?}");
}

#[test]
fn a_server_that_selects_an_unoffered_protocol_is_refused_with_no_application_protocol() {
    // rustls refuses such a server with illegal_parameter; RFC 9001 §8.1
    // asks for no_application_protocol.
    let error = quic_handshake_error(
        &rustls::Error::PeerMisbehaved(
            rustls::PeerMisbehaved::SelectedUnofferedApplicationProtocol,
        ),
        Some(rustls::AlertDescription::IllegalParameter),
        true,
    );
    assert_eq!(error.error_code(), 0x0178, "{error:?}");
    // Other refusals keep the alert rustls sent.
    let error = quic_handshake_error(
        &rustls::Error::PeerMisbehaved(rustls::PeerMisbehaved::MissingKeyShare),
        Some(rustls::AlertDescription::MissingExtension),
        true,
    );
    assert_eq!(error.error_code(), 0x016d, "{error:?}");
}

// ---- RFC 9001 §8.2: the transport parameters extension -----------------------

#[test]
fn a_client_hello_without_transport_parameters_closes_with_missing_extension() {
    let config = TlsConfig::loopback(identity());
    let hello = Hello::parse(&client_hello(&config));
    assert!(hello.extension(EXT_QUIC_TRANSPORT_PARAMETERS).is_some());
    let bare = hello
        .without_extension(EXT_QUIC_TRANSPORT_PARAMETERS)
        .encode();
    let mut server = TlsSession::server(&config, params()).unwrap();
    let error = server.read_handshake(Level::Initial, &bare).unwrap_err();
    assert_eq!(error.error_code(), 0x016d, "{error:?}");
}

// ---- RFC 9001 §8.3: no EndOfEarlyData ----------------------------------------

#[test]
fn a_resuming_client_sends_no_end_of_early_data() {
    let tickets = TicketStore::new();
    let config = TlsConfig {
        tickets: Some(tickets.clone()),
        session_cache: Some(SessionCache::new(16, true)),
        ..TlsConfig::loopback(identity())
    };
    let server_address = SocketAddr::new(LOCALHOST, 4433);
    let version = crate::wire::QUIC_V1;
    let mut client =
        TlsSession::client_in_version(&config, server_address, version, params()).unwrap();
    let mut server = TlsSession::server(&config, params()).unwrap();
    handshake(&mut client, &mut server).unwrap();
    assert!(!tickets.is_empty(), "the first handshake left a ticket");

    let mut client =
        TlsSession::client_in_version(&config, server_address, version, params()).unwrap();
    assert!(client.zero_rtt_keys().is_some(), "the ticket allows 0-RTT");
    let mut server = TlsSession::server(&config, params()).unwrap();
    let (client_wrote, _) = handshake(&mut client, &mut server).unwrap();
    assert!(client.is_resumed() && client.early_data_accepted());
    let finished = 20;
    assert_eq!(types_at(&client_wrote, Level::Handshake), [finished]);
    assert!(!types_at(&client_wrote, Level::Handshake).contains(&END_OF_EARLY_DATA));
}

// ---- RFC 9001 §8.4: no middlebox compatibility mode --------------------------

#[test]
fn a_client_hello_asks_for_no_middlebox_compatibility() {
    let hello = Hello::parse(&client_hello(&TlsConfig::loopback(identity())));
    assert!(
        hello.session_id.is_empty(),
        "legacy_session_id must be empty"
    );
}

#[test]
fn a_client_hello_with_a_legacy_session_id_is_refused_before_the_session_is_made() {
    let config = TlsConfig::loopback(identity());
    let hello = client_hello(&config);
    assert!(matches!(
        peek_client_hello(&hello),
        ClientHelloPeek::Params(Some(_))
    ));
    let mut compatible = Hello::parse(&hello);
    compatible.session_id = vec![0x5e; 32];
    assert_eq!(
        peek_client_hello(&compatible.encode()),
        ClientHelloPeek::LegacySessionId
    );
}

// ---- RFC 9368 §4, as TLS carries it: a malformed version_information ---------

#[test]
fn a_malformed_version_information_is_a_transport_parameter_error() {
    // Parameter 0x11 holding three bytes: not whole versions.
    let mut malformed = params();
    malformed.extend_from_slice(&[0x11, 3, 0, 0, 1]);
    let config = TlsConfig::loopback(identity());
    let mut client = TlsSession::client(&config, LOCALHOST, malformed).unwrap();
    let mut hello = Vec::new();
    client.write_handshake(&mut hello);
    let mut server = TlsSession::server(&config, params()).unwrap();
    server.read_handshake(Level::Initial, &hello).unwrap();
    let error = server.peer_params().unwrap_err();
    assert_eq!(error.error_code(), 0x8, "{error:?}");
}

// ---- RFC 9001 §9.2: TLS 1.3's replay protection ----------------------------------

#[test]
fn a_replayed_resuming_client_hello_resumes_and_reads_early_data_once() {
    let tickets = TicketStore::new();
    let config = TlsConfig {
        tickets: Some(tickets.clone()),
        session_cache: Some(SessionCache::new(16, true)),
        ..TlsConfig::loopback(identity())
    };
    let server_address = SocketAddr::new(LOCALHOST, 4433);
    let version = crate::wire::QUIC_V1;
    let mut client =
        TlsSession::client_in_version(&config, server_address, version, params()).unwrap();
    let mut server = TlsSession::server(&config, params()).unwrap();
    handshake(&mut client, &mut server).unwrap();

    let mut resuming =
        TlsSession::client_in_version(&config, server_address, version, params()).unwrap();
    assert!(resuming.zero_rtt_keys().is_some());
    let mut hello = Vec::new();
    resuming.write_handshake(&mut hello);
    // The same flight twice, as an attacker who captured it replays it.
    let outcomes: Vec<(bool, bool)> = (0..2)
        .map(|_| {
            let mut server = TlsSession::server(&config, params()).unwrap();
            server.read_handshake(Level::Initial, &hello).unwrap();
            let mut flight = Vec::new();
            server.write_handshake(&mut flight);
            (server.is_resumed(), server.early_data_accepted())
        })
        .collect();
    assert_eq!(outcomes, [(true, true), (false, false)]);
}

// ---- RFC 9001 §5.4.2: the header protection sample ---------------------------

#[test]
fn a_quic_v1_packet_too_short_for_its_header_protection_sample_is_dropped() {
    use crate::crypto::format::{PacketFormat, QUIC_V1};
    use crate::wire::{ConnectionId, Header, PacketType};
    let sealing = initial_protection(&[0x83; 8], Side::Client);
    let opening = initial_protection(&[0x83; 8], Side::Server);
    let header = Header {
        ty: PacketType::OneRtt,
        version: crate::wire::QUIC_V1,
        dcid: ConnectionId::new(&[0x5a; 8]).unwrap(),
        scid: ConnectionId::new(&[]).unwrap(),
        token: &[],
        packet_number: 7,
        payload_len: 0,
        key_phase: false,
    };
    let mut packet = vec![0u8; 128];
    let len = QUIC_V1
        .seal_into(
            &header,
            None,
            &[0x01],
            &sealing,
            &mut Vec::new(),
            &mut packet,
        )
        .unwrap();
    packet.truncate(len);
    // 1 byte of flags, 8 of destination ID: the sample starts 4 bytes
    // past the packet number's start, and is 16 bytes long.
    let sample_end = 1 + 8 + 4 + 16;
    assert!(packet.len() >= sample_end, "sealing pads for the sample");
    let mut whole = packet.clone();
    let mut parsed = QUIC_V1.parse(&whole).unwrap().without_token();
    assert!(QUIC_V1.unprotect(&mut parsed, &mut whole, &opening).is_ok());
    // A byte short: refused when parsed, before any key is used.
    let mut short = packet[..sample_end - 1].to_vec();
    let dropped = match QUIC_V1.parse(&short).map(|parsed| parsed.without_token()) {
        Err(_) => true,
        Ok(mut parsed) => QUIC_V1
            .unprotect(&mut parsed, &mut short, &opening)
            .is_err(),
    };
    assert!(dropped);
}
