//! `-n/--namespace` on the commands that read, as kubectl's: only that namespace's objects are listed (the
//! namespace rows, each node's holders and idle holdings, the Workloads that can never be admitted), while
//! every count of GPUs (allocated, free, per node and product) stays the cluster's: a node's free GPUs are
//! what every namespace left free. The exit code is the cluster's too.

use crate::crd::GpuInventoryStatus;

/// `status` with only `namespace`'s objects listed.
pub(crate) fn limit_to_namespace(status: &mut GpuInventoryStatus, namespace: &str) {
    let ours = |qualified: &str| {
        qualified
            .split_once('/')
            .is_some_and(|(ns, _)| ns == namespace)
    };
    status.namespaces.retain(|usage| usage.name == namespace);
    for node in &mut status.nodes {
        node.holders.retain(|holder| holder.namespace == namespace);
        node.idle.retain(|idle| {
            idle.pod
                .as_deref()
                .or(idle.claim.as_deref())
                .is_some_and(ours)
        });
    }
    let listed_all = status.workload_issues.len() as u64 == u64::from(status.workload_issue_count);
    status.workload_issues.retain(|issue| ours(&issue.workload));
    if listed_all {
        // Every issue was listed: the count of the namespace's is known; else the cluster's count stands.
        status.workload_issue_count =
            u32::try_from(status.workload_issues.len()).unwrap_or(u32::MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::{GpuNodeEntry, HolderEntry, NamespaceUsage, WorkloadIssueEntry};

    #[test]
    fn only_the_namespaces_objects_are_listed_and_the_gpus_stay_the_clusters() {
        let holder = |ns: &str| HolderEntry {
            namespace: ns.into(),
            name: "p".into(),
            ..Default::default()
        };
        let issue = |workload: &str| WorkloadIssueEntry {
            workload: workload.into(),
            ..Default::default()
        };
        let mut status = GpuInventoryStatus {
            namespaces: vec![
                NamespaceUsage {
                    name: "team-a".into(),
                    ..Default::default()
                },
                NamespaceUsage {
                    name: "team-b".into(),
                    ..Default::default()
                },
            ],
            nodes: vec![GpuNodeEntry {
                name: "gpu-1".into(),
                holders: vec![holder("team-a"), holder("team-b")],
                ..Default::default()
            }],
            workload_issues: vec![issue("team-a/train"), issue("team-b/infer")],
            workload_issue_count: 2,
            ..Default::default()
        };
        limit_to_namespace(&mut status, "team-a");
        assert_eq!(status.namespaces.len(), 1);
        assert_eq!(status.nodes.len(), 1, "nodes are the cluster's");
        assert_eq!(status.nodes[0].holders, [holder("team-a")]);
        assert_eq!(status.workload_issues, [issue("team-a/train")]);
        assert_eq!(status.workload_issue_count, 1);
    }
}
