//! Kueue quotas on the wire: `status.quotas[]` and `status.workloadIssues[]`, and both read back.

use crate::crd::{GpuInventoryStatus, QuotaEntry, QuotaIssueEntry, WorkloadIssueEntry};
use crate::inventory::model::{
    FlavorQuota, QuotaIssue, QuotaIssueReason, QuotaReport, WorkloadIssue,
};

/// How many pending workloads `workloadIssues[]` lists (`workloadIssueCount` counts them all).
pub const WORKLOAD_ISSUES_LIMIT: usize = 50;

/// One flavor's quota of one resource.
pub fn quota_entry(quota: &FlavorQuota) -> QuotaEntry {
    QuotaEntry {
        flavor: quota.flavor.clone(),
        resource: quota.resource.clone(),
        nominal_quota: quota.nominal_quota,
        borrowing_limit: quota.borrowing_limit,
        cluster_queues: quota.cluster_queues.clone(),
        cohorts: quota.cohorts.clone(),
        nodes: quota.nodes,
        gpus: quota.gpus,
        healthy_gpus: quota.healthy_gpus,
        free_gpus: quota.free_gpus,
        issues: quota
            .issues
            .iter()
            .map(|i| QuotaIssueEntry {
                reason: i.reason.as_str().to_owned(),
                message: i.message.clone(),
            })
            .collect(),
    }
}

/// The first [`WORKLOAD_ISSUES_LIMIT`] workload issues, and how many there are.
pub fn workload_issues(report: &QuotaReport) -> (Vec<WorkloadIssueEntry>, u32) {
    let listed = report
        .workload_issues
        .iter()
        .take(WORKLOAD_ISSUES_LIMIT)
        .map(|w| WorkloadIssueEntry {
            workload: w.workload.clone(),
            cluster_queue: w.cluster_queue.clone(),
            reason: QuotaIssueReason::WorkloadCannotFit.as_str().to_owned(),
            message: w.message.clone(),
        })
        .collect();
    let count = u32::try_from(report.workload_issues.len()).unwrap_or(u32::MAX);
    (listed, count)
}

/// The report a published status holds (`None` when it holds neither list). The flavors' unhealthy nodes are
/// only in the messages, and issues of a reason this version does not know are left out.
pub fn read_quotas(status: &GpuInventoryStatus) -> Option<QuotaReport> {
    if status.quotas.is_empty() && status.workload_issues.is_empty() {
        return None;
    }
    let quotas = status
        .quotas
        .iter()
        .map(|q| FlavorQuota {
            flavor: q.flavor.clone(),
            resource: q.resource.clone(),
            nominal_quota: q.nominal_quota,
            borrowing_limit: q.borrowing_limit,
            cluster_queues: q.cluster_queues.clone(),
            cohorts: q.cohorts.clone(),
            nodes: q.nodes,
            gpus: q.gpus,
            healthy_gpus: q.healthy_gpus,
            free_gpus: q.free_gpus,
            unhealthy_nodes: Vec::new(),
            issues: q
                .issues
                .iter()
                .filter_map(|i| {
                    let reason = [
                        QuotaIssueReason::QuotaExceedsCapacity,
                        QuotaIssueReason::FlavorMatchesNoNodes,
                    ]
                    .into_iter()
                    .find(|r| r.as_str() == i.reason)?;
                    Some(QuotaIssue {
                        reason,
                        message: i.message.clone(),
                    })
                })
                .collect(),
        })
        .collect();
    let workload_issues = status
        .workload_issues
        .iter()
        .map(|w| WorkloadIssue {
            workload: w.workload.clone(),
            cluster_queue: w.cluster_queue.clone(),
            message: w.message.clone(),
        })
        .collect();
    Some(QuotaReport {
        quotas,
        workload_issues,
    })
}
