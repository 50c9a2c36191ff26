//! Hand-made models for the unit tests (compiled for tests only).

use k8s_openapi::api::core::v1::Node;

use crate::inventory::cluster_node::ClusterNode;
use crate::inventory::model::{Inventory, Issue, IssueReason, NodeInventory};

/// API nodes as the core reads them (the built-in health table): what the node watch and the dumps hand
/// the scan.
pub(crate) fn read<'a>(nodes: impl IntoIterator<Item = &'a Node>) -> Vec<ClusterNode> {
    nodes.into_iter().map(ClusterNode::of).collect()
}

/// A GPU node with `count` GPUs and one issue per reason (message `"<reason> details"`).
pub(crate) fn entry(name: &str, ready: bool, count: u64, reasons: &[IssueReason]) -> NodeInventory {
    NodeInventory {
        name: name.into(),
        ready,
        count,
        issues: reasons
            .iter()
            .map(|r| Issue::new(*r, format!("{r} details")))
            .collect(),
        ..Default::default()
    }
}

/// The inventory of `nodes`, totals computed as the assembler does.
pub(crate) fn inventory(nodes: Vec<NodeInventory>) -> Inventory {
    Inventory {
        total_gpu_nodes: nodes.len() as u32,
        ready_gpu_nodes: nodes.iter().filter(|n| n.ready).count() as u32,
        total_gpus: nodes.iter().map(|n| n.count).sum(),
        nodes: nodes.into_iter().map(std::sync::Arc::new).collect(),
        ..Default::default()
    }
}
