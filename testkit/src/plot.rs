//! The bench's and the soak's PNGs (plotters, bitmap backend): the system's font, and a chart's frame. Text needs
//! a font: the one `fc-match sans-serif` names, if any; without one a chart has no text and light grid lines
//! instead of a labelled mesh.

use std::ops::Range;
use std::process::Command;
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::{FontStyle, register_font};

use crate::Res;

/// A chart of f64 over f64 on a bitmap.
pub type Chart<'a, 'b> =
    ChartContext<'a, BitMapBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// Registers the system's sans-serif font with plotters (once per process); false when there is none.
pub fn register_system_font() -> bool {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    *REGISTERED.get_or_init(|| {
        let Ok(out) = Command::new("fc-match")
            .args(["-f", "%{file}", "sans-serif"])
            .output()
        else {
            return false;
        };
        let path = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        let Ok(bytes) = std::fs::read(&path) else {
            return false;
        };
        // plotters keeps the font for the life of the process.
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        register_font("sans-serif", FontStyle::Normal, bytes).is_ok()
    })
}

/// What a chart's frame says: its caption and the descriptions of its axes.
pub struct Labels<'l> {
    /// Above the chart.
    pub caption: &'l str,
    /// Under the x axis.
    pub x: &'l str,
    /// Beside the y axis.
    pub y: &'l str,
}

/// A chart over `x` and `y` on `area`: with `text` (the font is registered), the caption, the axes' labels and
/// a labelled mesh (whole numbers along x); without, light grey grid lines every `grid.0` along x and `grid.1` along y.
pub fn chart<'a, 'b>(
    area: &'a DrawingArea<BitMapBackend<'b>, Shift>,
    text: bool,
    labels: &Labels<'_>,
    x: Range<f64>,
    y: Range<f64>,
    grid: (f64, f64),
) -> Res<Chart<'a, 'b>> {
    let mut builder = ChartBuilder::on(area);
    builder.margin(20);
    if text {
        builder
            .caption(labels.caption, ("sans-serif", 22))
            .x_label_area_size(40)
            .y_label_area_size(60);
    }
    let mut chart = builder.build_cartesian_2d(x.clone(), y.clone())?;
    if text {
        chart
            .configure_mesh()
            .x_label_formatter(&|x| format!("{x:.0}"))
            .x_desc(labels.x)
            .y_desc(labels.y)
            .draw()?;
        return Ok(chart);
    }
    let grey = RGBColor(225, 225, 225);
    let lines = |range: &Range<f64>, step: f64| {
        let first = (range.start / step).ceil() as i64;
        let last = (range.end / step).floor() as i64;
        (first..=last).map(move |k| k as f64 * step)
    };
    for gx in lines(&x, grid.0.max(f64::MIN_POSITIVE)) {
        chart.draw_series(LineSeries::new([(gx, y.start), (gx, y.end)], grey))?;
    }
    for gy in lines(&y, grid.1.max(f64::MIN_POSITIVE)) {
        chart.draw_series(LineSeries::new([(x.start, gy), (x.end, gy)], grey))?;
    }
    Ok(chart)
}
