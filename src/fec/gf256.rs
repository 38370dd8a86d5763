//! Arithmetic in GF(2^8) with the polynomial x^8 + x^4 + x^3 + x^2 + 1
//! (0x11d, the field of Reed–Solomon codes and of RLNC implementations),
//! generator 2. Addition is XOR; multiplication goes through log and
//! exponent tables built at compile time.

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

/// `dst[i] ^= c · src[i]` over the common length: the one loop that
/// encoding and decoding spend their time in. A 256-byte row of products by
/// `c` turns each byte into one table load.
pub fn mul_add(dst: &mut [u8], src: &[u8], c: u8) {
    match c {
        0 => {}
        1 => {
            for (d, s) in dst.iter_mut().zip(src) {
                *d ^= s;
            }
        }
        _ => {
            let row = product_row(c);
            for (d, s) in dst.iter_mut().zip(src) {
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
    let row = product_row(c);
    for b in buf {
        *b = row[*b as usize];
    }
}

fn product_row(c: u8) -> [u8; 256] {
    let mut row = [0u8; 256];
    if c == 0 {
        return row;
    }
    let log_c = LOG[c as usize] as usize;
    for (x, product) in row.iter_mut().enumerate().skip(1) {
        *product = EXP[log_c + LOG[x] as usize];
    }
    row
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
