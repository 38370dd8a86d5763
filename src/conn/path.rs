//! The network path of a connection: the peer's address, spelled one way.
//!
//! A dual-stack socket (`[::]`, IPv6 with `IPV6_V6ONLY` off) reports an
//! IPv4 peer as the IPv4-mapped IPv6 address `::ffff:a.b.c.d` (RFC 4291
//! §2.5.5.2); an IPv4 socket reports the same peer as `a.b.c.d`. Both name
//! one peer. The connection compares every datagram's source with its peer
//! (no migration), so it keeps one spelling — the plain IPv4 one — and
//! compares in that spelling, whatever the socket underneath says.
//! Sending to a plain IPv4 address works on a dual-stack socket too: Linux
//! takes an IPv4 destination on an IPv6 UDP socket as the mapped one.

use std::net::SocketAddr;

/// The one spelling of a peer address: an IPv4-mapped IPv6 address
/// becomes the plain IPv4 address with the same port; every other address
/// is kept exactly (an IPv6 scope id included).
pub fn canonical_peer(address: SocketAddr) -> SocketAddr {
    match address {
        SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(v4.into(), v6.port()),
            None => address,
        },
        SocketAddr::V4(_) => address,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv6Addr, SocketAddrV6};

    #[test]
    fn a_mapped_ipv4_address_becomes_plain_ipv4_with_its_port() {
        let mapped: SocketAddr = "[::ffff:192.0.2.7]:4433".parse().unwrap();
        assert_eq!(canonical_peer(mapped), "192.0.2.7:4433".parse().unwrap());
    }

    #[test]
    fn ipv4_and_native_ipv6_addresses_are_kept_as_they_are() {
        for text in ["192.0.2.7:4433", "[::1]:4433", "[2001:db8::1]:1"] {
            let address: SocketAddr = text.parse().unwrap();
            assert_eq!(canonical_peer(address), address);
        }
        // IPv4-compatible (`::a.b.c.d`, deprecated) is not mapped: kept.
        let compatible: SocketAddr = "[::192.0.2.7]:1".parse().unwrap();
        assert_eq!(canonical_peer(compatible), compatible);
    }

    #[test]
    fn a_link_local_peer_keeps_its_scope_id() {
        let scoped = SocketAddr::V6(SocketAddrV6::new(
            "fe80::1".parse::<Ipv6Addr>().unwrap(),
            4433,
            0,
            3,
        ));
        assert_eq!(canonical_peer(scoped), scoped);
    }
}
