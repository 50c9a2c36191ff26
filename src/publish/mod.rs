//! Publishers: one guarded writer per output. Each follows the sources' change stream, reads a shared scan,
//! asks the pure core for a plan and sends the write it names (or none).
//!
//! - [`status`]: each GpuInventory's status (server-side apply) and the events of its transitions;
//! - `gpunodes`: one `GpuNode` per GPU node, with the node's full detail;
//! - `configmap`: the `gpu-node-status` ConfigMap;
//! - `events`: Kubernetes Events on the inventories;
//! - [`metrics`]: the inventories' gauges on `/metrics`;
//! - [`crd`], `crd_watch`, `default_inventory`: the CRD and the default inventory the others rely on.

pub(crate) mod configmap;
pub mod content;
pub mod crd;
pub(crate) mod crd_watch;
pub(crate) mod default_inventory;
pub(crate) mod events;
pub(crate) mod gpunodes;
pub mod metrics;
pub mod status;
pub(crate) mod writer;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::inventory::selector::LabelSelector;
use kube::Client;
use kube::runtime::events::{Recorder, Reporter};

use crate::crd::GpuInventoryStatus;
use crate::error::Error;
use crate::inventory::Inventory;
use crate::inventory::grace::Grace;
use crate::inventory::shared_scan::SharedScans;
use crate::runtime::backoff::{self, Backoff};
use crate::runtime::health::Health;
use crate::runtime::metrics::{ControllerLabels, ErrorLabels, Metrics};
use crate::sources::Sources;
use writer::GuardedWriter;

/// Everything a publisher needs, shared by all of them.
pub(crate) struct Context {
    /// The API client.
    pub(crate) client: Client,
    /// The sources' caches and change stream.
    pub(crate) sources: Sources,
    /// Scans shared between publishers (one per change and selector).
    pub(crate) scans: SharedScans,
    /// Guards GpuInventory status writes.
    pub(crate) status_writer: GuardedWriter<GpuInventoryStatus>,
    /// Guards ConfigMap writes.
    pub(crate) configmap_writer: GuardedWriter<BTreeMap<String, String>>,
    /// Guards GpuNode writes (keyed by node name).
    pub(crate) gpunode_writer: GuardedWriter<gpunodes::plan::GpuNodeDigest>,
    /// Periodic reconcile interval.
    pub(crate) requeue: Duration,
    /// Readiness and failure reporting.
    pub(crate) health: Health,
    /// Prometheus metrics: the process's own.
    pub(crate) metrics: Arc<Metrics>,
    /// The inventories' gauges (registered into `metrics`' registry).
    pub(crate) gauges: Arc<metrics::InventoryGauges>,
    /// Publishes Kubernetes Events on the inventories.
    pub(crate) recorder: Recorder,
    /// Room for a GpuInventory status's `nodes[]`, in bytes of JSON (`--status-nodes-budget`).
    pub(crate) status_nodes_budget: usize,
    /// Retry backoff per object whose last reconcile failed.
    failures: Mutex<HashMap<String, Retry>>,
    /// Per GpuInventory, the model (every node) its last reconcile published: what the next one's events
    /// are diffed against.
    models: Mutex<HashMap<String, Arc<Inventory>>>,
    /// Issues held back for a grace period, per selector (`--resources-grace`).
    grace: Mutex<GraceState>,
}

/// The grace memory of every selector scanned, and when the first held-back issue falls due.
#[derive(Debug)]
struct GraceState {
    period: Duration,
    per_selector: HashMap<String, Grace>,
    due: Option<Instant>,
    /// Bumped when `due` passes: scans are remembered per (change version, epoch), so the pass that
    /// [`Context::next_pass`] schedules for `due` scans again and reports the issue with no change to wake it.
    epoch: u64,
}

/// The publishers' settings (from `run`'s flags).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Settings {
    /// Periodic reconcile interval (`--requeue`).
    pub(crate) requeue: Duration,
    /// Room for a GpuInventory status's `nodes[]`, in bytes of JSON (`--status-nodes-budget`).
    pub(crate) status_nodes_budget: usize,
    /// How long a graced issue must last before it is published (`--resources-grace`).
    pub(crate) resources_grace: Duration,
}

/// The retries of one object whose last reconcile failed.
#[derive(Debug)]
struct Retry {
    backoff: Backoff,
    /// After a refusal: no attempt before this instant, whatever wakes the publisher.
    not_before: Option<Instant>,
}

impl Context {
    /// A context with fresh writers.
    pub(crate) fn new(
        client: Client,
        sources: Sources,
        settings: Settings,
        health: Health,
        metrics: Arc<Metrics>,
        gauges: Arc<metrics::InventoryGauges>,
    ) -> Self {
        let Settings {
            requeue,
            status_nodes_budget,
            resources_grace,
        } = settings;
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
            sources,
            scans: SharedScans::default(),
            status_writer: GuardedWriter::for_target(&metrics, "status")
                .with_min_gap(writer::AGGREGATE_WRITE_GAP),
            configmap_writer: GuardedWriter::for_target(&metrics, "configmap")
                .with_min_gap(writer::AGGREGATE_WRITE_GAP),
            gpunode_writer: GuardedWriter::for_target(&metrics, "gpunode"),
            metrics,
            gauges,
            requeue,
            health,
            status_nodes_budget,
            failures: Mutex::default(),
            models: Mutex::default(),
            grace: Mutex::new(GraceState {
                period: resources_grace,
                per_selector: HashMap::new(),
                due: None,
                epoch: 0,
            }),
        }
    }

    /// The model the last reconcile of GpuInventory `name` published, if one ran in this process.
    pub(crate) fn last_model(&self, name: &str) -> Option<Arc<Inventory>> {
        let models = self.models.lock().unwrap_or_else(|e| e.into_inner());
        models.get(name).cloned()
    }

    /// Forgets the models of GpuInventories that no longer exist.
    pub(crate) fn retain_models(&self, exists: impl Fn(&str) -> bool) {
        let mut models = self.models.lock().unwrap_or_else(|e| e.into_inner());
        models.retain(|name, _| exists(name));
    }

    /// Remembers the model of GpuInventory `name` (see [`Self::last_model`]).
    pub(crate) fn remember_model(&self, name: &str, model: Arc<Inventory>) {
        let mut models = self.models.lock().unwrap_or_else(|e| e.into_inner());
        models.insert(name.to_owned(), model);
    }

    /// The inventory of the nodes `selector` picks, as of the latest change (shared between publishers).
    /// Issues that need a grace period (`IssueReason::needs_grace`) appear once they have lasted it.
    pub(crate) fn inventory(&self, selector: &LabelSelector) -> Arc<Inventory> {
        let version = self.sources.version();
        let universe = self.sources.node_universe();
        let epoch = {
            let mut grace = self.grace.lock().unwrap_or_else(|e| e.into_inner());
            if grace.due.is_some_and(|due| due <= Instant::now()) {
                grace.due = None;
                grace.epoch += 1;
            }
            grace.epoch
        };
        self.scans
            .inventory((version, epoch), selector, |selector, interner| {
                let scanned = self
                    .sources
                    .snapshot()
                    .scan(selector, universe, Some(interner));
                let mut grace = self.grace.lock().unwrap_or_else(|e| e.into_inner());
                let period = grace.period;
                let (inventory, due) = grace
                    .per_selector
                    .entry(selector.to_string())
                    .or_insert_with(|| Grace::new(period))
                    .apply(scanned, Instant::now());
                if let Some(due) = due {
                    grace.due = Some(grace.due.map_or(due, |d| d.min(due)));
                }
                inventory
            })
    }

    /// How long until the next periodic pass: the requeue period, or sooner when an issue held back for its
    /// grace falls due (so it is published when its grace ends, with no change to wake anyone).
    pub(crate) fn next_pass(&self) -> Duration {
        let grace = self.grace.lock().unwrap_or_else(|e| e.into_inner());
        match grace.due {
            // A little past the due time, so the pass that wakes finds it due.
            Some(due) => self
                .requeue
                .min(due.saturating_duration_since(Instant::now()) + Duration::from_millis(50)),
            None => self.requeue,
        }
    }

    /// The next retry delay for `key` after `error` (policy [`backoff::RECONCILE`]). After a refusal
    /// ([`Error::is_refusal`]) the retry also waits out the delay when a change wakes the publisher first
    /// ([`Self::retry_wait`]): a change cannot make a forbidden request pass, and retrying on each one would
    /// fill the log with the same warning; after any other error a change retries at once (the API server
    /// may be back).
    pub(crate) fn backoff(&self, key: &str, error: &Error) -> Duration {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        let retry = failures.entry(key.to_owned()).or_insert_with(|| Retry {
            backoff: backoff::RECONCILE.backoff(),
            not_before: None,
        });
        let delay = retry.backoff.next_delay();
        retry.not_before = error.is_refusal().then(|| Instant::now() + delay);
        delay
    }

    /// How long `key` must still wait before its next attempt (a refused request's backoff); `None`: now.
    pub(crate) fn retry_wait(&self, key: &str) -> Option<Duration> {
        let failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        let not_before = failures.get(key)?.not_before?;
        not_before
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
    }

    /// Forgets the failures of `key` after a success.
    pub(crate) fn reset_backoff(&self, key: &str) {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        failures.remove(key);
    }

    /// Records a finished reconcile of `controller` in the metrics.
    pub(crate) fn observe_reconcile(
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
}
