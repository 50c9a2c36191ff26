//! What health controllers do to a node they judge broken (remediation taints, cordons they label with who
//! and why), what they count (GPUs present against expected), and maintenance a cloud announces, as tables.

use crate::inventory::cluster_node::Condition;
use crate::inventory::label_reader::LabelReader;
use crate::inventory::model::{Issue, IssueReason};

/// A taint a health controller puts on a node it takes out of service.
struct RemediationTaint {
    key: &'static str,
    reporter: &'static str,
}

/// Remediation taints, by key (any value, any effect).
const REMEDIATION_TAINTS: &[RemediationTaint] = &[
    // NVSentinel's fault-quarantine (its default rules taint by the failure: Xid errors, ...).
    RemediationTaint {
        key: "nvidia.com/gpu-xid-error",
        reporter: "NVIDIA NVSentinel",
    },
    // AMD's GPU operator while it remediates a node whose AMDGPU* condition is True.
    RemediationTaint {
        key: "amd-gpu-unhealthy",
        reporter: "AMD GPU operator",
    },
];

/// The labels a controller that cordons a node leaves on it: who cordoned it and why.
struct CordonLabels {
    by: &'static str,
    reason: &'static str,
    /// Also the reporter of the health table's condition family it raises: with every one of those
    /// conditions `False` on the node, a cordon it still holds is stale.
    reporter: &'static str,
}

const CORDON_LABELS: &[CordonLabels] = &[CordonLabels {
    by: "k8saas.nvidia.com/cordon-by",
    reason: "k8saas.nvidia.com/cordon-reason",
    reporter: "NVIDIA NVSentinel",
}];

/// Labels with a monitor's count of the GPUs it sees and of those the node should have.
struct GpuCountLabels {
    current: &'static str,
    expected: &'static str,
    reporter: &'static str,
}

const GPU_COUNT_LABELS: &[GpuCountLabels] = &[GpuCountLabels {
    current: "nvsentinel.dgxc.nvidia.com/gpu.count.current",
    expected: "nvsentinel.dgxc.nvidia.com/gpu.count.expected",
    reporter: "NVIDIA NVSentinel",
}];

/// GKE's host-maintenance labels.
const GKE_SCHEDULED_MAINTENANCE: &str = "cloud.google.com/scheduled-maintenance-time";
const GKE_ACTIVE_MAINTENANCE: &str = "cloud.google.com/active-node-maintenance";

/// The remediation issues of a node: its remediation taints and an explained cordon as one
/// `GpuNodeQuarantined`. Returns the issues and whether the node's cordon is explained (then it is no plain
/// `Unschedulable`).
pub(super) fn quarantine(
    labels: &LabelReader<'_>,
    taints: &[(String, String, String)],
    watched: &[(&str, &Condition)],
    cordoned: bool,
) -> (Vec<Issue>, bool) {
    let mut parts = Vec::new();
    for taint in REMEDIATION_TAINTS {
        for (key, value, effect) in taints.iter().filter(|(k, _, _)| k == taint.key) {
            let value = if value.is_empty() {
                String::new()
            } else {
                format!("={}", shown(value))
            };
            parts.push(format!(
                "taint {key}{value}:{effect} set by {}",
                taint.reporter
            ));
        }
    }
    let mut explained = false;
    if cordoned {
        for cordon in CORDON_LABELS {
            let Some(by) = labels.get(cordon.by).filter(|v| !v.trim().is_empty()) else {
                continue;
            };
            explained = true;
            if let Some(stale) = stale_cordon(cordon, by, labels, watched) {
                return (vec![stale], true);
            }
            let why = labels
                .get(cordon.reason)
                .filter(|v| !v.trim().is_empty())
                .map_or_else(
                    || format!(" (no {} label)", cordon.reason),
                    |r| format!(", reason {} ({})", shown(r), cordon.reason),
                );
            parts.push(format!(
                "cordoned by {} ({}={}){why}",
                cordon.reporter,
                cordon.by,
                shown(by)
            ));
        }
    }
    if parts.is_empty() {
        return (Vec::new(), false);
    }
    let message = format!(
        "{}: a health controller took the node out of service; it puts the node back when the GPU recovers \
         (or follow its runbook)",
        parts.join("; ")
    );
    (
        vec![Issue::new(IssueReason::GpuNodeQuarantined, message)],
        explained,
    )
}

/// `StaleQuarantine` when the controller's cordon labels hold a cordoned node while every condition it raised
/// on the node (`watched`: the node's health conditions with the reporter the health table names) is `False`
/// again: the controller did not put the node back (NVIDIA/NVSentinel#458). `None` when any of them is not
/// `False`, or the node shows none of them (nothing to judge by).
fn stale_cordon(
    cordon: &CordonLabels,
    by: &str,
    labels: &LabelReader<'_>,
    watched: &[(&str, &Condition)],
) -> Option<Issue> {
    let own: Vec<&Condition> = watched
        .iter()
        .filter(|(reporter, _)| *reporter == cordon.reporter)
        .map(|(_, c)| *c)
        .collect();
    if own.is_empty() || own.iter().any(|c| &*c.status != "False") {
        return None;
    }
    let healthy: Vec<&str> = own.iter().map(|c| &*c.type_).collect();
    let why = labels
        .get(cordon.reason)
        .filter(|v| !v.trim().is_empty())
        .map(|r| format!(", reason {}", shown(r)))
        .unwrap_or_default();
    Some(Issue::new(
        IssueReason::StaleQuarantine,
        format!(
            "cordoned by {} ({}={}{why}) while every condition it raised on the node is healthy again ({} False): \
             the quarantine was not lifted; check its fault-quarantine log, then uncordon the node and remove \
             the {} and {} labels",
            cordon.reporter,
            cordon.by,
            shown(by),
            crate::inventory::text::capped_list(healthy.iter().copied()),
            cordon.by,
            cordon.reason
        ),
    ))
}

/// `GpusMissing` when a monitor counts fewer GPUs than expected; malformed counts are `InvalidLabel`.
pub(super) fn missing_gpus(labels: &mut LabelReader<'_>) -> Vec<Issue> {
    let mut issues = Vec::new();
    for count in GPU_COUNT_LABELS {
        let (Some(current), Some(expected)) =
            (labels.count(count.current), labels.count(count.expected))
        else {
            continue;
        };
        if current < expected {
            issues.push(Issue::new(
                IssueReason::GpusMissing,
                format!(
                    "{} sees {current} of the {expected} GPUs the node should have ({}={current}, {}={expected}): \
                     a GPU fell off the bus or failed to initialise (check dmesg and nvidia-smi on the node)",
                    count.reporter, count.current, count.expected
                ),
            ));
        }
    }
    issues
}

/// `MaintenanceScheduled` (information) for a cloud's announced host maintenance.
pub(super) fn maintenance(labels: &LabelReader<'_>) -> Vec<Issue> {
    let mut parts = Vec::new();
    if let Some(at) = labels
        .get(GKE_SCHEDULED_MAINTENANCE)
        .filter(|v| !v.trim().is_empty())
    {
        let when = at
            .trim()
            .parse::<i64>()
            .ok()
            .and_then(|s| jiff::Timestamp::from_second(s).ok())
            .map_or_else(|| shown(at), |t| t.to_string());
        parts.push(format!(
            "GKE scheduled host maintenance for {when} ({GKE_SCHEDULED_MAINTENANCE})"
        ));
    }
    if labels
        .get(GKE_ACTIVE_MAINTENANCE)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    {
        parts.push(format!(
            "GKE host maintenance is under way ({GKE_ACTIVE_MAINTENANCE}=true)"
        ));
    }
    if parts.is_empty() {
        return Vec::new();
    }
    vec![Issue::new(
        IssueReason::MaintenanceScheduled,
        format!(
            "{}: GPU workloads on the node are disrupted during it (plan around it)",
            parts.join("; ")
        ),
    )]
}

fn shown(text: &str) -> String {
    text.trim().chars().take(64).collect()
}
