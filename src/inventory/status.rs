//! The status a GpuInventory should have, assembled from a scan (pure; the plan stamps the times).

use super::conditions::inventory_conditions;
use super::scanner::Inventory;
use crate::crd::GpuInventoryStatus;

/// The desired status for `inventory`, computed for spec generation `generation`. Bookkeeping times are
/// left unset: [`super::plan::plan_status`] stamps them when the content changed.
pub fn desired_status(inventory: &Inventory, generation: Option<i64>) -> GpuInventoryStatus {
    GpuInventoryStatus {
        observed_time: None,
        observed_generation: generation,
        total_gpu_nodes: inventory.total_gpu_nodes,
        ready_gpu_nodes: inventory.ready_gpu_nodes,
        total_gpus: inventory.total_gpus,
        // The scan may be shared with other publishers, so the entries are copied, not taken.
        nodes: inventory.nodes.clone(),
        omitted_nodes: None,
        conditions: inventory_conditions(inventory, generation),
    }
}
