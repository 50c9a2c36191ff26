//! Who makes a node's accelerators, and how each vendor publishes them: one module per vendor, each a table
//! of its extended resources, node labels and DRA drivers, read into the core's model.
//!
//! Adding a vendor is one module and its fixtures: a [`VendorRules`] listed in [`RULES`]. The vendors'
//! resource names and label keys live here (NVIDIA's folder also holds GPU Feature Discovery's and the clouds'
//! label tables, which the scanner's NVIDIA path reads; `inventory::resources` names NVIDIA's device-plugin
//! resources for the allocation's whole-GPU rule). Vendors are never summed across one another:
//! a node is attributed to one vendor ([`identify`]).

mod accelerators;
mod amd;
mod counted;
mod dra;
mod intel;
pub(crate) mod nvidia;

use std::collections::BTreeMap;

use crate::inventory::labels::LabelReader;
use crate::inventory::model::{Amount, Issue, Mig, NodeInventory, Sharing, Vendor};

#[cfg(test)]
pub(crate) use dra::default_drivers;
pub(crate) use dra::driver_rules;
pub(crate) use nvidia::{gpus_under_vgpus, passthrough_product, vgpu_type};

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
}

/// A node's resources, as the vendor modules read them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct NodeResources<'a> {
    /// `status.capacity`, accelerator resources only.
    pub(crate) capacity: &'a BTreeMap<String, Amount>,
    /// `status.allocatable`, accelerator resources only.
    pub(crate) allocatable: &'a BTreeMap<String, Amount>,
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
    pub(crate) fn with_units(&self, unit_of: fn(&str) -> Option<Unit>) -> Vec<(&str, Unit, u64)> {
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
            .filter_map(|name| Some((name, unit_of(name)?, self.count(name)?)))
            .filter(|(_, _, n)| *n > 0)
            .collect()
    }
}

/// What a vendor module reads from a node (every vendor but NVIDIA, whose reading is the scanner's own).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Reading {
    /// The model, and where it came from when not from the vendor's own product label.
    pub(crate) product: Option<(String, Option<String>)>,
    /// Physical devices, and where the number came from.
    pub(crate) count: Option<(u64, String)>,
    /// Memory of one device in MiB, and where it came from.
    pub(crate) memory_mib: Option<(u64, String)>,
    /// Partitions (AMD's compute/memory partitions), in the model's MIG shape.
    pub(crate) partitions: Option<Mig>,
    /// Sharing (several pods per device).
    pub(crate) sharing: Option<Sharing>,
    /// The resources of which one unit is one physical device.
    pub(crate) device_resources: Vec<String>,
    /// The vendor's labels describe the node (its `sources` gain `labels`).
    pub(crate) labelled: bool,
    /// Vendor-specific issues (a partition profile being applied or failed).
    pub(crate) issues: Vec<Issue>,
    /// Devices a vendor component labels unhealthy, in words (`GPU 0 (<label>=unhealthy, ...)`).
    pub(crate) unhealthy: Vec<String>,
}

/// One vendor's rules.
pub(crate) struct VendorRules {
    /// Who.
    pub(crate) vendor: Vendor,
    /// The unit of one of its extended resources; `None` for a name that is not its device resource
    /// (including its monitoring and accounting resources, which are never read).
    pub(crate) unit_of: fn(&str) -> Option<Unit>,
    /// Whether its labels say a node has its devices (no resource needed).
    pub(crate) labelled: fn(&LabelReader<'_>) -> bool,
    /// Reads a node attributed to it; `None` for NVIDIA, which the scanner reads itself.
    pub(crate) read: Option<fn(&mut LabelReader<'_>, &NodeResources<'_>) -> Reading>,
}

/// Every vendor's rules, in the order ties are broken.
pub(crate) const RULES: [&VendorRules; 6] = [
    &nvidia::RULES,
    &amd::RULES,
    &intel::RULES,
    &accelerators::HABANA,
    &accelerators::AWS,
    &accelerators::GOOGLE,
];

fn all_rules() -> impl Iterator<Item = &'static VendorRules> {
    RULES.into_iter()
}

/// Whether a node resource is one the inventory reads: any vendor's device, partition, share or core
/// resource, every `nvidia.com/*` resource (as the first editions did), and vendor-neutral device resources
/// (`microsoft.com/directx`). Monitoring and accounting resources (`gpu.intel.com/millicores`) are not.
pub(crate) fn is_read_resource(name: &str) -> bool {
    name.starts_with(nvidia::RESOURCE_PREFIX) || unit_of(name).is_some()
}

/// What one unit of a resource is, whoever makes it; `None` when no rule names it.
pub(crate) fn unit_of(name: &str) -> Option<Unit> {
    all_rules()
        .find_map(|rules| (rules.unit_of)(name))
        .or_else(|| accelerators::neutral_unit(name))
}

/// A node's vendor, and how it was told.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Identified {
    /// Who makes the node's accelerators.
    pub(crate) vendor: Vendor,
    /// Only its DRA devices' drivers (or nothing) told: no vendor's resource or label describes the node.
    pub(crate) by_dra_only: bool,
    /// Other vendors whose resources the node advertises beside its vendor's: they stay in its capacity and
    /// allocation, and are never counted as its devices.
    pub(crate) also: Vec<Vendor>,
}

/// Who makes a node's accelerators. In order: the vendor whose device resources the node advertises (the
/// most units when several do), else NVIDIA when its labels say so (`nvidia_labelled`: the scanner's NVIDIA
/// path judges GPU Feature Discovery's and the clouds' labels), else the vendor whose labels describe it,
/// else its DRA drivers' vendor (the most devices), else [`Vendor::Unknown`].
pub(crate) fn identify(
    labels: &LabelReader<'_>,
    resources: &NodeResources<'_>,
    dra_drivers: &[&str],
    nvidia_labelled: bool,
) -> Identified {
    let mut units: BTreeMap<Vendor, u64> = BTreeMap::new();
    for rules in all_rules() {
        let n: u64 = resources
            .with_units(rules.unit_of)
            .iter()
            .fold(0u64, |sum, (_, _, n)| sum.saturating_add(*n));
        if n > 0 {
            units.insert(rules.vendor, n);
        }
    }
    // The most units wins; ties go to the first in `Vendor::ALL` (max_by keeps the last of equals, hence
    // the reversed comparison of vendors).
    let by_resources = units
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)))
        .map(|(v, _)| *v);
    let by_labels = by_resources
        .or_else(|| nvidia_labelled.then_some(Vendor::Nvidia))
        .or_else(|| {
            all_rules()
                .find(|rules| (rules.labelled)(labels))
                .map(|rules| rules.vendor)
        });
    let vendor = by_labels
        .or_else(|| dra::drivers_vendor(dra_drivers))
        .unwrap_or(Vendor::Unknown);
    Identified {
        vendor,
        by_dra_only: by_labels.is_none(),
        also: units.into_keys().filter(|v| *v != vendor).collect(),
    }
}

/// Whether `vendor`'s labels describe a node (NVIDIA's: never here, see [`identify`]).
pub(crate) fn labelled(vendor: Vendor, labels: &LabelReader<'_>) -> bool {
    all_rules()
        .find(|rules| rules.vendor == vendor)
        .is_some_and(|rules| (rules.labelled)(labels))
}

/// Reads a node attributed to `vendor` (not NVIDIA): its module's reading, or an empty one.
pub(crate) fn read(
    vendor: Vendor,
    labels: &mut LabelReader<'_>,
    resources: &NodeResources<'_>,
) -> Reading {
    all_rules()
        .find(|rules| rules.vendor == vendor)
        .and_then(|rules| rules.read)
        .map(|read| read(labels, resources))
        .unwrap_or_else(|| accelerators::read_neutral(resources))
}

/// The vendor of a node's accelerators as the API names it: the scanner's attribution, else (an entry no
/// scanner made) NVIDIA, or its DRA devices' driver's vendor where DRA alone describes it.
pub(crate) fn vendor_of(entry: &NodeInventory) -> Option<&'static str> {
    if let Some(vendor) = entry.vendor {
        return vendor.name();
    }
    let Some(device) = entry.devices.first() else {
        return Vendor::Nvidia.name();
    };
    if !entry.capacity.is_empty() || !entry.allocatable.is_empty() {
        return Vendor::Nvidia.name();
    }
    dra::driver_vendor(&device.driver).and_then(Vendor::name)
}

/// The vendor called `name` (as `products[].vendor` spells it), if it is one this version knows.
pub(crate) fn by_name(name: &str) -> Option<&'static str> {
    Vendor::from_name(name).and_then(Vendor::name)
}

#[cfg(test)]
mod fixture_tests;
