//! RFC 9001 Appendix A's sample packets, byte for byte, through the
//! QUIC v1 format's seal and open paths.

/// RFC 9001 §A.2: the client's CRYPTO frame (its ClientHello), padded to 1162 bytes.
const CLIENT_INITIAL_FRAMES: &str = concat!(
    "060040f1010000ed0303ebf8fa56f12939b9584a3896472ec40bb863cfd3e86804fe3a47f06a2b69484c000004130113",
    "02010000c000000010000e00000b6578616d706c652e636f6dff01000100000a00080006001d00170018001000070005",
    "04616c706e000500050100000000003300260024001d00209370b2c9caa47fbabaf4559fedba753de171fa71f50f1ce1",
    "5d43e994ec74d748002b0003020304000d0010000e0403050306030203080408050806002d00020101001c00024001ff",
    "a500320408ffffffffffffffff05048000ffff07048000ffff0801100104800075300901100f088394c8f03e51570806",
    "048000ffff00000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000",
    "00000000000000000000",
);

/// RFC 9001 §A.2: the protected client Initial, packet number 2 in 4 bytes.
const CLIENT_INITIAL_PACKET: &str = concat!(
    "c000000001088394c8f03e5157080000449e7b9aec34d1b1c98dd7689fb8ec11d242b123dc9bd8bab936b47d92ec356c",
    "0bab7df5976d27cd449f63300099f3991c260ec4c60d17b31f8429157bb35a1282a643a8d2262cad67500cadb8e7378c",
    "8eb7539ec4d4905fed1bee1fc8aafba17c750e2c7ace01e6005f80fcb7df621230c83711b39343fa028cea7f7fb5ff89",
    "eac2308249a02252155e2347b63d58c5457afd84d05dfffdb20392844ae812154682e9cf012f9021a6f0be17ddd0c208",
    "4dce25ff9b06cde535d0f920a2db1bf362c23e596dee38f5a6cf3948838a3aec4e15daf8500a6ef69ec4e3feb6b1d98e",
    "610ac8b7ec3faf6ad760b7bad1db4ba3485e8a94dc250ae3fdb41ed15fb6a8e5eba0fc3dd60bc8e30c5c4287e53805db",
    "059ae0648db2f64264ed5e39be2e20d82df566da8dd5998ccabdae053060ae6c7b4378e846d29f37ed7b4ea9ec5d82e7",
    "961b7f25a9323851f681d582363aa5f89937f5a67258bf63ad6f1a0b1d96dbd4faddfcefc5266ba6611722395c906556",
    "be52afe3f565636ad1b17d508b73d8743eeb524be22b3dcbc2c7468d54119c7468449a13d8e3b95811a198f3491de3e7",
    "fe942b330407abf82a4ed7c1b311663ac69890f4157015853d91e923037c227a33cdd5ec281ca3f79c44546b9d90ca00",
    "f064c99e3dd97911d39fe9c5d0b23a229a234cb36186c4819e8b9c5927726632291d6a418211cc2962e20fe47feb3edf",
    "330f2c603a9d48c0fcb5699dbfe5896425c5bac4aee82e57a85aaf4e2513e4f05796b07ba2ee47d80506f8d2c25e50fd",
    "14de71e6c418559302f939b0e1abd576f279c4b2e0feb85c1f28ff18f58891ffef132eef2fa09346aee33c28eb130ff2",
    "8f5b766953334113211996d20011a198e3fc433f9f2541010ae17c1bf202580f6047472fb36857fe843b19f5984009dd",
    "c324044e847a4f4a0ab34f719595de37252d6235365e9b84392b061085349d73203a4a13e96f5432ec0fd4a1ee65accd",
    "d5e3904df54c1da510b0ff20dcc0c77fcb2c0e0eb605cb0504db87632cf3d8b4dae6e705769d1de354270123cb11450e",
    "fc60ac47683d7b8d0f811365565fd98c4c8eb936bcab8d069fc33bd801b03adea2e1fbc5aa463d08ca19896d2bf59a07",
    "1b851e6c239052172f296bfb5e72404790a2181014f3b94a4e97d117b438130368cc39dbb2d198065ae3986547926cd2",
    "162f40a29f0c3c8745c0f50fba3852e566d44575c29d39a03f0cda721984b6f440591f355e12d439ff150aab7613499d",
    "bd49adabc8676eef023b15b65bfc5ca06948109f23f350db82123535eb8a7433bdabcb909271a6ecbcb58b936a88cd4e",
    "8f2e6ff5800175f113253d8fa9ca8885c2f552e657dc603f252e1a8e308f76f0be79e2fb8f5d5fbbe2e30ecadd220723",
    "c8c0aea8078cdfcb3868263ff8f0940054da48781893a7e49ad5aff4af300cd804a6b6279ab3ff3afb64491c85194aab",
    "760d58a606654f9f4400e8b38591356fbf6425aca26dc85244259ff2b19c41b9f96f3ca9ec1dde434da7d2d392b905dd",
    "f3d1f9af93d1af5950bd493f5aa731b4056df31bd267b6b90a079831aaf579be0a39013137aac6d404f518cfd4684064",
    "7e78bfe706ca4cf5e9c5453e9f7cfd2b8b4c8d169a44e55c88d4a9a7f94742411092abbdf8b889e5c199d096e3f24788",
);

/// RFC 9001 §A.3: the server's ACK and CRYPTO (ServerHello) frames.
const SERVER_INITIAL_FRAMES: &str = "02000000000600405a020000560303eefce7f7b37ba1d1632e96677825ddf73988cfc79825df566dc5430b9a045a1200130100002e00330024001d00209d3c940d89690b84d08a60993c144eca684d1081287c834d5311bcf32bb9da1a002b00020304";

/// RFC 9001 §A.3: the protected server Initial, packet number 1 in 2 bytes.
const SERVER_INITIAL_PACKET: &str = concat!(
    "cf000000010008f067a5502a4262b5004075c0d95a482cd0991cd25b0aac406a5816b6394100f37a1c69797554780bb3",
    "8cc5a99f5ede4cf73c3ec2493a1839b3dbcba3f6ea46c5b7684df3548e7ddeb9c3bf9c73cc3f3bded74b562bfb19fb84",
    "022f8ef4cdd93795d77d06edbb7aaf2f58891850abbdca3d20398c276456cbc42158407dd074ee",
);

use super::*;
use crate::crypto::tls::{initial_protection, HeaderKeys, TlsProtection};
use crate::wire::{decode_packet_number_of_len, parse_quic_header, ConnectionId, PacketType};
use crate::Side;

const RFC_DCID: [u8; 8] = [0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08];

fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex"))
        .collect()
}

fn initial_header(dcid: &[u8], scid: &[u8], packet_number: u64) -> Header<'static> {
    Header {
        ty: PacketType::Initial,
        version: QUIC_V1_VERSION,
        dcid: ConnectionId::new(dcid).unwrap(),
        scid: ConnectionId::new(scid).unwrap(),
        token: &[],
        packet_number,
        payload_len: 0,
        key_phase: false,
    }
}

fn seal(header: &Header<'_>, pn_len: usize, frames: &[u8], keys: &dyn PacketProtection) -> Vec<u8> {
    let mut out = vec![0; 1500];
    let len = QUIC_V1
        .seal_with_pn_len(header, pn_len, frames, keys, &mut Vec::new(), &mut out)
        .expect("fits");
    out.truncate(len);
    out
}

/// The receive path: parse, remove header protection, decode the packet
/// number (nothing received before), open.
fn open_first(
    datagram: &mut [u8],
    short_dcid_len: usize,
    keys: &dyn PacketProtection,
) -> (u64, Vec<u8>) {
    let mut parsed = parse_quic_header(datagram, QUIC_V1_VERSION, short_dcid_len)
        .expect("parses")
        .without_token();
    QUIC_V1
        .unprotect(&mut parsed, datagram, keys)
        .expect("unmasks");
    let packet_number =
        decode_packet_number_of_len(None, u64::from(parsed.truncated_pn), parsed.pn_len);
    let frames = QUIC_V1
        .open(&parsed, packet_number, datagram, keys)
        .expect("opens");
    (packet_number, frames.to_vec())
}

#[test]
fn rfc_9001_client_initial_is_reproduced_and_opened() {
    let client = initial_protection(&RFC_DCID, Side::Client);
    let frames = hex(CLIENT_INITIAL_FRAMES);
    let mut packet = seal(&initial_header(&RFC_DCID, &[], 2), 4, &frames, &client);
    assert_eq!(packet, hex(CLIENT_INITIAL_PACKET));
    assert_eq!(packet.len(), 1200);
    let server = initial_protection(&RFC_DCID, Side::Server);
    assert_eq!(open_first(&mut packet, 8, &server), (2, frames));
}

#[test]
fn rfc_9001_server_initial_is_reproduced_and_opened() {
    let server = initial_protection(&RFC_DCID, Side::Server);
    let frames = hex(SERVER_INITIAL_FRAMES);
    let scid = [0xf0, 0x67, 0xa5, 0x50, 0x2a, 0x42, 0x62, 0xb5];
    let mut packet = seal(&initial_header(&[], &scid, 1), 2, &frames, &server);
    assert_eq!(packet, hex(SERVER_INITIAL_PACKET));
    let client = initial_protection(&RFC_DCID, Side::Client);
    assert_eq!(open_first(&mut packet, 8, &client), (1, frames));
}

/// HKDF-Expand-Label (RFC 8446 §7.1) with an empty context.
fn expand_label(secret: &[u8], label: &str, len: usize) -> Vec<u8> {
    struct Len(usize);
    impl ring::hkdf::KeyType for Len {
        fn len(&self) -> usize {
            self.0
        }
    }
    let full = format!("tls13 {label}");
    let info = [
        &(len as u16).to_be_bytes()[..],
        &[full.len() as u8],
        full.as_bytes(),
        &[0],
    ];
    let prk = ring::hkdf::Prk::new_less_safe(ring::hkdf::HKDF_SHA256, secret);
    let mut out = vec![0; len];
    prk.expand(&info, Len(len))
        .and_then(|okm| okm.fill(&mut out))
        .expect("short output");
    out
}

#[test]
fn rfc_9001_chacha20_short_header_packet_is_reproduced_and_opened() {
    let secret = hex("9ac312a7f877468ebe69422748ad00a15443f18203a07d6060f688f30f21632b");
    let quic = rustls::crypto::ring::cipher_suite::TLS13_CHACHA20_POLY1305_SHA256
        .tls13()
        .and_then(|suite| suite.quic_suite())
        .expect("QUIC suite")
        .quic;
    let key = || {
        let bytes: [u8; 32] = expand_label(&secret, "quic key", 32).try_into().unwrap();
        bytes.into()
    };
    let iv = || {
        let bytes: [u8; 12] = expand_label(&secret, "quic iv", 12).try_into().unwrap();
        rustls::crypto::cipher::Iv::from(bytes)
    };
    let hp = || {
        let bytes: [u8; 32] = expand_label(&secret, "quic hp", 32).try_into().unwrap();
        quic.header_protection_key(bytes.into())
    };
    // One secret both ways, so the packet opens under the keys that sealed it.
    let keys = TlsProtection::new(
        quic.packet_key(key(), iv()),
        quic.packet_key(key(), iv()),
        HeaderKeys::new(hp(), hp()),
    );
    let header = Header {
        ty: PacketType::OneRtt,
        dcid: ConnectionId::EMPTY,
        scid: ConnectionId::EMPTY,
        packet_number: 654_360_564,
        ..initial_header(&[], &[], 0)
    };
    let mut packet = seal(&header, 3, &[0x01], &keys);
    assert_eq!(packet, hex("4cfe4189655e5cd55c41f69080575d7999c25a5bfb"));
    let mut parsed = parse_quic_header(&packet, QUIC_V1_VERSION, 0)
        .unwrap()
        .without_token();
    QUIC_V1.unprotect(&mut parsed, &mut packet, &keys).unwrap();
    assert_eq!((parsed.pn_len, parsed.key_phase), (3, false));
    // §A.5: the receiver expects 654360564 - 1 and decodes 0xbff4 in 3 bytes.
    let pn = decode_packet_number_of_len(Some(654_360_563), u64::from(parsed.truncated_pn), 3);
    assert_eq!(pn, 654_360_564);
    assert_eq!(
        QUIC_V1.open(&parsed, pn, &mut packet, &keys).unwrap(),
        [0x01]
    );
}

#[test]
fn a_damaged_packet_does_not_open_and_names_nothing() {
    let client = initial_protection(&RFC_DCID, Side::Client);
    let server = initial_protection(&RFC_DCID, Side::Server);
    let good = seal(
        &initial_header(&RFC_DCID, &[], 2),
        4,
        &hex(CLIENT_INITIAL_FRAMES),
        &client,
    );
    for at in [0, 20, 100, 1199] {
        let mut packet = good.clone();
        packet[at] ^= 0x04;
        let Ok(parsed) = parse_quic_header(&packet, QUIC_V1_VERSION, 8) else {
            continue;
        };
        let mut parsed = parsed.without_token();
        let opened = QUIC_V1
            .unprotect(&mut parsed, &mut packet, &server)
            .and_then(|()| {
                let pn = decode_packet_number_of_len(
                    None,
                    u64::from(parsed.truncated_pn),
                    parsed.pn_len,
                );
                QUIC_V1
                    .open(&parsed, pn, &mut packet, &server)
                    .map(<[u8]>::len)
            });
        assert_eq!(opened, Err(OpenError::HeaderCorrupt), "byte {at}");
    }
    assert!(!QUIC_V1.names_corrupted_packets());
    assert!(SIFT_V1.names_corrupted_packets());
}

#[test]
fn sealed_len_is_what_seal_writes_and_short_packets_are_padded_for_the_sample() {
    let keys = initial_protection(&RFC_DCID, Side::Client);
    for (frames_len, largest_acked, packet_number) in [
        (0, None, 0),
        (1, Some(5), 6),
        (3, Some(0), 70_000),
        (1000, Some(10), 11),
    ] {
        let header = Header {
            ty: PacketType::OneRtt,
            packet_number,
            ..initial_header(&[7; 8], &[], 0)
        };
        let frames = vec![1u8; frames_len];
        let mut out = vec![0; 1500];
        let len = QUIC_V1
            .seal_into(
                &header,
                largest_acked,
                &frames,
                &keys,
                &mut Vec::new(),
                &mut out,
            )
            .unwrap();
        assert_eq!(
            len,
            QUIC_V1.sealed_len(&header, largest_acked, frames_len, &keys)
        );
        // The sample (4 bytes past the packet number's start, 16 long) fits.
        assert!(len >= 1 + 8 + 4 + 16, "{len}");
    }
}

#[test]
fn a_packet_number_out_of_reach_of_four_bytes_is_refused_not_sealed_short() {
    // The fuzz finding (fuzz/corpus/packet_open_quic/regression-pn-lags-2-38):
    // 2^38 numbers past the largest acknowledged, the packet went out with 4
    // bytes of number, which the peer decodes to another packet number, and
    // the packet did not open. RFC 9000 §17.1: refuse instead.
    let keys = initial_protection(&RFC_DCID, Side::Client);
    let largest_acked = Some(5);
    let header = Header {
        ty: PacketType::OneRtt,
        packet_number: (1 << 38) + 5,
        ..initial_header(&[7; 8], &[], 0)
    };
    let sealed = QUIC_V1.seal_into(
        &header,
        largest_acked,
        &[1; 20],
        &keys,
        &mut Vec::new(),
        &mut [0; 1500],
    );
    assert_eq!(
        sealed,
        Err(CryptoError::PacketNumberOutOfReach {
            packet_number: (1 << 38) + 5,
            largest_acked,
        })
    );
    // 2^31 - 1 past it still fits in 4 bytes.
    let header = Header {
        packet_number: (1 << 31) + 4,
        ..header
    };
    let mut out = [0; 1500];
    let len = QUIC_V1
        .seal_into(
            &header,
            largest_acked,
            &[1; 20],
            &keys,
            &mut Vec::new(),
            &mut out,
        )
        .expect("within reach");
    let server = initial_protection(&RFC_DCID, Side::Server);
    let mut parsed = QUIC_V1.parse(&out[..len]).unwrap().without_token();
    QUIC_V1
        .unprotect(&mut parsed, &mut out[..len], &server)
        .unwrap();
    assert_eq!(parsed.pn_len, 4);
}
