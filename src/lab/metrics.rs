//! What the experiments compute from reports: the goodput of a flow that
//! may have been cut off, means and deviations, Jain's fairness index, and
//! the effects of a 2^3 factorial design with replications (Jain 1991,
//! ch. 18, as Hengartner et al. use it).

use crate::sim::{FlowReport, RunReport, Sample};

/// Bits per second the server application read, from the flow's start to
/// its completion or, if it did not complete, to the end of the run. Equal
/// to `goodput_bps` for a completed flow; a fixed-duration run (ns-2 style)
/// or a transfer cut off by a dead connection still gets a number.
pub fn delivered_goodput_bps(flow: &FlowReport, run_end_s: f64) -> f64 {
    let seconds = flow.completion_s.unwrap_or(run_end_s - flow.start_s);
    if seconds > 0.0 {
        flow.bytes_received as f64 * 8.0 / seconds
    } else {
        0.0
    }
}

/// Delivered goodput of every flow of a run, in flow order.
pub fn run_goodputs_bps(run: &RunReport) -> Vec<f64> {
    run.flows
        .iter()
        .map(|flow| delivered_goodput_bps(flow, run.end_s))
        .collect()
}

/// Bits per second the server application read between `from_s` and
/// `to_s` of virtual time, from a flow's time series: between the last
/// samples at or before each edge. `None` when the series does not reach
/// past `from_s`. A share over a late window shows where a long run is
/// heading, which its whole-run average hides.
pub fn window_goodput_bps(samples: &[Sample], from_s: f64, to_s: f64) -> Option<f64> {
    let at_or_before = |t: f64| samples.iter().rev().find(|s| s.t_s <= t);
    let (first, last) = (at_or_before(from_s)?, at_or_before(to_s)?);
    let seconds = last.t_s - first.t_s;
    (seconds > 0.0)
        .then(|| last.bytes_delivered.saturating_sub(first.bytes_delivered) as f64 * 8.0 / seconds)
}

/// The arithmetic mean; `None` for no values.
pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// The sample standard deviation (n − 1); `None` for fewer than two values.
pub fn std_dev(values: &[f64]) -> Option<f64> {
    let m = mean(values)?;
    (values.len() > 1).then(|| {
        (values.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (values.len() - 1) as f64).sqrt()
    })
}

/// Jain's fairness index (Σx)² / (n·Σx²): 1 when every share is equal, 1/n
/// when one takes everything (Jain 1991; Zhou et al. eq. 5). `None` for no
/// values or all zero.
pub fn jain_fairness_index(values: &[f64]) -> Option<f64> {
    let sum: f64 = values.iter().sum();
    let squares: f64 = values.iter().map(|v| v * v).sum();
    (!values.is_empty() && squares > 0.0).then(|| sum * sum / (values.len() as f64 * squares))
}

/// The one-sided 95% quantile of Student's t with `df` degrees of freedom,
/// for two-sided 90% confidence intervals (table values up to 30, then
/// 1.645 + 1.6/df, within 0.002 of the exact value).
pub fn t_quantile_95(df: usize) -> f64 {
    /// t(0.95; df) for df = 1..=30 (any statistics table).
    const TABLE: [f64; 30] = [
        6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812, 1.796, 1.782, 1.771,
        1.761, 1.753, 1.746, 1.740, 1.734, 1.729, 1.725, 1.721, 1.717, 1.714, 1.711, 1.708, 1.706,
        1.703, 1.701, 1.699, 1.697,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => TABLE.get(df - 1).copied().unwrap_or(1.697),
        _ => 1.645 + 1.6 / df as f64,
    }
}

/// The factors' names in the order of `FactorialAnalysis::effects`, as
/// Hengartner et al.'s Tables VI–IX print them.
pub const FACTORIAL_EFFECT_NAMES: [&str; 7] =
    ["ss", "ca", "rec", "ss_ca", "ss_rec", "ca_rec", "ss_ca_rec"];

/// One effect of a 2^3 design.
#[derive(Clone, Debug, PartialEq)]
pub struct Effect {
    /// `ss`, `ca`, `rec` or an interaction such as `ss_rec`.
    pub name: &'static str,
    /// q: half the change in the response when the factor goes off → on.
    pub q: f64,
    /// Share of the total variation it explains, in percent.
    pub percent_of_variation: f64,
    /// Its 90% confidence interval excludes zero.
    pub significant: bool,
}

/// The analysis of a 2^3·r factorial experiment.
#[derive(Clone, Debug, PartialEq)]
pub struct FactorialAnalysis {
    /// q_mean: the mean response over every run.
    pub mean: f64,
    /// The seven effects, in `FACTORIAL_EFFECT_NAMES` order.
    pub effects: Vec<Effect>,
    /// Share of the variation left to experimental error, in percent.
    pub error_percent: f64,
    /// Half-width of the 90% confidence interval of each effect.
    pub ci90: f64,
    /// Replications per cell (the smallest cell's, if they differ).
    pub replications: usize,
}

/// Analyses a 2^3·r design. `cells[i]` holds the responses of cell `i`,
/// whose bit 0 is factor A (ss), bit 1 B (ca), bit 2 C (rec): set = on
/// (+1), clear = off (−1). Effects follow Jain (1991) §18.3: q_j = Σ_i
/// s_ij·ȳ_i / 8; SS_j = 8·r·q_j²; SSE = Σ (y − ȳ_i)²; SST = Σ (y − ȳ)². With
/// one replication there is no error term (`error_percent` 0, CI infinite).
/// `None` if a cell is empty.
pub fn factorial_2x3(cells: &[Vec<f64>; 8]) -> Option<FactorialAnalysis> {
    let cell_means: Vec<f64> = cells.iter().map(|c| mean(c)).collect::<Option<_>>()?;
    let replications = cells.iter().map(Vec::len).min()?;
    let all: Vec<f64> = cells.iter().flatten().copied().collect();
    let grand = mean(&all)?;
    let sign = |cell: usize, factors: usize| -> f64 {
        // The product of the signs of every factor in `factors` (a bit set).
        (0..3)
            .filter(|bit| factors & (1 << bit) != 0)
            .map(|bit| if cell & (1 << bit) != 0 { 1.0 } else { -1.0 })
            .product()
    };
    // Effects in the paper's order: A, B, C, AB, AC, BC, ABC.
    let factor_sets = [0b001, 0b010, 0b100, 0b011, 0b101, 0b110, 0b111];
    let total_ss: f64 = all.iter().map(|y| (y - grand).powi(2)).sum();
    let error_ss: f64 = cells
        .iter()
        .zip(&cell_means)
        .map(|(cell, m)| cell.iter().map(|y| (y - m).powi(2)).sum::<f64>())
        .sum();
    let runs = all.len() as f64;
    let df = all.len().saturating_sub(8);
    let ci90 = if df == 0 {
        f64::INFINITY
    } else {
        let error_sd = (error_ss / df as f64).sqrt();
        t_quantile_95(df) * error_sd / runs.sqrt()
    };
    let percent = |ss: f64| {
        if total_ss > 0.0 {
            100.0 * ss / total_ss
        } else {
            0.0
        }
    };
    let effects = factor_sets
        .iter()
        .zip(FACTORIAL_EFFECT_NAMES)
        .map(|(&factors, name)| {
            let q = cell_means
                .iter()
                .enumerate()
                .map(|(cell, m)| sign(cell, factors) * m)
                .sum::<f64>()
                / 8.0;
            Effect {
                name,
                q,
                percent_of_variation: percent(runs * q * q),
                significant: q.abs() > ci90,
            }
        })
        .collect();
    Some(FactorialAnalysis {
        mean: grand,
        effects,
        error_percent: percent(error_ss),
        ci90,
        replications,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_index_is_one_for_equal_shares_and_one_over_n_for_a_hog() {
        assert_eq!(jain_fairness_index(&[3.0, 3.0, 3.0]), Some(1.0));
        // (4)² / (4 · 16) = 1/4
        assert_eq!(jain_fairness_index(&[4.0, 0.0, 0.0, 0.0]), Some(0.25));
        // (1 + 3)² / (2 · (1 + 9)) = 16/20
        assert_eq!(jain_fairness_index(&[1.0, 3.0]), Some(0.8));
        assert_eq!(jain_fairness_index(&[]), None);
        assert_eq!(jain_fairness_index(&[0.0, 0.0]), None);
    }

    #[test]
    fn window_goodput_reads_the_samples_at_the_window_edges() {
        let sample = |t_s: f64, bytes_delivered: u64| Sample {
            t_s,
            cwnd: 0,
            ssthresh: None,
            srtt_ms: 0.0,
            min_rtt_ms: 0.0,
            bytes_sent: 0,
            bytes_delivered,
            packets_lost: 0,
            retransmitted_packets: 0,
            cc: Default::default(),
        };
        // 1 MB/s for 10 s, then 3 MB/s.
        let series: Vec<Sample> = (0..=20)
            .map(|i| {
                let t = i as f64;
                let bytes = if i <= 10 {
                    i * 1_000_000
                } else {
                    10_000_000 + (i - 10) * 3_000_000
                };
                sample(t, bytes)
            })
            .collect();
        assert_eq!(window_goodput_bps(&series, 0.0, 10.0), Some(8e6));
        assert_eq!(window_goodput_bps(&series, 10.0, 20.0), Some(24e6));
        // Edges between samples fall back to the sample before them.
        assert_eq!(window_goodput_bps(&series, 10.5, 20.7), Some(24e6));
        // A window past the series' end is the last sample alone: no rate.
        assert_eq!(window_goodput_bps(&series, 25.0, 30.0), None);
        assert_eq!(window_goodput_bps(&series, -1.0, 5.0), None);
        assert_eq!(window_goodput_bps(&[], 0.0, 1.0), None);
    }

    #[test]
    fn mean_and_deviation() {
        assert_eq!(mean(&[1.0, 2.0, 6.0]), Some(3.0));
        // deviations −2, −1, 3: (4 + 1 + 9) / 2 = 7
        assert_eq!(std_dev(&[1.0, 2.0, 6.0]), Some(7f64.sqrt()));
        assert_eq!(std_dev(&[1.0]), None);
    }

    /// Responses built from known effects, y = 10 + 3·x_ss − 2·x_rec +
    /// 1·x_ss·x_ca, with replications ±0.5 around each cell's value: the
    /// analysis must give those effects back exactly.
    #[test]
    fn factorial_effects_recover_a_known_model() {
        let signs = |cell: usize, bit: usize| if cell & (1 << bit) != 0 { 1.0 } else { -1.0 };
        let cells: [Vec<f64>; 8] = std::array::from_fn(|cell| {
            let y = 10.0 + 3.0 * signs(cell, 0) - 2.0 * signs(cell, 2)
                + signs(cell, 0) * signs(cell, 1);
            vec![y - 0.5, y + 0.5]
        });
        let analysis = factorial_2x3(&cells).unwrap();
        assert_eq!(analysis.mean, 10.0);
        assert_eq!(analysis.replications, 2);
        let q: Vec<f64> = analysis.effects.iter().map(|e| e.q).collect();
        assert_eq!(q, [3.0, 0.0, -2.0, 1.0, 0.0, 0.0, 0.0]);
        // SS_j = 16·q²: 144, 64, 16; SSE = 16·0.25 = 4; SST = 228.
        let percent: Vec<f64> = analysis
            .effects
            .iter()
            .map(|e| (e.percent_of_variation * 1e6).round() / 1e6)
            .collect();
        let expected = |ss: f64| (100.0 * ss / 228.0 * 1e6).round() / 1e6;
        assert_eq!(
            percent,
            [
                expected(144.0),
                0.0,
                expected(64.0),
                expected(16.0),
                0.0,
                0.0,
                0.0
            ]
        );
        assert!((analysis.error_percent - 100.0 * 4.0 / 228.0).abs() < 1e-9);
        // s_e = sqrt(4 / 8) ; CI = t(0.95; 8) · s_e / sqrt(16)
        let ci = 1.860 * (0.5f64).sqrt() / 4.0;
        assert!((analysis.ci90 - ci).abs() < 1e-12);
        assert!(analysis.effects[0].significant && !analysis.effects[1].significant);
    }

    #[test]
    fn an_empty_cell_has_no_analysis() {
        let mut cells: [Vec<f64>; 8] = std::array::from_fn(|_| vec![1.0]);
        cells[5].clear();
        assert_eq!(factorial_2x3(&cells), None);
    }
}
