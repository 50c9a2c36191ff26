//! A real Prometheus holding dcgm-exporter's history: the history as OpenMetrics ([`openmetrics`]: series
//! shaped label for label like dcgm-exporter's), back-filled with `promtool tsdb create-blocks-from openmetrics`
//! before Prometheus starts ([`process`]), so that hours of past are there in the time it takes to start,
//! without scraping anything. The idle-GPU tests (tests/common/prometheus) and the scale scenario's readers
//! (benches/bench_driver/scale_readers.rs) use it; the binaries are `hack/build-control-plane.sh prometheus`'s.

pub mod openmetrics;
pub mod process;

pub use openmetrics::{
    DcgmLabels, GPU_UTIL, GR_ENGINE_ACTIVE, Series, dcgm_labels, render, write_openmetrics,
};
pub use process::{Binaries, PrometheusProcess};
