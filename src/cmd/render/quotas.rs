//! `quotas`' tables: one row per Kueue flavor and resource (the quota against the healthy units of the
//! flavor's nodes), then the pending workloads that can never be admitted, then every issue's message.

use super::columns::{aligned, columns};
use crate::crd::GpuInventoryStatus;
use crate::runtime::terminal_text::visible;

/// The quota table, the workloads that cannot fit and the issues' messages; `None` when the status holds no
/// quota (Kueue not installed, or no ResourceFlavor and ClusterQueue). Unless `headers`, only the quota
/// table's rows (`--no-headers`).
pub(crate) fn quotas(status: &GpuInventoryStatus, headers: bool) -> Option<String> {
    if status.quotas.is_empty() && status.workload_issues.is_empty() {
        return None;
    }
    let rows = quota_rows(status);
    let header = [
        "FLAVOR", "RESOURCE", "QUOTA", "BORROW", "HEALTHY", "GPUS", "FREE", "NODES", "QUEUES",
        "ISSUES",
    ];
    if !headers {
        return Some(aligned(&header, &rows, false));
    }
    let mut out = columns(&header, &rows);
    if !status.workload_issues.is_empty() {
        let rows: Vec<Vec<String>> = status
            .workload_issues
            .iter()
            .map(|w| {
                vec![
                    w.workload.clone(),
                    w.cluster_queue.clone(),
                    w.reason.clone(),
                ]
            })
            .collect();
        out += "\n";
        out += &columns(&["WORKLOAD", "CLUSTERQUEUE", "ISSUE"], &rows);
        let listed = status.workload_issues.len();
        let all = usize::try_from(status.workload_issue_count).unwrap_or(usize::MAX);
        if all > listed {
            out += &format!(
                "... and {} more pending workloads that cannot fit\n",
                all - listed
            );
        }
    }
    let messages: Vec<String> = status
        .quotas
        .iter()
        .flat_map(|q| {
            q.issues
                .iter()
                .map(|i| format!("{}: {}", i.reason, i.message))
        })
        .chain(
            status
                .workload_issues
                .iter()
                .map(|w| format!("{} {}: {}", w.reason, w.workload, w.message)),
        )
        .collect();
    if !messages.is_empty() {
        out += "\n";
        for message in messages {
            out += &format!("{}\n", visible(&message));
        }
    }
    Some(out)
}

/// One row per flavor and resource: the quota against the healthy units of its nodes.
fn quota_rows(status: &GpuInventoryStatus) -> Vec<Vec<String>> {
    status
        .quotas
        .iter()
        .map(|q| {
            let issues: Vec<&str> = q.issues.iter().map(|i| i.reason.as_str()).collect();
            vec![
                q.flavor.clone(),
                q.resource.clone(),
                q.nominal_quota.to_string(),
                q.borrowing_limit.map_or("-".to_owned(), |b| b.to_string()),
                q.healthy_gpus.to_string(),
                q.gpus.to_string(),
                q.free_gpus.to_string(),
                q.nodes.to_string(),
                q.cluster_queues.join(","),
                if issues.is_empty() {
                    "-".to_owned()
                } else {
                    issues.join(",")
                },
            ]
        })
        .collect()
}
