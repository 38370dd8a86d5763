//! `CcConfig`: the choices every controller shares.

use crate::{CcConfig, CongestionControl};

const MSS: u64 = 1200;

#[test]
fn every_controller_starts_from_the_initial_window_it_is_given() {
    for name in CcConfig::NAMES {
        let config: CcConfig = name.parse().unwrap();
        let default = config.build(MSS).window();
        assert_eq!(
            config.initial_window_packets() * MSS,
            default,
            "{name}'s default"
        );
        let config = config.with_initial_window(200);
        assert_eq!(config.initial_window_packets(), 200);
        assert!(config.validate().is_ok(), "{name}");
        let controller: Box<dyn CongestionControl> = config.build(MSS);
        assert_eq!(controller.window(), 200 * MSS, "{name}'s first window");
    }
}

#[test]
fn an_initial_window_of_zero_is_refused_for_every_controller() {
    for name in CcConfig::NAMES {
        let config = name.parse::<CcConfig>().unwrap().with_initial_window(0);
        let error = config.validate().unwrap_err();
        assert_eq!(error.field, "initial_window_packets", "{name}");
    }
}
