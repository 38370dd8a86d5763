//! RFC 9368 §7.1 on the endpoint (issue 53's requirements map): a Retry
//! goes out in the version of the Initial it answers, the client's
//! original, and the compatible upgrade to sift/1 follows it.

use super::*;
use crate::conn::retry_policy::RetryPolicy;
use crate::wire::QUIC_V1;

fn version_of(datagram: &[u8]) -> u32 {
    u32::from_be_bytes(datagram[1..5].try_into().unwrap())
}

#[test]
fn a_retry_answers_in_the_clients_original_version_and_the_upgrade_follows() {
    let secret = ServerSecret::new(&[9; SERVER_SECRET_LEN]);
    let mut server = server_with_secret(&secret, RetryPolicy::Always);
    let mut client = Endpoint::new(addr(1001), None);
    let now = Instant::now();
    let handle = client.connect(config(2), addr(SERVER), now).unwrap();
    let mut buf = vec![0u8; 65_535];
    let (len, _) = client.poll_transmit(now, &mut buf).unwrap();
    assert_eq!(
        version_of(&buf[..len]),
        QUIC_V1,
        "a TLS client starts in v1"
    );
    server.recv(&mut buf[..len], addr(1001), now);
    let (len, _) = server.poll_transmit(now, &mut buf).expect("a Retry");
    let mut retry = buf[..len].to_vec();
    // A v1 long header of type Retry (0b11).
    assert_eq!(retry[0] & 0xf0, 0xf0);
    assert_eq!(version_of(&retry), QUIC_V1);
    client.recv(&mut retry, addr(SERVER), now);
    assert_eq!(client.stats().retries_received, 1);
    let mut net = Net::new(vec![server, client]);
    net.now = now;
    assert!(net.run_until(|e| established(&mut e[1], handle)));
    let connection = net.endpoints[1].connection_ref(handle).unwrap();
    assert_eq!(connection.version(), VERSION, "upgraded after the Retry");
}
