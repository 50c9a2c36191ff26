//! The metrics publisher: each inventory's gauges on `/metrics` (GPU nodes, GPUs, per-node info, issues).
//! Series of nodes and inventories that are gone are removed, so dashboards never show ghosts.

use std::collections::BTreeMap;

use crate::crd::{GpuInventoryStatus, GpuNodeEntry};
use crate::inventory::scanner::IssueReason;
use crate::runtime::metrics::{InventoryLabels, IssueLabels, Metrics, NodeInfoLabels, NodeLabels};

/// Exports an inventory's status; a no-op when it equals the last export.
pub fn export_inventory(metrics: &Metrics, inventory: &str, status: &GpuInventoryStatus) {
    let mut exported = metrics.exported.lock().unwrap_or_else(|e| e.into_inner());
    if exported.get(inventory) == Some(status) {
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
        let mut reasons: Vec<&str> = node.issues.iter().map(|i| i.reason.as_str()).collect();
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
    exported.insert(inventory.to_owned(), status.clone());
}

/// Drops the series of inventories that no longer exist.
pub fn retain_inventories(metrics: &Metrics, exists: impl Fn(&str) -> bool) {
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
            for reason in IssueReason::ALL {
                metrics.node_issues.remove(&IssueLabels {
                    inventory: name.clone(),
                    reason: reason.as_str().to_owned(),
                });
            }
        }
    }
}

fn remove_series(metrics: &Metrics, inventory: &str, status: &GpuInventoryStatus) {
    for node in &status.nodes {
        metrics.node_info.remove(&info_labels(inventory, node));
        let labels = NodeLabels {
            inventory: inventory.to_owned(),
            node: node.name.clone(),
        };
        metrics.node_gpus.remove(&labels);
        metrics.node_gpu_memory.remove(&labels);
    }
}

fn info_labels(inventory: &str, node: &GpuNodeEntry) -> NodeInfoLabels {
    NodeInfoLabels {
        inventory: inventory.to_owned(),
        node: node.name.clone(),
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
    use crate::crd::NodeIssue;

    fn status(nodes: &[(&str, bool, Option<u64>)]) -> GpuInventoryStatus {
        GpuInventoryStatus {
            total_gpu_nodes: nodes.len() as u32,
            ready_gpu_nodes: nodes.iter().filter(|n| n.1).count() as u32,
            total_gpus: nodes.len() as u64,
            nodes: nodes
                .iter()
                .map(|(name, ready, mem)| GpuNodeEntry {
                    name: (*name).into(),
                    ready: *ready,
                    count: 1,
                    memory_mib: *mem,
                    product: Some("NVIDIA-L4".into()),
                    issues: if *ready {
                        vec![]
                    } else {
                        vec![NodeIssue {
                            reason: "NotReady".into(),
                            message: String::new(),
                        }]
                    },
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn exports_follow_names_and_units() {
        let m = Metrics::new();
        export_inventory(
            &m,
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
        assert!(text.contains("gpu_inventory_node_info{inventory=\"cluster\",node=\"b\",product=\"NVIDIA-L4\",workload_config=\"\",ready=\"false\"} 1"), "{text}");
        assert!(text.ends_with("# EOF\n"));

        export_inventory(&m, "cluster", &status(&[("a", true, Some(1024))]));
        let text = m.encode();
        assert!(
            !text.contains("node=\"b\""),
            "series of a gone node are removed:\n{text}"
        );
        retain_inventories(&m, |_| false);
        assert!(!m.encode().contains("inventory=\"cluster\""));
    }
}
