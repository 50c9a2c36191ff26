//! What is wrong with NVLink: a partition whose members cannot all take part (`NvlinkDomainDegraded`, the
//! inventory's), and a node that lacks the clique label its product's other nodes carry
//! (`NvlinkCliqueMissing`, the node's own). A healthy member of a degraded partition gets no issue: a node
//! is unhealthy only for its own faults.

use std::collections::HashMap;
use std::sync::Arc;

use super::domains::DomainTally;
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

/// How many partitions among `domains` (the `nvlink` level's, pods of `k`) have members at fault, and the
/// problems of the first `listed` of them by domain name. Only those are worded: a fleet of racks cut off
/// from their power has hundreds, and the status lists a few.
pub fn domain_problems(
    domains: &[DomainTally<'_>],
    k: u64,
    listed: usize,
) -> (u32, Vec<DomainProblem>) {
    let mut degraded: Vec<&DomainTally<'_>> = domains
        .iter()
        .filter(|d| d.members.iter().any(|node| fault(node, k).is_some()))
        .collect();
    let count = u32::try_from(degraded.len()).unwrap_or(u32::MAX);
    if degraded.len() > listed {
        degraded.select_nth_unstable_by(listed, |a, b| a.name.cmp(b.name));
        degraded.truncate(listed);
    }
    degraded.sort_by(|a, b| a.name.cmp(b.name));
    (count, degraded.into_iter().map(|d| problem(d, k)).collect())
}

/// The problem of a partition with members at fault.
fn problem(domain: &DomainTally<'_>, k: u64) -> DomainProblem {
    {
        let name = &domain.name;
        let faults: Vec<(&str, String)> = domain
            .members
            .iter()
            .filter_map(|node| fault(node, k).map(|why| (node.name.as_str(), why)))
            .collect();
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
        DomainProblem {
            reason: DomainProblemReason::NvlinkDomainDegraded,
            domain: (*name).to_owned(),
            nodes: faults.iter().map(|(node, _)| (*node).to_owned()).collect(),
            message: format!(
                "{place}: {usable} of {members} nodes usable ({}); a {full_job}-GPU job cannot start here",
                capped_list(at_fault.iter().map(String::as_str))
            ),
        }
    }
}

/// Adds `NvlinkCliqueMissing` to every node of a product whose other nodes carry `nvidia.com/gpu.clique`
/// while it does not (`products`: `gang::product_groups` of `nodes`). Only those nodes' entries are copied;
/// the others keep their `Arc`. With `marks`, a node marked by the last scan from the very same entry gets
/// that scan's marked entry back (see [`CliqueMarks`]).
pub fn mark_clique_missing(
    nodes: &mut [Arc<NodeInventory>],
    products: &[(String, Vec<usize>)],
    mut marks: Option<&mut CliqueMarks>,
) {
    let mut missing: Vec<(usize, usize)> = Vec::new();
    for (_, at) in products {
        let with_clique = at
            .iter()
            .filter(|i| nodes[**i].topology.has_clique())
            .count();
        if with_clique == 0 {
            continue;
        }
        missing.extend(
            at.iter()
                .filter(|i| !nodes[**i].topology.has_clique())
                .map(|i| (*i, with_clique)),
        );
    }
    let mut kept = marks.as_deref_mut().map(CliqueMarks::take);
    // This scan's marks, recorded only when they are kept.
    let mut made = HashMap::with_capacity(if marks.is_some() { missing.len() } else { 0 });
    for (at, with_clique) in missing {
        let base = nodes[at].clone();
        let entry = match kept
            .as_mut()
            .and_then(|kept| kept.remove(&base.name))
            .filter(|m| m.with_clique == with_clique && Arc::ptr_eq(&m.base, &base))
        {
            Some(marked) => marked.entry,
            None => Arc::new(marked(&base, with_clique)),
        };
        nodes[at] = entry.clone();
        if marks.is_some() {
            let name = base.name.clone();
            made.insert(
                name,
                Marked {
                    base,
                    with_clique,
                    entry,
                },
            );
        }
    }
    if let Some(marks) = marks {
        marks.keep(made);
    }
}

/// `node` with `NvlinkCliqueMissing`: `with_clique` other nodes of its product carry the label.
fn marked(node: &NodeInventory, with_clique: usize) -> NodeInventory {
    let mut node = node.clone();
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
    node
}

/// The entries [`mark_clique_missing`] made in the last scan, kept for the next (in the scan memory,
/// `ScanMemory::clique_marks`). Without them every scan copied each unlabelled node's entry afresh: a new `Arc` per scan, held
/// apart by every publisher's inventory, and new to every memo keyed by identity after it (the idle join,
/// the GpuNode publisher's skip). A kept entry is handed out only for the very same base entry (by `Arc`,
/// which the record holds) and the same count of labelled nodes, the two things the mark is made from.
#[derive(Debug, Default)]
pub struct CliqueMarks {
    kept: HashMap<String, Marked>,
}

#[derive(Debug)]
struct Marked {
    base: Arc<NodeInventory>,
    with_clique: usize,
    entry: Arc<NodeInventory>,
}

impl CliqueMarks {
    fn take(&mut self) -> HashMap<String, Marked> {
        std::mem::take(&mut self.kept)
    }

    /// Keeps this scan's marks only: a node no longer marked is forgotten.
    fn keep(&mut self, made: HashMap<String, Marked>) {
        self.kept = made;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_degraded_partition_is_counted_and_only_the_first_listed_by_name_are_worded() {
        let down = NodeInventory {
            name: "n".into(),
            ready: false,
            count: 4,
            ..Default::default()
        };
        let up = NodeInventory {
            name: "m".into(),
            ready: true,
            count: 4,
            ..Default::default()
        };
        let names: Vec<String> = (0..10).rev().map(|i| format!("d{i:02}")).collect();
        let mut domains: Vec<DomainTally<'_>> = names
            .iter()
            .map(|name| DomainTally {
                name,
                nodes: 2,
                offered: 0,
                size: 8,
                members: vec![&down, &up],
            })
            .collect();
        domains.push(DomainTally {
            name: "healthy",
            nodes: 1,
            offered: 4,
            size: 4,
            members: vec![&up],
        });
        let (count, problems) = domain_problems(&domains, 4, 8);
        assert_eq!(count, 10);
        let listed: Vec<&str> = problems.iter().map(|p| p.domain.as_str()).collect();
        assert_eq!(
            listed,
            ["d00", "d01", "d02", "d03", "d04", "d05", "d06", "d07"]
        );
        assert_eq!(
            problems[0].message,
            "NVLink domain d00: 1 of 2 nodes usable (n NotReady); a 8-GPU job cannot start here"
        );
    }
}
