//! Forged packets, for the simulator's attacker (`sim::attacker`) only:
//! a client that finished a handshake holds its connection's keys and can
//! seal any frames it likes, then send the datagram from any address it
//! likes. The transport never calls this.

use std::time::Instant;

use super::{Connection, State};
use crate::recovery::{SentPacket, SpaceId};

impl Connection {
    /// Seals `frames` (encoded frames, PADDING included) as the next 1-RTT
    /// packet, alone in a datagram written to `out`, and returns its length;
    /// `None` before the handshake has 1-RTT keys or once closing. The
    /// packet counts as sent (so the peer's ACK of it is expected), carries
    /// nothing to retransmit and goes wherever the caller sends it.
    #[doc(hidden)]
    pub fn forge_one_rtt(&mut self, frames: &[u8], out: &mut [u8], now: Instant) -> Option<usize> {
        if self.state != State::Established || self.close_frame.is_some() {
            return None;
        }
        let space = SpaceId::Data;
        self.spaces[space].keys.as_ref()?;
        let packet_number = self
            .skips
            .next_packet_number(&mut self.spaces[space].next_packet_number);
        let len = self.seal_alone(space, packet_number, frames.to_vec(), out, now)?;
        self.recovery.on_packet_sent(
            space,
            SentPacket {
                packet_number,
                time_sent: now,
                size: len as u64,
                ack_eliciting: true,
                in_flight: true,
                app_limited: true,
                pmtu_probe: false,
                ecn: crate::wire::Ecn::NotEct,
                delivery: Default::default(),
                frames: Vec::new(),
            },
            now,
        );
        self.counters.packets_sent += 1;
        Some(len)
    }
}
