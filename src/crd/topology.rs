//! `status.topology[]` of a GpuInventory: per product and topology level, what the domains offer to a
//! multi-node job and what is wrong with them (docs/topology.md).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One product's GPUs at one topology level.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TopologyLevelSummary {
    /// The GPU model (`products[].name`).
    pub product: String,
    /// `nvlink` (the NVLink partition) or the node label key of a network level.
    pub level: String,
    /// The pods' size the counts assume: the product's most common GPUs per node. A node offers
    /// `floor(free / gpusPerPod) * gpusPerPod` of its free whole GPUs.
    pub gpus_per_pod: u64,
    /// Domains with nodes of the product.
    pub domains: u32,
    /// The most GPUs one domain offers.
    pub largest_free_gpus: u64,
    /// For job sizes that matter (multiples of `gpusPerPod`: 1, 2, 4, 8, 16, 18, 32, 36, ... pods, up to the
    /// largest domain), how many domains could start one now.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub domains_fitting: Vec<DomainsFitting>,
    /// The domains offering the most, most first (at most 5).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub largest_domains: Vec<DomainFreeGpus>,
    /// Domains with a problem (all of them; `problems` lists the first 8).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub degraded_domains: u32,
    /// What is wrong with those domains.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<DomainProblemEntry>,
}

/// How many domains could start a job of `atLeast` GPUs.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DomainsFitting {
    /// The job's GPUs.
    pub at_least: u64,
    /// Domains whose nodes offer at least that many.
    pub domains: u32,
}

/// One domain and what it offers.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DomainFreeGpus {
    /// The domain (the label's value).
    pub name: String,
    /// GPUs its nodes offer to pods of `gpusPerPod`.
    pub free_gpus: u64,
    /// Its nodes of the product.
    pub nodes: u32,
}

/// What is wrong with one domain.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DomainProblemEntry {
    /// `NvlinkDomainDegraded`.
    pub reason: String,
    /// The domain.
    pub domain: String,
    /// The members at fault.
    pub nodes: Vec<String>,
    /// The domain, its rack, the nodes at fault and the job that cannot start there.
    pub message: String,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}
