//! `stream_ops`: two [`Streams`], a client's and a server's, driven by an
//! arbitrary sequence of application operations (open, accept, write, read,
//! reset, stop_sending) and network events on a lossy, reordering path
//! (poll a frame, deliver any frame in flight, drop it, acknowledge it,
//! declare it lost — possibly while it is still on its way, as a real loss
//! detector may).
//!
//! Both endpoints are honest, so:
//! - no received frame is a protocol violation: no `TransportError` (in
//!   particular no flow-control error) ever comes back;
//! - what a reader reads is a prefix of what the writer wrote on that
//!   stream, byte for byte, and the FIN is reported only at its end;
//! - a polled chunk's bytes are still held when fetched at once, and are
//!   the bytes written at that offset;
//! - every frame gets exactly one delivery verdict (acked or lost), and
//!   only a delivered frame is acknowledged.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use arbitrary::{Arbitrary, Unstructured};
use sift::stream::{stream_id, ControlFrame, Dir, StreamChunk, StreamConfig, StreamId, Streams};
use sift::Side;

use super::{pseudo_random_seeds, Seed};

/// Most operations one input runs.
const MAX_OPS: usize = 2048;
/// Streams of each type an op can name: indices wrap at this.
const STREAM_INDICES: u8 = 8;
/// Largest write or read one op makes: beyond the flow-control windows
/// (at most 64 KiB) in a few ops, without megabytes per input.
const MAX_IO: u16 = 8192;
/// Smoothed RTT handed to reads (receive-window auto-tuning uses it).
const SRTT: Duration = Duration::from_millis(50);

/// One of the two endpoints.
#[derive(Arbitrary, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Endpoint {
    Client,
    Server,
}

impl Endpoint {
    fn side(self) -> Side {
        match self {
            Endpoint::Client => Side::Client,
            Endpoint::Server => Side::Server,
        }
    }

    fn peer(self) -> Endpoint {
        match self {
            Endpoint::Client => Endpoint::Server,
            Endpoint::Server => Endpoint::Client,
        }
    }

    fn index(self) -> usize {
        match self {
            Endpoint::Client => 0,
            Endpoint::Server => 1,
        }
    }
}

/// A stream named by who opened it, its direction and its index.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub struct StreamPick {
    pub opened_by: Endpoint,
    pub bidi: bool,
    pub index: u8,
}

impl StreamPick {
    fn id(self) -> StreamId {
        let dir = if self.bidi { Dir::Bi } else { Dir::Uni };
        stream_id(
            self.opened_by.side(),
            dir,
            u64::from(self.index % STREAM_INDICES),
        )
        .expect("small indices are valid")
    }
}

/// One endpoint's limits, small so that blocking and credit updates happen.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub struct Limits {
    pub max_data: u16,
    pub max_stream_data: u16,
    /// Auto-tuning ceilings, as multiples of the initial windows.
    pub window_growth: u8,
    pub streams_bidi: u8,
    pub streams_uni: u8,
    pub send_buffer: u16,
}

impl Limits {
    fn config(self) -> StreamConfig {
        let growth = 1 + u64::from(self.window_growth % 16);
        let max_data = u64::from(self.max_data);
        let max_stream_data = u64::from(self.max_stream_data);
        StreamConfig {
            initial_max_data: max_data,
            initial_max_stream_data: max_stream_data,
            max_receive_window: max_data * growth,
            max_stream_receive_window: max_stream_data * growth,
            max_streams_bidi: u64::from(self.streams_bidi % 16),
            max_streams_uni: u64::from(self.streams_uni % 16),
            send_buffer: 1 + u64::from(self.send_buffer),
            max_send_buffer: (1 + u64::from(self.send_buffer)) * growth,
            max_connection_send_buffer: (1 + u64::from(self.send_buffer)) * growth * 2,
            // Small, so writes run into the peer's credit as well.
            send_beyond_credit: u64::from(self.send_buffer % 2048),
            // No cap: the ops deliver valid frames, however fragmented.
            max_out_of_order_segments: u64::MAX,
            socket_receive_bytes: None,
        }
    }
}

/// The two endpoints' limits.
#[derive(Arbitrary, Clone, Copy, Debug)]
pub struct Setup {
    pub client: Limits,
    pub server: Limits,
    /// The peers' transport parameters are known from the start (else a
    /// `LearnLimits` op delivers them, as a handshake would later).
    pub limits_known: bool,
}

/// One thing the application or the network does.
#[derive(Arbitrary, Clone, Debug)]
pub enum Op {
    Open {
        on: Endpoint,
        bidi: bool,
    },
    Accept {
        on: Endpoint,
        bidi: bool,
    },
    Write {
        on: Endpoint,
        stream: StreamPick,
        len: u16,
        fin: bool,
    },
    Read {
        on: Endpoint,
        stream: StreamPick,
        len: u16,
    },
    Reset {
        on: Endpoint,
        stream: StreamPick,
        code: u8,
    },
    StopSending {
        on: Endpoint,
        stream: StreamPick,
        code: u8,
    },
    /// `from` puts its next control frame on the path.
    PollControl {
        from: Endpoint,
    },
    /// `from` puts its next stream chunk (at most `max_len` bytes) on the
    /// path.
    PollChunk {
        from: Endpoint,
        max_len: u16,
    },
    /// A frame `from` sent, still on the path, arrives.
    Deliver {
        from: Endpoint,
        pick: u16,
    },
    /// A frame `from` sent vanishes from the path.
    Drop {
        from: Endpoint,
        pick: u16,
    },
    /// A delivered frame `from` sent is acknowledged.
    Ack {
        from: Endpoint,
        pick: u16,
    },
    /// A frame `from` sent and not yet judged is declared lost (it may still
    /// arrive later).
    Lose {
        from: Endpoint,
        pick: u16,
    },
    /// The handshake tells `on` its peer's limits.
    LearnLimits {
        on: Endpoint,
    },
    Tick {
        ms: u8,
    },
    /// `on`'s connection reports its congestion window (in 100-byte units),
    /// which sizes its send buffers.
    CongestionWindow {
        on: Endpoint,
        hundreds: u16,
    },
}

/// What a frame carried.
#[derive(Clone, Debug)]
enum Message {
    Chunk { chunk: StreamChunk, data: Vec<u8> },
    Control(ControlFrame),
}

/// A frame sent, until it has left the path and been judged.
#[derive(Clone, Debug)]
struct Sent {
    message: Message,
    /// Still on the path: it may yet arrive.
    on_path: bool,
    /// It arrived.
    delivered: bool,
    /// The sender was told it was acked or lost.
    judged: bool,
}

/// Who wrote what on each stream: (writer, stream) → (bytes, FIN written).
type Written = BTreeMap<(Endpoint, StreamId), (u64, bool)>;

/// The byte a writer puts at `offset` of stream `id`: a pattern, so a
/// reader can check what it gets without storing what was written.
fn pattern(writer: Endpoint, id: StreamId, offset: u64) -> u8 {
    let mixed = offset
        .wrapping_mul(31)
        .wrapping_add(id.wrapping_mul(7))
        .wrapping_add(writer.index() as u64 * 101);
    (mixed % 251) as u8
}

fn check_pattern(writer: Endpoint, id: StreamId, offset: u64, data: &[u8], what: &str) {
    for (at, byte) in (offset..).zip(data) {
        assert_eq!(
            *byte,
            pattern(writer, id, at),
            "{what}: byte {at} of stream {id} written by {writer:?}"
        );
    }
}

struct World {
    streams: [Streams; 2],
    configs: [StreamConfig; 2],
    /// Frames each endpoint sent, until they left the path and were judged.
    sent: [Vec<Sent>; 2],
    written: Written,
    /// (reader, stream) → bytes read.
    read: BTreeMap<(Endpoint, StreamId), u64>,
    bytes_read: [u64; 2],
    now: Instant,
}

/// Runs the operations of `data`, checking after each.
pub fn run(data: &[u8]) {
    let mut input = Unstructured::new(data);
    let Ok(setup) = Setup::arbitrary(&mut input) else {
        return;
    };
    let configs = [setup.client.config(), setup.server.config()];
    let mut world = World {
        streams: [
            Streams::new(Side::Client, configs[0].clone()),
            Streams::new(Side::Server, configs[1].clone()),
        ],
        configs,
        sent: [Vec::new(), Vec::new()],
        written: Written::new(),
        read: BTreeMap::new(),
        bytes_read: [0; 2],
        now: super::base_instant(),
    };
    if setup.limits_known {
        world.learn_limits(Endpoint::Client);
        world.learn_limits(Endpoint::Server);
    }
    // Operations until the input runs out (arbitrary's own iterators stop
    // at the first zero continuation byte, which random seeds hit at once).
    for _ in 0..MAX_OPS {
        if input.is_empty() {
            break;
        }
        let Ok(op) = Op::arbitrary(&mut input) else {
            break;
        };
        world.apply(&op);
        for on in [Endpoint::Client, Endpoint::Server] {
            assert_eq!(
                world.streams[on.index()].stats().bytes_read,
                world.bytes_read[on.index()],
                "{on:?} bytes_read"
            );
        }
    }
}

impl World {
    fn learn_limits(&mut self, on: Endpoint) {
        let limits = self.configs[on.peer().index()].transport_limits();
        self.streams[on.index()].set_peer_limits(&limits);
    }

    fn apply(&mut self, op: &Op) {
        match *op {
            Op::Open { on, bidi } => {
                let dir = if bidi { Dir::Bi } else { Dir::Uni };
                let _ = self.streams[on.index()].open(dir);
            }
            Op::Accept { on, bidi } => {
                let dir = if bidi { Dir::Bi } else { Dir::Uni };
                let _ = self.streams[on.index()].accept(dir);
            }
            Op::Write {
                on,
                stream,
                len,
                fin,
            } => self.write(on, stream.id(), len % (MAX_IO + 1), fin),
            Op::Read { on, stream, len } => {
                self.read(on, stream.id(), usize::from(len % (MAX_IO + 1)))
            }
            Op::Reset { on, stream, code } => {
                let _ = self.streams[on.index()].reset(stream.id(), u64::from(code));
            }
            Op::StopSending { on, stream, code } => {
                let _ = self.streams[on.index()].stop_sending(stream.id(), u64::from(code));
            }
            Op::PollControl { from } => {
                if let Some(frame) = self.streams[from.index()].poll_control() {
                    self.put_on_path(from, Message::Control(frame));
                }
            }
            Op::PollChunk { from, max_len } => self.poll_chunk(from, usize::from(max_len)),
            Op::Deliver { from, pick } => {
                if let Some(index) = self.pick(from, pick, |sent| sent.on_path) {
                    let message = self.sent[from.index()][index].message.clone();
                    self.deliver(from, &message);
                    let sent = &mut self.sent[from.index()][index];
                    sent.on_path = false;
                    sent.delivered = true;
                    self.forget_settled(from);
                }
            }
            Op::Drop { from, pick } => {
                if let Some(index) = self.pick(from, pick, |sent| sent.on_path) {
                    self.sent[from.index()][index].on_path = false;
                    self.forget_settled(from);
                }
            }
            Op::Ack { from, pick } => {
                if let Some(index) = self.pick(from, pick, |sent| sent.delivered && !sent.judged) {
                    let sent = &mut self.sent[from.index()][index];
                    sent.judged = true;
                    let streams = &mut self.streams[from.index()];
                    match &sent.message {
                        Message::Chunk { chunk, .. } => streams.on_chunk_acked(chunk),
                        Message::Control(frame) => streams.on_control_acked(frame),
                    }
                    self.forget_settled(from);
                }
            }
            Op::Lose { from, pick } => {
                // Possibly while it is still on the path: it may arrive
                // later, but no acknowledgement will name it.
                if let Some(index) = self.pick(from, pick, |sent| !sent.judged) {
                    let sent = &mut self.sent[from.index()][index];
                    sent.judged = true;
                    let streams = &mut self.streams[from.index()];
                    match &sent.message {
                        Message::Chunk { chunk, .. } => streams.on_chunk_lost(chunk),
                        Message::Control(frame) => streams.on_control_lost(frame),
                    }
                    self.forget_settled(from);
                }
            }
            Op::LearnLimits { on } => self.learn_limits(on),
            Op::Tick { ms } => self.now += Duration::from_millis(u64::from(ms)),
            Op::CongestionWindow { on, hundreds } => {
                self.streams[on.index()].size_send_buffer(100 * u64::from(hundreds));
            }
        }
    }

    /// The `pick`-th (modulo) frame `from` sent that matches `wanted`.
    fn pick(&self, from: Endpoint, pick: u16, wanted: impl Fn(&Sent) -> bool) -> Option<usize> {
        let candidates: Vec<usize> = self.sent[from.index()]
            .iter()
            .enumerate()
            .filter(|(_, sent)| wanted(sent))
            .map(|(index, _)| index)
            .collect();
        if candidates.is_empty() {
            return None;
        }
        Some(candidates[usize::from(pick) % candidates.len()])
    }

    fn put_on_path(&mut self, from: Endpoint, message: Message) {
        self.sent[from.index()].push(Sent {
            message,
            on_path: true,
            delivered: false,
            judged: false,
        });
    }

    /// Frames off the path and judged need no more tracking.
    fn forget_settled(&mut self, from: Endpoint) {
        self.sent[from.index()].retain(|sent| sent.on_path || !sent.judged);
    }

    fn write(&mut self, on: Endpoint, id: StreamId, len: u16, fin: bool) {
        let (written, fin_written) = self.written.get(&(on, id)).copied().unwrap_or((0, false));
        let data: Vec<u8> = (written..written + u64::from(len))
            .map(|offset| pattern(on, id, offset))
            .collect();
        let Ok(accepted) = self.streams[on.index()].write(id, &data, fin) else {
            return;
        };
        assert!(accepted <= data.len());
        assert!(!fin_written || data.is_empty(), "wrote after the FIN");
        let config = &self.configs[on.index()];
        let held = self.streams[on.index()].stats().send_buffered;
        assert!(
            held <= config.max_connection_send_buffer,
            "{on:?} holds {held} bytes in its send buffers"
        );
        let fin_now = fin_written || (fin && accepted == data.len());
        self.written
            .insert((on, id), (written + accepted as u64, fin_now));
    }

    fn read(&mut self, on: Endpoint, id: StreamId, len: usize) {
        let mut buf = vec![0u8; len];
        let Ok((count, fin)) =
            self.streams[on.index()].read(id, &mut buf, self.now, SRTT, Duration::ZERO)
        else {
            return;
        };
        assert!(count <= len);
        let writer = on.peer();
        let offset = self.read.get(&(on, id)).copied().unwrap_or(0);
        let end = offset + count as u64;
        let (written, fin_written) = self
            .written
            .get(&(writer, id))
            .copied()
            .unwrap_or((0, false));
        assert!(
            end <= written,
            "{on:?} read stream {id} up to {end}, but only {written} bytes were written"
        );
        check_pattern(writer, id, offset, &buf[..count], "read");
        if fin {
            assert!(
                fin_written && end == written,
                "{on:?} saw the end of stream {id} at {end}; written {written}, FIN {fin_written}"
            );
        }
        self.read.insert((on, id), end);
        self.bytes_read[on.index()] += count as u64;
    }

    fn poll_chunk(&mut self, from: Endpoint, max_len: usize) {
        let streams = &mut self.streams[from.index()];
        let Some(chunk) = streams.poll_stream_chunk(max_len) else {
            return;
        };
        assert!(chunk.len <= max_len, "chunk of {} > {max_len}", chunk.len);
        let mut data = Vec::new();
        assert!(
            streams.chunk_data(&chunk, &mut data),
            "bytes of a chunk just polled are gone: {chunk:?}"
        );
        assert_eq!(data.len(), chunk.len);
        let (written, fin_written) = self
            .written
            .get(&(from, chunk.id))
            .copied()
            .unwrap_or((0, false));
        let end = chunk.offset + chunk.len as u64;
        assert!(
            end <= written,
            "{chunk:?} beyond the {written} bytes written"
        );
        assert!(
            !chunk.fin || (fin_written && end == written),
            "{chunk:?} carries a FIN not at the end ({written} written, FIN {fin_written})"
        );
        check_pattern(from, chunk.id, chunk.offset, &data, "chunk");
        self.put_on_path(from, Message::Chunk { chunk, data });
    }

    /// The peer of `from` receives `message`; honest peers never violate
    /// the protocol.
    fn deliver(&mut self, from: Endpoint, message: &Message) {
        let now = self.now;
        let to = &mut self.streams[from.peer().index()];
        let result = match message {
            Message::Chunk { chunk, data } => {
                to.on_stream_frame(chunk.id, chunk.offset, data, chunk.fin)
            }
            Message::Control(frame) => match *frame {
                ControlFrame::MaxData(max) => {
                    to.on_max_data(max);
                    Ok(())
                }
                ControlFrame::MaxStreamData { id, max } => to.on_max_stream_data(id, max),
                ControlFrame::MaxStreams { dir, max } => to.on_max_streams(dir, max),
                ControlFrame::ResetStream {
                    id,
                    error_code,
                    final_size,
                } => to.on_reset_stream(id, error_code, final_size),
                ControlFrame::StopSending { id, error_code } => to.on_stop_sending(id, error_code),
                ControlFrame::DataBlocked(limit) => {
                    to.on_data_blocked(limit);
                    Ok(())
                }
                ControlFrame::StreamDataBlocked { id, limit } => {
                    to.on_stream_data_blocked(id, limit, now, SRTT)
                }
                ControlFrame::StreamsBlocked { dir, limit } => to.on_streams_blocked(dir, limit),
            },
        };
        if let Err(error) = result {
            panic!("{from:?} sent {message:?}, which its peer rejects: {error:?}");
        }
    }
}

/// Fixed pseudo-random inputs (`arbitrary` has no inverse).
pub fn seeds() -> Vec<Seed> {
    pseudo_random_seeds(0x57ea_u64, &[128, 512, 1024, 2048, 4096, 4096])
}
