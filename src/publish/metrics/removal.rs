//! Removing series: those of nodes, resources and namespaces an inventory no longer has (before each export)
//! and those of inventories that are gone, so dashboards never show ghosts.

use super::families::{
    InventoryGauges, InventoryLabels, IssueLabels, NamespaceLabels, NamespaceProductLabels,
    NamespaceResourceLabels, NodeLabels, ResourceLabels,
};
use super::label_sets::{info_labels, job_fit_labels, job_fits, node_resource};
use super::quotas::remove_quotas;
use super::topology::remove_topology;
use super::utilization::remove_idle;
use crate::inventory::model::{Inventory, IssueReason, NodeInventory};
use crate::runtime::metrics::Metrics;

/// Drops the series of inventories that no longer exist.
pub(crate) fn retain_inventories(
    process: &Metrics,
    metrics: &InventoryGauges,
    exists: impl Fn(&str) -> bool,
) {
    let _scrape = process.updating();
    let mut exported = metrics.exported.lock().unwrap_or_else(|e| e.into_inner());
    let gone: Vec<String> = exported
        .keys()
        .filter(|name| !exists(name))
        .cloned()
        .collect();
    for name in gone {
        if let Some(status) = exported.remove(&name) {
            remove_series(metrics, &name, &status);
            for node in &status.nodes {
                remove_node_series(metrics, &name, node);
            }
            let labels = InventoryLabels {
                inventory: name.clone(),
            };
            metrics.gpu_nodes.remove(&labels);
            metrics.ready_gpu_nodes.remove(&labels);
            metrics.gpus.remove(&labels);
            metrics.free_gpus.remove(&labels);
            metrics.pending_gpu_pods.remove(&labels);
            for reason in IssueReason::ALL {
                metrics.node_issues.remove(&IssueLabels {
                    inventory: name.clone(),
                    reason: reason.as_str().to_owned(),
                });
            }
        }
    }
}

/// Removes the series of `status` that are not any one node's (each node's are [`remove_node_series`]'s).
pub(super) fn remove_series(metrics: &InventoryGauges, inventory: &str, status: &Inventory) {
    remove_topology(metrics, inventory, status);
    super::fragmentation::remove_fragmentation(metrics, inventory, status);
    remove_quotas(metrics, inventory, status);
    remove_idle(metrics, inventory, status);
    for resource in &status.resources {
        let labels = ResourceLabels {
            inventory: inventory.to_owned(),
            resource: resource.name.clone(),
        };
        metrics.resource_capacity.remove(&labels);
        metrics.resource_allocatable.remove(&labels);
        metrics.resource_allocated.remove(&labels);
        metrics.resource_free.remove(&labels);
    }
    for (product, fit) in job_fits(status) {
        metrics
            .product_nodes_with_free_gpus
            .remove(&job_fit_labels(inventory, product, fit));
    }
    for ns in &status.namespaces {
        for resource in ns.allocated.keys() {
            metrics
                .namespace_requested
                .remove(&NamespaceResourceLabels {
                    inventory: inventory.to_owned(),
                    namespace: ns.name.clone(),
                    resource: resource.clone(),
                });
        }
        metrics.namespace_pending_pods.remove(&NamespaceLabels {
            inventory: inventory.to_owned(),
            namespace: ns.name.clone(),
        });
        for product in ns.gpu_equivalents_by_product.keys() {
            metrics
                .namespace_gpu_equivalents
                .remove(&NamespaceProductLabels {
                    inventory: inventory.to_owned(),
                    namespace: ns.name.clone(),
                    product: product.clone(),
                });
        }
    }
}

/// Removes one node's series.
pub(super) fn remove_node_series(metrics: &InventoryGauges, inventory: &str, node: &NodeInventory) {
    metrics.node_info.remove(&info_labels(inventory, node));
    let labels = NodeLabels {
        inventory: inventory.to_owned(),
        node: node.name.clone(),
    };
    metrics.node_gpus.remove(&labels);
    metrics.node_gpu_memory.remove(&labels);
    for resource in node.allocated.keys().chain(node.free.keys()) {
        let labels = node_resource(inventory, &node.name, resource);
        metrics.node_allocated.remove(&labels);
        metrics.node_free.remove(&labels);
    }
}
