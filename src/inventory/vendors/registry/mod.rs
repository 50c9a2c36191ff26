//! The registry of accelerators, as data: who makes them, the extended resources their device plugins and
//! sharing layers advertise, the node labels that name their models, counts and memory, their PCI IDs, and
//! the resources that look like devices but are no accelerators, and the node conditions their health
//! monitors set (with the status that means a problem). A contributor adds a device plugin with a
//! row and a fixture, no Rust: the tables are the TSV files beside this module (`vendors.tsv`,
//! `resources.tsv`, `labels.tsv`, `pci_devices.tsv`, `not_accelerators.tsv`), each row with its source, read
//! once at start-up. `docs/vendors.md` is checked against them (`registry/tests.rs`).
//!
//! It names nothing of the core but the leaf `star_pattern`, so the model's `Vendor` can name its vendors.

mod parse;

use std::collections::HashMap;
use std::sync::LazyLock;

use crate::inventory::star_pattern::StarPattern;

/// What one unit of a registered resource is (the vendor tables' `Unit`, plus capacity).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RowUnit {
    /// One physical device.
    Device,
    /// A fixed partition of a device (MIG-like, a vNPU template).
    Partition,
    /// A share of a device (a time-slice or a sharing layer's slot).
    Share,
    /// A core of a device.
    Core,
    /// An amount of a device's memory or compute (HAMi's `*-memory`, `*-cores`): listed, never devices.
    Capacity,
    /// The number of physical devices, as a sharing layer advertises it (`enflame.com/gcu-count`).
    Count,
}

/// A vendor the registry knows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct VendorRow {
    /// The name the API shows (`vendor`, the GpuNode's label).
    pub(crate) name: &'static str,
    /// The maker and family, in words.
    pub(crate) display: &'static str,
    /// What its devices are called in messages (`NPUs`, `GPUs`).
    pub(crate) devices_word: &'static str,
    /// `builtin`: a Rust module reads its nodes (NVIDIA, AMD, Intel, Habana, AWS, Google); `registry`: the
    /// registry's own table does.
    pub(crate) builtin: bool,
    /// The domains of its resource names and labels (`huawei.com`).
    pub(crate) domains: Vec<&'static str>,
    /// Its PCI vendor IDs, lower-case hex.
    pub(crate) pci_vendors: Vec<&'static str>,
    pub(crate) source: &'static str,
}

/// An extended resource, exactly or by a pattern with one `*` (`huawei.com/Ascend*-memory`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ResourceRow {
    pub(crate) name: StarPattern<&'static str>,
    pub(crate) vendor: &'static str,
    pub(crate) unit: RowUnit,
    /// The model one unit is, where the name says (`huawei.com/Ascend310P` -> Ascend 310P).
    pub(crate) product: Option<&'static str>,
    pub(crate) source: &'static str,
}

/// What a label says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LabelRole {
    /// The value is the model (after the row's value prefix, if any).
    Product,
    /// The value names the family, less precisely than a resource's model (`accelerator=huawei-Ascend310`
    /// is also set on 310P nodes): read only when nothing else names the model.
    Family,
    /// The value is the number of devices.
    Count,
    /// The value is the memory of one device in MiB.
    MemoryMib,
    /// The value is the memory of one device in GiB.
    MemoryGib,
    /// The label's presence says the node has the vendor's devices.
    Present,
}

/// A node label the registry reads: a key, and optionally a value prefix it must have (`accelerator` with
/// `huawei-`: the label is common, the prefix says whose).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LabelRow {
    pub(crate) key: &'static str,
    pub(crate) value_prefix: Option<&'static str>,
    pub(crate) vendor: &'static str,
    pub(crate) role: LabelRole,
    pub(crate) source: &'static str,
}

/// A PCI device: vendor and device ID (lower-case hex) and the model it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PciRow {
    pub(crate) vendor_id: &'static str,
    pub(crate) device_id: &'static str,
    pub(crate) product: &'static str,
    pub(crate) source: &'static str,
}

/// A resource-name prefix that is never an accelerator (NICs, RDMA, FPGAs, generic host devices).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NotAcceleratorRow {
    pub(crate) prefix: &'static str,
    pub(crate) what: &'static str,
    pub(crate) source: &'static str,
}

/// A sharing layer's annotation that lists a node's physical devices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SharingLayerRow {
    pub(crate) key: StarPattern<&'static str>,
    pub(crate) layer: &'static str,
    /// Whose devices it lists; `None`: the node's vendor's.
    pub(crate) vendor: Option<&'static str>,
    pub(crate) source: &'static str,
}

/// A node condition an accelerator health monitor sets (`health_conditions.tsv`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HealthConditionRow {
    /// The condition type, exactly or with one `*` (the health table parses it).
    pub(crate) type_: &'static str,
    /// Who sets it, as issues name it.
    pub(crate) reporter: &'static str,
    /// Whose devices it watches, when the row says.
    pub(crate) vendor: Option<&'static str>,
    /// `True` means a problem (node-problem-detector's convention); else `False` does (`AcceleratedHardwareReady`).
    pub(crate) problem_when_true: bool,
    /// Whose devices by the condition's reason: (reason prefix, vendor), first match wins.
    pub(crate) reason_vendors: Vec<(&'static str, &'static str)>,
    pub(crate) source: &'static str,
}

/// The registry: every table, parsed.
#[derive(Debug)]
pub(crate) struct Registry {
    pub(crate) vendors: Vec<VendorRow>,
    pub(crate) resources: Vec<ResourceRow>,
    pub(crate) labels: Vec<LabelRow>,
    pub(crate) pci_devices: Vec<PciRow>,
    pub(crate) not_accelerators: Vec<NotAcceleratorRow>,
    pub(crate) sharing_layers: Vec<SharingLayerRow>,
    pub(crate) health_conditions: Vec<HealthConditionRow>,
    /// Exact resource names -> their row.
    exact: HashMap<&'static str, usize>,
    /// The domains of the rows a sharing layer advertises for a built-in vendor's devices under its own name
    /// (`volcano.sh`, `aliyun.com`): the fast path of [`Registry::layer_resource`].
    layer_domains: Vec<&'static str>,
}

/// The tables, as shipped.
pub(crate) const FILES: [(&str, &str); 7] = [
    ("vendors.tsv", include_str!("vendors.tsv")),
    ("resources.tsv", include_str!("resources.tsv")),
    ("labels.tsv", include_str!("labels.tsv")),
    ("pci_devices.tsv", include_str!("pci_devices.tsv")),
    ("not_accelerators.tsv", include_str!("not_accelerators.tsv")),
    ("sharing_layers.tsv", include_str!("sharing_layers.tsv")),
    (
        "health_conditions.tsv",
        include_str!("health_conditions.tsv"),
    ),
];

/// The registry this version ships. Its rows are checked by the unit tests, so a row that does not parse
/// never ships; should one anyway, it is left out rather than stopping the operator.
pub(crate) static REGISTRY: LazyLock<Registry> = LazyLock::new(|| {
    let (registry, _errors) = Registry::parse(&FILES);
    registry
});

impl Registry {
    /// The row of an extended resource: exact names first, then the most specific pattern (the most
    /// characters outside its `*`). `None` for a name no row covers.
    pub(crate) fn resource(&self, name: &str) -> Option<&ResourceRow> {
        if let Some(i) = self.exact.get(name) {
            return Some(&self.resources[*i]);
        }
        self.resources
            .iter()
            .filter(|row| row.name.suffix().is_some() && row.name.matches(name))
            .max_by_key(|row| row.name.fixed_len())
    }

    /// The row of a resource that a sharing layer advertises for `vendor`'s devices under the layer's own
    /// domain (`volcano.sh/vgpu-number`, `aliyun.com/gpu-count` for NVIDIA's): the built-in vendors' modules
    /// read these beside their own names. Asked for every resource of every node, so a name outside those
    /// domains is answered without a lookup.
    pub(crate) fn layer_resource(&self, vendor: &str, name: &str) -> Option<&ResourceRow> {
        let outside = !self.layer_domains.iter().any(|domain| {
            name.len() > domain.len()
                && name.as_bytes()[domain.len()] == b'/'
                && name.starts_with(domain)
        });
        if outside {
            return None;
        }
        self.resource(name).filter(|row| row.vendor == vendor)
    }

    /// Whether a resource is one of the kinds that are never accelerators.
    pub(crate) fn not_accelerator(&self, name: &str) -> Option<&NotAcceleratorRow> {
        self.not_accelerators
            .iter()
            .find(|row| name.starts_with(row.prefix))
    }

    /// The model of a PCI device, if the table names it.
    pub(crate) fn pci_product(&self, vendor_id: &str, device_id: &str) -> Option<&'static str> {
        self.pci_devices
            .iter()
            .find(|row| {
                row.vendor_id.eq_ignore_ascii_case(vendor_id)
                    && row.device_id.eq_ignore_ascii_case(device_id)
            })
            .map(|row| row.product)
    }

    /// The sharing layer whose device list a node annotation is (exact keys before patterns), if any.
    pub(crate) fn sharing_layer(&self, key: &str) -> Option<&SharingLayerRow> {
        self.sharing_layers
            .iter()
            .filter(|row| row.key.matches(key))
            .max_by_key(|row| (row.key.suffix().is_none(), row.key.fixed_len()))
    }

    /// The vendors its own table reads (not a Rust module), in the file's order.
    pub(crate) fn read_by_registry(&self) -> impl Iterator<Item = (usize, &VendorRow)> {
        self.vendors.iter().enumerate().filter(|(_, v)| !v.builtin)
    }

    /// The vendor called `name`.
    pub(crate) fn vendor(&self, name: &str) -> Option<(usize, &VendorRow)> {
        self.vendors
            .iter()
            .enumerate()
            .find(|(_, v)| v.name == name)
    }
}

#[cfg(test)]
mod tests;
