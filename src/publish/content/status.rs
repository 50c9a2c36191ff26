//! The status a GpuInventory should have, made from the model (pure; the plan stamps the times).

use super::size_budget::{PROBLEM_NODES_LIMIT, node_entries_within, note_omitted};
use super::wire::{self, Detail};
use crate::crd::GpuInventoryStatus;
use crate::inventory::model::Inventory;

/// Which node entries a status lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeList {
    /// The operator's: entries of counts, within this many bytes (`--status-nodes-budget`), problem nodes
    /// first; `omittedNodes` and `nodesMessage` say what was left out.
    Within(usize),
    /// `scan --status-nodes-budget`'s: the very nodes `Within` lists for this budget (the one cut,
    /// `size_budget::status_cut`, decided on their entries of counts), each in this detail, with the same
    /// `omittedNodes` and `nodesMessage`.
    WithinShown(usize, Detail),
    /// `scan`'s: every node, in this detail.
    All(Detail),
}

/// The desired status for `inventory`, computed for spec generation `generation`. Bookkeeping times are
/// left unset: `plan::plan_status` stamps them when the content changed.
pub fn desired_status(
    inventory: &Inventory,
    generation: Option<i64>,
    list: NodeList,
) -> GpuInventoryStatus {
    // Within a budget only the entries kept are built to be held (see `node_entries_within`).
    let (nodes, omitted) = match list {
        NodeList::Within(budget) => node_entries_within(inventory, budget, Detail::Counts),
        NodeList::WithinShown(budget, detail) => node_entries_within(inventory, budget, detail),
        NodeList::All(detail) => {
            let all = inventory
                .nodes
                .iter()
                .map(|n| wire::node_entry(n, inventory.idle_of(&n.name), detail));
            (all.collect(), 0)
        }
    };
    let (workload_issues, workload_issue_count) = inventory
        .quotas
        .as_ref()
        .map(wire::workload_issues)
        .unwrap_or_default();
    let mut status = GpuInventoryStatus {
        observed_time: None,
        observed_generation: generation,
        total_gpu_nodes: inventory.total_gpu_nodes,
        ready_gpu_nodes: inventory.ready_gpu_nodes,
        total_gpus: inventory.total_gpus,
        free_gpus: inventory.free_gpus,
        whole_free_gpus: inventory.occupancy.whole_free,
        partly_free_gpus: inventory.occupancy.partly_free,
        fully_held_gpus: inventory.occupancy.fully_held,
        free_by_vendor: wire::free_by_vendor(inventory),
        pending_gpu_pods: inventory.pending_gpu_pods,
        resources: inventory.resources.iter().map(wire::resource).collect(),
        products: inventory.products.iter().map(wire::product).collect(),
        namespaces: inventory
            .namespaces
            .iter()
            .map(|n| wire::namespace(n, inventory.utilization.as_ref()))
            .collect(),
        utilization: inventory.utilization.as_ref().map(wire::utilization_status),
        topology: inventory
            .topology
            .iter()
            .map(wire::topology_summary)
            .collect(),
        fragmentation: wire::fragmentation(&inventory.fragmentation),
        quotas: inventory
            .quotas
            .iter()
            .flat_map(|q| q.quotas.iter().map(wire::quota_entry))
            .collect(),
        workload_issues,
        workload_issue_count,
        nodes,
        problem_nodes: inventory
            .problem_nodes()
            .take(PROBLEM_NODES_LIMIT)
            .map(wire::problem_node)
            .collect(),
        problem_node_count: inventory.problem_node_count(),
        omitted_nodes: None,
        nodes_message: None,
        conditions: wire::conditions(inventory, generation),
    };
    if let NodeList::Within(budget) | NodeList::WithinShown(budget, _) = list {
        note_omitted(&mut status, omitted, budget);
    }
    status
}
