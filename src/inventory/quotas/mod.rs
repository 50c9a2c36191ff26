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
mod workloads;

#[cfg(test)]
mod tests;

use std::collections::HashMap;

pub use flavor_nodes::NodeView;
pub use kueue::KueueInput;

use crate::inventory::model::QuotaReport;

/// The quota report of `nodes` (the scan's GPU nodes with their labels) against Kueue's objects.
/// `all_nodes`: the nodes are the whole cluster's (see `capacity::quota_entries`); workloads are judged only
/// then, since a subset cannot say that a workload fits nowhere.
pub fn assess(nodes: &[NodeView<'_>], kueue: &KueueInput<'_>, all_nodes: bool) -> QuotaReport {
    let nodes_of: HashMap<&str, Vec<flavor_nodes::FlavorNode<'_>>> = kueue
        .flavors
        .iter()
        .map(|flavor| {
            (
                flavor.name.as_str(),
                flavor_nodes::flavor_nodes(flavor, nodes),
            )
        })
        .collect();
    let quotas = capacity::quota_entries(kueue, &nodes_of, all_nodes);
    let workload_issues = if all_nodes {
        workloads::workload_issues(kueue, &nodes_of)
    } else {
        Vec::new()
    };
    QuotaReport {
        quotas,
        workload_issues,
    }
}
