//! `transport_params`: [`TransportParams::decode`] on arbitrary bytes.
//!
//! Invariants: decoding never panics; what decodes re-encodes to bytes that
//! decode to an equal value; the encoding is canonical (encoding the
//! re-decoded value gives the same bytes) and never longer than the input it
//! came from (each encoded parameter stands for a distinct input parameter
//! at least as long).

use sift::wire::{put_varint, ConnectionId, TransportParams};

use super::Seed;

/// Decodes `data` and checks the round trip.
pub fn run(data: &[u8]) {
    let Ok(params) = TransportParams::decode(data) else {
        return;
    };
    let mut encoded = Vec::new();
    params.encode(&mut encoded);
    assert!(
        encoded.len() <= data.len(),
        "{} bytes re-encode to {}",
        data.len(),
        encoded.len()
    );
    let decoded = TransportParams::decode(&encoded).expect("encoded parameters decode");
    assert_eq!(decoded, params);
    let mut encoded_again = Vec::new();
    decoded.encode(&mut encoded_again);
    assert_eq!(encoded_again, encoded, "encoding is not canonical");
}

fn encoded(params: &TransportParams) -> Vec<u8> {
    let mut out = Vec::new();
    params.encode(&mut out);
    out
}

/// Defaults, a client's and a server's parameters, and the layouts the
/// encoder never writes (unknown ids, padded varints).
pub fn seeds() -> Vec<Seed> {
    let client = TransportParams {
        original_destination_connection_id: None,
        initial_source_connection_id: Some(
            ConnectionId::new(&[0xc1, 0xc2, 0xc3, 0xc4]).expect("4 bytes"),
        ),
        max_idle_timeout_ms: 30_000,
        max_udp_payload_size: 1_350,
        initial_max_data: 10 << 20,
        initial_max_stream_data_bidi_local: 1 << 20,
        initial_max_stream_data_bidi_remote: 1 << 20,
        initial_max_stream_data_uni: 1 << 20,
        initial_max_streams_bidi: 100,
        initial_max_streams_uni: 3,
        max_ack_delay_ms: 25,
        max_datagram_frame_size: None,
        active_connection_id_limit: 4,
        corruption_notices: true,
        repair_max_span: Some(4096),
        min_ack_delay_micros: Some(1_000),
        stateless_reset_token: None,
        retry_source_connection_id: None,
        ack_delay_exponent: 0,
        version_information: Some(sift::wire::VersionInformation {
            chosen: sift::wire::QUIC_V1,
            available: vec![sift::wire::VERSION, sift::wire::QUIC_V1],
        }),
        disable_active_migration: false,
        preferred_address: None,
    };
    let server = TransportParams {
        original_destination_connection_id: Some(ConnectionId::new(&[0xd0; 8]).expect("8 bytes")),
        initial_source_connection_id: Some(ConnectionId::new(&[0x5e; 20]).expect("20 bytes")),
        max_ack_delay_ms: (1 << 14) - 1,
        max_datagram_frame_size: Some(0),
        initial_max_streams_bidi: 1 << 60,
        stateless_reset_token: Some([0x7a; 16]),
        retry_source_connection_id: Some(ConnectionId::new(&[0x4e; 8]).expect("8 bytes")),
        ..client.clone()
    };

    // An unknown parameter (id 0x1234 as a two-byte varint, 3 bytes), then
    // max_idle_timeout = 30 with its value padded to a four-byte varint.
    let mut unusual = vec![0x52, 0x34, 3, 9, 9, 9];
    unusual.extend_from_slice(&[0x01, 4, 0x80, 0, 0, 30]);
    // max_udp_payload_size = 1200 under an eight-byte varint id.
    let mut padded_id = Vec::new();
    padded_id.extend_from_slice(&[0xc0, 0, 0, 0, 0, 0, 0, 0x03, 2]);
    put_varint(&mut padded_id, 1_200);

    vec![
        Seed::new("defaults", Vec::new()),
        Seed::new("client", encoded(&client)),
        Seed::new("server", encoded(&server)),
        Seed::new("unknown-and-padded", unusual),
        Seed::new("padded-id", padded_id),
    ]
}
