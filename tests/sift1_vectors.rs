//! The test vectors of `docs/sift1.md` (its Appendix A), reproduced byte for
//! byte. The hex is read out of the document itself (its ```` ```hex NAME ````
//! blocks), so the document cannot drift from the code: each vector is
//! computed twice — once with sift's own code (`crypto`, `wire`) and once
//! from the specification's words alone (HKDF-Expand-Label, AES-128-GCM and
//! CRC32C over bytes laid out here by hand) — and both must equal the
//! document's bytes. A failure prints the computed hex to paste.

use std::collections::HashMap;

use ring::{aead, digest, hkdf};
use sift::crypto::packet::{open_packet, seal_packet};
use sift::crypto::retry::integrity_tag;
use sift::crypto::tls::{initial_protection, public_seed_protection, Aead};
use sift::crypto::NullProtection;
use sift::wire::{
    encode_corrupted, encode_retry_unsigned, parse_frames, parse_header, parse_retry, ConnectionId,
    Frame, Header, PacketType, RangeSet, TransportParams, VersionInformation, QUIC_V1,
    VERSION as SIFT_V1,
};
use sift::Side;

const DOC: &str = include_str!("../docs/sift1.md");

/// RFC 9001 §5.2: QUIC v1's Initial salt, which sift/1 uses too.
const INITIAL_SALT: [u8; 20] = [
    0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17, 0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad,
    0xcc, 0xbb, 0x7f, 0x0a,
];
/// sift/1: bit 62 set in the header tag's nonce packet number.
const HEADER_TAG_NONCE_BIT: u64 = 1 << 62;
/// The Initial datagram's size (RFC 9000 §14.1's minimum).
const INITIAL_DATAGRAM_LEN: usize = 1200;

/// Every ```` ```hex NAME ```` block of the document, by name.
fn doc_blocks() -> HashMap<String, Vec<u8>> {
    let mut blocks = HashMap::new();
    let mut current: Option<(String, String)> = None;
    for line in DOC.lines() {
        if let Some(name) = line.strip_prefix("```hex ") {
            current = Some((name.trim().to_string(), String::new()));
        } else if line.starts_with("```") {
            if let Some((name, text)) = current.take() {
                let bytes = unhex(&text).unwrap_or_else(|| panic!("block {name}: not hex"));
                assert!(
                    blocks.insert(name.clone(), bytes).is_none(),
                    "block {name} twice"
                );
            }
        } else if let Some((_, text)) = current.as_mut() {
            text.push_str(line);
        }
    }
    blocks
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    let digits: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    if digits.len() % 2 != 0 {
        return None;
    }
    digits
        .chunks(2)
        .map(|pair| u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok())
        .collect()
}

/// Hex as the document writes it: 16 bytes a line.
fn show(bytes: &[u8]) -> String {
    bytes
        .chunks(16)
        .map(|line| line.iter().map(|b| format!("{b:02x}")).collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}

struct Doc(HashMap<String, Vec<u8>>);

impl Doc {
    fn load() -> Self {
        Doc(doc_blocks())
    }

    fn get(&self, name: &str) -> Vec<u8> {
        self.0
            .get(name)
            .unwrap_or_else(|| panic!("docs/sift1.md has no ```hex {name} block"))
            .clone()
    }

    /// Asserts that the document's block `name` is `computed`.
    fn check(&self, name: &str, computed: &[u8]) {
        let written = self.0.get(name);
        assert!(
            written.map(Vec::as_slice) == Some(computed),
            "docs/sift1.md's ```hex {name} block is not what the code computes:\n```hex {name}\n{}\n```",
            show(computed)
        );
    }
}

// The specification's primitives, written from its text alone.

/// RFC 8446 §7.1 HKDF-Expand-Label with an empty context, SHA-256.
fn expand_label(secret: &[u8], label: &str, len: usize) -> Vec<u8> {
    struct Len(usize);
    impl hkdf::KeyType for Len {
        fn len(&self) -> usize {
            self.0
        }
    }
    let full_label = format!("tls13 {label}");
    let length = (len as u16).to_be_bytes();
    let label_len = [full_label.len() as u8];
    let context_len = [0u8];
    let info = [
        &length[..],
        &label_len[..],
        full_label.as_bytes(),
        &context_len[..],
    ];
    let prk = hkdf::Prk::new_less_safe(hkdf::HKDF_SHA256, secret);
    let mut out = vec![0u8; len];
    prk.expand(&info, Len(len))
        .and_then(|okm| okm.fill(&mut out))
        .expect("HKDF-Expand-Label of at most 255 bytes");
    out
}

/// RFC 9001 §5.2: the client's Initial secret of `dcid` (or of a seed).
fn client_initial_secret(dcid: &[u8]) -> Vec<u8> {
    // HKDF-Extract(salt, ikm) is HMAC(salt, ikm) (RFC 5869 §2.2).
    let salt = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &INITIAL_SALT);
    let initial_secret = ring::hmac::sign(&salt, dcid);
    expand_label(initial_secret.as_ref(), "client in", 32)
}

/// Packet keys of one direction: (key, iv).
fn packet_keys(secret: &[u8]) -> (Vec<u8>, Vec<u8>) {
    (
        expand_label(secret, "quic key", 16),
        expand_label(secret, "quic iv", 12),
    )
}

/// AES-128-GCM seal of `plaintext` with `aad` under packet number `pn`
/// (nonce = iv XOR pn, RFC 9001 §5.3): ciphertext then the 16-byte tag.
fn gcm_seal(key: &[u8], iv: &[u8], pn: u64, aad: &[u8], plaintext: &[u8]) -> Vec<u8> {
    let mut nonce = [0u8; 12];
    nonce.copy_from_slice(iv);
    for (n, p) in nonce[4..].iter_mut().zip(pn.to_be_bytes()) {
        *n ^= p;
    }
    let key = aead::LessSafeKey::new(
        aead::UnboundKey::new(&aead::AES_128_GCM, key).expect("16-byte key"),
    );
    let mut sealed = plaintext.to_vec();
    let tag = key
        .seal_in_place_separate_tag(
            aead::Nonce::assume_unique_for_key(nonce),
            aead::Aad::from(aad),
            &mut sealed,
        )
        .expect("seals");
    sealed.extend_from_slice(tag.as_ref());
    sealed
}

/// RFC 9000 §16 variable-length integer.
fn varint(value: u64) -> Vec<u8> {
    match value {
        0..=0x3f => vec![value as u8],
        0x40..=0x3fff => (0x4000 | value as u16).to_be_bytes().to_vec(),
        0x4000..=0x3fff_ffff => (0x8000_0000 | value as u32).to_be_bytes().to_vec(),
        _ => (0xc000_0000_0000_0000 | value).to_be_bytes().to_vec(),
    }
}

/// A sift/1 packet sealed as the specification says: header, header tag
/// (the AEAD tag of an empty plaintext over the header, nonce packet
/// number with bit 62 set, first 8 bytes), then frames sealed with header
/// and header tag as associated data.
fn spec_seal(header: &[u8], key: &[u8], iv: &[u8], pn: u64, frames: &[u8]) -> Vec<u8> {
    let header_tag = gcm_seal(key, iv, pn | HEADER_TAG_NONCE_BIT, header, &[]);
    let mut packet = header.to_vec();
    packet.extend_from_slice(&header_tag[..8]);
    let sealed = gcm_seal(key, iv, pn, &packet, frames);
    packet.extend_from_slice(&sealed);
    packet
}

fn cid(bytes: &[u8]) -> ConnectionId {
    ConnectionId::new(bytes).expect("at most 20 bytes")
}

/// A.1: the client Initial keys of the DCID, as RFC 9001 §A.1 derives them.
#[test]
fn initial_keys_are_rfc_9001s() {
    let doc = Doc::load();
    let dcid = doc.get("initial.dcid");
    let secret = client_initial_secret(&dcid);
    doc.check("initial.client-secret", &secret);
    let (key, iv) = packet_keys(&secret);
    doc.check("initial.key", &key);
    doc.check("initial.iv", &iv);
}

/// A.2: a client Initial in sift/1, padded to 1200 bytes.
#[test]
fn sealed_initial_is_reproduced() {
    let doc = Doc::load();
    let dcid = doc.get("initial.dcid");
    let pn = 2;
    let mut frames = doc.get("initial.frames");
    let header_len = 1 + 4 + 1 + dcid.len() + 1 + 1 + 4 + 2;
    frames.resize(INITIAL_DATAGRAM_LEN - header_len - 8 - 16, 0); // PADDING

    let mut by_sift = Vec::new();
    let header = Header {
        ty: PacketType::Initial,
        version: SIFT_V1,
        dcid: cid(&dcid),
        scid: ConnectionId::EMPTY,
        token: &[],
        packet_number: pn,
        payload_len: 0,
        key_phase: false,
    };
    let client = initial_protection(&dcid, Side::Client);
    seal_packet(&header, &frames, &client, &mut by_sift).expect("seals");
    assert_eq!(by_sift.len(), INITIAL_DATAGRAM_LEN);

    let mut spec_header = vec![0x80];
    spec_header.extend_from_slice(&SIFT_V1.to_be_bytes());
    spec_header.push(dcid.len() as u8);
    spec_header.extend_from_slice(&dcid);
    spec_header.push(0); // SCID length
    spec_header.extend_from_slice(&varint(0)); // token length
    spec_header.extend_from_slice(&(pn as u32).to_be_bytes());
    spec_header.extend_from_slice(&varint((frames.len() + 16) as u64));
    doc.check("initial.header", &spec_header);
    let (key, iv) = packet_keys(&client_initial_secret(&dcid));
    let by_spec = spec_seal(&spec_header, &key, &iv, pn, &frames);
    assert_eq!(by_spec, by_sift, "the specification's packet is sift's");
    doc.check("initial.packet", &by_sift);

    // The server opens it with its view of the same keys.
    let mut received = by_sift.clone();
    let parsed = parse_header(&received).expect("parses").without_token();
    let server = initial_protection(&dcid, Side::Server);
    let opened = open_packet(&parsed, pn, &mut received, &server).expect("opens");
    assert_eq!(opened, &frames[..]);
}

/// A.3: a 1-RTT packet, and the same under Null protection (A.6).
#[test]
fn sealed_one_rtt_packet_is_reproduced() {
    let doc = Doc::load();
    let seed = doc.get("1rtt.seed");
    let dcid = doc.get("1rtt.dcid");
    let frames = doc.get("1rtt.frames");
    let pn = 1_000_000;
    let secret = client_initial_secret(&seed);
    doc.check("1rtt.client-secret", &secret);
    let (key, iv) = packet_keys(&secret);
    doc.check("1rtt.key", &key);
    doc.check("1rtt.iv", &iv);

    let header = Header {
        ty: PacketType::OneRtt,
        version: SIFT_V1,
        dcid: cid(&dcid),
        scid: ConnectionId::EMPTY,
        token: &[],
        packet_number: pn,
        payload_len: 0,
        key_phase: false,
    };
    let client = public_seed_protection(Aead::Aes128Gcm, &seed, Side::Client);
    let mut by_sift = Vec::new();
    seal_packet(&header, &frames, &client, &mut by_sift).expect("seals");

    let mut spec_header = vec![0x40];
    spec_header.extend_from_slice(&dcid);
    spec_header.extend_from_slice(&(pn as u32).to_be_bytes());
    spec_header.extend_from_slice(&varint((frames.len() + 16) as u64));
    doc.check("1rtt.header", &spec_header);
    let by_spec = spec_seal(&spec_header, &key, &iv, pn, &frames);
    assert_eq!(by_spec, by_sift, "the specification's packet is sift's");
    doc.check("1rtt.packet", &by_sift);

    let frames_read: Vec<_> = parse_frames(&frames)
        .collect::<Result<_, _>>()
        .expect("frames");
    assert!(matches!(frames_read[..], [Frame::Stream { .. }]));

    // A.6: Null protection of the same header and frames.
    let mut null_by_sift = Vec::new();
    seal_packet(&header, &frames, &NullProtection, &mut null_by_sift).expect("seals");
    let mut null_header = spec_header.clone();
    *null_header.last_mut().expect("length") = (frames.len() + 4) as u8;
    let mut by_spec = null_header.clone();
    by_spec.extend_from_slice(&crc32c::crc32c(&null_header).to_be_bytes());
    by_spec.extend_from_slice(&[0; 4]);
    by_spec.extend_from_slice(&frames);
    let payload_tag = crc32c::crc32c(&by_spec).to_be_bytes();
    by_spec.extend_from_slice(&payload_tag);
    assert_eq!(
        by_spec, null_by_sift,
        "the specification's Null packet is sift's"
    );
    doc.check("null.packet", &null_by_sift);
}

/// A.4: a CORRUPTED frame naming packets 5–7 and 10.
#[test]
fn corrupted_frame_is_reproduced() {
    let doc = Doc::load();
    let mut named = RangeSet::new();
    named.insert(5..8);
    named.insert(10..11);
    let mut by_sift = Vec::new();
    encode_corrupted(&named, 16, &mut by_sift);
    doc.check("corrupted.frame", &by_sift);
    let frames: Vec<_> = parse_frames(&by_sift)
        .collect::<Result<_, _>>()
        .expect("parses");
    let [Frame::Corrupted(ranges)] = &frames[..] else {
        panic!("one CORRUPTED frame, got {frames:?}");
    };
    let ranges: Vec<_> = ranges.iter().collect();
    assert_eq!(ranges, [10..=10, 5..=7]);
}

/// A.5: a sift/1 Retry and its integrity tag.
#[test]
fn retry_tag_is_reproduced() {
    let doc = Doc::load();
    let original_dcid = doc.get("initial.dcid");
    let scid = doc.get("retry.scid");
    let token = doc.get("retry.token");
    let mut retry = Vec::new();
    encode_retry_unsigned(
        &mut retry,
        SIFT_V1,
        &ConnectionId::EMPTY,
        &cid(&scid),
        &token,
    )
    .expect("encodes");
    let tag = integrity_tag(SIFT_V1, false, &original_dcid, &retry);

    let key_digest = digest::digest(&digest::SHA256, b"sift v1 retry integrity key");
    let nonce_digest = digest::digest(&digest::SHA256, b"sift v1 retry integrity nonce");
    let (key, nonce) = (&key_digest.as_ref()[..16], &nonce_digest.as_ref()[..12]);
    doc.check("retry.key", key);
    doc.check("retry.nonce", nonce);
    let mut pseudo = vec![original_dcid.len() as u8];
    pseudo.extend_from_slice(&original_dcid);
    pseudo.extend_from_slice(&retry);
    let by_spec = gcm_seal(key, nonce, 0, &pseudo, &[]);
    assert_eq!(by_spec, tag, "the specification's tag is sift's");

    retry.extend_from_slice(&tag);
    doc.check("retry.packet", &retry);
    let parsed = parse_retry(&retry).expect("parses");
    assert_eq!(parsed.token, &token[..]);
    assert_ne!(
        integrity_tag(QUIC_V1, false, &original_dcid, parsed.signed),
        tag,
        "a sift/1 Retry's tag is not QUIC v1's"
    );
}

/// A.7: a client's transport parameters offering corruption notices and
/// sift/1 from an original QUIC v1.
#[test]
fn transport_parameters_are_reproduced() {
    let doc = Doc::load();
    let params = TransportParams {
        corruption_notices: true,
        version_information: Some(VersionInformation {
            chosen: QUIC_V1,
            available: vec![SIFT_V1, QUIC_V1],
        }),
        ..TransportParams::default()
    };
    let mut by_sift = Vec::new();
    params.encode(&mut by_sift);
    doc.check("params.client", &by_sift);
    assert_eq!(TransportParams::decode(&by_sift).expect("decodes"), params);
}
