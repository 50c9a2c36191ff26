//! What Kueue's quotas promise against the GPUs that exist (`inventory::quotas` computes it).

use std::fmt;

/// Why a flavor's quota or a pending workload needs attention. The strings are part of the API.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum QuotaIssueReason {
    /// The nominal quota of a resource, summed over the ClusterQueues and Cohorts, is above the healthy
    /// units of the flavor's nodes.
    QuotaExceedsCapacity,
    /// A flavor with quota of a resource whose `nodeLabels` match no node offering it.
    FlavorMatchesNoNodes,
    /// A pending workload that can never be admitted as it is.
    WorkloadCannotFit,
}

impl QuotaIssueReason {
    /// The reason as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            QuotaIssueReason::QuotaExceedsCapacity => "QuotaExceedsCapacity",
            QuotaIssueReason::FlavorMatchesNoNodes => "FlavorMatchesNoNodes",
            QuotaIssueReason::WorkloadCannotFit => "WorkloadCannotFit",
        }
    }
}

impl fmt::Display for QuotaIssueReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A quota issue: every one is `Degraded` (capacity promised is not there until someone acts).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuotaIssue {
    /// Why.
    pub reason: QuotaIssueReason,
    /// Both numbers and the nodes at fault, or what the workload asks and the most it could get.
    pub message: String,
}

/// One flavor's quota of one accelerator resource against its nodes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FlavorQuota {
    /// The ResourceFlavor.
    pub flavor: String,
    /// The resource (`nvidia.com/gpu`).
    pub resource: String,
    /// `nominalQuota` summed over the ClusterQueues and Cohorts that give the flavor this resource.
    pub nominal_quota: u64,
    /// `borrowingLimit` summed over those that set one (`None`: none sets one).
    pub borrowing_limit: Option<u64>,
    /// The ClusterQueues giving the flavor this resource, by name.
    pub cluster_queues: Vec<String>,
    /// The Cohorts giving it quota of their own, by name.
    pub cohorts: Vec<String>,
    /// The flavor's nodes offering the resource.
    pub nodes: u32,
    /// The resource's capacity on them.
    pub gpus: u64,
    /// Its allocatable on those of them that are healthy (Ready, not cordoned, no Degraded issue of their own,
    /// no taint the flavor's pods do not tolerate).
    pub healthy_gpus: u64,
    /// What is free of it on the healthy ones.
    pub free_gpus: u64,
    /// The flavor's nodes that are not healthy, each with why, by name.
    pub unhealthy_nodes: Vec<(String, String)>,
    /// What is wrong (empty when the promise holds).
    pub issues: Vec<QuotaIssue>,
}

/// A pending workload that can never be admitted as it is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WorkloadIssue {
    /// `namespace/name`.
    pub workload: String,
    /// Its ClusterQueue.
    pub cluster_queue: String,
    /// Why it cannot fit, naming the PodSet, the resource and the most it could get.
    pub message: String,
}

/// Kueue's quotas and pending workloads checked against the GPUs (present when Kueue's objects are read).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QuotaReport {
    /// One entry per flavor and accelerator resource with quota, by flavor then resource.
    pub quotas: Vec<FlavorQuota>,
    /// Every pending workload that cannot fit, by name.
    pub workload_issues: Vec<WorkloadIssue>,
}
