//! `packet_open_tls`: [`packet_open`](super::packet_open) under TLS 1.3
//! packet keys, so the AEAD open path and its split tags are fuzzed too.
//! Keys are fixed (derived from a public seed like Initial keys), so every
//! input replays the same way.
//!
//! Input layout: `aead(1)` — even: AES-128-GCM, odd: ChaCha20-Poly1305 —
//! then `packet_open`'s input (header fields, flips, frames).
//!
//! What is provable, and so asserted (DESIGN §3: the header tag is 64 bits
//! of AEAD tag, the payload tag 128 bits; forging either by bit flips is a
//! 2^-64 event at best, which a fuzzer does not reach):
//! - nothing changed (flips that cancel out included): the packet opens to
//!   its frames;
//! - something changed: it never opens;
//! - only payload bits changed: `PayloadCorrupt`, never a header failure —
//!   the case that makes corruption notices possible under TLS;
//! - only header-region bits changed and the header still parses to the
//!   same layout: `HeaderCorrupt`.

use sift::crypto::seal_packet;
use sift::crypto::tls::{public_seed_protection, Aead, TlsProtection};
use sift::wire::{parse_header, HEADER_TAG_LEN};
use sift::Side;

use super::packet_open::{receive_with as receive, Input, Outcome};
use super::Seed;

/// The public seed the keys come from.
const KEY_SEED: &[u8] = b"sift fuzz packet_open_tls";

fn keys(aead: Aead) -> (TlsProtection, TlsProtection) {
    (
        public_seed_protection(aead, KEY_SEED, Side::Client),
        public_seed_protection(aead, KEY_SEED, Side::Server),
    )
}

/// Seals the input's packet with the client's keys, flips its bits, opens
/// it with the server's, and checks the outcome.
pub fn run(data: &[u8]) {
    let Some((&aead_byte, rest)) = data.split_first() else {
        return;
    };
    let aead = if aead_byte % 2 == 0 {
        Aead::Aes128Gcm
    } else {
        Aead::ChaCha20Poly1305
    };
    let (client, server) = keys(aead);
    let input = Input::decode(rest);
    let header = input.header();
    let mut packet = Vec::new();
    seal_packet(&header, &input.frames, &client, &mut packet)
        .expect("a datagram-sized packet seals");
    let sealed = parse_header(&packet).expect("a sealed packet parses");
    assert_eq!(sealed.packet_len, packet.len());
    let tag_end = sealed.header_len + HEADER_TAG_LEN;

    let mut damaged = packet.clone();
    for flip in &input.flips {
        damaged[flip.byte_index(packet.len())] ^= flip.mask();
    }
    let changed = |range: std::ops::Range<usize>| {
        range
            .into_iter()
            .any(|index| packet[index] != damaged[index])
    };
    let header_changed = changed(0..tag_end);
    let payload_changed = changed(tag_end..packet.len());

    let outcome = receive(&damaged, input.packet_number, &server);
    match (header_changed, payload_changed) {
        (false, false) => assert_eq!(outcome, Outcome::Opened(input.frames.clone())),
        (false, true) => assert_eq!(outcome, Outcome::PayloadCorrupt, "{aead:?}"),
        (true, _) => {
            assert!(
                !matches!(outcome, Outcome::Opened(_) | Outcome::PayloadCorrupt),
                "{aead:?}: a damaged header gave {outcome:?}"
            );
            let same_layout = parse_header(&damaged).is_ok_and(|parsed| {
                parsed.header_len == sealed.header_len && parsed.payload_len == sealed.payload_len
            });
            if same_layout {
                assert_eq!(outcome, Outcome::HeaderCorrupt, "{aead:?}");
            }
        }
    }
    // The keys never open the direction they seal.
    if !matches!(outcome, Outcome::Unparsable) {
        assert!(!matches!(
            receive(&packet, input.packet_number, &client),
            Outcome::Opened(_)
        ));
    }
}

/// `packet_open`'s seeds under each AEAD.
pub fn seeds() -> Vec<Seed> {
    let mut seeds = Vec::new();
    for (aead_byte, aead_name) in [(0u8, "aes128gcm"), (1, "chacha20")] {
        for seed in super::packet_open::seeds() {
            let mut bytes = vec![aead_byte];
            bytes.extend_from_slice(&seed.bytes);
            seeds.push(Seed::new(format!("{aead_name}-{}", seed.name), bytes));
        }
    }
    seeds
}
