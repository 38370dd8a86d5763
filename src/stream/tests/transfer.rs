//! Bulk transfers between two `Streams` over a modelled path, to show that
//! receive-window auto-tuning keeps flow control from limiting a long fat
//! link, and that reassembly copes with a large reordered transfer.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::*;

const MIB: u64 = 1 << 20;

/// The byte at stream offset `offset` of the test payload.
fn payload_byte(offset: u64) -> u8 {
    (offset.wrapping_mul(7) ^ (offset >> 11)) as u8
}

fn payload(offset: u64, len: u64) -> Vec<u8> {
    (offset..offset + len).map(payload_byte).collect()
}

/// A path with a fixed round trip and a bottleneck rate, no loss.
struct Path {
    rtt: Duration,
    bytes_per_rtt: u64,
}

impl Path {
    /// Time one chunk occupies the bottleneck.
    fn chunk_time(&self) -> Duration {
        let nanos = self.rtt.as_nanos() * CHUNK as u128 / self.bytes_per_rtt as u128;
        Duration::from_nanos(nanos as u64)
    }
}

enum Forward {
    Chunk(StreamChunk, Vec<u8>),
    Control(ControlFrame),
}

enum Backward {
    Ack(StreamChunk),
    Control(ControlFrame),
}

/// What a transfer looked like from the sender's side.
struct Outcome {
    /// From the first byte sent to the last byte read.
    completion: Duration,
    /// Intervals (from the start) in which the sender had data and a free
    /// link but no flow-control credit.
    stalls: Vec<(Duration, Duration)>,
}

/// Sends `total` bytes on one stream from a client to a server granting
/// `receiver`, over `path`. The receiving application reads every byte
/// the moment it arrives; the sending application keeps its buffer full.
fn transfer(total: u64, receiver: StreamConfig, path: &Path) -> Outcome {
    let t0 = Instant::now();
    let sender_config = StreamConfig {
        // Room for two round trips in flight, so the send buffer is not
        // what limits the sender either.
        send_buffer: 2 * path.bytes_per_rtt,
        ..StreamConfig::default()
    };
    let (mut sender, mut receiver) = pair(sender_config, receiver);
    let id = sender.open(Dir::Uni).unwrap();
    let one_way = path.rtt / 2;

    let mut forward: VecDeque<(Instant, Forward)> = VecDeque::new();
    let mut backward: VecDeque<(Instant, Backward)> = VecDeque::new();
    let mut now = t0;
    let mut link_free_at = t0;
    let mut written = 0u64;
    // The application's next 64 KiB of payload, partly written.
    let (mut piece_start, mut piece_end, mut piece) = (0u64, 0u64, Vec::new());
    let mut read = 0u64;
    let mut blocked_since: Option<Instant> = None;
    let mut stalls = Vec::new();
    let mut buf = vec![0u8; 1 << 16];

    loop {
        while written < total {
            if written == piece_end {
                piece_start = written;
                piece_end = (written + (1 << 16)).min(total);
                piece = payload(piece_start, piece_end - piece_start);
            }
            let unwritten = &piece[(written - piece_start) as usize..];
            match sender.write(id, unwritten, piece_end == total) {
                Ok(accepted) => written += accepted as u64,
                Err(StreamError::Blocked) => break,
                Err(other) => panic!("write failed: {other}"),
            }
        }
        if now >= link_free_at {
            if let Some((chunk, data)) = poll_chunk(&mut sender, CHUNK) {
                forward.push_back((now + one_way, Forward::Chunk(chunk, data)));
                link_free_at = now + path.chunk_time();
                if let Some(since) = blocked_since.take() {
                    stalls.push((since - t0, now - t0));
                }
            } else if written > sender.stats().bytes_sent {
                // Data waiting, link free, nothing allowed: flow control.
                blocked_since.get_or_insert(now);
            }
        }
        while let Some(frame) = sender.poll_control() {
            forward.push_back((now + one_way, Forward::Control(frame)));
        }

        while forward.front().is_some_and(|(at, _)| *at <= now) {
            let Some((_, message)) = forward.pop_front() else {
                break;
            };
            match message {
                Forward::Chunk(chunk, data) => {
                    receiver
                        .on_stream_frame(chunk.id, chunk.offset, &data, chunk.fin)
                        .unwrap();
                    backward.push_back((now + one_way, Backward::Ack(chunk)));
                }
                Forward::Control(frame) => apply_control(&mut receiver, frame).unwrap(),
            }
        }
        // The stream exists at the receiver once its first frame arrived.
        while receiver.readable().any(|readable| readable == id) {
            match receiver.read(id, &mut buf, now, path.rtt, Duration::ZERO) {
                Ok((n, fin)) => {
                    assert!(
                        buf[..n]
                            .iter()
                            .zip(read..)
                            .all(|(&b, o)| b == payload_byte(o)),
                        "bytes read at {read} differ from the bytes written"
                    );
                    read += n as u64;
                    if fin {
                        assert_eq!(read, total);
                        return Outcome {
                            completion: now - t0,
                            stalls,
                        };
                    }
                }
                Err(StreamError::Blocked) => break,
                Err(other) => panic!("read failed: {other}"),
            }
        }
        while let Some(frame) = receiver.poll_control() {
            backward.push_back((now + one_way, Backward::Control(frame)));
        }

        while backward.front().is_some_and(|(at, _)| *at <= now) {
            let Some((_, message)) = backward.pop_front() else {
                break;
            };
            match message {
                Backward::Ack(chunk) => sender.on_chunk_acked(&chunk),
                Backward::Control(frame) => apply_control(&mut sender, frame).unwrap(),
            }
        }

        // Wake up when the link frees if there is data to send, or to notice
        // (once) that flow control holds back data that is waiting.
        let data_waiting = written > sender.stats().bytes_sent && blocked_since.is_none();
        let send_at = (sender.has_stream_data() || data_waiting).then_some(link_free_at.max(now));
        let next = [
            forward.front().map(|(at, _)| *at),
            backward.front().map(|(at, _)| *at),
            send_at,
        ]
        .into_iter()
        .flatten()
        .min()
        .expect("the transfer stalled with nothing in flight");
        now = now.max(next);
    }
}

/// 100 ms round trip at 4 MiB per round trip (about 335 Mbit/s): a
/// bandwidth-delay product eight times the initial stream window.
fn long_fat_path() -> Path {
    Path {
        rtt: Duration::from_millis(100),
        bytes_per_rtt: 4 * MIB,
    }
}

/// Windows that start eight times below the long fat path's
/// bandwidth-delay product (the defaults start at its size), so that
/// auto-tuning has to do the work.
fn small_start() -> StreamConfig {
    StreamConfig {
        initial_max_data: MIB,
        initial_max_stream_data: 512 * 1024,
        ..StreamConfig::default()
    }
}

#[test]
fn auto_tuned_windows_never_limit_a_long_fat_link_after_the_first_round_trips() {
    let path = long_fat_path();
    let total = 64 * MIB;
    let outcome = transfer(total, small_start(), &path);
    // At the bottleneck rate alone: 64 MiB / 4 MiB per RTT = 16 RTT.
    let ideal = path.rtt * 16;
    // The windows start at 512 KiB (stream) and 1 MiB (connection) and
    // double per round trip while they limit the sender; they must pass
    // twice the 4 MiB bandwidth-delay product (updates go out every half
    // window), so the sender may stall in about the first five round trips
    // (measured: the last stall ends at 5.5 RTT) and never after.
    let last_stall_end = outcome
        .stalls
        .last()
        .map_or(Duration::ZERO, |&(_, end)| end);
    assert!(
        last_stall_end <= path.rtt * 6,
        "flow control stalled the sender after the first round trips: {:?}",
        outcome.stalls
    );
    assert!(
        outcome.completion <= ideal + path.rtt * 6,
        "took {:?} for an ideal {:?}",
        outcome.completion,
        ideal
    );
}

#[test]
fn default_windows_never_stall_issue_twelves_long_fat_path() {
    // 50 Mb/s over 100 ms: 625 kB per round trip from the first one on
    // (a real sender's slow start would give auto-tuning more time still).
    let path = Path {
        rtt: Duration::from_millis(100),
        bytes_per_rtt: 625_000,
    };
    let outcome = transfer(32 * MIB, StreamConfig::default(), &path);
    assert!(outcome.stalls.is_empty(), "stalled: {:?}", outcome.stalls);
}

#[test]
fn without_auto_tuning_the_initial_window_limits_the_same_link() {
    // The control for the test above: windows pinned at their initial
    // size hold the sender to at most 512 KiB per round trip, so 16 MiB
    // need at least 16 MiB / 512 KiB = 32 RTT instead of 4, and the
    // sender is still stalling at the end.
    let path = long_fat_path();
    let pinned = StreamConfig {
        max_receive_window: small_start().initial_max_data,
        max_stream_receive_window: small_start().initial_max_stream_data,
        ..small_start()
    };
    let outcome = transfer(16 * MIB, pinned, &path);
    assert!(
        outcome.completion >= path.rtt * 32,
        "took {:?}",
        outcome.completion
    );
    assert!(outcome
        .stalls
        .last()
        .is_some_and(|&(_, end)| end >= outcome.completion - path.rtt * 2));
}

#[test]
fn sixteen_megabytes_in_reordered_chunks_reassemble_exactly() {
    let now = Instant::now();
    let total = 16 * MIB;
    let receiver_config = StreamConfig {
        initial_max_data: total,
        initial_max_stream_data: total,
        ..StreamConfig::default()
    };
    let (_client, mut server) = pair(StreamConfig::default(), receiver_config);
    let id = 2;
    let chunk = CHUNK as u64;
    let offsets: Vec<u64> = (0..total.div_ceil(chunk)).map(|i| i * chunk).collect();
    // Shuffle within windows of 256 chunks (about 300 KB), as a path with
    // heavy reordering would, and read whatever is in order as it comes.
    let mut rng = ChaCha8Rng::seed_from_u64(16);
    let mut order = offsets.clone();
    for window in order.chunks_mut(256) {
        window.shuffle(&mut rng);
    }
    let mut read = Vec::with_capacity(total as usize);
    let mut fin = false;
    for offset in order {
        let len = chunk.min(total - offset);
        server
            .on_stream_frame(id, offset, &payload(offset, len), offset + len == total)
            .unwrap();
        if server.readable().next() == Some(id) {
            let (bytes, done) = read_ready(&mut server, id, now);
            read.extend(bytes);
            fin |= done;
        }
    }
    assert!(fin);
    assert_eq!(read.len() as u64, total);
    assert!(read.iter().zip(0u64..).all(|(&b, o)| b == payload_byte(o)));
}
