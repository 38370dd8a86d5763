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

#[cfg(test)]
mod tests {
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;
    use std::time::Duration;

    use super::*;
    use crate::io::batch::{recv_many, recv_segments, send_many, send_segments, RecvSlots};
    use crate::io::socket::{bind_udp, ipv6_loopback_available, SocketOptions};

    fn socket(addr: &str) -> UdpSocket {
        let (socket, _) = bind_udp(addr.parse().unwrap(), SocketOptions::default()).unwrap();
        socket.set_nonblocking(false).unwrap();
        socket
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        assert!(enable_ecn_reception(
            &socket,
            socket.local_addr().unwrap().is_ipv6()
        ));
        socket
    }

    /// Sends one datagram with each codepoint from `sender` to `to` and
    /// returns the codepoints `receiver` read.
    fn round_trip(sender: &UdpSocket, receiver: &UdpSocket, to: SocketAddr) -> Vec<Ecn> {
        let codepoints = [Ecn::Ect0, Ecn::Ect1, Ecn::Ce, Ecn::NotEct];
        let mut arrived = Vec::new();
        let mut buf = vec![0u8; 2048];
        for ecn in codepoints {
            send_segments(sender.as_raw_fd(), to, &[7; 100], 100, ecn).unwrap();
            let got = recv_segments(receiver.as_raw_fd(), &mut buf).unwrap();
            assert_eq!(got.len, 100);
            arrived.push(got.ecn);
        }
        arrived
    }

    fn ipv6_or_skip(test: &str) -> bool {
        let available = ipv6_loopback_available();
        if !available {
            eprintln!("skipping {test}: IPv6 loopback (::1) is not available on this host");
        }
        available
    }

    #[test]
    fn a_datagram_sent_with_each_codepoint_arrives_with_it_over_ipv4() {
        let (sender, receiver) = (socket("127.0.0.1:0"), socket("127.0.0.1:0"));
        let to = receiver.local_addr().unwrap();
        assert_eq!(
            round_trip(&sender, &receiver, to),
            [Ecn::Ect0, Ecn::Ect1, Ecn::Ce, Ecn::NotEct]
        );
    }

    #[test]
    fn a_datagram_sent_with_each_codepoint_arrives_with_it_over_ipv6() {
        if !ipv6_or_skip("a_datagram_sent_with_each_codepoint_arrives_with_it_over_ipv6") {
            return;
        }
        let (sender, receiver) = (socket("[::1]:0"), socket("[::1]:0"));
        let to = receiver.local_addr().unwrap();
        assert_eq!(
            round_trip(&sender, &receiver, to),
            [Ecn::Ect0, Ecn::Ect1, Ecn::Ce, Ecn::NotEct]
        );
    }

    #[test]
    fn a_dual_stack_socket_marks_and_reads_ipv4_datagrams() {
        if !ipv6_or_skip("a_dual_stack_socket_marks_and_reads_ipv4_datagrams") {
            return;
        }
        let dual = socket("[::]:0");
        let plain = socket("127.0.0.1:0");
        // To an IPv4-mapped destination, as a dual-stack endpoint spells it.
        let mapped = SocketAddr::new(
            std::net::Ipv4Addr::LOCALHOST.to_ipv6_mapped().into(),
            plain.local_addr().unwrap().port(),
        );
        assert_eq!(
            round_trip(&dual, &plain, mapped),
            [Ecn::Ect0, Ecn::Ect1, Ecn::Ce, Ecn::NotEct]
        );
        // And back: an IPv4 datagram read on the dual-stack socket.
        let to = SocketAddr::from(([127, 0, 0, 1], dual.local_addr().unwrap().port()));
        assert_eq!(
            round_trip(&plain, &dual, to),
            [Ecn::Ect0, Ecn::Ect1, Ecn::Ce, Ecn::NotEct]
        );
    }

    #[test]
    fn a_gso_batch_and_a_recvmmsg_batch_carry_their_codepoints() {
        let (sender, receiver) = (socket("127.0.0.1:0"), socket("127.0.0.1:0"));
        let to = receiver.local_addr().unwrap();
        // A GSO send of three segments, all ECT(0); without GSO the kernel
        // sends them one by one, which must read the same.
        if crate::io::gso_supported(&sender) {
            send_segments(sender.as_raw_fd(), to, &[1; 300], 100, Ecn::Ect0).unwrap();
            let mut slots = RecvSlots::default();
            let mut codepoints = Vec::new();
            while codepoints.len() < 3 {
                for (_, _, ecn) in recv_many(receiver.as_raw_fd(), &mut slots).unwrap() {
                    codepoints.push(ecn);
                }
            }
            assert_eq!(codepoints, [Ecn::Ect0; 3]);
        }
        // sendmmsg: one codepoint per datagram.
        let payload = [2u8; 50];
        let batch = [
            (&payload[..], to, Ecn::Ce),
            (&payload[..], to, Ecn::NotEct),
            (&payload[..], to, Ecn::Ect1),
        ];
        assert_eq!(send_many(sender.as_raw_fd(), &batch).unwrap(), 3);
        let mut slots = RecvSlots::default();
        let mut codepoints = Vec::new();
        while codepoints.len() < 3 {
            for (_, _, ecn) in recv_many(receiver.as_raw_fd(), &mut slots).unwrap() {
                codepoints.push(ecn);
            }
        }
        assert_eq!(codepoints, [Ecn::Ce, Ecn::NotEct, Ecn::Ect1]);
    }

    #[test]
    fn a_gro_run_reads_with_its_codepoint() {
        let (sender, receiver) = (socket("127.0.0.1:0"), socket("127.0.0.1:0"));
        if !crate::io::gso_supported(&sender) {
            eprintln!("skipping: this kernel has no UDP GSO");
            return;
        }
        let gro = crate::io::enable_gro(&receiver);
        let to = receiver.local_addr().unwrap();
        send_segments(sender.as_raw_fd(), to, &[3; 3000], 1000, Ecn::Ce).unwrap();
        let mut buf = vec![0u8; 65_535];
        let mut bytes = 0;
        while bytes < 3000 {
            let got = recv_segments(receiver.as_raw_fd(), &mut buf).unwrap();
            assert_eq!(got.ecn, Ecn::Ce, "GRO on: {gro}, run of {}", got.len);
            bytes += got.len;
        }
    }
}
