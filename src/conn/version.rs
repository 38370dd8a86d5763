//! Which version a connection speaks: QUIC v1 with every QUIC peer, sift/1
//! with sift peers, reached by compatible version negotiation (RFC 9368)
//! without an extra round trip. DESIGN §3.1, `docs/versions.md` and
//! `docs/sift1.md` §8 are the specification; this module is its one
//! implementation.
//!
//! - A client starts in its *original* version — QUIC v1 under TLS when it
//!   speaks v1, else its first listed — and offers the others in its
//!   `version_information` transport parameter (0x11). A sift server picks
//!   the first of its own versions the client lists and answers in it; a
//!   QUIC-only server ignores the parameter and the connection stays v1.
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
use crate::wire::{VersionInformation, QUIC_V1, VERSION as SIFT_V1_VERSION};
use crate::Side;

/// RFC 9368 §4: VERSION_NEGOTIATION_ERROR.
pub const VERSION_NEGOTIATION_ERROR: u64 = 0x11;

/// The versions sift speaks, most preferred first: sift/1 then QUIC v1.
pub const SUPPORTED_VERSIONS: [u32; 2] = [SIFT_V1_VERSION, QUIC_V1];

/// Whether a connection that began in `from` may move to `to` without a
/// round trip: both versions share TLS's v1 key schedule and frames, so
/// the client's first flight converts as it is (RFC 9368 §2.2).
pub fn compatible(from: u32, to: u32) -> bool {
    SUPPORTED_VERSIONS.contains(&from) && SUPPORTED_VERSIONS.contains(&to)
}

/// The version a client starts in: QUIC v1 when it may use it (TLS, and
/// listed), so any QUIC server understands its first flight; else its
/// first listed version (Null protection exists only between sift ends).
pub fn client_original(versions: &[u32], tls: bool) -> u32 {
    if tls && versions.contains(&QUIC_V1) {
        QUIC_V1
    } else {
        versions.first().copied().unwrap_or(SIFT_V1_VERSION)
    }
}

/// The version a client starts over in when the server's Version
/// Negotiation lists `offered` (RFC 9368 §2.1): the first of its own
/// `ours` the server offers. QUIC v1 needs TLS (Null protection runs only
/// between sift ends, in sift/1). `None`: no version in common.
pub fn client_choice_from_negotiation(ours: &[u32], offered: &[u32], tls: bool) -> Option<u32> {
    ours.iter()
        .copied()
        .filter(|version| tls || *version != QUIC_V1)
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
        }
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

    /// The versions this end lists in its `version_information`.
    pub fn information(&self, chosen: u32) -> VersionInformation {
        VersionInformation {
            chosen,
            available: self.listed.clone(),
        }
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
            Side::Client if !self.settled && self.listed.contains(&version) => {
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
        let ours = SUPPORTED_VERSIONS;
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
        assert!(server_choice(QUIC_V1, Some(&client), &SUPPORTED_VERSIONS).is_err());
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
            .check_server(Some(&offer(SIFT_V1_VERSION, &SUPPORTED_VERSIONS)))
            .is_ok());
    }

    #[test]
    fn downgrades_and_silent_switches_fail_the_client_check() {
        // The server's packets were sift/1 but it claims v1.
        let mut versions = Versions::client(QUIC_V1, &SUPPORTED_VERSIONS);
        versions.format_for_long_header(SIFT_V1_VERSION);
        assert!(versions
            .check_server(Some(&offer(QUIC_V1, &SUPPORTED_VERSIONS)))
            .is_err());
        // Switched without saying so.
        let mut versions = Versions::client(QUIC_V1, &SUPPORTED_VERSIONS);
        versions.format_for_long_header(SIFT_V1_VERSION);
        assert!(versions.check_server(None).is_err());
        // A QUIC-only server that stayed in v1 says nothing: fine.
        let mut versions = Versions::client(QUIC_V1, &SUPPORTED_VERSIONS);
        assert!(versions.check_server(None).is_ok());
    }

    #[test]
    fn compatibility_is_assumed_only_between_sift1_and_v1() {
        // RFC 9368 §2.2: only what a document says is compatible.
        let quic_v2 = 0x6b33_43cf;
        assert!(compatible(QUIC_V1, SIFT_V1_VERSION) && compatible(SIFT_V1_VERSION, QUIC_V1));
        assert!(!compatible(QUIC_V1, quic_v2) && !compatible(quic_v2, SIFT_V1_VERSION));
        let client = offer(QUIC_V1, &[quic_v2, QUIC_V1]);
        assert_eq!(
            server_choice(QUIC_V1, Some(&client), &[quic_v2, QUIC_V1]),
            Ok(QUIC_V1)
        );
    }

    #[test]
    fn a_server_choosing_a_version_the_client_did_not_offer_is_refused() {
        // A client that offers v1 alone never moves to sift/1...
        let mut versions = Versions::client(QUIC_V1, &[QUIC_V1]);
        assert!(versions.format_for_long_header(SIFT_V1_VERSION).is_none());
        // ...and a server that claims to have chosen it is refused.
        assert!(versions
            .check_server(Some(&offer(SIFT_V1_VERSION, &SUPPORTED_VERSIONS)))
            .is_err());
    }

    #[test]
    fn a_client_starts_over_in_the_first_of_its_versions_the_server_lists() {
        let reserved = 0x1a2a_3a4a;
        let choose =
            |ours: &[u32], offered: &[u32], tls| client_choice_from_negotiation(ours, offered, tls);
        assert_eq!(
            choose(&SUPPORTED_VERSIONS, &[QUIC_V1, SIFT_V1_VERSION], true),
            Some(SIFT_V1_VERSION),
            "our preference, not the server's"
        );
        assert_eq!(
            choose(&SUPPORTED_VERSIONS, &[QUIC_V1, reserved], true),
            Some(QUIC_V1)
        );
        // Null protection runs sift/1 only.
        assert_eq!(choose(&SUPPORTED_VERSIONS, &[QUIC_V1], false), None);
        assert_eq!(choose(&SUPPORTED_VERSIONS, &[reserved], true), None);
    }

    #[test]
    fn after_version_negotiation_a_server_without_version_information_is_refused_unless_v1() {
        let mut versions =
            Versions::client_after_negotiation(SIFT_V1_VERSION, &SUPPORTED_VERSIONS, true);
        assert!(versions.after_negotiation());
        assert!(versions.check_server(None).is_err());
        // RFC 9368 §8: a v1 server that knows nothing of it lists v1 alone,
        // which leads a client offering v1 back to v1.
        let mut versions = Versions::client_after_negotiation(QUIC_V1, &SUPPORTED_VERSIONS, true);
        assert!(versions.check_server(None).is_ok());
    }

    #[test]
    fn after_version_negotiation_the_servers_available_versions_must_lead_to_the_same_choice() {
        // A Version Negotiation listing only v1 sent us back to v1; the
        // server's own list says it speaks sift/1, which we prefer: the
        // Version Negotiation was forged to downgrade us.
        let mut versions = Versions::client_after_negotiation(QUIC_V1, &SUPPORTED_VERSIONS, true);
        assert!(versions
            .check_server(Some(&offer(QUIC_V1, &SUPPORTED_VERSIONS)))
            .is_err());
        let mut versions = Versions::client_after_negotiation(QUIC_V1, &SUPPORTED_VERSIONS, true);
        assert!(versions
            .check_server(Some(&offer(QUIC_V1, &[QUIC_V1])))
            .is_ok());
        // An empty list proves nothing.
        let mut versions = Versions::client_after_negotiation(QUIC_V1, &SUPPORTED_VERSIONS, true);
        assert!(versions.check_server(Some(&offer(QUIC_V1, &[]))).is_err());
    }

    #[test]
    fn clients_start_in_v1_under_tls_and_in_their_first_version_otherwise() {
        assert_eq!(client_original(&SUPPORTED_VERSIONS, true), QUIC_V1);
        assert_eq!(client_original(&SUPPORTED_VERSIONS, false), SIFT_V1_VERSION);
        assert_eq!(client_original(&[SIFT_V1_VERSION], true), SIFT_V1_VERSION);
    }
}
