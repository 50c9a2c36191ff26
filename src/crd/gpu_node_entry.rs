//! One GPU node as the operator reports it: the entry of `GpuInventory.status.nodes[]`, the ConfigMap value,
//! and the body of a `GpuNode` status.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One GPU node as the scanner sees it.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GpuNodeEntry {
    /// The node's name.
    pub name: String,
    /// The node's `Ready` condition is `True`.
    pub ready: bool,
    /// Who makes its accelerators (`nvidia`, `amd`, `intel`, `habana`, `aws`, `google`, `example`); absent
    /// when no rule attributes them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor: Option<String>,
    /// The GPU model: `nvidia.com/gpu.product`, else a MIG profile's product label, else a cloud-provider
    /// label (see `derivedFrom`); null when no source names it (printed `<unlabeled>`).
    pub product: Option<String>,
    /// `nvidia.com/gpu.count` as GPU Feature Discovery writes it (MIG devices under MIG strategy `single`),
    /// else a cloud-provider count label, else the device plugin's `nvidia.com/gpu` capacity; 0 when none.
    pub count: u64,
    /// Memory of one GPU in MiB (`nvidia.com/gpu.memory`, else a cloud-provider label); null when unknown.
    #[serde(rename = "memoryMiB")]
    pub memory_mib: Option<u64>,
    /// `nvidia.com/gpu.workload.config` (`container`, `vm-passthrough`, `vm-vgpu`); null when absent.
    pub workload_config: Option<String>,
    /// GPU sharing (time-slicing or MPS), when configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharing: Option<GpuSharing>,
    /// MIG configuration, when the node has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mig: Option<MigInfo>,
    /// The node's `nvidia.com/*` capacity (quantities as the API server prints them).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub capacity: BTreeMap<String, String>,
    /// The node's `nvidia.com/*` allocatable resources.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub allocatable: BTreeMap<String, String>,
    /// What the pods on this node hold, per resource (the scheduler's effective request of every pod bound
    /// here that has not finished). Every allocatable resource is listed, 0 when nothing holds it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub allocated: BTreeMap<String, u64>,
    /// `allocatable - allocated` per resource, never below 0 (more allocated is an `Overcommitted` issue).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub free: BTreeMap<String, u64>,
    /// The node is cordoned (`spec.unschedulable`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unschedulable: bool,
    /// What described this node, sorted: `cloud` (a cloud provider's GPU labels), `device-plugin`
    /// (`nvidia.com/*` extended resources), `dra` (DRA devices), `labels` (GPU Feature Discovery, NFD or other
    /// `nvidia.com/*` labels).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
    /// Where `product`, `count` or `memoryMiB` came from when not from their own GPU Feature Discovery label
    /// (`nvidia.com/gpu.product`, `.count`, `.memory` in MiB), e.g. `product: cloud.google.com/gke-accelerator`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub derived_from: BTreeMap<String, String>,
    /// How odd values were read (memory in bytes, hand-made or empty labels, a partial object), in words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// What is wrong with this node; empty when healthy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub issues: Vec<NodeIssue>,
    /// The node's DRA devices one by one. In the node's `GpuNode` and in `scan` (`-o wide|json|yaml`); the
    /// GpuInventory's `nodes[]` and the ConfigMap keep the counts (`capacity`, `allocated`, `free`), since 8
    /// devices a node on thousands of nodes would not fit one object.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<DraDeviceEntry>,
    /// The extended resources DRA serves on this node (KEP-5004), each with the DeviceClass whose
    /// `extendedResourceName` it is: a pod asking for `nvidia.com/gpu` gets a claim for that class's devices
    /// here. A resource in `capacity` not named here is the device plugin's.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub dra_extended_resources: BTreeMap<String, String>,
    /// Partitionable DRA devices (shared counters, KEP-4815): how many more of each resource the counters
    /// that remain still fit, each on its own: alternatives, never to be added up (`{"gpu.nvidia.com/mig-1g.10gb":
    /// 3, "gpu.nvidia.com/mig-3g.40gb": 1}` reads "3 x 1g.10gb or 1 x 3g.40gb still fit").
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub still_fit: BTreeMap<String, u64>,
    /// Where the node sits: level (`nvlink`, or a network level's node label key) -> domain.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub topology: BTreeMap<String, String>,
    /// The pods and claims whose held units sat idle through the utilization window (docs/utilization.md),
    /// sorted; absent when none did, or when the activity is not read or not known. In the node's `GpuNode`
    /// and in `scan`; the GpuInventory sums them per namespace (`namespaces[].idle`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub idle: Vec<super::utilization::IdleEntry>,
    /// What the pods and claims on the node hold, in physical GPUs: a decimal with at most three decimals
    /// (docs/allocation.md, "GPU-equivalents"). In the node's `GpuNode` and in `scan`; absent when no holding
    /// has an equivalent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_equivalents: Option<String>,
    /// Each pod's and claim's part of a physical GPU on the node, by its sharing scheme's rule, sorted. In the
    /// node's `GpuNode` and in `scan`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub holders: Vec<HolderEntry>,
}

/// One pod's or claim's part of the node's GPUs.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HolderEntry {
    /// `Pod` or `ResourceClaim`.
    pub kind: String,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The resource it holds the share by (`nvidia.com/gpu`, `nvidia.com/mig-3g.40gb`, a claim's device's).
    pub resource: String,
    /// How much of that resource (a pod's effective request; 1 device for a claim).
    pub amount: u64,
    /// What that is of physical GPUs: a decimal with at most three decimals.
    pub gpu_equivalents: String,
    /// The rule, in words (`3/7 of the GPU's MIG compute slices`).
    pub basis: String,
}

/// One DRA device of a node, as `scan` lists it.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DraDeviceEntry {
    /// The driver (`gpu.nvidia.com`).
    pub driver: String,
    /// The pool (NVIDIA's driver names it after the node).
    pub pool: String,
    /// The device's name in its pool (`gpu-0`, `gpu-0-mig-1g10gb-0`).
    pub name: String,
    /// The resource it is counted under (`gpu.nvidia.com/gpu`, `gpu.nvidia.com/mig-1g.10gb`), or the extended
    /// resource its DeviceClass serves it as (`nvidia.com/gpu`, KEP-5004).
    pub resource: String,
    /// Attribute `productName`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub product: Option<String>,
    /// Capacity `memory` in MiB.
    #[serde(default, rename = "memoryMiB", skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u64>,
    /// A ResourceClaim's allocation names it (`namespace/name` of the claims).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allocated_to: Vec<String>,
    /// Free: in a complete pool, untainted, not allocated, and not taken by an allocated partition or
    /// parent (shared counters, `parentUUID`).
    pub free: bool,
    /// Its taints as `key=value:effect`, with `(DeviceTaintRule <name>)` for a rule's; only `NoSchedule` and
    /// `NoExecute` make it unavailable (`None` is shown for information).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<String>,
    /// The device's pool is incomplete (not all its slices are there).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pool_incomplete: bool,
    /// A device several claims may share (`allowMultipleAllocations`, KEP-5075): its capacity, as quantities
    /// (`memory: 80Gi`). Counted once in `allocated` however many claims share it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub capacity: BTreeMap<String, String>,
    /// What the claims sharing it consumed of that capacity (`consumedCapacity`, summed: `memory: 20Gi`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub consumed_capacity: BTreeMap<String, String>,
}

/// GPU sharing as the NVIDIA device plugin advertises it.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GpuSharing {
    /// `nvidia.com/gpu.sharing-strategy`: `time-slicing`, `mps` or `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
    /// `nvidia.com/gpu.replicas`: how many pods can share one GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<u64>,
    /// The shared GPUs are advertised as `nvidia.com/gpu.shared` instead of `nvidia.com/gpu`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub renamed_resource: bool,
}

/// MIG (Multi-Instance GPU) configuration of a node.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MigInfo {
    /// `nvidia.com/mig.strategy`: `single`, `mixed` or `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
    /// `nvidia.com/mig.config` (the mig-parted profile requested for the node).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<String>,
    /// `nvidia.com/mig.config.state`: `pending`, `rebooting`, `success` or `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_state: Option<String>,
    /// What `count` means on this node (under `single`, GFD counts MIG devices, not physical GPUs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count_meaning: Option<String>,
    /// MIG devices per profile, sorted by profile: from GFD's `nvidia.com/mig-<profile>.*` labels (strategy
    /// `mixed`), else from the device plugin's `nvidia.com/mig-<profile>` resources.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<MigDevice>,
}

/// MIG devices of one profile (`mixed` strategy).
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MigDevice {
    /// The profile, e.g. `1g.10gb`; the resource is `nvidia.com/mig-<profile>`.
    pub profile: String,
    /// `nvidia.com/mig-<profile>.count`.
    pub count: u64,
    /// `nvidia.com/mig-<profile>.memory` in MiB.
    #[serde(default, rename = "memoryMiB", skip_serializing_if = "Option::is_none")]
    pub memory_mib: Option<u64>,
    /// The extended resource these devices are scheduled as (`nvidia.com/mig-<profile>`). Matched by name, or
    /// by GPU slice count (the `Ng` prefix) when GPU Feature Discovery's profile differs from the device
    /// plugin's (GFD rounds memory: `3g.21gb` labels next to a `nvidia.com/mig-3g.20gb` resource).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
}

/// Something wrong with a GPU node, in words an on-call engineer understands.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeIssue {
    /// A `PascalCase` reason: `NotReady`, `GpuLabelsMissing`, `GpusNotAllocatable`, `GpusUnhealthy`,
    /// `MigConfigFailed`, `MigConfigPending`, `MigInvalid`, `Unschedulable`, `InvalidLabel`, `Overcommitted`,
    /// `DraPoolIncomplete`, `GpuDeviceTainted`, `AllocatedDeviceUnhealthy`, `AllocatedDeviceHealthUnknown`,
    /// `GpuHealthCheckFailed`,
    /// `GpuNodeQuarantined`, `GpusMissing`, `GpuResourcesMissing`, `DriverUpgradeFailed`,
    /// `DriverUpgradeInProgress`, `OperandsPaused` or `MaintenanceScheduled` (docs/issues.md).
    pub reason: String,
    /// What was seen, naming the label, condition or resource.
    pub message: String,
    /// `Degraded` (makes the inventory Degraded) or `Info` (planned work: a driver upgrade, paused operands,
    /// announced maintenance). Objects written before severities existed read as `Degraded`.
    #[serde(default = "degraded")]
    pub severity: String,
    /// Since when, as the node says it (a condition's last transition), when it says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
}

fn degraded() -> String {
    "Degraded".to_owned()
}
