//! The matrix's tap carries the ECN field: each datagram leaves it with
//! the codepoint it came with, both ways, and the tap counts them per
//! direction (what the ecn case judges).

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Duration;

use sift::wire::Ecn;
use sift_interop::matrix::tap::{EcnSeen, Tap};

/// A loopback socket that reads the ECN field of what it receives.
fn socket() -> UdpSocket {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    // A lost datagram fails the test instead of hanging it.
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    assert!(sift::io::enable_ecn_reception(&socket, false));
    socket
}

fn send(socket: &UdpSocket, to: SocketAddr, payload: &[u8], ecn: Ecn) {
    sift::io::send_segments(socket.as_raw_fd(), to, payload, payload.len(), ecn).unwrap();
}

/// The next datagram: its payload, sender and ECN field.
fn receive(socket: &UdpSocket) -> (Vec<u8>, SocketAddr, Ecn) {
    let mut buf = [0u8; 64];
    let got = sift::io::recv_segments(socket.as_raw_fd(), &mut buf).unwrap();
    (buf[..got.len].to_vec(), got.from, got.ecn)
}

#[test]
fn the_tap_forwards_each_codepoint_as_it_came_and_counts_it_per_direction() {
    let server = socket();
    let client = socket();
    let tap = Tap::start(
        "127.0.0.1:0".parse().unwrap(),
        server.local_addr().unwrap(),
        Vec::new(),
    )
    .unwrap();
    let sent = [Ecn::Ect1, Ecn::Ect0, Ecn::NotEct, Ecn::Ect1];
    let mut upstream = None;
    for (i, ecn) in sent.into_iter().enumerate() {
        // Short-header-like payloads, numbered so order shows.
        send(&client, tap.address(), &[0x40, i as u8], ecn);
        let (payload, from, arrived) = receive(&server);
        assert_eq!(payload, [0x40, i as u8]);
        assert_eq!(arrived, ecn, "datagram {i} crossed the tap as {arrived:?}");
        upstream = Some(from);
    }
    let upstream = upstream.unwrap();
    for ecn in [Ecn::Ce, Ecn::Ect0] {
        send(&server, upstream, b"\x40back", ecn);
        let (_, _, arrived) = receive(&client);
        assert_eq!(
            arrived, ecn,
            "the server's {ecn:?} reached the client as {arrived:?}"
        );
    }
    let wire = tap.finish();
    assert_eq!(
        wire.ecn_counts(true),
        EcnSeen {
            not_ect: 1,
            ect0: 1,
            ect1: 2,
            ce: 0
        }
    );
    assert_eq!(
        wire.ecn_counts(false),
        EcnSeen {
            not_ect: 0,
            ect0: 1,
            ect1: 0,
            ce: 1
        }
    );
    assert_eq!(wire.last_ecn(true, 2), [Ecn::NotEct, Ecn::Ect1]);
    assert_eq!(wire.last_ecn(false, 5), [Ecn::Ce, Ecn::Ect0]);
}
