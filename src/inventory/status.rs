//! The status a GpuInventory should have, assembled from a scan (pure; the plan stamps the times).

use super::conditions::inventory_conditions;
use super::scanner::Inventory;
use crate::crd::{GpuInventoryStatus, GpuNodeEntry};

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
        omitted_nodes: None,
        conditions: inventory_conditions(inventory, generation),
    }
}
