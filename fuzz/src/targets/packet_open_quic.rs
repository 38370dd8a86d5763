//! `packet_open_quic`: header protection removal and the QUIC v1 open path
//! ([`QUIC_V1`]'s `parse` → `unprotect` → `open`), under fixed TLS keys of
//! either AEAD. The input is `packet_open_tls`'s: the AEAD byte, then
//! `packet_open`'s header fields, flips and frames; the packet is sealed in
//! QUIC v1's layout (packet number in 1-4 bytes, from a largest
//! acknowledged the input also picks), damaged, and received.
//!
//! What is provable, and so asserted (one 128-bit AEAD tag covers header
//! and payload; header protection is a mask, not a check):
//! - nothing changed (flips that cancel out included): the packet opens to
//!   its frames, plus the PADDING that made room for the sample, and its
//!   packet number decodes to the number sealed;
//! - a packet number 2^31 or more past the largest acknowledged is refused
//!   by the sealer (RFC 9000 §17.1: 4 bytes cannot span twice that);
//! - something changed: it never opens — a flip anywhere, in the masked
//!   bits, the packet number, a connection ID or the payload, fails the one
//!   tag (and a damaged payload cannot be told apart: never a notice);
//! - parsing, unmasking and opening never panic, whatever the bytes.

use sift::crypto::format::{PacketFormat, QUIC_V1};
use sift::crypto::tls::{public_seed_protection, Aead};
use sift::crypto::{CryptoError, OpenError};
use sift::wire::{
    decode_packet_number_of_len, packet_number_len, Header, QUIC_V1 as QUIC_V1_VERSION,
};
use sift::Side;

use super::packet_open::Input;
use super::Seed;

/// The public seed the keys come from.
const KEY_SEED: &[u8] = b"sift fuzz packet_open_quic";

/// Seals the input's packet in QUIC v1's layout with the client's keys,
/// flips its bits, receives it with the server's, and checks the outcome.
pub fn run(data: &[u8]) {
    let Some((&control, rest)) = data.split_first() else {
        return;
    };
    let aead = if control % 2 == 0 {
        Aead::Aes128Gcm
    } else {
        Aead::ChaCha20Poly1305
    };
    let client = public_seed_protection(aead, KEY_SEED, Side::Client);
    let server = public_seed_protection(aead, KEY_SEED, Side::Server);
    let input = Input::decode(rest);
    let header = Header {
        version: QUIC_V1_VERSION,
        ..input.header()
    };
    // Bits 1-7 of the control byte: how far behind the acknowledged lags,
    // which sets the packet number's length on the wire.
    let behind = 1u64 << (u32::from(control >> 1) % 40);
    let largest_acked = input.packet_number.checked_sub(behind);
    let mut packet = vec![0u8; 4096];
    let sealed = QUIC_V1.seal_into(
        &header,
        largest_acked,
        &input.frames,
        &client,
        &mut Vec::new(),
        &mut packet,
    );
    if packet_number_len(input.packet_number, largest_acked).is_none() {
        // RFC 9000 §17.1: no length spans twice the distance, so the packet
        // is refused rather than sent with a number that decodes to another.
        assert_eq!(
            sealed,
            Err(CryptoError::PacketNumberOutOfReach {
                packet_number: input.packet_number,
                largest_acked,
            })
        );
        return;
    }
    let Ok(len) = sealed else {
        // Frames longer than the buffer: not a datagram.
        assert!(input.frames.len() > 4000);
        return;
    };
    packet.truncate(len);
    assert_eq!(
        len,
        QUIC_V1.sealed_len(&header, largest_acked, input.frames.len(), &client)
    );
    let mut damaged = packet.clone();
    for flip in &input.flips {
        damaged[flip.byte_index(packet.len())] ^= flip.mask();
    }
    let changed = damaged != packet;
    let outcome = receive(&mut damaged, largest_acked, &server);
    if changed {
        assert!(
            outcome.is_err(),
            "{aead:?}: a damaged packet opened: {outcome:?}"
        );
    } else {
        let (packet_number, frames) = outcome.expect("an undamaged packet opens");
        assert_eq!(packet_number, input.packet_number);
        assert!(frames.starts_with(&input.frames));
        assert!(frames[input.frames.len()..].iter().all(|b| *b == 0));
    }
}

/// The receive path, as a connection runs it: parse, unmask, decode the
/// packet number against `largest_received`, open.
fn receive(
    packet: &mut [u8],
    largest_received: Option<u64>,
    keys: &dyn sift::crypto::PacketProtection,
) -> Result<(u64, Vec<u8>), String> {
    let mut parsed = QUIC_V1
        .parse(packet)
        .map_err(|e| e.to_string())?
        .without_token();
    assert!(parsed.packet_len <= packet.len());
    QUIC_V1
        .unprotect(&mut parsed, packet, keys)
        .map_err(|e| e.to_string())?;
    assert!((1..=4).contains(&parsed.pn_len));
    assert_eq!(parsed.header_len + parsed.payload_len, parsed.packet_len);
    let packet_number = decode_packet_number_of_len(
        largest_received,
        u64::from(parsed.truncated_pn),
        parsed.pn_len,
    );
    match QUIC_V1.open(&parsed, packet_number, packet, keys) {
        Ok(frames) => Ok((packet_number, frames.to_vec())),
        Err(OpenError::PayloadCorrupt) => panic!("QUIC v1 cannot tell a payload was damaged"),
        Err(error) => Err(error.to_string()),
    }
}

/// `packet_open`'s seeds under each AEAD, with a few acknowledgement lags.
pub fn seeds() -> Vec<Seed> {
    let mut seeds = Vec::new();
    for (aead_byte, aead_name) in [(0u8, "aes128gcm"), (1, "chacha20")] {
        for (lag, lag_name) in [(0u8, "pn1"), (16, "pn2"), (40, "pn4")] {
            for seed in super::packet_open::seeds() {
                let mut bytes = vec![aead_byte | lag];
                bytes.extend_from_slice(&seed.bytes);
                seeds.push(Seed::new(
                    format!("{aead_name}-{lag_name}-{}", seed.name),
                    bytes,
                ));
            }
        }
    }
    seeds
}
