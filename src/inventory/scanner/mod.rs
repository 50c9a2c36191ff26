//! The scanner: nodes (and a selector) in, [`Inventory`] out.
//!
//! Pure and deterministic: no I/O, no clock, output sorted by node name. Everything the operator knows about
//! GPU labels lives here (the reading rules are in README.md), so every publisher and the `scan` command agree by construction.

pub mod cloud;
mod diagnose;
pub mod features;
mod fields;
pub mod labels;
mod reason;
pub mod resources;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, NodeCondition};
use kube::ResourceExt;
use kube::core::{Selector, SelectorExt};
use serde::Serialize;

use crate::crd::{GpuNodeEntry, NamespaceUsage, ProductSummary, ResourceSummary};
use crate::inventory::allocation::{self, DemandScope, GpuPod, NodeFacts};
use crate::inventory::dra::{self, DraInput, DraNode};
use labels::LabelReader;
pub use reason::IssueReason;
use resources::{
    GPU_RESOURCE, NVIDIA_RESOURCE_PREFIX, SHARED_GPU_RESOURCE, nvidia_resources, quantity_value,
};

/// The GPU view of a set of nodes and the pods on them: the status of a `GpuInventory` minus time and
/// conditions (the fields mean what they mean there).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Inventory {
    /// Number of GPU nodes.
    pub total_gpu_nodes: u32,
    /// GPU nodes whose Ready condition is `True`.
    pub ready_gpu_nodes: u32,
    /// Sum of the nodes' `count`.
    pub total_gpus: u64,
    /// Whole GPUs free now on Ready, schedulable nodes.
    pub free_gpus: u64,
    /// GPU pods the scheduler could not place.
    pub pending_gpu_pods: u32,
    /// Every `nvidia.com/*` resource summed over the nodes.
    pub resources: Vec<ResourceSummary>,
    /// GPUs per model.
    pub products: Vec<ProductSummary>,
    /// GPU requests per namespace.
    pub namespaces: Vec<NamespaceUsage>,
    /// One entry per GPU node, sorted by name.
    pub nodes: Vec<GpuNodeEntry>,
}

/// What the scan of one node needs to know about the others in scope.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScanScope {
    /// Some node in scope carries a GPU Feature Discovery label, so GFD is installed: a GPU node it has not
    /// labelled (and no other source names) is `GpuLabelsMissing`. Without GFD anywhere, nobody is.
    pub gfd_installed: bool,
}

impl ScanScope {
    /// The scope of these nodes: the first of the scan's two passes.
    pub fn of<'a>(nodes: impl IntoIterator<Item = &'a Node>) -> ScanScope {
        ScanScope {
            gfd_installed: nodes.into_iter().any(|node| {
                node.labels()
                    .iter()
                    .any(|(k, v)| labels::is_gfd_label(k, v))
            }),
        }
    }
}

/// Scans the nodes the selector picks, in two passes: whether GPU Feature Discovery runs anywhere among them,
/// then each node. Nodes that are not GPU nodes are left out. Then the pods' holdings and demand are
/// accounted on the GPU nodes found (pass [`allocation::NO_PODS`] for nodes alone). `nodes` are the whole
/// cluster's (see [`scan_in`]).
pub fn scan<'a, 'p>(
    nodes: impl IntoIterator<Item = &'a Node>,
    pods: impl IntoIterator<Item = &'p GpuPod>,
    selector: &Selector,
) -> Inventory {
    scan_in(nodes, pods, selector, NodeUniverse::Cluster)
}

/// [`scan`] of nodes that are `universe`.
pub fn scan_in<'a, 'p>(
    nodes: impl IntoIterator<Item = &'a Node>,
    pods: impl IntoIterator<Item = &'p GpuPod>,
    selector: &Selector,
    universe: NodeUniverse,
) -> Inventory {
    scan_with(nodes, pods, &DraInput::default(), selector, universe)
}

/// [`scan_in`] with the DRA sources' objects: nodes publishing GPU devices are GPU nodes, and their devices
/// are counted and allocated by the DRA rules (see [`dra`](crate::inventory::dra)).
pub fn scan_with<'a, 'p>(
    nodes: impl IntoIterator<Item = &'a Node>,
    pods: impl IntoIterator<Item = &'p GpuPod>,
    dra: &DraInput<'_>,
    selector: &Selector,
    universe: NodeUniverse,
) -> Inventory {
    let mut dra = dra::resolve(dra);
    let selected: Vec<&Node> = nodes
        .into_iter()
        .filter(|node| selector.matches(node.labels()))
        .collect();
    let scope = ScanScope::of(selected.iter().copied());
    let facts: std::collections::HashMap<&str, NodeFacts<'_>> = selected
        .iter()
        .map(|n| {
            let facts = NodeFacts {
                labels: n.metadata.labels.as_ref(),
                allocatable_known: n.status.as_ref().is_some_and(|s| s.allocatable.is_some()),
            };
            (n.metadata.name.as_deref().unwrap_or_default(), facts)
        })
        .collect();
    let mut entries: Vec<GpuNodeEntry> = selected
        .into_iter()
        .filter_map(|node| {
            let devices = dra
                .nodes
                .remove(node.metadata.name.as_deref().unwrap_or_default());
            scan_node_with(node, scope, devices)
        })
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
    let mut inventory = Inventory {
        total_gpu_nodes,
        ready_gpu_nodes,
        total_gpus,
        nodes: entries,
        ..Default::default()
    };
    let demand = DemandScope {
        all_nodes: universe == NodeUniverse::Cluster && selector.selects_all(),
    };
    allocation::account(&mut inventory, pods, demand, &dra, |node| {
        facts.get(node).copied().unwrap_or_default()
    });
    inventory
}

/// What the nodes handed to a scan are: the whole cluster, or a subset (the operator watches only
/// `--node-label-selector` nodes). Only an inventory of the whole cluster answers for every pending GPU pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeUniverse {
    /// Every node of the cluster.
    Cluster,
    /// Some of them.
    Subset,
}

/// The node's entry when it is a GPU node, else `None`, with the node as its own scope (GPU Feature Discovery
/// counts as installed only when this node carries its labels). Use [`scan`] for a set of nodes.
pub fn scan_node(node: &Node) -> Option<GpuNodeEntry> {
    scan_node_in(node, ScanScope::of([node]))
}

/// The node's entry when it is a GPU node, else `None`. `scope` says what the other nodes show (see [`scan`]).
pub fn scan_node_in(node: &Node, scope: ScanScope) -> Option<GpuNodeEntry> {
    scan_node_with(node, scope, None)
}

/// [`scan_node_in`] with the node's DRA devices, if it publishes any.
fn scan_node_with(node: &Node, scope: ScanScope, dra: Option<DraNode>) -> Option<GpuNodeEntry> {
    let mut labels = LabelReader::new(node.metadata.labels.as_ref());
    let status = node.status.as_ref();
    let capacity = nvidia_resources(status.and_then(|s| s.capacity.as_ref()));
    let allocatable_block = status.and_then(|s| s.allocatable.as_ref());
    let hand_made = hand_made_gpu_label(&mut labels);
    let cloud = cloud::read(&mut labels);
    if !(is_gpu_node(&labels, &capacity) || cloud.present || hand_made || dra.is_some()) {
        return None;
    }
    let allocatable = nvidia_resources(allocatable_block);
    let ready_condition = ready_condition(node);
    let mut derived_from = BTreeMap::new();

    let product = fields::product(&mut labels, cloud.product, &mut derived_from);
    let sharing = features::sharing(&mut labels, &capacity, cloud.sharing.as_ref());
    let replicas = sharing.as_ref().and_then(|s| s.replicas);
    let count = fields::count(
        &mut labels,
        cloud.count,
        device_plugin_gpus(&capacity, &allocatable, replicas),
        &mut derived_from,
    );
    let memory_mib = fields::memory_mib(&mut labels, cloud.memory, &mut derived_from);
    let mut mig = features::mig(&mut labels, product.as_deref(), &capacity);
    if let Some(size) = cloud.partition_size.as_deref()
        && mig.is_none()
    {
        mig = Some(gke_partitions(size, count));
    }
    if allocatable_block.is_none() {
        labels.note(
            "the object has no status.allocatable (a partial dump?): whether its GPUs are allocatable is unknown"
                .to_owned(),
        );
    }
    let sources = fields::sources(&labels, cloud.present, &capacity, &allocatable);
    let mut entry = GpuNodeEntry {
        name: node.name_any(),
        ready: ready_condition.is_some_and(|c| c.status == "True"),
        workload_config: labels.text(labels::GPU_WORKLOAD_CONFIG).map(str::to_owned),
        product,
        count,
        memory_mib,
        sharing,
        mig,
        capacity,
        allocatable,
        allocated: BTreeMap::new(),
        free: BTreeMap::new(),
        unschedulable: node
            .spec
            .as_ref()
            .and_then(|s| s.unschedulable)
            .unwrap_or(false),
        sources,
        derived_from,
        notes: Vec::new(),
        issues: Vec::new(),
        devices: Vec::new(),
    };
    let served_by_dra = dra.as_ref().is_some_and(DraNode::serves_gpus);
    let dra_issues = dra.as_ref().map(|d| d.issues.clone()).unwrap_or_default();
    if let Some(dra) = dra {
        dra::entry::merge(&mut entry, dra);
    }
    let facts = diagnose::Facts {
        ready_condition,
        cloud_says_gpu: cloud.present,
        allocatable_known: allocatable_block.is_some(),
        gfd_in_scope: scope.gfd_installed,
        served_by_dra,
    };
    let mut issues = diagnose::diagnose(&entry, facts);
    issues.extend(dra_issues);
    let (invalid, notes) = labels.finish();
    issues.extend(invalid);
    entry.issues = issues;
    entry.notes = notes;
    Some(entry)
}

/// `sources` value: a cloud provider's GPU labels.
pub const SOURCE_CLOUD: &str = "cloud";
/// `sources` value: the device plugin's `nvidia.com/*` extended resources.
pub const SOURCE_DEVICE_PLUGIN: &str = "device-plugin";
/// `sources` value: DRA devices (ResourceSlices).
pub const SOURCE_DRA: &str = "dra";
/// `sources` value: GPU Feature Discovery, NFD or other `nvidia.com/*` node labels.
pub const SOURCE_LABELS: &str = "labels";

/// Whether a resource list holds an `nvidia.com/*` resource above 0.
fn has_positive(resources: &BTreeMap<String, String>) -> bool {
    resources
        .values()
        .any(|q| quantity_value(q).is_some_and(|v| v > 0.0))
}

/// The count the device plugin shows when no label gives one: `nvidia.com/gpu` capacity (total registered
/// devices), else allocatable, else the renamed `nvidia.com/gpu.shared`; divided by the sharing replicas when
/// they are known and divide it (a shared GPU is advertised once per replica). `None` when none lists it.
fn device_plugin_gpus(
    capacity: &BTreeMap<String, String>,
    allocatable: &BTreeMap<String, String>,
    replicas: Option<u64>,
) -> Option<(u64, String)> {
    let whole = |v: f64| v >= 0.0 && v.fract() == 0.0 && v <= f64::from(u32::MAX);
    let (value, from) = [
        ("capacity", capacity, GPU_RESOURCE),
        ("allocatable", allocatable, GPU_RESOURCE),
        ("capacity", capacity, SHARED_GPU_RESOURCE),
    ]
    .into_iter()
    .find_map(|(field, list, resource)| {
        let value = quantity_value(list.get(resource)?)?;
        // Extended resources are whole numbers; anything else is not a count. A renamed node keeps
        // `nvidia.com/gpu: 0`, so the shared resource is read when the plain one is 0.
        (whole(value)
            && (value > 0.0
                || resource == SHARED_GPU_RESOURCE
                || !capacity.contains_key(SHARED_GPU_RESOURCE)))
        .then(|| (value as u64, format!("{field} {resource}")))
    })?;
    match replicas {
        Some(r) if r > 1 && value > 0 && value % r == 0 => {
            Some((value / r, format!("{from} / {r} replicas")))
        }
        _ => Some((value, from)),
    }
}

/// GKE's MIG: partitions of one size advertised as `nvidia.com/gpu`, so `count` counts partitions.
fn gke_partitions(size: &str, count: u64) -> crate::crd::MigInfo {
    crate::crd::MigInfo {
        count_meaning: Some(format!(
            "count is the number of MIG partitions of size {size} (GKE gpu-partition-size), not physical GPUs"
        )),
        devices: vec![crate::crd::MigDevice {
            profile: size.to_owned(),
            count,
            memory_mib: None,
            resource: Some(GPU_RESOURCE.to_owned()),
        }],
        ..Default::default()
    }
}

/// The product of GFD's per-profile MIG labels (`nvidia.com/mig-7g.40gb.product`) when the node has no
/// `nvidia.com/gpu.product`: one profile's product as written, or the parent GPU several profiles share.
fn mig_profile_product(labels: &mut LabelReader<'_>) -> Option<(String, String)> {
    let keys: Vec<&str> = labels
        .iter()
        .map(|(k, _)| k)
        .filter(|k| k.starts_with(labels::MIG_PROFILE_PREFIX) && k.ends_with(".product"))
        .collect();
    let mut products: Vec<(&str, &str)> = keys
        .into_iter()
        .filter_map(|k| Some((labels.text(k)?, k)))
        .collect();
    products.dedup_by(|a, b| a.0 == b.0);
    let (first, key) = *products.first()?;
    if products.iter().all(|(p, _)| *p == first) {
        return Some((first.to_owned(), key.to_owned()));
    }
    let parent = |p: &str| {
        p.split_once("-MIG-")
            .map_or(p, |(parent, _)| parent)
            .to_owned()
    };
    let common = parent(first);
    products
        .iter()
        .all(|(p, _)| parent(p) == common)
        .then(|| (common, key.to_owned()))
        .or_else(|| Some((first.to_owned(), key.to_owned())))
}

/// The hand-made `nvidia.com/gpu` label: `true` (or a number) marks a GPU node; it is noted either way, since
/// no NVIDIA component writes it and it gives no count or model.
fn hand_made_gpu_label(labels: &mut LabelReader<'_>) -> bool {
    let Some(raw) = labels.get(labels::HAND_MADE_GPU) else {
        return false;
    };
    let value = raw.trim();
    let marks_gpu = value.eq_ignore_ascii_case("true") || value.parse::<u64>().is_ok_and(|n| n > 0);
    let shown: String = value.chars().take(64).collect();
    labels.note(if marks_gpu {
        format!(
            "label {}={shown} is hand-made (no NVIDIA component writes it): read as \"has a GPU\", it gives no count or model",
            labels::HAND_MADE_GPU
        )
    } else {
        format!(
            "label {}={shown:?} is hand-made (no NVIDIA component writes it) and says nothing usable; ignored",
            labels::HAND_MADE_GPU
        )
    });
    marks_gpu
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

/// Whether a label is there with a value (an empty label counts as absent).
fn has_value(labels: &LabelReader<'_>, key: &str) -> bool {
    labels.get(key).is_some_and(|v| !v.trim().is_empty())
}

/// GFD's per-profile MIG labels (`nvidia.com/mig-1g.10gb.count` above 0, `.product`) exist only on GPU nodes.
fn is_mig_profile_evidence(key: &str, value: &str) -> bool {
    let Some(rest) = key.strip_prefix(labels::MIG_PROFILE_PREFIX) else {
        return false;
    };
    let value = value.trim();
    (rest.ends_with(".count") && value.parse::<u64>().is_ok_and(|n| n > 0))
        || (rest.ends_with(".product") && !value.is_empty())
}

/// Any one signal makes a GPU node; `gpu.present=false` alone makes nothing.
fn is_gpu_node(labels: &LabelReader<'_>, nvidia_capacity: &BTreeMap<String, String>) -> bool {
    labels.get(labels::GPU_PRESENT) == Some("true")
        || labels
            .iter()
            .any(|(k, v)| labels::is_nvidia_pci_label(k, v))
        || has_value(labels, labels::GPU_PRODUCT)
        || has_value(labels, labels::GPU_COUNT)
        || has_value(labels, labels::GPU_WORKLOAD_CONFIG)
        || labels.iter().any(|(k, v)| is_mig_profile_evidence(k, v))
        || nvidia_capacity.iter().any(|(name, q)| {
            name.starts_with(NVIDIA_RESOURCE_PREFIX) && quantity_value(q).is_some_and(|v| v > 0.0)
        })
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod proptests;
