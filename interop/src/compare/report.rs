//! The markdown a reader pastes: a headline table (the best controller of
//! each peer and of sift per link), one table per link with every variant, the loopback
//! efficiency table, and what failed or is missing.

use std::fmt::Write;

use super::plan::{Protection, Stack, Variant};
use super::results::Results;
use super::summary::{Row, Spread, Summary};

/// `12.3 Mb/s`, `845 kb/s`.
pub fn rate(bps: f64) -> String {
    if bps >= 1e9 {
        format!("{:.2} Gb/s", bps / 1e9)
    } else if bps >= 1e6 {
        format!("{:.2} Mb/s", bps / 1e6)
    } else {
        format!("{:.0} kb/s", bps / 1e3)
    }
}

fn spread_rate(spread: Option<Spread>) -> (String, String) {
    match spread {
        Some(s) => (rate(s.median), format!("{} – {}", rate(s.min), rate(s.max))),
        None => ("—".into(), "—".into()),
    }
}

fn count(value: Option<f64>) -> String {
    value.map_or("—".into(), |v| format!("{v:.0}"))
}

fn ratio(value: Option<f64>) -> String {
    value.map_or("—".into(), |v| format!("{v:.2}×"))
}

/// A median's share of the ceiling, marked ↑ when above it: the ceiling
/// bounds only senders that start at ten datagrams and at most double each
/// round trip, and a share above 1 says this one did not (the legend says
/// so), not that the ceiling is wrong.
fn ceiling_share(value: Option<f64>) -> String {
    match value {
        Some(v) if v > 1.0 => format!("{v:.2}× ↑"),
        other => ratio(other),
    }
}

fn notices(row: &Row) -> &'static str {
    match row.variant.notices {
        Some(true) => "on",
        Some(false) => "off",
        None => "—",
    }
}

fn protection(row: &Row) -> &'static str {
    match (row.variant.stack, row.variant.protection) {
        (Stack::Quiche | Stack::Quiche024, _) => "TLS 1.3 (BoringSSL)",
        (Stack::Quinn, _) => "TLS 1.3 (rustls)",
        (Stack::QuicGo, _) => "TLS 1.3 (Go crypto/tls)",
        (Stack::Sift, Protection::Default) => "default",
        (Stack::Sift, Protection::Null) => "Null",
    }
}

/// The stack column: `sift, hq-interop` for sift serving what the peers
/// serve.
fn stack_label(variant: &Variant) -> String {
    if variant.hq {
        format!("{}, hq-interop", variant.stack)
    } else {
        variant.stack.to_string()
    }
}

/// The whole `comparison.md`.
pub fn markdown(results: &Results, summary: &Summary) -> String {
    let mut md = String::new();
    let plan = &results.plan;
    let peers: Vec<Stack> = Stack::PEERS
        .into_iter()
        .filter(|&stack| {
            plan.variants
                .iter()
                .chain(&plan.loopback_variants)
                .any(|v| v.stack == stack)
        })
        .collect();
    let peer_names: Vec<String> = peers.iter().map(Stack::to_string).collect();
    let _ = writeln!(
        md,
        "# sift vs {} over the same emulated links\n",
        if peer_names.is_empty() {
            "quiche".to_string()
        } else {
            peer_names.join(", ")
        }
    );
    let versions = if results.peer_versions.is_empty() {
        format!("quiche {}", results.quiche_version)
    } else {
        results.peer_versions.join(", ")
    };
    let _ = writeln!(
        md,
        "sift {}, {versions}; {} repetition{} per variant, sift-link seeds {}–{} (the same seed for every variant of a repetition). sift protection: {}.\n",
        results.sift_version,
        plan.reps,
        if plan.reps == 1 { "" } else { "s" },
        plan.seed,
        plan.seed + u64::from(plan.reps) - 1,
        results.sift_protection
    );
    for command in &results.commands {
        let _ = writeln!(md, "Made with `{command}`  ");
    }
    for machine in &results.machines {
        let _ = writeln!(
            md,
            "Machine: {} cores, 1-minute load {:.1} at start, {:.1} at end{}  ",
            machine.cores,
            machine.load_start,
            machine.load_end,
            if machine.note.is_empty() {
                String::new()
            } else {
                format!(" ({})", machine.note)
            }
        );
    }
    let _ = writeln!(
        md,
        "\nGoodput: the file's bytes × 8 over the time from sending the request to the verified file, as each client reports it; median of the runs that finished byte-exact, spread min – max. \"vs best peer\" divides by the best peer variant's median on the same link (any stack but sift). \"Ceiling\" is the most goodput a download of that size can reach on the link for a sender that starts with ten datagrams and at most doubles its window each round trip: that start until the link is full, then the link's payload capacity × (1 − p), p the share of datagrams lost or corrupted, 1350-byte datagrams with 35 bytes of headers, tag and frame header, the handshake outside as it is outside every client's clock (`interop/src/compare/ceiling.rs`); \"of ceiling\" divides the median by it. A share marked ↑ is above the ceiling: that sender started above ten datagrams (a `-iwN` variant of sift) or grew faster than doubling (quinn 0.11's BBR, whatever its initial window, sends against 0.75 × its bandwidth estimate × min RTT from its first ACK on: `interop/results/2026-11-27-quinn-start/`). Retransmissions, PTOs and the congestion window at the end are the data sender's (the server's); drops, random losses and corruptions are what sift-link did to the data direction (medians).\n"
    );
    if !summary.links.is_empty() {
        let _ = writeln!(md, "## Summary\n");
        let mut header = String::from("| link |");
        for stack in &peers {
            let _ = write!(header, " best {stack} |");
        }
        header.push_str(
            " best sift | sift/best peer | ceiling | best sift/ceiling | best peer/ceiling |",
        );
        let _ = writeln!(md, "{header}");
        let _ = writeln!(
            md,
            "|---|{}---|---|---|---|---|",
            "---|".repeat(peers.len())
        );
        let cell = |best: Option<&(super::plan::Variant, f64)>,
                    name: fn(&super::plan::Variant) -> String| {
            best.map_or("—".to_string(), |(v, g)| {
                format!("{} {}", name(v), rate(*g))
            })
        };
        for link in &summary.links {
            let mut line = format!("| {} |", link.link.name);
            for stack in &peers {
                let best = link.best_of_peers.iter().find(|(v, _)| v.stack == *stack);
                let _ = write!(line, " {} |", cell(best, |v| v.cc.clone()));
            }
            let versus = match (&link.best_peer, &link.best_sift) {
                (Some((_, p)), Some((_, s))) if *p > 0.0 => format!("{:.2}×", s / p),
                _ => "—".into(),
            };
            let of_ceiling = |best: Option<&(super::plan::Variant, f64)>| {
                ceiling_share(link.ceiling_bps.zip(best).map(|(c, (_, g))| g / c))
            };
            let _ = write!(
                line,
                " {} | {versus} | {} | {} | {} |",
                cell(link.best_sift.as_ref(), short_sift_label),
                link.ceiling_bps.map_or("—".into(), rate),
                of_ceiling(link.best_sift.as_ref()),
                of_ceiling(link.best_peer.as_ref()),
            );
            let _ = writeln!(md, "{line}");
        }
        md.push('\n');
    }
    for link in &summary.links {
        let spec = &link.link;
        let _ = writeln!(md, "## {} (`{}`)\n", spec.title, spec.name);
        let _ = writeln!(
            md,
            "Data: `{}`; ACKs: `{}`; {} per download; runs stopped after {} s.\n",
            spec.data,
            spec.ack,
            bytes(spec.file_bytes),
            spec.timeout_s
        );
        if let Some(ceiling) = link.ceiling_bps {
            let _ = writeln!(
                md,
                "Ceiling for {}: {}.\n",
                bytes(spec.file_bytes),
                rate(ceiling)
            );
        }
        let _ = writeln!(md, "| stack | controller | notices | ok | goodput | spread | vs best peer | of ceiling | retx | PTOs | notices rcvd | cwnd at end | queue drops | random losses | corrupted |");
        let _ = writeln!(
            md,
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
        );
        for row in &link.rows {
            let (median, spread) = spread_rate(row.goodput_bps);
            let _ = writeln!(
                md,
                "| {} | {} | {} | {}/{} | {median} | {spread} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                row.variant.stack,
                row.variant.cc,
                notices(row),
                row.ok,
                row.runs,
                ratio(row.vs_best_peer),
                ceiling_share(row.vs_ceiling),
                count(row.retransmitted_packets),
                count(row.ptos),
                count(row.corruption_notices_received),
                row.cwnd_at_end.map_or("—".into(), |bytes| format!("{:.0} kB", bytes / 1e3)),
                count(row.link_queue_drops),
                count(row.link_random_losses),
                count(row.link_corrupted),
            );
        }
        md.push('\n');
    }
    if !summary.loopback.is_empty() {
        let _ = writeln!(
            md,
            "## Loopback efficiency: {} per download, no impairment\n",
            bytes(plan.loopback_bytes)
        );
        let _ = writeln!(
            md,
            "CPU: user + system seconds of client and server together, per GiB moved. Each client hashes what it receives and writes it to /dev/null, so the page cache and fsync stay out of the numbers; its hash is checked against the file's.\n"
        );
        if summary.loopback.iter().any(|row| row.variant.hq) {
            let _ = writeln!(
                md,
                "sift's own file protocol also hashes every byte on the server (the SHA-256 it sends after the data); no peer's server hashes. The `sift, hq-interop` row is sift's transport serving what the peers' servers serve: the file and a FIN.\n"
            );
        }
        let _ = writeln!(md, "| stack | controller | protection | notices | ok | throughput | spread | CPU s/GiB | spread | client | server |");
        let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|---|");
        for row in &summary.loopback {
            let (median, spread) = spread_rate(row.goodput_bps);
            let (cpu, cpu_spread) = match row.cpu_s_per_gib {
                Some(s) => (
                    format!("{:.2}", s.median),
                    format!("{:.2} – {:.2}", s.min, s.max),
                ),
                None => ("—".into(), "—".into()),
            };
            let share = |s: Option<f64>| s.map_or("—".into(), |s| format!("{s:.2}"));
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {}/{} | {median} | {spread} | {cpu} | {cpu_spread} | {} | {} |",
                stack_label(&row.variant),
                row.variant.cc,
                protection(row),
                notices(row),
                row.ok,
                row.runs,
                share(row.cpu_client_s_per_gib),
                share(row.cpu_server_s_per_gib),
            );
        }
        md.push('\n');
    }
    let failures: Vec<String> = summary
        .links
        .iter()
        .flat_map(|link| {
            link.rows
                .iter()
                .map(move |row| (link.link.name.clone(), row))
        })
        .chain(
            summary
                .loopback
                .iter()
                .map(|row| ("loopback".to_string(), row)),
        )
        .flat_map(|(link, row)| {
            row.failures
                .iter()
                .map(move |reason| format!("- {link}, {}: {reason}", row.variant.label()))
        })
        .collect();
    let missing = results.missing();
    if !failures.is_empty() || !missing.is_empty() {
        let _ = writeln!(md, "## Failed and missing runs\n");
        for line in failures {
            let _ = writeln!(md, "{line}");
        }
        if !missing.is_empty() {
            let _ = writeln!(
                md,
                "- {} run{} of the plan not in these results (a shard not merged yet?)",
                missing.len(),
                if missing.len() == 1 { "" } else { "s" }
            );
        }
        md.push('\n');
    }
    md
}

fn short_sift_label(variant: &super::plan::Variant) -> String {
    match variant.notices {
        Some(true) => format!("{} (notices on)", variant.cc),
        Some(false) => format!("{} (notices off)", variant.cc),
        None => variant.cc.clone(),
    }
}

/// `20 MB`, `1 GiB`, `512 kB`.
pub fn bytes(n: u64) -> String {
    if n >= 1 << 30 && n % (1 << 30) == 0 {
        format!("{} GiB", n >> 30)
    } else if n >= 1_000_000 {
        format!("{} MB", n as f64 / 1e6)
    } else {
        format!("{} kB", n as f64 / 1e3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_sizes_read_in_the_units_a_person_expects() {
        assert_eq!(rate(49.2e6), "49.20 Mb/s");
        assert_eq!(rate(845_000.0), "845 kb/s");
        assert_eq!(rate(2.5e9), "2.50 Gb/s");
        assert_eq!(bytes(1 << 30), "1 GiB");
        assert_eq!(bytes(20_000_000), "20 MB");
        assert_eq!(bytes(1_500), "1.5 kB");
    }

    #[test]
    fn a_share_above_the_ceiling_is_marked_and_one_at_or_below_is_not() {
        assert_eq!(ceiling_share(Some(1.55)), "1.55× ↑");
        assert_eq!(ceiling_share(Some(1.0)), "1.00×");
        assert_eq!(ceiling_share(Some(0.84)), "0.84×");
        assert_eq!(ceiling_share(None), "—");
    }
}
