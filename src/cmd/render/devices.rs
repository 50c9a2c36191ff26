//! `scan -o wide`'s DRA device list: one row per device of every node that publishes ResourceSlices.

use super::columns::columns;
use crate::crd::GpuInventoryStatus;

/// The devices section (empty when no node has DRA devices).
pub(super) fn device_table(status: &GpuInventoryStatus) -> String {
    let rows: Vec<Vec<String>> = status
        .nodes
        .iter()
        .flat_map(|node| {
            node.devices.iter().map(move |d| {
                let mut state = if d.free { "free" } else { "-" }.to_owned();
                if d.pool_incomplete {
                    state = "pool-incomplete".to_owned();
                }
                vec![
                    node.name.clone(),
                    format!("{}/{}", d.pool, d.name),
                    d.resource.clone(),
                    d.product.clone().unwrap_or_else(|| "-".to_owned()),
                    d.memory_mib
                        .map(|m| format!("{m}MiB"))
                        .unwrap_or_else(|| "-".to_owned()),
                    or_dash(&d.allocated_to),
                    state,
                    or_dash(&d.taints),
                ]
            })
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let header = [
        "NODE",
        "POOL/DEVICE",
        "RESOURCE",
        "PRODUCT",
        "MEMORY",
        "ALLOCATED-TO",
        "FREE",
        "TAINTS",
    ];
    format!("\ndevices (DRA):\n{}", columns(&header, &rows))
}

fn or_dash(list: &[String]) -> String {
    if list.is_empty() {
        "-".to_owned()
    } else {
        list.join(",")
    }
}
