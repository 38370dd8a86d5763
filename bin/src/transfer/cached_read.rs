//! Reads of what the page cache already holds, made without leaving the
//! calling thread.
//!
//! The server reads a file it sends one chunk at a time on the runtime's
//! blocking pool, so that a slow disk never stalls the runtime. For a file
//! in the page cache (every file sent more than once, and loopback
//! benchmarks) each of those reads is a hand-off to another thread and back:
//! two wake-ups and two context switches per 64 KiB, about 2% of the
//! server's CPU on a 1 GiB download. Linux's `preadv2(RWF_NOWAIT)` copies
//! what is cached and refuses (EAGAIN) instead of waiting for the disk; the
//! server tries it first and goes to the pool only when it is refused. The
//! vectored form reads straight into a stream's send buffer. tmpfs refuses
//! the flag itself, and there a plain read is made, as it cannot wait for a
//! disk.
//!
//! Owns: that one system call and what its refusals mean, and the plain
//! positioned read that follows a refusal. Must not: block, but in that
//! read.

use std::fs::File;
use std::io::{self, IoSliceMut};

/// Reads into `buf` at `offset` what the page cache holds, without waiting
/// for the disk: `Some(Ok(n))` for `n > 0` bytes read (possibly fewer than
/// asked, when only some are cached), `None` when the read would have to
/// wait, when the system cannot read without waiting, or at the end of the
/// file (the blocking read that follows says which). Never blocks on I/O.
pub fn read_cached_at(file: &File, buf: &mut [u8], offset: u64) -> Option<io::Result<usize>> {
    read_cached_vectored_at(file, &mut [IoSliceMut::new(buf)], offset)
}

/// One positioned read that may wait for the disk, retrying on EINTR: the
/// fallback when the page cache does not hold the bytes.
pub fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    use std::os::unix::fs::FileExt;
    loop {
        match file.read_at(buf, offset) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            read => return read,
        }
    }
}

/// [`read_cached_at`] into several buffers, filled in order (`preadv2`):
/// how a file is read straight into a stream's send buffer.
#[cfg(target_os = "linux")]
pub fn read_cached_vectored_at(
    file: &File,
    bufs: &mut [IoSliceMut<'_>],
    offset: u64,
) -> Option<io::Result<usize>> {
    use std::os::fd::AsRawFd;

    let offset = libc::off_t::try_from(offset).ok()?;
    let count = libc::c_int::try_from(bufs.len()).ok()?;
    let mut flags = libc::RWF_NOWAIT;
    loop {
        // SAFETY: `IoSliceMut` is ABI-compatible with `iovec` on Unix, and
        // each one describes a buffer valid for writes of its length that
        // outlives the call; the descriptor is `file`'s, open for the
        // call's duration.
        let read = unsafe {
            libc::preadv2(
                file.as_raw_fd(),
                bufs.as_mut_ptr().cast::<libc::iovec>(),
                count,
                offset,
                flags,
            )
        };
        if read > 0 {
            return Some(Ok(read as usize));
        }
        if read == 0 {
            return None;
        }
        let error = io::Error::last_os_error();
        match error.raw_os_error() {
            Some(libc::EINTR) => continue,
            // tmpfs refuses the flag (6.18 still does), but its pages are
            // the file: there is no disk to wait for.
            Some(libc::EOPNOTSUPP) if flags != 0 && memory_backed(file) => flags = 0,
            // Not cached (EAGAIN); the flag or call unknown to this kernel
            // or file system (EOPNOTSUPP, EINVAL, ENOSYS): the blocking
            // pool reads it. Anything else is a real error, reported by the
            // blocking read too, with the same errno.
            _ => return None,
        }
    }
}

/// Whether `file` lives in memory (tmpfs, ramfs), where a read never
/// waits for a disk (a tmpfs page swapped out is the one exception, and
/// the swap device is no slower than the disk the pool would wait for).
#[cfg(target_os = "linux")]
fn memory_backed(file: &File) -> bool {
    use std::os::fd::AsRawFd;

    // linux/magic.h
    const TMPFS_MAGIC: i64 = 0x0102_1994;
    const RAMFS_MAGIC: i64 = 0x8584_58f6;
    let mut stats = std::mem::MaybeUninit::<libc::statfs>::uninit();
    // SAFETY: fstatfs(2) on `file`'s open descriptor, writing into `stats`,
    // which is read only if the call succeeded.
    if unsafe { libc::fstatfs(file.as_raw_fd(), stats.as_mut_ptr()) } != 0 {
        return false;
    }
    // SAFETY: fstatfs returned 0, so it filled `stats`.
    let stats = unsafe { stats.assume_init() };
    // `f_type` is an i64 here, an i32 or u32 on other targets.
    #[allow(clippy::useless_conversion)]
    let kind = i64::from(stats.f_type);
    kind == TMPFS_MAGIC || kind == RAMFS_MAGIC
}

/// Elsewhere there is no read that refuses to wait: every read goes to the
/// blocking pool.
#[cfg(not(target_os = "linux"))]
pub fn read_cached_vectored_at(
    _file: &File,
    _bufs: &mut [IoSliceMut<'_>],
    _offset: u64,
) -> Option<io::Result<usize>> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transfer::test_dir::TestDir;
    use std::io::Write;

    fn cached_file(bytes: &[u8]) -> (TestDir, File) {
        let dir = TestDir::new("cached-read");
        let path = dir.path().join("f");
        File::create(&path).unwrap().write_all(bytes).unwrap();
        // Just written: in the page cache.
        let file = File::open(&path).unwrap();
        (dir, file)
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_cached_file_is_read_without_the_blocking_pool() {
        let bytes: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let (_dir, file) = cached_file(&bytes);
        let mut buf = vec![0u8; 64 * 1024];
        let mut at = 0usize;
        while at < bytes.len() {
            let n = read_cached_at(&file, &mut buf, at as u64)
                .expect("a file just written is in the page cache")
                .unwrap();
            assert_eq!(buf[..n], bytes[at..at + n]);
            at += n;
        }
        assert_eq!(at, bytes.len());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_vectored_read_fills_its_buffers_in_order() {
        let bytes: Vec<u8> = (0..50_000u32).map(|i| (i % 251) as u8).collect();
        let (_dir, file) = cached_file(&bytes);
        let (mut a, mut b, mut c) = (vec![0u8; 1000], vec![0u8; 30_000], vec![0u8; 40_000]);
        let mut bufs = [
            IoSliceMut::new(&mut a),
            IoSliceMut::new(&mut b),
            IoSliceMut::new(&mut c),
        ];
        let n = read_cached_vectored_at(&file, &mut bufs, 7)
            .expect("a file just written is in the page cache")
            .unwrap();
        // The file ends inside the third buffer.
        assert_eq!(n, bytes.len() - 7);
        assert_eq!(a, bytes[7..1007]);
        assert_eq!(b, bytes[1007..31_007]);
        assert_eq!(c[..n - 31_000], bytes[31_007..]);
    }

    /// tmpfs refuses `RWF_NOWAIT`; its files are read in place all the
    /// same, not handed to the blocking pool chunk by chunk.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_file_in_memory_is_read_without_the_blocking_pool() {
        let dir = std::path::Path::new("/dev/shm");
        if !dir.is_dir() || !memory_backed(&File::open(dir).unwrap()) {
            eprintln!("skipped: no tmpfs at /dev/shm");
            return;
        }
        let path = dir.join(format!("sift-cached-read-{}", std::process::id()));
        let bytes: Vec<u8> = (0..100_000u32).map(|i| (i % 241) as u8).collect();
        File::create(&path).unwrap().write_all(&bytes).unwrap();
        let file = File::open(&path).unwrap();
        let mut buf = vec![0u8; 150_000];
        let read = read_cached_at(&file, &mut buf, 0);
        std::fs::remove_file(&path).unwrap();
        let n = read.expect("read in place").unwrap();
        assert_eq!(buf[..n], bytes[..]);
    }

    #[test]
    fn the_end_of_the_file_is_left_to_the_blocking_read() {
        let (_dir, file) = cached_file(b"short");
        let mut buf = [0u8; 16];
        assert!(read_cached_at(&file, &mut buf, 5).is_none());
        assert!(read_cached_at(&file, &mut buf, 1 << 40).is_none());
    }
}
