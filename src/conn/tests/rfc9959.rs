//! Careful Resume (RFC 9959) where the connection meets it (issue 53's
//! requirements map): what happens to a saved path state when the path
//! changes, and how many a client keeps. The phases themselves are tested
//! in `sift_cc::careful_resume`.

use sift_cc::{CarefulResumeConfig, SavedPath};

use super::*;
use crate::conn::token_store::TokenStore;

#[test]
fn a_move_to_another_path_ends_careful_resume() {
    let config = Config {
        careful_resume: Some(CarefulResumeConfig::default()),
        ..fixed_size()
    };
    let mut pair = Pair::new(config, fixed_size());
    let initial = pair.client.stats().cwnd;
    // The harness's path: 20 ms round trip, as saved.
    let saved = SavedPath {
        cwnd: 2_000_000,
        min_rtt: Duration::from_millis(20),
    };
    assert!(pair.client.resume_path(saved));
    let id = pair.client.stream_open_bi().unwrap();
    pair.client
        .stream_send(id, &pattern(1_000_000), true)
        .unwrap();
    let jumped = pair.run_until(Duration::from_secs(2), &mut deliver_all, |p| {
        p.client
            .careful_resume()
            .is_some_and(|status| status.jumped)
    });
    assert!(jumped, "the saved state was not used");
    assert!(pair.client.stats().cwnd > initial);
    // RFC 9959 §3.2, §3.3: a new path is not the one observed.
    pair.client
        .on_local_address_changed(SocketAddr::from(([10, 0, 0, 9], 1)))
        .expect("a confirmed client with spare IDs may move");
    assert!(pair.client.careful_resume().is_none());
    assert_eq!(pair.client.stats().cwnd, initial);
}

#[test]
fn a_client_keeps_one_saved_path_per_server() {
    // A server's saved path states ride in the address tokens it gives
    // (RFC 9959 §3.1): the client keeps the latest of each server's.
    let store = TokenStore::new();
    let server = addr(2);
    store.insert(server, vec![1]);
    store.insert(server, vec![2]);
    store.insert(addr(3), vec![3]);
    assert_eq!(store.len(), 2);
    assert_eq!(store.take(server), Some(vec![2]));
    assert_eq!(store.take(server), None);
}
