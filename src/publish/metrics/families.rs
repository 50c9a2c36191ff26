//! The inventories' metric families: their labels, and the gauges `export_inventory` fills. They are
//! registered into the process's registry by [`InventoryGauges::register`] (`registration`), each feature's
//! module registering its own.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

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

/// One product of an inventory.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ProductLabels {
    /// The GpuInventory.
    pub(crate) inventory: String,
    /// The GPU model, as `products[].name`.
    pub(crate) product: String,
}

/// One request size of a product's fragmentation ladder.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct SizeLabels {
    /// The GpuInventory.
    pub(crate) inventory: String,
    /// The GPU model, as `products[].name`.
    pub(crate) product: String,
    /// The request's GPUs on one node (`status.fragmentation.products[].sizes[].gpus`).
    pub(crate) gpus: String,
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
    pub(crate) fragmentation_largest_piece: Family<ProductLabels, Gauge>,
    pub(crate) fragmentation_usable_gpus: Family<SizeLabels, Gauge>,
    pub(crate) fragmented_pending_pods: Family<InventoryLabels, Gauge>,
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
