//! Per-node issues: what is wrong with an accelerator node, and what an on-call engineer should look at;
//! one diagnosis for every vendor, worded by the vendor's table.

use crate::inventory::cluster_node::Condition;

use crate::inventory::health::{self, HealthTable};
use crate::inventory::label_reader::LabelReader;
use crate::inventory::model::{Amount, Issue, IssueReason, NodeInventory, ResourceMap};
use crate::inventory::vendors::nvidia::gfd_labels as labels;

use crate::inventory::resources::is_gpu_resource;
use crate::inventory::vendors::vendor_table::VendorTable;

/// The note of a node object that shows no conditions: readiness unknown, not NotReady (both paths).
pub(super) const NO_CONDITIONS_NOTE: &str = "the object shows no conditions (a trimmed dump, or a kubelet that never \
     posted status): whether the node is Ready is unknown";

pub(super) const NO_READY_NOTE: &str = "the object shows conditions but no Ready condition (a paste cut \
     short: the kubelet always posts Ready, and the node lifecycle controller sets it Unknown where the kubelet \
     never did): whether the node is Ready is unknown";

fn issue(reason: IssueReason, message: String) -> Issue {
    Issue::new(reason, message)
}

/// What the diagnosis needs beyond the entry.
#[derive(Clone, Debug)]
pub(super) struct Facts<'a> {
    /// The node's Ready condition, if it reports one. Without one (a trimmed dump, a paste cut short, or a
    /// kubelet that never posted status, which the node lifecycle controller turns into Ready=Unknown within
    /// its grace period) readiness is unknown, not NotReady.
    pub(super) ready_condition: Option<&'a Condition>,
    /// The object has a `status.allocatable` block. Without one (a partial dump) allocation is unknown, not 0.
    pub(super) allocatable_known: bool,
    /// The vendor's labeller runs somewhere in the scanned scope (some selected node carries its labels).
    pub(super) labeller_in_scope: bool,
    /// A cloud provider's label says the node has the vendor's devices (even when it gives no count).
    pub(super) cloud_says_devices: bool,
    /// DRA publishes the node's devices: labels and extended resources are not how they are served, so their
    /// absence (no product label, capacity left at allocatable 0 by a migration) is no fault.
    pub(super) served_by_dra: bool,
    /// A health controller's labels or a driver upgrade explain the node's cordon: it is reported as theirs,
    /// not as a plain `Unschedulable`.
    pub(super) cordon_explained: bool,
    /// Devices a vendor component labels unhealthy, in words.
    pub(super) unhealthy: Vec<String>,
    /// What says the node has devices besides its resources (labels, health signals).
    pub(super) evidence: Evidence<'a>,
}

/// What says a node has GPUs besides its resources, put in words only when an issue needs them (most scans
/// of most nodes need none).
#[derive(Clone, Copy, Debug)]
pub(super) struct Evidence<'a> {
    pub(super) labels: &'a LabelReader<'a>,
    pub(super) conditions: &'a [Condition],
    pub(super) table: &'a HealthTable,
}

impl Evidence<'_> {
    /// The labels GPU Feature Discovery and the GPU operator leave, then the health signals.
    fn describe(&self) -> Vec<String> {
        let mut evidence: Vec<String> = [
            labels::GPU_PRESENT,
            labels::GPU_PRODUCT,
            labels::GPU_COUNT,
            labels::GPU_FAMILY,
            labels::MIG_CAPABLE,
            labels::GPU_MEMORY,
        ]
        .into_iter()
        .filter_map(|k| {
            let value: String = self.labels.get(k)?.trim().chars().take(64).collect();
            Some(format!("label {k}={value}"))
        })
        .collect();
        evidence.extend(health::evidence(self.labels, self.conditions, self.table));
        evidence
    }
}

/// The issues of one accelerator node, in a fixed order (`InvalidLabel` issues are appended by the caller),
/// worded by the vendor's `table`.
pub(super) fn diagnose(
    entry: &NodeInventory,
    table: &dyn VendorTable,
    facts: Facts<'_>,
) -> Vec<Issue> {
    let mut issues = Vec::new();
    if let Some(ready) = facts.ready_condition.filter(|_| !entry.ready) {
        let since = ready.last_transition_time.as_ref().map(|t| t.to_string());
        issues.push(issue(IssueReason::NotReady, not_ready_message(ready)).since(since));
    }
    let vm_workload = entry
        .workload_config
        .as_deref()
        .is_some_and(|w| w != "container");
    // Without the vendor's labeller anywhere in scope, a missing product label is how the cluster is built,
    // not a fault.
    if entry.product.is_none() && !vm_workload && facts.labeller_in_scope && !facts.served_by_dra {
        issues.push(issue(IssueReason::GpuLabelsMissing, table.labels_missing()));
    }
    issues.extend(table.own_issues(entry));
    let repartitioning = entry
        .mig
        .as_ref()
        .and_then(|m| m.config_state.as_deref())
        .is_some_and(|state| matches!(state, "pending" | "rebooting"));
    // Allocation is judged only when the object shows it, and not while devices are being re-partitioned
    // (the device plugin is stopped on purpose then).
    if facts.allocatable_known && !repartitioning && !facts.served_by_dra {
        let capacity = gpu_sum(&entry.capacity);
        let allocatable = gpu_sum(&entry.allocatable);
        let has_devices = table.has_devices(entry, capacity, facts.cloud_says_devices);
        if entry.ready && has_devices && allocatable == 0.0 {
            issues.push(issue(
                IssueReason::GpusNotAllocatable,
                table.not_allocatable(entry, capacity),
            ));
        } else if entry.ready && !has_devices && nothing_advertised(entry) {
            let resource = table.missing_resource(entry);
            issues.push(resources_missing(entry, &resource, Some(facts.evidence)));
        } else {
            let mut withdrawn = withdrawn_resources(&entry.capacity, &entry.allocatable);
            withdrawn.extend(facts.unhealthy);
            if !withdrawn.is_empty() {
                issues.push(issue(
                    IssueReason::GpusUnhealthy,
                    table.unhealthy(&withdrawn.join(", ")),
                ));
            }
        }
    } else if !repartitioning && !facts.unhealthy.is_empty() {
        // A device its vendor's component or sharing layer flags unhealthy is shown without a status.
        issues.push(issue(
            IssueReason::GpusUnhealthy,
            table.unhealthy(&facts.unhealthy.join(", ")),
        ));
    }
    if entry.unschedulable && !facts.cordon_explained {
        issues.push(unschedulable(table.devices_word()));
    }
    issues
}

/// No accelerator resource above 0 in capacity or allocatable, and no DRA device.
fn nothing_advertised(entry: &NodeInventory) -> bool {
    let positive = |list: &ResourceMap<Amount>| list.values().any(Amount::is_positive);
    !positive(&entry.capacity) && !positive(&entry.allocatable) && entry.devices.is_empty()
}

/// `GpuResourcesMissing`: what says the node has GPUs, and what is missing (the resource, and the product
/// and count labels when they are missing too). The operator holds it back for a grace period.
fn resources_missing(
    entry: &NodeInventory,
    resource: &str,
    evidence: Option<Evidence<'_>>,
) -> Issue {
    let evidence = evidence.map(|e| e.describe()).unwrap_or_default();
    let mut missing = vec![format!(
        "no {resource} (or other GPU resource) in capacity or allocatable"
    )];
    missing.push("no DRA device".to_owned());
    if entry.product.is_none() {
        missing.push("no label naming the GPU model".to_owned());
    }
    if entry.count == 0 {
        missing.push("no GPU count".to_owned());
    }
    let known_by = if evidence.is_empty() {
        "its labels".to_owned()
    } else {
        crate::inventory::text::capped_list(evidence.iter().map(String::as_str))
    };
    issue(
        IssueReason::GpuResourcesMissing,
        format!(
            "known as a GPU node by {known_by}, but {}: the GPU driver or the device plugin is not up on it              (check the driver and device-plugin pods on this node)",
            missing.join(", ")
        ),
    )
}

/// `Unschedulable`, worded for what the node offers (`GPUs`, `devices`): every vendor's path raises it alike.
fn unschedulable(what: &str) -> Issue {
    issue(
        IssueReason::Unschedulable,
        format!(
            "the node is cordoned (spec.unschedulable): no new pods land on its {what}; \
             `kubectl uncordon` it when maintenance is over"
        ),
    )
}

fn not_ready_message(ready: &Condition) -> String {
    let mut message = format!("Ready condition is {}", ready.status);
    if let Some(reason) = ready.reason.as_deref().filter(|r| !r.is_empty()) {
        message.push_str(&format!(" ({reason})"));
    }
    if let Some(text) = ready.message.as_deref().filter(|m| !m.is_empty()) {
        let text: String = text.trim_end_matches('.').chars().take(256).collect();
        message.push_str(&format!(": {text}"));
    }
    if let Some(since) = &ready.last_transition_time {
        message.push_str(&format!(", since {since}"));
    }
    message
}

/// The sum of the GPU-scheduling resources (whole, shared, MIG) of a resource list.
fn gpu_sum(resources: &ResourceMap<Amount>) -> f64 {
    resources
        .iter()
        .filter(|(name, _)| is_gpu_resource(name))
        .filter_map(|(_, q)| q.value())
        .sum()
}

/// `name capacity C, allocatable A` for every `nvidia.com/*` resource whose allocatable is below capacity.
fn withdrawn_resources(
    capacity: &ResourceMap<Amount>,
    allocatable: &ResourceMap<Amount>,
) -> Vec<String> {
    let serves = |name: &str| {
        allocatable
            .get(name)
            .and_then(Amount::value)
            .is_some_and(|v| v > 0.0)
    };
    capacity
        .iter()
        // A renamed shared resource left at 0 beside the plain one that serves (or the plain one beside the
        // renamed one) is the previous sharing configuration's: the kubelet keeps the name after its plugin
        // left. Reconfigured, not unhealthy (bottlerocket-core-kit#789).
        .filter(|(name, _)| {
            let other = match name.strip_suffix(".shared") {
                Some(plain) => plain.to_owned(),
                None => format!("{name}.shared"),
            };
            serves(name) || !serves(&other)
        })
        .filter_map(|(name, cap)| {
            let cap_value = cap.value()?;
            let alloc = allocatable.get(name).map_or("0", Amount::text);
            let alloc_value = allocatable.get(name).and_then(Amount::value).unwrap_or(0.0);
            (alloc_value < cap_value).then(|| format!("{name} capacity {cap}, allocatable {alloc}"))
        })
        .collect()
}
