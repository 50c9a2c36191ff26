//! The inventories' metric families: their labels, and the gauges `export_inventory` fills. They are
//! registered into the process's registry by [`InventoryGauges::register`].

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};

use crate::inventory::model::Inventory;

/// Labels: `inventory`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct InventoryLabels {
    /// The GpuInventory.
    pub(crate) inventory: String,
}

/// Labels: `inventory`, `node`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct NodeLabels {
    /// The GpuInventory.
    pub(crate) inventory: String,
    /// The node.
    pub(crate) node: String,
}

/// Labels of the per-node info metric.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct NodeInfoLabels {
    /// The GpuInventory.
    pub(crate) inventory: String,
    /// The node.
    pub(crate) node: String,
    /// Who makes its accelerators (`nvidia`, `amd`, ...), "" when no rule attributes them.
    pub(crate) vendor: String,
    /// The product (`nvidia.com/gpu.product`, `amd.com/gpu.product-name`, ...), "" when unknown.
    pub(crate) product: String,
    /// `nvidia.com/gpu.workload.config`, "" when absent.
    pub(crate) workload_config: String,
    /// "true" or "false".
    pub(crate) ready: String,
}

/// Labels: `inventory`, `reason`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct IssueLabels {
    /// The GpuInventory.
    pub(crate) inventory: String,
    /// The issue reason.
    pub(crate) reason: String,
}

/// A resource on a node.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct NodeResourceLabels {
    /// The GpuInventory.
    pub(crate) inventory: String,
    /// The node.
    pub(crate) node: String,
    /// The extended resource, e.g. `nvidia.com/gpu`.
    pub(crate) resource: String,
}

/// A resource summed over an inventory.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ResourceLabels {
    /// The GpuInventory.
    pub(crate) inventory: String,
    /// The extended resource.
    pub(crate) resource: String,
}

/// A namespace's pods in an inventory.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct NamespaceLabels {
    /// The GpuInventory.
    pub(crate) inventory: String,
    /// The pods' namespace.
    pub(crate) namespace: String,
}

/// What a namespace's pods hold of one resource.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct NamespaceResourceLabels {
    /// The GpuInventory.
    pub(crate) inventory: String,
    /// The pods' namespace.
    pub(crate) namespace: String,
    /// The extended resource.
    pub(crate) resource: String,
}

/// What a namespace's pods hold of one product's GPUs, in GPU-equivalents.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct NamespaceProductLabels {
    /// The GpuInventory.
    pub(crate) inventory: String,
    /// The pods' namespace.
    pub(crate) namespace: String,
    /// The GPU model of the nodes they hold them on.
    pub(crate) product: String,
}

/// Where a job of `at_least` whole GPUs of a product can start.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct JobFitLabels {
    /// The GpuInventory.
    pub(crate) inventory: String,
    /// The GPU model, as `products[].name`.
    pub(crate) product: String,
    /// Who makes it, "" when unknown.
    pub(crate) vendor: String,
    /// The job's size in GPUs: "1", "2", "4" or "8".
    pub(crate) at_least: String,
}

/// One product's GPUs at one topology level.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct TopologyLabels {
    /// The GpuInventory.
    pub(crate) inventory: String,
    /// The GPU model, as `products[].name`.
    pub(crate) product: String,
    /// `nvlink` or a node label key.
    pub(crate) level: String,
}

/// One domain of a topology level.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct DomainLabels {
    /// The GpuInventory.
    pub(crate) inventory: String,
    /// The GPU model, as `products[].name`.
    pub(crate) product: String,
    /// `nvlink` or a node label key.
    pub(crate) level: String,
    /// The domain (the label's value).
    pub(crate) domain: String,
}

/// One Kueue flavor's quota of one resource.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct QuotaLabels {
    /// The GpuInventory.
    pub(crate) inventory: String,
    /// The ResourceFlavor.
    pub(crate) flavor: String,
    /// The resource (`nvidia.com/gpu`).
    pub(crate) resource: String,
}

/// One issue of a Kueue flavor's quota.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct QuotaIssueLabels {
    /// The GpuInventory.
    pub(crate) inventory: String,
    /// The ResourceFlavor.
    pub(crate) flavor: String,
    /// The resource.
    pub(crate) resource: String,
    /// `QuotaExceedsCapacity` or `FlavorMatchesNoNodes`.
    pub(crate) reason: String,
}

/// The gauges of every inventory, and what was last exported of each.
#[derive(Debug, Default)]
pub struct InventoryGauges {
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
    pub(crate) namespace_gpu_equivalents: Family<NamespaceProductLabels, Gauge<f64, AtomicU64>>,
    pub(crate) product_nodes_with_free_gpus: Family<JobFitLabels, Gauge>,
    pub(crate) topology_domains: Family<TopologyLabels, Gauge>,
    pub(crate) topology_degraded_domains: Family<TopologyLabels, Gauge>,
    pub(crate) topology_largest_free_gpus: Family<TopologyLabels, Gauge>,
    pub(crate) topology_domain_free_gpus: Family<DomainLabels, Gauge>,
    pub(crate) quota: Family<QuotaLabels, Gauge>,
    pub(crate) quota_healthy: Family<QuotaLabels, Gauge>,
    pub(crate) quota_issues: Family<QuotaIssueLabels, Gauge>,
    pub(crate) workloads_cannot_fit: Family<InventoryLabels, Gauge>,
    pub(crate) idle_gpus: Family<NamespaceResourceLabels, Gauge>,
    pub(crate) namespace_gpu_equivalents_idle:
        Family<NamespaceProductLabels, Gauge<f64, AtomicU64>>,
    pub(crate) utilization_known: Family<InventoryLabels, Gauge>,
    /// The last exported status per inventory, so unchanged statuses cost nothing and gone series vanish.
    pub(crate) exported: Mutex<BTreeMap<String, Arc<Inventory>>>,
}

impl InventoryGauges {
    /// Registers every family (the same series as before: names, help and units are the dashboard's).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "gpu_nodes",
            "GPU nodes covered by the inventory",
            self.gpu_nodes.clone(),
        );
        registry.register(
            "ready_gpu_nodes",
            "GPU nodes whose Ready condition is True",
            self.ready_gpu_nodes.clone(),
        );
        registry.register(
            "gpus",
            "GPUs counted by the inventory (sum of nvidia.com/gpu.count)",
            self.gpus.clone(),
        );
        registry.register(
            "node_info",
            "A GPU node: product, workload config, readiness (always 1)",
            self.node_info.clone(),
        );
        registry.register(
            "node_gpus",
            "GPUs on the node (nvidia.com/gpu.count)",
            self.node_gpus.clone(),
        );
        registry.register_with_unit(
            "node_gpu_memory",
            "Memory of one GPU on the node (nvidia.com/gpu.memory)",
            Unit::Bytes,
            self.node_gpu_memory.clone(),
        );
        registry.register(
            "node_issues",
            "GPU nodes with an issue, by reason",
            self.node_issues.clone(),
        );
        registry.register(
            "free_gpus",
            "Whole GPUs free on Ready, schedulable nodes (status.freeGpus)",
            self.free_gpus.clone(),
        );
        registry.register(
            "pending_gpu_pods",
            "GPU pods the scheduler could not place (Pending, Unschedulable)",
            self.pending_gpu_pods.clone(),
        );
        registry.register(
                "node_allocated",
                "Of an extended resource on a node, what the pods bound there hold (scheduler's effective request)",
                self.node_allocated.clone(),
            );
        registry.register(
            "node_free",
            "Of an extended resource on a node, allocatable minus allocated (never below 0)",
            self.node_free.clone(),
        );
        registry.register(
            "resource_capacity",
            "An extended resource's capacity, or a DRA device type's devices (gpu.nvidia.com/gpu, \
                 gpu.nvidia.com/mig-<profile>), summed over the inventory's GPU nodes",
            self.resource_capacity.clone(),
        );
        registry.register(
                "resource_allocatable",
                "An extended resource's allocatable, or a DRA device type's available devices (complete pool, \
                 untainted), summed over the inventory's GPU nodes",
                self.resource_allocatable.clone(),
            );
        registry.register(
                "resource_allocated",
                "An extended resource held by pods, or a DRA device type's devices allocated to claims, summed over \
                 the inventory's GPU nodes",
                self.resource_allocated.clone(),
            );
        registry.register(
            "resource_free",
            "An extended resource free, summed over the inventory's GPU nodes",
            self.resource_free.clone(),
        );
        registry.register(
            "namespace_requested",
            "An extended resource held by a namespace's pods on the inventory's nodes",
            self.namespace_requested.clone(),
        );
        registry.register(
            "namespace_pending_gpu_pods",
            "A namespace's GPU pods the scheduler could not place",
            self.namespace_pending_pods.clone(),
        );
        registry.register(
            "namespace_gpu_equivalents",
            "Physical GPUs of a product a namespace's pods and claims hold, by their sharing schemes' rules \
             (status.namespaces[].gpuEquivalents; sum_over_time gives GPU-hours)",
            self.namespace_gpu_equivalents.clone(),
        );
        registry.register(
            "product_nodes_with_free_gpus",
            "Ready, schedulable nodes with at least at_least whole GPUs of the product free: where a job of that \
             many GPUs can start (status.products[].nodesWithFreeGpus)",
            self.product_nodes_with_free_gpus.clone(),
        );
        registry.register(
            "topology_domains",
            "Domains of a topology level (nvlink: NVLink partitions; else a node label key) holding GPU nodes of \
             the product (status.topology[].domains)",
            self.topology_domains.clone(),
        );
        registry.register(
            "topology_degraded_domains",
            "Domains of the level with a problem: NVLink partitions whose members cannot all take part \
             (NvlinkDomainDegraded; status.topology[].degradedDomains)",
            self.topology_degraded_domains.clone(),
        );
        registry.register(
            "topology_largest_free_gpus",
            "The most GPUs one domain of the level offers to pods of the product's GPUs per node \
             (status.topology[].largestFreeGpus)",
            self.topology_largest_free_gpus.clone(),
        );
        registry.register(
            "topology_domain_free_gpus",
            "GPUs a domain offers to pods of the product's GPUs per node, for the level's largest domains only \
             (at most 5 per product and level: status.topology[].largestDomains)",
            self.topology_domain_free_gpus.clone(),
        );
        registry.register(
            "quota",
            "A Kueue ResourceFlavor's nominal quota of a resource, summed over the ClusterQueues and Cohorts \
             giving it (status.quotas[].nominalQuota)",
            self.quota.clone(),
        );
        registry.register(
            "quota_healthy",
            "The resource's allocatable on the flavor's healthy nodes: what the quota can be served from \
             (status.quotas[].healthyGpus)",
            self.quota_healthy.clone(),
        );
        registry.register(
            "quota_issues",
            "1 while a flavor's quota of a resource has the issue (QuotaExceedsCapacity, FlavorMatchesNoNodes)",
            self.quota_issues.clone(),
        );
        registry.register(
            "workloads_cannot_fit",
            "Pending Kueue Workloads that can never be admitted as they are (status.workloadIssueCount)",
            self.workloads_cannot_fit.clone(),
        );
        registry.register(
            "idle_gpus",
            "Units of a resource a namespace's pods and claims hold that sat idle through the utilization \
             window (status.namespaces[].idle); absent while the activity is unknown",
            self.idle_gpus.clone(),
        );
        registry.register(
            "namespace_gpu_equivalents_idle",
            "Physical GPUs of a product a namespace's pods and claims hold that sat idle through the utilization \
             window, by the sharing schemes' rules (status.namespaces[].idleGpuEquivalents; sum_over_time gives \
             idle GPU-hours); absent while the activity is unknown",
            self.namespace_gpu_equivalents_idle.clone(),
        );
        registry.register(
            "utilization_known",
            "1 while the last query of the GPUs' activity answered in full (status.utilization.state Current), \
             0 while the idle figures are withheld",
            self.utilization_known.clone(),
        );
    }
}
