//! RFC 9000 requirements of the requirements map (`docs/requirements.toml`)
//! that the endpoint meets without a connection.

use super::*;

#[test]
fn a_version_negotiation_answers_connection_ids_longer_than_version_1_allows() {
    // RFC 9000 §17.2.1: rules of one version (v1's 20-byte IDs) do not
    // decide whether to answer another version; the IDs, however long,
    // come back swapped, in one Version Negotiation packet per datagram.
    let mut server = Endpoint::new(addr(SERVER), Some(config(1)));
    let now = Instant::now();
    let mut buf = vec![0u8; 2048];
    let mut datagram = other_version_datagram(0xff00_001d, &[0xd1; 60], &[0x5c; 33], 1200);
    assert_eq!(server.recv(&mut datagram, addr(1001), now), None);
    let (len, to) = server.poll_transmit(now, &mut buf).expect("an answer");
    assert_eq!(to, addr(1001));
    let answer = parse_version_negotiation(&buf[..len]).unwrap();
    assert_eq!(answer.dcid, &[0x5c; 33]);
    assert_eq!(answer.scid, &[0xd1; 60]);
    assert!(server.poll_transmit(now, &mut buf).is_none(), "one answer");
    assert_eq!(server.stats().version_negotiations_sent, 1);
}
