//! The SVG bar chart (plotters, SVG backend only): one panel per link and
//! one for loopback, a horizontal bar per variant at its median goodput with
//! a whisker from the slowest to the fastest run, labelled with the variant
//! and the median. Each panel has its own scale: links differ by 25×.

use anyhow::anyhow;
use plotters::prelude::*;

use super::plan::Stack;
use super::report::rate;
use super::summary::{Row, Summary};

/// Width of the chart, pixels.
const WIDTH: u32 = 1000;
/// Height of one bar, pixels.
const BAR_HEIGHT: u32 = 22;
/// Room for a panel's caption and axis, pixels.
const PANEL_CHROME: u32 = 80;

const QUICHE: RGBColor = RGBColor(31, 119, 180);
const QUICHE_024: RGBColor = RGBColor(158, 202, 225);
const QUINN: RGBColor = RGBColor(148, 103, 189);
const QUIC_GO: RGBColor = RGBColor(23, 190, 207);
const SIFT_NOTICES_ON: RGBColor = RGBColor(44, 160, 44);
const SIFT_NOTICES_OFF: RGBColor = RGBColor(255, 127, 14);

fn colour(row: &Row) -> RGBColor {
    match (row.variant.stack, row.variant.notices) {
        (Stack::Quiche, _) => QUICHE,
        (Stack::Quiche024, _) => QUICHE_024,
        (Stack::Quinn, _) => QUINN,
        (Stack::QuicGo, _) => QUIC_GO,
        (Stack::Sift, Some(false)) => SIFT_NOTICES_OFF,
        (Stack::Sift, _) => SIFT_NOTICES_ON,
    }
}

/// The chart's SVG text (empty panels are left out).
pub fn svg(summary: &Summary) -> anyhow::Result<String> {
    let mut panels: Vec<(String, &[Row])> = summary
        .links
        .iter()
        .map(|link| {
            (
                format!("{} ({})", link.link.title, link.link.name),
                link.rows.as_slice(),
            )
        })
        .collect();
    if !summary.loopback.is_empty() {
        panels.push((
            "Loopback, no impairment".to_string(),
            summary.loopback.as_slice(),
        ));
    }
    let heights: Vec<u32> = panels
        .iter()
        .map(|(_, rows)| PANEL_CHROME + BAR_HEIGHT * rows.len() as u32)
        .collect();
    let total: u32 = heights.iter().sum::<u32>().max(1);
    let mut text = String::new();
    {
        let fail = |e: &dyn std::fmt::Display| anyhow!("cannot draw the chart: {e}");
        let root = SVGBackend::with_string(&mut text, (WIDTH, total)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| fail(&e))?;
        let mut rest = root;
        for ((title, rows), height) in panels.iter().zip(&heights) {
            let (panel, below) = rest.split_vertically(*height);
            rest = below;
            draw_panel(&panel, title, rows).map_err(|e| fail(&e))?;
        }
        rest.present().map_err(|e| fail(&e))?;
    }
    Ok(text)
}

fn draw_panel(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    title: &str,
    rows: &[Row],
) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    let top = rows
        .iter()
        .filter_map(|row| row.goodput_bps.map(|g| g.max))
        .fold(0.0, f64::max)
        .max(1.0)
        / 1e6;
    let count = rows.len().max(1) as f64;
    // Room on the right of the longest bar for its label.
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 16))
        .margin(8)
        .x_label_area_size(28)
        .y_label_area_size(8)
        .build_cartesian_2d(0.0..top * 1.75, 0.0..count)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .disable_y_axis()
        .x_desc("goodput, Mb/s (bar: median; whisker: min – max)")
        .x_labels(8)
        .draw()?;
    for (i, row) in rows.iter().enumerate() {
        // First row on top.
        let y = count - i as f64 - 1.0;
        let label = match row.goodput_bps {
            Some(goodput) => {
                let median = goodput.median / 1e6;
                chart.draw_series(std::iter::once(Rectangle::new(
                    [(0.0, y + 0.15), (median, y + 0.85)],
                    colour(row).filled(),
                )))?;
                chart.draw_series(std::iter::once(PathElement::new(
                    vec![(goodput.min / 1e6, y + 0.5), (goodput.max / 1e6, y + 0.5)],
                    BLACK.stroke_width(1),
                )))?;
                let failed = row.runs - row.ok;
                format!(
                    "{}  {}{}",
                    row.variant.label(),
                    rate(goodput.median),
                    if failed > 0 {
                        format!("  ({failed} failed)")
                    } else {
                        String::new()
                    }
                )
            }
            None => format!("{}  no finished run", row.variant.label()),
        };
        let right_of = row.goodput_bps.map_or(0.0, |g| g.max / 1e6);
        chart.draw_series(std::iter::once(Text::new(
            label,
            (right_of + top * 0.01, y + 0.5),
            TextStyle::from(("sans-serif", 12).into_font()).pos(
                plotters::style::text_anchor::Pos::new(
                    plotters::style::text_anchor::HPos::Left,
                    plotters::style::text_anchor::VPos::Center,
                ),
            ),
        )))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::plan::{Protection, Variant};
    use crate::compare::summary::Spread;

    fn row(stack: Stack, cc: &str, goodput: Option<f64>) -> Row {
        Row {
            variant: Variant {
                stack,
                cc: cc.into(),
                notices: (stack == Stack::Sift).then_some(true),
                protection: Protection::Default,
                hq: false,
            },
            runs: 3,
            ok: if goodput.is_some() { 3 } else { 0 },
            goodput_bps: goodput.map(|g| Spread {
                median: g,
                min: g * 0.9,
                max: g * 1.1,
            }),
            vs_best_peer: None,
            vs_ceiling: None,
            retransmitted_packets: None,
            ptos: None,
            corruption_notices_received: None,
            cwnd_at_end: None,
            link_queue_drops: None,
            link_random_losses: None,
            link_corrupted: None,
            cpu_s_per_gib: None,
            cpu_client_s_per_gib: None,
            cpu_server_s_per_gib: None,
            failures: vec![],
        }
    }

    #[test]
    fn the_chart_labels_every_variant_with_its_median() {
        let summary = Summary {
            links: vec![],
            loopback: vec![
                row(Stack::Quiche, "cubic", Some(2.0e9)),
                row(Stack::Sift, "veno", Some(12.5e6)),
                row(Stack::Sift, "vegas", None),
            ],
        };
        let svg = svg(&summary).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..40]);
        assert!(svg.contains("quiche cubic  2.00 Gb/s"));
        assert!(svg.contains("sift veno notices on  12.50 Mb/s"));
        assert!(svg.contains("sift vegas notices on  no finished run"));
    }
}
