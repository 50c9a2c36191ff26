//! target/bench/scale.png (plotters, bitmap backend; the font and the frames are the test kit's,
//! `testkit::plot`): the scale scenario's peak RSS (left) and its time to converge after start (right) against
//! the node count, a dot per run and a line through the medians: in colour the runs with the readers (or the
//! only runs), in grey the runs without them where BENCH_SCALE_READERS=both ran both.

use std::path::Path;

use plotters::prelude::*;
use serde_json::Value;
use testkit::plot::{Labels, chart, register_system_font};

use crate::Res;

/// A figure of each node count: (nodes, each run's value, the median).
type Series = Vec<(f64, Vec<f64>, f64)>;

/// The figure at `path` (keys) of every node count in `scale` (results.json's section), by node count: of
/// the entry's own runs (`kind` None) or of those under `kind` (e.g. "without").
fn series(scale: &Value, kind: Option<&str>, path: &[&str]) -> Series {
    let at = |v: &Value| path.iter().fold(v, |v, k| &v[*k]).as_f64();
    let mut out: Series = scale["sizes"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(n, e)| {
            let e = kind.map_or(e, |k| &e[k]);
            let runs: Vec<f64> = e["runs"].as_array()?.iter().filter_map(at).collect();
            Some((n.parse().ok()?, runs, at(&e["median"])?))
        })
        .collect();
    out.sort_by(|a, b| a.0.total_cmp(&b.0));
    out
}

/// Draws one panel on `area`: each series' dots and median line in its colour, on axes that hold them all.
fn panel(
    area: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
    text: bool,
    labels: &Labels<'_>,
    all: &[(&Series, RGBColor)],
) -> Res<()> {
    let points = || all.iter().flat_map(|(s, _)| s.iter());
    let right = points().map(|p| p.0).fold(1.0f64, f64::max) * 1.05;
    let top = points()
        .flat_map(|p| p.1.iter().copied().chain([p.2]))
        .fold(1.0f64, f64::max)
        * 1.2;
    let grid = (right / 8.0, top / 8.0);
    let mut c = chart(area, text, labels, 0f64..right, 0f64..top, grid)?;
    for (s, colour) in all {
        c.draw_series(LineSeries::new(
            s.iter().map(|p| (p.0, p.2)),
            colour.stroke_width(3),
        ))?;
        c.draw_series(
            s.iter()
                .flat_map(|p| p.1.iter().map(move |y| (p.0, *y)))
                .map(|xy| Circle::new(xy, 4, colour.filled())),
        )?;
    }
    Ok(())
}

/// The runs without the readers, drawn under the others.
const WITHOUT: RGBColor = RGBColor(150, 150, 150);

/// Writes the PNG of the section's node counts to `path`.
pub fn png(path: &Path, scale: &Value) -> Res<()> {
    let rss = series(scale, None, &["rss_peak_mib"]);
    let converge = series(scale, None, &["startup", "converge_secs"]);
    let rss_without = series(scale, Some("without"), &["rss_peak_mib"]);
    let converge_without = series(scale, Some("without"), &["startup", "converge_secs"]);
    if rss.is_empty() && converge.is_empty() {
        return Err("no node count with a finished run".into());
    }
    let text = register_system_font();
    let root = BitMapBackend::new(path, (1400, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let (left, right) = root.split_horizontally(700);
    let rss_labels = Labels {
        caption: "peak RSS (MiB) by node count (grey: without the readers)",
        x: "nodes",
        y: "peak RSS (MiB)",
    };
    panel(
        &left,
        text,
        &rss_labels,
        &[(&rss_without, WITHOUT), (&rss, BLUE)],
    )?;
    let converge_labels = Labels {
        caption: "converged after start (s) by node count",
        x: "nodes",
        y: "seconds",
    };
    panel(
        &right,
        text,
        &converge_labels,
        &[
            (&converge_without, WITHOUT),
            (&converge, RGBColor(0, 150, 60)),
        ],
    )?;
    root.present()?;
    Ok(())
}
