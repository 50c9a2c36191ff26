//! The nodes whose GPUs are shared, as their labels and annotations say, for the query: the source asks
//! for the busy series of these nodes beside the idle series of all, so that a busy shared GPU is seen as
//! busy (and named in the report) rather than as unmeasured, at the cost of these nodes' GPUs alone.

use std::sync::Arc;

use crate::inventory::cluster_node::ClusterNode;
use crate::inventory::vendors::nvidia::cloud::GKE_SHARING_STRATEGY;
use crate::inventory::vendors::nvidia::gfd_labels::{GPU_REPLICAS, GPU_SHARING_STRATEGY};
use crate::inventory::vendors::nvidia::resource_names::SHARED_GPU_RESOURCE;

/// The names of the nodes among `nodes` that share their GPUs, sorted.
pub fn shared_nodes(nodes: &[Arc<ClusterNode>]) -> Vec<String> {
    let mut names: Vec<String> = nodes
        .iter()
        .filter(|n| shares_gpus(n))
        .map(|n| n.name.to_string())
        .collect();
    names.sort_unstable();
    names
}

/// Whether a node shares its GPUs: time-slicing or MPS as GPU Feature Discovery labels it (a strategy other
/// than `none`, more than one replica), GKE's sharing label, the device plugin's renamed shared resource, or
/// a sharing layer's list of its cards (HAMi's, Volcano's register annotation).
pub fn shares_gpus(node: &ClusterNode) -> bool {
    let label = |key: &str| node.labels.get(key);
    !node.registers.is_empty()
        || label(GPU_SHARING_STRATEGY).is_some_and(|s| s != "none")
        || label(GPU_REPLICAS)
            .and_then(|r| r.parse::<u64>().ok())
            .is_some_and(|r| r > 1)
        || label(GKE_SHARING_STRATEGY).is_some()
        || node
            .capacity
            .as_ref()
            .is_some_and(|c| c.contains_key(SHARED_GPU_RESOURCE))
}
