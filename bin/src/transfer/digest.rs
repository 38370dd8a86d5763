//! End-to-end SHA-256 (FIPS 180-4) through `ring::digest`, the digest
//! provider DESIGN §1 chose.

use std::fmt;
use std::io::{self, Read};
use std::str::FromStr;

/// SHA-256 output length in bytes.
pub const SHA256_LEN: usize = 32;

/// A SHA-256 digest; shown and parsed as 64 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Sha256Digest(pub [u8; SHA256_LEN]);

impl fmt::Display for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::hex::encode(&self.0))
    }
}

impl fmt::Debug for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sha256Digest({self})")
    }
}

/// A string that is not 64 hex digits.
#[derive(Debug, thiserror::Error)]
#[error("{text:?} is not a SHA-256 digest (64 hex digits)")]
pub struct BadDigest {
    text: String,
}

impl FromStr for Sha256Digest {
    type Err = BadDigest;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        crate::hex::decode(text)
            .and_then(|bytes| <[u8; SHA256_LEN]>::try_from(bytes).ok())
            .map(Self)
            .ok_or_else(|| BadDigest {
                text: text.to_string(),
            })
    }
}

/// An incremental SHA-256.
#[derive(Clone)]
pub struct Sha256Hasher {
    context: ring::digest::Context,
}

impl Default for Sha256Hasher {
    fn default() -> Self {
        Self {
            context: ring::digest::Context::new(&ring::digest::SHA256),
        }
    }
}

impl Sha256Hasher {
    /// A hasher over nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `bytes`.
    pub fn update(&mut self, bytes: &[u8]) {
        self.context.update(bytes);
    }

    /// The digest of everything added.
    pub fn finish(self) -> Sha256Digest {
        let mut out = [0u8; SHA256_LEN];
        out.copy_from_slice(self.context.finish().as_ref());
        Sha256Digest(out)
    }

    /// Adds everything `reader` yields; returns how many bytes that was.
    pub fn update_from<R: Read + ?Sized>(&mut self, reader: &mut R) -> io::Result<u64> {
        let mut buf = vec![0u8; 64 * 1024];
        let mut total = 0u64;
        loop {
            match reader.read(&mut buf) {
                Ok(0) => return Ok(total),
                Ok(n) => {
                    self.update(&buf[..n]);
                    total += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// The SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> Sha256Digest {
    let mut hasher = Sha256Hasher::new();
    hasher.update(bytes);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_of_abc_is_the_fips_180_2_example() {
        // FIPS 180-2 Appendix B.1: SHA-256("abc").
        assert_eq!(
            sha256(b"abc").to_string(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn hex_round_trips_and_rejects_non_hex() {
        let digest = sha256(b"sift");
        assert_eq!(digest.to_string().parse::<Sha256Digest>().unwrap(), digest);
        assert!("zz".repeat(32).parse::<Sha256Digest>().is_err());
        assert!("ab".parse::<Sha256Digest>().is_err());
        assert!("é".repeat(32).parse::<Sha256Digest>().is_err());
    }

    #[test]
    fn incremental_and_one_shot_agree() {
        let mut hasher = Sha256Hasher::new();
        hasher.update(b"hello ");
        hasher.update(b"world");
        assert_eq!(hasher.finish(), sha256(b"hello world"));
    }
}
