//! Which keys protect which packet: Initial keys (and the Null/TLS mismatch
//! they reveal), and 1-RTT key phases with key update (RFC 9001 §6).
//!
//! Key update, as quinn does it:
//! - The next phase's keys are derived as soon as the current ones are
//!   installed, so a peer's update is recognised on its first packet.
//! - A 1-RTT packet whose key-phase bit differs from ours is opened with
//!   the previous phase's keys if it is numbered below every packet the
//!   current keys opened, else with the next phase's keys; if those open
//!   it, the peer has updated and we follow (both directions move
//!   together, RFC 9001 §6.2). So old keys never open a packet numbered
//!   above one that newer keys opened: such a packet is dropped (§5.5),
//!   and newer keys opening a packet numbered below one the current keys
//!   opened is a KEY_UPDATE_ERROR (§6.4).
//! - We initiate an update after `Config::key_update_interval` packets in a
//!   phase (a test knob) or near the cipher's confidentiality limit
//!   (RFC 9001 §6.6), once the handshake is confirmed and a packet of the
//!   current phase has been acknowledged (§6.1).
//! - The previous phase's keys are kept until the next update (RFC 9001
//!   §6.5 allows dropping them after three PTOs; keeping one old phase
//!   costs nothing and needs no timer).
//!
//! The header tag is computed under the packet key, so a packet opened
//! with the wrong phase fails its *header* check and counts as
//! header-corrupt, as a flipped key-phase bit does in Null mode.

use super::error::{codes, TransportFailure};
use super::{Connection, Protection};
use crate::crypto::tls::initial_protection_in;
use crate::crypto::{NullProtection, PacketProtection};
use crate::recovery::SpaceId;
use crate::wire::{decode_packet_number, ParsedHeader, HEADER_TAG_LEN};
use crate::Side;

/// Packets sealed before the confidentiality limit at which we update
/// anyway, so the update completes before the limit (RFC 9001 §6.6).
const CONFIDENTIALITY_MARGIN: u64 = 1 << 16;
/// Packets left under the confidentiality limit at which a connection that
/// still cannot update its keys closes with AEAD_LIMIT_REACHED: RFC 9001
/// §6.6 asks it to stop using the connection, and recommends closing
/// before no update is possible. The reserve leaves room for the
/// CONNECTION_CLOSE and its repeats; past the limit nothing is sealed.
const CLOSE_RESERVE: u64 = 1 << 10;

/// The Initial keys of `protection` in `version` for `side`, from the
/// client's first destination connection ID (QUIC v2 has its own salt,
/// RFC 9369 §3.3.1).
pub(super) fn initial_keys(
    protection: Protection,
    version: u32,
    client_dcid: &[u8],
    side: Side,
) -> Box<dyn PacketProtection> {
    match protection {
        Protection::Null => Box::new(NullProtection),
        Protection::Tls => Box::new(initial_protection_in(version, client_dcid, side)),
    }
}

/// Which 1-RTT keys opened (or should open) a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum KeySlot {
    Current,
    Previous,
    Next,
}

/// 1-RTT key-phase state beside the current keys (`Connection::keys`).
#[derive(Debug, Default)]
pub(super) struct KeyPhases {
    /// The key-phase bit of the current keys.
    pub phase: bool,
    next: Option<Box<dyn PacketProtection>>,
    previous: Option<Box<dyn PacketProtection>>,
    /// The lowest and highest packet numbers the current keys opened.
    received_in_phase: Option<(u64, u64)>,
    /// The first packet number we sent in the current phase.
    first_sent_in_phase: Option<u64>,
    /// A packet of ours in the current phase was acknowledged.
    current_phase_acked: bool,
    pub(super) sent_in_phase: u64,
    /// Key updates so far, by either side.
    pub updates: u64,
}

impl KeyPhases {
    /// Notes a 1-RTT packet sent in the current phase.
    pub fn on_sent(&mut self, packet_number: u64) {
        self.sent_in_phase += 1;
        self.first_sent_in_phase.get_or_insert(packet_number);
    }

    /// Notes an acknowledgement of 1-RTT packets up to `largest`.
    pub fn on_acked(&mut self, largest: u64) {
        if self
            .first_sent_in_phase
            .is_some_and(|first| largest >= first)
        {
            self.current_phase_acked = true;
        }
    }

    /// The keys for a received packet with key-phase bit `key_phase`.
    fn slot_for(&self, key_phase: bool, packet_number: u64) -> KeySlot {
        if key_phase == self.phase {
            return KeySlot::Current;
        }
        let predates_phase = self
            .received_in_phase
            .is_none_or(|(lowest, _)| packet_number < lowest);
        match (&self.previous, &self.next) {
            (Some(_), _) if predates_phase => KeySlot::Previous,
            (_, Some(_)) => KeySlot::Next,
            // Null mode has a single phase: let its tag check decide.
            _ => KeySlot::Current,
        }
    }
}

impl Connection {
    /// The server's Initial keys for a client's first Initial (`parsed`, in
    /// `packet`). Our own mode's keys if its header tag verifies under them.
    /// If it verifies under the *other* mode's keys instead, the client
    /// asked for the other protection: keep those keys just long enough to
    /// tell it so in a CONNECTION_CLOSE it can read, and close. `None`: the
    /// header is simply damaged. A header under header protection (QUIC
    /// v1) has no tag to ask: its Initial keys are TLS's, and opening the
    /// packet decides.
    pub(super) fn server_initial_keys(
        &mut self,
        parsed: &ParsedHeader<'_>,
        packet: &[u8],
    ) -> Option<Box<dyn PacketProtection>> {
        let client_dcid = parsed.dcid.as_slice();
        let ours = self.config.protection;
        let theirs = match ours {
            Protection::Null => Protection::Tls,
            Protection::Tls => Protection::Null,
        };
        if parsed.pn_len == 0 {
            if ours == Protection::Null {
                self.protection_mismatch = Some(Protection::Tls);
            }
            return Some(initial_keys(
                Protection::Tls,
                parsed.version,
                client_dcid,
                Side::Server,
            ));
        }
        let packet_number = decode_packet_number(None, parsed.truncated_pn);
        let (header, tag) = packet
            .get(..parsed.header_len + HEADER_TAG_LEN)?
            .split_at(parsed.header_len);
        let keys = initial_keys(ours, parsed.version, client_dcid, Side::Server);
        if keys.verify_header_tag(packet_number, header, tag) {
            return Some(keys);
        }
        let keys = initial_keys(theirs, parsed.version, client_dcid, Side::Server);
        if !keys.verify_header_tag(packet_number, header, tag) {
            return None;
        }
        self.protection_mismatch = Some(theirs);
        Some(keys)
    }

    /// The 1-RTT keys to open a packet with key-phase bit `key_phase`.
    pub(super) fn one_rtt_opening_keys(
        &self,
        key_phase: bool,
        packet_number: u64,
    ) -> Option<(&dyn PacketProtection, KeySlot)> {
        let slot = self.key_phases.slot_for(key_phase, packet_number);
        let keys = match slot {
            KeySlot::Current => self.spaces[SpaceId::Data].keys.as_deref(),
            KeySlot::Previous => self.key_phases.previous.as_deref(),
            KeySlot::Next => self.key_phases.next.as_deref(),
        }?;
        Some((keys, slot))
    }

    /// A 1-RTT packet opened with the keys of `slot`.
    pub(super) fn on_one_rtt_opened(
        &mut self,
        slot: KeySlot,
        packet_number: u64,
    ) -> Result<(), TransportFailure> {
        match slot {
            KeySlot::Next => {
                if let Some((_, highest)) = self.key_phases.received_in_phase {
                    if packet_number < highest {
                        return Err(TransportFailure::new(
                            codes::KEY_UPDATE_ERROR,
                            format!(
                                "packet {packet_number} is in a newer key phase than packet {highest}"
                            ),
                        ));
                    }
                }
                tracing::debug!(packet_number, "the peer updated its keys");
                self.rotate_keys();
                self.key_phases.received_in_phase = Some((packet_number, packet_number));
            }
            KeySlot::Current => {
                let range = &mut self.key_phases.received_in_phase;
                *range = Some(match *range {
                    Some((lowest, highest)) => {
                        (lowest.min(packet_number), highest.max(packet_number))
                    }
                    None => (packet_number, packet_number),
                });
            }
            KeySlot::Previous => {}
        }
        Ok(())
    }

    /// Installs freshly negotiated 1-RTT keys (phase 0) and derives phase 1.
    pub(super) fn install_one_rtt_keys(&mut self, keys: Box<dyn PacketProtection>) {
        self.spaces[SpaceId::Data].keys = Some(keys);
        self.key_phases.next = self.handshake.next_one_rtt_keys();
    }

    /// Moves to the next key phase in both directions.
    fn rotate_keys(&mut self) {
        let Some(next) = self.key_phases.next.take() else {
            return;
        };
        let current = &mut self.spaces[SpaceId::Data].keys;
        self.key_phases.previous = current.replace(next);
        self.key_phases.next = self.handshake.next_one_rtt_keys();
        let phases = &mut self.key_phases;
        phases.phase = !phases.phase;
        phases.received_in_phase = None;
        phases.first_sent_in_phase = None;
        phases.current_phase_acked = false;
        phases.sent_in_phase = 0;
        phases.updates += 1;
    }

    /// Packets the current 1-RTT keys may seal (RFC 9001 §6.6).
    fn one_rtt_confidentiality_limit(&self) -> u64 {
        self.confidentiality_limit.unwrap_or_else(|| {
            self.spaces[SpaceId::Data]
                .keys
                .as_deref()
                .map_or(u64::MAX, |keys| keys.confidentiality_limit())
        })
    }

    /// The current 1-RTT keys have sealed all the packets they may: they
    /// seal no more (RFC 9001 §6.6).
    pub(super) fn one_rtt_keys_exhausted(&self) -> bool {
        self.key_phases.sent_in_phase >= self.one_rtt_confidentiality_limit()
    }

    /// Starts a key update if one is due (see the module docs); closes with
    /// AEAD_LIMIT_REACHED if one is needed and cannot be made in time.
    pub(super) fn maybe_initiate_key_update(&mut self) {
        let phases = &self.key_phases;
        let limit = self.one_rtt_confidentiality_limit();
        let forced = self
            .config
            .key_update_interval
            .is_some_and(|interval| phases.sent_in_phase >= interval);
        let near_limit = phases.sent_in_phase >= limit.saturating_sub(CONFIDENTIALITY_MARGIN);
        if !(forced || near_limit) {
            return;
        }
        if self.handshake_confirmed && phases.next.is_some() && phases.current_phase_acked {
            tracing::debug!(sent = phases.sent_in_phase, "initiating a key update");
            self.rotate_keys();
            return;
        }
        // The update waits for confirmation or an acknowledgement in this
        // phase (RFC 9001 §6.1), or the cipher has none (Null): the limit
        // still holds.
        if phases.sent_in_phase >= limit.saturating_sub(CLOSE_RESERVE) && !self.is_closing() {
            let sent = phases.sent_in_phase;
            tracing::warn!(remote = %self.remote, sent, limit, "closing: the keys near their confidentiality limit and cannot be updated");
            self.fail(TransportFailure::new(
                codes::AEAD_LIMIT_REACHED,
                format!("{sent} packets sealed under one key of a {limit}-packet limit, and no key update possible"),
            ));
        }
    }

    /// The one line both sides give when the client's protection and the
    /// server's differ (`client_asked` is the client's choice).
    pub(super) fn protection_mismatch_reason(client_asked: Protection) -> String {
        let server_requires = match client_asked {
            Protection::Null => Protection::Tls,
            Protection::Tls => Protection::Null,
        };
        format!(
            "protection mismatch: the client asked for {}, the server requires {}",
            client_asked.describe(),
            server_requires.describe()
        )
    }

    /// The transport error code for a protection mismatch.
    pub(super) const PROTECTION_MISMATCH_CODE: u64 = codes::CONNECTION_REFUSED;
}

#[cfg(test)]
impl KeyPhases {
    /// The next phase's keys, derived ahead of any packet that needs them.
    pub(super) fn next_keys(&self) -> Option<&dyn PacketProtection> {
        self.next.as_deref()
    }

    /// The previous phase's keys, kept for packets sent before the update.
    pub(super) fn previous_keys(&self) -> Option<&dyn PacketProtection> {
        self.previous.as_deref()
    }

    /// The lowest packet number opened with this phase's keys.
    pub(super) fn lowest_received_in_phase(&self) -> Option<u64> {
        self.received_in_phase.map(|(lowest, _)| lowest)
    }

    /// Pretends `sent` packets went out in this phase (the confidentiality
    /// limit is millions of packets away).
    pub(super) fn set_sent_in_phase(&mut self, sent: u64) {
        self.sent_in_phase = sent;
    }
}
