//! `sift-lab plot TRACE.sqlog`: a qlog trace drawn as SVG. Top: the
//! congestion window and bytes in flight over time, with every loss
//! verdict marked where the window stood (random ▲ green, congestive ✕
//! red, undone ○ grey) and corruption notices applied (· orange). Bottom:
//! smoothed, latest and minimum RTT.

use std::path::Path;

use anyhow::{anyhow, Context};
use plotters::prelude::*;
use serde_json::Value;

use sift::trace::{read_trace, TraceEvent};

/// Pixel size of the figure.
const SIZE: (u32, u32) = (1000, 760);

/// The time series of one trace, in seconds, kilobytes and milliseconds.
#[derive(Debug, Default, PartialEq)]
pub struct TraceSeries {
    /// (t, cwnd kB) at each change.
    pub cwnd: Vec<(f64, f64)>,
    /// (t, bytes in flight kB) at each change.
    pub in_flight: Vec<(f64, f64)>,
    /// (t, smoothed RTT ms).
    pub smoothed_rtt: Vec<(f64, f64)>,
    /// (t, latest RTT ms).
    pub latest_rtt: Vec<(f64, f64)>,
    /// (t, min RTT ms).
    pub min_rtt: Vec<(f64, f64)>,
    /// (t, cwnd kB after the cut) of each random verdict.
    pub random: Vec<(f64, f64)>,
    /// The same for congestive verdicts.
    pub congestive: Vec<(f64, f64)>,
    /// The same for verdicts undone.
    pub undone: Vec<(f64, f64)>,
    /// (t, cwnd kB) at each corruption notice applied.
    pub corrupted: Vec<(f64, f64)>,
}

/// Collects the series from a trace's events.
pub fn series(events: &[TraceEvent]) -> TraceSeries {
    let mut s = TraceSeries::default();
    let mut cwnd_kb = 0.0;
    for event in events {
        let t = event.time_ms / 1e3;
        let data = &event.data;
        let kb = |v: &Value| v.as_f64().map(|bytes| bytes / 1e3);
        match event.name.as_str() {
            "quic:recovery_metrics_updated" => {
                if let Some(cwnd) = kb(&data["congestion_window"]) {
                    cwnd_kb = cwnd;
                    s.cwnd.push((t, cwnd));
                }
                if let Some(flight) = kb(&data["bytes_in_flight"]) {
                    s.in_flight.push((t, flight));
                }
                for (field, out) in [
                    ("smoothed_rtt", &mut s.smoothed_rtt),
                    ("latest_rtt", &mut s.latest_rtt),
                    ("min_rtt", &mut s.min_rtt),
                ] {
                    if let Some(ms) = data[field].as_f64() {
                        out.push((t, ms));
                    }
                }
            }
            "sift:loss_verdict" => {
                let at = kb(&data["cwnd"]).unwrap_or(cwnd_kb);
                match data["verdict"].as_str() {
                    Some("random") => s.random.push((t, at)),
                    _ => s.congestive.push((t, at)),
                }
            }
            "sift:spurious_loss_undone" => s.undone.push((t, kb(&data["cwnd"]).unwrap_or(cwnd_kb))),
            "sift:corruption_applied" => s.corrupted.push((t, cwnd_kb)),
            _ => {}
        }
    }
    s
}

/// Reads the trace at `trace` and writes its plot to `out`.
pub fn plot_trace(trace: &Path, out: &Path) -> anyhow::Result<TraceSeries> {
    let events = read_trace(trace)?;
    let series = series(&events);
    if series.cwnd.is_empty() {
        anyhow::bail!(
            "{} has no recovery metrics to plot (a trace of a connection that sent nothing?)",
            trace.display()
        );
    }
    let title = trace
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let svg = render(&series, &title)?;
    std::fs::write(out, svg).with_context(|| format!("cannot write {}", out.display()))?;
    Ok(series)
}

fn max_of<'a>(sets: impl IntoIterator<Item = &'a Vec<(f64, f64)>>, axis: usize) -> f64 {
    sets.into_iter()
        .flatten()
        .map(|p| if axis == 0 { p.0 } else { p.1 })
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max)
}

fn render(s: &TraceSeries, title: &str) -> anyhow::Result<String> {
    let fail = |e: &dyn std::fmt::Display| anyhow!("cannot draw the trace: {e}");
    let t_max = max_of([&s.cwnd, &s.in_flight, &s.smoothed_rtt], 0).max(1e-3) * 1.02;
    let kb_max = max_of([&s.cwnd, &s.in_flight], 1).max(1.0) * 1.1;
    let rtt_max = max_of([&s.smoothed_rtt, &s.latest_rtt, &s.min_rtt], 1).max(1.0) * 1.1;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(|e| fail(&e))?;
        let root = root
            .titled(title, ("sans-serif", 20))
            .map_err(|e| fail(&e))?;
        let (top, bottom) = root.split_vertically(SIZE.1 * 3 / 5);

        let mut window = ChartBuilder::on(&top)
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..t_max, 0.0..kb_max)
            .map_err(|e| fail(&e))?;
        window
            .configure_mesh()
            .x_desc("time (s)")
            .y_desc("kB")
            .draw()
            .map_err(|e| fail(&e))?;
        let blue = RGBColor(31, 119, 180);
        let grey = RGBColor(150, 150, 150);
        let green = RGBColor(44, 160, 44);
        let red = RGBColor(214, 39, 40);
        let orange = RGBColor(255, 127, 14);
        window
            .draw_series(LineSeries::new(s.in_flight.clone(), grey.stroke_width(1)))
            .map_err(|e| fail(&e))?
            .label("bytes in flight")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], grey));
        window
            .draw_series(LineSeries::new(s.cwnd.clone(), blue.stroke_width(2)))
            .map_err(|e| fail(&e))?
            .label("cwnd")
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], blue.stroke_width(2))
            });
        window
            .draw_series(
                s.random
                    .iter()
                    .map(|&p| TriangleMarker::new(p, 6, green.filled())),
            )
            .map_err(|e| fail(&e))?
            .label(format!("random-loss verdict ({})", s.random.len()))
            .legend(move |(x, y)| TriangleMarker::new((x + 10, y), 6, green.filled()));
        window
            .draw_series(
                s.congestive
                    .iter()
                    .map(|&p| Cross::new(p, 5, red.stroke_width(2))),
            )
            .map_err(|e| fail(&e))?
            .label(format!("congestive verdict ({})", s.congestive.len()))
            .legend(move |(x, y)| Cross::new((x + 10, y), 5, red.stroke_width(2)));
        window
            .draw_series(
                s.undone
                    .iter()
                    .map(|&p| Circle::new(p, 6, grey.stroke_width(2))),
            )
            .map_err(|e| fail(&e))?
            .label(format!("verdict undone ({})", s.undone.len()))
            .legend(move |(x, y)| Circle::new((x + 10, y), 6, grey.stroke_width(2)));
        window
            .draw_series(
                s.corrupted
                    .iter()
                    .map(|&p| Circle::new(p, 2, orange.filled())),
            )
            .map_err(|e| fail(&e))?
            .label(format!("corruption notice ({})", s.corrupted.len()))
            .legend(move |(x, y)| Circle::new((x + 10, y), 3, orange.filled()));
        window
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(|e| fail(&e))?;

        let mut rtt = ChartBuilder::on(&bottom)
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(70)
            .build_cartesian_2d(0.0..t_max, 0.0..rtt_max)
            .map_err(|e| fail(&e))?;
        rtt.configure_mesh()
            .x_desc("time (s)")
            .y_desc("RTT (ms)")
            .draw()
            .map_err(|e| fail(&e))?;
        for (points, label, color) in [
            (&s.latest_rtt, "latest RTT", grey),
            (&s.smoothed_rtt, "smoothed RTT", blue),
            (&s.min_rtt, "min RTT", green),
        ] {
            rtt.draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
                .map_err(|e| fail(&e))?
                .label(label)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
        }
        rtt.configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(|e| fail(&e))?;
        root.present().map_err(|e| fail(&e))?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(time_ms: f64, name: &str, data: Value) -> TraceEvent {
        TraceEvent {
            time_ms,
            name: name.to_string(),
            data,
            typed: true,
        }
    }

    #[test]
    fn series_follow_metrics_and_mark_verdicts_at_the_window_after_the_cut() {
        let events = [
            event(
                0.0,
                "quic:recovery_metrics_updated",
                json!({"congestion_window": 12_000, "bytes_in_flight": 0, "smoothed_rtt": 100.0}),
            ),
            event(
                500.0,
                "sift:loss_verdict",
                json!({"verdict": "random", "cwnd": 9_600}),
            ),
            event(
                500.0,
                "quic:recovery_metrics_updated",
                json!({"congestion_window": 9_600}),
            ),
            event(
                900.0,
                "sift:loss_verdict",
                json!({"verdict": "congestive", "cwnd": 4_800}),
            ),
            event(
                950.0,
                "sift:corruption_applied",
                json!({"packet_numbers": [4]}),
            ),
        ];
        let s = series(&events);
        assert_eq!(s.cwnd, [(0.0, 12.0), (0.5, 9.6)]);
        assert_eq!(s.in_flight, [(0.0, 0.0)]);
        assert_eq!(s.smoothed_rtt, [(0.0, 100.0)]);
        assert_eq!(s.random, [(0.5, 9.6)]);
        assert_eq!(s.congestive, [(0.9, 4.8)]);
        assert_eq!(s.corrupted, [(0.95, 9.6)]);
        let svg = render(&s, "t").unwrap();
        assert!(
            svg.contains("random-loss verdict (1)"),
            "the legend counts verdicts"
        );
    }
}
