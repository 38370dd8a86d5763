//! HalfSipHash-2-4 with a 32-bit output (Aumasson and Bernstein's SipHash
//! family, the reference `halfsiphash.c` of github.com/veorq/SipHash): a
//! keyed pseudo-random function of 32-bit words built from additions,
//! xors and rotations only, which is what lets a classic-BPF program
//! (`io::steering`) compute the same function the kernel steers by.
//!
//! [`half_siphash`] hashes bytes as the reference does (little-endian
//! words), for its test vectors; [`steering_hash`] is the function the
//! steering uses, fed the two *big-endian* words of a connection ID's
//! first eight bytes, since big-endian is how classic BPF loads a word.

/// Rounds per message word (the "2" of HalfSipHash-2-4).
pub const C_ROUNDS: usize = 2;
/// Rounds after the last word (the "4").
pub const D_ROUNDS: usize = 4;
/// The reference's initial values of v2 and v3 ("lyge", "tedb"), xored
/// with the key's two words; v0 and v1 start as the key itself.
pub const INIT: [u32; 2] = [0x6c79_6765, 0x7465_6462];
/// Xored into v2 before the final rounds for a 32-bit output.
pub const FINAL_XOR: u32 = 0xff;
/// The rotations of one round, in the order [`round`] applies them:
/// v1 by 5, v0 by 16, v3 by 8, v3 by 7, v1 by 13, v2 by 16.
pub const ROTATIONS: [u32; 6] = [5, 16, 8, 7, 13, 16];

/// The key, as the reference reads its eight bytes: two little-endian
/// words.
pub type Key = [u32; 2];

/// The state before the first word: v0..v3.
pub fn initial_state(key: Key) -> [u32; 4] {
    [key[0], key[1], key[0] ^ INIT[0], key[1] ^ INIT[1]]
}

/// One SipRound on 32-bit words.
pub fn round(v: &mut [u32; 4]) {
    v[0] = v[0].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(ROTATIONS[0]);
    v[1] ^= v[0];
    v[0] = v[0].rotate_left(ROTATIONS[1]);
    v[2] = v[2].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(ROTATIONS[2]);
    v[3] ^= v[2];
    v[0] = v[0].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(ROTATIONS[3]);
    v[3] ^= v[0];
    v[2] = v[2].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(ROTATIONS[4]);
    v[1] ^= v[2];
    v[2] = v[2].rotate_left(ROTATIONS[5]);
}

/// Absorbs one message word.
fn absorb(v: &mut [u32; 4], word: u32) {
    v[3] ^= word;
    for _ in 0..C_ROUNDS {
        round(v);
    }
    v[0] ^= word;
}

/// HalfSipHash-2-4 of `words` followed by the `last` word the reference
/// builds from the message length and its tail bytes.
fn hash_words(key: Key, words: impl IntoIterator<Item = u32>, last: u32) -> u32 {
    let mut v = initial_state(key);
    for word in words {
        absorb(&mut v, word);
    }
    absorb(&mut v, last);
    v[2] ^= FINAL_XOR;
    for _ in 0..D_ROUNDS {
        round(&mut v);
    }
    v[1] ^ v[3]
}

/// The reference's last word: the length's low byte on top, the 0–3 tail
/// bytes little-endian below.
fn last_word(len: usize, tail: &[u8]) -> u32 {
    let tail = tail
        .iter()
        .rev()
        .fold(0u32, |word, &byte| (word << 8) | u32::from(byte));
    ((len as u32) << 24) | tail
}

/// HalfSipHash-2-4 of `message` under `key`, as the reference computes
/// it; its 4-byte output read little-endian.
pub fn half_siphash(key: Key, message: &[u8]) -> u32 {
    let chunks = message.chunks_exact(4);
    let last = last_word(message.len(), chunks.remainder());
    let words = chunks.map(|chunk| u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]));
    hash_words(key, words, last)
}

/// The length of a steering input: the first eight bytes of an ID.
pub const STEERING_INPUT_LEN: usize = 8;

/// HalfSipHash-2-4 of the two big-endian words of `input` (as classic BPF
/// loads them): the reference function of the bytes
/// `input[3], input[2], input[1], input[0], input[7], …, input[4]`.
pub fn steering_hash(key: Key, input: &[u8; STEERING_INPUT_LEN]) -> u32 {
    let high = u32::from_be_bytes([input[0], input[1], input[2], input[3]]);
    let low = u32::from_be_bytes([input[4], input[5], input[6], input[7]]);
    hash_words(key, [high, low], last_word(STEERING_INPUT_LEN, &[]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `vectors_hsip32` of the reference's `vectors.h`: HalfSipHash-2-4,
    /// 32-bit output, key 00 01 … 07, message 00 01 … (n-1) for n = 0..63,
    /// each output's four bytes read little-endian.
    const VECTORS: [u32; 64] = [
        0x5b9f35a9, 0xb85a4727, 0x03a662fa, 0x04e7fe8a, 0x89466e2a, 0x69b6fac5, 0x23fc6358,
        0xc563cf8b, 0x8f84b8d0, 0x79e706f8, 0x3479b094, 0x50300808, 0x2f87f057, 0xff63e677,
        0x7cf8ffd6, 0x972bfe74, 0x84acb5d9, 0x5b6474c4, 0x9b8d5b46, 0x87e3ef7b, 0x45104de3,
        0xb3623f61, 0xfe67f370, 0xbdb8ade6, 0x630c4027, 0x75787826, 0x5f7b564f, 0x69e6b03a,
        0x004064b0, 0xb40f67ff, 0x8b339e50, 0x1a9f585d, 0x1221e7fe, 0x59327533, 0x8c4f436a,
        0x29b728fe, 0xecc65ce7, 0x548d7e69, 0x0f8b6863, 0xb4620b65, 0x4018bcb6, 0x0545075d,
        0x2efd4224, 0x3a86b77b, 0x48d50577, 0xb10852d7, 0xc899d4b6, 0x2e209208, 0xe32ce169,
        0xe580b58d, 0xc6649736, 0x04026e01, 0xd4f3853b, 0xbe66dbfe, 0x3a2a691e, 0xc08489c6,
        0x40b9c5a5, 0x8ce8e99b, 0x4081bc7d, 0xc58e077c, 0x736ce7d4, 0xb9cb8f42, 0x7a9983bd,
        0x744aea59,
    ];

    fn reference_key() -> Key {
        [
            u32::from_le_bytes([0, 1, 2, 3]),
            u32::from_le_bytes([4, 5, 6, 7]),
        ]
    }

    #[test]
    fn half_siphash_matches_the_reference_test_vectors() {
        let message: Vec<u8> = (0..64).collect();
        for (len, expected) in VECTORS.iter().enumerate() {
            assert_eq!(
                half_siphash(reference_key(), &message[..len]),
                *expected,
                "message of {len} bytes"
            );
        }
    }

    #[test]
    fn the_steering_hash_is_half_siphash_of_the_ids_big_endian_words() {
        let input = [0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe];
        let swapped = [0x76, 0x54, 0x32, 0x10, 0xfe, 0xdc, 0xba, 0x98];
        for key in [reference_key(), [0xdead_beef, 0x0123_4567], [0, 0]] {
            assert_eq!(
                steering_hash(key, &input),
                half_siphash(key, &swapped),
                "{key:x?}"
            );
        }
    }
}
