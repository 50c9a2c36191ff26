//! The Kueue quota gauges: per flavor and resource, the nominal quota and the healthy units of the flavor's
//! nodes, each quota issue, and how many pending workloads cannot fit. Bounded by Kueue's own objects (one
//! series per flavor and accelerator resource), whatever the fleet.

use prometheus_client::registry::Registry;

use super::families::{InventoryGauges, InventoryLabels, QuotaIssueLabels, QuotaLabels};
use crate::inventory::model::{FlavorQuota, Inventory, QuotaIssue};

fn quota_labels(inventory: &str, quota: &FlavorQuota) -> QuotaLabels {
    QuotaLabels {
        inventory: inventory.to_owned(),
        flavor: quota.flavor.clone(),
        resource: quota.resource.clone(),
    }
}

fn issue_labels(inventory: &str, quota: &FlavorQuota, issue: &QuotaIssue) -> QuotaIssueLabels {
    QuotaIssueLabels {
        inventory: inventory.to_owned(),
        flavor: quota.flavor.clone(),
        resource: quota.resource.clone(),
        reason: issue.reason.as_str().to_owned(),
    }
}

fn gauge(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Registers the Kueue quota families.
pub(super) fn register(gauges: &InventoryGauges, registry: &mut Registry) {
    registry.register(
            "quota",
            "A Kueue ResourceFlavor's nominal quota of a resource, summed over the ClusterQueues and Cohorts \
             giving it (status.quotas[].nominalQuota)",
            gauges.quota.clone(),
        );
    registry.register(
            "quota_healthy",
            "The resource's allocatable on the flavor's healthy nodes: what the quota can be served from \
             (status.quotas[].healthyGpus)",
            gauges.quota_healthy.clone(),
        );
    registry.register(
            "quota_issues",
            "1 while a flavor's quota of a resource has the issue (QuotaExceedsCapacity, FlavorMatchesNoNodes)",
            gauges.quota_issues.clone(),
        );
    registry.register(
            "workloads_cannot_fit",
            "Pending Kueue Workloads that can never be admitted as they are (status.workloadIssueCount)",
            gauges.workloads_cannot_fit.clone(),
        );
}

/// Sets the quota series of `status` (none where Kueue's objects are not read).
pub(super) fn export_quotas(metrics: &InventoryGauges, inventory: &str, status: &Inventory) {
    let Some(report) = &status.quotas else {
        return;
    };
    for quota in &report.quotas {
        let labels = quota_labels(inventory, quota);
        metrics
            .quota
            .get_or_create(&labels)
            .set(gauge(quota.nominal_quota));
        metrics
            .quota_healthy
            .get_or_create(&labels)
            .set(gauge(quota.healthy_gpus));
        for issue in &quota.issues {
            metrics
                .quota_issues
                .get_or_create(&issue_labels(inventory, quota, issue))
                .set(1);
        }
    }
    let labels = InventoryLabels {
        inventory: inventory.to_owned(),
    };
    let cannot_fit = u64::try_from(report.workload_issues.len()).unwrap_or(u64::MAX);
    metrics
        .workloads_cannot_fit
        .get_or_create(&labels)
        .set(gauge(cannot_fit));
}

/// Removes the quota series `status` set.
pub(super) fn remove_quotas(metrics: &InventoryGauges, inventory: &str, status: &Inventory) {
    let Some(report) = &status.quotas else {
        return;
    };
    for quota in &report.quotas {
        let labels = quota_labels(inventory, quota);
        metrics.quota.remove(&labels);
        metrics.quota_healthy.remove(&labels);
        for issue in &quota.issues {
            metrics
                .quota_issues
                .remove(&issue_labels(inventory, quota, issue));
        }
    }
    metrics.workloads_cannot_fit.remove(&InventoryLabels {
        inventory: inventory.to_owned(),
    });
}
