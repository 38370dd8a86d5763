//! A timer with microsecond precision for the event loop: a Linux
//! `timerfd` registered with mio.
//!
//! mio rounds poll timeouts up to whole milliseconds; a pacing gap of a few
//! microseconds would then cost a millisecond and cap throughput at about
//! one burst per millisecond. A `timerfd` wakes the poll at the instant.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

use mio::event::Source;
use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};

/// A one-shot monotonic timer that becomes readable when it fires.
#[derive(Debug)]
pub struct Timer {
    fd: OwnedFd,
    armed: Option<Duration>,
}

impl Timer {
    /// A disarmed timer.
    pub fn new() -> io::Result<Self> {
        // SAFETY: plain syscall; the result is checked before use.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Self { fd, armed: None })
    }

    /// Fires once after `after` (`None`: disarm). A zero wait fires at once.
    pub fn arm(&mut self, after: Option<Duration>) -> io::Result<()> {
        if after.is_none() && self.armed.is_none() {
            return Ok(());
        }
        let value = match after {
            // A zero it_value would disarm: the smallest wait is 1 ns.
            Some(wait) => libc::timespec {
                tv_sec: wait.as_secs().min(i64::MAX as u64) as libc::time_t,
                tv_nsec: libc::c_long::from(wait.subsec_nanos().max(u32::from(wait.is_zero()))),
            },
            None => libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
        };
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: value,
        };
        // SAFETY: `spec` is a valid itimerspec; the old value is not wanted.
        let result =
            unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
        if result != 0 {
            return Err(io::Error::last_os_error());
        }
        self.armed = after;
        Ok(())
    }

    /// Clears a fired timer so the next expiry wakes the poll again.
    pub fn acknowledge(&mut self) {
        let mut expirations = [0u8; 8];
        // SAFETY: reads at most 8 bytes into an 8-byte buffer. WouldBlock
        // (not fired) is fine: there is nothing to clear.
        let _ = unsafe {
            libc::read(
                self.fd.as_raw_fd(),
                expirations.as_mut_ptr().cast(),
                expirations.len(),
            )
        };
        self.armed = None;
    }
}

/// The timerfd itself, for runtimes that wait on its readiness (tokio's
/// `AsyncFd`); it becomes readable when the timer fires.
impl AsRawFd for Timer {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl Source for Timer {
    fn register(
        &mut self,
        registry: &Registry,
        token: Token,
        interests: Interest,
    ) -> io::Result<()> {
        SourceFd(&self.as_raw_fd()).register(registry, token, interests)
    }

    fn reregister(
        &mut self,
        registry: &Registry,
        token: Token,
        interests: Interest,
    ) -> io::Result<()> {
        SourceFd(&self.as_raw_fd()).reregister(registry, token, interests)
    }

    fn deregister(&mut self, registry: &Registry) -> io::Result<()> {
        SourceFd(&self.as_raw_fd()).deregister(registry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mio::{Events, Poll};

    #[test]
    fn armed_timer_wakes_the_poll_and_disarmed_one_does_not() {
        let mut poll = Poll::new().unwrap();
        let mut timer = Timer::new().unwrap();
        poll.registry()
            .register(&mut timer, Token(7), Interest::READABLE)
            .unwrap();
        let mut events = Events::with_capacity(4);

        timer.arm(Some(Duration::from_micros(200))).unwrap();
        poll.poll(&mut events, Some(Duration::from_secs(5)))
            .unwrap();
        assert!(events.iter().any(|e| e.token() == Token(7)));
        timer.acknowledge();

        timer.arm(Some(Duration::from_secs(60))).unwrap();
        timer.arm(None).unwrap();
        poll.poll(&mut events, Some(Duration::from_millis(20)))
            .unwrap();
        assert!(events.is_empty(), "a disarmed timer must stay silent");
    }
}
