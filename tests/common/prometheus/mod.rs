//! A real Prometheus (3.16, module github.com/prometheus/prometheus v0.316.0, built once with its promtool by
//! `hack/build-control-plane.sh prometheus`) holding a test's dcgm-exporter history, for the idle-GPU tests: the
//! PromQL the operator sends is judged by the engine that will run it in a cluster, not by a mock of it. The
//! history and the process are the test kit's (`testkit::prometheus`); this starts one per test, under
//! `target/test-logs/<id>-prometheus`.

pub mod utilization_fleet;

use std::path::{Path, PathBuf};

use crate::common::built_tools::cached_tool;

#[allow(unused_imports)] // each test binary uses a different part of the harness
pub use testkit::prometheus::{
    Binaries, DcgmLabels, GPU_UTIL, GR_ENGINE_ACTIVE, PrometheusProcess, Series, dcgm_labels,
    openmetrics, render,
};

/// The prometheus binary: `$PROMETHEUS` when set (promtool must be beside it), else the one
/// `hack/build-control-plane.sh prometheus` builds (once, cached outside the repository, promtool beside it).
/// Panics with the script's error when it cannot be had.
pub fn prometheus_binary() -> PathBuf {
    cached_tool(
        "prometheus",
        "PROMETHEUS",
        "a prometheus binary with promtool beside it (building it needs Go >= 1.26.7)",
        "the idle-GPU tests",
    )
}

/// Writes `series` as OpenMetrics (`target/test-logs/<id>-prometheus/history.om`, the directory emptied
/// first), back-fills them and starts Prometheus on them (`testkit::prometheus::PrometheusProcess::start`),
/// logging to `target/test-logs/<id>-prometheus.log`; returns once it is ready. Panics, with promtool's output
/// or Prometheus's log, if either fails.
pub fn start(id: &str, series: &[Series]) -> PrometheusProcess {
    let logs = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-logs");
    let dir = logs.join(format!("{id}-prometheus"));
    match std::fs::remove_dir_all(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => panic!("removing {} (of an earlier run): {e}", dir.display()),
    }
    std::fs::create_dir_all(&dir).unwrap();
    let history = dir.join("history.om");
    std::fs::write(&history, render(series)).unwrap();
    let binaries = Binaries::beside(prometheus_binary()).unwrap_or_else(|e| panic!("{e}"));
    let log_path = logs.join(format!("{id}-prometheus.log"));
    PrometheusProcess::start(binaries, &dir, &history, log_path).unwrap_or_else(|e| panic!("{e}"))
}
