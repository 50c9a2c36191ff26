//! Prometheus metrics (OpenMetrics text), prefix `gpu_inventory_`.
//!
//! The registry and every metric family. The inventories' gauges are filled by `publish::metrics`; the
//! operator's own (reconciles, writes, watch restarts, leader) by the code that does the work.
//!
//! They complement kube-state-metrics (node conditions) and DCGM exporter (GPU telemetry): what only this
//! operator knows is the GPU view of the nodes (products, counts, workload configs, issues) and its own work.

use std::collections::BTreeMap;
use std::sync::Mutex;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

use crate::crd::GpuInventoryStatus;

/// Labels: `inventory`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct InventoryLabels {
    /// The GpuInventory.
    pub inventory: String,
}

/// Labels: `inventory`, `node`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct NodeLabels {
    /// The GpuInventory.
    pub inventory: String,
    /// The node.
    pub node: String,
}

/// Labels of the per-node info metric.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct NodeInfoLabels {
    /// The GpuInventory.
    pub inventory: String,
    /// The node.
    pub node: String,
    /// `nvidia.com/gpu.product`, "" when unlabelled.
    pub product: String,
    /// `nvidia.com/gpu.workload.config`, "" when absent.
    pub workload_config: String,
    /// "true" or "false".
    pub ready: String,
}

/// Labels: `inventory`, `reason`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct IssueLabels {
    /// The GpuInventory.
    pub inventory: String,
    /// The issue reason.
    pub reason: String,
}

/// Labels: `controller` (`inventory` or `node-status`).
/// A resource on a node.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct NodeResourceLabels {
    /// The GpuInventory.
    pub inventory: String,
    /// The node.
    pub node: String,
    /// The extended resource, e.g. `nvidia.com/gpu`.
    pub resource: String,
}

/// A resource summed over an inventory.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResourceLabels {
    /// The GpuInventory.
    pub inventory: String,
    /// The extended resource.
    pub resource: String,
}

/// A namespace's pods in an inventory.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct NamespaceLabels {
    /// The GpuInventory.
    pub inventory: String,
    /// The pods' namespace.
    pub namespace: String,
}

/// What a namespace's pods hold of one resource.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct NamespaceResourceLabels {
    /// The GpuInventory.
    pub inventory: String,
    /// The pods' namespace.
    pub namespace: String,
    /// The extended resource.
    pub resource: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerLabels {
    /// The controller.
    pub controller: String,
}

/// Labels: `controller`, `reason` (the error's short label).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabels {
    /// The controller.
    pub controller: String,
    /// The error's short label.
    pub reason: String,
}

/// Labels: `target` (`status` or `configmap`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TargetLabels {
    /// What the guard protects.
    pub target: String,
}

/// Labels: `watch` (the watched resource).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WatchLabels {
    /// The watched resource.
    pub watch: String,
}

fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0005, 2.0, 14))
}

/// Every metric of the process.
pub struct Metrics {
    registry: Registry,
    pub(crate) gpu_nodes: Family<InventoryLabels, Gauge>,
    pub(crate) ready_gpu_nodes: Family<InventoryLabels, Gauge>,
    pub(crate) gpus: Family<InventoryLabels, Gauge>,
    pub(crate) node_info: Family<NodeInfoLabels, Gauge>,
    pub(crate) node_gpus: Family<NodeLabels, Gauge>,
    pub(crate) node_gpu_memory: Family<NodeLabels, Gauge>,
    pub(crate) node_issues: Family<IssueLabels, Gauge>,
    pub(crate) free_gpus: Family<InventoryLabels, Gauge>,
    pub(crate) pending_gpu_pods: Family<InventoryLabels, Gauge>,
    pub(crate) node_allocated: Family<NodeResourceLabels, Gauge>,
    pub(crate) node_free: Family<NodeResourceLabels, Gauge>,
    pub(crate) resource_capacity: Family<ResourceLabels, Gauge>,
    pub(crate) resource_allocatable: Family<ResourceLabels, Gauge>,
    pub(crate) resource_allocated: Family<ResourceLabels, Gauge>,
    pub(crate) resource_free: Family<ResourceLabels, Gauge>,
    pub(crate) namespace_requested: Family<NamespaceResourceLabels, Gauge>,
    pub(crate) namespace_pending_pods: Family<NamespaceLabels, Gauge>,
    /// Reconciles per controller.
    pub reconciles: Family<ControllerLabels, Counter>,
    /// Failed reconciles per controller and reason.
    pub reconcile_errors: Family<ErrorLabels, Counter>,
    /// Reconcile duration per controller.
    pub reconcile_duration: Family<ControllerLabels, Histogram, fn() -> Histogram>,
    /// Writes the guard let through, per target.
    pub guard_writes: Family<TargetLabels, Counter>,
    /// Writes the guard skipped, per target.
    pub guard_skipped: Family<TargetLabels, Counter>,
    /// Watch failures (each followed by a restart after backoff), per watch.
    pub watch_restarts: Family<WatchLabels, Counter>,
    /// Complete lists of a source watch after its first one (it could not resume: 410 Gone), per watch.
    pub watch_relists: Family<WatchLabels, Counter>,
    /// 1 while this process holds the leader lease (or runs without leader election).
    pub leader: Gauge,
    /// The last exported status per inventory, so unchanged statuses cost nothing and gone series vanish.
    pub(crate) exported: Mutex<BTreeMap<String, GpuInventoryStatus>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Creates and registers every metric.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("gpu_inventory");
        let m = Metrics {
            gpu_nodes: Family::default(),
            ready_gpu_nodes: Family::default(),
            gpus: Family::default(),
            node_info: Family::default(),
            node_gpus: Family::default(),
            node_gpu_memory: Family::default(),
            node_issues: Family::default(),
            free_gpus: Family::default(),
            pending_gpu_pods: Family::default(),
            node_allocated: Family::default(),
            node_free: Family::default(),
            resource_capacity: Family::default(),
            resource_allocatable: Family::default(),
            resource_allocated: Family::default(),
            resource_free: Family::default(),
            namespace_requested: Family::default(),
            namespace_pending_pods: Family::default(),
            reconciles: Family::default(),
            reconcile_errors: Family::default(),
            reconcile_duration: Family::new_with_constructor(duration_histogram),
            guard_writes: Family::default(),
            guard_skipped: Family::default(),
            watch_restarts: Family::default(),
            watch_relists: Family::default(),
            leader: Gauge::default(),
            exported: Mutex::default(),
            registry: Registry::default(),
        };
        let r = &mut registry;
        r.register(
            "gpu_nodes",
            "GPU nodes covered by the inventory",
            m.gpu_nodes.clone(),
        );
        r.register(
            "ready_gpu_nodes",
            "GPU nodes whose Ready condition is True",
            m.ready_gpu_nodes.clone(),
        );
        r.register(
            "gpus",
            "GPUs counted by the inventory (sum of nvidia.com/gpu.count)",
            m.gpus.clone(),
        );
        r.register(
            "node_info",
            "A GPU node: product, workload config, readiness (always 1)",
            m.node_info.clone(),
        );
        r.register(
            "node_gpus",
            "GPUs on the node (nvidia.com/gpu.count)",
            m.node_gpus.clone(),
        );
        r.register_with_unit(
            "node_gpu_memory",
            "Memory of one GPU on the node (nvidia.com/gpu.memory)",
            Unit::Bytes,
            m.node_gpu_memory.clone(),
        );
        r.register(
            "node_issues",
            "GPU nodes with an issue, by reason",
            m.node_issues.clone(),
        );
        r.register(
            "free_gpus",
            "Whole GPUs free on Ready, schedulable nodes (status.freeGpus)",
            m.free_gpus.clone(),
        );
        r.register(
            "pending_gpu_pods",
            "GPU pods the scheduler could not place (Pending, Unschedulable)",
            m.pending_gpu_pods.clone(),
        );
        r.register(
            "node_allocated",
            "Of an extended resource on a node, what the pods bound there hold (scheduler's effective request)",
            m.node_allocated.clone(),
        );
        r.register(
            "node_free",
            "Of an extended resource on a node, allocatable minus allocated (never below 0)",
            m.node_free.clone(),
        );
        r.register(
            "resource_capacity",
            "An extended resource's capacity, or a DRA device type's devices (gpu.nvidia.com/gpu, \
             gpu.nvidia.com/mig-<profile>), summed over the inventory's GPU nodes",
            m.resource_capacity.clone(),
        );
        r.register(
            "resource_allocatable",
            "An extended resource's allocatable, or a DRA device type's available devices (complete pool, \
             untainted), summed over the inventory's GPU nodes",
            m.resource_allocatable.clone(),
        );
        r.register(
            "resource_allocated",
            "An extended resource held by pods, or a DRA device type's devices allocated to claims, summed over \
             the inventory's GPU nodes",
            m.resource_allocated.clone(),
        );
        r.register(
            "resource_free",
            "An extended resource free, summed over the inventory's GPU nodes",
            m.resource_free.clone(),
        );
        r.register(
            "namespace_requested",
            "An extended resource held by a namespace's pods on the inventory's nodes",
            m.namespace_requested.clone(),
        );
        r.register(
            "namespace_pending_gpu_pods",
            "A namespace's GPU pods the scheduler could not place",
            m.namespace_pending_pods.clone(),
        );
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

    /// The metrics in OpenMetrics text format.
    pub fn encode(&self) -> String {
        // Holding the lock keeps a scrape from seeing an inventory half updated.
        let _exported = self.exported.lock().unwrap_or_else(|e| e.into_inner());
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)
            .expect("writing to a String");
        text
    }
}
