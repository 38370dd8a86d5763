//! The ECN field of datagrams on a plain `std` UDP socket, for the relays
//! (`sift-link`, the demo's `relay`): ask the kernel for each datagram's
//! TOS / Traffic Class byte (`IP_RECVTOS`, `IPV6_RECVTCLASS`), read it from
//! the control messages of `recvmsg`, and send with a chosen codepoint
//! (an `IP_TOS` or `IPV6_TCLASS` control message on `sendmsg`).
//!
//! Linux only, like the rest of sift's socket code. A note for the lead:
//! sift's own socket layer (`sift::io`) grows the same calls for the
//! transport; once it has them, these can go.

use std::io;
use std::mem::{size_of, MaybeUninit};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6, UdpSocket};
use std::os::fd::AsRawFd;

use sift::wire::Ecn;

/// Room for the control messages of one datagram (a TOS byte and a
/// Traffic Class int, with headers and alignment), aligned for `cmsghdr`.
#[repr(C)]
union ControlBuffer {
    bytes: [u8; 128],
    _align: libc::cmsghdr,
}

fn set_int_option(socket: &UdpSocket, level: libc::c_int, name: libc::c_int) -> io::Result<()> {
    let on: libc::c_int = 1;
    // SAFETY: the option value is a live c_int and its size is passed.
    let result = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            level,
            name,
            (&on as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if result == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Asks the kernel to report each received datagram's ECN field. On an
/// IPv6 socket both options are set, so IPv4 datagrams reaching a
/// dual-stack socket report theirs too.
pub fn enable_ecn_receive(socket: &UdpSocket) -> io::Result<()> {
    if socket.local_addr()?.is_ipv4() {
        return set_int_option(socket, libc::IPPROTO_IP, libc::IP_RECVTOS);
    }
    set_int_option(socket, libc::IPPROTO_IPV6, libc::IPV6_RECVTCLASS)?;
    // An IPv6-only socket may refuse this; it then never sees IPv4.
    let _ = set_int_option(socket, libc::IPPROTO_IP, libc::IP_RECVTOS);
    Ok(())
}

/// A socket address in the C form `sendmsg` takes.
fn raw_address(address: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain data, valid when zeroed.
    let mut storage: libc::sockaddr_storage = unsafe { MaybeUninit::zeroed().assume_init() };
    let len = match address {
        SocketAddr::V4(a) => {
            let raw = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), raw) };
            size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let raw = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo().to_be(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), raw) };
            size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

/// The address the kernel wrote into `storage`, if it is an IP one.
fn parse_address(storage: &libc::sockaddr_storage) -> Option<SocketAddr> {
    match libc::c_int::from(storage.ss_family) {
        libc::AF_INET => {
            // SAFETY: the family says the storage holds a sockaddr_in.
            let a: libc::sockaddr_in =
                unsafe { std::ptr::read((storage as *const libc::sockaddr_storage).cast()) };
            let ip = Ipv4Addr::from(a.sin_addr.s_addr.to_ne_bytes());
            Some(SocketAddr::V4(SocketAddrV4::new(
                ip,
                u16::from_be(a.sin_port),
            )))
        }
        libc::AF_INET6 => {
            // SAFETY: the family says the storage holds a sockaddr_in6.
            let a: libc::sockaddr_in6 =
                unsafe { std::ptr::read((storage as *const libc::sockaddr_storage).cast()) };
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(a.sin6_addr.s6_addr),
                u16::from_be(a.sin6_port),
                u32::from_be(a.sin6_flowinfo),
                a.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// Receives one datagram into `buf`: its length, its sender and its ECN
/// codepoint (Not-ECT when the kernel reported none).
pub fn recv_with_ecn(socket: &UdpSocket, buf: &mut [u8]) -> io::Result<(usize, SocketAddr, Ecn)> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut control = ControlBuffer { bytes: [0; 128] };
    // SAFETY: msghdr and sockaddr_storage are plain data; every pointer
    // set below outlives the call; the kernel writes at most msg_namelen
    // bytes of address and msg_controllen of control data, and the CMSG
    // macros walk only what it wrote.
    unsafe {
        let mut storage: libc::sockaddr_storage = MaybeUninit::zeroed().assume_init();
        let mut message: libc::msghdr = MaybeUninit::zeroed().assume_init();
        message.msg_name = (&mut storage as *mut libc::sockaddr_storage).cast();
        message.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        message.msg_iov = &mut iov;
        message.msg_iovlen = 1;
        message.msg_control = control.bytes.as_mut_ptr().cast();
        message.msg_controllen = size_of::<ControlBuffer>();
        let received = libc::recvmsg(socket.as_raw_fd(), &mut message, 0);
        if received < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut ecn = Ecn::NotEct;
        let mut header = libc::CMSG_FIRSTHDR(&message);
        while !header.is_null() {
            let (level, kind) = ((*header).cmsg_level, (*header).cmsg_type);
            let data = libc::CMSG_DATA(header);
            let data_len = (*header)
                .cmsg_len
                .saturating_sub(libc::CMSG_LEN(0) as usize);
            if level == libc::IPPROTO_IP && kind == libc::IP_TOS && data_len >= 1 {
                // IPv4 reports the TOS byte as one byte.
                ecn = Ecn::from_tos(*data);
            } else if level == libc::IPPROTO_IPV6
                && kind == libc::IPV6_TCLASS
                && data_len >= size_of::<libc::c_int>()
            {
                let class = std::ptr::read_unaligned(data.cast::<libc::c_int>());
                ecn = Ecn::from_tos(class as u8);
            }
            header = libc::CMSG_NXTHDR(&message, header);
        }
        let from = parse_address(&storage).ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidData, "datagram from a non-IP address")
        })?;
        Ok((received as usize, from, ecn))
    }
}

/// Sends `bytes` to `to` with the ECN field set to `ecn` (the rest of the
/// TOS byte zero): an `IP_TOS` control message towards an IPv4 address
/// (an IPv6 socket sends those through its IPv4 path too), `IPV6_TCLASS`
/// towards an IPv6 one. `to` may be a connected socket's peer.
pub fn send_with_ecn(
    socket: &UdpSocket,
    bytes: &[u8],
    to: SocketAddr,
    ecn: Ecn,
) -> io::Result<usize> {
    let (address, address_len) = raw_address(to);
    let mut iov = libc::iovec {
        iov_base: bytes.as_ptr() as *mut libc::c_void,
        iov_len: bytes.len(),
    };
    let (level, kind) = match to {
        SocketAddr::V4(_) => (libc::IPPROTO_IP, libc::IP_TOS),
        SocketAddr::V6(_) => (libc::IPPROTO_IPV6, libc::IPV6_TCLASS),
    };
    let value = libc::c_int::from(ecn.bits());
    let mut control = ControlBuffer { bytes: [0; 128] };
    // SAFETY: as in `recv_with_ecn`; the one control message is written
    // inside `control` through the CMSG macros, within msg_controllen.
    unsafe {
        let mut message: libc::msghdr = MaybeUninit::zeroed().assume_init();
        message.msg_name =
            (&address as *const libc::sockaddr_storage as *mut libc::sockaddr_storage).cast();
        message.msg_namelen = address_len;
        message.msg_iov = &mut iov;
        message.msg_iovlen = 1;
        message.msg_control = control.bytes.as_mut_ptr().cast();
        message.msg_controllen = libc::CMSG_SPACE(size_of::<libc::c_int>() as u32) as usize;
        let header = libc::CMSG_FIRSTHDR(&message);
        (*header).cmsg_level = level;
        (*header).cmsg_type = kind;
        (*header).cmsg_len = libc::CMSG_LEN(size_of::<libc::c_int>() as u32) as usize;
        std::ptr::write_unaligned(libc::CMSG_DATA(header).cast::<libc::c_int>(), value);
        let sent = libc::sendmsg(socket.as_raw_fd(), &message, 0);
        if sent < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(sent as usize)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
