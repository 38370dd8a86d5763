//! How much the transfer protocol moves at once, shared by both sides
//! and by hq-interop (here, so that the client, the server and `hq` need
//! not import each other for a size).

/// Bytes moved per read or write of a file or a generated stream.
pub const CHUNK_LEN: usize = 64 * 1024;

/// How much a download asks for per read. A read takes what arrived in
/// order up to this, so larger reads mean fewer of them when the reader
/// falls behind: fewer writes to the sink, fewer turns and wake-ups.
/// Loopback, 1 GiB over hq-interop, interleaved pairs (medians):
/// - 64 → 256 KiB, five pairs: the client's context switches 8.5 → 5.8
///   thousand, its CPU 1.19 → 1.12 s, goodput 6.56 → 6.88 Gb/s
///   (`interop/results/2026-11-27-spare-blocks/`);
/// - 256 KiB → 1 MiB, ten pairs: client CPU 1.08 → 1.04 s, client + server
///   1.81 → 1.77, goodput 7.92 → 8.05 Gb/s (ahead in 6, level in 1,
///   behind in 3); writes 5 388 → 1 943 and futex calls 1 964 → 1 561 a GiB
///   (`interop/results/2026-12-02-file-copy-bound/`).
///
/// A read in place hashes up to this much with the connection locked:
/// 0.6 ms at SHA-256's speed here, which the socket's buffer absorbs (no
/// receive-buffer drops in those runs).
pub const DOWNLOAD_READ_LEN: usize = 1024 * 1024;
