//! Routing datagrams among the workers of a multi-core server by
//! connection ID.
//!
//! N endpoints bind the same address with `SO_REUSEPORT`; by default Linux
//! spreads datagrams over them by a hash of the 4-tuple, which sends a
//! client whose address changes (a NAT rebinding, a migration) to a worker
//! that has never heard of it. [`attach_cid_steering`] loads a classic BPF
//! program into the group (`SO_ATTACH_REUSEPORT_CBPF`) that returns, for
//! each datagram, the socket index `dcid[0] % N`, where the connection IDs
//! each worker issues name it (`wire::steering`). Classic BPF, not eBPF: it
//! needs no `CAP_BPF`, no BPF file system and no loader crate, and these
//! seven instructions are all the routing needs.
//!
//! The kernel numbers a group's sockets in the order they joined it, so
//! worker `i` must be the `i`-th socket bound (what [`bind_reuseport_group`]
//! does). A program result past the last socket, or a datagram too short
//! to read, falls back to the kernel's hash: such a datagram is not a
//! packet of ours anyway.
//!
//! The program sees a GRO run (or a peer's GSO send) as one datagram and
//! steers it by the first ID, and GRO merges by address and port alone: a
//! client with several connections on one socket can have its connections'
//! datagrams merged into one run. A worker whose datagrams name another
//! worker stops GRO on its socket (`Datapath::stop_gro`); the strays are
//! dropped, never answered with a stateless reset (`endpoint::reset`).

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

use super::socket::{bind_udp, SocketOptions, SocketReport};
use crate::wire::steering::{DCID_FIRST_BYTE_LONG, DCID_FIRST_BYTE_SHORT, MAX_WORKERS};

/// `SO_ATTACH_REUSEPORT_CBPF` (linux/asm-generic/socket.h); the `libc`
/// crate does not export it for every target.
pub const SO_ATTACH_REUSEPORT_CBPF: libc::c_int = 51;

/// The long-header form bit of the first byte, as the program loads it.
const LONG_FORM_BIT: u32 = crate::wire::header::LONG_FORM_BIT as u32;

/// The program: pick the socket `dcid[0] % workers`, reading the DCID's
/// first byte where the header form puts it. The data the kernel shows a
/// reuseport program starts at the UDP payload.
fn steering_program(workers: u32) -> [libc::sock_filter; 7] {
    let op = |code: u32| u16::try_from(code).unwrap_or_default();
    let stmt = |code: u32, k: u32| libc::sock_filter {
        code: op(code),
        jt: 0,
        jf: 0,
        k,
    };
    let jump = |code: u32, k: u32, jt: u8, jf: u8| libc::sock_filter {
        code: op(code),
        jt,
        jf,
        k,
    };
    [
        // A = flags byte
        stmt(libc::BPF_LD | libc::BPF_B | libc::BPF_ABS, 0),
        // long header? next; short: skip 2
        jump(
            libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K,
            LONG_FORM_BIT,
            0,
            2,
        ),
        stmt(
            libc::BPF_LD | libc::BPF_B | libc::BPF_ABS,
            DCID_FIRST_BYTE_LONG,
        ),
        jump(libc::BPF_JMP | libc::BPF_JA, 1, 0, 0),
        stmt(
            libc::BPF_LD | libc::BPF_B | libc::BPF_ABS,
            DCID_FIRST_BYTE_SHORT,
        ),
        stmt(libc::BPF_ALU | libc::BPF_MOD | libc::BPF_K, workers),
        stmt(libc::BPF_RET | libc::BPF_A, 0),
    ]
}

/// Loads the routing program into the reuseport group of `socket` (any of
/// its sockets): datagrams go to socket `dcid[0] % workers`.
pub fn attach_cid_steering(socket: &impl AsRawFd, workers: usize) -> io::Result<()> {
    if workers == 0 || workers > MAX_WORKERS {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("workers must be 1..={MAX_WORKERS}, not {workers}"),
        ));
    }
    let mut program = steering_program(workers as u32);
    let fprog = libc::sock_fprog {
        len: program.len() as libc::c_ushort,
        filter: program.as_mut_ptr(),
    };
    // SAFETY: the fd is open for the borrow; `fprog` points at `program`,
    // which outlives the call (the kernel copies it).
    let result = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_ATTACH_REUSEPORT_CBPF,
            (&fprog as *const libc::sock_fprog).cast(),
            std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
        )
    };
    if result == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Binds `workers` sockets to `addr` in one reuseport group, in worker
/// order, and loads the routing program: socket `i` gets the datagrams
/// whose connection ID names worker `i`. Port 0 binds the first socket to
/// a free port and the others to the same one.
pub fn bind_reuseport_group(
    addr: SocketAddr,
    options: SocketOptions,
    workers: usize,
) -> io::Result<Vec<(UdpSocket, SocketReport)>> {
    refuse_taken(addr)?;
    let options = SocketOptions {
        reuse_port: true,
        ..options
    };
    let mut sockets: Vec<(UdpSocket, SocketReport)> = Vec::with_capacity(workers);
    let mut at = addr;
    for _ in 0..workers {
        let bound = bind_udp(at, options)?;
        at = bound.0.local_addr()?;
        sockets.push(bound);
    }
    if let Some((first, _)) = sockets.first() {
        attach_cid_steering(first, workers)?;
    }
    Ok(sockets)
}

/// Fails with `AddrInUse` when a socket already holds `addr`. Linux lets
/// any socket of the same user that sets `SO_REUSEPORT` join a group, so a
/// second server started on the same port by mistake would take a share
/// of the first one's clients, each hashed to one or the other. A socket
/// without the option (this probe, closed at once) cannot bind a port
/// that any socket holds.
fn refuse_taken(addr: SocketAddr) -> io::Result<()> {
    if addr.port() == 0 {
        return Ok(());
    }
    let probe = bind_udp(addr, SocketOptions::default())?;
    drop(probe);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::CidSteering;
    use std::time::Duration;

    /// A short-header datagram to `dcid`, and a long-header one.
    fn short_header(dcid: &[u8; 8]) -> Vec<u8> {
        let mut datagram = vec![0x40];
        datagram.extend_from_slice(dcid);
        datagram.extend_from_slice(&[0; 30]);
        datagram
    }

    fn long_header(dcid: &[u8; 8]) -> Vec<u8> {
        let mut datagram = vec![0xc0, 0, 0, 0, 1, 8];
        datagram.extend_from_slice(dcid);
        datagram.extend_from_slice(&[0; 30]);
        datagram
    }

    #[test]
    fn a_group_will_not_join_a_port_another_socket_holds() {
        let first =
            bind_reuseport_group("127.0.0.1:0".parse().unwrap(), SocketOptions::default(), 2)
                .unwrap();
        let taken = first[0].0.local_addr().unwrap();
        let error = bind_reuseport_group(taken, SocketOptions::default(), 2).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::AddrInUse);
        // Nor one a single socket holds.
        let (single, _) =
            bind_udp("127.0.0.1:0".parse().unwrap(), SocketOptions::default()).unwrap();
        let error = bind_reuseport_group(single.local_addr().unwrap(), SocketOptions::default(), 2)
            .unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::AddrInUse);
        // A free port is taken as before.
        drop(first);
        assert_eq!(
            bind_reuseport_group(taken, SocketOptions::default(), 2)
                .unwrap()
                .len(),
            2
        );
    }

    #[test]
    fn the_kernel_routes_each_connection_id_to_the_worker_it_names() {
        let workers = 3;
        let group = bind_reuseport_group(
            "127.0.0.1:0".parse().unwrap(),
            SocketOptions::default(),
            workers,
        )
        .unwrap();
        let server = group[0].0.local_addr().unwrap();
        for (socket, _) in &group {
            assert_eq!(socket.local_addr().unwrap(), server);
            socket.set_nonblocking(false).unwrap();
            socket
                .set_read_timeout(Some(Duration::from_secs(2)))
                .unwrap();
        }
        // Several senders (so several 4-tuples, which the kernel's hash
        // would spread): every datagram reaches the worker its ID names,
        // whatever the sender's port.
        let mut buf = [0u8; 64];
        for sender_index in 0..4u8 {
            let sender = UdpSocket::bind("127.0.0.1:0").unwrap();
            for (worker, (receiver, _)) in group.iter().enumerate() {
                let steering = CidSteering::new(worker, workers).unwrap();
                let mut dcid = [sender_index.wrapping_mul(37), 1, 2, 3, 4, 5, 6, 7];
                steering.name(&mut dcid);
                for datagram in [short_header(&dcid), long_header(&dcid)] {
                    sender.send_to(&datagram, server).unwrap();
                    let (len, _) = receiver.recv_from(&mut buf).unwrap();
                    assert_eq!(&buf[..len], &datagram[..], "worker {worker}");
                }
            }
        }
    }

    #[test]
    fn workers_out_of_range_are_an_error() {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        for workers in [0, MAX_WORKERS + 1] {
            let error = attach_cid_steering(&socket, workers).unwrap_err();
            assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
        }
    }
}
