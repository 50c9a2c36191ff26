//! One GPU node as the core sees it.

use std::collections::BTreeMap;
use std::fmt;

use super::amount::Amount;
use super::device::Device;
use super::holding::Holding;
use super::issue::{Issue, IssueReason};
use super::resource_map::ResourceMap;
use super::shared_gpu::{Occupancy, SharedGpu};
use super::topology::NodeTopology;
use super::vendor::Vendor;

/// What described a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Source {
    /// A cloud provider's GPU labels.
    Cloud,
    /// The device plugin's extended resources.
    DevicePlugin,
    /// DRA devices (ResourceSlices).
    Dra,
    /// GPU Feature Discovery, NFD or other vendor node labels.
    Labels,
}

impl Source {
    /// Every source, in the order `sources[]` lists them.
    pub const ALL: [Source; 4] = [
        Source::Cloud,
        Source::DevicePlugin,
        Source::Dra,
        Source::Labels,
    ];

    /// The name the API shows (`sources[]`).
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Cloud => "cloud",
            Source::DevicePlugin => "device-plugin",
            Source::Dra => "dra",
            Source::Labels => "labels",
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Tests compare a source with its API name.
impl PartialEq<&str> for Source {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// GPU sharing (time-slicing or MPS) as the device plugin advertises it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sharing {
    /// The strategy as labelled: `time-slicing`, `mps` or `none`.
    pub strategy: Option<String>,
    /// How many pods can share one GPU.
    pub replicas: Option<u64>,
    /// The shared GPUs are advertised under a renamed resource (`nvidia.com/gpu.shared`).
    pub renamed_resource: bool,
}

/// A node's MIG (Multi-Instance GPU) configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Mig {
    /// `single`, `mixed` or `none`, as labelled.
    pub strategy: Option<String>,
    /// The partition layout requested for the node.
    pub config: Option<String>,
    /// Where applying it stands: `pending`, `rebooting`, `success` or `failed`.
    pub config_state: Option<String>,
    /// What `count` means on this node, when it is not physical GPUs.
    pub count_meaning: Option<String>,
    /// Partitions per profile, sorted by profile.
    pub devices: Vec<MigProfile>,
}

/// The partitions of one profile.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MigProfile {
    /// The profile, e.g. `1g.10gb`.
    pub profile: String,
    /// How many.
    pub count: u64,
    /// Memory of one, in MiB.
    pub memory_mib: Option<u64>,
    /// The extended resource they are scheduled as.
    pub resource: Option<String>,
}

/// One GPU node: its facts, devices, holdings and issues.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeInventory {
    /// The node's name.
    pub name: String,
    /// Who makes its accelerators, as the scanner attributed them (`crate::inventory::vendors`); `None` on an
    /// entry no scanner made, which reads as the first editions did (NVIDIA, or its DRA driver's vendor).
    pub vendor: Option<Vendor>,
    /// The extended resources of which one unit is one physical device on this node, for vendors other than
    /// NVIDIA (whose whole-GPU rule is `allocation::free_whole_gpus`'s own): `amd.com/gpu`,
    /// `habana.ai/gaudi`. Empty where no such resource is advertised, or where units are shares or partitions.
    pub device_resources: Vec<String>,
    /// The node's `Ready` condition is `True`.
    pub ready: bool,
    /// The GPU model, when some source names it.
    pub product: Option<String>,
    /// The product is the DRA devices' (which spell it with spaces where labels use dashes).
    pub product_from_dra: bool,
    /// GPUs (docs/reading-nodes.md says what counts).
    pub count: u64,
    /// Memory of one GPU in MiB.
    pub memory_mib: Option<u64>,
    /// The GPU operator's workload config (`container`, `vm-passthrough`, `vm-vgpu`).
    pub workload_config: Option<String>,
    /// GPU sharing, when configured.
    pub sharing: Option<Sharing>,
    /// MIG configuration, when the node has one.
    pub mig: Option<Mig>,
    /// The node's GPU resources' capacity (DRA devices counted per resource).
    pub capacity: ResourceMap<Amount>,
    /// The node's GPU resources' allocatable.
    pub allocatable: ResourceMap<Amount>,
    /// What is held, per resource (every allocatable resource listed, 0 when nothing holds it).
    pub allocated: ResourceMap<u64>,
    /// `allocatable - allocated` per resource, never below 0.
    pub free: ResourceMap<u64>,
    /// Who holds what: pods by their requests, claims by their devices. Sorted.
    pub holdings: Vec<Holding>,
    /// The node is cordoned.
    pub unschedulable: bool,
    /// What described the node, sorted.
    pub sources: Vec<Source>,
    /// Where `product`, `count` or `memoryMiB` came from when not from their own label, in words.
    pub derived_from: ResourceMap<String>,
    /// How odd values were read, in words.
    pub notes: Vec<String>,
    /// What is wrong; empty when healthy.
    pub issues: Vec<Issue>,
    /// The node's DRA devices, sorted by (driver, pool, name).
    pub devices: Vec<Device>,
    /// The extended resources DRA serves on this node (KEP-5004), each with the DeviceClass that maps it:
    /// `nvidia.com/gpu` -> `gpu.nvidia.com`. A resource not named here is the device plugin's.
    pub dra_extended: BTreeMap<String, String>,
    /// Partitionable DRA devices (shared counters): how many more of each resource the node's remaining
    /// counters fit, each resource on its own, never summed (`gpu.nvidia.com/mig-1g.10gb: 3` or
    /// `gpu.nvidia.com/mig-3g.40gb: 1`). Empty where no pool has shared counters.
    pub still_fit: BTreeMap<String, u64>,
    /// Where the node sits: its NVLink partition and network domains, from its labels.
    pub topology: NodeTopology,
    /// The node's `NoSchedule` and `NoExecute` taints, `(key, value, effect)`: a gang's pods land only where
    /// they tolerate them (`inventory::topology::gang`).
    pub blocking_taints: Vec<(String, String, String)>,
    /// The physical GPUs a sharing layer lists (the scanner, with no parts) or a GPU-sharing scheduler's
    /// groups name (the allocation), with what each holder holds of each (the allocation). Empty elsewhere.
    pub shared_gpus: Vec<SharedGpu>,
    /// How many of its GPUs are whole free, partly free and fully held (`allocation::occupancy`).
    pub occupancy: Occupancy,
}

impl NodeInventory {
    /// Whether the node has any issue.
    pub fn has_issues(&self) -> bool {
        !self.issues.is_empty()
    }

    /// The node's issue of `reason`, if it has one.
    pub fn issue(&self, reason: IssueReason) -> Option<&Issue> {
        self.issues.iter().find(|i| i.reason == reason)
    }

    /// Whether DRA serves whole GPUs here: the node publishes whole-GPU devices.
    pub fn has_whole_gpu_devices(&self) -> bool {
        self.devices.iter().any(Device::is_whole_gpu)
    }
}
