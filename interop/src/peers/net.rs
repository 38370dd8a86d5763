//! The UDP sockets every peer binds: sift's kernel buffer size asked for,
//! non-blocking, ready for mio (quiche) or a quinn endpoint.

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

/// A non-blocking UDP socket bound to `addr` (port 0 picks a free one),
/// with sift's socket buffer size asked for both ways
/// (`sift::io::SOCKET_BUFFER_BYTES`), so that no stack loses datagrams to
/// a smaller buffer than another's. The kernel caps the size at
/// `net.core.{r,w}mem_max`, for every stack alike; a refusal leaves the
/// default, as sift does. A stack's own bind keeps the kernel default
/// (212992 bytes here), which a thousand connections' handshakes overflow.
pub fn bind_udp(addr: SocketAddr) -> io::Result<UdpSocket> {
    let socket = UdpSocket::bind(addr)?;
    ask_for_buffer(&socket, libc::SO_RCVBUF);
    ask_for_buffer(&socket, libc::SO_SNDBUF);
    socket.set_nonblocking(true)?;
    Ok(socket)
}

fn ask_for_buffer(socket: &UdpSocket, option: libc::c_int) {
    let bytes = libc::c_int::try_from(sift::io::SOCKET_BUFFER_BYTES).unwrap_or(libc::c_int::MAX);
    // SAFETY: setsockopt on a socket we own, with a pointer to a live
    // c_int and its exact size.
    unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            option,
            (&bytes as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

/// The wildcard address of `like`'s family, port 0: where a client binds
/// to reach `like`.
pub fn any_address(like: SocketAddr) -> SocketAddr {
    if like.is_ipv4() {
        (Ipv4Addr::UNSPECIFIED, 0).into()
    } else {
        (Ipv6Addr::UNSPECIFIED, 0).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bound_socket_is_non_blocking_with_buffers_asked_for() {
        let socket = bind_udp("127.0.0.1:0".parse().unwrap()).unwrap();
        let mut buf = [0u8; 1];
        let error = socket.recv_from(&mut buf).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::WouldBlock);
        assert_eq!(any_address(socket.local_addr().unwrap()).port(), 0);
    }
}
