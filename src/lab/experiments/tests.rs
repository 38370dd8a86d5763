use super::*;
use crate::lab::Plan;

#[test]
fn every_experiment_builds_valid_uniquely_named_scenarios_for_both_plans() {
    for experiment in ALL {
        for plan in [
            Plan::default(),
            Plan {
                quick: true,
                seeds: Some(2),
            },
        ] {
            let scenarios = (experiment.scenarios)(&plan);
            assert!(!scenarios.is_empty(), "{}", experiment.name);
            let mut names: Vec<&str> = scenarios.iter().map(|s| s.name.as_str()).collect();
            for scenario in &scenarios {
                scenario
                    .validate()
                    .unwrap_or_else(|e| panic!("{}: {e}", experiment.name));
            }
            names.sort();
            let before = names.len();
            names.dedup();
            assert_eq!(names.len(), before, "{}: duplicate names", experiment.name);
        }
    }
}

#[test]
fn a_quick_plan_is_smaller_than_the_full_one() {
    for experiment in ALL {
        let full = (experiment.scenarios)(&Plan::default());
        let quick = (experiment.scenarios)(&Plan {
            quick: true,
            seeds: None,
        });
        let runs = |s: &[Scenario]| s.iter().map(|s| s.seeds.len()).sum::<usize>();
        assert!(runs(&quick) < runs(&full), "{}", experiment.name);
    }
}

#[test]
fn experiments_are_found_by_name() {
    assert_eq!(find("hack").map(|e| e.name), Some("hack"));
    assert!(find("nope").is_none());
    let names: Vec<&str> = ALL.iter().map(|e| e.name).collect();
    assert_eq!(
        names,
        [
            "veno-throughput",
            "veno-classification",
            "veno-coexistence",
            "veno-enhanced",
            "westwood",
            "hack",
            "vegas-factorial",
            "reordering",
            "leaky-pipes",
            "veno-ns3",
            "cellular",
            "long-paths",
            "ecn",
            "repair"
        ]
    );
}

#[test]
fn with_windows_sets_both_windows_of_every_controller() {
    for name in CcConfig::NAMES {
        let cc = with_windows(controller(name).unwrap(), 1, 1);
        let json = serde_json::to_value(&cc).unwrap();
        assert_eq!(json["initial_window_packets"], 1, "{name}");
        // CUBIC and BBR have no timeout window of their own.
        if !matches!(*name, "cubic" | "bbr") {
            assert_eq!(json["timeout_window_packets"], 1, "{name}");
        }
    }
}
