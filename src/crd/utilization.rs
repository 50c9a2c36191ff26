//! `GpuNode.status.node.idle[]`, `GpuInventory.status.namespaces[].idle` and `GpuInventory.status.utilization`:
//! which held GPUs sat idle, from dcgm-exporter's activity in Prometheus (docs/utilization.md).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One holder's idle units of one resource on a node.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IdleEntry {
    /// The pod holding them, `namespace/name`; absent for a claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<String>,
    /// The ResourceClaim holding them, `namespace/name`; absent for a pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<String>,
    /// The resource (`nvidia.com/gpu`, `nvidia.com/mig-1g.10gb`, `gpu.nvidia.com/gpu`).
    pub resource: String,
    /// How many of the held units sat idle through the whole window.
    pub amount: u64,
    /// What they are of a physical GPU: a decimal with at most three decimals, as `gpuEquivalents` writes it
    /// (a time-slicing replica of 4: `0.25`; a HAMi share of an idle card: its memory over the card's).
    /// Absent where the holding has no GPU-equivalent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_equivalents: Option<String>,
    /// Since when they have been idle at the latest (RFC 3339): the start of the window in which they were
    /// first found idle. It does not move while they stay idle.
    pub idle_since: String,
}

/// Where the activity is read and whether the idle figures are known.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UtilizationStatus {
    /// The Prometheus the activity is read from (`--prometheus-url`, without credentials).
    pub source: String,
    /// How long a held GPU must stay below the threshold to be idle (`--idle-window`).
    pub window: String,
    /// `Current`: the last query answered in full, or failed within `--utilization-hold` of one that did (its
    /// answer stands, and the message says so). `Unknown`: queries failed, were refused or answered in part
    /// for longer, and every idle figure is withheld (absent, not 0) until one answers.
    pub state: String,
    /// The rule while `Current` (and, through a hold, why the latest round failed and whose answer stands);
    /// why, while `Unknown`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Per resource, the idle units over every namespace; absent while `Unknown`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub idle: BTreeMap<String, u64>,
    /// Shared GPUs (time-slicing, MPS, a sharing layer's cards) someone holds that dcgm-exporter reports busy:
    /// none of their holders is idle, and what each did is not measured (the message says so); absent when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub busy_shared_gpus: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
