//! Who makes a node's accelerators, and how each vendor publishes them: one module per vendor, each a table
//! of its extended resources, node labels and DRA drivers, read into the core's model.
//!
//! Adding a vendor is one module and its fixtures: a [`VendorTable`] (most are a
//! [`vendor_table::VendorRules`] of plain functions) listed in [`TABLES`]. The scanner reads every node
//! through the table of its vendor. The vendors' resource names and label keys live here (NVIDIA's folder
//! also holds GPU Feature Discovery's and the clouds' label tables; `inventory::resources` re-exports
//! NVIDIA's device-plugin resource names for the allocation's whole-GPU rule). Vendors are never summed across one another:
//! a node is attributed to one vendor ([`identify`]).

mod accelerators;
mod amd;
mod counted;
pub(crate) mod dra_drivers;
pub(crate) mod instance_types;
mod intel;
pub(crate) mod nvidia;
pub(crate) mod registered;
pub(crate) mod registry;
pub(crate) mod sharing_layer;

use std::collections::BTreeMap;
use std::sync::LazyLock;

use crate::inventory::label_reader::LabelReader;
use crate::inventory::model::{NodeInventory, Vendor};
use vendor_table::{NodeResources, Unit, VendorTable, VendorTables};

pub(crate) mod vendor_table;

/// The vendors a Rust module reads, in the order ties are broken. NVIDIA's comes first: it also reads the
/// nodes only DRA describes (see `scanner::read_node`), as the first editions did.
static MODULES: [&dyn VendorTable; 6] = [
    &nvidia::NVIDIA,
    &amd::RULES,
    &intel::RULES,
    &accelerators::HABANA,
    &accelerators::AWS,
    &accelerators::GOOGLE,
];

/// Every vendor's table: the modules', then one per vendor the registry reads (`registry/vendors.tsv`), in
/// the file's order.
static TABLES: LazyLock<Vec<&'static dyn VendorTable>> = LazyLock::new(|| {
    static REGISTERED: LazyLock<Vec<registered::RegisteredTable>> = LazyLock::new(|| {
        registry::REGISTRY
            .read_by_registry()
            .filter_map(|(row, _)| u8::try_from(row).ok())
            .map(registered::RegisteredTable::new)
            .collect()
    });
    MODULES
        .iter()
        .copied()
        .chain(REGISTERED.iter().map(|t| t as &dyn VendorTable))
        .collect()
});

/// Every vendor this version knows: the tables a scan reads with unless it is handed others.
pub(crate) fn built_in() -> VendorTables {
    VendorTables::new(TABLES.as_slice())
}

impl Default for VendorTables {
    fn default() -> Self {
        built_in()
    }
}

/// The table of `tables` that reads a node attributed to `vendor`: its own, else (a node only
/// vendor-neutral resources describe) the vendor-neutral one.
pub(crate) fn table_of(tables: VendorTables, vendor: Vendor) -> &'static dyn VendorTable {
    tables
        .iter()
        .find(|table| table.vendor() == vendor)
        .unwrap_or(&accelerators::NEUTRAL)
}

/// The table of `tables` that reads a node nothing but DRA describes: the first (NVIDIA's, in [`built_in`]).
pub(crate) fn default_table(tables: VendorTables) -> &'static dyn VendorTable {
    tables.iter().next().unwrap_or(&accelerators::NEUTRAL)
}

/// Whether a node resource is one the inventory reads (by the built-in tables: the node watch keeps these
/// resources for every scan): any vendor's device, partition, share or core
/// resource, every `nvidia.com/*` resource (as the first editions did), and vendor-neutral device resources
/// (`microsoft.com/directx`). Monitoring and accounting resources (`gpu.intel.com/millicores`) are not.
/// Resources the registry lists as no accelerator (`not_accelerators.tsv`: NICs, RDMA, FPGAs) never are.
pub(crate) fn is_read_resource(name: &str) -> bool {
    registry::REGISTRY.not_accelerator(name).is_none()
        && (name.starts_with(nvidia::resource_names::NVIDIA_RESOURCE_PREFIX)
            || unit_of(name).is_some())
}

/// Whether a node annotation is one the inventory reads: a sharing layer's list of the node's devices
/// (`registry/sharing_layers.tsv`). Heartbeats and everything else are not kept.
pub fn is_read_annotation(key: &str) -> bool {
    registry::REGISTRY.sharing_layer(key).is_some()
}

/// What one unit of a resource is, whoever of the built-in tables makes it; `None` when no rule names it.
pub(crate) fn unit_of(name: &str) -> Option<Unit> {
    unit_in(built_in(), name)
}

/// What one unit of a resource is, whoever of `tables` makes it; `None` when no rule names it.
pub(crate) fn unit_in(tables: VendorTables, name: &str) -> Option<Unit> {
    tables
        .iter()
        .find_map(|table| table.unit_of(name))
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
/// most units when several do), else the vendor whose table sensed it (`sensed`: NVIDIA's judges GPU Feature
/// Discovery's and the clouds' labels, [`VendorTable::sense`]), else the vendor whose labels describe it,
/// else its DRA drivers' vendor (the most devices), else [`Vendor::Unknown`].
pub(crate) fn identify(
    tables: VendorTables,
    labels: &LabelReader<'_>,
    resources: &NodeResources<'_>,
    drivers: &[&str],
    sensed: Option<Vendor>,
) -> Identified {
    // The node's resources are listed once and each table asked about them (there are ~20 tables).
    let present = resources.present();
    let mut units: BTreeMap<Vendor, u64> = BTreeMap::new();
    for table in tables.iter() {
        let n: u64 = present
            .iter()
            .filter(|(name, _)| table.unit_of(name).is_some())
            .fold(0u64, |sum, (_, n)| sum.saturating_add(*n));
        if n > 0 {
            units.insert(table.vendor(), n);
        }
    }
    // The most units wins; ties go to the first in `Vendor::ALL` (max_by keeps the last of equals, hence
    // the reversed comparison of vendors).
    let by_resources = units
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)))
        .map(|(v, _)| *v);
    // No device of any vendor, but a vendor's device resource advertised at 0: the kubelet keeps a resource
    // once a device plugin registered it, so the node had that vendor's devices (they are gone or held).
    // (No table has a unit above 0 here, so each table's own check in `zero_devices` is already known.)
    let advertises = !resources.capacity.is_empty() || !resources.allocatable.is_empty();
    let by_resources = by_resources.or_else(|| {
        tables
            .iter()
            .filter(|_| advertises)
            .find(|table| !zero_device_names(*table, resources).is_empty())
            .map(|table| table.vendor())
    });
    let by_labels = by_resources.or(sensed).or_else(|| {
        tables
            .iter()
            .find(|table| table.labelled(labels))
            .map(|table| table.vendor())
    });
    // Nothing of a vendor on the node, but its instance type has accelerators (no feature discovery, the
    // device plugin not up yet): the provider's table says whose.
    let by_labels = by_labels.or_else(|| instance_types::of_node(labels).map(|i| i.vendor));
    let vendor = by_labels
        .or_else(|| dra_drivers::drivers_vendor(drivers))
        .unwrap_or(Vendor::Unknown);
    Identified {
        vendor,
        by_dra_only: by_labels.is_none(),
        also: units.into_keys().filter(|v| *v != vendor).collect(),
    }
}

/// The device resources of `table`'s vendor the node advertises at 0 (capacity, else allocatable), when it
/// advertises nothing of that vendor above 0 (no partition or share either: `nvidia.com/gpu: 0` beside MIG
/// resources is the mixed strategy working). Also a sharing layer's resources at 0 when all the vendor has
/// above 0 is that layer's count of devices ([`Unit::Count`]): the layer counts them in one resource and hands them out in
/// another (Aliyun's gpushare: `aliyun.com/gpu-count: 1`, `aliyun.com/gpu-mem: 0`), and has none to hand out.
/// Empty otherwise.
pub(crate) fn zero_devices<'a>(
    table: &dyn VendorTable,
    resources: &NodeResources<'a>,
) -> Vec<&'a str> {
    let present = resources.with_units(|name| table.unit_of(name));
    if present.is_empty() {
        return zero_device_names(table, resources);
    }
    let vendor = table.vendor();
    let domain = |name: &str| name.split_once('/').map(|(d, _)| d.to_owned());
    let mut layers = Vec::new();
    for (name, unit, _) in &present {
        if *unit != Unit::Count || registered::layer_unit(vendor, name).is_none() {
            return Vec::new();
        }
        layers.push(domain(name));
    }
    let mut names: Vec<&'a str> = resources
        .capacity
        .keys()
        .chain(resources.allocatable.keys())
        .map(String::as_str)
        .filter(|name| resources.count(name) == Some(0))
        .filter(|name| registered::layer_unit(vendor, name).is_some())
        .filter(|name| layers.contains(&domain(name)))
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// The device resources of `table`'s vendor the node advertises at 0 (capacity, else allocatable).
fn zero_device_names<'a>(table: &dyn VendorTable, resources: &NodeResources<'a>) -> Vec<&'a str> {
    let mut names: Vec<&'a str> = resources
        .capacity
        .keys()
        .chain(resources.allocatable.keys())
        .map(String::as_str)
        .filter(|name| table.unit_of(name) == Some(Unit::Device))
        .filter(|name| resources.count(name) == Some(0))
        .collect();
    names.sort_unstable();
    names.dedup();
    names
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
    dra_drivers::driver_vendor(&device.driver).and_then(Vendor::name)
}

/// The vendor called `name` (as `products[].vendor` spells it), if it is one this version knows.
pub(crate) fn by_name(name: &str) -> Option<&'static str> {
    Vendor::from_name(name).and_then(Vendor::name)
}

#[cfg(test)]
mod fixture_tests;
