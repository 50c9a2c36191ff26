//! DRA accounting (pure): ResourceSlices, ResourceClaims and DeviceClasses in, per-node devices, counts and
//! issues out (docs/dra.md).
//!
//! The rules are KEP-5677's (`ResourcePoolStatusRequest`): only a pool's highest generation, and only when all
//! its slices are there; a device is allocated when a claim's allocation names it (`adminAccess` results do
//! not take it; a device shared by several claims counts once); a `NoSchedule`/`NoExecute` taint makes it
//! unavailable. On top of those counts, `free` says what a new claim could still get: a GPU with an
//! allocated MIG partition is not free, nor a partition of an allocated GPU (shared counters or
//! `parentUUID`), so a GPU is never added to its own partitions.

mod counters;
mod dra_node;
pub mod model;
mod pools;
pub mod taint_rules;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::inventory::model::{ClaimRef, Device, DeviceKind, DeviceTaint, SharedCapacity};
use crate::inventory::vendors::dra_drivers::driver_rules;
use counters::Counters;
pub use dra_node::DraNode;
pub use model::{DeviceRef, DraClaim, DraClass, DraDevice, DraSlice, DraTaint};
use pools::Pool;
pub use taint_rules::DraTaintRule;

/// NVIDIA's DRA driver for GPUs.
pub const DEFAULT_DRIVER: &str = "gpu.nvidia.com";
/// `--dra-driver`'s default: every GPU and accelerator driver `vendors` knows (a test holds the two equal).
pub const DEFAULT_DRIVERS: &str =
    "gpu.nvidia.com,gpu.amd.com,gpu.intel.com,gaudi.intel.com,neuron.aws.com,gpu.example.com";

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
    /// Every DeviceTaintRule (empty where the server serves none).
    pub taint_rules: Vec<&'a DraTaintRule>,
}

/// The DRA side of an inventory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DraView {
    /// Per node name: its devices and what they add up to.
    pub nodes: HashMap<String, DraNode>,
    /// Unallocated claims asking for GPUs: (namespace, name) -> DeviceClass -> devices asked for.
    pub unallocated_gpu_claims: HashMap<(String, String), BTreeMap<String, u64>>,
    /// The extended resources DRA serves (KEP-5004): resource name -> the DeviceClass whose devices a pod
    /// asking for it gets, for the GPU classes (`extendedResourceName`, and the implicit
    /// `deviceclass.resource.kubernetes.io/<class>`).
    pub extended_resources: BTreeMap<String, String>,
    /// Pods whose extended-resource requests a claim the scheduler made satisfies: namespace -> pod -> the
    /// claim (from the claim's annotation and owner; the pod's own `extendedResourceClaimStatus` says the
    /// same once written).
    pub extended_claims: HashMap<String, HashMap<String, String>>,
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

    /// Whether `resource` of a pod in `namespace` named `pod` is met by a DRA claim (KEP-5004) rather than
    /// by the device plugin: the pod has an extended-resource claim (`claim`, from its status, or one the
    /// DRA sources know), and DRA serves `resource`. Such a request is counted by the claim's devices.
    pub fn claim_serves(
        &self,
        namespace: &str,
        pod: &str,
        claim: Option<&str>,
        resource: &str,
    ) -> bool {
        // The served resource first: most requests are not DRA-backed, and that answer is one lookup.
        self.extended_resources.contains_key(resource)
            && (claim.is_some()
                || self
                    .extended_claims
                    .get(namespace)
                    .is_some_and(|pods| pods.contains_key(pod)))
    }
}

/// What a device is, by its driver's rules (`vendors::dra_drivers`): a whole device (`gpu` for NVIDIA, `amdgpu`
/// for AMD, any device of a driver that publishes no `type`), a partition of its `profile` (`mig`,
/// `amdgpu-partition`), or any other type its own kind.
pub fn device_kind(driver: &str, device: &DraDevice) -> DeviceKind {
    let rules = driver_rules(driver);
    match device.kind.as_deref() {
        Some(kind) if rules.whole_types.contains(&kind) => DeviceKind::Whole,
        Some(kind) if rules.partition_types.contains(&kind) => {
            DeviceKind::Partition(device.profile.clone().unwrap_or_default())
        }
        Some(kind) => DeviceKind::Other(kind.to_owned()),
        None if rules.untyped_is_whole => DeviceKind::Whole,
        None => DeviceKind::Unnamed,
    }
}

/// The resource a device is counted under: `<driver>/gpu`, `<driver>/mig-<profile>` (NVIDIA and drivers of
/// no known vendor) or `<driver>/<profile>` (AMD's `gpu.amd.com/cpx_nps4`), `<driver>/<type>` for other
/// types (`vfio`), `<driver>/device` when the driver names no type.
pub fn resource_name(driver: &str, kind: &DeviceKind) -> String {
    let prefix = driver_rules(driver).partition_prefix;
    match kind {
        DeviceKind::Whole => format!("{driver}/gpu"),
        DeviceKind::Partition(profile) if !profile.is_empty() => {
            format!("{driver}/{prefix}{profile}")
        }
        DeviceKind::Partition(_) if prefix.is_empty() => format!("{driver}/partition"),
        DeviceKind::Partition(_) => format!("{driver}/{}", prefix.trim_end_matches('-')),
        DeviceKind::Other(kind) => format!("{driver}/{kind}"),
        DeviceKind::Unnamed => format!("{driver}/device"),
    }
}

/// Accounts every pool of `input` onto the node that publishes it.
pub fn resolve(input: &DraInput<'_>) -> DraView {
    let holders = holders(input);
    let consumed = consumed(input);
    let mut view = DraView::default();
    let gpu_classes = gpu_classes(input);
    for class in &gpu_classes {
        for resource in class.extended_resources() {
            view.extended_resources
                .entry(resource)
                .or_insert_with(|| class.name.clone());
        }
    }
    for claim in &input.claims {
        if let Some(pod) = &claim.extended_for_pod {
            view.extended_claims
                .entry(claim.namespace.clone())
                .or_default()
                .insert(pod.clone(), claim.name.clone());
        }
    }
    let extended = extended_classes(input, &gpu_classes);
    let rules = Rules {
        taints: &input.taint_rules,
        extended: &extended,
    };
    for pool in pools::pools(input.slices.iter().copied()) {
        let Some(node) = pool.node else { continue };
        let (entries, fit) = pool_devices(&pool, &holders, &consumed, &rules);
        let node = view.nodes.entry(node.to_owned()).or_default();
        node.add_pool(&pool, entries, fit);
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

/// Per (driver, pool, device): the claims allocated it, sorted, each once.
fn holders<'c>(input: &'c DraInput<'_>) -> Holders<'c> {
    let mut holders: Holders<'c> = HashMap::new();
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
    holders
}

/// What the claims consumed of shareable devices' capacity, summed over the claims sharing each, and each
/// claim's own.
fn consumed<'c>(input: &'c DraInput<'_>) -> Consumed<'c> {
    let mut consumed: Consumed<'c> = HashMap::new();
    for claim in &input.claims {
        for (device, amounts) in &claim.consumed {
            let (sum, by_claim) = consumed
                .entry((&device.driver, &device.pool, &device.device))
                .or_default();
            for (name, amount) in amounts {
                *sum.entry(name.clone()).or_insert(0) += amount;
            }
            by_claim.push((
                ClaimRef {
                    namespace: claim.namespace.clone(),
                    name: claim.name.clone(),
                },
                amounts.clone(),
            ));
        }
    }
    consumed
}

/// The classes that hand out the drivers' devices, sorted by name.
fn gpu_classes<'c>(input: &DraInput<'c>) -> Vec<&'c DraClass> {
    let mut gpu_classes: Vec<&DraClass> = input
        .classes
        .iter()
        .copied()
        .filter(|c| input.drivers.iter().any(|d| c.selects_driver(d)))
        .collect();
    gpu_classes.sort_by(|a, b| a.name.cmp(&b.name));
    gpu_classes
}

/// The GPU classes with an `extendedResourceName`, each class's comparisons read once per scan, not once
/// per device.
fn extended_classes<'c>(
    input: &'c DraInput<'_>,
    gpu_classes: &[&'c DraClass],
) -> Vec<ExtendedClass<'c>> {
    gpu_classes
        .iter()
        .filter_map(|class| {
            Some(ExtendedClass {
                class: &class.name,
                resource: class.extended_resource.as_deref()?,
                drivers: input
                    .drivers
                    .iter()
                    .filter(|d| class.selects_driver(d))
                    .map(String::as_str)
                    .collect(),
                types: class.compared_types(),
            })
        })
        .collect()
}

/// Whether a DeviceClass hands out the drivers' devices: its selectors name a driver; a class not (yet) seen
/// counts when it is named after a driver, as NVIDIA's `gpu.nvidia.com` class is.
fn is_gpu_class(class: &str, input: &DraInput<'_>) -> bool {
    match input.classes.iter().find(|c| c.name == class) {
        Some(known) => input.drivers.iter().any(|d| known.selects_driver(d)),
        None => input.drivers.iter().any(|d| d == class),
    }
}

/// Per (driver, pool, device): the claims allocated it.
type Holders<'c> = HashMap<(&'c str, &'c str, &'c str), Vec<ClaimRef>>;

/// Per (driver, pool, device): capacity name -> what the claims sharing it consumed, and what each claim did.
type Consumed<'c> = HashMap<
    (&'c str, &'c str, &'c str),
    (
        BTreeMap<String, i128>,
        Vec<(ClaimRef, BTreeMap<String, i128>)>,
    ),
>;

/// What applies to devices besides their slice: the DeviceTaintRules, and the GPU classes (sorted by name)
/// whose `extendedResourceName` a device is counted under.
struct Rules<'r> {
    taints: &'r [&'r DraTaintRule],
    extended: &'r [ExtendedClass<'r>],
}

/// A GPU class with an `extendedResourceName`, as [`DraClass::selects_device`] reads it: the drivers it
/// names and the `type`s it compares (none: every device of those drivers).
struct ExtendedClass<'c> {
    class: &'c str,
    resource: &'c str,
    drivers: Vec<&'c str>,
    types: Vec<&'c str>,
}

impl ExtendedClass<'_> {
    fn selects(&self, driver: &str, kind: Option<&str>) -> bool {
        self.drivers.contains(&driver) && model::type_matches(&self.types, kind)
    }
}

impl Rules<'_> {
    /// The device's taints: its slice's, then those of the rules that select it.
    fn taints(&self, driver: &str, pool: &str, device: &DraDevice) -> Vec<DeviceTaint> {
        let from_slice = device.taints.iter().map(|t| (t, None));
        let from_rules = self
            .taints
            .iter()
            .filter(|r| r.selects(driver, pool, &device.name))
            .map(|r| (&r.taint, Some(r.name.clone())));
        from_slice
            .chain(from_rules)
            .map(|(t, rule)| DeviceTaint {
                key: t.key.clone(),
                value: t.value.clone(),
                effect: t.effect.clone(),
                rule,
            })
            .collect()
    }

    /// The resource a device is counted under: the `extendedResourceName` of the first GPU class that
    /// selects it and has one (KEP-5004: pods ask for it under that name), else [`resource_name`].
    fn resource(
        &self,
        driver: &str,
        device: &DraDevice,
        kind: &DeviceKind,
    ) -> (String, Option<String>) {
        match self
            .extended
            .iter()
            .find(|c| c.selects(driver, device.kind.as_deref()))
        {
            Some(c) => (c.resource.to_owned(), Some(c.class.to_owned())),
            None => (resource_name(driver, kind), None),
        }
    }
}

/// Each device of the pool with its state (who holds it, its taints, whether a new claim could get it), and
/// how many more of each partitionable resource its shared counters still fit.
fn pool_devices(
    pool: &Pool<'_>,
    holders: &Holders<'_>,
    consumed: &Consumed<'_>,
    rules: &Rules<'_>,
) -> (Vec<Device>, BTreeMap<String, u64>) {
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
    let taken = Taken {
        uuids: allocated.iter().filter_map(|d| d.uuid.as_deref()).collect(),
        parents: allocated
            .iter()
            .filter_map(|d| d.parent_uuid.as_deref())
            .collect(),
    };
    let counters = Counters::of(pool, allocated.iter().copied());
    let devices: Vec<Device> = pool
        .devices
        .iter()
        .map(|device| {
            let claims = held(device).unwrap_or_default();
            pool_device(pool, device, claims, &taken, &counters, consumed, rules)
        })
        .collect();
    let candidates = pool
        .devices
        .iter()
        .zip(&devices)
        .filter(|(raw, device)| device.free && !raw.consumes.is_empty())
        .map(|(raw, device)| (*raw, device.resource.as_str()));
    let fit = counters.still_fit(candidates);
    (devices, fit)
}

/// The uuids of a pool's allocated devices and of their parents: their partitions and parents are taken.
struct Taken<'p> {
    uuids: BTreeSet<&'p str>,
    parents: BTreeSet<&'p str>,
}

/// One device of the pool with its state: held by `claims`; free when nothing holds or taints it, it is
/// healthy, its pool complete, no relative of it taken and its counters fit it.
fn pool_device(
    pool: &Pool<'_>,
    device: &DraDevice,
    claims: Vec<ClaimRef>,
    taken: &Taken<'_>,
    counters: &Counters<'_>,
    consumed: &Consumed<'_>,
    rules: &Rules<'_>,
) -> Device {
    let taints = rules.taints(pool.driver, pool.name, device);
    let taken_by_relative = device
        .parent_uuid
        .as_deref()
        .is_some_and(|p| taken.uuids.contains(p))
        || device
            .uuid
            .as_deref()
            .is_some_and(|u| taken.parents.contains(u));
    let free = claims.is_empty()
        && !taints.iter().any(DeviceTaint::makes_unavailable)
        && device.unhealthy.is_none()
        && pool.complete()
        && !taken_by_relative
        && counters.fits(device);
    let kind = device_kind(pool.driver, device);
    let (resource, extended_class) = rules.resource(pool.driver, device, &kind);
    let shared = device.shareable.then(|| {
        let (consumed, mut by_claim) = consumed
            .get(&(pool.driver, pool.name, device.name.as_str()))
            .cloned()
            .unwrap_or_default();
        by_claim.sort();
        SharedCapacity {
            consumed,
            total: device.capacity.clone(),
            by_claim,
        }
    });
    Device {
        driver: pool.driver.to_owned(),
        pool: pool.name.to_owned(),
        name: device.name.clone(),
        resource,
        extended_class,
        kind,
        product: device.product.clone(),
        memory_mib: device.memory_mib,
        claims,
        free,
        taints,
        pool_incomplete: !pool.complete(),
        shared,
        unhealthy: device.unhealthy.clone(),
    }
}

#[cfg(test)]
mod fixture_tests;
#[cfg(test)]
mod rules_tests;
#[cfg(test)]
mod scan_tests;
#[cfg(test)]
mod tests;
