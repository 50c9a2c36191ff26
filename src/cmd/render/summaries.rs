//! The summary tables: one row per vendor, per GPU model, per namespace and resource (`--group-by`).

use std::collections::BTreeMap;

use super::columns::{aligned, columns};
use crate::crd::GpuInventoryStatus;

/// One row per vendor: its GPU nodes, devices and free whole devices (never summed across vendors).
/// Only the rows unless `headers`.
pub(super) fn vendor_table(status: &GpuInventoryStatus, headers: bool) -> String {
    let mut per_vendor: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
    for n in &status.nodes {
        let row = per_vendor
            .entry(n.vendor.as_deref().unwrap_or("unknown"))
            .or_default();
        row.0 += 1;
        row.1 += n.count;
    }
    let free: BTreeMap<&str, &str> = status
        .free_by_vendor
        .as_deref()
        .unwrap_or_default()
        .split(',')
        .filter_map(|part| part.split_once('='))
        .collect();
    let rows: Vec<Vec<String>> = per_vendor
        .iter()
        .map(|(vendor, (nodes, gpus))| {
            vec![
                (*vendor).to_owned(),
                nodes.to_string(),
                gpus.to_string(),
                free.get(vendor).copied().unwrap_or("0").to_owned(),
            ]
        })
        .collect();
    if !headers {
        return aligned(&["VENDOR", "NODES", "GPUS", "FREE"], &rows, false);
    }
    let mut out = columns(&["VENDOR", "NODES", "GPUS", "FREE"], &rows);
    out += "GPUS: devices (AWS: Neuron devices, not cores; Google: TPU chips); FREE: whole devices free on Ready, \
            schedulable nodes\n";
    out
}

/// The products (and, under them, the resources); only the products' rows unless `headers`.
pub(super) fn product_table(status: &GpuInventoryStatus, headers: bool) -> String {
    let rows: Vec<Vec<String>> = status
        .products
        .iter()
        .map(|p| {
            vec![
                p.name.clone(),
                p.nodes.to_string(),
                p.gpus.to_string(),
                p.free_gpus.to_string(),
                p.partly_free_gpus.to_string(),
                p.fully_held_gpus.to_string(),
            ]
        })
        .collect();
    let header = [
        "PRODUCT",
        "NODES",
        "GPUS",
        "FREE",
        "PARTLY-FREE",
        "FULLY-HELD",
    ];
    if !headers {
        return aligned(&header, &rows, false);
    }
    let mut out = columns(&header, &rows);
    out += "FREE: whole GPUs free on Ready, schedulable nodes; PARTLY-FREE: GPUs held in part with room for \
            shares (HAMi memory, KAI fractions, replicas, MIG slices); FULLY-HELD: nothing left (shared and MIG \
            resources: see RESOURCE rows)\n";
    let resources: Vec<Vec<String>> = status
        .resources
        .iter()
        .map(|r| {
            vec![
                r.name.clone(),
                r.allocatable.to_string(),
                r.allocated.to_string(),
                r.free.to_string(),
            ]
        })
        .collect();
    if !resources.is_empty() {
        out += "\n";
        out += &columns(
            &["RESOURCE", "ALLOCATABLE", "ALLOCATED", "FREE"],
            &resources,
        );
    }
    out
}

/// One row per namespace and resource; without the header unless `headers`.
pub(super) fn namespace_table(status: &GpuInventoryStatus, headers: bool) -> String {
    let mut rows = Vec::new();
    for ns in &status.namespaces {
        let resources: std::collections::BTreeSet<&String> =
            ns.allocated.keys().chain(ns.pending.keys()).collect();
        for (i, resource) in resources.into_iter().enumerate() {
            let get = |m: &BTreeMap<String, u64>| m.get(resource).copied().unwrap_or(0).to_string();
            rows.push(vec![
                ns.name.clone(),
                resource.clone(),
                get(&ns.allocated),
                get(&ns.pending),
                if i == 0 {
                    ns.pending_pods.to_string()
                } else {
                    String::new()
                },
                // What the namespace holds in physical GPUs (docs/allocation.md, "GPU-equivalents"),
                // once per namespace.
                match (i, &ns.gpu_equivalents) {
                    (0, Some(held)) => held.clone(),
                    (0, None) => "-".to_owned(),
                    _ => String::new(),
                },
            ]);
        }
    }
    aligned(
        &[
            "NAMESPACE",
            "RESOURCE",
            "ALLOCATED",
            "PENDING",
            "PENDING-PODS",
            "GPU-EQUIV",
        ],
        &rows,
        headers,
    )
}
