//! `-n/--namespace` on the commands that read, as kubectl's: only that namespace's objects are listed (the
//! namespace rows, each node's holders and idle holdings, the Workloads that can never be admitted), while
//! every count of GPUs (allocated, free, per node and product) stays the cluster's: a node's free GPUs are
//! what every namespace left free. The exit code is the cluster's too.

use crate::crd::{GpuInventoryStatus, IdleEntry};

use super::utilization_args::UtilizationJson;

/// Whether `namespace/name` is of `namespace`.
fn of(qualified: &str, namespace: &str) -> bool {
    qualified
        .split_once('/')
        .is_some_and(|(ns, _)| ns == namespace)
}

/// Whether an idle holding is `namespace`'s (its pod's or claim's).
fn idle_of(idle: &IdleEntry, namespace: &str) -> bool {
    idle.pod
        .as_deref()
        .or(idle.claim.as_deref())
        .is_some_and(|q| of(q, namespace))
}

/// `status` with only `namespace`'s objects listed.
pub(crate) fn limit_to_namespace(status: &mut GpuInventoryStatus, namespace: &str) {
    let ours = |qualified: &str| of(qualified, namespace);
    status.namespaces.retain(|usage| usage.name == namespace);
    for node in &mut status.nodes {
        node.holders.retain(|holder| holder.namespace == namespace);
        node.idle.retain(|idle| idle_of(idle, namespace));
    }
    let listed_all = status.workload_issues.len() as u64 == u64::from(status.workload_issue_count);
    status.workload_issues.retain(|issue| ours(&issue.workload));
    if listed_all {
        // Every issue was listed: the count of the namespace's is known; else the cluster's count stands.
        status.workload_issue_count =
            u32::try_from(status.workload_issues.len()).unwrap_or(u32::MAX);
    }
}

/// `utilization`'s answer with only `namespace`'s idle units and holdings; a node left with none is not
/// listed (the command's exit code then says whether the namespace holds idle GPUs).
pub(crate) fn limit_utilization(json: &mut UtilizationJson, namespace: &str) {
    json.namespaces.retain(|idle| idle.name == namespace);
    for node in &mut json.nodes {
        node.idle.retain(|idle| idle_of(idle, namespace));
    }
    json.nodes.retain(|node| !node.idle.is_empty());
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

    #[test]
    fn utilization_lists_the_namespaces_idle_holdings_and_drops_nodes_left_without() {
        use crate::cmd::utilization_args::{NamespaceIdle, NodeIdle};
        let idle = |pod: Option<&str>, claim: Option<&str>| IdleEntry {
            pod: pod.map(str::to_owned),
            claim: claim.map(str::to_owned),
            resource: "nvidia.com/gpu".into(),
            amount: 1,
            ..Default::default()
        };
        let team = |name: &str| NamespaceIdle {
            name: name.into(),
            idle: [("nvidia.com/gpu".to_owned(), 1)].into(),
        };
        let mut json = UtilizationJson {
            utilization: Default::default(),
            namespaces: vec![team("team-a"), team("team-b")],
            nodes: vec![
                NodeIdle {
                    name: "gpu-1".into(),
                    idle: vec![idle(Some("team-a/p"), None), idle(Some("team-b/q"), None)],
                },
                NodeIdle {
                    name: "gpu-2".into(),
                    idle: vec![idle(None, Some("team-b/claim"))],
                },
                NodeIdle {
                    name: "gpu-3".into(),
                    idle: vec![idle(None, Some("team-a/claim"))],
                },
            ],
        };
        limit_utilization(&mut json, "team-a");
        assert_eq!(json.namespaces.len(), 1);
        assert_eq!(json.namespaces[0].name, "team-a");
        let listed: Vec<(&str, Vec<IdleEntry>)> = json
            .nodes
            .iter()
            .map(|n| (n.name.as_str(), n.idle.clone()))
            .collect();
        assert_eq!(
            listed,
            [
                ("gpu-1", vec![idle(Some("team-a/p"), None)]),
                ("gpu-3", vec![idle(None, Some("team-a/claim"))])
            ]
        );
    }
}
