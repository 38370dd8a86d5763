use super::*;
use crate::sim::link::QueueLimit;

use sift_cc::RenoConfig;

const EXAMPLE: &str = include_str!("../../../examples/scenarios/lossy-10mbit.toml");

fn parse(text: &str) -> Result<Scenario, ScenarioError> {
    Scenario::from_toml_str(text, "test.toml")
}

fn error_text(text: &str) -> String {
    match parse(text) {
        Ok(scenario) => panic!("expected an error, parsed {scenario:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_documented_example_parses_to_what_it_says() {
    let scenario = parse(EXAMPLE).unwrap();
    assert_eq!(scenario.name, "lossy-10mbit");
    assert_eq!(scenario.seeds, [1]);
    assert_eq!(scenario.time_limit_s, 600.0);
    assert_eq!(scenario.sample_interval_ms, 100);
    let forward = &scenario.bottleneck.forward;
    assert_eq!(forward.delay_ms, Duration::from_millis(25));
    assert_eq!(forward.rate_bps, Some(10_000_000));
    assert_eq!(forward.queue, QueueLimit::Packets(50));
    assert_eq!(forward.loss, 0.01.into());
    assert_eq!(scenario.bottleneck.reverse.loss, 0.0.into());
    assert_eq!(scenario.flows.len(), 1);
    let flow = &scenario.flows[0];
    assert_eq!(flow.cc, CcConfig::Reno(RenoConfig::default()));
    assert_eq!((flow.bytes, flow.streams, flow.count), (10_000_000, 4, 1));
    assert!(flow.corruption_notices);
    assert_eq!(scenario.cbr.len(), 1);
    assert_eq!(scenario.cbr[0].rate_bps, 1_000_000);
    assert_eq!(scenario.cbr[0].direction, Direction::Forward);
}

#[test]
fn omitted_keys_take_documented_defaults() {
    let scenario = parse("name = \"bare\"\n[[flow]]\nbytes = 1000\n").unwrap();
    assert_eq!(scenario.seeds, [1]);
    assert_eq!(scenario.time_limit_s, DEFAULT_TIME_LIMIT_S);
    assert_eq!(scenario.sample_interval_ms, DEFAULT_SAMPLE_INTERVAL_MS);
    assert_eq!(scenario.bottleneck.forward, LinkConfig::default());
    let flow = &scenario.flows[0];
    assert_eq!(flow.cc, CcConfig::default());
    assert_eq!((flow.streams, flow.count, flow.start_ms), (1, 1, 0.0));
    assert_eq!(flow.max_datagram_size, None);
}

#[test]
fn cc_accepts_a_name_or_a_table() {
    let by_name = parse("name = \"a\"\n[[flow]]\ncc = \"reno\"\nbytes = 10\n").unwrap();
    assert_eq!(by_name.flows[0].cc, CcConfig::Reno(RenoConfig::default()));
    let by_table = parse(
        "name = \"a\"\n[[flow]]\ncc = { name = \"reno\", initial_window_packets = 2 }\nbytes = 10\n",
    )
    .unwrap();
    assert_eq!(
        by_table.flows[0].cc,
        CcConfig::Reno(RenoConfig {
            initial_window_packets: 2,
            ..RenoConfig::default()
        })
    );
}

#[test]
fn unknown_controller_names_the_choices() {
    let message = error_text("name = \"a\"\n[[flow]]\ncc = \"tahoe\"\nbytes = 10\n");
    assert!(message.contains("test.toml:3"), "{message}");
    assert!(message.contains("\"tahoe\""), "{message}");
    assert!(message.contains("reno"), "{message}");
}

#[test]
fn unknown_controller_parameter_is_an_error() {
    let message = error_text(
        "name = \"a\"\n[[flow]]\ncc = { name = \"reno\", initial_window = 2 }\nbytes = 10\n",
    );
    assert!(message.contains("initial_window"), "{message}");
}

#[test]
fn unknown_top_level_key_names_file_line_and_key() {
    let message = error_text("name = \"a\"\nseed = [1]\n");
    assert!(message.starts_with("test.toml:2:1: "), "{message}");
    assert!(message.contains("unknown field `seed`"), "{message}");
}

#[test]
fn unknown_key_in_a_link_table_is_an_error() {
    let message = error_text("name = \"a\"\n[bottleneck.forward]\ndelay_ms = 5.0\nloos = 0.1\n");
    assert!(message.starts_with("test.toml:4:"), "{message}");
    assert!(message.contains("unknown field `loos`"), "{message}");
}

#[test]
fn unknown_key_in_a_flow_is_an_error() {
    let message = error_text("name = \"a\"\n[[flow]]\nbytes = 10\nstream = 4\n");
    assert!(message.contains("test.toml:4:"), "{message}");
    assert!(message.contains("unknown field `stream`"), "{message}");
}

#[test]
fn errors_fit_on_one_line() {
    let message = error_text("name = \"a\"\nseed = [1]\n");
    assert!(!message.contains('\n'), "{message:?}");
}

#[test]
fn wrong_types_are_parse_errors() {
    let message = error_text("name = \"a\"\n[[flow]]\nbytes = \"lots\"\n");
    assert!(message.contains("test.toml:3"), "{message}");
    let message = error_text("name = \"a\"\n[[flow]]\nbytes = -5\n");
    assert!(message.contains("test.toml:3"), "{message}");
}

#[test]
fn out_of_range_values_name_key_and_value() {
    let cases = [
        ("name = \"a\"\nseeds = []\n", "seeds"),
        ("name = \"a\"\nseeds = [3, 3]\n", "seeds"),
        ("name = \"a\"\ntime_limit_s = 0\n", "time_limit_s = 0.0"),
        ("name = \"a\"\ntime_limit_s = -1\n", "time_limit_s = -1.0"),
        (
            "name = \"a\"\nsample_interval_ms = 0\n",
            "sample_interval_ms = 0",
        ),
        ("name = \"../up\"\n", "name = \"../up\""),
        (
            "name = \"a\"\n[bottleneck.forward]\nloss = 1.5\n",
            "2:1: loss.probability must be a probability in 0..=1, got 1.5",
        ),
        (
            "name = \"a\"\n[bottleneck.reverse]\nrate_bps = 0\n",
            "2:1: rate_bps: must be > 0",
        ),
        ("name = \"a\"\n[[flow]]\nbytes = 0\n", "flow[0].bytes = 0"),
        (
            "name = \"a\"\n[[flow]]\nbytes = 10\nstreams = 0\n",
            "flow[0].streams = 0",
        ),
        (
            "name = \"a\"\n[[flow]]\nbytes = 3\nstreams = 4\n",
            "flow[0].bytes = 3",
        ),
        (
            "name = \"a\"\n[[flow]]\nbytes = 10\ncount = 0\n",
            "flow[0].count = 0",
        ),
        (
            "name = \"a\"\n[[flow]]\nbytes = 10\nstart_ms = -5\n",
            "flow[0].start_ms = -5.0",
        ),
        (
            "name = \"a\"\n[[flow]]\nbytes = 10\nmax_datagram_size = 100\n",
            "flow[0].max_datagram_size = 100",
        ),
        (
            "name = \"a\"\n[[cbr]]\nrate_bps = 0\npacket_size = 100\n",
            "cbr[0].rate_bps = 0",
        ),
        (
            "name = \"a\"\n[[cbr]]\nrate_bps = 10\npacket_size = 70000\n",
            "cbr[0].packet_size = 70000",
        ),
        (
            "name = \"a\"\n[[cbr]]\nrate_bps = 10\npacket_size = 10\noff_ms = 5\n",
            "cbr[0].off_ms = 5.0",
        ),
        (
            "name = \"a\"\n[[cbr]]\nrate_bps = 10\npacket_size = 10\nstart_ms = 10\nstop_ms = 5\n",
            "cbr[0].stop_ms = 5.0",
        ),
        ("name = \"a\"\n[params]\nflow = 3\n", "params.flow"),
    ];
    for (text, expected) in cases {
        let message = error_text(text);
        assert!(
            message.starts_with("test.toml:") && message.contains(expected),
            "{text:?} gave {message:?}, expected it to name {expected:?}"
        );
    }
}

#[test]
fn count_replicates_flows_in_order() {
    let scenario = parse(
        "name = \"a\"\n[[flow]]\nbytes = 10\ncount = 2\n[[flow]]\nbytes = 20\n[[cbr]]\nrate_bps = 1\npacket_size = 1\ncount = 3\n",
    )
    .unwrap();
    let bytes: Vec<u64> = scenario.expanded_flows().map(|f| f.bytes).collect();
    assert_eq!(bytes, [10, 10, 20]);
    assert_eq!(scenario.expanded_cbr().count(), 3);
}

#[test]
fn params_hold_the_knobs_and_the_labels() {
    let mut scenario = parse(EXAMPLE).unwrap();
    scenario
        .params
        .insert("loss_percent".into(), serde_json::json!(1));
    let params = scenario.params();
    let keys: Vec<&str> = params.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "bottleneck",
            "cbr",
            "flow",
            "loss_percent",
            "sample_interval_ms",
            "time_limit_s"
        ]
    );
    assert_eq!(
        params["bottleneck"]["forward"]["loss"],
        serde_json::json!(0.01)
    );
    assert_eq!(params["flow"][0]["cc"]["name"], serde_json::json!("reno"));
}

#[test]
fn a_scenario_round_trips_through_toml() {
    let scenario = parse(EXAMPLE).unwrap();
    let text = scenario.to_toml().unwrap();
    assert_eq!(parse(&text).unwrap(), scenario, "{text}");
}

#[test]
fn a_scenario_link_takes_ecn_and_an_aqm_in_netem_words() {
    let scenario = parse(
        "name = \"codel\"\n[bottleneck]\nforward = \"delay 50ms rate 50mbit limit 420 loss 1% codel target 5ms interval 100ms ecn\"\nreverse = \"delay 50ms dualpi2 bleach\"\n[[flow]]\nbytes = 1000\n",
    )
    .unwrap();
    let forward = &scenario.bottleneck.forward;
    assert_eq!(forward.queue, QueueLimit::Packets(420));
    assert!(matches!(
        &forward.aqm,
        Some(crate::sim::link::Aqm::Codel(c)) if c.ecn && c.target_ms == Duration::from_millis(5)
    ));
    let reverse = &scenario.bottleneck.reverse;
    assert!(reverse.bleach);
    assert!(matches!(
        reverse.aqm,
        Some(crate::sim::link::Aqm::Dualpi2(_))
    ));
}
