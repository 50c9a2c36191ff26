//! Allocation: what the pods and claims hold on each GPU node, what is free, and who waits (pure).
//!
//! The rules (docs/allocation.md, "How allocation is counted"): a pod holds its effective request
//! (`sources::convert::k8s_pod::effective_requests`, the scheduler's rule) on its node while it is bound there and not finished; `free = allocatable - allocated`,
//! never below 0; more allocated than allocatable is an `Overcommitted` issue. Resources are kept under their
//! own names: a time-sliced `nvidia.com/gpu.shared` or a `nvidia.com/mig-1g.10gb` is never added to whole GPUs.
//! Each function returns values; [`crate::inventory::assemble`] puts them on the nodes.

pub mod device_health;
pub mod equivalents;
pub mod occupancy;
pub mod pod;
pub mod share_fit;

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::inventory::dra::DraView;
use crate::inventory::model::{Holder, Holding, Issue, IssueReason, NodeInventory, ResourceMap};
use crate::inventory::resources::GPU_RESOURCE;
use crate::inventory::text::capped_list;
use crate::inventory::text_map::TextMap;
use crate::inventory::vendors::is_read_resource;
use device_health::{unhealthy_issue, unknown_issue};
pub use pod::GpuPod;
use pod::add;

/// No pods: for callers that scan nodes alone.
pub const NO_PODS: [&GpuPod; 0] = [];

/// What the accounting needs to know about a scanned node besides its entry.
#[derive(Clone, Copy, Debug, Default)]
pub struct NodeFacts<'n> {
    /// The node's labels (a pending pod's `nodeSelector` is matched against them).
    pub labels: Option<&'n TextMap>,
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

/// What one node's holders hold, and what is left.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeAllocation {
    /// Per resource, what is held (every allocatable resource listed).
    pub allocated: ResourceMap<u64>,
    /// Per resource, what is free.
    pub free: ResourceMap<u64>,
    /// Who holds what, sorted.
    pub holdings: Vec<Holding>,
    /// `Overcommitted`, when the pods hold more than the node offers.
    pub overcommitted: Option<Issue>,
    /// `AllocatedDeviceUnhealthy`, when the kubelet reports a device of a pod here `Unhealthy`.
    pub unhealthy: Option<Issue>,
    /// `AllocatedDeviceHealthUnknown`, when the kubelet reports a device of a pod here `Unknown`.
    pub health_unknown: Option<Issue>,
    /// The GPUs a sharing layer or scheduler names, with their parts (`occupancy::shared_gpus`).
    pub shared_gpus: Vec<crate::inventory::model::SharedGpu>,
}

impl NodeAllocation {
    /// Puts the allocation on its node.
    pub fn apply(self, node: &mut NodeInventory) {
        node.allocated = self.allocated;
        node.free = self.free;
        node.holdings = self.holdings;
        node.issues.extend(self.overcommitted);
        node.issues.extend(self.unhealthy);
        node.issues.extend(self.health_unknown);
        node.shared_gpus = self.shared_gpus;
        node.occupancy = occupancy::of_node(node);
    }
}

/// The allocation of one node from the pods it holds (`holders`: bound there and not finished) and its DRA
/// devices' claims. With no holders: nothing allocated, everything allocatable free. Without DRA objects:
/// see [`allocate_node_with`].
pub fn allocate_node(
    node: &NodeInventory,
    holders: &[&GpuPod],
    allocatable_known: bool,
) -> NodeAllocation {
    allocate_node_with(node, holders, allocatable_known, &DraView::default())
}

/// [`allocate_node`], with `dra` saying which of the pods' requests a DRA claim meets (KEP-5004): those are
/// counted once, by the claim's devices, and never against the device plugin's allocatable.
pub fn allocate_node_with(
    node: &NodeInventory,
    holders: &[&GpuPod],
    allocatable_known: bool,
    dra: &DraView,
) -> NodeAllocation {
    let allocatable: BTreeMap<&str, u64> = node
        .allocatable
        .iter()
        .filter_map(|(name, q)| Some((name.as_str(), q.whole()?)))
        .collect();
    // Resources DRA serves here are allocated by claims, and the scanner has already counted them from the
    // devices; the device plugin's are allocated by the pods' requests.
    let dra_served: BTreeSet<&str> = node.devices.iter().map(|d| d.resource.as_str()).collect();
    let mut allocated: ResourceMap<u64> = allocatable
        .keys()
        .filter(|name| is_read_resource(name) && !dra_served.contains(*name))
        .map(|name| ((*name).to_owned(), 0))
        .collect();
    let mut holdings = Vec::new();
    let plugin_requests = hold_pods_requests(node, holders, dra, &mut allocated, &mut holdings);
    let (mut free, over) = free_of(
        node,
        &mut allocated,
        &allocatable,
        &dra_served,
        allocatable_known,
        &plugin_requests,
    );
    hold_claims_devices(node, &mut holdings);
    holdings.sort();
    let shared_gpus = occupancy::shared_gpus(node, holders, &holdings);
    // What DRA serves, as the scanner counted it from the devices, where no pod's request counted it.
    for resource in &dra_served {
        if let Some(n) = node.allocated.get(*resource) {
            allocated.entry((*resource).to_owned()).or_insert(*n);
        }
        if let Some(n) = node.free.get(*resource) {
            free.entry((*resource).to_owned()).or_insert(*n);
        }
    }
    let overcommitted = (!over.is_empty()).then(|| {
        Issue::new(
            IssueReason::Overcommitted,
            format!(
                "{}; the device plugin withdrew devices pods still hold, or pods were bound past the scheduler",
                over.join("; ")
            ),
        )
    });
    let unhealthy = unhealthy_issue(holders.iter().map(|p| {
        (
            p.namespace.as_str(),
            p.name.as_str(),
            p.unhealthy_devices.as_slice(),
        )
    }));
    let health_unknown = unknown_issue(holders.iter().map(|p| {
        (
            p.namespace.as_str(),
            p.name.as_str(),
            p.unknown_devices.as_slice(),
        )
    }));
    NodeAllocation {
        allocated,
        free,
        holdings,
        overcommitted,
        unhealthy,
        health_unknown,
        shared_gpus,
    }
}

/// Each holder's requests the device plugin serves (not a DRA claim): added to `allocated`, and held by the
/// pod (with its GPU-equivalents), or a share its scheduler's annotation asks for. Returns each pod with
/// those requests, for the `Overcommitted` message.
fn hold_pods_requests<'p>(
    node: &NodeInventory,
    holders: &[&'p GpuPod],
    dra: &DraView,
    allocated: &mut ResourceMap<u64>,
    holdings: &mut Vec<Holding>,
) -> Vec<(&'p GpuPod, Cow<'p, ResourceMap<u64>>)> {
    let mut plugin_requests = Vec::with_capacity(holders.len());
    for &pod in holders {
        let requests = plugin_requests_of(pod, dra);
        add_held(allocated, &requests);
        // A reservation pod holds the device for the fractions it hosts: no team's holding.
        let reservation = equivalents::is_reservation(pod);
        let first = holdings.len();
        holdings.extend(requests.iter().map(|(resource, amount)| {
            Holding {
                resource: resource.clone(),
                holder: Holder::Pod {
                    namespace: pod.namespace.clone(),
                    name: pod.name.clone(),
                },
                amount: *amount,
                device: None,
                equivalent: (!reservation)
                    .then(|| equivalents::of_request(node, &requests, resource, *amount))
                    .flatten(),
            }
        }));
        // A share a scheduler's annotation asks for, with no GPU resource asked (KAI's fractions): held as a
        // part of a GPU under the plain GPU resource, 0 of its units (the reservation pod holds the unit).
        if let Some(share) = pod.share
            && !reservation
            && holdings[first..].iter().all(|h| h.equivalent.is_none())
        {
            holdings.push(Holding {
                resource: GPU_RESOURCE.to_owned(),
                holder: Holder::Pod {
                    namespace: pod.namespace.clone(),
                    name: pod.name.clone(),
                },
                amount: 0,
                device: None,
                equivalent: equivalents::of_share(node, share),
            });
        }
        plugin_requests.push((pod, requests));
    }
    plugin_requests
}

/// What is free of each resource the pods' requests count (allocatable minus held, never below 0), and the
/// resources held past their allocatable, in words.
fn free_of(
    node: &NodeInventory,
    allocated: &mut ResourceMap<u64>,
    allocatable: &BTreeMap<&str, u64>,
    dra_served: &BTreeSet<&str>,
    allocatable_known: bool,
    plugin_requests: &[(&GpuPod, Cow<'_, ResourceMap<u64>>)],
) -> (ResourceMap<u64>, Vec<String>) {
    let mut free = ResourceMap::new();
    let mut over = Vec::new();
    for (name, held) in allocated.iter_mut() {
        if let (Some(by_claims), Some(left)) = (node.allocated.get(name), node.free.get(name))
            && dra_served.contains(name.as_str())
        {
            // A device-plugin pod on a resource DRA also serves (a node moving to DRA): both take GPUs.
            free.insert(name.clone(), left.saturating_sub(*held));
            *held = held.saturating_add(*by_claims);
            continue;
        }
        let offered = allocatable.get(name.as_str()).copied().unwrap_or(0);
        free.insert(name.clone(), offered.saturating_sub(*held));
        if *held > offered && allocatable_known {
            over.push(overcommitted_resource(
                name,
                *held,
                offered,
                plugin_requests,
            ));
        }
    }
    (free, over)
}

/// Each DRA device's claims, one holding of one device each.
fn hold_claims_devices(node: &NodeInventory, holdings: &mut Vec<Holding>) {
    for device in &node.devices {
        holdings.extend(device.claims.iter().map(|claim| Holding {
            resource: device.resource.clone(),
            holder: Holder::Claim(claim.clone()),
            amount: 1,
            device: Some(device.name.clone()),
            equivalent: equivalents::of_claim(node, device, claim),
        }));
    }
}

/// Whether a DRA claim meets any of `pod`'s requests (KEP-5004): then the DRA objects shape its node's
/// allocation, not the pod and the node alone.
pub fn requests_met_by_claims(pod: &GpuPod, dra: &DraView) -> bool {
    pod.requests
        .keys()
        .any(|resource| met_by_claim(pod, dra, resource))
}

/// Whether a DRA claim meets `pod`'s request for `resource`.
fn met_by_claim(pod: &GpuPod, dra: &DraView, resource: &str) -> bool {
    dra.claim_serves(
        &pod.namespace,
        &pod.name,
        pod.extended_claim.as_deref(),
        resource,
    )
}

/// The pod's requests the device plugin meets: all of them, but those a DRA claim meets (KEP-5004).
fn plugin_requests_of<'p>(pod: &'p GpuPod, dra: &DraView) -> Cow<'p, ResourceMap<u64>> {
    let met_by_claim = |resource: &str| met_by_claim(pod, dra, resource);
    if !requests_met_by_claims(pod, dra) {
        return Cow::Borrowed(&pod.requests);
    }
    Cow::Owned(
        pod.requests
            .iter()
            .filter(|(r, _)| !met_by_claim(r))
            .map(|(r, n)| (r.clone(), *n))
            .collect(),
    )
}

fn overcommitted_resource(
    name: &str,
    held: u64,
    offered: u64,
    holders: &[(&GpuPod, Cow<'_, ResourceMap<u64>>)],
) -> String {
    let mut pods = holders
        .iter()
        .filter(|(_, requests)| requests.contains_key(name))
        .map(|(p, _)| format!("{}/{}", p.namespace, p.name))
        .collect::<Vec<_>>();
    // By name, not by the order the pods reached the watch's store: after a relist, on another replica or
    // in `scan` they arrive in another order, and the message must be the same (no write for it).
    pods.sort();
    format!(
        "{name}: {held} allocated to pods, {offered} allocatable (pods: {})",
        capped_list(pods.iter().map(String::as_str))
    )
}

/// GPU pods the scheduler could not place, as an inventory answers for them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Demand {
    /// How many.
    pub pending_pods: u32,
    /// Per namespace: how many, and what they ask for (extended resources and DeviceClasses).
    pub per_namespace: BTreeMap<String, (u32, BTreeMap<String, u64>)>,
}

/// The pending GPU pods `nodes` answer for (see [`DemandScope`]); `facts(node)` gives a node's labels.
pub fn demand<'n>(
    pods: &[&GpuPod],
    nodes: &[Arc<NodeInventory>],
    scope: DemandScope,
    dra: &DraView,
    facts: impl Fn(&str) -> NodeFacts<'n>,
) -> Demand {
    let has_dra_nodes = nodes.iter().any(|n| !n.devices.is_empty());
    let waits_here = |pod: &GpuPod| {
        nodes.iter().any(|node| {
            let offers =
                |r: &String| node.capacity.contains_key(r) || node.allocatable.contains_key(r);
            pod.requests.keys().any(offers) && pod.selects(facts(&node.name).labels)
        })
    };
    let mut demand = Demand::default();
    for pod in pods.iter().filter(|p| p.is_pending_unschedulable()) {
        // A pod that waits on a GPU claim waits for the DRA nodes (selectors of claims are not evaluated).
        let claims = dra.waits_for(&pod.namespace, &pod.claims);
        let extended = !pod.requests.is_empty() && (scope.all_nodes || waits_here(pod));
        let on_claims = !claims.is_empty() && (scope.all_nodes || has_dra_nodes);
        if !extended && !on_claims {
            continue;
        }
        demand.pending_pods = demand.pending_pods.saturating_add(1);
        let (pods, wants) = demand
            .per_namespace
            .entry(pod.namespace.clone())
            .or_default();
        *pods = pods.saturating_add(1);
        add(wants, &pod.requests);
        add(wants, &claims);
    }
    demand
}

/// Whole free GPUs a pod could get now: free `nvidia.com/gpu` on a Ready, schedulable node where that
/// resource is one physical GPU, or the free whole-GPU devices where DRA serves the node's GPUs.
pub fn free_whole_gpus(node: &NodeInventory) -> u64 {
    if !node.ready || node.unschedulable {
        return 0;
    }
    // DRA serves this node's GPUs: the device plugin's view of the same GPUs is not added to it.
    if node.has_whole_gpu_devices() {
        return node
            .devices
            .iter()
            .filter(|d| d.is_whole_gpu() && d.free)
            .count() as u64;
    }
    // Other vendors' device resources (`amd.com/gpu`), passthrough GPUs and DirectX: one unit, one device.
    if !node.device_resources.is_empty() {
        return node
            .device_resources
            .iter()
            .filter_map(|r| node.free.get(r))
            .fold(0, |sum, n| sum.saturating_add(*n));
    }
    if !gpu_resource_is_whole_gpus(node) {
        return 0;
    }
    node.free.get(GPU_RESOURCE).copied().unwrap_or(0)
}

/// Whether one `nvidia.com/gpu` on this node is one physical GPU: not a time-slicing or MPS replica (unless
/// the replicas are renamed to `nvidia.com/gpu.shared`), not a MIG device, not a GKE partition. Under MIG
/// strategy `single` the device plugin offers MIG devices as `nvidia.com/gpu` only where MIG is enabled, which
/// GPU Feature Discovery shows by renaming the product to `<gpu>-MIG-<profile>`; a node labelled `single`
/// whose GPUs have MIG disabled (`mig.config=all-disabled`, a plain product name) offers whole GPUs.
pub(crate) fn gpu_resource_is_whole_gpus(node: &NodeInventory) -> bool {
    let shared = node.sharing.as_ref().is_some_and(|s| !s.renamed_resource);
    let mig_enabled = node.product.as_deref().is_some_and(|p| p.contains("-MIG-"));
    let mig_as_gpu = node.mig.as_ref().is_some_and(|m| {
        (m.strategy.as_deref() == Some("single") && mig_enabled)
            || m.devices
                .iter()
                .any(|d| d.resource.as_deref() == Some(GPU_RESOURCE))
    });
    !shared && !mig_as_gpu
}

/// Adds `from`'s amounts into a node's `allocated`, saturating.
fn add_held(into: &mut ResourceMap<u64>, from: &ResourceMap<u64>) {
    for (name, value) in from {
        let slot = into.entry(name.clone()).or_default();
        *slot = slot.saturating_add(*value);
    }
}

#[cfg(test)]
mod tests;
