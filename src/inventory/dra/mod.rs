//! DRA accounting (pure): ResourceSlices, ResourceClaims and DeviceClasses in, per-node devices, counts and
//! issues out (docs/dra.md).
//!
//! The rules are KEP-5677's (`ResourcePoolStatusRequest`): only a pool's highest generation, and only when all
//! its slices are there; a device is allocated when a claim's allocation names it (`adminAccess` results do
//! not take it; a device shared by several claims counts once); a `NoSchedule`/`NoExecute` taint makes it
//! unavailable. On top of those counts, `free` says what a new claim could still get: a GPU with an
//! allocated MIG partition is not free, nor a partition of an allocated GPU (shared counters or
//! `parentUUID`), so a GPU is never added to its own partitions.

pub mod model;
mod node;
mod pools;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::inventory::model::{ClaimRef, Device, DeviceKind, DeviceTaint};
pub use model::{DeviceRef, DraClaim, DraClass, DraDevice, DraSlice, DraTaint};
pub use node::DraNode;
use pools::Pool;

/// The default DRA driver whose devices are GPUs (NVIDIA's DRA driver for GPUs).
pub const DEFAULT_DRIVER: &str = "gpu.nvidia.com";

/// What the DRA sources hold (all empty on a server without `resource.k8s.io/v1`).
#[derive(Clone, Debug, Default)]
pub struct DraInput<'a> {
    /// The drivers whose devices are GPUs (`--dra-driver`); slices were already filtered by them.
    pub drivers: &'a [String],
    /// ResourceSlices of those drivers.
    pub slices: Vec<&'a DraSlice>,
    /// Every ResourceClaim.
    pub claims: Vec<&'a DraClaim>,
    /// Every DeviceClass.
    pub classes: Vec<&'a DraClass>,
}

/// The DRA side of an inventory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DraView {
    /// Per node name: its devices and what they add up to.
    pub nodes: HashMap<String, DraNode>,
    /// Unallocated claims asking for GPUs: (namespace, name) -> DeviceClass -> devices asked for.
    pub unallocated_gpu_claims: HashMap<(String, String), BTreeMap<String, u64>>,
}

impl DraView {
    /// What a pod waits for on unallocated GPU claims, per DeviceClass (empty: it waits on none).
    pub fn waits_for(&self, namespace: &str, claims: &[String]) -> BTreeMap<String, u64> {
        let mut wanted = BTreeMap::new();
        for claim in claims {
            let key = (namespace.to_owned(), claim.clone());
            for (class, n) in self.unallocated_gpu_claims.get(&key).into_iter().flatten() {
                *wanted.entry(class.clone()).or_insert(0) += n;
            }
        }
        wanted
    }
}

/// What a device is, from the driver's `type` attribute: `gpu` is a whole GPU, `mig` a partition (of its
/// `profile`), any other type its own kind.
pub fn device_kind(device: &DraDevice) -> DeviceKind {
    match device.kind.as_deref() {
        Some("gpu") => DeviceKind::Whole,
        Some("mig") => DeviceKind::Partition(device.profile.clone().unwrap_or_default()),
        Some(kind) => DeviceKind::Other(kind.to_owned()),
        None => DeviceKind::Unnamed,
    }
}

/// The resource a device is counted under: `<driver>/gpu`, `<driver>/mig-<profile>`, `<driver>/<type>` for
/// other types (`vfio`), `<driver>/device` when the driver names no type.
pub fn resource_name(driver: &str, kind: &DeviceKind) -> String {
    match kind {
        DeviceKind::Whole => format!("{driver}/gpu"),
        DeviceKind::Partition(profile) if !profile.is_empty() => format!("{driver}/mig-{profile}"),
        DeviceKind::Partition(_) => format!("{driver}/mig"),
        DeviceKind::Other(kind) => format!("{driver}/{kind}"),
        DeviceKind::Unnamed => format!("{driver}/device"),
    }
}

/// Accounts every pool of `input` onto the node that publishes it.
pub fn resolve(input: &DraInput<'_>) -> DraView {
    let mut holders: HashMap<(&str, &str, &str), Vec<ClaimRef>> = HashMap::new();
    for claim in &input.claims {
        let mut named = BTreeSet::new();
        for device in &claim.devices {
            if named.insert(device) {
                holders
                    .entry((&device.driver, &device.pool, &device.device))
                    .or_default()
                    .push(ClaimRef {
                        namespace: claim.namespace.clone(),
                        name: claim.name.clone(),
                    });
            }
        }
    }
    for claims in holders.values_mut() {
        claims.sort();
    }
    let mut view = DraView::default();
    for pool in pools::pools(input.slices.iter().copied()) {
        let Some(node) = pool.node else { continue };
        let entries = pool_devices(&pool, &holders);
        let node = view.nodes.entry(node.to_owned()).or_default();
        node.add_pool(&pool, entries);
    }
    for node in view.nodes.values_mut() {
        node.finish();
    }
    for claim in input.claims.iter().filter(|c| !c.allocated) {
        let wanted: BTreeMap<String, u64> = claim
            .classes
            .iter()
            .filter(|(class, _)| is_gpu_class(class, input))
            .map(|(class, n)| (class.clone(), *n))
            .collect();
        if !wanted.is_empty() {
            let key = (claim.namespace.clone(), claim.name.clone());
            view.unallocated_gpu_claims.insert(key, wanted);
        }
    }
    view
}

/// Whether a DeviceClass hands out the drivers' devices: its selectors name a driver; a class not (yet) seen
/// counts when it is named after a driver, as NVIDIA's `gpu.nvidia.com` class is.
fn is_gpu_class(class: &str, input: &DraInput<'_>) -> bool {
    match input.classes.iter().find(|c| c.name == class) {
        Some(known) => input.drivers.iter().any(|d| known.selects_driver(d)),
        None => input.drivers.iter().any(|d| d == class),
    }
}

/// Each device of the pool with its state: who holds it, its taints, and whether a new claim could get it.
fn pool_devices(
    pool: &Pool<'_>,
    holders: &HashMap<(&str, &str, &str), Vec<ClaimRef>>,
) -> Vec<Device> {
    let held = |d: &DraDevice| -> Option<Vec<ClaimRef>> {
        holders
            .get(&(pool.driver, pool.name, d.name.as_str()))
            .cloned()
    };
    let allocated: Vec<&DraDevice> = pool
        .devices
        .iter()
        .copied()
        .filter(|d| held(d).is_some())
        .collect();
    // Partitions and parents of allocated devices, by uuid.
    let allocated_uuids: BTreeSet<&str> =
        allocated.iter().filter_map(|d| d.uuid.as_deref()).collect();
    let allocated_parents: BTreeSet<&str> = allocated
        .iter()
        .filter_map(|d| d.parent_uuid.as_deref())
        .collect();
    // What allocated devices consume of each shared counter.
    let mut consumed: BTreeMap<(&str, &str), i128> = BTreeMap::new();
    for device in &allocated {
        for (set, counters) in &device.consumes {
            for (counter, amount) in counters {
                *consumed
                    .entry((set.as_str(), counter.as_str()))
                    .or_insert(0) += amount;
            }
        }
    }
    let counters_left = |d: &DraDevice| {
        d.consumes.iter().all(|(set, counters)| {
            let Some(available) = pool.counters.get(set.as_str()) else {
                // The set's slice is not here (an incomplete pool): nothing to check against.
                return true;
            };
            counters.iter().all(|(counter, amount)| {
                let total = available.get(counter).copied().unwrap_or(0);
                let used = consumed
                    .get(&(set.as_str(), counter.as_str()))
                    .copied()
                    .unwrap_or(0);
                total - used >= *amount
            })
        })
    };
    pool.devices
        .iter()
        .map(|device| {
            let claims = held(device).unwrap_or_default();
            let taken_by_relative = device
                .parent_uuid
                .as_deref()
                .is_some_and(|p| allocated_uuids.contains(p))
                || device
                    .uuid
                    .as_deref()
                    .is_some_and(|u| allocated_parents.contains(u));
            let free = claims.is_empty()
                && device.taints.is_empty()
                && pool.complete()
                && !taken_by_relative
                && counters_left(device);
            let kind = device_kind(device);
            Device {
                driver: pool.driver.to_owned(),
                pool: pool.name.to_owned(),
                name: device.name.clone(),
                resource: resource_name(pool.driver, &kind),
                kind,
                product: device.product.clone(),
                memory_mib: device.memory_mib,
                claims,
                free,
                taints: device
                    .taints
                    .iter()
                    .map(|t| DeviceTaint {
                        key: t.key.clone(),
                        value: t.value.clone(),
                        effect: t.effect.clone(),
                    })
                    .collect(),
                pool_incomplete: !pool.complete(),
            }
        })
        .collect()
}

#[cfg(test)]
mod fixture_tests;
#[cfg(test)]
mod scan_tests;
#[cfg(test)]
mod tests;
