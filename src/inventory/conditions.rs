//! The `Ready`, `Degraded` and `GpusAvailable` conditions of an inventory, computed from the model (pure). The
//! publishers make `metav1.Condition`s of them (`publish::content::wire`) and the plan stamps their times.

use std::collections::BTreeMap;

use crate::inventory::model::{Inventory, Severity};
use crate::inventory::text::capped_list;

/// Condition type: GPU demand is met (no GPU pod waits unschedulable).
pub(crate) const GPUS_AVAILABLE: &str = "GpusAvailable";
/// `GpusAvailable` reason when GPU pods wait because no node can take them.
pub(crate) const DEMAND_EXCEEDS_SUPPLY: &str = "GpuDemandExceedsSupply";

/// One condition of an inventory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InventoryCondition {
    /// `Ready`, `Degraded` or `GpusAvailable`.
    pub type_: &'static str,
    /// True or False.
    pub status: bool,
    /// A `PascalCase` reason.
    pub reason: &'static str,
    /// What was seen, in words.
    pub message: String,
}

/// `Ready`, `Degraded`, then `GpusAvailable`.
pub fn inventory_conditions(inventory: &Inventory) -> [InventoryCondition; 3] {
    [
        ready_condition(inventory),
        degraded_condition(inventory),
        gpus_available_condition(inventory),
    ]
}

/// False while GPU pods are Pending with the scheduler's `Unschedulable`; the message counts them per
/// namespace and names what they want.
fn gpus_available_condition(inventory: &Inventory) -> InventoryCondition {
    let available = inventory.pending_gpu_pods == 0;
    let reason = if available {
        "NoPendingGpuPods"
    } else {
        DEMAND_EXCEEDS_SUPPLY
    };
    let message = gpus_available_message(inventory);
    condition(GPUS_AVAILABLE, available, reason, message)
}

/// The `GpusAvailable` message: the free GPUs, and who waits for what.
pub(crate) fn gpus_available_message(inventory: &Inventory) -> String {
    if inventory.pending_gpu_pods == 0 {
        return format!(
            "no GPU pod is waiting for a node; {} whole GPUs free",
            inventory.free_gpus
        );
    }
    let waiting: Vec<String> = inventory
        .namespaces
        .iter()
        .filter(|ns| ns.pending_pods > 0)
        .map(|ns| {
            let wants: Vec<String> = ns
                .pending
                .iter()
                .map(|(resource, n)| format!("{n} {resource}"))
                .collect();
            format!(
                "{}: {} ({})",
                ns.name,
                plural(ns.pending_pods, "pod"),
                wants.join(", ")
            )
        })
        .collect();
    format!(
        "{} waiting, unschedulable: {}; {} whole GPUs free",
        plural(inventory.pending_gpu_pods, "GPU pod"),
        capped_list(waiting.iter().map(String::as_str)),
        inventory.free_gpus
    )
}

fn plural(n: u32, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

fn condition(
    type_: &'static str,
    status: bool,
    reason: &'static str,
    message: String,
) -> InventoryCondition {
    InventoryCondition {
        type_,
        status,
        reason,
        message,
    }
}

fn ready_condition(inventory: &Inventory) -> InventoryCondition {
    let (total, ready) = (inventory.total_gpu_nodes, inventory.ready_gpu_nodes);
    if total == 0 {
        return condition(
            "Ready",
            false,
            "NoGpuNodes",
            "no GPU nodes among the selected nodes".to_owned(),
        );
    }
    if ready == total {
        let message = format!("all {total} GPU nodes are Ready");
        return condition("Ready", true, "AllGpuNodesReady", message);
    }
    let not_ready = inventory
        .nodes
        .iter()
        .filter(|n| !n.ready)
        .map(|n| n.name.as_str());
    let message = format!(
        "{ready} of {total} GPU nodes Ready; not ready: {}",
        capped_list(not_ready)
    );
    condition("Ready", false, "GpuNodesNotReady", message)
}

fn degraded_condition(inventory: &Inventory) -> InventoryCondition {
    let mut nodes_per_reason: BTreeMap<&str, usize> = BTreeMap::new();
    for node in &inventory.nodes {
        // Information (planned work) never degrades the inventory.
        let mut seen: Vec<&str> = node
            .issues
            .iter()
            .filter(|i| i.severity() == Severity::Degraded)
            .map(|i| i.reason.as_str())
            .collect();
        seen.sort_unstable();
        seen.dedup();
        for reason in seen {
            *nodes_per_reason.entry(reason).or_default() += 1;
        }
    }
    let degraded_domains: u32 = inventory
        .topology
        .iter()
        .map(|s| s.degraded_domains)
        .fold(0, u32::saturating_add);
    if nodes_per_reason.is_empty() && degraded_domains == 0 {
        let informed = inventory.problem_node_count();
        let message = if informed == 0 {
            "no GPU node has an issue".to_owned()
        } else {
            format!(
                "no GPU node has a degrading issue ({informed} report planned work only: driver upgrades, \
                 paused operands or maintenance)"
            )
        };
        return condition("Degraded", false, "NoIssues", message);
    }
    let mut counts: Vec<String> = nodes_per_reason
        .iter()
        .map(|(reason, n)| format!("{reason}: {n} node{}", if *n == 1 { "" } else { "s" }))
        .collect();
    if degraded_domains > 0 {
        counts.push(format!(
            "NvlinkDomainDegraded: {degraded_domains} domain{}",
            if degraded_domains == 1 { "" } else { "s" }
        ));
    }
    let reason = if nodes_per_reason.is_empty() {
        "NvlinkDomainDegraded"
    } else {
        "GpuNodeIssues"
    };
    condition("Degraded", true, reason, counts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::model::{IssueReason, NodeInventory};
    use crate::inventory::test_support::{entry, inventory};

    fn node(name: &str, ready: bool, reasons: &[IssueReason]) -> NodeInventory {
        entry(name, ready, 0, reasons)
    }

    #[test]
    fn no_gpu_nodes() {
        let c = inventory_conditions(&inventory(vec![]));
        assert_eq!((c[0].status, c[0].reason), (false, "NoGpuNodes"));
        assert_eq!((c[1].status, c[1].reason), (false, "NoIssues"));
    }

    #[test]
    fn not_ready_nodes_are_named_and_capped() {
        let nodes = (0..13)
            .map(|i| node(&format!("n{i:02}"), i == 0, &[IssueReason::NotReady]))
            .collect();
        let c = inventory_conditions(&inventory(nodes));
        assert_eq!((c[0].status, c[0].reason), (false, "GpuNodesNotReady"));
        assert!(
            c[0].message
                .starts_with("1 of 13 GPU nodes Ready; not ready: n01, n02"),
            "{}",
            c[0].message
        );
        assert!(c[0].message.ends_with("n10 and 2 more"), "{}", c[0].message);
    }

    #[test]
    fn degraded_counts_nodes_per_reason() {
        let nodes = vec![
            node(
                "a",
                false,
                &[IssueReason::NotReady, IssueReason::GpuLabelsMissing],
            ),
            node("b", false, &[IssueReason::NotReady]),
            node(
                "c",
                true,
                &[IssueReason::InvalidLabel, IssueReason::InvalidLabel],
            ),
        ];
        let c = inventory_conditions(&inventory(nodes));
        assert!(c[1].status);
        assert_eq!(
            c[1].message,
            "GpuLabelsMissing: 1 node, InvalidLabel: 1 node, NotReady: 2 nodes"
        );
    }

    #[test]
    fn information_never_degrades_the_inventory() {
        let planned = vec![
            node("a", true, &[IssueReason::DriverUpgradeInProgress]),
            node(
                "b",
                true,
                &[
                    IssueReason::OperandsPaused,
                    IssueReason::MaintenanceScheduled,
                ],
            ),
        ];
        let c = inventory_conditions(&inventory(planned));
        assert_eq!((c[1].status, c[1].reason), (false, "NoIssues"));
        let failed = vec![
            node("a", true, &[IssueReason::DriverUpgradeInProgress]),
            node("b", true, &[IssueReason::DriverUpgradeFailed]),
        ];
        let c = inventory_conditions(&inventory(failed));
        assert!(c[1].status);
        assert_eq!(c[1].message, "DriverUpgradeFailed: 1 node");
    }

    #[test]
    fn pending_gpu_pods_make_demand_exceed_supply() {
        let mut inv = inventory(vec![node("a", true, &[])]);
        let c = inventory_conditions(&inv);
        assert_eq!(
            (c[2].type_, c[2].status, c[2].reason),
            ("GpusAvailable", true, "NoPendingGpuPods")
        );
        inv.pending_gpu_pods = 3;
        inv.namespaces = vec![
            crate::inventory::model::NamespaceTotals {
                name: "team-a".into(),
                pending_pods: 2,
                pending: [("nvidia.com/gpu".to_owned(), 16)].into(),
                ..Default::default()
            },
            crate::inventory::model::NamespaceTotals {
                name: "team-b".into(),
                allocated: [("nvidia.com/gpu".to_owned(), 1)].into(),
                ..Default::default()
            },
            crate::inventory::model::NamespaceTotals {
                name: "team-c".into(),
                pending_pods: 1,
                pending: [("nvidia.com/mig-1g.10gb".to_owned(), 1)].into(),
                ..Default::default()
            },
        ];
        let c = inventory_conditions(&inv);
        assert_eq!(
            (c[2].status, c[2].reason),
            (false, "GpuDemandExceedsSupply")
        );
        assert_eq!(
            c[2].message,
            "3 GPU pods waiting, unschedulable: team-a: 2 pods (16 nvidia.com/gpu), \
             team-c: 1 pod (1 nvidia.com/mig-1g.10gb); 0 whole GPUs free"
        );
    }

    #[test]
    fn all_ready() {
        let c = inventory_conditions(&inventory(vec![node("a", true, &[])]));
        assert_eq!((c[0].status, c[0].reason), (true, "AllGpuNodesReady"));
    }
}
