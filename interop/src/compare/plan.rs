//! What a comparison runs, in a fixed order that shards split.

use std::fmt;

use serde::{Deserialize, Serialize};
use sift::lab::Shard;

use super::links::LinkSpec;

/// Which transport a run uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stack {
    Sift,
    /// quiche as interop/Cargo.lock has it (the newest release).
    Quiche,
    /// quinn 0.11 (`quinn-server`, `quinn-client`).
    Quinn,
    /// quiche 0.24, built apart (interop/quiche-0.24/): its BBR2 does better
    /// than the newest release's on long lossy paths (issue 37).
    #[serde(rename = "quiche-0.24")]
    Quiche024,
    /// quic-go v0.65.0 (`quic-go-server`, `quic-go-client`: the Go program
    /// in interop/quic-go/, built where Go is installed).
    #[serde(rename = "quic-go")]
    QuicGo,
}

impl Stack {
    /// The peers sift is compared with, in the order their rows appear.
    pub const PEERS: [Stack; 4] = [Stack::Quiche, Stack::Quiche024, Stack::Quinn, Stack::QuicGo];

    /// Whether this is one of the peers (not sift).
    pub fn is_peer(self) -> bool {
        self != Stack::Sift
    }
}

impl fmt::Display for Stack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stack::Sift => "sift",
            Stack::Quiche => "quiche",
            Stack::Quinn => "quinn",
            Stack::Quiche024 => "quiche-0.24",
            Stack::QuicGo => "quic-go",
        })
    }
}

/// How a stack protects its packets in a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protection {
    /// Whatever the binaries do without protection flags (sift: TLS once it
    /// has landed; quiche: TLS 1.3 through BoringSSL).
    Default,
    /// sift's `--insecure-null-crypto` (CRC32C tags, no encryption).
    Null,
}

/// One configuration of one stack.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Variant {
    pub stack: Stack,
    /// The controller, by its stack's name.
    pub cc: String,
    /// sift's corruption notices (both ends offer them or neither); `None`
    /// for the peers, which have none.
    pub notices: Option<bool>,
    pub protection: Protection,
    /// sift over hq-interop (`https://`) instead of its own file protocol:
    /// the server sends the file and a FIN and hashes nothing, as the
    /// peers' bulk servers do; the client still hashes what it receives.
    /// sift's own protocol also hashes on the server (the digest it sends
    /// after the data, DESIGN §9), work no peer's server does.
    #[serde(default, skip_serializing_if = "is_false")]
    pub hq: bool,
}

fn is_false(value: &bool) -> bool {
    !value
}

impl Variant {
    /// "quiche cubic", "sift veno notices off", "sift cubic null".
    pub fn label(&self) -> String {
        let mut label = format!("{} {}", self.stack, self.cc);
        match self.notices {
            Some(true) => label.push_str(" notices on"),
            Some(false) => label.push_str(" notices off"),
            None => {}
        }
        if self.protection == Protection::Null {
            label.push_str(" null");
        }
        if self.hq {
            label.push_str(" hq-interop");
        }
        label
    }
}

/// One run.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Unit {
    /// A download over an emulated link.
    Link {
        link: String,
        /// 1-based repetition.
        rep: u32,
        /// sift-link's seed (the same for every variant of a repetition).
        seed: u64,
        variant: Variant,
    },
    /// A download over plain loopback, for throughput and CPU per GiB.
    Loopback { rep: u32, variant: Variant },
}

impl Unit {
    /// The variant run.
    pub fn variant(&self) -> &Variant {
        match self {
            Unit::Link { variant, .. } | Unit::Loopback { variant, .. } => variant,
        }
    }

    /// "veno-1m6-120ms rep 2/3 sift veno notices on".
    pub fn describe(&self, reps: u32) -> String {
        match self {
            Unit::Link {
                link, rep, variant, ..
            } => {
                format!("{link} rep {rep}/{reps} {}", variant.label())
            }
            Unit::Loopback { rep, variant } => {
                format!("loopback rep {rep}/{reps} {}", variant.label())
            }
        }
    }
}

/// Everything a comparison runs, before sharding.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub links: Vec<LinkSpec>,
    /// Variants run on every link.
    pub variants: Vec<Variant>,
    /// Variants run on loopback (empty: no efficiency runs).
    pub loopback_variants: Vec<Variant>,
    /// Bytes per loopback download.
    pub loopback_bytes: u64,
    pub reps: u32,
    /// Seed of repetition 1; repetition r uses `seed + r - 1`.
    pub seed: u64,
}

impl Plan {
    /// Every unit, in run order: repetitions outermost so that a slow drift
    /// in the machine's load touches every variant alike; then links; then
    /// variants. Loopback runs come last.
    pub fn units(&self) -> Vec<Unit> {
        let mut units = Vec::new();
        for rep in 1..=self.reps {
            let seed = self.seed + u64::from(rep) - 1;
            for link in &self.links {
                for variant in &self.variants {
                    units.push(Unit::Link {
                        link: link.name.clone(),
                        rep,
                        seed,
                        variant: variant.clone(),
                    });
                }
            }
        }
        for rep in 1..=self.reps {
            for variant in &self.loopback_variants {
                units.push(Unit::Loopback {
                    rep,
                    variant: variant.clone(),
                });
            }
        }
        units
    }

    /// The units of one shard.
    pub fn shard_units(&self, shard: Shard) -> Vec<Unit> {
        shard.select(self.units())
    }

    /// The link spec named `name`.
    pub fn link(&self, name: &str) -> Option<&LinkSpec> {
        self.links.iter().find(|link| link.name == name)
    }
}

/// The link variants: every controller of every peer (in the order given),
/// then every sift controller with each corruption-notice setting of
/// `sift_notices` (on and off unless asked otherwise), all with default
/// protection (`sift_protection` where the sift binaries cannot run by
/// default yet).
pub fn link_variants(
    peers: &[(Stack, Vec<String>)],
    sift_ccs: &[String],
    sift_notices: &[bool],
    sift_protection: Protection,
) -> Vec<Variant> {
    let peer_variants = peers.iter().flat_map(|(stack, ccs)| {
        ccs.iter().map(|cc| Variant {
            stack: *stack,
            cc: cc.clone(),
            notices: None,
            protection: Protection::Default,
            hq: false,
        })
    });
    let sift = sift_ccs.iter().flat_map(|cc| {
        sift_notices.iter().map(|&notices| Variant {
            stack: Stack::Sift,
            cc: cc.clone(),
            notices: Some(notices),
            protection: sift_protection,
            hq: false,
        })
    });
    peer_variants.chain(sift).collect()
}

/// The loopback variants: each peer's CUBIC (in the order given); sift with its
/// default protection (when the binaries have one) and with Null
/// protection, each with corruption notices on (the binaries' default, which
/// turns UDP checksums and so GSO off: DESIGN §5) and off; with `sift_hq`,
/// and the binaries' defaults, sift over hq-interop too, the peers' work on
/// the server ([`Variant::hq`]). All CUBIC, both stacks' default.
pub fn loopback_variants(
    peers: &[Stack],
    sift_default_available: bool,
    sift_hq: bool,
) -> Vec<Variant> {
    let mut variants: Vec<Variant> = peers
        .iter()
        .map(|&stack| Variant {
            stack,
            cc: "cubic".into(),
            notices: None,
            protection: Protection::Default,
            hq: false,
        })
        .collect();
    let mut protections = vec![Protection::Null];
    if sift_default_available {
        protections.insert(0, Protection::Default);
    }
    for protection in protections {
        for notices in [true, false] {
            variants.push(Variant {
                stack: Stack::Sift,
                cc: "cubic".into(),
                notices: Some(notices),
                protection,
                hq: false,
            });
        }
    }
    if sift_hq && sift_default_available {
        variants.push(Variant {
            stack: Stack::Sift,
            cc: "cubic".into(),
            notices: Some(true),
            protection: Protection::Default,
            hq: true,
        });
    }
    variants
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(name: &str) -> LinkSpec {
        LinkSpec {
            name: name.into(),
            title: String::new(),
            data: String::new(),
            ack: String::new(),
            file_bytes: 1,
            timeout_s: 1,
        }
    }

    fn plan() -> Plan {
        Plan {
            links: vec![link("a"), link("b")],
            variants: link_variants(
                &[
                    (Stack::Quiche, vec!["cubic".into()]),
                    (Stack::Quinn, vec!["bbr".into()]),
                ],
                &["reno".into(), "veno".into()],
                &[true, false],
                Protection::Null,
            ),
            loopback_variants: loopback_variants(&[Stack::Quiche], false, false),
            loopback_bytes: 1 << 30,
            reps: 3,
            seed: 7,
        }
    }

    #[test]
    fn every_sift_controller_runs_with_notices_on_and_off_beside_every_peer_one() {
        let labels: Vec<String> = plan().variants.iter().map(Variant::label).collect();
        assert_eq!(
            labels,
            [
                "quiche cubic",
                "quinn bbr",
                "sift reno notices on null",
                "sift reno notices off null",
                "sift veno notices on null",
                "sift veno notices off null"
            ]
        );
    }

    #[test]
    fn every_variant_of_a_repetition_gets_the_same_seed() {
        let units = plan().units();
        // 3 reps × 2 links × 6 variants, then 3 reps × 3 loopback variants.
        assert_eq!(units.len(), 36 + 9);
        for unit in &units {
            if let Unit::Link { rep, seed, .. } = unit {
                assert_eq!(*seed, 7 + u64::from(*rep) - 1);
            }
        }
    }

    #[test]
    fn shards_together_run_every_unit_once() {
        let plan = plan();
        let mut joined: Vec<Unit> = (1..=4)
            .flat_map(|k| plan.shard_units(Shard::new(k, 4).unwrap()))
            .collect();
        assert_eq!(joined.len(), plan.units().len());
        let all = plan.units();
        joined.sort_by_key(|u| all.iter().position(|x| x == u));
        assert_eq!(joined, all);
    }

    #[test]
    fn an_hq_interop_row_runs_sift_defaults_and_only_when_asked_and_available() {
        let hq_rows = |available, asked| -> Vec<String> {
            loopback_variants(&[Stack::Quiche], available, asked)
                .iter()
                .filter(|v| v.hq)
                .map(Variant::label)
                .collect()
        };
        assert_eq!(hq_rows(true, true), ["sift cubic notices on hq-interop"]);
        assert!(hq_rows(true, false).is_empty());
        assert!(hq_rows(false, true).is_empty(), "hq-interop needs TLS");
    }

    #[test]
    fn a_variant_without_hq_reads_and_writes_as_before_the_field() {
        // results.json of earlier runs has no `hq`: they must still merge
        // and report, and their variants must compare equal to new ones.
        let old = r#"{"stack":"sift","cc":"cubic","notices":true,"protection":"default"}"#;
        let variant: Variant = serde_json::from_str(old).unwrap();
        assert!(!variant.hq);
        assert_eq!(serde_json::to_string(&variant).unwrap(), old);
    }

    #[test]
    fn loopback_has_a_sift_default_row_only_when_the_binaries_have_one() {
        let labels = |available| -> Vec<String> {
            loopback_variants(&[Stack::Quiche], available, false)
                .iter()
                .map(Variant::label)
                .collect()
        };
        let null = ["sift cubic notices on null", "sift cubic notices off null"];
        assert_eq!(labels(false), [&["quiche cubic"][..], &null].concat());
        assert_eq!(
            labels(true),
            [
                &[
                    "quiche cubic",
                    "sift cubic notices on",
                    "sift cubic notices off"
                ][..],
                &null
            ]
            .concat()
        );
    }

    #[test]
    fn every_peer_given_has_a_cubic_loopback_row_and_its_own_label() {
        let labels: Vec<String> = loopback_variants(
            &[Stack::Quiche, Stack::Quiche024, Stack::Quinn],
            false,
            false,
        )
        .iter()
        .map(Variant::label)
        .collect();
        assert_eq!(
            labels[..3],
            ["quiche cubic", "quiche-0.24 cubic", "quinn cubic"]
        );
        let json = serde_json::to_string(&Stack::Quiche024).unwrap();
        assert_eq!(json, "\"quiche-0.24\"");
        assert_eq!(
            serde_json::from_str::<Stack>(&json).unwrap(),
            Stack::Quiche024
        );
    }
}
