//! The `GpuInventory` custom resource (`homelab.youngju.dev/v1`), kept wire-compatible with the article.
//!
//! Everything the scanner derives lands in [`GpuInventoryStatus`]; the spec only says which nodes an
//! inventory covers.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

mod fleet;
mod fragmentation;
mod gpu_node_entry;
mod gpunode;
mod quotas;
mod topology;
mod utilization;

pub use fleet::*;
pub use fragmentation::*;
pub use gpu_node_entry::*;
pub use gpunode::*;
pub use quotas::*;
pub use topology::*;
pub use utilization::*;

/// API group of every resource this operator owns.
pub const GROUP: &str = "homelab.youngju.dev";
/// Name of the GpuInventory CRD object (`<plural>.<group>`).
pub const CRD_NAME: &str = "gpuinventories.homelab.youngju.dev";
/// Name of the GpuNode CRD object.
pub const GPUNODE_CRD_NAME: &str = "gpunodes.homelab.youngju.dev";
/// Every CRD this operator owns, in the order it installs them.
pub const CRD_NAMES: [&str; 2] = [CRD_NAME, GPUNODE_CRD_NAME];

/// What a `GpuInventory` covers.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "homelab.youngju.dev",
    version = "v1",
    kind = "GpuInventory",
    plural = "gpuinventories",
    shortname = "gpuinv",
    status = "GpuInventoryStatus",
    printcolumn = r#"{"name":"GPU-NODES","type":"integer","jsonPath":".status.totalGpuNodes"}"#,
    printcolumn = r#"{"name":"READY","type":"integer","jsonPath":".status.readyGpuNodes"}"#,
    printcolumn = r#"{"name":"GPUS","type":"integer","jsonPath":".status.totalGpus"}"#,
    printcolumn = r#"{"name":"FREE","type":"integer","jsonPath":".status.freeGpus"}"#,
    printcolumn = r#"{"name":"FREE-BY-VENDOR","type":"string","jsonPath":".status.freeByVendor"}"#,
    printcolumn = r#"{"name":"STATUS","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason"}"#,
    printcolumn = r#"{"name":"AGE","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct GpuInventorySpec {
    /// Free text for humans; the operator never reads it.
    #[serde(default)]
    pub note: String,
    /// Which nodes this inventory covers. Empty or absent selects every node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<LabelSelector>,
}

/// What the operator observed about the selected nodes.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GpuInventoryStatus {
    /// When the current content was first observed. Unchanged while the content is unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_time: Option<Time>,
    /// The `metadata.generation` of the spec this status was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Number of GPU nodes among the selected nodes.
    #[serde(default)]
    pub total_gpu_nodes: u32,
    /// Number of GPU nodes whose `Ready` condition is `True`.
    #[serde(default)]
    pub ready_gpu_nodes: u32,
    /// Sum of `nodes[].count`.
    #[serde(default)]
    pub total_gpus: u64,
    /// Whole GPUs free now: free `nvidia.com/gpu` on Ready, schedulable nodes where that resource is one
    /// physical GPU (not time-sliced, not MIG under strategy `single`, not a GKE partition). Shared and MIG
    /// resources are in `resources` under their own names, never added here.
    #[serde(default)]
    pub free_gpus: u64,
    /// Physical GPUs nothing holds any of (whatever schemes share them): see `products[].wholeFreeGpus`.
    #[serde(default)]
    pub whole_free_gpus: u64,
    /// Physical GPUs held in part with room for more (shares, MIG slices, replicas left).
    #[serde(default)]
    pub partly_free_gpus: u64,
    /// Physical GPUs held in full. The three add up to the physical GPUs: `totalGpus`, but where MIG strategy `single` makes `count` the MIG devices.
    #[serde(default)]
    pub fully_held_gpus: u64,
    /// Whole devices free now per vendor, `amd=8,nvidia=4` (vendors are never summed with one another:
    /// `freeGpus` is their total, for the article's column). Absent when no node is a GPU node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free_by_vendor: Option<String>,
    /// GPU pods waiting for GPUs the scheduler could not place (Pending, `PodScheduled=False`,
    /// reason `Unschedulable`).
    #[serde(default)]
    pub pending_gpu_pods: u32,
    /// Every `nvidia.com/*` resource of the selected GPU nodes, summed over them, sorted by name.
    #[serde(default)]
    pub resources: Vec<ResourceSummary>,
    /// GPUs per model, sorted by name: the answer to "where are free H100s". Nodes no source names the
    /// model of are left out.
    #[serde(default)]
    pub products: Vec<ProductSummary>,
    /// GPU requests per namespace (pods on the selected nodes, and pending ones), sorted by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<NamespaceUsage>,
    /// Per product and topology level (`nvlink`, then network levels from the narrowest): what the domains
    /// offer to a multi-node job of the product's pods, and what is wrong with them (docs/topology.md).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub topology: Vec<TopologyLevelSummary>,
    /// Per product, how its free GPUs are spread (what a request of each size could use, on one node and at
    /// each topology level), and the pending pods blocked only by that (docs/fragmentation.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fragmentation: Option<FragmentationStatus>,
    /// Per Kueue ResourceFlavor and accelerator resource: the nominal quota against the healthy units of the
    /// flavor's nodes (docs/quotas.md). Absent where Kueue is not installed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub quotas: Vec<QuotaEntry>,
    /// Pending Kueue Workloads that can never be admitted as they are, by name, at most 50 of them
    /// (`workloadIssueCount` is the true count).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workload_issues: Vec<WorkloadIssueEntry>,
    /// Pending Workloads that can never be admitted, all of them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub workload_issue_count: u32,
    /// The held GPUs' activity: its source and window, whether the idle figures are known, and the idle units
    /// per resource (docs/utilization.md). Absent without `--prometheus-url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub utilization: Option<UtilizationStatus>,
    /// GPU nodes with at least one issue, by name, at most 100 of them (`problemNodeCount` is the true count).
    /// Each node's detail is in its GpuNode.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problem_nodes: Vec<ProblemNode>,
    /// GPU nodes with at least one issue, all of them (`problemNodes` may list fewer).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub problem_node_count: u32,
    /// GPU node entries, sorted by name, within the status's byte budget (`--status-nodes-budget`): nodes with
    /// issues are kept first. Every GPU node has its full entry in its own `GpuNode` object.
    #[serde(default)]
    pub nodes: Vec<GpuNodeEntry>,
    /// GPU nodes left out of `nodes` to keep the status within its budget (totals, products, problem nodes
    /// and conditions still count them). Absent when `nodes` is complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omitted_nodes: Option<u32>,
    /// Says where the omitted nodes are (`kubectl get gpunodes`), when some are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes_message: Option<String>,
    /// `Ready`, `Degraded` and `GpusAvailable`, as `metav1.Condition`.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// One extended resource summed over an inventory's GPU nodes.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSummary {
    /// The resource, e.g. `nvidia.com/gpu`, `nvidia.com/gpu.shared`, `nvidia.com/mig-1g.10gb`.
    pub name: String,
    /// Sum of the nodes' capacity.
    pub capacity: u64,
    /// Sum of the nodes' allocatable.
    pub allocatable: u64,
    /// Sum of what pods hold.
    pub allocated: u64,
    /// Sum of the nodes' `free`.
    pub free: u64,
}

/// The GPUs of one model.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProductSummary {
    /// The model as the nodes name it (`nodes[].product`).
    pub name: String,
    /// GPU nodes of this model.
    pub nodes: u32,
    /// Sum of their `count`.
    pub gpus: u64,
    /// Whole GPUs of this model free now (see `status.freeGpus`).
    pub free_gpus: u64,
    /// Who makes it (`nvidia`, `amd`, ...), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor: Option<String>,
    /// Its physical GPUs nothing holds any of, whatever shares them (docs/allocation.md, "Whole, partly
    /// free, fully held"); unlike `freeGpus` it counts GPUs on NotReady and cordoned nodes too.
    #[serde(default)]
    pub whole_free_gpus: u64,
    /// Its physical GPUs held in part with room for more: a HAMi card with memory left, a KAI GPU with a
    /// fraction left, a GPU with time-slicing replicas or MIG slices left.
    #[serde(default)]
    pub partly_free_gpus: u64,
    /// Its physical GPUs held in full. The three add up to its physical GPUs (`gpus`, but under MIG strategy `single`, whose `count` is MIG devices).
    #[serde(default)]
    pub fully_held_gpus: u64,
    /// Where a job asking for N whole GPUs of this model can start now: for N in 1, 2, 4 and 8, how many
    /// Ready, schedulable nodes have at least N of them free.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes_with_free_gpus: Vec<FreeGpuNodes>,
}

/// How many nodes have at least `atLeast` whole GPUs free.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FreeGpuNodes {
    /// The job's size in GPUs: 1, 2, 4 or 8.
    pub at_least: u32,
    /// Nodes with at least that many whole GPUs of the model free.
    pub nodes: u32,
}

/// A GPU node with issues, as the aggregate lists it.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProblemNode {
    /// The node's name (and its GpuNode's).
    pub name: String,
    /// The reasons of its issues, in the order the node lists them.
    pub reasons: Vec<String>,
}

/// What one namespace's pods ask for.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NamespaceUsage {
    /// The namespace.
    pub name: String,
    /// Per resource, what its pods on the selected nodes hold.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub allocated: BTreeMap<String, u64>,
    /// Its GPU pods the scheduler could not place.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pending_pods: u32,
    /// Per resource, what those pending pods ask for.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pending: BTreeMap<String, u64>,
    /// What its pods and claims hold, in physical GPUs: a decimal with at most three decimals (`2.5`: two
    /// whole GPUs and a half by its sharing scheme's rule; docs/allocation.md, "GPU-equivalents"). Absent when
    /// none of its holdings has an equivalent (another vendor's partition, a resource no rule covers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_equivalents: Option<String>,
    /// The same by the product of the nodes they are held on (`unknown` where no source names it): what the
    /// chargeback gauge `gpu_inventory_namespace_gpu_equivalents` exports.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub gpu_equivalents_by_product: BTreeMap<String, String>,
    /// Per resource, the units its pods and claims hold that sat idle through the utilization window; absent
    /// when none did, or while `utilization.state` is `Unknown`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub idle: BTreeMap<String, u64>,
    /// What those idle units are in physical GPUs, as `gpuEquivalents` writes it (docs/utilization.md,
    /// "Shared GPUs"); absent when none, or while `utilization.state` is `Unknown`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_gpu_equivalents: Option<String>,
    /// The same by product: what the chargeback gauge `gpu_inventory_namespace_gpu_equivalents_idle` exports.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub idle_gpu_equivalents_by_product: BTreeMap<String, String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}
