//! Seed material for a connection's unpredictable values: connection IDs,
//! token nonces, the packet numbers it skips, PATH_CHALLENGE data, the
//! bytes of stateless resets.
//!
//! On real sockets the driver draws 256 bits from the operating system
//! (`io::os_entropy`) and every value derives from them, each use under a
//! label of its own (HMAC-SHA-256 as a PRF, then a ChaCha stream): an
//! observer who sees some connection IDs learns nothing of the others or
//! of the skip schedule. In the simulator there is none, and values derive
//! from `Config::rng_seed`, so that runs repeat exactly.
//!
//! No reads of the OS generator here: the sans-IO core is handed its entropy.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use ring::hmac;

/// Bytes of entropy: 256 bits.
pub const ENTROPY_LEN: usize = 32;

/// 256 bits of seed material, from the operating system's generator.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Entropy([u8; ENTROPY_LEN]);

impl Entropy {
    /// Entropy from `bytes`, which must come from a cryptographic generator.
    pub fn new(bytes: [u8; ENTROPY_LEN]) -> Self {
        Self(bytes)
    }

    /// Independent entropy for the `index`th use under `label` (each
    /// connection of an endpoint, each purpose within a connection).
    pub fn derive(&self, label: &[u8], index: u64) -> Entropy {
        let key = hmac::Key::new(hmac::HMAC_SHA256, &self.0);
        let mut context = hmac::Context::with_key(&key);
        context.update(label);
        context.update(&index.to_be_bytes());
        let mut derived = [0u8; ENTROPY_LEN];
        derived.copy_from_slice(context.sign().as_ref());
        Entropy(derived)
    }

    /// A generator keyed by the entropy derived for `label`.
    pub fn rng(&self, label: &[u8]) -> ChaCha8Rng {
        ChaCha8Rng::from_seed(self.derive(label, 0).0)
    }
}

impl std::fmt::Debug for Entropy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Entropy(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngCore;

    #[test]
    fn each_label_and_index_gets_its_own_stream() {
        let entropy = Entropy::new([7; ENTROPY_LEN]);
        let draw = |mut rng: ChaCha8Rng| rng.next_u64();
        assert_ne!(draw(entropy.rng(b"cid")), draw(entropy.rng(b"skip")));
        assert_ne!(
            entropy.derive(b"connection", 1),
            entropy.derive(b"connection", 2)
        );
        assert_eq!(draw(entropy.rng(b"cid")), draw(entropy.rng(b"cid")));
        let other = Entropy::new([8; ENTROPY_LEN]);
        assert_ne!(draw(entropy.rng(b"cid")), draw(other.rng(b"cid")));
    }

    #[test]
    fn debug_output_hides_the_bytes() {
        assert_eq!(
            format!("{:?}", Entropy::new([7; ENTROPY_LEN])),
            "Entropy(..)"
        );
    }
}
