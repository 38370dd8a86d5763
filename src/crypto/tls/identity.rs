//! Identities: a certificate chain and its private key, and the SHA-256
//! fingerprint that names it (like an ssh key's). A server presents one to
//! every client, which pins its fingerprint; a client may present one when
//! a server asks, and the server then knows the client by its fingerprint.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;

/// Why an identity, a fingerprint or a root store could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdentityError {
    /// No certificate in the chain (or in a PEM file).
    #[error("no certificate found")]
    NoCertificate,
    /// The certificate or key bytes do not parse.
    #[error("malformed {what}: {reason}")]
    Malformed { what: &'static str, reason: String },
    /// The key is of a type the ring provider cannot sign with.
    #[error("unsupported private key: {0}")]
    UnsupportedKey(String),
    /// A fingerprint is not 32 bytes of hex (with an optional `SHA256:`).
    #[error("not a SHA-256 fingerprint: {0:?} (expected 64 hex digits, optionally after SHA256:)")]
    BadFingerprint(String),
    /// rcgen could not make a certificate.
    #[error("cannot generate a certificate: {0}")]
    Generate(String),
}

/// The SHA-256 digest of a certificate's DER encoding. Shown as
/// `SHA256:` and 64 lowercase hex digits; parsed from that, from bare hex,
/// or from openssl's colon-separated form, in either case.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fingerprint([u8; 32]);

impl Fingerprint {
    /// The fingerprint of a DER-encoded certificate.
    pub fn of_certificate(der: &[u8]) -> Self {
        let digest = ring::digest::digest(&ring::digest::SHA256, der);
        let mut bytes = [0u8; 32];
        bytes.copy_from_slice(digest.as_ref());
        Self(bytes)
    }

    /// The raw digest.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SHA256:")?;
        self.0.iter().try_for_each(|byte| write!(f, "{byte:02x}"))
    }
}

impl fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl FromStr for Fingerprint {
    type Err = IdentityError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || IdentityError::BadFingerprint(text.to_string());
        let trimmed = text.trim();
        let hex = match trimmed.get(..7) {
            Some(prefix) if prefix.eq_ignore_ascii_case("sha256:") => &trimmed[7..],
            _ => trimmed,
        };
        let digits: Vec<u8> = hex.bytes().filter(|b| *b != b':').collect();
        if digits.len() != 64 {
            return Err(bad());
        }
        let mut bytes = [0u8; 32];
        for (byte, pair) in bytes.iter_mut().zip(digits.chunks(2)) {
            let pair = std::str::from_utf8(pair).map_err(|_| bad())?;
            *byte = u8::from_str_radix(pair, 16).map_err(|_| bad())?;
        }
        Ok(Self(bytes))
    }
}

/// What a server presents (and a client, when asked): its certificate
/// chain (end entity first) and the private key of the first certificate.
/// Cheap to clone.
#[derive(Clone)]
pub struct ServerIdentity {
    certified: Arc<CertifiedKey>,
    private_key_der: Arc<Vec<u8>>,
}

impl fmt::Debug for ServerIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerIdentity")
            .field("fingerprint", &self.fingerprint())
            .field("chain_len", &self.certified.cert.len())
            .finish_non_exhaustive()
    }
}

fn malformed(what: &'static str) -> impl Fn(rustls::pki_types::pem::Error) -> IdentityError {
    move |error| IdentityError::Malformed {
        what,
        reason: error.to_string(),
    }
}

impl ServerIdentity {
    /// From DER: the chain (end entity first) and a PKCS#8, SEC1 or PKCS#1
    /// private key. Fails if the key cannot sign or does not match the
    /// end-entity certificate.
    pub fn from_der(chain: Vec<Vec<u8>>, private_key: Vec<u8>) -> Result<Self, IdentityError> {
        if chain.is_empty() {
            return Err(IdentityError::NoCertificate);
        }
        let key = PrivateKeyDer::try_from(private_key.clone()).map_err(|reason| {
            IdentityError::Malformed {
                what: "private key",
                reason: reason.to_string(),
            }
        })?;
        let signing_key = rustls::crypto::ring::sign::any_supported_type(&key)
            .map_err(|error| IdentityError::UnsupportedKey(error.to_string()))?;
        let chain: Vec<CertificateDer<'static>> =
            chain.into_iter().map(CertificateDer::from).collect();
        let certified = CertifiedKey::new(chain, signing_key);
        match certified.keys_match() {
            // A certificate whose public key rustls cannot read is left for
            // the peer to judge, as rustls's own `with_single_cert` does.
            Ok(()) | Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) => {}
            Err(error) => return Err(IdentityError::UnsupportedKey(error.to_string())),
        }
        Ok(Self {
            certified: Arc::new(certified),
            private_key_der: Arc::new(private_key),
        })
    }

    /// From PEM text: every `CERTIFICATE` block of `chain_pem` (end entity
    /// first) and the first private key block of `key_pem`.
    pub fn from_pem(chain_pem: &[u8], key_pem: &[u8]) -> Result<Self, IdentityError> {
        let chain = CertificateDer::pem_slice_iter(chain_pem)
            .map(|cert| cert.map(|cert| cert.to_vec()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(malformed("certificate PEM"))?;
        let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(malformed("private key PEM"))?;
        Self::from_der(chain, key.secret_der().to_vec())
    }

    /// A new self-signed certificate for `names` (DNS names or IP
    /// addresses) with a fresh Ed25519 key, as `sift-server` makes on its
    /// first run. Ed25519 keeps handshake sizes fixed (its signatures are
    /// always 64 bytes), so simulated runs repeat exactly.
    pub fn self_signed(names: &[&str]) -> Result<Self, IdentityError> {
        let generate = |error: rcgen::Error| IdentityError::Generate(error.to_string());
        let key_pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ED25519).map_err(generate)?;
        let names: Vec<String> = names.iter().map(|name| name.to_string()).collect();
        let params = rcgen::CertificateParams::new(names).map_err(generate)?;
        let certificate = params.self_signed(&key_pair).map_err(generate)?;
        Self::from_der(vec![certificate.der().to_vec()], key_pair.serialize_der())
    }

    /// A new self-signed certificate for `names` with a fresh ECDSA P-256
    /// key, as `sift-server` makes on its first run: the one key type
    /// every QUIC stack verifies (BoringSSL, and so quiche, offers no
    /// Ed25519 in its TLS 1.3 signature algorithms). ECDSA signatures are
    /// randomised and vary in length, so the simulator keeps
    /// [`ServerIdentity::self_signed`].
    pub fn self_signed_ecdsa(names: &[&str]) -> Result<Self, IdentityError> {
        let generate = |error: rcgen::Error| IdentityError::Generate(error.to_string());
        let key_pair =
            rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).map_err(generate)?;
        let names: Vec<String> = names.iter().map(|name| name.to_string()).collect();
        let params = rcgen::CertificateParams::new(names).map_err(generate)?;
        let certificate = params.self_signed(&key_pair).map_err(generate)?;
        Self::from_der(vec![certificate.der().to_vec()], key_pair.serialize_der())
    }

    /// The fingerprint of the end-entity certificate: what clients pin.
    pub fn fingerprint(&self) -> Fingerprint {
        Fingerprint::of_certificate(self.certified.end_entity_cert().map_or(&[], |c| c.as_ref()))
    }

    /// The chain as PEM `CERTIFICATE` blocks, end entity first.
    pub fn chain_pem(&self) -> String {
        self.certified
            .cert
            .iter()
            .map(|cert| pem_block("CERTIFICATE", cert.as_ref()))
            .collect()
    }

    /// The private key as a PEM block (PKCS#8 if it was given as PKCS#8).
    /// Secret: store it readable by the server only.
    pub fn private_key_pem(&self) -> String {
        let label = match PrivateKeyDer::try_from(self.private_key_der.as_slice()) {
            Ok(PrivateKeyDer::Pkcs1(_)) => "RSA PRIVATE KEY",
            Ok(PrivateKeyDer::Sec1(_)) => "EC PRIVATE KEY",
            _ => "PRIVATE KEY",
        };
        pem_block(label, &self.private_key_der)
    }

    pub(crate) fn certified_key(&self) -> Arc<CertifiedKey> {
        self.certified.clone()
    }

    /// Tests: `certificate`'s chain with `signer`'s key, which does not
    /// match it — what someone who copied a certificate without its key
    /// would present. [`ServerIdentity::from_der`] refuses to make one.
    #[cfg(test)]
    pub(super) fn with_foreign_key(certificate: &Self, signer: &Self) -> Self {
        Self {
            certified: Arc::new(CertifiedKey::new(
                certificate.certified.cert.clone(),
                signer.certified.key.clone(),
            )),
            private_key_der: signer.private_key_der.clone(),
        }
    }
}

/// RFC 7468 text encoding: base64 in 64-column lines between markers.
fn pem_block(label: &str, der: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut base64 = String::with_capacity(der.len().div_ceil(3) * 4);
    for chunk in der.chunks(3) {
        let bytes = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let word = u32::from_be_bytes([0, bytes[0], bytes[1], bytes[2]]);
        for index in 0..4 {
            if index <= chunk.len() {
                base64.push(ALPHABET[(word >> (18 - 6 * index) & 0x3f) as usize] as char);
            } else {
                base64.push('=');
            }
        }
    }
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in base64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap_or_default());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprint_prints_and_parses_in_the_usual_forms() {
        let fingerprint = Fingerprint::of_certificate(b"certificate");
        let shown = fingerprint.to_string();
        assert!(shown.starts_with("SHA256:") && shown.len() == 7 + 64);
        assert_eq!(shown.parse::<Fingerprint>(), Ok(fingerprint));
        assert_eq!(
            shown[7..].to_uppercase().parse::<Fingerprint>(),
            Ok(fingerprint)
        );
        let openssl_style: Vec<String> = fingerprint
            .as_bytes()
            .iter()
            .map(|b| format!("{b:02X}"))
            .collect();
        assert_eq!(
            openssl_style.join(":").parse::<Fingerprint>(),
            Ok(fingerprint)
        );
        assert!("SHA256:abc".parse::<Fingerprint>().is_err());
        assert!(format!("{}zz", &shown[..shown.len() - 2])
            .parse::<Fingerprint>()
            .is_err());
    }

    #[test]
    fn self_signed_identity_survives_a_pem_round_trip() {
        let identity = ServerIdentity::self_signed(&["localhost", "127.0.0.1"]).unwrap();
        let again = ServerIdentity::from_pem(
            identity.chain_pem().as_bytes(),
            identity.private_key_pem().as_bytes(),
        )
        .unwrap();
        assert_eq!(again.fingerprint(), identity.fingerprint());
        let other = ServerIdentity::self_signed(&["localhost"]).unwrap();
        assert_ne!(other.fingerprint(), identity.fingerprint());
    }

    #[test]
    fn mismatched_or_garbage_key_is_refused() {
        let one = ServerIdentity::self_signed(&["localhost"]).unwrap();
        let two = ServerIdentity::self_signed(&["localhost"]).unwrap();
        let mismatched =
            ServerIdentity::from_pem(one.chain_pem().as_bytes(), two.private_key_pem().as_bytes());
        assert!(matches!(mismatched, Err(IdentityError::UnsupportedKey(_))));
        assert!(ServerIdentity::from_pem(b"nothing", b"nothing").is_err());
        assert_eq!(
            ServerIdentity::from_der(Vec::new(), vec![1, 2, 3]).unwrap_err(),
            IdentityError::NoCertificate
        );
    }
}
