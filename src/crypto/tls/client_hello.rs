//! Reading a client's transport parameters out of its ClientHello before
//! the TLS session exists: a server must choose its version (RFC 9368) —
//! and so its own `version_information` — before rustls writes its
//! EncryptedExtensions, and rustls takes a server's parameters when the
//! session is made.
//!
//! Only as much of the ClientHello (RFC 8446 §4.1.2) is read as leads to
//! the `quic_transport_parameters` extension (RFC 9001 §8.2, type 0x39);
//! rustls parses and checks the whole message afterwards.

use crate::wire::{Reader, TransportParams};

/// TLS handshake message type of a ClientHello.
const CLIENT_HELLO: u8 = 1;
/// RFC 9001 §8.2: the quic_transport_parameters extension.
const QUIC_TRANSPORT_PARAMETERS: u16 = 0x39;

/// What the first handshake bytes say about the client's parameters.
#[derive(Debug, PartialEq, Eq)]
pub enum ClientHelloPeek {
    /// The ClientHello is not whole yet: wait for more CRYPTO data.
    Incomplete,
    /// The client's transport parameters, if they decode (rustls refuses a
    /// hello without them later). Boxed: the parameters are large beside
    /// the other variant, and a peek happens once per connection.
    Params(Option<Box<TransportParams>>),
    /// The hello carries a legacy_session_id: it asks for TLS 1.3's
    /// middlebox compatibility mode, which a QUIC client must not (RFC 9001
    /// §8.4; the server treats it as a PROTOCOL_VIOLATION).
    LegacySessionId,
}

/// Reads the transport parameters of the ClientHello at the start of
/// `crypto` (the Initial level's in-order CRYPTO bytes).
pub fn peek_client_hello(crypto: &[u8]) -> ClientHelloPeek {
    let Some(&[kind, a, b, c]) = crypto.get(..4) else {
        return ClientHelloPeek::Incomplete;
    };
    let len = usize::from(a) << 16 | usize::from(b) << 8 | usize::from(c);
    let Some(body) = crypto.get(4..4 + len) else {
        return ClientHelloPeek::Incomplete;
    };
    if kind != CLIENT_HELLO {
        return ClientHelloPeek::Params(None);
    }
    if legacy_session_id_len(body).is_some_and(|len| len > 0) {
        return ClientHelloPeek::LegacySessionId;
    }
    ClientHelloPeek::Params(
        extension(body, QUIC_TRANSPORT_PARAMETERS)
            .and_then(|raw| TransportParams::decode(raw).ok())
            .map(Box::new),
    )
}

/// The length of a ClientHello body's legacy_session_id.
fn legacy_session_id_len(body: &[u8]) -> Option<usize> {
    let mut reader = Reader::new(body);
    reader.bytes(2 + 32).ok()?; // legacy_version, random
    Some(usize::from(reader.u8().ok()?))
}

/// The body of extension `wanted` in a ClientHello body.
fn extension(body: &[u8], wanted: u16) -> Option<&[u8]> {
    let mut reader = Reader::new(body);
    reader.bytes(2 + 32).ok()?; // legacy_version, random
    let session_id = usize::from(reader.u8().ok()?);
    reader.bytes(session_id).ok()?;
    let suites = usize::from(reader.u16().ok()?);
    reader.bytes(suites).ok()?;
    let compression = usize::from(reader.u8().ok()?);
    reader.bytes(compression).ok()?;
    let extensions_len = usize::from(reader.u16().ok()?);
    let mut extensions = Reader::new(reader.bytes(extensions_len).ok()?);
    while !extensions.is_empty() {
        let kind = extensions.u16().ok()?;
        let len = usize::from(extensions.u16().ok()?);
        let data = extensions.bytes(len).ok()?;
        if kind == wanted {
            return Some(data);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::session::Session;
    use crate::crypto::tls::{process_loopback_config, TlsSession};
    use crate::wire::VersionInformation;

    #[test]
    fn the_parameters_of_a_rustls_client_hello_are_read() {
        let params = TransportParams {
            max_idle_timeout_ms: 1234,
            version_information: Some(VersionInformation {
                chosen: 1,
                available: vec![0x5346_0001, 1],
            }),
            ..TransportParams::default()
        };
        let mut encoded = Vec::new();
        params.encode(&mut encoded);
        let mut client = TlsSession::client(
            &process_loopback_config(),
            "127.0.0.1".parse().unwrap(),
            encoded,
        )
        .unwrap();
        let mut hello = Vec::new();
        client.write_handshake(&mut hello);
        assert_eq!(
            peek_client_hello(&hello),
            ClientHelloPeek::Params(Some(Box::new(params)))
        );
        for cut in [0, 3, 4, hello.len() - 1] {
            assert_eq!(
                peek_client_hello(&hello[..cut]),
                ClientHelloPeek::Incomplete,
                "{cut}"
            );
        }
        // Garbage of the right length yields no parameters, and never
        // panics (all-ones claims a legacy_session_id).
        let mut junk = hello.clone();
        junk[4..].fill(0xff);
        assert_eq!(peek_client_hello(&junk), ClientHelloPeek::LegacySessionId);
        junk[4..].fill(0);
        assert_eq!(peek_client_hello(&junk), ClientHelloPeek::Params(None));
    }
}
