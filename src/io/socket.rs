//! The UDP socket: creation through `socket2`, the options sift needs, and
//! reading them back.
//!
//! - Big kernel buffers (`SO_RCVBUF` / `SO_SNDBUF`), so a burst at line rate
//!   is not dropped by our own host before the transport sees it.
//! - With corruption notices offered, UDP checksums off: `SO_NO_CHECK` for
//!   IPv4, `UDP_NO_CHECK6_TX` and `UDP_NO_CHECK6_RX` for IPv6 (DESIGN §5).
//!   Otherwise the kernel drops a datagram with a flipped bit and the
//!   payload tag never gets the chance to name it. A kernel that refuses is
//!   logged, not fatal: notices then only help against corruption the UDP
//!   checksum misses.

use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;

use socket2::{Domain, Protocol, Socket, Type};

/// Kernel buffer size asked for in each direction: 4 MiB holds about 3000
/// full-size datagrams, several milliseconds at 10 Gb/s.
pub const SOCKET_BUFFER_BYTES: usize = 4 << 20;

/// Linux `SO_NO_CHECK` (asm-generic/socket.h): level `SOL_SOCKET`; a
/// non-zero value sends IPv4 UDP datagrams without a checksum.
pub const SO_NO_CHECK: libc::c_int = 11;
/// Linux `UDP_NO_CHECK6_TX` (linux/udp.h): level `IPPROTO_UDP`; send IPv6
/// UDP with a zero checksum (RFC 6935).
pub const UDP_NO_CHECK6_TX: libc::c_int = 101;
/// Linux `UDP_NO_CHECK6_RX` (linux/udp.h): level `IPPROTO_UDP`; accept
/// IPv6 UDP datagrams with a zero checksum (RFC 6936).
pub const UDP_NO_CHECK6_RX: libc::c_int = 102;

/// How to set up the socket.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SocketOptions {
    /// Turn UDP checksums off so corrupted datagrams reach the transport
    /// (set when the configuration offers corruption notices).
    pub disable_checksums: bool,
    /// `SO_RCVBUF` and `SO_SNDBUF` asked for, in bytes.
    pub buffer_bytes: usize,
}

impl Default for SocketOptions {
    fn default() -> Self {
        Self {
            disable_checksums: false,
            buffer_bytes: SOCKET_BUFFER_BYTES,
        }
    }
}

/// What the kernel actually granted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SocketReport {
    /// Receive buffer in bytes, as `getsockopt` reports it (Linux doubles
    /// the request for bookkeeping, and caps it at `rmem_max`).
    pub recv_buffer_bytes: usize,
    /// Send buffer in bytes.
    pub send_buffer_bytes: usize,
    /// UDP checksums are off in both directions that apply to the family.
    pub checksums_disabled: bool,
}

/// A non-blocking UDP socket bound to `addr`, with `options` applied.
pub fn bind_udp(
    addr: SocketAddr,
    options: SocketOptions,
) -> io::Result<(std::net::UdpSocket, SocketReport)> {
    let domain = Domain::for_address(addr);
    let socket = Socket::new(domain, Type::DGRAM, Some(Protocol::UDP))?;
    if addr.is_ipv6() {
        // One family per socket: an IPv6 endpoint does not also take IPv4.
        socket.set_only_v6(true)?;
    }
    socket.set_nonblocking(true)?;
    if let Err(error) = socket.set_recv_buffer_size(options.buffer_bytes) {
        tracing::warn!(%error, bytes = options.buffer_bytes, "the kernel refused SO_RCVBUF");
    }
    if let Err(error) = socket.set_send_buffer_size(options.buffer_bytes) {
        tracing::warn!(%error, bytes = options.buffer_bytes, "the kernel refused SO_SNDBUF");
    }
    if options.disable_checksums {
        disable_checksums(&socket, addr);
    }
    socket.bind(&addr.into())?;
    let report = SocketReport {
        recv_buffer_bytes: socket.recv_buffer_size().unwrap_or(0),
        send_buffer_bytes: socket.send_buffer_size().unwrap_or(0),
        checksums_disabled: checksums_disabled(&socket, addr.is_ipv6()).unwrap_or(false),
    };
    tracing::debug!(%addr, ?report, "UDP socket ready");
    Ok((socket.into(), report))
}

fn disable_checksums(socket: &Socket, addr: SocketAddr) {
    let requests: &[(libc::c_int, libc::c_int, &str)] = if addr.is_ipv6() {
        &[
            (libc::IPPROTO_UDP, UDP_NO_CHECK6_TX, "UDP_NO_CHECK6_TX"),
            (libc::IPPROTO_UDP, UDP_NO_CHECK6_RX, "UDP_NO_CHECK6_RX"),
        ]
    } else {
        &[(libc::SOL_SOCKET, SO_NO_CHECK, "SO_NO_CHECK")]
    };
    for &(level, name, label) in requests {
        if let Err(error) = set_int_option(socket, level, name, 1) {
            tracing::warn!(
                %error,
                option = label,
                "the kernel refused to turn UDP checksums off: corrupted datagrams will be dropped before sift sees them"
            );
        }
    }
}

/// Whether UDP checksums are off on `socket` (both `UDP_NO_CHECK6_*` for
/// IPv6, `SO_NO_CHECK` for IPv4), read back with `getsockopt`.
pub fn checksums_disabled(socket: &impl AsRawFd, ipv6: bool) -> io::Result<bool> {
    if ipv6 {
        Ok(
            get_int_option(socket, libc::IPPROTO_UDP, UDP_NO_CHECK6_TX)? != 0
                && get_int_option(socket, libc::IPPROTO_UDP, UDP_NO_CHECK6_RX)? != 0,
        )
    } else {
        Ok(get_int_option(socket, libc::SOL_SOCKET, SO_NO_CHECK)? != 0)
    }
}

fn set_int_option(
    socket: &impl AsRawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: the fd is open for the borrow's lifetime; the option value is
    // a c_int whose size we pass.
    let result = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if result == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn get_int_option(
    socket: &impl AsRawFd,
    level: libc::c_int,
    name: libc::c_int,
) -> io::Result<libc::c_int> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: the fd is open for the borrow's lifetime; `value` and `len`
    // describe a writable c_int.
    let result = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            level,
            name,
            (&mut value as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if result == 0 {
        Ok(value)
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_socket_with_checksums_disabled_reads_back_so_no_check() {
        let options = SocketOptions {
            disable_checksums: true,
            ..SocketOptions::default()
        };
        let (socket, report) = bind_udp("127.0.0.1:0".parse().unwrap(), options).unwrap();
        assert!(report.checksums_disabled);
        assert!(checksums_disabled(&socket, false).unwrap());
    }

    #[test]
    fn ipv4_socket_keeps_checksums_by_default() {
        let (socket, report) =
            bind_udp("127.0.0.1:0".parse().unwrap(), SocketOptions::default()).unwrap();
        assert!(!report.checksums_disabled);
        assert!(!checksums_disabled(&socket, false).unwrap());
        assert!(report.recv_buffer_bytes > 0 && report.send_buffer_bytes > 0);
    }
}
