use super::*;
use crate::crypto::{open_packet, seal_packet, OpenError};
use crate::wire::{
    decode_packet_number, parse_header, ConnectionId, Header, PacketType, HEADER_TAG_LEN,
    SHORT_HEADER_DCID_LEN, VERSION,
};

const DCID: &[u8] = &[0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08];

fn one_rtt_header(packet_number: u64) -> Header<'static> {
    Header {
        ty: PacketType::OneRtt,
        version: VERSION,
        dcid: ConnectionId::new(&[0x5c; SHORT_HEADER_DCID_LEN]).unwrap(),
        scid: ConnectionId::EMPTY,
        token: &[],
        packet_number,
        payload_len: 0,
        key_phase: false,
    }
}

/// Client and server protections of one cipher suite, from Initial-style
/// secrets (fixed, so failures reproduce).
fn pair(suite: rustls::SupportedCipherSuite) -> (TlsProtection, TlsProtection) {
    let quic = suite.tls13().and_then(|s| s.quic_suite()).unwrap();
    let client = quic.keys(DCID, rustls::Side::Client, Version::V1);
    let server = quic.keys(DCID, rustls::Side::Server, Version::V1);
    (
        TlsProtection::new(
            client.local.packet,
            client.remote.packet,
            HeaderKeys::new(client.local.header, client.remote.header),
        ),
        TlsProtection::new(
            server.local.packet,
            server.remote.packet,
            HeaderKeys::new(server.local.header, server.remote.header),
        ),
    )
}

fn suites() -> [rustls::SupportedCipherSuite; 2] {
    use rustls::crypto::ring::cipher_suite::*;
    [TLS13_AES_128_GCM_SHA256, TLS13_CHACHA20_POLY1305_SHA256]
}

fn receive(
    packet: &mut [u8],
    protection: &TlsProtection,
    largest: u64,
) -> Result<Vec<u8>, OpenError> {
    let parsed = parse_header(packet)?.without_token();
    let number = decode_packet_number(Some(largest), parsed.truncated_pn);
    open_packet(&parsed, number, packet, protection).map(<[u8]>::to_vec)
}

#[test]
fn public_seed_keys_match_the_suites_initial_schedule() {
    for (aead, suite) in [
        (Aead::Aes128Gcm, suites()[0]),
        (Aead::ChaCha20Poly1305, suites()[1]),
    ] {
        let (client, _) = pair(suite);
        let server = public_seed_protection(aead, DCID, Side::Server);
        let mut packet = Vec::new();
        seal_packet(&one_rtt_header(2), b"\x01", &client, &mut packet).unwrap();
        assert!(receive(&mut packet, &server, 1).is_ok(), "{aead:?}");
    }
}

#[test]
fn sealed_packet_opens_at_the_peer_and_hides_its_frames() {
    for suite in suites() {
        let (client, server) = pair(suite);
        let frames = b"\x08\x00\x00secret stream bytes".to_vec();
        let mut packet = Vec::new();
        seal_packet(&one_rtt_header(7), &frames, &client, &mut packet).unwrap();
        assert!(
            !packet.windows(6).any(|w| w == b"secret"),
            "{suite:?}: plaintext on the wire"
        );
        assert_eq!(receive(&mut packet, &server, 6), Ok(frames), "{suite:?}");
    }
}

#[test]
fn header_damage_fails_the_header_tag_and_payload_damage_only_the_payload_tag() {
    for suite in suites() {
        let (client, server) = pair(suite);
        let mut packet = Vec::new();
        seal_packet(&one_rtt_header(7), b"\x01 frames", &client, &mut packet).unwrap();
        let header_and_tag = parse_header(&packet).unwrap().header_len + HEADER_TAG_LEN;
        for byte in 0..packet.len() {
            let mut damaged = packet.clone();
            damaged[byte] ^= 0x04;
            let expected = if byte < header_and_tag {
                OpenError::HeaderCorrupt
            } else {
                OpenError::PayloadCorrupt
            };
            // A flip in the flags or length field may make the header
            // unparsable or longer than the packet: malformed, dropped like
            // a bad header.
            match receive(&mut damaged, &server, 6) {
                Err(OpenError::Malformed(_)) if byte < header_and_tag => {}
                result => assert_eq!(result, Err(expected), "{suite:?}: byte {byte}"),
            }
        }
    }
}

#[test]
fn header_tag_uses_its_own_nonce_domain() {
    let quic = rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256
        .tls13()
        .and_then(|s| s.quic_suite())
        .unwrap();
    let keys = quic.keys(DCID, rustls::Side::Client, Version::V1);
    let header = b"header bytes";
    let payload_nonce_tag = keys
        .local
        .packet
        .encrypt_in_place(5, header, &mut [])
        .unwrap();
    let header_nonce_tag = keys
        .local
        .packet
        .encrypt_in_place(5 | HEADER_TAG_NONCE_BIT, header, &mut [])
        .unwrap();
    let protection = TlsProtection::new(
        keys.local.packet,
        keys.remote.packet,
        HeaderKeys::new(keys.local.header, keys.remote.header),
    );
    let tag = protection.header_tag(5, header);
    assert_eq!(tag[..], header_nonce_tag.as_ref()[..HEADER_TAG_LEN]);
    assert_ne!(tag[..], payload_nonce_tag.as_ref()[..HEADER_TAG_LEN]);
}

#[test]
fn a_key_cannot_open_its_own_direction() {
    let (client, _server) = pair(suites()[0]);
    let mut packet = Vec::new();
    seal_packet(&one_rtt_header(1), b"\x01", &client, &mut packet).unwrap();
    // The client's remote key is the server's sending key.
    assert_eq!(
        receive(&mut packet, &client, 0),
        Err(OpenError::HeaderCorrupt)
    );
}

#[test]
fn initial_keys_of_both_sides_come_from_the_client_dcid() {
    let client = initial_protection(DCID, Side::Client);
    let server = initial_protection(DCID, Side::Server);
    let elsewhere = initial_protection(b"other-cid", Side::Server);
    let mut packet = Vec::new();
    seal_packet(&one_rtt_header(0), b"\x06\x00\x01x", &client, &mut packet).unwrap();
    assert!(receive(&mut packet.clone(), &server, 0).is_ok());
    assert_eq!(
        receive(&mut packet, &elsewhere, 0),
        Err(OpenError::HeaderCorrupt)
    );
}

/// Runs a handshake between two sessions in memory; returns both once
/// neither has anything more to say.
fn handshake(
    client: &mut TlsSession,
    server: &mut TlsSession,
) -> Result<(Vec<Level>, Vec<Level>), HandshakeError> {
    let mut levels = [Level::Initial, Level::Initial];
    let mut changes = (Vec::new(), Vec::new());
    for _ in 0..8 {
        let mut quiet = true;
        for from_client in [true, false] {
            let (sender, receiver, index) = if from_client {
                (&mut *client, &mut *server, 0)
            } else {
                (&mut *server, &mut *client, 1)
            };
            loop {
                let mut bytes = Vec::new();
                let change = sender.write_handshake(&mut bytes);
                if !bytes.is_empty() {
                    quiet = false;
                    receiver.read_handshake(levels[index], &bytes)?;
                }
                let Some(change) = change else { break };
                levels[index] = match change {
                    KeyChange::Handshake(_) => Level::Handshake,
                    KeyChange::OneRtt(_) => Level::OneRtt,
                };
                if from_client {
                    changes.0.push(levels[index]);
                } else {
                    changes.1.push(levels[index]);
                }
            }
        }
        if quiet {
            break;
        }
    }
    Ok(changes)
}

fn params(corruption_notices: bool) -> Vec<u8> {
    let mut out = Vec::new();
    TransportParams {
        corruption_notices,
        ..TransportParams::default()
    }
    .encode(&mut out);
    out
}

const LOCALHOST: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);

#[test]
fn pinned_handshake_completes_and_carries_transport_parameters_and_alpn() {
    let identity = ServerIdentity::self_signed(&["localhost"]).unwrap();
    let config = TlsConfig::loopback(identity.clone());
    let mut client = TlsSession::client(&config, LOCALHOST, params(true)).unwrap();
    let mut server = TlsSession::server(&config, params(false)).unwrap();
    let (client_levels, server_levels) = handshake(&mut client, &mut server).unwrap();
    assert_eq!(client_levels, [Level::Handshake, Level::OneRtt]);
    assert_eq!(server_levels, [Level::Handshake, Level::OneRtt]);
    assert!(!client.is_handshaking() && !server.is_handshaking());
    assert!(server.peer_params().unwrap().unwrap().corruption_notices);
    assert!(!client.peer_params().unwrap().unwrap().corruption_notices);
    assert_eq!(client.alpn_protocol(), Some(DEFAULT_ALPN));
    assert_eq!(
        client.connection.negotiated_cipher_suite(),
        Some(rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256),
        "AES-128-GCM first, as quinn orders the suites"
    );
    assert_eq!(
        client.peer_certificate_fingerprint(),
        Some(identity.fingerprint())
    );
    // Key update: both sides derive the same next phase.
    for _ in 0..3 {
        let sealing = client.next_one_rtt_keys().unwrap();
        let opening = server.next_one_rtt_keys().unwrap();
        let mut packet = Vec::new();
        seal_packet(&one_rtt_header(3), b"\x01", &*sealing, &mut packet).unwrap();
        let parsed = parse_header(&packet).unwrap().without_token();
        assert!(open_packet(&parsed, 3, &mut packet, &*opening).is_ok());
    }
}

#[test]
fn wrong_pin_fails_the_handshake_with_bad_certificate() {
    let identity = ServerIdentity::self_signed(&["localhost"]).unwrap();
    let other = ServerIdentity::self_signed(&["localhost"]).unwrap();
    let mut client = TlsSession::client(
        &TlsConfig::client(ServerTrust::Pinned(vec![other.fingerprint()])),
        LOCALHOST,
        params(true),
    )
    .unwrap();
    let mut server =
        TlsSession::server(&TlsConfig::server(identity.clone()), params(true)).unwrap();
    let error = handshake(&mut client, &mut server).unwrap_err();
    let HandshakeError::Tls { alert, reason } = &error else {
        panic!("expected a TLS error, got {error:?}");
    };
    assert_eq!(*alert, 46, "certificate_unknown");
    assert!(
        reason.contains(&identity.fingerprint().to_string()),
        "{reason}"
    );
    assert_eq!(error.error_code(), 0x100 + 46);
}

#[test]
fn roots_trust_checks_the_server_name() {
    let identity = ServerIdentity::self_signed(&["sift.test"]).unwrap();
    let roots = ServerTrust::roots_from_pem(identity.chain_pem().as_bytes()).unwrap();
    for (name, ok) in [("sift.test", true), ("other.test", false)] {
        let config = TlsConfig {
            server_name: Some(name.to_string()),
            ..TlsConfig::client(roots.clone())
        };
        let mut client = TlsSession::client(&config, LOCALHOST, params(true)).unwrap();
        let mut server =
            TlsSession::server(&TlsConfig::server(identity.clone()), params(true)).unwrap();
        assert_eq!(handshake(&mut client, &mut server).is_ok(), ok, "{name}");
    }
}

#[test]
fn custom_verifier_sees_the_chain_and_can_refuse() {
    #[derive(Debug)]
    struct Refuse;
    impl CertificateVerifier for Refuse {
        fn verify(&self, end: &[u8], _: &[&[u8]], name: &str) -> Result<(), CertificateRejected> {
            Err(CertificateRejected(format!(
                "{} for {name} refused",
                Fingerprint::of_certificate(end)
            )))
        }
    }
    let identity = ServerIdentity::self_signed(&["localhost"]).unwrap();
    let config = TlsConfig {
        server_name: Some("localhost".into()),
        ..TlsConfig::client(ServerTrust::Custom(Arc::new(Refuse)))
    };
    let mut client = TlsSession::client(&config, LOCALHOST, params(true)).unwrap();
    let mut server =
        TlsSession::server(&TlsConfig::server(identity.clone()), params(true)).unwrap();
    let error = handshake(&mut client, &mut server).unwrap_err().to_string();
    assert!(
        error.contains(&format!("{} for localhost refused", identity.fingerprint())),
        "{error}"
    );
}

#[test]
fn a_client_offering_only_chacha20_gets_it_and_the_server_says_so() {
    let identity = ServerIdentity::self_signed(&["localhost"]).unwrap();
    let client_config = TlsConfig {
        cipher_suites: vec![Aead::ChaCha20Poly1305],
        ..TlsConfig::loopback(identity.clone())
    };
    let mut client = TlsSession::client(&client_config, LOCALHOST, params(true)).unwrap();
    let mut server = TlsSession::server(&TlsConfig::server(identity), params(true)).unwrap();
    handshake(&mut client, &mut server).unwrap();
    assert_eq!(client.cipher_suite(), Some(Aead::ChaCha20Poly1305));
    assert_eq!(server.cipher_suite(), Some(Aead::ChaCha20Poly1305));
}

#[test]
fn no_cipher_suite_in_common_fails_the_handshake() {
    let identity = ServerIdentity::self_signed(&["localhost"]).unwrap();
    let client_config = TlsConfig {
        cipher_suites: vec![Aead::ChaCha20Poly1305],
        ..TlsConfig::loopback(identity.clone())
    };
    let server_config = TlsConfig {
        cipher_suites: vec![Aead::Aes128Gcm, Aead::Aes256Gcm],
        ..TlsConfig::server(identity)
    };
    let mut client = TlsSession::client(&client_config, LOCALHOST, params(true)).unwrap();
    let mut server = TlsSession::server(&server_config, params(true)).unwrap();
    // handshake_failure (40): no suite in common.
    let error = handshake(&mut client, &mut server).unwrap_err();
    assert!(
        matches!(error, HandshakeError::Tls { alert: 40, .. }),
        "{error:?}"
    );
}

#[test]
fn cipher_names_parse_and_print_alike() {
    for aead in Aead::ALL {
        assert_eq!(aead.name().parse::<Aead>(), Ok(aead));
    }
    assert!("aes-128".parse::<Aead>().is_err());
}

#[test]
fn alpn_mismatch_fails_the_handshake() {
    let identity = ServerIdentity::self_signed(&["localhost"]).unwrap();
    let client_config = TlsConfig {
        alpn_protocols: vec![b"other/1".to_vec()],
        ..TlsConfig::loopback(identity.clone())
    };
    let mut client = TlsSession::client(&client_config, LOCALHOST, params(true)).unwrap();
    let mut server = TlsSession::server(&TlsConfig::server(identity), params(true)).unwrap();
    let error = handshake(&mut client, &mut server).unwrap_err();
    assert!(
        matches!(error, HandshakeError::Tls { alert: 120, .. }),
        "{error:?}"
    );
}

#[test]
fn sessions_need_their_half_of_the_config() {
    assert_eq!(
        TlsSession::validate(&TlsConfig::default(), Side::Server),
        Err(TlsSetupError::NoIdentity)
    );
    assert_eq!(
        TlsSession::validate(&TlsConfig::default(), Side::Client),
        Err(TlsSetupError::NoTrust)
    );
}

/// A server that asks for client certificates, and a client presenting
/// `client_identity` (if any) that pins the server.
fn client_auth_pair(
    server_identity: &ServerIdentity,
    client_identity: Option<ServerIdentity>,
) -> (TlsSession, TlsSession) {
    let client_config = TlsConfig {
        client_identity,
        ..TlsConfig::loopback(server_identity.clone())
    };
    let server_config = TlsConfig {
        request_client_certificate: true,
        ..TlsConfig::server(server_identity.clone())
    };
    (
        TlsSession::client(&client_config, LOCALHOST, params(true)).unwrap(),
        TlsSession::server(&server_config, params(true)).unwrap(),
    )
}

#[test]
fn a_server_that_asks_sees_the_fingerprint_of_the_clients_certificate() {
    let server_identity = ServerIdentity::self_signed(&["localhost"]).unwrap();
    let client_identity = ServerIdentity::self_signed(&["sift-client"]).unwrap();
    let (mut client, mut server) =
        client_auth_pair(&server_identity, Some(client_identity.clone()));
    handshake(&mut client, &mut server).unwrap();
    assert!(!server.is_handshaking());
    assert_eq!(
        server.peer_certificate_fingerprint(),
        Some(client_identity.fingerprint())
    );
    assert_eq!(
        client.peer_certificate_fingerprint(),
        Some(server_identity.fingerprint())
    );
}

#[test]
fn a_client_without_a_key_still_completes_the_handshake_anonymously() {
    let server_identity = ServerIdentity::self_signed(&["localhost"]).unwrap();
    let (mut client, mut server) = client_auth_pair(&server_identity, None);
    handshake(&mut client, &mut server).unwrap();
    assert!(!server.is_handshaking() && !client.is_handshaking());
    assert_eq!(server.peer_certificate_fingerprint(), None);
}

#[test]
fn a_server_that_does_not_ask_gets_no_client_certificate() {
    let server_identity = ServerIdentity::self_signed(&["localhost"]).unwrap();
    let client_config = TlsConfig {
        client_identity: Some(ServerIdentity::self_signed(&["sift-client"]).unwrap()),
        ..TlsConfig::loopback(server_identity.clone())
    };
    let mut client = TlsSession::client(&client_config, LOCALHOST, params(true)).unwrap();
    let mut server = TlsSession::server(&TlsConfig::server(server_identity), params(true)).unwrap();
    handshake(&mut client, &mut server).unwrap();
    assert_eq!(server.peer_certificate_fingerprint(), None);
}

#[test]
fn a_copied_client_certificate_without_its_key_fails_the_handshake() {
    // Someone who saw an authorised client's certificate (it names the
    // client, it is no secret) presents it, signing with a key of their
    // own: the CertificateVerify signature does not verify.
    let server_identity = ServerIdentity::self_signed(&["localhost"]).unwrap();
    let victim = ServerIdentity::self_signed(&["sift-client"]).unwrap();
    let impostor = ServerIdentity::self_signed(&["sift-client"]).unwrap();
    let forged = ServerIdentity::with_foreign_key(&victim, &impostor);
    let (mut client, mut server) = client_auth_pair(&server_identity, Some(forged));
    let error = handshake(&mut client, &mut server).unwrap_err();
    let HandshakeError::Tls { alert, reason } = &error else {
        panic!("expected a TLS error, got {error:?}");
    };
    assert_eq!(*alert, 51, "decrypt_error: {reason}");
    assert!(server.is_handshaking(), "the server must not complete");
}

/// One key log line: label, client random, secret.
type KeyLogLine = (String, Vec<u8>, Vec<u8>);

/// Keeps every secret rustls logs, as SSLKEYLOGFILE's writer would.
#[derive(Debug, Default)]
struct RecordedKeyLog(std::sync::Mutex<Vec<KeyLogLine>>);

impl rustls::KeyLog for RecordedKeyLog {
    fn log(&self, label: &str, client_random: &[u8], secret: &[u8]) {
        if let Ok(mut lines) = self.0.lock() {
            lines.push((label.to_string(), client_random.to_vec(), secret.to_vec()));
        }
    }
}

/// RFC 8446 §7.1 HKDF-Expand-Label with an empty context, over SHA-256.
fn expand_label(secret: &[u8], label: &[u8], len: usize) -> Vec<u8> {
    struct Len(usize);
    impl ring::hkdf::KeyType for Len {
        fn len(&self) -> usize {
            self.0
        }
    }
    let full_label = [b"tls13 ".as_slice(), label].concat();
    let info = [
        &(len as u16).to_be_bytes()[..],
        &[full_label.len() as u8],
        &full_label,
        &[0u8],
    ];
    let prk = ring::hkdf::Prk::new_less_safe(ring::hkdf::HKDF_SHA256, secret);
    let mut out = vec![0; len];
    prk.expand(&info, Len(len))
        .and_then(|okm| okm.fill(&mut out))
        .unwrap();
    out
}

#[test]
fn the_key_log_holds_the_secrets_that_open_the_clients_packets() {
    let identity = ServerIdentity::self_signed(&["localhost"]).unwrap();
    let key_log = Arc::new(RecordedKeyLog::default());
    let client_config = TlsConfig {
        key_log: Some(key_log.clone()),
        ..TlsConfig::loopback(identity.clone())
    };
    let mut client = TlsSession::client(&client_config, LOCALHOST, params(true)).unwrap();
    let mut server = TlsSession::server(&TlsConfig::loopback(identity), params(true)).unwrap();
    // The handshake, keeping the client's 1-RTT keys.
    let mut client_one_rtt = None;
    let mut levels = [Level::Initial, Level::Initial];
    for _ in 0..8 {
        for from_client in [true, false] {
            let (sender, receiver, index) = if from_client {
                (&mut client, &mut server, 0)
            } else {
                (&mut server, &mut client, 1)
            };
            loop {
                let mut bytes = Vec::new();
                let change = sender.write_handshake(&mut bytes);
                if !bytes.is_empty() {
                    receiver.read_handshake(levels[index], &bytes).unwrap();
                }
                match change {
                    None => break,
                    Some(KeyChange::Handshake(_)) => levels[index] = Level::Handshake,
                    Some(KeyChange::OneRtt(keys)) => {
                        levels[index] = Level::OneRtt;
                        if from_client {
                            client_one_rtt = Some(keys);
                        }
                    }
                }
            }
        }
    }
    let keys = client_one_rtt.expect("the client reached 1-RTT");

    // A 1-RTT packet the client seals.
    let header = b"a sift header, authenticated";
    let frames = b"frames only the key log can open";
    let packet_number = 7;
    let mut packet = [header.as_slice(), frames, &[0u8; 16]].concat();
    keys.seal_payload(packet_number, header.len(), &mut packet)
        .unwrap();
    assert_ne!(&packet[header.len()..header.len() + frames.len()], frames);

    // Open it with nothing but the logged CLIENT_TRAFFIC_SECRET_0
    // (RFC 9001 §5.1, §5.3: "quic key", "quic iv"; nonce = iv ^ pn).
    let lines = key_log.0.lock().unwrap();
    let labels: Vec<&str> = lines.iter().map(|(label, _, _)| label.as_str()).collect();
    for label in [
        "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
        "SERVER_HANDSHAKE_TRAFFIC_SECRET",
        "CLIENT_TRAFFIC_SECRET_0",
        "SERVER_TRAFFIC_SECRET_0",
    ] {
        assert!(labels.contains(&label), "{label} logged: {labels:?}");
    }
    let (_, client_random, secret) = lines
        .iter()
        .find(|(label, _, _)| label == "CLIENT_TRAFFIC_SECRET_0")
        .unwrap();
    assert_eq!(client_random.len(), 32);
    assert_eq!(
        secret.len(),
        32,
        "TLS_AES_128_GCM_SHA256, sift's first choice"
    );
    let key = expand_label(secret, b"quic key", 16);
    let iv = expand_label(secret, b"quic iv", 12);
    let mut nonce = [0u8; 12];
    nonce.copy_from_slice(&iv);
    for (n, pn) in nonce[4..].iter_mut().zip(packet_number.to_be_bytes()) {
        *n ^= pn;
    }
    let key = ring::aead::LessSafeKey::new(
        ring::aead::UnboundKey::new(&ring::aead::AES_128_GCM, &key).unwrap(),
    );
    let mut sealed = packet[header.len()..].to_vec();
    let opened = key
        .open_in_place(
            ring::aead::Nonce::assume_unique_for_key(nonce),
            ring::aead::Aad::from(header.as_slice()),
            &mut sealed,
        )
        .expect("the logged secret opens the packet");
    assert_eq!(opened, frames);
}
