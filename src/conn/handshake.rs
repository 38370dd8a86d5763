//! The handshake as the connection sees it: CRYPTO streams per level
//! (offsets, reassembly, retransmission) around a [`Session`] — Null or
//! TLS 1.3, chosen by `Config::protection` — which turns the bytes into
//! transport parameters and keys.
//!
//! Levels follow rustls's QUIC API: bytes the session writes belong to its
//! current write level until it returns a key change. A level's received
//! bytes go to the session in order, and only once the handshake has reached
//! that level (RFC 9001 §4.1.3): earlier bytes wait, new bytes at a level the
//! handshake has left close the connection.
//!
//! A server makes its session on the client's first CRYPTO bytes, when its
//! transport parameters can name the client's original destination ID.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;

use super::{Config, Protection};
use crate::crypto::tls::TlsSetupError;
use crate::crypto::{
    Fingerprint, HandshakeError, KeyChange, Level, NullSession, PacketProtection, Session,
    TlsConfig, TlsSession,
};
use crate::wire::TransportParams;
use crate::Side;

/// Out-of-order CRYPTO data buffered per level, at most: how far past the
/// next byte it may reach, and how many bytes the fragments held may
/// take together (RFC 9000 §7.5 requires at least 4096).
const MAX_CRYPTO_BUFFER: u64 = 64 * 1024;
/// RFC 8446 §6: internal_error.
const ALERT_INTERNAL_ERROR: u8 = 80;

/// Outgoing CRYPTO bytes of one level.
#[derive(Debug, Default)]
struct CryptoSend {
    next_offset: u64,
    pending: VecDeque<(u64, Vec<u8>)>,
}

/// Incoming CRYPTO bytes of one level, reassembled in order.
#[derive(Debug, Default)]
struct CryptoRecv {
    read_offset: u64,
    segments: BTreeMap<u64, Vec<u8>>,
    /// Bytes held in `segments` (overlaps counted twice): with
    /// `assembled`, at most [`MAX_CRYPTO_BUFFER`], however the peer splits
    /// its data.
    held: u64,
    /// In-order bytes not yet handed to the session.
    assembled: Vec<u8>,
}

impl CryptoRecv {
    /// Stores `data`; returns whether any of it was new.
    fn insert(&mut self, offset: u64, data: &[u8], level: Level) -> Result<bool, HandshakeError> {
        let end = offset.saturating_add(data.len() as u64);
        if end <= self.read_offset {
            return Ok(false); // a retransmission of what we have
        }
        // The buffer starts at the first byte the session has not taken:
        // in-order bytes waiting for it (a server peeks at the whole
        // ClientHello before it makes its session; early bytes of a
        // later level wait for it) count too.
        let unread = self.assembled.len() as u64;
        if end > self.read_offset - unread + MAX_CRYPTO_BUFFER {
            return Err(HandshakeError::BufferExceeded(level));
        }
        // A copy no longer than what is held at its offset adds nothing,
        // and must not replace it: the bytes it lacks may never come again.
        let replaced = self
            .segments
            .get(&offset)
            .map_or(0, |held| held.len() as u64);
        if replaced >= data.len() as u64 {
            return Ok(false);
        }
        let held = self.held - replaced + data.len() as u64;
        if unread + held > MAX_CRYPTO_BUFFER {
            return Err(HandshakeError::BufferExceeded(level));
        }
        self.held = held;
        self.segments.insert(offset, data.to_vec());
        // Move whatever is now contiguous into `assembled`.
        while let Some((&start, _)) = self.segments.first_key_value() {
            if start > self.read_offset {
                break;
            }
            let Some((start, bytes)) = self.segments.pop_first() else {
                break;
            };
            self.held -= bytes.len() as u64;
            let skip = (self.read_offset - start) as usize;
            if skip < bytes.len() {
                self.assembled.extend_from_slice(&bytes[skip..]);
                self.read_offset += (bytes.len() - skip) as u64;
            }
        }
        Ok(true)
    }
}

/// What the connection must do after feeding the handshake CRYPTO data.
#[derive(Debug, Default)]
pub struct Progress {
    /// Handshake-level keys, when they became available.
    pub handshake_keys: Option<Box<dyn PacketProtection>>,
    /// 1-RTT keys (key phase 0), when they became available.
    pub one_rtt_keys: Option<Box<dyn PacketProtection>>,
    /// The peer's transport parameters became available.
    pub peer_params: bool,
    /// The handshake completed.
    pub complete: bool,
    /// Server: the version chosen for the client (RFC 9368), once its
    /// hello was whole.
    pub negotiated_version: Option<u32>,
    /// Server: 0-RTT keys, when it accepted the client's early data.
    pub zero_rtt_keys: Option<Box<dyn PacketProtection>>,
}

/// How to make the session, kept until the server makes it.
#[derive(Debug)]
struct SessionRecipe {
    protection: Protection,
    tls: TlsConfig,
    remote: SocketAddr,
    /// Client: the version it starts in (its tickets are scoped to it).
    /// Server: the version it chose. The TLS session takes that
    /// version's key schedule (`crypto::tls`).
    version: u32,
}

impl SessionRecipe {
    fn make(
        &self,
        side: Side,
        params: &TransportParams,
    ) -> Result<Box<dyn Session>, TlsSetupError> {
        let mut encoded = Vec::new();
        params.encode(&mut encoded);
        Ok(match (self.protection, side) {
            (Protection::Null, _) => Box::new(NullSession::new(side, encoded)),
            (Protection::Tls, Side::Client) => Box::new(TlsSession::client_in_version(
                &self.tls,
                self.remote,
                self.version,
                encoded,
            )?),
            (Protection::Tls, Side::Server) => Box::new(TlsSession::server_in_version(
                &self.tls,
                self.version,
                encoded,
            )?),
        })
    }
}

/// The connection's handshake.
#[derive(Debug)]
pub struct Handshake {
    side: Side,
    recipe: SessionRecipe,
    session: Option<Box<dyn Session>>,
    local_params: TransportParams,
    peer_params: Option<TransportParams>,
    send: [CryptoSend; 3],
    recv: [CryptoRecv; 3],
    write_level: Level,
    complete: bool,
    /// Server: the versions it speaks, and the one the client's first
    /// packets used (set before its first CRYPTO bytes arrive).
    server_versions: Vec<u32>,
    client_original_version: u32,
    /// Bytes of the Handshake level reached the session: a TLS client's
    /// peer parameters (in EncryptedExtensions) are the server's only
    /// from then on; before, rustls reports those remembered with a ticket.
    read_handshake_level: bool,
    /// Server: the 0-RTT keys were handed out (or there are none).
    zero_rtt_checked: bool,
}

impl Handshake {
    /// A client makes its session (and hello) at once, starting in
    /// `version`; a server makes it on the client's hello
    /// (`Config::validate` has checked it can).
    pub fn new(
        side: Side,
        config: &Config,
        remote: SocketAddr,
        version: u32,
        local_params: TransportParams,
    ) -> Result<Self, TlsSetupError> {
        let recipe = SessionRecipe {
            protection: config.protection,
            tls: config.tls.clone(),
            remote,
            version,
        };
        let mut handshake = Self {
            side,
            recipe,
            session: None,
            local_params,
            peer_params: None,
            send: Default::default(),
            recv: Default::default(),
            write_level: Level::Initial,
            complete: false,
            server_versions: config.versions.clone(),
            client_original_version: 0,
            read_handshake_level: false,
            zero_rtt_checked: false,
        };
        if side == Side::Client {
            handshake.session = Some(handshake.recipe.make(side, &handshake.local_params)?);
            // The hello: never a key change before the server answers.
            handshake.drive_writes();
        }
        Ok(handshake)
    }

    /// Moves everything the session has to say into the send queues;
    /// returns the keys that came with it.
    fn drive_writes(&mut self) -> Progress {
        let mut progress = Progress::default();
        let Some(session) = self.session.as_mut() else {
            return progress;
        };
        loop {
            let mut bytes = Vec::new();
            let change = session.write_handshake(&mut bytes);
            if !bytes.is_empty() {
                let send = &mut self.send[self.write_level.index()];
                let len = bytes.len() as u64;
                send.pending.push_back((send.next_offset, bytes));
                send.next_offset += len;
            }
            match change {
                None => return progress,
                Some(KeyChange::Handshake(keys)) => {
                    progress.handshake_keys = Some(keys);
                    self.write_level = Level::Handshake;
                }
                Some(KeyChange::OneRtt(keys)) => {
                    progress.one_rtt_keys = Some(keys);
                    self.write_level = Level::OneRtt;
                }
            }
        }
    }

    /// The level whose bytes the session expects next.
    fn read_level(&self) -> Level {
        match &self.session {
            _ if self.write_level == Level::Initial => Level::Initial,
            Some(session) if !session.is_handshaking() => Level::OneRtt,
            _ => Level::Handshake,
        }
    }

    /// The peer's transport parameters, once received.
    pub fn peer_params(&self) -> Option<&TransportParams> {
        self.peer_params.as_ref()
    }

    /// Tests: the peer's parameters as if its handshake message had
    /// arrived.
    #[cfg(test)]
    pub(super) fn set_peer_params(&mut self, params: TransportParams) {
        self.peer_params = Some(params);
    }

    /// Our own parameters (the server fills in connection IDs late).
    pub fn local_params_mut(&mut self) -> &mut TransportParams {
        &mut self.local_params
    }

    /// Server: the client's first packets came in `version`.
    pub fn set_client_original_version(&mut self, version: u32) {
        self.client_original_version = version;
    }

    /// Server, on the client's first CRYPTO bytes: chooses the version from
    /// the `version_information` in its hello (`conn::version`), and
    /// announces it in our own. `Ok(None)`: the hello is not whole yet.
    fn choose_server_version(&mut self) -> Result<Option<u32>, HandshakeError> {
        let hello = &self.recv[Level::Initial.index()].assembled;
        let client_params = match self.recipe.protection {
            Protection::Tls => match crate::crypto::tls::peek_client_hello(hello) {
                crate::crypto::tls::ClientHelloPeek::Incomplete => return Ok(None),
                crate::crypto::tls::ClientHelloPeek::Params(params) => params,
                crate::crypto::tls::ClientHelloPeek::LegacySessionId => {
                    return Err(HandshakeError::ProtocolViolation(
                        "the ClientHello asks for TLS middlebox compatibility mode (RFC 9001 §8.4)"
                            .to_string(),
                    ))
                }
            },
            // Null clients start in the version they mean to run.
            Protection::Null => None,
        };
        let info = client_params
            .as_ref()
            .and_then(|params| params.version_information.as_ref());
        if info.is_some_and(|info| !info.available.contains(&info.chosen)) {
            // RFC 9368 §4: a parse failure, as malformed parameters are.
            return Err(HandshakeError::TransportParameters(
                crate::wire::WireError::MalformedTransportParameter {
                    // version_information (RFC 9368 §3).
                    id: 0x11,
                    reason: "version_information does not list its chosen version",
                },
            ));
        }
        let original = self.client_original_version;
        let chosen = super::version::server_choice(
            original,
            client_params
                .as_ref()
                .and_then(|params| params.version_information.as_ref()),
            &self.server_versions,
        )
        .map_err(HandshakeError::VersionNegotiation)?;
        if chosen != 0 {
            self.local_params.version_information = Some(crate::wire::VersionInformation {
                chosen,
                available: self.server_versions.clone(),
            });
        }
        Ok(Some(chosen))
    }

    /// The handshake has completed.
    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// The ALPN protocol both sides agreed on (TLS).
    pub fn alpn_protocol(&self) -> Option<&[u8]> {
        self.session.as_ref()?.alpn_protocol()
    }

    /// The AEAD the TLS handshake settled on.
    pub fn cipher_suite(&self) -> Option<crate::crypto::Aead> {
        self.session.as_ref()?.cipher_suite()
    }

    /// SHA-256 of the server's certificate, on a TLS client.
    pub fn peer_certificate_fingerprint(&self) -> Option<Fingerprint> {
        self.session.as_ref()?.peer_certificate_fingerprint()
    }

    /// Client: the 0-RTT keys of the ticket it resumes with, if it allows
    /// early data.
    pub fn zero_rtt_keys(&self) -> Option<Box<dyn PacketProtection>> {
        self.session.as_ref()?.zero_rtt_keys()
    }

    /// Client: the server's parameters remembered with the ticket.
    pub fn remembered_params(&self) -> Option<TransportParams> {
        self.session.as_ref()?.remembered_params()
    }

    /// The server accepted the client's early data.
    pub fn early_data_accepted(&self) -> bool {
        self.session
            .as_ref()
            .is_some_and(|session| session.early_data_accepted())
    }

    /// The handshake resumed an earlier session.
    pub fn is_resumed(&self) -> bool {
        self.session
            .as_ref()
            .is_some_and(|session| session.is_resumed())
    }

    /// The connection settled on `version`: tickets are filed under it.
    pub fn set_version(&mut self, version: u32) {
        if let Some(session) = self.session.as_mut() {
            session.set_version(version);
        }
    }

    /// The 1-RTT keys of the next key phase (TLS only).
    pub fn next_one_rtt_keys(&mut self) -> Option<Box<dyn PacketProtection>> {
        self.session.as_mut()?.next_one_rtt_keys()
    }

    /// CRYPTO data waiting to be sent at `level`.
    pub fn has_pending(&self, level: Level) -> bool {
        !self.send[level.index()].pending.is_empty()
    }

    /// Takes up to `max_len` bytes of pending CRYPTO data at `level`.
    pub fn poll_crypto(&mut self, level: Level, max_len: usize) -> Option<(u64, Vec<u8>)> {
        if max_len == 0 {
            return None;
        }
        let send = &mut self.send[level.index()];
        let (offset, mut bytes) = send.pending.pop_front()?;
        if bytes.len() > max_len {
            let rest = bytes.split_off(max_len);
            send.pending.push_front((offset + max_len as u64, rest));
        }
        Some((offset, bytes))
    }

    /// CRYPTO data that was lost (or must be re-sent as a probe) goes back
    /// to the front of the queue.
    pub fn requeue(&mut self, level: Level, offset: u64, bytes: Vec<u8>) {
        let send = &mut self.send[level.index()];
        if !send
            .pending
            .iter()
            .any(|(o, b)| *o == offset && b.len() == bytes.len())
        {
            send.pending.push_front((offset, bytes));
        }
    }

    /// Feeds received CRYPTO data; runs the session on whatever is now in
    /// order at the level it expects.
    pub fn on_crypto(
        &mut self,
        level: Level,
        offset: u64,
        data: &[u8],
    ) -> Result<Progress, HandshakeError> {
        let fresh = self.recv[level.index()].insert(offset, data, level)?;
        if fresh && level < self.read_level() {
            return Err(HandshakeError::StaleLevel(level));
        }
        let mut negotiated_version = None;
        if self.session.is_none() && self.side == Side::Server {
            match self.choose_server_version()? {
                Some(version) => {
                    negotiated_version = Some(version);
                    self.recipe.version = version;
                }
                None => return Ok(Progress::default()),
            }
        }
        if self.session.is_none() {
            let session = self
                .recipe
                .make(self.side, &self.local_params)
                .map_err(|error| HandshakeError::Tls {
                    alert: ALERT_INTERNAL_ERROR,
                    reason: error.to_string(),
                })?;
            self.session = Some(session);
        }
        let mut progress = Progress {
            negotiated_version,
            ..Progress::default()
        };
        // Reading may open the next level, whose bytes may already wait.
        loop {
            let read_level = self.read_level();
            let pending = std::mem::take(&mut self.recv[read_level.index()].assembled);
            if pending.is_empty() {
                break;
            }
            if let Some(session) = self.session.as_mut() {
                session.read_handshake(read_level, &pending)?;
            }
            self.read_handshake_level |= read_level == Level::Handshake;
            let written = self.drive_writes();
            progress.handshake_keys = written.handshake_keys.or(progress.handshake_keys);
            progress.one_rtt_keys = written.one_rtt_keys.or(progress.one_rtt_keys);
        }
        // RFC 9001 §4.1.3: bytes of a level TLS has left, still waiting
        // behind a gap, will never be read: the peer sent past its flight.
        let read_level = self.read_level();
        if let Some(left) = Level::ALL
            .into_iter()
            .find(|level| *level < read_level && !self.recv[level.index()].segments.is_empty())
        {
            return Err(HandshakeError::LeftUnread(left));
        }
        if self.side == Side::Server && !self.zero_rtt_checked {
            if let Some(session) = &self.session {
                // Decided with the server's first flight, which reading
                // the whole hello wrote.
                if self.write_level != Level::Initial {
                    self.zero_rtt_checked = true;
                    progress.zero_rtt_keys = session.zero_rtt_keys();
                }
            }
        }
        let params_final = self.side == Side::Server
            || self.recipe.protection == Protection::Null
            || self.read_handshake_level;
        if self.peer_params.is_none() && params_final {
            if let Some(session) = &self.session {
                self.peer_params = session.peer_params()?;
                progress.peer_params = self.peer_params.is_some();
            }
        }
        if !self.complete && self.session.as_ref().is_some_and(|s| !s.is_handshaking()) {
            self.complete = true;
            progress.complete = true;
        }
        Ok(progress)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::{ServerIdentity, TlsConfig};
    use std::net::{IpAddr, Ipv4Addr};

    fn drain(handshake: &mut Handshake, level: Level) -> Vec<(u64, Vec<u8>)> {
        std::iter::from_fn(|| handshake.poll_crypto(level, 7)).collect()
    }

    fn pair(protection: Protection) -> (Handshake, Handshake) {
        let identity = ServerIdentity::self_signed(&["localhost"]).unwrap();
        let config = Config {
            protection,
            tls: TlsConfig::loopback(identity),
            ..Config::default()
        };
        let remote = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let remote = SocketAddr::new(remote, 4433);
        let version = crate::wire::QUIC_V1;
        let client = Handshake::new(
            Side::Client,
            &config,
            remote,
            version,
            TransportParams::default(),
        )
        .unwrap();
        let server = Handshake::new(
            Side::Server,
            &config,
            remote,
            version,
            TransportParams::default(),
        )
        .unwrap();
        (client, server)
    }

    /// Delivers everything `from` has queued at `level`, in 7-byte pieces,
    /// last piece first; returns the combined progress.
    fn deliver(from: &mut Handshake, to: &mut Handshake, level: Level) -> Progress {
        let mut pieces = drain(from, level);
        pieces.reverse();
        let mut total = Progress::default();
        for (offset, bytes) in pieces {
            let progress = to.on_crypto(level, offset, &bytes).unwrap();
            total.handshake_keys = progress.handshake_keys.or(total.handshake_keys);
            total.one_rtt_keys = progress.one_rtt_keys.or(total.one_rtt_keys);
            total.peer_params |= progress.peer_params;
            total.complete |= progress.complete;
        }
        total
    }

    #[test]
    fn both_modes_complete_with_reordered_fragments() {
        for protection in [Protection::Null, Protection::Tls] {
            let (mut client, mut server) = pair(protection);
            let at_server = deliver(&mut client, &mut server, Level::Initial);
            assert!(at_server.handshake_keys.is_some() && at_server.one_rtt_keys.is_some());
            assert!(at_server.peer_params && server.peer_params().is_some());
            let at_client = deliver(&mut server, &mut client, Level::Initial);
            assert!(at_client.handshake_keys.is_some(), "{protection:?}");
            let at_client = deliver(&mut server, &mut client, Level::Handshake);
            assert!(at_client.complete && at_client.one_rtt_keys.is_some());
            assert!(client.peer_params().is_some(), "{protection:?}");
            let at_server = deliver(&mut client, &mut server, Level::Handshake);
            assert!(at_server.complete && server.is_complete(), "{protection:?}");
        }
    }

    #[test]
    fn handshake_bytes_arriving_early_wait_for_their_level() {
        for protection in [Protection::Null, Protection::Tls] {
            let (mut client, mut server) = pair(protection);
            deliver(&mut client, &mut server, Level::Initial);
            // The server's Handshake flight reaches the client first.
            let early = deliver(&mut server, &mut client, Level::Handshake);
            assert!(!early.complete && early.handshake_keys.is_none());
            let later = deliver(&mut server, &mut client, Level::Initial);
            assert!(
                later.handshake_keys.is_some() && later.complete,
                "{protection:?}"
            );
        }
    }

    #[test]
    fn new_bytes_at_a_level_left_behind_are_an_error() {
        let (mut client, mut server) = pair(Protection::Tls);
        deliver(&mut client, &mut server, Level::Initial);
        let end = server.recv[Level::Initial.index()].read_offset;
        assert_eq!(
            server.on_crypto(Level::Initial, end, b"more").unwrap_err(),
            HandshakeError::StaleLevel(Level::Initial)
        );
        // RFC 9001 §4.1.3: closed as a protocol violation.
        assert_eq!(HandshakeError::StaleLevel(Level::Initial).error_code(), 0xa);
    }

    #[test]
    fn crypto_data_left_unread_when_the_handshake_moves_on_is_an_error() {
        // RFC 9001 §4.1.3: bytes of a level that TLS never consumed, once
        // it gave the keys of the next, are a protocol violation.
        let (mut client, mut server) = pair(Protection::Tls);
        deliver(&mut client, &mut server, Level::Initial);
        let flight = drain(&mut server, Level::Initial);
        let end = flight
            .iter()
            .map(|(offset, bytes)| offset + bytes.len() as u64)
            .max()
            .unwrap();
        // Past a gap after the ServerHello: buffered, never read.
        client
            .on_crypto(Level::Initial, end + 10, b"stray")
            .unwrap();
        let outcome = flight
            .into_iter()
            .map(|(offset, bytes)| client.on_crypto(Level::Initial, offset, &bytes))
            .find(Result::is_err)
            .expect("the handshake moved on past unread bytes");
        let error = outcome.unwrap_err();
        assert_eq!(error, HandshakeError::LeftUnread(Level::Initial));
        assert_eq!(error.error_code(), 0xa);
    }

    /// A client that starts in QUIC v1 sending `info` as its
    /// `version_information`, and a sift server that saw its first packets
    /// come in v1.
    fn pair_with_version_information(
        info: crate::wire::VersionInformation,
    ) -> (Handshake, Handshake) {
        let identity = ServerIdentity::self_signed(&["localhost"]).unwrap();
        let config = Config {
            tls: TlsConfig::loopback(identity),
            ..Config::default()
        };
        let remote = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 4433);
        let params = TransportParams {
            version_information: Some(info),
            ..TransportParams::default()
        };
        let v1 = crate::wire::QUIC_V1;
        let client = Handshake::new(Side::Client, &config, remote, v1, params).unwrap();
        let mut server = Handshake::new(
            Side::Server,
            &config,
            remote,
            v1,
            TransportParams::default(),
        )
        .unwrap();
        server.set_client_original_version(v1);
        (client, server)
    }

    /// The error the server's first CRYPTO data from `client` ends in.
    fn server_refusal(client: &mut Handshake, server: &mut Handshake) -> HandshakeError {
        drain(client, Level::Initial)
            .into_iter()
            .find_map(|(offset, bytes)| server.on_crypto(Level::Initial, offset, &bytes).err())
            .expect("the server accepted the hello")
    }

    #[test]
    fn a_client_hello_whose_chosen_version_is_not_its_packets_closes_with_version_negotiation_error(
    ) {
        // RFC 9368 §4: the client's packets are v1, its hello says sift/1.
        let sift = crate::wire::VERSION;
        let (mut client, mut server) =
            pair_with_version_information(crate::wire::VersionInformation {
                chosen: sift,
                available: vec![sift, crate::wire::QUIC_V1],
            });
        let error = server_refusal(&mut client, &mut server);
        assert!(
            matches!(error, HandshakeError::VersionNegotiation(_)),
            "{error:?}"
        );
        assert_eq!(error.error_code(), 0x11);
    }

    #[test]
    fn version_information_that_leaves_out_its_chosen_version_is_a_transport_parameter_error() {
        // RFC 9368 §4: a server treats it as a parse failure, which in
        // QUIC v1 closes with TRANSPORT_PARAMETER_ERROR.
        let v1 = crate::wire::QUIC_V1;
        let (mut client, mut server) =
            pair_with_version_information(crate::wire::VersionInformation {
                chosen: v1,
                available: vec![crate::wire::VERSION],
            });
        let error = server_refusal(&mut client, &mut server);
        assert_eq!(error.error_code(), 0x8, "{error:?}");
        // Listed, it is accepted.
        let (mut client, mut server) =
            pair_with_version_information(crate::wire::VersionInformation {
                chosen: v1,
                available: vec![crate::wire::VERSION, v1],
            });
        for (offset, bytes) in drain(&mut client, Level::Initial) {
            server.on_crypto(Level::Initial, offset, &bytes).unwrap();
        }
    }

    #[test]
    fn a_client_hello_with_a_legacy_session_id_is_a_protocol_violation() {
        // RFC 9001 §8.4: QUIC has no use for TLS 1.3's middlebox
        // compatibility mode.
        let (mut client, mut server) = pair(Protection::Tls);
        let mut hello: Vec<u8> = drain(&mut client, Level::Initial)
            .into_iter()
            .flat_map(|(_, bytes)| bytes)
            .collect();
        // legacy_session_id follows the type, length, version and random.
        let at = 4 + 2 + 32;
        assert_eq!(hello[at], 0, "sift's own hello asks for no compatibility");
        hello[at] = 32;
        hello.splice(at + 1..at + 1, [0x5e; 32]);
        let len = (hello.len() - 4) as u32;
        hello[1..4].copy_from_slice(&len.to_be_bytes()[1..]);
        let error = server.on_crypto(Level::Initial, 0, &hello).unwrap_err();
        assert!(
            matches!(error, HandshakeError::ProtocolViolation(_)),
            "{error:?}"
        );
        assert_eq!(error.error_code(), 0xa);
    }

    #[test]
    fn oversized_crypto_offset_is_refused() {
        let (_, mut server) = pair(Protection::Null);
        assert_eq!(
            server.on_crypto(Level::Initial, 1 << 40, b"x").unwrap_err(),
            HandshakeError::BufferExceeded(Level::Initial)
        );
    }
}
