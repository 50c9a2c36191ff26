//! A flavor's nodes, and which of them are healthy for it.
//!
//! The rule, beside Kueue's: Kueue sends an admitted workload's pods to the nodes carrying every one of its
//! flavor's `nodeLabels` (it adds them to the pods' node selector), with the flavor's `tolerations` added, and
//! admits to a flavor only workloads that tolerate its `nodeTaints`. So a flavor's nodes are the GPU nodes
//! carrying all of its `nodeLabels`; one of them holds healthy units for it when it is Ready, not cordoned,
//! has no `Degraded` issue of its own, and carries no `NoSchedule`/`NoExecute` taint that the flavor's
//! tolerations and node taints do not tolerate (a taint keyed by an extended resource the node offers is
//! tolerated, as Kubernetes' ExtendedResourceToleration admission does for pods asking for it).
//! A domain's problem (`NvlinkDomainDegraded`) is not its healthy members' issue, and does not count.

use super::kueue::Flavor;
use crate::inventory::model::{NodeInventory, Severity};
use crate::inventory::text_map::TextMap;
use crate::inventory::topology::gang::{Toleration, untolerated_taint};

/// A GPU node as the quota rules read it: its entry and its labels.
#[derive(Clone, Copy, Debug)]
pub struct NodeView<'n> {
    /// The scan's entry.
    pub entry: &'n NodeInventory,
    /// The node's labels.
    pub labels: &'n TextMap,
}

/// One of a flavor's nodes, and why it holds no healthy units for the flavor (`None`: it is healthy).
#[derive(Clone, Debug)]
pub struct FlavorNode<'n> {
    /// The node.
    pub node: NodeView<'n>,
    /// Why it is not healthy, in a few words.
    pub unhealthy: Option<String>,
}

/// Whether a node carries every one of the flavor's `nodeLabels`.
pub fn matches(flavor: &Flavor, labels: &TextMap) -> bool {
    flavor
        .node_labels
        .iter()
        .all(|(key, value)| labels.get(key) == Some(value.as_str()))
}

/// The flavor's nodes among `nodes`, each with its health for the flavor.
pub fn flavor_nodes<'n>(flavor: &Flavor, nodes: &[NodeView<'n>]) -> Vec<FlavorNode<'n>> {
    let tolerations = flavor.pod_tolerations();
    nodes
        .iter()
        .filter(|node| matches(flavor, node.labels))
        .map(|node| FlavorNode {
            node: *node,
            unhealthy: unhealthy(node.entry, &tolerations),
        })
        .collect()
}

/// Why the node holds no healthy units for pods tolerating `tolerations`, if it does not.
fn unhealthy(entry: &NodeInventory, tolerations: &[Toleration]) -> Option<String> {
    if !entry.ready {
        return Some("NotReady".to_owned());
    }
    if entry.unschedulable {
        return Some("cordoned".to_owned());
    }
    let degraded: Vec<&str> = entry
        .issues
        .iter()
        .filter(|i| i.severity() == Severity::Degraded)
        .map(|i| i.reason.as_str())
        .collect();
    if !degraded.is_empty() {
        return Some(degraded.join(", "));
    }
    untolerated_taint(entry, tolerations).map(|(key, value, effect)| {
        let taint = if value.is_empty() {
            format!("{key}:{effect}")
        } else {
            format!("{key}={value}:{effect}")
        };
        format!("taint {taint} the flavor does not tolerate")
    })
}

/// The whole units of `resource` in a resource list of the entry (0 when absent).
pub fn units(
    list: &std::collections::BTreeMap<String, crate::inventory::model::Amount>,
    resource: &str,
) -> u64 {
    list.get(resource).and_then(|a| a.whole()).unwrap_or(0)
}

/// Whether the node offers `resource` at all (advertises it in capacity or allocatable).
pub fn offers(entry: &NodeInventory, resource: &str) -> bool {
    entry.capacity.contains_key(resource) || entry.allocatable.contains_key(resource)
}
