//! The scanner: nodes (and a selector) in, [`Inventory`] out.
//!
//! Pure and deterministic: no I/O, no clock, output sorted by node name. Everything the operator knows about
//! GPU labels lives here (the reading rules are in README.md), so every publisher and the `scan` command agree by construction.

mod diagnose;
mod features;
pub mod labels;
pub mod resources;

use std::fmt;

use k8s_openapi::api::core::v1::{Node, NodeCondition};
use kube::ResourceExt;
use kube::core::{Selector, SelectorExt};
use serde::Serialize;

use crate::crd::GpuNodeEntry;
use labels::LabelReader;
use resources::{NVIDIA_RESOURCE_PREFIX, nvidia_resources, quantity_value};

/// Why a GPU node needs attention. The strings are part of the API (status, ConfigMap, metrics, alerts).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum IssueReason {
    /// The node's Ready condition is not `True`.
    NotReady,
    /// A container-workload GPU node without GPU Feature Discovery's product label.
    GpuLabelsMissing,
    /// Ready with GPUs counted, but none allocatable.
    GpusNotAllocatable,
    /// Some `nvidia.com/*` allocatable below its capacity.
    GpusUnhealthy,
    /// `nvidia.com/mig.config.state` = `failed`.
    MigConfigFailed,
    /// The product label ends in `-MIG-INVALID`.
    MigInvalid,
    /// The node is cordoned.
    Unschedulable,
    /// A number-valued label did not parse.
    InvalidLabel,
}

impl IssueReason {
    /// Every reason, in the order they are reported.
    pub const ALL: [IssueReason; 8] = [
        IssueReason::NotReady,
        IssueReason::GpuLabelsMissing,
        IssueReason::GpusNotAllocatable,
        IssueReason::GpusUnhealthy,
        IssueReason::MigConfigFailed,
        IssueReason::MigInvalid,
        IssueReason::Unschedulable,
        IssueReason::InvalidLabel,
    ];

    /// The reason as it appears in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            IssueReason::NotReady => "NotReady",
            IssueReason::GpuLabelsMissing => "GpuLabelsMissing",
            IssueReason::GpusNotAllocatable => "GpusNotAllocatable",
            IssueReason::GpusUnhealthy => "GpusUnhealthy",
            IssueReason::MigConfigFailed => "MigConfigFailed",
            IssueReason::MigInvalid => "MigInvalid",
            IssueReason::Unschedulable => "Unschedulable",
            IssueReason::InvalidLabel => "InvalidLabel",
        }
    }
}

impl fmt::Display for IssueReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The GPU view of a set of nodes: the status of a `GpuInventory` minus time and conditions.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Inventory {
    /// Number of GPU nodes.
    pub total_gpu_nodes: u32,
    /// GPU nodes whose Ready condition is `True`.
    pub ready_gpu_nodes: u32,
    /// Sum of the nodes' `count`.
    pub total_gpus: u64,
    /// One entry per GPU node, sorted by name.
    pub nodes: Vec<GpuNodeEntry>,
}

/// Scans the nodes the selector picks. Nodes that are not GPU nodes are left out.
pub fn scan<'a>(nodes: impl IntoIterator<Item = &'a Node>, selector: &Selector) -> Inventory {
    let mut entries: Vec<GpuNodeEntry> = nodes
        .into_iter()
        .filter(|node| selector.matches(node.labels()))
        .filter_map(scan_node)
        .collect();
    // Names are unique in a real cluster; a hand-made dump may repeat one. Ties are ordered by content so
    // the one kept does not depend on the input order.
    entries.sort_by(|a, b| {
        a.name
            .cmp(&b.name)
            .then_with(|| format!("{a:?}").cmp(&format!("{b:?}")))
    });
    entries.dedup_by(|a, b| a.name == b.name);
    let total_gpu_nodes = u32::try_from(entries.len()).unwrap_or(u32::MAX);
    let ready_gpu_nodes =
        u32::try_from(entries.iter().filter(|e| e.ready).count()).unwrap_or(u32::MAX);
    let total_gpus = entries
        .iter()
        .map(|e| e.count)
        .fold(0u64, u64::saturating_add);
    Inventory {
        total_gpu_nodes,
        ready_gpu_nodes,
        total_gpus,
        nodes: entries,
    }
}

/// The node's entry when it is a GPU node, else `None`.
pub fn scan_node(node: &Node) -> Option<GpuNodeEntry> {
    let mut labels = LabelReader::new(node.metadata.labels.as_ref());
    let status = node.status.as_ref();
    let capacity = nvidia_resources(status.and_then(|s| s.capacity.as_ref()));
    if !is_gpu_node(&labels, &capacity) {
        return None;
    }
    let allocatable = nvidia_resources(status.and_then(|s| s.allocatable.as_ref()));
    let ready_condition = ready_condition(node);
    let product = labels.get(labels::GPU_PRODUCT).map(str::to_owned);
    let count = labels.count(labels::GPU_COUNT).unwrap_or(0);
    let memory_mib = labels.size(labels::GPU_MEMORY);
    let sharing = features::sharing(&mut labels, &capacity);
    let mig = features::mig(&mut labels, product.as_deref());
    let mut entry = GpuNodeEntry {
        name: node.name_any(),
        ready: ready_condition.is_some_and(|c| c.status == "True"),
        workload_config: labels.get(labels::GPU_WORKLOAD_CONFIG).map(str::to_owned),
        product,
        count,
        memory_mib,
        sharing,
        mig,
        capacity,
        allocatable,
        unschedulable: node
            .spec
            .as_ref()
            .and_then(|s| s.unschedulable)
            .unwrap_or(false),
        issues: Vec::new(),
    };
    let mut issues = diagnose::diagnose(&entry, ready_condition);
    issues.extend(labels.into_issues());
    entry.issues = issues;
    Some(entry)
}

/// The node's `Ready` condition, if it reports one.
pub fn ready_condition(node: &Node) -> Option<&NodeCondition> {
    node.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")
}

/// Any one signal makes a GPU node; `gpu.present=false` alone makes nothing.
fn is_gpu_node(
    labels: &LabelReader<'_>,
    nvidia_capacity: &std::collections::BTreeMap<String, String>,
) -> bool {
    labels.get(labels::GPU_PRESENT) == Some("true")
        || labels
            .iter()
            .any(|(k, v)| labels::is_nvidia_pci_label(k, v))
        || labels.has(labels::GPU_PRODUCT)
        || labels.has(labels::GPU_COUNT)
        || labels.has(labels::GPU_WORKLOAD_CONFIG)
        || nvidia_capacity.iter().any(|(name, q)| {
            name.starts_with(NVIDIA_RESOURCE_PREFIX) && quantity_value(q).is_some_and(|v| v > 0.0)
        })
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod proptests;
