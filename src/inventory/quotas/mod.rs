//! Kueue's quotas and pending workloads checked against the GPUs (pure; docs/quotas.md).
//!
//! Kueue admits jobs against quotas (`ClusterQueue` `nominalQuota` per `ResourceFlavor` and resource) and
//! does not check them against the devices that exist (kubernetes-sigs/kueue#2665, #1538). This module joins
//! its objects ([`kueue`]) with the scan's GPU nodes: per flavor and accelerator resource, the promise against
//! the healthy units of the flavor's nodes (`capacity`), and the pending workloads that can never be admitted
//! as they are (`workloads`).

mod capacity;
pub mod flavor_nodes;
pub mod kueue;
mod workload_memo;
mod workloads;

#[cfg(test)]
mod tests;

use std::collections::HashMap;

pub use flavor_nodes::{MembershipMemo, NodeView};
pub use kueue::KueueInput;
pub use workload_memo::WorkloadMemo;

/// What the quota rules keep from one scan to the next (in the scan memory, `ScanMemory::quotas`): the flavors'
/// members, and the pending workloads' verdicts.
#[derive(Debug, Default)]
pub struct QuotaMemo {
    /// Which nodes each flavor has.
    pub members: MembershipMemo,
    /// Which pending workloads cannot fit.
    pub workloads: WorkloadMemo,
}

use std::collections::BTreeMap;

use crate::inventory::model::QuotaReport;
use crate::inventory::selector::LabelSelector;

/// Which of the cluster's nodes a scan holds, as far as a flavor's nodes are concerned.
#[derive(Clone, Debug, Default)]
pub enum QuotaScope<'a> {
    /// Every node.
    #[default]
    Cluster,
    /// The nodes every one of these selectors picks (the inventory's `spec.nodeSelector`, the operator's
    /// `--node-label-selector`).
    Selected(Vec<&'a LabelSelector>),
    /// Some nodes; which is not known.
    Partial,
}

impl QuotaScope<'_> {
    /// Whether every node of a flavor pinning these labels is in the scope: the scan then sees all of the
    /// flavor's nodes, and can say that none matches or that a workload fits on none of them.
    pub fn holds_all_of(&self, node_labels: Option<&BTreeMap<String, String>>) -> bool {
        match (self, node_labels) {
            (QuotaScope::Cluster, _) => true,
            (QuotaScope::Selected(selectors), Some(labels)) => {
                selectors.iter().all(|s| s.implied_by(labels))
            }
            _ => false,
        }
    }
}

/// The quota report of `nodes` (the scan's GPU nodes with their labels) against Kueue's objects; `memo`
/// keeps the flavors' members and the workloads' verdicts from one scan to the next (a [`QuotaMemo`]). A flavor
/// wholly inside `scope` (every node carrying its `nodeLabels` is in it) is judged in full; of any other only
/// the nodes in scope are counted, and only when there are some (`capacity::quota_entries`), and workloads
/// are judged only where some flavor of their queue is whole (`workloads`).
pub fn assess(
    nodes: &[NodeView<'_>],
    kueue: &KueueInput<'_>,
    scope: &QuotaScope<'_>,
    mut memo: Option<&mut QuotaMemo>,
) -> QuotaReport {
    let nodes_of: HashMap<&str, Vec<flavor_nodes::FlavorNode<'_>>> = flavor_nodes::nodes_of_flavors(
        kueue.flavors,
        nodes,
        memo.as_deref_mut().map(|m| &mut m.members),
    );
    let labels_of: HashMap<&str, &BTreeMap<String, String>> = kueue
        .flavors
        .iter()
        .map(|f| (f.name.as_str(), &f.node_labels))
        .collect();
    let whole = |flavor: &str| scope.holds_all_of(labels_of.get(flavor).copied());
    let quotas = capacity::quota_entries(kueue, &nodes_of, &whole);
    let judge = || workloads::workload_issues(kueue, &nodes_of, &whole);
    let workload_issues = match memo {
        Some(memo) => memo.workloads.verdicts(kueue, &nodes_of, &whole, judge),
        None => judge(),
    };
    QuotaReport {
        quotas,
        workload_issues,
    }
}
