//! Undo of spurious congestion events, for every controller by name: a
//! controller added later fails here until it restores its window.

use std::str::FromStr;
use std::time::Instant;

use crate::test_support::{ack, loss, ms, rtt, spurious, MSS};
use crate::CcConfig;

#[test]
fn every_controller_restores_its_window_when_a_congestion_event_proves_spurious() {
    for name in CcConfig::NAMES {
        let mut cc = CcConfig::from_str(name).expect("a known name").build(MSS);
        let t0 = Instant::now();
        cc.on_sent(t0, MSS, MSS);
        // Grow past the initial window, then cut. A round of 50 ms samples
        // then one of 100 ms, against a smoothed 100 ms, put Veno's backlog
        // N well above β by either estimator (paper: 15·50/100 = 7.5): a
        // congestive loss for the controllers that classify.
        cc.on_ack(&ack(t0, t0, 5, rtt(50, 100), 0));
        cc.on_ack(&ack(t0 + ms(100), t0 + ms(10), 5, rtt(100, 100), 0));
        let before = (cc.window(), cc.ssthresh());
        cc.on_congestion(&loss(t0, rtt(100, 100), false));
        // BBR keeps its window through fast recovery (draft-ietf-ccwg-bbr
        // §5.6.4.4: its short-term model bounds it once per round); its undo
        // of the model is pinned in `bbr::tests`.
        if *name != "bbr" {
            assert!(cc.window() < before.0, "{name}: the loss cuts the window");
        }
        cc.on_spurious_congestion(&spurious(t0, rtt(100, 100)));
        assert_eq!((cc.window(), cc.ssthresh()), before, "{name}");
        assert_ne!(
            cc.metrics().phase,
            crate::Phase::Recovery,
            "{name}: undo ends the recovery period"
        );
    }
}
