//! The interface every vendor's table implements ([`VendorTable`]), what it reads a node into ([`Reading`])
//! and the node's resources it reads: a leaf, so the vendor modules and the scanner name it without reaching
//! through the list of vendors (`vendors::TABLES`, where each table registers, as Node Feature Discovery's
//! sources do).

use std::fmt;

use crate::inventory::label_reader::LabelReader;
use crate::inventory::model::{Amount, Issue, Mig, NodeInventory, ResourceMap, Sharing, Vendor};
use crate::inventory::vendors::nvidia::cloud::CloudGpu;

/// What one unit of an extended resource is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unit {
    /// One physical device (`amd.com/gpu`, `habana.ai/gaudi`, a passthrough GPU).
    Device,
    /// A partition of a device (`nvidia.com/mig-1g.10gb`, `amd.com/cpx_nps4`).
    Partition,
    /// A share of a device (`nvidia.com/gpu.shared`, a vGPU such as `nvidia.com/NVIDIA_A10-4Q`).
    Share,
    /// A core of a device (`aws.amazon.com/neuroncore`).
    Core,
    /// An amount of a device's memory or compute that a sharing layer hands out (`hygon.com/dcumem`,
    /// `huawei.com/Ascend910B3-memory`): listed, never counted as devices.
    Capacity,
    /// The number of physical devices, advertised as a resource that no pod asks for by device (a sharing
    /// layer's count: `aliyun.com/gpu-count`, `enflame.com/gcu-count`): the count where no device resource
    /// gives one, never added to one.
    Count,
}

/// A node's resources, as the vendor modules read them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct NodeResources<'a> {
    /// `status.capacity`, accelerator resources only.
    pub(crate) capacity: &'a ResourceMap<Amount>,
    /// `status.allocatable`, accelerator resources only.
    pub(crate) allocatable: &'a ResourceMap<Amount>,
    /// The node's taints, as `key=value:effect` parts.
    pub(crate) taints: &'a [(String, String, String)],
}

impl NodeResources<'_> {
    /// A resource's whole count: capacity, else allocatable (a dump may show only one).
    pub(crate) fn count(&self, name: &str) -> Option<u64> {
        self.capacity
            .get(name)
            .or_else(|| self.allocatable.get(name))
            .and_then(Amount::whole)
    }

    /// The resources present with a count above 0, with the unit `unit_of` gives them.
    pub(crate) fn with_units(
        &self,
        unit_of: impl Fn(&str) -> Option<Unit>,
    ) -> Vec<(&str, Unit, u64)> {
        self.present()
            .into_iter()
            .filter_map(|(name, n)| Some((name, unit_of(name)?, n)))
            .collect()
    }

    /// The resources present with a count above 0, by name: what [`NodeResources::with_units`] reads,
    /// for a caller that asks several tables about the same node (list it once, then ask each).
    pub(crate) fn present(&self) -> Vec<(&str, u64)> {
        let mut names: Vec<&str> = self
            .capacity
            .keys()
            .chain(self.allocatable.keys())
            .map(String::as_str)
            .collect();
        names.sort_unstable();
        names.dedup();
        names
            .into_iter()
            .filter_map(|name| Some((name, self.count(name)?)))
            .filter(|(_, n)| *n > 0)
            .collect()
    }
}

/// What a vendor's table reads from a node attributed to it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Reading {
    /// The model, and where it came from when not from the vendor's own product label.
    pub(crate) product: Option<(String, Option<String>)>,
    /// Physical devices, and where the number came from (`derivedFrom.count` unless it is the table's own
    /// count label, [`VendorTable::own_label`]).
    pub(crate) count: Option<(u64, String)>,
    /// Memory of one device in MiB, and where it came from (likewise).
    pub(crate) memory_mib: Option<(u64, String)>,
    /// Partitions (NVIDIA's MIG, AMD's compute/memory partitions), in the model's MIG shape.
    pub(crate) partitions: Option<Mig>,
    /// Sharing (several pods per device).
    pub(crate) sharing: Option<Sharing>,
    /// The resources of which one unit is one physical device.
    pub(crate) device_resources: Vec<String>,
    /// The vendor's labels describe the node (its `sources` gain `labels`).
    pub(crate) labelled: bool,
    /// A cloud provider's label describes the node's devices (its `sources` gain `cloud`; a node a cloud
    /// label calls a GPU node has devices even when nothing counts them).
    pub(crate) cloud: bool,
    /// Vendor-specific issues (a partition profile being applied or failed).
    pub(crate) issues: Vec<Issue>,
    /// Devices a vendor component labels unhealthy, in words (`GPU 0 (<label>=unhealthy, ...)`).
    pub(crate) unhealthy: Vec<String>,
    /// The physical GPUs a sharing layer lists, each with its memory and shares (no parts yet).
    pub(crate) shared_gpus: Vec<crate::inventory::model::SharedGpu>,
}

/// What a table finds on every node before the node is attributed to a vendor (NVIDIA: GPU Feature
/// Discovery's, NFD's, the clouds' and the hand-made GPU labels), for its reading if the node is its.
#[derive(Debug, Default)]
pub(crate) struct Sensed {
    /// The labels say the node has the vendor's devices.
    pub(crate) present: bool,
    /// The clouds' GPU labels, as read.
    pub(crate) cloud: CloudGpu,
}

/// One vendor's table: how it names its resources and labels its nodes, how it reads a node attributed to
/// it, and how the one diagnosis every node goes through words that vendor's findings. Every vendor
/// implements it and registers in `vendors::TABLES`; the scanner knows no vendor by name.
pub(crate) trait VendorTable: Sync {
    /// Who.
    fn vendor(&self) -> Vendor;
    /// The unit of one of its extended resources; `None` for a name that is not its device resource
    /// (including its monitoring and accounting resources, which are never read).
    fn unit_of(&self, resource: &str) -> Option<Unit>;
    /// Whether its labels say a node has its devices (no resource needed); its labeller runs in a scope
    /// where some node says so.
    fn labelled(&self, labels: &LabelReader<'_>) -> bool;
    /// Whether a node's labels show that the vendor's labeller runs in the cluster (so a node of its that it
    /// has not labelled is `GpuLabelsMissing`); by default, whether its labels describe the node.
    fn labeller_seen(&self, labels: &LabelReader<'_>) -> bool {
        self.labelled(labels)
    }
    /// What it finds on any node before attribution, read once per node before the health signals; `None`
    /// (the default): nothing beyond [`VendorTable::labelled`].
    fn sense(
        &self,
        _labels: &mut LabelReader<'_>,
        _resources: &NodeResources<'_>,
    ) -> Option<Sensed> {
        None
    }
    /// Reads a node attributed to it (`sensed`: what [`VendorTable::sense`] found on it).
    fn read(
        &self,
        labels: &mut LabelReader<'_>,
        resources: &NodeResources<'_>,
        sensed: Option<Sensed>,
    ) -> Reading;
    /// The label that is the vendor's own source of a field (`count`, `memoryMiB`): a value read from it is
    /// no `derivedFrom` entry.
    fn own_label(&self, _field: &str) -> Option<&'static str> {
        None
    }
    /// The label that says what the node's devices run (`container`, `vm-passthrough`), if the vendor has one.
    fn workload_label(&self) -> Option<&'static str> {
        None
    }
    /// What the node's devices are called in messages.
    fn devices_word(&self) -> &'static str {
        "devices"
    }
    /// Whether the node has devices by what was read (its count, else the GPU resources in capacity and a
    /// cloud label, where the vendor's resources say so).
    fn has_devices(&self, entry: &NodeInventory, _capacity_gpus: f64, _cloud: bool) -> bool {
        entry.count > 0
    }
    /// `GpuLabelsMissing`: the node has no label naming its model while the vendor's labeller runs in scope.
    fn labels_missing(&self) -> String {
        let vendor = self.vendor();
        format!(
            "{vendor} accelerator node without a label naming its model, while other nodes in this \
             inventory's scope carry {vendor}'s labels: the vendor's labeller has not labelled this node \
             (check its pod on this node)"
        )
    }
    /// The vendor's own issues of a node's entry, after the labels' and before the allocation's.
    fn own_issues(&self, _entry: &NodeInventory) -> Vec<Issue> {
        Vec::new()
    }
    /// `GpusNotAllocatable`: a Ready node with devices, none of them allocatable.
    fn not_allocatable(&self, entry: &NodeInventory, _capacity_gpus: f64) -> String {
        let vendor = self.vendor();
        format!(
            "the node has {} {vendor} device(s) ({}) but no device resource is allocatable: {vendor}'s \
             device plugin is not advertising them (not running or not registered, or every device \
             unhealthy)",
            entry.count,
            entry
                .derived_from
                .get("count")
                .map_or("its labels", String::as_str)
        )
    }
    /// The resource `GpuResourcesMissing` names.
    fn missing_resource(&self, entry: &NodeInventory) -> String {
        entry.device_resources.first().map_or_else(
            || format!("{} device resource", self.vendor()),
            Clone::clone,
        )
    }
    /// `GpusUnhealthy`: the withdrawn or unhealthy devices, listed.
    fn unhealthy(&self, listed: &str) -> String {
        format!(
            "{listed}: {}'s device plugin or health checks withdrew unhealthy devices",
            self.vendor()
        )
    }
    /// Whether the node's entry notes the other vendors whose resources it advertises.
    fn notes_other_vendors(&self) -> bool {
        true
    }
    /// Whether the node's issues are ordered as `IssueReason::ALL` lists them (else in the order found).
    fn orders_issues_by_reason(&self) -> bool {
        true
    }
}

/// A vendor table made of plain functions: the vendors whose reading is one function and whose findings
/// are worded alike (AMD, Intel, Habana, AWS, Google, and vendor-neutral resources).
pub(crate) struct VendorRules {
    /// Who.
    pub(crate) vendor: Vendor,
    /// [`VendorTable::unit_of`].
    pub(crate) unit_of: fn(&str) -> Option<Unit>,
    /// [`VendorTable::labelled`].
    pub(crate) labelled: fn(&LabelReader<'_>) -> bool,
    /// [`VendorTable::read`].
    pub(crate) read: fn(&mut LabelReader<'_>, &NodeResources<'_>) -> Reading,
}

impl VendorTable for VendorRules {
    fn vendor(&self) -> Vendor {
        self.vendor
    }

    fn unit_of(&self, resource: &str) -> Option<Unit> {
        (self.unit_of)(resource)
    }

    fn labelled(&self, labels: &LabelReader<'_>) -> bool {
        (self.labelled)(labels)
    }

    fn read(
        &self,
        labels: &mut LabelReader<'_>,
        resources: &NodeResources<'_>,
        _sensed: Option<Sensed>,
    ) -> Reading {
        (self.read)(labels, resources)
    }
}

/// The vendor tables a scan reads nodes with, in the order ties are broken (the first also reads the nodes
/// only DRA describes). A value handed to each scan (a `ScanInput` holds it and hands it to the scanner in
/// its `ScanScope`), as the health table is; `vendors::built_in()` is every vendor this version knows, and
/// the default.
#[derive(Clone, Copy)]
pub struct VendorTables(&'static [&'static dyn VendorTable]);

impl VendorTables {
    /// These tables, in this order.
    pub(crate) const fn new(tables: &'static [&'static dyn VendorTable]) -> VendorTables {
        VendorTables(tables)
    }

    /// The tables, in order.
    pub(crate) fn iter(self) -> impl Iterator<Item = &'static dyn VendorTable> {
        self.0.iter().copied()
    }

    /// Which tables these are, as a value to compare (tables are `'static` and never freed).
    pub(crate) fn address(self) -> usize {
        self.0.as_ptr().cast::<()>() as usize
    }
}

impl PartialEq for VendorTables {
    fn eq(&self, other: &Self) -> bool {
        self.address() == other.address() && self.0.len() == other.0.len()
    }
}

impl Eq for VendorTables {}

impl fmt::Debug for VendorTables {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.iter().map(|t| t.vendor()))
            .finish()
    }
}
