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

use crate::crd::{GpuInventoryStatus, GpuNodeEntry};

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

/// Which of `entries` fit `budget` bytes of JSON (plus a separator each): see [`select_within`].
pub(crate) fn keep_within(entries: &[GpuNodeEntry], budget: usize) -> Vec<usize> {
    let sizes: Vec<usize> = entries.iter().map(|e| json_size(e) + 1).collect();
    select_within(&sizes, |i| !entries[i].issues.is_empty(), budget)
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

/// Cuts `nodes[]` to `budget` bytes (see [`keep_within`]); sets `omittedNodes` and `nodesMessage`.
/// Returns how many were left out.
pub(crate) fn fit_nodes(status: &mut GpuInventoryStatus, budget: usize) -> usize {
    let kept = keep_within(&status.nodes, budget);
    let omitted = status.nodes.len() - kept.len();
    if omitted > 0 {
        let mut keep = kept.into_iter().peekable();
        let mut index = 0usize;
        status.nodes.retain(|_| {
            let here = keep.peek() == Some(&index);
            if here {
                keep.next();
            }
            index += 1;
            here
        });
    }
    status.omitted_nodes = (omitted > 0).then(|| u32::try_from(omitted).unwrap_or(u32::MAX));
    status.nodes_message = (omitted > 0).then(|| {
        format!(
            "{omitted} of {} GPU nodes are not listed here (the status keeps {budget} bytes of node entries, \
             nodes with issues first; --status-nodes-budget): every GPU node has its own GpuNode, see \
             `kubectl get gpunodes`",
            status.total_gpu_nodes
        )
    });
    omitted
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::NodeIssue;

    fn status(n: usize) -> GpuInventoryStatus {
        GpuInventoryStatus {
            total_gpu_nodes: n as u32,
            nodes: (0..n)
                .map(|i| GpuNodeEntry {
                    name: format!("gpu-{i:04}"),
                    ready: true,
                    count: 8,
                    product: Some("NVIDIA-H100-80GB-HBM3".into()),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    fn issue(reason: &str) -> Vec<NodeIssue> {
        vec![NodeIssue {
            reason: reason.into(),
            message: format!("{reason} details"),
            severity: "Degraded".into(),
            since: None,
        }]
    }

    #[test]
    fn small_statuses_are_untouched() {
        let mut s = status(10);
        assert_eq!(fit_nodes(&mut s, STATUS_NODES_BUDGET_BYTES), 0);
        assert_eq!((s.nodes.len(), s.omitted_nodes), (10, None));
        assert_eq!(s.nodes_message, None);
    }

    #[test]
    fn large_statuses_keep_what_fits_and_say_where_the_rest_is() {
        let mut s = status(100);
        let omitted = fit_nodes(&mut s, 1000);
        assert!(omitted > 0 && !s.nodes.is_empty());
        assert_eq!(s.nodes.len() + omitted, 100);
        assert_eq!(s.omitted_nodes, Some(omitted as u32));
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
        let mut s = status(100);
        // Two problem nodes at the end of the name order: a cut by position would drop them.
        s.nodes[98].issues = issue("NotReady");
        s.nodes[99].issues = issue("Overcommitted");
        let per_entry = json_size(&s.nodes[0]) + 1;
        fit_nodes(&mut s, per_entry * 5);
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
    }
}
