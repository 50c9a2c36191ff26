//! The two controllers of the process and what they share.

pub mod inventory;
pub mod node_status;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use std::time::Instant;

use futures::Stream;
use kube::Client;
use kube::runtime::events::{Recorder, Reporter};
use tokio::sync::watch;

use crate::crd::GpuInventoryStatus;
use crate::guard::{RecentWrites, WriteGuard};
use crate::health::Health;
use crate::metrics::{ControllerLabels, ErrorLabels, Metrics, TargetLabels};
use crate::node_cache::NodeCache;

/// Everything a reconcile needs, shared by both controllers.
pub struct Context {
    /// The API client.
    pub client: Client,
    /// The shared node cache.
    pub nodes: NodeCache,
    /// Guards GpuInventory status writes.
    pub status_guard: WriteGuard,
    /// Guards ConfigMap writes.
    pub configmap_guard: WriteGuard,
    /// Status writes the GpuInventory cache has not shown yet.
    pub recent_status: RecentWrites<GpuInventoryStatus>,
    /// ConfigMap writes the ConfigMap cache has not shown yet.
    pub recent_configmap: RecentWrites<BTreeMap<String, String>>,
    /// Periodic reconcile interval.
    pub requeue: Duration,
    /// Readiness and failure reporting.
    pub health: Health,
    /// Prometheus metrics.
    pub metrics: Arc<Metrics>,
    /// Publishes Kubernetes Events on the inventories.
    pub recorder: Recorder,
    /// Consecutive failures per object, for backoff.
    failures: Mutex<HashMap<String, u32>>,
}

impl Context {
    /// A context with fresh guards.
    pub fn new(
        client: Client,
        nodes: NodeCache,
        requeue: Duration,
        health: Health,
        metrics: Arc<Metrics>,
    ) -> Self {
        let target = |name: &str| TargetLabels {
            target: name.to_owned(),
        };
        let guard = |name: &str| {
            WriteGuard::new(
                metrics.guard_writes.get_or_create_owned(&target(name)),
                metrics.guard_skipped.get_or_create_owned(&target(name)),
            )
        };
        let reporter = Reporter {
            controller: crate::FIELD_MANAGER.to_owned(),
            // In cluster, POD_NAME (downward API) tells replicas apart; out of cluster, the host name.
            instance: std::env::var("POD_NAME")
                .or_else(|_| std::env::var("HOSTNAME"))
                .ok(),
        };
        Self {
            recorder: Recorder::new(client.clone(), reporter),
            client,
            nodes,
            status_guard: guard("status"),
            configmap_guard: guard("configmap"),
            metrics,
            recent_status: RecentWrites::default(),
            recent_configmap: RecentWrites::default(),
            requeue,
            health,
            failures: Mutex::default(),
        }
    }

    /// The next retry delay for `key`: 1 s, 2 s, 4 s, ... capped at 60 s.
    pub fn backoff(&self, key: &str) -> Duration {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        let n = failures.entry(key.to_owned()).or_default();
        *n = n.saturating_add(1);
        Duration::from_secs(1u64 << (*n - 1).min(6)).min(Duration::from_secs(60))
    }

    /// Records a finished reconcile of `controller` in the metrics.
    pub fn observe_reconcile(
        &self,
        controller: &str,
        started: Instant,
        error: Option<&crate::error::Error>,
    ) {
        let labels = ControllerLabels {
            controller: controller.to_owned(),
        };
        self.metrics.reconciles.get_or_create(&labels).inc();
        self.metrics
            .reconcile_duration
            .get_or_create(&labels)
            .observe(started.elapsed().as_secs_f64());
        if let Some(error) = error {
            let labels = ErrorLabels {
                controller: controller.to_owned(),
                reason: error.metric_label().to_owned(),
            };
            self.metrics.reconcile_errors.get_or_create(&labels).inc();
        }
    }

    /// Forgets the failures of `key` after a success.
    pub fn reset_backoff(&self, key: &str) {
        if let Ok(mut failures) = self.failures.lock() {
            failures.remove(key);
        }
    }
}

/// How long a node change waits for more changes before the controllers act on them all at once.
///
/// Under churn (say 20 label changes a second) this turns one write per change into one write per window,
/// for at most this much extra latency on a single change.
pub const COALESCE_WINDOW: Duration = Duration::from_millis(100);

/// Waits for the next node change, then for [`COALESCE_WINDOW`], and marks everything seen.
/// `false` when the node cache is gone (shutdown).
pub async fn next_node_changes(changes: &mut watch::Receiver<u64>) -> bool {
    if changes.changed().await.is_err() {
        return false;
    }
    tokio::time::sleep(COALESCE_WINDOW).await;
    changes.mark_unchanged();
    true
}

/// A stream that yields once per coalesced batch of node changes.
pub fn node_changes(mut changes: watch::Receiver<u64>) -> impl Stream<Item = ()> + Send + 'static {
    changes.mark_unchanged();
    futures::stream::unfold(changes, |mut rx| async move {
        next_node_changes(&mut rx).await.then_some(((), rx))
    })
}
