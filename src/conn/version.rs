//! Which version a connection speaks: QUIC v1 with every QUIC peer, sift/1
//! with sift peers, reached by compatible version negotiation (RFC 9368)
//! without an extra round trip, and QUIC v2 (RFC 9369) when asked for.
//! DESIGN §3.1, `docs/versions.md` and `docs/sift1.md` §8 are the
//! specification; this module is its one implementation.
//!
//! - A client starts in its *original* version — QUIC v1 under TLS when it
//!   speaks v1 and does not prefer v2, else its first listed — and offers
//!   in its `version_information` transport parameter (0x11) those of its
//!   versions its first flight converts to (RFC 9368 §3). A sift server
//!   picks the first of its own versions the client lists and answers in
//!   it; a QUIC-only server ignores the parameter and the connection stays
//!   v1.
//! - A first flight converts only within a TLS key schedule a client can
//!   keep: rustls fixes a session's schedule when the session is made, so
//!   a client in v1 can move to sift/1 (the same schedule) but not to v2,
//!   and a client in v2 moves nowhere (`crypto::tls::same_key_schedule`).
//!   A server makes its session after it chose, so it can also move a v1
//!   client that offers v2 to v2.
//! - The client switches on the first packet of an offered version (RFC
//!   9368 §2.3) and then checks the server's `version_information`: its
//!   chosen version must be the one the packets came in, and a server that
//!   switched without saying so is refused (§4, downgrade protection).
//! - The server decides once the client's hello is whole, from the
//!   `version_information` in it, and checks that the client's chosen
//!   version is the one its first packets used.
//! - A client whose server answers with Version Negotiation listing a
//!   version it speaks starts over in the first of its own versions the
//!   server lists (RFC 9368 §2.1: incompatible negotiation), with a new
//!   TLS session (so ALPN is negotiated afresh, §6). It ignores any later
//!   Version Negotiation, and checks that the server's
//!   `version_information` would have led it to the same version (§4); a
//!   v1 server that sends none is taken to list v1 alone (§8).
//! - The format is chosen per packet only by a long header's version
//!   field, among those this connection accepts; `conn` never branches on
//!   a version to seal or open (the [`PacketFormat`] seam does that).

use crate::crypto::format::{for_version, PacketFormat, SIFT_V1};
use crate::crypto::tls::same_key_schedule;
use crate::wire::{VersionInformation, QUIC_V1, QUIC_V2, VERSION as SIFT_V1_VERSION};
use crate::Side;

/// RFC 9368 §4: VERSION_NEGOTIATION_ERROR.
pub const VERSION_NEGOTIATION_ERROR: u64 = 0x11;

/// The versions sift speaks: sift/1, QUIC v1 and QUIC v2.
pub const SUPPORTED_VERSIONS: [u32; 3] = [SIFT_V1_VERSION, QUIC_V1, QUIC_V2];

/// The versions a [`crate::Config`] lists unless told otherwise, most
/// preferred first: sift/1 then QUIC v1. QUIC v2 changes nothing a peer
/// would notice but the bytes (RFC 9369 §1: it exists to exercise version
/// negotiation and resist ossification), and no stack answers only v2, so
/// it is spoken when an operator lists it.
pub const DEFAULT_VERSIONS: [u32; 2] = [SIFT_V1_VERSION, QUIC_V1];

/// Whether `version` runs only under TLS: the QUIC versions do (Null
/// protection exists only between sift ends, in sift/1).
fn needs_tls(version: u32) -> bool {
    version != SIFT_V1_VERSION
}

/// Whether a server may move a connection that began in `from` to `to`
/// without a round trip (RFC 9368 §2.2): sift/1 and QUIC v1 convert into
/// each other (the same frames and TLS key schedule), and so do QUIC v1
/// and v2 (RFC 9369 §4: only the packet image and the key schedule differ;
/// the server picks its session's schedule after it chose).
pub fn compatible(from: u32, to: u32) -> bool {
    let pair = |a, b| (from == a && to == b) || (from == b && to == a);
    from == to && SUPPORTED_VERSIONS.contains(&from)
        || pair(QUIC_V1, SIFT_V1_VERSION)
        || pair(QUIC_V1, QUIC_V2)
}

/// The version a client starts in: QUIC v1 when it may use it (TLS, and
/// listed) and does not list v2 before it, so any QUIC server understands
/// its first flight; else its first listed version (Null protection exists
/// only between sift ends). A client that prefers v2 starts in it, because
/// it could not follow a server's upgrade from v1 to v2.
pub fn client_original(versions: &[u32], tls: bool) -> u32 {
    let first_quic = versions
        .iter()
        .copied()
        .find(|version| *version == QUIC_V1 || *version == QUIC_V2);
    match first_quic {
        Some(version) if tls => version,
        _ => versions
            .iter()
            .copied()
            .find(|version| tls || !needs_tls(*version))
            .or_else(|| versions.first().copied())
            .unwrap_or(SIFT_V1_VERSION),
    }
}

/// The version a client starts over in when the server's Version
/// Negotiation lists `offered` (RFC 9368 §2.1): the first of its own
/// `ours` the server offers. The QUIC versions need TLS (Null protection
/// runs only between sift ends, in sift/1). `None`: no version in common.
pub fn client_choice_from_negotiation(ours: &[u32], offered: &[u32], tls: bool) -> Option<u32> {
    ours.iter()
        .copied()
        .filter(|version| tls || !needs_tls(*version))
        .find(|version| offered.contains(version) && for_version(*version).is_some())
}

/// The version a server runs for a client whose first packets came in
/// `original`, listing `client` (absent from a QUIC-only client): the
/// first of `ours` the client lists and that `original` converts to.
pub fn server_choice(
    original: u32,
    client: Option<&VersionInformation>,
    ours: &[u32],
) -> Result<u32, String> {
    let Some(client) = client else {
        return Ok(original);
    };
    if client.chosen != original {
        return Err(format!(
            "the client's version_information chose {:#010x} but its packets are {:#010x}",
            client.chosen, original
        ));
    }
    Ok(ours
        .iter()
        .copied()
        .find(|version| client.available.contains(version) && compatible(original, *version))
        .unwrap_or(original))
}

/// A connection's versions.
#[derive(Debug)]
pub(super) struct Versions {
    side: Side,
    /// The format of what we send, and of short headers we receive.
    current: &'static dyn PacketFormat,
    /// The version the client's first packets used.
    original: u32,
    /// Client: versions it offered, which the server may answer in.
    /// Server: its own versions, in preference order.
    listed: Vec<u32>,
    /// The version is settled: the client saw the server's first packet,
    /// or the server decided.
    settled: bool,
    /// Client: this attempt answers a Version Negotiation (RFC 9368 §2.1);
    /// `tls` as the client runs.
    after_negotiation: Option<bool>,
    /// Client: the version whose TLS key schedule its session runs, fixed
    /// when the session was made: its original version's.
    session: u32,
}

impl Versions {
    /// A client's, starting in `original`, offering `listed`.
    pub fn client(original: u32, listed: &[u32]) -> Self {
        Self {
            side: Side::Client,
            current: for_version(original).unwrap_or(&SIFT_V1),
            original,
            listed: listed.to_vec(),
            settled: false,
            after_negotiation: None,
            session: original,
        }
    }

    /// Test fixture: a client whose TLS session runs `version`'s key
    /// schedule while its first flight goes out in its original version,
    /// as a TLS stack that can change schedule mid-handshake would let it
    /// (rustls cannot): it can then follow a server to `version`.
    #[cfg(test)]
    pub fn with_session_in(self, version: u32) -> Self {
        Self {
            session: version,
            ..self
        }
    }

    /// Client: whether it can follow a server from its original version
    /// to `version` (the server may move it, and its session already runs
    /// `version`'s key schedule).
    fn can_follow(&self, version: u32) -> bool {
        compatible(self.original, version) && same_key_schedule(self.session, version)
    }

    /// A client's that starts over in `version`, chosen from a Version
    /// Negotiation ([`client_choice_from_negotiation`]) among `listed`
    /// (`tls`: the client runs TLS, and could have chosen v1).
    pub fn client_after_negotiation(version: u32, listed: &[u32], tls: bool) -> Self {
        Self {
            after_negotiation: Some(tls),
            ..Self::client(version, listed)
        }
    }

    /// Client: this attempt answers a Version Negotiation.
    pub fn after_negotiation(&self) -> bool {
        self.after_negotiation.is_some()
    }

    /// A server's, speaking `listed`, waiting for the client's first packet.
    pub fn server(listed: &[u32]) -> Self {
        Self {
            side: Side::Server,
            current: listed
                .first()
                .and_then(|v| for_version(*v))
                .unwrap_or(&SIFT_V1),
            original: 0,
            listed: listed.to_vec(),
            settled: false,
            after_negotiation: None,
            session: 0,
        }
    }

    /// The format packets go out in.
    pub fn current(&self) -> &'static dyn PacketFormat {
        self.current
    }

    /// The version the client's first packets used.
    pub fn original(&self) -> u32 {
        self.original
    }

    /// The versions this end lists in its `version_information`: a
    /// server's own; a client's that its first flight in `chosen` converts
    /// to (RFC 9368 §3: "all the versions that this first flight is
    /// compatible with"), which leaves out those it could not follow.
    pub fn information(&self, chosen: u32) -> VersionInformation {
        let available = match self.side {
            Side::Server => self.listed.clone(),
            Side::Client => self
                .listed
                .iter()
                .copied()
                .filter(|version| *version == chosen || self.can_follow(*version))
                .collect(),
        };
        VersionInformation { chosen, available }
    }

    /// Server: the client's first packet came in `version`.
    pub fn on_first_client_packet(&mut self, version: u32) {
        if let Some(format) = for_version(version) {
            self.original = version;
            self.current = format;
        }
    }

    /// Server: runs `version` from now on.
    pub fn settle_on(&mut self, version: u32) {
        if let Some(format) = for_version(version) {
            self.current = format;
        }
        self.settled = true;
    }

    /// The format for a received long header of `version`, if this
    /// connection accepts it now; a client moves to an offered version on
    /// the server's first packet in it.
    pub fn format_for_long_header(&mut self, version: u32) -> Option<&'static dyn PacketFormat> {
        if version == self.current.version() {
            return Some(self.current);
        }
        let format = for_version(version)?;
        match self.side {
            // The server answers in one version; the first packet names it.
            Side::Client
                if !self.settled && self.listed.contains(&version) && self.can_follow(version) =>
            {
                tracing::debug!(
                    version = format_args!("{version:#010x}"),
                    "the server answered in another version we offered"
                );
                self.current = format;
                self.settled = true;
                Some(format)
            }
            // The client's Initials in its original version may still come
            // after we settled on another (RFC 9368 §2.3).
            Side::Server if version == self.original => Some(format),
            _ => None,
        }
    }

    /// Client: checks the server's `version_information` against the
    /// version its packets came in (RFC 9368 §4), and after a Version
    /// Negotiation that its available versions lead to the version this
    /// attempt chose (a forged Version Negotiation cannot force a
    /// downgrade).
    pub fn check_server(&mut self, server: Option<&VersionInformation>) -> Result<(), String> {
        let current = self.current.version();
        self.settled = true;
        if let Some(tls) = self.after_negotiation {
            // §8: a v1 server that knows nothing of version_information
            // is taken to list v1 alone.
            let v1_only = VersionInformation {
                chosen: QUIC_V1,
                available: vec![QUIC_V1],
            };
            let info = match server {
                Some(info) => info,
                None if current == QUIC_V1 => &v1_only,
                None => {
                    return Err(format!(
                        "the server answered our Version Negotiation retry in {current:#010x} without version_information"
                    ))
                }
            };
            let mut offered = info.available.clone();
            offered.push(info.chosen);
            let choice = client_choice_from_negotiation(&self.listed, &offered, tls);
            if info.available.is_empty() || choice != Some(self.original) {
                return Err(format!(
                    "the server's available versions {:x?} would not have led to {:#010x}: a forged Version Negotiation",
                    info.available, self.original
                ));
            }
        }
        match server {
            Some(info) if info.chosen != current => Err(format!(
                "the server's version_information chose {:#010x} but its packets are {:#010x}",
                info.chosen, current
            )),
            None if current != self.original => Err(format!(
                "the server answered in {current:#010x} without version_information"
            )),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offer(chosen: u32, available: &[u32]) -> VersionInformation {
        VersionInformation {
            chosen,
            available: available.to_vec(),
        }
    }

    #[test]
    fn a_sift_server_upgrades_a_client_that_offers_sift() {
        let ours = DEFAULT_VERSIONS;
        let client = offer(QUIC_V1, &[SIFT_V1_VERSION, QUIC_V1]);
        assert_eq!(
            server_choice(QUIC_V1, Some(&client), &ours),
            Ok(SIFT_V1_VERSION)
        );
        // A server restricted to v1, or a client that offers only v1, stays.
        assert_eq!(
            server_choice(QUIC_V1, Some(&client), &[QUIC_V1]),
            Ok(QUIC_V1)
        );
        let plain = offer(QUIC_V1, &[QUIC_V1]);
        assert_eq!(server_choice(QUIC_V1, Some(&plain), &ours), Ok(QUIC_V1));
        // A QUIC-only client sends no version_information.
        assert_eq!(server_choice(QUIC_V1, None, &ours), Ok(QUIC_V1));
    }

    #[test]
    fn a_client_whose_chosen_version_is_not_its_packets_is_refused() {
        let client = offer(SIFT_V1_VERSION, &[SIFT_V1_VERSION, QUIC_V1]);
        assert!(server_choice(QUIC_V1, Some(&client), &DEFAULT_VERSIONS).is_err());
    }

    #[test]
    fn a_client_moves_once_and_only_to_an_offered_version() {
        let mut versions = Versions::client(QUIC_V1, &[SIFT_V1_VERSION, QUIC_V1]);
        assert_eq!(versions.current().version(), QUIC_V1);
        assert!(versions.format_for_long_header(0x0a0a_0a0a).is_none());
        let format = versions.format_for_long_header(SIFT_V1_VERSION).unwrap();
        assert_eq!(format.version(), SIFT_V1_VERSION);
        assert_eq!(versions.current().version(), SIFT_V1_VERSION);
        // Settled: v1 packets are no longer this connection's.
        assert!(versions.format_for_long_header(QUIC_V1).is_none());
        assert!(versions
            .check_server(Some(&offer(SIFT_V1_VERSION, &DEFAULT_VERSIONS)))
            .is_ok());
    }

    #[test]
    fn downgrades_and_silent_switches_fail_the_client_check() {
        // The server's packets were sift/1 but it claims v1.
        let mut versions = Versions::client(QUIC_V1, &DEFAULT_VERSIONS);
        versions.format_for_long_header(SIFT_V1_VERSION);
        assert!(versions
            .check_server(Some(&offer(QUIC_V1, &DEFAULT_VERSIONS)))
            .is_err());
        // Switched without saying so.
        let mut versions = Versions::client(QUIC_V1, &DEFAULT_VERSIONS);
        versions.format_for_long_header(SIFT_V1_VERSION);
        assert!(versions.check_server(None).is_err());
        // A QUIC-only server that stayed in v1 says nothing: fine.
        let mut versions = Versions::client(QUIC_V1, &DEFAULT_VERSIONS);
        assert!(versions.check_server(None).is_ok());
    }

    #[test]
    fn compatibility_is_assumed_only_where_a_document_says_so() {
        // RFC 9368 §2.2: only what a document says is compatible: sift/1
        // with v1 (docs/sift1.md §8), v1 with v2 (RFC 9369 §4).
        assert!(compatible(QUIC_V1, SIFT_V1_VERSION) && compatible(SIFT_V1_VERSION, QUIC_V1));
        assert!(compatible(QUIC_V1, QUIC_V2) && compatible(QUIC_V2, QUIC_V1));
        assert!(!compatible(QUIC_V2, SIFT_V1_VERSION) && !compatible(SIFT_V1_VERSION, QUIC_V2));
        let unknown = 0x1a2a_3a4a;
        assert!(!compatible(QUIC_V1, unknown) && !compatible(unknown, unknown));
        let client = offer(QUIC_V2, &[QUIC_V2, SIFT_V1_VERSION]);
        assert_eq!(
            server_choice(QUIC_V2, Some(&client), &SUPPORTED_VERSIONS),
            Ok(QUIC_V2),
            "v2 never converts to sift/1"
        );
    }

    #[test]
    fn a_server_preferring_v2_upgrades_a_v1_client_that_offers_it() {
        let client = offer(QUIC_V1, &[QUIC_V1, QUIC_V2]);
        assert_eq!(
            server_choice(QUIC_V1, Some(&client), &[QUIC_V2, QUIC_V1]),
            Ok(QUIC_V2)
        );
        // A server that prefers v1 keeps it there.
        assert_eq!(
            server_choice(QUIC_V1, Some(&client), &[QUIC_V1, QUIC_V2]),
            Ok(QUIC_V1)
        );
    }

    #[test]
    fn a_client_offers_only_versions_its_tls_session_can_follow() {
        // rustls fixes a session's key schedule when it is made: a client
        // in v1 can follow a server to sift/1 but not to v2, and one in
        // v2 can follow nowhere. RFC 9368 §3: it offers only those.
        let listed = [QUIC_V2, SIFT_V1_VERSION, QUIC_V1];
        let from_v1 = Versions::client(QUIC_V1, &listed);
        assert_eq!(
            from_v1.information(QUIC_V1).available,
            [SIFT_V1_VERSION, QUIC_V1]
        );
        let from_v2 = Versions::client(QUIC_V2, &listed);
        assert_eq!(from_v2.information(QUIC_V2).available, [QUIC_V2]);
        // A server answering in v2 anyway is not followed.
        let mut versions = Versions::client(QUIC_V1, &listed);
        assert!(versions.format_for_long_header(QUIC_V2).is_none());
        assert_eq!(versions.current().version(), QUIC_V1);
    }

    #[test]
    fn a_client_that_prefers_v2_starts_in_it() {
        assert_eq!(client_original(&[QUIC_V2], true), QUIC_V2);
        assert_eq!(client_original(&[QUIC_V2, QUIC_V1], true), QUIC_V2);
        assert_eq!(
            client_original(&[SIFT_V1_VERSION, QUIC_V2, QUIC_V1], true),
            QUIC_V2
        );
        assert_eq!(client_original(&[QUIC_V1, QUIC_V2], true), QUIC_V1);
        // Null protection runs only in sift/1.
        assert_eq!(
            client_original(&[QUIC_V2, SIFT_V1_VERSION], false),
            SIFT_V1_VERSION
        );
        assert_eq!(
            client_choice_from_negotiation(&[QUIC_V2, SIFT_V1_VERSION], &[QUIC_V2], false),
            None
        );
    }

    #[test]
    fn a_server_choosing_a_version_the_client_did_not_offer_is_refused() {
        // A client that offers v1 alone never moves to sift/1...
        let mut versions = Versions::client(QUIC_V1, &[QUIC_V1]);
        assert!(versions.format_for_long_header(SIFT_V1_VERSION).is_none());
        // ...and a server that claims to have chosen it is refused.
        assert!(versions
            .check_server(Some(&offer(SIFT_V1_VERSION, &DEFAULT_VERSIONS)))
            .is_err());
    }

    #[test]
    fn a_client_starts_over_in_the_first_of_its_versions_the_server_lists() {
        let reserved = 0x1a2a_3a4a;
        let choose =
            |ours: &[u32], offered: &[u32], tls| client_choice_from_negotiation(ours, offered, tls);
        assert_eq!(
            choose(&DEFAULT_VERSIONS, &[QUIC_V1, SIFT_V1_VERSION], true),
            Some(SIFT_V1_VERSION),
            "our preference, not the server's"
        );
        assert_eq!(
            choose(&DEFAULT_VERSIONS, &[QUIC_V1, reserved], true),
            Some(QUIC_V1)
        );
        // Null protection runs sift/1 only.
        assert_eq!(choose(&DEFAULT_VERSIONS, &[QUIC_V1], false), None);
        assert_eq!(choose(&DEFAULT_VERSIONS, &[reserved], true), None);
    }

    #[test]
    fn after_version_negotiation_a_server_without_version_information_is_refused_unless_v1() {
        let mut versions =
            Versions::client_after_negotiation(SIFT_V1_VERSION, &DEFAULT_VERSIONS, true);
        assert!(versions.after_negotiation());
        assert!(versions.check_server(None).is_err());
        // RFC 9368 §8: a v1 server that knows nothing of it lists v1 alone,
        // which leads a client offering v1 back to v1.
        let mut versions = Versions::client_after_negotiation(QUIC_V1, &DEFAULT_VERSIONS, true);
        assert!(versions.check_server(None).is_ok());
    }

    #[test]
    fn after_version_negotiation_the_servers_available_versions_must_lead_to_the_same_choice() {
        // A Version Negotiation listing only v1 sent us back to v1; the
        // server's own list says it speaks sift/1, which we prefer: the
        // Version Negotiation was forged to downgrade us.
        let mut versions = Versions::client_after_negotiation(QUIC_V1, &DEFAULT_VERSIONS, true);
        assert!(versions
            .check_server(Some(&offer(QUIC_V1, &DEFAULT_VERSIONS)))
            .is_err());
        let mut versions = Versions::client_after_negotiation(QUIC_V1, &DEFAULT_VERSIONS, true);
        assert!(versions
            .check_server(Some(&offer(QUIC_V1, &[QUIC_V1])))
            .is_ok());
        // An empty list proves nothing.
        let mut versions = Versions::client_after_negotiation(QUIC_V1, &DEFAULT_VERSIONS, true);
        assert!(versions.check_server(Some(&offer(QUIC_V1, &[]))).is_err());
    }

    #[test]
    fn clients_start_in_v1_under_tls_and_in_their_first_version_otherwise() {
        assert_eq!(client_original(&DEFAULT_VERSIONS, true), QUIC_V1);
        assert_eq!(client_original(&DEFAULT_VERSIONS, false), SIFT_V1_VERSION);
        assert_eq!(client_original(&[SIFT_V1_VERSION], true), SIFT_V1_VERSION);
    }
}
