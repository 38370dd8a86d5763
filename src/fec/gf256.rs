//! Arithmetic in GF(2^8) with the polynomial x^8 + x^4 + x^3 + x^2 + 1
//! (0x11d, the field of Reed–Solomon codes and of RLNC implementations),
//! generator 2. Addition is XOR; multiplication goes through log and
//! exponent tables, and bulk products through a full product table, all
//! built at compile time.

/// The reducing polynomial, 0x11d.
const POLYNOMIAL: u16 = 0x11d;

/// `EXP[i]` = 2^i, twice over so that `EXP[log a + log b]` needs no modulo.
static EXP: [u8; 512] = build_exp();
/// `LOG[a]` for a ≠ 0; `LOG[0]` is unused.
static LOG: [u8; 256] = build_log();

const fn build_exp() -> [u8; 512] {
    let mut exp = [0u8; 512];
    let mut value: u16 = 1;
    let mut i = 0;
    while i < 255 {
        exp[i] = value as u8;
        exp[i + 255] = value as u8;
        value <<= 1;
        if value & 0x100 != 0 {
            value ^= POLYNOMIAL;
        }
        i += 1;
    }
    exp[510] = exp[0];
    exp[511] = exp[1];
    exp
}

const fn build_log() -> [u8; 256] {
    let exp = build_exp();
    let mut log = [0u8; 256];
    let mut i = 0;
    while i < 255 {
        log[exp[i] as usize] = i as u8;
        i += 1;
    }
    log
}

/// a · b.
pub fn mul(a: u8, b: u8) -> u8 {
    if a == 0 || b == 0 {
        return 0;
    }
    EXP[LOG[a as usize] as usize + LOG[b as usize] as usize]
}

/// 1 / a; `None` for 0.
pub fn inv(a: u8) -> Option<u8> {
    (a != 0).then(|| EXP[255 - LOG[a as usize] as usize])
}

/// `MUL[c][x]` = c · x: 64 KiB, so that a product row costs nothing to
/// find (building one per call was a sixth of a 1350-byte `mul_add`).
static MUL: [[u8; 256]; 256] = build_mul();

const fn build_mul() -> [[u8; 256]; 256] {
    let exp = build_exp();
    let log = build_log();
    let mut table = [[0u8; 256]; 256];
    let mut c = 1;
    while c < 256 {
        let mut x = 1;
        while x < 256 {
            table[c][x] = exp[log[c] as usize + log[x] as usize];
            x += 1;
        }
        c += 1;
    }
    table
}

/// Bytes `mul_add` and `scale` take at once: eight lookups assembled into
/// one word, so `dst` is loaded and stored once per eight bytes.
const WORD: usize = 8;

/// `dst[i] ^= c · src[i]` over the common length: the one loop that
/// encoding and decoding spend their time in. Each byte is one load from
/// `c`'s row of products.
pub fn mul_add(dst: &mut [u8], src: &[u8], c: u8) {
    let len = dst.len().min(src.len());
    let (dst, src) = (&mut dst[..len], &src[..len]);
    match c {
        0 => {}
        1 => {
            for (d, s) in dst.iter_mut().zip(src) {
                *d ^= s;
            }
        }
        _ => {
            let row = &MUL[c as usize];
            let mut dst_words = dst.chunks_exact_mut(WORD);
            let mut src_words = src.chunks_exact(WORD);
            for (d, s) in (&mut dst_words).zip(&mut src_words) {
                let product = u64::from_le_bytes(std::array::from_fn(|i| row[s[i] as usize]));
                let sum = u64::from_le_bytes(d.try_into().expect("a whole word")) ^ product;
                d.copy_from_slice(&sum.to_le_bytes());
            }
            for (d, s) in dst_words
                .into_remainder()
                .iter_mut()
                .zip(src_words.remainder())
            {
                *d ^= row[*s as usize];
            }
        }
    }
}

/// `buf[i] = c · buf[i]`.
pub fn scale(buf: &mut [u8], c: u8) {
    if c == 1 {
        return;
    }
    let row = &MUL[c as usize];
    for b in buf {
        *b = row[*b as usize];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Carry-less multiplication reduced by 0x11d, bit by bit: the
    /// definition the tables must agree with.
    fn slow_mul(mut a: u8, mut b: u8) -> u8 {
        let mut product = 0u8;
        while b != 0 {
            if b & 1 != 0 {
                product ^= a;
            }
            let carry = a & 0x80 != 0;
            a <<= 1;
            if carry {
                a ^= (POLYNOMIAL & 0xff) as u8;
            }
            b >>= 1;
        }
        product
    }

    #[test]
    fn tables_agree_with_the_field_definition_for_every_pair() {
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                assert_eq!(mul(a, b), slow_mul(a, b), "{a} * {b}");
            }
        }
    }

    #[test]
    fn every_nonzero_element_has_an_inverse() {
        assert_eq!(inv(0), None);
        for a in 1..=255u8 {
            assert_eq!(mul(a, inv(a).unwrap()), 1, "{a}");
        }
    }

    #[test]
    fn mul_add_matches_mul_for_every_factor_over_ragged_lengths() {
        // Whole words, a remainder, and a shorter source or destination.
        let src: Vec<u8> = (0..=255u8).rev().chain(0..=20).collect();
        for c in 0..=255u8 {
            for (dst_len, src_len) in [(277, 277), (13, 277), (277, 21), (7, 7)] {
                let mut dst: Vec<u8> = (0..dst_len).map(|i| (i * 5) as u8).collect();
                mul_add(&mut dst, &src[..src_len], c);
                for (i, d) in dst.iter().enumerate() {
                    let expected = if i < src_len {
                        (i * 5) as u8 ^ mul(c, src[i])
                    } else {
                        (i * 5) as u8
                    };
                    assert_eq!(*d, expected, "c {c}, byte {i} of {dst_len}/{src_len}");
                }
            }
        }
    }

    #[test]
    fn mul_add_then_again_cancels_and_scale_matches_mul() {
        let src: Vec<u8> = (0..=255).collect();
        let mut dst = vec![7u8; 256];
        mul_add(&mut dst, &src, 0x53);
        assert_eq!(dst[3], 7 ^ mul(3, 0x53));
        mul_add(&mut dst, &src, 0x53);
        assert!(dst.iter().all(|&b| b == 7));
        let mut scaled = src.clone();
        scale(&mut scaled, 0x8e);
        for (x, y) in src.iter().zip(&scaled) {
            assert_eq!(*y, mul(*x, 0x8e));
        }
    }
}
