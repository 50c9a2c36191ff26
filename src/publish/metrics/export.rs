//! Setting an inventory's series from its model: the totals, each node's, the issues per reason, the
//! allocation (per node and resource, per resource, per product and job size, per namespace) and the
//! topology (`topology`).

use std::collections::BTreeMap;
use std::sync::Arc;

use super::families::{
    InventoryGauges, InventoryLabels, IssueLabels, NamespaceLabels, NamespaceProductLabels,
    NamespaceResourceLabels, NodeLabels, ResourceLabels,
};
use super::label_sets::{info_labels, job_fit_labels, job_fits, node_resource};
use super::node_diff::node_diff;
use super::quotas::export_quotas;
use super::removal::{remove_node_series, remove_series};
use super::topology::export_topology;
use super::utilization::export_idle;
use crate::inventory::model::{Inventory, IssueReason, NodeInventory};
use crate::runtime::metrics::Metrics;

/// Exports an inventory's status; a no-op when it equals the last export.
pub fn export_inventory(
    process: &Metrics,
    metrics: &InventoryGauges,
    inventory: &str,
    status: &Arc<Inventory>,
) {
    let _scrape = process.updating();
    let mut exported = metrics.exported.lock().unwrap_or_else(|e| e.into_inner());
    if exported
        .get(inventory)
        .is_some_and(|e| Arc::ptr_eq(e, status) || **e == **status)
    {
        return;
    }
    let previous = exported.remove(inventory);
    let nodes = node_diff(previous.as_ref().map(|p| p.nodes.as_slice()), &status.nodes);
    if let Some(previous) = &previous {
        remove_series(metrics, inventory, previous);
    }
    for node in &nodes.gone {
        remove_node_series(metrics, inventory, node);
    }
    for node in &nodes.come {
        export_node(metrics, inventory, node);
    }
    let labels = InventoryLabels {
        inventory: inventory.to_owned(),
    };
    metrics
        .gpu_nodes
        .get_or_create(&labels)
        .set(i64::from(status.total_gpu_nodes));
    metrics
        .ready_gpu_nodes
        .get_or_create(&labels)
        .set(i64::from(status.ready_gpu_nodes));
    metrics
        .gpus
        .get_or_create(&labels)
        .set(saturating_i64(status.total_gpus));
    let mut issues: BTreeMap<&str, i64> = BTreeMap::new();
    for node in status.nodes.iter().filter(|n| !n.issues.is_empty()) {
        // A node counts once per reason, however many issues of it it has (two health conditions).
        let mut reasons: Vec<&str> = node.issues.iter().map(|i| i.reason.as_str()).collect();
        reasons.sort_unstable();
        reasons.dedup();
        for reason in reasons {
            *issues.entry(reason).or_default() += 1;
        }
    }
    for reason in IssueReason::ALL {
        let labels = IssueLabels {
            inventory: inventory.to_owned(),
            reason: reason.as_str().to_owned(),
        };
        metrics
            .node_issues
            .get_or_create(&labels)
            .set(issues.get(reason.as_str()).copied().unwrap_or(0));
    }
    export_allocation(metrics, inventory, status);
    export_topology(metrics, inventory, status);
    export_quotas(metrics, inventory, status);
    export_idle(metrics, inventory, status);
    exported.insert(inventory.to_owned(), Arc::clone(status));
}

/// One node's series: its info, GPUs, memory, and allocated and free units per resource.
fn export_node(metrics: &InventoryGauges, inventory: &str, node: &NodeInventory) {
    metrics
        .node_info
        .get_or_create(&info_labels(inventory, node))
        .set(1);
    let node_labels = NodeLabels {
        inventory: inventory.to_owned(),
        node: node.name.clone(),
    };
    metrics
        .node_gpus
        .get_or_create(&node_labels)
        .set(saturating_i64(node.count));
    if let Some(mib) = node.memory_mib {
        metrics
            .node_gpu_memory
            .get_or_create(&node_labels)
            .set(saturating_i64(mib.saturating_mul(1024 * 1024)));
    }
    for (resource, n) in &node.allocated {
        let labels = node_resource(inventory, &node.name, resource);
        metrics
            .node_allocated
            .get_or_create(&labels)
            .set(saturating_i64(*n));
    }
    for (resource, n) in &node.free {
        let labels = node_resource(inventory, &node.name, resource);
        metrics
            .node_free
            .get_or_create(&labels)
            .set(saturating_i64(*n));
    }
}

/// The allocation gauges per resource, per product and job size, per namespace (each node's are
/// [`export_node`]'s). Series of what is gone were removed with the previous export.
fn export_allocation(metrics: &InventoryGauges, inventory: &str, status: &Inventory) {
    let labels = InventoryLabels {
        inventory: inventory.to_owned(),
    };
    metrics
        .free_gpus
        .get_or_create(&labels)
        .set(saturating_i64(status.free_gpus));
    metrics
        .pending_gpu_pods
        .get_or_create(&labels)
        .set(i64::from(status.pending_gpu_pods));
    for resource in &status.resources {
        let labels = ResourceLabels {
            inventory: inventory.to_owned(),
            resource: resource.name.clone(),
        };
        let set = |family: &prometheus_client::metrics::family::Family<
            ResourceLabels,
            prometheus_client::metrics::gauge::Gauge,
        >,
                   n: u64| {
            family.get_or_create(&labels).set(saturating_i64(n));
        };
        set(&metrics.resource_capacity, resource.capacity);
        set(&metrics.resource_allocatable, resource.allocatable);
        set(&metrics.resource_allocated, resource.allocated);
        set(&metrics.resource_free, resource.free);
    }
    for (product, fit) in job_fits(status) {
        metrics
            .product_nodes_with_free_gpus
            .get_or_create(&job_fit_labels(inventory, product, fit))
            .set(i64::from(fit.nodes));
    }
    for ns in &status.namespaces {
        for (resource, n) in &ns.allocated {
            let labels = NamespaceResourceLabels {
                inventory: inventory.to_owned(),
                namespace: ns.name.clone(),
                resource: resource.clone(),
            };
            metrics
                .namespace_requested
                .get_or_create(&labels)
                .set(saturating_i64(*n));
        }
        let labels = NamespaceLabels {
            inventory: inventory.to_owned(),
            namespace: ns.name.clone(),
        };
        metrics
            .namespace_pending_pods
            .get_or_create(&labels)
            .set(i64::from(ns.pending_pods));
        for (product, milli) in &ns.gpu_equivalents_by_product {
            metrics
                .namespace_gpu_equivalents
                .get_or_create(&NamespaceProductLabels {
                    inventory: inventory.to_owned(),
                    namespace: ns.name.clone(),
                    product: product.clone(),
                })
                .set(*milli as f64 / 1000.0);
        }
    }
}

fn saturating_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
