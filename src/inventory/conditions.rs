//! The `Ready`, `Degraded` and `GpusAvailable` conditions of an inventory, computed from a scan (pure; times are stamped
//! by the guard).

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use crate::inventory::scanner::Inventory;

/// How many node names a condition message lists before it says "and N more".
pub const MAX_NAMED_NODES: usize = 10;

/// Condition type: GPU demand is met (no GPU pod waits unschedulable).
pub const GPUS_AVAILABLE: &str = "GpusAvailable";
/// `GpusAvailable` reason when GPU pods wait because no node can take them.
pub const DEMAND_EXCEEDS_SUPPLY: &str = "GpuDemandExceedsSupply";

/// `Ready`, `Degraded`, then `GpusAvailable`, with `lastTransitionTime` left at the epoch for the guard to
/// stamp.
pub fn inventory_conditions(inventory: &Inventory, generation: Option<i64>) -> Vec<Condition> {
    vec![
        ready_condition(inventory, generation),
        degraded_condition(inventory, generation),
        gpus_available_condition(inventory, generation),
    ]
}

/// False while GPU pods are Pending with the scheduler's `Unschedulable`; the message counts them per
/// namespace and names what they want.
fn gpus_available_condition(inventory: &Inventory, generation: Option<i64>) -> Condition {
    if inventory.pending_gpu_pods == 0 {
        let message = format!(
            "no GPU pod is waiting for a node; {} whole GPUs free",
            inventory.free_gpus
        );
        return condition(
            GPUS_AVAILABLE,
            true,
            "NoPendingGpuPods",
            message,
            generation,
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
    let message = format!(
        "{} waiting, unschedulable: {}; {} whole GPUs free",
        plural(inventory.pending_gpu_pods, "GPU pod"),
        capped_list(waiting.iter().map(String::as_str)),
        inventory.free_gpus
    );
    condition(
        GPUS_AVAILABLE,
        false,
        DEMAND_EXCEEDS_SUPPLY,
        message,
        generation,
    )
}

fn plural(n: u32, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

fn condition(
    type_: &str,
    status: bool,
    reason: &str,
    message: String,
    generation: Option<i64>,
) -> Condition {
    Condition {
        type_: type_.to_owned(),
        status: if status { "True" } else { "False" }.to_owned(),
        reason: reason.to_owned(),
        message,
        observed_generation: generation,
        last_transition_time: Time(Timestamp::UNIX_EPOCH),
    }
}

fn ready_condition(inventory: &Inventory, generation: Option<i64>) -> Condition {
    let (total, ready) = (inventory.total_gpu_nodes, inventory.ready_gpu_nodes);
    if total == 0 {
        return condition(
            "Ready",
            false,
            "NoGpuNodes",
            "no GPU nodes among the selected nodes".to_owned(),
            generation,
        );
    }
    if ready == total {
        let message = format!("all {total} GPU nodes are Ready");
        return condition("Ready", true, "AllGpuNodesReady", message, generation);
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
    condition("Ready", false, "GpuNodesNotReady", message, generation)
}

fn degraded_condition(inventory: &Inventory, generation: Option<i64>) -> Condition {
    let mut nodes_per_reason: BTreeMap<&str, usize> = BTreeMap::new();
    for node in &inventory.nodes {
        let mut seen: Vec<&str> = node.issues.iter().map(|i| i.reason.as_str()).collect();
        seen.sort_unstable();
        seen.dedup();
        for reason in seen {
            *nodes_per_reason.entry(reason).or_default() += 1;
        }
    }
    if nodes_per_reason.is_empty() {
        return condition(
            "Degraded",
            false,
            "NoIssues",
            "no GPU node has an issue".to_owned(),
            generation,
        );
    }
    let counts: Vec<String> = nodes_per_reason
        .iter()
        .map(|(reason, n)| format!("{reason}: {n} node{}", if *n == 1 { "" } else { "s" }))
        .collect();
    condition(
        "Degraded",
        true,
        "GpuNodeIssues",
        counts.join(", "),
        generation,
    )
}

/// `a, b, c` or `a, b, ... and 7 more` past [`MAX_NAMED_NODES`].
pub fn capped_list<'a>(names: impl Iterator<Item = &'a str>) -> String {
    let names: Vec<&str> = names.collect();
    let shown = names
        .iter()
        .take(MAX_NAMED_NODES)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    match names.len().saturating_sub(MAX_NAMED_NODES) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::GpuNodeEntry;
    use crate::inventory::test_support::{entry, inventory};

    fn node(name: &str, ready: bool, reasons: &[&str]) -> GpuNodeEntry {
        entry(name, ready, 0, reasons)
    }

    #[test]
    fn no_gpu_nodes() {
        let c = inventory_conditions(&inventory(vec![]), Some(3));
        assert_eq!(
            (c[0].status.as_str(), c[0].reason.as_str()),
            ("False", "NoGpuNodes")
        );
        assert_eq!(c[0].observed_generation, Some(3));
        assert_eq!(
            (c[1].status.as_str(), c[1].reason.as_str()),
            ("False", "NoIssues")
        );
    }

    #[test]
    fn not_ready_nodes_are_named_and_capped() {
        let nodes = (0..13)
            .map(|i| node(&format!("n{i:02}"), i == 0, &["NotReady"]))
            .collect();
        let c = inventory_conditions(&inventory(nodes), None);
        assert_eq!(
            (c[0].status.as_str(), c[0].reason.as_str()),
            ("False", "GpuNodesNotReady")
        );
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
            node("a", false, &["NotReady", "GpuLabelsMissing"]),
            node("b", false, &["NotReady"]),
            node("c", true, &["InvalidLabel", "InvalidLabel"]),
        ];
        let c = inventory_conditions(&inventory(nodes), None);
        assert_eq!(c[1].status, "True");
        assert_eq!(
            c[1].message,
            "GpuLabelsMissing: 1 node, InvalidLabel: 1 node, NotReady: 2 nodes"
        );
    }

    #[test]
    fn pending_gpu_pods_make_demand_exceed_supply() {
        let mut inv = inventory(vec![node("a", true, &[])]);
        let c = inventory_conditions(&inv, None);
        assert_eq!(
            (
                c[2].type_.as_str(),
                c[2].status.as_str(),
                c[2].reason.as_str()
            ),
            ("GpusAvailable", "True", "NoPendingGpuPods")
        );
        inv.pending_gpu_pods = 3;
        inv.namespaces = vec![
            crate::crd::NamespaceUsage {
                name: "team-a".into(),
                pending_pods: 2,
                pending: [("nvidia.com/gpu".to_owned(), 16)].into(),
                ..Default::default()
            },
            crate::crd::NamespaceUsage {
                name: "team-b".into(),
                allocated: [("nvidia.com/gpu".to_owned(), 1)].into(),
                ..Default::default()
            },
            crate::crd::NamespaceUsage {
                name: "team-c".into(),
                pending_pods: 1,
                pending: [("nvidia.com/mig-1g.10gb".to_owned(), 1)].into(),
                ..Default::default()
            },
        ];
        let c = inventory_conditions(&inv, None);
        assert_eq!(
            (c[2].status.as_str(), c[2].reason.as_str()),
            ("False", "GpuDemandExceedsSupply")
        );
        assert_eq!(
            c[2].message,
            "3 GPU pods waiting, unschedulable: team-a: 2 pods (16 nvidia.com/gpu), \
             team-c: 1 pod (1 nvidia.com/mig-1g.10gb); 0 whole GPUs free"
        );
    }

    #[test]
    fn all_ready() {
        let c = inventory_conditions(&inventory(vec![node("a", true, &[])]), None);
        assert_eq!(
            (c[0].status.as_str(), c[0].reason.as_str()),
            ("True", "AllGpuNodesReady")
        );
    }
}
