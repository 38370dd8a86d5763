//! The TLS settings of a [`Config`](crate::Config): the server's identity,
//! how a client trusts servers, the server name and ALPN; and how they
//! become rustls client and server configurations (ring provider, TLS 1.3
//! only; session tickets and 0-RTT when [`TlsConfig::tickets`] (client)
//! or [`TlsConfig::session_cache`] (server) is set: `resumption`).
//!
//! Trust choices, like ssh's and quinn's:
//! - [`ServerTrust::Pinned`]: the end-entity certificate's SHA-256 must be
//!   one of the pins; name and expiry are not checked (the pin *is* the
//!   identity, as with an ssh host key). `sift-client`'s known-hosts file
//!   is built on this.
//! - [`ServerTrust::Roots`]: WebPKI path validation to the given roots, for
//!   the server name.
//! - [`ServerTrust::Custom`]: the application decides.
//!
//! In every case the handshake signature is checked against the
//! certificate's key, so a server must hold the key it presents.
//!
//! Client certificates, ssh-style: a server with
//! [`TlsConfig::request_client_certificate`] asks every client for one but
//! requires none. It accepts any certificate whose key signed the
//! handshake (TLS 1.3 CertificateVerify, checked by the provider), with no
//! chain, name or expiry check: the certificate's fingerprint is the
//! client's identity, and the application decides what that identity may
//! do ([`crate::Connection::peer_certificate_fingerprint`]). A client
//! presents [`TlsConfig::client_identity`] when asked.

use std::fmt;
use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, SignatureScheme};

use super::identity::{Fingerprint, IdentityError, ServerIdentity};
use super::resumption::{ConnectionTickets, SessionCache, TicketStore, TrustKey};

/// The ALPN protocol sift offers and accepts unless the application sets
/// its own.
pub const DEFAULT_ALPN: &[u8] = b"sift/1";

/// An application's own server-certificate check ([`ServerTrust::Custom`]).
/// The handshake signature is verified by sift either way.
pub trait CertificateVerifier: Send + Sync + fmt::Debug {
    /// Accepts or rejects the server's certificate chain (DER, end entity
    /// first) for `server_name`.
    fn verify(
        &self,
        end_entity: &[u8],
        intermediates: &[&[u8]],
        server_name: &str,
    ) -> Result<(), CertificateRejected>;
}

/// Why a [`CertificateVerifier`] refused a certificate: one line for the
/// user, carried into the connection's close reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CertificateRejected(pub String);

/// How a client decides that a server is the one it meant.
#[derive(Clone)]
pub enum ServerTrust {
    /// Accept exactly the certificates with these SHA-256 fingerprints.
    Pinned(Vec<Fingerprint>),
    /// Accept chains to these root certificates (DER) naming the server.
    Roots(Vec<Vec<u8>>),
    /// Ask the application.
    Custom(Arc<dyn CertificateVerifier>),
}

impl ServerTrust {
    /// Roots from a PEM bundle (every `CERTIFICATE` block).
    pub fn roots_from_pem(pem: &[u8]) -> Result<Self, IdentityError> {
        let roots = CertificateDer::pem_slice_iter(pem)
            .map(|cert| cert.map(|cert| cert.to_vec()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|error| IdentityError::Malformed {
                what: "CA bundle",
                reason: error.to_string(),
            })?;
        if roots.is_empty() {
            return Err(IdentityError::NoCertificate);
        }
        Ok(Self::Roots(roots))
    }
}

impl fmt::Debug for ServerTrust {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerTrust::Pinned(pins) => f.debug_tuple("Pinned").field(pins).finish(),
            ServerTrust::Roots(roots) => write!(f, "Roots({} certificates)", roots.len()),
            ServerTrust::Custom(verifier) => f.debug_tuple("Custom").field(verifier).finish(),
        }
    }
}

/// TLS settings. A server needs `identity`; a client needs `trust`. One
/// config may hold both (an endpoint that connects and accepts). Client
/// certificates are optional on both sides: `request_client_certificate`
/// on the server, `client_identity` on the client.
#[derive(Clone, Debug)]
pub struct TlsConfig {
    /// ALPN protocols, most preferred first; `sift/1` by default. A client
    /// and server with no protocol in common fail the handshake.
    pub alpn_protocols: Vec<Vec<u8>>,
    /// Server: the certificate chain and key presented to clients.
    pub identity: Option<ServerIdentity>,
    /// Client: how the server's certificate is checked.
    pub trust: Option<ServerTrust>,
    /// Client: the name the server's certificate must carry with
    /// [`ServerTrust::Roots`] (sent as SNI). Default: the server's IP
    /// address.
    pub server_name: Option<String>,
    /// Client: the certificate and key presented when a server asks for
    /// one (a self-signed [`ServerIdentity`] is the usual kind: its
    /// fingerprint names the client). `None`: the client answers a request
    /// with no certificate, and the handshake goes on.
    pub client_identity: Option<ServerIdentity>,
    /// Server: ask every client for a certificate, and accept any one
    /// whose key signed the handshake, without requiring one. Off by
    /// default: the server's first flight then carries no
    /// CertificateRequest.
    pub request_client_certificate: bool,
    /// Where the TLS secrets of every handshake go, in the NSS key log
    /// format (rustls's `KeyLog`: `rustls::KeyLogFile` writes the file
    /// `SSLKEYLOGFILE` names), so that a capture can be decrypted. `None`
    /// (the default): the secrets never leave the connection.
    pub key_log: Option<Arc<dyn rustls::KeyLog>>,
    /// The TLS 1.3 cipher suites offered (client) or accepted (server),
    /// most preferred first. Empty (the default): all three, AES-128-GCM
    /// first. Initial packets use AES-128-GCM whatever this says (RFC 9001
    /// §5.2); a client offering only ChaCha20 tests a peer's other path
    /// (the interop runner's `chacha20` case).
    pub cipher_suites: Vec<super::Aead>,
    /// Client: where session tickets are kept, to resume later handshakes
    /// with the same server (name, port and QUIC version). `None` (the
    /// default): every handshake is a full one.
    pub tickets: Option<TicketStore>,
    /// Client: send 0-RTT data when a ticket allows it (only on streams
    /// the application marks replay-safe). On by default; without
    /// `tickets` there is nothing to send it with.
    pub early_data: bool,
    /// Server: issue session tickets backed by this cache, and accept
    /// 0-RTT if the cache says so. `None` (the default): no tickets.
    pub session_cache: Option<SessionCache>,
}

impl Default for TlsConfig {
    fn default() -> Self {
        Self {
            alpn_protocols: vec![DEFAULT_ALPN.to_vec()],
            identity: None,
            trust: None,
            server_name: None,
            client_identity: None,
            request_client_certificate: false,
            key_log: None,
            cipher_suites: Vec::new(),
            tickets: None,
            early_data: true,
            session_cache: None,
        }
    }
}

impl TlsConfig {
    /// A server presenting `identity`.
    pub fn server(identity: ServerIdentity) -> Self {
        Self {
            identity: Some(identity),
            ..Self::default()
        }
    }

    /// A client trusting servers by `trust`.
    pub fn client(trust: ServerTrust) -> Self {
        Self {
            trust: Some(trust),
            ..Self::default()
        }
    }

    /// Both at once: presents `identity` and trusts exactly it (pinned).
    /// For tests, demos and programs that talk to themselves.
    pub fn loopback(identity: ServerIdentity) -> Self {
        Self {
            trust: Some(ServerTrust::Pinned(vec![identity.fingerprint()])),
            identity: Some(identity),
            ..Self::default()
        }
    }
}

/// Why a TLS session could not be set up from the configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlsSetupError {
    #[error(
        "a TLS server needs an identity (a certificate chain and key): set Config::tls.identity"
    )]
    NoIdentity,
    #[error("a TLS client needs a way to trust the server: set Config::tls.trust (pinned fingerprints, root certificates or a verifier)")]
    NoTrust,
    #[error("invalid server name {0:?}")]
    BadServerName(String),
    #[error("TLS configuration: {0}")]
    Rustls(String),
}

/// The ring provider, built once per process, with the TLS 1.3 suites in
/// the order quinn uses for QUIC: AES-128-GCM first (the Initial suite, and
/// the cheapest per packet where AES is in hardware), then AES-256-GCM, then
/// ChaCha20-Poly1305.
pub(super) fn provider() -> Arc<CryptoProvider> {
    static PROVIDER: OnceLock<Arc<CryptoProvider>> = OnceLock::new();
    PROVIDER
        .get_or_init(|| {
            use rustls::crypto::ring::cipher_suite as suites;
            Arc::new(CryptoProvider {
                cipher_suites: vec![
                    suites::TLS13_AES_128_GCM_SHA256,
                    suites::TLS13_AES_256_GCM_SHA384,
                    suites::TLS13_CHACHA20_POLY1305_SHA256,
                ],
                ..rustls::crypto::ring::default_provider()
            })
        })
        .clone()
}

/// The provider with only `suites`, in their order; all of [`provider`]'s
/// when `suites` is empty.
fn provider_with(suites: &[super::Aead]) -> Arc<CryptoProvider> {
    if suites.is_empty() {
        return provider();
    }
    Arc::new(CryptoProvider {
        cipher_suites: suites.iter().map(|aead| aead.suite()).collect(),
        ..rustls::crypto::ring::default_provider()
    })
}

fn rustls_error(error: rustls::Error) -> TlsSetupError {
    TlsSetupError::Rustls(error.to_string())
}

/// The rustls client configuration for `config`; with `tickets`, it
/// resumes from and files tickets into that connection's store.
pub(super) fn client_config(
    config: &TlsConfig,
    tickets: Option<ConnectionTickets>,
) -> Result<rustls::ClientConfig, TlsSetupError> {
    let builder = rustls::ClientConfig::builder_with_provider(provider_with(&config.cipher_suites))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(rustls_error)?;
    let trust = config.trust.as_ref().ok_or(TlsSetupError::NoTrust)?;
    let make_verifier = || -> Result<Arc<dyn ServerCertVerifier>, TlsSetupError> {
        Ok(match trust {
            ServerTrust::Roots(roots) => {
                let mut store = rustls::RootCertStore::empty();
                for root in roots {
                    store
                        .add(CertificateDer::from(root.clone()))
                        .map_err(rustls_error)?;
                }
                rustls::client::WebPkiServerVerifier::builder_with_provider(
                    Arc::new(store),
                    provider(),
                )
                .build()
                .map_err(|error| TlsSetupError::Rustls(error.to_string()))?
            }
            trust => Arc::new(Verifier {
                trust: trust.clone(),
                provider: provider(),
            }),
        })
    };
    let make_resolver = || -> Arc<dyn rustls::client::ResolvesClientCert> {
        match &config.client_identity {
            Some(identity) => Arc::new(rustls::sign::SingleCertAndKey::from(
                identity.certified_key(),
            )),
            None => Arc::new(NoClientCertificate),
        }
    };
    // rustls resumes a session only under the very verifier and client
    // certificate resolver that made it: the ticket store hands out one of
    // each per setting (`resumption`).
    let (verifier, resolver) = match &config.tickets {
        Some(store) if tickets.is_some() => (
            store.verifier(trust_key(trust), make_verifier)?,
            store.client_cert(
                config
                    .client_identity
                    .as_ref()
                    .map(ServerIdentity::fingerprint),
                make_resolver,
            ),
        ),
        _ => (make_verifier()?, make_resolver()),
    };
    let mut client = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_client_cert_resolver(resolver);
    client.alpn_protocols = config.alpn_protocols.clone();
    match tickets {
        Some(tickets) => {
            client.resumption = rustls::client::Resumption::store(Arc::new(tickets));
            client.enable_early_data = config.early_data;
        }
        // rustls's default in-memory cache, private to this one
        // connection's config: it never resumes anything.
        None => client.enable_early_data = false,
    }
    if let Some(key_log) = &config.key_log {
        client.key_log = key_log.clone();
    }
    Ok(client)
}

/// The key under which a ticket store keeps the verifier of `trust`.
fn trust_key(trust: &ServerTrust) -> TrustKey {
    match trust {
        ServerTrust::Pinned(pins) => TrustKey::Pinned(pins.clone()),
        ServerTrust::Roots(roots) => TrustKey::Roots(roots.clone()),
        ServerTrust::Custom(verifier) => {
            TrustKey::Custom(Arc::as_ptr(verifier) as *const () as usize)
        }
    }
}

/// A client with no certificate: answers a server's request with none.
#[derive(Debug)]
struct NoClientCertificate;

impl rustls::client::ResolvesClientCert for NoClientCertificate {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        _sigschemes: &[SignatureScheme],
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        None
    }

    fn has_certs(&self) -> bool {
        false
    }
}

/// The rustls server configuration for `config`.
/// The rustls configuration of a server session; `params` are the
/// transport parameters the session announces, to which the tickets it
/// issues and the ones it resumes are bound (`SessionCache::bound_to`).
pub(super) fn server_config(
    config: &TlsConfig,
    params: Option<&[u8]>,
) -> Result<rustls::ServerConfig, TlsSetupError> {
    let identity = config.identity.as_ref().ok_or(TlsSetupError::NoIdentity)?;
    let builder = rustls::ServerConfig::builder_with_provider(provider_with(&config.cipher_suites))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(rustls_error)?;
    let builder = if config.request_client_certificate {
        builder.with_client_cert_verifier(Arc::new(AnyClientCertificate {
            provider: provider(),
        }))
    } else {
        builder.with_no_client_auth()
    };
    let mut server =
        builder.with_cert_resolver(Arc::new(SingleCertificate(identity.certified_key())));
    server.alpn_protocols = config.alpn_protocols.clone();
    if let Some(key_log) = &config.key_log {
        server.key_log = key_log.clone();
    }
    match &config.session_cache {
        Some(cache) => {
            server.session_storage = match params {
                Some(params) => cache.bound_to(params),
                None => cache.storage(),
            };
            // RFC 9001 §4.6.1: QUIC allows 0 (no early data) or 0xffffffff;
            // flow control bounds 0-RTT, not TLS.
            server.max_early_data_size = if cache.early_data { u32::MAX } else { 0 };
        }
        None => {
            server.max_early_data_size = 0;
            server.send_tls13_tickets = 0;
        }
    }
    Ok(server)
}

/// The server name for a client session: the configured one, or the
/// server's IP address.
pub(super) fn server_name(
    config: &TlsConfig,
    remote: std::net::IpAddr,
) -> Result<ServerName<'static>, TlsSetupError> {
    match &config.server_name {
        Some(name) => ServerName::try_from(name.clone())
            .map_err(|_| TlsSetupError::BadServerName(name.clone())),
        None => Ok(ServerName::IpAddress(remote.into())),
    }
}

#[derive(Debug)]
struct SingleCertificate(Arc<rustls::sign::CertifiedKey>);

impl rustls::server::ResolvesServerCert for SingleCertificate {
    fn resolve(
        &self,
        _client_hello: rustls::server::ClientHello<'_>,
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        Some(self.0.clone())
    }
}

/// Pinned and custom trust as a rustls verifier: our check of the
/// certificate, the provider's check of the handshake signature.
#[derive(Debug)]
struct Verifier {
    trust: ServerTrust,
    provider: Arc<CryptoProvider>,
}

fn rejected(reason: String) -> rustls::Error {
    rustls::Error::InvalidCertificate(rustls::CertificateError::Other(rustls::OtherError(
        Arc::new(CertificateRejected(reason)),
    )))
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match &self.trust {
            ServerTrust::Pinned(pins) => {
                let presented = Fingerprint::of_certificate(end_entity.as_ref());
                if !pins.contains(&presented) {
                    return Err(rejected(format!(
                        "the server's certificate {presented} is not pinned"
                    )));
                }
            }
            ServerTrust::Custom(verifier) => {
                let intermediates: Vec<&[u8]> =
                    intermediates.iter().map(|cert| cert.as_ref()).collect();
                verifier
                    .verify(end_entity.as_ref(), &intermediates, &server_name.to_str())
                    .map_err(|error| rejected(error.0))?;
            }
            ServerTrust::Roots(_) => {
                return Err(rejected("root trust is checked by WebPKI".to_string()))
            }
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        tls12_refused()
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13(&self.provider, message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        verify_schemes(&self.provider)
    }
}

/// A client certificate is the client's name, not a claim a CA vouches
/// for: any certificate is accepted as long as its key signed the
/// handshake. Asked for, never required.
#[derive(Debug)]
struct AnyClientCertificate {
    provider: Arc<CryptoProvider>,
}

impl ClientCertVerifier for AnyClientCertificate {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        // No hints: the client sends whatever certificate it has.
        &[]
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        // The identity is the certificate's fingerprint, which the
        // application checks; possession of its key is proven by the
        // CertificateVerify signature below.
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        _message: &[u8],
        _cert: &CertificateDer<'_>,
        _dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        tls12_refused()
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        // RFC 8446 §4.4.3: the signature over the transcript, with the key
        // of the certificate presented. This is what makes a copied
        // certificate worthless without its key.
        verify_tls13(&self.provider, message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        verify_schemes(&self.provider)
    }
}

/// Both verifiers' answer to a TLS 1.2 signature: only TLS 1.3 is enabled
/// (QUIC requires it, RFC 9001 §4.2).
fn tls12_refused() -> Result<HandshakeSignatureValid, rustls::Error> {
    Err(rustls::Error::PeerIncompatible(
        rustls::PeerIncompatible::Tls12NotOffered,
    ))
}

/// Checks a TLS 1.3 CertificateVerify signature with `provider`'s algorithms.
fn verify_tls13(
    provider: &CryptoProvider,
    message: &[u8],
    cert: &CertificateDer<'_>,
    dss: &DigitallySignedStruct,
) -> Result<HandshakeSignatureValid, rustls::Error> {
    rustls::crypto::verify_tls13_signature(
        message,
        cert,
        dss,
        &provider.signature_verification_algorithms,
    )
}

/// The signature schemes `provider` verifies.
fn verify_schemes(provider: &CryptoProvider) -> Vec<SignatureScheme> {
    provider
        .signature_verification_algorithms
        .supported_schemes()
}
