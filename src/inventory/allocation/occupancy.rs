//! Physical GPUs, shared or whole: which GPUs a sharing layer or a GPU-sharing scheduler names and what each
//! holder holds of each ([`shared_gpus`]), and how many of a node's GPUs are whole free, partly free and
//! fully held ([`of_node`]). docs/allocation.md ("Whole, partly free, fully held") has each rule's source.

use std::collections::BTreeMap;

use super::equivalents::{is_reservation, parent_slices, profile_slices, single_strategy_slices};
use super::pod::{GpuPod, PodShare};
use crate::inventory::model::{GpuPart, Holder, Holding, NodeInventory, Occupancy, SharedGpu};
use crate::inventory::resources::{GPU_RESOURCE, SHARED_GPU_RESOURCE};

/// The node's shared GPUs with their parts: the devices its sharing layer lists (from the scanner), each
/// with the parts its pods' device records give them, then one GPU per KAI GPU group its fraction pods name.
/// `holdings`: the node's, with their equivalents (a KAI fraction's part is its share's).
pub fn shared_gpus(
    node: &NodeInventory,
    holders: &[&GpuPod],
    holdings: &[Holding],
) -> Vec<SharedGpu> {
    let mut gpus = node.shared_gpus.clone();
    let mut groups: BTreeMap<&str, Vec<GpuPart>> = BTreeMap::new();
    for pod in holders.iter().filter(|p| !is_reservation(p)) {
        let holder = Holder::Pod {
            namespace: pod.namespace.clone(),
            name: pod.name.clone(),
        };
        for placed in &pod.placed {
            let Some(gpu) = gpus.iter_mut().find(|g| g.id == placed.id) else {
                continue;
            };
            let milli = match (gpu.memory_mib, placed.memory_mib) {
                (Some(of), mib) if of > 0 && mib > 0 => (mib.min(of) * 1000).div_ceil(of),
                _ if placed.cores > 0 => placed.cores.min(100) * 10,
                _ => 1000,
            };
            add_part(
                &mut gpu.parts,
                &holder,
                milli,
                Some(placed.memory_mib).filter(|m| *m > 0),
            );
        }
        if let Some(group) = pod.gpu_group.as_deref() {
            let milli = holdings
                .iter()
                .filter(|h| h.holder == holder)
                .find_map(|h| h.equivalent)
                .map_or(0, |e| e.milli);
            let memory_mib = match pod.share {
                Some(PodShare::MemoryMib(mib)) => Some(mib),
                _ => None,
            };
            add_part(groups.entry(group).or_default(), &holder, milli, memory_mib);
        }
    }
    gpus.extend(groups.into_iter().map(|(group, parts)| SharedGpu {
        id: format!("group/{group}"),
        memory_mib: node.memory_mib,
        slots: None,
        healthy: true,
        parts,
    }));
    for gpu in &mut gpus {
        gpu.parts.sort();
    }
    gpus
}

/// Adds a holder's part of a GPU, to its part there already if it has one (two containers on one card).
fn add_part(parts: &mut Vec<GpuPart>, holder: &Holder, milli: u64, memory_mib: Option<u64>) {
    match parts.iter_mut().find(|p| &p.holder == holder) {
        Some(part) => {
            part.milli = part.milli.saturating_add(milli).min(1000);
            part.memory_mib = match (part.memory_mib, memory_mib) {
                (Some(a), Some(b)) => Some(a.saturating_add(b)),
                (a, b) => a.or(b),
            };
        }
        None => parts.push(GpuPart {
            holder: holder.clone(),
            milli,
            memory_mib,
        }),
    }
}

/// How the node's `count` GPUs stand, after its allocation: the GPUs [`shared_gpus`] names by their parts;
/// the others by the scheme that shares them (see docs/allocation.md for each rule's source).
pub fn of_node(node: &NodeInventory) -> Occupancy {
    let mut occupancy = Occupancy::default();
    for gpu in &node.shared_gpus {
        if gpu.parts.is_empty() {
            occupancy.whole_free += 1;
        } else if gpu.has_room() {
            occupancy.partly_free += 1;
        } else {
            occupancy.fully_held += 1;
        }
    }
    let rest = node.count.saturating_sub(node.shared_gpus.len() as u64);
    if rest > 0 {
        occupancy.add(unnamed(node, rest));
    }
    // A layer's pod whose record names no device (a pod bound before its layer wrote it): it holds parts of
    // GPUs counted whole free; as many of them as it asked devices become partly free (or fully held).
    if node.shared_gpus.iter().any(|g| g.slots.is_some()) {
        for holding in node.holdings.iter().filter(|h| is_unplaced(node, h)) {
            let moved = holding.amount.min(occupancy.whole_free);
            occupancy.whole_free -= moved;
            if holding
                .equivalent
                .is_some_and(|e| e.milli >= 1000 * holding.amount)
            {
                occupancy.fully_held += moved;
            } else {
                occupancy.partly_free += moved;
            }
        }
    }
    occupancy
}

/// Whether a holding of the layer's device resource is by a pod none of the node's shared GPUs names.
fn is_unplaced(node: &NodeInventory, holding: &Holding) -> bool {
    holding.resource == GPU_RESOURCE
        && holding.amount > 0
        && !node
            .shared_gpus
            .iter()
            .any(|g| g.parts.iter().any(|p| p.holder == holding.holder))
}

/// `rest` GPUs the objects do not name one by one.
fn unnamed(node: &NodeInventory, rest: u64) -> Occupancy {
    let held = |resource: &str| node.allocated.get(resource).copied().unwrap_or(0);
    // DRA serves the GPUs: each whole device says.
    if node.has_whole_gpu_devices() {
        let mut occupancy = Occupancy::default();
        for device in node.devices.iter().filter(|d| d.is_whole_gpu()) {
            match (&device.shared, device.is_allocated()) {
                (_, false) => occupancy.whole_free += 1,
                (Some(shared), true) if has_capacity_left(shared) => occupancy.partly_free += 1,
                _ => occupancy.fully_held += 1,
            }
        }
        return occupancy;
    }
    if let Some((slices, of)) = single_strategy_slices(node) {
        // MIG strategy single: every `nvidia.com/gpu` is a slice of the one profile.
        // Its `count` is MIG devices (GPU Feature Discovery's `gpu.count`), not GPUs: the physical GPUs are
        // the slices over the parent's.
        let all = node
            .allocatable
            .get(GPU_RESOURCE)
            .and_then(|a| a.whole())
            .unwrap_or(rest);
        let gpus = all.saturating_mul(slices).div_ceil(of).max(1);
        return by_slices(
            gpus,
            held(GPU_RESOURCE).saturating_mul(slices),
            all.saturating_mul(slices),
            of,
        );
    }
    if let Some(mig) = node.mig.as_ref().filter(|m| !m.devices.is_empty()) {
        let (mut used, mut all) = (0, 0);
        for profile in &mig.devices {
            let slices = profile_slices(&profile.profile).unwrap_or(0);
            let resource = profile.resource.as_deref().unwrap_or_default();
            used = held(resource).saturating_mul(slices).saturating_add(used);
            all = profile.count.saturating_mul(slices).saturating_add(all);
        }
        return by_slices(rest, used, all, parent_slices(node));
    }
    if let Some(sharing) = node.sharing.as_ref()
        && let Some(replicas) = sharing.replicas.filter(|r| *r > 1)
    {
        let resource = if sharing.renamed_resource {
            SHARED_GPU_RESOURCE
        } else {
            GPU_RESOURCE
        };
        return spread(rest, held(resource), replicas);
    }
    // Whole GPUs: one unit, one GPU; a KAI reservation's GPU is its group's (named above), not a whole one.
    let reserved: u64 = node
        .holdings
        .iter()
        .filter(|h| h.resource == GPU_RESOURCE && h.equivalent.is_none())
        .filter(|h| {
            matches!(&h.holder, Holder::Pod { namespace, .. }
            if super::equivalents::KAI_RESERVATION_NAMESPACES.contains(&namespace.as_str()))
        })
        .map(|h| h.amount)
        .sum();
    let mut whole = held(GPU_RESOURCE).saturating_sub(reserved);
    for resource in &node.device_resources {
        whole = whole.saturating_add(held(resource));
    }
    let fully_held = whole.min(rest);
    Occupancy {
        whole_free: rest - fully_held,
        partly_free: 0,
        fully_held,
    }
}

/// Whether a shared DRA device has some of every capacity left.
fn has_capacity_left(shared: &crate::inventory::model::SharedCapacity) -> bool {
    shared
        .total
        .iter()
        .all(|(name, total)| shared.consumed.get(name).copied().unwrap_or(0) < *total)
}

/// Time-slicing and MPS replicas: NVIDIA's device plugin hands out a node's replicas spread evenly over
/// its GPUs (`k8s-device-plugin` `internal/rm/allocate.go`, `distributedAlloc`: the GPU with the fewest
/// replicas allocated first), so `held` replicas sit `held / gpus` to a GPU, the remainder one more.
fn spread(gpus: u64, held: u64, replicas: u64) -> Occupancy {
    let held = held.min(gpus.saturating_mul(replicas));
    let (each, more) = (held / gpus, held % gpus);
    let at = |n: u64, k: u64| -> Occupancy {
        match n {
            0 => Occupancy {
                whole_free: k,
                ..Default::default()
            },
            n if n >= replicas => Occupancy {
                fully_held: k,
                ..Default::default()
            },
            _ => Occupancy {
                partly_free: k,
                ..Default::default()
            },
        }
    };
    let mut occupancy = at(each, gpus - more);
    occupancy.add(at(each.saturating_add(1), more));
    occupancy
}

/// MIG slices the device plugin hands out without saying from which GPU: of `gpus` GPUs of `of` compute
/// slices, `used` of `all` compute slices held. At least `used / of` GPUs are fully held and
/// `(all - used) / of` wholly free; the rest are counted partly free.
fn by_slices(gpus: u64, used: u64, all: u64, of: u64) -> Occupancy {
    let of = of.max(1);
    let fully_held = (used / of).min(gpus);
    let whole_free = (all.saturating_sub(used) / of).min(gpus - fully_held);
    Occupancy {
        whole_free,
        partly_free: gpus - fully_held - whole_free,
        fully_held,
    }
}

#[cfg(test)]
#[path = "occupancy_tests.rs"]
mod tests;
