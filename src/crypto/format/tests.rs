//! RFC 9001 Appendix A's sample packets, byte for byte, through the
//! QUIC v1 format's seal and open paths, and RFC 9369 Appendix A's
//! through the QUIC v2 format's.

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

/// RFC 9369 §A.2: the client's CRYPTO frame (RFC 9001's ClientHello as
/// its erratum 7010 corrected it), padded to 1162 bytes by [`v2_client_frames`].
const V2_CLIENT_CRYPTO_FRAME: &str = concat!(
    "060040f1010000ed0303ebf8fa56f12939b9584a3896472ec40bb863cfd3e86804fe3a47f06a2b69484c000004130113",
    "02010000c000000010000e00000b6578616d706c652e636f6dff01000100000a00080006001d00170018001000070005",
    "04616c706e000500050100000000003300260024001d00209370b2c9caa47fbabaf4559fedba753de171fa71f50f1ce1",
    "5d43e994ec74d748002b0003020304000d0010000e0403050306030203080408050806002d00020101001c0002400100",
    "3900320408ffffffffffffffff05048000ffff07048000ffff0801100104800075300901100f088394c8f03e51570806",
    "048000ffff",
);

/// RFC 9369 §A.2: the protected client Initial, packet number 2 in 4 bytes.
const V2_CLIENT_INITIAL_PACKET: &str = concat!(
    "d76b3343cf088394c8f03e5157080000449ea0c95e82ffe67b6abcdb4298b485dd04de806071bf03dceebfa162e75d6c",
    "96058bdbfb127cdfcbf903388e99ad049f9a3dd4425ae4d0992cfff18ecf0fdb5a842d09747052f17ac2053d21f57c5d",
    "250f2c4f0e0202b70785b7946e992e58a59ac52dea6774d4f03b55545243cf1a12834e3f249a78d395e0d18f4d766004",
    "f1a2674802a747eaa901c3f10cda5500cb9122faa9f1df66c392079a1b40f0de1c6054196a11cbea40afb6ef5253cd68",
    "18f6625efce3b6def6ba7e4b37a40f7732e093daa7d52190935b8da58976ff3312ae50b187c1433c0f028edcc4c2838b",
    "6a9bfc226ca4b4530e7a4ccee1bfa2a3d396ae5a3fb512384b2fdd851f784a65e03f2c4fbe11a53c7777c023462239dd",
    "6f7521a3f6c7d5dd3ec9b3f233773d4b46d23cc375eb198c63301c21801f6520bcfb7966fc49b393f0061d974a2706df",
    "8c4a9449f11d7f3d2dcbb90c6b877045636e7c0c0fe4eb0f697545460c806910d2c355f1d253bc9d2452aaa549e27a1f",
    "ac7cf4ed77f322e8fa894b6a83810a34b361901751a6f5eb65a0326e07de7c1216ccce2d0193f958bb3850a833f7ae43",
    "2b65bc5a53975c155aa4bcb4f7b2c4e54df16efaf6ddea94e2c50b4cd1dfe06017e0e9d02900cffe1935e0491d77ffb4",
    "fdf85290fdd893d577b1131a610ef6a5c32b2ee0293617a37cbb08b847741c3b8017c25ca9052ca1079d8b78aebd4787",
    "6d330a30f6a8c6d61dd1ab5589329de714d19d61370f8149748c72f132f0fc99f34d766c6938597040d8f9e2bb522ff9",
    "9c63a344d6a2ae8aa8e51b7b90a4a806105fcbca31506c446151adfeceb51b91abfe43960977c87471cf9ad4074d30e1",
    "0d6a7f03c63bd5d4317f68ff325ba3bd80bf4dc8b52a0ba031758022eb025cdd770b44d6d6cf0670f4e990b22347a7db",
    "848265e3e5eb72dfe8299ad7481a408322cac55786e52f633b2fb6b614eaed18d703dd84045a274ae8bfa73379661388",
    "d6991fe39b0d93debb41700b41f90a15c4d526250235ddcd6776fc77bc97e7a417ebcb31600d01e57f32162a8560cacc",
    "7e27a096d37a1a86952ec71bd89a3e9a30a2a26162984d7740f81193e8238e61f6b5b984d4d3dfa033c1bb7e4f0037fe",
    "bf406d91c0dccf32acf423cfa1e7071010d3f270121b493ce85054ef58bada42310138fe081adb04e2bd901f2f13458b",
    "3d6758158197107c14ebb193230cd1157380aa79cae1374a7c1e5bbcb80ee23e06ebfde206bfb0fcbc0edc4ebec30966",
    "1bdd908d532eb0c6adc38b7ca7331dce8dfce39ab71e7c32d318d136b6100671a1ae6a6600e3899f31f0eed19e3417d1",
    "34b90c9058f8632c798d4490da4987307cba922d61c39805d072b589bd52fdf1e86215c2d54e6670e07383a27bbffb5a",
    "ddf47d66aa85a0c6f9f32e59d85a44dd5d3b22dc2be80919b490437ae4f36a0ae55edf1d0b5cb4e9a3ecabee93dfc6e3",
    "8d209d0fa6536d27a5d6fbb17641cde27525d61093f1b28072d111b2b4ae5f89d5974ee12e5cf7d5da4d6a31123041f3",
    "3e61407e76cffcdcfd7e19ba58cf4b536f4c4938ae79324dc402894b44faf8afbab35282ab659d13c93f70412e85cb19",
    "9a37ddec600545473cfb5a05e08d0b209973b2172b4d21fb69745a262ccde96ba18b2faa745b6fe189cf772a9f84cbfc",
);

/// RFC 9369 §A.3: the protected server Initial (RFC 9001 §A.3's frames),
/// packet number 1 in 2 bytes.
const V2_SERVER_INITIAL_PACKET: &str = concat!(
    "dc6b3343cf0008f067a5502a4262b5004075d92faaf16f05d8a4398c47089698baeea26b91eb761d9b89237bbf872630",
    "17915358230035f7fd3945d88965cf17f9af6e16886c61bfc703106fbaf3cb4cfa52382dd16a393e42757507698075b2",
    "c984c707f0a0812d8cd5a6881eaf21ceda98f4bd23f6fe1a3e2c43edd9ce7ca84bed8521e2e140",
);

use super::*;
use crate::crypto::tls::{initial_protection, initial_protection_in, HeaderKeys, TlsProtection};
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
    seal_in(&QUIC_V1, header, pn_len, frames, keys)
}

fn seal_in(
    format: &QuicFormat,
    header: &Header<'_>,
    pn_len: usize,
    frames: &[u8],
    keys: &dyn PacketProtection,
) -> Vec<u8> {
    let mut out = vec![0; 1500];
    let len = format
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
    open_first_in(&QUIC_V1, datagram, short_dcid_len, keys)
}

fn open_first_in(
    format: &QuicFormat,
    datagram: &mut [u8],
    short_dcid_len: usize,
    keys: &dyn PacketProtection,
) -> (u64, Vec<u8>) {
    let mut parsed = parse_quic_header(datagram, format.version(), short_dcid_len)
        .expect("parses")
        .without_token();
    format
        .unprotect(&mut parsed, datagram, keys)
        .expect("unmasks");
    let packet_number =
        decode_packet_number_of_len(None, u64::from(parsed.truncated_pn), parsed.pn_len);
    let frames = format
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

fn v2_client_frames() -> Vec<u8> {
    let mut frames = hex(V2_CLIENT_CRYPTO_FRAME);
    frames.resize(1162, 0);
    frames
}

/// Seals `frames` under `header_bytes` (unprotected, packet number at
/// `pn_offset` in `pn_len` bytes) as RFC 9001 §5.3-§5.4 does, with ring
/// and an RFC's AES-128-GCM key, iv and hp bytes: what sift's own keys
/// must reproduce.
fn seal_with_rfc_keys(
    (key, iv, hp): (&str, &str, &str),
    header_bytes: &[u8],
    pn_offset: usize,
    packet_number: u64,
    frames: &[u8],
) -> Vec<u8> {
    use ring::aead;
    let key = aead::LessSafeKey::new(aead::UnboundKey::new(&aead::AES_128_GCM, &hex(key)).unwrap());
    let mut nonce: [u8; 12] = hex(iv).try_into().unwrap();
    for (byte, pn) in nonce[4..].iter_mut().zip(packet_number.to_be_bytes()) {
        *byte ^= pn;
    }
    let mut payload = frames.to_vec();
    let tag = key
        .seal_in_place_separate_tag(
            aead::Nonce::assume_unique_for_key(nonce),
            aead::Aad::from(header_bytes),
            &mut payload,
        )
        .unwrap();
    let mut packet = [header_bytes, &payload, tag.as_ref()].concat();
    let hp = aead::quic::HeaderProtectionKey::new(&aead::quic::AES_128, &hex(hp)).unwrap();
    let sample_at = pn_offset + 4;
    let mask = hp.new_mask(&packet[sample_at..sample_at + 16]).unwrap();
    packet[0] ^= mask[0] & 0x0f;
    let pn_len = header_bytes.len() - pn_offset;
    for i in 0..pn_len {
        packet[pn_offset + i] ^= mask[1 + i];
    }
    packet
}

fn v2_initial_header(dcid: &[u8], scid: &[u8], packet_number: u64) -> Header<'static> {
    Header {
        version: QUIC_V2_VERSION,
        ..initial_header(dcid, scid, packet_number)
    }
}

#[test]
fn rfc_9369_initial_keys_are_the_documented_ones() {
    // RFC 9369 §A.1: the client's and the server's key, iv and hp from
    // DCID 0x8394c8f03e515708 under v2's salt and "quicv2" labels. rustls
    // does not hand keys back out, so the RFC's bytes seal a packet by
    // hand (ring) and sift's derived keys must seal the same one.
    let frames = v2_client_frames();
    let header = v2_initial_header(&RFC_DCID, &[], 2);
    let client = initial_protection_in(QUIC_V2_VERSION, &RFC_DCID, Side::Client);
    let ours = seal_in(&QUIC_V2, &header, 4, &frames, &client);
    let by_hand = seal_with_rfc_keys(
        (
            "8b1a0bc121284290a29e0971b5cd045d",
            "91f73e2351d8fa91660e909f",
            "45b95e15235d6f45a6b19cbcb0294ba9",
        ),
        &hex("d36b3343cf088394c8f03e5157080000449e00000002"),
        18,
        2,
        &frames,
    );
    assert_eq!(ours, by_hand);
    let frames = hex(SERVER_INITIAL_FRAMES);
    let scid = [0xf0, 0x67, 0xa5, 0x50, 0x2a, 0x42, 0x62, 0xb5];
    let server = initial_protection_in(QUIC_V2_VERSION, &RFC_DCID, Side::Server);
    let ours = seal_in(
        &QUIC_V2,
        &v2_initial_header(&[], &scid, 1),
        2,
        &frames,
        &server,
    );
    let by_hand = seal_with_rfc_keys(
        (
            "82db637861d55e1d011f19ea71d5d2a7",
            "dd13c276499c0249d3310652",
            "edf6d05c83121201b436e16877593c3a",
        ),
        &hex("d16b3343cf0008f067a5502a4262b50040750001"),
        18,
        1,
        &frames,
    );
    assert_eq!(ours, by_hand);
    // And they are not v1's.
    let v1 = initial_protection(&RFC_DCID, Side::Server);
    assert_ne!(
        ours,
        seal_in(&QUIC_V2, &v2_initial_header(&[], &scid, 1), 2, &frames, &v1)
    );
}

#[test]
fn rfc_9369_client_initial_is_reproduced_and_opened() {
    let client = initial_protection_in(QUIC_V2_VERSION, &RFC_DCID, Side::Client);
    let frames = v2_client_frames();
    let header = v2_initial_header(&RFC_DCID, &[], 2);
    let mut packet = seal_in(&QUIC_V2, &header, 4, &frames, &client);
    assert_eq!(packet, hex(V2_CLIENT_INITIAL_PACKET));
    assert_eq!(packet.len(), 1200);
    let server = initial_protection_in(QUIC_V2_VERSION, &RFC_DCID, Side::Server);
    assert_eq!(
        open_first_in(&QUIC_V2, &mut packet, 8, &server),
        (2, frames)
    );
    // The v1 format does not read it: another version.
    assert_eq!(
        QUIC_V1.parse(&hex(V2_CLIENT_INITIAL_PACKET)),
        Err(WireError::UnsupportedVersion(QUIC_V2_VERSION))
    );
}

#[test]
fn rfc_9369_server_initial_is_reproduced_and_opened() {
    let server = initial_protection_in(QUIC_V2_VERSION, &RFC_DCID, Side::Server);
    let frames = hex(SERVER_INITIAL_FRAMES);
    let scid = [0xf0, 0x67, 0xa5, 0x50, 0x2a, 0x42, 0x62, 0xb5];
    let mut packet = seal_in(
        &QUIC_V2,
        &v2_initial_header(&[], &scid, 1),
        2,
        &frames,
        &server,
    );
    assert_eq!(packet, hex(V2_SERVER_INITIAL_PACKET));
    let client = initial_protection_in(QUIC_V2_VERSION, &RFC_DCID, Side::Client);
    assert_eq!(
        open_first_in(&QUIC_V2, &mut packet, 8, &client),
        (1, frames)
    );
}

#[test]
fn rfc_9369_chacha20_short_header_packet_is_reproduced_and_opened() {
    // RFC 9369 §A.5: RFC 9001 §A.5's secret under the "quicv2" labels.
    let secret = hex("9ac312a7f877468ebe69422748ad00a15443f18203a07d6060f688f30f21632b");
    assert_eq!(
        expand_label(&secret, "quicv2 key", 32),
        hex("3bfcddd72bcf02541d7fa0dd1f5f9eeea817e09a6963a0e6c7df0f9a1bab90f2")
    );
    assert_eq!(
        expand_label(&secret, "quicv2 iv", 12),
        hex("a6b5bc6ab7dafce30ffff5dd")
    );
    assert_eq!(
        expand_label(&secret, "quicv2 hp", 32),
        hex("d659760d2ba434a226fd37b35c69e2da8211d10c4f12538787d65645d5d1b8e2")
    );
    let quic = rustls::crypto::ring::cipher_suite::TLS13_CHACHA20_POLY1305_SHA256
        .tls13()
        .and_then(|suite| suite.quic_suite())
        .expect("QUIC suite")
        .quic;
    let key = || {
        let bytes: [u8; 32] = expand_label(&secret, "quicv2 key", 32).try_into().unwrap();
        bytes.into()
    };
    let iv = || {
        let bytes: [u8; 12] = expand_label(&secret, "quicv2 iv", 12).try_into().unwrap();
        rustls::crypto::cipher::Iv::from(bytes)
    };
    let hp = || {
        let bytes: [u8; 32] = expand_label(&secret, "quicv2 hp", 32).try_into().unwrap();
        quic.header_protection_key(bytes.into())
    };
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
        ..v2_initial_header(&[], &[], 0)
    };
    let mut packet = seal_in(&QUIC_V2, &header, 3, &[0x01], &keys);
    assert_eq!(packet, hex("5558b1c60ae7b6b932bc27d786f4bc2bb20f2162ba"));
    let mut parsed = parse_quic_header(&packet, QUIC_V2_VERSION, 0)
        .unwrap()
        .without_token();
    QUIC_V2.unprotect(&mut parsed, &mut packet, &keys).unwrap();
    assert_eq!((parsed.pn_len, parsed.key_phase), (3, false));
    let pn = decode_packet_number_of_len(Some(654_360_563), u64::from(parsed.truncated_pn), 3);
    assert_eq!(
        QUIC_V2.open(&parsed, pn, &mut packet, &keys).unwrap(),
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
