//! Keeping a GpuInventory's status small. Every GPU node has its full entry in its own GpuNode object; the
//! aggregate's `nodes[]` is a convenience kept within a byte budget, because a status write costs the API
//! server time in proportion to its size (344 KiB took 448 ms at p50 and 2.6 s at p99 on the allocation
//! bench), and etcd refuses an object past 1.5 MiB. Totals, products, problem nodes and conditions always
//! cover every node.
//!
//! Past the budget, nodes with issues are kept first (they are what a reader looks for), then healthy ones,
//! each group by name; the kept entries stay sorted by name, `omittedNodes` counts the rest and
//! `nodesMessage` says where they are.

use std::io;
use std::sync::Arc;

use super::wire::{self, Detail};
use crate::crd::{GpuInventoryStatus, GpuNodeEntry};
use crate::inventory::model::{Inventory, NodeInventory};

/// Default room for `nodes[]` (`--status-nodes-budget`): 64 KiB, about 100-200 node entries.
#[cfg(test)]
pub(crate) const STATUS_NODES_BUDGET_BYTES: usize = 64 * 1024;

/// The most a budget may be: the object must stay under etcd's 1.5 MiB with room for metadata and the rest.
pub const MAX_STATUS_NODES_BUDGET_BYTES: usize = 1024 * 1024;

/// How many problem nodes `problemNodes[]` lists at most.
pub(crate) const PROBLEM_NODES_LIMIT: usize = 100;

/// Counts serialized bytes without keeping them.
struct ByteCounter(usize);

impl io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Bytes of `value` as JSON.
pub(crate) fn json_size(value: &impl serde::Serialize) -> usize {
    let mut counter = ByteCounter(0);
    serde_json::to_writer(&mut counter, value).expect("our types always serialize");
    counter.0
}

/// Which GPU nodes `nodes[]` lists within `budget` bytes of JSON (plus a separator each): the one cut of the
/// status, for the operator's status and for `scan --status-nodes-budget` alike, so the two always list the same
/// nodes. It is decided on each node's entry of counts (what the status holds), chosen as [`select_within`]
/// does; returns the kept nodes' indices, in name order. Each entry is built and sized one at a time and
/// dropped: at 20,000 nodes, holding every entry at once to keep the ~115 the default budget lists was 13 MB of
/// each status pass's heap (benches/RESULTS.md).
pub(crate) fn status_cut(nodes: &[Arc<NodeInventory>], budget: usize) -> Vec<usize> {
    let sizes: Vec<usize> = nodes
        .iter()
        .map(|node| json_size(&wire::node_entry(node, &[], Detail::Counts)) + 1)
        .collect();
    select_within(&sizes, |i| nodes[i].has_issues(), budget)
}

/// The entries of the nodes [`status_cut`] keeps, each in `detail`, and how many GPU nodes were left out.
pub(crate) fn node_entries_within(
    inventory: &Inventory,
    budget: usize,
    detail: Detail,
) -> (Vec<GpuNodeEntry>, usize) {
    let nodes = &inventory.nodes;
    let kept = status_cut(nodes, budget);
    let omitted = nodes.len() - kept.len();
    let entries = kept
        .into_iter()
        .map(|i| wire::node_entry(&nodes[i], inventory.idle_of(&nodes[i].name), detail))
        .collect();
    (entries, omitted)
}

/// Which items of these `sizes` fit `budget`: those with `has_issues` first, then the others, each group in
/// the given order, every one that still fits (all of them when all fit). Returns their indices, in order.
pub(crate) fn select_within(
    sizes: &[usize],
    has_issues: impl Fn(usize) -> bool,
    budget: usize,
) -> Vec<usize> {
    let mut used = 0usize;
    let (problems, healthy): (Vec<usize>, Vec<usize>) =
        (0..sizes.len()).partition(|&i| has_issues(i));
    let mut kept: Vec<usize> = problems
        .into_iter()
        .chain(healthy)
        .filter(|&i| {
            let fits = used + sizes[i] <= budget;
            if fits {
                used += sizes[i];
            }
            fits
        })
        .collect();
    kept.sort_unstable();
    kept
}

/// Sets `omittedNodes` and `nodesMessage` when `omitted` GPU nodes were left out of `nodes[]` by `budget`.
pub(crate) fn note_omitted(status: &mut GpuInventoryStatus, omitted: usize, budget: usize) {
    status.omitted_nodes = (omitted > 0).then(|| u32::try_from(omitted).unwrap_or(u32::MAX));
    status.nodes_message = (omitted > 0).then(|| {
        format!(
            "{omitted} of {} GPU nodes are not listed here (the status keeps {budget} bytes of node entries, \
             nodes with issues first; --status-nodes-budget): every GPU node has its own GpuNode, see \
             `kubectl get gpunodes`",
            status.total_gpu_nodes
        )
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inventory::model::{Inventory, IssueReason};
    use crate::inventory::test_support::entry;
    use crate::publish::content::status::{NodeList, desired_status};

    fn inventory(n: usize) -> Inventory {
        Inventory {
            total_gpu_nodes: n as u32,
            nodes: (0..n)
                .map(|i| {
                    let mut node = entry(&format!("gpu-{i:04}"), true, 8, &[]);
                    node.product = Some("NVIDIA-H100-80GB-HBM3".into());
                    Arc::new(node)
                })
                .collect(),
            ..Default::default()
        }
    }

    fn with_issue(inventory: &mut Inventory, i: usize, reason: IssueReason) {
        let name = inventory.nodes[i].name.clone();
        Arc::make_mut(&mut inventory.nodes[i]).issues = entry(&name, true, 8, &[reason]).issues;
    }

    fn within(inventory: &Inventory, budget: usize) -> GpuInventoryStatus {
        desired_status(inventory, None, NodeList::Within(budget))
    }

    #[test]
    fn small_statuses_are_untouched() {
        let inventory = inventory(10);
        let s = within(&inventory, STATUS_NODES_BUDGET_BYTES);
        assert_eq!((s.nodes.len(), s.omitted_nodes), (10, None));
        assert_eq!(s.nodes_message, None);
        assert_eq!(
            s.nodes[3],
            wire::node_entry(&inventory.nodes[3], &[], Detail::Counts)
        );
    }

    #[test]
    fn large_statuses_keep_what_fits_and_say_where_the_rest_is() {
        let s = within(&inventory(100), 1000);
        let omitted = s.omitted_nodes.expect("some are left out") as usize;
        assert!(omitted > 0 && !s.nodes.is_empty());
        assert_eq!(s.nodes.len() + omitted, 100);
        assert_eq!(s.total_gpu_nodes, 100, "totals still cover every node");
        assert!(serde_json::to_vec(&s.nodes).unwrap().len() <= 1000);
        let message = s.nodes_message.unwrap();
        assert!(message.contains("kubectl get gpunodes"), "{message}");
        assert!(
            message.starts_with(&format!("{omitted} of 100 ")),
            "{message}"
        );
    }

    #[test]
    fn nodes_with_issues_are_kept_first_and_the_list_stays_sorted() {
        let mut inventory = inventory(100);
        // Two problem nodes at the end of the name order: a cut by position would drop them.
        with_issue(&mut inventory, 98, IssueReason::NotReady);
        with_issue(&mut inventory, 99, IssueReason::Overcommitted);
        let per_entry = json_size(&wire::node_entry(&inventory.nodes[0], &[], Detail::Counts)) + 1;
        let s = within(&inventory, per_entry * 5);
        let names: Vec<&str> = s.nodes.iter().map(|n| n.name.as_str()).collect();
        assert!(
            names.contains(&"gpu-0098") && names.contains(&"gpu-0099"),
            "{names:?}"
        );
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted, "kept entries stay in name order");
        // Problem entries are larger (their issues' messages): two of them and at least one healthy one fit.
        assert!(
            (3..100).contains(&names.len()),
            "healthy nodes fill the rest of the budget: {names:?}"
        );
        assert_eq!(s.omitted_nodes, Some(100 - names.len() as u32));
    }
}
