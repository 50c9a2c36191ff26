//! Pending pods blocked only by fragmentation: a pod the scheduler found no node for, whose whole-GPU
//! request is no larger than the free GPUs of a product it may run on in total, but larger than the free GPUs
//! of every one of those nodes. A pod that some node could hold waits for something else (its other
//! resources, a taint, the scheduler's next pass) and is not counted.
//!
//! Pods of one workload ask alike: the verdict is made once per (requests, nodeSelector), so thousands of
//! pending pods of a few Deployments cost a few passes over the GPU nodes, not thousands.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use crate::inventory::allocation::{GpuPod, NodeFacts, gpu_resource_is_whole_gpus};
use crate::inventory::model::{BlockedPod, NodeInventory};
use crate::inventory::resources::GPU_RESOURCE;
use crate::inventory::topology::gang::offer;

/// How many blocked pods the inventory names (all are counted).
pub const BLOCKED_LISTED: usize = 20;

/// The pending pods' verdicts.
#[derive(Debug, Default)]
pub struct Blocked {
    /// Pods blocked only by fragmentation.
    pub count: u32,
    /// The first [`BLOCKED_LISTED`] of them, the largest requests first, then by namespace and name.
    pub listed: Vec<BlockedPod>,
    /// Per product, the one-node sizes pending pods that may run on it ask for.
    pub asked: HashMap<String, BTreeSet<u64>>,
}

/// One product as a pending pod sees it: the GPUs it asks for there, the free GPUs of the nodes it may
/// run on, and the most on one of them.
#[derive(Clone, Copy, Debug)]
struct Candidate {
    product: usize,
    gpus: u64,
    free: u64,
    largest: u64,
}

type Signature<'p> = (Vec<(&'p str, u64)>, Vec<(&'p str, &'p str)>);

/// The verdict on every pending unschedulable GPU pod (`products`: `gang::product_groups` of `nodes`;
/// `facts(node)` gives a node's labels for the pods' `nodeSelector`).
pub fn blocked_pods<'n>(
    pods: &[&GpuPod],
    nodes: &[Arc<NodeInventory>],
    products: &[(String, Vec<usize>)],
    facts: impl Fn(&str) -> NodeFacts<'n>,
) -> Blocked {
    let mut seen: HashMap<Signature<'_>, Vec<Candidate>> = HashMap::new();
    let mut blocked = Blocked::default();
    let mut all: Vec<BlockedPod> = Vec::new();
    for pod in pods
        .iter()
        .filter(|p| p.is_pending_unschedulable() && !p.requests.is_empty())
    {
        let signature: Signature<'_> = (
            pod.requests.iter().map(|(r, n)| (r.as_str(), *n)).collect(),
            pod.node_selector
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect(),
        );
        let candidates = seen
            .entry(signature)
            .or_insert_with(|| candidates(pod, nodes, products, &facts));
        for c in candidates.iter() {
            blocked
                .asked
                .entry(products[c.product].0.clone())
                .or_default()
                .insert(c.gpus);
        }
        if let Some(pod) = verdict(pod, candidates, products) {
            all.push(pod);
        }
    }
    blocked.count = u32::try_from(all.len()).unwrap_or(u32::MAX);
    all.sort_by(|a, b| (b.gpus, &a.namespace, &a.name).cmp(&(a.gpus, &b.namespace, &b.name)));
    all.truncate(BLOCKED_LISTED);
    blocked.listed = all;
    blocked
}

/// The products `pod` may run on (a node of it matches its `nodeSelector` and offers a whole-GPU resource
/// it asks for), with what it asks for there and what their free GPUs are.
fn candidates<'n>(
    pod: &GpuPod,
    nodes: &[Arc<NodeInventory>],
    products: &[(String, Vec<usize>)],
    facts: &impl Fn(&str) -> NodeFacts<'n>,
) -> Vec<Candidate> {
    let mut found = Vec::new();
    for (product, (_, at)) in products.iter().enumerate() {
        let mut candidate: Option<Candidate> = None;
        for node in at.iter().map(|i| nodes[*i].as_ref()) {
            let Some(gpus) = whole_gpu_request(pod, node) else {
                continue;
            };
            if !pod.node_selector.is_empty() && !pod.selects(facts(&node.name).labels) {
                continue;
            }
            let free = offer(node, 1, &[]);
            let c = candidate.get_or_insert(Candidate {
                product,
                gpus,
                free: 0,
                largest: 0,
            });
            c.free = c.free.saturating_add(free);
            c.largest = c.largest.max(free);
        }
        found.extend(candidate);
    }
    found
}

/// The pod as blocked only by fragmentation, or `None`: some node holds it now (it waits for something
/// else), or no product has its GPUs free even in total (it waits for capacity).
fn verdict(
    pod: &GpuPod,
    candidates: &[Candidate],
    products: &[(String, Vec<usize>)],
) -> Option<BlockedPod> {
    if candidates.iter().any(|c| c.gpus <= c.largest) {
        return None;
    }
    let best = candidates
        .iter()
        .filter(|c| c.gpus <= c.free)
        .max_by_key(|c| (c.free, std::cmp::Reverse(c.product)))?;
    Some(BlockedPod {
        namespace: pod.namespace.clone(),
        name: pod.name.clone(),
        gpus: best.gpus,
        product: products[best.product].0.clone(),
        free_gpus: best.free,
        largest_piece: best.largest,
    })
}

/// The whole GPUs `pod` asks for that `node` would give it: its request of the node's device resources
/// (`amd.com/gpu`, ...), or of `nvidia.com/gpu` where that is one physical GPU. `None` where it asks for
/// none of them (a MIG slice, a time-sliced replica, a DRA claim: not whole GPUs).
pub(crate) fn whole_gpu_request(pod: &GpuPod, node: &NodeInventory) -> Option<u64> {
    if node.has_whole_gpu_devices() {
        return None;
    }
    let asked = if node.device_resources.is_empty() {
        if !gpu_resource_is_whole_gpus(node) {
            return None;
        }
        pod.requests.get(GPU_RESOURCE).copied().unwrap_or(0)
    } else {
        node.device_resources
            .iter()
            .filter_map(|r| pod.requests.get(r))
            .fold(0u64, |s, n| s.saturating_add(*n))
    };
    (asked > 0).then_some(asked)
}
