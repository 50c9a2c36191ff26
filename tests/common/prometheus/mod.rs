//! A real Prometheus (3.16, module github.com/prometheus/prometheus v0.316.0, built once with its promtool by
//! `hack/build-control-plane.sh prometheus`) holding a test's dcgm-exporter history, for the idle-GPU tests: the
//! PromQL the operator sends is judged by the engine that will run it in a cluster, not by a mock of it. The
//! history is written as OpenMetrics ([`openmetrics`]: series shaped label for label like dcgm-exporter's) and
//! back-filled with `promtool tsdb create-blocks-from openmetrics` before Prometheus starts ([`process`]), so a
//! test has two hours of past in the time it takes to start, without scraping anything.

pub mod idle_fleet;
pub mod openmetrics;
pub mod process;

use std::path::PathBuf;

use crate::common::built_tools::cached_tool;

#[allow(unused_imports)] // each test binary uses a different part of the harness
pub use {
    openmetrics::{DcgmLabels, GPU_UTIL, GR_ENGINE_ACTIVE, Series, dcgm_labels, render},
    process::PrometheusProcess,
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

/// promtool, beside [`prometheus_binary`] (the script builds both into one directory). Panics when it is not
/// there.
pub fn promtool_binary() -> PathBuf {
    let path = prometheus_binary().with_file_name("promtool");
    assert!(
        path.is_file(),
        "no promtool beside the prometheus binary ({}): `hack/build-control-plane.sh prometheus` builds both; \
         with PROMETHEUS set, put promtool in the same directory",
        path.display()
    );
    path
}
