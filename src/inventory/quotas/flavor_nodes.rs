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

use std::collections::HashMap;
use std::sync::Arc;

use super::kueue::Flavor;
use crate::inventory::cluster_node::ClusterNode;
use crate::inventory::model::{NodeInventory, Severity};
use crate::inventory::text_map::{Text, TextMap};
use crate::inventory::topology::gang::{Toleration, untolerated_taint};

/// A GPU node as the quota rules read it: its entry and its labels.
#[derive(Clone, Copy, Debug)]
pub struct NodeView<'n> {
    /// The scan's entry.
    pub entry: &'n NodeInventory,
    /// The node's labels.
    pub labels: &'n TextMap,
    /// The cache's node the labels are of, when the scan has it: an unchanged node is the same `Arc`, so the
    /// flavors it belongs to need not be read again ([`MembershipMemo`]).
    pub node: Option<&'n Arc<ClusterNode>>,
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

/// Which nodes each flavor has, kept from one scan to the next (in the scan memory, `ScanMemory::quotas`). Membership
/// depends only on the nodes' labels and the flavors: when the scan's nodes are the very same `Arc`s in the
/// same order (no node changed, none came or went) and the flavors are too, the last scan's members hold, and
/// no node's labels are read. At 13,000 GPU nodes reading them was most of the rules' cost in a pass after a
/// few pod changes (`make scan-cost`). The memo holds the nodes' `Arc`s, so an address it compares cannot be
/// a new node's.
#[derive(Debug, Default)]
pub struct MembershipMemo(Option<Membership>);

#[derive(Debug)]
struct Membership {
    nodes: Vec<Arc<ClusterNode>>,
    flavors: Vec<Arc<Flavor>>,
    members: Vec<Vec<usize>>,
}

impl MembershipMemo {
    /// Each flavor's member nodes (indices into `nodes`, in the flavors' order), from the memo when it holds.
    fn members(&mut self, flavors: &[Arc<Flavor>], nodes: &[NodeView<'_>]) -> Vec<Vec<usize>> {
        let arcs: Option<Vec<&Arc<ClusterNode>>> = nodes.iter().map(|n| n.node).collect();
        let Some(arcs) = arcs else {
            return members_of(flavors, nodes);
        };
        if let Some(held) = self.0.as_ref()
            && held.flavors.len() == flavors.len()
            && held
                .flavors
                .iter()
                .zip(flavors)
                .all(|(a, b)| Arc::ptr_eq(a, b))
            && held.nodes.len() == arcs.len()
            && held.nodes.iter().zip(&arcs).all(|(a, b)| Arc::ptr_eq(a, b))
        {
            return held.members.clone();
        }
        let members = members_of(flavors, nodes);
        self.0 = Some(Membership {
            nodes: arcs.into_iter().cloned().collect(),
            flavors: flavors.to_vec(),
            members: members.clone(),
        });
        members
    }
}

/// Each flavor's member nodes, read from the labels.
///
/// A fleet's flavors mostly pin one or two label keys (a node pool, an accelerator, a block), so the nodes are
/// bucketed once per distinct first key by its value (found by the interned text's pointer, never compared),
/// and each flavor checks only its bucket.
fn members_of(flavors: &[Arc<Flavor>], nodes: &[NodeView<'_>]) -> Vec<Vec<usize>> {
    let address = |text: &Text| text.as_ptr() as usize;
    let mut buckets: HashMap<usize, HashMap<usize, Vec<usize>>> = HashMap::new();
    for flavor in flavors {
        let Some((key, _)) = flavor.node_labels.first_key_value() else {
            continue;
        };
        let key = Text::from(key.as_str());
        if buckets.contains_key(&address(&key)) {
            continue;
        }
        let mut by_value: HashMap<usize, Vec<usize>> = HashMap::new();
        for (at, node) in nodes.iter().enumerate() {
            if let Some(value) = node.labels.get_interned(&key) {
                by_value.entry(address(value)).or_default().push(at);
            }
        }
        buckets.insert(address(&key), by_value);
    }
    flavors
        .iter()
        .map(|flavor| {
            let candidates: Vec<usize> = match flavor.node_labels.first_key_value() {
                // No nodeLabels: every node is the flavor's.
                None => (0..nodes.len()).collect(),
                Some((key, value)) => {
                    let (key, value) = (Text::from(key.as_str()), Text::from(value.as_str()));
                    buckets
                        .get(&address(&key))
                        .and_then(|by_value| by_value.get(&address(&value)))
                        .cloned()
                        .unwrap_or_default()
                }
            };
            candidates
                .into_iter()
                .filter(|at| matches(flavor, nodes[*at].labels))
                .collect()
        })
        .collect()
}

/// Each flavor's nodes among `nodes`, each with its health for the flavor, by flavor name; the membership
/// from `memo` when given and still true.
pub fn nodes_of_flavors<'f, 'n>(
    flavors: &'f [Arc<Flavor>],
    nodes: &[NodeView<'n>],
    memo: Option<&mut MembershipMemo>,
) -> HashMap<&'f str, Vec<FlavorNode<'n>>> {
    let members = match memo {
        Some(memo) => memo.members(flavors, nodes),
        None => members_of(flavors, nodes),
    };
    flavors
        .iter()
        .zip(members)
        .map(|(flavor, members)| {
            let tolerations = flavor.pod_tolerations();
            let nodes = members
                .into_iter()
                .map(|at| FlavorNode {
                    node: nodes[at],
                    unhealthy: unhealthy(nodes[at].entry, &tolerations),
                })
                .collect();
            (flavor.name.as_str(), nodes)
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
    list: &crate::inventory::model::ResourceMap<crate::inventory::model::Amount>,
    resource: &str,
) -> u64 {
    list.get(resource).and_then(|a| a.whole()).unwrap_or(0)
}

/// Whether the node offers `resource` at all (advertises it in capacity or allocatable).
pub fn offers(entry: &NodeInventory, resource: &str) -> bool {
    entry.capacity.contains_key(resource) || entry.allocatable.contains_key(resource)
}
