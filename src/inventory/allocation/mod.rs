//! Allocation: what the pods hold on each GPU node, what is free, and who waits (pure).
//!
//! The rules (README "How allocation is counted"): a pod holds its effective request ([`pod::effective_requests`],
//! the scheduler's rule) on its node while it is bound there and not finished; `free = allocatable - allocated`,
//! never below 0; more allocated than allocatable is an `Overcommitted` issue. Resources are kept under their
//! own names: a time-sliced `nvidia.com/gpu.shared` or a `nvidia.com/mig-1g.10gb` is never added to whole GPUs.

pub mod pod;

use std::collections::{BTreeMap, HashMap};

use crate::crd::{
    FreeGpuNodes, GpuNodeEntry, NamespaceUsage, NodeIssue, ProductSummary, ResourceSummary,
};
use crate::inventory::conditions::capped_list;
use crate::inventory::dra::{self, DraView};
use crate::inventory::scanner::resources::{GPU_RESOURCE, NVIDIA_RESOURCE_PREFIX, quantity_value};
use crate::inventory::scanner::{Inventory, IssueReason};
use crate::inventory::vendor::vendor_of;
pub use pod::GpuPod;
use pod::add;

/// No pods: for callers that scan nodes alone.
pub const NO_PODS: [&GpuPod; 0] = [];

/// What the accounting needs to know about the scanned nodes besides their entries.
#[derive(Clone, Copy, Debug, Default)]
pub struct NodeFacts<'n> {
    /// The node's labels (a pending pod's `nodeSelector` is matched against them).
    pub labels: Option<&'n BTreeMap<String, String>>,
    /// The node object has `status.allocatable` (false for a partial dump: holdings are shown, but no
    /// `Overcommitted` is claimed).
    pub allocatable_known: bool,
}

/// Which pending pods an inventory answers for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DemandScope {
    /// The inventory covers every node of the cluster: every pending GPU pod is its demand. Otherwise a
    /// pending pod counts only when one of the inventory's GPU nodes matches its `nodeSelector` and offers a
    /// resource it asks for.
    pub all_nodes: bool,
}

/// Fills in the allocation fields of a scanned inventory from the pods. `facts(node)` tells what the
/// entries do not (see [`NodeFacts`]).
pub fn account<'a, 'n>(
    inventory: &mut Inventory,
    pods: impl IntoIterator<Item = &'a GpuPod>,
    scope: DemandScope,
    dra: &DraView,
    facts: impl Fn(&str) -> NodeFacts<'n>,
) {
    let pods: Vec<&GpuPod> = pods.into_iter().collect();
    let mut on_node: HashMap<&str, Vec<&GpuPod>> = HashMap::new();
    for pod in &pods {
        if let Some(node) = pod.node.as_deref()
            && pod.holds_on(node)
        {
            on_node.entry(node).or_default().push(pod);
        }
    }
    let mut namespaces: BTreeMap<String, NamespaceUsage> = BTreeMap::new();
    for entry in &mut inventory.nodes {
        let holders = on_node.remove(entry.name.as_str()).unwrap_or_default();
        for pod in &holders {
            let usage = namespace(&mut namespaces, &pod.namespace);
            add(&mut usage.allocated, &pod.requests);
        }
        account_node(entry, &holders, facts(&entry.name).allocatable_known);
        for (claim_namespace, resource) in dra::entry::holdings(entry) {
            let usage = namespace(&mut namespaces, claim_namespace);
            *usage.allocated.entry(resource.to_owned()).or_insert(0) += 1;
        }
    }
    let has_dra_nodes = inventory.nodes.iter().any(|n| !n.devices.is_empty());
    let waits_here = |pod: &GpuPod| {
        inventory.nodes.iter().any(|node| {
            let offers =
                |r: &String| node.capacity.contains_key(r) || node.allocatable.contains_key(r);
            pod.requests.keys().any(offers) && pod.selects(facts(&node.name).labels)
        })
    };
    let mut pending = 0u32;
    for pod in pods.iter().filter(|p| p.is_pending_unschedulable()) {
        // A pod that waits on a GPU claim waits for the DRA nodes (selectors of claims are not evaluated).
        let claims = dra.waits_for(&pod.namespace, &pod.claims);
        let extended = !pod.requests.is_empty() && (scope.all_nodes || waits_here(pod));
        let on_claims = !claims.is_empty() && (scope.all_nodes || has_dra_nodes);
        if !extended && !on_claims {
            continue;
        }
        pending = pending.saturating_add(1);
        let usage = namespace(&mut namespaces, &pod.namespace);
        usage.pending_pods = usage.pending_pods.saturating_add(1);
        add(&mut usage.pending, &pod.requests);
        add(&mut usage.pending, &claims);
    }
    inventory.pending_gpu_pods = pending;
    inventory.namespaces = namespaces.into_values().collect();
    inventory.resources = resource_summaries(&inventory.nodes);
    inventory.products = product_summaries(&inventory.nodes);
    inventory.free_gpus = inventory.nodes.iter().map(free_whole_gpus).sum();
}

fn namespace<'m>(
    namespaces: &'m mut BTreeMap<String, NamespaceUsage>,
    name: &str,
) -> &'m mut NamespaceUsage {
    namespaces
        .entry(name.to_owned())
        .or_insert_with(|| NamespaceUsage {
            name: name.to_owned(),
            ..Default::default()
        })
}

/// `allocated`, `free` and an `Overcommitted` issue for one node, from the pods it holds (`holders`: bound
/// there and not finished). With no holders: nothing allocated, everything allocatable free.
pub fn account_node(entry: &mut GpuNodeEntry, holders: &[&GpuPod], allocatable_known: bool) {
    let allocatable = counts(&entry.allocatable);
    // Extended resources only: DRA resources are allocated by claims, and the scanner has already put them
    // in the entry (dra::entry::merge).
    let mut allocated: BTreeMap<String, u64> = allocatable
        .keys()
        .filter(|name| name.starts_with(NVIDIA_RESOURCE_PREFIX))
        .map(|name| (name.clone(), 0))
        .collect();
    for pod in holders {
        add(&mut allocated, &pod.requests);
    }
    let mut free = BTreeMap::new();
    let mut over = Vec::new();
    for (name, held) in &allocated {
        let offered = allocatable.get(name).copied().unwrap_or(0);
        free.insert(name.clone(), offered.saturating_sub(*held));
        if *held > offered && allocatable_known {
            let mut pods = holders
                .iter()
                .filter(|p| p.requests.contains_key(name))
                .map(|p| format!("{}/{}", p.namespace, p.name))
                .collect::<Vec<_>>();
            // By name, not by the order the pods reached the watch's store: after a relist, on another replica
            // or in `scan` they arrive in another order, and the message must be the same (no write for it).
            pods.sort();
            over.push(format!(
                "{name}: {held} allocated to pods, {offered} allocatable (pods: {})",
                capped_list(pods.iter().map(String::as_str))
            ));
        }
    }
    if !over.is_empty() {
        entry.issues.push(NodeIssue {
            reason: IssueReason::Overcommitted.as_str().to_owned(),
            message: format!(
                "{}; the device plugin withdrew devices pods still hold, or pods were bound past the scheduler",
                over.join("; ")
            ),
        });
    }
    let dra_only = |(name, _): &(&String, &u64)| !name.starts_with(NVIDIA_RESOURCE_PREFIX);
    let dra_allocated = entry
        .allocated
        .iter()
        .filter(dra_only)
        .map(|(k, v)| (k.clone(), *v));
    let dra_free = entry
        .free
        .iter()
        .filter(dra_only)
        .map(|(k, v)| (k.clone(), *v));
    allocated.extend(dra_allocated.collect::<Vec<_>>());
    free.extend(dra_free.collect::<Vec<_>>());
    entry.allocated = allocated;
    entry.free = free;
}

/// Whole free GPUs a pod could get now: free `nvidia.com/gpu` on a Ready, schedulable node where that
/// resource is one physical GPU.
pub fn free_whole_gpus(entry: &GpuNodeEntry) -> u64 {
    if !entry.ready || entry.unschedulable {
        return 0;
    }
    // DRA serves this node's GPUs: the device plugin's view of the same GPUs is not added to it.
    if let Some(free) = dra::entry::free_whole_gpus(entry) {
        return free;
    }
    if !gpu_resource_is_whole_gpus(entry) {
        return 0;
    }
    entry.free.get(GPU_RESOURCE).copied().unwrap_or(0)
}

/// Whether one `nvidia.com/gpu` on this node is one physical GPU: not a time-slicing or MPS replica (unless
/// the replicas are renamed to `nvidia.com/gpu.shared`), not a MIG device, not a GKE partition. Under MIG
/// strategy `single` the device plugin offers MIG devices as `nvidia.com/gpu` only where MIG is enabled, which
/// GPU Feature Discovery shows by renaming the product to `<gpu>-MIG-<profile>`; a node labelled `single`
/// whose GPUs have MIG disabled (`mig.config=all-disabled`, a plain product name) offers whole GPUs.
fn gpu_resource_is_whole_gpus(entry: &GpuNodeEntry) -> bool {
    let shared = entry.sharing.as_ref().is_some_and(|s| !s.renamed_resource);
    let mig_enabled = entry
        .product
        .as_deref()
        .is_some_and(|p| p.contains("-MIG-"));
    let mig_as_gpu = entry.mig.as_ref().is_some_and(|m| {
        (m.strategy.as_deref() == Some("single") && mig_enabled)
            || m.devices
                .iter()
                .any(|d| d.resource.as_deref() == Some(GPU_RESOURCE))
    });
    !shared && !mig_as_gpu
}

fn resource_summaries(nodes: &[GpuNodeEntry]) -> Vec<ResourceSummary> {
    let mut sums: BTreeMap<String, ResourceSummary> = BTreeMap::new();
    for node in nodes {
        let capacity = counts(&node.capacity);
        let allocatable = counts(&node.allocatable);
        let names = capacity
            .keys()
            .chain(allocatable.keys())
            .chain(node.allocated.keys());
        for name in names {
            sums.entry(name.clone()).or_insert_with(|| ResourceSummary {
                name: name.clone(),
                ..Default::default()
            });
        }
        for (name, sum) in sums.iter_mut() {
            let get = |m: &BTreeMap<String, u64>| m.get(name).copied().unwrap_or(0);
            sum.capacity = sum.capacity.saturating_add(get(&capacity));
            sum.allocatable = sum.allocatable.saturating_add(get(&allocatable));
            sum.allocated = sum.allocated.saturating_add(get(&node.allocated));
            sum.free = sum.free.saturating_add(get(&node.free));
        }
    }
    sums.into_values().collect()
}

fn product_summaries(nodes: &[GpuNodeEntry]) -> Vec<ProductSummary> {
    let mut products: BTreeMap<String, ProductSummary> = BTreeMap::new();
    for node in nodes {
        let Some(name) = node.product.as_deref() else {
            continue;
        };
        let from_dra = dra::entry::product_from_dra(node);
        let product = products
            .entry(same_product_key(name))
            .or_insert_with(|| ProductSummary {
                name: name.to_owned(),
                ..Default::default()
            });
        // One model under the spelling DRA shows, whichever node came first.
        if from_dra {
            product.name = name.to_owned();
        }
        product.nodes = product.nodes.saturating_add(1);
        product.gpus = product.gpus.saturating_add(node.count);
        let free = free_whole_gpus(node);
        product.free_gpus = product.free_gpus.saturating_add(free);
        if product.vendor.is_none() {
            product.vendor = vendor_of(node).map(str::to_owned);
        }
        if product.nodes_with_free_gpus.is_empty() {
            product.nodes_with_free_gpus = JOB_SIZES
                .iter()
                .map(|&at_least| FreeGpuNodes { at_least, nodes: 0 })
                .collect();
        }
        for size in &mut product.nodes_with_free_gpus {
            if free >= u64::from(size.at_least) {
                size.nodes = size.nodes.saturating_add(1);
            }
        }
    }
    let mut list: Vec<ProductSummary> = products.into_values().collect();
    list.sort_by(|a, b| a.name.cmp(&b.name));
    list
}

/// The job sizes `products[].nodesWithFreeGpus` answers for: how many nodes could start a job of N GPUs.
pub const JOB_SIZES: [u32; 4] = [1, 2, 4, 8];

/// Products are the same model when they differ only in spaces, dashes or case: DRA writes
/// `NVIDIA A100-SXM4-80GB` where GPU Feature Discovery writes `NVIDIA-A100-SXM4-80GB`.
pub fn same_product_key(product: &str) -> String {
    product
        .trim()
        .chars()
        .map(|c| match c {
            ' ' | '_' => '-',
            c => c.to_ascii_uppercase(),
        })
        .collect()
}

/// Whole-number values of a quantity map; unparsable quantities are left out (the scanner reports them).
fn counts(list: &BTreeMap<String, String>) -> BTreeMap<String, u64> {
    list.iter()
        .filter_map(|(name, q)| {
            let value = quantity_value(q)?;
            (value.is_finite() && value >= 0.0).then(|| (name.clone(), value.floor() as u64))
        })
        .collect()
}

#[cfg(test)]
mod tests;
