//! Prometheus metrics (OpenMetrics text), prefix `gpu_inventory_`.
//!
//! They complement kube-state-metrics (node conditions) and DCGM exporter (GPU telemetry): what only this
//! operator knows is the GPU view of the nodes (products, counts, workload configs, issues) and its own work.

use std::collections::BTreeMap;
use std::sync::Mutex;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

use crate::crd::GpuInventoryStatus;

/// Labels: `inventory`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct InventoryLabels {
    /// The GpuInventory.
    pub inventory: String,
}

/// Labels: `inventory`, `node`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct NodeLabels {
    /// The GpuInventory.
    pub inventory: String,
    /// The node.
    pub node: String,
}

/// Labels of the per-node info metric.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct NodeInfoLabels {
    /// The GpuInventory.
    pub inventory: String,
    /// The node.
    pub node: String,
    /// `nvidia.com/gpu.product`, "" when unlabelled.
    pub product: String,
    /// `nvidia.com/gpu.workload.config`, "" when absent.
    pub workload_config: String,
    /// "true" or "false".
    pub ready: String,
}

/// Labels: `inventory`, `reason`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct IssueLabels {
    /// The GpuInventory.
    pub inventory: String,
    /// The issue reason.
    pub reason: String,
}

/// Labels: `controller` (`inventory` or `node-status`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerLabels {
    /// The controller.
    pub controller: String,
}

/// Labels: `controller`, `reason` (the error's short label).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ErrorLabels {
    /// The controller.
    pub controller: String,
    /// The error's short label.
    pub reason: String,
}

/// Labels: `target` (`status` or `configmap`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TargetLabels {
    /// What the guard protects.
    pub target: String,
}

/// Labels: `watch` (the watched resource).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WatchLabels {
    /// The watched resource.
    pub watch: String,
}

fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0005, 2.0, 14))
}

/// Every metric of the process.
pub struct Metrics {
    registry: Registry,
    gpu_nodes: Family<InventoryLabels, Gauge>,
    ready_gpu_nodes: Family<InventoryLabels, Gauge>,
    gpus: Family<InventoryLabels, Gauge>,
    node_info: Family<NodeInfoLabels, Gauge>,
    node_gpus: Family<NodeLabels, Gauge>,
    node_gpu_memory: Family<NodeLabels, Gauge>,
    node_issues: Family<IssueLabels, Gauge>,
    /// Reconciles per controller.
    pub reconciles: Family<ControllerLabels, Counter>,
    /// Failed reconciles per controller and reason.
    pub reconcile_errors: Family<ErrorLabels, Counter>,
    /// Reconcile duration per controller.
    pub reconcile_duration: Family<ControllerLabels, Histogram, fn() -> Histogram>,
    /// Writes the guard let through, per target.
    pub guard_writes: Family<TargetLabels, Counter>,
    /// Writes the guard skipped, per target.
    pub guard_skipped: Family<TargetLabels, Counter>,
    /// Watch failures (each followed by a restart after backoff), per watch.
    pub watch_restarts: Family<WatchLabels, Counter>,
    /// 1 while this process holds the leader lease (or runs without leader election).
    pub leader: Gauge,
    /// The last exported status per inventory, so unchanged statuses cost nothing and gone series vanish.
    exported: Mutex<BTreeMap<String, GpuInventoryStatus>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Creates and registers every metric.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("gpu_inventory");
        let m = Metrics {
            gpu_nodes: Family::default(),
            ready_gpu_nodes: Family::default(),
            gpus: Family::default(),
            node_info: Family::default(),
            node_gpus: Family::default(),
            node_gpu_memory: Family::default(),
            node_issues: Family::default(),
            reconciles: Family::default(),
            reconcile_errors: Family::default(),
            reconcile_duration: Family::new_with_constructor(duration_histogram),
            guard_writes: Family::default(),
            guard_skipped: Family::default(),
            watch_restarts: Family::default(),
            leader: Gauge::default(),
            exported: Mutex::default(),
            registry: Registry::default(),
        };
        let r = &mut registry;
        r.register(
            "gpu_nodes",
            "GPU nodes covered by the inventory",
            m.gpu_nodes.clone(),
        );
        r.register(
            "ready_gpu_nodes",
            "GPU nodes whose Ready condition is True",
            m.ready_gpu_nodes.clone(),
        );
        r.register(
            "gpus",
            "GPUs counted by the inventory (sum of nvidia.com/gpu.count)",
            m.gpus.clone(),
        );
        r.register(
            "node_info",
            "A GPU node: product, workload config, readiness (always 1)",
            m.node_info.clone(),
        );
        r.register(
            "node_gpus",
            "GPUs on the node (nvidia.com/gpu.count)",
            m.node_gpus.clone(),
        );
        r.register_with_unit(
            "node_gpu_memory",
            "Memory of one GPU on the node (nvidia.com/gpu.memory)",
            Unit::Bytes,
            m.node_gpu_memory.clone(),
        );
        r.register(
            "node_issues",
            "GPU nodes with an issue, by reason",
            m.node_issues.clone(),
        );
        r.register(
            "reconciles",
            "Reconciles per controller",
            m.reconciles.clone(),
        );
        r.register(
            "reconcile_errors",
            "Failed reconciles per controller and reason",
            m.reconcile_errors.clone(),
        );
        r.register_with_unit(
            "reconcile_duration",
            "Reconcile duration per controller",
            Unit::Seconds,
            m.reconcile_duration.clone(),
        );
        r.register(
            "guard_writes",
            "Writes the status-diff guard let through",
            m.guard_writes.clone(),
        );
        r.register(
            "guard_skipped_writes",
            "No-op writes the status-diff guard skipped",
            m.guard_skipped.clone(),
        );
        r.register(
            "watch_restarts",
            "Watch failures, each followed by a restart",
            m.watch_restarts.clone(),
        );
        r.register(
            "leader",
            "1 while this process runs the controllers",
            m.leader.clone(),
        );
        Metrics { registry, ..m }
    }

    /// The metrics in OpenMetrics text format.
    pub fn encode(&self) -> String {
        // Holding the lock keeps a scrape from seeing an inventory half updated.
        let _exported = self.exported.lock().unwrap_or_else(|e| e.into_inner());
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)
            .expect("writing to a String");
        text
    }

    /// Exports an inventory's status; a no-op when it equals the last export.
    pub fn export_inventory(&self, inventory: &str, status: &GpuInventoryStatus) {
        let mut exported = self.exported.lock().unwrap_or_else(|e| e.into_inner());
        if exported.get(inventory) == Some(status) {
            return;
        }
        if let Some(previous) = exported.remove(inventory) {
            self.remove_series(inventory, &previous);
        }
        let labels = InventoryLabels {
            inventory: inventory.to_owned(),
        };
        self.gpu_nodes
            .get_or_create(&labels)
            .set(i64::from(status.total_gpu_nodes));
        self.ready_gpu_nodes
            .get_or_create(&labels)
            .set(i64::from(status.ready_gpu_nodes));
        self.gpus
            .get_or_create(&labels)
            .set(saturating_i64(status.total_gpus));
        let mut issues: BTreeMap<&str, i64> = BTreeMap::new();
        for node in &status.nodes {
            self.node_info
                .get_or_create(&info_labels(inventory, node))
                .set(1);
            let node_labels = NodeLabels {
                inventory: inventory.to_owned(),
                node: node.name.clone(),
            };
            self.node_gpus
                .get_or_create(&node_labels)
                .set(saturating_i64(node.count));
            if let Some(mib) = node.memory_mib {
                self.node_gpu_memory
                    .get_or_create(&node_labels)
                    .set(saturating_i64(mib.saturating_mul(1024 * 1024)));
            }
            let mut reasons: Vec<&str> = node.issues.iter().map(|i| i.reason.as_str()).collect();
            reasons.dedup();
            for reason in reasons {
                *issues.entry(reason).or_default() += 1;
            }
        }
        for reason in crate::scanner::IssueReason::ALL {
            let labels = IssueLabels {
                inventory: inventory.to_owned(),
                reason: reason.as_str().to_owned(),
            };
            self.node_issues
                .get_or_create(&labels)
                .set(issues.get(reason.as_str()).copied().unwrap_or(0));
        }
        exported.insert(inventory.to_owned(), status.clone());
    }

    /// Drops the series of inventories that no longer exist.
    pub fn retain_inventories(&self, exists: impl Fn(&str) -> bool) {
        let mut exported = self.exported.lock().unwrap_or_else(|e| e.into_inner());
        let gone: Vec<String> = exported
            .keys()
            .filter(|name| !exists(name))
            .cloned()
            .collect();
        for name in gone {
            if let Some(status) = exported.remove(&name) {
                self.remove_series(&name, &status);
                let labels = InventoryLabels {
                    inventory: name.clone(),
                };
                self.gpu_nodes.remove(&labels);
                self.ready_gpu_nodes.remove(&labels);
                self.gpus.remove(&labels);
                for reason in crate::scanner::IssueReason::ALL {
                    self.node_issues.remove(&IssueLabels {
                        inventory: name.clone(),
                        reason: reason.as_str().to_owned(),
                    });
                }
            }
        }
    }

    fn remove_series(&self, inventory: &str, status: &GpuInventoryStatus) {
        for node in &status.nodes {
            self.node_info.remove(&info_labels(inventory, node));
            let labels = NodeLabels {
                inventory: inventory.to_owned(),
                node: node.name.clone(),
            };
            self.node_gpus.remove(&labels);
            self.node_gpu_memory.remove(&labels);
        }
    }
}

fn info_labels(inventory: &str, node: &crate::crd::GpuNodeEntry) -> NodeInfoLabels {
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
    use crate::crd::{GpuNodeEntry, NodeIssue};

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
        m.export_inventory(
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

        m.export_inventory("cluster", &status(&[("a", true, Some(1024))]));
        let text = m.encode();
        assert!(
            !text.contains("node=\"b\""),
            "series of a gone node are removed:\n{text}"
        );
        m.retain_inventories(|_| false);
        assert!(!m.encode().contains("inventory=\"cluster\""));
    }
}
