//! The ECN field on real sockets (RFC 9000 §13.4): asking the kernel for
//! the TOS byte or Traffic Class of each datagram received, reading it from
//! the control message, and setting it per datagram sent.
//!
//! Linux hands an IPv4 datagram's TOS as an `IP_TOS` control message (one
//! byte) once `IP_RECVTOS` is on, and an IPv6 datagram's Traffic Class as
//! `IPV6_TCLASS` (an int) once `IPV6_RECVTCLASS` is on; a dual-stack IPv6
//! socket needs both, since its IPv4 datagrams come with `IP_TOS`. On
//! sending, the codepoint goes in an `IP_TOS` control message to an IPv4
//! destination, an IPv4-mapped one on a dual-stack socket included (Linux
//! takes `IPV6_TCLASS` only for IPv6 proper: quinn-udp does the same), and
//! `IPV6_TCLASS` otherwise, both as an int.

use std::mem::size_of;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;

use crate::wire::Ecn;

/// Room one ECN control message takes in a control buffer.
pub(super) fn ecn_cmsg_space() -> usize {
    // SAFETY: CMSG_SPACE only computes a size.
    unsafe { libc::CMSG_SPACE(size_of::<libc::c_int>() as u32) as usize }
}

/// Asks the kernel to report the ECN field of each datagram `socket`
/// receives (IPv4 and, on an IPv6 socket, IPv6 and IPv4-mapped). False if
/// it refused (datagrams then read as not-ECT).
pub fn enable_ecn_reception(socket: &impl AsRawFd, ipv6: bool) -> bool {
    let on: libc::c_int = 1;
    let set = |level, name| {
        // SAFETY: passes a c_int of the stated size.
        unsafe {
            libc::setsockopt(
                socket.as_raw_fd(),
                level,
                name,
                (&on as *const libc::c_int).cast(),
                size_of::<libc::c_int>() as libc::socklen_t,
            ) == 0
        }
    };
    if ipv6 {
        let tclass = set(libc::IPPROTO_IPV6, libc::IPV6_RECVTCLASS);
        // Dual-stack: IPv4 datagrams report IP_TOS. A v6-only socket may
        // refuse it, which costs nothing.
        let _ = set(libc::IPPROTO_IP, libc::IP_RECVTOS);
        tclass
    } else {
        set(libc::IPPROTO_IP, libc::IP_RECVTOS)
    }
}

/// The ECN codepoint a received control message carries, if it is the TOS
/// byte or the Traffic Class.
///
/// # Safety
/// `header` points at a control message the kernel wrote, inside its
/// buffer (as `CMSG_FIRSTHDR`/`CMSG_NXTHDR` give them).
pub(super) unsafe fn ecn_of_cmsg(header: *const libc::cmsghdr) -> Option<Ecn> {
    let (level, kind, len) = (
        (*header).cmsg_level,
        (*header).cmsg_type,
        (*header).cmsg_len,
    );
    let data = libc::CMSG_DATA(header);
    match (level, kind) {
        // IPv4: one byte (`IP_TOS`; some kernels say `IP_RECVTOS`).
        (libc::IPPROTO_IP, libc::IP_TOS | libc::IP_RECVTOS) => {
            if len >= libc::CMSG_LEN(size_of::<u8>() as u32) as usize {
                Some(Ecn::from_tos(std::ptr::read_unaligned(data)))
            } else {
                None
            }
        }
        (libc::IPPROTO_IPV6, libc::IPV6_TCLASS) => {
            if len >= libc::CMSG_LEN(size_of::<libc::c_int>() as u32) as usize {
                let tclass = std::ptr::read_unaligned(data.cast::<libc::c_int>());
                Some(Ecn::from_tos(tclass as u8))
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Writes the control message that sends a datagram to `to` with `ecn` at
/// `header` (which has [`ecn_cmsg_space`] bytes of room).
///
/// # Safety
/// `header` is a control message slot inside the `msghdr`'s control
/// buffer, as `CMSG_FIRSTHDR`/`CMSG_NXTHDR` give them, with room left.
pub(super) unsafe fn write_ecn_cmsg(header: *mut libc::cmsghdr, to: SocketAddr, ecn: Ecn) {
    let ipv4 = match to {
        SocketAddr::V4(_) => true,
        SocketAddr::V6(v6) => v6.ip().to_ipv4_mapped().is_some(),
    };
    let (level, kind) = if ipv4 {
        (libc::IPPROTO_IP, libc::IP_TOS)
    } else {
        (libc::IPPROTO_IPV6, libc::IPV6_TCLASS)
    };
    (*header).cmsg_level = level;
    (*header).cmsg_type = kind;
    (*header).cmsg_len = libc::CMSG_LEN(size_of::<libc::c_int>() as u32) as usize;
    let value = libc::c_int::from(ecn.bits());
    std::ptr::write_unaligned(libc::CMSG_DATA(header).cast::<libc::c_int>(), value);
}
