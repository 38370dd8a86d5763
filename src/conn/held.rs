//! 1-RTT packets that arrive before the handshake completes, held unread.
//!
//! RFC 9001 §5.7: neither side may decrypt the peer's 1-RTT packets before
//! its handshake completes. A server has the keys early (they come with its
//! own flight), but until the client's Finished arrives the client is not
//! authenticated and its 1-RTT frames (stream data, acknowledgements of
//! 0.5-RTT data, path probes) must not be acted on, nor acknowledged. The
//! RFC lets them be stored and opened later: a client's Finished lost or
//! overtaken by its first request would otherwise cost that request a loss
//! and a retransmission. So a few are held, still protected, and received
//! in arrival order once the handshake completes; the rest are dropped.
//!
//! Bounded: at most [`MAX_HELD_BYTES`] per connection, whoever sends them
//! (an unauthenticated peer can fill the hold, never grow it).

use std::time::Instant;

use super::{Connection, Level, Side};
use crate::recovery::SpaceId;
use crate::wire::Ecn;

/// Bytes of 1-RTT packets held per connection, at most: a handful of full
/// datagrams, what a client's first flight of requests fills.
pub const MAX_HELD_BYTES: usize = 16 * 1024;

/// Protected 1-RTT packets waiting for the handshake to complete.
#[derive(Debug, Default)]
pub(super) struct HeldPackets {
    /// Each packet's bytes and the size and ECN field of the datagram it
    /// came in.
    packets: Vec<(Vec<u8>, usize, Ecn)>,
    bytes: usize,
}

impl HeldPackets {
    /// Holds `packet` (from a datagram of `datagram_len` bytes that
    /// arrived with `ecn`) if there is room; whether it was held.
    pub fn hold(&mut self, packet: &[u8], datagram_len: usize, ecn: Ecn) -> bool {
        if self.bytes + packet.len() > MAX_HELD_BYTES {
            return false;
        }
        self.bytes += packet.len();
        self.packets.push((packet.to_vec(), datagram_len, ecn));
        true
    }

    /// Whether anything is held.
    pub fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }

    /// Everything held, in arrival order, emptying the hold.
    fn take(&mut self) -> Vec<(Vec<u8>, usize, Ecn)> {
        self.bytes = 0;
        std::mem::take(&mut self.packets)
    }
}

impl Connection {
    /// Whether the peer's 1-RTT packets may be opened: only once the
    /// handshake has completed (RFC 9001 §5.7).
    pub(super) fn may_open_one_rtt(&self) -> bool {
        self.handshake.is_complete()
    }

    /// A 1-RTT packet arrived before the handshake completed: hold it
    /// unread, or drop it when the hold is full.
    pub(super) fn hold_one_rtt(&mut self, packet: &[u8]) {
        if self
            .held
            .hold(packet, self.recv_datagram_len, self.recv_ecn)
        {
            self.counters.one_rtt_held += 1;
            self.probe_for_finished();
        } else {
            self.counters.undecryptable_dropped += 1;
        }
    }

    /// Receives the held packets once the handshake has completed, as if
    /// they arrived now, each with the size and ECN field of its own
    /// datagram.
    pub(super) fn receive_held(&mut self, now: Instant) {
        if self.held.is_empty() || !self.may_open_one_rtt() {
            return;
        }
        let (datagram_len, ecn) = (self.recv_datagram_len, self.recv_ecn);
        for (mut packet, held_datagram_len, held_ecn) in self.held.take() {
            if self.is_closing() {
                break;
            }
            self.recv_datagram_len = held_datagram_len;
            self.recv_ecn = held_ecn;
            let _ = self.recv_packet(&mut packet, now);
        }
        self.recv_datagram_len = datagram_len;
        self.recv_ecn = ecn;
    }
    /// A server that holds the client's 1-RTT packets knows the client
    /// sent its Finished, and that it has not arrived: lost, or overtaken.
    /// One Handshake probe asks for it now (the client answers a probe with
    /// its flight, `resend_crypto_on_peer_probe`), instead of the client's
    /// own timeout, which its first RTT sample sets at three round trips
    /// (srtt + 4·srtt/2): on a 600 ms path, 1.8 s for every lost Finished.
    fn probe_for_finished(&mut self) {
        if self.side != Side::Server
            || self.probed_for_finished
            || !self.config.recovery.resend_crypto_on_peer_probe
            || self.sealing_keys(SpaceId::Handshake).is_none()
            || self.handshake.has_pending(Level::Handshake)
        {
            return;
        }
        self.probed_for_finished = true;
        let probes = &mut self.spaces[SpaceId::Handshake].probes;
        *probes = (*probes).max(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hold_keeps_packets_in_order_up_to_its_byte_bound() {
        let mut held = HeldPackets::default();
        assert!(held.hold(&[1; 1000], 1200, Ecn::NotEct));
        assert!(held.hold(&[2; 1000], 1300, Ecn::Ect0));
        assert!(
            !held.hold(&[3; MAX_HELD_BYTES], 1400, Ecn::NotEct),
            "beyond the bound"
        );
        let taken = held.take();
        assert_eq!(taken.len(), 2);
        assert_eq!((taken[0].0[0], taken[0].1), (1, 1200));
        assert_eq!(
            (taken[1].0[0], taken[1].1, taken[1].2),
            (2, 1300, Ecn::Ect0)
        );
        assert!(held.is_empty());
        assert!(
            held.hold(&[4; MAX_HELD_BYTES], 1400, Ecn::NotEct),
            "room again once taken"
        );
    }
}
