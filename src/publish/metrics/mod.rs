//! The metrics publisher: each inventory's gauges on `/metrics` (GPU nodes, GPUs, per-node info, issues).
//! Series of nodes and inventories that are gone are removed, so dashboards never show ghosts.

use std::collections::BTreeMap;
use std::sync::Arc;

mod families;

pub use families::*;

use crate::inventory::model::{Inventory, IssueReason, JobFit, NodeInventory, ProductTotals};
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
    if let Some(previous) = exported.remove(inventory) {
        remove_series(metrics, inventory, &previous);
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
    for node in &status.nodes {
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
    exported.insert(inventory.to_owned(), Arc::clone(status));
}

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

fn remove_series(metrics: &InventoryGauges, inventory: &str, status: &Inventory) {
    for node in &status.nodes {
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
    }
}

/// The allocation gauges: per node and resource, per resource, per namespace. Series of what is gone were
/// removed with the previous export.
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
    for node in &status.nodes {
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
    }
}

/// Every (product, job size) of the inventory.
fn job_fits(status: &Inventory) -> impl Iterator<Item = (&ProductTotals, &JobFit)> {
    status
        .products
        .iter()
        .flat_map(|p| p.nodes_with_free_gpus.iter().map(move |fit| (p, fit)))
}

fn job_fit_labels(inventory: &str, product: &ProductTotals, fit: &JobFit) -> JobFitLabels {
    JobFitLabels {
        inventory: inventory.to_owned(),
        product: product.name.clone(),
        vendor: product.vendor.unwrap_or_default().to_owned(),
        at_least: fit.at_least.to_string(),
    }
}

fn node_resource(inventory: &str, node: &str, resource: &str) -> NodeResourceLabels {
    NodeResourceLabels {
        inventory: inventory.to_owned(),
        node: node.to_owned(),
        resource: resource.to_owned(),
    }
}

fn info_labels(inventory: &str, node: &NodeInventory) -> NodeInfoLabels {
    NodeInfoLabels {
        inventory: inventory.to_owned(),
        node: node.name.clone(),
        vendor: crate::inventory::vendors::vendor_of(node)
            .unwrap_or_default()
            .to_owned(),
        product: node.product.clone().unwrap_or_default(),
        workload_config: node.workload_config.clone().unwrap_or_default(),
        ready: node.ready.to_string(),
    }
}

fn saturating_i64(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::model::{Issue, JobFit, NamespaceTotals, ProductTotals, ResourceTotals};

    fn status(nodes: &[(&str, bool, Option<u64>)]) -> Arc<Inventory> {
        Arc::new(Inventory {
            total_gpu_nodes: nodes.len() as u32,
            ready_gpu_nodes: nodes.iter().filter(|n| n.1).count() as u32,
            total_gpus: nodes.len() as u64,
            nodes: nodes
                .iter()
                .map(|(name, ready, mem)| NodeInventory {
                    name: (*name).into(),
                    ready: *ready,
                    count: 1,
                    memory_mib: *mem,
                    product: Some("NVIDIA-L4".into()),
                    issues: if *ready {
                        vec![]
                    } else {
                        vec![Issue::new(IssueReason::NotReady, "")]
                    },
                    ..Default::default()
                })
                .map(Arc::new)
                .collect(),
            ..Default::default()
        })
    }

    #[test]
    fn exports_follow_names_and_units() {
        let g = InventoryGauges::default();
        let m = Metrics::with_families(|r| g.register(r));
        export_inventory(
            &m,
            &g,
            "cluster",
            &status(&[("a", true, Some(1024)), ("b", false, None)]),
        );
        let text = m.encode();
        assert!(
            text.contains("gpu_inventory_gpu_nodes{inventory=\"cluster\"} 2"),
            "{text}"
        );
        assert!(text.contains("gpu_inventory_ready_gpu_nodes{inventory=\"cluster\"} 1"));
        assert!(text.contains(
            "gpu_inventory_node_gpu_memory_bytes{inventory=\"cluster\",node=\"a\"} 1073741824"
        ));
        assert!(
            text.contains("gpu_inventory_node_issues{inventory=\"cluster\",reason=\"NotReady\"} 1")
        );
        assert!(text.contains("gpu_inventory_node_info{inventory=\"cluster\",node=\"b\",vendor=\"nvidia\",product=\"NVIDIA-L4\",workload_config=\"\",ready=\"false\"} 1"), "{text}");
        assert!(text.ends_with("# EOF\n"));

        export_inventory(&m, &g, "cluster", &status(&[("a", true, Some(1024))]));
        let text = m.encode();
        assert!(
            !text.contains("node=\"b\""),
            "series of a gone node are removed:\n{text}"
        );
        retain_inventories(&m, &g, |_| false);
        assert!(!m.encode().contains("inventory=\"cluster\""));
    }

    #[test]
    fn allocation_series_follow_the_status_and_leave_no_ghosts() {
        let mut with_pods = Arc::unwrap_or_clone(status(&[("a", true, None)]));
        let node = Arc::make_mut(&mut with_pods.nodes[0]);
        node.allocated = [("nvidia.com/gpu".to_owned(), 3)].into();
        node.free = [("nvidia.com/gpu".to_owned(), 5)].into();
        with_pods.free_gpus = 5;
        with_pods.pending_gpu_pods = 2;
        with_pods.resources = vec![ResourceTotals {
            name: "nvidia.com/gpu".into(),
            capacity: 8,
            allocatable: 8,
            allocated: 3,
            free: 5,
        }];
        with_pods.products = vec![ProductTotals {
            name: "NVIDIA-L4".into(),
            vendor: Some("nvidia"),
            nodes: 1,
            gpus: 8,
            free_gpus: 5,
            nodes_with_free_gpus: vec![
                JobFit {
                    at_least: 4,
                    nodes: 1,
                },
                JobFit {
                    at_least: 8,
                    nodes: 0,
                },
            ],
        }];
        with_pods.namespaces = vec![NamespaceTotals {
            name: "ml".into(),
            allocated: [("nvidia.com/gpu".to_owned(), 3)].into(),
            pending_pods: 2,
            pending: [("nvidia.com/gpu".to_owned(), 32)].into(),
        }];
        let g = InventoryGauges::default();
        let m = Metrics::with_families(|r| g.register(r));
        export_inventory(&m, &g, "cluster", &Arc::new(with_pods));
        let text = m.encode();
        for line in [
            "gpu_inventory_free_gpus{inventory=\"cluster\"} 5",
            "gpu_inventory_pending_gpu_pods{inventory=\"cluster\"} 2",
            "gpu_inventory_node_allocated{inventory=\"cluster\",node=\"a\",resource=\"nvidia.com/gpu\"} 3",
            "gpu_inventory_node_free{inventory=\"cluster\",node=\"a\",resource=\"nvidia.com/gpu\"} 5",
            "gpu_inventory_resource_free{inventory=\"cluster\",resource=\"nvidia.com/gpu\"} 5",
            "gpu_inventory_namespace_requested{inventory=\"cluster\",namespace=\"ml\",resource=\"nvidia.com/gpu\"} 3",
            "gpu_inventory_namespace_pending_gpu_pods{inventory=\"cluster\",namespace=\"ml\"} 2",
            "gpu_inventory_product_nodes_with_free_gpus{inventory=\"cluster\",product=\"NVIDIA-L4\",vendor=\"nvidia\",at_least=\"4\"} 1",
            "gpu_inventory_product_nodes_with_free_gpus{inventory=\"cluster\",product=\"NVIDIA-L4\",vendor=\"nvidia\",at_least=\"8\"} 0",
        ] {
            assert!(text.contains(line), "{line} missing in:\n{text}");
        }
        export_inventory(&m, &g, "cluster", &status(&[("a", true, None)]));
        let text = m.encode();
        assert!(
            !text.contains("namespace=\"ml\""),
            "a namespace without pods leaves:\n{text}"
        );
        assert!(!text.contains("gpu_inventory_node_allocated{"), "{text}");
        assert!(
            !text.contains("gpu_inventory_product_nodes_with_free_gpus{"),
            "a product gone leaves no series:\n{text}"
        );
        assert!(
            text.contains("gpu_inventory_pending_gpu_pods{inventory=\"cluster\"} 0"),
            "{text}"
        );
    }
}
