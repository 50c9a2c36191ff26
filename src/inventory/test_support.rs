//! Hand-made scan results for the core's unit tests (compiled for tests only).

use crate::crd::{GpuNodeEntry, NodeIssue};
use crate::inventory::scanner::Inventory;

/// A GPU node entry with `count` GPUs and one issue per reason (message `"<reason> details"`).
pub fn entry(name: &str, ready: bool, count: u64, reasons: &[&str]) -> GpuNodeEntry {
    GpuNodeEntry {
        name: name.into(),
        ready,
        count,
        issues: reasons
            .iter()
            .map(|r| NodeIssue {
                reason: (*r).into(),
                message: format!("{r} details"),
            })
            .collect(),
        ..Default::default()
    }
}

/// The inventory of `nodes`, totals computed as the scanner does.
pub fn inventory(nodes: Vec<GpuNodeEntry>) -> Inventory {
    Inventory {
        total_gpu_nodes: nodes.len() as u32,
        ready_gpu_nodes: nodes.iter().filter(|n| n.ready).count() as u32,
        total_gpus: nodes.iter().map(|n| n.count).sum(),
        nodes,
        ..Default::default()
    }
}
