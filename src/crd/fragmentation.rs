//! `status.fragmentation` of a GpuInventory: per product how its free GPUs are spread (what a request of each
//! size could use), and the pending pods blocked only by that (docs/fragmentation.md). Bounded: a ladder of a
//! few sizes per product and level, at most 20 pods named (`blockedPods` counts them all).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The inventory's fragmentation.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FragmentationStatus {
    /// Per GPU model (`products[].name`), by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub products: Vec<ProductFragmentationEntry>,
    /// Pending GPU pods whose request fits the free GPUs of a product they may run on in total, but no
    /// node: all of them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub blocked_pods: u32,
    /// The first 20 of them, the largest requests first, each with reason `FragmentedCapacity`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocked: Vec<BlockedPodEntry>,
}

/// One product's free GPUs and how they are spread.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProductFragmentationEntry {
    /// The GPU model.
    pub product: String,
    /// Free whole GPUs a pod could get now (Ready, schedulable, untainted nodes).
    pub free_gpus: u64,
    /// The most free GPUs on one node: the largest one-node request that starts now.
    pub largest_piece: u64,
    /// Nodes holding some free GPUs.
    pub pieces: u32,
    /// Per one-node request size (1, 2, 4, 8 up to the widest node, and every size a pending pod asks for):
    /// the free GPUs requests of that size could take, all at once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sizes: Vec<SizeUseEntry>,
    /// The same per topology level (`nvlink`, network levels), for gangs of whole pods.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub levels: Vec<LevelFragmentationEntry>,
}

/// What requests of one size could use.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SizeUseEntry {
    /// The request's GPUs (one pod, or one gang at a level).
    pub gpus: u64,
    /// `sum(floor(piece / gpus) * gpus)` over the pieces: `usableGpus / freeGpus` is the share usable.
    pub usable_gpus: u64,
    /// A pending pod asks for this size.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub asked: bool,
}

/// One product's free GPUs at one topology level.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LevelFragmentationEntry {
    /// `nvlink` or the node label key of a network level.
    pub level: String,
    /// The gang's pods' size (the product's most common GPUs per node).
    pub gpus_per_pod: u64,
    /// The most GPUs one domain offers: the largest gang that starts now.
    pub largest_piece: u64,
    /// Per gang size (whole pods: 1, 2, 4, ... and 18, 36, ... up to the largest domain).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sizes: Vec<SizeUseEntry>,
}

/// A pending pod blocked only by fragmentation.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BlockedPodEntry {
    /// `FragmentedCapacity`.
    pub reason: String,
    /// The pod's namespace.
    pub namespace: String,
    /// The pod.
    pub pod: String,
    /// The whole GPUs it asks for.
    pub gpus: u64,
    /// The product whose free GPUs would hold it.
    pub product: String,
    /// That product's free GPUs on the nodes the pod may run on.
    pub free_gpus: u64,
    /// The most free on one of those nodes.
    pub largest_piece: u64,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}
