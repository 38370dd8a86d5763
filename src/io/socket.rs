//! The UDP socket: creation through `socket2`, the options sift needs, and
//! reading them back.
//!
//! - Big kernel buffers (`SO_RCVBUF` / `SO_SNDBUF`), so a burst at line rate
//!   is not dropped by our own host before the transport sees it.
//! - IPv6 sockets are dual-stack (`IPV6_V6ONLY` off, whatever the
//!   `net.ipv6.bindv6only` sysctl says): one bound to `[::]` also takes
//!   IPv4, whose peers the kernel reports as `::ffff:a.b.c.d`
//!   (`conn::canonical_peer` gives them their plain spelling).
//! - With corruption notices offered, UDP checksums off: `SO_NO_CHECK` for
//!   IPv4, `UDP_NO_CHECK6_TX` and `UDP_NO_CHECK6_RX` for IPv6 (DESIGN §5).
//!   Otherwise the kernel drops a datagram with a flipped bit and the
//!   payload tag never gets the chance to name it. A dual-stack socket gets
//!   all three: IPv4-mapped traffic on an IPv6 socket leaves through the
//!   IPv4 code, which reads `SO_NO_CHECK` and ignores `UDP_NO_CHECK6_TX`.
//!   A kernel that refuses is logged, not fatal: notices then only help
//!   against corruption the UDP checksum misses.
//! - The kernel neither fragments nor caps what sift sends at its cached
//!   path MTU: `IP_MTU_DISCOVER` = `IP_PMTUDISC_PROBE` (and the IPv6
//!   twin, with `IPV6_DONTFRAG`). Datagrams leave with Don't Fragment, so
//!   a path MTU probe larger than the path is lost, not fragmented into a
//!   false success (`conn::pmtud`); one larger than the interface fails
//!   with `EMSGSIZE`, which the datapath counts as a lost datagram.
//! - Receiving, the families differ: IPv4 always accepts a zero checksum
//!   ("no checksum", RFC 768), IPv6 only with `UDP_NO_CHECK6_RX` (RFC 6936
//!   makes zero-checksum IPv6 an opt-in). A relay that must pass on what a
//!   notices-on sender sends asks for that alone (`accept_zero_checksums`).

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
    /// (set when the configuration offers corruption notices): send with a
    /// zero checksum and accept zero checksums, in both families.
    pub disable_checksums: bool,
    /// Accept IPv6 datagrams with a zero checksum while still sending with
    /// checksums (`UDP_NO_CHECK6_RX` alone): what a relay needs to take
    /// traffic from a sender with notices on. IPv4 always accepts them.
    /// Implied by `disable_checksums`.
    pub accept_zero_checksums: bool,
    /// `SO_RCVBUF` and `SO_SNDBUF` asked for, in bytes.
    pub buffer_bytes: usize,
    /// `SO_REUSEPORT`: join the group of sockets bound to the same address
    /// (the workers of a multi-core server, `io::steering`).
    pub reuse_port: bool,
}

impl Default for SocketOptions {
    fn default() -> Self {
        Self {
            disable_checksums: false,
            accept_zero_checksums: false,
            buffer_bytes: SOCKET_BUFFER_BYTES,
            reuse_port: false,
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
    /// UDP checksums are off in both directions, for every family the
    /// socket carries (see [`checksums_disabled`]).
    pub checksums_disabled: bool,
    /// Datagrams with a zero UDP checksum are accepted (always true for
    /// IPv4; `UDP_NO_CHECK6_RX` for IPv6).
    pub zero_checksums_accepted: bool,
    /// An IPv6 socket that also carries IPv4 (`IPV6_V6ONLY` off).
    pub dual_stack: bool,
}

impl SocketReport {
    /// Payload bytes the receive buffer holds: half what `getsockopt`
    /// reports. Linux doubles the size asked for and charges each datagram
    /// its memory's true size against it (the `sk_buff`, page rounding:
    /// a little over the payload for a GRO run on loopback), and a reader
    /// hands freed memory back in batches of up to a quarter of the
    /// buffer, so the doubled figure is never all payload.
    pub fn receive_payload_bytes(&self) -> u64 {
        self.recv_buffer_bytes as u64 / 2
    }
}

/// A non-blocking UDP socket bound to `addr`, with `options` applied. An
/// IPv6 `addr` gives a dual-stack socket: bound to `[::]` it also carries
/// IPv4.
pub fn bind_udp(
    addr: SocketAddr,
    options: SocketOptions,
) -> io::Result<(std::net::UdpSocket, SocketReport)> {
    let domain = Domain::for_address(addr);
    let socket = Socket::new(domain, Type::DGRAM, Some(Protocol::UDP))?;
    if addr.is_ipv6() {
        // Explicitly, not the sysctl's default: `[::]` means every client,
        // IPv4 ones included (the server's default address).
        socket.set_only_v6(false)?;
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
    } else if options.accept_zero_checksums && addr.is_ipv6() {
        request_option(
            &socket,
            libc::IPPROTO_UDP,
            UDP_NO_CHECK6_RX,
            "UDP_NO_CHECK6_RX",
        );
    }
    if options.reuse_port {
        socket.set_reuse_port(true)?;
    }
    forbid_fragmentation(&socket, addr.is_ipv6());
    socket.bind(&addr.into())?;
    let ipv6 = addr.is_ipv6();
    let report = SocketReport {
        recv_buffer_bytes: socket.recv_buffer_size().unwrap_or(0),
        send_buffer_bytes: socket.send_buffer_size().unwrap_or(0),
        checksums_disabled: checksums_disabled(&socket, ipv6).unwrap_or(false),
        zero_checksums_accepted: zero_checksums_accepted(&socket, ipv6).unwrap_or(false),
        dual_stack: ipv6 && !socket.only_v6().unwrap_or(true),
    };
    tracing::debug!(%addr, ?report, "UDP socket ready");
    Ok((socket.into(), report))
}

fn disable_checksums(socket: &Socket, addr: SocketAddr) {
    // SO_NO_CHECK on an IPv6 socket too: its IPv4-mapped traffic is sent
    // by the IPv4 code, which reads only that option.
    request_option(socket, libc::SOL_SOCKET, SO_NO_CHECK, "SO_NO_CHECK");
    if addr.is_ipv6() {
        request_option(
            socket,
            libc::IPPROTO_UDP,
            UDP_NO_CHECK6_TX,
            "UDP_NO_CHECK6_TX",
        );
        request_option(
            socket,
            libc::IPPROTO_UDP,
            UDP_NO_CHECK6_RX,
            "UDP_NO_CHECK6_RX",
        );
    }
}

/// Turns UDP checksums off (`checksum_free`) or on for what `socket` sends
/// from now on: `SO_NO_CHECK`, and `UDP_NO_CHECK6_TX` on an IPv6 socket
/// (its IPv4-mapped traffic reads only the first).
pub fn set_checksum_free_sends(
    socket: &impl AsRawFd,
    checksum_free: bool,
    ipv6: bool,
) -> io::Result<()> {
    let value = libc::c_int::from(checksum_free);
    set_int_option(socket, libc::SOL_SOCKET, SO_NO_CHECK, value)?;
    if ipv6 {
        set_int_option(socket, libc::IPPROTO_UDP, UDP_NO_CHECK6_TX, value)?;
    }
    Ok(())
}

/// Sets a checksum option to 1, logging (not failing) if the kernel refuses.
/// Don't Fragment on every datagram, and no cap at the kernel's cached
/// path MTU (`IP_PMTUDISC_PROBE`): path MTU discovery is sift's own
/// (RFC 8899 §3, "the PL ... sets the DF bit"). A dual-stack socket gets
/// the IPv4 option too, for its mapped traffic. A refusal is logged: the
/// search may then overestimate through fragmentation.
fn forbid_fragmentation(socket: &Socket, ipv6: bool) {
    let mut options = vec![(
        libc::IPPROTO_IP,
        libc::IP_MTU_DISCOVER,
        libc::IP_PMTUDISC_PROBE,
        "IP_MTU_DISCOVER",
    )];
    if ipv6 {
        options.push((
            libc::IPPROTO_IPV6,
            libc::IPV6_MTU_DISCOVER,
            libc::IPV6_PMTUDISC_PROBE,
            "IPV6_MTU_DISCOVER",
        ));
        options.push((libc::IPPROTO_IPV6, libc::IPV6_DONTFRAG, 1, "IPV6_DONTFRAG"));
    }
    for (level, name, value, label) in options {
        if let Err(error) = set_int_option(socket, level, name, value) {
            tracing::warn!(%error, option = label, "the kernel refused to stop fragmenting: path MTU probes may pass by fragmentation");
        }
    }
}

/// The `IP_MTU_DISCOVER` mode of `socket` (`IP_PMTUDISC_*`), read back.
pub fn mtu_discover_mode(socket: &impl AsRawFd) -> io::Result<libc::c_int> {
    get_int_option(socket, libc::IPPROTO_IP, libc::IP_MTU_DISCOVER)
}

fn request_option(socket: &Socket, level: libc::c_int, name: libc::c_int, label: &str) {
    if let Err(error) = set_int_option(socket, level, name, 1) {
        tracing::warn!(
            %error,
            option = label,
            "the kernel refused a UDP checksum option: corrupted datagrams may be dropped before sift sees them"
        );
    }
}

/// Whether UDP checksums are off on `socket` for every family it carries,
/// read back with `getsockopt`: `SO_NO_CHECK` for IPv4; for an IPv6
/// (dual-stack) socket `UDP_NO_CHECK6_TX` and `UDP_NO_CHECK6_RX` as well.
pub fn checksums_disabled(socket: &impl AsRawFd, ipv6: bool) -> io::Result<bool> {
    let ipv4_off = get_int_option(socket, libc::SOL_SOCKET, SO_NO_CHECK)? != 0;
    if !ipv6 {
        return Ok(ipv4_off);
    }
    Ok(ipv4_off
        && get_int_option(socket, libc::IPPROTO_UDP, UDP_NO_CHECK6_TX)? != 0
        && zero_checksums_accepted(socket, true)?)
}

/// Whether `socket` accepts datagrams with a zero UDP checksum: IPv4
/// always does; an IPv6 socket with `UDP_NO_CHECK6_RX`.
pub fn zero_checksums_accepted(socket: &impl AsRawFd, ipv6: bool) -> io::Result<bool> {
    if !ipv6 {
        return Ok(true);
    }
    Ok(get_int_option(socket, libc::IPPROTO_UDP, UDP_NO_CHECK6_RX)? != 0)
}

/// Whether this host can use the IPv6 loopback: a UDP socket binds `[::1]`.
/// False on kernels without IPv6 or with it disabled; IPv6 tests skip
/// then, and tools say so.
pub fn ipv6_loopback_available() -> bool {
    std::net::UdpSocket::bind((std::net::Ipv6Addr::LOCALHOST, 0)).is_ok()
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
    use std::io::Write;

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
    fn sockets_send_with_dont_fragment_past_the_cached_path_mtu() {
        let (socket, _) =
            bind_udp("127.0.0.1:0".parse().unwrap(), SocketOptions::default()).unwrap();
        assert_eq!(mtu_discover_mode(&socket).unwrap(), libc::IP_PMTUDISC_PROBE);
    }

    #[test]
    fn ipv4_socket_keeps_checksums_by_default() {
        let (socket, report) =
            bind_udp("127.0.0.1:0".parse().unwrap(), SocketOptions::default()).unwrap();
        assert!(!report.checksums_disabled);
        assert!(!checksums_disabled(&socket, false).unwrap());
        assert!(report.recv_buffer_bytes > 0 && report.send_buffer_bytes > 0);
    }

    /// IPv6 tests skip, with one line, on a host without IPv6 loopback.
    fn ipv6_or_skip(test: &str) -> bool {
        let available = ipv6_loopback_available();
        if !available {
            // Straight to stderr, past the test harness's capture, so the skip
            // shows in a passing run.
            let _ = writeln!(
                std::io::stderr(),
                "skipping {test}: IPv6 loopback (::1) is not available on this host"
            );
        }
        available
    }

    fn blocking(socket: std::net::UdpSocket) -> std::net::UdpSocket {
        socket.set_nonblocking(false).unwrap();
        socket
            .set_read_timeout(Some(std::time::Duration::from_millis(300)))
            .unwrap();
        socket
    }

    /// Sends `count` datagrams from `sender` to `receiver`; how many arrived.
    fn delivered(
        sender: &std::net::UdpSocket,
        receiver: &std::net::UdpSocket,
        count: usize,
    ) -> usize {
        let to = receiver.local_addr().unwrap();
        for index in 0..count {
            sender.send_to(&[index as u8; 100], to).unwrap();
        }
        let mut buf = [0u8; 200];
        std::iter::from_fn(|| receiver.recv_from(&mut buf).ok())
            .take(count)
            .count()
    }

    #[test]
    fn ipv6_socket_with_checksums_disabled_reads_back_every_option_it_needs() {
        if !ipv6_or_skip("ipv6_socket_with_checksums_disabled_reads_back_every_option_it_needs") {
            return;
        }
        let options = SocketOptions {
            disable_checksums: true,
            ..SocketOptions::default()
        };
        let (socket, report) = bind_udp("[::]:0".parse().unwrap(), options).unwrap();
        assert!(report.checksums_disabled && report.zero_checksums_accepted);
        assert!(report.dual_stack);
        for (level, name) in [
            (libc::SOL_SOCKET, SO_NO_CHECK),
            (libc::IPPROTO_UDP, UDP_NO_CHECK6_TX),
            (libc::IPPROTO_UDP, UDP_NO_CHECK6_RX),
        ] {
            assert_eq!(get_int_option(&socket, level, name).unwrap(), 1, "{name}");
        }
        let (plain, report) =
            bind_udp("[::1]:0".parse().unwrap(), SocketOptions::default()).unwrap();
        assert!(!report.checksums_disabled && !report.zero_checksums_accepted);
        assert!(!checksums_disabled(&plain, true).unwrap());
    }

    #[test]
    fn zero_checksum_ipv6_datagrams_reach_only_sockets_that_accept_them() {
        if !ipv6_or_skip("zero_checksum_ipv6_datagrams_reach_only_sockets_that_accept_them") {
            return;
        }
        let loopback: SocketAddr = "[::1]:0".parse().unwrap();
        // A sender with notices on: its IPv6 datagrams carry checksum zero.
        let notices_on = SocketOptions {
            disable_checksums: true,
            ..SocketOptions::default()
        };
        let (zero_sender, _) = bind_udp(loopback, notices_on).unwrap();
        let (checksummed_sender, _) = bind_udp(loopback, SocketOptions::default()).unwrap();
        let (strict, _) = bind_udp(loopback, SocketOptions::default()).unwrap();
        let relay_like = SocketOptions {
            accept_zero_checksums: true,
            ..SocketOptions::default()
        };
        let (accepting, report) = bind_udp(loopback, relay_like).unwrap();
        assert!(report.zero_checksums_accepted && !report.checksums_disabled);
        let (strict, accepting) = (blocking(strict), blocking(accepting));
        assert_eq!(
            delivered(&zero_sender, &strict, 5),
            0,
            "the kernel drops zero-checksum IPv6 for a socket without UDP_NO_CHECK6_RX"
        );
        assert_eq!(delivered(&zero_sender, &accepting, 5), 5);
        assert_eq!(delivered(&checksummed_sender, &strict, 5), 5);
        assert_eq!(delivered(&checksummed_sender, &accepting, 5), 5);
    }

    #[test]
    fn a_socket_on_the_ipv6_wildcard_also_carries_ipv4() {
        if !ipv6_or_skip("a_socket_on_the_ipv6_wildcard_also_carries_ipv4") {
            return;
        }
        let options = SocketOptions {
            disable_checksums: true,
            ..SocketOptions::default()
        };
        let (server, report) = bind_udp("[::]:0".parse().unwrap(), options).unwrap();
        assert!(report.dual_stack);
        let server = blocking(server);
        let port = server.local_addr().unwrap().port();
        let (client, _) = bind_udp("127.0.0.1:0".parse().unwrap(), options).unwrap();
        let client = blocking(client);
        client.send_to(b"over IPv4", ("127.0.0.1", port)).unwrap();
        let mut buf = [0u8; 64];
        let (len, from) = server.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..len], b"over IPv4");
        let plain = client.local_addr().unwrap();
        assert_eq!(
            from,
            SocketAddr::new(
                match plain.ip() {
                    std::net::IpAddr::V4(v4) => v4.to_ipv6_mapped().into(),
                    other => other,
                },
                plain.port()
            ),
            "the kernel reports an IPv4 peer in its mapped spelling"
        );
        // The reply goes to the plain spelling (what connections keep).
        server.send_to(b"reply", plain).unwrap();
        let (len, from) = client.recv_from(&mut buf).unwrap();
        assert_eq!(&buf[..len], b"reply");
        assert_eq!(from.port(), port);
    }

    /// The UDP checksum field of the next datagram to `port` that a raw
    /// IPv4 socket sees, or `None` without the privilege for raw sockets.
    fn checksum_on_the_wire(send: impl FnOnce(), port: u16) -> Option<u16> {
        let raw = match Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::UDP)) {
            Ok(raw) => raw,
            Err(error) => {
                let _ = writeln!(
                    std::io::stderr(),
                    "skipping the on-the-wire check: no raw socket ({error})"
                );
                return None;
            }
        };
        raw.set_read_timeout(Some(std::time::Duration::from_secs(2)))
            .unwrap();
        send();
        let raw: std::net::UdpSocket = raw.into();
        let mut packet = [0u8; 2048];
        loop {
            let len = raw.recv(&mut packet).expect("the datagram is seen");
            let header_len = usize::from(packet[0] & 0x0f) * 4;
            let udp = &packet[header_len..len];
            if u16::from_be_bytes([udp[2], udp[3]]) == port {
                return Some(u16::from_be_bytes([udp[6], udp[7]]));
            }
        }
    }

    #[test]
    fn a_dual_stack_socket_sends_ipv4_with_checksum_zero_when_checksums_are_off() {
        // IPv4 to a mapped peer leaves through the IPv4 code, which reads
        // SO_NO_CHECK only: UDP_NO_CHECK6_TX alone would keep checksums.
        if !ipv6_or_skip("a_dual_stack_socket_sends_ipv4_with_checksum_zero_when_checksums_are_off")
        {
            return;
        }
        let receiver = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = receiver.local_addr().unwrap();
        for (disable_checksums, zero) in [(true, true), (false, false)] {
            let options = SocketOptions {
                disable_checksums,
                ..SocketOptions::default()
            };
            let (sender, _) = bind_udp("[::]:0".parse().unwrap(), options).unwrap();
            let send = || {
                sender.send_to(b"zero?", to).unwrap();
            };
            let Some(checksum) = checksum_on_the_wire(send, to.port()) else {
                return;
            };
            assert_eq!(checksum == 0, zero, "checksums off: {disable_checksums}");
        }
    }

    #[test]
    fn checksums_switch_per_send_on_one_socket() {
        // The datapath's per-datagram choice: one socket, checksums off for
        // one send and back on for the next, IPv4 (and IPv4 from a
        // dual-stack socket, where the host has IPv6).
        let receiver = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = receiver.local_addr().unwrap();
        let mut senders = vec![("127.0.0.1:0", false)];
        if ipv6_loopback_available() {
            senders.push(("[::]:0", true));
        }
        for (local, ipv6) in senders {
            let (sender, _) = bind_udp(local.parse().unwrap(), SocketOptions::default()).unwrap();
            for checksum_free in [true, false, true] {
                set_checksum_free_sends(&sender, checksum_free, ipv6).unwrap();
                assert_eq!(checksums_disabled(&sender, false).unwrap(), checksum_free);
                let send = || {
                    sender.send_to(b"switch", to).unwrap();
                };
                let Some(checksum) = checksum_on_the_wire(send, to.port()) else {
                    return;
                };
                assert_eq!(checksum == 0, checksum_free, "{local}");
            }
        }
    }
}
