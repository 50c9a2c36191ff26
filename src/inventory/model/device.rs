//! Devices a node publishes one by one (DRA), and what holds them.

use std::collections::BTreeMap;
use std::fmt;

/// What one device is of its GPU.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DeviceKind {
    /// A whole GPU.
    Whole,
    /// A partition carved from a GPU (a MIG device), with its profile (`1g.10gb`).
    Partition(String),
    /// Another kind the driver names (`vfio`, ...), counted under its own name.
    Other(String),
    /// The driver names no kind.
    #[default]
    Unnamed,
}

/// A ResourceClaim, by namespace and name.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClaimRef {
    /// The claim's namespace.
    pub namespace: String,
    /// The claim's name.
    pub name: String,
}

impl fmt::Display for ClaimRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// A device taint, written in the device's ResourceSlice or put on it by a DeviceTaintRule.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct DeviceTaint {
    /// `key`, e.g. `gpu.nvidia.com/xid`.
    pub key: String,
    /// `value`, empty when unset.
    pub value: String,
    /// `effect`: `NoSchedule`, `NoExecute`, `None`, or one a newer Kubernetes adds.
    pub effect: String,
    /// The DeviceTaintRule that put it there; `None` for a taint the driver wrote in the slice.
    pub rule: Option<String>,
}

impl DeviceTaint {
    /// Whether it keeps new claims off the device (`NoSchedule`, `NoExecute`). `None`, and any effect this
    /// version does not know, only informs: the API says to treat unknown effects like `None`.
    pub fn makes_unavailable(&self) -> bool {
        matches!(self.effect.as_str(), "NoSchedule" | "NoExecute")
    }
}

impl fmt::Display for DeviceTaint {
    /// `key=value:effect`, or `key:effect` without a value (as `kubectl` shows taints), then the rule that
    /// put it there: `key:effect (DeviceTaintRule name)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.value.as_str() {
            "" => write!(f, "{}:{}", self.key, self.effect)?,
            value => write!(f, "{}={value}:{}", self.key, self.effect)?,
        }
        match &self.rule {
            Some(rule) => write!(f, " (DeviceTaintRule {rule})"),
            None => Ok(()),
        }
    }
}

/// One device of a node, with its state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Device {
    /// The driver (`gpu.nvidia.com`).
    pub driver: String,
    /// The pool (NVIDIA's driver names it after the node).
    pub pool: String,
    /// The device's name in its pool (`gpu-0`, `gpu-0-mig-1g10gb-0`).
    pub name: String,
    /// What it is of its GPU.
    pub kind: DeviceKind,
    /// The resource it is counted under (`gpu.nvidia.com/gpu`, `gpu.nvidia.com/mig-1g.10gb`), or the
    /// extended resource a DeviceClass serves it as (`nvidia.com/gpu`, KEP-5004).
    pub resource: String,
    /// The DeviceClass whose `extendedResourceName` is [`Device::resource`], when it is one.
    pub extended_class: Option<String>,
    /// Its product name.
    pub product: Option<String>,
    /// Its memory in MiB.
    pub memory_mib: Option<u64>,
    /// The claims whose allocation names it, sorted.
    pub claims: Vec<ClaimRef>,
    /// A new claim could get it now: in a complete pool, untainted, not allocated, and not taken by an
    /// allocated partition or parent.
    pub free: bool,
    /// Its taints, from its slice and from the DeviceTaintRules that select it (any effect: only
    /// `NoSchedule`/`NoExecute` make it unavailable).
    pub taints: Vec<DeviceTaint>,
    /// Its pool lacks some of its slices.
    pub pool_incomplete: bool,
    /// A device several claims may share (`allowMultipleAllocations`, KEP-5075): what the claims consumed of
    /// its capacity, and the capacity. It is allocated once however many claims share it.
    pub shared: Option<SharedCapacity>,
    /// The driver reports it unhealthy, as `attribute=value` (`health=Unhealthy`): not free.
    pub unhealthy: Option<String>,
}

/// A shareable device's capacity: consumed by its claims, of the total. Numbers in the capacity's unit
/// (bytes for memory).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SharedCapacity {
    /// Capacity name -> what the claims' allocations consumed (`consumedCapacity`, summed).
    pub consumed: BTreeMap<String, i128>,
    /// Capacity name -> the device's capacity.
    pub total: BTreeMap<String, i128>,
    /// What each claim consumed of it, by claim (a claim's part of the device: `allocation::equivalents`).
    pub by_claim: Vec<(ClaimRef, BTreeMap<String, i128>)>,
}

impl Device {
    /// Whether it is a whole GPU.
    pub fn is_whole_gpu(&self) -> bool {
        self.kind == DeviceKind::Whole
    }

    /// Whether some claim holds it.
    pub fn is_allocated(&self) -> bool {
        !self.claims.is_empty()
    }

    /// Whether a taint keeps new claims off it (see [`DeviceTaint::makes_unavailable`]).
    pub fn is_tainted(&self) -> bool {
        self.taints.iter().any(DeviceTaint::makes_unavailable)
    }
}
