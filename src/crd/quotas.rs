//! `status.quotas[]` and `status.workloadIssues[]` of a GpuInventory: Kueue's quotas and pending workloads
//! checked against the GPUs (docs/quotas.md).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One ResourceFlavor's quota of one accelerator resource against the flavor's nodes.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QuotaEntry {
    /// The ResourceFlavor.
    pub flavor: String,
    /// The resource (`nvidia.com/gpu`).
    pub resource: String,
    /// `nominalQuota`, summed over the ClusterQueues and Cohorts that give the flavor this resource.
    pub nominal_quota: u64,
    /// `borrowingLimit`, summed over those that set one; absent when none does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub borrowing_limit: Option<u64>,
    /// The ClusterQueues giving the flavor this resource.
    #[serde(default)]
    pub cluster_queues: Vec<String>,
    /// The Cohorts giving it quota of their own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cohorts: Vec<String>,
    /// The flavor's nodes (those carrying all its `nodeLabels`) offering the resource.
    pub nodes: u32,
    /// The resource's capacity on them.
    pub gpus: u64,
    /// Its allocatable on the healthy ones: Ready, not cordoned, no Degraded issue of their own, no taint the
    /// flavor's pods do not tolerate.
    pub healthy_gpus: u64,
    /// What is free of it on the healthy ones.
    pub free_gpus: u64,
    /// `QuotaExceedsCapacity` or `FlavorMatchesNoNodes`, when the promise does not hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub issues: Vec<QuotaIssueEntry>,
}

/// What is wrong with a flavor's quota.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QuotaIssueEntry {
    /// `QuotaExceedsCapacity` or `FlavorMatchesNoNodes`.
    pub reason: String,
    /// Both numbers, the queues, and the nodes that are not healthy.
    pub message: String,
}

/// A pending Workload that can never be admitted as it is.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadIssueEntry {
    /// `namespace/name` of the Workload.
    pub workload: String,
    /// Its ClusterQueue.
    pub cluster_queue: String,
    /// `WorkloadCannotFit`.
    pub reason: String,
    /// What it asks for and the most its flavors' healthy nodes hold.
    pub message: String,
}
