//! The node scanner: one Node object (and its DRA devices) in, its [`NodeInventory`] out, or nothing when it
//! is no GPU node.
//!
//! Pure and deterministic: no I/O, no clock. Everything the operator knows about GPU labels lives here (the
//! reading rules are in docs/reading-nodes.md); [`crate::inventory::assemble`] runs it over a set of nodes.

mod diagnose;
mod dra_devices;
mod fields;
mod vendor_node;

// NVIDIA's label tables, read by this path (they live with NVIDIA's other rules in `vendors::nvidia`).
use crate::inventory::vendors::nvidia::{cloud, features, labels, vm_gpus};

use std::collections::BTreeMap;

use crate::inventory::cluster_node::ClusterNode;
use crate::inventory::dra::DraNode;
use crate::inventory::health::{self, HealthTable};
use crate::inventory::model::Vendor;
use crate::inventory::model::{Amount, Mig, MigProfile, NodeInventory};
use crate::inventory::resources::{
    GPU_RESOURCE, NVIDIA_RESOURCE_PREFIX, SHARED_GPU_RESOURCE, accelerator_resources,
};
use crate::inventory::vendors::{self, NodeResources};
pub(crate) use dra_devices::PRODUCT_FROM_DRA;
use labels::LabelReader;

/// What the scan of one node needs to know about the others in scope.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScanScope {
    /// Some node in scope carries a GPU Feature Discovery label, so GFD is installed: a GPU node it has not
    /// labelled (and no other source names) is `GpuLabelsMissing`. Without GFD anywhere, nobody is.
    pub(crate) gfd_installed: bool,
    /// Per vendor (in `Vendor::ALL` order but NVIDIA, which is `gfd_installed`): some node in scope carries
    /// that vendor's labels, so its labeller runs. One vendor's labeller says nothing of another's nodes.
    pub(crate) vendor_labels: [bool; Vendor::ALL.len()],
    /// Which node conditions are GPU health, and who sets them.
    pub(crate) health: &'static HealthTable,
}

impl ScanScope {
    /// Whether some node in scope carries `vendor`'s labels.
    pub(crate) fn labelled(&self, vendor: Vendor) -> bool {
        match vendor {
            Vendor::Nvidia => self.gfd_installed,
            other => Vendor::ALL
                .iter()
                .position(|v| *v == other)
                .is_some_and(|i| self.vendor_labels[i]),
        }
    }
}

impl ScanScope {
    /// The scope of these nodes: the first of the scan's two passes. What each node adds is read from its
    /// labels once per node version (kept on the node, see [`crate::inventory::cluster_node::Derived`]).
    pub fn of<'a>(nodes: impl IntoIterator<Item = &'a ClusterNode>) -> ScanScope {
        let signals = nodes
            .into_iter()
            .fold(0, |signals, node| signals | Self::signals_of(node));
        ScanScope::default().with_signals(signals)
    }

    /// What `node`'s labels add to a scope, as [`ScanScope::signals`] encodes it.
    fn signals_of(node: &ClusterNode) -> u64 {
        if let Some(signals) = node.scope_signals.get() {
            return signals;
        }
        let labels = &node.labels;
        let mut own = ScanScope {
            gfd_installed: labels.iter().any(|(k, v)| labels::is_gfd_label(k, v)),
            ..ScanScope::default()
        };
        let reader = LabelReader::new(Some(labels));
        for (i, vendor) in Vendor::ALL.iter().enumerate() {
            own.vendor_labels[i] = vendors::labelled(*vendor, &reader);
        }
        let signals = own.signals();
        node.scope_signals.set(signals);
        signals
    }

    /// The scope's label signals as bits: GPU Feature Discovery, then each vendor in `Vendor::ALL` order.
    fn signals(&self) -> u64 {
        let vendors = self
            .vendor_labels
            .iter()
            .enumerate()
            .fold(0, |bits, (i, labelled)| {
                bits | (u64::from(*labelled) << (i + 1))
            });
        u64::from(self.gfd_installed) | vendors
    }

    /// The scope with these [`ScanScope::signals`] added.
    fn with_signals(mut self, signals: u64) -> ScanScope {
        self.gfd_installed |= signals & 1 != 0;
        for (i, labelled) in self.vendor_labels.iter_mut().enumerate() {
            *labelled |= signals & (1 << (i + 1)) != 0;
        }
        self
    }

    /// Everything a node's entry depends on besides the node itself, as a value to compare: the label
    /// signals and which health table (by address: tables are `'static` and never freed).
    pub(crate) fn key(&self) -> (u64, usize) {
        (self.signals(), std::ptr::from_ref(self.health) as usize)
    }

    /// The scope, reading health conditions with `table` (the defaults otherwise).
    pub fn with_health(mut self, table: &'static HealthTable) -> ScanScope {
        self.health = table;
        self
    }
}

/// The node's entry when it is a GPU node, else `None`, with the node as its own scope (GPU Feature Discovery
/// counts as installed only when this node carries its labels). [`crate::inventory::scan`] scans a set of
/// nodes.
pub fn scan_node(node: &ClusterNode) -> Option<NodeInventory> {
    scan_node_in(node, ScanScope::of([node]), None)
}

/// [`scan_node_in`], remembering on the node (for as long as this version of it lives) that it is no GPU
/// node in this scope when it has no DRA devices: the next scan of an unchanged CPU node costs a lookup. The
/// result is the same.
pub fn scan_node_remembered(
    node: &ClusterNode,
    scope: ScanScope,
    dra: Option<DraNode>,
) -> Option<NodeInventory> {
    if dra.is_none() && known_no_gpu(node, scope) {
        return None;
    }
    let key = scope.key();
    let without_dra = dra.is_none();
    let entry = scan_node_in(node, scope, dra);
    if entry.is_none() && without_dra {
        node.no_gpu_in.set(key);
    }
    entry
}

/// Whether an earlier scan found `node` (this version of it, without DRA devices) no GPU node in `scope`.
pub fn known_no_gpu(node: &ClusterNode, scope: ScanScope) -> bool {
    node.no_gpu_in.get() == Some(scope.key())
}

/// The node's entry when it is a GPU node, else `None`: `scope` says what the other nodes show, `dra` is
/// what the node publishes as DRA devices, if anything. Holdings are the allocation's, so none yet.
pub fn scan_node_in(
    node: &ClusterNode,
    scope: ScanScope,
    dra: Option<DraNode>,
) -> Option<NodeInventory> {
    let mut labels = LabelReader::new(Some(&node.labels));
    let capacity = accelerator_resources(node.capacity.as_ref());
    let allocatable_block = node.allocatable.as_ref();
    let allocatable = accelerator_resources(allocatable_block);
    let taints = taints(node);
    let resources = NodeResources {
        capacity: &capacity,
        allocatable: &allocatable,
        taints: &taints,
    };
    let hand_made = hand_made_gpu_label(&mut labels);
    let cloud = cloud::read(&mut labels);
    let published = health::read(
        &mut labels,
        node.conditions(),
        &taints,
        node.unschedulable,
        scope.health,
    );
    let nvidia_says = is_gpu_node(&labels, &capacity)
        || cloud.present
        || hand_made
        || published.vendor == Some(Vendor::Nvidia);
    let drivers: Vec<&str> = dra
        .iter()
        .flat_map(|d| d.devices.iter().map(|device| device.driver.as_str()))
        .collect();
    let mut identified = vendors::identify(&labels, &resources, &drivers, nvidia_says);
    if identified.by_dra_only && dra.is_none() && published.known {
        // Known only by a health monitor's condition or an operator's labels: that vendor's node (or, when
        // the signal names no vendor, an accelerator node of unknown make).
        identified.vendor = published.vendor.unwrap_or(Vendor::Unknown);
        identified.by_dra_only = false;
    }
    let neutral_devices = resources
        .with_units(vendors::unit_of)
        .iter()
        .any(|(_, unit, _)| *unit == vendors::Unit::Device);
    if identified.by_dra_only && !neutral_devices && dra.is_none() {
        return None;
    }
    // Another vendor's resources or labels describe the node, or only a vendor-neutral resource does: that
    // vendor's module reads it. NVIDIA's nodes, and nodes only DRA describes (whose devices say everything
    // the entry holds), take the first editions' path below.
    let only_neutral = identified.vendor == Vendor::Unknown && neutral_devices;
    if identified.vendor != Vendor::Nvidia && (!identified.by_dra_only || only_neutral) {
        let vendor = identified.vendor;
        let reading = vendors::read(vendor, &mut labels, &resources);
        let facts = vendor_node::Facts {
            vendor,
            also: identified.also,
            ready_condition: node.ready_condition(),
            allocatable_known: allocatable_block.is_some(),
            status_known: node.conditions.is_some(),
            labeller_in_scope: scope.labelled(vendor),
            table: scope.health,
        };
        return Some(vendor_node::entry(
            node, labels, reading, &resources, facts, dra, published,
        ));
    }
    let ready_condition = node.ready_condition();
    let mut derived_from = BTreeMap::new();
    let vm = vm_gpus::read(&capacity, &allocatable);
    for note in &vm.notes {
        labels.note(note.clone());
    }

    let product = fields::product(&mut labels, cloud.product.or(vm.product), &mut derived_from);
    let sharing = features::sharing(&mut labels, &capacity, cloud.sharing.as_ref()).or(vm.sharing);
    let replicas = sharing.as_ref().and_then(|s| s.replicas);
    let count = fields::count(
        &mut labels,
        cloud.count,
        device_plugin_gpus(&capacity, &allocatable, replicas).or(vm.count),
        &mut derived_from,
    );
    let memory_mib = fields::memory_mib(&mut labels, cloud.memory, &mut derived_from);
    let mut mig = features::mig(&mut labels, product.as_deref(), &capacity);
    if let Some(size) = cloud.partition_size.as_deref()
        && mig.is_none()
    {
        mig = Some(gke_partitions(size, count));
    }
    if node.conditions.is_none() {
        labels.note(NO_CONDITIONS_NOTE.to_owned());
    }
    if allocatable_block.is_none() {
        labels.note(
            "the object has no status.allocatable (a partial dump?): whether its GPUs are allocatable is unknown"
                .to_owned(),
        );
    }
    let sources = fields::sources(&labels, cloud.present, &capacity, &allocatable);
    let mut entry = NodeInventory {
        name: node.name.to_string(),
        vendor: Some(identified.vendor),
        device_resources: vm.device_resources,
        product_from_dra: false,
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
        holdings: Vec::new(),
        unschedulable: node.unschedulable,
        sources,
        derived_from,
        notes: Vec::new(),
        issues: Vec::new(),
        devices: Vec::new(),
        dra_extended: BTreeMap::new(),
        still_fit: BTreeMap::new(),
    };
    let served_by_dra = dra.as_ref().is_some_and(DraNode::serves_gpus);
    let dra_issues = dra.as_ref().map(|d| d.issues.clone()).unwrap_or_default();
    if let Some(dra) = dra {
        dra_devices::merge(&mut entry, dra);
    }
    let facts = diagnose::Facts {
        ready_condition,
        cloud_says_gpu: cloud.present,
        allocatable_known: allocatable_block.is_some(),
        status_known: node.conditions.is_some(),
        gfd_in_scope: scope.gfd_installed,
        served_by_dra,
        cordon_explained: published.cordon_explained,
        evidence: Some(diagnose::Evidence {
            labels: &labels,
            conditions: node.conditions(),
            table: scope.health,
        }),
    };
    let mut issues = diagnose::diagnose(&entry, facts);
    issues.extend(published.issues);
    issues.extend(dra_issues);
    let (invalid, notes) = labels.finish();
    issues.extend(invalid);
    entry.issues = issues;
    entry.notes = notes;
    Some(entry)
}

/// Whether a resource list holds an `nvidia.com/*` resource above 0.
fn has_positive(resources: &BTreeMap<String, Amount>) -> bool {
    resources.values().any(Amount::is_positive)
}

/// The count the device plugin shows when no label gives one: `nvidia.com/gpu` capacity (total registered
/// devices), else allocatable, else the renamed `nvidia.com/gpu.shared`; divided by the sharing replicas when
/// they are known and divide it (a shared GPU is advertised once per replica). `None` when none lists it.
fn device_plugin_gpus(
    capacity: &BTreeMap<String, Amount>,
    allocatable: &BTreeMap<String, Amount>,
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
        let value = list.get(resource)?.value()?;
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
fn gke_partitions(size: &str, count: u64) -> Mig {
    Mig {
        count_meaning: Some(format!(
            "count is the number of MIG partitions of size {size} (GKE gpu-partition-size), not physical GPUs"
        )),
        devices: vec![MigProfile {
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

/// The note of a node object that shows no conditions: readiness unknown, not NotReady (both paths).
const NO_CONDITIONS_NOTE: &str = "the object shows no conditions (a trimmed dump, or a kubelet that never \
     posted status): whether the node is Ready is unknown";

/// The node's taints as (key, value, effect).
fn taints(node: &ClusterNode) -> Vec<(String, String, String)> {
    node.taints
        .iter()
        .map(|t| (t.key.to_string(), t.value.to_string(), t.effect.to_string()))
        .collect()
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
fn is_gpu_node(labels: &LabelReader<'_>, nvidia_capacity: &BTreeMap<String, Amount>) -> bool {
    labels.get(labels::GPU_PRESENT) == Some("true")
        || labels
            .iter()
            .any(|(k, v)| labels::is_nvidia_pci_label(k, v))
        || has_value(labels, labels::GPU_PRODUCT)
        || has_value(labels, labels::GPU_COUNT)
        || has_value(labels, labels::GPU_WORKLOAD_CONFIG)
        // GPU Feature Discovery's labels of a GPU whose product and count labels are missing.
        || has_value(labels, labels::GPU_FAMILY)
        || has_value(labels, labels::MIG_CAPABLE)
        || has_value(labels, labels::GPU_MEMORY)
        || labels.iter().any(|(k, v)| is_mig_profile_evidence(k, v))
        || nvidia_capacity
            .iter()
            .any(|(name, q)| name.starts_with(NVIDIA_RESOURCE_PREFIX) && q.is_positive())
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod proptests;
