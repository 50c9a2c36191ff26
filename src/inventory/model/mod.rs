//! The core's typed model: what a set of nodes has, node by node and in total.
//!
//! Every leaf of the core (the node scanner, the DRA accounting, the pods' allocation) returns values of
//! these types, and [`crate::inventory::assemble`] puts them together. Nothing here is a wire type: counts
//! are numbers, issues are an enum, claims and pods are references, devices know what kind they are. The
//! publishers and `scan`'s rendering turn the model into the CRD and ConfigMap shapes (`publish::content`).

mod amount;
mod device;
mod fleet;
mod fragmentation;
mod holding;
mod issue;
mod node_inventory;
mod quotas;
mod resource_map;
mod shared_gpu;
mod topology;
mod totals;
mod utilization;
mod vendor;

use std::sync::Arc;

pub use amount::{Amount, quantity_value};
pub use device::{ClaimRef, Device, DeviceKind, DeviceTaint, SharedCapacity};
pub use fleet::{ClusterSummary, FleetProduct, FleetTotals, ProductSummary};
pub use fragmentation::{
    BlockedPod, FRAGMENTED_CAPACITY, Fragmentation, LevelFragmentation, ProductFragmentation,
    SizeUse,
};
pub use holding::{Basis, Equivalent, Holder, Holding};
pub use issue::{Issue, IssueReason, Severity};
pub use node_inventory::{Mig, MigProfile, NodeInventory, Sharing, Source};
pub use quotas::{FlavorQuota, QuotaIssue, QuotaIssueReason, QuotaReport, WorkloadIssue};
pub use resource_map::ResourceMap;
pub use shared_gpu::{GpuPart, Occupancy, SharedGpu};
pub use topology::{
    DomainFit, DomainFree, DomainProblem, DomainProblemReason, GPU_CLIQUE, NVLINK, NodeTopology,
    TopologySummary, physical_domain,
};
pub use totals::{JobFit, NamespaceTotals, ProductTotals, ResourceTotals};
pub use utilization::{IdleByNode, IdleHolding, UtilizationReport, UtilizationState};
pub use vendor::Vendor;

/// The GPU view of a set of nodes and the pods on them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Inventory {
    /// Number of GPU nodes.
    pub total_gpu_nodes: u32,
    /// GPU nodes whose Ready condition is `True`.
    pub ready_gpu_nodes: u32,
    /// Sum of the nodes' `count`.
    pub total_gpus: u64,
    /// Whole GPUs free now on Ready, schedulable nodes.
    pub free_gpus: u64,
    /// The nodes' physical GPUs whole free, partly free and fully held (`allocation::occupancy`).
    pub occupancy: Occupancy,
    /// GPU pods the scheduler could not place.
    pub pending_gpu_pods: u32,
    /// Every resource summed over the nodes, by name.
    pub resources: Vec<ResourceTotals>,
    /// GPUs per model, by name.
    pub products: Vec<ProductTotals>,
    /// GPU requests per namespace, by name.
    pub namespaces: Vec<NamespaceTotals>,
    /// One entry per GPU node, sorted by name. Entries are shared: inventories scanned after different
    /// changes hold one copy of a node that did not change (see [`crate::inventory::memory`]).
    pub nodes: Vec<Arc<NodeInventory>>,
    /// Per product and topology level, what its domains offer and what is wrong with them.
    pub topology: Vec<TopologySummary>,
    /// Per product, how its free GPUs are spread, and the pending pods blocked only by that.
    pub fragmentation: Fragmentation,
    /// Kueue's quotas and pending workloads against the GPUs; `None` where Kueue's objects are not read.
    pub quotas: Option<QuotaReport>,
    /// The held GPUs' activity, from Prometheus; `None` where it is not read (`--prometheus-url` unset).
    pub utilization: Option<UtilizationReport>,
    /// The idle holdings of each node with any, beside its entry in `nodes` rather than in it; empty where
    /// activity is not read or not known.
    pub idle: IdleByNode,
}

impl Inventory {
    /// The nodes with at least one issue, by name.
    pub fn problem_nodes(&self) -> impl Iterator<Item = &NodeInventory> {
        self.nodes
            .iter()
            .map(AsRef::as_ref)
            .filter(|n| n.has_issues())
    }

    /// The idle holdings of the node `name`, sorted (none where it holds no idle unit).
    pub fn idle_of(&self, name: &str) -> &[IdleHolding] {
        self.idle.get(name).map_or(&[], |list| list)
    }

    /// How many nodes have at least one issue.
    pub fn problem_node_count(&self) -> u32 {
        u32::try_from(self.problem_nodes().count()).unwrap_or(u32::MAX)
    }
}
