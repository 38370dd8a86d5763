//! What erasure coding (`sift::fec`, issue 57) costs per byte, beside what
//! packet protection costs: one repair symbol encoded over a span of N
//! full-size source packets, k losses decoded in a span of 128, and an
//! AES-128-GCM seal of one packet of the same size, all in one run.
//!
//! ```text
//! cargo bench --bench fec
//! ```
//! Criterion's throughput is MB/s of source data the code reads (N·1350
//! bytes for an encode, 128·1350 for a decode) and of the packet for the
//! seal; divide a decode's time by k·1350 for its cost per repaired byte.
//! The medians are in `target/criterion/<group>/<bench>/new/estimates.json`.

use std::collections::BTreeSet;
use std::time::Duration;

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use sift::crypto::tls::{public_seed_protection, Aead};
use sift::crypto::{seal_packet, sealed_len};
use sift::fec::{encode_repair, Decoder, Limits, RepairSymbol, SymbolStore};
use sift::wire::{ConnectionId, Header, PacketType, SHORT_HEADER_DCID_LEN, VERSION};
use sift::Side;

/// A full-size source packet's payload, and the sealed packet's size.
const PACKET_BYTES: usize = 1350;
/// Source packets a decode spans.
const DECODE_SPAN: u64 = 128;

/// `count` full-size source payloads, packet numbers `0..count`.
fn sender(count: u64) -> SymbolStore {
    let mut store = SymbolStore::default();
    for pn in 0..count {
        let payload: Vec<u8> = (0..PACKET_BYTES)
            .map(|i| (i as u64 * 131 + pn * 7) as u8)
            .collect();
        store.insert(pn, &payload, usize::MAX);
    }
    store
}

fn encode(c: &mut Criterion) {
    let mut group = c.benchmark_group("fec encode one symbol");
    group.measurement_time(Duration::from_secs(3));
    for span in [8u64, 32, 128, 512] {
        let store = sender(span);
        group.throughput(Throughput::Bytes(span * PACKET_BYTES as u64));
        let mut seed = 0u64;
        group.bench_with_input(BenchmarkId::from_parameter(span), &span, |b, &span| {
            b.iter(|| {
                seed += 1;
                black_box(encode_repair(&store, 0, span - 1, seed))
            })
        });
    }
    group.finish();
}

fn decode(c: &mut Criterion) {
    let mut group = c.benchmark_group("fec decode k losses of 128");
    group.measurement_time(Duration::from_secs(3));
    let sent = sender(DECODE_SPAN);
    for losses in [1u64, 4, 16] {
        // Losses spread over the span, as a lossy path spreads them.
        let lost: BTreeSet<u64> = (0..losses).map(|i| 3 + i * DECODE_SPAN / losses).collect();
        let mut received = SymbolStore::default();
        for (pn, payload) in sent.range(0, DECODE_SPAN - 1) {
            if !lost.contains(&pn) {
                received.insert(pn, payload, usize::MAX);
            }
        }
        let symbols: Vec<(u64, Vec<u8>)> = (0..losses)
            .map(|seed| (seed, encode_repair(&sent, 0, DECODE_SPAN - 1, seed)))
            .collect();
        group.throughput(Throughput::Bytes(DECODE_SPAN * PACKET_BYTES as u64));
        group.bench_with_input(BenchmarkId::from_parameter(losses), &losses, |b, _| {
            b.iter(|| {
                let mut decoder = Decoder::new(Limits::default());
                let mut rebuilt = 0;
                for (seed, symbol) in &symbols {
                    let out = decoder.on_repair(
                        RepairSymbol {
                            first: 0,
                            last: DECODE_SPAN - 1,
                            seed: *seed,
                            symbol,
                        },
                        &received,
                        |pn| !lost.contains(&pn),
                    );
                    rebuilt += out.map_or(0, |packets| packets.len());
                }
                assert_eq!(rebuilt as u64, losses, "every loss rebuilt");
                rebuilt
            })
        });
    }
    group.finish();
}

fn seal(c: &mut Criterion) {
    let mut group = c.benchmark_group("aes-128-gcm seal");
    group.measurement_time(Duration::from_secs(3));
    let protection = public_seed_protection(Aead::Aes128Gcm, b"bench", Side::Client);
    let header = |packet_number| Header {
        ty: PacketType::OneRtt,
        version: VERSION,
        dcid: ConnectionId::new(&[0x5c; SHORT_HEADER_DCID_LEN]).expect("8 bytes"),
        scid: ConnectionId::EMPTY,
        token: &[],
        packet_number,
        payload_len: 0,
        key_phase: false,
    };
    let overhead = sealed_len(&header(0), 0, &protection);
    let frames = vec![0x42u8; PACKET_BYTES - overhead - 1];
    let mut packet = Vec::with_capacity(2048);
    let mut packet_number = 0u64;
    group.throughput(Throughput::Bytes(PACKET_BYTES as u64));
    group.bench_function(BenchmarkId::from_parameter(PACKET_BYTES), |b| {
        b.iter(|| {
            packet_number += 1;
            packet.clear();
            seal_packet(&header(packet_number), &frames, &protection, &mut packet)
                .expect("sealing a packet");
            black_box(packet.len())
        })
    });
    group.finish();
    assert_eq!(
        packet.len(),
        PACKET_BYTES,
        "sealed a {PACKET_BYTES}-byte packet"
    );
}

criterion_group!(benches, encode, decode, seal);
criterion_main!(benches);
