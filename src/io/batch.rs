//! Batched UDP I/O on Linux: generic segmentation offload (GSO,
//! `UDP_SEGMENT`) sends many equal-size datagrams to one address in one
//! `sendmsg`; generic receive offload (GRO, `UDP_GRO`) hands back a run of
//! equal-size datagrams from one sender in one `recvmsg`.
//!
//! GSO needs UDP checksums: the kernel refuses it on a socket with
//! `SO_NO_CHECK` (DESIGN §5), so the driver uses GSO/GRO only when
//! corruption notices are off, and otherwise `sendmmsg` / `recvmmsg`
//! (many datagrams, each with its own header, per call). A kernel or device
//! that refuses GSO is noticed once and the driver stops asking.

use std::io;
use std::mem::{size_of, MaybeUninit};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};

use socket2::SockAddr;

use super::ecn::{ecn_cmsg_space, ecn_of_cmsg, write_ecn_cmsg};
use crate::wire::Ecn;

/// Linux `UDP_SEGMENT` (linux/udp.h, since 4.18): level `SOL_UDP`; as a
/// control message, the size of each segment of a GSO send.
pub const UDP_SEGMENT: libc::c_int = 103;
/// Linux `UDP_GRO` (linux/udp.h, since 5.0): level `SOL_UDP`; as an option
/// it turns GRO on, as a control message it carries the segment size.
pub const UDP_GRO: libc::c_int = 104;
/// Most segments in one GSO send (linux/udp.h `UDP_MAX_SEGMENTS`, 64 in
/// kernels before 6.9).
pub const MAX_GSO_SEGMENTS: usize = 64;
/// Most payload bytes in one GSO send or GRO receive: one IP datagram's
/// worth (65535 less the IPv6 and UDP headers).
pub const MAX_BATCH_BYTES: usize = 65_535 - 40 - 8;

/// Whether the kernel knows `UDP_SEGMENT` for this socket.
pub fn gso_supported(socket: &impl AsRawFd) -> bool {
    let mut value: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `value` and `len` describe a writable c_int.
    let result = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::SOL_UDP,
            UDP_SEGMENT,
            (&mut value as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    result == 0
}

/// Turns GRO on; false if the kernel refuses.
pub fn enable_gro(socket: &impl AsRawFd) -> bool {
    set_gro(socket, true)
}

/// Turns GRO on or off; false if the kernel refuses.
pub fn set_gro(socket: &impl AsRawFd, on: bool) -> bool {
    let on = libc::c_int::from(on);
    // SAFETY: passes a c_int of the stated size.
    let result = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_UDP,
            UDP_GRO,
            (&on as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    result == 0
}

/// Room for the control messages of one datagram (a segment size or a
/// GRO run's, and the ECN field), aligned.
#[repr(C)]
#[derive(Clone, Copy)]
union ControlBuffer {
    bytes: [u8; 64],
    _align: libc::cmsghdr,
}

/// Sends `payload` to `to` as datagrams of `segment_size` bytes (the last
/// may be shorter) in one `sendmsg`, each with `ecn` in its IP header
/// (`NotEct`: the socket's own TOS). With `segment_size >= payload.len()`
/// it is a plain send.
pub fn send_segments(
    fd: RawFd,
    to: SocketAddr,
    payload: &[u8],
    segment_size: usize,
    ecn: Ecn,
) -> io::Result<usize> {
    let address = SockAddr::from(to);
    let mut iov = libc::iovec {
        iov_base: payload.as_ptr() as *mut libc::c_void,
        iov_len: payload.len(),
    };
    let mut control = ControlBuffer { bytes: [0; 64] };
    // SAFETY: msghdr is plain data; every pointer set below outlives the
    // sendmsg call, and the control message is written inside `control`
    // through the CMSG macros, which stay within `msg_controllen`.
    unsafe {
        let mut message: libc::msghdr = MaybeUninit::zeroed().assume_init();
        message.msg_name = address.as_ptr() as *mut libc::c_void;
        message.msg_namelen = address.len();
        message.msg_iov = &mut iov;
        message.msg_iovlen = 1;
        let segmented = segment_size < payload.len();
        let marked = ecn != Ecn::NotEct;
        let gso_space = libc::CMSG_SPACE(size_of::<u16>() as u32) as usize;
        let space =
            if segmented { gso_space } else { 0 } + if marked { ecn_cmsg_space() } else { 0 };
        if space > 0 {
            message.msg_control = control.bytes.as_mut_ptr().cast();
            message.msg_controllen = space;
        }
        let mut header = libc::CMSG_FIRSTHDR(&message);
        if segmented {
            let segment = u16::try_from(segment_size)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "segment too large"))?;
            (*header).cmsg_level = libc::SOL_UDP;
            (*header).cmsg_type = UDP_SEGMENT;
            (*header).cmsg_len = libc::CMSG_LEN(size_of::<u16>() as u32) as usize;
            std::ptr::write_unaligned(libc::CMSG_DATA(header).cast::<u16>(), segment);
            header = libc::CMSG_NXTHDR(&message, header);
        }
        if marked && !header.is_null() {
            write_ecn_cmsg(header, to, ecn);
        }
        let sent = libc::sendmsg(fd, &message, 0);
        if sent < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(sent as usize)
        }
    }
}

/// What one `recv_segments` got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Received {
    /// Bytes written into the buffer.
    pub len: usize,
    /// The sender's address.
    pub from: SocketAddr,
    /// Size of each datagram in the buffer (the last may be shorter);
    /// `len` when GRO did not coalesce.
    pub segment_size: usize,
    /// The ECN field of the datagrams (GRO coalesces only datagrams with
    /// the same one); `NotEct` unless `enable_ecn_reception` asked for it.
    pub ecn: Ecn,
}

/// Receives one datagram, or with GRO on a run of coalesced datagrams,
/// into `buf`.
pub fn recv_segments(fd: RawFd, buf: &mut [u8]) -> io::Result<Received> {
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let mut control = ControlBuffer { bytes: [0; 64] };
    // SAFETY: as in `send_segments`; the kernel writes at most
    // `msg_namelen` bytes of address and `msg_controllen` of control data,
    // and the CMSG macros walk only what it wrote.
    unsafe {
        let mut storage: libc::sockaddr_storage = MaybeUninit::zeroed().assume_init();
        let mut message: libc::msghdr = MaybeUninit::zeroed().assume_init();
        message.msg_name = (&mut storage as *mut libc::sockaddr_storage).cast();
        message.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
        message.msg_iov = &mut iov;
        message.msg_iovlen = 1;
        message.msg_control = control.bytes.as_mut_ptr().cast();
        message.msg_controllen = size_of::<ControlBuffer>();
        let received = libc::recvmsg(fd, &mut message, 0);
        if received < 0 {
            return Err(io::Error::last_os_error());
        }
        let len = received as usize;
        let mut segment_size = len;
        let mut ecn = Ecn::NotEct;
        let mut header = libc::CMSG_FIRSTHDR(&message);
        while !header.is_null() {
            if (*header).cmsg_level == libc::SOL_UDP && (*header).cmsg_type == UDP_GRO {
                let size = std::ptr::read_unaligned(libc::CMSG_DATA(header).cast::<libc::c_int>());
                if size > 0 {
                    segment_size = size as usize;
                }
            } else if let Some(field) = ecn_of_cmsg(header) {
                ecn = field;
            }
            header = libc::CMSG_NXTHDR(&message, header);
        }
        let address = SockAddr::new(storage, message.msg_namelen);
        let from = address.as_socket().ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidData, "datagram from a non-IP address")
        })?;
        Ok(Received {
            len,
            from,
            segment_size,
            ecn,
        })
    }
}

/// Datagrams per `sendmmsg` / `recvmmsg` call when GSO / GRO cannot be
/// used (checksums off).
pub const MAX_MMSG: usize = 32;
/// Receive slot per datagram for `recvmmsg`: a datagram larger than this
/// arrives truncated and is dropped (sift's datagrams are ≤ 1500 bytes on
/// ordinary paths, ≤ 9000 with jumbo frames).
pub const MMSG_SLOT_BYTES: usize = 16 * 1024;

/// Sends each `(payload, to, ecn)` as its own datagram in one
/// `sendmmsg`, with `ecn` in its IP header. Returns how many were sent (at
/// least one on success; the rest are for the next call). An error
/// concerns the first datagram.
pub fn send_many(fd: RawFd, datagrams: &[(&[u8], SocketAddr, Ecn)]) -> io::Result<usize> {
    let count = datagrams.len().min(MAX_MMSG);
    let datagrams = datagrams.get(..count).unwrap_or_default();
    let addresses: Vec<SockAddr> = datagrams
        .iter()
        .map(|(_, to, _)| SockAddr::from(*to))
        .collect();
    let mut controls = vec![ControlBuffer { bytes: [0; 64] }; count];
    let mut iovecs: Vec<libc::iovec> = datagrams
        .iter()
        .map(|(payload, _, _)| libc::iovec {
            iov_base: payload.as_ptr() as *mut libc::c_void,
            iov_len: payload.len(),
        })
        .collect();
    // SAFETY: every msghdr points into `addresses`, `iovecs` and
    // `controls`, which outlive the call; the kernel only reads them. The
    // ECN control message is written inside its own buffer through the
    // CMSG macros.
    unsafe {
        let mut messages: Vec<libc::mmsghdr> = Vec::with_capacity(count);
        for (((address, iov), control), (_, to, ecn)) in addresses
            .iter()
            .zip(iovecs.iter_mut())
            .zip(controls.iter_mut())
            .zip(datagrams)
        {
            let mut message: libc::mmsghdr = MaybeUninit::zeroed().assume_init();
            message.msg_hdr.msg_name = address.as_ptr() as *mut libc::c_void;
            message.msg_hdr.msg_namelen = address.len();
            message.msg_hdr.msg_iov = iov;
            message.msg_hdr.msg_iovlen = 1;
            if *ecn != Ecn::NotEct {
                message.msg_hdr.msg_control = control.bytes.as_mut_ptr().cast();
                message.msg_hdr.msg_controllen = ecn_cmsg_space();
                let header = libc::CMSG_FIRSTHDR(&message.msg_hdr);
                if !header.is_null() {
                    write_ecn_cmsg(header, *to, *ecn);
                }
            }
            messages.push(message);
        }
        let sent = libc::sendmmsg(fd, messages.as_mut_ptr(), count as libc::c_uint, 0);
        if sent < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(sent as usize)
        }
    }
}

/// Receive slots for [`recv_many`]: one buffer cut into `MAX_MMSG` slots.
#[derive(Debug)]
pub struct RecvSlots {
    buffer: Vec<u8>,
}

impl Default for RecvSlots {
    fn default() -> Self {
        Self {
            buffer: vec![0; MAX_MMSG * MMSG_SLOT_BYTES],
        }
    }
}

impl RecvSlots {
    /// The datagram in slot `index`, `len` bytes long.
    pub fn datagram(&self, index: usize, len: usize) -> &[u8] {
        let start = index * MMSG_SLOT_BYTES;
        self.buffer
            .get(start..start + len.min(MMSG_SLOT_BYTES))
            .unwrap_or_default()
    }
}

/// Receives up to `MAX_MMSG` datagrams in one `recvmmsg` into `slots`:
/// returns `(length, from, ECN field)` per datagram, in slot order.
/// Truncated datagrams (larger than a slot) are left out.
pub fn recv_many(fd: RawFd, slots: &mut RecvSlots) -> io::Result<Vec<(usize, SocketAddr, Ecn)>> {
    // SAFETY: each msghdr points at its own slot of `slots.buffer` and its
    // own sockaddr_storage, all alive for the call; the kernel writes at
    // most `iov_len` and `msg_namelen` bytes into them.
    unsafe {
        let mut storages: Vec<libc::sockaddr_storage> =
            vec![MaybeUninit::zeroed().assume_init(); MAX_MMSG];
        let base = slots.buffer.as_mut_ptr();
        let mut iovecs: Vec<libc::iovec> = (0..MAX_MMSG)
            .map(|index| libc::iovec {
                iov_base: base.add(index * MMSG_SLOT_BYTES).cast(),
                iov_len: MMSG_SLOT_BYTES,
            })
            .collect();
        let mut controls = vec![ControlBuffer { bytes: [0; 64] }; MAX_MMSG];
        let mut messages: Vec<libc::mmsghdr> = Vec::with_capacity(MAX_MMSG);
        for ((storage, iov), control) in storages
            .iter_mut()
            .zip(iovecs.iter_mut())
            .zip(controls.iter_mut())
        {
            let mut message: libc::mmsghdr = MaybeUninit::zeroed().assume_init();
            message.msg_hdr.msg_name = (storage as *mut libc::sockaddr_storage).cast();
            message.msg_hdr.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
            message.msg_hdr.msg_iov = iov;
            message.msg_hdr.msg_iovlen = 1;
            message.msg_hdr.msg_control = control.bytes.as_mut_ptr().cast();
            message.msg_hdr.msg_controllen = size_of::<ControlBuffer>();
            messages.push(message);
        }
        let received = libc::recvmmsg(
            fd,
            messages.as_mut_ptr(),
            MAX_MMSG as libc::c_uint,
            // Block (when the socket blocks) only for the first datagram.
            libc::MSG_WAITFORONE,
            std::ptr::null_mut(),
        );
        if received < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut datagrams = Vec::with_capacity(received as usize);
        for (message, storage) in messages.iter().zip(storages).take(received as usize) {
            if message.msg_hdr.msg_flags & libc::MSG_TRUNC != 0 {
                tracing::debug!("dropping a datagram larger than {MMSG_SLOT_BYTES} bytes");
                datagrams.push((0, SocketAddr::from(([0, 0, 0, 0], 0)), Ecn::NotEct));
                continue;
            }
            let address = SockAddr::new(storage, message.msg_hdr.msg_namelen);
            let from = address
                .as_socket()
                .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)));
            let mut ecn = Ecn::NotEct;
            let mut header = libc::CMSG_FIRSTHDR(&message.msg_hdr);
            while !header.is_null() {
                if let Some(field) = ecn_of_cmsg(header) {
                    ecn = field;
                }
                header = libc::CMSG_NXTHDR(&message.msg_hdr, header);
            }
            datagrams.push((message.msg_len as usize, from, ecn));
        }
        Ok(datagrams)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::socket::{bind_udp, SocketOptions};

    #[test]
    fn gso_send_arrives_as_separate_datagrams_or_one_gro_run() {
        let (sender, _) =
            bind_udp("127.0.0.1:0".parse().unwrap(), SocketOptions::default()).unwrap();
        let (receiver, _) =
            bind_udp("127.0.0.1:0".parse().unwrap(), SocketOptions::default()).unwrap();
        if !gso_supported(&sender) {
            eprintln!("skipping: this kernel has no UDP GSO");
            return;
        }
        let gro = enable_gro(&receiver);
        let payload: Vec<u8> = (0..3000u32).map(|i| i as u8).collect();
        let to = receiver.local_addr().unwrap();
        let sent = send_segments(sender.as_raw_fd(), to, &payload, 1200, Ecn::NotEct).unwrap();
        assert_eq!(sent, 3000);

        // Three datagrams of 1200, 1200 and 600 bytes, in one or more reads.
        let mut got = Vec::new();
        let mut sizes = Vec::new();
        let mut buf = vec![0u8; MAX_BATCH_BYTES];
        receiver
            .set_nonblocking(false)
            .and_then(|()| receiver.set_read_timeout(Some(std::time::Duration::from_secs(5))))
            .unwrap();
        while got.len() < payload.len() {
            let received = recv_segments(receiver.as_raw_fd(), &mut buf).unwrap();
            assert_eq!(received.from, sender.local_addr().unwrap());
            got.extend_from_slice(&buf[..received.len]);
            for chunk in buf[..received.len].chunks(received.segment_size) {
                sizes.push(chunk.len());
            }
        }
        assert_eq!(got, payload);
        assert_eq!(sizes, vec![1200, 1200, 600], "GRO on: {gro}");
    }

    #[test]
    fn sendmmsg_and_recvmmsg_move_several_datagrams_per_call() {
        let options = SocketOptions {
            disable_checksums: true,
            ..SocketOptions::default()
        };
        let (sender, _) = bind_udp("127.0.0.1:0".parse().unwrap(), options).unwrap();
        let (receiver, _) = bind_udp("127.0.0.1:0".parse().unwrap(), options).unwrap();
        let to = receiver.local_addr().unwrap();
        let payloads: Vec<Vec<u8>> = (1..=5u8).map(|i| vec![i; 100 * i as usize]).collect();
        let batch: Vec<(&[u8], SocketAddr, Ecn)> =
            payloads.iter().map(|p| (&p[..], to, Ecn::NotEct)).collect();
        assert_eq!(send_many(sender.as_raw_fd(), &batch).unwrap(), 5);

        let mut slots = RecvSlots::default();
        let mut got: Vec<Vec<u8>> = Vec::new();
        receiver
            .set_nonblocking(false)
            .and_then(|()| receiver.set_read_timeout(Some(std::time::Duration::from_secs(5))))
            .unwrap();
        while got.len() < 5 {
            for (index, (len, from, _)) in recv_many(receiver.as_raw_fd(), &mut slots)
                .unwrap()
                .into_iter()
                .enumerate()
            {
                assert_eq!(from, sender.local_addr().unwrap());
                got.push(slots.datagram(index, len).to_vec());
            }
        }
        assert_eq!(got, payloads);
    }

    /// The ECN field through `io::ecn`'s control messages, on loopback.
    mod ecn {
        use std::net::UdpSocket;
        use std::time::Duration;

        use super::super::*;
        use crate::io::ecn::enable_ecn_reception;
        use crate::io::socket::{bind_udp, ipv6_loopback_available, SocketOptions};
        use crate::wire::Ecn;

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
}
