//! A figure's data: named series of (x, y) points with axis labels. The
//! library writes the points as CSV; the `sift-lab` binary draws them as SVG
//! (the library stays free of a plotting dependency).

use std::fmt::Write;

/// One line of a figure.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend label, e.g. "veno (sift)" or "reno (paper)".
    pub label: String,
    /// Points in x order.
    pub points: Vec<(f64, f64)>,
}

/// A line plot.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// File stem (`NAME_points.csv`, `NAME.svg`).
    pub name: String,
    /// Caption above the plot.
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// Logarithmic x axis (e.g. loss rates from 1e-4 to 1e-1).
    pub log_x: bool,
    /// The lines.
    pub series: Vec<Series>,
}

impl Figure {
    /// The points as CSV: `series,x,y`, one row per point.
    pub fn to_csv(&self) -> String {
        let mut out = String::from("series,x,y\n");
        for series in &self.series {
            let label = if series.label.contains([',', '"']) {
                format!("\"{}\"", series.label.replace('"', "\"\""))
            } else {
                series.label.clone()
            };
            for (x, y) in &series.points {
                let _ = writeln!(out, "{label},{x},{y}");
            }
        }
        out
    }

    /// The smallest and largest x and y over every finite point (for axes);
    /// `None` with no finite point.
    pub fn bounds(&self) -> Option<((f64, f64), (f64, f64))> {
        let points = self
            .series
            .iter()
            .flat_map(|s| s.points.iter())
            .filter(|(x, y)| x.is_finite() && y.is_finite() && (!self.log_x || *x > 0.0));
        let mut bounds: Option<((f64, f64), (f64, f64))> = None;
        for &(x, y) in points {
            bounds = Some(match bounds {
                None => ((x, x), (y, y)),
                Some(((x0, x1), (y0, y1))) => ((x0.min(x), x1.max(x)), (y0.min(y), y1.max(y))),
            });
        }
        bounds
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_lists_every_point_under_its_series_and_bounds_span_them() {
        let figure = Figure {
            name: "f".into(),
            title: "t".into(),
            x_label: "loss".into(),
            y_label: "kB/s".into(),
            log_x: true,
            series: vec![
                Series {
                    label: "reno".into(),
                    points: vec![(0.001, 180.0), (0.01, 82.0)],
                },
                Series {
                    label: "veno, sift".into(),
                    points: vec![(0.0, 1.0), (0.01, 146.5)],
                },
            ],
        };
        assert_eq!(
            figure.to_csv(),
            "series,x,y\nreno,0.001,180\nreno,0.01,82\n\"veno, sift\",0,1\n\"veno, sift\",0.01,146.5\n"
        );
        // x = 0 cannot sit on a log axis and is left out of the bounds.
        assert_eq!(figure.bounds(), Some(((0.001, 0.01), (82.0, 180.0))));
    }
}
