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
//! server tries it first and goes to the pool only when it is refused.
//!
//! Owns: that one system call and what its refusals mean. Must not: block.

use std::fs::File;
use std::io;

/// Reads into `buf` at `offset` what the page cache holds, without waiting
/// for the disk: `Some(Ok(n))` for `n > 0` bytes read (possibly fewer than
/// asked, when only some are cached), `None` when the read would have to
/// wait, when the system cannot read without waiting, or at the end of the
/// file (the blocking read that follows says which). Never blocks on I/O.
#[cfg(target_os = "linux")]
pub fn read_cached_at(file: &File, buf: &mut [u8], offset: u64) -> Option<io::Result<usize>> {
    use std::os::fd::AsRawFd;

    let offset = libc::off_t::try_from(offset).ok()?;
    let iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    loop {
        // SAFETY: `iov` describes `buf`, which is valid for writes of its
        // length and outlives the call; the descriptor is `file`'s, open
        // for the call's duration.
        let read = unsafe { libc::preadv2(file.as_raw_fd(), &iov, 1, offset, libc::RWF_NOWAIT) };
        if read > 0 {
            return Some(Ok(read as usize));
        }
        if read == 0 {
            return None;
        }
        let error = io::Error::last_os_error();
        match error.raw_os_error() {
            Some(libc::EINTR) => continue,
            // Not cached (EAGAIN); the flag or call unknown to this kernel
            // or file system (EOPNOTSUPP, EINVAL, ENOSYS): the blocking
            // pool reads it. Anything else is a real error, reported by the
            // blocking read too, with the same errno.
            _ => return None,
        }
    }
}

/// Elsewhere there is no read that refuses to wait: every read goes to the
/// blocking pool.
#[cfg(not(target_os = "linux"))]
pub fn read_cached_at(_file: &File, _buf: &mut [u8], _offset: u64) -> Option<io::Result<usize>> {
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

    #[test]
    fn the_end_of_the_file_is_left_to_the_blocking_read() {
        let (_dir, file) = cached_file(b"short");
        let mut buf = [0u8; 16];
        assert!(read_cached_at(&file, &mut buf, 5).is_none());
        assert!(read_cached_at(&file, &mut buf, 1 << 40).is_none());
    }
}
