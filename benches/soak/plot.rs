//! target/soak/rss.png (plotters, bitmap backend): the leader's RSS (blue) and the standby's (grey) over the
//! window, the ±tolerance band around the base sample (red), and a tick per fault at the bottom (orange: API
//! server, purple: etcd, green: leader). The font and the frame are the test kit's (`testkit::plot`): without a
//! font the plot has no text and light grid lines every 5 minutes and every 10 MiB instead.

use std::path::Path;

use plotters::prelude::*;
use testkit::plot::{Labels, chart, register_system_font};
use testkit::rss::{Leak, RssSample};
use testkit::settings::soak::FaultKind;

use crate::Res;
use crate::faults::Injected;

fn fault_colour(kind: FaultKind) -> RGBColor {
    match kind {
        FaultKind::ApiServer => RGBColor(230, 140, 0),
        FaultKind::Etcd => RGBColor(140, 60, 180),
        FaultKind::Leader => RGBColor(0, 150, 60),
    }
}

pub fn rss_png(
    path: &Path,
    samples: &[RssSample],
    faults: &[Injected],
    leak: Option<&Leak>,
    tolerance: f64,
    window: f64,
) -> Res<bool> {
    let text = register_system_font();
    // The samples go on past the window (convergence, quiet period).
    let window = samples.iter().map(|r| r.t).fold(window, f64::max);
    let top = samples
        .iter()
        .flat_map(|r| [r.leader_mib, r.standby_mib])
        .flatten()
        .fold(10.0f64, f64::max)
        * 1.25;
    let root = BitMapBackend::new(path, (1200, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let labels = Labels {
        caption: "operator RSS (MiB) over the soak (s)",
        x: "seconds into the soak",
        y: "VmRSS (MiB)",
    };
    // Without a font: grid lines every 5 minutes and every 10 MiB.
    let mut chart = chart(
        &root,
        text,
        &labels,
        0f64..window.max(1.0),
        0f64..top,
        (300.0, 10.0),
    )?;
    let line = |pick: fn(&RssSample) -> Option<f64>| -> Vec<(f64, f64)> {
        samples
            .iter()
            .filter_map(|r| Some((r.t, pick(r)?)))
            .collect()
    };
    chart.draw_series(LineSeries::new(
        line(|r| r.standby_mib),
        RGBColor(150, 150, 150).stroke_width(2),
    ))?;
    chart.draw_series(LineSeries::new(
        line(|r| r.leader_mib),
        BLUE.stroke_width(3),
    ))?;
    // The tolerance band of the check that counts: over the longest leadership, from its base sample; and
    // the issue's own (base sample to the end) when one process led at both.
    let bands = leak.into_iter().flat_map(|l| {
        let longest = l
            .longest_leading
            .as_ref()
            .map(|p| (p.base_secs, p.last_secs, p.base_mib));
        let literal = l.same_process.then_some((l.base_secs, window, l.base_mib));
        longest.into_iter().chain(literal)
    });
    for (from, to, base_mib) in bands {
        for factor in [1.0 - tolerance, 1.0 + tolerance] {
            let y = base_mib * factor;
            chart.draw_series(LineSeries::new([(from, y), (to, y)], RED.stroke_width(1)))?;
        }
    }
    for f in faults {
        let colour = fault_colour(f.kind);
        chart.draw_series(std::iter::once(Rectangle::new(
            [
                (f.at_secs, 0.0),
                (
                    f.recovered_at_secs.max(f.at_secs + window / 400.0),
                    top * 0.04,
                ),
            ],
            colour.filled(),
        )))?;
    }
    root.present()?;
    Ok(text)
}
