//! A real Prometheus (3.16, module github.com/prometheus/prometheus v0.316.0, built once with its promtool by
//! `hack/build-control-plane.sh prometheus`) holding a test's dcgm-exporter history, for the idle-GPU tests: the
//! PromQL the operator sends is judged by the engine that will run it in a cluster, not by a mock of it. The
//! history is written as OpenMetrics ([`openmetrics`]: series shaped label for label like dcgm-exporter's) and
//! back-filled with `promtool tsdb create-blocks-from openmetrics` before Prometheus starts ([`process`]), so a
//! test has two hours of past in the time it takes to start, without scraping anything.

pub mod idle_fleet;
pub mod openmetrics;
pub mod process;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

#[allow(unused_imports)] // each test binary uses a different part of the harness
pub use {
    openmetrics::{DcgmLabels, GPU_UTIL, GR_ENGINE_ACTIVE, Series, dcgm_labels, render},
    process::PrometheusProcess,
};

/// The prometheus binary: `$PROMETHEUS` when set (promtool must be beside it), else the one
/// `hack/build-control-plane.sh prometheus` builds (once, cached outside the repository, promtool beside it).
/// Panics with the script's error when it cannot be had.
pub fn prometheus_binary() -> PathBuf {
    static PROMETHEUS: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let found = PROMETHEUS.get_or_init(|| {
        if let Some(path) = std::env::var_os("PROMETHEUS").filter(|p| !p.is_empty()) {
            return Ok(PathBuf::from(path));
        }
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("hack/build-control-plane.sh");
        let out = Command::new(&script)
            .arg("prometheus")
            .stderr(Stdio::inherit())
            .output()
            .map_err(|e| format!("running {}: {e}", script.display()))?;
        let path = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if out.status.success() && Path::new(&path).is_file() {
            Ok(PathBuf::from(path))
        } else {
            Err(format!(
                "`hack/build-control-plane.sh prometheus` failed ({}): needs Go >= 1.26.7 and the Go module proxy \
                 once; see its output above, or set PROMETHEUS to a prometheus binary with promtool beside it",
                out.status
            ))
        }
    });
    match found {
        Ok(path) => path.clone(),
        Err(e) => panic!("no Prometheus for the idle-GPU tests: {e}"),
    }
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
