//! Prometheus metrics (OpenMetrics text), prefix `gpu_inventory_`.
//!
//! The registry and the operator's own metric families (reconciles, writes, watch restarts, leader), filled by
//! the code that does the work. The inventories' gauges are `publish::metrics`'s: they register into the same
//! registry ([`Metrics::with_families`]), so the runtime knows no GPUs.
//!
//! They complement kube-state-metrics (node conditions) and DCGM exporter (GPU telemetry): what only this
//! operator knows is the GPU view of the nodes (products, counts, workload configs, issues) and its own work.

use std::sync::{Mutex, MutexGuard};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

/// Labels: `controller` (`inventory`, `gpunodes` or `node-status`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ControllerLabels {
    /// The controller.
    pub(crate) controller: String,
}

/// Labels: `controller`, `reason` (the error's short label).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ErrorLabels {
    /// The controller.
    pub(crate) controller: String,
    /// The error's short label.
    pub(crate) reason: String,
}

/// Labels: `target` (`status` or `configmap`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct TargetLabels {
    /// What the guard protects.
    pub(crate) target: String,
}

/// Labels: `watch` (the watched resource).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct WatchLabels {
    /// The watched resource.
    pub(crate) watch: String,
}

fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0005, 2.0, 14))
}

/// Every metric of the process.
pub struct Metrics {
    registry: Registry,
    /// Reconciles per controller.
    pub(crate) reconciles: Family<ControllerLabels, Counter>,
    /// Failed reconciles per controller and reason.
    pub(crate) reconcile_errors: Family<ErrorLabels, Counter>,
    /// Reconcile duration per controller.
    pub(crate) reconcile_duration: Family<ControllerLabels, Histogram, fn() -> Histogram>,
    /// Writes the guard let through, per target.
    pub(crate) guard_writes: Family<TargetLabels, Counter>,
    /// Writes the guard skipped, per target.
    pub(crate) guard_skipped: Family<TargetLabels, Counter>,
    /// Watch failures (each followed by a restart after backoff), per watch.
    pub(crate) watch_restarts: Family<WatchLabels, Counter>,
    /// Complete lists of a source watch after its first one (it could not resume: 410 Gone), per watch.
    pub(crate) watch_relists: Family<WatchLabels, Counter>,
    /// 1 while this process holds the leader lease (or runs without leader election).
    pub(crate) leader: Gauge,
    /// Held while series are updated and while they are encoded: a scrape never sees half an update.
    updates: Mutex<()>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Creates and registers the operator's own metrics.
    pub(crate) fn new() -> Self {
        Self::with_families(|_| {})
    }

    /// Creates and registers the operator's own metrics, and those `families` registers (the publishers'
    /// gauges: the runtime knows no GPUs).
    pub fn with_families(families: impl FnOnce(&mut Registry)) -> Self {
        let mut registry = Registry::with_prefix("gpu_inventory");
        families(&mut registry);
        let m = Metrics {
            reconciles: Family::default(),
            reconcile_errors: Family::default(),
            reconcile_duration: Family::new_with_constructor(duration_histogram),
            guard_writes: Family::default(),
            guard_skipped: Family::default(),
            watch_restarts: Family::default(),
            watch_relists: Family::default(),
            leader: Gauge::default(),
            updates: Mutex::default(),
            registry: Registry::default(),
        };
        let r = &mut registry;
        r.register(
            "reconciles",
            "Reconciles per controller",
            m.reconciles.clone(),
        );
        r.register(
            "reconcile_errors",
            "Failed reconciles per controller and reason",
            m.reconcile_errors.clone(),
        );
        r.register_with_unit(
            "reconcile_duration",
            "Reconcile duration per controller",
            Unit::Seconds,
            m.reconcile_duration.clone(),
        );
        r.register(
            "guard_writes",
            "Writes the status-diff guard let through",
            m.guard_writes.clone(),
        );
        r.register(
            "guard_skipped_writes",
            "No-op writes the status-diff guard skipped",
            m.guard_skipped.clone(),
        );
        r.register(
            "watch_restarts",
            "Watch failures, each followed by a restart",
            m.watch_restarts.clone(),
        );
        r.register(
            "watch_relists",
            "Complete relists of a source watch after its first list (its resourceVersion expired: 410 Gone)",
            m.watch_relists.clone(),
        );
        r.register(
            "leader",
            "1 while this process runs the controllers",
            m.leader.clone(),
        );
        Metrics { registry, ..m }
    }

    /// Holds off scrapes while a publisher updates several series that belong together.
    pub(crate) fn updating(&self) -> MutexGuard<'_, ()> {
        self.updates.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The metrics in OpenMetrics text format.
    pub fn encode(&self) -> String {
        // Holding the lock keeps a scrape from seeing an inventory half updated.
        let _updates = self.updating();
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)
            .expect("writing to a String");
        text
    }
}
