//! ResourceSlices, ResourceClaims and DeviceClasses as the DRA accounting reads them. The DRA sources keep
//! only these: the stripped forms hold what DESIGN §3's rules need and nothing a driver might add tomorrow.
//!
//! Reading is lenient on purpose: drivers rename and drop attributes between releases (`index` and `minor`
//! went in NVIDIA's 25.8, `pcieBusID` became `resource.kubernetes.io/pciBusID`), so every attribute is
//! optional and an unknown one is ignored, never an error. (The API objects are read in
//! `sources::convert::k8s_dra`.)

use std::collections::BTreeMap;

/// A device taint as its slice writes it (any effect; only `NoSchedule`/`NoExecute` make the device
/// unavailable).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct DraTaint {
    /// `key`, e.g. `gpu.nvidia.com/xid`.
    pub key: String,
    /// `value` (empty when unset), e.g. the XID number.
    pub value: String,
    /// `effect`.
    pub effect: String,
}

/// One device of a slice.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DraDevice {
    /// `name`, unique within its pool.
    pub name: String,
    /// Attribute `type` (`gpu`, `mig`, `vfio`, ...); `None` when the driver publishes none.
    pub kind: Option<String>,
    /// Attribute `productName` (DRA writes `NVIDIA A100-SXM4-80GB` where GPU Feature Discovery writes dashes).
    pub product: Option<String>,
    /// Attribute `profile` of a MIG device (`1g.10gb`).
    pub profile: Option<String>,
    /// Attribute `uuid`.
    pub uuid: Option<String>,
    /// Attribute `parentUUID` of a MIG device: the GPU it is carved from.
    pub parent_uuid: Option<String>,
    /// Capacity `memory` in MiB.
    pub memory_mib: Option<u64>,
    /// Its taints, every effect (`None` is shown, not counted as unavailable).
    pub taints: Vec<DraTaint>,
    /// Counters this device consumes from the slice's shared counter sets: set -> counter -> amount. A GPU
    /// and the MIG devices that can be carved from it consume the same set (partitionable devices).
    pub consumes: BTreeMap<String, BTreeMap<String, i128>>,
    /// `allowMultipleAllocations` (consumable capacity, KEP-5075): several claims may share the device, each
    /// consuming part of its capacity.
    pub shareable: bool,
    /// Every `capacity` entry as a number (bytes for memory), for a shareable device's consumed-of-total.
    pub capacity: BTreeMap<String, i128>,
    /// The driver's health attribute when it says the device is not healthy, as `name=value`
    /// (`health=Unhealthy`); `None` when healthy or not reported.
    pub unhealthy: Option<String>,
}

/// A ResourceSlice of a watched driver, stripped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DraSlice {
    /// `metadata.name`.
    pub name: String,
    /// `spec.driver`.
    pub driver: String,
    /// `spec.pool.name`.
    pub pool: String,
    /// `spec.pool.generation`.
    pub generation: i64,
    /// `spec.pool.resourceSliceCount`: how many slices the pool has at this generation.
    pub slice_count: i64,
    /// `spec.nodeName`: the node whose devices these are. `None` for network-attached pools (a node selector
    /// or all nodes), which no single node entry owns.
    pub node: Option<String>,
    /// `spec.sharedCounters`: counter set -> counter -> amount available.
    pub counters: BTreeMap<String, BTreeMap<String, i128>>,
    /// `spec.devices`.
    pub devices: Vec<DraDevice>,
}

/// One device a claim's allocation names.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DeviceRef {
    /// `driver`.
    pub driver: String,
    /// `pool`.
    pub pool: String,
    /// `device`.
    pub device: String,
}

/// A ResourceClaim, stripped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DraClaim {
    /// `metadata.namespace`.
    pub namespace: String,
    /// `metadata.name`.
    pub name: String,
    /// `status.allocation` is set.
    pub allocated: bool,
    /// `status.allocation.devices.results[]` without `adminAccess` ones (an admin's access to a device in use
    /// does not take it from anyone).
    pub devices: Vec<DeviceRef>,
    /// What results consumed of a shareable device's capacity (`consumedCapacity`, KEP-5075): per device,
    /// capacity name -> amount, summed over the claim's results (several `shareID`s may name one device).
    pub consumed: Vec<(DeviceRef, BTreeMap<String, i128>)>,
    /// The DeviceClasses its requests name (`exactly` or each `firstAvailable` alternative), with how many
    /// devices each asks for (`allocationMode: All` counts as 1: at least one).
    pub classes: BTreeMap<String, u64>,
    /// The pod whose extended-resource requests the scheduler made this claim for (KEP-5004: annotation
    /// [`EXTENDED_RESOURCE_CLAIM_ANNOTATION`] `true`, owned by the pod).
    pub extended_for_pod: Option<String>,
}

/// Whether a device of type `kind` is one a class comparing `types` selects: any when it compares none.
pub(crate) fn type_matches(types: &[&str], kind: Option<&str>) -> bool {
    types.is_empty() || kind.is_some_and(|k| types.iter().any(|t| t.eq_ignore_ascii_case(k)))
}

/// The annotation the scheduler puts on a claim it makes for a pod's extended-resource requests (KEP-5004).
pub const EXTENDED_RESOURCE_CLAIM_ANNOTATION: &str =
    "resource.kubernetes.io/extended-resource-claim";

/// The prefix of the extended resource name every DeviceClass has implicitly (KEP-5004):
/// `deviceclass.resource.kubernetes.io/<class>`, besides its `extendedResourceName`.
pub const IMPLICIT_EXTENDED_RESOURCE_PREFIX: &str = "deviceclass.resource.kubernetes.io/";

/// A DeviceClass, stripped to the CEL expressions that select its devices and the extended resource it
/// serves.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DraClass {
    /// `metadata.name`.
    pub name: String,
    /// `spec.selectors[].cel.expression`.
    pub expressions: Vec<String>,
    /// `spec.extendedResourceName` (KEP-5004): pods asking for this extended resource get devices of this
    /// class through a claim the scheduler makes, on nodes that do not advertise the resource themselves.
    pub extended_resource: Option<String>,
}

impl DraClass {
    /// Whether the class selects a device of `driver` whose `type` attribute is `kind`: it names the driver
    /// (see [`DraClass::selects_driver`]), and a `type` it compares with (`...type == 'gpu'`) is the
    /// device's. A class that compares no `type` selects every device of its driver. The CEL is not
    /// evaluated: this reads the two comparisons DeviceClasses are written with (NVIDIA's, AMD's, Intel's).
    pub fn selects_device(&self, driver: &str, kind: Option<&str>) -> bool {
        if !self.selects_driver(driver) {
            return false;
        }
        type_matches(&self.compared_types(), kind)
    }

    /// The strings the expressions compare a `type` attribute with (`.type == 'gpu'`, `['type'] == "gpu"`).
    pub(crate) fn compared_types(&self) -> Vec<&str> {
        let mut types = Vec::new();
        for expression in &self.expressions {
            for (at, _) in expression.match_indices("type") {
                let before = expression[..at].chars().next_back();
                if !matches!(before, Some('.' | '\'' | '"')) {
                    continue; // `deviceType`, `subtype`: another attribute
                }
                let after =
                    expression[at + "type".len()..].trim_start_matches(['\'', '"', ']', ' ']);
                let Some(value) = after.strip_prefix("==").map(str::trim_start) else {
                    continue;
                };
                let Some(quote) = value.chars().next().filter(|c| matches!(c, '\'' | '"')) else {
                    continue;
                };
                if let Some(end) = value[1..].find(quote) {
                    types.push(&value[1..1 + end]);
                }
            }
        }
        types
    }

    /// The extended resource names pods can ask for to get this class's devices: its
    /// `extendedResourceName`, and the implicit `deviceclass.resource.kubernetes.io/<class>`.
    pub fn extended_resources(&self) -> impl Iterator<Item = String> + '_ {
        self.extended_resource
            .iter()
            .cloned()
            .chain(std::iter::once(format!(
                "{IMPLICIT_EXTENDED_RESOURCE_PREFIX}{}",
                self.name
            )))
    }

    /// Whether the class selects devices of `driver`: one of its CEL expressions names the driver as a
    /// string (`device.driver == 'gpu.nvidia.com'`, `device.attributes["gpu.nvidia.com"]`).
    pub fn selects_driver(&self, driver: &str) -> bool {
        let quoted = [format!("'{driver}'"), format!("\"{driver}\"")];
        self.expressions
            .iter()
            .any(|e| quoted.iter().any(|q| e.contains(q.as_str())))
    }
}
