//! One node's DRA devices added up: counts per resource, the GPUs it has, and what is wrong with them.

use std::collections::{BTreeMap, BTreeSet};

use super::model::DraDevice;
use super::pools::Pool;
use crate::inventory::model::{Device, DeviceKind, Issue, IssueReason};
use crate::inventory::text::capped_list;

/// The DRA side of one node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DraNode {
    /// Every device of the node's current pools, sorted by (driver, pool, name).
    pub devices: Vec<Device>,
    /// Devices per resource (`gpu.nvidia.com/gpu`, `gpu.nvidia.com/mig-1g.10gb`).
    pub capacity: BTreeMap<String, u64>,
    /// Devices per resource a claim could be given: in a complete pool and untainted.
    pub allocatable: BTreeMap<String, u64>,
    /// Devices per resource a claim's allocation names.
    pub allocated: BTreeMap<String, u64>,
    /// Devices per resource free now (see [`Device::free`]).
    pub free: BTreeMap<String, u64>,
    /// Physical GPUs: whole-GPU devices, plus the parents of MIG devices whose GPU is not itself listed.
    pub gpus: u64,
    /// The GPUs' most common `productName` (ties: the first in order).
    pub product: Option<String>,
    /// The largest `memory` of a whole-GPU device, in MiB.
    pub memory_mib: Option<u64>,
    /// `DraPoolIncomplete` and `GpuDeviceTainted`.
    pub issues: Vec<Issue>,
    /// The extended resources DRA serves here (KEP-5004): resource -> its DeviceClass.
    pub extended: BTreeMap<String, String>,
    /// Partitionable devices (shared counters): how many more of each resource the counters that remain
    /// still fit, each resource on its own (they are alternatives: "3 x 1g.10gb or 1 x 3g.40gb").
    pub still_fit: BTreeMap<String, u64>,
    /// The drivers whose pools name the node, devices or none (a driver that found no device still
    /// publishes its pool).
    pub drivers: BTreeSet<String>,
    /// Whole-GPU device names per pool, to count MIG parents not listed as GPUs (uuid -> listed).
    gpu_uuids: BTreeSet<String>,
    mig_parents: BTreeSet<String>,
    products: BTreeMap<String, u64>,
    incomplete: Vec<String>,
}

impl DraNode {
    /// Adds one pool's devices (`entries` are `pool.devices` with their state, in the same order).
    pub(super) fn add_pool(
        &mut self,
        pool: &Pool<'_>,
        entries: Vec<Device>,
        still_fit: BTreeMap<String, u64>,
    ) {
        self.drivers.insert(pool.driver.to_owned());
        for (resource, n) in still_fit {
            *self.still_fit.entry(resource).or_insert(0) += n;
        }
        if !pool.complete() {
            self.incomplete.push(format!(
                "{}/{} generation {} has {} of {} slices",
                pool.driver, pool.name, pool.generation, pool.slices, pool.expected_slices
            ));
        }
        for (device, entry) in pool.devices.iter().zip(entries) {
            self.count_device(device, &entry);
            self.devices.push(entry);
        }
    }

    fn count_device(&mut self, device: &DraDevice, entry: &Device) {
        let bump = |map: &mut BTreeMap<String, u64>, yes: bool| {
            let n = map.entry(entry.resource.clone()).or_insert(0);
            *n += u64::from(yes);
        };
        bump(&mut self.capacity, true);
        bump(
            &mut self.allocatable,
            !entry.pool_incomplete && !entry.is_tainted() && entry.unhealthy.is_none(),
        );
        if let Some(class) = &entry.extended_class {
            self.extended.insert(entry.resource.clone(), class.clone());
        }
        bump(&mut self.allocated, entry.is_allocated());
        bump(&mut self.free, entry.free);
        let whole = entry.is_whole_gpu();
        let partition = matches!(entry.kind, DeviceKind::Partition(_));
        if whole {
            self.gpus += 1;
            self.memory_mib = self.memory_mib.max(device.memory_mib);
            if let Some(uuid) = &device.uuid {
                self.gpu_uuids.insert(uuid.clone());
            }
        } else if partition && let Some(parent) = &device.parent_uuid {
            self.mig_parents.insert(parent.clone());
        }
        if (whole || partition)
            && let Some(product) = &device.product
        {
            *self.products.entry(product.clone()).or_insert(0) += 1;
        }
    }

    /// Counts MIG parents, picks the product and writes the issues, once every pool is in.
    pub(super) fn finish(&mut self) {
        self.devices
            .sort_by(|a, b| (&a.driver, &a.pool, &a.name).cmp(&(&b.driver, &b.pool, &b.name)));
        let unlisted_parents = self.mig_parents.difference(&self.gpu_uuids).count() as u64;
        self.gpus += unlisted_parents;
        self.product = self
            .products
            .iter()
            .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)))
            .map(|(p, _)| p.clone());
        if !self.incomplete.is_empty() {
            self.issues.push(Issue::new(
                IssueReason::DraPoolIncomplete,
                format!(
                    "{}: its devices are not counted as free until every slice is published (the driver is \
                     rewriting the pool, or a slice was lost: check the DRA driver's kubelet plugin on this node)",
                    capped_list(self.incomplete.iter().map(String::as_str))
                ),
            ));
        }
        let unhealthy: Vec<String> = self
            .devices
            .iter()
            .filter_map(|d| {
                Some(format!(
                    "{} ({}, {})",
                    d.name,
                    d.unhealthy.as_ref()?,
                    d.driver
                ))
            })
            .collect();
        if !unhealthy.is_empty() {
            self.issues.push(Issue::new(
                IssueReason::GpusUnhealthy,
                format!(
                    "DRA device(s) {} reported unhealthy by their driver: not counted as free (check the \
                     device's health, e.g. the driver's log and the node's kernel log)",
                    capped_list(unhealthy.iter().map(String::as_str))
                ),
            ));
        }
        let tainted: Vec<String> = self
            .devices
            .iter()
            .filter(|d| d.is_tainted())
            .map(|d| {
                let taints: Vec<String> = d
                    .taints
                    .iter()
                    .filter(|t| t.makes_unavailable())
                    .map(ToString::to_string)
                    .collect();
                format!("{} ({})", d.name, taints.join(", "))
            })
            .collect();
        if !tainted.is_empty() {
            self.issues.push(Issue::new(
                IssueReason::GpuDeviceTainted,
                format!(
                    "device(s) {} tainted: no new claim is allocated them (NoExecute also evicts their pods); \
                     a gpu.nvidia.com/xid or gpu-lost taint comes from NVIDIA's health monitor (check dmesg for \
                     the Xid and the GPU's health); a DeviceTaintRule's taint goes when the rule is deleted \
                     (kubectl get devicetaintrules)",
                    capped_list(tainted.iter().map(String::as_str))
                ),
            ));
        }
    }

    /// Whether the node's GPUs are served by DRA (it publishes whole-GPU or MIG devices).
    pub fn serves_gpus(&self) -> bool {
        self.gpus > 0
    }
}
