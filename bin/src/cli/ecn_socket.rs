//! The ECN field of datagrams on a plain `std` UDP socket, for the relays
//! (`sift-link`, the demo's `relay`): one datagram at a time, over the
//! calls sift's own socket layer uses (`sift::io`: `enable_ecn_reception`,
//! `recv_segments`, `send_many`), so the control-message code exists once.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

use sift::wire::Ecn;

/// Asks the kernel to report each received datagram's ECN field. On an
/// IPv6 socket both options are set, so IPv4 datagrams reaching a
/// dual-stack socket report theirs too.
pub fn enable_ecn_receive(socket: &UdpSocket) -> io::Result<()> {
    let ipv6 = socket.local_addr()?.is_ipv6();
    if sift::io::enable_ecn_reception(socket, ipv6) {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Receives one datagram into `buf`: its length, its sender and its ECN
/// codepoint (Not-ECT when the kernel reported none).
pub fn recv_with_ecn(socket: &UdpSocket, buf: &mut [u8]) -> io::Result<(usize, SocketAddr, Ecn)> {
    let received = sift::io::recv_segments(socket.as_raw_fd(), buf)?;
    Ok((received.len, received.from, received.ecn))
}

/// Sends `bytes` to `to` with the ECN field set to `ecn`: an `IP_TOS`
/// control message towards an IPv4 (or IPv4-mapped) address,
/// `IPV6_TCLASS` towards an IPv6 one. `to` may be a connected socket's
/// peer. Returns the bytes sent.
pub fn send_with_ecn(
    socket: &UdpSocket,
    bytes: &[u8],
    to: SocketAddr,
    ecn: Ecn,
) -> io::Result<usize> {
    sift::io::send_many(socket.as_raw_fd(), &[(bytes, to, ecn)])?;
    Ok(bytes.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::size_of;

    #[test]
    fn a_tos_set_on_the_socket_is_read_back() {
        // Independent of `send_with_ecn`: the sender sets IP_TOS itself.
        let receiver = UdpSocket::bind("127.0.0.1:0").unwrap();
        enable_ecn_receive(&receiver).unwrap();
        let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tos: libc::c_int = 0xb8 | 0b10; // DSCP EF, ECT(0)
                                            // SAFETY: the option value is a live c_int and its size is passed.
        let set = unsafe {
            libc::setsockopt(
                sender.as_raw_fd(),
                libc::IPPROTO_IP,
                libc::IP_TOS,
                (&tos as *const libc::c_int).cast(),
                size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        assert_eq!(set, 0);
        sender
            .send_to(b"x", receiver.local_addr().unwrap())
            .unwrap();
        let mut buf = [0u8; 8];
        assert_eq!(recv_with_ecn(&receiver, &mut buf).unwrap().2, Ecn::Ect0);
    }

    #[test]
    fn every_codepoint_crosses_ipv4_loopback_as_sent() {
        let receiver = UdpSocket::bind("127.0.0.1:0").unwrap();
        enable_ecn_receive(&receiver).unwrap();
        let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = receiver.local_addr().unwrap();
        let mut buf = [0u8; 64];
        for ecn in [Ecn::Ect0, Ecn::Ect1, Ecn::Ce, Ecn::NotEct] {
            assert_eq!(send_with_ecn(&sender, b"hello", to, ecn).unwrap(), 5);
            let (len, from, got) = recv_with_ecn(&receiver, &mut buf).unwrap();
            assert_eq!((len, from, got), (5, sender.local_addr().unwrap(), ecn));
        }
    }

    #[test]
    fn every_codepoint_crosses_ipv6_loopback_as_sent() {
        let Ok(receiver) = UdpSocket::bind("[::1]:0") else {
            return; // no IPv6 on this machine
        };
        enable_ecn_receive(&receiver).unwrap();
        let sender = UdpSocket::bind("[::1]:0").unwrap();
        let to = receiver.local_addr().unwrap();
        let mut buf = [0u8; 64];
        for ecn in [Ecn::Ect1, Ecn::Ce, Ecn::NotEct, Ecn::Ect0] {
            send_with_ecn(&sender, b"hi", to, ecn).unwrap();
            let (_, _, got) = recv_with_ecn(&receiver, &mut buf).unwrap();
            assert_eq!(got, ecn);
        }
    }
}
