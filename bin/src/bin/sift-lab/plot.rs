//! Draws a lab `Figure` as an SVG line plot with plotters (SVG backend
//! only). Every series gets a line and a marker at each point, so a
//! one-point series (a paper's single quoted value) still shows. A
//! logarithmic x axis is drawn as log10(x), each tick labelled with its x.

use std::path::Path;

use anyhow::{anyhow, Context};
use plotters::prelude::*;

use sift::lab::Figure;

/// Pixel size of every figure.
const SIZE: (u32, u32) = (900, 560);

/// Distinct colours for up to eight series, then they repeat.
const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

/// Writes `figure` as SVG to `path`. A figure without any plottable point
/// is skipped (`Ok(false)`).
pub fn write_svg(figure: &Figure, path: &Path) -> anyhow::Result<bool> {
    let Some(svg) = render_svg(figure)? else {
        return Ok(false);
    };
    std::fs::write(path, svg).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(true)
}

/// The SVG text of `figure`, or `None` if it has no plottable point.
pub fn render_svg(figure: &Figure) -> anyhow::Result<Option<String>> {
    let x_of = |x: f64| if figure.log_x { x.log10() } else { x };
    let Some(((x0, x1), (_, y1))) = figure.bounds() else {
        return Ok(None);
    };
    let (x0, x1) = (x_of(x0), x_of(x1));
    let pad = if x1 > x0 { (x1 - x0) * 0.05 } else { 0.5 };
    let x_range = (x0 - pad)..(x1 + pad);
    let y_range = 0.0..(if y1 > 0.0 { y1 * 1.1 } else { 1.0 });
    let mut svg = String::new();
    {
        let fail = |e: &dyn std::fmt::Display| anyhow!("cannot draw {}: {e}", figure.name);
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(|e| fail(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(&figure.title, ("sans-serif", 20))
            .margin(16)
            .x_label_area_size(48)
            .y_label_area_size(70)
            .build_cartesian_2d(x_range, y_range)
            .map_err(|e| fail(&e))?;
        let log_x = figure.log_x;
        let x_label = |v: &f64| {
            if log_x {
                // Ticks fall where plotters puts them in log space: label
                // each with its true value, two significant digits.
                format!("{:.1e}", 10f64.powf(*v))
            } else {
                format!("{v}")
            }
        };
        chart
            .configure_mesh()
            .x_desc(figure.x_label.as_str())
            .y_desc(figure.y_label.as_str())
            .x_label_formatter(&x_label)
            .draw()
            .map_err(|e| fail(&e))?;
        for (i, series) in figure.series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let points: Vec<(f64, f64)> = series
                .points
                .iter()
                .filter(|(x, y)| x.is_finite() && y.is_finite() && (!log_x || *x > 0.0))
                .map(|&(x, y)| (x_of(x), y))
                .collect();
            if points.is_empty() {
                continue;
            }
            chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
                .map_err(|e| fail(&e))?
                .label(series.label.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
            chart
                .draw_series(
                    points
                        .into_iter()
                        .map(|point| Circle::new(point, 4, color.filled())),
                )
                .map_err(|e| fail(&e))?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(|e| fail(&e))?;
        root.present().map_err(|e| fail(&e))?;
    }
    Ok(Some(svg))
}
