//! Seal + open of one 1200-byte 1-RTT packet, header tag included, per
//! protection: TLS 1.3 with AES-128-GCM and with ChaCha20-Poly1305, and Null
//! (CRC32C) for reference. One iteration = `seal_packet` into a reused
//! buffer, then `parse_header` + `open_packet` in place at the peer: the
//! work a packet costs both ends.
//!
//! ```text
//! cargo bench --bench packet_protection
//! ```
//! Criterion prints the time per iteration, i.e. ns per packet.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use sift::crypto::tls::{public_seed_protection, Aead};
use sift::crypto::{open_packet, seal_packet, sealed_len, NullProtection, PacketProtection};
use sift::wire::{parse_header, ConnectionId, Header, PacketType, SHORT_HEADER_DCID_LEN, VERSION};
use sift::Side;

/// The datagram size measured (RFC 9000's minimum maximum).
const PACKET_BYTES: usize = 1200;

fn header(packet_number: u64) -> Header<'static> {
    Header {
        ty: PacketType::OneRtt,
        version: VERSION,
        dcid: ConnectionId::new(&[0x5c; SHORT_HEADER_DCID_LEN]).expect("8 bytes"),
        scid: ConnectionId::EMPTY,
        token: &[],
        packet_number,
        payload_len: 0,
        key_phase: false,
    }
}

fn bench_protection(
    c: &mut Criterion,
    name: &str,
    sender: &dyn PacketProtection,
    receiver: &dyn PacketProtection,
) {
    // Frames sized so the whole packet is PACKET_BYTES.
    let overhead = sealed_len(&header(0), 0, sender);
    let frames = vec![0x42u8; PACKET_BYTES - overhead - 1];
    let mut packet = Vec::with_capacity(2048);
    let mut group = c.benchmark_group("seal+open 1200-byte packet");
    group.throughput(Throughput::Bytes(PACKET_BYTES as u64));
    let mut packet_number = 0u64;
    group.bench_function(name, |b| {
        b.iter(|| {
            packet_number += 1;
            packet.clear();
            seal_packet(&header(packet_number), &frames, sender, &mut packet)
                .expect("sealing a 1200-byte packet");
            let parsed = parse_header(&packet).expect("parses").without_token();
            let opened = open_packet(&parsed, packet_number, &mut packet, receiver)
                .expect("opens at the peer");
            black_box(opened.len())
        })
    });
    group.finish();
    assert_eq!(
        packet.len(),
        PACKET_BYTES,
        "{name} measured a {PACKET_BYTES}-byte packet"
    );
}

fn packet_protection(c: &mut Criterion) {
    for (name, aead) in [
        ("tls-aes-128-gcm", Aead::Aes128Gcm),
        ("tls-chacha20-poly1305", Aead::ChaCha20Poly1305),
    ] {
        let client = public_seed_protection(aead, b"bench", Side::Client);
        let server = public_seed_protection(aead, b"bench", Side::Server);
        bench_protection(c, name, &client, &server);
    }
    bench_protection(c, "null-crc32c", &NullProtection, &NullProtection);
}

criterion_group!(benches, packet_protection);
criterion_main!(benches);
