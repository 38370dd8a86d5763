//! A server's static secret, and the keys it derives for work that must
//! survive the server's own state: stateless reset tokens (RFC 9000 §10.3)
//! and sealed address-validation tokens (Retry, RFC 9000 §8.1.2).
//!
//! Owns: deriving per-purpose keys from one 32-byte secret (HKDF-SHA256,
//! one label per purpose, so a token of one kind is never valid as another),
//! computing stateless reset tokens from connection IDs, and sealing and
//! opening token contents (AES-256-GCM, bound to the client's address as
//! associated data). What a token says is the endpoint's business.
//! Must not: draw randomness or touch files. `sift-server` keeps the secret
//! in its state directory, so a restarted server still derives the tokens
//! it handed out before the restart: that is the whole point of a stateless
//! reset, telling a client at once that its connection is gone.
//!
//! A reset token is HMAC-SHA256(reset key, connection ID) truncated to 16
//! bytes (RFC 9000 §10.3.2's suggested construction): only the holder of
//! the secret can produce the token of a connection ID, and the tokens of
//! different connection IDs are unrelated.

use ring::{aead, hkdf, hmac};

use crate::wire::{ConnectionId, RESET_TOKEN_LEN};

/// Length of a server secret, in bytes.
pub const SERVER_SECRET_LEN: usize = 32;

/// HKDF labels, one per derived key.
const RESET_LABEL: &[u8] = b"sift stateless reset v1";
const TOKEN_LABEL: &[u8] = b"sift address token v1";

/// Bytes of the nonce that starts a sealed token.
pub const TOKEN_NONCE_LEN: usize = aead::NONCE_LEN;
/// Bytes a sealed token adds to its contents (nonce and AEAD tag).
pub const TOKEN_OVERHEAD: usize = TOKEN_NONCE_LEN + 16;
/// Fixed salt: the secret is already uniformly random, the salt only
/// separates sift's derivations from anyone else's use of the same bytes.
const SALT: &[u8] = b"sift server secret";

/// A stateless reset token: the last 16 bytes of a stateless reset.
/// Compared in constant time.
#[derive(Clone, Copy)]
pub struct ResetToken([u8; RESET_TOKEN_LEN]);

impl ResetToken {
    /// A token received in the peer's transport parameters.
    pub fn new(bytes: [u8; RESET_TOKEN_LEN]) -> Self {
        Self(bytes)
    }

    /// The token's bytes.
    pub fn as_bytes(&self) -> &[u8; RESET_TOKEN_LEN] {
        &self.0
    }

    /// Whether `datagram` ends with this token: the test RFC 9000 §10.3.1
    /// applies to a datagram that matches no connection.
    pub fn ends(&self, datagram: &[u8]) -> bool {
        datagram.len() >= RESET_TOKEN_LEN
            && constant_time_eq(&datagram[datagram.len() - RESET_TOKEN_LEN..], &self.0)
    }
}

impl PartialEq for ResetToken {
    fn eq(&self, other: &Self) -> bool {
        constant_time_eq(&self.0, &other.0)
    }
}

impl Eq for ResetToken {}

impl std::fmt::Debug for ResetToken {
    // A token is as good as the reset it allows: keep it out of logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ResetToken(..)")
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |diff, (x, y)| diff | (x ^ y)) == 0
}

/// A server's static secret (32 random bytes), from which it derives the
/// keys of its stateless tokens.
#[derive(Clone)]
pub struct ServerSecret {
    reset_key: hmac::Key,
    token_key: std::sync::Arc<aead::LessSafeKey>,
}

impl ServerSecret {
    /// The secret from its bytes (drawn from a CSPRNG and kept private).
    pub fn new(bytes: &[u8; SERVER_SECRET_LEN]) -> Self {
        let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, SALT).extract(bytes);
        let reset_key = prk
            .expand(&[RESET_LABEL], hmac::HMAC_SHA256)
            .expect("one HMAC-SHA256 key length is a valid HKDF-SHA256 output")
            .into();
        let token_key: aead::UnboundKey = prk
            .expand(&[TOKEN_LABEL], &aead::AES_256_GCM)
            .expect("an AES-256 key length is a valid HKDF-SHA256 output")
            .into();
        Self {
            reset_key,
            token_key: std::sync::Arc::new(aead::LessSafeKey::new(token_key)),
        }
    }

    /// Seals `contents` into a token only this secret opens, and only for
    /// the same `bound_to` bytes (the client's address). `nonce` must never
    /// repeat under one secret: the endpoint draws it at random.
    pub fn seal_token(
        &self,
        nonce: [u8; TOKEN_NONCE_LEN],
        contents: &[u8],
        bound_to: &[u8],
    ) -> Vec<u8> {
        let mut token = Vec::with_capacity(TOKEN_OVERHEAD + contents.len());
        token.extend_from_slice(&nonce);
        token.extend_from_slice(contents);
        let tag = self
            .token_key
            .seal_in_place_separate_tag(
                aead::Nonce::assume_unique_for_key(nonce),
                aead::Aad::from(bound_to),
                &mut token[TOKEN_NONCE_LEN..],
            )
            .expect("a token is far below AES-GCM's length limit");
        token.extend_from_slice(tag.as_ref());
        token
    }

    /// The contents of a token [`ServerSecret::seal_token`] made with this
    /// secret for `bound_to`; `None` for anything else (another secret,
    /// another address, a modified or truncated token).
    pub fn open_token(&self, token: &[u8], bound_to: &[u8]) -> Option<Vec<u8>> {
        if token.len() < TOKEN_OVERHEAD {
            return None;
        }
        let (nonce, sealed) = token.split_at(TOKEN_NONCE_LEN);
        let nonce = aead::Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut sealed = sealed.to_vec();
        let contents = self
            .token_key
            .open_in_place(nonce, aead::Aad::from(bound_to), &mut sealed)
            .ok()?;
        Some(contents.to_vec())
    }

    /// The stateless reset token of one of our connection IDs.
    pub fn reset_token(&self, cid: &ConnectionId) -> ResetToken {
        let tag = hmac::sign(&self.reset_key, cid.as_slice());
        let mut token = [0u8; RESET_TOKEN_LEN];
        token.copy_from_slice(&tag.as_ref()[..RESET_TOKEN_LEN]);
        ResetToken(token)
    }
}

impl std::fmt::Debug for ServerSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServerSecret(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_opens_only_under_its_secret_and_for_its_address() {
        let secret = ServerSecret::new(&[7; SERVER_SECRET_LEN]);
        let token = secret.seal_token([1; TOKEN_NONCE_LEN], b"contents", b"10.0.0.1:5");
        assert_eq!(token.len(), b"contents".len() + TOKEN_OVERHEAD);
        assert_eq!(
            secret.open_token(&token, b"10.0.0.1:5").as_deref(),
            Some(&b"contents"[..])
        );
        // After a restart with the same secret, still good.
        let restarted = ServerSecret::new(&[7; SERVER_SECRET_LEN]);
        assert!(restarted.open_token(&token, b"10.0.0.1:5").is_some());
        assert!(secret.open_token(&token, b"10.0.0.2:5").is_none());
        let other = ServerSecret::new(&[8; SERVER_SECRET_LEN]);
        assert!(other.open_token(&token, b"10.0.0.1:5").is_none());
        for i in 0..token.len() {
            let mut flipped = token.clone();
            flipped[i] ^= 1;
            assert!(secret.open_token(&flipped, b"10.0.0.1:5").is_none(), "{i}");
        }
        for len in 0..token.len() {
            assert!(secret.open_token(&token[..len], b"10.0.0.1:5").is_none());
        }
    }

    fn cid(byte: u8) -> ConnectionId {
        ConnectionId::new(&[byte; 8]).unwrap()
    }

    #[test]
    fn the_same_secret_gives_the_same_token_after_a_restart() {
        let before = ServerSecret::new(&[7; SERVER_SECRET_LEN]);
        let after = ServerSecret::new(&[7; SERVER_SECRET_LEN]);
        assert_eq!(before.reset_token(&cid(1)), after.reset_token(&cid(1)));
    }

    #[test]
    fn tokens_differ_per_connection_id_and_per_secret() {
        let secret = ServerSecret::new(&[7; SERVER_SECRET_LEN]);
        let other = ServerSecret::new(&[8; SERVER_SECRET_LEN]);
        assert_ne!(secret.reset_token(&cid(1)), secret.reset_token(&cid(2)));
        assert_ne!(secret.reset_token(&cid(1)), other.reset_token(&cid(1)));
    }

    #[test]
    fn a_token_recognises_only_datagrams_that_end_with_it() {
        let token = ServerSecret::new(&[7; SERVER_SECRET_LEN]).reset_token(&cid(1));
        let mut datagram = vec![0x40; 30];
        datagram.extend_from_slice(token.as_bytes());
        assert!(token.ends(&datagram));
        *datagram.last_mut().unwrap() ^= 1;
        assert!(!token.ends(&datagram));
        assert!(!token.ends(&datagram[..10]));
    }

    #[test]
    fn debug_output_does_not_show_key_material() {
        let secret = ServerSecret::new(&[7; SERVER_SECRET_LEN]);
        assert_eq!(format!("{secret:?}"), "ServerSecret(..)");
        assert_eq!(
            format!("{:?}", secret.reset_token(&cid(1))),
            "ResetToken(..)"
        );
    }
}
