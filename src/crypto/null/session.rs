//! The Null-mode handshake: transport parameters in plaintext, in the same
//! flights and at the same levels TLS 1.3 uses, so the connection drives both
//! modes the same way:
//!
//! ```text
//! client Initial    CLIENT_HELLO(params)            →
//!                   ← SERVER_HELLO(params)          server Initial
//!                   ← FINISHED                      server Handshake
//! client Handshake  FINISHED                        →   (both complete)
//!                   ← HANDSHAKE_DONE                server 1-RTT (confirmed)
//! ```
//! A message is `type(1) length(varint) body`.

use std::collections::VecDeque;

use super::NullProtection;
use crate::crypto::session::{HandshakeError, KeyChange, Session};
use crate::crypto::Level;
use crate::wire::{put_varint, Reader, TransportParams};
use crate::Side;

const CLIENT_HELLO: u8 = 1;
const SERVER_HELLO: u8 = 2;
const FINISHED: u8 = 20;
/// No handshake message of ours comes close; a peer sending more is broken.
const MAX_MESSAGE_LEN: u64 = 16 * 1024;

/// Something to hand out from `write_handshake`, in order.
#[derive(Debug)]
enum Outgoing {
    Bytes(Vec<u8>),
    Keys(Level),
}

/// One side of a Null-mode handshake.
#[derive(Debug)]
pub struct NullSession {
    side: Side,
    local_params: Vec<u8>,
    peer_params: Option<TransportParams>,
    /// In-order bytes per level not yet parsed into a whole message.
    partial: [Vec<u8>; 3],
    outgoing: VecDeque<Outgoing>,
    complete: bool,
}

fn message(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![kind];
    put_varint(&mut out, body.len() as u64);
    out.extend_from_slice(body);
    out
}

/// Pops one complete message off the front of `buffer`, if there is one.
fn next_message(buffer: &mut Vec<u8>) -> Result<Option<(u8, Vec<u8>)>, HandshakeError> {
    let mut reader = Reader::new(buffer);
    let Ok(kind) = reader.u8() else {
        return Ok(None);
    };
    let Ok(len) = reader.varint() else {
        return Ok(None);
    };
    if len > MAX_MESSAGE_LEN {
        return Err(HandshakeError::MessageTooLong(len));
    }
    let Ok(body) = reader.bytes(len as usize) else {
        return Ok(None);
    };
    let body = body.to_vec();
    let consumed = reader.position();
    buffer.drain(..consumed);
    Ok(Some((kind, body)))
}

impl NullSession {
    /// A client queues its hello at once; a server waits for the client's.
    /// `local_params` are our encoded transport parameters.
    pub fn new(side: Side, local_params: Vec<u8>) -> Self {
        let mut session = Self {
            side,
            local_params,
            peer_params: None,
            partial: Default::default(),
            outgoing: VecDeque::new(),
            complete: false,
        };
        if side == Side::Client {
            let hello = message(CLIENT_HELLO, &session.local_params);
            session.outgoing.push_back(Outgoing::Bytes(hello));
        }
        session
    }

    fn on_message(&mut self, level: Level, kind: u8, body: &[u8]) -> Result<(), HandshakeError> {
        let decode = |body: &[u8]| {
            TransportParams::decode(body).map_err(HandshakeError::TransportParameters)
        };
        match (self.side, level, kind) {
            (Side::Server, Level::Initial, CLIENT_HELLO) if self.peer_params.is_none() => {
                self.peer_params = Some(decode(body)?);
                let hello = message(SERVER_HELLO, &self.local_params);
                self.outgoing.extend([
                    Outgoing::Bytes(hello),
                    Outgoing::Keys(Level::Handshake),
                    Outgoing::Bytes(message(FINISHED, &[])),
                    Outgoing::Keys(Level::OneRtt),
                ]);
            }
            (Side::Client, Level::Initial, SERVER_HELLO) if self.peer_params.is_none() => {
                self.peer_params = Some(decode(body)?);
                self.outgoing.push_back(Outgoing::Keys(Level::Handshake));
            }
            (Side::Client, Level::Handshake, FINISHED)
                if self.peer_params.is_some() && !self.complete =>
            {
                self.outgoing.extend([
                    Outgoing::Bytes(message(FINISHED, &[])),
                    Outgoing::Keys(Level::OneRtt),
                ]);
                self.complete = true;
            }
            (Side::Server, Level::Handshake, FINISHED)
                if self.peer_params.is_some() && !self.complete =>
            {
                self.complete = true;
            }
            (_, level, message) => {
                return Err(HandshakeError::UnexpectedMessage { message, level })
            }
        }
        Ok(())
    }
}

impl Session for NullSession {
    fn read_handshake(&mut self, level: Level, data: &[u8]) -> Result<(), HandshakeError> {
        let index = level.index();
        self.partial[index].extend_from_slice(data);
        while let Some((kind, body)) = next_message(&mut self.partial[index])? {
            self.on_message(level, kind, &body)?;
        }
        Ok(())
    }

    fn write_handshake(&mut self, buf: &mut Vec<u8>) -> Option<KeyChange> {
        while let Some(next) = self.outgoing.pop_front() {
            match next {
                Outgoing::Bytes(bytes) => buf.extend_from_slice(&bytes),
                Outgoing::Keys(Level::Handshake) => {
                    return Some(KeyChange::Handshake(Box::new(NullProtection)))
                }
                Outgoing::Keys(_) => return Some(KeyChange::OneRtt(Box::new(NullProtection))),
            }
        }
        None
    }

    fn is_handshaking(&self) -> bool {
        !self.complete
    }

    fn peer_params(&self) -> Result<Option<TransportParams>, HandshakeError> {
        Ok(self.peer_params.clone())
    }

    fn next_one_rtt_keys(&mut self) -> Option<Box<dyn crate::crypto::PacketProtection>> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded_params() -> Vec<u8> {
        let mut params = Vec::new();
        TransportParams::default().encode(&mut params);
        params
    }

    /// Drains `session`'s output: (level, bytes) pairs and the key changes.
    fn drain(session: &mut NullSession, level: &mut Level) -> Vec<(Level, Vec<u8>)> {
        let mut out = Vec::new();
        loop {
            let mut bytes = Vec::new();
            let change = session.write_handshake(&mut bytes);
            if !bytes.is_empty() {
                out.push((*level, bytes));
            }
            match change {
                Some(KeyChange::Handshake(_)) => *level = Level::Handshake,
                Some(KeyChange::OneRtt(_)) => *level = Level::OneRtt,
                None => return out,
            }
        }
    }

    #[test]
    fn flights_complete_both_sides_even_when_split_into_small_reads() {
        let mut client = NullSession::new(Side::Client, encoded_params());
        let mut server = NullSession::new(Side::Server, encoded_params());
        let (mut client_level, mut server_level) = (Level::Initial, Level::Initial);
        for (level, bytes) in drain(&mut client, &mut client_level) {
            for piece in bytes.chunks(3) {
                server.read_handshake(level, piece).unwrap();
            }
        }
        assert!(server.peer_params().unwrap().is_some());
        let flight = drain(&mut server, &mut server_level);
        assert_eq!(server_level, Level::OneRtt, "0.5-RTT keys for the server");
        assert_eq!(
            flight.iter().map(|(level, _)| *level).collect::<Vec<_>>(),
            [Level::Initial, Level::Handshake]
        );
        let mut client_flight = Vec::new();
        for (level, bytes) in flight {
            client.read_handshake(level, &bytes).unwrap();
            client_flight.extend(drain(&mut client, &mut client_level));
        }
        assert!(!client.is_handshaking());
        assert_eq!(client_level, Level::OneRtt);
        assert!(server.is_handshaking());
        assert_eq!(
            client_flight,
            [(Level::Handshake, message(FINISHED, &[]))],
            "the client's FINISHED goes out at Handshake, before its 1-RTT keys"
        );
        for (level, bytes) in client_flight {
            server.read_handshake(level, &bytes).unwrap();
        }
        assert!(!server.is_handshaking());
    }

    #[test]
    fn out_of_place_message_is_an_error() {
        let mut client = NullSession::new(Side::Client, encoded_params());
        let err = client
            .read_handshake(Level::Initial, &message(FINISHED, &[]))
            .unwrap_err();
        assert!(matches!(
            err,
            HandshakeError::UnexpectedMessage {
                message: FINISHED,
                ..
            }
        ));
    }

    #[test]
    fn oversized_message_is_refused() {
        let mut server = NullSession::new(Side::Server, encoded_params());
        let mut huge = vec![CLIENT_HELLO];
        put_varint(&mut huge, MAX_MESSAGE_LEN + 1);
        assert_eq!(
            server.read_handshake(Level::Initial, &huge),
            Err(HandshakeError::MessageTooLong(MAX_MESSAGE_LEN + 1))
        );
    }
}
