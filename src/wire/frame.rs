//! Frames (DESIGN §3): a varint type, then varint fields, with the type
//! numbers of RFC 9000 §19 where QUIC has the frame, plus CORRUPTED (0x20).
//!
//! Decoding borrows every byte string from the payload, checks every length
//! against what remains, and never allocates: ACK and CORRUPTED ranges are
//! validated once and then iterated lazily from the raw bytes.

use std::fmt;
use std::iter::FusedIterator;
use std::ops::RangeInclusive;

use super::cid::{ConnectionId, MAX_CID_LEN};
use super::ranges::RangeSet;
use super::transport_params::RESET_TOKEN_LEN;
use super::varint::{put_varint, varint_len, Reader, VARINT_MAX};
use super::WireError;

/// Frame type numbers (RFC 9000 §19 and §12.4 Table 3; DATAGRAM from RFC
/// 9221 §4; IMMEDIATE_ACK and ACK_FREQUENCY from
/// draft-ietf-quic-ack-frequency-13; CORRUPTED is sift's own). All but
/// ACK_FREQUENCY (two bytes) are below 64: one byte on the wire.
pub mod frame_type {
    /// PADDING (RFC 9000 §19.1).
    pub const PADDING: u64 = 0x00;
    /// PING (§19.2).
    pub const PING: u64 = 0x01;
    /// ACK without ECN counts (§19.3).
    pub const ACK: u64 = 0x02;
    /// ACK with ECN counts (§19.3.2).
    pub const ACK_ECN: u64 = 0x03;
    /// RESET_STREAM (§19.4).
    pub const RESET_STREAM: u64 = 0x04;
    /// STOP_SENDING (§19.5).
    pub const STOP_SENDING: u64 = 0x05;
    /// CRYPTO (§19.6).
    pub const CRYPTO: u64 = 0x06;
    /// NEW_TOKEN (§19.7).
    pub const NEW_TOKEN: u64 = 0x07;
    /// STREAM is 0x08..=0x0f; the low three bits are OFF, LEN and FIN.
    pub const STREAM: u64 = 0x08;
    /// The last STREAM type (all three flag bits set).
    pub const STREAM_LAST: u64 = 0x0f;
    /// STREAM flag: an offset field is present (RFC 9000 §19.8).
    pub const STREAM_OFF_BIT: u64 = 0x04;
    /// STREAM flag: a length field is present; without it the data runs to
    /// the end of the packet.
    pub const STREAM_LEN_BIT: u64 = 0x02;
    /// STREAM flag: this data ends the stream.
    pub const STREAM_FIN_BIT: u64 = 0x01;
    /// MAX_DATA (§19.9).
    pub const MAX_DATA: u64 = 0x10;
    /// MAX_STREAM_DATA (§19.10).
    pub const MAX_STREAM_DATA: u64 = 0x11;
    /// MAX_STREAMS for bidirectional streams (§19.11).
    pub const MAX_STREAMS_BIDI: u64 = 0x12;
    /// MAX_STREAMS for unidirectional streams (§19.11).
    pub const MAX_STREAMS_UNI: u64 = 0x13;
    /// DATA_BLOCKED (§19.12).
    pub const DATA_BLOCKED: u64 = 0x14;
    /// STREAM_DATA_BLOCKED (§19.13).
    pub const STREAM_DATA_BLOCKED: u64 = 0x15;
    /// STREAMS_BLOCKED for bidirectional streams (§19.14).
    pub const STREAMS_BLOCKED_BIDI: u64 = 0x16;
    /// STREAMS_BLOCKED for unidirectional streams (§19.14).
    pub const STREAMS_BLOCKED_UNI: u64 = 0x17;
    /// NEW_CONNECTION_ID (§19.15).
    pub const NEW_CONNECTION_ID: u64 = 0x18;
    /// RETIRE_CONNECTION_ID (§19.16).
    pub const RETIRE_CONNECTION_ID: u64 = 0x19;
    /// PATH_CHALLENGE (§19.17): 8 unpredictable bytes to echo.
    pub const PATH_CHALLENGE: u64 = 0x1a;
    /// PATH_RESPONSE (§19.18): the echo.
    pub const PATH_RESPONSE: u64 = 0x1b;
    /// CONNECTION_CLOSE for transport errors (§19.19).
    pub const CONNECTION_CLOSE: u64 = 0x1c;
    /// CONNECTION_CLOSE for application errors (§19.19).
    pub const CONNECTION_CLOSE_APPLICATION: u64 = 0x1d;
    /// HANDSHAKE_DONE (§19.20).
    pub const HANDSHAKE_DONE: u64 = 0x1e;
    /// draft-ietf-quic-ack-frequency-13 §5: IMMEDIATE_ACK.
    pub const IMMEDIATE_ACK: u64 = 0x1f;
    /// draft-ietf-quic-ack-frequency-13 §4: ACK_FREQUENCY.
    pub const ACK_FREQUENCY: u64 = 0xaf;
    /// Packet numbers whose header verified and whose payload did not
    /// (DESIGN §5; the HACK option of Balan et al.).
    pub const CORRUPTED: u64 = 0x20;
    /// DATAGRAM without a length: runs to the end of the packet.
    pub const DATAGRAM: u64 = 0x30;
    /// DATAGRAM with a length field.
    pub const DATAGRAM_WITH_LEN: u64 = 0x31;
    /// A repair symbol over recent packets (sift's erasure coding,
    /// `docs/repair.md`); the transport parameter's number, so as to stay
    /// clear of registered frame types.
    pub const REPAIR: u64 = 0x5ac2;
    /// How many packets the receiver has rebuilt from repair symbols.
    pub const REPAIRED: u64 = 0x5ac3;
}

/// Most (gap, range length) pairs accepted after the first range of an ACK
/// or CORRUPTED frame. Bounds decoding work; encoders never write more.
pub const MAX_ACK_RANGES: u64 = 1024;

/// RFC 9000 §19.11: stream counts cannot exceed 2^60 (stream IDs are 62 bits
/// with two type bits).
const MAX_STREAM_COUNT: u64 = 1 << 60;

/// Ranges of packet numbers as an ACK or CORRUPTED frame carries them (RFC
/// 9000 §19.3.1): the largest number, the first range below it, then
/// (gap, range length) pairs, all validated at decode and read lazily.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct AckRanges<'a> {
    largest: u64,
    first_range: u64,
    /// Number of (gap, range length) pairs in `pairs` ("ACK Range Count").
    additional_ranges: u64,
    /// Smallest packet number of the last range, found while validating.
    smallest: u64,
    /// The encoded (gap, range length) pairs.
    pairs: &'a [u8],
}

impl<'a> AckRanges<'a> {
    /// Reads and validates `largest, [ack_delay], range_count, first_range,
    /// pairs`; returns the ack delay (0 when `with_delay` is false) and the
    /// ranges.
    fn decode(
        reader: &mut Reader<'a>,
        frame: &'static str,
        with_delay: bool,
    ) -> Result<(u64, Self), WireError> {
        let largest = reader.varint()?;
        let ack_delay = if with_delay { reader.varint()? } else { 0 };
        let additional_ranges = reader.varint()?;
        if additional_ranges > MAX_ACK_RANGES {
            return Err(WireError::TooManyRanges {
                count: additional_ranges,
                limit: MAX_ACK_RANGES,
            });
        }
        let first_range = reader.varint()?;
        let mut smallest =
            largest
                .checked_sub(first_range)
                .ok_or(WireError::AckRangeUnderflow {
                    frame,
                    range_index: 0,
                })?;
        let pairs_start = reader.clone();
        for range_index in 1..=additional_ranges {
            let gap = reader.varint()?;
            let range_len = reader.varint()?;
            smallest = next_range(smallest, gap, range_len)
                .ok_or(WireError::AckRangeUnderflow { frame, range_index })?
                .0;
        }
        let pairs_len = reader.position() - pairs_start.position();
        let pairs = pairs_start.rest().get(..pairs_len).unwrap_or(&[]);
        Ok((
            ack_delay,
            Self {
                largest,
                first_range,
                additional_ranges,
                smallest,
                pairs,
            },
        ))
    }

    /// Writes `largest, [ack_delay], range_count, first_range, pairs`.
    fn encode(&self, ack_delay: Option<u64>, out: &mut Vec<u8>) {
        put_varint(out, self.largest);
        if let Some(delay) = ack_delay {
            put_varint(out, delay);
        }
        put_varint(out, self.additional_ranges);
        put_varint(out, self.first_range);
        out.extend_from_slice(self.pairs);
    }

    fn encoded_len(&self) -> usize {
        varint_len(self.largest)
            + varint_len(self.additional_ranges)
            + varint_len(self.first_range)
            + self.pairs.len()
    }

    /// The largest packet number named.
    pub fn largest(&self) -> u64 {
        self.largest
    }

    /// The smallest packet number named.
    pub fn smallest(&self) -> u64 {
        self.smallest
    }

    /// How many ranges [`AckRanges::iter`] yields (at least 1).
    pub fn num_ranges(&self) -> u64 {
        self.additional_ranges + 1
    }

    /// The ranges, largest first, as inclusive packet-number ranges.
    pub fn iter(&self) -> AckRangesIter<'a> {
        AckRangesIter {
            pairs: Reader::new(self.pairs),
            next: Some(self.largest.saturating_sub(self.first_range)..=self.largest),
            ranges_left: self.additional_ranges,
        }
    }
}

/// The range below one whose smallest number is `smallest`, given the
/// encoded `gap` and `range_len` (RFC 9000 §19.3.1: largest = smallest -
/// gap - 2). Returns (smallest, largest), or None if it would go below 0.
fn next_range(smallest: u64, gap: u64, range_len: u64) -> Option<(u64, u64)> {
    let largest = smallest.checked_sub(gap)?.checked_sub(2)?;
    Some((largest.checked_sub(range_len)?, largest))
}

impl fmt::Debug for AckRanges<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> IntoIterator for &AckRanges<'a> {
    type Item = RangeInclusive<u64>;
    type IntoIter = AckRangesIter<'a>;

    fn into_iter(self) -> AckRangesIter<'a> {
        self.iter()
    }
}

/// Iterator over [`AckRanges`], largest range first.
#[derive(Clone, Debug)]
pub struct AckRangesIter<'a> {
    pairs: Reader<'a>,
    next: Option<RangeInclusive<u64>>,
    ranges_left: u64,
}

impl Iterator for AckRangesIter<'_> {
    type Item = RangeInclusive<u64>;

    fn next(&mut self) -> Option<RangeInclusive<u64>> {
        let current = self.next.take()?;
        if self.ranges_left > 0 {
            self.ranges_left -= 1;
            // Validated at decode, so these reads cannot fail; if they did,
            // iteration would simply end.
            if let (Ok(gap), Ok(range_len)) = (self.pairs.varint(), self.pairs.varint()) {
                self.next = next_range(*current.start(), gap, range_len)
                    .map(|(smallest, largest)| smallest..=largest);
            }
        }
        Some(current)
    }
}

impl FusedIterator for AckRangesIter<'_> {}

/// An ACK frame: ranges of received packet numbers and how long the
/// receiver held the largest before acknowledging it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckFrame<'a> {
    /// Delay between receiving the largest packet and sending this ACK, as
    /// the field says: in units of 2^ack_delay_exponent µs of its sender
    /// (sift sends exponent 0, so its own are µs; `conn` scales a peer's).
    pub ack_delay_micros: u64,
    /// The acknowledged packet numbers.
    pub ranges: AckRanges<'a>,
    /// ECT(0), ECT(1) and CE counts of an ACK_ECN frame (RFC 9000
    /// §19.3.2), in that order; `None` for a plain ACK.
    pub ecn_counts: Option<[u64; 3]>,
}

/// One frame, borrowing its byte strings from the decrypted payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A run of `len` zero bytes; consecutive ones are one frame on decode.
    Padding {
        /// Zero bytes.
        len: usize,
    },
    /// Elicits an ACK and nothing else (keep-alive, PTO probe).
    Ping,
    /// Packet numbers received, with the ack delay.
    Ack(AckFrame<'a>),
    /// Packet numbers whose header tag verified and payload tag did not.
    Corrupted(AckRanges<'a>),
    /// Handshake bytes at `offset` in this level's crypto stream.
    Crypto {
        /// Where `data` starts in the crypto stream.
        offset: u64,
        /// The bytes.
        data: &'a [u8],
    },
    /// Stream bytes at `offset`; `fin` marks the end of the stream.
    Stream {
        /// The stream ID.
        id: u64,
        /// Where `data` starts in the stream.
        offset: u64,
        /// The bytes.
        data: &'a [u8],
        /// The stream ends after `data`.
        fin: bool,
    },
    /// The sender abandons stream `id` after `final_size` bytes.
    ResetStream {
        /// The stream ID.
        id: u64,
        /// The application's error code.
        error_code: u64,
        /// Bytes sent on the stream before the reset.
        final_size: u64,
    },
    /// The receiver asks the sender to stop sending on stream `id`.
    StopSending {
        /// The stream ID.
        id: u64,
        /// The application's error code.
        error_code: u64,
    },
    /// Connection-level flow-control limit, in bytes.
    MaxData(u64),
    /// Stream-level flow-control limit, in bytes.
    MaxStreamData {
        /// The stream ID.
        id: u64,
        /// The limit, bytes.
        max: u64,
    },
    /// Cumulative number of streams of one direction the peer may open.
    MaxStreams {
        /// Bidirectional streams (else unidirectional).
        bidi: bool,
        /// The cumulative count.
        max: u64,
    },
    /// The sender is blocked by the connection limit `MaxData(limit)`.
    DataBlocked(u64),
    /// The sender is blocked by stream `id`'s limit.
    StreamDataBlocked {
        /// The stream ID.
        id: u64,
        /// The limit that stops the sender, bytes.
        limit: u64,
    },
    /// The sender is blocked by the stream-count limit.
    StreamsBlocked {
        /// Bidirectional streams (else unidirectional).
        bidi: bool,
        /// The count that stops the sender.
        limit: u64,
    },
    /// An address-validation token for a future connection.
    NewToken {
        /// The opaque token.
        token: &'a [u8],
    },
    /// The server confirms the handshake.
    HandshakeDone,
    /// How often the sender wants to be acknowledged
    /// (draft-ietf-quic-ack-frequency-13 §4).
    AckFrequency {
        /// Orders requests: a receiver ignores one not above the largest seen.
        sequence: u64,
        /// Ack-eliciting packets the receiver may take in without sending an
        /// ACK (RFC 9000's behaviour is 1).
        ack_eliciting_threshold: u64,
        /// The max_ack_delay the receiver should use from now on, µs.
        request_max_ack_delay_micros: u64,
        /// How far out of order a packet may arrive before it elicits an
        /// immediate ACK; 0: reordering never does.
        reordering_threshold: u64,
    },
    /// Asks for an ACK at once (draft-ietf-quic-ack-frequency-13 §5).
    ImmediateAck,
    /// Another connection ID the sender accepts (RFC 9000 §19.15).
    NewConnectionId {
        /// Its sequence number (the handshake's ID is 0).
        sequence: u64,
        /// The receiver should retire every ID numbered below this.
        retire_prior_to: u64,
        /// The ID, 1 to 20 bytes.
        cid: ConnectionId,
        /// The stateless reset token that goes with it.
        reset_token: [u8; RESET_TOKEN_LEN],
    },
    /// The sender no longer uses the receiver's connection ID `sequence`
    /// (RFC 9000 §19.16).
    RetireConnectionId {
        /// The retired ID's sequence number.
        sequence: u64,
    },
    /// Asks the peer to echo `data` on the path it arrived on (path
    /// validation, RFC 9000 §8.2).
    PathChallenge {
        /// The bytes to echo.
        data: [u8; 8],
    },
    /// Echoes a PATH_CHALLENGE.
    PathResponse {
        /// The challenge's bytes.
        data: [u8; 8],
    },
    /// A repair symbol over the packet numbers `first..=last`
    /// (`docs/repair.md` §3).
    Repair {
        /// The span's largest packet number.
        last: u64,
        /// The span's smallest packet number.
        first: u64,
        /// Chooses the span's coefficients.
        seed: u64,
        /// The coded bytes.
        symbol: &'a [u8],
    },
    /// Packets rebuilt from repair symbols so far, cumulative.
    Repaired(u64),
    /// An unreliable datagram (RFC 9221).
    Datagram {
        /// The datagram's bytes.
        data: &'a [u8],
    },
    /// Closes the connection. `frame_type` is the frame that caused a
    /// transport close; 0 (and not sent) for an application close.
    ConnectionClose {
        /// An application close (type 0x1d), else a transport close (0x1c).
        application: bool,
        /// The error code.
        error_code: u64,
        /// The frame type that caused a transport close.
        frame_type: u64,
        /// The reason phrase (UTF-8 by convention).
        reason: &'a [u8],
    },
}

impl<'a> Frame<'a> {
    /// Decodes one frame at the reader's position.
    pub fn decode(reader: &mut Reader<'a>) -> Result<Frame<'a>, WireError> {
        use frame_type::*;
        let type_start = reader.position();
        let ty = reader.varint()?;
        if reader.position() - type_start != varint_len(ty) {
            // RFC 9000 §12.4: frame types use the shortest encoding.
            return Err(WireError::InvalidFrame {
                frame: "frame type",
                reason: "type is not minimally encoded",
            });
        }
        let frame = match ty {
            PADDING => {
                let more_zeros = reader.rest().iter().take_while(|byte| **byte == 0).count();
                reader.bytes(more_zeros)?;
                Frame::Padding {
                    len: 1 + more_zeros,
                }
            }
            PING => Frame::Ping,
            ACK | ACK_ECN => {
                let (ack_delay_micros, ranges) = AckRanges::decode(reader, "ACK", true)?;
                let ecn_counts = if ty == ACK_ECN {
                    Some([reader.varint()?, reader.varint()?, reader.varint()?])
                } else {
                    None
                };
                Frame::Ack(AckFrame {
                    ack_delay_micros,
                    ranges,
                    ecn_counts,
                })
            }
            CORRUPTED => Frame::Corrupted(AckRanges::decode(reader, "CORRUPTED", false)?.1),
            REPAIR => {
                let last = reader.varint()?;
                let span = reader.varint()?;
                let first = last.checked_sub(span).ok_or(WireError::InvalidFrame {
                    frame: "REPAIR",
                    reason: "span reaches below packet number 0",
                })?;
                let seed = reader.varint()?;
                let symbol = length_prefixed(reader)?;
                Frame::Repair {
                    last,
                    first,
                    seed,
                    symbol,
                }
            }
            REPAIRED => Frame::Repaired(reader.varint()?),
            RESET_STREAM => {
                let id = reader.varint()?;
                let error_code = reader.varint()?;
                let final_size = reader.varint()?;
                Frame::ResetStream {
                    id,
                    error_code,
                    final_size,
                }
            }
            STOP_SENDING => {
                let id = reader.varint()?;
                let error_code = reader.varint()?;
                Frame::StopSending { id, error_code }
            }
            CRYPTO => {
                let offset = reader.varint()?;
                let data = length_prefixed(reader)?;
                check_end("CRYPTO", offset, data)?;
                Frame::Crypto { offset, data }
            }
            NEW_TOKEN => {
                let token = length_prefixed(reader)?;
                if token.is_empty() {
                    // RFC 9000 §19.7.
                    return Err(WireError::InvalidFrame {
                        frame: "NEW_TOKEN",
                        reason: "empty token",
                    });
                }
                Frame::NewToken { token }
            }
            STREAM..=STREAM_LAST => {
                let id = reader.varint()?;
                let offset = if ty & STREAM_OFF_BIT != 0 {
                    reader.varint()?
                } else {
                    0
                };
                let data = if ty & STREAM_LEN_BIT != 0 {
                    length_prefixed(reader)?
                } else {
                    reader.bytes(reader.remaining())?
                };
                check_end("STREAM", offset, data)?;
                Frame::Stream {
                    id,
                    offset,
                    data,
                    fin: ty & STREAM_FIN_BIT != 0,
                }
            }
            MAX_DATA => Frame::MaxData(reader.varint()?),
            MAX_STREAM_DATA => {
                let id = reader.varint()?;
                let max = reader.varint()?;
                Frame::MaxStreamData { id, max }
            }
            MAX_STREAMS_BIDI | MAX_STREAMS_UNI => Frame::MaxStreams {
                bidi: ty == MAX_STREAMS_BIDI,
                max: stream_count(reader, "MAX_STREAMS")?,
            },
            DATA_BLOCKED => Frame::DataBlocked(reader.varint()?),
            STREAM_DATA_BLOCKED => {
                let id = reader.varint()?;
                let limit = reader.varint()?;
                Frame::StreamDataBlocked { id, limit }
            }
            STREAMS_BLOCKED_BIDI | STREAMS_BLOCKED_UNI => Frame::StreamsBlocked {
                bidi: ty == STREAMS_BLOCKED_BIDI,
                limit: stream_count(reader, "STREAMS_BLOCKED")?,
            },
            CONNECTION_CLOSE | CONNECTION_CLOSE_APPLICATION => {
                let application = ty == CONNECTION_CLOSE_APPLICATION;
                let error_code = reader.varint()?;
                let frame_type = if application { 0 } else { reader.varint()? };
                let reason = length_prefixed(reader)?;
                Frame::ConnectionClose {
                    application,
                    error_code,
                    frame_type,
                    reason,
                }
            }
            HANDSHAKE_DONE => Frame::HandshakeDone,
            IMMEDIATE_ACK => Frame::ImmediateAck,
            ACK_FREQUENCY => Frame::AckFrequency {
                sequence: reader.varint()?,
                ack_eliciting_threshold: reader.varint()?,
                request_max_ack_delay_micros: reader.varint()?,
                reordering_threshold: reader.varint()?,
            },
            NEW_CONNECTION_ID => {
                let sequence = reader.varint()?;
                let retire_prior_to = reader.varint()?;
                let invalid = |reason| WireError::InvalidFrame {
                    frame: "NEW_CONNECTION_ID",
                    reason,
                };
                // RFC 9000 §19.15: both are frame encoding errors.
                if retire_prior_to > sequence {
                    return Err(invalid("retire_prior_to exceeds the sequence number"));
                }
                let len = usize::from(reader.bytes(1)?[0]);
                if !(1..=MAX_CID_LEN).contains(&len) {
                    return Err(invalid("connection ID length outside 1..=20"));
                }
                let cid = ConnectionId::new(reader.bytes(len)?)?;
                let mut reset_token = [0u8; RESET_TOKEN_LEN];
                reset_token.copy_from_slice(reader.bytes(RESET_TOKEN_LEN)?);
                Frame::NewConnectionId {
                    sequence,
                    retire_prior_to,
                    cid,
                    reset_token,
                }
            }
            RETIRE_CONNECTION_ID => Frame::RetireConnectionId {
                sequence: reader.varint()?,
            },
            PATH_CHALLENGE | PATH_RESPONSE => {
                let mut data = [0u8; 8];
                data.copy_from_slice(reader.bytes(8)?);
                if ty == PATH_CHALLENGE {
                    Frame::PathChallenge { data }
                } else {
                    Frame::PathResponse { data }
                }
            }
            DATAGRAM => Frame::Datagram {
                data: reader.bytes(reader.remaining())?,
            },
            DATAGRAM_WITH_LEN => Frame::Datagram {
                data: length_prefixed(reader)?,
            },
            unknown => return Err(WireError::UnknownFrameType(unknown)),
        };
        Ok(frame)
    }

    /// Appends the frame. STREAM frames always carry OFF and LEN, DATAGRAM
    /// frames always carry a length, so any frame may follow. Every integer
    /// field must be at most [`VARINT_MAX`] (the caller guarantees it).
    pub fn encode(&self, out: &mut Vec<u8>) {
        if let Frame::Padding { len } = *self {
            out.resize(out.len() + len, 0);
            return;
        }
        put_varint(out, self.frame_type());
        match *self {
            Frame::Padding { .. } | Frame::Ping | Frame::HandshakeDone | Frame::ImmediateAck => {}
            Frame::AckFrequency {
                sequence,
                ack_eliciting_threshold,
                request_max_ack_delay_micros,
                reordering_threshold,
            } => {
                put_varint(out, sequence);
                put_varint(out, ack_eliciting_threshold);
                put_varint(out, request_max_ack_delay_micros);
                put_varint(out, reordering_threshold);
            }
            Frame::PathChallenge { data } | Frame::PathResponse { data } => {
                out.extend_from_slice(&data)
            }
            Frame::Ack(ack) => {
                ack.ranges.encode(Some(ack.ack_delay_micros), out);
                for count in ack.ecn_counts.iter().flatten() {
                    put_varint(out, *count);
                }
            }
            Frame::Corrupted(ranges) => ranges.encode(None, out),
            Frame::Repair {
                last,
                first,
                seed,
                symbol,
            } => {
                put_varint(out, last);
                put_varint(out, last - first);
                put_varint(out, seed);
                put_length_prefixed(out, symbol);
            }
            Frame::Repaired(count) => put_varint(out, count),
            Frame::Crypto { offset, data } => {
                put_varint(out, offset);
                put_length_prefixed(out, data);
            }
            Frame::Stream {
                id, offset, data, ..
            } => {
                put_varint(out, id);
                put_varint(out, offset);
                put_length_prefixed(out, data);
            }
            Frame::ResetStream {
                id,
                error_code,
                final_size,
            } => {
                put_varint(out, id);
                put_varint(out, error_code);
                put_varint(out, final_size);
            }
            Frame::StopSending { id, error_code } => {
                put_varint(out, id);
                put_varint(out, error_code);
            }
            Frame::MaxData(value) | Frame::DataBlocked(value) => put_varint(out, value),
            Frame::MaxStreams { max: value, .. } | Frame::StreamsBlocked { limit: value, .. } => {
                put_varint(out, value)
            }
            Frame::MaxStreamData { id, max: value }
            | Frame::StreamDataBlocked { id, limit: value } => {
                put_varint(out, id);
                put_varint(out, value);
            }
            Frame::NewToken { token: data } | Frame::Datagram { data } => {
                put_length_prefixed(out, data)
            }
            Frame::NewConnectionId {
                sequence,
                retire_prior_to,
                cid,
                reset_token,
            } => {
                put_varint(out, sequence);
                put_varint(out, retire_prior_to);
                out.push(cid.len() as u8);
                out.extend_from_slice(cid.as_slice());
                out.extend_from_slice(&reset_token);
            }
            Frame::RetireConnectionId { sequence } => put_varint(out, sequence),
            Frame::ConnectionClose {
                application,
                error_code,
                frame_type,
                reason,
            } => {
                put_varint(out, error_code);
                if !application {
                    put_varint(out, frame_type);
                }
                put_length_prefixed(out, reason);
            }
        }
    }

    /// Bytes [`Frame::encode`] appends.
    pub fn encoded_len(&self) -> usize {
        let fields = match *self {
            Frame::Padding { len } => return len,
            Frame::Ping | Frame::HandshakeDone | Frame::ImmediateAck => 0,
            Frame::AckFrequency {
                sequence,
                ack_eliciting_threshold,
                request_max_ack_delay_micros,
                reordering_threshold,
            } => {
                varint_len(sequence)
                    + varint_len(ack_eliciting_threshold)
                    + varint_len(request_max_ack_delay_micros)
                    + varint_len(reordering_threshold)
            }
            Frame::PathChallenge { .. } | Frame::PathResponse { .. } => 8,
            Frame::Ack(ack) => {
                varint_len(ack.ack_delay_micros)
                    + ack.ranges.encoded_len()
                    + ack
                        .ecn_counts
                        .iter()
                        .flatten()
                        .map(|c| varint_len(*c))
                        .sum::<usize>()
            }
            Frame::Corrupted(ranges) => ranges.encoded_len(),
            Frame::Repair {
                last,
                first,
                seed,
                symbol,
            } => {
                varint_len(last)
                    + varint_len(last - first)
                    + varint_len(seed)
                    + length_prefixed_len(symbol)
            }
            Frame::Repaired(count) => varint_len(count),
            Frame::Crypto { offset, data } => varint_len(offset) + length_prefixed_len(data),
            Frame::Stream {
                id, offset, data, ..
            } => varint_len(id) + varint_len(offset) + length_prefixed_len(data),
            Frame::ResetStream {
                id,
                error_code,
                final_size,
            } => varint_len(id) + varint_len(error_code) + varint_len(final_size),
            Frame::StopSending { id, error_code } => varint_len(id) + varint_len(error_code),
            Frame::MaxData(value)
            | Frame::DataBlocked(value)
            | Frame::MaxStreams { max: value, .. }
            | Frame::StreamsBlocked { limit: value, .. } => varint_len(value),
            Frame::MaxStreamData { id, max: value }
            | Frame::StreamDataBlocked { id, limit: value } => varint_len(id) + varint_len(value),
            Frame::NewToken { token: data } | Frame::Datagram { data } => length_prefixed_len(data),
            Frame::NewConnectionId {
                sequence,
                retire_prior_to,
                cid,
                ..
            } => {
                varint_len(sequence) + varint_len(retire_prior_to) + 1 + cid.len() + RESET_TOKEN_LEN
            }
            Frame::RetireConnectionId { sequence } => varint_len(sequence),
            Frame::ConnectionClose {
                application,
                error_code,
                frame_type,
                reason,
            } => {
                let frame_type_len = if application {
                    0
                } else {
                    varint_len(frame_type)
                };
                varint_len(error_code) + frame_type_len + length_prefixed_len(reason)
            }
        };
        varint_len(self.frame_type()) + fields
    }

    /// The type number [`Frame::encode`] writes (PADDING's is 0).
    pub fn frame_type(&self) -> u64 {
        use frame_type::*;
        match *self {
            Frame::Padding { .. } => PADDING,
            Frame::Ping => PING,
            Frame::Ack(AckFrame {
                ecn_counts: None, ..
            }) => ACK,
            Frame::Ack(_) => ACK_ECN,
            Frame::Corrupted(_) => CORRUPTED,
            Frame::Repair { .. } => REPAIR,
            Frame::Repaired(_) => REPAIRED,
            Frame::Crypto { .. } => CRYPTO,
            Frame::Stream { fin, .. } => {
                let fin_bit = if fin { STREAM_FIN_BIT } else { 0 };
                STREAM | STREAM_OFF_BIT | STREAM_LEN_BIT | fin_bit
            }
            Frame::ResetStream { .. } => RESET_STREAM,
            Frame::StopSending { .. } => STOP_SENDING,
            Frame::MaxData(_) => MAX_DATA,
            Frame::MaxStreamData { .. } => MAX_STREAM_DATA,
            Frame::MaxStreams { bidi: true, .. } => MAX_STREAMS_BIDI,
            Frame::MaxStreams { bidi: false, .. } => MAX_STREAMS_UNI,
            Frame::DataBlocked(_) => DATA_BLOCKED,
            Frame::StreamDataBlocked { .. } => STREAM_DATA_BLOCKED,
            Frame::StreamsBlocked { bidi: true, .. } => STREAMS_BLOCKED_BIDI,
            Frame::StreamsBlocked { bidi: false, .. } => STREAMS_BLOCKED_UNI,
            Frame::NewToken { .. } => NEW_TOKEN,
            Frame::NewConnectionId { .. } => NEW_CONNECTION_ID,
            Frame::RetireConnectionId { .. } => RETIRE_CONNECTION_ID,
            Frame::HandshakeDone => HANDSHAKE_DONE,
            Frame::ImmediateAck => IMMEDIATE_ACK,
            Frame::AckFrequency { .. } => ACK_FREQUENCY,
            Frame::PathChallenge { .. } => PATH_CHALLENGE,
            Frame::PathResponse { .. } => PATH_RESPONSE,
            Frame::Datagram { .. } => DATAGRAM_WITH_LEN,
            Frame::ConnectionClose {
                application: false, ..
            } => CONNECTION_CLOSE,
            Frame::ConnectionClose {
                application: true, ..
            } => CONNECTION_CLOSE_APPLICATION,
        }
    }

    /// True if receiving this frame obliges the peer to acknowledge (RFC
    /// 9002 §2): every frame but PADDING, ACK, CORRUPTED, REPAIRED and
    /// CONNECTION_CLOSE.
    pub fn is_ack_eliciting(&self) -> bool {
        !matches!(
            self,
            Frame::Padding { .. }
                | Frame::Ack(_)
                | Frame::Corrupted(_)
                | Frame::Repaired(_)
                | Frame::ConnectionClose { .. }
        )
    }

    /// The frame's name as the RFC spells it, for logs and errors.
    pub fn name(&self) -> &'static str {
        match self {
            Frame::Padding { .. } => "PADDING",
            Frame::Ping => "PING",
            Frame::Ack(_) => "ACK",
            Frame::Corrupted(_) => "CORRUPTED",
            Frame::Repair { .. } => "REPAIR",
            Frame::Repaired(_) => "REPAIRED",
            Frame::Crypto { .. } => "CRYPTO",
            Frame::Stream { .. } => "STREAM",
            Frame::ResetStream { .. } => "RESET_STREAM",
            Frame::StopSending { .. } => "STOP_SENDING",
            Frame::MaxData(_) => "MAX_DATA",
            Frame::MaxStreamData { .. } => "MAX_STREAM_DATA",
            Frame::MaxStreams { .. } => "MAX_STREAMS",
            Frame::DataBlocked(_) => "DATA_BLOCKED",
            Frame::StreamDataBlocked { .. } => "STREAM_DATA_BLOCKED",
            Frame::StreamsBlocked { .. } => "STREAMS_BLOCKED",
            Frame::NewToken { .. } => "NEW_TOKEN",
            Frame::NewConnectionId { .. } => "NEW_CONNECTION_ID",
            Frame::RetireConnectionId { .. } => "RETIRE_CONNECTION_ID",
            Frame::HandshakeDone => "HANDSHAKE_DONE",
            Frame::ImmediateAck => "IMMEDIATE_ACK",
            Frame::AckFrequency { .. } => "ACK_FREQUENCY",
            Frame::PathChallenge { .. } => "PATH_CHALLENGE",
            Frame::PathResponse { .. } => "PATH_RESPONSE",
            Frame::Datagram { .. } => "DATAGRAM",
            Frame::ConnectionClose { .. } => "CONNECTION_CLOSE",
        }
    }
}

/// A varint length, then that many bytes.
fn length_prefixed<'a>(reader: &mut Reader<'a>) -> Result<&'a [u8], WireError> {
    let len = reader.varint()?;
    let len = usize::try_from(len).map_err(|_| WireError::UnexpectedEnd {
        needed: usize::MAX,
        remaining: reader.remaining(),
    })?;
    reader.bytes(len)
}

fn put_length_prefixed(out: &mut Vec<u8>, data: &[u8]) {
    put_varint(out, data.len() as u64);
    out.extend_from_slice(data);
}

fn length_prefixed_len(data: &[u8]) -> usize {
    varint_len(data.len() as u64) + data.len()
}

/// RFC 9000 §19.6, §19.8: data may not end past 2^62 - 1.
fn check_end(frame: &'static str, offset: u64, data: &[u8]) -> Result<(), WireError> {
    // offset <= 2^62 - 1 and data.len() < 2^62, so the sum cannot overflow.
    let end = offset.saturating_add(data.len() as u64);
    if end > VARINT_MAX {
        return Err(WireError::OffsetTooLarge { frame, end });
    }
    Ok(())
}

fn stream_count(reader: &mut Reader<'_>, frame: &'static str) -> Result<u64, WireError> {
    let value = reader.varint()?;
    if value > MAX_STREAM_COUNT {
        return Err(WireError::StreamLimitTooLarge { frame, value });
    }
    Ok(value)
}

/// Appends the head of a STREAM frame whose `len` data bytes the caller
/// appends next, straight from its send buffer: the same bytes
/// [`Frame::encode`] writes before the data, without copying the data twice.
pub fn encode_stream_header(id: u64, offset: u64, len: usize, fin: bool, out: &mut Vec<u8>) {
    use frame_type::{STREAM, STREAM_FIN_BIT, STREAM_LEN_BIT, STREAM_OFF_BIT};
    let fin_bit = if fin { STREAM_FIN_BIT } else { 0 };
    put_varint(out, STREAM | STREAM_OFF_BIT | STREAM_LEN_BIT | fin_bit);
    put_varint(out, id);
    put_varint(out, offset);
    put_varint(out, len as u64);
}

/// Appends an ACK frame naming the highest `max_ranges` ranges of `ranges`
/// (at most `MAX_ACK_RANGES + 1`), largest first. Writes nothing if `ranges`
/// is empty or `max_ranges` is 0.
pub fn encode_ack(ranges: &RangeSet, ack_delay_micros: u64, max_ranges: usize, out: &mut Vec<u8>) {
    encode_ack_ecn(ranges, ack_delay_micros, max_ranges, None, out);
}

/// [`encode_ack`] with the ECT(0), ECT(1) and CE counts of the space when
/// `ecn_counts` is `Some`: an ACK_ECN frame (type 0x03, RFC 9000
/// §19.3.2). Writes nothing if `ranges` is empty or `max_ranges` is 0.
pub fn encode_ack_ecn(
    ranges: &RangeSet,
    ack_delay_micros: u64,
    max_ranges: usize,
    ecn_counts: Option<[u64; 3]>,
    out: &mut Vec<u8>,
) {
    let ty = if ecn_counts.is_some() {
        frame_type::ACK_ECN
    } else {
        frame_type::ACK
    };
    let before = out.len();
    encode_ranges(ty, Some(ack_delay_micros), ranges, max_ranges, out);
    if out.len() > before {
        for count in ecn_counts.iter().flatten() {
            put_varint(out, *count);
        }
    }
}

/// Appends a CORRUPTED frame naming the highest `max_ranges` ranges of
/// `ranges` (at most `MAX_ACK_RANGES + 1`), largest first. Writes nothing if
/// `ranges` is empty or `max_ranges` is 0.
pub fn encode_corrupted(ranges: &RangeSet, max_ranges: usize, out: &mut Vec<u8>) {
    encode_ranges(frame_type::CORRUPTED, None, ranges, max_ranges, out);
}

fn encode_ranges(
    ty: u64,
    ack_delay: Option<u64>,
    ranges: &RangeSet,
    max_ranges: usize,
    out: &mut Vec<u8>,
) {
    let decoder_limit = usize::try_from(MAX_ACK_RANGES + 1).unwrap_or(usize::MAX);
    let count = ranges.len().min(max_ranges).min(decoder_limit);
    let mut descending = ranges.iter().rev().take(count);
    let Some(first) = descending.next() else {
        return;
    };
    // RangeSet ranges are half-open and never empty: end - 1 is the largest.
    let largest = first.end - 1;
    put_varint(out, ty);
    put_varint(out, largest);
    if let Some(delay) = ack_delay {
        put_varint(out, delay);
    }
    put_varint(out, count as u64 - 1);
    put_varint(out, largest - first.start);
    let mut previous_smallest = first.start;
    for range in descending {
        // Disjoint and non-adjacent: range.end < previous_smallest, so
        // gap = previous_smallest - (range.end - 1) - 2 >= 0.
        let gap = previous_smallest
            .saturating_sub(range.end)
            .saturating_sub(1);
        put_varint(out, gap);
        put_varint(out, range.end - 1 - range.start);
        previous_smallest = range.start;
    }
}

/// Bytes of a STREAM frame's header (type, id, offset, length: OFF and LEN
/// bits set, as [`Frame::encode`] writes it) for `len` bytes of data.
pub fn stream_frame_overhead(id: u64, offset: u64, len: usize) -> usize {
    1 + varint_len(id) + varint_len(offset) + varint_len(len as u64)
}

/// Bytes of a CRYPTO frame's header (type, offset, length) for `len` bytes of
/// data.
pub fn crypto_frame_overhead(offset: u64, len: usize) -> usize {
    1 + varint_len(offset) + varint_len(len as u64)
}

/// Iterator over the frames of a decrypted payload. Yields each frame or the
/// first error, and ends after an error.
#[derive(Clone, Debug)]
pub struct Frames<'a> {
    reader: Reader<'a>,
    failed: bool,
}

/// The frames of `payload` (frames only: no header, no payload tag).
pub fn parse_frames(payload: &[u8]) -> Frames<'_> {
    Frames {
        reader: Reader::new(payload),
        failed: false,
    }
}

impl<'a> Iterator for Frames<'a> {
    type Item = Result<Frame<'a>, WireError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.reader.is_empty() {
            return None;
        }
        let frame = Frame::decode(&mut self.reader);
        self.failed = frame.is_err();
        Some(frame)
    }
}

impl FusedIterator for Frames<'_> {}

#[cfg(test)]
mod tests;
