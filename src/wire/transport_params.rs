//! Transport parameters (RFC 9000 §18): a sequence of (id, length, value),
//! with RFC 9000 §18.2 ids where QUIC has the parameter (the server-only
//! ones, original_destination_connection_id, stateless_reset_token and
//! retry_source_connection_id, included), RFC 9221's
//! max_datagram_frame_size, draft-ietf-quic-ack-frequency's min_ack_delay,
//! and sift's `corruption_notices` (the HACK option: both peers must offer
//! it, as in the paper's SYN option).

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddrV4, SocketAddrV6};

use super::cid::{ConnectionId, MAX_CID_LEN};
use super::varint::{put_varint, varint_len, Reader};
use super::WireError;

/// Parameter ids.
mod id {
    /// RFC 9000 §18.2.
    pub const ORIGINAL_DESTINATION_CONNECTION_ID: u64 = 0x00;
    pub const MAX_IDLE_TIMEOUT: u64 = 0x01;
    pub const STATELESS_RESET_TOKEN: u64 = 0x02;
    pub const MAX_UDP_PAYLOAD_SIZE: u64 = 0x03;
    pub const INITIAL_MAX_DATA: u64 = 0x04;
    pub const INITIAL_MAX_STREAM_DATA_BIDI_LOCAL: u64 = 0x05;
    pub const INITIAL_MAX_STREAM_DATA_BIDI_REMOTE: u64 = 0x06;
    pub const INITIAL_MAX_STREAM_DATA_UNI: u64 = 0x07;
    pub const INITIAL_MAX_STREAMS_BIDI: u64 = 0x08;
    pub const INITIAL_MAX_STREAMS_UNI: u64 = 0x09;
    pub const ACK_DELAY_EXPONENT: u64 = 0x0a;
    pub const MAX_ACK_DELAY: u64 = 0x0b;
    pub const DISABLE_ACTIVE_MIGRATION: u64 = 0x0c;
    pub const PREFERRED_ADDRESS: u64 = 0x0d;
    pub const ACTIVE_CONNECTION_ID_LIMIT: u64 = 0x0e;
    pub const INITIAL_SOURCE_CONNECTION_ID: u64 = 0x0f;
    pub const RETRY_SOURCE_CONNECTION_ID: u64 = 0x10;
    /// RFC 9368 §3.
    pub const VERSION_INFORMATION: u64 = 0x11;
    /// RFC 9221 §3.
    pub const MAX_DATAGRAM_FRAME_SIZE: u64 = 0x20;
    /// sift: zero-length; present means "I offer corruption notices".
    pub const CORRUPTION_NOTICES: u64 = 0x5ac1;
    /// sift: erasure coding (`docs/repair.md`); the value is the most
    /// packet numbers one repair symbol may span for the sender's decoder.
    pub const REPAIR: u64 = 0x5ac2;
    /// draft-ietf-quic-ack-frequency-13 §3.
    pub const MIN_ACK_DELAY: u64 = 0xff04de1b;
}

/// RFC 9000 §10.3: a stateless reset token is 16 bytes.
pub const RESET_TOKEN_LEN: usize = 16;

/// RFC 9000 §18.2: max_udp_payload_size default, 65527.
pub const DEFAULT_MAX_UDP_PAYLOAD_SIZE: u64 = 65_527;
/// RFC 9000 §18.2: max_udp_payload_size values below 1200 are invalid.
pub const MIN_MAX_UDP_PAYLOAD_SIZE: u64 = 1_200;
/// RFC 9000 §18.2: ack_delay_exponent default, 3 (ACK delays in 8 µs units).
pub const DEFAULT_ACK_DELAY_EXPONENT: u64 = 3;
/// RFC 9000 §18.2: ack_delay_exponent values above 20 are invalid.
pub const MAX_ACK_DELAY_EXPONENT: u64 = 20;
/// RFC 9000 §18.2: max_ack_delay default, 25 ms.
pub const DEFAULT_MAX_ACK_DELAY_MS: u64 = 25;
/// RFC 9000 §18.2: max_ack_delay values of 2^14 or more are invalid.
pub const MAX_ACK_DELAY_LIMIT_MS: u64 = 1 << 14;
/// RFC 9000 §18.2: active_connection_id_limit default, and its least value.
pub const MIN_ACTIVE_CONNECTION_ID_LIMIT: u64 = 2;
/// RFC 9000 §18.2: initial_max_streams_* above 2^60 are invalid.
pub const MAX_STREAMS_LIMIT: u64 = 1 << 60;

/// The transport parameters one endpoint announces. Absent parameters take
/// their RFC 9000 §18.2 defaults (see [`Default`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransportParams {
    /// Server only: the DCID of the client's first Initial.
    pub original_destination_connection_id: Option<ConnectionId>,
    /// The SCID of the sender's first Initial.
    pub initial_source_connection_id: Option<ConnectionId>,
    /// Server only, after a Retry: the SCID of its Retry packet.
    pub retry_source_connection_id: Option<ConnectionId>,
    /// Server only: the token that ends a datagram the server sends when it
    /// no longer knows the connection (RFC 9000 §10.3).
    pub stateless_reset_token: Option<[u8; RESET_TOKEN_LEN]>,
    /// 0 = no idle timeout.
    pub max_idle_timeout_ms: u64,
    /// Largest UDP payload the sender is willing to receive; at least 1200.
    pub max_udp_payload_size: u64,
    /// Initial connection-level flow-control limit, in bytes.
    pub initial_max_data: u64,
    /// Initial limit for bidirectional streams the sender opens, in bytes.
    pub initial_max_stream_data_bidi_local: u64,
    /// Initial limit for bidirectional streams the peer opens, in bytes.
    pub initial_max_stream_data_bidi_remote: u64,
    /// Initial limit for unidirectional streams the peer opens, in bytes.
    pub initial_max_stream_data_uni: u64,
    /// Bidirectional streams the peer may open; at most 2^60.
    pub initial_max_streams_bidi: u64,
    /// Unidirectional streams the peer may open; at most 2^60.
    pub initial_max_streams_uni: u64,
    /// Longest the sender delays an ACK, in ms; below 2^14.
    pub max_ack_delay_ms: u64,
    /// The sender's ACK frames give their delay in units of 2^this µs; at
    /// most 20 (sift sends 0: microseconds).
    pub ack_delay_exponent: u64,
    /// Largest DATAGRAM frame accepted; `None` = DATAGRAM not supported.
    pub max_datagram_frame_size: Option<u64>,
    /// How many of the peer's connection IDs the sender keeps at once
    /// (NEW_CONNECTION_ID); at least 2.
    pub active_connection_id_limit: u64,
    /// This endpoint offers corruption notices (CORRUPTED frames). For
    /// 0-RTT (RFC 9000 §7.4.1 asks every new parameter to say) storing it
    /// is optional: a client may remember it with a ticket, but notices
    /// are negotiated only from the parameters of the new handshake, and
    /// 0-RTT packets carry no CORRUPTED frame.
    pub corruption_notices: bool,
    /// sift's erasure coding (`docs/repair.md`): present means the sender
    /// takes part (it decodes repair symbols spanning at most this many
    /// packet numbers, and may send its own). Negotiated from the new
    /// handshake only, like `corruption_notices`; a 0-RTT client does not
    /// code.
    pub repair_max_span: Option<u64>,
    /// The shortest ACK delay the sender can honour, in µs; present means
    /// it accepts ACK_FREQUENCY and IMMEDIATE_ACK frames
    /// (draft-ietf-quic-ack-frequency-13 §3). At most `max_ack_delay`.
    pub min_ack_delay_micros: Option<u64>,
    /// RFC 9368 compatible version negotiation: the version the sender
    /// chose and the versions it would use.
    pub version_information: Option<VersionInformation>,
    /// The sender does not take part in active migration (RFC 9000 §18.2
    /// disable_active_migration): a client must not move to a new local
    /// address while it sends to the address the handshake used (§9).
    pub disable_active_migration: bool,
    /// Server only: a preferred_address parameter, read and checked
    /// (RFC 9000 §18.2). sift does not move to it (a client may ignore it,
    /// §9.6), but a client takes its connection ID as the server's
    /// sequence number 1 (§5.1.1); a client's is refused.
    pub preferred_address: Option<PreferredAddress>,
}

/// The shortest preferred_address value: IPv4 address and port, IPv6
/// address and port, a connection ID length of 0 and a reset token
/// (RFC 9000 §18.2, Figure 22).
const MIN_PREFERRED_ADDRESS_LEN: usize = 4 + 2 + 16 + 2 + 1 + RESET_TOKEN_LEN;

/// A server's preferred_address (RFC 9000 §18.2, Figure 22), read: its
/// addresses, and a connection ID with its reset token, sequence number 1
/// (§5.1.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PreferredAddress {
    /// The IPv4 address, `None` when sent as all zeroes (`0.0.0.0:0`).
    pub ipv4: Option<SocketAddrV4>,
    /// The IPv6 address, `None` when sent as all zeroes (`[::]:0`).
    pub ipv6: Option<SocketAddrV6>,
    /// The connection ID, 1 to 20 bytes.
    pub connection_id: ConnectionId,
    /// The stateless reset token of `connection_id`.
    pub reset_token: [u8; RESET_TOKEN_LEN],
}

impl PreferredAddress {
    /// Reads a preferred_address value. Malformed: a value not exactly its
    /// fields' length, a connection ID longer than 20 bytes, or a
    /// zero-length one (RFC 9000 §18.2: a server must not send one; a
    /// client treats it as a TRANSPORT_PARAMETER_ERROR).
    pub fn parse(value: &[u8]) -> Result<Self, WireError> {
        let malformed = |reason| WireError::MalformedTransportParameter {
            id: id::PREFERRED_ADDRESS,
            reason,
        };
        let mut reader = Reader::new(value);
        let short = |_| malformed("preferred_address is shorter than its fields");
        let ipv4 = Ipv4Addr::from(reader.u32().map_err(short)?);
        let ipv4_port = reader.u16().map_err(short)?;
        let ipv6_octets: [u8; 16] = reader
            .bytes(16)
            .map_err(short)?
            .try_into()
            .map_err(|_| malformed("preferred_address is shorter than its fields"))?;
        let ipv6_port = reader.u16().map_err(short)?;
        let cid_len = usize::from(reader.u8().map_err(short)?);
        if cid_len == 0 {
            return Err(malformed(
                "preferred_address with a zero-length connection ID",
            ));
        }
        if cid_len > MAX_CID_LEN {
            return Err(malformed(
                "preferred_address connection ID longer than 20 bytes",
            ));
        }
        let connection_id = ConnectionId::new(reader.bytes(cid_len).map_err(short)?)
            .map_err(|_| malformed("preferred_address connection ID longer than 20 bytes"))?;
        let reset_token: [u8; RESET_TOKEN_LEN] = reader
            .bytes(RESET_TOKEN_LEN)
            .map_err(short)?
            .try_into()
            .map_err(|_| malformed("preferred_address is shorter than its fields"))?;
        if !reader.is_empty() {
            return Err(malformed("preferred_address is longer than its fields"));
        }
        let ipv6 = Ipv6Addr::from(ipv6_octets);
        Ok(Self {
            ipv4: (!ipv4.is_unspecified() || ipv4_port != 0)
                .then(|| SocketAddrV4::new(ipv4, ipv4_port)),
            ipv6: (!ipv6.is_unspecified() || ipv6_port != 0)
                .then(|| SocketAddrV6::new(ipv6, ipv6_port, 0, 0)),
            connection_id,
            reset_token,
        })
    }

    /// The value that [`PreferredAddress::parse`] reads back.
    pub fn encode(&self) -> Vec<u8> {
        let ipv4 = self
            .ipv4
            .unwrap_or_else(|| SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0));
        let ipv6 = self
            .ipv6
            .unwrap_or_else(|| SocketAddrV6::new(Ipv6Addr::UNSPECIFIED, 0, 0, 0));
        let mut out = Vec::with_capacity(MIN_PREFERRED_ADDRESS_LEN + self.connection_id.len());
        out.extend_from_slice(&ipv4.ip().octets());
        out.extend_from_slice(&ipv4.port().to_be_bytes());
        out.extend_from_slice(&ipv6.ip().octets());
        out.extend_from_slice(&ipv6.port().to_be_bytes());
        out.push(self.connection_id.len() as u8);
        out.extend_from_slice(self.connection_id.as_slice());
        out.extend_from_slice(&self.reset_token);
        out
    }
}

/// Versions listed in a `version_information` parameter, at most.
pub const MAX_AVAILABLE_VERSIONS: usize = 64;

/// The `version_information` transport parameter (RFC 9368 §3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionInformation {
    /// The version of the packets that carry this handshake, as the sender
    /// sees it: a client's original version, a server's negotiated one.
    pub chosen: u32,
    /// Every version the sender would use, most preferred first (a
    /// client's: those compatible with `chosen`).
    pub available: Vec<u32>,
}

impl Default for TransportParams {
    fn default() -> Self {
        Self {
            original_destination_connection_id: None,
            initial_source_connection_id: None,
            retry_source_connection_id: None,
            stateless_reset_token: None,
            max_idle_timeout_ms: 0,
            max_udp_payload_size: DEFAULT_MAX_UDP_PAYLOAD_SIZE,
            initial_max_data: 0,
            initial_max_stream_data_bidi_local: 0,
            initial_max_stream_data_bidi_remote: 0,
            initial_max_stream_data_uni: 0,
            initial_max_streams_bidi: 0,
            initial_max_streams_uni: 0,
            max_ack_delay_ms: DEFAULT_MAX_ACK_DELAY_MS,
            ack_delay_exponent: DEFAULT_ACK_DELAY_EXPONENT,
            max_datagram_frame_size: None,
            active_connection_id_limit: MIN_ACTIVE_CONNECTION_ID_LIMIT,
            corruption_notices: false,
            repair_max_span: None,
            min_ack_delay_micros: None,
            version_information: None,
            disable_active_migration: false,
            preferred_address: None,
        }
    }
}

impl TransportParams {
    /// Integer parameters that have a default: (id, value, default).
    fn integers_with_defaults(&self) -> [(u64, u64, u64); 11] {
        let defaults = Self::default();
        [
            (
                id::MAX_IDLE_TIMEOUT,
                self.max_idle_timeout_ms,
                defaults.max_idle_timeout_ms,
            ),
            (
                id::MAX_UDP_PAYLOAD_SIZE,
                self.max_udp_payload_size,
                defaults.max_udp_payload_size,
            ),
            (
                id::INITIAL_MAX_DATA,
                self.initial_max_data,
                defaults.initial_max_data,
            ),
            (
                id::INITIAL_MAX_STREAM_DATA_BIDI_LOCAL,
                self.initial_max_stream_data_bidi_local,
                defaults.initial_max_stream_data_bidi_local,
            ),
            (
                id::INITIAL_MAX_STREAM_DATA_BIDI_REMOTE,
                self.initial_max_stream_data_bidi_remote,
                defaults.initial_max_stream_data_bidi_remote,
            ),
            (
                id::INITIAL_MAX_STREAM_DATA_UNI,
                self.initial_max_stream_data_uni,
                defaults.initial_max_stream_data_uni,
            ),
            (
                id::INITIAL_MAX_STREAMS_BIDI,
                self.initial_max_streams_bidi,
                defaults.initial_max_streams_bidi,
            ),
            (
                id::INITIAL_MAX_STREAMS_UNI,
                self.initial_max_streams_uni,
                defaults.initial_max_streams_uni,
            ),
            (
                id::MAX_ACK_DELAY,
                self.max_ack_delay_ms,
                defaults.max_ack_delay_ms,
            ),
            (
                id::ACK_DELAY_EXPONENT,
                self.ack_delay_exponent,
                defaults.ack_delay_exponent,
            ),
            (
                id::ACTIVE_CONNECTION_ID_LIMIT,
                self.active_connection_id_limit,
                defaults.active_connection_id_limit,
            ),
        ]
    }

    /// Appends every parameter that differs from its default (absent ones
    /// decode to the default anyway). Integer values must fit a varint.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let connection_ids = [
            (
                id::ORIGINAL_DESTINATION_CONNECTION_ID,
                self.original_destination_connection_id,
            ),
            (
                id::INITIAL_SOURCE_CONNECTION_ID,
                self.initial_source_connection_id,
            ),
            (
                id::RETRY_SOURCE_CONNECTION_ID,
                self.retry_source_connection_id,
            ),
        ];
        for (param, cid) in connection_ids {
            if let Some(cid) = cid {
                put_varint(out, param);
                put_varint(out, cid.len() as u64);
                out.extend_from_slice(cid.as_slice());
            }
        }
        if let Some(token) = self.stateless_reset_token {
            put_varint(out, id::STATELESS_RESET_TOKEN);
            put_varint(out, RESET_TOKEN_LEN as u64);
            out.extend_from_slice(&token);
        }
        for (param, value, default) in self.integers_with_defaults() {
            if value != default {
                put_integer(out, param, value);
            }
        }
        // Present at any value (even 0) means DATAGRAM is supported.
        if let Some(size) = self.max_datagram_frame_size {
            put_integer(out, id::MAX_DATAGRAM_FRAME_SIZE, size);
        }
        if self.corruption_notices {
            put_varint(out, id::CORRUPTION_NOTICES);
            put_varint(out, 0);
        }
        if let Some(span) = self.repair_max_span {
            put_integer(out, id::REPAIR, span);
        }
        if let Some(delay) = self.min_ack_delay_micros {
            put_integer(out, id::MIN_ACK_DELAY, delay);
        }
        if self.disable_active_migration {
            put_varint(out, id::DISABLE_ACTIVE_MIGRATION);
            put_varint(out, 0);
        }
        if let Some(preferred) = &self.preferred_address {
            let value = preferred.encode();
            put_varint(out, id::PREFERRED_ADDRESS);
            put_varint(out, value.len() as u64);
            out.extend_from_slice(&value);
        }
        if let Some(info) = &self.version_information {
            let versions = 1 + info.available.len().min(MAX_AVAILABLE_VERSIONS);
            put_varint(out, id::VERSION_INFORMATION);
            put_varint(out, 4 * versions as u64);
            out.extend_from_slice(&info.chosen.to_be_bytes());
            for version in info.available.iter().take(MAX_AVAILABLE_VERSIONS) {
                out.extend_from_slice(&version.to_be_bytes());
            }
        }
    }

    /// Parses and validates a parameter list. Unknown ids are skipped; a
    /// known id seen twice is an error (RFC 9000 §7.4).
    pub fn decode(buf: &[u8]) -> Result<Self, WireError> {
        let mut params = Self::default();
        let mut seen = SeenIds::default();
        let mut reader = Reader::new(buf);
        while !reader.is_empty() {
            let param = reader.varint()?;
            let len = reader.varint()?;
            let len = usize::try_from(len).map_err(|_| WireError::UnexpectedEnd {
                needed: usize::MAX,
                remaining: reader.remaining(),
            })?;
            let value = reader.bytes(len)?;
            if !seen.insert(param) {
                return Err(WireError::DuplicateTransportParameter(param));
            }
            match param {
                id::ORIGINAL_DESTINATION_CONNECTION_ID => {
                    params.original_destination_connection_id = Some(connection_id(param, value)?)
                }
                id::INITIAL_SOURCE_CONNECTION_ID => {
                    params.initial_source_connection_id = Some(connection_id(param, value)?)
                }
                id::RETRY_SOURCE_CONNECTION_ID => {
                    params.retry_source_connection_id = Some(connection_id(param, value)?)
                }
                id::STATELESS_RESET_TOKEN => {
                    let token =
                        value
                            .try_into()
                            .map_err(|_| WireError::MalformedTransportParameter {
                                id: param,
                                reason: "stateless_reset_token must be 16 bytes",
                            })?;
                    params.stateless_reset_token = Some(token);
                }
                id::MAX_IDLE_TIMEOUT => params.max_idle_timeout_ms = integer(param, value)?,
                id::MAX_UDP_PAYLOAD_SIZE => params.max_udp_payload_size = integer(param, value)?,
                id::INITIAL_MAX_DATA => params.initial_max_data = integer(param, value)?,
                id::INITIAL_MAX_STREAM_DATA_BIDI_LOCAL => {
                    params.initial_max_stream_data_bidi_local = integer(param, value)?
                }
                id::INITIAL_MAX_STREAM_DATA_BIDI_REMOTE => {
                    params.initial_max_stream_data_bidi_remote = integer(param, value)?
                }
                id::INITIAL_MAX_STREAM_DATA_UNI => {
                    params.initial_max_stream_data_uni = integer(param, value)?
                }
                id::INITIAL_MAX_STREAMS_BIDI => {
                    params.initial_max_streams_bidi = integer(param, value)?
                }
                id::INITIAL_MAX_STREAMS_UNI => {
                    params.initial_max_streams_uni = integer(param, value)?
                }
                id::MAX_ACK_DELAY => params.max_ack_delay_ms = integer(param, value)?,
                id::ACK_DELAY_EXPONENT => params.ack_delay_exponent = integer(param, value)?,
                id::ACTIVE_CONNECTION_ID_LIMIT => {
                    params.active_connection_id_limit = integer(param, value)?
                }
                id::MAX_DATAGRAM_FRAME_SIZE => {
                    params.max_datagram_frame_size = Some(integer(param, value)?)
                }
                id::CORRUPTION_NOTICES => {
                    if !value.is_empty() {
                        return Err(WireError::MalformedTransportParameter {
                            id: param,
                            reason: "corruption_notices must be empty",
                        });
                    }
                    params.corruption_notices = true;
                }
                id::REPAIR => {
                    let span = integer(param, value)?;
                    if span == 0 {
                        return Err(WireError::MalformedTransportParameter {
                            id: param,
                            reason: "repair span must be at least 1",
                        });
                    }
                    params.repair_max_span = Some(span);
                }
                id::MIN_ACK_DELAY => params.min_ack_delay_micros = Some(integer(param, value)?),
                id::DISABLE_ACTIVE_MIGRATION => {
                    if !value.is_empty() {
                        return Err(WireError::MalformedTransportParameter {
                            id: param,
                            reason: "disable_active_migration must be empty",
                        });
                    }
                    params.disable_active_migration = true;
                }
                id::PREFERRED_ADDRESS => {
                    params.preferred_address = Some(PreferredAddress::parse(value)?);
                }
                id::VERSION_INFORMATION => {
                    params.version_information = Some(version_information(param, value)?)
                }
                // RFC 9000 §7.4.2: ignore parameters we do not know.
                _ => {}
            }
        }
        params.validate()?;
        Ok(params)
    }

    /// RFC 9000 §18.2 value ranges.
    fn validate(&self) -> Result<(), WireError> {
        let out_of_range =
            |name, value| Err(WireError::TransportParameterOutOfRange { name, value });
        if self.max_udp_payload_size < MIN_MAX_UDP_PAYLOAD_SIZE {
            return out_of_range("max_udp_payload_size", self.max_udp_payload_size);
        }
        if self.max_ack_delay_ms >= MAX_ACK_DELAY_LIMIT_MS {
            return out_of_range("max_ack_delay", self.max_ack_delay_ms);
        }
        if self.ack_delay_exponent > MAX_ACK_DELAY_EXPONENT {
            return out_of_range("ack_delay_exponent", self.ack_delay_exponent);
        }
        // draft-ietf-quic-ack-frequency-13 §3: min_ack_delay is in µs,
        // max_ack_delay in ms, and the first may not exceed the second.
        if let Some(min) = self.min_ack_delay_micros {
            if min > self.max_ack_delay_ms * 1000 {
                return out_of_range("min_ack_delay", min);
            }
        }
        if self.active_connection_id_limit < MIN_ACTIVE_CONNECTION_ID_LIMIT {
            return out_of_range(
                "active_connection_id_limit",
                self.active_connection_id_limit,
            );
        }
        if self.initial_max_streams_bidi > MAX_STREAMS_LIMIT {
            return out_of_range("initial_max_streams_bidi", self.initial_max_streams_bidi);
        }
        if self.initial_max_streams_uni > MAX_STREAMS_LIMIT {
            return out_of_range("initial_max_streams_uni", self.initial_max_streams_uni);
        }
        Ok(())
    }
}

/// Which known parameter ids have been seen; unknown ids are not tracked
/// (that would need memory proportional to the input).
#[derive(Default)]
struct SeenIds {
    /// Bit `id` for ids below 64.
    low: u64,
    corruption_notices: bool,
    repair: bool,
    min_ack_delay: bool,
}

impl SeenIds {
    /// Records `param`; false if it is a known id already seen.
    fn insert(&mut self, param: u64) -> bool {
        if param < 64 {
            let bit = 1u64 << param;
            let fresh = self.low & bit == 0;
            self.low |= bit;
            fresh
        } else if param == id::CORRUPTION_NOTICES {
            !std::mem::replace(&mut self.corruption_notices, true)
        } else if param == id::REPAIR {
            !std::mem::replace(&mut self.repair, true)
        } else if param == id::MIN_ACK_DELAY {
            !std::mem::replace(&mut self.min_ack_delay, true)
        } else {
            true
        }
    }
}

/// RFC 9368 §3: a chosen version, then available versions, 4 bytes each;
/// version 0 is never a version (§4: a VERSION_NEGOTIATION_ERROR, which the
/// connection raises for what decodes here).
fn version_information(param: u64, value: &[u8]) -> Result<VersionInformation, WireError> {
    let malformed = |reason| WireError::MalformedTransportParameter { id: param, reason };
    if value.is_empty() || value.len() % 4 != 0 {
        return Err(malformed("version_information is not whole versions"));
    }
    if value.len() / 4 > 1 + MAX_AVAILABLE_VERSIONS {
        return Err(malformed("version_information lists too many versions"));
    }
    let mut versions = value
        .chunks_exact(4)
        .map(|v| u32::from_be_bytes([v[0], v[1], v[2], v[3]]));
    let chosen = versions.next().unwrap_or(0);
    let available: Vec<u32> = versions.collect();
    if chosen == 0 || available.contains(&0) {
        return Err(malformed("version_information names version 0"));
    }
    Ok(VersionInformation { chosen, available })
}

fn put_integer(out: &mut Vec<u8>, param: u64, value: u64) {
    put_varint(out, param);
    put_varint(out, varint_len(value) as u64);
    put_varint(out, value);
}

fn integer(param: u64, value: &[u8]) -> Result<u64, WireError> {
    let mut reader = Reader::new(value);
    let parsed = reader
        .varint()
        .map_err(|_| WireError::MalformedTransportParameter {
            id: param,
            reason: "value is not a varint",
        })?;
    if !reader.is_empty() {
        return Err(WireError::MalformedTransportParameter {
            id: param,
            reason: "bytes after the varint value",
        });
    }
    Ok(parsed)
}

fn connection_id(param: u64, value: &[u8]) -> Result<ConnectionId, WireError> {
    if value.len() > MAX_CID_LEN {
        return Err(WireError::MalformedTransportParameter {
            id: param,
            reason: "connection ID longer than 20 bytes",
        });
    }
    ConnectionId::new(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::VARINT_MAX;
    use proptest::prelude::*;

    fn encoded(params: &TransportParams) -> Vec<u8> {
        let mut out = Vec::new();
        params.encode(&mut out);
        out
    }

    #[test]
    fn absent_parameters_take_the_rfc_defaults() {
        let params = TransportParams::decode(&[]).expect("empty list is valid");
        assert_eq!(params, TransportParams::default());
        assert_eq!(params.max_udp_payload_size, 65_527);
        assert_eq!(params.max_ack_delay_ms, 25);
        assert_eq!(params.max_datagram_frame_size, None);
        assert!(!params.corruption_notices);
        assert!(encoded(&params).is_empty(), "defaults need no bytes");
    }

    #[test]
    fn corruption_notices_is_a_zero_length_parameter() {
        let params = TransportParams {
            corruption_notices: true,
            ..TransportParams::default()
        };
        // id 0x5ac1 needs a four-byte varint (0x5ac1 >= 2^14), then length 0.
        assert_eq!(encoded(&params), [0x80, 0x00, 0x5a, 0xc1, 0x00]);
        assert_eq!(TransportParams::decode(&encoded(&params)), Ok(params));
        assert_eq!(
            TransportParams::decode(&[0x80, 0x00, 0x5a, 0xc1, 0x01, 0x00]),
            Err(WireError::MalformedTransportParameter {
                id: 0x5ac1,
                reason: "corruption_notices must be empty"
            })
        );
    }

    #[test]
    fn integer_parameter_is_id_length_varint() {
        let params = TransportParams {
            initial_max_data: 1_000_000,
            ..TransportParams::default()
        };
        // id 0x04, length 4, 1_000_000 = 0x000f4240 as a four-byte varint.
        assert_eq!(encoded(&params), [0x04, 4, 0x80, 0x0f, 0x42, 0x40]);
    }

    #[test]
    fn unknown_parameters_are_skipped() {
        // Unknown id 0x1234 (two-byte varint 0x5234) with 3 bytes, then
        // max_idle_timeout = 30.
        let bytes = [0x52, 0x34, 3, 9, 9, 9, 0x01, 1, 30];
        let params = TransportParams::decode(&bytes).expect("valid");
        assert_eq!(params.max_idle_timeout_ms, 30);
    }

    #[test]
    fn a_parameter_sent_twice_is_rejected() {
        assert_eq!(
            TransportParams::decode(&[0x01, 1, 30, 0x01, 1, 40]),
            Err(WireError::DuplicateTransportParameter(0x01))
        );
        let twice = [0x80, 0x00, 0x5a, 0xc1, 0x00, 0x80, 0x00, 0x5a, 0xc1, 0x00];
        assert_eq!(
            TransportParams::decode(&twice),
            Err(WireError::DuplicateTransportParameter(0x5ac1))
        );
    }

    #[test]
    fn out_of_range_values_are_rejected_with_the_value() {
        // max_udp_payload_size 1199 = two-byte varint 0x44af.
        assert_eq!(
            TransportParams::decode(&[0x03, 2, 0x44, 0xaf]),
            Err(WireError::TransportParameterOutOfRange {
                name: "max_udp_payload_size",
                value: 1199
            })
        );
        // max_ack_delay 2^14 = four-byte varint 0x80004000.
        assert_eq!(
            TransportParams::decode(&[0x0b, 4, 0x80, 0x00, 0x40, 0x00]),
            Err(WireError::TransportParameterOutOfRange {
                name: "max_ack_delay",
                value: 1 << 14
            })
        );
        // RFC 9000 §18.2: active_connection_id_limit below 2 is an error.
        assert_eq!(
            TransportParams::decode(&[0x0e, 1, 1]),
            Err(WireError::TransportParameterOutOfRange {
                name: "active_connection_id_limit",
                value: 1
            })
        );
        // max_ack_delay 2^14 - 1 is the largest allowed.
        let params = TransportParams::decode(&[0x0b, 2, 0x7f, 0xff]).expect("valid");
        assert_eq!(params.max_ack_delay_ms, (1 << 14) - 1);
    }

    #[test]
    fn min_ack_delay_may_not_exceed_max_ack_delay() {
        let with = |min: u64, max_ms: u64| {
            let mut out = Vec::new();
            put_integer(&mut out, id::MAX_ACK_DELAY, max_ms);
            put_integer(&mut out, id::MIN_ACK_DELAY, min);
            TransportParams::decode(&out)
        };
        assert_eq!(
            with(25_000, 25).map(|p| p.min_ack_delay_micros),
            Ok(Some(25_000))
        );
        assert_eq!(
            with(25_001, 25),
            Err(WireError::TransportParameterOutOfRange {
                name: "min_ack_delay",
                value: 25_001
            })
        );
        // Absent: the peer takes no ACK_FREQUENCY frames.
        assert_eq!(
            TransportParams::decode(&[]).map(|p| p.min_ack_delay_micros),
            Ok(None)
        );
    }

    #[test]
    fn value_length_must_match_its_varint() {
        // max_idle_timeout with length 2 but a one-byte varint and a spare byte.
        assert_eq!(
            TransportParams::decode(&[0x01, 2, 30, 0]),
            Err(WireError::MalformedTransportParameter {
                id: 0x01,
                reason: "bytes after the varint value"
            })
        );
        assert_eq!(
            TransportParams::decode(&[0x01, 0]),
            Err(WireError::MalformedTransportParameter {
                id: 0x01,
                reason: "value is not a varint"
            })
        );
        // A value longer than what remains.
        assert!(matches!(
            TransportParams::decode(&[0x01, 9, 30]),
            Err(WireError::UnexpectedEnd { needed: 9, .. })
        ));
    }

    #[test]
    fn a_stateless_reset_token_of_another_length_is_rejected() {
        let mut bytes = vec![0x02, 15];
        bytes.extend_from_slice(&[7; 15]);
        assert_eq!(
            TransportParams::decode(&bytes),
            Err(WireError::MalformedTransportParameter {
                id: 0x02,
                reason: "stateless_reset_token must be 16 bytes"
            })
        );
    }

    #[test]
    fn connection_id_parameter_longer_than_twenty_bytes_is_rejected() {
        let mut bytes = vec![0x0f, 21];
        bytes.extend_from_slice(&[7; 21]);
        assert_eq!(
            TransportParams::decode(&bytes),
            Err(WireError::MalformedTransportParameter {
                id: 0x0f,
                reason: "connection ID longer than 20 bytes"
            })
        );
    }

    fn any_cid() -> impl Strategy<Value = Option<ConnectionId>> {
        proptest::option::of(
            proptest::collection::vec(any::<u8>(), 0..=MAX_CID_LEN)
                .prop_map(|bytes| ConnectionId::new(&bytes).expect("bounded")),
        )
    }

    fn any_varint() -> impl Strategy<Value = u64> {
        prop_oneof![0u64..64, 0u64..16_384, 0u64..=VARINT_MAX]
    }

    #[test]
    fn disable_active_migration_and_preferred_address_are_read() {
        let preferred = PreferredAddress {
            ipv4: None,
            ipv6: Some("[2001:db8::1]:443".parse().unwrap()),
            connection_id: ConnectionId::new(&[7; 4]).unwrap(),
            reset_token: [7; RESET_TOKEN_LEN],
        };
        let mut out = Vec::new();
        TransportParams {
            disable_active_migration: true,
            preferred_address: Some(preferred),
            ..TransportParams::default()
        }
        .encode(&mut out);
        let params = TransportParams::decode(&out).unwrap();
        assert!(params.disable_active_migration);
        assert_eq!(params.preferred_address, Some(preferred));
        for bad in [&[0x0c, 1, 0][..], &[0x0d, 2, 0, 0]] {
            assert!(matches!(
                TransportParams::decode(bad),
                Err(WireError::MalformedTransportParameter { .. })
            ));
        }
    }

    #[test]
    fn a_preferred_address_with_a_zero_length_connection_id_does_not_decode() {
        // RFC 9000 §18.2: a server must not send one, and a client treats
        // it as a TRANSPORT_PARAMETER_ERROR.
        let mut value = vec![0; 4 + 2 + 16 + 2];
        value.push(0);
        value.extend([0; RESET_TOKEN_LEN]);
        let mut out = Vec::new();
        put_varint(&mut out, id::PREFERRED_ADDRESS);
        put_varint(&mut out, value.len() as u64);
        out.extend_from_slice(&value);
        assert!(matches!(
            TransportParams::decode(&out),
            Err(WireError::MalformedTransportParameter { id: 0x0d, .. })
        ));
    }

    #[test]
    fn a_preferred_address_reads_back_and_a_malformed_one_is_refused() {
        let preferred = PreferredAddress {
            ipv4: Some("192.0.2.1:4433".parse().unwrap()),
            ipv6: None,
            connection_id: ConnectionId::new(&[9; 8]).unwrap(),
            reset_token: [4; RESET_TOKEN_LEN],
        };
        let value = preferred.encode();
        assert_eq!(value.len(), MIN_PREFERRED_ADDRESS_LEN + 8);
        assert_eq!(PreferredAddress::parse(&value), Ok(preferred));
        let with_cid_len = |len: u8| {
            let mut value = vec![0; 24];
            value.push(len);
            value.extend(std::iter::repeat_n(7, usize::from(len)));
            value.extend([0; RESET_TOKEN_LEN]);
            value
        };
        let mut trailing = value.clone();
        trailing.push(0);
        for bad in [
            with_cid_len(0),
            with_cid_len(21),
            trailing,
            value[..value.len() - 1].to_vec(),
        ] {
            assert!(
                matches!(
                    PreferredAddress::parse(&bad),
                    Err(WireError::MalformedTransportParameter { id: 0x0d, .. })
                ),
                "{bad:?}"
            );
        }
        assert!(PreferredAddress::parse(&with_cid_len(20)).is_ok());
    }

    #[test]
    fn version_information_has_rfc_9368_layout_and_refuses_version_zero() {
        let params = TransportParams {
            version_information: Some(VersionInformation {
                chosen: 0x0000_0001,
                available: vec![0x5346_0001, 0x0000_0001],
            }),
            ..TransportParams::default()
        };
        let mut out = Vec::new();
        params.encode(&mut out);
        assert_eq!(
            out,
            [
                &[0x11, 12][..],
                &[0, 0, 0, 1],
                &[0x53, 0x46, 0, 1],
                &[0, 0, 0, 1]
            ]
            .concat()
        );
        assert_eq!(TransportParams::decode(&out), Ok(params));
        for bad in [&[0x11, 0][..], &[0x11, 3, 0, 0, 1], &[0x11, 4, 0, 0, 0, 0]] {
            assert!(matches!(
                TransportParams::decode(bad),
                Err(WireError::MalformedTransportParameter { id: 0x11, .. })
            ));
        }
    }

    prop_compose! {
        fn any_params()(
            original_destination_connection_id in any_cid(),
            initial_source_connection_id in any_cid(),
            retry_source_connection_id in any_cid(),
            stateless_reset_token in proptest::option::of(any::<[u8; RESET_TOKEN_LEN]>()),
            max_idle_timeout_ms in any_varint(),
            max_udp_payload_size in MIN_MAX_UDP_PAYLOAD_SIZE..=VARINT_MAX,
            flow in proptest::array::uniform5(any_varint()),
            initial_max_streams_bidi in 0..=MAX_STREAMS_LIMIT,
            initial_max_streams_uni in 0..=MAX_STREAMS_LIMIT,
            max_ack_delay_ms in 0..MAX_ACK_DELAY_LIMIT_MS,
            ack_delay_exponent in 0..=MAX_ACK_DELAY_EXPONENT,
            max_datagram_frame_size in proptest::option::of(any_varint()),
            active_connection_id_limit in MIN_ACTIVE_CONNECTION_ID_LIMIT..=VARINT_MAX,
            corruption_notices in any::<bool>(),
            min_ack_delay_fraction in proptest::option::of(0.0..=1.0f64),
            versions in proptest::option::of(
                proptest::collection::vec(1u32.., 1..=MAX_AVAILABLE_VERSIONS + 1)
            ),
            disable_active_migration in any::<bool>(),
            repair_max_span in proptest::option::of(1u64..=VARINT_MAX),
            preferred_address in proptest::option::of((
                proptest::option::of(any::<(u32, u16)>()),
                proptest::option::of(any::<(u128, u16)>()),
                proptest::collection::vec(any::<u8>(), 1..=MAX_CID_LEN),
                any::<[u8; RESET_TOKEN_LEN]>(),
            )),
        ) -> TransportParams {
            TransportParams {
                original_destination_connection_id,
                initial_source_connection_id,
                retry_source_connection_id,
                stateless_reset_token,
                max_idle_timeout_ms,
                max_udp_payload_size,
                initial_max_data: flow[0],
                initial_max_stream_data_bidi_local: flow[1],
                initial_max_stream_data_bidi_remote: flow[2],
                initial_max_stream_data_uni: flow[3],
                initial_max_streams_bidi,
                initial_max_streams_uni,
                max_ack_delay_ms,
                ack_delay_exponent,
                max_datagram_frame_size,
                active_connection_id_limit,
                corruption_notices,
                repair_max_span,
                min_ack_delay_micros: min_ack_delay_fraction
                    .map(|f| (f * (max_ack_delay_ms * 1000) as f64) as u64),
                version_information: versions.map(|versions| VersionInformation {
                    chosen: versions[0],
                    available: versions[1..].to_vec(),
                }),
                disable_active_migration,
                preferred_address: preferred_address.map(|(ipv4, ipv6, cid, reset_token)| {
                    PreferredAddress {
                        // All zeroes reads as absent.
                        ipv4: ipv4.map(|(ip, port)| SocketAddrV4::new(ip.max(1).into(), port)),
                        ipv6: ipv6.map(|(ip, port)| SocketAddrV6::new(ip.max(1).into(), port, 0, 0)),
                        connection_id: ConnectionId::new(&cid).unwrap(),
                        reset_token,
                    }
                }),
            }
        }
    }

    proptest! {
        #[test]
        fn transport_params_round_trip(params in any_params()) {
            prop_assert_eq!(TransportParams::decode(&encoded(&params)), Ok(params));
        }

        #[test]
        fn transport_params_decode_never_panics(
            bytes in proptest::collection::vec(any::<u8>(), 0..80)
        ) {
            let _ = TransportParams::decode(&bytes);
        }
    }
}
