//! The matrix as the public interop pages show it: one row per client,
//! one column per server, each cell the letters of its cases (passed,
//! then ✕ failed, then ? unsupported); then one ✓/✕/? table per case,
//! and every failure and unsupported case with its reason.

use std::fmt::Write;

use serde::Serialize;

use super::cases::{self, Case};
use super::cell::{CellResult, Outcome};
use super::stacks::Stack;

/// results.json.
#[derive(Serialize)]
pub struct Results<'a> {
    /// The cases run, with their letters and meaning.
    pub cases: Vec<CaseInfo>,
    /// Clients, in order.
    pub clients: &'a [Stack],
    /// Servers, in order.
    pub servers: &'a [Stack],
    /// Every cell.
    pub cells: &'a [CellResult],
}

/// One case's legend entry.
#[derive(Serialize)]
pub struct CaseInfo {
    /// The runner's name.
    pub name: &'static str,
    /// Its letter.
    pub letter: &'static str,
    /// What a pass means.
    pub description: &'static str,
}

/// The legend of `cases`.
pub fn legend(cases: &[Case]) -> Vec<CaseInfo> {
    cases
        .iter()
        .map(|c| CaseInfo {
            name: c.name(),
            letter: c.letter(),
            description: c.description(),
        })
        .collect()
}

fn symbol(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Pass => "✓",
        Outcome::Fail(_) => "✕",
        Outcome::Unsupported(_) => "?",
    }
}

fn find(cells: &[CellResult], client: Stack, server: Stack, case: Case) -> Option<&CellResult> {
    cells
        .iter()
        .find(|c| c.client == client && c.server == server && c.case == case)
}

/// The markdown report.
pub fn markdown(
    cases: &[Case],
    clients: &[Stack],
    servers: &[Stack],
    cells: &[CellResult],
) -> String {
    let mut out = String::new();
    let count = |want: fn(&Outcome) -> bool| cells.iter().filter(|c| want(&c.outcome)).count();
    let _ = writeln!(
        out,
        "# Interop matrix\n\n{} cells: {} passed, {} failed, {} unsupported.\n",
        cells.len(),
        count(|o| *o == Outcome::Pass),
        count(|o| matches!(o, Outcome::Fail(_))),
        count(|o| matches!(o, Outcome::Unsupported(_)))
    );
    let _ = writeln!(
        out,
        "Rows: client; columns: server. In a cell, the letters of the cases that passed, then `✕` and those that failed, then `?` and those one side does not support.\n"
    );
    let _ = write!(out, "| client \\ server |");
    for server in servers {
        let _ = write!(out, " {server} |");
    }
    let _ = write!(out, "\n|---|");
    for _ in servers {
        let _ = write!(out, "---|");
    }
    out.push('\n');
    for &client in clients {
        let _ = write!(out, "| **{client}** |");
        for &server in servers {
            let mut groups: [Vec<&str>; 3] = Default::default();
            for &case in cases {
                if let Some(cell) = find(cells, client, server, case) {
                    let group = match cell.outcome {
                        Outcome::Pass => 0,
                        Outcome::Fail(_) => 1,
                        Outcome::Unsupported(_) => 2,
                    };
                    groups[group].push(case.letter());
                }
            }
            let mut text = groups[0].join(" ");
            for (mark, group) in [("✕", &groups[1]), ("?", &groups[2])] {
                if !group.is_empty() {
                    let _ = write!(
                        text,
                        "{}{mark} {}",
                        if text.is_empty() { "" } else { " " },
                        group.join(" ")
                    );
                }
            }
            let _ = write!(out, " {text} |");
        }
        out.push('\n');
    }
    let _ = writeln!(out, "\n## Per case (cell: client → server)\n");
    let _ = write!(out, "| case |");
    let pairs: Vec<(Stack, Stack)> = clients
        .iter()
        .flat_map(|&c| servers.iter().map(move |&s| (c, s)))
        .collect();
    for (client, server) in &pairs {
        let _ = write!(out, " {client}→{server} |");
    }
    let _ = write!(out, "\n|---|");
    for _ in &pairs {
        let _ = write!(out, "---|");
    }
    out.push('\n');
    for &case in cases {
        let _ = write!(out, "| {} {} |", case.letter(), case.name());
        for &(client, server) in &pairs {
            let mark = find(cells, client, server, case).map_or(" ", |c| symbol(&c.outcome));
            let _ = write!(out, " {mark} |");
        }
        out.push('\n');
    }
    for &case in cases.iter().filter(|c| c.is_measurement()) {
        let _ = writeln!(
            out,
            "\n## {} (kb/s, mean ± standard deviation of {} runs)\n",
            case.name(),
            case.repetitions()
        );
        let _ = write!(out, "| client \\ server |");
        for server in servers {
            let _ = write!(out, " {server} |");
        }
        let _ = write!(out, "\n|---|");
        for _ in servers {
            let _ = write!(out, "---|");
        }
        out.push('\n');
        for &client in clients {
            let _ = write!(out, "| **{client}** |");
            for &server in servers {
                let text = match find(cells, client, server, case) {
                    Some(CellResult {
                        measurement: Some(m),
                        ..
                    }) => match &m.cross {
                        Some(cross) => format!(
                            "{:.0} ± {:.0} (cross {:.0} ± {:.0})",
                            m.mean_kbps, m.stdev_kbps, cross.mean_kbps, cross.stdev_kbps
                        ),
                        None => format!("{:.0} ± {:.0}", m.mean_kbps, m.stdev_kbps),
                    },
                    Some(cell) => symbol(&cell.outcome).to_string(),
                    None => " ".to_string(),
                };
                let _ = write!(out, " {text} |");
            }
            out.push('\n');
        }
        if case.cross_traffic() {
            let _ = writeln!(
                out,
                "\nIn a cell, the measured flow's goodput, then (cross …) the competing flow's over the same runs: a QUIC CUBIC flow (sift-client perf -R --cc cubic, QUIC v1, from a second sift-server) through the same sift-link bottleneck queue, started 2 s before the measured client, not the runner's kernel TCP CUBIC flow: this kernel has no netem to delay TCP."
            );
        }
        server_comparison(&mut out, case, clients, servers, cells);
    }
    let _ = writeln!(out, "\n## Letters\n");
    for case in cases {
        let _ = writeln!(
            out,
            "- **{}** {}: {}",
            case.letter(),
            case.name(),
            case.description()
        );
    }
    let failed: Vec<&CellResult> = cells
        .iter()
        .filter(|c| matches!(c.outcome, Outcome::Fail(_)))
        .collect();
    if !failed.is_empty() {
        let _ = writeln!(out, "\n## Failures\n");
        for cell in failed {
            if let Outcome::Fail(reason) = &cell.outcome {
                let logs = cell
                    .logs
                    .as_ref()
                    .map(|p| format!(" (logs: `{}`)", p.display()))
                    .unwrap_or_default();
                let _ = writeln!(
                    out,
                    "- {} → {} {}: {}{logs}",
                    cell.client,
                    cell.server,
                    cell.case,
                    one_line(reason)
                );
            }
        }
    }
    let mut reasons: Vec<(String, Vec<String>)> = Vec::new();
    for cell in cells {
        if let Outcome::Unsupported(reason) = &cell.outcome {
            let label = format!("{}→{} {}", cell.client, cell.server, cell.case.letter());
            match reasons.iter_mut().find(|(r, _)| r == reason) {
                Some((_, cells)) => cells.push(label),
                None => reasons.push((reason.clone(), vec![label])),
            }
        }
    }
    if !reasons.is_empty() {
        let _ = writeln!(out, "\n## Unsupported\n");
        for (reason, which) in reasons {
            let _ = writeln!(out, "- {reason}: {}", which.join(", "));
        }
    }
    out
}

/// A measured case's mean goodput of `client` → `server`, kb/s, when
/// its cell passed.
fn mean_kbps(cells: &[CellResult], client: Stack, server: Stack, case: Case) -> Option<f64> {
    find(cells, client, server, case)?
        .measurement
        .as_ref()
        .map(|m| m.mean_kbps)
}

/// Under a measured case's table: per client, each server's mean and
/// whether sift-server's is at least the best other server's (issue 56:
/// sift-server serving any client ≥ the best other server for it).
fn server_comparison(
    out: &mut String,
    case: Case,
    clients: &[Stack],
    servers: &[Stack],
    cells: &[CellResult],
) {
    if !servers.contains(&Stack::Sift) || servers.len() < 2 {
        return;
    }
    let _ = writeln!(
        out,
        "\n### {}: sift-server against the best other server, per client (mean kb/s)\n",
        case.name()
    );
    let _ = write!(out, "| client |");
    for server in servers {
        let _ = write!(out, " {server} |");
    }
    let _ = writeln!(out, " best other server | sift-server ≥ best other |");
    let _ = write!(out, "|---|");
    for _ in servers {
        let _ = write!(out, "---|");
    }
    let _ = writeln!(out, "---|---|");
    for &client in clients {
        let _ = write!(out, "| **{client}** |");
        for &server in servers {
            let text = mean_kbps(cells, client, server, case)
                .map_or_else(|| "–".to_string(), |kbps| format!("{kbps:.0}"));
            let _ = write!(out, " {text} |");
        }
        let best_other = servers
            .iter()
            .filter(|&&s| s != Stack::Sift)
            .filter_map(|&s| Some((s, mean_kbps(cells, client, s, case)?)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        let sift = mean_kbps(cells, client, Stack::Sift, case);
        let (best, verdict) = match (sift, best_other) {
            (_, None) => ("–".to_string(), "– (no other server measured)".to_string()),
            (None, Some((server, kbps))) => (
                format!("{server} {kbps:.0}"),
                "✕ (sift-server not measured)".to_string(),
            ),
            (Some(sift), Some((server, kbps))) => (
                format!("{server} {kbps:.0}"),
                if sift >= kbps {
                    "✓".to_string()
                } else {
                    format!("✕ ({:+.1}%)", (sift / kbps - 1.0) * 100.0)
                },
            ),
        };
        let _ = writeln!(out, " {best} | {verdict} |");
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Every case, for `--help`.
pub fn case_names() -> String {
    cases::ALL
        .iter()
        .map(|c| format!("{} ({})", c.name(), c.letter()))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(client: Stack, server: Stack, case: Case, outcome: Outcome) -> CellResult {
        CellResult {
            client,
            server,
            case,
            outcome,
            seconds: 0.0,
            seen: None,
            link_stats: None,
            logs: None,
            measurement: None,
        }
    }

    #[test]
    fn a_cell_lists_passed_then_failed_then_unsupported_letters() {
        let cells = vec![
            cell(Stack::Quinn, Stack::Quiche, Case::Handshake, Outcome::Pass),
            cell(
                Stack::Quinn,
                Stack::Quiche,
                Case::Retry,
                Outcome::Fail("no Retry".into()),
            ),
            cell(
                Stack::Quinn,
                Stack::Quiche,
                Case::V2,
                Outcome::Unsupported("v1 only".into()),
            ),
        ];
        let cases = [Case::Handshake, Case::Retry, Case::V2];
        let md = markdown(&cases, &[Stack::Quinn], &[Stack::Quiche], &cells);
        assert!(md.contains("| **quinn** | H ✕ S ? V2 |"), "{md}");
        assert!(md.contains("| S retry | ✕ |"), "{md}");
        assert!(md.contains("quinn → quiche retry: no Retry"), "{md}");
        assert!(md.contains("- v1 only: quinn→quiche V2"), "{md}");
        assert!(md.contains("1 passed, 1 failed, 1 unsupported"), "{md}");
    }

    #[test]
    fn a_measured_case_gets_a_table_of_its_figures_per_pair() {
        let mut measured = cell(Stack::Sift, Stack::Quinn, Case::Goodput, Outcome::Pass);
        // 9000, 9200, 9400: mean 9200, sample deviation 200.
        measured.measurement = Some(crate::matrix::cell::Measurement::of(vec![
            9000.0, 9200.0, 9400.0,
        ]));
        let failed = cell(
            Stack::Quinn,
            Stack::Quinn,
            Case::Goodput,
            Outcome::Fail("slow".into()),
        );
        let md = markdown(
            &[Case::Goodput],
            &[Stack::Sift, Stack::Quinn],
            &[Stack::Quinn],
            &[measured, failed],
        );
        assert!(
            md.contains("## goodput (kb/s, mean ± standard deviation of 5 runs)"),
            "{md}"
        );
        assert!(md.contains("| **sift** | 9200 ± 200 |"), "{md}");
        assert!(md.contains("| **quinn** | ✕ |"), "{md}");
    }

    fn measured(client: Stack, server: Stack, case: Case, runs: &[f64]) -> CellResult {
        let mut cell = cell(client, server, case, Outcome::Pass);
        cell.measurement = Some(crate::matrix::cell::Measurement::of(runs.to_vec()));
        cell
    }

    #[test]
    fn each_client_row_says_whether_sift_server_is_at_least_the_best_other_server() {
        let servers = [Stack::Sift, Stack::Quiche, Stack::Quinn];
        let cells = vec![
            // quinn's client: sift-server 9000 against quinn's 9500: below.
            measured(Stack::Quinn, Stack::Sift, Case::Goodput, &[9000.0]),
            measured(Stack::Quinn, Stack::Quiche, Case::Goodput, &[8000.0]),
            measured(Stack::Quinn, Stack::Quinn, Case::Goodput, &[9500.0]),
            // sift's client: sift-server 9600 against quiche's 9400: at least.
            measured(Stack::Sift, Stack::Sift, Case::Goodput, &[9600.0]),
            measured(Stack::Sift, Stack::Quiche, Case::Goodput, &[9400.0]),
            cell(
                Stack::Sift,
                Stack::Quinn,
                Case::Goodput,
                Outcome::Fail("slow".into()),
            ),
        ];
        let md = markdown(
            &[Case::Goodput],
            &[Stack::Sift, Stack::Quinn],
            &servers,
            &cells,
        );
        assert!(
            md.contains("### goodput: sift-server against the best other server, per client"),
            "{md}"
        );
        assert!(
            md.contains("| **sift** | 9600 | 9400 | – | quiche 9400 | ✓ |"),
            "{md}"
        );
        assert!(
            md.contains("| **quinn** | 9000 | 8000 | 9500 | quinn 9500 | ✕ (-5.3%) |"),
            "{md}"
        );
    }

    #[test]
    fn a_crosstraffic_cell_shows_the_cross_flows_figures_beside_the_measured_ones() {
        use crate::matrix::cell::{Measurement, RunFigures};
        let mut cross = cell(Stack::Sift, Stack::Quinn, Case::CrossTraffic, Outcome::Pass);
        cross.measurement = Some(Measurement::of_runs(&[
            RunFigures {
                goodput_kbps: 4000.0,
                cross_kbps: Some(5500.0),
            },
            RunFigures {
                goodput_kbps: 4400.0,
                cross_kbps: Some(5100.0),
            },
        ]));
        let md = markdown(
            &[Case::CrossTraffic],
            &[Stack::Sift],
            &[Stack::Quinn],
            &[cross],
        );
        assert!(
            md.contains("| **sift** | 4200 ± 283 (cross 5300 ± 283) |"),
            "{md}"
        );
        assert!(md.contains("a QUIC CUBIC flow"), "{md}");
        assert!(md.contains("no netem to delay TCP"), "{md}");
    }
}
