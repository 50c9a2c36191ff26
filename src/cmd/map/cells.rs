//! One GPU node as cells, one per physical GPU: what a pod asking for whole GPUs would find there. Each state
//! has a glyph of its own, so the picture reads without colour (a pipe, `NO_COLOR`, a printout); colour only
//! repeats what the glyph says.

use serde::Serialize;

use crate::inventory::allocation::gpu_resource_is_whole_gpus;
use crate::inventory::model::{IdleHolding, IssueReason, NodeInventory};
use crate::inventory::resources::GPU_RESOURCE;
use crate::inventory::topology::gang::untolerated_taint;

/// What one GPU is. The order is the order of a node's cells on screen: what is held, then what a plan
/// moves, then what is free, then what cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum Cell {
    /// Held whole: by one pod or claim, or by shares that leave no room.
    Held,
    /// Held whole by a holder whose GPUs sat idle through the utilization window.
    Idle,
    /// Held by a pod the plan moves away: free once it is deleted.
    Leaving,
    /// Held in part (time-slicing, MPS, MIG, a sharing layer's share) with room for more shares: no whole-GPU
    /// pod can have it.
    Shared,
    /// Free now, taken by a pod the plan moves here.
    Arriving,
    /// Free: nothing holds any of it. On a node whose resource is whole GPUs, a pod asking for GPUs can have
    /// it (what `fit` counts free); on a time-sliced one, its replicas.
    Free,
    /// Withdrawn or failing: the device plugin or DRA driver reports it unhealthy, or a GPU health check
    /// failed on the node.
    Unhealthy,
    /// On a node no new pod lands on: NotReady, cordoned, or tainted against GPU pods.
    Unusable,
}

impl Cell {
    /// Every state, in screen order.
    pub(crate) const ALL: [Cell; 8] = [
        Cell::Held,
        Cell::Idle,
        Cell::Leaving,
        Cell::Shared,
        Cell::Arriving,
        Cell::Free,
        Cell::Unhealthy,
        Cell::Unusable,
    ];

    /// The character that shows it: ASCII, one column wide, none alike.
    pub(crate) fn glyph(self) -> char {
        match self {
            Cell::Held => '#',
            Cell::Idle => 'i',
            Cell::Leaving => '-',
            Cell::Shared => '~',
            Cell::Arriving => '+',
            Cell::Free => '.',
            Cell::Unhealthy => '!',
            Cell::Unusable => 'x',
        }
    }

    /// Its name in `-o json` and in the title's counts.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Cell::Held => "held",
            Cell::Idle => "idle",
            Cell::Leaving => "leaving",
            Cell::Shared => "shared",
            Cell::Arriving => "arriving",
            Cell::Free => "free",
            Cell::Unhealthy => "unhealthy",
            Cell::Unusable => "unusable",
        }
    }

    /// What the legend says of it.
    pub(crate) fn meaning(self) -> &'static str {
        match self {
            Cell::Held => "held",
            Cell::Idle => "held, idle",
            Cell::Leaving => "left by a moved pod",
            Cell::Shared => "shared (held in part)",
            Cell::Arriving => "taken by a moved pod",
            Cell::Free => "free",
            Cell::Unhealthy => "unhealthy",
            Cell::Unusable => "node NotReady, cordoned or tainted",
        }
    }
}

/// Node issues that say every GPU of the node is suspect, not one device: a health check, a failed driver
/// upgrade or MIG reconfiguration.
const NODE_WIDE_FAULTS: [IssueReason; 3] = [
    IssueReason::GpuHealthCheckFailed,
    IssueReason::DriverUpgradeFailed,
    IssueReason::MigConfigFailed,
];

/// The node's cells in screen order, and why no new pod lands there (`NotReady`, `cordoned`, `tainted`).
/// `idle`: the node's idle holdings (empty where activity is not read).
pub(crate) fn node_cells(
    node: &NodeInventory,
    idle: &[IdleHolding],
) -> (Vec<Cell>, Option<&'static str>) {
    let occupancy = node.occupancy;
    let counted = occupancy
        .whole_free
        .saturating_add(occupancy.partly_free)
        .saturating_add(occupancy.fully_held);
    // An entry the allocation did not reach (a node read without pods) counts its GPUs all whole free.
    let total = if counted == 0 { node.count } else { counted };
    let held = occupancy.fully_held.min(total);
    let shared = occupancy.partly_free.min(total - held);
    let nothing_held = total - held - shared;
    let unhealthy = withdrawn(node).min(nothing_held);
    let free = nothing_held - unhealthy;
    let unusable = unusable(node);
    let mut cells = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
    let mut put = |cell: Cell, n: u64| cells.extend(std::iter::repeat_n(cell, n as usize));
    if unusable.is_some() {
        // The devices known to be bad stay `!`: they are why the node may be out, and stay bad after it is back.
        put(Cell::Unusable, total - unhealthy);
        put(Cell::Unhealthy, unhealthy);
    } else if NODE_WIDE_FAULTS.iter().any(|r| node.issue(*r).is_some()) {
        put(Cell::Unhealthy, total);
    } else {
        let idle = idle_gpus(idle).min(held);
        put(Cell::Held, held - idle);
        put(Cell::Idle, idle);
        put(Cell::Shared, shared);
        put(Cell::Free, free);
        put(Cell::Unhealthy, unhealthy);
    }
    cells.sort();
    (cells, unusable)
}

/// Why no new pod lands on the node, if none does: the gang rule's (`topology::gang::offer`) test, which
/// `fit` and the plan use, so that `.` is what they count free.
fn unusable(node: &NodeInventory) -> Option<&'static str> {
    if !node.ready {
        Some("NotReady")
    } else if node.unschedulable {
        Some("cordoned")
    } else if untolerated_taint(node, &[]).is_some() {
        Some("tainted")
    } else {
        None
    }
}

/// GPUs nothing holds that no pod can get either: whole-GPU DRA devices neither allocated nor free
/// (unhealthy, tainted, of an incomplete pool), the whole-GPU resources' capacity the device plugin withdrew
/// from allocatable, and the sharing layer's cards it flags unhealthy.
fn withdrawn(node: &NodeInventory) -> u64 {
    let cards = node.shared_gpus.iter().filter(|g| !g.healthy).count() as u64;
    if node.has_whole_gpu_devices() {
        let devices = node
            .devices
            .iter()
            .filter(|d| d.is_whole_gpu() && !d.is_allocated() && !d.free)
            .count() as u64;
        return devices.saturating_add(cards);
    }
    let whole = |resource: &String| {
        let capacity = node.capacity.get(resource).and_then(|a| a.whole());
        let allocatable = node.allocatable.get(resource).and_then(|a| a.whole());
        capacity
            .unwrap_or(0)
            .saturating_sub(allocatable.unwrap_or(0))
    };
    let gpu = GPU_RESOURCE.to_owned();
    let resources = node
        .device_resources
        .iter()
        .chain(gpu_resource_is_whole_gpus(node).then_some(&gpu));
    resources.map(whole).fold(cards, u64::saturating_add)
}

/// Whole GPUs among idle holdings, from their GPU-equivalents. A holding with none (a memory or core amount
/// beside the GPU) is no GPU of its own, and one of less than a GPU is a share, shown `~` whatever it does.
fn idle_gpus(idle: &[IdleHolding]) -> u64 {
    idle.iter()
        .filter_map(|h| h.equivalent_milli.filter(|m| *m >= 1000))
        .map(|m| m / 1000)
        .fold(0, u64::saturating_add)
}

/// Whether `free_whole_gpus` and the cells agree on what is free: the free cells of a usable node are the
/// GPUs a pod could get (checked by the tests on every fleet they draw).
#[cfg(test)]
pub(crate) fn free_agrees(node: &NodeInventory, cells: &[Cell]) -> bool {
    let free = cells.iter().filter(|c| **c == Cell::Free).count() as u64;
    let whole = crate::inventory::allocation::free_whole_gpus(node);
    unusable(node).is_some() || free == whole || !gpu_resource_is_whole_gpus(node)
}
