//! The handshake, as a session that reads and writes CRYPTO data per level.
//!
//! Null mode exchanges transport parameters in plaintext, but in the same
//! flights TLS 1.3 uses, so TLS later only has to supply the bytes and keys:
//!
//! ```text
//! client Initial    CLIENT_HELLO(params)            →
//!                   ← SERVER_HELLO(params)          server Initial
//!                   ← FINISHED                      server Handshake
//! client Handshake  FINISHED                        →   (both complete)
//!                   ← HANDSHAKE_DONE                server 1-RTT (confirmed)
//! ```
//! A message is `type(1) length(varint) body`.

use std::collections::{BTreeMap, VecDeque};

use crate::crypto::Level;
use crate::wire::{put_varint, Reader, TransportParams, WireError};
use crate::Side;

const CLIENT_HELLO: u8 = 1;
const SERVER_HELLO: u8 = 2;
const FINISHED: u8 = 20;
/// No handshake message of ours comes close; a peer sending more is broken.
const MAX_MESSAGE_LEN: u64 = 16 * 1024;
/// Out-of-order CRYPTO data buffered per level, at most (RFC 9000 §7.5
/// requires at least 4096).
const MAX_CRYPTO_BUFFER: u64 = 64 * 1024;

/// What went wrong in the handshake; closes the connection.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    #[error("unexpected handshake message {message} at {level:?}")]
    UnexpectedMessage { message: u8, level: Level },
    #[error("handshake message of {0} bytes exceeds the limit")]
    MessageTooLong(u64),
    #[error("CRYPTO data beyond the buffer limit at {0:?}")]
    BufferExceeded(Level),
    #[error("malformed transport parameters: {0}")]
    TransportParameters(WireError),
}

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
    assembled: Vec<u8>,
}

impl CryptoRecv {
    fn insert(&mut self, offset: u64, data: &[u8], level: Level) -> Result<(), HandshakeError> {
        let end = offset.saturating_add(data.len() as u64);
        if end <= self.read_offset {
            return Ok(()); // a retransmission of what we have
        }
        if end > self.read_offset + MAX_CRYPTO_BUFFER {
            return Err(HandshakeError::BufferExceeded(level));
        }
        self.segments.insert(offset, data.to_vec());
        // Move whatever is now contiguous into `assembled`.
        while let Some((&start, _)) = self.segments.first_key_value() {
            if start > self.read_offset {
                break;
            }
            let Some((start, bytes)) = self.segments.pop_first() else {
                break;
            };
            let skip = (self.read_offset - start) as usize;
            if skip < bytes.len() {
                self.assembled.extend_from_slice(&bytes[skip..]);
                self.read_offset += (bytes.len() - skip) as u64;
            }
        }
        Ok(())
    }

    /// Pops one complete message, if there is one.
    fn next_message(&mut self) -> Result<Option<(u8, Vec<u8>)>, HandshakeError> {
        let mut reader = Reader::new(&self.assembled);
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
        self.assembled.drain(..consumed);
        Ok(Some((kind, body)))
    }
}

/// What the connection must do after feeding the session CRYPTO data.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Handshake-level keys became available.
    pub handshake_keys: bool,
    /// The handshake completed (1-RTT keys for both directions).
    pub complete: bool,
}

/// The Null-mode handshake session.
#[derive(Debug)]
pub struct NullHandshake {
    side: Side,
    local_params: TransportParams,
    peer_params: Option<TransportParams>,
    send: [CryptoSend; 3],
    recv: [CryptoRecv; 3],
    complete: bool,
}

fn level_index(level: Level) -> usize {
    match level {
        Level::Initial => 0,
        Level::Handshake => 1,
        Level::OneRtt => 2,
    }
}

fn message(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![kind];
    put_varint(&mut out, body.len() as u64);
    out.extend_from_slice(body);
    out
}

impl NullHandshake {
    /// A client queues its hello at once; a server waits for the client's.
    pub fn new(side: Side, local_params: TransportParams) -> Self {
        let mut session = Self {
            side,
            local_params,
            peer_params: None,
            send: Default::default(),
            recv: Default::default(),
            complete: false,
        };
        if side == Side::Client {
            let mut params = Vec::new();
            session.local_params.encode(&mut params);
            session.queue(Level::Initial, message(CLIENT_HELLO, &params));
        }
        session
    }

    fn queue(&mut self, level: Level, bytes: Vec<u8>) {
        let send = &mut self.send[level_index(level)];
        send.pending.push_back((send.next_offset, bytes.clone()));
        send.next_offset += bytes.len() as u64;
    }

    /// The peer's transport parameters, once received.
    pub fn peer_params(&self) -> Option<&TransportParams> {
        self.peer_params.as_ref()
    }

    /// Our own parameters (the server fills in connection IDs late).
    pub fn local_params_mut(&mut self) -> &mut TransportParams {
        &mut self.local_params
    }

    pub fn is_complete(&self) -> bool {
        self.complete
    }

    /// CRYPTO data waiting to be sent at `level`.
    pub fn has_pending(&self, level: Level) -> bool {
        !self.send[level_index(level)].pending.is_empty()
    }

    /// Takes up to `max_len` bytes of pending CRYPTO data at `level`.
    pub fn poll_crypto(&mut self, level: Level, max_len: usize) -> Option<(u64, Vec<u8>)> {
        if max_len == 0 {
            return None;
        }
        let send = &mut self.send[level_index(level)];
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
        let send = &mut self.send[level_index(level)];
        if !send
            .pending
            .iter()
            .any(|(o, b)| *o == offset && b.len() == bytes.len())
        {
            send.pending.push_front((offset, bytes));
        }
    }

    /// Feeds received CRYPTO data; processes any complete messages.
    pub fn on_crypto(
        &mut self,
        level: Level,
        offset: u64,
        data: &[u8],
    ) -> Result<Progress, HandshakeError> {
        let index = level_index(level);
        self.recv[index].insert(offset, data, level)?;
        let mut progress = Progress::default();
        while let Some((kind, body)) = self.recv[index].next_message()? {
            match (self.side, level, kind) {
                (Side::Server, Level::Initial, CLIENT_HELLO) if self.peer_params.is_none() => {
                    self.peer_params = Some(
                        TransportParams::decode(&body)
                            .map_err(HandshakeError::TransportParameters)?,
                    );
                    let mut params = Vec::new();
                    self.local_params.encode(&mut params);
                    self.queue(Level::Initial, message(SERVER_HELLO, &params));
                    self.queue(Level::Handshake, message(FINISHED, &[]));
                    progress.handshake_keys = true;
                }
                (Side::Client, Level::Initial, SERVER_HELLO) if self.peer_params.is_none() => {
                    self.peer_params = Some(
                        TransportParams::decode(&body)
                            .map_err(HandshakeError::TransportParameters)?,
                    );
                    progress.handshake_keys = true;
                }
                (Side::Client, Level::Handshake, FINISHED)
                    if self.peer_params.is_some() && !self.complete =>
                {
                    self.queue(Level::Handshake, message(FINISHED, &[]));
                    self.complete = true;
                    progress.complete = true;
                }
                (Side::Server, Level::Handshake, FINISHED)
                    if self.peer_params.is_some() && !self.complete =>
                {
                    self.complete = true;
                    progress.complete = true;
                }
                (_, level, message) => {
                    return Err(HandshakeError::UnexpectedMessage { message, level })
                }
            }
        }
        Ok(progress)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(session: &mut NullHandshake, level: Level) -> Vec<(u64, Vec<u8>)> {
        std::iter::from_fn(|| session.poll_crypto(level, 7)).collect()
    }

    #[test]
    fn flights_complete_both_sides_even_with_reordered_fragments() {
        let mut client = NullHandshake::new(Side::Client, TransportParams::default());
        let mut server = NullHandshake::new(Side::Server, TransportParams::default());
        // Deliver the client hello in 7-byte fragments, last first.
        let mut hello = drain(&mut client, Level::Initial);
        hello.reverse();
        let mut progress = Progress::default();
        for (offset, bytes) in &hello {
            let p = server.on_crypto(Level::Initial, *offset, bytes).unwrap();
            progress.handshake_keys |= p.handshake_keys;
        }
        assert!(progress.handshake_keys);
        for (offset, bytes) in drain(&mut server, Level::Initial) {
            client.on_crypto(Level::Initial, offset, &bytes).unwrap();
        }
        assert!(client.peer_params().is_some());
        for (offset, bytes) in drain(&mut server, Level::Handshake) {
            client.on_crypto(Level::Handshake, offset, &bytes).unwrap();
        }
        assert!(client.is_complete());
        let mut done = false;
        for (offset, bytes) in drain(&mut client, Level::Handshake) {
            done |= server
                .on_crypto(Level::Handshake, offset, &bytes)
                .unwrap()
                .complete;
        }
        assert!(done && server.is_complete());
    }

    #[test]
    fn out_of_place_message_is_an_error() {
        let mut client = NullHandshake::new(Side::Client, TransportParams::default());
        let err = client
            .on_crypto(Level::Initial, 0, &message(FINISHED, &[]))
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
    fn oversized_crypto_offset_is_refused() {
        let mut server = NullHandshake::new(Side::Server, TransportParams::default());
        assert_eq!(
            server.on_crypto(Level::Initial, 1 << 40, b"x"),
            Err(HandshakeError::BufferExceeded(Level::Initial))
        );
    }
}
