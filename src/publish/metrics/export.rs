//! Setting an inventory's series from its model: the totals, each node's, the issues per reason, the
//! allocation (per node and resource, per resource, per product and job size, per namespace) and the
//! topology (`topology`).

use std::collections::BTreeMap;
use std::sync::Arc;

use prometheus_client::registry::{Registry, Unit};

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
    super::fragmentation::export_fragmentation(metrics, inventory, status);
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

/// Registers the families this module sets: the totals and each node's, then the allocation, then the
/// namespaces' and the products'.
pub(super) fn register(gauges: &InventoryGauges, registry: &mut Registry) {
    register_totals_and_nodes(gauges, registry);
    register_allocation(gauges, registry);
    register_namespaces_and_products(gauges, registry);
}

/// The inventory's totals, each node's info, GPUs and memory, and the issues per reason.
fn register_totals_and_nodes(gauges: &InventoryGauges, registry: &mut Registry) {
    registry.register(
        "gpu_nodes",
        "GPU nodes covered by the inventory",
        gauges.gpu_nodes.clone(),
    );
    registry.register(
        "ready_gpu_nodes",
        "GPU nodes whose Ready condition is True",
        gauges.ready_gpu_nodes.clone(),
    );
    registry.register(
        "gpus",
        "GPUs counted by the inventory (sum of nvidia.com/gpu.count)",
        gauges.gpus.clone(),
    );
    registry.register(
        "node_info",
        "A GPU node: product, workload config, readiness (always 1)",
        gauges.node_info.clone(),
    );
    registry.register(
        "node_gpus",
        "GPUs on the node (nvidia.com/gpu.count)",
        gauges.node_gpus.clone(),
    );
    registry.register_with_unit(
        "node_gpu_memory",
        "Memory of one GPU on the node (nvidia.com/gpu.memory)",
        Unit::Bytes,
        gauges.node_gpu_memory.clone(),
    );
    registry.register(
        "node_issues",
        "GPU nodes with an issue, by reason",
        gauges.node_issues.clone(),
    );
    registry.register(
        "free_gpus",
        "Whole GPUs free on Ready, schedulable nodes (status.freeGpus)",
        gauges.free_gpus.clone(),
    );
    registry.register(
        "pending_gpu_pods",
        "GPU pods the scheduler could not place (Pending, Unschedulable)",
        gauges.pending_gpu_pods.clone(),
    );
}

/// Each resource's allocation, per node and summed over the inventory.
fn register_allocation(gauges: &InventoryGauges, registry: &mut Registry) {
    registry.register(
        "node_allocated",
        "Of an extended resource on a node, what the pods bound there hold (scheduler's effective request)",
        gauges.node_allocated.clone(),
    );
    registry.register(
        "node_free",
        "Of an extended resource on a node, allocatable minus allocated (never below 0)",
        gauges.node_free.clone(),
    );
    registry.register(
        "resource_capacity",
        "An extended resource's capacity, or a DRA device type's devices (gpu.nvidia.com/gpu, \
         gpu.nvidia.com/mig-<profile>), summed over the inventory's GPU nodes",
        gauges.resource_capacity.clone(),
    );
    registry.register(
        "resource_allocatable",
        "An extended resource's allocatable, or a DRA device type's available devices (complete pool, \
         untainted), summed over the inventory's GPU nodes",
        gauges.resource_allocatable.clone(),
    );
    registry.register(
        "resource_allocated",
        "An extended resource held by pods, or a DRA device type's devices allocated to claims, summed over \
         the inventory's GPU nodes",
        gauges.resource_allocated.clone(),
    );
    registry.register(
        "resource_free",
        "An extended resource free, summed over the inventory's GPU nodes",
        gauges.resource_free.clone(),
    );
}

/// What the namespaces hold and wait for, and where a job of a product's GPUs can start.
fn register_namespaces_and_products(gauges: &InventoryGauges, registry: &mut Registry) {
    registry.register(
        "namespace_requested",
        "An extended resource held by a namespace's pods on the inventory's nodes",
        gauges.namespace_requested.clone(),
    );
    registry.register(
        "namespace_pending_gpu_pods",
        "A namespace's GPU pods the scheduler could not place",
        gauges.namespace_pending_pods.clone(),
    );
    registry.register(
            "namespace_gpu_equivalents",
            "Physical GPUs of a product a namespace's pods and claims hold, by their sharing schemes' rules \
             (status.namespaces[].gpuEquivalents; sum_over_time gives GPU-hours)",
            gauges.namespace_gpu_equivalents.clone(),
        );
    registry.register(
            "product_nodes_with_free_gpus",
            "Ready, schedulable nodes with at least at_least whole GPUs of the product free: where a job of that \
             many GPUs can start (status.products[].nodesWithFreeGpus)",
            gauges.product_nodes_with_free_gpus.clone(),
        );
}
