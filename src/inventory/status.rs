//! The status a GpuInventory should have, assembled from a scan (pure; the plan stamps the times).

use super::conditions::inventory_conditions;
use super::scanner::Inventory;
use super::size_budget::PROBLEM_NODES_LIMIT;
use crate::crd::{GpuInventoryStatus, GpuNodeEntry, ProblemNode};

/// The desired status for `inventory`, computed for spec generation `generation`. Bookkeeping times are
/// left unset: [`super::plan::plan_status`] stamps them when the content changed.
pub fn desired_status(inventory: &Inventory, generation: Option<i64>) -> GpuInventoryStatus {
    GpuInventoryStatus {
        observed_time: None,
        observed_generation: generation,
        total_gpu_nodes: inventory.total_gpu_nodes,
        ready_gpu_nodes: inventory.ready_gpu_nodes,
        total_gpus: inventory.total_gpus,
        free_gpus: inventory.free_gpus,
        pending_gpu_pods: inventory.pending_gpu_pods,
        resources: inventory.resources.clone(),
        products: inventory.products.clone(),
        namespaces: inventory.namespaces.clone(),
        // The scan may be shared with other publishers, so the entries are copied, not taken. Devices one
        // by one are for `scan`: thousands of nodes' devices would not fit the object.
        nodes: inventory
            .nodes
            .iter()
            .map(|n| GpuNodeEntry {
                devices: Vec::new(),
                ..n.clone()
            })
            .collect(),
        problem_nodes: problem_nodes(inventory).take(PROBLEM_NODES_LIMIT).collect(),
        problem_node_count: u32::try_from(
            inventory
                .nodes
                .iter()
                .filter(|n| !n.issues.is_empty())
                .count(),
        )
        .unwrap_or(u32::MAX),
        omitted_nodes: None,
        nodes_message: None,
        conditions: inventory_conditions(inventory, generation),
    }
}

/// The nodes with issues, by name (the scan's order), with their reasons.
fn problem_nodes(inventory: &Inventory) -> impl Iterator<Item = ProblemNode> + '_ {
    inventory
        .nodes
        .iter()
        .filter(|n| !n.issues.is_empty())
        .map(|n| ProblemNode {
            name: n.name.clone(),
            reasons: n.issues.iter().map(|i| i.reason.clone()).collect(),
        })
}
