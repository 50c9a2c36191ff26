//! What is wrong with NVLink: a partition whose members cannot all take part (`NvlinkDomainDegraded`, the
//! inventory's), and a node that lacks the clique label its product's other nodes carry
//! (`NvlinkCliqueMissing`, the node's own). A healthy member of a degraded partition gets no issue: a node
//! is unhealthy only for its own faults.

use std::collections::HashMap;
use std::sync::Arc;

use super::domains::DomainTally;
use super::gang;
use crate::inventory::model::{
    DomainProblem, DomainProblemReason, GPU_CLIQUE, Issue, IssueReason, NodeInventory, Severity,
    physical_domain,
};
use crate::inventory::text::capped_list;

/// Why a member of a partition cannot take part in a job spanning it, if it cannot.
fn fault(node: &NodeInventory, k: u64) -> Option<String> {
    if !node.ready {
        return Some("NotReady".to_owned());
    }
    if node.unschedulable {
        return Some("cordoned".to_owned());
    }
    if let Some(issue) = node.issues.iter().find(|i| {
        i.severity() == Severity::Degraded && i.reason != IssueReason::NvlinkCliqueMissing
    }) {
        return Some(issue.reason.as_str().to_owned());
    }
    (node.count < k).then(|| format!("short of GPUs ({} of {k})", node.count))
}

/// The problems of the partitions among `domains` (the `nvlink` level's, pods of `k`), by domain name.
pub fn domain_problems(domains: &[DomainTally<'_>], k: u64) -> Vec<DomainProblem> {
    let mut problems = Vec::new();
    for domain in domains {
        let name = &domain.name;
        let faults: Vec<(&str, String)> = domain
            .members
            .iter()
            .filter_map(|node| fault(node, k).map(|why| (node.name.as_str(), why)))
            .collect();
        if faults.is_empty() {
            continue;
        }
        let members = domain.members.len();
        let usable = members - faults.len();
        let label = domain
            .members
            .first()
            .and_then(|n| n.topology.nvlink.as_ref())
            .map_or("", |(label, _)| *label);
        let rack = physical_domain(label, name);
        let place = if rack == *name {
            format!("NVLink domain {name}")
        } else {
            format!("NVLink partition {name} (rack {rack})")
        };
        let at_fault: Vec<String> = faults
            .iter()
            .map(|(node, why)| format!("{node} {why}"))
            .collect();
        let full_job = domain.size;
        problems.push(DomainProblem {
            reason: DomainProblemReason::NvlinkDomainDegraded,
            domain: (*name).to_owned(),
            nodes: faults.iter().map(|(node, _)| (*node).to_owned()).collect(),
            message: format!(
                "{place}: {usable} of {members} nodes usable ({}); a {full_job}-GPU job cannot start here",
                capped_list(at_fault.iter().map(String::as_str))
            ),
        });
    }
    problems.sort_by(|a, b| a.domain.cmp(&b.domain));
    problems
}

/// Adds `NvlinkCliqueMissing` to every node of a product whose other nodes carry `nvidia.com/gpu.clique`
/// while it does not. Only those nodes' entries are copied; the others keep their `Arc`.
pub fn mark_clique_missing(nodes: &mut [Arc<NodeInventory>]) {
    // Most fleets carry no clique at all: then there is nothing to group.
    if !nodes.iter().any(|n| n.topology.has_clique()) {
        return;
    }
    // By address: the grouping borrows the entries, and the marking needs them mutably.
    let mut missing: HashMap<*const NodeInventory, usize> = HashMap::new();
    for product in &gang::by_product(nodes) {
        let with_clique = product
            .nodes
            .iter()
            .filter(|n| n.topology.has_clique())
            .count();
        if with_clique == 0 {
            continue;
        }
        for node in product.nodes.iter().filter(|n| !n.topology.has_clique()) {
            missing.insert(std::ptr::from_ref(*node), with_clique);
        }
    }
    if missing.is_empty() {
        return;
    }
    let missing: Vec<(usize, usize)> = nodes
        .iter()
        .enumerate()
        .filter_map(|(at, node)| missing.get(&Arc::as_ptr(node)).map(|n| (at, *n)))
        .collect();
    for (at, with_clique) in missing {
        let node = Arc::make_mut(&mut nodes[at]);
        let product = node.product.clone().unwrap_or_default();
        node.issues.push(Issue::new(
            IssueReason::NvlinkCliqueMissing,
            format!(
                "the node has no {GPU_CLIQUE} label while {with_clique} other {product} node(s) carry one: \
                 Fabric Manager or the IMEX daemon has not finished here, so the node cannot join multi-node \
                 NVLink jobs (check nvidia-fabricmanager and nvidia-imex on the node, then GPU Feature \
                 Discovery's labels)"
            ),
        ));
    }
}
